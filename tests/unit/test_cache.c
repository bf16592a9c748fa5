/*
 * test_cache: the block cache's byte budget, eviction rules and table.
 *
 * The cache sits on the recording test store (tests/unit/test_store.h):
 * a block is fetched with cache_block_fetch() as the reader does, and the
 * test then plays the store's part with the GET's recorded callbacks,
 * driving blocks from FETCHING to READY or FAILED exactly as the S3 engine
 * would.  evict_one() and buffer_cap() are reached through the UNITTEST
 * convention (cache/internal.h).
 *
 * Blocks are keyed by interned objects: every cache made here interns four
 * large objects ("obj0" to "obj3", see obj()) and holds a reference
 * on each until destroy_cache(), so a block's own reference is what the
 * tests can count (model_check).  Every helper takes c->lock where the
 * cache expects it held; the fetch callbacks take it themselves.
 */
#include "config.h"

#include "cache/internal.h"
#include "tests/unit/test_store.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#define MIB (1024u * 1024u)
#define BS  MIB

#define NOBJS 4 /* objects per cache */
#define NMADE 4 /* caches alive at once */
/* past every block index the tests use */
#define OBJ_SIZE (1ull << 42)

/* the store every cache here fetches through (recording) */
static struct test_store *store;

/* The caches alive, each with its objects (a reference each). */
static struct made {
	struct cache *c;
	struct cache_object *objs[NOBJS];
} made[NMADE];

/* ---- helpers ---- */

/* Object i of cache c (the test's reference; no new one). */
static struct cache_object *obj(struct cache *c, unsigned i)
{
	assert_true(i < NOBJS);
	for (unsigned k = 0; k < NMADE; k++)
		if (made[k].c == c)
			return made[k].objs[i];
	fail_msg("cache %p was not made by new_fault_in_cache", (void *)c);
	return NULL;
}

/* References on o (lock taken: blocks drop theirs on the store's
 * callbacks). */
static unsigned long refs_of(struct cache *c, const struct cache_object *o)
{
	unsigned long n;

	pthread_mutex_lock(&c->lock);
	n = o->refs;
	pthread_mutex_unlock(&c->lock);
	return n;
}

static void register_cache(struct cache *c)
{
	char key[16];

	for (unsigned k = 0; k < NMADE; k++) {
		if (made[k].c)
			continue;
		made[k].c = c;
		pthread_mutex_lock(&c->lock);
		for (unsigned i = 0; i < NOBJS; i++) {
			snprintf(key, sizeof(key), "obj%u", i);
			made[k].objs[i] = cache_object_intern(
			    c, "bucket", key, "\"e\"", OBJ_SIZE);
			assert_non_null(made[k].objs[i]);
		}
		pthread_mutex_unlock(&c->lock);
		return;
	}
	fail_msg("more than %d caches at once", NMADE);
}

/* Drops the test's references on c's objects, then destroys c (which
 * frees the blocks and, with their references, the objects). */
static void destroy_cache(struct cache *c)
{
	for (unsigned k = 0; k < NMADE; k++) {
		if (made[k].c != c)
			continue;
		pthread_mutex_lock(&c->lock);
		for (unsigned i = 0; i < NOBJS; i++)
			cache_object_unref(c, made[k].objs[i]);
		pthread_mutex_unlock(&c->lock);
		memset(&made[k], 0, sizeof(made[k]));
		cache_destroy(c);
		return;
	}
	fail_msg("cache %p was not made by new_fault_in_cache", (void *)c);
}

/* window 0: the cache's automatic prefetch window; kept: the kept set's
 * quota (0: none, CACHE_KEPT_AUTO: the automatic one) */
static struct cache *new_kept_cache(uint64_t budget, uint64_t block_size,
				    uint64_t window, uint64_t fault_in_max,
				    uint64_t kept)
{
	struct cache_conf conf;
	struct cache *c;

	if (!store)
		store = test_store_create(false, 4);
	assert_non_null(store);
	cache_conf_init(&conf);
	conf.budget_bytes = budget;
	conf.block_size = block_size;
	conf.max_window = window;
	conf.kept_max = kept;
	if (fault_in_max)
		conf.fault_in_max_bytes = fault_in_max;
	c = cache_create(&conf, &store->store);
	assert_non_null(c);
	register_cache(c);
	return c;
}

/* The eviction rules without a kept set (the kept set's own tests make
 * caches with one). */
static struct cache *new_fault_in_cache(uint64_t budget, uint64_t block_size,
					uint64_t window, uint64_t fault_in_max)
{
	return new_kept_cache(budget, block_size, window, fault_in_max, 0);
}

static struct cache *new_window_cache(uint64_t budget, uint64_t block_size,
				      uint64_t window)
{
	return new_fault_in_cache(budget, block_size, window, 0);
}

static struct cache *new_cache(uint64_t budget, uint64_t block_size)
{
	return new_window_cache(budget, block_size, 0);
}

static struct cache_block *create(struct cache *c, struct cache_object *o,
				  uint64_t index, size_t len, bool demand)
{
	struct cache_block *b;

	pthread_mutex_lock(&c->lock);
	b = cache_block_create(c, o, index, len,
			       demand ? CACHE_ADMIT_DEMAND
				      : CACHE_ADMIT_PREFETCH);
	pthread_mutex_unlock(&c->lock);
	if (b) {
		assert_int_equal(b->state, BLOCK_FETCHING);
		assert_int_equal(b->len, len);
		assert_int_equal(b->pins, 0);
		assert_false(b->in_lru);
	}
	return b;
}

static bool room(struct cache *c, size_t len, bool demand)
{
	bool ok;

	pthread_mutex_lock(&c->lock);
	ok = cache_block_room(c, NULL, len, demand);
	pthread_mutex_unlock(&c->lock);
	return ok;
}

/* Fetches blocks[0..n) as a reader does; returns the store's record of
 * the GET, whose callbacks the test then calls as the engine would. */
static struct test_get *fetch_run(struct cache_block *const *blocks, unsigned n)
{
	struct cache *c = blocks[0]->cache;
	unsigned before = store->ngets;

	pthread_mutex_lock(&c->lock);
	cache_block_fetch(blocks, n, false);
	pthread_mutex_unlock(&c->lock);
	assert_int_equal(store->ngets, before + 1);
	assert_int_equal(store->gets[before].nbuffers, n);
	assert_int_equal(store->gets[before].offset,
			 blocks[0]->index * c->conf.block_size);
	return &store->gets[before];
}

/* The GET is over: once every recorded one is, the record starts afresh. */
static void get_done(struct test_get *g, const struct store_error *err)
{
	g->finished = true;
	g->done(g->arg, err);
	for (unsigned i = 0; i < store->ngets; i++)
		if (!store->gets[i].finished)
			return;
	store->ngets = 0;
}

static void engine_error(struct store_error *e, int err)
{
	memset(e, 0, sizeof(*e));
	e->err = err;
	e->http_status = err == ECANCELED ? 0 : 503;
	snprintf(e->code, sizeof(e->code), "SlowDown");
}

/* The store's callbacks for a one-block GET that succeeded. */
static void complete(struct cache_block *b)
{
	struct test_get *g = fetch_run(&b, 1);

	g->buffer_done(g->arg, 0);
	get_done(g, NULL);
}

/* ... and for one that failed (after retries). */
static void fail_fetch(struct cache_block *b, int err)
{
	struct store_error e;

	engine_error(&e, err);
	get_done(fetch_run(&b, 1), &e);
}

static struct cache_block *ready(struct cache *c, struct cache_object *o,
				 uint64_t index, size_t len, bool demand)
{
	struct cache_block *b = create(c, o, index, len, demand);

	assert_non_null(b);
	complete(b);
	assert_int_equal(b->state, BLOCK_READY);
	return b;
}

static void pin(struct cache *c, struct cache_block *b)
{
	pthread_mutex_lock(&c->lock);
	cache_block_pin(b);
	pthread_mutex_unlock(&c->lock);
}

static void unpin(struct cache *c, struct cache_block *b)
{
	pthread_mutex_lock(&c->lock);
	cache_block_unpin(b);
	pthread_mutex_unlock(&c->lock);
}

/* What a reader does when it moves past a block: it holds a pin, marks the
 * block consumed, then lets go. */
static void consume(struct cache *c, struct cache_block *b)
{
	pthread_mutex_lock(&c->lock);
	cache_block_pin(b);
	b->consumed = true;
	cache_block_unpin(b);
	pthread_mutex_unlock(&c->lock);
}

/* A reader touching a ready block again (a hit): it moves to the hot end. */
static void touch(struct cache *c, struct cache_block *b)
{
	pin(c, b);
	unpin(c, b);
}

static struct cache_block *lookup(struct cache *c, const struct cache_object *o,
				  uint64_t index)
{
	struct cache_block *b;

	pthread_mutex_lock(&c->lock);
	b = cache_block_lookup(c, o, index);
	pthread_mutex_unlock(&c->lock);
	return b;
}

static struct cache_stats stats(struct cache *c)
{
	struct cache_stats st;

	cache_get_stats(c, &st);
	return st;
}

/* Fills out[] with the idle blocks in the order eviction takes them (each
 * list from its cold end, the lists in order); returns the count. */
static size_t lru_from_cold(struct cache *c, struct cache_block **out,
			    size_t max)
{
	size_t n = 0;

	pthread_mutex_lock(&c->lock);
	for (int k = 0; k < LRU_LISTS; k++) {
		for (struct cache_block *b = c->lru[k].cold; b;
		     b = b->lru_prev) {
			if (n < max)
				out[n] = b;
			n++;
		}
	}
	pthread_mutex_unlock(&c->lock);
	return n;
}

/* The slot a small buffer takes: the first of 64, 80, 96, 112, 128, 160
 * ... (quarters of each power of two from 64) that holds len. */
static size_t expected_slot(size_t len)
{
	for (size_t base = 64;; base *= 2)
		for (size_t q = 0; q < 4; q++)
			if (base + q * (base / 4) >= len)
				return base + q * (base / 4);
}

static size_t expected_cap(size_t len, size_t block_size)
{
	if (len > block_size / 2)
		return block_size;
	if (len >= (64u << 10))
		return (len + 4095) / 4096 * 4096;
	return len <= (16u << 10) ? expected_slot(len) : len;
}

/* What n bytes in a slot take of its slab: a slab is 64 KiB, its first
 * 192 bytes a header, the rest as many slots as fit; each slot counts the
 * slab's bytes over its slots.  Above 16 KiB (no slot), n. */
static size_t slab_share(size_t n)
{
	size_t slots;

	if (n > (16u << 10))
		return n;
	slots = ((64u << 10) - 192) / expected_slot(n);
	return ((64u << 10) + slots - 1) / slots;
}

/* What a small object's block counts beyond its buffer: the block's
 * record, its table slot and its object's record, the records their
 * slots' shares. */
static size_t rec(const struct cache_object *o)
{
	return slab_share(sizeof(struct cache_block)) +
	       2 * sizeof(struct cache_block *) +
	       slab_share(sizeof(*o) + strlen(o->bucket) + 1 + strlen(o->key) +
			  1 + (o->etag ? strlen(o->etag) + 1 : 0));
}

/* What a block of len bytes of o counts against the budget: its buffer
 * (a slot's share of its slab) and, for a small object's, rec(o). */
static size_t expected_charge(const struct cache_object *o, size_t len,
			      size_t block_size)
{
	size_t cap = expected_cap(len, block_size);

	if (cap == block_size)
		return cap;
	return (cap <= (16u << 10) ? slab_share(cap) : cap) + rec(o);
}

/* ---- budget under random operations ---- */

#define RANDOM_OPS    30000
#define RANDOM_BS     (64u * 1024u)
#define RANDOM_BUDGET (16u * RANDOM_BS + 12345u) /* not a multiple */
#define RANDOM_MAX    128

struct model_block {
	struct cache_block *b;
	unsigned obj; /* obj(c, obj) */
	uint64_t index;
	enum cache_block_state state;
	int pins;
	bool consumed;
	bool kept; /* as the cache says (it decides; model_check agrees) */
	size_t cap;
	size_t charge; /* expected_charge() */
};

