/*
 * test_channel: a channel's epochs end to end, byte for byte.
 *
 * A serving test store (tests/unit/test_store.h) holds the objects and
 * answers LIST, HEAD and GET from its own thread; a cache sits over it and
 * channels are built from hand-made channel_spec structs, as fs/ builds
 * them from the command line.  Every epoch is read through
 * channel_reader_read() with several read sizes and compared with bytes
 * the test builds itself: the objects concatenated in the order the test
 * works out (key order, channel_order() of the seed and epoch, this host's
 * positions), framed by the test's own RecordIO encoder, and decoded again
 * by the test's own RecordIO decoder (magic, flags, lengths, zero
 * padding), so neither side trusts channel/recordio.c.
 *
 * Covered: S3Prefix listing mode with and without RecordIO (empty objects
 * and folder markers skipped, every padding length), RecordIO parts split
 * at a tiny part_max, plan mode (shuffle, sharding with and without it),
 * manifests resolved by HEAD a few entries ahead, failures in the middle
 * of an epoch (a missing key, an augmented line with an error) that give
 * the bytes before them and then EIO, the cache hit by a second epoch in
 * another order, and channel_epoch_size(); the objects' counts, their
 * points and the image a worker hands over.
 */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "channel/internal.h"
#include "channel/object_counts.h"
#include "tests/unit/channel_fixture.h"
#include "tests/unit/test_store.h"

#define KIB 1024ull
#define MIB (1024ull * 1024)

#define MAX_OBJS     64
#define MAX_SPECS    8
#define MAX_CHANNELS 8
#define WATCHDOG_S   300 /* a hung epoch fails the run (SIGALRM) */

/* ---- the store, the cache and channels ---- */

struct obj {
	char key[64];
	unsigned char *data;
	size_t size;
};

struct fx {
	struct test_store *ts;
	struct cache *c;
	struct obj objs[MAX_OBJS];
	unsigned nobjs;
	struct channel_spec specs[MAX_SPECS];
	unsigned nspecs;
	struct channel *chs[MAX_CHANNELS];
	unsigned nchs;
};

/* What a test has open, for the teardown after a failed assertion. */
static struct fx *live_fx;
static struct channel_reader *live_reader;

static void fx_fini(struct fx *f);

static int watchdog(void **state)
{
	(void)state;
	alarm(WATCHDOG_S);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	alarm(0);
	channel_reader_close(live_reader);
	live_reader = NULL;
	if (live_fx)
		fx_fini(live_fx);
	return 0;
}

/* list_page_keys: small values make a listing take many pages (the first
 * one half as many keys); kept: the kept set's quota (conf.kept_max). */
static void fx_init_kept(struct fx *f, uint64_t budget, uint64_t block_size,
			 unsigned page_keys, uint64_t kept)
{
	struct cache_conf conf;

	memset(f, 0, sizeof(*f));
	live_fx = f;
	f->ts = test_store_create(true, 4);
	assert_non_null(f->ts);
	cache_conf_init(&conf);
	conf.budget_bytes = budget;
	conf.block_size = block_size;
	conf.list_page_keys = page_keys;
	conf.first_page_keys = page_keys / 2 ? page_keys / 2 : 1;
	conf.kept_max = kept;
	f->c = cache_create(&conf, &f->ts->store);
	assert_non_null(f->c);
}

static void fx_init(struct fx *f, uint64_t budget, uint64_t block_size,
		    unsigned page_keys)
{
	fx_init_kept(f, budget, block_size, page_keys, CACHE_KEPT_AUTO);
}

/* The store first (what it still answers lands in the cache), then the
 * channels, then the cache. */
static void fx_fini(struct fx *f)
{
	live_fx = NULL;
	test_store_destroy(f->ts);
	for (unsigned i = 0; i < f->nchs; i++)
		channel_destroy(f->chs[i]);
	cache_destroy(f->c);
	for (unsigned i = 0; i < f->nspecs; i++)
		channel_spec_free(&f->specs[i]);
	for (unsigned i = 0; i < f->nobjs; i++)
		free(f->objs[i].data);
}

/* An object of size bytes (a pattern of its own per key) in the store. */
static struct obj *fx_put(struct fx *f, const char *key, size_t size)
{
	struct obj *o;

	assert_true(f->nobjs < MAX_OBJS);
	o = &f->objs[f->nobjs++];
	snprintf(o->key, sizeof(o->key), "%s", key);
	o->size = size;
	o->data = malloc(size ? size : 1);
	assert_non_null(o->data);
	for (size_t i = 0; i < size; i++)
		o->data[i] = test_store_byte(key, i);
	test_store_put(f->ts, key, "\"v1\"", o->data, size);
	return o;
}

static void fx_put_text(struct fx *f, const char *key, const char *text)
{
	test_store_put(f->ts, key, "\"m1\"", text, strlen(text));
}

static const struct obj *fx_obj(const struct fx *f, const char *key)
{
	for (unsigned i = 0; i < f->nobjs; i++)
		if (strcmp(f->objs[i].key, key) == 0)
			return &f->objs[i];
	fail_msg("no object %s", key);
	return NULL;
}

/* The object a decoded payload is, by its bytes (the index in keys). */
static size_t identify(const struct obj *const *objs, size_t n,
		       const unsigned char *payload, size_t len)
{
	size_t found = n;

	for (size_t i = 0; i < n; i++) {
		if (objs[i]->size == len &&
		    memcmp(objs[i]->data, payload, len) == 0) {
			assert_int_equal(found, n); /* unambiguous */
			found = i;
		}
	}
	if (found == n)
		fail_msg("a record of %zu bytes is none of the objects", len);
	return found;
}

/* A fresh spec "train" of data_type over s3://bucket/path. */
static struct channel_spec *
fx_spec(struct fx *f, enum channel_data_type data_type, const char *path)
{
	struct channel_spec *sp;
	char uri[256];

	assert_true(f->nspecs < MAX_SPECS);
	sp = &f->specs[f->nspecs++];
	memset(sp, 0, sizeof(*sp));
	snprintf(sp->name, sizeof(sp->name), "train");
	snprintf(uri, sizeof(uri), "s3://bucket/%s", path);
	sp->uri = strdup(uri);
	sp->bucket = strdup("bucket");
	sp->prefix = strdup(path);
	assert_non_null(sp->uri);
	assert_non_null(sp->bucket);
	assert_non_null(sp->prefix);
	sp->data_type = data_type;
	return sp;
}

static void spec_attributes(struct channel_spec *sp, const char *a,
			    const char *b)
{
	sp->attributes = calloc(2, sizeof(*sp->attributes));
	assert_non_null(sp->attributes);
	sp->attributes[0] = strdup(a);
	sp->attributes[1] = strdup(b);
	sp->nattributes = 2;
}

/* A channel over sp for host index of count, started; conf NULL for the
 * defaults. */
static struct channel *fx_channel_host(struct fx *f,
				       const struct channel_spec *sp,
				       unsigned index, unsigned count,
				       const struct channel_conf *conf)
{
	struct channel_host host = {.index = index, .count = count};
	struct channel_conf defaults;
	struct channel *ch;
	char err[512] = "";
	int rc;

	channel_conf_init(&defaults);
	ch = channel_create(sp, &host, conf ? conf : &defaults, f->c);
	assert_non_null(ch);
	assert_true(f->nchs < MAX_CHANNELS);
	f->chs[f->nchs++] = ch;
	rc = channel_start(ch, err, sizeof(err));
	if (rc)
		fail_msg("channel_start: %d (%s)", rc, err);
	return ch;
}

static struct channel *fx_channel(struct fx *f, const struct channel_spec *sp,
				  const struct channel_conf *conf)
{
	return fx_channel_host(f, sp, 0, 1, conf);
}

/* GETs the store has answered, and all its requests (GET, LIST, HEAD):
 * for a manifest channel, which lists nothing, the difference is the
 * HEADs. */
static unsigned store_gets(struct fx *f)
{
	unsigned n;

	pthread_mutex_lock(&f->ts->lock);
	n = f->ts->get_count;
	pthread_mutex_unlock(&f->ts->lock);
	return n;
}

static uint64_t store_requests(struct fx *f)
{
	uint64_t n;

	pthread_mutex_lock(&f->ts->lock);
	n = f->ts->stats.requests;
	pthread_mutex_unlock(&f->ts->lock);
	return n;
}

/* ---- reading epochs ---- */

static const size_t sz_one[] = {1};
static const size_t sz_odd[] = {3, 7, 1, 13, 2};
static const size_t sz_page[] = {4096};
static const size_t sz_mixed[] = {5, 65536, 2, 131072, 511};
static const size_t sz_big[] = {1 << 20};

struct sizes {
	const size_t *v;
	size_t n;
};

/* a pattern in an initializer, and one as an argument */
#define SIZES(a)                                                               \
	{                                                                      \
		a, sizeof(a) / sizeof(a[0])                                    \
	}
#define SZ(a) ((struct sizes)SIZES(a))

static const struct sizes all_sizes[] = {SIZES(sz_odd), SIZES(sz_page),
					 SIZES(sz_mixed), SIZES(sz_big)};
#define NSIZES (sizeof(all_sizes) / sizeof(all_sizes[0]))

/*
 * Reads epoch from offset 0 to its end or first error, in reads whose
 * sizes cycle through sz, appending what comes to out.  A read returns at
 * most what was asked, its iovecs add up to its byte count, the position
 * follows, and an error is returned again by the next read (it never turns
 * into an end of file).  Returns 0 at the end, or the error.
 */
static int read_epoch(struct channel *ch, unsigned epoch, struct sizes sz,
		      struct buf *out)
{
	struct channel_reader *r = channel_reader_open(ch, epoch);
	struct channel_view v;
	uint64_t pos = 0;
	size_t i = 0, n;
	int rc;

