/*
 * test_stream: stream offset -> segment mapping, listing pages, and the
 * reader's block arithmetic, on objects larger than 4 GiB.
 *
 * take_page(), frontier_to_position() and prefetch() are reached through
 * the UNITTEST convention (cache/internal.h).  The cache sits on the
 * recording test store (tests/unit/test_store.h): every stream here is
 * built with cache_stream_append() or take_page(), each GET or LIST the
 * cache makes is recorded, so a test can check their ranges and then play
 * the store's part with the recorded callbacks, and a test that expects
 * no request checks that none was made.
 */
#include "config.h"

#include "cache/internal.h"
#include "tests/unit/test_store.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
	pthread_mutex_lock(&s->cache->lock);
	assert_int_equal(cache_stream_append(s, key, etag, size), 0);
	pthread_mutex_unlock(&s->cache->lock);
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
	b = cache_block_lookup(c, s->segs[seg_idx], index);
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
		assert_string_equal(s->segs[i]->key, mixed_segs[i].key);
		assert_int_equal(s->segs[i]->size, mixed_segs[i].size);
		assert_int_equal(s->segs[i]->start, mixed_segs[i].start);
	}
	/* etags are copied, NULL stays NULL */
	assert_null(s->segs[0]->etag); /* p/a, listed 0th */
	assert_string_equal(s->segs[1]->etag, "\"etag-1\"");
	assert_string_equal(s->segs[2]->etag, "\"etag-3\"");
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
	assert_int_equal(cache_stream_append(s, "p/huge", "\"e\"", UINT64_MAX),
			 EOVERFLOW);
	assert_int_equal(
	    cache_stream_append(s, "p/max", "\"e\"", (uint64_t)INT64_MAX - 2),
	    0);
	assert_int_equal(cache_stream_append(s, "p/one", "\"e\"", 1),
			 EOVERFLOW);
	assert_int_equal(s->count, 2);
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

