/*
 * channel tree: a FastFile channel as a directory tree, each object a file.
 *
 * The tree is an index over the channel's catalog (cache/catalog.h), made
 * once at start-up and never changed:
 *
 *   files  the catalog entries shown, sorted by name (the key after the
 *          prefix, compared as bytes), this host's share when sharded
 *          (the names at ordinals index mod count, in name order);
 *   dirs   one record per directory: its parent, the range files[lo, hi)
 *          of the files under it (the names under a path are contiguous in
 *          name order), its depth, and the length of its path, which is
 *          the head of its first file's name.
 *
 * So a tree costs 4 bytes a file and 24 a directory beside the catalog;
 * lookup is a binary search within the parent's range, readdir walks the
 * range and steps over each subdirectory's at once, and neither asks S3.
 * Nodes: [0, ndirs) are the directories (0: the channel's own), ndirs + i
 * is file i.
 *
 * Left out, counted and logged once: keys with an empty, "." or ".."
 * component, or one longer than NAME_MAX, or holding a newline (the order
 * file is one name a line), duplicates (a manifest may name a key twice),
 * and a file whose name is also a directory's (the directory wins).
 * Folder markers (keys ending in '/') make no file; a directory exists
 * while files are under it.
 *
 * A file is read through a stream of its object alone and a random reader
 * (cache_reader_create_random): any offset, the window only for a reader
 * going forward.  The blocks are the cache's, keyed by object, so Pipe
 * channels over the same objects share them.
 *
 * The order file of epoch N lists the files in the order a sampler will
 * ask for them: name order, shuffled as Pipe epochs are (channel_shuffle()
 * with the seed and N) when the channel has a seed.  Taking it makes the
 * tree follow that order: an open of the file at position p (within reach
 * of the prefetched window) moves the frontier to p + 1, and the files
 * after the frontier are prefetched whole (cache_object_prefetch()) until
 * a quarter of the budget is ahead.  A first open far into the order (a
 * sampler resumed at line K) moves the following there, and gives up
 * what it prefetched before.  Opens that keep landing far from the
 * window stop the following: a reader that does not follow loses the
 * prefetch and nothing else.  A file the order prefetched that no open
 * took is given up (cache_object_release()) once the frontier has gone
 * as many bytes past it as the window holds ahead (room for workers a
 * little behind), so that what a sampler skipped neither stays unread in
 * the budget nor holds later prefetches back; a worker that opens it
 * later still finds whatever memory has not reused.
 *
 * Locking: the index never changes; tree->lock guards the order followed
 * and the counters.  No cache call is made under it.
 */
#include "config.h"

#include "channel/internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cache/catalog.h"
#include "util/util.h"

#define NAME_BYTES_MAX 255 /* NAME_MAX: a component longer is left out */
/* files one top-up of the followed order prefetches before it looks
 * again */
#define FOLLOW_BATCH 64
/* opens in a row beyond the window that stop the following */
#define FOLLOW_STRAYS_MAX 32

struct tree_dir {
	uint64_t parent;   /* a directory node; the root's is itself */
	uint32_t lo, hi;   /* files[lo, hi): everything under it */
	uint32_t path_len; /* its path: the head of files[lo]'s name */
	uint32_t depth;	   /* the root's is 0 */
};

/* The order followed: the latest order file taken. */
struct tree_follow {
	bool active;
	unsigned epoch;
	uint32_t *order;       /* file numbers in the epoch's order */
	uint32_t *position;    /* each file's place in order */
	size_t frontier;       /* one past the furthest position opened */
	size_t next;	       /* the next position to prefetch */
	size_t released;       /* positions below it were given up or opened */
	uint64_t behind;       /* bytes of order[released, frontier) */
	unsigned char *opened; /* a bit a position: taken by an open */
	uint64_t ahead;	       /* bytes of order[frontier, next) */
	unsigned strays;       /* opens in a row beyond the window */
	bool followed;	       /* an open followed (moved the frontier) */
};

struct channel_tree {
	struct cache *cache;
	const struct cache_catalog *cat;
	const struct channel_spec *spec;
	uint32_t *files; /* catalog entries, in name order */
	size_t nfiles;
	uint64_t order_bytes; /* an order file's size (every epoch's) */
	struct tree_dir *dirs;
	size_t ndirs, dirs_cap;
	pthread_mutex_t lock;
	struct tree_follow follow;
	struct channel_tree_stats stats;
};

