/*
 * fs session: what s3pipe hands libfuse.
 *
 * The FUSE session's options are s3pipe's own ("-o ro,fsname=...,
 * subtype=s3pipe,max_read=...", allow_other when asked) followed by the -o
 * options the command line passed through; a user's fsname= or subtype=
 * replaces s3pipe's rather than being added twice.  Whether libfuse takes
 * an option is asked of libfuse itself, on a session that is created and
 * destroyed at once: fuse_session_new() parses and allocates, and opens
 * and mounts nothing (libfuse 3.14), so a bad option is refused while the
 * command line is parsed, before anything starts.
 */
#include "config.h"

#include "fs/session.h"

#include <fuse_lowlevel.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FSNAME_MAX 512 /* longest source shown as fsname */

/*
 * What libfuse logged during the current check.  Its log function takes no
 * user pointer, hence a static: options are checked at start-up, on one
 * thread.
 */
static char fuse_msg[256];

__attribute__((format(printf, 2, 0))) static void
capture_fuse_log(enum fuse_log_level level, const char *fmt, va_list ap)
{
	size_t used = strlen(fuse_msg);

	(void)level;
	if (used + 1 < sizeof(fuse_msg))
		vsnprintf(fuse_msg + used, sizeof(fuse_msg) - used, fmt, ap);
}

/* Nested: the parse is quiet as a whole, each check within it too. */
static unsigned quiet_depth;

void fs_session_quiet(bool quiet)
{
	if (quiet && quiet_depth++ == 0)
		fuse_set_log_func(capture_fuse_log);
	else if (!quiet && quiet_depth && --quiet_depth == 0)
		fuse_set_log_func(NULL); /* libfuse's default: stderr */
}

int fs_session_option_check(const char *item, char *msg, size_t msglen)
{
	static const struct fuse_lowlevel_ops no_ops;
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	struct fuse_session *se;
	char *list = NULL;
	int rc = ENOMEM;

	fs_session_quiet(true);
	fuse_msg[0] = '\0';
	if (fuse_opt_add_opt_escaped(&list, item) != 0 ||
	    fuse_opt_add_arg(&args, "s3pipe") != 0 ||
	    fuse_opt_add_arg(&args, "-o") != 0 ||
	    fuse_opt_add_arg(&args, list) != 0)
		goto out;
	se = fuse_session_new(&args, &no_ops, sizeof(no_ops), NULL);
	rc = se ? 0 : EINVAL;
	if (se)
		fuse_session_destroy(se);
out:
	snprintf(msg, msglen, "%s", rc == EINVAL ? fuse_msg : "");
	fs_session_quiet(false);
	free(list);
	fuse_opt_free_args(&args);
	return rc;
}

enum { USER_FSNAME = 1, USER_SUBTYPE = 2 };

static const struct fuse_opt user_name_templates[] = {
    FUSE_OPT_KEY("fsname=", USER_FSNAME),
    FUSE_OPT_KEY("subtype=", USER_SUBTYPE),
    FUSE_OPT_END,
};

/* Notes which of fsname= and subtype= the user gave; keeps everything. */
static int note_user_name(void *data, const char *arg, int key,
			  struct fuse_args *outargs)
{
	unsigned *seen = data;

	(void)arg;
	(void)outargs;
	if (key > 0)
		*seen |= (unsigned)key;
	return 1;
}

/* USER_FSNAME | USER_SUBTYPE as found in o->fuse_args, or -1 (ENOMEM). */
static int user_names(const struct fs_options *o)
{
	struct fuse_args copy =
	    FUSE_ARGS_INIT(o->fuse_args.argc, o->fuse_args.argv);
	unsigned seen = 0;
	int rc =
	    fuse_opt_parse(&copy, &seen, user_name_templates, note_user_name);

	fuse_opt_free_args(&copy); /* fuse_opt's copy, never o's */
	return rc ? -1 : (int)seen;
}

/*
 * mount(8) shows the source as the file system's name; a URI with a comma
 * or a backslash would need escaping, and a long one is no use there.
 */
static const char *session_fsname(const struct fs_options *o, bool mount_helper)
{
	const char *uri = o->nchannels ? o->channels[0].uri : NULL;

	if (!mount_helper || !uri || strpbrk(uri, ",\\") ||
	    strlen(uri) >= FSNAME_MAX)
		return "s3pipe";
	return uri;
}

int fs_session_args(const struct fs_options *o, const char *prog,
		    bool mount_helper, struct fuse_args *out)
{
	char own[FSNAME_MAX + 128];
	int user = user_names(o);
	int i;

	if (user < 0)
		return ENOMEM;
	snprintf(own, sizeof(own), "-oro%s%s%s,max_read=%u%s",
		 user & USER_FSNAME ? "" : ",fsname=",
		 user & USER_FSNAME ? "" : session_fsname(o, mount_helper),
		 user & USER_SUBTYPE ? "" : ",subtype=s3pipe", FS_MAX_READ,
		 o->allow_other ? ",allow_other" : "");
	if (fuse_opt_add_arg(out, prog) != 0 || fuse_opt_add_arg(out, own) != 0)
		goto nomem;
	for (i = 1; i < o->fuse_args.argc; i++) {
		if (fuse_opt_add_arg(out, o->fuse_args.argv[i]) != 0)
			goto nomem;
	}
	return 0;
nomem:
	fuse_opt_free_args(out);
	return ENOMEM;
}
