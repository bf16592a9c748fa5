/*
 * listing: a key-order epoch's plan, a listing stream of its own that goes
 * on page by page as readers need it, so the first byte waits for one
 * page.  Each listed object goes into the stream through add_listed():
 * with ShardedByS3Key only this host's share (the objects whose ordinal is
 * index mod count), framed as a record when the channel wraps in RecordIO.
 * A listing is not kept from one epoch to the next: each epoch lists
 * again, one page ahead of its readers, as the first did; the next
 * epoch's listing starts when it is prefetched.
 */
#include "config.h"

#include "channel/core.h"

#include <stdlib.h>

#include "cache/listing_file.h"
#include "util/util.h"

/*
 * The listing stream's on-listed function: every listed object (one record when
 * framed), or with ShardedByS3Key this host's share, the objects whose
 * ordinal among the non-empty ones is index mod count: the same share a
 * whole listing in key order gives (channel_shard()), known page by page.
 */
static int add_listed(void *arg, struct cache_stream *s,
		      struct cache_object *obj)
{
	struct channel *ch = arg;

	if (ch->spec->distribution == CHANNEL_SHARDED_BY_S3_KEY &&
	    ch->host.count > 1 &&
	    cache_stream_listed_objects(s) % ch->host.count != ch->host.index)
		return 0;
	return epoch_add_item(ch, s, obj, NULL, cache_object_size(obj));
}

/*
 * A key-order epoch's plan: a listing stream of its own, which lists as
 * readers need it (the first page once one reads, or prefetches), or
 * reads the listing saved beside the disk tier the same way, a page at a
 * time (with --listing-ttl, while it is young enough).  A listing from S3
 * is recorded there, for the next epoch or mount; with --listing-ttl it
 * goes on from the file once an earlier epoch's recording lands (the next
 * epoch's plan is made before this one's listing is complete).  The
 * epoch's shared plan, with the keeper's slots, notes where it could go
 * on from as it drops what its readers passed, and goes on from where the
 * last worker's left off when that worker left a point for this epoch
 * (taken once; a channel whose bytes are its objects' only: gunzip and
 * conversion start from the first byte).
 */
struct epoch_plan *listing_plan_create(struct channel *ch, struct epoch_plan *p,
				       bool shared)
{
	struct cache_listing_file *file = saved_listing_open(ch, p->epoch);
	struct cache_resume *slot =
	    shared && ch->resume ? &ch->resume[p->epoch & 1] : NULL;
	bool resumed = false;

	p->stream = file
			? cache_stream_create_saved(ch->cache, ch->spec->bucket,
						    ch->spec->prefix, file)
			: cache_stream_create(ch->cache, ch->spec->bucket,
					      ch->spec->prefix);
	if (!p->stream) {
		free(p);
		return NULL;
	}
	if (slot && channel_bytes_as_stored(ch)) {
		struct cache_resume *had = &ch->inherited[p->epoch & 1], point;
		uint64_t tag = (uint64_t)p->epoch + 1;

		/* (two readers may make the plan at once: one takes it) */
		if (__atomic_load_n(&had->tag, __ATOMIC_ACQUIRE) == tag &&
		    __atomic_exchange_n(&had->tag, 0, __ATOMIC_ACQ_REL) ==
			tag) {
			point = *had;
			point.tag = tag;
			resumed =
			    cache_stream_resume(p->stream, &point, tag) == 0;
		}
		if (resumed)
			util_info("channel '%s': epoch %u lists on after %s, "
				  "where the last worker's readers were",
				  ch->spec->name, p->epoch, point.key);
		cache_stream_keep_resume(p->stream, slot, tag);
	}
	if (!file && !resumed)
		saved_listing_record(ch, p->stream);
	if (!file && ch->conf.listing_ttl)
		saved_listing_prefer(ch, p->stream);
	cache_stream_on_listed(p->stream, add_listed, ch);
	cache_stream_set_trim(p->stream);
	return p;
}

/* A plan for epoch, not yet linked (no lock: the order is computed here). */
