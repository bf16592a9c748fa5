/*
 * channel converter: rows to Records ahead of the reader, on several cores.
 *
 *   below --feeder--> batches --workers--> output --reader--> views
 *
 * A stage (channel/stage.h) over the stage below it.  The feeder thread
 * reads that stage (an epoch's bytes, or a file), one object at a time, and
 * copies them into the batch being filled; once it holds BATCH_TARGET
 * bytes it is cut after its last whole row (channel_rows_complete()) and
 * queued, and the bytes after the cut start the next batch.  So every
 * batch starts at a row's start and holds whole rows, wherever the objects
 * and cache blocks begin and end, and the workers need not talk to each
 * other.  A batch also lists its pieces: where each object's bytes start in
 * it, for the header rule (each object's first line dropped by the feeder)
 * and for messages.  The CSV field count every row must have is taken from
 * the first row that is not blank before the first batch is queued.
 * Pieces name their objects with copies of their own (struct origin_text):
 * the stream below drops what its reader passed, objects included, while
 * batches behind it wait to be converted.
 *
 * Worker threads (one per core by default) convert the oldest queued batch
 * (channel_rows_convert_marked()), note where each piece's records begin in
 * the output (unknown when a row runs into the piece from the one before),
 * count the line ends of each piece, and free the input; the output is one
 * malloc'd chunk per batch.  A read with origin (a record scan measuring
 * objects) gets one piece's records and its object's name and id, or
 * those of pieces a row joins with no id.  The reader takes the
 * batches in order, numbering lines as it goes (an object's line count
 * carries over from batch to batch), so a bad row is reported, in order,
 * as "OBJECT, line N".  With bad rows failing the read, the output before
 * the bad row is delivered, then EIO.
 *
 * Memory: at most threads + 2 batches exist at once (queued, being
 * converted, converted and not yet read), each about BATCH_TARGET bytes of
 * input and its output (a row longer than that makes a longer batch, up
 * to CHANNEL_ROW_MAX), so the stage holds a few MiB per core whatever the
 * epoch's size.  Input and output buffers are recycled through a small
 * pool rather than freed: buffers this large would otherwise be mapped,
 * faulted in and unmapped again for every batch (the daemon maps every
 * allocation of 1 MiB or more), which cost more than the conversion.
 */
#include "config.h"

#include "channel/convert.h"

#include <errno.h>
#include <stddef.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "channel/internal.h"

#define BATCH_TARGET	(1u << 20)
#define READ_SIZE	(256u << 10)
#define MAX_THREADS	64
#define BAD_ROWS_LOGGED 10
#define POOL_MAX	8	   /* spare buffers kept */
#define POOL_BUFFER_MAX (4u << 20) /* and none larger than this */

/* An object's name for messages, shared by the pieces of its bytes. */
struct origin_text {
	unsigned long refs; /* atomic: the feeder adds, the reader drops */
	uint64_t index;	    /* the origin's index */
	uint64_t object_id; /* and its object_id */
	/* a row runs into or out of the object: its records are not its
	 * own (atomic: set by a worker, read by the reader) */
	bool joined;
	char name[]; /* "s3://BUCKET/KEY" */
};

/* Where one object's bytes start in a batch. */
struct piece {
	size_t start;		    /* offset in the batch's text */
	struct origin_text *origin; /* a reference */
	bool object_start;	    /* the object's first bytes (after its
				       header) */
	uint64_t lines_before;	    /* the object's lines dropped before it: its
				       header */
	uint64_t lines;		    /* line ends in the piece (the worker) */
	size_t out_start;	    /* its records' first byte in the batch's
				       output (the worker), SIZE_MAX when a
				       row runs into it from the piece before */
	uint64_t first_line;	    /* the line it starts on (the reader) */
};

enum batch_state {
	BATCH_QUEUED,
	BATCH_RUNNING,
	BATCH_DONE,
};