struct model {
	struct cache *c;
	struct model_block blocks[RANDOM_MAX];
	size_t n;
	uint64_t next_key;
	uint64_t rng;
	uint64_t evictions;
	uint64_t failures;
	uint64_t max_used;
	bool check_admission; /* create succeeds exactly when room exists */
};

/* xorshift64*: the same sequence on every libc. */
static uint64_t rnd(struct model *m)
{
	m->rng ^= m->rng >> 12;
	m->rng ^= m->rng << 25;
	m->rng ^= m->rng >> 27;
	return m->rng * 0x2545F4914F6CDD1Dull;
}

static void model_drop(struct model *m, size_t i)
{
	m->blocks[i] = m->blocks[--m->n];
}

static bool idle(const struct model_block *mb)
{
	return mb->state == BLOCK_READY && mb->pins == 0;
}

/*
 * Checks the whole cache against the model.  Blocks are keyed uniquely, so
 * an evicted block is recognised by its key without touching freed memory.
 * Every allocated block (a failed one still pinned too) holds a reference
 * on its object, besides the test's own.
 */
static void model_check(struct model *m)
{
	struct cache *c = m->c;
	uint64_t caps = 0;
	size_t in_table = 0, lru_n = 0, idle_n = 0;
	unsigned long refs[NOBJS] = {1, 1, 1, 1};
	uint64_t kept = 0;

	pthread_mutex_lock(&c->lock);
	assert_true(c->stats.used_bytes <= c->conf.budget_bytes);
	if (c->stats.used_bytes > m->max_used)
		m->max_used = c->stats.used_bytes;
	assert_int_equal(c->stats.peak_bytes, m->max_used);
	assert_int_equal(c->stats.evictions, m->evictions);
	assert_int_equal(c->stats.fetch_errors, m->failures);
	for (size_t i = 0; i < m->n; i++) {
		struct model_block *mb = &m->blocks[i];
		struct cache_block *found =
		    cache_block_lookup(c, obj(c, mb->obj), mb->index);

		assert_int_equal(mb->b->cap, mb->cap);
		assert_int_equal(mb->b->charge, mb->charge);
		assert_int_equal(mb->b->state, mb->state);
		assert_int_equal(mb->b->pins, mb->pins);
		assert_int_equal(mb->b->in_lru, idle(mb));
		caps += mb->charge;
		if (mb->state == BLOCK_FAILED) {
			assert_null(found);
		} else {
			assert_ptr_equal(found, mb->b);
			in_table++;
		}
		if (idle(mb))
			idle_n++;
		assert_ptr_equal(mb->b->obj, obj(c, mb->obj));
		assert_int_equal(mb->b->consumed, mb->consumed);
		refs[mb->obj]++;
		/* a kept block only ever becomes ordinary, never the
		 * reverse */
		if (!mb->kept)
			assert_false(mb->b->kept);
		mb->kept = mb->b->kept;
		if (mb->kept)
			kept += mb->charge;
	}
	/* the kept set: what its blocks hold, within the quota */
	assert_int_equal(c->kept_bytes, kept);
	assert_true(c->kept_bytes <= c->kept_quota);
	assert_int_equal(c->nblocks, in_table);
	for (unsigned i = 0; i < NOBJS; i++)
		assert_int_equal(obj(c, i)->refs, refs[i]);
	assert_int_equal(c->nobjects, NOBJS);
	/* used_bytes = allocated blocks' charges + pooled buffers */
	assert_int_equal(c->stats.used_bytes,
			 caps + (uint64_t)c->pool_count * c->conf.block_size);
	assert_true(c->pool_count <= c->pool_max);
	/* the lists hold exactly the idle READY blocks, each on its class's
	 * list, with the bytes counted */
	for (int k = 0; k < LRU_LISTS; k++) {
		uint64_t bytes = 0;

		for (struct cache_block *b = c->lru[k].cold; b;
		     b = b->lru_prev) {
			assert_int_equal(b->state, BLOCK_READY);
			assert_int_equal(b->pins, 0);
			assert_true(b->in_lru);
			assert_int_equal(b->lru, k);
			assert_int_equal(block_class(b), k);
			if (b->lru_prev)
				assert_ptr_equal(b->lru_prev->lru_next, b);
			else
				assert_ptr_equal(c->lru[k].hot, b);
			bytes += b->charge;
			lru_n++;
		}
		assert_int_equal(c->lru[k].bytes, bytes);
	}
	assert_int_equal(lru_n, idle_n);
	pthread_mutex_unlock(&c->lock);
}

/*
 * Whether len bytes of o fit, from the model alone: the budget minus every
 * allocated block's charge (pooled buffers are free room), plus the
 * charges of the blocks the rules allow to evict.
 */
static bool model_room(const struct model *m, const struct cache_object *o,
		       size_t len, bool demand)
{
	const struct cache *c = m->c;
	size_t charge = expected_charge(o, len, c->conf.block_size);
	uint64_t avail = c->conf.budget_bytes;

	if (len > c->conf.block_size || charge > c->conf.budget_bytes)
		return false;
	for (size_t i = 0; i < m->n; i++) {
		const struct model_block *mb = &m->blocks[i];

		avail -= mb->charge;
		if (idle(mb) && (demand || (mb->consumed && !mb->b->kept)))
			avail += mb->charge;
	}
	return charge <= avail;
}

static size_t random_len(struct model *m)
{
	switch (rnd(m) % 4) {
	case 0:
		return 1 + rnd(m) % (RANDOM_BS / 2); /* small: exact */
	case 1:
		return RANDOM_BS / 2 + 1 + rnd(m) % (RANDOM_BS / 2); /* tail */
	default:
		return RANDOM_BS;
	}
}

static void op_create(struct model *m)
{
	struct cache *c = m->c;
	/* with a kept set demand is rarer, so that kept blocks live long
	 * enough to go stale rather than be evicted */
	bool demand = rnd(m) % (c->kept_quota ? 8 : 2) == 0;
	size_t len = random_len(m);
	uint64_t key = m->next_key++;
	const unsigned o = (unsigned)(key % NOBJS);
	struct cache_block *b;
	bool fits, kept_went = false;

	if (m->n == RANDOM_MAX)
		return;
	pthread_mutex_lock(&c->lock);
	/* what create would do first: stale kept blocks become ordinary */
	kept_expire(c);
	for (size_t i = 0; i < m->n; i++)
		m->blocks[i].kept = m->blocks[i].b->kept;
	fits = cache_block_room(c, obj(c, o), len, demand);
	if (m->check_admission)
		assert_int_equal(fits, model_room(m, obj(c, o), len, demand));
	b = cache_block_create(c, obj(c, o), key / NOBJS, len,
			       demand ? CACHE_ADMIT_DEMAND
				      : CACHE_ADMIT_PREFETCH);
	/* the room check is what create decides by */
	assert_int_equal(b != NULL, fits);
	/* find what was evicted: only idle blocks, only consumed and not
	 * kept ones for a prefetch, kept ones only after every other */
	for (size_t i = 0; i < m->n;) {
		struct model_block *mb = &m->blocks[i];

		if (cache_block_lookup(c, obj(c, mb->obj), mb->index) ||
		    mb->state == BLOCK_FAILED) {
			i++;
			continue;
		}
		assert_true(idle(mb));
		if (!demand)
			assert_true(mb->consumed && !mb->kept);
		kept_went |= mb->kept;
		m->evictions++;
		model_drop(m, i);
	}
	if (kept_went) {
		for (size_t i = 0; i < m->n; i++)
			assert_false(idle(&m->blocks[i]) &&
				     !m->blocks[i].b->kept &&
				     m->blocks[i].b != b);
	}
	pthread_mutex_unlock(&c->lock);
	if (!b)
		return;
	m->blocks[m->n++] = (struct model_block){
	    .b = b,
	    .obj = o,
	    .index = key / NOBJS,
	    .state = BLOCK_FETCHING,
	    .cap = expected_cap(len, RANDOM_BS),
	    .charge = expected_charge(obj(c, o), len, RANDOM_BS),
	    .kept = b->kept,
	};
	if (demand) { /* a demand read pins what it creates */
		pin(c, b);
		m->blocks[m->n - 1].pins++;
	}
}

static void op_complete(struct model *m, size_t i)
{
	struct model_block *mb = &m->blocks[i];

	if (rnd(m) % 8 == 0) {
		fail_fetch(mb->b, rnd(m) % 2 ? EIO : ECANCELED);
		m->failures++;
		if (mb->pins == 0)
			model_drop(m, i); /* freed at once */
		else
			mb->state = BLOCK_FAILED;
	} else {
		complete(mb->b);
		mb->state = BLOCK_READY;
	}
}

static void op_pin(struct model *m, size_t i)
{
	struct model_block *mb = &m->blocks[i];

	pin(m->c, mb->b);
	mb->pins++;
}

static void op_unpin(struct model *m, size_t i)
{
	struct model_block *mb = &m->blocks[i];
	struct cache *c = m->c;

	pthread_mutex_lock(&c->lock);
	if (mb->state == BLOCK_READY && rnd(m) % 2) {
		/* the reader moved past it; another may be behind */
		cache_block_set_consumed(mb->b, true, rnd(m) % 2);
		mb->consumed = true;
	}
	cache_block_unpin(mb->b);
	pthread_mutex_unlock(&c->lock);
	mb->pins--;
	if (mb->pins == 0 && mb->state == BLOCK_FAILED)
		model_drop(m, i);
}

/* A reader's window takes an idle consumed block back. */
static void op_claim(struct model *m, size_t i)
{
	struct model_block *mb = &m->blocks[i];

	pthread_mutex_lock(&m->c->lock);
	cache_block_set_consumed(mb->b, false, false);
	pthread_mutex_unlock(&m->c->lock);
	mb->consumed = false;
}

static void run_random(uint64_t seed, bool check_admission, uint64_t kept)
{
	struct model *m = calloc(1, sizeof(*m));
	struct cache_stats st;

	assert_non_null(m);
	m->c = new_kept_cache(RANDOM_BUDGET, RANDOM_BS, 0, 0, kept);
	m->rng = seed;
	m->check_admission = check_admission;
	for (int op = 0; op < RANDOM_OPS; op++) {
		unsigned what = rnd(m) % 10;
		size_t i = m->n ? rnd(m) % m->n : 0;

		if (what < 4 || m->n == 0) {
			op_create(m);
		} else if (what < 7) {
			if (m->blocks[i].state == BLOCK_FETCHING)
				op_complete(m, i);
		} else if (what < 8) {
			/* kept blocks are used seldom: some go stale */
			if (m->blocks[i].state != BLOCK_FAILED &&
			    (!m->blocks[i].kept || rnd(m) % 32 == 0))
				op_pin(m, i);
		} else if (what < 9 && rnd(m) % 4 == 0) {
			if (idle(&m->blocks[i]) && m->blocks[i].consumed)
				op_claim(m, i);
		} else if (what < 9 && kept && rnd(m) % 8 == 0) {
			/* other streams admit a quarter budget meanwhile */
			pthread_mutex_lock(&m->c->lock);
			m->c->admitted += RANDOM_BUDGET / 4;
			pthread_mutex_unlock(&m->c->lock);
		} else {
			if (m->blocks[i].pins > 0)
				op_unpin(m, i);
		}
		model_check(m);
	}
	st = stats(m->c);
	/* the run must have exercised the interesting paths */
	assert_true(st.evictions > 1000);
	assert_true(st.fetch_errors > 100);
	assert_true(st.peak_bytes > RANDOM_BUDGET - RANDOM_BS);
	if (kept) /* kept blocks came and went stale */
		assert_true(st.kept_stale > 10);
	/* settle every block: then all of them are idle in the LRU */
	for (;;) {
		size_t i = 0;

		while (i < m->n && idle(&m->blocks[i]))
			i++;
		if (i == m->n)
			break;
		if (m->blocks[i].state == BLOCK_FETCHING)
			op_complete(m, i);
		else
			op_unpin(m, i);
		model_check(m);
	}
	destroy_cache(m->c);
	free(m);
}

static void test_budget_random(void **state)
{
	run_random(0x5EED5EED12345678ull, false, 0);
}

