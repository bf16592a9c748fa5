/*
 * fs options: one table drives every form of every option.
 *
 * Each option is one row of opt_table: its canonical name (with dashes), an
 * optional short letter, a kind (flag, string, size, number, or a setter for
 * the few that need more), where the value lands in struct fs_options, its
 * limits and its help line.  "--name VALUE", "--name=VALUE", "-x" and
 * "-o name=VALUE" all end in opt_apply() with the same row, and
 * fs_options_usage() prints the same table.  Option names compare with '-'
 * and '_' equal.  Inside -o lists a comma may be escaped as "\," (and a
 * backslash as "\\"), as libfuse does.
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
 * accepted and ignored; sloppy is optional per mount(8),
 * and unknown options stay errors.  -t only names a subtype and is ignored.
 * -N asks for a mount in another namespace, which we cannot honour, so it is
 * refused rather than mounting in the wrong place.  mount(8) strips auto,
 * noauto, comment= and x-* itself; fstab keywords it does pass (_netdev,
 * nofail, user, user=NAME for user mounts, rw, ...) are ignored here.
 *
 * Error messages are one line: control characters from argv are replaced
 * with '?' so a hostile argument cannot forge extra lines.
 */
#include "config.h"

#include "fs/options.h"

#include "s3/s3.h"
#include "util/util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HELP_COLUMN 28		  /* where help text starts in --help */
#define HELP_WIDTH  79		  /* and where it wraps */
#define ID_MAX	    4294967294ULL /* (uid_t)-1 means "no change" */

enum opt_kind {
	OPT_FLAG,   /* bool at offset, no value */
	OPT_STRING, /* char * at offset, owned, non-empty */
	OPT_SIZE,   /* uint64_t at offset, util_parse_size in [min, max] */
	OPT_UINT,   /* unsigned at offset, util_parse_uint in [min, max] */
	OPT_SETTER, /* set() does the work */
};

enum opt_form {
	FORM_LONG,  /* --name or --name=value */
	FORM_SHORT, /* -x */
	FORM_O,	    /* -o name[=value] */
};

struct parse_state {
	struct fs_options *o;
	bool mount_helper;
	const char *prog;		       /* for "(see PROG --help)" */
	char channel[FS_CHANNEL_NAME_MAX + 1]; /* -o channel=, "" if unset */
	char shown[96]; /* the option being applied, as the user wrote it */
	char *err;
	size_t errlen;
};

struct opt_def {
	const char *name;    /* canonical, with dashes */
	char short_name;     /* 0 when none */
	enum opt_kind kind;  /* how the value is parsed and stored */
	size_t offset;	     /* into struct fs_options (not OPT_SETTER) */
	uint64_t min, max;   /* OPT_SIZE, OPT_UINT */
	const char *metavar; /* NULL: the option takes no value */
	int (*set)(struct parse_state *st, const char *val); /* OPT_SETTER */
	const char *help;
};

static int set_endpoint(struct parse_state *st, const char *val);
static int set_no_verify_ssl(struct parse_state *st, const char *val);
static int set_seek(struct parse_state *st, const char *val);
static int set_uid(struct parse_state *st, const char *val);
static int set_gid(struct parse_state *st, const char *val);
static int set_debug(struct parse_state *st, const char *val);
static int set_channel(struct parse_state *st, const char *val);

#define OFF(field) offsetof(struct fs_options, field)

