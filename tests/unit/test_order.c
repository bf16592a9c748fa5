/*
 * test_order: the epoch order generator (pinned against an independent
 * implementation of the formulas in s3pipe(1) and channel/internal.h), its
 * bounded draws, the Fisher-Yates shuffle and this host's shard.
 *
 * The pinned vectors were computed with a separate Python 3 implementation
 * of the published formulas, not with this code:
 *
 *   M = (1 << 64) - 1
 *   def mix(z):
 *       z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M
 *       z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M
 *       return z ^ (z >> 31)
 *   state = mix(mix(seed & M) ^ epoch)
 *   next:  state = (state + 0x9E3779B97F4A7C15) & M; return mix(state)
 *   below(m): r = next() until r < 2**64 - 2**64 % m; return r % m
 *   order: o = list(range(n)); for i in range(n - 1, 0, -1):
 *          j = below(i + 1); o[i], o[j] = o[j], o[i]
 *
 * (Seed 0, epoch 0 starts from state 0, so its first output is SplitMix64's
 * well-known first output for seed 0, 0xE220A8397B1DCDAF.)
 */
#include "config.h"

#include "channel/internal.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* ---- the generator ---- */

struct rng_vector {
	int64_t seed;
	uint64_t epoch;
	uint64_t state; /* after channel_rng_init */
	uint64_t next[3];
};

static const struct rng_vector rng_vectors[] = {
    {0,
     0,
     0x0ull,
     {0xe220a8397b1dcdafull, 0x6e789e6aa1b965f4ull, 0x06c45d188009454full}},
    {42,
     1,
     0x901883d2427428f4ull,
     {0x196e01eba8e0a0d4ull, 0xf9c2c0931cd997a5ull, 0x1f1625417745045full}},
    {-1,
     7,
     0xfd38f4176be7cabfull,
     {0xa5b9b012333e43e0ull, 0xee95cbe679fce5bcull, 0x7ee9ff66981921fdull}},
    {INT64_MIN,
     UINT64_MAX,
     0x9be5ffecee420119ull,
     {0xbaa3fd28b8731eb1ull, 0xce1f617df8dc2b1cull, 0xa1a84b6af924d3a2ull}},
};

static void test_rng_vectors(void **state)
{
	for (size_t v = 0; v < sizeof(rng_vectors) / sizeof(rng_vectors[0]);
	     v++) {
		const struct rng_vector *want = &rng_vectors[v];
		struct channel_rng rng;

		channel_rng_init(&rng, want->seed, want->epoch);
		assert_int_equal(rng.state, want->state);
		for (int i = 0; i < 3; i++)
			assert_int_equal(channel_rng_next(&rng), want->next[i]);
	}
}

static void test_rng_reproducible(void **state)
{
	struct channel_rng a, b, c;
	int differ = 0;

	channel_rng_init(&a, 123456789, 5);
	channel_rng_init(&b, 123456789, 5);
	channel_rng_init(&c, 123456789, 6);
	for (int i = 0; i < 1000; i++) {
		uint64_t x = channel_rng_next(&a);

		assert_int_equal(x, channel_rng_next(&b));
		differ += x != channel_rng_next(&c);
	}
	assert_int_equal(differ, 1000);
}

/* seed 1, epoch 0: draws pinned with the Python reference (above) */
static void test_rng_below_vectors(void **state)
{
	static const uint64_t m[] = {7, 7, 7, 1, 100, 100};
	static const uint64_t want[] = {1, 0, 0, 0, 49, 76};
	struct channel_rng rng;

	channel_rng_init(&rng, 1, 0);
	for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++)
		assert_int_equal(channel_rng_below(&rng, m[i]), want[i]);
}

/*
 * m = 2^63 + 1: 2^64 mod m = 2^63 - 1, so draws >= 2^63 + 1 (about half)
 * are rejected.  Seed 1, epoch 0, raw outputs 3, 4 and 5 are such draws
 * (0x90f7..., 0xb102..., 0x8c02...) and output 6 (0x365cb67a4cad17ea) is
 * not: after three next() calls below() must skip three draws.
 */