	assert_non_null(r);
	live_reader = r;
	assert_int_equal(channel_reader_position(r), 0);
	for (;;) {
		size_t want = sz.v[i++ % sz.n];
		size_t sum = 0;

		memset(&v, 0, sizeof(v));
		rc = channel_reader_read(r, pos, want, &v);
		if (rc == 0) {
			assert_true(v.bytes <= want);
			for (int k = 0; k < v.count; k++) {
				buf_add(out, v.iov[k].iov_base,
					v.iov[k].iov_len);
				sum += v.iov[k].iov_len;
			}
			assert_int_equal(sum, v.bytes);
		} else {
			assert_int_equal(v.bytes, 0);
		}
		n = v.bytes;
		channel_view_release(r, &v);
		pos += n;
		if (rc || n == 0)
			break;
		assert_int_equal(channel_reader_position(r), pos);
	}
	if (rc) {
		int again;

		memset(&v, 0, sizeof(v));
		again = channel_reader_read(r, pos, 4096, &v);
		n = v.bytes;
		channel_view_release(r, &v);
		assert_int_equal(again, rc);
		assert_int_equal(n, 0);
	}
	live_reader = NULL;
	channel_reader_close(r);
	return rc;
}

/* Reads the rest of r from pos on, in 64 KiB reads, appending to out;
 * 0 at the end or the error. */
static int read_open_reader_rest(struct channel_reader *r, uint64_t pos,
				 struct buf *out)
{
	struct channel_view v;
	int rc;

	for (;;) {
		memset(&v, 0, sizeof(v));
		rc = channel_reader_read(r, pos, 65536, &v);
		for (int k = 0; !rc && k < v.count; k++)
			buf_add(out, v.iov[k].iov_base, v.iov[k].iov_len);
		pos += v.bytes;
		channel_view_release(r, &v);
		if (rc || !v.bytes)
			return rc;
	}
}

/* Reads epoch with every read-size pattern; each must give want. */
static void check_epoch(struct channel *ch, unsigned epoch,
			const struct buf *want)
{
	for (size_t s = 0; s < NSIZES; s++) {
		struct buf got = {0};

		assert_int_equal(read_epoch(ch, epoch, all_sizes[s], &got), 0);
		assert_same_bytes(&got, want);
		buf_free(&got);
	}
}

/* Reads epoch with every pattern; each must give want, then fail with
 * err. */
static void check_epoch_fails(struct channel *ch, unsigned epoch,
			      const struct buf *want, int err)
{
	for (size_t s = 0; s < NSIZES; s++) {
		struct buf got = {0};

		assert_int_equal(read_epoch(ch, epoch, all_sizes[s], &got),
				 err);
		assert_same_bytes(&got, want);
		buf_free(&got);
	}
}

static void check_epoch_size(struct channel *ch, unsigned epoch, uint64_t want)
{
	uint64_t size = 12345;

	assert_true(channel_epoch_size(ch, epoch, &size));
	assert_int_equal(size, want);
}

static void check_epoch_size_unknown(struct channel *ch, unsigned epoch)
{
	uint64_t size = 12345;

	assert_false(channel_epoch_size(ch, epoch, &size));
	assert_int_equal(size, 0);
}

/* ---- S3Prefix, listing mode ---- */

/*
 * Objects under data/ of every size 0..9 (so every padding length), two
 * of several blocks, a folder marker and an empty object (neither may
 * appear), plus one outside the prefix.  keep[0..*n): the non-empty objects
 * under data/ in key order.
 */
static void put_listing_set(struct fx *f, const struct obj **keep, size_t *n)
{
	char key[64];

	*n = 0;
	for (unsigned i = 0; i < 10; i++) {
		const struct obj *o;

		snprintf(key, sizeof(key), "data/a%02u", i);
		o = fx_put(f, key, i);
		if (i)
			keep[(*n)++] = o;
	}
	keep[(*n)++] = fx_put(f, "data/big1", 150000);
	keep[(*n)++] = fx_put(f, "data/big2", 70000);
	fx_put(f, "data/dir/", 0);
	keep[(*n)++] = fx_put(f, "data/m", 13);
	fx_put(f, "data/n-empty", 0);
	keep[(*n)++] = fx_put(f, "data/zz", 1);
	fx_put(f, "other/x", 100);
}

static void test_listing_plain(void **state)
{
	const struct obj *keep[MAX_OBJS];
	struct channel_spec *sp;
	struct channel *ch;
	struct buf want = {0}, got = {0};
	static struct fx f; /* outlives a failed assertion */
	size_t n;

	(void)state;
	fx_init(&f, 8 * MIB, 64 * KIB, 3);
	put_listing_set(&f, keep, &n);
	for (size_t i = 0; i < n; i++)
		buf_add(&want, keep[i]->data, keep[i]->size);
	assert_int_equal(want.len, 45 + 150000 + 70000 + 13 + 1);

	sp = fx_spec(&f, CHANNEL_S3_PREFIX, "data/");
	ch = fx_channel(&f, sp, NULL);
	/* one page of one key is listed: the size is not known yet */
	check_epoch_size_unknown(ch, 0);
	check_epoch(ch, 0, &want);
	check_epoch_size(ch, 0, want.len);
	/* every epoch of a listing channel is the same bytes; each lists
	 * again, and its size is known once its listing is */
	check_epoch(ch, 1, &want);
	check_epoch_size(ch, 1, want.len);
	check_epoch_size_unknown(ch, 7);
	assert_int_equal(read_epoch(ch, 2, SZ(sz_one), &got), 0);
	assert_same_bytes(&got, &want);

	buf_free(&got);
	buf_free(&want);
	fx_fini(&f);
}

static void test_listing_recordio(void **state)
{
	const struct obj *keep[MAX_OBJS];
	struct channel_spec *sp;
	struct channel *ch;
	struct buf want = {0}, got = {0};
	struct recs recs;
	static struct fx f; /* outlives a failed assertion */
	size_t n;

	(void)state;
	fx_init(&f, 8 * MIB, 64 * KIB, 3);
	put_listing_set(&f, keep, &n);
	for (size_t i = 0; i < n; i++)
		frame_record(&want, keep[i]->data, keep[i]->size,
			     CHANNEL_RECORDIO_PART_MAX);

	sp = fx_spec(&f, CHANNEL_S3_PREFIX, "data/");
	sp->wrapper = CHANNEL_WRAPPER_RECORDIO;
	ch = fx_channel(&f, sp, NULL);
	check_epoch_size_unknown(ch, 0);
	check_epoch(ch, 0, &want);
	check_epoch_size(ch, 0, want.len);
	assert_int_equal(read_epoch(ch, 1, SZ(sz_one), &got), 0);
	assert_same_bytes(&got, &want);

	/* decoded: one whole record per non-empty object, in key order */
	decode_recordio(&got, &recs);
	assert_int_equal(recs.n, n);
	assert_int_equal(recs.nparts, n);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(recs.flags[i], 0);
		assert_int_equal(recs.len[i], keep[i]->size);
		assert_memory_equal(recs.data.p + recs.off[i], keep[i]->data,
				    keep[i]->size);
	}
	/* sizes 1..9 put every padding length in the stream: 8 + 1 + 3 for
	 * the first record, 8 + 4 + 0 for the fourth */
	assert_int_equal(get_le32(got.p + 4), 1);
	assert_int_equal(get_le32(got.p + 12), RIO_MAGIC);

	recs_free(&recs);
	buf_free(&got);
	buf_free(&want);
	fx_fini(&f);
}

/* The parts each payload length becomes with part_max 8: (flag, len). */
struct part_case {
	size_t len;
	unsigned nparts;
	unsigned flag[8];
	uint32_t plen[8];
};

static const struct part_case part_cases[] = {
    {0, 1, {0}, {0}},
    {7, 1, {0}, {7}},
    {8, 1, {0}, {8}},
    {9, 2, {1, 3}, {8, 1}},
    {16, 2, {1, 3}, {8, 8}},
    {17, 3, {1, 2, 3}, {8, 8, 1}},
    {25, 4, {1, 2, 2, 3}, {8, 8, 8, 1}},
};
#define NPART_CASES (sizeof(part_cases) / sizeof(part_cases[0]))

/* Checks decoded parts from part index *at against case c. */
static void check_parts(const struct recs *recs, unsigned *at,
			const struct part_case *c)
{
	for (unsigned k = 0; k < c->nparts; k++, (*at)++) {
		assert_true(*at < recs->nparts);
		assert_int_equal(recs->flags[*at], c->flag[k]);
		assert_int_equal(recs->lens[*at], c->plen[k]);
	}
}

static void test_recordio_parts(void **state)
{
	struct channel_conf conf;
	struct channel_spec *sp;
	struct channel *ch;
	const struct obj *objs[NPART_CASES];
	struct buf want = {0}, got = {0};
	struct recs recs;
	unsigned at = 0, nobj = 0;
	static struct fx f; /* outlives a failed assertion */

	(void)state;
	fx_init(&f, 8 * MIB, 64 * KIB, 2);
	for (size_t i = 0; i < NPART_CASES; i++) {
		char key[32];

		snprintf(key, sizeof(key), "p/%02zu", part_cases[i].len);
		objs[i] = fx_put(&f, key, part_cases[i].len);
		if (part_cases[i].len)
			frame_record(&want, objs[i]->data, objs[i]->size, 8);
	}
	/* 16 + 16 + 28 + 32 + 44 + 60, worked out by hand */
	assert_int_equal(want.len, 196);

	channel_conf_init(&conf);
	conf.recordio_part_max = 8;
	sp = fx_spec(&f, CHANNEL_S3_PREFIX, "p/");
	sp->wrapper = CHANNEL_WRAPPER_RECORDIO;
	ch = fx_channel(&f, sp, &conf);
	check_epoch(ch, 0, &want);
	check_epoch_size(ch, 0, 196);
	assert_int_equal(read_epoch(ch, 1, SZ(sz_one), &got), 0);
	assert_same_bytes(&got, &want);

	/* the empty object is skipped; the others are split as the table
	 * says, and put back together they are the objects */
	decode_recordio(&got, &recs);
	for (size_t i = 0; i < NPART_CASES; i++) {
		if (!part_cases[i].len)
			continue;
		check_parts(&recs, &at, &part_cases[i]);
		assert_int_equal(recs.len[nobj], objs[i]->size);
		assert_memory_equal(recs.data.p + recs.off[nobj], objs[i]->data,
				    objs[i]->size);
		nobj++;
	}
	assert_int_equal(at, recs.nparts);
	assert_int_equal(nobj, recs.n);

	recs_free(&recs);
	buf_free(&got);
	buf_free(&want);
	fx_fini(&f);
}