/* The same walk, also checking that no allocation is refused while the
 * rules would let eviction make room (and none admitted without). */
static void test_admission_random(void **state)
{
	run_random(0x0DDC0FFEE1234567ull, true, 0);
}

/* Both with a kept set of half the budget: the budget holds, kept blocks
 * go only to demand and only after every other idle block, kept_bytes is
 * what the kept blocks hold, within the quota, and stale ones become
 * ordinary. */
static void test_kept_random(void **state)
{
	run_random(0x1234ABCD5678EF01ull, false, RANDOM_BUDGET / 2);
	run_random(0x0FEDCBA987654321ull, true, RANDOM_BUDGET / 2);
}

/* ---- eviction rules ---- */

static void test_prefetch_evicts_only_consumed(void **state)
{
	struct cache *c = new_cache(3 * BS, BS);
	struct cache_block *a = ready(c, obj(c, 0), 0, BS, false);
	struct cache_block *b = ready(c, obj(c, 0), 1, BS, false);
	struct cache_block *d = ready(c, obj(c, 0), 2, BS, false);
	struct cache_block *e;

	consume(c, b);
	/* a prefetch evicts the consumed block b, not the colder a */
	assert_true(room(c, BS, false));
	e = create(c, obj(c, 1), 0, BS, false);
	assert_non_null(e);
	assert_null(lookup(c, obj(c, 0), 1));
	assert_ptr_equal(lookup(c, obj(c, 0), 0), a);
	assert_ptr_equal(lookup(c, obj(c, 0), 2), d);
	assert_int_equal(stats(c).evictions, 1);
	complete(e);
	/* nothing consumed left: a prefetch cannot make room */
	assert_false(room(c, BS, false));
	assert_null(create(c, obj(c, 1), 1, BS, false));
	assert_false(room(c, 1, false));
	assert_null(create(c, obj(c, 1), 1, 1, false));
	assert_int_equal(stats(c).evictions, 1);
	assert_ptr_equal(lookup(c, obj(c, 0), 0), a);
	assert_ptr_equal(lookup(c, obj(c, 1), 0), e);
	/* once a is consumed a prefetch may take it */
	consume(c, a);
	assert_non_null(create(c, obj(c, 1), 1, BS, false));
	assert_null(lookup(c, obj(c, 0), 0));
	assert_ptr_equal(lookup(c, obj(c, 0), 2), d);
	assert_int_equal(stats(c).evictions, 2);
	assert_int_equal(stats(c).used_bytes, 3 * BS);
	destroy_cache(c);
}

static void test_prefetch_fails_when_full_of_unconsumed(void **state)
{
	struct cache *c = new_cache(8 * BS, BS);
	struct cache_block *b[8];
	struct cache_stats st;

	for (int i = 0; i < 8; i++)
		b[i] = ready(c, obj(c, 0), i, BS, false);
	/* full of unread data: a prefetch neither evicts nor allocates */
	assert_false(room(c, BS, false));
	assert_null(create(c, obj(c, 1), 0, BS, false));
	assert_null(create(c, obj(c, 1), 0, BS / 2, false));
	assert_null(create(c, obj(c, 1), 0, 1, false));
	pthread_mutex_lock(&c->lock);
	assert_false(evict_one(c, false));
	pthread_mutex_unlock(&c->lock);
	st = stats(c);
	assert_int_equal(st.evictions, 0);
	assert_int_equal(st.used_bytes, 8 * BS);
	for (int i = 0; i < 8; i++)
		assert_ptr_equal(lookup(c, obj(c, 0), i), b[i]);
	/* a demand read may still evict */
	assert_true(room(c, BS, true));
	assert_non_null(create(c, obj(c, 1), 0, BS, true));
	assert_int_equal(stats(c).evictions, 1);
	destroy_cache(c);
}

static void test_demand_evicts_coldest(void **state)
{
	struct cache *c = new_cache(3 * BS, BS);
	struct cache_block *a = ready(c, obj(c, 0), 0, BS, true);
	struct cache_block *b = ready(c, obj(c, 0), 1, BS, true);
	struct cache_block *d = ready(c, obj(c, 0), 2, BS, true);
	struct cache_block *e, *f;

	/* a became ready first: it is the coldest */
	e = create(c, obj(c, 1), 0, BS, true);
	assert_non_null(e);
	assert_null(lookup(c, obj(c, 0), 0));
	assert_ptr_equal(lookup(c, obj(c, 0), 1), b);
	assert_ptr_equal(lookup(c, obj(c, 0), 2), d);
	complete(e);
	/* a hit on b makes d the coldest */
	touch(c, b);
	f = create(c, obj(c, 1), 1, BS, true);
	assert_non_null(f);
	assert_null(lookup(c, obj(c, 0), 2));
	assert_ptr_equal(lookup(c, obj(c, 0), 1), b);
	assert_ptr_equal(lookup(c, obj(c, 1), 0), e);
	assert_int_equal(stats(c).evictions, 2);
	(void)a;
	destroy_cache(c);
}

/*
 * The last block of an object is shorter than block_size but holds a whole
 * pooled buffer (cap == block_size).  Evicting it frees cap bytes, so the
 * room check must count cap, not len: otherwise a read is refused (and a
 * first pin waits for memory) although evicting the tail makes room.
 */
static void test_room_counts_evicted_cap(void **state)
{
	struct cache *c = new_cache(2 * BS, BS);
	struct cache_block *p = ready(c, obj(c, 0), 0, BS, true);
	struct cache_block *tail =
	    ready(c, obj(c, 1), 3, BS / 2 + BS / 4, true);
	struct cache_block *n;

	pin(c, p); /* a reader holds p */
	assert_int_equal(tail->cap, BS);
	assert_int_equal(stats(c).used_bytes, 2 * BS);
	/* demand: the idle tail may go */
	assert_true(room(c, BS, true));
	n = create(c, obj(c, 2), 0, BS, true);
	assert_non_null(n);
	assert_null(lookup(c, obj(c, 1), 3));
	complete(n);
	/* prefetch: a consumed tail may go */
	pthread_mutex_lock(&c->lock);
	assert_true(evict_one(c, true)); /* n: back to p + one pooled */
	pthread_mutex_unlock(&c->lock);
	tail = ready(c, obj(c, 1), 4, BS / 2 + 1, false);
	consume(c, tail);
	assert_true(room(c, BS, false));
	n = create(c, obj(c, 2), 1, BS, false);
	assert_non_null(n);
	assert_null(lookup(c, obj(c, 1), 4));
	assert_int_equal(stats(c).evictions, 3);
	unpin(c, p);
	destroy_cache(c);
}

static void test_pinned_and_fetching_never_evicted(void **state)
{
	struct cache *c = new_cache(3 * BS, BS);
	struct cache_block *fetching = create(c, obj(c, 0), 0, BS, true);
	struct cache_block *pinned = ready(c, obj(c, 0), 1, BS, true);
	struct cache_block *idle_b = ready(c, obj(c, 0), 2, BS, true);
	struct cache_block *n;

	assert_non_null(fetching);
	consume(c, pinned);
	pin(c, pinned); /* pinned and consumed: still untouchable */
	n = create(c, obj(c, 1), 0, BS, true);
	assert_non_null(n); /* took idle_b */
	assert_null(lookup(c, obj(c, 0), 2));
	(void)idle_b;
	/* now: fetching, pinned, n (fetching): nothing can go */
	assert_false(room(c, BS, true));
	assert_null(create(c, obj(c, 1), 1, BS, true));
	assert_null(create(c, obj(c, 1), 1, 1, true));
	assert_ptr_equal(lookup(c, obj(c, 0), 0), fetching);
	assert_ptr_equal(lookup(c, obj(c, 0), 1), pinned);
	assert_ptr_equal(lookup(c, obj(c, 1), 0), n);
	assert_int_equal(stats(c).evictions, 1);
	/* a FETCHING block that is pinned stays out of the LRU when it
	 * completes, then goes in at unpin */
	pin(c, fetching);
	complete(fetching);
	assert_false(fetching->in_lru);
	assert_null(create(c, obj(c, 1), 1, BS, true));
	unpin(c, fetching);
	assert_true(fetching->in_lru);
	assert_non_null(create(c, obj(c, 1), 1, BS, true));
	assert_null(lookup(c, obj(c, 0), 0));
	assert_ptr_equal(lookup(c, obj(c, 0), 1), pinned);
	unpin(c, pinned);
	destroy_cache(c);
}

static void test_eviction_order(void **state)
{
	struct cache *c = new_cache(8 * BS, BS);
	struct cache_block *b[5], *order[8];
	/* expected eviction order, by block number */
	const int want[5] = {3, 1, 2, 4, 0};
	size_t n;

	for (int i = 0; i < 5; i++)
		b[i] = ready(c, obj(c, 0), i, BS, true);
	/* hot to cold now: 4 3 2 1 0 */
	touch(c, b[0]); /* 0 4 3 2 1 */
	consume(c, b[1]);
	consume(c, b[3]); /* consumed go to the cold end */
	n = lru_from_cold(c, order, 8);
	assert_int_equal(n, 5);
	/* consumed first (both before any unconsumed), then LRU: 2 4 0 */
	assert_true(order[0]->consumed && order[1]->consumed);
	assert_ptr_equal(order[2], b[2]);
	assert_ptr_equal(order[3], b[4]);
	assert_ptr_equal(order[4], b[0]);
	/* fill the remaining budget, then each demand create evicts one */
	for (int i = 0; i < 3; i++) {
		struct cache_block *x = create(c, obj(c, 1), i, BS, true);

		assert_non_null(x);
		pin(c, x); /* held: only the five above are candidates */
		complete(x);
	}
	{
		int seen[5] = {0};

		for (int step = 0; step < 5; step++) {
			struct cache_block *x =
			    create(c, obj(c, 2), step, BS, true);
			int gone = -1;

			assert_non_null(x);
			pin(c, x);
			for (int i = 0; i < 5; i++) {
				if (!seen[i] && !lookup(c, obj(c, 0), i)) {
					assert_int_equal(gone, -1);
					gone = i;
				}
			}
			assert_true(gone >= 0);
			seen[gone] = 1;
			/* the two consumed ones first, in either order */
			if (step < 2)
				assert_true(gone == 1 || gone == 3);
			else
				assert_int_equal(gone, want[step]);
		}
	}
	assert_int_equal(stats(c).evictions, 5);
	/* release the pins so that cache_destroy frees plain blocks */
	for (int i = 0; i < 3; i++)
		unpin(c, lookup(c, obj(c, 1), i));
	for (int i = 0; i < 5; i++) {
		struct cache_block *x = lookup(c, obj(c, 2), i);

		complete(x);
		unpin(c, x);
	}
	destroy_cache(c);
}

/* ---- the kept set ---- */

/* What a reader does when it moves past a block that another reader,
 * further behind, still needs: consumed, but trailing. */
static void pass_trailing(struct cache *c, struct cache_block *b)
{
	pthread_mutex_lock(&c->lock);
	cache_block_pin(b);
	cache_block_set_consumed(b, true, true);
	cache_block_unpin(b);
	pthread_mutex_unlock(&c->lock);
}

static uint64_t kept_bytes(struct cache *c)
{
	return stats(c).kept_bytes;
}

/*
 * The first blocks admitted, up to the quota, are kept, whoever admits
 * them; consumed, they stay where prefetch cannot take them; prefetch
 * takes only consumed blocks outside the set; demand takes every other
 * idle block first (unread ones too), then the least recently used kept
 * one, whose quota goes to the next block admitted.
 */
