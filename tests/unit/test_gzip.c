/*
 * test_gzip: the gunzip stage (channel/gzip.c) through channel readers.
 *
 * A serving test store holds gzip objects that the test compresses itself
 * with zlib's deflate (gzip wrapper: deflateInit2(..., 16 + MAX_WBITS,
 * ...)), one or several members per object; channels with CompressionType
 * Gzip are built over them from hand-made specs, and every epoch read
 * through channel_reader_read() is compared byte for byte with the
 * payloads the test started from, concatenated or framed by the test's own
 * RecordIO encoder (and decoded again by its own decoder).
 *
 * Covered: single- and multi-member objects, an empty member, an object
 * that inflates to more than the stage may hold for framing (4 MiB budget,
 * 1 MiB blocks, 6 MiB inflated: the count-then-stream passes), literal
 * items of an augmented manifest passed through, a corrupt and a truncated
 * object (the bytes before them, then EIO), 1, 2 and 4 inflate threads
 * giving the same bytes, emulated seeks, and the cache's peak memory within
 * its budget in every test.
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
#include <unistd.h>
#include <zlib.h>

#include <cmocka.h>

#include "channel/internal.h"
#include "tests/unit/channel_fixture.h"
#include "tests/unit/test_store.h"

#define KIB 1024ull
#define MIB (1024ull * 1024)

#define MAX_OBJS     32
#define MAX_SPECS    16
#define MAX_CHANNELS 16
#define WATCHDOG_S   300 /* a hung epoch fails the run (SIGALRM) */

static const unsigned thread_counts[] = {1, 2, 4};
#define NTHREADS (sizeof(thread_counts) / sizeof(thread_counts[0]))

/* ---- payloads and gzip, with zlib's deflate ---- */

/* Text of 16 letters: about 2:1 under deflate, so large payloads stay a
 * few blocks compressed. */
static void fill_text(unsigned char *p, size_t n, uint64_t seed)
{
	uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;

	for (size_t i = 0; i < n; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		p[i] = (unsigned char)"etaoinshrdlucmfw"[x >> 60];
	}
}

/* Bytes deflate cannot shrink. */
static void fill_noise(unsigned char *p, size_t n, const char *key)
{
	for (size_t i = 0; i < n; i++)
		p[i] = test_store_byte(key, i);
}

/* Appends one gzip member of data[0..len) at level to out. */
static void gz_member(struct buf *out, const void *data, size_t len, int level)
{
	z_stream zs;
	uLong bound;

	memset(&zs, 0, sizeof(zs));
	assert_int_equal(deflateInit2(&zs, level, Z_DEFLATED, 16 + MAX_WBITS, 8,
				      Z_DEFAULT_STRATEGY),
			 Z_OK);
	bound = deflateBound(&zs, (uLong)len);
	buf_reserve(out, bound);
	zs.next_in = (Bytef *)(uintptr_t)data;
	zs.avail_in = (uInt)len;
	zs.next_out = out->p + out->len;
	zs.avail_out = (uInt)bound;
	assert_int_equal(deflate(&zs, Z_FINISH), Z_STREAM_END);
	out->len += bound - zs.avail_out;
	assert_int_equal(deflateEnd(&zs), Z_OK);
}

/* ---- the store, the cache and channels ---- */

/* One object: what it inflates to, and its gzip bytes in the store. */
struct gzobj {
	char key[64];
	struct buf payload;
	struct buf gz;
};

struct fx {
	struct test_store *ts;
	struct cache *c;
	uint64_t budget;
	struct gzobj objs[MAX_OBJS];
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

static void fx_init(struct fx *f, uint64_t budget, uint64_t block_size)
{
	struct cache_conf conf;

	memset(f, 0, sizeof(*f));
	live_fx = f;
	f->ts = test_store_create(true, 4);
	assert_non_null(f->ts);
	cache_conf_init(&conf);
	conf.budget_bytes = budget;
	conf.block_size = block_size;
	conf.list_page_keys = 4;
	conf.first_page_keys = 2;
	f->budget = budget;
	f->c = cache_create(&conf, &f->ts->store);
	assert_non_null(f->c);
}

/* The cache never held more than its budget. */
static void check_memory(struct fx *f)
{
	struct cache_stats st;

	cache_get_stats(f->c, &st);
	assert_int_equal(st.budget_bytes, f->budget);
	if (st.peak_bytes > f->budget)
		fail_msg("peak %llu bytes over a budget of %llu",
			 (unsigned long long)st.peak_bytes,
			 (unsigned long long)f->budget);
	assert_true(st.used_bytes <= f->budget);
}

static void fx_fini(struct fx *f)
{
	struct cache_stats st;

	live_fx = NULL;
	cache_get_stats(f->c, &st);
	test_store_destroy(f->ts);
	for (unsigned i = 0; i < f->nchs; i++)
		channel_destroy(f->chs[i]);
	cache_destroy(f->c);
	for (unsigned i = 0; i < f->nspecs; i++)
		channel_spec_free(&f->specs[i]);
	for (unsigned i = 0; i < f->nobjs; i++) {
		buf_free(&f->objs[i].payload);
		buf_free(&f->objs[i].gz);
	}
	assert_true(st.peak_bytes <= f->budget);
}

/* A new object: the caller fills payload and gz, then fx_store()s it. */
static struct gzobj *fx_obj_new(struct fx *f, const char *key)
{
	struct gzobj *o;

