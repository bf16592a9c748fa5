/*
 * cache slabs: the buffers of small objects' blocks (see internal.h).
 *
 * A small object's block (up to CACHE_SLAB_MAX bytes) takes a slot of
 * its size class from a slab: 64 KiB mapped at a 64 KiB boundary, its
 * first bytes a header, the rest slots of one class.  Classes go up in
 * quarters of a power of two (64, 80, 96, 112, 128, 160 ... 16 KiB), so a
 * slot wastes a fifth of its bytes at most, and the budget counts the
 * slot's share of its slab, header and tail included (cache_slab_charge).
 * From malloc, the same buffers, freed in the order blocks are
 * evicted and made again among the cache's records, left a fifth of the
 * budget's worth of free holes in the heap that RSS kept and the budget
 * did not see.  Here a freed slot is only ever taken again by a buffer of
 * its class, a slab whose slots are all free is given back (a few are
 * kept for the next ones, their pages given back at the next sweep), and
 * what the slabs hold beyond the slots in use is the free slots that
 * share a page with one in use and the pages left unused since the last
 * two sweeps (below).
 *
 * The records of small objects' blocks, the blocks and their objects
 * (counted in the budget beside them, see block_record()), take slots
 * too: made and freed in the same order as the buffers, among the
 * requests' short-lived allocations, they left the heap's arenas holding
 * megabytes of holes.
 *
 * A slab's free slots are bits in its header, not a list through their
 * own bytes: a free slot is never written, so its pages can be given back.
 * The lowest free slot is taken (the slots in use stay at a slab's front,
 * its free ones behind them).  Every SWEEP_FREES frees a sweep goes over
 * the slabs with a free slot and gives back (madvise MADV_DONTNEED, one
 * call a run of pages) the pages that had no slot in use at the sweep
 * before and have had none since; the header's page stays.  Slabs half
 * full across the thirty-odd classes a dataset of mixed sizes uses held
 * about a megabyte of free slots resident that the budget did not count
 * (a manifest epoch of 100,000 entries, contrib/bench-listing i8).  A
 * page given back as soon as a free left it unused cost a call, and a
 * fault when a slot there was taken again, as often as every few blocks
 * while the budget turns over (4.5 to 6.8 us a block against 0.6 to 0.7,
 * blocks of 64 B to 16 KiB made and freed in order, 16 MiB of them);
 * pages unused over a sweep are the ones not taken again soon.  A slab's
 * pages given back are marked in its header, s->trimmed counts their
 * bytes (a new slab's pages, never touched, included) and a kept empty
 * slab keeps them given back for its next class.
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
#include <unistd.h>

#define SLAB_BYTES  ((size_t)64 << 10)
#define SLAB_HEAD   192 /* header bytes before the first slot */
#define SLAB_SPARE  4	/* empty slabs kept for reuse */
#define CLASS_MIN   64
#define SLOTS_MAX   ((SLAB_BYTES - SLAB_HEAD) / CLASS_MIN)
#define MAP_WORDS   ((SLOTS_MAX + 63) / 64)
#define SWEEP_FREES 2048 /* frees between two sweeps */

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
	unsigned cls;
	unsigned used, slots;
	uint16_t trimmed; /* pages given back, every slot on them free */
	uint16_t idle;	  /* pages with no slot in use since the last sweep */
	bool listed;
	uint64_t free[MAP_WORDS]; /* a bit a slot, set when it is free */
};

_Static_assert(sizeof(struct slab) <= SLAB_HEAD, "slab header too large");
_Static_assert(SLAB_HEAD % 64 == 0, "slots must stay aligned");

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

/* How many slots of size a slab holds. */
static size_t slots_of(size_t size)
{
	return (SLAB_BYTES - SLAB_HEAD) / size;
}

size_t cache_slab_charge(size_t n)
{
	size_t size, slots;

	if (n > CACHE_SLAB_MAX)
		return n;
	class_of(n, &size);
	slots = slots_of(size);
	return (SLAB_BYTES + slots - 1) / slots;
}

/* The system's page size when a slab spans several pages, else 0: then
 * nothing is given back but whole slabs. */
