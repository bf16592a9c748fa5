/*
 * util float: decimal text to the nearest float32 (util/float.h).
 *
 * The digits go into a uint64_t m, eight at a time where the text allows,
 * with a decimal exponent e: the value is x = m * 10^e.  When there are
 * more than 19 significant digits, m keeps the first 19 and x lies in
 * [m * 10^e, (m + 1) * 10^e).
 *
 * x is approximated by doubles: d1 = m * 10^e, with m and 10^e
 * converted to double (10^e from a table, 10^-k rounded too: multiplying
 * by it is much faster than dividing by 10^k), and when digits were
 * dropped d2 the same from m + 1.  A double carries 29 more bits than a
 * float, so d1 is nearly always far enough from the points where rounding
 * to float changes (the midpoints between adjacent floats) for (float)d1
 * to be the float nearest x.  That is checked, not hoped for:
 *
 * - Exact case: nothing dropped, m <= 2^53 and 0 <= e <= 22.  m and 10^e
 *   are exact doubles, so d1 is x correctly rounded (one IEEE operation).
 *   Rounding to double is monotonic and every float midpoint is itself a
 *   double, so x and d1 lie on the same side of every midpoint, unless d1
 *   is one: only then is the answer in doubt.
 * - Otherwise d1 and d2 carry at most three roundings each (m, 10^e, the
 *   product), so each is within 3.001 * 2^-53 * d < 3.001
 *   ulp(d) of its exact value.  The bit patterns [d1 - 8, d2 + 8] then
 *   hold x (8 patterns are at least 4 ulp, even where the interval
 *   crosses a power of two, below which ulps halve).  If they hold no
 *   float midpoint, every number there, x included, rounds as d1 does.
 *
 * For positive doubles from FLT_MIN up, floats are the bit patterns with
 * the low 29 bits zero and midpoints those with the low 29 bits 2^28, so
 * "no midpoint in [lo, hi]" is (lo - 1 + 2^28) >> 29 == (hi + 2^28) >> 29.
 * Past FLT_MAX this still holds: the conversion gives inf for all of the
 * interval or for none of it.  Below FLT_MIN (subnormal results) the float
 * spacing no longer follows the double's, so that range goes to strtof(),
 * as do exact midpoints and intervals holding one (at random, about one
 * input in 10^7).  Values surely below 2^-150 (0) or surely at least 1e39
 * (inf) are decided without it.
 *
 * Reading the text costs as much as the arithmetic, so the short numbers
 * CSV files are made of (digits and point within 15 bytes, or a fraction
 * running on to 19 digits in all as "%.18e" writes them; an exponent of
 * up to three digits)
 * take a path with no branch on how many digits there are: one 16-byte
 * SSE2 load finds the digits and the point, and the digits are valued as
 * one 16-digit number (window_digits, scan_short).  Anything else, and
 * anything the doubles leave in doubt, goes the byte-wise way below.  A
 * CSV row's plain numbers are read a run at a time
 * (util_scan_float32_fields), that path inlined into the run's loop; the
 * run finds its fields' ends from a bitmap of the separators, so that
 * the next number's start never waits on this one's digits and the CPU
 * works on several numbers at once.  The sign is set by a bit, not a
 * branch: CSV columns mix signs at random.
 *
 * strtof() gets a rewritten copy, "[-]DIGITSeEXP" with no decimal point,
 * so that the locale's decimal point does not matter: on the stack, on the
 * heap only for texts of more than about a hundred digits.  All this needs
 * doubles evaluated as IEEE doubles (FLT_EVAL_METHOD 0 or 1, as with
 * SSE2); elsewhere every number goes to strtof().
 */
#include "config.h"

#include "util/float.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(FLT_EVAL_METHOD) &&                                                \
    (FLT_EVAL_METHOD == 0 || FLT_EVAL_METHOD == 1) && DBL_MANT_DIG == 53 &&    \
    FLT_MANT_DIG == 24
#define FAST_PATH 1
#else
#define FAST_PATH 0
#endif

