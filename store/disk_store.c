/*
 * disk store: the store (see store/disk.h) and its I/O threads.
 *
 * A GET the tier can keep (an ETag, whole blocks from a block boundary:
 * what the cache asks for, but for a small read's pieces, which pass on)
 * is looked up block by block.  If its first
 * block is on disk, the leading blocks that are go to the read queue
 * (pinned, so eviction leaves them alone) and an I/O thread reads each
 * straight into the caller's buffer, checks it and reports it; the rest of
 * the run, from the first block that is not on disk or fails its check,
 * goes on to the inner store as one GET.  Otherwise the whole GET goes on
 * at once, from the caller's thread.
 *
 * A GET passed on is wrapped (struct disk_fwd): as each buffer arrives on
 * the inner store's thread, a copy goes to the write queue, if the queue
 * has room (else the block is dropped: the engine never waits for the
 * disk) and the index admits it, before the caller hears of the buffer.
 * The I/O threads take reads before writes, evict to make room and write
 * (disk_file.c).  A write that fails for want of space pauses writing for
 * DISK_STORE_PAUSE_S seconds; a read-only directory stops it for good;
 * both are logged once.  Reads never fail because of the disk: a block
 * that cannot be read from it is asked of the inner store.
 *
 * Locks: d->lock guards the index, the queues, the flags and the counts.
 * It is never held while calling the caller's callbacks (which may call
 * store_get again, and take the cache's lock), nor during file I/O, nor while
 * calling into the inner store.  The cache calls get() without its own
 * lock (a miss goes on to the inner store from the caller's thread, and
 * that store may be slow to take it), and the callbacks into the cache
 * are made without d->lock: the two locks are never held together.
 */
#include "config.h"

#include "store/disk_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "util/util.h"

#define DISK_STORE_THREADS	2
#define DISK_STORE_THREADS_MAX	8
#define DISK_STORE_QUEUE_MIN	(32ULL << 20)
#define DISK_STORE_QUEUE_BLOCKS 4
#define DISK_STORE_PAUSE_S	30
#define NS_PER_S		1000000000ULL

/* A block waiting to be written. */
struct disk_write {
	struct disk_write *next;
	struct disk_store_key k; /* strings point into strs */
	char *data;		 /* a queue buffer */
	size_t len;
	uint64_t cost; /* counted in queued_cost until a worker takes it */
	char strs[];
};

/* A run whose leading blocks are on disk. */
struct disk_read {
	struct disk_read *next;
	struct store_get req; /* strings into strs, buffers into bufs */
	struct disk_store_key k;
	unsigned nhits; /* entries[0..nhits) pinned */
	struct disk_store_entry *entries[STORE_GET_BUFFERS_MAX];
	struct store_buffer bufs[STORE_GET_BUFFERS_MAX];
	char strs[];
};

/* A GET passed on to the inner store, as the caller's buffers from shift
 * on. */
struct disk_fwd {
	struct disk_store *d;
	struct disk_store_key k; /* k.index: block of bufs[0] */
	bool keep;		 /* copy what arrives to the write queue */
	unsigned shift;
	store_get_buffer_fn *buffer_done;
	store_get_done_fn *done;
	void *arg;
	unsigned n;
	struct store_buffer bufs[STORE_GET_BUFFERS_MAX];
	char strs[];
};

struct disk_store {
	struct store store; /* first: what the cache is given */
	struct store *inner;
	struct disk_store_conf conf; /* dir owned (a copy) */
	char *path;		     /* DIR/s3pipe, owned */
	int dirfd;		     /* -1 when there is none */
	int lockfd;
	pthread_mutex_t lock;
	pthread_cond_t work;
	struct disk_store_index ix;
	bool enabled;  /* false: everything passes through */
	bool writable; /* false: never writes (read-only DIR) */
	bool closing;
	bool full_logged, error_logged;
	uint64_t pause_until; /* no writes before (util_now_ns) */
	struct disk_read *reads, *reads_tail;
	struct disk_write *writes, *writes_tail;
	uint64_t queued; /* bytes of the queue buffers taken */
	/* what the queued writes will cost on disk: a worker that takes one
	 * reserves its cost instead, so no write is counted twice */
	uint64_t queued_cost;
	uint64_t queue_max;
	char **pool; /* free queue buffers of block_size bytes */
	size_t pool_count, pool_max;
	pthread_t threads[DISK_STORE_THREADS_MAX];
	unsigned nthreads;
	struct disk_store_stats stats;
};

