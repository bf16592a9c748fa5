/*
 * s3 errors: the one place where an HTTP status, an S3 error code and a curl
 * result become an errno and a retry decision (s3_error_classify), where
 * everything the engine saw of one attempt (those, plus its own checks: an
 * ETag other than the listed one, a body longer or shorter than asked, a
 * Range ignored, a HEAD without a size) becomes an s3_error
 * (s3_error_from_attempt; a GET, a LIST and a HEAD alike), and where a
 * failed request becomes one line for the user (s3_error_describe).
 *
 * Order of precedence in s3_error_classify:
 *   1. a curl failure with no HTTP status, or on a 2xx (the body broke off
 *      after the headers): the curl table;
 *   2. a 2xx without a curl failure: success;
 *   3. a known S3 error code: the code table (ExpiredToken is a 400 but an
 *      auth failure, RequestTimeout a 400 but retryable);
 *   4. the HTTP status.
 * describe never maps anything itself: it switches on the errno that
 * classify produced plus the S3 or curl code, for wording only.
 */
#include "config.h"

#include "s3/internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <curl/curl.h>

struct error_code_map {
	const char *code;
	int err;
	bool retryable;
};

static const struct error_code_map error_codes[] = {
    {"NoSuchBucket", ENOENT, false},
    {"NoSuchKey", ENOENT, false},
    {"AccessDenied", EACCES, false},
    {"InvalidAccessKeyId", EACCES, false},
    {"SignatureDoesNotMatch", EACCES, false},
    {"ExpiredToken", EACCES, false},
    {"InvalidToken", EACCES, false},
    {"TokenRefreshRequired", EACCES, false},
    {"RequestTimeTooSkewed", EACCES, false},
    {"AllAccessDisabled", EACCES, false},
    {"AccountProblem", EACCES, false},
    {"PreconditionFailed", ESTALE, false},
    {"InvalidRange", ERANGE, false},
    {"SlowDown", EIO, true},
    {"RequestTimeout", EIO, true},
    {"InternalError", EIO, true},
    {"ServiceUnavailable", EIO, true},
};

static bool error_http_ok(long status)
{
	return status >= 200 && status < 300;
}

static int error_classify_curl(int curl_code, bool *retryable)
{
	*retryable = false;
	switch ((CURLcode)curl_code) {
	case CURLE_COULDNT_CONNECT:
		*retryable = true;
		return ECONNREFUSED;
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
		*retryable = true;
		return EHOSTUNREACH;
	case CURLE_OPERATION_TIMEDOUT:
		*retryable = true;
		return ETIMEDOUT;
	case CURLE_PARTIAL_FILE:
	case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
	case CURLE_SSL_CONNECT_ERROR: /* also a reset during the handshake */
	case CURLE_AGAIN:
		*retryable = true;
		return EIO;
	case CURLE_PEER_FAILED_VERIFICATION: /* = CURLE_SSL_CACERT */
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_ISSUER_ERROR:
	case CURLE_SSL_CRL_BADFILE:
	case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
	case CURLE_SSL_INVALIDCERTSTATUS:
		return EPROTO;
	case CURLE_UNSUPPORTED_PROTOCOL:
	case CURLE_URL_MALFORMAT:
		return EINVAL;
	case CURLE_OUT_OF_MEMORY:
		return ENOMEM;
	case CURLE_ABORTED_BY_CALLBACK:
		return ECANCELED;
	default:
		return EIO;
	}
}

int s3_error_classify(long http_status, const char *s3_code, int curl_code,
		      bool *retryable)
{
	bool retry_dummy;
	size_t i;

	if (!retryable)
		retryable = &retry_dummy;
	*retryable = false;

	if (curl_code != CURLE_OK &&
	    (http_status == 0 || error_http_ok(http_status)))
		return error_classify_curl(curl_code, retryable);
	if (http_status == 0)
		return EIO; /* no response and curl says nothing: a bug */
	if (error_http_ok(http_status))
		return 0;

	if (s3_code && *s3_code) {
		for (i = 0; i < sizeof(error_codes) / sizeof(error_codes[0]);
		     i++) {
			if (strcmp(s3_code, error_codes[i].code) == 0) {
				*retryable = error_codes[i].retryable;
				return error_codes[i].err;
			}
		}
	}

	switch (http_status) {
	case 404:
		return ENOENT;
	case 401:
	case 403:
		return EACCES;
	case 412:
		return ESTALE;
	case 416:
		return ERANGE;
	case 408:
	case 429:
		*retryable = true;
		return EIO;
	default:
		break;
	}
	if (http_status >= 500 && http_status < 600) {
		*retryable = true;
		return EIO;
	}
	if (http_status >= 300 && http_status < 500)
		return EINVAL;
	return EPROTO; /* 1xx or not HTTP at all */
}

