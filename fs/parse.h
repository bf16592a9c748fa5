/*
 * fs parse: one command line's parse, shared by fs/options.c (the options,
 * through libfuse's fuse_opt) and fs/positionals.c (what is left once the
 * options are in: the channels given as NAME=URI, mount.s3pipe's source,
 * and the mountpoint).
 */
#ifndef S3PIPE_FS_PARSE_H
#define S3PIPE_FS_PARSE_H

#include <stdbool.h>
#include <stddef.h>

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
