/*
 * cache streams: segments read as one byte sequence.
 *
 * A listing stream: the first ListObjectsV2 page is fetched synchronously
 * by cache_stream_start() (it doubles as the start-up check).  Later pages
 * are asked for only when a reader's prefetch frontier comes within two
 * pages of the end of what is listed, one request at a time (the next
 * one as soon as a page comes, while readers are still that near),
 * and appended from the engine thread, each object through the stream's
 * on-listed function (by default the whole object as one segment).  Readers
 * wait on s->grown for the segment they need, so the first byte never waits for
 * the whole listing.  A page is framed without the cache's lock (that function
 * is its owner's code): the segments it makes wait in the stream's pending list
 * and are added, with their offsets, once the whole page is framed, so
 * that readers never see part of a page that then fails.
 *
 * A plan stream has no listing: its owner adds segments (objects in any
 * order, literal bytes) and ends it, and is asked for more through its
 * refill function within half a page of the end; the
 * hook, like the store's list, is called with the cache's lock dropped.
 *
 * Segments are never moved (the array holds pointers), so a reader may hold
 * a segment pointer while it is at or before it.  A stream its owner marks
 * trimmed (cache_stream_set_trim: a plan whose segments it can make again,
 * a listing it can list again) drops, in batches, the segments every
 * reader and every hold (cache_hold_create: an owner that reads segments
 * by index) has passed, so that a pass over a million objects does not
 * keep a million segments and the objects they name; a reader that would
 * go back to them (a new reader, a seek backwards) fails with ESTALE, and
 * the owner starts another stream.
 *
 * A trimmed listing stream may also note, each time it drops segments,
 * where a listing could go on from (struct cache_resume, in memory the
 * keeper's next worker sees): the last object start at or before the cut,
 * the key of the object before it, the bytes and objects before it.  A
 * stream made from such a point is a trimmed stream from its first page
 * on, listed after that key.
 */
#include "config.h"

#include "cache/internal.h"
#include "cache/listing_file.h"
#include "s3/s3.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

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

struct cache_stream *cache_stream_create_saved(struct cache *c,
					       const char *bucket,
					       const char *prefix,
					       struct cache_listing_file *file)
{
	struct cache_stream *s = cache_stream_create(c, bucket, prefix);

	if (!s) {
		cache_listing_file_close(file);
		return NULL;
	}
	s->saved = file;
	return s;
}

void cache_stream_prefer_saved(struct cache_stream *s, const char *path,
			       uint64_t max_age)
{
	free(s->prefer_path);
	s->prefer_path = strdup(path); /* (none: lists on) */
	s->prefer_max_age = max_age;
}

void cache_stream_record(struct cache_stream *s, struct cache_listing_writer *w)
{
	cache_listing_writer_abort(s->record);
	s->record = w;
}

struct cache_stream *
cache_stream_create_plan(struct cache *c, cache_refill_fn *refill, void *arg)
{
	struct cache_stream *s = calloc(1, sizeof(*s));

	if (!s) {
		errno = ENOMEM;
		return NULL;
	}
	s->cache = c;
	s->refill = refill;
	s->refill_arg = arg;
	pthread_cond_init(&s->grown, NULL);
	return s;
}

void cache_stream_on_listed(struct cache_stream *s, cache_on_listed_fn *fn,
			    void *arg)
{
	s->on_listed = fn;
	s->on_listed_arg = arg;
}

uint64_t cache_stream_listed_objects(const struct cache_stream *s)
{
	uint64_t n;

	pthread_mutex_lock(&s->cache->lock);
	n = s->listed_objects;
	pthread_mutex_unlock(&s->cache->lock);
	return n;
}

static void segment_free(struct cache *c, struct cache_segment *seg)
{
	c->nsegments--;
	cache_object_unref(c, seg->obj);
	free(seg->bytes);
	free(seg);
}

/* Frees the segments of the page being framed (lock held). */
static void pending_drop(struct cache_stream *s)
{
	for (size_t i = 0; i < s->npending; i++)
		segment_free(s->cache, s->pending[i]);
	s->npending = 0;
	s->pending_bytes = 0;
}

/* Drops the segments from index count on (lock held; at most down to
 * what a trimmed stream kept). */
