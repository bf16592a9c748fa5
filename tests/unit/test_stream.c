/*
 * test_stream: stream offset -> segment mapping, listing pages, and the
 * reader's block arithmetic, on objects larger than 4 GiB; plan streams
 * (object ranges, literal bytes, marks), on-listed functions, the refill
 * function, waiting for segments, and readers of a range.
 *
 * take_page(), frontier_to_position() and prefetch() are reached through
 * the UNITTEST convention (cache/internal.h).  The cache sits on the
 * recording test store (tests/unit/test_store.h): every stream here is
 * built with cache_stream_append(), take_page() or the plan calls, each
 * GET or LIST the cache makes is recorded, so a test can check their
 * ranges and then play the store's part with the recorded callbacks, and
 * a test that expects no request checks that none was made.  Tests that
 * wait on another thread give up after seconds, not hang.
 */
#include "config.h"

#include "cache/internal.h"
#include "tests/unit/test_store.h"

#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define KIB (1024ull)
#define MIB (1024ull * 1024)
#define GIB (1024ull * 1024 * 1024)

/* the store every cache here fetches and lists through (recording) */
static struct test_store *store;

/* ---- helpers ---- */

/* A cache with 100-key listing pages; window 0 is the automatic one, and
 * ahead 0 the automatic objects-ahead limit (4 x 64 requests). */
static struct cache *new_conf_cache(uint64_t budget, uint64_t block_size,
				    uint64_t window, unsigned ahead)
{
	struct cache_conf conf;
	struct cache *c;

	cache_conf_init(&conf);
	conf.budget_bytes = budget;
	conf.block_size = block_size;
	conf.max_window = window;
	conf.max_ahead_objects = ahead;
	conf.list_page_keys = 100;
	c = cache_create(&conf, &store->store);
	assert_non_null(c);
	return c;
}

static struct cache *new_cache(uint64_t budget, uint64_t block_size)
{
	return new_conf_cache(budget, block_size, 0, 0);
}

static void append(struct cache_stream *s, const char *key, const char *etag,
		   uint64_t size)
{
	assert_int_equal(cache_stream_append(s, key, etag, size), 0);
}

static size_t find(struct cache_stream *s, uint64_t offset)
{
	size_t i;

	pthread_mutex_lock(&s->cache->lock);
	i = cache_stream_find(s, offset);
	pthread_mutex_unlock(&s->cache->lock);
	return i;
}

/* The obvious linear search, as a reference for the binary one. */
static size_t find_linear(const struct cache_stream *s, uint64_t offset)
{
	for (size_t i = 0; i < s->count; i++)
		if (offset >= s->segs[i]->start &&
		    offset - s->segs[i]->start < s->segs[i]->size)
			return i;
	return s->count;
}

static struct cache_block *lookup_block(struct cache *c, struct cache_stream *s,
					size_t seg_idx, uint64_t index)
{
	struct cache_block *b;

	pthread_mutex_lock(&c->lock);
	b = cache_block_lookup(c, s->segs[seg_idx]->obj, index);
	pthread_mutex_unlock(&c->lock);
	return b;
}

static int wait_for(struct cache_stream *s, size_t idx)
{
	int rc;

	pthread_mutex_lock(&s->cache->lock);
	rc = cache_stream_wait(s, idx);
	pthread_mutex_unlock(&s->cache->lock);
	return rc;
}

/*
 * The mixed listing used below: objects over 4 GiB, exactly 4 GiB and one
 * byte under, tiny ones, and empty ones (a folder marker among them) that
 * must not become segments.  Starts and the total were computed
 * independently (Python, exact integers).
 */
static const struct {
	const char *key;
	uint64_t size;
} mixed[] = {
    {"p/a", 5 * GIB},	  {"p/b", 1},		{"p/dir/", 0},
    {"p/c", 6 * GIB},	  {"p/d", 0},		{"p/e", 8 * MIB},
    {"p/f", 8 * MIB + 1}, {"p/g", 3},		{"p/h", 4 * GIB},
    {"p/i", 4 * GIB - 1}, {"p/j", 8 * GIB + 5}, {"p/k", 1},
};

static const struct {
	const char *key;
	uint64_t size;
	uint64_t start;
} mixed_segs[] = {
    {"p/a", 5368709120ull, 0ull},
    {"p/b", 1ull, 5368709120ull},
    {"p/c", 6442450944ull, 5368709121ull},
    {"p/e", 8388608ull, 11811160065ull},
    {"p/f", 8388609ull, 11819548673ull},
    {"p/g", 3ull, 11827937282ull},
    {"p/h", 4294967296ull, 11827937285ull},
    {"p/i", 4294967295ull, 16122904581ull},
    {"p/j", 8589934597ull, 20417871876ull},
    {"p/k", 1ull, 29007806473ull},
};

#define MIXED_COUNT (sizeof(mixed_segs) / sizeof(mixed_segs[0]))
#define MIXED_TOTAL 29007806474ull

static struct cache_stream *mixed_stream(struct cache *c, bool complete)
{
	struct cache_stream *s = cache_stream_create(c, "b", "p/");
	char etag[32];

	assert_non_null(s);
	for (size_t i = 0; i < sizeof(mixed) / sizeof(mixed[0]); i++) {
		snprintf(etag, sizeof(etag), "\"etag-%zu\"", i);
		append(s, mixed[i].key, i % 2 ? etag : NULL, mixed[i].size);
	}
	pthread_mutex_lock(&c->lock);
	s->complete = complete;
	pthread_mutex_unlock(&c->lock);
	return s;
}

/* ---- recorded GETs ---- */

static void check_get(unsigned i, const char *key, uint64_t offset,
		      uint64_t len, unsigned nbuffers)
{
	assert_true(i < store->ngets);
	assert_string_equal(store->gets[i].bucket, "b");
	assert_string_equal(store->gets[i].key, key);
	assert_int_equal(store->gets[i].offset, offset);
	assert_int_equal(store->gets[i].len, len);
	assert_int_equal(store->gets[i].nbuffers, nbuffers);
}

/* Ends every recorded request as the engine does at shutdown. */
static void cancel_gets(void)
{
	test_store_cancel_all(store);
}

/* The test expected no request at all. */
static void check_no_requests(void)
{
	assert_int_equal(store->ngets, 0);
	assert_int_equal(store->nlists, 0);
}

/* ---- segments ---- */

static void test_append_segments(void **state)
{
	struct cache *c = new_cache(64 * MIB, 8 * MIB);
	struct cache_stream *s = mixed_stream(c, false);

	assert_string_equal(s->bucket, "b");
	assert_string_equal(s->prefix, "p/");
	assert_int_equal(s->count, MIXED_COUNT);
	assert_int_equal(s->listed_bytes, MIXED_TOTAL);
	for (size_t i = 0; i < MIXED_COUNT; i++) {
		assert_string_equal(s->segs[i]->obj->key, mixed_segs[i].key);
		assert_string_equal(s->segs[i]->obj->bucket, "b");
		assert_int_equal(s->segs[i]->obj->size, mixed_segs[i].size);
		assert_int_equal(s->segs[i]->obj_offset, 0);
		assert_int_equal(s->segs[i]->obj_seq, i);
		assert_null(s->segs[i]->bytes);
		assert_int_equal(s->segs[i]->size, mixed_segs[i].size);
		assert_int_equal(s->segs[i]->start, mixed_segs[i].start);
	}
	/* etags are copied, NULL stays NULL */
	assert_null(s->segs[0]->obj->etag); /* p/a, listed 0th */
	assert_string_equal(s->segs[1]->obj->etag, "\"etag-1\"");
	assert_string_equal(s->segs[2]->obj->etag, "\"etag-3\"");
	/* an empty object adds nothing */
	append(s, "p/empty", "\"x\"", 0);
	assert_int_equal(s->count, MIXED_COUNT);
	assert_int_equal(s->listed_bytes, MIXED_TOTAL);
	cache_stream_destroy(s);
	cache_destroy(c);
}

/* A hostile listing cannot wrap the stream's offsets. */
static void test_append_overflow(void **state)
{
	struct cache *c = new_cache(64 * MIB, 8 * MIB);
	struct cache_stream *s = cache_stream_create(c, "b", "p/");

	assert_non_null(s);
	assert_int_equal(cache_stream_append(s, "p/a", "\"e\"", 2), 0);
	/* past S3's largest object: refused before anything is framed */
	assert_int_equal(cache_stream_append(s, "p/huge", "\"e\"", UINT64_MAX),
			 EFBIG);
	assert_int_equal(
	    cache_stream_append(s, "p/big", "\"e\"", CACHE_OBJECT_SIZE_MAX + 1),
	    EFBIG);
	assert_int_equal(
	    cache_stream_append(s, "p/max", "\"e\"", CACHE_OBJECT_SIZE_MAX), 0);
	/* a stream this long is near the end of its offsets */
	pthread_mutex_lock(&c->lock);
	s->listed_bytes = (uint64_t)INT64_MAX - 2;
	pthread_mutex_unlock(&c->lock);
	assert_int_equal(cache_stream_append(s, "p/two", "\"e\"", 2), 0);
	assert_int_equal(cache_stream_append(s, "p/one", "\"e\"", 1),
			 EOVERFLOW);
	assert_int_equal(s->count, 3);
	assert_int_equal(s->listed_bytes, (uint64_t)INT64_MAX);
	assert_int_equal(s->segs[1]->start, 2);
	cache_stream_destroy(s);
	cache_destroy(c);
}

static void test_find_boundaries(void **state)
{
	struct cache *c = new_cache(64 * MIB, 8 * MIB);
	struct cache_stream *s = mixed_stream(c, true);

	assert_int_equal(find(s, 0), 0);
	for (size_t i = 0; i < MIXED_COUNT; i++) {
		uint64_t start = mixed_segs[i].start;
		uint64_t end = start + mixed_segs[i].size;

		assert_int_equal(find(s, start), i);
		assert_int_equal(find(s, end - 1), i);
		assert_int_equal(find(s, end),
				 i + 1); /* count after the last */
		if (mixed_segs[i].size > 2)
			assert_int_equal(find(s, start + 1), i);
	}
	/* beyond the end */
	assert_int_equal(find(s, MIXED_TOTAL), MIXED_COUNT);
	assert_int_equal(find(s, MIXED_TOTAL + 1), MIXED_COUNT);
	assert_int_equal(find(s, UINT64_MAX), MIXED_COUNT);
	/* above 2^32 and 2^33: p/a, p/c, p/i, p/j (truncation to 32 bits
	 * would land in p/a every time) */
	assert_int_equal(find(s, 1ull << 32), 0);
	assert_int_equal(find(s, (1ull << 32) + 7), 0);
	assert_int_equal(find(s, 1ull << 33), 2);
	assert_int_equal(find(s, 1ull << 34), 7);
	assert_int_equal(find(s, 1ull << 35), MIXED_COUNT);
	assert_int_equal(find(s, 3 * (1ull << 33)), 8);
	/* and every offset near a power of two, against a linear search */
	for (int bit = 0; bit < 36; bit++) {
		for (int d = -2; d <= 2; d++) {
			uint64_t off = (1ull << bit) + (uint64_t)(int64_t)d;

			assert_int_equal(find(s, off), find_linear(s, off));
		}
	}
	cache_stream_destroy(s);
	cache_destroy(c);
}

static void test_find_empty(void **state)
{
	struct cache *c = new_cache(64 * MIB, 8 * MIB);
	struct cache_stream *s = cache_stream_create(c, "b", NULL);

	assert_non_null(s);
	assert_string_equal(s->prefix, "");
	assert_int_equal(find(s, 0), 0);
	assert_int_equal(find(s, 1ull << 40), 0);
	append(s, "only-empty", NULL, 0);
	assert_int_equal(s->count, 0);
	assert_int_equal(find(s, 0), 0);
	append(s, "one", NULL, 1);
	assert_int_equal(find(s, 0), 0);
	assert_int_equal(find(s, 1), 1);
	cache_stream_destroy(s);
	cache_destroy(c);
}

/* Thousands of segments (the array grows: pointers must stay put), random
 * sizes up to 3 GiB with empties mixed in, checked at every boundary. */
static void test_find_many(void **state)
{
	struct cache *c = new_cache(64 * MIB, 8 * MIB);
	struct cache_stream *s = cache_stream_create(c, "b", "p/");
	uint64_t rng = 0x243F6A8885A308D3ull, total = 0;
	struct cache_segment *first = NULL;
	size_t n = 0;
	char key[32];

	assert_non_null(s);
	for (int i = 0; i < 5000; i++) {
		uint64_t size;

		rng ^= rng >> 12;
		rng ^= rng << 25;
		rng ^= rng >> 27;
		size = (rng * 0x2545F4914F6CDD1Dull) % (3 * GIB);
		if (i % 7 == 3)
			size = 0;
		else if (i % 11 == 5)
			size = 1;
		snprintf(key, sizeof(key), "p/%06d", i);
		append(s, key, NULL, size);
		if (size) {
			assert_int_equal(s->segs[n]->start, total);
			n++;
			total += size;
		}
		if (n == 1 && !first)
			first = s->segs[0];
	}
	assert_int_equal(s->count, n);
	assert_int_equal(s->listed_bytes, total);
	assert_true(total > 1000 * GIB); /* far beyond 32 bits */
	assert_ptr_equal(s->segs[0], first);
	for (size_t i = 0; i < n; i++) {
		const struct cache_segment *seg = s->segs[i];

		assert_int_equal(find(s, seg->start), i);
		assert_int_equal(find(s, seg->start + seg->size - 1), i);
		assert_int_equal(find(s, seg->start + seg->size), i + 1);
		if (i + 1 < n)
			assert_int_equal(seg->start + seg->size,
					 s->segs[i + 1]->start);
	}
	assert_int_equal(find(s, total), n);
	cache_stream_destroy(s);
	cache_destroy(c);
}