static void test_kept_quota(void **state)
{
	/* 8 blocks: window 4, kept quota 4 (auto: half, and what the
	 * window leaves) */
	struct cache *c = new_kept_cache(8 * BS, BS, 0, 0, CACHE_KEPT_AUTO);
	struct cache_block *b[8], *x, *y;

	assert_int_equal(c->kept_quota, 4 * BS);
	for (int i = 0; i < 6; i++) {
		b[i] = ready(c, obj(c, 0), i, BS, i == 2);
		assert_int_equal(b[i]->kept, i < 4);
	}
	assert_int_equal(kept_bytes(c), 4 * BS);
	for (int i = 0; i < 6; i++)
		consume(c, b[i]);
	b[6] = ready(c, obj(c, 1), 0, BS, false);
	b[7] = ready(c, obj(c, 1), 1, BS, false);
	assert_int_equal(stats(c).evictions, 0);
	/* prefetch: blocks 5 then 4 go (the one passed last first), the
	 * kept ones stay */
	x = ready(c, obj(c, 1), 2, BS, false);
	assert_null(lookup(c, obj(c, 0), 5));
	assert_ptr_equal(lookup(c, obj(c, 0), 4), b[4]);
	y = ready(c, obj(c, 1), 3, BS, false);
	assert_null(lookup(c, obj(c, 0), 4));
	assert_false(b[6]->kept || b[7]->kept || x->kept || y->kept);
	assert_int_equal(stats(c).evictions, 2);
	/* full of kept (consumed) and unread blocks: no prefetch */
	assert_false(room(c, BS, false));
	assert_null(create(c, obj(c, 2), 0, BS, false));
	for (int i = 0; i < 4; i++)
		assert_ptr_equal(lookup(c, obj(c, 0), i), b[i]);
	/* demand: the unread blocks first, least recently used first */
	assert_true(room(c, BS, true));
	touch(c, b[6]);
	x = create(c, obj(c, 2), 0, BS, true);
	assert_non_null(x);
	assert_null(lookup(c, obj(c, 1), 1)); /* b[7]: b[6] was touched */
	assert_false(x->kept);
	pin(c, x);
	complete(x);
	/* the other unread ones held: the kept set's coldest goes */
	pin(c, b[6]);
	pin(c, lookup(c, obj(c, 1), 2));
	pin(c, y);
	touch(c, b[0]);
	x = create(c, obj(c, 2), 1, BS, true);
	assert_non_null(x);
	assert_null(lookup(c, obj(c, 0), 1)); /* b[1]: b[0] was touched */
	assert_ptr_equal(lookup(c, obj(c, 0), 0), b[0]);
	/* its quota went to the block that evicted it */
	assert_true(x->kept);
	assert_int_equal(kept_bytes(c), 4 * BS);
	complete(x);
	unpin(c, x);
	unpin(c, lookup(c, obj(c, 2), 0));
	unpin(c, b[6]);
	unpin(c, lookup(c, obj(c, 1), 2));
	unpin(c, y);
	assert_int_equal(stats(c).used_bytes, 8 * BS);
	destroy_cache(c);
}

/* The kept quota: automatic (half the budget, at most what the window
 * leaves), given (at most the budget less two blocks), or none. */
static void test_kept_quota_derived(void **state)
{
	struct cache *c;

	c = new_kept_cache(256 * MIB, 8 * MIB, 0, 0, CACHE_KEPT_AUTO);
	assert_int_equal(c->kept_quota, 128 * MIB);
	destroy_cache(c);
	c = new_kept_cache(256 * MIB, 8 * MIB, 192 * MIB, 0, CACHE_KEPT_AUTO);
	assert_int_equal(c->kept_quota, 64 * MIB);
	destroy_cache(c);
	/* a window of the whole budget leaves no kept set */
	c = new_kept_cache(16 * MIB, 8 * MIB, 0, 0, CACHE_KEPT_AUTO);
	assert_int_equal(c->conf.max_window, 16 * MIB);
	assert_int_equal(c->kept_quota, 0);
	destroy_cache(c);
	c = new_kept_cache(64 * MIB, 8 * MIB, 0, 0, 40 * MIB);
	assert_int_equal(c->kept_quota, 40 * MIB);
	destroy_cache(c);
	c = new_kept_cache(64 * MIB, 8 * MIB, 0, 0, 64 * MIB);
	assert_int_equal(c->kept_quota, 48 * MIB);
	destroy_cache(c);
	c = new_kept_cache(16 * MIB, 8 * MIB, 0, 0, 1 * MIB);
	assert_int_equal(c->kept_quota, 0);
	destroy_cache(c);
	c = new_kept_cache(64 * MIB, 8 * MIB, 0, 0, 0);
	assert_int_equal(c->kept_quota, 0);
	destroy_cache(c);
}

/*
 * The order eviction takes idle blocks in: SPENT (consumed, nobody
 * behind), TRAILING (consumed, a reader behind), each the one passed last
 * first; then (demand only) AHEAD, least recently used first; then KEPT.
 */
static void test_eviction_classes(void **state)
{
	struct cache *c = new_kept_cache(8 * BS, BS, 0, 0, 2 * BS);
	struct cache_block *k0 = ready(c, obj(c, 0), 0, BS, false);
	struct cache_block *k1 = ready(c, obj(c, 0), 1, BS, false);
	struct cache_block *b[6], *order[8];
	/* by block index of obj 1: spent 1 then 0, trailing 3 then 2,
	 * ahead 4 then 5; then kept 0 then 1 of obj 0 */
	const int want[6] = {1, 0, 3, 2, 4, 5};
	size_t n;

	assert_true(k0->kept && k1->kept);
	for (int i = 0; i < 6; i++)
		b[i] = ready(c, obj(c, 1), i, BS, false);
	consume(c, b[0]);
	consume(c, b[1]);
	pass_trailing(c, b[2]);
	pass_trailing(c, b[3]);
	consume(c, k0);
	n = lru_from_cold(c, order, 8);
	assert_int_equal(n, 8);
	for (int i = 0; i < 6; i++)
		assert_ptr_equal(order[i], b[want[i]]);
	assert_ptr_equal(order[6], k1);
	assert_ptr_equal(order[7], k0);
	assert_int_equal(block_class(b[0]), LRU_SPENT);
	assert_int_equal(block_class(b[2]), LRU_TRAILING);
	assert_int_equal(block_class(b[4]), LRU_AHEAD);
	assert_int_equal(block_class(k0), LRU_KEPT);
	/* prefetch: the four consumed ones, then nothing */
	for (int i = 0; i < 4; i++) {
		struct cache_block *x = create(c, obj(c, 2), i, BS, false);

		assert_non_null(x);
		assert_null(lookup(c, obj(c, 1), want[i]));
		pin(c, x);
	}
	assert_false(room(c, BS, false));
	/* demand: the unread ones, then the kept ones */
	for (int i = 4; i < 8; i++) {
		struct cache_block *x = create(c, obj(c, 2), i, BS, true);

		assert_non_null(x);
		if (i < 6)
			assert_null(lookup(c, obj(c, 1), want[i]));
		else
			assert_null(lookup(c, obj(c, 0), i - 6 ? 0 : 1));
		pin(c, x);
	}
	assert_false(room(c, 1, true));
	assert_int_equal(stats(c).evictions, 8);
	/* a claimed block (a window took it back) is unread again */
	for (int i = 0; i < 8; i++) {
		struct cache_block *x = lookup(c, obj(c, 2), i);

		complete(x);
		unpin(c, x);
	}
	destroy_cache(c);
}

/*
 * Kept blocks go stale: one not used while two passes of the largest
 * stream (at least two budgets) were admitted becomes ordinary, and its
 * quota goes to the next blocks admitted; one used in time stays kept.
 */
static void test_kept_stale(void **state)
{
	struct cache *c = new_kept_cache(8 * BS, BS, 0, 0, 3 * BS);
	struct cache_block *k[3];
	struct cache_stats st;
	unsigned kept_scan = 0;

	assert_int_equal(kept_horizon(c), 16 * BS);
	for (int i = 0; i < 3; i++) {
		k[i] = ready(c, obj(c, 0), i, BS, false);
		consume(c, k[i]);
		assert_true(k[i]->kept);
	}
	/* a scan of another object: k[0] is read now and then, k[1] and k[2]
	 * never */
	for (int i = 0; i < 30; i++) {
		struct cache_block *x = ready(c, obj(c, 1), i, BS, false);

		/* the quota is full until k[1] and k[2] go stale: more than
		 * 16 blocks admitted since each was last used */
		if (i < 16)
			assert_false(x->kept);
		else if (i < 18)
			assert_true(x->kept);
		kept_scan += x->kept;
		consume(c, x);
		if (i % 8 == 0)
			touch(c, k[0]);
	}
	st = stats(c);
	assert_int_equal(st.kept_stale, 2);
	assert_ptr_equal(lookup(c, obj(c, 0), 0), k[0]);
	assert_true(k[0]->kept);
	/* once ordinary (consumed) they were evicted like any other, and
	 * their quota went to blocks of the scan */
	assert_null(lookup(c, obj(c, 0), 1));
	assert_null(lookup(c, obj(c, 0), 2));
	assert_int_equal(kept_scan, 2);
	assert_int_equal(st.kept_bytes, 3 * BS);
	/* the horizon follows the largest stream */
	pthread_mutex_lock(&c->lock);
	c->largest_stream = 100 * BS;
	pthread_mutex_unlock(&c->lock);
	assert_int_equal(kept_horizon(c), 200 * BS);
	destroy_cache(c);
}

/* ---- failures ---- */

static void test_failed_fetch_removed(void **state)
{
	struct cache *c = new_cache(4 * BS, BS);
	struct cache_block *a = create(c, obj(c, 0), 0, BS, true);
	struct cache_block *s = create(c, obj(c, 0), 1, 1000, true);
	struct cache_block *u = create(c, obj(c, 0), 2, 500, false);
	struct cache_stats st;

	assert_non_null(a);
	assert_non_null(s);
	assert_non_null(u);
	assert_int_equal(c->nblocks, 3);
	/* a pinned block that fails leaves the table but stays readable */
	pin(c, a);
	pin(c, s);
	fail_fetch(a, EIO);
	fail_fetch(s, ECANCELED);
	assert_int_equal(a->state, BLOCK_FAILED);
	assert_int_equal(a->error, EIO);
	assert_int_equal(s->state, BLOCK_FAILED);
	assert_int_equal(s->error, ECANCELED);
	assert_false(a->in_lru);
	assert_null(lookup(c, obj(c, 0), 0));
	assert_null(lookup(c, obj(c, 0), 1));
	assert_int_equal(c->nblocks, 1);
	st = stats(c);
	assert_int_equal(st.fetch_errors, 2);
	/* slots, and the small blocks' records */
	assert_int_equal(st.used_bytes, BS + slab_share(1024) +
					    slab_share(512) +
					    2 * rec(obj(c, 0)));
	/* the last unpin frees it (valgrind checks there is no leak) */
	unpin(c, a);
	unpin(c, s);
	st = stats(c);
	assert_int_equal(c->pool_count, 1); /* a's whole buffer */
	/* s's slot and record returned */
	assert_int_equal(st.used_bytes, BS + slab_share(512) + rec(obj(c, 0)));
	/* an unpinned block that fails is freed at once */
	fail_fetch(u, EIO);
	assert_null(lookup(c, obj(c, 0), 2));
	assert_int_equal(c->nblocks, 0);
	st = stats(c);
	assert_int_equal(st.used_bytes, BS);
	assert_int_equal(st.fetch_errors, 3);
	assert_int_equal(st.evictions, 0);
	/* the key can be fetched again */
	assert_non_null(create(c, obj(c, 0), 0, BS, true));
	assert_int_equal(c->pool_count, 0);
	destroy_cache(c);
}

/* One GET filling a run of blocks: each is readable as soon as its own
 * bytes are in; a failure fails only the blocks not yet complete. */
