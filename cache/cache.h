/*
 * cache: streams, block cache and prefetcher, between channel/ above and a
 * store below (store/store.h: the S3 client, or the disk tier over it).
 *
 * A stream is an ordered list of segments (a range of one object, or
 * literal bytes) that is read as one byte sequence.  A listing stream is
 * filled page by page from ListObjectsV2, on demand, so a reader waits only
 * for the segment it needs; an on-listed function may turn each listed object
 * into several segments (a record header, the object, padding).  A plan stream
 * is filled by its owner, in any order of objects, and asked for more
 * (a refill function) as readers come near its end.
 *
 * Objects are versions (bucket, key, ETag, size), interned: blocks are
 * pieces of one object (at most block_size bytes), keyed by (object, block
 * index), so a block is never served for another version, and is found by
 * every stream that names the same version.  All block memory counts
 * against one byte budget.
 *
 * A reader is a cursor over a stream with its own prefetch window: each
 * read pins the blocks it returns (a cache_view) and moves the window of
 * ranged GETs forward, across object boundaries.
 *
 * Nothing here knows about FUSE, channels or epochs.
 *
 * Locking: the cache's one lock is its own (cache/internal.h).  Every
 * function here takes it as it needs it, and none may be called with it
 * held; calls out of the cache (the store's get, list and head, a
 * stream's on-listed and refill functions, a resolve's done) are made without
 * it, so a store that is slow to take a request, or a hook that waits for a
 * lock of its owner's, never holds up a reader of blocks in memory.
 */
#ifndef S3PIPE_CACHE_H
#define S3PIPE_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "cache/catalog.h"
#include "store/store.h"

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
	 * (cache_stream_fault_in), at most; 0 = auto (bounds the start-up
	 * time) */
	uint64_t fault_in_max_bytes;
	/* bytes of the kept set, the part of the data that a scan larger
	 * than the budget does not flush (see cache/internal.h): at most the
	 * budget less two blocks; 0 = none; CACHE_KEPT_AUTO (the default) =
	 * half the budget, at most what max_window leaves of it */
	uint64_t kept_max;
};

#define CACHE_KEPT_AUTO UINT64_MAX

/* S3's largest object: a listing or HEAD naming a larger one is hostile */
#define CACHE_OBJECT_SIZE_MAX (5ULL << 40)

#define CACHE_DEFAULT_BUDGET	 (256ULL << 20)
#define CACHE_DEFAULT_BLOCK_SIZE (8ULL << 20)
#define CACHE_MIN_BLOCK_SIZE	 (64ULL << 10)
#define CACHE_MAX_BLOCK_SIZE	 (1ULL << 30)
/* a small read's unit (cache/internal.h, pieces): a reader that jumps
 * about gets GETs of its reads rounded up to it */
#define CACHE_PIECE_SIZE (128ULL << 10)

void cache_conf_init(struct cache_conf *conf);

struct cache_stats {
	uint64_t budget_bytes;
	uint64_t used_bytes;
	uint64_t peak_bytes;
	uint64_t faulted_in_bytes; /* faulted in ahead of use
				      (cache_stream_fault_in) */
	uint64_t hits;		   /* blocks found ready */
	uint64_t misses;	   /* blocks fetched on demand */
	uint64_t prefetched;	   /* blocks fetched ahead */
	uint64_t evictions;
	uint64_t fetch_errors;
	uint64_t seeks;	     /* reader repositions (emulated seeks) */
	uint64_t kept_bytes; /* in the kept set now */
	uint64_t kept_stale; /* kept blocks that went stale (unkept) */
	uint64_t claimed;    /* consumed blocks a reader behind took back */
	/* what the cache holds outside the budget now, a record each: the
	 * objects named by blocks, segments or holders, and the segments of
	 * every stream (with the pages being framed) */
	uint64_t objects;
	uint64_t segments;
};