/* "scheme://host[:port]" of url, without any user info. */
static void error_endpoint(const char *url, char *out, size_t outlen)
{
	const char *scheme_end = strstr(url, "://");
	const char *host = scheme_end ? scheme_end + 3 : url;
	size_t scheme_len = scheme_end ? (size_t)(host - url) : 0;
	size_t host_len = strcspn(host, "/?#");
	const char *at = memchr(host, '@', host_len);

	/* the last '@' ends the user info */
	while (at) {
		host_len -= (size_t)(at + 1 - host);
		host = at + 1;
		at = memchr(host, '@', host_len);
	}
	snprintf(out, outlen, "%.*s%.*s", (int)scheme_len, url, (int)host_len,
		 host);
}

static bool error_code_is(const struct store_error *err, const char *code)
{
	return strcmp(err->code, code) == 0;
}

void s3_error_set_fault(struct store_error *err, int curl_code)
{
	switch ((CURLcode)curl_code) {
	case CURLE_OK:
		err->fault = STORE_FAULT_NONE;
		err->fault_what[0] = '\0';
		return;
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_ISSUER_ERROR:
	case CURLE_SSL_CRL_BADFILE:
	case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
	case CURLE_SSL_INVALIDCERTSTATUS:
		err->fault = STORE_FAULT_TLS_VERIFY;
		break;
	case CURLE_SSL_CONNECT_ERROR:
		err->fault = STORE_FAULT_TLS_HANDSHAKE;
		break;
	default:
		err->fault = STORE_FAULT_TRANSPORT;
		break;
	}
	snprintf(err->fault_what, sizeof(err->fault_what), "%s",
		 curl_easy_strerror((CURLcode)curl_code));
}

/* True when endpoint ep addresses bucket virtual-hosted style. */
static bool vhost_of(const char *ep, const char *bucket)
{
	const char *host = strstr(ep, "://");
	size_t n = strlen(bucket);

	host = host ? host + 3 : ep;
	return strncmp(host, bucket, n) == 0 && host[n] == '.';
}

/* Failures where the transport, not the server, has the last word. */
static void error_describe_fault(const struct store_error *err, const char *ep,
				 const char *bucket, const char *at, char *out,
				 size_t outlen)
{
	const char *what = err->fault_what;
	/* the transport's own message, when the engine kept it, says more */
	const char *detail = err->message[0] ? err->message : what;

	if (err->err == EHOSTUNREACH && bucket && vhost_of(ep, bucket))
		snprintf(out, outlen,
			 "cannot reach endpoint %s (%s): if the server expects "
			 "path-style requests, pass --force-path-style",
			 ep, what);
	else if (err->err == ECONNREFUSED || err->err == EHOSTUNREACH)
		snprintf(out, outlen, "cannot reach endpoint %s (%s)", ep,
			 what);
	else if (err->err == ETIMEDOUT)
		snprintf(out, outlen, "timed out talking to endpoint %s (%s)",
			 ep, what);
	else if (err->err == EPROTO && err->fault == STORE_FAULT_TLS_VERIFY)
		snprintf(out, outlen,
			 "tls verification failed for %s (%s): fix the CA "
			 "bundle or pass --no-verify-ssl",
			 ep, detail);
	else if (err->fault == STORE_FAULT_TLS_HANDSHAKE)
		snprintf(out, outlen,
			 "tls handshake with %s failed (%s): check that the "
			 "endpoint's scheme (http or https) matches the server",
			 ep, what);
	else
		snprintf(out, outlen, "request failed (%s)%s", detail, at);
}

