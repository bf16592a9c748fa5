/*
 * fs options: one table, parsed with libfuse's fuse_opt.
 *
 * Each option is one row of opt_table: its canonical name (with dashes), an
 * optional short letter (flags only), a kind (flag, string, size, number,
 * or a setter for the few that need more), where the value lands in struct
 * fs_options (often inside a module's conf), its limits and its help line.
 * Every form of an option ends in opt_apply() with its row, and
 * fs_options_usage() (fs/usage.c) prints the same rows, with the defaults read
 * from a freshly initialised struct.  Names compare with '-' and '_' equal.
 *
 * fs_options_parse() runs fuse_opt_parse() over argv with templates built
 * from the table (opt_templates_build()) and one processing function,
 * opt_proc():
 *
 *   --name VALUE     templates "--name" (a value follows: noted in
 *                    st->pending) and "--name " (fuse_opt takes the next
 *                    argument), for every '-'/'_' spelling of the name;
 *   --name=VALUE     the "--name " template again, matched as a prefix;
 *   --flag, -x, -fd  no template: opt_proc looks the name up, or takes a
 *                    cluster of short flags one letter at a time;
 *   -o name[=VALUE]  fuse_opt splits the list (a backslash escapes the next
 *                    character, "\," is a comma; \NNN is an octal byte)
 *                    and opt_proc looks each name up;
 *   fstab keywords   FUSE_OPT_KEY_DISCARD templates (x-* in opt_proc);
 *   other -o items   for libfuse and the kernel: opt_proc tries each on a
 *                    throw-away fuse_session_new() (it opens and mounts
 *                    nothing), refuses what libfuse refuses and keeps the
 *                    rest, which fuse_opt gathers into "-o LIST": that is
 *                    o->fuse_args, and fs_session_args()
 *                    (fs/session.c) puts it after s3pipe's own session
 *                    options;
 *   NAME=URI, MOUNTPOINT  non-options, checked once all options are in
 *                    (fs/positionals.c; the parse's state is fs/parse.h).
 *
 * mount.s3pipe's own rules (mount(8) calls it as a helper) are in
 * fs/helper_rules.c; the templates fuse_opt_parse() matches in
 * fs/option_templates.c; --help in fs/usage.c.
 *
 * Error messages are one line: control characters from argv are replaced
 * with '?' so a hostile argument cannot forge extra lines.
 */
#include "config.h"

#include "fs/options.h"
#include "fs/parse.h"

#include "fs/channels.h"
#include "fs/session.h"

#include "s3/s3.h"
#include "util/util.h"

#include <fuse_lowlevel.h>

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define ID_MAX 4294967294ULL /* (uid_t)-1 means "no change" */

