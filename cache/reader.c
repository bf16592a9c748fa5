/*
 * cache readers: a cursor over a stream plus its prefetch window.
 *
 * Each read asks first for the blocks it needs itself (urgent GETs, which
 * the engine lets the server start answering before any prefetch), then
 * tops up the window (ranged GETs for every block between the prefetch
 * frontier and position + window, across object boundaries, as long as
 * the budget allows without evicting unread data), then pins the blocks
 * covering the request, waiting on each block's condition variable while
 * it is still being fetched, and returns iovecs into block memory.
 *
 * A new reader's window is max_window from the start: opening a channel
 * file starts a sequential pass, and a window that grew only as reads
 * waited would keep few GETs in flight for the first hundred megabytes.
 * After a seek the window restarts at two blocks and doubles whenever a
 * read had to wait (or found the block at its position not in memory:
 * the lock is dropped while a fetch is asked for, and a fast store may
 * have answered before the read looks), up to max_window: it grows
 * while the network is the bottleneck.  Blocks the cursor has moved past
 * are marked consumed so that they are the first to go.
 *
 * Readers of one stream (several processes reading one epoch) share
 * blocks, and know each other through the stream's list:
 *   - a block one reader moves past stays unread (AHEAD) while another
 *     reader has it ahead within its window, and is TRAILING (evicted
 *     after SPENT ones) while a reader further behind still needs it: a
 *     fast reader does not make what a slow one needs next go first;
 *   - a prefetch that meets a consumed block in its window claims it back;
 *   - each window is capped by its share of the budget beside the kept
 *     set, (budget - kept quota) / readers, so the unread blocks of slow
 *     readers' windows, which prefetch may not evict, never fill the
 *     budget and stall a fast reader;
 *   - a reader destroyed gives up the unread blocks of its window, unless
 *     another reader claims them.
 *
 * A read at an offset other than the position restarts the cursor there
 * (emulated seek); whether that is allowed is the caller's decision.
 *
 * A reader of a file read at any offset (cache_reader_create_random: each
 * object a file) has no window at first, and neither has any reader just
 * after a seek (a Pipe file with --seek emulate): with no window a read
 * fetches pieces (cache/internal.h), its own bytes rounded out to the
 * piece size, 128 KiB, and no more (fetch_unit() sizes each fetch: a read
 * that covers a whole block still takes the block).  A random reader's
 * read that starts where its last one ended (within a block once the
 * window is open: a kernel's readahead sends neighbouring reads at once,
 * in any order), and a seeking reader's next read in sequence, show it
 * sequential and open the window at one block, which then grows as it
 * does for any reader (a random one's doubling with every read in
 * sequence, up to max_window; another's on every wait); a read anywhere
 * else empties it again.  A frontier that pieces left inside a block
 * goes on in pieces to the block's end (one GET), then in whole blocks.
 * So a reader going forward through a large file soon has the whole
 * window, and one jumping about costs a piece a read (two where a read
 * straddles a piece boundary), whatever the block size.
 */
#include "config.h"

#include "cache/internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

/* the window after a seek */
static uint64_t initial_window(const struct cache_reader *r)
{
	uint64_t w = 2 * r->stream->cache->conf.block_size;

	return w < r->max_window ? w : r->max_window;
}

/* A reader of s at offset, on the stream's list; NULL with errno ESTALE
 * when a trimmed stream dropped the segment holding offset (its owner
 * makes another stream), ENOMEM. */
static struct cache_reader *reader_attach(struct cache_stream *s,
					  uint64_t offset)
{
	struct cache_reader *r = calloc(1, sizeof(*r));
	struct cache *c = s->cache;

	if (!r) {
		errno = ENOMEM;
		return NULL;
	}
	r->stream = s;
	r->window = c->conf.max_window;
	r->max_window = r->window;
	pthread_mutex_lock(&c->lock);
	if (s->base > 0 && offset < s->base_offset) {
		pthread_mutex_unlock(&c->lock);
		free(r);
		errno = ESTALE;
		return NULL;
	}
	r->pos = offset;
	r->seg_idx = offset ? cache_stream_find(s, offset) : s->base;
	/* on the list from here, it keeps its segments from going */
	r->hold = r->seg_idx;
	r->next = s->readers;
	if (s->readers)
		s->readers->prev = r;
	s->readers = r;
	c->nreaders++;
	pthread_mutex_unlock(&c->lock);
	return r;
}

