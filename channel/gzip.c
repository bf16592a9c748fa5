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
 * the head (a budget of two blocks inflates one object at a time).  The
 * head, when it holds no output and the budget has no room (the jobs
 * ahead hold their compressed blocks while they wait), takes one chunk
 * outside it, so that it never waits for a job behind it.
 * Inflating objects in parallel needs their output held until the reader
 * gets to them: a budget that holds one decompressed object ahead lets two
 * cores work at once.
 *
 * RecordIO (part_max != 0): a record's header carries its length, which a
 * gzip object does not tell until it is inflated.  A job holds its output
 * until the end (pass 1), then frames it; if it would hold more than a
 * quarter of the budget it drops what it has, inflates the rest only to
 * count (pass 2), and inflates once more emitting framed pieces as they
 * come (pass 3).  Framing splits payloads past part_max into parts.
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

#define COUNT_SCRATCH	(256u << 10)
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
	bool visible;	    /* the reader may take pieces */
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
	uint64_t part_max;  /* 0: no framing */
	uint64_t window;    /* each job's prefetch window */
	uint64_t ahead_max; /* bytes the jobs ahead of the head may hold */
	uint64_t framed_hold_max; /* pass 1 holds at most this */

	pthread_mutex_t lock;
	pthread_cond_t changed; /* jobs, pieces or the head changed */
	pthread_t threads[MAX_THREADS];
	unsigned nthreads;
	struct gz_job *jobs; /* in order: the head first */
	struct gz_job *jobs_tail;
	unsigned njobs;
	unsigned max_jobs;
	size_t next_seg;   /* the next segment to make a job of */
	bool adding;	   /* a worker is waiting for that segment */
	bool stream_ended; /* no segment after next_seg */
	int stream_error;  /* why the stream ended early, or 0 */
	uint64_t ahead_held;
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

static int piece_add_bytes(struct channel_gzip *g, struct gz_job *j,
			   const void *bytes, size_t len)
{
	struct channel_chunk *c;
	int rc;

	if (len == 0)
		return 0;
	c = channel_chunk_copy(bytes, len);
	if (!c)
		return ENOMEM;
	rc = piece_add(g, j, c, 0, len);
	channel_chunk_unref(g->cache, c);
	return rc;
}

/* ---- framing (g->lock held) ---- */

struct record_parts {
	uint64_t total; /* the payload's length */
	uint64_t done;	/* payload bytes emitted */
	uint64_t parts;
};

static void record_parts_init(struct record_parts *f, uint64_t total,
			      uint64_t part_max)
{
	f->total = total;
	f->done = 0;
	f->parts = channel_recordio_parts(total, part_max);
}

static int frame_header(struct channel_gzip *g, struct gz_job *j,
			struct record_parts *f)
{
	unsigned char hdr[CHANNEL_RECORDIO_HEADER];
	uint64_t part = f->done / g->part_max;
	uint64_t off = part * g->part_max;
	uint64_t plen =
	    f->total - off < g->part_max ? f->total - off : g->part_max;

	channel_recordio_header(hdr, channel_recordio_part_flag(part, f->parts),
				(uint32_t)plen);
	return piece_add_bytes(g, j, hdr, sizeof(hdr));
}

/* Payload bytes [off, off + len) of c, with a part header before each
 * part's first byte; the padding after the last. */
static int frame_add(struct channel_gzip *g, struct gz_job *j,
		     struct record_parts *f, struct channel_chunk *c,
		     size_t off, size_t len)
{
	static const unsigned char zeros[4];
	int rc = 0;

	while (len && !rc) {
		uint64_t to_boundary;
		size_t n;

		if (f->done % g->part_max == 0) {
			rc = frame_header(g, j, f);
			if (rc)
				break;
		}
		to_boundary = g->part_max - f->done % g->part_max;
		n = len < to_boundary ? len : (size_t)to_boundary;
		rc = piece_add(g, j, c, off, n);
		f->done += n;
		off += n;
		len -= n;
	}
	if (!rc && f->done == f->total) {
		if (f->total == 0)
			rc = frame_header(g, j, f);
		if (!rc)
			rc = piece_add_bytes(
			    g, j, zeros, channel_recordio_padding(f->total));
	}
	return rc;
}