static void page_init(struct s3_list_page *p, size_t count, bool truncated,
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

static void page_add(struct s3_list_page *p, const char *key, const char *etag,
		     uint64_t size)
{
	struct s3_object *o = &p->objects[p->count++];

	o->key = strdup(key);
	o->etag = etag ? strdup(etag) : NULL;
	o->size = size;
	assert_non_null(o->key);
}

static int take(struct cache_stream *s, struct s3_list_page *p)
{
	int rc;

	pthread_mutex_lock(&s->cache->lock);
	rc = take_page(s, p);
	pthread_mutex_unlock(&s->cache->lock);
	return rc;
}

static void test_take_page(void **state)
{
	struct cache *c = new_cache(64 * MIB, 8 * MIB);
	struct cache_stream *s = cache_stream_create(c, "b", "p/");
	struct s3_list_page page;
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
	assert_string_equal(s->segs[0]->key, "p/a");
	assert_ptr_not_equal(s->segs[0]->key, page.objects[0].key);
	assert_string_equal(s->segs[0]->etag, "\"e1\"");
	assert_null(s->segs[1]->etag);
	s3_list_page_clear(&page);
	size = 123;
	assert_false(cache_stream_size(s, &size));
	assert_int_equal(size, 0);
	/* a middle page: a new token replaces the old one */
	page_init(&page, 1, true, "token-2");
	page_add(&page, "p/c", "\"e3\"", 6 * GIB);
	assert_int_equal(take(s, &page), 0);
	assert_string_equal(s->next_token, "token-2");
	assert_false(s->complete);
	s3_list_page_clear(&page);
	/* the last page */
	page_init(&page, 2, false, NULL);
	page_add(&page, "p/d", "\"e4\"", 4 * GIB);
	page_add(&page, "p/e", "\"e5\"", 0);
	assert_int_equal(take(s, &page), 0);
	assert_null(s->next_token);
	assert_true(s->complete);
	s3_list_page_clear(&page);
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
	struct s3_list_page page;
	uint64_t size = 1;

	assert_non_null(s);
	assert_non_null(t);
	assert_non_null(u);
	/* an empty, complete listing: size 0, but known */
	page_init(&page, 0, false, NULL);
	assert_int_equal(take(s, &page), 0);
	s3_list_page_clear(&page);
	assert_true(s->complete);
	assert_true(cache_stream_size(s, &size));
	assert_int_equal(size, 0);
	assert_int_equal(wait_for(s, 0), ENODATA);
	/* truncated without a token: nothing to continue from, so complete
	 * (asking again from the start would loop) */
	page_init(&page, 1, true, NULL);
	page_add(&page, "p/x", NULL, 10);
	assert_int_equal(take(t, &page), 0);
	s3_list_page_clear(&page);
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
	s3_list_page_clear(&page);
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

/* The next page is asked for only within half a page of the end. */
static void test_stream_want(void **state)
{
	struct cache *c = new_cache(64 * MIB, 8 * MIB);
	struct cache_stream *s = cache_stream_create(c, "b", "p/");
	char key[32];

	assert_non_null(s);
	for (int i = 0; i < 200; i++) {
		snprintf(key, sizeof(key), "p/%03d", i);
		append(s, key, NULL, 5 * GIB);
	}
	pthread_mutex_lock(&c->lock);
	/* list_page_keys 100: far from the end, no request */
	cache_stream_want(s, 0);
	cache_stream_want(s, 149);
	assert_false(s->listing);
	/* complete: never a request */
	s->complete = true;
	cache_stream_want(s, 150);
	cache_stream_want(s, 10000);
	assert_false(s->listing);
	pthread_mutex_unlock(&c->lock);
	check_no_requests();
	cache_stream_destroy(s);
	cache_destroy(c);
}

/* ---- reader arithmetic ---- */

static void test_block_len(void **state)
{
	struct cache *c = new_cache(64 * MIB, 8 * MIB);
	struct cache_segment a = {.size = 5 * GIB};
	struct cache_segment f = {.size = 8 * MIB + 1};
	struct cache_segment g = {.size = 3};
	struct cache_segment i = {.size = 4 * GIB - 1};
	struct cache_segment j = {.size = 8 * GIB + 5};

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
	assert_int_equal(r->pf_seg, want_seg);
	assert_int_equal(r->pf_block, want_block);
	assert_int_equal(r->pf_offset, want_offset);
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
	assert_int_equal(r->pf_offset, MIXED_TOTAL);
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
	struct s3_error e;

	append(s, "p/small", NULL, 10 * MIB + 5);
	append(s, "p/tiny", NULL, 100);
	r = cache_reader_create(s);
	assert_non_null(r);

	/* the first read asks for its own block only */
	prefetch_at(r, 0, 4096);
	assert_int_equal(store->ngets, 1);
	check_get(0, "p/big", 0, MIB, 1);
	assert_int_equal(store->gets[0].flags & S3_GET_WHOLE, 0);
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
	assert_true(store->gets[12].flags & S3_GET_WHOLE);
	assert_int_equal(store->gets[10].flags & S3_GET_WHOLE, 0);

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
	b = cache_block_create(c, seg, index, cache_block_len(c, seg, index),
			       true);
	pthread_mutex_unlock(&c->lock);
	assert_non_null(b);
	/* fetched as a reader does; the test answers for the store */
	pthread_mutex_lock(&c->lock);
	cache_block_fetch(&b, 1, s, false);
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

/* Waits until at least n GETs are recorded.  The reader issues all of a
 * read's GETs under the cache lock and lets it go only to wait for data,
 * so once the count moves, that read has issued everything it will. */
static void wait_gets(struct cache *c, unsigned n)
{
	for (int i = 0; i < 5000; i++) {
		unsigned seen;

		pthread_mutex_lock(&c->lock);
		seen = store->ngets;
		pthread_mutex_unlock(&c->lock);
		if (seen >= n)
			return;
		usleep(1000);
	}
	fail_msg("the reader issued %u GETs, expected %u", store->ngets, n);
}

static void check_urgent(unsigned i, bool urgent)
{
	assert_int_equal((store->gets[i].flags & S3_GET_URGENT) != 0, urgent);
}

/*
 * A new reader's window is max_window from the start, and a read that has
 * to wait asks for its own block first (urgent) and for the rest of the
 * window before it waits.  After a seek the window restarts at two blocks
 * and doubles when a read waited.
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
	wait_gets(c, 1);
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
	store->gets[0].buffer_done(store->gets[0].arg, 0);
	store->gets[0].done(store->gets[0].arg, NULL);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(j.rc, 0);
	assert_int_equal(j.view.bytes, 4096);
	cache_view_release(c, &j.view);
	assert_int_equal(j.r->window, 32 * MIB);

	/* a seek: its own block, urgent, then a window of two blocks */
	first = store->ngets;
	j.offset = 60 * MIB;
	assert_int_equal(pthread_create(&t, NULL, read_job_run, &j), 0);
	wait_gets(c, first + 1);
	pthread_mutex_lock(&c->lock);
	assert_int_equal(store->ngets, first + 2);
	pthread_mutex_unlock(&c->lock);
	check_get(first, "p/big", 60 * MIB, MIB, 1);
	check_urgent(first, true);
	check_get(first + 1, "p/big", 61 * MIB, MIB, 1);
	check_urgent(first + 1, false);
	store->gets[first].buffer_done(store->gets[first].arg, 0);
	store->gets[first].done(store->gets[first].arg, NULL);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(j.rc, 0);
	assert_int_equal(j.view.bytes, 4096);
	cache_view_release(c, &j.view);
	/* it waited: the window doubled */
	assert_int_equal(j.r->window, 4 * MIB);

	/* the two GETs that ended leave the list; the engine ends the rest */
	store->gets[first] = store->gets[--store->ngets];
	store->gets[0] = store->gets[--store->ngets];
	cancel_gets();
	cache_reader_destroy(j.r);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_append_segments),
	    cmocka_unit_test(test_append_overflow),
	    cmocka_unit_test(test_find_boundaries),
	    cmocka_unit_test(test_find_empty),
	    cmocka_unit_test(test_find_many),
	    cmocka_unit_test(test_take_page),
	    cmocka_unit_test(test_take_page_odd),
	    cmocka_unit_test(test_stream_size),
	    cmocka_unit_test(test_stream_wait),
	    cmocka_unit_test(test_stream_want),
	    cmocka_unit_test(test_block_len),
	    cmocka_unit_test(test_frontier_to_position),
	    cmocka_unit_test(test_read_at_end),
	    cmocka_unit_test(test_read_across_objects),
	    cmocka_unit_test(test_prefetch_runs),
	    cmocka_unit_test(test_prefetch_ahead_objects),
	    cmocka_unit_test(test_wait_opens_window),
	};

	return cmocka_run_group_tests(tests, make_store, free_store);
}