/* the short numbers' window (window_digits): SSE2, little-endian */
#if FAST_PATH && defined(__SSE2__) && defined(__BYTE_ORDER__) &&               \
    __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ && defined(__SIZEOF_INT128__)
#define WINDOW_PATH 1
#define WINDOW	    16
#include <emmintrin.h>
#else
#define WINDOW_PATH 0
#endif

/* more digits than this do not fit a uint64_t */
#define MAX_DIGITS 19
/* the written exponent saturates here: no text is long enough to matter */
#define EXP_SATURATE 100000000000000000LL

/* a number as written, found by util_parse_float32() */
struct decimal {
	bool neg;
	const char *int_digits; /* nint digits before the '.' */
	size_t nint;
	const char *frac_digits; /* nfrac digits after it */
	size_t nfrac;
	int64_t exp; /* the written exponent, saturated at +-EXP_SATURATE */
};

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
/* '0' in every byte */
#define ZERO_BYTES 0x3030303030303030ULL

/* 10^n for n = 0..8 */
static const uint64_t pow10_small[] = {
    1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000,
};

/*
 * The value of the eight digits in x, byte i holding digit i (0..9), the
 * first the most significant: adding 10 times each byte to the next one's
 * gives the two-digit values in the even bytes, then the four-digit ones
 * in the even 16-bit lanes, then the eight-digit one; no lane overflows.
 * Leading zero bytes are leading zeros.
 */
static uint64_t eight_digit_value(uint64_t x)
{
	x = (x * 10 + (x >> 8)) & 0x00FF00FF00FF00FFULL;
	x = (x * 100 + (x >> 16)) & 0x0000FFFF0000FFFFULL;
	return (x * 10000 + (x >> 32)) & 0xFFFFFFFFULL;
}

#endif

/*
 * Reads the digits from p on into *m (wrapping past 19); returns the end.
 * Little-endian, eight bytes at a time while eight are left: x is the
 * bytes XOR '0', so that a digit byte becomes 0..9; any other byte has a
 * bit set in its high nibble, in x or in its low nibble plus 6 (which
 * reaches 16 from 10 on, and carries into no other byte).  The lowest such
 * byte ends the run: its index n is how many digits lead, and shifting x
 * left by 8 * (8 - n) bits keeps those, as the last of eight with leading
 * zeros.  No branch depends on the number of digits, only on whether all
 * eight were.  The last few bytes (and everything elsewhere) one by one.
 */
static const char *scan_digits(const char *p, const char *end, uint64_t *m)
{
	uint64_t v = *m;

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	while (end - p >= 8) {
		uint64_t x;
		uint64_t other;
		unsigned n;

		memcpy(&x, p, 8);
		x ^= ZERO_BYTES;
		other = (x | ((x & 0x0F0F0F0F0F0F0F0FULL) +
			      0x0606060606060606ULL)) &
			0xF0F0F0F0F0F0F0F0ULL;
		if (other == 0) {
			v = v * 100000000 + eight_digit_value(x);
			p += 8;
			continue;
		}
		n = (unsigned)__builtin_ctzll(other) >> 3;
		if (n > 0) {
			v = v * pow10_small[n] +
			    eight_digit_value(x << (64 - 8 * n));
			p += n;
		}
		*m = v;
		return p;
	}
#endif
	while (p < end && is_digit(*p)) {
		v = v * 10 + (uint64_t)(*p - '0');
		p++;
	}
	*m = v;
	return p;
}

/* The digit at position i of the number's digits, the '.' left out. */
static char digit_at(const struct decimal *dec, size_t i)
{
	if (i < dec->nint)
		return dec->int_digits[i];
	return dec->frac_digits[i - dec->nint];
}

/*
 * More than MAX_DIGITS digits: the first MAX_DIGITS significant ones,
 * *e10 made their exponent, *dropped set if a nonzero digit follows.
 * 0 if all digits are zeros.
 */
