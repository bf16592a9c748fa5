/*
 * channel reader: one open epoch file, read through a stack of stages
 * (channel/stage.h) over its epoch's stream: gunzip (gzip.c) or a cache
 * reader at the bottom, the conversion of rows (convert.c) on top.  Every
 * stream is trimmed, so a reader that needs what its epoch's stream
 * dropped (it opened an epoch others are well into, or seeks back) gets a
 * stream of its own for the epoch (reader_restream); a stack with stages
 * cannot jump, so an emulated seek starts it again and drops what comes
 * before the offset.
 */
#include "config.h"

#include "channel/core.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "channel/convert.h"
#include "channel/gzip.h"
#include "channel/mix.h"
#include "channel/object_counts.h"
#include "channel/wrap.h"
#include "util/util.h"

struct channel_reader {
	struct channel *ch;
	unsigned epoch;
	bool at_end;		     /* a read found the end */
	struct cache_stream *stream; /* the epoch's */
	struct epoch_plan *plan;     /* MODE_PLAN */
	/* a plan of its own for the epoch, when the shared one's stream
	 * dropped what this reader needs (unlinked; NULL: none) */
	struct epoch_plan *private_plan;
	/* the stages between the stream and the reader (channel/stage.h),
	 * by stack_open(); NULL after a failed restart */
	struct channel_stage *top;
	int stage_error; /* the stack could not be started again: reads
			    fail with it */
	char label[CHANNEL_NAME_MAX + 32]; /* "channel 'NAME'" */
	/* the bytes a record scan read past where the reader starts
	 * (channel_reader_open_record): served before the stack's, from
	 * carry_next on */
	char *carry;
	uint64_t carry_start, carry_next, carry_end;
	/* the record shuffle's first record, for the next stack built
	 * (UINT64_MAX: at a byte) */
	uint64_t first_record;
	/* a stack with stages that begins past the epoch's first objects
	 * (channel_reader_open_record, over measured objects): the stream's
	 * segment it starts at, that segment's first byte in the stream, and
	 * the epoch's byte its first byte is (all 0: the epoch's start) */
	size_t first_seg;
	uint64_t first_stored;
	uint64_t base;
	/* a hold on a given plan's stream (a walk's), let go once the stack
	 * is built on it, or before that plan goes */
	struct cache_hold *walk_hold;
};

/* Where a stack with stages begins (struct channel_reader's first_seg,
 * first_stored, base). */
struct stack_start {
	size_t seg;
	uint64_t stored;
	uint64_t base;
};

/*
 * The reader's stack over its stream, from the stream's start: the one
 * place stages are put together.  The bottom reads the stream (gunzip,
 * which reads several objects at once, or a cache reader); conversion
 * or the RecordIO wrapping of gunzipped objects goes on top.  A stack without
 * stages (channel_bytes_as_stored) may begin where a first read at first_read
 * needs it to.  0, ESTALE when the stream dropped its start (or first_read), or
 * ENOMEM; on failure r->top is what it was.
 */
static int stack_build(struct channel_reader *r, uint64_t first_read)
{
	struct channel *ch = r->ch;
	struct channel_stage *bottom;
	struct channel_converter *cv;

	if (ch->spec->shuffle_buffer)
		bottom = channel_mix_create(ch, r->plan, first_read,
					    r->first_record);
	else if (ch->spec->compression == CHANNEL_COMPRESSION_GZIP)
		bottom =
		    channel_gzip_create(ch->cache, r->stream, ch->spec->name,
					ch->conf.inflate_threads, r->first_seg);
	else
		bottom = channel_cache_stage_create(
		    ch->cache, r->stream,
		    channel_bytes_as_stored(ch) ? first_read : r->first_stored);
	if (!bottom)
		return errno == ESTALE || errno == EIO ? errno : ENOMEM;
	if (ch->spec->wrapper == CHANNEL_WRAPPER_RECORDIO && !ch->framed) {
		/* (not framed in the plan: the lengths come from gunzip) */
		r->top = channel_wrap_create(ch, bottom, channel_gzip_again);
		if (!r->top) {
			channel_stack_destroy(bottom);
			return ENOMEM;
		}
		return 0;
	}
	if (ch->spec->convert.format == CHANNEL_CONVERT_NONE) {
		r->top = bottom;
		return 0;
	}
	cv = channel_converter_create(&ch->spec->convert, bottom, r->label,
				      ch->conf.convert_threads);
	if (!cv) {
		int rc = errno;

		channel_stack_destroy(bottom);
		return rc ? rc : ENOMEM;
	}
	r->top = channel_converter_stage(cv);
	r->top->below = bottom;
	return 0;
}

/* The reader's stack begins at the epoch's start from here on. */
static void stack_from_start(struct channel_reader *r)
{
	r->first_seg = 0;
	r->first_stored = 0;
	r->base = 0;
}

