/*
 * test_reader: the cache end to end over a store that answers by itself.
 *
 * A serving test store (tests/unit/test_store.h) holds the objects and
 * answers LISTs and GETs from its own thread, as the S3 engine does; the
 * streams and readers run exactly as under a mount.  These tests check the
 * bytes a reader gets against the objects, with budgets far smaller than
 * the data, listings of many pages, several readers at once, seeks, and
 * failures (a store error, an object changed since it was listed); plan
 * streams of object ranges and literal bytes fed at once or on demand,
 * framed listings, readers of a range, blocks shared by streams that name
 * the same object versions (counted in the store's bytes), and HEADs.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cache/cache.h"
#include "tests/unit/test_store.h"

#define KIB 1024ull
#define MIB (1024ull * 1024)

/* The objects of one test, in key order, and where each starts. */
struct dataset {
	unsigned count;
	char keys[64][32];
	uint64_t sizes[64];
	uint64_t starts[64];
	uint64_t total;
};

/* count objects under "data/" of pseudo-random sizes up to max (some of
 * them empty, which a stream skips), plus one outside the prefix. */
static void make_dataset(struct test_store *ts, struct dataset *d,
			 unsigned count, uint64_t max)
{
	uint64_t rng = 0x9E3779B97F4A7C15ull;

	memset(d, 0, sizeof(*d));
	assert_true(count <= 64);
	d->count = count;
	for (unsigned i = 0; i < count; i++) {
		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		snprintf(d->keys[i], sizeof(d->keys[i]), "data/%03u", i);
		d->sizes[i] = i % 9 == 4 ? 0 : 1 + (rng >> 33) % max;
		d->starts[i] = d->total;
		d->total += d->sizes[i];
		test_store_put(ts, d->keys[i], "\"v1\"", NULL, d->sizes[i]);
	}
	test_store_put(ts, "other/x", "\"v1\"", NULL, 1000);
}

/* The byte of the channel at stream offset off. */
static unsigned char expected(const struct dataset *d, uint64_t off)
{
	unsigned i = 0;

	while (i + 1 < d->count &&
	       (d->sizes[i] == 0 || off >= d->starts[i] + d->sizes[i]))
		i++;
	return test_store_byte(d->keys[i], off - d->starts[i]);
}

static struct cache *new_cache(struct test_store *ts, uint64_t budget,
			       uint64_t block_size, unsigned page_keys)
{
	struct cache_conf conf;
	struct cache *c;

	cache_conf_init(&conf);
	conf.budget_bytes = budget;
	conf.block_size = block_size;
	conf.list_page_keys = page_keys;
	conf.first_page_keys = page_keys / 2 ? page_keys / 2 : 1;
	c = cache_create(&conf, &ts->store);
	assert_non_null(c);
	return c;
}

static struct cache_stream *start_stream(struct cache *c, const char *prefix)
{
	struct cache_stream *s = cache_stream_create(c, "bucket", prefix);
	struct store_error err;

	assert_non_null(s);
	assert_int_equal(cache_stream_start(s, &err), 0);
	return s;
}

/* A serving store with a dataset under "data/", a cache over it and a
 * started stream of the dataset. */
struct fixture {
	struct test_store *ts;
	struct dataset d;
	struct cache *c;
	struct cache_stream *s;
};

static void fixture_start(struct fixture *f, unsigned parallel, unsigned count,
			  uint64_t max_size, uint64_t budget,
			  uint64_t block_size, unsigned page_keys)
{
	f->ts = test_store_create(true, parallel);
	assert_non_null(f->ts);
	make_dataset(f->ts, &f->d, count, max_size);
	f->c = new_cache(f->ts, budget, block_size, page_keys);
	f->s = start_stream(f->c, "data/");
}

/* The store first: what it still answers lands in the cache. */
static void fixture_stop(struct fixture *f)
{
	test_store_destroy(f->ts);
	cache_stream_destroy(f->s);
	cache_destroy(f->c);
}

static struct cache_stats stats_of(const struct fixture *f)
{
	struct cache_stats st;

	cache_get_stats(f->c, &st);
	return st;
}

/* Reads from offset to the end in reads of size bytes, checking every
 * byte; returns the first error, or 0 with *got the bytes read. */
static int read_all(struct cache *c, struct cache_stream *s,
		    const struct dataset *d, uint64_t offset, size_t size,
		    uint64_t *got)
{
	struct cache_reader *r = cache_reader_create(s);
	struct cache_view *v = calloc(1, sizeof(*v));
	uint64_t pos = offset;
	int rc = 0;

	assert_non_null(r);
	assert_non_null(v);
	for (;;) {
		rc = cache_reader_read(r, pos, size, v);
		if (rc || v->bytes == 0) {
			cache_view_release(c, v);
			break;
		}
		for (int i = 0; i < v->count; i++) {
			const unsigned char *p = v->iov[i].iov_base;

			for (size_t k = 0; k < v->iov[i].iov_len; k++, pos++)
				if (p[k] != expected(d, pos))
					fail_msg("byte %llu differs",
						 (unsigned long long)pos);
		}
		cache_view_release(c, v);
	}
	*got = pos - offset;
	free(v);
	cache_reader_destroy(r);
	return rc;
}

/* Many objects over many listing pages, a budget of a few blocks: every
 * byte arrives, in order, and memory stays inside the budget. */
static void test_whole_stream_small_budget(void **state)
{
	struct fixture f;
	uint64_t size = 0, got = 0;

	fixture_start(&f, 8, 60, 300 * KIB, 512 * KIB, 64 * KIB, 7);
	assert_int_equal(read_all(f.c, f.s, &f.d, 0, 128 * KIB, &got), 0);
	assert_int_equal(got, f.d.total);
	assert_true(cache_stream_size(f.s, &size));
	assert_int_equal(size, f.d.total);
	assert_true(stats_of(&f).peak_bytes <= 512 * KIB);
	assert_true(stats_of(&f).prefetched > 0);
	assert_int_equal(stats_of(&f).fetch_errors, 0);
	fixture_stop(&f);
}