	assert_true(f->nobjs < MAX_OBJS);
	o = &f->objs[f->nobjs++];
	memset(o, 0, sizeof(*o));
	snprintf(o->key, sizeof(o->key), "%s", key);
	return o;
}

static void fx_store(struct fx *f, struct gzobj *o)
{
	test_store_put(f->ts, o->key, "\"v1\"", o->gz.p, o->gz.len);
}

/* An object of one member: text (seeded by its index) or noise. */
static struct gzobj *fx_put(struct fx *f, const char *key, size_t len,
			    bool noise)
{
	struct gzobj *o = fx_obj_new(f, key);

	buf_reserve(&o->payload, len);
	if (noise)
		fill_noise(o->payload.p, len, key);
	else
		fill_text(o->payload.p, len, f->nobjs);
	o->payload.len = len;
	gz_member(&o->gz, o->payload.p, len, 6);
	fx_store(f, o);
	return o;
}

static const struct gzobj *fx_find(const struct fx *f, const char *key)
{
	for (unsigned i = 0; i < f->nobjs; i++)
		if (strcmp(f->objs[i].key, key) == 0)
			return &f->objs[i];
	fail_msg("no object %s", key);
	return NULL;
}

static struct channel_spec *fx_spec(struct fx *f,
				    enum channel_data_type data_type,
				    const char *path, bool recordio)
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
	sp->compression = CHANNEL_COMPRESSION_GZIP;
	if (recordio)
		sp->wrapper = CHANNEL_WRAPPER_RECORDIO;
	return sp;
}

/* A started channel over sp with threads inflate threads and part_max
 * (0: the default). */