/*
 * The epoch's stream dropped what this reader needs (every stream is
 * trimmed): a new reader of an epoch others are well into, or a seek back.
 * It gets a plan of its own for the epoch, the same entries in the same
 * order (or a listing of its own), and its stack is built again over it,
 * from the epoch's start.  0, or an errno (the reader keeps what it had).
 */
static int reader_restream(struct channel_reader *r)
{
	struct epoch_plan *private_plan = plan_create(r->ch, r->epoch, false);
	struct channel_stage *old = r->top;
	struct cache_stream *old_stream = r->stream;
	struct stack_start was = {r->first_seg, r->first_stored, r->base};
	int rc;

	if (!private_plan)
		return ENOMEM;
	cache_hold_release(r->walk_hold);
	r->walk_hold = NULL;
	r->stream = private_plan->stream;
	stack_from_start(r);
	rc = stack_build(r, 0);
	if (rc) {
		r->stream = old_stream;
		r->first_seg = was.seg;
		r->first_stored = was.stored;
		r->base = was.base;
		plan_destroy(private_plan);
		return rc;
	}
	channel_stack_destroy(old);
	plan_destroy(r->private_plan);
	r->private_plan = private_plan;
	return 0;
}

/* The reader's stack from its stream's start (or for a first read at
 * first_read), over a stream of its own when the epoch's dropped that.
 * 0 or an errno. */
static int stack_open(struct channel_reader *r, uint64_t first_read)
{
	int rc = stack_build(r, first_read);

	return rc == ESTALE ? reader_restream(r) : rc;
}

static void stack_close(struct channel_reader *r)
{
	channel_stack_destroy(r->top);
	r->top = NULL;
}

/* Whether reads are the stream's own bytes (a cache reader alone), which
 * can start anywhere. */
static bool reads_cache_directly(const struct channel_reader *r)
{
	return r->top && channel_stage_is_cache(r->top);
}

/*
 * A stage that makes bytes cannot jump: an emulated seek starts the stack
 * again and reads (and drops) what comes before offset.
 */
static int stack_seek(struct channel_reader *r, uint64_t offset)
{
	struct channel_view view;
	uint64_t pos = 0;
	int rc;

	stack_close(r);
	if (r->ch->spec->shuffle_buffer) {
		/* the record shuffle starts anywhere, from its index */
		rc = stack_open(r, offset);
		if (rc) {
			stack_close(r);
			r->stage_error = rc;
		}
		return rc;
	}
	/* (from the epoch's start: the objects before a stack that began
	 * past them are gone from its stream, which then gets another) */
	stack_from_start(r);
	rc = stack_open(r, 0);
	if (rc) {
		/* no stages, no raw bytes either: reads fail from here */
		stack_close(r);
		r->stage_error = rc;
		return rc;
	}
	while (pos < offset && !rc) {
		uint64_t want = offset - pos;

		memset(&view, 0, sizeof(view));
		rc = r->top->ops->read(
		    r->top, pos, want < (1u << 20) ? (size_t)want : (1u << 20),
		    &view, NULL);
		if (!rc && view.bytes == 0)
			rc = EINVAL; /* past the end: reads return nothing */
		pos += view.bytes;
		r->top->ops->release(r->top, &view);
	}
	return rc == EINVAL ? 0 : rc;
}

/* How a reader starts: at the epoch's shared stream, on a plan of its
 * own placed by the shared plan's index at a byte or at an entry, or on a
 * plan of its own the caller made (START_ON_PLAN). */
enum reader_start {
	START_SHARED,
	START_AT_BYTE,
	START_AT_ENTRY,
	START_ON_PLAN
};

/*
 * A reader of epoch, its first read at offset (START_SHARED, START_AT_BYTE,
 * START_ON_PLAN) or at entry *entry (START_AT_ENTRY: *offset then says
 * where), over the epoch's shared stream or a plan of its own
 * (plan_create_from(), or given: the reader takes it, on success; and
 * hold, a hold on its stream, which it lets go in any case); on a given
 * plan, a stack with stages begins where from says (NULL: the epoch's
 * start).
 */
static struct channel_reader *
reader_open(struct channel *ch, unsigned epoch, enum reader_start how,
	    uint64_t *offset, size_t entry, struct epoch_plan *given,
	    struct cache_hold *hold, const struct stack_start *from)
{
	struct channel_reader *r = calloc(1, sizeof(*r));
	int rc;

