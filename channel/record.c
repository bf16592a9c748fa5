/*
 * channel records: rows packed as SageMaker's protobuf Record with
 * protobuf-c, and Records printed back as JSON lines (see record.h).
 *
 * Packing builds the Record's messages on the stack around the caller's
 * arrays (nothing is copied or allocated), asks protobuf-c for the packed
 * size, which the RecordIO header needs first, and packs straight into the
 * output buffer after the header.  A dense row, what CSV gives, is written
 * by hand instead: its layout is fixed (the sizes nest, the values are the
 * floats' own bytes on a little-endian host), and protobuf-c's walk of
 * its descriptors cost a tenth of a CSV conversion.  Both write the same
 * bytes (test_convert checks the one against the other).
 */
#include "config.h"

#include "channel/record.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "channel/internal.h"
#include "channel/record.pb-c.h"

static char values_key[] = "values"; /* the SDK's one map key */

/* Bytes of v as a protobuf varint. */
static size_t varint_size(uint64_t v)
{
	size_t n = 1;

	for (; v >= 0x80; v >>= 7)
		n++;
	return n;
}

static unsigned char *put_varint(unsigned char *p, uint64_t v)
{
	for (; v >= 0x80; v >>= 7)
		*p++ = (unsigned char)(v | 0x80);
	*p++ = (unsigned char)v;
	return p;
}

/* A length-delimited field's tag (wire type 2) */
#define LEN_TAG(field) ((unsigned char)((field) << 3 | 2))

/*
 * The sizes of a map entry {"values": Value{float32_tensor: {values}}}
 * with count dense values, from the inside out: the tensor (its packed
 * values, absent when there are none), the Value, the entry.
 */
struct entry_sizes {
	size_t tensor, value, entry;
};

static size_t entry_size(size_t count, struct entry_sizes *sz)
{
	size_t bytes = count * sizeof(float);

	sz->tensor = count ? 1 + varint_size(bytes) + bytes : 0;
	sz->value = 1 + varint_size(sz->tensor) + sz->tensor;
	sz->entry = 2 + (sizeof(values_key) - 1) + 1 + varint_size(sz->value) +
		    sz->value;
	return 1 + varint_size(sz->entry) + sz->entry;
}

static unsigned char *put_entry(unsigned char *p, unsigned field,
				const float *values, size_t count,
				const struct entry_sizes *sz)
{
	*p++ = LEN_TAG(field);
	p = put_varint(p, sz->entry);
	*p++ = LEN_TAG(1); /* the key */
	*p++ = (unsigned char)(sizeof(values_key) - 1);
	memcpy(p, values_key, sizeof(values_key) - 1);
	p += sizeof(values_key) - 1;
	*p++ = LEN_TAG(2); /* the Value */
	p = put_varint(p, sz->value);
	*p++ = LEN_TAG(2); /* its float32_tensor */
	p = put_varint(p, sz->tensor);
	if (count) {
		*p++ = LEN_TAG(1); /* the packed values */
		p = put_varint(p, count * sizeof(float));
		memcpy(p, values, count * sizeof(float));
		p += count * sizeof(float);
	}
	return p;
}

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define DENSE_BY_HAND 1
#else
#define DENSE_BY_HAND 0
#endif

/*
 * Room at the end of out for a Record of size bytes, framed: the RecordIO
 * header written, the payload's start returned; NULL with *rc EFBIG (too
 * long for one record) or ENOMEM.  frame_end() pads and commits it.
 */
static unsigned char *frame_begin(struct util_buf *out, size_t size, int *rc)
{
	unsigned char *room;

	if (size >= CHANNEL_RECORDIO_PART_MAX) {
		*rc = EFBIG;
		return NULL;
	}
	room = (unsigned char *)util_buf_reserve(
	    out,
	    CHANNEL_RECORDIO_HEADER + size + channel_recordio_padding(size));
	if (!room) {
		*rc = errno;
		return NULL;
	}
	channel_recordio_header(room, RECORDIO_WHOLE, (uint32_t)size);
	return room + CHANNEL_RECORDIO_HEADER;
}

static void frame_end(struct util_buf *out, size_t size)
{
	size_t pad = channel_recordio_padding(size);

	memset(out->data + out->len + CHANNEL_RECORDIO_HEADER + size, 0, pad);
	util_buf_commit(out, CHANNEL_RECORDIO_HEADER + size + pad);
}

