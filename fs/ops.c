/*
 * fs operations: lookup, getattr, readdir, open, read, release, statfs.
 *
 * This is the only place that speaks FUSE and turns errors into replies.
 * Reads are answered with fuse_reply_iov() straight from pinned block
 * memory; the pins are dropped once the reply is written.  Channel files
 * are opened with direct I/O (so each read reaches us at the reader's size,
 * up to max_read) and, unless --seek emulate, as non-seekable: the kernel
 * then refuses lseek and pread with ESPIPE itself.
 *
 * While epoch N drains, epoch N+1's head is prefetched
 * (channel_prefetch_epoch): once a read comes within one prefetch window of N's
 * end, at its end, and when a handle on N is released (which makes N+1 appear),
 * unless
 * --epochs says N+1 will never exist.
 *
 * FS_STATS_FILE (fs/stats.c) has an inode of its own far above the channel
 * files'; lookup finds it, readdir never lists it, each open is a snapshot
 * served at any offset, and its handles are no epoch's (release makes no
 * file appear).  Reads count in the stats before they reply.
 *
 * A FastFile channel is a directory NAME/ (channel_tree(): lookup, getattr
 * and readdir come from its index, never from S3) whose files are opened
 * through the page cache (their bytes never change while mounted, so the
 * kernel keeps them, and mmap works) and read at any offset.  FS_ORDER_DIR
 * holds NAME_N, epoch N's order (channel_tree_order()), found by lookup and
 * never listed, each open a snapshot like the stats file.
 *
 * FS_RESUME_DIR holds NAME_N@record=K and NAME_N@byte=B (fs/resume.h),
 * found by lookup and never listed: a Pipe file's tail, read as the file
 * itself is from there (its offsets from 0), its inode a slot of the
 * resume table that FORGET frees.
 *
 * Inodes: 1 the root; 2 + epoch * nchannels + channel a Pipe channel's
 * file; top bits 010 a tree's node (channel in bits 48-53), top bits 001
 * an order file (channel in bits 32-37, the epoch below), top bits 011 a
 * resume file (its slot below); the stats file, FS_ORDER_DIR and
 * FS_RESUME_DIR just below UINT64_MAX.
 */
#include "config.h"

#include "fs/fs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs/keeper.h"
#include "fs/resume.h"
#include "util/util.h"

#define ROOT_INO       1
#define FIRST_FILE_INO 2
/* FS_STATS_FILE and FS_ORDER_DIR: far above any channel file's number */
#define STATS_INO      ((fuse_ino_t)UINT64_MAX - 1)
#define ORDER_DIR_INO  ((fuse_ino_t)UINT64_MAX - 2)
#define RESUME_DIR_INO ((fuse_ino_t)UINT64_MAX - 3)
/* the kind of an inode in its top three bits (below the two above) */
#define INO_KIND(ino)	 ((uint64_t)(ino) >> 61)
#define INO_KIND_TREE	 2u
#define INO_KIND_ORDER	 1u
#define INO_KIND_RESUME	 3u
#define TREE_NODE_BITS	 48
#define ORDER_EPOCH_BITS 32
/* how long the kernel may keep what never changes while mounted */
#define FOREVER 3600.0
/* the kernel's readahead for FastFile files, in KiB (readahead_raise) */
#define FS_READAHEAD_KB "1024"

struct fs_handle {
	struct channel_reader *reader; /* a Pipe channel's file, or */
	struct channel_file *file;     /* a FastFile channel's */
	struct fs_epoch_stats *stats;  /* what reads count in; may be NULL */
	unsigned channel;
	unsigned epoch;
	uint64_t start; /* the epoch's byte at the file's 0 (a resume file) */
	bool near_end; /* within a window of the end: prefetching the next epoch
			*/
	bool adopted;  /* made for another worker's handle, or a resume
			  file's: its first read places it, at whatever
			  offset */
	pthread_mutex_t lock; /* one read at a time per open file */
	/* in st->handles (under st->lock), for fs_close_handles() */
	struct fs_handle *prev, *next;
};

static void handle_link(struct fs_state *st, struct fs_handle *h)
{
	pthread_mutex_lock(&st->lock);
	h->prev = NULL;
	h->next = st->handles;
	if (st->handles)
		st->handles->prev = h;
	st->handles = h;
	pthread_mutex_unlock(&st->lock);
}

static void handle_unlink(struct fs_state *st, struct fs_handle *h)
{
	pthread_mutex_lock(&st->lock);
	if (h->prev)
		h->prev->next = h->next;
	else
		st->handles = h->next;
	if (h->next)
		h->next->prev = h->prev;
	pthread_mutex_unlock(&st->lock);
}

static void handle_free(struct fs_state *st, struct fs_handle *h)
{
	fs_stats_epoch_close(st->stats, h->stats);
	channel_reader_close(h->reader);
	channel_file_close(h->file);
	pthread_mutex_destroy(&h->lock);
	free(h);
}

/* A handle another worker made, as this one rebuilt it (fh_pointer). */
struct fs_adopted {
	uint64_t fh;
	void *handle;  /* an fs_handle, or */
	bool snapshot; /* an fs_snapshot (the stats, an order file) */
	struct fs_adopted *next;
};

void fs_close_handles(struct fs_state *st)
{
	while (st->adopted) {
		struct fs_adopted *a = st->adopted;

		st->adopted = a->next;
		if (a->snapshot)
			fs_snapshot_close(a->handle);
		free(a);
	}
	while (st->handles) {
		struct fs_handle *h = st->handles;

		handle_unlink(st, h);
		handle_free(st, h);
	}
}

static struct fs_state *state_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

/* A handle's number: the generation of the worker that made it (keeper.h)
 * above the pointer, which user space keeps below bit 48. */
#define FH_GENERATION_SHIFT 48
#define FH_POINTER_MASK	    (((uint64_t)1 << FH_GENERATION_SHIFT) - 1)

static uint64_t fh_make(const struct fs_state *st, const void *handle)
{
	return (uint64_t)keeper_generation(st->shared) << FH_GENERATION_SHIFT |
	       (uint64_t)(uintptr_t)handle;
}

