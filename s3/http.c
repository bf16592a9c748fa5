/*
 * http: one synchronous HTTP request on its own curl easy handle, for the
 * credential providers (STS, container credentials, instance metadata),
 * and the options every easy handle of s3/ starts with (the engine's
 * too).  The S3 traffic itself goes through the engine (s3/engine.c),
 * never here.
 *
 * Requests are small and rare (start-up, then a refresh every few hours):
 * a handle per request keeps this free of shared state, so the refresher
 * thread and the start-up path can both call it.  Redirects are never
 * followed and only http and https are spoken.  Loopback and link-local
 * hosts (the metadata and container endpoints, a local mock) are reached
 * without a proxy; other hosts use curl's proxy variables as usual.
 *
 * Header lines and the request body may hold tokens: the header list is
 * wiped before it is freed and the body is passed to curl without a copy.
 * The response lands in a secret buffer (allocated once, wiped by the
 * caller).  Messages name the URL without user, password, query or
 * fragment, and never a header or a body.
 */
#include "config.h"

#include "s3/internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

#define HTTP_URL_SHOWN_MAX 512

static pthread_once_t http_once = PTHREAD_ONCE_INIT;
static CURLcode http_init_result;

static void http_init(void)
{
	http_init_result = curl_global_init(CURL_GLOBAL_DEFAULT);
}

void s3_http_easy_setup(void *easy, unsigned connect_timeout_ms,
			bool tls_verify, const char *ca_bundle)
{
	CURL *e = easy;

	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
			 (long)connect_timeout_ms);
	/* servers' and operators' logs tell clients apart by it */
	curl_easy_setopt(e, CURLOPT_USERAGENT, "s3pipe/" PACKAGE_VERSION);
	curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, tls_verify ? 1L : 0L);
	curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, tls_verify ? 2L : 0L);
	if (ca_bundle)
		curl_easy_setopt(e, CURLOPT_CAINFO, ca_bundle);
}

/* The response body: appends past max fail the transfer (EFBIG). */
struct http_sink {
	struct util_buf *body;
	bool too_big;
};

static size_t http_on_body(char *data, size_t size, size_t nmemb, void *user)
{
	struct http_sink *sink = user;
	size_t n = size * nmemb;
	int rc = util_buf_append(sink->body, data, n);

	if (rc) {
		sink->too_big = rc == EFBIG;
		return 0; /* curl aborts with CURLE_WRITE_ERROR */
	}
	return n;
}

int s3_http_host_addr(const char *host, unsigned char addr[16])
{
	char buf[64];
	size_t n = strlen(host);
	bool bracketed = n >= 2 && host[0] == '[' && host[n - 1] == ']';

	if (bracketed) {
		host++;
		n -= 2;
	}
	if (n >= sizeof(buf))
		return 0;
	memcpy(buf, host, n);
	buf[n] = '\0';
	if (!bracketed && inet_pton(AF_INET, buf, addr) == 1)
		return AF_INET;
	if (inet_pton(AF_INET6, buf, addr) == 1)
		return AF_INET6;
	return 0;
}

/* Host names and addresses reached without a proxy. */
static bool http_host_local(const char *host)
{
	unsigned char a[16];
	int family;

	if (s3_http_host_loopback(host))
		return true;
	family = s3_http_host_addr(host, a);
	if (family == AF_INET)
		return a[0] == 169 && a[1] == 254; /* 169.254.0.0/16 */
	if (family == AF_INET6) {
		/* fe80::/10, and the metadata service's fd00:ec2::/32 */
		if (a[0] == 0xfe && (a[1] & 0xc0) == 0x80)
			return true;
		return a[0] == 0xfd && a[1] == 0x00 && a[2] == 0x0e &&
		       a[3] == 0xc2;
	}
	return false;
}

