/*
 * Unit tests of the conversion stage: CSV and LibSVM rows to protobuf
 * RecordIO (channel/rows.c, channel/record.c) and the converter that cuts
 * a byte source into batches for several threads (channel/convert.c).
 *
 * Records are read back with protobuf-c's own unpacker, and one record is
 * checked byte for byte against its wire encoding worked out by hand.  The
 * converter is fed by a source that hands out its objects a few bytes at
 * a time, so that rows cross every read, object and batch boundary; its
 * output must equal the rows converted in one call.
 */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "channel/convert.h"
#include "channel/internal.h"
#include "channel/record.h"
#include "channel/record.pb-c.h"

/* ---- reading records back ---- */

struct row {
	size_t n;
	float values[8];
	size_t nkeys;
	uint64_t keys[8];
	size_t nshape;
	uint64_t shape;
	bool has_label;
	float label;
};

/* Splits out[0..len) into records and unpacks up to max of them into
 * rows; returns the count (asserting the framing). */
static size_t read_rows(const char *out, size_t len, struct row *rows,
			size_t max)
{
	size_t off = 0, n = 0;

	while (off < len) {
		const unsigned char *h = (const unsigned char *)out + off;
		enum channel_recordio_flag flag;
		Aialgs__Data__Record *rec;
		uint32_t plen;

		assert_true(len - off >= CHANNEL_RECORDIO_HEADER);
		assert_int_equal(channel_recordio_parse_header(h, &flag, &plen),
				 0);
		assert_int_equal(flag, RECORDIO_WHOLE);
		off += CHANNEL_RECORDIO_HEADER;
		assert_true(off + plen <= len);
		rec = aialgs__data__record__unpack(NULL, plen,
						   (const uint8_t *)out + off);
		assert_non_null(rec);
		off += plen;
		for (unsigned i = 0; i < channel_recordio_padding(plen); i++)
			assert_int_equal(out[off++], 0);
		if (n < max) {
			struct row *r = &rows[n];
			const Aialgs__Data__Float32Tensor *t;

			memset(r, 0, sizeof(*r));
			assert_int_equal(rec->n_features, 1);
			assert_string_equal(rec->features[0]->key, "values");
			assert_int_equal(
			    rec->features[0]->value->value_case,
			    AIALGS__DATA__VALUE__VALUE_FLOAT32_TENSOR);
			t = rec->features[0]->value->float32_tensor;
			r->n = t->n_values;
			for (size_t i = 0; i < t->n_values && i < 8; i++)
				r->values[i] = t->values[i];
			r->nkeys = t->n_keys;
			for (size_t i = 0; i < t->n_keys && i < 8; i++)
				r->keys[i] = t->keys[i];
			r->nshape = t->n_shape;
			if (t->n_shape)
				r->shape = t->shape[0];
			if (rec->n_label) {
				assert_int_equal(rec->n_label, 1);
				assert_string_equal(rec->label[0]->key,
						    "values");
				t = rec->label[0]->value->float32_tensor;
				assert_int_equal(t->n_values, 1);
				r->has_label = true;
				r->label = t->values[0];
			}
			assert_null(rec->uid);
		}
		aialgs__data__record__free_unpacked(rec, NULL);
		n++;
	}
	return n;
}

static struct channel_convert_conf csv_conf(void)
{
	struct channel_convert_conf c;

	channel_convert_conf_init(&c, CHANNEL_CONVERT_CSV);
	return c;
}

static struct channel_convert_conf libsvm_conf(uint64_t dim)
{
	struct channel_convert_conf c;

	channel_convert_conf_init(&c, CHANNEL_CONVERT_LIBSVM);
	c.feature_dim = dim;
	return c;
}

/* Converts text (columns from its first row); the return code. */
static int convert_text(const struct channel_convert_conf *conf,
			const char *text, struct util_buf *out,
			struct channel_rows_result *res)
{
	size_t len = strlen(text);
	size_t cols = conf->format == CHANNEL_CONVERT_CSV
			  ? (conf->feature_dim
				 ? conf->feature_dim + (conf->label_column !=
							CHANNEL_LABEL_NONE)
				 : channel_rows_columns(text, len))
			  : 0;

	util_buf_init(out, 0);
	return channel_rows_convert(conf, cols, text, len, out, res);
}

/* ---- the wire format ---- */

/*
 * One row "0,1" is a Record of 40 bytes, worked out by hand from the
 * protobuf encoding rules: Float32Tensor{values: [1]} = 0a 04 0000803f;
 * Value{float32_tensor: it} = 12 06 ...; a map entry {key: "values",
 * value: it} = 0a 06 "values" 12 08 ...; Record field 1 (features) = 0a
 * 12 ENTRY, field 2 (label, value 0) = 12 12 ENTRY.  RecordIO: magic,
 * length 40, no padding.
 */