/* ---- plan mode: shuffle and shard ---- */

/* n objects s/00.. of distinct sizes; objs[i] is key i in key order. */
static void put_plan_set(struct fx *f, const struct obj **objs, size_t n,
			 size_t base)
{
	for (size_t i = 0; i < n; i++) {
		char key[32];

		snprintf(key, sizeof(key), "s/%02zu", i);
		objs[i] = fx_put(f, key, base + 37 * i);
	}
	fx_put(f, "s/empty", 0);    /* listed, but no entry */
	fx_put(f, "t/outside", 50); /* not under the prefix */
}

/* The objects of an epoch's stream, decoded: ids[i] is the index in objs
 * of record i. */
static size_t epoch_ids(const struct buf *stream, const struct obj **objs,
			size_t n, size_t *ids)
{
	struct recs recs;
	size_t count;

	decode_recordio(stream, &recs);
	for (size_t i = 0; i < recs.n; i++) {
		assert_int_equal(recs.flags[i], 0);
		ids[i] =
		    identify(objs, n, recs.data.p + recs.off[i], recs.len[i]);
	}
	count = recs.n;
	recs_free(&recs);
	return count;
}

static void test_plan_shuffle(void **state)
{
	const struct obj *objs[10];
	uint32_t order[3][10];
	size_t ids[MAX_RECS];
	struct channel_spec *sp, *same, *other;
	struct channel *ch, *ch_same, *ch_other;
	struct buf got[3] = {{0}}, again = {0}, diff = {0};
	uint64_t framed = 0;
	static struct fx f; /* outlives a failed assertion */

	(void)state;
	fx_init(&f, 16 * MIB, 64 * KIB, 4);
	put_plan_set(&f, objs, 10, 100);
	for (size_t i = 0; i < 10; i++)
		framed += 8 + objs[i]->size + (4 - objs[i]->size % 4) % 4;

	sp = fx_spec(&f, CHANNEL_S3_PREFIX, "s/");
	sp->wrapper = CHANNEL_WRAPPER_RECORDIO;
	sp->shuffle = true;
	sp->seed = 42;
	ch = fx_channel(&f, sp, NULL);

	for (unsigned e = 0; e < 3; e++) {
		struct buf want = {0};
		bool seen[10] = {false};

		channel_order(order[e], 10, true, 42, e);
		for (size_t i = 0; i < 10; i++)
			frame_record(&want, objs[order[e][i]]->data,
				     objs[order[e][i]]->size,
				     CHANNEL_RECORDIO_PART_MAX);
		/* a plan's size is known before it is read */
		check_epoch_size(ch, e, framed);
		check_epoch(ch, e, &want);
		assert_int_equal(read_epoch(ch, e, SZ(sz_mixed), &got[e]), 0);
		assert_same_bytes(&got[e], &want);
		/* decoded independently: every object once, in that order */
		assert_int_equal(epoch_ids(&got[e], objs, 10, ids), 10);
		for (size_t i = 0; i < 10; i++) {
			assert_false(seen[ids[i]]);
			seen[ids[i]] = true;
			assert_int_equal(ids[i], order[e][i]);
		}
		buf_free(&want);
	}
	/* a shuffle: not key order, and epochs differ */
	assert_memory_not_equal(order[0], order[1], sizeof(order[0]));
	assert_memory_not_equal(order[1], order[2], sizeof(order[0]));
	for (unsigned e = 0; e < 3; e++) {
		bool sorted = true;

		for (size_t i = 0; i < 10; i++)
			sorted = sorted && order[e][i] == i;
		assert_false(sorted);
	}
	assert_false(got[0].len == got[1].len &&
		     memcmp(got[0].p, got[1].p, got[0].len) == 0);

	/* another channel with the same seed: the same bytes per epoch */
	same = fx_spec(&f, CHANNEL_S3_PREFIX, "s/");
	same->wrapper = CHANNEL_WRAPPER_RECORDIO;
	same->shuffle = true;
	same->seed = 42;
	ch_same = fx_channel(&f, same, NULL);
	assert_int_equal(read_epoch(ch_same, 1, SZ(sz_odd), &again), 0);
	assert_same_bytes(&again, &got[1]);

	/* another seed: another order */
	other = fx_spec(&f, CHANNEL_S3_PREFIX, "s/");
	other->wrapper = CHANNEL_WRAPPER_RECORDIO;
	other->shuffle = true;
	other->seed = -7;
	ch_other = fx_channel(&f, other, NULL);
	assert_int_equal(read_epoch(ch_other, 1, SZ(sz_page), &diff), 0);
	assert_int_equal(diff.len, got[1].len);
	assert_memory_not_equal(diff.p, got[1].p, diff.len);
	{
		uint32_t o[10];

		channel_order(o, 10, true, -7, 1);
		assert_int_equal(epoch_ids(&diff, objs, 10, ids), 10);
		for (size_t i = 0; i < 10; i++)
			assert_int_equal(ids[i], o[i]);
	}

	for (unsigned e = 0; e < 3; e++)
		buf_free(&got[e]);
	buf_free(&again);
	buf_free(&diff);
	fx_fini(&f);
}

static void test_plan_shard_shuffled(void **state)
{
	const struct obj *objs[10];
	struct channel *chs[3];
	size_t ids[MAX_RECS];
	static struct fx f; /* outlives a failed assertion */

	(void)state;
	fx_init(&f, 16 * MIB, 64 * KIB, 4);
	put_plan_set(&f, objs, 10, 50);
	for (unsigned h = 0; h < 3; h++) {
		struct channel_spec *sp = fx_spec(&f, CHANNEL_S3_PREFIX, "s/");

		sp->wrapper = CHANNEL_WRAPPER_RECORDIO;
		sp->shuffle = true;
		sp->seed = 7;
		sp->distribution = CHANNEL_SHARDED_BY_S3_KEY;
		chs[h] = fx_channel_host(&f, sp, h, 3, NULL);
	}
	for (unsigned e = 0; e < 3; e++) {
		unsigned seen[10] = {0};
		uint32_t order[10];

		channel_order(order, 10, true, 7, e);
		for (unsigned h = 0; h < 3; h++) {
			struct buf got = {0}, want = {0};
			size_t count, expect_n = 0;

			/* positions h, h + 3, ... of the epoch's order */
			for (size_t p = h; p < 10; p += 3) {
				frame_record(&want, objs[order[p]]->data,
					     objs[order[p]]->size,
					     CHANNEL_RECORDIO_PART_MAX);
				expect_n++;
			}
			check_epoch_size(chs[h], e, want.len);
			assert_int_equal(read_epoch(chs[h], e,
						    all_sizes[(e + h) % NSIZES],
						    &got),
					 0);
			assert_same_bytes(&got, &want);
			count = epoch_ids(&got, objs, 10, ids);
			assert_int_equal(count, expect_n);
			assert_int_equal(count, h == 0 ? 4 : 3);
			for (size_t i = 0; i < count; i++) {
				assert_int_equal(ids[i], order[h + 3 * i]);
				seen[ids[i]]++;
			}
			buf_free(&got);
			buf_free(&want);
		}
		/* the hosts together read every object once: disjoint and
		 * complete */
		for (size_t i = 0; i < 10; i++)
			assert_int_equal(seen[i], 1);
	}
	fx_fini(&f);
}

static void test_plan_shard_key_order(void **state)
{
	const struct obj *objs[10];
	static struct fx f; /* outlives a failed assertion */
	uint64_t total = 0, all = 0;

	(void)state;
	fx_init(&f, 16 * MIB, 64 * KIB, 4);
	put_plan_set(&f, objs, 10, 20);
	for (size_t i = 0; i < 10; i++)
		all += objs[i]->size;
	for (unsigned h = 0; h < 3; h++) {
		struct channel_spec *sp = fx_spec(&f, CHANNEL_S3_PREFIX, "s/");
		struct channel *ch;
		struct buf want = {0};

		sp->distribution = CHANNEL_SHARDED_BY_S3_KEY;
		ch = fx_channel_host(&f, sp, h, 3, NULL);
		/* keys h, h + 3, ... in key order, every epoch; streamed
		 * as the listing goes, so the size is known once it is
		 * read */
		for (size_t k = h; k < 10; k += 3)
			buf_add(&want, objs[k]->data, objs[k]->size);
		check_epoch(ch, 0, &want);
		check_epoch_size(ch, 0, want.len);
		check_epoch(ch, 1, &want);
		check_epoch_size(ch, 1, want.len);
		total += want.len;
		buf_free(&want);
	}
	assert_int_equal(total, all);
	fx_fini(&f);
}

/*
 * A shuffled channel read with no stage drops the segments its readers
 * passed: reading an epoch of many objects leaves a window of them, not
 * one record each.  A second reader of the epoch opened once the first is
 * well into it, and a seek back to the start, get a stream of their own
 * and the same bytes.
 */
#define TRIM_OBJS 6000

static void trim_key(size_t i, char *key, size_t len)
{
	snprintf(key, len, "m/%05zu", i);
}

static size_t trim_size(size_t i)
{
	return 10 + i % 53;
}

/* One object's bytes into data (64 bytes hold any). */
static void trim_data(size_t i, unsigned char *data)
{
	char key[32];

	trim_key(i, key, sizeof(key));
	for (size_t b = 0; b < trim_size(i); b++)
		data[b] = test_store_byte(key, b);
}

/*
 * TRIM_OBJS objects m/NNNNN in the store and a shuffled channel over them
 * (seed, RecordIO when framed); want gets its epoch 0.
 */
