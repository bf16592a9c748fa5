/*
 * object counts: what each object of a channel adds to its epoch files
 * when the bytes there are not the object's own (gunzip) or its records
 * have to be counted (lines, RecordIO as stored): the bytes it makes and
 * the records that begin in it.  A record scan measures the objects it
 * reads whole (channel/reader.c, resuming at a record), and a later resume
 * passes over every measured object without reading it: one object's
 * bytes instead of the epoch's.
 *
 * Only a "closed" object is kept: one whose bytes begin and end between
 * records, so that what it adds does not depend on the objects around it,
 * in any order (an object whose last line has no '\n' runs into the next,
 * and is read each time).  An object is known by its key, ETag and size:
 * one that changed is read again.  With --cache-dir the counts are saved
 * beside the channel's saved listing (its name, ".counts-" and a tag of
 * the channel's stages: another gunzip or record format is another file),
 * 32 bytes an object, and a later mount takes them; the same image goes
 * into the keeper's memfd for the channel's records, where the next
 * worker takes it (without --cache-dir too).  At most 4,194,304
 * objects are kept (43 to 85 bytes each in memory); the rest are read.
 *
 * An object larger than a block whose bytes are its own keeps points
 * too: where the first record at or after each of its block boundaries
 * begins, so that a resume starts at the block where its record is.
 *
 * A RecordIO-wrapped gzip object also keeps its payload's length (what it
 * inflates to), once the wrapping stage had to count it (channel/wrap.h):
 * its header is then written before its bytes, inflated once.
 */
#ifndef S3PIPE_CHANNEL_OBJECT_COUNTS_H
#define S3PIPE_CHANNEL_OBJECT_COUNTS_H

#include <stdbool.h>
#include <stdint.h>

#include "cache/cache.h"

struct channel;
struct object_counts;

/* The id of the object a segment holds whole: its key, ETag and size;
 * false for literal bytes, part of an object, or an object without an
 * ETag. */
bool object_counts_id(const struct cache_segment_info *info, uint64_t *id);

/* The channel's counts, loaded from beside its saved listing on first use
 * (or empty); NULL on ENOMEM.  They live as long as the channel. */
struct object_counts *object_counts_get(struct channel *ch);
/* A payload's length not known */
#define OBJECT_COUNTS_UNKNOWN UINT64_MAX

/* What object id adds to an epoch: true with *bytes, *records and (when
 * not NULL) *payload (OBJECT_COUNTS_UNKNOWN when not known) when it was
 * measured. */
bool object_counts_find(struct object_counts *oc, uint64_t id, uint64_t *bytes,
			uint64_t *records, uint64_t *payload);
/* Object id adds bytes and records (measured by a scan), and its payload
 * is that long (or OBJECT_COUNTS_UNKNOWN: the one known stays, when bytes
 * and records are what they were). */
void object_counts_add(struct object_counts *oc, uint64_t id, uint64_t bytes,
		       uint64_t records, uint64_t payload);
/*
 * Where records begin inside an object larger than a block, for a resume
 * to start there and not at the object's start (objects whose bytes in
 * the epoch are their own): for each of its block boundaries after the
 * first, the first record that begins at or after it, by its offset in the
 * object and the records of the object before it.
 */
struct object_point {
	uint64_t records;
	uint64_t at;
};

/* Object id's points, in order (copied; the last ones kept replace). */
void object_counts_add_points(struct object_counts *oc, uint64_t id,
			      const struct object_point *points, size_t n);
/* The last point of object id with at most records before it: true with
 * *point, false when it has none such. */
bool object_counts_point(struct object_counts *oc, uint64_t id,
			 uint64_t records, struct object_point *point);
/* How many objects are measured. */
uint64_t object_counts_count(struct object_counts *oc);
/* With --cache-dir, the counts saved beside the listing when some were
 * added since they were loaded or saved (a warning when that fails). */
void object_counts_save(struct channel *ch);
void object_counts_destroy(struct object_counts *oc);

#endif