static void test_wire_bytes(void **state)
{
	static const unsigned char want[] = {
	    0x0a, 0x23, 0xd7, 0xce, 0x28, 0x00, 0x00, 0x00, /* RecordIO */
	    0x0a, 0x12, 0x0a, 0x06, 'v',  'a',	'l',  'u',  'e',  's',
	    0x12, 0x08, 0x12, 0x06, 0x0a, 0x04, 0x00, 0x00, 0x80, 0x3f,
	    0x12, 0x12, 0x0a, 0x06, 'v',  'a',	'l',  'u',  'e',  's',
	    0x12, 0x08, 0x12, 0x06, 0x0a, 0x04, 0x00, 0x00, 0x00, 0x00};
	struct channel_convert_conf conf = csv_conf();
	struct channel_rows_result res;
	struct util_buf out;

	(void)state;
	assert_int_equal(convert_text(&conf, "0,1\n", &out, &res), 0);
	assert_int_equal(res.rows, 1);
	assert_int_equal(out.len, sizeof(want));
	assert_memory_equal(out.data, want, sizeof(want));
	util_buf_free(&out);
}

/* A dense row written by hand is byte for byte protobuf-c's packing of
 * it, at every count where a length's varint grows a byte (the values' 4
 * bytes a count pass 127 at 32, the entry at 30, 4,096 values pass
 * 16,383), with a label and without. */
static void test_wire_dense_matches_protobuf_c(void **state)
{
	static const size_t counts[] = {0,    1,    2,	  29,	30,   31,
					32,   33,   100,  101,	4094, 4095,
					4096, 4097, 5000, 40000};
	float *values = malloc(40000 * sizeof(*values));
	float label = -0.25f;
	struct util_buf hand, packed;

	(void)state;
	assert_non_null(values);
	for (size_t i = 0; i < 40000; i++)
		values[i] = (float)i * 0.37f - 1000.0f;
	util_buf_init(&hand, 0);
	util_buf_init(&packed, 0);
	for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
		for (int with_label = 0; with_label < 2; with_label++) {
			struct channel_record rec = {
			    .values = values,
			    .count = counts[c],
			    .label = with_label ? &label : NULL};

			hand.len = packed.len = 0;
			assert_int_equal(channel_record_append(&hand, &rec), 0);
			assert_int_equal(
			    channel_record_append_packed(&packed, &rec), 0);
			assert_int_equal(hand.len, packed.len);
			assert_memory_equal(hand.data, packed.data, hand.len);
		}
	}
	util_buf_free(&hand);
	util_buf_free(&packed);
	free(values);
}

/* A sparse row: keys and shape set; padding after a length not a multiple
 * of 4; dump prints what was packed. */
static void test_wire_sparse_and_dump(void **state)
{
	static const float values[] = {0.5f, -2.0f, 1e-3f};
	static const uint64_t keys[] = {3, 70000, 1ULL << 40};
	float label = 7;
	struct channel_record rec = {.values = values,
				     .count = 3,
				     .keys = keys,
				     .dim = 1ULL << 41,
				     .label = &label};
	struct util_buf out, text;
	struct row r;
	char err[256];

	(void)state;
	util_buf_init(&out, 0);
	util_buf_init(&text, 0);
	assert_int_equal(channel_record_append(&out, &rec), 0);
	assert_int_equal(out.len % 4, 0);
	assert_int_equal(read_rows(out.data, out.len, &r, 1), 1);
	assert_int_equal(r.n, 3);
	assert_true(r.values[2] == 1e-3f);
	assert_int_equal(r.nkeys, 3);
	assert_true(r.keys[2] == 1ULL << 40);
	assert_int_equal(r.nshape, 1);
	assert_true(r.shape == 1ULL << 41);
	assert_true(r.has_label && r.label == 7);
	assert_int_equal(
	    channel_record_dump(out.data + 8,
				out.len - 8 -
				    channel_recordio_padding(out.len - 8),
				&text, err, sizeof(err)),
	    0);
	assert_string_equal(
	    text.data, "{\"features\": {\"values\": {\"float32\": [0.5, -2, "
		       "0.00100000005], \"keys\": [3, 70000, "
		       "1099511627776], \"shape\": [2199023255552]}}, "
		       "\"label\": {\"values\": {\"float32\": [7]}}}\n");
	/* garbage is not a Record */
	assert_int_equal(
	    channel_record_dump("\xff\xff\xff", 3, &text, err, sizeof(err)),
	    EINVAL);
	util_buf_free(&out);
	util_buf_free(&text);
}

/* ---- CSV ---- */

