/*
 * test_uri: SigV4 URI encoding, "s3://bucket/prefix" parsing, and the size
 * and number parsers of util/util.c.
 */
#include "config.h"

#include "s3/internal.h"
#include "s3/s3.h"
#include "util/util.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* ---- s3_uri_encode ---- */

static void check_encode(const char *in, bool keep_slash, const char *want)
{
	struct util_buf b;

	util_buf_init(&b, 0);
	assert_int_equal(s3_uri_encode(&b, in, keep_slash), 0);
	assert_string_equal(b.data ? b.data : "", want);
	assert_int_equal(b.len, strlen(want));
	util_buf_free(&b);
}

static void test_encode_unreserved(void **state)
{
	check_encode("", false, "");
	check_encode("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
		     "0123456789-._~",
		     false,
		     "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
		     "0123456789-._~");
	check_encode("train/part-00001.rec", true, "train/part-00001.rec");
}

static void test_encode_reserved(void **state)
{
	check_encode("a b", false, "a%20b");
	check_encode("a/b", false, "a%2Fb");
	check_encode("a/b", true, "a/b");
	check_encode("a+b=c&d~e", false, "a%2Bb%3Dc%26d~e");
	check_encode("100%", false, "100%25");
	check_encode("!'()*", false, "%21%27%28%29%2A");
	check_encode("?#[]@:$,;", true, "%3F%23%5B%5D%40%3A%24%2C%3B");
	check_encode("\x01\x7f\xff", false, "%01%7F%FF");
}

static void test_encode_utf8(void **state)
{
	check_encode("\xc3\xa9", false, "%C3%A9");		  /* é */
	check_encode("caf\xc3\xa9/x y", true, "caf%C3%A9/x%20y"); /* café */
	check_encode("\xe1\x88\xb4", false, "%E1%88%B4");	  /* U+1234 */
}

static void test_encode_appends(void **state)
{
	struct util_buf b;

	util_buf_init(&b, 0);
	assert_int_equal(util_buf_append_str(&b, "prefix="), 0);
	assert_int_equal(s3_uri_encode(&b, "a b/", false), 0);
	assert_string_equal(b.data, "prefix=a%20b%2F");
	util_buf_free(&b);
}

static void test_encode_bounded(void **state)
{
	struct util_buf b;

	util_buf_init(&b, 8);
	assert_int_equal(s3_uri_encode(&b, "abcd", false), 0);
	assert_int_equal(s3_uri_encode(&b, "   ", false), EFBIG);
	util_buf_free(&b);
}

/* ---- s3_uri_parse ---- */

static void check_parse(const char *uri, const char *bucket, const char *prefix)
{
	char *b = NULL;
	char *p = NULL;
	char err[256] = "";

	assert_int_equal(s3_uri_parse(uri, &b, &p, err, sizeof(err)), 0);
	assert_string_equal(b, bucket);
	assert_string_equal(p, prefix);
	free(b);
	free(p);
}

/* Expects EINVAL and a message containing want. */
static void check_parse_fails(const char *uri, const char *want)
{
	char *b = (char *)"x";
	char *p = (char *)"x";
	char err[256] = "";

	assert_int_equal(s3_uri_parse(uri, &b, &p, err, sizeof(err)), EINVAL);
	assert_null(b);
	assert_null(p);
	if (!strstr(err, want))
		fail_msg("message for '%s' is '%s', expected '%s' in it",
			 uri ? uri : "(null)", err, want);
}

static void test_parse_good(void **state)
{
	check_parse("s3://bucket", "bucket", "");
	check_parse("s3://bucket/", "bucket", "");
	check_parse("s3://my-bucket.v2/train/", "my-bucket.v2", "train/");
	check_parse("s3://abc/train/part-", "abc", "train/part-");
	check_parse("s3://b12/a//b", "b12", "a//b");
	check_parse("s3://bucket/with space/\xc3\xa9", "bucket",
		    "with space/\xc3\xa9");
	check_parse("S3://bucket/x", "bucket", "x");
	check_parse("s3://"
		    "a23456789012345678901234567890123456789012345678901234567"
		    "890123/k",
		    "a23456789012345678901234567890123456789012345678901234567"
		    "890123",
		    "k");
}

static void test_parse_bad(void **state)
{
	check_parse_fails(NULL, "malformed uri");
	check_parse_fails("",
			  "malformed uri '': expected s3://BUCKET[/PREFIX]");
	check_parse_fails("bucket/prefix",
			  "malformed uri 'bucket/prefix': expected "
			  "s3://BUCKET[/PREFIX]");
	check_parse_fails("http://bucket/x", "malformed uri 'http://bucket/x'");
	check_parse_fails("s3:/bucket", "malformed uri");
	check_parse_fails("s3://", "missing bucket name");
	check_parse_fails("s3:///x", "missing bucket name");
	check_parse_fails("s3://My-Bucket/x",
			  "invalid bucket name 'My-Bucket' in "
			  "'s3://My-Bucket/x'");
	check_parse_fails("s3://my_bucket", "invalid bucket name 'my_bucket'");
	check_parse_fails("s3://b?x=1", "invalid bucket name 'b?x=1'");
	check_parse_fails("s3://ab", "3 to 63 characters");
	check_parse_fails("s3://"
			  "a2345678901234567890123456789012345678901234567890"
			  "12345678901234",
			  "3 to 63 characters");
	check_parse_fails("s3://-bucket", "start and end with a letter");
	check_parse_fails("s3://bucket./x", "start and end with a letter");
	check_parse_fails("s3://my..bucket", "'..'");
	check_parse_fails("s3://buck et/x", "lowercase letters");
}