static const struct store_ops disk_ops;

void disk_store_conf_init(struct disk_store_conf *conf)
{
	memset(conf, 0, sizeof(*conf));
}

uint64_t disk_store_min_size(uint64_t block_size)
{
	return DISK_STORE_MIN_BLOCKS * block_size;
}

/* Copies the strings of a key into strs (sized by strings_len()) and
 * points k at them. */
static size_t strings_len(const struct disk_store_key *k)
{
	return strlen(k->bucket) + strlen(k->key) + strlen(k->etag) + 3;
}

static void strings_copy(struct disk_store_key *k, char *strs)
{
	size_t lb = strlen(k->bucket) + 1, lk = strlen(k->key) + 1;

	memcpy(strs, k->bucket, lb);
	memcpy(strs + lb, k->key, lk);
	memcpy(strs + lb + lk, k->etag, strlen(k->etag) + 1);
	k->bucket = strs;
	k->key = strs + lb;
	k->etag = strs + lb + lk;
}

static uint64_t file_size_of(const struct disk_store_key *k, size_t len)
{
	return disk_store_header_len(k) + len;
}

/* Whether writes may be queued now (lock held). */
static bool writing(const struct disk_store *d)
{
	return d->enabled && d->writable && !d->closing &&
	       util_now_ns() >= d->pause_until;
}

/* ---- the write queue ---- */

/*
 * A buffer of len bytes for the queue: from the pool or new.  Large ones
 * are 2 MiB aligned and asked to be backed by huge pages, as the cache's
 * are: the engine thread that fills a new one then takes a fault per 2
 * MiB, not per 4 KiB.
 */
static char *queue_buffer(struct disk_store *d, size_t len)
{
	const size_t bs = (size_t)d->conf.block_size;
	const size_t huge = 2u << 20;
	void *p = NULL;

	pthread_mutex_lock(&d->lock);
	if (len > bs / 2 && d->pool_count)
		p = d->pool[--d->pool_count];
	pthread_mutex_unlock(&d->lock);
	if (p || len <= bs / 2 || bs < huge)
		return p ? p : malloc(len > bs / 2 ? bs : len);
	if (posix_memalign(&p, huge, bs) != 0)
		return NULL;
	madvise(p, bs, MADV_HUGEPAGE);
	return p;
}

/* Gives back a queue buffer of len bytes (lock held). */
static void queue_release(struct disk_store *d, char *p, size_t len)
{
	if (len > d->conf.block_size / 2 && d->pool_count < d->pool_max)
		d->pool[d->pool_count++] = p;
	else
		free(p);
	d->queued -= len;
}

/*
 * Inner store's thread: a copy of block k (data[0..len)) for the write
 * queue, if it is not on disk yet, the queue has room and the index lets
 * it in.
 */