static uint64_t leading_digits(const struct decimal *dec, int64_t *e10,
			       bool *dropped)
{
	size_t ndig = dec->nint + dec->nfrac;
	size_t i = 0;
	size_t stop;
	uint64_t m = 0;

	while (i < ndig && digit_at(dec, i) == '0')
		i++;
	stop = ndig - i > MAX_DIGITS ? i + MAX_DIGITS : ndig;
	for (; i < stop; i++)
		m = m * 10 + (uint64_t)(digit_at(dec, i) - '0');
	*e10 += (int64_t)(ndig - stop);
	for (; i < ndig; i++) {
		if (digit_at(dec, i) != '0') {
			*dropped = true;
			break;
		}
	}
	return m;
}

/* Writes v in decimal at p (room for 20 characters); returns the count. */
static size_t put_int(char *p, int64_t v)
{
	char tmp[20];
	uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
	size_t n = 0;
	size_t w = 0;

	do {
		tmp[n++] = (char)('0' + u % 10);
		u /= 10;
	} while (u != 0);
	if (v < 0)
		p[w++] = '-';
	while (n > 0)
		p[w++] = tmp[--n];
	return w;
}

/*
 * The hard cases: strtof() on "[-]DIGITSeEXP", the significant digits
 * only (there is a nonzero one).  errno is left as it was.
 */
static int fallback(const struct decimal *dec, float *out)
{
	char stack[128];
	char *buf = stack;
	size_t ndig = dec->nint + dec->nfrac;
	size_t first = 0;
	size_t last = ndig - 1;
	size_t need;
	size_t w = 0;
	int64_t e;
	int saved_errno = errno;
	float f;

	while (digit_at(dec, first) == '0')
		first++;
	while (digit_at(dec, last) == '0')
		last--;
	e = dec->exp - (int64_t)dec->nfrac + (int64_t)(ndig - 1 - last);
	/* sign, digits, 'e', exponent (at most 20 characters), NUL */
	need = 1 + (last - first + 1) + 1 + 20 + 1;
	if (need > sizeof(stack)) {
		buf = malloc(need);
		if (buf == NULL)
			return ENOMEM;
	}
	if (dec->neg)
		buf[w++] = '-';
	for (size_t i = first; i <= last; i++)
		buf[w++] = digit_at(dec, i);
	buf[w++] = 'e';
	w += put_int(buf + w, e);
	buf[w] = '\0';
	f = strtof(buf, NULL);
	errno = saved_errno;
	if (buf != stack)
		free(buf);
	*out = f;
	return isinf(f) ? ERANGE : 0;
}

#if FAST_PATH
/* 10^k, correctly rounded (exact up to 10^22) */
static const double pow10_table[] = {
    1e0,  1e1,	1e2,  1e3,  1e4,  1e5,	1e6,  1e7,  1e8,  1e9,	1e10,
    1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21,
    1e22, 1e23, 1e24, 1e25, 1e26, 1e27, 1e28, 1e29, 1e30, 1e31, 1e32,
    1e33, 1e34, 1e35, 1e36, 1e37, 1e38, 1e39, 1e40, 1e41, 1e42, 1e43,
    1e44, 1e45, 1e46, 1e47, 1e48, 1e49, 1e50, 1e51, 1e52, 1e53, 1e54,
    1e55, 1e56, 1e57, 1e58, 1e59, 1e60, 1e61, 1e62, 1e63, 1e64,
};

/* the bit pattern of the double 2^-126 (FLT_MIN) */
#define FLT_MIN_BITS 0x3810000000000000ULL
/* a float midpoint's low 29 bits, as a double's */
#define MIDPOINT_BITS (1ULL << 28)

