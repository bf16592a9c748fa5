/*
 * channel records: SageMaker's protobuf Record (channel/record.proto,
 * compiled by protoc-c at build time), written and read with protobuf-c.
 *
 * channel_record_append() writes one row as SageMaker's Python SDK does
 * (write_numpy_to_dense_tensor, write_spmatrix_to_sparse_tensor): the
 * features as features["values"], a Float32Tensor (values; for sparse rows
 * also keys and shape), the label as label["values"], a Float32Tensor of
 * one value; the packed Record in one RecordIO record (header, payload,
 * zero padding to 4 bytes).  channel_record_dump() prints a Record as one
 * line of JSON, for s3pipe-convert dump.
 */
#ifndef S3PIPE_CHANNEL_RECORD_H
#define S3PIPE_CHANNEL_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "util/util.h"

/* One row; the pointers are the caller's. */
struct channel_record {
	const float *values; /* count of them */
	size_t count;
	const uint64_t *keys; /* count of them; NULL for a dense row */
	uint64_t dim;	      /* with keys: the tensor's shape */
	const float *label;   /* one value, or NULL for no label */
};

/* Appends rec, framed, to out: 0, ENOMEM, or EFBIG (out's bound, or a
 * Record past RecordIO's 2^29 - 1 bytes). */
int channel_record_append(struct util_buf *out,
			  const struct channel_record *rec);

/* The same by protobuf-c alone, which channel_record_append() leaves for
 * sparse rows (dense ones it writes by hand, to the same bytes). */
int channel_record_append_packed(struct util_buf *out,
				 const struct channel_record *rec);

/*
 * Appends the Record in payload[0..len) to text as one line of JSON and a
 * newline: {"features": {NAME: TENSOR, ...}, "label": {...}} with, per
 * value, {"float32": [...]} (or float64, int32; floats printed so that
 * they read back to the same value) and "keys" and "shape" when set, or
 * {"bytes": [LENGTH, ...]}; "uid", "metadata" and "configuration" when set.
 * Returns 0, EINVAL with one line in err when the payload is not a Record,
 * or ENOMEM.
 */
int channel_record_dump(const void *payload, size_t len, struct util_buf *text,
			char *err, size_t errlen);

/*
 * Reads RecordIO-framed Records from in to its end (parts joined) and
 * prints each to out with channel_record_dump().  Returns 0; EINVAL with
 * one line in err naming the record and its byte offset when the input is
 * not RecordIO or a payload not a Record; EIO (reading or writing failed,
 * err says which); ENOMEM.
 */
int channel_records_dump(FILE *in, FILE *out, char *err, size_t errlen);

#endif
