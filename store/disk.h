/*
 * disk store: the disk tier, a store (store/store.h) that keeps blocks in
 * files under a directory and passes the rest on to the store it wraps
 * (the S3 client).
 *
 *   cache -> disk tier -> S3 client
 *
 * The cache asks for runs of whole blocks of one object.  The leading
 * blocks of a run that are on disk are read (and verified) by the tier's
 * own I/O threads straight into the cache's buffers; the rest of the run
 * goes to the inner store as one GET.  Blocks that arrive from the inner
 * store are copied into a bounded write-behind queue and written by the
 * I/O threads (a temporary file renamed into place), within a byte budget,
 * evicting the least recently used files first.  A block file is keyed by
 * (bucket, key, ETag, block size, block index): an object without an ETag
 * is never kept, and another version of an object never matches.  Each
 * file carries a header that names its block and a crc32 of its data,
 * checked on every read; a file that fails is removed and the block is
 * fetched again.  The disk tier never fails a read: whatever goes wrong
 * with the directory, the inner store answers.
 *
 * Layout: DIR/s3pipe/lock (an flock held while the tier runs: a second
 * daemon on the same DIR runs without the tier) and one file per block,
 * DIR/s3pipe/<32 hex digits>-<16 hex digits>.b<format version>.
 */
#ifndef S3PIPE_STORE_DISK_H
#define S3PIPE_STORE_DISK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

/* The smallest budget, in blocks: fewer would hold nothing useful. */
#define DISK_STORE_MIN_BLOCKS 4

/* The tier's settings; disk_store_conf_init() writes the defaults. */
struct disk_store_conf {
	char *dir;	     /* --cache-dir; owned by who fills it; NULL: off */
	uint64_t size_bytes; /* --cache-dir-size, bytes; 0 with percent */
	unsigned size_percent; /* 1-100: that share of the free space at
				  start (the tier's own files counting as
				  free); 0: size_bytes */
	uint64_t block_size;   /* the cache's block size (--part-size) */
	unsigned io_threads;   /* 0 = auto (2) */
	uint64_t queue_bytes;  /* write-behind bound; 0 = auto: 32 MiB or
				  4 blocks, whichever is larger */
};

struct disk_store_stats {
	uint64_t hits;		/* blocks read from disk */
	uint64_t hit_bytes;	/* their bytes */
	uint64_t misses;	/* blocks asked for and not on disk */
	uint64_t writes;	/* block files written */
	uint64_t write_bytes;	/* their data bytes */
	uint64_t write_drops;	/* blocks not written: queue full */
	uint64_t write_errors;	/* writes that failed (disk full, I/O) */
	uint64_t bad_files;	/* files that failed a check: removed */
	uint64_t evictions;	/* files removed to stay within the size */
	uint64_t files;		/* block files now */
	uint64_t bytes_on_disk; /* their size, as budgeted */
	uint64_t size_bytes;	/* the budget */
	bool writing;		/* false: read-only, locked out or paused */
};

void disk_store_conf_init(struct disk_store_conf *conf);

/* The smallest --cache-dir-size for block_size. */
uint64_t disk_store_min_size(uint64_t block_size);

/*
 * A disk tier over inner, with conf copied.  Fails (NULL, one line for
 * users in err) only when conf->dir does not exist or is not a directory,
 * or when the size is below disk_store_min_size() (a percentage of a small
 * free space); the inner store then still belongs to the caller.  A
 * directory that cannot be written, or that another daemon holds, is not
 * an error: one line is logged and the tier runs read-only, or not at all.
 * On success the returned store owns inner: its destroy finishes the
 * queued writes, cancels its own requests, then destroys inner.
 */
struct store *disk_store_create(const struct disk_store_conf *conf,
				struct store *inner, char *err, size_t errlen);

/* Fills out and returns true when st is a disk tier; false (out zeroed)
 * for any other store. */
bool disk_store_get_stats(struct store *st, struct disk_store_stats *out);

#endif