	if (!r) {
		cache_hold_release(hold);
		goto nomem;
	}
	r->private_plan = given;
	r->walk_hold = hold;
	r->ch = ch;
	r->epoch = epoch;
	r->first_record = UINT64_MAX;
	if (from) {
		r->first_seg = from->seg;
		r->first_stored = from->stored;
		r->base = from->base;
	}
	pthread_mutex_lock(&ch->lock);
	if (!ch->any_opened || epoch > ch->opened)
		ch->opened = epoch;
	ch->any_opened = true;
	pthread_mutex_unlock(&ch->lock);
	r->plan = plan_get(ch, epoch, true, NULL);
	if (!r->plan)
		goto nomem;
	r->stream = given ? given->stream : r->plan->stream;
	if (how == START_AT_BYTE || how == START_AT_ENTRY) {
		uint64_t start;

		r->private_plan = plan_create_from(
		    r->plan, *offset, how == START_AT_ENTRY ? &entry : NULL,
		    &start);
		if (!r->private_plan)
			goto nomem;
		if (how == START_AT_ENTRY)
			*offset = start;
		r->stream = r->private_plan->stream;
	}
	snprintf(r->label, sizeof(r->label), "channel '%s'", ch->spec->name);
	rc = stack_open(r, *offset);
	if (rc)
		goto fail;
	cache_hold_release(r->walk_hold);
	r->walk_hold = NULL;
	return r;

nomem:
	rc = ENOMEM;
fail:
	if (r && given && r->private_plan == given)
		r->private_plan = NULL; /* (given stays the caller's) */
	channel_reader_close(r);
	errno = rc == EIO ? EIO : ENOMEM;
	return NULL;
}

/* Whether a reader of ch may start deep in an epoch on a plan of its own,
 * placed by the plan's index (plan_create_from()). */
static bool starts_from_index(const struct channel *ch)
{
	return ch->catalog && ch->mode == MODE_PLAN &&
	       channel_bytes_as_stored(ch);
}

struct channel_reader *channel_reader_open_at(struct channel *ch,
					      unsigned epoch, uint64_t offset)
{
	return reader_open(ch, epoch, START_SHARED, &offset, 0, NULL, NULL,
			   NULL);
}

struct channel_reader *channel_reader_open_from(struct channel *ch,
						unsigned epoch, uint64_t offset)
{
	/* deep in a catalog's epoch: from the entry that holds offset, not
	 * the epoch's entries added up to it */
	return reader_open(ch, epoch,
			   offset && starts_from_index(ch) ? START_AT_BYTE
							   : START_SHARED,
			   &offset, 0, NULL, NULL, NULL);
}

struct channel_reader *channel_reader_open(struct channel *ch, unsigned epoch)
{
	return channel_reader_open_at(ch, epoch, 0);
}

/* An object a record scan read, for its log line. */
struct scan_object {
	uint64_t start; /* the epoch's byte at its first */
	bool named;
	char name[CACHE_KEY_MAX + 80]; /* "s3://bucket/key" */
};

/* Where byte at of the epoch is, for a log line: in the object the scan
 * reads (cur) or the one before it (prev), when the reads named them. */
static void scan_place(uint64_t at, const struct scan_object *cur,
		       const struct scan_object *prev, char *buf, size_t len)
{
	const struct scan_object *o = cur->named && at >= cur->start	 ? cur
				      : prev->named && at >= prev->start ? prev
									 : NULL;

	if (o)
		snprintf(buf, len, "%s at byte %llu (byte %llu of the epoch)",
			 o->name, (unsigned long long)(at - o->start),
			 (unsigned long long)at);
	else
		snprintf(buf, len, "byte %llu of the epoch",
			 (unsigned long long)at);
}

/* Appends view's bytes from iov i, byte off, to r->carry: 0 or ENOMEM. */
static int carry_append(struct channel_reader *r,
			const struct channel_view *view, int i, size_t off)
{
	size_t have = (size_t)(r->carry_end - r->carry_start), add = 0;
	char *grown;

	for (int k = i; k < view->count; k++)
		add += view->iov[k].iov_len - (k == i ? off : 0);
	grown = realloc(r->carry, have + add ? have + add : 1);
	if (!grown)
		return ENOMEM;
	r->carry = grown;
	for (int k = i; k < view->count; k++) {
		size_t from = k == i ? off : 0;
		size_t len = view->iov[k].iov_len - from;

		memcpy(r->carry + have, (char *)view->iov[k].iov_base + from,
		       len);
		have += len;
	}
	r->carry_end = r->carry_start + have;
	return 0;
}

/* One read of the scan (with origin while the stack can say it):
 * 0, or the read's errno; view->bytes 0 at the end. */
static int scan_read(struct channel_reader *r, uint64_t pos,
		     struct channel_view *view, struct channel_origin *origin,
		     bool *named)
{
	enum { SCAN_READ = 1u << 20 };
	int rc;

	for (;;) {
		memset(view, 0, sizeof(*view));
		rc = r->top->ops->read(r->top, pos - r->base, SCAN_READ, view,
				       *named ? origin : NULL);
		if (rc != EINVAL || !*named)
			return rc;
		/* a stage that cannot name objects */
		r->top->ops->release(r->top, view);
		*named = false;
	}
}