static const struct opt_def opt_table[] = {
    {.name = "endpoint-url",
     .kind = OPT_SETTER,
     .metavar = "URL",
     .set = set_endpoint,
     .help = "S3 endpoint, http(s)://HOST[:PORT] (default: AWS)"},
    {.name = "region",
     .kind = OPT_STRING,
     .offset = OFF(s3.region),
     .metavar = "REGION",
     .help = "region to sign for (default: AWS_REGION, AWS_DEFAULT_REGION, "
	     "the profile's region, us-east-1)"},
    {.name = "profile",
     .kind = OPT_STRING,
     .offset = OFF(s3.profile),
     .metavar = "NAME",
     .help = "profile in ~/.aws/credentials and ~/.aws/config (default: "
	     "AWS_PROFILE or default)"},
    {.name = "no-sign-request",
     .kind = OPT_FLAG,
     .offset = OFF(s3.no_sign),
     .help = "send anonymous requests (public buckets)"},
    {.name = "force-path-style",
     .kind = OPT_FLAG,
     .offset = OFF(s3.force_path_style),
     .help = "address buckets as HOST/BUCKET instead of BUCKET.HOST"},
    {.name = "no-verify-ssl",
     .kind = OPT_SETTER,
     .set = set_no_verify_ssl,
     .help = "do not verify TLS certificates (testing only)"},
    {.name = "ca-bundle",
     .kind = OPT_STRING,
     .offset = OFF(s3.ca_bundle),
     .metavar = "FILE",
     .help = "CA certificates to verify TLS with (default: the system's)"},
    {.name = "cache-size",
     .kind = OPT_SIZE,
     .offset = OFF(cache.budget_bytes),
     .min = 0,
     .max = UINT64_MAX,
     .metavar = "SIZE",
     .help = "memory for all cached data, at least twice --part-size "
	     "(default 256M)"},
    {.name = "part-size",
     .kind = OPT_SIZE,
     .offset = OFF(cache.block_size),
     .min = CACHE_MIN_BLOCK_SIZE,
     .max = CACHE_MAX_BLOCK_SIZE,
     .metavar = "SIZE",
     .help = "bytes per cache block, 64K to 1G (default 8M)"},
    {.name = "max-connections",
     .kind = OPT_UINT,
     .offset = OFF(s3.max_connections),
     .min = 1,
     .max = 256,
     .metavar = "N",
     .help = "parallel connections to S3, 1 to 256 (default 64)"},
    {.name = "max-retries",
     .kind = OPT_UINT,
     .offset = OFF(s3.max_retries),
     .min = 0,
     .max = 20,
     .metavar = "N",
     .help = "retries of a failed request, 0 to 20 (default 5)"},
    {.name = "stall-timeout",
     .kind = OPT_UINT,
     .offset = OFF(s3.stall_seconds),
     .min = 1,
     .max = 3600,
     .metavar = "SECONDS",
     .help = "retry a stalled transfer after SECONDS, 1 to 3600 (default 30)"},
    {.name = "epochs",
     .kind = OPT_UINT,
     .offset = OFF(epochs),
     .min = 0,
     .max = UINT32_MAX,
     .metavar = "N",
     .help = "epoch files per channel, 0 = no limit (default 0)"},
    {.name = "seek",
     .kind = OPT_SETTER,
     .metavar = "MODE",
     .set = set_seek,
     .help = "reject (seeks fail with ESPIPE) or emulate (each seek restarts "
	     "the stream) (default reject)"},
    {.name = "uid",
     .kind = OPT_SETTER,
     .metavar = "N",
     .set = set_uid,
     .help = "owner of the files (default: the user who mounts)"},
    {.name = "gid",
     .kind = OPT_SETTER,
     .metavar = "N",
     .set = set_gid,
     .help = "group of the files (default: the user's group)"},
    {.name = "allow-other",
     .kind = OPT_FLAG,
     .offset = OFF(allow_other),
     .help = "let other users read the files (user_allow_other in "
	     "/etc/fuse.conf for non-root)"},
    {.name = "foreground",
     .short_name = 'f',
     .kind = OPT_FLAG,
     .offset = OFF(foreground),
     .help = "stay in the foreground (mount.s3pipe: -o foreground)"},
    {.name = "debug",
     .short_name = 'd',
     .kind = OPT_SETTER,
     .set = set_debug,
     .help = "log debug messages, implies --foreground"},
    {.name = "channel",
     .kind = OPT_SETTER,
     .metavar = "NAME",
     .set = set_channel,
     .help = "mount.s3pipe only: the channel name of SOURCE (default train)"},
    {.name = "help",
     .short_name = 'h',
     .kind = OPT_FLAG,
     .offset = OFF(help),
     .help = "print this help and exit"},
    {.name = "version",
     .short_name = 'V',
     .kind = OPT_FLAG,
     .offset = OFF(version),
     .help = "print the version and exit"},
};

#define OPT_COUNT (sizeof(opt_table) / sizeof(opt_table[0]))

