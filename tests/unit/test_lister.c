/*
 * test_lister: the catalog (compact entries, ETags and modified times kept
 * exactly, times clamped to 32 bits, key order apart from arrival order)
 * and the saved listing (times round-trip, an old version is refused) and
 * the parallel lister (listed times reach the catalog): split keys
 * strictly between their ends, valid UTF-8 and increasing; listings of
 * uniform, skewed and adversarial key sets with 1, 4 and 32 listers that
 * give exactly the keys, in order, each once; fewer round trips in a row
 * with more listers; a million shards (one dense run, sparse names under
 * deep folders, unicode) within 1.1 requests a page of 1,000 keys;
 * failed and hostile pages.
 *
 * The store here is the test's own: a sorted array of keys served by one
 * thread, one queued request after another, answering start-after and
 * continuation tokens as S3 does (a token is the index to go on from),
 * able to fail the Nth request or to answer hostile pages.
 */
#include "config.h"

#include "cache/catalog.h"
#include "cache/internal.h"
#include "cache/lister.h"
#include "cache/listing_file.h"
#include "store/store.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sys/mman.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "util/util.h"

/* ---- the store ---- */

struct queued {
	struct queued *next;
	struct timespec due; /* with latency: when it is answered */
	char *token;
	char *start_after;
	char *prefix;
	unsigned max_keys;
	store_list_done_fn *done;
	void *arg;
};

enum hostile {
	HONEST = 0,
	OUT_OF_ORDER,	/* a page's keys swapped */
	NO_START_AFTER, /* start-after ignored: from the prefix's start */
	NO_TOKEN,	/* truncated, but no token */
	OUTSIDE_PREFIX	/* a key not under the prefix */
};

struct key_store {
	struct store store;
	char **keys; /* sorted by strcmp */
	size_t n;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	struct queued *head, *tail;
	bool stopping;
	pthread_t thread;
	unsigned requests;
	unsigned fail_at; /* fail request number fail_at (from 1); 0: never */
	enum hostile hostile;
	unsigned start_after_requests;
	struct cache *cache; /* over this store, for the lister */
	/* latency_ms > 0: each answer comes that long after its request
	 * (side by side, as S3 answers), or with serial after the answer
	 * before it (a server of one thread) */
	unsigned latency_ms;
	bool serial;
};

/* The modified time the store lists for its key number i. */
#define KS_MTIME(i) ((int64_t)1700000000 + (int64_t)(i)*3)

static size_t first_after(const struct key_store *ks, const char *after)
{
	size_t lo = 0, hi = ks->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(ks->keys[mid], after) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void answer(struct key_store *ks, struct queued *q, unsigned number)
{
	struct store_list_page page;
	struct store_error err;
	size_t plen = strlen(q->prefix), i;
	char token[32];

	memset(&page, 0, sizeof(page));
	if (number == ks->fail_at) {
		memset(&err, 0, sizeof(err));
		err.err = EIO;
		err.http_status = 500;
		snprintf(err.message, sizeof(err.message), "injected failure");
		q->done(q->arg, NULL, &err);
		return;
	}
	if (q->token)
		i = strtoul(q->token, NULL, 10);
	else if (ks->hostile == NO_START_AFTER)
		i = 0;
	else
		i = first_after(ks, q->start_after ? q->start_after : "");
	while (i < ks->n && strncmp(ks->keys[i], q->prefix, plen) < 0)
		i++;
	page.objects = calloc(q->max_keys + 1, sizeof(*page.objects));
	assert_non_null(page.objects);
	for (; i < ks->n && strncmp(ks->keys[i], q->prefix, plen) == 0; i++) {
		if (page.count == q->max_keys) {
			page.truncated = true;
			if (ks->hostile != NO_TOKEN) {
				snprintf(token, sizeof(token), "%zu", i);
				page.next_token = strdup(token);
			}
			break;
		}
		page.objects[page.count].key = strdup(ks->keys[i]);
		page.objects[page.count].etag = strdup("\"0123456789abcdef"
						       "0123456789abcdef\"");
		page.objects[page.count].size = 1 + i % 7;
		page.objects[page.count].mtime = KS_MTIME(i);
		page.count++;
	}
	if (ks->hostile == OUT_OF_ORDER && page.count >= 2) {
		char *t = page.objects[0].key;

		page.objects[0].key = page.objects[1].key;
		page.objects[1].key = t;
	}
	if (ks->hostile == OUTSIDE_PREFIX && page.count >= 1) {
		free(page.objects[page.count - 1].key);
		page.objects[page.count - 1].key = strdup("zzz-not-here");
	}
	q->done(q->arg, &page, NULL);
}

static void *serve(void *arg)
{
	struct key_store *ks = arg;

	pthread_mutex_lock(&ks->lock);
	for (;;) {
		struct queued *q = ks->head;
		unsigned number;

		if (!q && ks->stopping)
			break;
		if (!q) {
			pthread_cond_wait(&ks->wake, &ks->lock);
			continue;
		}
		ks->head = q->next;
		if (!ks->head)
			ks->tail = NULL;
		number = ++ks->requests;
		pthread_mutex_unlock(&ks->lock);
		if (ks->latency_ms && ks->serial) {
			struct timespec d = {0, ks->latency_ms * 1000000L};

			nanosleep(&d, NULL);
		} else if (ks->latency_ms) {
			while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME,
					       &q->due, NULL) == EINTR)
				;
		}
		answer(ks, q, number);
		free(q->token);
		free(q->start_after);
		free(q->prefix);
		free(q);
		pthread_mutex_lock(&ks->lock);
	}
	pthread_mutex_unlock(&ks->lock);
	return NULL;
}

static int ks_list(struct store *st, const struct store_list *req)
{
	struct key_store *ks = (struct key_store *)st;
	struct queued *q = calloc(1, sizeof(*q));

	assert_non_null(q);
	assert_true(req->max_keys >= 1 && req->max_keys <= 1000);
	q->token = util_strdup0(req->token);
	q->start_after = util_strdup0(req->start_after);
	q->prefix = strdup(req->prefix ? req->prefix : "");
	q->max_keys = req->max_keys;
	q->done = req->done;
	q->arg = req->arg;
	clock_gettime(CLOCK_MONOTONIC, &q->due);
	q->due.tv_nsec += (long)ks->latency_ms * 1000000L;
	q->due.tv_sec += q->due.tv_nsec / 1000000000L;
	q->due.tv_nsec %= 1000000000L;
	pthread_mutex_lock(&ks->lock);
	if (!req->token && req->start_after && *req->start_after)
		ks->start_after_requests++;
	if (ks->tail)
		ks->tail->next = q;
	else
		ks->head = q;
	ks->tail = q;
	pthread_cond_signal(&ks->wake);
	pthread_mutex_unlock(&ks->lock);
	return 0;
}

static int ks_get(struct store *st, const struct store_get *req)
{
	(void)st;
	(void)req;
	return EINVAL;
}

static int ks_head(struct store *st, const struct store_head *req)
{
	(void)st;
	(void)req;
	return EINVAL;
}

static void ks_stats(struct store *st, struct store_stats *out)
{
	(void)st;
	memset(out, 0, sizeof(*out));
}

static void ks_destroy(struct store *st)
{
	struct key_store *ks = (struct key_store *)st;

	pthread_mutex_lock(&ks->lock);
	ks->stopping = true;
	pthread_cond_signal(&ks->wake);
	pthread_mutex_unlock(&ks->lock);
	pthread_join(ks->thread, NULL);
	cache_destroy(ks->cache);
	for (size_t i = 0; i < ks->n; i++)
		free(ks->keys[i]);
	free(ks->keys);
	free(ks);
}

static const struct store_ops ks_ops = {
    .get = ks_get,
    .list = ks_list,
    .head = ks_head,
    .get_stats = ks_stats,
    .destroy = ks_destroy,
};

static int key_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A store of keys[0..n) (taken over, sorted here, duplicates dropped). */
static struct key_store *key_store_new(char **keys, size_t n)
{
	struct key_store *ks = calloc(1, sizeof(*ks));
	size_t kept = 0;

	assert_non_null(ks);
	if (n) /* (an empty set has no array) */
		qsort(keys, n, sizeof(*keys), key_cmp);
	for (size_t i = 0; i < n; i++) {
		if (kept && strcmp(keys[kept - 1], keys[i]) == 0)
			free(keys[i]);
		else
			keys[kept++] = keys[i];
	}
	ks->store.ops = &ks_ops;
	ks->store.max_parallel = 64;
	ks->keys = keys;
	ks->n = kept;
	pthread_mutex_init(&ks->lock, NULL);
	pthread_cond_init(&ks->wake, NULL);
	assert_int_equal(pthread_create(&ks->thread, NULL, serve, ks), 0);
	return ks;
}

