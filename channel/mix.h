/*
 * The record shuffle (--shuffle-buffer): an epoch's records mixed across
 * its objects, not only its objects reordered.
 *
 * record_index.c measures where every record of a channel's objects
 * begins (one pass over the objects, once per channel); mix.c is the stage
 * that serves a record-shuffled epoch from it: the epoch's blocks in a
 * shuffled order, their records through a pool from which each record out
 * is drawn at random, all a function of (seed, epoch, this host's share)
 * and the index alone, so that a reader can start at record K or byte B
 * without reading what comes before it.
 */
#ifndef S3PIPE_CHANNEL_MIX_H
#define S3PIPE_CHANNEL_MIX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "channel/stage.h"

struct channel;
struct epoch_plan;

/*
 * Where the records of a catalog's objects begin: per catalog entry, its
 * records' offsets in the object (8 bytes a record), and per block of
 * block bytes, the first record that begins in it or after it.  Records
 * stay inside their objects: a RecordIO record running past its object is
 * malformed; the bytes after an object's last '\n' are a line of their
 * own, which the shuffle ends with a '\n' (open_end).
 */
struct record_index {
	uint64_t block;	       /* bytes a block */
	size_t entries;	       /* catalog entries */
	uint64_t records;      /* in every entry */
	uint64_t *first;       /* [entries + 1]: entry e's records are
				  [first[e], first[e + 1]) */
	uint64_t *start;       /* [records]: where each begins in its object */
	uint64_t *block_base;  /* [entries + 1]: entry e's first block */
	uint64_t *block_first; /* [blocks]: the first record of the block's
				  entry that begins at or after its start */
	uint64_t *open_end;    /* bit e: entry e ends inside a line */
	uint64_t *sizes;       /* [entries]: each object's bytes */
};

/* A record may span at most this many blocks (a bigger one is refused:
 * raise --part-size) */
#define RECORD_SPAN_MAX 64

/*
 * The channel's index, made on first use (reading every object of its
 * catalog once) and kept for the channel's life: NULL and errno (EIO:
 * malformed records or a failed read, logged with the object and the
 * offset; ENOMEM).  Callers may wait for it concurrently.
 */
const struct record_index *record_index_get(struct channel *ch);
void record_index_destroy(struct record_index *ix); /* NULL is fine */
uint64_t record_index_memory(const struct record_index *ix);

/*
 * Where record K of plan's epoch begins (the epoch's end when it has
 * fewer) in a channel whose epochs are its objects back to back, as stored
 * (a shuffled prefix's), from the channel's index: a line an object ends
 * inside goes on in the next object, as in the epoch file.  0, or an
 * errno (the index's).
 */
int record_index_epoch_offset(struct channel *ch, const struct epoch_plan *plan,
			      uint64_t record, uint64_t *offset);
/* Record r's entry (binary search). */
size_t record_entry(const struct record_index *ix, uint64_t r);
/* Its bytes in the object, and the bytes the shuffle gives it (a '\n'
 * more for an open last line). */
uint64_t record_stored_len(const struct record_index *ix, size_t e, uint64_t r);
uint64_t record_out_len(const struct record_index *ix, size_t e, uint64_t r);

/*
 * The stage serving epoch (plan: its shared plan, whose order is this
 * host's share of the objects; it must outlive the stage), its first read
 * at byte first_read, or at the start of record first_record when that is
 * not UINT64_MAX (its position() then says where that is).  NULL and
 * errno.
 */
struct channel_stage *channel_mix_create(struct channel *ch,
					 struct epoch_plan *plan,
					 uint64_t first_read,
					 uint64_t first_record);
/* The epoch's bytes: its objects' and a '\n' for each open last line. */
int channel_mix_epoch_size(struct channel *ch, struct epoch_plan *plan,
			   uint64_t *size);

#endif
