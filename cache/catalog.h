/*
 * cache catalog: the objects a listing found, held once and compactly.
 *
 * A catalog holds the objects of one bucket under one prefix: for each its
 * key without the prefix (in arenas of their own), its size, its last
 * modified time (32-bit seconds since the epoch: up to 2106) and its ETag,
 * as 16 bytes when it is an MD5 in hex (S3's "<32 hex>" and, for multipart
 * uploads, "<32 hex>-N", whose "-N" goes beside the key), else as text
 * beside the key.  That is about 37 bytes an object plus its key: a
 * million keys are a normal dataset, and every epoch's plan refers to
 * entries by number instead of copying them.
 *
 * Entries are numbered in the order they were added (a parallel listing
 * adds pages of several key ranges as they arrive); their order by key is
 * kept apart, as positions, appended by whoever knows it (the lister,
 * range after range).  While entries are added in key order the positions
 * are the entry numbers themselves and take no memory.
 *
 * Threads: one thread adds (the store's, through the lister) while others
 * read the entries already published (positions below
 * cache_catalog_count()): storage never moves once written, and the
 * count is published with release/acquire ordering.  Adding and
 * truncating are for one thread at a time.
 */
#ifndef S3PIPE_CACHE_CATALOG_H
#define S3PIPE_CACHE_CATALOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* S3's longest key, in bytes (UTF-8): a listing naming a longer one is
 * hostile */
#define CACHE_KEY_MAX 1024
/* the longest ETag kept; longer ones are refused as hostile */
#define CACHE_ETAG_MAX 256
/* entries of one catalog, at most (entry numbers are 32 bits) */
#define CACHE_CATALOG_MAX 0xFFFFFFFEu

struct cache_catalog;
struct cache;
struct cache_object;

/* An empty catalog of bucket/prefix (strings copied).  NULL and errno. */
struct cache_catalog *cache_catalog_create(const char *bucket,
					   const char *prefix);
void cache_catalog_destroy(struct cache_catalog *cat); /* NULL is fine */
const char *cache_catalog_bucket(const struct cache_catalog *cat);
const char *cache_catalog_prefix(const struct cache_catalog *cat);

/*
 * Adds an object whose key starts with the catalog's prefix; etag as
 * listed (with quotes), may be NULL; mtime in seconds since the epoch (0:
 * unknown), kept clamped to [0, UINT32_MAX].  *entry gets its number.
 * 0; EINVAL for a key outside the prefix or longer than CACHE_KEY_MAX, an
 * ETag longer than CACHE_ETAG_MAX or holding a control character, or a
 * size past S3's largest object (a hostile listing); EOVERFLOW past
 * CACHE_CATALOG_MAX entries; ENOMEM.
 */
int cache_catalog_add(struct cache_catalog *cat, const char *key,
		      const char *etag, uint64_t size, int64_t mtime,
		      uint32_t *entry);
/*
 * What a HEAD told of entry (added with no ETag and size 0, as a manifest
 * names keys but not sizes): its ETag (may be NULL), size and mtime, as
 * cache_catalog_add() takes them.  Unlike adding, this changes an entry
 * that readers may see: the caller and the readers of that entry share a
 * lock.  0; EINVAL (a hostile ETag or size); ENOMEM.
 */
int cache_catalog_learn(struct cache_catalog *cat, uint32_t entry,
			const char *etag, uint64_t size, int64_t mtime);
/* Entries added so far. */
size_t cache_catalog_entries(const struct cache_catalog *cat);
/* Forgets the entries from number count on (a page that could not be
 * taken whole); they must not have positions yet. */
void cache_catalog_truncate(struct cache_catalog *cat, size_t count);

/* Forgets every entry and position (a listing started again); nobody may
 * be reading the catalog. */
void cache_catalog_clear(struct cache_catalog *cat);

/*
 * Gives entries [first, first + n) the next positions in key order.  0 or
 * ENOMEM.
 */
int cache_catalog_order(struct cache_catalog *cat, uint32_t first, size_t n);
/* Entries with a position: the catalog's length in key order. */
size_t cache_catalog_count(const struct cache_catalog *cat);
/* The entry at position pos (< cache_catalog_count()). */
uint32_t cache_catalog_at(const struct cache_catalog *cat, size_t pos);

