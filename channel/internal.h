/*
 * channel internals shared by the files of channel/ and the unit tests:
 * entries (what one epoch orders), manifest parsing, the epoch order
 * (shuffle and shard) and RecordIO framing.
 */
#ifndef S3PIPE_CHANNEL_INTERNAL_H
#define S3PIPE_CHANNEL_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "channel/channel.h"
#include "channel/stage.h"

/*
 * One piece of an entry: an object's bytes, or literal bytes (an augmented
 * manifest attribute that is not a "-ref").  With RecordIO each item is one
 * record.
 */
struct cache_object;

struct channel_item {
	char *bucket; /* owned; NULL for literal bytes */
	char *key;    /* owned; NULL for literal bytes */
	char *text;   /* owned literal bytes (not NUL-terminated for the
			 stream's purposes, though a NUL follows); NULL for
			 an object */
	size_t text_len;
	/* channel.c, under the channel's lock: the object's size and ETag
	 * once a HEAD told them (kept here, not as an object, so that an
	 * epoch read holds no object a key: the stream interns one while
	 * its segment lives), whether a HEAD for it is queued or in flight
	 * (the queue's next), and how that failed */
	bool known;
	uint64_t size;
	bool md5_form;	       /* the ETag is "<32 hex digits>[-<parts>]" */
	unsigned char md5[16]; /* its digits then */
	uint16_t parts;	       /* and "-<parts>" after them (multipart) */
	char *etag;	       /* owned: any other ETag, else NULL */
	bool resolving;
	int error;
	struct channel_item *resolve_next;
};

/*
 * The unit an epoch shuffles and shards: one object (S3Prefix,
 * ManifestFile) or one manifest line (AugmentedManifestFile, one item per
 * attribute, in AttributeNames order).
 */
struct channel_entry {
	struct channel_item *items; /* owned array of nitems */
	unsigned nitems;
	unsigned long line; /* 1-based line in an augmented manifest, else 0 */
	char *error; /* owned; set when the line cannot be streamed (a missing
			attribute, a -ref that is not an s3:// URI): reading
			reaches it and fails with EIO, logging this, which
			names the line */
};

struct channel_entries {
	struct channel_entry *entries; /* owned array */
	size_t count;
	size_t cap;
	char *prefix; /* a ManifestFile's prefix (owned): its keys start
			 with it; NULL otherwise */
};

void channel_entries_free(struct channel_entries *e);

/* ---- channel/manifest.c ---- */

#define CHANNEL_MANIFEST_MAX	  (1ULL << 30) /* bytes of one manifest */
#define CHANNEL_MANIFEST_LINE_MAX (1u << 20)   /* bytes of one JSON line */

/*
 * A ManifestFile, text[0..len): a JSON array whose first element is
 * {"prefix": "s3://bucket/prefix/"} and whose other elements are keys
 * relative to it (strings).  Appends one single-item entry per key, in
 * manifest order; the item's bucket is the prefix's bucket, its key the
 * prefix followed by the relative key; out->prefix gets the prefix.
 * Returns 0; EINVAL with one line in err (what is wrong and where:
 * "manifest element 3 is not a string"); ENOMEM.  On error out is freed.
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
 * in err.  ENOMEM.  On error out is freed.
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

#endif
