/*
 * cache catalog images: a catalog laid out as flat arrays in a file (the
 * memfd a keeper holds), so that the next worker maps it and reads it in
 * place: nothing decoded, nothing copied, nothing allocated a key, and a
 * catalog of a million keys comes back as fast as one of a thousand.
 *
 * The layout (native byte order and field widths: the image goes from a
 * worker to the next one on the same host; the header says which order,
 * and an image of another order or version is refused):
 *
 *   header    magic "S3PIMG1\n" (written last: an image without it was
 *             not finished), version, byte-order mark, entry count, the
 *             time listed, the file's length, each array's offset, and
 *             (version 2) the positions' offset and count
 *   bucket    and prefix, NUL-terminated, at their offsets
 *   size      count x uint64     mtime  count x uint32
 *   md5       count x 16 bytes   kind   count x 1 byte (cache_etag_kind)
 *   name      count x uint64: each entry's offset into text
 *   text      each entry's name past the prefix, NUL-terminated, and its
 *             ETag's text after that when its kind keeps one; two NULs end
 *             the section
 *   pos       positions x uint32: the entries in key order; absent (offset
 *             0) when position p is entry p
 *
 * Entries are written in the catalog's own order (version 2), so the
 * image's entry i is the catalog's entry i: the epoch orders a worker keeps
 * (entry numbers) mean the same entries to the next worker, and the worker
 * that listed can read its own catalog from the image in place of its heap
 * (cache_catalog_adopt_image).  Version 1 wrote entries in key order, no
 * positions; it still maps.  The writer uses pwrite, never a mapping of its
 * own.  A mapping is checked once (offsets, lengths, the text's two closing
 * NULs, bucket and prefix); a name's offset and a position's entry are
 * checked when read (catalog.c), so an image changed under a reader gives
 * wrong names at worst, never a read outside the mapping.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache/catalog.h"
#include "cache/internal.h"

#define IMAGE_MAGIC   "S3PIMG1\n"
#define IMAGE_VERSION 2u
#define IMAGE_ORDER   0x01020304u
#define IMAGE_ALIGN   64u

struct image_header {
	char magic[8];
	uint32_t version;
	uint32_t order;
	uint64_t count;
	int64_t listed_at;
	uint64_t file_bytes;
	uint64_t bucket_at, prefix_at;
	uint64_t size_at, mtime_at, md5_at, kind_at, name_at;
	uint64_t text_at, text_bytes;
	uint64_t pos_at, positions; /* version 2 */
};

static uint64_t align_up(uint64_t n)
{
	return (n + IMAGE_ALIGN - 1) & ~(uint64_t)(IMAGE_ALIGN - 1);
}

/* An entry's bytes in the text section: its name, and the ETag text kept
 * beside it. */
static size_t entry_text_bytes(const char *name, enum cache_etag_kind kind)
{
	size_t n = strlen(name) + 1;

	if (kind == CACHE_ETAG_TEXT || kind == CACHE_ETAG_MD5_SUFFIX)
		n += strlen(name + n) + 1;
	return n;
}

/* The header's offsets for count entries, text_bytes of text, bucket and
 * prefix, and positions (no section when identity: position p is entry
 * p): fills h (magic left empty). */
static void image_lay_out(struct image_header *h, uint64_t count,
			  uint64_t positions, bool identity,
			  uint64_t text_bytes, size_t bucket_len,
			  size_t prefix_len)
{
	uint64_t at = align_up(sizeof(*h));

	memset(h, 0, sizeof(*h));
	h->version = IMAGE_VERSION;
	h->order = IMAGE_ORDER;
	h->count = count;
	h->bucket_at = at;
	at = align_up(at + bucket_len + 1);
	h->prefix_at = at;
	at = align_up(at + prefix_len + 1);
	h->size_at = at;
	at = align_up(at + count * sizeof(uint64_t));
	h->mtime_at = at;
	at = align_up(at + count * sizeof(uint32_t));
	h->md5_at = at;
	at = align_up(at + count * CACHE_ETAG_MD5_BYTES);
	h->kind_at = at;
	at = align_up(at + count);
	h->name_at = at;
	at = align_up(at + count * sizeof(uint64_t));
	h->text_at = at;
	h->text_bytes = text_bytes;
	at = align_up(at + text_bytes);
	h->positions = positions;
	h->pos_at = identity ? 0 : at;
	h->file_bytes = identity ? h->text_at + text_bytes
				 : at + positions * sizeof(uint32_t);
}

/* Bytes written to fd from an offset on, through a buffer. */
#define OUT_BUFFER (256u << 10)
struct image_out {
	int fd;
	uint64_t at; /* where buf goes */
	size_t len;
	int error; /* the first */
	unsigned char buf[OUT_BUFFER];
};