/* A dense row's Record, framed (see the top of this file). */
static int dense_append(struct util_buf *out, const struct channel_record *rec)
{
	struct entry_sizes fsz, lsz;
	size_t size = entry_size(rec->count, &fsz);
	unsigned char *p;
	int rc;

	if (rec->count > CHANNEL_RECORDIO_PART_MAX / sizeof(float))
		return EFBIG;
	if (rec->label)
		size += entry_size(1, &lsz);
	p = frame_begin(out, size, &rc);
	if (!p)
		return rc;
	p = put_entry(p, 1, rec->values, rec->count, &fsz);
	if (rec->label)
		(void)put_entry(p, 2, rec->label, 1, &lsz);
	frame_end(out, size);
	return 0;
}

int channel_record_append(struct util_buf *out,
			  const struct channel_record *rec)
{
	return DENSE_BY_HAND && !rec->keys
		   ? dense_append(out, rec)
		   : channel_record_append_packed(out, rec);
}

int channel_record_append_packed(struct util_buf *out,
				 const struct channel_record *rec)
{
	Aialgs__Data__Float32Tensor ftensor =
	    AIALGS__DATA__FLOAT32_TENSOR__INIT;
	Aialgs__Data__Float32Tensor ltensor =
	    AIALGS__DATA__FLOAT32_TENSOR__INIT;
	Aialgs__Data__Value fvalue = AIALGS__DATA__VALUE__INIT;
	Aialgs__Data__Value lvalue = AIALGS__DATA__VALUE__INIT;
	Aialgs__Data__Record__FeaturesEntry fentry =
	    AIALGS__DATA__RECORD__FEATURES_ENTRY__INIT;
	Aialgs__Data__Record__LabelEntry lentry =
	    AIALGS__DATA__RECORD__LABEL_ENTRY__INIT;
	Aialgs__Data__Record__FeaturesEntry *fentries[1] = {&fentry};
	Aialgs__Data__Record__LabelEntry *lentries[1] = {&lentry};
	Aialgs__Data__Record record = AIALGS__DATA__RECORD__INIT;
	uint64_t shape = rec->dim;
	unsigned char *room;
	size_t size;
	int rc;

	ftensor.n_values = rec->count;
	ftensor.values = (float *)rec->values;
	if (rec->keys) {
		ftensor.n_keys = rec->count;
		ftensor.keys = (uint64_t *)rec->keys;
		ftensor.n_shape = 1;
		ftensor.shape = &shape;
	}
	fvalue.value_case = AIALGS__DATA__VALUE__VALUE_FLOAT32_TENSOR;
	fvalue.float32_tensor = &ftensor;
	fentry.key = values_key;
	fentry.value = &fvalue;
	record.n_features = 1;
	record.features = fentries;
	if (rec->label) {
		ltensor.n_values = 1;
		ltensor.values = (float *)rec->label;
		lvalue.value_case = AIALGS__DATA__VALUE__VALUE_FLOAT32_TENSOR;
		lvalue.float32_tensor = &ltensor;
		lentry.key = values_key;
		lentry.value = &lvalue;
		record.n_label = 1;
		record.label = lentries;
	}
	size = aialgs__data__record__get_packed_size(&record);
	room = frame_begin(out, size, &rc);
	if (!room)
		return rc;
	aialgs__data__record__pack(&record, room);
	frame_end(out, size);
	return 0;
}

/* ---- dump ---- */

struct dump {
	struct util_buf *text;
	int rc; /* the first append that failed */
};

__attribute__((format(printf, 2, 3))) static void put(struct dump *d,
						      const char *fmt, ...)
{
	va_list ap;
	char small[64];
	int n;

	if (d->rc)
		return;
	va_start(ap, fmt);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(small)) {
		d->rc = EINVAL; /* (only short pieces are printed) */
		return;
	}
	d->rc = util_buf_append(d->text, small, (size_t)n);
}

static void put_string(struct dump *d, const char *s)
{
	put(d, "\"");
	for (; s && *s && !d->rc; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			put(d, "\\%c", c);
		else if (c < 0x20)
			put(d, "\\u%04x", c);
		else
			d->rc = util_buf_append(d->text, s, 1);
	}
	put(d, "\"");
}

/* A float that reads back to itself; not-a-number and infinities, which
 * JSON lacks, as strings. */
