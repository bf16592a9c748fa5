/*
 * mix draw: the record shuffle's order, from the index, the seed, the
 * epoch and this host's share alone (s3pipe(1), "Record shuffle").
 *
 * The epoch's objects (this host's share, in the plan's order) are cut at
 * blocks of the index; the blocks are shuffled (the load order P); their
 * records go, block by block, into a pool of pool_cap records (the
 * buffer's bytes at the epoch's mean record size).  Each record out is the
 * pool's slot j = below(npool), whose place the next record loaded takes
 * (the last slot's, once nothing is left to load).  A record that spans
 * blocks is loaded with the last of its blocks in P, so that all its bytes
 * have come by then.  Drawing needs no data: a reader starts at record K
 * or byte B by drawing the first K keys, and the stage (mix.c) reads the
 * blocks as the draws need them.
 */
#include "config.h"

#include "channel/mix_draw.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "channel/core.h"
#include "util/util.h"

/* the generators' keys, so that the block order and the draws differ
 * from the object shuffle of the same epoch (s3pipe(1)) */
#define MIX_BLOCKS_KEY 0x6d69782d626c6f63ULL /* "mix-bloc" */
#define MIX_DRAWS_KEY  0x6d69782d64726177ULL /* "mix-draw" */

/* ---- the epoch: what the index, the seed and the share fix ---- */

/* The object (its place in the epoch) that epoch block eb belongs to. */
static size_t block_object(const struct mix_epoch *me, uint64_t eb)
{
	return util_last_at_most(me->ebase, me->nobjs ? me->nobjs : 1, eb);
}

/* The epoch blocks record r (of entry e) spans: [*a, *z]. */
void mix_record_span(const struct mix_epoch *me, size_t e, uint64_t r,
		     uint64_t *a, uint64_t *z)
{
	const struct record_index *ix = me->ix;
	uint64_t base = me->ebase[me->emap[e]];
	uint64_t len = record_stored_len(ix, e, r);

	*a = base + ix->start[r] / ix->block;
	*z = base + (ix->start[r] + len - 1) / ix->block;
}

/* The block that loads record r: the last of its blocks in P. */
uint64_t mix_record_owner(const struct mix_epoch *me, size_t e, uint64_t r)
{
	uint64_t a, z, best;

	mix_record_span(me, e, r, &a, &z);
	best = a;
	for (uint64_t b = a + 1; b <= z; b++)
		if (me->posof[b] > me->posof[best])
			best = b;
	return best;
}

/* Epoch block eb: its entry, its first byte in the object and the
 * records that begin in it, [*rf, *rl). */

void mix_block_locate(const struct mix_epoch *me, uint64_t eb,
		      struct block_at *b)
{
	const struct record_index *ix = me->ix;
	uint64_t j, g;

	b->obj = block_object(me, eb);
	b->entry = me->objs[b->obj];
	j = eb - me->ebase[b->obj];
	g = ix->block_base[b->entry] + j;
	b->begin = j * ix->block;
	b->end = b->begin + ix->block;
	if (b->end > ix->sizes[b->entry])
		b->end = ix->sizes[b->entry];
	b->rf = ix->block_first[g];
	b->rl = g + 1 < ix->block_base[b->entry + 1] ? ix->block_first[g + 1]
						     : ix->first[b->entry + 1];
}

/* The record that begins before block b and reaches into it, or
 * UINT64_MAX. */
uint64_t mix_block_straddle_in(const struct mix_epoch *me,
			       const struct block_at *b)
{
	const struct record_index *ix = me->ix;
	uint64_t r;

	if (b->rf == ix->first[b->entry])
		return UINT64_MAX;
	r = b->rf - 1;
	return ix->start[r] + record_stored_len(ix, b->entry, r) > b->begin
		   ? r
		   : UINT64_MAX;
}

struct block_key {
	uint64_t key;
	uint32_t eb;
};

static int cmp_block_key(const void *a, const void *b)
{
	const struct block_key *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->eb < y->eb ? -1 : x->eb > y->eb;
}

/*
 * The load order P, stratified: each object's blocks in an order of their
 * own, its k-th of n at (k + u) / n of the epoch (u uniform in [0, 1),
 * drawn for each block), so that every stretch of P holds the objects'
 * blocks in proportion, each from anywhere in its object.
 */