static struct channel *fx_channel(struct fx *f, const struct channel_spec *sp,
				  unsigned threads, uint64_t part_max)
{
	struct channel_host host = {.index = 0, .count = 1};
	struct channel_conf conf;
	struct channel *ch;
	char err[512] = "";
	int rc;

	channel_conf_init(&conf);
	conf.inflate_threads = threads;
	if (part_max)
		conf.recordio_part_max = part_max;
	ch = channel_create(sp, &host, &conf, f->c);
	assert_non_null(ch);
	assert_true(f->nchs < MAX_CHANNELS);
	f->chs[f->nchs++] = ch;
	rc = channel_start(ch, err, sizeof(err));
	if (rc)
		fail_msg("channel_start: %d (%s)", rc, err);
	return ch;
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

/* small epochs: every pattern; large ones: no reads of a few bytes */
static const struct sizes small_sizes[] = {SIZES(sz_odd), SIZES(sz_page),
					   SIZES(sz_mixed), SIZES(sz_big)};
static const struct sizes large_sizes[] = {SIZES(sz_page), SIZES(sz_mixed),
					   SIZES(sz_big)};

struct reading {
	struct channel_reader *r;
	uint64_t pos;
};

/* One read of want bytes at offset, appended to out; the view's iovecs
 * add up, and an error comes with no bytes.  *n gets the byte count. */
static int read_at(struct channel_reader *r, uint64_t offset, size_t want,
		   struct buf *out, size_t *n)
{
	struct channel_view v;
	size_t sum = 0;
	int rc;

	memset(&v, 0, sizeof(v));
	rc = channel_reader_read(r, offset, want, &v);
	if (rc == 0) {
		assert_true(v.bytes <= want);
		for (int k = 0; k < v.count; k++) {
			buf_add(out, v.iov[k].iov_base, v.iov[k].iov_len);
			sum += v.iov[k].iov_len;
		}
		assert_int_equal(sum, v.bytes);
	} else {
		assert_int_equal(v.bytes, 0);
	}
	*n = v.bytes;
	channel_view_release(r, &v);
	return rc;
}

/* Reads from the reader's position to the end or the first error, in
 * reads cycling through sz.  An error is returned again by the next read
 * (never an end of file).  Returns 0 at the end, or the error. */
static int read_rest(struct channel_reader *r, struct sizes sz, struct buf *out)
{
	uint64_t pos = channel_reader_position(r);
	size_t i = 0, n;
	int rc;

	for (;;) {
		rc = read_at(r, pos, sz.v[i++ % sz.n], out, &n);
		pos += n;
		if (rc || n == 0)
			break;
		assert_int_equal(channel_reader_position(r), pos);
	}
	if (rc) {
		struct buf none = {0};

		assert_int_equal(read_at(r, pos, 4096, &none, &n), rc);
		assert_int_equal(n, 0);
	}
	return rc;
}

static int read_epoch(struct channel *ch, unsigned epoch, struct sizes sz,
		      struct buf *out)
{
	struct channel_reader *r = channel_reader_open(ch, epoch);
	int rc;

	assert_non_null(r);
	live_reader = r;
	assert_int_equal(channel_reader_position(r), 0);
	rc = read_rest(r, sz, out);
	live_reader = NULL;
	channel_reader_close(r);
	return rc;
}

static void check_epoch(struct channel *ch, unsigned epoch,
			const struct sizes *sizes, size_t nsizes,
			const struct buf *want)
{
	for (size_t s = 0; s < nsizes; s++) {
		struct buf got = {0};

		assert_int_equal(read_epoch(ch, epoch, sizes[s], &got), 0);
		assert_same_bytes(&got, want);
		buf_free(&got);
	}
}

/* A gzip epoch's size is not known, before or after it is read. */
static void check_no_size(struct channel *ch, unsigned epoch)
{
	uint64_t size = 12345;

	assert_false(channel_epoch_size(ch, epoch, &size));
	assert_int_equal(size, 0);
}

/* ---- objects ---- */

/*
 * Under g/: payloads of 1, 100, 0 (an empty member), 70 KiB, 300 KiB of
 * noise (more compressed than a block), a three-member object (5000
 * bytes at level 1, an empty member, 20000 at level 9), 3 bytes, and
 * 1 MiB + 3; plus one outside the prefix.
 */
static void put_mixed_set(struct fx *f, const struct gzobj **objs, size_t *n)
{
	struct gzobj *multi;
	size_t a = 5000, b = 20000;

	*n = 0;
	objs[(*n)++] = fx_put(f, "g/00", 1, false);
	objs[(*n)++] = fx_put(f, "g/01", 100, false);
	objs[(*n)++] = fx_put(f, "g/02", 0, false);
	objs[(*n)++] = fx_put(f, "g/03", 70 * KIB, false);
	objs[(*n)++] = fx_put(f, "g/04", 300 * KIB, true);
	multi = fx_obj_new(f, "g/05");
	buf_reserve(&multi->payload, a + b);
	fill_text(multi->payload.p, a + b, 99);
	multi->payload.len = a + b;
	gz_member(&multi->gz, multi->payload.p, a, 1);
	gz_member(&multi->gz, "", 0, 6);
	gz_member(&multi->gz, multi->payload.p + a, b, 9);
	fx_store(f, multi);
	objs[(*n)++] = multi;
	objs[(*n)++] = fx_put(f, "g/06", 3, false);
	objs[(*n)++] = fx_put(f, "g/07", 1 * MIB + 3, false);
	fx_put(f, "h/outside", 100, false);
	/* the empty member is a gzip object of its own bytes */
	assert_true(objs[2]->gz.len >= 20);
}

static void test_gzip_objects(void **state)
{
	const struct gzobj *objs[MAX_OBJS];
	struct buf plain = {0}, framed = {0};
	static struct fx f; /* outlives a failed assertion */
	size_t n;

	(void)state;
	fx_init(&f, 16 * MIB, 64 * KIB);
	put_mixed_set(&f, objs, &n);
	for (size_t i = 0; i < n; i++) {
		buf_add(&plain, objs[i]->payload.p, objs[i]->payload.len);
		frame_record(&framed, objs[i]->payload.p, objs[i]->payload.len,
			     CHANNEL_RECORDIO_PART_MAX);
	}
	for (size_t t = 0; t < NTHREADS; t++) {
		struct channel_spec *sp, *sp_rio;
		struct channel *ch, *ch_rio;
		struct buf got = {0};
		struct recs recs;

		sp = fx_spec(&f, CHANNEL_S3_PREFIX, "g/", false);
		ch = fx_channel(&f, sp, thread_counts[t], 0);
		check_no_size(ch, 0);
		check_epoch(ch, 0, small_sizes, 4, &plain);
		check_epoch(ch, 1, large_sizes, 1, &plain);
		check_no_size(ch, 0);

		sp_rio = fx_spec(&f, CHANNEL_S3_PREFIX, "g/", true);
		ch_rio = fx_channel(&f, sp_rio, thread_counts[t], 0);
		check_epoch(ch_rio, 0, small_sizes, 4, &framed);
		check_no_size(ch_rio, 0);
		/* one whole record per object, the empty member's empty */
		assert_int_equal(read_epoch(ch_rio, 1, SZ(sz_big), &got), 0);
		assert_same_bytes(&got, &framed);
		decode_recordio(&got, &recs);
		assert_int_equal(recs.n, n);
		assert_int_equal(recs.nparts, n);
		for (size_t i = 0; i < n; i++) {
			assert_int_equal(recs.flags[i], 0);
			assert_int_equal(recs.len[i], objs[i]->payload.len);
		}
		assert_int_equal(recs.len[2], 0);
		recs_free(&recs);
		buf_free(&got);
	}
	buf_free(&plain);
	buf_free(&framed);
	fx_fini(&f);
}

/* Reads of one byte, and tiny parts: small objects only. */
static void test_gzip_small_reads(void **state)
{
	static const size_t lens[] = {0, 7, 8, 9, 16, 17, 25, 1000};
	struct buf plain = {0}, framed = {0}, got = {0};
	struct channel_spec *sp, *sp_rio;
	struct channel *ch, *ch_rio;
	struct recs recs;
	static struct fx f; /* outlives a failed assertion */

	(void)state;
	fx_init(&f, 8 * MIB, 64 * KIB);
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		char key[32];
		const struct gzobj *o;

		snprintf(key, sizeof(key), "s/%04zu", lens[i]);
		o = fx_put(&f, key, lens[i], i % 2);
		buf_add(&plain, o->payload.p, o->payload.len);
		frame_record(&framed, o->payload.p, o->payload.len, 8);
	}
	sp = fx_spec(&f, CHANNEL_S3_PREFIX, "s/", false);
	ch = fx_channel(&f, sp, 2, 0);
	assert_int_equal(read_epoch(ch, 0, SZ(sz_one), &got), 0);
	assert_same_bytes(&got, &plain);
	buf_free(&got);

	/* RecordIO parts of 8 bytes, split by the stage */
	sp_rio = fx_spec(&f, CHANNEL_S3_PREFIX, "s/", true);
	ch_rio = fx_channel(&f, sp_rio, 2, 8);
	check_epoch(ch_rio, 0, small_sizes, 4, &framed);
	assert_int_equal(read_epoch(ch_rio, 0, SZ(sz_one), &got), 0);
	assert_same_bytes(&got, &framed);
	decode_recordio(&got, &recs);
	assert_int_equal(recs.n, 8);
	/* 0: whole; 9: start 8, end 1; 25: start, middle, middle, end */
	assert_int_equal(recs.flags[0], 0);
	assert_int_equal(recs.lens[0], 0);
	assert_int_equal(recs.flags[3], 1);
	assert_int_equal(recs.lens[3], 8);
	assert_int_equal(recs.flags[4], 3);
	assert_int_equal(recs.lens[4], 1);
	assert_int_equal(recs.flags[10], 1);
	assert_int_equal(recs.flags[11], 2);
	assert_int_equal(recs.flags[12], 2);
	assert_int_equal(recs.flags[13], 3);
	assert_int_equal(recs.lens[13], 1);

	recs_free(&recs);
	buf_free(&got);
	buf_free(&plain);
	buf_free(&framed);
	fx_fini(&f);
}

