/*
 * cache blocks: the table, the LRU lists, the kept set, the byte budget,
 * the fetches (one store GET fills a run of blocks) and the pool of
 * reusable buffers (faulted in before the first reader).
 *
 * See cache/internal.h for the state table and the eviction policy: idle
 * blocks are on four lists (SPENT, TRAILING, AHEAD, KEPT) taken in that
 * order; prefetch takes only the first two.  The kept set is the
 * scan-resistant part: the first blocks admitted, up to kept_quota, which
 * only a demand read may evict, and which become ordinary once they go
 * unused for two passes of the largest stream.  Blocks are keyed by
 * (object, block index): an object is one interned (bucket, key, ETag,
 * size), so a block is never served for another version of an object and
 * is found by every stream that names this one.  A block holds a reference
 * on its object.  Pieces (a small read's blocks, cache/internal.h) are
 * blocks like the others, of piece_size bytes, under keys of their own.
 */
#include "config.h"

#include "cache/internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "util/util.h"

size_t cache_block_len(const struct cache *c, const struct cache_object *obj,
		       uint64_t index)
{
	uint64_t unit =
	    index & CACHE_PIECE_BIT ? c->piece_size : c->conf.block_size;
	uint64_t left = obj->size - cache_block_offset(c, index);

	return (size_t)(left < unit ? left : unit);
}

static size_t hash_key(size_t nbuckets, const struct cache_object *obj,
		       uint64_t index)
{
	uint64_t h = (uint64_t)(uintptr_t)obj * 0x9E3779B97F4A7C15ull;

	h ^= index + 0x632BE59BD9B4E019ull + (h << 6) + (h >> 2);
	h ^= h >> 29;
	return (size_t)h & (nbuckets - 1);
}

static void table_grow(struct cache *c)
{
	size_t n = c->nbuckets * 2;
	struct cache_block **t = calloc(n, sizeof(*t));

	if (!t)
		return; /* keep the longer chains */
	for (size_t i = 0; i < c->nbuckets; i++) {
		struct cache_block *b = c->table[i];

		while (b) {
			struct cache_block *next = b->hash_next;
			size_t h = hash_key(n, b->obj, b->index);

			b->hash_next = t[h];
			t[h] = b;
			b = next;
		}
	}
	free(c->table);
	c->table = t;
	c->nbuckets = n;
}

static void table_remove(struct cache *c, struct cache_block *b)
{
	struct cache_block **pp =
	    &c->table[hash_key(c->nbuckets, b->obj, b->index)];

	while (*pp && *pp != b)
		pp = &(*pp)->hash_next;
	if (*pp) {
		*pp = b->hash_next;
		c->nblocks--;
	}
	b->hash_next = NULL;
}

struct cache_block *cache_block_lookup(struct cache *c,
				       const struct cache_object *obj,
				       uint64_t index)
{
	struct cache_block *b = c->table[hash_key(c->nbuckets, obj, index)];

	while (b && !(b->obj == obj && b->index == index))
		b = b->hash_next;
	return b;
}

/* Which list an idle block belongs on (see the table in internal.h). */
UNITTEST enum cache_lru block_class(const struct cache_block *b)
{
	if (b->kept)
		return LRU_KEPT;
	if (!b->consumed)
		return LRU_AHEAD;
	return b->trailing ? LRU_TRAILING : LRU_SPENT;
}

static void lru_unlink(struct cache *c, struct cache_block *b)
{
	struct cache_lru_list *l = &c->lru[b->lru];

	if (!b->in_lru)
		return;
	if (b->lru_prev)
		b->lru_prev->lru_next = b->lru_next;
	else
		l->hot = b->lru_next;
	if (b->lru_next)
		b->lru_next->lru_prev = b->lru_prev;
	else
		l->cold = b->lru_prev;
	b->lru_prev = b->lru_next = NULL;
	l->bytes -= b->charge;
	b->in_lru = false;
}

