/*
 * cache listing files: a prefix's listing kept in one file beside the disk
 * tier, written as its pages arrive and read back a page at a time.
 *
 * A shuffled channel saves its catalog whole once listed
 * (cache_catalog_save in catalog.h) and the next mount loads it whole
 * (cache_catalog_load).  A key-order channel never holds its listing: its
 * stream records the pages it takes (a writer), and a later epoch or mount
 * reads them back from the file as its readers need them, with memory for
 * one page whatever the listing's length.  Both are one format, here.
 */
#ifndef S3PIPE_CACHE_LISTING_FILE_H
#define S3PIPE_CACHE_LISTING_FILE_H

#include <stddef.h>
#include <stdint.h>

struct store_list_page;

/* ---- writing, as the listing goes ---- */

struct cache_listing_writer;

/*
 * A listing of bucket/prefix, listed at listed_at (seconds since the
 * epoch), to be written to path: a temporary file beside it until
 * cache_listing_writer_commit().  0 and *out, or an errno.
 */
int cache_listing_writer_begin(const char *path, const char *bucket,
			       const char *prefix, int64_t listed_at,
			       struct cache_listing_writer **out);
/* The next object in key order: 0, EINVAL for one the file cannot hold (a
 * key outside the prefix or too long, a bad ETag: a hostile listing), or
 * an errno of the write.  After an error the writer only aborts. */
int cache_listing_writer_add(struct cache_listing_writer *w, const char *key,
			     const char *etag, uint64_t size, int64_t mtime);
/* The file complete and renamed over path: 0 or an errno (then it is not
 * there).  Frees w either way. */
int cache_listing_writer_commit(struct cache_listing_writer *w);
/* The temporary file removed, w freed (NULL is fine). */
void cache_listing_writer_abort(struct cache_listing_writer *w);

/* ---- reading, a page at a time ---- */

struct cache_listing_file;

/*
 * The listing of bucket/prefix saved at path, listed at most max_age
 * seconds before now, checked whole (its crc) and open at its first
 * entry: 0 and *out with *listed_at; ENOENT when there is no file; ESTALE
 * when it is older; EINVAL when it is corrupt, truncated, of another
 * version or of another bucket or prefix (why says which, for one log
 * line); ENOMEM.
 */
int cache_listing_file_open(const char *path, const char *bucket,
			    const char *prefix, int64_t now, uint64_t max_age,
			    struct cache_listing_file **out, int64_t *listed_at,
			    const char **why);
/* Objects in the file. */
uint64_t cache_listing_file_count(const struct cache_listing_file *f);
/*
 * The next objects, max_keys at most, into page (whole keys, ETags as
 * listed; truncated while more follow, next_token NULL): 0, EINVAL when
 * the entries do not read back, EIO when the file cannot be read, ENOMEM.
 */
int cache_listing_file_page(struct cache_listing_file *f, size_t max_keys,
			    struct store_list_page *page);
/* The entries up to key (in key order, key included) passed over: 0,
 * EINVAL, EIO. */
int cache_listing_file_skip_through(struct cache_listing_file *f,
				    const char *key);
void cache_listing_file_close(struct cache_listing_file *f); /* NULL: ok */

#endif
