/*
 * plan: an epoch's plan, the order in which its entries go into a stream
 * of the cache, and what each entry becomes there.
 *
 * A shuffled prefix or a manifest is served by a plan stream: the
 * channel's entries are put in the epoch's order (channel/order.c), this
 * host's share is kept, and the stream is filled in that order, PLAN_FILL
 * entries at a time as readers near its end.  A shuffled prefix is listed
 * in full at start-up (start.c) into the channel's catalog: its plan is an
 * array of catalog entry numbers, and its size is known from the listed
 * sizes before it is filled.  A manifest's entries are its elements or
 * lines; an entry whose object's size is not known yet (manifests name
 * keys, not sizes) is resolved with a HEAD a window ahead of the stream's
 * end, many at once, and added once every entry before it is.  A
 * key-order epoch's plan is a listing stream instead (listing.c).
 *
 * RecordIO framing (channel/recordio.c) becomes literal segments around
 * the object ranges (epoch_add_item), so framed epochs are still served
 * from block memory without a copy.
 *
 * Plans of recent epochs are kept (for their sizes) while KEEP_PLANS newer
 * ones do not exist; a plan with readers is always kept.  Locking: see
 * channel.c.
 */
#include "config.h"

#include "channel/core.h"
#include "s3/s3.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/catalog.h"
#include "util/util.h"

#define KEEP_PLANS 3
/* catalog entries a plan adds to its stream at a time, as readers near
 * its end: an epoch's segments are made as it is read, not up front */
#define PLAN_FILL 1024
/* entries between two points of a catalog plan's index */
#define PLAN_INDEX_STEP 256
/* entries a placement near the epoch's start walks before it makes the
 * index instead */
#define PLAN_WALK_MAX (4 * PLAN_INDEX_STEP)

/* ---- what an entry becomes in a stream (nothing here changes: with
 * ch->lock for a plan, without it in the on-listed function) ---- */

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
int epoch_add_item(struct channel *ch, struct cache_stream *s,
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
			rc = epoch_add_item(ch, s, NULL, it.text, it.text_len);
			continue;
		}
		obj = channel_entries_object(ch->cache, ch->entries, it.ref);
		rc = obj ? epoch_add_item(ch, s, obj, NULL,
					  cache_object_size(obj))
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
 * from the catalog) go into the stream, or as many as take it twice
 * CACHE_REFILL_BYTES ahead of its readers.  (A thousand objects of 16 MiB
 * at random places of a million keys' catalog were 7 to 11 ms of page
 * faults for a worker that took over a reader, who waited for them.) */
static void plan_fill(struct epoch_plan *p)
{
	struct channel *ch = p->ch;
	size_t limit = p->next + PLAN_FILL;
	uint64_t ahead = cache_stream_ahead_bytes(p->stream);

	while (!p->ended && p->next < p->n && p->next < limit &&
	       ahead < 2 * CACHE_REFILL_BYTES) {
		uint32_t e = plan_item(p, p->next);
		struct cache_object *obj =
		    cache_catalog_object(ch->cache, ch->catalog, e);
		int rc = obj ? epoch_add_item(ch, p->stream, obj, NULL,
					      cache_object_size(obj))
			     : ENOMEM;

		if (obj)
			ahead += cache_object_size(obj);
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
		size_t i = plan_item(p, p->next);
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

		channel_entries_get(ch->entries, plan_item(p, p->asked), &e);
		while (channel_entry_next(&e, &it)) {
			if (it.object && channel_entries_state(
					     ch->entries, it.ref, &error) ==
					     CHANNEL_OBJECT_UNKNOWN)
				resolve_start(ch, it.ref);
		}
	}
	plan_advance(p);
}

/* The stream's refill function (a reader's thread, no lock held). */
static void plan_refill(void *arg, struct cache_stream *s)
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
		if (order)
			order[n] = e;
		n++;
		sum = stream_bytes_add(sum, item_bytes(ch, size));
	}
	*bytes = sum;
	return n;
}

uint32_t plan_item(const struct epoch_plan *p, size_t i)
{
	if (p->order) {
		uint32_t e = p->order[i];

		/* (past the catalog, which no worker writes in an order it
		 * keeps, see plan_order_take(): entry 0) */
		return !p->ch->catalog ||
			       e < cache_catalog_count(p->ch->catalog)
			   ? e
			   : 0;
	}
	return p->ch->catalog ? cache_catalog_at(p->ch->catalog, i)
			      : (uint32_t)i;
}

/* Whether plan p of ch takes its items in the catalog's or the entries'
 * own order, every one (plan_item() without an order): no shuffle, no
 * share of the hosts, and (a catalog's) no empty object, which the order
 * leaves out.  *bytes: a catalog's epoch size then. */