/* An object a record scan reads whole, measured for the channel's
 * object counts (channel/object_counts.h). */
struct scan_measure {
	struct object_counts *counts; /* NULL: not measuring */
	bool whole;		      /* the object is known by its id */
	uint64_t id;
	uint64_t pos, records; /* the scan's at its start */
	bool between;	       /* it began between records */
	uint64_t added;	       /* objects measured */
	bool partial_first;    /* the scan begins inside its first object */
	/* the object's points (object_counts.h), when its bytes are the
	 * epoch's: block 0 when not */
	uint64_t block;
	uint64_t boundary; /* the next block boundary, in the epoch */
	bool awaiting;	   /* past it, inside a record */
	uint64_t awaited;  /* the record whose start is the point */
	struct object_point *points;
	size_t npoints, cap;
};

/* The object the scan read ends at pos: kept when it began and ended
 * between records. */
static void measure_end(struct scan_measure *m,
			const struct channel_records *scan, uint64_t pos)
{
	if (!m->counts || !m->whole || !m->between ||
	    !channel_records_between(scan))
		return;
	object_counts_add(m->counts, m->id, pos - m->pos,
			  scan->records - m->records, OBJECT_COUNTS_UNKNOWN);
	/* (a boundary at the object's end is no point in it) */
	while (m->npoints && m->points[m->npoints - 1].at >= pos - m->pos)
		m->npoints--;
	if (m->npoints)
		object_counts_add_points(m->counts, m->id, m->points,
					 m->npoints);
	m->added++;
	m->whole = false;
}

/* The scan begins the object origin names at pos. */
static void measure_begin(struct scan_measure *m,
			  const struct channel_origin *origin,
			  const struct channel_records *scan, uint64_t pos)
{
	if (!m->counts)
		return;
	m->id = origin->object_id;
	m->whole = m->id != 0 && !m->partial_first;
	m->partial_first = false;
	m->pos = pos;
	m->records = scan->records;
	m->between = channel_records_between(scan);
	m->boundary = pos + m->block;
	m->awaiting = false;
	m->npoints = 0;
}

/* A point of the object the scan measures: record number n begins at
 * epoch byte at; the next boundary is the first past it. */
static void measure_point(struct scan_measure *m, uint64_t n, uint64_t at)
{
	if (m->npoints == m->cap) {
		size_t cap = m->cap ? 2 * m->cap : 16;
		struct object_point *p = realloc(m->points, cap * sizeof(*p));

		if (!p) {
			m->whole = false; /* (not measured, not wrong) */
			return;
		}
		m->points = p;
		m->cap = cap;
	}
	m->points[m->npoints].records = n - m->records;
	m->points[m->npoints].at = at - m->pos;
	m->npoints++;
	m->boundary = m->pos + ((at - m->pos) / m->block + 1) * m->block;
	m->awaiting = false;
}

/* Feeds bytes[0..len) to the scan up to where record target begins (as
 * channel_records_feed()), noting the points of the object it measures on
 * the way: at each block boundary, the first record that begins there or
 * after. */
static size_t scan_feed(struct channel_records *scan, struct scan_measure *m,
			const char *bytes, size_t len, uint64_t target,
			bool *reached)
{
	size_t used = 0;

	*reached = false;
	while (used < len && !*reached && !scan->error) {
		size_t want = len - used;
		uint64_t stop = target;
		bool hit = false;

		if (!m->block || !m->whole) {
			/* (no points) */
		} else if (m->awaiting && m->awaited < target) {
			stop = m->awaited;
		} else if (!m->awaiting && scan->pos + want > m->boundary) {
			want = (size_t)(m->boundary - scan->pos);
		}
		used +=
		    channel_records_feed(scan, bytes + used, want, stop, &hit);
		if (hit && m->awaiting && stop == m->awaited)
			measure_point(m, m->awaited, scan->pos);
		if (hit && stop == target)
			*reached = true;
		if (m->block && m->whole && !m->awaiting && !*reached &&
		    scan->pos == m->boundary) {
			/* the next record to begin: one more when a line is
			 * open, or a header that is not a part's goes on */
			m->awaited = scan->records +
				     (scan->format == CHANNEL_RECORDS_LINES
					  ? scan->open
					  : scan->have && !scan->open);
			if (channel_records_between(scan))
				measure_point(m, m->awaited, scan->pos);
			else
				m->awaiting = true;
		}
	}
	return used;
}