struct batch {
	char *text; /* owned until converted */
	size_t len, text_cap;
	struct piece *pieces;
	size_t npieces, cap;
	size_t columns;
	enum batch_state state;
	int rc; /* channel_rows_convert()'s */
	struct channel_rows_result res;
	size_t bad_piece;	   /* the piece res.bad_at is in */
	uint64_t bad_lines;	   /* line ends before it in the piece */
	struct channel_chunk *out; /* the records, or NULL when none */
	size_t out_len, taken;	   /* taken: bytes handed out */
	bool counted;		   /* lines numbered, stats added */
	struct batch *next;
};

struct channel_converter {
	struct channel_stage stage; /* channel_converter_stage() */
	struct channel_convert_conf conf;
	char name[128];

	pthread_mutex_t lock;
	pthread_cond_t changed;
	pthread_t feeder;
	bool feeder_started;
	pthread_t threads[MAX_THREADS];
	unsigned nthreads;
	struct batch *head, *tail; /* in order */
	unsigned nbatches, max_batches;
	bool stopping;
	bool fed;	/* the feeder is done */
	int feed_error; /* why it stopped early, or 0 */
	char feed_why[1400];
	size_t columns; /* CSV: fields per row, once known */

	/* spare buffers (data and capacity), under lock */
	struct util_buf pool[POOL_MAX];
	unsigned pooled;

	/* the reader's */
	uint64_t pos;
	uint64_t line; /* the next line of the current object */
	uint64_t rows, skipped, logged;
	bool failed; /* EIO from here on */
};

/* A name of o's own (one reference), or NULL on ENOMEM. */
static struct origin_text *origin_text_make(const struct channel_origin *o)
{
	const char *key = o->key ? o->key : "(literal bytes)";
	size_t len = (o->bucket ? strlen(o->bucket) + 6 : 0) + strlen(key) + 1;
	struct origin_text *t = malloc(sizeof(*t) + len);

	if (!t)
		return NULL;
	t->refs = 1;
	t->index = o->index;
	t->object_id = o->object_id;
	t->joined = false;
	if (o->bucket)
		snprintf(t->name, len, "s3://%s/%s", o->bucket, key);
	else
		snprintf(t->name, len, "%s", key);
	return t;
}

static struct origin_text *origin_text_ref(struct origin_text *t)
{
	__atomic_add_fetch(&t->refs, 1, __ATOMIC_RELAXED);
	return t;
}

static void origin_text_unref(struct origin_text *t)
{
	if (t && __atomic_sub_fetch(&t->refs, 1, __ATOMIC_ACQ_REL) == 0)
		free(t);
}

/* Drops b's pieces from n on. */
static void pieces_truncate(struct batch *b, size_t n)
{
	while (b->npieces > n)
		origin_text_unref(b->pieces[--b->npieces].origin);
}

/* ---- buffers (lock held, or no other thread left) ---- */

/* A buffer with room for len bytes: a spare one, or a new one. */
static int buffer_get(struct channel_converter *cv, struct util_buf *b,
		      size_t len)
{
	if (cv->pooled)
		*b = cv->pool[--cv->pooled];
	else
		util_buf_init(b, 0);
	b->len = 0;
	return util_buf_reserve(b, len) ? 0 : ENOMEM;
}

static void buffer_put(struct channel_converter *cv, char *data, size_t cap)
{
	if (!data)
		return;
	/* a buffer grown for a long row is not kept */
	if (cv->pooled == POOL_MAX || cap > POOL_BUFFER_MAX) {
		free(data);
		return;
	}
	util_buf_init(&cv->pool[cv->pooled], 0);
	cv->pool[cv->pooled].data = data;
	cv->pool[cv->pooled].cap = cap;
	cv->pooled++;
}

/* A chunk's last reference gives its buffer back. */
static void chunk_recycle(void *arg, char *data, size_t cap)
{
	buffer_put(arg, data, cap);
}

static void batch_free(struct batch *b, struct channel_converter *cv)
{
	if (!b)
		return;
	if (b->out)
		channel_chunk_unref(NULL, b->out); /* (not the cache's) */
	buffer_put(cv, b->text, b->text_cap);
	pieces_truncate(b, 0);
	free(b->pieces);
	free(b);
}