struct cache_reader *cache_reader_create(struct cache_stream *s)
{
	return reader_attach(s, 0);
}

struct cache_reader *cache_reader_create_before(struct cache_stream *s,
						uint64_t offset)
{
	uint64_t from;

	pthread_mutex_lock(&s->cache->lock);
	from = s->base > 0 ? s->base_offset : 0;
	pthread_mutex_unlock(&s->cache->lock);
	if (offset < from) {
		errno = ESTALE;
		return NULL;
	}
	return reader_attach(s, from); /* (ESTALE if it moved on meanwhile) */
}

uint64_t cache_reader_window(const struct cache_reader *r)
{
	const struct cache *c = r->stream->cache;
	uint64_t share = (c->conf.budget_bytes - c->kept_quota) /
			 (c->nreaders ? c->nreaders : 1);

	if (share < 2 * c->conf.block_size)
		share = 2 * c->conf.block_size;
	return r->window < share ? r->window : share;
}

uint64_t cache_reader_position(struct cache_reader *r)
{
	uint64_t pos;

	pthread_mutex_lock(&r->stream->cache->lock);
	pos = r->pos;
	pthread_mutex_unlock(&r->stream->cache->lock);
	return pos;
}

/* Stream offset where object offset at of seg's object lies within seg
 * (a block or piece may begin before the segment does). */
static uint64_t seg_offset_of(const struct cache_segment *seg, uint64_t at)
{
	return seg->start + (at > seg->obj_offset ? at - seg->obj_offset : 0);
}

/* Stream offset where block index of seg's object starts within seg. */
static uint64_t block_start_in(const struct cache *c,
			       const struct cache_segment *seg, uint64_t index)
{
	return seg_offset_of(seg, cache_block_offset(c, index));
}

/* The whole block of obj holding object offset at, else its piece; NULL
 * when neither is in the table. */
static struct cache_block *
lookup_at(struct cache *c, const struct cache_object *obj, uint64_t at)
{
	struct cache_block *b =
	    cache_block_lookup(c, obj, at / c->conf.block_size);

	if (!b && c->piece_size)
		b = cache_block_lookup(c, obj,
				       CACHE_PIECE_BIT | at / c->piece_size);
	return b;
}

/* The object offset just past block (or piece) b. */
static uint64_t block_end(const struct cache *c, const struct cache_block *b)
{
	return cache_block_offset(c, b->index) + b->len;
}

/*
 * The key of what a fetch at object offset at of obj makes (nothing holds
 * at in memory): the whole block holding at, or with small (a reader with
 * no window, or a frontier that pieces left inside a block) the piece
 * holding it, unless at is where its block starts and the fetch must reach
 * until (an object offset) at that block's end or past it: a read that
 * wants the whole block takes it whole.
 */
UNITTEST uint64_t fetch_unit(const struct cache *c,
			     const struct cache_object *obj, uint64_t at,
			     uint64_t until, bool small)
{
	const uint64_t bs = c->conf.block_size;
	const uint64_t index = at / bs;

	if (!small || !c->piece_size)
		return index;
	if (at % bs == 0 && until >= at + cache_block_len(c, obj, index))
		return index;
	return CACHE_PIECE_BIT | at / c->piece_size;
}

/*
 * r has moved past block b, which lies at [start, end) of the stream: it
 * is consumed, unless another reader of the stream has it ahead within its
 * window (then it stays unread for that one); trailing when a reader is
 * behind it but further off.
 */
static void block_passed(const struct cache_reader *r, struct cache_block *b,
			 uint64_t start, uint64_t end)
{
	bool trailing = false;

	for (const struct cache_reader *o = r->stream->readers; o;
	     o = o->next) {
		if (o == r || o->pos >= end || (o->end && start >= o->end))
			continue;
		if (start < o->pos + cache_reader_window(o)) {
			cache_block_set_consumed(b, false, false);
			return;
		}
		trailing = true;
	}
	cache_block_set_consumed(b, true, trailing);
}

