/*
 * record index: where every record of a channel's objects begins, for the
 * record shuffle (channel/mix.h).
 *
 * One pass reads the catalog's objects in key order through the cache,
 * each through the record scanner (records.c) on its own: a record does
 * not cross from one object into the next.  What it keeps is 8 bytes a
 * record (its offset in its object) and 8 bytes a block (the first record
 * at or after the block's start), which is all the shuffle needs to know
 * where each record lies and how long it is without reading it.  The pass
 * runs once per channel, on the first open of a record-shuffled epoch (or
 * the first resume file by record of a shuffled prefix, which finds its
 * record from it), and its cost (one read of the channel) is logged.  With
 * --cache-dir the index is saved beside the channel's saved listing (its name
 * and
 * ".records"), and a later mount takes it instead of reading the channel
 * again, when every object is the one it measured (key, ETag and size).
 */
#include "config.h"

#include "channel/mix.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "cache/catalog.h"
#include "channel/core.h"
#include "util/util.h"

/* objects added to the pass's stream at a time */
#define INDEX_FILL 1024

struct index_pass {
	struct channel *ch;
	struct record_index *ix;
	struct cache_stream *stream;
	size_t added; /* catalog positions added to the stream */
	pthread_mutex_t lock;
	/* the scan of the object being read */
	size_t pos;	/* its catalog position */
	uint32_t entry; /* its entry */
	uint64_t left;	/* its bytes not read yet */
	uint64_t cap;	/* room in ix->start */
	struct channel_records scan;
	char why[1600];
};

/* The pass's stream asks for more objects (the reader's thread): entry
 * after entry, so that record numbers follow entry numbers. */
static void index_refill(void *arg, struct cache_stream *s)
{
	struct index_pass *ps = arg;
	const struct cache_catalog *cat = ps->ch->catalog;
	size_t count = ps->ix->entries;

	pthread_mutex_lock(&ps->lock);
	for (size_t end = ps->added + INDEX_FILL;
	     ps->added < count && ps->added < end; ps->added++) {
		uint32_t e = (uint32_t)ps->added;
		struct cache_object *obj;

		if (ps->ix->sizes[e] == 0)
			continue;
		obj = cache_catalog_object(ps->ch->cache, cat, e);
		if (!obj || cache_stream_add_object(s, obj, 0,
						    cache_object_size(obj))) {
			cache_object_put(ps->ch->cache, obj);
			cache_stream_end(s, ENOMEM);
			ps->added = count + 1;
			break;
		}
		cache_object_put(ps->ch->cache, obj);
	}
	if (ps->added == count)
		cache_stream_end(s, 0);
	pthread_mutex_unlock(&ps->lock);
}

static int push_start(struct index_pass *ps, uint64_t at)
{
	struct record_index *ix = ps->ix;

	if (ix->records == ps->cap) {
		uint64_t cap = ps->cap ? ps->cap * 2 : 4096;
		uint64_t *p = realloc(ix->start, cap * sizeof(*p));

		if (!p)
			return ENOMEM;
		ix->start = p;
		ps->cap = cap;
	}
	ix->start[ix->records++] = at;
	return 0;
}

static void name_object(struct index_pass *ps, char *buf, size_t len)
{
	char key[CACHE_KEY_MAX + 1];

	if (!cache_catalog_key(ps->ch->catalog, ps->entry, key, sizeof(key)))
		snprintf(key, sizeof(key), "(a long key)");
	snprintf(buf, len, "s3://%s/%s", cache_catalog_bucket(ps->ch->catalog),
		 key);
}

/* The scanner found the object malformed: why, where. */
static int scan_failed(struct index_pass *ps)
{
	char obj[CACHE_KEY_MAX + 64];

	name_object(ps, obj, sizeof(obj));
	snprintf(ps->why, sizeof(ps->why), "%s, at %s at byte %llu",
		 ps->scan.why, obj, (unsigned long long)ps->scan.error_at);
	return EIO;
}

/* The object being scanned ended: its records are counted (a last line
 * without its '\n' is one, marked open). */
