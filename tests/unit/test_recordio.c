/*
 * test_recordio: RecordIO framing arithmetic: header bytes (written out by
 * hand from the format: magic 0xCED7230A and (flag << 29) | length, both
 * little-endian), padding, how payloads are cut into parts (with a small
 * part_max as the test hook, and with the real one by arithmetic only),
 * the parts' flags and the framed size; and the record scanner
 * (channel/records.c): where record K begins in RecordIO and in lines,
 * fed whole and a byte at a time, split records, CRLF, a last line
 * without its newline, and malformed RecordIO with its offset.
 */
#include "config.h"

#include "channel/internal.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

static void check_header(enum channel_recordio_flag flag, uint32_t len,
			 const unsigned char want[8])
{
	unsigned char out[CHANNEL_RECORDIO_HEADER + 1];

	memset(out, 0xaa, sizeof(out));
	channel_recordio_header(out, flag, len);
	assert_memory_equal(out, want, 8);
	assert_int_equal(out[8], 0xaa); /* nothing past the header */
}

static void test_header_bytes(void **state)
{
	static const unsigned char whole0[8] = {0x0a, 0x23, 0xd7, 0xce,
						0x00, 0x00, 0x00, 0x00};
	static const unsigned char whole5[8] = {0x0a, 0x23, 0xd7, 0xce,
						0x05, 0x00, 0x00, 0x00};
	/* 0x01020304 | 1 << 29 = 0x21020304 */
	static const unsigned char start[8] = {0x0a, 0x23, 0xd7, 0xce,
					       0x04, 0x03, 0x02, 0x21};
	/* 2 << 29 = 0x40000000, len 0x1234 */
	static const unsigned char middle[8] = {0x0a, 0x23, 0xd7, 0xce,
						0x34, 0x12, 0x00, 0x40};
	/* 3 << 29 | (2^29 - 1) = 0x7fffffff */
	static const unsigned char end[8] = {0x0a, 0x23, 0xd7, 0xce,
					     0xff, 0xff, 0xff, 0x7f};
	/* 0 << 29 | 0x1ffffffc (the real part_max) */
	static const unsigned char whole_max[8] = {0x0a, 0x23, 0xd7, 0xce,
						   0xfc, 0xff, 0xff, 0x1f};

	assert_int_equal(CHANNEL_RECORDIO_MAGIC, 0xced7230au);
	check_header(RECORDIO_WHOLE, 0, whole0);
	check_header(RECORDIO_WHOLE, 5, whole5);
	check_header(RECORDIO_START, 0x01020304, start);
	check_header(RECORDIO_MIDDLE, 0x1234, middle);
	check_header(RECORDIO_END, (1u << 29) - 1, end);
	check_header(RECORDIO_WHOLE, CHANNEL_RECORDIO_PART_MAX, whole_max);
}

static void test_padding(void **state)
{
	assert_int_equal(channel_recordio_padding(0), 0);
	assert_int_equal(channel_recordio_padding(1), 3);
	assert_int_equal(channel_recordio_padding(2), 2);
	assert_int_equal(channel_recordio_padding(3), 1);
	assert_int_equal(channel_recordio_padding(4), 0);
	assert_int_equal(channel_recordio_padding(5), 3);
	assert_int_equal(channel_recordio_padding(1001), 3);
	assert_int_equal(channel_recordio_padding(1002), 2);
	assert_int_equal(channel_recordio_padding(1003), 1);
	assert_int_equal(channel_recordio_padding(1004), 0);
	assert_int_equal(channel_recordio_padding((1ull << 40) + 3), 1);
	assert_int_equal(channel_recordio_padding(UINT64_MAX), 1);
	for (uint64_t len = 0; len < 64; len++)
		assert_int_equal((len + channel_recordio_padding(len)) % 4, 0);
}

static void test_parts_small(void **state)
{
	/* part_max 8 as the test hook */
	assert_int_equal(channel_recordio_parts(0, 8), 1);
	assert_int_equal(channel_recordio_parts(1, 8), 1);
	assert_int_equal(channel_recordio_parts(7, 8), 1);
	assert_int_equal(channel_recordio_parts(8, 8), 1);
	assert_int_equal(channel_recordio_parts(9, 8), 2);
	assert_int_equal(channel_recordio_parts(15, 8), 2);
	assert_int_equal(channel_recordio_parts(16, 8), 2);
	assert_int_equal(channel_recordio_parts(17, 8), 3);
	assert_int_equal(channel_recordio_parts(24, 8), 3);
	assert_int_equal(channel_recordio_parts(25, 8), 4);
	assert_int_equal(channel_recordio_parts(4, 4), 1);
	assert_int_equal(channel_recordio_parts(5, 4), 2);
	/* against a count of parts by walking the payload */
	for (uint64_t len = 0; len < 200; len++) {
		uint64_t n = 0, off = 0;

		do {
			off += 12;
			n++;
		} while (off < len);
		assert_int_equal(channel_recordio_parts(len, 12), n);
	}
}