/* What the user can do about an authentication failure, by S3 code. */
struct auth_hint {
	const char *code;
	const char *what; /* what the server rejected */
	const char *todo;
};

static const struct auth_hint auth_hints[] = {
    {"InvalidAccessKeyId", "credentials",
     "check AWS_ACCESS_KEY_ID or the profile"},
    {"SignatureDoesNotMatch", "credentials",
     "check AWS_SECRET_ACCESS_KEY or the profile"},
    {"ExpiredToken", "session token", "refresh the credentials"},
    {"InvalidToken", "session token", "refresh the credentials"},
    {"TokenRefreshRequired", "session token", "refresh the credentials"},
    {"RequestTimeTooSkewed", "request time", "check the system clock"},
};

static const struct auth_hint *auth_hint(const struct store_error *err)
{
	for (size_t i = 0; i < sizeof(auth_hints) / sizeof(auth_hints[0]); i++)
		if (error_code_is(err, auth_hints[i].code))
			return &auth_hints[i];
	return NULL;
}

void s3_error_describe(const struct store_error *err, const char *bucket,
		       char *out, size_t outlen)
{
	char ep[sizeof(err->url)];
	char tag[sizeof(err->code) + sizeof(err->url) + 64];
	char bname[256];
	char at[sizeof(err->url) + 8];
	char what[sizeof(err->code) + 32];
	char ebuf[128];
	const struct auth_hint *hint;
	size_t i;

	if (!out || outlen == 0)
		return;
	error_endpoint(err->url, ep, sizeof(ep));
	if (err->url[0])
		snprintf(at, sizeof(at), " at %s", err->url);
	else
		at[0] = '\0';
	if (err->code[0])
		snprintf(what, sizeof(what), "%s", err->code);
	else if (err->http_status)
		snprintf(what, sizeof(what), "HTTP %ld", err->http_status);
	else
		snprintf(what, sizeof(what), "no response");
	snprintf(tag, sizeof(tag), "(%s%s)", what, at);
	hint = err->err == EACCES ? auth_hint(err) : NULL;
	if (bucket && *bucket)
		snprintf(bname, sizeof(bname), "bucket '%s'", bucket);
	else
		snprintf(bname, sizeof(bname), "the bucket");

	if (err->err == 0) {
		snprintf(out, outlen, "no error");
	} else if (err->fault != STORE_FAULT_NONE &&
		   (err->http_status == 0 || error_http_ok(err->http_status))) {
		error_describe_fault(err, ep, bucket, at, out, outlen);
	} else if (err->err == ENOENT && error_code_is(err, "NoSuchBucket")) {
		snprintf(out, outlen, "%s does not exist %s", bname, tag);
	} else if (err->err == ENOENT && error_code_is(err, "NoSuchKey")) {
		snprintf(out, outlen, "object does not exist %s", tag);
	} else if (err->err == ENOENT) {
		snprintf(out, outlen, "not found %s", tag);
	} else if (hint) {
		snprintf(out, outlen, "%s rejected by the server %s: %s",
			 hint->what, tag, hint->todo);
	} else if (err->err == EACCES) {
		snprintf(out, outlen,
			 "access denied to %s %s: check the credentials and "
			 "the bucket policy",
			 bname, tag);
	} else if (err->err == ESTALE) {
		snprintf(out, outlen, "object changed while reading %s", tag);
	} else if (err->err == ERANGE) {
		snprintf(out, outlen, "requested range not satisfiable %s",
			 tag);
	} else if (err->err == EINVAL &&
		   (error_code_is(err, "PermanentRedirect") ||
		    err->http_status == 301)) {
		snprintf(out, outlen,
			 "%s is in another region %s: pass its region with "
			 "--region",
			 bname, tag);
	} else if (err->err == EPROTO && error_http_ok(err->http_status)) {
		/* a server that takes the bucket in the path may answer a
		 * virtual-hosted request with its own page (Ceph's RGW: its
		 * bucket list) */
		bool vhost = bucket && *bucket && vhost_of(ep, bucket);

		snprintf(out, outlen,
			 "unexpected response from endpoint %s (%s%s%s%s): "
			 "check that it is an s3 server%s",
			 ep, what, at, err->message[0] ? ": " : "",
			 err->message,
			 vhost ? ", and if it expects path-style requests, "
				 "pass --force-path-style"
			       : "");
	} else if (err->http_status) {
		snprintf(out, outlen, "request failed: HTTP %ld%s%s%s%s%s%s",
			 err->http_status, err->code[0] ? " " : "", err->code,
			 err->message[0] ? " (" : "", err->message,
			 err->message[0] ? ")" : "", at);
	} else {
		snprintf(out, outlen, "request failed (%s)%s",
			 err->message[0]
			     ? err->message
			     : util_strerror(err->err, ebuf, sizeof(ebuf)),
			 at);
	}

	/* one line, whatever the server put in its message */
	for (i = 0; out[i]; i++) {
		unsigned char c = (unsigned char)out[i];

		if (c < 0x20 || c == 0x7f)
			out[i] = ' ';
	}
}

