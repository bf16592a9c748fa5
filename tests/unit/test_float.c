/*
 * test_float: util_parse_float32 is strtof() (C locale, round to nearest)
 * bit for bit, only faster, and accepts exactly one plain decimal number.
 *
 * Fixed vectors: each is checked against strtof() and, for a set of them,
 * against float bits worked out by hand (exact rational arithmetic),
 * including ties that must go to even, the overflow threshold and
 * subnormals.  Then a deterministic random comparison over more than two
 * million inputs: random digit strings, "%.9g", "%.17g" and "%.18e" of
 * random floats and doubles, the exact decimal midpoints between adjacent
 * floats and numbers a hair either side of them, and random strings over
 * the number alphabet (accepted exactly when strtof() takes all of them).
 * Every input is handed over in a heap block of its exact length, with no
 * NUL, so that valgrind and ASan catch a read past the end.  Under
 * valgrind (S3PIPE_VALGRIND set, or detected) the random part is scaled
 * down.
 */
#include "config.h"

#include "util/float.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define HAVE_VALGRIND_H 1
#endif
#endif

static uint32_t float_bits(float f)
{
	uint32_t b;

	memcpy(&b, &f, sizeof(b));
	return b;
}

static float bits_float(uint32_t b)
{
	float f;

	memcpy(&f, &b, sizeof(f));
	return f;
}

/* what follows a number in a row: a separator, then more of the row */
static const char *const row_rest[] = {
    ",1234567890.12345e+07,-0.5\n",
    "\n9.876543210987654321,0\n",
    "\r\n-.5e-5,1,2,3,4,5,6,7,8,9\n",
    " ,0000000000000000000000\n",
};

/*
 * util_scan_float32 on text[0..len) as a field of a row, followed by the
 * rest of one (so that the 16-byte window of util/float.c sees text and
 * what follows, as in a conversion): true when it agrees with rc and v,
 * util_parse_float32's verdict on the text alone.
 */
static bool scan_in_row(const char *text, size_t len, int rc, float v)
{
	const char *rest = row_rest[len % 4];
	size_t n = len + strlen(rest);
	char *row = malloc(n);
	float got = 42.0f;
	float run_value = 42.0f;
	const char *run_stop = NULL;
	size_t used = 0;
	int scan_rc;
	bool same;

	assert_non_null(row);
	memcpy(row, text, len);
	memcpy(row + len, rest, n - len);
	scan_rc = util_scan_float32(row, n, &got, &used);
	if (rc == 0 || rc == ERANGE)
		same = scan_rc == rc && used == len &&
		       float_bits(got) == float_bits(v);
	else /* invalid alone: not a whole number in the row either */
		same = scan_rc != 0 || used != len;
	/* the field as the first of a run (one taken at most): taken only
	 * when it is a number in range, ends at its separator (or the CR
	 * of a CR LF), and is v
	 * (a text holding a separator is more than one field) */
	if (!memchr(text, ',', len) && !memchr(text, '\n', len) &&
	    !memchr(text, '\r', len) &&
	    util_scan_float32_fields(row, row + n, ',', &run_value, 1,
				     &run_stop) == 1 &&
	    (rc != 0 || run_stop != row + len ||
	     (*run_stop != ',' && *run_stop != '\n' &&
	      memcmp(run_stop, "\r\n", 2) != 0) ||
	     float_bits(run_value) != float_bits(v))) {
		print_error("'%.*s' as a run's field: %zu bytes, 0x%08x\n",
			    (int)len, text, (size_t)(run_stop - row),
			    (unsigned)float_bits(run_value));
		same = false;
	}
	free(row);
	if (!same)
		print_error("'%.*s' in a row: rc %d, %zu bytes, 0x%08x; alone "
			    "rc %d, 0x%08x\n",
			    (int)len, text, scan_rc, used,
			    (unsigned)float_bits(got), rc,
			    (unsigned)float_bits(v));
	return same;
}

/*
 * util_parse_float32 on an exact-length heap copy of text[0..len), and
 * scan_in_row(): its return, or -1 when the two disagree.
 */