/* 10^-k, correctly rounded (none exact): k = 1..64 */
static const double pow10_neg_table[] = {
    0,	   1e-1,  1e-2,	 1e-3,	1e-4,  1e-5,  1e-6,  1e-7,  1e-8,  1e-9,  1e-10,
    1e-11, 1e-12, 1e-13, 1e-14, 1e-15, 1e-16, 1e-17, 1e-18, 1e-19, 1e-20, 1e-21,
    1e-22, 1e-23, 1e-24, 1e-25, 1e-26, 1e-27, 1e-28, 1e-29, 1e-30, 1e-31, 1e-32,
    1e-33, 1e-34, 1e-35, 1e-36, 1e-37, 1e-38, 1e-39, 1e-40, 1e-41, 1e-42, 1e-43,
    1e-44, 1e-45, 1e-46, 1e-47, 1e-48, 1e-49, 1e-50, 1e-51, 1e-52, 1e-53, 1e-54,
    1e-55, 1e-56, 1e-57, 1e-58, 1e-59, 1e-60, 1e-61, 1e-62, 1e-63, 1e-64,
};

/* m * 10^e10 in double arithmetic, by multiplications only (a division
 * would sit on the critical path); -64 <= e10 <= 38 */
static double scale(uint64_t m, int64_t e10)
{
	double d = (double)m;

	if (e10 >= 0)
		return d * pow10_table[e10];
	return d * pow10_neg_table[-e10];
}

static uint64_t double_bits(double d)
{
	uint64_t b;

	memcpy(&b, &d, sizeof(b));
	return b;
}

/* f with its sign bit set when neg: no branch on a sign that CSV columns
 * mix at random */
static inline float with_sign(float f, bool neg)
{
	uint32_t b;

	memcpy(&b, &f, sizeof(b));
	b |= (uint32_t)neg << 31;
	memcpy(&f, &b, sizeof(f));
	return f;
}

/*
 * x = m * 10^e10 (in [m, m + 1) * 10^e10 when digits were dropped) by
 * doubles, as the top of this file says: true with *out and *rc set
 * when no float midpoint is in doubt, false when it may be.  m != 0 and
 * -64 <= e10 <= 38.
 */
static inline bool double_convert(uint64_t m, int64_t e10, bool dropped,
				  bool neg, float *out, int *rc)
{
	double d = scale(m, e10);
	uint64_t lo = double_bits(d);
	uint64_t hi = lo;
	float f;

	if (dropped)
		hi = double_bits(scale(m + 1, e10));
	if (dropped || m > (1ULL << 53) || e10 < 0 || e10 > 22) {
		lo -= 8;
		hi += 8;
	}
	if (lo < FLT_MIN_BITS ||
	    (lo - 1 + MIDPOINT_BITS) >> 29 != (hi + MIDPOINT_BITS) >> 29)
		return false;
	f = (float)d;
	*out = with_sign(f, neg);
	*rc = isinf(f) ? ERANGE : 0;
	return true;
}
#endif

/* m the digits read (wrapping past MAX_DIGITS) */
static int convert(const struct decimal *dec, uint64_t m, float *out)
{
	int64_t e10 = dec->exp - (int64_t)dec->nfrac;
	bool dropped = false;

	if (dec->nint + dec->nfrac > MAX_DIGITS)
		m = leading_digits(dec, &e10, &dropped);
	if (m == 0) {
		*out = dec->neg ? -0.0f : 0.0f;
		return 0;
	}
	if (e10 > 38) { /* x >= 10^39 */
		*out = dec->neg ? -INFINITY : INFINITY;
		return ERANGE;
	}
	if (e10 < -64) { /* x < 10^19 * 10^-65 < 2^-150 */
		*out = dec->neg ? -0.0f : 0.0f;
		return 0;
	}
#if FAST_PATH
	{
		int rc;

		if (double_convert(m, e10, dropped, dec->neg, out, &rc))
			return rc;
	}
#endif
	return fallback(dec, out);
}

/* word is lower case, n characters long */
static bool equal_nocase(const char *p, size_t n, const char *word)
{
	for (size_t i = 0; i < n; i++) {
		if ((p[i] | 0x20) != word[i])
			return false;
	}
	return true;
}