/* Puts the frontier at the start of segment idx. */
static void frontier_to_segment(struct cache_reader *r, size_t idx)
{
	struct cache_stream *s = r->stream;

	r->prefetch_seg = idx;
	if (idx < s->count) {
		const struct cache_segment *seg = cache_stream_seg(s, idx);

		r->prefetch_block =
		    seg->obj ? cache_segment_block(s->cache, seg, seg->start)
			     : 0;
		r->prefetch_offset = seg->start;
	} else {
		r->prefetch_block = 0;
		r->prefetch_offset = s->listed_bytes;
	}
}

/* Moves the frontier to the block holding pos, or with no window to the
 * piece holding it (after a seek, or when the reader overtook it). */
UNITTEST void frontier_to_position(struct cache_reader *r)
{
	struct cache_stream *s = r->stream;
	const struct cache *c = s->cache;
	const struct cache_segment *seg;
	uint64_t at, unit;

	frontier_to_segment(r, r->seg_idx);
	if (r->seg_idx >= s->count)
		return;
	seg = cache_stream_seg(s, r->seg_idx);
	if (!seg->obj)
		return;
	at = seg->obj_offset + (r->pos - seg->start);
	unit = !r->window && c->piece_size ? c->piece_size : c->conf.block_size;
	at -= at % unit;
	r->prefetch_block = at / c->conf.block_size;
	r->prefetch_offset = seg_offset_of(seg, at);
}

/* Moves the frontier to object offset end of seg (past what it asked
 * for), or past seg when that is its end. */
static void frontier_advance(struct cache_reader *r,
			     const struct cache_segment *seg, uint64_t end)
{
	const struct cache *c = r->stream->cache;

	if (end >= seg->obj_offset + seg->size) {
		frontier_to_segment(r, r->prefetch_seg + 1);
		return;
	}
	r->prefetch_block = end / c->conf.block_size;
	r->prefetch_offset = seg_offset_of(seg, end);
}

/*
 * The unread blocks between r's position and its frontier, which nobody
 * will read through r any more, are passed (lock held).
 */
static void release_window(struct cache_reader *r)
{
	struct cache_stream *s = r->stream;
	struct cache *c = s->cache;
	uint64_t at = r->pos;

	for (size_t idx = r->seg_idx; idx < s->count && idx <= r->prefetch_seg;
	     idx++) {
		const struct cache_segment *seg = cache_stream_seg(s, idx);
		uint64_t stop = seg->start + seg->size;

		if (idx == r->prefetch_seg && r->prefetch_offset < stop)
			stop = r->prefetch_offset;
		if (at < seg->start)
			at = seg->start;
		while (seg->obj && at < stop) {
			uint64_t o = seg->obj_offset + (at - seg->start);
			struct cache_block *b = lookup_at(c, seg->obj, o);
			uint64_t unit =
			    c->piece_size ? c->piece_size : c->conf.block_size;
			uint64_t bend = seg_offset_of(
			    seg, b ? block_end(c, b) : (o / unit + 1) * unit);

			if (bend > seg->start + seg->size)
				bend = seg->start + seg->size;
			if (b && !b->consumed)
				block_passed(r, b,
					     block_start_in(c, seg, b->index),
					     bend);
			at = bend;
		}
	}
}

void cache_reader_destroy(struct cache_reader *r)
{
	struct cache *c;

	if (!r)
		return;
	c = r->stream->cache;
	pthread_mutex_lock(&c->lock);
	release_window(r);
	if (r->prev)
		r->prev->next = r->next;
	else
		r->stream->readers = r->next;
	if (r->next)
		r->next->prev = r->prev;
	c->nreaders--;
	pthread_mutex_unlock(&c->lock);
	free(r);
}

/*
 * Whether a GET starting at the frontier should wait for more room while
 * the reader still has half a window ahead of it: it would be cut short
 * (neither a full run nor the rest of the object) by the window edge at
 * limit, or, when it starts a new run (fresh), by memory (the kept set
 * and other windows leave a window little more than its size).  Waiting
 * lets the next GET cover a whole run: fewer, larger requests.
 */