static int parse_copy(const char *text, size_t len, float *out)
{
	char *copy = malloc(len > 0 ? len : 1);
	float v = 42.0f;
	int rc;

	assert_non_null(copy);
	memcpy(copy, text, len);
	rc = util_parse_float32(copy, len, &v);
	free(copy);
	if (len > 0 && !scan_in_row(text, len, rc, v))
		return -1;
	if (rc == 0 || rc == ERANGE || rc == EDOM)
		*out = v;
	return rc;
}

/* what strtof() says of a whole text: its return class and value */
static int strtof_whole(const char *text, float *out)
{
	char *end;
	int saved = errno;

	*out = strtof(text, &end);
	errno = saved;
	if (*text == '\0' || *end != '\0')
		return EINVAL;
	return isinf(*out) ? ERANGE : 0;
}

/* text parses, as strtof() does it, to bits */
static void check_bits(const char *text, uint32_t bits)
{
	float want;
	float got = 42.0f;
	int want_rc = strtof_whole(text, &want);
	int rc = parse_copy(text, strlen(text), &got);

	if (want_rc != rc || float_bits(want) != bits ||
	    float_bits(got) != bits)
		print_error("'%s': rc %d (strtof %d), bits 0x%08x (strtof "
			    "0x%08x, by hand 0x%08x)\n",
			    text, rc, want_rc, (unsigned)float_bits(got),
			    (unsigned)float_bits(want), (unsigned)bits);
	assert_int_equal(rc, want_rc);
	assert_int_equal(float_bits(want), bits);
	assert_int_equal(float_bits(got), bits);
}

/* text parses as strtof() does it */
static void check_strtof(const char *text)
{
	float want;
	float got = 42.0f;
	int want_rc = strtof_whole(text, &want);
	int rc = parse_copy(text, strlen(text), &got);

	if (want_rc != rc || float_bits(want) != float_bits(got))
		print_error("'%s': rc %d (strtof %d), 0x%08x (strtof 0x%08x)\n",
			    text, rc, want_rc, (unsigned)float_bits(got),
			    (unsigned)float_bits(want));
	assert_true(want_rc == 0 || want_rc == ERANGE);
	assert_int_equal(rc, want_rc);
	assert_int_equal(float_bits(got), float_bits(want));
}

static void check_einval(const char *text, size_t len)
{
	float got = 42.0f;

	assert_int_equal(parse_copy(text, len, &got), EINVAL);
	assert_true(got == 42.0f); /* untouched */
}

/* bits worked out with exact rational arithmetic, not with strtof() */
static void test_hand_checked(void **state)
{
	(void)state;
	check_bits("1", 0x3f800000);
	check_bits("0", 0x00000000);
	check_bits("-0", 0x80000000);
	check_bits("-3.25", 0xc0500000);
	check_bits("0.1", 0x3dcccccd);
	check_bits("12345", 0x4640e400);
	check_bits("0.8444218515250481", 0x3f582c08);
	check_bits("8.444218515250480647e-01", 0x3f582c08);
	check_bits("1.5e-3", 0x3ac49ba6);
	check_bits("000123.4500", 0x42f6e666);
	check_bits(".5", 0x3f000000);
	check_bits("5.", 0x40a00000);
	check_bits("1e+05", 0x47c35000);
	/* 2^24 + 1 and 2^24 + 3: ties, to the even neighbour */
	check_bits("16777217", 0x4b800000);
	check_bits("16777219", 0x4b800002);
	/* 1 + 2^-24, the midpoint above 1, and a hair either side */
	check_bits("1.000000059604644775390625", 0x3f800000);
	check_bits("1.000000059604644775390625000000001", 0x3f800001);
	check_bits("1.000000059604644775390624999", 0x3f800000);
	/* FLT_MAX; 2^128 - 2^103, the overflow threshold, is a tie */
	check_bits("3.4028235e38", 0x7f7fffff);
	check_bits("3.4028236e38", 0x7f800000);
	check_bits("340282356779733661637539395458142568447", 0x7f7fffff);
	check_bits("340282356779733661637539395458142568448", 0x7f800000);
	check_bits("-3.4028236e38", 0xff800000);
	/* FLT_MIN and subnormals: 2^-150 (about 7.006e-46) is a tie to 0 */
	check_bits("1.17549435e-38", 0x00800000);
	check_bits("1e-45", 0x00000001);
	check_bits("1.4e-45", 0x00000001);
	check_bits("7e-46", 0x00000000);
	check_bits("7.1e-46", 0x00000001);
	check_bits("-7e-46", 0x80000000);
}