static int piece_add(struct batch *b, size_t start, struct origin_text *o,
		     bool object_start, uint64_t lines_before)
{
	struct piece *p;

	if (b->npieces == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 4;

		p = realloc(b->pieces, cap * sizeof(*p));
		if (!p)
			return ENOMEM;
		b->pieces = p;
		b->cap = cap;
	}
	p = &b->pieces[b->npieces++];
	memset(p, 0, sizeof(*p));
	p->start = start;
	p->origin = origin_text_ref(o);
	p->object_start = object_start;
	p->lines_before = lines_before;
	return 0;
}

/* ---- the feeder ---- */

struct feed {
	struct channel_converter *cv;
	struct util_buf text;	    /* the batch being filled */
	struct batch *b;	    /* its pieces */
	struct origin_text *origin; /* the current object's (a reference) */
	bool in_header;	 /* dropping the current object's first line */
	size_t retry_at; /* no whole row in the text when it was this long
			    / 2: look again at this length (a long row is
			    scanned O(log) times, not once per read) */
};

static void feed_fail(struct channel_converter *cv, int rc, const char *why)
{
	pthread_mutex_lock(&cv->lock);
	if (!cv->feed_error) {
		cv->feed_error = rc;
		snprintf(cv->feed_why, sizeof(cv->feed_why), "%s", why);
	}
	pthread_mutex_unlock(&cv->lock);
}

/* Queues b, waiting for room; false when the converter stops. */
static bool enqueue(struct channel_converter *cv, struct batch *b)
{
	pthread_mutex_lock(&cv->lock);
	while (!cv->stopping && cv->nbatches >= cv->max_batches)
		pthread_cond_wait(&cv->changed, &cv->lock);
	if (cv->stopping) {
		pthread_mutex_unlock(&cv->lock);
		return false;
	}
	if (cv->tail)
		cv->tail->next = b;
	else
		cv->head = b;
	cv->tail = b;
	cv->nbatches++;
	pthread_cond_broadcast(&cv->changed);
	pthread_mutex_unlock(&cv->lock);
	return true;
}

/*
 * Cuts the batch after its last whole row (all of it when final) and
 * queues it; what follows the cut starts the next batch.  0, or an errno
 * (ECANCELED when stopping).
 */
static int cut(struct feed *f, bool final)
{
	struct channel_converter *cv = f->cv;
	struct batch *b = f->b, *nb;
	struct util_buf rest;
	size_t at, i;
	int rc;

	at = final ? f->text.len
		   : channel_rows_complete(cv->conf.format, f->text.data,
					   f->text.len);
	if (at == 0) {
		if (!final && f->text.len > CHANNEL_ROW_MAX)
			return EFBIG;
		f->retry_at = 2 * f->text.len;
		if (f->retry_at > CHANNEL_ROW_MAX + 1)
			f->retry_at = CHANNEL_ROW_MAX + 1;
		return 0;
	}
	nb = calloc(1, sizeof(*nb));
	if (!nb)
		return ENOMEM;
	/* room for a whole batch at once: no copies as it fills */
	pthread_mutex_lock(&cv->lock);
	rc = buffer_get(cv, &rest, BATCH_TARGET + READ_SIZE);
	pthread_mutex_unlock(&cv->lock);
	if (!rc)
		rc =
		    util_buf_append(&rest, f->text.data + at, f->text.len - at);
	/* the pieces that start after the cut move; the one the cut falls
	 * in goes on in the next batch (even with no bytes after the cut
	 * yet: its object's next bytes will be there), so every batch has a
	 * piece at 0 (the first batch's first piece starts at 0) */
	for (i = 0; !rc && i < b->npieces && b->pieces[i].start < at; i++)
		;
	if (!rc && i > 0 && (i == b->npieces || b->pieces[i].start > at))
		rc = piece_add(nb, 0, b->pieces[i - 1].origin, false, 0);
	for (size_t j = i; !rc && j < b->npieces; j++)
		rc = piece_add(nb, b->pieces[j].start - at, b->pieces[j].origin,
			       b->pieces[j].object_start,
			       b->pieces[j].lines_before);
	if (rc) {
		util_buf_free(&rest);
		batch_free(nb, cv);
		return rc;
	}
	pieces_truncate(b, i);
	b->len = at;
	b->text_cap = f->text.cap;
	b->text = util_buf_take(&f->text);
	f->text = rest;
	if (cv->conf.format == CHANNEL_CONVERT_CSV && !cv->columns) {
		if (cv->conf.feature_dim)
			cv->columns =
			    (size_t)cv->conf.feature_dim +
			    (cv->conf.label_column != CHANNEL_LABEL_NONE);
		else
			cv->columns = channel_rows_columns(b->text, b->len);
	}
	b->columns = cv->columns;
	f->b = nb;
	if (!enqueue(cv, b)) {
		pthread_mutex_lock(&cv->lock); /* workers still use the pool */
		batch_free(b, cv);
		pthread_mutex_unlock(&cv->lock);
		return ECANCELED;
	}
	f->retry_at = 0;
	return 0;
}