static struct channel *trim_channel(struct fx *f, int64_t seed, bool framed,
				    struct buf *want)
{
	static uint32_t order[TRIM_OBJS];
	struct channel_spec *sp;
	unsigned char data[64];
	char key[32];

	fx_init(f, 16 * MIB, 64 * KIB, 100);
	for (size_t i = 0; i < TRIM_OBJS; i++) {
		trim_key(i, key, sizeof(key));
		trim_data(i, data);
		test_store_put(f->ts, key, "\"v1\"", data, trim_size(i));
	}
	channel_order(order, TRIM_OBJS, true, seed, 0);
	for (size_t i = 0; i < TRIM_OBJS; i++) {
		trim_data(order[i], data);
		if (framed)
			frame_record(want, data, trim_size(order[i]), 1u << 20);
		else
			buf_add(want, data, trim_size(order[i]));
	}
	sp = fx_spec(f, CHANNEL_S3_PREFIX, "m/");
	sp->shuffle = true;
	sp->seed = seed;
	if (framed)
		sp->wrapper = CHANNEL_WRAPPER_RECORDIO;
	return fx_channel(f, sp, NULL);
}

/*
 * Reading an epoch holds nothing per key: FLAT_OBJS objects of 1 to 2 KB
 * (12 MB) through a 512 KiB budget, read in key order (a listing), shuffled
 * (a plan), and converted from CSV; read_flat() samples the cache's
 * records and the heap as it goes.
 */
#define FLAT_OBJS   8000
#define FLAT_BUDGET (512 * KIB)

static struct channel_spec *flat_channel_spec(struct fx *f, bool csv,
					      struct buf *want)
{
	static char data[2048];
	char key[32], etag[48];

	fx_init(f, FLAT_BUDGET, 64 * KIB, 100);
	for (size_t i = 0; i < FLAT_OBJS; i++) {
		/* CSV: rows "1,2,3\n" */
		size_t size = csv ? 996 + i % 1000 / 6 * 6 : 1000 + i % 1000;

		snprintf(key, sizeof(key), "f/%05zu", i);
		for (size_t b = 0; b < size; b++)
			data[b] = csv ? "1,2,3\n"[b % 6]
				      : (char)test_store_byte(key, b);
		/* ETags as S3 makes them: 32 hex digits, a multipart
		 * upload's with "-<parts>" */
		snprintf(etag, sizeof(etag),
			 i % 3 ? "\"%032zx\"" : "\"%032zx-%zu\"", i * 7919,
			 1 + i % 9999);
		test_store_put(f->ts, key, etag, data, size);
		if (want)
			buf_add(want, data, size);
	}
	return fx_spec(f, CHANNEL_S3_PREFIX, "f/");
}

static void test_flat_listing(void **state)
{
	static struct fx f; /* outlives a failed assertion */
	struct buf want = {0};
	struct channel_spec *sp;
	struct channel *ch;

	(void)state;
	sp = flat_channel_spec(&f, false, &want);
	ch = fx_channel(&f, sp, NULL);
	read_flat(f.c, ch, 0, &want, FLAT_OBJS, FLAT_BUDGET, &live_reader);
	/* the next epoch lists again, as flat */
	read_flat(f.c, ch, 1, &want, FLAT_OBJS, FLAT_BUDGET, &live_reader);
	buf_free(&want);
	fx_fini(&f);
}

static void test_flat_shuffled(void **state)
{
	static struct fx f; /* outlives a failed assertion */
	static uint32_t order[FLAT_OBJS];
	struct buf all = {0}, want = {0};
	struct channel_spec *sp;
	struct channel *ch;

	(void)state;
	sp = flat_channel_spec(&f, false, &all);
	sp->shuffle = true;
	sp->seed = 9;
	ch = fx_channel(&f, sp, NULL);
	channel_order(order, FLAT_OBJS, true, 9, 0);
	for (size_t i = 0; i < FLAT_OBJS; i++) {
		size_t at = 0, k = order[i];

		/* object k starts after the sizes of those before it */
		for (size_t j = 0; j < k; j++)
			at += 1000 + j % 1000;
		buf_add(&want, all.p + at, 1000 + k % 1000);
	}
	read_flat(f.c, ch, 0, &want, FLAT_OBJS, FLAT_BUDGET, &live_reader);
	buf_free(&all);
	buf_free(&want);
	fx_fini(&f);
}

static void test_flat_converted(void **state)
{
	static struct fx f; /* outlives a failed assertion */
	struct channel_spec *sp;
	struct channel *ch;

	(void)state;
	sp = flat_channel_spec(&f, true, NULL);
	channel_convert_conf_init(&sp->convert, CHANNEL_CONVERT_CSV);
	ch = fx_channel(&f, sp, NULL);
	read_flat(f.c, ch, 0, NULL, FLAT_OBJS, FLAT_BUDGET, &live_reader);
	fx_fini(&f);
}

/* A manifest naming the FLAT_OBJS keys in key order: its entries keep
 * each object's size and ETag, not the object. */
static void test_flat_manifest(void **state)
{
	static struct fx f; /* outlives a failed assertion */
	struct buf want = {0}, text = {0};
	struct channel_reader *r, *rs;
	struct channel_stats in_order, mixed;
	struct channel_spec *sp;
	struct channel *ch, *shuffled;
	char name[32];

	(void)state;
	flat_channel_spec(&f, false, &want);
	buf_add(&text, "[{\"prefix\": \"s3://bucket/f/\"}", 29);
	for (size_t i = 0; i < FLAT_OBJS; i++) {
		snprintf(name, sizeof(name), ", \"%05zu\"", i);
		buf_add(&text, name, strlen(name));
	}
	buf_add(&text, "]", 2); /* with its NUL */
	fx_put_text(&f, "manifests/flat.json", (const char *)text.p);
	sp = fx_spec(&f, CHANNEL_MANIFEST_FILE, "manifests/flat.json");
	ch = fx_channel(&f, sp, NULL);
	/* an epoch in the manifest's own order takes no order array: a
	 * shuffled epoch of the same entries holds one, 4 bytes a key
	 * (32,000 bytes here), and comes out above it (with an order array
	 * the epoch in order came out 13,000 bytes above the shuffled one) */
	sp = fx_spec(&f, CHANNEL_MANIFEST_FILE, "manifests/flat.json");
	sp->shuffle = true;
	sp->seed = 1;
	shuffled = fx_channel(&f, sp, NULL);
	r = channel_reader_open(ch, 0);
	rs = channel_reader_open(shuffled, 0);
	assert_non_null(r);
	assert_non_null(rs);
	channel_get_stats(ch, &in_order);
	channel_get_stats(shuffled, &mixed);
	print_message("epoch 0 open: %llu bytes in the manifest's order, %llu "
		      "shuffled\n",
		      (unsigned long long)in_order.bytes,
		      (unsigned long long)mixed.bytes);
	assert_true(in_order.bytes < mixed.bytes);
	channel_reader_close(rs);
	channel_reader_close(r);
	read_flat(f.c, ch, 0, &want, FLAT_OBJS, FLAT_BUDGET, &live_reader);
	/* the second epoch: every entry resolved, objects interned again */
	read_flat(f.c, ch, 1, &want, FLAT_OBJS, FLAT_BUDGET, &live_reader);
	buf_free(&text);
	buf_free(&want);
	fx_fini(&f);
}

/*
 * A shuffled plan of large objects fills its stream by bytes, not a
 * thousand entries at a time: 300 objects of 8 MiB (bytes the store
 * makes up), read into the fourth, hold 2 CACHE_REFILL_BYTES of them
 * and one more ahead of the furthest one asked for (20 at most here,
 * not 300), each the object the shuffle puts there.
 */
#define BIG_OBJS 300
#define BIG_SIZE (8 * MIB)

static void test_plan_fills_by_bytes(void **state)
{
	static struct fx f; /* outlives a failed assertion */
	static uint32_t order[BIG_OBJS];
	struct channel_spec *sp;
	struct channel_reader *r;
	struct cache_stats st;
	struct channel *ch;
	char key[32];
	uint64_t pos = 0;

	(void)state;
	fx_init(&f, 16 * MIB, MIB, 1000);
	for (size_t i = 0; i < BIG_OBJS; i++) {
		snprintf(key, sizeof(key), "big/%03zu", i);
		test_store_put(f.ts, key, "\"v1\"", NULL, BIG_SIZE);
	}
	sp = fx_spec(&f, CHANNEL_S3_PREFIX, "big/");
	sp->shuffle = true;
	sp->seed = 7;
	ch = fx_channel(&f, sp, NULL);
	channel_order(order, BIG_OBJS, true, 7, 0);
	r = channel_reader_open(ch, 0);
	assert_non_null(r);
	live_reader = r;
	while (pos < 3 * BIG_SIZE + 5) {
		struct channel_view v;

		memset(&v, 0, sizeof(v));
		assert_int_equal(channel_reader_read(r, pos, 1 << 20, &v), 0);
		assert_true(v.bytes > 0);
		/* the first byte of each read: the object the order puts
		 * there, at its offset */
		snprintf(key, sizeof(key), "big/%03u", order[pos / BIG_SIZE]);
		assert_int_equal((unsigned char)((char *)v.iov[0].iov_base)[0],
				 test_store_byte(key, pos % BIG_SIZE));
		pos += v.bytes;
		channel_view_release(r, &v);
	}
	cache_get_stats(f.c, &st);
	print_message("%d objects of 8 MiB, read into the fourth: %llu "
		      "segments\n",
		      BIG_OBJS, (unsigned long long)st.segments);
	assert_true(st.segments >= 4);
	assert_true(st.segments <= 4 + 2 * CACHE_REFILL_BYTES / BIG_SIZE);
	live_reader = NULL;
	channel_reader_close(r);
	fx_fini(&f);
}

