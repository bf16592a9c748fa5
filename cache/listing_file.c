/*
 * cache listing files: the saved listing's format, written and read a
 * page at a time (see listing_file.h).
 *
 * The file: a header (the magic "S3PLIST\n", a version, the time listed
 * in seconds since the epoch, the entry count, the bucket and the
 * prefix), then each entry in key order (its name after the prefix, its
 * size in 8 bytes, its last modified time in 4 (seconds since the epoch,
 * 0 when unknown), its ETag's kind and bytes), then a crc32 of all that.
 * Numbers are little-endian; a name or text is a 16-bit length and its
 * bytes.  Version 1 had no times: such a file is refused like any other
 * version, and the prefix is listed again.
 *
 * A writer learns the count only at the end: the header goes out with 0
 * there, and the commit writes the count in place and the crc of the
 * whole, the header's crc (with the count) combined with the entries'
 * (zlib's crc32_combine), so nothing is read back.  A reader checks the
 * crc in one pass of READ_CHUNK bytes at a time before its first page,
 * then decodes entries from a buffer of READ_CHUNK bytes refilled as it
 * empties: its memory does not grow with the listing.  A file that
 * changes after the check fails the page that does not decode (EINVAL),
 * never reads past the buffer.
 */
#include "config.h"

#include "cache/listing_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "cache/catalog.h"
#include "cache/internal.h"
#include "store/store.h"
#include "util/util.h"

#define FILE_MAGIC   "S3PLIST\n"
#define FILE_VERSION 2u
#define COUNT_AT     (8 + 4 + 8) /* the count's offset in the header */
#define HEADER_MAX   (COUNT_AT + 8 + 2 * (2 + CACHE_KEY_MAX))
/* an entry's bytes, at most */
#define ENTRY_MAX                                                              \
	(2 + CACHE_KEY_MAX + 8 + 4 + 1 + CACHE_ETAG_MD5_BYTES + 2 +            \
	 CACHE_ETAG_MAX)
#define READ_CHUNK (64u << 10)

/* ---- the bytes ---- */

static size_t put_le(unsigned char *p, uint64_t v, unsigned bytes)
{
	for (unsigned i = 0; i < bytes; i++)
		p[i] = (unsigned char)(v >> (8 * i));
	return bytes;
}

static size_t put_text(unsigned char *p, const char *s, size_t len)
{
	put_le(p, len, 2);
	memcpy(p + 2, s, len);
	return 2 + len;
}

/* A reader of bytes in memory: every take checks what is left. */
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

/* ---- writing ---- */

struct cache_listing_writer {
	struct util_replace out;
	FILE *f; /* buffered, over a copy of out.fd */
	char *prefix;
	size_t prefix_len;
	unsigned char *header; /* as written, the count 0 */
	size_t header_len;
	uLong entries_crc;
	uint64_t entries_len;
	uint64_t count;
	int error; /* the first; the writer then only aborts */
};

static void writer_free(struct cache_listing_writer *w)
{
	free(w->header);
	free(w->prefix);
	free(w);
}

int cache_listing_writer_begin(const char *path, const char *bucket,
			       const char *prefix, int64_t listed_at,
			       struct cache_listing_writer **out)
{
	struct cache_listing_writer *w = calloc(1, sizeof(*w));
	size_t lb = strlen(bucket), lp = strlen(prefix), n = 0;
	int dup_fd, rc;

