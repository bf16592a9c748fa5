/*
 * channel start: how a channel comes to know its objects before its
 * first byte, and what it keeps of them for later (see core.h).
 *
 * A key-order prefix only checks that its first page lists (its epochs
 * list as they stream).  A shuffled prefix, and a FastFile channel, list
 * in full into the channel's catalog, by key ranges at once
 * (cache/lister.h), unless a listing is already there: the one a worker
 * before this one kept in the keeper's memfd (channel_set_handover: a
 * worker that replaces another starts without a LIST), or the one saved
 * beside the disk tier, young enough for --listing-ttl.  A listing made
 * here is saved beside the disk tier (--cache-dir) and written to the
 * keeper's memfd as an image that the next worker maps in place
 * (cache_catalog_image_save_fd), on a thread of its own, as is one read
 * from a saved listing; once it is there, a Pipe-mode channel reads its
 * catalog from that image too and frees the heap that held it
 * (handover_adopt), so that a worker's death costs the kernel no more at
 * a million keys than at a thousand.  A manifest is fetched
 * whole and parsed into entries (channel/entries.c), its first object asked for
 * at once; a FastFile manifest asks for every object (HEAD, many at once) into
 * a catalog.
 */
#include "config.h"

#include "channel/core.h"
#include "s3/s3.h"

#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cache/catalog.h"
#include "cache/lister.h"
#include "cache/listing_file.h"
#include "util/util.h"

#define LIST_PROGRESS_EVERY 100000
/* the folder of saved listings, in the --cache-dir */
#define CHANNEL_LISTING_DIR "s3pipe-listings"

/* ---- start-up ---- */

static int start_error(struct channel *ch, const struct store_error *serr,
		       const char *bucket, char *err, size_t errlen)
{
	char desc[768];

	s3_error_describe(serr, bucket, desc, sizeof(desc));
	return util_fail(err, errlen, EINVAL, "channel '%s' (%s): %s",
			 ch->spec->name, ch->spec->uri, desc);
}

/* Epoch 0's listing, its first page asked for now: the check that the
 * bucket answers (not when it goes on from where the last worker's
 * readers were: that worker checked). */
static int start_listing(struct channel *ch, char *err, size_t errlen)
{
	struct epoch_plan *p = plan_create(ch, 0, true);
	struct store_error serr;

	if (!p)
		return util_fail(err, errlen, EINVAL, "out of memory");
	if (!cache_stream_trimmed(p->stream) &&
	    cache_stream_start(p->stream, &serr)) {
		plan_destroy(p);
		return start_error(ch, &serr, ch->spec->bucket, err, errlen);
	}
	plan_put(ch, plan_get(ch, 0, true, p));
	return 0;
}

/* ---- the listing kept for the next mount ---- */

/* Where the channel's listing is kept (malloc'd), NULL when nowhere: a
 * folder of its own beside the disk tier's blocks. */
char *saved_listing_path(const struct channel *ch, bool make_dir)
{
	char name[48], msg[128];
	char *dir = NULL, *path = NULL;

	if (!ch->conf.listing_dir)
		return NULL;
	if (asprintf(&dir, "%s/" CHANNEL_LISTING_DIR, ch->conf.listing_dir) < 0)
		return NULL;
	if (make_dir && mkdir(dir, 0700) != 0 && errno != EEXIST)
		util_warn("channel '%s': cannot keep its listing in %s: %s",
			  ch->spec->name, dir,
			  util_strerror(errno, msg, sizeof(msg)));
	cache_catalog_file_name(ch->spec->bucket, ch->spec->prefix, name);
	if (asprintf(&path, "%s/%s", dir, name) < 0)
		path = NULL;
	free(dir);
	return path;
}

/* What came of looking for a saved listing (rc as cache_listing_file_open
 * gives it), in the log; what for: "a catalog" or "epoch N". */
static void saved_listing_report(const struct channel *ch, int rc,
				 const char *path, const char *what,
				 uint64_t count, int64_t at, int64_t now,
				 const char *why)
{
	if (rc == 0)
		util_info("channel '%s': %s from the listing saved %lld s ago "
			  "(%llu objects, --listing-ttl %u), no LIST",
			  ch->spec->name, what, (long long)(now - at),
			  (unsigned long long)count, ch->conf.listing_ttl);
	else if (rc == ESTALE)
		util_info("channel '%s': the saved listing is %lld s old, "
			  "past --listing-ttl %u: listing again",
			  ch->spec->name, (long long)(now - at),
			  ch->conf.listing_ttl);
	else if (rc == EINVAL)
		util_warn("channel '%s': ignoring the saved listing %s: %s",
			  ch->spec->name, path, why);
}

