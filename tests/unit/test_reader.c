/*
 * test_reader: the cache end to end over a store that answers by itself.
 *
 * A serving test store (tests/unit/test_store.h) holds the objects and
 * answers LISTs and GETs from its own thread, as the S3 engine does; the
 * streams and readers run exactly as under a mount.  These tests check the
 * bytes a reader gets against the objects, with budgets far smaller than
 * the data, listings of many pages, several readers at once, seeks, and
 * failures (a store error, an object changed since it was listed).
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
	struct s3_error err;

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
	struct s3_list_page page;
	struct s3_error err;
	struct dataset d;

	assert_non_null(ts);
	make_dataset(ts, &d, 5, 10);
	assert_int_equal(
	    s3_list_sync(&ts->store, "bucket", "data/", NULL, 3, &page, &err),
	    0);
	assert_int_equal(page.count, 3);
	assert_true(page.truncated);
	assert_non_null(page.next_token);
	assert_string_equal(page.objects[0].key, "data/000");
	assert_string_equal(page.objects[2].key, "data/002");
	{
		char token[32];

		snprintf(token, sizeof(token), "%s", page.next_token);
		s3_list_page_clear(&page);
		assert_int_equal(s3_list_sync(&ts->store, "bucket", "data/",
					      token, 3, &page, &err),
				 0);
	}
	assert_int_equal(page.count, 2);
	assert_false(page.truncated);
	assert_string_equal(page.objects[1].key, "data/004");
	s3_list_page_clear(&page);
	/* a request the store refuses comes back as the error */
	assert_int_equal(
	    s3_list_sync(&ts->store, "bucket", "data/", NULL, 0, &page, &err),
	    EINVAL);
	assert_int_equal(err.err, EINVAL);
	test_store_destroy(ts);
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
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