static void queue_write(struct disk_store *d, const struct disk_store_key *k,
			const char *data, size_t len)
{
	uint64_t fsize = file_size_of(k, len);
	uint64_t cost;
	struct disk_store_entry *e;
	struct disk_write *w;
	bool take;

	pthread_mutex_lock(&d->lock);
	cost = disk_store_index_cost(&d->ix, fsize);
	e = disk_store_index_find(&d->ix, k->id, k->index);
	take = writing(d) && !(e && e->file_size == fsize);
	if (take && d->queued + len > d->queue_max) {
		d->stats.write_drops++;
		take = false;
	}
	take = take && disk_store_index_admit(&d->ix, cost, d->queued_cost);
	if (take) {
		d->queued += len;
		d->queued_cost += cost;
	}
	pthread_mutex_unlock(&d->lock);
	if (!take)
		return;
	w = malloc(sizeof(*w) + strings_len(k));
	if (w) {
		w->k = *k;
		strings_copy(&w->k, w->strs);
		w->len = len;
		w->cost = cost;
		w->next = NULL;
		w->data = queue_buffer(d, len);
	}
	if (w && w->data)
		memcpy(w->data, data, len);
	pthread_mutex_lock(&d->lock);
	if (!w || !w->data) {
		d->queued -= len;
		d->queued_cost -= cost;
		free(w);
	} else {
		if (d->writes_tail)
			d->writes_tail->next = w;
		else
			d->writes = w;
		d->writes_tail = w;
		pthread_cond_signal(&d->work);
	}
	pthread_mutex_unlock(&d->lock);
}

/* ---- GETs passed on ---- */

static void fwd_buffer_done(void *arg, unsigned index)
{
	struct disk_fwd *f = arg;

	if (f->keep) {
		struct disk_store_key k = f->k;

		k.index += index;
		queue_write(f->d, &k, f->bufs[index].dest, f->bufs[index].len);
	}
	if (f->buffer_done)
		f->buffer_done(f->arg, index + f->shift);
}

static void fwd_done(void *arg, const struct store_error *err)
{
	struct disk_fwd *f = arg;

	f->done(f->arg, err);
	free(f);
}

/*
 * Passes buffers [from, nbuffers) of req (block k->index of its object
 * at req->buffers[0]) on to the inner store as one GET.  0 or an errno
 * (then nothing runs).
 */
static int forward(struct disk_store *d, const struct store_get *req,
		   const struct disk_store_key *k, unsigned from)
{
	struct disk_fwd *f = malloc(sizeof(*f) + strings_len(k));
	struct store_get get = *req;
	bool keep;
	int rc;

	if (!f)
		return ENOMEM;
	pthread_mutex_lock(&d->lock);
	keep = writing(d);
	pthread_mutex_unlock(&d->lock);
	f->d = d;
	f->k = *k;
	f->k.index += from;
	strings_copy(&f->k, f->strs);
	f->keep = keep;
	f->shift = from;
	f->buffer_done = req->buffer_done;
	f->done = req->done;
	f->arg = req->arg;
	f->n = req->nbuffers - from;
	memcpy(f->bufs, req->buffers + from, f->n * sizeof(*f->bufs));
	get.offset = req->offset + from * d->conf.block_size;
	get.buffers = f->bufs;
	get.nbuffers = f->n;
	if (from)
		get.flags &= ~STORE_GET_WHOLE;
	get.buffer_done = fwd_buffer_done;
	get.done = fwd_done;
	get.arg = f;
	rc = store_get(d->inner, &get);
	if (rc)
		free(f);
	return rc;
}

/* ---- reads ---- */

static void error_of(struct store_error *e, int err)
{
	memset(e, 0, sizeof(*e));
	e->err = err;
	snprintf(e->message, sizeof(e->message), "disk tier");
}

/* Block i of r could not be read from disk (rc, why): out of the index,
 * the file removed when it is damaged; logged, unless it was just gone. */
static void read_failed(struct disk_store *d, struct disk_read *r, unsigned i,
			int rc, const char *why)
{
	char name[DISK_STORE_NAME_MAX], msg[128];
	bool remove_file;

	disk_store_file_name(r->k.id, r->k.index + i, name);
	pthread_mutex_lock(&d->lock);
	disk_store_index_remove(&d->ix, r->entries[i]);
	disk_store_index_unpin(&d->ix, r->entries[i]);
	if (rc != ENOENT)
		d->stats.bad_files++;
	remove_file = d->writable && (rc == EBADMSG || rc == EIO);
	pthread_mutex_unlock(&d->lock);
	if (rc == ENOENT)
		return;
	util_warn("disk tier: block file %s/%s %s (%s): %s, the block is "
		  "fetched again",
		  d->path, name,
		  rc == EBADMSG ? "is damaged" : "cannot be read",
		  rc == EBADMSG ? why : util_strerror(rc, msg, sizeof(msg)),
		  remove_file ? "removed" : "not used");
	if (remove_file)
		unlinkat(d->dirfd, name, 0);
}