static bool plan_in_place(const struct channel *ch, struct epoch_plan *p,
			  uint64_t *bytes)
{
	size_t count;

	/* (a record shuffle reads the order as an array: mix_epoch_init) */
	if (ch->spec->shuffle || ch->spec->shuffle_buffer ||
	    (ch->spec->distribution == CHANNEL_SHARDED_BY_S3_KEY &&
	     ch->host.count > 1))
		return false;
	if (!ch->catalog) {
		p->n = channel_entries_count(ch->entries);
		return true;
	}
	count = cache_catalog_count(ch->catalog);
	if (catalog_items(ch, NULL, bytes) != count)
		return false;
	p->n = count;
	return true;
}

/* plan_create() of a plan channel (the catalog's readers counted) */
static struct epoch_plan *plan_make(struct channel *ch, struct epoch_plan *p,
				    bool shared)
{
	unsigned epoch = p->epoch;
	uint64_t bytes = 0;
	bool kept = false, in_place;
	size_t n;

	n = ch->catalog ? cache_catalog_count(ch->catalog)
			: channel_entries_count(ch->entries);
	p->stream = cache_stream_create_plan(ch->cache, plan_refill, p);
	/* the last worker's order: this host's share, sized, read in place */
	kept = p->stream && ch->catalog && shared &&
	       plan_order_take(ch, p, &bytes);
	in_place = !kept && plan_in_place(ch, p, &bytes);
	if (!kept && !in_place)
		p->order = malloc((n ? n : 1) * sizeof(*p->order));
	if ((!p->order && !in_place) || !p->stream) {
		plan_destroy(p);
		return NULL;
	}
	if (!kept && !in_place) {
		if (ch->catalog) {
			n = catalog_items(ch, p->order, &bytes);
			channel_shuffle(p->order, n, ch->spec->shuffle,
					ch->spec->seed, epoch);
		} else {
			channel_order(p->order, n, ch->spec->shuffle,
				      ch->spec->seed, epoch);
		}
		p->n = ch->spec->distribution == CHANNEL_SHARDED_BY_S3_KEY
			   ? channel_shard(p->order, n, &ch->host)
			   : n;
	}
	if (!kept && ch->catalog && p->n < n) {
		/* this host's share: its own sizes */
		bytes = 0;
		for (size_t i = 0; i < p->n; i++)
			bytes = stream_bytes_add(
			    bytes,
			    item_bytes(ch, cache_catalog_size(
					       ch->catalog, plan_item(p, i))));
	}
	/* the sizes are listed: the epoch's is known now (unless a hostile
	 * listing's sizes add up past what a stream holds) */
	if (ch->catalog && bytes != UINT64_MAX)
		cache_stream_set_size(p->stream, bytes);
	if (!kept && p->order && ch->catalog && shared)
		plan_order_keep(ch, p, bytes);
	/* its segments can be made again from the catalog or the entries:
	 * the ones every reader passed go, so that reading an epoch does not
	 * keep a record of each object */
	cache_stream_set_trim(p->stream);
	return p;
}

struct epoch_plan *plan_create(struct channel *ch, unsigned epoch, bool shared)
{
	struct epoch_plan *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->ch = ch;
	p->epoch = epoch;
	if (ch->mode == MODE_LISTING)
		return listing_plan_create(ch, p, shared);
	catalog_enter(ch);
	p = plan_make(ch, p, shared);
	catalog_leave(ch);
	return p;
}

/* The bytes entry i of catalog plan p adds to its stream. */
static uint64_t entry_bytes(const struct epoch_plan *p, size_t i)
{
	return item_bytes(p->ch,
			  cache_catalog_size(p->ch->catalog, plan_item(p, i)));
}

/* p's index, made once (ch->lock held): the stream bytes before entries
 * 0, STEP, 2 STEP, ..., and before n (the epoch's size) last.  0 or
 * ENOMEM. */
static int plan_index_make(struct epoch_plan *p)
{
	size_t points = p->n / PLAN_INDEX_STEP + 2;
	uint64_t *index, sum = 0;

	if (p->index)
		return 0;
	index = malloc(points * sizeof(*index));
	if (!index)
		return ENOMEM;
	for (size_t i = 0; i < p->n; i++) {
		if (i % PLAN_INDEX_STEP == 0)
			index[i / PLAN_INDEX_STEP] = sum;
		sum = stream_bytes_add(sum, entry_bytes(p, i));
	}
	index[points - 1] = sum;
	if (p->n % PLAN_INDEX_STEP == 0)
		index[p->n / PLAN_INDEX_STEP] = sum;
	p->index = index;
	return 0;
}

