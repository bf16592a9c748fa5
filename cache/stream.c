/*
 * cache streams: a listing read as one byte sequence.
 *
 * The first ListObjectsV2 page is fetched synchronously by
 * cache_stream_start() (it doubles as the start-up check).  Later pages
 * are asked for only when a reader's prefetch frontier comes within half a
 * page of the end of what is listed, one request at a time, and appended
 * from the engine thread.  Readers wait on s->grown for the segment they
 * need, so the first byte never waits for the whole listing.
 *
 * Segments are never removed or moved (the array holds pointers), so a
 * block may key on a segment pointer for the life of the stream.
 */
#include "config.h"

#include "cache/internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

struct cache_stream *cache_stream_create(struct cache *c, const char *bucket,
					 const char *prefix)
{
	struct cache_stream *s = calloc(1, sizeof(*s));

	if (!s)
		goto fail;
	s->cache = c;
	s->bucket = strdup(bucket);
	s->prefix = strdup(prefix ? prefix : "");
	if (!s->bucket || !s->prefix)
		goto fail;
	pthread_cond_init(&s->grown, NULL);
	return s;

fail:
	if (s) {
		free(s->bucket);
		free(s->prefix);
		free(s);
	}
	errno = ENOMEM;
	return NULL;
}

void cache_stream_destroy(struct cache_stream *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->count; i++) {
		free(s->segs[i]->key);
		free(s->segs[i]->etag);
		free(s->segs[i]);
	}
	free(s->segs);
	free(s->next_token);
	free(s->bucket);
	free(s->prefix);
	pthread_cond_destroy(&s->grown);
	free(s);
}

int cache_stream_append(struct cache_stream *s, const char *key,
			const char *etag, uint64_t size)
{
	struct cache_segment *seg;

	/* empty objects add no bytes; this also skips folder markers */
	if (size == 0)
		return 0;
	/* a hostile listing must not wrap the stream's offsets */
	if (size > (uint64_t)INT64_MAX - s->listed_bytes)
		return EOVERFLOW;
	if (s->count == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 1024;
		struct cache_segment **p = realloc(s->segs, cap * sizeof(*p));

		if (!p)
			return ENOMEM;
		s->segs = p;
		s->cap = cap;
	}
	seg = calloc(1, sizeof(*seg));
	if (!seg)
		return ENOMEM;
	seg->key = strdup(key);
	seg->etag = util_strdup0(etag);
	if (!seg->key || (etag && !seg->etag)) {
		free(seg->key);
		free(seg->etag);
		free(seg);
		return ENOMEM;
	}
	seg->size = size;
	seg->start = s->listed_bytes;
	s->segs[s->count++] = seg;
	s->listed_bytes += size;
	return 0;
}

/* Adds a page's objects and remembers where to continue (lock held).
 * All or nothing: on failure the stream is as it was, so the page can be
 * asked for again with the same token. */
UNITTEST int take_page(struct cache_stream *s, struct s3_list_page *page)
{
	size_t count = s->count;
	uint64_t listed = s->listed_bytes;
	int rc = 0;

	for (size_t i = 0; i < page->count && !rc; i++)
		rc = cache_stream_append(s, page->objects[i].key,
					 page->objects[i].etag,
					 page->objects[i].size);
	if (rc) {
		while (s->count > count) {
			struct cache_segment *seg = s->segs[--s->count];

			free(seg->key);
			free(seg->etag);
			free(seg);
		}
		s->listed_bytes = listed;
		return rc;
	}
	free(s->next_token);
	s->next_token = NULL;
	if (page->truncated && page->next_token) {
		s->next_token = page->next_token;
		page->next_token = NULL;
	} else {
		s->complete = true;
	}
	return 0;
}

int cache_stream_start(struct cache_stream *s, struct s3_error *err)
{
	struct cache *c = s->cache;
	struct s3_list_page page;
	int rc;

	rc = s3_list_sync(c->store, s->bucket, s->prefix, NULL,
			  c->conf.first_page_keys, &page, err);
	if (rc)
		return rc;
	pthread_mutex_lock(&c->lock);
	rc = take_page(s, &page);
	pthread_mutex_unlock(&c->lock);
	s3_list_page_clear(&page);
	if (rc) {
		memset(err, 0, sizeof(*err));
		err->err = rc;
	}
	return rc;
}

static void page_arrived(void *arg, struct s3_list_page *page,
			 const struct s3_error *err)
{
	struct cache_stream *s = arg;
	struct cache *c = s->cache;
	char desc[512];

	pthread_mutex_lock(&c->lock);
	s->listing = false;
	if (err) {
		s->error = EIO;
		if (err->err != ECANCELED) {
			s3_error_describe(err, s->bucket, desc, sizeof(desc));
			util_warn("listing s3://%s/%s failed: %s", s->bucket,
				  s->prefix, desc);
		}
	} else {
		s->error = take_page(s, page);
		s3_list_page_clear(page);
	}
	pthread_cond_broadcast(&s->grown);
	pthread_mutex_unlock(&c->lock);
}

void cache_stream_want(struct cache_stream *s, size_t idx)
{
	struct cache *c = s->cache;
	size_t ahead = c->conf.list_page_keys / 2;
	struct s3_list req = {
	    .bucket = s->bucket,
	    .prefix = s->prefix,
	    .token = s->next_token,
	    .max_keys = c->conf.list_page_keys,
	    .done = page_arrived,
	    .arg = s,
	};

	if (s->complete || s->listing || idx + ahead < s->count)
		return;
	s->error = 0;
	s->listing = true;
	if (s3_list(c->store, &req)) {
		s->listing = false;
		s->error = ENOMEM;
	}
}

int cache_stream_wait(struct cache_stream *s, size_t idx)
{
	bool asked = false;

	while (idx >= s->count) {
		if (s->complete)
			return ENODATA;
		if (s->error && asked)
			return EIO;
		cache_stream_want(s, idx);
		asked = true;
		if (s->error)
			return EIO;
		pthread_cond_wait(&s->grown, &s->cache->lock);
	}
	return 0;
}

size_t cache_stream_find(const struct cache_stream *s, uint64_t offset)
{
	size_t lo = 0, hi = s->count;

	if (offset >= s->listed_bytes)
		return s->count;
	/* first segment whose end is past offset */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct cache_segment *seg = s->segs[mid];

		if (seg->start + seg->size <= offset)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

bool cache_stream_size(struct cache_stream *s, uint64_t *size)
{
	bool complete;

	pthread_mutex_lock(&s->cache->lock);
	complete = s->complete;
	*size = complete ? s->listed_bytes : 0;
	pthread_mutex_unlock(&s->cache->lock);
	return complete;
}
