/*
 * channel conversion: CSV or LibSVM rows to protobuf RecordIO.
 *
 * Two layers, used by the mount (channel.c puts a converter between an
 * epoch's bytes and its reader) and by s3pipe-convert alike, so that both
 * write the same bytes:
 *
 *   rows       (channel/rows.c) text made of whole rows to framed Records,
 *              on one thread: the row grammar, the checks, the encoding;
 *   converter  (channel/convert.c) a byte source (an epoch's objects, or a
 *              file) cut into batches of whole rows by a feeder thread,
 *              batches converted by worker threads, output handed to one
 *              sequential reader in order.
 *
 * The input is the objects' bytes back to back, as Pipe mode hands them
 * to an algorithm: a row may start in one object and end in the next.
 * With header_skip each object is a file of its own instead: its first
 * line is skipped and its end ends its last row.
 *
 * Grammar.  Rows end with LF (CRLF too); the last row of the input may
 * lack it; rows of blanks only are skipped.  CSV: fields separated by
 * commas; a field that starts with '"' is quoted up to the next '"' not
 * doubled (RFC 4180: commas and line ends inside belong to the field);
 * blanks (space, tab, and CR) around an unquoted field are ignored.  A
 * quoted field left open at an object's end runs on into the next object,
 * with headers too.  Every field is a decimal number (util_parse_float32): an
 * empty field, text, nan, inf or a number beyond float32's range is a bad row,
 * and so is a row whose field count differs from the first row's (or from
 * feature_dim + the label).  LibSVM: blank-separated tokens, the label
 * first, then INDEX:VALUE pairs with INDEX < feature_dim, written to keys
 * as given (0- or 1-based alike: the data's own numbering is kept); qid:N
 * tokens are ignored; a token that starts with '#' starts a comment, to
 * the end of the line.
 */
#ifndef S3PIPE_CHANNEL_CONVERT_H
#define S3PIPE_CHANNEL_CONVERT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "channel/channel.h"
#include "channel/stage.h"
#include "util/util.h"

/* A row longer than this fails the conversion (it is never skipped). */
#define CHANNEL_ROW_MAX (64u << 20)

/* ---- rows (channel/rows.c) ---- */

/*
 * The length of the longest prefix of text[0..len) made of whole rows
 * (each ending with its LF), 0 when there is none; text starts at a row's
 * start.
 */
size_t channel_rows_complete(enum channel_convert_format format,
			     const char *text, size_t len);

/* The number of fields of the first row of text[0..len) that is not
 * blank (CSV), 0 when there is none. */
size_t channel_rows_columns(const char *text, size_t len);

struct channel_rows_result {
	uint64_t rows;	  /* records written */
	uint64_t skipped; /* bad rows skipped (bad_row_skip) */
	size_t bad_at;	  /* offset in text of the first bad row, or
			     SIZE_MAX */
	char why[192];	  /* what is wrong with it */
};

/*
 * Converts text[0..len), which starts at a row's start and holds whole rows
 * (the last may lack its LF: it ends at len), appending one framed Record
 * per row to out.  columns: CSV fields per row (the label counted), from
 * channel_rows_columns() or the configuration.  Returns 0; EINVAL for a
 * bad row when the configuration does not skip them (the rows before it
 * are in out, res says where and why); ENOMEM or EFBIG.
 */
int channel_rows_convert(const struct channel_convert_conf *conf,
			 size_t columns, const char *text, size_t len,
			 struct util_buf *out, struct channel_rows_result *res);

/* Offsets in the text (count of them, ascending) and, for each, out's
 * length when the conversion reached it at a row's start: the records of
 * the text before it; SIZE_MAX when a row runs across it. */
struct channel_rows_marks {
	const size_t *at;
	size_t *out;
	size_t count;
};

/* channel_rows_convert(), saying where the records of each mark begin. */
int channel_rows_convert_marked(const struct channel_convert_conf *conf,
				size_t columns, const char *text, size_t len,
				const struct channel_rows_marks *marks,
				struct util_buf *out,
				struct channel_rows_result *res);

/* ---- the converter (channel/convert.c) ---- */

struct channel_converter;

struct channel_convert_stats {
	uint64_t rows;	  /* records handed out */
	uint64_t skipped; /* bad rows skipped before them */
};

/*
 * A converter reading the stage below (which must outlive it: a stage that
 * answers reads with origin) with conf (copied); name starts its messages
 * ("channel 'train'").  threads: workers, 0 = one per online core.  Its
 * feeder thread is the only caller of below's read and release.  NULL and
 * errno on failure.
 */
struct channel_converter *
channel_converter_create(const struct channel_convert_conf *conf,
			 struct channel_stage *below, const char *name,
			 unsigned threads);
/* The converter as the stage above below (channel/stage.h); destroying
 * the stage destroys the converter. */
struct channel_stage *channel_converter_stage(struct channel_converter *cv);
/* Stops the threads; views handed out must be released first.  Logs the
 * count of skipped rows, if any. */
void channel_converter_destroy(struct channel_converter *cv);
uint64_t channel_converter_position(struct channel_converter *cv);
/*
 * As channel_reader_read(): up to size bytes of records at offset, which
 * must be the position (else ESPIPE).  EIO once the input fails or a bad
 * row stops the conversion (logged once, naming the object and line).
 */
int channel_converter_read(struct channel_converter *cv, uint64_t offset,
			   size_t size, struct channel_view *view);
void channel_converter_release(struct channel_converter *cv,
			       struct channel_view *view);
void channel_converter_stats(struct channel_converter *cv,
			     struct channel_convert_stats *stats);

#endif