/* mount(8)/fstab keywords that mean nothing to s3pipe (-o only). */
static const char *const ignored_words[] = {
    "_netdev", "auto",	 "noauto", "user",     "users", "nouser",
    "owner",   "group",	 "nofail", "defaults", "rw",	"ro",
    "exec",    "noexec", "suid",   "nosuid",   "dev",	"nodev",
};

static const char *const ignored_prefixes[] = {"x-", "comment=", "user="};

__attribute__((format(printf, 3, 4))) static int
fail(struct parse_state *st, int rc, const char *fmt, ...)
{
	va_list ap;
	char *p;

	if (!st->err || st->errlen == 0)
		return rc;
	va_start(ap, fmt);
	vsnprintf(st->err, st->errlen, fmt, ap);
	va_end(ap);
	for (p = st->err; *p; p++) {
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	}
	return rc;
}

static int fail_nomem(struct parse_state *st)
{
	return fail(st, ENOMEM, "out of memory");
}

/* Compares name[0..len) with canon, '-' and '_' equal. */
static bool name_eq(const char *name, size_t len, const char *canon)
{
	size_t i;
	char a, b;

	for (i = 0; i < len; i++) {
		a = name[i] == '_' ? '-' : name[i];
		b = canon[i] == '_' ? '-' : canon[i];
		if (b == '\0' || a != b)
			return false;
	}
	return canon[len] == '\0';
}

static const struct opt_def *find_long(const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < OPT_COUNT; i++) {
		if (name_eq(name, len, opt_table[i].name))
			return &opt_table[i];
	}
	return NULL;
}

static const struct opt_def *find_short(char c)
{
	size_t i;

	for (i = 0; i < OPT_COUNT; i++) {
		if (opt_table[i].short_name && opt_table[i].short_name == c)
			return &opt_table[i];
	}
	return NULL;
}

/* Fills st->shown: "--cache-size", "-f" or "-o cache_size". */
static void set_shown(struct parse_state *st, const struct opt_def *d,
		      enum opt_form form)
{
	size_t i;

	switch (form) {
	case FORM_SHORT:
		snprintf(st->shown, sizeof(st->shown), "-%c", d->short_name);
		break;
	case FORM_O:
		snprintf(st->shown, sizeof(st->shown), "-o %s", d->name);
		for (i = 3; st->shown[i]; i++) {
			if (st->shown[i] == '-')
				st->shown[i] = '_';
		}
		break;
	case FORM_LONG:
	default:
		snprintf(st->shown, sizeof(st->shown), "--%s", d->name);
		break;
	}
}

/* "256M", "64K", "1G" or plain bytes, for messages. */
static const char *size_str(uint64_t v, char *buf, size_t len)
{
	if (v >= (1ULL << 30) && v % (1ULL << 30) == 0)
		snprintf(buf, len, "%lluG", (unsigned long long)(v >> 30));
	else if (v >= (1ULL << 20) && v % (1ULL << 20) == 0)
		snprintf(buf, len, "%lluM", (unsigned long long)(v >> 20));
	else if (v >= (1ULL << 10) && v % (1ULL << 10) == 0)
		snprintf(buf, len, "%lluK", (unsigned long long)(v >> 10));
	else
		snprintf(buf, len, "%llu", (unsigned long long)v);
	return buf;
}

static int parse_number(struct parse_state *st, const char *val, uint64_t min,
			uint64_t max, uint64_t *out)
{
	int rc = util_parse_uint(val, min, max, out);

	if (rc == EINVAL)
		return fail(st, EINVAL, "invalid number '%s' for %s", val,
			    st->shown);
	if (rc)
		return fail(st, EINVAL, "%s must be between %llu and %llu",
			    st->shown, (unsigned long long)min,
			    (unsigned long long)max);
	return 0;
}

static int parse_size(struct parse_state *st, const struct opt_def *d,
		      const char *val, uint64_t *out)
{
	char lo[32], hi[32];
	int rc = util_parse_size(val, out);

	if (rc == EINVAL)
		return fail(st, EINVAL, "invalid size '%s' for %s", val,
			    st->shown);
	if (rc == ERANGE || *out > d->max)
		return fail(
		    st, EINVAL, "size '%s' for %s is too large%s%s", val,
		    st->shown, d->max < UINT64_MAX ? ": at most " : "",
		    d->max < UINT64_MAX ? size_str(d->max, hi, sizeof(hi))
					: "");
	if (*out < d->min)
		return fail(st, EINVAL, "%s must be between %s and %s",
			    st->shown, size_str(d->min, lo, sizeof(lo)),
			    size_str(d->max, hi, sizeof(hi)));
	return 0;
}

