/*
 * channel gzip stage: gunzip ahead of the reader, objects in parallel.
 *
 * The stage turns each segment of the epoch's stream into a job, in order:
 * an object's compressed bytes are inflated (zlib, every gzip member of
 * the object in turn), literal bytes are passed through.  Worker threads
 * (one per core by default) take the first job nobody works on, at most
 * nthreads + 1 jobs from the reader's, so objects are inflated in parallel
 * while the reader drains the first.  Each job reads its compressed bytes
 * through a cache reader of its own, limited to its segment (so the blocks
 * are prefetched and shared as for any reader), and appends its output as
 * pieces of chunks: block-sized buffers taken from the cache's budget.
 *
 * Memory: the job the reader is on (the head) takes chunks as a demand
 * read would; the jobs ahead of it together hold at most half the budget
 * less a chunk and wait when that is reached, so output never crowds out
 * the head (a budget of two blocks inflates one object at a time).  A job
 * ahead waits with its input let go (read again after), so that the head
 * finds a block to read.  The head, when it holds no output and the
 * budget has no room, takes one chunk outside it, so that it never waits
 * for a job behind it.
 * Inflating objects in parallel needs their output held until the reader
 * gets to them: a budget that holds one decompressed object ahead lets two
 * cores work at once.
 *
 * RecordIO wrapping is the stage above (channel/wrap.c), told where each
 * object ends by reads with origin and tell_ends.
 *
 * A corrupt or truncated stream fails the job: the reader gets the bytes
 * before it and then EIO, and the log names the object's place in the
 * stream.  The consumer side (channel_gzip_read) returns iovecs into the
 * chunks, each chunk reference-counted by the pieces and the views.
 *
 * The stage reads segments by index, so it holds its place in a trimmed
 * stream (cache_hold_create) at its head job's segment: what it passed
 * may go, what its jobs name stays.
 */
#include "config.h"

#include "channel/gzip.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "channel/convert.h"
#include "channel/internal.h"
#include "channel/object_counts.h"
#include "util/util.h"

#define FLUSH_STEP	(1u << 20) /* output handed on while streaming */
#define MEMORY_RETRY_NS (5 * 1000 * 1000)
#define MAX_THREADS	64

struct gz_piece {
	struct channel_chunk *chunk; /* a reference */
	size_t off;
	size_t len;
	struct gz_piece *next;
};

struct gz_job {
	uint64_t start; /* the segment: compressed bytes in the stream */
	uint64_t size;
	bool literal;
	size_t seg;	    /* its index in the stream */
	const char *bucket; /* the object's, for messages (the stream's) */
	const char *key;
	uint64_t object_id; /* (channel_origin's) */
	bool running;	    /* a worker has it */
	bool finished;	    /* every piece is in */
	bool end_told;	    /* to a reader with tell_ends */
	int error;
	struct gz_piece *head, *tail;
	uint64_t held; /* bytes in pieces */
	struct gz_job *next;
};

struct channel_gzip {
	struct channel_stage stage; /* first: what channel_gzip_create()
				       returns */
	struct cache *cache;
	struct cache_stream *stream;
	struct cache_hold *hold; /* at the head job's segment */
	const char *name;
	uint64_t window;    /* each job's prefetch window */
	uint64_t ahead_max; /* bytes the jobs ahead of the head may hold */

	pthread_mutex_t lock;
	pthread_cond_t changed; /* jobs, pieces or the head changed */
	pthread_t threads[MAX_THREADS];
	unsigned nthreads;
	pthread_t again_thread; /* channel_gzip_again()'s */
	bool again_started;
	struct gz_job *again_job;
	struct gz_job *jobs; /* in order: the head first */
	struct gz_job *jobs_tail;
	unsigned njobs;
	unsigned max_jobs;
	size_t next_seg;   /* the next segment to make a job of */
	bool adding;	   /* a worker is waiting for that segment */
	bool stream_ended; /* no segment after next_seg */
	int stream_error;  /* why the stream ended early, or 0 */
	uint64_t ahead_held;
	unsigned outside; /* chunks taken outside the budget, still held */
	bool stopping;
	uint64_t pos; /* output bytes handed to the reader */
	bool error_logged;
};

