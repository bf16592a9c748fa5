/*
 * channel core: what the files of channel/ that make a channel's epochs
 * share: the channel, its epoch plans, and the functions that cross from
 * one file to another.  channel.c holds a channel's life and its epochs'
 * prefetch; plan.c the epochs' plans and what an entry becomes in a
 * stream; listing.c a key-order epoch's listing stream; reader.c the
 * readers and their stacks of stages; start.c a channel's start (its
 * listing, its manifest, the listings kept for the next mount and the
 * next worker).
 */
#ifndef S3PIPE_CHANNEL_CORE_H
#define S3PIPE_CHANNEL_CORE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "channel/internal.h"

struct cache_listing_file;
struct cache_object;
struct cache_stream;

enum channel_mode {
	MODE_LISTING, /* a listing stream per epoch */
	MODE_PLAN,    /* a plan stream per epoch */
};

struct epoch_plan {
	struct channel *ch;
	unsigned epoch;
	struct cache_stream *stream; /* a listing (MODE_LISTING): no entries */
	/* catalog entries, or indices of the channel's entries: this host's
	 * share, in order (plan_item()); NULL when that is every one in the
	 * catalog's key order or the entries' own (no shuffle, no share, no
	 * empty object), which takes no memory a key */
	uint32_t *order;
	size_t n;
	size_t next;	  /* order[next] is the next entry to add */
	size_t asked;	  /* resolves were started for order[next..asked) */
	unsigned readers; /* open channel readers */
	bool ended;	  /* the stream was ended */
	char *error;	  /* why it ended early (owned), logged once */
	bool error_logged;
	/* a catalog plan's: the stream bytes before every PLAN_INDEX_STEP'th
	 * entry, made for the first plan_create_from() (NULL until then) */
	uint64_t *index;
	/* order and index are the shared plan's (plan_create_from()) */
	bool borrowed;
	/* order is read in place from the last worker's kept order
	 * (plan_order_take): this mapping, of this many bytes, gone with
	 * the plan */
	void *order_map;
	size_t order_map_bytes;
	struct epoch_plan *older;
};

/* The catalog entry or entries' index at place i of p's order. */
uint32_t plan_item(const struct epoch_plan *p, size_t i);

struct channel {
	const struct channel_spec *spec;
	struct channel_host host;
	struct channel_conf conf;
	struct cache *cache;
	enum channel_mode mode;
	bool framed;			 /* RecordIO segments in the streams */
	struct cache_catalog *catalog;	 /* MODE_PLAN of an S3 prefix */
	struct channel_entries *entries; /* MODE_PLAN of a manifest */
	struct channel_tree *tree;	 /* FastFile: over the catalog */
	int handover_fd; /* where the listed catalog is kept for the next
			    worker (channel_set_handover), or -1 */
	pthread_t handover_writer; /* handover_store()'s, while joinable */
	/* where a key-order epoch's listing can go on from, two slots (an
	 * epoch's parity) in memory the keeper holds (channel_set_resume),
	 * and the points a worker before this one left there, taken at
	 * most once each */
	struct cache_resume *resume;
	struct cache_resume inherited[2];
	/* where a shuffled epoch's order is kept for the next worker (a
	 * memfd the keeper holds, two slots by the epoch's parity), or -1;
	 * the epochs (+ 1) whose orders the last worker left there, taken
	 * once each (0: none) */
	int order_fd;
	uint32_t order_pending[2];
	/* plans reading a slot in place: it is not written meanwhile */
	unsigned order_mapped[2];
	bool handover_writing;
	/* readers of the catalog that do not hold ch->lock (catalog_enter),
	 * counted under it: the catalog's heap goes once none is left, after
	 * the catalog took its image over (start.c) */
	unsigned catalog_users;
	pthread_cond_t catalog_idle;
	pthread_mutex_t lock;	  /* see the top of the file */
	struct epoch_plan *plans; /* newest epoch first */
	/* objects whose HEAD is to start once the lock is dropped */
	channel_ref *to_resolve;
	size_t nto_resolve, to_resolve_cap;
	/* the newest epoch opened or fully prefetched (valid once the flag
	 * is set) */
	unsigned opened, prefetched;
	bool any_opened, any_prefetched;
	/* --shuffle-buffer: where the catalog's records begin, made on first
	 * use (record_index_get), or the error that stopped it */
	struct record_index *records;
	int records_error;
	int records_fd;		  /* the keeper's memfd for it, or -1 */
	pthread_t records_writer; /* writing it there, while joinable */
	bool records_writing;
	/* what each object adds to an epoch, measured by record scans
	 * (channel/object_counts.h), made on first use */
	struct object_counts *counts;
	/* bytes the record shuffle's readers hold for their pools (atomic) */
	uint64_t mix_bytes;
	pthread_mutex_t records_lock;
};

