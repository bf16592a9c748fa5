/*
 * util arena: runs of bytes from blocks freed together (see arena.h).
 */
#include "config.h"

#include "util/arena.h"

#include <stdlib.h>

struct util_arena_block {
	struct util_arena_block *next;
	size_t used;
	size_t size;
	unsigned char data[];
};

void util_arena_init(struct util_arena *a, size_t first, size_t max)
{
	a->block = NULL;
	a->first = first;
	a->max = max;
	a->bytes = 0;
}

void *util_arena_take(struct util_arena *a, size_t len)
{
	struct util_arena_block *b = a->block;

	if (!b || b->size - b->used < len) {
		size_t size = b ? b->size * 2 : a->first;

		if (size > a->max)
			size = a->max;
		if (size < len)
			size = len;
		b = malloc(sizeof(*b) + size);
		if (!b)
			return NULL;
		b->used = 0;
		b->size = size;
		b->next = a->block;
		a->block = b;
		a->bytes += sizeof(*b) + size;
	}
	b->used += len;
	return b->data + b->used - len;
}

void util_arena_rewind(struct util_arena *a, const void *p)
{
	struct util_arena_block *b = a->block;
	const unsigned char *at = p;

	if (b && at >= b->data && at < b->data + b->used)
		b->used = (size_t)(at - b->data);
}

void util_arena_free(struct util_arena *a)
{
	while (a->block) {
		struct util_arena_block *next = a->block->next;

		free(a->block);
		a->block = next;
	}
	a->bytes = 0;
}