static void out_flush(struct image_out *o)
{
	size_t done = 0;

	while (done < o->len && !o->error) {
		ssize_t n = pwrite(o->fd, o->buf + done, o->len - done,
				   (off_t)(o->at + done));

		if (n < 0 && errno != EINTR)
			o->error = errno;
		else if (n == 0)
			o->error = EIO; /* (no progress: not a loop) */
		else if (n > 0)
			done += (size_t)n;
	}
	o->at += o->len;
	o->len = 0;
}

static void out_seek(struct image_out *o, uint64_t at)
{
	out_flush(o);
	o->at = at;
}

static void out_put(struct image_out *o, const void *p, size_t n)
{
	while (n) {
		size_t room = OUT_BUFFER - o->len, take = n < room ? n : room;

		memcpy(o->buf + o->len, p, take);
		o->len += take;
		p = (const unsigned char *)p + take;
		n -= take;
		if (o->len == OUT_BUFFER)
			out_flush(o);
	}
}

/* One section: each entry's field (which: 0 size, 1 mtime, 2 MD5, 3
 * kind, 4 name offset, 5 text), in entry order, or (6) the positions. */
static void out_section(struct image_out *o, const struct cache_catalog *cat,
			int which)
{
	size_t count = cache_catalog_entries(cat);
	uint64_t off = 0;

	if (which == 6) {
		for (size_t pos = 0; pos < cache_catalog_count(cat); pos++) {
			uint32_t e = cache_catalog_at(cat, pos);

			out_put(o, &e, sizeof(e));
		}
		return;
	}
	for (uint32_t e = 0; e < count; e++) {
		struct catalog_raw raw;
		uint64_t size;
		uint32_t mtime;
		unsigned char kind;

		switch (which) {
		case 0:
			size = cache_catalog_size(cat, e);
			out_put(o, &size, sizeof(size));
			continue;
		case 1:
			mtime = (uint32_t)cache_catalog_mtime(cat, e);
			out_put(o, &mtime, sizeof(mtime));
			continue;
		}
		catalog_entry_raw(cat, e, &raw);
		kind = (unsigned char)raw.kind;
		if (which == 2)
			out_put(o, raw.md5, CACHE_ETAG_MD5_BYTES);
		else if (which == 3)
			out_put(o, &kind, 1);
		else if (which == 4)
			out_put(o, &off, sizeof(off));
		else
			out_put(o, raw.name,
				entry_text_bytes(raw.name, raw.kind));
		off += entry_text_bytes(raw.name, raw.kind);
	}
}

/*
 * Written section by section with pwrite (each a pass in position order
 * over one field), not through a mapping: the pages go to the memfd
 * without ever being this process's, so its RSS does not carry them.  The
 * file is sized first (zeros: no magic, the text's closing NULs) and the
 * header, magic included, goes last.
 */
int cache_catalog_image_save_fd(const struct cache_catalog *cat, int fd,
				int64_t listed_at)
{
	const char *bucket = cache_catalog_bucket(cat),
		   *prefix = cache_catalog_prefix(cat);
	size_t count = cache_catalog_entries(cat),
	       positions = cache_catalog_count(cat);
	bool identity = catalog_positions_identity(cat);
	const uint64_t *at[7];
	struct image_header h;
	uint64_t text_bytes = 2;
	struct image_out *o;
	int rc;

	for (uint32_t e = 0; e < count; e++) {
		struct catalog_raw raw;

		catalog_entry_raw(cat, e, &raw);
		text_bytes += entry_text_bytes(raw.name, raw.kind);
	}
	image_lay_out(&h, count, positions, identity, text_bytes,
		      strlen(bucket), strlen(prefix));
	h.listed_at = listed_at;
	if (h.file_bytes > (uint64_t)INT64_MAX || ftruncate(fd, 0) != 0 ||
	    ftruncate(fd, (off_t)h.file_bytes) != 0)
		return errno ? errno : EFBIG;
	o = malloc(sizeof(*o));
	if (!o)
		return ENOMEM;
	o->fd = fd;
	o->len = 0;
	o->error = 0;
	o->at = h.bucket_at;
	out_put(o, bucket, strlen(bucket) + 1);
	out_seek(o, h.prefix_at);
	out_put(o, prefix, strlen(prefix) + 1);
	at[0] = &h.size_at;
	at[1] = &h.mtime_at;
	at[2] = &h.md5_at;
	at[3] = &h.kind_at;
	at[4] = &h.name_at;
	at[5] = &h.text_at;
	at[6] = &h.pos_at;
	for (int which = 0; which < (identity ? 6 : 7) && !o->error; which++) {
		out_seek(o, *at[which]);
		out_section(o, cat, which);
	}
	/* everything else first: the magic says the image is whole */
	memcpy(h.magic, IMAGE_MAGIC, sizeof(h.magic));
	out_seek(o, 0);
	out_put(o, &h, sizeof(h));
	out_flush(o);
	rc = o->error;
	free(o);
	return rc;
}