	*out = NULL;
	if (!w || lb > CACHE_KEY_MAX || lp > CACHE_KEY_MAX) {
		free(w);
		return w ? EINVAL : ENOMEM;
	}
	w->header = malloc(HEADER_MAX);
	w->prefix = strdup(prefix);
	if (!w->header || !w->prefix) {
		writer_free(w);
		return ENOMEM;
	}
	memcpy(w->header, FILE_MAGIC, 8);
	n = 8;
	n += put_le(w->header + n, FILE_VERSION, 4);
	n += put_le(w->header + n, (uint64_t)listed_at, 8);
	n += put_le(w->header + n, 0, 8); /* the count, at the commit */
	n += put_text(w->header + n, bucket, lb);
	n += put_text(w->header + n, prefix, lp);
	w->header_len = n;
	w->prefix_len = lp;
	w->entries_crc = crc32(0, NULL, 0);
	/* mode 0600: keys can say a lot about a dataset */
	rc = util_replace_begin(&w->out, path);
	if (rc) {
		writer_free(w);
		return rc;
	}
	/* buffered writes of many small fields, through a copy of the fd
	 * (the replacement closes its own) */
	dup_fd = dup(w->out.fd);
	w->f = dup_fd >= 0 ? fdopen(dup_fd, "wb") : NULL;
	if (!w->f) {
		rc = errno ? errno : ENOMEM;
		if (dup_fd >= 0)
			close(dup_fd);
		cache_listing_writer_abort(w);
		return rc;
	}
	/* a page is tens of KiB: written in a few calls, not a dozen */
	setvbuf(w->f, NULL, _IOFBF, READ_CHUNK);
	if (fwrite(w->header, 1, n, w->f) != n) {
		cache_listing_writer_abort(w);
		return EIO;
	}
	*out = w;
	return 0;
}

int cache_listing_writer_add(struct cache_listing_writer *w, const char *key,
			     const char *etag, uint64_t size, int64_t mtime)
{
	unsigned char b[ENTRY_MAX], md5[CACHE_ETAG_MD5_BYTES];
	const char *extra;
	enum cache_etag_kind kind;
	size_t klen = strlen(key), n = 0;

	if (w->error)
		return w->error;
	if (strncmp(key, w->prefix, w->prefix_len) != 0 ||
	    klen - w->prefix_len > CACHE_KEY_MAX ||
	    size > CACHE_OBJECT_SIZE_MAX || (etag && !cache_etag_valid(etag)))
		return w->error = EINVAL;
	kind = cache_etag_split(etag, md5, &extra);
	n += put_text(b + n, key + w->prefix_len, klen - w->prefix_len);
	n += put_le(b + n, size, 8);
	n += put_le(b + n, cache_mtime_clamp(mtime), 4);
	n += put_le(b + n, kind, 1);
	if (kind == CACHE_ETAG_MD5 || kind == CACHE_ETAG_MD5_SUFFIX) {
		memcpy(b + n, md5, sizeof(md5));
		n += sizeof(md5);
	}
	if (kind == CACHE_ETAG_MD5_SUFFIX || kind == CACHE_ETAG_TEXT)
		n += put_text(b + n, extra, strlen(extra));
	if (fwrite(b, 1, n, w->f) != n)
		return w->error = errno ? errno : EIO;
	w->entries_crc = crc32_z(w->entries_crc, b, n);
	w->entries_len += n;
	w->count++;
	return 0;
}

/* len bytes of p at offset of fd: 0 or an errno. */
static int write_at(int fd, const void *p, size_t len, uint64_t offset)
{
	ssize_t n = pwrite(fd, p, len, (off_t)offset);

	if (n < 0)
		return errno;
	return (size_t)n == len ? 0 : EIO;
}

int cache_listing_writer_commit(struct cache_listing_writer *w)
{
	unsigned char count[8], crc_bytes[4];
	uLong crc;
	int rc = w->error;

	if (fclose(w->f) != 0 && !rc)
		rc = errno ? errno : EIO;
	w->f = NULL;
	put_le(w->header + COUNT_AT, w->count, 8);
	crc = crc32_z(crc32(0, NULL, 0), w->header, w->header_len);
	crc = crc32_combine(crc, w->entries_crc, (z_off_t)w->entries_len);
	put_le(count, w->count, 8);
	put_le(crc_bytes, crc, 4);
	if (!rc)
		rc = write_at(w->out.fd, count, 8, COUNT_AT);
	if (!rc)
		rc = write_at(w->out.fd, crc_bytes, 4,
			      w->header_len + w->entries_len);
	if (rc) {
		cache_listing_writer_abort(w);
		return rc;
	}
	rc = util_replace_commit(&w->out);
	writer_free(w);
	return rc;
}