/*
 * A cache over store, with conf copied.  The store must stay up while the
 * cache uses it; at the end it goes first (destroying it runs its pending
 * callbacks, which land in the cache), then the streams, then the cache.
 * Returns NULL and sets errno (EINVAL when conf has no block size or page
 * size).
 */
struct cache *cache_create(const struct cache_conf *conf, struct store *store);
void cache_destroy(struct cache *c);
void cache_get_stats(struct cache *c, struct cache_stats *out);

/* ---- objects ---- */

struct cache_object;
struct cache_stream;
struct cache_listing_file;
struct cache_listing_writer;

/*
 * The interned object (bucket, key, etag, size), with a reference for the
 * caller; etag may be NULL.  NULL on ENOMEM, or for a size past
 * CACHE_OBJECT_SIZE_MAX.
 */
struct cache_object *cache_object_get(struct cache *c, const char *bucket,
				      const char *key, const char *etag,
				      uint64_t size);
/* Gives a reference back (o may be NULL); the last one frees o. */
void cache_object_put(struct cache *c, struct cache_object *o);
uint64_t cache_object_size(const struct cache_object *o);
const char *cache_object_bucket(const struct cache_object *o);
const char *cache_object_key(const struct cache_object *o);
/* The ETag as the store gave it (with quotes), or NULL. */
const char *cache_object_etag(const struct cache_object *o);
/* LastModified (seconds since the epoch) once a resolve's HEAD gave it
 * (cache_object_resolve()); 0: unknown. */
int64_t cache_object_mtime(const struct cache_object *o);

/*
 * Asks the store for the size and ETag of bucket/key (a HEAD), without
 * the lock.  done runs once, on the store's thread, without the lock: with
 * a reference to the object for the callee, or with NULL and the error.
 * Returns 0, or an errno when the request cannot start (then done does not
 * run).
 */
typedef void cache_resolve_fn(void *arg, struct cache_object *obj,
			      const struct store_error *err);
int cache_object_resolve(struct cache *c, const char *bucket, const char *key,
			 cache_resolve_fn *done, void *arg);
/* The same, blocking (start-up only): *out gets a reference.  Returns
 * err->err. */
int cache_object_resolve_sync(struct cache *c, const char *bucket,
			      const char *key, struct cache_object **out,
			      struct store_error *err);

/*
 * Reads the whole of o (cache_object_size() bytes) into buf, blocking,
 * past the cache (start-up only: a manifest).  Returns err->err.
 */
int cache_object_read_sync(struct cache *c, const struct cache_object *o,
			   char *buf, struct store_error *err);

/* ---- streams ---- */

/*
 * Turns one listed object into segments with cache_stream_add_object()
 * and cache_stream_add_bytes(), on whichever thread the page arrives, one
 * page at a time, without the cache's lock; returns 0 or an errno, which
 * fails the page.  What it adds is seen by readers once the whole page is
 * framed (a page that fails adds nothing).
 */
typedef int cache_on_listed_fn(void *arg, struct cache_stream *s,
			       struct cache_object *obj);
/*
 * A plan stream's owner is asked for more segments when a reader comes
 * near the end of what it added: on the reader's thread, without the
 * cache's lock (several readers may ask at once).  It may add segments or
 * end the stream there, or later from any thread; it must not wait long.
 */
typedef void cache_refill_fn(void *arg, struct cache_stream *s);

/*
 * A stream over every object under bucket/prefix in listing order, skipping
 * empty objects and folder markers.  cache_stream_start() fetches the first
 * page synchronously (it is also the start-up check: missing bucket, denied
 * access, unreachable endpoint) and returns its error in err.
 */
struct cache_stream *cache_stream_create(struct cache *c, const char *bucket,
					 const char *prefix);
int cache_stream_start(struct cache_stream *s, struct store_error *err);
/*
 * The same stream over a listing saved in a file (cache/listing_file.h),
 * read a page at a time as the readers need it, with no request to S3;
 * the stream takes the file (closed on failure too).
 */