/* Whether [at, at + len) lies within file bytes, at aligned to align. */
static bool section_ok(uint64_t at, uint64_t len, uint64_t file, uint64_t align)
{
	return at % align == 0 && at <= file && len <= file - at;
}

/* The header of a mapping of file bytes, with where its positions are
 * (*pos_at 0: none) and how many: NULL and *why when it is not a whole
 * image of a version read here and this byte order. */
static const struct image_header *header_check(const unsigned char *base,
					       uint64_t file, uint64_t *pos_at,
					       uint64_t *positions,
					       const char **why)
{
	const struct image_header *h = (const void *)base;
	uint64_t n;

	if (file < sizeof(*h) ||
	    memcmp(h->magic, IMAGE_MAGIC, sizeof(h->magic)) != 0) {
		*why = "not a finished catalog image";
		return NULL;
	}
	if ((h->version != IMAGE_VERSION && h->version != 1) ||
	    h->order != IMAGE_ORDER) {
		*why = "a catalog image of another version";
		return NULL;
	}
	n = h->count;
	/* (version 1: entries in key order, no positions) */
	*pos_at = h->version == 1 ? 0 : h->pos_at;
	*positions = h->version == 1 ? n : h->positions;
	if (*positions > n ||
	    (*pos_at &&
	     !section_ok(*pos_at, *positions * sizeof(uint32_t), file, 4))) {
		*why = "a catalog image whose sections do not fit";
		return NULL;
	}
	if (h->file_bytes != file || n > CACHE_CATALOG_MAX ||
	    !section_ok(h->size_at, n * sizeof(uint64_t), file, 8) ||
	    !section_ok(h->mtime_at, n * sizeof(uint32_t), file, 4) ||
	    !section_ok(h->md5_at, n * CACHE_ETAG_MD5_BYTES, file, 1) ||
	    !section_ok(h->kind_at, n, file, 1) ||
	    !section_ok(h->name_at, n * sizeof(uint64_t), file, 8) ||
	    !section_ok(h->text_at, h->text_bytes, file, 1) ||
	    h->text_bytes < 2 || base[h->text_at + h->text_bytes - 1] ||
	    base[h->text_at + h->text_bytes - 2] ||
	    !section_ok(h->bucket_at, 1, file, 1) ||
	    !section_ok(h->prefix_at, 1, file, 1) ||
	    !memchr(base + h->bucket_at, '\0', file - h->bucket_at) ||
	    !memchr(base + h->prefix_at, '\0', file - h->prefix_at)) {
		*why = "a catalog image whose sections do not fit";
		return NULL;
	}
	return h;
}

int catalog_image_map(int fd, const char *bucket, const char *prefix,
		      struct catalog_image *im, const char **why)
{
	const struct image_header *h;
	unsigned char *base;
	uint64_t pos_at = 0, positions = 0;
	struct stat sb;

	memset(im, 0, sizeof(*im));
	*why = "";
	if (fstat(fd, &sb) != 0)
		return errno;
	if (sb.st_size <= 0 || (uint64_t)sb.st_size > (uint64_t)SIZE_MAX) {
		*why = "not a finished catalog image";
		return EINVAL;
	}
	base = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED)
		return errno;
	h = header_check(base, (uint64_t)sb.st_size, &pos_at, &positions, why);
	if (h && (strcmp((const char *)base + h->bucket_at, bucket) != 0 ||
		  strcmp((const char *)base + h->prefix_at, prefix) != 0)) {
		*why = "a catalog image of another bucket or prefix";
		h = NULL;
	}
	if (!h) {
		munmap(base, (size_t)sb.st_size);
		return EINVAL;
	}
	im->base = base;
	im->bytes = (size_t)sb.st_size;
	im->count = (size_t)h->count;
	im->npos = (size_t)positions;
	im->pos = pos_at ? (const uint32_t *)(base + pos_at) : NULL;
	im->listed_at = h->listed_at;
	im->size = (const uint64_t *)(base + h->size_at);
	im->mtime = (const uint32_t *)(base + h->mtime_at);
	im->md5 = base + h->md5_at;
	im->kind = base + h->kind_at;
	im->name = (const uint64_t *)(base + h->name_at);
	im->text = (const char *)base + h->text_at;
	im->text_bytes = h->text_bytes;
	return 0;
}

void catalog_image_unmap(struct catalog_image *im)
{
	if (im->base)
		munmap(im->base, im->bytes);
	memset(im, 0, sizeof(*im));
}