/* ---- pieces (g->lock held) ---- */

static void job_held_add(struct channel_gzip *g, struct gz_job *j,
			 int64_t delta)
{
	j->held += (uint64_t)delta;
	if (j != g->jobs)
		g->ahead_held += (uint64_t)delta;
}

/* Appends bytes [off, off + len) of c to j's output (c gets a ref). */
static int piece_add(struct channel_gzip *g, struct gz_job *j,
		     struct channel_chunk *c, size_t off, size_t len)
{
	struct gz_piece *p;

	if (len == 0)
		return 0;
	p = calloc(1, sizeof(*p));
	if (!p)
		return ENOMEM;
	p->chunk = c;
	c->refs++;
	p->off = off;
	p->len = len;
	if (j->tail)
		j->tail->next = p;
	else
		j->head = p;
	j->tail = p;
	job_held_add(g, j, (int64_t)len);
	pthread_cond_broadcast(&g->changed);
	return 0;
}

static void pieces_free(struct channel_gzip *g, struct gz_job *j)
{
	while (j->head) {
		struct gz_piece *p = j->head;

		j->head = p->next;
		job_held_add(g, j, -(int64_t)p->len);
		channel_chunk_unref(g->cache, p->chunk);
		free(p);
	}
	j->tail = NULL;
}

/* ---- a job's work (no lock held unless noted) ---- */

/* Whether the job may take another chunk now (lock held). */
static bool may_grow(struct channel_gzip *g, const struct gz_job *j)
{
	if (j == g->jobs)
		return true;
	return g->ahead_held + cache_buffer_size(g->cache) <= g->ahead_max;
}

/* Waits for the reader or the jobs to change, or a moment: memory also
 * comes back from blocks that are evicted or released (lock held). */
static void wait_changed(struct channel_gzip *g)
{
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_nsec += MEMORY_RETRY_NS;
	if (until.tv_nsec >= 1000000000) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	pthread_cond_timedwait(&g->changed, &g->lock, &until);
}

/* A chunk taken outside the budget is gone (lock held: where the unref
 * is). */
static void outside_recycle(void *arg, char *data, size_t cap)
{
	struct channel_gzip *g = arg;

	(void)cap;
	free(data);
	g->outside--;
	pthread_cond_broadcast(&g->changed);
}

/* A chunk from the cache's budget, waiting while the job may not grow or
 * the budget has no room; a job ahead of the head does not wait but sets
 * *later (it waits without its input pinned, wait_room()).  NULL when the
 * stage stops, or with *later. */
static struct channel_chunk *chunk_take(struct channel_gzip *g,
					struct gz_job *j, bool *later)
{
	struct channel_chunk *c = calloc(1, sizeof(*c));

	*later = false;
	if (!c)
		return NULL;
	pthread_mutex_lock(&g->lock);
	for (;;) {
		bool head, outside;

		if (g->stopping)
			break;
		if (may_grow(g, j)) {
			head = j == g->jobs;
			/* the head, when the budget has no room: the rest
			 * may be what the stage above holds of its output
			 * (RecordIO wrapping) or others' blocks, so one chunk
			 * of its own, at most one at a time */
			outside = head && !g->outside;
			if (outside)
				g->outside++;
			pthread_mutex_unlock(&g->lock);
			c->data = cache_buffer_get(g->cache, head);
			c->from_cache = c->data != NULL;
			if (!c->data && outside) {
				c->data = malloc(cache_buffer_size(g->cache));
				outside = c->data == NULL;
			}
			pthread_mutex_lock(&g->lock);
			if (outside)
				g->outside--; /* (not taken) */
			else if (c->data && !c->from_cache) {
				c->recycle = outside_recycle;
				c->recycle_arg = g;
			}
			if (c->data)
				break;
		}
		if (j != g->jobs) {
			*later = true;
			break;
		}
		wait_changed(g);
	}
	pthread_mutex_unlock(&g->lock);
	if (!c->data) {
		free(c);
		return NULL;
	}
	c->cap = cache_buffer_size(g->cache);
	c->refs = 1;
	return c;
}