static int set_endpoint(struct parse_state *st, const char *val)
{
	size_t len = 0;
	char *copy;

	if (strncmp(val, "http://", 7) != 0 && strncmp(val, "https://", 8) != 0)
		return fail(st, EINVAL,
			    "invalid %s '%s': it must start with http:// or "
			    "https://",
			    st->shown, val);
	if (!s3_endpoint_valid(val, &len))
		return fail(
		    st, EINVAL,
		    "invalid %s '%s': use http(s)://HOST[:PORT] with no "
		    "path (the bucket goes in s3://BUCKET)",
		    st->shown, val);
	copy = strndup(val, len);
	if (!copy)
		return fail_nomem(st);
	free(st->o->s3.endpoint);
	st->o->s3.endpoint = copy;
	return 0;
}

static int set_no_verify_ssl(struct parse_state *st, const char *val)
{
	st->o->s3.tls_verify = false;
	return 0;
}

static int set_seek(struct parse_state *st, const char *val)
{
	if (strcmp(val, "reject") == 0)
		st->o->seek = FS_SEEK_REJECT;
	else if (strcmp(val, "emulate") == 0)
		st->o->seek = FS_SEEK_EMULATE;
	else
		return fail(st, EINVAL, "%s must be reject or emulate",
			    st->shown);
	return 0;
}

static int set_uid(struct parse_state *st, const char *val)
{
	uint64_t v;
	int rc = parse_number(st, val, 0, ID_MAX, &v);

	if (rc)
		return rc;
	st->o->uid = (uid_t)v;
	st->o->uid_set = true;
	return 0;
}

static int set_gid(struct parse_state *st, const char *val)
{
	uint64_t v;
	int rc = parse_number(st, val, 0, ID_MAX, &v);

	if (rc)
		return rc;
	st->o->gid = (gid_t)v;
	st->o->gid_set = true;
	return 0;
}

static int set_debug(struct parse_state *st, const char *val)
{
	st->o->debug = true;
	st->o->foreground = true;
	return 0;
}

static int set_channel(struct parse_state *st, const char *val)
{
	if (!st->mount_helper)
		return fail(st, EINVAL,
			    "option 'channel' is only for mount.s3pipe; name "
			    "channels as NAME=s3://...");
	if (!fs_channel_name_valid(val))
		return fail(st, EINVAL,
			    "invalid channel name '%s': use 1-64 of A-Z a-z "
			    "0-9 . - _",
			    val);
	memcpy(st->channel, val, strlen(val) + 1);
	return 0;
}

/* Applies row d; val is NULL when the user gave no value. */
static int opt_apply(struct parse_state *st, const struct opt_def *d,
		     enum opt_form form, const char *val)
{
	char *base = (char *)st->o;
	uint64_t v = 0;
	char *copy;
	int rc;

	set_shown(st, d, form);
	if (!d->metavar) {
		if (val)
			return fail(st, EINVAL, "option %s takes no value",
				    st->shown);
	} else if (!val || !*val) {
		return fail(st, EINVAL, "option %s needs a value", st->shown);
	}
	switch (d->kind) {
	case OPT_FLAG:
		*(bool *)(base + d->offset) = true;
		return 0;
	case OPT_STRING:
		copy = strdup(val);
		if (!copy)
			return fail_nomem(st);
		free(*(char **)(base + d->offset));
		*(char **)(base + d->offset) = copy;
		return 0;
	case OPT_SIZE:
		rc = parse_size(st, d, val, &v);
		if (rc)
			return rc;
		*(uint64_t *)(base + d->offset) = v;
		return 0;
	case OPT_UINT:
		rc = parse_number(st, val, d->min, d->max, &v);
		if (rc)
			return rc;
		*(unsigned *)(base + d->offset) = (unsigned)v;
		return 0;
	case OPT_SETTER:
	default:
		return d->set(st, val);
	}
}