static void truncate_to(struct cache_stream *s, size_t count)
{
	while (s->count > count && s->count > s->base) {
		struct cache_segment *seg = cache_stream_seg(s, --s->count);

		if (seg->obj)
			s->nobject_segs--;
		segment_free(s->cache, seg);
	}
	if (s->count > s->base) {
		const struct cache_segment *last =
		    cache_stream_seg(s, s->count - 1);

		s->listed_bytes = last->start + last->size;
	} else if (s->base == 0) {
		s->listed_bytes = 0;
	}
}

void cache_stream_destroy(struct cache_stream *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->cache->lock);
	/* a page asked for while a reader was here answers on the engine's
	 * thread, into s: it must have answered (and ask for no other) */
	s->closing = true;
	while (s->listing)
		pthread_cond_wait(&s->grown, &s->cache->lock);
	truncate_to(s, 0);
	pending_drop(s);
	pthread_mutex_unlock(&s->cache->lock);
	free(s->pending);
	free(s->segs);
	free(s->next_token);
	free(s->bucket);
	free(s->prefix);
	cache_listing_file_close(s->saved);
	cache_listing_writer_abort(s->record); /* (an unfinished listing) */
	free(s->prefer_path);
	free(s->last_key);
	free(s->start_after);
	pthread_cond_destroy(&s->grown);
	free(s);
}

/* Bytes of s with the page being framed. */
static uint64_t stream_end(const struct cache_stream *s)
{
	return s->listed_bytes + s->pending_bytes;
}

/* A new segment of size bytes for the end of s (lock held). */
static struct cache_segment *segment_new(struct cache_stream *s, uint64_t size,
					 int *rc)
{
	struct cache_segment *seg;

	/* a hostile listing must not wrap the stream's offsets */
	if (size > (uint64_t)INT64_MAX - stream_end(s)) {
		*rc = EOVERFLOW;
		return NULL;
	}
	seg = calloc(1, sizeof(*seg));
	if (!seg) {
		*rc = ENOMEM;
		return NULL;
	}
	seg->size = size;
	/* (while a listed object is framed, listed_objects is its ordinal) */
	seg->item = s->bucket ? s->listed_objects + 1 : 0;
	s->cache->nsegments++;
	return seg;
}

/* Frees a segment segment_new() made that was never added (lock held). */
static void segment_discard(struct cache_stream *s, struct cache_segment *seg)
{
	s->cache->nsegments--;
	free(seg->bytes);
	free(seg);
}

/* Room for need pointers in the array *segs of *cap (lock held), which
 * doubles as it must: 0 or ENOMEM. */
static int segs_room(struct cache_segment ***segs, size_t *cap, size_t need)
{
	size_t grown = *cap ? *cap : 1024;
	struct cache_segment **p = *segs;

	while (grown < need)
		grown *= 2;
	if (grown != *cap)
		p = realloc(*segs, grown * sizeof(*p));
	if (!p)
		return ENOMEM;
	*segs = p;
	*cap = grown;
	return 0;
}

/* Puts seg at the end of s, where readers see it (room reserved). */
static void segment_push(struct cache_stream *s, struct cache_segment *seg)
{
	seg->start = s->listed_bytes;
	seg->obj_seq = s->nobject_segs;
	s->segs[s->count++ - s->base] = seg;
	s->listed_bytes += seg->size;
	/* how long a pass takes, for the kept set's ageing */
	if (s->listed_bytes > s->cache->largest_stream)
		s->cache->largest_stream = s->listed_bytes;
	if (seg->obj)
		s->nobject_segs++;
	pthread_cond_broadcast(&s->grown);
}

/* Adds seg at the end of s, or of the page being framed (lock held): 0 or
 * ENOMEM (seg is the caller's again). */
static int segment_add(struct cache_stream *s, struct cache_segment *seg)
{
	if (s->framing) {
		if (segs_room(&s->pending, &s->pending_cap, s->npending + 1))
			return ENOMEM;
		s->pending[s->npending++] = seg;
		s->pending_bytes += seg->size;
		return 0;
	}
	if (segs_room(&s->segs, &s->cap, s->count - s->base + 1))
		return ENOMEM;
	segment_push(s, seg);
	return 0;
}

/* The page being framed becomes part of s (lock held): 0, or ENOMEM (and
 * the page is dropped). */