struct cache_stream *cache_stream_create_saved(struct cache *c,
					       const char *bucket,
					       const char *prefix,
					       struct cache_listing_file *file);
/*
 * A listing stream that lists S3 while the saved listing at path is not
 * there or is older than max_age seconds, and goes on from that file, past
 * the last key it took, once it is: looked for before each page is asked
 * for (a stat; the file checked whole when it changed).  For a later
 * epoch's stream made while an earlier epoch still records the listing.
 * Before cache_stream_start().
 */
void cache_stream_prefer_saved(struct cache_stream *s, const char *path,
			       uint64_t max_age);
/*
 * The pages s takes written to w, which the stream takes: committed (on a
 * thread of its own: it syncs) once the listing is complete, abandoned if
 * it fails or the stream goes first.  Before cache_stream_start().
 */
void cache_stream_record(struct cache_stream *s,
			 struct cache_listing_writer *w);
/*
 * Sets how each listed object becomes segments (default: the whole object
 * as one segment).  Before cache_stream_start().
 */
void cache_stream_on_listed(struct cache_stream *s, cache_on_listed_fn *fn,
			    void *arg);
/*
 * For an on-listed function: how many non-empty objects the listing gave before
 * the one being added (whether the function added segments for them or not);
 * for others, how many it gave so far.
 */
uint64_t cache_stream_listed_objects(const struct cache_stream *s);
/*
 * Lists the rest of a started listing stream, blocking, page after page
 * (for channels that need every key before the first byte); pages are
 * framed as they arrive.  Returns 0 or EIO (logged).
 */
int cache_stream_list_all(struct cache_stream *s);

/*
 * Where a listing stream can go on from, for the process that takes over
 * from this one (the keeper's next worker, fs/keeper.h): the last place
 * where the stream dropped what its readers had passed (cache_stream_set_
 * trim), at the start of an object's segments.  The segments and bytes
 * before it, the objects listed through the one before it, and that
 * object's key, after which the listing goes on.  Written in place, in
 * memory another process maps, as a sequence lock: seq is odd while it is
 * written, so that a point a dying writer left half written is no point.
 */
struct cache_resume {
	uint32_t seq;
	uint32_t key_len;
	uint64_t tag; /* the owner's name for the stream; 0: no point */
	uint64_t index;
	uint64_t offset;
	uint64_t listed;
	char key[CACHE_KEY_MAX + 1];
};
/* s (a listing stream, trimmed) writes its points to *at under tag, from
 * now on. */
void cache_stream_keep_resume(struct cache_stream *s, struct cache_resume *at,
			      uint64_t tag);
/*
 * A listing stream, before its first page, starts where the point *at
 * holds for tag says: as if it had listed and then dropped everything
 * before it (reads before it fail with ESTALE, as in any trimmed
 * stream), its first page listed after the point's key.  0, or ENOENT
 * when *at holds no whole point of tag under the stream's prefix (s is
 * then as it was).  Not with cache_stream_start() (its first page lists
 * from the start).
 */
int cache_stream_resume(struct cache_stream *s, const struct cache_resume *at,
			uint64_t tag);

/*
 * A plan stream, before its first segment, starts at byte offset (its
 * owner adds what comes from there): as if it had held and then dropped
 * everything before it (reads before offset fail with ESTALE, as in any
 * trimmed stream).  0, or EINVAL when s has segments already.
 */
int cache_stream_start_at(struct cache_stream *s, uint64_t offset);

/* A stream whose segments its owner adds (refill may be NULL). */
struct cache_stream *
cache_stream_create_plan(struct cache *c, cache_refill_fn *refill, void *arg);
/*
 * Appends bytes [offset, offset + len) of obj (a reference is taken) or a
 * copy of literal bytes; empty additions are skipped.  0, ENOMEM or
 * EOVERFLOW.
 */
int cache_stream_add_object(struct cache_stream *s, struct cache_object *obj,
			    uint64_t offset, uint64_t len);
int cache_stream_add_bytes(struct cache_stream *s, const void *bytes,
			   size_t len);