static fuse_ino_t file_ino(const struct fs_state *st, unsigned ch,
			   unsigned epoch)
{
	return FIRST_FILE_INO + (fuse_ino_t)epoch * st->nchannels + ch;
}

static struct channel_tree *tree_of(const struct fs_state *st, unsigned ch)
{
	return channel_tree(st->channels[ch].channel);
}

static fuse_ino_t tree_ino(unsigned ch, uint64_t node)
{
	return ((fuse_ino_t)INO_KIND_TREE << 61) |
	       ((fuse_ino_t)ch << TREE_NODE_BITS) | node;
}

static fuse_ino_t order_ino(unsigned ch, unsigned epoch)
{
	return ((fuse_ino_t)INO_KIND_ORDER << 61) |
	       ((fuse_ino_t)ch << ORDER_EPOCH_BITS) | epoch;
}

/* An inode of kind (a tree's node, an order file): the channel (one of
 * the trees) and the number below it; false when ino is no such inode. */
static bool ino_split(const struct fs_state *st, fuse_ino_t ino, unsigned kind,
		      unsigned bits, unsigned *ch, uint64_t *number)
{
	uint64_t c;

	if (ino >= RESUME_DIR_INO || INO_KIND(ino) != kind)
		return false;
	c = (ino >> bits) & ((1u << (61 - bits)) - 1);
	if (c >= st->nchannels || !tree_of(st, (unsigned)c))
		return false;
	*ch = (unsigned)c;
	*number = ino & (((uint64_t)1 << bits) - 1);
	return true;
}

static bool ino_tree(const struct fs_state *st, fuse_ino_t ino, unsigned *ch,
		     uint64_t *node)
{
	return ino_split(st, ino, INO_KIND_TREE, TREE_NODE_BITS, ch, node);
}

static bool ino_order(const struct fs_state *st, fuse_ino_t ino, unsigned *ch,
		      unsigned *epoch)
{
	uint64_t n;

	if (!ino_split(st, ino, INO_KIND_ORDER, ORDER_EPOCH_BITS, ch, &n))
		return false;
	*epoch = (unsigned)n;
	return true;
}

/*
 * A resume file's inode: its slot, and above it the worker's generation
 * when the slots are the worker's own (a keeper from before the resume
 * files): the next worker's table is empty, and must not read another
 * worker's slot numbers as its own.
 */
#define RESUME_TAG_SHIFT 32
static uint64_t resume_tag(const struct fs_state *st)
{
	return st->shared && st->resume_files != &st->shared->resume_files
		   ? keeper_generation(st->shared)
		   : 0;
}

static fuse_ino_t resume_ino(const struct fs_state *st, int slot)
{
	return ((fuse_ino_t)INO_KIND_RESUME << 61) |
	       resume_tag(st) << RESUME_TAG_SHIFT | (fuse_ino_t)slot;
}

/* The slot number of a resume file's inode of this worker's table; false
 * when ino is no such inode. */
static bool resume_slot_of(const struct fs_state *st, fuse_ino_t ino,
			   uint64_t *slot)
{
	uint64_t low = ino & ~((uint64_t)7 << 61);

	if (ino >= RESUME_DIR_INO || INO_KIND(ino) != INO_KIND_RESUME ||
	    low >> RESUME_TAG_SHIFT != resume_tag(st))
		return false;
	*slot = low & (((uint64_t)1 << RESUME_TAG_SHIFT) - 1);
	return true;
}

/* A resume file's slot (a copy, under st->lock); false when ino is none
 * that the kernel holds. */
static bool ino_resume(struct fs_state *st, fuse_ino_t ino,
		       struct fs_resume_slot *out)
{
	struct fs_resume_slot *s = NULL;
	uint64_t slot;

	if (resume_slot_of(st, ino, &slot)) {
		pthread_mutex_lock(&st->lock);
		s = fs_resume_slot(st->resume_files, slot);
		if (s)
			*out = *s;
		pthread_mutex_unlock(&st->lock);
	}
	return s != NULL;
}

static bool epoch_visible(struct fs_state *st, unsigned ch, unsigned epoch)
{
	bool visible;

	pthread_mutex_lock(&st->lock);
	visible = epoch < st->channels[ch].visible;
	pthread_mutex_unlock(&st->lock);
	return visible;
}

/* Splits an inode into channel and epoch; false if it names no file that
 * is visible now. */
static bool ino_file(struct fs_state *st, fuse_ino_t ino, unsigned *ch,
		     unsigned *epoch)
{
	uint64_t n;

	if (ino < FIRST_FILE_INO || INO_KIND(ino) != 0)
		return false;
	n = ino - FIRST_FILE_INO;
	if (n / st->nchannels > UINT32_MAX)
		return false;
	*ch = (unsigned)(n % st->nchannels);
	*epoch = (unsigned)(n / st->nchannels);
	return epoch_visible(st, *ch, *epoch);
}

/* Parses "NAME_N" (NAME may itself contain '_'), for the channels of one
 * mode: Pipe files in the root, or FastFile order files. */
static bool name_file(struct fs_state *st, const char *name, bool tree,
		      unsigned *ch, unsigned *epoch)
{
	const char *us = strrchr(name, '_');
	uint64_t e;

	if (!us || us == name || us[1] == '\0')
		return false;
	if (us[1] == '0' && us[2] != '\0')
		return false; /* no leading zeros: one name per file */
	if (util_parse_uint(us + 1, 0, UINT32_MAX - 1, &e))
		return false;
	for (unsigned i = 0; i < st->nchannels; i++) {
		size_t len = strlen(st->channels[i].name);

		if (len == (size_t)(us - name) &&
		    memcmp(name, st->channels[i].name, len) == 0 &&
		    (tree_of(st, i) != NULL) == tree) {
			*ch = i;
			*epoch = (unsigned)e;
			return true;
		}
	}
	return false;
}

/* What every inode has: read-only, a regular file (1 MiB blocks) or a
 * directory, the mount's owner and time. */