static bool ignored_keyword(const char *item)
{
	size_t i;

	for (i = 0; i < sizeof(ignored_words) / sizeof(ignored_words[0]); i++) {
		if (strcmp(item, ignored_words[i]) == 0)
			return true;
	}
	for (i = 0; i < sizeof(ignored_prefixes) / sizeof(ignored_prefixes[0]);
	     i++) {
		if (strncmp(item, ignored_prefixes[i],
			    strlen(ignored_prefixes[i])) == 0)
			return true;
	}
	return false;
}

/* One "name" or "name=value" from a -o list. */
static int apply_o_item(struct parse_state *st, const char *item)
{
	const char *eq = strchr(item, '=');
	size_t len = eq ? (size_t)(eq - item) : strlen(item);
	const struct opt_def *d;

	if (ignored_keyword(item))
		return 0;
	d = find_long(item, len);
	if (!d)
		return fail(st, EINVAL,
			    "unknown option '%.*s' in -o (see %s --help)",
			    (int)(len > 64 ? 64 : len), item, st->prog);
	return opt_apply(st, d, FORM_O, eq ? eq + 1 : NULL);
}

/* A comma-separated -o list; "\," is a comma, "\\" a backslash. */
static int apply_o_list(struct parse_state *st, const char *list)
{
	char *copy = strdup(list);
	char *p, *w, *item;
	char end;
	int rc = 0;

	if (!copy)
		return fail_nomem(st);
	p = copy;
	for (;;) {
		item = p;
		w = p;
		while (*p && *p != ',') {
			if (p[0] == '\\' && (p[1] == ',' || p[1] == '\\')) {
				*w++ = p[1];
				p += 2;
			} else {
				*w++ = *p++;
			}
		}
		end = *p;
		*w = '\0';
		if (*item) {
			rc = apply_o_item(st, item);
			if (rc)
				goto fail;
		}
		if (!end)
			break;
		p++;
	}
fail:
	free(copy);
	return rc;
}

/* "--name", "--name=value" or "--name value" (consuming argv[*i + 1]). */
static int parse_long(struct parse_state *st, int argc, char **argv, int *i)
{
	const char *body = argv[*i] + 2;
	const char *eq = strchr(body, '=');
	size_t len = eq ? (size_t)(eq - body) : strlen(body);
	const struct opt_def *d = find_long(body, len);

	if (!d)
		return fail(st, EINVAL,
			    "unknown option '--%.*s' (see %s --help)",
			    (int)(len > 64 ? 64 : len), body, st->prog);
	if (eq || !d->metavar)
		return opt_apply(st, d, FORM_LONG, eq ? eq + 1 : NULL);
	if (*i + 1 >= argc)
		return opt_apply(st, d, FORM_LONG, NULL);
	(*i)++;
	return opt_apply(st, d, FORM_LONG, argv[*i]);
}

/* A value for a short option: the rest of the cluster or the next arg. */
static const char *short_value(const char *rest, int argc, char **argv, int *i)
{
	if (*rest)
		return rest;
	if (*i + 1 >= argc)
		return NULL;
	(*i)++;
	return argv[*i];
}

/* A cluster of short options: "-f", "-fd", "-oallow_other", "-sfnv". */
static int parse_short(struct parse_state *st, int argc, char **argv, int *i)
{
	const char *p = argv[*i] + 1;
	const struct opt_def *d;
	const char *val;
	int rc;

	for (; *p; p++) {
		if (*p == 'o') {
			val = short_value(p + 1, argc, argv, i);
			if (!val)
				return fail(st, EINVAL,
					    "option -o needs a value");
			return apply_o_list(st, val);
		}
		if (st->mount_helper) {
			if (*p == 'f') {
				st->o->fake = true;
				continue;
			}
			if (*p == 's' || *p == 'n' || *p == 'v')
				continue; /* accepted, ignored */
			if (*p == 't') {
				if (!short_value(p + 1, argc, argv, i))
					return fail(st, EINVAL,
						    "option -t needs a value");
				return 0;
			}
			if (*p == 'N')
				return fail(
				    st, EINVAL,
				    "option -N (mount in another "
				    "namespace) is not supported: run "
				    "mount.s3pipe inside that namespace");
		}
		d = find_short(*p);
		if (!d)
			return fail(st, EINVAL,
				    "unknown option '-%c' (see %s --help)", *p,
				    st->prog);
		if (d->metavar) {
			val = short_value(p + 1, argc, argv, i);
			return opt_apply(st, d, FORM_SHORT, val);
		}
		rc = opt_apply(st, d, FORM_SHORT, NULL);
		if (rc || st->o->help || st->o->version)
			return rc;
	}
	return 0;
}

