/*
 * s3pipe stats: reads a mount's FS_STATS_FILE and prints it.
 *
 *   s3pipe stats [--json] [--watch] [--interval SECONDS] MOUNTPOINT
 *
 * Once: a table (or, with --json, the daemon's JSON as it came).  --watch:
 * a compact view redrawn every interval (default 1 s) in place: cursor
 * home, each line cleared to its end, the rest of the screen cleared, the
 * cursor hidden until Ctrl-C (SIGINT, SIGTERM, SIGHUP: exit 0).  Each open
 * epoch gets a progress bar when its total is known, else bytes and rate.
 * Lines fit the terminal's width (TIOCGWINSZ, less one column, so that no
 * line wraps) and the view its height.  When stdout is not a terminal,
 * plain snapshots follow one another, a blank line between, without escape
 * codes; --json --watch prints one JSON document a line.
 *
 * The file is outside input (any file of that name, on any file system):
 * it is opened without blocking and must be a regular file of at most
 * STATS_MAX bytes, parsed with jansson, every member's type checked,
 * strings cleaned of control characters and cut to a bound, lists cut to
 * a bound.  Sizes are binary (KiB, MiB, GiB), rates decimal (MB/s).
 *
 * Errors: one line "s3pipe: ..." on stderr and exit 1: a path that is not
 * a mount of s3pipe, a mount whose daemon is gone, or (--watch) a mount
 * that goes away.
 */
#include "config.h"

#include "tools/tools.h"

#include "fs/stats.h"
#include "fs/stats_doc.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "channel/channel.h"
#include "util/util.h"

#define STATS_MAX	  (16u << 20) /* bytes of JSON read, at most */
#define VIEW_CHANNELS_MAX CHANNEL_MAX
#define VIEW_EPOCHS_MAX	  64
#define VIEW_STRING_MAX	  1024 /* bytes kept of a string */
#define DEFAULT_WIDTH	  80
#define BAR_MIN		  12 /* narrower than this: no bar */
#define KIB		  1024.0
#define STOPPED		  2 /* fetch(), show(): a stop signal came */

struct view_epoch {
	uint64_t counts[EPOCH_COUNTS]; /* fs/stats_doc.h */
	char file[CHANNEL_NAME_MAX + 24];
	char state[16];
	bool total_known;
	uint64_t total;
};

struct view_channel {
	char name[CHANNEL_NAME_MAX + 1];
	uint64_t counts[CHANNEL_COUNTS];
	uint64_t catalog[CATALOG_COUNTS]; /* 0 from older daemons */
	struct view_epoch *epochs;	  /* owned, nepochs */
	size_t nepochs;
	/* a FastFile channel's counts ("tree"; none from Pipe channels and
	 * older daemons) */
	bool tree;
	uint64_t tree_counts[TREE_COUNTS];
};

struct tools_stats_view {
	uint64_t root[ROOT_COUNTS];
	char mountpoint[VIEW_STRING_MAX];
	double uptime;
	uint64_t memory[MEMORY_COUNTS], cache[CACHE_COUNTS], s3[S3_COUNTS];
	/* workers started after the first (the keeper's), the last one's
	 * time (s since the epoch) and cause */
	uint64_t worker[WORKER_COUNTS];
	double restart_at;
	char restart_cause[VIEW_STRING_MAX];
	bool disk; /* a disk tier: disk_counts hold */
	uint64_t disk_counts[DISK_COUNTS];
	struct view_channel *channels; /* owned, nchannels */
	size_t nchannels;
};

/* ---- parsing ---- */

struct parse {
	char *err;
	size_t errlen;
	bool failed;
};

static void bad(struct parse *p, const char *what)
{
	if (!p->failed)
		util_fail(p->err, p->errlen, EINVAL, "%s", what);
	p->failed = true;
}

/* A non-negative integer member; absent is 0. */
static uint64_t get_u64(struct parse *p, json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);
	char what[96];

	if (!v)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0) {
		snprintf(what, sizeof(what), "'%s' is not a count", key);
		bad(p, what);
		return 0;
	}
	return (uint64_t)json_integer_value(v);
}

/* The counts of group g (fs/stats_doc.h) out of obj (g's object, or the
 * parent when g has no key); absent ones are 0. */
static void get_group(struct parse *p, json_t *obj, const struct stats_group *g,
		      uint64_t *values)
{
	const char *key = "";
	char what[96];

	if (!stats_group_read(g, obj, values, &key)) {
		snprintf(what, sizeof(what), "'%s' is not a count", key);
		bad(p, what);
	}
}