/*
 * A 4 MiB budget of 1 MiB blocks: the stage holds at most a quarter of
 * it for framing, so the 6 MiB object is counted in a second pass and
 * streamed framed in a third; its neighbours are framed from the hold.
 */
static void test_gzip_larger_than_hold(void **state)
{
	const size_t big = 6 * MIB + 5;
	struct buf plain = {0}, framed = {0}, parts = {0};
	const struct gzobj *o[3];
	static struct fx f; /* outlives a failed assertion */

	(void)state;
	fx_init(&f, 4 * MIB, 1 * MIB);
	o[0] = fx_put(&f, "L/0", 1000, false);
	o[1] = fx_put(&f, "L/1", big, false);
	o[2] = fx_put(&f, "L/2", 2000, true);
	for (size_t i = 0; i < 3; i++) {
		buf_add(&plain, o[i]->payload.p, o[i]->payload.len);
		frame_record(&framed, o[i]->payload.p, o[i]->payload.len,
			     CHANNEL_RECORDIO_PART_MAX);
		frame_record(&parts, o[i]->payload.p, o[i]->payload.len, MIB);
	}
	/* a few blocks compressed, six and more inflated */
	assert_true(o[1]->gz.len > 2 * MIB && o[1]->gz.len < 4 * MIB);

	for (size_t t = 0; t < NTHREADS; t++) {
		struct channel_spec *sp_rio, *sp_parts, *sp;
		struct channel *ch_rio, *ch_parts, *ch;
		struct buf got = {0};
		struct recs recs;

		sp_rio = fx_spec(&f, CHANNEL_S3_PREFIX, "L/", true);
		ch_rio = fx_channel(&f, sp_rio, thread_counts[t], 0);
		check_epoch(ch_rio, 0, large_sizes, 3, &framed);
		check_memory(&f);

		/* parts of 1 MiB: start, five middles, end of 5 bytes */
		sp_parts = fx_spec(&f, CHANNEL_S3_PREFIX, "L/", true);
		ch_parts = fx_channel(&f, sp_parts, thread_counts[t], MIB);
		assert_int_equal(read_epoch(ch_parts, 0, SZ(sz_mixed), &got),
				 0);
		assert_same_bytes(&got, &parts);
		decode_recordio(&got, &recs);
		assert_int_equal(recs.n, 3);
		assert_int_equal(recs.nparts, 9);
		assert_int_equal(recs.flags[1], 1);
		for (unsigned k = 2; k < 7; k++)
			assert_int_equal(recs.flags[k], 2);
		assert_int_equal(recs.flags[7], 3);
		assert_int_equal(recs.lens[7], 5);
		assert_int_equal(recs.len[1], big);
		recs_free(&recs);
		buf_free(&got);
		check_memory(&f);

		sp = fx_spec(&f, CHANNEL_S3_PREFIX, "L/", false);
		ch = fx_channel(&f, sp, thread_counts[t], 0);
		check_epoch(ch, 0, large_sizes, 3, &plain);
		check_memory(&f);
	}
	buf_free(&plain);
	buf_free(&framed);
	buf_free(&parts);
	fx_fini(&f);
}