/* A cache over ks, for the lister (which lists through the cache's
 * store); freed with the store at the end of the test run. */
static struct cache *cache_over(struct key_store *ks)
{
	struct cache_conf conf;

	cache_conf_init(&conf);
	conf.budget_bytes = 4 << 20;
	conf.block_size = 1 << 20;
	ks->cache = cache_create(&conf, &ks->store);
	assert_non_null(ks->cache);
	return ks->cache;
}

/* ---- key sets ---- */

struct keys {
	char **v;
	size_t n, cap;
};

static void add_key(struct keys *k, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void add_key(struct keys *k, const char *fmt, ...)
{
	char buf[1100];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (k->n == k->cap) {
		k->cap = k->cap ? k->cap * 2 : 1024;
		k->v = realloc(k->v, k->cap * sizeof(*k->v));
		assert_non_null(k->v);
	}
	k->v[k->n] = strdup(buf);
	assert_non_null(k->v[k->n]);
	k->n++;
}

/* n keys numbered in one flat folder */
static struct keys uniform_keys(size_t n)
{
	struct keys k = {0};

	for (size_t i = 0; i < n; i++)
		add_key(&k, "data/img-%07zu.jpg", i);
	return k;
}

/* most keys under one deep folder; shallow, deep, unicode, high code
 * points, a key and its extensions, keys that differ in their last byte */
static struct keys skewed_keys(size_t n)
{
	static const char *const groups[] = {
	    "data/a/b/c/d/e/f/g/", "data/meta-", "data/ñ/",
	    "data/日本/",	   "data/😀/",	 "data/with space+plus/",
	    "data/\xc3\xbf/",	   "data/z",
	};
	struct keys k = {0};
	size_t big = n * 7 / 10;

	for (size_t i = 0; i < big; i++)
		add_key(&k, "data/img/train/n01/%07zu.jpg", i);
	for (size_t g = 0; g < sizeof(groups) / sizeof(groups[0]); g++)
		for (size_t i = 0; i < (n - big) / 8; i++)
			add_key(&k, "%s%05zu", groups[g], i);
	add_key(&k, "data/ext/k");
	add_key(&k, "data/ext/k0");
	add_key(&k, "data/ext/k00");
	add_key(&k, "data/last/a");
	add_key(&k, "data/last/b");
	return k;
}

/* A hash of j, to place sparse names (splitmix64's finalizer). */
static uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* Name j of count spread over [0, space): its own slot, a hash within. */
static uint64_t sparse(size_t j, size_t count, uint64_t space)
{
	uint64_t slot = space / (count ? count : 1);

	slot = slot ? slot : 1;
	return (uint64_t)j * slot + mix64(j) % slot;
}

/*
 * A dataset's shards, as the test server's skewed layout has them: 70 %
 * one run of sequential names, the rest in sparse names (times, hashed
 * hex, letters) under deep folders, a deep fixed folder, and unicode.
 */
static struct keys shard_keys(size_t n)
{
	static const char *const unicode[] = {"ñ", "日本語", "ｶﾀｶﾅ", "😀"};
	struct keys k = {0};
	size_t run = n * 7 / 10, per = n / 100;

	for (size_t i = 0; i < run; i++)
		add_key(&k, "data/train/shard-%07zu.tar", i);
	for (size_t i = 0; i < 3 * per; i++)
		add_key(&k, "data/val/shard-%06zu.tar", i);
	for (size_t i = 0; i < 6 * per; i++) {
		time_t t = (time_t)(1672531200 +
				    sparse(i, 6 * per, 3 * 365 * 86400ULL));
		struct tm tm;
		char when[32];

		gmtime_r(&t, &tm);
		strftime(when, sizeof(when), "%Y/%m/%d/%H/%M%S", &tm);
		add_key(&k, "data/logs/%s-%08x.log", when,
			(unsigned)(mix64(i) >> 32));
	}
	for (size_t i = 0; i < 10 * per; i++) {
		unsigned long long h = sparse(i, 10 * per, 1ULL << 48);

		add_key(&k, "data/features/%02llx/%02llx/%012llx.npy", h >> 40,
			h >> 32 & 0xff, h);
	}
	for (size_t i = 0; i < 4 * per; i++) {
		uint64_t v = sparse(i, 4 * per, 5429503678976ULL); /* 26^9 */
		char name[10] = {0};

		for (int c = 8; c >= 0; c--, v /= 26)
			name[c] = (char)('a' + v % 26);
		add_key(&k, "data/users/%s/profile.json", name);
	}
	for (size_t i = 0; i < 2 * per; i++) {
		unsigned long long step =
		    sparse(i / 8, 2 * per / 8 + 1, 1000000000000ULL);

		add_key(&k, "data/ckpt/epoch-%03llu/step-%012llu/rank-%zu.pt",
			step / 1000000000ULL, step, i % 8);
	}
	for (size_t i = 0; i < per; i++)
		add_key(&k, "data/a/b/c/d/e/f/g/h/i/j/k/%05zu.bin", i);
	for (size_t i = 0; i < per / 2; i++) {
		add_key(&k, "data/manifest-%06zu.json", i);
		add_key(&k, "data/with space+plus/%05zu copy+1.bin", i);
	}
	for (size_t u = 0; u < 4; u++)
		for (size_t i = 0; i < per / (u < 2 ? 1 : 2); i++)
			add_key(&k, "data/%s/%05zu.txt", unicode[u], i);
	return k;
}

/* keys that differ only in their last byte, and chains of extensions */
static struct keys adversarial_keys(void)
{
	struct keys k = {0};

	for (int c = 0x21; c < 0x7f; c++)
		add_key(&k, "data/same/xxxxxxxxxxxxxxxxxxxx%c", c);
	for (int len = 1; len < 200; len++)
		add_key(&k, "data/ext/%.*s", len,
			"0000000000000000000000000000000000000000000000000"
			"0000000000000000000000000000000000000000000000000"
			"0000000000000000000000000000000000000000000000000"
			"00000000000000000000000000000000000000000000000000");
	for (uint32_t cp = 0x7f; cp < 0x3000; cp += 37) {
		char s[8] = {0};

		if (cp < 0x800) {
			s[0] = (char)(0xC0 | cp >> 6);
			s[1] = (char)(0x80 | (cp & 0x3F));
		} else {
			s[0] = (char)(0xE0 | cp >> 12);
			s[1] = (char)(0x80 | (cp >> 6 & 0x3F));
			s[2] = (char)(0x80 | (cp & 0x3F));
		}
		add_key(&k, "data/u/%s/%s", s, s);
	}
	add_key(&k, "data/\xf4\x8f\xbf\xbf");
	return k;
}

/* ---- running a listing ---- */

struct outcome {
	struct cache_lister_stats stats;
	int rc;
	struct store_error err;
	unsigned start_after_requests;
	unsigned requests;
	size_t keys;	     /* the store's */
	struct cache *cache; /* over this store, for the lister */
};

/* Lists prefix of the keys with max_listers from a store that answers
 * after latency_ms, side by side, and checks the catalog holds exactly
 * the keys under prefix, in order, each once. */
static struct outcome list_and_check_at(struct keys k, const char *prefix,
					unsigned max_listers,
					unsigned page_keys, unsigned latency_ms)
{
	struct key_store *ks = key_store_new(k.v, k.n);
	struct cache_catalog *cat = cache_catalog_create("b", prefix);
	struct cache_lister_conf conf;
	struct cache_lister *l;
	struct outcome out;
	size_t expect = 0, plen = strlen(prefix), pos = 0;
	char key[CACHE_KEY_MAX + 1];

	assert_non_null(cat);
	memset(&out, 0, sizeof(out));
	ks->latency_ms = latency_ms;
	cache_lister_conf_init(&conf);
	conf.max_listers = max_listers;
	conf.page_keys = page_keys;
	conf.first_page_keys = page_keys;
	/* how ranges split, not how fast this store answers (below) */
	conf.paced = false;
	l = cache_lister_start(cache_over(ks), cat, &conf);
	assert_non_null(l);
	out.rc = cache_lister_wait(l, SIZE_MAX - 1, &out.err);
	cache_lister_get_stats(l, &out.stats);
	if (out.rc == ENODATA) {
		for (size_t i = 0; i < ks->n; i++) {
			if (strncmp(ks->keys[i], prefix, plen) != 0)
				continue;
			assert_true(pos < cache_catalog_count(cat));
			assert_true(
			    cache_catalog_key(cat, cache_catalog_at(cat, pos),
					      key, sizeof(key)) > 0);
			assert_string_equal(key, ks->keys[i]);
			assert_int_equal(cache_catalog_mtime(
					     cat, cache_catalog_at(cat, pos)),
					 KS_MTIME(i));
			pos++;
			expect++;
		}
		assert_int_equal(cache_catalog_count(cat), expect);
		assert_int_equal(cache_catalog_entries(cat), expect);
		assert_true(out.stats.complete);
	}
	cache_lister_destroy(l);
	cache_catalog_destroy(cat);
	out.start_after_requests = ks->start_after_requests;
	out.requests = ks->requests;
	out.keys = ks->n;
	ks_destroy(&ks->store);
	return out;
}

static struct outcome list_and_check(struct keys k, const char *prefix,
				     unsigned max_listers, unsigned page_keys)
{
	return list_and_check_at(k, prefix, max_listers, page_keys, 0);
}

/* ---- tests: the catalog ---- */

static void test_catalog_entries(void **state)
{
	struct cache_catalog *cat = cache_catalog_create("bkt", "pre/");
	char buf[CACHE_KEY_MAX + 1];
	static const char *const etags[] = {
	    "\"0123456789abcdef0123456789abcdef\"",
	    "\"0123456789abcdef0123456789abcdef-17\"",
	    "\"0123456789ABCDEF0123456789abcdef\"",
	    "W/\"weak\"",
	    "",
	    NULL,
	};
	uint32_t e;

	(void)state;
	assert_non_null(cat);
	for (unsigned i = 0; i < 6; i++) {
		char key[64];

		snprintf(key, sizeof(key), "pre/k%u", i);
		assert_int_equal(cache_catalog_add(cat, key, etags[i], 1000 + i,
						   1700000000 + i, &e),
				 0);
		assert_int_equal(e, i);
	}
	for (unsigned i = 0; i < 6; i++) {
		bool has = cache_catalog_etag(cat, i, buf, sizeof(buf));

		assert_int_equal(has, etags[i] != NULL);
		assert_string_equal(buf, etags[i] ? etags[i] : "");
		assert_int_equal(cache_catalog_size(cat, i), 1000 + i);
		assert_int_equal(cache_catalog_mtime(cat, i), 1700000000 + i);
		assert_true(cache_catalog_key(cat, i, buf, sizeof(buf)) > 0);
		snprintf(buf + 100, 64, "pre/k%u", i);
		assert_string_equal(buf, buf + 100);
	}
	/* a buffer too small for the key */
	assert_int_equal(cache_catalog_key(cat, 0, buf, 5), 0);
	/* hostile entries */
	assert_int_equal(cache_catalog_add(cat, "other/k", NULL, 1, 0, &e),
			 EINVAL);
	assert_int_equal(cache_catalog_add(cat, "pre/huge", NULL,
					   CACHE_OBJECT_SIZE_MAX + 1, 0, &e),
			 EINVAL);
	/* an ETag goes into a header: no CR or LF */
	assert_int_equal(
	    cache_catalog_add(cat, "pre/x", "\"a\"\r\nX-Evil: 1", 1, 0, &e),
	    EINVAL);
	memset(buf, 'x', sizeof(buf));
	memcpy(buf, "pre/", 4);
	buf[CACHE_KEY_MAX + 0] = '\0'; /* 1024 bytes: allowed */
	assert_int_equal(cache_catalog_add(cat, buf, NULL, 1, 0, &e), 0);
	assert_int_equal(cache_catalog_entries(cat), 7);
	assert_int_equal(cache_catalog_mtime(cat, 6), 0);
	cache_catalog_truncate(cat, 6);
	assert_int_equal(cache_catalog_entries(cat), 6);
	/* no positions until given */
	assert_int_equal(cache_catalog_count(cat), 0);
	cache_catalog_destroy(cat);
}

/* A manifest's entries are added before a HEAD tells their size and
 * ETag, which are learnt later, in any form, and again. */
static void test_catalog_learn(void **state)
{
	struct cache_catalog *cat = cache_catalog_create("bkt", "pre/");
	char buf[CACHE_KEY_MAX + 1];
	static const char *const etags[] = {
	    "\"0123456789abcdef0123456789abcdef\"",
	    "\"0123456789abcdef0123456789abcdef-17\"",
	    "W/\"weak\"",
	    NULL,
	};
	uint32_t e;

	(void)state;
	assert_non_null(cat);
	for (unsigned i = 0; i < 4; i++) {
		snprintf(buf, sizeof(buf), "pre/k%u", i);
		assert_int_equal(cache_catalog_add(cat, buf, NULL, 0, 0, &e),
				 0);
		assert_false(cache_catalog_etag(cat, e, buf, sizeof(buf)));
		assert_int_equal(cache_catalog_size(cat, e), 0);
	}
	for (unsigned round = 0; round < 2; round++) {
		for (unsigned i = 0; i < 4; i++) {
			/* the second round moves every ETag to another
			 * form: text beside the name and back */
			const char *etag = etags[(i + round) % 4];
			char want[32];

			assert_int_equal(cache_catalog_learn(cat, i, etag,
							     100 * i + round,
							     1700000000 + i),
					 0);
			assert_int_equal(
			    cache_catalog_etag(cat, i, buf, sizeof(buf)),
			    etag != NULL);
			assert_string_equal(buf, etag ? etag : "");
			assert_int_equal(cache_catalog_size(cat, i),
					 100 * i + round);
			assert_int_equal(cache_catalog_mtime(cat, i),
					 1700000000 + i);
			assert_true(
			    cache_catalog_key(cat, i, buf, sizeof(buf)));
			snprintf(want, sizeof(want), "pre/k%u", i);
			assert_string_equal(buf, want);
		}
	}
	/* hostile answers change nothing */
	assert_int_equal(
	    cache_catalog_learn(cat, 0, "\"a\"\r\nX-Evil: 1", 1, 0), EINVAL);
	assert_int_equal(
	    cache_catalog_learn(cat, 0, NULL, CACHE_OBJECT_SIZE_MAX + 1, 0),
	    EINVAL);
	assert_int_equal(cache_catalog_size(cat, 0), 1);
	assert_true(cache_catalog_etag(cat, 0, buf, sizeof(buf)));
	assert_string_equal(buf, etags[1]);
	cache_catalog_destroy(cat);
}

static void test_catalog_order(void **state)
{
	struct cache_catalog *cat = cache_catalog_create("b", "");
	uint32_t e;

	(void)state;
	for (unsigned i = 0; i < 10000; i++) {
		char key[32];

		snprintf(key, sizeof(key), "%05u", i);
		assert_int_equal(
		    cache_catalog_add(cat, key, NULL, i + 1, i * 1000, &e), 0);
	}
	/* in arrival order first: no memory for positions */
	assert_int_equal(cache_catalog_order(cat, 0, 100), 0);
	assert_int_equal(cache_catalog_at(cat, 99), 99);
	/* then runs out of arrival order */
	assert_int_equal(cache_catalog_order(cat, 5000, 5000), 0);
	assert_int_equal(cache_catalog_order(cat, 100, 4900), 0);
	assert_int_equal(cache_catalog_count(cat), 10000);
	assert_int_equal(cache_catalog_at(cat, 0), 0);
	assert_int_equal(cache_catalog_at(cat, 99), 99);
	assert_int_equal(cache_catalog_at(cat, 100), 5000);
	assert_int_equal(cache_catalog_at(cat, 5099), 9999);
	assert_int_equal(cache_catalog_at(cat, 5100), 100);
	assert_int_equal(cache_catalog_at(cat, 9999), 4999);
	assert_int_equal(cache_catalog_mtime(cat, cache_catalog_at(cat, 100)),
			 5000 * 1000);
	/* about 37 bytes an entry plus the key, positions 4 */
	assert_true(cache_catalog_memory(cat) < 10000 * 48 + (2u << 20));
	cache_catalog_destroy(cat);
}

/* Times are kept as 32 bits of seconds: negative ones are 0, those past
 * 2106-02-07T06:28:15Z are UINT32_MAX; and they cost 4 bytes an entry. */
static void test_catalog_mtime(void **state)
{
	static const struct {
		int64_t in, kept;
	} cases[] = {
	    {0, 0},
	    {1, 1},
	    {1795798800, 1795798800},	  /* 2026-11-27T17:00:00Z */
	    {2147483648LL, 2147483648LL}, /* past 2038: unsigned */
	    {(int64_t)UINT32_MAX - 1, (int64_t)UINT32_MAX - 1},
	    {(int64_t)UINT32_MAX, (int64_t)UINT32_MAX},
	    {(int64_t)UINT32_MAX + 1, (int64_t)UINT32_MAX},
	    {(int64_t)1 << 40, (int64_t)UINT32_MAX},
	    {INT64_MAX, (int64_t)UINT32_MAX},
	    {-1, 0},
	    {-1795798800, 0},
	    {INT64_MIN, 0},
	};
	size_t n = sizeof(cases) / sizeof(cases[0]);
	struct cache_catalog *cat = cache_catalog_create("bkt", "pre/");
	uint64_t before, grown;
	uint32_t e;
	size_t added;

	(void)state;
	assert_non_null(cat);
	for (size_t i = 0; i < n; i++) {
		char key[32];

		snprintf(key, sizeof(key), "pre/%02zu", i);
		assert_int_equal(
		    cache_catalog_add(cat, key, NULL, i, cases[i].in, &e), 0);
	}
	for (size_t i = 0; i < n; i++)
		if (cache_catalog_mtime(cat, (uint32_t)i) != cases[i].kept)
			fail_msg(
			    "%lld kept as %lld, not %lld",
			    (long long)cases[i].in,
			    (long long)cache_catalog_mtime(cat, (uint32_t)i),
			    (long long)cases[i].kept);
	cache_catalog_destroy(cat);

	/* the memory of one chunk of entries, over the entries it holds:
	 * keys equal to the prefix (one byte of arena each) and no ETags */
	cat = cache_catalog_create("bkt", "pre/");
	assert_non_null(cat);
	assert_int_equal(cache_catalog_add(cat, "pre/", NULL, 1, 1, &e), 0);
	before = cache_catalog_memory(cat);
	for (added = 1; cache_catalog_memory(cat) == before; added++)
		assert_int_equal(cache_catalog_add(cat, "pre/", NULL, 1, 1, &e),
				 0);
	grown = cache_catalog_memory(cat) - before;
	/* the entry that grew the catalog starts the second chunk */
	added--;
	if (grown > (uint64_t)added * 37)
		fail_msg("%llu bytes for %zu entries: more than 37 an entry",
			 (unsigned long long)grown, added);
	assert_true(grown >= (uint64_t)added * 37);
	cache_catalog_destroy(cat);
}

/* ---- tests: the saved listing ---- */

static char saved_dir[64];

/* The modified time mixed_catalog() gives entry i, and the one it keeps. */
static int64_t mixed_mtime(size_t i)
{
	if (i % 5 == 4)
		return 0; /* unknown */
	if (i == 1)
		return INT64_MAX;
	if (i == 3)
		return -7;
	return 1700000000 + (int64_t)i * 61;
}

static int64_t mixed_mtime_kept(size_t i)
{
	return i == 1 ? (int64_t)UINT32_MAX : i == 3 ? 0 : mixed_mtime(i);
}

/* A catalog of n keys of every ETag kind, in an order of its own (the
 * file keeps key order, not arrival order). */
static struct cache_catalog *mixed_catalog(size_t n)
{
	struct cache_catalog *cat = cache_catalog_create("bkt", "pre/");
	static const char *const etags[] = {
	    "\"0123456789abcdef0123456789abcdef\"",
	    "\"fedcba9876543210fedcba9876543210-3\"",
	    "W/\"weak\"",
	    NULL,
	};
	uint32_t e;

	assert_non_null(cat);
	for (size_t i = 0; i < n; i++) {
		char key[64];

		snprintf(key, sizeof(key), "pre/%s/%06zu", i % 2 ? "b" : "a",
			 i);
		assert_int_equal(cache_catalog_add(cat, key, etags[i % 4],
						   i * 7, mixed_mtime(i), &e),
				 0);
		assert_int_equal(e, i);
	}
	/* key order: the "a" keys (even entries), then the "b" keys */
	for (size_t i = 0; i < n; i += 2)
		assert_int_equal(cache_catalog_order(cat, (uint32_t)i, 1), 0);
	for (size_t i = 1; i < n; i += 2)
		assert_int_equal(cache_catalog_order(cat, (uint32_t)i, 1), 0);
	return cat;
}

static void saved_path(char *out, size_t len)
{
	char name[48];

	if (!saved_dir[0]) {
		snprintf(saved_dir, sizeof(saved_dir),
			 "/tmp/test_lister.XXXXXX");
		assert_non_null(mkdtemp(saved_dir));
	}
	cache_catalog_file_name("bkt", "pre/", name);
	assert_int_equal(strlen(name), 40);
	snprintf(out, len, "%s/%s", saved_dir, name);
}

/* back holds what the mixed catalog cat holds, position by position: the
 * same keys, sizes, times (as kept) and ETags. */
/* Entry ea of mixed catalog cat and entry eb of back are the same. */
static void assert_mixed_entry(const struct cache_catalog *cat, uint32_t ea,
			       const struct cache_catalog *back, uint32_t eb)
{
	char a[CACHE_KEY_MAX + 1], b[CACHE_KEY_MAX + 1];
	bool ha, hb;

	assert_true(cache_catalog_key(cat, ea, a, sizeof(a)) > 0);
	assert_true(cache_catalog_key(back, eb, b, sizeof(b)) > 0);
	assert_string_equal(a, b);
	assert_int_equal(cache_catalog_size(cat, ea),
			 cache_catalog_size(back, eb));
	assert_int_equal(cache_catalog_mtime(cat, ea), mixed_mtime_kept(ea));
	assert_int_equal(cache_catalog_mtime(back, eb), mixed_mtime_kept(ea));
	ha = cache_catalog_etag(cat, ea, a, sizeof(a));
	hb = cache_catalog_etag(back, eb, b, sizeof(b));
	assert_int_equal(ha, hb);
	assert_string_equal(a, b);
}

static void assert_mixed_copy(const struct cache_catalog *cat,
			      const struct cache_catalog *back)
{
	assert_int_equal(cache_catalog_count(back), cache_catalog_count(cat));
	for (size_t pos = 0; pos < cache_catalog_count(cat); pos++)
		assert_mixed_entry(cat, cache_catalog_at(cat, pos), back,
				   cache_catalog_at(back, pos));
}

static void test_saved_roundtrip(void **state)
{
	struct cache_catalog *cat = mixed_catalog(9001), *back = NULL;
	char path[128];
	const char *why;
	int64_t at = 0;

	(void)state;
	saved_path(path, sizeof(path));
	assert_int_equal(cache_catalog_save(cat, path, 1000), 0);
	assert_int_equal(
	    cache_catalog_load(path, "bkt", "pre/", 1010, 60, &back, &at, &why),
	    0);
	assert_int_equal(at, 1000);
	assert_int_equal(cache_catalog_count(back), 9001);
	assert_mixed_copy(cat, back);
	cache_catalog_destroy(back);
	/* too old, from the future, another bucket or prefix */
	assert_int_equal(
	    cache_catalog_load(path, "bkt", "pre/", 1061, 60, &back, &at, &why),
	    ESTALE);
	assert_null(back);
	assert_int_equal(
	    cache_catalog_load(path, "bkt", "pre/", 999, 60, &back, &at, &why),
	    ESTALE);
	assert_int_equal(cache_catalog_load(path, "other", "pre/", 1010, 60,
					    &back, &at, &why),
			 EINVAL);
	assert_true(strlen(why) > 0);
	assert_int_equal(
	    cache_catalog_load(path, "bkt", "pre", 1010, 60, &back, &at, &why),
	    EINVAL);
	assert_null(back);
	cache_catalog_destroy(cat);
	unlink(path);
	assert_int_equal(
	    cache_catalog_load(path, "bkt", "pre/", 1010, 60, &back, &at, &why),
	    ENOENT);
}

/* zlib's crc32 (the saved listing's), bit by bit. */
static uint32_t crc32_ref(const unsigned char *p, size_t n)
{
	uint32_t c = 0xFFFFFFFFu;

	for (size_t i = 0; i < n; i++) {
		c ^= p[i];
		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0xEDB88320u : c >> 1;
	}
	return c ^ 0xFFFFFFFFu;
}

/* The saved file's bytes, with the version at byte 8 set to version and
 * the checksum made right again, written back over path. */
static void rewrite_version(const char *path, unsigned version)
{
	unsigned char data[4096];
	size_t len;
	uint32_t crc;
	FILE *f = fopen(path, "rb");

	assert_non_null(f);
	len = fread(data, 1, sizeof(data), f);
	fclose(f);
	assert_true(len > 16 && len < sizeof(data));
	assert_memory_equal(data, "S3PLIST\n", 8);
	/* the file was written with the current version and a right crc */
	assert_int_equal(data[8], 2);
	crc = crc32_ref(data, len - 4);
	assert_int_equal(data[len - 4] | data[len - 3] << 8 |
			     data[len - 2] << 16 |
			     (uint32_t)data[len - 1] << 24,
			 crc);
	data[8] = (unsigned char)version;
	crc = crc32_ref(data, len - 4);
	for (int i = 0; i < 4; i++)
		data[len - 4 + (size_t)i] = (unsigned char)(crc >> (8 * i));
	f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	fclose(f);
}

/* A listing saved by a version without times (1) is not read: the prefix
 * is listed again. */
/* A listing written an object at a time, as a stream records the pages it
 * takes, reads back a page at a time: the same objects, in order, the
 * last page marked; a failed or abandoned writer leaves no file. */
/*
 * A catalog kept in a memfd as an image (what a keeper holds for the next
 * worker) maps back in place: the same entries, numbered the same, in the
 * same order, and no
 * heap a key; written again smaller, the old bytes are gone.  An image not
 * finished, cut short, of another prefix, or a listing file, does not map;
 * a name offset changed under the mapping reads as an empty name, inside
 * it; a mapped catalog takes no entries.
 */
static void test_image_fd(void **state)
{
	struct cache_catalog *big = mixed_catalog(3000),
			     *small = mixed_catalog(7);
	struct cache_catalog *back = NULL;
	char path[128], key[CACHE_KEY_MAX + 1];
	const char *why;
	int64_t at = 0;
	int fd = memfd_create("test", MFD_CLOEXEC);
	struct mallinfo2 before, after;
	uint32_t e;
	unsigned char magic;
	uint64_t name_at, huge = UINT64_MAX / 2;
	struct stat sb;

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(cache_catalog_image_save_fd(big, fd, 500), 0);
	before = mallinfo2();
	assert_int_equal(
	    cache_catalog_image_map(fd, "bkt", "pre/", &back, &at, &why), 0);
	after = mallinfo2();
	/* the catalog's struct and its names, not a byte a key */
	assert_true(after.uordblks - before.uordblks < 1024);
	assert_int_equal(at, 500);
	assert_mixed_copy(big, back);
	/* the entries numbered as the catalog numbered them (the orders a
	 * worker keeps are entry numbers) */
	for (size_t pos = 0; pos < 3000; pos++)
		assert_int_equal(cache_catalog_at(back, pos),
				 cache_catalog_at(big, pos));
	assert_int_equal(cache_catalog_add(back, "pre/z", NULL, 1, 0, &e),
			 EROFS);
	assert_int_equal(cache_catalog_order(back, 0, 1), EROFS);
	assert_int_equal(cache_catalog_count(back), 3000);
	cache_catalog_destroy(back);
	back = NULL;
	assert_int_equal(cache_catalog_image_save_fd(small, fd, 600), 0);
	assert_int_equal(
	    cache_catalog_image_map(fd, "bkt", "pre/", &back, &at, &why), 0);
	assert_int_equal(at, 600);
	assert_mixed_copy(small, back);
	cache_catalog_destroy(back);
	back = NULL;
	/* another bucket or prefix */
	assert_int_equal(
	    cache_catalog_image_map(fd, "bkt", "pre", &back, &at, &why),
	    EINVAL);
	assert_non_null(strstr(why, "prefix"));
	assert_int_equal(
	    cache_catalog_image_map(fd, "other", "pre/", &back, &at, &why),
	    EINVAL);
	assert_null(back);
	/* a name's offset out of the text: an empty name, no crash */
	assert_int_equal(
	    pread(fd, &name_at, 8, 8 + 4 + 4 + 8 + 8 + 8 + 8 * 2 + 8 * 4), 8);
	assert_int_equal(pwrite(fd, &huge, 8, (off_t)name_at + 8), 8);
	assert_int_equal(
	    cache_catalog_image_map(fd, "bkt", "pre/", &back, &at, &why), 0);
	assert_int_equal(cache_catalog_key(back, 1, key, sizeof(key)), 4);
	assert_string_equal(key, "pre/");
	assert_true(cache_catalog_key(back, 0, key, sizeof(key)) > 4);
	cache_catalog_destroy(back);
	back = NULL;
	/* unfinished: no magic yet */
	assert_int_equal(pread(fd, &magic, 1, 0), 1);
	assert_int_equal(pwrite(fd, "x", 1, 0), 1);
	assert_int_equal(
	    cache_catalog_image_map(fd, "bkt", "pre/", &back, &at, &why),
	    EINVAL);
	assert_non_null(strstr(why, "finished"));
	assert_int_equal(pwrite(fd, &magic, 1, 0), 1);
	/* cut short */
	assert_int_equal(fstat(fd, &sb), 0);
	assert_int_equal(ftruncate(fd, sb.st_size - 1), 0);
	assert_int_equal(
	    cache_catalog_image_map(fd, "bkt", "pre/", &back, &at, &why),
	    EINVAL);
	assert_null(back);
	/* a listing file is not an image (it loads by its path) */
	saved_path(path, sizeof(path));
	assert_int_equal(cache_catalog_save(small, path, 700), 0);
	close(fd);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(
	    cache_catalog_image_map(fd, "bkt", "pre/", &back, &at, &why),
	    EINVAL);
	assert_null(back);
	close(fd);
	unlink(path);
	cache_catalog_destroy(big);
	cache_catalog_destroy(small);
}

/*
 * The worker that listed a catalog takes its own image over: the same entry
 * numbers and positions (its entries are not in key order), every field
 * read from the mapping, and its heap freed once dropped (about what the
 * catalog held, back from malloc).  An image of other entries is refused;
 * an image is taken over once; a catalog that took one takes no entries.
 */
static void test_image_adopt(void **state)
{
	struct cache_catalog *cat = mixed_catalog(3000),
			     *ref = mixed_catalog(3000),
			     *other = mixed_catalog(2999);
	struct mallinfo2 before, after;
	const char *why;
	uint64_t heap, freed;
	uint32_t e;
	int fd = memfd_create("test", MFD_CLOEXEC);

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(cache_catalog_image_save_fd(other, fd, 400), 0);
	assert_int_equal(cache_catalog_adopt_image(cat, fd, &why), EINVAL);
	assert_non_null(strstr(why, "other entries"));
	assert_int_equal(cache_catalog_image_save_fd(cat, fd, 500), 0);
	heap = cache_catalog_memory(cat);
	assert_int_equal(cache_catalog_adopt_image(cat, fd, &why), 0);
	assert_int_equal(cache_catalog_adopt_image(cat, fd, &why), EINVAL);
	before = mallinfo2();
	freed = cache_catalog_drop_heap(cat);
	after = mallinfo2();
	assert_true(freed > 3000 * 37 && freed < heap);
	/* (glibc's malloc: a sanitizer's tells nothing here) */
	if (before.uordblks)
		assert_true(before.uordblks - after.uordblks >= freed / 2);
	assert_int_equal(cache_catalog_drop_heap(cat), 0);
	assert_int_equal(cache_catalog_entries(cat), 3000);
	assert_int_equal(cache_catalog_count(cat), 3000);
	for (size_t pos = 0; pos < 3000; pos++)
		assert_int_equal(cache_catalog_at(cat, pos),
				 cache_catalog_at(ref, pos));
	/* (position 1 is entry 2: not in key order) */
	assert_int_equal(cache_catalog_at(cat, 1), 2);
	for (uint32_t i = 0; i < 3000; i++)
		assert_mixed_entry(ref, i, cat, i);
	assert_int_equal(cache_catalog_add(cat, "pre/z", NULL, 1, 0, &e),
			 EROFS);
	close(fd);
	cache_catalog_destroy(cat);
	cache_catalog_destroy(ref);
	cache_catalog_destroy(other);
}

/* An image a version before entries kept their numbers wrote (1: entries
 * in key order, no positions; what a SIGHUP upgrade finds in the keeper's
 * memfd) still maps. */
static void test_image_version1(void **state)
{
	struct cache_catalog *cat = cache_catalog_create("bkt", "pre/"),
			     *back = NULL;
	const char *why;
	int64_t at = 0;
	uint32_t e, one = 1;
	int fd = memfd_create("test", MFD_CLOEXEC);

	(void)state;
	assert_non_null(cat);
	assert_true(fd >= 0);
	for (size_t i = 0; i < 100; i++) {
		char key[32];

		snprintf(key, sizeof(key), "pre/%04zu", i);
		assert_int_equal(
		    cache_catalog_add(cat, key, NULL, i + 1, 0, &e), 0);
	}
	assert_int_equal(cache_catalog_order(cat, 0, 100), 0);
	assert_int_equal(cache_catalog_image_save_fd(cat, fd, 800), 0);
	/* the version, after the magic */
	assert_int_equal(pwrite(fd, &one, sizeof(one), 8), sizeof(one));
	assert_int_equal(
	    cache_catalog_image_map(fd, "bkt", "pre/", &back, &at, &why), 0);
	assert_int_equal(cache_catalog_count(back), 100);
	for (size_t pos = 0; pos < 100; pos++) {
		assert_int_equal(cache_catalog_at(back, pos), pos);
		assert_string_equal(cache_catalog_name(back, (uint32_t)pos),
				    cache_catalog_name(cat, (uint32_t)pos));
		assert_int_equal(cache_catalog_size(back, (uint32_t)pos),
				 pos + 1);
	}
	close(fd);
	cache_catalog_destroy(back);
	cache_catalog_destroy(cat);
}

static void test_saved_pages(void **state)
{
	struct cache_catalog *cat = mixed_catalog(2500);
	struct cache_listing_writer *w;
	struct cache_listing_file *f;
	struct store_list_page page;
	char path[128], key[CACHE_KEY_MAX + 1], etag[CACHE_ETAG_MAX + 1];
	const char *why;
	int64_t at = 0;
	size_t pos = 0;

	(void)state;
	saved_path(path, sizeof(path));
	unlink(path);
	assert_int_equal(
	    cache_listing_writer_begin(path, "bkt", "pre/", 2000, &w), 0);
	for (size_t i = 0; i < 2500; i++) {
		uint32_t e = cache_catalog_at(cat, i);
		bool has = cache_catalog_etag(cat, e, etag, sizeof(etag));

		assert_true(cache_catalog_key(cat, e, key, sizeof(key)) > 0);
		assert_int_equal(
		    cache_listing_writer_add(w, key, has ? etag : NULL,
					     cache_catalog_size(cat, e),
					     cache_catalog_mtime(cat, e)),
		    0);
	}
	assert_true(access(path, F_OK) != 0); /* not before the commit */
	assert_int_equal(cache_listing_writer_commit(w), 0);
	assert_int_equal(cache_listing_file_open(path, "bkt", "pre/", 2005, 60,
						 &f, &at, &why),
			 0);
	assert_int_equal(at, 2000);
	assert_int_equal(cache_listing_file_count(f), 2500);
	for (int n = 0; n < 3; n++) {
		assert_int_equal(cache_listing_file_page(f, 1000, &page), 0);
		assert_int_equal(page.count, n < 2 ? 1000 : 500);
		assert_int_equal(page.truncated, n < 2);
		assert_null(page.next_token);
		for (size_t i = 0; i < page.count; i++, pos++) {
			uint32_t e = cache_catalog_at(cat, pos);
			bool has =
			    cache_catalog_etag(cat, e, etag, sizeof(etag));

			assert_true(
			    cache_catalog_key(cat, e, key, sizeof(key)) > 0);
			assert_string_equal(page.objects[i].key, key);
			assert_int_equal(page.objects[i].etag != NULL, has);
			if (has)
				assert_string_equal(page.objects[i].etag, etag);
			assert_int_equal(page.objects[i].size,
					 cache_catalog_size(cat, e));
			assert_int_equal(page.objects[i].mtime,
					 cache_catalog_mtime(cat, e));
		}
		store_list_page_clear(&page);
	}
	cache_listing_file_close(f);
	/* going on past a key: the next page starts after it */
	assert_int_equal(cache_listing_file_open(path, "bkt", "pre/", 2005, 60,
						 &f, &at, &why),
			 0);
	assert_true(cache_catalog_key(cat, cache_catalog_at(cat, 1499), key,
				      sizeof(key)) > 0);
	assert_int_equal(cache_listing_file_skip_through(f, key), 0);
	assert_int_equal(cache_listing_file_page(f, 2000, &page), 0);
	assert_int_equal(page.count, 1000);
	assert_false(page.truncated);
	assert_true(cache_catalog_key(cat, cache_catalog_at(cat, 1500), key,
				      sizeof(key)) > 0);
	assert_string_equal(page.objects[0].key, key);
	store_list_page_clear(&page);
	cache_listing_file_close(f);
	cache_catalog_destroy(cat);
	/* a key the file cannot hold fails the writer: no file */
	unlink(path);
	assert_int_equal(
	    cache_listing_writer_begin(path, "bkt", "pre/", 2000, &w), 0);
	assert_int_equal(cache_listing_writer_add(w, "other/x", NULL, 1, 0),
			 EINVAL);
	assert_int_equal(cache_listing_writer_add(w, "pre/x", NULL, 1, 0),
			 EINVAL);
	assert_int_equal(cache_listing_writer_commit(w), EINVAL);
	assert_true(access(path, F_OK) != 0);
	assert_int_equal(
	    cache_listing_writer_begin(path, "bkt", "pre/", 2000, &w), 0);
	assert_int_equal(cache_listing_writer_add(w, "pre/x", NULL, 1, 0), 0);
	cache_listing_writer_abort(w);
	assert_true(access(path, F_OK) != 0);
	/* an empty listing: one page of nothing, the last */
	assert_int_equal(
	    cache_listing_writer_begin(path, "bkt", "pre/", 2000, &w), 0);
	assert_int_equal(cache_listing_writer_commit(w), 0);
	assert_int_equal(cache_listing_file_open(path, "bkt", "pre/", 2005, 60,
						 &f, &at, &why),
			 0);
	assert_int_equal(cache_listing_file_page(f, 1000, &page), 0);
	assert_int_equal(page.count, 0);
	assert_false(page.truncated);
	store_list_page_clear(&page);
	cache_listing_file_close(f);
	unlink(path);
}

static void test_saved_old_version(void **state)
{
	struct cache_catalog *cat = mixed_catalog(10), *back = NULL;
	char path[128];
	const char *why;
	int64_t at;

	(void)state;
	saved_path(path, sizeof(path));
	assert_int_equal(cache_catalog_save(cat, path, 5), 0);
	/* rewritten as version 2 (what it is): still read */
	rewrite_version(path, 2);
	assert_int_equal(
	    cache_catalog_load(path, "bkt", "pre/", 5, 1, &back, &at, &why), 0);
	assert_int_equal(cache_catalog_count(back), 10);
	assert_int_equal(cache_catalog_mtime(back, 0), mixed_mtime_kept(0));
	cache_catalog_destroy(back);
	back = NULL;
	rewrite_version(path, 1);
	assert_int_equal(
	    cache_catalog_load(path, "bkt", "pre/", 5, 1, &back, &at, &why),
	    EINVAL);
	assert_null(back);
	assert_string_equal(why, "it is not a listing of this version");
	cache_catalog_destroy(cat);
	unlink(path);
}

/* Every byte flipped, and every length cut, is refused, never crashes. */
static void test_saved_corrupt(void **state)
{
	struct cache_catalog *cat = mixed_catalog(40), *back = NULL;
	char path[128];
	unsigned char *data;
	const char *why;
	int64_t at;
	long len;
	FILE *f;

	(void)state;
	saved_path(path, sizeof(path));
	assert_int_equal(cache_catalog_save(cat, path, 5), 0);
	cache_catalog_destroy(cat);
	f = fopen(path, "rb");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	rewind(f);
	data = malloc((size_t)len);
	assert_non_null(data);
	assert_int_equal(fread(data, 1, (size_t)len, f), (size_t)len);
	fclose(f);
	for (long i = 0; i < len; i++) {
		data[i] ^= 0x40;
		f = fopen(path, "wb");
		assert_non_null(f);
		fwrite(data, 1, (size_t)len, f);
		fclose(f);
		assert_int_equal(cache_catalog_load(path, "bkt", "pre/", 5, 1,
						    &back, &at, &why),
				 EINVAL);
		assert_null(back);
		data[i] ^= 0x40;
	}
	for (long cut = 0; cut < len; cut++) {
		f = fopen(path, "wb");
		assert_non_null(f);
		fwrite(data, 1, (size_t)cut, f);
		fclose(f);
		assert_int_equal(cache_catalog_load(path, "bkt", "pre/", 5, 1,
						    &back, &at, &why),
				 EINVAL);
		assert_null(back);
	}
	free(data);
	unlink(path);
	rmdir(saved_dir);
}

/* ---- tests: split keys ---- */

/*
 * Plans the split of a range that listed count keys of a page from first
 * to last, up to until, with room; checks the parts' keys lie strictly
 * between last and until, increasing, valid UTF-8 under "data/"; returns
 * how many parts (the range's own included) and the number's class.
 */
static unsigned check_plan(const char *first, const char *last, uint64_t count,
			   const char *until, unsigned room,
			   const char **digits)
{
	struct lister_part parts[SPLIT_PARTS];
	struct lister_number nb;
	unsigned n;

	*digits = NULL;
	if (!number_init(&nb, 5, first, last, NULL))
		return 0;
	number_density(&nb, first, count);
	*digits = nb.digits;
	n = split_plan(&nb, until, room, 8000, parts);
	assert_true(n >= 1 && n <= room + 1);
	assert_null(parts[0].after);
	for (unsigned i = 1; i < n; i++) {
		assert_true(strcmp(parts[i].after,
				   i > 1 ? parts[i - 1].after : last) > 0);
		if (until)
			assert_true(strcmp(parts[i].after, until) < 0);
		assert_true(util_utf8_valid(parts[i].after));
		assert_memory_equal(parts[i].after, "data/", 5);
	}
	for (unsigned i = 1; i < n; i++)
		free(parts[i].after);
	return n;
}

static void test_split_keys(void **state)
{
	static const char *const ends[][2] = {
	    /* a key and its extension; keys that differ in their last byte */
	    {"data/k", "data/k0"},
	    {"data/k", "data/k00000"},
	    {"data/x/a", "data/x/b"},
	    {"data/x/a", "data/x/c"},
	    {"data/k", "data/k\x01"},
	    /* unicode ends, and ends sharing a multi-byte character's lead */
	    {"data/日本/00001", "data/日本/99999"},
	    {"data/日", "data/旧"},
	    {"data/😀/1", NULL},
	    {"data/\xf4\x8f\xbf\xbe", NULL},
	    {"data/ñ/00001.txt", "data/日本語/00001.txt"},
	};
	const char *digits;

	(void)state;
	/* one dense run of shards: decimal digits; the other digits of the
	 * level, one part for each digit before it, one search past them */
	assert_true(check_plan("data/train/shard-0000000.tar",
			       "data/train/shard-0000999.tar", 1000, NULL, 31,
			       &digits) > 3);
	assert_string_equal(digits, "0123456789");
	/* with its end among the digits, no search: the other digits at the
	 * level and one guess for the rest of the digit before it ... */
	assert_int_equal(check_plan("data/train/shard-0100000.tar",
				    "data/train/shard-0130999.tar", 31000,
				    "data/train/shard-1", 15, &digits),
			 8);
	/* ... and parts known to hold keys halved up to the room */
	assert_int_equal(check_plan("data/train/shard-0000000.tar",
				    "data/train/shard-0299999.tar", 300000,
				    "data/train/shard-1", 15, &digits),
			 16);
	/* nothing to share: no split */
	assert_int_equal(check_plan("data/train/shard-0100000.tar",
				    "data/train/shard-0100999.tar", 1000,
				    "data/train/shard-0101", 15, &digits),
			 1);
	/* no room: no split */
	assert_int_equal(check_plan("data/train/shard-0000000.tar",
				    "data/train/shard-0000999.tar", 1000, NULL,
				    0, &digits),
			 1);
	/* hashed names that differ in a letter are hex; names, letters;
	 * dates, decimal with their separators */
	check_plan("data/features/dc/00/dc00a1b2c3d4.npy",
		   "data/features/dd/70/dd70d802ebcf.npy", 1000, NULL, 31,
		   &digits);
	assert_string_equal(digits, "0123456789abcdef");
	check_plan("data/users/aadawrnij/profile.json",
		   "data/users/ahxbbqzzk/profile.json", 1000, NULL, 31,
		   &digits);
	assert_string_equal(digits, "abcdefghijklmnopqrstuvwxyz");
	check_plan("data/logs/2023/01/01/00/2535-00000000.log",
		   "data/logs/2023/01/19/05/2844-68925370.log", 1000, NULL, 31,
		   &digits);
	assert_string_equal(digits, "0123456789");
	/* ends of every kind: whatever is planned lies between */
	for (size_t i = 0; i < sizeof(ends) / sizeof(ends[0]); i++)
		for (unsigned room = 0; room < 32; room += 7) {
			check_plan(ends[i][0], ends[i][0], 1, ends[i][1], room,
				   &digits);
			check_plan("data/", ends[i][0], 100, ends[i][1], room,
				   &digits);
		}
	/* ends that are not valid UTF-8, or shorter than the prefix */
	assert_int_equal(
	    check_plan("data/\xff", "data/\xff\xfe", 10, NULL, 4, &digits), 1);
	assert_int_equal(check_plan("", "", 1, NULL, 4, &digits), 0);
}

/* ---- tests: listings ---- */

/* the round trips in a row, which the test asserts next */
static void report(const char *what, const struct outcome *one,
		   const struct outcome *many)
{
	print_message("%s: 1 lister %u round trips, 32 listers %u\n", what,
		      one->stats.depth, many->stats.depth);
}

static void test_list_uniform(void **state)
{
	struct outcome one, many;

	(void)state;
	one = list_and_check(uniform_keys(60000), "data/", 1, 1000);
	many = list_and_check(uniform_keys(60000), "data/", 32, 1000);
	assert_int_equal(one.rc, ENODATA);
	assert_int_equal(many.rc, ENODATA);
	assert_int_equal(one.stats.ranges, 1);
	assert_int_equal(one.stats.depth, 60);
	assert_true(many.stats.ranges > 1);
	/* (parts of at least 8 pages: 7 of the 60 at once) */
	assert_true(many.stats.in_flight_max >= 5);
	assert_true(many.start_after_requests > 0);
	report("uniform 60000 keys", &one, &many);
	assert_true(many.stats.depth * 3 < one.stats.depth);
}

static void test_list_skewed(void **state)
{
	struct outcome one, many;

	(void)state;
	one = list_and_check(skewed_keys(100000), "data/", 1, 1000);
	many = list_and_check(skewed_keys(100000), "data/", 32, 1000);
	assert_int_equal(one.rc, ENODATA);
	assert_int_equal(many.rc, ENODATA);
	report("skewed 100000 keys", &one, &many);
	assert_true(many.stats.depth * 2 < one.stats.depth);
	/* a sub-prefix of it, and small pages */
	many = list_and_check(skewed_keys(20000), "data/img/", 4, 100);
	assert_int_equal(many.rc, ENODATA);
}

/*
 * A million shards (shard_keys) with 1, 4 and 32 listers against a store
 * that answers side by side: every key once, in order; the requests at
 * most 1.1 times the pages of 1,000 keys (exactly those with one lister);
 * with 4 and 32 listers, as many in flight, and round trips in a row not
 * far above the pages shared among them.
 */
static void test_list_shards(void **state)
{
	static const unsigned listers[] = {1, 4, 32};

	(void)state;
	for (unsigned i = 0; i < 3; i++) {
		struct outcome o =
		    list_and_check_at(shard_keys(1000000), "data/", listers[i],
				      1000, listers[i] > 1 ? 5 : 0);
		const struct cache_lister_stats *st = &o.stats;
		size_t pages = (o.keys + 999) / 1000;

		print_message("shards, %zu keys, %u listers: %u requests for "
			      "%zu pages, %llu ranges (%llu empty), %u in "
			      "flight at most, %u round trips, %llu keys "
			      "answered twice\n",
			      o.keys, listers[i], o.requests, pages,
			      (unsigned long long)st->ranges,
			      (unsigned long long)st->empty, st->in_flight_max,
			      st->depth, (unsigned long long)st->discarded);
		assert_int_equal(o.rc, ENODATA);
		if (listers[i] == 1)
			assert_int_equal(o.requests, pages);
		assert_true(o.requests * 10 <= pages * 11);
		assert_int_equal(st->in_flight_max, listers[i]);
		/* (32: the dense run is found after a few searches, and its
		 * parts are halved to the room) */
		assert_true(st->depth <= pages / listers[i] * 3 / 2 + 30);
	}
}

static void test_list_adversarial(void **state)
{
	struct outcome o;

	(void)state;
	for (unsigned listers = 1; listers <= 32; listers *= 4) {
		o = list_and_check(adversarial_keys(), "data/", listers, 7);
		assert_int_equal(o.rc, ENODATA);
	}
	/* one key; none; a prefix with no keys */
	{
		struct keys k = {0};

		add_key(&k, "data/only");
		o = list_and_check(k, "data/", 32, 1000);
		assert_int_equal(o.rc, ENODATA);
	}
	{
		struct keys k = {0};

		o = list_and_check(k, "data/", 32, 1000);
		assert_int_equal(o.rc, ENODATA);
		assert_int_equal(o.stats.pages, 1);
	}
	o = list_and_check(uniform_keys(500), "nothing/", 32, 10);
	assert_int_equal(o.rc, ENODATA);
}

static void test_list_failures(void **state)
{
	static const enum hostile kinds[] = {NO_TOKEN, OUTSIDE_PREFIX};

	(void)state;
	/* a request that fails (after the engine's retries) fails the
	 * listing with its error, whichever it was */
	for (unsigned at = 1; at <= 30; at += 13) {
		struct keys k = uniform_keys(30000);
		struct key_store *ks = key_store_new(k.v, k.n);
		struct cache_catalog *cat = cache_catalog_create("b", "data/");
		struct cache_lister_conf conf;
		struct cache_lister *l;
		struct store_error err;

		ks->fail_at = at;
		cache_lister_conf_init(&conf);
		conf.paced = false;
		l = cache_lister_start(cache_over(ks), cat, &conf);
		assert_non_null(l);
		assert_int_equal(cache_lister_wait(l, SIZE_MAX - 1, &err), EIO);
		assert_int_equal(err.http_status, 500);
		assert_string_equal(err.message, "injected failure");
		cache_lister_destroy(l);
		cache_catalog_destroy(cat);
		ks_destroy(&ks->store);
	}
	for (unsigned i = 0; i < 2; i++) {
		struct keys k = uniform_keys(5000);
		struct key_store *ks = key_store_new(k.v, k.n);
		struct cache_catalog *cat = cache_catalog_create("b", "data/");
		struct cache_lister *l;
		struct store_error err;

		ks->hostile = kinds[i];
		l = cache_lister_start(cache_over(ks), cat, NULL);
		assert_non_null(l);
		assert_int_equal(cache_lister_wait(l, SIZE_MAX - 1, &err), EIO);
		assert_int_equal(err.http_status, 0);
		assert_true(strlen(err.message) > 10);
		cache_lister_destroy(l);
		cache_catalog_destroy(cat);
		ks_destroy(&ks->store);
	}
}

/*
 * A server that does not list in key order from a start-after (S3
 * Express directory buckets: no start-after, no order): the listing
 * starts again as one range and takes keys in the order given, all of
 * them, once.
 */
static void test_list_unordered(void **state)
{
	static const enum hostile kinds[] = {NO_START_AFTER, OUT_OF_ORDER};

	(void)state;
	for (unsigned i = 0; i < 2; i++) {
		struct keys k = uniform_keys(20000);
		struct key_store *ks = key_store_new(k.v, k.n);
		struct cache_catalog *cat = cache_catalog_create("b", "data/");
		struct cache_lister_conf conf;
		struct cache_lister_stats st;
		struct cache_lister *l;
		char key[CACHE_KEY_MAX + 1];
		size_t seen = 0;

		ks->hostile = kinds[i];
		cache_lister_conf_init(&conf);
		conf.paced = false; /* splits at once */
		l = cache_lister_start(cache_over(ks), cat, &conf);
		assert_non_null(l);
		assert_int_equal(cache_lister_wait(l, SIZE_MAX - 1, NULL),
				 ENODATA);
		cache_lister_get_stats(l, &st);
		assert_int_equal(st.listers, 1);
		assert_int_equal(cache_catalog_count(cat), 20000);
		/* every key once: the server's keys, as a set */
		for (size_t p = 0; p < 20000; p++) {
			assert_true(cache_catalog_key(cat,
						      cache_catalog_at(cat, p),
						      key, sizeof(key)) > 0);
			if (strcmp(key, ks->keys[p]) == 0)
				seen++;
		}
		/* in order, but for the pairs the server swapped */
		assert_true(seen >= (i == 0 ? 20000 : 20000 / 1000 * 998));
		cache_lister_destroy(l);
		cache_catalog_destroy(cat);
		ks_destroy(&ks->store);
	}
}

/*
 * The pace: against a store that answers requests side by side (as S3
 * does) the listers double up to the most; against one that answers one
 * at a time, more listers list no faster, and they stay few.
 */
static unsigned paced_listers(bool serial, unsigned latency_ms, size_t n)
{
	struct keys k = uniform_keys(n);
	struct key_store *ks = key_store_new(k.v, k.n);
	struct cache_catalog *cat = cache_catalog_create("b", "data/");
	struct cache_lister_conf conf;
	struct cache_lister_stats st;
	struct cache_lister *l;

	ks->latency_ms = latency_ms;
	ks->serial = serial;
	cache_lister_conf_init(&conf);
	conf.page_keys = 50;
	conf.first_page_keys = 50;
	l = cache_lister_start(cache_over(ks), cat, &conf);
	assert_non_null(l);
	assert_int_equal(cache_lister_wait(l, SIZE_MAX - 1, NULL), ENODATA);
	assert_int_equal(cache_catalog_count(cat), n);
	cache_lister_get_stats(l, &st);
	print_message("%s store, %u ms a request: %u listers at the end, "
		      "%u in flight at most, %llu requests, %u round trips\n",
		      serial ? "serial" : "parallel", latency_ms, st.listers,
		      st.in_flight_max, (unsigned long long)ks->requests,
		      st.depth);
	cache_lister_destroy(l);
	cache_catalog_destroy(cat);
	ks_destroy(&ks->store);
	return serial ? st.listers : st.in_flight_max;
}

static void test_list_pace(void **state)
{
	(void)state;
	/* (100 ms: what the lister itself does with a page, even under
	 * valgrind on a loaded machine, stays small beside it; the pace
	 * stops growing only when a round takes 1.5 times the first) */
	assert_true(paced_listers(false, 100, 20000) >= 16);
	assert_true(paced_listers(true, 30, 4000) <= 8);
}

/* Positions are given in key order while later ranges are still being
 * listed: a reader can wait for the first ones. */
static void test_list_streams(void **state)
{
	struct keys k = uniform_keys(20000);
	struct key_store *ks = key_store_new(k.v, k.n);
	struct cache_catalog *cat = cache_catalog_create("b", "data/");
	struct cache_lister *l;
	char key[CACHE_KEY_MAX + 1];

	(void)state;
	l = cache_lister_start(cache_over(ks), cat, NULL);
	assert_non_null(l);
	assert_int_equal(cache_lister_wait(l, 0, NULL), 0);
	assert_true(cache_catalog_count(cat) >= 1);
	assert_true(cache_catalog_key(cat, cache_catalog_at(cat, 0), key,
				      sizeof(key)) > 0);
	assert_string_equal(key, "data/img-0000000.jpg");
	assert_int_equal(cache_lister_wait(l, 19999, NULL), 0);
	assert_int_equal(cache_lister_wait(l, 20000, NULL), ENODATA);
	cache_lister_destroy(l);
	cache_catalog_destroy(cat);
	ks_destroy(&ks->store);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_catalog_entries),
	    cmocka_unit_test(test_catalog_learn),
	    cmocka_unit_test(test_catalog_order),
	    cmocka_unit_test(test_catalog_mtime),
	    cmocka_unit_test(test_saved_roundtrip),
	    cmocka_unit_test(test_saved_pages),
	    cmocka_unit_test(test_image_fd),
	    cmocka_unit_test(test_image_adopt),
	    cmocka_unit_test(test_image_version1),
	    cmocka_unit_test(test_saved_old_version),
	    cmocka_unit_test(test_saved_corrupt),
	    cmocka_unit_test(test_split_keys),
	    cmocka_unit_test(test_list_uniform),
	    cmocka_unit_test(test_list_skewed),
	    cmocka_unit_test(test_list_shards),
	    cmocka_unit_test(test_list_adversarial),
	    cmocka_unit_test(test_list_failures),
	    cmocka_unit_test(test_list_pace),
	    cmocka_unit_test(test_list_unordered),
	    cmocka_unit_test(test_list_streams),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