/* A number member (integer or real, finite, >= 0); absent is 0. */
static double get_number(struct parse *p, json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);
	double d;
	char what[96];

	if (!v)
		return 0.0;
	d = json_number_value(v);
	if (!json_is_number(v) || !isfinite(d) || d < 0) {
		snprintf(what, sizeof(what), "'%s' is not a number", key);
		bad(p, what);
		return 0.0;
	}
	return d;
}

/* A string member into out (cleaned, cut to len); absent is "". */
static void get_string(struct parse *p, json_t *obj, const char *key, char *out,
		       size_t len)
{
	json_t *v = json_object_get(obj, key);
	char what[96];

	out[0] = '\0';
	if (!v)
		return;
	if (!json_is_string(v)) {
		snprintf(what, sizeof(what), "'%s' is not a string", key);
		bad(p, what);
		return;
	}
	snprintf(out, len, "%s", json_string_value(v));
	util_clean_line(out); /* a cut may have split a character */
}

/* A member that must be an object; absent is an empty one. */
static json_t *get_object(struct parse *p, json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);
	char what[96];

	if (v && !json_is_object(v)) {
		snprintf(what, sizeof(what), "'%s' is not an object", key);
		bad(p, what);
		return NULL;
	}
	return v;
}

static void parse_epoch(struct parse *p, json_t *o, struct view_epoch *e)
{
	json_t *total;

	if (!json_is_object(o)) {
		bad(p, "an epoch is not an object");
		return;
	}
	get_group(p, o, &stats_epoch, e->counts);
	get_string(p, o, STATS_KEY_FILE, e->file, sizeof(e->file));
	get_string(p, o, STATS_KEY_STATE, e->state, sizeof(e->state));
	total = json_object_get(o, STATS_KEY_TOTAL);
	if (total && !json_is_null(total)) {
		e->total = get_u64(p, o, STATS_KEY_TOTAL);
		e->total_known = true;
	}
}

/*
 * The list member key of obj, cut to max items (the last ones with
 * newest): *items gets a zeroed array of size-byte elements for *n of
 * them; returns the index of the first item kept in the list.  Absent
 * (when not required) is an empty list.
 */
static size_t get_list(struct parse *p, json_t *obj, const char *key,
		       bool required, size_t max, bool newest, size_t size,
		       void **items, size_t *n)
{
	json_t *v = json_object_get(obj, key);
	size_t len = json_array_size(v), keep;
	char what[96];

	*n = 0;
	if ((v || required) && !json_is_array(v)) {
		snprintf(what, sizeof(what), "'%s' is not a list", key);
		bad(p, what);
		return 0;
	}
	keep = len < max ? len : max;
	*items = calloc(keep ? keep : 1, size);
	if (!*items) {
		bad(p, "out of memory");
		return 0;
	}
	*n = keep;
	return newest ? len - keep : 0;
}

static void parse_channel(struct parse *p, json_t *o, struct view_channel *c)
{
	json_t *epochs, *catalog, *tree;
	void *items = NULL;
	size_t first;

	if (!json_is_object(o)) {
		bad(p, "a channel is not an object");
		return;
	}
	get_string(p, o, STATS_KEY_NAME, c->name, sizeof(c->name));
	get_group(p, o, &stats_channel, c->counts);
	tree = json_object_get(o, stats_tree.key);
	if (json_is_object(tree)) {
		c->tree = true;
		get_group(p, tree, &stats_tree, c->tree_counts);
	}
	catalog = get_object(p, o, stats_catalog.key);
	get_group(p, catalog, &stats_catalog, c->catalog);
	epochs = json_object_get(o, STATS_KEY_EPOCHS);
	first = get_list(p, o, STATS_KEY_EPOCHS, false, VIEW_EPOCHS_MAX, true,
			 sizeof(*c->epochs), &items, &c->nepochs);
	c->epochs = items;
	for (size_t i = 0; i < c->nepochs && !p->failed; i++)
		parse_epoch(p, json_array_get(epochs, first + i),
			    &c->epochs[i]);
}

static void parse_root(struct parse *p, json_t *root,
		       struct tools_stats_view *v)
{
	json_t *disk, *channels, *worker, *last;
	void *items = NULL;

