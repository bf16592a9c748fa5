/*
 * s3: the S3 client, a store (store/store.h) that the cache reads
 * through, set up by fs/.
 *
 * One engine thread drives every HTTP transfer through a single curl multi
 * handle (keep-alive connections, at most max_connections at once).  Other
 * threads submit requests through the store's get and list; these never
 * block on the network.  Completion callbacks run on the engine thread.
 *
 * Failed requests are retried with exponential backoff and jitter; a GET
 * resumes at the byte where the previous attempt broke.  Every GET carries
 * If-Match with the listed ETag and the response's ETag is checked too.
 * Every HTTP status / S3 error code / curl result / response check becomes
 * an errno in s3/error.c.
 *
 * Secrets (secret key, session token, Authorization) never reach a log.
 */
#ifndef S3PIPE_S3_H
#define S3PIPE_S3_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "store/store.h"

/* Credentials; every string is owned by the struct (s3_creds_clear frees). */
struct s3_creds {
	char *access_key;
	char *secret_key;
	char *session_token; /* may be NULL */
	char *source;	     /* where they came from, for messages; no secret */
	time_t expiration;   /* when they stop working; 0 = never */
	int provider; /* the chain's entry that gave them (-1: none), which
		       * s3_creds_refresh() asks again */
};

/* What the chain needs besides the environment; strings borrowed. */
struct s3_creds_query {
	const char *profile; /* NULL = AWS_PROFILE or "default" */
	const char *region;  /* for STS's regional endpoint; NULL = us-east-1 */
	const char *ca_bundle; /* for https providers; NULL = the system's */
	bool tls_verify;
};

/*
 * Resolves credentials along the chain (s3/creds.c lists it, in the AWS
 * SDKs' order: environment, web identity, shared credentials file,
 * credential_process, shared config file, container, instance metadata).
 * Returns 0, or ENOENT when no provider had credentials (err says what
 * to set, and what instance metadata said), or another errno (EINVAL,
 * EACCES, ETIMEDOUT, ...) with a message in err when a provider that
 * applies failed: the chain stops there.  May block: a credential_process
 * up to 60 s, STS up to about 20 s, the container endpoint about 4 s,
 * instance metadata about 2 s when absent.  out->expiration is set by
 * every provider of temporary credentials.
 */
int s3_creds_resolve(const struct s3_creds_query *q, struct s3_creds *out,
		     char *err, size_t errlen);

/*
 * Asks the provider that gave old for fresh credentials (may block on the
 * network for a few seconds: not for the engine thread).  0 and *out, or
 * an errno with a message in err; old is left alone either way.
 */
int s3_creds_refresh(const struct s3_creds_query *q, const struct s3_creds *old,
		     struct s3_creds *out, char *err, size_t errlen);
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

/*
 * True for an endpoint s3pipe can use: "http(s)://HOST[:PORT]" with an
 * optional trailing '/', nothing else (no path, user or query).  *len is
 * then the length without that '/'.  The one parser of endpoints
 * (s3/request.c): the option parser and the client both call it.
 */
bool s3_endpoint_valid(const char *url, size_t *len);

/*
 * The client's settings.  s3_client_conf_init() writes every default;
 * strings are owned by the conf and freed by s3_client_conf_free(), which
 * also wipes the credentials.
 */
struct s3_client_conf {
	char *endpoint;		  /* "http(s)://host[:port]"; NULL = AWS */
	char *region;		  /* NULL: s3_client_conf_resolve() finds it */
	char *profile;		  /* NULL = AWS_PROFILE or "default" */
	char *ca_bundle;	  /* NULL = AWS_CA_BUNDLE or the system's */
	bool force_path_style;	  /* path-style even for DNS names */
	bool no_sign;		  /* anonymous requests */
	bool tls_verify;	  /* verify peer and host (default on) */
	struct s3_creds creds;	  /* filled by s3_client_conf_resolve() */
	unsigned max_connections; /* concurrent transfers, 1-256 */
	unsigned max_retries;	  /* attempts after the first */
	unsigned retry_base_ms;	  /* first backoff delay */
	unsigned retry_max_ms;	  /* backoff cap */
	unsigned stall_seconds;	  /* abort a transfer idle this long */
	unsigned connect_timeout_seconds; /* per connection attempt */
};

#define S3_DEFAULT_MAX_CONNECTIONS 64
#define S3_DEFAULT_MAX_RETRIES	   10
#define S3_DEFAULT_STALL_SECONDS   30

void s3_client_conf_init(struct s3_client_conf *conf);
void s3_client_conf_free(struct s3_client_conf *conf);

/*
 * Completes conf from the environment: the region
 * (conf->region, else as s3_region_resolve() says), the CA bundle (a
 * readable AWS_CA_BUNDLE when conf has none; a conf->ca_bundle that cannot
 * be read is an error) and, unless no_sign, the credentials along the chain
 * for conf->profile (which may ask STS, a container or instance metadata
 * endpoint, or run a credential_process).  Returns 0; ENOENT when no
 * provider had credentials; EINVAL when something is unusable; another
 * errno when a credential provider failed.  err gets one line for users
 * (may be "" with ENOENT).
 */
int s3_client_conf_resolve(struct s3_client_conf *conf, char *err,
			   size_t errlen);

/*
 * Starts the engine thread for a resolved conf (copied: the caller may
 * free it) and returns the client as a store; store_destroy() stops it.
 * Returns NULL and sets errno on failure.
 */
/* One line for users about a store error the S3 client (or a store
 * over it) gave: "bucket 'x' does not exist (NoSuchBucket at URL)". */
void s3_error_describe(const struct store_error *err, const char *bucket,
		       char *out, size_t outlen);

struct store *s3_client_create(const struct s3_client_conf *conf);

#endif