static int object_end(struct index_pass *ps)
{
	struct record_index *ix = ps->ix;

	if (ps->scan.format == CHANNEL_RECORDS_LINES && ps->scan.open)
		ix->open_end[ps->entry / 64] |= 1ULL << (ps->entry % 64);
	if (channel_records_end(&ps->scan))
		return scan_failed(ps);
	ix->first[ps->entry + 1] = ix->records;
	return 0;
}

/* Feeds bytes of the object being scanned, noting each record's start:
 * the scanner stops where the next record not noted yet begins. */
static int feed(struct index_pass *ps, const unsigned char *p, size_t len)
{
	struct record_index *ix = ps->ix;
	struct channel_records *sc = &ps->scan;

	/* lines: the scanner's rules, a memchr a line (its call a line is
	 * what the pass would spend its time on) */
	while (sc->format == CHANNEL_RECORDS_LINES && len) {
		const unsigned char *nl;
		size_t n;

		if (!sc->open) {
			if (push_start(ps, sc->pos))
				return ENOMEM;
			sc->open = true;
		}
		nl = memchr(p, '\n', len);
		n = nl ? (size_t)(nl - p) + 1 : len;
		sc->pos += n;
		p += n;
		len -= n;
		if (nl) {
			sc->open = false;
			sc->records++;
		}
	}
	while (len) {
		bool reached;
		uint64_t next = ix->records - ix->first[ps->entry];
		size_t used =
		    channel_records_feed(&ps->scan, p, len, next, &reached);

		if (ps->scan.error)
			return scan_failed(ps);
		p += used;
		len -= used;
		if (reached && push_start(ps, ps->scan.pos))
			return ENOMEM;
	}
	return 0;
}

/* The next object of the pass (entry order, non-empty). */
static void object_begin(struct index_pass *ps)
{
	struct record_index *ix = ps->ix;

	while (ix->sizes[ps->pos] == 0) {
		ix->first[ps->pos + 1] = ix->records;
		ps->pos++;
	}
	ps->entry = (uint32_t)ps->pos++;
	ps->left = ix->sizes[ps->entry];
	channel_records_init(&ps->scan, channel_record_format(ps->ch->spec));
	ix->first[ps->entry] = ix->records;
}

/* Reads every object once, scanning each. */
static int index_read(struct index_pass *ps)
{
	struct channel_stage *st =
	    channel_cache_stage_create(ps->ch->cache, ps->stream, 0);
	struct record_index *ix = ps->ix;
	uint64_t offset = 0;
	size_t objects = 0, total = 0;
	int rc = 0;

	if (!st)
		return ENOMEM;
	for (size_t e = 0; e < ix->entries; e++)
		total += ix->sizes[e] > 0;
	while (!rc && objects < total) {
		struct channel_view view;

		memset(&view, 0, sizeof(view));
		rc = st->ops->read(st, offset, 1u << 20, &view, NULL);
		if (!rc && view.bytes == 0)
			rc = EIO; /* shorter than listed */
		for (int i = 0; !rc && i < view.count; i++) {
			const unsigned char *b = view.iov[i].iov_base;
			size_t n = view.iov[i].iov_len;

			while (!rc && n) {
				size_t take;

				if (ps->left == 0)
					object_begin(ps);
				take = n < ps->left ? n : (size_t)ps->left;
				rc = feed(ps, b, take);
				b += take;
				n -= take;
				ps->left -= take;
				if (!rc && ps->left == 0) {
					rc = object_end(ps);
					objects++;
				}
			}
		}
		offset += view.bytes;
		st->ops->release(st, &view);
	}
	channel_stack_destroy(st);
	/* the empty entries after the last */
	for (; !rc && ps->pos < ix->entries; ps->pos++)
		ix->first[ps->pos + 1] = ix->records;
	return rc;
}

/* The blocks of every entry, and the first record at or after each. */
static int index_blocks(struct record_index *ix)
{
	uint64_t blocks = 0;

	for (size_t e = 0; e < ix->entries; e++) {
		ix->block_base[e] = blocks;
		blocks += (ix->sizes[e] + ix->block - 1) / ix->block;
	}
	ix->block_base[ix->entries] = blocks;
	ix->block_first = malloc((blocks ? blocks : 1) * sizeof(uint64_t));
	if (!ix->block_first)
		return ENOMEM;
	for (size_t e = 0; e < ix->entries; e++) {
		uint64_t r = ix->first[e];

		for (uint64_t g = ix->block_base[e]; g < ix->block_base[e + 1];
		     g++) {
			uint64_t at = (g - ix->block_base[e]) * ix->block;

			while (r < ix->first[e + 1] && ix->start[r] < at)
				r++;
			ix->block_first[g] = r;
		}
	}
	return 0;
}