	if (!json_is_object(root) ||
	    !json_is_integer(json_object_get(root, STATS_KEY_VERSION))) {
		bad(p, "no stats version");
		return;
	}
	if (json_integer_value(json_object_get(root, STATS_KEY_VERSION)) !=
	    FS_STATS_VERSION) {
		bad(p, "stats of another version of s3pipe");
		return;
	}
	get_group(p, root, &stats_root, v->root);
	get_string(p, root, STATS_KEY_MOUNTPOINT, v->mountpoint,
		   sizeof(v->mountpoint));
	v->uptime = get_number(p, root, STATS_KEY_UPTIME);
	worker = get_object(p, root, stats_worker.key);
	get_group(p, worker, &stats_worker, v->worker);
	last = json_object_get(worker, STATS_KEY_LAST_RESTART);
	if (last && !json_is_null(last)) {
		last = get_object(p, worker, STATS_KEY_LAST_RESTART);
		v->restart_at = get_number(p, last, STATS_KEY_AT);
		get_string(p, last, STATS_KEY_CAUSE, v->restart_cause,
			   sizeof(v->restart_cause));
		util_clean_line(v->restart_cause);
	}
	get_group(p, get_object(p, root, stats_memory.key), &stats_memory,
		  v->memory);
	get_group(p, get_object(p, root, stats_cache.key), &stats_cache,
		  v->cache);
	get_group(p, get_object(p, root, stats_s3.key), &stats_s3, v->s3);
	disk = json_object_get(root, stats_disk.key);
	v->disk = json_is_object(disk);
	if (v->disk)
		get_group(p, disk, &stats_disk, v->disk_counts);
	channels = json_object_get(root, STATS_KEY_CHANNELS);
	get_list(p, root, STATS_KEY_CHANNELS, true, VIEW_CHANNELS_MAX, false,
		 sizeof(*v->channels), &items, &v->nchannels);
	v->channels = items;
	for (size_t i = 0; i < v->nchannels && !p->failed; i++)
		parse_channel(p, json_array_get(channels, i), &v->channels[i]);
}

UNITTEST void tools_stats_view_free(struct tools_stats_view *v)
{
	if (!v)
		return;
	for (size_t i = 0; v->channels && i < v->nchannels; i++)
		free(v->channels[i].epochs);
	free(v->channels);
	free(v);
}

/*
 * The view of a stats document text[0..len), or NULL with one line in err
 * (not jansson's text, which quotes the input).
 */
UNITTEST struct tools_stats_view *
tools_stats_parse(const char *text, size_t len, char *err, size_t errlen)
{
	struct parse p = {.err = err, .errlen = errlen};
	struct tools_stats_view *v = calloc(1, sizeof(*v));
	json_error_t jerr;
	json_t *root;

	if (!v) {
		util_fail(err, errlen, ENOMEM, "out of memory");
		return NULL;
	}
	root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root)
		bad(&p, "not JSON");
	else
		parse_root(&p, root, v);
	json_decref(root);
	if (p.failed) {
		tools_stats_view_free(v);
		return NULL;
	}
	return v;
}

/* ---- formatting ---- */

static const char *const units[] = {"B",   "KiB", "MiB", "GiB",
				    "TiB", "PiB", "EiB"};

/* The unit n is best shown in: 1024^u. */
static unsigned unit_of(uint64_t n)
{
	unsigned u = 0;

	while (n >= 1024 && u + 1 < sizeof(units) / sizeof(units[0])) {
		n /= 1024;
		u++;
	}
	return u;
}

static double in_unit(uint64_t n, unsigned u)
{
	double v = (double)n;

	while (u--)
		v /= KIB;
	return v;
}

/* "512 B", "12.0 KiB", "412.0 MiB", "1.2 GiB", "3.0 TiB". */
UNITTEST const char *tools_fmt_bytes(uint64_t n, char *buf, size_t len)
{
	unsigned u = unit_of(n);

	if (u == 0)
		snprintf(buf, len, "%u B", (unsigned)n);
	else
		snprintf(buf, len, "%.1f %s", in_unit(n, u), units[u]);
	return buf;
}

/*
 * "412.0/1024.0 MiB": part of whole, both in whole's unit, or the one below
 * it when whole would be under 10 of it (a tenth of a GiB is too coarse).
 */
UNITTEST const char *tools_fmt_part(uint64_t part, uint64_t whole, char *buf,
				    size_t len)
{
	unsigned u = unit_of(whole);

	if (u > 2 && in_unit(whole, u) < 10.0)
		u--;

	if (u == 0)
		snprintf(buf, len, "%u/%u B", (unsigned)part, (unsigned)whole);
	else
		snprintf(buf, len, "%.1f/%.1f %s", in_unit(part, u),
			 in_unit(whole, u), units[u]);
	return buf;
}

/* Decimal megabytes per second: "180.3 MB/s". */
UNITTEST const char *tools_fmt_rate(double bytes_per_second, char *buf,
				    size_t len)
{
	if (!isfinite(bytes_per_second) || bytes_per_second < 0)
		bytes_per_second = 0;
	if (bytes_per_second >= 1e15)
		snprintf(buf, len, ">999999 GB/s");
	else if (bytes_per_second >= 1e10)
		snprintf(buf, len, "%.1f GB/s", bytes_per_second / 1e9);
	else
		snprintf(buf, len, "%.1f MB/s", bytes_per_second / 1e6);
	return buf;
}

