/*
 * store: what every store shares: the checks on a GET before it is
 * taken, and the blocking list, HEAD and GET used at start-up, built on
 * the store's own asynchronous calls.  Each blocking call waits on one
 * struct sync_wait: the done callback (on the store's thread) writes the
 * result into the caller's memory, then sync_end() wakes the caller.
 */
#include "config.h"

#include "store/store.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

int store_get_check(const struct store_get *req, size_t *total)
{
	size_t len = 0;

	if (!req->bucket || !req->key || !req->done || !req->buffers ||
	    req->nbuffers == 0 || req->nbuffers > STORE_GET_BUFFERS_MAX)
		return EINVAL;
	for (unsigned i = 0; i < req->nbuffers; i++) {
		size_t n = req->buffers[i].len;

		if (n == 0 || !req->buffers[i].dest || n > SIZE_MAX - len ||
		    n > UINT64_MAX - req->offset - len)
			return EINVAL;
		len += n;
	}
	if (total)
		*total = len;
	return 0;
}

void store_object_clear(struct store_object *obj)
{
	if (!obj)
		return;
	free(obj->key);
	free(obj->etag);
	memset(obj, 0, sizeof(*obj));
}

/* One blocking call: the caller waits until the store ends it. */
struct sync_wait {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
	struct store_error *err; /* the caller's */
	void *out;		 /* the caller's result: a page, an object */
};

static void sync_init(struct sync_wait *w, struct store_error *err, void *out)
{
	*w = (struct sync_wait){
	    .lock = PTHREAD_MUTEX_INITIALIZER,
	    .cond = PTHREAD_COND_INITIALIZER,
	    .err = err,
	    .out = out,
	};
	memset(err, 0, sizeof(*err));
}

/* Store thread: ends w with err (NULL: success; the result is already in
 * w->out) and wakes the caller. */
static void sync_end(struct sync_wait *w, const struct store_error *err)
{
	pthread_mutex_lock(&w->lock);
	if (err)
		*w->err = *err;
	else
		memset(w->err, 0, sizeof(*w->err));
	w->done = true;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

/* Caller: rc is what starting the request returned; waits for its end
 * unless it did not start.  Returns err->err. */
static int sync_wait(struct sync_wait *w, int rc)
{
	if (rc) {
		w->err->err = rc;
		return rc;
	}
	pthread_mutex_lock(&w->lock);
	while (!w->done)
		pthread_cond_wait(&w->cond, &w->lock);
	pthread_mutex_unlock(&w->lock);
	return w->err->err;
}

static void list_sync_done(void *arg, struct store_list_page *page,
			   const struct store_error *err)
{
	struct sync_wait *w = arg;

	if (!err)
		*(struct store_list_page *)w->out = *page;
	sync_end(w, err);
}

int store_list_sync(struct store *st, const char *bucket, const char *prefix,
		    const char *token, unsigned max_keys,
		    struct store_list_page *page, struct store_error *err)
{
	struct sync_wait w;
	struct store_list req = {
	    .bucket = bucket,
	    .prefix = prefix,
	    .token = token,
	    .max_keys = max_keys,
	    .done = list_sync_done,
	    .arg = &w,
	};

	sync_init(&w, err, page);
	memset(page, 0, sizeof(*page));
	return sync_wait(&w, store_list(st, &req));
}

static void head_sync_done(void *arg, const struct store_object *obj,
			   const struct store_error *err)
{
	struct sync_wait *w = arg;
	struct store_object *out = w->out;
	struct store_error nomem;

	if (!err) {
		out->key = strdup(obj->key);
		out->etag = obj->etag ? strdup(obj->etag) : NULL;
		out->size = obj->size;
		out->mtime = obj->mtime;
		if (!out->key || (obj->etag && !out->etag)) {
			store_object_clear(out);
			memset(&nomem, 0, sizeof(nomem));
			nomem.err = ENOMEM;
			err = &nomem;
		}
	}
	sync_end(w, err);
}

int store_head_sync(struct store *st, const char *bucket, const char *key,
		    struct store_object *out, struct store_error *err)
{
	struct sync_wait w;
	struct store_head req = {
	    .bucket = bucket,
	    .key = key,
	    .done = head_sync_done,
	    .arg = &w,
	};

	sync_init(&w, err, out);
	memset(out, 0, sizeof(*out));
	return sync_wait(&w, store_head(st, &req));
}

static void get_sync_done(void *arg, const struct store_error *err)
{
	sync_end(arg, err);
}

int store_get_sync(struct store *st, const char *bucket, const char *key,
		   const char *etag, char *buf, size_t len,
		   struct store_error *err)
{
	struct sync_wait w;
	struct store_buffer b = {.dest = buf, .len = len};
	struct store_get req = {
	    .bucket = bucket,
	    .key = key,
	    .etag = etag,
	    .offset = 0,
	    .buffers = &b,
	    .nbuffers = 1,
	    /* someone waits; not STORE_GET_WHOLE: len may be less than the
	     * object, and a Range keeps the answer to len bytes */
	    .flags = STORE_GET_URGENT,
	    .done = get_sync_done,
	    .arg = &w,
	};

	sync_init(&w, err, NULL);
	if (len == 0) /* nothing to ask: a GET cannot carry an empty range */
		return 0;
	return sync_wait(&w, store_get(st, &req));
}

void store_list_page_clear(struct store_list_page *page)
{
	size_t i;

	if (!page)
		return;
	for (i = 0; i < page->count; i++) {
		free(page->objects[i].key);
		free(page->objects[i].etag);
	}
	free(page->objects);
	free(page->next_token);
	memset(page, 0, sizeof(*page));
}