/* Whether a record spans too many blocks for the record shuffle
 * (logged). */
static int index_check(struct channel *ch, struct record_index *ix)
{
	for (size_t e = 0; ch->spec->shuffle_buffer && e < ix->entries; e++) {
		for (uint64_t r = ix->first[e]; r < ix->first[e + 1]; r++) {
			uint64_t len = record_stored_len(ix, e, r);
			uint64_t a = ix->start[r] / ix->block;
			uint64_t z = (ix->start[r] + len - 1) / ix->block;
			char key[CACHE_KEY_MAX + 1];

			if (z - a < RECORD_SPAN_MAX)
				continue;
			if (!cache_catalog_key(ch->catalog, (uint32_t)e, key,
					       sizeof(key)))
				key[0] = '\0';
			util_error(
			    "channel '%s': s3://%s/%s: a record of %llu "
			    "bytes at byte %llu spans more than %d "
			    "blocks: the record shuffle needs a larger "
			    "--part-size",
			    ch->spec->name, cache_catalog_bucket(ch->catalog),
			    key, (unsigned long long)len,
			    (unsigned long long)ix->start[r], RECORD_SPAN_MAX);
			return EIO;
		}
	}
	return 0;
}

static struct record_index *index_alloc(struct channel *ch)
{
	struct record_index *ix = calloc(1, sizeof(*ix));
	size_t n = cache_catalog_entries(ch->catalog);

	if (!ix)
		return NULL;
	ix->block = cache_block_size(ch->cache);
	ix->entries = n;
	ix->first = calloc(n + 1, sizeof(uint64_t));
	ix->block_base = calloc(n + 1, sizeof(uint64_t));
	ix->open_end = calloc(n / 64 + 1, sizeof(uint64_t));
	ix->sizes = calloc(n ? n : 1, sizeof(uint64_t));
	if (!ix->first || !ix->block_base || !ix->open_end || !ix->sizes) {
		record_index_destroy(ix);
		return NULL;
	}
	for (size_t e = 0; e < n; e++)
		ix->sizes[e] = cache_catalog_size(ch->catalog, (uint32_t)e);
	return ix;
}