static void test_csv_forms(void **state)
{
	struct channel_convert_conf conf = csv_conf();
	struct channel_rows_result res;
	struct util_buf out;
	struct row r[8];

	(void)state;
	/* quotes, CRLF, blanks, exponents, a blank line, no final LF */
	assert_int_equal(convert_text(&conf,
				      "1,\"2.5\",  -3e-2 ,+4E+1\r\n"
				      "\r\n"
				      "   \n"
				      "0,\"1\"\r\n,5,6,7", /* bad: 2 rows */
				      &out, &res),
			 EINVAL);
	assert_int_equal(res.rows, 1);
	assert_int_equal(read_rows(out.data, out.len, r, 8), 1);
	assert_int_equal(r[0].n, 3);
	assert_true(r[0].label == 1);
	assert_true(r[0].values[0] == 2.5f);
	assert_true(r[0].values[1] == -3e-2f);
	assert_true(r[0].values[2] == 40.0f);
	util_buf_free(&out);

	assert_int_equal(convert_text(&conf,
				      "1,2,3,4\r\n\n"
				      "5,6,7,\"8\"\r\n"
				      "9,10,11,12", /* no final LF */
				      &out, &res),
			 0);
	assert_int_equal(read_rows(out.data, out.len, r, 8), 3);
	assert_true(r[1].label == 5 && r[1].values[2] == 8);
	assert_true(r[2].label == 9 && r[2].values[2] == 12);
	util_buf_free(&out);

	/* no label; a label in column 2 */
	conf.label_column = CHANNEL_LABEL_NONE;
	assert_int_equal(convert_text(&conf, "1,2,3\n", &out, &res), 0);
	assert_int_equal(read_rows(out.data, out.len, r, 8), 1);
	assert_int_equal(r[0].n, 3);
	assert_false(r[0].has_label);
	assert_int_equal(r[0].nkeys, 0);
	assert_int_equal(r[0].nshape, 0);
	util_buf_free(&out);
	conf.label_column = 2;
	assert_int_equal(convert_text(&conf, "1,2,3,4\n", &out, &res), 0);
	assert_int_equal(read_rows(out.data, out.len, r, 8), 1);
	assert_true(r[0].label == 3);
	assert_true(r[0].values[0] == 1 && r[0].values[1] == 2 &&
		    r[0].values[2] == 4);
	util_buf_free(&out);
	/* a label column past the row: every row is bad */
	conf.label_column = 9;
	assert_int_equal(convert_text(&conf, "1,2\n", &out, &res), EINVAL);
	assert_non_null(strstr(res.why, "no label column 9"));
	util_buf_free(&out);
}

/* Each bad row, its message, and that skipping counts it. */
static void test_csv_bad_rows(void **state)
{
	static const struct {
		const char *text, *why;
	} cases[] = {
	    {"1,2\n1,abc\n", "column 1 ('abc') is not a number"},
	    {"1,2\n1,\n", "column 1 is empty"},
	    {"1,2\n1,nan\n", "column 1 is 'nan': only finite numbers"},
	    {"1,2\n-inf,1\n", "column 0 is '-inf'"},
	    {"1,2\n1,1e39\n", "column 1 ('1e39') is out of float32's range"},
	    {"1,2\n1,2,3\n", "3 columns where the first row has 2"},
	    {"1,2\n1\n", "1 columns where the first row has 2"},
	    {"1,2\n1,\"2\"x\n", "text after a quoted field's closing quote"},
	    {"1,2\n1,\"2\"\"\"\n", "column 1 is not a number (it holds a "
				   "quote)"},
	    {"1,2\n1,\"3,4\"\n", "column 1 ('3,4') is not a number"},
	    {"1,2\n1,\"2", "column 1: a quoted field is not closed"},
	    {"1,2\n1,0x10\n", "column 1 ('0x10') is not a number"},
	};
	struct channel_convert_conf conf = csv_conf();

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct channel_rows_result res;
		struct util_buf out;
		struct row r;

		conf.bad_row_skip = false;
		assert_int_equal(convert_text(&conf, cases[i].text, &out, &res),
				 EINVAL);
		if (!strstr(res.why, cases[i].why))
			fail_msg("case %zu: '%s' lacks '%s'", i, res.why,
				 cases[i].why);
		assert_int_equal(res.bad_at, 4);
		assert_int_equal(read_rows(out.data, out.len, &r, 1), 1);
		util_buf_free(&out);
		conf.bad_row_skip = true;
		assert_int_equal(convert_text(&conf, cases[i].text, &out, &res),
				 0);
		assert_int_equal(res.rows, 1);
		assert_int_equal(res.skipped, 1);
		util_buf_free(&out);
	}
}

