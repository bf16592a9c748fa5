/*
 * libFuzzer harness for the conversion stage's parsers (channel/rows.c,
 * channel/record.c): the input's first byte picks the format and the
 * options (CSV or LibSVM, the label column, skipping bad rows), the rest is
 * the rows.  The output must be whole RecordIO records, each of them a
 * Record that unpacks and prints (channel_record_dump); a bad row's reason
 * must be one printable line and its offset inside the input.  The input is
 * also printed as if it were a Record, and split as RecordIO records
 * (channel_records_dump), which must fail cleanly or succeed.
 */
#include "config.h"

#include "channel/convert.h"
#include "channel/internal.h"
#include "channel/record.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_line(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			__builtin_trap();
}

/* Every record of out[0..len) is whole and prints. */
static void check_records(const char *out, size_t len)
{
	struct util_buf text;
	size_t off = 0;
	char err[256];

	util_buf_init(&text, 0);
	while (off < len) {
		enum channel_recordio_flag flag;
		uint32_t plen;

		if (len - off < CHANNEL_RECORDIO_HEADER ||
		    channel_recordio_parse_header(
			(const unsigned char *)out + off, &flag, &plen) ||
		    flag != RECORDIO_WHOLE)
			__builtin_trap();
		off += CHANNEL_RECORDIO_HEADER;
		if (plen > len - off)
			__builtin_trap();
		util_buf_reset(&text);
		if (channel_record_dump(out + off, plen, &text, err,
					sizeof(err)) != 0)
			__builtin_trap();
		off += plen + channel_recordio_padding(plen);
	}
	if (off != len)
		__builtin_trap();
	util_buf_free(&text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct channel_convert_conf conf;
	struct channel_rows_result res;
	struct util_buf out, text;
	const char *rows = (const char *)data + 1;
	size_t len = size ? size - 1 : 0, cols;
	char err[256];
	FILE *in, *sink;
	int rc;

	if (!size)
		return 0;
	channel_convert_conf_init(&conf, data[0] & 1 ? CHANNEL_CONVERT_LIBSVM
						     : CHANNEL_CONVERT_CSV);
	conf.bad_row_skip = data[0] & 2;
	conf.label_column =
	    data[0] & 4 ? CHANNEL_LABEL_NONE : (data[0] >> 3) & 3;
	conf.feature_dim = conf.format == CHANNEL_CONVERT_LIBSVM
			       ? 1 + (data[0] >> 5) * 1000
			       : 0;
	cols = conf.format == CHANNEL_CONVERT_CSV
		   ? channel_rows_columns(rows, len)
		   : 0;
	if (channel_rows_complete(conf.format, rows, len) > len)
		__builtin_trap();
	util_buf_init(&out, 0);
	rc = channel_rows_convert(&conf, cols, rows, len, &out, &res);
	if (rc != 0 && rc != EINVAL && rc != ENOMEM)
		__builtin_trap();
	if (rc == EINVAL || res.skipped) {
		if (res.bad_at >= len)
			__builtin_trap();
		check_line(res.why);
	}
	check_records(out.data, out.len);
	util_buf_free(&out);

	/* the input as a Record, and as a RecordIO stream */
	util_buf_init(&text, 0);
	rc = channel_record_dump(data, size, &text, err, sizeof(err));
	if (rc == EINVAL)
		check_line(err);
	util_buf_free(&text);
	in = fmemopen((void *)data, size, "rb");
	sink = fopen("/dev/null", "wb");
	if (in && sink) {
		rc = channel_records_dump(in, sink, err, sizeof(err));
		if (rc == EINVAL || rc == EIO)
			check_line(err);
	}
	if (in)
		fclose(in);
	if (sink)
		fclose(sink);
	return 0;
}