/*
 * With --listing-ttl, the listing a mount before saved, when it is young
 * enough, becomes the channel's catalog: true (no LIST at all).  A file
 * that does not read back is ignored with one log line.
 */
static bool saved_listing_load(struct channel *ch)
{
	char *path;
	const char *why = "";
	int64_t at = 0, now = (int64_t)time(NULL);
	int rc;

	if (!ch->conf.listing_ttl)
		return false;
	path = saved_listing_path(ch, false);
	if (!path)
		return false;
	rc = cache_catalog_load(path, ch->spec->bucket, ch->spec->prefix, now,
				ch->conf.listing_ttl, &ch->catalog, &at, &why);
	saved_listing_report(ch, rc, path, "a catalog",
			     rc ? 0 : cache_catalog_count(ch->catalog), at, now,
			     why);
	free(path);
	return rc == 0;
}

/*
 * With --listing-ttl, a key-order epoch reads the listing saved beside the
 * disk tier (by an earlier epoch or mount) when it is young enough, a page
 * at a time: the file open at its start, or NULL (list S3).
 */
struct cache_listing_file *saved_listing_open(struct channel *ch,
					      unsigned epoch)
{
	struct cache_listing_file *file = NULL;
	const char *why = "";
	char *path, what[32];
	int64_t at = 0, now = (int64_t)time(NULL);
	int rc;

	if (!ch->conf.listing_ttl)
		return NULL;
	path = saved_listing_path(ch, false);
	if (!path)
		return NULL;
	rc = cache_listing_file_open(path, ch->spec->bucket, ch->spec->prefix,
				     now, ch->conf.listing_ttl, &file, &at,
				     &why);
	snprintf(what, sizeof(what), "epoch %u", epoch);
	saved_listing_report(ch, rc, path, what,
			     file ? cache_listing_file_count(file) : 0, at, now,
			     why);
	free(path);
	return file;
}

/* With --listing-ttl, s goes on from the saved listing once there is one. */
void saved_listing_prefer(struct channel *ch, struct cache_stream *s)
{
	char *path = saved_listing_path(ch, false);

	if (path)
		cache_stream_prefer_saved(s, path, ch->conf.listing_ttl);
	free(path);
}

/* With --cache-dir, the listing s takes from S3 written beside the disk
 * tier as it goes, saved once complete. */
void saved_listing_record(struct channel *ch, struct cache_stream *s)
{
	char *path = saved_listing_path(ch, true);
	struct cache_listing_writer *w;
	char msg[128];
	int rc;

	if (!path)
		return;
	rc = cache_listing_writer_begin(
	    path, ch->spec->bucket, ch->spec->prefix, (int64_t)time(NULL), &w);
	if (rc)
		util_warn("channel '%s': cannot save its listing to %s: %s",
			  ch->spec->name, path,
			  util_strerror(rc, msg, sizeof(msg)));
	else
		cache_stream_record(s, w);
	free(path);
}

/* Saves the channel's catalog for the next mount (with --cache-dir). */
static void saved_listing_store(const struct channel *ch)
{
	char *path = saved_listing_path(ch, true);
	char msg[128];
	int rc;

	if (!path)
		return;
	rc = cache_catalog_save(ch->catalog, path, (int64_t)time(NULL));
	if (rc)
		util_warn("channel '%s': cannot save its listing to %s: %s",
			  ch->spec->name, path,
			  util_strerror(rc, msg, sizeof(msg)));
	free(path);
}

void channel_set_records_fd(struct channel *ch, int fd)
{
	ch->records_fd = fd;
}

void channel_set_handover(struct channel *ch, int fd, int order_fd)
{
	ch->handover_fd = fd;
	ch->order_fd = order_fd;
}

void channel_set_resume(struct channel *ch, struct cache_resume *slots)
{
	ch->resume = slots;
	/* the last worker's points, as it left them (it is gone: nobody
	 * writes them meanwhile) */
	memcpy(ch->inherited, slots, sizeof(ch->inherited));
}

/* ---- epoch orders kept for the next worker ---- */

