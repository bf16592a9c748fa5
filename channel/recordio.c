/*
 * recordio: MXNet-style RecordIO framing, the arithmetic only (the byte
 * stage that applies it lives with the other stages).
 *
 * A record is one or more parts.  Each part is an 8-byte header (the magic
 * 0xCED7230A, then (flag << 29) | length, both little-endian u32 whatever
 * the host's byte order), its bytes, then zero bytes up to a multiple of 4.
 * A payload longer than part_max (CHANNEL_RECORDIO_PART_MAX, itself a
 * multiple of 4) is cut into parts of part_max bytes and a last shorter
 * one, flagged START, MIDDLE..., END; a payload that fits is one WHOLE
 * part, even when empty.
 */
#include "config.h"

#include "channel/internal.h"

#include <errno.h>

#define LEN_BITS 29
#define LEN_MASK ((1u << LEN_BITS) - 1)

static void put_le32(unsigned char *out, uint32_t v)
{
	out[0] = (unsigned char)(v & 0xff);
	out[1] = (unsigned char)((v >> 8) & 0xff);
	out[2] = (unsigned char)((v >> 16) & 0xff);
	out[3] = (unsigned char)((v >> 24) & 0xff);
}

static uint32_t get_le32(const unsigned char *in)
{
	return (uint32_t)in[0] | (uint32_t)in[1] << 8 | (uint32_t)in[2] << 16 |
	       (uint32_t)in[3] << 24;
}

int channel_recordio_parse_header(
    const unsigned char in[CHANNEL_RECORDIO_HEADER],
    enum channel_recordio_flag *flag, uint32_t *len)
{
	uint32_t word = get_le32(in + 4);

	if (get_le32(in) != CHANNEL_RECORDIO_MAGIC)
		return EINVAL;
	*flag = (enum channel_recordio_flag)(word >> LEN_BITS);
	*len = word & LEN_MASK;
	return *flag > RECORDIO_END ? EINVAL : 0;
}

void channel_recordio_header(unsigned char out[CHANNEL_RECORDIO_HEADER],
			     enum channel_recordio_flag flag, uint32_t len)
{
	put_le32(out, CHANNEL_RECORDIO_MAGIC);
	/* len >= 2^29 is outside the contract: never let it touch the flag */
	put_le32(out + 4,
		 ((uint32_t)(flag & 7u) << LEN_BITS) | (len & LEN_MASK));
}

unsigned channel_recordio_padding(uint64_t len)
{
	return (unsigned)((0 - len) & 3);
}

/* part_max 0 is outside the contract: use the real one */
static uint64_t part_size(uint64_t part_max)
{
	return part_max ? part_max : CHANNEL_RECORDIO_PART_MAX;
}

uint64_t channel_recordio_parts(uint64_t len, uint64_t part_max)
{
	part_max = part_size(part_max);
	if (len <= part_max)
		return 1;
	return (len - 1) / part_max + 1;
}

enum channel_recordio_flag channel_recordio_part_flag(uint64_t part,
						      uint64_t parts)
{
	if (parts <= 1)
		return RECORDIO_WHOLE;
	if (part == 0)
		return RECORDIO_START;
	if (part >= parts - 1)
		return RECORDIO_END;
	return RECORDIO_MIDDLE;
}

uint64_t channel_recordio_framed_size(uint64_t len, uint64_t part_max)
{
	uint64_t parts;
	uint64_t last;

	part_max = part_size(part_max);
	parts = channel_recordio_parts(len, part_max);
	last = len - (parts - 1) * part_max;
	return parts * CHANNEL_RECORDIO_HEADER + len +
	       (parts - 1) * channel_recordio_padding(part_max) +
	       channel_recordio_padding(last);
}