static void put_real(struct dump *d, double v, int digits)
{
	if (isnan(v))
		put(d, "\"nan\"");
	else if (isinf(v))
		put(d, v > 0 ? "\"inf\"" : "\"-inf\"");
	else
		put(d, "%.*g", digits, v);
}

static void put_u64s(struct dump *d, const char *name, const uint64_t *v,
		     size_t n)
{
	if (!n)
		return;
	put(d, ", \"%s\": [", name);
	for (size_t i = 0; i < n; i++)
		put(d, "%s%llu", i ? ", " : "", (unsigned long long)v[i]);
	put(d, "]");
}

/* A tensor's values: one of f (float32), g (float64), i (int32). */
struct tensor_view {
	const char *kind;
	size_t n;
	const float *f;
	const double *g;
	const int32_t *i;
	const uint64_t *keys;
	size_t nkeys;
	const uint64_t *shape;
	size_t nshape;
};

static void put_tensor(struct dump *d, const struct tensor_view *t)
{
	put(d, "{\"%s\": [", t->kind);
	for (size_t k = 0; k < t->n; k++) {
		put(d, k ? ", " : "");
		if (t->f)
			put_real(d, t->f[k], 9);
		else if (t->g)
			put_real(d, t->g[k], 17);
		else
			put(d, "%d", (int)t->i[k]);
	}
	put(d, "]");
	put_u64s(d, "keys", t->keys, t->nkeys);
	put_u64s(d, "shape", t->shape, t->nshape);
	put(d, "}");
}

/* The three tensor messages share their layout: values, keys, shape. */
#define TENSOR_VIEW(KIND, T, FIELD)                                            \
	((struct tensor_view){.kind = KIND,                                    \
			      .n = (T)->n_values,                              \
			      .FIELD = (T)->values,                            \
			      .keys = (T)->keys,                               \
			      .nkeys = (T)->n_keys,                            \
			      .shape = (T)->shape,                             \
			      .nshape = (T)->n_shape})

static void put_value(struct dump *d, const Aialgs__Data__Value *v)
{
	struct tensor_view t;

	if (!v) {
		put(d, "null");
		return;
	}
	switch (v->value_case) {
	case AIALGS__DATA__VALUE__VALUE_FLOAT32_TENSOR:
		t = TENSOR_VIEW("float32", v->float32_tensor, f);
		put_tensor(d, &t);
		break;
	case AIALGS__DATA__VALUE__VALUE_FLOAT64_TENSOR:
		t = TENSOR_VIEW("float64", v->float64_tensor, g);
		put_tensor(d, &t);
		break;
	case AIALGS__DATA__VALUE__VALUE_INT32_TENSOR:
		t = TENSOR_VIEW("int32", v->int32_tensor, i);
		put_tensor(d, &t);
		break;
	case AIALGS__DATA__VALUE__VALUE_BYTES:
		put(d, "{\"bytes\": [");
		for (size_t k = 0; k < v->bytes->n_value; k++)
			put(d, "%s%zu", k ? ", " : "", v->bytes->value[k].len);
		put(d, "]}");
		break;
	default:
		put(d, "null");
		break;
	}
}

/* A map as a JSON object; entries share a layout (key, then value) */
static void put_map(struct dump *d, const char *name, size_t n,
		    const char *const *keys,
		    const Aialgs__Data__Value *const *values)
{
	put(d, "\"%s\": {", name);
	for (size_t i = 0; i < n; i++) {
		put(d, i ? ", " : "");
		put_string(d, keys[i]);
		put(d, ": ");
		put_value(d, values[i]);
	}
	put(d, "}");
}

