/*
 * order: an epoch's order of a channel's entries, and this host's share.
 *
 * The order is a pure function of (n, shuffle, seed, epoch), so every host
 * of a training job, every restart and any other tool that follows
 * s3pipe(1) computes the same one without talking to the others.  The
 * generator is SplitMix64's output function and increment keyed by seed and
 * epoch (channel/internal.h spells it out); bounded draws reject the top of
 * the range so that every value below m is equally likely, and the shuffle
 * is Fisher-Yates from the last position down.  Changing any of this
 * changes every published epoch order: don't.
 *
 * Sharding keeps the positions p of the epoch's order with p mod count ==
 * index, so hosts' shares are disjoint, cover the order, differ in size by
 * at most one, and each follows the epoch's order.
 */
#include "config.h"

#include "channel/internal.h"

#define MIX_MUL1   0xBF58476D1CE4E5B9ull
#define MIX_MUL2   0x94D049BB133111EBull
#define GOLDEN_INC 0x9E3779B97F4A7C15ull

static uint64_t mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * MIX_MUL1;
	z = (z ^ (z >> 27)) * MIX_MUL2;
	return z ^ (z >> 31);
}

void channel_rng_init(struct channel_rng *rng, int64_t seed, uint64_t epoch)
{
	rng->state = mix(mix((uint64_t)seed) ^ epoch);
}

uint64_t channel_rng_next(struct channel_rng *rng)
{
	rng->state += GOLDEN_INC;
	return mix(rng->state);
}

uint64_t channel_rng_below(struct channel_rng *rng, uint64_t m)
{
	uint64_t r;

	if (m == 0) /* outside the contract: behave as m = 1 */
		m = 1;
	/* r is rejected when r > UINT64_MAX - rem, rem = 2^64 mod m < m: an
	 * r <= UINT64_MAX - m is kept without working rem out (a division
	 * saved a draw; the draws are the same) */
	for (;;) {
		r = channel_rng_next(rng);
		if (r <= UINT64_MAX - m || r <= UINT64_MAX - (0 - m) % m)
			return r % m;
	}
}

void channel_shuffle_with(struct channel_rng *rng, uint32_t *items, size_t n)
{
	for (size_t i = n - 1; n >= 2 && i >= 1; i--) {
		size_t j = (size_t)channel_rng_below(rng, (uint64_t)i + 1);
		uint32_t t = items[i];

		items[i] = items[j];
		items[j] = t;
	}
}

void channel_shuffle(uint32_t *items, size_t n, bool shuffle, int64_t seed,
		     uint64_t epoch)
{
	struct channel_rng rng;

	if (!shuffle || n < 2)
		return;
	channel_rng_init(&rng, seed, epoch);
	channel_shuffle_with(&rng, items, n);
}

void channel_order(uint32_t *order, size_t n, bool shuffle, int64_t seed,
		   uint64_t epoch)
{
	for (size_t i = 0; i < n; i++)
		order[i] = (uint32_t)i;
	channel_shuffle(order, n, shuffle, seed, epoch);
}

size_t channel_shard(uint32_t *order, size_t n, const struct channel_host *host)
{
	size_t kept = 0;

	if (!host || host->count <= 1) /* count 0 is outside the contract */
		return n;
	for (size_t p = host->index; p < n; p += host->count)
		order[kept++] = order[p];
	return kept;
}
