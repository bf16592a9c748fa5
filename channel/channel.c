/*
 * channel: one channel's epochs, as streams of the cache.
 *
 * An epoch is served one of two ways:
 *
 *   listing  an S3 prefix in key order: each epoch's stream is a listing
 *            of its own, which goes on page by page as readers need it,
 *            so the first byte waits for one page.  With ShardedByS3Key
 *            its framer keeps this host's share as pages arrive (the
 *            objects whose ordinal is index mod count), so a sharded
 *            channel in key order streams too;
 *   plan     a shuffle or a manifest: the channel's entries are put in
 *            the epoch's order (channel/order.c), this host's share is
 *            kept, and a plan stream of the cache is filled in that order,
 *            PLAN_FILL entries at a time as readers near its end.  A
 *            shuffled prefix is listed in full at start-up (start.c) into
 *            the channel's catalog (cache/catalog.h): each plan is an
 *            array of catalog entry numbers, and its size is known from
 *            the listed sizes before it is filled.  A manifest's entries are
 * its elements or lines; an entry whose object's size is not known yet
 * (manifests name keys, not sizes) is resolved with a HEAD a window ahead of
 *            the stream's end, many at once, and added once every entry
 *            before it is.
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
 * the hooks (the framer, a plan's want hook) without its lock, and the
 * want hook takes ours.  The framer touches nothing of the channel's that
 * changes, so it takes no lock.  No store call is made under ch->lock
 * either: HEADs that resolve entries are queued under it and started once
 * it is dropped (resolves_start()).
 */
#include "config.h"

#include "channel/core.h"
#include "s3/s3.h"

#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cache/catalog.h"
#include "cache/lister.h"
#include "cache/listing_file.h"
#include "channel/convert.h"
#include "channel/gzip.h"
#include "util/util.h"

#define KEEP_PLANS    3
#define RESOLVE_AHEAD 256
/* catalog entries a plan adds to its stream at a time, as readers near
 * its end: an epoch's segments are made as it is read, not up front */
#define PLAN_FILL 1024

struct channel_reader {
	struct channel *ch;
	unsigned epoch;
	bool at_end;		     /* a read found the end */
	struct cache_stream *stream; /* the epoch's */
	struct epoch_plan *plan;     /* MODE_PLAN */
	/* a plan of its own for the epoch, when the shared one's stream
	 * dropped what this reader needs (unlinked; NULL: none) */
	struct epoch_plan *own;
	/* the stages between the stream and the reader (channel/stage.h),
	 * by stack_open(); NULL after a failed restart */
	struct channel_stage *top;
	int stage_error; /* the stack could not be started again: reads
			    fail with it */
	char label[CHANNEL_NAME_MAX + 32]; /* "channel 'NAME'" */
};

void channel_conf_init(struct channel_conf *conf)
{
	memset(conf, 0, sizeof(*conf));
	conf->recordio_part_max = CHANNEL_RECORDIO_PART_MAX;
	conf->resolve_ahead = RESOLVE_AHEAD;
	conf->max_listers = CACHE_LISTERS_DEFAULT;
}

/* ---- what an entry becomes in a stream (nothing here changes: with
 * ch->lock for a plan, without it in the framer) ---- */

static const unsigned char zeros[4];

/*
 * Appends payload bytes [0, len) as one RecordIO record (split into parts
 * past part_max): obj's bytes when obj is set, else text.
 */
static int add_record(struct channel *ch, struct cache_stream *s,
		      struct cache_object *obj, const char *text, uint64_t len)
{
	uint64_t part_max = ch->conf.recordio_part_max;
	uint64_t parts = channel_recordio_parts(len, part_max);
	unsigned char hdr[CHANNEL_RECORDIO_HEADER];
	int rc = 0;

	for (uint64_t p = 0; p < parts && !rc; p++) {
		uint64_t off = p * part_max;
		uint64_t plen = len - off < part_max ? len - off : part_max;

		channel_recordio_header(
		    hdr, channel_recordio_part_flag(p, parts), (uint32_t)plen);
		rc = cache_stream_add_bytes(s, hdr, sizeof(hdr));
		if (!rc && obj)
			rc = cache_stream_add_object(s, obj, off, plen);
		else if (!rc)
			rc = cache_stream_add_bytes(s, text + off, plen);
	}
	if (!rc)
		rc = cache_stream_add_bytes(s, zeros,
					    channel_recordio_padding(len));
	return rc;
}