/* An I/O thread: r's leading blocks from disk, then the rest from the
 * inner store; with cancel, only ECANCELED. */
static void do_read(struct disk_store *d, struct disk_read *r, bool cancel)
{
	struct store_error e;
	unsigned i = 0, next_pinned = 0;
	int rc = 0;

	for (; !cancel && i < r->nhits; i++) {
		struct disk_store_key k = r->k;
		const char *why = NULL;

		k.index += i;
		next_pinned = i + 1;
		rc = disk_store_block_read(d->dirfd, &k, r->bufs[i].dest,
					   r->bufs[i].len, &why);
		if (rc) {
			read_failed(d, r, i, rc, why);
			break;
		}
		pthread_mutex_lock(&d->lock);
		d->stats.hits++;
		d->stats.hit_bytes += r->bufs[i].len;
		disk_store_index_touch(&d->ix, r->entries[i]);
		disk_store_index_unpin(&d->ix, r->entries[i]);
		pthread_mutex_unlock(&d->lock);
		if (r->req.buffer_done)
			r->req.buffer_done(r->req.arg, i);
	}
	pthread_mutex_lock(&d->lock);
	for (unsigned j = next_pinned; j < r->nhits; j++)
		disk_store_index_unpin(&d->ix, r->entries[j]);
	if (!cancel)
		d->stats.misses += r->req.nbuffers - i;
	pthread_mutex_unlock(&d->lock);
	if (cancel) {
		error_of(&e, ECANCELED);
		r->req.done(r->req.arg, &e);
	} else if (i == r->req.nbuffers) {
		r->req.done(r->req.arg, NULL);
	} else {
		rc = forward(d, &r->req, &r->k, i);
		if (rc) {
			error_of(&e, rc);
			r->req.done(r->req.arg, &e);
		}
	}
	free(r);
}

/* ---- writes ---- */

/* A write of w failed with rc (lock held): pause, or stop for good. */
static void write_failed(struct disk_store *d, int rc)
{
	char msg[128];
	bool full, *logged;

	d->stats.write_errors++;
	if (rc == EROFS || rc == EACCES || rc == EPERM) {
		d->writable = false;
		util_warn("disk tier: cannot write in %s (%s): going on "
			  "without writing",
			  d->path, util_strerror(rc, msg, sizeof(msg)));
		return;
	}
	full = rc == ENOSPC || rc == EDQUOT;
	logged = full ? &d->full_logged : &d->error_logged;
	d->pause_until = util_now_ns() + DISK_STORE_PAUSE_S * NS_PER_S;
	if (!*logged)
		util_warn("disk tier: %s %s (%s): no writes for %d s, reads go "
			  "on from S3",
			  d->path, full ? "is full" : "cannot be written",
			  util_strerror(rc, msg, sizeof(msg)),
			  DISK_STORE_PAUSE_S);
	*logged = true; /* once each */
}

/*
 * Makes room for cost bytes and reserves them; false when it cannot (the
 * rest is pinned).  Each victim's cost stays reserved until its file is
 * gone, so the files on disk never pass the budget.
 */
static bool make_room(struct disk_store *d, uint64_t cost)
{
	for (;;) {
		struct disk_store_entry *v;
		char name[DISK_STORE_NAME_MAX];
		uint64_t vcost;

		pthread_mutex_lock(&d->lock);
		if (d->ix.used + d->ix.reserved + cost <= d->ix.size) {
			d->ix.reserved += cost;
			pthread_mutex_unlock(&d->lock);
			return true;
		}
		v = disk_store_index_victim(&d->ix);
		if (!v) {
			pthread_mutex_unlock(&d->lock);
			return false;
		}
		disk_store_file_name(v->id, v->index, name);
		vcost = v->cost;
		disk_store_index_remove(&d->ix, v);
		d->ix.reserved += vcost;
		d->stats.evictions++;
		pthread_mutex_unlock(&d->lock);
		unlinkat(d->dirfd, name, 0);
		pthread_mutex_lock(&d->lock);
		d->ix.reserved -= vcost;
		pthread_mutex_unlock(&d->lock);
	}
}