void cache_listing_writer_abort(struct cache_listing_writer *w)
{
	if (!w)
		return;
	if (w->f)
		fclose(w->f);
	util_replace_abort(&w->out);
	writer_free(w);
}

/* ---- reading ---- */

struct cache_listing_file {
	int fd;
	char *prefix;
	size_t prefix_len;
	uint64_t count, done; /* entries in the file, and taken */
	uint64_t next;	      /* the file offset read next */
	uint64_t end;	      /* where the entries end (the crc) */
	unsigned char *buf;   /* READ_CHUNK bytes: [pos, len) unread */
	size_t pos, len;
};

/* len bytes at offset of fd into p: 0, or EIO when they are not all
 * there. */
static int read_at(int fd, void *p, size_t len, uint64_t offset)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = pread(fd, (char *)p + got, len - got,
				  (off_t)(offset + got));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return EIO;
		got += (size_t)n;
	}
	return 0;
}

/* Whether the crc at the end of f's file (size bytes) is that of the rest,
 * read a chunk at a time into f->buf. */
static bool crc_matches(struct cache_listing_file *f, uint64_t size)
{
	uLong crc = crc32(0, NULL, 0);
	uint64_t stored;

	for (uint64_t at = 0; at < size - 4;) {
		size_t n = size - 4 - at < READ_CHUNK ? (size_t)(size - 4 - at)
						      : READ_CHUNK;

		if (read_at(f->fd, f->buf, n, at) != 0)
			return false;
		crc = crc32_z(crc, f->buf, n);
		at += n;
	}
	if (read_at(f->fd, f->buf, 4, size - 4) != 0 ||
	    !take_u64(&(struct file_reader){f->buf, 4}, &stored, 4))
		return false;
	return stored == crc;
}

int cache_listing_file_open(const char *path, const char *bucket,
			    const char *prefix, int64_t now, uint64_t max_age,
			    struct cache_listing_file **out, int64_t *listed_at,
			    const char **why)
{
	struct cache_listing_file *f = calloc(1, sizeof(*f));
	char name[CACHE_KEY_MAX + 1];
	uint64_t version, when, count;
	struct file_reader r;
	struct stat st;
	int rc = EINVAL;

	*out = NULL;
	*why = "";
	if (!f)
		return ENOMEM;
	f->buf = malloc(READ_CHUNK);
	f->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (!f->buf || f->fd < 0) {
		*why = "it cannot be opened";
		rc = !f->buf ? ENOMEM : errno == ENOENT ? ENOENT : EINVAL;
		goto fail;
	}
	if (fstat(f->fd, &st) != 0 || st.st_size < COUNT_AT + 8 + 4 + 4) {
		*why = "it is too short";
		goto fail;
	}
	if (!crc_matches(f, (uint64_t)st.st_size)) {
		*why = "its checksum does not match (a corrupt or truncated "
		       "file)";
		goto fail;
	}
	f->end = (uint64_t)st.st_size - 4;
	f->len = f->end < READ_CHUNK ? (size_t)f->end : READ_CHUNK;
	if (read_at(f->fd, f->buf, f->len, 0) != 0) {
		*why = "it cannot be read whole";
		goto fail;
	}
	r.p = f->buf;
	r.left = f->len;
	if (!take(&r, name, 8) || memcmp(name, FILE_MAGIC, 8) != 0 ||
	    !take_u64(&r, &version, 4) || version != FILE_VERSION) {
		*why = "it is not a listing of this version";
		goto fail;
	}
	if (!take_u64(&r, &when, 8) || !take_u64(&r, &count, 8) ||
	    !take_text(&r, name, sizeof(name)) || strcmp(name, bucket) != 0 ||
	    !take_text(&r, name, sizeof(name)) || strcmp(name, prefix) != 0 ||
	    count > CACHE_CATALOG_MAX) {
		*why = "it is a listing of another bucket or prefix";
		goto fail;
	}
	*listed_at = (int64_t)when;
	/* (in unsigned arithmetic: the file's time may be anything) */
	if (now < 0 || when > (uint64_t)now || (uint64_t)now - when > max_age) {
		rc = ESTALE;
		goto fail;
	}
	f->prefix = strdup(prefix);
	if (!f->prefix) {
		rc = ENOMEM;
		goto fail;
	}
	f->prefix_len = strlen(prefix);
	f->count = count;
	f->pos = f->len - r.left;
	f->next = f->len;
	*out = f;
	return 0;

fail:
	cache_listing_file_close(f);
	return rc;
}