/*
 * Unread and kept blocks go in at the hot end (least recently used goes
 * first); consumed ones at the cold end, so the one a reader passed last
 * goes first: a fast reader then evicts what it has just passed, and the
 * blocks that slower readers behind it are about to reach stay (evicting
 * the oldest would flush exactly those, as plain LRU does to a scan).
 */
static void lru_insert(struct cache *c, struct cache_block *b)
{
	enum cache_lru k = block_class(b);
	struct cache_lru_list *l = &c->lru[k];

	if (k == LRU_SPENT || k == LRU_TRAILING) {
		b->lru_next = NULL;
		b->lru_prev = l->cold;
		if (l->cold)
			l->cold->lru_next = b;
		else
			l->hot = b;
		l->cold = b;
	} else {
		b->lru_prev = NULL;
		b->lru_next = l->hot;
		if (l->hot)
			l->hot->lru_prev = b;
		else
			l->cold = b;
		l->hot = b;
	}
	b->lru = (unsigned char)k;
	b->used_at = c->admitted;
	l->bytes += b->charge;
	b->in_lru = true;
	pthread_cond_broadcast(&c->memory);
}

static bool buffer_mapped(size_t cap);

static void buffer_put(struct cache *c, char *data, size_t cap)
{
	if (cap == c->conf.block_size && c->pool_count < c->pool_max) {
		c->pool[c->pool_count++] = data;
	} else if (buffer_mapped(cap) && c->nspare < CACHE_SPARE_MAX) {
		c->spare[c->nspare] = data;
		c->spare_cap[c->nspare++] = cap;
		c->spare_bytes += cap;
	} else {
		cache_buffer_free(c, data, cap);
		c->stats.used_bytes -= cap;
	}
	pthread_cond_broadcast(&c->memory);
}

void cache_block_free(struct cache *c, struct cache_block *b)
{
	if (b->kept)
		c->kept_bytes -= b->charge;
	buffer_put(c, b->data, b->cap);
	c->stats.used_bytes -= b->charge - b->cap;
	cache_object_unref(c, b->obj);
	pthread_cond_destroy(&b->ready);
	cache_record_free(&c->slabs, b, sizeof(*b));
}

/* The first list an admission may not evict from: AHEAD for prefetch
 * (only SPENT and TRAILING before it), none for demand. */
static enum cache_lru evictable_end(bool demand)
{
	return demand ? LRU_LISTS : LRU_AHEAD;
}

/* Evicts the first idle block the rules allow, in list order.  True if
 * one went. */
UNITTEST bool evict_one(struct cache *c, bool demand)
{
	for (int k = 0; k < (int)evictable_end(demand); k++) {
		struct cache_block *b = c->lru[k].cold;

		if (!b)
			continue;
		lru_unlink(c, b);
		table_remove(c, b);
		c->stats.evictions++;
		cache_block_free(c, b);
		return true;
	}
	return false;
}

/* Admitted bytes after which an unused kept block goes stale: two passes
 * of the largest stream, and at least two budgets. */
UNITTEST uint64_t kept_horizon(const struct cache *c)
{
	uint64_t pass = c->largest_stream > c->conf.budget_bytes
			    ? c->largest_stream
			    : c->conf.budget_bytes;

	return 2 * pass;
}

/* Kept blocks not used within the horizon become ordinary (the least
 * recently used is at the cold end of the kept list). */
UNITTEST void kept_expire(struct cache *c)
{
	const uint64_t horizon = kept_horizon(c);
	struct cache_block *b;

	while ((b = c->lru[LRU_KEPT].cold) &&
	       c->admitted - b->used_at > horizon) {
		lru_unlink(c, b);
		b->kept = false;
		c->kept_bytes -= b->charge;
		c->stats.kept_stale++;
		lru_insert(c, b);
	}
}

/* Buffers from 2 MiB are 2 MiB aligned; from BUFFER_MAP_MIN they are
 * mappings of their own; up to CACHE_SLAB_MAX slots of a slab
 * (slab.c); between the two they come from malloc. */
#define BUFFER_ALIGNED (2u << 20)
#define BUFFER_MAP_MIN (64u << 10)
#define PAGE_BYTES     4096u