/* "0:07", "12:34", "1:02:03", ">99h"; "--:--" when unknown (< 0). */
UNITTEST const char *tools_fmt_eta(double seconds, char *buf, size_t len)
{
	unsigned long s;

	if (!isfinite(seconds) || seconds < 0) {
		snprintf(buf, len, "--:--");
		return buf;
	}
	if (seconds >= 100.0 * 3600) {
		snprintf(buf, len, ">99h");
		return buf;
	}
	s = (unsigned long)seconds;
	if ((double)s < seconds)
		s++; /* rounded up: "0:00" only at the end */
	if (s >= 3600)
		snprintf(buf, len, "%lu:%02lu:%02lu", s / 3600, s / 60 % 60,
			 s % 60);
	else
		snprintf(buf, len, "%lu:%02lu", s / 60, s % 60);
	return buf;
}

/* "[=====>    ]", width columns in all (>= 3), into buf (width + 1). */
UNITTEST void tools_render_bar(char *buf, int width, double fraction)
{
	int inner = width - 2;
	int full;

	if (width < 3) {
		buf[0] = '\0';
		return;
	}
	if (!isfinite(fraction) || fraction < 0)
		fraction = 0;
	if (fraction > 1)
		fraction = 1;
	full = (int)(fraction * inner);
	buf[0] = '[';
	for (int i = 0; i < inner; i++)
		buf[1 + i] = i < full ? '=' : ' ';
	if (full < inner && full > 0)
		buf[full] = '>';
	buf[width - 1] = ']';
	buf[width] = '\0';
}

/* Cuts line (clean UTF-8) to cols characters, if longer. */
UNITTEST void tools_fit_width(char *line, int cols)
{
	int n = 0;

	for (char *p = line; *p; p++) {
		if (((unsigned char)*p & 0xc0) == 0x80)
			continue; /* inside a character */
		if (n++ == cols) {
			*p = '\0';
			return;
		}
	}
}

/* How much of the epoch was delivered, 0 to 1. */
static double fraction(const struct view_epoch *e)
{
	if (!e->total_known || e->total == 0)
		return e->total_known ? 1.0 : 0.0;
	if (e->counts[EPOCH_DELIVERED] >= e->total)
		return 1.0;
	return (double)e->counts[EPOCH_DELIVERED] / (double)e->total;
}

/* Whole percent done, rounded down: 100 only at the end. */
static unsigned percent(const struct view_epoch *e)
{
	return (unsigned)(100.0 * fraction(e));
}

/* The time left at the current rate, or -1. */
static double eta(const struct view_epoch *e)
{
	if (!e->total_known || e->counts[EPOCH_RATE] == 0 ||
	    e->counts[EPOCH_DELIVERED] > e->total)
		return -1;
	return (double)(e->total - e->counts[EPOCH_DELIVERED]) /
	       (double)e->counts[EPOCH_RATE];
}

/* ---- rendering ---- */

struct frame {
	struct util_buf buf;
	int width; /* columns a line may take; 0: any */
	int rows;  /* lines, at most; 0: any */
	int lines;
};