static void test_parse_err_bounded(void **state)
{
	char *b = NULL;
	char *p = NULL;
	char err[8];

	assert_int_equal(s3_uri_parse("nope", &b, &p, err, sizeof(err)),
			 EINVAL);
	assert_int_equal(strlen(err), sizeof(err) - 1);
}

/* ---- util_parse_size / util_parse_uint ---- */

static void check_size(const char *s, uint64_t want)
{
	uint64_t v = 12345;

	if (util_parse_size(s, &v) != 0)
		fail_msg("util_parse_size('%s') failed", s);
	assert_true(v == want);
}

static void check_size_err(const char *s, int want)
{
	uint64_t v = 12345;

	assert_int_equal(util_parse_size(s, &v), want);
	assert_true(v == 12345);
}

static void test_parse_size(void **state)
{
	check_size("0", 0);
	check_size("1", 1);
	check_size("512B", 512);
	check_size("1K", 1024);
	check_size("4k", 4096);
	check_size("8m", 8ull << 20);
	check_size("256M", 256ull << 20);
	check_size("256MiB", 256ull << 20);
	check_size("256mb", 256ull << 20);
	check_size("1G", 1ull << 30);
	check_size("2T", 2ull << 40);
	check_size("16777215T", 16777215ull << 40);
	check_size("18446744073709551615", UINT64_MAX);

	check_size_err(NULL, EINVAL);
	check_size_err("", EINVAL);
	check_size_err("M", EINVAL);
	check_size_err("12X", EINVAL);
	check_size_err("-1", EINVAL);
	check_size_err(" 1", EINVAL);
	check_size_err("1 M", EINVAL);
	check_size_err("1MX", EINVAL);
	check_size_err("1BB", EINVAL);
	check_size_err("16EiB", EINVAL); /* no exa suffix */
	check_size_err("99999999999999999999", ERANGE);
	check_size_err("18446744073709551616", ERANGE);
	/* In range as a number, past 2^64 once shifted. */
	check_size_err("16777216T", ERANGE);
	check_size_err("17179869184G", ERANGE);
	check_size_err("17592186044416M", ERANGE);
}

static void test_parse_uint(void **state)
{
	uint64_t v = 0;

	assert_int_equal(util_parse_uint("0", 0, 10, &v), 0);
	assert_true(v == 0);
	assert_int_equal(util_parse_uint("64", 1, 1024, &v), 0);
	assert_true(v == 64);
	assert_int_equal(
	    util_parse_uint("18446744073709551615", 0, UINT64_MAX, &v), 0);
	assert_true(v == UINT64_MAX);

	v = 7;
	assert_int_equal(util_parse_uint("", 0, 10, &v), EINVAL);
	assert_int_equal(util_parse_uint(NULL, 0, 10, &v), EINVAL);
	assert_int_equal(util_parse_uint("-1", 0, 10, &v), EINVAL);
	assert_int_equal(util_parse_uint("+1", 0, 10, &v), EINVAL);
	assert_int_equal(util_parse_uint("1K", 0, 10000, &v), EINVAL);
	assert_int_equal(util_parse_uint("12X", 0, 100, &v), EINVAL);
	assert_int_equal(util_parse_uint("0", 1, 10, &v), ERANGE);
	assert_int_equal(util_parse_uint("11", 1, 10, &v), ERANGE);
	assert_int_equal(
	    util_parse_uint("99999999999999999999", 0, UINT64_MAX, &v), ERANGE);
	assert_true(v == 7);
}

static void test_region_valid(void **state)
{
	assert_true(s3_region_valid("us-east-1"));
	assert_true(s3_region_valid("eu-west-3"));
	assert_true(s3_region_valid("x"));
	assert_false(s3_region_valid(""));
	assert_false(s3_region_valid("us-east-1.evil.example#"));
	assert_false(s3_region_valid("US-EAST-1"));
	assert_false(s3_region_valid("us east 1"));
	assert_false(s3_region_valid("us/east"));
	assert_true(s3_region_valid(
	    "a23456789012345678901234567890123456789012345678901234567890123"));
	assert_false(s3_region_valid("a2345678901234567890123456789012345678901"
				     "23456789012345678901234"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_encode_unreserved),
	    cmocka_unit_test(test_region_valid),
	    cmocka_unit_test(test_encode_reserved),
	    cmocka_unit_test(test_encode_utf8),
	    cmocka_unit_test(test_encode_appends),
	    cmocka_unit_test(test_encode_bounded),
	    cmocka_unit_test(test_parse_good),
	    cmocka_unit_test(test_parse_bad),
	    cmocka_unit_test(test_parse_err_bounded),
	    cmocka_unit_test(test_parse_size),
	    cmocka_unit_test(test_parse_uint),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