uint64_t cache_listing_file_count(const struct cache_listing_file *f)
{
	return f->count;
}

/* At least one whole entry's bytes unread in f->buf, or all that is left
 * of the entries: 0 or EIO. */
static int refill(struct cache_listing_file *f)
{
	size_t n;

	if (f->len - f->pos >= ENTRY_MAX || f->next >= f->end)
		return 0;
	memmove(f->buf, f->buf + f->pos, f->len - f->pos);
	f->len -= f->pos;
	f->pos = 0;
	n = READ_CHUNK - f->len;
	if (n > f->end - f->next)
		n = (size_t)(f->end - f->next);
	if (read_at(f->fd, f->buf + f->len, n, f->next) != 0)
		return EIO;
	f->len += n;
	f->next += n;
	return 0;
}

/* The next entry into obj (strings malloc'd): 0, EINVAL or ENOMEM. */
static int take_entry(struct cache_listing_file *f, struct store_object *obj)
{
	char key[CACHE_KEY_MAX + 1], etag[CACHE_ETAG_MAX + 1];
	char text[CACHE_ETAG_MAX + 1];
	static const char hex[] = "0123456789abcdef";
	unsigned char md5[CACHE_ETAG_MD5_BYTES];
	struct file_reader r = {f->buf + f->pos, f->len - f->pos};
	uint64_t size, mtime, kind;
	bool has_etag = true;

	memcpy(key, f->prefix, f->prefix_len);
	if (!take_text(&r, key + f->prefix_len, sizeof(key) - f->prefix_len) ||
	    !take_u64(&r, &size, 8) || !take_u64(&r, &mtime, 4) ||
	    !take_u64(&r, &kind, 1))
		return EINVAL;
	switch (kind) {
	case CACHE_ETAG_NONE:
		has_etag = false;
		break;
	case CACHE_ETAG_MD5:
	case CACHE_ETAG_MD5_SUFFIX:
		if (!take(&r, md5, sizeof(md5)))
			return EINVAL;
		etag[0] = '"';
		for (int b = 0; b < CACHE_ETAG_MD5_BYTES; b++) {
			etag[1 + 2 * b] = hex[md5[b] >> 4];
			etag[2 + 2 * b] = hex[md5[b] & 15];
		}
		etag[1 + 2 * CACHE_ETAG_MD5_BYTES] = '\0';
		if (kind == CACHE_ETAG_MD5) {
			memcpy(etag + 1 + 2 * CACHE_ETAG_MD5_BYTES, "\"", 2);
			break;
		}
		if (!take_text(&r, text,
			       sizeof(etag) - 2 * CACHE_ETAG_MD5_BYTES - 1))
			return EINVAL;
		memcpy(etag + 1 + 2 * CACHE_ETAG_MD5_BYTES, text,
		       strlen(text) + 1);
		break;
	case CACHE_ETAG_TEXT:
		if (!take_text(&r, etag, sizeof(etag)))
			return EINVAL;
		break;
	default:
		return EINVAL;
	}
	if (size > CACHE_OBJECT_SIZE_MAX ||
	    (has_etag && !cache_etag_valid(etag)))
		return EINVAL;
	f->pos = f->len - r.left;
	obj->key = strdup(key);
	obj->etag = has_etag ? strdup(etag) : NULL;
	obj->size = size;
	obj->mtime = (int64_t)mtime;
	return !obj->key || (has_etag && !obj->etag) ? ENOMEM : 0;
}

int cache_listing_file_page(struct cache_listing_file *f, size_t max_keys,
			    struct store_list_page *page)
{
	uint64_t left = f->count - f->done;
	size_t n = left < max_keys ? (size_t)left : max_keys;
	int rc = 0;

