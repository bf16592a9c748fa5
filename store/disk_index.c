/*
 * disk store: the index of the block files on disk, kept in memory
 * (a hash table on (object id, block index) and an LRU list), the budget,
 * eviction, and the start-up scan that rebuilds it.  See
 * store/disk_internal.h for the invariants; the tier's lock guards it all.
 *
 * Policy: files are evicted least recently used first (a hit moves a file
 * to the hot end).  Plain LRU alone is defeated by the way training reads:
 * every epoch scans the same data in the same (or a shuffled) order, and
 * with a channel larger than the budget each new block would evict the
 * oldest one, which is exactly the one the next epoch needs first, so no
 * epoch would ever hit.  So, once the budget is full, a block from the
 * store is written only one time in DISK_STORE_ADMIT_FULL_EVERY (evicting
 * the coldest file); the others are not written at all.  A budget-sized
 * part of the data then stays on disk from one epoch to the next, and a
 * new working set still replaces an old one, at a sixteenth of the rate
 * (and without writing what would be evicted before its first use).
 */
#include "config.h"

#include "store/disk_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static size_t hash_of(const struct disk_store_index *ix,
		      const unsigned char *id, uint64_t index)
{
	uint64_t h;

	memcpy(&h, id, sizeof(h)); /* already uniform: a SHA-256 prefix */
	h ^= (index + 1) * 0x9E3779B97F4A7C15ull;
	h ^= h >> 31;
	return (size_t)h & (ix->nbuckets - 1);
}

int disk_store_index_init(struct disk_store_index *ix, uint64_t size,
			  uint64_t unit)
{
	memset(ix, 0, sizeof(*ix));
	ix->nbuckets = 256;
	ix->table = calloc(ix->nbuckets, sizeof(*ix->table));
	ix->size = size;
	ix->unit = unit ? unit : 1;
	return ix->table ? 0 : ENOMEM;
}

void disk_store_index_free(struct disk_store_index *ix)
{
	struct disk_store_entry *e = ix->hot;

	while (e) {
		struct disk_store_entry *next = e->lru_next;

		free(e);
		e = next;
	}
	free(ix->table);
	memset(ix, 0, sizeof(*ix));
}

uint64_t disk_store_index_cost(const struct disk_store_index *ix,
			       uint64_t file_size)
{
	return (file_size + ix->unit - 1) / ix->unit * ix->unit;
}

struct disk_store_entry *disk_store_index_find(struct disk_store_index *ix,
					       const unsigned char *id,
					       uint64_t index)
{
	struct disk_store_entry *e = ix->table[hash_of(ix, id, index)];

	while (e && !(e->index == index &&
		      memcmp(e->id, id, DISK_STORE_ID_LEN) == 0))
		e = e->hash_next;
	return e;
}

static void table_grow(struct disk_store_index *ix)
{
	size_t old = ix->nbuckets;
	struct disk_store_entry **t = calloc(old * 2, sizeof(*t));
	struct disk_store_entry **prev = ix->table;

	if (!t)
		return; /* longer chains */
	ix->table = t;
	ix->nbuckets = old * 2;
	for (size_t i = 0; i < old; i++) {
		struct disk_store_entry *e = prev[i];

		while (e) {
			struct disk_store_entry *next = e->hash_next;
			size_t h = hash_of(ix, e->id, e->index);

			e->hash_next = t[h];
			t[h] = e;
			e = next;
		}
	}
	free(prev);
}

static void lru_unlink(struct disk_store_index *ix, struct disk_store_entry *e)
{
	if (e->lru_prev)
		e->lru_prev->lru_next = e->lru_next;
	else
		ix->hot = e->lru_next;
	if (e->lru_next)
		e->lru_next->lru_prev = e->lru_prev;
	else
		ix->cold = e->lru_prev;
	e->lru_prev = e->lru_next = NULL;
}

static void lru_push_hot(struct disk_store_index *ix,
			 struct disk_store_entry *e)
{
	e->lru_prev = NULL;
	e->lru_next = ix->hot;
	if (ix->hot)
		ix->hot->lru_prev = e;
	else
		ix->cold = e;
	ix->hot = e;
}

struct disk_store_entry *disk_store_index_add(struct disk_store_index *ix,
					      const unsigned char *id,
					      uint64_t index,
					      uint64_t file_size)
{
	struct disk_store_entry *e = calloc(1, sizeof(*e));
	size_t h;

	if (!e)
		return NULL;
	memcpy(e->id, id, DISK_STORE_ID_LEN);
	e->index = index;
	e->file_size = file_size;
	e->cost = disk_store_index_cost(ix, file_size);
	if (ix->count >= ix->nbuckets)
		table_grow(ix);
	h = hash_of(ix, id, index);
	e->hash_next = ix->table[h];
	ix->table[h] = e;
	ix->count++;
	ix->used += e->cost;
	lru_push_hot(ix, e);
	return e;
}

