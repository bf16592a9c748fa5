/*
 * cache: the cache object, its settings and the values derived from them.
 *
 * cache_conf_init() holds every default.  cache_create() works out what the
 * conf leaves to it from the budget it is given and the store below it:
 *
 *   max_window        half the budget (128 MiB of the default 256 MiB, four
 *                     32 MiB GETs in flight on large objects: S3 serves
 *                     each connection at a limited rate, so parallel
 *                     streams count), at least two blocks;
 *   request_size      a quarter of the window, at most 32 MiB: fewer,
 *                     larger GETs cost servers less per byte;
 *   max_ahead_objects four per request the store runs at once: enough
 *                     fetched small objects to keep every connection busy;
 *   fault_in_max_bytes    a first window and two blocks (what a reader's first
 *                     read takes), at most FAULT_IN_LIMIT: faulting in 144 MiB
 *                     took 115-213 ms at mount on these machines, and a
 *                     larger cache must not hold up the mount for longer;
 *   kept quota        half the budget, at most what max_window leaves of
 *                     it (a reader's full window must still fit beside
 *                     the kept set); kept_max when set, at most the budget
 *                     less two blocks (0: none).  Half: a scan larger than the
 *                     budget then gets half the budget from memory every
 *                     pass, and one reader's window still has the other
 *                     half (128 MiB of the default 256 MiB, as before);
 *   piece size        CACHE_PIECE_SIZE, 128 KiB (cache_piece_size()): what
 *                     a reader that jumps about gets for a read of a few
 *                     KiB.  At S3's tens of ms to a first byte and its
 *                     tens of MB/s a connection, 128 KiB adds a few ms
 *                     to a 4 KiB GET, where a whole 8 MiB block adds
 *                     hundreds; it is the kernel's default readahead (a
 *                     page-cache read that the kernel reads ahead for takes
 *                     one piece), and a neighbouring read (a B-tree node
 *                     and its chunk) often falls in the same piece.
 *
 * The blocks, streams and readers are in block.c, stream.c and reader.c.
 */
#include "config.h"

#include "cache/internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* the largest automatic request_size: past it a GET saves servers little */
#define REQUEST_SIZE_AUTO_MAX (32u << 20)
/* small objects fetched ahead per request the store runs at once */
#define AHEAD_OBJECTS_PER_REQUEST 4
/* the most memory faulted in per stream before the mount appears */
#define FAULT_IN_LIMIT (144u << 20)

void cache_conf_init(struct cache_conf *conf)
{
	memset(conf, 0, sizeof(*conf));
	conf->budget_bytes = CACHE_DEFAULT_BUDGET;
	conf->block_size = CACHE_DEFAULT_BLOCK_SIZE;
	conf->list_page_keys = 1000; /* S3's most per page */
	conf->first_page_keys = 100;
	conf->kept_max = CACHE_KEPT_AUTO;
}

