/*
 * mix: the stage that serves a record-shuffled epoch (--shuffle-buffer),
 * reading the blocks that the draws (channel/mix_draw.c) need.
 *
 * A stream of the epoch's blocks (a plan stream of the cache, prefetched
 * as any) is read in the order the draws load them: each block's records
 * are copied out as it loads (the pool holds them, each in a slab slot of
 * its size), and the pieces of a record that spans blocks wait, held by
 * number, for the last of them.  A fresh epoch's stream is P itself.  A
 * reader started at K reads first the blocks of the records the pool
 * holds at K (the next one out first), keeping those records (held by
 * number: the draws know them by number only), then P from the load point,
 * each block preceded by the blocks before that point that its records
 * reach into.
 *
 * Memory: the pool's records (about the buffer's bytes, in slabs that
 * stay at their peak until the reader goes), 16 bytes a record in the
 * pool (its number and its bytes' place), the held records and pieces,
 * 8 bytes a block.
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

/* A record's bytes as the stage keeps them: a header (its stored length,
 * and bit 63: a '\n' to add), then the bytes. */
#define REC_HDR	     8
#define REC_OPEN_BIT (1ULL << 63)

static uint64_t rec_len(const char *p)
{
	uint64_t h;

	memcpy(&h, p, sizeof(h));
	return h & ~REC_OPEN_BIT;
}

static uint64_t rec_out(const char *p)
{
	uint64_t h;

	memcpy(&h, p, sizeof(h));
	return (h & ~REC_OPEN_BIT) + (h >> 63);
}

/* ---- the slab: records' bytes, in slots of 16-byte sizes up to
 * SLAB_MAX (malloc past it), reused once freed: a stack of free slots a
 * size (an array, not a list through the slots, whose bytes are far out
 * of the caches by the time they are reused) ---- */

#define SLAB_STEP    16
#define SLAB_MAX     4096
#define SLAB_CLASSES (SLAB_MAX / SLAB_STEP + 1)
#define SLAB_CHUNK   (256u << 10)

struct slab_stack {
	char **slots;
	size_t n, cap;
};

struct rec_slab {
	struct slab_stack free[SLAB_CLASSES];
	struct slab_stack chunks;
	char *at; /* the rest of the newest chunk */
	size_t left;
};

static int stack_push(struct slab_stack *st, char *p)
{
	if (st->n == st->cap) {
		size_t cap = st->cap ? st->cap * 2 : 256;
		char **n = realloc(st->slots, cap * sizeof(*n));

		if (!n)
			return ENOMEM;
		st->slots = n;
		st->cap = cap;
	}
	st->slots[st->n++] = p;
	return 0;
}

static size_t slab_class(uint64_t len)
{
	size_t c = (size_t)((len + SLAB_STEP - 1) / SLAB_STEP);

	return c ? c : 1;
}

static char *slab_alloc(struct rec_slab *s, uint64_t len)
{
	size_t c = slab_class(len), size = c * SLAB_STEP;
	char *p;

	if (len > SLAB_MAX)
		return malloc(len);
	if (s->free[c].n)
		return s->free[c].slots[--s->free[c].n];
	if (s->left < size) {
		s->at = malloc(SLAB_CHUNK);
		if (!s->at || stack_push(&s->chunks, s->at)) {
			free(s->at);
			s->left = 0;
			return NULL;
		}
		s->left = SLAB_CHUNK;
	}
	p = s->at;
	s->at += size;
	s->left -= size;
	return p;
}

static void slab_free(struct rec_slab *s, char *p, uint64_t len)
{
	if (len > SLAB_MAX) {
		free(p);
		return;
	}
	/* (out of memory for the stack: the slot stays unused until the
	 * slab goes) */
	(void)stack_push(&s->free[slab_class(len)], p);
}

