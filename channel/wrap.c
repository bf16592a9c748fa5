/*
 * channel RecordIO wrapping stage (wrap.h): one record per object of the
 * stage below.
 *
 * A record's header carries its payload's length, which an inflated object
 * does not tell until it ends.  So, object by object:
 *  - its length known (the channel's counts: this stage counted it in an
 *    earlier epoch, or a mount before did): the header goes out first and
 *    the payload after it as the stage below hands it on, cut in parts of
 *    part_max bytes, the padding last;
 *  - else the object's views from below are held until it ends, then
 *    framed.  Past a quarter of the budget they are let go: the rest is
 *    read only to count it, and the stage below hands the object on once
 *    more from its start (again()), framed as it comes.  Its length goes
 *    into the counts, so that the next epoch inflates it once.
 * An object that does not end at the length it was counted at is EIO, with
 * one line naming it.
 *
 * No byte is copied: each view taken from below (a lease) stays whole
 * behind a chunk of its own, and the chunk's last reference (a piece not
 * handed out yet, or the reader's view) gives it back below.  Headers and
 * padding are small chunks of their own.  A stack's ops are called from
 * one thread at a time (stage.h), so the pieces and these chunks' counts
 * need no lock.
 */
#include "config.h"

#include "channel/wrap.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "channel/core.h"
#include "channel/internal.h"
#include "channel/object_counts.h"
#include "util/util.h"

/* bytes asked of the stage below at a time (it hands on what it has) */
#define VIEW_ASK ((size_t)1 << 30)

struct wrap_piece {
	struct channel_chunk *chunk; /* a reference */
	const char *bytes;
	size_t len;
	struct wrap_piece *next;
};

struct piece_list {
	struct wrap_piece *head, *tail;
	uint64_t bytes;
};

/* A view taken from below. */
struct lease {
	struct channel_view view;
};

/* Where a payload is in its framing. */
struct record_parts {
	uint64_t total; /* the payload's length */
	uint64_t done;	/* payload bytes framed */
	uint64_t parts;
};

enum wrap_state {
	BETWEEN,   /* the next object not begun */
	HOLDING,   /* its length unknown: its views held */
	STREAMING, /* its length known: framed as it comes */
	FINISHED,  /* the stream below ended */
};

struct channel_wrap {
	struct channel_stage stage; /* first: what channel_wrap_create()
				       returns */
	struct channel *ch;
	struct cache *cache;
	uint64_t part_max;
	uint64_t hold_max;
	struct object_counts *counts; /* NULL when there are none */
	bool counted;		      /* lengths added to them */
	int (*again)(struct channel_stage *below, uint64_t index);

	enum wrap_state state;
	bool no_wait; /* this produce() takes only what is there (EAGAIN) */
	int error;    /* after the pieces before it */
	uint64_t pos;
	struct piece_list out;	/* framed, for the reader */
	struct piece_list held; /* HOLDING: the payload so far */
	struct record_parts parts;
	/* the object being wrapped (its names copied: the stream below may
	 * drop its segment once passed) */
	struct channel_origin obj;
	char *obj_bucket, *obj_key;
};

/* ---- pieces and leases ---- */

/* The chunk's last reference: the view goes back where it came from. */
static void lease_recycle(void *arg, char *data, size_t cap)
{
	struct lease *l = (struct lease *)data;
	struct channel_wrap *w = arg;

	(void)cap;
	w->stage.below->ops->release(w->stage.below, &l->view);
	free(l);
}

static int piece_push(struct piece_list *list, struct channel_chunk *c,
		      const char *bytes, size_t len)
{
	struct wrap_piece *p;

	if (len == 0)
		return 0;
	p = malloc(sizeof(*p));
	if (!p)
		return ENOMEM;
	p->chunk = c;
	c->refs++;
	p->bytes = bytes;
	p->len = len;
	p->next = NULL;
	if (list->tail)
		list->tail->next = p;
	else
		list->head = p;
	list->tail = p;
	list->bytes += len;
	return 0;
}

static void pieces_free(struct channel_wrap *w, struct piece_list *list)
{
	while (list->head) {
		struct wrap_piece *p = list->head;

		list->head = p->next;
		channel_chunk_unref(w->cache, p->chunk);
		free(p);
	}
	list->tail = NULL;
	list->bytes = 0;
}

