/*
 * s3 store: the interface between the cache and whatever holds the objects.
 *
 * A store lists a bucket's keys a page at a time, tells one object's size
 * and ETag (HEAD) and GETs byte ranges of one object into caller-owned
 * buffers, asynchronously: every call returns at once and reports through
 * a callback on the store's own thread.  The S3 client (s3_client_create()
 * in s3/s3.h) is one store; the unit tests have an in-memory one; a store
 * may also wrap another (a disk tier that answers what it holds and passes
 * the rest on), in the spirit of s3backer's struct s3backer_store.
 *
 * Callbacks must be quick, must not call the store's destroy, and may call
 * get, list and head again.  Every request made with a 0 return gets exactly
 * one done callback, at the latest from destroy (err->err == ECANCELED).
 *
 * The types here (objects, pages, errors) are S3's, because S3's namespace
 * (bucket, key, ETag) is what every store serves.
 */
#ifndef S3PIPE_S3_STORE_H
#define S3PIPE_S3_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What went wrong with a request; err is 0 on success. */
struct s3_error {
	int err;	   /* positive errno; see s3_error_classify() */
	long http_status;  /* 0 when no HTTP response was received */
	int curl_code;	   /* CURLcode, 0 when none */
	char code[64];	   /* S3 error code (NoSuchBucket, ...) or "" */
	char message[256]; /* server or curl message, no secrets */
	char url[1024];	   /* request URL without query secrets */
};

/* One line for users: "bucket 'x' does not exist (NoSuchBucket at URL)". */
void s3_error_describe(const struct s3_error *err, const char *bucket,
		       char *out, size_t outlen);

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

/* Frees obj's key and etag and zeroes it. */
void s3_object_clear(struct s3_object *obj);

struct s3_stats {
	uint64_t requests; /* attempts started */
	uint64_t retries;
	uint64_t failures; /* requests that ended in an error */
	uint64_t bytes_received;
	uint64_t throttled;   /* answers asking to slow down (503, 429) */
	uint64_t concurrency; /* transfers allowed at once, now */
	uint64_t credential_refreshes; /* fresh credentials taken */
	uint64_t gets_in_flight; /* GETs being transferred now (a gauge) */
};

/* One destination of a GET: consecutive buffers take consecutive bytes. */
struct s3_buffer {
	char *dest; /* must stay valid until done runs */
	size_t len; /* > 0 */
};
#define S3_GET_BUFFERS_MAX 64

/* s3_get flags */
/* a reader waits: to the front of the queue, and no request without this
 * flag starts until the server has begun to answer it */
#define S3_GET_URGENT 1u
/* the buffers cover the whole object: no Range header (a cheaper request
 * for servers) unless resuming */
#define S3_GET_WHOLE 2u

typedef void s3_get_buffer_fn(void *arg, unsigned index);
typedef void s3_get_done_fn(void *arg, const struct s3_error *err);
typedef void s3_list_done_fn(void *arg, struct s3_list_page *page,
			     const struct s3_error *err);

/*
 * A GET of bucket/key from offset on into buffers[0..nbuffers) (at most
 * S3_GET_BUFFERS_MAX; the store copies the array), so one request can fill
 * several cache blocks.  etag (may be NULL) is the version wanted: a store
 * must not deliver another one.  buffer_done(arg, i) (may be NULL) runs as
 * soon as buffer i is full, in order and at most once; then done(arg, NULL)
 * on success, or done(arg, err) on failure (the buffers not reported full
 * are not).  Every pointer needs to live only for the call, except the
 * buffers' memory and arg.
 */
struct s3_get {
	const char *bucket;
	const char *key;
	const char *etag;
	uint64_t offset;
	const struct s3_buffer *buffers;
	unsigned nbuffers;
	unsigned flags;
	s3_get_buffer_fn *buffer_done;
	s3_get_done_fn *done;
	void *arg;
};