/* no digits: nan, inf, infinity or nothing valid */
static int parse_special(const char *text, size_t len, float *out)
{
	bool neg = false;

	if (text[0] == '+' || text[0] == '-') {
		neg = text[0] == '-';
		text++;
		len--;
	}
	if (len == 3 && equal_nocase(text, 3, "nan")) {
		*out = neg ? -NAN : NAN;
		return EDOM;
	}
	if ((len == 3 && equal_nocase(text, 3, "inf")) ||
	    (len == 8 && equal_nocase(text, 8, "infinity"))) {
		*out = neg ? -INFINITY : INFINITY;
		return EDOM;
	}
	return EINVAL;
}

#if WINDOW_PATH
/* 16 bytes of ones then 16 of zeros: leading_bytes() loads from it */
static const unsigned char ones_then_zeros[2 * WINDOW] = {
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
};

/* a vector whose first k bytes are all ones and the rest zero, k <= 16 */
static inline __m128i leading_bytes(unsigned k)
{
	return _mm_loadu_si128(
	    (const __m128i *)(const void *)(ones_then_zeros + WINDOW - k));
}

/*
 * The value of the 16 digits in v (byte i digit i, 0..9, the first the
 * most significant), by multiply-adds of neighbouring lanes: two-digit
 * values in 32-bit lanes, packed to 16 bits, four-digit ones, packed,
 * then the two eight-digit halves, which the last step joins.
 */
static inline uint64_t sixteen_digit_value(__m128i v)
{
	const __m128i zero = _mm_setzero_si128();
	__m128i x;
	uint64_t halves;

	x = _mm_packs_epi32(_mm_madd_epi16(_mm_unpacklo_epi8(v, zero),
					   _mm_set1_epi32(0x0001000a)),
			    _mm_madd_epi16(_mm_unpackhi_epi8(v, zero),
					   _mm_set1_epi32(0x0001000a)));
	x = _mm_madd_epi16(x, _mm_set1_epi32(0x00010064));
	x = _mm_madd_epi16(_mm_packs_epi32(x, x), _mm_set1_epi32(0x00012710));
	halves = (uint64_t)_mm_cvtsi128_si64(x);
	return (halves & 0xFFFFFFFFULL) * 100000000 + (halves >> 32);
}

/*
 * The common short number, its digits and point read from one 16-byte
 * window at p with SSE2: bit i of other is set when byte i is not a
 * digit (bit 16 stands for the window's end), so the integer digits run
 * to its lowest set bit and, past a '.', the fraction's to the next.
 * The digits are then gathered in the vector (those of the fraction
 * moved down a byte, over the point), the bytes past them cleared, and
 * the 16 bytes valued as 16 digits (sixteen_digit_value): that is the number's
 * digits followed by 16 - (their count) zeros, so the exponent of the last
 * of the 16 is nint - 16 however many digits the fraction has.  Nothing
 * branches on how many digits there are.  Returns false, having set
 * nothing, when the number has no digit or does not end inside the
 * window: the byte-wise scan reads it then.
 */
static inline __attribute__((always_inline)) bool
window_digits(const char *p, const char *end, uint64_t *m, int64_t *e10,
	      const char **after)
{
	__m128i digits;
	__m128i below;
	unsigned other;
	unsigned nint;
	unsigned point;
	unsigned nfrac;
	unsigned stop;

	if (end - p < WINDOW)
		return false;
	digits = _mm_sub_epi8(_mm_loadu_si128((const __m128i *)(const void *)p),
			      _mm_set1_epi8('0'));
	/* byte - '0', as unsigned, above 9: compared signed, offset by 128 */
	other = (unsigned)_mm_movemask_epi8(
		    _mm_cmpgt_epi8(_mm_xor_si128(digits, _mm_set1_epi8(-128)),
				   _mm_set1_epi8(9 - 128))) |
		1u << WINDOW;
	nint = (unsigned)__builtin_ctz(other);
	if (nint >= WINDOW)
		return false;
	/* no branch on whether there is a point (1 or 0): columns mix both */
	point = p[nint] == '.';
	nfrac = (unsigned)__builtin_ctz(other >> (nint + 1)) & (0u - point);
	stop = nint + point + nfrac;
	if (nint + nfrac == 0 || (stop >= WINDOW && !point))
		return false;
	below = leading_bytes(nint);
	digits =
	    _mm_or_si128(_mm_and_si128(below, digits),
			 _mm_andnot_si128(below, _mm_srli_si128(digits, 1)));
	digits = _mm_and_si128(digits, leading_bytes(nint + nfrac));
	*m = sixteen_digit_value(digits);
	*e10 = (int64_t)nint - WINDOW;
	if (stop >= WINDOW) {
		/*
		 * The fraction goes on past the window (as "%.18e" writes
		 * 19 digits): *m is its first 15 digits and a zero; up to
		 * four more keep the whole within MAX_DIGITS.
		 */
		const char *more = p + WINDOW;
		uint64_t rest = 0;
		const char *stop_at = scan_digits(more, end, &rest);
		size_t k = (size_t)(stop_at - more);

		if (k > MAX_DIGITS - (WINDOW - 1))
			return false;
		if (k > 0) {
			*m = *m * pow10_small[k - 1] + rest;
			*e10 -= (int64_t)k - 1;
		}
		*after = stop_at;
		return true;
	}
	*after = p + stop;
	return true;
}