static void test_plan_trims(void **state)
{
	static struct fx f; /* outlives a failed assertion */
	struct channel_stats before, after;
	struct buf want = {0}, got = {0}, again = {0};
	struct channel_reader *r;
	struct channel_view v;
	struct channel *ch;
	uint64_t pos = 0;

	(void)state;
	ch = trim_channel(&f, 3, false, &want);
	channel_get_stats(ch, &before);
	assert_int_equal(before.objects, TRIM_OBJS);

	/* the first reader, to the middle */
	r = channel_reader_open(ch, 0);
	assert_non_null(r);
	live_reader = r;
	while (pos < want.len / 2) {
		memset(&v, 0, sizeof(v));
		assert_int_equal(channel_reader_read(r, pos, 997, &v), 0);
		assert_true(v.bytes > 0);
		for (int k = 0; k < v.count; k++)
			buf_add(&got, v.iov[k].iov_base, v.iov[k].iov_len);
		pos += v.bytes;
		channel_view_release(r, &v);
	}
	/* a late reader of the same epoch reads it all */
	assert_int_equal(read_epoch(ch, 0, SZ(sz_page), &again), 0);
	assert_same_bytes(&again, &want);
	buf_free(&again);
	/* the first goes on to the end */
	live_reader = r;
	for (;;) {
		memset(&v, 0, sizeof(v));
		assert_int_equal(channel_reader_read(r, pos, 65536, &v), 0);
		for (int k = 0; k < v.count; k++)
			buf_add(&got, v.iov[k].iov_base, v.iov[k].iov_len);
		pos += v.bytes;
		channel_view_release(r, &v);
		if (!v.bytes && pos >= want.len)
			break;
	}
	assert_same_bytes(&got, &want);
	/* what the epoch's plan keeps: far less than a segment an object */
	channel_get_stats(ch, &after);
	print_message("plan memory: %llu bytes at the start, %llu after "
		      "reading %d objects\n",
		      (unsigned long long)before.bytes,
		      (unsigned long long)after.bytes, TRIM_OBJS);
	assert_true(after.bytes < before.bytes + TRIM_OBJS * 24);
	/* a seek back to the start (as --seek emulate does) */
	memset(&v, 0, sizeof(v));
	assert_int_equal(channel_reader_read(r, 0, 4096, &v), 0);
	assert_true(v.bytes > 0);
	assert_bytes_at(v.iov[0].iov_base, want.p, v.iov[0].iov_len, 0);
	channel_view_release(r, &v);
	live_reader = NULL;
	channel_reader_close(r);
	buf_free(&got);
	buf_free(&want);
	fx_fini(&f);
}

/*
 * The same with RecordIO framing, whose headers are literal segments that
 * a view points into: reader B holds a view while reader A reads far
 * ahead (and trims); B's view must still hold its bytes, and the epoch
 * read by both is whole.
 */
static void test_plan_trims_framed(void **state)
{
	static struct fx f; /* outlives a failed assertion */
	struct buf want = {0}, got_a = {0}, got_b = {0};
	struct channel_reader *a, *b;
	struct channel_view va, vb;
	struct channel *ch;
	uint64_t pa = 0, pb = 0;

	(void)state;
	ch = trim_channel(&f, 5, true, &want);
	a = channel_reader_open(ch, 0);
	b = channel_reader_open(ch, 0);
	assert_non_null(a);
	assert_non_null(b);
	while (pb < want.len) {
		/* B reads a little and keeps its view ... */
		memset(&vb, 0, sizeof(vb));
		assert_int_equal(channel_reader_read(b, pb, 300, &vb), 0);
		assert_true(vb.bytes > 0);
		/* ... while A reads well past it, dropping segments */
		for (int n = 0; n < 8 && pa < want.len; n++) {
			memset(&va, 0, sizeof(va));
			assert_int_equal(channel_reader_read(a, pa, 65536, &va),
					 0);
			for (int k = 0; k < va.count; k++)
				buf_add(&got_a, va.iov[k].iov_base,
					va.iov[k].iov_len);
			pa += va.bytes;
			channel_view_release(a, &va);
		}
		/* B's view still holds its bytes */
		for (int k = 0; k < vb.count; k++)
			buf_add(&got_b, vb.iov[k].iov_base, vb.iov[k].iov_len);
		assert_bytes_at(got_b.p + pb, want.p + pb, vb.bytes, pb);
		pb += vb.bytes;
		channel_view_release(b, &vb);
		if (pa >= want.len && pb < want.len) {
			/* A is done: B goes on alone to the end */
			assert_int_equal(read_open_reader_rest(b, pb, &got_b),
					 0);
			pb = got_b.len;
		}
	}
	assert_same_bytes(&got_a, &want);
	assert_same_bytes(&got_b, &want);
	channel_reader_close(a);
	channel_reader_close(b);
	buf_free(&want);
	buf_free(&got_a);
	buf_free(&got_b);
	fx_fini(&f);
}

/* r's bytes from offset to its end into got. */
static void read_rest(struct channel_reader *r, uint64_t offset,
		      struct buf *got)
{
	struct channel_view v;

	for (;;) {
		size_t n;

		memset(&v, 0, sizeof(v));
		assert_int_equal(channel_reader_read(r, offset, 4093, &v), 0);
		for (int k = 0; k < v.count; k++)
			buf_add(got, v.iov[k].iov_base, v.iov[k].iov_len);
		n = v.bytes;
		offset += n;
		channel_view_release(r, &v);
		if (!n)
			return;
	}
}

/*
 * A shuffled prefix's reader that starts deep in the epoch is placed by
 * its plan's index (an entry a point, every 256 of the 6,000): at bytes
 * and records around the points, inside their chunks, the last and past
 * the end, the bytes are the epoch's from there.
 */
static void test_plan_index(void **state)
{
	static struct fx f; /* outlives a failed assertion */
	static uint64_t starts[TRIM_OBJS + 1];
	struct buf want = {0};
	struct channel *ch;
	size_t nrec = 0;

	(void)state;
	ch = trim_channel(&f, 5, true, &want);
	/* the records' offsets, from the RecordIO headers (one part each) */
	for (size_t at = 0; at < want.len; nrec++) {
		uint32_t len;

		memcpy(&len, want.p + at + 4, 4);
		starts[nrec] = at;
		at += 8 + len + (4 - len % 4) % 4;
	}
	assert_int_equal(nrec, TRIM_OBJS);
	starts[nrec] = want.len;
	{
		const uint64_t records[] = {
		    0,	 1,    255,	      256,	 257,	       511,
		    512, 3001, TRIM_OBJS - 1, TRIM_OBJS, TRIM_OBJS + 9};

		for (size_t i = 0; i < sizeof(records) / sizeof(records[0]);
		     i++) {
			uint64_t k = records[i], start = 0;
			uint64_t at = starts[k < nrec ? k : nrec];
			struct channel_reader *r =
			    channel_reader_open_record(ch, 0, k, &start);
			struct buf got = {0};

			assert_non_null(r);
			live_reader = r;
			assert_int_equal(start, at);
			read_rest(r, start, &got);
			assert_int_equal(got.len, want.len - at);
			assert_memory_equal(got.p, want.p + at, got.len);
			channel_reader_close(r);
			live_reader = NULL;
			buf_free(&got);
		}
	}
	{
		const uint64_t offsets[] = {1,
					    starts[256] - 1,
					    starts[256],
					    starts[256] + 3,
					    starts[4000] + 9,
					    want.len - 1,
					    want.len,
					    want.len + 5};

		for (size_t i = 0; i < sizeof(offsets) / sizeof(offsets[0]);
		     i++) {
			uint64_t b = offsets[i];
			struct channel_reader *r =
			    channel_reader_open_from(ch, 0, b);
			struct buf got = {0};

			assert_non_null(r);
			live_reader = r;
			read_rest(r, b, &got);
			assert_int_equal(got.len,
					 b < want.len ? want.len - b : 0);
			if (got.len)
				assert_memory_equal(got.p, want.p + b, got.len);
			channel_reader_close(r);
			live_reader = NULL;
			buf_free(&got);
		}
	}
	buf_free(&want);
	fx_fini(&f);
}

/* ---- manifests ---- */

static void test_manifest_resolve_ahead(void **state)
{
	static const char *const order[] = {"k07", "k02", "k11", "k00", "k05",
					    "k02", "k09", "k01", "k10", "k03",
					    "k04", "k06", "k08"};
	const size_t n = sizeof(order) / sizeof(order[0]);
	struct channel_conf conf;
	struct channel_spec *sp, *sp_rio;
	struct channel *ch, *ch_rio;
	struct buf want = {0}, want_rio = {0}, text = {0}, got = {0};
	uint64_t requests;
	unsigned gets;
	static struct fx f; /* outlives a failed assertion */

	(void)state;
	fx_init(&f, 16 * MIB, 64 * KIB, 4);
	for (unsigned i = 0; i < 12; i++) {
		char key[32];

		snprintf(key, sizeof(key), "man/k%02u", i);
		/* one spans blocks */
		fx_put(&f, key, i == 5 ? 200000 : 10 + 111 * i);
	}
	fx_put(&f, "man/zz-not-listed", 77);
	buf_add(&text, "[{\"prefix\": \"s3://bucket/man/\"}", 31);
	for (size_t i = 0; i < n; i++) {
		char key[32];
		const struct obj *o;

		snprintf(key, sizeof(key), ", \"%s\"", order[i]);
		buf_add(&text, key, strlen(key));
		snprintf(key, sizeof(key), "man/%s", order[i]);
		o = fx_obj(&f, key);
		buf_add(&want, o->data, o->size);
		frame_record(&want_rio, o->data, o->size,
			     CHANNEL_RECORDIO_PART_MAX);
	}
	buf_add(&text, "]", 2); /* with its NUL */
	fx_put_text(&f, "manifests/train.json", (const char *)text.p);

	channel_conf_init(&conf);
	conf.resolve_ahead = 3; /* several rounds of HEADs per epoch */
	sp = fx_spec(&f, CHANNEL_MANIFEST_FILE, "manifests/train.json");
	ch = fx_channel(&f, sp, &conf);
	check_epoch(ch, 0, &want);
	check_epoch_size(ch, 0, want.len);
	/* epoch 1's plan finds every entry resolved: its size at once */
	check_epoch_size(ch, 1, want.len);
	check_epoch(ch, 1, &want);
	/* the manifest's HEAD and one per entry, not one per epoch; GETs
	 * are the rest */
	gets = store_gets(&f);
	requests = store_requests(&f);
	assert_int_equal(requests - gets, 1 + n);

	/* framed, with the smallest window */
	conf.resolve_ahead = 1;
	sp_rio = fx_spec(&f, CHANNEL_MANIFEST_FILE, "manifests/train.json");
	sp_rio->wrapper = CHANNEL_WRAPPER_RECORDIO;
	ch_rio = fx_channel(&f, sp_rio, &conf);
	assert_int_equal(read_epoch(ch_rio, 0, SZ(sz_odd), &got), 0);
	assert_same_bytes(&got, &want_rio);
	check_epoch_size(ch_rio, 0, want_rio.len);

	buf_free(&got);
	buf_free(&text);
	buf_free(&want);
	buf_free(&want_rio);
	fx_fini(&f);
}

