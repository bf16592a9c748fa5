/*
 * disk store internals, shared by disk_file.c (the block file
 * format), disk_index.c (what is on disk, the budget, eviction, the
 * start-up scan), disk_store.c (the store and its threads) and the unit
 * tests.
 *
 * Block file (all integers little-endian):
 *
 *   offset  size  field
 *   0       8     magic "s3pipeB\n"
 *   8       4     format version (DISK_STORE_FORMAT)
 *   12      4     header length: 56 + the three strings
 *   16      8     block size
 *   24      8     block index
 *   32      8     data length
 *   40      4     checksum of the data
 *   44      2     bucket length
 *   46      2     key length
 *   48      2     ETag length
 *   50      2     which checksum: 1 crc32 (zlib's), 2 CRC-32C
 *   52      4     crc32 of bytes 0-51 and of the strings
 *   56            bucket, key, ETag (no NULs)
 *   header length  the data
 *
 * A file is read whole (header, data and one byte more, to see the end) in
 * one preadv straight into the cache's buffer, then checked: every header
 * field against the block asked for, then the data's checksum.
 *
 * Index invariants (the tier's lock held):
 *   - used is the sum of cost over the entries in the table; reserved is
 *     the cost of the writes under way; used + reserved <= size, always,
 *     so the files (and temporaries) on disk never pass the budget;
 *   - an entry is in the table and the LRU together, or in neither
 *     (removed, waiting for its last pin to go);
 *   - a pinned entry (a read is about to open its file) is never evicted.
 */
#ifndef S3PIPE_STORE_DISK_INTERNAL_H
#define S3PIPE_STORE_DISK_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/disk.h"

#define DISK_STORE_FORMAT	1
#define DISK_STORE_MAGIC	"s3pipeB\n"
#define DISK_STORE_HEADER_FIXED 56
#define DISK_STORE_BUCKET_MAX	255
#define DISK_STORE_KEY_MAX	1024
#define DISK_STORE_ETAG_MAX	255
#define DISK_STORE_HEADER_MAX                                                  \
	(DISK_STORE_HEADER_FIXED + DISK_STORE_BUCKET_MAX +                     \
	 DISK_STORE_KEY_MAX + DISK_STORE_ETAG_MAX)
#define DISK_STORE_ID_LEN   16 /* bytes of SHA-256 that name an object */
#define DISK_STORE_NAME_MAX 64 /* a file name, with its NUL */
#define DISK_STORE_SUBDIR   "s3pipe"
#define DISK_STORE_LOCK	    "lock"

/* One block as a file knows it. */
struct disk_store_key {
	const char *bucket;
	const char *key;
	const char *etag;
	uint64_t block_size;
	uint64_t index;
	unsigned char id[DISK_STORE_ID_LEN]; /* of the first four fields */
};

/* ---- disk_file.c ---- */

/*
 * Fills k (the strings are borrowed) and its id; false when the block
 * cannot be kept (no ETag, or a string past its limit).
 */
bool disk_store_key_init(struct disk_store_key *k, const char *bucket,
			 const char *key, const char *etag, uint64_t block_size,
			 uint64_t index);
/* Header bytes of k's files. */
size_t disk_store_header_len(const struct disk_store_key *k);
/* "<id hex>-<index hex>.b<format>" into out (DISK_STORE_NAME_MAX). */
void disk_store_file_name(const unsigned char *id, uint64_t index, char *out);

enum disk_store_name_kind {
	DISK_STORE_NAME_BLOCK, /* a block file of this format */
	DISK_STORE_NAME_TEMP,  /* a block file being written, or left over */
	DISK_STORE_NAME_OLD,   /* a block file of another format */
	DISK_STORE_NAME_OTHER, /* not the tier's: left alone */
};
/* What name is; for blocks, their id and index. */
enum disk_store_name_kind
disk_store_name_parse(const char *name, unsigned char *id, uint64_t *index);

/* Checksums of the data (the header's field at 50). */
#define DISK_STORE_SUM_CRC32  1 /* zlib's crc32 */
#define DISK_STORE_SUM_CRC32C 2 /* CRC-32C (Castagnoli), by the CPU */

/* The checksum this host writes: CRC-32C where the CPU has it. */
unsigned disk_store_sum_kind(void);
uint32_t disk_store_sum(unsigned kind, const void *data, size_t len);

/* Writes the header of k with data_len and its checksum into out
 * (disk_store_header_len(k) bytes). */
void disk_store_header_encode(const struct disk_store_key *k, uint64_t data_len,
			      unsigned kind, uint32_t sum, unsigned char *out);
