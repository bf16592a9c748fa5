/*
 * channel internals shared by the files of channel/ and the unit tests:
 * entries (what one epoch orders, kept compactly), manifest parsing, the epoch
 * order (shuffle and shard) and RecordIO framing.
 */
#ifndef S3PIPE_CHANNEL_INTERNAL_H
#define S3PIPE_CHANNEL_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "channel/channel.h"
#include "channel/stage.h"

/* ---- channel/entries.c: what a manifest's epochs order, compactly ---- */

/*
 * The unit an epoch shuffles and shards is an entry: one object
 * (ManifestFile) or one manifest line (AugmentedManifestFile), whose items
 * are objects or literal bytes (an attribute that is not a "-ref"), in
 * AttributeNames order.  The objects are kept in catalogs (cache/catalog.h),
 * one per bucket and prefix, each named by a ref; an entry is a few bytes
 * beside them.  A manifest names keys, not sizes: an object's size and ETag
 * are learnt (from a HEAD) into its catalog, and its state says how far
 * that got.
 */
struct channel_entries;
struct cache_catalog;
struct cache_object;
struct cache;

/* An object of the entries: catalog number << 32 | catalog entry. */
typedef uint64_t channel_ref;

/* One item of an entry, as channel_entry_next() reads it. */
struct channel_item {
	bool object;	  /* else literal bytes */
	channel_ref ref;  /* the object */
	const char *text; /* the literal bytes (a NUL follows them) */
	size_t text_len;
};

/* One entry, as channel_entries_get() reads it; its items follow with
 * channel_entry_next(). */
struct channel_entry {
	unsigned long line; /* 1-based line in an augmented manifest, else 0 */
	const char *error;  /* set when the line cannot be streamed (a missing
			       attribute, a -ref that is not an s3:// URI):
			       reading reaches it and fails with EIO, logging
			       this, which names the line; else NULL */
	unsigned nitems;
	/* (the items not read yet: at next, or the identity's one) */
	const unsigned char *next;
	unsigned left;
	size_t identity;
};

struct channel_entries *channel_entries_create(void);
void channel_entries_destroy(struct channel_entries *e); /* NULL is fine */
/* Forgets every entry (a parse that failed). */
void channel_entries_clear(struct channel_entries *e);
size_t channel_entries_count(const struct channel_entries *e);
/* Bytes held: entries, catalogs, states. */
uint64_t channel_entries_memory(const struct channel_entries *e);

/* buckets and prefixes (catalogs) of one channel's objects, at most */
#define CHANNEL_ENTRIES_BUCKETS_MAX 256

/* Building an entry: begin, items, end.  0 or ENOMEM (ENOSPC for an
 * object past CHANNEL_ENTRIES_BUCKETS_MAX buckets and prefixes). */
int channel_entries_begin(struct channel_entries *e, unsigned long line);
/* The object key (which starts with prefix, the catalog it goes into) of
 * bucket. */
int channel_entries_add_object(struct channel_entries *e, const char *bucket,
			       const char *prefix, const char *key);
int channel_entries_add_text(struct channel_entries *e, const char *text,
			     size_t len);
/* Marks the entry being built unreadable; only the first message stays.
 * (printf-style; at most 512 bytes kept.) */
