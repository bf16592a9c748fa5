/*
 * The record shuffle's draws (channel/mix_draw.c): what an epoch's order of
 * records is, from the index, the seed, the epoch and the share alone.
 * Shared by the stage (channel/mix.c), which draws and reads, and by the
 * places that only count (where record K begins, the epoch's size).
 */
#ifndef S3PIPE_CHANNEL_MIX_DRAW_H
#define S3PIPE_CHANNEL_MIX_DRAW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "channel/internal.h"
#include "channel/mix.h"

struct channel;
struct epoch_plan;
struct cache_catalog;

/* An epoch: its objects cut into blocks, and the blocks' load order P. */
struct mix_epoch {
	const struct record_index *ix;
	const struct cache_catalog *cat;
	const uint32_t *objs; /* catalog entries, the plan's order */
	size_t nobjs;
	uint64_t *ebase;  /* [nobjs + 1]: each object's first epoch block */
	uint32_t *emap;	  /* [entries]: the object's place, or UINT32_MAX */
	uint32_t *perm;	  /* P: the epoch's blocks in load order */
	uint32_t *posof;  /* the place of each block in P */
	uint64_t *own_lo; /* each block loads records [own_lo, ... */
	uint32_t *own_n;  /* ... own_lo + own_n) */
	uint32_t *obj_of; /* each block's object (its place) */
	size_t nblocks;
	uint64_t pool_cap;
	uint64_t records; /* in the epoch */
	uint64_t bytes;	  /* what the epoch file holds */
};

int mix_epoch_init(struct mix_epoch *me, struct channel *ch,
		   const struct record_index *ix,
		   const struct epoch_plan *plan);
void mix_epoch_free(struct mix_epoch *me);

/* Epoch block eb: its object, its bytes in it and the records that begin
 * in it, [rf, rl). */
struct block_at {
	size_t obj, entry;
	uint64_t begin, end;
	uint64_t rf, rl;
};
void mix_block_locate(const struct mix_epoch *me, uint64_t eb,
		      struct block_at *b);
/* The record that begins before block b and reaches into it, or
 * UINT64_MAX. */
uint64_t mix_block_straddle_in(const struct mix_epoch *me,
			       const struct block_at *b);
/* The epoch blocks record r (of entry e) spans, [*a, *z], and the one of
 * them that loads it (the last in P). */
void mix_record_span(const struct mix_epoch *me, size_t e, uint64_t r,
		     uint64_t *a, uint64_t *z);
uint64_t mix_record_owner(const struct mix_epoch *me, size_t e, uint64_t r);

/*
 * The draws: a pool of tickets, one a record, each naming the block that
 * loaded it; a pick of block b's ticket gives b's next record (its
 * records go out in their order, among all the others'), so that a block
 * is read front to back.  With loaded set (the stage), each block is
 * handed to it as it loads, before any of its tickets goes into the pool.
 */

/* picks drawn ahead, while the pool's size cannot change: the stage
 * prefetches their records */
#define MIX_AHEAD 16

struct mix_draws {
	struct channel_rng rng;
	uint32_t *pool; /* tickets: epoch blocks */
	uint64_t npool;
	uint64_t left;		 /* tickets not loaded yet */
	size_t ahead[MIX_AHEAD]; /* a ring: nahead picks from ahead_at */
	unsigned nahead, ahead_at;
	bool filled;
	size_t t;	    /* the next place in P to load */
	uint32_t inq_block; /* the last block loaded ... */
	uint32_t inq_left;  /* ... and its tickets not in the pool yet */
	uint32_t *cursor;   /* each block's records drawn */
	uint64_t drawn;	    /* records drawn */
	uint64_t out;	    /* their bytes (draws_skip) */
	int (*loaded)(void *arg, uint64_t eb);
	void *arg;
};

int mix_draws_init(struct mix_draws *d, const struct mix_epoch *me,
		   struct channel *ch, unsigned epoch);
void mix_draws_free(struct mix_draws *d);
/* The next record out: its block, its number and its slot, which
 * mix_draw_refill() must be given next; *got false at the end. */
int mix_draw_pick(const struct mix_epoch *me, struct mix_draws *d, uint32_t *eb,
		  uint64_t *r, size_t *slot, bool *got);
int mix_draw_refill(const struct mix_epoch *me, struct mix_draws *d,
		    size_t slot);
/* The block the next pick takes from, without picking (a filled,
 * non-empty pool). */
uint32_t mix_draw_peek(const struct mix_draws *d);
/* The pool slot the k-th pick after the next takes, when drawn already
 * (else NULL): a hint for prefetching (the slot, then its block's
 * bytes). */
const uint32_t *mix_draw_ahead(const struct mix_draws *d, unsigned k);
/*
 * Draws up to byte target of the epoch: every record that ends at or
 * before it, and the one target falls in, when it does (*begun: from
 * *block, *skip of its bytes before target).
 */
int mix_draws_skip(const struct mix_epoch *me, struct mix_draws *d,
		   uint64_t target, uint32_t *block, uint64_t *skip,
		   bool *begun);
/* Draws the first records records (all there are, when fewer), keys
 * only: no length looked up. */
int mix_draws_skip_records(const struct mix_epoch *me, struct mix_draws *d,
			   uint64_t records);
/* The bytes of the records drawn so far (from each block's cursor). */
uint64_t mix_draws_bytes(const struct mix_epoch *me, const struct mix_draws *d);

#endif