static void line(struct frame *f, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void line(struct frame *f, const char *fmt, ...)
{
	char text[2048];
	va_list ap;

	if (f->rows && f->lines >= f->rows)
		return; /* the screen is full */
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	util_clean_line(text);
	if (f->width > 0)
		tools_fit_width(text, f->width);
	util_buf_printf(&f->buf, "%s\n", text);
	f->lines++;
}

static void fmt_uptime(double s, char *buf, size_t len)
{
	tools_fmt_eta(s, buf, len);
}

static size_t name_width(const struct tools_stats_view *v)
{
	size_t w = 4;

	for (size_t i = 0; i < v->nchannels; i++)
		for (size_t j = 0; j < v->channels[i].nepochs; j++)
			if (strlen(v->channels[i].epochs[j].file) > w)
				w = strlen(v->channels[i].epochs[j].file);
	return w;
}

/* "412.0 MiB/1.0 GiB", or the bytes alone without a total. */
static const char *progress_text(const struct view_epoch *e, char *buf,
				 size_t len)
{
	if (e->total_known)
		return tools_fmt_part(e->counts[EPOCH_DELIVERED], e->total, buf,
				      len);
	return tools_fmt_bytes(e->counts[EPOCH_DELIVERED], buf, len);
}

/* One epoch in the live view: a bar while it is read and its total is
 * known. */
static void watch_epoch(struct frame *f, const struct view_epoch *e,
			size_t namew)
{
	char right[160], prog[80], rate[32], t[32], bar[512];
	bool reading =
	    e->counts[EPOCH_HANDLES] > 0 && strcmp(e->state, "done") != 0;
	int barw;

	progress_text(e, prog, sizeof(prog));
	if (!reading) {
		line(f, "%-*s  %-6s  %s", (int)namew, e->file, e->state, prog);
		return;
	}
	tools_fmt_rate((double)e->counts[EPOCH_RATE], rate, sizeof(rate));
	if (!e->total_known) {
		line(f, "%-*s  %s  %s", (int)namew, e->file, prog, rate);
		return;
	}
	snprintf(right, sizeof(right), "%3u%%  %s  %s  ETA %s", percent(e),
		 prog, rate, tools_fmt_eta(eta(e), t, sizeof(t)));
	barw =
	    f->width > 0 ? f->width - (int)namew - (int)strlen(right) - 4 : 42;
	if (barw > (int)sizeof(bar) - 1)
		barw = (int)sizeof(bar) - 1;
	if (barw < BAR_MIN) {
		line(f, "%-*s  %s", (int)namew, e->file, right);
		return;
	}
	tools_render_bar(bar, barw, fraction(e));
	line(f, "%-*s  %s  %s", (int)namew, e->file, bar, right);
}

static void render_watch(struct frame *f, const struct tools_stats_view *v)
{
	char up[32], mem[48];
	size_t namew = name_width(v);

	fmt_uptime(v->uptime, up, sizeof(up));
	tools_fmt_part(v->memory[MEMORY_IN_USE], v->memory[MEMORY_BUDGET], mem,
		       sizeof(mem));
	if (v->worker[WORKER_RESTARTS])
		line(f, "s3pipe %s  up %s  worker restarts %llu (%s)",
		     v->mountpoint, up,
		     (unsigned long long)v->worker[WORKER_RESTARTS],
		     v->restart_cause);
	else
		line(f, "s3pipe %s  up %s", v->mountpoint, up);
	line(f,
	     "memory %s  GETs %llu/%llu  cache %llu hits %llu misses  "
	     "retries %llu  errors %llu",
	     mem, (unsigned long long)v->s3[S3_GETS_IN_FLIGHT],
	     (unsigned long long)v->s3[S3_CONCURRENCY],
	     (unsigned long long)v->cache[CACHE_HITS],
	     (unsigned long long)v->cache[CACHE_MISSES],
	     (unsigned long long)v->s3[S3_RETRIES],
	     (unsigned long long)v->s3[S3_FAILURES]);
	for (size_t i = 0; i < v->nchannels; i++) {
		const struct view_channel *c = &v->channels[i];
		bool shown = false;

		if (c->tree) {
			line(f,
			     "%s/  %llu files  %llu opened, %llu found "
			     "prefetched  %llu order files taken",
			     c->name,
			     (unsigned long long)c->tree_counts[TREE_FILES],
			     (unsigned long long)c->tree_counts[TREE_OPENS],
			     (unsigned long long)
				 c->tree_counts[TREE_OPENS_PREFETCHED],
			     (unsigned long long)c->tree_counts[TREE_ORDERS]);
			continue;
		}
		for (size_t j = 0; j < c->nepochs; j++) {
			if (c->epochs[j].counts[EPOCH_HANDLES]) {
				watch_epoch(f, &c->epochs[j], namew);
				shown = true;
			}
		}
		if (!shown && c->nepochs)
			watch_epoch(f, &c->epochs[c->nepochs - 1], namew);
		else if (!shown)
			line(f, "%-*s  waiting for a reader of %s_0",
			     (int)namew, c->name, c->name);
	}
}

static void render_table(struct frame *f, const struct tools_stats_view *v)
{
	char up[32], a[32], b[32], c3[32];

	fmt_uptime(v->uptime, up, sizeof(up));
	line(f, "s3pipe on %s (pid %llu), up %s", v->mountpoint,
	     (unsigned long long)v->root[ROOT_PID], up);
	if (v->worker[WORKER_RESTARTS]) {
		time_t at = (time_t)v->restart_at;
		struct tm tm;
		char when[32] = "?";

		if (gmtime_r(&at, &tm))
			strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
		line(f, "worker  %llu restart%s, the last at %s: %s",
		     (unsigned long long)v->worker[WORKER_RESTARTS],
		     v->worker[WORKER_RESTARTS] == 1 ? "" : "s", when,
		     v->restart_cause);
	}
	line(f, "memory  %s in use of %s, peak %s",
	     tools_fmt_bytes(v->memory[MEMORY_IN_USE], a, sizeof(a)),
	     tools_fmt_bytes(v->memory[MEMORY_BUDGET], b, sizeof(b)),
	     tools_fmt_bytes(v->memory[MEMORY_PEAK], c3, sizeof(c3)));
	line(f, "cache   %llu hits, %llu misses",
	     (unsigned long long)v->cache[CACHE_HITS],
	     (unsigned long long)v->cache[CACHE_MISSES]);
	if (v->disk)
		line(f, "disk    %llu hits, %llu misses, %s on disk of %s",
		     (unsigned long long)v->disk_counts[DISK_HITS],
		     (unsigned long long)v->disk_counts[DISK_MISSES],
		     tools_fmt_bytes(v->disk_counts[DISK_BYTES], a, sizeof(a)),
		     tools_fmt_bytes(v->disk_counts[DISK_SIZE], b, sizeof(b)));
	line(f,
	     "s3      %llu requests, %llu GETs in flight (limit %llu), %llu "
	     "retries, %llu errors, %llu throttled, %s received",
	     (unsigned long long)v->s3[S3_REQUESTS],
	     (unsigned long long)v->s3[S3_GETS_IN_FLIGHT],
	     (unsigned long long)v->s3[S3_CONCURRENCY],
	     (unsigned long long)v->s3[S3_RETRIES],
	     (unsigned long long)v->s3[S3_FAILURES],
	     (unsigned long long)v->s3[S3_THROTTLED],
	     tools_fmt_bytes(v->s3[S3_BYTES_RECEIVED], a, sizeof(a)));
	for (size_t i = 0; i < v->nchannels; i++) {
		const struct view_channel *c = &v->channels[i];
		int w = (int)name_width(v);

		line(f, "%s", "");
		if (c->tree) {
			line(f,
			     "channel %s: FastFile, %llu files in %s/, %llu "
			     "objects listed (%s outside the cache)",
			     c->name,
			     (unsigned long long)c->tree_counts[TREE_FILES],
			     c->name,
			     (unsigned long long)c->catalog[CATALOG_OBJECTS],
			     tools_fmt_bytes(c->catalog[CATALOG_BYTES], a,
					     sizeof(a)));
			line(f,
			     "  %llu opened, %llu of them found prefetched; "
			     "%llu order files taken",
			     (unsigned long long)c->tree_counts[TREE_OPENS],
			     (unsigned long long)
				 c->tree_counts[TREE_OPENS_PREFETCHED],
			     (unsigned long long)c->tree_counts[TREE_ORDERS]);
			continue;
		}
		line(f,
		     "channel %s: %llu file(s) listed, %llu objects (%s "
		     "outside the cache)",
		     c->name, (unsigned long long)c->counts[CHANNEL_VISIBLE],
		     (unsigned long long)c->catalog[CATALOG_OBJECTS],
		     tools_fmt_bytes(c->catalog[CATALOG_BYTES], a, sizeof(a)));
		if (!c->nepochs) {
			line(f, "  no file opened yet");
			continue;
		}
		line(f, "  %-*s  %-6s  %4s  %10s  %10s  %4s  %11s  %s", w,
		     "FILE", "STATE", "OPEN", "DELIVERED", "TOTAL", "DONE",
		     "RATE", "ETA");
		for (size_t j = 0; j < c->nepochs; j++) {
			const struct view_epoch *e = &c->epochs[j];
			char pct[16], eta_s[32];

			if (e->total_known)
				snprintf(pct, sizeof(pct), "%u%%", percent(e));
			else
				snprintf(pct, sizeof(pct), "-");
			line(f,
			     "  %-*s  %-6s  %4llu  %10s  %10s  %4s  %11s  %s",
			     w, e->file, e->state,
			     (unsigned long long)e->counts[EPOCH_HANDLES],
			     tools_fmt_bytes(e->counts[EPOCH_DELIVERED], a,
					     sizeof(a)),
			     e->total_known
				 ? tools_fmt_bytes(e->total, b, sizeof(b))
				 : "-",
			     pct,
			     tools_fmt_rate((double)e->counts[EPOCH_RATE], c3,
					    sizeof(c3)),
			     e->counts[EPOCH_HANDLES] &&
				     strcmp(e->state, "done") != 0
				 ? tools_fmt_eta(eta(e), eta_s, sizeof(eta_s))
				 : "-");
		}
	}
}

/*
 * The text of v: the table (watch false) or the live view, lines cut to
 * width columns (0: any) and at most rows lines (0: any).  NULL on ENOMEM.
 */
UNITTEST char *tools_stats_render(const struct tools_stats_view *v, bool watch,
				  int width, int rows)
{
	struct frame f = {.width = width, .rows = rows};

	util_buf_init(&f.buf, 0);
	if (watch)
		render_watch(&f, v);
	else
		render_table(&f, v);
	return util_buf_take(&f.buf);
}

/* ---- the command ---- */

struct cmd {
	const char *mountpoint;
	bool json, watch;
	double interval;
	int stdout_tty;
};

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int fail(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	util_vfail(msg, sizeof(msg), 1, fmt, ap);
	va_end(ap);
	fprintf(stderr, "s3pipe: %s\n", msg);
	return 1;
}

static void usage(FILE *out)
{
	fputs("Usage: s3pipe stats [--json] [--watch] [--interval SECONDS] "
	      "MOUNTPOINT\n"
	      "\nPrints the live stats of an s3pipe mount: per channel and "
	      "epoch the bytes\n"
	      "delivered, the total when known, the rate and the state; the "
	      "cache, S3\n"
	      "requests and memory.\n"
	      "\n"
	      "  --json              the daemon's JSON document as it is\n"
	      "  -w, --watch         redraw every interval until Ctrl-C\n"
	      "  -n, --interval SECONDS\n"
	      "                      between redraws (default 1, 0.1 to "
	      "3600)\n"
	      "  -h, --help          this text\n"
	      "\nSee s3pipe(1).\n",
	      out);
}

/* 0 and the command; 1 after a message; 2 for --help (exit 0). */
static int parse_args(int argc, char **argv, struct cmd *c)
{
	c->interval = 1.0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *val = NULL;
		char *end;

		if (strcmp(a, "--json") == 0) {
			c->json = true;
		} else if (strcmp(a, "--watch") == 0 || strcmp(a, "-w") == 0) {
			c->watch = true;
		} else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			return 2;
		} else if (strcmp(a, "--interval") == 0 ||
			   strcmp(a, "-n") == 0) {
			if (i + 1 >= argc)
				return fail("stats: %s needs SECONDS", a);
			val = argv[++i];
		} else if (strncmp(a, "--interval=", 11) == 0) {
			val = a + 11;
		} else if (a[0] == '-' && a[1] != '\0') {
			return fail("stats: unknown option '%s' (see s3pipe "
				    "stats --help)",
				    a);
		} else if (c->mountpoint) {
			return fail("stats: unexpected argument '%s': one "
				    "MOUNTPOINT only",
				    a);
		} else {
			c->mountpoint = a;
		}
		if (val) {
			errno = 0;
			c->interval = strtod(val, &end);
			if (errno || end == val || *end ||
			    !isfinite(c->interval) || c->interval < 0.1 ||
			    c->interval > 3600)
				return fail("stats: --interval takes SECONDS "
					    "from 0.1 to 3600 (got '%s')",
					    val);
		}
	}
	if (!c->mountpoint)
		return fail("stats: no mountpoint given (usage: s3pipe stats "
			    "[--json] [--watch] [--interval SECONDS] "
			    "MOUNTPOINT)");
	return 0;
}

