/*
 * bench-float: util_parse_float32 against strtof() on a corpus of numbers
 * as ML CSV files hold them, about 20 MB: 40% "%.17g" doubles in [0, 1),
 * 30% "%.18e" (numpy savetxt's default) of values of either sign across a
 * few decades, 20% small integers, 10% short decimals such as "-3.25".
 * The corpus is the same on every run (a fixed seed).
 *
 * Both parsers first go over the whole corpus once and must give the same
 * bits for every value (exit 1 if not); then each is timed over it five
 * times and the best run counts.  It prints one line per parser, MB/s of
 * text (a separator counted per value, as in a CSV file) and ns per value,
 * then the ratio.
 *
 *   contrib/bench-float [MB]
 */
#include "config.h"

#include "util/float.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RUNS 5

/* the parsers' results go here, so that the compiler keeps the work */
static volatile uint32_t sink;

struct corpus {
	char *text;	/* the values, each followed by a NUL */
	size_t *offset; /* where value i starts in text */
	size_t *len;	/* its length, the NUL left out */
	size_t count;
	size_t bytes; /* text bytes with one separator per value */
};

/* splitmix64 */
static uint64_t next64(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

/* uniform in [0, 1) */
static double unit(uint64_t *s)
{
	return (double)(next64(s) >> 11) / 9007199254740992.0;
}

/* one value of the mix into buf; returns its length */
static size_t make_value(uint64_t *s, char *buf, size_t size)
{
	unsigned kind = (unsigned)(next64(s) % 10);
	double v;
	int n;

	if (kind < 4) {
		n = snprintf(buf, size, "%.17g", unit(s));
	} else if (kind < 7) {
		v = (unit(s) * 2 - 1) * pow(10, (int)(next64(s) % 7) - 3);
		n = snprintf(buf, size, "%.18e", v);
	} else if (kind < 9) {
		n = snprintf(buf, size, "%d", (int)(next64(s) % 1000));
	} else {
		/* -3.25, 0.5, 12.125: one to three digits each side */
		int frac_digits = 1 + (int)(next64(s) % 3);

		v = floor(unit(s) * 200 - 100);
		v += floor(unit(s) * pow(10, frac_digits)) /
		     pow(10, frac_digits);
		n = snprintf(buf, size, "%.*f", frac_digits, v);
	}
	return n > 0 ? (size_t)n : 0;
}

static int corpus_build(struct corpus *c, size_t target)
{
	uint64_t seed = 0xf10a7c5ULL;
	size_t cap = target / 8;
	size_t used = 0;
	char value[64];

	memset(c, 0, sizeof(*c));
	c->text = malloc(target + sizeof(value));
	c->offset = malloc(cap * sizeof(*c->offset));
	c->len = malloc(cap * sizeof(*c->len));
	if (c->text == NULL || c->offset == NULL || c->len == NULL)
		return -1;
	while (c->bytes < target && c->count < cap) {
		size_t n = make_value(&seed, value, sizeof(value));

		memcpy(c->text + used, value, n + 1);
		c->offset[c->count] = used;
		c->len[c->count] = n;
		c->count++;
		used += n + 1;
		c->bytes += n + 1;
	}
	return 0;
}

static void corpus_free(struct corpus *c)
{
	free(c->text);
	free(c->offset);
	free(c->len);
}

static uint32_t float_bits(float f)
{
	uint32_t b;

	memcpy(&b, &f, sizeof(b));
	return b;
}

/* both parsers agree on every value; prints the first disagreement */
static int verify(const struct corpus *c)
{
	for (size_t i = 0; i < c->count; i++) {
		const char *v = c->text + c->offset[i];
		char *end;
		float ours = 0.0f;
		float theirs = strtof(v, &end);
		int rc = util_parse_float32(v, c->len[i], &ours);

		if (rc != 0 || end != v + c->len[i] ||
		    float_bits(ours) != float_bits(theirs)) {
			fprintf(stderr,
				"bench-float: '%s': util_parse_float32 %d "
				"0x%08x, strtof 0x%08x\n",
				v, rc, (unsigned)float_bits(ours),
				(unsigned)float_bits(theirs));
			return -1;
		}
	}
	return 0;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* the best of RUNS passes over the corpus, in seconds */
static double time_ours(const struct corpus *c)
{
	double best = HUGE_VAL;

	for (int run = 0; run < RUNS; run++) {
		double t0 = now();
		uint32_t acc = 0;

		for (size_t i = 0; i < c->count; i++) {
			float f = 0.0f;

			acc += (uint32_t)util_parse_float32(
			    c->text + c->offset[i], c->len[i], &f);
			acc ^= float_bits(f);
		}
		t0 = now() - t0;
		best = t0 < best ? t0 : best;
		sink ^= acc;
	}
	return best;
}

static double time_strtof(const struct corpus *c)
{
	double best = HUGE_VAL;

	for (int run = 0; run < RUNS; run++) {
		double t0 = now();
		uint32_t acc = 0;

		for (size_t i = 0; i < c->count; i++)
			acc ^= float_bits(strtof(c->text + c->offset[i], NULL));
		t0 = now() - t0;
		best = t0 < best ? t0 : best;
		sink ^= acc;
	}
	return best;
}

static void report(const char *name, const struct corpus *c, double secs)
{
	printf("%-20s %8.1f MB/s %8.1f ns/value\n", name,
	       (double)c->bytes / secs / 1e6, secs * 1e9 / (double)c->count);
}

int main(int argc, char **argv)
{
	struct corpus c;
	double mb = argc > 1 ? atof(argv[1]) : 20.0;
	double ours;
	double theirs;

	if (mb <= 0 || mb > 4096) {
		fprintf(stderr, "usage: bench-float [MB, default 20]\n");
		return 2;
	}
	if (corpus_build(&c, (size_t)(mb * 1e6)) != 0) {
		fprintf(stderr, "bench-float: out of memory\n");
		corpus_free(&c);
		return 2;
	}
	printf("corpus: %zu values, %.1f MB (40%% %%.17g in [0,1), 30%% "
	       "%%.18e, 20%% integers, 10%% short decimals)\n",
	       c.count, (double)c.bytes / 1e6);
	if (verify(&c) != 0) {
		corpus_free(&c);
		return 1;
	}
	ours = time_ours(&c);
	theirs = time_strtof(&c);
	report("util_parse_float32", &c, ours);
	report("strtof", &c, theirs);
	printf("ratio: util_parse_float32 %.2fx as fast as strtof\n",
	       theirs / ours);
	corpus_free(&c);
	return 0;
}