struct reader_job {
	struct fixture *f;
	size_t size;
	uint64_t got;
	int rc;
};

static void *reader_job_run(void *arg)
{
	struct reader_job *j = arg;

	j->rc = read_all(j->f->c, j->f->s, &j->f->d, 0, j->size, &j->got);
	return NULL;
}

/* Three readers of one stream at once, with different read sizes: each
 * gets every byte, sharing blocks within one budget. */
static void test_concurrent_readers(void **state)
{
	struct reader_job jobs[3];
	pthread_t threads[3];
	struct fixture f;

	fixture_start(&f, 16, 40, 600 * KIB, 2 * MIB, 128 * KIB, 10);
	for (unsigned i = 0; i < 3; i++) {
		jobs[i] = (struct reader_job){
		    .f = &f, .size = (size_t)(4 * KIB) << i * 3};
		assert_int_equal(
		    pthread_create(&threads[i], NULL, reader_job_run, &jobs[i]),
		    0);
	}
	for (unsigned i = 0; i < 3; i++) {
		assert_int_equal(pthread_join(threads[i], NULL), 0);
		assert_int_equal(jobs[i].rc, 0);
		assert_int_equal(jobs[i].got, f.d.total);
	}
	assert_true(stats_of(&f).peak_bytes <= 2 * MIB);
	fixture_stop(&f);
}

/* A read at another offset restarts the stream there (an emulated seek),
 * backwards or forwards, across the listing's pages. */
static void test_seek_restarts(void **state)
{
	struct fixture f;
	uint64_t got = 0, mid;

	fixture_start(&f, 4, 30, 200 * KIB, 1 * MIB, 64 * KIB, 4);
	mid = f.d.total / 3 + 17;
	assert_int_equal(read_all(f.c, f.s, &f.d, f.d.total - 1, 4096, &got),
			 0);
	assert_int_equal(got, 1);
	assert_int_equal(read_all(f.c, f.s, &f.d, mid, 64 * KIB, &got), 0);
	assert_int_equal(got, f.d.total - mid);
	assert_int_equal(stats_of(&f).seeks, 2);
	fixture_stop(&f);
}

/* GETs still in flight read it on the store's thread. */
static void set_fail_every(struct test_store *ts, unsigned n)
{
	pthread_mutex_lock(&ts->lock);
	ts->fail_every = n;
	pthread_mutex_unlock(&ts->lock);
}

/* A store whose GETs fail: the read ends in EIO, never in wrong bytes.  A
 * failed prefetch is fetched again when a read needs it, so with some GETs
 * failing a read may still complete, byte-exact. */
static void test_store_failure_is_eio(void **state)
{
	struct fixture f;
	uint64_t got = 0;
	int rc;

	fixture_start(&f, 4, 20, 300 * KIB, 1 * MIB, 64 * KIB, 100);
	set_fail_every(f.ts, 1); /* every GET */
	assert_int_equal(read_all(f.c, f.s, &f.d, 0, 128 * KIB, &got), EIO);
	assert_int_equal(got, 0);
	set_fail_every(f.ts, 4); /* some: each byte read was checked */
	rc = read_all(f.c, f.s, &f.d, 0, 128 * KIB, &got);
	assert_true(rc == 0 || rc == EIO);
	assert_true(rc ? got < f.d.total : got == f.d.total);
	assert_true(stats_of(&f).fetch_errors > 0);
	fixture_stop(&f);
}

/* An object replaced after it was listed is not served: the store sees
 * the listed ETag and refuses, and the reader gets EIO. */
static void test_changed_object_is_eio(void **state)
{
	struct fixture f;
	uint64_t got = 0;

	fixture_start(&f, 4, 3, 100 * KIB, 1 * MIB, 64 * KIB, 100);
	test_store_put(f.ts, f.d.keys[1], "\"v2\"", NULL, f.d.sizes[1]);
	assert_int_equal(read_all(f.c, f.s, &f.d, 0, 4096, &got), EIO);
	assert_true(got <= f.d.sizes[0]);
	fixture_stop(&f);
}

/* The blocking list any store gets: a page, its token, the next page. */
static void test_list_sync(void **state)
{
	struct test_store *ts = test_store_create(true, 1);
	struct store_list_page page;
	struct store_error err;
	struct dataset d;

	assert_non_null(ts);
	make_dataset(ts, &d, 5, 10);
	assert_int_equal(store_list_sync(&ts->store, "bucket", "data/", NULL, 3,
					 &page, &err),
			 0);
	assert_int_equal(page.count, 3);
	assert_true(page.truncated);
	assert_non_null(page.next_token);
	assert_string_equal(page.objects[0].key, "data/000");
	assert_string_equal(page.objects[2].key, "data/002");
	{
		char token[32];

		snprintf(token, sizeof(token), "%s", page.next_token);
		store_list_page_clear(&page);
		assert_int_equal(store_list_sync(&ts->store, "bucket", "data/",
						 token, 3, &page, &err),
				 0);
	}
	assert_int_equal(page.count, 2);
	assert_false(page.truncated);
	assert_string_equal(page.objects[1].key, "data/004");
	store_list_page_clear(&page);
	/* a request the store refuses comes back as the error */
	assert_int_equal(store_list_sync(&ts->store, "bucket", "data/", NULL, 0,
					 &page, &err),
			 EINVAL);
	assert_int_equal(err.err, EINVAL);
	test_store_destroy(ts);
}

/* ---- plan streams, read back byte for byte ---- */

/* One piece of a plan: a range of an object (key set) or literal bytes. */
struct piece {
	const char *key;
	uint64_t offset, len;
	const char *lit;
	size_t lit_len;
};

#define OBJ_A_SIZE (200000ull + 7)
#define OBJ_B_SIZE 150001ull
#define OBJ_C_SIZE 70000ull