/*
 * Reads r from where its stack begins (byte first of the epoch, record
 * before, into bytes inside the object there) without delivering, up to
 * where record target begins: 0 with *start
 * its offset (the epoch's end when it has fewer records), and what was read
 * past it kept in r->carry; EIO when the records are malformed (logged
 * once, naming the object and offset), or the read's errno.  A RecordIO
 * record's header is checked before the scan stops at it.  The objects
 * read whole before the target are measured into counts (when not NULL).
 */
static int record_scan(struct channel_reader *r, uint64_t target,
		       uint64_t first, uint64_t before, uint64_t into,
		       struct object_counts *counts, uint64_t *start)
{
	struct channel_records scan;
	struct channel_origin origin = {0};
	struct scan_object objs[2] = {{0}}, *cur = &objs[0], *prev = &objs[1];
	struct scan_measure m = {
	    .counts = counts,
	    .partial_first = into > 0,
	    .block = channel_bytes_as_stored(r->ch)
			 ? cache_block_size(r->ch->cache)
			 : 0,
	};
	uint64_t pos = first, obj_index = UINT64_MAX;
	bool named = true, reached = false, ended = false;
	/* (not framed here, nor converted: each object's own records) */
	bool objects_hold_records =
	    r->ch->spec->wrapper == CHANNEL_WRAPPER_NONE &&
	    r->ch->spec->convert.format == CHANNEL_CONVERT_NONE;
	char where[1200];
	int rc = 0;

	channel_records_init(&scan, channel_record_format(r->ch->spec));
	scan.pos = pos;
	scan.records = before;
	/* up to the target, then (RecordIO) its header's 8 bytes */
	while (!ended && !scan.error && !rc &&
	       (!reached ||
		(scan.format == CHANNEL_RECORDS_RECORDIO &&
		 r->carry_end - r->carry_start < CHANNEL_RECORDIO_HEADER))) {
		struct channel_view view;
		size_t fed = 0;

		rc = scan_read(r, pos, &view, &origin, &named);
		ended = !rc && view.bytes == 0;
		if (rc || ended) {
			r->top->ops->release(r->top, &view);
			if (ended && !reached)
				measure_end(&m, &scan, pos);
			break;
		}
		if (named && origin.index != obj_index) {
			struct scan_object *was = prev;

			if (!reached) {
				measure_end(&m, &scan, pos);
				measure_begin(&m, &origin, &scan, pos);
			}
			/* a RecordIO part the objects hold does not run past
			 * its object */
			if (!reached && obj_index != UINT64_MAX &&
			    objects_hold_records &&
			    scan.format == CHANNEL_RECORDS_RECORDIO &&
			    (scan.have || scan.skip)) {
				scan.error = EBADMSG;
				scan.why =
				    "a RecordIO part runs past the end of "
				    "its object";
				scan.error_at = scan.part_at;
			}
			obj_index = origin.index;
			prev = cur;
			cur = was;
			/* (the first object may begin before the scan) */
			cur->start = pos - into;
			into = 0;
			cur->named = origin.key != NULL;
			if (cur->named && origin.bucket)
				snprintf(cur->name, sizeof(cur->name),
					 "s3://%s/%s", origin.bucket,
					 origin.key);
			else if (cur->named)
				snprintf(cur->name, sizeof(cur->name), "%s",
					 origin.key);
		} else if (named && !origin.object_id) {
			m.whole = false; /* (bytes of more than this object) */
		}
		if (reached)
			rc = carry_append(r, &view, 0, 0);
		for (int i = 0;
		     i < view.count && !reached && !scan.error && !rc; i++) {
			size_t n =
			    scan_feed(&scan, &m, view.iov[i].iov_base,
				      view.iov[i].iov_len, target, &reached);

			if (reached) {
				r->carry_start = r->carry_next = scan.pos;
				r->carry_end = scan.pos;
				rc = carry_append(r, &view, i, n);
			}
			fed += n;
		}
		pos += view.bytes;
		r->top->ops->release(r->top, &view);
	}
	if (m.added)
		object_counts_save(r->ch);
	free(m.points);
	if (rc)
		return rc;
	if (reached && scan.format == CHANNEL_RECORDS_RECORDIO &&
	    r->carry_end > r->carry_start) {
		enum channel_recordio_flag flag;
		uint32_t len;

		scan.error_at = r->carry_start;
		if (r->carry_end - r->carry_start < CHANNEL_RECORDIO_HEADER) {
			scan.error = EBADMSG;
			scan.why = "the epoch ends inside a RecordIO header";
		} else if (channel_recordio_parse_header(
			       (const unsigned char *)r->carry, &flag, &len) ||
			   (flag != RECORDIO_WHOLE && flag != RECORDIO_START)) {
			scan.error = EBADMSG;
			scan.why = "a RecordIO header with a bad magic or flag";
		}
	}
	if (!reached && !scan.error)
		(void)channel_records_end(&scan); /* fewer records: the end */
	if (scan.error) {
		scan_place(scan.error_at, cur, prev, where, sizeof(where));
		util_warn("%s (epoch %u): %s, at %s: resuming at a record "
			  "fails with EIO",
			  r->label, r->epoch, scan.why, where);
		return EIO;
	}
	*start = reached ? r->carry_start : scan.pos;
	return 0;
}