/* Rows of 200,000 columns; --feature-dim fixes the count. */
static void test_csv_long_rows(void **state)
{
	const size_t cols = 200000;
	struct channel_convert_conf conf = csv_conf();
	struct channel_rows_result res;
	struct util_buf text, out;
	struct row r[2];

	(void)state;
	util_buf_init(&text, 0);
	for (int row = 0; row < 2; row++) {
		for (size_t c = 0; c < cols; c++)
			assert_int_equal(util_buf_printf(&text, "%s%zu",
							 c ? "," : "", c % 97),
					 0);
		assert_int_equal(util_buf_append(&text, "\n", 1), 0);
	}
	assert_int_equal(convert_text(&conf, text.data, &out, &res), 0);
	assert_int_equal(read_rows(out.data, out.len, r, 2), 2);
	assert_int_equal(r[0].n, cols - 1);
	assert_true(r[1].values[7] == 8);
	util_buf_free(&out);
	conf.feature_dim = 10;
	assert_int_equal(convert_text(&conf, text.data, &out, &res), EINVAL);
	assert_non_null(strstr(res.why, "where the configuration says 11"));
	util_buf_free(&out);
	util_buf_free(&text);
}

/* Where rows end: quoted line ends belong to the row; without quotes the
 * last LF. */
static size_t complete(enum channel_convert_format f, const char *text)
{
	return channel_rows_complete(f, text, strlen(text));
}

static void test_rows_complete(void **state)
{
	const enum channel_convert_format csv = CHANNEL_CONVERT_CSV;

	(void)state;
	assert_int_equal(complete(csv, "1,2\n3,4"), 4);
	assert_int_equal(complete(csv, "1,\"a\nb\"\n3"), 8);
	assert_int_equal(complete(csv, "1,\"a\nb"), 0);
	assert_int_equal(complete(csv, "1,\"a\"\"\n\"\n"), 9);
	/* a quote inside an unquoted field is an ordinary byte */
	assert_int_equal(complete(csv, "1,a\"b\n2"), 6);
	assert_int_equal(complete(CHANNEL_CONVERT_LIBSVM, "1 2:3\n\""), 6);
	assert_int_equal(channel_rows_columns("\n \n1,\"2,3\",4\n", 13), 3);
	assert_int_equal(channel_rows_columns("\n\n", 2), 0);
}

/* ---- LibSVM ---- */

static void test_libsvm(void **state)
{
	struct channel_convert_conf conf = libsvm_conf(100);
	struct channel_rows_result res;
	struct util_buf out;
	struct row r[4];

	(void)state;
	assert_int_equal(convert_text(&conf,
				      "+1 1:0.5 7:2e1\n"
				      "# a comment line\n"
				      "-1 qid:4 0:1 99:-1 # trailing\r\n"
				      "0\n"
				      "\t2.5\t3:1",
				      &out, &res),
			 0);
	assert_int_equal(read_rows(out.data, out.len, r, 4), 4);
	assert_true(r[0].label == 1 && r[0].n == 2);
	assert_true(r[0].keys[0] == 1 && r[0].keys[1] == 7);
	assert_true(r[0].values[1] == 20);
	assert_int_equal(r[0].nshape, 1);
	assert_true(r[0].shape == 100);
	assert_true(r[1].label == -1 && r[1].keys[0] == 0 &&
		    r[1].keys[1] == 99 && r[1].values[1] == -1);
	assert_int_equal(r[2].n, 0);
	assert_int_equal(r[2].nshape, 1);
	assert_true(r[3].label == 2.5f && r[3].keys[0] == 3);
	util_buf_free(&out);

	assert_int_equal(convert_text(&conf, "1 100:1\n", &out, &res), EINVAL);
	assert_non_null(strstr(res.why, "index 100 is past the feature"));
	util_buf_free(&out);
	assert_int_equal(convert_text(&conf, "1 3\n", &out, &res), EINVAL);
	assert_non_null(strstr(res.why, "'3' is not INDEX:VALUE"));
	util_buf_free(&out);
	assert_int_equal(convert_text(&conf, "1 a:1\n", &out, &res), EINVAL);
	assert_non_null(strstr(res.why, "the index is not a number"));
	util_buf_free(&out);
	assert_int_equal(convert_text(&conf, "x 1:1\n", &out, &res), EINVAL);
	assert_non_null(strstr(res.why, "the label ('x') is not a number"));
	util_buf_free(&out);
	assert_int_equal(convert_text(&conf, "1 2:nan\n", &out, &res), EINVAL);
	assert_non_null(strstr(res.why, "the value of index 2 is 'nan'"));
	util_buf_free(&out);
}

/* ---- the converter ---- */

/* A source of objects handed out step bytes at a time (step cycles
 * through 1..max_step). */
/* the stage below the converter: objects in turn, max_step bytes a read */
struct test_source {
	struct channel_stage stage; /* first */
	const char *const *objects;
	const char *const *names;
	size_t nobjects;
	size_t obj, off;
	unsigned step, max_step;
	struct iovec iov;
	int fail_at_obj; /* read fails when reaching it (-1: never) */
};