struct inflate_run {
	struct channel_gzip *g;
	struct gz_job *j;
	z_stream *zs;	  /* the worker's, reset for each job */
	bool member_open; /* inside a gzip member */
	struct channel_chunk *out;
	size_t out_used;  /* bytes of out filled */
	size_t out_given; /* bytes of out already in pieces */
};

/* Hands the filled part of the current chunk to the job. */
static int flush_out(struct inflate_run *ir)
{
	struct channel_gzip *g = ir->g;
	size_t len = ir->out_used - ir->out_given;
	int rc = 0;

	if (!ir->out || len == 0)
		return 0;
	pthread_mutex_lock(&g->lock);
	rc = piece_add(g, ir->j, ir->out, ir->out_given, len);
	pthread_mutex_unlock(&g->lock);
	ir->out_given = ir->out_used;
	return rc;
}

/* The reader gets output every FLUSH_STEP bytes rather than a chunk at a
 * time (the piece is final: later bytes go after it). */
static int flush_step(struct inflate_run *ir)
{
	if (ir->out_used - ir->out_given < FLUSH_STEP)
		return 0;
	return flush_out(ir);
}

static void drop_out(struct inflate_run *ir)
{
	if (!ir->out)
		return;
	pthread_mutex_lock(&ir->g->lock);
	channel_chunk_unref(ir->g->cache, ir->out);
	pthread_mutex_unlock(&ir->g->lock);
	ir->out = NULL;
}

/* Where the next output goes: room in a chunk (EAGAIN: none yet for a
 * job ahead of the head, chunk_take()). */
static int out_room(struct inflate_run *ir)
{
	bool later;

	if (ir->out && ir->out_used < ir->out->cap) {
		ir->zs->next_out = (Bytef *)ir->out->data + ir->out_used;
		ir->zs->avail_out = (uInt)(ir->out->cap - ir->out_used);
		return 0;
	}
	if (flush_out(ir))
		return ENOMEM;
	drop_out(ir);
	ir->out = chunk_take(ir->g, ir->j, &later);
	if (!ir->out)
		return later ? EAGAIN : ECANCELED;
	ir->out_used = ir->out_given = 0;
	return out_room(ir);
}

/* Inflates in[0..len), *used of them; 0, EIO (corrupt) or what out_room()
 * says. */
static int inflate_some(struct inflate_run *ir, const unsigned char *in,
			size_t len, size_t *used)
{
	z_stream *zs = ir->zs;
	int rc = 0;

	zs->next_in = (Bytef *)in;
	zs->avail_in = (uInt)len;
	while (!rc && zs->avail_in) {
		uInt before;
		int zrc;

		if (!ir->member_open) {
			/* a new gzip member, or the next after one ended */
			if (inflateReset2(zs, 16 + MAX_WBITS) != Z_OK) {
				rc = EIO;
				break;
			}
			ir->member_open = true;
		}
		rc = out_room(ir);
		if (rc)
			break;
		before = zs->avail_out;
		zrc = inflate(zs, Z_NO_FLUSH);
		ir->out_used += before - zs->avail_out;
		rc = flush_step(ir);
		if (rc)
			break;
		if (zrc == Z_STREAM_END)
			ir->member_open = false;
		else if (zrc == Z_BUF_ERROR && zs->avail_in == 0)
			break; /* wants more input */
		else if (zrc != Z_OK && zrc != Z_BUF_ERROR)
			rc = EIO;
	}
	*used = len - zs->avail_in;
	return rc;
}

/* Literal bytes go out as they are, through the same chunks: in[0..len),
 * *used of them. */
static int copy_some(struct inflate_run *ir, const unsigned char *in,
		     size_t len, size_t *used)
{
	int rc = 0;

	*used = 0;
	while (!rc && *used < len) {
		size_t n;

		rc = out_room(ir);
		if (rc)
			break;
		n = len - *used < ir->zs->avail_out ? len - *used
						    : ir->zs->avail_out;
		memcpy(ir->zs->next_out, in + *used, n);
		ir->out_used += n;
		*used += n;
		rc = flush_step(ir);
	}
	return rc;
}

