/*
 * channel: one channel's epochs, as streams of the cache.  This file holds
 * a channel's life, its epochs' sizes and the next-epoch prefetch; the
 * rest of the layer is in start.c (what a channel knows before its first
 * byte), plan.c (plans), listing.c (key-order listing streams) and
 * reader.c (readers and their stages), sharing channel/core.h.
 *
 * An epoch is served one of two ways:
 *
 *   listing  an S3 prefix in key order: each epoch's stream is a listing
 *            of its own, which goes on page by page as readers need it,
 *            so the first byte waits for one page.  With ShardedByS3Key
 *            its on-listed function keeps this host's share as pages arrive
 * (the objects whose ordinal is index mod count), so a sharded channel in key
 * order streams too; plan     a shuffle or a manifest: the channel's entries
 * are put in the epoch's order (channel/order.c), this host's share is kept,
 * and a plan stream of the cache is filled in that order, PLAN_FILL entries at
 * a time as readers near its end.  A shuffled prefix is listed in full at
 * start-up (start.c) into the channel's catalog (cache/catalog.h): each plan is
 * an array of catalog entry numbers, and its size is known from the listed
 * sizes before it is filled.  A manifest's entries are its elements or lines;
 * an entry whose object's size is not known yet (manifests name keys, not
 * sizes) is resolved with a HEAD a window ahead of the stream's end, many at
 * once, and added once every entry before it is.
 *
 * Either way RecordIO framing (channel/recordio.c) becomes literal segments
 * around the object ranges, so framed epochs are still served from block
 * memory without a copy, and blocks are shared by every epoch whatever its
 * order (the cache keys them by object).  Gunzip runs as a stage
 * (channel/gzip.c) between the stream and the reader, and so does the
 * conversion of CSV or LibSVM rows to protobuf RecordIO
 * (channel/convert.c), after gunzip when both are asked for: each reader
 * has a stack of stages (channel/stage.h), put together in stack_open().
 *
 * Memory does not grow with the keys an epoch has read: every stream is
 * trimmed (cache_stream_set_trim), dropping the segments (and so the
 * objects) that all its readers passed, and gunzip holds its place in the
 * stream like a reader.  What a stream dropped is made again by a stream
 * of its own: the same plan again for a plan, a new listing for a
 * listing (reader_restream(): a reader that opens an epoch others are well
 * into, or seeks back).  A listing is not kept from one epoch to the next
 * for the same reason: each epoch lists again, one page ahead of its
 * readers, as the first did.  The next epoch's listing starts when it is
 * prefetched, before the epoch before it ends.
 *
 * Plans of recent epochs are kept (for their sizes) while KEEP_PLANS newer
 * ones do not exist; a plan with readers is always kept.
 *
 * The next epoch is prefetched (channel_prefetch_epoch) while one drains: its
 * stream (the same listing stream, or the next epoch's plan, made then)
 * is asked for its first bytes (epoch_prefetch_bytes(): a first window, at most
 * a quarter of the budget) with cache_stream_prefetch(), which fetches what is
 * not in memory with prefetch admission and leaves it unread for the epoch's
 * first reader.  Nothing stays behind but those blocks (and the plan, kept as
 * the newest): no reader, no thread, so an epoch never opened costs at most
 * that memory and those GETs.
 *
 * Locking: the channel's own lock (ch->lock) guards the plans (the list,
 * each plan's fill state, readers and error), the entries' resolution
 * state and the newest opened and prefetched epochs.  The order is
 * ch->lock, then the cache's (the cache's functions take theirs inside
 * ours, when a plan adds segments), never the other way: the cache calls
 * the hooks (the on-listed function, a plan's refill function) without its
 * lock, and the refill function takes ours.  The on-listed function touches
 * nothing of the channel's that changes, so it takes no lock.  No store call is
 * made under ch->lock either: HEADs that resolve entries are queued under it
 * and started once it is dropped (resolves_start()).
 */
#include "config.h"

#include "channel/core.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cache/catalog.h"
#include "cache/lister.h"
#include "channel/mix.h"
#include "channel/object_counts.h"
#include "util/util.h"

void channel_conf_init(struct channel_conf *conf)
{
	memset(conf, 0, sizeof(*conf));
	conf->recordio_part_max = CHANNEL_RECORDIO_PART_MAX;
	conf->resolve_ahead = RESOLVE_AHEAD;
	conf->max_listers = CACHE_LISTERS_DEFAULT;
}

struct channel *channel_create(const struct channel_spec *spec,
			       const struct channel_host *host,
			       const struct channel_conf *conf,
			       struct cache *cache)
{
	struct channel *ch = calloc(1, sizeof(*ch));

	if (!ch) {
		errno = ENOMEM;
		return NULL;
	}
	ch->spec = spec;
	ch->host = *host;
	ch->conf = *conf;
	if (!ch->conf.recordio_part_max)
		ch->conf.recordio_part_max = CHANNEL_RECORDIO_PART_MAX;
	if (!ch->conf.resolve_ahead)
		ch->conf.resolve_ahead = RESOLVE_AHEAD;
	ch->cache = cache;
	ch->handover_fd = -1;
	ch->order_fd = -1;
	ch->records_fd = -1;
	/* in key order, an epoch (this host's share of it) streams as the
	 * listing goes: no need for every key first */
	ch->mode = spec->data_type == CHANNEL_S3_PREFIX && !spec->shuffle
		       ? MODE_LISTING
		       : MODE_PLAN;
	/* gunzip comes between the stream and the reader: the framing after
	 * it is the stage's */
	ch->framed = spec->wrapper == CHANNEL_WRAPPER_RECORDIO &&
		     spec->compression == CHANNEL_COMPRESSION_NONE;
	pthread_mutex_init(&ch->lock, NULL);
	pthread_cond_init(&ch->catalog_idle, NULL);
	pthread_mutex_init(&ch->records_lock, NULL);
	return ch;
}