static void test_parts_real(void **state)
{
	const uint64_t max = CHANNEL_RECORDIO_PART_MAX;
	const uint64_t len = (1ull << 29) + 5;

	assert_int_equal(max, 536870908); /* 2^29 - 4 */
	assert_int_equal(max % 4, 0);
	assert_int_equal(channel_recordio_parts(max - 1, max), 1);
	assert_int_equal(channel_recordio_parts(max, max), 1);
	assert_int_equal(channel_recordio_parts(max + 1, max), 2);
	/* 2^29 + 5 = (2^29 - 4) + 9: a full part then 9 bytes */
	assert_int_equal(channel_recordio_parts(len, max), 2);
	assert_int_equal(channel_recordio_framed_size(len, max),
			 2 * 8 + len + 3);
	assert_int_equal(channel_recordio_parts(2 * max, max), 2);
	assert_int_equal(channel_recordio_parts(2 * max + 1, max), 3);
	/* a 5 TiB object, S3's largest */
	assert_int_equal(channel_recordio_parts(5ull << 40, max),
			 (5ull << 40) / max + 1);
}

static void test_part_flags(void **state)
{
	/* 1 part */
	assert_int_equal(channel_recordio_part_flag(0, 1), RECORDIO_WHOLE);
	/* 2 parts */
	assert_int_equal(channel_recordio_part_flag(0, 2), RECORDIO_START);
	assert_int_equal(channel_recordio_part_flag(1, 2), RECORDIO_END);
	/* 3 parts */
	assert_int_equal(channel_recordio_part_flag(0, 3), RECORDIO_START);
	assert_int_equal(channel_recordio_part_flag(1, 3), RECORDIO_MIDDLE);
	assert_int_equal(channel_recordio_part_flag(2, 3), RECORDIO_END);
	/* 5 parts */
	assert_int_equal(channel_recordio_part_flag(0, 5), RECORDIO_START);
	assert_int_equal(channel_recordio_part_flag(1, 5), RECORDIO_MIDDLE);
	assert_int_equal(channel_recordio_part_flag(2, 5), RECORDIO_MIDDLE);
	assert_int_equal(channel_recordio_part_flag(3, 5), RECORDIO_MIDDLE);
	assert_int_equal(channel_recordio_part_flag(4, 5), RECORDIO_END);
	/* the enum values are the format's */
	assert_int_equal(RECORDIO_WHOLE, 0);
	assert_int_equal(RECORDIO_START, 1);
	assert_int_equal(RECORDIO_MIDDLE, 2);
	assert_int_equal(RECORDIO_END, 3);
}

static void test_framed_size(void **state)
{
	/* one part: header, payload, padding */
	assert_int_equal(channel_recordio_framed_size(0, 8), 8);
	assert_int_equal(channel_recordio_framed_size(1, 8), 8 + 1 + 3);
	assert_int_equal(channel_recordio_framed_size(2, 8), 8 + 2 + 2);
	assert_int_equal(channel_recordio_framed_size(3, 8), 8 + 3 + 1);
	assert_int_equal(channel_recordio_framed_size(4, 8), 8 + 4);
	assert_int_equal(channel_recordio_framed_size(8, 8), 8 + 8);
	/* 9 = 8 + 1: two headers, 9 bytes, 3 of padding after the last */
	assert_int_equal(channel_recordio_framed_size(9, 8), 16 + 9 + 3);
	assert_int_equal(channel_recordio_framed_size(16, 8), 16 + 16);
	assert_int_equal(channel_recordio_framed_size(21, 8), 24 + 21 + 3);
	assert_int_equal(
	    channel_recordio_framed_size(1000, CHANNEL_RECORDIO_PART_MAX),
	    1008);
	/* against framing part by part, as a writer would */
	for (uint64_t len = 0; len < 300; len++) {
		uint64_t parts = channel_recordio_parts(len, 16);
		uint64_t total = 0;

		for (uint64_t i = 0; i < parts; i++) {
			uint64_t start = i * 16;
			uint64_t n = len - start < 16 ? len - start : 16;

			total += 8 + n + channel_recordio_padding(n);
		}
		assert_int_equal(channel_recordio_framed_size(len, 16), total);
		assert_int_equal(total % 4, 0);
	}
}