/* ---- listing pages ---- */

static void page_init(struct store_list_page *p, size_t count, bool truncated,
		      const char *token)
{
	memset(p, 0, sizeof(*p));
	p->objects = calloc(count ? count : 1, sizeof(*p->objects));
	assert_non_null(p->objects);
	p->truncated = truncated;
	if (token) {
		p->next_token = strdup(token);
		assert_non_null(p->next_token);
	}
}

static void page_add(struct store_list_page *p, const char *key,
		     const char *etag, uint64_t size)
{
	struct store_object *o = &p->objects[p->count++];

	o->key = strdup(key);
	o->etag = etag ? strdup(etag) : NULL;
	o->size = size;
	assert_non_null(o->key);
}

static int take(struct cache_stream *s, struct store_list_page *p)
{
	return take_page(s, p);
}

static void test_take_page(void **state)
{
	struct cache *c = new_cache(64 * MIB, 8 * MIB);
	struct cache_stream *s = cache_stream_create(c, "b", "p/");
	struct store_list_page page;
	uint64_t size = 123;

	assert_non_null(s);
	assert_false(cache_stream_size(s, &size));
	assert_int_equal(size, 0);
	/* first page: truncated, with a folder marker */
	page_init(&page, 3, true, "token-1");
	page_add(&page, "p/a", "\"e1\"", 5 * GIB);
	page_add(&page, "p/dir/", "\"d41d8cd98f00b204e9800998ecf8427e\"", 0);
	page_add(&page, "p/b", NULL, 1);
	assert_int_equal(take(s, &page), 0);
	assert_int_equal(s->count, 2);
	assert_string_equal(s->next_token, "token-1");
	assert_null(page.next_token); /* the stream took it */
	assert_false(s->complete);
	/* the stream owns copies */
	assert_string_equal(s->segs[0]->obj->key, "p/a");
	assert_ptr_not_equal(s->segs[0]->obj->key, page.objects[0].key);
	assert_string_equal(s->segs[0]->obj->etag, "\"e1\"");
	assert_ptr_not_equal(s->segs[0]->obj->etag, page.objects[0].etag);
	assert_null(s->segs[1]->obj->etag);
	store_list_page_clear(&page);
	size = 123;
	assert_false(cache_stream_size(s, &size));
	assert_int_equal(size, 0);
	/* a middle page: a new token replaces the old one */
	page_init(&page, 1, true, "token-2");
	page_add(&page, "p/c", "\"e3\"", 6 * GIB);
	assert_int_equal(take(s, &page), 0);
	assert_string_equal(s->next_token, "token-2");
	assert_false(s->complete);
	store_list_page_clear(&page);
	/* the last page */
	page_init(&page, 2, false, NULL);
	page_add(&page, "p/d", "\"e4\"", 4 * GIB);
	page_add(&page, "p/e", "\"e5\"", 0);
	assert_int_equal(take(s, &page), 0);
	assert_null(s->next_token);
	assert_true(s->complete);
	store_list_page_clear(&page);
	assert_int_equal(s->count, 4);
	assert_int_equal(s->segs[3]->start, 11 * GIB + 1);
	assert_true(cache_stream_size(s, &size));
	assert_int_equal(size, 15 * GIB + 1);
	cache_stream_destroy(s);
	cache_destroy(c);
}

static void test_take_page_odd(void **state)
{
	struct cache *c = new_cache(64 * MIB, 8 * MIB);
	struct cache_stream *s = cache_stream_create(c, "b", "p/");
	struct cache_stream *t = cache_stream_create(c, "b", "p/");
	struct cache_stream *u = cache_stream_create(c, "b", "p/");
	struct store_list_page page;
	uint64_t size = 1;

	assert_non_null(s);
	assert_non_null(t);
	assert_non_null(u);
	/* an empty, complete listing: size 0, but known */
	page_init(&page, 0, false, NULL);
	assert_int_equal(take(s, &page), 0);
	store_list_page_clear(&page);
	assert_true(s->complete);
	assert_true(cache_stream_size(s, &size));
	assert_int_equal(size, 0);
	assert_int_equal(wait_for(s, 0), ENODATA);
	/* truncated without a token: nothing to continue from, so complete
	 * (asking again from the start would loop) */
	page_init(&page, 1, true, NULL);
	page_add(&page, "p/x", NULL, 10);
	assert_int_equal(take(t, &page), 0);
	store_list_page_clear(&page);
	assert_true(t->complete);
	assert_null(t->next_token);
	/* a token on a page that is not truncated is ignored (and freed with
	 * the page) */
	page_init(&page, 1, false, "stray");
	page_add(&page, "p/y", NULL, 10);
	assert_int_equal(take(u, &page), 0);
	assert_true(u->complete);
	assert_null(u->next_token);
	assert_non_null(page.next_token);
	store_list_page_clear(&page);
	cache_stream_destroy(s);
	cache_stream_destroy(t);
	cache_stream_destroy(u);
	cache_destroy(c);
}

static void test_stream_size(void **state)
{
	struct cache *c = new_cache(64 * MIB, 8 * MIB);
	struct cache_stream *s = mixed_stream(c, false);
	uint64_t size = 99;

	assert_false(cache_stream_size(s, &size));
	assert_int_equal(size, 0);
	pthread_mutex_lock(&c->lock);
	s->complete = true;
	pthread_mutex_unlock(&c->lock);
	assert_true(cache_stream_size(s, &size));
	assert_int_equal(size, MIXED_TOTAL);
	cache_stream_destroy(s);
	cache_destroy(c);
}

static void test_stream_wait(void **state)
{
	struct cache *c = new_cache(64 * MIB, 8 * MIB);
	struct cache_stream *s = mixed_stream(c, false);

	/* listed segments need no request, even with the listing open */
	for (size_t i = 0; i < MIXED_COUNT; i++)
		assert_int_equal(wait_for(s, i), 0);
	assert_false(s->listing);
	/* the end of a complete listing */
	pthread_mutex_lock(&c->lock);
	s->complete = true;
	pthread_mutex_unlock(&c->lock);
	assert_int_equal(wait_for(s, 0), 0);
	assert_int_equal(wait_for(s, MIXED_COUNT - 1), 0);
	assert_int_equal(wait_for(s, MIXED_COUNT), ENODATA);
	assert_int_equal(wait_for(s, MIXED_COUNT + 1000), ENODATA);
	assert_false(s->listing);
	cache_stream_destroy(s);
	cache_destroy(c);
}

/* The next page is asked for only within two pages of the end. */
static void test_stream_want(void **state)
{
	struct cache *c = new_cache(64 * MIB, 8 * MIB);
	struct cache_stream *s = cache_stream_create(c, "b", "p/");
	char key[32];

	assert_non_null(s);
	for (int i = 0; i < 400; i++) {
		snprintf(key, sizeof(key), "p/%03d", i);
		append(s, key, NULL, 5 * GIB);
	}
	pthread_mutex_lock(&c->lock);
	/* list_page_keys 100: far from the end, no request */
	cache_stream_need(s, 0);
	cache_stream_need(s, 199);
	assert_false(s->listing);
	/* complete: never a request */
	s->complete = true;
	cache_stream_need(s, 200);
	cache_stream_need(s, 10000);
	assert_false(s->listing);
	pthread_mutex_unlock(&c->lock);
	check_no_requests();
	cache_stream_destroy(s);
	cache_destroy(c);
}

/* Answers recorded listing request i with count objects p/NAME-k (64 KiB
 * each), truncated with the token next unless next is NULL. */
static void answer_list(unsigned i, const char *name, unsigned count,
			const char *next)
{
	struct store_list_page page;
	char key[64];

	page_init(&page, count, next != NULL, next);
	for (unsigned k = 0; k < count; k++) {
		snprintf(key, sizeof(key), "p/%s-%04u", name, k);
		page_add(&page, key, "\"e\"", 64 * KIB);
	}
	store->lists[i].finished = true;
	store->lists[i].done(store->lists[i].arg, &page, NULL);
	store_list_page_clear(&page);
}

/*
 * A listing goes on by itself while a reader is near its end: a page that
 * comes when the furthest segment asked for is still within two pages of
 * the end asks for the next one at once, without waiting for a reader's
 * next prefetch; one that leaves the reader far behind does not, until a
 * reader comes near again, and neither does one that comes when no reader
 * is left.
 */
static void test_listing_goes_on(void **state)
{
	struct cache *c = new_cache(64 * MIB, 8 * MIB);
	struct cache_stream *s = cache_stream_create(c, "b", "p/");
	struct cache_reader *r;

	assert_non_null(s);
	append(s, "p/a", NULL, 10);
	s->next_token = strdup("t1");
	assert_non_null(s->next_token);
	r = cache_reader_create(s);
	assert_non_null(r);
	pthread_mutex_lock(&c->lock);
	cache_stream_need(s, 0);
	pthread_mutex_unlock(&c->lock);
	assert_int_equal(store->nlists, 1);
	assert_string_equal(store->lists[0].token, "t1");
	assert_int_equal(store->lists[0].max_keys, 100);

	/* 51 segments, the reader at 0: within two pages, the next at once */
	answer_list(0, "b", 50, "t2");
	assert_int_equal(store->nlists, 2);
	assert_string_equal(store->lists[1].token, "t2");

	/* 351 segments: the reader is more than two pages behind */
	answer_list(1, "c", 300, "t3");
	assert_int_equal(store->nlists, 2);
	pthread_mutex_lock(&c->lock);
	assert_int_equal(s->count, 351);
	assert_false(s->listing);
	cache_stream_need(s, 150);
	assert_false(s->listing);
	cache_stream_need(s, 151);
	assert_true(s->listing);
	pthread_mutex_unlock(&c->lock);
	assert_int_equal(store->nlists, 3);
	assert_string_equal(store->lists[2].token, "t3");

	/* the reader gone: a page that comes asks for no other */
	cache_reader_destroy(r);
	answer_list(2, "d", 10, "t4");
	assert_int_equal(store->nlists, 3);
	pthread_mutex_lock(&c->lock);
	assert_false(s->complete);
	assert_false(s->listing);
	assert_int_equal(s->count, 361);
	pthread_mutex_unlock(&c->lock);
	store->nlists = 0;
	cache_stream_destroy(s);
	cache_destroy(c);
}

/* ---- reader arithmetic ---- */

static void test_block_len(void **state)
{
	struct cache *c = new_cache(64 * MIB, 8 * MIB);
	struct cache_object a = {.size = 5 * GIB};
	struct cache_object f = {.size = 8 * MIB + 1};
	struct cache_object g = {.size = 3};
	struct cache_object i = {.size = 4 * GIB - 1};
	struct cache_object j = {.size = 8 * GIB + 5};

	assert_int_equal(cache_block_len(c, &a, 0), 8 * MIB);
	assert_int_equal(cache_block_len(c, &a, 511),
			 8 * MIB); /* ends at 4 GiB */
	assert_int_equal(cache_block_len(c, &a, 512), 8 * MIB);
	assert_int_equal(cache_block_len(c, &a, 639), 8 * MIB); /* the last */
	assert_int_equal(cache_block_len(c, &f, 0), 8 * MIB);
	assert_int_equal(cache_block_len(c, &f, 1), 1);
	assert_int_equal(cache_block_len(c, &g, 0), 3);
	assert_int_equal(cache_block_len(c, &i, 510), 8 * MIB);
	assert_int_equal(cache_block_len(c, &i, 511), 8 * MIB - 1);
	assert_int_equal(cache_block_len(c, &j, 1023), 8 * MIB);
	assert_int_equal(cache_block_len(c, &j, 1024), 5);
	cache_destroy(c);
	/* small blocks: indexes beyond 2^20, offsets beyond 2^32 */
	c = new_cache(64 * MIB, 4 * KIB);
	assert_int_equal(cache_block_len(c, &j, 2097151), 4 * KIB);
	assert_int_equal(cache_block_len(c, &j, 2097152), 5);
	assert_int_equal(cache_block_len(c, &i, 1048575), 4 * KIB - 1);
	cache_destroy(c);
}

static void check_frontier(struct cache_reader *r, uint64_t pos,
			   size_t want_seg, uint64_t want_block,
			   uint64_t want_offset)
{
	struct cache *c = r->stream->cache;

	pthread_mutex_lock(&c->lock);
	r->pos = pos;
	r->seg_idx = cache_stream_find(r->stream, pos);
	assert_int_equal(r->seg_idx, want_seg);
	frontier_to_position(r);
	assert_int_equal(r->prefetch_seg, want_seg);
	assert_int_equal(r->prefetch_block, want_block);
	assert_int_equal(r->prefetch_offset, want_offset);
	pthread_mutex_unlock(&c->lock);
}

