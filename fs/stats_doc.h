/*
 * stats doc: the shape of the stats document (FS_STATS_FILE), described
 * once for the daemon that writes it (fs/stats.c) and `s3pipe stats`
 * that reads it (tools/stats.c), both through jansson.
 *
 * Most of the document is groups of counts: objects whose members are
 * non-negative integers, named here in an order the enums below index.
 * The writer makes a group's object from an array of values in that
 * order, the reader fills such an array back (a member missing is 0, one
 * that is not a count is an error).  The members that are not counts
 * (strings, reals, null-or-count, the lists) are named by the STATS_KEY_
 * constants.  fs/stats.c's top comment is the document's reference.
 */
#ifndef S3PIPE_FS_STATS_DOC_H
#define S3PIPE_FS_STATS_DOC_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

struct stats_group {
	const char *key; /* its member name in its parent (NULL: the counts
			    sit in the parent itself) */
	const char *const *names;
	unsigned n;
};

enum { ROOT_PID, ROOT_STATS_INTERVAL, ROOT_COUNTS };
enum { WORKER_KEEPER_PID, WORKER_GENERATION, WORKER_RESTARTS, WORKER_COUNTS };
enum { MEMORY_BUDGET, MEMORY_IN_USE, MEMORY_PEAK, MEMORY_COUNTS };
enum {
	CACHE_HITS,
	CACHE_MISSES,
	CACHE_PREFETCHED,
	CACHE_EVICTIONS,
	CACHE_KEPT_BYTES,
	CACHE_OBJECTS,
	CACHE_SEGMENTS,
	CACHE_COUNTS
};
enum {
	S3_REQUESTS,
	S3_GETS_IN_FLIGHT,
	S3_CONCURRENCY,
	S3_RETRIES,
	S3_FAILURES,
	S3_THROTTLED,
	S3_BYTES_RECEIVED,
	S3_CREDENTIAL_REFRESHES,
	S3_COUNTS
};
enum {
	DISK_HITS,
	DISK_HIT_BYTES,
	DISK_MISSES,
	DISK_WRITES,
	DISK_WRITE_BYTES,
	DISK_WRITE_DROPS,
	DISK_WRITE_ERRORS,
	DISK_BAD_FILES,
	DISK_EVICTIONS,
	DISK_FILES,
	DISK_BYTES,
	DISK_SIZE,
	DISK_COUNTS
};
enum { CHANNEL_VISIBLE, CHANNEL_COUNTS };
enum { CATALOG_OBJECTS, CATALOG_BYTES, CATALOG_COUNTS };
enum {
	TREE_FILES,
	TREE_OPENS,
	TREE_OPENS_PREFETCHED,
	TREE_ORDERS,
	TREE_PREFETCHED,
	TREE_RELEASED,
	TREE_COUNTS
};
enum {
	EPOCH_EPOCH,
	EPOCH_HANDLES,
	EPOCH_DELIVERED,
	EPOCH_SERVED,
	EPOCH_RATE,
	EPOCH_ERRORS,
	EPOCH_COUNTS
};

extern const struct stats_group stats_root, stats_worker, stats_memory,
    stats_cache, stats_s3, stats_disk, stats_channel, stats_catalog, stats_tree,
    stats_epoch;

/* the members that are not counts */
#define STATS_KEY_VERSION      "version"      /* integer */
#define STATS_KEY_MOUNTPOINT   "mountpoint"   /* string */
#define STATS_KEY_UPTIME       "uptime"	      /* real, s */
#define STATS_KEY_LAST_RESTART "last_restart" /* null or {at, cause} */
#define STATS_KEY_AT	       "at"	      /* real, s since the epoch */
#define STATS_KEY_CAUSE	       "cause"	      /* string */
#define STATS_KEY_WRITING      "writing"      /* the disk's: boolean */
#define STATS_KEY_CHANNELS     "channels"     /* list */
#define STATS_KEY_NAME	       "name"	      /* a channel's: string */
#define STATS_KEY_EPOCHS       "epochs"	      /* list */
#define STATS_KEY_FILE	       "file"	      /* an epoch's: string */
#define STATS_KEY_STATE	       "state"	      /* string */
#define STATS_KEY_TOTAL	       "total"	      /* null or a count */
#define STATS_KEY_OPENED_AT    "opened_at"    /* real, s since the mount */
#define STATS_KEY_DONE_AT      "done_at"      /* null or real */

/* g's counts values[0..g->n) as an object; NULL on ENOMEM. */
json_t *stats_group_json(const struct stats_group *g, const uint64_t *values);
/* g's counts as members of obj; false on ENOMEM. */
bool stats_group_put(const struct stats_group *g, json_t *obj,
		     const uint64_t *values);
/*
 * g's counts out of obj (g's object, found by the caller) into
 * values[0..g->n): a member missing is 0; false, with the member's name in
 * *bad, when one is not a non-negative integer.  obj NULL reads as empty.
 */
bool stats_group_read(const struct stats_group *g, json_t *obj,
		      uint64_t *values, const char **bad);

#endif
