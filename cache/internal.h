/*
 * cache internals shared by block.c, stream.c, reader.c and the unit tests.
 *
 * One mutex (cache->lock) guards everything below: the block table, the
 * LRU list, the byte count, the objects' table and references, every
 * stream's segment list and every reader.  It never leaves cache/: the
 * functions of cache.h take it themselves.  Waiting never holds it: a
 * reader waits on the block's own condition variable (or the stream's)
 * and the wait releases the lock.  Nor does a call out of the cache: the
 * store's get (cache_block_fetch()) and list (cache_stream_need()) and a
 * plan's refill function are called with the lock dropped, as a wait drops it,
 * and an on-listed function runs with it dropped (its segments wait in the
 * stream's pending list until the page is taken whole).  So code that calls
 * them, or prefetch(), keeps across the call only what a wait lets it keep: its
 * own pinned blocks, FETCHING blocks (nobody frees one before its fetch
 * ends), and segments at or after the hold of a reader on the stream's
 * list (see cache_stream_trim()).  The lock comes after a channel's (a
 * plan's owner holds its own lock when it adds segments), after a
 * stage's, never before either; a store's locks are never taken under it.
 *
 * Block states and invariants:
 *
 *   state     in table  in an LRU list   data        may be freed
 *   FETCHING  yes       no               being filled no (engine writes)
 *   READY     yes       iff pins == 0    valid        when evicted
 *   FAILED    no        no               garbage      when pins drop to 0
 *
 * An idle READY block is on exactly one of four LRU lists, by its class
 * (block_class() in block.c), each list cold end first:
 *
 *   class     kept  consumed  a reader still needs it   evicted by
 *   SPENT     no    yes       no                        anyone, first
 *   TRAILING  no    yes       a reader behind it, not   prefetch after
 *                             yet within its window     SPENT; demand
 *   AHEAD     no    no        unread: in a window, or   demand only
 *                             fetched for a next-epoch prefetch
 *   KEPT      yes   any       (the scan-resistant set)  demand only, last
 *
 *   - used_bytes is the sum of cap over all allocated blocks plus the
 *     pooled and spare buffers, and never exceeds budget_bytes.  Buffers of a
 * whole block are pooled on eviction and reused, so steady streaming touches no
 * new pages (no page faults, no kernel zeroing); cache_stream_fault_in fills
 * the pool before the first reader, so it need not either.
 *   - prefetch (and recycling) may only evict SPENT, then TRAILING blocks;
 *     a demand read may evict any idle block: SPENT, TRAILING, AHEAD, then
 *     KEPT.  Recycling (CACHE_ADMIT_RECYCLE) reuses only SPENT buffers.
 *   - the kept set: a block admitted while kept_bytes + its cap fit in
 *     kept_quota (half the budget, at most what the window leaves) is
 *     kept, whoever admits it, and stays kept until it is evicted (by
 *     demand only) or goes stale: a kept block not used (pinned) while
 *     kept_horizon() bytes were admitted (two passes of the largest
 *     stream, at least two budgets) becomes ordinary, and the quota it
 *     frees goes to the next blocks admitted.  A repeated scan larger than
 *     the budget therefore finds the part of the data it met first (a
 *     stable part) in memory every time, instead of what it read last
 *     (plain LRU: nothing).  kept_bytes counts kept blocks in any state.
 *   - consumed: a reader moved past the block.  It is set only when no
 *     other reader of the same stream still has the block ahead of its
 *     position within its window (block_passed() in reader.c): then the
 *     block stays AHEAD for that one; when some reader is behind it but
 *     further off, it is TRAILING.  A reader's prefetch that meets a
 *     consumed block inside its window claims it back (consumed = false),
 *     and a reader destroyed gives its window's unread blocks up (they
 *     become consumed) unless another reader claims them.
 *   - windows share the budget: a reader's window is at most
 *     (budget - kept_quota) / readers (at least two blocks), so the
 *     unread blocks that prefetch may not evict never crowd another
 *     reader's window out.
 *   - every block and every object segment holds a reference on its
 *     object, so an object lives as long as anything names it, and a
 *     stream built later for the same version finds its blocks.
 */