static void test_run_fetch_partial(void **state)
{
	struct cache *c = new_cache(8 * BS, BS);
	struct cache_block *run[4];
	struct test_get *g;
	struct store_error e;
	struct cache_stats st;

	for (unsigned i = 0; i < 4; i++) {
		run[i] = create(c, obj(c, 1), i, BS, false);
		assert_non_null(run[i]);
	}
	g = fetch_run(run, 4);
	g->buffer_done(g->arg, 0);
	assert_int_equal(run[0]->state, BLOCK_READY);
	assert_true(run[0]->in_lru);
	for (unsigned i = 1; i < 4; i++)
		assert_int_equal(run[i]->state, BLOCK_FETCHING);
	g->buffer_done(g->arg, 1);
	assert_int_equal(run[1]->state, BLOCK_READY);
	/* a reader already waits on block 2 when the GET gives up */
	pin(c, run[2]);
	engine_error(&e, EIO);
	get_done(g, &e);
	assert_int_equal(run[2]->state, BLOCK_FAILED);
	assert_int_equal(run[2]->error, EIO);
	assert_ptr_equal(lookup(c, obj(c, 1), 0), run[0]);
	assert_ptr_equal(lookup(c, obj(c, 1), 1), run[1]);
	assert_null(lookup(c, obj(c, 1), 2));
	assert_null(lookup(c, obj(c, 1), 3)); /* unpinned: freed at once */
	assert_int_equal(c->nblocks, 2);
	st = stats(c);
	assert_int_equal(st.fetch_errors, 2);
	unpin(c, run[2]);
	assert_int_equal(c->pool_count, 2);
	st = stats(c);
	assert_int_equal(st.used_bytes, 4 * BS); /* 2 blocks + 2 pooled */

	/* a run that completes: done(NULL) after the last part changes
	 * nothing */
	for (unsigned i = 0; i < 3; i++) {
		run[i] = create(c, obj(c, 2), i, i == 2 ? 1000 : BS, false);
		assert_non_null(run[i]);
	}
	g = fetch_run(run, 3);
	for (unsigned i = 0; i < 3; i++)
		g->buffer_done(g->arg, i);
	get_done(g, NULL);
	for (unsigned i = 0; i < 3; i++) {
		assert_int_equal(run[i]->state, BLOCK_READY);
		assert_ptr_equal(lookup(c, obj(c, 2), i), run[i]);
	}
	assert_int_equal(stats(c).fetch_errors, 2);
	destroy_cache(c);
}

/* ---- buffers ---- */

static void test_pool_reuse(void **state)
{
	struct cache *c = new_cache(2 * BS, BS);
	struct cache_block *a = ready(c, obj(c, 0), 0, BS, true);
	struct cache_block *b = ready(c, obj(c, 0), 1, BS, true);
	char *a_data = a->data;
	struct cache_block *n;

	(void)b;
	/* the eviction pools a's buffer; the new block takes it */
	n = create(c, obj(c, 0), 2, BS, true);
	assert_non_null(n);
	assert_null(lookup(c, obj(c, 0), 0));
	assert_ptr_equal(n->data, a_data);
	assert_int_equal(stats(c).used_bytes, 2 * BS);
	assert_int_equal(c->pool_count, 0);
	/* a tail block (len > block_size / 2) takes a pooled buffer too */
	complete(n);
	consume(c, n);
	a_data = n->data;
	n = create(c, obj(c, 1), 0, BS / 2 + 1, false);
	assert_non_null(n);
	assert_ptr_equal(n->data, a_data);
	assert_int_equal(n->cap, BS);
	assert_int_equal(stats(c).peak_bytes, 2 * BS);
	destroy_cache(c);
}

static void test_pool_counts_toward_budget(void **state)
{
	struct cache *c = new_cache(2 * BS, BS);
	struct cache_block *p = ready(c, obj(c, 0), 0, BS, true);
	struct cache_block *f = create(c, obj(c, 0), 1, BS, true);
	struct cache_block *s1, *s2, *w;
	char *pooled;

	pin(c, p);
	fail_fetch(f, EIO); /* freed: its buffer goes to the pool */
	assert_int_equal(c->pool_count, 1);
	assert_int_equal(stats(c).used_bytes, 2 * BS);
	/* a whole block fits only through the pool */
	assert_true(room(c, BS, false));
	/* a small block needs the pooled bytes given back first */
	s1 = create(c, obj(c, 1), 0, 1000, false);
	assert_non_null(s1);
	assert_int_equal(c->pool_count, 0);
	assert_int_equal(stats(c).used_bytes,
			 BS + slab_share(1024) + rec(obj(c, 1)));
	s2 = create(c, obj(c, 1), 1, 1000, false);
	assert_non_null(s2);
	assert_int_equal(stats(c).used_bytes,
			 BS + 2 * slab_share(1024) + 2 * rec(obj(c, 1)));
	/* and now a whole block does not fit */
	assert_false(room(c, BS, true));
	assert_null(create(c, obj(c, 1), 2, BS, true));
	/* a block that frees into the pool keeps its bytes counted */
	fail_fetch(s1, EIO);
	fail_fetch(s2, EIO);
	assert_int_equal(stats(c).used_bytes, BS);
	w = create(c, obj(c, 1), 2, BS, false);
	assert_non_null(w);
	pooled = w->data;
	fail_fetch(w, EIO);
	assert_int_equal(c->pool_count, 1);
	assert_int_equal(stats(c).used_bytes, 2 * BS);
	w = create(c, obj(c, 1), 3, BS, false);
	assert_non_null(w);
	assert_ptr_equal(w->data, pooled);
	assert_int_equal(c->pool_count, 0);
	assert_int_equal(stats(c).used_bytes, 2 * BS);
	unpin(c, p);
	destroy_cache(c);
}

/* A stream over whole objects of the given sizes, built by hand (no
 * listing; faulting in only reads the segments and their objects' sizes). */
struct fake_stream {
	struct cache_stream s;
	struct cache_object obj[4];
	struct cache_segment seg[4];
	struct cache_segment *ptr[4];
};

static void fake_stream(struct fake_stream *f, struct cache *c,
			const uint64_t *sizes, size_t n)
{
	uint64_t start = 0;

	memset(f, 0, sizeof(*f));
	f->s.cache = c;
	f->s.segs = f->ptr;
	f->s.count = n;
	for (size_t i = 0; i < n; i++) {
		f->obj[i].size = sizes[i];
		f->seg[i].obj = &f->obj[i];
		f->seg[i].start = start;
		f->seg[i].size = sizes[i];
		f->seg[i].obj_seq = i;
		f->ptr[i] = &f->seg[i];
		start += sizes[i];
	}
	f->s.nobject_segs = n;
	f->s.listed_bytes = start;
}

static void test_fault_in_fills_pool(void **state)
{
	/* one window of 4 blocks and 2 more, over objects of 4 blocks */
	struct cache *c = new_window_cache(16 * BS, BS, 4 * BS);
	const uint64_t sizes[] = {4 * BS, 4 * BS, 4 * BS};
	struct fake_stream f, g;
	struct cache_block *b[7];
	char *pooled[6];
	struct cache_stats st;

	fake_stream(&f, c, sizes, 3);
	assert_int_equal(cache_stream_fault_in(&f.s), 6 * BS);
	st = stats(c);
	assert_int_equal(st.faulted_in_bytes, 6 * BS);
	assert_int_equal(st.used_bytes, 6 * BS);
	assert_int_equal(st.peak_bytes, 6 * BS);
	assert_int_equal(c->pool_count, 6);
	/* a second stream needing no more adds nothing */
	fake_stream(&g, c, sizes, 2);
	assert_int_equal(cache_stream_fault_in(&g.s), 0);
	memcpy(pooled, c->pool, sizeof(pooled));
	/* the first six blocks take faulted-in buffers without growing */
	for (int i = 0; i < 6; i++) {
		b[i] = create(c, obj(c, 0), i, BS, false);
		assert_non_null(b[i]);
		assert_ptr_equal(b[i]->data, pooled[5 - i]);
		assert_int_equal(stats(c).used_bytes, 6 * BS);
	}
	assert_int_equal(c->pool_count, 0);
	b[6] = create(c, obj(c, 0), 6, BS, false);
	assert_non_null(b[6]);
	assert_int_equal(stats(c).used_bytes, 7 * BS);
	(void)state;
	destroy_cache(c);
}

static void test_fault_in_counts_pooled_blocks_only(void **state)
{
	struct cache *c = new_window_cache(16 * BS, BS, 4 * BS);
	/* small objects take buffers of their own size: nothing to fault in */
	const uint64_t small[] = {BS / 4, BS / 2, 1000, BS / 4};
	/* 1.5 blocks: a whole block and a half one (not pooled), then a
	 * near-whole block (pooled), then past the window's reach */
	const uint64_t mixed[] = {BS + BS / 2, BS / 2 + 1, 2 * BS, 8 * BS};
	struct fake_stream f;

	fake_stream(&f, c, small, 4);
	assert_int_equal(cache_stream_fault_in(&f.s), 0);
	assert_int_equal(stats(c).used_bytes, 0);
	fake_stream(&f, c, mixed, 4);
	/* up to 6 blocks in: BS, (BS/2), BS/2+1, BS, BS, then two of the
	 * 8 BS object's blocks reach past it */
	assert_int_equal(cache_stream_fault_in(&f.s), 6 * BS);
	assert_int_equal(c->pool_count, 6);
	(void)state;
	destroy_cache(c);
}

static void test_fault_in_within_budget_and_max(void **state)
{
	struct cache *c = new_window_cache(3 * BS, BS, 4 * BS);
	struct cache *d = new_fault_in_cache(16 * BS, BS, 8 * BS, 5 * BS + 100);
	const uint64_t sizes[] = {16 * BS};
	struct fake_stream f;

	/* a window past the budget: faulting in stops at the budget, and a
	 * small block still finds room by giving pooled bytes back */
	fake_stream(&f, c, sizes, 1);
	assert_int_equal(cache_stream_fault_in(&f.s), 3 * BS);
	assert_int_equal(stats(c).used_bytes, 3 * BS);
	assert_non_null(create(c, obj(c, 0), 0, 1000, false));
	assert_int_equal(c->pool_count, 2);
	assert_int_equal(stats(c).used_bytes,
			 2 * BS + slab_share(1024) + rec(obj(c, 0)));
	assert_int_equal(stats(c).peak_bytes, 3 * BS);
	/* max bounds it below one window */
	fake_stream(&f, d, sizes, 1);
	assert_int_equal(cache_stream_fault_in(&f.s), 5 * BS);
	assert_int_equal(stats(d).used_bytes, 5 * BS);
	(void)state;
	destroy_cache(c);
	destroy_cache(d);
}

/* small objects' buffers take what they need: their bytes below 64 KiB,
 * whole pages from there (a mapping of their own), a whole block past
 * half a block */
static void test_small_blocks_exact(void **state)
{
	struct cache *c = new_cache(4 * BS, BS);
	const size_t lens[] = {1,	 4096,		 (64 << 10) - 1,
			       64 << 10, (64 << 10) + 1, BS / 2 - 1,
			       BS / 2,	 BS / 2 + 1,	 BS};
	const size_t caps[] = {64,
			       4096,
			       (64 << 10) - 1,
			       64 << 10,
			       (64 << 10) + 4096,
			       BS / 2,
			       BS / 2,
			       BS,
			       BS};
	uint64_t used = 0;

	assert_true(BS / 2 > (64 << 10) + 4096);
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		struct cache_block *b = create(c, obj(c, 0), i, lens[i], true);
		size_t want = caps[i];

		assert_non_null(b);
		assert_int_equal(b->cap, want);
		used += want == BS ? want : slab_share(want) + rec(obj(c, 0));
		assert_int_equal(stats(c).used_bytes, used);
		complete(b);
	}
	/* evicting a small block returns exactly its bytes, pools nothing */
	{
		struct cache_block *b = lookup(c, obj(c, 0), 0);

		consume(c, b);
		pthread_mutex_lock(&c->lock);
		assert_true(evict_one(c, false));
		pthread_mutex_unlock(&c->lock);
		assert_null(lookup(c, obj(c, 0), 0));
		assert_int_equal(stats(c).used_bytes,
				 used - slab_share(caps[0]) - rec(obj(c, 0)));
		assert_int_equal(c->pool_count, 0);
	}
	destroy_cache(c);
}

/*
 * Slabs: a slot holds its length and wastes at most a fifth of itself
 * (from 64 bytes), a freed slot is the next one its class hands out,
 * classes never share a slab, and slabs filled and then freed in the
 * order they were filled go back to the system but the few kept.
 */