void s3_error_from_attempt(const struct s3_attempt *a, struct store_error *err,
			   bool *retryable)
{
	bool ok = a->curl_code == CURLE_OK;
	bool get = a->kind == S3_REQUEST_GET;
	int e = 0;

	memset(err, 0, sizeof(*err));
	*retryable = false;
	if (a->etag_mismatch) {
		e = s3_error_classify(412, "PreconditionFailed", 0, retryable);
		snprintf(err->code, sizeof(err->code), "PreconditionFailed");
		snprintf(err->message, sizeof(err->message),
			 "ETag %s differs from the listed %s",
			 a->resp_etag ? a->resp_etag : "",
			 a->etag ? a->etag : "");
	} else if (a->overflow || a->ignored_range) {
		/* a server that does not do what HTTP says: not retried */
		e = EIO;
		snprintf(err->message, sizeof(err->message), "%s",
			 a->overflow ? "response longer than requested"
				     : "server ignored the Range header");
	} else if (error_http_ok(a->http_status) &&
		   (ok || (get && a->got == a->wanted))) {
		/* (every byte wanted arrived: a transport error after them,
		 * such as a connection closed early, does not matter) */
		if (get && a->got != a->wanted) {
			e = s3_error_classify(0, NULL, CURLE_PARTIAL_FILE,
					      retryable);
			snprintf(err->message, sizeof(err->message),
				 "short body: %zu of %zu bytes", a->got,
				 a->wanted);
		} else if (a->kind == S3_REQUEST_HEAD && a->no_length) {
			/* no size: not an S3 server, not retried */
			e = EPROTO;
			snprintf(err->message, sizeof(err->message),
				 "HEAD response without a Content-Length");
		}
	} else {
		char code[64] = "", msg[256] = "";

		/* (a HEAD's error response has no body: the status
		 * alone decides) */
		if (ok && a->body && a->body_len)
			s3_xml_parse_error(a->body, a->body_len, code,
					   sizeof(code), msg, sizeof(msg));
		e = s3_error_classify(ok ? a->http_status : 0, code,
				      a->curl_code, retryable);
		snprintf(err->code, sizeof(err->code), "%s", code);
		if (!ok)
			snprintf(
			    err->message, sizeof(err->message), "%s",
			    a->curl_message && a->curl_message[0]
				? a->curl_message
				: curl_easy_strerror((CURLcode)a->curl_code));
		else
			snprintf(err->message, sizeof(err->message), "%s", msg);
	}
	if (!e)
		return;
	err->err = e;
	err->http_status = ok ? a->http_status : 0;
	s3_error_set_fault(err, a->curl_code);
	snprintf(err->url, sizeof(err->url), "%s", a->url ? a->url : "");
}

bool s3_error_throttled(const struct store_error *err)
{
	static const char *const codes[] = {
	    "SlowDown",
	    "Throttling",
	    "ThrottlingException",
	    "RequestLimitExceeded",
	    "TooManyRequests",
	    "RequestThrottled",
	};

	if (err->http_status == 503 || err->http_status == 429)
		return true;
	for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
		if (strcmp(err->code, codes[i]) == 0)
			return true;
	return false;
}

bool s3_error_credentials_expired(const struct store_error *err)
{
	return strcmp(err->code, "ExpiredToken") == 0 ||
	       strcmp(err->code, "TokenRefreshRequired") == 0 ||
	       strcmp(err->code, "RequestExpired") == 0;
}