/* The bytes of one view, from origin o. */
static int feed_bytes(struct feed *f, const struct channel_origin *o,
		      const char *p, size_t n)
{
	struct channel_converter *cv = f->cv;
	int rc;

	if (!f->origin || o->index != f->origin->index) {
		struct origin_text *t = origin_text_make(o);

		if (!t)
			return ENOMEM;
		origin_text_unref(f->origin);
		f->origin = t;
		/* a new object: with headers it is a file of its own, whose
		 * end ended its last row */
		if (cv->conf.header_skip && f->text.len &&
		    f->text.data[f->text.len - 1] != '\n') {
			rc = util_buf_append(&f->text, "\n", 1);
			if (rc)
				return rc;
		}
		rc = piece_add(f->b, f->text.len, f->origin, true,
			       cv->conf.header_skip ? 1 : 0);
		if (rc)
			return rc;
		f->in_header = cv->conf.header_skip;
	}
	if (f->in_header) {
		const char *lf = memchr(p, '\n', n);

		if (!lf)
			return 0;
		n -= (size_t)(lf + 1 - p);
		p = lf + 1;
		f->in_header = false;
	}
	return util_buf_append(&f->text, p, n);
}

static void *feeder_main(void *arg)
{
	struct channel_converter *cv = arg;
	struct feed f = {.cv = cv};
	char why[1400];
	int rc = 0;

	util_buf_init(&f.text, 0);
	f.b = calloc(1, sizeof(*f.b));
	if (!f.b || !util_buf_reserve(&f.text, BATCH_TARGET + READ_SIZE))
		rc = ENOMEM; /* (the first: the pool is empty) */
	while (!rc) {
		struct channel_view view;
		struct channel_origin o = {0};

		memset(&view, 0, sizeof(view));
		pthread_mutex_lock(&cv->lock);
		rc = cv->stopping ? ECANCELED : 0;
		pthread_mutex_unlock(&cv->lock);
		if (!rc) {
			rc = cv->stage.below->ops->read(
			    cv->stage.below,
			    cv->stage.below->ops->position(cv->stage.below),
			    READ_SIZE, &view, &o);
			if (rc) /* the whole rows before the failure go on */
				(void)cut(&f, false);
		}
		if (!rc && view.bytes == 0) {
			cv->stage.below->ops->release(cv->stage.below, &view);
			rc = cut(&f, true);
			break;
		}
		for (int i = 0; !rc && i < view.count; i++)
			rc = feed_bytes(&f, &o, view.iov[i].iov_base,
					view.iov[i].iov_len);
		cv->stage.below->ops->release(cv->stage.below, &view);
		if (!rc && f.text.len >= BATCH_TARGET &&
		    f.text.len >= f.retry_at)
			rc = cut(&f, false);
	}
	if (rc == EFBIG) {
		/* the batch starts where the row does */
		snprintf(why, sizeof(why),
			 "%sa row that starts in %s is longer than %u MiB: "
			 "rows that long do not convert",
			 cv->name,
			 f.b->npieces ? f.b->pieces[0].origin->name
			 : f.origin   ? f.origin->name
				      : "(literal bytes)",
			 CHANNEL_ROW_MAX >> 20);
		feed_fail(cv, EIO, why);
	} else if (rc == ENOMEM) {
		snprintf(why, sizeof(why), "%sout of memory converting rows",
			 cv->name);
		feed_fail(cv, EIO, why);
	} else if (rc && rc != ECANCELED) {
		feed_fail(cv, rc, ""); /* the source said why */
	}
	util_buf_free(&f.text);
	batch_free(f.b, cv);
	origin_text_unref(f.origin);
	pthread_mutex_lock(&cv->lock);
	cv->fed = true;
	pthread_cond_broadcast(&cv->changed);
	pthread_mutex_unlock(&cv->lock);
	return NULL;
}