/* Empty objects in a manifest add nothing to the stream: with a window
 * of one entry, the plan goes on past them by itself (nothing is left
 * for a reader to near that would ask for more). */
static void test_manifest_empty_objects(void **state)
{
	static const char manifest[] =
	    "[{\"prefix\": \"s3://bucket/me/\"}, \"a\", \"e1\", \"e2\", "
	    "\"e3\", \"b\", \"e4\"]";
	struct channel_conf conf;
	struct buf want = {0};
	static struct fx f; /* outlives a failed assertion */

	(void)state;
	fx_init(&f, 16 * MIB, 64 * KIB, 4);
	fx_put(&f, "me/a", 1000);
	fx_put(&f, "me/e1", 0);
	fx_put(&f, "me/e2", 0);
	fx_put(&f, "me/e3", 0);
	fx_put(&f, "me/b", 33);
	fx_put(&f, "me/e4", 0);
	fx_put_text(&f, "manifests/me.json", manifest);
	buf_add(&want, fx_obj(&f, "me/a")->data, 1000);
	buf_add(&want, fx_obj(&f, "me/b")->data, 33);
	channel_conf_init(&conf);
	conf.resolve_ahead = 1;
	check_epoch(
	    fx_channel(&f,
		       fx_spec(&f, CHANNEL_MANIFEST_FILE, "manifests/me.json"),
		       &conf),
	    0, &want);
	buf_free(&want);
	fx_fini(&f);
}

static void test_manifest_missing_key(void **state)
{
	static const char manifest[] =
	    "[{\"prefix\": \"s3://bucket/m2/\"}, \"a\", \"b\", \"gone\", "
	    "\"d\"]";
	struct channel_conf conf;
	struct buf want = {0}, want_rio = {0};
	static struct fx f; /* outlives a failed assertion */

	(void)state;
	fx_init(&f, 16 * MIB, 64 * KIB, 4);
	fx_put(&f, "m2/a", 1000);
	fx_put(&f, "m2/b", 70000);
	fx_put(&f, "m2/d", 33);
	fx_put_text(&f, "manifests/m2.json", manifest);
	buf_add(&want, fx_obj(&f, "m2/a")->data, 1000);
	buf_add(&want, fx_obj(&f, "m2/b")->data, 70000);
	frame_record(&want_rio, fx_obj(&f, "m2/a")->data, 1000,
		     CHANNEL_RECORDIO_PART_MAX);
	frame_record(&want_rio, fx_obj(&f, "m2/b")->data, 70000,
		     CHANNEL_RECORDIO_PART_MAX);

	channel_conf_init(&conf);
	for (unsigned ahead = 1; ahead <= 8; ahead *= 8) {
		struct channel_spec *sp, *sp_rio;
		struct channel *ch, *ch_rio;

		conf.resolve_ahead = ahead;
		sp = fx_spec(&f, CHANNEL_MANIFEST_FILE, "manifests/m2.json");
		ch = fx_channel(&f, sp, &conf);
		check_epoch_fails(ch, 0, &want, EIO);
		check_epoch_fails(ch, 1, &want, EIO);

		sp_rio =
		    fx_spec(&f, CHANNEL_MANIFEST_FILE, "manifests/m2.json");
		sp_rio->wrapper = CHANNEL_WRAPPER_RECORDIO;
		ch_rio = fx_channel(&f, sp_rio, &conf);
		check_epoch_fails(ch_rio, 0, &want_rio, EIO);
	}
	buf_free(&want);
	buf_free(&want_rio);
	fx_fini(&f);
}

/* The first key is checked at start-up: a missing one fails the start
 * with a message naming it. */
static void test_manifest_missing_first_key(void **state)
{
	static const char manifest[] =
	    "[{\"prefix\": \"s3://bucket/m3/\"}, \"nothing\", \"b\"]";
	struct channel_host host = {.index = 0, .count = 1};
	struct channel_conf conf;
	struct channel_spec *sp;
	struct channel *ch;
	char err[512] = "";
	static struct fx f; /* outlives a failed assertion */

	(void)state;
	fx_init(&f, 16 * MIB, 64 * KIB, 4);
	fx_put(&f, "m3/b", 10);
	fx_put_text(&f, "manifests/m3.json", manifest);
	channel_conf_init(&conf);
	sp = fx_spec(&f, CHANNEL_MANIFEST_FILE, "manifests/m3.json");
	ch = channel_create(sp, &host, &conf, f.c);
	assert_non_null(ch);
	f.chs[f.nchs++] = ch;
	assert_int_not_equal(channel_start(ch, err, sizeof(err)), 0);
	assert_non_null(strstr(err, "s3://bucket/m3/nothing"));
	assert_non_null(strstr(err, "does not exist"));
	fx_fini(&f);
}

/*
 * An epoch that ends in an error has no size: fs/ gives channel_epoch_size()
 * as the file's st_size (cached for an hour), and the bytes before the
 * error as a size would make a reader that trusts st_size take a cut
 * epoch for a whole one, without ever seeing the EIO.
 */
static void test_failed_epoch_has_no_size(void **state)
{
	static const char manifest[] =
	    "[{\"prefix\": \"s3://bucket/m4/\"}, \"a\", \"gone\", \"b\"]";
	struct channel_spec *sp;
	struct channel *ch;
	struct buf want = {0};
	static struct fx f; /* outlives a failed assertion */

	(void)state;
	fx_init(&f, 16 * MIB, 64 * KIB, 4);
	fx_put(&f, "m4/a", 100);
	fx_put(&f, "m4/b", 100);
	fx_put_text(&f, "manifests/m4.json", manifest);
	buf_add(&want, fx_obj(&f, "m4/a")->data, 100);
	sp = fx_spec(&f, CHANNEL_MANIFEST_FILE, "manifests/m4.json");
	ch = fx_channel(&f, sp, NULL);
	check_epoch_fails(ch, 0, &want, EIO);
	check_epoch_size_unknown(ch, 0);
	buf_free(&want);
	fx_fini(&f);
}

/* Augmented manifest lines: each a -ref object and a literal label. */
static const char *const aug_labels[] = {
    "",				 /* 0 */
    "abcdefg",			 /* 7 */
    "abcdefgh",			 /* 8 */
    "abcdefghi",		 /* 9 */
    "0123456789abcdef",		 /* 16 */
    "0123456789abcdefg",	 /* 17 */
    "0123456789abcdefghijklmno", /* 25 */
};
#define NAUG (sizeof(aug_labels) / sizeof(aug_labels[0]))

static void put_augmented(struct fx *f, const char *key, bool broken)
{
	struct buf text = {0};

	for (size_t i = 0; i < NAUG; i++) {
		char line[256], okey[32];

		snprintf(okey, sizeof(okey), "aug/x%zu", i);
		fx_put(f, okey, 3 + 5 * i);
		if (broken && i == 3)
			snprintf(line, sizeof(line),
				 "{\"source-ref\": \"s3://bucket/%s\"}\n",
				 okey);
		else
			snprintf(line, sizeof(line),
				 "{\"label\": \"%s\", \"source-ref\": "
				 "\"s3://bucket/%s\"}\n",
				 aug_labels[i], okey);
		buf_add(&text, line, strlen(line));
	}
	{
		static const char last[] =
		    "{\"source-ref\": \"s3://bucket/aug/x0\", \"label\": 12}\n";

		buf_add(&text, last, strlen(last));
	}
	buf_add(&text, "", 1);
	fx_put_text(f, key, (const char *)text.p);
	buf_free(&text);
}

