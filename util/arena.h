/*
 * util arena: bytes handed out one run after another from blocks that are
 * freed together (util/arena.c).  For tables of many small strings (a
 * catalog's keys, a manifest's entries): no allocation of their own, and
 * nothing handed out ever moves, so pointers into an arena stay valid
 * until it is freed.  Blocks grow from first bytes to max, doubling; a run
 * longer than max gets a block of its own size.  Not locked.
 */
#ifndef S3PIPE_UTIL_ARENA_H
#define S3PIPE_UTIL_ARENA_H

#include <stddef.h>
#include <stdint.h>

struct util_arena_block;

struct util_arena {
	struct util_arena_block *block; /* being filled; older ones behind */
	size_t first;
	size_t max;
	uint64_t bytes; /* held, headers included */
};

/* An empty arena (no memory until the first take). */
void util_arena_init(struct util_arena *a, size_t first, size_t max);
/* len bytes (len > 0): NULL on ENOMEM. */
void *util_arena_take(struct util_arena *a, size_t len);
/* Gives back every byte taken from p on, when p lies in the block being
 * filled (the usual case for what was just taken); else nothing. */
void util_arena_rewind(struct util_arena *a, const void *p);
/* Frees every block; the arena is empty again and may be used. */
void util_arena_free(struct util_arena *a);

#endif