static void put_plan_objects(struct test_store *ts)
{
	test_store_put(ts, "o/a", "\"a1\"", NULL, OBJ_A_SIZE);
	test_store_put(ts, "o/b", "\"b1\"", NULL, OBJ_B_SIZE);
	test_store_put(ts, "o/c", "\"c1\"", NULL, OBJ_C_SIZE);
}

static uint64_t object_size(const char *key)
{
	if (strcmp(key, "o/a") == 0)
		return OBJ_A_SIZE;
	if (strcmp(key, "o/b") == 0)
		return OBJ_B_SIZE;
	return OBJ_C_SIZE;
}

static const char *object_etag(const char *key)
{
	if (strcmp(key, "o/a") == 0)
		return "\"a1\"";
	if (strcmp(key, "o/b") == 0)
		return "\"b1\"";
	return "\"c1\"";
}

/*
 * Literal bytes; two consecutive ranges of one object split where no
 * block size below ends; a range starting and ending mid-object; one
 * across a block boundary; an object again (its blocks shared).
 */
static const struct piece plan_pieces[] = {
    {.lit = "HEADER\n", .lit_len = 7},
    {.key = "o/a", .offset = 0, .len = OBJ_A_SIZE},
    {.lit = "|", .lit_len = 1},
    {.key = "o/b", .offset = 0, .len = 98304 + 17},
    {.key = "o/b", .offset = 98304 + 17, .len = OBJ_B_SIZE - 98304 - 17},
    {.key = "o/c", .offset = 33333, .len = 20000},
    {.lit = "\0\1\2", .lit_len = 3},
    {.key = "o/a", .offset = 131072 - 5, .len = 10},
    {.key = "o/a", .offset = 0, .len = OBJ_A_SIZE},
    {.key = "o/c", .offset = 0, .len = 1},
};
#define PLAN_PIECES (sizeof(plan_pieces) / sizeof(plan_pieces[0]))

static uint64_t piece_len(const struct piece *p)
{
	return p->key ? p->len : p->lit_len;
}

/* The bytes of pieces[0..n) in a fresh buffer; *len their count. */
static unsigned char *plan_bytes(const struct piece *pieces, size_t n,
				 uint64_t *len)
{
	uint64_t total = 0, at = 0;
	unsigned char *buf;

	for (size_t i = 0; i < n; i++)
		total += piece_len(&pieces[i]);
	buf = malloc(total ? total : 1);
	assert_non_null(buf);
	for (size_t i = 0; i < n; i++) {
		const struct piece *p = &pieces[i];

		if (!p->key) {
			memcpy(buf + at, p->lit, p->lit_len);
			at += p->lit_len;
			continue;
		}
		for (uint64_t k = 0; k < p->len; k++)
			buf[at++] = test_store_byte(p->key, p->offset + k);
	}
	*len = total;
	return buf;
}

/* Adds piece p to s. */
static void add_piece(struct cache *c, struct cache_stream *s,
		      const struct piece *p)
{
	struct cache_object *o;

	if (!p->key) {
		assert_int_equal(cache_stream_add_bytes(s, p->lit, p->lit_len),
				 0);
		return;
	}
	o = cache_object_get(c, "bucket", p->key, object_etag(p->key),
			     object_size(p->key));
	assert_non_null(o);
	assert_int_equal(cache_stream_add_object(s, o, p->offset, p->len), 0);
	cache_object_put(c, o); /* the segment holds its own */
}

static struct cache_stream *plan_stream(struct cache *c,
					const struct piece *pieces, size_t n,
					bool end, int err)
{
	struct cache_stream *s = cache_stream_create_plan(c, NULL, NULL);

	assert_non_null(s);
	for (size_t i = 0; i < n; i++)
		add_piece(c, s, &pieces[i]);
	if (end)
		cache_stream_end(s, err);
	return s;
}

/* Checks the view of a read of size bytes at pos against
 * want[0..want_len) (want[0] is the byte at offset); returns the position
 * after it. */
static uint64_t check_view(const struct cache_view *v, uint64_t offset,
			   uint64_t pos, size_t size, const unsigned char *want,
			   uint64_t want_len)
{
	assert_true(v->bytes <= size);
	for (int i = 0; i < v->count; i++) {
		const unsigned char *p = v->iov[i].iov_base;
		uint64_t at = pos - offset;

		if (at + v->iov[i].iov_len > want_len)
			fail_msg("%zu bytes at %llu, past the %llu expected",
				 v->iov[i].iov_len, (unsigned long long)pos,
				 (unsigned long long)want_len);
		if (memcmp(p, want + at, v->iov[i].iov_len) != 0)
			fail_msg("bytes at %llu differ (read size %zu)",
				 (unsigned long long)pos, size);
		pos += v->iov[i].iov_len;
	}
	return pos;
}

/* Reads r from offset on in reads of size bytes until no bytes come or a
 * read fails, checking them against want[0..want_len) (want[0] is the
 * byte at offset); returns the read's error, *got the bytes read. */
static int read_expect(struct cache *c, struct cache_reader *r, uint64_t offset,
		       size_t size, const unsigned char *want,
		       uint64_t want_len, uint64_t *got)
{
	struct cache_view *v = calloc(1, sizeof(*v));
	uint64_t pos = offset;
	int rc;

	assert_non_null(v);
	for (;;) {
		rc = cache_reader_read(r, pos, size, v);
		if (rc || v->bytes == 0)
			break;
		pos = check_view(v, offset, pos, size, want, want_len);
		cache_view_release(c, v);
	}
	cache_view_release(c, v);
	free(v);
	*got = pos - offset;
	return rc;
}

static uint64_t received(struct test_store *ts)
{
	struct store_stats st;

	store_get_stats(&ts->store, &st);
	return st.bytes_received;
}

/* A plan of ranges and literal bytes, read byte-exact with read sizes
 * from one byte up and block sizes that the pieces do not align with,
 * under a budget of a few blocks. */