/* ---- the workers ---- */

static uint64_t count_lines(const char *p, const char *end)
{
	uint64_t n = 0;

	while (p < end) {
		const char *lf = memchr(p, '\n', (size_t)(end - p));

		if (!lf)
			break;
		n++;
		p = lf + 1;
	}
	return n;
}

static void convert_batch(struct channel_converter *cv, struct batch *b)
{
	struct util_buf out;
	/* where each piece's records begin in out (without memory for
	 * that: nowhere known) */
	size_t *at = calloc(2 * b->npieces + 1, sizeof(*at));
	struct channel_rows_marks marks = {at, at ? at + b->npieces : NULL,
					   at ? b->npieces : 0};
	bool marked = false;
	int rc;

	/* records are about as long as the text; one growth at most */
	pthread_mutex_lock(&cv->lock);
	rc = buffer_get(cv, &out, b->len + b->len / 2);
	pthread_mutex_unlock(&cv->lock);
	for (size_t i = 0; i < marks.count; i++)
		at[i] = b->pieces[i].start;
	if (!rc) {
		rc = channel_rows_convert_marked(&cv->conf, b->columns, b->text,
						 b->len, &marks, &out, &b->res);
		marked = marks.count == b->npieces;
	}
	for (size_t i = 0; i < b->npieces; i++) {
		b->pieces[i].out_start = marked ? marks.out[i] : SIZE_MAX;
		if (b->pieces[i].out_start == SIZE_MAX)
			__atomic_store_n(&b->pieces[i].origin->joined, true,
					 __ATOMIC_RELEASE);
	}
	/* (text that ends inside a row ends the epoch: in another order
	 * that row would run into the next object, unless each object is a
	 * file of its own) */
	if (b->npieces && b->len && b->text[b->len - 1] != '\n' &&
	    !cv->conf.header_skip)
		__atomic_store_n(&b->pieces[b->npieces - 1].origin->joined,
				 true, __ATOMIC_RELEASE);
	free(at);
	for (size_t i = 0; i < b->npieces; i++) {
		struct piece *p = &b->pieces[i];
		size_t end =
		    i + 1 < b->npieces ? b->pieces[i + 1].start : b->len;

		p->lines = count_lines(b->text + p->start, b->text + end);
		if (b->res.bad_at >= p->start && b->res.bad_at < end &&
		    b->res.bad_at != SIZE_MAX) {
			b->bad_piece = i;
			b->bad_lines = count_lines(b->text + p->start,
						   b->text + b->res.bad_at);
		}
	}
	if (out.len) {
		size_t len = out.len, cap = out.cap;

		b->out = channel_chunk_adopt(util_buf_take(&out), cap);
		if (b->out) {
			b->out->recycle = chunk_recycle;
			b->out->recycle_arg = cv;
			b->out_len = len;
		} else {
			rc =
			    ENOMEM; /* (the records are lost: the read fails) */
		}
	}
	pthread_mutex_lock(&cv->lock);
	buffer_put(cv, b->text, b->text_cap); /* the input is done with */
	b->text = NULL;
	buffer_put(cv, out.data, out.cap); /* (when not handed on) */
	pthread_mutex_unlock(&cv->lock);
	b->rc = rc;
}

