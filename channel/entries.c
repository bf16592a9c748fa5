/*
 * entries: a manifest's entries, a few bytes each beside the catalogs that
 * hold their objects (see internal.h).
 *
 * Every entry is a record in an arena, found through a table of pointers:
 *
 *   varint line
 *   varint nitems << 1 | has_error
 *   [varint length, the error's bytes, NUL]       when has_error
 *   per item: 0, varint catalog, varint entry     an object
 *             1, varint length, the bytes, NUL    literal bytes
 *
 * (varints as LEB128: seven bits a byte, low first.)  A ManifestFile's
 * entries take no record at all while entry i is the first catalog's
 * entry i, one object and nothing else (the identity): that holds for a
 * whole ManifestFile, whose key, size and ETag are then the catalog's 37
 * bytes and the key's text, as for a listed prefix.  The first entry that
 * breaks it writes out the records it stood for.  Objects go into one catalog
 * per bucket and prefix: a ManifestFile's prefix, or the bucket alone for an
 * augmented manifest's -refs.  Each catalog has a byte of state an object
 * beside it (known, resolving, failed with which errno).
 *
 * An entry is built in a scratch buffer and copied into the arena whole
 * when it ends, so a record never spans two blocks and nothing written is
 * moved.
 */
#include "config.h"

#include "channel/internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cache/cache.h"
#include "cache/catalog.h"
#include "util/arena.h"
#include "util/util.h"

#define ERROR_MAX    512 /* bytes of one entry's error message */
#define ARENA_FIRST  (4u << 10)
#define ARENA_MAX    (1u << 20)
#define TABLE_FIRST  16
#define VARINT_MAX   10
#define ITEM_OBJECT  0
#define ITEM_TEXT    1
#define STATE_FAILED CHANNEL_OBJECT_FAILED
#define ERRNO_KEPT   (255 - STATE_FAILED) /* larger errnos become EIO */

struct catalog_slot {
	struct cache_catalog *cat;
	unsigned char *state; /* per catalog entry: see state_byte() */
	size_t cap;
};

struct channel_entries {
	const unsigned char **entry; /* records, in the arena */
	size_t count;
	size_t cap;
	bool records; /* entry[] holds every entry: no longer the identity */
	struct catalog_slot *cats;
	size_t ncats;
	size_t last; /* the catalog found last (a manifest has one) */
	struct util_arena arena; /* the records */
	/* the entry being built */
	unsigned char *build; /* its items */
	size_t build_len;
	size_t build_cap;
	unsigned long line;
	unsigned nitems;
	char error[ERROR_MAX]; /* "" while it has none */
};

struct channel_entries *channel_entries_create(void)
{
	struct channel_entries *e = calloc(1, sizeof(*e));

	if (e)
		util_arena_init(&e->arena, ARENA_FIRST, ARENA_MAX);
	return e;
}

void channel_entries_clear(struct channel_entries *e)
{
	for (size_t i = 0; i < e->ncats; i++) {
		cache_catalog_destroy(e->cats[i].cat);
		free(e->cats[i].state);
	}
	util_arena_free(&e->arena);
	free(e->cats);
	free(e->entry);
	free(e->build);
	memset(e, 0, sizeof(*e));
	util_arena_init(&e->arena, ARENA_FIRST, ARENA_MAX);
}

void channel_entries_destroy(struct channel_entries *e)
{
	if (!e)
		return;
	channel_entries_clear(e);
	free(e);
}

size_t channel_entries_count(const struct channel_entries *e)
{
	return e->count;
}

uint64_t channel_entries_memory(const struct channel_entries *e)
{
	uint64_t bytes = sizeof(*e) + e->cap * sizeof(*e->entry) +
			 e->arena.bytes + e->build_cap +
			 e->ncats * sizeof(*e->cats);

	for (size_t i = 0; i < e->ncats; i++)
		bytes += cache_catalog_memory(e->cats[i].cat) + e->cats[i].cap;
	return bytes;
}

/* ---- building ---- */

static size_t varint_put(unsigned char *out, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		out[n++] = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	out[n++] = (unsigned char)v;
	return n;
}