void channel_fault_in(struct channel *ch)
{
	struct epoch_plan *p;

	if (ch->tree || ch->spec->shuffle_buffer)
		return; /* files are read as they are opened; a record
			   shuffle reads its blocks in an order of its own */
	p = plan_get(ch, 0, false, NULL);
	if (p)
		cache_stream_fault_in(p->stream);
	plan_put(ch, p);
}

bool channel_epoch_size(struct channel *ch, unsigned epoch, uint64_t *size)
{
	struct epoch_plan *p;
	bool create, known;

	*size = 0;
	if (ch->spec->compression != CHANNEL_COMPRESSION_NONE ||
	    ch->spec->convert.format != CHANNEL_CONVERT_NONE)
		return false; /* known only once read */
	/* a plan is made for the newest epochs only: an old one's is gone */
	pthread_mutex_lock(&ch->lock);
	create = !ch->plans || epoch > ch->plans->epoch;
	pthread_mutex_unlock(&ch->lock);
	p = plan_get(ch, epoch, create, NULL);
	if (p && ch->spec->shuffle_buffer)
		known = channel_mix_epoch_size(ch, p, size) == 0;
	else
		known = p && cache_stream_size(p->stream, size);
	plan_put(ch, p);
	return known;
}

/* Bytes of an epoch's head that a prefetch of it fetches: a first window, at
 * most a quarter of the budget. */
static uint64_t epoch_prefetch_bytes(const struct channel *ch)
{
	uint64_t w = cache_max_window(ch->cache);
	uint64_t quarter = cache_budget(ch->cache) / 4;

	return w < quarter ? w : quarter;
}

/* Whether epoch has been opened, or prefetched in full, or a newer one
 * has (ch->lock held). */
static bool epoch_prefetch_needless(const struct channel *ch, unsigned epoch)
{
	return (ch->any_opened && epoch <= ch->opened) ||
	       (ch->any_prefetched && epoch <= ch->prefetched);
}

void channel_prefetch_epoch(struct channel *ch, unsigned epoch)
{
	struct epoch_plan *p = NULL;
	struct cache_stream *s;
	bool needless, covered;

	if (ch->spec->shuffle_buffer)
		return; /* its blocks come in an order of the reader's */
	pthread_mutex_lock(&ch->lock);
	needless = epoch_prefetch_needless(ch, epoch);
	pthread_mutex_unlock(&ch->lock);
	if (needless)
		return;
	p = plan_get(ch, epoch, true, NULL);
	if (!p)
		return;
	s = p->stream;
	covered = cache_stream_prefetch(s, epoch_prefetch_bytes(ch));
	pthread_mutex_lock(&ch->lock);
	if (covered && !epoch_prefetch_needless(ch, epoch)) {
		ch->prefetched = epoch;
		ch->any_prefetched = true;
		util_debug("channel '%s': epoch %u prefetched", ch->spec->name,
			   epoch);
	}
	pthread_mutex_unlock(&ch->lock);
	plan_put(ch, p);
}

void channel_get_stats(struct channel *ch, struct channel_stats *out)
{
	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&ch->lock); /* (entries learn under it) */
	if (ch->catalog) {
		out->objects = cache_catalog_count(ch->catalog);
		out->bytes = cache_catalog_memory(ch->catalog);
	} else if (ch->entries) {
		out->objects = channel_entries_count(ch->entries);
		out->bytes = channel_entries_memory(ch->entries);
	}
	if (ch->tree)
		out->bytes += channel_tree_memory(ch->tree);
	pthread_mutex_lock(&ch->records_lock);
	out->bytes += record_index_memory(ch->records);
	pthread_mutex_unlock(&ch->records_lock);
	out->bytes += __atomic_load_n(&ch->mix_bytes, __ATOMIC_RELAXED);
	for (struct epoch_plan *p = ch->plans; p; p = p->older) {
		out->bytes += (p->order ? p->n * sizeof(*p->order) : 0) +
			      cache_stream_memory(p->stream);
		/* a listing's objects: the most any epoch listed so far */
		if (ch->mode == MODE_LISTING &&
		    cache_stream_listed_objects(p->stream) > out->objects)
			out->objects = cache_stream_listed_objects(p->stream);
	}
	pthread_mutex_unlock(&ch->lock);
}

void channel_destroy(struct channel *ch)
{
	if (!ch)
		return;
	if (ch->handover_writing)
		pthread_join(ch->handover_writer, NULL);
	if (ch->records_writing)
		pthread_join(ch->records_writer, NULL);
	plans_destroy(ch->plans);
	channel_tree_destroy(ch->tree);
	cache_catalog_destroy(ch->catalog);
	channel_entries_destroy(ch->entries);
	free(ch->to_resolve);
	record_index_destroy(ch->records);
	object_counts_destroy(ch->counts);
	pthread_mutex_destroy(&ch->records_lock);
	pthread_cond_destroy(&ch->catalog_idle);
	pthread_mutex_destroy(&ch->lock);
	free(ch);
}

bool channel_bytes_as_stored(const struct channel *ch)
{
	return !ch->spec->shuffle_buffer &&
	       ch->spec->compression != CHANNEL_COMPRESSION_GZIP &&
	       ch->spec->convert.format == CHANNEL_CONVERT_NONE;
}