/* hand-framed: the header written out from the format */
static size_t put_part(unsigned char *out, unsigned flag, const char *payload,
		       size_t len)
{
	uint32_t word = (uint32_t)flag << 29 | (uint32_t)len;
	const unsigned char magic[4] = {0x0a, 0x23, 0xd7, 0xce};
	size_t pad = (4 - len % 4) % 4;

	memcpy(out, magic, 4);
	for (int i = 0; i < 4; i++)
		out[4 + i] = (unsigned char)(word >> (8 * i));
	memcpy(out + 8, payload, len);
	memset(out + 8 + len, 0, pad);
	return 8 + len + pad;
}

/* Where record target begins in bytes[0, len), fed in pieces of piece
 * bytes: the offset, or (uint64_t)-1 for "past the end" with *count the
 * records; the error in *error. */
static uint64_t scan_to(enum channel_record_format format, const void *bytes,
			size_t len, uint64_t target, size_t piece,
			uint64_t *count, int *error)
{
	struct channel_records r;
	bool reached = false;
	size_t at = 0;

	channel_records_init(&r, format);
	while (at < len && !reached && !r.error) {
		size_t n = len - at < piece ? len - at : piece;

		at += channel_records_feed(&r, (const char *)bytes + at, n,
					   target, &reached);
	}
	*error = reached ? 0 : (r.error ? r.error : channel_records_end(&r));
	*count = r.records;
	return reached ? r.pos : (uint64_t)-1;
}

static void test_scan_recordio(void **state)
{
	unsigned char buf[256];
	size_t len = 0, starts[5];
	uint64_t count;
	int error;

	(void)state;
	starts[0] = len;
	len += put_part(buf + len, 0, "one", 3);
	starts[1] = len;
	len += put_part(buf + len, 1, "split-", 6); /* START MIDDLE END */
	len += put_part(buf + len, 2, "re", 2);
	len += put_part(buf + len, 3, "cord", 4);
	starts[2] = len;
	len += put_part(buf + len, 0, "", 0); /* an empty record */
	starts[3] = len;
	len += put_part(buf + len, 0, "last!", 5);
	for (size_t piece = 1; piece <= len; piece += piece < 9 ? 1 : 13) {
		for (uint64_t k = 0; k < 4; k++) {
			assert_int_equal(scan_to(CHANNEL_RECORDS_RECORDIO, buf,
						 len, k, piece, &count, &error),
					 starts[k]);
			assert_int_equal(error, 0);
			assert_int_equal(count, k);
		}
		/* past the last: the end, every record counted */
		assert_int_equal(scan_to(CHANNEL_RECORDS_RECORDIO, buf, len, 4,
					 piece, &count, &error),
				 (uint64_t)-1);
		assert_int_equal(error, 0);
		assert_int_equal(count, 4);
	}
}

static void test_scan_recordio_malformed(void **state)
{
	unsigned char buf[128];
	size_t len, bad;
	uint64_t count;
	int error;
	struct channel_records r;
	bool reached;

	(void)state;
	/* a bad magic after one good record: the error names its header */
	len = put_part(buf, 0, "good", 4);
	bad = len;
	len += put_part(buf + len, 0, "x", 1);
	buf[bad] ^= 0xff;
	channel_records_init(&r, CHANNEL_RECORDS_RECORDIO);
	channel_records_feed(&r, buf, len, 5, &reached);
	assert_false(reached);
	assert_int_equal(r.error, EBADMSG);
	assert_int_equal(r.error_at, bad);
	assert_non_null(r.why);
	/* nothing more once malformed */
	assert_int_equal(channel_records_feed(&r, buf, len, 5, &reached), 0);
	/* a MIDDLE part with no START */
	len = put_part(buf, 2, "mid", 3);
	scan_to(CHANNEL_RECORDS_RECORDIO, buf, len, 9, 1, &count, &error);
	assert_int_equal(error, EBADMSG);
	/* a START inside a split record */
	len = put_part(buf, 1, "a", 1);
	len += put_part(buf + len, 1, "b", 1);
	scan_to(CHANNEL_RECORDS_RECORDIO, buf, len, 9, 3, &count, &error);
	assert_int_equal(error, EBADMSG);
	/* the epoch ends inside a record: a truncated payload, a split
	 * record without its END, half a header */
	len = put_part(buf, 0, "abcdef", 6) - 3;
	scan_to(CHANNEL_RECORDS_RECORDIO, buf, len, 9, 2, &count, &error);
	assert_int_equal(error, EBADMSG);
	len = put_part(buf, 1, "abc", 3);
	scan_to(CHANNEL_RECORDS_RECORDIO, buf, len, 9, 2, &count, &error);
	assert_int_equal(error, EBADMSG);
	len = put_part(buf, 0, "ab", 2) + 5;
	memset(buf + len - 5, 0x0a, 5);
	scan_to(CHANNEL_RECORDS_RECORDIO, buf, len, 9, 4, &count, &error);
	assert_int_equal(error, EBADMSG);
}