static void test_plan_exact(void **state)
{
	static const uint64_t block_sizes[] = {64 * KIB, 96 * KIB, 256 * KIB};
	static const size_t read_sizes[] = {7, 4096, 65539, MIB};
	uint64_t total, got, size = 0;
	unsigned char *want = plan_bytes(plan_pieces, PLAN_PIECES, &total);

	for (size_t b = 0; b < 3; b++) {
		for (size_t i = 0; i < 5; i++) {
			/* one-byte reads once: a few hundred thousand */
			size_t rs = i == 4 ? 1 : read_sizes[i];
			struct test_store *ts;
			struct cache *c;
			struct cache_stream *s;
			struct cache_reader *r;
			struct cache_stats st;

			if (i == 4 && b != 0)
				continue;
			ts = test_store_create(true, 4);
			assert_non_null(ts);
			put_plan_objects(ts);
			c = new_cache(ts, 4 * block_sizes[b], block_sizes[b],
				      10);
			s = plan_stream(c, plan_pieces, PLAN_PIECES, true, 0);
			assert_true(cache_stream_size(s, &size));
			assert_int_equal(size, total);
			r = cache_reader_create(s);
			assert_non_null(r);
			assert_int_equal(
			    read_expect(c, r, 0, rs, want, total, &got), 0);
			assert_int_equal(got, total);
			assert_int_equal(cache_reader_position(r), total);
			/* a seek back into the split object, then on to the
			 * end */
			assert_int_equal(
			    read_expect(c, r, 7 + OBJ_A_SIZE + 5, rs,
					want + 7 + OBJ_A_SIZE + 5,
					total - 7 - OBJ_A_SIZE - 5, &got),
			    0);
			assert_int_equal(got, total - 7 - OBJ_A_SIZE - 5);
			cache_get_stats(c, &st);
			assert_int_equal(st.fetch_errors, 0);
			assert_true(st.peak_bytes <= 4 * block_sizes[b]);
			cache_reader_destroy(r);
			test_store_destroy(ts);
			cache_stream_destroy(s);
			cache_destroy(c);
		}
	}
	free(want);
}

/* cache_stream_end(EIO): a reader gets every byte before the end, then
 * EIO (at the end, and past it); cache_stream_end(0): end of file, and
 * the size known. */
static void test_plan_end(void **state)
{
	static const size_t read_sizes[] = {1, 1000, MIB};
	uint64_t total, got, size = 1;
	unsigned char *want = plan_bytes(plan_pieces, 4, &total);
	struct test_store *ts = test_store_create(true, 4);
	struct cache *c;
	struct cache_stream *s;
	struct cache_reader *r;
	struct cache_view v;

	assert_non_null(ts);
	put_plan_objects(ts);
	c = new_cache(ts, 1 * MIB, 64 * KIB, 10);
	for (size_t i = 0; i < 3; i++) {
		s = plan_stream(c, plan_pieces, 4, true, EIO);
		r = cache_reader_create(s);
		assert_non_null(r);
		assert_int_equal(
		    read_expect(c, r, 0, read_sizes[i], want, total, &got),
		    EIO);
		assert_int_equal(got, total);
		assert_int_equal(cache_reader_read(r, total, 10, &v), EIO);
		assert_int_equal(v.bytes, 0);
		cache_view_release(c, &v);
		assert_int_equal(cache_reader_read(r, total + 100, 10, &v),
				 EIO);
		cache_view_release(c, &v);
		/* what comes before the end is still there */
		assert_int_equal(cache_reader_read(r, total - 3, 10, &v), 0);
		assert_int_equal(v.bytes, 3);
		cache_view_release(c, &v);
		cache_reader_destroy(r);
		cache_stream_destroy(s);
	}
	/* not ended: no size; ended with 0: end of file */
	s = plan_stream(c, plan_pieces, 4, false, 0);
	assert_false(cache_stream_size(s, &size));
	cache_stream_end(s, 0);
	assert_true(cache_stream_size(s, &size));
	assert_int_equal(size, total);
	r = cache_reader_create(s);
	assert_non_null(r);
	assert_int_equal(read_expect(c, r, 0, 4096, want, total, &got), 0);
	assert_int_equal(got, total);
	assert_int_equal(cache_reader_read(r, total + 100, 10, &v), 0);
	assert_int_equal(v.bytes, 0);
	cache_reader_destroy(r);
	cache_stream_destroy(s);
	/* an empty plan ended with an error: the first read fails */
	s = plan_stream(c, plan_pieces, 0, true, EIO);
	r = cache_reader_create(s);
	assert_non_null(r);
	assert_int_equal(cache_reader_read(r, 0, 10, &v), EIO);
	assert_int_equal(v.bytes, 0);
	cache_view_release(c, &v);
	cache_reader_destroy(r);
	cache_stream_destroy(s);
	test_store_destroy(ts);
	cache_destroy(c);
	free(want);
}

/*
 * A plan's owner adding pieces as readers come near the end: from the
 * refill hook itself, or from a thread of its own that the hook wakes.  The
 * thread feeds only a reader that waits: one whose read began at the end
 * of what was added.  Such a read asks (the hook, called without the
 * cache's lock) and then waits on the stream, or finds the pieces the
 * thread added meanwhile.
 */
struct feeder {
	struct cache *c;
	struct cache_stream *s;
	const struct piece *pieces;
	size_t n, next;
	uint64_t added; /* bytes of the pieces added (f->lock, threaded) */
	unsigned wants;
	bool threaded;
	/* threaded: the hook only signals */
	pthread_mutex_t lock;
	pthread_cond_t wake;
	uint64_t read_at; /* where the reader's current read began */
	bool wanted, stop;
	unsigned woken; /* feeds of a waiting reader by the thread */
};

/* Adds the next two pieces, or ends (from the refill hook, or the feeder
 * thread with f->lock held). */
static void feed(struct feeder *f)
{
	for (int k = 0; k < 2 && f->next < f->n; k++) {
		const struct piece *p = &f->pieces[f->next++];

		add_piece(f->c, f->s, p);
		f->added += piece_len(p);
	}
	if (f->next == f->n)
		cache_stream_end(f->s, 0);
}

