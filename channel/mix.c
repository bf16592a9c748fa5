/*
 * mix: the stage that serves a record-shuffled epoch (--shuffle-buffer).
 *
 * The epoch's objects (this host's share, in the plan's order) are cut at
 * cache blocks; the blocks are shuffled (the load order P), and their
 * records go, block by block, into a pool of pool_cap records (the buffer's
 * bytes at the epoch's mean record size).  Each record out is the pool's
 * slot j = below(npool), whose place the next record loaded takes (the
 * last slot's, once nothing is left to load).  A record that spans blocks
 * is loaded with the last of its blocks in P, so that all its bytes have
 * come by then.  Everything here is a function of the index, the seed,
 * the epoch and the share: the keys (record numbers) can be drawn without
 * a byte of data, so a reader starts at record K or byte B by drawing the
 * first K keys (the simulation), and fetches only what comes after.
 *
 * Data follows the keys lazily.  A stream of the epoch's blocks (a plan
 * stream of the cache, prefetched as any) is read as records drawn need
 * it: each block read gives its pieces of the records still to come (the
 * store: complete records and pieces of those waiting for their last
 * block).  A fresh epoch's stream is P itself.  A reader started at K
 * reads first the blocks of the records that the pool holds at K (the
 * next one drawn first), then P from the load point on, with the blocks
 * before it that a later block's records reach into, once each.
 *
 * Memory: the pool's keys (8 bytes a record), the store (the pool's
 * records and pieces waiting for a block: about the buffer's bytes), the
 * epoch's block order (8 bytes a block) and one block being read.
 */
#include "config.h"

#include "channel/mix.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cache/catalog.h"
#include "channel/core.h"
#include "util/util.h"

/* the generators' keys, so that the block order and the draws differ
 * from the object shuffle of the same epoch (s3pipe(1)) */
#define MIX_BLOCKS_KEY 0x6d69782d626c6f63ULL /* "mix-bloc" */
#define MIX_DRAWS_KEY  0x6d69782d64726177ULL /* "mix-draw" */

/* blocks the mixer's stream is given at a time */
#define MIX_FILL 256
/* bytes a read hands out at most */
#define MIX_READ_MAX (1u << 20)

/* ---- the epoch: what the index, the seed and the share fix ---- */

struct mix_epoch {
	const struct record_index *ix;
	const struct cache_catalog *cat;
	const uint32_t *objs; /* catalog entries, the plan's order */
	size_t nobjs;
	uint64_t *ebase; /* [nobjs + 1]: each object's first epoch block */
	uint32_t *emap;	 /* [entries]: the object's place, or UINT32_MAX */
	uint32_t *perm;	 /* P: the epoch's blocks in load order */
	uint32_t *posof; /* the place of each block in P */
	size_t nblocks;
	uint64_t pool_cap;
	uint64_t bytes; /* what the epoch file holds */
};

/* The object (its place in the epoch) that epoch block eb belongs to. */
static size_t block_object(const struct mix_epoch *me, uint64_t eb)
{
	return util_last_at_most(me->ebase, me->nobjs ? me->nobjs : 1, eb);
}

/* The epoch blocks record r (of entry e) spans: [*a, *z]. */
static void record_span(const struct mix_epoch *me, size_t e, uint64_t r,
			uint64_t *a, uint64_t *z)
{
	const struct record_index *ix = me->ix;
	uint64_t base = me->ebase[me->emap[e]];
	uint64_t len = record_stored_len(ix, e, r);

	*a = base + ix->start[r] / ix->block;
	*z = base + (ix->start[r] + len - 1) / ix->block;
}

/* The block that loads record r: the last of its blocks in P. */
static uint64_t record_owner(const struct mix_epoch *me, size_t e, uint64_t r)
{
	uint64_t a, z, best;

	record_span(me, e, r, &a, &z);
	best = a;
	for (uint64_t b = a + 1; b <= z; b++)
		if (me->posof[b] > me->posof[best])
			best = b;
	return best;
}

