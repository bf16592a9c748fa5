/*
 * cache catalog: compact storage of listed objects (see catalog.h).
 *
 * Entries live in chunks of CHUNK_ENTRIES, as arrays per field (key
 * pointer, size, modified time, ETag bytes, ETag kind): 37 bytes an
 * entry.  Keys (the part after the prefix) and the ETags that are not
 * plain MD5s go into an arena (util/arena.h), one after another,
 * NUL-terminated.  Positions
 * in key order are chunks of 32-bit entry numbers, made only once the
 * order stops being the entries' own.
 *
 * Nothing written is ever moved: the tables of chunk pointers grow into
 * fresh copies, and the old copies are kept until the catalog goes, so a
 * reader that loaded a table pointer may go on using it.  Publishing:
 * the writer fills an entry (or a position) first and then stores the
 * count with release ordering; readers load the count with acquire
 * ordering and read below it.  Saving and loading a catalog (the listing
 * file's format) are cache/listing_file.c's.
 *
 * A catalog may instead be an image mapped in place (catalog_image.c),
 * read only: its fields are read from the image's arrays, with the entry
 * numbers and positions of the catalog it was written from.  The worker
 * that listed a catalog takes its own image over once it is written
 * (cache_catalog_adopt_image): every field is read from the mapping from
 * then on (the image is published last, with release ordering; each read
 * loads it with acquire ordering), and the heap's chunks and names go
 * when the caller knows that no reader still holds them
 * (cache_catalog_drop_heap): the memory a worker's exit gives back to the
 * kernel is then the same at a million keys as at a thousand.
 */
#include "config.h"

#include "cache/catalog.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "cache/internal.h"
#include "util/arena.h"
#include "util/util.h"

#define CHUNK_SHIFT   10
#define CHUNK_ENTRIES (1u << CHUNK_SHIFT)
#define CHUNK_MASK    (CHUNK_ENTRIES - 1)
/* the arena's blocks grow from the first's size to the last's, doubling: a
 * channel of ten keys costs kilobytes, one of a million a few hundred
 * blocks */
#define ARENA_FIRST (4u << 10)
#define ARENA_MAX   (1u << 20)
#define MD5_BYTES   CACHE_ETAG_MD5_BYTES

struct entry_chunk {
	const char *name[CHUNK_ENTRIES]; /* into an arena */
	uint64_t size[CHUNK_ENTRIES];
	uint32_t mtime[CHUNK_ENTRIES]; /* seconds since the epoch, clamped */
	unsigned char md5[CHUNK_ENTRIES][MD5_BYTES];
	unsigned char kind[CHUNK_ENTRIES]; /* enum cache_etag_kind */
};

struct position_chunk {
	uint32_t entry[CHUNK_ENTRIES];
};

/* A table of chunk pointers; replaced tables stay on a list until the end,
 * for readers that still hold them. */
struct chunk_table {
	void **slot;
	size_t cap;
	struct chunk_table *retired;
};

struct cache_catalog {
	char *bucket;
	char *prefix;
	size_t prefix_len;
	struct chunk_table *entries;   /* of struct entry_chunk */
	struct chunk_table *positions; /* of struct position_chunk */
	size_t nentries;	       /* published (atomic) */
	size_t npositions;	       /* published (atomic) */
	bool identity; /* position p is entry p (atomic; once false, stays) */
	struct util_arena names; /* the keys, and ETag text beside them */
	uint64_t memory;
	struct catalog_image image; /* mapped: image.base is set (atomic) */
	bool heap_dropped;	    /* chunks and names gone: image only */
};

/* The mapped image, or NULL while the catalog is its heap's. */
static const struct catalog_image *image_of(const struct cache_catalog *cat)
{
	return __atomic_load_n(&cat->image.base, __ATOMIC_ACQUIRE) ? &cat->image
								   : NULL;
}

