/*
 * fs stats: what the daemon counts, and how it publishes it.
 *
 * Transport: a hidden file in the mount root, FS_STATS_FILE
 * (".s3pipe-stats").  lookup finds it, readdir never lists it, so the
 * directory Pipe-mode readers poll holds the channel files only (every
 * listed name ends in "_<digits>"; this one does not, so it never names an
 * epoch).  Each open takes one JSON snapshot into a buffer of that handle;
 * reads serve it at any offset (direct I/O: the size getattr gives, 0,
 * does not matter).  It is mode 0444, is not an epoch: opening it makes no
 * epoch appear.  Any process that sees the mount can read it, also from a
 * container that has the mount at /opt/ml/input/data.
 *
 * Counting: one record per (channel, epoch) opened, kept in the channel's
 * list (newest epoch first) under s->lock, which open, close and the
 * snapshot take, never a read.  A handle holds a reference to its record;
 * a channel keeps at most FS_STATS_EPOCHS records that no handle holds.
 * A read updates its record with atomics only: the bytes served, the
 * furthest offset reached, and the current second's slot of a ring of
 * per-second byte counts (struct fs_rate), from which the rate over the
 * last FS_RATE_WINDOW seconds is worked out.
 *
 * With several readers of one epoch, "bytes_delivered" is the furthest
 * offset any of them reached and "bytes_served" the sum of what each was
 * given; the rate counts bytes served.  "total" is the epoch's byte count
 * only when it is exact (the plan fully listed, no stage of unknown output
 * size such as gzip, or a reader met the end), null otherwise.
 *
 * JSON, "version": 1:
 *   {"version", "pid" (the worker's), "mountpoint", "uptime" (s),
 *    "stats_interval",
 *    "worker": {"keeper_pid", "generation" (1 the first worker), "restarts"
 *        (workers started after a death or a restart), "last_restart":
 *        null, or {"at" (s since the epoch), "cause" ("signal 9
 *        (Killed)", "exit status 1")}},
 *    "memory": {"budget", "in_use", "peak"},
 *    "cache": {"hits", "misses", "prefetched", "evictions", "kept_bytes"
 *              (held by the kept set, cache/internal.h), "objects" and
 *              "segments" (records the cache holds now, outside the
 *              budget: they stay flat through an epoch)},
 *    "s3": {"requests", "gets_in_flight", "concurrency", "retries",
 *           "failures", "throttled", "bytes_received",
 *           "credential_refreshes"},
 *    "disk": null without --cache-dir, else {"hits", "hit_bytes",
 *           "misses", "writes", "write_bytes", "write_drops" (queue
 *           full), "write_errors", "bad_files" (failed a check, removed),
 *           "evictions", "files", "bytes" (on disk), "size" (the budget),
 *           "writing" (false: read-only, another daemon's, or paused)},
 *    "channels": [{"name", "visible", "catalog": {"objects" (listed so
 *        far), "bytes" (what the listing and the plans hold, outside the
 *        budget, and a record shuffle's index and pools)}, "epochs": [{"epoch",
 * "file", "state" (open, done, error, closed), "handles", "bytes_delivered",
 * "bytes_served", "total" (or null), "bytes_per_second", "opened_at", "done_at"
 * (s since the mount, or null), "read_errors"}, ...], "tree": null for a Pipe
 * channel, for a FastFile one {"files", "opens", "opens_prefetched" (opens of a
 * file the order followed had prefetched), "orders" (order files taken),
 * "prefetched" (files prefetched along them), "released" (files along the order
 * no open took, given up once the opens went a window past them)}}, ...]}
 *
 * --stats-interval: a thread started once the mount serves and stopped
 * before teardown logs one line per interval in which something was read
 * (util_info: stderr in the foreground, syslog once detached).
 */
#include "config.h"

#include "fs/stats.h"
#include "fs/stats_doc.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "fs/fs.h"
#include "fs/keeper.h"
#include "s3/s3.h"
#include "util/util.h"