static struct batch *queued(struct channel_converter *cv)
{
	for (struct batch *b = cv->head; b; b = b->next) {
		if (b->state == BATCH_QUEUED)
			return b;
	}
	return NULL;
}

static void *worker_main(void *arg)
{
	struct channel_converter *cv = arg;

	pthread_mutex_lock(&cv->lock);
	while (!cv->stopping) {
		struct batch *b = queued(cv);

		if (!b) {
			pthread_cond_wait(&cv->changed, &cv->lock);
			continue;
		}
		b->state = BATCH_RUNNING;
		pthread_mutex_unlock(&cv->lock);
		convert_batch(cv, b);
		pthread_mutex_lock(&cv->lock);
		b->state = BATCH_DONE;
		pthread_cond_broadcast(&cv->changed);
	}
	pthread_mutex_unlock(&cv->lock);
	return NULL;
}

/* ---- the converter ---- */

static struct channel_converter *of_stage(struct channel_stage *st)
{
	return (struct channel_converter *)((char *)st -
					    offsetof(struct channel_converter,
						     stage));
}

static int converter_read(struct channel_converter *cv, uint64_t offset,
			  size_t size, struct channel_view *view,
			  struct channel_origin *origin);

static int stage_read(struct channel_stage *st, uint64_t offset, size_t size,
		      struct channel_view *view, struct channel_origin *origin)
{
	return converter_read(of_stage(st), offset, size, view, origin);
}

static void stage_release(struct channel_stage *st, struct channel_view *view)
{
	channel_converter_release(of_stage(st), view);
}

static uint64_t stage_position(struct channel_stage *st)
{
	return channel_converter_position(of_stage(st));
}

static void stage_destroy(struct channel_stage *st)
{
	channel_converter_destroy(of_stage(st));
}

static const struct channel_stage_ops converter_ops = {
    .read = stage_read,
    .release = stage_release,
    .position = stage_position,
    .destroy = stage_destroy,
};

struct channel_stage *channel_converter_stage(struct channel_converter *cv)
{
	return &cv->stage;
}

struct channel_converter *
channel_converter_create(const struct channel_convert_conf *conf,
			 struct channel_stage *below, const char *name,
			 unsigned threads)
{
	struct channel_converter *cv = calloc(1, sizeof(*cv));

	if (!cv) {
		errno = ENOMEM;
		return NULL;
	}
	cv->conf = *conf;
	cv->stage.ops = &converter_ops;
	cv->stage.below = below;
	/* messages start "NAME: ", or with the origin when name is "" */
	snprintf(cv->name, sizeof(cv->name), "%s%s", name, name[0] ? ": " : "");
	if (!threads)
		threads = channel_stage_threads();
	if (threads > MAX_THREADS)
		threads = MAX_THREADS;
	cv->max_batches = threads + 2;
	pthread_mutex_init(&cv->lock, NULL);
	pthread_cond_init(&cv->changed, NULL);
	for (unsigned i = 0; i < threads; i++) {
		if (pthread_create(&cv->threads[i], NULL, worker_main, cv))
			break;
		cv->nthreads++;
	}
	if (cv->nthreads &&
	    pthread_create(&cv->feeder, NULL, feeder_main, cv) == 0)
		cv->feeder_started = true;
	if (!cv->feeder_started) {
		channel_converter_destroy(cv);
		errno = EAGAIN;
		return NULL;
	}
	return cv;
}

