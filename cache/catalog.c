/*
 * cache catalog: compact storage of listed objects (see catalog.h).
 *
 * Entries live in chunks of CHUNK_ENTRIES, as arrays per field (key
 * pointer, size, modified time, ETag bytes, ETag kind): 37 bytes an
 * entry.  Keys (the part after the prefix) and the ETags that are not
 * plain MD5s go into arenas, one after another, NUL-terminated.  Positions
 * in key order are chunks of 32-bit entry numbers, made only once the
 * order stops being the entries' own.
 *
 * Nothing written is ever moved: the tables of chunk pointers grow into
 * fresh copies, and the old copies are kept until the catalog goes, so a
 * reader that loaded a table pointer may go on using it.  Publishing:
 * the writer fills an entry (or a position) first and then stores the
 * count with release ordering; readers load the count with acquire
 * ordering and read below it.
 */
#include "config.h"

#include "cache/catalog.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <zlib.h>

#include "cache/internal.h"
#include "util/util.h"

#define CHUNK_SHIFT   10
#define CHUNK_ENTRIES (1u << CHUNK_SHIFT)
#define CHUNK_MASK    (CHUNK_ENTRIES - 1)
/* arenas grow from the first's size to the last's, doubling: a channel of
 * ten keys costs kilobytes, one of a million a few hundred arenas */
#define ARENA_FIRST (4u << 10)
#define ARENA_MAX   (1u << 20)
#define MD5_BYTES   16

enum etag_kind {
	ETAG_NONE = 0,
	ETAG_MD5,	 /* "<32 hex>" */
	ETAG_MD5_SUFFIX, /* "<32 hex><suffix>": the suffix after the key */
	ETAG_TEXT,	 /* anything else, whole, after the key */
};

struct entry_chunk {
	const char *name[CHUNK_ENTRIES]; /* into an arena */
	uint64_t size[CHUNK_ENTRIES];
	uint32_t mtime[CHUNK_ENTRIES]; /* seconds since the epoch, clamped */
	unsigned char md5[CHUNK_ENTRIES][MD5_BYTES];
	unsigned char kind[CHUNK_ENTRIES]; /* enum etag_kind */
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

struct arena {
	struct arena *next;
	size_t used;
	size_t size;
	char data[];
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
	struct arena *arena; /* the one being filled; older ones behind it */
	uint64_t memory;
};

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
	while (cat->arena) {
		struct arena *next = cat->arena->next;

		free(cat->arena);
		cat->arena = next;
	}
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

/* Room for len bytes in the arena (len <= ARENA_FIRST): NULL on ENOMEM. */
static char *arena_take(struct cache_catalog *cat, size_t len)
{
	struct arena *a = cat->arena;

	if (!a || a->size - a->used < len) {
		size_t size = a ? a->size * 2 : ARENA_FIRST;

		if (size > ARENA_MAX)
			size = ARENA_MAX;
		a = malloc(sizeof(*a) + size);
		if (!a)
			return NULL;
		a->used = 0;
		a->size = size;
		a->next = cat->arena;
		cat->arena = a;
		cat->memory += sizeof(*a) + size;
	}
	a->used += len;
	return a->data + a->used - len;
}

/* How etag is kept: its kind, the 16 bytes of an MD5 and the text that
 * goes beside the key (*extra, NULL when none). */
static enum etag_kind etag_split(const char *etag, unsigned char md5[MD5_BYTES],
				 const char **extra)
{
	size_t len;

	*extra = NULL;
	if (!etag)
		return ETAG_NONE;
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
			return ETAG_MD5;
		if (hex) {
			*extra = etag + 1 + 2 * MD5_BYTES;
			return ETAG_MD5_SUFFIX;
		}
	}
	*extra = etag;
	return ETAG_TEXT;
}

/* An ETag goes into an If-Match header: not too long, and no control
 * character (CR, LF) whatever listed it or whichever file it came from. */