static void test_slabs(void **state)
{
	struct cache_slabs s;
	enum { N = 4000 };
	static void *p[N];
	void *a, *b;

	(void)state;
	memset(&s, 0, sizeof(s));
	for (size_t len = 1; len <= CACHE_SLAB_MAX; len++) {
		size_t cap = cache_slab_cap(len);

		assert_int_equal(cap, expected_slot(len));
		assert_true(cap >= len);
		assert_true(len <= 64 || cap * 4 <= len * 5);
	}
	assert_int_equal(cache_slab_cap(CACHE_SLAB_MAX + 1), 0);
	/* a slot's charge is its share of a 64 KiB slab: the n slots of
	 * its class that fit beside a header (of 64 to 512 bytes) charge
	 * the slab whole, each its 64 KiB / n rounded up */
	for (size_t len = 1; len <= CACHE_SLAB_MAX; len++) {
		size_t cap = cache_slab_cap(len);
		size_t charge = cache_slab_charge(len);
		bool found = false;

		assert_true(charge >= cap);
		for (size_t n = ((64u << 10) - 512) / cap;
		     n <= ((64u << 10) - 64) / cap; n++)
			found |= ((64u << 10) + n - 1) / n == charge;
		assert_true(found);
	}
	assert_int_equal(cache_slab_charge(CACHE_SLAB_MAX + 1),
			 CACHE_SLAB_MAX + 1);
	a = cache_slab_alloc(&s, 1024);
	b = cache_slab_alloc(&s, 1280);
	assert_non_null(a);
	assert_non_null(b);
	assert_true(((uintptr_t)a >> 16) != ((uintptr_t)b >> 16));
	memset(a, 0xab, 1024);
	cache_slab_free(&s, a);
	assert_ptr_equal(cache_slab_alloc(&s, 1024), a);
	cache_slab_free(&s, a);
	cache_slab_free(&s, b);
	/* 4,000 slots of 2 KiB (31 a slab): 130 slabs, then none but 4 */
	for (int i = 0; i < N; i++) {
		p[i] = cache_slab_alloc(&s, 2048);
		assert_non_null(p[i]);
		memset(p[i], i & 0xff, 2048);
	}
	assert_int_equal(s.mapped, 130 * (64u << 10)); /* 2 kept ones reused */
	for (int i = 0; i < N; i++) {
		assert_int_equal(*(unsigned char *)p[i], i & 0xff);
		cache_slab_free(&s, p[i]);
	}
	assert_int_equal(s.nempty, 4);
	assert_int_equal(s.mapped, 4 * (64u << 10));
	cache_slabs_destroy(&s);
	assert_int_equal(s.mapped, 0);
}

#define SLAB (64u << 10)

/* Whether each page of [p, p + n) is resident: a bit a page in *mask. */
static unsigned resident_pages(const void *p, size_t n, size_t page,
			       uint32_t *mask)
{
	unsigned char vec[SLAB / 4096];
	unsigned count = 0;

	assert_true(n / page <= sizeof(vec));
	assert_int_equal(mincore((void *)p, n, vec), 0);
	*mask = 0;
	for (size_t i = 0; i < n / page; i++) {
		if (vec[i] & 1) {
			*mask |= 1u << i;
			count++;
		}
	}
	return count;
}

/*
 * Slabs give back the pages of free slots: a page of a slab with no slot
 * in use at two sweeps in a row is no longer resident (mincore) and is
 * counted in s.trimmed; a slot taken there again reads back what it is
 * given, and slots in use keep their bytes.  Slots are handed out lowest
 * first.
 */
static void test_slab_trim(void **state)
{
	struct cache_slabs s;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	void *p[31];
	char *base;
	uint32_t mask;

	(void)state;
	if (page != 4096)
		skip(); /* the layout below is for 4 KiB pages */
	memset(&s, 0, sizeof(s));
	/* one slab of 2 KiB slots: 31 of them, the first at byte 192 */
	for (int i = 0; i < 31; i++) {
		p[i] = cache_slab_alloc(&s, 2048);
		assert_non_null(p[i]);
		assert_true(i == 0 || p[i] == (char *)p[i - 1] + 2048);
		memset(p[i], i + 1, 2048);
	}
	base = (char *)((uintptr_t)p[0] & ~(uintptr_t)(SLAB - 1));
	assert_int_equal(s.mapped, SLAB);
	assert_int_equal(s.trimmed, 0);
	assert_int_equal(resident_pages(base, SLAB, page, &mask), 16);
	/* slots 7 to 15 are every slot on pages 4 to 7 (bytes 16384 to
	 * 32767), and half of pages 3 and 8, which keep slots 6 and 16 */
	for (int i = 7; i <= 15; i++)
		cache_slab_free(&s, p[i]);
	cache_slabs_sweep(&s); /* free since this sweep: kept */
	assert_int_equal(s.trimmed, 0);
	assert_int_equal(resident_pages(base, SLAB, page, &mask), 16);
	cache_slabs_sweep(&s); /* and still at the next one: given back */
	assert_int_equal(s.trimmed, 4 * page);
	assert_int_equal(resident_pages(base, SLAB, page, &mask), 12);
	assert_int_equal(mask, 0xffffu & ~0xf0u);
	for (int i = 0; i < 31; i++) {
		if (i < 7 || i > 15) {
			unsigned char *b = p[i];

			for (int j = 0; j < 2048; j++)
				assert_int_equal(b[j], i + 1);
		}
	}
	/* taken again, lowest first, and written: resident again */
	for (int i = 7; i <= 15; i++) {
		void *q = cache_slab_alloc(&s, 2048);

		assert_ptr_equal(q, p[i]);
		memset(q, 0x70 + i, 2048);
	}
	assert_int_equal(s.trimmed, 0);
	assert_int_equal(resident_pages(base, SLAB, page, &mask), 16);
	/* page 7 (slots 13 to 15) taken between two sweeps, and freed again,
	 * was not unused all along: kept */
	for (int i = 13; i <= 15; i++)
		cache_slab_free(&s, p[i]);
	cache_slabs_sweep(&s);
	for (int i = 13; i <= 15; i++)
		assert_ptr_equal(cache_slab_alloc(&s, 2048), p[i]);
	for (int i = 13; i <= 15; i++)
		cache_slab_free(&s, p[i]);
	cache_slabs_sweep(&s);
	assert_int_equal(s.trimmed, 0);
	for (int i = 13; i <= 15; i++) {
		assert_ptr_equal(cache_slab_alloc(&s, 2048), p[i]);
		memset(p[i], 0x70 + i, 2048);
	}
	for (int i = 7; i <= 15; i++) {
		unsigned char *b = p[i];

		for (int j = 0; j < 2048; j++)
			assert_int_equal(b[j], 0x70 + i);
	}
	/* emptied, the slab is kept with only its header's page resident
	 * after the next sweep */
	for (int i = 0; i < 31; i++)
		cache_slab_free(&s, p[i]);
	cache_slabs_sweep(&s);
	assert_int_equal(s.nempty, 1);
	assert_int_equal(s.trimmed, SLAB - page);
	assert_int_equal(resident_pages(base, SLAB, page, &mask), 1);
	cache_slabs_destroy(&s);
	assert_int_equal(s.mapped, 0);
	assert_int_equal(s.trimmed, 0);
}

/*
 * Random takes and frees of slots of several classes against a model:
 * every slot in use keeps what was written in it, and the pages not
 * resident in the slabs are exactly the ones counted as given back.
 */
static void test_slab_trim_stress(void **state)
{
	enum { LIVE = 600, STEPS = 40000, BASES = 512 };
	static const size_t caps[] = {64,   80,	  320,	 1024, 2560,
				      4096, 5120, 12288, 16384};
	static struct {
		unsigned char *p;
		size_t cap;
		unsigned char v;
	} live[LIVE];
	static uintptr_t bases[BASES];
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	struct cache_slabs s;
	unsigned nlive = 0, nbases = 0, seed = 12345;

	(void)state;
	if (page >= SLAB)
		skip();
	memset(&s, 0, sizeof(s));
	memset(live, 0, sizeof(live));
	for (unsigned step = 0; step < STEPS; step++) {
		unsigned r;

		seed = seed * 1103515245u + 12345u;
		r = seed >> 8;
		/* fill up and drain in waves, so slabs empty and refill */
		if (nlive < LIVE &&
		    (nlive == 0 || r % 100 < ((step / 5000) % 2 ? 30u : 70u))) {
			size_t cap =
			    caps[(r >> 8) % (sizeof(caps) / sizeof(*caps))];
			unsigned char *q = cache_slab_alloc(&s, cap);
			uintptr_t b = (uintptr_t)q & ~(uintptr_t)(SLAB - 1);
			unsigned k;

			assert_non_null(q);
			for (unsigned i = 0; i < nlive; i++)
				assert_true(q + cap <= live[i].p ||
					    live[i].p + live[i].cap <= q);
			live[nlive].p = q;
			live[nlive].cap = cap;
			live[nlive].v = (unsigned char)(step | 1);
			memset(q, live[nlive].v, cap);
			nlive++;
			for (k = 0; k < nbases && bases[k] != b; k++)
				;
			if (k == nbases) {
				assert_true(nbases < BASES);
				bases[nbases++] = b;
			}
		} else {
			unsigned i = (r >> 8) % nlive;

			for (size_t j = 0; j < live[i].cap; j++)
				assert_int_equal(live[i].p[j], live[i].v);
			cache_slab_free(&s, live[i].p);
			live[i] = live[--nlive];
		}
		if (step % 1499 == 0)
			cache_slabs_sweep(&s);
		if (step % 997 == 0) {
			uint64_t away = 0, mapped = 0;

			for (unsigned k = 0; k < nbases; k++) {
				unsigned char vec[SLAB / 4096];

				if (mincore((void *)bases[k], SLAB, vec) != 0)
					continue; /* given back whole */
				mapped += SLAB;
				for (size_t i = 0; i < SLAB / page; i++)
					away += !(vec[i] & 1) ? page : 0;
			}
			assert_int_equal(mapped, s.mapped);
			assert_int_equal(away, s.trimmed);
		}
	}
	while (nlive) {
		unsigned i = --nlive;

		for (size_t j = 0; j < live[i].cap; j++)
			assert_int_equal(live[i].p[j], live[i].v);
		cache_slab_free(&s, live[i].p);
	}
	cache_slabs_sweep(&s);
	cache_slabs_sweep(&s);
	assert_true(s.trimmed == s.mapped - s.nempty * page);
	assert_true(s.trims > 0);
	cache_slabs_destroy(&s);
	assert_int_equal(s.mapped, 0);
}

/* a small object's mapping freed by eviction is kept and reused by the
 * next buffer of its size; one of another size gives it back when the
 * budget needs the room */
static void test_spare_buffers(void **state)
{
	const size_t len = 100 << 10;
	struct cache *c = new_cache(4 * len + 16384, BS);
	struct cache_block *b;
	char *data;

	(void)state;
	b = create(c, obj(c, 0), 0, len, true);
	assert_non_null(b);
	data = b->data;
	complete(b);
	consume(c, b);
	pthread_mutex_lock(&c->lock);
	assert_true(evict_one(c, false));
	assert_int_equal(c->nspare, 1);
	assert_int_equal(c->spare_bytes, len);
	pthread_mutex_unlock(&c->lock);
	/* the memory is still counted: it is held (the record went) */
	assert_int_equal(stats(c).used_bytes, len);
	b = create(c, obj(c, 0), 1, len, true);
	assert_non_null(b);
	assert_ptr_equal(b->data, data);
	assert_int_equal(c->nspare, 0);
	assert_int_equal(stats(c).used_bytes, len + rec(obj(c, 0)));
	complete(b);
	/* three more fill the budget; evicting one makes a spare that a
	 * larger buffer cannot use: it is given back for the room */
	for (unsigned i = 2; i < 5; i++) {
		b = create(c, obj(c, 0), i, len, true);
		assert_non_null(b);
		complete(b);
	}
	assert_int_equal(stats(c).used_bytes, 4 * (len + rec(obj(c, 0))));
	b = lookup(c, obj(c, 0), 2);
	consume(c, b);
	pthread_mutex_lock(&c->lock);
	assert_true(evict_one(c, false));
	pthread_mutex_unlock(&c->lock);
	assert_int_equal(c->nspare, 1);
	b = create(c, obj(c, 1), 1, len + 8192, true);
	assert_non_null(b);
	assert_int_equal(c->nspare, 0);
	assert_int_equal(c->spare_bytes, 0);
	assert_int_equal(stats(c).used_bytes,
			 4 * len + 8192 + 3 * rec(obj(c, 0)) + rec(obj(c, 1)));
	complete(b);
	destroy_cache(c);
}