static void test_scan_lines(void **state)
{
	/* a CRLF line, an empty line, a last line without its newline */
	const char text[] = "a,1\nb,2\r\n\nlast";
	const size_t starts[] = {0, 4, 9, 10};
	size_t len = strlen(text);
	uint64_t count;
	int error;

	(void)state;
	for (size_t piece = 1; piece <= len; piece++) {
		for (uint64_t k = 0; k < 4; k++) {
			assert_int_equal(scan_to(CHANNEL_RECORDS_LINES, text,
						 len, k, piece, &count, &error),
					 starts[k]);
			assert_int_equal(count, k);
		}
		assert_int_equal(scan_to(CHANNEL_RECORDS_LINES, text, len, 4,
					 piece, &count, &error),
				 (uint64_t)-1);
		assert_int_equal(count, 4); /* "last" counts */
		assert_int_equal(error, 0);
	}
	/* with a final newline, nothing follows the last line */
	assert_int_equal(
	    scan_to(CHANNEL_RECORDS_LINES, "x\ny\n", 4, 2, 1, &count, &error),
	    (uint64_t)-1);
	assert_int_equal(count, 2);
	/* nothing at all: no line */
	assert_int_equal(
	    scan_to(CHANNEL_RECORDS_LINES, "", 0, 0, 1, &count, &error),
	    (uint64_t)-1);
	assert_int_equal(count, 0);
}

static void test_record_format(void **state)
{
	struct channel_spec spec;
	static const struct {
		const char *ct;
		enum channel_record_format want;
	} cases[] = {
	    {"application/x-recordio", CHANNEL_RECORDS_RECORDIO},
	    {"Application/X-RecordIO-Protobuf; charset=x",
	     CHANNEL_RECORDS_RECORDIO},
	    {"text/csv", CHANNEL_RECORDS_LINES},
	    {" text/csv ;label_size=0", CHANNEL_RECORDS_LINES},
	    {"application/jsonlines", CHANNEL_RECORDS_LINES},
	    {"text/plain", CHANNEL_RECORDS_LINES},
	    {"text/libsvm", CHANNEL_RECORDS_LINES},
	    {"image/jpeg", CHANNEL_RECORDS_NONE},
	    {"text/csvx", CHANNEL_RECORDS_NONE},
	};

	(void)state;
	channel_spec_init(&spec);
	assert_int_equal(channel_record_format(&spec), CHANNEL_RECORDS_NONE);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		spec.content_type = (char *)cases[i].ct;
		assert_int_equal(channel_record_format(&spec), cases[i].want);
	}
	/* what the reader gets wins: framed or converted is RecordIO */
	spec.content_type = (char *)"text/csv";
	spec.wrapper = CHANNEL_WRAPPER_RECORDIO;
	assert_int_equal(channel_record_format(&spec),
			 CHANNEL_RECORDS_RECORDIO);
	spec.wrapper = CHANNEL_WRAPPER_NONE;
	spec.convert.format = CHANNEL_CONVERT_CSV;
	assert_int_equal(channel_record_format(&spec),
			 CHANNEL_RECORDS_RECORDIO);
	spec.content_type = NULL;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_header_bytes),
	    cmocka_unit_test(test_padding),
	    cmocka_unit_test(test_parts_small),
	    cmocka_unit_test(test_parts_real),
	    cmocka_unit_test(test_part_flags),
	    cmocka_unit_test(test_framed_size),
	    cmocka_unit_test(test_scan_recordio),
	    cmocka_unit_test(test_scan_recordio_malformed),
	    cmocka_unit_test(test_scan_lines),
	    cmocka_unit_test(test_record_format),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