/*
 * The order memfd holds two slots, one an epoch's parity, each a head and
 * the order's entry numbers (4 bytes each, room for the catalog's count),
 * at page-aligned offsets.  A slot is made invalid (magic 0) before it is
 * written and valid last, so that a worker dying meanwhile leaves none.
 */
#define ORDER_MAGIC 0x5333504fu /* "S3PO" */

struct order_head {
	uint32_t magic;
	uint32_t epoch; /* + 1 */
	uint64_t count; /* the catalog's entries */
	uint64_t n;	/* the order's */
	uint64_t bytes; /* the epoch's size; UINT64_MAX: unknown */
};

static off_t order_slot(const struct channel *ch, unsigned epoch)
{
	uint64_t slot = sizeof(struct order_head) +
			(uint64_t)cache_catalog_count(ch->catalog) * 4;

	slot = (slot + 4095) & ~(uint64_t)4095;
	return (off_t)((epoch & 1) * slot);
}

static bool order_head_read(const struct channel *ch, unsigned slot,
			    struct order_head *h)
{
	return pread(ch->order_fd, h, sizeof(*h), order_slot(ch, slot)) ==
		   (ssize_t)sizeof(*h) &&
	       h->magic == ORDER_MAGIC &&
	       h->count == cache_catalog_count(ch->catalog) && h->n <= h->count;
}

/* The orders the last worker kept for this catalog (it came from the
 * keeper: the same entries), to be taken once each. */
static void orders_inherit(struct channel *ch)
{
	struct order_head h;

	for (unsigned k = 0; k < 2 && ch->order_fd >= 0; k++)
		ch->order_pending[k] =
		    order_head_read(ch, k, &h) && (h.epoch & 1) == ((k + 1) & 1)
			? h.epoch
			: 0;
}

/*
 * The kept order is mapped, not read: a million entries read into fresh
 * memory were 4 MB of pages cleared and copied, milliseconds of a
 * recovery that at a thousand keys costs nothing.  Nor is it checked
 * entry by entry (a millisecond more): it is taken when it was made over
 * a catalog of as many entries, and plan_item() reads an entry past the
 * catalog, which no worker writes, as entry 0.  The slot is counted as
 * mapped before it is claimed, so that plan_order_keep(), which writes a
 * slot only once its order was taken, sees it and leaves it alone (a
 * private mapping would see the new order where no page was copied yet).
 */
bool plan_order_take(struct channel *ch, struct epoch_plan *p, uint64_t *bytes)
{
	uint32_t tag = p->epoch + 1,
		 *pending = &ch->order_pending[p->epoch & 1];
	unsigned *mapped = &ch->order_mapped[p->epoch & 1];
	size_t count = cache_catalog_count(ch->catalog), bytes_mapped;
	struct order_head h;
	void *map;

	/* (two readers may make the plan at once: one takes it) */
	if (ch->order_fd < 0 ||
	    __atomic_load_n(pending, __ATOMIC_ACQUIRE) != tag)
		return false;
	__atomic_add_fetch(mapped, 1, __ATOMIC_SEQ_CST);
	if (__atomic_exchange_n(pending, 0, __ATOMIC_SEQ_CST) != tag ||
	    !order_head_read(ch, p->epoch, &h) || h.epoch != tag ||
	    h.count != count || h.n > count)
		goto not_taken;
	bytes_mapped = sizeof(h) + (size_t)h.n * sizeof(*p->order);
	/* private and writable: nothing writes a kept order, but a write
	 * would go to a copy */
	map = mmap(NULL, bytes_mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE,
		   ch->order_fd, order_slot(ch, p->epoch));
	if (map == MAP_FAILED)
		goto not_taken;
	p->order = (uint32_t *)((char *)map + sizeof(h));
	p->order_map = map;
	p->order_map_bytes = bytes_mapped;
	p->n = (size_t)h.n;
	*bytes = h.bytes;
	util_info("channel '%s': epoch %u's order of %zu entries from the "
		  "last worker",
		  ch->spec->name, p->epoch, p->n);
	return true;

not_taken:
	__atomic_sub_fetch(mapped, 1, __ATOMIC_SEQ_CST);
	return false;
}

void plan_order_release(struct epoch_plan *p)
{
	if (!p->order_map) {
		free(p->order);
		return;
	}
	munmap(p->order_map, p->order_map_bytes);
	__atomic_sub_fetch(&p->ch->order_mapped[p->epoch & 1], 1,
			   __ATOMIC_SEQ_CST);
}