static bool run_should_wait(const struct cache_reader *r,
			    const struct cache_segment *seg, uint64_t limit,
			    uint64_t window, bool fresh)
{
	struct cache *c = r->stream->cache;
	const uint64_t bs = c->conf.block_size;
	uint64_t run_end = r->prefetch_offset + c->run_max * bs;
	uint64_t seg_end = seg->start + seg->size;

	if (run_end > seg_end)
		run_end = seg_end;
	/* the frontier may start behind an unaligned position */
	if (!(r->prefetch_offset > r->pos &&
	      r->prefetch_offset - r->pos > window / 2))
		return false;
	/* at the end of a reader's range the run will never be longer */
	if (run_end > limit && (!r->end || limit < r->end))
		return true;
	if (run_end > limit)
		run_end = limit;
	return fresh &&
	       !cache_block_room_run(
		   c, (run_end - r->prefetch_offset + bs - 1) / bs * bs);
}

/*
 * Tops up the window, but no further than ahead bytes past the position
 * (nor max_ahead_objects objects), with one GET per run of up to run_max
 * new blocks of one object; urgent marks GETs a read is about to wait for.
 * The next listing page is asked for (may_list) only once a read has its
 * data: a slow listing page (a server walking a huge prefix) must not
 * stand in front of the first bytes.
 */
UNITTEST enum cache_prefetch_stop
prefetch(struct cache_reader *r, uint64_t ahead, bool urgent, bool may_list)
{
	struct cache_stream *s = r->stream;
	struct cache *c = s->cache;
	const uint64_t window = cache_reader_window(r);
	/* what a read needs now is fetched whatever the window */
	uint64_t limit = r->pos + (urgent || ahead < window ? ahead : window);
	/* consumed blocks are kept for the next epoch only when the whole
	 * stream is known to fit */
	uint64_t known;
	enum cache_admit admit =
	    !cache_stream_known_size(s, &known) || known > c->conf.budget_bytes
		? CACHE_ADMIT_RECYCLE
		: CACHE_ADMIT_PREFETCH;
	struct cache_block *run[STORE_GET_BUFFERS_MAX];
	/* objects are counted from the one the reader is in */
	const size_t first_seq = r->seg_idx < s->count
				     ? cache_stream_seg(s, r->seg_idx)->obj_seq
				     : s->nobject_segs;
	/* no window: pieces, and runs are not held back for whole ones */
	const bool small = !r->window && c->piece_size;
	enum cache_prefetch_stop stop = PREFETCH_DONE;
	uint64_t run_bytes = 0;
	unsigned n = 0;

	if (r->end && limit > r->end)
		limit = r->end;
	if (r->prefetch_offset < r->pos || r->prefetch_seg < r->seg_idx)
		frontier_to_position(r);
	/* a fetch drops the lock: the segment is looked up again after one
	 * (and a next-epoch prefetch's reader, on no list, may find it dropped)
	 */
	while (r->prefetch_offset < limit && r->prefetch_seg < s->count &&
	       r->prefetch_seg >= s->base) {
		const size_t seg_idx = r->prefetch_seg;
		const struct cache_segment *seg = cache_stream_seg(s, seg_idx);
		uint64_t at, index;
		size_t len;
		struct cache_block *b;

		if (!seg->obj) {
			/* literal bytes: nothing to fetch; a run of
			 * blocks never spans them */
			frontier_to_segment(r, r->prefetch_seg + 1);
			if (n)
				cache_block_fetch(run, n, urgent);
			n = 0;
			run_bytes = 0;
			continue;
		}
		if (c->conf.max_ahead_objects &&
		    seg->obj_seq >= first_seq + c->conf.max_ahead_objects)
			break;
		if (n == 0 && !small &&
		    run_should_wait(r, seg, limit, window, false)) {
			stop = PREFETCH_WAIT;
			break;
		}
		at = seg->obj_offset + (r->prefetch_offset - seg->start);
		b = lookup_at(c, seg->obj, at);
		if (!b && n == 0 && !small &&
		    run_should_wait(r, seg, limit, window, true)) {
			stop = PREFETCH_WAIT;
			break;
		}
		if (b) {
			/* already cached or coming: the run ends before it;
			 * passed by another reader, it is this one's again */
			if (b->consumed) {
				cache_block_set_consumed(b, false, false);
				c->stats.claimed++;
			}
			frontier_advance(r, seg, block_end(c, b));
			if (n)
				cache_block_fetch(run, n, urgent);
			n = 0;
			run_bytes = 0;
			continue;
		}
		/* pieces with no window, and on from where pieces left
		 * the frontier inside a block (not a segment's start) */
		index = fetch_unit(c, seg->obj, at,
				   seg->obj_offset + (limit - seg->start),
				   small || (at % c->conf.block_size &&
					     r->prefetch_offset > seg->start));
		if (n && (run[n - 1]->obj != seg->obj ||
			  ((run[n - 1]->index ^ index) & CACHE_PIECE_BIT))) {
			/* a run is of one object (it ends with its
			 * segment) and of one kind */
			cache_block_fetch(run, n, urgent);
			n = 0;
			run_bytes = 0;
			continue;
		}
		len = cache_block_len(c, seg->obj, index);
		b = cache_block_create(c, seg->obj, index, len, admit);
		if (!b) {
			stop = PREFETCH_BUDGET; /* full of unread data */
			break;
		}
		c->stats.prefetched++;
		run[n++] = b;
		run_bytes += len;
		frontier_advance(r, seg, cache_block_offset(c, index) + len);
		/* a run ends with its segment */
		if (n == STORE_GET_BUFFERS_MAX ||
		    run_bytes >= c->run_max * c->conf.block_size ||
		    r->prefetch_seg != seg_idx) {
			cache_block_fetch(run, n, urgent);
			n = 0;
			run_bytes = 0;
		}
	}
	if (stop == PREFETCH_DONE && r->prefetch_offset < limit &&
	    r->prefetch_seg >= s->count && !s->complete)
		stop = PREFETCH_UNLISTED;
	if (n)
		cache_block_fetch(run, n, urgent);
	if (may_list)
		cache_stream_need(s, r->prefetch_seg);
	return stop;
}