static int set_endpoint(struct parse_state *st, const char *val);
static int set_no_verify_ssl(struct parse_state *st, const char *val);
static int set_seek(struct parse_state *st, const char *val);
static int set_uid(struct parse_state *st, const char *val);
static int set_gid(struct parse_state *st, const char *val);
static int set_debug(struct parse_state *st, const char *val);
static int set_channel(struct parse_state *st, const char *val);
static int set_host_index(struct parse_state *st, const char *val);
static int set_host_count(struct parse_state *st, const char *val);
static int set_cache_dir_size(struct parse_state *st, const char *val);

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
     .help = "memory for all cached data, at least twice --part-size"},
    {.name = "part-size",
     .kind = OPT_SIZE,
     .offset = OFF(cache.block_size),
     .min = CACHE_MIN_BLOCK_SIZE,
     .max = CACHE_MAX_BLOCK_SIZE,
     .metavar = "SIZE",
     .help = "bytes per cache block, 64K to 1G"},
    /* before cache-dir, whose "--cache-dir " template matches
       "--cache-dir-size..." too: see long_value() */
    {.name = "cache-dir-size",
     .kind = OPT_SETTER,
     .metavar = "SIZE",
     .set = set_cache_dir_size,
     .help = "the most the disk tier keeps in --cache-dir: a size, or N% "
	     "of the file system's free space at mount time (the blocks "
	     "already there counting as free); at least 4 times "
	     "--part-size"},
    {.name = "cache-dir",
     .kind = OPT_STRING,
     .offset = OFF(disk.dir),
     .metavar = "DIR",
     .help = "keep blocks read from S3 in DIR/s3pipe, a disk tier under "
	     "the memory cache that later epochs and mounts read from "
	     "(default: none; needs --cache-dir-size)"},
    {.name = "max-connections",
     .kind = OPT_UINT,
     .offset = OFF(s3.max_connections),
     .min = 1,
     .max = 256,
     .metavar = "N",
     .help = "parallel connections to S3, 1 to 256"},
    {.name = "max-retries",
     .kind = OPT_UINT,
     .offset = OFF(s3.max_retries),
     .min = 0,
     .max = 20,
     .metavar = "N",
     .help = "retries of a failed request, 0 to 20"},
    {.name = "stall-timeout",
     .kind = OPT_UINT,
     .offset = OFF(s3.stall_seconds),
     .min = 1,
     .max = 3600,
     .metavar = "SECONDS",
     .help = "retry a stalled transfer after SECONDS, 1 to 3600"},
    {.name = "max-threads",
     .kind = OPT_UINT,
     .offset = OFF(max_threads),
     .min = 1,
     .max = 256,
     .metavar = "N",
     .help = "FUSE worker threads, 1 to 256"},
    {.name = "max-listers",
     .kind = OPT_UINT,
     .offset = OFF(channel.max_listers),
     .min = 1,
     .max = 256,
     .metavar = "N",
     .help = "key ranges of one prefix listed at once, at most, when a "
	     "channel needs every key first (a shuffle), 1 to 256; 1 = one "
	     "page after another"},
    {.name = "listing-ttl",
     .kind = OPT_UINT,
     .offset = OFF(channel.listing_ttl),
     .min = 0,
     .max = 315360000,
     .metavar = "SECONDS",
     .help = "start from the listing a mount saved in --cache-dir when it "
	     "is at most SECONDS old, with no LIST, and read later key-order "
	     "epochs from it (default 0: list again)"},
    {.name = "epochs",
     .kind = OPT_UINT,
     .offset = OFF(epochs),
     .min = 0,
     .max = UINT32_MAX,
     .metavar = "N",
     .help = "epoch files per channel, 0 = no limit"},
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
     .help = "mount.s3pipe only: the channel name of SOURCE "
	     "(default " FS_DEFAULT_CHANNEL ")"},
    {.name = "input-data-config",
     .kind = OPT_STRING,
     .offset = OFF(input_data_config),
     .metavar = "FILE",
     .help = "the channels: SageMaker's InputDataConfig (a JSON array of "
	     "channels), instead of NAME=URI arguments"},
    {.name = "resource-config",
     .kind = OPT_STRING,
     .offset = OFF(resource_config),
     .metavar = "FILE",
     .help = "this host's place among the training hosts: SageMaker's "
	     "resourceconfig.json (current_host in hosts)"},
    {.name = "host-index",
     .kind = OPT_SETTER,
     .metavar = "I",
     .set = set_host_index,
     .help = "this host's index among --host-count hosts, from 0"},
    {.name = "host-count",
     .kind = OPT_SETTER,
     .metavar = "N",
     .set = set_host_count,
     .help = "the number of training hosts that shard channels"},
    {.name = "write-container-config",
     .kind = OPT_STRING,
     .offset = OFF(container_config_dir),
     .metavar = "DIR",
     .help = "write DIR/inputdataconfig.json, the container-side channel "
	     "config that SageMaker's toolkits read"},
    {.name = "stats-interval",
     .kind = OPT_UINT,
     .offset = OFF(stats_interval),
     .min = 0,
     .max = 86400,
     .metavar = "SECONDS",
     .help = "log one line of live stats every SECONDS while files are "
	     "read (stderr in the foreground, syslog once detached), 0 = "
	     "off; see s3pipe stats"},
    {.name = "pid-file",
     .kind = OPT_STRING,
     .offset = OFF(pid_file),
     .metavar = "FILE",
     .help = "write the daemon's process ID to FILE once the mount is "
	     "ready; removed when it ends"},
    {.name = "check-options",
     .kind = OPT_FLAG,
     .offset = OFF(check_options),
     .help = "check the options and channels, then exit (0, or 1 with "
	     "the error): nothing is mounted, nothing is asked of S3"},
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

