/*
 * object counts (see object_counts.h): an open-addressing table of
 * measured objects, id to (bytes, records), under a lock of its own (the
 * readers of a channel measure and look up at once), and its file.
 *
 * The file: "S3PCNT2" and a NUL; the stages' tag, the count (u64 each);
 * each object's id, bytes, records and payload (u64 each); the count of
 * objects with points, and for each its id, its count of points and
 * theirs (records, at); a crc32 of all that
 * (u32).  Host byte order: a file from another kind of host fails its
 * check and is not used.  It is written whole, to a temporary file
 * renamed over the last; and to the keeper's memfd for the channel's
 * records (which a channel whose resumes scan has no other use for), its
 * magic last, so that the next worker takes the counts without a file.
 */
#include "config.h"

#include "channel/object_counts.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "channel/core.h"
#include "util/util.h"

#define COUNTS_MAGIC "S3PCNT2"
#define ENTRY_SIZE   32
/* points kept at most (16 bytes each: one an 8 MiB block is 2 a GiB) */
#define POINTS_MAX (1u << 22)
/* objects kept at most (a table of 128 to 256 MiB): past that, objects
 * are read again */
#define COUNTS_MAX (1u << 22)

struct counted {
	uint64_t id; /* 0: a free slot */
	uint64_t bytes;
	uint64_t records;
	uint64_t payload; /* OBJECT_COUNTS_UNKNOWN, or the framed payload's */
};

_Static_assert(sizeof(struct counted) == ENTRY_SIZE, "an entry as saved");

/* the largest file: entries, points and their objects' heads */
#define IMAGE_MAX                                                              \
	(8 + 16 + (uint64_t)COUNTS_MAX * ENTRY_SIZE + 8 +                      \
	 (uint64_t)POINTS_MAX * (16 + sizeof(struct object_point)) + 4)

/* An object's points (object_counts_add_points()). */
struct pointed {
	uint64_t id; /* 0: a free slot */
	size_t n;
	struct object_point *points;
};

/* An open-addressing table of slots of stride bytes, each beginning with
 * its id (0: free). */
struct id_table {
	char *slots;
	size_t stride;
	size_t cap; /* a power of two, or 0 */
	size_t n;
};

struct object_counts {
	pthread_mutex_t lock;
	pthread_mutex_t save_lock; /* one save at a time, in order */
	struct id_table counted;
	struct id_table pointed;
	size_t npoints; /* in all pointed */
	bool changed;	/* since loaded or saved */
};

bool object_counts_id(const struct cache_segment_info *info, uint64_t *id)
{
	uint64_t h = UTIL_FNV1A_START;

	/* (an object without an ETag could change at the same size) */
	if (info->literal || !info->key || !info->etag ||
	    info->obj_offset != 0 || info->size != info->obj_size)
		return false;
	h = util_fnv1a(h, info->key, strlen(info->key) + 1);
	h = util_fnv1a(h, info->etag, strlen(info->etag));
	h = util_fnv1a(h, "", 1);
	h = util_fnv1a(h, &info->obj_size, sizeof(info->obj_size));
	*id = h ? h : 1; /* (0 marks a free slot) */
	return true;
}

static uint64_t slot_id(const struct id_table *t, size_t i)
{
	uint64_t id;

	memcpy(&id, t->slots + i * t->stride, sizeof(id));
	return id;
}

/* The slot of id, or the free one where it goes (cap > 0). */
static void *slot_of(const struct id_table *t, uint64_t id)
{
	size_t mask = t->cap - 1, i = (size_t)(id ^ (id >> 29)) & mask;

	while (slot_id(t, i) && slot_id(t, i) != id)
		i = (i + 1) & mask;
	return t->slots + i * t->stride;
}

/* The slot of id when it is there, else NULL. */
static void *slot_found(const struct id_table *t, uint64_t id)
{
	char *slot;
	uint64_t at;

	if (!t->cap)
		return NULL;
	slot = slot_of(t, id);
	memcpy(&at, slot, sizeof(at));
	return at == id ? slot : NULL;
}

/* Room for one more: 0 or ENOMEM. */
static int make_room(struct id_table *t)
{
	char *old = t->slots;
	size_t old_cap = t->cap, cap = old_cap ? old_cap * 2 : 1024;

	if ((t->n + 1) * 4 <= old_cap * 3)
		return 0;
	t->slots = calloc(cap, t->stride);
	if (!t->slots) {
		t->slots = old;
		return ENOMEM;
	}
	t->cap = cap;
	for (size_t i = 0; i < old_cap; i++) {
		uint64_t id;

		memcpy(&id, old + i * t->stride, sizeof(id));
		if (id)
			memcpy(slot_of(t, id), old + i * t->stride, t->stride);
	}
	free(old);
	return 0;
}