static int pending_publish(struct cache_stream *s)
{
	if (segs_room(&s->segs, &s->cap, s->count - s->base + s->npending)) {
		pending_drop(s);
		return ENOMEM;
	}
	for (size_t i = 0; i < s->npending; i++)
		segment_push(s, s->pending[i]);
	s->npending = 0;
	s->pending_bytes = 0;
	return 0;
}

int cache_stream_add_object(struct cache_stream *s, struct cache_object *obj,
			    uint64_t offset, uint64_t len)
{
	struct cache_segment *seg;
	int rc = 0;

	if (len == 0)
		return 0;
	if (offset > obj->size || len > obj->size - offset)
		return EINVAL;
	pthread_mutex_lock(&s->cache->lock);
	seg = segment_new(s, len, &rc);
	if (seg) {
		seg->obj = obj;
		seg->obj_offset = offset;
		rc = segment_add(s, seg);
		if (rc)
			segment_discard(s, seg);
		else
			cache_object_ref(obj);
	}
	pthread_mutex_unlock(&s->cache->lock);
	return rc;
}

int cache_stream_add_bytes(struct cache_stream *s, const void *bytes,
			   size_t len)
{
	struct cache_segment *seg;
	int rc = 0;

	if (len == 0)
		return 0;
	pthread_mutex_lock(&s->cache->lock);
	seg = segment_new(s, len, &rc);
	if (seg) {
		seg->bytes = malloc(len);
		if (seg->bytes)
			memcpy(seg->bytes, bytes, len);
		rc = seg->bytes ? segment_add(s, seg) : ENOMEM;
		if (rc)
			segment_discard(s, seg);
	}
	pthread_mutex_unlock(&s->cache->lock);
	return rc;
}

int cache_stream_add_mark(struct cache_stream *s)
{
	struct cache_segment *seg;
	int rc = 0;

	pthread_mutex_lock(&s->cache->lock);
	seg = segment_new(s, 0, &rc);
	if (seg) {
		rc = segment_add(s, seg);
		if (rc)
			segment_discard(s, seg);
	}
	pthread_mutex_unlock(&s->cache->lock);
	return rc;
}

void cache_stream_end(struct cache_stream *s, int err)
{
	pthread_mutex_lock(&s->cache->lock);
	s->complete = true;
	s->end_error = err;
	pthread_cond_broadcast(&s->grown);
	pthread_mutex_unlock(&s->cache->lock);
}

void cache_stream_set_size(struct cache_stream *s, uint64_t bytes)
{
	pthread_mutex_lock(&s->cache->lock);
	s->final_bytes = bytes;
	s->sized = true;
	pthread_mutex_unlock(&s->cache->lock);
}

bool cache_stream_known_size(const struct cache_stream *s, uint64_t *size)
{
	if (s->complete && !s->end_error) {
		*size = s->listed_bytes;
		return true;
	}
	*size = s->sized && !s->end_error ? s->final_bytes : 0;
	return s->sized && !s->end_error;
}

uint64_t cache_stream_memory(const struct cache_stream *s)
{
	uint64_t bytes;

	pthread_mutex_lock(&s->cache->lock);
	/* (+16: what malloc adds to each segment) */
	bytes = s->cap * sizeof(*s->segs) +
		(s->count - s->base) * (sizeof(struct cache_segment) + 16);
	pthread_mutex_unlock(&s->cache->lock);
	return bytes;
}

void cache_stream_set_trim(struct cache_stream *s)
{
	pthread_mutex_lock(&s->cache->lock);
	s->trim = true;
	pthread_mutex_unlock(&s->cache->lock);
}

bool cache_stream_trimmed(const struct cache_stream *s)
{
	bool trimmed;

	pthread_mutex_lock(&s->cache->lock);
	trimmed = s->base > 0;
	pthread_mutex_unlock(&s->cache->lock);
	return trimmed;
}

/* dropping segments one at a time would move the window's pointers for
 * each: in batches */
#define TRIM_BATCH 256

