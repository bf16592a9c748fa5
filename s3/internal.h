/*
 * s3 internals shared between the files of s3/ and the unit tests:
 * SigV4 signing, URI encoding, request building, XML parsing, error
 * classification, and the credential providers with what they share
 * (secret buffers, the HTTP helper, the credential JSON parser).  Nothing
 * outside s3/ and tests/ includes this.
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
	const char *key;	 /* GET, HEAD: the object; LIST: the prefix */
	const char *etag;	 /* GET: sent as If-Match; may be NULL */
	const char *token;	 /* LIST: continuation token; may be NULL */
	const char *start_after; /* LIST: first page after this key; may be
				    NULL */
	unsigned max_keys;	 /* LIST */
	bool ranged;		 /* GET: send Range: bytes=first-last */
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
int s3_xml_parse_list(const char *body, size_t len,
		      struct store_list_page *page);

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
/* err's fault and fault_what from a transfer's CURLcode (CURLE_OK: none). */
void s3_error_set_fault(struct store_error *err, int curl_code);

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
void s3_error_from_attempt(const struct s3_attempt *a, struct store_error *err,
			   bool *retryable);

/* Whether the server asks the client to slow down (503, 429, SlowDown and
 * the other throttling codes): the engine's concurrency rule acts on it. */
bool s3_error_throttled(const struct store_error *err);

/* Whether the signing credentials had expired (ExpiredToken, ...): worth
 * another attempt once fresh credentials have arrived. */
bool s3_error_credentials_expired(const struct store_error *err);

/* ---- creds.c, http.c, creds_*.c: the credential providers ---- */

/*
 * Limits on what a provider reads: an HTTP body or a credential_process's
 * output, and a token file.  Longer is an error, not a cut.
 */
#define S3_CREDS_BODY_MAX	    ((size_t)64 << 10)
#define S3_CREDS_TOKEN_FILE_MAX	    ((size_t)16 << 10)
#define S3_CREDS_PROCESS_TIMEOUT_MS 60000u

/* ---- secret.c: wiped buffers and strings, token files, s3_creds ---- */

/*
 * A buffer for secrets: its max + 1 bytes are allocated at once, so appends
 * never move (and leave behind) the data; s3_secret_buf_free() wipes it.
 * 0, EINVAL (max 0) or ENOMEM.
 */
int s3_secret_buf_init(struct util_buf *b, size_t max);
void s3_secret_buf_free(struct util_buf *b);
/* Wipes and frees a string (NULL is fine). */
void s3_secret_free(char *s);

/*
 * Reads a token from the regular file at path into a secret buffer (*out,
 * s3_secret_buf_free), trailing white space trimmed.  Returns 0, or EINVAL
 * with a message naming what and path (missing, unreadable, not a regular
 * file, empty, over S3_CREDS_TOKEN_FILE_MAX, holding a control character),
 * or ENOMEM.  Never blocks on a FIFO.
 */
int s3_token_file_read(const char *path, const char *what, struct util_buf *out,
		       char *err, size_t errlen);

/*
 * s3_creds_fill: out's strings become copies of the arguments (token and
 * source may be NULL).  0 or ENOMEM (then out is cleared).
 */
int s3_creds_fill(struct s3_creds *out, const char *access_key,
		  const char *secret_key, const char *token,
		  const char *source);

/* ---- http.c ---- */

/*
 * What every curl easy handle in s3/ starts with, the engine's and
 * s3_http_request()'s alike: no signals, http and https only, no
 * redirects followed, connect_timeout_ms for each connection, and TLS
 * peer and host verified (unless tls_verify is false: the user turned it
 * off) against ca_bundle (curl copies it; NULL: the system's).  easy is a
 * CURL *; the caller adds the rest of its options.
 */
void s3_http_easy_setup(void *easy, unsigned connect_timeout_ms,
			bool tls_verify, const char *ca_bundle);

/* One synchronous request for the providers; every pointer borrowed. */
struct s3_http_request {
	const char *method; /* "GET", "PUT" or "POST" */
	const char *url;    /* shown in messages without user or query */
	const char *const *headers; /* "Name: value" lines, NULL-terminated;
				     * may hold secrets; may be NULL */
	const char *body; /* PUT / POST; may hold secrets; may be NULL */
	size_t body_len;
	unsigned connect_timeout_ms;
	unsigned timeout_ms;   /* the whole transfer */
	size_t max_body;       /* a longer response is EFBIG */
	const char *ca_bundle; /* NULL: the system's */
	bool tls_verify;
};