struct cache_catalog *cache_catalog_create(const char *bucket,
					   const char *prefix)
{
	struct cache_catalog *cat = calloc(1, sizeof(*cat));

	if (!cat)
		goto nomem;
	cat->bucket = strdup(bucket);
	cat->prefix = strdup(prefix ? prefix : "");
	if (!cat->bucket || !cat->prefix)
		goto nomem;
	cat->prefix_len = strlen(cat->prefix);
	cat->identity = true;
	cat->memory = sizeof(*cat);
	util_arena_init(&cat->names, ARENA_FIRST, ARENA_MAX);
	return cat;

nomem:
	cache_catalog_destroy(cat);
	errno = ENOMEM;
	return NULL;
}

static void table_free(struct chunk_table *t, bool chunks)
{
	while (t) {
		struct chunk_table *older = t->retired;

		for (size_t i = 0; chunks && i < t->cap; i++)
			free(t->slot[i]);
		free(t->slot);
		free(t);
		t = older;
		chunks = false; /* retired tables share the chunks */
	}
}

void cache_catalog_destroy(struct cache_catalog *cat)
{
	if (!cat)
		return;
	table_free(cat->entries, true);
	table_free(cat->positions, true);
	util_arena_free(&cat->names);
	catalog_image_unmap(&cat->image);
	free(cat->bucket);
	free(cat->prefix);
	free(cat);
}

const char *cache_catalog_bucket(const struct cache_catalog *cat)
{
	return cat->bucket;
}

const char *cache_catalog_prefix(const struct cache_catalog *cat)
{
	return cat->prefix;
}

/* The chunk holding item index of table *tp, made (with a table large
 * enough) when missing: NULL on ENOMEM.  Writer only. */
static void *chunk_for(struct cache_catalog *cat, struct chunk_table **tp,
		       size_t index, size_t chunk_bytes)
{
	struct chunk_table *t = *tp;
	size_t c = index >> CHUNK_SHIFT;

	if (!t || c >= t->cap) {
		size_t cap = t ? t->cap * 2 : 16;
		struct chunk_table *fresh = calloc(1, sizeof(*fresh));

		while (cap <= c)
			cap *= 2;
		if (fresh)
			fresh->slot = calloc(cap, sizeof(*fresh->slot));
		if (!fresh || !fresh->slot) {
			free(fresh);
			return NULL;
		}
		if (t)
			memcpy(fresh->slot, t->slot, t->cap * sizeof(*t->slot));
		fresh->cap = cap;
		fresh->retired = t;
		cat->memory += cap * sizeof(*fresh->slot);
		__atomic_store_n(tp, fresh, __ATOMIC_RELEASE);
		t = fresh;
	}
	if (!t->slot[c]) {
		void *chunk = malloc(chunk_bytes);

		if (!chunk)
			return NULL;
		cat->memory += chunk_bytes;
		__atomic_store_n(&t->slot[c], chunk, __ATOMIC_RELEASE);
	}
	return t->slot[c];
}

static void *chunk_at(struct chunk_table *const *tp, size_t index)
{
	struct chunk_table *t = __atomic_load_n(tp, __ATOMIC_ACQUIRE);

	return __atomic_load_n(&t->slot[index >> CHUNK_SHIFT],
			       __ATOMIC_ACQUIRE);
}

enum cache_etag_kind cache_etag_split(const char *etag,
				      unsigned char md5[MD5_BYTES],
				      const char **extra)
{
	size_t len;

	*extra = NULL;
	if (!etag)
		return CACHE_ETAG_NONE;
	len = strlen(etag);
	if (len >= 2 * MD5_BYTES + 2 && etag[0] == '"' &&
	    etag[len - 1] == '"') {
		bool hex = true;

		for (int i = 0; i < MD5_BYTES && hex; i++) {
			int hi = util_hex_digit(etag[1 + 2 * i]);
			int lo = util_hex_digit(etag[2 + 2 * i]);

			hex = hi >= 0 && lo >= 0;
			if (hex)
				md5[i] = (unsigned char)(hi << 4 | lo);
		}
		if (hex && len == 2 * MD5_BYTES + 2)
			return CACHE_ETAG_MD5;
		if (hex) {
			*extra = etag + 1 + 2 * MD5_BYTES;
			return CACHE_ETAG_MD5_SUFFIX;
		}
	}
	*extra = etag;
	return CACHE_ETAG_TEXT;
}