/* Epoch block eb: its entry, its first byte in the object and the
 * records that begin in it, [*rf, *rl). */
struct block_at {
	size_t obj, entry;
	uint64_t begin, end; /* bytes of the object */
	uint64_t rf, rl;
};

static void block_locate(const struct mix_epoch *me, uint64_t eb,
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
static uint64_t block_straddle_in(const struct mix_epoch *me,
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

static void mix_epoch_free(struct mix_epoch *me)
{
	free(me->ebase);
	free(me->emap);
	free(me->perm);
	free(me->posof);
	memset(me, 0, sizeof(*me));
}

static int mix_epoch_init(struct mix_epoch *me, struct channel *ch,
			  const struct record_index *ix,
			  const struct epoch_plan *plan)
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
		size_t e = plan->order[i];

		if (e >= ix->entries) {
			mix_epoch_free(me);
			return ESTALE; /* an index of another listing */
		}
		me->ebase[i] = blocks;
		me->emap[e] = (uint32_t)i;
		blocks += ix->block_base[e + 1] - ix->block_base[e];
		records += ix->first[e + 1] - ix->first[e];
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
	for (size_t b = 0; b < me->nblocks; b++)
		me->perm[b] = (uint32_t)b;
	channel_shuffle(me->perm, me->nblocks, true, ch->spec->seed,
			plan->epoch ^ MIX_BLOCKS_KEY);
	for (size_t t = 0; t < me->nblocks; t++)
		me->posof[me->perm[t]] = (uint32_t)t;
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

/* ---- the draws: keys only ---- */

struct mix_draws {
	struct channel_rng rng;
	uint64_t *pool;
	uint64_t npool;
	bool filled;
	size_t t;      /* the next place in P to load */
	uint64_t *inq; /* the last loaded block's records ... */
	size_t ninq, inq_next, inq_cap; /* ... from inq_next on still to load */
	uint64_t drawn;			/* records drawn */
	uint64_t out;			/* their bytes */
};

static int inq_push(struct mix_draws *d, uint64_t r)
{
	if (d->ninq == d->inq_cap) {
		size_t cap = d->inq_cap ? d->inq_cap * 2 : 1024;
		uint64_t *p = realloc(d->inq, cap * sizeof(*p));

		if (!p)
			return ENOMEM;
		d->inq = p;
		d->inq_cap = cap;
	}
	d->inq[d->ninq++] = r;
	return 0;
}

/* The records block eb loads, in order: the one reaching into it from
 * before when it is the last of that one's blocks, then those that begin
 * in it (the last only when it ends in it, or its later blocks came
 * before). */
static int load_block(const struct mix_epoch *me, struct mix_draws *d,
		      uint64_t eb)
{
	const struct record_index *ix = me->ix;
	struct block_at b;
	uint64_t in;

	d->ninq = d->inq_next = 0;
	block_locate(me, eb, &b);
	in = block_straddle_in(me, &b);
	if (in != UINT64_MAX && record_owner(me, b.entry, in) == eb &&
	    inq_push(d, in))
		return ENOMEM;
	for (uint64_t r = b.rf; r < b.rl; r++) {
		if (r + 1 == b.rl &&
		    ix->start[r] + record_stored_len(ix, b.entry, r) > b.end &&
		    record_owner(me, b.entry, r) != eb)
			continue;
		if (inq_push(d, r))
			return ENOMEM;
	}
	return 0;
}

/* The next record loaded into the pool: false when none is left. */
static int next_loaded(const struct mix_epoch *me, struct mix_draws *d,
		       uint64_t *r, bool *got)
{
	while (d->inq_next == d->ninq) {
		int rc;

		if (d->t == me->nblocks) {
			*got = false;
			return 0;
		}
		rc = load_block(me, d, me->perm[d->t++]);
		if (rc)
			return rc;
	}
	*r = d->inq[d->inq_next++];
	*got = true;
	return 0;
}

static int draws_init(struct mix_draws *d, const struct mix_epoch *me,
		      struct channel *ch, unsigned epoch)
{
	memset(d, 0, sizeof(*d));
	channel_rng_init(&d->rng, ch->spec->seed, epoch ^ MIX_DRAWS_KEY);
	d->pool = malloc(me->pool_cap * sizeof(uint64_t));
	return d->pool ? 0 : ENOMEM;
}

static void draws_free(struct mix_draws *d)
{
	free(d->pool);
	free(d->inq);
	memset(d, 0, sizeof(*d));
}

/* Fills the pool before the first draw. */
static int draws_fill(const struct mix_epoch *me, struct mix_draws *d)
{
	bool got = true;
	uint64_t r;

	while (!d->filled && d->npool < me->pool_cap) {
		int rc = next_loaded(me, d, &r, &got);

		if (rc)
			return rc;
		if (!got)
			break;
		d->pool[d->npool++] = r;
	}
	d->filled = true;
	return 0;
}

/* The next record out into *r (false at the epoch's end). */
static int draw(const struct mix_epoch *me, struct mix_draws *d, uint64_t *r,
		bool *got)
{
	uint64_t j, next;
	bool more;
	int rc = draws_fill(me, d);

	if (rc)
		return rc;
	if (d->npool == 0) {
		*got = false;
		return 0;
	}
	j = channel_rng_below(&d->rng, d->npool);
	*r = d->pool[j];
	rc = next_loaded(me, d, &next, &more);
	if (rc)
		return rc;
	d->pool[j] = more ? next : d->pool[--d->npool];
	d->drawn++;
	*got = true;
	return 0;
}

/* Which record the next draw gives, without drawing it. */
static uint64_t peek_draw(const struct mix_draws *d)
{
	struct channel_rng rng = d->rng;

	return d->pool[channel_rng_below(&rng, d->npool)];
}

/*
 * Draws up to byte target of the epoch: every record that ends at or
 * before it.  *cur gets the record target falls in (UINT64_MAX: none, the
 * end) and *skip its bytes before target.
 */
static int draws_skip(const struct mix_epoch *me, struct mix_draws *d,
		      uint64_t target, uint64_t *cur, uint64_t *skip)
{
	*cur = UINT64_MAX;
	*skip = 0;
	while (d->out < target) {
		uint64_t r, len;
		bool got;
		int rc = draw(me, d, &r, &got);

		if (rc)
			return rc;
		if (!got)
			return 0;
		len = record_out_len(me->ix, record_entry(me->ix, r), r);
		if (d->out + len > target) {
			*cur = r;
			*skip = target - d->out;
			d->out = target;
			return 0;
		}
		d->out += len;
	}
	return 0;
}

/* ---- the store: records and pieces still to go out ---- */

struct stored {
	uint64_t key; /* record number + 1; 0: a free slot */
	char *buf;
	uint64_t len;	 /* stored bytes */
	uint64_t filled; /* of them, come */
	uint64_t pieces; /* bit i: its i-th block's piece came */
};

struct held_map {
	struct stored *slots;
	size_t cap, used; /* cap a power of two */
	uint64_t bytes;
};

static size_t slot_of(const struct held_map *m, uint64_t key)
{
	uint64_t h = key * 0x9E3779B97F4A7C15ULL;

	return (size_t)(h >> 17) & (m->cap - 1);
}

static struct stored *held_find(const struct held_map *m, uint64_t r)
{
	if (!m->cap)
		return NULL;
	for (size_t i = slot_of(m, r + 1);; i = (i + 1) & (m->cap - 1)) {
		if (m->slots[i].key == r + 1)
			return &m->slots[i];
		if (!m->slots[i].key)
			return NULL;
	}
}

static int held_grow(struct held_map *m)
{
	struct held_map bigger = {0};

	bigger.cap = m->cap ? m->cap * 2 : 1024;
	bigger.slots = calloc(bigger.cap, sizeof(struct stored));
	if (!bigger.slots)
		return ENOMEM;
	for (size_t i = 0; i < m->cap; i++) {
		size_t j;

		if (!m->slots[i].key)
			continue;
		for (j = slot_of(&bigger, m->slots[i].key); bigger.slots[j].key;
		     j = (j + 1) & (bigger.cap - 1))
			;
		bigger.slots[j] = m->slots[i];
	}
	bigger.used = m->used;
	bigger.bytes = m->bytes;
	free(m->slots);
	*m = bigger;
	return 0;
}

/* Record r's slot, made empty (len bytes) when it has none. */
static struct stored *held_get(struct held_map *m, uint64_t r, uint64_t len)
{
	struct stored *s = held_find(m, r);
	size_t i;

	if (s)
		return s;
	if ((m->used + 1) * 2 > m->cap && held_grow(m))
		return NULL;
	for (i = slot_of(m, r + 1); m->slots[i].key; i = (i + 1) & (m->cap - 1))
		;
	s = &m->slots[i];
	s->buf = malloc(len ? len : 1);
	if (!s->buf)
		return NULL;
	s->key = r + 1;
	s->len = len;
	s->filled = 0;
	s->pieces = 0;
	m->used++;
	m->bytes += len;
	return s;
}

/* Frees s's record and its slot (backward-shift deletion). */
static void held_drop(struct held_map *m, struct stored *s)
{
	size_t mask = m->cap - 1;
	size_t i = (size_t)(s - m->slots), j = i;

	free(s->buf);
	m->bytes -= s->len;
	m->used--;
	for (;;) {
		size_t home;
		bool stays;

		j = (j + 1) & mask;
		if (!m->slots[j].key)
			break;
		home = slot_of(m, m->slots[j].key);
		/* an entry whose home lies in (i, j] cannot move to i */
		stays =
		    i <= j ? (i < home && home <= j) : (i < home || home <= j);
		if (stays)
			continue;
		m->slots[i] = m->slots[j];
		i = j;
	}
	memset(&m->slots[i], 0, sizeof(m->slots[i]));
}

static void held_free(struct held_map *m)
{
	for (size_t i = 0; i < m->cap; i++)
		free(m->slots[i].buf);
	free(m->slots);
	memset(m, 0, sizeof(*m));
}

/* ---- the stage ---- */

struct mix {
	struct channel_stage stage; /* first */
	struct channel *ch;
	struct mix_epoch me;
	struct mix_draws d;
	struct held_map held;
	/* the records live at the start (a reader started at K: the pool's,
	 * the last loaded block's still to load, the one begun), sorted; and
	 * the first place in P not loaded then */
	uint64_t *live;
	size_t nlive;
	size_t floor;
	/* the blocks to read, in order, and how many the stream was given */
	uint32_t *order;
	size_t norder, given;
	pthread_mutex_t lock; /* given (the refill runs on any thread) */
	struct cache_stream *stream;
	struct channel_stage *src; /* a cache stage over the stream */
	uint64_t src_pos;	   /* the stream's bytes read */
	size_t next_block;	   /* order[next_block] is read next */
	char *block;		   /* one block's bytes */
	/* the record going out, and its bytes out so far */
	struct stored *cur;
	uint64_t cur_key, cur_off, cur_len;
	uint64_t pos; /* the epoch's bytes before the next read */
	int error;
	char label[CHANNEL_NAME_MAX + 32];
};

static struct mix *of_stage(struct channel_stage *st)
{
	return (struct mix *)st;
}

static bool is_live(const struct mix *mx, uint64_t r)
{
	size_t lo = 0, hi = mx->nlive;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (mx->live[mid] < r)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < mx->nlive && mx->live[lo] == r;
}

/* Whether record r (loaded by owner) is still to go out. */
static bool still_wanted(const struct mix *mx, uint64_t owner, uint64_t r)
{
	return mx->me.posof[owner] >= mx->floor || is_live(mx, r);
}

/* Keeps record r's piece in block eb (bytes [from, to) of its object, at
 * data). */
static int keep_piece(struct mix *mx, const struct block_at *b, uint64_t eb,
		      uint64_t r, const char *data)
{
	const struct record_index *ix = mx->me.ix;
	uint64_t len = record_stored_len(ix, b->entry, r);
	uint64_t from = ix->start[r] > b->begin ? ix->start[r] : b->begin;
	uint64_t to = ix->start[r] + len < b->end ? ix->start[r] + len : b->end;
	uint64_t a, z, bit;
	struct stored *s;

	record_span(&mx->me, b->entry, r, &a, &z);
	if (!still_wanted(mx, record_owner(&mx->me, b->entry, r), r))
		return 0;
	s = held_get(&mx->held, r, len);
	if (!s)
		return ENOMEM;
	bit = 1ULL << (eb - a);
	if (s->pieces & bit)
		return 0;
	memcpy(s->buf + (from - ix->start[r]), data + (from - b->begin),
	       to - from);
	s->pieces |= bit;
	s->filled += to - from;
	return 0;
}

/* A block's bytes came: its pieces of the records still to go out. */
static int harvest(struct mix *mx, uint64_t eb)
{
	struct block_at b;
	uint64_t in;
	int rc = 0;

	block_locate(&mx->me, eb, &b);
	in = block_straddle_in(&mx->me, &b);
	if (in != UINT64_MAX)
		rc = keep_piece(mx, &b, eb, in, mx->block);
	for (uint64_t r = b.rf; !rc && r < b.rl; r++)
		rc = keep_piece(mx, &b, eb, r, mx->block);
	return rc;
}

/* The stream's refill function: the next blocks of the order. */
static void mix_refill(void *arg, struct cache_stream *s)
{
	struct mix *mx = arg;
	const struct mix_epoch *me = &mx->me;

	pthread_mutex_lock(&mx->lock);
	for (size_t end = mx->given + MIX_FILL;
	     mx->given < mx->norder && mx->given < end; mx->given++) {
		struct block_at b;
		struct cache_object *obj;

		block_locate(me, mx->order[mx->given], &b);
		obj = cache_catalog_object(mx->ch->cache, me->cat,
					   (uint32_t)b.entry);
		if (!obj ||
		    cache_stream_add_object(s, obj, b.begin, b.end - b.begin)) {
			cache_object_put(mx->ch->cache, obj);
			cache_stream_end(s, ENOMEM);
			mx->given = mx->norder + 1;
			break;
		}
		cache_object_put(mx->ch->cache, obj);
	}
	if (mx->given == mx->norder)
		cache_stream_end(s, 0);
	pthread_mutex_unlock(&mx->lock);
}

/* Reads the next block of the order into mx->block and keeps its pieces.
 * EIO when there is none (a record drawn that no block gives: a bug). */
static int read_block(struct mix *mx)
{
	struct block_at b;
	uint64_t eb, got = 0;

	if (mx->next_block >= mx->norder)
		return EIO;
	eb = mx->order[mx->next_block++];
	block_locate(&mx->me, eb, &b);
	while (got < b.end - b.begin) {
		struct channel_view view;
		uint64_t want = b.end - b.begin - got;
		int rc;

		memset(&view, 0, sizeof(view));
		rc = mx->src->ops->read(
		    mx->src, mx->src_pos,
		    want < (1u << 20) ? (size_t)want : (1u << 20), &view, NULL);
		if (!rc && view.bytes == 0)
			rc = EIO; /* shorter than listed */
		for (int i = 0; !rc && i < view.count; i++) {
			memcpy(mx->block + got, view.iov[i].iov_base,
			       view.iov[i].iov_len);
			got += view.iov[i].iov_len;
		}
		mx->src_pos += view.bytes;
		mx->src->ops->release(mx->src, &view);
		if (rc)
			return rc;
	}
	return harvest(mx, eb);
}

/* Record r, whole in the store (reading blocks until it is). */
static int record_ready(struct mix *mx, uint64_t r, struct stored **out)
{
	for (;;) {
		struct stored *s = held_find(&mx->held, r);
		int rc;

		if (s && s->filled == s->len) {
			*out = s;
			return 0;
		}
		rc = read_block(mx);
		if (rc)
			return rc;
	}
}

/* The next record out becomes mx->cur: false at the end. */
static int next_record(struct mix *mx, bool *got)
{
	uint64_t r;
	int rc = draw(&mx->me, &mx->d, &r, got);

	if (rc || !*got)
		return rc;
	rc = record_ready(mx, r, &mx->cur);
	if (rc)
		return rc;
	mx->cur_key = r;
	mx->cur_off = 0;
	mx->cur_len = record_out_len(mx->me.ix, record_entry(mx->me.ix, r), r);
	return 0;
}

static int mix_read(struct channel_stage *st, uint64_t offset, size_t size,
		    struct channel_view *view, struct channel_origin *origin)
{
	struct mix *mx = of_stage(st);
	struct channel_chunk *chunk;
	size_t n = 0;
	int rc = 0;

	view->count = 0;
	view->bytes = 0;
	view->nchunks = 0;
	if (origin)
		return EINVAL;
	if (offset != mx->pos)
		return ESPIPE;
	if (mx->error)
		return mx->error;
	if (size > MIX_READ_MAX)
		size = MIX_READ_MAX;
	chunk = channel_chunk_adopt(malloc(size ? size : 1), size);
	if (!chunk)
		return ENOMEM;
	while (n < size) {
		uint64_t left, take;

		if (!mx->cur) {
			bool got;

			rc = next_record(mx, &got);
			if (rc || !got)
				break;
		}
		left = mx->cur_len - mx->cur_off;
		take = left < size - n ? left : size - n;
		if (mx->cur_off < mx->cur->len) {
			uint64_t have = mx->cur->len - mx->cur_off;
			uint64_t c = take < have ? take : have;

			memcpy(chunk->data + n, mx->cur->buf + mx->cur_off, c);
			if (c < take)
				chunk->data[n + c] =
				    '\n'; /* an open last line */
		} else {
			chunk->data[n] = '\n';
		}
		n += take;
		mx->cur_off += take;
		if (mx->cur_off == mx->cur_len) {
			held_drop(&mx->held, mx->cur);
			mx->cur = NULL;
		}
	}
	if (rc && n == 0) {
		channel_chunk_unref(NULL, chunk);
		if (rc != ENOMEM)
			util_error("%s: the record shuffle: reads fail (%s)",
				   mx->label,
				   rc == EIO ? "a block could not be read"
					     : "out of memory");
		mx->error = rc == ENOMEM ? ENOMEM : EIO;
		return mx->error;
	}
	if (rc)
		mx->error = rc == ENOMEM ? ENOMEM : EIO; /* at the next read */
	mx->pos += n;
	if (n) {
		view->stage_iov[0].iov_base = chunk->data;
		view->stage_iov[0].iov_len = n;
		view->iov = view->stage_iov;
		view->count = 1;
		view->bytes = n;
		view->chunks[view->nchunks++] = chunk;
	} else {
		channel_chunk_unref(NULL, chunk);
	}
	return 0;
}

static void mix_release(struct channel_stage *st, struct channel_view *view)
{
	(void)st;
	for (int i = 0; i < view->nchunks; i++)
		channel_chunk_unref(NULL, view->chunks[i]);
	view->nchunks = 0;
	view->count = 0;
	view->bytes = 0;
}

static uint64_t mix_position(struct channel_stage *st)
{
	return of_stage(st)->pos;
}

static void mix_destroy(struct channel_stage *st)
{
	struct mix *mx = of_stage(st);

	channel_stack_destroy(mx->src);
	cache_stream_destroy(mx->stream);
	held_free(&mx->held);
	draws_free(&mx->d);
	free(mx->live);
	if (mx->order != mx->me.perm)
		free(mx->order);
	mix_epoch_free(&mx->me);
	free(mx->block);
	pthread_mutex_destroy(&mx->lock);
	free(mx);
}

static const struct channel_stage_ops mix_ops = {
    .read = mix_read,
    .release = mix_release,
    .position = mix_position,
    .destroy = mix_destroy,
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Appends record r's blocks not yet in the order (mark: in it). */
static void order_span(struct mix *mx, uint8_t *mark, uint64_t r)
{
	size_t e = record_entry(mx->me.ix, r);
	uint64_t a, z;

	record_span(&mx->me, e, r, &a, &z);
	for (uint64_t b = a; b <= z; b++)
		if (!mark[b]) {
			mark[b] = 1;
			mx->order[mx->norder++] = (uint32_t)b;
		}
}

/*
 * A reader started past the first draw: the live records (the pool's,
 * the last loaded block's still to load, cur) and the order of blocks to
 * read: theirs (the next drawn's first), then P from the load point, each
 * block preceded by those before the load point that its records reach
 * into.
 */
static int plan_resumed(struct mix *mx, uint64_t cur)
{
	struct mix_draws *d = &mx->d;
	const struct mix_epoch *me = &mx->me;
	uint8_t *mark;
	size_t n = 0;

	mx->live =
	    malloc((d->npool + (d->ninq - d->inq_next) + 1) * sizeof(uint64_t));
	mx->order = malloc((me->nblocks ? me->nblocks : 1) * sizeof(uint32_t));
	mark = calloc(me->nblocks ? me->nblocks : 1, 1);
	if (!mx->live || !mx->order || !mark) {
		free(mark);
		return ENOMEM;
	}
	memcpy(mx->live, d->pool, d->npool * sizeof(uint64_t));
	n = d->npool;
	for (size_t i = d->inq_next; i < d->ninq; i++)
		mx->live[n++] = d->inq[i];
	if (cur != UINT64_MAX)
		mx->live[n++] = cur;
	mx->nlive = n;
	mx->floor = d->t;
	/* the first record out first */
	if (cur != UINT64_MAX)
		order_span(mx, mark, cur);
	else if (d->npool)
		order_span(mx, mark, peek_draw(d));
	for (size_t i = 0; i < n; i++)
		order_span(mx, mark, mx->live[i]);
	qsort(mx->live, n, sizeof(uint64_t), cmp_u64);
	for (size_t t = d->t; t < me->nblocks; t++) {
		uint64_t eb = me->perm[t];
		struct block_at b;
		uint64_t ends[2];
		int nends = 0;

		block_locate(me, eb, &b);
		ends[nends] = block_straddle_in(me, &b);
		nends += ends[nends] != UINT64_MAX;
		if (b.rl > b.rf)
			ends[nends++] = b.rl - 1;
		for (int k = 0; k < nends; k++) {
			uint64_t a, z;

			if (record_owner(me, b.entry, ends[k]) != eb)
				continue;
			record_span(me, b.entry, ends[k], &a, &z);
			for (uint64_t x = a; x <= z; x++)
				if (!mark[x] && me->posof[x] < d->t) {
					mark[x] = 1;
					mx->order[mx->norder++] = (uint32_t)x;
				}
		}
		if (!mark[eb]) {
			mark[eb] = 1;
			mx->order[mx->norder++] = (uint32_t)eb;
		}
	}
	free(mark);
	return 0;
}

/* Places mx at byte first_read: draws what comes before it, and orders
 * the blocks to read from there.  *cur and *skip: the record begun there
 * (UINT64_MAX: none). */
static int mix_place(struct mix *mx, uint64_t first_read, uint64_t *cur,
		     uint64_t *skip)
{
	int rc;

	*cur = UINT64_MAX;
	*skip = 0;
	/* (past the end: reads there find nothing) */
	mx->pos = first_read;
	if (first_read == 0) {
		mx->order = mx->me.perm;
		mx->norder = mx->me.nblocks;
		return 0;
	}
	rc = draws_skip(&mx->me, &mx->d, first_read, cur, skip);
	return rc ? rc : plan_resumed(mx, *cur);
}

/* The record begun at the first read, whole in the store (its blocks
 * come first in the order). */
static int mix_begin(struct mix *mx, uint64_t cur, uint64_t skip)
{
	int rc;

	if (cur == UINT64_MAX)
		return 0;
	rc = record_ready(mx, cur, &mx->cur);
	if (rc)
		return rc;
	mx->cur_key = cur;
	mx->cur_off = skip;
	mx->cur_len =
	    record_out_len(mx->me.ix, record_entry(mx->me.ix, cur), cur);
	return 0;
}

struct channel_stage *channel_mix_create(struct channel *ch,
					 struct epoch_plan *plan,
					 uint64_t first_read)
{
	const struct record_index *ix = record_index_get(ch);
	uint64_t cur = UINT64_MAX, skip = 0;
	struct mix *mx;
	int rc;

	if (!ix)
		return NULL;
	mx = calloc(1, sizeof(*mx));
	if (!mx) {
		errno = ENOMEM;
		return NULL;
	}
	mx->stage.ops = &mix_ops;
	mx->ch = ch;
	pthread_mutex_init(&mx->lock, NULL);
	snprintf(mx->label, sizeof(mx->label), "channel '%s' epoch %u",
		 ch->spec->name, plan->epoch);
	rc = mix_epoch_init(&mx->me, ch, ix, plan);
	if (!rc)
		rc = draws_init(&mx->d, &mx->me, ch, plan->epoch);
	if (!rc) {
		mx->block = malloc(ix->block);
		rc = mx->block ? 0 : ENOMEM;
	}
	if (!rc)
		rc = mix_place(mx, first_read, &cur, &skip);
	if (!rc) {
		mx->stream =
		    cache_stream_create_plan(ch->cache, mix_refill, mx);
		rc = mx->stream ? 0 : ENOMEM;
	}
	if (!rc) {
		cache_stream_set_trim(mx->stream);
		mix_refill(mx, mx->stream);
		mx->src = channel_cache_stage_create(ch->cache, mx->stream, 0);
		rc = mx->src ? 0 : ENOMEM;
	}
	if (!rc) {
		rc = mix_begin(mx, cur, skip);
		if (rc == EIO) {
			mx->error = EIO; /* shown at the first read */
			rc = 0;
		}
	}
	if (rc) {
		mix_destroy(&mx->stage);
		errno = rc;
		return NULL;
	}
	return &mx->stage;
}

int channel_mix_record_offset(struct channel *ch, struct epoch_plan *plan,
			      uint64_t record, uint64_t *offset)
{
	const struct record_index *ix = record_index_get(ch);
	struct mix_epoch me;
	struct mix_draws d;
	int rc;

	if (!ix)
		return errno;
	rc = mix_epoch_init(&me, ch, ix, plan);
	if (rc)
		return rc;
	rc = draws_init(&d, &me, ch, plan->epoch);
	while (!rc && d.drawn < record) {
		uint64_t r;
		bool got;

		rc = draw(&me, &d, &r, &got);
		if (rc || !got)
			break;
		d.out += record_out_len(ix, record_entry(ix, r), r);
	}
	*offset = d.out;
	draws_free(&d);
	mix_epoch_free(&me);
	return rc;
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
		size_t e = plan->order[i];

		if (e >= ix->entries)
			return ESTALE;
		bytes += ix->sizes[e] + (ix->open_end[e / 64] >> (e % 64) & 1);
	}
	*size = bytes;
	return 0;
}