/* Why mp has no stats file that opens, as one message. */
static int no_stats(const char *mp, int err, bool again)
{
	struct stat sb;
	char msg[128];

	if (err == ENOTCONN || err == ECONNABORTED)
		return fail("'%s': its s3pipe daemon is gone (%s): unmount it "
			    "with fusermount3 -u",
			    mp, util_strerror(err, msg, sizeof(msg)));
	if (stat(mp, &sb) != 0)
		return fail("cannot read the stats of '%s': %s", mp,
			    util_strerror(errno, msg, sizeof(msg)));
	if (!S_ISDIR(sb.st_mode))
		return fail("'%s' is not a directory", mp);
	if (err == ENOENT || err == ENOTDIR || err == EISDIR)
		return fail("'%s' is %s an s3pipe mount", mp,
			    again ? "no longer" : "not");
	return fail("cannot read the stats of '%s': %s", mp,
		    util_strerror(err, msg, sizeof(msg)));
}

#define FUSE_SUPER_MAGIC 0x65735546 /* statfs(2) */

static bool on_fuse(int fd)
{
	struct statfs fs;

	return fstatfs(fd, &fs) == 0 && fs.f_type == FUSE_SUPER_MAGIC;
}

/* The stats file's text into *text (owned, NUL-terminated); 1 after a
 * message; STOPPED when a stop signal cut it short. */
