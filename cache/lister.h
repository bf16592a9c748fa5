/*
 * cache lister: one prefix listed over disjoint key ranges at once, into a
 * catalog (cache/catalog.h), with no hint about the keys' layout.
 *
 * ListObjectsV2 pages follow one another (each names where the next
 * starts), so one listing of a million keys is a thousand round trips in
 * a row.  The lister starts with one range, the whole prefix; whenever a
 * range's page comes back with more to go and fewer than max_listers
 * ranges are being listed, the rest of that range is split where its
 * keys are (the digits its keys count in, see lister.c), and each new
 * part is listed from its start (start-after) at once.  A part with no
 * keys costs one request; a part's last page, usually short, another:
 * on a million keys of a dataset's shards the requests stay within 1.1
 * times the pages of 1,000 keys.  Keys are ordered as S3 orders them
 * (UTF-8 bytes), and the split keys are valid UTF-8.  The catalog gets
 * each range's keys as they arrive, and their positions in key order as
 * soon as every range before them is complete: the first range streams
 * as a sequential listing would.
 *
 * A server that gives keys out of order (no start-after, or no order:
 * S3 Express directory buckets) makes the lister start again with one
 * range, page after page, taking keys as they come.
 *
 * Listers are requests of the store like any other: they share its
 * connections and its throttling (a SlowDown halves them).  They start
 * few and double while that does not make requests take longer: S3
 * answers the requests of one prefix side by side, a server of one thread
 * only queues them, and there more ranges would be more requests for
 * nothing; past that, while more requests at once still answer more
 * pages a second (a server that waits a while before each page).
 */
#ifndef S3PIPE_CACHE_LISTER_H
#define S3PIPE_CACHE_LISTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cache/catalog.h"
#include "store/store.h"

/* key ranges listed at once by default: 32 requests of 20-100 ms stay far
 * below S3's documented 5,500 GET/HEAD (LIST included) a second for one
 * prefix */
#define CACHE_LISTERS_DEFAULT 32
#define CACHE_LISTERS_MAX     256
/* requests in flight that count as a wide listing in the stats */
#define CACHE_LISTERS_WIDE 16

struct cache_lister_conf {
	unsigned max_listers;	  /* 1: one page after another */
	unsigned page_keys;	  /* keys per page, 1-1000 */
	unsigned first_page_keys; /* the first page's (small: a fast start) */
	/* start with few listers and double them while that pays (more
	 * keys a second); false: max_listers from the start */
	bool paced;
};

void cache_lister_conf_init(struct cache_lister_conf *conf);

struct cache_lister_stats {
	uint64_t pages;	 /* answered */
	uint64_t ranges; /* ranges made, the first included */
	uint64_t empty;	 /* ranges that held no key */
	unsigned in_flight_max;
	unsigned listers;   /* ranges allowed at once at the end (the pace) */
	unsigned depth;	    /* the longest chain of requests, each made
			       when the one before it was answered: the
			       listing's time in round trips */
	uint64_t objects;   /* entries added to the catalog */
	uint64_t discarded; /* keys answered past a range's end */
	/* ns with any request in flight, with CACHE_LISTERS_WIDE or more,
	 * and the requests in flight summed over time (ns): their mean is
	 * flight_ns / busy_ns */
	uint64_t busy_ns, wide_ns, flight_ns;
	bool complete;
};

/*
 * Starts listing cat's bucket/prefix through the cache's store into cat
 * (which must stay until the lister is destroyed and get no other
 * entries); conf NULL: the defaults.  NULL and errno when it cannot
 * start.
 */
struct cache_lister *cache_lister_start(struct cache *c,
					struct cache_catalog *cat,
					const struct cache_lister_conf *conf);
/*
 * Waits until the catalog has more than pos positions in key order, or the
 * listing is over.  0; ENODATA when the listing is complete and has no
 * position pos; EIO when it failed (err, when set, says how: the first
 * error of a request, or a hostile page).
 */
int cache_lister_wait(struct cache_lister *l, size_t pos,
		      struct store_error *err);
void cache_lister_get_stats(struct cache_lister *l,
			    struct cache_lister_stats *out);
/* Stops listing (requests in flight are waited for) and frees l. */
void cache_lister_destroy(struct cache_lister *l);

#endif