static void feeder_want(void *arg, struct cache_stream *s)
{
	struct feeder *f = arg;

	(void)s;
	f->wants++;
	if (!f->threaded) {
		feed(f);
		return;
	}
	pthread_mutex_lock(&f->lock);
	if (f->read_at == f->added) {
		f->wanted = true;
		pthread_cond_signal(&f->wake);
	}
	pthread_mutex_unlock(&f->lock);
}

static void *feeder_run(void *arg)
{
	struct feeder *f = arg;

	for (;;) {
		pthread_mutex_lock(&f->lock);
		while (!f->wanted && !f->stop)
			pthread_cond_wait(&f->wake, &f->lock);
		if (f->stop) {
			pthread_mutex_unlock(&f->lock);
			return NULL;
		}
		f->wanted = false;
		f->woken++;
		feed(f); /* (f->lock held: f->added) */
		pthread_mutex_unlock(&f->lock);
	}
}

/* Reads f's stream whole with r, checking it against want, telling the
 * feeder where each read begins; returns the bytes read. */
static uint64_t read_fed(struct feeder *f, struct cache_reader *r,
			 const unsigned char *want, uint64_t total)
{
	struct cache_view *v = calloc(1, sizeof(*v));
	uint64_t pos = 0;

	assert_non_null(v);
	for (;;) {
		pthread_mutex_lock(&f->lock);
		f->read_at = pos;
		pthread_mutex_unlock(&f->lock);
		assert_int_equal(cache_reader_read(r, pos, 5000, v), 0);
		if (v->bytes == 0)
			break;
		pos = check_view(v, 0, pos, 5000, want, total);
		cache_view_release(f->c, v);
	}
	cache_view_release(f->c, v);
	free(v);
	return pos;
}

static void test_plan_fed_by_want(void **state)
{
	uint64_t total, size = 0;
	unsigned char *want = plan_bytes(plan_pieces, PLAN_PIECES, &total);

	for (int threaded = 0; threaded < 2; threaded++) {
		struct test_store *ts = test_store_create(true, 4);
		struct feeder f = {.pieces = plan_pieces,
				   .n = PLAN_PIECES,
				   .threaded = threaded};
		struct cache_reader *r;
		pthread_t t;

		assert_non_null(ts);
		put_plan_objects(ts);
		/* pages of 2 keys: the owner is asked one segment ahead */
		f.c = new_cache(ts, 1 * MIB, 64 * KIB, 2);
		pthread_mutex_init(&f.lock, NULL);
		pthread_cond_init(&f.wake, NULL);
		f.s = cache_stream_create_plan(f.c, feeder_want, &f);
		assert_non_null(f.s);
		add_piece(f.c, f.s, &plan_pieces[0]);
		f.next = 1;
		f.added = piece_len(&plan_pieces[0]);
		if (threaded)
			assert_int_equal(
			    pthread_create(&t, NULL, feeder_run, &f), 0);
		r = cache_reader_create(f.s);
		assert_non_null(r);
		assert_int_equal(read_fed(&f, r, want, total), total);
		assert_true(cache_stream_size(f.s, &size));
		assert_int_equal(size, total);
		assert_true(f.wants >= PLAN_PIECES / 2);
		if (threaded) {
			pthread_mutex_lock(&f.lock);
			f.stop = true;
			pthread_cond_signal(&f.wake);
			pthread_mutex_unlock(&f.lock);
			assert_int_equal(pthread_join(t, NULL), 0);
			/* every piece after the first came that way */
			assert_int_equal(f.woken, PLAN_PIECES / 2);
		}
		cache_reader_destroy(r);
		test_store_destroy(ts);
		cache_stream_destroy(f.s);
		cache_destroy(f.c);
		pthread_cond_destroy(&f.wake);
		pthread_mutex_destroy(&f.lock);
	}
	free(want);
}

/*
 * A reader of [offset, end) of a plan: exactly those bytes, then none,
 * and GETs for no block past the one holding end - 1 (the store's byte
 * count, with a fresh cache each time).
 */
static void test_reader_at_exact(void **state)
{
	const uint64_t bs = 64 * KIB;
	const uint64_t a_start = 7, c_start = 7 + OBJ_A_SIZE + 1 + OBJ_B_SIZE;
	const struct {
		uint64_t offset, end, window;
		uint64_t fetched; /* bytes the store sends */
	} cases[] = {
	    /* the whole of o/a: its bytes exactly */
	    {a_start, a_start + OBJ_A_SIZE, 0, OBJ_A_SIZE},
	    /* o/c's range [33333, 53333): its block 0 only */
	    {c_start, c_start + 20000, 0, bs},
	    /* o/a's first block and one byte of its second, in a window
	     * of one block */
	    {a_start, a_start + bs + 1, bs, 2 * bs},
	    /* from the header into o/a, 100 bytes */
	    {2, a_start + 95, 0, bs},
	    /* nothing */
	    {a_start + 10, a_start + 10, 0, 0},
	};
	uint64_t total, got;
	unsigned char *want = plan_bytes(plan_pieces, PLAN_PIECES, &total);

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct test_store *ts = test_store_create(true, 4);
		struct cache *c;
		struct cache_stream *s;
		struct cache_reader *r;
		struct cache_view v;
		uint64_t len = cases[i].end - cases[i].offset;

		assert_non_null(ts);
		put_plan_objects(ts);
		c = new_cache(ts, 2 * MIB, bs, 10);
		s = plan_stream(c, plan_pieces, PLAN_PIECES, true, 0);
		r = cache_reader_create_at(s, cases[i].offset, cases[i].end,
					   cases[i].window);
		assert_non_null(r);
		assert_int_equal(cache_reader_position(r), cases[i].offset);
		assert_int_equal(read_expect(c, r, cases[i].offset, 4097,
					     want + cases[i].offset, len, &got),
				 0);
		assert_int_equal(got, len);
		assert_int_equal(cache_reader_position(r), cases[i].end);
		assert_int_equal(cache_reader_read(r, cases[i].end, 4096, &v),
				 0);
		assert_int_equal(v.bytes, 0);
		cache_reader_destroy(r);
		/* the reader made every GET it will make: once the store has
		 * answered them all, a GET past the end has been counted */
		assert_int_equal(test_store_wait_idle(ts), 0);
		if (received(ts) != cases[i].fetched)
			print_error("case %zu: %llu bytes fetched\n", i,
				    (unsigned long long)received(ts));
		assert_int_equal(received(ts), cases[i].fetched);
		test_store_destroy(ts);
		cache_stream_destroy(s);
		cache_destroy(c);
	}
	free(want);
}