static void test_block_larger_than_budget_refused(void **state)
{
	/* budget below one block: only small blocks can ever fit */
	struct cache *c = new_cache(3 * MIB, 4 * MIB);
	struct cache_block *b;

	assert_false(room(c, 3 * MIB, true));
	assert_null(create(c, obj(c, 0), 0, 3 * MIB, true));
	assert_null(create(c, obj(c, 0), 0, 4 * MIB, true));
	assert_int_equal(stats(c).used_bytes, 0);
	b = create(c, obj(c, 0), 0, 2 * MIB, true);
	assert_non_null(b);
	assert_int_equal(b->cap, 2 * MIB);
	complete(b);
	/* evicting everything would still not make a whole block fit */
	assert_null(create(c, obj(c, 0), 1, 4 * MIB, true));
	assert_ptr_equal(lookup(c, obj(c, 0), 0), b);
	assert_int_equal(stats(c).evictions, 0);
	destroy_cache(c);
}

/*
 * A block is at most block_size bytes (cache.h).  A longer one would get a
 * buffer of only block_size bytes (buffer_cap) and the GET would write past
 * it; one longer than the budget would break the budget outright.
 */
static void test_block_over_block_size_refused(void **state)
{
	struct cache *c = new_cache(2 * BS, BS);
	struct cache_block *b;

	b = create(c, obj(c, 0), 0, 2 * BS + 1, true); /* > budget */
	assert_null(b);
	b = create(c, obj(c, 0), 1, BS + 1, true); /* > block_size */
	assert_null(b);
	assert_int_equal(stats(c).used_bytes, 0);
	destroy_cache(c);
}

/* ---- table ---- */

static void test_table_growth(void **state)
{
	const size_t n = 3 * 2048 + 7;
	struct cache *c = new_cache(64 * MIB, MIB);
	struct cache_block **blocks = calloc(n, sizeof(*blocks));
	size_t initial = c->nbuckets;
	uint64_t used = 0;

	assert_non_null(blocks);
	for (size_t i = 0; i < n; i++) {
		/* several segments, indexes that collide in the low bits */
		blocks[i] = create(c, obj(c, i % 3), (i / 3) * 1024, 16, false);
		assert_non_null(blocks[i]);
		used += slab_share(64) + rec(obj(c, i % 3)); /* 64-byte slots */
	}
	assert_int_equal(c->nblocks, n);
	assert_true(c->nbuckets > initial);
	assert_true(c->nblocks <= 2 * c->nbuckets);
	assert_int_equal(stats(c).used_bytes, used);
	for (size_t i = 0; i < n; i++)
		assert_ptr_equal(lookup(c, obj(c, i % 3), (i / 3) * 1024),
				 blocks[i]);
	/* keys never inserted miss */
	for (size_t i = 0; i < 4096; i++) {
		assert_null(lookup(c, obj(c, 3), i));
		assert_null(lookup(c, obj(c, 0), i * 1024 + 1));
	}
	/* removal from the grown table: every 5th fails, the rest stay */
	for (size_t i = 0; i < n; i++) {
		if (i % 5 == 0)
			fail_fetch(blocks[i], EIO);
		else
			complete(blocks[i]);
	}
	for (size_t i = 0; i < n; i++) {
		struct cache_block *b =
		    lookup(c, obj(c, i % 3), (i / 3) * 1024);

		if (i % 5 == 0)
			assert_null(b);
		else
			assert_ptr_equal(b, blocks[i]);
	}
	assert_int_equal(c->nblocks, n - (n + 4) / 5);
	free(blocks);
	destroy_cache(c);
}

/* ---- stats ---- */

static void test_stats(void **state)
{
	struct cache *c = new_cache(3 * BS, BS);
	struct cache_block *a, *b, *s;
	struct cache_stats st;

	st = stats(c);
	assert_int_equal(st.budget_bytes, 3 * BS);
	assert_int_equal(st.used_bytes, 0);
	assert_int_equal(st.peak_bytes, 0);
	s = ready(c, obj(c, 0), 0, 100, true);
	a = ready(c, obj(c, 0), 1, BS, true);
	st = stats(c);
	/* 100 bytes: a 112 slot, and the block's record */
	assert_int_equal(st.used_bytes, BS + slab_share(112) + rec(obj(c, 0)));
	assert_int_equal(st.peak_bytes, BS + slab_share(112) + rec(obj(c, 0)));
	b = ready(c, obj(c, 0), 2, BS, true);
	st = stats(c);
	assert_int_equal(st.used_bytes,
			 2 * BS + slab_share(112) + rec(obj(c, 0)));
	assert_int_equal(st.peak_bytes,
			 2 * BS + slab_share(112) + rec(obj(c, 0)));
	assert_int_equal(st.evictions, 0);
	/* 3 BS + 112 would not fit: s, the coldest, goes */
	assert_non_null(ready(c, obj(c, 0), 3, BS, true));
	assert_null(lookup(c, obj(c, 0), 0));
	st = stats(c);
	assert_int_equal(st.evictions, 1);
	assert_int_equal(st.used_bytes, 3 * BS);
	assert_int_equal(st.peak_bytes, 3 * BS);
	/* freeing into the pool keeps used; dropping pooled bytes for a
	 * small block lowers used but never the peak */
	pin(c, b);
	consume(c, a);
	assert_non_null(ready(c, obj(c, 0), 4, 10, false)); /* evicts a */
	st = stats(c);
	assert_int_equal(st.evictions, 2);
	/* 10 bytes: a slot, and a record */
	assert_int_equal(st.used_bytes,
			 2 * BS + slab_share(64) + rec(obj(c, 0)));
	assert_int_equal(st.peak_bytes, 3 * BS);
	assert_int_equal(st.fetch_errors, 0);
	assert_int_equal(st.hits + st.misses + st.prefetched + st.seeks, 0);
	(void)s;
	unpin(c, b);
	destroy_cache(c);
}

/* ---- objects ---- */

static struct cache_object *get_obj(struct cache *c, const char *bucket,
				    const char *key, const char *etag,
				    uint64_t size)
{
	struct cache_object *o = cache_object_get(c, bucket, key, etag, size);

	assert_non_null(o);
	return o;
}

static void put_obj(struct cache *c, struct cache_object *o)
{
	cache_object_put(c, o);
}

static size_t objects_in(struct cache *c)
{
	size_t n;

	pthread_mutex_lock(&c->lock);
	n = c->nobjects;
	pthread_mutex_unlock(&c->lock);
	return n;
}

/* One version is one object: the same (bucket, key, ETag, size) finds it
 * again; any part that differs makes another. */
static void test_object_interning(void **state)
{
	struct cache *c = new_cache(4 * BS, BS);
	struct cache_object *a = get_obj(c, "bkt", "k/a", "\"e1\"", 1000);
	struct cache_object *same, *other[6];

	assert_string_equal(cache_object_bucket(a), "bkt");
	assert_string_equal(cache_object_key(a), "k/a");
	assert_string_equal(a->etag, "\"e1\"");
	assert_int_equal(cache_object_size(a), 1000);
	assert_int_equal(refs_of(c, a), 1);
	assert_int_equal(objects_in(c), NOBJS + 1);
	same = get_obj(c, "bkt", "k/a", "\"e1\"", 1000);
	assert_ptr_equal(same, a);
	assert_int_equal(refs_of(c, a), 2);
	assert_int_equal(objects_in(c), NOBJS + 1);
	other[0] = get_obj(c, "bkt", "k/a", "\"e2\"", 1000);  /* ETag */
	other[1] = get_obj(c, "bkt", "k/a", "\"e1\"", 1001);  /* size */
	other[2] = get_obj(c, "bkt", "k/b", "\"e1\"", 1000);  /* key */
	other[3] = get_obj(c, "bkt2", "k/a", "\"e1\"", 1000); /* bucket */
	other[4] = get_obj(c, "bkt", "k/a", NULL, 1000);      /* no ETag */
	other[5] = get_obj(c, "bkt", "k/a", "", 1000); /* "" is not NULL */
	for (int i = 0; i < 6; i++) {
		assert_ptr_not_equal(other[i], a);
		for (int j = 0; j < i; j++)
			assert_ptr_not_equal(other[i], other[j]);
		assert_int_equal(refs_of(c, other[i]), 1);
	}
	assert_null(other[4]->etag);
	assert_int_equal(objects_in(c), NOBJS + 7);
	/* the parts are copies */
	{
		char key[8] = "k/x", etag[8] = "\"ex\"";
		struct cache_object *x = get_obj(c, "bkt", key, etag, 5);

		key[2] = 'y';
		etag[2] = 'y';
		assert_ptr_equal(get_obj(c, "bkt", "k/x", "\"ex\"", 5), x);
		assert_int_equal(refs_of(c, x), 2);
		put_obj(c, x);
		put_obj(c, x);
	}
	/* the last put frees it: the table forgets it, and the others stay */
	put_obj(c, same);
	assert_int_equal(refs_of(c, a), 1);
	put_obj(c, a);
	assert_int_equal(objects_in(c), NOBJS + 6);
	for (int i = 0; i < 6; i++) {
		assert_ptr_equal(get_obj(c, cache_object_bucket(other[i]),
					 cache_object_key(other[i]),
					 other[i]->etag, other[i]->size),
				 other[i]);
		put_obj(c, other[i]);
		put_obj(c, other[i]);
	}
	assert_int_equal(objects_in(c), NOBJS);
	/* the same identity again is a fresh object with one reference */
	a = get_obj(c, "bkt", "k/a", "\"e1\"", 1000);
	assert_int_equal(refs_of(c, a), 1);
	assert_int_equal(objects_in(c), NOBJS + 1);
	put_obj(c, a);
	assert_int_equal(objects_in(c), NOBJS);
	destroy_cache(c);
}

/* The object table grows past its first size and still finds every
 * object, and empties again. */
static void test_object_table_growth(void **state)
{
	const size_t n = 5000;
	struct cache *c = new_cache(4 * BS, BS);
	struct cache_object **o = calloc(n, sizeof(*o));
	char key[32];

	assert_non_null(o);
	for (size_t i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "key/%zu", i);
		o[i] = get_obj(c, "bkt", key, i % 2 ? "\"e\"" : NULL, i);
	}
	assert_int_equal(objects_in(c), NOBJS + n);
	assert_true(c->nobject_buckets > 1024);
	for (size_t i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "key/%zu", i);
		assert_ptr_equal(
		    get_obj(c, "bkt", key, i % 2 ? "\"e\"" : NULL, i), o[i]);
		put_obj(c, o[i]);
		/* another ETag or size is not found, but made */
		put_obj(c, get_obj(c, "bkt", key, i % 2 ? NULL : "\"e\"", i));
		put_obj(c,
			get_obj(c, "bkt", key, i % 2 ? "\"e\"" : NULL, i + 1));
	}
	assert_int_equal(objects_in(c), NOBJS + n);
	for (size_t i = 0; i < n; i++)
		put_obj(c, o[i]);
	assert_int_equal(objects_in(c), NOBJS);
	free(o);
	destroy_cache(c);
}

/*
 * A block holds a reference on its object: with every outside reference
 * gone, the object (and its blocks) are still found by the next stream
 * that names the version, until the last block goes.
 */