/* "NAME=s3://x" shaped: a channel where a mountpoint was expected. */
static bool looks_like_channel(const char *s)
{
	const char *eq = strchr(s, '=');
	const char *p;

	if (!eq || eq == s)
		return false;
	for (p = eq + 1; *p; p++) {
		if (strncmp(p, "://", 3) == 0)
			return p > eq + 1;
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '+' || *p == '-' ||
		      *p == '.'))
			return false;
	}
	return false;
}

static int add_channel(struct parse_state *st, const char *name, size_t namelen,
		       const char *uri)
{
	struct fs_options *o = st->o;
	struct fs_channel_spec *c;
	char uerr[512];
	char namebuf[FS_CHANNEL_NAME_MAX + 1];
	char *bucket = NULL;
	char *prefix = NULL;
	char *copy = NULL;
	unsigned i;
	int rc;

	if (namelen > FS_CHANNEL_NAME_MAX) {
		return fail(st, EINVAL,
			    "invalid channel name '%.*s...': use 1-64 of A-Z "
			    "a-z 0-9 . - _",
			    FS_CHANNEL_NAME_MAX, name);
	}
	memcpy(namebuf, name, namelen);
	namebuf[namelen] = '\0';
	if (!fs_channel_name_valid(namebuf))
		return fail(st, EINVAL,
			    "invalid channel name '%s': use 1-64 of A-Z a-z "
			    "0-9 . - _",
			    namebuf);
	for (i = 0; i < o->nchannels; i++) {
		if (strcmp(o->channels[i].name, namebuf) == 0)
			return fail(st, EINVAL, "duplicate channel '%s'",
				    namebuf);
	}
	if (o->nchannels >= FS_MAX_CHANNELS)
		return fail(st, EINVAL, "too many channels: at most %d",
			    FS_MAX_CHANNELS);
	uerr[0] = '\0';
	rc = s3_uri_parse(uri, &bucket, &prefix, uerr, sizeof(uerr));
	if (rc == ENOMEM)
		goto nomem;
	if (rc) {
		if (st->mount_helper && looks_like_channel(uri))
			rc = fail(st, EINVAL,
				  "source '%s' is not an s3:// uri: give "
				  "s3://BUCKET[/PREFIX] and name the channel "
				  "with -o channel=NAME",
				  uri);
		else if (st->mount_helper)
			rc = fail(st, EINVAL, "%s", uerr);
		else
			rc =
			    fail(st, EINVAL, "channel '%s': %s", namebuf, uerr);
		goto fail;
	}
	copy = strdup(uri);
	if (!copy)
		goto nomem;
	c = &o->channels[o->nchannels++];
	memcpy(c->name, namebuf, namelen + 1);
	c->uri = copy;
	c->bucket = bucket;
	c->prefix = prefix;
	return 0;
nomem:
	rc = fail_nomem(st);
fail:
	free(bucket);
	free(prefix);
	free(copy);
	return rc;
}

static int set_mountpoint(struct parse_state *st, const char *path)
{
	char *copy;

	if (!*path)
		return fail(st, EINVAL, "no mountpoint given");
	copy = strdup(path);
	if (!copy)
		return fail_nomem(st);
	free(st->o->mountpoint);
	st->o->mountpoint = copy;
	return 0;
}

