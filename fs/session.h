/*
 * fs session: what s3pipe hands libfuse (fs/session.c): the session's
 * arguments, and libfuse's own check of an -o option.
 */
#ifndef S3PIPE_FS_SESSION_H
#define S3PIPE_FS_SESSION_H

#include <stdbool.h>
#include <stddef.h>

#include "fs/options.h"

/*
 * quiet: libfuse's log messages are kept (for fs_session_option_check())
 * instead of printed, until as many fs_session_quiet(false) calls follow.
 * Start-up only, one thread.
 */
void fs_session_quiet(bool quiet);

/*
 * Whether libfuse takes "-o item" (asked of a session created and destroyed
 * at once: nothing is opened or mounted).  Returns 0; EINVAL with libfuse's
 * own message in msg; or ENOMEM.
 */
int fs_session_option_check(const char *item, char *msg, size_t msglen);

/*
 * Fills out, which must be empty (FUSE_ARGS_INIT(0, NULL)), with the
 * arguments for fuse_session_new(): prog, then
 * "-oro,fsname=FSNAME,subtype=s3pipe,max_read=1048576[,allow_other]", then
 * o->fuse_args after its argv[0].  FSNAME is, for mount.s3pipe, the first
 * channel's URI when it has no comma or backslash and is shorter than 512
 * bytes, else "s3pipe".  A fsname= or subtype= in o->fuse_args replaces
 * s3pipe's own instead of being given twice.  Returns 0, or ENOMEM with out
 * freed. The caller frees out with fuse_opt_free_args().
 */
int fs_session_args(const struct fs_options *o, const char *prog,
		    bool mount_helper, struct fuse_args *out);

#endif