bool cache_etag_valid(const char *etag)
{
	size_t n = 0;

	for (; etag[n]; n++)
		if ((unsigned char)etag[n] < 0x20 || etag[n] == 0x7f)
			return false;
	return n <= CACHE_ETAG_MAX;
}

uint32_t cache_mtime_clamp(int64_t mtime)
{
	if (mtime < 0)
		return 0;
	if (mtime > (int64_t)UINT32_MAX)
		return UINT32_MAX;
	return (uint32_t)mtime;
}

/* Writes entry index of chunk: name (the key past the prefix; copied
 * into the arena with the ETag's text beside it), size, mtime and etag,
 * which the caller has checked.  0 or ENOMEM. */
static int entry_write(struct cache_catalog *cat, struct entry_chunk *chunk,
		       size_t index, const char *name, const char *etag,
		       uint64_t size, int64_t mtime)
{
	size_t name_len = strlen(name) + 1, extra_len = 0;
	unsigned char md5[MD5_BYTES] = {0};
	enum cache_etag_kind kind;
	const char *extra;
	char *copy;

	kind = cache_etag_split(etag, md5, &extra);
	if (extra)
		extra_len = strlen(extra) + 1;
	copy = util_arena_take(&cat->names, name_len + extra_len);
	if (!copy)
		return ENOMEM;
	memcpy(copy, name, name_len);
	if (extra)
		memcpy(copy + name_len, extra, extra_len);
	chunk->name[index & CHUNK_MASK] = copy;
	chunk->size[index & CHUNK_MASK] = size;
	chunk->mtime[index & CHUNK_MASK] = cache_mtime_clamp(mtime);
	memcpy(chunk->md5[index & CHUNK_MASK], md5, MD5_BYTES);
	chunk->kind[index & CHUNK_MASK] = (unsigned char)kind;
	return 0;
}

static bool entry_fields_valid(uint64_t size, const char *etag)
{
	return size <= CACHE_OBJECT_SIZE_MAX &&
	       (!etag || cache_etag_valid(etag));
}

int cache_catalog_add(struct cache_catalog *cat, const char *key,
		      const char *etag, uint64_t size, int64_t mtime,
		      uint32_t *entry)
{
	size_t n = cat->nentries;
	struct entry_chunk *chunk;

	if (image_of(cat))
		return EROFS;
	if (strncmp(key, cat->prefix, cat->prefix_len) != 0 ||
	    strlen(key) > CACHE_KEY_MAX || !entry_fields_valid(size, etag))
		return EINVAL;
	if (n >= CACHE_CATALOG_MAX)
		return EOVERFLOW;
	chunk = chunk_for(cat, &cat->entries, n, sizeof(*chunk));
	if (!chunk || entry_write(cat, chunk, n, key + cat->prefix_len, etag,
				  size, mtime))
		return ENOMEM;
	*entry = (uint32_t)n;
	__atomic_store_n(&cat->nentries, n + 1, __ATOMIC_RELEASE);
	return 0;
}

int cache_catalog_learn(struct cache_catalog *cat, uint32_t entry,
			const char *etag, uint64_t size, int64_t mtime)
{
	struct entry_chunk *chunk;
	unsigned i = entry & CHUNK_MASK;
	const char *name;
	unsigned char md5[MD5_BYTES] = {0};
	enum cache_etag_kind was, kind;
	const char *extra;

	if (image_of(cat))
		return EROFS;
	if (!entry_fields_valid(size, etag))
		return EINVAL;
	chunk = chunk_at(&cat->entries, entry);
	name = chunk->name[i];
	was = chunk->kind[i];
	kind = cache_etag_split(etag, md5, &extra);
	/* the name stays where it is while no text goes beside it (text
	 * already beside it is not rewritten in place either) */
	if (!extra && was != CACHE_ETAG_TEXT && was != CACHE_ETAG_MD5_SUFFIX) {
		chunk->size[i] = size;
		chunk->mtime[i] = cache_mtime_clamp(mtime);
		memcpy(chunk->md5[i], md5, MD5_BYTES);
		chunk->kind[i] = (unsigned char)kind;
		return 0;
	}
	return entry_write(cat, chunk, entry, name, etag, size, mtime);
}