static int test_read(struct channel_stage *st, uint64_t offset, size_t size,
		     struct channel_view *view, struct channel_origin *origin)
{
	struct test_source *ts = (struct test_source *)st;
	size_t left, n;

	(void)offset;
	assert_non_null(origin); /* the converter reads objects */
	while (ts->obj < ts->nobjects && !ts->objects[ts->obj][ts->off]) {
		ts->obj++;
		ts->off = 0;
	}
	if ((int)ts->obj == ts->fail_at_obj)
		return EIO;
	view->iov = &ts->iov;
	if (ts->obj == ts->nobjects) {
		view->count = 0;
		view->bytes = 0;
		return 0;
	}
	left = strlen(ts->objects[ts->obj] + ts->off);
	if (ts->max_step) {
		ts->step = ts->step % ts->max_step + 1;
		n = ts->step < left ? ts->step : left;
	} else {
		n = left; /* as much as asked */
	}
	if (n > size)
		n = size;
	ts->iov.iov_base = (void *)(ts->objects[ts->obj] + ts->off);
	ts->iov.iov_len = n;
	view->count = 1;
	view->bytes = n;
	origin->index = ts->obj;
	origin->bucket = "b";
	origin->key = ts->names[ts->obj];
	origin->object_id = 100 + ts->obj;
	ts->off += n;
	return 0;
}

static void test_release(struct channel_stage *st, struct channel_view *view)
{
	(void)st;
	view->count = 0;
}

static uint64_t test_position(struct channel_stage *st)
{
	(void)st;
	return 0;
}

static void test_destroy(struct channel_stage *st)
{
	(void)st;
}

static const struct channel_stage_ops test_ops = {
    .read = test_read,
    .release = test_release,
    .position = test_position,
    .destroy = test_destroy,
};

/* Everything a converter hands out, until the end or an error (*rc). */
static void drain(struct channel_converter *cv, struct util_buf *out, int *rc)
{
	uint64_t pos = 0;

	util_buf_init(out, 0);
	for (;;) {
		struct channel_view v;

		memset(&v, 0, sizeof(v));
		*rc = channel_converter_read(cv, pos, 100000, &v);
		for (int i = 0; i < v.count; i++)
			assert_int_equal(util_buf_append(out, v.iov[i].iov_base,
							 v.iov[i].iov_len),
					 0);
		pos += v.bytes;
		channel_converter_release(cv, &v);
		if (*rc || !v.bytes)
			break;
	}
	assert_int_equal(channel_converter_position(cv), pos);
}

/* Runs a converter over objects; stderr's lines in log (if not NULL). */
static void run_converter(const struct channel_convert_conf *conf,
			  const char *const *objects, size_t n,
			  unsigned max_step, unsigned threads,
			  struct util_buf *out, int *rc, char *log,
			  size_t loglen, int fail_at_obj)
{
	static const char *const names[] = {"o0", "o1", "o2", "o3", "o4",
					    "o5", "o6", "o7", "o8", "o9"};
	struct test_source ts = {.stage = {.ops = &test_ops},
				 .objects = objects,
				 .names = names,
				 .nobjects = n,
				 .max_step = max_step,
				 .fail_at_obj = fail_at_obj};
	struct channel_converter *cv;
	int saved = -1, fd = -1;
	char path[] = "/tmp/test_convert_logXXXXXX";

	assert_true(n <= 10);
	if (log) {
		fflush(stderr);
		fd = mkstemp(path);
		assert_true(fd >= 0);
		saved = dup(STDERR_FILENO);
		dup2(fd, STDERR_FILENO);
	}
	cv = channel_converter_create(conf, &ts.stage, "channel 't'", threads);
	assert_non_null(cv);
	drain(cv, out, rc);
	channel_converter_destroy(cv);
	if (log) {
		ssize_t got;

		fflush(stderr);
		dup2(saved, STDERR_FILENO);
		close(saved);
		got = pread(fd, log, loglen - 1, 0);
		log[got > 0 ? got : 0] = '\0';
		close(fd);
		unlink(path);
	}
}

/* Generated CSV rows, numbered from first. */
static char *gen_rows(unsigned first, unsigned count, bool final_lf)
{
	struct util_buf b;

	util_buf_init(&b, 0);
	for (unsigned i = first; i < first + count; i++)
		assert_int_equal(
		    util_buf_printf(&b, "%u,%u.5,\"%u\",-%ue-3%s", i % 2, i,
				    i * 3, i,
				    i + 1 < first + count || final_lf
					? (i % 3 ? "\n" : "\r\n")
					: ""),
		    0);
	return util_buf_take(&b);
}

/* Rows crossing reads, objects and batches come out as the whole text
 * converted in one call, with one thread or four. */