static int push_copy(struct channel_wrap *w, const void *bytes, size_t len)
{
	struct channel_chunk *c;
	int rc;

	if (len == 0)
		return 0;
	c = channel_chunk_copy(bytes, len);
	if (!c)
		return ENOMEM;
	rc = piece_push(&w->out, c, c->data, len);
	channel_chunk_unref(w->cache, c);
	return rc;
}

/*
 * The next view of one object from below, told where the object ends: 0
 * with *chunk (NULL when the view holds no bytes) and *origin, or an
 * errno.  The chunk holds the view until its last reference goes; the
 * caller drops its own.
 */
static int lease_take(struct channel_wrap *w, struct channel_chunk **chunk,
		      struct channel_origin *origin)
{
	struct channel_stage *st = w->stage.below;
	struct lease *l = calloc(1, sizeof(*l));
	struct channel_chunk *c = l ? calloc(1, sizeof(*c)) : NULL;
	int rc;

	*chunk = NULL;
	if (!c) {
		free(l);
		return ENOMEM;
	}
	memset(origin, 0, sizeof(*origin));
	origin->tell_ends = true;
	origin->no_wait = w->no_wait;
	rc = st->ops->read(st, 0, VIEW_ASK, &l->view, origin);
	if (rc || l->view.bytes == 0) {
		st->ops->release(st, &l->view);
		free(l);
		free(c);
		return rc;
	}
	c->data = (char *)l;
	c->refs = 1;
	c->recycle = lease_recycle;
	c->recycle_arg = w;
	*chunk = c;
	return 0;
}

/* The view's bytes as pieces of list. */
static int lease_pieces(struct piece_list *list, struct channel_chunk *c)
{
	const struct lease *l = (const struct lease *)c->data;
	int rc = 0;

	for (int i = 0; i < l->view.count && !rc; i++)
		rc = piece_push(list, c, l->view.iov[i].iov_base,
				l->view.iov[i].iov_len);
	return rc;
}

/* ---- framing ---- */

static void parts_begin(struct channel_wrap *w, uint64_t total)
{
	w->parts.total = total;
	w->parts.done = 0;
	w->parts.parts = channel_recordio_parts(total, w->part_max);
}

static int frame_header(struct channel_wrap *w)
{
	const struct record_parts *f = &w->parts;
	unsigned char hdr[CHANNEL_RECORDIO_HEADER];
	uint64_t part = f->done / w->part_max;
	uint64_t left = f->total - part * w->part_max;

	channel_recordio_header(
	    hdr, channel_recordio_part_flag(part, f->parts),
	    (uint32_t)(left < w->part_max ? left : w->part_max));
	return push_copy(w, hdr, sizeof(hdr));
}

static void log_length(const struct channel_wrap *w, const char *what)
{
	util_warn("channel '%s': s3://%s/%s %s %llu bytes it was counted at: "
		  "reads of the epoch fail with EIO there",
		  w->ch->spec->name, w->obj_bucket ? w->obj_bucket : "",
		  w->obj_key ? w->obj_key : "(literal bytes)", what,
		  (unsigned long long)w->parts.total);
}

/* Payload bytes [bytes, bytes + len) of chunk c into the output, a part
 * header before each part's first byte. */
static int frame_bytes(struct channel_wrap *w, struct channel_chunk *c,
		       const char *bytes, size_t len)
{
	struct record_parts *f = &w->parts;

	if (len > f->total - f->done) {
		log_length(w, "inflates past the");
		return EIO;
	}
	while (len) {
		uint64_t to_boundary = w->part_max - f->done % w->part_max;
		size_t n = len < to_boundary ? len : (size_t)to_boundary;
		int rc = 0;

		if (f->done % w->part_max == 0)
			rc = frame_header(w);
		if (!rc)
			rc = piece_push(&w->out, c, bytes, n);
		if (rc)
			return rc;
		f->done += n;
		bytes += n;
		len -= n;
	}
	return 0;
}

/* The pieces of list framed (moved to the output). */
static int frame_list(struct channel_wrap *w, struct piece_list *list)
{
	int rc = 0;

	for (struct wrap_piece *p = list->head; p && !rc; p = p->next)
		rc = frame_bytes(w, p->chunk, p->bytes, p->len);
	pieces_free(w, list);
	return rc;
}

