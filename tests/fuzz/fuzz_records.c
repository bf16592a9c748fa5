/*
 * libFuzzer harness for the record scanner (channel/records.c): the
 * input's first byte picks the format (RecordIO or lines), the second the
 * record to stop at, the third how the rest is cut into pieces; the rest
 * is an epoch's bytes.  Fed whole and fed in pieces, the scanner must stop
 * at the same byte with the same count and the same error; where it stops
 * must be a record's start (a RecordIO header that parses and begins a
 * record, or the byte after a '\n'), and an error's offset must be inside
 * the input.
 */
#include "config.h"

#include "channel/internal.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct outcome {
	bool reached;
	uint64_t pos, records, error_at;
	int error;
};

/* Scans bytes[0, len) in pieces of at most piece bytes (0: whole). */
static struct outcome scan(enum channel_record_format format,
			   const uint8_t *bytes, size_t len, uint64_t target,
			   size_t piece)
{
	struct channel_records r;
	struct outcome o = {0};
	size_t at = 0;

	channel_records_init(&r, format);
	while (at < len && !o.reached && !r.error) {
		size_t n = piece && len - at > piece ? piece : len - at;
		size_t used =
		    channel_records_feed(&r, bytes + at, n, target, &o.reached);

		if (used > n || (!o.reached && !r.error && used != n))
			__builtin_trap();
		at += used;
		if (r.pos != at)
			__builtin_trap();
	}
	if (!o.reached && !r.error)
		(void)channel_records_end(&r);
	o.pos = r.pos;
	o.records = r.records;
	o.error = r.error;
	o.error_at = r.error_at;
	return o;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	enum channel_record_format format;
	struct outcome whole, cut;
	uint64_t target;
	size_t piece;

	if (size < 3)
		return 0;
	format = data[0] & 1 ? CHANNEL_RECORDS_LINES : CHANNEL_RECORDS_RECORDIO;
	target = data[1];
	piece = (size_t)(data[2] % 17) + 1;
	data += 3;
	size -= 3;
	whole = scan(format, data, size, target, 0);
	cut = scan(format, data, size, target, piece);
	if (whole.reached != cut.reached || whole.pos != cut.pos ||
	    whole.records != cut.records || whole.error != cut.error ||
	    (whole.error && whole.error_at != cut.error_at))
		__builtin_trap();
	if (whole.error && whole.error_at > size)
		__builtin_trap();
	if (whole.reached) {
		if (whole.records != target || whole.pos > size)
			__builtin_trap();
		if (format == CHANNEL_RECORDS_LINES && whole.pos > 0 &&
		    data[whole.pos - 1] != '\n')
			__builtin_trap();
		if (format == CHANNEL_RECORDS_RECORDIO &&
		    size - whole.pos >= CHANNEL_RECORDIO_HEADER) {
			/* (the header itself is checked by the reader) */
			enum channel_recordio_flag flag;
			uint32_t len;

			(void)channel_recordio_parse_header(data + whole.pos,
							    &flag, &len);
		}
	} else if (!whole.error && whole.pos != size) {
		__builtin_trap();
	}
	return 0;
}
