/*
 * test_sigv4: the signer against AWS's published Signature Version 4
 * examples (the S3 "header-based auth" examples and the general SigV4 test
 * suite), plus SHA-256 vectors and the output bounds.
 */
#include "config.h"

#include "s3/internal.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#define EMPTY_SHA256                                                           \
	"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

#define S3_AK	"AKIAIOSFODNN7EXAMPLE"
#define S3_SK	"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
#define S3_HOST "examplebucket.s3.amazonaws.com"
#define S3_DATE "20130524T000000Z"

#define SUITE_AK   "AKIDEXAMPLE"
#define SUITE_SK   "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
#define SUITE_HOST "example.amazonaws.com"
#define SUITE_DATE "20150830T123600Z"

static void s3_request(struct s3_sigv4_request *r, const char *method,
		       const char *uri, const char *query,
		       const struct s3_sigv4_header *h, size_t n,
		       const char *payload_hash)
{
	memset(r, 0, sizeof(*r));
	r->method = method;
	r->canonical_uri = uri;
	r->canonical_query = query;
	r->headers = h;
	r->nheaders = n;
	r->payload_hash = payload_hash;
	r->amz_date = S3_DATE;
	r->region = "us-east-1";
	r->service = "s3";
	r->access_key = S3_AK;
	r->secret_key = S3_SK;
}

/* S3 "Example: GET Object": GET /test.txt with a Range header. */
static void test_s3_get_object(void **state)
{
	static const struct s3_sigv4_header h[] = {
	    {"host", S3_HOST},
	    {"range", "bytes=0-9"},
	    {"x-amz-content-sha256", EMPTY_SHA256},
	    {"x-amz-date", S3_DATE},
	};
	struct s3_sigv4_request r;
	char out[512];
	char sig[65];

	s3_request(&r, "GET", "/test.txt", "", h, 4, EMPTY_SHA256);
	assert_int_equal(s3_sigv4_authorization(&r, out, sizeof(out), sig), 0);
	assert_string_equal(sig, "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170ab"
				 "a48dd91039c6036bdb41");
	assert_string_equal(
	    out, "AWS4-HMAC-SHA256 "
		 "Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/"
		 "aws4_request, "
		 "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
		 "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd9"
		 "1039c6036bdb41");
}

