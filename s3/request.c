/*
 * s3 requests: what one HTTP attempt sends, built from what is asked.
 *
 * The endpoint is parsed here once (s3_endpoint_valid for the option
 * parser, s3_endpoint_parse for the client: the same rules).  For each
 * attempt s3_request_build() makes the URL (virtual-hosted or path-style),
 * the canonical path and query SigV4 signs, and the header list handed to
 * curl; the signed headers and the sent ones come from the same values, so
 * they cannot disagree; s3_request_method() names the method signed (the
 * engine sends a HEAD with CURLOPT_NOBODY, the rest as GETs).  A GET and a
 * HEAD address the object, a LIST the bucket; only a GET sends Range and
 * If-Match.  Nothing here does I/O.
 */
#include "config.h"

#include "s3/internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>

#define EMPTY_SHA256                                                           \
	"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

/* ---- endpoints ---- */

/* The port after ':' up to end: 1 to 65535, digits only. */
static bool port_valid(const char *port, const char *end)
{
	unsigned long n = 0;

	if (port == end)
		return false;
	for (; port < end; port++) {
		if (*port < '0' || *port > '9')
			return false;
		n = n * 10 + (unsigned long)(*port - '0');
		if (n > 65535)
			return false;
	}
	return n != 0;
}

bool s3_endpoint_valid(const char *url, size_t *len)
{
	const char *host, *port = NULL;
	size_t hlen;

	if (strncmp(url, "http://", 7) == 0)
		host = url + 7;
	else if (strncmp(url, "https://", 8) == 0)
		host = url + 8;
	else
		return false;
	hlen = strlen(host);
	if (hlen > 0 && host[hlen - 1] == '/')
		hlen--;
	if (hlen == 0)
		return false;
	for (size_t i = 0; i < hlen; i++) {
		unsigned char c = (unsigned char)host[i];

		if (c <= 0x20 || c == 0x7f || c == '/' || c == '?' ||
		    c == '#' || c == '@' || c == '\\')
			return false;
	}
	if (host[0] == '[') {
		const char *close = memchr(host, ']', hlen);

		if (!close || close == host + 1)
			return false;
		if ((size_t)(close - host) + 1 < hlen) {
			if (close[1] != ':')
				return false;
			port = close + 2;
		}
	} else {
		const char *colon = memchr(host, ':', hlen);

		if (colon == host)
			return false;
		if (colon) {
			if (memchr(colon + 1, ':',
				   hlen - (size_t)(colon + 1 - host)))
				return false;
			port = colon + 1;
		}
	}
	if (port && !port_valid(port, host + hlen))
		return false;
	if (len)
		*len = (size_t)(host - url) + hlen;
	return true;
}

void s3_endpoint_free(struct s3_endpoint *ep)
{
	free(ep->scheme);
	free(ep->authority);
	free(ep->host);
	memset(ep, 0, sizeof(*ep));
}

int s3_endpoint_parse(const char *endpoint, const char *region,
		      struct s3_endpoint *ep)
{
	char aws[128];
	const char *rest;
	size_t len = 0;

	memset(ep, 0, sizeof(*ep));
	if (!endpoint) {
		snprintf(aws, sizeof(aws), "https://s3.%s.amazonaws.com",
			 region);
		endpoint = aws;
	}
	if (!s3_endpoint_valid(endpoint, &len))
		return EINVAL;
	ep->plain_http = strncmp(endpoint, "http://", 7) == 0;
	rest = endpoint + (ep->plain_http ? 7 : 8);
	ep->scheme = strdup(ep->plain_http ? "http" : "https");
	ep->authority = strndup(rest, len - (size_t)(rest - endpoint));
	if (!ep->scheme || !ep->authority)
		goto nomem;
	if (ep->authority[0] == '[') {
		const char *end = strchr(ep->authority, ']');

		ep->host = strndup(ep->authority + 1,
				   (size_t)(end - ep->authority - 1));
		ep->ip_or_localhost = true;
	} else {
		const char *colon = strchr(ep->authority, ':');
		size_t hlen = colon ? (size_t)(colon - ep->authority)
				    : strlen(ep->authority);
		bool digits_and_dots = true;

		ep->host = strndup(ep->authority, hlen);
		if (!ep->host)
			goto nomem;
		for (const char *p = ep->host; *p; p++)
			if (!((*p >= '0' && *p <= '9') || *p == '.'))
				digits_and_dots = false;
		ep->ip_or_localhost =
		    digits_and_dots || strcasecmp(ep->host, "localhost") == 0;
	}
	if (!ep->host)
		goto nomem;
	return 0;
nomem:
	s3_endpoint_free(ep);
	return ENOMEM;
}