static int blocks_order(struct mix_epoch *me, int64_t seed, unsigned epoch)
{
	struct block_key *keys =
	    malloc((me->nblocks ? me->nblocks : 1) * sizeof(*keys));
	struct channel_rng rng;

	if (!keys)
		return ENOMEM;
	channel_rng_init(&rng, seed, epoch ^ MIX_BLOCKS_KEY);
	for (size_t i = 0; i < me->nobjs; i++) {
		uint64_t first = me->ebase[i], n = me->ebase[i + 1] - first;
		uint32_t *mine = me->perm + first;

		for (uint64_t k = 0; k < n; k++)
			mine[k] = (uint32_t)(first + k);
		channel_shuffle_with(&rng, mine, (size_t)n);
		for (uint64_t k = 0; k < n; k++) {
			unsigned __int128 at = ((unsigned __int128)k << 64) |
					       channel_rng_next(&rng);

			keys[first + k].key = (uint64_t)(at / n);
			keys[first + k].eb = mine[k];
		}
	}
	qsort(keys, me->nblocks, sizeof(*keys), cmp_block_key);
	for (size_t t = 0; t < me->nblocks; t++)
		me->perm[t] = keys[t].eb;
	free(keys);
	return 0;
}

/*
 * What each block loads: the record that reaches into it from before when
 * it is the last of that one's blocks in P, then those that begin in it,
 * the last only when it ends in it or its later blocks come before it in
 * P.  Always a run of record numbers: [own_lo, own_lo + own_n).
 */
static int blocks_own(struct mix_epoch *me)
{
	const struct record_index *ix = me->ix;
	size_t n = me->nblocks ? me->nblocks : 1;

	me->own_lo = malloc(n * sizeof(uint64_t));
	me->own_n = malloc(n * sizeof(uint32_t));
	me->obj_of = malloc(n * sizeof(uint32_t));
	if (!me->own_lo || !me->own_n || !me->obj_of)
		return ENOMEM;
	for (size_t eb = 0; eb < me->nblocks; eb++) {
		struct block_at b;
		uint64_t in, count;

		mix_block_locate(me, eb, &b);
		me->obj_of[eb] = (uint32_t)b.obj;
		in = mix_block_straddle_in(me, &b);
		count = b.rl - b.rf;
		me->own_lo[eb] = b.rf;
		if (in != UINT64_MAX &&
		    mix_record_owner(me, b.entry, in) == eb) {
			me->own_lo[eb] = in;
			count++;
		}
		if (b.rl > b.rf &&
		    ix->start[b.rl - 1] +
			    record_stored_len(ix, b.entry, b.rl - 1) >
			b.end &&
		    mix_record_owner(me, b.entry, b.rl - 1) != eb)
			count--;
		me->own_n[eb] = (uint32_t)count;
	}
	return 0;
}

void mix_epoch_free(struct mix_epoch *me)
{
	free(me->own_lo);
	free(me->own_n);
	free(me->obj_of);
	free(me->ebase);
	free(me->emap);
	free(me->perm);
	free(me->posof);
	memset(me, 0, sizeof(*me));
}

int mix_epoch_init(struct mix_epoch *me, struct channel *ch,
		   const struct record_index *ix, const struct epoch_plan *plan)
{
	uint64_t blocks = 0, records = 0, stored = 0;

	memset(me, 0, sizeof(*me));
	me->ix = ix;
	me->cat = ch->catalog;
	me->objs = plan->order;
	me->nobjs = plan->n;
	me->ebase = malloc((plan->n + 1) * sizeof(uint64_t));
	me->emap = malloc((ix->entries ? ix->entries : 1) * sizeof(uint32_t));
	if (!me->ebase || !me->emap)
		goto nomem;
	memset(me->emap, 0xff, ix->entries * sizeof(uint32_t));
	for (size_t i = 0; i < plan->n; i++) {
		size_t e = plan_item(plan, i);

		if (e >= ix->entries) {
			mix_epoch_free(me);
			return ESTALE; /* an index of another listing */
		}
		me->ebase[i] = blocks;
		me->emap[e] = (uint32_t)i;
		blocks += ix->block_base[e + 1] - ix->block_base[e];
		records += ix->first[e + 1] - ix->first[e];
		me->records += ix->first[e + 1] - ix->first[e];
		stored += ix->sizes[e];
		me->bytes +=
		    ix->sizes[e] + (ix->open_end[e / 64] >> (e % 64) & 1);
	}
	me->ebase[plan->n] = blocks;
	if (blocks > UINT32_MAX) {
		mix_epoch_free(me);
		return EFBIG;
	}
	me->nblocks = (size_t)blocks;
	me->perm = malloc((blocks ? blocks : 1) * sizeof(uint32_t));
	me->posof = malloc((blocks ? blocks : 1) * sizeof(uint32_t));
	if (!me->perm || !me->posof)
		goto nomem;
	if (blocks_order(me, ch->spec->seed, plan->epoch)) {
		mix_epoch_free(me);
		return ENOMEM;
	}
	for (size_t t = 0; t < me->nblocks; t++)
		me->posof[me->perm[t]] = (uint32_t)t;
	if (blocks_own(me)) {
		mix_epoch_free(me);
		return ENOMEM;
	}
	/* the buffer's bytes at the epoch's mean record */
	me->pool_cap = stored ? (uint64_t)((double)ch->spec->shuffle_buffer *
					   (double)records / (double)stored)
			      : 1;
	if (me->pool_cap < 1)
		me->pool_cap = 1;
	if (me->pool_cap > records && records)
		me->pool_cap = records;
	return 0;

nomem:
	mix_epoch_free(me);
	return ENOMEM;
}

