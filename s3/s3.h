/*
 * s3: the S3 client used by cache/ and fs/.
 *
 * One engine thread drives every HTTP transfer through a single curl multi
 * handle (keep-alive connections, at most max_connections at once).  Other
 * threads submit requests with s3_get() / s3_list(); these never block on
 * the network.  Completion callbacks run on the engine thread: they must be
 * quick and must not call back into the client's destroy.
 *
 * Failed requests are retried with exponential backoff and jitter; a GET
 * resumes at the byte where the previous attempt broke.  Every GET carries
 * If-Match with the listed ETag and the response's ETag is checked too.
 * All HTTP status / S3 error code / curl result mapping lives in
 * s3_error_classify() (s3/error.c).
 *
 * Secrets (secret key, session token, Authorization) never reach a log.
 */
#ifndef S3PIPE_S3_H
#define S3PIPE_S3_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Credentials; every string is owned by the struct (s3_creds_clear frees). */
struct s3_creds {
	char *access_key;
	char *secret_key;
	char *session_token; /* may be NULL */
	char *source;	     /* where they came from, for messages; no secret */
};

/*
 * Resolves credentials along the chain: environment variables, then the
 * shared credentials / config files for profile (NULL = AWS_PROFILE or
 * "default").  Later providers (instance, container) slot into the table in
 * s3/creds.c.  Returns 0, or ENOENT when no provider had credentials, or
 * EINVAL with a message in err when a file or profile is unusable.
 */
int s3_creds_resolve(const char *profile, struct s3_creds *out, char *err,
		     size_t errlen);
void s3_creds_clear(struct s3_creds *c);

/*
 * Region: cli (if set), AWS_REGION, AWS_DEFAULT_REGION, the profile's
 * "region" in the config file, else "us-east-1".  Writes into out.
 */
void s3_region_resolve(const char *cli, const char *profile, char *out,
		       size_t outlen);

/* True for a plausible region name: 1-63 of a-z, 0-9 and '-'.  The region
 * becomes part of the default endpoint's host name. */
bool s3_region_valid(const char *region);

/*
 * Splits "s3://bucket[/prefix]" into freshly allocated bucket and prefix
 * (prefix "" when absent).  Returns 0 or EINVAL with a message in err.
 */
int s3_uri_parse(const char *uri, char **bucket, char **prefix, char *err,
		 size_t errlen);

/* What went wrong with a request; err is 0 on success. */
struct s3_error {
	int err;	   /* positive errno; see s3_error_classify() */
	long http_status;  /* 0 when no HTTP response was received */
	int curl_code;	   /* CURLcode, 0 when none */
	char code[64];	   /* S3 error code (NoSuchBucket, ...) or "" */
	char message[256]; /* server or curl message, no secrets */
	char url[1024];	   /* request URL without query secrets */
};

struct s3_object {
	char *key;  /* owned */
	char *etag; /* owned, as listed (with quotes) */
	uint64_t size;
};

struct s3_list_page {
	struct s3_object *objects; /* owned array of count */
	size_t count;
	bool truncated;
	char *next_token; /* owned; NULL when not truncated */
};

void s3_list_page_clear(struct s3_list_page *page);

struct s3_client_conf {
	const char *endpoint;	      /* "http(s)://host[:port]"; NULL = AWS */
	const char *region;	      /* required */
	bool force_path_style;	      /* path-style even for DNS names */
	bool no_sign;		      /* anonymous requests */
	bool tls_verify;	      /* verify peer and host (default on) */
	const char *ca_bundle;	      /* NULL = system default */
	const struct s3_creds *creds; /* copied; NULL only with no_sign */
	unsigned max_connections;     /* concurrent transfers, >= 1 */
	unsigned max_retries;	      /* attempts after the first */
	unsigned retry_base_ms;	      /* first backoff delay */
	unsigned retry_max_ms;	      /* backoff cap */
	unsigned stall_seconds;	      /* abort a transfer idle this long */
	unsigned connect_timeout_seconds;
};

struct s3_stats {
	uint64_t requests;
	uint64_t retries;
	uint64_t failures;
	uint64_t bytes_received;
};

/* Starts the engine thread.  Returns NULL and sets errno on failure. */
struct s3_client *s3_client_create(const struct s3_client_conf *conf);
/*
 * Stops the engine: every request still queued or running completes with
 * err = ECANCELED (its callback runs before this returns).
 */
void s3_client_destroy(struct s3_client *c);
void s3_client_get_stats(struct s3_client *c, struct s3_stats *out);

/* s3_get() flags */
/* a reader waits: to the front of the queue, and no request without this
 * flag starts until the server has begun to answer it */
#define S3_GET_URGENT 1u
/* the parts cover the whole object: no Range header (a cheaper request for
 * servers) unless resuming */
#define S3_GET_WHOLE 2u

/* One destination of a GET: consecutive parts take consecutive bytes. */
struct s3_get_part {
	char *dest; /* must stay valid until done runs */
	size_t len;
};
#define S3_GET_PARTS_MAX 64

/*
 * GET the bytes of bucket/key from offset on into parts[0..nparts) (the
 * array is copied; at most S3_GET_PARTS_MAX), so one request can fill
 * several cache blocks.  etag (may be NULL) is sent as If-Match and
 * compared with the response.  part_done(arg, i) (may be NULL) runs on the
 * engine thread as soon as part i is complete, in order and at most once;
 * then done(arg, NULL) on success, or done(arg, err) after retries are
 * exhausted or on a permanent error (the parts not reported complete are
 * not).  Returns 0, or EINVAL/ENOMEM (then no callback ever runs).
 */
typedef void s3_get_part_fn(void *arg, unsigned part);
typedef void s3_get_done_fn(void *arg, const struct s3_error *err);
int s3_get(struct s3_client *c, const char *bucket, const char *key,
	   const char *etag, uint64_t offset, const struct s3_get_part *parts,
	   unsigned nparts, unsigned flags, s3_get_part_fn *part_done,
	   s3_get_done_fn *done, void *arg);

/*
 * One ListObjectsV2 page of bucket under prefix, continuing after token
 * (NULL for the first page), at most max_keys keys.  done receives the page
 * (and then owns its contents) or an error.
 */
typedef void s3_list_done_fn(void *arg, struct s3_list_page *page,
			     const struct s3_error *err);
int s3_list(struct s3_client *c, const char *bucket, const char *prefix,
	    const char *token, unsigned max_keys, s3_list_done_fn *done,
	    void *arg);

/* Blocking form of s3_list() for start-up checks.  Returns err->err. */
int s3_list_sync(struct s3_client *c, const char *bucket, const char *prefix,
		 const char *token, unsigned max_keys,
		 struct s3_list_page *page, struct s3_error *err);

/* One line for users: "bucket 'x' does not exist (NoSuchBucket at URL)". */
void s3_error_describe(const struct s3_error *err, const char *bucket,
		       char *out, size_t outlen);

#endif