/* Whether the channel's bytes are its objects' (no gunzip, no
 * conversion): a reader may start anywhere. */
bool channel_bytes_as_stored(const struct channel *ch);

/* HEADs a manifest's plan keeps started ahead of its stream's end */
#define RESOLVE_AHEAD 256

/* ---- start.c ---- */

/* Around a read of the catalog without ch->lock held (a plan made or
 * placed): its heap is not freed meanwhile. */
void catalog_enter(struct channel *ch);
void catalog_leave(struct channel *ch);

/* ---- plan.c ---- */

/* One item's bytes (obj's, else text's) added to s, framed as a RecordIO
 * record when the channel frames in its streams (an empty item is a mark
 * for the gzip stage, which frames after inflating).  0 or ENOMEM. */
int epoch_add_item(struct channel *ch, struct cache_stream *s,
		   struct cache_object *obj, const char *text, uint64_t len);

/* A plan for epoch, not yet linked (no lock).  NULL on ENOMEM.  The
 * epoch's own plan (shared: the one readers share, not one a reader makes
 * for itself) may go on from where the last worker's was. */
struct epoch_plan *plan_create(struct channel *ch, unsigned epoch, bool shared);
void plan_destroy(struct epoch_plan *p); /* NULL is fine */
/* The plan of epoch with a reader counted (no lock held): the one there
 * is, else fresh (made when NULL) when create says so.  NULL when there
 * is none, or on ENOMEM.  Release with plan_put(). */
struct epoch_plan *plan_get(struct channel *ch, unsigned epoch, bool create,
			    struct epoch_plan *fresh);
void plan_put(struct channel *ch, struct epoch_plan *p);
/*
 * A plan of its own over shared's entries (a catalog's plan with a reader
 * counted, which must outlive it: it borrows shared's order and index),
 * its stream starting at the entry that holds byte offset (*start says
 * where that entry begins), or at entry *entry when entry is not NULL (the
 * end past the last).  The index (8 bytes every 256 entries) is made once
 * for shared; then O(log n) and at most 256 sizes.  NULL with errno:
 * EINVAL for a channel without a catalog, ENOMEM.
 */
struct epoch_plan *plan_create_from(struct epoch_plan *shared, uint64_t offset,
				    const size_t *entry, uint64_t *start);
/* Destroys a list of unlinked plans (through ->older). */
void plans_destroy(struct epoch_plan *list);

/* ---- listing.c ---- */

/* p (calloc'd, ch and epoch set) made a key-order epoch's plan: a listing
 * stream of its own.  p, or NULL (p freed) on ENOMEM. */
struct epoch_plan *listing_plan_create(struct channel *ch, struct epoch_plan *p,
				       bool shared);

/* ---- start.c: epoch orders kept for the next worker ---- */

/*
 * The order (this host's share) and the byte count of p's epoch from what
 * the last worker kept, as p->order (mapped in place: p->order_map) and
 * p->n: true when had.  Only with the catalog that worker listed (the
 * keeper's image), and once an epoch.
 */
bool plan_order_take(struct channel *ch, struct epoch_plan *p, uint64_t *bytes);
/* Gives p's order back: unmapped (and its slot free to be written again)
 * or freed. */
void plan_order_release(struct epoch_plan *p);
/* p's order and byte count (UINT64_MAX: unknown) kept for the next
 * worker, unless the last worker's order for an epoch of the same parity
 * is still to be taken, or is read in place by a plan. */
void plan_order_keep(struct channel *ch, const struct epoch_plan *p,
		     uint64_t bytes);

/* ---- start.c: listings kept beside the disk tier (--cache-dir) ---- */

/* Where the channel's listing is kept (malloc'd; files beside it share
 * its name), NULL when nowhere (no --cache-dir). */
char *saved_listing_path(const struct channel *ch, bool make_dir);
/* With --listing-ttl, the listing saved for a key-order epoch, open at its
 * start; NULL: list S3. */
struct cache_listing_file *saved_listing_open(struct channel *ch,
					      unsigned epoch);
/* A listing from S3 recorded there for the next epoch or mount. */
void saved_listing_record(struct channel *ch, struct cache_stream *s);
/* With --listing-ttl, s goes on from the saved listing once there is
 * one. */
void saved_listing_prefer(struct channel *ch, struct cache_stream *s);

#endif