static void put(struct object_counts *oc, uint64_t id, uint64_t bytes,
		uint64_t records, uint64_t payload)
{
	struct counted *c;

	if (oc->counted.n >= COUNTS_MAX || make_room(&oc->counted))
		return; /* (not kept: read again next time) */
	c = slot_of(&oc->counted, id);
	if (!c->id) {
		oc->counted.n++;
		c->payload = OBJECT_COUNTS_UNKNOWN;
	} else if (payload == OBJECT_COUNTS_UNKNOWN && c->bytes == bytes &&
		   c->records == records) {
		payload = c->payload; /* (a scan does not know it) */
	}
	if (c->id == id && c->bytes == bytes && c->records == records &&
	    c->payload == payload)
		return;
	c->id = id;
	c->bytes = bytes;
	c->records = records;
	c->payload = payload;
	oc->changed = true;
}

/* Object id's points become points[0..n) (copied); false when not kept
 * (nor when the object is not: its points alone place nothing). */
static bool put_points(struct object_counts *oc, uint64_t id,
		       const struct object_point *points, size_t n)
{
	struct object_point *copy;
	struct pointed *pt = slot_found(&oc->pointed, id);

	if (!slot_found(&oc->counted, id))
		return false;

	if (pt && pt->n == n &&
	    !memcmp(pt->points, points, n * sizeof(*points)))
		return true;
	if (n == 0 || n > POINTS_MAX - oc->npoints + (pt ? pt->n : 0))
		return false;
	copy = malloc(n * sizeof(*copy));
	if (!copy)
		return false;
	memcpy(copy, points, n * sizeof(*copy));
	if (!pt) {
		if (make_room(&oc->pointed)) {
			free(copy);
			return false;
		}
		pt = slot_of(&oc->pointed, id);
		pt->id = id;
		oc->pointed.n++;
	} else {
		oc->npoints -= pt->n;
		free(pt->points);
	}
	pt->n = n;
	pt->points = copy;
	oc->npoints += n;
	oc->changed = true;
	return true;
}

/* The tag of what makes an object's bytes and records in ch's epochs. */
static uint64_t stages_tag(const struct channel *ch)
{
	const struct channel_convert_conf *cv = &ch->spec->convert;
	uint64_t v[9] = {
	    (uint64_t)channel_record_format(ch->spec),
	    (uint64_t)ch->spec->compression,
	    (uint64_t)ch->spec->wrapper,
	    ch->spec->wrapper == CHANNEL_WRAPPER_RECORDIO
		? ch->conf.recordio_part_max
		: 0,
	    (uint64_t)cv->format,
	    (uint64_t)(int64_t)cv->label_column,
	    (uint64_t)cv->header_skip,
	    (uint64_t)cv->bad_row_skip,
	    cv->feature_dim,
	};

	return util_fnv1a(UTIL_FNV1A_START, v, sizeof(v));
}

static char *counts_path(const struct channel *ch, bool make_dir)
{
	char *listing = saved_listing_path(ch, make_dir), *path = NULL;

	if (listing && asprintf(&path, "%s.counts-%08x", listing,
				(unsigned)(stages_tag(ch) & 0xffffffffu)) < 0)
		path = NULL;
	free(listing);
	return path;
}

/* oc holds nothing (an image that failed its check half way in). */
static void counts_clear(struct object_counts *oc)
{
	for (size_t i = 0; i < oc->pointed.cap; i++)
		free(((struct pointed *)(oc->pointed.slots +
					 i * sizeof(struct pointed)))
			 ->points);
	free(oc->pointed.slots);
	free(oc->counted.slots);
	oc->pointed.slots = oc->counted.slots = NULL;
	oc->pointed.cap = oc->counted.cap = 0;
	oc->pointed.n = oc->counted.n = 0;
	oc->npoints = 0;
	oc->changed = false;
}

/* An image's objects into oc: 0, or EINVAL when it does not check (oc
 * then holds what came before the fault: counts_parse() clears it). */
