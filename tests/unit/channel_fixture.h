/*
 * channel_fixture: what test_channel and test_gzip both build their
 * expected bytes with: growing byte buffers, and RecordIO written and
 * decoded from the format (not channel/recordio.c).  Header-only: include
 * it after <cmocka.h>.
 */
#ifndef S3PIPE_TESTS_UNIT_CHANNEL_FIXTURE_H
#define S3PIPE_TESTS_UNIT_CHANNEL_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PARTS 1024
#define MAX_RECS  256

#define RIO_MAGIC 0xCED7230Au

/* ---- byte buffers ---- */

struct buf {
	unsigned char *p;
	size_t len;
	size_t cap;
};

static inline void buf_reserve(struct buf *b, size_t more)
{
	if (b->len + more > b->cap) {
		size_t cap = b->cap ? b->cap : 256;

		while (cap < b->len + more)
			cap *= 2;
		b->p = realloc(b->p, cap);
		assert_non_null(b->p);
		b->cap = cap;
	}
}

static inline void buf_add(struct buf *b, const void *data, size_t len)
{
	buf_reserve(b, len);
	if (len)
		memcpy(b->p + b->len, data, len);
	b->len += len;
}

static inline void buf_free(struct buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

static inline void assert_bytes_at(const unsigned char *got,
				   const unsigned char *want, size_t len,
				   size_t base)
{
	for (size_t i = 0; i < len; i++) {
		if (got[i] != want[i])
			fail_msg("byte %zu differs: got 0x%02x, want 0x%02x",
				 base + i, got[i], want[i]);
	}
}

static inline void assert_same_bytes(const struct buf *got,
				     const struct buf *want)
{
	assert_int_equal(got->len, want->len);
	assert_bytes_at(got->p, want->p, want->len, 0);
}

/* ---- RecordIO, written from the format (not channel/recordio.c) ---- */

static inline void put_le32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
	p[2] = (unsigned char)(v >> 16);
	p[3] = (unsigned char)(v >> 24);
}

static inline uint32_t get_le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static inline void frame_part(struct buf *b, unsigned flag, const void *data,
			      size_t len)
{
	static const unsigned char zeros[4];
	unsigned char hdr[8];

	put_le32(hdr, RIO_MAGIC);
	put_le32(hdr + 4, (uint32_t)flag << 29 | (uint32_t)len);
	buf_add(b, hdr, sizeof(hdr));
	buf_add(b, data, len);
	buf_add(b, zeros, (4 - len % 4) % 4);
}

/* One record: a whole part, or parts flagged 1 (start), 2..., 3 (end). */
static inline void frame_record(struct buf *b, const void *payload, size_t len,
				size_t part_max)
{
	const unsigned char *p = payload;

	if (len <= part_max) {
		frame_part(b, 0, p, len);
		return;
	}
	for (size_t off = 0; off < len; off += part_max) {
		size_t n = len - off < part_max ? len - off : part_max;
		unsigned flag = off == 0 ? 1 : off + n == len ? 3 : 2;

		frame_part(b, flag, p + off, n);
	}
}

struct recs {
	unsigned nparts;
	unsigned flags[MAX_PARTS];
	uint32_t lens[MAX_PARTS];
	unsigned n; /* records */
	size_t off[MAX_RECS];
	size_t len[MAX_RECS];
	struct buf data; /* the payloads back to back */
};

/* Decodes a RecordIO stream strictly: magic, a valid flag sequence, every
 * padding byte zero, nothing left over. */