/* An I/O thread (tag: its number, for the temporary file's name). */
static void do_write(struct disk_store *d, struct disk_write *w, unsigned tag)
{
	uint64_t fsize = file_size_of(&w->k, w->len);
	uint64_t cost;
	struct disk_store_entry *e;
	char name[DISK_STORE_NAME_MAX];
	bool go;
	int rc;

	pthread_mutex_lock(&d->lock);
	d->queued_cost -= w->cost; /* reserved below, if written */
	cost = disk_store_index_cost(&d->ix, fsize);
	e = disk_store_index_find(&d->ix, w->k.id, w->k.index);
	go = d->enabled && d->writable && util_now_ns() >= d->pause_until &&
	     !(e && (e->file_size == fsize || e->pins));
	if (go && e) /* another length: replaced */
		disk_store_index_remove(&d->ix, e);
	pthread_mutex_unlock(&d->lock);
	if (go && e) {
		disk_store_file_name(w->k.id, w->k.index, name);
		unlinkat(d->dirfd, name, 0);
	}
	if (go && make_room(d, cost)) {
		rc = disk_store_block_write(d->dirfd, &w->k, w->data, w->len,
					    tag);
		pthread_mutex_lock(&d->lock);
		d->ix.reserved -= cost;
		e = disk_store_index_find(&d->ix, w->k.id, w->k.index);
		if (!rc && e) /* written meanwhile by the other thread */
			disk_store_index_remove(&d->ix, e);
		if (rc)
			write_failed(d, rc);
		else if (!disk_store_index_add(&d->ix, w->k.id, w->k.index,
					       fsize))
			rc = ENOMEM;
		else {
			d->stats.writes++;
			d->stats.write_bytes += w->len;
		}
		pthread_mutex_unlock(&d->lock);
		if (rc == ENOMEM) { /* on disk but unknown: not kept */
			disk_store_file_name(w->k.id, w->k.index, name);
			unlinkat(d->dirfd, name, 0);
		}
	}
	pthread_mutex_lock(&d->lock);
	queue_release(d, w->data, w->len);
	pthread_mutex_unlock(&d->lock);
	free(w);
}

/* ---- the I/O threads ---- */

struct worker_arg {
	struct disk_store *d;
	unsigned tag;
};

static void *worker_main(void *arg)
{
	struct disk_store *d = ((struct worker_arg *)arg)->d;
	unsigned tag = ((struct worker_arg *)arg)->tag;

	free(arg);
	pthread_mutex_lock(&d->lock);
	for (;;) {
		struct disk_read *r = d->reads;
		struct disk_write *w = d->writes;
		bool cancel = d->closing;

		if (r) {
			d->reads = r->next;
			if (!d->reads)
				d->reads_tail = NULL;
			pthread_mutex_unlock(&d->lock);
			do_read(d, r, cancel);
		} else if (w) {
			d->writes = w->next;
			if (!d->writes)
				d->writes_tail = NULL;
			pthread_mutex_unlock(&d->lock);
			do_write(d, w, tag);
		} else if (d->closing) {
			break;
		} else {
			pthread_cond_wait(&d->work, &d->lock);
			continue;
		}
		pthread_mutex_lock(&d->lock);
	}
	pthread_mutex_unlock(&d->lock);
	return NULL;
}

/* ---- the store ---- */

/* Whether the tier may serve or keep req; fills k for its first block. */
static bool keepable(const struct disk_store *d, const struct store_get *req,
		     struct disk_store_key *k)
{
	const uint64_t bs = d->conf.block_size;