static uint64_t varint_get(const unsigned char **p)
{
	uint64_t v = 0;

	for (unsigned shift = 0;; shift += 7) {
		unsigned char b = *(*p)++;

		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return v;
	}
}

/* Room for len more bytes in the build buffer: NULL on ENOMEM. */
static unsigned char *build_room(struct channel_entries *e, size_t len)
{
	if (e->build_cap - e->build_len < len) {
		size_t cap = e->build_cap ? e->build_cap : 256;
		unsigned char *p;

		while (cap - e->build_len < len) {
			if (cap > SIZE_MAX / 2)
				return NULL;
			cap *= 2;
		}
		p = realloc(e->build, cap);
		if (!p)
			return NULL;
		e->build = p;
		e->build_cap = cap;
	}
	return e->build + e->build_len;
}

int channel_entries_begin(struct channel_entries *e, unsigned long line)
{
	e->build_len = 0;
	e->nitems = 0;
	e->line = line;
	e->error[0] = '\0';
	return 0;
}

/* The catalog of bucket and prefix, made when new: its number, or -1 with
 * errno. */
static long catalog_find(struct channel_entries *e, const char *bucket,
			 const char *prefix)
{
	struct catalog_slot *slot;

	if (e->last < e->ncats &&
	    strcmp(cache_catalog_bucket(e->cats[e->last].cat), bucket) == 0 &&
	    strcmp(cache_catalog_prefix(e->cats[e->last].cat), prefix) == 0)
		return (long)e->last;
	for (size_t i = 0; i < e->ncats; i++) {
		if (strcmp(cache_catalog_bucket(e->cats[i].cat), bucket) == 0 &&
		    strcmp(cache_catalog_prefix(e->cats[i].cat), prefix) == 0) {
			e->last = i;
			return (long)i;
		}
	}
	if (e->ncats == CHANNEL_ENTRIES_BUCKETS_MAX) {
		errno = ENOSPC;
		return -1;
	}
	slot = realloc(e->cats, (e->ncats + 1) * sizeof(*slot));
	if (!slot) {
		errno = ENOMEM;
		return -1;
	}
	e->cats = slot;
	slot = &e->cats[e->ncats];
	memset(slot, 0, sizeof(*slot));
	slot->cat = cache_catalog_create(bucket, prefix);
	if (!slot->cat) {
		errno = ENOMEM;
		return -1;
	}
	e->last = e->ncats++;
	return (long)e->last;
}

/* A state byte for each of slot's first n entries. */
static int state_room(struct catalog_slot *slot, size_t n)
{
	size_t cap = slot->cap ? slot->cap : TABLE_FIRST;
	unsigned char *p;

	if (n <= slot->cap)
		return 0;
	while (cap < n)
		cap *= 2;
	p = realloc(slot->state, cap);
	if (!p)
		return ENOMEM;
	memset(p + slot->cap, 0, cap - slot->cap);
	slot->state = p;
	slot->cap = cap;
	return 0;
}

int channel_entries_add_object(struct channel_entries *e, const char *bucket,
			       const char *prefix, const char *key)
{
	long c = catalog_find(e, bucket, prefix);
	unsigned char *p;
	uint32_t entry;
	int rc;

	if (c < 0)
		return errno;
	rc = cache_catalog_add(e->cats[c].cat, key, NULL, 0, 0, &entry);
	if (!rc)
		rc = state_room(&e->cats[c], (size_t)entry + 1);
	if (!rc && !(p = build_room(e, 1 + 2 * VARINT_MAX)))
		rc = ENOMEM;
	if (rc)
		return rc;
	p[0] = ITEM_OBJECT;
	e->build_len += 1;
	e->build_len += varint_put(p + 1, (uint64_t)c);
	e->build_len += varint_put(e->build + e->build_len, entry);
	e->nitems++;
	return 0;
}

int channel_entries_add_text(struct channel_entries *e, const char *text,
			     size_t len)
{
	unsigned char *p = build_room(e, 1 + VARINT_MAX + len + 1);
	size_t n;

	if (!p)
		return ENOMEM;
	p[0] = ITEM_TEXT;
	n = 1 + varint_put(p + 1, len);
	if (len)
		memcpy(p + n, text, len);
	p[n + len] = '\0';
	e->build_len += n + len + 1;
	e->nitems++;
	return 0;
}

