/*
 * mix: the stage that serves a record-shuffled epoch (--shuffle-buffer),
 * reading the blocks that the draws (channel/mix_draw.c) load.
 *
 * A stream of the epoch's blocks (a plan stream of the cache, prefetched
 * as any) is read in the order the draws load them.  A block read as it
 * loads becomes a buffer of the records it loads, back to back: the
 * records that begin in it, copied in one piece, with the one that
 * reaches into it from before (or runs on past it) when it loads that
 * one, made whole from the pieces that earlier blocks left held.  Each
 * pick of the block's ticket takes its buffer's next record, so a buffer
 * is read front to back and shrinks (copied smaller) once half of it has
 * gone out: memory stays near what the pool holds.  A fresh epoch's stream
 * is P itself.  A reader started at K reads first the blocks whose
 * records the pool holds at K (the next one out first, each after the
 * blocks its records reach into), taking their records from the cursor
 * on, then P from the load point on.
 *
 * Memory: the buffers (the pool's records, at most twice over), pieces
 * waiting for their block, 4 bytes a record in the pool, about 40 bytes
 * a block.
 */
#include "config.h"

#include "channel/mix_draw.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cache/catalog.h"
#include "channel/core.h"
#include "util/util.h"

/* blocks the mixer's stream is given at a time */
#define MIX_FILL 256
/* bytes a read hands out at most */
#define MIX_READ_MAX (1u << 20)
/* a buffer this big or bigger is copied smaller once half of it is out */
#define SHRINK_MIN (64u << 10)

/* ---- held: pieces of records waiting for the block that loads them,
 * by record number ---- */

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
	return s;
}

/* Frees s and its slot (backward-shift deletion). */
static void held_drop(struct held_map *m, struct stored *s)
{
	size_t mask = m->cap - 1;
	size_t i = (size_t)(s - m->slots), j = i;

	free(s->buf);
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
		if (m->slots[i].key)
			free(m->slots[i].buf);
	free(m->slots);
	memset(m, 0, sizeof(*m));
}

/* ---- the stage ---- */

/* The records a block loaded, back to back, in chunks of CHUNK bytes
 * (chunk i holds bytes [i * CHUNK, ...)), from off on still to go: a
 * chunk goes back to the pool once off has passed it, so memory follows
 * what is left to go out, without copying it smaller. */
#define CHUNK (16u << 10)

struct block_buf {
	char **chunks; /* NULL: no buffer */
	uint64_t off, size;
	/* its last bytes, [tail_at, size), once few: copied out of their
	 * chunks into a block of their own, so that a buffer whose last
	 * records linger in the pool pins no chunk */
	char *tail;
	uint64_t tail_at;
};
/* bytes left that a buffer keeps in a tail */
#define TAIL_MAX (CHUNK / 8)

/* chunks freed, for the next buffers: their pages stay mapped and warm */
struct chunk_pool {
	char **free;
	size_t n, cap;
	uint64_t in_use;   /* chunks in buffers */
	uint64_t peak;	   /* the most there were at once (all held: the
			      freed ones are kept) */
	uint64_t *counted; /* the channel's tally of them, in bytes */
};

static char *chunk_get(struct chunk_pool *cp)
{
	char *c = cp->n ? cp->free[--cp->n] : malloc(CHUNK);

	if (!c)
		return NULL;
	if (++cp->in_use > cp->peak) {
		cp->peak = cp->in_use;
		/* the channel's memory counts the most a reader's pool took */
		__atomic_add_fetch(cp->counted, CHUNK, __ATOMIC_RELAXED);
	}
	return c;
}

static void chunk_put(struct chunk_pool *cp, char *c)
{
	cp->in_use--;
	if (cp->n == cp->cap) {
		size_t cap = cp->cap ? cp->cap * 2 : 64;
		char **n = realloc(cp->free, cap * sizeof(*n));

		if (!n) {
			free(c);
			return;
		}
		cp->free = n;
		cp->cap = cap;
	}
	cp->free[cp->n++] = c;
}