static int fetch(const char *mp, bool again, char **text, size_t *len)
{
	struct util_buf b;
	struct stat sb;
	char path[4096], chunk[65536];
	int fd, err = 0;
	ssize_t n;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", mp, FS_STATS_FILE) >=
	    sizeof(path))
		return fail("'%s': path too long", mp);
	/* no blocking on a FIFO that happens to have the name */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0 && errno == EINTR && stop_signal)
		return STOPPED;
	if (fd < 0)
		return no_stats(mp, errno, again);
	/* a file of that name on a file system other than FUSE is not ours */
	if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || !on_fuse(fd)) {
		close(fd);
		return fail("'%s' is not an s3pipe mount", mp);
	}
	util_buf_init(&b, STATS_MAX);
	for (;;) {
		n = read(fd, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR && !stop_signal)
			continue;
		if (n < 0)
			err = errno;
		else if (n > 0)
			err = util_buf_append(&b, chunk, (size_t)n);
		if (n <= 0 || err)
			break;
	}
	close(fd);
	if (err == EFBIG) {
		util_buf_free(&b);
		return fail("'%s' is not an s3pipe mount (its %s is too large)",
			    mp, FS_STATS_FILE);
	}
	if (err) {
		util_buf_free(&b);
		return err == EINTR && stop_signal ? STOPPED
						   : no_stats(mp, err, again);
	}
	*len = b.len;
	*text = util_buf_take(&b);
	if (!*text)
		*text = strdup("");
	return *text ? 0 : fail("out of memory");
}