/* One item's bytes, framed when the channel frames in its streams.  For
 * the gzip stage, which frames after inflating, an empty item is a mark:
 * it still becomes an (empty) record there. */
static int add_item(struct channel *ch, struct cache_stream *s,
		    struct cache_object *obj, const char *text, uint64_t len)
{
	if (ch->framed)
		return add_record(ch, s, obj, text, len);
	if (len == 0 && ch->spec->compression != CHANNEL_COMPRESSION_NONE)
		return cache_stream_add_mark(s);
	if (obj)
		return cache_stream_add_object(s, obj, 0, len);
	return cache_stream_add_bytes(s, text, len);
}

/*
 * The listing stream's framer: every listed object (one record when
 * framed), or with ShardedByS3Key this host's share, the objects whose
 * ordinal among the non-empty ones is index mod count: the same share a
 * whole listing in key order gives (channel_shard()), known page by page.
 */
static int frame_listed(void *arg, struct cache_stream *s,
			struct cache_object *obj)
{
	struct channel *ch = arg;

	if (ch->spec->distribution == CHANNEL_SHARDED_BY_S3_KEY &&
	    ch->host.count > 1 &&
	    cache_stream_listed_objects(s) % ch->host.count != ch->host.index)
		return 0;
	return add_item(ch, s, obj, NULL, cache_object_size(obj));
}

/* ---- a manifest's entries ---- */

static uint64_t item_bytes(const struct channel *ch, uint64_t size);

/* The bytes an item adds to a stream (its object known). */
static uint64_t item_length(const struct channel *ch,
			    const struct channel_item *it)
{
	return it->object ? channel_entries_size(ch->entries, it->ref)
			  : it->text_len;
}

/* Whether entry i adds nothing to a stream (its objects all empty,
 * unframed, not gunzipped: no segment, not even a mark). */
static bool entry_adds_nothing(const struct channel *ch, size_t i)
{
	struct channel_entry e;
	struct channel_item it;

	if (ch->spec->compression != CHANNEL_COMPRESSION_NONE)
		return false;
	channel_entries_get(ch->entries, i, &e);
	while (channel_entry_next(&e, &it)) {
		if (item_bytes(ch, item_length(ch, &it)))
			return false;
	}
	return true;
}

static int add_entry(struct channel *ch, struct cache_stream *s, size_t i)
{
	struct channel_entry e;
	struct channel_item it;
	int rc = 0;

	channel_entries_get(ch->entries, i, &e);
	while (!rc && channel_entry_next(&e, &it)) {
		struct cache_object *obj;

		if (!it.object) {
			rc = add_item(ch, s, NULL, it.text, it.text_len);
			continue;
		}
		obj = channel_entries_object(ch->cache, ch->entries, it.ref);
		rc = obj ? add_item(ch, s, obj, NULL, cache_object_size(obj))
			 : ENOMEM;
		cache_object_put(ch->cache, obj);
	}
	return rc;
}

/* ---- plans (ch->lock held unless noted) ---- */

static void plan_fail(struct epoch_plan *p, const char *why)
{
	p->error = strdup(why);
	p->ended = true;
	cache_stream_end(p->stream, EIO);
}

static void plan_fail_nomem(struct epoch_plan *p)
{
	char why[256];

	snprintf(why, sizeof(why),
		 "channel '%s': out of memory building epoch %u",
		 p->ch->spec->name, p->epoch);
	plan_fail(p, why);
}

static void resolve_start(struct channel *ch, channel_ref ref);
static void resolves_start(struct channel *ch);

/* Ends p's stream once every entry is in it. */
static void plan_end_when_full(struct epoch_plan *p)
{
	if (!p->ended && p->next == p->n) {
		p->ended = true;
		cache_stream_end(p->stream, 0);
	}
}

/* A catalog's plan: the next PLAN_FILL entries (their objects interned
 * from the catalog) go into the stream. */