/*
 * A walk over a stream of the epoch's own from its start (its listing's
 * pages, or its entries: no GET), whose passed segments a hold lets go:
 * step() is told each segment and says whether the walk stops there.  0
 * with the index it stopped at (the count of segments when the stream
 * ended first), that plan (*plan, for the reader to read on: nothing is
 * listed twice) and its hold, kept back segments before that index until
 * the reader is made; or an errno.
 */
static int epoch_walk(struct channel *ch, unsigned epoch,
		      bool (*step)(void *arg,
				   const struct cache_segment_info *info),
		      void *arg, size_t back, size_t *stop,
		      struct epoch_plan **plan, struct cache_hold **held)
{
	struct epoch_plan *p = plan_create(ch, epoch, false);
	struct cache_hold *hold = p ? cache_hold_create(p->stream, 0) : NULL;
	struct cache_segment_info info;
	size_t idx;
	int rc = 0;

	if (!hold) {
		plan_destroy(p);
		return ENOMEM;
	}
	for (idx = 0;; idx++) {
		rc = cache_stream_segment(p->stream, idx, &info);
		if (rc == ENODATA) {
			rc = 0;
			break;
		}
		if (rc || step(arg, &info))
			break;
		if (idx % 1024 == 0)
			cache_hold_move(hold, idx);
	}
	if (rc) {
		cache_hold_release(hold);
		plan_destroy(p);
		return rc;
	}
	cache_hold_move(hold, idx > back ? idx - back : 0);
	*stop = idx;
	*plan = p;
	*held = hold;
	return 0;
}

/* The walk to a record of a channel that frames each object itself. */
struct framed_walk {
	uint64_t target, records;
	uint64_t end;	/* of the segments walked */
	uint64_t start; /* where the target's header is, once found */
	bool found;
};

static bool framed_step(void *arg, const struct cache_segment_info *info)
{
	struct framed_walk *w = arg;

	w->end = info->start + info->size;
	if (info->literal || info->obj_offset != 0)
		return false;
	if (w->records == w->target) {
		w->start = info->start - CHANNEL_RECORDIO_HEADER;
		w->found = true;
		return true;
	}
	w->records++;
	return false;
}

/*
 * Where record target begins in an epoch the channel frames itself from a
 * prefix's objects (each object one record, none empty): before the
 * header of the target'th object segment that starts its object, found by
 * a walk (epoch_walk).  0 with *start (the epoch's end when it has fewer
 * records), the walk's plan and its hold, kept at the segment before
 * *start (the header) until the reader is made; or an errno.
 */
static int record_walk(struct channel *ch, unsigned epoch, uint64_t target,
		       uint64_t *start, struct epoch_plan **plan,
		       struct cache_hold **held)
{
	struct framed_walk w = {.target = target};
	size_t stop;
	int rc = epoch_walk(ch, epoch, framed_step, &w, 1, &stop, plan, held);

	if (!rc)
		*start = w.found ? w.start : w.end;
	return rc;
}

/* The walk over the objects a channel measured (object_counts.h). */
struct counts_walk {
	struct object_counts *counts;
	bool as_stored; /* the epoch's bytes are the objects' */
	uint64_t target, records;
	struct stack_start at;
	uint64_t into; /* at is this far inside its object (a point) */
};

static bool counts_step(void *arg, const struct cache_segment_info *info)
{
	struct counts_walk *w = arg;
	uint64_t id, bytes, n;

	w->at.stored = info->start;
	/* (counts a file brought in are checked: nothing wraps, and bytes
	 * as stored are the object's size) */
	if (!object_counts_id(info, &id) ||
	    !object_counts_find(w->counts, id, &bytes, &n, NULL) ||
	    bytes > (uint64_t)INT64_MAX - w->at.base ||
	    (w->as_stored && bytes != info->size))
		return true;
	if (n > w->target - w->records) {
		struct object_point pt;

		/* the target is in this object: from its last point before
		 * the target, when its bytes are its own */
		if (w->as_stored &&
		    object_counts_point(w->counts, id, w->target - w->records,
					&pt) &&
		    pt.at < info->size && pt.records <= n) {
			w->records += pt.records;
			w->at.base += pt.at;
			w->at.stored += pt.at;
			w->into = pt.at;
		}
		return true;
	}
	w->records += n;
	w->at.base += bytes;
	w->at.stored = info->start + info->size;
	return false;
}

