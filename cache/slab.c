/*
 * cache slabs: the buffers of small objects' blocks (see internal.h).
 *
 * A small object's block (up to CACHE_SLAB_MAX bytes) takes a slot of
 * its size class from a slab: 64 KiB mapped at a 64 KiB boundary, its
 * first bytes a header, the rest slots of one class.  Classes go up in
 * quarters of a power of two (64, 80, 96, 112, 128, 160 ... 16 KiB), so a
 * slot wastes a fifth of its bytes at most, and the budget counts the
 * slot.  From malloc, the same buffers, freed in the order blocks are
 * evicted and made again among the cache's records, left a fifth of the
 * budget's worth of free holes in the heap that RSS kept and the budget
 * did not see.  Here a freed slot is only ever taken again by a buffer of
 * its class, a slab whose slots are all free is given back (a few are
 * kept for the next ones), and what the slabs hold beyond the slots in
 * use is their free slots alone.
 *
 * The records of small objects' blocks, the blocks and their objects
 * (counted in the budget beside them, see block_record()), take slots
 * too: made and freed in the same order as the buffers, among the
 * requests' short-lived allocations, they left the heap's arenas holding
 * megabytes of holes.
 *
 * The slab of a slot is found by rounding its address down.  A class's
 * slabs with a free slot are on a list, the one a slot was last freed to
 * first.  Everything here runs under the cache's lock.  Under
 * AddressSanitizer a free slot is poisoned, as malloc's would be.
 */
#include "config.h"

