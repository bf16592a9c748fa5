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
 *             time listed, the file's length, each array's offset
 *   bucket    and prefix, NUL-terminated, at their offsets
 *   size      count x uint64     mtime  count x uint32
 *   md5       count x 16 bytes   kind   count x 1 byte (cache_etag_kind)
 *   name      count x uint64: each entry's offset into text
 *   text      each entry's name past the prefix, NUL-terminated, and its
 *             ETag's text after that when its kind keeps one; two NULs end
 *             the section
 *
 * Entries are written in the catalog's key order, so the image's entry i
 * is its position i.  A mapping is checked once (offsets, lengths, the
 * text's two closing NULs, bucket and prefix); a name's offset is checked
 * when it is read (catalog.c), so an image changed under a reader gives
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
#define IMAGE_VERSION 1u
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
 * prefix: fills h (magic left empty). */
static void image_lay_out(struct image_header *h, uint64_t count,
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
	h->file_bytes = at + text_bytes;
}

int cache_catalog_image_save_fd(const struct cache_catalog *cat, int fd,
				int64_t listed_at)
{
	const char *bucket = cache_catalog_bucket(cat),
		   *prefix = cache_catalog_prefix(cat);
	size_t count = cache_catalog_count(cat);
	struct image_header h;
	uint64_t text_bytes = 2, off;
	unsigned char *base;
	char *text;

	for (size_t pos = 0; pos < count; pos++) {
		struct catalog_raw raw;

		catalog_entry_raw(cat, cache_catalog_at(cat, pos), &raw);
		text_bytes += entry_text_bytes(raw.name, raw.kind);
	}
	image_lay_out(&h, count, text_bytes, strlen(bucket), strlen(prefix));
	h.listed_at = listed_at;
	if (h.file_bytes > (uint64_t)SIZE_MAX || ftruncate(fd, 0) != 0 ||
	    ftruncate(fd, (off_t)h.file_bytes) != 0)
		return errno ? errno : EFBIG;
	base = mmap(NULL, (size_t)h.file_bytes, PROT_READ | PROT_WRITE,
		    MAP_SHARED, fd, 0);
	if (base == MAP_FAILED)
		return errno;
	memcpy(base + h.bucket_at, bucket, strlen(bucket) + 1);
	memcpy(base + h.prefix_at, prefix, strlen(prefix) + 1);
	text = (char *)base + h.text_at;
	off = 0;
	for (size_t pos = 0; pos < count; pos++) {
		struct catalog_raw raw;
		uint32_t e = cache_catalog_at(cat, pos);
		size_t n;
		uint64_t size = cache_catalog_size(cat, e);
		uint32_t mtime = (uint32_t)cache_catalog_mtime(cat, e);

		catalog_entry_raw(cat, e, &raw);
		n = entry_text_bytes(raw.name, raw.kind);
		memcpy(base + h.size_at + pos * sizeof(uint64_t), &size,
		       sizeof(size));
		memcpy(base + h.mtime_at + pos * sizeof(uint32_t), &mtime,
		       sizeof(mtime));
		memcpy(base + h.md5_at + pos * CACHE_ETAG_MD5_BYTES, raw.md5,
		       CACHE_ETAG_MD5_BYTES);
		base[h.kind_at + pos] = (unsigned char)raw.kind;
		memcpy(base + h.name_at + pos * sizeof(uint64_t), &off,
		       sizeof(off));
		memcpy(text + off, raw.name, n);
		off += n;
	}
	text[off] = text[off + 1] = '\0';
	/* everything else first: the magic says the image is whole */
	memcpy(base, &h, sizeof(h));
	__atomic_thread_fence(__ATOMIC_RELEASE);
	memcpy(base, IMAGE_MAGIC, sizeof(h.magic));
	munmap(base, (size_t)h.file_bytes);
	return 0;
}

/* Whether [at, at + len) lies within file bytes, at aligned to align. */
static bool section_ok(uint64_t at, uint64_t len, uint64_t file, uint64_t align)
{
	return at % align == 0 && at <= file && len <= file - at;
}

/* The header of a mapping of file bytes: NULL and *why when it is not a
 * whole image of this version and byte order. */
static const struct image_header *header_check(const unsigned char *base,
					       uint64_t file, const char **why)
{
	const struct image_header *h = (const void *)base;
	uint64_t n;

	if (file < sizeof(*h) ||
	    memcmp(h->magic, IMAGE_MAGIC, sizeof(h->magic)) != 0) {
		*why = "not a finished catalog image";
		return NULL;
	}
	if (h->version != IMAGE_VERSION || h->order != IMAGE_ORDER) {
		*why = "a catalog image of another version";
		return NULL;
	}
	n = h->count;
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
	h = header_check(base, (uint64_t)sb.st_size, why);
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