static void slab_destroy(struct rec_slab *s)
{
	for (size_t i = 0; i < s->chunks.n; i++)
		free(s->chunks.slots[i]);
	free(s->chunks.slots);
	for (size_t c = 0; c < SLAB_CLASSES; c++)
		free(s->free[c].slots);
	memset(s, 0, sizeof(*s));
}

/* ---- held: records the pool holds by number, and pieces of records
 * waiting for their last block ---- */

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
	struct rec_slab *slab; /* where their bytes are */
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
	bigger.slab = m->slab;
	free(m->slots);
	*m = bigger;
	return 0;
}

/* Record r's slot, made empty (len bytes; hdr its header) when it has
 * none. */
static struct stored *held_get(struct held_map *m, uint64_t r, uint64_t len,
			       uint64_t hdr)
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
	s->buf = slab_alloc(m->slab, REC_HDR + len);
	if (!s->buf)
		return NULL;
	memcpy(s->buf, &hdr, sizeof(hdr));
	s->key = r + 1;
	s->len = len;
	s->filled = 0;
	s->pieces = 0;
	m->used++;
	return s;
}

/* Takes s's bytes (the caller's now: slab_free() them) and frees its
 * slot (backward-shift deletion). */
static char *held_take(struct held_map *m, struct stored *s)
{
	size_t mask = m->cap - 1;
	size_t i = (size_t)(s - m->slots), j = i;
	char *buf = s->buf;

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
	return buf;
}

static void held_free(struct held_map *m)
{
	for (size_t i = 0; i < m->cap; i++)
		if (m->slots[i].key)
			slab_free(m->slab, m->slots[i].buf,
				  REC_HDR + m->slots[i].len);
	free(m->slots);
	memset(m, 0, sizeof(*m));
}

/* ---- the stage ---- */

