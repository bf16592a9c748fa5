/*
 * fs helper rules: mount.s3pipe as mount(8) runs it, and the fstab
 * keywords that mean nothing to a read-only mount.
 *
 * mount(8) runs helpers as (section EXTERNAL HELPERS of util-linux mount(8))
 *
 *   /sbin/mount.TYPE SPEC DIR [-sfnv] [-N NAMESPACE] [-o OPTS] [-t TYPE.SUB]
 *
 * where -s -f -n -v keep mount's meanings: -s sloppy, -f fake ("dry run; skip
 * the mount(2) syscall"), -n no mtab, -v verbose.  So for mount.s3pipe, -f
 * is NOT foreground: "mount -f" must not mount, and a helper that stayed in
 * the foreground would hang mount(8).  We set o->fake (check everything,
 * mount nothing) and foreground is "-o foreground".  -s, -n and -v are
 * accepted and ignored.  -t only names a subtype and is ignored.  -N asks
 * for a mount in another namespace, which we cannot honour, so it is
 * refused rather than mounting in the wrong place.  mount(8) strips auto,
 * noauto, comment= and x-* itself; the fstab keywords it does pass (_netdev,
 * nofail, user, user=NAME for user mounts, rw, ...) are dropped here: the
 * mount is always read-only.
 *
 */
#include "config.h"

#include "fs/parse.h"

#include <fuse_lowlevel.h>

#include <errno.h>

/*
 * fstab(5) and mount(8) keywords that mean nothing to a read-only s3pipe,
 * dropped wherever they appear in -o.  x-* is dropped in o_item(): a
 * template without '=' matches only itself.
 */
const struct fuse_opt opt_discard_templates[] = {
    FUSE_OPT_KEY("_netdev", FUSE_OPT_KEY_DISCARD),
    FUSE_OPT_KEY("nofail", FUSE_OPT_KEY_DISCARD),
    FUSE_OPT_KEY("auto", FUSE_OPT_KEY_DISCARD),
    FUSE_OPT_KEY("noauto", FUSE_OPT_KEY_DISCARD),
    FUSE_OPT_KEY("user", FUSE_OPT_KEY_DISCARD),
    FUSE_OPT_KEY("users", FUSE_OPT_KEY_DISCARD),
    FUSE_OPT_KEY("nouser", FUSE_OPT_KEY_DISCARD),
    FUSE_OPT_KEY("owner", FUSE_OPT_KEY_DISCARD),
    FUSE_OPT_KEY("group", FUSE_OPT_KEY_DISCARD),
    FUSE_OPT_KEY("defaults", FUSE_OPT_KEY_DISCARD),
    FUSE_OPT_KEY("rw", FUSE_OPT_KEY_DISCARD),
    FUSE_OPT_KEY("ro", FUSE_OPT_KEY_DISCARD),
    FUSE_OPT_KEY("exec", FUSE_OPT_KEY_DISCARD),
    FUSE_OPT_KEY("noexec", FUSE_OPT_KEY_DISCARD),
    FUSE_OPT_KEY("suid", FUSE_OPT_KEY_DISCARD),
    FUSE_OPT_KEY("nosuid", FUSE_OPT_KEY_DISCARD),
    FUSE_OPT_KEY("dev", FUSE_OPT_KEY_DISCARD),
    FUSE_OPT_KEY("nodev", FUSE_OPT_KEY_DISCARD),
    FUSE_OPT_KEY("comment=", FUSE_OPT_KEY_DISCARD),
    FUSE_OPT_KEY("user=", FUSE_OPT_KEY_DISCARD),
};
const size_t opt_discard_count =
    sizeof(opt_discard_templates) / sizeof(opt_discard_templates[0]);

/* mount.s3pipe's "-t TYPE" ("-t" notes that a value follows) */
const struct fuse_opt opt_helper_templates[] = {
    FUSE_OPT_KEY("-t", KEY_TYPE_NEXT),
    FUSE_OPT_KEY("-t ", KEY_TYPE),
};
const size_t opt_helper_count =
    sizeof(opt_helper_templates) / sizeof(opt_helper_templates[0]);

/* mount(8)'s letters for mount.s3pipe (-t aside); 1 when c is not one. */
int opt_helper_letter(struct parse_state *st, char c)
{
	switch (c) {
	case 'f':
		st->o->fake = true;
		return 0;
	case 's':
	case 'n':
	case 'v':
		return 0; /* accepted, ignored */
	case 'N':
		return options_fail(
		    st, EINVAL,
		    "option -N (mount in another namespace) is not "
		    "supported: run mount.s3pipe inside that "
		    "namespace");
	default:
		return 1;
	}
}