static void test_frontier_to_position(void **state)
{
	struct cache *c = new_cache(64 * MIB, 8 * MIB);
	struct cache_stream *s = mixed_stream(c, true);
	struct cache_reader *r = cache_reader_create(s);

	assert_non_null(r);
	check_frontier(r, 0, 0, 0, 0);
	check_frontier(r, 8 * MIB - 1, 0, 0, 0);
	check_frontier(r, 8 * MIB, 0, 1, 8 * MIB);
	check_frontier(r, 4 * GIB, 0, 512, 4 * GIB);
	check_frontier(r, 5 * GIB - 1, 0, 639, 5 * GIB - 8 * MIB);
	check_frontier(r, 5 * GIB, 1, 0, 5 * GIB); /* p/b, one byte */
	check_frontier(r, 5 * GIB + 1, 2, 0, 5 * GIB + 1);
	/* 2^33 is 3 GiB - 1 into p/c: block 383 */
	check_frontier(r, 8 * GIB, 2, 383, 8 * GIB - 8 * MIB + 1);
	check_frontier(r, 11 * GIB, 2, 767, 11 * GIB - 8 * MIB + 1);
	check_frontier(r, 11 * GIB + 1, 3, 0, 11 * GIB + 1); /* p/e */
	check_frontier(r, 11 * GIB + 1 + 16 * MIB, 4, 1,
		       11 * GIB + 1 + 16 * MIB);
	check_frontier(r, 11 * GIB + 16 * MIB + 2, 5, 0,
		       11 * GIB + 16 * MIB + 2); /* p/g */
	/* p/j starts at 20417871876; its last byte is in block 1024 */
	check_frontier(r, 20417871876ull, 8, 0, 20417871876ull);
	check_frontier(r, MIXED_TOTAL - 2, 8, 1024, 20417871876ull + 8 * GIB);
	check_frontier(r, MIXED_TOTAL - 1, 9, 0, MIXED_TOTAL - 1); /* p/k */
	/* past the end: the frontier sits at the end of the listing */
	check_frontier(r, MIXED_TOTAL, MIXED_COUNT, 0, MIXED_TOTAL);
	check_frontier(r, MIXED_TOTAL + 5, MIXED_COUNT, 0, MIXED_TOTAL);
	cache_reader_destroy(r);
	cache_stream_destroy(s);
	cache_destroy(c);
}

/* A read at or past the end of a complete listing returns no bytes and
 * needs no request. */
static void test_read_at_end(void **state)
{
	struct cache *c = new_cache(64 * MIB, 8 * MIB);
	struct cache_stream *s = mixed_stream(c, true);
	struct cache_reader *r = cache_reader_create(s);
	struct cache_view *v = calloc(1, sizeof(*v));
	struct cache_stats st;

	assert_non_null(r);
	assert_non_null(v);
	assert_int_equal(cache_reader_read(r, MIXED_TOTAL, 4096, v), 0);
	assert_int_equal(v->bytes, 0);
	assert_int_equal(v->count, 0);
	assert_int_equal(cache_reader_position(r), MIXED_TOTAL);
	assert_int_equal(r->seg_idx, MIXED_COUNT);
	assert_int_equal(r->prefetch_offset, MIXED_TOTAL);
	/* again at the same place: not a seek */
	assert_int_equal(cache_reader_read(r, MIXED_TOTAL, 4096, v), 0);
	assert_int_equal(v->bytes, 0);
	assert_int_equal(cache_reader_read(r, MIXED_TOTAL + GIB, 1, v), 0);
	assert_int_equal(v->bytes, 0);
	cache_get_stats(c, &st);
	assert_int_equal(st.seeks, 2);
	assert_int_equal(st.used_bytes, 0);
	check_no_requests();
	cache_view_release(c, v);
	free(v);
	cache_reader_destroy(r);
	cache_stream_destroy(s);
	cache_destroy(c);
}

/* ---- reads across object boundaries from cached blocks ---- */

/* The byte at a stream offset; depends on the high bits too, so a 32-bit
 * truncation anywhere shows. */
static unsigned char pattern(uint64_t off)
{
	uint64_t x = off * 0x9E3779B97F4A7C15ull;

	return (unsigned char)(x >> 56 ^ off >> 32 ^ off);
}

/* Runs the prefetcher as a read at pos would, with the lock held. */
static void prefetch_at(struct cache_reader *r, uint64_t pos, uint64_t ahead)
{
	struct cache *c = r->stream->cache;

	pthread_mutex_lock(&c->lock);
	r->pos = pos;
	r->seg_idx = cache_stream_find(r->stream, pos);
	prefetch(r, ahead, false, false);
	pthread_mutex_unlock(&c->lock);
}

static struct cache_reader *reader_with_window(struct cache_stream *s,
					       uint64_t window)
{
	struct cache_reader *r = cache_reader_create(s);

	assert_non_null(r);
	r->window = window;
	return r;
}

/*
 * The prefetcher asks for runs of whole blocks of one object with one GET
 * each (request_size / block_size blocks at most), never across an object,
 * starting a short run at the window's edge only when the reader is about
 * to run dry, and each block of a run is readable once its own bytes are
 * in.
 */
/* A cache of 1 MiB blocks with a 32 MiB window, and a stream over it that
 * starts with a 100 MiB object. */
static struct cache_stream *window_stream(void)
{
	struct cache *c = new_conf_cache(256 * MIB, MIB, 32 * MIB, 0);
	struct cache_stream *s;

	/* auto: requests of a quarter of the window */
	assert_int_equal(c->conf.max_window, 32 * MIB);
	assert_int_equal(c->run_max, 8);
	s = cache_stream_create(c, "b", "p/");
	assert_non_null(s);
	append(s, "p/big", NULL, 100 * MIB);
	return s;
}

static void test_prefetch_runs(void **state)
{
	struct cache_stream *s = window_stream();
	struct cache *c = s->cache;
	struct cache_reader *r, *r2, *r3;
	struct cache_block *b;
	struct store_error e;

	append(s, "p/small", NULL, 10 * MIB + 5);
	append(s, "p/tiny", NULL, 100);
	r = cache_reader_create(s);
	assert_non_null(r);

	/* the first read asks for its own block only */
	prefetch_at(r, 0, 4096);
	assert_int_equal(store->ngets, 1);
	check_get(0, "p/big", 0, MIB, 1);
	assert_int_equal(store->gets[0].flags & STORE_GET_WHOLE, 0);
	/* the full window: whole runs of 8 blocks, then it waits while half
	 * a window is still ahead (frontier 25 MiB, a run would end past
	 * 32 MiB) */
	r->window = 32 * MIB;
	prefetch_at(r, 0, r->window);
	assert_int_equal(store->ngets, 4);
	check_get(1, "p/big", 1 * MIB, 8 * MIB, 8);
	check_get(2, "p/big", 9 * MIB, 8 * MIB, 8);
	check_get(3, "p/big", 17 * MIB, 8 * MIB, 8);
	prefetch_at(r, 1 * MIB, r->window);
	assert_int_equal(store->ngets, 5);
	check_get(4, "p/big", 25 * MIB, 8 * MIB, 8);
	prefetch_at(r, 8 * MIB, r->window);
	assert_int_equal(store->ngets, 5);
	prefetch_at(r, 9 * MIB, r->window);
	assert_int_equal(store->ngets, 6);
	check_get(5, "p/big", 33 * MIB, 8 * MIB, 8);

	/* a reader with nothing ahead (and a position inside a block, so the
	 * frontier starts behind it) takes a short run at the window edge */
	r2 = reader_with_window(s, 6 * MIB);
	prefetch_at(r2, 50 * MIB + 4096, r2->window);
	assert_int_equal(store->ngets, 7);
	check_get(6, "p/big", 50 * MIB, 7 * MIB, 7);
	/* a run stops before a block that is already cached or coming */
	r3 = reader_with_window(s, 6 * MIB);
	prefetch_at(r3, 46 * MIB, r3->window);
	assert_int_equal(store->ngets, 8);
	check_get(7, "p/big", 46 * MIB, 4 * MIB, 4);

	/* a run ends with its object; small objects get one GET each, of
	 * the whole object (no Range) */
	prefetch_at(r, 90 * MIB, r->window);
	assert_int_equal(store->ngets, 13);
	check_get(8, "p/big", 90 * MIB, 8 * MIB, 8);
	check_get(9, "p/big", 98 * MIB, 2 * MIB, 2);
	check_get(10, "p/small", 0, 8 * MIB, 8);
	check_get(11, "p/small", 8 * MIB, 2 * MIB + 5, 3);
	check_get(12, "p/tiny", 0, 100, 1);
	assert_true(store->gets[12].flags & STORE_GET_WHOLE);
	assert_int_equal(store->gets[10].flags & STORE_GET_WHOLE, 0);

	/* blocks of a run become readable one by one; a failure takes only
	 * the rest */
	store->gets[10].buffer_done(store->gets[10].arg, 0);
	store->gets[10].buffer_done(store->gets[10].arg, 1);
	b = lookup_block(c, s, 1, 1);
	assert_non_null(b);
	assert_int_equal(b->state, BLOCK_READY);
	b = lookup_block(c, s, 1, 2);
	assert_non_null(b);
	assert_int_equal(b->state, BLOCK_FETCHING);
	memset(&e, 0, sizeof(e));
	e.err = EIO;
	store->gets[10].done(store->gets[10].arg, &e);
	store->gets[10] = store->gets[--store->ngets]; /* ended */
	assert_non_null(lookup_block(c, s, 1, 0));
	assert_null(lookup_block(c, s, 1, 2));
	assert_null(lookup_block(c, s, 1, 7));

	cancel_gets();
	cache_reader_destroy(r3);
	cache_reader_destroy(r2);
	cache_reader_destroy(r);
	cache_stream_destroy(s);
	cache_destroy(c);
}

/* Puts a ready block holding the pattern into the cache. */
static void put_block(struct cache_stream *s, size_t seg_idx, uint64_t index)
{
	struct cache *c = s->cache;
	const struct cache_segment *seg = s->segs[seg_idx];
	uint64_t bs = c->conf.block_size;
	struct cache_block *b;
	struct test_get *g;

	pthread_mutex_lock(&c->lock);
	b = cache_block_create(c, seg->obj, index,
			       cache_block_len(c, seg->obj, index),
			       CACHE_ADMIT_DEMAND);
	pthread_mutex_unlock(&c->lock);
	assert_non_null(b);
	/* fetched as a reader does; the test answers for the store */
	pthread_mutex_lock(&c->lock);
	cache_block_fetch(&b, 1, false);
	pthread_mutex_unlock(&c->lock);
	assert_int_equal(store->ngets, 1);
	g = &store->gets[0];
	assert_ptr_equal(g->buffers[0].dest, b->data);
	for (size_t k = 0; k < b->len; k++)
		b->data[k] = (char)pattern(seg->start + index * bs + k);
	g->buffer_done(g->arg, 0);
	g->finished = true;
	g->done(g->arg, NULL);
	store->ngets = 0;
}

static void check_view(const struct cache_view *v, uint64_t offset, size_t size)
{
	size_t done = 0;

	assert_int_equal(v->bytes, size);
	for (int i = 0; i < v->count; i++) {
		const unsigned char *p = v->iov[i].iov_base;

		for (size_t k = 0; k < v->iov[i].iov_len; k++)
			assert_int_equal(p[k], pattern(offset + done + k));
		done += v->iov[i].iov_len;
	}
	assert_int_equal(done, size);
}

static void test_read_across_objects(void **state)
{
	const uint64_t bs = 64 * KIB;
	struct cache *c = new_cache(64 * MIB, bs);
	struct cache_stream *s = mixed_stream(c, true);
	struct cache_reader *r = cache_reader_create(s);
	struct cache_view *v = calloc(1, sizeof(*v));
	uint64_t off = 5 * GIB - 100;
	struct cache_stats st;

	assert_non_null(r);
	assert_non_null(v);
	/* every block the reads and their prefetch windows touch: the end
	 * of p/a (5 GiB = 81920 blocks), p/b, the start of p/c */
	put_block(s, 0, 81918);
	put_block(s, 0, 81919);
	put_block(s, 1, 0);
	for (uint64_t i = 0; i < 8; i++)
		put_block(s, 2, i);
	/* 100 bytes of p/a, 1 of p/b, 199 of p/c */
	assert_int_equal(cache_reader_read(r, off, 300, v), 0);
	check_view(v, off, 300);
	assert_int_equal(v->count, 3);
	assert_int_equal(v->iov[0].iov_len, 100);
	assert_int_equal(v->iov[1].iov_len, 1);
	assert_int_equal(v->iov[2].iov_len, 199);
	assert_ptr_equal(v->blocks[0], lookup_block(c, s, 0, 81919));
	assert_int_equal(cache_reader_position(r), 5 * GIB + 200);
	assert_int_equal(r->seg_idx, 2);
	/* blocks read to their end are consumed, the current one is not */
	assert_true(v->blocks[0]->consumed);
	assert_true(v->blocks[1]->consumed);
	assert_false(v->blocks[2]->consumed);
	cache_view_release(c, v);
	/* sequential: the rest of p/c's block 0 and part of block 1 */
	off = 5 * GIB + 200;
	assert_int_equal(cache_reader_read(r, off, bs, v), 0);
	check_view(v, off, bs);
	assert_int_equal(v->count, 2);
	assert_int_equal(v->iov[0].iov_len, bs - 199);
	cache_view_release(c, v);
	cache_get_stats(c, &st);
	assert_int_equal(st.seeks, 1);
	assert_int_equal(st.misses, 0);
	assert_int_equal(st.hits, 5);
	check_no_requests(); /* the window found everything cached */
	free(v);
	cache_reader_destroy(r);
	cache_stream_destroy(s);
	cache_destroy(c);
}