/*
 * The same passes with room to spare: an 8 MiB budget holds at most 2 MiB
 * for framing, and the 5 MiB object compresses to less than 3 MiB, so
 * its blocks and a chunk fit together whatever the stage pins.
 */
static void test_gzip_count_then_stream(void **state)
{
	const size_t big = 5 * MIB + 1;
	struct buf framed = {0}, parts = {0};
	const struct gzobj *o[4];
	static struct fx f; /* outlives a failed assertion */

	(void)state;
	fx_init(&f, 8 * MIB, 256 * KIB);
	o[0] = fx_put(&f, "C/0", 3000, true);
	o[1] = fx_put(&f, "C/1", big, false);
	o[2] = fx_put(&f, "C/2", 0, false);
	o[3] = fx_put(&f, "C/3", 2 * MIB + 1, false); /* just over the hold */
	for (size_t i = 0; i < 4; i++) {
		frame_record(&framed, o[i]->payload.p, o[i]->payload.len,
			     CHANNEL_RECORDIO_PART_MAX);
		frame_record(&parts, o[i]->payload.p, o[i]->payload.len, MIB);
	}
	assert_true(o[1]->gz.len < 3 * MIB);
	for (size_t t = 0; t < NTHREADS; t++) {
		struct channel *ch, *ch_parts;
		struct buf got = {0};
		struct recs recs;

		ch = fx_channel(&f, fx_spec(&f, CHANNEL_S3_PREFIX, "C/", true),
				thread_counts[t], 0);
		check_epoch(ch, 0, large_sizes, 3, &framed);
		ch_parts =
		    fx_channel(&f, fx_spec(&f, CHANNEL_S3_PREFIX, "C/", true),
			       thread_counts[t], MIB);
		assert_int_equal(read_epoch(ch_parts, 0, SZ(sz_page), &got), 0);
		assert_same_bytes(&got, &parts);
		decode_recordio(&got, &recs);
		/* 1 + 6 (5 MiB + 1) + 1 (empty) + 3 (2 MiB + 1) parts */
		assert_int_equal(recs.n, 4);
		assert_int_equal(recs.nparts, 11);
		assert_int_equal(recs.len[1], big);
		assert_int_equal(recs.len[2], 0);
		assert_int_equal(recs.flags[7], 0);
		assert_int_equal(recs.flags[8], 1);
		assert_int_equal(recs.flags[10], 3);
		assert_int_equal(recs.lens[10], 1);
		recs_free(&recs);
		buf_free(&got);
		check_memory(&f);
	}
	buf_free(&framed);
	buf_free(&parts);
	fx_fini(&f);
}

/* ---- literal items ---- */

/* Lines of an augmented manifest: a -ref to a gzip object and a label;
 * labels[i] NULL makes line i lack its label. */
static void put_augmented(struct fx *f, const char *key,
			  const char *const *labels, size_t n)
{
	struct buf text = {0};

	for (size_t i = 0; i < n; i++) {
		char line[256], okey[32];

		snprintf(okey, sizeof(okey), "a/x%zu", i);
		fx_put(f, okey, 100 + 3000 * i, i % 2);
		if (labels[i])
			snprintf(line, sizeof(line),
				 "{\"source-ref\": \"s3://bucket/%s\", "
				 "\"label\": \"%s\"}\n",
				 okey, labels[i]);
		else
			snprintf(line, sizeof(line),
				 "{\"source-ref\": \"s3://bucket/%s\"}\n",
				 okey);
		buf_add(&text, line, strlen(line));
	}
	buf_add(&text, "", 1);
	test_store_put(f->ts, key, "\"m1\"", text.p, text.len - 1);
	buf_free(&text);
}

static struct channel_spec *augmented_spec(struct fx *f, const char *path,
					   bool recordio)
{
	struct channel_spec *sp =
	    fx_spec(f, CHANNEL_AUGMENTED_MANIFEST_FILE, path, recordio);

	sp->attributes = calloc(2, sizeof(*sp->attributes));
	assert_non_null(sp->attributes);
	sp->attributes[0] = strdup("source-ref");
	sp->attributes[1] = strdup("label");
	sp->nattributes = 2;
	return sp;
}