/* Fills in what c->conf left to the cache (see the top of the file). */
static void derive(struct cache *c, const struct store *store)
{
	struct cache_conf *conf = &c->conf;

	if (!conf->max_window)
		conf->max_window = conf->budget_bytes / 2;
	if (conf->max_window < 2 * conf->block_size)
		conf->max_window = 2 * conf->block_size;
	if (!conf->request_size) {
		conf->request_size = conf->max_window / 4;
		if (conf->request_size > REQUEST_SIZE_AUTO_MAX)
			conf->request_size = REQUEST_SIZE_AUTO_MAX;
	}
	if (!conf->max_ahead_objects && store)
		conf->max_ahead_objects =
		    AHEAD_OBJECTS_PER_REQUEST * store->max_parallel;
	if (!conf->first_page_keys)
		conf->first_page_keys = conf->list_page_keys;
	if (!conf->fault_in_max_bytes) {
		conf->fault_in_max_bytes =
		    conf->max_window + 2 * conf->block_size;
		if (conf->fault_in_max_bytes > FAULT_IN_LIMIT)
			conf->fault_in_max_bytes = FAULT_IN_LIMIT;
	}
	c->run_max = (unsigned)(conf->request_size / conf->block_size);
	if (c->run_max < 1)
		c->run_max = 1;
	if (c->run_max > STORE_GET_BUFFERS_MAX)
		c->run_max = STORE_GET_BUFFERS_MAX;
	c->pool_max = conf->budget_bytes / conf->block_size;
	c->piece_size = cache_piece_size(conf->block_size);
	if (conf->kept_max != CACHE_KEPT_AUTO) {
		uint64_t most = conf->budget_bytes > 2 * conf->block_size
				    ? conf->budget_bytes - 2 * conf->block_size
				    : 0;

		c->kept_quota = conf->kept_max < most ? conf->kept_max : most;
	} else {
		c->kept_quota = conf->budget_bytes / 2;
		if (conf->max_window >= conf->budget_bytes)
			c->kept_quota = 0;
		else if (c->kept_quota > conf->budget_bytes - conf->max_window)
			c->kept_quota = conf->budget_bytes - conf->max_window;
	}
}

uint64_t cache_piece_size(uint64_t block_size)
{
	for (uint64_t p = CACHE_PIECE_SIZE; p >= CACHE_PIECE_SIZE / 2; p /= 2) {
		if (block_size % p == 0)
			return block_size > p ? p : 0;
	}
	return 0;
}

struct cache *cache_create(const struct cache_conf *conf, struct store *store)
{
	struct cache *c = NULL;

	if (!conf->block_size || !conf->list_page_keys) {
		errno = EINVAL;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		goto nomem;
	c->conf = *conf;
	c->store = store;
	derive(c, store);
	c->nbuckets = 1024;
	c->table = calloc(c->nbuckets, sizeof(*c->table));
	c->pool = calloc(c->pool_max + 1, sizeof(*c->pool));
	if (!c->table || !c->pool)
		goto nomem;
	c->stats.budget_bytes = conf->budget_bytes;
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->memory, NULL);
	return c;

nomem:
	if (c) {
		free(c->table);
		free(c->pool);
		free(c);
	}
	errno = ENOMEM;
	return NULL;
}

void cache_destroy(struct cache *c)
{
	if (!c)
		return;
	if (c->fault_in_started) {
		pthread_mutex_lock(&c->lock);
		c->fault_in_stop = true;
		pthread_mutex_unlock(&c->lock);
		pthread_join(c->fault_in_thread, NULL);
	}
	for (size_t i = 0; i < c->nbuckets; i++) {
		struct cache_block *b = c->table[i];

		while (b) {
			struct cache_block *next = b->hash_next;

			cache_block_free(c, b);
			b = next;
		}
	}
	free(c->table);
	cache_object_table_free(c);
	while (c->pool_count)
		cache_buffer_free(c, c->pool[--c->pool_count],
				  c->conf.block_size);
	cache_spares_free(c);
	cache_slabs_destroy(&c->slabs);
	free(c->pool);
	pthread_cond_destroy(&c->memory);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

void cache_get_stats(struct cache *c, struct cache_stats *out)
{
	pthread_mutex_lock(&c->lock);
	*out = c->stats;
	out->kept_bytes = c->kept_bytes;
	out->objects = c->nobjects;
	out->segments = c->nsegments;
	pthread_mutex_unlock(&c->lock);
}

void cache_lock(struct cache *c)
{
	pthread_mutex_lock(&c->lock);
}

void cache_unlock(struct cache *c)
{
	pthread_mutex_unlock(&c->lock);
}

uint64_t cache_budget(const struct cache *c)
{
	return c->conf.budget_bytes;
}

uint64_t cache_block_size(const struct cache *c)
{
	return c->conf.block_size;
}

uint64_t cache_max_window(const struct cache *c)
{
	return c->conf.max_window;
}