void channel_entries_fail(struct channel_entries *e, const char *fmt, ...)
{
	va_list ap;

	if (e->error[0])
		return;
	va_start(ap, fmt);
	util_vfail(e->error, sizeof(e->error), 0, fmt, ap);
	va_end(ap);
}

bool channel_entries_failed(const struct channel_entries *e)
{
	return e->error[0] != '\0';
}

/* Whether the entry built is the identity's next: catalog 0's entry
 * count, alone, on no line, without an error. */
static bool identity_next(const struct channel_entries *e)
{
	const unsigned char *p = e->build;

	if (e->records || e->nitems != 1 || e->line || e->error[0] ||
	    p[0] != ITEM_OBJECT || p[1] != 0)
		return false;
	p += 2;
	return varint_get(&p) == e->count;
}

static int record_write(struct channel_entries *e);

/* The records the identity stood for, written out before the entry being
 * built (which is kept aside meanwhile). */
static int identity_end(struct channel_entries *e)
{
	size_t count = e->count, build_len = e->build_len;
	unsigned nitems = e->nitems;
	unsigned long line = e->line;
	char error[ERROR_MAX];
	unsigned char *saved = malloc(build_len ? build_len : 1);
	int rc = saved ? 0 : ENOMEM;

	if (rc)
		return rc;
	if (build_len)
		memcpy(saved, e->build, build_len);
	memcpy(error, e->error, sizeof(error));
	e->error[0] = '\0';
	e->line = 0;
	e->nitems = 1;
	e->count = 0;
	e->records = true;
	for (size_t i = 0; i < count && !rc; i++) {
		unsigned char *p;

		e->build_len = 0;
		p = build_room(e, 2 + VARINT_MAX);
		if (!p) {
			rc = ENOMEM;
			break;
		}
		p[0] = ITEM_OBJECT;
		p[1] = 0; /* catalog 0 */
		e->build_len = 2 + varint_put(p + 2, i);
		rc = record_write(e);
	}
	/* (on failure the parse clears the entries: the count is what
	 * the records and the identity hold together) */
	e->build_len = 0;
	if (!rc && build_len && !build_room(e, build_len))
		rc = ENOMEM;
	if (!rc && build_len) {
		memcpy(e->build, saved, build_len);
		e->build_len = build_len;
	}
	memcpy(e->error, error, sizeof(error));
	e->nitems = nitems;
	e->line = line;
	free(saved);
	return rc;
}

int channel_entries_end(struct channel_entries *e)
{
	if (identity_next(e)) {
		e->count++;
		return 0;
	}
	if (!e->records) {
		int rc = identity_end(e);

		if (rc)
			return rc;
	}
	return record_write(e);
}

/* The entry built, as a record. */
static int record_write(struct channel_entries *e)
{
	unsigned char head[3 * VARINT_MAX];
	size_t errlen = strlen(e->error), n;
	unsigned char *rec;

	if (e->count == e->cap) {
		size_t cap = e->cap ? e->cap * 2 : TABLE_FIRST;
		const unsigned char **t;

		if (cap > SIZE_MAX / sizeof(*t))
			return ENOMEM;
		t = realloc(e->entry, cap * sizeof(*t));
		if (!t)
			return ENOMEM;
		e->entry = t;
		e->cap = cap;
	}
	n = varint_put(head, e->line);
	n += varint_put(head + n, (uint64_t)e->nitems << 1 | (errlen != 0));
	if (errlen)
		n += varint_put(head + n, errlen);
	rec = util_arena_take(&e->arena,
			      n + (errlen ? errlen + 1 : 0) + e->build_len);
	if (!rec)
		return ENOMEM;
	e->entry[e->count++] = rec;
	memcpy(rec, head, n);
	rec += n;
	if (errlen) {
		memcpy(rec, e->error, errlen + 1);
		rec += errlen + 1;
	}
	if (e->build_len)
		memcpy(rec, e->build, e->build_len);
	return 0;
}

/* ---- reading ---- */