static void plan_fill(struct epoch_plan *p)
{
	struct channel *ch = p->ch;
	size_t limit = p->next + PLAN_FILL;

	while (!p->ended && p->next < p->n && p->next < limit) {
		uint32_t e = p->order[p->next];
		struct cache_object *obj =
		    cache_catalog_object(ch->cache, ch->catalog, e);
		int rc = obj ? add_item(ch, p->stream, obj, NULL,
					cache_object_size(obj))
			     : ENOMEM;

		cache_object_put(ch->cache, obj);
		if (rc) {
			plan_fail_nomem(p);
			return;
		}
		p->next++;
	}
	plan_end_when_full(p);
}

/* Adds the entries whose objects are all known, in order, up to the first
 * that is not; ends the stream after the last. */
static void plan_advance(struct epoch_plan *p)
{
	struct channel *ch = p->ch;
	char why[1200];

	if (ch->catalog) {
		plan_fill(p);
		return;
	}
	/* up to the window plan_top_up() asked for: the next want asks for
	 * more, so that HEADs, and the segments they let in, never run
	 * further ahead of the readers */
	while (!p->ended && p->next < p->n && p->next < p->asked) {
		size_t i = p->order[p->next];
		struct channel_entry e;
		struct channel_item it;

		channel_entries_get(ch->entries, i, &e);
		if (e.error) {
			plan_fail(p, e.error);
			return;
		}
		while (channel_entry_next(&e, &it)) {
			char msg[128], key[CACHE_KEY_MAX + 1];
			enum channel_object_state st;
			int error;

			if (!it.object)
				continue;
			st = channel_entries_state(ch->entries, it.ref, &error);
			if (st == CHANNEL_OBJECT_KNOWN)
				continue;
			if (st == CHANNEL_OBJECT_UNKNOWN) {
				/* (queueing it can fail: it is FAILED then) */
				resolve_start(ch, it.ref);
				st = channel_entries_state(ch->entries, it.ref,
							   &error);
			}
			if (st != CHANNEL_OBJECT_FAILED)
				return; /* resolved() comes back here */
			channel_entries_key(ch->entries, it.ref, key,
					    sizeof(key));
			snprintf(why, sizeof(why),
				 "channel '%s': s3://%s/%s: %s", ch->spec->name,
				 channel_entries_bucket(ch->entries, it.ref),
				 key,
				 error == ENOENT
				     ? "no such key"
				     : util_strerror(error, msg, sizeof(msg)));
			plan_fail(p, why);
			return;
		}
		if (add_entry(ch, p->stream, i) != 0) {
			plan_fail_nomem(p);
			return;
		}
		/* nothing in the stream for a reader to near: the window
		 * goes on by itself */
		if (entry_adds_nothing(ch, i) && p->asked < p->n)
			p->asked++;
		p->next++;
	}
	plan_end_when_full(p);
}

struct resolving {
	struct channel *ch;
	channel_ref ref;
};

/* A HEAD came back (the store's thread, no lock). */
static void resolved(void *arg, struct cache_object *obj,
		     const struct store_error *err)
{
	struct resolving *rs = arg;
	struct channel *ch = rs->ch;
	channel_ref ref = rs->ref;
	char desc[768], key[CACHE_KEY_MAX + 1];

	free(rs);
	pthread_mutex_lock(&ch->lock);
	if (!obj && err->err != ECANCELED && err->err != ENOENT) {
		const char *bucket = channel_entries_bucket(ch->entries, ref);

		channel_entries_key(ch->entries, ref, key, sizeof(key));
		s3_error_describe(err, bucket, desc, sizeof(desc));
		util_warn("channel '%s': s3://%s/%s: %s", ch->spec->name,
			  bucket, key, desc);
	}
	if (!obj)
		channel_entries_set_state(ch->entries, ref,
					  CHANNEL_OBJECT_FAILED,
					  err->err ? err->err : EIO);
	else
		channel_entries_learn(ch->entries, ref, obj);
	cache_object_put(ch->cache, obj);
	for (struct epoch_plan *p = ch->plans; p; p = p->older)
		plan_advance(p);
	pthread_mutex_unlock(&ch->lock);
	resolves_start(ch);
}

/* ref is to be resolved: its HEAD starts once ch->lock is dropped (one
 * that cannot be queued fails at once). */