/* A job ahead of the head that found no room waits for a chunk with its
 * input let go (jobs ahead waiting with blocks pinned could leave the head
 * none to read), and reads its input again once it has one: 0, or
 * ECANCELED when the stage stops. */
static int wait_room(struct inflate_run *ir)
{
	struct channel_gzip *g = ir->g;
	bool later;

	for (;;) {
		pthread_mutex_lock(&g->lock);
		while (!g->stopping && ir->j != g->jobs && !may_grow(g, ir->j))
			wait_changed(g);
		pthread_mutex_unlock(&g->lock);
		ir->out = chunk_take(g, ir->j, &later);
		if (ir->out) {
			ir->out_used = ir->out_given = 0;
			return 0;
		}
		if (!later)
			return ECANCELED;
		pthread_mutex_lock(&g->lock);
		wait_changed(g);
		pthread_mutex_unlock(&g->lock);
	}
}

/* The job's bytes, inflated into pieces; 0 or an errno. */
static int run_inflate(struct inflate_run *ir)
{
	struct channel_gzip *g = ir->g;
	struct gz_job *j = ir->j;
	struct cache_reader *r;
	struct cache_view view;
	const size_t bs = cache_buffer_size(g->cache);
	uint64_t pos = j->start;
	int rc = 0;

	r = cache_reader_create_at(g->stream, j->start, j->start + j->size,
				   g->window);
	if (!r)
		return ENOMEM;
	ir->member_open = false;
	while (!rc && pos < j->start + j->size) {
		/* up to the end of one block: with one block pinned at a time
		 * the output chunks still find room in the smallest budget */
		size_t in_block = (size_t)((pos - j->start) % bs);

		rc = cache_reader_read(r, pos, bs - in_block, &view);
		if (!rc && view.bytes == 0)
			rc = EIO; /* the stream is shorter than listed */
		for (int i = 0; !rc && i < view.count; i++) {
			size_t used = 0;

			if (j->literal)
				rc = copy_some(ir, view.iov[i].iov_base,
					       view.iov[i].iov_len, &used);
			else
				rc = inflate_some(ir, view.iov[i].iov_base,
						  view.iov[i].iov_len, &used);
			pos += used;
		}
		cache_view_release(g->cache, &view);
		if (rc == EAGAIN) /* (read again from pos, with room) */
			rc = wait_room(ir);
		pthread_mutex_lock(&g->lock);
		if (g->stopping)
			rc = ECANCELED;
		pthread_mutex_unlock(&g->lock);
	}
	cache_reader_destroy(r);
	if (!rc && !j->literal && ir->member_open)
		rc = EIO; /* truncated: the last member did not end */
	if (!rc)
		rc = flush_out(ir);
	drop_out(ir);
	return rc;
}

static void run_job(struct channel_gzip *g, struct gz_job *j, z_stream *zs)
{
	struct inflate_run ir;
	char msg[128];
	int rc;

	memset(&ir, 0, sizeof(ir));
	ir.g = g;
	ir.j = j;
	ir.zs = zs;
	if (!zs || inflateReset2(zs, 16 + MAX_WBITS) != Z_OK)
		rc = ENOMEM;
	else
		rc = run_inflate(&ir);
	pthread_mutex_lock(&g->lock);
	if (rc == EIO && !j->literal)
		util_warn("channel '%s': s3://%s/%s is not valid gzip data or "
			  "was cut short: reads of the epoch fail with EIO "
			  "there",
			  g->name, j->bucket, j->key);
	else if (rc && rc != ECANCELED)
		util_warn("channel '%s': gunzip of s3://%s/%s failed: %s",
			  g->name, j->literal ? "" : j->bucket,
			  j->literal ? "(literal bytes)" : j->key,
			  util_strerror(rc, msg, sizeof(msg)));
	j->error = rc ? EIO : 0;
	j->finished = true;
	j->running = false;
	pthread_cond_broadcast(&g->changed);
	pthread_mutex_unlock(&g->lock);
}