static const char *file_name(const struct channel_tree *t, size_t i)
{
	return cache_catalog_name(t->cat, t->files[i]);
}

static uint64_t file_size(const struct channel_tree *t, size_t i)
{
	return cache_catalog_size(t->cat, t->files[i]);
}

static const char *dir_path(const struct channel_tree *t,
			    const struct tree_dir *d)
{
	return d->lo < t->nfiles ? file_name(t, d->lo) : "";
}

/* ---- building the index ---- */

/* Whether name can be a path of the tree: components of 1 to NAME_MAX
 * bytes, none "." or "..", no newline. */
static bool name_valid(const char *name)
{
	const char *c = name;

	for (;;) {
		const char *slash = strchr(c, '/');
		size_t len = slash ? (size_t)(slash - c) : strlen(c);

		if (len == 0 || len > NAME_BYTES_MAX ||
		    (c[0] == '.' && (len == 1 || (len == 2 && c[1] == '.'))) ||
		    memchr(c, '\n', len))
			return false;
		if (!slash)
			return true;
		c = slash + 1;
	}
}

static int compare_names(const void *a, const void *b, void *arg)
{
	const struct cache_catalog *cat = arg;

	return strcmp(cache_catalog_name(cat, *(const uint32_t *)a),
		      cache_catalog_name(cat, *(const uint32_t *)b));
}

/*
 * name against the string path[0, len): <0, 0 or >0 as strcmp would say
 * (path holds no NUL).
 */
static int compare_path(const char *name, const char *path, size_t len)
{
	int c = strncmp(name, path, len);

	return c ? c : (name[len] != '\0');
}

