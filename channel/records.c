/*
 * records: where the records of an epoch's bytes begin.
 *
 * An epoch file of a channel with records (channel_record_format()) is a
 * sequence of records, however they fall across blocks and objects:
 *
 *   RecordIO  MXNet-style RecordIO (recordio.c): a record is a WHOLE part,
 *             or a START part, MIDDLE parts and an END part; each part is
 *             a header, its bytes and padding to 4.  A record begins at
 *             its first part's header.
 *   lines     text lines: a record ends after its '\n' (a "\r\n" is one
 *             such ending); the bytes after the last '\n', when there are
 *             any, are one last record.
 *
 * The scanner is fed the epoch's bytes in order, in pieces of any size,
 * and stops at the byte where record K begins.  It keeps a few bytes of
 * state: a header split between two pieces, the bytes of a part still to
 * pass.  Malformed RecordIO (a bad magic or flag, parts out of order, an
 * epoch that ends inside a record) stops it with an error and the offset
 * of the bad header.
 */
#include "config.h"

#include "channel/internal.h"

#include <errno.h>
#include <string.h>

void channel_records_init(struct channel_records *r,
			  enum channel_record_format format)
{
	memset(r, 0, sizeof(*r));
	r->format = format;
}

static void records_fail(struct channel_records *r, const char *why)
{
	r->error = EBADMSG;
	r->why = why;
	r->error_at = r->part_at;
}

/* RecordIO: consumes from p[0, len), stopping before record target's
 * header.  Returns the bytes consumed. */
static size_t feed_recordio(struct channel_records *r, const unsigned char *p,
			    size_t len, uint64_t target, bool *reached)
{
	size_t used = 0;

	while (used < len && !r->error) {
		enum channel_recordio_flag flag;
		uint32_t plen;
		size_t take;

		if (r->skip) {
			take =
			    len - used < r->skip ? len - used : (size_t)r->skip;
			r->skip -= take;
			used += take;
			r->pos += take;
			continue;
		}
		if (r->have == 0) {
			r->part_at = r->pos;
			/* a header here begins a record unless one is open */
			if (!r->open && r->records == target) {
				*reached = true;
				return used;
			}
		}
		take = CHANNEL_RECORDIO_HEADER - r->have;
		if (take > len - used)
			take = len - used;
		memcpy(r->header + r->have, p + used, take);
		r->have += take;
		used += take;
		r->pos += take;
		if (r->have < CHANNEL_RECORDIO_HEADER)
			break;
		r->have = 0;
		if (channel_recordio_parse_header(r->header, &flag, &plen)) {
			records_fail(r, "a RecordIO header with a bad magic "
					"or flag");
			break;
		}
		if ((flag == RECORDIO_WHOLE || flag == RECORDIO_START) ==
		    r->open) {
			records_fail(r, r->open ? "a RecordIO record begins "
						  "inside another"
						: "a RecordIO part continues "
						  "no record");
			break;
		}
		if (flag == RECORDIO_WHOLE || flag == RECORDIO_START)
			r->records++;
		r->open = flag == RECORDIO_START || flag == RECORDIO_MIDDLE;
		r->skip = (uint64_t)plen + channel_recordio_padding(plen);
	}
	return used;
}

/* Lines: consumes from p[0, len), stopping at the first byte of line
 * target.  Returns the bytes consumed. */
static size_t feed_lines(struct channel_records *r, const unsigned char *p,
			 size_t len, uint64_t target, bool *reached)
{
	size_t used = 0;

	while (used < len) {
		const unsigned char *nl;

		if (!r->open) {
			/* a line begins here */
			if (r->records == target) {
				*reached = true;
				return used;
			}
			r->open = true;
		}
		nl = memchr(p + used, '\n', len - used);
		if (!nl) {
			r->pos += len - used;
			return len;
		}
		r->pos += (size_t)(nl - (p + used)) + 1;
		used = (size_t)(nl - p) + 1;
		r->open = false;
		r->records++;
	}
	return used;
}

size_t channel_records_feed(struct channel_records *r, const void *bytes,
			    size_t len, uint64_t target, bool *reached)
{
	*reached = false;
	if (r->error)
		return 0;
	if (r->format == CHANNEL_RECORDS_RECORDIO)
		return feed_recordio(r, bytes, len, target, reached);
	return feed_lines(r, bytes, len, target, reached);
}

bool channel_records_between(const struct channel_records *r)
{
	return !r->error && !r->open && !r->have && !r->skip;
}

int channel_records_end(struct channel_records *r)
{
	if (r->error)
		return r->error;
	if (r->format == CHANNEL_RECORDS_RECORDIO &&
	    (r->have || r->skip || r->open)) {
		records_fail(r, "the epoch ends inside a RecordIO record");
		return r->error;
	}
	if (r->format == CHANNEL_RECORDS_LINES && r->open) {
		r->open = false;
		r->records++; /* the last line, without its '\n' */
	}
	return 0;
}