#define NS_PER_S       1000000000ULL
#define FS_RATE_WINDOW 5	    /* seconds the rate looks back, at most */
#define RATE_MIN_NS    250000000ULL /* a rate over less time is noise */
#define RATE_BYTES     ((1ULL << 40) - 1) /* a slot's byte count */
#define RATE_TAG       ((1ULL << 24) - 1) /* a slot's second, wrapped */
#define MIB	       (1024.0 * 1024.0)

struct fs_epoch_stats {
	/* written by reads, with atomics */
	struct fs_rate rate;
	uint64_t delivered;	/* furthest offset replied */
	uint64_t served;	/* bytes replied, all readers */
	uint64_t first_read_ns; /* since the start, 0: no read yet */
	uint64_t end;		/* where a reader met the end, + 1; 0: not */
	uint64_t end_ns;
	uint64_t errors;
	uint64_t start_ns; /* the stats' start, copied: times are relative */
	/* under s->lock */
	unsigned channel;
	unsigned epoch;
	unsigned handles;
	uint64_t opened_ns;
	uint64_t total;		/* + 1 once known; 0: not known */
	uint64_t logged_served; /* what the last log line saw */
	struct fs_epoch_stats *next;
};

struct fs_stats_channel {
	struct fs_epoch_stats *epochs; /* epoch descending */
	unsigned count;
};

struct fs_stats {
	struct fs_state *st;
	char *mountpoint; /* owned, absolute when it could be made so */
	uint64_t start_ns;
	pthread_mutex_t lock; /* the lists, the records' locked fields */
	struct fs_stats_channel *channels;
	/* the logger */
	pthread_t logger;
	bool logging;
	bool stop;
	pthread_cond_t wake; /* CLOCK_MONOTONIC */
	unsigned interval;
	uint64_t logged_ns;
};

/* One record as read at one moment. */
struct epoch_copy {
	unsigned channel, epoch, handles;
	uint64_t delivered, served, end, end_ns, errors, opened_ns;
	uint64_t total;	    /* + 1 once known */
	uint64_t log_delta; /* bytes served since the last log line */
	double rate;
};

static uint64_t since_start(uint64_t start_ns)
{
	uint64_t now = util_now_ns();

	return now > start_ns ? now - start_ns : 0;
}

/* ---- the rate ring ---- */