/*
 * Whole blocks and near-whole ones get a pooled buffer; small objects get
 * what they need, in whole pages from BUFFER_MAP_MIN on (a mapping of
 * their own: the budget counts what it takes).
 */
UNITTEST size_t buffer_cap(const struct cache *c, size_t len)
{
	if (len > c->conf.block_size / 2)
		return c->conf.block_size;
	if (len >= BUFFER_MAP_MIN)
		return (len + PAGE_BYTES - 1) / PAGE_BYTES * PAGE_BYTES;
	if (len <= CACHE_SLAB_MAX)
		return cache_slab_cap(len);
	return len;
}

static bool buffer_slab(const struct cache *c, size_t cap)
{
	return cap <= CACHE_SLAB_MAX && cap != c->conf.block_size;
}

/*
 * Large buffers are 2 MiB aligned, in ordinary pages: huge pages
 * (MADV_HUGEPAGE) took a sixth of the faults but, on a virtual machine
 * that hands free memory back to its host, 0.79-0.95 s to fault in 256 MiB
 * after a pause, against 0.12-0.20 s in 4 KiB pages (three pairs, 15 s
 * apart); filling them again cost the same either way.
 * Small objects' buffers from BUFFER_MAP_MIN are mappings of their own,
 * given back whole when freed: from the heap, buffers of one size freed
 * in LRU order and made again among smaller allocations fragment it, and
 * RSS grew a quarter past the budget (FastFile, 100 KiB files).
 */