static int parse_image(const struct channel *ch, struct object_counts *oc,
		       const char *data, size_t len)
{
	uint64_t head[2], pointed;
	size_t at = 8 + 16, end = len - 4;
	uint32_t c32;

	if (len < 8 + 16 + 8 + 4 || memcmp(data, COUNTS_MAGIC, 8))
		return EINVAL;
	memcpy(head, data + 8, sizeof(head));
	memcpy(&c32, data + end, 4);
	if (head[0] != stages_tag(ch) || head[1] > COUNTS_MAX ||
	    head[1] * ENTRY_SIZE + 8 > end - at ||
	    (uint32_t)crc32_z(crc32(0, NULL, 0), (const Bytef *)data, end) !=
		c32)
		return EINVAL;
	for (uint64_t i = 0; i < head[1]; i++, at += ENTRY_SIZE) {
		struct counted c;

		memcpy(&c, data + at, sizeof(c));
		if (c.id)
			put(oc, c.id, c.bytes, c.records, c.payload);
	}
	memcpy(&pointed, data + at, 8);
	at += 8;
	for (uint64_t i = 0; i < pointed; i++) {
		uint64_t ph[2]; /* id, n */
		struct object_point *p;

		if (end - at < sizeof(ph))
			return EINVAL;
		memcpy(ph, data + at, sizeof(ph));
		at += sizeof(ph);
		if (ph[1] > (end - at) / sizeof(*p))
			return EINVAL;
		p = malloc((size_t)ph[1] * sizeof(*p) + 1);
		if (!p)
			return ENOMEM;
		memcpy(p, data + at, (size_t)ph[1] * sizeof(*p));
		if (ph[0])
			(void)put_points(oc, ph[0], p, (size_t)ph[1]);
		free(p);
		at += (size_t)ph[1] * sizeof(*p);
	}
	if (at != end)
		return EINVAL;
	oc->changed = false;
	return 0;
}

/* An image's objects into oc (empty): 0, or an errno with oc empty. */
static int counts_parse(const struct channel *ch, struct object_counts *oc,
			const char *data, size_t len)
{
	int rc = parse_image(ch, oc, data, len);

	if (rc)
		counts_clear(oc);
	return rc;
}

/* The image in the keeper's memfd (a worker before this one's): 0, or an
 * errno (ENOENT: none, or another image, such as a record index). */
static int counts_take(const struct channel *ch, struct object_counts *oc)
{
	struct stat sb;
	char *data;
	int rc = ENOENT;

	if (ch->records_fd < 0 || fstat(ch->records_fd, &sb) ||
	    sb.st_size < 8 + 16 + 8 + 4 || (uint64_t)sb.st_size > IMAGE_MAX)
		return ENOENT;
	data = malloc((size_t)sb.st_size);
	if (data &&
	    pread(ch->records_fd, data, (size_t)sb.st_size, 0) == sb.st_size &&
	    !memcmp(data, COUNTS_MAGIC, 8))
		rc = counts_parse(ch, oc, data, (size_t)sb.st_size);
	free(data);
	return rc;
}

/* The objects the worker before this one measured, else those in the
 * file beside the listing, into oc (none when neither checks: one
 * warning for a file that does not). */
static void counts_load(const struct channel *ch, struct object_counts *oc)
{
	char *path, *data = NULL;
	size_t len = 0;

	if (counts_take(ch, oc) == 0) {
		util_info("channel '%s': %zu objects measured, from the worker "
			  "before this one",
			  ch->spec->name, oc->counted.n);
		return;
	}
	path = counts_path(ch, false);
	if (!path || util_read_file(path, (size_t)IMAGE_MAX, &data, &len)) {
		free(path);
		return;
	}
	if (counts_parse(ch, oc, data, len) == 0)
		util_info("channel '%s': %zu objects measured, from %s",
			  ch->spec->name, oc->counted.n, path);
	else
		util_warn("channel '%s': ignoring %s: not the counts of this "
			  "channel's objects",
			  ch->spec->name, path);
	free(data);
	free(path);
}

struct object_counts *object_counts_get(struct channel *ch)
{
	struct object_counts *oc;

	pthread_mutex_lock(&ch->records_lock);
	oc = ch->counts;
	if (!oc) {
		oc = calloc(1, sizeof(*oc));
		if (oc) {
			pthread_mutex_init(&oc->lock, NULL);
			pthread_mutex_init(&oc->save_lock, NULL);
			oc->counted.stride = sizeof(struct counted);
			oc->pointed.stride = sizeof(struct pointed);
			counts_load(ch, oc);
			ch->counts = oc;
		}
	}
	pthread_mutex_unlock(&ch->records_lock);
	return oc;
}

bool object_counts_find(struct object_counts *oc, uint64_t id, uint64_t *bytes,
			uint64_t *records, uint64_t *payload)
{
	const struct counted *c;

	pthread_mutex_lock(&oc->lock);
	c = slot_found(&oc->counted, id);
	if (c) {
		*bytes = c->bytes;
		*records = c->records;
		if (payload)
			*payload = c->payload;
	}
	pthread_mutex_unlock(&oc->lock);
	return c != NULL;
}

void object_counts_add(struct object_counts *oc, uint64_t id, uint64_t bytes,
		       uint64_t records, uint64_t payload)
{
	pthread_mutex_lock(&oc->lock);
	put(oc, id, bytes, records, payload);
	pthread_mutex_unlock(&oc->lock);
}

uint64_t object_counts_count(struct object_counts *oc)
{
	uint64_t n;

	pthread_mutex_lock(&oc->lock);
	n = oc->counted.n;
	pthread_mutex_unlock(&oc->lock);
	return n;
}

