/*
 * s3 internals shared between the files of s3/ and the unit tests:
 * SigV4 signing, URI encoding, XML parsing and error classification.
 * Nothing outside s3/ and tests/ includes this.
 */
#ifndef S3PIPE_S3_INTERNAL_H
#define S3PIPE_S3_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "s3/s3.h"
#include "util/util.h"

/* ---- sigv4.c ---- */

struct s3_sigv4_header {
	const char *name;  /* lowercase */
	const char *value; /* trimmed, inner runs of spaces folded */
};

struct s3_sigv4_request {
	const char *method;	     /* "GET" */
	const char *canonical_uri;   /* URI-encoded path, e.g. "/test.txt" */
	const char *canonical_query; /* sorted, encoded "a=1&b=2" or "" */
	const struct s3_sigv4_header *headers; /* sorted by name */
	size_t nheaders;
	const char *payload_hash; /* hex SHA-256 of the body */
	const char *amz_date;	  /* "20130524T000000Z" */
	const char *region;
	const char *service; /* "s3" */
	const char *access_key;
	const char *secret_key;
	/* optional: s3_sigv4_signing_key() for this date, region and service,
	 * so that a client signing many requests derives it once a day */
	const unsigned char *signing_key;
};

/*
 * The SigV4 signing key for secret_key on date ("YYYYMMDD") in region for
 * service, into out.  Returns 0, EINVAL or ENOMEM.  A secret: wipe it.
 */
int s3_sigv4_signing_key(const char *secret_key, const char *date,
			 const char *region, const char *service,
			 unsigned char out[32]);

/* Lowercase hex SHA-256 of data; out must hold 65 bytes. */
void s3_sha256_hex(const void *data, size_t len, char out[65]);

/*
 * Writes the full Authorization header value
 * ("AWS4-HMAC-SHA256 Credential=..., SignedHeaders=..., Signature=...")
 * into out.  Optionally also the bare signature (sig may be NULL; 65 bytes).
 * Returns 0, ENOSPC or ENOMEM.
 */
int s3_sigv4_authorization(const struct s3_sigv4_request *req, char *out,
			   size_t outlen, char *sig);

/*
 * Appends in to out, URI-encoded per SigV4: every byte except A-Z a-z 0-9
 * - . _ ~ becomes %XX (uppercase hex); '/' is kept when keep_slash.
 */
int s3_uri_encode(struct util_buf *out, const char *in, bool keep_slash);

/* ---- xml.c ---- */

/*
 * Parses a ListObjectsV2 result body.  Elements are matched by local name
 * (any namespace).  Keys are URL-decoded when EncodingType is "url".  No
 * network access, no entity expansion, no DTD.  Returns 0 or EPROTO when
 * the body is not a valid ListBucketResult; page is empty on error.
 */
int s3_xml_parse_list(const char *body, size_t len, struct s3_list_page *page);

/*
 * Parses an S3 <Error> body into code and message (both "" when absent).
 * Returns 0 when an Error element was found, EPROTO otherwise.
 */
int s3_xml_parse_error(const char *body, size_t len, char *code, size_t codelen,
		       char *message, size_t msglen);

/* ---- error.c ---- */

/*
 * The one place that turns a transfer's outcome into an errno and a retry
 * decision.  http_status 0 means no response (curl_code says why).
 *   2xx                          -> 0
 *   NoSuchBucket / NoSuchKey/404 -> ENOENT
 *   AccessDenied, InvalidAccessKeyId, SignatureDoesNotMatch, 401/403
 *                                -> EACCES
 *   PreconditionFailed / 412     -> ESTALE (object changed; not retried)
 *   InvalidRange / 416           -> ERANGE
 *   SlowDown, 5xx, 429, RequestTimeout, connection failures, timeouts,
 *   partial bodies               -> EAGAIN-class: retryable; errno EIO,
 *                                   ECONNREFUSED, EHOSTUNREACH or ETIMEDOUT
 *   other 4xx                    -> EINVAL
 * *retryable is set accordingly.
 */
int s3_error_classify(long http_status, const char *s3_code, int curl_code,
		      bool *retryable);

#endif