/*
 * Where a record scan for target may begin, past the objects the channel
 * measured (counts), found by a walk (epoch_walk): the first object not
 * measured, or the one that record target begins in, at its last point
 * before the target when it has points (*into that far in).  0 with *at (that
 * object's segment and the byte there in the stream, and the epoch's byte
 * of it: the epoch's end when every object is measured and target is past
 * them), *records (the records before it), the walk's plan and its hold
 * there; or an errno.
 */
static int counts_walk(struct channel *ch, unsigned epoch, uint64_t target,
		       struct object_counts *counts, struct stack_start *at,
		       uint64_t *records, uint64_t *into,
		       struct epoch_plan **plan, struct cache_hold **held)
{
	struct counts_walk w = {.counts = counts,
				.as_stored = channel_bytes_as_stored(ch),
				.target = target};
	int rc =
	    epoch_walk(ch, epoch, counts_step, &w, 0, &w.at.seg, plan, held);

	*at = w.at;
	*records = w.records;
	*into = w.into;
	return rc;
}

/*
 * A reader of epoch from record target, found by a scan that reads every
 * byte before it (streaming, not delivering) but the objects a scan before
 * measured whole, passed over by their counts; the objects this scan reads
 * whole are measured for the next (and saved with --cache-dir).
 */
/* Whether the objects' counts place a stack past the epoch's first
 * objects: not for CSV rows whose field count the conversion learns from
 * the epoch's first row (a stack that began later would learn another). */
static bool counts_place(const struct channel *ch)
{
	const struct channel_convert_conf *cv = &ch->spec->convert;

	return !(cv->format == CHANNEL_CONVERT_CSV && !cv->feature_dim);
}

static struct channel_reader *open_record_scanned(struct channel *ch,
						  unsigned epoch,
						  uint64_t target,
						  uint64_t *start)
{
	struct object_counts *counts =
	    counts_place(ch) ? object_counts_get(ch) : NULL;
	struct channel_reader *r;
	struct epoch_plan *walked = NULL;
	struct cache_hold *hold = NULL;
	struct stack_start at = {0};
	uint64_t before = 0, first = 0;
	uint64_t into = 0;
	int rc;

	if (counts && object_counts_count(counts) > 0) {
		rc = counts_walk(ch, epoch, target, counts, &at, &before, &into,
				 &walked, &hold);
		if (rc) {
			errno = rc;
			return NULL;
		}
		first = at.base;
		if (channel_bytes_as_stored(ch)) {
			/* (the stream's own bytes: read at its offset) */
			first = at.stored;
			at.base = 0;
		}
		r = reader_open(ch, epoch, START_ON_PLAN, &first, 0, walked,
				hold, &at);
		if (!r) {
			plan_destroy(walked);
			return NULL;
		}
		if (r->base + r->top->ops->position(r->top) != first) {
			/* (its stream had to start again) */
			channel_reader_close(r);
			r = channel_reader_open(ch, epoch);
			if (!r)
				return NULL;
			first = before = 0;
			into = 0;
		}
		util_info("channel '%s' (epoch %u): record %llu: %llu records "
			  "in objects measured before, scanning from byte %llu",
			  ch->spec->name, epoch, (unsigned long long)target,
			  (unsigned long long)before,
			  (unsigned long long)first);
	} else {
		r = channel_reader_open(ch, epoch);
		if (!r)
			return NULL;
	}
	rc = record_scan(r, target, first, before, into, counts, start);
	if (rc) {
		channel_reader_close(r);
		errno = rc;
		return NULL;
	}
	return r;
}

struct channel_reader *channel_reader_open_record(struct channel *ch,
						  unsigned epoch,
						  uint64_t record,
						  uint64_t *start)
{
	struct channel_reader *r;
	int rc;

	if (channel_record_format(ch->spec) == CHANNEL_RECORDS_NONE) {
		errno = EINVAL; /* no records to count */
		return NULL;
	}
	if (ch->spec->shuffle_buffer) {
		/* drawn from the index up to record K: the stage says where
		 * it begins */
		r = channel_reader_open(ch, epoch);
		if (!r)
			return NULL;
		stack_close(r);
		r->first_record = record;
		rc = stack_open(r, 0);
		r->first_record = UINT64_MAX;
		if (rc) {
			channel_reader_close(r);
			errno = rc;
			return NULL;
		}
		*start = r->top->ops->position(r->top);
		return r;
	}
	if (!ch->framed && starts_from_index(ch)) {
		/* a shuffled prefix of records as stored: from the channel's
		 * record index (one pass the first time, kept), then placed
		 * by the plan's index */
		struct epoch_plan *p = plan_get(ch, epoch, true, NULL);

		rc = p ? record_index_epoch_offset(ch, p, record, start)
		       : ENOMEM;
		plan_put(ch, p);
		if (rc) {
			errno = rc;
			return NULL;
		}
		return channel_reader_open_from(ch, epoch, *start);
	}
	if (ch->framed && starts_from_index(ch)) {
		/* each entry one record: record K begins entry K */
		*start = 0;
		return reader_open(ch, epoch, START_AT_ENTRY, start,
				   record > SIZE_MAX ? SIZE_MAX
						     : (size_t)record,
				   NULL, NULL, NULL);
	}
	if (ch->framed && channel_bytes_as_stored(ch) &&
	    ch->spec->data_type == CHANNEL_S3_PREFIX) {
		struct epoch_plan *walked;
		struct cache_hold *hold;

		rc = record_walk(ch, epoch, record, start, &walked, &hold);
		if (rc) {
			errno = rc;
			return NULL;
		}
		/* on the walk's own stream, listed to there already */
		r = reader_open(ch, epoch, START_ON_PLAN, start, 0, walked,
				hold, NULL);
		if (!r)
			plan_destroy(walked);
		return r;
	}
	return open_record_scanned(ch, epoch, record, start);
}