/* Whether the block holding the position is in memory already. */
static bool position_ready(struct cache_reader *r)
{
	struct cache_stream *s = r->stream;
	const struct cache_segment *seg;
	struct cache_block *b;

	if (r->seg_idx >= s->count)
		return false;
	seg = cache_stream_seg(s, r->seg_idx);
	if (!seg->obj)
		return true;
	b = lookup_at(s->cache, seg->obj,
		      seg->obj_offset + (r->pos - seg->start));
	return b && b->state == BLOCK_READY;
}

/* Restarts the cursor at offset; waits for the listing to reach it. */
static int reposition(struct cache_reader *r, uint64_t offset)
{
	struct cache_stream *s = r->stream;
	int rc = 0;

	s->cache->stats.seeks++;
	if (s->base > 0 && offset < s->base_offset)
		return ESTALE; /* dropped (cache_stream_set_trim) */
	while (offset >= s->listed_bytes && !s->complete) {
		rc = cache_stream_wait(s, s->count);
		if (rc == ENODATA)
			break;
		if (rc)
			return rc;
	}
	r->pos = offset;
	r->seg_idx = cache_stream_find(s, offset);
	/* a reader that read before jumps: no window (pieces) until it
	 * shows itself sequential again; a first read only places it */
	if (r->random || (r->has_read && s->cache->piece_size))
		r->window = 0;
	else
		r->window = initial_window(r);
	frontier_to_position(r);
	return 0;
}

/* Pins the block (or piece) holding object offset at (r->pos), fetching
 * it on demand.  With no pins held yet (first) it may wait for memory;
 * otherwise it gives up (ENOSPC). */
static int pin_block(struct cache_reader *r, struct cache_object *obj,
		     uint64_t at, bool first, struct cache_block **out,
		     bool *waited)
{
	struct cache *c = r->stream->cache;
	struct cache_block *b;
	uint64_t index;

	for (;;) {
		b = lookup_at(c, obj, at);
		if (b)
			break;
		index = fetch_unit(c, obj, at, at + 1, !r->window);
		b = cache_block_create(c, obj, index,
				       cache_block_len(c, obj, index),
				       CACHE_ADMIT_DEMAND);
		if (b) {
			c->stats.misses++;
			cache_block_pin(b);
			cache_block_fetch(&b, 1, true);
			if (b->state == BLOCK_FAILED) {
				cache_block_unpin(b);
				return EIO;
			}
			*waited = true;
			goto wait;
		}
		if (!first)
			return ENOSPC;
		*waited = true;
		pthread_cond_wait(&c->memory, &c->lock);
	}
	if (b->state == BLOCK_READY)
		c->stats.hits++;
	cache_block_pin(b);
wait:
	while (b->state == BLOCK_FETCHING) {
		*waited = true;
		pthread_cond_wait(&b->ready, &c->lock);
	}
	if (b->state == BLOCK_FAILED) {
		int err = b->error;

		cache_block_unpin(b);
		return err ? err : EIO;
	}
	*out = b;
	return 0;
}

