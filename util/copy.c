/*
 * util copy: bulk copies into memory that will not be read again soon.
 *
 * The engine fills cache blocks at network speed, and the reader only
 * comes back to most of them after the rest of the prefetch window has
 * arrived, long after they left the CPU caches.  A plain memcpy() into
 * such memory first reads every destination line (read-for-ownership),
 * then writes it back: twice the memory traffic for nothing.  Streaming
 * (non-temporal) stores write whole lines straight to memory.  glibc does
 * this by itself only above a threshold tied to the last-level cache size,
 * which on virtual machines is often reported as hundreds of MiB.
 *
 * Streaming stores are weakly ordered, so the copies of a whole block are
 * fenced once, by util_copy_publish(), before the block is handed to
 * readers, not one by one: a fence per 16 KiB callback costs a fifth of
 * the copy.
 *
 * x86-64 only (SSE2 is part of the base ABI, so no CPU check); elsewhere,
 * and for short copies, it is memcpy().
 */
#include "config.h"

#include "util/util.h"

#include <stdint.h>
#include <string.h>

#if defined(__x86_64__)
#include <emmintrin.h>

/* below this the alignment fix-ups cost more than the stores save */
#define STREAM_MIN (16 * 1024)

void util_copy_to_cold(void *dest, const void *src, size_t len)
{
	unsigned char *d = dest;
	const unsigned char *s = src;
	size_t head;

	if (len < STREAM_MIN) {
		memcpy(d, s, len);
		return;
	}
	/* streaming stores want 16-byte aligned destinations */
	head = (16 - ((uintptr_t)d & 15)) & 15;
	memcpy(d, s, head);
	d += head;
	s += head;
	len -= head;
	for (; len >= 64; d += 64, s += 64, len -= 64) {
		__m128i a = _mm_loadu_si128((const __m128i *)(const void *)s);
		__m128i b =
		    _mm_loadu_si128((const __m128i *)(const void *)(s + 16));
		__m128i c =
		    _mm_loadu_si128((const __m128i *)(const void *)(s + 32));
		__m128i e =
		    _mm_loadu_si128((const __m128i *)(const void *)(s + 48));

		_mm_stream_si128((__m128i *)(void *)d, a);
		_mm_stream_si128((__m128i *)(void *)(d + 16), b);
		_mm_stream_si128((__m128i *)(void *)(d + 32), c);
		_mm_stream_si128((__m128i *)(void *)(d + 48), e);
	}
	memcpy(d, s, len);
}

void util_copy_publish(void)
{
	_mm_sfence();
}

#else

void util_copy_to_cold(void *dest, const void *src, size_t len)
{
	memcpy(dest, src, len);
}

void util_copy_publish(void)
{
}

#endif