static char *buffer_alloc(struct cache *c, size_t cap)
{
	void *p = NULL;

	if (buffer_slab(c, cap))
		return cache_slab_alloc(&c->slabs, cap);
	if (cap >= BUFFER_MAP_MIN && cap < BUFFER_ALIGNED) {
		p = mmap(NULL, cap, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		return p == MAP_FAILED ? NULL : p;
	}
	if (cap < BUFFER_ALIGNED)
		return malloc(cap ? cap : 1);
	if (posix_memalign(&p, BUFFER_ALIGNED, cap) != 0)
		return NULL;
	return p;
}

static bool buffer_mapped(size_t cap)
{
	return cap >= BUFFER_MAP_MIN && cap < BUFFER_ALIGNED;
}

void cache_buffer_free(struct cache *c, char *data, size_t cap)
{
	if (data && buffer_slab(c, cap))
		cache_slab_free(&c->slabs, data);
	else if (data && buffer_mapped(cap))
		munmap(data, cap);
	else
		free(data);
}

/*
 * A spare buffer of exactly cap bytes, or NULL.  Objects of one size are
 * common (a dataset of 100 KiB images): a mapping freed by one is reused
 * by the next, without a munmap, a mmap and a page fault a page.
 */
static char *spare_take(struct cache *c, size_t cap)
{
	for (unsigned i = c->nspare; i-- > 0;) {
		char *p = c->spare[i];

		if (c->spare_cap[i] != cap)
			continue;
		c->nspare--;
		c->spare[i] = c->spare[c->nspare];
		c->spare_cap[i] = c->spare_cap[c->nspare];
		c->spare_bytes -= cap;
		return p;
	}
	return NULL;
}

/* Gives the oldest spare buffer back to the system: false when none. */
static bool spare_drop(struct cache *c)
{
	if (!c->nspare)
		return false;
	cache_buffer_free(c, c->spare[0], c->spare_cap[0]);
	c->stats.used_bytes -= c->spare_cap[0];
	c->spare_bytes -= c->spare_cap[0];
	c->nspare--;
	memmove(c->spare, c->spare + 1, c->nspare * sizeof(*c->spare));
	memmove(c->spare_cap, c->spare_cap + 1,
		c->nspare * sizeof(*c->spare_cap));
	return true;
}

void cache_spares_free(struct cache *c)
{
	while (spare_drop(c))
		;
}

/*
 * A buffer of cap bytes within the budget, with record bytes more counted
 * there (a small block's record, block_record()), evicting as allowed.
 */
static char *buffer_get(struct cache *c, size_t cap, size_t record,
			enum cache_admit admit)
{
	bool demand = admit == CACHE_ADMIT_DEMAND;

	for (;;) {
		struct cache_block *cold = c->lru[LRU_SPENT].cold;
		bool record_fits =
		    c->stats.used_bytes + record <= c->conf.budget_bytes;
		char *p = NULL;

		if (cap == c->conf.block_size && c->pool_count && record_fits)
			p = c->pool[--c->pool_count];
		else if (buffer_mapped(cap) && record_fits)
			p = spare_take(c, cap);
		if (p) {
			c->stats.used_bytes += record;
			return p;
		}
		if (admit == CACHE_ADMIT_RECYCLE && cold &&
		    (cap < c->conf.block_size || cold->cap == cap)) {
			/* one block makes room for one block */
			evict_one(c, false);
			admit = CACHE_ADMIT_PREFETCH;
			continue;
		}
		if (c->stats.used_bytes + cap + record <=
		    c->conf.budget_bytes) {
			p = buffer_alloc(c, cap);
			if (p) {
				c->stats.used_bytes += cap + record;
				if (c->stats.used_bytes > c->stats.peak_bytes)
					c->stats.peak_bytes =
					    c->stats.used_bytes;
			}
			return p;
		}
		if (c->pool_count) {
			cache_buffer_free(c, c->pool[--c->pool_count],
					  c->conf.block_size);
			c->stats.used_bytes -= c->conf.block_size;
			continue;
		}
		if (spare_drop(c))
			continue;
		if (!evict_one(c, demand))
			return NULL;
	}
}

bool cache_block_room_run(struct cache *c, uint64_t bytes)
{
	uint64_t avail = c->conf.budget_bytes - c->stats.used_bytes +
			 c->pool_count * c->conf.block_size + c->spare_bytes +
			 c->lru[LRU_SPENT].bytes + c->lru[LRU_TRAILING].bytes;

	return bytes <= avail;
}

/*
 * What a small object's block costs beyond its buffer: the block, its
 * slot in the table and the object's record, which the block keeps (the
 * reader that listed it has moved on).  A budget full of objects of a few
 * KiB holds thousands of them, a seventh of their bytes again at 2 KiB:
 * counted here, the budget bounds them.  Records and slab buffers count
 * their slots' shares of their slabs (cache_slab_charge: a 4 KiB slot
 * takes 4,370 bytes of its slab, whose last 3,904 no slot fills): left
 * out, the slabs' headers and tails were a quarter of a megabyte past a
 * 16 MiB budget of 2 KiB objects.  A whole block's, a few hundred bytes
 * in megabytes, is left out.
 */
static size_t block_record(const struct cache *c,
			   const struct cache_object *obj, size_t cap)
{
	size_t slab_share = 0;

	if (cap == c->conf.block_size)
		return 0;
	if (buffer_slab(c, cap)) /* the slot's slab takes more than cap */
		slab_share = cache_slab_charge(cap) - cap;
	return slab_share + cache_slab_charge(sizeof(struct cache_block)) +
	       2 * sizeof(struct cache_block *) +
	       (obj ? cache_slab_charge(cache_object_bytes(obj)) : 0);
}

bool cache_block_room(struct cache *c, const struct cache_object *obj,
		      size_t len, bool demand)
{
	uint64_t avail = c->conf.budget_bytes - c->stats.used_bytes +
			 c->pool_count * c->conf.block_size + c->spare_bytes;
	size_t cap = buffer_cap(c, len);

	len = cap + block_record(c, obj, cap);
	for (int k = 0; k < (int)evictable_end(demand) && len > avail; k++)
		avail += c->lru[k].bytes;
	return len <= avail;
}

struct cache_block *cache_block_create(struct cache *c,
				       struct cache_object *obj, uint64_t index,
				       size_t len, enum cache_admit admit)
{
	bool demand = admit == CACHE_ADMIT_DEMAND;
	struct cache_block *b;
	size_t h, cap, record;

	kept_expire(c);
	if (len > c->conf.block_size)
		return NULL;
	cap = buffer_cap(c, len);
	record = block_record(c, obj, cap);
	if (cap + record > c->conf.budget_bytes ||
	    !cache_block_room(c, obj, len, demand))
		return NULL;
	b = cache_record_alloc(&c->slabs, sizeof(*b));
	if (!b)
		return NULL;
	b->cap = cap;
	b->charge = cap + record;
	b->data = buffer_get(c, cap, record, admit);
	if (!b->data) {
		cache_record_free(&c->slabs, b, sizeof(*b));
		return NULL;
	}
	b->cache = c;
	b->obj = obj;
	cache_object_ref(obj);
	b->index = index;
	b->len = len;
	b->state = BLOCK_FETCHING;
	/* the kept set takes what comes first, up to its quota */
	if (c->kept_bytes + b->charge <= c->kept_quota) {
		b->kept = true;
		c->kept_bytes += b->charge;
	}
	c->admitted += b->cap;
	b->used_at = c->admitted;
	pthread_cond_init(&b->ready, NULL);
	if (c->nblocks >= c->nbuckets * 2)
		table_grow(c);
	h = hash_key(c->nbuckets, obj, index);
	b->hash_next = c->table[h];
	c->table[h] = b;
	c->nblocks++;
	return b;
}

void cache_block_pin(struct cache_block *b)
{
	lru_unlink(b->cache, b);
	b->pins++;
	b->used_at = b->cache->admitted;
}

void cache_block_set_consumed(struct cache_block *b, bool consumed,
			      bool trailing)
{
	struct cache *c = b->cache;
	bool idle = b->in_lru;

	lru_unlink(c, b);
	b->consumed = consumed;
	b->trailing = consumed && trailing;
	if (idle)
		lru_insert(c, b);
}

/* An unpinned block goes where its state says: a failed one is freed, a
 * ready one joins the LRU, a fetching one waits for its fetch to end. */
static void block_settle(struct cache *c, struct cache_block *b)
{
	if (b->pins > 0)
		return;
	if (b->state == BLOCK_FAILED)
		cache_block_free(c, b);
	else if (b->state == BLOCK_READY)
		lru_insert(c, b);
}

/* A fetch failed: new lookups must not find the block any more. */
static void block_fail(struct cache *c, struct cache_block *b, int err)
{
	b->state = BLOCK_FAILED;
	b->error = err;
	table_remove(c, b);
	c->stats.fetch_errors++;
}

void cache_block_unpin(struct cache_block *b)
{
	b->pins--;
	block_settle(b->cache, b);
}

/* One GET filling a run of consecutive blocks of one object. */
struct block_fetch {
	struct cache *cache;
	unsigned count;
	unsigned next; /* blocks before this one are settled */
	struct cache_block *blocks[];
};

static void block_arrived(void *arg, unsigned index)
{
	struct block_fetch *f = arg;
	struct cache *c = f->cache;
	struct cache_block *b = f->blocks[index];

	pthread_mutex_lock(&c->lock);
	b->state = BLOCK_READY;
	pthread_cond_broadcast(&b->ready);
	block_settle(c, b);
	f->next = index + 1;
	pthread_mutex_unlock(&c->lock);
}

/* Fails blocks[0..n) and wakes their waiters (lock held). */
static void blocks_fail(struct cache *c, struct cache_block *const *blocks,
			unsigned n, int err)
{
	for (unsigned i = 0; i < n; i++) {
		block_fail(c, blocks[i], err);
		pthread_cond_broadcast(&blocks[i]->ready);
		block_settle(c, blocks[i]);
	}
}

/* Fails the blocks of f from f->next on (lock held). */
static void fetch_fail(struct block_fetch *f, int err)
{
	blocks_fail(f->cache, f->blocks + f->next, f->count - f->next, err);
	f->next = f->count;
}

static void fetch_done(void *arg, const struct store_error *err)
{
	struct block_fetch *f = arg;
	struct cache *c = f->cache;

	pthread_mutex_lock(&c->lock);
	fetch_fail(f, err && err->err == ECANCELED ? ECANCELED : EIO);
	pthread_mutex_unlock(&c->lock);
	free(f);
}

void cache_block_fetch(struct cache_block *const *blocks, unsigned n,
		       bool urgent)
{
	struct cache *c = blocks[0]->cache;
	const struct cache_object *obj = blocks[0]->obj;
	struct store_buffer buffers[STORE_GET_BUFFERS_MAX];
	struct block_fetch *f = NULL;
	uint64_t total = 0;
	int rc;

	if (n > STORE_GET_BUFFERS_MAX)
		rc = EINVAL;
	else if (!(f = calloc(1, sizeof(*f) + n * sizeof(*blocks))))
		rc = ENOMEM;
	else {
		struct store_get get = {
		    .bucket = obj->bucket,
		    .key = obj->key,
		    .etag = obj->etag,
		    .offset = cache_block_offset(c, blocks[0]->index),
		    .buffers = buffers,
		    .nbuffers = n,
		    .flags = urgent ? STORE_GET_URGENT : 0,
		    .buffer_done = block_arrived,
		    .done = fetch_done,
		    .arg = f,
		};

		f->cache = c;
		f->count = n;
		memcpy(f->blocks, blocks, n * sizeof(*blocks));
		for (unsigned i = 0; i < n; i++) {
			buffers[i].dest = blocks[i]->data;
			buffers[i].len = blocks[i]->len;
			total += blocks[i]->len;
		}
		if (get.offset == 0 && total == obj->size)
			get.flags |= STORE_GET_WHOLE;
		if (blocks[0]->index & CACHE_PIECE_BIT)
			get.flags |=
			    STORE_GET_PIECE; /* (a run is of one kind) */
		/* the store's call without the lock: the blocks are FETCHING,
		 * so nobody frees them (nor obj) meanwhile; f is the
		 * callbacks' from here on */
		pthread_mutex_unlock(&c->lock);
		rc = store_get(c->store, &get);
		pthread_mutex_lock(&c->lock);
		if (rc)
			free(f); /* (no callback runs) */
	}
	/* others may have found the blocks meanwhile and wait on them */
	if (rc)
		blocks_fail(c, blocks, n, rc);
}

/* ---- faulting the pool in ---- */

/* Bytes of whole-block (pooled) buffers that the first reach bytes of what
 * is listed of s so far take. */
static uint64_t pooled_within(const struct cache_stream *s, uint64_t reach)
{
	const struct cache *c = s->cache;
	const uint64_t bs = c->conf.block_size;
	uint64_t pooled = 0, pos = 0;

	for (size_t i = s->base; i < s->count && pos < reach; i++) {
		const struct cache_segment *seg = cache_stream_seg(s, i);
		uint64_t end = seg->obj_offset + seg->size;

		if (!seg->obj) {
			pos += seg->size;
			continue;
		}
		for (uint64_t index = seg->obj_offset / bs;
		     index * bs < end && pos < reach; index++) {
			size_t len = cache_block_len(c, seg->obj, index);

			if (buffer_cap(c, len) == bs)
				pooled += bs;
			pos += len;
		}
	}
	return pooled;
}

/* Gives p[0..len) (page-aligned) its pages now: in one call where the
 * kernel has MADV_POPULATE_WRITE (5.14), without a trap a page; else by
 * writing a byte of each. */
static void fault_pages(char *p, size_t len)
{
#ifdef MADV_POPULATE_WRITE
	if (madvise(p, len, MADV_POPULATE_WRITE) == 0)
		return;
#endif
	for (size_t o = 0; o < len; o += PAGE_BYTES)
		p[o] = 0;
}

/* Faults in one whole-block buffer for the pool, the lock dropped while
 * faulting (its bytes counted meanwhile); false when the budget or
 * memory has none. */
static bool fault_in_one(struct cache *c)
{
	const size_t bs = c->conf.block_size;
	char *p;

	if (c->stats.used_bytes + bs > c->conf.budget_bytes ||
	    c->pool_count >= c->pool_max)
		return false;
	c->stats.used_bytes += bs; /* held while faulting */
	pthread_mutex_unlock(&c->lock);
	p = buffer_alloc(c, bs);
	if (p)
		fault_pages(p, bs);
	pthread_mutex_lock(&c->lock);
	if (!p) {
		c->stats.used_bytes -= bs;
		return false;
	}
	c->pool[c->pool_count++] = p;
	c->stats.faulted_in_bytes += bs;
	if (c->stats.used_bytes > c->stats.peak_bytes)
		c->stats.peak_bytes = c->stats.used_bytes;
	pthread_cond_broadcast(&c->memory);
	return true;
}

/* The background fault-in: fault_in_left more buffers, unless the cache goes.
 */
static void *fault_in_later(void *arg)
{
	struct cache *c = arg;

	pthread_mutex_lock(&c->lock);
	while (!c->fault_in_stop && c->fault_in_left && fault_in_one(c))
		c->fault_in_left--;
	c->fault_in_left = 0;
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

/*
 * The first time a reader's window fills, every buffer is fresh memory: the
 * engine thread, which receives all data, would take a page fault per huge
 * page and wait while the kernel zeroes it (on a virtual machine that hands
 * free memory back to its host, the host must supply the page as well).
 * Done here, before any reader, the pool holds those buffers already.
 *
 * A stream larger than the window also fills the kept set in its first
 * pass, as much memory again: that part is faulted in by a thread of its
 * own, started here, while the mount comes up and the first window
 * streams (the start-up itself waits for fault_in_max_bytes at most).
 */
uint64_t cache_stream_fault_in(struct cache_stream *s)
{
	struct cache *c = s->cache;
	const uint64_t bs = c->conf.block_size;
	const uint64_t first = c->conf.max_window + 2 * bs;
	uint64_t added = 0, want, later;

	pthread_mutex_lock(&c->lock);
	want = pooled_within(s, first);
	if (want > c->conf.fault_in_max_bytes)
		want = c->conf.fault_in_max_bytes;
	while (c->pool_count * bs + bs <= want && fault_in_one(c))
		added += bs;
	later = pooled_within(s, first + c->kept_quota);
	if (later > c->conf.budget_bytes)
		later = c->conf.budget_bytes;
	if (later > c->pool_count * bs && c->kept_quota &&
	    !c->fault_in_started &&
	    c->stats.used_bytes + bs <= c->conf.budget_bytes) {
		c->fault_in_left = (later - c->pool_count * bs) / bs;
		c->fault_in_started = pthread_create(&c->fault_in_thread, NULL,
						     fault_in_later, c) == 0;
	}
	pthread_mutex_unlock(&c->lock);
	return added;
}

/* ---- buffers for stages ---- */

void *cache_buffer_get(struct cache *c, bool demand)
{
	char *p;

	pthread_mutex_lock(&c->lock);
	kept_expire(c);
	if (!demand &&
	    c->lent_bytes + c->conf.block_size > c->conf.budget_bytes / 2)
		p = NULL;
	else if (!cache_block_room(c, NULL, c->conf.block_size, demand))
		p = NULL;
	else
		p = buffer_get(c, c->conf.block_size, 0,
			       demand ? CACHE_ADMIT_DEMAND
				      : CACHE_ADMIT_PREFETCH);
	if (p)
		c->lent_bytes += c->conf.block_size;
	pthread_mutex_unlock(&c->lock);
	return p;
}

void cache_buffer_put(struct cache *c, void *buf)
{
	if (!buf)
		return;
	pthread_mutex_lock(&c->lock);
	c->lent_bytes -= c->conf.block_size;
	buffer_put(c, buf, c->conf.block_size);
	pthread_mutex_unlock(&c->lock);
}

size_t cache_buffer_size(const struct cache *c)
{
	return (size_t)c->conf.block_size;
}