/* The first file in [lo, hi) whose name is not below path[0, len). */
static size_t find_first(const struct channel_tree *t, size_t lo, size_t hi,
			 const char *path, size_t len)
{
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (compare_path(file_name(t, mid), path, len) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The directory whose first file is lo and whose depth is depth; ndirs
 * when none (directories are made in the order of their first files). */
static size_t dir_at(const struct channel_tree *t, size_t lo, uint32_t depth)
{
	size_t a = 0, b = t->ndirs;

	while (a < b) {
		size_t mid = a + (b - a) / 2;

		if (t->dirs[mid].lo < lo)
			a = mid + 1;
		else
			b = mid;
	}
	for (; a < t->ndirs && t->dirs[a].lo == lo; a++)
		if (t->dirs[a].depth == depth)
			return a;
	return t->ndirs;
}

static int dir_add(struct channel_tree *t, uint64_t parent, size_t lo,
		   size_t path_len, uint32_t depth)
{
	if (t->ndirs == t->dirs_cap) {
		size_t cap = t->dirs_cap ? t->dirs_cap * 2 : 64;
		struct tree_dir *d = realloc(t->dirs, cap * sizeof(*d));

		if (!d)
			return ENOMEM;
		t->dirs = d;
		t->dirs_cap = cap;
	}
	t->dirs[t->ndirs++] = (struct tree_dir){
	    .parent = parent,
	    .lo = (uint32_t)lo,
	    .hi = (uint32_t)t->nfiles,
	    .path_len = (uint32_t)path_len,
	    .depth = depth,
	};
	return 0;
}

/* Whether name lies under directory d. */
static bool under(const struct channel_tree *t, const struct tree_dir *d,
		  const char *name)
{
	return d->path_len == 0 ||
	       (strncmp(name, dir_path(t, d), d->path_len) == 0 &&
		name[d->path_len] == '/');
}

/* The directories, from the sorted files, in one walk with a stack of the
 * directories the current name is under. */
static int dirs_build(struct channel_tree *t)
{
	/* a key of CACHE_KEY_MAX bytes has at most half as many levels */
	uint64_t stack[CACHE_KEY_MAX / 2 + 2];
	size_t depth = 1;

	t->ndirs = 0;
	if (dir_add(t, 0, 0, 0, 0))
		return ENOMEM;
	stack[0] = 0;
	for (size_t i = 0; i < t->nfiles; i++) {
		const char *name = file_name(t, i);
		struct tree_dir *top;
		const char *slash;

		while (depth > 1 && !under(t, &t->dirs[stack[depth - 1]], name))
			t->dirs[stack[--depth]].hi = (uint32_t)i;
		top = &t->dirs[stack[depth - 1]];
		slash = name + (top->path_len ? top->path_len + 1 : 0);
		while ((slash = strchr(slash, '/')) != NULL) {
			if (dir_add(t, stack[depth - 1], i,
				    (size_t)(slash - name), (uint32_t)depth))
				return ENOMEM;
			stack[depth++] = t->ndirs - 1;
			slash++;
		}
	}
	while (depth > 1)
		t->dirs[stack[--depth]].hi = (uint32_t)t->nfiles;
	return 0;
}

/* The file whose name is directory k's path (which it shadows), or
 * nfiles when none. */
static size_t shadowed_file(const struct channel_tree *t, size_t k)
{
	const struct tree_dir *d = &t->dirs[k];
	const struct tree_dir *p = &t->dirs[d->parent];
	size_t i = find_first(t, p->lo, d->lo, dir_path(t, d), d->path_len);

	return i < d->lo && compare_path(file_name(t, i), dir_path(t, d),
					 d->path_len) == 0
		   ? i
		   : t->nfiles;
}

/* Drops the files whose names are also directories' (the directory
 * wins): how many. */
static size_t drop_shadowed(struct channel_tree *t)
{
	size_t dropped = 0, out = 0;
	uint8_t *drop = NULL;

	for (size_t k = 1; k < t->ndirs; k++) {
		size_t i = shadowed_file(t, k);

		if (i == t->nfiles)
			continue;
		if (!drop && !(drop = calloc(t->nfiles, 1)))
			return 0; /* shown twice: better than failing */
		drop[i] = 1;
		dropped++;
	}
	if (!dropped)
		return 0;
	for (size_t i = 0; i < t->nfiles; i++)
		if (!drop[i])
			t->files[out++] = t->files[i];
	free(drop);
	t->nfiles = out;
	return dropped;
}

struct channel_tree *channel_tree_create(struct cache *cache,
					 const struct cache_catalog *cat,
					 const struct channel_spec *spec,
					 const struct channel_host *host,
					 char *err, size_t errlen)
{
	struct channel_tree *t = calloc(1, sizeof(*t));
	size_t count = cache_catalog_count(cat), n = 0, left_out = 0;
	bool sorted = true;

	if (!t)
		goto nomem;
	/* first: channel_tree_destroy() destroys it whatever fails after */
	pthread_mutex_init(&t->lock, NULL);
	t->files = malloc((count ? count : 1) * sizeof(uint32_t));
	if (!t->files)
		goto nomem;
	t->cache = cache;
	t->cat = cat;
	t->spec = spec;
	for (size_t pos = 0; pos < count; pos++) {
		uint32_t e = cache_catalog_at(cat, pos);
		const char *name = cache_catalog_name(cat, e);
		size_t len = strlen(name);

		if (len == 0 || name[len - 1] == '/')
			continue; /* the prefix itself, or a folder marker */
		if (!name_valid(name)) {
			left_out++;
			continue;
		}
		if (n && sorted &&
		    strcmp(cache_catalog_name(cat, t->files[n - 1]), name) > 0)
			sorted = false;
		t->files[n++] = e;
	}
	/* S3 lists in UTF-8 byte order; other servers may not */
	if (!sorted)
		qsort_r(t->files, n, sizeof(uint32_t), compare_names,
			(void *)cat);
	t->nfiles = 0;
	for (size_t i = 0; i < n; i++) {
		if (t->nfiles &&
		    strcmp(cache_catalog_name(cat, t->files[t->nfiles - 1]),
			   cache_catalog_name(cat, t->files[i])) == 0) {
			left_out++; /* named twice */
			continue;
		}
		t->files[t->nfiles++] = t->files[i];
	}
	if (spec->distribution == CHANNEL_SHARDED_BY_S3_KEY &&
	    host->count > 1) {
		size_t kept = 0;

		for (size_t i = host->index; i < t->nfiles; i += host->count)
			t->files[kept++] = t->files[i];
		t->nfiles = kept;
	}
	if (dirs_build(t))
		goto nomem;
	n = drop_shadowed(t);
	if (n) {
		left_out += n;
		if (dirs_build(t))
			goto nomem;
	}
	if (left_out)
		util_warn("channel '%s': %zu keys are not shown as files: a "
			  "name with an empty, \".\" or \"..\" part, a part "
			  "longer than 255 bytes or a newline, a name given "
			  "twice, or a file's name that is also a folder's",
			  spec->name, left_out);
	for (size_t i = 0; i < t->nfiles; i++)
		t->order_bytes += strlen(file_name(t, i)) + 1;
	util_info("channel '%s': %zu files in %zu folders", spec->name,
		  t->nfiles, t->ndirs);
	return t;

nomem:
	channel_tree_destroy(t);
	util_fail(err, errlen, ENOMEM, "out of memory");
	errno = ENOMEM;
	return NULL;
}

void channel_tree_destroy(struct channel_tree *t)
{
	if (!t)
		return;
	free(t->follow.order);
	free(t->follow.position);
	free(t->follow.opened);
	free(t->files);
	free(t->dirs);
	pthread_mutex_destroy(&t->lock);
	free(t);
}

uint64_t channel_tree_memory(const struct channel_tree *t)
{
	return t->nfiles * sizeof(uint32_t) + t->dirs_cap * sizeof(*t->dirs) +
	       (t->follow.order
		    ? 2 * t->nfiles * sizeof(uint32_t) + t->nfiles / 8 + 1
		    : 0);
}

/* ---- the namespace ---- */

int channel_tree_lookup(const struct channel_tree *t, uint64_t dir,
			const char *name, uint64_t *node)
{
	char path[CACHE_KEY_MAX + NAME_BYTES_MAX + 2];
	const struct tree_dir *d;
	size_t len = strlen(name), plen, i, k;

	if (dir >= t->ndirs)
		return ENOTDIR;
	d = &t->dirs[dir];
	if (len == 0 || len > NAME_BYTES_MAX || strchr(name, '/') ||
	    d->path_len + 1 + len > CACHE_KEY_MAX)
		return ENOENT;
	plen = d->path_len;
	memcpy(path, dir_path(t, d), plen);
	if (plen)
		path[plen++] = '/';
	memcpy(path + plen, name, len);
	plen += len;
	i = find_first(t, d->lo, d->hi, path, plen);
	if (i < d->hi && compare_path(file_name(t, i), path, plen) == 0) {
		*node = t->ndirs + i;
		return 0;
	}
	path[plen++] = '/';
	i = find_first(t, i, d->hi, path, plen);
	if (i < d->hi && strncmp(file_name(t, i), path, plen) == 0) {
		k = dir_at(t, i, d->depth + 1);
		if (k < t->ndirs) {
			*node = k;
			return 0;
		}
	}
	return ENOENT;
}

int channel_tree_attr(const struct channel_tree *t, uint64_t node,
		      struct channel_tree_attr *out)
{
	memset(out, 0, sizeof(*out));
	if (node < t->ndirs) {
		out->dir = true;
		out->parent = t->dirs[node].parent;
		return 0;
	}
	if (node - t->ndirs >= t->nfiles)
		return ENOENT;
	out->size = file_size(t, node - t->ndirs);
	out->mtime = cache_catalog_mtime(t->cat, t->files[node - t->ndirs]);
	return 0;
}

int channel_tree_list(const struct channel_tree *t, uint64_t dir,
		      uint64_t cookie, channel_tree_emit_fn *emit, void *arg)
{
	const struct tree_dir *d;
	size_t skip, i;

	if (dir >= t->ndirs)
		return ENOTDIR;
	d = &t->dirs[dir];
	skip = d->path_len ? d->path_len + 1 : 0;
	i = cookie < d->hi - d->lo ? d->lo + cookie : d->hi;
	while (i < d->hi) {
		const char *name = file_name(t, i) + skip;
		const char *slash = strchr(name, '/');
		size_t k;

		if (!slash) {
			if (!emit(arg, name, strlen(name), t->ndirs + i,
				  i + 1 - d->lo))
				return 0;
			i++;
			continue;
		}
		k = dir_at(t, i, d->depth + 1);
		if (k == t->ndirs)
			return EIO; /* (not reached: the walk made it) */
		if (!emit(arg, name, (size_t)(slash - name), k,
			  t->dirs[k].hi - d->lo))
			return 0;
		i = t->dirs[k].hi;
	}
	return 0;
}

size_t channel_tree_files(const struct channel_tree *t)
{
	return t->nfiles;
}

uint64_t channel_tree_order_size(const struct channel_tree *t)
{
	return t->order_bytes;
}

void channel_tree_get_stats(struct channel_tree *t,
			    struct channel_tree_stats *out)
{
	pthread_mutex_lock(&t->lock);
	*out = t->stats;
	pthread_mutex_unlock(&t->lock);
}

/* ---- the order followed ---- */

/* Bytes the followed order keeps prefetched ahead of its frontier. */
static uint64_t follow_window(const struct channel_tree *t)
{
	return cache_budget(t->cache) / 4;
}

/*
 * Prefetches the files of the followed order from its next position on
 * until the window is full, a batch at a time (no lock held).  A file the
 * budget has no room for now, and those after it, are tried again at the
 * next open.
 */
static void follow_top_up(struct channel_tree *t)
{
	struct tree_follow *f = &t->follow;
	uint32_t batch[FOLLOW_BATCH];

	for (;;) {
		size_t from, n = 0, k;
		unsigned epoch;

		pthread_mutex_lock(&t->lock);
		from = f->next;
		epoch = f->epoch;
		while (f->active && f->next < t->nfiles &&
		       f->ahead < follow_window(t) && n < FOLLOW_BATCH) {
			uint32_t file = f->order[f->next++];

			batch[n++] = file;
			f->ahead += file_size(t, file);
		}
		pthread_mutex_unlock(&t->lock);
		if (!n)
			return;
		for (k = 0; k < n; k++) {
			struct cache_object *obj = cache_catalog_object(
			    t->cache, t->cat, t->files[batch[k]]);
			bool covered =
			    obj && cache_object_prefetch(t->cache, obj);

			cache_object_put(t->cache, obj);
			if (!covered)
				break;
		}
		pthread_mutex_lock(&t->lock);
		t->stats.prefetched += k;
		if (k < n && f->active && f->epoch == epoch &&
		    f->next == from + n) {
			for (size_t j = k; j < n; j++)
				f->ahead -= file_size(t, batch[j]);
			f->next = from + k;
		}
		pthread_mutex_unlock(&t->lock);
		if (k < n)
			return;
	}
}

/* Gives up the files gone[0..n) the order prefetched and no open took
 * (no lock held). */
static void follow_release(struct channel_tree *t, const uint32_t *gone,
			   size_t n)
{
	for (size_t k = 0; k < n; k++) {
		struct cache_object *obj =
		    cache_catalog_object(t->cache, t->cat, t->files[gone[k]]);

		if (obj)
			cache_object_release(t->cache, obj);
		cache_object_put(t->cache, obj);
	}
	if (!n)
		return;
	pthread_mutex_lock(&t->lock);
	t->stats.released += n;
	pthread_mutex_unlock(&t->lock);
}

/* The files further behind the frontier than a window that no open
 * took, into gone[] (at most FOLLOW_BATCH; lock held): how many. */
static size_t follow_passed(struct channel_tree *t, uint32_t *gone)
{
	struct tree_follow *f = &t->follow;
	size_t n = 0;

	while (f->released < f->frontier && f->behind > follow_window(t) &&
	       n < FOLLOW_BATCH) {
		size_t q = f->released++;

		f->behind -= file_size(t, f->order[q]);
		if (!(f->opened[q / 8] & 1u << q % 8))
			gone[n++] = f->order[q];
	}
	return n;
}

/*
 * The first open lands at position p, far beyond what the order
 * prefetched: a sampler that resumed there (a job restarted from a
 * checkpoint).  The following goes on from p, and the files prefetched
 * before it, which no open will take, are given up: *skipped (malloc'd,
 * *nskipped of them; lock held).
 */
static void follow_jump(struct channel_tree *t, size_t p, uint32_t **skipped,
			size_t *nskipped)
{
	struct tree_follow *f = &t->follow;
	size_t n = f->next - f->released;

	*skipped = n ? malloc(n * sizeof(**skipped)) : NULL;
	if (*skipped) {
		memcpy(*skipped, f->order + f->released, n * sizeof(**skipped));
		*nskipped = n;
	}
	util_info("channel '%s': the first open is at position %zu of epoch "
		  "%u's order: its prefetch goes on from there",
		  t->spec->name, p, f->epoch);
	f->released = p;
	f->behind = file_size(t, f->order[p]);
	f->frontier = f->next = p + 1;
	f->ahead = 0;
}

/* File i was opened: the frontier moves when the open follows the order,
 * and the files it went far past that no open took go to gone[] (*ngone
 * of them, at most FOLLOW_BATCH), or to *skipped when the first open
 * jumps ahead (follow_jump; lock held); true when there may be more to
 * prefetch. */
static bool follow_opened(struct channel_tree *t, size_t i, uint32_t *gone,
			  size_t *ngone, uint32_t **skipped, size_t *nskipped)
{
	struct tree_follow *f = &t->follow;
	size_t p;

	*ngone = *nskipped = 0;
	*skipped = NULL;
	if (!f->active)
		return false;
	p = f->position[i];
	f->opened[p / 8] |= (unsigned char)(1u << p % 8);
	if (p < f->next)
		t->stats.opens_prefetched++;
	if (p < f->frontier)
		return false; /* a worker a little behind */
	if (p >= f->next + FOLLOW_BATCH && !f->followed) {
		follow_jump(t, p, skipped, nskipped);
		f->followed = true;
		return true;
	}
	if (p >= f->next + FOLLOW_BATCH) {
		/* beyond anything prefetched: not following (yet) */
		if (++f->strays >= FOLLOW_STRAYS_MAX) {
			f->active = false;
			util_info("channel '%s': opens do not follow the "
				  "order of epoch %u: its prefetch stops",
				  t->spec->name, f->epoch);
		}
		return false;
	}
	f->strays = 0;
	f->followed = true;
	for (size_t q = f->frontier; q <= p; q++) {
		if (q < f->next)
			f->ahead -= file_size(t, f->order[q]);
		f->behind += file_size(t, f->order[q]);
	}
	f->frontier = p + 1;
	if (f->next < f->frontier) {
		f->next = f->frontier;
		f->ahead = 0;
	}
	*ngone = follow_passed(t, gone);
	return true;
}

int channel_tree_order(struct channel_tree *t, unsigned epoch, char **text,
		       size_t *len)
{
	uint32_t *order = malloc((t->nfiles ? t->nfiles : 1) * sizeof(*order));
	uint32_t *position =
	    malloc((t->nfiles ? t->nfiles : 1) * sizeof(*position));
	unsigned char *opened = calloc(t->nfiles / 8 + 1, 1);
	size_t bytes = 0, at = 0;
	char *out = NULL;

	if (!order || !position || !opened)
		goto nomem;
	channel_order(order, t->nfiles, t->spec->shuffle, t->spec->seed, epoch);
	for (size_t i = 0; i < t->nfiles; i++) {
		position[order[i]] = (uint32_t)i;
		bytes += strlen(file_name(t, order[i])) + 1;
	}
	out = malloc(bytes + 1);
	if (!out)
		goto nomem;
	for (size_t i = 0; i < t->nfiles; i++) {
		const char *name = file_name(t, order[i]);
		size_t n = strlen(name);

		memcpy(out + at, name, n);
		at += n;
		out[at++] = '\n';
	}
	out[at] = '\0';
	pthread_mutex_lock(&t->lock);
	t->stats.orders++;
	if (t->follow.active && t->follow.epoch == epoch) {
		/* taken again (another reader of the same epoch): the
		 * following goes on where it is */
		pthread_mutex_unlock(&t->lock);
		free(order);
		free(position);
		free(opened);
		*text = out;
		*len = at;
		return 0;
	}
	free(t->follow.order);
	free(t->follow.position);
	free(t->follow.opened);
	t->follow = (struct tree_follow){
	    .active = true,
	    .epoch = epoch,
	    .order = order,
	    .position = position,
	    .opened = opened,
	};
	pthread_mutex_unlock(&t->lock);
	util_debug("channel '%s': following the order of epoch %u",
		   t->spec->name, epoch);
	follow_top_up(t);
	*text = out;
	*len = at;
	return 0;

nomem:
	free(order);
	free(position);
	free(opened);
	free(out);
	return ENOMEM;
}

/* ---- files ---- */

struct channel_file {
	struct channel_tree *tree;
	struct cache_stream *stream; /* the object alone */
	struct cache_reader *reader;
	uint64_t size;
};

struct channel_file *channel_file_open(struct channel_tree *t, uint64_t node)
{
	struct channel_file *f;
	struct cache_object *obj;
	uint32_t gone[FOLLOW_BATCH] = {0};
	uint32_t *skipped;
	size_t i, ngone, nskipped;
	bool more;

	if (node < t->ndirs || node - t->ndirs >= t->nfiles) {
		errno = node < t->ndirs ? EISDIR : ENOENT;
		return NULL;
	}
	i = node - t->ndirs;
	f = calloc(1, sizeof(*f));
	obj = f ? cache_catalog_object(t->cache, t->cat, t->files[i]) : NULL;
	if (!obj)
		goto nomem;
	f->tree = t;
	f->size = cache_object_size(obj);
	f->stream = cache_stream_create_plan(t->cache, NULL, NULL);
	if (!f->stream || cache_stream_add_object(f->stream, obj, 0, f->size))
		goto nomem;
	cache_stream_set_size(f->stream, f->size);
	cache_stream_end(f->stream, 0);
	f->reader = cache_reader_create_random(f->stream);
	if (!f->reader)
		goto nomem;
	cache_object_put(t->cache, obj);
	pthread_mutex_lock(&t->lock);
	t->stats.opens++;
	more = follow_opened(t, i, gone, &ngone, &skipped, &nskipped);
	pthread_mutex_unlock(&t->lock);
	follow_release(t, gone, ngone);
	follow_release(t, skipped, nskipped);
	free(skipped);
	if (more)
		follow_top_up(t);
	return f;

nomem:
	cache_object_put(t->cache, obj);
	channel_file_close(f);
	errno = ENOMEM;
	return NULL;
}

void channel_file_close(struct channel_file *f)
{
	if (!f)
		return;
	cache_reader_destroy(f->reader);
	cache_stream_destroy(f->stream);
	free(f);
}

uint64_t channel_file_size(const struct channel_file *f)
{
	return f->size;
}

int channel_file_read(struct channel_file *f, uint64_t offset, size_t size,
		      struct channel_file_view *view)
{
	struct cache *c = f->tree->cache;
	size_t want, got;
	int rc;

	view->iov = NULL;
	view->count = 0;
	view->bytes = 0;
	view->copy = NULL;
	view->cache.count = 0;
	view->cache.bytes = 0;
	if (offset >= f->size || size == 0)
		return 0;
	want = f->size - offset < size ? (size_t)(f->size - offset) : size;
	rc = cache_reader_read(f->reader, offset, want, &view->cache);
	if (rc || view->cache.bytes == want) {
		view->iov = view->cache.iov;
		view->count = view->cache.count;
		view->bytes = view->cache.bytes;
		return rc;
	}
	/* the budget could not pin it all at once: the rest is read after
	 * what came is copied out (a read short of the end would make the
	 * kernel think the file shorter) */
	view->copy = malloc(want);
	if (!view->copy)
		return ENOMEM;
	got = 0;
	for (;;) {
		for (int k = 0; k < view->cache.count; k++) {
			memcpy(view->copy + got, view->cache.iov[k].iov_base,
			       view->cache.iov[k].iov_len);
			got += view->cache.iov[k].iov_len;
		}
		cache_view_release(c, &view->cache);
		if (got == want)
			break;
		rc = cache_reader_read(f->reader, offset + got, want - got,
				       &view->cache);
		if (!rc && view->cache.bytes == 0)
			rc = EIO; /* shorter than listed */
		if (rc)
			return rc;
	}
	view->one.iov_base = view->copy;
	view->one.iov_len = got;
	view->iov = &view->one;
	view->count = 1;
	view->bytes = got;
	return 0;
}

void channel_file_view_release(struct channel_file *f,
			       struct channel_file_view *view)
{
	cache_view_release(f->tree->cache, &view->cache);
	free(view->copy);
	view->copy = NULL;
	view->count = 0;
	view->bytes = 0;
}
