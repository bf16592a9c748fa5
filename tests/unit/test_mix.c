/*
 * test_mix: the record shuffle's draws (channel/mix_draw.c) on indexes made
 * by hand, where a mount cannot reach: records that span many blocks, an
 * empty object, a pool of one record or of all of them.  Every record
 * comes out once; drawing the first K and then the rest gives the same
 * order as drawing them all, for every K, and the bytes before K are
 * those of the records drawn; a record is loaded by the last of its blocks
 * in the load order; the order follows the seed and the epoch.
 */
#include "config.h"

#include "channel/core.h"
#include "channel/mix_draw.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define BLOCK 64

/* An index over objects of these sizes, their records beginning at these
 * offsets (a list per object, ended by UINT64_MAX). */
struct fixture {
	struct record_index ix;
	struct channel_spec spec;
	struct channel ch;
	struct epoch_plan plan;
	uint32_t order[8];
};

static void fixture_make(struct fixture *f, const uint64_t *sizes, size_t n,
			 const uint64_t *starts, int64_t seed, uint64_t buffer,
			 unsigned epoch)
{
	struct record_index *ix = &f->ix;
	uint64_t records = 0, blocks = 0;

	memset(f, 0, sizeof(*f));
	ix->block = BLOCK;
	ix->entries = n;
	ix->first = calloc(n + 1, sizeof(uint64_t));
	ix->block_base = calloc(n + 1, sizeof(uint64_t));
	ix->open_end = calloc(n / 64 + 1, sizeof(uint64_t));
	ix->sizes = calloc(n, sizeof(uint64_t));
	ix->start = calloc(256, sizeof(uint64_t));
	assert_non_null(ix->start);
	for (size_t e = 0; e < n; e++) {
		ix->sizes[e] = sizes[e];
		ix->first[e] = records;
		while (*starts != UINT64_MAX)
			ix->start[records++] = *starts++;
		starts++;
		ix->block_base[e] = blocks;
		blocks += (sizes[e] + BLOCK - 1) / BLOCK;
	}
	ix->first[n] = records;
	ix->block_base[n] = blocks;
	ix->records = records;
	ix->block_first = calloc(blocks ? blocks : 1, sizeof(uint64_t));
	for (size_t e = 0; e < n; e++) {
		uint64_t r = ix->first[e];

		for (uint64_t g = ix->block_base[e]; g < ix->block_base[e + 1];
		     g++) {
			while (r < ix->first[e + 1] &&
			       ix->start[r] < (g - ix->block_base[e]) * BLOCK)
				r++;
			ix->block_first[g] = r;
		}
	}
	f->spec.seed = seed;
	f->spec.shuffle = true;
	f->spec.shuffle_buffer = (int64_t)buffer;
	f->ch.spec = &f->spec;
	for (size_t i = 0; i < n; i++)
		f->order[i] =
		    (uint32_t)(n - 1 - i); /* an epoch's object order */
	f->plan.ch = &f->ch; /* (no catalog: the order as it is) */
	f->plan.order = f->order;
	f->plan.n = n;
	f->plan.epoch = epoch;
}

static void fixture_free(struct fixture *f)
{
	free(f->ix.first);
	free(f->ix.block_base);
	free(f->ix.open_end);
	free(f->ix.sizes);
	free(f->ix.start);
	free(f->ix.block_first);
}

/* Every draw of the epoch into out (room for all records): how many. */
static size_t draw_all(struct fixture *f, uint64_t skip, uint64_t *out,
		       uint64_t *bytes_before)
{
	struct mix_epoch me;
	struct mix_draws d;
	size_t n = 0;

	assert_int_equal(mix_epoch_init(&me, &f->ch, &f->ix, &f->plan), 0);
	assert_int_equal(mix_draws_init(&d, &me, &f->ch, f->plan.epoch), 0);
	assert_int_equal(mix_draws_skip_records(&me, &d, skip), 0);
	if (bytes_before)
		*bytes_before = mix_draws_bytes(&me, &d);
	for (;;) {
		uint64_t r;
		uint32_t eb;
		size_t slot;
		bool got;

		assert_int_equal(mix_draw_pick(&me, &d, &eb, &r, &slot, &got),
				 0);
		if (!got)
			break;
		/* the record is one its block loads */
		assert_true(r >= me.own_lo[eb] &&
			    r < me.own_lo[eb] + me.own_n[eb]);
		out[n++] = r;
		assert_int_equal(mix_draw_refill(&me, &d, slot), 0);
	}
	mix_draws_free(&d);
	mix_epoch_free(&me);
	return n;
}