static void resolve_start(struct channel *ch, channel_ref ref)
{
	if (ch->nto_resolve == ch->to_resolve_cap) {
		size_t cap = ch->to_resolve_cap ? ch->to_resolve_cap * 2 : 64;
		channel_ref *q = realloc(ch->to_resolve, cap * sizeof(*q));

		if (!q) {
			channel_entries_set_state(
			    ch->entries, ref, CHANNEL_OBJECT_FAILED, ENOMEM);
			return;
		}
		ch->to_resolve = q;
		ch->to_resolve_cap = cap;
	}
	channel_entries_set_state(ch->entries, ref, CHANNEL_OBJECT_RESOLVING,
				  0);
	ch->to_resolve[ch->nto_resolve++] = ref;
}

/* Starts the HEADs resolve_start() queued (no lock held); one that cannot
 * start fails its object at once. */
static void resolves_start(struct channel *ch)
{
	for (;;) {
		channel_ref *queue;
		size_t n;
		bool failed = false;

		pthread_mutex_lock(&ch->lock);
		queue = ch->to_resolve;
		n = ch->nto_resolve;
		ch->to_resolve = NULL;
		ch->nto_resolve = ch->to_resolve_cap = 0;
		pthread_mutex_unlock(&ch->lock);
		for (size_t i = 0; i < n; i++) {
			struct resolving *rs = malloc(sizeof(*rs));
			char key[CACHE_KEY_MAX + 1];
			const char *bucket;
			int rc = ENOMEM;

			/* (the entries' keys do not change: no lock) */
			bucket = channel_entries_bucket(ch->entries, queue[i]);
			channel_entries_key(ch->entries, queue[i], key,
					    sizeof(key));
			if (rs) {
				rs->ch = ch;
				rs->ref = queue[i];
				rc = cache_object_resolve(ch->cache, bucket,
							  key, resolved, rs);
			}
			if (rc) {
				free(rs);
				pthread_mutex_lock(&ch->lock);
				channel_entries_set_state(ch->entries, queue[i],
							  CHANNEL_OBJECT_FAILED,
							  rc);
				pthread_mutex_unlock(&ch->lock);
				failed = true;
			}
		}
		free(queue);
		if (!failed)
			return;
		pthread_mutex_lock(&ch->lock);
		for (struct epoch_plan *p = ch->plans; p; p = p->older)
			plan_advance(p);
		pthread_mutex_unlock(&ch->lock);
	}
}

/* Resolves the next window of p's entries and adds what is known. */
static void plan_top_up(struct epoch_plan *p)
{
	struct channel *ch = p->ch;
	size_t end = p->next + ch->conf.resolve_ahead;

	if (ch->mode == MODE_LISTING)
		return; /* the listing asks for its own pages */
	if (end > p->n)
		end = p->n;
	if (p->asked < p->next)
		p->asked = p->next;
	for (; !ch->catalog && p->asked < end; p->asked++) {
		struct channel_entry e;
		struct channel_item it;
		int error;

		channel_entries_get(ch->entries, p->order[p->asked], &e);
		while (channel_entry_next(&e, &it)) {
			if (it.object && channel_entries_state(
					     ch->entries, it.ref, &error) ==
					     CHANNEL_OBJECT_UNKNOWN)
				resolve_start(ch, it.ref);
		}
	}
	plan_advance(p);
}

/* The stream's want hook (a reader's thread, no lock held). */
static void plan_want(void *arg, struct cache_stream *s)
{
	struct epoch_plan *p = arg;
	struct channel *ch = p->ch;

	(void)s;
	pthread_mutex_lock(&ch->lock);
	plan_top_up(p);
	pthread_mutex_unlock(&ch->lock);
	resolves_start(ch);
}

/* The bytes an object of size bytes takes in a stream of ch. */
static uint64_t item_bytes(const struct channel *ch, uint64_t size)
{
	return ch->framed ? channel_recordio_framed_size(
				size, ch->conf.recordio_part_max)
			  : size;
}

/*
 * A catalog's entries in key order, the empty ones left out (they add no
 * bytes; the published orders are orders of the others), into order:
 * how many, and in *bytes what they add to a stream (UINT64_MAX when a
 * hostile listing's sizes add up past what a stream holds).  In one pass
 * in the catalog's own order: a million sizes read in a row, not one at a
 * time in the shuffle's.
 */
