/*
 * fs parse: one command line's parse, shared by fs/options.c (the option
 * table and its engine, through libfuse's fuse_opt), fs/option_templates.c
 * (what fuse_opt matches), fs/helper_rules.c (mount(8)'s rules for
 * mount.s3pipe), fs/usage.c (--help) and fs/positionals.c (what is left once
 * the options are in: the channels given as NAME=URI, mount.s3pipe's source,
 * and the mountpoint).
 */
#ifndef S3PIPE_FS_PARSE_H
#define S3PIPE_FS_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fs/channels.h"
#include "fs/options.h"

struct parse_state {
	struct fs_options *o;
	bool mount_helper;
	const char *prog;		       /* for "(see PROG --help)" */
	char channel[FS_CHANNEL_NAME_MAX + 1]; /* -o channel=, "" if unset */
	char shown[96];	  /* the option being applied, as the user wrote it */
	const char **pos; /* the non-options, pointing into argv */
	int npos;
	int pending; /* KEY_NEXT + row or KEY_TYPE_NEXT, else 0 */
	int rc;	     /* why opt_proc() stopped fuse_opt_parse() */
	char *err;
	size_t errlen;
};

/* ---- the option table (fs/options.c) ---- */

enum opt_kind {
	OPT_FLAG,    /* bool at offset, no value */
	OPT_STRING,  /* char * at offset, owned, non-empty */
	OPT_SIZE,    /* uint64_t at offset, util_parse_size in [min, max] */
	OPT_UINT,    /* unsigned at offset, util_parse_uint in [min, max] */
	OPT_SETTER,  /* set() does the work */
	OPT_CHANNEL, /* a per-channel setting: channel_setting_parse() */
};

enum opt_form {
	FORM_LONG,  /* --name or --name=value */
	FORM_SHORT, /* -x */
	FORM_O,	    /* -o name[=value] */
};

/* opt_proc()'s keys for our templates (fuse_opt's own are negative) */
enum {
	KEY_PASS = -100,    /* not a key: o_item() hands the item to libfuse */
	KEY_TYPE_NEXT = 1,  /* mount.s3pipe "-t": its value follows */
	KEY_TYPE,	    /* "-t TYPE" or "-tTYPE" */
	KEY_NEXT = 0x1000,  /* + row: "--name", its value follows */
	KEY_VALUE = 0x2000, /* + row: "--name VALUE" glued, or "--name..." */
};

struct opt_def {
	const char *name;    /* canonical, with dashes; the start of another
				name only if it comes after that one
				("--name " matches prefixes: long_value()) */
	char short_name;     /* 0 when none; only for flags */
	enum opt_kind kind;  /* how the value is parsed and stored */
	size_t offset;	     /* into struct fs_options (not OPT_SETTER) */
	uint64_t min, max;   /* OPT_SIZE, OPT_UINT */
	const char *metavar; /* NULL: the option takes no value */
	int (*set)(struct parse_state *st, const char *val); /* OPT_SETTER */
	const char *help; /* fs_options_usage() adds SIZE and UINT defaults */
	const struct channel_setting *setting; /* OPT_CHANNEL */
};

/* The rows: the general ones (opt_general_rows() of them), then one a
 * per-channel setting with an option (channel_settings[]). */
size_t opt_row_count(void);
size_t opt_general_rows(void);
const struct opt_def *opt_row_at(size_t i);
/* A row by its long name (name[0..len), '-' and '_' equal) or its
 * letter; NULL when none. */
const struct opt_def *opt_find_long(const char *name, size_t len);
const struct opt_def *opt_find_short(char c);
/* name[0..len) is canon, with '-' and '_' equal. */
bool opt_name_eq(const char *name, size_t len, const char *canon);
/* The value of row d, as given in form: 0 or an errno with st->err. */
int opt_apply(struct parse_state *st, const struct opt_def *d,
	      enum opt_form form, const char *val);
/* v as the shortest SIZE that says it ("8M"). */
const char *opt_size_str(uint64_t v, char *buf, size_t len);

/* ---- fuse_opt's templates (fs/option_templates.c) ---- */

struct fuse_opt;
/* The templates for one parse (see the file); *nbuilt of them own their
 * strings.  NULL when out of memory. */
struct fuse_opt *opt_templates_build(bool mount_helper, size_t *nbuilt);
void opt_templates_free(struct fuse_opt *t, size_t nbuilt);
/* An -o item s3pipe does not know: KEY_PASS when libfuse takes it, else
 * an errno with st->err. */
int opt_passthrough(struct parse_state *st, const char *item, size_t len);

/* ---- mount(8)'s rules (fs/helper_rules.c) ---- */

/* fstab and mount keywords dropped from -o; mount.s3pipe's -t */
extern const struct fuse_opt opt_discard_templates[];
extern const size_t opt_discard_count;
extern const struct fuse_opt opt_helper_templates[];
extern const size_t opt_helper_count;
/* mount(8)'s letter c for mount.s3pipe (-t aside): 0, an errno with
 * st->err, or 1 when c is not one. */
int opt_helper_letter(struct parse_state *st, char c);

/* The parse fails with rc and one line in st->err (printf-style): rc. */
int options_fail(struct parse_state *st, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* ENOMEM, said so. */
int options_fail_nomem(struct parse_state *st);

/* The non-options pos[0..npos) of s3pipe (NAME=URI... MOUNTPOINT) and of
 * mount.s3pipe (SOURCE MOUNTPOINT): 0 or an errno with st->err. */
int positionals_s3pipe(struct parse_state *st, const char **pos, int npos);
int positionals_helper(struct parse_state *st, const char **pos, int npos);

#endif