static void test_converter_matches_rows(void **state)
{
	struct channel_convert_conf conf = csv_conf();
	char *o[4], *whole;
	struct util_buf out, want;
	struct channel_rows_result res;
	int rc;

	(void)state;
	/* object 1 ends inside a row that object 2 finishes */
	o[0] = gen_rows(0, 30000, true);      /* about 1 MiB: several batches */
	o[1] = gen_rows(30000, 10, false);    /* ends mid-row: "...-30009e-3" */
	o[2] = strdup("1\n2,3,4,5\n");	      /* ...e-31\n: one row */
	o[3] = gen_rows(40000, 20000, false); /* the end, no final LF */
	util_buf_init(&want, 0);
	for (int i = 0; i < 4; i++)
		assert_int_equal(util_buf_append_str(&want, o[i]), 0);
	whole = util_buf_take(&want);
	assert_int_equal(convert_text(&conf, whole, &want, &res), 0);
	assert_int_equal(res.rows, 30000 + 10 + 1 + 20000);
	for (unsigned threads = 1; threads <= 4; threads += 3) {
		run_converter(&conf, (const char *const *)o, 4, 7000, threads,
			      &out, &rc, NULL, 0, -1);
		assert_int_equal(rc, 0);
		assert_int_equal(out.len, want.len);
		assert_memory_equal(out.data, want.data, want.len);
		util_buf_free(&out);
	}
	/* byte by byte through a small object set */
	{
		const char *small[] = {"1,2", ",3\n4,5,", "6\r", "\n\n7,8,9"};

		run_converter(&conf, small, 4, 1, 2, &out, &rc, NULL, 0, -1);
		assert_int_equal(rc, 0);
		util_buf_free(&want);
		assert_int_equal(
		    convert_text(&conf, "1,2,3\n4,5,6\r\n\n7,8,9", &want, &res),
		    0);
		assert_int_equal(out.len, want.len);
		assert_memory_equal(out.data, want.data, want.len);
		util_buf_free(&out);
	}
	util_buf_free(&want);
	free(whole);
	for (int i = 0; i < 4; i++)
		free(o[i]);
}

/* With headers each object is a file: its first line is dropped and its
 * end ends its last row. */
static void test_converter_headers(void **state)
{
	const char *objs[] = {"y,a,b\n1,2,3\n4,5,6", "y,a,b\r\n7,8,9\n",
			      "y,a,b", "y,a,b\n10,11,12"};
	struct channel_convert_conf conf = csv_conf();
	struct channel_rows_result res;
	struct util_buf out, want;
	int rc;

	(void)state;
	conf.header_skip = true;
	run_converter(&conf, objs, 4, 3, 2, &out, &rc, NULL, 0, -1);
	assert_int_equal(rc, 0);
	conf.header_skip = false;
	assert_int_equal(
	    convert_text(&conf, "1,2,3\n4,5,6\n7,8,9\n10,11,12\n", &want, &res),
	    0);
	assert_int_equal(out.len, want.len);
	assert_memory_equal(out.data, want.data, want.len);
	util_buf_free(&out);
	util_buf_free(&want);
}

/* A bad row: the rows before it, then EIO; the log names the object and
 * the line (counted across batches and after the header).  Skipping
 * instead: counted, logged, the rest converted. */
static void test_converter_bad_row(void **state)
{
	struct channel_convert_conf conf = csv_conf();
	struct channel_rows_result res;
	char *o[3], log[4096];
	struct util_buf out, want;
	int rc;

	(void)state;
	o[0] = gen_rows(0, 40000, true);
	o[1] = gen_rows(0, 40000, true);
	/* row 29999 of o1 is its line 30000 (the header is line 1) */
	memcpy(strstr(o[1], "\n1,29999.5,") + 1, "x", 1);
	o[2] = gen_rows(0, 10, true);
	conf.header_skip = true;
	run_converter(&conf, (const char *const *)o, 3, 65536, 3, &out, &rc,
		      log, sizeof(log), -1);
	assert_int_equal(rc, EIO);
	if (!strstr(log, "s3://b/o1, line 30000: column 0 ('x') is not a "
			 "number: the conversion stops there"))
		fail_msg("log: %s", log);
	/* the output is every row before the bad one */
	conf.header_skip = false;
	{
		struct util_buf text;

		util_buf_init(&text, 0);
		assert_int_equal(
		    util_buf_append_str(&text, strchr(o[0], '\n') + 1), 0);
		assert_int_equal(
		    util_buf_append(&text, strchr(o[1], '\n') + 1,
				    (size_t)(strstr(o[1], "\nx,29999.5,") + 1 -
					     strchr(o[1], '\n') - 1)),
		    0);
		assert_int_equal(convert_text(&conf, text.data, &want, &res),
				 0);
		util_buf_free(&text);
	}
	assert_int_equal(out.len, want.len);
	assert_memory_equal(out.data, want.data, want.len);
	util_buf_free(&out);
	util_buf_free(&want);

	conf.header_skip = true;
	conf.bad_row_skip = true;
	run_converter(&conf, (const char *const *)o, 3, 65536, 2, &out, &rc,
		      log, sizeof(log), -1);
	assert_int_equal(rc, 0);
	if (!strstr(log, "s3://b/o1, line 30000: column 0 ('x') is not a "
			 "number: row skipped") ||
	    !strstr(log, "1 bad row skipped, 1 of them logged (80006 rows "
			 "converted)"))
		fail_msg("log: %s", log);
	util_buf_free(&out);
	for (int i = 0; i < 3; i++)
		free(o[i]);
}