#ifndef S3PIPE_CACHE_INTERNAL_H
#define S3PIPE_CACHE_INTERNAL_H

#include <pthread.h>

#include "cache/cache.h"
#include "util/util.h"

/*
 * An object version: what a block belongs to.  Interned in the cache's
 * object table by (bucket, key, ETag, size), so every stream that names the
 * same version (another epoch's order, another channel) finds the same
 * object and its cached blocks.  refs counts the segments, blocks and
 * outside holders (cache_object_get); the last put frees it.
 */
struct cache_object {
	char *bucket; /* in the same allocation as the object */
	char *key;    /* (the same) */
	char *etag;   /* (the same), may be NULL */
	uint64_t size;
	int64_t mtime; /* LastModified, when a HEAD said it; 0: unknown */
	uint64_t hash;
	unsigned long refs;
	struct cache_object *hash_next;
};

/*
 * A piece of a stream: a range of one object, or literal bytes that the
 * stream's owner gave (framing, manifest text).  Empty only as a mark
 * (cache_stream_add_mark), which readers pass over.
 */
struct cache_segment {
	struct cache_object *obj; /* a reference; NULL for literal bytes */
	uint64_t obj_offset;	  /* first byte of obj in this segment */
	char *bytes;		  /* owned literal bytes when obj is NULL */
	uint64_t size;		  /* bytes in the stream, > 0 but in marks */
	uint64_t start;		  /* offset of the first byte in the stream */
	size_t obj_seq;		  /* object segments before this one */
	/* a listing's: objects listed through the one this segment frames
	 * (its ordinal + 1), 0 in a plan */
	uint64_t item;
};

enum cache_block_state { BLOCK_FETCHING, BLOCK_READY, BLOCK_FAILED };

/* The LRU lists of idle blocks, in the order eviction takes them. */
enum cache_lru {
	LRU_SPENT = 0,
	LRU_TRAILING,
	LRU_AHEAD,
	LRU_KEPT,
	LRU_LISTS,
};

struct cache_lru_list {
	struct cache_block *hot;
	struct cache_block *cold;
	uint64_t bytes; /* caps of the blocks on it */
};

struct cache_block {
	struct cache *cache;
	struct cache_object *obj; /* key part 1; a reference */
	uint64_t index;		  /* key part 2: block within the object */
	char *data;
	size_t len;
	size_t cap;    /* bytes of data's buffer */
	size_t charge; /* bytes counted against the budget: cap, and for a
			* small object's block its records and its slots'
			* shares of their slabs past cap (block_record) */
	enum cache_block_state state;
	int error;
	int pins;
	bool consumed; /* a reader moved past it (see the table) */
	bool trailing; /* consumed, but a reader behind still needs it */
	bool kept;     /* in the kept set (counted in kept_bytes) */
	bool in_lru;
	unsigned char lru; /* the list it is on (enum cache_lru) */
	uint64_t used_at;  /* cache->admitted when last pinned or made */
	struct cache_block *hash_next;
	struct cache_block *lru_prev; /* towards the hot end */
	struct cache_block *lru_next; /* towards the cold end */
	pthread_cond_t ready;
};

/* small objects' buffers: slots of size classes in slabs (slab.c) */
#define CACHE_SLAB_MAX	   (16u << 10) /* the largest slot */
#define CACHE_SLAB_CLASSES 33	       /* 64 B to 16 KiB by quarters */
struct slab;
struct cache_slabs {
	struct slab *partial[CACHE_SLAB_CLASSES]; /* slabs with a free slot */
	struct slab *empty;			  /* kept for reuse */
	unsigned nempty;
	uint64_t mapped;      /* bytes of slabs mapped */
	uint64_t trimmed;     /* of which pages given back (no slot in use) */
	uint64_t trims;	      /* madvise calls that gave pages back */
	unsigned since_sweep; /* frees since the last sweep */
};
/* The slot size that holds len bytes (len <= CACHE_SLAB_MAX), else 0. */
size_t cache_slab_cap(size_t len);
/* What n bytes take: for a slot, its share of its slab (the slab's bytes
 * over its slots: the header and the tail no slot fills included); n
 * itself above CACHE_SLAB_MAX. */