/* Marks (empty segments) anywhere in a plan: at its start, in a row,
 * between the halves of a split object, at its end; reads pass over them
 * and return the same bytes as without. */
static void test_plan_marks_read(void **state)
{
	static const size_t read_sizes[] = {1, 100, 4096, MIB};
	uint64_t total, got, size = 0;
	unsigned char *want = plan_bytes(plan_pieces, PLAN_PIECES, &total);
	struct test_store *ts = test_store_create(true, 4);
	struct cache *c;

	assert_non_null(ts);
	put_plan_objects(ts);
	c = new_cache(ts, 1 * MIB, 64 * KIB, 10);
	for (size_t i = 0; i < 4; i++) {
		struct cache_stream *s =
		    cache_stream_create_plan(c, NULL, NULL);
		struct cache_reader *r;

		assert_non_null(s);
		assert_int_equal(cache_stream_add_mark(s), 0);
		for (size_t k = 0; k < PLAN_PIECES; k++) {
			add_piece(c, s, &plan_pieces[k]);
			for (size_t m = 0; m < k % 3; m++)
				assert_int_equal(cache_stream_add_mark(s), 0);
		}
		assert_int_equal(cache_stream_add_mark(s), 0);
		cache_stream_end(s, 0);
		assert_true(cache_stream_size(s, &size));
		assert_int_equal(size, total);
		r = cache_reader_create(s);
		assert_non_null(r);
		assert_int_equal(
		    read_expect(c, r, 0, read_sizes[i], want, total, &got), 0);
		assert_int_equal(got, total);
		/* a seek to where marks are */
		assert_int_equal(read_expect(c, r, 7 + OBJ_A_SIZE, 333,
					     want + 7 + OBJ_A_SIZE,
					     total - 7 - OBJ_A_SIZE, &got),
				 0);
		assert_int_equal(got, total - 7 - OBJ_A_SIZE);
		cache_reader_destroy(r);
		cache_stream_destroy(s);
	}
	/* a plan of marks only is empty */
	{
		struct cache_stream *s =
		    cache_stream_create_plan(c, NULL, NULL);
		struct cache_reader *r;
		struct cache_view v;

		assert_non_null(s);
		assert_int_equal(cache_stream_add_mark(s), 0);
		assert_int_equal(cache_stream_add_mark(s), 0);
		cache_stream_end(s, 0);
		r = cache_reader_create(s);
		assert_non_null(r);
		assert_int_equal(cache_reader_read(r, 0, 10, &v), 0);
		assert_int_equal(v.bytes, 0);
		cache_reader_destroy(r);
		cache_stream_destroy(s);
	}
	test_store_destroy(ts);
	cache_destroy(c);
	free(want);
}

/* ---- on_listed hooks: listed objects as several segments ---- */

/* A 3-byte header before each object: '<', its size mod 256, '>'. */
static int frame_header(void *arg, struct cache_stream *s,
			struct cache_object *obj)
{
	unsigned char hdr[3] = {'<', (unsigned char)cache_object_size(obj),
				'>'};
	unsigned *calls = arg;
	int rc;

	(*calls)++;
	rc = cache_stream_add_bytes(s, hdr, 3);
	return rc ? rc
		  : cache_stream_add_object(s, obj, 0, cache_object_size(obj));
}

/* The framed stream's bytes: each non-empty object of d after its header. */
static unsigned char *framed_bytes(const struct dataset *d, uint64_t *len)
{
	uint64_t total = 0, at = 0;
	unsigned char *buf;

	for (unsigned i = 0; i < d->count; i++)
		if (d->sizes[i])
			total += 3 + d->sizes[i];
	buf = malloc(total);
	assert_non_null(buf);
	for (unsigned i = 0; i < d->count; i++) {
		if (!d->sizes[i])
			continue;
		buf[at++] = '<';
		buf[at++] = (unsigned char)d->sizes[i];
		buf[at++] = '>';
		for (uint64_t k = 0; k < d->sizes[i]; k++)
			buf[at++] = test_store_byte(d->keys[i], k);
	}
	*len = total;
	return buf;
}

/* A listing stream with an on_listed hook that adds a header before each
 * object, over many pages, read byte-exact: as pages come on demand, and
 * after cache_stream_list_all(). */
static void test_on_listed_exact(void **state)
{
	for (int all = 0; all < 2; all++) {
		struct test_store *ts = test_store_create(true, 8);
		struct dataset d;
		struct cache *c;
		struct cache_stream *s;
		struct cache_reader *r;
		struct store_error err;
		unsigned calls = 0, nonempty = 0;
		uint64_t total, got, size = 0;
		unsigned char *want;

		assert_non_null(ts);
		make_dataset(ts, &d, 40, 100 * KIB);
		want = framed_bytes(&d, &total);
		for (unsigned i = 0; i < d.count; i++)
			nonempty += d.sizes[i] != 0;
		c = new_cache(ts, 512 * KIB, 64 * KIB, 6);
		s = cache_stream_create(c, "bucket", "data/");
		assert_non_null(s);
		cache_stream_on_listed(s, frame_header, &calls);
		assert_int_equal(cache_stream_start(s, &err), 0);
		assert_int_equal(calls, 3); /* the first page: 3 keys */
		if (all) {
			assert_int_equal(cache_stream_list_all(s), 0);
			assert_int_equal(calls, nonempty);
			assert_true(cache_stream_size(s, &size));
			assert_int_equal(size, total);
			assert_int_equal(cache_stream_count(s), 2 * nonempty);
		}
		r = cache_reader_create(s);
		assert_non_null(r);
		assert_int_equal(read_expect(c, r, 0, 10000, want, total, &got),
				 0);
		assert_int_equal(got, total);
		assert_int_equal(calls, nonempty);
		assert_true(cache_stream_size(s, &size));
		assert_int_equal(size, total);
		cache_reader_destroy(r);
		test_store_destroy(ts);
		cache_stream_destroy(s);
		cache_destroy(c);
		free(want);
	}
}