static void test_block_keeps_object(void **state)
{
	struct cache *c = new_cache(2 * BS, BS);
	struct cache_object *o = get_obj(c, "bkt", "k", "\"e\"", 3 * BS);
	struct cache_object *again;
	struct cache_block *b0 = ready(c, o, 0, BS, true);
	struct cache_block *b1 = create(c, o, 1, BS, true);

	assert_non_null(b1);
	assert_ptr_equal(b0->obj, o);
	assert_int_equal(refs_of(c, o), 3);
	put_obj(c, o); /* the stream that named it went away */
	assert_int_equal(objects_in(c), NOBJS + 1);
	again = get_obj(c, "bkt", "k", "\"e\"", 3 * BS);
	assert_ptr_equal(again, o);
	assert_ptr_equal(lookup(c, again, 0), b0);
	assert_ptr_equal(lookup(c, again, 1), b1);
	put_obj(c, again);
	assert_int_equal(refs_of(c, o), 2);
	/* another version of the key does not see them */
	again = get_obj(c, "bkt", "k", "\"f\"", 3 * BS);
	assert_ptr_not_equal(again, o);
	assert_null(lookup(c, again, 0));
	put_obj(c, again);
	/* a failed fetch lets go of its reference once unpinned */
	pin(c, b1);
	fail_fetch(b1, EIO);
	assert_int_equal(refs_of(c, o), 2);
	unpin(c, b1);
	assert_int_equal(refs_of(c, o), 1);
	/* the last block evicted: the object goes (valgrind: no
	 * use-after-free, no leak) */
	consume(c, b0);
	pthread_mutex_lock(&c->lock);
	assert_true(evict_one(c, false));
	pthread_mutex_unlock(&c->lock);
	assert_int_equal(objects_in(c), NOBJS);
	destroy_cache(c);
}

/* Blocks of the same key under two ETags, or two sizes, are apart. */
static void test_blocks_per_version(void **state)
{
	struct cache *c = new_cache(4 * BS, BS);
	struct cache_object *v1 = get_obj(c, "bkt", "k", "\"1\"", 2 * BS);
	struct cache_object *v2 = get_obj(c, "bkt", "k", "\"2\"", 2 * BS);
	struct cache_object *v3 = get_obj(c, "bkt", "k", "\"1\"", 2 * BS + 1);
	struct cache_block *b1 = ready(c, v1, 0, BS, true);
	struct cache_block *b2;

	assert_null(lookup(c, v2, 0));
	assert_null(lookup(c, v3, 0));
	b2 = ready(c, v2, 0, BS, true);
	assert_ptr_not_equal(b1, b2);
	assert_ptr_equal(lookup(c, v1, 0), b1);
	assert_ptr_equal(lookup(c, v2, 0), b2);
	assert_null(lookup(c, v3, 0));
	/* the block length follows the version's size */
	assert_int_equal(cache_block_len(c, v1, 1), BS);
	assert_int_equal(cache_block_len(c, v3, 2), 1);
	put_obj(c, v1);
	put_obj(c, v2);
	put_obj(c, v3);
	destroy_cache(c);
}

/* ---- buffers for stages ---- */

/*
 * cache_buffer_get() lends whole-block buffers from the same budget:
 * they count in used_bytes, come from consumed blocks without demand, from
 * any idle block with it, and not at all when everything is unread (no
 * demand) or held.
 */
static void test_buffer_budget(void **state)
{
	struct cache *c = new_cache(8 * BS, BS);
	struct cache_block *b[7];
	void *buf[4];

	assert_int_equal(cache_buffer_size(c), BS);
	assert_int_equal(cache_budget(c), 8 * BS);
	buf[0] = cache_buffer_get(c, false);
	assert_non_null(buf[0]);
	memset(buf[0], 0xAB, BS); /* the whole buffer is ours */
	assert_int_equal(stats(c).used_bytes, BS);
	for (int i = 0; i < 7; i++)
		b[i] = ready(c, obj(c, 0), i, BS, false);
	assert_int_equal(stats(c).used_bytes, 8 * BS);
	/* full of unread blocks: no buffer without demand, nothing evicted */
	assert_null(cache_buffer_get(c, false));
	assert_int_equal(stats(c).evictions, 0);
	assert_int_equal(stats(c).used_bytes, 8 * BS);
	/* a consumed block may go for it */
	consume(c, b[1]);
	buf[1] = cache_buffer_get(c, false);
	assert_non_null(buf[1]);
	assert_null(lookup(c, obj(c, 0), 1));
	assert_ptr_equal(lookup(c, obj(c, 0), 0), b[0]);
	assert_int_equal(stats(c).evictions, 1);
	assert_int_equal(stats(c).used_bytes, 8 * BS);
	assert_null(cache_buffer_get(c, false));
	/* demand evicts the coldest idle block */
	buf[2] = cache_buffer_get(c, true);
	assert_non_null(buf[2]);
	assert_null(lookup(c, obj(c, 0), 0));
	assert_ptr_equal(lookup(c, obj(c, 0), 2), b[2]);
	assert_int_equal(stats(c).evictions, 2);
	/* held blocks and buffers leave nothing to take */
	for (int i = 2; i < 7; i++)
		pin(c, b[i]);
	assert_null(cache_buffer_get(c, true));
	assert_false(room(c, 1, true));
	assert_null(create(c, obj(c, 1), 0, 1000, true));
	assert_int_equal(stats(c).used_bytes, 8 * BS);
	assert_int_equal(stats(c).peak_bytes, 8 * BS);
	/* a buffer given back is room again (pooled: still counted until a
	 * block takes it) */
	cache_buffer_put(c, buf[0]);
	assert_int_equal(stats(c).used_bytes, 8 * BS);
	assert_true(room(c, BS, false));
	buf[3] = cache_buffer_get(c, false);
	assert_ptr_equal(buf[3], buf[0]);
	cache_buffer_put(c, buf[3]);
	assert_non_null(create(c, obj(c, 1), 0, BS, false));
	assert_int_equal(c->pool_count, 0);
	cache_buffer_put(c, NULL); /* nothing */
	cache_buffer_put(c, buf[1]);
	cache_buffer_put(c, buf[2]);
	assert_int_equal(c->pool_count, 2);
	assert_int_equal(stats(c).used_bytes, 8 * BS);
	for (int i = 2; i < 7; i++)
		unpin(c, b[i]);
	destroy_cache(c);
}

/*
 * Without demand, buffers lent out stay within half the budget however
 * much room there is (stages working ahead must not starve the one a
 * reader waits for); with demand the whole budget is there.
 */
static void test_buffer_lent_half(void **state)
{
	struct cache *c = new_cache(8 * BS, BS);
	void *buf[9];

	for (int i = 0; i < 4; i++) {
		buf[i] = cache_buffer_get(c, false);
		assert_non_null(buf[i]);
	}
	assert_int_equal(stats(c).used_bytes, 4 * BS);
	assert_true(room(c, BS, false));
	assert_null(cache_buffer_get(c, false));
	for (int i = 4; i < 8; i++) {
		buf[i] = cache_buffer_get(c, true);
		assert_non_null(buf[i]);
	}
	assert_int_equal(stats(c).used_bytes, 8 * BS);
	assert_null(cache_buffer_get(c, true));
	/* a block does not fit beside them */
	assert_null(create(c, obj(c, 0), 0, 1, true));
	/* given back: lendable again, up to half */
	cache_buffer_put(c, buf[7]);
	cache_buffer_put(c, buf[6]);
	cache_buffer_put(c, buf[5]);
	assert_int_equal(c->pool_count, 3);
	assert_null(cache_buffer_get(c, false)); /* 5 of 8 still lent */
	cache_buffer_put(c, buf[4]);
	cache_buffer_put(c, buf[0]);
	buf[8] = cache_buffer_get(c, false); /* 4 lent after it */
	assert_non_null(buf[8]);
	assert_null(cache_buffer_get(c, false));
	/* a small block takes pooled bytes back */
	assert_non_null(create(c, obj(c, 0), 0, 1000, true));
	assert_int_equal(stats(c).used_bytes,
			 7 * BS + slab_share(1024) + rec(obj(c, 0)));
	for (int i = 1; i < 4; i++)
		cache_buffer_put(c, buf[i]);
	cache_buffer_put(c, buf[8]);
	assert_int_equal(stats(c).used_bytes,
			 7 * BS + slab_share(1024) + rec(obj(c, 0)));
	destroy_cache(c);
}

/* What cache_create() works out from the budget and the store. */
static void test_derived_settings(void **state)
{
	struct cache_conf conf;
	struct cache *c;

	if (!store)
		store = test_store_create(false, 4);
	assert_non_null(store);
	cache_conf_init(&conf); /* 256 MiB, 8 MiB blocks */
	c = cache_create(&conf, &store->store);
	assert_non_null(c);
	assert_int_equal(c->conf.max_window, 128 * MIB);
	assert_int_equal(c->conf.request_size, 32 * MIB); /* capped */
	assert_int_equal(c->run_max, 4);
	assert_int_equal(c->conf.max_ahead_objects, 4 * 4);
	assert_int_equal(c->conf.fault_in_max_bytes, 144 * MIB);
	cache_destroy(c);
	/* a small budget: everything scales down with it */
	conf.budget_bytes = 64 * MIB;
	c = cache_create(&conf, &store->store);
	assert_non_null(c);
	assert_int_equal(c->conf.max_window, 32 * MIB);
	assert_int_equal(c->conf.request_size, 8 * MIB);
	assert_int_equal(c->run_max, 1);
	assert_int_equal(c->conf.fault_in_max_bytes, 48 * MIB);
	cache_destroy(c);
	/* a large one: the fault-in stays bounded; the window is never
	 * under two blocks; what the conf sets is kept */
	conf.budget_bytes = 4096ull * MIB;
	conf.max_ahead_objects = 7;
	c = cache_create(&conf, &store->store);
	assert_non_null(c);
	assert_int_equal(c->conf.max_window, 2048ull * MIB);
	assert_int_equal(c->conf.fault_in_max_bytes, 144 * MIB);
	assert_int_equal(c->conf.max_ahead_objects, 7);
	cache_destroy(c);
	conf.budget_bytes = 16 * MIB;
	conf.max_window = 1;
	c = cache_create(&conf, &store->store);
	assert_non_null(c);
	assert_int_equal(c->conf.max_window, 16 * MIB);
	cache_destroy(c);
}

/* Every cache is gone: the GETs a test left open have nowhere to report. */
static int free_store(void **state)
{
	store->ngets = 0;
	test_store_destroy(store);
	store = NULL;
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_budget_random),
	    cmocka_unit_test(test_admission_random),
	    cmocka_unit_test(test_kept_random),
	    cmocka_unit_test(test_prefetch_evicts_only_consumed),
	    cmocka_unit_test(test_prefetch_fails_when_full_of_unconsumed),
	    cmocka_unit_test(test_demand_evicts_coldest),
	    cmocka_unit_test(test_room_counts_evicted_cap),
	    cmocka_unit_test(test_pinned_and_fetching_never_evicted),
	    cmocka_unit_test(test_eviction_order),
	    cmocka_unit_test(test_kept_quota),
	    cmocka_unit_test(test_kept_quota_derived),
	    cmocka_unit_test(test_eviction_classes),
	    cmocka_unit_test(test_kept_stale),
	    cmocka_unit_test(test_failed_fetch_removed),
	    cmocka_unit_test(test_run_fetch_partial),
	    cmocka_unit_test(test_pool_reuse),
	    cmocka_unit_test(test_pool_counts_toward_budget),
	    cmocka_unit_test(test_fault_in_fills_pool),
	    cmocka_unit_test(test_fault_in_counts_pooled_blocks_only),
	    cmocka_unit_test(test_fault_in_within_budget_and_max),
	    cmocka_unit_test(test_small_blocks_exact),
	    cmocka_unit_test(test_slabs),
	    cmocka_unit_test(test_slab_trim),
	    cmocka_unit_test(test_slab_trim_stress),
	    cmocka_unit_test(test_spare_buffers),
	    cmocka_unit_test(test_block_larger_than_budget_refused),
	    cmocka_unit_test(test_block_over_block_size_refused),
	    cmocka_unit_test(test_table_growth),
	    cmocka_unit_test(test_stats),
	    cmocka_unit_test(test_derived_settings),
	    cmocka_unit_test(test_object_interning),
	    cmocka_unit_test(test_object_table_growth),
	    cmocka_unit_test(test_block_keeps_object),
	    cmocka_unit_test(test_blocks_per_version),
	    cmocka_unit_test(test_buffer_budget),
	    cmocka_unit_test(test_buffer_lent_half),
	};

	return cmocka_run_group_tests(tests, NULL, free_store);
}