void disk_store_index_touch(struct disk_store_index *ix,
			    struct disk_store_entry *e)
{
	if (e->removed || ix->hot == e)
		return;
	lru_unlink(ix, e);
	lru_push_hot(ix, e);
}

void disk_store_index_remove(struct disk_store_index *ix,
			     struct disk_store_entry *e)
{
	struct disk_store_entry **pp;

	if (e->removed)
		return;
	pp = &ix->table[hash_of(ix, e->id, e->index)];
	while (*pp && *pp != e)
		pp = &(*pp)->hash_next;
	if (*pp)
		*pp = e->hash_next;
	e->hash_next = NULL;
	lru_unlink(ix, e);
	ix->count--;
	ix->used -= e->cost;
	e->removed = true;
	if (e->pins == 0)
		free(e);
}

void disk_store_index_unpin(struct disk_store_index *ix,
			    struct disk_store_entry *e)
{
	(void)ix;
	if (--e->pins == 0 && e->removed)
		free(e);
}

struct disk_store_entry *disk_store_index_victim(struct disk_store_index *ix)
{
	struct disk_store_entry *e = ix->cold;

	while (e && e->pins)
		e = e->lru_prev;
	return e;
}

bool disk_store_index_admit(struct disk_store_index *ix, uint64_t cost,
			    uint64_t pending)
{
	if (cost > ix->size)
		return false;
	if (ix->used + ix->reserved + pending + cost <= ix->size)
		return true;
	return ++ix->full_seen % DISK_STORE_ADMIT_FULL_EVERY == 0;
}

/* ---- the start-up scan ---- */

static int by_mtime(const void *a, const void *b)
{
	const struct disk_store_entry *x = *(struct disk_store_entry *const *)a;
	const struct disk_store_entry *y = *(struct disk_store_entry *const *)b;

	return x->mtime < y->mtime ? -1 : x->mtime > y->mtime;
}

/* Puts the scanned entries es[0..n) in the LRU, oldest coldest. */
static void order_by_mtime(struct disk_store_index *ix,
			   struct disk_store_entry **es, size_t n)
{
	if (n > 1)
		qsort(es, n, sizeof(*es), by_mtime);
	for (size_t i = 0; i < n; i++)
		disk_store_index_touch(ix, es[i]);
}

int disk_store_index_scan(struct disk_store_index *ix, int dirfd, bool writable)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct disk_store_entry **es = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	DIR *dir;

	if (fd < 0)
		return errno;
	dir = fdopendir(fd);
	if (!dir) {
		int rc = errno;

		close(fd);
		return rc;
	}
	while ((de = readdir(dir)) != NULL) {
		unsigned char id[DISK_STORE_ID_LEN];
		uint64_t index;
		struct stat sb;
		struct disk_store_entry *e;

		switch (disk_store_name_parse(de->d_name, id, &index)) {
		case DISK_STORE_NAME_TEMP:
		case DISK_STORE_NAME_OLD:
			if (writable)
				unlinkat(dirfd, de->d_name, 0);
			continue;
		case DISK_STORE_NAME_OTHER:
			continue;
		case DISK_STORE_NAME_BLOCK:
		default:
			break;
		}
		if (fstatat(dirfd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0 ||
		    !S_ISREG(sb.st_mode))
			continue;
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 256;
			void *p = realloc(es, ncap * sizeof(*es));

			if (!p)
				break; /* the rest stays unknown: misses */
			es = p;
			cap = ncap;
		}
		e = disk_store_index_add(ix, id, index, (uint64_t)sb.st_size);
		if (!e)
			break;
		e->mtime = (int64_t)sb.st_mtim.tv_sec * 1000000000 +
			   sb.st_mtim.tv_nsec;
		es[n++] = e;
	}
	closedir(dir);
	order_by_mtime(ix, es, n);
	free(es);
	return 0;
}

uint64_t disk_store_index_shrink(struct disk_store_index *ix, int dirfd,
				 bool writable)
{
	uint64_t gone = 0;

	while (ix->used + ix->reserved > ix->size) {
		struct disk_store_entry *e = disk_store_index_victim(ix);
		char name[DISK_STORE_NAME_MAX];

		if (!e)
			break;
		disk_store_file_name(e->id, e->index, name);
		if (writable)
			unlinkat(dirfd, name, 0);
		disk_store_index_remove(ix, e);
		gone++;
	}
	return gone;
}