void channel_entries_get(const struct channel_entries *e, size_t i,
			 struct channel_entry *out)
{
	const unsigned char *p;
	uint64_t v;

	if (!e->records) {
		out->line = 0;
		out->error = NULL;
		out->nitems = out->left = 1;
		out->next = NULL;
		out->identity = i;
		return;
	}
	p = e->entry[i];
	out->line = (unsigned long)varint_get(&p);
	v = varint_get(&p);
	out->nitems = (unsigned)(v >> 1);
	out->error = NULL;
	if (v & 1) {
		size_t len = (size_t)varint_get(&p);

		out->error = (const char *)p;
		p += len + 1;
	}
	out->next = p;
	out->left = out->nitems;
}

bool channel_entry_next(struct channel_entry *en, struct channel_item *it)
{
	const unsigned char *p = en->next;

	if (!en->left)
		return false;
	en->left--;
	if (!p) {
		it->object = true;
		it->ref = en->identity; /* catalog 0's */
		it->text = NULL;
		it->text_len = 0;
		return true;
	}
	it->object = *p++ == ITEM_OBJECT;
	it->text = NULL;
	it->text_len = 0;
	it->ref = 0;
	if (it->object) {
		uint64_t c = varint_get(&p);

		it->ref = c << 32 | varint_get(&p);
	} else {
		it->text_len = (size_t)varint_get(&p);
		it->text = (const char *)p;
		p += it->text_len + 1;
	}
	en->next = p;
	return true;
}

/* ---- objects ---- */

static const struct catalog_slot *slot_of(const struct channel_entries *e,
					  channel_ref ref)
{
	return &e->cats[ref >> 32];
}

static uint32_t entry_of(channel_ref ref)
{
	return (uint32_t)ref;
}

enum channel_object_state channel_entries_state(const struct channel_entries *e,
						channel_ref ref, int *error)
{
	unsigned char b = slot_of(e, ref)->state[entry_of(ref)];

	*error = 0;
	if (b < STATE_FAILED)
		return (enum channel_object_state)b;
	*error = b - STATE_FAILED;
	return CHANNEL_OBJECT_FAILED;
}

void channel_entries_set_state(struct channel_entries *e, channel_ref ref,
			       enum channel_object_state state, int error)
{
	unsigned char b = (unsigned char)state;

	if (state == CHANNEL_OBJECT_FAILED)
		b = (unsigned char)(STATE_FAILED +
				    (error > 0 && error <= ERRNO_KEPT ? error
								      : EIO));
	e->cats[ref >> 32].state[entry_of(ref)] = b;
}

int channel_entries_learn(struct channel_entries *e, channel_ref ref,
			  const struct cache_object *obj)
{
	int rc = cache_catalog_learn(
	    e->cats[ref >> 32].cat, entry_of(ref), cache_object_etag(obj),
	    cache_object_size(obj), cache_object_mtime(obj));

	if (rc)
		channel_entries_set_state(e, ref, CHANNEL_OBJECT_FAILED, rc);
	else
		channel_entries_set_state(e, ref, CHANNEL_OBJECT_KNOWN, 0);
	return rc;
}

const char *channel_entries_bucket(const struct channel_entries *e,
				   channel_ref ref)
{
	return cache_catalog_bucket(slot_of(e, ref)->cat);
}

void channel_entries_key(const struct channel_entries *e, channel_ref ref,
			 char *buf, size_t len)
{
	if (!cache_catalog_key(slot_of(e, ref)->cat, entry_of(ref), buf, len) &&
	    len)
		buf[0] = '\0';
}

const char *channel_entries_prefix(const struct channel_entries *e,
				   channel_ref ref)
{
	return cache_catalog_prefix(slot_of(e, ref)->cat);
}

uint64_t channel_entries_size(const struct channel_entries *e, channel_ref ref)
{
	return cache_catalog_size(slot_of(e, ref)->cat, entry_of(ref));
}

struct cache_object *channel_entries_object(struct cache *c,
					    const struct channel_entries *e,
					    channel_ref ref)
{
	return cache_catalog_object(c, slot_of(e, ref)->cat, entry_of(ref));
}