/*
 * Checks a header read from a file against k and data_len: 0 with the
 * data's checksum in *kind and *sum, or EBADMSG with what is wrong in
 * *why (also for a checksum this host does not compute).
 */
int disk_store_header_check(const unsigned char *hdr, size_t len,
			    const struct disk_store_key *k, uint64_t data_len,
			    unsigned *kind, uint32_t *sum, const char **why);

/*
 * Writes block k (data[0..len)) under dirfd: a temporary file (its name
 * ends in ".tmp" and tag), then renamed into place.  0 or an errno (the
 * temporary file is gone then).
 */
int disk_store_block_write(int dirfd, const struct disk_store_key *k,
			   const void *data, size_t len, unsigned tag);
/*
 * Reads block k (len data bytes) from under dirfd into dest and checks it:
 * 0; ENOENT when there is no such file; EBADMSG when the file is damaged
 * or names another block (*why says how); another errno when reading
 * failed.  dest holds garbage unless 0.
 */
int disk_store_block_read(int dirfd, const struct disk_store_key *k, void *dest,
			  size_t len, const char **why);

/* ---- disk_index.c ---- */

struct disk_store_entry {
	unsigned char id[DISK_STORE_ID_LEN];
	uint64_t index;
	uint64_t file_size; /* header + data, as on disk */
	uint64_t cost;	    /* file_size rounded up to the file system's
			       block: what the budget counts */
	int64_t mtime;	    /* nanoseconds; the start-up scan's order */
	unsigned pins;	    /* reads about to open the file */
	bool removed;	    /* out of the table; freed at the last unpin */
	struct disk_store_entry *hash_next;
	struct disk_store_entry *lru_prev; /* towards the hot end */
	struct disk_store_entry *lru_next; /* towards the cold end */
};

/* When full, one block in this many is let in (see admit()). */
#define DISK_STORE_ADMIT_FULL_EVERY 16

struct disk_store_index {
	struct disk_store_entry **table;
	size_t nbuckets; /* power of two */
	size_t count;
	struct disk_store_entry *hot, *cold;
	uint64_t used;
	uint64_t reserved;
	uint64_t size;	    /* the budget */
	uint64_t unit;	    /* the file system's block: costs are multiples */
	unsigned full_seen; /* blocks offered while full */
};

int disk_store_index_init(struct disk_store_index *ix, uint64_t size,
			  uint64_t unit);
/* Frees every entry, pinned or not. */
void disk_store_index_free(struct disk_store_index *ix);
uint64_t disk_store_index_cost(const struct disk_store_index *ix,
			       uint64_t file_size);
struct disk_store_entry *disk_store_index_find(struct disk_store_index *ix,
					       const unsigned char *id,
					       uint64_t index);
/* A new entry at the hot end (NULL on ENOMEM); used grows by its cost.
 * The caller has made room (or is the scan). */
struct disk_store_entry *disk_store_index_add(struct disk_store_index *ix,
					      const unsigned char *id,
					      uint64_t index,
					      uint64_t file_size);
/* Moves e to the hot end (a hit). */
void disk_store_index_touch(struct disk_store_index *ix,
			    struct disk_store_entry *e);
/* Takes e out of the table and the LRU; used drops by its cost.  Freed
 * now, or by the last unpin. */
void disk_store_index_remove(struct disk_store_index *ix,
			     struct disk_store_entry *e);
void disk_store_index_unpin(struct disk_store_index *ix,
			    struct disk_store_entry *e);
/* The coldest entry that is not pinned, or NULL. */
struct disk_store_entry *disk_store_index_victim(struct disk_store_index *ix);
/*
 * Whether a block of cost bytes should be written, with writes that will
 * cost pending bytes queued and not taken yet: always while it fits; once the
 * tier is full, one block in DISK_STORE_ADMIT_FULL_EVERY (see disk_index.c).
 */
bool disk_store_index_admit(struct disk_store_index *ix, uint64_t cost,
			    uint64_t pending);

/*
 * Start-up: adds every block file under dirfd (the LRU in the order of
 * their mtimes, oldest coldest) and, when writable, removes temporaries
 * and files of other formats.  Returns 0 or an errno (opening the
 * directory for reading failed).
 */
int disk_store_index_scan(struct disk_store_index *ix, int dirfd,
			  bool writable);
/* Evicts the coldest entries (removing their files when writable) until
 * used fits ix->size; returns how many went. */
uint64_t disk_store_index_shrink(struct disk_store_index *ix, int dirfd,
				 bool writable);

#endif