/* ---- one object version, one set of blocks ---- */

/*
 * Streams that name the same versions share their blocks: a second
 * listing of the prefix, and a plan built from HEADs of the same keys,
 * read everything from the cache; the store sends no byte twice.
 */
static void test_streams_share_blocks(void **state)
{
	struct fixture f;
	struct cache_stream *s2, *plan;
	struct cache_stats before, after;
	uint64_t got = 0, fetched;

	fixture_start(&f, 8, 30, 100 * KIB, 16 * MIB, 64 * KIB, 7);
	assert_true(f.d.total < 8 * MIB); /* all of it fits */
	/* known to fit only once listed to the end: until then a reader
	 * recycles what it consumed */
	assert_int_equal(cache_stream_list_all(f.s), 0);
	assert_int_equal(read_all(f.c, f.s, &f.d, 0, 64 * KIB, &got), 0);
	assert_int_equal(got, f.d.total);
	fetched = received(f.ts);
	assert_int_equal(fetched, f.d.total);
	cache_get_stats(f.c, &before);

	s2 = start_stream(f.c, "data/");
	assert_int_equal(read_all(f.c, s2, &f.d, 0, 4096, &got), 0);
	assert_int_equal(got, f.d.total);
	assert_int_equal(received(f.ts), fetched);
	cache_get_stats(f.c, &after);
	assert_int_equal(after.misses, before.misses);
	assert_int_equal(after.prefetched, before.prefetched);
	assert_true(after.hits > before.hits);

	/* the same objects found by HEAD, in a plan */
	plan = cache_stream_create_plan(f.c, NULL, NULL);
	assert_non_null(plan);
	for (unsigned i = 0; i < f.d.count; i++) {
		struct cache_object *o = NULL;
		struct store_error err;

		if (!f.d.sizes[i])
			continue;
		assert_int_equal(cache_object_resolve_sync(
				     f.c, "bucket", f.d.keys[i], &o, &err),
				 0);
		assert_int_equal(
		    cache_stream_add_object(plan, o, 0, f.d.sizes[i]), 0);
		cache_object_put(f.c, o);
	}
	cache_stream_end(plan, 0);
	assert_int_equal(read_all(f.c, plan, &f.d, 0, 100000, &got), 0);
	assert_int_equal(got, f.d.total);
	assert_int_equal(received(f.ts), fetched);
	cache_get_stats(f.c, &before);
	assert_int_equal(before.misses, after.misses);
	assert_int_equal(before.prefetched, after.prefetched);
	cache_stream_destroy(plan);
	test_store_destroy(f.ts);
	cache_stream_destroy(s2);
	cache_stream_destroy(f.s);
	cache_destroy(f.c);
}

/* ---- resolving keys ---- */

struct resolved {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
	struct cache_object *obj;
	int err;
	unsigned calls;
};

static void on_resolved(void *arg, struct cache_object *obj,
			const struct store_error *err)
{
	struct resolved *rs = arg;

	pthread_mutex_lock(&rs->lock);
	rs->calls++;
	rs->obj = obj;
	rs->err = err ? err->err : 0;
	rs->done = true;
	pthread_cond_signal(&rs->cond);
	pthread_mutex_unlock(&rs->lock);
}

static void resolve_wait(struct cache *c, const char *key, struct resolved *rs)
{
	rs->done = false;
	rs->obj = NULL;
	rs->err = -1;
	assert_int_equal(
	    cache_object_resolve(c, "bucket", key, on_resolved, rs), 0);
	pthread_mutex_lock(&rs->lock);
	while (!rs->done)
		pthread_cond_wait(&rs->cond, &rs->lock);
	pthread_mutex_unlock(&rs->lock);
}

/* cache_object_resolve(_sync): a HEAD through the store, its size and
 * ETag interned (the object a listing of the key finds); ENOENT for a
 * key the store does not hold.  cache_object_read_sync() reads a whole
 * object, of that version only. */
static void test_resolve(void **state)
{
	struct test_store *ts = test_store_create(true, 2);
	struct resolved rs = {.calls = 0};
	struct cache *c;
	struct cache_object *o = NULL, *same;
	struct store_error err;
	unsigned char *buf;

	assert_non_null(ts);
	pthread_mutex_init(&rs.lock, NULL);
	pthread_cond_init(&rs.cond, NULL);
	put_plan_objects(ts);
	c = new_cache(ts, 1 * MIB, 64 * KIB, 10);

	resolve_wait(c, "o/b", &rs);
	assert_int_equal(rs.err, 0);
	assert_non_null(rs.obj);
	assert_string_equal(cache_object_bucket(rs.obj), "bucket");
	assert_string_equal(cache_object_key(rs.obj), "o/b");
	assert_int_equal(cache_object_size(rs.obj), OBJ_B_SIZE);
	same = cache_object_get(c, "bucket", "o/b", "\"b1\"", OBJ_B_SIZE);
	assert_ptr_equal(same, rs.obj);
	assert_int_equal(
	    cache_object_resolve_sync(c, "bucket", "o/b", &o, &err), 0);
	assert_ptr_equal(o, rs.obj);
	/* the bytes of that version */
	buf = malloc(OBJ_B_SIZE);
	assert_non_null(buf);
	assert_int_equal(cache_object_read_sync(c, o, (char *)buf, &err), 0);
	for (uint64_t k = 0; k < OBJ_B_SIZE; k++)
		if (buf[k] != test_store_byte("o/b", k))
			fail_msg("byte %llu of o/b differs",
				 (unsigned long long)k);
	cache_object_put(c, o);
	cache_object_put(c, same);
	cache_object_put(c, rs.obj);
	/* the key replaced since: not that version */
	test_store_put(ts, "o/b", "\"b2\"", NULL, OBJ_B_SIZE);
	o = cache_object_get(c, "bucket", "o/b", "\"b1\"", OBJ_B_SIZE);
	assert_int_equal(cache_object_read_sync(c, o, (char *)buf, &err),
			 ESTALE);
	cache_object_put(c, o);
	resolve_wait(c, "o/b", &rs);
	assert_int_equal(rs.err, 0);
	assert_string_equal(cache_object_key(rs.obj), "o/b");
	assert_int_equal(cache_object_read_sync(c, rs.obj, (char *)buf, &err),
			 0);
	cache_object_put(c, rs.obj);
	free(buf);

	/* a key that is not there */
	resolve_wait(c, "o/none", &rs);
	assert_null(rs.obj);
	assert_int_equal(rs.err, ENOENT);
	o = (struct cache_object *)&rs; /* must be reset */
	assert_int_equal(
	    cache_object_resolve_sync(c, "bucket", "o/none", &o, &err), ENOENT);
	assert_null(o);
	assert_int_equal(err.err, ENOENT);
	assert_int_equal(rs.calls, 3);
	test_store_destroy(ts);
	cache_destroy(c);
	pthread_cond_destroy(&rs.cond);
	pthread_mutex_destroy(&rs.lock);
}