static size_t page_bytes(void)
{
	static size_t page;

	if (!page) {
		long n = sysconf(_SC_PAGESIZE);

		page = n >= 4096 && (size_t)n < SLAB_BYTES ? (size_t)n
							   : SLAB_BYTES;
	}
	return page < SLAB_BYTES ? page : 0;
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

/* The pages after the first (the header's): a mask and their bytes */
static uint16_t pages_after_first(void)
{
	size_t page = page_bytes();

	if (!page)
		return 0;
	return (uint16_t)(((1u << (SLAB_BYTES / page)) - 1) & ~1u);
}

static size_t bytes_after_first(void)
{
	size_t page = page_bytes();

	return page ? SLAB_BYTES - page : 0;
}

/* The bytes of sl's pages given back */
static size_t trimmed_bytes(const struct slab *sl)
{
	return (size_t)__builtin_popcount(sl->trimmed) * page_bytes();
}

/* A slab of class cls with every slot free. */
static struct slab *slab_new(struct cache_slabs *s, unsigned cls)
{
	size_t size = class_size(cls);
	struct slab *sl = s->empty;
	uint16_t trimmed = 0, idle = 0;
	unsigned n;

	if (sl) {
		/* its pages given back stay so, whatever the class was */
		s->empty = sl->next;
		s->nempty--;
		trimmed = sl->trimmed;
		idle = sl->idle;
	} else {
		sl = slab_map();
		if (!sl)
			return NULL;
		s->mapped += SLAB_BYTES;
		/* its pages but the header's were never touched */
		trimmed = pages_after_first();
		s->trimmed += bytes_after_first();
	}
	memset(sl, 0, sizeof(*sl));
	sl->trimmed = trimmed;
	sl->idle = idle;
	sl->cls = cls;
	sl->slots = n = (unsigned)slots_of(size);
	for (unsigned w = 0; w < n / 64; w++)
		sl->free[w] = ~(uint64_t)0;
	if (n % 64)
		sl->free[n / 64] = ((uint64_t)1 << (n % 64)) - 1;
	SLOT_FREED((char *)sl + SLAB_HEAD, (size_t)n * size);
	return sl;
}

/* The pages [first, last] that slot i of sl overlaps. */
static void slot_pages(const struct slab *sl, unsigned i, size_t page,
		       unsigned *first, unsigned *last)
{
	size_t size = class_size(sl->cls), at = SLAB_HEAD + (size_t)i * size;

	*first = (unsigned)(at / page);
	*last = (unsigned)((at + size - 1) / page);
}

/* Whether the slots [lo, hi] of sl are all free. */
static bool slots_free(const struct slab *sl, unsigned lo, unsigned hi)
{
	for (unsigned i = lo; i <= hi;) {
		unsigned w = i / 64, b = i % 64, n = 64 - b;
		uint64_t mask;

		if (n > hi - i + 1)
			n = hi - i + 1;
		mask = (n == 64 ? ~(uint64_t)0 : (((uint64_t)1 << n) - 1)) << b;
		if ((sl->free[w] & mask) != mask)
			return false;
		i += n;
	}
	return true;
}

/* Whether every slot of sl that overlaps page p is free. */
static bool page_free(const struct slab *sl, unsigned p, size_t page)
{
	size_t size = class_size(sl->cls);
	size_t a = (size_t)p * page, b = a + page;
	unsigned lo, hi;

	lo = a <= SLAB_HEAD ? 0 : (unsigned)((a - SLAB_HEAD) / size);
	if (lo >= sl->slots)
		return true; /* the tail no slot reaches */
	hi = (unsigned)((b - 1 - SLAB_HEAD) / size);
	if (hi >= sl->slots)
		hi = sl->slots - 1;
	return slots_free(sl, lo, hi);
}

/* Gives back the pages of sl in mask, one madvise a run of them. */
static void slab_trim(struct cache_slabs *s, struct slab *sl, unsigned mask,
		      size_t page)
{
	while (mask) {
		unsigned from = (unsigned)__builtin_ctz(mask), to = from;

		while (to + 1 < 16 && mask & (1u << (to + 1)))
			to++;
		madvise((char *)sl + from * page, (to - from + 1) * page,
			MADV_DONTNEED);
		for (unsigned p = from; p <= to; p++)
			mask &= ~(1u << p);
		sl->trimmed |=
		    (uint16_t)(((1u << (to + 1)) - 1) & ~((1u << from) - 1));
		s->trimmed += (to - from + 1) * page;
		s->trims++;
	}
}

/* Sweeps sl: see cache_slabs_sweep(). */
static void slab_sweep(struct cache_slabs *s, struct slab *sl, size_t page)
{
	unsigned npages = (unsigned)(SLAB_BYTES / page), unused = 0, give;

	for (unsigned p = 1; p < npages; p++) {
		if (!(sl->trimmed & (1u << p)) && page_free(sl, p, page))
			unused |= 1u << p;
	}
	give = unused & sl->idle;
	slab_trim(s, sl, give, page);
	sl->idle = (uint16_t)(unused & ~give);
}

void cache_slabs_sweep(struct cache_slabs *s)
{
	size_t page = page_bytes();

	s->since_sweep = 0;
	if (!page)
		return;
	for (unsigned cls = 0; cls < CACHE_SLAB_CLASSES; cls++) {
		for (struct slab *sl = s->partial[cls]; sl; sl = sl->next)
			slab_sweep(s, sl, page);
	}
	for (struct slab *sl = s->empty; sl; sl = sl->next)
		slab_sweep(s, sl, page);
}

void *cache_slab_alloc(struct cache_slabs *s, size_t cap)
{
	size_t size;
	unsigned cls = class_of(cap, &size);
	struct slab *sl = s->partial[cls];
	unsigned w, i;
	char *slot;

	if (!sl) {
		sl = slab_new(s, cls);
		if (!sl)
			return NULL;
		list_add(s, sl);
	}
	/* the lowest free slot: a slab's slots in use stay at its front,
	 * its free pages behind them */
	for (w = 0; !sl->free[w]; w++)
		;
	i = w * 64 + (unsigned)__builtin_ctzll(sl->free[w]);
	sl->free[w] &= ~((uint64_t)1 << (i % 64));
	slot = (char *)sl + SLAB_HEAD + (size_t)i * size;
	if (sl->trimmed | sl->idle) {
		size_t page = page_bytes();
		unsigned first, last;

		slot_pages(sl, i, page, &first, &last);
		for (unsigned p = first; p <= last; p++) {
			if (sl->trimmed & (1u << p)) {
				sl->trimmed &= (uint16_t) ~(1u << p);
				s->trimmed -= page;
			}
			sl->idle &= (uint16_t) ~(1u << p);
		}
	}
	SLOT_TAKEN(slot, size);
	if (++sl->used == sl->slots)
		list_remove(s, sl);
	return slot;
}

void cache_slab_free(struct cache_slabs *s, void *p)
{
	struct slab *sl =
	    (struct slab *)((uintptr_t)p & ~(uintptr_t)(SLAB_BYTES - 1));
	size_t size = class_size(sl->cls);
	unsigned i = (unsigned)(((char *)p - (char *)sl - SLAB_HEAD) / size);

	if (++s->since_sweep >= SWEEP_FREES)
		cache_slabs_sweep(s);
	sl->free[i / 64] |= (uint64_t)1 << (i % 64);
	SLOT_FREED(p, size);
	sl->used--;
	if (sl->used == 0) {
		if (sl->listed)
			list_remove(s, sl);
		if (s->nempty < SLAB_SPARE) {
			/* kept: its pages go back at the next sweep unless a
			 * class takes it first (a slab of a few large slots
			 * empties every few blocks, and is soon taken) */
			sl->idle = pages_after_first() & ~sl->trimmed;
			sl->next = s->empty;
			s->empty = sl;
			s->nempty++;
		} else {
			SLOT_TAKEN(sl,
				   SLAB_BYTES); /* (the addresses are reused) */
			s->trimmed -= trimmed_bytes(sl);
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
		s->trimmed -= trimmed_bytes(sl);
		munmap(sl, SLAB_BYTES);
		s->mapped -= SLAB_BYTES;
	}
	s->nempty = 0;
}