bool s3_http_host_loopback(const char *host)
{
	static const unsigned char v6_loopback[16] = {[15] = 1};
	unsigned char a[16];
	int family;

	if (strcasecmp(host, "localhost") == 0)
		return true;
	family = s3_http_host_addr(host, a);
	if (family == AF_INET)
		return a[0] == 127;
	return family == AF_INET6 && memcmp(a, v6_loopback, sizeof(a)) == 0;
}

void s3_http_url_shown(const char *url, char *out, size_t outlen)
{
	CURLU *u = NULL;
	char *s = NULL;

	if (outlen == 0)
		return;
	out[0] = '\0';
	pthread_once(&http_once, http_init);
	u = curl_url();
	if (!u)
		return;
	if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK)
		goto fail;
	curl_url_set(u, CURLUPART_USER, NULL, 0);
	curl_url_set(u, CURLUPART_PASSWORD, NULL, 0);
	curl_url_set(u, CURLUPART_OPTIONS, NULL, 0);
	curl_url_set(u, CURLUPART_QUERY, NULL, 0);
	curl_url_set(u, CURLUPART_FRAGMENT, NULL, 0);
	if (curl_url_get(u, CURLUPART_URL, &s, 0) != CURLUE_OK)
		goto fail;
	snprintf(out, outlen, "%s", s);
fail:
	curl_free(s);
	curl_url_cleanup(u);
}

/* Frees a header list after wiping every line: they may carry tokens. */
static void http_headers_free(struct curl_slist *list)
{
	struct curl_slist *l;

	for (l = list; l; l = l->next)
		if (l->data)
			explicit_bzero(l->data, strlen(l->data));
	curl_slist_free_all(list);
}

/* The errno and words for a failed transfer. */
static int http_failure(CURL *e, CURLcode cc, const struct http_sink *sink,
			const char *shown, size_t max_body, char *err,
			size_t errlen)
{
	long os_errno = 0;
	char ebuf[128];

	if (sink->too_big)
		return util_fail(err, errlen, EFBIG,
				 "the answer from %s is larger than %zu bytes",
				 shown, max_body);
	curl_easy_getinfo(e, CURLINFO_OS_ERRNO, &os_errno);
	switch (cc) {
	case CURLE_OUT_OF_MEMORY:
		return util_fail(err, errlen, ENOMEM, "out of memory");
	case CURLE_OPERATION_TIMEDOUT:
		return util_fail(err, errlen, ETIMEDOUT,
				 "no answer from %s in time", shown);
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
		return util_fail(err, errlen, EHOSTUNREACH,
				 "cannot reach %s: %s", shown,
				 curl_easy_strerror(cc));
	case CURLE_COULDNT_CONNECT:
		if (os_errno == ETIMEDOUT)
			return util_fail(err, errlen, ETIMEDOUT,
					 "no answer from %s in time", shown);
		if (os_errno == EHOSTUNREACH || os_errno == ENETUNREACH ||
		    os_errno == ECONNREFUSED)
			return util_fail(
			    err, errlen, (int)os_errno, "cannot reach %s: %s",
			    shown,
			    util_strerror((int)os_errno, ebuf, sizeof(ebuf)));
		return util_fail(err, errlen, ECONNREFUSED,
				 "cannot reach %s: %s", shown,
				 curl_easy_strerror(cc));
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CIPHER:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_ISSUER_ERROR:
	case CURLE_SSL_CRL_BADFILE:
	case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
	case CURLE_SSL_INVALIDCERTSTATUS:
	case CURLE_USE_SSL_FAILED:
		return util_fail(err, errlen, EPROTO,
				 "TLS failure talking to %s: %s", shown,
				 curl_easy_strerror(cc));
	case CURLE_UNSUPPORTED_PROTOCOL:
	case CURLE_URL_MALFORMAT:
		return util_fail(err, errlen, EINVAL,
				 "cannot use the URL %s: %s", shown,
				 curl_easy_strerror(cc));
	default:
		return util_fail(err, errlen, EPROTO,
				 "request to %s failed: %s", shown,
				 curl_easy_strerror(cc));
	}
}

