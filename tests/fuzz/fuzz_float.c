/*
 * libFuzzer harness for the decimal parser (util/float.c), checked against
 * strtof() bit for bit.  The input is the text; it is handed over in a heap
 * block of its exact length, so that ASan catches a read past the end, and
 * again as a field of a row (a separator and at least 16 more bytes
 * follow), so that the 16-byte window is used wherever it applies.
 *
 * - util_parse_float32: a text that parses (0 or ERANGE, ERANGE exactly
 *   when the value is infinite) is one that strtof() takes whole, to the
 *   same bits; a text over the number alphabet that strtof() takes whole
 *   must parse.
 * - util_scan_float32 on the row: the number it finds is the same text,
 *   the same length and bits as the text alone gives; when it finds one,
 *   strtof() must take exactly those bytes to the same bits.
 * - util_scan_float32_fields on the row, one field at most: it takes the
 *   text only when the text alone parses (0), to the same bits.
 * - util_scan_float32_fields on the row, as many fields as it takes (the
 *   input may hold separators, LFs and CRs of its own): every field taken
 *   is the text up to the next ',', LF or CR, and parses alone to the same
 *   bits; all but the last end at a ','; the stop is the last one's end.
 */
#include "config.h"

#include "util/float.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* what follows the text in the row */
static const char row_rest[] = ",12345678901234567890.5e+3\n";

static uint32_t bits(float f)
{
	uint32_t b;

	memcpy(&b, &f, sizeof(b));
	return b;
}

/* strtof() on text[0..len): true when it takes all of it, *out its value */
static bool strtof_whole(const char *text, size_t len, float *out)
{
	char *copy = malloc(len + 1);
	char *end;
	bool whole;
	int saved = errno;

	if (copy == NULL)
		__builtin_trap();
	memcpy(copy, text, len);
	copy[len] = '\0';
	*out = strtof(copy, &end);
	errno = saved;
	whole = len > 0 && end == copy + len;
	free(copy);
	return whole;
}

static bool plain_number_alphabet(const char *text, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (strchr("0123456789.eE+-", text[i]) == NULL ||
		    text[i] == '\0')
			return false;
	return len > 0;
}

/* the run of fields util_scan_float32_fields() takes from row */
static void check_run(const char *row, const char *end)
{
	float values[64];
	const char *stop = NULL;
	const char *f = row;
	size_t k = util_scan_float32_fields(row, end, ',', values, 64, &stop);

	if (k == 0 && stop != row)
		__builtin_trap();
	for (size_t i = 0; i < k; i++) {
		const char *fe = f;
		float alone;

		while (fe < end && *fe != ',' && *fe != '\n' && *fe != '\r')
			fe++;
		if (util_parse_float32(f, (size_t)(fe - f), &alone) != 0 ||
		    bits(alone) != bits(values[i]))
			__builtin_trap();
		if (i + 1 < k) {
			if (fe == end || *fe != ',')
				__builtin_trap();
			f = fe + 1;
		} else if (stop != fe || (fe < end && *fe == '\r' &&
					  (fe + 1 == end || fe[1] != '\n'))) {
			__builtin_trap();
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size ? size : 1);
	char *row = malloc(size + sizeof(row_rest) - 1);
	float got = 42.0f;
	float want;
	float in_row = 42.0f;
	float in_run = 42.0f;
	const char *run_stop = NULL;
	size_t used = 0;
	bool whole;
	int rc;
	int row_rc;

	if (text == NULL || row == NULL)
		__builtin_trap();
	memcpy(text, data, size);
	rc = util_parse_float32(text, size, &got);
	whole = strtof_whole(text, size, &want);
	if (rc == 0 || rc == ERANGE) {
		if (!whole || bits(got) != bits(want) ||
		    (rc == ERANGE) != (isinf(want) != 0))
			__builtin_trap();
	} else if (rc != EINVAL && rc != EDOM && rc != ENOMEM) {
		__builtin_trap();
	} else if (rc == EINVAL && whole && plain_number_alphabet(text, size)) {
		__builtin_trap(); /* a plain number refused */
	}

	memcpy(row, data, size);
	memcpy(row + size, row_rest, sizeof(row_rest) - 1);
	row_rc =
	    util_scan_float32(row, size + sizeof(row_rest) - 1, &in_row, &used);
	if (row_rc == 0 || row_rc == ERANGE) {
		if (used == 0 || !strtof_whole(row, used, &want) ||
		    bits(in_row) != bits(want))
			__builtin_trap();
	}
	if ((rc == 0 || rc == ERANGE) &&
	    (row_rc != rc || used != size || bits(in_row) != bits(got)))
		__builtin_trap();
	/* as the first field of a run: taken only when the text alone is a
	 * number in range, and then to its bits, ending at the separator */
	if (!memchr(data, ',', size) && !memchr(data, '\n', size) &&
	    !memchr(data, '\r', size) &&
	    util_scan_float32_fields(row, row + size + sizeof(row_rest) - 1,
				     ',', &in_run, 1, &run_stop) == 1 &&
	    (rc != 0 || run_stop != row + size || bits(in_run) != bits(got)))
		__builtin_trap();
	check_run(row, row + size + sizeof(row_rest) - 1);
	check_run(text, text + size); /* its exact block: no read past it */
	free(row);
	free(text);
	return 0;
}