void channel_converter_destroy(struct channel_converter *cv)
{
	if (!cv)
		return;
	pthread_mutex_lock(&cv->lock);
	cv->stopping = true;
	pthread_cond_broadcast(&cv->changed);
	pthread_mutex_unlock(&cv->lock);
	if (cv->feeder_started)
		pthread_join(cv->feeder, NULL);
	for (unsigned i = 0; i < cv->nthreads; i++)
		pthread_join(cv->threads[i], NULL);
	while (cv->head) {
		struct batch *b = cv->head;

		cv->head = b->next;
		batch_free(b, cv);
	}
	while (cv->pooled)
		free(cv->pool[--cv->pooled].data);
	if (cv->skipped)
		util_warn("%s%llu bad row%s skipped, %llu of them logged "
			  "(%llu rows converted)",
			  cv->name, (unsigned long long)cv->skipped,
			  cv->skipped == 1 ? "" : "s",
			  (unsigned long long)cv->logged,
			  (unsigned long long)cv->rows);
	pthread_cond_destroy(&cv->changed);
	pthread_mutex_destroy(&cv->lock);
	free(cv);
}

uint64_t channel_converter_position(struct channel_converter *cv)
{
	uint64_t pos;

	pthread_mutex_lock(&cv->lock);
	pos = cv->pos;
	pthread_mutex_unlock(&cv->lock);
	return pos;
}

void channel_converter_stats(struct channel_converter *cv,
			     struct channel_convert_stats *stats)
{
	pthread_mutex_lock(&cv->lock);
	stats->rows = cv->rows;
	stats->skipped = cv->skipped;
	pthread_mutex_unlock(&cv->lock);
}

/* A word for a CSV object whose first line is not numbers. */
static const char *header_hint(const struct channel_converter *cv,
			       uint64_t line, const char *why)
{
	if (cv->conf.format != CHANNEL_CONVERT_CSV || cv->conf.header_skip ||
	    line != 1 || !strstr(why, "is not a number"))
		return "";
	return " (a header line? --csv-header skip drops each object's "
	       "first line)";
}

/* The head batch reached the reader: number its lines, count its rows,
 * log a skipped row (lock held). */
static void batch_count(struct channel_converter *cv, struct batch *b)
{
	for (size_t i = 0; i < b->npieces; i++) {
		struct piece *p = &b->pieces[i];

		if (p->object_start)
			cv->line = 1 + p->lines_before;
		p->first_line = cv->line;
		cv->line += p->lines;
	}
	cv->rows += b->res.rows;
	cv->skipped += b->res.skipped;
	b->counted = true;
	if (b->res.skipped && cv->logged < BAD_ROWS_LOGGED &&
	    b->bad_piece < b->npieces) {
		const struct piece *p = &b->pieces[b->bad_piece];
		uint64_t line = p->first_line + b->bad_lines;

		cv->logged++;
		util_warn("%s%s, line %llu: %s: row skipped%s%s", cv->name,
			  p->origin->name, (unsigned long long)line, b->res.why,
			  header_hint(cv, line, b->res.why),
			  cv->logged == BAD_ROWS_LOGGED
			      ? " (further bad rows are counted, not logged)"
			      : "");
	}
}

/* The conversion stops at b (lock held): say why, once. */
static void batch_fail(struct channel_converter *cv, struct batch *b)
{
	char msg[128];

	cv->failed = true;
	if (b->rc == EINVAL && b->bad_piece < b->npieces) {
		const struct piece *p = &b->pieces[b->bad_piece];
		uint64_t line = p->first_line + b->bad_lines;

		util_warn("%s%s, line %llu: %s%s: the conversion stops "
			  "there (--on-bad-row skip skips bad rows)",
			  cv->name, p->origin->name, (unsigned long long)line,
			  b->res.why, header_hint(cv, line, b->res.why));
	} else {
		util_warn("%sconverting rows failed: %s", cv->name,
			  util_strerror(b->rc, msg, sizeof(msg)));
	}
}

static void pop_head(struct channel_converter *cv)
{
	struct batch *b = cv->head;

	cv->head = b->next;
	if (!cv->head)
		cv->tail = NULL;
	cv->nbatches--;
	batch_free(b, cv);
	pthread_cond_broadcast(&cv->changed);
}

