/*
 * creds_json: the one parser of the JSON credential documents, and of the
 * ISO 8601 times in them.
 *
 *   credential_process  {"Version": 1, "AccessKeyId", "SecretAccessKey",
 *                        "SessionToken" (optional), "Expiration" (optional)}
 *   container           {"AccessKeyId", "SecretAccessKey", "Token",
 *                        "Expiration"}
 *   instance metadata   {"Code": "Success", and the container's four}
 *
 * Other members are ignored; a duplicate member is an error.  The key id
 * and the token go into request headers, so they must be printable ASCII
 * without spaces; no field may hold a control character.  A message names
 * the document (WHAT) and the field, never a value, except Code and
 * Expiration, which are not secrets.  jansson's own error text is not used
 * either: it quotes the input near the error.
 *
 * jansson keeps copies of every string it parses.  Its free function is
 * set, once, to one that wipes the block before freeing it (jansson's
 * allocations are plain malloc blocks, whoever set them up: a block
 * allocated before the switch is freed the same way).  channel/ parses its
 * config through the same library; wiping those blocks costs nothing much.
 *
 * Times: "YYYY-MM-DDTHH:MM:SS", an optional fraction of a second, then "Z"
 * or an offset "+HH:MM" / "-HH:MM".  Dates are checked (leap years
 * included), seconds go to 59, anything before 1970-01-01T00:00:01Z is
 * refused (0 means "never expires" in struct s3_creds).  The arithmetic is
 * done here rather than with timegm(), so no time zone setting can leak in.
 */
#include "config.h"

#include "s3/internal.h"

#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

static pthread_once_t json_once = PTHREAD_ONCE_INIT;

static void json_wiping_free(void *p)
{
	if (!p)
		return;
	explicit_bzero(p, malloc_usable_size(p));
	free(p);
}

static void json_init(void)
{
	json_set_alloc_funcs(malloc, json_wiping_free);
}

void s3_creds_json_init(void)
{
	pthread_once(&json_once, json_init);
}

/* ---- times ---- */

/* n decimal digits at s into *out; false at any other character. */
static bool time_digits(const char *s, int n, int *out)
{
	int v = 0;
	int i;

	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return true;
}

static bool leap_year(int y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int days_in_month(int y, int m)
{
	static const int days[12] = {31, 28, 31, 30, 31, 30,
				     31, 31, 30, 31, 30, 31};

	return m == 2 && leap_year(y) ? 29 : days[m - 1];
}

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian; y >= 0). */
static int64_t days_from_civil(int y, int m, int d)
{
	int64_t era;
	int64_t yoe;
	int64_t doy;
	int64_t doe;

	y -= m <= 2;
	era = y / 400;
	yoe = y - era * 400;
	doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

int s3_creds_parse_time(const char *s, time_t *out)
{
	const char *p = s;
	int y, mo, d, h, mi, sec;
	int oh = 0, om = 0, sign = 0;
	int64_t t;

	if (!time_digits(p, 4, &y) || p[4] != '-' ||
	    !time_digits(p + 5, 2, &mo) || p[7] != '-' ||
	    !time_digits(p + 8, 2, &d) || p[10] != 'T' ||
	    !time_digits(p + 11, 2, &h) || p[13] != ':' ||
	    !time_digits(p + 14, 2, &mi) || p[16] != ':' ||
	    !time_digits(p + 17, 2, &sec))
		return EINVAL;
	p += 19;
	if (*p == '.') {
		p++;
		if (*p < '0' || *p > '9')
			return EINVAL;
		while (*p >= '0' && *p <= '9')
			p++;
	}
	if (*p == 'Z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		sign = *p == '+' ? 1 : -1;
		if (!time_digits(p + 1, 2, &oh) || p[3] != ':' ||
		    !time_digits(p + 4, 2, &om))
			return EINVAL;
		if (oh > 23 || om > 59)
			return EINVAL;
		p += 6;
	} else {
		return EINVAL;
	}
	if (*p)
		return EINVAL;
	if (mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo) || h > 23 ||
	    mi > 59 || sec > 59)
		return EINVAL;
	t = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec;
	t -= (int64_t)sign * (oh * 3600 + om * 60);
	if (t <= 0)
		return EINVAL;
	*out = (time_t)t;
	return 0;
}

void s3_creds_format_time(time_t t, char *out, size_t outlen)
{
	struct tm tm;

	if (outlen == 0)
		return;
	if (!gmtime_r(&t, &tm) ||
	    strftime(out, outlen, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		snprintf(out, outlen, "%lld", (long long)t);
}

/* ---- documents ---- */

bool s3_creds_value_ok(const char *s, bool header)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c < 0x20 || c == 0x7f)
			return false;
		if (header && (c == ' ' || c > 0x7e))
			return false;
	}
	return true;
}

