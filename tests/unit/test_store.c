/*
 * test_store: the in-memory store of the unit tests (see test_store.h).
 */
#include "config.h"

#include "tests/unit/test_store.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct test_queued {
	struct test_queued *next;
	enum test_request kind;
	struct test_get get;
	struct test_list list;
	struct test_head head;
};

unsigned char test_store_byte(const char *key, uint64_t offset)
{
	uint64_t h = 1469598103934665603ull;

	for (const char *p = key; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	h ^= offset * 0x9E3779B97F4A7C15ull;
	h ^= h >> 29;
	return (unsigned char)(h ^ (h >> 8) ^ (h >> 16));
}

static void copy_string(char *dst, size_t len, const char *src)
{
	snprintf(dst, len, "%s", src ? src : "");
}

static void fill_get(struct test_get *g, const struct store_get *req,
		     uint64_t len)
{
	memset(g, 0, sizeof(*g));
	copy_string(g->bucket, sizeof(g->bucket), req->bucket);
	copy_string(g->key, sizeof(g->key), req->key);
	copy_string(g->etag, sizeof(g->etag), req->etag);
	g->offset = req->offset;
	g->len = len;
	g->nbuffers = req->nbuffers;
	g->flags = req->flags;
	memcpy(g->buffers, req->buffers, req->nbuffers * sizeof(*req->buffers));
	g->buffer_done = req->buffer_done;
	g->done = req->done;
	g->arg = req->arg;
}

static void fill_list(struct test_list *l, const struct store_list *req)
{
	memset(l, 0, sizeof(*l));
	copy_string(l->bucket, sizeof(l->bucket), req->bucket);
	copy_string(l->prefix, sizeof(l->prefix), req->prefix);
	copy_string(l->token, sizeof(l->token), req->token);
	copy_string(l->start_after, sizeof(l->start_after), req->start_after);
	l->max_keys = req->max_keys;
	l->done = req->done;
	l->arg = req->arg;
}

static void fill_head(struct test_head *h, const struct store_head *req)
{
	memset(h, 0, sizeof(*h));
	copy_string(h->bucket, sizeof(h->bucket), req->bucket);
	copy_string(h->key, sizeof(h->key), req->key);
	h->done = req->done;
	h->arg = req->arg;
}

/* Something a waiter may be waiting for happened (lock held). */
static void changed(struct test_store *ts)
{
	ts->events++;
	pthread_cond_broadcast(&ts->changed);
}

static void enqueue(struct test_store *ts, struct test_queued *q)
{
	pthread_mutex_lock(&ts->lock);
	ts->pending++;
	ts->made[q->kind]++;
	changed(ts);
	if (ts->queue_tail)
		ts->queue_tail->next = q;
	else
		ts->queue_head = q;
	ts->queue_tail = q;
	pthread_cond_signal(&ts->wake);
	pthread_mutex_unlock(&ts->lock);
}

static int fake_get(struct store *st, const struct store_get *req)
{
	struct test_store *ts = (struct test_store *)st;
	struct test_queued *q;
	size_t len = 0;
	int rc = store_get_check(req, &len);

	if (rc)
		return rc;
	if (!ts->serve) {
		pthread_mutex_lock(&ts->lock);
		if (ts->ngets >= TEST_STORE_MAX_RECORDED) {
			pthread_mutex_unlock(&ts->lock);
			return ENOMEM;
		}
		fill_get(&ts->gets[ts->ngets++], req, len);
		changed(ts);
		pthread_mutex_unlock(&ts->lock);
		return 0;
	}
	q = calloc(1, sizeof(*q));
	if (!q)
		return ENOMEM;
	fill_get(&q->get, req, len);
	enqueue(ts, q);
	return 0;
}

static int fake_list(struct store *st, const struct store_list *req)
{
	struct test_store *ts = (struct test_store *)st;
	struct test_queued *q;

	if (!req->bucket || !req->done || req->max_keys < 1 ||
	    req->max_keys > 1000)
		return EINVAL;
	if (!ts->serve) {
		pthread_mutex_lock(&ts->lock);
		if (ts->nlists >= TEST_STORE_MAX_RECORDED) {
			pthread_mutex_unlock(&ts->lock);
			return ENOMEM;
		}
		fill_list(&ts->lists[ts->nlists++], req);
		changed(ts);
		pthread_mutex_unlock(&ts->lock);
		return 0;
	}
	q = calloc(1, sizeof(*q));
	if (!q)
		return ENOMEM;
	q->kind = TEST_LIST;
	fill_list(&q->list, req);
	enqueue(ts, q);
	return 0;
}

static int fake_head(struct store *st, const struct store_head *req)
{
	struct test_store *ts = (struct test_store *)st;
	struct test_queued *q;

	if (!req->bucket || !req->key || !req->done)
		return EINVAL;
	if (!ts->serve) {
		pthread_mutex_lock(&ts->lock);
		if (ts->nheads >= TEST_STORE_MAX_RECORDED) {
			pthread_mutex_unlock(&ts->lock);
			return ENOMEM;
		}
		fill_head(&ts->heads[ts->nheads++], req);
		changed(ts);
		pthread_mutex_unlock(&ts->lock);
		return 0;
	}
	q = calloc(1, sizeof(*q));
	if (!q)
		return ENOMEM;
	q->kind = TEST_HEAD;
	fill_head(&q->head, req);
	enqueue(ts, q);
	return 0;
}

static void fake_get_stats(struct store *st, struct store_stats *out)
{
	struct test_store *ts = (struct test_store *)st;

	pthread_mutex_lock(&ts->lock);
	*out = ts->stats;
	pthread_mutex_unlock(&ts->lock);
}

static void fake_destroy(struct store *st)
{
	test_store_destroy((struct test_store *)st);
}

static const struct store_ops test_ops = {
    .get = fake_get,
    .list = fake_list,
    .head = fake_head,
    .get_stats = fake_get_stats,
    .destroy = fake_destroy,
};

static void error_of(struct store_error *e, int err, long status,
		     const char *code)
{
	memset(e, 0, sizeof(*e));
	e->err = err;
	e->http_status = status;
	copy_string(e->code, sizeof(e->code), code);
	copy_string(e->url, sizeof(e->url), "test://store");
}

/* (the objects are sorted by key: a binary search) */
static const struct test_object *find_object(const struct test_store *ts,
					     const char *key)
{
	unsigned lo = 0, hi = ts->nobjects;

	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;
		int c = strcmp(ts->objects[mid].key, key);

		if (c == 0)
			return &ts->objects[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* Copies an object's bytes into g's buffers, reporting each as it fills. */
static void deliver(struct test_get *g, const struct test_object *o)
{
	uint64_t off = g->offset;

	for (unsigned i = 0; i < g->nbuffers; i++) {
		const struct store_buffer *b = &g->buffers[i];

		for (size_t j = 0; j < b->len; j++, off++)
			b->dest[j] = o && o->data
					 ? (char)o->data[off]
					 : (char)test_store_byte(g->key, off);
		if (g->buffer_done)
			g->buffer_done(g->arg, i);
	}
}

static void serve_get(struct test_store *ts, struct test_get *g)
{
	const struct test_object *o;
	struct store_error e;
	bool fault;

	pthread_mutex_lock(&ts->lock);
	o = find_object(ts, g->key);
	ts->get_count++;
	ts->stats.requests++;
	fault = ts->fail_every && ts->get_count % ts->fail_every == 0;
	pthread_mutex_unlock(&ts->lock);
	if (!o)
		error_of(&e, ENOENT, 404, "NoSuchKey");
	else if (g->etag[0] && o->etag && strcmp(g->etag, o->etag) != 0)
		error_of(&e, ESTALE, 412, "PreconditionFailed");
	else if (g->offset + g->len > o->size)
		error_of(&e, ERANGE, 416, "InvalidRange");
	else if (fault)
		error_of(&e, EIO, 503, "SlowDown");
	else {
		deliver(g, o);
		pthread_mutex_lock(&ts->lock);
		ts->stats.bytes_received += g->len;
		pthread_mutex_unlock(&ts->lock);
		g->done(g->arg, NULL);
		return;
	}
	pthread_mutex_lock(&ts->lock);
	ts->stats.failures++;
	pthread_mutex_unlock(&ts->lock);
	g->done(g->arg, &e);
}

/* Answers h from the objects (err 0), or with an error of errno err. */
static void answer_head(struct test_store *ts, struct test_head *h, int err)
{
	const struct test_object *o;
	struct store_object obj = {.key = h->key};
	struct store_error e;

	pthread_mutex_lock(&ts->lock);
	o = find_object(ts, h->key);
	ts->stats.requests++;
	if (err || !o)
		ts->stats.failures++;
	if (!err && o) {
		obj.etag = o->etag ? strdup(o->etag) : NULL;
		obj.size = o->size;
	}
	pthread_mutex_unlock(&ts->lock);
	h->finished = true;
	if (err) {
		error_of(&e, err, 503, "SlowDown");
		h->done(h->arg, NULL, &e);
	} else if (!o) {
		error_of(&e, ENOENT, 404, ""); /* a HEAD's 404 has no body */
		h->done(h->arg, NULL, &e);
	} else {
		h->done(h->arg, &obj, NULL);
	}
	free(obj.etag);
}

/* One page: the objects under prefix from index token on, or after the key
 * start_after. */
static void serve_list(struct test_store *ts, struct test_list *l)
{
	struct store_list_page page;
	unsigned from = l->token[0] ? (unsigned)strtoul(l->token, NULL, 10) : 0;
	size_t plen = strlen(l->prefix);
	char token[32];

	memset(&page, 0, sizeof(page));
	pthread_mutex_lock(&ts->lock);
	ts->stats.requests++;
	if (!l->token[0] && l->start_after[0]) {
		while (from < ts->nobjects &&
		       strcmp(ts->objects[from].key, l->start_after) <= 0)
			from++;
	}
	page.objects = calloc(l->max_keys, sizeof(*page.objects));
	for (unsigned i = from; page.objects && i < ts->nobjects; i++) {
		const struct test_object *o = &ts->objects[i];

		if (strncmp(o->key, l->prefix, plen) != 0)
			continue;
		if (page.count == l->max_keys) {
			page.truncated = true;
			snprintf(token, sizeof(token), "%u", i);
			page.next_token = strdup(token);
			break;
		}
		page.objects[page.count].key = strdup(o->key);
		page.objects[page.count].etag =
		    o->etag ? strdup(o->etag) : NULL;
		page.objects[page.count].size = o->size;
		page.count++;
	}
	pthread_mutex_unlock(&ts->lock);
	if (!page.objects) {
		struct store_error e;

		error_of(&e, ENOMEM, 0, "");
		l->done(l->arg, NULL, &e);
		return;
	}
	l->done(l->arg, &page, NULL); /* the receiver owns the page now */
}

static void *serve_main(void *arg)
{
	struct test_store *ts = arg;

	pthread_mutex_lock(&ts->lock);
	for (;;) {
		struct test_queued *q = ts->queue_head;

		if (!q) {
			if (ts->stopping)
				break;
			pthread_cond_wait(&ts->wake, &ts->lock);
			continue;
		}
		ts->queue_head = q->next;
		if (!ts->queue_head)
			ts->queue_tail = NULL;
		pthread_mutex_unlock(&ts->lock);
		if (q->kind == TEST_LIST)
			serve_list(ts, &q->list);
		else if (q->kind == TEST_HEAD)
			answer_head(ts, &q->head, 0);
		else
			serve_get(ts, &q->get);
		free(q);
		pthread_mutex_lock(&ts->lock);
		ts->pending--;
		changed(ts);
	}
	pthread_mutex_unlock(&ts->lock);
	return NULL;
}

struct test_store *test_store_create(bool serve, unsigned max_parallel)
{
	struct test_store *ts = calloc(1, sizeof(*ts));
	pthread_condattr_t attr;

	if (!ts)
		return NULL;
	ts->store.ops = &test_ops;
	ts->store.max_parallel = max_parallel ? max_parallel : 1;
	ts->serve = serve;
	pthread_mutex_init(&ts->lock, NULL);
	pthread_cond_init(&ts->wake, NULL);
	/* waits are timed on the monotonic clock */
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&ts->changed, &attr);
	pthread_condattr_destroy(&attr);
	if (serve && pthread_create(&ts->thread, NULL, serve_main, ts) != 0) {
		pthread_cond_destroy(&ts->changed);
		pthread_cond_destroy(&ts->wake);
		pthread_mutex_destroy(&ts->lock);
		free(ts);
		return NULL;
	}
	return ts;
}

/* ---- waiting ---- */

void test_store_notify(struct test_store *ts)
{
	pthread_mutex_lock(&ts->lock);
	changed(ts);
	pthread_mutex_unlock(&ts->lock);
}

int test_store_wait_until(struct test_store *ts, test_store_cond_fn *cond,
			  void *arg, const char *what)
{
	struct timespec until;
	bool late = false;

	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += TEST_STORE_WAIT_SECONDS;
	for (;;) {
		uint64_t seen;

		/* the count first: an event after it wakes the wait below
		 * even if it came before cond looked */
		pthread_mutex_lock(&ts->lock);
		seen = ts->events;
		pthread_mutex_unlock(&ts->lock);
		if (cond(arg))
			return 0;
		if (late)
			break;
		pthread_mutex_lock(&ts->lock);
		while (ts->events == seen && !late)
			late = pthread_cond_timedwait(&ts->changed, &ts->lock,
						      &until) == ETIMEDOUT;
		pthread_mutex_unlock(&ts->lock);
	}
	fprintf(stderr, "test_store: still waiting after %d s for %s\n",
		TEST_STORE_WAIT_SECONDS, what);
	return ETIMEDOUT;
}

static bool store_idle(void *arg)
{
	struct test_store *ts = arg;
	bool idle;

	pthread_mutex_lock(&ts->lock);
	idle = ts->pending == 0;
	pthread_mutex_unlock(&ts->lock);
	return idle;
}

int test_store_wait_idle(struct test_store *ts)
{
	return test_store_wait_until(ts, store_idle, ts,
				     "the store to answer every request");
}

struct made_wait {
	struct test_store *ts;
	enum test_request kind;
	unsigned n;
};

/* Requests of a kind made so far (lock held). */
static unsigned made_count(const struct test_store *ts, enum test_request kind)
{
	if (ts->serve)
		return ts->made[kind];
	if (kind == TEST_GET)
		return ts->ngets;
	return kind == TEST_LIST ? ts->nlists : ts->nheads;
}

static bool enough_made(void *arg)
{
	struct made_wait *m = arg;
	unsigned n;

	pthread_mutex_lock(&m->ts->lock);
	n = made_count(m->ts, m->kind);
	pthread_mutex_unlock(&m->ts->lock);
	return n >= m->n;
}

int test_store_wait_made(struct test_store *ts, enum test_request kind,
			 unsigned n)
{
	static const char *const names[] = {"GET", "LIST", "HEAD"};
	struct made_wait m = {.ts = ts, .kind = kind, .n = n};
	char what[64];
	int rc;

	snprintf(what, sizeof(what), "%u %s requests", n, names[kind]);
	rc = test_store_wait_until(ts, enough_made, &m, what);
	if (rc)
		fprintf(stderr, "test_store: %u made\n", made_count(ts, kind));
	return rc;
}

void test_store_cancel_all(struct test_store *ts)
{
	struct store_error e;

	error_of(&e, ECANCELED, 0, "");
	for (unsigned i = 0; i < ts->ngets; i++)
		if (!ts->gets[i].finished) {
			ts->gets[i].finished = true;
			ts->gets[i].done(ts->gets[i].arg, &e);
		}
	for (unsigned i = 0; i < ts->nlists; i++)
		if (!ts->lists[i].finished) {
			ts->lists[i].finished = true;
			ts->lists[i].done(ts->lists[i].arg, NULL, &e);
		}
	for (unsigned i = 0; i < ts->nheads; i++)
		if (!ts->heads[i].finished) {
			ts->heads[i].finished = true;
			ts->heads[i].done(ts->heads[i].arg, NULL, &e);
		}
	ts->ngets = 0;
	ts->nlists = 0;
	ts->nheads = 0;
}

void test_store_destroy(struct test_store *ts)
{
	if (!ts)
		return;
	if (ts->serve) {
		/* the thread answers what is queued, then stops */
		pthread_mutex_lock(&ts->lock);
		ts->stopping = true;
		pthread_cond_signal(&ts->wake);
		pthread_mutex_unlock(&ts->lock);
		pthread_join(ts->thread, NULL);
	} else {
		test_store_cancel_all(ts);
	}
	for (unsigned i = 0; i < ts->nobjects; i++) {
		free(ts->objects[i].key);
		free(ts->objects[i].etag);
		free(ts->objects[i].data);
	}
	free(ts->objects);
	pthread_cond_destroy(&ts->changed);
	pthread_cond_destroy(&ts->wake);
	pthread_mutex_destroy(&ts->lock);
	free(ts);
}

static int object_cmp(const void *a, const void *b)
{
	return strcmp(((const struct test_object *)a)->key,
		      ((const struct test_object *)b)->key);
}

void test_store_put(struct test_store *ts, const char *key, const char *etag,
		    const void *data, uint64_t size)
{
	struct test_object *o;
	struct test_object *grown;

	pthread_mutex_lock(&ts->lock);
	o = (struct test_object *)find_object(ts, key);
	if (!o) {
		grown = realloc(ts->objects,
				(ts->nobjects + 1) * sizeof(*ts->objects));
		if (!grown)
			abort();
		ts->objects = grown;
		o = &ts->objects[ts->nobjects++];
		memset(o, 0, sizeof(*o));
		o->key = strdup(key);
	}
	free(o->etag);
	free(o->data);
	o->etag = etag ? strdup(etag) : NULL;
	o->data = NULL;
	if (data) {
		o->data = malloc(size ? size : 1);
		if (!o->data)
			abort();
		memcpy(o->data, data, size);
	}
	o->size = size;
	/* keys put in order (many tests) need no sort */
	if (ts->nobjects > 1 &&
	    strcmp(ts->objects[ts->nobjects - 2].key, o->key) > 0)
		qsort(ts->objects, ts->nobjects, sizeof(*ts->objects),
		      object_cmp);
	pthread_mutex_unlock(&ts->lock);
}

void test_store_finish_get(struct test_store *ts, unsigned i, int err)
{
	struct test_get *g = &ts->gets[i];
	struct store_error e;

	if (g->finished)
		abort();
	g->finished = true;
	if (err) {
		error_of(&e, err, 503, "SlowDown");
		g->done(g->arg, &e);
		return;
	}
	deliver(g, NULL);
	g->done(g->arg, NULL);
}

void test_store_finish_head(struct test_store *ts, unsigned i, int err)
{
	if (i >= ts->nheads || ts->heads[i].finished)
		abort();
	answer_head(ts, &ts->heads[i], err);
}