/* ---- the draws ---- */

/*
 * A value uniform in [0, m) from rng (m >= 1), by a multiplication:
 * x = next(), then x * m >> 64, drawing again while the low 64 bits of
 * x * m are below 2^64 mod m (Lemire's method: exact, and with no division
 * but in the rare case).
 */
static uint64_t draw_below(struct channel_rng *rng, uint64_t m)
{
	unsigned __int128 p = (unsigned __int128)channel_rng_next(rng) * m;
	uint64_t low = (uint64_t)p;

	if (low < m) {
		uint64_t floor = (0 - m) % m;

		while (low < floor) {
			p = (unsigned __int128)channel_rng_next(rng) * m;
			low = (uint64_t)p;
		}
	}
	return (uint64_t)(p >> 64);
}

/* The next ticket loaded into the pool (a block's, one a record it
 * loads): false when none is left. */
static int next_loaded(const struct mix_epoch *me, struct mix_draws *d,
		       uint32_t *out, bool *got)
{
	while (d->inq_left == 0) {
		uint32_t eb;
		int rc;

		if (d->t == me->nblocks) {
			*got = false;
			return 0;
		}
		eb = me->perm[d->t++];
		d->inq_block = eb;
		d->inq_left = me->own_n[eb];
		rc = d->loaded ? d->loaded(d->arg, eb) : 0;
		if (rc)
			return rc;
	}
	*out = d->inq_block;
	d->inq_left--;
	d->left--;
	*got = true;
	return 0;
}

int mix_draws_init(struct mix_draws *d, const struct mix_epoch *me,
		   struct channel *ch, unsigned epoch)
{
	memset(d, 0, sizeof(*d));
	channel_rng_init(&d->rng, ch->spec->seed, epoch ^ MIX_DRAWS_KEY);
	d->left = me->records;
	d->pool = malloc((me->pool_cap ? me->pool_cap : 1) * sizeof(uint32_t));
	d->cursor = calloc(me->nblocks ? me->nblocks : 1, sizeof(uint32_t));
	return d->pool && d->cursor ? 0 : ENOMEM;
}

void mix_draws_free(struct mix_draws *d)
{
	free(d->pool);
	free(d->cursor);
	memset(d, 0, sizeof(*d));
}

/* Fills the pool before the first draw. */
static int draws_fill(const struct mix_epoch *me, struct mix_draws *d)
{
	bool got = true;

	while (!d->filled && d->npool < me->pool_cap) {
		int rc = next_loaded(me, d, &d->pool[d->npool], &got);

		if (rc)
			return rc;
		if (!got)
			break;
		d->npool++;
	}
	d->filled = true;
	return 0;
}

/* Draws picks ahead, up to MIX_AHEAD, while the pool keeps its size
 * through them (each is refilled by a ticket still to load). */
static void draw_ahead(struct mix_draws *d)
{
	while (d->nahead < MIX_AHEAD && d->left > d->nahead) {
		d->ahead[(d->ahead_at + d->nahead) % MIX_AHEAD] =
		    (size_t)draw_below(&d->rng, d->npool);
		d->nahead++;
	}
}