static void terminal_size(int *cols, int *rows)
{
	struct winsize ws;

	*cols = DEFAULT_WIDTH;
	*rows = 0;
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) {
		*cols = ws.ws_col;
		*rows = ws.ws_row;
	}
}

/* stdout may be a closed pipe: what is not written is dropped */
static void write_all(const char *s, size_t len)
{
	(void)util_write_all(STDOUT_FILENO, s, len);
}

/* One screen: home, each line cleared to its end, the rest cleared. */
static void draw_tty(const char *text)
{
	struct util_buf b;

	util_buf_init(&b, 0);
	util_buf_append_str(&b, "\x1b[H");
	for (const char *p = text; *p;) {
		size_t n = strcspn(p, "\n");

		util_buf_append(&b, p, n);
		util_buf_append_str(&b, "\x1b[K\n");
		p += n + (p[n] == '\n');
	}
	util_buf_append_str(&b, "\x1b[J");
	if (b.data)
		write_all(b.data, b.len);
	util_buf_free(&b);
}

/* Prints one snapshot; 0, STOPPED, or 1 after a message. */
static int show(const struct cmd *c, bool again)
{
	struct tools_stats_view *v;
	char *text = NULL, *out;
	char err[256];
	size_t len = 0;
	int cols, rows, rc;

	rc = fetch(c->mountpoint, again, &text, &len);
	if (rc)
		return rc;
	v = tools_stats_parse(text, len, err, sizeof(err));
	if (!v) {
		free(text);
		return fail("'%s' is not an s3pipe mount (its %s: %s)",
			    c->mountpoint, FS_STATS_FILE, err);
	}
	if (c->json) {
		/* as it came; one document a line while watching */
		if (c->watch) {
			for (char *p = text; *p; p++)
				if (*p == '\n')
					*p = ' ';
			text[len ? len - 1 : 0] = '\n';
		}
		write_all(text, len);
		free(text);
		tools_stats_view_free(v);
		return 0;
	}
	free(text);
	terminal_size(&cols, &rows);
	if (c->stdout_tty && c->watch)
		out = tools_stats_render(v, true, cols - 1,
					 rows > 1 ? rows - 1 : 0);
	else if (c->stdout_tty)
		out = tools_stats_render(v, false, cols - 1, 0);
	else
		out = tools_stats_render(v, c->watch, 0, 0);
	tools_stats_view_free(v);
	if (!out)
		return fail("out of memory");
	if (c->stdout_tty && c->watch) {
		draw_tty(out);
	} else {
		if (again)
			write_all("\n", 1); /* between plain snapshots */
		write_all(out, strlen(out));
	}
	free(out);
	return 0;
}

/* Sleeps seconds, or less when a stop signal comes. */
static void pause_for(double seconds)
{
	struct timespec ts;

	ts.tv_sec = (time_t)seconds;
	ts.tv_nsec = (long)((seconds - (double)ts.tv_sec) * 1e9);

	while (!stop_signal && nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static int watch(const struct cmd *c)
{
	struct sigaction sa;
	int rc = 0;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal; /* no SA_RESTART: sleeps end at once */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	if (c->stdout_tty && !c->json)
		write_all("\x1b[?25l\x1b[H\x1b[2J", 13);
	for (bool again = false; !stop_signal; again = true) {
		rc = show(c, again);
		if (rc)
			break;
		pause_for(c->interval);
	}
	if (rc == STOPPED)
		rc = 0; /* Ctrl-C during a read */
	if (c->stdout_tty && !c->json)
		write_all("\x1b[?25h", 6);
	return rc;
}

int tools_stats_main(int argc, char **argv)
{
	struct cmd c;
	int rc;

	memset(&c, 0, sizeof(c));
	rc = parse_args(argc, argv, &c);
	if (rc == 2) {
		usage(stdout);
		return 0;
	}
	if (rc)
		return rc;
	c.stdout_tty = isatty(STDOUT_FILENO);
	return c.watch ? watch(&c) : show(&c, false);
}