/*
 * One ListObjectsV2 page of bucket under prefix, continuing after token
 * (NULL for the first page), at most max_keys (1 to 1000) keys.  A first
 * page may start after the key start_after (NULL or "": at the start of
 * the prefix); with a token it is ignored, as S3 does.  done receives the
 * page (and then owns its contents) or an error.
 */
struct s3_list {
	const char *bucket;
	const char *prefix;
	const char *token;
	const char *start_after;
	unsigned max_keys;
	s3_list_done_fn *done;
	void *arg;
};

/* HEAD of bucket/key: done(arg, obj, NULL) with the object's key, ETag as
 * the server sent it (with quotes; NULL if it sent none) and size
 * (Content-Length), or done(arg, NULL, err) (ENOENT for a missing key, as
 * for GET).  obj and its strings live only during the call; the request's
 * strings need to live only for the call to s3_head(). */
typedef void s3_head_done_fn(void *arg, const struct s3_object *obj,
			     const struct s3_error *err);

struct s3_head {
	const char *bucket;
	const char *key;
	s3_head_done_fn *done;
	void *arg;
};

struct s3_store;

struct s3_store_ops {
	/* 0, or EINVAL / ENOMEM when the request cannot start (then no
	 * callback runs) */
	int (*get)(struct s3_store *st, const struct s3_get *req);
	int (*list)(struct s3_store *st, const struct s3_list *req);
	int (*head)(struct s3_store *st, const struct s3_head *req);
	void (*get_stats)(struct s3_store *st, struct s3_stats *out);
	/* cancels what is still queued or running (each done runs with
	 * ECANCELED before this returns) and frees the store */
	void (*destroy)(struct s3_store *st);
};

/* Embedded at the start of each implementation's own struct. */
struct s3_store {
	const struct s3_store_ops *ops;
	unsigned max_parallel; /* requests it works on at once, >= 1 */
};

static inline int s3_get(struct s3_store *st, const struct s3_get *req)
{
	return st->ops->get(st, req);
}

static inline int s3_list(struct s3_store *st, const struct s3_list *req)
{
	return st->ops->list(st, req);
}

static inline int s3_head(struct s3_store *st, const struct s3_head *req)
{
	return st->ops->head(st, req);
}

static inline void s3_store_get_stats(struct s3_store *st, struct s3_stats *out)
{
	st->ops->get_stats(st, out);
}

/* NULL is fine. */
static inline void s3_store_destroy(struct s3_store *st)
{
	if (st)
		st->ops->destroy(st);
}

/* Checks a GET's fields (buffers, lengths, offsets): 0 or EINVAL.  For
 * stores, before they take a request. */
int s3_get_check(const struct s3_get *req, size_t *total);

/*
 * Blocking s3_list() for start-up checks: one page of bucket under prefix
 * after token.  Returns err->err (0, with page filled, which the caller
 * then clears).  Must not run on the store's own thread.
 */
int s3_list_sync(struct s3_store *st, const char *bucket, const char *prefix,
		 const char *token, unsigned max_keys,
		 struct s3_list_page *page, struct s3_error *err);

/*
 * Blocking s3_head() for start-up: fills out (key and etag owned by the
 * caller: free them, or s3_object_clear; zeroed on error) and returns
 * err->err.  Must not run on the store's own thread.
 */
int s3_head_sync(struct s3_store *st, const char *bucket, const char *key,
		 struct s3_object *out, struct s3_error *err);

/*
 * Blocking GET of bytes [0, len) of bucket/key (etag may be NULL) into
 * buf: returns err->err.  For small whole objects at start-up (a manifest
 * after s3_head_sync told its size); len 0 asks the store nothing and
 * returns 0.  Must not run on the store's own thread.
 */
int s3_get_sync(struct s3_store *st, const char *bucket, const char *key,
		const char *etag, char *buf, size_t len, struct s3_error *err);

#endif