	if (!d->enabled || req->offset % bs != 0 ||
	    (req->flags & STORE_GET_PIECE))
		return false;
	for (unsigned i = 0; i < req->nbuffers; i++) {
		if (req->buffers[i].len > bs ||
		    (i + 1 < req->nbuffers && req->buffers[i].len != bs))
			return false;
	}
	return disk_store_key_init(k, req->bucket, req->key, req->etag, bs,
				   req->offset / bs);
}

/* A read job for req with its strings and buffers copied; NULL on
 * ENOMEM. */
static struct disk_read *read_new(const struct store_get *req,
				  const struct disk_store_key *k)
{
	struct disk_read *r = malloc(sizeof(*r) + strings_len(k));

	if (!r)
		return NULL;
	r->next = NULL;
	r->nhits = 0;
	r->k = *k;
	strings_copy(&r->k, r->strs);
	r->req = *req;
	r->req.bucket = r->k.bucket;
	r->req.key = r->k.key;
	r->req.etag = r->k.etag;
	memcpy(r->bufs, req->buffers, req->nbuffers * sizeof(*r->bufs));
	r->req.buffers = r->bufs;
	return r;
}

static int disk_get(struct store *st, const struct store_get *req)
{
	struct disk_store *d = (struct disk_store *)st;
	struct disk_store_key k;
	struct disk_read *r;
	int rc = store_get_check(req, NULL);

	if (rc)
		return rc;
	if (!keepable(d, req, &k))
		return store_get(d->inner, req);
	r = read_new(req, &k);
	pthread_mutex_lock(&d->lock);
	for (unsigned i = 0; r && !d->closing && i < req->nbuffers; i++) {
		struct disk_store_entry *e =
		    disk_store_index_find(&d->ix, k.id, k.index + i);

		if (!e || e->file_size != file_size_of(&k, req->buffers[i].len))
			break;
		e->pins++;
		r->entries[r->nhits++] = e;
	}
	if (r && r->nhits) {
		if (req->flags & STORE_GET_URGENT || !d->reads) {
			r->next = d->reads;
			d->reads = r;
			if (!d->reads_tail)
				d->reads_tail = r;
		} else {
			d->reads_tail->next = r;
			d->reads_tail = r;
		}
		pthread_cond_signal(&d->work);
		pthread_mutex_unlock(&d->lock);
		return 0;
	}
	d->stats.misses += req->nbuffers;
	pthread_mutex_unlock(&d->lock);
	free(r);
	return forward(d, req, &k, 0);
}

static int disk_list(struct store *st, const struct store_list *req)
{
	return store_list(((struct disk_store *)st)->inner, req);
}

static int disk_head(struct store *st, const struct store_head *req)
{
	return store_head(((struct disk_store *)st)->inner, req);
}

static void disk_get_stats(struct store *st, struct store_stats *out)
{
	store_get_stats(((struct disk_store *)st)->inner, out);
}

bool disk_store_get_stats(struct store *st, struct disk_store_stats *out)
{
	struct disk_store *d = (struct disk_store *)st;

	memset(out, 0, sizeof(*out));
	if (!st || st->ops != &disk_ops)
		return false;
	pthread_mutex_lock(&d->lock);
	*out = d->stats;
	out->files = d->ix.count;
	out->bytes_on_disk = d->ix.used;
	out->size_bytes = d->ix.size;
	out->writing = writing(d);
	pthread_mutex_unlock(&d->lock);
	return true;
}

static void disk_destroy(struct store *st)
{
	struct disk_store *d = (struct disk_store *)st;

	pthread_mutex_lock(&d->lock);
	d->closing = true; /* reads queued are cancelled, writes finished */
	pthread_cond_broadcast(&d->work);
	pthread_mutex_unlock(&d->lock);
	for (unsigned i = 0; i < d->nthreads; i++)
		pthread_join(d->threads[i], NULL);
	store_destroy(d->inner); /* its callbacks land in the forwards */
	disk_store_index_free(&d->ix);
	while (d->pool_count)
		free(d->pool[--d->pool_count]);
	free(d->pool);
	if (d->dirfd >= 0)
		close(d->dirfd);
	if (d->lockfd >= 0)
		close(d->lockfd); /* lets the next daemon in */
	pthread_cond_destroy(&d->work);
	pthread_mutex_destroy(&d->lock);
	free(d->path);
	free(d->conf.dir);
	free(d);
}

