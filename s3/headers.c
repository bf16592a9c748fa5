/*
 * s3 headers: the fields of an HTTP response header the engine reads
 * (ETag, Content-Length, Last-Modified), parsed from the raw lines curl
 * hands over, strictly: a value that does not parse is no value.
 */
#include "config.h"

#include "s3/internal.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* The value of header line buf (n bytes, no NUL) when it is name (with
 * its ':'): *len bytes from the return value, blanks and CRLF trimmed;
 * NULL for another header. */
const char *s3_header_value(const char *buf, size_t n, const char *name,
			    size_t *len)
{
	size_t i = strlen(name), j = n;

	if (n <= i || strncasecmp(buf, name, i) != 0)
		return NULL;
	while (i < n && (buf[i] == ' ' || buf[i] == '\t'))
		i++;
	while (j > i && (buf[j - 1] == '\r' || buf[j - 1] == '\n' ||
			 buf[j - 1] == ' ' || buf[j - 1] == '\t'))
		j--;
	*len = j - i;
	return buf + i;
}

/* A Content-Length value: decimal digits only, no overflow. */
bool s3_parse_length(const char *v, size_t len, uint64_t *out)
{
	uint64_t n = 0;

	if (len == 0)
		return false;
	for (size_t i = 0; i < len; i++) {
		if (v[i] < '0' || v[i] > '9' ||
		    n > (UINT64_MAX - (uint64_t)(v[i] - '0')) / 10)
			return false;
		n = n * 10 + (uint64_t)(v[i] - '0');
	}
	*out = n;
	return true;
}

/*
 * A Last-Modified value in RFC 7231's IMF-fixdate ("Wed, 21 Oct 2015
 * 07:28:00 GMT", case-sensitive, always GMT) as seconds since the epoch,
 * or 0.  It is rewritten as ISO 8601 for s3_creds_parse_time(), which
 * checks the digits and the ranges of every field; the weekday must be one
 * but is not checked against the date.  The obsolete RFC 850 and asctime
 * forms (which S3 does not send) are 0 too.
 */
int64_t s3_parse_http_date(const char *v, size_t len)
{
	static const char days[] = "MonTueWedThuFriSatSun";
	static const char months[] = "JanFebMarAprMayJunJulAugSepOctNovDec";
	int day = -1, month = -1;
	char iso[32];
	time_t t;

	/* "Www, DD Mmm YYYY HH:MM:SS GMT" */
	if (len != 29 || memcmp(v + 3, ", ", 2) != 0 || v[7] != ' ' ||
	    v[11] != ' ' || v[16] != ' ' || memcmp(v + 25, " GMT", 4) != 0)
		return 0;
	for (int i = 0; i < 7; i++)
		if (memcmp(v, days + 3 * i, 3) == 0)
			day = i;
	for (int i = 0; i < 12; i++)
		if (memcmp(v + 8, months + 3 * i, 3) == 0)
			month = i + 1;
	if (day < 0 || month < 0)
		return 0;
	snprintf(iso, sizeof(iso), "%.4s-%02d-%.2sT%.8sZ", v + 12, month, v + 5,
		 v + 17);
	if (s3_creds_parse_time(iso, &t) != 0)
		return 0;
	return (int64_t)t;
}
