/*
 * util float: decimal text to float32, correctly rounded and fast on the
 * short numbers CSV files are made of (util/float.c).
 *
 * The text is borrowed for the call only; it need not be NUL-terminated.
 * The result assumes the default floating-point environment (round to
 * nearest, ties to even), as strtof() then does.  It does not depend on
 * the locale: the decimal point is always '.'.
 */
#ifndef S3PIPE_UTIL_FLOAT_H
#define S3PIPE_UTIL_FLOAT_H

#include <stddef.h>

/*
 * Parses text[0..len), which must be exactly one decimal number (no
 * surrounding blanks: the caller trims), into the nearest float32
 * (round half to even), as strtof() would.  Accepted: an optional sign,
 * digits with an optional '.', at least one digit in all, an optional
 * exponent (e or E, optional sign, digits).  Not accepted: hex floats,
 * empty text, anything else.  Returns 0 and sets *out; EDOM for the
 * spellings nan, inf, infinity (any case, optional sign; *out set to the
 * value); ERANGE when the value overflows float32 (*out = +-inf);
 * EINVAL otherwise.  Values below float32's range round to zero or a
 * subnormal as strtof() does, and that is 0.
 *
 * text may be NULL only when len is 0.  out must not be NULL; it is left
 * alone on EINVAL.  ENOMEM, with *out left alone, only when a rare input
 * of more than about a hundred digits needs a heap copy that cannot be
 * had.
 */
int util_parse_float32(const char *text, size_t len, float *out);

/*
 * The same for the number at the start of text[0..len), which may go on
 * after it: *used is the number's length (0 when text does not start with
 * a number, and then EINVAL; the nan and inf spellings are not looked
 * for).  The caller checks what follows.  Other returns as above, *out
 * set on 0 and ERANGE.
 */
int util_scan_float32(const char *text, size_t len, float *out, size_t *used);

/*
 * A run of fields, each one short number (as CSV files write them: sign,
 * digits, point, a fraction, an exponent of up to three digits) followed
 * by sep, a LF, a CR LF or end, from text on: out gets their values, at
 * most max of them, in one call (a call a number cost as much as the
 * scan).  Returns how many were taken; *stop is just past the last one's
 * number (at its sep, LF, CR or end), text when none was.  The run ends
 * after a field followed by a LF, a CR LF or end, or before the first
 * field that is not such a number (blanks, a lone CR, quotes, a long or
 * special number, one out of range or below FLT_MIN, one the fast
 * conversion leaves in doubt, an empty field) or whose digits, after its
 * sign, start fewer than 16 bytes before end: util_scan_float32() and the
 * caller's own rules read that one.  Every value taken is what
 * util_parse_float32() gives the field.  Where the fast path is not built (no
 * SSE2), it takes none.
 */
size_t util_scan_float32_fields(const char *text, const char *end, char sep,
				float *out, size_t max, const char **stop);

#endif