static void test_rng_below_rejects(void **state)
{
	const uint64_t m = (1ull << 63) + 1;
	struct channel_rng rng, raw;
	int rejected = 0;

	channel_rng_init(&rng, 1, 0);
	for (int i = 0; i < 3; i++)
		channel_rng_next(&rng);
	assert_int_equal(channel_rng_below(&rng, m), 0x365cb67a4cad17eaull);
	assert_int_equal(channel_rng_next(&rng), 0x68f30837d946750dull);

	/* in general: below() returns the first draw under the limit */
	channel_rng_init(&rng, 99, 3);
	raw = rng;
	for (int i = 0; i < 2000; i++) {
		uint64_t r = channel_rng_below(&rng, m);
		uint64_t x;

		assert_true(r < m);
		x = channel_rng_next(&raw);
		while (x >= m) { /* x >= 2^64 - (2^63 - 1) = m */
			rejected++;
			x = channel_rng_next(&raw);
		}
		assert_int_equal(r, x);
		assert_int_equal(raw.state, rng.state);
	}
	assert_true(rejected > 500);
}

static void test_rng_below_bounds(void **state)
{
	static const uint64_t ms[] = {
	    1, 2, 3, 5, 7, 10, 1000, 1ull << 32, (1ull << 32) + 1, UINT64_MAX};
	struct channel_rng rng;
	int seen[3] = {0, 0, 0};

	channel_rng_init(&rng, -5, 11);
	for (size_t k = 0; k < sizeof(ms) / sizeof(ms[0]); k++)
		for (int i = 0; i < 1000; i++)
			assert_true(channel_rng_below(&rng, ms[k]) < ms[k]);
	/* m = 1 always gives 0, and still draws one value */
	{
		struct channel_rng a = rng;

		assert_int_equal(channel_rng_below(&rng, 1), 0);
		channel_rng_next(&a);
		assert_int_equal(a.state, rng.state);
	}
	/* m = 3 reaches all of 0, 1, 2 */
	for (int i = 0; i < 300; i++)
		seen[channel_rng_below(&rng, 3)]++;
	assert_true(seen[0] > 50 && seen[1] > 50 && seen[2] > 50);
}

/* ---- the shuffle ---- */

static void assert_permutation(const uint32_t *order, size_t n)
{
	unsigned char *seen = calloc(n ? n : 1, 1);

	assert_non_null(seen);
	for (size_t i = 0; i < n; i++) {
		assert_true(order[i] < n);
		assert_int_equal(seen[order[i]], 0);
		seen[order[i]] = 1;
	}
	free(seen);
}

static void test_order_vectors(void **state)
{
	static const uint32_t want42_0[] = {2, 8, 9, 7, 1, 4, 6, 0, 5, 3};
	static const uint32_t want42_1[] = {3, 1, 6, 8, 4, 5, 9, 7, 2, 0};
	static const uint32_t want7_3[] = {4, 3, 2, 1, 0};
	uint32_t o[10];

	channel_order(o, 10, true, 42, 0);
	assert_memory_equal(o, want42_0, sizeof(want42_0));
	channel_order(o, 10, true, 42, 1);
	assert_memory_equal(o, want42_1, sizeof(want42_1));
	channel_order(o, 5, true, 7, 3);
	assert_memory_equal(o, want7_3, sizeof(want7_3));
	/* n = 2, seed 7, epochs 0..3: [0 1] [1 0] [1 0] [0 1] */
	channel_order(o, 2, true, 7, 0);
	assert_true(o[0] == 0 && o[1] == 1);
	channel_order(o, 2, true, 7, 1);
	assert_true(o[0] == 1 && o[1] == 0);
	channel_order(o, 2, true, 7, 2);
	assert_true(o[0] == 1 && o[1] == 0);
	channel_order(o, 2, true, 7, 3);
	assert_true(o[0] == 0 && o[1] == 1);
}

static void test_order_permutation(void **state)
{
	uint32_t *o = malloc(5000 * sizeof(*o));

	assert_non_null(o);
	channel_order(o, 0, true, 1, 1); /* must not touch o */
	for (size_t n = 1; n <= 70; n++) {
		for (uint64_t epoch = 0; epoch < 5; epoch++) {
			channel_order(o, n, true, (int64_t)n * 31, epoch);
			assert_permutation(o, n);
		}
	}
	channel_order(o, 1, true, 3, 9);
	assert_int_equal(o[0], 0);
	for (size_t n = 100; n <= 5000; n = n * 3 + 1) {
		channel_order(o, n, true, -77, 2);
		assert_permutation(o, n);
	}
	free(o);
}

static void test_order_deterministic(void **state)
{
	uint32_t a[1000], b[1000];

	channel_order(a, 1000, true, 2024, 17);
	for (int i = 0; i < 3; i++) {
		memset(b, 0xff, sizeof(b));
		channel_order(b, 1000, true, 2024, 17);
		assert_memory_equal(a, b, sizeof(a));
	}
}