	memset(page, 0, sizeof(*page));
	page->objects = calloc(n ? n : 1, sizeof(*page->objects));
	if (!page->objects)
		return ENOMEM;
	while (!rc && page->count < n) {
		rc = refill(f);
		if (!rc)
			rc = take_entry(f, &page->objects[page->count]);
		page->count++; /* (what it holds goes with the page) */
	}
	/* the last entry ends the entries exactly */
	if (!rc && f->done + n == f->count &&
	    (f->next != f->end || f->pos != f->len))
		rc = EINVAL;
	if (rc) {
		store_list_page_clear(page);
		return rc;
	}
	f->done += n;
	page->truncated = f->done < f->count;
	return 0;
}

int cache_listing_file_skip_through(struct cache_listing_file *f,
				    const char *key)
{
	while (f->done < f->count) {
		struct store_object o = {0};
		size_t at;
		int rc = refill(f);

		at = f->pos;
		if (!rc)
			rc = take_entry(f, &o);
		if (!rc && strcmp(o.key, key) > 0)
			f->pos = at; /* the first one after: read next */
		else if (!rc)
			f->done++;
		store_object_clear(&o);
		if (rc || f->pos == at)
			return rc;
	}
	return 0;
}

void cache_listing_file_close(struct cache_listing_file *f)
{
	if (!f)
		return;
	if (f->fd >= 0)
		close(f->fd);
	free(f->prefix);
	free(f->buf);
	free(f);
}

/* ---- a catalog saved and loaded whole ---- */

int cache_catalog_save(const struct cache_catalog *cat, const char *path,
		       int64_t listed_at)
{
	char key[CACHE_KEY_MAX + 1], etag[CACHE_ETAG_MAX + 1];
	size_t count = cache_catalog_count(cat);
	struct cache_listing_writer *w = NULL;
	int rc = cache_listing_writer_begin(path, cache_catalog_bucket(cat),
					    cache_catalog_prefix(cat),
					    listed_at, &w);

	for (size_t pos = 0; pos < count && !rc; pos++) {
		uint32_t e = cache_catalog_at(cat, pos);
		bool has_etag = cache_catalog_etag(cat, e, etag, sizeof(etag));

		rc = cache_catalog_key(cat, e, key, sizeof(key))
			 ? cache_listing_writer_add(w, key,
						    has_etag ? etag : NULL,
						    cache_catalog_size(cat, e),
						    cache_catalog_mtime(cat, e))
			 : EINVAL;
	}
	if (rc) {
		cache_listing_writer_abort(w);
		return rc;
	}
	return cache_listing_writer_commit(w);
}

/* The entries of an open file into cat, a page at a time. */
static int read_entries(struct cache_listing_file *f, struct cache_catalog *cat,
			const char **why)
{
	struct store_list_page page;
	uint32_t entry;
	int rc = 0;

	/* (a page even when there are no entries: it checks the end) */
	do {
		rc = cache_listing_file_page(f, 4096, &page);
		for (size_t i = 0; !rc && i < page.count; i++) {
			const struct store_object *o = &page.objects[i];

			rc = cache_catalog_add(cat, o->key, o->etag, o->size,
					       o->mtime, &entry);
		}
		store_list_page_clear(&page);
	} while (!rc && f->done < f->count);
	if (rc == ENOMEM)
		return ENOMEM;
	if (rc) {
		*why = "its entries do not read back";
		return EINVAL;
	}
	return cache_catalog_order(cat, 0, (size_t)f->count);
}

int cache_catalog_load(const char *path, const char *bucket, const char *prefix,
		       int64_t now, uint64_t max_age,
		       struct cache_catalog **out, int64_t *listed_at,
		       const char **why)
{
	struct cache_listing_file *f;
	struct cache_catalog *cat;
	int rc = cache_listing_file_open(path, bucket, prefix, now, max_age, &f,
					 listed_at, why);

	*out = NULL;
	if (rc)
		return rc;
	cat = cache_catalog_create(bucket, prefix);
	rc = cat ? read_entries(f, cat, why) : ENOMEM;
	cache_listing_file_close(f);
	if (rc) {
		cache_catalog_destroy(cat);
		return rc;
	}
	*out = cat;
	return 0;
}