/* ---- workers ---- */

/* A thread's inflate state (gzip members): false when zlib has none. */
static bool inflater_init(z_stream *zs)
{
	memset(zs, 0, sizeof(*zs));
	return inflateInit2(zs, 16 + MAX_WBITS) == Z_OK;
}

/* Makes a job of the next segment, waiting for it without the lock
 * (lock held on entry and return). */
static void add_job(struct channel_gzip *g)
{
	struct cache_segment_info info;
	size_t idx = g->next_seg;
	struct gz_job *j;
	int rc;

	g->adding = true;
	pthread_mutex_unlock(&g->lock);
	rc = cache_stream_segment(g->stream, idx, &info);
	j = rc ? NULL : calloc(1, sizeof(*j));
	pthread_mutex_lock(&g->lock);
	g->adding = false;
	pthread_cond_broadcast(&g->changed);
	if (rc) {
		g->stream_ended = true;
		g->stream_error = rc == ENODATA ? 0 : EIO;
		return;
	}
	if (!j) {
		g->stream_ended = true;
		g->stream_error = ENOMEM;
		return;
	}
	j->start = info.start;
	j->size = info.size;
	j->literal = info.literal;
	j->seg = idx;
	j->bucket = info.bucket;
	j->key = info.key;
	if (!object_counts_id(&info, &j->object_id))
		j->object_id = 0;
	if (g->jobs_tail)
		g->jobs_tail->next = j;
	else
		g->jobs = j;
	g->jobs_tail = j;
	g->njobs++;
	g->next_seg++;
}

/* The first job nobody works on (lock held). */
static struct gz_job *idle_job(struct channel_gzip *g)
{
	for (struct gz_job *j = g->jobs; j; j = j->next) {
		if (!j->running && !j->finished)
			return j;
	}
	return NULL;
}

/*
 * A worker: one inflate state for all its jobs, reset for each (its 40 KiB
 * made and freed for every object of a dataset of small ones churned the
 * heap: RSS grew through the epoch).
 */
static void *worker_main(void *arg)
{
	struct channel_gzip *g = arg;
	z_stream zs;
	bool inflating = inflater_init(&zs);

	pthread_mutex_lock(&g->lock);
	while (!g->stopping) {
		struct gz_job *j = idle_job(g);

		if (!j && !g->adding && !g->stream_ended &&
		    g->njobs < g->max_jobs) {
			add_job(g);
			continue;
		}
		if (!j) {
			pthread_cond_wait(&g->changed, &g->lock);
			continue;
		}
		j->running = true;
		pthread_mutex_unlock(&g->lock);
		run_job(g, j, inflating ? &zs : NULL);
		pthread_mutex_lock(&g->lock);
	}
	pthread_mutex_unlock(&g->lock);
	if (inflating)
		inflateEnd(&zs);
	return NULL;
}

/* ---- the stage ---- */

static void gzip_destroy(struct channel_stage *st);
static int gzip_read(struct channel_stage *st, uint64_t offset, size_t size,
		     struct channel_view *view, struct channel_origin *origin);
static void gzip_release(struct channel_stage *st, struct channel_view *view);
static uint64_t gzip_position(struct channel_stage *st);

static const struct channel_stage_ops gzip_ops = {
    .read = gzip_read,
    .release = gzip_release,
    .position = gzip_position,
    .destroy = gzip_destroy,
};