int cache_reader_read(struct cache_reader *r, uint64_t offset, size_t size,
		      struct cache_view *view)
{
	struct cache_stream *s = r->stream;
	struct cache *c = s->cache;
	uint64_t bs = c->conf.block_size;
	bool waited = false, ready, in_sequence, unlisted;
	int rc = 0;

	view->count = 0;
	view->bytes = 0;
	pthread_mutex_lock(&c->lock);
	/* a random reader's reads are in sequence when they start where the
	 * last one ended, or once its window is open within a block of there:
	 * a kernel's readahead sends neighbouring reads at once, and they may
	 * come in any order (its first read shows nothing) */
	in_sequence = offset == r->pos ||
		      (r->random && r->window && offset + bs >= r->pos &&
		       offset <= r->pos + bs);
	if (r->random && !r->has_read)
		in_sequence = false;
	if (r->has_read && offset >= r->read_start && offset < r->pos &&
	    !(s->base > 0 && offset < s->base_offset)) {
		/* again from within the latest read (a reader that let its
		 * view go before it used all of it, to wait without pinning
		 * it): the window and the prefetch stay, no seek is counted */
		r->pos = offset;
		r->seg_idx = cache_stream_find(s, offset);
	} else if (offset != r->pos) {
		uint64_t window = r->window;

		rc = reposition(r, offset);
		if (rc)
			goto out;
		if (in_sequence)
			r->window = window;
	}
	r->has_read = true;
	r->read_start = offset;
	if (r->end) {
		if (r->pos >= r->end)
			goto out; /* the end of the range */
		if (size > r->end - r->pos)
			size = (size_t)(r->end - r->pos);
	}
	/* the previous read's view is released (one read at a time): this
	 * one's may point into the segments from here on */
	r->hold = r->seg_idx;
	/* what this read needs first; then, if it must wait for it, the
	 * rest of the window at once rather than after the wait (whether
	 * it must is known before: asking drops the lock) */
	ready = position_ready(r);
	if (!ready && r->seg_idx < s->count)
		waited = true;
	prefetch(r, size, true, false);
	if (!ready)
		prefetch(r, r->window, false, false);
	while (view->bytes < size && view->count < CACHE_VIEW_MAX) {
		const struct cache_segment *seg;
		struct cache_block *b = NULL;
		uint64_t in_seg, in_block;
		size_t n;

		/* like a pipe: return what is here rather than wait for the
		 * listing to go on */
		if (view->count && r->seg_idx >= s->count)
			break;
		unlisted = r->seg_idx >= s->count;
		rc = cache_stream_wait(s, r->seg_idx);
		if (rc == ENODATA) {
			rc = 0;
			break;
		}
		if (rc)
			break;
		/* the listing caught up: the window at once, not a block
		 * at a time as the loop comes to them */
		if (unlisted)
			prefetch(r, r->window, false, false);
		seg = cache_stream_seg(s, r->seg_idx);
		if (seg->size == 0) {
			r->seg_idx++; /* a mark */
			continue;
		}
		in_seg = r->pos - seg->start;
		n = seg->size - in_seg;
		if (n > size - view->bytes)
			n = size - view->bytes;
		if (seg->obj) {
			uint64_t at = seg->obj_offset + in_seg;

			rc = pin_block(r, seg->obj, at, view->count == 0, &b,
				       &waited);
			if (rc)
				break;
			in_block = at - cache_block_offset(c, b->index);
			if (n > b->len - in_block)
				n = b->len - in_block;
			if (in_block + n == b->len)
				block_passed(r, b,
					     block_start_in(c, seg, b->index),
					     r->pos + n);
			view->iov[view->count].iov_base = b->data + in_block;
		} else {
			view->iov[view->count].iov_base = seg->bytes + in_seg;
		}
		view->iov[view->count].iov_len = n;
		view->blocks[view->count] = b;
		view->count++;
		view->bytes += n;
		r->pos += n;
		if (r->pos == seg->start + seg->size)
			r->seg_idx++;
	}
	/* a short read is fine once something is in hand */
	if (view->bytes && (rc == ENOSPC || rc == EIO || rc == ECANCELED))
		rc = 0;
	cache_stream_trim(s);
	if (rc == ENOSPC)
		rc = EIO;
	/* (a reader with no window opens it only by reading in sequence) */
	if (r->random || !r->window ? in_sequence : waited) {
		r->window = r->window ? r->window * 2 : bs;
		if (r->window > r->max_window)
			r->window = r->max_window;
	}
	prefetch(r, r->window, false, true);
out:
	pthread_mutex_unlock(&c->lock);
	return rc;
}