size_t cache_slab_charge(size_t n);
/* A slot of cap bytes (a slot size), NULL when there is no memory. */
void *cache_slab_alloc(struct cache_slabs *s, size_t cap);
void cache_slab_free(struct cache_slabs *s, void *p);
/* A zeroed record of n bytes: a slot when n <= CACHE_SLAB_MAX, else from
 * malloc; NULL when there is no memory.  Freed with the same n. */
void *cache_record_alloc(struct cache_slabs *s, size_t n);
void cache_record_free(struct cache_slabs *s, void *p, size_t n);
/* Gives back the pages of the slabs that had no slot in use at the last
 * sweep and have had none since (also every SWEEP_FREES frees). */
void cache_slabs_sweep(struct cache_slabs *s);
/* Gives back the empty slabs kept (every slot freed before). */
void cache_slabs_destroy(struct cache_slabs *s);

/* mapped small buffers kept free for reuse, at most (block.c) */
#define CACHE_SPARE_MAX 64

struct cache {
	struct cache_conf conf; /* with the derived values filled in */
	struct store *store;
	pthread_mutex_t lock;
	pthread_cond_t memory; /* a block became evictable or was freed */
	struct cache_block **table;
	size_t nbuckets; /* power of two */
	size_t nblocks;
	struct cache_object **objects; /* the object table */
	size_t nobject_buckets;	       /* power of two */
	size_t nobjects;
	size_t nsegments; /* alive in every stream, pending ones included */
	struct cache_lru_list lru[LRU_LISTS];
	uint64_t kept_quota; /* the kept set's bytes, at most */
	uint64_t kept_bytes; /* caps of the kept blocks */
	/* caps of every block ever made: the clock kept blocks age by */
	uint64_t admitted;
	uint64_t largest_stream; /* the most bytes any stream listed */
	unsigned nreaders;	 /* readers alive (they share the budget) */
	/* the background fault-in (cache_stream_fault_in): buffers still to
	 * fault in, and whether it must stop (the cache is going) */
	pthread_t fault_in_thread;
	bool fault_in_started;
	bool fault_in_stop;
	uint64_t fault_in_left;
	char **pool; /* free buffers of block_size bytes, kept to reuse */
	size_t pool_count;
	size_t pool_max;
	/* free mapped buffers of small objects (block.c), kept for the next
	 * of the same size and counted in used_bytes like the pool */
	struct cache_slabs slabs;
	char *spare[CACHE_SPARE_MAX];
	size_t spare_cap[CACHE_SPARE_MAX];
	unsigned nspare;
	uint64_t spare_bytes;
	unsigned run_max; /* blocks per prefetch GET */
	/* bytes of a piece (a small read's unit: cache_piece_size()), or 0
	 * when blocks are too small to have pieces */
	uint64_t piece_size;
	uint64_t lent_bytes; /* buffers lent to stages (cache_buffer_get) */
	struct cache_stats stats;
};

/*
 * Pieces: blocks of piece_size bytes (the object's last may be shorter)
 * for readers that jump about (a reader with no window: a random reader,
 * or any reader just after a seek), so that a small read costs a small GET.
 * They live in the same table, LRU lists and budget as whole blocks, keyed
 * by (object, CACHE_PIECE_BIT | offset / piece_size); the same bytes may be
 * in a piece and a block at once (they are one version's: both are right).
 * A block in memory is always used before a piece.
 */
#define CACHE_PIECE_BIT (1ULL << 63)

/* The object offset where block (or piece) index starts. */
static inline uint64_t cache_block_offset(const struct cache *c, uint64_t index)
{
	if (index & CACHE_PIECE_BIT)
		return (index & ~CACHE_PIECE_BIT) * c->piece_size;
	return index * c->conf.block_size;
}

