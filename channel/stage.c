/*
 * channel stages: what every stack has (channel/stage.h): its bottom stage
 * that reads the stream through a cache reader, and its teardown; and what
 * the stages that make bytes (gunzip, conversion) share: the
 * reference-counted output buffers they hand to readers through views (the
 * count guarded by the lock of the stage that owns the chunk), and how
 * many worker threads they start.
 */
#include "config.h"

#include "channel/internal.h"
#include "channel/object_counts.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void channel_stack_destroy(struct channel_stage *top)
{
	while (top) {
		struct channel_stage *below = top->below;

		top->ops->destroy(top);
		top = below;
	}
}

/* ---- the cache stage: the stream's bytes through a cache reader ---- */

struct cache_stage {
	struct channel_stage stage; /* first */
	struct cache *cache;
	struct cache_stream *stream;
	struct cache_reader *reader;
	uint64_t first_read; /* where reads begin (the reader may be before) */
	/* reads with origin: the segment being read */
	size_t seg;
	bool seg_open;
	struct cache_segment_info seg_info;
};

/* The next bytes of the segment at the position, up to its end, so that a
 * view holds one object's bytes (what a conversion reads). */
static int read_object(struct cache_stage *cs, size_t size,
		       struct channel_view *view, struct channel_origin *origin)
{
	uint64_t pos = cache_reader_position(cs->reader), end;
	int rc;

	if (pos < cs->first_read)
		pos = cs->first_read;
	for (;;) {
		if (cs->seg_open &&
		    pos < cs->seg_info.start + cs->seg_info.size)
			break;
		if (cs->seg_open)
			cs->seg++;
		rc = cache_stream_segment(cs->stream, cs->seg, &cs->seg_info);
		if (rc == ENODATA)
			return 0; /* the end */
		if (rc)
			return EIO;
		cs->seg_open = true;
	}
	end = cs->seg_info.start + cs->seg_info.size;
	if (size > end - pos)
		size = (size_t)(end - pos);
	origin->index = cs->seg;
	origin->bucket = cs->seg_info.literal ? NULL : cs->seg_info.bucket;
	origin->key = cs->seg_info.literal ? NULL : cs->seg_info.key;
	if (!object_counts_id(&cs->seg_info, &origin->object_id))
		origin->object_id = 0;
	rc = cache_reader_read(cs->reader, pos, size, &view->cache);
	if (!rc && view->cache.bytes == 0)
		rc = EIO; /* the stream is shorter than its segments */
	if (!rc)
		cs->first_read = 0; /* (the reader's position says) */
	return rc;
}

static int cache_stage_read(struct channel_stage *st, uint64_t offset,
			    size_t size, struct channel_view *view,
			    struct channel_origin *origin)
{
	struct cache_stage *cs = (struct cache_stage *)st;
	int rc;

	if (origin) {
		rc = read_object(cs, size, view, origin);
	} else {
		rc = cache_reader_read(cs->reader, offset, size, &view->cache);
		if (!rc)
			cs->first_read = 0;
	}
	view->iov = view->cache.iov;
	view->count = view->cache.count;
	view->bytes = view->cache.bytes;
	return rc;
}

static void cache_stage_release(struct channel_stage *st,
				struct channel_view *view)
{
	struct cache_stage *cs = (struct cache_stage *)st;

	cache_view_release(cs->cache, &view->cache);
	view->count = 0;
	view->bytes = 0;
}

static uint64_t cache_stage_position(struct channel_stage *st)
{
	struct cache_stage *cs = (struct cache_stage *)st;
	uint64_t pos = cache_reader_position(cs->reader);

	return pos < cs->first_read ? cs->first_read : pos;
}

static void cache_stage_destroy(struct channel_stage *st)
{
	struct cache_stage *cs = (struct cache_stage *)st;

	cache_reader_destroy(cs->reader);
	free(cs);
}

static const struct channel_stage_ops cache_stage_ops = {
    .read = cache_stage_read,
    .release = cache_stage_release,
    .position = cache_stage_position,
    .destroy = cache_stage_destroy,
};

struct channel_stage *channel_cache_stage_create(struct cache *c,
						 struct cache_stream *s,
						 uint64_t first_read)
{
	struct cache_stage *cs = calloc(1, sizeof(*cs));
	int rc;

	if (!cs) {
		errno = ENOMEM;
		return NULL;
	}
	cs->reader = cache_reader_create_before(s, first_read);
	if (!cs->reader) {
		rc = errno;
		free(cs);
		errno = rc;
		return NULL;
	}
	cs->stage.ops = &cache_stage_ops;
	cs->cache = c;
	cs->stream = s;
	cs->first_read = first_read;
	/* (reads with origin begin at the segment of the first read) */
	cs->seg = cache_stream_segment_at(s, first_read);
	return &cs->stage;
}

bool channel_stage_is_cache(const struct channel_stage *st)
{
	return st->ops == &cache_stage_ops;
}

/* ---- chunks ---- */

struct channel_chunk *channel_chunk_adopt(char *data, size_t cap)
{
	struct channel_chunk *c = calloc(1, sizeof(*c));

	if (!c) {
		free(data);
		return NULL;
	}
	c->data = data;
	c->cap = cap;
	c->refs = 1;
	return c;
}

struct channel_chunk *channel_chunk_copy(const void *bytes, size_t len)
{
	char *data = malloc(len ? len : 1);

	if (!data)
		return NULL;
	memcpy(data, bytes, len);
	return channel_chunk_adopt(data, len);
}

void channel_chunk_unref(struct cache *c, struct channel_chunk *chunk)
{
	if (--chunk->refs > 0)
		return;
	if (chunk->from_cache)
		cache_buffer_put(c, chunk->data);
	else if (chunk->recycle)
		chunk->recycle(chunk->recycle_arg, chunk->data, chunk->cap);
	else
		free(chunk->data);
	free(chunk);
}

unsigned channel_stage_threads(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n < 1 ? 1 : n > 8 ? 8 : (unsigned)n;
}