/* the per-channel settings (channel_settings[]) that have an option, as
 * rows after opt_table's: opt_row_at(OPT_COUNT + i) */
static struct opt_def channel_rows[32];
static size_t nchannel_rows;
static pthread_once_t channel_rows_once = PTHREAD_ONCE_INIT;

static void build_channel_rows(void)
{
	for (unsigned i = 0; i < channel_settings_count; i++) {
		const struct channel_setting *s = &channel_settings[i];
		struct opt_def *d = &channel_rows[nchannel_rows];

		if (!s->option || nchannel_rows == sizeof(channel_rows) /
						       sizeof(channel_rows[0]))
			continue;
		d->name = s->option;
		d->kind = OPT_CHANNEL;
		d->metavar =
		    s->type == CHANNEL_SETTING_FLAG ? NULL : s->metavar;
		d->help = s->help;
		d->setting = s;
		nchannel_rows++;
	}
}

size_t opt_row_count(void)
{
	pthread_once(&channel_rows_once, build_channel_rows);
	return OPT_COUNT + nchannel_rows;
}

size_t opt_general_rows(void)
{
	return OPT_COUNT;
}

const struct opt_def *opt_row_at(size_t i)
{
	return i < OPT_COUNT ? &opt_table[i] : &channel_rows[i - OPT_COUNT];
}

int options_fail(struct parse_state *st, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	rc = util_vfail(st->err, st->errlen, rc, fmt, ap);
	va_end(ap);
	return rc;
}

int options_fail_nomem(struct parse_state *st)
{
	return options_fail(st, ENOMEM, "out of memory");
}

/* Compares name[0..len) with canon, '-' and '_' equal. */
bool opt_name_eq(const char *name, size_t len, const char *canon)
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

const struct opt_def *opt_find_long(const char *name, size_t len)
{
	size_t i;

	for (i = 0; i < opt_row_count(); i++) {
		if (opt_name_eq(name, len, opt_row_at(i)->name))
			return opt_row_at(i);
	}
	return NULL;
}