/*
 * The whole of a short number, the common case, with no more branches
 * than its shape needs: sign, window_digits(), an exponent of at most
 * three digits, double_convert() (a zero is +-0 whatever its exponent).
 * False, having set nothing, for anything else (no digits, a longer
 * number or exponent, a value near a float midpoint, under FLT_MIN or
 * past 10^38): parse_prefix() reads those.  Inlined into its callers:
 * util_scan_float32_fields()'s loop is where CSV's numbers go, and a call
 * a number cost a tenth of the conversion's time.
 */
static inline __attribute__((always_inline)) bool
scan_short(const char *text, const char *end, float *out, int *rc,
	   const char **stop)
{
	const char *p = text;
	bool neg = *p == '-';
	uint64_t m;
	int64_t e10;

	p += neg || *p == '+';
	if (!window_digits(p, end, &m, &e10, &p))
		return false;
	if (p < end && (*p | 0x20) == 'e') {
		const char *q = p + 1;
		bool neg_exp = false;
		int64_t e = 0;
		int n = 0;

		if (q < end && (*q == '+' || *q == '-')) {
			neg_exp = *q == '-';
			q++;
		}
		for (; n < 4 && q < end && is_digit(*q); n++, q++)
			e = e * 10 + (*q - '0');
		if (n == 0 || n == 4)
			return false;
		e10 += neg_exp ? -e : e;
		p = q;
	}
	if (m == 0) { /* zero, whatever the exponent */
		*out = with_sign(0.0f, neg);
		*rc = 0;
	} else if (e10 < -64 || e10 > 38 ||
		   !double_convert(m, e10, false, neg, out, rc)) {
		return false;
	}
	*stop = p;
	return true;
}
#endif

/* The number at the start of text[0..len): *stop is where it ends (text
 * when there is none: the special spellings are not looked for). */
static int parse_prefix(const char *text, size_t len, float *out,
			const char **stop)
{
	const char *p = text;
	const char *end;
	struct decimal dec;
	uint64_t m = 0;

	*stop = text;
	if (len == 0)
		return EINVAL;
	end = text + len;
	dec.neg = *p == '-';
	if (*p == '+' || *p == '-')
		p++;
	dec.int_digits = p;
	p = scan_digits(p, end, &m);
	dec.nint = (size_t)(p - dec.int_digits);
	dec.frac_digits = p;
	dec.nfrac = 0;
	if (p < end && *p == '.') {
		p++;
		dec.frac_digits = p;
		p = scan_digits(p, end, &m);
		dec.nfrac = (size_t)(p - dec.frac_digits);
	}
	if (dec.nint + dec.nfrac == 0)
		return EINVAL;
	dec.exp = 0;
	if (p < end && (*p == 'e' || *p == 'E')) {
		bool neg_exp = false;

		p++;
		if (p < end && (*p == '+' || *p == '-')) {
			neg_exp = *p == '-';
			p++;
		}
		if (p == end || !is_digit(*p))
			return EINVAL; /* (an exponent without digits) */
		while (p < end && is_digit(*p)) {
			if (dec.exp < EXP_SATURATE)
				dec.exp = dec.exp * 10 + (*p - '0');
			p++;
		}
		if (neg_exp)
			dec.exp = -dec.exp;
	}
	*stop = p;
	return convert(&dec, m, out);
}