size_t cache_catalog_entries(const struct cache_catalog *cat)
{
	return __atomic_load_n(&cat->nentries, __ATOMIC_ACQUIRE);
}

void cache_catalog_truncate(struct cache_catalog *cat, size_t count)
{
	if (count >= cat->nentries || image_of(cat))
		return;
	/* give the names back when the first entry dropped is in the arena's
	 * block being filled (the usual case: one page) */
	util_arena_rewind(&cat->names,
			  cache_catalog_name(cat, (uint32_t)count));
	__atomic_store_n(&cat->nentries, count, __ATOMIC_RELEASE);
}

void cache_catalog_clear(struct cache_catalog *cat)
{
	if (image_of(cat))
		return;
	util_arena_free(&cat->names);
	__atomic_store_n(&cat->npositions, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&cat->nentries, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&cat->identity, true, __ATOMIC_RELEASE);
}

int cache_catalog_order(struct cache_catalog *cat, uint32_t first, size_t n)
{
	size_t at = cat->npositions;

	if (image_of(cat))
		return EROFS;
	if (n == 0)
		return 0;
	if (cat->identity && first == at) {
		__atomic_store_n(&cat->npositions, at + n, __ATOMIC_RELEASE);
		return 0;
	}
	if (cat->identity) {
		/* the order stops being the entries': write out the
		 * positions so far, then say so */
		for (size_t p = 0; p < at; p++) {
			struct position_chunk *pc =
			    chunk_for(cat, &cat->positions, p, sizeof(*pc));

			if (!pc)
				return ENOMEM;
			pc->entry[p & CHUNK_MASK] = (uint32_t)p;
		}
		__atomic_store_n(&cat->identity, false, __ATOMIC_RELEASE);
	}
	for (size_t i = 0; i < n; i++) {
		struct position_chunk *pc =
		    chunk_for(cat, &cat->positions, at + i, sizeof(*pc));

		if (!pc)
			return ENOMEM;
		pc->entry[(at + i) & CHUNK_MASK] = first + (uint32_t)i;
	}
	__atomic_store_n(&cat->npositions, at + n, __ATOMIC_RELEASE);
	return 0;
}

size_t cache_catalog_count(const struct cache_catalog *cat)
{
	return __atomic_load_n(&cat->npositions, __ATOMIC_ACQUIRE);
}

bool catalog_positions_identity(const struct cache_catalog *cat)
{
	const struct catalog_image *im = image_of(cat);

	return im ? !im->pos
		  : __atomic_load_n(&cat->identity, __ATOMIC_ACQUIRE);
}

uint32_t cache_catalog_at(const struct cache_catalog *cat, size_t pos)
{
	const struct catalog_image *im = image_of(cat);
	const struct position_chunk *pc;

	if (im && im->pos) /* (an entry past the image's: entry 0) */
		return im->pos[pos] < im->count ? im->pos[pos] : 0;
	if (im || __atomic_load_n(&cat->identity, __ATOMIC_ACQUIRE))
		return (uint32_t)pos;
	pc = chunk_at(&cat->positions, pos);
	return pc->entry[pos & CHUNK_MASK];
}

static const struct entry_chunk *entry_chunk(const struct cache_catalog *cat,
					     uint32_t entry)
{
	return chunk_at(&cat->entries, entry);
}