void channel_entries_fail(struct channel_entries *e, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
bool channel_entries_failed(const struct channel_entries *e);
int channel_entries_end(struct channel_entries *e);

/* Entry i (< count) into *out. */
void channel_entries_get(const struct channel_entries *e, size_t i,
			 struct channel_entry *out);
/* Its next item into *it: false after the last. */
bool channel_entry_next(struct channel_entry *en, struct channel_item *it);

/* An object's state; learning and reading it are under one lock (the
 * channel's). */
enum channel_object_state {
	CHANNEL_OBJECT_UNKNOWN = 0, /* no HEAD yet */
	CHANNEL_OBJECT_RESOLVING,   /* a HEAD is queued or in flight */
	CHANNEL_OBJECT_KNOWN,	    /* size and ETag learnt */
	CHANNEL_OBJECT_FAILED,	    /* its HEAD failed: see the error */
};
enum channel_object_state channel_entries_state(const struct channel_entries *e,
						channel_ref ref, int *error);
/* Sets ref's state (error: an errno, for CHANNEL_OBJECT_FAILED). */
void channel_entries_set_state(struct channel_entries *e, channel_ref ref,
			       enum channel_object_state state, int error);
/* What a HEAD told of ref's object: KNOWN, or FAILED with ENOMEM or
 * EINVAL (a hostile ETag); returns that errno or 0. */
int channel_entries_learn(struct channel_entries *e, channel_ref ref,
			  const struct cache_object *obj);
const char *channel_entries_bucket(const struct channel_entries *e,
				   channel_ref ref);
/* The prefix of its catalog: its key starts with it. */
const char *channel_entries_prefix(const struct channel_entries *e,
				   channel_ref ref);
/* The object's whole key into buf (CACHE_KEY_MAX + 1 bytes: 1025). */
void channel_entries_key(const struct channel_entries *e, channel_ref ref,
			 char *buf, size_t len);
/* Its size, once known. */
uint64_t channel_entries_size(const struct channel_entries *e, channel_ref ref);
/* Its object as learnt, interned (a reference for the caller): NULL on
 * ENOMEM. */
struct cache_object *channel_entries_object(struct cache *c,
					    const struct channel_entries *e,
					    channel_ref ref);

/* ---- channel/manifest.c ---- */

#define CHANNEL_MANIFEST_MAX	  (1ULL << 30) /* bytes of one manifest */
#define CHANNEL_MANIFEST_LINE_MAX (1u << 20)   /* bytes of one JSON line */

/*
 * A ManifestFile, text[0..len): a JSON array whose first element is
 * {"prefix": "s3://bucket/prefix/"} and whose other elements are keys
 * relative to it (strings).  Appends one single-item entry per key, in
 * manifest order; the item's bucket is the prefix's bucket, its key the
 * prefix followed by the relative key (in the catalog of that bucket and
 * prefix).
 * Returns 0; EINVAL with one line in err (what is wrong and where:
 * "manifest element 3 is not a string"); ENOMEM.  On error out is cleared.
 */
int channel_manifest_parse(const char *text, size_t len,
			   struct channel_entries *out, char *err,
			   size_t errlen);

/*
 * An AugmentedManifestFile, text[0..len): JSON Lines, one object per line
 * (empty lines skipped).  For each line, one entry with one item per name
 * in attributes[0..nattributes): a name ending in "-ref" must hold an
 * s3:// URI string, whose object is the item; any other value becomes
 * literal bytes: a string's contents without quotes (escapes decoded),
 * anything else the value's JSON text as written in the line (2.50 stays
 * 2.50, an object keeps its inner spacing).  A line missing an attribute
 * (or a -ref that is not an s3:// URI string) still gives an entry, with
 * error set ("augmented manifest line 7: attribute 'label' is missing").
 * A line that is not a JSON object, not UTF-8, or longer than
 * CHANNEL_MANIFEST_LINE_MAX stops the parse: EINVAL with the line number
 * in err.  ENOMEM.  On error out is cleared.
 */
int channel_augmented_parse(const char *text, size_t len,
			    char *const *attributes, size_t nattributes,
			    struct channel_entries *out, char *err,
			    size_t errlen);

/* ---- channel/tree.c ---- */

struct cache_catalog;

/*
 * The tree of spec's FastFile channel over the listed catalog cat (both
 * outlive it): this host's share when sharded.  NULL with one line in err
 * (ENOMEM).
 */
struct channel_tree *channel_tree_create(struct cache *cache,
					 const struct cache_catalog *cat,
					 const struct channel_spec *spec,
					 const struct channel_host *host,
					 char *err, size_t errlen);
void channel_tree_destroy(struct channel_tree *t);
/* Bytes the index and the order followed take. */
uint64_t channel_tree_memory(const struct channel_tree *t);

/* ---- channel/order.c: an epoch's order and this host's share ---- */

/*
 * The generator behind the shuffle, specified exactly in s3pipe(1) so
 * that other tools can reproduce an epoch's order:
 *
 *   mix(z):  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
 *            z = (z ^ (z >> 27)) * 0x94D049BB133111EB
 *            return z ^ (z >> 31)                     (all mod 2^64)
 *   start:   state = mix(mix(seed as uint64) ^ epoch)
 *   next():  state = state + 0x9E3779B97F4A7C15; return mix(state)
 *   below(m), 0 <= r < m: r = next() until r < 2^64 - (2^64 mod m);
 *            return r mod m
 *
 * (SplitMix64's output function and increment, keyed by seed and epoch.)
 */
struct channel_rng {
	uint64_t state;
};

void channel_rng_init(struct channel_rng *rng, int64_t seed, uint64_t epoch);
uint64_t channel_rng_next(struct channel_rng *rng);
uint64_t channel_rng_below(struct channel_rng *rng, uint64_t m); /* m >= 1 */

/*
 * Puts items[0..n) in the epoch's order: as they are when !shuffle, else
 * Fisher-Yates from the last position down:
 *   for i = n-1 down to 1: j = below(i + 1); swap items i, j
 */
void channel_shuffle(uint32_t *items, size_t n, bool shuffle, int64_t seed,
		     uint64_t epoch);
/* The same Fisher-Yates, drawing from rng as it stands (n may be 0). */
void channel_shuffle_with(struct channel_rng *rng, uint32_t *items, size_t n);

/* The epoch's order of n entries: order = 0..n-1, then channel_shuffle. */
void channel_order(uint32_t *order, size_t n, bool shuffle, int64_t seed,
		   uint64_t epoch);

/*
 * This host's share of an epoch's order: keeps the positions p with
 * p mod host->count == host->index, in order, moving them to the front.
 * Returns how many remain.
 */
size_t channel_shard(uint32_t *order, size_t n,
		     const struct channel_host *host);

/* ---- channel/recordio.c: MXNet-style RecordIO framing ---- */

#define CHANNEL_RECORDIO_MAGIC 0xCED7230Au
/* payloads longer than this are split into parts (the length word has 29
 * bits); each part but the last is this long, a multiple of 4, so only the
 * last part is padded */
#define CHANNEL_RECORDIO_PART_MAX ((1u << 29) - 4)
#define CHANNEL_RECORDIO_HEADER	  8

enum channel_recordio_flag {
	RECORDIO_WHOLE = 0,
	RECORDIO_START = 1,
	RECORDIO_MIDDLE = 2,
	RECORDIO_END = 3,
};

/* Writes the 8-byte header of a part: magic, then (flag << 29) | len, both
 * little-endian u32.  len < 2^29. */
void channel_recordio_header(unsigned char out[CHANNEL_RECORDIO_HEADER],
			     enum channel_recordio_flag flag, uint32_t len);

/* Reads a part's header: 0, or EINVAL when the magic or the flag is
 * wrong. */
int channel_recordio_parse_header(
    const unsigned char in[CHANNEL_RECORDIO_HEADER],
    enum channel_recordio_flag *flag, uint32_t *len);

/* Zero bytes after a part of len bytes (0-3). */
unsigned channel_recordio_padding(uint64_t len);

/*
 * How a payload of len bytes is framed with parts of at most part_max
 * bytes (CHANNEL_RECORDIO_PART_MAX; a smaller multiple of 4 in tests):
 * the number of parts (1 when len <= part_max, including len 0).  Part i
 * covers payload bytes [i * part_max, min(len, (i + 1) * part_max)) and is
 * flagged WHOLE when alone, else START, MIDDLE..., END.
 */
uint64_t channel_recordio_parts(uint64_t len, uint64_t part_max);
enum channel_recordio_flag channel_recordio_part_flag(uint64_t part,
						      uint64_t parts);

/* Bytes a framed payload of len takes: headers, payload, padding. */
uint64_t channel_recordio_framed_size(uint64_t len, uint64_t part_max);

/* ---- channel/records.c: where an epoch's records begin ---- */

struct channel_records {
	enum channel_record_format format;
	uint64_t pos;	  /* bytes consumed */
	uint64_t records; /* records begun before pos (lines: ended) */
	uint64_t part_at; /* RecordIO: where the part being read began */
	uint64_t skip;	  /* RecordIO: bytes of the part still to pass */
	unsigned have;	  /* RecordIO: header bytes held */
	bool open;	  /* inside a record (a line begun, a START part) */
	unsigned char header[CHANNEL_RECORDIO_HEADER];
	int error; /* EBADMSG once malformed: why, and where */
	const char *why;
	uint64_t error_at;
};

void channel_records_init(struct channel_records *r,
			  enum channel_record_format format);
/*
 * Consumes the next bytes of the epoch, up to where record target begins:
 * the bytes consumed, with *reached true when the scan stopped there (r->pos
 * is then its offset).  Nothing more is consumed once r->error is set.
 */
size_t channel_records_feed(struct channel_records *r, const void *bytes,
			    size_t len, uint64_t target, bool *reached);
/* Whether the scan is between two records (none begun and not ended). */
bool channel_records_between(const struct channel_records *r);
/* The epoch ended at r->pos: 0 (r->records counts every record), or
 * EBADMSG when it ends inside a RecordIO record (or was malformed). */
int channel_records_end(struct channel_records *r);

#endif