/* With max_ahead_objects, prefetch stops that many objects past the
 * reader's, however large the byte window. */
static void test_prefetch_ahead_objects(void **state)
{
	struct cache *c = new_conf_cache(256 * MIB, MIB, 32 * MIB, 3);
	struct cache_stream *s;
	struct cache_reader *r;
	char key[16];

	s = cache_stream_create(c, "b", "p/");
	assert_non_null(s);
	for (int i = 0; i < 10; i++) {
		snprintf(key, sizeof(key), "p/%d", i);
		append(s, key, NULL, 100 * KIB);
	}
	r = reader_with_window(s, 32 * MIB);
	prefetch_at(r, 0, r->window);
	assert_int_equal(store->ngets, 3);
	check_get(0, "p/0", 0, 100 * KIB, 1);
	check_get(2, "p/2", 0, 100 * KIB, 1);
	/* into object 1: one more */
	prefetch_at(r, 150 * KIB, r->window);
	assert_int_equal(store->ngets, 4);
	check_get(3, "p/3", 0, 100 * KIB, 1);
	/* into object 6: objects 6 to 8, the frontier follows the reader */
	prefetch_at(r, 650 * KIB, r->window);
	assert_int_equal(store->ngets, 7);
	check_get(4, "p/6", 0, 100 * KIB, 1);
	check_get(6, "p/8", 0, 100 * KIB, 1);
	cancel_gets();
	cache_reader_destroy(r);
	cache_stream_destroy(s);
	cache_destroy(c);
}

/* ---- the window of a read that must wait ---- */

struct read_job {
	struct cache_reader *r;
	uint64_t offset;
	size_t size;
	struct cache_view view;
	int rc;
};

static void *read_job_run(void *arg)
{
	struct read_job *j = arg;

	j->rc = cache_reader_read(j->r, j->offset, j->size, &j->view);
	return NULL;
}

/* Ends recorded GET i (its one buffer full), then the read job j that
 * waits for it, on thread t: 4096 bytes read, its view released. */
static void finish_read(struct cache *c, struct read_job *j, pthread_t t,
			unsigned i)
{
	store->gets[i].buffer_done(store->gets[i].arg, 0);
	store->gets[i].done(store->gets[i].arg, NULL);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(j->rc, 0);
	assert_int_equal(j->view.bytes, 4096);
	cache_view_release(c, &j->view);
}

/* Waits until at least n GETs are recorded, then for the cache's lock.
 * The reader issues all of a read's GETs under the cache lock and lets it
 * go only to wait for data, so once the count has moved and the lock is
 * free, that read has issued everything it will. */
static void wait_gets(struct cache *c, unsigned n)
{
	assert_int_equal(test_store_wait_made(store, TEST_GET, n), 0);
	pthread_mutex_lock(&c->lock);
	pthread_mutex_unlock(&c->lock);
}

static void check_urgent(unsigned i, bool urgent)
{
	assert_int_equal((store->gets[i].flags & STORE_GET_URGENT) != 0,
			 urgent);
}

/*
 * A new reader's window is max_window from the start, and a read that has
 * to wait asks for its own block first (urgent) and for the rest of the
 * window before it waits.  After a seek there is no window: the read
 * takes its own piece (128 KiB of the 1 MiB block), urgent, and nothing
 * more; the next read in sequence opens the window at one block, which
 * goes on in pieces to the end of the block the pieces began (one GET).
 */