/* A batch cut that falls exactly at the end of what was read (1 MiB of
 * 1 KiB rows, read in the converter's own read size): the next batch
 * still knows its object, and a bad row after it is named. */
static void test_converter_exact_cut(void **state)
{
	struct channel_convert_conf conf = csv_conf();
	struct util_buf a, out;
	char *o[2], log[4096];
	int rc;

	(void)state;
	util_buf_init(&a, 0);
	for (int i = 0; i < 1024; i++) {
		assert_int_equal(util_buf_append(&a, "1,0.", 4), 0);
		for (int j = 0; j < 1019; j++)
			assert_int_equal(util_buf_append(&a, "1", 1), 0);
		assert_int_equal(util_buf_append(&a, "\n", 1), 0);
	}
	assert_int_equal(a.len, 1u << 20);
	for (int i = 0; i < 5000; i++)
		assert_int_equal(util_buf_printf(&a, "%d,%d.5\n", i % 2, i), 0);
	assert_int_equal(util_buf_append_str(&a, "1,x\n"), 0);
	o[0] = util_buf_take(&a);
	o[1] = strdup("0,1\n");
	run_converter(&conf, (const char *const *)o, 2, 0, 2, &out, &rc, log,
		      sizeof(log), -1);
	assert_int_equal(rc, EIO);
	if (!strstr(log, "s3://b/o0, line 6025: column 1 ('x') is not a "
			 "number"))
		fail_msg("log: %s", log);
	util_buf_free(&out);
	free(o[0]);
	free(o[1]);
}

/* A first line of words reads as a header left in: the message says
 * how to drop it. */
static void test_converter_header_hint(void **state)
{
	const char *objs[] = {"label,a,b\n1,2,3\n"};
	struct channel_convert_conf conf = csv_conf();
	struct util_buf out;
	char log[4096];
	int rc;

	(void)state;
	run_converter(&conf, objs, 1, 100, 1, &out, &rc, log, sizeof(log), -1);
	assert_int_equal(rc, EIO);
	if (!strstr(log, "s3://b/o0, line 1: column 0 ('label') is not a "
			 "number (a header line? --csv-header skip drops each "
			 "object's first line)"))
		fail_msg("log: %s", log);
	util_buf_free(&out);
}

/* The source failing: the whole rows before it, then EIO. */
static void test_converter_source_error(void **state)
{
	const char *objs[] = {"1,2\n3,4\n5,", "6\n"};
	struct channel_convert_conf conf = csv_conf();
	struct util_buf out;
	struct row r[4];
	int rc;

	(void)state;
	run_converter(&conf, objs, 2, 100, 1, &out, &rc, NULL, 0, 1);
	assert_int_equal(rc, EIO);
	assert_int_equal(read_rows(out.data, out.len, r, 4), 2);
	util_buf_free(&out);
}

/*
 * Marks say where each one's records begin in the output: at a row's
 * start, the records of the rows before it (blank rows and skipped bad
 * rows make none); inside a row, unknown; at the end, all of them; past a
 * bad row that stops the conversion, unknown.
 */
static void test_rows_marks(void **state)
{
	/* rows: "0,1\n" "1,2\n" "\n" "x,3\n" "0,4" */
	static const char text[] = "0,1\n1,2\n\nx,3\n0,4";
	const size_t at[] = {0, 2, 4, 8, 9, 13, sizeof(text) - 1};
	size_t out_at[7], one;
	struct channel_rows_marks marks = {at, out_at, 7};
	struct channel_convert_conf conf = csv_conf();
	struct channel_rows_result res;
	struct util_buf out;

	(void)state;
	/* one record's bytes, from a row of the same shape */
	assert_int_equal(convert_text(&conf, "0,1\n", &out, &res), 0);
	one = out.len;
	util_buf_free(&out);

	conf.bad_row_skip = true;
	util_buf_init(&out, 0);
	assert_int_equal(channel_rows_convert_marked(&conf, 2, text,
						     sizeof(text) - 1, &marks,
						     &out, &res),
			 0);
	assert_int_equal(res.rows, 3);
	assert_int_equal(res.skipped, 1);
	assert_int_equal(out_at[0], 0);
	assert_int_equal(out_at[1], SIZE_MAX); /* inside "0,1" */
	assert_int_equal(out_at[2], one);
	assert_int_equal(out_at[3], 2 * one); /* the blank row's start */
	assert_int_equal(out_at[4], 2 * one); /* the bad row's */
	assert_int_equal(out_at[5], 2 * one); /* after it: skipped */
	assert_int_equal(out_at[6], 3 * one); /* the end */
	assert_int_equal(out.len, 3 * one);
	util_buf_free(&out);

	/* the bad row stops it: the marks after it are unknown */
	conf.bad_row_skip = false;
	util_buf_init(&out, 0);
	assert_int_equal(channel_rows_convert_marked(&conf, 2, text,
						     sizeof(text) - 1, &marks,
						     &out, &res),
			 EINVAL);
	assert_int_equal(out_at[3], 2 * one);
	assert_int_equal(out_at[5], SIZE_MAX);
	assert_int_equal(out_at[6], SIZE_MAX);
	util_buf_free(&out);
}