/* ---- one attempt ---- */

static bool use_path_style(const struct s3_endpoint *ep, bool force,
			   const char *bucket)
{
	/* Dotted bucket names break TLS wildcard certificates. */
	return force || ep->ip_or_localhost || strchr(bucket, '.') != NULL;
}

static int append_query_param(struct util_buf *q, const char *name,
			      const char *value)
{
	int rc = 0;

	if (q->len)
		rc = util_buf_append(q, "&", 1);
	if (!rc)
		rc = util_buf_append_str(q, name);
	if (!rc)
		rc = util_buf_append(q, "=", 1);
	if (!rc)
		rc = s3_uri_encode(q, value, false);
	return rc;
}

/* Fills host ("bucket.authority" or the authority), the canonical path
 * and the canonical query of spec. */
static int build_target(const struct s3_endpoint *ep, bool force_path_style,
			const struct s3_request_spec *spec,
			struct util_buf *host, struct util_buf *path,
			struct util_buf *query)
{
	bool path_style = use_path_style(ep, force_path_style, spec->bucket);
	char num[32];
	int rc;

	if (path_style) {
		rc = util_buf_append_str(host, ep->authority);
		if (!rc)
			rc = util_buf_append(path, "/", 1);
		if (!rc)
			rc = s3_uri_encode(path, spec->bucket, false);
	} else {
		rc =
		    util_buf_printf(host, "%s.%s", spec->bucket, ep->authority);
	}
	if (rc)
		return rc;
	if (spec->kind != S3_REQUEST_LIST) {
		rc = util_buf_append(path, "/", 1);
		return rc ? rc : s3_uri_encode(path, spec->key, true);
	}
	if (!path_style)
		rc = util_buf_append(path, "/", 1);
	/* canonical order: names sorted by byte value */
	if (!rc && spec->token)
		rc = append_query_param(query, "continuation-token",
					spec->token);
	if (!rc)
		rc = append_query_param(query, "encoding-type", "url");
	if (!rc)
		rc = append_query_param(query, "list-type", "2");
	snprintf(num, sizeof(num), "%u", spec->max_keys);
	if (!rc)
		rc = append_query_param(query, "max-keys", num);
	if (!rc)
		rc = append_query_param(query, "prefix", spec->key);
	if (!rc && !spec->token && spec->start_after && *spec->start_after)
		rc =
		    append_query_param(query, "start-after", spec->start_after);
	return rc;
}

/* Appends "name: value" (or "name:" to suppress a curl default). */
static int add_header(struct curl_slist **list, const char *name,
		      const char *value)
{
	struct util_buf line;
	struct curl_slist *l = NULL;
	int rc;

	util_buf_init(&line, 0);
	rc = util_buf_printf(&line, "%s:%s%s", name, value ? " " : "",
			     value ? value : "");
	if (!rc) {
		l = curl_slist_append(*list, line.data);
		rc = l ? 0 : ENOMEM;
	}
	if (line.data) /* may hold a token or a signature */
		explicit_bzero(line.data, line.len);
	util_buf_free(&line);
	if (!rc)
		*list = l;
	return rc;
}

/* The signing key for the day of amz_date, derived once a day. */
static int signer_key(struct s3_signer *s, const char *amz_date)
{
	int rc;

	if (strncmp(s->key_date, amz_date, 8) == 0)
		return 0;
	memcpy(s->key_date, amz_date, 8);
	s->key_date[8] = '\0';
	rc = s3_sigv4_signing_key(s->creds->secret_key, s->key_date, s->region,
				  "s3", s->key);
	if (rc)
		s->key_date[0] = '\0';
	return rc;
}

