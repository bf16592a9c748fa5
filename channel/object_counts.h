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
 * 24 bytes an object, and a later mount takes them; the same image goes
 * into the keeper's memfd for the channel's records, where the next
 * worker takes it (without --cache-dir too).  At most 4,194,304
 * objects are kept (32 to 64 bytes each in memory); the rest are read.
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
/* What object id adds to an epoch: true with *bytes and *records when it
 * was measured. */
bool object_counts_find(struct object_counts *oc, uint64_t id, uint64_t *bytes,
			uint64_t *records);
/* Object id adds bytes and records (measured by a scan). */
void object_counts_add(struct object_counts *oc, uint64_t id, uint64_t bytes,
		       uint64_t records);
/* How many objects are measured. */
uint64_t object_counts_count(struct object_counts *oc);
/* With --cache-dir, the counts saved beside the listing when some were
 * added since they were loaded or saved (a warning when that fails). */
void object_counts_save(struct channel *ch);
void object_counts_destroy(struct object_counts *oc);

#endif