/* The object's payload ended: the padding (an empty one's header). */
static int frame_end(struct channel_wrap *w)
{
	static const unsigned char zeros[4];
	int rc = 0;

	if (w->parts.done != w->parts.total) {
		log_length(w, "ends short of the");
		return EIO;
	}
	if (w->parts.total == 0)
		rc = frame_header(w);
	if (!rc)
		rc = push_copy(w, zeros,
			       channel_recordio_padding(w->parts.total));
	w->state = BETWEEN;
	return rc;
}

/* ---- objects ---- */

static int object_name(struct channel_wrap *w,
		       const struct channel_origin *origin)
{
	free(w->obj_bucket);
	free(w->obj_key);
	w->obj = *origin;
	w->obj_bucket = origin->bucket ? strdup(origin->bucket) : NULL;
	w->obj_key = origin->key ? strdup(origin->key) : NULL;
	w->obj.bucket = w->obj_bucket;
	w->obj.key = w->obj_key;
	if ((origin->bucket && !w->obj_bucket) || (origin->key && !w->obj_key))
		return ENOMEM;
	return 0;
}

/* The object's length, when the counts know it. */
static bool length_known(struct channel_wrap *w, uint64_t *total)
{
	uint64_t bytes, records;

	return w->counts && w->obj.object_id &&
	       object_counts_find(w->counts, w->obj.object_id, &bytes, &records,
				  total) &&
	       *total != OBJECT_COUNTS_UNKNOWN;
}

/* A view of the object streamed: framed, and ended. */
static int stream_view(struct channel_wrap *w, struct channel_chunk *c,
		       const struct channel_origin *origin)
{
	int rc = 0;

	if (c) {
		const struct lease *l = (const struct lease *)c->data;

		for (int i = 0; i < l->view.count && !rc; i++)
			rc = frame_bytes(w, c, l->view.iov[i].iov_base,
					 l->view.iov[i].iov_len);
		channel_chunk_unref(w->cache, c);
	}
	if (!rc && origin->ended)
		rc = frame_end(w);
	return rc;
}

/* The held object ran past the hold: counted to its end, then read again
 * from its start, framed as it comes. */
static int count_then_again(struct channel_wrap *w)
{
	uint64_t total = w->held.bytes;
	struct channel_origin origin;
	int rc = 0;

	pieces_free(w, &w->held);
	do {
		struct channel_chunk *c;

		rc = lease_take(w, &c, &origin);
		if (!rc && !c && !origin.ended)
			rc = EIO; /* the stream ended inside it */
		if (c) {
			total += ((const struct lease *)c->data)->view.bytes;
			channel_chunk_unref(w->cache, c);
		}
	} while (!rc && !origin.ended);
	if (rc)
		return rc;
	util_debug("channel '%s': s3://%s/%s inflates to %llu bytes: framed "
		   "after counting them",
		   w->ch->spec->name, w->obj_bucket ? w->obj_bucket : "",
		   w->obj_key ? w->obj_key : "", (unsigned long long)total);
	/* (its end told, the object is still the one below) */
	rc = w->again(w->stage.below, w->obj.index);
	if (rc)
		return EIO;
	parts_begin(w, total);
	w->state = STREAMING;
	if (w->counts && w->obj.object_id) {
		object_counts_add(
		    w->counts, w->obj.object_id,
		    channel_recordio_framed_size(total, w->part_max), 1, total);
		w->counted = true;
	}
	return 0;
}

/* A view of the held object: held, framed when it ended. */
static int hold_view(struct channel_wrap *w, struct channel_chunk *c,
		     const struct channel_origin *origin)
{
	int rc = 0;

	if (c) {
		rc = lease_pieces(&w->held, c);
		channel_chunk_unref(w->cache, c);
	}
	if (rc)
		return rc;
	if (origin->ended) {
		parts_begin(w, w->held.bytes);
		rc = frame_list(w, &w->held);
		return rc ? rc : frame_end(w);
	}
	if (w->held.bytes > w->hold_max)
		return w->no_wait ? EAGAIN : count_then_again(w);
	return 0;
}

/*
 * Output for the reader (w->out empty): the next object begun, or more of
 * the one under way, until some is framed or the stream ends.  0, or an
 * errno (the pieces before it stay out).
 */
