/*
 * object counts (see object_counts.h): an open-addressing table of
 * measured objects, id to (bytes, records), under a lock of its own (the
 * readers of a channel measure and look up at once), and its file.
 *
 * The file: "S3PCNT1" and a NUL; the stages' tag, the count (u64 each);
 * each object's id, bytes and records (u64 each); a crc32 of all that
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

#define COUNTS_MAGIC "S3PCNT1"
/* objects kept at most (a table of 96 to 192 MiB): past that, objects
 * are read again */
#define COUNTS_MAX (1u << 22)

struct counted {
	uint64_t id; /* 0: a free slot */
	uint64_t bytes;
	uint64_t records;
};

struct object_counts {
	pthread_mutex_t lock;
	pthread_mutex_t save_lock; /* one save at a time, in order */
	struct counted *slots;
	size_t cap; /* a power of two, or 0 */
	size_t n;
	bool changed; /* since loaded or saved */
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

/* The slot of id, or the free one where it goes (lock held, cap > 0). */
static struct counted *slot_of(struct object_counts *oc, uint64_t id)
{
	size_t mask = oc->cap - 1, i = (size_t)(id ^ (id >> 29)) & mask;

	while (oc->slots[i].id && oc->slots[i].id != id)
		i = (i + 1) & mask;
	return &oc->slots[i];
}

/* Room for one more (lock held): 0 or ENOMEM. */
static int make_room(struct object_counts *oc)
{
	struct counted *old = oc->slots;
	size_t old_cap = oc->cap, cap = old_cap ? old_cap * 2 : 1024;

	if ((oc->n + 1) * 4 <= old_cap * 3)
		return 0;
	oc->slots = calloc(cap, sizeof(*oc->slots));
	if (!oc->slots) {
		oc->slots = old;
		return ENOMEM;
	}
	oc->cap = cap;
	for (size_t i = 0; i < old_cap; i++)
		if (old[i].id)
			*slot_of(oc, old[i].id) = old[i];
	free(old);
	return 0;
}

static void put(struct object_counts *oc, uint64_t id, uint64_t bytes,
		uint64_t records)
{
	struct counted *c;

	if (oc->n >= COUNTS_MAX || make_room(oc))
		return; /* (not kept: read again next time) */
	c = slot_of(oc, id);
	if (!c->id)
		oc->n++;
	if (c->id == id && c->bytes == bytes && c->records == records)
		return;
	c->id = id;
	c->bytes = bytes;
	c->records = records;
	oc->changed = true;
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

/* An image's objects into oc: 0, or EINVAL when it does not check. */
static int counts_parse(const struct channel *ch, struct object_counts *oc,
			const char *data, size_t len)
{
	uint64_t head[2];
	size_t n;
	uint32_t c32;

	if (len < 8 + 16 + 4 || memcmp(data, COUNTS_MAGIC, 8))
		return EINVAL;
	memcpy(head, data + 8, sizeof(head));
	memcpy(&c32, data + len - 4, 4);
	n = (len - 8 - 16 - 4) / 24;
	if (head[0] != stages_tag(ch) || head[1] != n ||
	    8 + 16 + n * 24 + 4 != len ||
	    (uint32_t)crc32_z(crc32(0, NULL, 0), (const Bytef *)data,
			      len - 4) != c32)
		return EINVAL;
	for (size_t i = 0; i < n; i++) {
		struct counted c;

		memcpy(&c, data + 8 + 16 + i * 24, sizeof(c));
		if (c.id)
			put(oc, c.id, c.bytes, c.records);
	}
	oc->changed = false;
	return 0;
}

/* The image in the keeper's memfd (a worker before this one's): 0, or an
 * errno (ENOENT: none, or another image, such as a record index). */
static int counts_take(const struct channel *ch, struct object_counts *oc)
{
	struct stat sb;
	char *data;
	int rc = ENOENT;

	if (ch->records_fd < 0 || fstat(ch->records_fd, &sb) ||
	    sb.st_size < 8 + 16 + 4 ||
	    (uint64_t)sb.st_size > 8 + 16 + (uint64_t)COUNTS_MAX * 24 + 4)
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
			  ch->spec->name, oc->n);
		return;
	}
	path = counts_path(ch, false);
	if (!path || util_read_file(path, 8 + 16 + (size_t)COUNTS_MAX * 24 + 4,
				    &data, &len)) {
		free(path);
		return;
	}
	if (counts_parse(ch, oc, data, len) == 0)
		util_info("channel '%s': %zu objects measured, from %s",
			  ch->spec->name, oc->n, path);
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
			counts_load(ch, oc);
			ch->counts = oc;
		}
	}
	pthread_mutex_unlock(&ch->records_lock);
	return oc;
}

bool object_counts_find(struct object_counts *oc, uint64_t id, uint64_t *bytes,
			uint64_t *records)
{
	bool found = false;

	pthread_mutex_lock(&oc->lock);
	if (oc->cap) {
		const struct counted *c = slot_of(oc, id);

		found = c->id == id;
		if (found) {
			*bytes = c->bytes;
			*records = c->records;
		}
	}
	pthread_mutex_unlock(&oc->lock);
	return found;
}

void object_counts_add(struct object_counts *oc, uint64_t id, uint64_t bytes,
		       uint64_t records)
{
	pthread_mutex_lock(&oc->lock);
	put(oc, id, bytes, records);
	pthread_mutex_unlock(&oc->lock);
}

uint64_t object_counts_count(struct object_counts *oc)
{
	uint64_t n;

	pthread_mutex_lock(&oc->lock);
	n = oc->n;
	pthread_mutex_unlock(&oc->lock);
	return n;
}

/* The file's bytes (malloc'd) of oc (lock held): NULL on ENOMEM. */
static char *counts_image(const struct channel *ch, struct object_counts *oc,
			  size_t *len)
{
	uint64_t head[2] = {stages_tag(ch), oc->n};
	size_t at = 8 + 16;
	char *data;
	uint32_t c32;

	*len = at + oc->n * 24 + 4;
	data = malloc(*len);
	if (!data)
		return NULL;
	memcpy(data, COUNTS_MAGIC, 8);
	memcpy(data + 8, head, sizeof(head));
	for (size_t i = 0; i < oc->cap; i++) {
		if (!oc->slots[i].id)
			continue;
		memcpy(data + at, &oc->slots[i], 24);
		at += 24;
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
	data = oc->changed && oc->n <= COUNTS_MAX ? counts_image(ch, oc, &len)
						  : NULL;
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
	free(oc->slots);
	free(oc);
}