struct cache_stream {
	struct cache *cache;
	char *bucket; /* NULL for a plan stream (no listing) */
	char *prefix;
	struct cache_segment **segs; /* segments [base, count); pointers
					stay put when segs grows */
	size_t base; /* segments below it were dropped (a trimmed stream) */
	uint64_t base_offset;  /* where segment base starts (listed_bytes
				  when every segment was dropped) */
	size_t count;	       /* segments added: indices are from the start */
	size_t cap;	       /* of segs */
	bool trim;	       /* drop segments every reader has passed */
	size_t nobject_segs;   /* segments that are object ranges */
	uint64_t listed_bytes; /* end offset of the last segment */
	bool complete;
	bool listing; /* a page request is in flight */
	bool closing; /* cache_stream_destroy() waits for the last page */
	/* the furthest segment a reader asked for (cache_stream_need): the
	 * listing goes on while it is near the end */
	size_t wanted;
	int error;     /* last listing error, cleared by the next request */
	int end_error; /* set by cache_stream_end(): reading past the end */
	/* the size its owner says the stream will have once complete
	 * (cache_stream_set_size); 0 with !sized */
	uint64_t final_bytes;
	bool sized;
	char *next_token;
	/* a listing read back from a file, not listed (cache_stream_create_
	 * saved); a file the pages taken are written to (cache_stream_record)
	 */
	struct cache_listing_file *saved;
	struct cache_listing_writer *record;
	/* a saved listing to go on from once it is there (cache_stream_
	 * prefer_saved): its path, the age it may have, the file last seen
	 * (inode and modification time: checked again when they change) */
	char *prefer_path;
	uint64_t prefer_max_age;
	uint64_t prefer_seen_ino, prefer_seen_mtime_ns;
	char *last_key; /* the last object listed (a page's last) */
	/* a resumed listing's first page starts after this key (cache_
	 * stream_resume); where the stream notes where it could go on from
	 * (cache_stream_keep_resume), under resume_tag */
	char *start_after;
	struct cache_resume *resume_at;
	uint64_t resume_tag;
	/* non-empty objects listed before the one being framed (their
	 * ordinal in the listing, for on-listed functions that keep a share) */
	uint64_t listed_objects;
	cache_on_listed_fn *on_listed; /* turns a listed object into segments */
	void *on_listed_arg;
	cache_refill_fn *refill; /* a plan stream's owner, asked for more */
	void *refill_arg;
	/* the page being framed (framing): its segments, seen by readers
	 * once it is taken whole; start and obj_seq are set then */
	bool framing;
	struct cache_segment **pending;
	size_t npending, pending_cap;
	uint64_t pending_bytes;
	struct cache_reader *readers; /* alive on this stream */
	struct cache_hold *holds;     /* (cache_hold_create) */
	pthread_cond_t grown;	      /* segments added, complete, or error */
};

/* How a new block may find memory. */
enum cache_admit {
	CACHE_ADMIT_PREFETCH = 0, /* evict only SPENT, then TRAILING blocks */
	CACHE_ADMIT_DEMAND = 1,	  /* evict any idle block */
	/* as PREFETCH, but reuse a SPENT block's buffer before growing:
	 * for streams not known to fit in the cache (larger, or still being
	 * listed), whose consumed blocks need not survive until the next
	 * epoch; saves faulting in fresh pages and keeps RSS to the window */
	CACHE_ADMIT_RECYCLE = 2,
};

/* ---- cache.c ---- */
/* The piece size for blocks of block_size bytes: CACHE_PIECE_SIZE, or
 * half of it when that divides block_size and it does not; 0 (no pieces)
 * when neither divides block_size or a block is no larger than a piece. */
uint64_t cache_piece_size(uint64_t block_size);
/* The cache's lock (c->lock), for the unit tests. */
void cache_lock(struct cache *c);
void cache_unlock(struct cache *c);