/* s3pipe: NAME=URI ... MOUNTPOINT */
static int positionals_s3pipe(struct parse_state *st, char **pos, int npos)
{
	const char *last, *eq;
	int i, rc;

	for (i = 0; i + 1 < npos; i++) {
		eq = strchr(pos[i], '=');
		if (!eq)
			return fail(
			    st, EINVAL,
			    "unexpected argument '%s': channels are "
			    "NAME=s3://BUCKET[/PREFIX] and the mountpoint "
			    "comes last",
			    pos[i]);
		rc = add_channel(st, pos[i], (size_t)(eq - pos[i]), eq + 1);
		if (rc)
			return rc;
	}
	if (npos == 0)
		return fail(
		    st, EINVAL,
		    "no channel given: expected NAME=s3://BUCKET[/PREFIX]");
	last = pos[npos - 1];
	if (!*last || looks_like_channel(last))
		return fail(st, EINVAL, "no mountpoint given");
	if (st->o->nchannels == 0)
		return fail(
		    st, EINVAL,
		    "no channel given: expected NAME=s3://BUCKET[/PREFIX]");
	return set_mountpoint(st, last);
}

/* mount.s3pipe: SOURCE MOUNTPOINT */
static int positionals_helper(struct parse_state *st, char **pos, int npos)
{
	const char *name = st->channel[0] ? st->channel : FS_DEFAULT_CHANNEL;
	int rc;

	if (npos == 0)
		return fail(st, EINVAL,
			    "no source given: expected mount.s3pipe "
			    "s3://BUCKET[/PREFIX] MOUNTPOINT [-o OPTIONS]");
	if (npos == 1)
		return fail(st, EINVAL, "no mountpoint given");
	if (npos > 2)
		return fail(st, EINVAL,
			    "unexpected argument '%s': mount.s3pipe takes "
			    "SOURCE MOUNTPOINT [-o OPTIONS]",
			    pos[2]);
	rc = add_channel(st, name, strlen(name), pos[0]);
	if (rc)
		return rc;
	return set_mountpoint(st, pos[1]);
}

void fs_options_init(struct fs_options *o)
{
	memset(o, 0, sizeof(*o));
	s3_client_conf_init(&o->s3);
	cache_conf_init(&o->cache);
	o->epochs = 0;
	o->seek = FS_SEEK_REJECT;
	o->max_threads = FS_DEFAULT_MAX_THREADS;
}

void fs_options_free(struct fs_options *o)
{
	unsigned i;

	for (i = 0; i < o->nchannels && i < FS_MAX_CHANNELS; i++) {
		free(o->channels[i].uri);
		free(o->channels[i].bucket);
		free(o->channels[i].prefix);
		o->channels[i].uri = NULL;
		o->channels[i].bucket = NULL;
		o->channels[i].prefix = NULL;
	}
	o->nchannels = 0;
	free(o->mountpoint);
	o->mountpoint = NULL;
	s3_client_conf_free(&o->s3);
}

int fs_options_parse(int argc, char **argv, bool mount_helper,
		     struct fs_options *o, char *err, size_t errlen)
{
	struct parse_state st;
	char **pos = NULL;
	char a[32], b[32];
	bool end_opts = false;
	const char *arg;
	int npos = 0;
	int i, rc = 0;

	memset(&st, 0, sizeof(st));
	st.o = o;
	st.mount_helper = mount_helper;
	st.prog = mount_helper ? "mount.s3pipe" : "s3pipe";
	st.err = err;
	st.errlen = errlen;
	if (err && errlen)
		err[0] = '\0';
	if (argc < 1 || !argv)
		argc = 1;
	pos = calloc((size_t)argc, sizeof(*pos));
	if (!pos)
		return fail_nomem(&st);
	for (i = 1; i < argc; i++) {
		arg = argv[i];
		if (!arg)
			break;
		if (!end_opts && strcmp(arg, "--") == 0)
			end_opts = true;
		else if (!end_opts && arg[0] == '-' && arg[1] == '-')
			rc = parse_long(&st, argc, argv, &i);
		else if (!end_opts && arg[0] == '-' && arg[1] != '\0')
			rc = parse_short(&st, argc, argv, &i);
		else
			pos[npos++] = argv[i];
		if (rc)
			goto fail;
		if (o->help || o->version)
			goto fail; /* rc is 0: nothing else matters */
	}
	if (mount_helper)
		rc = positionals_helper(&st, pos, npos);
	else
		rc = positionals_s3pipe(&st, pos, npos);
	if (rc)
		goto fail;
	if (o->cache.budget_bytes / 2 < o->cache.block_size)
		rc = fail(&st, EINVAL,
			  "--cache-size (%s) must be at least twice "
			  "--part-size (%s): raise --cache-size or lower "
			  "--part-size",
			  size_str(o->cache.budget_bytes, a, sizeof(a)),
			  size_str(o->cache.block_size, b, sizeof(b)));
fail:
	free(pos);
	return rc;
}