static void test_against_strtof(void **state)
{
	static const char *const texts[] = {
	    "0.8444218515250481",
	    "8.444218515250480647e-01",
	    "1",
	    "-3.25",
	    "+2.5",
	    "1E5",
	    "1e-5",
	    "0.000",
	    "-0.0e10",
	    "0e999999999999999999999999",
	    "1e-999999999999999999999999",
	    "1e999999999999999999999999",
	    "-1e999999999999999999999999",
	    "0.3",
	    "3.14159265358979323846264338327950288",
	    "123456789012345678901234567890",
	    "1234567890123456789",
	    "12345678901234567890",
	    "18446744073709551615",
	    "18446744073709551616",
	    "9007199254740993",
	    "9007199254740992e-16",
	    "0.000000000000000000000000000000000000011754943",
	    "1.1754942e-38",
	    "1.1754943e-38",
	    "1.17549421e-38",
	    "1.40129846e-45",
	    "2.80259693e-45",
	    "7.006492321624085354618647916449580656e-46",
	    "7.006492321624085354618647916449580657e-46",
	    "1e38",
	    "1e39",
	    "9.99999999999999999999e38",
	    "3.40282346638528859811704183484516925440e+38",
	    "3.4028234663852886e38",
	    "1e-22",
	    "1e22",
	    "1e23",
	    "4.5e15",
	    "33554431",
	    "33554435",
	    "0.1e1",
	    "00000000000000000000000000000001.5",
	    "1.50000000000000000000000000000000000",
	    "0.00000000000000000000000000000000000000000001",
	};

	(void)state;
	for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
		check_strtof(texts[i]);
}

/* hundreds of digits: the heap copy in the fallback, and long zeros */
static void test_long_texts(void **state)
{
	char buf[2048];
	size_t n;

	(void)state;
	/* 1 and 800 zeros, e-800 */
	buf[0] = '1';
	memset(buf + 1, '0', 800);
	memcpy(buf + 801, "e-800", 6);
	check_bits(buf, 0x3f800000);
	/* 0.(800 zeros)15e801 */
	memcpy(buf, "0.", 2);
	memset(buf + 2, '0', 800);
	memcpy(buf + 802, "15e801", 7);
	check_bits(buf, 0x3fc00000);
	/* the midpoint above 1, padded with 600 zeros, then a 1 or not */
	n = strlen("1.000000059604644775390625");
	memcpy(buf, "1.000000059604644775390625", n);
	memset(buf + n, '0', 600);
	buf[n + 600] = '\0';
	check_bits(buf, 0x3f800000);
	memcpy(buf + n + 600, "1", 2);
	check_bits(buf, 0x3f800001);
	/* 2^-150 exactly (a tie, to 0), then one more digit */
	n = (size_t)snprintf(buf, sizeof(buf), "%.200e", ldexp(1.0, -150));
	check_strtof(buf);
	check_bits(buf, 0x00000000);
	buf[n - 5] = '1'; /* the last mantissa digit, before "e-46" */
	check_bits(buf, 0x00000001);
	/* 500 random-ish digits */
	for (size_t i = 0; i < 500; i++)
		buf[i] = (char)('0' + (i * 7 + i / 3) % 10);
	memcpy(buf + 500, "e-480", 6);
	check_strtof(buf);
}

static void test_specials(void **state)
{
	static const char *const nans[] = {"nan", "NaN", "NAN", "+nan"};
	static const char *const infs[] = {"inf", "INF", "Infinity",
					   "+infinity", "iNfInItY"};
	float got;

	(void)state;
	for (size_t i = 0; i < sizeof(nans) / sizeof(nans[0]); i++) {
		assert_int_equal(parse_copy(nans[i], strlen(nans[i]), &got),
				 EDOM);
		assert_true(isnan(got));
		assert_false(signbit(got));
	}
	assert_int_equal(parse_copy("-nan", 4, &got), EDOM);
	assert_true(isnan(got));
	assert_true(signbit(got));
	for (size_t i = 0; i < sizeof(infs) / sizeof(infs[0]); i++) {
		assert_int_equal(parse_copy(infs[i], strlen(infs[i]), &got),
				 EDOM);
		assert_true(isinf(got) && got > 0);
	}
	assert_int_equal(parse_copy("-Inf", 4, &got), EDOM);
	assert_true(isinf(got) && got < 0);
	assert_int_equal(parse_copy("-infinity", 9, &got), EDOM);
	assert_true(isinf(got) && got < 0);
}