static bool etag_valid(const char *etag)
{
	size_t n = 0;

	for (; etag[n]; n++)
		if ((unsigned char)etag[n] < 0x20 || etag[n] == 0x7f)
			return false;
	return n <= CACHE_ETAG_MAX;
}

/* A time as kept: seconds since the epoch within 32 bits (to 2106). */
static uint32_t mtime_clamp(int64_t mtime)
{
	if (mtime < 0)
		return 0;
	if (mtime > (int64_t)UINT32_MAX)
		return UINT32_MAX;
	return (uint32_t)mtime;
}

int cache_catalog_add(struct cache_catalog *cat, const char *key,
		      const char *etag, uint64_t size, int64_t mtime,
		      uint32_t *entry)
{
	size_t n = cat->nentries, name_len, extra_len = 0;
	unsigned char md5[MD5_BYTES] = {0};
	struct entry_chunk *chunk;
	const char *extra;
	enum etag_kind kind;
	char *name;

	if (strncmp(key, cat->prefix, cat->prefix_len) != 0 ||
	    strlen(key) > CACHE_KEY_MAX || size > CACHE_OBJECT_SIZE_MAX ||
	    (etag && !etag_valid(etag)))
		return EINVAL;
	if (n >= CACHE_CATALOG_MAX)
		return EOVERFLOW;
	key += cat->prefix_len;
	name_len = strlen(key) + 1;
	kind = etag_split(etag, md5, &extra);
	if (extra)
		extra_len = strlen(extra) + 1;
	chunk = chunk_for(cat, &cat->entries, n, sizeof(*chunk));
	name = chunk ? arena_take(cat, name_len + extra_len) : NULL;
	if (!name)
		return ENOMEM;
	memcpy(name, key, name_len);
	if (extra)
		memcpy(name + name_len, extra, extra_len);
	chunk->name[n & CHUNK_MASK] = name;
	chunk->size[n & CHUNK_MASK] = size;
	chunk->mtime[n & CHUNK_MASK] = mtime_clamp(mtime);
	memcpy(chunk->md5[n & CHUNK_MASK], md5, MD5_BYTES);
	chunk->kind[n & CHUNK_MASK] = (unsigned char)kind;
	*entry = (uint32_t)n;
	__atomic_store_n(&cat->nentries, n + 1, __ATOMIC_RELEASE);
	return 0;
}

size_t cache_catalog_entries(const struct cache_catalog *cat)
{
	return __atomic_load_n(&cat->nentries, __ATOMIC_ACQUIRE);
}

void cache_catalog_truncate(struct cache_catalog *cat, size_t count)
{
	struct arena *a = cat->arena;
	const char *name;

	if (count >= cat->nentries)
		return;
	/* give the arena back when the first entry dropped is in the one
	 * being filled (the usual case: one page) */
	name = cache_catalog_name(cat, (uint32_t)count);
	if (a && name >= a->data && name < a->data + a->used)
		a->used = (size_t)(name - a->data);
	__atomic_store_n(&cat->nentries, count, __ATOMIC_RELEASE);
}

void cache_catalog_clear(struct cache_catalog *cat)
{
	while (cat->arena) {
		struct arena *next = cat->arena->next;

		cat->memory -= sizeof(*cat->arena) + cat->arena->size;
		free(cat->arena);
		cat->arena = next;
	}
	__atomic_store_n(&cat->npositions, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&cat->nentries, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&cat->identity, true, __ATOMIC_RELEASE);
}