uint64_t cache_catalog_size(const struct cache_catalog *cat, uint32_t entry)
{
	const struct catalog_image *im = image_of(cat);

	if (im)
		return im->size[entry];
	return entry_chunk(cat, entry)->size[entry & CHUNK_MASK];
}

int64_t cache_catalog_mtime(const struct cache_catalog *cat, uint32_t entry)
{
	const struct catalog_image *im = image_of(cat);

	if (im)
		return im->mtime[entry];
	return entry_chunk(cat, entry)->mtime[entry & CHUNK_MASK];
}

/* An image's name: one whose offset is out of the text (an image changed
 * under its reader) reads as the empty name before the two closing NULs,
 * so that neither it nor the ETag text after it leaves the mapping. */
static const char *image_name(const struct catalog_image *im, uint32_t entry)
{
	uint64_t off = im->name[entry];

	return im->text + (off < im->text_bytes - 2 ? off : im->text_bytes - 2);
}

const char *cache_catalog_name(const struct cache_catalog *cat, uint32_t entry)
{
	const struct catalog_image *im = image_of(cat);

	if (im)
		return image_name(im, entry);
	return entry_chunk(cat, entry)->name[entry & CHUNK_MASK];
}

void catalog_entry_raw(const struct cache_catalog *cat, uint32_t entry,
		       struct catalog_raw *raw)
{
	const struct catalog_image *im = image_of(cat);
	const struct entry_chunk *ch;
	unsigned kind;

	if (im) {
		raw->name = image_name(im, entry);
		raw->md5 = im->md5 + (size_t)entry * MD5_BYTES;
		kind = im->kind[entry];
	} else {
		ch = entry_chunk(cat, entry);
		raw->name = ch->name[entry & CHUNK_MASK];
		raw->md5 = ch->md5[entry & CHUNK_MASK];
		kind = ch->kind[entry & CHUNK_MASK];
	}
	raw->kind = kind <= CACHE_ETAG_TEXT ? (enum cache_etag_kind)kind
					    : CACHE_ETAG_NONE;
}

size_t cache_catalog_key(const struct cache_catalog *cat, uint32_t entry,
			 char *buf, size_t len)
{
	const char *name = cache_catalog_name(cat, entry);
	size_t name_len = strlen(name);

	if (cat->prefix_len + name_len + 1 > len)
		return 0;
	memcpy(buf, cat->prefix, cat->prefix_len);
	memcpy(buf + cat->prefix_len, name, name_len + 1);
	return cat->prefix_len + name_len;
}

bool cache_catalog_etag(const struct cache_catalog *cat, uint32_t entry,
			char *buf, size_t len)
{
	static const char digits[] = "0123456789abcdef";
	struct catalog_raw raw;
	const char *extra;
	char out[CACHE_ETAG_MAX + 1];
	size_t n = 0;

	catalog_entry_raw(cat, entry, &raw);
	extra = raw.name + strlen(raw.name) + 1;
	if (len)
		buf[0] = '\0';
	switch (raw.kind) {
	case CACHE_ETAG_NONE:
		return false;
	case CACHE_ETAG_TEXT:
		if (strlen(extra) + 1 > len)
			return false;
		memcpy(buf, extra, strlen(extra) + 1);
		return true;
	case CACHE_ETAG_MD5:
		extra = "\"";
		break;
	case CACHE_ETAG_MD5_SUFFIX:
		break;
	}
	out[n++] = '"';
	for (int b = 0; b < MD5_BYTES; b++) {
		out[n++] = digits[raw.md5[b] >> 4];
		out[n++] = digits[raw.md5[b] & 15];
	}
	if (n + strlen(extra) + 1 > len)
		return false;
	memcpy(buf, out, n);
	memcpy(buf + n, extra, strlen(extra) + 1);
	return true;
}

uint64_t cache_catalog_memory(const struct cache_catalog *cat)
{
	return cat->memory + cat->names.bytes + cat->image.bytes;
}