static void test_rejects(void **state)
{
	static const char *const bad[] = {
	    "",		 "+",	"-",	 ".",	     "+.",    "e5",	"1e",
	    "1e+",	 "1e-", "1.2.3", "0x10",     "0X1p3", "1,5",	" 1",
	    "1 ",	 "--1", "+-1",	 "nan1",     "nan()", "nan(1)", "infin",
	    "infinityy", "in",	"1e5.",	 "1.e",	     ".e1",   "1d5",	"1f",
	    "1e5e5",	 "\t1", "1\n",	 "\xd9\xa1",
	};
	float got;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		check_einval(bad[i], strlen(bad[i]));
	/* a NUL inside the text is not the end of it */
	check_einval("1\0", 2);
	check_einval("\0", 1);
	/* NULL with length 0 */
	assert_int_equal(util_parse_float32(NULL, 0, &got), EINVAL);
}

/* only text[0..len) counts, whatever follows it */
static void test_length_bounds(void **state)
{
	float got;

	(void)state;
	assert_int_equal(util_parse_float32("1.5", 2, &got), 0);
	assert_true(got == 1.0f);
	assert_int_equal(util_parse_float32("12345678901234567", 9, &got), 0);
	assert_true(got == 123456789.0f);
	assert_int_equal(util_parse_float32("2e10", 1, &got), 0);
	assert_true(got == 2.0f);
	assert_int_equal(util_parse_float32("2e10", 2, &got), EINVAL);
	assert_int_equal(util_parse_float32("infinity", 3, &got), EDOM);
}

/* one util_scan_float32_fields() call on row (NUL-terminated, padded
 * by the caller as it likes): its count, and where it stopped */
static size_t run_of(const char *row, size_t max, float *out,
		     size_t *stopped_at)
{
	const char *stop = NULL;
	size_t k = util_scan_float32_fields(row, row + strlen(row), ',', out,
					    max, &stop);

	*stopped_at = (size_t)(stop - row);
	return k;
}