/* The pass, timed and logged. */
static int index_build(struct channel *ch, struct record_index **out)
{
	struct index_pass ps;
	struct timespec t0, t1;
	int rc;

	memset(&ps, 0, sizeof(ps));
	ps.ch = ch;
	ps.ix = index_alloc(ch);
	if (!ps.ix)
		return ENOMEM;
	pthread_mutex_init(&ps.lock, NULL);
	ps.stream = cache_stream_create_plan(ch->cache, index_refill, &ps);
	if (!ps.stream) {
		pthread_mutex_destroy(&ps.lock);
		record_index_destroy(ps.ix);
		return ENOMEM;
	}
	cache_stream_set_trim(ps.stream);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	rc = index_read(&ps);
	cache_stream_destroy(ps.stream);
	pthread_mutex_destroy(&ps.lock);
	if (!rc)
		rc = index_blocks(ps.ix);
	if (!rc)
		rc = index_check(ch, ps.ix);
	if (rc) {
		if (rc == EIO && ps.why[0])
			util_error("channel '%s': the record shuffle's index: "
				   "%s",
				   ch->spec->name, ps.why);
		record_index_destroy(ps.ix);
		return rc;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	util_info("channel '%s': indexed %llu records in %.2f s (%llu bytes "
		  "kept)",
		  ch->spec->name, (unsigned long long)ps.ix->records,
		  (double)(t1.tv_sec - t0.tv_sec) +
		      (double)(t1.tv_nsec - t0.tv_nsec) / 1e9,
		  (unsigned long long)record_index_memory(ps.ix));
	*out = ps.ix;
	return 0;
}

/* ---- the index saved beside the listing ----
 *
 * "S3PRIDX1" (written last), then u64s: the record format, the entries,
 * the records; per entry its size, an id of its key and ETag (FNV-1a) and
 * its first record; the open-end words; each record's start; then a crc32
 * of all that (u32; 0 in the keeper's memfd, which is not checked).  Host byte
 * order: a file from another kind of host fails its check and the channel is
 * read again.
 */

#define INDEX_MAGIC "S3PRIDX1"

static uint64_t entry_id(const struct cache_catalog *cat, uint32_t e)
{
	char key[CACHE_KEY_MAX + 1], etag[CACHE_ETAG_MAX + 1];
	size_t n = cache_catalog_key(cat, e, key, sizeof(key));
	uint64_t h;

	cache_catalog_etag(cat, e, etag, sizeof(etag));
	h = util_fnv1a(UTIL_FNV1A_START, key, n);
	h = util_fnv1a(h, "", 1);
	h = util_fnv1a(h, etag, strlen(etag));
	return h;
}

static char *index_path(const struct channel *ch, bool make_dir)
{
	char *listing = saved_listing_path(ch, make_dir), *path = NULL;

	if (listing && asprintf(&path, "%s.records", listing) < 0)
		path = NULL;
	free(listing);
	return path;
}

/* Writes p[0..len) at fd's offset (and into *crc when not NULL): 0 or
 * EIO. */
static int put_all(int fd, uLong *crc, const void *p, size_t len)
{
	const char *c = p;

	if (crc)
		*crc = crc32_z(*crc, p, len);
	while (len) {
		ssize_t n = write(fd, c, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return EIO;
		c += n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * Writes ix to fd from its start, its magic last (a half-written index is
 * no index): with a crc32 (a file), or without (the keeper's memfd, which
 * only this program writes, and where a crc over 8 bytes a record would
 * cost the worker that dies next as much as reading it).  0 or EIO.
 */
static int index_write(struct channel *ch, const struct record_index *ix,
		       int fd, bool with_crc)
{
	uLong crc = crc32(0, NULL, 0);
	uLong *c = with_crc ? &crc : NULL;
	uint64_t head[3];
	uint32_t c32;
	int rc;

	head[0] = (uint64_t)channel_record_format(ch->spec);
	head[1] = ix->entries;
	head[2] = ix->records;
	if (c)
		crc = crc32_z(crc, (const Bytef *)INDEX_MAGIC, 8);
	rc = lseek(fd, 8, SEEK_SET) == 8 ? 0 : EIO;
	if (!rc)
		rc = put_all(fd, c, head, sizeof(head));
	for (size_t e = 0; !rc && e < ix->entries; e++) {
		uint64_t ent[3] = {ix->sizes[e],
				   entry_id(ch->catalog, (uint32_t)e),
				   ix->first[e]};

		rc = put_all(fd, c, ent, sizeof(ent));
	}
	if (!rc)
		rc = put_all(fd, c, ix->open_end,
			     (ix->entries / 64 + 1) * sizeof(uint64_t));
	if (!rc)
		rc = put_all(fd, c, ix->start, ix->records * sizeof(uint64_t));
	c32 = (uint32_t)crc;
	if (!rc)
		rc = put_all(fd, NULL, &c32, sizeof(c32));
	if (!rc && pwrite(fd, INDEX_MAGIC, 8, 0) != 8)
		rc = EIO;
	return rc;
}

/* Saves ix beside the listing (a temporary file renamed over it). */
static void index_save(struct channel *ch, const struct record_index *ix)
{
	char *path = index_path(ch, true), *tmp = NULL;
	int fd, rc;

	if (!path || asprintf(&tmp, "%s.tmp", path) < 0) {
		free(path);
		return;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	rc = fd >= 0 ? index_write(ch, ix, fd, true) : errno;
	if (fd >= 0 && !rc && fsync(fd))
		rc = EIO;
	if (fd >= 0 && close(fd))
		rc = EIO;
	if (!rc && rename(tmp, path))
		rc = errno;
	if (rc) {
		util_warn("channel '%s': cannot save its record index in %s",
			  ch->spec->name, path);
		unlink(tmp);
	}
	free(tmp);
	free(path);
}

/* Keeps ix in the keeper's memfd for the next worker (a failure costs
 * that worker a pass). */
static void index_hand_over(struct channel *ch, const struct record_index *ix)
{
	int fd = ch->records_fd;

	if (fd < 0 || ftruncate(fd, 0))
		return;
	if (index_write(ch, ix, fd, false))
		(void)ftruncate(fd, 0); /* none rather than half of one */
	else
		util_info("channel '%s': its record index is kept for the "
			  "next worker",
			  ch->spec->name);
}

/* The channel's index handed over on a thread of its own: writing 8 bytes
 * a record into shared memory must not hold up the first reader. */
static void *hand_over_thread(void *arg)
{
	struct channel *ch = arg;

	index_hand_over(ch, ch->records);
	return NULL;
}

static void index_hand_over_later(struct channel *ch)
{
	if (ch->records_fd < 0)
		return;
	if (pthread_create(&ch->records_writer, NULL, hand_over_thread, ch) ==
	    0)
		ch->records_writing = true;
	else
		index_hand_over(ch, ch->records);
}

static int get_all(const char **at, const char *end, void *p, size_t len)
{
	if ((size_t)(end - *at) < len)
		return EINVAL;
	memcpy(p, *at, len);
	*at += len;
	return 0;
}

/* The index written in fd (from its start), when it is whole and every
 * entry is the one it measured: 0 with *out, else an errno (ENOENT:
 * none). */
static int index_read_fd(struct channel *ch, int fd, bool with_crc,
			 struct record_index **out)
{
	char *data = NULL;
	const char *at, *end;
	struct record_index *ix = NULL;
	uint64_t head[3];
	uint32_t c32;
	struct stat sb;
	int rc = ENOENT;

	if (fstat(fd, &sb) || sb.st_size < 8 + 24 + 4 ||
	    !(data = malloc((size_t)sb.st_size)) ||
	    pread(fd, data, (size_t)sb.st_size, 0) != sb.st_size)
		goto out;
	rc = EINVAL;
	end = data + sb.st_size - 4;
	memcpy(&c32, end, 4);
	if (memcmp(data, INDEX_MAGIC, 8) ||
	    (with_crc &&
	     (uint32_t)crc32_z(crc32(0, NULL, 0), (const Bytef *)data,
			       (size_t)(end - data)) != c32))
		goto out;
	at = data + 8;
	if (get_all(&at, end, head, sizeof(head)) ||
	    head[0] != (uint64_t)channel_record_format(ch->spec))
		goto out;
	ix = index_alloc(ch);
	if (!ix || head[1] != ix->entries)
		goto out;
	for (size_t e = 0; e < ix->entries; e++) {
		uint64_t ent[3];

		if (get_all(&at, end, ent, sizeof(ent)) ||
		    ent[0] != ix->sizes[e] ||
		    ent[1] != entry_id(ch->catalog, (uint32_t)e) ||
		    ent[2] > head[2])
			goto out;
		ix->first[e] = ent[2];
	}
	ix->first[ix->entries] = head[2];
	ix->records = head[2];
	if (head[2] > (uint64_t)(end - at) / sizeof(uint64_t))
		goto out;
	ix->start = malloc((head[2] ? head[2] : 1) * sizeof(uint64_t));
	if (!ix->start ||
	    get_all(&at, end, ix->open_end,
		    (ix->entries / 64 + 1) * sizeof(uint64_t)) ||
	    get_all(&at, end, ix->start, head[2] * sizeof(uint64_t)) ||
	    at != end)
		goto out;
	/* (what the pass would have made: starts in order within their
	 * objects, firsts in order) */
	for (size_t e = 0; e < ix->entries; e++) {
		if (ix->first[e] > ix->first[e + 1])
			goto out;
		for (uint64_t r = ix->first[e]; r < ix->first[e + 1]; r++)
			if (ix->start[r] >= ix->sizes[e] ||
			    (r > ix->first[e] &&
			     ix->start[r] <= ix->start[r - 1]))
				goto out;
	}
	rc = index_blocks(ix);
	if (!rc)
		rc = index_check(ch, ix);
out:
	free(data);
	if (rc)
		record_index_destroy(ix);
	else
		*out = ix;
	return rc;
}

/* The index the last worker handed over (*handed), else the one saved
 * beside the listing: 0 with *out and where it came from, else an
 * errno. */
static int index_load(struct channel *ch, struct record_index **out,
		      const char **from, bool *handed)
{
	char *path;
	int fd, rc = ENOENT;

	if (ch->records_fd >= 0) {
		rc = index_read_fd(ch, ch->records_fd, false, out);
		*from = "from the worker before this one";
		*handed = true;
		if (!rc)
			return 0;
		*handed = false;
	}
	path = index_path(ch, false);
	fd = path ? open(path, O_RDONLY | O_CLOEXEC) : -1;
	free(path);
	if (fd < 0)
		return ENOENT;
	rc = index_read_fd(ch, fd, true, out);
	close(fd);
	*from = "from beside its saved listing";
	return rc;
}

const struct record_index *record_index_get(struct channel *ch)
{
	int rc;

	const char *from = "";
	bool handed = false;

	pthread_mutex_lock(&ch->records_lock);
	if (!ch->records && !ch->records_error &&
	    index_load(ch, &ch->records, &from, &handed) == 0) {
		if (!handed)
			index_hand_over_later(ch); /* (from the file) */
		util_info("channel '%s': took its record index (%llu records) "
			  "%s",
			  ch->spec->name,
			  (unsigned long long)ch->records->records, from);
	}
	if (!ch->records && !ch->records_error) {
		rc = index_build(ch, &ch->records);
		if (rc) {
			ch->records_error = rc;
		} else {
			index_save(ch, ch->records);
			index_hand_over_later(ch);
		}
	}
	rc = ch->records_error;
	pthread_mutex_unlock(&ch->records_lock);
	if (rc)
		errno = rc;
	return rc ? NULL : ch->records;
}

void record_index_destroy(struct record_index *ix)
{
	if (!ix)
		return;
	free(ix->first);
	free(ix->start);
	free(ix->block_base);
	free(ix->block_first);
	free(ix->open_end);
	free(ix->sizes);
	free(ix);
}

uint64_t record_index_memory(const struct record_index *ix)
{
	if (!ix)
		return 0;
	return (ix->entries * 3 + 2) * sizeof(uint64_t) +
	       ix->records * sizeof(uint64_t) +
	       ix->block_base[ix->entries] * sizeof(uint64_t) +
	       (ix->entries / 64 + 1) * sizeof(uint64_t);
}

size_t record_entry(const struct record_index *ix, uint64_t r)
{
	/* (an empty entry has the next one's first: the last with first at
	 * or before r holds r) */
	return util_last_at_most(ix->first, ix->entries ? ix->entries : 1, r);
}

uint64_t record_stored_len(const struct record_index *ix, size_t e, uint64_t r)
{
	uint64_t end =
	    r + 1 < ix->first[e + 1] ? ix->start[r + 1] : ix->sizes[e];

	return end - ix->start[r];
}

uint64_t record_out_len(const struct record_index *ix, size_t e, uint64_t r)
{
	bool open =
	    r + 1 == ix->first[e + 1] && (ix->open_end[e / 64] >> (e % 64) & 1);

	return record_stored_len(ix, e, r) + open;
}

int record_index_epoch_offset(struct channel *ch, const struct epoch_plan *plan,
			      uint64_t record, uint64_t *offset)
{
	const struct record_index *ix = record_index_get(ch);
	bool lines = channel_record_format(ch->spec) == CHANNEL_RECORDS_LINES;
	uint64_t count = 0, bytes = 0;
	bool joined = false; /* the last object ended inside a line */

	if (!ix)
		return errno;
	for (size_t i = 0; i < plan->n; i++) {
		size_t e = plan_item(plan, i);
		uint64_t n, fresh;

		if (e >= ix->entries)
			return ESTALE;
		n = ix->first[e + 1] - ix->first[e];
		/* (its first line goes on the last object's, when that one
		 * ended inside a line: one record of the epoch) */
		fresh = n - (joined && n ? 1 : 0);
		if (record - count < fresh) {
			*offset =
			    bytes + ix->start[ix->first[e] + (record - count) +
					      (joined && n ? 1 : 0)];
			return 0;
		}
		count += fresh;
		bytes += ix->sizes[e];
		if (n)
			joined =
			    lines && (ix->open_end[e / 64] >> (e % 64) & 1);
	}
	*offset = bytes; /* fewer records: the end */
	return 0;
}