/* 3 objects: records of 10 bytes; a record of 200 bytes over 4 blocks; an
 * empty object; a record ending exactly at a block's end */
static const uint64_t sizes[] = {300, 0, 260};
static const uint64_t starts[] = {
    0,	10,  20,	 30,	     40, 50,  60,  70,	80,
    90, 100, UINT64_MAX, UINT64_MAX, /* the empty object */
    0,	64,  74,	 84,	     94, 104, 200, 250, UINT64_MAX};

static void test_every_record_once(void **state)
{
	static const uint64_t buffers[] = {1, 30, 100, 1 << 20};
	struct fixture f;
	uint64_t out[64];

	(void)state;
	for (size_t b = 0; b < sizeof(buffers) / sizeof(*buffers); b++) {
		bool seen[64] = {false};
		size_t n;

		fixture_make(&f, sizes, 3, starts, 42, buffers[b], 3);
		n = draw_all(&f, 0, out, NULL);
		assert_int_equal(n, f.ix.records);
		for (size_t i = 0; i < n; i++) {
			assert_true(out[i] < f.ix.records);
			assert_false(seen[out[i]]);
			seen[out[i]] = true;
		}
		fixture_free(&f);
	}
}

static void test_resume_is_the_tail(void **state)
{
	struct fixture f;
	uint64_t all[64], tail[64];
	size_t n;

	(void)state;
	fixture_make(&f, sizes, 3, starts, 7, 60, 1);
	n = draw_all(&f, 0, all, NULL);
	for (uint64_t k = 0; k <= n + 2; k++) {
		uint64_t before, sum = 0;
		size_t m = draw_all(&f, k, tail, &before);

		assert_int_equal(m, k < n ? n - k : 0);
		assert_memory_equal(tail, all + (k < n ? k : n),
				    m * sizeof(uint64_t));
		for (uint64_t i = 0; i < k && i < n; i++)
			sum += record_out_len(
			    &f.ix, record_entry(&f.ix, all[i]), all[i]);
		assert_int_equal(before, sum);
	}
	fixture_free(&f);
}

static void test_owner_is_last_loaded(void **state)
{
	struct fixture f;
	struct mix_epoch me;

	(void)state;
	fixture_make(&f, sizes, 3, starts, 11, 60, 0);
	assert_int_equal(mix_epoch_init(&me, &f.ch, &f.ix, &f.plan), 0);
	for (size_t e = 0; e < f.ix.entries; e++) {
		for (uint64_t r = f.ix.first[e]; r < f.ix.first[e + 1]; r++) {
			uint64_t a, z, owner = mix_record_owner(&me, e, r);

			mix_record_span(&me, e, r, &a, &z);
			assert_true(owner >= a && owner <= z);
			for (uint64_t b = a; b <= z; b++)
				assert_true(me.posof[b] <= me.posof[owner]);
		}
	}
	/* the 200-byte record spans 4 blocks */
	{
		uint64_t a, z;

		mix_record_span(&me, 0, 10, &a, &z);
		assert_int_equal(z - a, 3);
	}
	mix_epoch_free(&me);
	fixture_free(&f);
}

static void test_seed_and_epoch(void **state)
{
	struct fixture f;
	uint64_t a[64], b[64], c[64];
	size_t n;

	(void)state;
	fixture_make(&f, sizes, 3, starts, 5, 40, 0);
	n = draw_all(&f, 0, a, NULL);
	assert_int_equal(draw_all(&f, 0, b, NULL), n);
	assert_memory_equal(a, b, n * sizeof(uint64_t)); /* the same */
	f.plan.epoch = 1;
	draw_all(&f, 0, c, NULL);
	assert_memory_not_equal(a, c, n * sizeof(uint64_t));
	f.plan.epoch = 0;
	f.spec.seed = 6;
	draw_all(&f, 0, c, NULL);
	assert_memory_not_equal(a, c, n * sizeof(uint64_t));
	fixture_free(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_every_record_once),
	    cmocka_unit_test(test_resume_is_the_tail),
	    cmocka_unit_test(test_owner_is_last_loaded),
	    cmocka_unit_test(test_seed_and_epoch),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
