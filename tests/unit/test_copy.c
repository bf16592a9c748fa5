/*
 * test_copy: util_copy_to_cold() copies exactly what memcpy() would, for
 * every alignment of source and destination and for lengths around its
 * thresholds (the 16 KiB streaming minimum, the 16-byte alignment head, the
 * 64-byte loop and its tail), and writes nothing outside the destination.
 */
#include "config.h"

#include "util/util.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define GUARD	   64
#define GUARD_BYTE 0xA5

static void check_copy(size_t len, size_t dest_off, size_t src_off)
{
	unsigned char *src = malloc(len + src_off + 1);
	unsigned char *buf = malloc(GUARD + dest_off + len + GUARD);
	unsigned char *dest = buf + GUARD + dest_off;

	assert_non_null(src);
	assert_non_null(buf);
	for (size_t i = 0; i < len + src_off + 1; i++)
		src[i] = (unsigned char)(i * 131 + (i >> 8) * 7 + 1);
	memset(buf, GUARD_BYTE, GUARD + dest_off + len + GUARD);
	util_copy_to_cold(dest, src + src_off, len);
	util_copy_publish();
	if (len)
		assert_memory_equal(dest, src + src_off, len);
	for (size_t i = 0; i < GUARD + dest_off; i++)
		assert_int_equal(buf[i], GUARD_BYTE);
	for (size_t i = 0; i < GUARD; i++)
		assert_int_equal(dest[len + i], GUARD_BYTE);
	free(src);
	free(buf);
}

static void test_short_copies(void **state)
{
	static const size_t lens[] = {0, 1, 15, 16, 17, 63, 64, 65, 4096};

	(void)state;
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
		for (size_t d = 0; d < 17; d++)
			check_copy(lens[i], d, d % 5);
}

static void test_streaming_copies(void **state)
{
	static const size_t lens[] = {16 * 1024 - 1, 16 * 1024,
				      16 * 1024 + 1, 16 * 1024 + 63,
				      100000,	     (1u << 20) + 37};

	(void)state;
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
		for (size_t d = 0; d < 17; d++)
			for (size_t s = 0; s < 3; s++)
				check_copy(lens[i], d, s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_short_copies),
	    cmocka_unit_test(test_streaming_copies),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