static void test_order_epochs_and_seeds_differ(void **state)
{
	static uint32_t o[10][1000];

	for (uint64_t e = 0; e < 10; e++)
		channel_order(o[e], 1000, true, 5, e);
	for (int i = 0; i < 10; i++)
		for (int j = i + 1; j < 10; j++)
			assert_memory_not_equal(o[i], o[j], sizeof(o[i]));
	for (int s = 0; s < 10; s++)
		channel_order(o[s], 1000, true, (int64_t)s - 5, 3);
	for (int i = 0; i < 10; i++)
		for (int j = i + 1; j < 10; j++)
			assert_memory_not_equal(o[i], o[j], sizeof(o[i]));
}

static void test_order_no_shuffle(void **state)
{
	uint32_t o[257];

	memset(o, 0xff, sizeof(o));
	channel_order(o, 257, false, 42, 9);
	for (size_t i = 0; i < 257; i++)
		assert_int_equal(o[i], i);
}

/* Every one of the 120 orders of 5 entries shows up, none far too often. */
static void test_order_uniform_smoke(void **state)
{
	static unsigned counts[5 * 5 * 5 * 5 * 5];
	const unsigned epochs = 12000; /* 100 per order expected */
	unsigned distinct = 0;

	memset(counts, 0, sizeof(counts));
	for (uint64_t e = 0; e < epochs; e++) {
		uint32_t o[5];
		unsigned code = 0;

		channel_order(o, 5, true, 1234, e);
		for (int i = 0; i < 5; i++)
			code = code * 5 + (unsigned)o[i];
		counts[code]++;
	}
	for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
		if (!counts[c])
			continue;
		distinct++;
		assert_true(counts[c] >= 50 && counts[c] <= 150);
	}
	assert_int_equal(distinct, 120);
}

/* ---- sharding ---- */

static void test_shard_partition(void **state)
{
	static const size_t sizes[] = {0, 1, 2, 3, 4, 5, 7, 10, 31, 100, 1001};
	uint32_t full[1001], share[1001];
	unsigned char seen[1001];

	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		size_t n = sizes[s];

		for (unsigned count = 1; count <= 5; count++) {
			size_t smin = SIZE_MAX, smax = 0, total = 0;

			channel_order(full, n, true, 8, count);
			memset(seen, 0, sizeof(seen));
			for (unsigned index = 0; index < count; index++) {
				struct channel_host h = {index, count};
				size_t k, last = 0;

				if (n)
					memcpy(share, full, n * sizeof(*full));
				k = channel_shard(share, n, &h);
				assert_true(k <= n);
				total += k;
				smin = k < smin ? k : smin;
				smax = k > smax ? k : smax;
				for (size_t i = 0; i < k; i++) {
					size_t pos = SIZE_MAX;

					/* disjoint from every other share */
					assert_int_equal(seen[share[i]], 0);
					seen[share[i]] = 1;
					/* in epoch order */
					for (size_t p = 0; p < n; p++)
						if (full[p] == share[i])
							pos = p;
					assert_true(pos < n);
					assert_true(i == 0 || pos > last);
					assert_int_equal(pos % count, index);
					last = pos;
				}
			}
			assert_int_equal(total, n);
			for (size_t i = 0; i < n; i++)
				assert_int_equal(seen[i], 1);
			assert_true(smax - smin <= 1);
		}
	}
}

static void test_shard_examples(void **state)
{
	uint32_t o[] = {9, 8, 7, 6, 5, 4, 3, 2, 1, 0};
	struct channel_host h1 = {1, 3};
	struct channel_host one = {0, 1};

	assert_int_equal(channel_shard(o, 10, &one), 10);
	assert_int_equal(o[0], 9);
	assert_int_equal(channel_shard(o, 10, &h1), 3);
	assert_int_equal(o[0], 8);
	assert_int_equal(o[1], 5);
	assert_int_equal(o[2], 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rng_vectors),
	    cmocka_unit_test(test_rng_reproducible),
	    cmocka_unit_test(test_rng_below_vectors),
	    cmocka_unit_test(test_rng_below_rejects),
	    cmocka_unit_test(test_rng_below_bounds),
	    cmocka_unit_test(test_order_vectors),
	    cmocka_unit_test(test_order_permutation),
	    cmocka_unit_test(test_order_deterministic),
	    cmocka_unit_test(test_order_epochs_and_seeds_differ),
	    cmocka_unit_test(test_order_no_shuffle),
	    cmocka_unit_test(test_order_uniform_smoke),
	    cmocka_unit_test(test_shard_partition),
	    cmocka_unit_test(test_shard_examples),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