static void test_wait_opens_window(void **state)
{
	struct cache_stream *s = window_stream();
	struct cache *c = s->cache;
	struct read_job j;
	pthread_t t;
	unsigned first;

	s->complete = true; /* no listing requests */
	memset(&j, 0, sizeof(j));
	j.r = cache_reader_create(s);
	assert_non_null(j.r);
	assert_int_equal(j.r->window, 32 * MIB);

	/* the first read, before any data: its own block, urgent, then the
	 * whole window in runs of 8 blocks (as test_prefetch_runs) */
	j.size = 4096;
	assert_int_equal(pthread_create(&t, NULL, read_job_run, &j), 0);
	wait_gets(c, 4);
	pthread_mutex_lock(&c->lock);
	assert_int_equal(store->ngets, 4);
	pthread_mutex_unlock(&c->lock);
	check_get(0, "p/big", 0, MIB, 1);
	check_urgent(0, true);
	check_get(1, "p/big", 1 * MIB, 8 * MIB, 8);
	check_get(2, "p/big", 9 * MIB, 8 * MIB, 8);
	check_get(3, "p/big", 17 * MIB, 8 * MIB, 8);
	check_urgent(1, false);
	check_urgent(3, false);
	finish_read(c, &j, t, 0);
	assert_int_equal(j.r->window, 32 * MIB);

	/* a seek: its own piece, urgent, and no window */
	first = store->ngets;
	j.offset = 60 * MIB;
	assert_int_equal(pthread_create(&t, NULL, read_job_run, &j), 0);
	wait_gets(c, first + 1);
	check_get(first, "p/big", 60 * MIB, 128 * KIB, 1);
	check_urgent(first, true);
	finish_read(c, &j, t, first);
	assert_int_equal(store->ngets, first + 1);
	assert_int_equal(j.r->window, 0);

	/* the next read in sequence: from the piece, then a window of one
	 * block, the rest of this block in pieces */
	j.offset = 60 * MIB + 4096;
	assert_int_equal(pthread_create(&t, NULL, read_job_run, &j), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(j.rc, 0);
	assert_int_equal(j.view.bytes, 4096);
	cache_view_release(c, &j.view);
	assert_int_equal(j.r->window, MIB);
	wait_gets(c, first + 2);
	assert_int_equal(store->ngets, first + 2);
	check_get(first + 1, "p/big", 60 * MIB + 128 * KIB, 896 * KIB, 7);
	check_urgent(first + 1, false);

	/* the two GETs that ended leave the list; the engine ends the rest */
	store->gets[first] = store->gets[--store->ngets];
	store->gets[0] = store->gets[--store->ngets];
	cancel_gets();
	cache_reader_destroy(j.r);
	cache_stream_destroy(s);
	cache_destroy(c);
}

/*
 * A read that waits for the listing asks for the rest of its window as
 * soon as the page comes, not for one object at a time as its loop
 * reaches them: the first page of small objects is 20 GETs at once.
 */
static void test_listing_wait_prefetches(void **state)
{
	struct cache *c = new_conf_cache(256 * MIB, MIB, 32 * MIB, 0);
	struct cache_stream *s = cache_stream_create(c, "b", "p/");
	struct read_job j;
	pthread_t t;
	unsigned first = UINT_MAX;

	assert_non_null(s);
	s->next_token = strdup("t1");
	assert_non_null(s->next_token);
	memset(&j, 0, sizeof(j));
	j.r = cache_reader_create(s);
	assert_non_null(j.r);
	j.size = 4096;
	assert_int_equal(pthread_create(&t, NULL, read_job_run, &j), 0);
	assert_int_equal(test_store_wait_made(store, TEST_LIST, 1), 0);
	assert_int_equal(store->ngets, 0);
	answer_list(0, "o", 20, NULL);
	/* every object of the page, while the read still waits for its
	 * first */
	wait_gets(c, 20);
	pthread_mutex_lock(&c->lock);
	assert_int_equal(store->ngets, 20);
	pthread_mutex_unlock(&c->lock);
	for (unsigned i = 0; i < store->ngets; i++)
		if (!strcmp(store->gets[i].key, "p/o-0000"))
			first = i;
	assert_true(first < store->ngets);
	assert_int_equal(store->gets[first].offset, 0);
	finish_read(c, &j, t, first);
	store->gets[first] = store->gets[--store->ngets];
	cancel_gets();
	store->nlists = 0;
	cache_reader_destroy(j.r);
	cache_stream_destroy(s);
	cache_destroy(c);
}

/*
 * Pieces: the piece size a block size has, and what a fetch at an offset
 * makes (fetch_unit()): the block, unless the reader has no window; then
 * the piece, unless the fetch wants the whole block anyway.
 */
static void test_piece_sizing(void **state)
{
	struct cache *c = new_cache(256 * MIB, MIB);
	struct cache *tiny = new_cache(256 * MIB, 64 * KIB);
	struct cache_object *o;
	const uint64_t P = CACHE_PIECE_BIT;

	(void)state;
	assert_int_equal(cache_piece_size(8 * MIB), 128 * KIB);
	assert_int_equal(cache_piece_size(MIB), 128 * KIB);
	assert_int_equal(cache_piece_size(GIB), 128 * KIB);
	assert_int_equal(cache_piece_size(3 * MIB), 128 * KIB);
	assert_int_equal(cache_piece_size(256 * KIB), 128 * KIB);
	assert_int_equal(cache_piece_size(192 * KIB), 64 * KIB);
	/* a block no larger than a piece, or no piece that divides it */
	assert_int_equal(cache_piece_size(128 * KIB), 0);
	assert_int_equal(cache_piece_size(64 * KIB), 0);
	assert_int_equal(cache_piece_size(5000000), 0);
	assert_int_equal(c->piece_size, 128 * KIB);
	assert_int_equal(tiny->piece_size, 0);

	cache_lock(c);
	o = cache_object_intern(c, "b", "k", NULL, 10 * MIB + 100);
	/* a reader with a window: blocks */
	assert_int_equal(fetch_unit(c, o, 5 * MIB + 7, 5 * MIB + 8, false), 5);
	/* none: the piece of a small read, two pieces apart */
	assert_int_equal(fetch_unit(c, o, 5 * MIB + 7, 5 * MIB + 8, true),
			 P | 40);
	assert_int_equal(fetch_unit(c, o, 5 * MIB + 128 * KIB, 6 * MIB, true),
			 P | 41);
	/* the whole block wanted from its start: the block */
	assert_int_equal(fetch_unit(c, o, 5 * MIB, 6 * MIB, true), 5);
	assert_int_equal(fetch_unit(c, o, 5 * MIB, 6 * MIB - 1, true), P | 40);
	/* the object's last block (100 bytes) and its last piece */
	assert_int_equal(fetch_unit(c, o, 10 * MIB, 10 * MIB + 100, true), 10);
	assert_int_equal(fetch_unit(c, o, 10 * MIB, 10 * MIB + 1, true),
			 P | 80);
	assert_int_equal(cache_block_len(c, o, P | 80), 100);
	assert_int_equal(cache_block_len(c, o, P | 79), 128 * KIB);
	assert_int_equal(cache_block_offset(c, P | 79), 79 * 128 * KIB);
	assert_int_equal(cache_block_len(c, o, 9), MIB);
	cache_object_unref(c, o);
	cache_unlock(c);

	/* blocks too small for pieces: always the block */
	cache_lock(tiny);
	o = cache_object_intern(tiny, "b", "k", NULL, 10 * MIB);
	assert_int_equal(fetch_unit(tiny, o, 5 * MIB + 7, 5 * MIB + 8, true),
			 (5 * MIB + 7) / (64 * KIB));
	cache_object_unref(tiny, o);
	cache_unlock(tiny);
	cache_destroy(tiny);
	cache_destroy(c);
}

/* Ends recorded GET i: every buffer filled, then done. */
static void finish_get(unsigned i)
{
	for (unsigned k = 0; k < store->gets[i].nbuffers; k++)
		store->gets[i].buffer_done(store->gets[i].arg, k);
	store->gets[i].done(store->gets[i].arg, NULL);
	store->gets[i].finished = true;
}

/* A read of a random reader on its own thread, its GETs played: the
 * GETs it made from index first on, n of them, are checked by the caller
 * and then finished. */
static void random_read(struct read_job *j, uint64_t offset, size_t size,
			unsigned first, unsigned n)
{
	struct cache *c = j->r->stream->cache;
	pthread_t t;

	j->offset = offset;
	j->size = size;
	assert_int_equal(pthread_create(&t, NULL, read_job_run, j), 0);
	wait_gets(c, first + n);
	for (unsigned i = first; i < first + n; i++)
		finish_get(i);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(j->rc, 0);
	assert_int_equal(j->view.bytes, size);
	cache_view_release(c, &j->view);
}

/*
 * A random reader that jumps about gets a GET of a piece a read (two
 * where the read straddles pieces), urgent, and nothing ahead; a read
 * that goes on where the last ended opens the window at one block: the
 * rest of the block in pieces, one GET; a read that covers a whole block
 * takes the block.  Pieces count against the budget as blocks do.
 */
static void test_random_reader_pieces(void **state)
{
	struct cache_stream *s = window_stream();
	struct cache *c = s->cache;
	struct read_job j;
	uint64_t used;

	(void)state;
	s->complete = true; /* no listing requests */
	memset(&j, 0, sizeof(j));
	j.r = cache_reader_create_random(s);
	assert_non_null(j.r);

	random_read(&j, 10 * MIB + 5000, 4096, 0, 1);
	check_get(0, "p/big", 10 * MIB, 128 * KIB, 1);
	check_urgent(0, true);
	assert_true(store->gets[0].flags & STORE_GET_PIECE);
	assert_int_equal(j.r->window, 0);
	cache_lock(c);
	used = c->stats.used_bytes;
	cache_unlock(c);
	assert_true(used >= 128 * KIB && used < 128 * KIB + 4096);

	/* across a piece boundary: two pieces, one GET */
	random_read(&j, 20 * MIB + 128 * KIB - 100, 4096, 1, 1);
	check_get(1, "p/big", 20 * MIB, 256 * KIB, 2);
	assert_int_equal(j.r->window, 0);

	/* far off again, in a piece already in memory: no request */
	random_read(&j, 10 * MIB + 100000, 100, 2, 0);
	assert_int_equal(store->ngets, 2);

	/* a whole block: the block, no pieces */
	random_read(&j, 30 * MIB, MIB, 2, 1);
	check_get(2, "p/big", 30 * MIB, MIB, 1);
	assert_false(store->gets[2].flags & STORE_GET_PIECE);

	/* on where that ended: in sequence, the window opens at one block
	 * (the read itself still a piece) and the frontier, inside block
	 * 31, goes on in pieces to its end, one GET */
	random_read(&j, 31 * MIB, 4096, 3, 1);
	check_get(3, "p/big", 31 * MIB, 128 * KIB, 1);
	assert_int_equal(j.r->window, MIB);
	wait_gets(c, 5);
	check_get(4, "p/big", 31 * MIB + 128 * KIB, 896 * KIB, 7);
	check_urgent(4, false);
	assert_int_equal(store->ngets, 5);

	cache_reader_destroy(j.r);
	cancel_gets();
	cache_stream_destroy(s);
	cache_destroy(c);
}

/* ---- plan streams: segments that are object ranges or literal bytes ---- */

/* An interned object of bucket "b" (check_get's), with a reference. */
static struct cache_object *object(struct cache *c, const char *key,
				   uint64_t size)
{
	struct cache_object *o = cache_object_get(c, "b", key, "\"e\"", size);

	assert_non_null(o);
	return o;
}

static void put_object(struct cache *c, struct cache_object *o)
{
	cache_object_put(c, o);
}

static int add_range(struct cache_stream *s, struct cache_object *o,
		     uint64_t offset, uint64_t len)
{
	return cache_stream_add_object(s, o, offset, len);
}

static int add_lit(struct cache_stream *s, const void *bytes, size_t len)
{
	return cache_stream_add_bytes(s, bytes, len);
}

static void end_stream(struct cache_stream *s, int err)
{
	cache_stream_end(s, err);
}

static void check_seg(const struct cache_stream *s, size_t i,
		      const struct cache_object *o, uint64_t obj_offset,
		      uint64_t size, uint64_t start, size_t obj_seq)
{
	assert_true(i < s->count);
	assert_ptr_equal(s->segs[i]->obj, o);
	assert_int_equal(s->segs[i]->size, size);
	assert_int_equal(s->segs[i]->start, start);
	assert_int_equal(s->segs[i]->obj_seq, obj_seq);
	if (o) {
		assert_int_equal(s->segs[i]->obj_offset, obj_offset);
		assert_null(s->segs[i]->bytes);
	} else if (size) {
		assert_non_null(s->segs[i]->bytes);
	}
}

static void test_plan_segments(void **state)
{
	struct cache *c = new_cache(64 * MIB, MIB);
	struct cache_object *a = object(c, "p/a", 10 * MIB);
	struct cache_object *big = object(c, "p/big", CACHE_OBJECT_SIZE_MAX);
	struct cache_stream *s = cache_stream_create_plan(c, NULL, NULL);
	char hdr[4] = "HDR";
	uint64_t size = 1;

	assert_non_null(s);
	assert_null(s->bucket);
	assert_int_equal(add_lit(s, hdr, 3), 0);
	hdr[0] = 'X'; /* the stream keeps a copy */
	assert_int_equal(add_range(s, a, 0, 2 * MIB + MIB / 2), 0);
	assert_int_equal(add_range(s, a, 2 * MIB + MIB / 2, 3 * MIB), 0);
	/* empty additions are skipped */
	assert_int_equal(add_lit(s, "", 0), 0);
	assert_int_equal(add_range(s, a, 5, 0), 0);
	assert_int_equal(add_lit(s, "tail", 4), 0);
	assert_int_equal(add_range(s, a, 7 * MIB + MIB / 4, 3 * MIB - MIB / 4),
			 0);
	/* ranges past the object are refused */
	assert_int_equal(add_range(s, a, 0, 10 * MIB + 1), EINVAL);
	assert_int_equal(add_range(s, a, 10 * MIB, 1), EINVAL);
	assert_int_equal(add_range(s, a, 10 * MIB + 1, 1), EINVAL);
	assert_int_equal(add_range(s, a, UINT64_MAX, 2), EINVAL);
	assert_int_equal(add_range(s, a, 1, UINT64_MAX), EINVAL);

	assert_int_equal(cache_stream_count(s), 5);
	check_seg(s, 0, NULL, 0, 3, 0, 0);
	assert_memory_equal(s->segs[0]->bytes, "HDR", 3);
	check_seg(s, 1, a, 0, 2 * MIB + MIB / 2, 3, 0);
	check_seg(s, 2, a, 2 * MIB + MIB / 2, 3 * MIB, 3 + 2 * MIB + MIB / 2,
		  1);
	check_seg(s, 3, NULL, 0, 4, 3 + 5 * MIB + MIB / 2, 2);
	assert_memory_equal(s->segs[3]->bytes, "tail", 4);
	check_seg(s, 4, a, 7 * MIB + MIB / 4, 3 * MIB - MIB / 4,
		  7 + 5 * MIB + MIB / 2, 2);
	assert_int_equal(s->nobject_segs, 3);
	assert_int_equal(s->listed_bytes, 7 + 8 * MIB + MIB / 4);
	assert_int_equal(a->refs, 4); /* ours and three segments' */
	assert_int_equal(find(s, 2), 0);
	assert_int_equal(find(s, 3), 1);
	assert_int_equal(find(s, 3 + 5 * MIB + MIB / 2 + 3), 3);
	assert_int_equal(find(s, 7 + 5 * MIB + MIB / 2), 4);
	/* not ended: the size is not known */
	assert_false(cache_stream_size(s, &size));
	assert_int_equal(size, 0);
	/* the stream's offsets cannot wrap (here: as after a million objects
	 * of S3's largest size) */
	pthread_mutex_lock(&c->lock);
	s->listed_bytes = (uint64_t)INT64_MAX - CACHE_OBJECT_SIZE_MAX + 1;
	pthread_mutex_unlock(&c->lock);
	assert_int_equal(add_range(s, big, 0, CACHE_OBJECT_SIZE_MAX),
			 EOVERFLOW);
	pthread_mutex_lock(&c->lock);
	s->listed_bytes -= 4;
	pthread_mutex_unlock(&c->lock);
	assert_int_equal(add_range(s, big, 0, CACHE_OBJECT_SIZE_MAX), 0);
	assert_int_equal(add_lit(s, "abcd", 4), EOVERFLOW);
	assert_int_equal(add_lit(s, "abc", 3), 0);
	assert_int_equal(s->listed_bytes, (uint64_t)INT64_MAX);
	assert_int_equal(add_lit(s, "a", 1), EOVERFLOW);
	assert_int_equal(add_range(s, a, 0, 1), EOVERFLOW);
	assert_int_equal(add_lit(s, "abc", (size_t)-1), EOVERFLOW);
	assert_int_equal(s->count, 7);
	assert_int_equal(s->nobject_segs, 4);
	end_stream(s, 0);
	assert_true(cache_stream_size(s, &size));
	assert_int_equal(size, (uint64_t)INT64_MAX);
	/* the segments' references go with the stream */
	cache_stream_destroy(s);
	assert_int_equal(a->refs, 1);
	assert_int_equal(big->refs, 1);
	put_object(c, a);
	put_object(c, big);
	assert_int_equal(c->nobjects, 0);
	check_no_requests();
	cache_destroy(c);
}

/* Reads up to n bytes of r at pos into out (the view released after);
 * the bytes read, or -errno. */
static long read_into(struct cache_reader *r, uint64_t pos, size_t n, char *out)
{
	struct cache_view v;
	size_t got = 0;
	int rc = cache_reader_read(r, pos, n, &v);

	for (int i = 0; !rc && i < v.count; i++) {
		memcpy(out + got, v.iov[i].iov_base, v.iov[i].iov_len);
		got += v.iov[i].iov_len;
	}
	cache_view_release(r->stream->cache, &v);
	return rc ? -rc : (long)got;
}

/*
 * A trimmed plan stream (cache_stream_set_trim) drops the segments every
 * reader has passed, from where each reader's latest read began (a view
 * may point into literal segments until the next read): a view held by
 * one reader survives another's reads far ahead; a new reader, and a read
 * back into what was dropped (also when every segment was dropped), fail
 * with ESTALE; reads ahead go on.
 */
static void test_plan_trim(void **state)
{
	struct cache *c = new_cache(64 * MIB, MIB);
	struct cache_stream *s = cache_stream_create_plan(c, NULL, NULL);
	struct cache_reader *fast, *slow;
	struct cache_view held;
	char buf[65536], want[8];
	const size_t n = 3000;
	uint64_t pos = 0, before;

	assert_non_null(s);
	for (size_t i = 0; i < n; i++) {
		snprintf(want, sizeof(want), "%05zu", i);
		assert_int_equal(add_lit(s, want, 5), 0);
	}
	end_stream(s, 0);
	cache_stream_set_trim(s);
	before = cache_stream_memory(s);
	fast = cache_reader_create(s);
	slow = cache_reader_create(s);
	assert_non_null(fast);
	assert_non_null(slow);

	/* the slow reader holds a view of segments 10-11 ... */
	assert_int_equal(cache_reader_read(slow, 0, 50, &held), 0);
	assert_int_equal(held.bytes, 50);
	/* ... while the fast one reads to 2,000 segments in */
	while (pos < 2000 * 5) {
		long got = read_into(fast, pos, 1000, buf);

		assert_true(got > 0);
		pos += (uint64_t)got;
	}
	assert_int_equal(s->base, 0); /* held back by the slow reader */
	assert_memory_equal(held.iov[0].iov_base, "00000", 5);
	cache_view_release(c, &held);
	/* the slow one moves on (a view holds 256 segments at most): what
	 * both passed goes */
	for (uint64_t at = 50; at < 7050;) {
		long got = read_into(slow, at, 7050 - at, buf);

		assert_true(got > 0);
		at += (uint64_t)got;
	}
	assert_int_equal(read_into(fast, pos, 1000, buf), 1000);
	pos += 1000;
	assert_true(s->base >= 1000 && s->base <= 1410);
	assert_true(cache_stream_memory(s) < before);
	/* no new reader, no read back */
	errno = 0;
	assert_null(cache_reader_create(s));
	assert_int_equal(errno, ESTALE);
	assert_int_equal(read_into(slow, 0, 5, buf), -ESTALE);
	/* the fast reader reads on to the end; then everything it and the
	 * slow one passed is dropped */
	cache_reader_destroy(slow);
	for (;;) {
		long got = read_into(fast, pos, 4096, buf);

		assert_true(got >= 0);
		if (!got)
			break;
		pos += (uint64_t)got;
	}
	assert_int_equal(pos, n * 5);
	assert_int_equal(read_into(fast, pos, 1, buf), 0); /* the end */
	assert_true(s->base >= n - 300);
	assert_int_equal(read_into(fast, 5, 5, buf), -ESTALE);
	cache_reader_destroy(fast);
	cache_stream_destroy(s);
	check_no_requests();
	cache_destroy(c);
}

/*
 * Prefetching a plan: runs of blocks of the object a segment is a range
 * of, at the object's own offsets (a range that starts mid-object asks
 * from the block holding its first byte), never a block past a range's
 * end, a block two ranges share asked for once, literal bytes nothing.
 */
static void test_plan_prefetch_ranges(void **state)
{
	struct cache *c = new_conf_cache(256 * MIB, MIB, 32 * MIB, 0);
	struct cache_object *a = object(c, "p/a", 10 * MIB);
	struct cache_object *b = object(c, "p/b", 100);
	struct cache_stream *s = cache_stream_create_plan(c, NULL, NULL);
	const uint64_t split = 2 * MIB + MIB / 2 + 17;
	const uint64_t mid = 7 * MIB + MIB / 4;
	uint64_t seg4;
	struct cache_reader *r;

	assert_non_null(s);
	assert_int_equal(add_lit(s, "HDR", 3), 0);
	assert_int_equal(add_range(s, a, 0, split), 0);
	assert_int_equal(add_range(s, a, split, 5 * MIB - split), 0);
	assert_int_equal(add_lit(s, "12345", 5), 0);
	assert_int_equal(add_range(s, a, mid, 9 * MIB - mid), 0);
	assert_int_equal(add_range(s, b, 0, 100), 0);
	end_stream(s, 0);
	seg4 = s->segs[4]->start;
	assert_int_equal(seg4, 3 + 5 * MIB + 5);

	r = reader_with_window(s, 32 * MIB);
	prefetch_at(r, 0, r->window);
	assert_int_equal(store->ngets, 4);
	/* [0, split): blocks 0-2, the run ends with the range */
	check_get(0, "p/a", 0, 3 * MIB, 3);
	/* [split, 5 MiB): block 2 is coming already */
	check_get(1, "p/a", 3 * MIB, 2 * MIB, 2);
	/* [7.25 MiB, 9 MiB): blocks 7 and 8, not 9 */
	check_get(2, "p/a", 7 * MIB, 2 * MIB, 2);
	assert_int_equal(store->gets[2].flags & STORE_GET_WHOLE, 0);
	check_get(3, "p/b", 0, 100, 1);
	assert_true(store->gets[3].flags & STORE_GET_WHOLE);
	assert_int_equal(r->prefetch_seg, s->count);
	assert_int_equal(r->prefetch_offset, s->listed_bytes);
	/* every block once: a lookup finds each */
	for (uint64_t i = 0; i < 10; i++)
		assert_int_equal(lookup_block(c, s, 1, i) != NULL,
				 i < 5 || i == 7 || i == 8);
	cancel_gets();
	cache_reader_destroy(r);

	/* the frontier at a position inside the range that starts mid-object:
	 * the block holding that object byte, starting where that block's
	 * bytes start in the stream (or the range's start, for its first) */
	r = cache_reader_create(s);
	assert_non_null(r);
	check_frontier(r, seg4, 4, 7, seg4);
	check_frontier(r, seg4 + MIB * 3 / 4 - 1, 4, 7, seg4);
	check_frontier(r, seg4 + MIB * 3 / 4, 4, 8, seg4 + MIB * 3 / 4);
	check_frontier(r, seg4 + MIB, 4, 8, seg4 + MIB * 3 / 4);
	/* the second half of the split: block 2 starts before the range */
	check_frontier(r, 3 + split, 2, 2, 3 + split);
	check_frontier(r, 3 + 3 * MIB, 2, 3, 3 + 3 * MIB);
	/* literal bytes: no block */
	check_frontier(r, 1, 0, 0, 0);
	check_frontier(r, 3 + 5 * MIB + 2, 3, 0, 3 + 5 * MIB);
	cache_reader_destroy(r);
	cache_stream_destroy(s);
	put_object(c, a);
	put_object(c, b);
	check_no_requests();
	cache_destroy(c);
}

/* max_ahead_objects counts object ranges; literal bytes between them (a
 * record header per object) do not use it up. */
static void test_ahead_objects_skip_literals(void **state)
{
	struct cache *c = new_conf_cache(256 * MIB, MIB, 32 * MIB, 3);
	struct cache_stream *s = cache_stream_create_plan(c, NULL, NULL);
	struct cache_object *o[10];
	struct cache_reader *r;
	char key[16];

	assert_non_null(s);
	for (int i = 0; i < 10; i++) {
		snprintf(key, sizeof(key), "p/%d", i);
		o[i] = object(c, key, 100 * KIB);
		assert_int_equal(add_lit(s, "HDR", 3), 0);
		assert_int_equal(add_range(s, o[i], 0, 100 * KIB), 0);
	}
	end_stream(s, 0);
	for (int i = 0; i < 20; i++)
		assert_int_equal(s->segs[i]->obj_seq, (size_t)i / 2);
	r = reader_with_window(s, 32 * MIB);
	prefetch_at(r, 0, r->window);
	assert_int_equal(store->ngets, 3);
	check_get(0, "p/0", 0, 100 * KIB, 1);
	check_get(1, "p/1", 0, 100 * KIB, 1);
	check_get(2, "p/2", 0, 100 * KIB, 1);
	/* in the header before object 1: objects 1 to 3 */
	prefetch_at(r, 100 * KIB + 4, r->window);
	assert_int_equal(store->ngets, 4);
	check_get(3, "p/3", 0, 100 * KIB, 1);
	/* in object 6: objects 6 to 8 */
	prefetch_at(r, 6 * (100 * KIB + 3) + 50, r->window);
	assert_int_equal(store->ngets, 7);
	check_get(4, "p/6", 0, 100 * KIB, 1);
	check_get(6, "p/8", 0, 100 * KIB, 1);
	cancel_gets();
	cache_reader_destroy(r);
	cache_stream_destroy(s);
	for (int i = 0; i < 10; i++)
		put_object(c, o[i]);
	cache_destroy(c);
}

/*
 * A reader of [offset, end) only: it starts at offset, its window is the
 * one asked for (capped by the cache's), its prefetch never asks for a
 * block past the one holding end - 1, and a read at end returns nothing
 * without asking the store.
 */
static void test_reader_at_bounds(void **state)
{
	struct cache *c = new_conf_cache(256 * MIB, MIB, 32 * MIB, 0);
	struct cache_object *a = object(c, "p/a", 20 * MIB);
	struct cache_object *b = object(c, "p/b", 20 * MIB);
	struct cache_stream *s = cache_stream_create_plan(c, NULL, NULL);
	struct cache_view *v = calloc(1, sizeof(*v));
	struct cache_reader *r;

	assert_non_null(s);
	assert_non_null(v);
	assert_int_equal(add_range(s, a, 0, 20 * MIB), 0);
	assert_int_equal(add_lit(s, "HDR", 3), 0);
	assert_int_equal(add_range(s, b, 0, 20 * MIB), 0);

	/* bytes 3 MiB + 100 to 6 MiB + 7 of a: blocks 3 to 6 */
	r = cache_reader_create_at(s, 3 * MIB + 100, 6 * MIB + 7, 0);
	assert_non_null(r);
	assert_int_equal(cache_reader_position(r), 3 * MIB + 100);
	assert_int_equal(r->window, 32 * MIB);
	assert_int_equal(r->max_window, 32 * MIB);
	assert_int_equal(r->prefetch_block, 3);
	pthread_mutex_lock(&c->lock);
	prefetch(r, r->window, false, false);
	pthread_mutex_unlock(&c->lock);
	assert_int_equal(store->ngets, 1);
	check_get(0, "p/a", 3 * MIB, 4 * MIB, 4);
	/* at its end: no bytes, no request, wherever the stream goes on */
	assert_int_equal(cache_reader_read(r, 6 * MIB + 7, 4096, v), 0);
	assert_int_equal(v->bytes, 0);
	assert_int_equal(store->ngets, 1);
	assert_int_equal(cache_reader_read(r, 6 * MIB + 7 + 4096, 4096, v), 0);
	assert_int_equal(v->bytes, 0);
	cache_view_release(c, v);
	assert_int_equal(store->ngets, 1);
	cache_reader_destroy(r);
	cancel_gets();

	/* a smaller window: two blocks; a larger one: the cache's */
	r = cache_reader_create_at(s, 10 * MIB, 20 * MIB, 2 * MIB);
	assert_non_null(r);
	assert_int_equal(r->window, 2 * MIB);
	assert_int_equal(r->max_window, 2 * MIB);
	prefetch_at(r, 10 * MIB, r->window);
	assert_int_equal(store->ngets, 1);
	check_get(0, "p/a", 10 * MIB, 2 * MIB, 2);
	/* near the end of the range: up to the end of a, not into b */
	prefetch_at(r, 19 * MIB, 64 * MIB);
	assert_int_equal(store->ngets, 2);
	check_get(1, "p/a", 19 * MIB, MIB, 1);
	cache_reader_destroy(r);
	cancel_gets();
	r = cache_reader_create_at(s, 0, 20 * MIB, 64 * MIB);
	assert_non_null(r);
	assert_int_equal(r->max_window, 32 * MIB);
	cache_reader_destroy(r);

	/* across the header into b: up to b's block holding end - 1 */
	r = cache_reader_create_at(s, 20 * MIB - 10, 20 * MIB + 3 + MIB + 1, 0);
	assert_non_null(r);
	prefetch_at(r, 20 * MIB - 10, r->window);
	assert_int_equal(store->ngets, 2);
	check_get(0, "p/a", 19 * MIB, MIB, 1);
	check_get(1, "p/b", 0, 2 * MIB, 2);
	cache_reader_destroy(r);
	cancel_gets();
	free(v);
	cache_stream_destroy(s);
	put_object(c, a);
	put_object(c, b);
	cache_destroy(c);
}

/* Marks: empty literal segments that cache_stream_segment() shows and
 * that take no bytes (and no object place). */
static void test_plan_marks(void **state)
{
	struct cache *c = new_cache(64 * MIB, MIB);
	struct cache_object *a = object(c, "p/a", 100);
	struct cache_stream *s = cache_stream_create_plan(c, NULL, NULL);
	struct cache_segment_info info;

	assert_non_null(s);
	assert_int_equal(cache_stream_add_mark(s), 0);
	assert_int_equal(cache_stream_add_object(s, a, 0, 100), 0);
	assert_int_equal(cache_stream_add_mark(s), 0);
	assert_int_equal(cache_stream_add_mark(s), 0);
	assert_int_equal(cache_stream_add_bytes(s, "xy", 2), 0);
	assert_int_equal(cache_stream_add_mark(s), 0);
	assert_int_equal(cache_stream_count(s), 6);
	cache_stream_end(s, 0);
	assert_int_equal(s->listed_bytes, 102);
	assert_int_equal(s->nobject_segs, 1);
	check_seg(s, 2, NULL, 0, 0, 100, 1);
	check_seg(s, 4, NULL, 0, 2, 100, 1);
	assert_int_equal(cache_stream_segment(s, 0, &info), 0);
	assert_int_equal(info.start, 0);
	assert_int_equal(info.size, 0);
	assert_true(info.literal);
	assert_int_equal(cache_stream_segment(s, 3, &info), 0);
	assert_int_equal(info.start, 100);
	assert_int_equal(info.size, 0);
	assert_int_equal(cache_stream_segment(s, 5, &info), 0);
	assert_int_equal(info.start, 102);
	assert_int_equal(cache_stream_segment(s, 6, &info), ENODATA);
	/* an offset is in the segment with bytes there */
	assert_int_equal(find(s, 0), 1);
	assert_int_equal(find(s, 99), 1);
	assert_int_equal(find(s, 100), 4);
	assert_int_equal(find(s, 101), 4);
	assert_int_equal(find(s, 102), 6);
	cache_stream_destroy(s);
	put_object(c, a);
	check_no_requests();
	cache_destroy(c);
}

/* ---- waiting for segments ---- */

struct want_log {
	unsigned calls;
	size_t count_at_call; /* segments when last called */
	/* what the hook does when called: add a literal segment of
	 * add_len bytes, then end the stream after add_max calls */
	size_t add_len;
	unsigned add_max;
	bool end;
};

static void want_hook(void *arg, struct cache_stream *s)
{
	struct want_log *w = arg;
	static const char bytes[64] = "0123456789abcdef0123456789abcdef"
				      "0123456789abcdef0123456789abcde";

	/* (called without the cache's lock: the counts are read under it) */
	pthread_mutex_lock(&s->cache->lock);
	w->calls++;
	w->count_at_call = s->count;
	pthread_mutex_unlock(&s->cache->lock);
	test_store_notify(store);
	if (w->add_len && w->calls <= w->add_max)
		assert_int_equal(cache_stream_add_bytes(s, bytes, w->add_len),
				 0);
	else if (w->end)
		cache_stream_end(s, 0);
}

struct segment_job {
	struct cache_stream *s;
	size_t idx;
	struct cache_segment_info info;
	int rc;
	bool done;
};

static void *segment_job_run(void *arg)
{
	struct segment_job *j = arg;
	int rc = cache_stream_segment(j->s, j->idx, &j->info);

	pthread_mutex_lock(&j->s->cache->lock);
	j->rc = rc;
	j->done = true;
	pthread_mutex_unlock(&j->s->cache->lock);
	test_store_notify(store);
	return NULL;
}

static bool job_done(struct segment_job *j)
{
	bool done;

	pthread_mutex_lock(&j->s->cache->lock);
	done = j->done;
	pthread_mutex_unlock(&j->s->cache->lock);
	return done;
}

static bool job_done_cond(void *arg)
{
	return job_done(arg);
}

static unsigned want_calls(struct cache *c, const struct want_log *w)
{
	unsigned n;

	pthread_mutex_lock(&c->lock);
	n = w->calls;
	pthread_mutex_unlock(&c->lock);
	return n;
}

struct want_wait {
	struct cache *c;
	const struct want_log *w;
	unsigned n;
};

static bool wanted_enough(void *arg)
{
	const struct want_wait *ww = arg;

	return want_calls(ww->c, ww->w) >= ww->n;
}

/*
 * Waits until the refill function has run n times in all.  A reader that needs
 * a segment not there yet asks (the hook, without the cache's lock), then
 * looks again under it and sleeps on the stream: once the count has
 * moved, a reader that asked waits, or is about to, until a segment is
 * added (or, wrongly, has returned).
 */
static void wait_wants(struct cache *c, const struct want_log *w, unsigned n)
{
	struct want_wait ww = {.c = c, .w = w, .n = n};

	assert_int_equal(test_store_wait_until(store, wanted_enough, &ww,
					       "the refill function"),
			 0);
}

/*
 * cache_stream_segment(): a segment that is there at once; one that is
 * not yet waits, asking the owner (refill function), until it is added; after
 * the end, ENODATA, or the error the stream ended with.
 */
static void test_segment_wait(void **state)
{
	struct cache *c = new_cache(64 * MIB, MIB);
	struct want_log w = {0};
	struct cache_stream *s = cache_stream_create_plan(c, want_hook, &w);
	struct cache_object *a = object(c, "p/a", 5000);
	struct segment_job j = {.s = s, .idx = 1};
	pthread_t t;

	assert_non_null(s);
	assert_int_equal(add_range(s, a, 1000, 3000), 0);
	assert_int_equal(cache_stream_segment(s, 0, &j.info), 0);
	assert_int_equal(j.info.start, 0);
	assert_int_equal(j.info.size, 3000);
	assert_false(j.info.literal);
	assert_string_equal(j.info.bucket, "b");
	assert_string_equal(j.info.key, "p/a");
	/* segment 1 waits; the owner is asked, adds it from this thread */
	assert_int_equal(pthread_create(&t, NULL, segment_job_run, &j), 0);
	wait_wants(c, &w, 1);
	assert_false(job_done(&j));
	assert_int_equal(w.count_at_call, 1);
	assert_int_equal(add_lit(s, "xyz", 3), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(j.rc, 0);
	assert_int_equal(j.info.start, 3000);
	assert_int_equal(j.info.size, 3);
	assert_true(j.info.literal);
	assert_null(j.info.bucket);
	assert_null(j.info.key);
	/* a waiter past the end is woken by the end: ENODATA */
	j.idx = 2;
	j.done = false;
	assert_int_equal(pthread_create(&t, NULL, segment_job_run, &j), 0);
	wait_wants(c, &w, 2);
	assert_false(job_done(&j));
	end_stream(s, 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(j.rc, ENODATA);
	assert_int_equal(cache_stream_segment(s, 2, &j.info), ENODATA);
	assert_int_equal(cache_stream_segment(s, 1000, &j.info), ENODATA);
	assert_int_equal(cache_stream_segment(s, 0, &j.info), 0);
	cache_stream_destroy(s);

	/* a stream ended with an error: what is there is there, then the
	 * error, for a waiter too */
	memset(&w, 0, sizeof(w));
	s = cache_stream_create_plan(c, want_hook, &w);
	assert_non_null(s);
	assert_int_equal(add_lit(s, "abc", 3), 0);
	j = (struct segment_job){.s = s, .idx = 1};
	assert_int_equal(pthread_create(&t, NULL, segment_job_run, &j), 0);
	wait_wants(c, &w, 1);
	assert_false(job_done(&j));
	end_stream(s, EIO);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(j.rc, EIO);
	assert_int_equal(cache_stream_segment(s, 0, &j.info), 0);
	assert_int_equal(cache_stream_segment(s, 1, &j.info), EIO);
	assert_int_equal(cache_stream_segment(s, 7, &j.info), EIO);
	cache_stream_destroy(s);
	put_object(c, a);
	check_no_requests();
	cache_destroy(c);
}

/* A listing stream's segment past the listing asks for the next page; a
 * failed page is EIO. */
static void test_segment_wait_listing(void **state)
{
	struct cache *c = new_cache(64 * MIB, MIB);
	struct cache_stream *s = cache_stream_create(c, "b", "p/");
	struct segment_job j = {.s = s, .idx = 1};
	struct store_list_page page;
	struct store_error e;
	pthread_t t;

	assert_non_null(s);
	append(s, "p/a", NULL, 10);
	s->next_token = strdup("t1");
	assert_non_null(s->next_token);
	assert_int_equal(pthread_create(&t, NULL, segment_job_run, &j), 0);
	assert_int_equal(test_store_wait_made(store, TEST_LIST, 1), 0);
	assert_int_equal(store->nlists, 1);
	assert_string_equal(store->lists[0].token, "t1");
	assert_false(job_done(&j));
	page_init(&page, 1, false, NULL);
	page_add(&page, "p/b", "\"e\"", 20);
	store->lists[0].finished = true;
	store->lists[0].done(store->lists[0].arg, &page, NULL);
	store_list_page_clear(&page);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(j.rc, 0);
	assert_int_equal(j.info.start, 10);
	assert_int_equal(j.info.size, 20);
	assert_string_equal(j.info.key, "p/b");
	store->nlists = 0;
	cache_stream_destroy(s);

	/* a page that fails */
	s = cache_stream_create(c, "b", "p/");
	assert_non_null(s);
	append(s, "p/a", NULL, 10);
	s->next_token = strdup("t1");
	assert_non_null(s->next_token);
	j = (struct segment_job){.s = s, .idx = 1};
	assert_int_equal(pthread_create(&t, NULL, segment_job_run, &j), 0);
	assert_int_equal(test_store_wait_made(store, TEST_LIST, 1), 0);
	assert_int_equal(store->nlists, 1);
	memset(&e, 0, sizeof(e));
	e.err = EIO;
	e.http_status = 500;
	store->lists[0].finished = true;
	store->lists[0].done(store->lists[0].arg, NULL, &e);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(j.rc, EIO);
	store->nlists = 0;
	cache_stream_destroy(s);
	cache_destroy(c);
}

/*
 * The refill function may add segments itself (it runs with the lock held, and
 * adding is a lock-held call): a reader waiting for the first segment of
 * an empty plan stream must then get it, not sleep on a wake-up that came
 * before it slept.
 */
/* Runs cache_stream_segment(j->idx) on a thread of its own until it
 * returns, for TEST_STORE_WAIT_SECONDS at most; one still waiting then is
 * woken (so that the test can end) and false returned. */
static bool segment_within(struct segment_job *j)
{
	struct cache *c = j->s->cache;
	pthread_t t;
	bool done;

	j->done = false;
	assert_int_equal(pthread_create(&t, NULL, segment_job_run, j), 0);
	done = test_store_wait_until(store, job_done_cond, j,
				     "cache_stream_segment() to return") == 0;
	if (!done) {
		pthread_mutex_lock(&c->lock);
		pthread_cond_broadcast(&j->s->grown);
		pthread_mutex_unlock(&c->lock);
	}
	assert_int_equal(pthread_join(t, NULL), 0);
	return done;
}

static void test_want_adds_at_once(void **state)
{
	struct cache *c = new_cache(64 * MIB, MIB);
	struct want_log w = {.add_len = 5, .add_max = 1, .end = true};
	struct cache_stream *s = cache_stream_create_plan(c, want_hook, &w);
	struct segment_job j = {.s = s, .idx = 0};
	const char *stuck = NULL;

	assert_non_null(s);
	if (!segment_within(&j))
		stuck = "cache_stream_segment(0) still waited after the want "
			"hook added segment 0";
	if (!stuck) {
		assert_int_equal(j.rc, 0);
		assert_int_equal(j.info.size, 5);
		assert_true(j.info.literal);
		/* and the end, when the hook ends the stream at once */
		j = (struct segment_job){.s = s, .idx = 1};
		if (!segment_within(&j))
			stuck = "cache_stream_segment(1) still waited after "
				"the refill function ended the stream";
		else
			assert_int_equal(j.rc, ENODATA);
	}
	cache_stream_destroy(s);
	check_no_requests();
	cache_destroy(c);
	if (stuck)
		fail_msg("%s", stuck);
}

struct plan_read_job {
	struct cache_reader *r;
	uint64_t offset;
	size_t size;
	struct cache_view view;
	int rc;
	bool done;
};

static void *plan_read_run(void *arg)
{
	struct plan_read_job *j = arg;
	struct cache *c = j->r->stream->cache;
	int rc = cache_reader_read(j->r, j->offset, j->size, &j->view);

	pthread_mutex_lock(&c->lock);
	j->rc = rc;
	j->done = true;
	pthread_mutex_unlock(&c->lock);
	test_store_notify(store);
	return NULL;
}

static bool plan_read_done(void *arg)
{
	struct plan_read_job *j = arg;
	struct cache *c = j->r->stream->cache;
	bool done;

	pthread_mutex_lock(&c->lock);
	done = j->done;
	pthread_mutex_unlock(&c->lock);
	return done;
}

/* The literal bytes of the stream built by want_hook at offset off. */
static char hook_byte(uint64_t off, size_t len)
{
	static const char bytes[64] = "0123456789abcdef0123456789abcdef"
				      "0123456789abcdef0123456789abcde";

	return bytes[off % len];
}

/*
 * The owner is asked for more only when a reader comes near the end of
 * what it added (within half a listing page of segments), and what it
 * adds from the hook is read on without a stall, up to the end it sets.
 */
static void test_want_near_end(void **state)
{
	struct cache *c = new_conf_cache(64 * MIB, 4 * KIB, 8 * KIB, 0);
	struct want_log w = {.add_len = 50, .add_max = 100, .end = true};
	struct cache_stream *s = cache_stream_create_plan(c, want_hook, &w);
	struct cache_view *v = calloc(1, sizeof(*v));
	struct cache_reader *r;
	char bytes[50];
	uint64_t pos = 0, size = 0;
	unsigned first_call_at = 0;

	assert_non_null(s);
	assert_non_null(v);
	for (int i = 0; i < 50; i++)
		bytes[i] = hook_byte((uint64_t)i, 50);
	/* 400 literal segments of 50 bytes: 20000 bytes */
	for (int i = 0; i < 400; i++)
		assert_int_equal(add_lit(s, bytes, 50), 0);
	r = cache_reader_create(s);
	assert_non_null(r);
	for (;;) {
		assert_int_equal(cache_reader_read(r, pos, 37, v), 0);
		if (v->bytes == 0)
			break;
		for (int i = 0; i < v->count; i++) {
			const char *p = v->iov[i].iov_base;

			for (size_t k = 0; k < v->iov[i].iov_len; k++)
				assert_int_equal(p[k], hook_byte(pos + k, 50));
			pos += v->iov[i].iov_len;
		}
		cache_view_release(c, v);
		if (w.calls && !first_call_at)
			first_call_at = (unsigned)pos;
		/* never asked while far from the end: the frontier is at most
		 * a window (8 KiB, 165 segments) ahead, and asking starts 50
		 * segments before the end (segment 350, byte 17500) */
		if (pos < 17500 - 8 * KIB - 100)
			assert_int_equal(w.calls, 0);
	}
	cache_view_release(c, v);
	assert_true(first_call_at >= 17500 - 8 * KIB - 100);
	assert_true(first_call_at < 17500);
	/* 100 more segments added from the hook, one per call, then the
	 * end */
	assert_int_equal(pos, 500 * 50);
	assert_int_equal(w.calls, 101);
	assert_true(cache_stream_size(s, &size));
	assert_int_equal(size, 500 * 50);
	cache_reader_destroy(r);
	cache_stream_destroy(s);
	free(v);
	check_no_requests();
	cache_destroy(c);
}

/* A reader at the end of what a plan has so far waits; bytes added from
 * another thread wake it, and so does the end. */
static void test_plan_reader_woken(void **state)
{
	struct cache *c = new_conf_cache(64 * MIB, 4 * KIB, 8 * KIB, 0);
	struct want_log w = {0};
	struct cache_stream *s = cache_stream_create_plan(c, want_hook, &w);
	struct plan_read_job j = {0};
	pthread_t t;
	unsigned asked;

	assert_non_null(s);
	assert_int_equal(add_lit(s, "abc", 3), 0);
	j.r = cache_reader_create(s);
	assert_non_null(j.r);
	j.size = 100;
	assert_int_equal(cache_reader_read(j.r, 0, 100, &j.view), 0);
	assert_int_equal(j.view.bytes, 3);
	cache_view_release(c, &j.view);
	/* the reader at the end asks once, then waits: asked, not done */
	j.offset = 3;
	asked = want_calls(c, &w);
	assert_int_equal(pthread_create(&t, NULL, plan_read_run, &j), 0);
	wait_wants(c, &w, asked + 1);
	assert_false(plan_read_done(&j));
	assert_int_equal(add_lit(s, "defg", 4), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(j.rc, 0);
	assert_int_equal(j.view.bytes, 4);
	assert_memory_equal(j.view.iov[0].iov_base, "defg", 4);
	cache_view_release(c, &j.view);
	/* the end wakes it: end of file */
	j.offset = 7;
	j.done = false;
	asked = want_calls(c, &w);
	assert_int_equal(pthread_create(&t, NULL, plan_read_run, &j), 0);
	wait_wants(c, &w, asked + 1);
	assert_false(plan_read_done(&j));
	end_stream(s, 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(j.rc, 0);
	assert_int_equal(j.view.bytes, 0);
	cache_reader_destroy(j.r);
	cache_stream_destroy(s);
	check_no_requests();
	cache_destroy(c);
}

/* A first read of an empty plan stream whose refill function adds at once. */
static void test_want_adds_first_read(void **state)
{
	struct cache *c = new_conf_cache(64 * MIB, 4 * KIB, 8 * KIB, 0);
	struct want_log w = {.add_len = 10, .add_max = 1, .end = true};
	struct cache_stream *s = cache_stream_create_plan(c, want_hook, &w);
	struct plan_read_job j = {.size = 100};
	pthread_t t;
	bool done = false;

	assert_non_null(s);
	j.r = cache_reader_create(s);
	assert_non_null(j.r);
	assert_int_equal(pthread_create(&t, NULL, plan_read_run, &j), 0);
	done = test_store_wait_until(store, plan_read_done, &j,
				     "the first read to return") == 0;
	if (!done) {
		/* wake it so that the test can end */
		pthread_mutex_lock(&c->lock);
		pthread_cond_broadcast(&s->grown);
		pthread_mutex_unlock(&c->lock);
	}
	assert_int_equal(pthread_join(t, NULL), 0);
	if (done) {
		assert_int_equal(j.rc, 0);
		assert_int_equal(j.view.bytes, 10);
	}
	cache_view_release(c, &j.view);
	cache_reader_destroy(j.r);
	cache_stream_destroy(s);
	cache_destroy(c);
	if (!done)
		fail_msg(
		    "the first read still waited after the refill function "
		    "added the stream's first bytes");
}

/* ---- on-listed functions ---- */

struct on_listed {
	unsigned calls;
	unsigned fail_at; /* 1-based call that fails; 0 = none */
};

/* A 3-byte header ("<" size mod 256 ">") before each object, the object,
 * and the header's bytes reversed after it. */
static int frame3(void *arg, struct cache_stream *s, struct cache_object *obj)
{
	struct on_listed *f = arg;
	unsigned char hdr[3] = {'<', (unsigned char)cache_object_size(obj),
				'>'};
	int rc;

	f->calls++;
	rc = cache_stream_add_bytes(s, hdr, 3);
	if (rc)
		return rc;
	if (f->fail_at && f->calls == f->fail_at)
		return EPROTO; /* after adding a segment: all must go */
	rc = cache_stream_add_object(s, obj, 0, cache_object_size(obj));
	if (rc)
		return rc;
	return cache_stream_add_bytes(s, ">", 1);
}

static void test_on_listed_take_page(void **state)
{
	struct cache *c = new_cache(64 * MIB, MIB);
	struct on_listed f = {0};
	struct cache_stream *s = cache_stream_create(c, "b", "p/");
	struct store_list_page page;

	assert_non_null(s);
	cache_stream_on_listed(s, frame3, &f);
	page_init(&page, 3, true, "t1");
	page_add(&page, "p/a", "\"a\"", 300);
	page_add(&page, "p/empty", "\"e\"", 0); /* no call, no segment */
	page_add(&page, "p/b", "\"b\"", 5);
	assert_int_equal(take(s, &page), 0);
	store_list_page_clear(&page);
	assert_int_equal(f.calls, 2);
	assert_int_equal(s->count, 6);
	assert_int_equal(s->nobject_segs, 2);
	check_seg(s, 0, NULL, 0, 3, 0, 0);
	assert_memory_equal(s->segs[0]->bytes, "<\x2c>", 3);
	assert_string_equal(s->segs[1]->obj->key, "p/a");
	check_seg(s, 1, s->segs[1]->obj, 0, 300, 3, 0);
	check_seg(s, 2, NULL, 0, 1, 303, 1);
	check_seg(s, 3, NULL, 0, 3, 304, 1);
	assert_memory_equal(s->segs[3]->bytes, "<\x05>", 3);
	check_seg(s, 4, s->segs[4]->obj, 0, 5, 307, 1);
	assert_int_equal(s->listed_bytes, 313);
	assert_int_equal(c->nobjects, 2);
	/* a page whose framing fails half-way is not taken at all: not the
	 * objects before, not the header the failing call added */
	f.fail_at = 4;
	page_init(&page, 2, false, NULL);
	page_add(&page, "p/c", "\"c\"", 7);
	page_add(&page, "p/d", "\"d\"", 8);
	assert_int_equal(take(s, &page), EPROTO);
	store_list_page_clear(&page);
	assert_int_equal(s->count, 6);
	assert_int_equal(s->nobject_segs, 2);
	assert_int_equal(s->listed_bytes, 313);
	assert_false(s->complete);
	assert_string_equal(s->next_token, "t1");
	assert_int_equal(c->nobjects, 2); /* p/c went with its segments */
	cache_stream_destroy(s);
	assert_int_equal(c->nobjects, 0);
	check_no_requests();
	cache_destroy(c);
}

/* ---- where a listing goes on from ---- */

/*
 * A framed listing stream that keeps resume points writes one each time
 * it drops what a hold passed: at the last object start at or before the
 * hold, with the key of the object before it and the objects listed
 * through that one.  A new stream goes on from the point (trimmed up to
 * it, its first page listed after the key); a point half written, of
 * another tag or outside the prefix is none.
 */
static void test_resume_point(void **state)
{
	struct cache *c = new_cache(64 * MIB, MIB);
	struct on_listed f = {0};
	struct cache_stream *s = cache_stream_create(c, "b", "p/"), *s2;
	struct cache_resume slot, copy;
	struct store_list_page page;
	struct cache_reader *r;
	struct cache_hold *h;
	char key[32];

	(void)state;
	memset(&slot, 0, sizeof(slot));
	assert_non_null(s);
	cache_stream_on_listed(s, frame3, &f);
	cache_stream_set_trim(s);
	cache_stream_keep_resume(s, &slot, 7);
	/* 700 objects of 5 bytes (and empty ones, which frame nothing and
	 * count for nothing): 9 bytes and 3 segments each */
	for (int pg = 0; pg < 7; pg++) {
		page_init(&page, 101, true, "t");
		for (int i = 0; i < 100; i++) {
			snprintf(key, sizeof(key), "p/%04d", pg * 100 + i);
			page_add(&page, key, NULL, 5);
		}
		snprintf(key, sizeof(key), "p/%04d-empty", pg * 100 + 99);
		page_add(&page, key, NULL, 0);
		assert_int_equal(take(s, &page), 0);
		store_list_page_clear(&page);
	}
	assert_int_equal(s->count, 2100);
	h = cache_hold_create(s, 0);
	assert_non_null(h);
	/* segment 1000 is object 333's: the point is its header, 999 */
	cache_hold_move(h, 1000);
	pthread_mutex_lock(&c->lock);
	cache_stream_trim(s);
	pthread_mutex_unlock(&c->lock);
	assert_int_equal(s->base, 1000);
	assert_int_equal(slot.seq % 2, 0);
	assert_true(slot.seq > 0);
	assert_int_equal(slot.tag, 7);
	assert_int_equal(slot.index, 999);
	assert_int_equal(slot.offset, 333 * 9);
	assert_int_equal(slot.listed, 333);
	assert_string_equal(slot.key, "p/0332");
	assert_int_equal(slot.key_len, 6);
	/* at an object's start itself, past the empty one after 499 */
	cache_hold_move(h, 1500);
	pthread_mutex_lock(&c->lock);
	cache_stream_trim(s);
	pthread_mutex_unlock(&c->lock);
	assert_int_equal(slot.index, 1500);
	assert_int_equal(slot.offset, 500 * 9);
	assert_int_equal(slot.listed, 500);
	assert_string_equal(slot.key, "p/0499");
	cache_hold_release(h);
	cache_stream_destroy(s);

	/* none: half written, another tag, outside the prefix */
	s2 = cache_stream_create(c, "b", "p/");
	assert_non_null(s2);
	copy = slot;
	copy.seq |= 1;
	assert_int_equal(cache_stream_resume(s2, &copy, 7), ENOENT);
	assert_int_equal(cache_stream_resume(s2, &slot, 8), ENOENT);
	copy = slot;
	memcpy(copy.key, "q/0499", 7);
	assert_int_equal(cache_stream_resume(s2, &copy, 7), ENOENT);
	assert_int_equal(s2->base, 0);
	/* the point: trimmed up to it, listed on after its key */
	assert_int_equal(cache_stream_resume(s2, &slot, 7), 0);
	assert_int_equal(s2->base, 1500);
	assert_int_equal(s2->count, 1500);
	assert_int_equal(s2->listed_bytes, 4500);
	assert_int_equal(s2->listed_objects, 500);
	assert_true(cache_stream_trimmed(s2));
	errno = 0;
	assert_null(cache_reader_create_before(s2, 4499));
	assert_int_equal(errno, ESTALE);
	r = cache_reader_create_before(s2, 4600);
	assert_non_null(r);
	assert_int_equal(cache_reader_position(r), 4500);
	pthread_mutex_lock(&c->lock);
	cache_stream_need(s2, s2->count);
	pthread_mutex_unlock(&c->lock);
	assert_int_equal(test_store_wait_made(store, TEST_LIST, 1), 0);
	assert_string_equal(store->lists[0].start_after, "p/0499");
	assert_string_equal(store->lists[0].token, "");
	/* its first page lands after the point */
	page_init(&page, 1, false, NULL);
	page_add(&page, "p/0500", NULL, 5);
	store->lists[0].finished = true;
	store->lists[0].done(store->lists[0].arg, &page, NULL);
	store_list_page_clear(&page);
	pthread_mutex_lock(&c->lock);
	assert_int_equal(cache_stream_wait(s2, 1500), 0);
	assert_int_equal(cache_stream_seg(s2, 1500)->start, 4500);
	assert_string_equal(cache_stream_seg(s2, 1500)->obj->key, "p/0500");
	pthread_mutex_unlock(&c->lock);
	store->nlists = 0;
	cache_reader_destroy(r);
	cache_stream_destroy(s2);
	cache_destroy(c);
}

/* ---- listing everything ---- */

struct list_all_job {
	struct cache_stream *s;
	int rc;
};

static void *list_all_run(void *arg)
{
	struct list_all_job *j = arg;

	j->rc = cache_stream_list_all(j->s);
	return NULL;
}

static void wait_lists(unsigned n)
{
	assert_int_equal(test_store_wait_made(store, TEST_LIST, n), 0);
}

/* cache_stream_list_all() asks page after page until the listing is
 * complete, or fails with EIO when a page does. */
static void test_list_all(void **state)
{
	struct cache *c = new_cache(64 * MIB, MIB);
	struct cache_stream *s = cache_stream_create(c, "b", "p/");
	struct list_all_job j = {.s = s};
	struct store_list_page page;
	struct store_error e;
	pthread_t t;
	uint64_t size = 0;

	assert_non_null(s);
	append(s, "p/0", NULL, 1);
	s->next_token = strdup("t1");
	assert_non_null(s->next_token);
	assert_int_equal(pthread_create(&t, NULL, list_all_run, &j), 0);
	for (unsigned i = 0; i < 3; i++) {
		char key[8], token[8];

		wait_lists(i + 1);
		assert_int_equal(store->nlists, i + 1);
		snprintf(token, sizeof(token), "t%u", i + 1);
		assert_string_equal(store->lists[i].token, token);
		snprintf(token, sizeof(token), "t%u", i + 2);
		page_init(&page, 1, i < 2, i < 2 ? token : NULL);
		snprintf(key, sizeof(key), "p/%u", i + 1);
		page_add(&page, key, NULL, 10);
		store->lists[i].finished = true;
		store->lists[i].done(store->lists[i].arg, &page, NULL);
		store_list_page_clear(&page);
	}
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(j.rc, 0);
	assert_int_equal(store->nlists, 3);
	assert_true(cache_stream_size(s, &size));
	assert_int_equal(size, 31);
	assert_int_equal(s->count, 4);
	/* complete: nothing more to ask */
	assert_int_equal(cache_stream_list_all(s), 0);
	assert_int_equal(store->nlists, 3);
	store->nlists = 0;
	cache_stream_destroy(s);

	s = cache_stream_create(c, "b", "p/");
	assert_non_null(s);
	s->next_token = strdup("t1");
	assert_non_null(s->next_token);
	j = (struct list_all_job){.s = s};
	assert_int_equal(pthread_create(&t, NULL, list_all_run, &j), 0);
	wait_lists(1);
	memset(&e, 0, sizeof(e));
	e.err = EACCES;
	e.http_status = 403;
	store->lists[0].finished = true;
	store->lists[0].done(store->lists[0].arg, NULL, &e);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(j.rc, EIO);
	assert_false(cache_stream_size(s, &size));
	store->nlists = 0;
	cache_stream_destroy(s);
	cache_destroy(c);
}

static int make_store(void **state)
{
	store = test_store_create(false, 64);
	return store ? 0 : -1;
}

static int free_store(void **state)
{
	test_store_destroy(store);
	return 0;
}

/* Before each test: nothing recorded.  A test that failed half-way may
 * have left requests whose callbacks point into its freed cache; they
 * are forgotten, not answered, so that the next test starts clean. */
static int forget_requests(void **state)
{
	store->ngets = 0;
	store->nlists = 0;
	store->nheads = 0;
	return 0;
}

#define TEST(f) cmocka_unit_test_setup(f, forget_requests)

int main(void)
{
	const struct CMUnitTest tests[] = {
	    TEST(test_append_segments),
	    TEST(test_append_overflow),
	    TEST(test_find_boundaries),
	    TEST(test_find_empty),
	    TEST(test_find_many),
	    TEST(test_take_page),
	    TEST(test_take_page_odd),
	    TEST(test_stream_size),
	    TEST(test_stream_wait),
	    TEST(test_stream_want),
	    TEST(test_listing_goes_on),
	    TEST(test_listing_wait_prefetches),
	    TEST(test_block_len),
	    TEST(test_frontier_to_position),
	    TEST(test_piece_sizing),
	    TEST(test_random_reader_pieces),
	    TEST(test_read_at_end),
	    TEST(test_read_across_objects),
	    TEST(test_prefetch_runs),
	    TEST(test_prefetch_ahead_objects),
	    TEST(test_wait_opens_window),
	    TEST(test_plan_segments),
	    TEST(test_plan_trim),
	    TEST(test_plan_prefetch_ranges),
	    TEST(test_ahead_objects_skip_literals),
	    TEST(test_reader_at_bounds),
	    TEST(test_plan_marks),
	    TEST(test_segment_wait),
	    TEST(test_segment_wait_listing),
	    TEST(test_want_adds_at_once),
	    TEST(test_want_near_end),
	    TEST(test_plan_reader_woken),
	    TEST(test_want_adds_first_read),
	    TEST(test_on_listed_take_page),
	    TEST(test_resume_point),
	    TEST(test_list_all),
	};

	return cmocka_run_group_tests(tests, make_store, free_store);
}