static void node_attr(struct fs_state *st, fuse_ino_t ino, bool dir,
		      struct stat *stbuf)
{
	memset(stbuf, 0, sizeof(*stbuf));
	stbuf->st_ino = ino;
	stbuf->st_mode = dir ? S_IFDIR | 0555 : S_IFREG | 0444;
	stbuf->st_nlink = dir ? 2 : 1;
	stbuf->st_uid = st->uid;
	stbuf->st_gid = st->gid;
	if (!dir)
		stbuf->st_blksize = 1 << 20;
	stbuf->st_atim = stbuf->st_mtim = stbuf->st_ctim = st->mount_time;
}

static void base_attr(struct fs_state *st, fuse_ino_t ino, struct stat *stbuf)
{
	node_attr(st, ino,
		  ino == ROOT_INO || ino == ORDER_DIR_INO ||
		      ino == RESUME_DIR_INO,
		  stbuf);
}

/* An order file's: every epoch's is as long (reads are direct all the
 * same). */
static void order_attr(struct fs_state *st, unsigned ch, fuse_ino_t ino,
		       struct stat *stbuf)
{
	uint64_t size = channel_tree_order_size(tree_of(st, ch));

	base_attr(st, ino, stbuf);
	stbuf->st_size = (off_t)size;
	stbuf->st_blocks = (blkcnt_t)((size + 511) / 512);
}

/* Attributes of a tree's node (its file's size and time as listed): 0 or
 * ENOENT. */
static int tree_attr(struct fs_state *st, unsigned ch, uint64_t node,
		     struct stat *stbuf)
{
	struct channel_tree_attr a;

	if (channel_tree_attr(tree_of(st, ch), node, &a))
		return ENOENT;
	node_attr(st, tree_ino(ch, node), a.dir, stbuf);
	if (a.dir)
		return 0;
	stbuf->st_size = (off_t)a.size;
	stbuf->st_blocks = (blkcnt_t)((a.size + 511) / 512);
	if (a.mtime > 0) {
		stbuf->st_mtim.tv_sec = (time_t)a.mtime;
		stbuf->st_mtim.tv_nsec = 0;
		stbuf->st_ctim = stbuf->st_mtim;
	}
	return 0;
}

/* Attributes of a file; returns how long they may be cached. */
static double file_attr(struct fs_state *st, unsigned ch, unsigned epoch,
			struct stat *stbuf)
{
	uint64_t size = 0;
	bool complete =
	    channel_epoch_size(st->channels[ch].channel, epoch, &size);

	base_attr(st, file_ino(st, ch, epoch), stbuf);
	stbuf->st_size = (off_t)size;
	stbuf->st_blocks = (blkcnt_t)((size + 511) / 512);
	/* the size is 0 until the listing is complete: do not cache that */
	return complete ? FOREVER : 0.0;
}

/* A resume file's: its epoch's size from where it starts, when both are
 * known (reads are direct: a size of 0 reads all the same). */
static void resume_attr(struct fs_state *st, fuse_ino_t ino,
			const struct fs_resume_slot *r, struct stat *stbuf)
{
	uint64_t size = 0, start = r->by_record ? 0 : r->value + 1;

	if (r->start)
		start = r->start;
	base_attr(st, ino, stbuf);
	if (start && channel_epoch_size(st->channels[r->channel].channel,
					r->epoch, &size))
		size = size > start - 1 ? size - (start - 1) : 0;
	stbuf->st_size = (off_t)size;
	stbuf->st_blocks = (blkcnt_t)((size + 511) / 512);
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	conn->max_read = FS_MAX_READ; /* as the session args say */
	if (conn->max_write < (1u << 20))
		conn->max_write = 1 << 20;
	conn->want &= ~FUSE_CAP_SPLICE_READ;
}

/* A name in the root: the stats file, FS_ORDER_DIR, a FastFile channel's
 * directory, or a Pipe channel's visible epoch. */
static int root_lookup(struct fs_state *st, const char *name,
		       struct fuse_entry_param *e)
{
	unsigned ch, epoch;

	if (strcmp(name, FS_STATS_FILE) == 0) {
		e->ino = STATS_INO;
		base_attr(st, STATS_INO,
			  &e->attr); /* size 0: reads are direct */
		return 0;
	}
	if (strcmp(name, FS_ORDER_DIR) == 0) {
		e->ino = ORDER_DIR_INO;
		base_attr(st, ORDER_DIR_INO, &e->attr);
		return 0;
	}
	if (strcmp(name, FS_RESUME_DIR) == 0) {
		e->ino = RESUME_DIR_INO;
		base_attr(st, RESUME_DIR_INO, &e->attr);
		return 0;
	}
	for (ch = 0; ch < st->nchannels; ch++) {
		if (tree_of(st, ch) &&
		    strcmp(name, st->channels[ch].name) == 0) {
			e->ino = tree_ino(ch, 0);
			e->attr_timeout = e->entry_timeout = FOREVER;
			return tree_attr(st, ch, 0, &e->attr);
		}
	}
	if (!name_file(st, name, false, &ch, &epoch) ||
	    !epoch_visible(st, ch, epoch))
		return ENOENT;
	e->ino = file_ino(st, ch, epoch);
	e->attr_timeout = file_attr(st, ch, epoch, &e->attr);
	return 0;
}

/* NAME_N@record=K or NAME_N@byte=B in FS_RESUME_DIR: a slot taken for
 * it, for as long as the kernel holds the name (op_forget). */
static int resume_lookup(struct fs_state *st, const char *name,
			 struct fuse_entry_param *e)
{
	char file[CHANNEL_NAME_MAX + 16];
	struct fs_resume_slot r;
	unsigned ch, epoch, limit = st->opts->epochs;
	bool by_record;
	uint64_t value;
	size_t len = fs_resume_name(name, &by_record, &value);
	int slot;