struct mix {
	struct channel_stage stage; /* first */
	struct channel *ch;
	struct mix_epoch me;
	struct mix_draws d;
	struct rec_slab slab;
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
	char *block;		   /* a block's bytes when they come in pieces */
	/* the record going out: its bytes, its stored and its output
	 * length, its bytes out so far */
	char *cur;
	uint64_t cur_len, cur_out, cur_off;
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

/* Keeps record r's piece of block eb (at data, the block's bytes), when r
 * is still to go out: held until its last piece comes.  *s: its slot. */
static int keep_piece(struct mix *mx, const struct block_at *b, uint64_t eb,
		      uint64_t r, const char *data, struct stored **out)
{
	const struct record_index *ix = mx->me.ix;
	uint64_t len = record_stored_len(ix, b->entry, r);
	uint64_t from = ix->start[r] > b->begin ? ix->start[r] : b->begin;
	uint64_t to = ix->start[r] + len < b->end ? ix->start[r] + len : b->end;
	uint64_t a, z, bit;
	struct stored *s;

	*out = NULL;
	mix_record_span(&mx->me, b->entry, r, &a, &z);
	if (mx->me.posof[mix_record_owner(&mx->me, b->entry, r)] < mx->floor &&
	    !is_live(mx, r))
		return 0; /* out before the reader's start */
	s = held_get(&mx->held, r, len,
		     len | (record_out_len(ix, b->entry, r) > len ? REC_OPEN_BIT
								   : 0));
	if (!s)
		return ENOMEM;
	bit = 1ULL << (eb - a);
	if (!(s->pieces & bit)) {
		memcpy(s->buf + REC_HDR + (from - ix->start[r]),
		       data + (from - b->begin), to - from);
		s->pieces |= bit;
		s->filled += to - from;
	}
	*out = s;
	return 0;
}

/* A block read but not loaded (a reader started at K): its pieces of the
 * records still to go out. */
static int harvest(struct mix *mx, uint64_t eb, const char *data)
{
	struct block_at b;
	struct stored *s;
	uint64_t in;
	int rc = 0;

	mix_block_locate(&mx->me, eb, &b);
	in = mix_block_straddle_in(&mx->me, &b);
	if (in != UINT64_MAX)
		rc = keep_piece(mx, &b, eb, in, data, &s);
	for (uint64_t r = b.rf; !rc && r < b.rl; r++)
		rc = keep_piece(mx, &b, eb, r, data, &s);
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
		if (!obj || cache_stream_add_object(s, obj, b.begin,
						    b.end - b.begin)) {
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

/*
 * Reads the next block of the order: *eb, its bytes at *data (the cache's
 * block itself when it comes whole, else a copy in mx->block), valid until
 * view is released.  EIO when there is none (a record drawn that no block
 * gives: a bug) or a read failed.
 */
static int read_block(struct mix *mx, uint64_t *eb, const char **data,
		      struct channel_view *view)
{
	struct block_at b;
	uint64_t got = 0, len;

	memset(view, 0, sizeof(*view));
	if (mx->next_block >= mx->norder)
		return EIO;
	*eb = mx->order[mx->next_block++];
	mix_block_locate(&mx->me, *eb, &b);
	len = b.end - b.begin;
	while (got < len) {
		uint64_t want = len - got;
		int rc;

		rc = mx->src->ops->read(mx->src, mx->src_pos,
					want < (1u << 20) ? (size_t)want
							  : (1u << 20),
					view, NULL);
		if (!rc && view->bytes == 0)
			rc = EIO; /* shorter than listed */
		if (rc) {
			mx->src->ops->release(mx->src, view);
			return rc;
		}
		mx->src_pos += view->bytes;
		if (got == 0 && view->count == 1 && view->bytes == len) {
			*data = view->iov[0].iov_base; /* whole: no copy */
			return 0;
		}
		for (int i = 0; i < view->count; i++) {
			memcpy(mx->block + got, view->iov[i].iov_base,
			       view->iov[i].iov_len);
			got += view->iov[i].iov_len;
		}
		mx->src->ops->release(mx->src, view);
	}
	*data = mx->block;
	return 0;
}

/* Reads the next block of the order as one not loaded (harvest). */
static int read_other(struct mix *mx)
{
	struct channel_view view;
	const char *data;
	uint64_t eb;
	int rc = read_block(mx, &eb, &data, &view);

	if (rc)
		return rc;
	rc = harvest(mx, eb, data);
	mx->src->ops->release(mx->src, &view);
	return rc;
}

/* A record loaded with its last piece: its bytes, held no more (NULL: it
 * is not whole, which the draws rule out: a bug). */
static char *take_whole(struct mix *mx, struct stored *s)
{
	return s && s->filled == s->len ? held_take(&mx->held, s) : NULL;
}

/* The draws loaded block eb (the next block of the order, after those
 * before it that only a reader started at K reads): its records' bytes
 * into d->inq_data, in the order the draws listed them. */
static int mix_loaded(void *arg, uint64_t eb)
{
	struct mix *mx = arg;
	const struct record_index *ix = mx->me.ix;
	struct channel_view view;
	struct block_at b;
	struct stored *s;
	const char *data;
	uint64_t got_eb, in;
	size_t q = 0;
	int rc;

	while (mx->next_block < mx->norder && mx->order[mx->next_block] != eb) {
		rc = read_other(mx);
		if (rc)
			return rc;
	}
	rc = read_block(mx, &got_eb, &data, &view);
	if (rc)
		return rc;
	mix_block_locate(&mx->me, eb, &b);
	in = mix_block_straddle_in(&mx->me, &b);
	if (in != UINT64_MAX) {
		rc = keep_piece(mx, &b, eb, in, data, &s);
		if (!rc && q < mx->d.ninq && mx->d.inq[q] == in) {
			mx->d.inq_data[q] = take_whole(mx, s);
			rc = mx->d.inq_data[q++] ? 0 : EIO;
		}
	}
	for (uint64_t r = b.rf; !rc && r < b.rl; r++) {
		uint64_t len = record_stored_len(ix, b.entry, r);
		char *p;

		if (ix->start[r] + len <= b.end) {
			/* whole in the block: the draws listed it */
			uint64_t hdr =
			    len | (r + 1 == ix->first[b.entry + 1] &&
					   record_out_len(ix, b.entry, r) > len
				       ? REC_OPEN_BIT
				       : 0);

			p = slab_alloc(&mx->slab, REC_HDR + len);
			if (!p) {
				rc = ENOMEM;
				break;
			}
			memcpy(p, &hdr, sizeof(hdr));
			memcpy(p + REC_HDR, data + (ix->start[r] - b.begin),
			       len);
			mx->d.inq_data[q++] = p;
			continue;
		}
		rc = keep_piece(mx, &b, eb, r, data, &s);
		if (!rc && q < mx->d.ninq && mx->d.inq[q] == r) {
			mx->d.inq_data[q] = take_whole(mx, s);
			rc = mx->d.inq_data[q++] ? 0 : EIO;
		}
	}
	mx->src->ops->release(mx->src, &view);
	if (!rc && q != mx->d.ninq)
		rc = EIO; /* the draws and the blocks disagree: a bug */
	return rc;
}

/* Record r's bytes, held by number (a reader started at K: the blocks the
 * pool's records need come first in the order). */
static int held_ready(struct mix *mx, uint64_t r, char **out)
{
	for (;;) {
		struct stored *s = held_find(&mx->held, r);
		int rc;

		if (s && s->filled == s->len) {
			*out = held_take(&mx->held, s);
			return 0;
		}
		if (mx->next_block < mx->norder &&
		    mx->me.posof[mx->order[mx->next_block]] >= mx->d.t)
			return EIO; /* past the held ones: a bug */
		rc = read_other(mx);
		if (rc)
			return rc;
	}
}

/* The next record out becomes mx->cur: false at the end. */
static int next_record(struct mix *mx, bool *got)
{
	const struct mix_slot *soon;
	void *data;
	size_t slot;
	uint64_t r;
	int rc = mix_draw_pick(&mx->me, &mx->d, &r, &data, &slot, got);

	if (rc || !*got)
		return rc;
	/* the pool is larger than the caches: the next picks' slots, and
	 * the records of those a little nearer, are fetched ahead */
	soon = mix_draw_ahead(&mx->d, 10);
	if (soon)
		__builtin_prefetch(soon);
	soon = mix_draw_ahead(&mx->d, 4);
	if (soon && soon->data) {
		/* (a record's first lines: its header and what follows) */
		__builtin_prefetch(soon->data);
		__builtin_prefetch((const char *)soon->data + 64);
		__builtin_prefetch((const char *)soon->data + 128);
	}
	if (!data) {
		char *p;

		rc = held_ready(mx, r, &p);
		if (rc)
			return rc;
		data = p;
	}
	mx->cur = data;
	mx->cur_len = rec_len(mx->cur);
	mx->cur_out = rec_out(mx->cur);
	mx->cur_off = 0;
	/* its place in the pool goes to the next record loaded */
	return mix_draw_refill(&mx->me, &mx->d, slot);
}

static void cur_done(struct mix *mx)
{
	slab_free(&mx->slab, mx->cur, REC_HDR + mx->cur_len);
	mx->cur = NULL;
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
		uint64_t take;

		if (!mx->cur) {
			bool got;

			rc = next_record(mx, &got);
			if (rc || !got)
				break;
		}
		take = mx->cur_out - mx->cur_off;
		if (take > size - n)
			take = size - n;
		for (uint64_t i = 0; i < take;) {
			uint64_t at = mx->cur_off + i;
			uint64_t c = at < mx->cur_len ? mx->cur_len - at : 0;

			if (c > take - i)
				c = take - i;
			if (c) {
				memcpy(chunk->data + n + i,
				       mx->cur + REC_HDR + at, c);
				i += c;
			} else {
				chunk->data[n + i++] = '\n'; /* an open line */
			}
		}
		n += take;
		mx->cur_off += take;
		if (mx->cur_off == mx->cur_out)
			cur_done(mx);
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
	/* (records bigger than a slab slot are malloc'd: the pool's, the
	 * inq's and the one going out go back one by one) */
	for (uint64_t i = 0; mx->d.pool && i < mx->d.npool; i++)
		if (mx->d.pool[i].data)
			slab_free(&mx->slab, mx->d.pool[i].data,
				  REC_HDR + rec_len(mx->d.pool[i].data));
	for (size_t i = mx->d.inq_next; mx->d.inq_data && i < mx->d.ninq; i++)
		if (mx->d.inq_data[i])
			slab_free(&mx->slab, mx->d.inq_data[i],
				  REC_HDR + rec_len(mx->d.inq_data[i]));
	if (mx->cur)
		cur_done(mx);
	slab_destroy(&mx->slab);
	mix_draws_free(&mx->d);
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

	mix_record_span(&mx->me, e, r, &a, &z);
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
	for (n = 0; n < d->npool; n++)
		mx->live[n] = d->pool[n].key;
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
		order_span(mx, mark, mix_draw_peek(d));
	for (size_t i = 0; i < n; i++)
		order_span(mx, mark, mx->live[i]);
	qsort(mx->live, n, sizeof(uint64_t), cmp_u64);
	for (size_t t = d->t; t < me->nblocks; t++) {
		uint64_t eb = me->perm[t];
		struct block_at b;
		uint64_t ends[2];
		int nends = 0;

		mix_block_locate(me, eb, &b);
		ends[nends] = mix_block_straddle_in(me, &b);
		nends += ends[nends] != UINT64_MAX;
		if (b.rl > b.rf)
			ends[nends++] = b.rl - 1;
		for (int k = 0; k < nends; k++) {
			uint64_t a, z;

			if (mix_record_owner(me, b.entry, ends[k]) != eb)
				continue;
			mix_record_span(me, b.entry, ends[k], &a, &z);
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

/*
 * Places mx at byte first_read: draws what comes before it (no data), and
 * orders the blocks to read from there; from then on the draws load with
 * their bytes.  *cur and *skip: the record begun there (UINT64_MAX: none).
 */
static int mix_place(struct mix *mx, uint64_t first_read, uint64_t *cur,
		     uint64_t *skip)
{
	struct mix_draws *d = &mx->d;
	int rc = 0;

	*cur = UINT64_MAX;
	*skip = 0;
	/* (past the end: reads there find nothing) */
	mx->pos = first_read;
	if (first_read == 0) {
		mx->order = mx->me.perm;
		mx->norder = mx->me.nblocks;
	} else {
		rc = mix_draws_skip(&mx->me, d, first_read, cur, skip);
		if (!rc)
			rc = plan_resumed(mx, *cur);
		/* the last loaded block's records still to load: held */
		if (!rc && d->inq_cap) {
			d->inq_data = calloc(d->inq_cap, sizeof(void *));
			rc = d->inq_data ? 0 : ENOMEM;
		}
	}
	d->loaded = mix_loaded;
	d->arg = mx;
	return rc;
}

/* The record begun at the first read (its blocks come first). */
static int mix_begin(struct mix *mx, uint64_t cur, uint64_t skip)
{
	int rc;

	if (cur == UINT64_MAX)
		return 0;
	rc = held_ready(mx, cur, &mx->cur);
	if (rc)
		return rc;
	mx->cur_len = rec_len(mx->cur);
	mx->cur_out = rec_out(mx->cur);
	mx->cur_off = skip;
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
	mx->held.slab = &mx->slab;
	pthread_mutex_init(&mx->lock, NULL);
	snprintf(mx->label, sizeof(mx->label), "channel '%s' epoch %u",
		 ch->spec->name, plan->epoch);
	rc = mix_epoch_init(&mx->me, ch, ix, plan);
	if (!rc)
		rc = mix_draws_init(&mx->d, &mx->me, ch, plan->epoch);
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