const char *s3_request_method(enum s3_request_kind kind)
{
	return kind == S3_REQUEST_HEAD ? "HEAD" : "GET";
}

/* Adds x-amz-content-sha256, x-amz-date, the session token and the
 * Authorization header, signed over exactly those, host and method (every
 * request has an empty body). */
static int sign(struct s3_signer *s, time_t now, const char *method,
		const char *host, const char *path, const char *query,
		struct curl_slist **headers)
{
	const struct s3_creds *cr = s->creds;
	struct s3_sigv4_header hdrs[4];
	struct s3_sigv4_request sreq;
	char amz_date[17];
	char auth[1024];
	struct tm tm;
	size_t n = 0;
	int rc;

	gmtime_r(&now, &tm);
	strftime(amz_date, sizeof(amz_date), "%Y%m%dT%H%M%SZ", &tm);
	rc = signer_key(s, amz_date);
	if (rc)
		return rc;
	hdrs[n++] = (struct s3_sigv4_header){"host", host};
	hdrs[n++] =
	    (struct s3_sigv4_header){"x-amz-content-sha256", EMPTY_SHA256};
	hdrs[n++] = (struct s3_sigv4_header){"x-amz-date", amz_date};
	if (cr->session_token)
		hdrs[n++] = (struct s3_sigv4_header){"x-amz-security-token",
						     cr->session_token};
	sreq = (struct s3_sigv4_request){
	    .method = method,
	    .canonical_uri = path,
	    .canonical_query = query,
	    .headers = hdrs,
	    .nheaders = n,
	    .payload_hash = EMPTY_SHA256,
	    .amz_date = amz_date,
	    .region = s->region,
	    .service = "s3",
	    .access_key = cr->access_key,
	    .secret_key = cr->secret_key,
	    .signing_key = s->key,
	};
	rc = s3_sigv4_authorization(&sreq, auth, sizeof(auth), NULL);
	/* the same values, in the same order, go to curl */
	for (size_t i = 1; !rc && i < n; i++)
		rc = add_header(headers, hdrs[i].name, hdrs[i].value);
	if (!rc)
		rc = add_header(headers, "Authorization", auth);
	explicit_bzero(auth, sizeof(auth));
	return rc;
}

int s3_request_build(const struct s3_endpoint *ep, bool force_path_style,
		     struct s3_signer *signer,
		     const struct s3_request_spec *spec, time_t now, char **url,
		     struct curl_slist **headers)
{
	struct util_buf host, path, query, u;
	struct curl_slist *list = NULL;
	char range[80];
	int rc;

	*url = NULL;
	*headers = NULL;
	util_buf_init(&host, 0);
	util_buf_init(&path, 0);
	util_buf_init(&query, 0);
	util_buf_init(&u, 0);
	rc = build_target(ep, force_path_style, spec, &host, &path, &query);
	if (!rc)
		rc = util_buf_printf(&u, "%s://%s%s%s%s", ep->scheme, host.data,
				     path.data, query.len ? "?" : "",
				     query.len ? query.data : "");
	if (!rc)
		rc = add_header(&list, "Host", host.data);
	if (!rc && signer && signer->creds)
		rc = sign(signer, now, s3_request_method(spec->kind), host.data,
			  path.data, query.len ? query.data : "", &list);
	if (!rc && spec->kind == S3_REQUEST_GET && spec->ranged) {
		snprintf(range, sizeof(range), "bytes=%" PRIu64 "-%" PRIu64,
			 spec->first, spec->last);
		rc = add_header(&list, "Range", range);
	}
	if (!rc && spec->kind == S3_REQUEST_GET && spec->etag)
		rc = add_header(&list, "If-Match", spec->etag);
	if (!rc)
		rc = add_header(&list, "Expect", NULL);
	util_buf_free(&host);
	util_buf_free(&path);
	util_buf_free(&query);
	if (rc) {
		curl_slist_free_all(list);
		util_buf_free(&u);
		return rc;
	}
	*url = util_buf_take(&u);
	*headers = list;
	return 0;
}