int channel_record_dump(const void *payload, size_t len, struct util_buf *text,
			char *err, size_t errlen)
{
	Aialgs__Data__Record *rec;
	const char **keys = NULL;
	const Aialgs__Data__Value **values = NULL;
	struct dump d = {.text = text};
	size_t most;

	rec = aialgs__data__record__unpack(NULL, len, payload);
	if (!rec)
		return util_fail(err, errlen, EINVAL,
				 "a record of %zu bytes is not a protobuf "
				 "Record",
				 len);
	most = rec->n_features > rec->n_label ? rec->n_features : rec->n_label;
	keys = calloc(most ? most : 1, sizeof(*keys));
	values = calloc(most ? most : 1, sizeof(*values));
	if (!keys || !values) {
		d.rc = ENOMEM;
		goto out;
	}
	put(&d, "{");
	for (size_t i = 0; i < rec->n_features; i++) {
		keys[i] = rec->features[i]->key;
		values[i] = rec->features[i]->value;
	}
	put_map(&d, "features", rec->n_features, keys, values);
	for (size_t i = 0; i < rec->n_label; i++) {
		keys[i] = rec->label[i]->key;
		values[i] = rec->label[i]->value;
	}
	put(&d, ", ");
	put_map(&d, "label", rec->n_label, keys, values);
	if (rec->uid) {
		put(&d, ", \"uid\": ");
		put_string(&d, rec->uid);
	}
	if (rec->metadata) {
		put(&d, ", \"metadata\": ");
		put_string(&d, rec->metadata);
	}
	if (rec->configuration) {
		put(&d, ", \"configuration\": ");
		put_string(&d, rec->configuration);
	}
	put(&d, "}\n");
out:
	free(keys);
	free(values);
	aialgs__data__record__free_unpacked(rec, NULL);
	return d.rc;
}

/* Reads exactly len bytes; false at a clean end (nothing read) or short
 * read, *got says how many came. */
static bool read_full(FILE *in, void *buf, size_t len, size_t *got)
{
	*got = fread(buf, 1, len, in);
	return *got == len;
}

int channel_records_dump(FILE *in, FILE *out, char *err, size_t errlen)
{
	struct util_buf payload, text;
	unsigned char hdr[CHANNEL_RECORDIO_HEADER], pad[4];
	uint64_t offset = 0, record = 0;
	bool in_record = false;
	int rc = 0;

	util_buf_init(&payload, 0);
	util_buf_init(&text, 0);
	for (;;) {
		enum channel_recordio_flag flag;
		uint32_t len;
		size_t got;
		char *room;

		if (!read_full(in, hdr, sizeof(hdr), &got)) {
			if (ferror(in))
				rc = util_fail(err, errlen, EIO,
					       "reading failed at byte %llu",
					       (unsigned long long)offset);
			else if (got || in_record)
				rc = util_fail(
				    err, errlen, EINVAL,
				    "record %llu is cut short at "
				    "byte %llu",
				    (unsigned long long)record,
				    (unsigned long long)(offset + got));
			break;
		}
		if (channel_recordio_parse_header(hdr, &flag, &len)) {
			rc = util_fail(err, errlen, EINVAL,
				       "no RecordIO header at byte %llu "
				       "(record %llu)",
				       (unsigned long long)offset,
				       (unsigned long long)record);
			break;
		}
		if ((flag == RECORDIO_WHOLE || flag == RECORDIO_START) ==
		    in_record) {
			rc = util_fail(err, errlen, EINVAL,
				       "record %llu: a part out of order at "
				       "byte %llu",
				       (unsigned long long)record,
				       (unsigned long long)offset);
			break;
		}
		room = util_buf_reserve(&payload, len);
		if (!room) {
			rc = ENOMEM;
			break;
		}
		if (!read_full(in, room, len, &got) ||
		    !read_full(in, pad, channel_recordio_padding(len), &got)) {
			rc = util_fail(err, errlen, EINVAL,
				       "record %llu is cut short after byte "
				       "%llu",
				       (unsigned long long)record,
				       (unsigned long long)offset);
			break;
		}
		util_buf_commit(&payload, len);
		offset += CHANNEL_RECORDIO_HEADER + len +
			  channel_recordio_padding(len);
		in_record = flag == RECORDIO_START || flag == RECORDIO_MIDDLE;
		if (in_record)
			continue;
		util_buf_reset(&text);
		rc = channel_record_dump(payload.data, payload.len, &text, err,
					 errlen);
		if (rc == EINVAL) {
			char why[256];

			snprintf(why, sizeof(why), "%s", err);
			rc = util_fail(err, errlen, EINVAL,
				       "record %llu (ending at byte %llu): %s",
				       (unsigned long long)record,
				       (unsigned long long)offset, why);
		}
		if (rc)
			break;
		if (fwrite(text.data, 1, text.len, out) != text.len) {
			rc = util_fail(err, errlen, EIO, "writing failed");
			break;
		}
		util_buf_reset(&payload);
		record++;
	}
	util_buf_free(&payload);
	util_buf_free(&text);
	return rc;
}