	if (len == 0 || len >= sizeof(file))
		return ENOENT;
	memcpy(file, name, len);
	file[len] = '\0';
	/* a Pipe channel's epoch that may exist (--epochs) */
	if (!name_file(st, file, false, &ch, &epoch) ||
	    (limit && epoch >= limit))
		return ENOENT;
	pthread_mutex_lock(&st->lock);
	slot = fs_resume_take(st->resume_files, ch, epoch, by_record, value);
	if (slot >= 0)
		r = st->resume_files->slot[slot];
	pthread_mutex_unlock(&st->lock);
	if (slot < 0)
		return ENFILE; /* FS_RESUME_SLOTS names held already */
	e->ino = resume_ino(st, slot);
	resume_attr(st, e->ino, &r, &e->attr);
	e->entry_timeout = e->attr_timeout = 0.0;
	return 0;
}

static void op_forget_one(struct fs_state *st, fuse_ino_t ino, uint64_t nlookup)
{
	uint64_t slot;

	/* every other inode is derived: nothing to free */
	if (!resume_slot_of(st, ino, &slot))
		return;
	pthread_mutex_lock(&st->lock);
	fs_resume_forget(st->resume_files, slot, nlookup);
	pthread_mutex_unlock(&st->lock);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	op_forget_one(state_of(req), ino, nlookup);
	fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count,
			    struct fuse_forget_data *forgets)
{
	for (size_t i = 0; i < count; i++)
		op_forget_one(state_of(req), forgets[i].ino,
			      forgets[i].nlookup);
	fuse_reply_none(req);
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fs_state *st = state_of(req);
	struct fuse_entry_param e;
	unsigned ch, epoch;
	uint64_t node;
	int rc;

	memset(&e, 0, sizeof(e));
	e.entry_timeout = 1.0;
	if (parent == ROOT_INO) {
		rc = root_lookup(st, name, &e);
	} else if (parent == ORDER_DIR_INO) {
		rc = name_file(st, name, true, &ch, &epoch) ? 0 : ENOENT;
		if (!rc) {
			e.ino = order_ino(ch, epoch);
			order_attr(st, ch, e.ino, &e.attr);
			e.attr_timeout = e.entry_timeout = FOREVER;
		}
	} else if (parent == RESUME_DIR_INO) {
		rc = resume_lookup(st, name, &e);
	} else if (ino_tree(st, parent, &ch, &node)) {
		/* a name that is not there is known not to be, for good */
		e.entry_timeout = FOREVER;
		rc = channel_tree_lookup(tree_of(st, ch), node, name, &node);
		if (!rc) {
			e.ino = tree_ino(ch, node);
			e.attr_timeout = FOREVER;
			rc = tree_attr(st, ch, node, &e.attr);
		}
		if (rc == ENOENT) {
			/* a negative entry: the kernel asks no more */
			e.ino = 0;
			rc = 0;
		}
	} else {
		rc = ENOTDIR;
	}
	if (rc)
		fuse_reply_err(req, rc);
	else if (fuse_reply_entry(req, &e) != 0 && parent == RESUME_DIR_INO)
		op_forget_one(st, e.ino, 1); /* the kernel never took it */
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct fs_state *st = state_of(req);
	struct stat stbuf;
	struct fs_resume_slot r;
	unsigned ch, epoch;
	uint64_t node;
	double timeout = 1.0;

	if (ino == ROOT_INO || ino == STATS_INO || ino == ORDER_DIR_INO ||
	    ino == RESUME_DIR_INO) {
		base_attr(st, ino, &stbuf);
	} else if (ino_resume(st, ino, &r)) {
		resume_attr(st, ino, &r, &stbuf);
		timeout = 0.0;
	} else if (ino_order(st, ino, &ch, &epoch)) {
		order_attr(st, ch, ino, &stbuf);
		timeout = FOREVER;
	} else if (ino_tree(st, ino, &ch, &node)) {
		if (tree_attr(st, ch, node, &stbuf)) {
			fuse_reply_err(req, ENOENT);
			return;
		}
		timeout = FOREVER;
	} else if (ino_file(st, ino, &ch, &epoch)) {
		timeout = file_attr(st, ch, epoch, &stbuf);
	} else {
		fuse_reply_err(req, ENOENT);
		return;
	}
	fuse_reply_attr(req, &stbuf, timeout);
}

/* Appends one entry to a readdir reply; false when the buffer is full. */
static bool add_dirent(fuse_req_t req, char *buf, size_t size, size_t *used,
		       const char *name, fuse_ino_t ino, mode_t mode,
		       off_t next)
{
	struct stat stbuf;
	size_t n;

	memset(&stbuf, 0, sizeof(stbuf));
	stbuf.st_ino = ino;
	stbuf.st_mode = mode;
	n = fuse_add_direntry(req, buf + *used, size - *used, name, &stbuf,
			      next);
	if (n > size - *used)
		return false;
	*used += n;
	return true;
}

/* A directory reply being filled. */
struct dir_reply {
	fuse_req_t req;
	char *buf;
	size_t size, used;
	unsigned ch;  /* a tree's */
	off_t offset; /* a tree's entries: cookie + offset */
};

/* A tree's entry into the reply (channel_tree_emit_fn). */
static bool emit_tree_entry(void *arg, const char *name, size_t len,
			    uint64_t node, uint64_t next)
{
	struct dir_reply *d = arg;
	struct fs_state *st = state_of(d->req);
	struct channel_tree_attr a;
	char buf[256];

	if (len >= sizeof(buf))
		return true; /* (not reached: the tree leaves those out) */
	memcpy(buf, name, len);
	buf[len] = '\0';
	if (channel_tree_attr(tree_of(st, d->ch), node, &a))
		return true;
	return add_dirent(d->req, d->buf, d->size, &d->used, buf,
			  tree_ino(d->ch, node), a.dir ? S_IFDIR : S_IFREG,
			  (off_t)next + d->offset);
}

/*
 * Entries in a fixed order, entry i at offset i + 1: ".", "..", then the
 * FastFile channels' directories, then every visible Pipe file, epoch by
 * epoch, channel by channel.  Files only ever get added at the end of
 * that order, so offsets stay valid between calls.  A tree's directory:
 * ".", "..", then its entries, whose offsets are their cookies + 2.
 * FS_ORDER_DIR lists nothing: its files are found by name.
 */
