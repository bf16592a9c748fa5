/*
 * fs option templates: what fuse_opt_parse() matches for s3pipe's options,
 * built from the option table (fs/options.c), and what becomes of an -o
 * item s3pipe does not know: libfuse's, when a throw-away session takes it.
 *
 *   --name VALUE     templates "--name" (a value follows: noted in
 *                    st->pending) and "--name " (fuse_opt takes the next
 *                    argument), for every '-'/'_' spelling of the name;
 *   --name=VALUE     the "--name " template again, matched as a prefix;
 *   keywords         FUSE_OPT_KEY_DISCARD templates (fs/helper_rules.c),
 *                    and mount.s3pipe's -t.
 */
#include "config.h"

#include "fs/parse.h"
#include "fs/session.h"

#include <fuse_lowlevel.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static unsigned count_dashes(const char *name)
{
	unsigned n = 0;

	for (; *name; name++)
		n += *name == '-';
	return n;
}

/*
 * "--NAME" (or "--NAME " with space) where bit i of mask turns the i-th
 * '-' of name into '_'.  NULL when out of memory.
 */
static char *spelling(const char *name, unsigned mask, bool space)
{
	size_t len = strlen(name);
	char *s = malloc(len + 4);
	unsigned bit = 0;
	size_t i;

	if (!s)
		return NULL;
	s[0] = s[1] = '-';
	for (i = 0; i < len; i++) {
		s[i + 2] = name[i];
		if (name[i] == '-' && (mask >> bit++) & 1)
			s[i + 2] = '_';
	}
	s[len + 2] = space ? ' ' : '\0';
	s[len + 3] = '\0';
	return s;
}

/* Frees what opt_templates_build() made: the first n templates' strings. */
void opt_templates_free(struct fuse_opt *t, size_t n)
{
	size_t i;

	if (!t)
		return;
	for (i = 0; i < n; i++)
		free((char *)t[i].templ);
	free(t);
}

/*
 * The templates for one parse: "--NAME" and "--NAME " for each spelling
 * of each option that takes a value, then the keywords to discard (and
 * mount.s3pipe's -t), then FUSE_OPT_END.  *nbuilt gets the number of
 * allocated template strings at the start.  NULL when out of memory.
 */
struct fuse_opt *opt_templates_build(bool mount_helper, size_t *nbuilt)
{
	struct fuse_opt *t;
	size_t i, n = 0, cap = opt_discard_count + opt_helper_count + 1;
	unsigned mask;

	for (i = 0; i < opt_row_count(); i++) {
		if (opt_row_at(i)->metavar)
			cap += 2u << count_dashes(opt_row_at(i)->name);
	}
	t = calloc(cap, sizeof(*t));
	if (!t)
		return NULL;
	for (i = 0; i < opt_row_count(); i++) {
		const char *name = opt_row_at(i)->name;

		if (!opt_row_at(i)->metavar)
			continue;
		for (mask = 0; mask < 1u << count_dashes(name); mask++) {
			t[n] = (struct fuse_opt)FUSE_OPT_KEY(
			    spelling(name, mask, false), KEY_NEXT + (int)i);
			t[n + 1] = (struct fuse_opt)FUSE_OPT_KEY(
			    spelling(name, mask, true), KEY_VALUE + (int)i);
			n += 2;
			if (!t[n - 2].templ || !t[n - 1].templ) {
				opt_templates_free(t, n);
				return NULL;
			}
		}
	}
	*nbuilt = n;
	memcpy(t + n, opt_discard_templates,
	       opt_discard_count * sizeof(*opt_discard_templates));
	if (mount_helper)
		memcpy(t + n + opt_discard_count, opt_helper_templates,
		       opt_helper_count * sizeof(*opt_helper_templates));
	return t; /* calloc wrote FUSE_OPT_END */
}

/*
 * An -o item s3pipe does not know: KEY_PASS (fuse_opt keeps it for libfuse)
 * when a session takes it, else an error.
 */
int opt_passthrough(struct parse_state *st, const char *item, size_t len)
{
	char fuse_msg[256];
	const char *msg = fuse_msg;
	int n = (int)(len > 64 ? 64 : len);
	int rc;

	if (opt_name_eq(item, len, "max-read"))
		return options_fail(
		    st, EINVAL,
		    "option -o max_read cannot be set: s3pipe mounts "
		    "with max_read=%u",
		    FS_MAX_READ);
	rc = fs_session_option_check(item, fuse_msg, sizeof(fuse_msg));
	if (rc == ENOMEM)
		return options_fail_nomem(st);
	if (rc == 0)
		return KEY_PASS;
	if (strstr(fuse_msg, "unknown option") || !fuse_msg[0])
		return options_fail(st, EINVAL,
				    "unknown option '-o %.*s' (see %s --help)",
				    n, item, st->prog);
	if (strncmp(msg, "fuse: ", 6) == 0)
		msg += 6;
	return options_fail(st, EINVAL,
			    "option '-o %.*s' refused by libfuse: %.*s", n,
			    item, (int)strcspn(msg, "\n"), msg);
}