void plan_order_keep(struct channel *ch, const struct epoch_plan *p,
		     uint64_t bytes)
{
	struct order_head h = {
	    .magic = 0,
	    .epoch = p->epoch + 1,
	    .count = cache_catalog_count(ch->catalog),
	    .n = p->n,
	    .bytes = bytes,
	};
	off_t at = order_slot(ch, p->epoch);
	ssize_t want = (ssize_t)(p->n * sizeof(*p->order));

	/* the last worker's order for an epoch of this parity, not taken
	 * yet or read in place, stays */
	if (ch->order_fd < 0 ||
	    __atomic_load_n(&ch->order_pending[p->epoch & 1],
			    __ATOMIC_SEQ_CST) != 0 ||
	    __atomic_load_n(&ch->order_mapped[p->epoch & 1],
			    __ATOMIC_SEQ_CST) != 0)
		return;
	if (pwrite(ch->order_fd, &h, sizeof(h), at) != (ssize_t)sizeof(h) ||
	    pwrite(ch->order_fd, p->order, (size_t)want,
		   at + (off_t)sizeof(h)) != want)
		return;
	h.magic = ORDER_MAGIC;
	if (pwrite(ch->order_fd, &h, sizeof(h), at) != (ssize_t)sizeof(h))
		return; /* (left invalid) */
}

/*
 * The catalog a worker before this one listed, from its hand-over
 * descriptor: true when had (any age: the mount's own listing).  An image
 * is mapped in place (as fast at a million keys as at a thousand); a
 * listing file there (what a binary before the image kept, for a SIGHUP
 * upgrade) is loaded.
 */