void cache_view_release(struct cache *c, struct cache_view *view)
{
	if (!view->count)
		return;
	pthread_mutex_lock(&c->lock);
	for (int i = 0; i < view->count; i++) {
		if (view->blocks[i])
			cache_block_unpin(view->blocks[i]);
	}
	pthread_mutex_unlock(&c->lock);
	view->count = 0;
	view->bytes = 0;
}

bool cache_stream_prefetch(struct cache_stream *s, uint64_t bytes)
{
	struct cache *c = s->cache;
	/* a reader at the start that reads nothing: not on the stream's
	 * list, so it claims nothing once it is gone */
	struct cache_reader r = {
	    .stream = s,
	    .window = bytes,
	    .max_window = bytes,
	    .end = bytes,
	};
	enum cache_prefetch_stop stop;

	if (!bytes)
		return true;
	pthread_mutex_lock(&c->lock);
	if (s->base > 0) {
		/* readers went past its start already */
		pthread_mutex_unlock(&c->lock);
		return true;
	}
	frontier_to_position(&r);
	/* the second time round takes what asking the stream for more (a
	 * plan's owner adds segments at once) has added (prefetch drops the
	 * lock when it calls out: readers may have gone past its start) */
	stop = prefetch(&r, bytes, false, true);
	if (stop == PREFETCH_UNLISTED && s->base == 0)
		stop = prefetch(&r, bytes, false, true);
	pthread_mutex_unlock(&c->lock);
	return stop == PREFETCH_DONE;
}

struct cache_reader *cache_reader_create_at(struct cache_stream *s,
					    uint64_t offset, uint64_t end,
					    uint64_t window)
{
	struct cache_reader *r = reader_attach(s, offset);

	if (!r)
		return NULL;
	pthread_mutex_lock(&s->cache->lock);
	if (window && window < r->max_window)
		r->window = r->max_window = window;
	r->end = end;
	frontier_to_position(r);
	pthread_mutex_unlock(&s->cache->lock);
	return r;
}

struct cache_reader *cache_reader_create_random(struct cache_stream *s)
{
	struct cache_reader *r = cache_reader_create(s);

	if (!r)
		return NULL;
	pthread_mutex_lock(&s->cache->lock);
	r->random = true;
	r->window = 0;
	pthread_mutex_unlock(&s->cache->lock);
	return r;
}

unsigned cache_object_release(struct cache *c, const struct cache_object *o)
{
	uint64_t blocks =
	    (o->size + c->conf.block_size - 1) / c->conf.block_size;
	unsigned n = 0;

	pthread_mutex_lock(&c->lock);
	for (uint64_t i = 0; i < blocks; i++) {
		struct cache_block *b = cache_block_lookup(c, o, i);

		if (b && b->state == BLOCK_READY && !b->pins && !b->consumed) {
			cache_block_set_consumed(b, true, false);
			n++;
		}
	}
	pthread_mutex_unlock(&c->lock);
	return n;
}

bool cache_object_prefetch(struct cache *c, struct cache_object *o)
{
	/* a stream of o alone, whose prefetch makes the blocks; they belong
	 * to o, and outlive the stream */
	struct cache_stream *s = cache_stream_create_plan(c, NULL, NULL);
	uint64_t size = cache_object_size(o);
	bool covered;

	if (!s || cache_stream_add_object(s, o, 0, size) != 0) {
		cache_stream_destroy(s);
		return false;
	}
	cache_stream_set_size(s, size);
	cache_stream_end(s, 0);
	covered = cache_stream_prefetch(s, size);
	cache_stream_destroy(s);
	return covered;
}