/* AWS's published signing-key derivation example (IAM, 20120215). */
static void test_signing_key(void **state)
{
	unsigned char key[32];
	char hex[65];

	assert_int_equal(
	    s3_sigv4_signing_key(SUITE_SK, "20120215", "us-east-1", "iam", key),
	    0);
	for (int i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", key[i]);
	assert_string_equal(hex,
			    "f4780e2d9f65fa895f9c67b32ce1baf0b0d8a43505a000"
			    "a1a9e090d414db404d");
	assert_int_equal(
	    s3_sigv4_signing_key(SUITE_SK, "2012021", "us-east-1", "iam", key),
	    EINVAL);
}

/* A signing key derived once gives the same signature as deriving it for
 * every request (the engine caches it per day). */
static void test_precomputed_signing_key(void **state)
{
	static const struct s3_sigv4_header h[] = {
	    {"host", S3_HOST},
	    {"range", "bytes=0-9"},
	    {"x-amz-content-sha256", EMPTY_SHA256},
	    {"x-amz-date", S3_DATE},
	};
	struct s3_sigv4_request r;
	unsigned char key[32];
	char out[512];
	char sig[65];

	assert_int_equal(
	    s3_sigv4_signing_key(S3_SK, "20130524", "us-east-1", "s3", key), 0);
	s3_request(&r, "GET", "/test.txt", "", h, 4, EMPTY_SHA256);
	r.signing_key = key;
	assert_int_equal(s3_sigv4_authorization(&r, out, sizeof(out), sig), 0);
	assert_string_equal(sig, "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170ab"
				 "a48dd91039c6036bdb41");
	/* a key for another day must not produce the same signature */
	assert_int_equal(
	    s3_sigv4_signing_key(S3_SK, "20130525", "us-east-1", "s3", key), 0);
	assert_int_equal(s3_sigv4_authorization(&r, out, sizeof(out), sig), 0);
	assert_string_not_equal(sig, "f0e8bdb87c964420e857bd35b5d6ed310bd44f01"
				     "70aba48dd91039c6036bdb41");
}

/* S3 "Example: GET Bucket (List Objects)": GET /?max-keys=2&prefix=J. */
static void test_s3_list_objects(void **state)
{
	static const struct s3_sigv4_header h[] = {
	    {"host", S3_HOST},
	    {"x-amz-content-sha256", EMPTY_SHA256},
	    {"x-amz-date", S3_DATE},
	};
	struct s3_sigv4_request r;
	char out[512];
	char sig[65];

	s3_request(&r, "GET", "/", "max-keys=2&prefix=J", h, 3, EMPTY_SHA256);
	assert_int_equal(s3_sigv4_authorization(&r, out, sizeof(out), sig), 0);
	assert_string_equal(sig, "34b48302e7b5fa45bde8084f4b7868a86f0a534bc59d"
				 "b6670ed5711ef69dc6f7");
	assert_non_null(strstr(
	    out, ", SignedHeaders=host;x-amz-content-sha256;x-amz-date, "));
}

/* S3 "Example: GET Bucket Lifecycle": a bare "?lifecycle" signs as
 * "lifecycle=". */
static void test_s3_get_lifecycle(void **state)
{
	static const struct s3_sigv4_header h[] = {
	    {"host", S3_HOST},
	    {"x-amz-content-sha256", EMPTY_SHA256},
	    {"x-amz-date", S3_DATE},
	};
	struct s3_sigv4_request r;
	char out[512];
	char sig[65];

	s3_request(&r, "GET", "/", "lifecycle=", h, 3, EMPTY_SHA256);
	assert_int_equal(s3_sigv4_authorization(&r, out, sizeof(out), sig), 0);
	assert_string_equal(sig, "fea454ca298b7da1c68078a5d1bdbfbbe0d65c699e0f"
				 "91ac7a200a0136783543");
}

/* S3 "Example: PUT Object": a body, '$' encoded in the path, five headers. */
static void test_s3_put_object(void **state)
{
	static const char body[] = "Welcome to Amazon S3.";
	char payload[65];
	struct s3_sigv4_header h[] = {
	    {"date", "Fri, 24 May 2013 00:00:00 GMT"},
	    {"host", S3_HOST},
	    {"x-amz-content-sha256", NULL},
	    {"x-amz-date", S3_DATE},
	    {"x-amz-storage-class", "REDUCED_REDUNDANCY"},
	};
	struct s3_sigv4_request r;
	struct util_buf path;
	char out[512];
	char sig[65];

	s3_sha256_hex(body, strlen(body), payload);
	assert_string_equal(payload, "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b"
				     "4b4e99e42034a8b803f8b072");
	h[2].value = payload;

	util_buf_init(&path, 0);
	assert_int_equal(s3_uri_encode(&path, "/test$file.text", true), 0);
	assert_string_equal(path.data, "/test%24file.text");

	s3_request(&r, "PUT", path.data, "", h, 5, payload);
	assert_int_equal(s3_sigv4_authorization(&r, out, sizeof(out), sig), 0);
	assert_string_equal(sig, "98ad721746da40c64f1a55b78f14c238d841ea1380cd"
				 "77a1b5971af0ece108bd");
	assert_non_null(strstr(out, "SignedHeaders=date;host;x-amz-content-"
				    "sha256;x-amz-date;x-amz-storage-class, "));
	util_buf_free(&path);
}

static void suite_request(struct s3_sigv4_request *r, const char *method,
			  const char *query, const struct s3_sigv4_header *h,
			  size_t n)
{
	memset(r, 0, sizeof(*r));
	r->method = method;
	r->canonical_uri = "/";
	r->canonical_query = query;
	r->headers = h;
	r->nheaders = n;
	r->payload_hash = EMPTY_SHA256;
	r->amz_date = SUITE_DATE;
	r->region = "us-east-1";
	r->service = "service";
	r->access_key = SUITE_AK;
	r->secret_key = SUITE_SK;
}

static const struct s3_sigv4_header suite_headers[] = {
    {"host", SUITE_HOST},
    {"x-amz-date", SUITE_DATE},
};

/* SigV4 test suite: get-vanilla. */
static void test_suite_get_vanilla(void **state)
{
	struct s3_sigv4_request r;
	char out[512];
	char sig[65];

	suite_request(&r, "GET", "", suite_headers, 2);
	assert_int_equal(s3_sigv4_authorization(&r, out, sizeof(out), sig), 0);
	assert_string_equal(sig, "5fa00fa31553b73ebf1942676e86291e8372ff2a2260"
				 "956d9b8aae1d763fbf31");
	assert_string_equal(
	    out, "AWS4-HMAC-SHA256 "
		 "Credential=AKIDEXAMPLE/20150830/us-east-1/service/"
		 "aws4_request, SignedHeaders=host;x-amz-date, "
		 "Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b"
		 "8aae1d763fbf31");
}

/* SigV4 test suite: post-vanilla (only the method differs). */
static void test_suite_post_vanilla(void **state)
{
	struct s3_sigv4_request r;
	char out[512];
	char sig[65];

	suite_request(&r, "POST", "", suite_headers, 2);
	assert_int_equal(s3_sigv4_authorization(&r, out, sizeof(out), sig), 0);
	assert_string_equal(sig, "5da7c1a2acd57cee7505fc6676e4e544621c30862966"
				 "e37dddb68e92efbe5d6b");
}

/* SigV4 test suite: get-vanilla-query-order-key-case.  The published
 * canonical request hashes to the published string-to-sign digest. */
static void test_suite_query_order_key_case(void **state)
{
	static const char creq[] =
	    "GET\n/\nParam1=value1&Param2=value2\n"
	    "host:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\n"
	    "host;x-amz-date\n" EMPTY_SHA256;
	struct s3_sigv4_request r;
	char out[512];
	char sig[65];
	char hex[65];

	s3_sha256_hex(creq, strlen(creq), hex);
	assert_string_equal(hex, "816cd5b414d056048ba4f7c5386d6e0533120fb1fcfa"
				 "93762cf0fc39e2cf19e0");

	suite_request(&r, "GET", "Param1=value1&Param2=value2", suite_headers,
		      2);
	assert_int_equal(s3_sigv4_authorization(&r, out, sizeof(out), sig), 0);
	assert_string_equal(sig, "b97d918cfa904a5beff61c982a1b6f458b799221646e"
				 "fd99d3219ec94cdf2500");
}

/* Every signed input must change the signature. */
static void test_inputs_are_signed(void **state)
{
	struct s3_sigv4_header h[] = {
	    {"host", SUITE_HOST},
	    {"x-amz-date", SUITE_DATE},
	};
	struct s3_sigv4_request r;
	char base[65], sig[65];
	char out[512];

	suite_request(&r, "GET", "", h, 2);
	assert_int_equal(s3_sigv4_authorization(&r, out, sizeof(out), base), 0);

	r.region = "us-west-2";
	assert_int_equal(s3_sigv4_authorization(&r, out, sizeof(out), sig), 0);
	assert_string_not_equal(sig, base);
	assert_non_null(strstr(out, "/us-west-2/service/aws4_request, "));
	r.region = "us-east-1";

	h[0].value = "example2.amazonaws.com";
	assert_int_equal(s3_sigv4_authorization(&r, out, sizeof(out), sig), 0);
	assert_string_not_equal(sig, base);
	h[0].value = SUITE_HOST;

	r.payload_hash = "0000000000000000000000000000000000000000000000000000"
			 "000000000000";
	assert_int_equal(s3_sigv4_authorization(&r, out, sizeof(out), sig), 0);
	assert_string_not_equal(sig, base);
	r.payload_hash = EMPTY_SHA256;

	r.secret_key = "another secret";
	assert_int_equal(s3_sigv4_authorization(&r, out, sizeof(out), sig), 0);
	assert_string_not_equal(sig, base);
	assert_null(strstr(out, "another secret"));
	r.secret_key = SUITE_SK;

	assert_int_equal(s3_sigv4_authorization(&r, out, sizeof(out), sig), 0);
	assert_string_equal(sig, base);
}

static void test_sha256(void **state)
{
	char hex[65];

	s3_sha256_hex("", 0, hex);
	assert_string_equal(hex, EMPTY_SHA256);
	s3_sha256_hex("abc", 3, hex);
	assert_string_equal(hex,
			    "ba7816bf8f01cfea414140de5dae2223b00361a396177a"
			    "9cb410ff61f20015ad");
	/* FIPS 180-2 two-block message. */
	s3_sha256_hex(
	    "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56,
	    hex);
	assert_string_equal(hex,
			    "248d6a61d20638b8e5c026930c3e6039a33ce45964ff21"
			    "67f6ecedd419db06c1");
}

static void test_output_bounds(void **state)
{
	struct s3_sigv4_request r;
	char out[512];
	char small[512];
	char sig[65];
	size_t need;

	suite_request(&r, "GET", "", suite_headers, 2);
	assert_int_equal(s3_sigv4_authorization(&r, out, sizeof(out), NULL), 0);
	need = strlen(out) + 1;

	memset(sig, 'x', sizeof(sig));
	assert_int_equal(s3_sigv4_authorization(&r, small, 16, sig), ENOSPC);
	assert_string_equal(small, "");
	assert_string_equal(sig, "");
	assert_int_equal(s3_sigv4_authorization(&r, small, 0, NULL), ENOSPC);
	assert_int_equal(s3_sigv4_authorization(&r, small, need - 1, NULL),
			 ENOSPC);
	assert_string_equal(small, "");
	assert_int_equal(s3_sigv4_authorization(&r, small, need, NULL), 0);
	assert_string_equal(small, out);
}

static void test_incomplete_request(void **state)
{
	struct s3_sigv4_request r;
	char out[512];

	suite_request(&r, "GET", "", suite_headers, 2);
	r.amz_date = "2015";
	assert_int_equal(s3_sigv4_authorization(&r, out, sizeof(out), NULL),
			 EINVAL);
	suite_request(&r, "GET", "", suite_headers, 2);
	r.secret_key = NULL;
	assert_int_equal(s3_sigv4_authorization(&r, out, sizeof(out), NULL),
			 EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_s3_get_object),
	    cmocka_unit_test(test_signing_key),
	    cmocka_unit_test(test_precomputed_signing_key),
	    cmocka_unit_test(test_s3_list_objects),
	    cmocka_unit_test(test_s3_get_lifecycle),
	    cmocka_unit_test(test_s3_put_object),
	    cmocka_unit_test(test_suite_get_vanilla),
	    cmocka_unit_test(test_suite_post_vanilla),
	    cmocka_unit_test(test_suite_query_order_key_case),
	    cmocka_unit_test(test_inputs_are_signed),
	    cmocka_unit_test(test_sha256),
	    cmocka_unit_test(test_output_bounds),
	    cmocka_unit_test(test_incomplete_request),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