int util_parse_float32(const char *text, size_t len, float *out)
{
	const char *stop;
	float v;
	int rc;

	if (len == 0)
		return EINVAL;
#if WINDOW_PATH
	if (scan_short(text, text + len, &v, &rc, &stop) &&
	    stop == text + len) {
		*out = v;
		return rc;
	}
#endif
	rc = parse_prefix(text, len, &v, &stop);
	if (stop == text)
		return parse_special(text, len, out);
	if (stop != text + len)
		return EINVAL;
	if (rc == 0 || rc == ERANGE)
		*out = v;
	return rc;
}

int util_scan_float32(const char *text, size_t len, float *out, size_t *used)
{
	const char *stop;
	int rc;

#if WINDOW_PATH
	if (len > 0 && scan_short(text, text + len, out, &rc, &stop)) {
		*used = (size_t)(stop - text);
		return rc;
	}
#endif
	rc = parse_prefix(text, len, out, &stop);

	*used = (size_t)(stop - text);
	return rc;
}

#if WINDOW_PATH
/* bit i set when p[i] is sep, a LF or a CR, for p + i < end, i < 64 */
static inline uint64_t separator_bits(const char *p, const char *end, char sep)
{
	uint64_t bits = 0;

	if (end - p >= 64) {
		const __m128i s = _mm_set1_epi8(sep);
		const __m128i lf = _mm_set1_epi8('\n');
		const __m128i cr = _mm_set1_epi8('\r');

		for (int i = 0; i < 64; i += WINDOW) {
			__m128i v = _mm_loadu_si128(
			    (const __m128i *)(const void *)(p + i));
			__m128i hit =
			    _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, s),
						      _mm_cmpeq_epi8(v, lf)),
					 _mm_cmpeq_epi8(v, cr));

			bits |= (uint64_t)(unsigned)_mm_movemask_epi8(hit) << i;
		}
		return bits;
	}
	for (int i = 0; p + i < end; i++) {
		if (p[i] == sep || p[i] == '\n' || p[i] == '\r')
			bits |= 1ULL << i;
	}
	return bits;
}
#endif

size_t util_scan_float32_fields(const char *text, const char *end, char sep,
				float *out, size_t max, const char **stop)
{
	size_t n = 0;

	*stop = text;
#if WINDOW_PATH
	/*
	 * The fields' ends come from a bitmap of the separators, 64 bytes at
	 * a time, not from the numbers: the next field's start does not wait
	 * for this one's digits to be found, so several numbers are read at
	 * once.  A number must then end exactly at its field's end.
	 */
	const char *p = text;
	const char *base = text;
	uint64_t bits = separator_bits(base, end, sep);

	while (n < max && p < end) {
		const char *fe;
		const char *after;
		int rc;

		while (bits == 0 && base + 64 < end) {
			base += 64;
			bits = separator_bits(base, end, sep);
		}
		fe = bits ? base + __builtin_ctzll(bits) : end;
		bits &= bits - 1;
		if (!scan_short(p, end, &out[n], &rc, &after) || rc != 0 ||
		    after != fe)
			break;
		if (fe < end && *fe != sep) {
			/* a LF, or a CR of a CR LF, ends the run */
			if (*fe == '\r' && !(fe + 1 < end && fe[1] == '\n'))
				break;
			n++;
			*stop = fe;
			break;
		}
		n++;
		*stop = fe;
		if (fe == end)
			break;
		p = fe + 1;
	}
#else
	(void)end;
	(void)sep;
	(void)out;
	(void)max;
#endif
	return n;
}