static void chunk_pool_free(struct chunk_pool *cp)
{
	if (cp->counted)
		__atomic_sub_fetch(cp->counted, cp->peak * CHUNK,
				   __ATOMIC_RELAXED);
	for (size_t i = 0; i < cp->n; i++)
		free(cp->free[i]);
	free(cp->free);
	memset(cp, 0, sizeof(*cp));
}

/* Copies len bytes from src to bb at byte at (its chunks there). */
static void buf_write(struct block_buf *bb, uint64_t at, const char *src,
		      uint64_t len)
{
	while (len) {
		uint64_t in = at % CHUNK, n = CHUNK - in;

		if (n > len)
			n = len;
		memcpy(bb->chunks[at / CHUNK] + in, src, n);
		src += n;
		at += n;
		len -= n;
	}
}

/* Copies len bytes of bb from byte at to dst. */
static void buf_read(const struct block_buf *bb, uint64_t at, char *dst,
		     uint64_t len)
{
	if (bb->tail) {
		memcpy(dst, bb->tail + (at - bb->tail_at), len);
		return;
	}
	while (len) {
		uint64_t in = at % CHUNK, n = CHUNK - in;

		if (n > len)
			n = len;
		memcpy(dst, bb->chunks[at / CHUNK] + in, n);
		dst += n;
		at += n;
		len -= n;
	}
}

static void buf_free(struct chunk_pool *cp, struct block_buf *bb)
{
	uint64_t n = (bb->size + CHUNK - 1) / CHUNK;

	if (bb->tail) {
		__atomic_sub_fetch(cp->counted, bb->size - bb->tail_at,
				   __ATOMIC_RELAXED);
		free(bb->tail);
	}

	for (uint64_t i = 0; bb->chunks && i < n; i++)
		if (bb->chunks[i])
			chunk_put(cp, bb->chunks[i]);
	free(bb->chunks);
	memset(bb, 0, sizeof(*bb));
}

/* bb's last bytes, from off, into a tail of their own; its chunks go
 * back (out of memory: it stays as it is). */
static void buf_to_tail(struct chunk_pool *cp, struct block_buf *bb)
{
	uint64_t left = bb->size - bb->off, n = (bb->size + CHUNK - 1) / CHUNK;
	char *tail = malloc(left);

	if (!tail)
		return;
	buf_read(bb, bb->off, tail, left);
	for (uint64_t i = bb->off / CHUNK; i < n; i++) {
		chunk_put(cp, bb->chunks[i]);
		bb->chunks[i] = NULL;
	}
	bb->tail = tail;
	bb->tail_at = bb->off;
	__atomic_add_fetch(cp->counted, left, __ATOMIC_RELAXED);
}

/* A buffer of size bytes, its chunks from cp: 0 or ENOMEM. */
static int buf_make(struct chunk_pool *cp, struct block_buf *bb, uint64_t size)
{
	uint64_t n = (size + CHUNK - 1) / CHUNK;

	bb->size = size;
	bb->off = 0;
	bb->chunks = calloc(n ? n : 1, sizeof(char *));
	if (!bb->chunks)
		return ENOMEM;
	for (uint64_t i = 0; i < n; i++) {
		bb->chunks[i] = chunk_get(cp);
		if (!bb->chunks[i]) {
			buf_free(cp, bb);
			return ENOMEM;
		}
	}
	return 0;
}