/*
 * Appends an empty literal segment: no bytes to read, but a place that
 * cache_stream_segment() shows, for stages that count items (an empty
 * item is still a record).
 */
int cache_stream_add_mark(struct cache_stream *s);
/*
 * Ends a plan stream: nothing more will be added.  With err != 0, a reader
 * that reaches the end fails with err instead of seeing end of file (what
 * comes before it is read as usual).
 */
void cache_stream_end(struct cache_stream *s, int err);
/*
 * Tells a plan stream the byte count it will have once its owner has
 * added everything (when known before: the sizes of a listing), so that
 * its size is known before it is filled and blocks of a stream that fits
 * in the cache are kept for the next epoch.
 */
void cache_stream_set_size(struct cache_stream *s, uint64_t bytes);
/* Bytes the stream's segments take (its own records; the objects they
 * name are shared). */
uint64_t cache_stream_memory(const struct cache_stream *s);
/*
 * A plan stream's owner is asked for more (its refill function) once the
 * furthest segment a reader or its prefetch asked for is within half a
 * listing page of segments and within CACHE_REFILL_BYTES of the end:
 * large objects are not made segments of a thousand at a time.
 */
#define CACHE_REFILL_BYTES ((uint64_t)64 << 20)
/* Bytes of s from the start of the furthest segment asked for to its
 * end (all of it before any was). */
uint64_t cache_stream_ahead_bytes(struct cache_stream *s);
/*
 * Lets a stream drop the segments every reader has passed (their objects
 * go too once no block holds them): for owners that can build the same
 * stream again (a plan again, a listing listed again).  Readers of it cannot go
 * back: creating one on a stream that dropped segments, or a read before them,
 * fails with ESTALE.
 */
void cache_stream_set_trim(struct cache_stream *s);
/* Whether s dropped segments. */
bool cache_stream_trimmed(const struct cache_stream *s);
/*
 * A hold on a trimmed stream: the segments from its index on are kept
 * while it is there, for an owner that reads segments by index itself
 * (gunzip's jobs) rather than through one reader.  NULL and errno ESTALE
 * when segment idx was dropped already, ENOMEM.  The hold is the
 * caller's: move it forward as the segments before an index are no
 * longer needed, release it before the stream goes.
 */
struct cache_hold;
struct cache_hold *cache_hold_create(struct cache_stream *s, size_t idx);
void cache_hold_move(struct cache_hold *h, size_t idx);
void cache_hold_release(struct cache_hold *h);
/* Segments added so far. */
size_t cache_stream_count(const struct cache_stream *s);

/* Where segment idx of a stream lies, and whether it is literal bytes. */
struct cache_segment_info {
	uint64_t start;
	uint64_t size;
	uint64_t obj_offset; /* the object's first byte here (0: literal) */
	bool literal;
	/* the object's, for messages (NULL for literal bytes); valid while
	 * the stream lives */
	const char *bucket;
	const char *key;
	const char *etag;  /* (NULL when not known) */
	uint64_t obj_size; /* the whole object's bytes (0: literal) */
};
/*
 * Waits until segment idx is there (asking the listing or the owner for
 * more) and describes it: 0, ENODATA after the last segment, or the
 * error that ended the stream (EIO).
 */
int cache_stream_segment(struct cache_stream *s, size_t idx,
			 struct cache_segment_info *info);

/* The index of the segment that holds byte offset of s (the next to be
 * listed when offset is past what is listed), never one s dropped. */
size_t cache_stream_segment_at(struct cache_stream *s, uint64_t offset);

/* True once the listing is complete (and did not end with an error), or
 * its owner told its size (cache_stream_set_size); *size is then the
 * total byte count. */
