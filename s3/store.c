/*
 * s3 store: what every store shares: the checks on a GET before it is
 * taken, and the blocking list used at start-up, built on the store's own
 * asynchronous list.
 */
#include "config.h"

#include "s3/store.h"

#include <errno.h>
#include <pthread.h>
#include <string.h>

int s3_get_check(const struct s3_get *req, size_t *total)
{
	size_t len = 0;

	if (!req->bucket || !req->key || !req->done || !req->buffers ||
	    req->nbuffers == 0 || req->nbuffers > S3_GET_BUFFERS_MAX)
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

struct list_wait {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
	struct s3_list_page *page;
	struct s3_error *err;
};

static void list_sync_done(void *arg, struct s3_list_page *page,
			   const struct s3_error *err)
{
	struct list_wait *w = arg;

	pthread_mutex_lock(&w->lock);
	if (err) {
		*w->err = *err;
	} else {
		*w->page = *page;
		memset(w->err, 0, sizeof(*w->err));
	}
	w->done = true;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

int s3_list_sync(struct s3_store *st, const char *bucket, const char *prefix,
		 const char *token, unsigned max_keys,
		 struct s3_list_page *page, struct s3_error *err)
{
	struct list_wait w = {
	    .lock = PTHREAD_MUTEX_INITIALIZER,
	    .cond = PTHREAD_COND_INITIALIZER,
	    .page = page,
	    .err = err,
	};
	struct s3_list req = {
	    .bucket = bucket,
	    .prefix = prefix,
	    .token = token,
	    .max_keys = max_keys,
	    .done = list_sync_done,
	    .arg = &w,
	};
	int rc;

	memset(page, 0, sizeof(*page));
	memset(err, 0, sizeof(*err));
	rc = s3_list(st, &req);
	if (rc) {
		err->err = rc;
		return rc;
	}
	pthread_mutex_lock(&w.lock);
	while (!w.done)
		pthread_cond_wait(&w.cond, &w.lock);
	pthread_mutex_unlock(&w.lock);
	return err->err;
}