/* Pass 1 ended within its hold: frames the raw pieces in place. */
static int frame_held(struct channel_gzip *g, struct gz_job *j)
{
	struct gz_piece *raw = j->head;
	struct record_parts f;
	uint64_t total = j->held;
	int rc = 0;

	j->head = j->tail = NULL;
	job_held_add(g, j, -(int64_t)total);
	record_parts_init(&f, total, g->part_max);
	if (total == 0)
		rc = frame_add(g, j, &f, NULL, 0, 0);
	while (raw) {
		struct gz_piece *p = raw;

		raw = p->next;
		if (!rc)
			rc = frame_add(g, j, &f, p->chunk, p->off, p->len);
		channel_chunk_unref(g->cache, p->chunk);
		free(p);
	}
	return rc;
}

/* ---- a job's work (no lock held unless noted) ---- */

/* Whether the job may take another chunk now (lock held). */
static bool may_grow(struct channel_gzip *g, const struct gz_job *j)
{
	if (j == g->jobs)
		return true;
	return g->ahead_held + cache_buffer_size(g->cache) <= g->ahead_max;
}

/* A chunk from the cache's budget, waiting while the job may not grow or
 * the budget has no room.  NULL when the stage stops. */
static struct channel_chunk *chunk_take(struct channel_gzip *g,
					struct gz_job *j)
{
	struct channel_chunk *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	pthread_mutex_lock(&g->lock);
	for (;;) {
		struct timespec until;
		bool head, empty;

		if (g->stopping)
			break;
		if (may_grow(g, j)) {
			head = j == g->jobs;
			empty = !j->head;
			pthread_mutex_unlock(&g->lock);
			c->data = cache_buffer_get(g->cache, head);
			c->from_cache = c->data != NULL;
			/* the head holding none: the rest of the budget
			 * may be blocks that jobs ahead read and wait
			 * with, so one of its own (at most one at a
			 * time, beside the views out) */
			if (!c->data && head && empty)
				c->data = malloc(cache_buffer_size(g->cache));
			pthread_mutex_lock(&g->lock);
			if (c->data)
				break;
		}
		/* woken by the reader, or retried: memory also comes back
		 * from blocks that are evicted or released */
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += MEMORY_RETRY_NS;
		if (until.tv_nsec >= 1000000000) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&g->changed, &g->lock, &until);
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

enum pass {
	PASS_HOLD,   /* keep raw output until the end (framing, length
			unknown) */
	PASS_COUNT,  /* only count the output */
	PASS_STREAM, /* emit as it comes (framed when the length is known) */
};

struct inflate_run {
	struct channel_gzip *g;
	struct gz_job *j;
	enum pass pass;
	struct record_parts parts; /* PASS_STREAM with framing */
	z_stream *zs;		   /* the worker's, reset for each job */
	bool member_open;	   /* inside a gzip member */
	struct channel_chunk *out;
	size_t out_used;  /* bytes of out filled */
	size_t out_given; /* bytes of out already in pieces */
	uint64_t produced;
	char *scratch; /* PASS_COUNT output */
	bool overflow; /* PASS_HOLD went past its hold */
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
	if (ir->pass == PASS_STREAM && g->part_max)
		rc = frame_add(g, ir->j, &ir->parts, ir->out, ir->out_given,
			       len);
	else
		rc = piece_add(g, ir->j, ir->out, ir->out_given, len);
	pthread_mutex_unlock(&g->lock);
	ir->out_given = ir->out_used;
	return rc;
}

/* While streaming, the reader gets output every FLUSH_STEP bytes rather
 * than a chunk at a time (the piece is final: later bytes go after it). */
static int flush_step(struct inflate_run *ir)
{
	if (ir->pass != PASS_STREAM ||
	    ir->out_used - ir->out_given < FLUSH_STEP)
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

/* Where the next output goes: room in a chunk, or the count scratch. */
static int out_room(struct inflate_run *ir)
{
	if (ir->pass == PASS_COUNT) {
		ir->zs->next_out = (Bytef *)ir->scratch;
		ir->zs->avail_out = COUNT_SCRATCH;
		return 0;
	}
	if (ir->out && ir->out_used < ir->out->cap) {
		ir->zs->next_out = (Bytef *)ir->out->data + ir->out_used;
		ir->zs->avail_out = (uInt)(ir->out->cap - ir->out_used);
		return 0;
	}
	if (flush_out(ir))
		return ENOMEM;
	drop_out(ir);
	if (ir->pass == PASS_HOLD &&
	    ir->produced + cache_buffer_size(ir->g->cache) >
		ir->g->framed_hold_max) {
		ir->overflow = true;
		return EFBIG;
	}
	ir->out = chunk_take(ir->g, ir->j);
	if (!ir->out)
		return ECANCELED;
	ir->out_used = ir->out_given = 0;
	return out_room(ir);
}

/* Inflates in[0..len); 0, EIO (corrupt) or what out_room() says. */
static int inflate_some(struct inflate_run *ir, const unsigned char *in,
			size_t len)
{
	z_stream *zs = ir->zs;

	zs->next_in = (Bytef *)in;
	zs->avail_in = (uInt)len;
	while (zs->avail_in) {
		uInt before;
		int zrc, rc;

		if (!ir->member_open) {
			/* a new gzip member, or the next after one ended */
			if (inflateReset2(zs, 16 + MAX_WBITS) != Z_OK)
				return EIO;
			ir->member_open = true;
		}
		rc = out_room(ir);
		if (rc)
			return rc;
		before = zs->avail_out;
		zrc = inflate(zs, Z_NO_FLUSH);
		ir->produced += before - zs->avail_out;
		if (ir->pass != PASS_COUNT)
			ir->out_used += before - zs->avail_out;
		rc = flush_step(ir);
		if (rc)
			return rc;
		if (zrc == Z_STREAM_END)
			ir->member_open = false;
		else if (zrc == Z_BUF_ERROR && zs->avail_in == 0)
			break; /* wants more input */
		else if (zrc != Z_OK && zrc != Z_BUF_ERROR)
			return EIO;
	}
	return 0;
}

/* Literal bytes go out as they are, through the same chunks. */
static int copy_some(struct inflate_run *ir, const unsigned char *in,
		     size_t len)
{
	while (len) {
		size_t n;
		int rc = out_room(ir);

		if (rc)
			return rc;
		n = len < ir->zs->avail_out ? len : ir->zs->avail_out;
		if (ir->pass != PASS_COUNT) {
			memcpy(ir->zs->next_out, in, n);
			ir->out_used += n;
		}
		ir->produced += n;
		in += n;
		len -= n;
		rc = flush_step(ir);
		if (rc)
			return rc;
	}
	return 0;
}

/* One pass over the job's bytes; 0 or an errno. */
static int run_pass(struct inflate_run *ir)
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
	ir->produced = 0;
	while (!rc && pos < j->start + j->size) {
		/* up to the end of one block: with one block pinned at a time
		 * the output chunks still find room in the smallest budget */
		size_t in_block = (size_t)((pos - j->start) % bs);

		rc = cache_reader_read(r, pos, bs - in_block, &view);
		if (!rc && view.bytes == 0)
			rc = EIO; /* the stream is shorter than listed */
		for (int i = 0; !rc && i < view.count; i++) {
			if (j->literal)
				rc = copy_some(ir, view.iov[i].iov_base,
					       view.iov[i].iov_len);
			else
				rc = inflate_some(ir, view.iov[i].iov_base,
						  view.iov[i].iov_len);
		}
		pos += view.bytes;
		cache_view_release(g->cache, &view);
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

/* Frames a job in up to three passes (see the top of the file). */
static int run_framed(struct inflate_run *ir)
{
	struct channel_gzip *g = ir->g;
	struct gz_job *j = ir->j;
	uint64_t total;
	int rc;

	ir->pass = PASS_HOLD;
	rc = run_pass(ir);
	if (!rc) {
		pthread_mutex_lock(&g->lock);
		rc = frame_held(g, j);
		pthread_mutex_unlock(&g->lock);
		return rc;
	}
	if (!ir->overflow)
		return rc;
	/* too large to hold: count it, then stream it framed */
	pthread_mutex_lock(&g->lock);
	pieces_free(g, j);
	pthread_mutex_unlock(&g->lock);
	ir->overflow = false;
	ir->pass = PASS_COUNT;
	ir->scratch = malloc(COUNT_SCRATCH);
	if (!ir->scratch)
		return ENOMEM;
	rc = run_pass(ir);
	total = ir->produced;
	free(ir->scratch);
	ir->scratch = NULL;
	if (rc)
		return rc;
	util_debug("channel '%s': s3://%s/%s inflates to %llu bytes: framed "
		   "after counting them",
		   g->name, j->bucket, j->key, (unsigned long long)total);
	ir->pass = PASS_STREAM;
	record_parts_init(&ir->parts, total, g->part_max);
	pthread_mutex_lock(&g->lock);
	j->visible = true;
	if (total == 0)
		rc = frame_add(g, j, &ir->parts, NULL, 0, 0);
	pthread_mutex_unlock(&g->lock);
	if (!rc)
		rc = run_pass(ir);
	if (!rc && ir->produced != total)
		rc = EIO; /* the object changed between the passes */
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
	if (!zs || inflateReset2(zs, 16 + MAX_WBITS) != Z_OK) {
		rc = ENOMEM;
	} else if (g->part_max) {
		rc = run_framed(&ir);
	} else {
		ir.pass = PASS_STREAM;
		rc = run_pass(&ir);
	}
	free(ir.scratch);
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
	if (rc && !j->visible)
		pieces_free(g, j); /* pass 1's raw output, never framed */
	j->finished = true;
	j->visible = true;
	j->running = false;
	pthread_cond_broadcast(&g->changed);
	pthread_mutex_unlock(&g->lock);
}

/* ---- workers ---- */

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
	j->visible = g->part_max == 0;
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
	bool inflating;

	memset(&zs, 0, sizeof(zs));
	inflating = inflateInit2(&zs, 16 + MAX_WBITS) == Z_OK;
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
					  const char *name, uint64_t part_max,
					  unsigned threads, size_t first_seg)
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
	g->part_max = part_max;
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
	g->framed_hold_max = budget / 4;
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

/* The reads: with origin set, a view holds one job's bytes and says
 * whose, and offset is not checked. */
/* with origin, offset is ignored: the view is the next bytes of one
 * object */
static int gzip_read(struct channel_stage *st, uint64_t offset, size_t size,
		     struct channel_view *view, struct channel_origin *origin)
{
	struct channel_gzip *g = (struct channel_gzip *)st;
	int rc = 0;

	view->iov = view->stage_iov;
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
			pthread_cond_wait(&g->changed, &g->lock);
			continue;
		}
		if (j->visible && j->head) {
			if (origin && !view->bytes) {
				origin->index = j->seg;
				origin->bucket = j->literal ? NULL : j->bucket;
				origin->key = j->literal ? NULL : j->key;
				origin->object_id = j->object_id;
			}
			g->pos += take_piece(g, j, view, size - view->bytes);
			continue;
		}
		if (j->finished) {
			if (j->error) {
				rc = j->error;
				break;
			}
			if (origin && view->bytes)
				break; /* the next job is another object */
			pop_head(g);
			continue;
		}
		if (view->bytes)
			break; /* like a pipe: what is here now */
		pthread_cond_wait(&g->changed, &g->lock);
	}
	pthread_mutex_unlock(&g->lock);
	if (view->bytes && rc)
		rc = 0; /* the error comes with the next read */
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