/* The expected bytes of lines [0, n) of put_augmented(). */
static void augmented_want(const struct fx *f, const char *const *labels,
			   size_t n, struct buf *plain, struct buf *framed)
{
	for (size_t i = 0; i < n; i++) {
		char okey[32];
		const struct gzobj *o;

		snprintf(okey, sizeof(okey), "a/x%zu", i);
		o = fx_find(f, okey);
		buf_add(plain, o->payload.p, o->payload.len);
		buf_add(plain, labels[i], strlen(labels[i]));
		frame_record(framed, o->payload.p, o->payload.len,
			     CHANNEL_RECORDIO_PART_MAX);
		frame_record(framed, labels[i], strlen(labels[i]),
			     CHANNEL_RECORDIO_PART_MAX);
	}
}

static void test_gzip_literals(void **state)
{
	static const char *const labels[] = {"cat", "a dog", "x",
					     "0123456789abcdefghij", "owl"};
	const size_t n = sizeof(labels) / sizeof(labels[0]);
	struct buf plain = {0}, framed = {0};
	static struct fx f; /* outlives a failed assertion */

	(void)state;
	fx_init(&f, 16 * MIB, 64 * KIB);
	put_augmented(&f, "manifests/aug.jsonl", labels, n);
	augmented_want(&f, labels, n, &plain, &framed);
	for (size_t t = 0; t < NTHREADS; t++) {
		struct channel *ch, *ch_rio;

		ch = fx_channel(
		    &f, augmented_spec(&f, "manifests/aug.jsonl", false),
		    thread_counts[t], 0);
		check_epoch(ch, 0, small_sizes, 4, &plain);
		ch_rio = fx_channel(
		    &f, augmented_spec(&f, "manifests/aug.jsonl", true),
		    thread_counts[t], 0);
		check_epoch(ch_rio, 0, small_sizes, 4, &framed);
		check_no_size(ch_rio, 0);
	}
	buf_free(&plain);
	buf_free(&framed);
	fx_fini(&f);
}

/*
 * An empty label is an empty record, as without gzip (test_channel's
 * test_augmented_parts): records pair up by position, so a dropped one
 * would give every later object the wrong label.
 */
static void test_gzip_empty_literal_record(void **state)
{
	static const char *const labels[] = {"cat", "", "owl"};
	struct buf plain = {0}, framed = {0}, got = {0};
	struct channel *ch;
	struct recs recs;
	static struct fx f; /* outlives a failed assertion */

	(void)state;
	fx_init(&f, 16 * MIB, 64 * KIB);
	put_augmented(&f, "manifests/empty.jsonl", labels, 3);
	augmented_want(&f, labels, 3, &plain, &framed);
	ch = fx_channel(&f, augmented_spec(&f, "manifests/empty.jsonl", true),
			2, 0);
	assert_int_equal(read_epoch(ch, 0, SZ(sz_page), &got), 0);
	decode_recordio(&got, &recs);
	assert_int_equal(recs.n, 6);
	assert_int_equal(recs.len[3], 0);
	assert_same_bytes(&got, &framed);
	recs_free(&recs);
	buf_free(&got);
	buf_free(&plain);
	buf_free(&framed);
	fx_fini(&f);
}

/* ---- broken objects ---- */

enum damage { CORRUPT, TRUNCATED_HALF, TRUNCATED_TRAILER };

/*
 * b/0 and b/1 are fine, b/2 is damaged, b/3 is fine.  The reader gets
 * every byte of b/0 and b/1, then (without framing) perhaps some of b/2's,
 * then EIO; framed, a record is only given whole, so nothing of b/2.
 */
static void check_damaged(enum damage how)
{
	struct buf before = {0}, before_framed = {0};
	const struct gzobj *o[4];
	struct gzobj *bad;
	static struct fx f; /* outlives a failed assertion */

	fx_init(&f, 16 * MIB, 64 * KIB);
	o[0] = fx_put(&f, "b/0", 50 * KIB, false);
	o[1] = fx_put(&f, "b/1", 20 * KIB, true);
	bad = fx_obj_new(&f, "b/2");
	buf_reserve(&bad->payload, 200 * KIB);
	fill_text(bad->payload.p, 200 * KIB, 5);
	bad->payload.len = 200 * KIB;
	gz_member(&bad->gz, bad->payload.p, bad->payload.len, 6);
	if (how == CORRUPT) {
		size_t mid = 10 + (bad->gz.len - 18) / 2;

		for (size_t k = 0; k < 16; k++)
			bad->gz.p[mid + k] ^= (unsigned char)(0xA5 + k);
	} else if (how == TRUNCATED_HALF) {
		bad->gz.len /= 2;
	} else {
		bad->gz.len -= 4; /* the length field of the trailer */
	}
	fx_store(&f, bad);
	o[2] = bad;
	o[3] = fx_put(&f, "b/3", 1000, false);
	for (size_t i = 0; i < 2; i++) {
		buf_add(&before, o[i]->payload.p, o[i]->payload.len);
		frame_record(&before_framed, o[i]->payload.p, o[i]->payload.len,
			     CHANNEL_RECORDIO_PART_MAX);
	}

	for (size_t t = 0; t < NTHREADS; t++) {
		struct channel *ch, *ch_rio;

		ch = fx_channel(&f, fx_spec(&f, CHANNEL_S3_PREFIX, "b/", false),
				thread_counts[t], 0);
		ch_rio =
		    fx_channel(&f, fx_spec(&f, CHANNEL_S3_PREFIX, "b/", true),
			       thread_counts[t], 0);
		for (size_t s = 0; s < 4; s++) {
			struct buf got = {0};
			size_t extra;

			assert_int_equal(
			    read_epoch(ch, 0, small_sizes[s], &got), EIO);
			assert_true(got.len >= before.len);
			assert_bytes_at(got.p, before.p, before.len, 0);
			extra = got.len - before.len;
			assert_true(extra <= bad->payload.len);
			/* cut short, what came of b/2 is its true start */
			if (how != CORRUPT)
				assert_bytes_at(got.p + before.len,
						bad->payload.p, extra,
						before.len);
			buf_free(&got);

			assert_int_equal(
			    read_epoch(ch_rio, 0, small_sizes[s], &got), EIO);
			assert_same_bytes(&got, &before_framed);
			buf_free(&got);
		}
	}
	buf_free(&before);
	buf_free(&before_framed);
	fx_fini(&f);
}