bool cache_stream_size(struct cache_stream *s, uint64_t *size);
/*
 * Faults in, ahead of any reader, the whole-block buffers that a reader's
 * first prefetch window takes over what is listed of s so far (none for
 * small objects), within the budget and fault_in_max_bytes held in the pool;
 * returns the bytes added.  Those the kept set will take after that window
 * (a stream larger than the window) are faulted in on a thread of the
 * cache's own, in the background (once per cache; cache_destroy() stops
 * it).  For start-up: the first epoch then does not pay for fresh pages on
 * the receive path.
 */
uint64_t cache_stream_fault_in(struct cache_stream *s);
/*
 * Prefetches s for a reader to come: starts fetching the blocks of its
 * first bytes (or of all of it, when shorter) that are not in memory yet,
 * without waiting, as a new reader's window would (asking a listing or a
 * plan's owner for more segments), but with prefetch admission only: it
 * never evicts unread or kept blocks and stops where the budget has no
 * other room.  What it fetches stays unread (only a demand read evicts
 * it) until a reader passes it.  Returns true when the whole range is in
 * memory or coming; call again later to top up.
 */
bool cache_stream_prefetch(struct cache_stream *s, uint64_t bytes);
/*
 * Prefetches the whole of o for a reader to come (an open that a sampler's
 * order says is next), as cache_stream_prefetch() does a stream's head:
 * prefetch admission, and the blocks stay unread until a reader passes
 * them.  True when all of o is in memory or coming.
 */
bool cache_object_prefetch(struct cache *c, struct cache_object *o);
/*
 * Gives up o's unread blocks (a prefetch for an open that did not come):
 * those in memory and not being read become consumed, the first to go
 * when memory is wanted (they are still found until then).  Returns how
 * many.
 */
unsigned cache_object_release(struct cache *c, const struct cache_object *o);
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

/*
 * A reader of s from its start.  Readers of one stream know each other: a
 * block one of them moves past stays unread for another that still has it
 * ahead within its window, and the windows of all readers share the
 * budget (see cache/internal.h).
 */
struct cache_reader *cache_reader_create(struct cache_stream *s);
/*
 * A reader of bytes [offset, end) of s only (offset must be listed
 * already; NULL and ESTALE when a trimmed stream dropped it): reads stop
 * at end, and so does its prefetch, whose window is
 * at most window bytes (0: the cache's).  For stages that work on one
 * object at a time.
 */
struct cache_reader *cache_reader_create_at(struct cache_stream *s,
					    uint64_t offset, uint64_t end,
					    uint64_t window);
/*
 * A reader of s whose first read is at offset (or later): placed where
 * the stream starts, or where a trimmed one starts now when that is not
 * past offset (the first read then goes there); NULL and ESTALE when the
 * stream dropped offset, ENOMEM.
 */
struct cache_reader *cache_reader_create_before(struct cache_stream *s,
						uint64_t offset);
/*
 * A reader of s read at any offset (each object a file): its window starts
 * empty, so a read fetches only the blocks it covers; reads that go on
 * where the last one ended grow it (one block, then doubling up to the
 * cache's window), and a read elsewhere empties it again.
 */
struct cache_reader *cache_reader_create_random(struct cache_stream *s);
/* Gives up the unread blocks of r's window that no other reader of its
 * stream claims (they become consumed), then frees r. */
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

/*
 * Memory for stages that hold bytes of their own (gunzipped output), from
 * the same budget as the blocks: a buffer of cache_buffer_size() bytes,
 * evicting consumed blocks for it (any idle block with demand), or NULL
 * when the budget has no room now.  Without demand, buffers lent out stay
 * within half the budget, whatever the number of stages, so that stages
 * working ahead never starve one that a reader waits for (demand).
 * Return it with cache_buffer_put().
 */
void *cache_buffer_get(struct cache *c, bool demand);
void cache_buffer_put(struct cache *c, void *buf);
size_t cache_buffer_size(const struct cache *c);
uint64_t cache_budget(const struct cache *c);
/* The cache's own prefetch window cap. */
uint64_t cache_max_window(const struct cache *c);
/* Bytes a block holds (the last of an object holds what is left). */
uint64_t cache_block_size(const struct cache *c);

#endif