/* sum + b, or UINT64_MAX once past what a stream holds (INT64_MAX) */
static uint64_t stream_bytes_add(uint64_t sum, uint64_t b)
{
	return sum <= (uint64_t)INT64_MAX && b <= (uint64_t)INT64_MAX - sum
		   ? sum + b
		   : UINT64_MAX;
}

static size_t catalog_items(const struct channel *ch, uint32_t *order,
			    uint64_t *bytes)
{
	const struct cache_catalog *cat = ch->catalog;
	size_t count = cache_catalog_count(cat), n = 0;
	uint64_t sum = 0;

	for (size_t pos = 0; pos < count; pos++) {
		uint32_t e = cache_catalog_at(cat, pos);
		uint64_t size = cache_catalog_size(cat, e);

		if (size == 0)
			continue;
		order[n++] = e;
		sum = stream_bytes_add(sum, item_bytes(ch, size));
	}
	*bytes = sum;
	return n;
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
static struct epoch_plan *listing_plan_create(struct channel *ch,
					      struct epoch_plan *p, bool shared)
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
	if (slot && channel_unstaged(ch)) {
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
	cache_stream_set_framer(p->stream, frame_listed, ch);
	cache_stream_set_trim(p->stream);
	return p;
}

/* A plan for epoch, not yet linked (no lock: the order is computed here). */
struct epoch_plan *plan_create(struct channel *ch, unsigned epoch, bool shared)
{
	struct epoch_plan *p = calloc(1, sizeof(*p));
	uint64_t bytes = 0;
	bool kept = false;
	size_t n;

	if (!p)
		return NULL;
	p->ch = ch;
	p->epoch = epoch;
	if (ch->mode == MODE_LISTING)
		return listing_plan_create(ch, p, shared);
	n = ch->catalog ? cache_catalog_count(ch->catalog)
			: channel_entries_count(ch->entries);
	p->order = malloc((n ? n : 1) * sizeof(*p->order));
	p->stream = cache_stream_create_plan(ch->cache, plan_want, p);
	if (!p->order || !p->stream) {
		cache_stream_destroy(p->stream);
		free(p->order);
		free(p);
		return NULL;
	}
	if (ch->catalog && shared && plan_order_take(ch, p, &bytes)) {
		kept = true; /* the last worker's: this host's share, sized */
	} else if (ch->catalog) {
		n = catalog_items(ch, p->order, &bytes);
		channel_shuffle(p->order, n, ch->spec->shuffle, ch->spec->seed,
				epoch);
	} else {
		channel_order(p->order, n, ch->spec->shuffle, ch->spec->seed,
			      epoch);
	}
	if (!kept)
		p->n = ch->spec->distribution == CHANNEL_SHARDED_BY_S3_KEY
			   ? channel_shard(p->order, n, &ch->host)
			   : n;
	if (!kept && ch->catalog && p->n < n) {
		/* this host's share: its own sizes */
		bytes = 0;
		for (size_t i = 0; i < p->n; i++)
			bytes = stream_bytes_add(
			    bytes,
			    item_bytes(ch, cache_catalog_size(ch->catalog,
							      p->order[i])));
	}
	/* the sizes are listed: the epoch's is known now (unless a hostile
	 * listing's sizes add up past what a stream holds) */
	if (ch->catalog && bytes != UINT64_MAX)
		cache_stream_set_size(p->stream, bytes);
	if (!kept && ch->catalog && shared)
		plan_order_keep(ch, p, bytes);
	/* its segments can be made again from the catalog or the entries:
	 * the ones every reader passed go, so that reading an epoch does not
	 * keep a record of each object */
	cache_stream_set_trim(p->stream);
	return p;
}

/* No lock: the plan is unlinked. */
void plan_destroy(struct epoch_plan *p)
{
	if (!p)
		return;
	cache_stream_destroy(p->stream);
	free(p->order);
	free(p->error);
	free(p);
}

static struct epoch_plan *plan_find(struct channel *ch, unsigned epoch)
{
	struct epoch_plan *p = ch->plans;

	while (p && p->epoch != epoch)
		p = p->older;
	return p;
}

/* Unlinks the plans that are neither read nor recent onto *out. */
static void plans_prune(struct channel *ch, struct epoch_plan **out)
{
	struct epoch_plan **pp = &ch->plans;
	unsigned newest = ch->plans ? ch->plans->epoch : 0;

	while (*pp) {
		struct epoch_plan *p = *pp;

		if (p->readers == 0 && newest - p->epoch >= KEEP_PLANS) {
			*pp = p->older;
			p->older = *out;
			*out = p;
		} else {
			pp = &p->older;
		}
	}
}

static void plans_destroy(struct epoch_plan *list)
{
	while (list) {
		struct epoch_plan *next = list->older;

		plan_destroy(list);
		list = next;
	}
}

/* A manifest plan whose entries are all known already (an earlier epoch
 * resolved them) gets its size now, as a catalog's plan does (lock
 * held). */
static void plan_size_entries(struct channel *ch, struct epoch_plan *p)
{
	uint64_t bytes = 0;

	for (size_t i = 0; i < p->n; i++) {
		struct channel_entry e;
		struct channel_item it;
		int error;

		channel_entries_get(ch->entries, p->order[i], &e);
		if (e.error)
			return;
		while (channel_entry_next(&e, &it)) {
			if (it.object && channel_entries_state(
					     ch->entries, it.ref, &error) !=
					     CHANNEL_OBJECT_KNOWN)
				return;
			bytes = stream_bytes_add(
			    bytes, item_bytes(ch, item_length(ch, &it)));
			if (bytes == UINT64_MAX)
				return;
		}
	}
	cache_stream_set_size(p->stream, bytes);
}

/* Links a fresh plan and starts filling it (lock held).  Objects that
 * failed for a passing reason (not a missing key) are tried again. */
static void plan_link(struct channel *ch, struct epoch_plan *p)
{
	struct epoch_plan **pp = &ch->plans;

	if (!ch->catalog && ch->mode == MODE_PLAN)
		plan_size_entries(ch, p);

	for (size_t i = 0; !ch->catalog && i < p->n; i++) {
		struct channel_entry e;
		struct channel_item it;
		int error;

		channel_entries_get(ch->entries, p->order[i], &e);
		while (channel_entry_next(&e, &it)) {
			if (it.object &&
			    channel_entries_state(ch->entries, it.ref,
						  &error) ==
				CHANNEL_OBJECT_FAILED &&
			    error != ENOENT)
				channel_entries_set_state(
				    ch->entries, it.ref, CHANNEL_OBJECT_UNKNOWN,
				    0);
		}
	}

	while (*pp && (*pp)->epoch > p->epoch)
		pp = &(*pp)->older;
	p->older = *pp;
	*pp = p;
	plan_top_up(p);
}

/*
 * The plan of epoch with a reader counted (no lock held): the one there
 * is, else fresh (made here when NULL) when create says so.  NULL when
 * there is none, or on ENOMEM.  Release with plan_put().
 */
struct epoch_plan *plan_get(struct channel *ch, unsigned epoch, bool create,
			    struct epoch_plan *fresh)
{
	struct epoch_plan *p;

	pthread_mutex_lock(&ch->lock);
	p = plan_find(ch, epoch);
	if (!p && create) {
		if (!fresh) {
			pthread_mutex_unlock(&ch->lock);
			fresh = plan_create(ch, epoch, true);
			if (!fresh)
				return NULL;
			pthread_mutex_lock(&ch->lock);
			p = plan_find(ch, epoch); /* another may have won */
		}
		if (!p) {
			p = fresh;
			fresh = NULL;
			plan_link(ch, p);
		}
	}
	if (p)
		p->readers++;
	pthread_mutex_unlock(&ch->lock);
	resolves_start(ch);
	plan_destroy(fresh);
	return p;
}

void plan_put(struct channel *ch, struct epoch_plan *p)
{
	struct epoch_plan *gone = NULL;

	if (!p)
		return;
	pthread_mutex_lock(&ch->lock);
	p->readers--;
	plans_prune(ch, &gone);
	pthread_mutex_unlock(&ch->lock);
	plans_destroy(gone);
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
	return ch;
}

void channel_fault_in(struct channel *ch)
{
	struct epoch_plan *p;

	if (ch->tree)
		return; /* files are read as they are opened */
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
	for (struct epoch_plan *p = ch->plans; p; p = p->older) {
		out->bytes +=
		    p->n * sizeof(*p->order) + cache_stream_memory(p->stream);
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
	plans_destroy(ch->plans);
	channel_tree_destroy(ch->tree);
	cache_catalog_destroy(ch->catalog);
	channel_entries_destroy(ch->entries);
	free(ch->to_resolve);
	pthread_mutex_destroy(&ch->lock);
	free(ch);
}

/* ---- readers ---- */

bool channel_unstaged(const struct channel *ch)
{
	return ch->spec->compression != CHANNEL_COMPRESSION_GZIP &&
	       ch->spec->convert.format == CHANNEL_CONVERT_NONE;
}

/*
 * The reader's stack over its stream, from the stream's start: the one
 * place stages are put together.  The bottom reads the stream (gunzip,
 * which reads several objects at once, or a cache reader); conversion
 * goes on top.  A stack without stages (channel_unstaged) may begin
 * where a first read at first_read needs it to.  0, ESTALE when the
 * stream dropped its start (or first_read), or ENOMEM; on failure r->top
 * is what it was.
 */
static int stack_build(struct channel_reader *r, uint64_t first_read)
{
	const struct channel *ch = r->ch;
	struct channel_stage *bottom;
	struct channel_converter *cv;

	if (ch->spec->compression == CHANNEL_COMPRESSION_GZIP)
		bottom = channel_gzip_create(
		    ch->cache, r->stream, ch->spec->name,
		    ch->spec->wrapper == CHANNEL_WRAPPER_RECORDIO
			? ch->conf.recordio_part_max
			: 0,
		    ch->conf.inflate_threads);
	else
		bottom = channel_cache_stage_create(
		    ch->cache, r->stream,
		    channel_unstaged(ch) ? first_read : 0);
	if (!bottom)
		return errno == ESTALE ? ESTALE : ENOMEM;
	if (ch->spec->convert.format == CHANNEL_CONVERT_NONE) {
		r->top = bottom;
		return 0;
	}
	cv = channel_converter_create(&ch->spec->convert, bottom, r->label,
				      ch->conf.convert_threads);
	if (!cv) {
		int rc = errno;

		channel_stack_destroy(bottom);
		return rc ? rc : ENOMEM;
	}
	r->top = channel_converter_stage(cv);
	r->top->below = bottom;
	return 0;
}

/*
 * The epoch's stream dropped what this reader needs (every stream is
 * trimmed): a new reader of an epoch others are well into, or a seek back.
 * It gets a plan of its own for the epoch, the same entries in the same
 * order (or a listing of its own), and its stack is built again over it.
 * 0, or an errno (the reader keeps what it had).
 */
static int reader_restream(struct channel_reader *r)
{
	struct epoch_plan *own = plan_create(r->ch, r->epoch, false);
	struct channel_stage *old = r->top;
	struct cache_stream *old_stream = r->stream;
	int rc;

	if (!own)
		return ENOMEM;
	r->stream = own->stream;
	rc = stack_build(r, 0);
	if (rc) {
		r->stream = old_stream;
		plan_destroy(own);
		return rc;
	}
	channel_stack_destroy(old);
	plan_destroy(r->own);
	r->own = own;
	return 0;
}

/* The reader's stack from its stream's start (or for a first read at
 * first_read), over a stream of its own when the epoch's dropped that.
 * 0 or an errno. */
static int stack_open(struct channel_reader *r, uint64_t first_read)
{
	int rc = stack_build(r, first_read);

	return rc == ESTALE ? reader_restream(r) : rc;
}

static void stack_close(struct channel_reader *r)
{
	channel_stack_destroy(r->top);
	r->top = NULL;
}

/* Whether reads are the stream's own bytes (a cache reader alone), which
 * can start anywhere. */
static bool unstaged(const struct channel_reader *r)
{
	return r->top && channel_stage_is_cache(r->top);
}

/*
 * A stage that makes bytes cannot jump: an emulated seek starts the stack
 * again and reads (and drops) what comes before offset.
 */
static int stack_seek(struct channel_reader *r, uint64_t offset)
{
	struct channel_view view;
	uint64_t pos = 0;
	int rc;

	stack_close(r);
	rc = stack_open(r, 0);
	if (rc) {
		/* no stages, no raw bytes either: reads fail from here */
		stack_close(r);
		r->stage_error = rc;
		return rc;
	}
	while (pos < offset && !rc) {
		uint64_t want = offset - pos;

		memset(&view, 0, sizeof(view));
		rc = r->top->ops->read(
		    r->top, pos, want < (1u << 20) ? (size_t)want : (1u << 20),
		    &view, NULL);
		if (!rc && view.bytes == 0)
			rc = EINVAL; /* past the end: reads return nothing */
		pos += view.bytes;
		r->top->ops->release(r->top, &view);
	}
	return rc == EINVAL ? 0 : rc;
}

struct channel_reader *channel_reader_open_at(struct channel *ch,
					      unsigned epoch, uint64_t offset)
{
	struct channel_reader *r = calloc(1, sizeof(*r));

	if (!r)
		goto nomem;
	r->ch = ch;
	r->epoch = epoch;
	pthread_mutex_lock(&ch->lock);
	if (!ch->any_opened || epoch > ch->opened)
		ch->opened = epoch;
	ch->any_opened = true;
	pthread_mutex_unlock(&ch->lock);
	r->plan = plan_get(ch, epoch, true, NULL);
	if (!r->plan)
		goto nomem;
	r->stream = r->plan->stream;
	snprintf(r->label, sizeof(r->label), "channel '%s'", ch->spec->name);
	if (stack_open(r, offset))
		goto nomem;
	return r;

nomem:
	channel_reader_close(r);
	errno = ENOMEM;
	return NULL;
}

struct channel_reader *channel_reader_open(struct channel *ch, unsigned epoch)
{
	return channel_reader_open_at(ch, epoch, 0);
}

void channel_reader_close(struct channel_reader *r)
{
	if (!r)
		return;
	stack_close(r);
	plan_put(r->ch, r->plan);
	plan_destroy(r->own);
	free(r);
}

uint64_t channel_reader_position(struct channel_reader *r)
{
	return r->top ? r->top->ops->position(r->top) : 0;
}

bool channel_reader_near_end(struct channel_reader *r)
{
	uint64_t size = 0, pos;

	if (r->at_end)
		return true;
	if (!unstaged(r) || !cache_stream_size(r->stream, &size))
		return false;
	pos = r->top->ops->position(r->top);
	return pos >= size || size - pos <= cache_max_window(r->ch->cache);
}

/* A read reached the point where the plan ended early: say why, once. */
static void log_plan_error(struct channel_reader *r)
{
	struct epoch_plan *p = r->own ? r->own : r->plan;
	bool say;

	if (!p)
		return;
	pthread_mutex_lock(&r->ch->lock);
	say = p->error && !p->error_logged;
	if (say)
		p->error_logged = true;
	pthread_mutex_unlock(&r->ch->lock);
	if (say)
		util_warn("%s (epoch %u): reads fail with EIO from here",
			  p->error, r->epoch);
}

int channel_reader_read(struct channel_reader *r, uint64_t offset, size_t size,
			struct channel_view *view)
{
	int rc;

	view->count = 0;
	view->bytes = 0;
	view->nchunks = 0;
	view->cache.count = 0;
	view->cache.bytes = 0;
	if (r->stage_error) {
		rc = r->stage_error == ENOMEM ? ENOMEM : EIO;
	} else if (!unstaged(r)) {
		rc = 0;
		if (offset != r->top->ops->position(r->top))
			rc = stack_seek(r, offset);
		/* (a seek past the end reads nothing) */
		if (!rc && offset == r->top->ops->position(r->top))
			rc =
			    r->top->ops->read(r->top, offset, size, view, NULL);
	} else {
		rc = r->top->ops->read(r->top, offset, size, view, NULL);
		if (rc == ESTALE) {
			/* a seek back into what the stream dropped */
			r->top->ops->release(r->top, view);
			rc = reader_restream(r);
			if (!rc)
				rc = r->top->ops->read(r->top, offset, size,
						       view, NULL);
		}
	}
	if (rc == EIO)
		log_plan_error(r);
	if (!rc && size && view->bytes == 0)
		r->at_end = true;
	return rc;
}

void channel_view_release(struct channel_reader *r, struct channel_view *view)
{
	if (r->top)
		r->top->ops->release(r->top, view);
	view->count = 0;
	view->bytes = 0;
}