struct mix {
	struct channel_stage stage; /* first */
	struct channel *ch;
	struct mix_epoch me;
	struct mix_draws d;
	struct held_map held;
	struct block_buf *bufs; /* each block's, once read as it loads */
	struct chunk_pool chunks;
	/* the first place in P not loaded when the reader started, and the
	 * record it began inside (begun: its block, from its draw on) */
	size_t floor;
	bool begun;
	uint32_t begun_block;
	/* the blocks to read, in order, and how many the stream was given */
	uint32_t *order;
	size_t norder, given;
	uint8_t *in_order;    /* (a reader started past the first draw) */
	pthread_mutex_t lock; /* given (the refill runs on any thread) */
	struct cache_stream *stream;
	struct channel_stage *src; /* a cache stage over the stream */
	uint64_t src_pos;	   /* the stream's bytes read */
	size_t next_block;	   /* order[next_block] is read next */
	char *block; /* a block's bytes when they come in pieces */
	/* the record going out: its block, stored and output length, and
	 * its bytes out so far */
	uint32_t cur_block;
	bool cur;
	uint64_t cur_len, cur_out, cur_off;
	uint64_t pos; /* the epoch's bytes before the next read */
	int error;
	/* read buffers handed back, for the next reads (under lock) */
	char *spare[4];
	unsigned nspare;
	char label[CHANNEL_NAME_MAX + 32];
};

static struct mix *of_stage(struct channel_stage *st)
{
	return (struct mix *)st;
}

/* The block that loads record r, and r's place among its records. */
static uint64_t owner_of(const struct mix *mx, size_t e, uint64_t r,
			 uint64_t *idx)
{
	uint64_t ob = mix_record_owner(&mx->me, e, r);

	*idx = r - mx->me.own_lo[ob];
	return ob;
}

/* Block eb's records gone out before the reader started (those drawn,
 * but for the one it began inside). */
static uint32_t out_before(const struct mix *mx, uint64_t eb)
{
	return mx->d.cursor[eb] - (mx->begun && eb == mx->begun_block);
}

/* Whether block eb is read as it loads (its records go into its buffer):
 * every block of a fresh epoch; for a reader started at K, those loaded
 * from K on, and those before with records still to go out. */
static bool loads_here(const struct mix *mx, uint64_t eb)
{
	return mx->me.posof[eb] >= mx->floor ||
	       out_before(mx, eb) < mx->me.own_n[eb];
}

/* Record r's piece of block b (at data, the block's bytes) into its held
 * slot; *out: the slot (NULL when r needs nothing from here). */
static int keep_piece(struct mix *mx, const struct block_at *b, uint64_t eb,
		      uint64_t r, const char *data, struct stored **out)
{
	const struct record_index *ix = mx->me.ix;
	uint64_t len = record_stored_len(ix, b->entry, r);
	uint64_t from = ix->start[r] > b->begin ? ix->start[r] : b->begin;
	uint64_t to = ix->start[r] + len < b->end ? ix->start[r] + len : b->end;
	uint64_t a, z, bit;
	struct stored *s;

	mix_record_span(&mx->me, b->entry, r, &a, &z);
	s = held_get(&mx->held, r, len);
	if (!s)
		return ENOMEM;
	bit = 1ULL << (eb - a);
	if (!(s->pieces & bit)) {
		memcpy(s->buf + (from - ix->start[r]), data + (from - b->begin),
		       to - from);
		s->pieces |= bit;
		s->filled += to - from;
	}
	*out = s;
	return 0;
}

/* Block eb's pieces of records that other blocks load (and that are still
 * to go out), held for them. */
static int keep_others(struct mix *mx, const struct block_at *b, uint64_t eb,
		       const char *data)
{
	uint64_t ends[2];
	int n = 0, rc = 0;

	ends[n] = mix_block_straddle_in(&mx->me, b);
	n += ends[n] != UINT64_MAX;
	if (b->rl > b->rf && (!n || b->rl - 1 != ends[0]))
		ends[n++] = b->rl - 1;
	for (int k = 0; k < n && !rc; k++) {
		uint64_t idx, ob = owner_of(mx, b->entry, ends[k], &idx);
		struct stored *s;

		if (ob == eb || mx->bufs[ob].chunks ||
		    idx < out_before(mx, ob) ||
		    (mx->me.posof[ob] < mx->floor && !loads_here(mx, ob)))
			continue; /* loaded here, or out already */
		rc = keep_piece(mx, b, eb, ends[k], data, &s);
	}
	return rc;
}