/* a run of fields: where it ends and why, and its values */
static void test_field_runs(void **state)
{
	/* 16 bytes past the fields, as a buffer's rest of a row would be */
#define PAD "                "
	float v[8];
	size_t at;

	(void)state;
	if (run_of("1,2\n" PAD, 8, v, &at) == 0) {
		print_message(
		    "no fast path in this build: runs take nothing\n");
		skip();
	}
	/* a whole row, taken to its LF, then no further */
	assert_int_equal(run_of("1.5,2,-3e2,0,4\n5,6" PAD, 8, v, &at), 5);
	assert_int_equal(at, 14);
	assert_true(v[0] == 1.5f && v[1] == 2.0f && v[2] == -300.0f &&
		    v[3] == 0.0f && v[4] == 4.0f);
	assert_false(signbit(v[3]));
	assert_int_equal(run_of("-0,7" PAD, 1, v, &at), 1);
	assert_true(v[0] == 0.0f && signbit(v[0]));
	/* at most max */
	assert_int_equal(run_of("1,2,3,4\n" PAD, 2, v, &at), 2);
	assert_int_equal(at, 3);
	/* stopped before a field it does not take: the separator is left */
	assert_int_equal(run_of("1,2, 3\n" PAD, 8, v, &at), 2);
	assert_int_equal(at, 3);
	assert_int_equal(run_of("1,,3\n" PAD, 8, v, &at), 1);
	assert_int_equal(at, 1);
	assert_int_equal(run_of("1,\"2\",3\n" PAD, 8, v, &at), 1);
	/* a CR LF ends a row as a LF does (the stop at the CR); a lone CR
	 * is not taken */
	assert_int_equal(run_of("1,2\r\n3" PAD, 8, v, &at), 2);
	assert_int_equal(at, 3);
	assert_true(v[1] == 2.0f);
	assert_int_equal(run_of("1,2\r,3\n" PAD, 8, v, &at), 1);
	assert_int_equal(at, 1);
	assert_int_equal(run_of("1,2\r" PAD, 8, v, &at), 1);
	assert_int_equal(at, 1);
	assert_int_equal(run_of("1,2x,3\n" PAD, 8, v, &at), 1);
	assert_int_equal(run_of("1,1e39,3\n" PAD, 8, v, &at), 1);
	assert_int_equal(run_of("1,nan,3\n" PAD, 8, v, &at), 1);
	assert_int_equal(
	    run_of("1,1234567890123456789012345,3\n" PAD, 8, v, &at), 1);
	/* nothing taken: stop is the text */
	assert_int_equal(run_of(" 1,2\n" PAD, 8, v, &at), 0);
	assert_int_equal(at, 0);
	assert_int_equal(run_of("" PAD, 8, v, &at), 0);
	assert_int_equal(run_of("1,2", 0, v, &at), 0);
	/* a field starting in the last 15 bytes is left to the byte-wise
	 * parser */
	assert_int_equal(run_of("1,2\n", 8, v, &at), 0);
	assert_int_equal(run_of("1,2,3,4,5,6,7,8,9,10", 8, v, &at), 3);
	assert_int_equal(at, 5);
	/* %.18e's 25 characters */
	assert_int_equal(run_of("1.234567890123456789e+02,-9.999999999999999"
				"999e-03\n" PAD,
				8, v, &at),
			 2);
	assert_true(v[0] == strtof("1.234567890123456789e+02", NULL));
	assert_true(v[1] == strtof("-9.999999999999999999e-03", NULL));
	/* a field with no separator for more than 64 bytes (the run finds
	 * fields' ends 64 bytes at a time) */
	assert_int_equal(run_of("1,2222222222222222222222222222222222222222"
				"22222222222222222222222222222x,3\n" PAD,
				8, v, &at),
			 1);
	assert_int_equal(at, 1);
	/* a separator as the text's last byte, and no text: nothing is read
	 * past the end (a block of the exact length, for valgrind and ASan) */
	{
		static const char text[] = "1,2.5000000000000,";
		const size_t len = sizeof(text) - 1;
		char *exact = malloc(len);
		const char *stop = NULL;

		assert_non_null(exact);
		memcpy(exact, text, len);
		assert_int_equal(util_scan_float32_fields(exact, exact + len,
							  ',', v, 8, &stop),
				 2);
		assert_ptr_equal(stop, exact + len - 1);
		assert_true(v[1] == 2.5f);
		assert_int_equal(util_scan_float32_fields(exact + len,
							  exact + len, ',', v,
							  8, &stop),
				 0);
		assert_ptr_equal(stop, exact + len);
		free(exact);
	}
#undef PAD
}

/*
 * A long row, its fields' ends in many 64-byte blocks: one call takes
 * every field, each to util_parse_float32()'s bits; with a bad field at
 * any place, the fields before it and no more, the stop at its separator.
 */
static void test_long_runs(void **state)
{
	static const char *const forms[] = {
	    "0",     "-1.5",	     "3.716315410107699790e+02",
	    "238",   "-0.000856241", "2.50128e-05",
	    "+7.25", "-893.777",     "-9.999999999999999999e-03",
	    "1e-3",  "0.5",	     "12345678.25"};
	enum { FIELDS = 160 };
	char row[FIELDS * 32 + 32];
	size_t start[FIELDS + 1];
	float v[FIELDS];
	size_t at;

	(void)state;
	for (size_t bad = 0; bad <= FIELDS; bad++) {
		size_t len = 0;
		size_t k;

		for (size_t i = 0; i < FIELDS; i++) {
			const char *f = i == bad ? "1x" : forms[(i * 7) % 12];

			start[i] = len;
			len += (size_t)sprintf(row + len, "%s%c", f,
					       i + 1 < FIELDS ? ',' : '\n');
		}
		start[FIELDS] = len;
		memset(row + len, ' ', 16);
		row[len + 16] = '\0';
		k = run_of(row, FIELDS, v, &at);
		if (k == 0 && bad > 0) {
			print_message("no fast path in this build\n");
			skip();
		}
		assert_int_equal(k, bad < FIELDS ? bad : FIELDS);
		if (k > 0)
			assert_int_equal(at, start[k] - 1);
		for (size_t i = 0; i < k; i++) {
			float want;

			assert_int_equal(
			    util_parse_float32(row + start[i],
					       start[i + 1] - 1 - start[i],
					       &want),
			    0);
			assert_memory_equal(&v[i], &want, sizeof(want));
		}
	}
}