void object_counts_add_points(struct object_counts *oc, uint64_t id,
			      const struct object_point *points, size_t n)
{
	pthread_mutex_lock(&oc->lock);
	(void)put_points(oc, id, points, n);
	pthread_mutex_unlock(&oc->lock);
}

bool object_counts_point(struct object_counts *oc, uint64_t id,
			 uint64_t records, struct object_point *point)
{
	const struct pointed *pt;
	bool found = false;

	pthread_mutex_lock(&oc->lock);
	pt = slot_found(&oc->pointed, id);
	if (pt && pt->points[0].records <= records) {
		size_t lo = 0, hi = pt->n; /* the answer is in [lo, hi) */

		while (hi - lo > 1) {
			size_t mid = lo + (hi - lo) / 2;

			if (pt->points[mid].records <= records)
				lo = mid;
			else
				hi = mid;
		}
		*point = pt->points[lo];
		found = true;
	}
	pthread_mutex_unlock(&oc->lock);
	return found;
}

/* The file's bytes (malloc'd) of oc (lock held): NULL on ENOMEM. */
static char *counts_image(const struct channel *ch, struct object_counts *oc,
			  size_t *len)
{
	uint64_t head[2] = {stages_tag(ch), oc->counted.n};
	uint64_t pointed = oc->pointed.n;
	size_t at = 8 + 16;
	char *data;
	uint32_t c32;

	*len = at + oc->counted.n * ENTRY_SIZE + 8 + pointed * 16 +
	       oc->npoints * sizeof(struct object_point) + 4;
	data = malloc(*len);
	if (!data)
		return NULL;
	memcpy(data, COUNTS_MAGIC, 8);
	memcpy(data + 8, head, sizeof(head));
	for (size_t i = 0; i < oc->counted.cap; i++) {
		if (!slot_id(&oc->counted, i))
			continue;
		memcpy(data + at, oc->counted.slots + i * ENTRY_SIZE,
		       ENTRY_SIZE);
		at += ENTRY_SIZE;
	}
	memcpy(data + at, &pointed, 8);
	at += 8;
	for (size_t i = 0; i < oc->pointed.cap; i++) {
		const struct pointed *pt =
		    (const struct pointed *)(oc->pointed.slots +
					     i * sizeof(struct pointed));
		uint64_t ph[2] = {pt->id, pt->n};

		if (!pt->id)
			continue;
		memcpy(data + at, ph, sizeof(ph));
		at += sizeof(ph);
		memcpy(data + at, pt->points, pt->n * sizeof(*pt->points));
		at += pt->n * sizeof(*pt->points);
	}
	c32 = (uint32_t)crc32_z(crc32(0, NULL, 0), (const Bytef *)data, at);
	memcpy(data + at, &c32, 4);
	return data;
}

/* The image kept in the keeper's memfd for the next worker, its magic
 * written last (a worker dying meanwhile leaves none). */
static void counts_hand_over(const struct channel *ch, const char *data,
			     size_t len)
{
	int fd = ch->records_fd;

	if (fd < 0 || ftruncate(fd, 0))
		return;
	if (pwrite(fd, data + 8, len - 8, 8) != (ssize_t)(len - 8) ||
	    pwrite(fd, data, 8, 0) != 8)
		(void)ftruncate(fd, 0);
}

void object_counts_save(struct channel *ch)
{
	struct object_counts *oc = ch->counts;
	struct util_replace rep;
	char *path, *data, msg[128];
	size_t len = 0;
	int rc;

	if (!oc)
		return;
	/* (the newest image lands last) */
	pthread_mutex_lock(&oc->save_lock);
	pthread_mutex_lock(&oc->lock);
	data = oc->changed ? counts_image(ch, oc, &len) : NULL;
	if (data)
		oc->changed = false;
	pthread_mutex_unlock(&oc->lock);
	if (!data) {
		pthread_mutex_unlock(&oc->save_lock);
		return;
	}
	counts_hand_over(ch, data, len);
	path = counts_path(ch, true);
	rc = path ? util_replace_begin(&rep, path) : 0;
	if (path && !rc) {
		rc = util_write_all(rep.fd, data, len);
		if (rc)
			util_replace_abort(&rep);
		else
			rc = util_replace_commit(&rep);
	}
	if (rc)
		util_warn("channel '%s': cannot save its objects' counts to "
			  "%s: %s",
			  ch->spec->name, path,
			  util_strerror(rc, msg, sizeof(msg)));
	pthread_mutex_unlock(&oc->save_lock);
	free(data);
	free(path);
}

void object_counts_destroy(struct object_counts *oc)
{
	if (!oc)
		return;
	pthread_mutex_destroy(&oc->save_lock);
	pthread_mutex_destroy(&oc->lock);
	counts_clear(oc);
	free(oc);
}