/* Appends record r (loaded by eb: whole once this block's piece is in) to
 * buf at *at. */
static int take_record(struct mix *mx, const struct block_at *b, uint64_t eb,
		       uint64_t r, const char *data, struct block_buf *bb,
		       uint64_t *at)
{
	const struct record_index *ix = mx->me.ix;
	uint64_t len = record_stored_len(ix, b->entry, r);
	struct stored *s;
	int rc = keep_piece(mx, b, eb, r, data, &s);

	if (rc)
		return rc;
	if (s->filled != s->len)
		return EIO; /* a piece did not come first: a bug */
	buf_write(bb, *at, s->buf, len);
	*at += len;
	held_drop(&mx->held, s);
	return 0;
}

/* Block eb's bytes came (data): its buffer, when it is read as it loads,
 * and the pieces it holds of records other blocks load. */
static int take_block(struct mix *mx, uint64_t eb, const char *data)
{
	const struct record_index *ix = mx->me.ix;
	uint64_t lo, hi, size = 0, at = 0;
	struct block_buf *bb;
	struct block_at b;
	int rc;

	mix_block_locate(&mx->me, eb, &b);
	rc = keep_others(mx, &b, eb, data);
	if (rc || !loads_here(mx, eb) || mx->bufs[eb].chunks)
		return rc;
	lo = mx->me.own_lo[eb] + out_before(mx, eb);
	hi = mx->me.own_lo[eb] + mx->me.own_n[eb];
	for (uint64_t r = lo; r < hi; r++)
		size += record_stored_len(ix, b.entry, r);
	bb = &mx->bufs[eb];
	rc = buf_make(&mx->chunks, bb, size);
	for (uint64_t r = lo; r < hi && !rc;) {
		/* the records whole in the block, in one copy */
		uint64_t run = r;

		while (run < hi && ix->start[run] >= b.begin &&
		       ix->start[run] + record_stored_len(ix, b.entry, run) <=
			   b.end)
			run++;
		if (run > r) {
			uint64_t from = ix->start[r];
			uint64_t to = ix->start[run - 1] +
				      record_stored_len(ix, b.entry, run - 1);

			buf_write(bb, at, data + (from - b.begin), to - from);
			at += to - from;
			r = run;
			continue;
		}
		rc = take_record(mx, &b, eb, r, data, bb, &at);
		r++;
	}
	if (rc)
		buf_free(&mx->chunks, bb);
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

		mix_block_locate(me, mx->order[mx->given], &b);
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

/* Reads the next block of the order and takes it.  EIO when there is none
 * (a record drawn that no block gives: a bug) or a read failed. */
static int read_block(struct mix *mx)
{
	struct channel_view view;
	struct block_at b;
	uint64_t eb, got = 0, len;
	const char *data = mx->block;
	int rc = 0;

	memset(&view, 0, sizeof(view));
	if (mx->next_block >= mx->norder)
		return EIO;
	eb = mx->order[mx->next_block++];
	mix_block_locate(&mx->me, eb, &b);
	len = b.end - b.begin;
	while (got < len && !rc) {
		uint64_t want = len - got;

		rc = mx->src->ops->read(
		    mx->src, mx->src_pos,
		    want < (1u << 20) ? (size_t)want : (1u << 20), &view, NULL);
		if (!rc && view.bytes == 0)
			rc = EIO; /* shorter than listed */
		if (rc)
			break;
		mx->src_pos += view.bytes;
		if (got == 0 && view.count == 1 && view.bytes == len) {
			/* whole: taken from the cache's block */
			rc = take_block(mx, eb, view.iov[0].iov_base);
			mx->src->ops->release(mx->src, &view);
			return rc;
		}
		for (int i = 0; i < view.count; i++) {
			memcpy(mx->block + got, view.iov[i].iov_base,
			       view.iov[i].iov_len);
			got += view.iov[i].iov_len;
		}
		mx->src->ops->release(mx->src, &view);
	}
	if (rc) {
		mx->src->ops->release(mx->src, &view);
		return rc;
	}
	return take_block(mx, eb, data);
}

/* Reads blocks of the order until eb's buffer is there. */
static int buffer_ready(struct mix *mx, uint64_t eb)
{
	while (!mx->bufs[eb].chunks) {
		int rc = read_block(mx);

		if (rc)
			return rc;
	}
	return 0;
}

/* The draws loaded block eb: its buffer, before any of its tickets is
 * drawn. */
static int mix_loaded(void *arg, uint64_t eb)
{
	struct mix *mx = arg;

	return mx->me.own_n[eb] ? buffer_ready(mx, eb) : 0;
}

/* A record of block eb's went out: its buffer moves on, giving back the
 * chunks it passed (all at its end). */
static void buffer_passed(struct mix *mx, uint32_t eb, uint64_t len)
{
	struct block_buf *bb = &mx->bufs[eb];
	uint64_t from = bb->off / CHUNK;

	bb->off += len;
	if (bb->off == bb->size) {
		buf_free(&mx->chunks, bb);
		return;
	}
	for (uint64_t i = from; !bb->tail && i < bb->off / CHUNK; i++) {
		chunk_put(&mx->chunks, bb->chunks[i]);
		bb->chunks[i] = NULL;
	}
	if (!bb->tail && bb->size - bb->off <= TAIL_MAX)
		buf_to_tail(&mx->chunks, bb);
}

/* The next record out becomes the current one: false at the end. */
static int next_record(struct mix *mx, bool *got)
{
	const struct record_index *ix = mx->me.ix;
	const uint32_t *far, *near;
	uint32_t eb;
	size_t slot, e;
	uint64_t r;
	int rc = mix_draw_pick(&mx->me, &mx->d, &eb, &r, &slot, got);

	if (rc || !*got)
		return rc;
	/* a buffer's next record, far apart from the last one out: the
	 * slots of the picks a little further on are fetched ahead, and the
	 * records of those nearer */
	far = mix_draw_ahead(&mx->d, MIX_AHEAD - 2);
	if (far)
		__builtin_prefetch(far);
	near = mix_draw_ahead(&mx->d, 6);
	if (near && mx->bufs[*near].chunks) {
		const struct block_buf *sb = &mx->bufs[*near];
		const char *at =
		    sb->tail ? sb->tail + (sb->off - sb->tail_at)
			     : sb->chunks[sb->off / CHUNK] + sb->off % CHUNK;

		__builtin_prefetch(at);
		__builtin_prefetch(at + 64);
		__builtin_prefetch(at + 128);
	}
	if (!mx->bufs[eb].chunks) {
		/* (a reader started at K: made now, from this record on) */
		mx->d.cursor[eb]--;
		rc = buffer_ready(mx, eb);
		mx->d.cursor[eb]++;
		if (rc)
			return rc;
	}
	e = mx->me.objs[mx->me.obj_of[eb]];
	mx->cur = true;
	mx->cur_block = eb;
	mx->cur_len = record_stored_len(ix, e, r);
	mx->cur_out = record_out_len(ix, e, r);
	mx->cur_off = 0;
	/* its place in the pool goes to the next ticket loaded */
	return mix_draw_refill(&mx->me, &mx->d, slot);
}

/* A read's buffer comes back (the last view of it released). */
static void out_recycle(void *arg, char *data, size_t cap)
{
	struct mix *mx = arg;

	(void)cap;
	pthread_mutex_lock(&mx->lock);
	if (mx->nspare < 4) {
		mx->spare[mx->nspare++] = data;
		data = NULL;
	}
	pthread_mutex_unlock(&mx->lock);
	free(data);
}

/* A buffer for a read (MIX_READ_MAX bytes): one handed back, or new. */
static struct channel_chunk *out_chunk(struct mix *mx)
{
	struct channel_chunk *chunk;
	char *data = NULL;

	pthread_mutex_lock(&mx->lock);
	if (mx->nspare)
		data = mx->spare[--mx->nspare];
	pthread_mutex_unlock(&mx->lock);
	if (!data)
		data = malloc(MIX_READ_MAX);
	if (!data)
		return NULL;
	chunk = channel_chunk_adopt(data, MIX_READ_MAX);
	if (chunk) {
		chunk->recycle = out_recycle;
		chunk->recycle_arg = mx;
	}
	return chunk;
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
	chunk = out_chunk(mx);
	if (!chunk)
		return ENOMEM;
	if (size > MIX_READ_MAX)
		size = MIX_READ_MAX;
	while (n < size) {
		struct block_buf *bb;
		uint64_t take, c;

		if (!mx->cur) {
			bool got;

			rc = next_record(mx, &got);
			if (rc || !got)
				break;
		}
		bb = &mx->bufs[mx->cur_block];
		take = mx->cur_out - mx->cur_off;
		if (take > size - n)
			take = size - n;
		c = mx->cur_off < mx->cur_len ? mx->cur_len - mx->cur_off : 0;
		if (c > take)
			c = take;
		buf_read(bb, bb->off + mx->cur_off, chunk->data + n, c);
		if (c < take)
			chunk->data[n + c] = '\n'; /* an open last line */
		n += take;
		mx->cur_off += take;
		if (mx->cur_off == mx->cur_out) {
			buffer_passed(mx, mx->cur_block, mx->cur_len);
			mx->cur = false;
		}
	}
	if (rc) {
		if (rc != ENOMEM)
			util_error("%s: the record shuffle: reads fail (%s)",
				   mx->label,
				   rc == EIO ? "a block could not be read"
					     : "out of memory");
		mx->error = rc == ENOMEM ? ENOMEM : EIO;
		if (n == 0) {
			channel_chunk_unref(NULL, chunk);
			return mx->error;
		}
	}
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
	for (size_t i = 0; mx->bufs && i < mx->me.nblocks; i++)
		buf_free(&mx->chunks, &mx->bufs[i]);
	free(mx->bufs);
	chunk_pool_free(&mx->chunks);
	for (unsigned i = 0; i < mx->nspare; i++)
		free(mx->spare[i]);
	mix_draws_free(&mx->d);
	free(mx->in_order);
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

/*
 * Puts block eb in the order of a reader started past the first draw,
 * after the blocks before the load point that the records it loads from
 * its cursor on reach into (and theirs first: those come earlier in P, so
 * this ends).
 */
static void order_add(struct mix *mx, uint64_t eb)
{
	const struct mix_epoch *me = &mx->me;
	uint64_t lo, hi;
	size_t e;

	if (mx->in_order[eb])
		return;
	mx->in_order[eb] = 1;
	lo = me->own_lo[eb] + out_before(mx, eb);
	hi = me->own_lo[eb] + me->own_n[eb];
	e = me->objs[me->obj_of[eb]];
	for (int k = 0; k < 2 && lo < hi; k++) {
		uint64_t r = k ? hi - 1 : lo, a, z;

		mix_record_span(me, e, r, &a, &z);
		for (uint64_t x = a; x <= z; x++)
			if (x != eb && me->posof[x] < mx->floor)
				order_add(mx, x);
	}
	mx->order[mx->norder++] = (uint32_t)eb;
}

/*
 * A reader started past the first draw: the blocks to read, in order:
 * the one the next pick takes from, those the pool holds tickets of and
 * the last one loaded, each after what its records reach into; then P from
 * the load point on.
 */
static int plan_resumed(struct mix *mx)
{
	struct mix_draws *d = &mx->d;
	const struct mix_epoch *me = &mx->me;

	mx->order = malloc((me->nblocks ? me->nblocks : 1) * sizeof(uint32_t));
	mx->in_order = calloc(me->nblocks ? me->nblocks : 1, 1);
	if (!mx->order || !mx->in_order)
		return ENOMEM;
	mx->floor = d->t;
	if (mx->begun)
		order_add(mx, mx->begun_block);
	if (d->npool)
		order_add(mx, mix_draw_peek(d));
	for (uint64_t i = 0; i < d->npool; i++)
		order_add(mx, d->pool[i]);
	if (d->inq_left)
		order_add(mx, d->inq_block);
	for (size_t t = d->t; t < me->nblocks; t++)
		order_add(mx, me->perm[t]);
	return 0;
}

/*
 * Places mx at byte first_read: draws what comes before it (no data), and
 * orders the blocks to read from there; from then on the draws load with
 * their bytes.  *skip: bytes of the record begun there, already out.
 */
static int mix_place(struct mix *mx, uint64_t first_read, uint64_t first_record,
		     uint64_t *skip)
{
	struct mix_draws *d = &mx->d;
	int rc = 0;

	*skip = 0;
	/* (past the end: reads there find nothing) */
	mx->pos = first_read;
	if (first_record != UINT64_MAX) {
		/* by record: the draws alone, then their bytes */
		rc = mix_draws_skip_records(&mx->me, d, first_record);
		mx->pos = mix_draws_bytes(&mx->me, d);
	} else if (first_read) {
		rc = mix_draws_skip(&mx->me, d, first_read, &mx->begun_block,
				    skip, &mx->begun);
	}
	if (!rc && mx->pos == 0) {
		mx->order = mx->me.perm;
		mx->norder = mx->me.nblocks;
	} else if (!rc) {
		rc = plan_resumed(mx);
	}
	d->loaded = mix_loaded;
	d->arg = mx;
	return rc;
}

/* The record begun at the first read (its block comes first). */
static int mix_begin(struct mix *mx, uint64_t skip)
{
	const struct record_index *ix = mx->me.ix;
	uint32_t eb = mx->begun_block;
	uint64_t r;
	size_t e;
	int rc;

	if (!mx->begun)
		return 0;
	rc = buffer_ready(mx, eb);
	if (rc)
		return rc;
	mx->begun = false; /* (its buffer starts with it) */
	r = mx->me.own_lo[eb] + mx->d.cursor[eb] - 1;
	e = mx->me.objs[mx->me.obj_of[eb]];
	mx->cur = true;
	mx->cur_block = eb;
	mx->cur_len = record_stored_len(ix, e, r);
	mx->cur_out = record_out_len(ix, e, r);
	mx->cur_off = skip;
	return 0;
}

struct channel_stage *channel_mix_create(struct channel *ch,
					 struct epoch_plan *plan,
					 uint64_t first_read,
					 uint64_t first_record)
{
	const struct record_index *ix = record_index_get(ch);
	uint64_t skip = 0;
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
	mx->chunks.counted = &ch->mix_bytes;
	pthread_mutex_init(&mx->lock, NULL);
	snprintf(mx->label, sizeof(mx->label), "channel '%s' epoch %u",
		 ch->spec->name, plan->epoch);
	rc = mix_epoch_init(&mx->me, ch, ix, plan);
	if (!rc)
		rc = mix_draws_init(&mx->d, &mx->me, ch, plan->epoch);
	if (!rc) {
		mx->block = malloc(ix->block);
		mx->bufs = calloc(mx->me.nblocks ? mx->me.nblocks : 1,
				  sizeof(*mx->bufs));
		rc = mx->block && mx->bufs ? 0 : ENOMEM;
	}
	if (!rc)
		rc = mix_place(mx, first_read, first_record, &skip);
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
		rc = mix_begin(mx, skip);
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
