/*
 * uri: SigV4 URI encoding and "s3://bucket[/prefix]" parsing.
 *
 * Encoding follows the SigV4 rules (not RFC 3986 component encoding, not
 * form encoding): only A-Z a-z 0-9 - . _ ~ pass through, every other byte,
 * including each byte of a UTF-8 sequence, becomes %XX with uppercase hex;
 * a space is %20, never '+'.  Runs of unreserved bytes are appended in one
 * call.
 *
 * Bucket names are checked against the current S3 naming rules (3-63
 * characters of a-z 0-9 . -, alphanumeric at both ends, no "..") so a typo
 * is reported at mount time instead of as a signature or DNS failure.
 * Legacy us-east-1 names with uppercase letters or '_' are rejected.  The
 * prefix is kept byte for byte.
 */
#include "config.h"

#include "s3/internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define S3_SCHEME     "s3://"
#define S3_SCHEME_LEN 5
#define BUCKET_MIN    3
#define BUCKET_MAX    63

static bool is_unreserved(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	       (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
	       c == '~';
}

int s3_uri_encode(struct util_buf *out, const char *in, bool keep_slash)
{
	static const char hex[] = "0123456789ABCDEF";
	const unsigned char *p = (const unsigned char *)in;
	const unsigned char *run = p;
	char esc[3];
	int rc;

	for (; *p; p++) {
		if (is_unreserved(*p) || (keep_slash && *p == '/'))
			continue;
		if (p > run) {
			rc = util_buf_append(out, run, (size_t)(p - run));
			if (rc)
				return rc;
		}
		esc[0] = '%';
		esc[1] = hex[*p >> 4];
		esc[2] = hex[*p & 0x0f];
		rc = util_buf_append(out, esc, sizeof(esc));
		if (rc)
			return rc;
		run = p + 1;
	}
	if (p > run)
		return util_buf_append(out, run, (size_t)(p - run));
	return 0;
}

static bool is_lower_alnum(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* NULL when name (len bytes) is a valid bucket name, else the rule broken. */
static const char *bucket_name_problem(const char *name, size_t len)
{
	size_t i;

	if (len < BUCKET_MIN || len > BUCKET_MAX)
		return "bucket names are 3 to 63 characters long";
	for (i = 0; i < len; i++) {
		if (!is_lower_alnum(name[i]) && name[i] != '.' &&
		    name[i] != '-')
			return "bucket names contain only lowercase letters, "
			       "digits, '.' and '-'";
	}
	if (!is_lower_alnum(name[0]) || !is_lower_alnum(name[len - 1]))
		return "bucket names start and end with a letter or digit";
	for (i = 1; i < len; i++) {
		if (name[i] == '.' && name[i - 1] == '.')
			return "bucket names do not contain '..'";
	}
	return NULL;
}

int s3_uri_parse(const char *uri, char **bucket, char **prefix, char *err,
		 size_t errlen)
{
	const char *start;
	const char *slash;
	const char *problem;
	char *b = NULL;
	char *p = NULL;
	size_t blen;

	*bucket = NULL;
	*prefix = NULL;
	if (!uri || strncasecmp(uri, S3_SCHEME, S3_SCHEME_LEN) != 0) {
		return util_fail(
		    err, errlen, EINVAL,
		    "malformed uri '%s': expected s3://BUCKET[/PREFIX]",
		    uri ? uri : "");
	}
	start = uri + S3_SCHEME_LEN;
	slash = strchr(start, '/');
	blen = slash ? (size_t)(slash - start) : strlen(start);
	if (blen == 0) {
		return util_fail(err, errlen, EINVAL,
				 "malformed uri '%s': missing bucket name, "
				 "expected s3://BUCKET[/PREFIX]",
				 uri);
	}
	problem = bucket_name_problem(start, blen);
	if (problem) {
		return util_fail(err, errlen, EINVAL,
				 "invalid bucket name '%.*s' in '%s': %s",
				 (int)(blen > 255 ? 255 : blen), start, uri,
				 problem);
	}
	b = strndup(start, blen);
	p = strdup(slash ? slash + 1 : "");
	if (!b || !p)
		goto fail;
	*bucket = b;
	*prefix = p;
	return 0;
fail:
	free(b);
	free(p);
	return util_fail(err, errlen, ENOMEM, "out of memory parsing '%s'",
			 uri);
}

bool s3_region_valid(const char *region)
{
	size_t n = 0;

	for (const char *p = region; *p; p++, n++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
		      *p == '-'))
			return false;
	return n >= 1 && n <= 63;
}