int cache_catalog_order(struct cache_catalog *cat, uint32_t first, size_t n)
{
	size_t at = cat->npositions;

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

uint32_t cache_catalog_at(const struct cache_catalog *cat, size_t pos)
{
	const struct position_chunk *pc;

	if (__atomic_load_n(&cat->identity, __ATOMIC_ACQUIRE))
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
	return entry_chunk(cat, entry)->size[entry & CHUNK_MASK];
}

int64_t cache_catalog_mtime(const struct cache_catalog *cat, uint32_t entry)
{
	return entry_chunk(cat, entry)->mtime[entry & CHUNK_MASK];
}

const char *cache_catalog_name(const struct cache_catalog *cat, uint32_t entry)
{
	return entry_chunk(cat, entry)->name[entry & CHUNK_MASK];
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
	const struct entry_chunk *ch = entry_chunk(cat, entry);
	unsigned i = entry & CHUNK_MASK;
	const char *extra = ch->name[i] + strlen(ch->name[i]) + 1;
	char out[CACHE_ETAG_MAX + 1];
	size_t n = 0;

	if (len)
		buf[0] = '\0';
	switch ((enum etag_kind)ch->kind[i]) {
	case ETAG_NONE:
		return false;
	case ETAG_TEXT:
		if (strlen(extra) + 1 > len)
			return false;
		memcpy(buf, extra, strlen(extra) + 1);
		return true;
	case ETAG_MD5:
		extra = "\"";
		break;
	case ETAG_MD5_SUFFIX:
		break;
	}
	out[n++] = '"';
	for (int b = 0; b < MD5_BYTES; b++) {
		out[n++] = digits[ch->md5[i][b] >> 4];
		out[n++] = digits[ch->md5[i][b] & 15];
	}
	if (n + strlen(extra) + 1 > len)
		return false;
	memcpy(buf, out, n);
	memcpy(buf + n, extra, strlen(extra) + 1);
	return true;
}

uint64_t cache_catalog_memory(const struct cache_catalog *cat)
{
	return cat->memory;
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

/* ---- the saved listing ---- */

/*
 * The file: a header (the magic "S3PLIST\n", a version, the time listed
 * in seconds since the epoch, the entry count, the bucket and the
 * prefix), then each entry in key order (its name after the prefix, its
 * size in 8 bytes, its last modified time in 4 (seconds since the epoch,
 * 0 when unknown), its ETag's kind and bytes), then a crc32 of all that.
 * Numbers are little-endian; a name or text is a 16-bit length and its
 * bytes.  Version 1 had no times: such a file is refused like any other
 * version, and the prefix is listed again.
 */
#define FILE_MAGIC   "S3PLIST\n"
#define FILE_VERSION 2u

static int put_bytes(FILE *f, uLong *crc, const void *p, size_t len)
{
	*crc = crc32_z(*crc, p, len);
	return fwrite(p, 1, len, f) == len ? 0 : EIO;
}

static int put_u64(FILE *f, uLong *crc, uint64_t v, unsigned bytes)
{
	unsigned char b[8];

	for (unsigned i = 0; i < bytes; i++)
		b[i] = (unsigned char)(v >> (8 * i));
	return put_bytes(f, crc, b, bytes);
}

static int put_text(FILE *f, uLong *crc, const char *s)
{
	size_t len = strlen(s);
	int rc = put_u64(f, crc, len, 2);

	return rc ? rc : put_bytes(f, crc, s, len);
}

static int write_entries(const struct cache_catalog *cat, FILE *f, uLong *crc)
{
	size_t count = cache_catalog_count(cat);
	int rc = 0;

	for (size_t pos = 0; pos < count && !rc; pos++) {
		uint32_t e = cache_catalog_at(cat, pos);
		const struct entry_chunk *ch = entry_chunk(cat, e);
		unsigned i = e & CHUNK_MASK;
		const char *extra = ch->name[i] + strlen(ch->name[i]) + 1;

		rc = put_text(f, crc, ch->name[i]);
		if (!rc)
			rc = put_u64(f, crc, ch->size[i], 8);
		if (!rc)
			rc = put_u64(f, crc, ch->mtime[i], 4);
		if (!rc)
			rc = put_u64(f, crc, ch->kind[i], 1);
		if (!rc &&
		    (ch->kind[i] == ETAG_MD5 || ch->kind[i] == ETAG_MD5_SUFFIX))
			rc = put_bytes(f, crc, ch->md5[i], MD5_BYTES);
		if (!rc && (ch->kind[i] == ETAG_MD5_SUFFIX ||
			    ch->kind[i] == ETAG_TEXT))
			rc = put_text(f, crc, extra);
	}
	return rc;
}

int cache_catalog_save(const struct cache_catalog *cat, const char *path,
		       int64_t listed_at)
{
	/* mode 0600: keys can say a lot about a dataset */
	struct util_replace out;
	uLong crc = crc32(0, NULL, 0);
	int dup_fd, rc = util_replace_begin(&out, path);
	FILE *f;

	if (rc)
		return rc;
	/* buffered writes of many small fields, through a copy of the fd
	 * (the replacement closes its own) */
	dup_fd = dup(out.fd);
	f = dup_fd >= 0 ? fdopen(dup_fd, "wb") : NULL;
	if (!f) {
		rc = errno ? errno : ENOMEM;
		if (dup_fd >= 0)
			close(dup_fd);
		util_replace_abort(&out);
		return rc;
	}
	rc = put_bytes(f, &crc, FILE_MAGIC, 8);
	if (!rc)
		rc = put_u64(f, &crc, FILE_VERSION, 4);
	if (!rc)
		rc = put_u64(f, &crc, (uint64_t)listed_at, 8);
	if (!rc)
		rc = put_u64(f, &crc, cache_catalog_count(cat), 8);
	if (!rc)
		rc = put_text(f, &crc, cat->bucket);
	if (!rc)
		rc = put_text(f, &crc, cat->prefix);
	if (!rc)
		rc = write_entries(cat, f, &crc);
	if (!rc)
		rc = put_u64(f, &crc, crc, 4);
	if (fclose(f) != 0 && !rc)
		rc = errno ? errno : EIO;
	if (rc) {
		util_replace_abort(&out);
		return rc;
	}
	return util_replace_commit(&out);
}

/* A reader of the file's bytes: every take checks what is left. */
struct file_reader {
	const unsigned char *p;
	size_t left;
};

static bool take(struct file_reader *r, void *out, size_t len)
{
	if (r->left < len)
		return false;
	if (out)
		memcpy(out, r->p, len);
	r->p += len;
	r->left -= len;
	return true;
}

static bool take_u64(struct file_reader *r, uint64_t *v, unsigned bytes)
{
	unsigned char b[8];

	if (!take(r, b, bytes))
		return false;
	*v = 0;
	for (unsigned i = bytes; i-- > 0;)
		*v = *v << 8 | b[i];
	return true;
}

/* A text into buf (len bytes, NUL added): false when it does not fit or
 * holds a NUL. */
static bool take_text(struct file_reader *r, char *buf, size_t len)
{
	uint64_t n;

	if (!take_u64(r, &n, 2) || n >= len || !take(r, buf, (size_t)n))
		return false;
	buf[n] = '\0';
	return strlen(buf) == n;
}

/* The entries of a checked file into cat. */
static int read_entries(struct cache_catalog *cat, struct file_reader *r,
			uint64_t count, const char **why)
{
	char key[CACHE_KEY_MAX + 1], text[CACHE_ETAG_MAX + 1];
	char etag[CACHE_ETAG_MAX + 1];
	static const char hex[] = "0123456789abcdef";
	size_t plen = cat->prefix_len;
	uint32_t entry;

	memcpy(key, cat->prefix, plen);
	for (uint64_t i = 0; i < count; i++) {
		uint64_t size, mtime, kind;
		unsigned char md5[MD5_BYTES];
		bool has_etag = true;
		int rc;

		if (!take_text(r, key + plen, sizeof(key) - plen) ||
		    !take_u64(r, &size, 8) || !take_u64(r, &mtime, 4) ||
		    !take_u64(r, &kind, 1))
			goto bad;
		switch (kind) {
		case ETAG_NONE:
			has_etag = false;
			break;
		case ETAG_MD5:
		case ETAG_MD5_SUFFIX:
			if (!take(r, md5, MD5_BYTES))
				goto bad;
			etag[0] = '"';
			for (int b = 0; b < MD5_BYTES; b++) {
				etag[1 + 2 * b] = hex[md5[b] >> 4];
				etag[2 + 2 * b] = hex[md5[b] & 15];
			}
			etag[1 + 2 * MD5_BYTES] = '\0';
			if (kind == ETAG_MD5) {
				memcpy(etag + 1 + 2 * MD5_BYTES, "\"", 2);
				break;
			}
			if (!take_text(r, text,
				       sizeof(etag) - 2 * MD5_BYTES - 1))
				goto bad;
			memcpy(etag + 1 + 2 * MD5_BYTES, text,
			       strlen(text) + 1);
			break;
		case ETAG_TEXT:
			if (!take_text(r, etag, sizeof(etag)))
				goto bad;
			break;
		default:
			goto bad;
		}
		rc = cache_catalog_add(cat, key, has_etag ? etag : NULL, size,
				       (int64_t)mtime, &entry);
		if (rc == ENOMEM)
			return ENOMEM;
		if (rc)
			goto bad;
	}
	if (r->left != 0)
		goto bad;
	return cache_catalog_order(cat, 0, (size_t)count);
bad:
	*why = "its entries do not read back";
	return EINVAL;
}

int cache_catalog_load(const char *path, const char *bucket, const char *prefix,
		       int64_t now, uint64_t max_age,
		       struct cache_catalog **out, int64_t *listed_at,
		       const char **why)
{
	char name[CACHE_KEY_MAX + 1];
	struct cache_catalog *cat = NULL;
	struct file_reader r;
	uint64_t version, when, count, crc;
	unsigned char *map = NULL;
	struct stat st;
	size_t size = 0;
	int fd, rc = EINVAL;

	*out = NULL;
	*why = "";
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		*why = "it cannot be opened";
		return errno == ENOENT ? ENOENT : EINVAL;
	}
	if (fstat(fd, &st) != 0 || st.st_size < 8 + 4 + 8 + 8 + 4 + 4 ||
	    (uint64_t)st.st_size > SIZE_MAX) {
		*why = "it is too short";
		goto out;
	}
	/* read, not mapped: a file cut short under a map is a SIGBUS */
	size = (size_t)st.st_size;
	map = malloc(size);
	if (!map) {
		rc = ENOMEM;
		goto out;
	}
	for (size_t got = 0; got < size;) {
		ssize_t n = read(fd, map + got, size - got);

		if (n <= 0) {
			*why = "it cannot be read whole";
			goto out;
		}
		got += (size_t)n;
	}
	r.p = map;
	r.left = size - 4;
	if (!take_u64(&(struct file_reader){map + r.left, 4}, &crc, 4) ||
	    crc != crc32_z(crc32(0, NULL, 0), map, r.left)) {
		*why = "its checksum does not match (a corrupt or truncated "
		       "file)";
		goto out;
	}
	if (!take(&r, name, 8) || memcmp(name, FILE_MAGIC, 8) != 0 ||
	    !take_u64(&r, &version, 4) || version != FILE_VERSION) {
		*why = "it is not a listing of this version";
		goto out;
	}
	if (!take_u64(&r, &when, 8) || !take_u64(&r, &count, 8) ||
	    !take_text(&r, name, sizeof(name)) || strcmp(name, bucket) != 0 ||
	    !take_text(&r, name, sizeof(name)) || strcmp(name, prefix) != 0 ||
	    count > CACHE_CATALOG_MAX) {
		*why = "it is a listing of another bucket or prefix";
		goto out;
	}
	*listed_at = (int64_t)when;
	/* (in unsigned arithmetic: the file's time may be anything) */
	if (now < 0 || when > (uint64_t)now || (uint64_t)now - when > max_age) {
		rc = ESTALE;
		goto out;
	}
	cat = cache_catalog_create(bucket, prefix);
	if (!cat) {
		rc = ENOMEM;
		goto out;
	}
	rc = read_entries(cat, &r, count, why);
	if (!rc) {
		*out = cat;
		cat = NULL;
	}
out:
	cache_catalog_destroy(cat);
	free(map);
	close(fd);
	return rc;
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