int mix_draw_pick(const struct mix_epoch *me, struct mix_draws *d, uint32_t *eb,
		  uint64_t *r, size_t *slot, bool *got)
{
	int rc = draws_fill(me, d);

	if (rc)
		return rc;
	*got = d->npool > 0;
	if (!*got)
		return 0;
	draw_ahead(d);
	if (d->nahead) {
		*slot = d->ahead[d->ahead_at];
		d->ahead_at = (d->ahead_at + 1) % MIX_AHEAD;
		d->nahead--;
	} else {
		*slot = (size_t)draw_below(&d->rng, d->npool);
	}
	*eb = d->pool[*slot];
	*r = me->own_lo[*eb] + d->cursor[*eb]++;
	d->drawn++;
	return 0;
}

int mix_draw_refill(const struct mix_epoch *me, struct mix_draws *d,
		    size_t slot)
{
	uint32_t next;
	bool more;
	int rc = next_loaded(me, d, &next, &more);

	if (rc)
		return rc;
	d->pool[slot] = more ? next : d->pool[--d->npool];
	return 0;
}

uint32_t mix_draw_peek(const struct mix_draws *d)
{
	struct channel_rng rng = d->rng;

	if (d->nahead)
		return d->pool[d->ahead[d->ahead_at]];
	return d->pool[draw_below(&rng, d->npool)];
}

const uint32_t *mix_draw_ahead(const struct mix_draws *d, unsigned k)
{
	return k < d->nahead ? &d->pool[d->ahead[(d->ahead_at + k) % MIX_AHEAD]]
			     : NULL;
}

/* The next record out and its block, its slot refilled (counting only). */
static int draw(const struct mix_epoch *me, struct mix_draws *d, uint64_t *r,
		uint32_t *eb, bool *got)
{
	size_t slot;
	int rc = mix_draw_pick(me, d, eb, r, &slot, got);

	return rc || !*got ? rc : mix_draw_refill(me, d, slot);
}

int mix_draws_skip(const struct mix_epoch *me, struct mix_draws *d,
		   uint64_t target, uint32_t *block, uint64_t *skip,
		   bool *begun)
{
	*begun = false;
	*skip = 0;
	while (d->out < target) {
		uint64_t r, len;
		uint32_t eb;
		size_t slot;
		bool got;
		int rc = mix_draw_pick(me, d, &eb, &r, &slot, &got);

		if (!rc && got)
			rc = mix_draw_refill(me, d, slot);
		if (rc)
			return rc;
		if (!got)
			return 0;
		len = record_out_len(me->ix, me->objs[me->obj_of[eb]], r);
		if (d->out + len > target) {
			*begun = true;
			*block = eb;
			*skip = target - d->out;
			d->out = target;
			return 0;
		}
		d->out += len;
	}
	return 0;
}

int mix_draws_skip_records(const struct mix_epoch *me, struct mix_draws *d,
			   uint64_t records)
{
	while (d->drawn < records) {
		uint64_t r;
		uint32_t eb;
		bool got;
		int rc = draw(me, d, &r, &eb, &got);

		if (rc || !got)
			return rc;
	}
	return 0;
}

uint64_t mix_draws_bytes(const struct mix_epoch *me, const struct mix_draws *d)
{
	const struct record_index *ix = me->ix;
	uint64_t bytes = 0;

	for (size_t eb = 0; eb < me->nblocks; eb++) {
		uint64_t lo = me->own_lo[eb], c = d->cursor[eb], last;
		size_t e = me->objs[me->obj_of[eb]];

		if (!c)
			continue;
		/* records [lo, lo + c) of one object: a run of its bytes */
		last = lo + c - 1;
		bytes += ix->start[last] + record_out_len(ix, e, last) -
			 ix->start[lo];
	}
	return bytes;
}

int channel_mix_epoch_size(struct channel *ch, struct epoch_plan *plan,
			   uint64_t *size)
{
	const struct record_index *ix;
	uint64_t bytes = 0;

	pthread_mutex_lock(&ch->records_lock);
	ix = ch->records;
	pthread_mutex_unlock(&ch->records_lock);
	if (!ix)
		return EAGAIN; /* known once indexed */
	for (size_t i = 0; i < plan->n; i++) {
		size_t e = plan_item(plan, i);

		if (e >= ix->entries)
			return ESTALE;
		bytes += ix->sizes[e] + (ix->open_end[e / 64] >> (e % 64) & 1);
	}
	*size = bytes;
	return 0;
}