/* ---- object.c (cache->lock held) ---- */
void cache_object_table_free(struct cache *c);
/* cache_object_get() and cache_object_put() with the lock held, and a
 * reference more. */
struct cache_object *cache_object_intern(struct cache *c, const char *bucket,
					 const char *key, const char *etag,
					 uint64_t size);
void cache_object_unref(struct cache *c, struct cache_object *o);
void cache_object_ref(struct cache_object *o);
/* Bytes of o's record: the object and its names. */
size_t cache_object_bytes(const struct cache_object *o);

/* ---- block.c (cache->lock held unless noted) ---- */
/* Bytes in block index of obj: block_size (piece_size for a piece), or
 * less for the object's last. */
size_t cache_block_len(const struct cache *c, const struct cache_object *obj,
		       uint64_t index);
struct cache_block *cache_block_lookup(struct cache *c,
				       const struct cache_object *obj,
				       uint64_t index);
/*
 * Allocates a FETCHING block of len bytes and inserts it in the table,
 * evicting as admit allows.  Returns NULL when the budget cannot make room.
 */
struct cache_block *cache_block_create(struct cache *c,
				       struct cache_object *obj, uint64_t index,
				       size_t len, enum cache_admit admit);
void cache_block_pin(struct cache_block *b);
void cache_block_unpin(struct cache_block *b);
/*
 * Sets whether b was consumed, and whether a reader behind still needs it
 * (trailing), moving it to its list when it is idle.
 */
void cache_block_set_consumed(struct cache_block *b, bool consumed,
			      bool trailing);
/*
 * Starts one GET that fills blocks[0..n), consecutive blocks of one object,
 * all whole blocks or all pieces (FETCHING, just made); each becomes READY as
 * soon as its own bytes are in.  The lock is dropped while the store takes the
 * GET.  When the GET cannot even start they are FAILED on return (and their
 * waiters woken).
 */
void cache_block_fetch(struct cache_block *const *blocks, unsigned n,
		       bool urgent);
/* True when a block of len bytes of obj (NULL: a whole block) could be
 * made to fit by evicting. */
bool cache_block_room(struct cache *c, const struct cache_object *obj,
		      size_t len, bool demand);
/* True when whole blocks of bytes in all would fit with prefetch's
 * evictions (a run of blocks). */
bool cache_block_room_run(struct cache *c, uint64_t bytes);

/* Frees a block buffer of cap bytes (buffer_cap()'s) as it was made. */
void cache_buffer_free(struct cache *c, char *data, size_t cap);
/* Frees the spare buffers (the cache going away). */
void cache_spares_free(struct cache *c);
/* Frees b's memory (its buffer may go to the pool); b must be out of the
 * table and the LRU, or the whole cache going away. */
void cache_block_free(struct cache *c, struct cache_block *b);

/* ---- stream.c (cache->lock held unless noted) ---- */
/* Index of the segment holding offset, or s->count if beyond the listing
 * (s->base when offset lies in what a trimmed stream dropped). */
size_t cache_stream_find(const struct cache_stream *s, uint64_t offset);
/*
 * Waits until segment idx is listed.  Returns 0, ENODATA at the end of a
 * complete listing, or EIO when the listing failed.
 */
int cache_stream_wait(struct cache_stream *s, size_t idx);
/* The stream's final size when known (complete, or told by its owner);
 * false when an error ended it early. */
bool cache_stream_known_size(const struct cache_stream *s, uint64_t *size);
/*
 * Asks for the next listing page, or a plan's owner for more segments
 * (its refill function), if the frontier idx is getting close.  The lock is
 * dropped during the call out.
 */
void cache_stream_need(struct cache_stream *s, size_t idx);
/* Appends one listed object of s->bucket (skipping empty ones) through
 * the stream's on-listed function, to the page being taken (lock not held: the
 * page's taker only); for tests as well. */
int cache_stream_append(struct cache_stream *s, const char *key,
			const char *etag, uint64_t size);