/*
 * The records of b from its byte taken on that one object holds: up to n,
 * and no further than the next piece whose records begin at a known place,
 * named in origin (with no object_id when a row ran from one object into
 * the next in there).  Returns how many.
 */
static size_t object_records(const struct batch *b, size_t taken, size_t n,
			     struct channel_origin *origin)
{
	size_t k = 0, next;
	bool mixed = false;

	for (size_t i = 0; i < b->npieces; i++)
		if (b->pieces[i].out_start != SIZE_MAX &&
		    b->pieces[i].out_start <= taken)
			k = i;
	for (next = k + 1; next < b->npieces; next++) {
		size_t at = b->pieces[next].out_start;

		if (at == SIZE_MAX) {
			mixed = true;
			continue;
		}
		if (at > taken) {
			if (n > at - taken)
				n = at - taken;
			break;
		}
	}
	if (b->npieces) {
		const struct origin_text *t = b->pieces[k].origin;

		origin->index = t->index;
		origin->bucket = NULL; /* (the name says it) */
		origin->key = t->name;
		origin->object_id =
		    mixed || b->pieces[k].out_start == SIZE_MAX ||
			    __atomic_load_n(&t->joined, __ATOMIC_ACQUIRE)
			? 0
			: t->object_id;
	} else {
		memset(origin, 0, sizeof(*origin));
	}
	return n;
}

int channel_converter_read(struct channel_converter *cv, uint64_t offset,
			   size_t size, struct channel_view *view)
{
	return converter_read(cv, offset, size, view, NULL);
}

/* The reads; with origin, a view holds one object's records (offset is
 * then not checked). */
static int converter_read(struct channel_converter *cv, uint64_t offset,
			  size_t size, struct channel_view *view,
			  struct channel_origin *origin)
{
	int rc = 0;

	view->iov = view->stage_iov;
	pthread_mutex_lock(&cv->lock);
	if (!origin && offset != cv->pos) {
		pthread_mutex_unlock(&cv->lock);
		return ESPIPE;
	}
	while (!cv->failed && view->bytes < size &&
	       view->count < CHANNEL_VIEW_MAX) {
		struct batch *b = cv->head;

		if (!b || b->state != BATCH_DONE) {
			if (!b && cv->fed) {
				if (cv->feed_error) {
					if (cv->feed_why[0])
						util_warn("%s", cv->feed_why);
					cv->failed = true;
				}
				break;
			}
			if (view->bytes)
				break; /* like a pipe: what is here now */
			pthread_cond_wait(&cv->changed, &cv->lock);
			continue;
		}
		if (!b->counted)
			batch_count(cv, b);
		if (b->taken < b->out_len) {
			size_t n = b->out_len - b->taken;

			if (n > size - view->bytes)
				n = size - view->bytes;
			if (origin && view->bytes)
				break; /* (one object's a view) */
			if (origin)
				n = object_records(b, b->taken, n, origin);
			view->stage_iov[view->count].iov_base =
			    b->out->data + b->taken;
			view->stage_iov[view->count].iov_len = n;
			view->chunks[view->nchunks++] = b->out;
			b->out->refs++;
			view->count++;
			view->bytes += n;
			b->taken += n;
			cv->pos += n;
			continue;
		}
		if (b->rc) {
			batch_fail(cv, b);
			break;
		}
		if (origin && view->bytes)
			break; /* (origin names text the batch holds) */
		pop_head(cv);
	}
	if (cv->failed && !view->bytes)
		rc = EIO;
	pthread_mutex_unlock(&cv->lock);
	return rc;
}

void channel_converter_release(struct channel_converter *cv,
			       struct channel_view *view)
{
	if (!view->nchunks)
		return;
	pthread_mutex_lock(&cv->lock);
	for (int i = 0; i < view->nchunks; i++)
		channel_chunk_unref(NULL, view->chunks[i]);
	pthread_mutex_unlock(&cv->lock);
	view->nchunks = 0;
}
