/*
 * s3 internals shared between the files of s3/ and the unit tests:
 * SigV4 signing, URI encoding, request building, XML parsing and error
 * classification.  Nothing outside s3/ and tests/ includes this.
 */
#ifndef S3PIPE_S3_INTERNAL_H
#define S3PIPE_S3_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

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

/* ---- uri.c ---- */

/*
 * Appends in to out, URI-encoded per SigV4: every byte except A-Z a-z 0-9
 * - . _ ~ becomes %XX (uppercase hex); '/' is kept when keep_slash.
 */
int s3_uri_encode(struct util_buf *out, const char *in, bool keep_slash);

/* ---- request.c ---- */

/* A parsed endpoint; strings owned (s3_endpoint_free). */
struct s3_endpoint {
	char *scheme;	      /* "http" or "https" */
	char *authority;      /* "host[:port]" as given */
	char *host;	      /* host without port or brackets */
	bool ip_or_localhost; /* buckets go in the path */
	bool plain_http;      /* no TLS: socket bytes are body bytes */
};

/* Parses endpoint (NULL: AWS's for region) by s3_endpoint_valid()'s
 * rules.  0, EINVAL or ENOMEM. */
int s3_endpoint_parse(const char *endpoint, const char *region,
		      struct s3_endpoint *ep);
void s3_endpoint_free(struct s3_endpoint *ep);

/* The kinds of request the client makes. */
enum s3_request_kind {
	S3_REQUEST_GET,	 /* GetObject (a byte range or the whole object) */
	S3_REQUEST_LIST, /* ListObjectsV2, one page */
	S3_REQUEST_HEAD, /* HeadObject: status and headers, no body */
};

/* What one attempt asks for. */
struct s3_request_spec {
	enum s3_request_kind kind;
	const char *bucket;
	const char *key;   /* GET, HEAD: the object; LIST: the prefix */
	const char *etag;  /* GET: sent as If-Match; may be NULL */
	const char *token; /* LIST: continuation token; may be NULL */
	unsigned max_keys; /* LIST */
	bool ranged;	   /* GET: send Range: bytes=first-last */
	uint64_t first;
	uint64_t last; /* inclusive */
};

/* What a client keeps for signing: the credentials and the day's key. */
struct s3_signer {
	const struct s3_creds *creds; /* NULL: anonymous requests */
	const char *region;
	char key_date[9];      /* the key's day, "" = none yet */
	unsigned char key[32]; /* a secret: wipe it */
};

struct curl_slist;

/*
 * The URL (*url, owned) and the header list for curl (*headers, owned,
 * curl_slist_free_all) of one attempt at spec, signed for time now when
 * signer has credentials.  Returns 0, or ENOMEM / EINVAL / ENOSPC (then
 * nothing is returned).
 */
int s3_request_build(const struct s3_endpoint *ep, bool force_path_style,
		     struct s3_signer *signer,
		     const struct s3_request_spec *spec, time_t now, char **url,
		     struct curl_slist **headers);

/* The HTTP method of kind ("GET" or "HEAD") that s3_request_build() signs:
 * the engine must send the same (CURLOPT_NOBODY for a HEAD). */
const char *s3_request_method(enum s3_request_kind kind);

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

/* What one attempt came to, as the engine saw it. */
struct s3_attempt {
	long http_status;	   /* 0 when no response */
	int curl_code;		   /* CURLcode of the transfer */
	enum s3_request_kind kind; /* what was asked */
	size_t wanted;		   /* GET: bytes asked for in all */
	size_t got;		   /* GET: bytes delivered so far */
	bool etag_mismatch; /* the response's ETag is not the listed one */
	const char *etag;   /* the listed ETag (with etag_mismatch) */
	const char *resp_etag;
	bool overflow;	    /* more bytes came than were asked for */
	bool no_length;	    /* HEAD: no valid Content-Length came */
	bool ignored_range; /* a whole object answered a ranged GET */
	const char *body;   /* an error response's body, may be NULL */
	size_t body_len;
	const char *curl_message; /* curl's error buffer, may be "" */
	const char *url;	  /* no secrets */
};

/*
 * The attempt's outcome as an error (err->err 0: success) and whether to
 * try again: every check the engine makes on a response ends here.
 */
void s3_error_from_attempt(const struct s3_attempt *a, struct s3_error *err,
			   bool *retryable);

#endif