bool fs_channel_name_valid(const char *name)
{
	size_t i;

	if (!name)
		return false;
	for (i = 0; name[i]; i++) {
		char c = name[i];

		if (i >= FS_CHANNEL_NAME_MAX)
			return false;
		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '-' ||
		      c == '_'))
			return false;
	}
	return i > 0;
}

/* Prints text from column col (the cursor is there), wrapped at words. */
static void print_wrapped(FILE *out, const char *text, int col)
{
	const char *p = text;
	int pos = col;
	size_t word;

	while (*p) {
		while (*p == ' ')
			p++;
		word = strcspn(p, " ");
		if (word == 0)
			break;
		if (pos > col && pos + 1 + (int)word > HELP_WIDTH) {
			fprintf(out, "\n%*s", col, "");
			pos = col;
		} else if (pos > col) {
			fputc(' ', out);
			pos++;
		}
		fwrite(p, 1, word, out);
		pos += (int)word;
		p += word;
	}
	fputc('\n', out);
}

void fs_options_usage(FILE *out, const char *progname)
{
	const char *base = progname ? strrchr(progname, '/') : NULL;
	const struct opt_def *d;
	char left[64];
	size_t i;
	int n;

	base = base ? base + 1 : (progname ? progname : "s3pipe");
	if (strncmp(base, "mount.", 6) == 0) {
		fprintf(out,
			"Usage: %s s3://BUCKET[/PREFIX] MOUNTPOINT [-o "
			"OPTIONS]\n"
			"       s3pipe [OPTIONS] NAME=s3://BUCKET[/PREFIX] "
			"[NAME=URI ...] MOUNTPOINT\n",
			base);
	} else {
		fprintf(
		    out,
		    "Usage: %s [OPTIONS] NAME=s3://BUCKET[/PREFIX] "
		    "[NAME=URI ...] MOUNTPOINT\n"
		    "       mount.s3pipe s3://BUCKET[/PREFIX] MOUNTPOINT [-o "
		    "OPTIONS]\n",
		    base);
	}
	fputs("\nServes each S3 prefix as a channel: read-only files NAME_0, "
	      "NAME_1, ...\n"
	      "(one per epoch) that return the bytes of every object under "
	      "the prefix\n"
	      "in key order, like SageMaker Pipe mode.\n"
	      "\nOptions (each also as -o name=VALUE, or -o name for flags; "
	      "'-' and '_'\n"
	      "are the same in names; SIZE takes a K, M or G suffix):\n",
	      out);
	for (i = 0; i < OPT_COUNT; i++) {
		d = &opt_table[i];
		if (d->short_name)
			n = snprintf(left, sizeof(left), "  -%c, --%s%s%s",
				     d->short_name, d->name,
				     d->metavar ? " " : "",
				     d->metavar ? d->metavar : "");
		else
			n = snprintf(left, sizeof(left), "      --%s%s%s",
				     d->name, d->metavar ? " " : "",
				     d->metavar ? d->metavar : "");
		if (n < 0)
			continue;
		if (n + 2 > HELP_COLUMN)
			fprintf(out, "%s\n%*s", left, HELP_COLUMN, "");
		else
			fprintf(out, "%-*s", HELP_COLUMN, left);
		print_wrapped(out, d->help, HELP_COLUMN);
	}
	fprintf(out, "%-*s", HELP_COLUMN, "  -o OPTS");
	print_wrapped(out, "options as a comma-separated list", HELP_COLUMN);
	fputs("\nmount.s3pipe (mount -t s3pipe, /etc/fstab) takes one SOURCE "
	      "and names its\n"
	      "channel with -o channel=NAME.  Its -f is mount's fake mode, "
	      "not foreground\n"
	      "(use -o foreground); -s, -n and -v are ignored, and so are "
	      "fstab keywords\n"
	      "such as _netdev, nofail, user, rw, ro, defaults, x-* and "
	      "comment=.\n"
	      "\nSee s3pipe(1).\n",
	      out);
}