const struct opt_def *opt_find_short(char c)
{
	size_t i;

	for (i = 0; i < opt_row_count(); i++) {
		if (opt_row_at(i)->short_name && opt_row_at(i)->short_name == c)
			return opt_row_at(i);
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
const char *opt_size_str(uint64_t v, char *buf, size_t len)
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
		return options_fail(st, EINVAL, "invalid number '%s' for %s",
				    val, st->shown);
	if (rc)
		return options_fail(
		    st, EINVAL, "%s must be between %llu and %llu", st->shown,
		    (unsigned long long)min, (unsigned long long)max);
	return 0;
}

static int parse_size(struct parse_state *st, const struct opt_def *d,
		      const char *val, uint64_t *out)
{
	char lo[32], hi[32];
	int rc = util_parse_size(val, out);

	if (rc == EINVAL)
		return options_fail(st, EINVAL, "invalid size '%s' for %s", val,
				    st->shown);
	if (rc == ERANGE || *out > d->max)
		return options_fail(
		    st, EINVAL, "size '%s' for %s is too large%s%s", val,
		    st->shown, d->max < UINT64_MAX ? ": at most " : "",
		    d->max < UINT64_MAX ? opt_size_str(d->max, hi, sizeof(hi))
					: "");
	if (*out < d->min)
		return options_fail(st, EINVAL, "%s must be between %s and %s",
				    st->shown,
				    opt_size_str(d->min, lo, sizeof(lo)),
				    opt_size_str(d->max, hi, sizeof(hi)));
	return 0;
}

static int set_endpoint(struct parse_state *st, const char *val)
{
	size_t len = 0;
	char *copy;

	if (strncmp(val, "http://", 7) != 0 && strncmp(val, "https://", 8) != 0)
		return options_fail(
		    st, EINVAL,
		    "invalid %s '%s': it must start with http:// or "
		    "https://",
		    st->shown, val);
	if (!s3_endpoint_valid(val, &len))
		return options_fail(
		    st, EINVAL,
		    "invalid %s '%s': use http(s)://HOST[:PORT] with no "
		    "path (the bucket goes in s3://BUCKET)",
		    st->shown, val);
	copy = strndup(val, len);
	if (!copy)
		return options_fail_nomem(st);
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
		return options_fail(st, EINVAL, "%s must be reject or emulate",
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
		return options_fail(
		    st, EINVAL,
		    "option 'channel' is only for mount.s3pipe; name "
		    "channels as NAME=s3://...");
	if (!channel_name_valid(val))
		return options_fail(
		    st, EINVAL,
		    "invalid channel name '%s': use 1-64 of A-Z a-z "
		    "0-9 . - _",
		    val);
	memcpy(st->channel, val, strlen(val) + 1);
	return 0;
}

static int set_host_index(struct parse_state *st, const char *val)
{
	uint64_t v;
	int rc = parse_number(st, val, 0, 65535, &v);

	if (rc)
		return rc;
	st->o->args.host_index = (unsigned)v;
	st->o->args.host_index_set = true;
	return 0;
}

static int set_host_count(struct parse_state *st, const char *val)
{
	uint64_t v;
	int rc = parse_number(st, val, 1, 65536, &v);

	if (rc)
		return rc;
	st->o->args.host_count = (unsigned)v;
	st->o->args.host_count_set = true;
	return 0;
}

/* "10G" or "50%" (of the free space at mount time). */
static int set_cache_dir_size(struct parse_state *st, const char *val)
{
	size_t len = strlen(val);
	char num[16];
	uint64_t v;
	int rc;

	if (len > 1 && val[len - 1] == '%') {
		rc = len - 1 < sizeof(num) ? 0 : EINVAL;
		if (!rc) {
			memcpy(num, val, len - 1);
			num[len - 1] = '\0';
			rc = util_parse_uint(num, 1, 100, &v);
		}
		if (rc)
			return options_fail(
			    st, EINVAL,
			    "invalid share '%s' for %s: 1%% to 100%% "
			    "of the free space",
			    val, st->shown);
		st->o->disk.size_percent = (unsigned)v;
		st->o->disk.size_bytes = 0;
		return 0;
	}
	rc = util_parse_size(val, &v);
	if (rc == EINVAL || (rc == 0 && v == 0))
		return options_fail(
		    st, EINVAL,
		    "invalid size '%s' for %s: a size such as 20G, or "
		    "N%% of the free space",
		    val, st->shown);
	if (rc)
		return options_fail(st, EINVAL, "size '%s' for %s is too large",
				    val, st->shown);
	st->o->disk.size_bytes = v;
	st->o->disk.size_percent = 0;
	return 0;
}

/* Applies row d; val is NULL when the user gave no value. */
int opt_apply(struct parse_state *st, const struct opt_def *d,
	      enum opt_form form, const char *val)
{
	char *base = (char *)st->o;
	uint64_t v = 0;
	char *copy;
	int rc;

	set_shown(st, d, form);
	if (!d->metavar) {
		if (val)
			return options_fail(
			    st, EINVAL, "option %s takes no value", st->shown);
	} else if (!val || !*val) {
		return options_fail(st, EINVAL, "option %s needs a value",
				    st->shown);
	}
	switch (d->kind) {
	case OPT_FLAG:
		*(bool *)(base + d->offset) = true;
		return 0;
	case OPT_STRING:
		copy = strdup(val);
		if (!copy)
			return options_fail_nomem(st);
		free(*(char **)(base + d->offset));
		*(char **)(base + d->offset) = copy;
		return 0;
	case OPT_SIZE:
		rc = parse_size(st, d, val, &v);
		if (rc)
			return rc;
		*(uint64_t *)(base + d->offset) = v;
		if (d->offset == OFF(cache.block_size))
			st->o->part_size_given = true;
		return 0;
	case OPT_UINT:
		rc = parse_number(st, val, d->min, d->max, &v);
		if (rc)
			return rc;
		*(unsigned *)(base + d->offset) = (unsigned)v;
		return 0;
	case OPT_CHANNEL:
		rc = channel_setting_parse(d->setting, val, st->shown,
					   &st->o->args.settings, st->err,
					   st->errlen);
		return rc == ENOMEM ? options_fail_nomem(st) : rc;
	case OPT_SETTER:
	default:
		return d->set(st, val);
	}
}

/* ---- what opt_proc() gets ---- */

static int unknown_long(struct parse_state *st, const char *arg)
{
	size_t len = strcspn(arg + 2, "=");

	return options_fail(st, EINVAL,
			    "unknown option '--%.*s' (see %s --help)",
			    (int)(len > 64 ? 64 : len), arg + 2, st->prog);
}

/* A "--name" template's row; arg is "--nameVALUE" when the value was the
 * next argument (st->pending says so), else "--name=VALUE" or a longer
 * name. */
static int long_value(struct parse_state *st, int row, const char *arg)
{
	const struct opt_def *d = opt_row_at((size_t)row);
	const char *rest = arg + 2 + strlen(d->name);
	bool separate = st->pending == KEY_NEXT + row;

	st->pending = 0;
	if (separate)
		return opt_apply(st, d, FORM_LONG, rest);
	if (*rest == '=')
		return opt_apply(st, d, FORM_LONG, rest + 1);
	/* fuse_opt runs every template that matches: "--cache-dir " also
	 * matches "--cache-dir-size...", which that row's own templates
	 * (before this one in the table) have taken */
	if (opt_find_long(arg + 2, strcspn(arg + 2, "=")))
		return 0;
	return unknown_long(st, arg);
}

/* "--flag" or "--flag=value": an option without a template. */
static int long_flag(struct parse_state *st, const char *arg)
{
	const char *name = arg + 2;
	size_t len = strcspn(name, "=");
	const struct opt_def *d = opt_find_long(name, len);

	if (!d)
		return unknown_long(st, arg);
	return opt_apply(st, d, FORM_LONG, name[len] ? name + len + 1 : NULL);
}

/* Short flags, one or several: "-f", "-fd", "-sfnv". */
static int short_flags(struct parse_state *st, const char *p)
{
	const struct opt_def *d;
	int rc;

	if (!*p)
		return options_fail(
		    st, EINVAL, "unknown option '-' (see %s --help)", st->prog);
	for (; *p; p++) {
		if (st->mount_helper && *p == 't')
			return p[1] ? 0 /* the rest is the type */
				    : options_fail(st, EINVAL,
						   "option -t needs a value");
		rc = st->mount_helper ? opt_helper_letter(st, *p) : 1;
		if (rc == 0)
			continue;
		if (rc != 1)
			return rc;
		if (*p == 'o')
			return options_fail(
			    st, EINVAL,
			    "option -o must start an argument: -o "
			    "OPTIONS or -oOPTIONS");
		d = opt_find_short(*p);
		if (!d)
			return options_fail(
			    st, EINVAL, "unknown option '-%c' (see %s --help)",
			    *p, st->prog);
		rc = opt_apply(st, d, FORM_SHORT, NULL);
		if (rc || st->o->help || st->o->version)
			return rc;
	}
	return 0;
}

/* One item of an -o list, unescaped: 0, an errno, or KEY_PASS. */
static int o_item(struct parse_state *st, const char *item)
{
	size_t len = strcspn(item, "=");
	const struct opt_def *d;

	if (!*item || strncmp(item, "x-", 2) == 0)
		return 0; /* empty, or an fstab x-* keyword */
	d = opt_find_long(item, len);
	if (!d)
		return opt_passthrough(st, item, len);
	return opt_apply(st, d, FORM_O, item[len] ? item + len + 1 : NULL);
}

/* One argument or -o item from fuse_opt: 0, an errno, or KEY_PASS. */
static int opt_dispatch(struct parse_state *st, const char *arg, int key)
{
	if (key == FUSE_OPT_KEY_NONOPT) {
		st->pos[st->npos++] = arg; /* in argv, not in an -o copy */
		return 0;
	}
	if (key == KEY_TYPE_NEXT || (key >= KEY_NEXT && key < KEY_VALUE)) {
		st->pending = key;
		return 0;
	}
	if (key == KEY_TYPE) {
		st->pending = 0;
		return 0; /* -t TYPE: ignored */
	}
	if (key >= KEY_VALUE)
		return long_value(st, key - KEY_VALUE, arg);
	if (arg[0] == '-' && arg[1] == '-')
		return long_flag(st, arg);
	if (arg[0] == '-')
		return short_flags(st, arg + 1);
	return o_item(st, arg);
}

/*
 * fuse_opt's processing function (see the top of the file): 0 drops arg,
 * 1 keeps it (for libfuse), -1 stops the parse with st->rc and the message
 * in st->err.
 */
static int opt_proc(void *data, const char *arg, int key,
		    struct fuse_args *outargs)
{
	struct parse_state *st = data;
	int rc;

	(void)outargs;
	if (st->o->help || st->o->version)
		return 0; /* once seen, the rest of the line does not matter */
	rc = opt_dispatch(st, arg, key);
	if (rc == KEY_PASS)
		return 1;
	if (rc == 0)
		return 0;
	st->rc = rc;
	return -1;
}

/* fuse_opt_parse() failed: why, unless opt_proc() said so already. */
static int parse_failed(struct parse_state *st, int argc, char **argv)
{
	if (st->rc)
		return st->rc;
	if (st->o->help || st->o->version)
		return 0;
	/* fuse_opt found no argument for a template with a space */
	if (st->pending == KEY_TYPE_NEXT)
		return options_fail(st, EINVAL, "option -t needs a value");
	if (st->pending >= KEY_NEXT)
		return opt_apply(st,
				 opt_row_at((size_t)(st->pending - KEY_NEXT)),
				 FORM_LONG, NULL);
	if (argc > 1 && strcmp(argv[argc - 1], "-o") == 0)
		return options_fail(st, EINVAL, "option -o needs a value");
	return options_fail_nomem(st); /* fuse_opt fails in no other way */
}

/*
 * --part-size when not given: the default, or smaller with a record
 * shuffle, whose unit is the block: its buffer should hold 64 blocks or
 * more to draw from many objects at once (a power of two, 256K at least).
 */
static uint64_t auto_part_size(const struct fs_options *o)
{
	uint64_t size = CACHE_DEFAULT_BLOCK_SIZE;

	for (unsigned i = 0; i < o->nchannels; i++) {
		uint64_t buffer = (uint64_t)o->channels[i].shuffle_buffer;

		while (buffer && size > (256ULL << 10) && size * 64 > buffer)
			size /= 2;
	}
	return size;
}

/*
 * --cache-size holds two parts at least, and the record shuffles' buffers
 * beside them: the cache gets what the buffers leave.
 */
static int check_cache_size(struct parse_state *st)
{
	struct fs_options *o = st->o;
	uint64_t sum = 0, budget = o->cache.budget_bytes;
	char a[32], b[32], c[32];

	for (unsigned i = 0; i < o->nchannels; i++)
		sum += (uint64_t)o->channels[i].shuffle_buffer;
	opt_size_str(budget, a, sizeof(a));
	opt_size_str(sum, b, sizeof(b));
	opt_size_str(o->cache.block_size, c, sizeof(c));
	if (budget < sum || (budget - sum) / 2 < o->cache.block_size)
		return sum ? options_fail(st, EINVAL,
					  "--cache-size (%s) must hold the "
					  "record shuffle's buffers (%s) and "
					  "two parts (--part-size %s): raise "
					  "--cache-size or lower "
					  "--shuffle-buffer",
					  a, b, c)
			   : options_fail(st, EINVAL,
					  "--cache-size (%s) must be at least "
					  "twice --part-size (%s): raise "
					  "--cache-size or lower --part-size",
					  a, c);
	o->cache.budget_bytes -= sum;
	return 0;
}

void fs_options_init(struct fs_options *o)
{
	memset(o, 0, sizeof(*o));
	s3_client_conf_init(&o->s3);
	cache_conf_init(&o->cache);
	disk_store_conf_init(&o->disk);
	channel_conf_init(&o->channel);
	channel_spec_init(&o->args.settings);
	o->host.count = 1;
	o->epochs = 0;
	o->seek = FS_SEEK_REJECT;
	o->max_threads = FS_DEFAULT_MAX_THREADS;
}

void fs_options_free(struct fs_options *o)
{
	unsigned i;

	for (i = 0; i < o->nchannels && i < FS_MAX_CHANNELS; i++)
		channel_spec_free(&o->channels[i]);
	o->nchannels = 0;
	channel_spec_free(&o->args.settings);
	free(o->input_data_config);
	o->input_data_config = NULL;
	free(o->resource_config);
	o->resource_config = NULL;
	free(o->container_config_dir);
	o->container_config_dir = NULL;
	free(o->pid_file);
	o->pid_file = NULL;
	free(o->disk.dir);
	o->disk.dir = NULL;
	free(o->mountpoint);
	o->mountpoint = NULL;
	s3_client_conf_free(&o->s3);
	fuse_opt_free_args(&o->fuse_args);
}

/* --cache-dir and --cache-dir-size go together; a size holds a few
 * blocks. */
static int check_cache_dir(struct parse_state *st)
{
	const struct disk_store_conf *d = &st->o->disk;
	uint64_t min = disk_store_min_size(st->o->cache.block_size);
	char a[32], b[32];

	if (d->dir && !d->size_bytes && !d->size_percent)
		return options_fail(
		    st, EINVAL,
		    "--cache-dir needs --cache-dir-size: a size such "
		    "as 20G, or a share of the free space such as "
		    "50%%");
	if (!d->dir && (d->size_bytes || d->size_percent))
		return options_fail(st, EINVAL,
				    "--cache-dir-size needs --cache-dir");
	if (!d->dir && st->o->channel.listing_ttl)
		return options_fail(
		    st, EINVAL,
		    "--listing-ttl needs --cache-dir: saved listings "
		    "are kept there");
	if (d->size_bytes && d->size_bytes < min)
		return options_fail(
		    st, EINVAL,
		    "--cache-dir-size (%s) must be at least %d times "
		    "--part-size (%s): raise --cache-dir-size or lower "
		    "--part-size",
		    opt_size_str(d->size_bytes, a, sizeof(a)),
		    DISK_STORE_MIN_BLOCKS,
		    opt_size_str(st->o->cache.block_size, b, sizeof(b)));
	return 0;
}

/* After the options: the positionals, the cross-checks, and args (what
 * fuse_opt kept) moved into o->fuse_args. */
static int finish_parse(struct parse_state *st, struct fuse_args *args)
{
	struct fs_options *o = st->o;
	int rc;

	if (o->help || o->version)
		return 0; /* nothing else matters */
	if (st->mount_helper)
		rc = positionals_helper(st, st->pos, st->npos);
	else
		rc = positionals_s3pipe(st, st->pos, st->npos);
	if (rc)
		return rc;
	rc = fs_channels_finish(o, st->err, st->errlen);
	if (rc)
		return rc;
	if (!o->part_size_given)
		o->cache.block_size = auto_part_size(o);
	rc = check_cache_size(st);
	if (rc)
		return rc;
	rc = check_cache_dir(st);
	if (rc)
		return rc;
	if (args->argc == 0 && fuse_opt_add_arg(args, st->prog) != 0)
		return options_fail_nomem(st);
	fuse_opt_free_args(&o->fuse_args);
	o->fuse_args = *args;
	*args = (struct fuse_args)FUSE_ARGS_INIT(0, NULL);
	return 0;
}

int fs_options_parse(int argc, char **argv, bool mount_helper,
		     struct fs_options *o, char *err, size_t errlen)
{
	struct parse_state st;
	struct fuse_args args;
	struct fuse_opt *templates;
	size_t nbuilt = 0;
	int n = 0;
	int rc;

	memset(&st, 0, sizeof(st));
	st.o = o;
	st.mount_helper = mount_helper;
	st.prog = mount_helper ? "mount.s3pipe" : "s3pipe";
	st.err = err;
	st.errlen = errlen;
	if (err && errlen)
		err[0] = '\0';
	while (argv && n < argc && argv[n])
		n++;
	args = (struct fuse_args)FUSE_ARGS_INIT(n, argv);
	st.pos = calloc((size_t)n + 1, sizeof(*st.pos));
	templates = opt_templates_build(mount_helper, &nbuilt);
	if (!st.pos || !templates) {
		rc = options_fail_nomem(&st);
		goto out;
	}
	fs_session_quiet(true); /* one line of ours, not libfuse's */
	if (fuse_opt_parse(&args, &st, templates, opt_proc) != 0)
		rc = parse_failed(&st, n, argv);
	else
		rc = finish_parse(&st, &args);
	fs_session_quiet(false);
out:
	fuse_opt_free_args(&args); /* a no-op unless fuse_opt made a copy */
	opt_templates_free(templates, nbuilt);
	free(st.pos);
	return rc;
}