/*
 * Sends req without following redirects, through no proxy for loopback
 * and link-local hosts.  Returns 0 with the HTTP status in *status and the
 * response in *body (a secret buffer: s3_secret_buf_free() it, also on
 * error), or an errno with a message naming the URL (never a header or
 * the body): ECONNREFUSED, EHOSTUNREACH, ENETUNREACH, ETIMEDOUT, EPROTO
 * (TLS or HTTP failure), EFBIG, EINVAL (bad URL), ENOMEM or EIO.
 */
int s3_http_request(const struct s3_http_request *req, long *status,
		    struct util_buf *body, char *err, size_t errlen);

/*
 * s3_http_request() up to attempts times, again after a transport failure
 * or a 5xx, not after ENOMEM, EINVAL or EFBIG.  *body (zeroed or holding
 * an earlier answer) is freed before each attempt.  The last attempt's
 * result, as s3_http_request()'s: 0 may come with a 5xx status.
 */
int s3_http_request_retry(const struct s3_http_request *req, unsigned attempts,
			  long *status, struct util_buf *body, char *err,
			  size_t errlen);

/* url without user, password, query and fragment into out ("" when it is
 * not a URL); for messages. */
void s3_http_url_shown(const char *url, char *out, size_t outlen);

/*
 * Whether host (as in a URL: "[::1]" or "::1", "127.0.0.1", "localhost")
 * is a loopback address (127.0.0.0/8, ::1, "localhost").
 */
bool s3_http_host_loopback(const char *host);

/*
 * The address a host written as in a URL stands for: "[v6]" is IPv6 only,
 * a bare host IPv4 else IPv6.  AF_INET (4 bytes in addr) or AF_INET6 (16
 * bytes), or 0 when host is no address literal (a name, say).
 */
int s3_http_host_addr(const char *host, unsigned char addr[16]);

/* ---- creds_json.c ---- */

/* The credential JSON documents, by where they come from. */
enum s3_creds_json_kind {
	S3_CREDS_JSON_PROCESS,	 /* credential_process: Version 1, AccessKeyId,
				  * SecretAccessKey, [SessionToken],
				  * [Expiration] */
	S3_CREDS_JSON_CONTAINER, /* AccessKeyId, SecretAccessKey, Token,
				  * Expiration */
	S3_CREDS_JSON_IMDS,	 /* Code "Success" and the container's four */
};

/*
 * Makes jansson wipe what it frees (it holds secrets while parsing).  Must
 * run before any use of jansson in the process, threads included:
 * s3_client_conf_init() calls it; later calls do nothing.
 */
void s3_creds_json_init(void);

/*
 * Parses a credential document of kind into a whole *out: access_key,
 * secret_key, session_token and expiration from the document, a copy of
 * source (may be NULL: none) and provider -1.  Returns 0, ENOMEM, or
 * EINVAL with one line "WHAT: ..." naming the field at fault (never a
 * secret's value).  out is untouched on error.
 */
int s3_creds_json_parse(const char *body, size_t len,
			enum s3_creds_json_kind kind, const char *what,
			const char *source, struct s3_creds *out, char *err,
			size_t errlen);

/*
 * Parses an ISO 8601 time "YYYY-MM-DDTHH:MM:SS[.fraction](Z|+HH:MM|-HH:MM)"
 * into seconds since the epoch.  0, or EINVAL (malformed, no such date,
 * before 1970-01-01T00:00:01Z).
 */
int s3_creds_parse_time(const char *s, time_t *out);

/*
 * Whether a credential value may be used: no control character, and with
 * header (key ids, tokens: they go into headers) printable ASCII only, no
 * space.
 */
bool s3_creds_value_ok(const char *s, bool header);

/* t as "YYYY-MM-DDTHH:MM:SSZ" into out (21 bytes suffice). */
void s3_creds_format_time(time_t t, char *out, size_t outlen);

/* ---- xml.c: STS ---- */