static void test_gzip_corrupt(void **state)
{
	(void)state;
	check_damaged(CORRUPT);
}

static void test_gzip_truncated(void **state)
{
	(void)state;
	check_damaged(TRUNCATED_HALF);
}

static void test_gzip_truncated_trailer(void **state)
{
	(void)state;
	check_damaged(TRUNCATED_TRAILER);
}

/* A manifest key that does not exist: the objects before it, then EIO. */
static void test_gzip_missing_key(void **state)
{
	static const char manifest[] =
	    "[{\"prefix\": \"s3://bucket/m/\"}, \"a\", \"b\", \"gone\", "
	    "\"c\"]";
	struct buf want = {0};
	static struct fx f; /* outlives a failed assertion */

	(void)state;
	fx_init(&f, 16 * MIB, 64 * KIB);
	fx_put(&f, "m/a", 10000, false);
	fx_put(&f, "m/b", 100, true);
	fx_put(&f, "m/c", 100, false);
	test_store_put(f.ts, "manifests/m.json", "\"m1\"", manifest,
		       strlen(manifest));
	buf_add(&want, fx_find(&f, "m/a")->payload.p, 10000);
	buf_add(&want, fx_find(&f, "m/b")->payload.p, 100);
	for (size_t t = 0; t < NTHREADS; t++) {
		struct channel *ch =
		    fx_channel(&f,
			       fx_spec(&f, CHANNEL_MANIFEST_FILE,
				       "manifests/m.json", false),
			       thread_counts[t], 0);

		for (size_t s = 0; s < 4; s++) {
			struct buf got = {0};

			assert_int_equal(
			    read_epoch(ch, 0, small_sizes[s], &got), EIO);
			assert_same_bytes(&got, &want);
			buf_free(&got);
		}
	}
	buf_free(&want);
	fx_fini(&f);
}

/* A shuffled gzip channel: the epoch's order is channel_order()'s. */
/*
 * Gunzipping an epoch in key order holds nothing per key: FLAT_OBJS gzip
 * objects through a 512 KiB budget (read_flat(): the cache's records and
 * the heap, sampled after every read); gunzip holds its place in the
 * trimmed listing, not the listing's start.
 */
#define FLAT_OBJS   4000
#define FLAT_BUDGET (512 * KIB)

static void test_gzip_flat(void **state)
{
	static struct fx f; /* outlives a failed assertion */
	struct buf want = {0}, gz = {0};
	unsigned char payload[1600];
	struct channel *ch;

	(void)state;
	fx_init(&f, FLAT_BUDGET, 64 * KIB);
	for (size_t i = 0; i < FLAT_OBJS; i++) {
		char key[32];
		size_t len = 600 + i % 1000;

		snprintf(key, sizeof(key), "g/%05zu", i);
		fill_text(payload, len, i);
		gz.len = 0;
		gz_member(&gz, payload, len, 6);
		test_store_put(f.ts, key, "\"v1\"", gz.p, gz.len);
		buf_add(&want, payload, len);
	}
	ch = fx_channel(&f, fx_spec(&f, CHANNEL_S3_PREFIX, "g/", false), 2, 0);
	read_flat(f.c, ch, 0, &want, FLAT_OBJS, FLAT_BUDGET, &live_reader);
	buf_free(&gz);
	buf_free(&want);
	fx_fini(&f);
}