UNITTEST void fs_rate_add(struct fs_rate *r, uint64_t now_ns, uint64_t bytes)
{
	uint64_t sec = now_ns / NS_PER_S;
	uint64_t tag = sec & RATE_TAG;
	uint64_t *slot = &r->slot[sec % FS_RATE_SLOTS];
	uint64_t old = __atomic_load_n(slot, __ATOMIC_RELAXED);
	uint64_t sum;

	do {
		sum = (old >> 40) == tag ? (old & RATE_BYTES) + bytes : bytes;
		if (sum > RATE_BYTES)
			sum = RATE_BYTES;
	} while (!__atomic_compare_exchange_n(slot, &old, tag << 40 | sum, true,
					      __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
}

/*
 * Bytes per second over the last FS_RATE_WINDOW seconds (the current one
 * in part), or since since_ns when that is later.
 */
UNITTEST double fs_rate_get(const struct fs_rate *r, uint64_t now_ns,
			    uint64_t since_ns)
{
	uint64_t sec = now_ns / NS_PER_S;
	uint64_t lo =
	    sec >= FS_RATE_WINDOW - 1 ? sec - (FS_RATE_WINDOW - 1) : 0;
	uint64_t from = lo * NS_PER_S;
	uint64_t bytes = 0;

	if (since_ns > from)
		from = since_ns;
	for (uint64_t s = lo; s <= sec; s++) {
		uint64_t v = __atomic_load_n(&r->slot[s % FS_RATE_SLOTS],
					     __ATOMIC_RELAXED);

		if ((v >> 40) == (s & RATE_TAG))
			bytes += v & RATE_BYTES;
	}
	if (bytes == 0)
		return 0.0;
	if (from > now_ns || now_ns - from < RATE_MIN_NS)
		return (double)bytes * NS_PER_S / RATE_MIN_NS;
	return (double)bytes * NS_PER_S / (double)(now_ns - from);
}

/* ---- records ---- */

struct fs_stats *fs_stats_create(struct fs_state *st)
{
	struct fs_stats *s = calloc(1, sizeof(*s));
	pthread_condattr_t attr;

	if (!s)
		return NULL;
	s->st = st;
	s->channels =
	    calloc(st->nchannels ? st->nchannels : 1, sizeof(*s->channels));
	/* made before the mount (a worker never looks at its own mount) */
	s->mountpoint = strdup(st->mountpoint_real ? st->mountpoint_real
						   : st->opts->mountpoint);
	if (s->mountpoint)
		util_clean_line(s->mountpoint); /* shown, and JSON is UTF-8 */
	if (!s->channels || !s->mountpoint) {
		free(s->channels);
		free(s->mountpoint);
		free(s);
		errno = ENOMEM;
		return NULL;
	}
	s->start_ns = util_now_ns();
	pthread_mutex_init(&s->lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&s->wake, &attr);
	pthread_condattr_destroy(&attr);
	return s;
}

void fs_stats_destroy(struct fs_stats *s)
{
	if (!s)
		return;
	fs_stats_log_stop(s);
	for (unsigned i = 0; i < s->st->nchannels; i++) {
		while (s->channels[i].epochs) {
			struct fs_epoch_stats *e = s->channels[i].epochs;

			s->channels[i].epochs = e->next;
			free(e);
		}
	}
	pthread_cond_destroy(&s->wake);
	pthread_mutex_destroy(&s->lock);
	free(s->channels);
	free(s->mountpoint);
	free(s);
}

/* Drops the oldest records no handle holds past FS_STATS_EPOCHS.  Lock
 * held. */
static void prune(struct fs_stats_channel *c)
{
	struct fs_epoch_stats **pp = &c->epochs;
	unsigned kept = 0;

	while (*pp) {
		struct fs_epoch_stats *e = *pp;

		if (kept >= FS_STATS_EPOCHS && e->handles == 0 &&
		    c->count > FS_STATS_EPOCHS) {
			*pp = e->next;
			c->count--;
			free(e);
			continue;
		}
		kept++;
		pp = &e->next;
	}
}

struct fs_epoch_stats *fs_stats_epoch_open(struct fs_stats *s, unsigned ch,
					   unsigned epoch)
{
	struct fs_stats_channel *c;
	struct fs_epoch_stats **pp, *e;

	if (!s || ch >= s->st->nchannels)
		return NULL;
	c = &s->channels[ch];
	pthread_mutex_lock(&s->lock);
	pp = &c->epochs;
	while (*pp && (*pp)->epoch > epoch)
		pp = &(*pp)->next;
	e = *pp;
	if (!e || e->epoch != epoch) {
		e = calloc(1, sizeof(*e));
		if (!e) {
			pthread_mutex_unlock(&s->lock);
			return NULL;
		}
		e->channel = ch;
		e->epoch = epoch;
		e->start_ns = s->start_ns;
		e->opened_ns = since_start(s->start_ns);
		e->next = *pp;
		*pp = e;
		c->count++;
	}
	e->handles++;
	prune(c);
	pthread_mutex_unlock(&s->lock);
	return e;
}

void fs_stats_epoch_close(struct fs_stats *s, struct fs_epoch_stats *e)
{
	if (!s || !e)
		return;
	pthread_mutex_lock(&s->lock);
	e->handles--;
	prune(&s->channels[e->channel]);
	pthread_mutex_unlock(&s->lock);
}

void fs_stats_epoch_read(struct fs_epoch_stats *e, uint64_t offset,
			 size_t bytes)
{
	uint64_t now, end, cur, zero = 0;

	if (!e)
		return;
	now = since_start(e->start_ns) | 1; /* never 0: 0 means "not yet" */
	if (bytes == 0) {
		/* the end, unless a seek (--seek emulate) jumped past what
		 * was read: only there is the total known */
		if (offset ==
			__atomic_load_n(&e->delivered, __ATOMIC_RELAXED) &&
		    __atomic_compare_exchange_n(&e->end, &zero, offset + 1,
						false, __ATOMIC_RELAXED,
						__ATOMIC_RELAXED))
			__atomic_store_n(&e->end_ns, now, __ATOMIC_RELAXED);
		return;
	}
	fs_rate_add(&e->rate, now, bytes);
	__atomic_add_fetch(&e->served, bytes, __ATOMIC_RELAXED);
	end = offset + bytes;
	cur = __atomic_load_n(&e->delivered, __ATOMIC_RELAXED);
	while (end > cur &&
	       !__atomic_compare_exchange_n(&e->delivered, &cur, end, true,
					    __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
	if (__atomic_load_n(&e->first_read_ns, __ATOMIC_RELAXED) == 0)
		__atomic_compare_exchange_n(&e->first_read_ns, &zero, now,
					    false, __ATOMIC_RELAXED,
					    __ATOMIC_RELAXED);
}

void fs_stats_epoch_error(struct fs_epoch_stats *e)
{
	if (e)
		__atomic_add_fetch(&e->errors, 1, __ATOMIC_RELAXED);
}

/* ---- reading the records ---- */

static uint64_t load(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

/*
 * Copies every record, oldest epoch first per channel, into a new array
 * (*n entries).  With for_log, each copy's log_delta is what was served
 * since the last call with for_log.  NULL on ENOMEM.
 */
static struct epoch_copy *collect(struct fs_stats *s, bool for_log, size_t *n)
{
	struct epoch_copy *out = NULL;
	uint64_t now = since_start(s->start_ns);
	size_t total = 0, i = 0;

	pthread_mutex_lock(&s->lock);
	for (unsigned ch = 0; ch < s->st->nchannels; ch++)
		total += s->channels[ch].count;
	out = calloc(total ? total : 1, sizeof(*out));
	for (unsigned ch = 0; out && ch < s->st->nchannels; ch++) {
		size_t first = i;

		for (struct fs_epoch_stats *e = s->channels[ch].epochs; e;
		     e = e->next) {
			struct epoch_copy *c = &out[i++];

			c->channel = ch;
			c->epoch = e->epoch;
			c->handles = e->handles;
			c->delivered = load(&e->delivered);
			c->served = load(&e->served);
			c->end = load(&e->end);
			c->end_ns = load(&e->end_ns);
			c->errors = load(&e->errors);
			c->opened_ns = e->opened_ns;
			c->total = e->total;
			c->rate =
			    fs_rate_get(&e->rate, now, load(&e->first_read_ns));
			if (for_log) {
				c->log_delta = c->served - e->logged_served;
				e->logged_served = c->served;
			}
		}
		/* newest first in the list: oldest first in the copy */
		for (size_t a = first, b = i; b > a + 1; a++, b--) {
			struct epoch_copy t = out[a];

			out[a] = out[b - 1];
			out[b - 1] = t;
		}
	}
	pthread_mutex_unlock(&s->lock);
	*n = i;
	return out;
}

/* Notes a total found for a record, so that it outlives the epoch's
 * plan. */
static void remember_total(struct fs_stats *s, const struct epoch_copy *c)
{
	pthread_mutex_lock(&s->lock);
	for (struct fs_epoch_stats *e = s->channels[c->channel].epochs; e;
	     e = e->next) {
		if (e->epoch == c->epoch) {
			e->total = c->total;
			break;
		}
	}
	pthread_mutex_unlock(&s->lock);
}

/*
 * The epoch's exact byte count into c->total (+ 1), when known: where a
 * reader met the end, or what the channel says while a handle holds the
 * epoch's plan (asking for a closed epoch would build its plan again).
 */
static void find_total(struct fs_stats *s, struct epoch_copy *c)
{
	uint64_t size;

	if (c->end) {
		c->total = c->end;
	} else if (!c->total && c->handles &&
		   channel_epoch_size(s->st->channels[c->channel].channel,
				      c->epoch, &size)) {
		c->total = size + 1;
		remember_total(s, c);
	}
}

static const char *state_of(const struct epoch_copy *c)
{
	if (c->end)
		return "done";
	if (c->errors)
		return "error";
	return c->handles ? "open" : "closed";
}

static double seconds(uint64_t ns)
{
	return (double)ns / NS_PER_S;
}

/* ---- the snapshot ---- */

/* Adds key: value to obj; false when out of memory. */
static bool put(json_t *obj, const char *key, json_t *value)
{
	return value && json_object_set_new(obj, key, value) == 0;
}

static json_t *epoch_json(struct fs_stats *s, struct epoch_copy *c)
{
	json_t *o = json_object();
	char file[FS_CHANNEL_NAME_MAX + 16];
	uint64_t counts[EPOCH_COUNTS];

	find_total(s, c);
	snprintf(file, sizeof(file), "%s_%u", s->st->channels[c->channel].name,
		 c->epoch);
	counts[EPOCH_EPOCH] = c->epoch;
	counts[EPOCH_HANDLES] = c->handles;
	counts[EPOCH_DELIVERED] = c->delivered;
	counts[EPOCH_SERVED] = c->served;
	counts[EPOCH_RATE] = (uint64_t)(c->rate + 0.5);
	counts[EPOCH_ERRORS] = c->errors;
	if (o && stats_group_put(&stats_epoch, o, counts) &&
	    put(o, STATS_KEY_FILE, json_string(file)) &&
	    put(o, STATS_KEY_STATE, json_string(state_of(c))) &&
	    put(o, STATS_KEY_TOTAL,
		c->total ? json_integer((json_int_t)(c->total - 1))
			 : json_null()) &&
	    put(o, STATS_KEY_OPENED_AT, json_real(seconds(c->opened_ns))) &&
	    put(o, STATS_KEY_DONE_AT,
		c->end ? json_real(seconds(c->end_ns)) : json_null()))
		return o;
	json_decref(o);
	return NULL;
}

/* A FastFile channel's counts (channel_tree_get_stats()); JSON null for a
 * Pipe channel. */
static json_t *tree_json(struct fs_state *st, unsigned ch)
{
	struct channel_tree *t = channel_tree(st->channels[ch].channel);
	struct channel_tree_stats ts;
	uint64_t counts[TREE_COUNTS];

	if (!t)
		return json_null();
	channel_tree_get_stats(t, &ts);
	counts[TREE_FILES] = channel_tree_files(t);
	counts[TREE_OPENS] = ts.opens;
	counts[TREE_OPENS_PREFETCHED] = ts.opens_prefetched;
	counts[TREE_ORDERS] = ts.orders;
	counts[TREE_PREFETCHED] = ts.prefetched;
	counts[TREE_RELEASED] = ts.released;
	return stats_group_json(&stats_tree, counts);
}

/* One channel's object, with the copies of its records (n of them). */
static json_t *channel_json(struct fs_stats *s, unsigned ch,
			    struct epoch_copy *copies, size_t n)
{
	struct fs_state *st = s->st;
	json_t *o = json_object();
	json_t *epochs = json_array();
	struct channel_stats cs;
	uint64_t visible[CHANNEL_COUNTS], catalog[CATALOG_COUNTS];

	pthread_mutex_lock(&st->lock);
	visible[CHANNEL_VISIBLE] = st->channels[ch].visible;
	pthread_mutex_unlock(&st->lock);
	channel_get_stats(st->channels[ch].channel, &cs);
	catalog[CATALOG_OBJECTS] = cs.objects;
	catalog[CATALOG_BYTES] = cs.bytes;
	for (size_t i = 0; epochs && i < n; i++) {
		if (json_array_append_new(epochs, epoch_json(s, &copies[i]))) {
			json_decref(epochs);
			epochs = NULL;
		}
	}
	if (o && put(o, STATS_KEY_NAME, json_string(st->channels[ch].name)) &&
	    stats_group_put(&stats_channel, o, visible) &&
	    put(o, stats_catalog.key,
		stats_group_json(&stats_catalog, catalog)) &&
	    put(o, STATS_KEY_EPOCHS, epochs) &&
	    put(o, stats_tree.key, tree_json(st, ch)))
		return o;
	json_decref(o);
	return NULL;
}

static json_t *channels_json(struct fs_stats *s)
{
	json_t *list = json_array();
	struct epoch_copy *copies = NULL;
	size_t n = 0, i = 0;

	copies = collect(s, false, &n);
	for (unsigned ch = 0; list && copies && ch < s->st->nchannels; ch++) {
		size_t first = i;

		while (i < n && copies[i].channel == ch)
			i++;
		if (json_array_append_new(
			list, channel_json(s, ch, copies + first, i - first))) {
			json_decref(list);
			list = NULL;
		}
	}
	if (!copies) {
		json_decref(list);
		list = NULL;
	}
	free(copies);
	return list;
}

/* The memory, cache and s3 objects into root; false on ENOMEM. */
static bool put_counts(json_t *root, const struct cache_stats *cs,
		       const struct store_stats *ss)
{
	const uint64_t memory[MEMORY_COUNTS] = {
	    [MEMORY_BUDGET] = cs->budget_bytes,
	    [MEMORY_IN_USE] = cs->used_bytes,
	    [MEMORY_PEAK] = cs->peak_bytes};
	const uint64_t cache[CACHE_COUNTS] = {
	    [CACHE_HITS] = cs->hits,
	    [CACHE_MISSES] = cs->misses,
	    [CACHE_PREFETCHED] = cs->prefetched,
	    [CACHE_EVICTIONS] = cs->evictions,
	    [CACHE_KEPT_BYTES] = cs->kept_bytes,
	    [CACHE_OBJECTS] = cs->objects,
	    [CACHE_SEGMENTS] = cs->segments};
	const uint64_t s3[S3_COUNTS] = {
	    [S3_REQUESTS] = ss->requests,
	    [S3_GETS_IN_FLIGHT] = ss->gets_in_flight,
	    [S3_CONCURRENCY] = ss->concurrency,
	    [S3_RETRIES] = ss->retries,
	    [S3_FAILURES] = ss->failures,
	    [S3_THROTTLED] = ss->throttled,
	    [S3_BYTES_RECEIVED] = ss->bytes_received,
	    [S3_CREDENTIAL_REFRESHES] = ss->credential_refreshes};

	return put(root, stats_memory.key,
		   stats_group_json(&stats_memory, memory)) &&
	       put(root, stats_cache.key,
		   stats_group_json(&stats_cache, cache)) &&
	       put(root, stats_s3.key, stats_group_json(&stats_s3, s3));
}

/* The disk tier's object, or null without one; NULL on ENOMEM. */
static json_t *disk_json(struct fs_stats *s)
{
	struct disk_store_stats ds;
	bool on = disk_store_get_stats(s->st->store, &ds);
	const uint64_t disk[DISK_COUNTS] = {[DISK_HITS] = ds.hits,
					    [DISK_HIT_BYTES] = ds.hit_bytes,
					    [DISK_MISSES] = ds.misses,
					    [DISK_WRITES] = ds.writes,
					    [DISK_WRITE_BYTES] = ds.write_bytes,
					    [DISK_WRITE_DROPS] = ds.write_drops,
					    [DISK_WRITE_ERRORS] =
						ds.write_errors,
					    [DISK_BAD_FILES] = ds.bad_files,
					    [DISK_EVICTIONS] = ds.evictions,
					    [DISK_FILES] = ds.files,
					    [DISK_BYTES] = ds.bytes_on_disk,
					    [DISK_SIZE] = ds.size_bytes};
	json_t *o;

	if (!on)
		return json_null();
	o = stats_group_json(&stats_disk, disk);
	if (o && !put(o, STATS_KEY_WRITING, json_boolean(ds.writing))) {
		json_decref(o);
		o = NULL;
	}
	return o;
}

/* The worker serving and the ones before it (fs/keeper.h). */
static json_t *worker_json(struct fs_stats *s)
{
	const struct keeper_shared *k = s->st->shared;
	json_t *o = json_object();
	json_t *last = json_null();
	uint64_t counts[WORKER_COUNTS];
	uint32_t restarts;

	if (!o || !k)
		return o;
	restarts = __atomic_load_n(&k->restarts, __ATOMIC_ACQUIRE);
	if (restarts && k->last_restart_ms) {
		last = json_object();
		if (last &&
		    !(put(last, STATS_KEY_AT,
			  json_real((double)k->last_restart_ms / 1000.0)) &&
		      put(last, STATS_KEY_CAUSE, json_string(k->last_cause)))) {
			json_decref(last);
			last = NULL;
		}
	}
	counts[WORKER_KEEPER_PID] = (uint64_t)getppid();
	counts[WORKER_GENERATION] =
	    __atomic_load_n(&k->generation, __ATOMIC_ACQUIRE);
	counts[WORKER_RESTARTS] = restarts;
	if (stats_group_put(&stats_worker, o, counts) &&
	    put(o, STATS_KEY_LAST_RESTART, last))
		return o;
	json_decref(o);
	return NULL;
}

/* The whole document; NULL on ENOMEM. */
static json_t *snapshot(struct fs_stats *s)
{
	struct cache_stats cs;
	struct store_stats ss;
	uint64_t counts[ROOT_COUNTS];
	json_t *root = json_object();

	cache_get_stats(s->st->cache, &cs);
	memset(&ss, 0, sizeof(ss));
	store_get_stats(s->st->store, &ss);
	/* put() takes each value, also when it fails */
	counts[ROOT_PID] = (uint64_t)getpid();
	counts[ROOT_STATS_INTERVAL] = s->st->opts->stats_interval;
	if (root &&
	    put(root, STATS_KEY_VERSION, json_integer(FS_STATS_VERSION)) &&
	    stats_group_put(&stats_root, root, counts) &&
	    put(root, STATS_KEY_MOUNTPOINT, json_string(s->mountpoint)) &&
	    put(root, STATS_KEY_UPTIME,
		json_real(seconds(since_start(s->start_ns)))) &&
	    put(root, stats_worker.key, worker_json(s)) &&
	    put_counts(root, &cs, &ss) &&
	    put(root, stats_disk.key, disk_json(s)) &&
	    put(root, STATS_KEY_CHANNELS, channels_json(s)))
		return root;
	json_decref(root);
	return NULL;
}

struct fs_snapshot *fs_snapshot_take(char *data, size_t len)
{
	struct fs_snapshot *f = calloc(1, sizeof(*f));

	if (!f) {
		free(data);
		errno = ENOMEM;
		return NULL;
	}
	f->data = data;
	f->len = len;
	pthread_mutex_init(&f->lock, NULL);
	return f;
}

struct fs_snapshot *fs_stats_file_open(struct fs_stats *s)
{
	json_t *root = NULL;
	char *text = NULL, *data = NULL;
	size_t len = 0;

	if (!s) {
		errno = ENOMEM;
		return NULL;
	}
	root = snapshot(s);
	text = root ? json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(6))
		    : NULL;
	if (text) {
		len = strlen(text);
		data = malloc(len + 1);
	}
	if (data) {
		memcpy(data, text, len);
		data[len++] = '\n';
	}
	free(text);
	json_decref(root);
	if (!data) {
		errno = ENOMEM;
		return NULL;
	}
	return fs_snapshot_take(data, len);
}

void fs_snapshot_close(struct fs_snapshot *f)
{
	if (!f)
		return;
	/* a read that has already replied may still hold the lock */
	pthread_mutex_lock(&f->lock);
	pthread_mutex_unlock(&f->lock);
	pthread_mutex_destroy(&f->lock);
	free(f->data);
	free(f);
}

/* ---- the log line ---- */

static void log_epoch(struct fs_stats *s, struct util_buf *b,
		      struct epoch_copy *c, double elapsed)
{
	double rate = elapsed > 0 ? (double)c->log_delta / elapsed : 0.0;

	find_total(s, c);
	util_buf_printf(b, "%s%s_%u %.1f", b->len ? ", " : "",
			s->st->channels[c->channel].name, c->epoch,
			(double)c->delivered / MIB);
	if (c->total > 1)
		util_buf_printf(b, "/%.1f MiB %u%%",
				(double)(c->total - 1) / MIB,
				(unsigned)(100.0 * (double)c->delivered /
					   (double)(c->total - 1)));
	else
		util_buf_printf(b, " MiB");
	util_buf_printf(b, " %.1f MB/s%s", rate / 1e6, c->end ? " done" : "");
}

/* One line, if something was read since the last one. */
static void log_once(struct fs_stats *s)
{
	struct util_buf b;
	struct cache_stats cs;
	struct store_stats ss;
	struct epoch_copy *copies;
	uint64_t now = since_start(s->start_ns);
	double elapsed = seconds(now - s->logged_ns);
	size_t n = 0;
	bool read = false;

	s->logged_ns = now;
	copies = collect(s, true, &n);
	if (!copies)
		return;
	util_buf_init(&b, 8192);
	for (size_t i = 0; i < n; i++) {
		if (copies[i].log_delta)
			read = true;
		if (copies[i].log_delta ||
		    (copies[i].handles && !copies[i].end))
			log_epoch(s, &b, &copies[i], elapsed);
	}
	free(copies);
	if (read) {
		cache_get_stats(s->st->cache, &cs);
		memset(&ss, 0, sizeof(ss));
		store_get_stats(s->st->store, &ss);
		util_info("stats: %s; cache %" PRIu64 " hits %" PRIu64
			  " misses; %" PRIu64 " GETs in flight; %" PRIu64
			  " retries %" PRIu64 " errors; memory %.0f/%.0f MiB",
			  b.data ? b.data : "", cs.hits, cs.misses,
			  ss.gets_in_flight, ss.retries, ss.failures,
			  (double)cs.used_bytes / MIB,
			  (double)cs.budget_bytes / MIB);
	}
	util_buf_free(&b);
}

static void *log_main(void *arg)
{
	struct fs_stats *s = arg;
	struct timespec due;

	clock_gettime(CLOCK_MONOTONIC, &due);
	pthread_mutex_lock(&s->lock);
	while (!s->stop) {
		due.tv_sec += s->interval;
		while (!s->stop && pthread_cond_timedwait(&s->wake, &s->lock,
							  &due) != ETIMEDOUT)
			;
		if (s->stop)
			break;
		pthread_mutex_unlock(&s->lock);
		log_once(s);
		pthread_mutex_lock(&s->lock);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

int fs_stats_log_start(struct fs_stats *s, unsigned interval)
{
	int rc;

	if (!s || interval == 0)
		return 0;
	s->interval = interval;
	s->stop = false;
	s->logged_ns = since_start(s->start_ns);
	rc = pthread_create(&s->logger, NULL, log_main, s);
	if (rc == 0)
		s->logging = true;
	return rc;
}

void fs_stats_log_stop(struct fs_stats *s)
{
	if (!s || !s->logging)
		return;
	pthread_mutex_lock(&s->lock);
	s->stop = true;
	pthread_cond_signal(&s->wake);
	pthread_mutex_unlock(&s->lock);
	pthread_join(s->logger, NULL);
	s->logging = false;
}