/* *at written as a point for tag (a sequence lock: seq odd meanwhile). */
static void resume_write(struct cache_resume *at, uint64_t tag, size_t index,
			 uint64_t offset, uint64_t listed, const char *key)
{
	size_t len = strlen(key);
	uint32_t seq = __atomic_load_n(&at->seq, __ATOMIC_RELAXED);

	if (len > CACHE_KEY_MAX)
		return;
	__atomic_store_n(&at->seq, seq | 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	at->tag = tag;
	at->index = index;
	at->offset = offset;
	at->listed = listed;
	at->key_len = (uint32_t)len;
	memcpy(at->key, key, len + 1);
	__atomic_store_n(&at->seq, (seq | 1) + 1, __ATOMIC_RELEASE);
}

/*
 * Before s drops its segments below low (lock held): the last place at or
 * before low where an object's segments start, written to s->resume_at
 * with the key of the object before it.  Nothing when the segments from
 * base to low hold no such place.
 */
static void resume_note(struct cache_stream *s, size_t low)
{
	for (size_t j = low; j > s->base; j--) {
		const struct cache_segment *prev = cache_stream_seg(s, j - 1);

		if (j < s->count && cache_stream_seg(s, j)->item == prev->item)
			continue;
		/* j starts an object: the one before it is prev's */
		for (size_t i = j; i-- > s->base;) {
			const struct cache_segment *seg =
			    cache_stream_seg(s, i);

			if (seg->item != prev->item)
				break;
			if (!seg->obj)
				continue;
			resume_write(s->resume_at, s->resume_tag, j,
				     j < s->count
					 ? cache_stream_seg(s, j)->start
					 : s->listed_bytes,
				     prev->item, seg->obj->key);
			return;
		}
		return;
	}
}

void cache_stream_trim(struct cache_stream *s)
{
	size_t low = s->count, keep;

	if (!s->trim)
		return;
	for (const struct cache_reader *r = s->readers; r; r = r->next)
		if (r->hold < low)
			low = r->hold;
	for (const struct cache_hold *h = s->holds; h; h = h->next)
		if (h->idx < low)
			low = h->idx;
	if (low < s->base + TRIM_BATCH)
		return;
	if (s->resume_at)
		resume_note(s, low);
	s->base_offset =
	    low < s->count ? cache_stream_seg(s, low)->start : s->listed_bytes;
	for (size_t i = s->base; i < low; i++)
		segment_free(s->cache, cache_stream_seg(s, i));
	keep = s->count - low;
	memmove(s->segs, s->segs + (low - s->base), keep * sizeof(*s->segs));
	s->base = low;
}

struct cache_hold *cache_hold_create(struct cache_stream *s, size_t idx)
{
	struct cache_hold *h = calloc(1, sizeof(*h));

	if (!h) {
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_lock(&s->cache->lock);
	if (idx < s->base) {
		pthread_mutex_unlock(&s->cache->lock);
		free(h);
		errno = ESTALE;
		return NULL;
	}
	h->stream = s;
	h->idx = idx;
	h->next = s->holds;
	if (s->holds)
		s->holds->prev = h;
	s->holds = h;
	pthread_mutex_unlock(&s->cache->lock);
	return h;
}

void cache_hold_move(struct cache_hold *h, size_t idx)
{
	pthread_mutex_lock(&h->stream->cache->lock);
	if (idx > h->idx)
		h->idx = idx;
	pthread_mutex_unlock(&h->stream->cache->lock);
}

void cache_hold_release(struct cache_hold *h)
{
	struct cache_stream *s;

	if (!h)
		return;
	s = h->stream;
	pthread_mutex_lock(&s->cache->lock);
	if (h->prev)
		h->prev->next = h->next;
	else
		s->holds = h->next;
	if (h->next)
		h->next->prev = h->prev;
	pthread_mutex_unlock(&s->cache->lock);
	free(h);
}

size_t cache_stream_count(const struct cache_stream *s)
{
	size_t n;

	pthread_mutex_lock(&s->cache->lock);
	n = s->count;
	pthread_mutex_unlock(&s->cache->lock);
	return n;
}

int cache_stream_append(struct cache_stream *s, const char *key,
			const char *etag, uint64_t size)
{
	struct cache *c = s->cache;
	struct cache_object *obj = NULL;
	int rc = 0;

	/* empty objects add no bytes; this also skips folder markers */
	if (size == 0)
		return 0;
	/* a hostile listing: no such object exists (and framing it would
	 * take segments without end) */
	if (size > CACHE_OBJECT_SIZE_MAX)
		return EFBIG;
	pthread_mutex_lock(&c->lock);
	if (size > (uint64_t)INT64_MAX - stream_end(s))
		rc = EOVERFLOW;
	else
		obj = cache_object_intern(c, s->bucket, key, etag, size);
	if (!rc && !obj)
		rc = ENOMEM;
	pthread_mutex_unlock(&c->lock);
	if (rc)
		return rc;
	/* the owner's code, without the lock */
	if (s->on_listed)
		rc = s->on_listed(s->on_listed_arg, s, obj);
	else
		rc = cache_stream_add_object(s, obj, 0, size);
	pthread_mutex_lock(&c->lock);
	cache_object_unref(c, obj);
	if (!rc)
		s->listed_objects++;
	pthread_mutex_unlock(&c->lock);
	return rc;
}

void cache_stream_keep_resume(struct cache_stream *s, struct cache_resume *at,
			      uint64_t tag)
{
	pthread_mutex_lock(&s->cache->lock);
	s->resume_at = at;
	s->resume_tag = tag;
	pthread_mutex_unlock(&s->cache->lock);
}

int cache_stream_resume(struct cache_stream *s, const struct cache_resume *at,
			uint64_t tag)
{
	struct cache_resume p;
	uint32_t seq = __atomic_load_n(&at->seq, __ATOMIC_ACQUIRE);
	char *after, *last;

	if (seq & 1)
		return ENOENT;
	memcpy(&p, at, sizeof(p));
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (__atomic_load_n(&at->seq, __ATOMIC_RELAXED) != seq ||
	    p.tag != tag || tag == 0 || p.key_len > CACHE_KEY_MAX ||
	    p.key[p.key_len] != '\0' || strlen(p.key) != p.key_len ||
	    strncmp(p.key, s->prefix, strlen(s->prefix)) != 0 ||
	    p.offset > (uint64_t)INT64_MAX || p.index > SIZE_MAX / 2)
		return ENOENT;
	after = strdup(p.key);
	last = strdup(p.key);
	if (!after || !last) {
		free(after);
		free(last);
		return ENOENT;
	}
	pthread_mutex_lock(&s->cache->lock);
	s->base = s->count = (size_t)p.index;
	s->base_offset = s->listed_bytes = p.offset;
	s->listed_objects = p.listed;
	free(s->start_after);
	s->start_after = after;
	free(s->last_key);
	s->last_key = last;
	pthread_mutex_unlock(&s->cache->lock);
	return 0;
}

int cache_stream_start_at(struct cache_stream *s, uint64_t offset)
{
	int rc = 0;

	pthread_mutex_lock(&s->cache->lock);
	if (s->count || s->base || s->bucket || offset > (uint64_t)INT64_MAX)
		rc = EINVAL;
	else if (offset) {
		/* (a base past 0 is what makes reads before it ESTALE) */
		s->base = s->count = 1;
		s->base_offset = s->listed_bytes = offset;
	}
	pthread_mutex_unlock(&s->cache->lock);
	return rc;
}

/* ---- recording a listing ---- */

static void *commit_main(void *arg)
{
	char msg[128];
	int rc = cache_listing_writer_commit(arg);

	if (rc)
		util_warn("a listing could not be saved: %s",
			  util_strerror(rc, msg, sizeof(msg)));
	return NULL;
}

/* The recording abandoned (the thread that takes pages, or the last). */
static void record_drop(struct cache_stream *s)
{
	cache_listing_writer_abort(s->record);
	s->record = NULL;
}

/*
 * page's objects written to the recording, which is committed once the
 * listing is complete (more false).  The commit syncs the file: on a
 * thread of its own, as pages arrive on the engine's.  A recording that
 * fails is dropped: the listing is simply not saved.
 */
static void record_page(struct cache_stream *s,
			const struct store_list_page *page, bool more)
{
	pthread_attr_t attr;
	pthread_t t;
	int rc = 0;

	for (size_t i = 0; s->record && i < page->count && !rc; i++)
		rc = cache_listing_writer_add(
		    s->record, page->objects[i].key, page->objects[i].etag,
		    page->objects[i].size, page->objects[i].mtime);
	if (rc || !s->record) {
		record_drop(s);
		return;
	}
	if (more)
		return;
	if (pthread_attr_init(&attr) == 0) {
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		if (pthread_create(&t, &attr, commit_main, s->record) == 0)
			s->record = NULL;
		pthread_attr_destroy(&attr);
	}
	if (s->record) /* no thread: here, then */
		commit_main(s->record);
	s->record = NULL;
}

/* Adds a page's objects and remembers where to continue (lock not held:
 * the on-listed function runs without it).  All or nothing: on failure the
 * stream is as it was, so the page can be asked for again with the same token.
 */
UNITTEST int take_page(struct cache_stream *s, struct store_list_page *page)
{
	struct cache *c = s->cache;
	uint64_t listed;
	bool more = page->truncated && (page->next_token || s->saved);
	int rc = 0;

	pthread_mutex_lock(&c->lock);
	s->framing = true;
	listed = s->listed_objects;
	pthread_mutex_unlock(&c->lock);
	for (size_t i = 0; i < page->count && !rc; i++)
		rc = cache_stream_append(s, page->objects[i].key,
					 page->objects[i].etag,
					 page->objects[i].size);
	if (!rc)
		record_page(s, page, more);
	pthread_mutex_lock(&c->lock);
	s->framing = false;
	if (rc)
		pending_drop(s);
	else
		rc = pending_publish(s);
	if (rc) {
		s->listed_objects = listed;
		pthread_mutex_unlock(&c->lock);
		/* the page will come again: it must not be written twice */
		record_drop(s);
		return rc;
	}
	if (page->count) {
		char *last = strdup(page->objects[page->count - 1].key);

		if (last) {
			free(s->last_key);
			s->last_key = last;
		} else {
			free(s->prefer_path); /* could not go on from a file */
			s->prefer_path = NULL;
		}
	}
	free(s->next_token);
	s->next_token = NULL;
	if (more && page->next_token) {
		s->next_token = page->next_token;
		page->next_token = NULL;
	} else if (!more) {
		s->complete = true;
	}
	pthread_cond_broadcast(&s->grown);
	pthread_mutex_unlock(&c->lock);
	return 0;
}

int cache_stream_start(struct cache_stream *s, struct store_error *err)
{
	struct cache *c = s->cache;
	struct store_list_page page;
	int rc;

	if (s->saved) {
		memset(err, 0, sizeof(*err));
		rc = cache_listing_file_page(s->saved, c->conf.first_page_keys,
					     &page);
		err->err = rc;
	} else {
		rc = store_list_sync(c->store, s->bucket, s->prefix, NULL,
				     c->conf.first_page_keys, &page, err);
	}
	if (rc)
		return rc;
	rc = take_page(s, &page);
	store_list_page_clear(&page);
	if (rc) {
		memset(err, 0, sizeof(*err));
		err->err = rc;
	}
	return rc;
}

static void ask_page(struct cache_stream *s);

/* How far from the end of a stream the furthest segment a reader's
 * prefetch has asked for may come before more is asked for.  A listing:
 * two pages, so that a page is on its way while the one before is read
 * (a page of S3's takes a round trip or more, and the prefetch reads a
 * thousand small objects in a few of them).  A plan: half a page, what
 * its owner makes at a time. */
static size_t list_ahead(const struct cache_stream *s)
{
	size_t page = s->cache->conf.list_page_keys;

	return s->bucket ? 2 * page : page / 2;
}

/* Whether the listing should go on now: a reader's prefetch is within
 * list_ahead() of its end, and the stream has readers and is not being
 * destroyed (lock held). */
static bool wants_page(const struct cache_stream *s)
{
	return !s->complete && !s->closing && (s->readers || s->holds) &&
	       s->wanted + list_ahead(s) >= s->count;
}

/*
 * The page asked for has come, or failed with rc (lock not held).  A
 * listed page that leaves readers still wanting more asks for the next
 * one at once, from here: the listing does not wait for a reader's next
 * prefetch to notice (a saved listing, read by the reader itself, and a
 * stream that may yet switch to one are left to cache_stream_need()).
 */
static void page_done(struct cache_stream *s, int rc, bool listed)
{
	pthread_mutex_lock(&s->cache->lock);
	s->listing = false;
	s->error = rc;
	if (!rc && listed && !s->saved && !s->prefer_path && wants_page(s))
		ask_page(s);
	pthread_cond_broadcast(&s->grown);
	pthread_mutex_unlock(&s->cache->lock);
}

/* page's objects into s, the page cleared: 0, or an errno (logged). */
static int page_take(struct cache_stream *s, struct store_list_page *page)
{
	char msg[128];
	int rc = take_page(s, page);

	store_list_page_clear(page);
	if (rc)
		util_warn("listing s3://%s/%s: a page could not be taken (%s)",
			  s->bucket, s->prefix,
			  util_strerror(rc, msg, sizeof(msg)));
	return rc;
}

static void page_arrived(void *arg, struct store_list_page *page,
			 const struct store_error *err)
{
	struct cache_stream *s = arg;
	char desc[512];
	int rc = EIO;

	if (!err) /* still listing meanwhile: no other page is asked for */
		rc = page_take(s, page);
	else if (err->err != ECANCELED) {
		s3_error_describe(err, s->bucket, desc, sizeof(desc));
		util_warn("listing s3://%s/%s failed: %s", s->bucket, s->prefix,
			  desc);
	}
	page_done(s, rc, true);
}

/* The next page of a saved listing, read here (lock held, dropped for the
 * read): as the engine's answer would be, without the round trip. */
static void saved_page(struct cache_stream *s)
{
	struct cache *c = s->cache;
	struct store_list_page page;
	char msg[128];
	int rc;

	s->error = 0;
	s->listing = true;
	pthread_mutex_unlock(&c->lock);
	rc = cache_listing_file_page(s->saved, c->conf.list_page_keys, &page);
	if (!rc)
		rc = page_take(s, &page);
	else
		util_warn("the listing of s3://%s/%s saved in a file could not "
			  "be read on: %s",
			  s->bucket, s->prefix,
			  util_strerror(rc, msg, sizeof(msg)));
	page_done(s, rc, false);
	pthread_mutex_lock(&c->lock);
}

/*
 * Whether s goes on from the saved listing it prefers, now there (lock
 * held, dropped while the file is checked): the file is open past the
 * last key s took, and s records nothing more.
 */
static bool saved_switch(struct cache_stream *s)
{
	struct cache *c = s->cache;
	struct cache_listing_file *f = NULL;
	const char *why;
	struct stat st;
	uint64_t mtime_ns;
	int64_t at;
	int rc;

	if (!s->prefer_path || stat(s->prefer_path, &st) != 0)
		return false;
	mtime_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000u +
		   (uint64_t)st.st_mtim.tv_nsec;
	if (st.st_ino == s->prefer_seen_ino &&
	    mtime_ns == s->prefer_seen_mtime_ns)
		return false;
	s->prefer_seen_ino = st.st_ino;
	s->prefer_seen_mtime_ns = mtime_ns;
	s->listing = true; /* no other request meanwhile */
	pthread_mutex_unlock(&c->lock);
	rc = cache_listing_file_open(s->prefer_path, s->bucket, s->prefix,
				     (int64_t)time(NULL), s->prefer_max_age, &f,
				     &at, &why);
	if (!rc && s->last_key)
		rc = cache_listing_file_skip_through(f, s->last_key);
	if (!rc)
		util_info("listing s3://%s/%s: going on from the listing saved "
			  "in %s",
			  s->bucket, s->prefix, s->prefer_path);
	pthread_mutex_lock(&c->lock);
	s->listing = false;
	if (rc) {
		cache_listing_file_close(f);
		return false;
	}
	s->saved = f;
	free(s->prefer_path);
	s->prefer_path = NULL;
	record_drop(s); /* (it would never be complete) */
	return true;
}

/* Asks the store for the next page of a listing stream (lock held,
 * dropped for the call; s->listing set meanwhile, s->error on failure). */
static void ask_page(struct cache_stream *s)
{
	struct cache *c = s->cache;
	char *token = NULL;
	struct store_list req = {
	    .bucket = s->bucket,
	    .prefix = s->prefix,
	    .max_keys = c->conf.list_page_keys,
	    .done = page_arrived,
	    .arg = s,
	};
	int rc;

	/* (the page that answers frees s->next_token: the request has its
	 * own) */
	if (s->next_token) {
		token = strdup(s->next_token);
		if (!token) {
			s->error = ENOMEM;
			return;
		}
	}
	req.token = token;
	if (!token)
		req.start_after = s->start_after;
	s->error = 0;
	s->listing = true; /* no other request meanwhile */
	pthread_mutex_unlock(&c->lock);
	rc = store_list(c->store, &req);
	free(token);
	pthread_mutex_lock(&c->lock);
	if (rc) {
		s->listing = false;
		s->error = ENOMEM;
		pthread_cond_broadcast(&s->grown);
	}
}

/* Bytes of s from segment idx's start to the end (lock held). */
static uint64_t bytes_after(const struct cache_stream *s, size_t idx)
{
	if (idx >= s->count)
		return 0;
	if (idx < s->base)
		idx = s->base;
	return s->listed_bytes - cache_stream_seg(s, idx)->start;
}

uint64_t cache_stream_ahead_bytes(struct cache_stream *s)
{
	uint64_t n;

	pthread_mutex_lock(&s->cache->lock);
	n = bytes_after(s, s->wanted);
	pthread_mutex_unlock(&s->cache->lock);
	return n;
}

void cache_stream_need(struct cache_stream *s, size_t idx)
{
	if (idx > s->wanted)
		s->wanted = idx;
	if (s->complete || s->listing || idx + list_ahead(s) < s->count)
		return;
	if (!s->bucket && bytes_after(s, idx) >= CACHE_REFILL_BYTES)
		return;
	if (!s->bucket) {
		/* the owner's code, without the lock (it may add segments,
		 * which takes it) */
		if (s->refill) {
			pthread_mutex_unlock(&s->cache->lock);
			s->refill(s->refill_arg, s);
			pthread_mutex_lock(&s->cache->lock);
		}
		return;
	}
	if (s->saved || saved_switch(s)) {
		saved_page(s);
		return;
	}
	ask_page(s);
}

int cache_stream_wait(struct cache_stream *s, size_t idx)
{
	bool asked = false;

	while (idx >= s->count) {
		if (s->complete)
			return s->end_error ? s->end_error : ENODATA;
		if (s->error && asked)
			return EIO;
		cache_stream_need(s, idx);
		asked = true;
		if (s->error)
			return EIO;
		/* the lock was dropped for the call out: a plan's owner may
		 * have added or ended it right there, the page asked for may
		 * be in already (with nothing for idx: ask again) */
		if (idx < s->count || s->complete || (s->bucket && !s->listing))
			continue;
		pthread_cond_wait(&s->grown, &s->cache->lock);
	}
	return 0;
}

size_t cache_stream_find(const struct cache_stream *s, uint64_t offset)
{
	size_t lo = s->base, hi = s->count;

	if (offset >= s->listed_bytes)
		return s->count;
	/* first segment whose end is past offset */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct cache_segment *seg = cache_stream_seg(s, mid);

		if (seg->start + seg->size <= offset)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

size_t cache_stream_segment_at(struct cache_stream *s, uint64_t offset)
{
	size_t idx;

	pthread_mutex_lock(&s->cache->lock);
	idx = cache_stream_find(s, offset);
	pthread_mutex_unlock(&s->cache->lock);
	return idx;
}

bool cache_stream_size(struct cache_stream *s, uint64_t *size)
{
	bool complete;

	pthread_mutex_lock(&s->cache->lock);
	/* a stream that ended early has no size worth telling */
	complete = cache_stream_known_size(s, size);
	pthread_mutex_unlock(&s->cache->lock);
	return complete;
}

int cache_stream_list_all(struct cache_stream *s)
{
	struct cache *c = s->cache;
	int rc = 0;

	pthread_mutex_lock(&c->lock);
	while (!s->complete) {
		if (!s->listing) {
			if (s->error) {
				rc = EIO;
				break;
			}
			cache_stream_need(s, s->count);
			if (s->error) {
				rc = EIO;
				break;
			}
			continue; /* (the page may be in already) */
		}
		pthread_cond_wait(&s->grown, &c->lock);
	}
	pthread_mutex_unlock(&c->lock);
	return rc;
}

int cache_stream_segment(struct cache_stream *s, size_t idx,
			 struct cache_segment_info *info)
{
	int rc;

	pthread_mutex_lock(&s->cache->lock);
	rc = idx < s->base ? ESTALE : cache_stream_wait(s, idx);
	if (!rc) {
		const struct cache_segment *seg = cache_stream_seg(s, idx);

		info->start = seg->start;
		info->size = seg->size;
		info->literal = seg->obj == NULL;
		info->obj_offset = seg->obj ? seg->obj_offset : 0;
		info->bucket = info->literal ? NULL : seg->obj->bucket;
		info->key = info->literal ? NULL : seg->obj->key;
		info->etag = info->literal ? NULL : seg->obj->etag;
		info->obj_size = info->literal ? 0 : seg->obj->size;
	}
	pthread_mutex_unlock(&s->cache->lock);
	return rc;
}
