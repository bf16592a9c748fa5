/*
 * channel stages: what the byte stages (gunzip, conversion) share: the
 * reference-counted output buffers they hand to readers through views
 * (the count guarded by the lock of the stage that owns the chunk), and
 * how many worker threads they start.
 */
#include "config.h"

#include "channel/internal.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