void channel_reader_close(struct channel_reader *r)
{
	if (!r)
		return;
	cache_hold_release(r->walk_hold);
	free(r->carry);
	stack_close(r);
	/* (a plan of its own may borrow the shared plan's order: it goes
	 * first) */
	plan_destroy(r->private_plan);
	plan_put(r->ch, r->plan);
	free(r);
}

uint64_t channel_reader_position(struct channel_reader *r)
{
	if (r->carry)
		return r->carry_next;
	return r->top ? r->base + r->top->ops->position(r->top) : 0;
}

bool channel_reader_near_end(struct channel_reader *r)
{
	uint64_t size = 0, pos;

	if (r->at_end)
		return true;
	if (!reads_cache_directly(r) || !cache_stream_size(r->stream, &size))
		return false;
	pos = r->top->ops->position(r->top);
	return pos >= size || size - pos <= cache_max_window(r->ch->cache);
}

/* A read reached the point where the plan ended early: say why, once. */
static void log_plan_error(struct channel_reader *r)
{
	struct epoch_plan *p = r->private_plan ? r->private_plan : r->plan;
	bool say;

	if (!p)
		return;
	pthread_mutex_lock(&r->ch->lock);
	say = p->error && !p->error_logged;
	if (say)
		p->error_logged = true;
	pthread_mutex_unlock(&r->ch->lock);
	if (say)
		util_warn("%s (epoch %u): reads fail with EIO from here",
			  p->error, r->epoch);
}

/* The next bytes a record scan read ahead (r->carry, read at
 * r->carry_next). */
static int carry_read(struct channel_reader *r, size_t size,
		      struct channel_view *view)
{
	uint64_t left = r->carry_end - r->carry_next;
	size_t n = size < left ? size : (size_t)left;
	size_t at = (size_t)(r->carry_next - r->carry_start);

	view->stage_iov[0].iov_base = r->carry + at;
	view->stage_iov[0].iov_len = n;
	view->iov = view->stage_iov;
	view->count = n ? 1 : 0;
	view->bytes = n;
	r->carry_next += n;
	return 0;
}

int channel_reader_read(struct channel_reader *r, uint64_t offset, size_t size,
			struct channel_view *view)
{
	int rc;

	view->count = 0;
	view->bytes = 0;
	view->nchunks = 0;
	view->cache.count = 0;
	view->cache.bytes = 0;
	if (r->carry && offset == r->carry_next && offset < r->carry_end)
		return carry_read(r, size, view);
	if (r->carry) {
		/* a seek away from the scan's bytes: the stack's from here */
		free(r->carry);
		r->carry = NULL;
	}
	if (r->stage_error) {
		rc = r->stage_error == ENOMEM ? ENOMEM : EIO;
	} else if (!reads_cache_directly(r)) {
		rc = 0;
		if (offset != r->base + r->top->ops->position(r->top))
			rc = stack_seek(r, offset);
		/* (a seek past the end reads nothing) */
		if (!rc && offset == r->base + r->top->ops->position(r->top))
			rc = r->top->ops->read(r->top, offset - r->base, size,
					       view, NULL);
	} else {
		rc = r->top->ops->read(r->top, offset, size, view, NULL);
		if (rc == ESTALE) {
			/* a seek back into what the stream dropped */
			r->top->ops->release(r->top, view);
			rc = reader_restream(r);
			if (!rc)
				rc = r->top->ops->read(r->top, offset, size,
						       view, NULL);
		}
	}
	if (rc == EIO)
		log_plan_error(r);
	if (!rc && size && view->bytes == 0)
		r->at_end = true;
	return rc;
}

void channel_view_release(struct channel_reader *r, struct channel_view *view)
{
	if (r->top)
		r->top->ops->release(r->top, view);
	view->count = 0;
	view->bytes = 0;
}
