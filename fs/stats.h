/*
 * fs stats: live statistics of a mount, and the `s3pipe stats` command.
 *
 * The daemon side (fs/stats.c) counts, per channel and epoch, what readers
 * were given, and publishes a JSON snapshot through a file of the mount
 * root that readdir never lists (FS_STATS_FILE); with --stats-interval it
 * also logs one line per interval.  The client side (tools/stats.c) reads
 * that file and prints it: once, as JSON, or as a live view.
 *
 * ops.c calls the fs_stats_epoch_*() hooks; main.c creates, starts and
 * destroys.  Every function takes a NULL fs_stats or fs_epoch_stats and
 * then does nothing (an allocation that failed costs the numbers only).
 */
#ifndef S3PIPE_FS_STATS_H
#define S3PIPE_FS_STATS_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The name of the snapshot file in the mount root: no "_<digits>" end, so
 * it is never a channel file's name. */
#define FS_STATS_FILE	 ".s3pipe-stats"
#define FS_STATS_VERSION 1 /* the JSON's "version" */
/* epochs a channel's stats keep (more while open) */
#define FS_STATS_EPOCHS 16

struct fs_state;
struct fs_stats;
struct fs_epoch_stats;

/*
 * Stats for st (its channels, cache and store), which must outlive them.
 * NULL and errno on failure.
 */
struct fs_stats *fs_stats_create(struct fs_state *st);
/* Stops the logger if it runs.  NULL is fine. */
void fs_stats_destroy(struct fs_stats *s);
/*
 * Starts the thread that logs a line every interval seconds in which
 * something was read (util_info).  0 does nothing.  Returns 0 or an errno.
 */
int fs_stats_log_start(struct fs_stats *s, unsigned interval);
void fs_stats_log_stop(struct fs_stats *s);

/* ---- the read path (ops.c) ---- */

/* A handle on epoch of channel ch was opened: the record it reports to,
 * with a reference (NULL on ENOMEM). */
struct fs_epoch_stats *fs_stats_epoch_open(struct fs_stats *s, unsigned ch,
					   unsigned epoch);
/* The handle is closed: drops the reference. */
void fs_stats_epoch_close(struct fs_stats *s, struct fs_epoch_stats *e);
/* A read at offset returned bytes (0: the end of the epoch, when offset is
 * the furthest any read reached); lock-free. */
void fs_stats_epoch_read(struct fs_epoch_stats *e, uint64_t offset,
			 size_t bytes);
/* A read failed. */
void fs_stats_epoch_error(struct fs_epoch_stats *e);

/* ---- snapshot files ---- */

/*
 * One open of a file whose text is made at open time (FS_STATS_FILE, an
 * order file): served at any offset, the same for the life of the open.
 */
struct fs_snapshot {
	char *data; /* owned, len bytes */
	size_t len;
	/* held by a read until its reply is written: the release may come
	 * in before that, and waits for it before freeing */
	pthread_mutex_t lock;
};

/* A snapshot of data[0, len) (malloc'd; taken over, freed on failure);
 * NULL and errno on failure. */
struct fs_snapshot *fs_snapshot_take(char *data, size_t len);
/* The stats as JSON now; NULL and errno on failure. */
struct fs_snapshot *fs_stats_file_open(struct fs_stats *s);
void fs_snapshot_close(struct fs_snapshot *f);

/* ---- for the unit tests (UNITTEST functions of fs/stats.c) ---- */

/* Bytes read per second, in a ring of one-second slots (fs/stats.c). */
#define FS_RATE_SLOTS 8
struct fs_rate {
	uint64_t slot[FS_RATE_SLOTS]; /* second << 40 | bytes, atomic */
};

#ifdef UNITTESTS

void fs_rate_add(struct fs_rate *r, uint64_t now_ns, uint64_t bytes);
double fs_rate_get(const struct fs_rate *r, uint64_t now_ns, uint64_t since_ns);

#endif

#endif