/* Segment idx of s (base <= idx < count). */
static inline struct cache_segment *
cache_stream_seg(const struct cache_stream *s, size_t idx)
{
	return s->segs[idx - s->base];
}
/* Drops the segments every reader of a trimmed stream has passed. */
void cache_stream_trim(struct cache_stream *s);

/* The block of segment seg's object holding stream offset off. */
static inline uint64_t cache_segment_block(const struct cache *c,
					   const struct cache_segment *seg,
					   uint64_t off)
{
	return (seg->obj_offset + (off - seg->start)) / c->conf.block_size;
}

/* A hold's mark on its stream (cache_hold_create). */
struct cache_hold {
	struct cache_stream *stream;
	size_t idx;			/* segments from here on are kept */
	struct cache_hold *next, *prev; /* on stream->holds */
};

/* ---- reader.c ---- */

struct cache_reader {
	struct cache_stream *stream;
	uint64_t pos;	/* next byte to return */
	size_t seg_idx; /* segment holding pos (count when past the list) */
	/* the segment its latest read began in: that read's view may point
	 * into literal segments from there on until the next read (one read
	 * at a time per reader), so a trimmed stream keeps them */
	size_t hold;
	/* prefetch frontier: the first block not yet requested */
	size_t prefetch_seg;
	uint64_t prefetch_block;
	uint64_t prefetch_offset; /* stream offset of that block */
	uint64_t window;
	uint64_t max_window; /* the window's cap */
	uint64_t end;	     /* reads and prefetch stop here; 0 = never */
	/* read at any offset (cache_reader_create_random): the window
	 * starts empty and grows only while reads go on in sequence; with
	 * no window (a random reader, or any reader after a seek) a read
	 * fetches pieces (cache_fetch_unit()) */
	bool random;
	/* where its latest read began (once it read): a read again from
	 * within that read is not a seek */
	bool has_read;
	uint64_t read_start;
	struct cache_reader *next, *prev; /* on stream->readers */
};

/* The window r may claim now: its own, within its share of the budget. */
uint64_t cache_reader_window(const struct cache_reader *r);

/* Why a prefetch stopped short of its limit (or did not). */
enum cache_prefetch_stop {
	PREFETCH_DONE = 0, /* the limit, the objects-ahead cap or the end */
	PREFETCH_UNLISTED, /* the stream has no more segments yet */
	PREFETCH_BUDGET,   /* no room without evicting unread data */
	PREFETCH_WAIT,	   /* waiting to send a whole run */
};

/* ---- lister.c ---- */

/* digits a number's value counts at most, and its largest span */
#define NUMBER_POSITIONS 40
#define NUMBER_SPAN	 ((unsigned __int128)1 << 100)
/* where a range's groups may start after its last key, at most: the
 * other digits at the level, the rest of each digit before it, the rest
 * of the number */
#define BOUNDS_MAX  (62 + NUMBER_POSITIONS + 1)
#define SPLIT_PARTS (BOUNDS_MAX + 1)

/*
 * The number a range's last key counts in (see lister.c): the bytes
 * [start, end) of key, digits of one class (and separators between
 * them), read as a value in radix ndigits; level: the byte where the
 * keys of its page differ.  digits NULL: the keys differ at a character
 * of no class.
 */
struct lister_number {
	const char *key; /* not owned */
	size_t start, level, end;
	const char *digits; /* the class, in byte order */
	unsigned ndigits;
	bool numeric;		/* separators join digits */
	unsigned positions;	/* digits counted in the value */
	unsigned __int128 span; /* ndigits ^ positions */
	double density;		/* keys a unit of value; 0: not known */
};

/* One of the parts a split shares a range's keys among. */
struct lister_part {
	char *after; /* its keys come after this one (owned); NULL: the
			range's own part */
	double keys; /* estimated; -1: not known */
	bool guess;  /* the estimate is a guess past the keys seen */
};