static void test_gzip_shuffle(void **state)
{
	const struct gzobj *objs[6];
	static struct fx f; /* outlives a failed assertion */

	(void)state;
	fx_init(&f, 16 * MIB, 64 * KIB);
	for (size_t i = 0; i < 6; i++) {
		char key[32];

		snprintf(key, sizeof(key), "r/%zu", i);
		objs[i] = fx_put(&f, key, 1000 + 777 * i, i % 2);
	}
	for (size_t t = 0; t < NTHREADS; t++) {
		struct channel_spec *sp =
		    fx_spec(&f, CHANNEL_S3_PREFIX, "r/", true);
		struct channel *ch;

		sp->shuffle = true;
		sp->seed = 11;
		ch = fx_channel(&f, sp, thread_counts[t], 0);
		for (unsigned e = 0; e < 2; e++) {
			struct buf want = {0};
			uint32_t order[6];

			channel_order(order, 6, true, 11, e);
			for (size_t i = 0; i < 6; i++)
				frame_record(&want, objs[order[i]]->payload.p,
					     objs[order[i]]->payload.len,
					     CHANNEL_RECORDIO_PART_MAX);
			check_epoch(ch, e, small_sizes, 4, &want);
			check_no_size(ch, e);
			buf_free(&want);
		}
	}
	fx_fini(&f);
}

/* ---- emulated seeks ---- */

/* Reads len bytes at offset (several reads); they must be want's. */
static void check_range(struct channel_reader *r, const struct buf *want,
			uint64_t offset, size_t len)
{
	struct buf got = {0};
	uint64_t pos = offset;
	size_t n;

	while (got.len < len) {
		assert_int_equal(read_at(r, pos, len - got.len, &got, &n), 0);
		assert_true(n > 0);
		pos += n;
		assert_int_equal(channel_reader_position(r), pos);
	}
	assert_int_equal(got.len, len);
	assert_bytes_at(got.p, want->p + offset, len, (size_t)offset);
	buf_free(&got);
}

static void check_seeks(struct channel *ch, const struct buf *want)
{
	struct channel_reader *r = channel_reader_open(ch, 0);
	struct buf rest = {0}, none = {0};
	size_t n;

	assert_non_null(r);
	live_reader = r;
	check_range(r, want, 0, 1000);
	check_range(r, want, 300, 1000);	  /* back */
	check_range(r, want, 250000, 5000);	  /* forward */
	check_range(r, want, 100, 10);		  /* back again */
	check_range(r, want, want->len - 10, 10); /* the last bytes */
	/* past the end: nothing, and no error */
	assert_int_equal(read_at(r, want->len + 7, 100, &none, &n), 0);
	assert_int_equal(n, 0);
	/* from the middle to the end, after all that */
	check_range(r, want, 123457, 3);
	assert_int_equal(read_rest(r, SZ(sz_mixed), &rest), 0);
	assert_int_equal(rest.len, want->len - 123460);
	assert_bytes_at(rest.p, want->p + 123460, rest.len, 123460);
	live_reader = NULL;
	channel_reader_close(r);
	buf_free(&rest);
}

static void test_gzip_seek(void **state)
{
	const struct gzobj *objs[MAX_OBJS];
	struct buf plain = {0}, framed = {0};
	static struct fx f; /* outlives a failed assertion */
	size_t n;

	(void)state;
	fx_init(&f, 16 * MIB, 64 * KIB);
	put_mixed_set(&f, objs, &n);
	for (size_t i = 0; i < n; i++) {
		buf_add(&plain, objs[i]->payload.p, objs[i]->payload.len);
		frame_record(&framed, objs[i]->payload.p, objs[i]->payload.len,
			     CHANNEL_RECORDIO_PART_MAX);
	}
	for (size_t t = 0; t < NTHREADS; t++) {
		check_seeks(
		    fx_channel(&f, fx_spec(&f, CHANNEL_S3_PREFIX, "g/", false),
			       thread_counts[t], 0),
		    &plain);
		check_seeks(
		    fx_channel(&f, fx_spec(&f, CHANNEL_S3_PREFIX, "g/", true),
			       thread_counts[t], 0),
		    &framed);
	}
	buf_free(&plain);
	buf_free(&framed);
	fx_fini(&f);
}

/* An argument runs only the tests whose names match it (a glob), or with
 * a leading '-' all but those. */
int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_gzip_objects, watchdog,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_gzip_small_reads, watchdog,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_gzip_count_then_stream,
					    watchdog, teardown),
	    cmocka_unit_test_setup_teardown(test_gzip_literals, watchdog,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_gzip_empty_literal_record,
					    watchdog, teardown),
	    cmocka_unit_test_setup_teardown(test_gzip_corrupt, watchdog,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_gzip_truncated, watchdog,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_gzip_truncated_trailer,
					    watchdog, teardown),
	    cmocka_unit_test_setup_teardown(test_gzip_missing_key, watchdog,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_gzip_flat, watchdog, teardown),
	    cmocka_unit_test_setup_teardown(test_gzip_shuffle, watchdog,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_gzip_seek, watchdog, teardown),
	    /* last: a stage that deadlocks hangs here until the watchdog */
	    cmocka_unit_test_setup_teardown(test_gzip_larger_than_hold,
					    watchdog, teardown),
	};

	if (argc > 1 && argv[1][0] == '-')
		cmocka_set_skip_filter(argv[1] + 1);
	else if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