struct channel_stage *channel_gzip_create(struct cache *c,
					  struct cache_stream *s,
					  const char *name, unsigned threads,
					  size_t first_seg)
{
	struct channel_gzip *g = calloc(1, sizeof(*g));
	uint64_t budget = cache_budget(c);

	if (!g) {
		errno = ENOMEM;
		return NULL;
	}
	g->stage.ops = &gzip_ops;
	g->cache = c;
	g->stream = s;
	g->name = name;
	if (!threads)
		threads = channel_stage_threads();
	if (threads > MAX_THREADS)
		threads = MAX_THREADS;
	g->max_jobs = threads + 1;
	/* the jobs ahead leave the head room for a chunk: with the last
	 * chunk taken by a job ahead, the head waited for it, and the job
	 * ahead for the reader, who waited for the head */
	g->ahead_max = budget / 2 > cache_buffer_size(c)
			   ? budget / 2 - cache_buffer_size(c)
			   : 0;
	/* the jobs' compressed windows share what the output leaves */
	g->window = cache_max_window(c) / g->max_jobs;
	if (g->window < 2 * cache_buffer_size(c))
		g->window = 2 * cache_buffer_size(c);
	pthread_mutex_init(&g->lock, NULL);
	pthread_cond_init(&g->changed, NULL);
	/* (ESTALE when the stream dropped its start: its owner makes another)
	 */
	g->hold = cache_hold_create(s, first_seg);
	g->next_seg = first_seg;
	if (!g->hold) {
		int rc = errno;

		gzip_destroy(&g->stage);
		errno = rc;
		return NULL;
	}
	for (unsigned i = 0; i < threads; i++) {
		if (pthread_create(&g->threads[i], NULL, worker_main, g) != 0)
			break;
		g->nthreads++;
	}
	if (!g->nthreads) {
		gzip_destroy(&g->stage);
		errno = EAGAIN;
		return NULL;
	}
	return &g->stage;
}

static void job_free(struct channel_gzip *g, struct gz_job *j)
{
	pieces_free(g, j);
	free(j);
}

static void gzip_destroy(struct channel_stage *st)
{
	struct channel_gzip *g = (struct channel_gzip *)st;

	pthread_mutex_lock(&g->lock);
	g->stopping = true;
	pthread_cond_broadcast(&g->changed);
	pthread_mutex_unlock(&g->lock);
	for (unsigned i = 0; i < g->nthreads; i++)
		pthread_join(g->threads[i], NULL);
	if (g->again_started)
		pthread_join(g->again_thread, NULL);
	while (g->jobs) {
		struct gz_job *j = g->jobs;

		g->jobs = j->next;
		job_free(g, j);
	}
	cache_hold_release(g->hold);
	pthread_cond_destroy(&g->changed);
	pthread_mutex_destroy(&g->lock);
	free(g);
}

static uint64_t gzip_position(struct channel_stage *st)
{
	struct channel_gzip *g = (struct channel_gzip *)st;
	uint64_t pos;

	pthread_mutex_lock(&g->lock);
	pos = g->pos;
	pthread_mutex_unlock(&g->lock);
	return pos;
}

/* The reader is done with the head job: the next one is the head, and
 * what it holds no longer counts as ahead (lock held). */
static void pop_head(struct channel_gzip *g)
{
	struct gz_job *j = g->jobs;

	g->jobs = j->next;
	if (!g->jobs)
		g->jobs_tail = NULL;
	g->njobs--;
	job_free(g, j);
	cache_hold_move(g->hold, g->jobs ? g->jobs->seg : g->next_seg);
	if (g->jobs)
		g->ahead_held -= g->jobs->held;
	pthread_cond_broadcast(&g->changed);
}

/* Moves up to want bytes of the head's first piece into the view. */
static size_t take_piece(struct channel_gzip *g, struct gz_job *j,
			 struct channel_view *view, size_t want)
{
	struct gz_piece *p = j->head;
	size_t n = p->len < want ? p->len : want;

	view->stage_iov[view->count].iov_base = p->chunk->data + p->off;
	view->stage_iov[view->count].iov_len = n;
	view->chunks[view->nchunks++] = p->chunk;
	p->chunk->refs++;
	view->count++;
	view->bytes += n;
	p->off += n;
	p->len -= n;
	j->held -= n;
	if (p->len == 0) {
		j->head = p->next;
		if (!j->head)
			j->tail = NULL;
		channel_chunk_unref(g->cache, p->chunk);
		free(p);
	}
	pthread_cond_broadcast(&g->changed);
	return n;
}

/* The origin of job j's bytes (lock held). */
static void name_origin(const struct gz_job *j, struct channel_origin *origin)
{
	origin->index = j->seg;
	origin->bucket = j->literal ? NULL : j->bucket;
	origin->key = j->literal ? NULL : j->key;
	origin->object_id = j->object_id;
}