static void test_augmented_parts(void **state)
{
	struct channel_conf conf;
	struct channel_spec *sp, *sp_plain;
	struct channel *ch, *ch_plain;
	struct buf want = {0}, plain = {0}, got = {0};
	struct recs recs;
	unsigned at = 0;
	static struct fx f; /* outlives a failed assertion */

	(void)state;
	fx_init(&f, 16 * MIB, 64 * KIB, 4);
	put_augmented(&f, "manifests/aug.jsonl", false);
	for (size_t i = 0; i <= NAUG; i++) {
		char okey[32];
		const struct obj *o;
		const char *label = i < NAUG ? aug_labels[i] : "12";

		snprintf(okey, sizeof(okey), "aug/x%zu", i < NAUG ? i : 0);
		o = fx_obj(&f, okey);
		frame_record(&want, o->data, o->size, 8);
		frame_record(&want, label, strlen(label), 8);
		buf_add(&plain, o->data, o->size);
		buf_add(&plain, label, strlen(label));
	}

	channel_conf_init(&conf);
	conf.recordio_part_max = 8;
	conf.resolve_ahead = 2;
	sp =
	    fx_spec(&f, CHANNEL_AUGMENTED_MANIFEST_FILE, "manifests/aug.jsonl");
	sp->wrapper = CHANNEL_WRAPPER_RECORDIO;
	spec_attributes(sp, "source-ref", "label");
	ch = fx_channel(&f, sp, &conf);
	check_epoch(ch, 0, &want);
	check_epoch_size(ch, 0, want.len);

	/* one record per attribute; labels split as the table says */
	assert_int_equal(read_epoch(ch, 1, SZ(sz_one), &got), 0);
	assert_same_bytes(&got, &want);
	decode_recordio(&got, &recs);
	assert_int_equal(recs.n, 2 * (NAUG + 1));
	for (size_t i = 0; i < NAUG; i++) {
		const struct part_case *c = &part_cases[i];
		size_t olen = 3 + 5 * i;
		struct part_case objc = {olen, 0, {0}, {0}};

		/* the object's parts, from its length */
		for (size_t off = 0; off < olen || objc.nparts == 0; off += 8) {
			size_t pl = olen - off < 8 ? olen - off : 8;

			objc.flag[objc.nparts] = olen <= 8	    ? 0
						 : off == 0	    ? 1
						 : off + pl == olen ? 3
								    : 2;
			objc.plen[objc.nparts++] = (uint32_t)pl;
		}
		check_parts(&recs, &at, &objc);
		assert_int_equal(strlen(aug_labels[i]), c->len);
		check_parts(&recs, &at, c);
		assert_int_equal(recs.len[2 * i + 1], c->len);
		assert_memory_equal(recs.data.p + recs.off[2 * i + 1],
				    aug_labels[i], c->len);
	}
	/* a number becomes its JSON text */
	assert_int_equal(recs.len[2 * NAUG + 1], 2);
	assert_memory_equal(recs.data.p + recs.off[2 * NAUG + 1], "12", 2);

	/* without RecordIO: the items back to back */
	sp_plain =
	    fx_spec(&f, CHANNEL_AUGMENTED_MANIFEST_FILE, "manifests/aug.jsonl");
	spec_attributes(sp_plain, "source-ref", "label");
	ch_plain = fx_channel(&f, sp_plain, &conf);
	check_epoch(ch_plain, 0, &plain);
	check_epoch_size(ch_plain, 0, plain.len);

	recs_free(&recs);
	buf_free(&got);
	buf_free(&plain);
	buf_free(&want);
	fx_fini(&f);
}

/* Line 4 lacks its label: the lines before it, then EIO. */
static void test_augmented_error(void **state)
{
	struct channel_conf conf;
	struct buf want = {0}, plain = {0};
	static struct fx f; /* outlives a failed assertion */

	(void)state;
	fx_init(&f, 16 * MIB, 64 * KIB, 4);
	put_augmented(&f, "manifests/broken.jsonl", true);
	for (size_t i = 0; i < 3; i++) {
		char okey[32];
		const struct obj *o;

		snprintf(okey, sizeof(okey), "aug/x%zu", i);
		o = fx_obj(&f, okey);
		frame_record(&want, o->data, o->size,
			     CHANNEL_RECORDIO_PART_MAX);
		frame_record(&want, aug_labels[i], strlen(aug_labels[i]),
			     CHANNEL_RECORDIO_PART_MAX);
		buf_add(&plain, o->data, o->size);
		buf_add(&plain, aug_labels[i], strlen(aug_labels[i]));
	}
	channel_conf_init(&conf);
	for (unsigned ahead = 1; ahead <= 16; ahead *= 16) {
		struct channel_spec *sp, *sp_plain;
		struct channel *ch, *ch_plain;

		conf.resolve_ahead = ahead;
		sp = fx_spec(&f, CHANNEL_AUGMENTED_MANIFEST_FILE,
			     "manifests/broken.jsonl");
		sp->wrapper = CHANNEL_WRAPPER_RECORDIO;
		spec_attributes(sp, "source-ref", "label");
		ch = fx_channel(&f, sp, &conf);
		check_epoch_fails(ch, 0, &want, EIO);

		sp_plain = fx_spec(&f, CHANNEL_AUGMENTED_MANIFEST_FILE,
				   "manifests/broken.jsonl");
		spec_attributes(sp_plain, "source-ref", "label");
		ch_plain = fx_channel(&f, sp_plain, &conf);
		check_epoch_fails(ch_plain, 0, &plain, EIO);
	}
	buf_free(&want);
	buf_free(&plain);
	fx_fini(&f);
}

/* ---- the cache across epochs ---- */

static void test_second_epoch_hits_cache(void **state)
{
	const struct obj *objs[8];
	struct channel_spec *sp;
	struct channel *ch;
	struct cache_stats st0, st1;
	uint32_t o0[8], o1[8];
	unsigned gets0 = 0, gets1;
	static struct fx f; /* outlives a failed assertion */

	(void)state;
	/* 8 objects of two 64 KiB blocks each, a budget that holds them */
	fx_init(&f, 16 * MIB, 64 * KIB, 4);
	for (size_t i = 0; i < 8; i++) {
		char key[32];

		snprintf(key, sizeof(key), "c/%zu", i);
		objs[i] = fx_put(&f, key, 100 * KIB + i);
	}
	sp = fx_spec(&f, CHANNEL_S3_PREFIX, "c/");
	sp->shuffle = true;
	sp->seed = 3;
	ch = fx_channel(&f, sp, NULL);
	channel_order(o0, 8, true, 3, 0);
	channel_order(o1, 8, true, 3, 1);
	assert_memory_not_equal(o0, o1, sizeof(o0));

	for (unsigned e = 0; e < 2; e++) {
		struct buf want = {0}, got = {0};
		const uint32_t *o = e ? o1 : o0;

		for (size_t i = 0; i < 8; i++)
			buf_add(&want, objs[o[i]]->data, objs[o[i]]->size);
		assert_int_equal(read_epoch(ch, e, SZ(sz_page), &got), 0);
		assert_same_bytes(&got, &want);
		buf_free(&got);
		buf_free(&want);
		if (e == 0) {
			gets0 = store_gets(&f);
			cache_get_stats(f.c, &st0);
		}
	}
	gets1 = store_gets(&f);
	cache_get_stats(f.c, &st1);
	/* the first epoch fetched each object; the second fetched nothing
	 * and found every one of the 16 blocks ready */
	assert_true(gets0 >= 8);
	assert_int_equal(gets1, gets0);
	assert_int_equal(st1.misses, st0.misses);
	assert_int_equal(st1.prefetched, st0.prefetched);
	assert_true(st1.hits >= st0.hits + 16);
	assert_true(st1.peak_bytes <= st1.budget_bytes);
	fx_fini(&f);
}

/* ---- the next epoch prefetched ---- */

/* Bytes the store has sent, once it has answered every request made so
 * far: the next-epoch prefetch and the readers make theirs before they return.
 */
static uint64_t settled_bytes(struct fx *f)
{
	struct store_stats st;

	assert_int_equal(test_store_wait_idle(f->ts), 0);
	store_get_stats(&f->ts->store, &st);
	return st.bytes_received;
}

static uint64_t cache_misses(struct fx *f)
{
	struct cache_stats st;

	cache_get_stats(f->c, &st);
	return st.misses;
}

/*
 * Reads epoch whole in 64 KiB reads into got; *first_missed is whether its
 * first read fetched on demand (a cache miss).
 */
static void read_epoch_first(struct channel *ch, struct fx *f, unsigned epoch,
			     struct buf *got, bool *first_missed)
{
	struct channel_reader *r = channel_reader_open(ch, epoch);
	struct channel_view v;
	uint64_t pos = 0, misses = cache_misses(f);

	assert_non_null(r);
	live_reader = r;
	for (;;) {
		memset(&v, 0, sizeof(v));
		assert_int_equal(channel_reader_read(r, pos, 64 * KIB, &v), 0);
		if (pos == 0)
			*first_missed = cache_misses(f) != misses;
		for (int k = 0; k < v.count; k++)
			buf_add(got, v.iov[k].iov_base, v.iov[k].iov_len);
		pos += v.bytes;
		if (v.bytes == 0) {
			channel_view_release(r, &v);
			break;
		}
		channel_view_release(r, &v);
	}
	assert_true(channel_reader_near_end(r));
	live_reader = NULL;
	channel_reader_close(r);
}

/* 16 objects p/NN of 128 KiB (two blocks each) and their bytes in the
 * order of (shuffle, seed, epoch). */
static void put_epoch_prefetch_set(struct fx *f, const struct obj **objs)
{
	for (size_t i = 0; i < 16; i++) {
		char key[32];

		snprintf(key, sizeof(key), "p/%02zu", i);
		objs[i] = fx_put(f, key, 128 * KIB);
	}
}

static void epoch_bytes(const struct obj **objs, bool shuffle, int64_t seed,
			unsigned epoch, struct buf *want)
{
	uint32_t o[16];

	channel_order(o, 16, shuffle, seed, epoch);
	for (size_t i = 0; i < 16; i++)
		buf_add(want, objs[o[i]]->data, objs[o[i]]->size);
}

/*
 * Once epoch 0 is read, channel_prefetch_epoch(1) fetches the head of epoch 1
 * (a quarter of the 1 MiB budget: 256 KiB) and no more, however often it is
 * called; epoch 1's first read then finds it in memory (no miss) and the
 * epoch fetches the rest at most.  Epochs already opened are not prefetched.
 * No kept set here: without the next-epoch prefetch the head would not be in
 * memory.
 */