/* the UNITTEST functions (util/util.h) of the cache's sources */
#ifdef UNITTESTS
/* block.c */
bool evict_one(struct cache *c, bool demand);
size_t buffer_cap(const struct cache *c, size_t len);
enum cache_lru block_class(const struct cache_block *b);
uint64_t kept_horizon(const struct cache *c);
void kept_expire(struct cache *c);
/* stream.c (lock not held) */
int take_page(struct cache_stream *s, struct store_list_page *page);
/* lister.c */
bool number_init(struct lister_number *nb, size_t fixed, const char *first,
		 const char *last, const char *seen);
void number_density(struct lister_number *nb, const char *from, uint64_t count);
unsigned split_plan(const struct lister_number *nb, const char *until,
		    unsigned room, double min_keys, struct lister_part *parts);
/* reader.c */
void frontier_to_position(struct cache_reader *r);
uint64_t fetch_unit(const struct cache *c, const struct cache_object *obj,
		    uint64_t at, uint64_t until, bool small);
enum cache_prefetch_stop prefetch(struct cache_reader *r, uint64_t ahead,
				  bool urgent, bool may_list);
#endif

/* ---- ETags as a catalog and a saved listing keep them (catalog.c) ---- */

#define CACHE_ETAG_MD5_BYTES 16

enum cache_etag_kind {
	CACHE_ETAG_NONE = 0,
	CACHE_ETAG_MD5,	       /* "<32 hex>" */
	CACHE_ETAG_MD5_SUFFIX, /* "<32 hex><suffix>": the suffix kept as text */
	CACHE_ETAG_TEXT,       /* anything else, whole, as text */
};

/* How etag is kept: its kind, the 16 bytes of an MD5 and the text kept
 * beside them (*extra, NULL when none). */
enum cache_etag_kind cache_etag_split(const char *etag,
				      unsigned char md5[CACHE_ETAG_MD5_BYTES],
				      const char **extra);
struct cache_catalog;

/* An entry as a catalog keeps it: its name past the prefix (the ETag's
 * text, when its kind keeps one, follows the name's NUL), its ETag's kind
 * and MD5 bytes. */
struct catalog_raw {
	const char *name;
	const unsigned char *md5;
	enum cache_etag_kind kind;
};
void catalog_entry_raw(const struct cache_catalog *cat, uint32_t entry,
		       struct catalog_raw *raw);

/* A catalog image mapped in place (catalog_image.c): its arrays, entry i
 * of the catalog it was written from at index i, and its positions in key
 * order (pos, or entry p at position p when pos is NULL).  A catalog that
 * takes an image over (cache_catalog_adopt_image) fills every field and
 * then publishes base (release): a reader that loads base (acquire) and
 * sees it set may read the rest. */
struct catalog_image {
	void *base;
	size_t bytes;
	size_t count;
	size_t npos;	     /* positions */
	const uint32_t *pos; /* NULL: position p is entry p */
	int64_t listed_at;
	const uint64_t *size;
	const uint32_t *mtime;
	const unsigned char *md5; /* count x CACHE_ETAG_MD5_BYTES */
	const unsigned char *kind;
	const uint64_t *name; /* offsets into text */
	const char *text;     /* ends with two NULs */
	uint64_t text_bytes;
};
/* The image in fd mapped read-only, checked, for bucket and prefix: 0, or
 * EINVAL with *why (not finished, another version, sections that do not
 * fit, another bucket or prefix), or an errno. */
int catalog_image_map(int fd, const char *bucket, const char *prefix,
		      struct catalog_image *im, const char **why);
void catalog_image_unmap(struct catalog_image *im);
/* Whether cat's positions are its entries (catalog.c). */
bool catalog_positions_identity(const struct cache_catalog *cat);

/* An ETag goes into an If-Match header: not too long, and no control
 * character (CR, LF) whatever listed it or whichever file it came from. */
bool cache_etag_valid(const char *etag);
/* A time as kept: seconds since the epoch within 32 bits (to 2106). */
uint32_t cache_mtime_clamp(int64_t mtime);

#endif