#include "cache/internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define SLAB_BYTES ((size_t)64 << 10)
#define SLAB_HEAD  64 /* header bytes before the first slot */
#define SLAB_SPARE 4  /* empty slabs kept for reuse */
#define CLASS_MIN  64

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define SLOT_FREED(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define SLOT_TAKEN(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define SLOT_FREED(p, n) ((void)(p), (void)(n))
#define SLOT_TAKEN(p, n) ((void)(p), (void)(n))
#endif

struct slab {
	struct slab *prev, *next; /* on its class's list while it has room */
	void *free;		  /* free slots, linked through their bytes */
	unsigned cls;
	unsigned used, slots;
	bool listed;
};

_Static_assert(sizeof(struct slab) <= SLAB_HEAD, "slab header too large");

/* The class of len bytes (len <= CACHE_SLAB_MAX) and its slot size. */
static unsigned class_of(size_t len, size_t *size)
{
	size_t base = CLASS_MIN;
	unsigned cls = 0;

	if (len <= CLASS_MIN) {
		*size = CLASS_MIN;
		return 0;
	}
	while (base * 2 < len) {
		base *= 2;
		cls += 4;
	}
	/* base < len <= 2 * base: quarters of base above it */
	for (unsigned q = 1; q <= 4; q++) {
		if (len <= base + q * (base / 4)) {
			*size = base + q * (base / 4);
			return cls + q;
		}
	}
	*size = 2 * base; /* (not reached) */
	return cls + 4;
}

size_t cache_slab_cap(size_t len)
{
	size_t size;

	if (len > CACHE_SLAB_MAX)
		return 0;
	class_of(len, &size);
	return size;
}

static size_t class_size(unsigned cls)
{
	size_t base = CLASS_MIN << (cls / 4);

	return cls % 4 ? base + (cls % 4) * (base / 4) : base;
}

static void list_add(struct cache_slabs *s, struct slab *sl)
{
	sl->prev = NULL;
	sl->next = s->partial[sl->cls];
	if (sl->next)
		sl->next->prev = sl;
	s->partial[sl->cls] = sl;
	sl->listed = true;
}

static void list_remove(struct cache_slabs *s, struct slab *sl)
{
	if (sl->prev)
		sl->prev->next = sl->next;
	else
		s->partial[sl->cls] = sl->next;
	if (sl->next)
		sl->next->prev = sl->prev;
	sl->prev = sl->next = NULL;
	sl->listed = false;
}

/* 64 KiB at a 64 KiB boundary: NULL when there is no memory. */
static void *slab_map(void)
{
	char *p = mmap(NULL, 2 * SLAB_BYTES, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uintptr_t at, end;

	if (p == MAP_FAILED)
		return NULL;
	at = ((uintptr_t)p + SLAB_BYTES - 1) & ~(uintptr_t)(SLAB_BYTES - 1);
	end = (uintptr_t)p + 2 * SLAB_BYTES;
	if (at > (uintptr_t)p)
		munmap(p, at - (uintptr_t)p);
	if (end > at + SLAB_BYTES)
		munmap((void *)(at + SLAB_BYTES), end - at - SLAB_BYTES);
	return (void *)at;
}

/* A slab of class cls with every slot free. */
static struct slab *slab_new(struct cache_slabs *s, unsigned cls)
{
	size_t size = class_size(cls);
	struct slab *sl = s->empty;
	char *slot;

	if (sl) {
		s->empty = sl->next;
		s->nempty--;
	} else {
		sl = slab_map();
		if (!sl)
			return NULL;
		s->mapped += SLAB_BYTES;
	}
	memset(sl, 0, sizeof(*sl));
	sl->cls = cls;
	sl->slots = (unsigned)((SLAB_BYTES - SLAB_HEAD) / size);
	/* the free list in address order: slots are taken front to back */
	slot = (char *)sl + SLAB_HEAD + (size_t)(sl->slots - 1) * size;
	for (unsigned i = 0; i < sl->slots; i++, slot -= size) {
		SLOT_TAKEN(slot, size);
		*(void **)slot = sl->free;
		sl->free = slot;
		SLOT_FREED(slot, size);
	}
	return sl;
}

void *cache_slab_alloc(struct cache_slabs *s, size_t cap)
{
	size_t size;
	unsigned cls = class_of(cap, &size);
	struct slab *sl = s->partial[cls];
	void *slot;

	if (!sl) {
		sl = slab_new(s, cls);
		if (!sl)
			return NULL;
		list_add(s, sl);
	}
	slot = sl->free;
	SLOT_TAKEN(slot, size);
	sl->free = *(void **)slot;
	if (++sl->used == sl->slots)
		list_remove(s, sl);
	return slot;
}

void cache_slab_free(struct cache_slabs *s, void *p)
{
	struct slab *sl =
	    (struct slab *)((uintptr_t)p & ~(uintptr_t)(SLAB_BYTES - 1));

	*(void **)p = sl->free;
	sl->free = p;
	SLOT_FREED(p, class_size(sl->cls));
	sl->used--;
	if (sl->used == 0) {
		if (sl->listed)
			list_remove(s, sl);
		if (s->nempty < SLAB_SPARE) {
			sl->next = s->empty;
			s->empty = sl;
			s->nempty++;
		} else {
			SLOT_TAKEN(sl,
				   SLAB_BYTES); /* (the addresses are reused) */
			munmap(sl, SLAB_BYTES);
			s->mapped -= SLAB_BYTES;
		}
		return;
	}
	if (!sl->listed)
		list_add(s, sl);
}

void *cache_record_alloc(struct cache_slabs *s, size_t n)
{
	void *p = n <= CACHE_SLAB_MAX ? cache_slab_alloc(s, cache_slab_cap(n))
				      : malloc(n);

	return p ? memset(p, 0, n) : NULL;
}

void cache_record_free(struct cache_slabs *s, void *p, size_t n)
{
	if (p && n <= CACHE_SLAB_MAX)
		cache_slab_free(s, p);
	else
		free(p);
}

void cache_slabs_destroy(struct cache_slabs *s)
{
	while (s->empty) {
		struct slab *sl = s->empty;

		s->empty = sl->next;
		SLOT_TAKEN(sl, SLAB_BYTES);
		munmap(sl, SLAB_BYTES);
		s->mapped -= SLAB_BYTES;
	}
	s->nempty = 0;
}