int s3_http_request(const struct s3_http_request *req, long *status,
		    struct util_buf *body, char *err, size_t errlen)
{
	char shown[HTTP_URL_SHOWN_MAX];
	size_t max_body = req->max_body ? req->max_body : S3_CREDS_BODY_MAX;
	struct http_sink sink = {.body = body};
	struct curl_slist *headers = NULL;
	CURLU *u = NULL;
	CURL *e = NULL;
	char *host = NULL;
	CURLcode cc;
	int rc;

	*status = 0;
	memset(body, 0, sizeof(*body));
	pthread_once(&http_once, http_init);
	if (http_init_result != CURLE_OK)
		return util_fail(err, errlen, EIO, "cannot initialise libcurl");
	s3_http_url_shown(req->url, shown, sizeof(shown));
	if (!shown[0])
		return util_fail(err, errlen, EINVAL, "not a usable URL");
	rc = s3_secret_buf_init(body, max_body);
	if (rc)
		return util_fail(err, errlen, rc, "out of memory");

	/* one parser for the URL: the host checked is the host reached */
	rc = ENOMEM;
	u = curl_url();
	if (!u)
		goto fail;
	if (curl_url_set(u, CURLUPART_URL, req->url, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK) {
		rc = util_fail(err, errlen, EINVAL, "not a usable URL: %s",
			       shown);
		goto fail;
	}
	for (const char *const *h = req->headers; h && *h; h++) {
		struct curl_slist *n = curl_slist_append(headers, *h);

		if (!n)
			goto fail;
		headers = n;
	}
	if (strcmp(req->method, "GET") != 0) {
		/* no "Expect: 100-continue", and PUT carries no form type */
		struct curl_slist *n = curl_slist_append(headers, "Expect:");

		if (!n)
			goto fail;
		headers = n;
		if (strcmp(req->method, "PUT") == 0) {
			n = curl_slist_append(headers, "Content-Type:");
			if (!n)
				goto fail;
			headers = n;
		}
	}
	e = curl_easy_init();
	if (!e)
		goto fail;
	s3_http_easy_setup(e, req->connect_timeout_ms, req->tls_verify,
			   req->ca_bundle);
	curl_easy_setopt(e, CURLOPT_CURLU, u);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)req->timeout_ms);
	if (http_host_local(host))
		curl_easy_setopt(e, CURLOPT_PROXY, "");
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, http_on_body);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, &sink);
	if (strcmp(req->method, "GET") != 0) {
		/* POSTFIELDS: curl reads the body where it is, no copy */
		curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE,
				 (curl_off_t)(req->body ? req->body_len : 0));
		curl_easy_setopt(e, CURLOPT_POSTFIELDS,
				 req->body ? req->body : "");
		if (strcmp(req->method, "POST") != 0)
			curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, req->method);
	}
	cc = curl_easy_perform(e);
	if (cc != CURLE_OK) {
		rc = http_failure(e, cc, &sink, shown, max_body, err, errlen);
		goto fail;
	}
	curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, status);
	util_debug("%s %s: HTTP %ld", req->method, shown, *status);
	rc = 0;
fail:
	if (rc == ENOMEM)
		util_fail(err, errlen, ENOMEM, "out of memory");
	if (e)
		curl_easy_cleanup(e);
	http_headers_free(headers);
	curl_free(host);
	curl_url_cleanup(u);
	return rc;
}

int s3_http_request_retry(const struct s3_http_request *req, unsigned attempts,
			  long *status, struct util_buf *body, char *err,
			  size_t errlen)
{
	int rc = EIO;

	for (unsigned attempt = 1; attempt <= attempts; attempt++) {
		s3_secret_buf_free(body);
		rc = s3_http_request(req, status, body, err, errlen);
		if (rc == ENOMEM || rc == EINVAL || rc == EFBIG)
			return rc;
		if (!rc && *status < 500)
			return 0;
	}
	return rc;
}
