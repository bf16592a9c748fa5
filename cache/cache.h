/*
 * cache: streams, block cache and prefetcher between fs/ and s3/.
 *
 * A stream is an ordered list of segments (object key, ETag, size) that is
 * read as one byte sequence; it is filled page by page from ListObjectsV2,
 * on demand, so a reader waits only for the segment it needs.
 *
 * Blocks are pieces of one object (at most block_size bytes, never across
 * objects), keyed by (segment, block index); a segment is one listed
 * (key, ETag), so a cached block is never served for another version.
 * All block memory counts against one byte budget.
 *
 * A reader is a cursor over a stream with its own prefetch window: each
 * read pins the blocks it returns (a cache_view) and moves the window of
 * ranged GETs forward, across object boundaries.
 *
 * Nothing here knows about FUSE, channels or epochs.
 */
#ifndef S3PIPE_CACHE_H
#define S3PIPE_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "s3/store.h"

/*
 * The cache's settings.  cache_conf_init() writes every default; a field
 * left 0 where it says "auto" is worked out by cache_create() from the
 * budget and the store below.
 */
struct cache_conf {
	uint64_t budget_bytes; /* hard bound on block memory */
	uint64_t block_size;   /* bytes per cache block (--part-size) */
	uint64_t max_window;   /* per-reader prefetch cap in bytes; 0 = auto */
	/* bytes one prefetch GET may cover (a run of whole blocks of one
	 * object); 0 = auto */
	uint64_t request_size;
	/* objects a reader's prefetch may run ahead into; 0 = auto (enough
	 * to keep every request the store runs at once busy): with small
	 * objects the byte window would hold thousands, far more than the
	 * connections can fetch at once */
	unsigned max_ahead_objects;
	unsigned list_page_keys;  /* keys per ListObjectsV2 page (1-1000) */
	unsigned first_page_keys; /* keys in the first page (small: fast
				     start) */
	/* block memory faulted in per stream before the first reader
	 * (cache_stream_warm), at most; 0 = auto (bounds the start-up
	 * time) */
	uint64_t warm_max_bytes;
};

#define CACHE_DEFAULT_BUDGET	 (256ULL << 20)
#define CACHE_DEFAULT_BLOCK_SIZE (8ULL << 20)
#define CACHE_MIN_BLOCK_SIZE	 (64ULL << 10)
#define CACHE_MAX_BLOCK_SIZE	 (1ULL << 30)

void cache_conf_init(struct cache_conf *conf);

struct cache_stats {
	uint64_t budget_bytes;
	uint64_t used_bytes;
	uint64_t peak_bytes;
	uint64_t warm_bytes; /* faulted in ahead of use (cache_stream_warm) */
	uint64_t hits;	     /* blocks found ready */
	uint64_t misses;     /* blocks fetched on demand */
	uint64_t prefetched; /* blocks fetched ahead */
	uint64_t evictions;
	uint64_t fetch_errors;
	uint64_t seeks; /* reader repositions (emulated seeks) */
};

/*
 * A cache over store, with conf copied.  The store must stay up while the
 * cache uses it; at the end it goes first (destroying it runs its pending
 * callbacks, which land in the cache), then the streams, then the cache.
 * Returns NULL and sets errno (EINVAL when conf has no block size or page
 * size).
 */
struct cache *cache_create(const struct cache_conf *conf,
			   struct s3_store *store);
void cache_destroy(struct cache *c);
void cache_get_stats(struct cache *c, struct cache_stats *out);

/*
 * A stream over every object under bucket/prefix in listing order, skipping
 * empty objects and folder markers.  cache_stream_start() fetches the first
 * page synchronously (it is also the start-up check: missing bucket, denied
 * access, unreachable endpoint) and returns its error in err.
 */
struct cache_stream *cache_stream_create(struct cache *c, const char *bucket,
					 const char *prefix);
int cache_stream_start(struct cache_stream *s, struct s3_error *err);
/* True once the listing is complete; *size is then the total byte count. */
bool cache_stream_size(struct cache_stream *s, uint64_t *size);
/*
 * Faults in, ahead of any reader, the whole-block buffers that a reader's
 * first prefetch window takes over what is listed of s so far (none for
 * small objects), within the budget and warm_max_bytes held in the pool;
 * returns the bytes added.  For start-up: the first epoch then does not pay
 * for fresh pages on the receive path.
 */
uint64_t cache_stream_warm(struct cache_stream *s);
/* Call only after every reader of s is destroyed. */
void cache_stream_destroy(struct cache_stream *s);

#define CACHE_VIEW_MAX 256

/* Pinned block memory returned by a read; release with cache_view_release. */
struct cache_view {
	struct iovec iov[CACHE_VIEW_MAX];
	struct cache_block *blocks[CACHE_VIEW_MAX];
	int count;
	size_t bytes;
};

struct cache_reader *cache_reader_create(struct cache_stream *s);
void cache_reader_destroy(struct cache_reader *r);
/* The offset the next sequential read starts at. */
uint64_t cache_reader_position(struct cache_reader *r);
/*
 * Reads up to size bytes at offset.  An offset other than the current
 * position restarts the stream there (the caller decides whether seeking is
 * allowed).  On return view holds pinned iovecs (bytes == 0 at the end).
 * Returns 0, or EIO when a block could not be fetched (see the log),
 * or another errno.  The view must be released even on error.
 */
int cache_reader_read(struct cache_reader *r, uint64_t offset, size_t size,
		      struct cache_view *view);
void cache_view_release(struct cache *c, struct cache_view *view);

#endif