/* Where entry e (at most p->n: the end) begins in p's stream. */
static uint64_t plan_entry_start(const struct epoch_plan *p, size_t e)
{
	size_t from = e / PLAN_INDEX_STEP * PLAN_INDEX_STEP;
	uint64_t at = p->index[e / PLAN_INDEX_STEP];

	if (e >= p->n)
		return p->index[p->n / PLAN_INDEX_STEP + 1];
	for (size_t i = from; i < e; i++)
		at = stream_bytes_add(at, entry_bytes(p, i));
	return at;
}

/* The entry that holds byte b of p's stream (p->n past the end). */
static size_t plan_entry_at(const struct epoch_plan *p, uint64_t b)
{
	size_t hi = p->n / PLAN_INDEX_STEP + 1, lo, e;
	uint64_t at;

	if (p->n == 0 || b >= p->index[hi])
		return p->n;
	/* the last point at or before b */
	lo = util_last_at_most(p->index, hi, b);
	e = lo * PLAN_INDEX_STEP;
	at = p->index[lo];
	while (e + 1 < p->n && at + entry_bytes(p, e) <= b)
		at += entry_bytes(p, e++);
	return e;
}

/* Entry e that holds byte offset (or the given *entry) of p's stream, and
 * where it begins, by a walk from the epoch's start: false when that is
 * past PLAN_WALK_MAX entries. */
static bool plan_walk_to(const struct epoch_plan *p, uint64_t offset,
			 const size_t *entry, size_t *e, uint64_t *start)
{
	size_t last = entry ? (*entry < p->n ? *entry : p->n) : p->n;
	uint64_t at = 0;
	size_t i;

	for (i = 0; i < last && i < PLAN_WALK_MAX; i++) {
		uint64_t bytes = entry_bytes(p, i);

		if (!entry && offset < at + bytes)
			break;
		at = stream_bytes_add(at, bytes);
	}
	if (i < last && i == PLAN_WALK_MAX)
		return false;
	*e = i;
	*start = at;
	return true;
}

struct epoch_plan *plan_create_from(struct epoch_plan *shared, uint64_t offset,
				    const size_t *entry, uint64_t *start)
{
	struct channel *ch = shared->ch;
	struct epoch_plan *p;
	uint64_t size, *index;
	size_t e;
	bool walked;
	int rc = 0;

	if (!ch->catalog || ch->mode != MODE_PLAN) {
		errno = EINVAL;
		return NULL;
	}
	/* near the start (a reader a new worker takes over, a few blocks
	 * in): a walk there, not the index over every entry (O(n): random
	 * reads of every entry's size) */
	pthread_mutex_lock(&ch->lock);
	walked =
	    !shared->index && plan_walk_to(shared, offset, entry, &e, start);
	if (!walked)
		rc = plan_index_make(shared);
	index = shared->index; /* (NULL when walked: not needed) */
	pthread_mutex_unlock(&ch->lock);
	p = rc ? NULL : calloc(1, sizeof(*p));
	if (!p) {
		errno = ENOMEM;
		return NULL;
	}
	/* the shared plan's order and index, which never change once made,
	 * and which it keeps while its reader (the caller's) is counted */
	p->ch = ch;
	p->epoch = shared->epoch;
	p->order = shared->order;
	p->index = index;
	p->n = shared->n;
	p->borrowed = true;
	p->stream = cache_stream_create_plan(ch->cache, plan_refill, p);
	if (!walked) {
		catalog_enter(ch);
		e = entry ? (*entry < p->n ? *entry : p->n)
			  : plan_entry_at(p, offset);
		*start = plan_entry_start(p, e);
		catalog_leave(ch);
	}
	p->next = e;
	if (!p->stream || cache_stream_start_at(p->stream, *start)) {
		plan_destroy(p);
		errno = ENOMEM;
		return NULL;
	}
	if (cache_stream_size(shared->stream, &size))
		cache_stream_set_size(p->stream, size);
	cache_stream_set_trim(p->stream);
	plan_end_when_full(p);
	return p;
}

/* No lock: the plan is unlinked. */
void plan_destroy(struct epoch_plan *p)
{
	if (!p)
		return;
	cache_stream_destroy(p->stream);
	if (!p->borrowed) {
		free(p->index);
		plan_order_release(p);
	}
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

void plans_destroy(struct epoch_plan *list)
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

		channel_entries_get(ch->entries, plan_item(p, i), &e);
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

		channel_entries_get(ch->entries, plan_item(p, i), &e);
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