static const struct store_ops disk_ops = {
    .get = disk_get,
    .list = disk_list,
    .head = disk_head,
    .get_stats = disk_get_stats,
    .destroy = disk_destroy,
};

/* ---- start-up ---- */

/* Whether files can be created in d's directory (an unnamed file where
 * the file system has them; a full one counts as writable). */
static int probe_write(const struct disk_store *d)
{
	int fd = openat(d->dirfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
	int rc = fd < 0 ? errno : 0;

	if (fd >= 0)
		close(fd);
	if (rc == EOPNOTSUPP || rc == EISDIR || rc == EINVAL)
		rc = faccessat(d->dirfd, ".", W_OK, AT_EACCESS) ? errno : 0;
	return rc == ENOSPC || rc == EDQUOT ? 0 : rc;
}

/*
 * DIR/s3pipe, its lock and whether it can be written: sets d->dirfd,
 * d->lockfd, d->enabled and d->writable, logging one line when the tier
 * cannot run as asked.
 */
static void open_dir(struct disk_store *d)
{
	char msg[128];
	int rc = 0;

	if (mkdir(d->path, 0700) != 0 && errno != EEXIST)
		rc = errno;
	d->dirfd = open(d->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (d->dirfd < 0) {
		util_warn("disk tier: cannot use %s (%s): running without it",
			  d->path,
			  util_strerror(rc ? rc : errno, msg, sizeof(msg)));
		return;
	}
	d->lockfd = openat(d->dirfd, DISK_STORE_LOCK,
			   O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (d->lockfd < 0)
		d->lockfd =
		    openat(d->dirfd, DISK_STORE_LOCK, O_RDONLY | O_CLOEXEC);
	if (d->lockfd >= 0 && flock(d->lockfd, LOCK_EX | LOCK_NB) != 0 &&
	    errno == EWOULDBLOCK) {
		util_warn("disk tier: %s is in use by another s3pipe: running "
			  "without the disk tier",
			  d->path);
		return;
	}
	d->enabled = true;
	rc = probe_write(d);
	d->writable = rc == 0;
	if (rc)
		util_warn("disk tier: cannot write in %s (%s): reading what "
			  "is there, writing nothing",
			  d->path, util_strerror(rc, msg, sizeof(msg)));
}

/* The budget: conf's size, or its share of the free space (with what the
 * tier holds already). */
static uint64_t budget_of(const struct disk_store *d, const struct statvfs *vfs)
{
	if (!d->conf.size_percent)
		return d->conf.size_bytes;
	return ((uint64_t)vfs->f_bavail * vfs->f_frsize + d->ix.used) / 100 *
	       d->conf.size_percent;
}

static int start_threads(struct disk_store *d)
{
	unsigned n =
	    d->conf.io_threads ? d->conf.io_threads : DISK_STORE_THREADS;

	if (n > DISK_STORE_THREADS_MAX)
		n = DISK_STORE_THREADS_MAX;
	for (unsigned i = 0; i < n; i++) {
		struct worker_arg *a = malloc(sizeof(*a));

		if (!a)
			break;
		a->d = d;
		a->tag = i;
		if (pthread_create(&d->threads[i], NULL, worker_main, a) != 0) {
			free(a);
			break;
		}
		d->nthreads++;
	}
	return d->nthreads ? 0 : EAGAIN;
}

/* The checks that fail the start: DIR itself. */
static int check_dir(const char *dir, char *err, size_t errlen)
{
	struct stat sb;
	char msg[128];

	if (!dir || !*dir)
		return util_fail(err, errlen, EINVAL, "no --cache-dir given");
	if (stat(dir, &sb) != 0)
		return util_fail(err, errlen, errno,
				 "cache directory '%s' is not usable: %s", dir,
				 util_strerror(errno, msg, sizeof(msg)));
	if (!S_ISDIR(sb.st_mode))
		return util_fail(err, errlen, ENOTDIR,
				 "cache directory '%s' is not a directory",
				 dir);
	return 0;
}

struct store *disk_store_create(const struct disk_store_conf *conf,
				struct store *inner, char *err, size_t errlen)
{
	struct disk_store *d = NULL;
	struct statvfs vfs;
	uint64_t min = disk_store_min_size(conf->block_size);

	if (!inner || !conf->block_size) {
		util_fail(err, errlen, EINVAL, "no store or block size");
		return NULL;
	}
	if (check_dir(conf->dir, err, errlen))
		return NULL;
	d = calloc(1, sizeof(*d));
	if (!d || asprintf(&d->path, "%s/%s", conf->dir, DISK_STORE_SUBDIR) < 0)
		goto nomem;
	d->store.ops = &disk_ops;
	d->store.max_parallel = inner->max_parallel;
	d->conf = *conf;
	d->conf.dir = strdup(conf->dir);
	d->dirfd = d->lockfd = -1;
	if (!d->conf.dir)
		goto nomem;
	if (statvfs(conf->dir, &vfs) != 0)
		memset(&vfs, 0, sizeof(vfs));
	if (disk_store_index_init(&d->ix, UINT64_MAX,
				  vfs.f_frsize ? vfs.f_frsize : 4096))
		goto nomem;
	pthread_mutex_init(&d->lock, NULL);
	pthread_cond_init(&d->work, NULL);
	open_dir(d);
	if (d->enabled)
		disk_store_index_scan(&d->ix, d->dirfd, d->writable);
	d->ix.size = budget_of(d, &vfs);
	if (d->ix.size < min) {
		util_fail(err, errlen, EINVAL,
			  "--cache-dir-size %u%% of the free space in '%s' is "
			  "%llu MiB, less than %d blocks of --part-size (%llu "
			  "MiB): give a larger share or a size",
			  conf->size_percent, conf->dir,
			  (unsigned long long)(d->ix.size >> 20),
			  DISK_STORE_MIN_BLOCKS,
			  (unsigned long long)(min >> 20));
		goto fail;
	}
	d->stats.evictions +=
	    disk_store_index_shrink(&d->ix, d->dirfd, d->writable);
	d->queue_max = conf->queue_bytes;
	if (!d->queue_max) {
		d->queue_max = DISK_STORE_QUEUE_BLOCKS * conf->block_size;
		if (d->queue_max < DISK_STORE_QUEUE_MIN)
			d->queue_max = DISK_STORE_QUEUE_MIN;
	}
	d->pool_max = (size_t)(d->queue_max / conf->block_size);
	d->pool = calloc(d->pool_max + 1, sizeof(*d->pool));
	if (!d->pool)
		goto nomem;
	if (d->enabled && start_threads(d)) {
		util_warn("disk tier: cannot start its threads: running "
			  "without it");
		d->enabled = false;
	}
	util_debug("disk tier %s: %zu blocks (%llu MiB) reused, size %llu "
		   "MiB%s",
		   d->path, d->ix.count, (unsigned long long)(d->ix.used >> 20),
		   (unsigned long long)(d->ix.size >> 20),
		   d->writable ? "" : ", read-only");
	d->inner = inner;
	return &d->store;

nomem:
	util_fail(err, errlen, ENOMEM, "out of memory");
fail:
	if (d) {
		if (d->dirfd >= 0)
			close(d->dirfd);
		if (d->lockfd >= 0)
			close(d->lockfd);
		disk_store_index_free(&d->ix);
		free(d->pool);
		free(d->path);
		free(d->conf.dir);
		free(d);
	}
	return NULL;
}