static int produce(struct channel_wrap *w)
{
	while (!w->out.head && w->state != FINISHED) {
		struct channel_origin origin;
		struct channel_chunk *c;
		uint64_t total;
		int rc;

		rc = lease_take(w, &c, &origin);
		if (rc) {
			return rc;
		} else if (!c && !origin.ended) {
			if (w->state != BETWEEN)
				return EIO; /* the stream ended inside it */
			w->state = FINISHED;
			return 0;
		}
		if (w->state == BETWEEN) {
			rc = object_name(w, &origin);
			if (rc) {
				if (c)
					channel_chunk_unref(w->cache, c);
				return rc;
			}
			w->state = HOLDING;
			if (length_known(w, &total)) {
				util_debug(
				    "channel '%s': s3://%s/%s inflates to "
				    "%llu bytes, counted before: framed "
				    "as it comes",
				    w->ch->spec->name,
				    w->obj_bucket ? w->obj_bucket : "",
				    w->obj_key ? w->obj_key : "",
				    (unsigned long long)total);
				parts_begin(w, total);
				w->state = STREAMING;
			}
		}
		rc = w->state == STREAMING ? stream_view(w, c, &origin)
					   : hold_view(w, c, &origin);
		if (rc)
			return rc;
	}
	return 0;
}

/* ---- the stage ---- */

static int wrap_read(struct channel_stage *st, uint64_t offset, size_t size,
		     struct channel_view *view, struct channel_origin *origin)
{
	struct channel_wrap *w = (struct channel_wrap *)st;
	int rc = 0;

	view->iov = view->stage_iov;
	if (!origin && offset != w->pos)
		return ESPIPE; /* the caller restarts the stack */
	while (view->bytes < size && view->count < CHANNEL_VIEW_MAX) {
		struct wrap_piece *p = w->out.head;
		size_t n;

		if (!p) {
			int rc_produce;

			/* with bytes already, only what is there now (with
			 * origin, none: a view holds one object's bytes) */
			if (w->error || w->state == FINISHED ||
			    (origin && view->bytes))
				break;
			w->no_wait = view->bytes > 0;
			rc_produce = produce(w);
			w->no_wait = false;
			if (rc_produce == EAGAIN && view->bytes)
				break;
			w->error = rc_produce;
			continue;
		}
		if (origin && !view->bytes) {
			*origin = w->obj;
			origin->tell_ends = origin->ended = origin->no_wait =
			    false;
		}
		n = p->len < size - view->bytes ? p->len : size - view->bytes;
		view->stage_iov[view->count].iov_base = (char *)p->bytes;
		view->stage_iov[view->count].iov_len = n;
		view->chunks[view->nchunks++] = p->chunk;
		p->chunk->refs++;
		view->count++;
		view->bytes += n;
		w->pos += n;
		w->out.bytes -= n;
		p->bytes += n;
		p->len -= n;
		if (p->len == 0) {
			w->out.head = p->next;
			if (!w->out.head)
				w->out.tail = NULL;
			channel_chunk_unref(w->cache, p->chunk);
			free(p);
		}
	}
	if (!view->bytes && w->error)
		rc = w->error; /* (after the bytes before it) */
	return rc;
}

static void wrap_release(struct channel_stage *st, struct channel_view *view)
{
	struct channel_wrap *w = (struct channel_wrap *)st;

	for (int i = 0; i < view->nchunks; i++)
		channel_chunk_unref(w->cache, view->chunks[i]);
	view->nchunks = 0;
}

static uint64_t wrap_position(struct channel_stage *st)
{
	return ((struct channel_wrap *)st)->pos;
}

static void wrap_destroy(struct channel_stage *st)
{
	struct channel_wrap *w = (struct channel_wrap *)st;

	/* (the reader's views are back: with these, every lease is) */
	pieces_free(w, &w->out);
	pieces_free(w, &w->held);
	if (w->counted)
		object_counts_save(w->ch);
	free(w->obj_bucket);
	free(w->obj_key);
	free(w);
}

static const struct channel_stage_ops wrap_ops = {
    .read = wrap_read,
    .release = wrap_release,
    .position = wrap_position,
    .destroy = wrap_destroy,
};

struct channel_stage *
channel_wrap_create(struct channel *ch, struct channel_stage *below,
		    int (*again)(struct channel_stage *below, uint64_t index))
{
	struct channel_wrap *w = calloc(1, sizeof(*w));

	if (!w) {
		errno = ENOMEM;
		return NULL;
	}
	w->stage.ops = &wrap_ops;
	w->stage.below = below;
	w->ch = ch;
	w->cache = ch->cache;
	w->part_max = ch->conf.recordio_part_max;
	w->hold_max = cache_budget(ch->cache) / 4;
	w->counts = object_counts_get(ch);
	w->again = again;
	return &w->stage;
}