/* errno is not touched, not even where strtof() does the work */
static void test_errno_kept(void **state)
{
	float got;

	(void)state;
	errno = 12345;
	assert_int_equal(util_parse_float32("1e-45", 5, &got), 0);
	assert_int_equal(util_parse_float32("16777217", 8, &got), 0);
	assert_int_equal(util_parse_float32("1e40", 4, &got), ERANGE);
	assert_int_equal(errno, 12345);
	errno = 0;
}

/* ---- the random comparison ---- */

struct rng {
	uint64_t s;
};

/* splitmix64 */
static uint64_t next64(struct rng *r)
{
	uint64_t z = (r->s += 0x9E3779B97F4A7C15ULL);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

/* uniform in [0, n) (n small: the bias does not matter here) */
static unsigned below(struct rng *r, unsigned n)
{
	return (unsigned)(next64(r) % n);
}

struct tally {
	unsigned long count;
	unsigned long failures;
};

/* one random input: util_parse_float32 must agree with strtof() */
static void compare(struct tally *t, const char *text)
{
	float want = 0.0f;
	float got = 0.0f;
	int want_rc = strtof_whole(text, &want);
	int rc = parse_copy(text, strlen(text), &got);

	t->count++;
	if (rc == want_rc &&
	    (rc == EINVAL || float_bits(got) == float_bits(want)))
		return;
	if (t->failures < 20)
		print_error("mismatch: '%s': rc %d (strtof %d), 0x%08x "
			    "(strtof 0x%08x)\n",
			    text, rc, want_rc, (unsigned)float_bits(got),
			    (unsigned)float_bits(want));
	t->failures++;
}

/* a random finite float, any bits */
static float random_float(struct rng *r)
{
	float f;

	do {
		f = bits_float((uint32_t)next64(r));
	} while (!isfinite(f));
	return f;
}

/* a random double, its binary exponent around float's range */
static double random_double(struct rng *r)
{
	double d = ldexp((double)(next64(r) >> 11) / 9007199254740992.0,
			 (int)below(r, 300) - 160);

	return next64(r) & 1 ? -d : d;
}

/*
 * 1 to 30 significant digits, sometimes leading zeros, a '.' anywhere or
 * none, an exponent that takes the value anywhere from below the
 * subnormals to above the overflow threshold, now and then much further.
 */
static void random_digits(struct rng *r, char *buf, size_t size)
{
	unsigned nsig = 1 + below(r, 30);
	unsigned zeros = below(r, 4) == 0 ? below(r, 5) : 0;
	unsigned ndig = zeros + nsig;
	unsigned point = below(r, ndig + 2); /* == ndig + 1: no point */
	unsigned exp_style = below(r, 4);    /* none, e-05, e-5, e-5 */
	int scale;
	size_t w = 0;

	if (below(r, 2))
		buf[w++] = below(r, 4) == 0 ? '+' : '-';
	for (unsigned i = 0; i < ndig; i++) {
		if (i == point)
			buf[w++] = '.';
		if (i < zeros)
			buf[w++] = '0';
		else if (i == zeros || below(r, 8) != 0)
			buf[w++] = (char)('0' + (i == zeros ? 1 + below(r, 9)
							    : below(r, 10)));
		else
			buf[w++] = below(r, 2) ? '0' : '9'; /* runs */
	}
	if (point == ndig)
		buf[w++] = '.';
	/* decimal exponent of the value: -55 to +45, or far out */
	scale = (int)below(r, 101) - 55;
	if (below(r, 50) == 0)
		scale = (int)below(r, 2001) - 1000;
	/* the written exponent making it so */
	scale -= (int)(point <= ndig ? point : ndig) - (int)zeros;
	if (exp_style == 0) { /* as many digits as there are, no exponent */
		buf[w] = '\0';
		return;
	}
	w += (size_t)snprintf(buf + w, size - w, "%c%s%d",
			      below(r, 2) ? 'e' : 'E',
			      scale >= 0 && below(r, 2) ? "+" : "", scale);
	if (exp_style == 1 && w + 1 < size) {
		/* leading zeros in the exponent: e-05 */
		char *e = strpbrk(buf, "eE");
		size_t at =
		    (size_t)(e - buf) + 1 + (e[1] == '+' || e[1] == '-');

		memmove(buf + at + 1, buf + at, w - at + 1);
		buf[at] = '0';
	}
}

/*
 * The exact decimal value of the midpoint above float f, and numbers a
 * hair either side: the last mantissa digit (beyond the significant ones)
 * set to 1, or the whole decremented by that unit; and the midpoint
 * rounded to 17 to 26 digits.
 */
static void midpoints(struct rng *r, struct tally *t)
{
	char buf[256];
	float f = fabsf(random_float(r));
	double mid;
	char *e;
	char *p;

	if (below(r, 4) == 0) /* subnormals and near FLT_MIN */
		f = bits_float((uint32_t)below(r, 0x01000000));
	if (f == FLT_MAX)
		f = nextafterf(f, 0.0f);
	mid = ((double)f + (double)nextafterf(f, INFINITY)) / 2;
	snprintf(buf, sizeof(buf), "%.*e", 17 + (int)below(r, 10), mid);
	compare(t, buf);
	snprintf(buf, sizeof(buf), "%.130e", mid); /* exact */
	compare(t, buf);
	e = strchr(buf, 'e');
	e[-1] = '1';
	compare(t, buf);
	e[-1] = '0';
	for (p = e - 1; *p == '0' || *p == '.'; p--) {
		if (*p == '0')
			*p = '9';
	}
	(*p)--;
	compare(t, buf);
}

static bool under_valgrind(void)
{
	const char *preload = getenv("LD_PRELOAD");

	if (getenv("S3PIPE_VALGRIND") != NULL)
		return true;
#ifdef HAVE_VALGRIND_H
	if (RUNNING_ON_VALGRIND)
		return true;
#endif
	return preload != NULL && strstr(preload, "vgpreload") != NULL;
}

static void test_random(void **state)
{
	static const char alphabet[] = "0123456789.eE+-";
	struct rng r = {0x5eed0f10a7ULL};
	struct tally t = {0, 0};
	unsigned long rounds = 110000; /* 20 inputs each */
	char buf[256];

	(void)state;
	if (under_valgrind())
		rounds /= 16;
	else if (getenv("S3PIPE_SANITIZERS") != NULL)
		rounds /= 4;
	for (unsigned long i = 0; i < rounds; i++) {
		for (int k = 0; k < 8; k++) {
			random_digits(&r, buf, sizeof(buf));
			compare(&t, buf);
		}
		snprintf(buf, sizeof(buf), "%.9g", (double)random_float(&r));
		compare(&t, buf);
		snprintf(buf, sizeof(buf), "%.9g", random_double(&r));
		compare(&t, buf);
		snprintf(buf, sizeof(buf), "%.17g",
			 (double)(next64(&r) >> 11) / 9007199254740992.0);
		compare(&t, buf);
		snprintf(buf, sizeof(buf), "%.17g", random_double(&r));
		compare(&t, buf);
		snprintf(buf, sizeof(buf), "%.18e",
			 (double)(next64(&r) >> 11) / 9007199254740992.0);
		compare(&t, buf);
		snprintf(buf, sizeof(buf), "%.18e", random_double(&r));
		compare(&t, buf);
		midpoints(&r, &t);
		/* short strings over the number alphabet, valid or not */
		for (int k = 0; k < 2; k++) {
			unsigned n = below(&r, 9);

			for (unsigned j = 0; j < n; j++)
				buf[j] =
				    alphabet[below(&r, sizeof(alphabet) - 1)];
			buf[n] = '\0';
			compare(&t, buf);
		}
	}
	print_message("%lu random inputs, %lu mismatches\n", t.count,
		      t.failures);
	assert_true(t.count >= rounds * 20);
	assert_int_equal(t.failures, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_hand_checked),
	    cmocka_unit_test(test_against_strtof),
	    cmocka_unit_test(test_long_texts),
	    cmocka_unit_test(test_specials),
	    cmocka_unit_test(test_rejects),
	    cmocka_unit_test(test_length_bounds),
	    cmocka_unit_test(test_errno_kept),
	    cmocka_unit_test(test_field_runs),
	    cmocka_unit_test(test_long_runs),
	    cmocka_unit_test(test_random),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