static inline void decode_recordio(const struct buf *in, struct recs *out)
{
	const unsigned char *p = in->p;
	size_t i = 0;
	bool open = false;

	memset(out, 0, sizeof(*out));
	while (i < in->len) {
		uint32_t w;
		unsigned flag, pad;
		size_t len;

		if (in->len - i < 8)
			fail_msg("%zu bytes left at %zu: not a header",
				 in->len - i, i);
		if (get_le32(p + i) != RIO_MAGIC)
			fail_msg("no RecordIO magic at offset %zu", i);
		w = get_le32(p + i + 4);
		flag = w >> 29;
		len = w & ((1u << 29) - 1);
		i += 8;
		assert_true(len <= in->len - i);
		assert_true(out->nparts < MAX_PARTS);
		out->flags[out->nparts] = flag;
		out->lens[out->nparts] = (uint32_t)len;
		out->nparts++;
		switch (flag) {
		case 0:
		case 1:
			if (open)
				fail_msg("part %u: flag %u inside a record",
					 out->nparts - 1, flag);
			assert_true(out->n < MAX_RECS);
			out->off[out->n] = out->data.len;
			out->len[out->n] = 0;
			out->n++;
			open = flag == 1;
			break;
		case 2:
		case 3:
			if (!open)
				fail_msg("part %u: flag %u outside a record",
					 out->nparts - 1, flag);
			open = flag == 2;
			break;
		default:
			fail_msg("part %u: flag %u", out->nparts - 1, flag);
		}
		buf_add(&out->data, p + i, len);
		out->len[out->n - 1] += len;
		i += len;
		pad = (unsigned)((4 - len % 4) % 4);
		assert_true(pad <= in->len - i);
		for (unsigned k = 0; k < pad; k++)
			if (p[i + k] != 0)
				fail_msg("padding byte at %zu is 0x%02x", i + k,
					 p[i + k]);
		i += pad;
	}
	if (open)
		fail_msg("the stream ends inside a record");
}

static inline void recs_free(struct recs *r)
{
	buf_free(&r->data);
}

/* ---- what a read epoch leaves behind ---- */

#include <malloc.h>

/* What a reader holds outside the block budget at one moment: the cache's
 * records (segments of every stream, objects) and the heap in use
 * (mallinfo2; 0 where a sanitizer or valgrind owns the heap). */
struct held {
	uint64_t segments, objects;
	size_t heap;
};

static inline void held_now(struct cache *c, struct held *h)
{
	struct cache_stats st;
	struct mallinfo2 mi = mallinfo2();

	cache_get_stats(c, &st);
	h->segments = st.segments;
	h->objects = st.objects;
	h->heap = mi.uordblks;
}

/*
 * Reads epoch of ch to its end in 64 KiB reads (the reader in *live while
 * open), with want its bytes (NULL:
 * not known here),
 * sampling what the cache holds after every read: nothing may grow with
 * the keys read.  The cache's records stay below keys / 4 all the way
 * (on a stream that kept a segment and an object a key they reach keys),
 * and the heap at the end is at most 16 bytes a key above what it was
 * after the first read, besides budget (what the blocks may take).
 */
static inline void read_flat(struct cache *c, struct channel *ch,
			     unsigned epoch, const struct buf *want,
			     size_t keys, uint64_t budget,
			     struct channel_reader **live)
{
	struct channel_reader *r = channel_reader_open(ch, epoch);
	struct held first = {0}, now, most = {0};
	struct channel_view v;
	struct buf got = {0};
	uint64_t pos = 0;
	size_t n;
	bool started = false;

	assert_non_null(r);
	*live = r; /* (the teardown closes it after a failed assertion) */
	for (;;) {
		memset(&v, 0, sizeof(v));
		assert_int_equal(channel_reader_read(r, pos, 65536, &v), 0);
		for (int k = 0; k < v.count; k++)
			buf_add(&got, v.iov[k].iov_base, v.iov[k].iov_len);
		n = v.bytes;
		pos += n;
		channel_view_release(r, &v);
		held_now(c, &now);
		if (!started)
			first = now;
		started = true;
		if (now.segments > most.segments)
			most.segments = now.segments;
		if (now.objects > most.objects)
			most.objects = now.objects;
		if (!n)
			break;
	}
	*live = NULL;
	channel_reader_close(r);
	if (want)
		assert_same_bytes(&got, want);
	else
		assert_true(got.len > 0); /* (converted: checked elsewhere) */
	buf_free(&got);
	held_now(c, &now);
	print_message("%zu keys: at most %llu segments and %llu objects held; "
		      "heap %zu bytes after the first read, %zu at the end\n",
		      keys, (unsigned long long)most.segments,
		      (unsigned long long)most.objects, first.heap, now.heap);
	assert_true(most.segments < keys / 4);
	assert_true(most.objects < keys / 4);
	if (first.heap && now.heap > first.heap)
		assert_true(now.heap - first.heap <= budget + 16 * keys);
}

#endif