/*
 * Parses an AssumeRoleWithWebIdentity response (root
 * AssumeRoleWithWebIdentityResponse, then AssumeRoleWithWebIdentityResult,
 * Credentials, and in it AccessKeyId, SecretAccessKey, SessionToken,
 * Expiration) into out's keys, token and expiration.  Returns 0, ENOMEM, or
 * EPROTO with *why (static) saying what was wrong; out untouched on error.
 */
int s3_xml_parse_sts_credentials(const char *body, size_t len,
				 struct s3_creds *out, const char **why);

/*
 * Parses an STS <ErrorResponse><Error><Code/><Message/></Error> body into
 * code and message (both "" when absent; control characters as spaces).
 * 0 when an ErrorResponse was found, EPROTO otherwise.
 */
int s3_xml_parse_sts_error(const char *body, size_t len, char *code,
			   size_t codelen, char *message, size_t msglen);

/* ---- creds_process.c ---- */

/*
 * Runs command with /bin/sh -c (stdin /dev/null, stderr inherited, no
 * other descriptor) and reads credentials (S3_CREDS_JSON_PROCESS) from its
 * output, within timeout_ms (then the child is killed).  Sets out->source
 * to "credential_process (profile PROFILE)".  0, or EINVAL (exit status,
 * signal, bad output), ETIMEDOUT, ENOMEM, or another errno when the
 * command cannot be started, with a message that names the profile, never
 * the command (it may carry a secret).
 */
int s3_creds_process(const char *command, const char *profile,
		     unsigned timeout_ms, struct s3_creds *out, char *err,
		     size_t errlen);

/* ---- creds_web_identity.c ---- */

/* What AssumeRoleWithWebIdentity needs; strings borrowed. */
struct s3_web_identity {
	const char *token_file; /* read at every call */
	const char *role_arn;
	const char *session_name; /* NULL: "s3pipe-UNIXSECONDS" */
};

/*
 * Asks STS (AWS_ENDPOINT_URL_STS, else AWS_ENDPOINT_URL, else
 * https://sts.REGION.amazonaws.com) for credentials for w, unsigned.  Sets
 * out->source to "web identity (ROLE_ARN)".  0, or an errno with a message:
 * EINVAL (token file, endpoint), EACCES (STS refused), EIO, ETIMEDOUT, ...
 */
int s3_creds_web_identity(const struct s3_creds_query *q,
			  const struct s3_web_identity *w, struct s3_creds *out,
			  char *err, size_t errlen);

/* ---- creds_container.c ---- */

/*
 * Whether AWS_CONTAINER_CREDENTIALS_FULL_URI may be url: https to any host,
 * or http to a loopback address, 169.254.170.2, 169.254.170.23 or
 * fd00:ec2::23 (by literal host, no name lookup but "localhost").
 */
bool s3_container_uri_allowed(const char *url);

/*
 * Container credentials (AWS_CONTAINER_CREDENTIALS_RELATIVE_URI or _FULL_URI,
 * with AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE or _TOKEN).  ENOENT when
 * neither URI is set; else 0 (source "container credentials") or an errno
 * with a message.
 */
int s3_creds_container(const struct s3_creds_query *q, struct s3_creds *out,
		       char *err, size_t errlen);

/* ---- creds_imds.c ---- */

/*
 * EC2 instance metadata, IMDSv2 only.  0 (source "instance metadata (role
 * R)"); ENOENT with a note (why nothing was found: disabled, unreachable,
 * no role attached) for the chain's final message; or another errno with
 * a message in err when the service answered but something is wrong.
 */
int s3_creds_imds(const struct s3_creds_query *q, struct s3_creds *out,
		  char *note, size_t notelen, char *err, size_t errlen);

/* ---- response header fields (s3/headers.c) ---- */

/* The value of header line buf (n bytes, no NUL) when it is name (with
 * its ':'): *len bytes from the return value, blanks and CRLF trimmed;
 * NULL for another header. */
const char *s3_header_value(const char *buf, size_t n, const char *name,
			    size_t *len);
/* A Content-Length value: decimal digits only, no overflow. */
bool s3_parse_length(const char *v, size_t len, uint64_t *out);
/* A Last-Modified value (IMF-fixdate) as seconds since the epoch, or 0. */
int64_t s3_parse_http_date(const char *v, size_t len);

#endif