static bool handover_load(struct channel *ch)
{
	char path[64];
	const char *why = "", *image_why = "";
	int64_t at = 0;
	struct stat sb;
	int rc;

	if (ch->handover_fd < 0 || fstat(ch->handover_fd, &sb) != 0 ||
	    sb.st_size == 0)
		return false;
	rc = cache_catalog_image_map(ch->handover_fd, ch->spec->bucket,
				     ch->spec->prefix, &ch->catalog, &at,
				     &image_why);
	if (rc == 0) {
		util_info("channel '%s': %zu keys mapped from the last "
			  "worker's catalog, no LIST",
			  ch->spec->name, cache_catalog_count(ch->catalog));
		orders_inherit(ch);
		return true;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", ch->handover_fd);
	/* any age, whatever the clock did since: the mount's own listing */
	rc = cache_catalog_load(path, ch->spec->bucket, ch->spec->prefix,
				INT64_MAX, UINT64_MAX, &ch->catalog, &at, &why);
	if (rc) {
		util_warn("channel '%s': the listing the last worker kept "
			  "does not load (%s): listing again",
			  ch->spec->name, image_why[0] ? image_why : why);
		return false;
	}
	util_info("channel '%s': %zu keys from the last worker's listing, "
		  "no LIST",
		  ch->spec->name, cache_catalog_count(ch->catalog));
	orders_inherit(ch);
	return true;
}

void catalog_enter(struct channel *ch)
{
	pthread_mutex_lock(&ch->lock);
	ch->catalog_users++;
	pthread_mutex_unlock(&ch->lock);
}

void catalog_leave(struct channel *ch)
{
	pthread_mutex_lock(&ch->lock);
	if (--ch->catalog_users == 0)
		pthread_cond_broadcast(&ch->catalog_idle);
	pthread_mutex_unlock(&ch->lock);
}

/* Whether every read of the channel's catalog is under ch->lock or
 * counted (catalog_enter): a Pipe-mode plan's.  A FastFile tree's
 * lookups, and the record shuffle's index and pools, read it without
 * either, and keep its heap. */
static bool catalog_reads_counted(const struct channel *ch)
{
	return ch->spec->input_mode != CHANNEL_INPUT_FASTFILE &&
	       !ch->spec->shuffle_buffer && ch->mode == MODE_PLAN;
}

/*
 * The worker that listed reads its catalog from the image it just kept,
 * as the next worker will, and frees the heap that held it: tens of MB at
 * a million keys that the kernel would otherwise free when this worker
 * dies, before the keeper hears of it (a recovery as fast at a million
 * keys as at a thousand).  The image is taken over under ch->lock, and
 * the heap goes once no reader outside it (catalog_enter) is left: every
 * read that began before finds its heap still there.
 */
static void handover_adopt(struct channel *ch)
{
	const char *why = "";
	char msg[128];
	uint64_t freed;
	int rc;

	if (!catalog_reads_counted(ch)) {
		util_info("channel '%s': listing of %zu keys kept for the "
			  "next worker",
			  ch->spec->name, cache_catalog_count(ch->catalog));
		return;
	}
	pthread_mutex_lock(&ch->lock);
	rc = cache_catalog_adopt_image(ch->catalog, ch->handover_fd, &why);
	while (!rc && ch->catalog_users)
		pthread_cond_wait(&ch->catalog_idle, &ch->lock);
	freed = rc ? 0 : cache_catalog_drop_heap(ch->catalog);
	pthread_mutex_unlock(&ch->lock);
	if (rc) {
		util_warn("channel '%s': listing of %zu keys kept for the next "
			  "worker, but read from the heap, not from there: %s",
			  ch->spec->name, cache_catalog_count(ch->catalog),
			  why[0] ? why : util_strerror(rc, msg, sizeof(msg)));
		return;
	}
	/* the chunks were the lister's thread's arena's (small blocks: not
	 * given back when freed, unless trimmed) */
	malloc_trim(0);
	util_info("channel '%s': listing of %zu keys kept for the next "
		  "worker, and read in place from there (%llu KiB of heap "
		  "freed)",
		  ch->spec->name, cache_catalog_count(ch->catalog),
		  (unsigned long long)(freed >> 10));
}

/* The catalog just listed, written for the next worker (a thread of its
 * own: the first byte does not wait for it; the catalog does not change
 * once listed), then read from there (handover_adopt). */
static void *handover_write(void *arg)
{
	struct channel *ch = arg;
	char msg[128];
	int rc = cache_catalog_image_save_fd(ch->catalog, ch->handover_fd,
					     (int64_t)time(NULL));

	if (rc) {
		util_warn("channel '%s': cannot keep its listing for the next "
			  "worker: %s",
			  ch->spec->name, util_strerror(rc, msg, sizeof(msg)));
		return NULL;
	}
	handover_adopt(ch);
	return NULL;
}

static void handover_store(struct channel *ch)
{
	if (ch->handover_fd < 0)
		return;
	if (pthread_create(&ch->handover_writer, NULL, handover_write, ch) == 0)
		ch->handover_writing = true;
	else
		handover_write(ch);
}

/* saved_listing_load(), and the catalog it loaded kept for the next
 * worker as a listed one is: the next worker maps it instead of reading
 * the file again (a million keys decoded), and this one reads it from
 * there too. */
static bool saved_listing_kept(struct channel *ch)
{
	if (!saved_listing_load(ch))
		return false;
	handover_store(ch);
	return true;
}

/*
 * Every key under the prefix into the channel's catalog before the first
 * byte (the epoch's order needs them all), by key ranges at once
 * (cache/lister.h), with progress in the log.
 */
static int list_catalog(struct channel *ch, const char *why, char *err,
			size_t errlen)
{
	struct cache_lister_conf conf;
	struct cache_lister_stats st;
	struct cache_lister *l = NULL;
	struct store_error serr;
	uint64_t t0 = util_now_ns();
	size_t next = 0;
	int rc;

	ch->catalog = cache_catalog_create(ch->spec->bucket, ch->spec->prefix);
	if (!ch->catalog)
		return util_fail(err, errlen, EINVAL, "out of memory");
	cache_lister_conf_init(&conf);
	conf.max_listers = ch->conf.max_listers;
	util_info("channel '%s': listing %s in full (%s), %u key ranges at "
		  "once",
		  ch->spec->name, ch->spec->uri, why, conf.max_listers);
	l = cache_lister_start(ch->cache, ch->catalog, &conf);
	if (!l)
		return util_fail(err, errlen, EINVAL, "out of memory");
	while ((rc = cache_lister_wait(l, next, &serr)) == 0) {
		next = cache_catalog_count(ch->catalog);
		if (next / LIST_PROGRESS_EVERY > 0 &&
		    next % LIST_PROGRESS_EVERY < LIST_PROGRESS_EVERY / 2)
			util_info("channel '%s': listed %zu objects in key "
				  "order",
				  ch->spec->name, next);
		next += LIST_PROGRESS_EVERY;
	}
	cache_lister_get_stats(l, &st);
	cache_lister_destroy(l);
	if (rc == EIO)
		return start_error(ch, &serr, ch->spec->bucket, err, errlen);
	util_info("channel '%s': listed %zu objects in %.1f s (%llu pages "
		  "over %llu key ranges, %llu of them empty, %u at once, %u "
		  "round trips in a row; catalog %llu KiB; %llu keys answered "
		  "twice; in flight %u at most, %.1f on average, %u or more "
		  "%.0f%% of the time)",
		  ch->spec->name, cache_catalog_count(ch->catalog),
		  (double)(util_now_ns() - t0) / 1e9,
		  (unsigned long long)st.pages, (unsigned long long)st.ranges,
		  (unsigned long long)st.empty, st.listers, st.depth,
		  (unsigned long long)(cache_catalog_memory(ch->catalog) >> 10),
		  (unsigned long long)st.discarded, st.in_flight_max,
		  st.busy_ns ? (double)st.flight_ns / (double)st.busy_ns : 0.0,
		  CACHE_LISTERS_WIDE,
		  st.busy_ns ? 100.0 * (double)st.wide_ns / (double)st.busy_ns
			     : 0.0);
	saved_listing_store(ch);
	handover_store(ch);
	return 0;
}

/* The manifest object, fetched whole and parsed into entries. */
static int load_manifest(struct channel *ch, char *err, size_t errlen)
{
	const struct channel_spec *sp = ch->spec;
	struct cache_object *obj = NULL;
	struct store_error serr;
	char *text = NULL;
	char perr[512];
	uint64_t size;
	int rc;

	rc = cache_object_resolve_sync(ch->cache, sp->bucket, sp->prefix, &obj,
				       &serr);
	if (rc) {
		if (rc == ENOENT)
			return util_fail(
			    err, errlen, EINVAL,
			    "channel '%s': manifest %s does not exist "
			    "(or its bucket does not)",
			    sp->name, sp->uri);
		return start_error(ch, &serr, sp->bucket, err, errlen);
	}
	size = cache_object_size(obj);
	if (size > CHANNEL_MANIFEST_MAX) {
		rc = util_fail(
		    err, errlen, EINVAL,
		    "channel '%s': manifest %s is too large (%llu MiB, "
		    "at most %llu MiB)",
		    sp->name, sp->uri, (unsigned long long)(size >> 20),
		    (unsigned long long)(CHANNEL_MANIFEST_MAX >> 20));
		goto out;
	}
	text = malloc((size_t)size + 1);
	if (!text) {
		rc = util_fail(err, errlen, EINVAL, "out of memory");
		goto out;
	}
	rc = cache_object_read_sync(ch->cache, obj, text, &serr);
	if (rc) {
		rc = start_error(ch, &serr, sp->bucket, err, errlen);
		goto out;
	}
	text[size] = '\0';
	ch->entries = channel_entries_create();
	if (!ch->entries) {
		rc = util_fail(err, errlen, EINVAL, "out of memory");
		goto out;
	}
	if (sp->data_type == CHANNEL_MANIFEST_FILE)
		rc = channel_manifest_parse(text, (size_t)size, ch->entries,
					    perr, sizeof(perr));
	else
		rc = channel_augmented_parse(text, (size_t)size, sp->attributes,
					     sp->nattributes, ch->entries, perr,
					     sizeof(perr));
	if (rc)
		rc = util_fail(err, errlen, EINVAL,
			       "channel '%s': manifest %s: %s", sp->name,
			       sp->uri, perr);
	else
		util_debug("channel '%s': manifest %s has %zu entries",
			   sp->name, sp->uri,
			   channel_entries_count(ch->entries));
out:
	free(text);
	cache_object_put(ch->cache, obj);
	/* jansson's tree of the whole manifest (a few hundred bytes an
	 * entry, in small blocks) is gone: give its pages back now rather
	 * than keep them for the life of the mount */
	malloc_trim(0);
	return rc;
}

/* The first object epoch 0 reads, resolved now, before its plan p is
 * linked (nothing else looks at the entries yet): the check that its
 * bucket answers. */
static int check_first_object(struct channel *ch, struct epoch_plan *p,
			      char *err, size_t errlen)
{
	for (size_t i = 0; !ch->catalog && i < p->n; i++) {
		struct channel_entry e;
		struct channel_item it;
		struct cache_object *obj = NULL;
		struct store_error serr;
		char key[CACHE_KEY_MAX + 1];
		const char *bucket;
		bool found = false;
		int error;

		channel_entries_get(ch->entries, plan_item(p, i), &e);
		while (!found && channel_entry_next(&e, &it))
			found = it.object;
		if (!found)
			continue;
		if (channel_entries_state(ch->entries, it.ref, &error) ==
		    CHANNEL_OBJECT_KNOWN)
			return 0;
		bucket = channel_entries_bucket(ch->entries, it.ref);
		channel_entries_key(ch->entries, it.ref, key, sizeof(key));
		if (cache_object_resolve_sync(ch->cache, bucket, key, &obj,
					      &serr)) {
			if (serr.err == ENOENT)
				return util_fail(
				    err, errlen, EINVAL,
				    "channel '%s': s3://%s/%s does "
				    "not exist (or its bucket "
				    "does not)",
				    ch->spec->name, bucket, key);
			return start_error(ch, &serr, bucket, err, errlen);
		}
		/* (no plan is linked yet) */
		error = channel_entries_learn(ch->entries, it.ref, obj);
		cache_object_put(ch->cache, obj);
		return error ? util_fail(err, errlen, EINVAL,
					 "channel '%s': s3://%s/%s: %s",
					 ch->spec->name, bucket, key,
					 error == ENOMEM ? "out of memory"
							 : "a hostile ETag")
			     : 0;
	}
	return 0;
}

/* ---- FastFile: the tree ---- */

/* HEADs of a manifest's keys, at most MANIFEST_HEADS_AT_ONCE at once. */
#define MANIFEST_HEADS_AT_ONCE 64

struct manifest_heads {
	pthread_mutex_t lock;
	pthread_cond_t idle;
	unsigned in_flight;
	struct cache_object **objs; /* entry i's, once resolved */
	size_t failed;		    /* the first entry that failed, or count */
	struct store_error err;	    /* its error */
};

struct manifest_head {
	struct manifest_heads *heads;
	size_t entry;
};

static void manifest_head_done(void *arg, struct cache_object *obj,
			       const struct store_error *err)
{
	struct manifest_head *h = arg;
	struct manifest_heads *hs = h->heads;

	pthread_mutex_lock(&hs->lock);
	hs->objs[h->entry] = obj;
	if (!obj && h->entry < hs->failed) {
		hs->failed = h->entry;
		hs->err = *err;
	}
	hs->in_flight--;
	pthread_cond_signal(&hs->idle);
	pthread_mutex_unlock(&hs->lock);
	free(h);
}

/* A ManifestFile's entry i: its one object. */
static channel_ref manifest_ref(const struct channel_entries *es, size_t i)
{
	struct channel_entry e;
	struct channel_item it = {0};

	channel_entries_get(es, i, &e);
	channel_entry_next(&e, &it);
	return it.ref;
}

/*
 * A manifest's keys into the channel's catalog, for a tree: a manifest
 * names keys, not sizes, so each is asked for (HEAD), many at once.  A key
 * that is not there fails the start, named.
 */
static int manifest_catalog(struct channel *ch, char *err, size_t errlen)
{
	struct channel_entries *es = ch->entries;
	size_t count = channel_entries_count(es);
	struct manifest_heads hs = {.failed = count};
	char key[CACHE_KEY_MAX + 1];
	size_t issued = 0;
	int rc = 0;

	hs.objs = calloc(count ? count : 1, sizeof(*hs.objs));
	ch->catalog = cache_catalog_create(
	    count ? channel_entries_bucket(es, manifest_ref(es, 0))
		  : ch->spec->bucket,
	    count ? channel_entries_prefix(es, manifest_ref(es, 0)) : "");
	if (!hs.objs || !ch->catalog) {
		free(hs.objs);
		return util_fail(err, errlen, EINVAL, "out of memory");
	}
	pthread_mutex_init(&hs.lock, NULL);
	pthread_cond_init(&hs.idle, NULL);
	pthread_mutex_lock(&hs.lock);
	for (; issued < count && hs.failed == count; issued++) {
		channel_ref ref = manifest_ref(es, issued);
		struct manifest_head *h = malloc(sizeof(*h));

		while (hs.in_flight >= MANIFEST_HEADS_AT_ONCE)
			pthread_cond_wait(&hs.idle, &hs.lock);
		if (!h) {
			rc = ENOMEM;
			break;
		}
		h->heads = &hs;
		h->entry = issued;
		hs.in_flight++;
		pthread_mutex_unlock(&hs.lock);
		channel_entries_key(es, ref, key, sizeof(key));
		rc = cache_object_resolve(ch->cache,
					  channel_entries_bucket(es, ref), key,
					  manifest_head_done, h);
		pthread_mutex_lock(&hs.lock);
		if (rc) {
			hs.in_flight--;
			free(h);
			break;
		}
	}
	while (hs.in_flight)
		pthread_cond_wait(&hs.idle, &hs.lock);
	pthread_mutex_unlock(&hs.lock);
	if (rc) {
		rc = util_fail(err, errlen, EINVAL, "out of memory");
	} else if (hs.failed < count) {
		channel_ref ref = manifest_ref(es, hs.failed);
		const char *bucket = channel_entries_bucket(es, ref);

		channel_entries_key(es, ref, key, sizeof(key));
		if (hs.err.err == ENOENT)
			rc = util_fail(err, errlen, EINVAL,
				       "channel '%s': s3://%s/%s (manifest "
				       "element %zu) does not exist",
				       ch->spec->name, bucket, key,
				       hs.failed + 1);
		else
			rc = start_error(ch, &hs.err, bucket, err, errlen);
	}
	for (size_t i = 0; i < issued; i++) {
		const struct cache_object *o = hs.objs[i];
		uint32_t entry;

		if (!rc && o &&
		    cache_catalog_add(
			ch->catalog, cache_object_key(o), cache_object_etag(o),
			cache_object_size(o), cache_object_mtime(o), &entry))
			rc = util_fail(err, errlen, EINVAL,
				       "channel '%s': manifest element %zu: "
				       "out of memory or a key of another "
				       "prefix",
				       ch->spec->name, i + 1);
		cache_object_put(ch->cache, hs.objs[i]);
	}
	if (!rc && cache_catalog_order(ch->catalog, 0,
				       cache_catalog_entries(ch->catalog)))
		rc = util_fail(err, errlen, EINVAL, "out of memory");
	pthread_cond_destroy(&hs.idle);
	pthread_mutex_destroy(&hs.lock);
	free(hs.objs);
	/* the catalog holds what the tree needs */
	channel_entries_destroy(es);
	ch->entries = NULL;
	return rc;
}

/* A FastFile channel's start: every key listed (or a manifest's keys
 * asked for), then the tree made over them. */
static int tree_start(struct channel *ch, char *err, size_t errlen)
{
	int rc = 0;

	if (ch->spec->data_type == CHANNEL_S3_PREFIX) {
		if (!handover_load(ch) && !saved_listing_kept(ch))
			rc = list_catalog(ch,
					  "a FastFile channel shows every "
					  "key",
					  err, errlen);
	} else {
		rc = load_manifest(ch, err, errlen);
		if (!rc)
			rc = manifest_catalog(ch, err, errlen);
	}
	if (rc)
		return rc;
	ch->tree = channel_tree_create(ch->cache, ch->catalog, ch->spec,
				       &ch->host, err, errlen);
	return ch->tree ? 0 : EINVAL;
}

struct channel_tree *channel_tree(struct channel *ch)
{
	return ch->tree;
}

int channel_start(struct channel *ch, char *err, size_t errlen)
{
	struct epoch_plan *p;
	int rc = 0;

	if (ch->spec->input_mode == CHANNEL_INPUT_FASTFILE)
		return tree_start(ch, err, errlen);
	/* (a key-order channel reads a saved listing a page at a time) */
	if (ch->mode != MODE_LISTING &&
	    ch->spec->data_type == CHANNEL_S3_PREFIX &&
	    (handover_load(ch) || saved_listing_kept(ch)))
		ch->mode = MODE_PLAN; /* the catalog is here: no LIST */
	else if (ch->mode == MODE_LISTING)
		return start_listing(ch, err, errlen);
	else if (ch->spec->data_type == CHANNEL_S3_PREFIX)
		rc = list_catalog(ch, "the shuffle needs every key first", err,
				  errlen);
	else
		rc = load_manifest(ch, err, errlen);
	if (rc)
		return rc;
	p = plan_create(ch, 0, true);
	if (!p)
		return util_fail(err, errlen, EINVAL, "out of memory");
	rc = check_first_object(ch, p, err, errlen);
	if (rc) {
		plan_destroy(p);
		return rc;
	}
	plan_put(ch, plan_get(ch, 0, true, p));
	return 0;
}