/* What HEADs reported, in recording mode (on this thread). */
struct heads_seen {
	unsigned calls;
	int err;
	char key[64];
	char etag[64];
	uint64_t size;
};

static void on_head(void *arg, const struct store_object *obj,
		    const struct store_error *err)
{
	struct heads_seen *h = arg;

	h->calls++;
	h->err = err ? err->err : 0;
	snprintf(h->key, sizeof(h->key), "%s", obj ? obj->key : "");
	snprintf(h->etag, sizeof(h->etag), "%s",
		 obj && obj->etag ? obj->etag : "");
	h->size = obj ? obj->size : 0;
}

/* HEAD on the test store in both modes: an object's size and ETag, ENOENT
 * for a key it does not hold; serving, through the blocking HEAD and GET
 * any store gets; recording, kept until the test answers. */
static void test_head_sync(void **state)
{
	struct test_store *ts = test_store_create(true, 1);
	struct store_head req = {.bucket = "bucket", .done = on_head};
	struct heads_seen seen = {0};
	struct store_object obj;
	struct store_error err;
	struct store_stats stats;
	char buf[10];

	assert_non_null(ts);
	test_store_put(ts, "m/manifest", "\"m1\"", "0123456789", 10);
	assert_int_equal(
	    store_head_sync(&ts->store, "bucket", "m/manifest", &obj, &err), 0);
	assert_string_equal(obj.key, "m/manifest");
	assert_string_equal(obj.etag, "\"m1\"");
	assert_int_equal(obj.size, 10);
	assert_int_equal(store_get_sync(&ts->store, "bucket", obj.key, obj.etag,
					buf, obj.size, &err),
			 0);
	assert_memory_equal(buf, "0123456789", 10);
	store_object_clear(&obj);
	assert_int_equal(
	    store_head_sync(&ts->store, "bucket", "m/none", &obj, &err),
	    ENOENT);
	assert_int_equal(err.http_status, 404);
	assert_null(obj.key);
	assert_int_equal(store_get_sync(&ts->store, "bucket", "m/manifest",
					"\"m0\"", buf, 10, &err),
			 ESTALE);
	/* 0 bytes: the store is not asked */
	assert_int_equal(
	    store_get_sync(&ts->store, "bucket", "m/none", NULL, buf, 0, &err),
	    0);
	store_get_stats(&ts->store, &stats);
	assert_int_equal(stats.requests, 4);
	assert_int_equal(stats.failures, 2);
	test_store_destroy(ts);

	ts = test_store_create(false, 1);
	assert_non_null(ts);
	test_store_put(ts, "a", "\"a1\"", NULL, 5000000000ull);
	req.arg = &seen;
	req.key = "a";
	assert_int_equal(store_head(&ts->store, &req), 0);
	req.key = "b";
	assert_int_equal(store_head(&ts->store, &req), 0);
	assert_int_equal(store_head(&ts->store, &req), 0);
	req.key = NULL;
	assert_int_equal(store_head(&ts->store, &req), EINVAL);
	assert_int_equal(ts->nheads, 3);
	assert_string_equal(ts->heads[1].key, "b");
	assert_int_equal(seen.calls, 0);
	test_store_finish_head(ts, 0, 0);
	assert_int_equal(seen.calls, 1);
	assert_int_equal(seen.err, 0);
	assert_string_equal(seen.key, "a");
	assert_string_equal(seen.etag, "\"a1\"");
	assert_true(seen.size == 5000000000ull);
	test_store_finish_head(ts, 1, 0);
	assert_int_equal(seen.err, ENOENT);
	/* the one left open ends with the store */
	test_store_destroy(ts);
	assert_int_equal(seen.calls, 3);
	assert_int_equal(seen.err, ECANCELED);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_whole_stream_small_budget),
	    cmocka_unit_test(test_concurrent_readers),
	    cmocka_unit_test(test_seek_restarts),
	    cmocka_unit_test(test_store_failure_is_eio),
	    cmocka_unit_test(test_changed_object_is_eio),
	    cmocka_unit_test(test_list_sync),
	    cmocka_unit_test(test_head_sync),
	    cmocka_unit_test(test_plan_exact),
	    cmocka_unit_test(test_plan_end),
	    cmocka_unit_test(test_plan_fed_by_want),
	    cmocka_unit_test(test_reader_at_exact),
	    cmocka_unit_test(test_plan_marks_read),
	    cmocka_unit_test(test_on_listed_exact),
	    cmocka_unit_test(test_streams_share_blocks),
	    cmocka_unit_test(test_resolve),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