static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	struct fs_state *st = state_of(req);
	unsigned max_visible = 0, ch;
	char name[FS_CHANNEL_NAME_MAX + 16];
	struct dir_reply d = {.req = req, .size = size, .offset = 2};
	fuse_ino_t parent = ROOT_INO;
	off_t index = 2;
	uint64_t node = 0;
	bool tree = false;

	if (ino_tree(st, ino, &ch, &node)) {
		struct channel_tree_attr a;

		if (channel_tree_attr(tree_of(st, ch), node, &a) || !a.dir) {
			fuse_reply_err(req, ENOTDIR);
			return;
		}
		tree = true;
		d.ch = ch;
		if (node != a.parent)
			parent = tree_ino(ch, a.parent);
	} else if (ino != ROOT_INO && ino != ORDER_DIR_INO &&
		   ino != RESUME_DIR_INO) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	d.buf = malloc(size);
	if (!d.buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	if (off < 1 &&
	    !add_dirent(req, d.buf, size, &d.used, ".", ino, S_IFDIR, 1))
		goto reply;
	if (off < 2 &&
	    !add_dirent(req, d.buf, size, &d.used, "..", parent, S_IFDIR, 2))
		goto reply;
	if (tree) {
		channel_tree_list(tree_of(st, ch), node,
				  off > 2 ? (uint64_t)off - 2 : 0,
				  emit_tree_entry, &d);
		goto reply;
	}
	if (ino == ORDER_DIR_INO || ino == RESUME_DIR_INO)
		goto reply; /* found by name, never listed */
	for (ch = 0; ch < st->nchannels; ch++) {
		if (!tree_of(st, ch) || index++ < off)
			continue;
		if (!add_dirent(req, d.buf, size, &d.used,
				st->channels[ch].name, tree_ino(ch, 0), S_IFDIR,
				index))
			goto reply;
	}
	pthread_mutex_lock(&st->lock);
	for (ch = 0; ch < st->nchannels; ch++)
		if (st->channels[ch].visible > max_visible)
			max_visible = st->channels[ch].visible;
	for (unsigned epoch = 0; epoch < max_visible; epoch++) {
		for (ch = 0; ch < st->nchannels; ch++) {
			if (epoch >= st->channels[ch].visible)
				continue;
			if (index++ < off)
				continue;
			snprintf(name, sizeof(name), "%s_%u",
				 st->channels[ch].name, epoch);
			if (!add_dirent(req, d.buf, size, &d.used, name,
					file_ino(st, ch, epoch), S_IFREG,
					index))
				goto unlock;
		}
	}
unlock:
	pthread_mutex_unlock(&st->lock);
reply:
	fuse_reply_buf(req, d.buf, d.used);
	free(d.buf);
}

/*
 * An open of a snapshot file (the stats, an order): the text made now,
 * for this handle, or the error that stopped it (f NULL, errno).  Not an
 * epoch: it makes no file appear.
 */
static void snapshot_open(fuse_req_t req, struct fuse_file_info *fi,
			  struct fs_snapshot *f)
{
	if (!f) {
		fuse_reply_err(req, errno ? errno : ENOMEM);
		return;
	}
	fi->fh = fh_make(state_of(req), f);
	fi->direct_io = 1;
	fi->keep_cache = 0;
	fi->nonseekable = 0;
	if (fuse_reply_open(req, fi) != 0)
		fs_snapshot_close(f);
}

/* Epoch's order file of a tree channel: taking it starts the prefetch
 * along that order. */
static struct fs_snapshot *order_take(struct fs_state *st, unsigned ch,
				      unsigned epoch)
{
	char *text = NULL;
	size_t len = 0;
	int rc = channel_tree_order(tree_of(st, ch), epoch, &text, &len);

	if (rc) {
		errno = rc;
		return NULL;
	}
	util_debug("open %s/%s_%u", FS_ORDER_DIR, st->channels[ch].name, epoch);
	return fs_snapshot_take(text, len);
}

static void snapshot_read(fuse_req_t req, size_t size, off_t off,
			  struct fs_snapshot *f)
{
	size_t left;

	/* the reply is written with the lock held: the release that may
	 * follow at once waits for it (fs_snapshot_close) */
	pthread_mutex_lock(&f->lock);
	left = off < 0 || (uint64_t)off >= f->len ? 0 : f->len - (size_t)off;
	fuse_reply_buf(req, left ? f->data + off : NULL,
		       size < left ? size : left);
	pthread_mutex_unlock(&f->lock);
}

/* mountinfo's escaping of a path (octal for space, tab, newline and
 * backslash) into out: false when it does not fit. */
static bool mountinfo_escape(const char *path, char *out, size_t size)
{
	size_t n = 0;

	for (; *path; path++) {
		bool esc = strchr(" \t\n\\", *path) != NULL;

		if (n + (esc ? 4 : 1) >= size)
			return false;
		if (esc)
			n += (size_t)snprintf(out + n, size - n, "\\%03o",
					      (unsigned char)*path);
		else
			out[n++] = *path;
	}
	out[n] = '\0';
	return true;
}

/*
 * The kernel's readahead for the mount (its bdi's read_ahead_kb) raised to
 * FS_READAHEAD_KB, once, at the first open of a tree's file (the INIT
 * reply, which caps it at the 128 KiB default, is long done by then): a
 * file read in sequence then comes in reads of up to 1 MiB instead of
 * 128 KiB.  Random reads are not read ahead by the kernel either way.
 * Needs root; otherwise the default stays (logged at debug level).
 */