int cache_catalog_image_map(int fd, const char *bucket, const char *prefix,
			    struct cache_catalog **out, int64_t *listed_at,
			    const char **why)
{
	struct cache_catalog *cat;
	int rc;

	*out = NULL;
	*why = "";
	cat = cache_catalog_create(bucket, prefix);
	if (!cat)
		return ENOMEM;
	rc = catalog_image_map(fd, bucket, prefix, &cat->image, why);
	if (rc) {
		cache_catalog_destroy(cat);
		return rc;
	}
	cat->nentries = cat->image.count;
	cat->npositions = cat->image.npos;
	*listed_at = cat->image.listed_at;
	*out = cat;
	return 0;
}

int cache_catalog_adopt_image(struct cache_catalog *cat, int fd,
			      const char **why)
{
	struct catalog_image im;
	int rc;

	*why = "";
	if (image_of(cat)) {
		*why = "the catalog is an image already";
		return EINVAL;
	}
	rc = catalog_image_map(fd, cat->bucket, cat->prefix, &im, why);
	if (rc)
		return rc;
	/* the image of these entries and positions (nothing is added once
	 * a catalog is listed: the caller's word) */
	if (im.count != cat->nentries || im.npos != cat->npositions ||
	    (!im.pos) != cat->identity ||
	    (im.count &&
	     (im.size[im.count - 1] !=
		  cache_catalog_size(cat, (uint32_t)im.count - 1) ||
	      strcmp(image_name(&im, (uint32_t)im.count - 1),
		     cache_catalog_name(cat, (uint32_t)im.count - 1)) != 0))) {
		*why = "an image of other entries";
		catalog_image_unmap(&im);
		return EINVAL;
	}
	/* every field first, the base last: a reader that sees it reads
	 * the rest */
	memcpy((char *)&cat->image + offsetof(struct catalog_image, bytes),
	       (const char *)&im + offsetof(struct catalog_image, bytes),
	       sizeof(im) - offsetof(struct catalog_image, bytes));
	__atomic_store_n(&cat->image.base, im.base, __ATOMIC_RELEASE);
	return 0;
}

uint64_t cache_catalog_drop_heap(struct cache_catalog *cat)
{
	uint64_t bytes;

	if (!image_of(cat) || cat->heap_dropped)
		return 0;
	bytes = cat->memory - sizeof(*cat) + cat->names.bytes;
	table_free(cat->entries, true);
	table_free(cat->positions, true);
	cat->entries = cat->positions = NULL;
	util_arena_free(&cat->names);
	cat->memory = sizeof(*cat);
	cat->heap_dropped = true;
	return bytes;
}

struct cache_object *cache_catalog_object(struct cache *c,
					  const struct cache_catalog *cat,
					  uint32_t entry)
{
	char key[CACHE_KEY_MAX + 1];
	char etag[CACHE_ETAG_MAX + 1];
	bool has_etag = cache_catalog_etag(cat, entry, etag, sizeof(etag));

	if (!cache_catalog_key(cat, entry, key, sizeof(key)))
		return NULL;
	return cache_object_get(c, cat->bucket, key, has_etag ? etag : NULL,
				cache_catalog_size(cat, entry));
}

void cache_catalog_file_name(const char *bucket, const char *prefix,
			     char out[48])
{
	static const char hex[] = "0123456789abcdef";
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned mdlen = 0;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();

	memset(md, 0, sizeof(md));
	/* bucket names hold no NUL: it separates them from the prefix */
	if (ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) &&
	    EVP_DigestUpdate(ctx, bucket, strlen(bucket) + 1) &&
	    EVP_DigestUpdate(ctx, prefix, strlen(prefix)))
		EVP_DigestFinal_ex(ctx, md, &mdlen);
	EVP_MD_CTX_free(ctx);
	for (int i = 0; i < 16; i++) {
		out[2 * i] = hex[md[i] >> 4];
		out[2 * i + 1] = hex[md[i] & 15];
	}
	memcpy(out + 32, ".listing", 9);
}