static void epoch_prefetch_case(bool shuffle, int64_t seed)
{
	const struct obj *objs[16];
	struct channel_spec *sp;
	struct channel *ch;
	struct buf want0 = {0}, want1 = {0}, got = {0};
	uint64_t total = 16 * 128 * KIB, b0, b1;
	bool missed = true;
	static struct fx f; /* outlives a failed assertion */

	fx_init_kept(&f, 1 * MIB, 64 * KIB, 100, 0);
	put_epoch_prefetch_set(&f, objs);
	sp = fx_spec(&f, CHANNEL_S3_PREFIX, "p/");
	sp->shuffle = shuffle;
	sp->seed = seed;
	ch = fx_channel(&f, sp, NULL);
	epoch_bytes(objs, shuffle, seed, 0, &want0);
	epoch_bytes(objs, shuffle, seed, 1, &want1);

	read_epoch_first(ch, &f, 0, &got, &missed);
	assert_same_bytes(&got, &want0);
	buf_free(&got);
	b0 = settled_bytes(&f);
	assert_int_equal(b0, total);
	/* epoch 0 was opened: nothing to do for it */
	channel_prefetch_epoch(ch, 0);
	assert_int_equal(settled_bytes(&f), b0);
	channel_prefetch_epoch(ch, 1);
	if (!shuffle) {
		/* epoch 1 lists again: the first call asks for its first
		 * page, the next one fetches */
		(void)settled_bytes(&f);
		channel_prefetch_epoch(ch, 1);
	}
	b1 = settled_bytes(&f);
	assert_int_equal(b1, b0 + 256 * KIB);
	channel_prefetch_epoch(ch, 1); /* done already */
	assert_int_equal(settled_bytes(&f), b1);

	read_epoch_first(ch, &f, 1, &got, &missed);
	assert_same_bytes(&got, &want1);
	assert_false(missed);
	/* the rest at most (with a shuffle, epoch 0's last window may hold
	 * more of it) */
	b0 = settled_bytes(&f);
	assert_true(b0 <= b1 + total - 256 * KIB);
	channel_prefetch_epoch(ch, 1); /* opened since */
	assert_int_equal(settled_bytes(&f), b0);
	buf_free(&got);
	buf_free(&want0);
	buf_free(&want1);
	fx_fini(&f);
}

static void test_epoch_prefetch_listing(void **state)
{
	(void)state;
	epoch_prefetch_case(false, 0);
}

/* With a shuffle the head is the objects epoch 1 starts with: with seed
 * 5 objects 2 and 11, neither of them among the last six of epoch 0
 * (which its window may have left in memory). */
static void test_epoch_prefetch_shuffled(void **state)
{
	uint32_t o0[16], o1[16];

	(void)state;
	channel_order(o0, 16, true, 5, 0);
	channel_order(o1, 16, true, 5, 1);
	for (size_t i = 10; i < 16; i++)
		assert_true(o0[i] != o1[0] && o0[i] != o1[1]);
	epoch_prefetch_case(true, 5);
}

/*
 * An epoch prefetched but never opened costs a bounded amount: a newer
 * epoch's prefetch fetches its own head once, older epochs are left alone
 * once a newer one was prefetched, and memory stays within the budget;
 * the channel goes with nothing left behind (valgrind, ASan).  With the
 * kept set holding the head (a listing's), the next-epoch prefetch costs
 * nothing.
 */
static void test_epoch_prefetch_bounded(void **state)
{
	const struct obj *objs[16];
	struct channel_spec *sp;
	struct channel *ch;
	struct buf got = {0}, want = {0};
	struct cache_stats st;
	uint64_t b0;
	bool missed = true;
	static struct fx f; /* outlives a failed assertion */

	(void)state;
	fx_init_kept(&f, 1 * MIB, 64 * KIB, 100, 0);
	put_epoch_prefetch_set(&f, objs);
	sp = fx_spec(&f, CHANNEL_S3_PREFIX, "p/");
	sp->shuffle = true;
	sp->seed = 9;
	ch = fx_channel(&f, sp, NULL);
	read_epoch_first(ch, &f, 0, &got, &missed);
	buf_free(&got);
	b0 = settled_bytes(&f);
	for (int i = 0; i < 5; i++)
		channel_prefetch_epoch(ch, 1);
	channel_prefetch_epoch(ch, 2);
	channel_prefetch_epoch(ch, 1); /* older than one prefetched */
	assert_true(settled_bytes(&f) <= b0 + 2 * 256 * KIB);
	cache_get_stats(f.c, &st);
	assert_true(st.peak_bytes <= 1 * MIB);
	fx_fini(&f);

	/* a listing with a kept set: its head is in memory already */
	fx_init(&f, 1 * MIB, 64 * KIB, 100);
	put_epoch_prefetch_set(&f, objs);
	sp = fx_spec(&f, CHANNEL_S3_PREFIX, "p/");
	ch = fx_channel(&f, sp, NULL);
	epoch_bytes(objs, false, 0, 0, &want);
	read_epoch_first(ch, &f, 0, &got, &missed);
	buf_free(&got);
	b0 = settled_bytes(&f);
	channel_prefetch_epoch(ch, 1);
	assert_int_equal(settled_bytes(&f), b0);
	read_epoch_first(ch, &f, 1, &got, &missed);
	assert_same_bytes(&got, &want);
	assert_false(missed);
	buf_free(&got);
	buf_free(&want);
	fx_fini(&f);
}

/*
 * The objects' counts (channel/object_counts.h): points inside an object
 * are found by the last one at or before a record, none before the first;
 * later points replace earlier ones; and the counts, points and payloads
 * handed over in the keeper's memfd come back whole in the next channel,
 * while an image cut short does not load.
 */
static void test_object_counts(void **state)
{
	static const struct object_point pts[] = {
	    {100, 1 << 20}, {250, 2 << 20}, {400, 3 << 20}};
	struct object_point pt, two[2] = {{7, 5000}, {9, 9000}};
	struct channel_spec *sp;
	struct object_counts *oc;
	struct channel *ch;
	uint64_t bytes, records, payload;
	struct fx f;
	int fd;

	(void)state;
	fx_init(&f, 8u << 20, 1u << 20, 100);
	fx_put(&f, "d/a", 10);
	sp = fx_spec(&f, CHANNEL_S3_PREFIX, "d/");
	sp->content_type = strdup("text/csv");
	assert_non_null(sp->content_type);
	fd = memfd_create("counts", 0);
	assert_true(fd >= 0);
	ch = fx_channel(&f, sp, NULL);
	channel_set_records_fd(ch, fd);
	oc = object_counts_get(ch);
	assert_non_null(oc);
	assert_int_equal(0, object_counts_count(oc));
	object_counts_add(oc, 11, 4 << 20, 500, OBJECT_COUNTS_UNKNOWN);
	object_counts_add(oc, 12, 4000, 1, 3990);
	object_counts_add_points(oc, 11, pts, 3);
	assert_false(object_counts_point(oc, 11, 99, &pt));
	assert_false(object_counts_point(oc, 13, 1000, &pt));
	for (uint64_t r = 100; r < 500; r += 50) {
		size_t want = r < 250 ? 0 : r < 400 ? 1 : 2;

		assert_true(object_counts_point(oc, 11, r, &pt));
		assert_int_equal(pts[want].records, pt.records);
		assert_int_equal(pts[want].at, pt.at);
	}
	object_counts_add_points(oc, 12, two, 2);
	two[1].at = 9001; /* (copied: this does not change them) */
	assert_true(object_counts_point(oc, 12, 1000, &pt));
	assert_int_equal(9000, pt.at);
	/* a scan that does not know the payload leaves it */
	object_counts_add(oc, 12, 4000, 1, OBJECT_COUNTS_UNKNOWN);
	assert_true(object_counts_find(oc, 12, &bytes, &records, &payload));
	assert_int_equal(3990, payload);
	object_counts_save(ch);
	assert_true(lseek(fd, 0, SEEK_END) > 0);

	/* the next worker's channel takes them */
	ch = fx_channel(&f, sp, NULL);
	channel_set_records_fd(ch, fd);
	oc = object_counts_get(ch);
	assert_non_null(oc);
	assert_int_equal(2, object_counts_count(oc));
	assert_true(object_counts_find(oc, 11, &bytes, &records, &payload));
	assert_int_equal(4 << 20, bytes);
	assert_int_equal(500, records);
	assert_int_equal(OBJECT_COUNTS_UNKNOWN, payload);
	assert_true(object_counts_find(oc, 12, &bytes, &records, &payload));
	assert_int_equal(3990, payload);
	assert_true(object_counts_point(oc, 11, 399, &pt));
	assert_int_equal(2 << 20, pt.at);
	assert_true(object_counts_point(oc, 12, 8, &pt));
	assert_int_equal(5000, pt.at);

	/* cut short by a point: not loaded */
	assert_int_equal(0, ftruncate(fd, lseek(fd, 0, SEEK_END) - 20));
	ch = fx_channel(&f, sp, NULL);
	channel_set_records_fd(ch, fd);
	oc = object_counts_get(ch);
	assert_non_null(oc);
	assert_int_equal(0, object_counts_count(oc));
	assert_false(object_counts_point(oc, 11, 399, &pt));
	close(fd);
	fx_fini(&f);
}

/* An argument runs only the tests whose names match it (a glob), or with
 * a leading '-' all but those. */
int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_listing_plain, watchdog,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_listing_recordio, watchdog,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_recordio_parts, watchdog,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_plan_shuffle, watchdog,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_plan_shard_shuffled, watchdog,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_plan_shard_key_order, watchdog,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_plan_trims, watchdog,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_plan_fills_by_bytes, watchdog,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_flat_listing, watchdog,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_flat_shuffled, watchdog,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_flat_manifest, watchdog,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_flat_converted, watchdog,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_plan_trims_framed, watchdog,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_plan_index, watchdog,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_manifest_resolve_ahead,
					    watchdog, teardown),
	    cmocka_unit_test_setup_teardown(test_manifest_empty_objects,
					    watchdog, teardown),
	    cmocka_unit_test_setup_teardown(test_manifest_missing_key, watchdog,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_manifest_missing_first_key,
					    watchdog, teardown),
	    cmocka_unit_test_setup_teardown(test_failed_epoch_has_no_size,
					    watchdog, teardown),
	    cmocka_unit_test_setup_teardown(test_augmented_parts, watchdog,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_augmented_error, watchdog,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_epoch_prefetch_listing,
					    watchdog, teardown),
	    cmocka_unit_test_setup_teardown(test_epoch_prefetch_shuffled,
					    watchdog, teardown),
	    cmocka_unit_test_setup_teardown(test_epoch_prefetch_bounded,
					    watchdog, teardown),
	    cmocka_unit_test_setup_teardown(test_second_epoch_hits_cache,
					    watchdog, teardown),
	    cmocka_unit_test_setup_teardown(test_object_counts, watchdog,
					    teardown),
	};

	if (argc > 1 && argv[1][0] == '-')
		cmocka_set_skip_filter(argv[1] + 1);
	else if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