/*
 * root[name] as a string into *out (borrowed from root); NULL when absent
 * or null and not required.  EINVAL with a message otherwise.
 */
static int json_field(json_t *root, const char *name, bool required,
		      bool header, const char *what, const char **out,
		      char *err, size_t errlen)
{
	json_t *v = json_object_get(root, name);

	*out = NULL;
	if (!v || json_is_null(v)) {
		if (!required)
			return 0;
		return util_fail(err, errlen, EINVAL, "%s: no %s", what, name);
	}
	if (!json_is_string(v))
		return util_fail(err, errlen, EINVAL, "%s: %s must be a string",
				 what, name);
	if (json_string_length(v) == 0)
		return util_fail(err, errlen, EINVAL, "%s: %s is empty", what,
				 name);
	if (!s3_creds_value_ok(json_string_value(v), header))
		return util_fail(err, errlen, EINVAL,
				 "%s: %s holds a character that is not allowed",
				 what, name);
	*out = json_string_value(v);
	return 0;
}

/* The checks before the credentials: Version or Code. */
static int json_check_kind(json_t *root, enum s3_creds_json_kind kind,
			   const char *what, char *err, size_t errlen)
{
	json_t *v;

	if (kind == S3_CREDS_JSON_PROCESS) {
		v = json_object_get(root, "Version");
		if (!v)
			return util_fail(err, errlen, EINVAL,
					 "%s: no Version (must be 1)", what);
		if (!json_is_integer(v) || json_integer_value(v) != 1)
			return util_fail(err, errlen, EINVAL,
					 "%s: Version must be 1", what);
	} else if (kind == S3_CREDS_JSON_IMDS) {
		v = json_object_get(root, "Code");
		if (!v)
			return util_fail(err, errlen, EINVAL, "%s: no Code",
					 what);
		if (!json_is_string(v))
			return util_fail(err, errlen, EINVAL,
					 "%s: Code must be a string", what);
		if (strcmp(json_string_value(v), "Success") != 0)
			return util_fail(err, errlen, EINVAL,
					 "%s: Code is '%.64s', not Success",
					 what, json_string_value(v));
	}
	return 0;
}

int s3_creds_json_parse(const char *body, size_t len,
			enum s3_creds_json_kind kind, const char *what,
			const char *source, struct s3_creds *out, char *err,
			size_t errlen)
{
	bool process = kind == S3_CREDS_JSON_PROCESS;
	const char *token_name = process ? "SessionToken" : "Token";
	const char *ak, *sk, *token, *exp;
	struct s3_creds c = {.provider = -1};
	json_error_t jerr;
	json_t *root = NULL;
	time_t expiration = 0;
	int rc;

	s3_creds_json_init();
	/* jansson sets the error code only with a message: zero it first */
	memset(&jerr, 0, sizeof(jerr));
	root = json_loadb(body, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES,
			  &jerr);
	if (!root) {
		if (json_error_code(&jerr) == json_error_out_of_memory ||
		    jerr.text[0] == '\0')
			rc = util_fail(err, errlen, ENOMEM, "out of memory");
		else
			rc = util_fail(err, errlen, EINVAL,
				       "%s: not valid JSON (line %d, column "
				       "%d)",
				       what, jerr.line, jerr.column);
		goto fail;
	}
	if (!json_is_object(root)) {
		rc = util_fail(err, errlen, EINVAL, "%s: not a JSON object",
			       what);
		goto fail;
	}
	rc = json_check_kind(root, kind, what, err, errlen);
	if (!rc)
		rc = json_field(root, "AccessKeyId", true, true, what, &ak, err,
				errlen);
	if (!rc)
		rc = json_field(root, "SecretAccessKey", true, false, what, &sk,
				err, errlen);
	if (!rc)
		rc = json_field(root, token_name, !process, true, what, &token,
				err, errlen);
	if (!rc)
		rc = json_field(root, "Expiration", !process, false, what, &exp,
				err, errlen);
	if (rc)
		goto fail;
	if (exp && s3_creds_parse_time(exp, &expiration) != 0) {
		rc = util_fail(err, errlen, EINVAL,
			       "%s: Expiration '%.40s' is not an ISO 8601 UTC "
			       "time like 2026-11-25T12:00:00Z",
			       what, exp);
		goto fail;
	}
	rc = s3_creds_fill(&c, ak, sk, token, source);
	if (rc) {
		rc = util_fail(err, errlen, rc, "out of memory");
		goto fail;
	}
	c.expiration = expiration;
	*out = c;
	rc = 0;
fail:
	json_decref(root);
	return rc;
}