static void readahead_raise(struct fs_state *st)
{
	char want[PATH_MAX + 64], line[2 * PATH_MAX], path[128];
	unsigned major, minor;
	const char *real;
	bool done, found = false;
	FILE *f;
	int fd;

	pthread_mutex_lock(&st->lock);
	done = st->readahead_raised;
	st->readahead_raised = true;
	pthread_mutex_unlock(&st->lock);
	if (done)
		return;
	real = st->mountpoint_real;
	f = fopen("/proc/self/mountinfo", "r");
	if (real && f && mountinfo_escape(real, want, sizeof(want))) {
		/* "ID PARENT MAJOR:MINOR ROOT MOUNTPOINT ..." */
		while (!found && fgets(line, sizeof(line), f)) {
			char mp[sizeof(line)];

			found = sscanf(line, "%*u %*u %u:%u %*s %s", &major,
				       &minor, mp) == 3 &&
				strcmp(mp, want) == 0;
		}
	}
	if (f)
		fclose(f);
	if (!found)
		return;
	snprintf(path, sizeof(path), "/sys/class/bdi/%u:%u/read_ahead_kb",
		 major, minor);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, FS_READAHEAD_KB, strlen(FS_READAHEAD_KB)) < 0)
		util_debug("cannot raise %s: the kernel reads ahead 128 KiB",
			   path);
	if (fd >= 0)
		close(fd);
}

/* An open file's handle over what was just opened for it (a Pipe epoch's
 * reader, or a tree's file; NULL with errno when that failed), linked: NULL
 * and errno, what was opened closed. */
static struct fs_handle *handle_new(struct fs_state *st, unsigned ch,
				    unsigned epoch,
				    struct channel_reader *reader,
				    struct channel_file *file)
{
	struct fs_handle *h;

	if (!reader && !file) {
		if (!errno)
			errno = ENOMEM;
		return NULL;
	}
	h = calloc(1, sizeof(*h));
	if (!h) {
		channel_reader_close(reader);
		channel_file_close(file);
		errno = ENOMEM;
		return NULL;
	}
	h->reader = reader;
	h->file = file;
	h->channel = ch;
	h->epoch = epoch;
	if (reader)
		h->stats = fs_stats_epoch_open(st->stats, ch, epoch);
	pthread_mutex_init(&h->lock, NULL);
	handle_link(st, h);
	return h;
}

/* A tree's file's handle, its own reader: NULL and errno. */
static struct fs_handle *tree_handle(struct fs_state *st, unsigned ch,
				     uint64_t node)
{
	errno = 0;
	return handle_new(st, ch, 0, NULL,
			  channel_file_open(tree_of(st, ch), node));
}

/* An open of a tree's file, through the page cache (the bytes never
 * change while mounted). */
static void tree_open(fuse_req_t req, unsigned ch, uint64_t node,
		      struct fuse_file_info *fi)
{
	struct fs_state *st = state_of(req);
	struct fs_handle *h;

	readahead_raise(st);
	h = tree_handle(st, ch, node);
	if (!h) {
		fuse_reply_err(req, errno);
		return;
	}
	fi->fh = fh_make(st, h);
	fi->direct_io = 0;
	fi->keep_cache = 1;
	fi->nonseekable = 0;
	if (fuse_reply_open(req, fi) != 0) {
		handle_unlink(st, h);
		handle_free(st, h);
	}
}

/* A read's reply: EIO when it failed (rc), else its bytes, or the end of
 * the file when there are none. */
static void reply_read(fuse_req_t req, int rc, const struct iovec *iov,
		       int count)
{
	if (rc)
		fuse_reply_err(req, EIO);
	else if (count)
		fuse_reply_iov(req, iov, count);
	else
		fuse_reply_buf(req, NULL, 0);
}

static void tree_read(fuse_req_t req, struct fs_handle *h, size_t size,
		      off_t off)
{
	struct channel_file_view view;
	char msg[128];
	int rc;

	pthread_mutex_lock(&h->lock);
	rc = channel_file_read(h->file, off < 0 ? UINT64_MAX : (uint64_t)off,
			       size, &view);
	if (rc)
		util_debug("read of a file of channel '%s' at %lld: %s",
			   state_of(req)->channels[h->channel].name,
			   (long long)off, util_strerror(rc, msg, sizeof(msg)));
	reply_read(req, rc, view.iov, view.count);
	channel_file_view_release(h->file, &view);
	pthread_mutex_unlock(&h->lock);
}

/* A Pipe channel's epoch file's handle, its own reader: NULL and
 * errno. */
/* A handle on an epoch file whose first read is at offset. */
static struct fs_handle *pipe_handle(struct fs_state *st, unsigned ch,
				     unsigned epoch, uint64_t offset)
{
	errno = 0;
	return handle_new(
	    st, ch, epoch,
	    channel_reader_open_at(st->channels[ch].channel, epoch, offset),
	    NULL);
}

/* Epoch of channel ch is the current one (a resume file of it opened):
 * it is visible, and closing it makes the next appear. */
static void epoch_current(struct fs_state *st, unsigned ch, unsigned epoch)
{
	struct fs_channel *chan = &st->channels[ch];

	pthread_mutex_lock(&st->lock);
	if (chan->visible < epoch + 1)
		chan->visible = epoch + 1;
	if (st->shared)
		__atomic_store_n(&st->shared->visible[ch], chan->visible,
				 __ATOMIC_RELEASE);
	pthread_mutex_unlock(&st->lock);
}

/*
 * A resume file's handle, its reader at the file's offset (0 for an open;
 * a read's for another worker's handle): from the start its slot keeps,
 * else from record K (counted now, then kept in the slot) or byte B.
 * NULL and errno.
 */
static struct fs_handle *resume_handle(struct fs_state *st, fuse_ino_t ino,
				       uint64_t offset)
{
	struct fs_resume_slot r, *kept;
	struct channel *chan;
	struct channel_reader *reader;
	struct fs_handle *h;
	uint64_t start = 0, slot;

	if (!ino_resume(st, ino, &r)) {
		errno = ENOENT;
		return NULL;
	}
	chan = st->channels[r.channel].channel;
	errno = 0;
	if (r.start || !r.by_record) {
		start = r.start ? r.start - 1 : r.value;
		reader = channel_reader_open_from(
		    chan, r.epoch,
		    start + offset < start ? UINT64_MAX : start + offset);
	} else {
		reader =
		    channel_reader_open_record(chan, r.epoch, r.value, &start);
		if (reader && offset) {
			/* (a read of an open file: the open found its start) */
			channel_reader_close(reader);
			reader = NULL;
			errno = EIO;
		}
	}
	if (reader && !r.start) {
		pthread_mutex_lock(&st->lock);
		kept = resume_slot_of(st, ino, &slot)
			   ? fs_resume_slot(st->resume_files, slot)
			   : NULL;
		if (kept && kept->value == r.value &&
		    kept->by_record == r.by_record)
			kept->start = start + 1;
		pthread_mutex_unlock(&st->lock);
	}
	h = handle_new(st, r.channel, r.epoch, reader, NULL);
	if (h) {
		h->start = start;
		h->adopted = true; /* (a reader may start before start) */
	}
	return h;
}