uint64_t cache_catalog_size(const struct cache_catalog *cat, uint32_t entry);
/* The last modified time as added (clamped to [0, UINT32_MAX]): seconds
 * since the epoch, 0 when unknown. */
int64_t cache_catalog_mtime(const struct cache_catalog *cat, uint32_t entry);
/* The key without the prefix (valid while the catalog lives, and until
 * cache_catalog_drop_heap() for one that adopted its image). */
const char *cache_catalog_name(const struct cache_catalog *cat, uint32_t entry);
/* The whole key into buf (CACHE_KEY_MAX + 1 bytes suffice): its length,
 * or 0 when it does not fit. */
size_t cache_catalog_key(const struct cache_catalog *cat, uint32_t entry,
			 char *buf, size_t len);
/* The ETag as listed into buf (CACHE_ETAG_MAX + 1 bytes suffice): false
 * when the entry has none (buf is then ""). */
bool cache_catalog_etag(const struct cache_catalog *cat, uint32_t entry,
			char *buf, size_t len);

/*
 * Saving a listing for the next mount (cache/listing_file.c, which also
 * writes and reads one a page at a time): the catalog in key order, with its
 * bucket, prefix and the time it was listed, in one file with a crc32 at
 * its end, written to a temporary file in the same directory and renamed
 * over path.  0, or an errno (the file is then not there).
 */
int cache_catalog_save(const struct cache_catalog *cat, const char *path,
		       int64_t listed_at);
/*
 * The catalog as an image over fd (a memfd a keeper holds; catalog_image.c):
 * flat arrays in key order that the next worker maps in place
 * (cache_catalog_image_map).  0, or an errno (fd then holds no image).
 */
int cache_catalog_image_save_fd(const struct cache_catalog *cat, int fd,
				int64_t listed_at);
/*
 * A catalog of bucket/prefix read in place from the image in fd, mapped
 * (nothing decoded or copied a key; the mapping goes with the catalog,
 * which cannot be added to): 0 and *out with *listed_at, or EINVAL with
 * *why (not an image, unfinished, of another version, bucket or prefix),
 * or an errno.
 */
int cache_catalog_image_map(int fd, const char *bucket, const char *prefix,
			    struct cache_catalog **out, int64_t *listed_at,
			    const char **why);
/*
 * The worker that listed cat reads it from now on from its image in fd
 * (cache_catalog_image_save_fd of cat, once nothing is added to it): the
 * same entry numbers and positions, read from a mapping that the next
 * worker maps too, so that its heap can go.  Readers may be reading cat
 * meanwhile: each read takes the image or the heap whole.  0; EINVAL with
 * *why (not an image of cat's entries, or cat is an image already); an
 * errno.
 */
int cache_catalog_adopt_image(struct cache_catalog *cat, int fd,
			      const char **why);
/*
 * Frees the heap (entries and names) of a catalog that adopted its image:
 * the bytes freed (0 when it was not an image, or already dropped).  The
 * caller knows that no reader still holds anything of the heap: none that
 * loaded an entry's name (cache_catalog_name) or began a read before the
 * adoption returned may still be running.
 */
uint64_t cache_catalog_drop_heap(struct cache_catalog *cat);
/*
 * A catalog of bucket/prefix from the file at path, listed at most max_age
 * seconds before now: 0 and *out (its positions are its entries, in key
 * order) with *listed_at; ENOENT when there is no file; ESTALE when it is
 * older; EINVAL when it is corrupt, truncated, of another version or of
 * another bucket or prefix (why says which, for one log line); ENOMEM.
 */
int cache_catalog_load(const char *path, const char *bucket, const char *prefix,
		       int64_t now, uint64_t max_age,
		       struct cache_catalog **out, int64_t *listed_at,
		       const char **why);
/* The file name (no directory) a listing of bucket/prefix is saved under:
 * 32 hex digits of its SHA-256 and ".listing"; out holds 48 bytes. */
void cache_catalog_file_name(const char *bucket, const char *prefix,
			     char out[48]);

/* Bytes of memory the catalog holds (entries, keys, positions). */
uint64_t cache_catalog_memory(const struct cache_catalog *cat);

/*
 * The interned object of entry (cache_object_get(), with a reference for
 * the caller), so its blocks are found by every stream that names it.
 * NULL on ENOMEM.
 */
struct cache_object *cache_catalog_object(struct cache *c,
					  const struct cache_catalog *cat,
					  uint32_t entry);

#endif
