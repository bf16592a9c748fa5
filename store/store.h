/*
 * store: the interface between the cache and whatever holds the objects.
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
#ifndef S3PIPE_STORE_STORE_H
#define S3PIPE_STORE_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * How a request failed below HTTP, whatever the store's transport: the
 * S3 client maps curl's codes to these, another store its own.
 */
enum store_fault {
	STORE_FAULT_NONE = 0,	   /* an answer came, or none was asked for */
	STORE_FAULT_TRANSPORT,	   /* connecting, a timeout, a connection cut:
				      err says which */
	STORE_FAULT_TLS_VERIFY,	   /* the peer's certificate is not trusted */
	STORE_FAULT_TLS_HANDSHAKE, /* no TLS handshake (a scheme mismatch?) */
};

/* What went wrong with a request; err is 0 on success. */
struct store_error {
	int err;		/* positive errno; see s3_error_classify() */
	long http_status;	/* 0 when no HTTP response was received */
	enum store_fault fault; /* below HTTP; NONE when the request got that
				far */
	char fault_what[96];	/* the transport's short words for it */
	char code[64];		/* S3 error code (NoSuchBucket, ...) or "" */
	char message[256];	/* server or transport message, no secrets */
	char url[1024];		/* request URL without query secrets */
};

struct store_object {
	char *key;  /* owned */
	char *etag; /* owned, as listed (with quotes) */
	uint64_t size;
	int64_t mtime; /* last modified, seconds since the epoch (UTC): 0
			  when the listing or HEAD gave none, or none that
			  parsed (or one before 1970) */
};

struct store_list_page {
	struct store_object *objects; /* owned array of count */
	size_t count;
	bool truncated;
	char *next_token; /* owned; NULL when not truncated */
};

void store_list_page_clear(struct store_list_page *page);

/* Frees obj's key and etag and zeroes it. */
void store_object_clear(struct store_object *obj);

struct store_stats {
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
struct store_buffer {
	char *dest; /* must stay valid until done runs */
	size_t len; /* > 0 */
};
#define STORE_GET_BUFFERS_MAX 64

/* store_get flags */
/* a reader waits: to the front of the queue, and no request without this
 * flag starts until the server has begun to answer it */
#define STORE_GET_URGENT 1u
/* the buffers cover the whole object: no Range header (a cheaper request
 * for servers) unless resuming */
#define STORE_GET_WHOLE 2u
/* the buffers are a small read's pieces, not blocks from a block boundary:
 * a store that keeps whole blocks (the disk tier) passes it on */
#define STORE_GET_PIECE 4u

typedef void store_get_buffer_fn(void *arg, unsigned index);
typedef void store_get_done_fn(void *arg, const struct store_error *err);
typedef void store_list_done_fn(void *arg, struct store_list_page *page,
				const struct store_error *err);

/*
 * A GET of bucket/key from offset on into buffers[0..nbuffers) (at most
 * STORE_GET_BUFFERS_MAX; the store copies the array), so one request can fill
 * several cache blocks.  etag (may be NULL) is the version wanted: a store
 * must not deliver another one.  buffer_done(arg, i) (may be NULL) runs as
 * soon as buffer i is full, in order and at most once; then done(arg, NULL)
 * on success, or done(arg, err) on failure (the buffers not reported full
 * are not).  Every pointer needs to live only for the call, except the
 * buffers' memory and arg.
 */
struct store_get {
	const char *bucket;
	const char *key;
	const char *etag;
	uint64_t offset;
	const struct store_buffer *buffers;
	unsigned nbuffers;
	unsigned flags;
	store_get_buffer_fn *buffer_done;
	store_get_done_fn *done;
	void *arg;
};

/*
 * One ListObjectsV2 page of bucket under prefix, continuing after token
 * (NULL for the first page), at most max_keys (1 to 1000) keys.  A first
 * page may start after the key start_after (NULL or "": at the start of
 * the prefix); with a token it is ignored, as S3 does.  done receives the
 * page (and then owns its contents) or an error.
 */
struct store_list {
	const char *bucket;
	const char *prefix;
	const char *token;
	const char *start_after;
	unsigned max_keys;
	store_list_done_fn *done;
	void *arg;
};

/* HEAD of bucket/key: done(arg, obj, NULL) with the object's key, ETag as
 * the server sent it (with quotes; NULL if it sent none), size
 * (Content-Length) and mtime (Last-Modified), or done(arg, NULL, err)
 * (ENOENT for a missing key, as for GET).  obj and its strings live only
 * during the call; the request's strings need to live only for the call
 * to store_head(). */
typedef void store_head_done_fn(void *arg, const struct store_object *obj,
				const struct store_error *err);

struct store_head {
	const char *bucket;
	const char *key;
	store_head_done_fn *done;
	void *arg;
};

struct store;

struct store_ops {
	/* 0, or EINVAL / ENOMEM when the request cannot start (then no
	 * callback runs) */
	int (*get)(struct store *st, const struct store_get *req);
	int (*list)(struct store *st, const struct store_list *req);
	int (*head)(struct store *st, const struct store_head *req);
	void (*get_stats)(struct store *st, struct store_stats *out);
	/* cancels what is still queued or running (each done runs with
	 * ECANCELED before this returns) and frees the store */
	void (*destroy)(struct store *st);
};

/* Embedded at the start of each implementation's own struct. */
struct store {
	const struct store_ops *ops;
	unsigned max_parallel; /* requests it works on at once, >= 1 */
};

static inline int store_get(struct store *st, const struct store_get *req)
{
	return st->ops->get(st, req);
}

static inline int store_list(struct store *st, const struct store_list *req)
{
	return st->ops->list(st, req);
}

static inline int store_head(struct store *st, const struct store_head *req)
{
	return st->ops->head(st, req);
}

static inline void store_get_stats(struct store *st, struct store_stats *out)
{
	st->ops->get_stats(st, out);
}

/* NULL is fine. */
static inline void store_destroy(struct store *st)
{
	if (st)
		st->ops->destroy(st);
}

/* Checks a GET's fields (buffers, lengths, offsets): 0 or EINVAL.  For
 * stores, before they take a request. */
int store_get_check(const struct store_get *req, size_t *total);

/*
 * Blocking store_list() for start-up checks: one page of bucket under prefix
 * after token.  Returns err->err (0, with page filled, which the caller
 * then clears).  Must not run on the store's own thread.
 */
int store_list_sync(struct store *st, const char *bucket, const char *prefix,
		    const char *token, unsigned max_keys,
		    struct store_list_page *page, struct store_error *err);

/*
 * Blocking store_head() for start-up: fills out (key and etag owned by the
 * caller: free them, or store_object_clear; zeroed on error) and returns
 * err->err.  Must not run on the store's own thread.
 */
int store_head_sync(struct store *st, const char *bucket, const char *key,
		    struct store_object *out, struct store_error *err);

/*
 * Blocking GET of bytes [0, len) of bucket/key (etag may be NULL) into
 * buf: returns err->err.  For small whole objects at start-up (a manifest
 * after store_head_sync told its size); len 0 asks the store nothing and
 * returns 0.  Must not run on the store's own thread.
 */
int store_get_sync(struct store *st, const char *bucket, const char *key,
		   const char *etag, char *buf, size_t len,
		   struct store_error *err);

#endif