/* A handle for ino as open would make it, for another worker's handle
 * whose next read is at offset: NULL and errno when ino names nothing
 * that can be open now. */
static void *handle_rebuild(struct fs_state *st, fuse_ino_t ino,
			    uint64_t offset, bool *snapshot)
{
	struct fs_handle *h;
	unsigned ch, epoch;
	uint64_t node;

	*snapshot = ino == STATS_INO || INO_KIND(ino) == INO_KIND_ORDER;
	if (ino == STATS_INO)
		return fs_stats_file_open(st->stats);
	if (ino_order(st, ino, &ch, &epoch))
		return order_take(st, ch, epoch);
	if (ino_tree(st, ino, &ch, &node))
		return tree_handle(st, ch, node);
	if (INO_KIND(ino) == INO_KIND_RESUME && ino < RESUME_DIR_INO)
		h = resume_handle(st, ino, offset);
	else if (ino_file(st, ino, &ch, &epoch))
		h = pipe_handle(st, ch, epoch, offset);
	else {
		errno = ENOENT;
		return NULL;
	}
	if (h)
		h->adopted = true;
	return h;
}

/* Closes what handle_rebuild() made. */
static void handle_drop(struct fs_state *st, void *handle, bool snapshot)
{
	if (snapshot) {
		fs_snapshot_close(handle);
		return;
	}
	handle_unlink(st, handle);
	handle_free(st, handle);
}

/*
 * What fh names (an fs_handle, or an fs_snapshot for the stats and the
 * order files): this worker's own, or one another worker made, as this
 * worker rebuilt it from ino (with rebuild, when not done yet, for a read
 * at offset).  Without rebuild (a release) an adopted handle is forgotten
 * and returned for the caller to close.  NULL and errno when there is
 * none.
 */
static void *fh_pointer(struct fs_state *st, fuse_ino_t ino, uint64_t fh,
			bool rebuild, uint64_t offset)
{
	struct fs_adopted **pp, *a = NULL;
	void *handle;
	bool snapshot;

	if (fh >> FH_GENERATION_SHIFT == keeper_generation(st->shared))
		return (void *)(uintptr_t)(fh & FH_POINTER_MASK);
	pthread_mutex_lock(&st->lock);
	for (pp = &st->adopted; *pp && (*pp)->fh != fh; pp = &(*pp)->next)
		;
	a = *pp;
	if (a && !rebuild)
		*pp = a->next;
	pthread_mutex_unlock(&st->lock);
	if (a) {
		handle = a->handle;
		if (!rebuild)
			free(a);
		return handle;
	}
	if (!rebuild) {
		errno = ENOENT;
		return NULL;
	}
	handle = handle_rebuild(st, ino, offset, &snapshot);
	a = handle ? malloc(sizeof(*a)) : NULL;
	if (!a) {
		int err = handle ? ENOMEM : errno;

		if (handle)
			handle_drop(st, handle, snapshot);
		errno = err;
		return NULL;
	}
	a->fh = fh;
	a->handle = handle;
	a->snapshot = snapshot;
	pthread_mutex_lock(&st->lock);
	/* another read of the same handle may have rebuilt it first */
	for (pp = &st->adopted; *pp && (*pp)->fh != fh; pp = &(*pp)->next)
		;
	if (*pp) {
		pthread_mutex_unlock(&st->lock);
		handle_drop(st, handle, snapshot);
		free(a);
		return fh_pointer(st, ino, fh, true, offset);
	}
	a->next = st->adopted;
	st->adopted = a;
	pthread_mutex_unlock(&st->lock);
	util_debug("a handle of inode %llu taken over from another worker",
		   (unsigned long long)ino);
	return handle;
}

/* A handle on channel ch's epoch was released: the next epoch appears
 * (unless --epochs forbids it), for this worker and the next. */
static void epoch_released(struct fs_state *st, unsigned ch, unsigned epoch)
{
	struct fs_channel *chan = &st->channels[ch];
	unsigned limit = st->opts->epochs;

	pthread_mutex_lock(&st->lock);
	if (epoch + 1 == chan->visible && (limit == 0 || chan->visible < limit))
		chan->visible++;
	if (st->shared)
		__atomic_store_n(&st->shared->visible[ch], chan->visible,
				 __ATOMIC_RELEASE);
	pthread_mutex_unlock(&st->lock);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	struct fs_state *st = state_of(req);
	struct fs_handle *h = NULL;
	unsigned ch, epoch;

	uint64_t node;

	if (ino == ROOT_INO || ino == ORDER_DIR_INO || ino == RESUME_DIR_INO) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	if ((fi->flags & O_ACCMODE) != O_RDONLY) {
		fuse_reply_err(req, EACCES);
		return;
	}
	if (ino == STATS_INO) {
		snapshot_open(req, fi, fs_stats_file_open(st->stats));
		return;
	}
	if (ino_order(st, ino, &ch, &epoch)) {
		snapshot_open(req, fi, order_take(st, ch, epoch));
		return;
	}
	if (ino_tree(st, ino, &ch, &node)) {
		tree_open(req, ch, node, fi);
		return;
	}
	if (INO_KIND(ino) == INO_KIND_RESUME && ino < RESUME_DIR_INO) {
		h = resume_handle(st, ino, 0);
		if (h)
			epoch_current(st, h->channel, h->epoch);
	} else if (ino_file(st, ino, &ch, &epoch)) {
		h = pipe_handle(st, ch, epoch, 0);
	} else {
		errno = ENOENT;
	}
	if (!h) {
		fuse_reply_err(req, errno ? errno : ENOMEM);
		return;
	}
	ch = h->channel;
	epoch = h->epoch;
	fi->fh = fh_make(st, h);
	fi->direct_io = 1;
	fi->keep_cache = 0;
	fi->nonseekable = st->opts->seek == FS_SEEK_REJECT;
	util_debug("open %s_%u", st->channels[ch].name, epoch);
	if (fuse_reply_open(req, fi) != 0) {
		handle_unlink(st, h);
		handle_free(st, h);
	}
}