/*
 * Read with origin, a view holds one object's records and names it, its
 * object id passed on; where a row runs from one object into the next, the
 * records of both come as one, with no object id; the last object, whose
 * last row has no newline, has none either (in another order that row runs
 * into the next object).
 */
static void test_converter_objects(void **state)
{
	static const char *const objects[] = {"0,1\n1,2\n", "0,3\n1,",
					      "4\n0,5\n", "1,6\n", "0,7"};
	static const char *const names[] = {"o0", "o1", "o2", "o3", "o4"};
	struct test_source ts = {.stage = {.ops = &test_ops},
				 .objects = objects,
				 .names = names,
				 .nobjects = 5,
				 .max_step = 3,
				 .fail_at_obj = -1};
	struct channel_convert_conf conf = csv_conf();
	struct channel_converter *cv;
	struct channel_stage *st;
	struct channel_rows_result res;
	struct util_buf out;
	/* per object seen: its index, id and bytes */
	uint64_t index[8], id[8], bytes[8], one;
	size_t seen = 0;

	(void)state;
	assert_int_equal(convert_text(&conf, "0,1\n", &out, &res), 0);
	one = out.len;
	util_buf_free(&out);
	cv = channel_converter_create(&conf, &ts.stage, "channel 't'", 2);
	assert_non_null(cv);
	st = channel_converter_stage(cv);
	for (;;) {
		struct channel_view v;
		struct channel_origin o = {0};

		memset(&v, 0, sizeof(v));
		assert_int_equal(st->ops->read(st, 0, 100000, &v, &o), 0);
		if (!v.bytes) {
			st->ops->release(st, &v);
			break;
		}
		if (!seen || index[seen - 1] != o.index) {
			char want[16];

			assert_true(seen < 8 && o.index < 5);
			snprintf(want, sizeof(want), "s3://b/%s",
				 names[o.index]);
			assert_string_equal(o.key, want);
			assert_null(o.bucket);
			index[seen] = o.index;
			id[seen] = o.object_id;
			bytes[seen++] = 0;
		} else {
			assert_int_equal(id[seen - 1], o.object_id);
		}
		bytes[seen - 1] += v.bytes;
		st->ops->release(st, &v);
	}
	channel_converter_destroy(cv);
	assert_int_equal(seen, 4);
	assert_int_equal(index[0], 0);
	assert_int_equal(id[0], 100);
	assert_int_equal(bytes[0], 2 * one);
	assert_int_equal(index[1], 1); /* o1 and o2: "1," "4" is one row */
	assert_int_equal(id[1], 0);
	assert_int_equal(bytes[1], 3 * one);
	assert_int_equal(index[2], 3);
	assert_int_equal(id[2], 103);
	assert_int_equal(bytes[2], one);
	assert_int_equal(index[3], 4);
	assert_int_equal(id[3], 0);
	assert_int_equal(bytes[3], one);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_wire_bytes),
	    cmocka_unit_test(test_rows_marks),
	    cmocka_unit_test(test_converter_objects),
	    cmocka_unit_test(test_wire_sparse_and_dump),
	    cmocka_unit_test(test_wire_dense_matches_protobuf_c),
	    cmocka_unit_test(test_csv_forms),
	    cmocka_unit_test(test_csv_bad_rows),
	    cmocka_unit_test(test_csv_long_rows),
	    cmocka_unit_test(test_rows_complete),
	    cmocka_unit_test(test_libsvm),
	    cmocka_unit_test(test_converter_matches_rows),
	    cmocka_unit_test(test_converter_headers),
	    cmocka_unit_test(test_converter_bad_row),
	    cmocka_unit_test(test_converter_exact_cut),
	    cmocka_unit_test(test_converter_header_hint),
	    cmocka_unit_test(test_converter_source_error),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