/* The reads: with origin set, a view holds one job's bytes and says
 * whose, and offset is not checked; with tell_ends too, each job's end is
 * told (struct channel_origin). */
static int gzip_read(struct channel_stage *st, uint64_t offset, size_t size,
		     struct channel_view *view, struct channel_origin *origin)
{
	struct channel_gzip *g = (struct channel_gzip *)st;
	bool tell_ends = origin && origin->tell_ends;
	bool no_wait = origin && origin->no_wait;
	int rc = 0;

	view->iov = view->stage_iov;
	if (origin)
		origin->ended = false;
	pthread_mutex_lock(&g->lock);
	if (!origin && offset != g->pos) {
		pthread_mutex_unlock(&g->lock);
		return ESPIPE; /* the caller restarts the stage */
	}
	while (view->bytes < size && view->count < CHANNEL_VIEW_MAX) {
		struct gz_job *j = g->jobs;

		if (!j) {
			if (g->stream_ended) {
				rc = g->stream_error;
				break;
			}
			if (view->bytes)
				break;
			if (no_wait) {
				rc = EAGAIN;
				break;
			}
			pthread_cond_wait(&g->changed, &g->lock);
			continue;
		}
		if (j->head) {
			if (origin && !view->bytes)
				name_origin(j, origin);
			g->pos += take_piece(g, j, view, size - view->bytes);
			continue;
		}
		if (j->finished) {
			if (j->error) {
				rc = j->error;
				break;
			}
			if (tell_ends && !j->end_told) {
				/* with its last bytes, or alone */
				if (!view->bytes)
					name_origin(j, origin);
				origin->ended = true;
				j->end_told = true;
				break;
			}
			if (origin && view->bytes)
				break; /* the next job is another object */
			pop_head(g);
			continue;
		}
		if (view->bytes)
			break; /* like a pipe: what is here now */
		if (no_wait) {
			rc = EAGAIN;
			break;
		}
		pthread_cond_wait(&g->changed, &g->lock);
	}
	pthread_mutex_unlock(&g->lock);
	if (view->bytes && rc)
		rc = 0; /* the error comes with the next read */
	return rc;
}

/* The head job run again, on a thread of its own: the workers may all be
 * on jobs ahead, waiting for the reader to move on. */
static void *again_main(void *arg)
{
	struct channel_gzip *g = arg;
	z_stream zs;
	bool inflating = inflater_init(&zs);

	run_job(g, g->again_job, inflating ? &zs : NULL);
	if (inflating)
		inflateEnd(&zs);
	return NULL;
}

int channel_gzip_again(struct channel_stage *st, uint64_t index)
{
	struct channel_gzip *g = (struct channel_gzip *)st;
	struct gz_job *j;
	int rc = 0;

	if (g->again_started) {
		pthread_join(g->again_thread, NULL); /* (its job has ended) */
		g->again_started = false;
	}
	pthread_mutex_lock(&g->lock);
	j = g->jobs;
	if (!j || j->seg != index || !j->end_told || j->error || j->head) {
		rc = EINVAL; /* (not the object whose end was just told) */
	} else {
		j->finished = false;
		j->end_told = false;
		j->running = true;
		g->again_job = j;
		if (pthread_create(&g->again_thread, NULL, again_main, g)) {
			j->running = false;
			j->finished = j->end_told = true;
			rc = EAGAIN;
		} else {
			g->again_started = true;
		}
	}
	pthread_mutex_unlock(&g->lock);
	return rc;
}

static void gzip_release(struct channel_stage *st, struct channel_view *view)
{
	struct channel_gzip *g = (struct channel_gzip *)st;

	if (!view->nchunks)
		return;
	pthread_mutex_lock(&g->lock);
	for (int i = 0; i < view->nchunks; i++)
		channel_chunk_unref(g->cache, view->chunks[i]);
	pthread_cond_broadcast(&g->changed);
	pthread_mutex_unlock(&g->lock);
	view->nchunks = 0;
}