static void warn_seek_once(struct fs_state *st, const struct fs_handle *h)
{
	pthread_mutex_lock(&st->lock);
	if (!st->seek_warned) {
		st->seek_warned = true;
		util_warn("a reader of %s_%u seeks: each seek restarts the "
			  "stream, which is slow (see --seek)",
			  st->channels[h->channel].name, h->epoch);
	}
	pthread_mutex_unlock(&st->lock);
}

/* Prefetches the epoch after epoch of channel ch, if --epochs lets it
 * exist. */
static void prefetch_next_epoch(struct fs_state *st, unsigned ch,
				unsigned epoch)
{
	unsigned limit = st->opts->epochs;

	if (epoch + 1 == 0 || (limit && epoch + 1 >= limit))
		return;
	channel_prefetch_epoch(st->channels[ch].channel, epoch + 1);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct fs_state *st = state_of(req);
	void *p = fh_pointer(st, ino, fi->fh, true, (uint64_t)off);
	struct fs_handle *h = p;
	struct channel_view view;
	char msg[128];
	int rc;

	if (!p) {
		fuse_reply_err(req, errno);
		return;
	}
	if (ino == STATS_INO || INO_KIND(ino) == INO_KIND_ORDER) {
		snapshot_read(req, size, off, p);
		return;
	}
	if (h->file) {
		tree_read(req, h, size, off);
		return;
	}
	if (h->start + (uint64_t)off < h->start) {
		/* past what a stream holds (a resume file far out) */
		fuse_reply_buf(req, NULL, 0);
		return;
	}
	pthread_mutex_lock(&h->lock);
	if (h->start + (uint64_t)off != channel_reader_position(h->reader) &&
	    !h->adopted) {
		if (st->opts->seek == FS_SEEK_REJECT) {
			pthread_mutex_unlock(&h->lock);
			fuse_reply_err(req, ESPIPE);
			return;
		}
		warn_seek_once(st, h);
	}
	h->adopted = false; /* its first read placed it */
	rc = channel_reader_read(h->reader, h->start + (uint64_t)off, size,
				 &view);
	/* counted before the reply: a reader that has its bytes sees them
	 * in the stats */
	if (rc)
		fs_stats_epoch_error(h->stats);
	else if (size)
		fs_stats_epoch_read(h->stats, h->start + (uint64_t)off,
				    view.bytes);
	if (rc)
		util_debug("read %s_%u at %lld: %s",
			   st->channels[h->channel].name, h->epoch,
			   (long long)off, util_strerror(rc, msg, sizeof(msg)));
	reply_read(req, rc, view.iov, view.count);
	/* The reply is written: the kernel may already be releasing the
	 * file, but op_release waits for h->lock before freeing h. */
	channel_view_release(h->reader, &view);
	if (!rc && (h->near_end || channel_reader_near_end(h->reader))) {
		h->near_end = true;
		prefetch_next_epoch(st, h->channel, h->epoch);
	}
	pthread_mutex_unlock(&h->lock);
}

static void op_release(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct fs_state *st = state_of(req);
	void *p = fh_pointer(st, ino, fi->fh, false, 0);
	struct fs_handle *h = p;
	struct fs_channel *chan;
	unsigned ch, epoch;

	if (!p) {
		/* another worker's handle this one never read: only what
		 * its release makes appear */
		struct fs_resume_slot r;

		if (ino_file(st, ino, &ch, &epoch))
			epoch_released(st, ch, epoch);
		else if (ino_resume(st, ino, &r))
			epoch_released(st, r.channel, r.epoch);
		fuse_reply_err(req, 0);
		return;
	}
	if (ino == STATS_INO || INO_KIND(ino) == INO_KIND_ORDER) {
		fs_snapshot_close(p);
		fuse_reply_err(req, 0);
		return;
	}
	if (h->file) {
		/* a read that has already replied may still hold the lock */
		pthread_mutex_lock(&h->lock);
		pthread_mutex_unlock(&h->lock);
		handle_unlink(st, h);
		handle_free(st, h);
		fuse_reply_err(req, 0);
		return;
	}
	chan = &st->channels[h->channel];
	epoch_released(st, h->channel, h->epoch);
	util_debug("release %s_%u", chan->name, h->epoch);
	/* a read that has already replied may still hold the lock */
	pthread_mutex_lock(&h->lock);
	pthread_mutex_unlock(&h->lock);
	handle_unlink(st, h);
	ch = h->channel;
	epoch = h->epoch;
	handle_free(st, h);
	fuse_reply_err(req, 0);
	/* after the reader gave up its window: what that holds of the next
	 * epoch's head is claimed back for it */
	prefetch_next_epoch(st, ch, epoch);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs sv;

	memset(&sv, 0, sizeof(sv));
	sv.f_bsize = 1 << 20;
	sv.f_frsize = 1 << 20;
	sv.f_namemax = 255;
	fuse_reply_statfs(req, &sv);
}

static const struct fuse_lowlevel_ops operations = {
    .init = op_init,
    .lookup = op_lookup,
    .forget = op_forget,
    .forget_multi = op_forget_multi,
    .getattr = op_getattr,
    .readdir = op_readdir,
    .open = op_open,
    .read = op_read,
    .release = op_release,
    .statfs = op_statfs,
};

const struct fuse_lowlevel_ops *fs_operations(void)
{
	return &operations;
}
