/*
 * Unit tests for s3/xml.c (ListObjectsV2 pages, their LastModified times,
 * <Error> bodies, hostile XML) and s3/error.c (classification table,
 * user-facing lines).
 *
 * The s3rver documents below were captured from s3rver 3.7.1 on this
 * machine; the AWS ones follow the ListObjectsV2 API reference.
 */
#include "config.h"

#include "s3/internal.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <curl/curl.h>

/* ---- helpers ---- */

static int parse(const char *xml, struct store_list_page *p)
{
	return s3_xml_parse_list(xml, strlen(xml), p);
}

/* Sets every byte of the page, so that "zeroed on error" is checked. */
static void page_poison(struct store_list_page *p)
{
	memset(p, 0xA5, sizeof(*p));
}

static void assert_page_empty(const struct store_list_page *p)
{
	assert_null(p->objects);
	assert_int_equal(p->count, 0);
	assert_false(p->truncated);
	assert_null(p->next_token);
}

static void expect_list_fails(const char *xml)
{
	struct store_list_page p;

	page_poison(&p);
	assert_int_equal(parse(xml, &p), EPROTO);
	assert_page_empty(&p);
}

/* A page with one object whose Key element content is key_xml. */
static char *one_key_page(const char *key_xml, const char *encoding)
{
	struct util_buf b;

	util_buf_init(&b, 0);
	assert_int_equal(
	    util_buf_printf(
		&b,
		"<ListBucketResult><IsTruncated>false</IsTruncated>"
		"<Contents><Key>%s</Key><ETag>\"e\"</ETag>"
		"<Size>1</Size></Contents>%s%s%s</ListBucketResult>",
		key_xml, encoding ? "<EncodingType>" : "",
		encoding ? encoding : "", encoding ? "</EncodingType>" : ""),
	    0);
	return util_buf_take(&b);
}

/* Parses a one-object page; returns rc and the key (caller frees). */
static int parse_key(const char *key_xml, const char *encoding, char **key)
{
	struct store_list_page p;
	char *xml = one_key_page(key_xml, encoding);
	int rc;

	*key = NULL;
	page_poison(&p);
	rc = parse(xml, &p);
	free(xml);
	if (rc) {
		assert_page_empty(&p);
		return rc;
	}
	assert_int_equal(p.count, 1);
	*key = strdup(p.objects[0].key);
	assert_non_null(*key);
	store_list_page_clear(&p);
	return 0;
}

static void assert_key(const char *key_xml, const char *encoding,
		       const char *want)
{
	char *key = NULL;

	assert_int_equal(parse_key(key_xml, encoding, &key), 0);
	assert_string_equal(key, want);
	free(key);
}

static void assert_key_fails(const char *key_xml, const char *encoding)
{
	char *key = NULL;

	assert_int_equal(parse_key(key_xml, encoding, &key), EPROTO);
	assert_null(key);
}

/* A page with one object whose Size element content is size_xml. */
static int parse_size(const char *size_xml, uint64_t *size)
{
	struct store_list_page p;
	char xml[512];
	int rc;

	snprintf(xml, sizeof(xml),
		 "<ListBucketResult><IsTruncated>false</IsTruncated>"
		 "<Contents><Key>k</Key><ETag>\"e\"</ETag><Size>%s</Size>"
		 "</Contents></ListBucketResult>",
		 size_xml);
	page_poison(&p);
	rc = parse(xml, &p);
	if (rc) {
		assert_page_empty(&p);
		return rc;
	}
	assert_int_equal(p.count, 1);
	*size = p.objects[0].size;
	store_list_page_clear(&p);
	return 0;
}

/* ---- ListObjectsV2 pages ---- */

static const char aws_page[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<ListBucketResult "
    "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\n"
    "    <Name>bucket</Name>\n"
    "    <Prefix/>\n"
    "    <KeyCount>2</KeyCount>\n"
    "    <MaxKeys>1000</MaxKeys>\n"
    "    <IsTruncated>false</IsTruncated>\n"
    "    <Contents>\n"
    "        <Key>my-image.jpg</Key>\n"
    "        <LastModified>2009-10-12T17:50:30.000Z</LastModified>\n"
    "        <ETag>\"fba9dede5f27731c9771645a39863328\"</ETag>\n"
    "        <Size>434234</Size>\n"
    "        <StorageClass>STANDARD</StorageClass>\n"
    "    </Contents>\n"
    "    <Contents>\n"
    "        <Key>my-third-image.jpg</Key>\n"
    "        <LastModified>2009-10-12T17:50:30.000Z</LastModified>\n"
    "        <ETag>&quot;1b2cf535f27731c974343645a3985328&quot;</ETag>\n"
    "        <Size>64994</Size>\n"
    "        <StorageClass>STANDARD_IA</StorageClass>\n"
    "        <Owner>\n"
    "            "
    "<ID>75aa57f09aa0c8caeab4f8c24e99d10f8e7faeebf76c078efc7c6caea54"
    "ba06a</ID>\n"
    "            <DisplayName>mtd@amazon.com</DisplayName>\n"
    "        </Owner>\n"
    "    </Contents>\n"
    "    <CommonPrefixes><Prefix>photos/</Prefix></CommonPrefixes>\n"
    "</ListBucketResult>\n";

static void test_list_aws_documented(void **state)
{
	struct store_list_page p;

	page_poison(&p);
	assert_int_equal(parse(aws_page, &p), 0);
	assert_int_equal(p.count, 2);
	assert_false(p.truncated);
	assert_null(p.next_token);
	assert_string_equal(p.objects[0].key, "my-image.jpg");
	assert_string_equal(p.objects[0].etag,
			    "\"fba9dede5f27731c9771645a39863328\"");
	assert_true(p.objects[0].size == 434234);
	/* 2009-10-12T17:50:30.000Z */
	assert_int_equal(p.objects[0].mtime, 1255369830);
	assert_string_equal(p.objects[1].key, "my-third-image.jpg");
	assert_string_equal(p.objects[1].etag,
			    "\"1b2cf535f27731c974343645a3985328\"");
	assert_true(p.objects[1].size == 64994);
	assert_int_equal(p.objects[1].mtime, 1255369830);
	store_list_page_clear(&p);
	assert_page_empty(&p);
	/* clearing twice (and NULL) is harmless */
	store_list_page_clear(&p);
	store_list_page_clear(NULL);
}

static void test_list_aws_truncated(void **state)
{
	static const char xml[] =
	    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	    "<ListBucketResult "
	    "xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">\n"
	    "  <Name>bucket</Name>\n"
	    "  <Prefix></Prefix>\n"
	    "  <NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/"
	    "wm36Hy4vbOwM=</NextContinuationToken>\n"
	    "  <KeyCount>1</KeyCount>\n"
	    "  <MaxKeys>1</MaxKeys>\n"
	    "  <IsTruncated>true</IsTruncated>\n"
	    "  <Contents>\n"
	    "    <Key>ExampleObject.txt</Key>\n"
	    "    <LastModified>2013-09-17T18:07:53.000Z</LastModified>\n"
	    "    <ETag>\"599bab3ed2c697f1d26842727561fd94\"</ETag>\n"
	    "    <Size>857</Size>\n"
	    "    <StorageClass>REDUCED_REDUNDANCY</StorageClass>\n"
	    "  </Contents>\n"
	    "</ListBucketResult>\n";
	struct store_list_page p;

	page_poison(&p);
	assert_int_equal(parse(xml, &p), 0);
	assert_true(p.truncated);
	assert_string_equal(p.next_token,
			    "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=");
	assert_int_equal(p.count, 1);
	assert_string_equal(p.objects[0].key, "ExampleObject.txt");
	assert_true(p.objects[0].size == 857);
	store_list_page_clear(&p);
}

/* Captured from s3rver 3.7.1: list-type=2&max-keys=2 */
static const char s3rver_page1[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<ListBucketResult xmlns=\"http://doc.s3.amazonaws.com/2006-03-01/\">"
    "<Name>bkt</Name><Prefix></Prefix>"
    "<NextContinuationToken>1Z5C8l1wqvYogBsh0IpVmS+Pd6+jMfbTW6Nnb4v5XJc="
    "</NextContinuationToken><KeyCount>2</KeyCount><MaxKeys>2</MaxKeys>"
    "<IsTruncated>true</IsTruncated>"
    "<Contents><Key>a.txt</Key>"
    "<LastModified>2026-11-21T16:14:14.000Z</LastModified>"
    "<ETag>&quot;b1946ac92492d2347c6235b4d2611184&quot;</ETag>"
    "<Size>6</Size><StorageClass>STANDARD</StorageClass></Contents>"
    "<Contents><Key>b c.txt</Key>"
    "<LastModified>2026-11-21T16:14:14.000Z</LastModified>"
    "<ETag>&quot;b1946ac92492d2347c6235b4d2611184&quot;</ETag>"
    "<Size>6</Size><StorageClass>STANDARD</StorageClass></Contents>"
    "</ListBucketResult>";

/* ... and the next (last) page */
static const char s3rver_page2[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<ListBucketResult xmlns=\"http://doc.s3.amazonaws.com/2006-03-01/\">"
    "<Name>bkt</Name><Prefix></Prefix>"
    "<ContinuationToken>1Z5C8l1wqvYogBsh0IpVmS+Pd6+jMfbTW6Nnb4v5XJc="
    "</ContinuationToken>"
    "<KeyCount>2</KeyCount><MaxKeys>2</MaxKeys>"
    "<IsTruncated>false</IsTruncated>"
    "<Contents><Key>caf\xc3\xa9</Key>"
    "<LastModified>2026-11-21T16:14:14.000Z</LastModified>"
    "<ETag>&quot;b1946ac92492d2347c6235b4d2611184&quot;</ETag>"
    "<Size>6</Size><StorageClass>STANDARD</StorageClass></Contents>"
    "<Contents><Key>d&amp;e</Key>"
    "<LastModified>2026-11-21T16:14:14.000Z</LastModified>"
    "<ETag>&quot;b1946ac92492d2347c6235b4d2611184&quot;</ETag>"
    "<Size>6</Size><StorageClass>STANDARD</StorageClass></Contents>"
    "</ListBucketResult>";

/* An ETag goes into If-Match: a listed one carrying CR/LF (through
 * character references) could smuggle headers into later GETs. */
static void test_list_etag_controls(void **state)
{
	expect_list_fails(
	    "<ListBucketResult><IsTruncated>false</IsTruncated><Contents>"
	    "<Key>k</Key><ETag>\"x\"&#13;&#10;X-Injected: 1</ETag>"
	    "<Size>1</Size></Contents></ListBucketResult>");
	expect_list_fails(
	    "<ListBucketResult><IsTruncated>false</IsTruncated><Contents>"
	    "<Key>k</Key><ETag>\"x&#9;y\"</ETag>"
	    "<Size>1</Size></Contents></ListBucketResult>");
}

static void test_list_s3rver_pages(void **state)
{
	struct store_list_page p;

	page_poison(&p);
	assert_int_equal(parse(s3rver_page1, &p), 0);
	assert_true(p.truncated);
	assert_string_equal(p.next_token,
			    "1Z5C8l1wqvYogBsh0IpVmS+Pd6+jMfbTW6Nnb4v5XJc=");
	assert_int_equal(p.count, 2);
	assert_string_equal(p.objects[0].key, "a.txt");
	assert_string_equal(p.objects[1].key, "b c.txt");
	assert_string_equal(p.objects[1].etag,
			    "\"b1946ac92492d2347c6235b4d2611184\"");
	assert_true(p.objects[1].size == 6);
	/* 2026-11-21T16:14:14.000Z */
	assert_int_equal(p.objects[0].mtime, 1795277654);
	assert_int_equal(p.objects[1].mtime, 1795277654);
	store_list_page_clear(&p);

	page_poison(&p);
	assert_int_equal(parse(s3rver_page2, &p), 0);
	assert_false(p.truncated);
	assert_null(p.next_token);
	assert_int_equal(p.count, 2);
	assert_string_equal(p.objects[0].key, "caf\xc3\xa9");
	assert_string_equal(p.objects[1].key, "d&e");
	store_list_page_clear(&p);
}

static void test_list_empty_result(void **state)
{
	static const char xml[] =
	    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	    "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/"
	    "2006-03-01/\"><Name>bkt</Name><Prefix>nothing/</Prefix>"
	    "<KeyCount>0</KeyCount><MaxKeys>1000</MaxKeys>"
	    "<IsTruncated>false</IsTruncated></ListBucketResult>";
	struct store_list_page p;

	page_poison(&p);
	assert_int_equal(parse(xml, &p), 0);
	assert_page_empty(&p);
}

static void test_list_token_rules(void **state)
{
	struct store_list_page p;

	/* a token on the last page is dropped */
	page_poison(&p);
	assert_int_equal(
	    parse("<ListBucketResult><IsTruncated>false</IsTruncated>"
		  "<NextContinuationToken>x</NextContinuationToken>"
		  "</ListBucketResult>",
		  &p),
	    0);
	assert_page_empty(&p);
	/* "1" and "0" are xs:boolean too */
	page_poison(&p);
	assert_int_equal(
	    parse("<ListBucketResult><IsTruncated>1</IsTruncated>"
		  "<NextContinuationToken>t</NextContinuationToken>"
		  "</ListBucketResult>",
		  &p),
	    0);
	assert_true(p.truncated);
	assert_string_equal(p.next_token, "t");
	store_list_page_clear(&p);

	/* truncated without a way to continue */
	expect_list_fails("<ListBucketResult><IsTruncated>true</IsTruncated>"
			  "</ListBucketResult>");
	expect_list_fails("<ListBucketResult><IsTruncated>true</IsTruncated>"
			  "<NextContinuationToken></NextContinuationToken>"
			  "</ListBucketResult>");
	/* IsTruncated missing, garbled or given twice */
	expect_list_fails("<ListBucketResult></ListBucketResult>");
	expect_list_fails("<ListBucketResult><IsTruncated>yes</IsTruncated>"
			  "</ListBucketResult>");
	expect_list_fails("<ListBucketResult><IsTruncated>false</IsTruncated>"
			  "<IsTruncated>true</IsTruncated>"
			  "</ListBucketResult>");
	expect_list_fails("<ListBucketResult><IsTruncated>true</IsTruncated>"
			  "<NextContinuationToken>a</NextContinuationToken>"
			  "<NextContinuationToken>b</NextContinuationToken>"
			  "</ListBucketResult>");
}

static void test_list_namespace_prefix(void **state)
{
	static const char xml[] =
	    "<s3:ListBucketResult "
	    "xmlns:s3=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
	    "<s3:IsTruncated>false</s3:IsTruncated>"
	    "<s3:Contents><s3:Key>k</s3:Key><s3:ETag>\"e\"</s3:ETag>"
	    "<s3:Size>3</s3:Size></s3:Contents></s3:ListBucketResult>";
	struct store_list_page p;

	page_poison(&p);
	assert_int_equal(parse(xml, &p), 0);
	assert_int_equal(p.count, 1);
	assert_string_equal(p.objects[0].key, "k");
	assert_true(p.objects[0].size == 3);
	store_list_page_clear(&p);
}

static void test_list_url_encoded_keys(void **state)
{
	/* AWS form-encodes: '+' is a space, a real '+' is %2B */
	assert_key("foo+%3D+bar+baz+%CE%B1+%CE%B2+%F0%9F%98%8A", "url",
		   "foo = bar baz \xce\xb1 \xce\xb2 \xf0\x9f\x98\x8a");
	assert_key("my+file.txt", "url", "my file.txt");
	assert_key("my%20file.txt", "url", "my file.txt");
	assert_key("caf%C3%A9", "url", "caf\xc3\xa9");
	assert_key("caf%c3%a9", "url", "caf\xc3\xa9");
	assert_key("dir%2Fsub%2Ffile", "url", "dir/sub/file");
	assert_key("a%2Bb", "url", "a+b");
	assert_key("test_file%283%29.png", "url", "test_file(3).png");
	assert_key("ctl%01%0A", "url", "ctl\x01\n");
	assert_key("100%25", "url", "100%");
	/* EncodingType before the objects works too */
	{
		struct store_list_page p;

		page_poison(&p);
		assert_int_equal(
		    parse("<ListBucketResult><EncodingType>url</EncodingType>"
			  "<IsTruncated>false</IsTruncated><Contents>"
			  "<Key>a+b</Key><ETag>e</ETag><Size>1</Size>"
			  "</Contents></ListBucketResult>",
			  &p),
		    0);
		assert_string_equal(p.objects[0].key, "a b");
		store_list_page_clear(&p);
	}
	/* without EncodingType nothing is decoded */
	assert_key("a+b%20c", NULL, "a+b%20c");
	/* only "url" is known */
	assert_key_fails("a", "base64");
	/* malformed escapes and NUL */
	assert_key_fails("%", "url");
	assert_key_fails("abc%", "url");
	assert_key_fails("%2", "url");
	assert_key_fails("%G1", "url");
	assert_key_fails("%1G", "url");
	assert_key_fails("%%41", "url");
	assert_key_fails("a%00b", "url");
	assert_key_fails("%00", "url");
}

static void test_list_key_entities(void **state)
{
	assert_key("d&amp;e", NULL, "d&e");
	assert_key("&lt;a&gt; &apos;b&apos; &quot;c&quot;", NULL,
		   "<a> 'b' \"c\"");
	assert_key("x&#x27;y&#60;&#xE9;", NULL, "x'y<\xc3\xa9");
	assert_key("<![CDATA[a<b&c]]>", NULL, "a<b&c");
	assert_key("\xe6\x97\xa5\xe6\x9c\xac/\xf0\x9f\x98\x80.bin", NULL,
		   "\xe6\x97\xa5\xe6\x9c\xac/\xf0\x9f\x98\x80.bin");
	/* white space is part of a key, even all of it (XML_PARSE_NOBLANKS) */
	assert_key(" ", NULL, " ");
	assert_key("  lead and trail  ", NULL, "  lead and trail  ");
	/* comments are not text */
	assert_key("a<!-- c -->b", NULL, "ab");
	/* an empty key cannot exist in S3 */
	assert_key_fails("", NULL);
	/* without EncodingType a '%' is just a character */
	assert_key("%", NULL, "%");
}

static void test_list_etag_quotes(void **state)
{
	struct store_list_page p;

	page_poison(&p);
	assert_int_equal(
	    parse("<ListBucketResult><IsTruncated>false</IsTruncated>"
		  "<Contents><Key>k</Key>"
		  "<ETag>&quot;d41d8cd98f00b204e9800998ecf8427e-2&quot;</ETag>"
		  "<Size>0</Size></Contents></ListBucketResult>",
		  &p),
	    0);
	assert_string_equal(p.objects[0].etag,
			    "\"d41d8cd98f00b204e9800998ecf8427e-2\"");
	assert_true(p.objects[0].size == 0);
	store_list_page_clear(&p);
}

static void test_list_sizes(void **state)
{
	uint64_t size = 0;

	assert_int_equal(parse_size("5000000000", &size), 0);
	assert_true(size == 5000000000ULL);
	assert_int_equal(parse_size("0", &size), 0);
	assert_true(size == 0);
	assert_int_equal(parse_size("18446744073709551615", &size), 0);
	assert_true(size == UINT64_MAX);
	assert_int_equal(parse_size("5497558138880", &size), 0);
	assert_true(size == 5497558138880ULL); /* 5 TiB, S3's largest */
	assert_int_equal(parse_size("\n  42\n", &size), 0);
	assert_true(size == 42);

	assert_int_equal(parse_size("18446744073709551616", &size), EPROTO);
	assert_int_equal(parse_size("99999999999999999999999", &size), EPROTO);
	assert_int_equal(parse_size("-1", &size), EPROTO);
	assert_int_equal(parse_size("+1", &size), EPROTO);
	assert_int_equal(parse_size("12a", &size), EPROTO);
	assert_int_equal(parse_size("abc", &size), EPROTO);
	assert_int_equal(parse_size("1.5", &size), EPROTO);
	assert_int_equal(parse_size("1e9", &size), EPROTO);
	assert_int_equal(parse_size("0x10", &size), EPROTO);
	assert_int_equal(parse_size("1 2", &size), EPROTO);
	assert_int_equal(parse_size("", &size), EPROTO);
}

/*
 * A page with one object whose <Contents> holds Key, ETag and Size, with
 * before and after around them: returns the parse's rc and the object's
 * mtime (-1 when the parse failed).
 */
static int parse_mtime(const char *before, const char *after, int64_t *mtime)
{
	struct store_list_page p;
	char xml[1024];
	int rc;

	*mtime = -1;
	snprintf(xml, sizeof(xml),
		 "<ListBucketResult><IsTruncated>false</IsTruncated>"
		 "<Contents>%s<Key>k</Key><ETag>\"e\"</ETag><Size>1</Size>%s"
		 "</Contents></ListBucketResult>",
		 before, after);
	page_poison(&p);
	rc = parse(xml, &p);
	if (rc) {
		assert_page_empty(&p);
		return rc;
	}
	assert_int_equal(p.count, 1);
	assert_string_equal(p.objects[0].key, "k");
	*mtime = p.objects[0].mtime;
	store_list_page_clear(&p);
	return 0;
}

/* One <LastModified> of text: the object's mtime (the page must parse). */
static int64_t mtime_of(const char *text)
{
	char elem[512];
	int64_t mtime;

	snprintf(elem, sizeof(elem), "<LastModified>%s</LastModified>", text);
	assert_int_equal(parse_mtime("", elem, &mtime), 0);
	return mtime;
}

/* LastModified: ISO 8601 in UTC to seconds since the epoch; anything
 * missing, malformed or repeated is 0 and never fails the page.  (The
 * expected values are Python's calendar.timegm of the same fields.) */
static void test_list_last_modified(void **state)
{
	static const char *const refused[] = {
	    "",
	    "garbage",
	    "2026-11-27",
	    "2026-11-27T17:00:00",	/* no zone */
	    "2026-11-27 17:00:00Z",	/* no T */
	    "2026-11-27T17:00Z",	/* no seconds */
	    "2026-11-27T17:00:00.Z",	/* empty fraction */
	    "2026-11-27T17:00:00,5Z",	/* comma */
	    "2026-11-27T17:00:00Zjunk", /* trailing bytes */
	    "2026-13-01T00:00:00Z",	/* month 13 */
	    "2026-00-01T00:00:00Z",	/* month 0 */
	    "2026-11-00T00:00:00Z",	/* day 0 */
	    "2026-11-31T00:00:00Z",	/* November has 30 */
	    "2025-02-29T00:00:00Z",	/* not a leap year */
	    "2100-02-29T00:00:00Z",	/* nor is 2100 */
	    "2026-11-27T24:00:00Z",	/* hour 24 */
	    "2026-11-27T17:60:00Z",	/* minute 60 */
	    "2026-11-27T17:00:60Z",	/* second 60 */
	    "2026-11-27T17:00:99Z",
	    "26-11-27T17:00:00Z",
	    "+2026-11-27T17:00:00Z",
	    "2026-1-27T17:00:00Z",
	    "1969-12-31T23:59:59Z", /* before the epoch */
	    "1970-01-01T00:00:00Z", /* the epoch itself: 0 anyway */
	    "\xef\xbc\x92"
	    "026-11-27T17:00:00Z", /* a fullwidth digit */
	};
	int64_t mtime;

	(void)state;
	/* 2026-11-27T17:00:00Z, with and without a fraction */
	assert_int_equal(mtime_of("2026-11-27T17:00:00.000Z"), 1795798800);
	assert_int_equal(mtime_of("2026-11-27T17:00:00Z"), 1795798800);
	assert_int_equal(mtime_of("2026-11-27T17:00:00.999999999Z"),
			 1795798800);
	assert_int_equal(mtime_of("2026-11-27T17:00:00.5Z"), 1795798800);
	/* blanks around it, as an indenting server writes it */
	assert_int_equal(mtime_of("\n   2026-11-27T17:00:00.000Z\n  "),
			 1795798800);
	/* an offset is honoured */
	assert_int_equal(mtime_of("2026-11-27T19:00:00+02:00"), 1795798800);
	assert_int_equal(mtime_of("2024-02-29T12:00:00Z"), 1709208000);
	assert_int_equal(mtime_of("1970-01-01T00:00:01Z"), 1);
	/* past 32 bits of seconds: kept whole here (the catalog clamps) */
	assert_int_equal(mtime_of("2106-02-07T06:28:16Z"), 4294967296LL);
	assert_int_equal(mtime_of("2038-01-19T03:14:08Z"), 2147483648LL);
	/* before the Key, as AWS sends it after it: any place in Contents */
	assert_int_equal(
	    parse_mtime("<LastModified>2015-10-21T07:28:00Z</LastModified>", "",
			&mtime),
	    0);
	assert_int_equal(mtime, 1445412480);

	/* missing */
	assert_int_equal(parse_mtime("", "", &mtime), 0);
	assert_int_equal(mtime, 0);
	assert_int_equal(parse_mtime("", "<LastModified/>", &mtime), 0);
	assert_int_equal(mtime, 0);
	/* malformed or out of range */
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		mtime = mtime_of(refused[i]);
		if (mtime != 0)
			fail_msg("'%s' gave %lld", refused[i],
				 (long long)mtime);
	}
	/* repeated: neither is trusted, the page still parses */
	assert_int_equal(
	    parse_mtime("<LastModified>2026-11-27T17:00:00Z</LastModified>",
			"<LastModified>2026-11-27T18:00:00Z</LastModified>",
			&mtime),
	    0);
	assert_int_equal(mtime, 0);
	/* nested one level too deep: not the object's */
	assert_int_equal(parse_mtime("",
				     "<Owner><LastModified>2026-11-27T17:00:"
				     "00Z</LastModified></Owner>",
				     &mtime),
			 0);
	assert_int_equal(mtime, 0);
}

/* Each object has its own time: none carries over to the next. */
static void test_list_last_modified_objects(void **state)
{
	static const char xml[] =
	    "<ListBucketResult><IsTruncated>false</IsTruncated>"
	    "<LastModified>2026-11-27T17:00:00Z</LastModified>"
	    "<Contents><Key>a</Key><ETag>e</ETag><Size>1</Size>"
	    "<LastModified>2026-11-27T17:00:00Z</LastModified>"
	    "<LastModified>2026-11-27T17:00:00Z</LastModified></Contents>"
	    "<Contents><Key>b</Key><ETag>e</ETag><Size>1</Size>"
	    "<LastModified>2015-10-21T07:28:00.000Z</LastModified></Contents>"
	    "<Contents><Key>c</Key><ETag>e</ETag><Size>1</Size></Contents>"
	    "<Contents><Key>d</Key><ETag>e</ETag><Size>1</Size>"
	    "<LastModified>bad</LastModified></Contents>"
	    "<Contents><Key>e</Key><ETag>e</ETag><Size>1</Size>"
	    "<LastModified>2024-02-29T12:00:00Z</LastModified></Contents>"
	    "</ListBucketResult>";
	struct store_list_page p;

	(void)state;
	page_poison(&p);
	assert_int_equal(parse(xml, &p), 0);
	assert_int_equal(p.count, 5);
	assert_int_equal(p.objects[0].mtime, 0); /* repeated */
	assert_int_equal(p.objects[1].mtime, 1445412480);
	assert_int_equal(p.objects[2].mtime, 0); /* none */
	assert_int_equal(p.objects[3].mtime, 0); /* malformed */
	assert_int_equal(p.objects[4].mtime, 1709208000);
	store_list_page_clear(&p);
}

static void test_list_bad_contents(void **state)
{
	/* Contents without Key, ETag or Size */
	expect_list_fails("<ListBucketResult><IsTruncated>false</IsTruncated>"
			  "<Contents><ETag>e</ETag><Size>1</Size></Contents>"
			  "</ListBucketResult>");
	expect_list_fails("<ListBucketResult><IsTruncated>false</IsTruncated>"
			  "<Contents><Key>k</Key><Size>1</Size></Contents>"
			  "</ListBucketResult>");
	expect_list_fails("<ListBucketResult><IsTruncated>false</IsTruncated>"
			  "<Contents><Key>k</Key><ETag>e</ETag></Contents>"
			  "</ListBucketResult>");
	expect_list_fails("<ListBucketResult><IsTruncated>false</IsTruncated>"
			  "<Contents/></ListBucketResult>");
	/* a Key nested one level too deep is not the object's key */
	expect_list_fails("<ListBucketResult><IsTruncated>false</IsTruncated>"
			  "<Contents><Owner><Key>k</Key></Owner><ETag>e</ETag>"
			  "<Size>1</Size></Contents></ListBucketResult>");
	/* duplicate fields */
	expect_list_fails("<ListBucketResult><IsTruncated>false</IsTruncated>"
			  "<Contents><Key>k</Key><Key>l</Key><ETag>e</ETag>"
			  "<Size>1</Size></Contents></ListBucketResult>");
	expect_list_fails("<ListBucketResult><IsTruncated>false</IsTruncated>"
			  "<Contents><Key>k</Key><ETag>e</ETag><Size>1</Size>"
			  "<Size>2</Size></Contents></ListBucketResult>");
	/* a bad object after good ones: everything is freed, page empty */
	expect_list_fails("<ListBucketResult><IsTruncated>false</IsTruncated>"
			  "<Contents><Key>a</Key><ETag>e</ETag><Size>1</Size>"
			  "</Contents>"
			  "<Contents><Key>b</Key><ETag>e</ETag><Size>2</Size>"
			  "</Contents>"
			  "<Contents><Key>c</Key><ETag>e</ETag><Size>-3</Size>"
			  "</Contents></ListBucketResult>");
	expect_list_fails(
	    "<ListBucketResult><IsTruncated>false</IsTruncated>"
	    "<Contents><Key>a%41</Key><ETag>e</ETag><Size>1</Size>"
	    "</Contents>"
	    "<Contents><Key>b%4</Key><ETag>e</ETag><Size>2</Size>"
	    "</Contents><EncodingType>url</EncodingType>"
	    "</ListBucketResult>");
}

static void test_list_wrong_root(void **state)
{
	expect_list_fails("<ListAllMyBucketsResult><IsTruncated>false"
			  "</IsTruncated></ListAllMyBucketsResult>");
	expect_list_fails("<ListVersionsResult><IsTruncated>false"
			  "</IsTruncated></ListVersionsResult>");
	expect_list_fails("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
			  "<Error><Code>NoSuchBucket</Code></Error>");
	expect_list_fails("<html><body><ListBucketResult><IsTruncated>false"
			  "</IsTruncated></ListBucketResult></body></html>");
}

static void test_list_not_xml(void **state)
{
	struct store_list_page p;

	expect_list_fails("");
	expect_list_fails("hello");
	expect_list_fails("{\"ListBucketResult\": {}}");
	expect_list_fails("<ListBucketResult>");
	expect_list_fails("<ListBucketResult><IsTruncated>false</IsTruncated>"
			  "</ListBucketResult><ListBucketResult/>");
	expect_list_fails("<ListBucketResult><IsTruncated>false</IsTruncated>"
			  "</ListBucketResult>trailing");
	/* undeclared entity (fatal without a DTD) */
	expect_list_fails("<ListBucketResult><IsTruncated>false</IsTruncated>"
			  "<Contents><Key>&eacute;</Key><ETag>e</ETag>"
			  "<Size>1</Size></Contents></ListBucketResult>");
	/* a NUL byte inside the body */
	{
		static const char with_nul[] =
		    "<ListBucketResult>\0<IsTruncated>false"
		    "</IsTruncated></ListBucketResult>";

		page_poison(&p);
		assert_int_equal(
		    s3_xml_parse_list(with_nul, sizeof(with_nul) - 1, &p),
		    EPROTO);
		assert_page_empty(&p);
	}
	/* NULL body */
	page_poison(&p);
	assert_int_equal(s3_xml_parse_list(NULL, 0, &p), EPROTO);
	assert_page_empty(&p);
	/* invalid UTF-8 */
	expect_list_fails("<ListBucketResult><IsTruncated>false</IsTruncated>"
			  "<Contents><Key>\xc3\x28</Key><ETag>e</ETag>"
			  "<Size>1</Size></Contents></ListBucketResult>");
}

/* Every strict prefix of a valid page is malformed. */
static void test_list_truncated_document(void **state)
{
	size_t full = strlen(s3rver_page1);
	size_t len;

	for (len = 0; len < full; len++) {
		struct store_list_page p;

		page_poison(&p);
		assert_int_equal(s3_xml_parse_list(s3rver_page1, len, &p),
				 EPROTO);
		assert_page_empty(&p);
	}
}

/*
 * A valid empty page of exactly len bytes, padded with 1 MiB comments
 * (a single huge text node would hit libxml2's own 10 MB node limit).
 */
static char *padded_page(size_t len)
{
	static const char head[] =
	    "<ListBucketResult><IsTruncated>false</IsTruncated><!--";
	static const char tail[] = "--></ListBucketResult>";
	static const char split[] = "--><!--";
	size_t chunk = (size_t)1 << 20;
	char *doc = malloc(len);
	size_t pos;

	assert_non_null(doc);
	memset(doc, 'x', len);
	memcpy(doc, head, strlen(head));
	for (pos = chunk; pos + chunk < len; pos += chunk)
		memcpy(doc + pos, split, strlen(split));
	memcpy(doc + len - strlen(tail), tail, strlen(tail));
	return doc;
}

static void test_list_too_big(void **state)
{
	size_t limit = (size_t)64 << 20;
	struct store_list_page p;
	char *doc;

	doc = padded_page(limit + 1);
	page_poison(&p);
	assert_int_equal(s3_xml_parse_list(doc, limit + 1, &p), EPROTO);
	assert_page_empty(&p);
	free(doc);

	/* the same document one byte smaller is accepted */
	doc = padded_page(limit);
	page_poison(&p);
	assert_int_equal(s3_xml_parse_list(doc, limit, &p), 0);
	assert_page_empty(&p);
	free(doc);
}

static void test_list_billion_laughs(void **state)
{
	static const char xml[] =
	    "<?xml version=\"1.0\"?>\n"
	    "<!DOCTYPE lolz [\n"
	    " <!ENTITY lol \"lol\">\n"
	    " <!ENTITY lol1 \"&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;"
	    "&lol;\">\n"
	    " <!ENTITY lol2 \"&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;"
	    "&lol1;&lol1;\">\n"
	    " <!ENTITY lol3 \"&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;"
	    "&lol2;&lol2;\">\n"
	    " <!ENTITY lol4 \"&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;"
	    "&lol3;&lol3;\">\n"
	    " <!ENTITY lol5 \"&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;"
	    "&lol4;&lol4;\">\n"
	    " <!ENTITY lol6 \"&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;"
	    "&lol5;&lol5;\">\n"
	    " <!ENTITY lol7 \"&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;"
	    "&lol6;&lol6;\">\n"
	    " <!ENTITY lol8 \"&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;"
	    "&lol7;&lol7;\">\n"
	    " <!ENTITY lol9 \"&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;"
	    "&lol8;&lol8;\">\n"
	    "]>\n"
	    "<ListBucketResult><IsTruncated>false</IsTruncated>"
	    "<Contents><Key>&lol9;</Key><ETag>e</ETag><Size>1</Size>"
	    "</Contents></ListBucketResult>";
	struct timespec t0, t1;
	char code[64];
	char msg[256];

	clock_gettime(CLOCK_MONOTONIC, &t0);
	expect_list_fails(xml);
	assert_int_equal(s3_xml_parse_error(xml, strlen(xml), code,
					    sizeof(code), msg, sizeof(msg)),
			 EPROTO);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	/* refused up front, not after expanding anything */
	assert_true(t1.tv_sec - t0.tv_sec < 2);
}

static void test_list_external_entities(void **state)
{
	/* external general entity */
	expect_list_fails("<?xml version=\"1.0\"?>\n"
			  "<!DOCTYPE ListBucketResult [\n"
			  " <!ENTITY xxe SYSTEM \"file:///etc/passwd\">\n"
			  "]>\n"
			  "<ListBucketResult><IsTruncated>false</IsTruncated>"
			  "<Contents><Key>&xxe;</Key><ETag>e</ETag>"
			  "<Size>1</Size></Contents></ListBucketResult>");
	/* external parameter entity and network access */
	expect_list_fails("<?xml version=\"1.0\"?>\n"
			  "<!DOCTYPE ListBucketResult [\n"
			  " <!ENTITY % p SYSTEM \"http://127.0.0.1:1/x.dtd\">\n"
			  " %p;\n"
			  "]>\n"
			  "<ListBucketResult><IsTruncated>false</IsTruncated>"
			  "</ListBucketResult>");
	/* external subset */
	expect_list_fails("<?xml version=\"1.0\"?>\n"
			  "<!DOCTYPE ListBucketResult SYSTEM "
			  "\"file:///etc/passwd\">\n"
			  "<ListBucketResult><IsTruncated>false</IsTruncated>"
			  "</ListBucketResult>");
	/* any DTD at all, even a harmless one */
	expect_list_fails("<!DOCTYPE ListBucketResult>"
			  "<ListBucketResult><IsTruncated>false</IsTruncated>"
			  "</ListBucketResult>");
	/* XInclude is not processed: the element is just unknown */
	{
		struct store_list_page p;

		page_poison(&p);
		assert_int_equal(
		    parse("<ListBucketResult "
			  "xmlns:xi=\"http://www.w3.org/2001/XInclude\">"
			  "<IsTruncated>false</IsTruncated>"
			  "<Contents><Key>k</Key><ETag>e</ETag><Size>1</Size>"
			  "<xi:include href=\"file:///etc/passwd\" "
			  "parse=\"text\"/></Contents></ListBucketResult>",
			  &p),
		    0);
		assert_int_equal(p.count, 1);
		assert_string_equal(p.objects[0].key, "k");
		store_list_page_clear(&p);
	}
}

static char *nested(unsigned depth, bool close)
{
	struct util_buf b;
	unsigned i;

	util_buf_init(&b, 0);
	assert_int_equal(util_buf_append_str(&b, "<ListBucketResult>"
						 "<IsTruncated>false"
						 "</IsTruncated>"),
			 0);
	for (i = 0; i < depth; i++)
		assert_int_equal(util_buf_append_str(&b, "<a x=\"1\">g"), 0);
	for (i = 0; close && i < depth; i++)
		assert_int_equal(util_buf_append_str(&b, "</a>"), 0);
	if (close)
		assert_int_equal(util_buf_append_str(&b, "</ListBucketResult>"),
				 0);
	return util_buf_take(&b);
}

static void test_list_nesting(void **state)
{
	struct store_list_page p;
	char *xml;

	/* 100 levels of well-formed garbage: ignored */
	xml = nested(100, true);
	page_poison(&p);
	assert_int_equal(parse(xml, &p), 0);
	assert_page_empty(&p);
	free(xml);
	/* 100 levels never closed */
	xml = nested(100, false);
	expect_list_fails(xml);
	free(xml);
	/* deeper than libxml2's limit without XML_PARSE_HUGE */
	xml = nested(100000, true);
	expect_list_fails(xml);
	free(xml);
}

static void test_list_many_objects(void **state)
{
	struct util_buf b;
	struct store_list_page p;
	char want[32];
	size_t i;

	util_buf_init(&b, 0);
	assert_int_equal(util_buf_append_str(&b, "<ListBucketResult>"), 0);
	for (i = 0; i < 1000; i++)
		assert_int_equal(
		    util_buf_printf(&b,
				    "<Contents><Key>k%05zu</Key><ETag>\"%zu\""
				    "</ETag><Size>%zu</Size><LastModified>"
				    "2026-11-27T17:%02zu:%02zu.000Z"
				    "</LastModified></Contents>",
				    i, i, i * 1000000007, i / 60 % 60, i % 60),
		    0);
	assert_int_equal(util_buf_append_str(&b,
					     "<IsTruncated>false</IsTruncated>"
					     "</ListBucketResult>"),
			 0);
	page_poison(&p);
	assert_int_equal(s3_xml_parse_list(b.data, b.len, &p), 0);
	assert_int_equal(p.count, 1000);
	for (i = 0; i < 1000; i++) {
		snprintf(want, sizeof(want), "k%05zu", i);
		assert_string_equal(p.objects[i].key, want);
		assert_true(p.objects[i].size == (uint64_t)i * 1000000007);
		assert_int_equal(p.objects[i].mtime,
				 1795798800 + (int64_t)(i / 60 % 60) * 60 +
				     (int64_t)(i % 60));
	}
	store_list_page_clear(&p);
	util_buf_free(&b);
}

/* ---- <Error> bodies ---- */

static int parse_err(const char *xml, char *code, size_t codelen, char *msg,
		     size_t msglen)
{
	return s3_xml_parse_error(xml, strlen(xml), code, codelen, msg, msglen);
}

static void test_error_s3rver(void **state)
{
	char code[64] = "junk";
	char msg[256] = "junk";

	assert_int_equal(
	    parse_err("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		      "<Error><Code>NoSuchBucket</Code><Message>The specified "
		      "bucket does not exist</Message><BucketName>nope"
		      "</BucketName></Error>",
		      code, sizeof(code), msg, sizeof(msg)),
	    0);
	assert_string_equal(code, "NoSuchBucket");
	assert_string_equal(msg, "The specified bucket does not exist");

	/* s3rver writes HTML entities (he.encode) into its error bodies */
	assert_int_equal(
	    parse_err("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		      "<Error><Code>NoSuchKey</Code><Message>The specified "
		      "key does not exist.</Message><Key>caf&eacute;x</Key>"
		      "</Error>",
		      code, sizeof(code), msg, sizeof(msg)),
	    0);
	assert_string_equal(code, "NoSuchKey");
	assert_string_equal(msg, "The specified key does not exist.");
}

static void test_error_aws(void **state)
{
	char code[64];
	char msg[256];

	assert_int_equal(
	    parse_err(
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<Error>\n  <Code>AccessDenied</Code>\n"
		"  <Message>Access Denied</Message>\n"
		"  <RequestId>4442587FB7D0A2F9</RequestId>\n"
		"  <HostId>Uuag1LuByRx9e6j5Onimru9pO4ZVKnJ2Qz7/C1NPcfTWAtR"
		"PfTaOFg==</HostId>\n</Error>\n",
		code, sizeof(code), msg, sizeof(msg)),
	    0);
	assert_string_equal(code, "AccessDenied");
	assert_string_equal(msg, "Access Denied");

	/* namespaced, entities, a newline in the message */
	assert_int_equal(
	    parse_err(
		"<Error xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
		"<Code>AuthorizationHeaderMalformed</Code><Message>the "
		"region &apos;us-east-1&apos; is wrong;\nexpecting "
		"&apos;eu-west-1&apos;</Message></Error>",
		code, sizeof(code), msg, sizeof(msg)),
	    0);
	assert_string_equal(code, "AuthorizationHeaderMalformed");
	assert_string_equal(
	    msg, "the region 'us-east-1' is wrong; expecting 'eu-west-1'");
}

static void test_error_missing_parts(void **state)
{
	char code[64] = "junk";
	char msg[256] = "junk";

	assert_int_equal(parse_err("<Error><Message>no code</Message></Error>",
				   code, sizeof(code), msg, sizeof(msg)),
			 0);
	assert_string_equal(code, "");
	assert_string_equal(msg, "no code");

	assert_int_equal(
	    parse_err("<Error/>", code, sizeof(code), msg, sizeof(msg)), 0);
	assert_string_equal(code, "");
	assert_string_equal(msg, "");

	/* a body cut after the code still yields the code */
	assert_int_equal(parse_err("<Error><Code>SlowDown</Code><Mess", code,
				   sizeof(code), msg, sizeof(msg)),
			 0);
	assert_string_equal(code, "SlowDown");
}

static void test_error_not_xml(void **state)
{
	static const char *const bodies[] = {
	    "",
	    "Internal Server Error",
	    "<html><head><title>502 Bad Gateway</title></head></html>",
	    "{\"Code\": \"NoSuchBucket\"}",
	    "<ListBucketResult/>",
	    ("<!DOCTYPE Error [<!ENTITY x SYSTEM \"file:///etc/passwd\">]>"
	     "<Error><Code>&x;</Code></Error>"),
	};
	size_t i;

	for (i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
		char code[64] = "junk";
		char msg[256] = "junk";

		assert_int_equal(
		    parse_err(bodies[i], code, sizeof(code), msg, sizeof(msg)),
		    EPROTO);
		assert_string_equal(code, "");
		assert_string_equal(msg, "");
	}
	{
		char code[8] = "junk";
		char msg[8] = "junk";

		assert_int_equal(s3_xml_parse_error(NULL, 0, code, sizeof(code),
						    msg, sizeof(msg)),
				 EPROTO);
		assert_string_equal(code, "");
	}
}

static void test_error_truncation(void **state)
{
	struct util_buf b;
	char code[64];
	char msg[256];
	char small[5];
	size_t i;

	util_buf_init(&b, 0);
	assert_int_equal(util_buf_append_str(&b, "<Error><Code>"), 0);
	for (i = 0; i < 1000; i++)
		assert_int_equal(util_buf_append_str(&b, "C"), 0);
	assert_int_equal(util_buf_append_str(&b, "</Code><Message>"), 0);
	for (i = 0; i < 1000; i++) /* two bytes each */
		assert_int_equal(util_buf_append_str(&b, "\xc3\xa9"), 0);
	assert_int_equal(util_buf_append_str(&b, "</Message></Error>"), 0);

	memset(code, 'x', sizeof(code));
	memset(msg, 'x', sizeof(msg));
	assert_int_equal(s3_xml_parse_error(b.data, b.len, code, sizeof(code),
					    msg, sizeof(msg)),
			 0);
	assert_int_equal(strlen(code), sizeof(code) - 1);
	for (i = 0; i < sizeof(code) - 1; i++)
		assert_int_equal(code[i], 'C');
	/* 255 bytes would cut an 'é' in half: stop at 254 */
	assert_int_equal(strlen(msg), 254);
	for (i = 0; i < 254; i += 2) {
		assert_int_equal((unsigned char)msg[i], 0xc3);
		assert_int_equal((unsigned char)msg[i + 1], 0xa9);
	}

	/* tiny buffers, and zero-length ones are not touched */
	assert_int_equal(
	    s3_xml_parse_error(b.data, b.len, small, sizeof(small), NULL, 0),
	    0);
	assert_string_equal(small, "CCCC");
	util_buf_free(&b);
}

/* ---- s3_error_classify ---- */

struct classify_case {
	long status;
	const char *code;
	int curl;
	int err;
	bool retryable;
};

static void test_classify_table(void **state)
{
	static const struct classify_case cases[] = {
	    {200, NULL, 0, 0, false},
	    {206, "", 0, 0, false},
	    {204, NULL, 0, 0, false},
	    {404, "NoSuchBucket", 0, ENOENT, false},
	    {404, "NoSuchKey", 0, ENOENT, false},
	    {404, NULL, 0, ENOENT, false},
	    {404, "", 0, ENOENT, false},
	    {403, "AccessDenied", 0, EACCES, false},
	    {403, "InvalidAccessKeyId", 0, EACCES, false},
	    {403, "SignatureDoesNotMatch", 0, EACCES, false},
	    {400, "ExpiredToken", 0, EACCES, false},
	    {403, NULL, 0, EACCES, false},
	    {401, NULL, 0, EACCES, false},
	    {412, "PreconditionFailed", 0, ESTALE, false},
	    {412, NULL, 0, ESTALE, false},
	    {416, "InvalidRange", 0, ERANGE, false},
	    {416, NULL, 0, ERANGE, false},
	    {503, "SlowDown", 0, EIO, true},
	    {500, "InternalError", 0, EIO, true},
	    {503, "ServiceUnavailable", 0, EIO, true},
	    {500, NULL, 0, EIO, true},
	    {502, NULL, 0, EIO, true},
	    {504, "", 0, EIO, true},
	    {429, NULL, 0, EIO, true},
	    {400, "RequestTimeout", 0, EIO, true},
	    {408, NULL, 0, EIO, true},
	    {400, "InvalidArgument", 0, EINVAL, false},
	    {400, NULL, 0, EINVAL, false},
	    {405, "MethodNotAllowed", 0, EINVAL, false},
	    {409, NULL, 0, EINVAL, false},
	    {301, "PermanentRedirect", 0, EINVAL, false},
	    {307, NULL, 0, EINVAL, false},
	    {100, NULL, 0, EPROTO, false},
	    {999, NULL, 0, EPROTO, false},
	    /* curl failures without a response */
	    {0, NULL, CURLE_COULDNT_CONNECT, ECONNREFUSED, true},
	    {0, NULL, CURLE_COULDNT_RESOLVE_HOST, EHOSTUNREACH, true},
	    {0, NULL, CURLE_OPERATION_TIMEDOUT, ETIMEDOUT, true},
	    {0, NULL, CURLE_RECV_ERROR, EIO, true},
	    {0, NULL, CURLE_SEND_ERROR, EIO, true},
	    {0, NULL, CURLE_GOT_NOTHING, EIO, true},
	    {0, NULL, CURLE_SSL_CONNECT_ERROR, EIO, true},
	    {0, NULL, CURLE_PEER_FAILED_VERIFICATION, EPROTO, false},
	    {0, NULL, CURLE_SSL_CACERT_BADFILE, EPROTO, false},
	    {0, NULL, CURLE_URL_MALFORMAT, EINVAL, false},
	    {0, NULL, CURLE_UNSUPPORTED_PROTOCOL, EINVAL, false},
	    {0, NULL, CURLE_OUT_OF_MEMORY, ENOMEM, false},
	    {0, NULL, CURLE_ABORTED_BY_CALLBACK, ECANCELED, false},
	    {0, NULL, CURLE_TOO_MANY_REDIRECTS, EIO, false},
	    {0, NULL, 0, EIO, false},
	    /* a 2xx whose body broke off is a failure, retried */
	    {200, NULL, CURLE_PARTIAL_FILE, EIO, true},
	    {206, NULL, CURLE_RECV_ERROR, EIO, true},
	    {206, NULL, CURLE_OPERATION_TIMEDOUT, ETIMEDOUT, true},
	    /* an error status wins over a curl failure reading its body */
	    {404, "NoSuchKey", CURLE_PARTIAL_FILE, ENOENT, false},
	    {503, NULL, CURLE_RECV_ERROR, EIO, true},
	    /* the code wins over the status */
	    {400, "NoSuchBucket", 0, ENOENT, false},
	    {403, "SlowDown", 0, EIO, true},
	    /* unknown codes fall back to the status */
	    {403, "SomethingNew", 0, EACCES, false},
	    {500, "SomethingNew", 0, EIO, true},
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct classify_case *c = &cases[i];
		bool retryable = !c->retryable;
		int err =
		    s3_error_classify(c->status, c->code, c->curl, &retryable);

		if (err != c->err || retryable != c->retryable)
			fail_msg("case %zu (%ld %s %d): got %d/%d, want %d/%d",
				 i, c->status, c->code ? c->code : "NULL",
				 c->curl, err, retryable, c->err, c->retryable);
	}
	/* retryable may be NULL */
	assert_int_equal(s3_error_classify(503, NULL, 0, NULL), EIO);
}

/* ---- s3_error_describe ---- */

static void set_error(struct store_error *e, long status, const char *code,
		      int curl, const char *message, const char *url)
{
	memset(e, 0, sizeof(*e));
	e->http_status = status;
	s3_error_set_fault(e, curl);
	snprintf(e->code, sizeof(e->code), "%s", code);
	snprintf(e->message, sizeof(e->message), "%s", message);
	snprintf(e->url, sizeof(e->url), "%s", url);
	e->err = s3_error_classify(status, code, curl, NULL);
}

static void assert_describe(const struct store_error *e, const char *bucket,
			    const char *want)
{
	char out[1024];

	memset(out, 'x', sizeof(out));
	s3_error_describe(e, bucket, out, sizeof(out));
	assert_string_equal(out, want);
}

#define LIST_URL "http://127.0.0.1:9000/foo?list-type=2"

static void test_describe(void **state)
{
	struct store_error e;
	char want[512];

	set_error(&e, 404, "NoSuchBucket", 0,
		  "The specified bucket does not exist", LIST_URL);
	assert_describe(&e, "foo",
			"bucket 'foo' does not exist (NoSuchBucket at " LIST_URL
			")");

	set_error(&e, 403, "AccessDenied", 0, "Access Denied", LIST_URL);
	assert_describe(
	    &e, "foo",
	    "access denied to bucket 'foo' (AccessDenied at " LIST_URL
	    "): check the credentials and the bucket policy");

	set_error(&e, 403, "InvalidAccessKeyId", 0, "", LIST_URL);
	assert_describe(
	    &e, "foo",
	    "credentials rejected by the server (InvalidAccessKeyId "
	    "at " LIST_URL "): check AWS_ACCESS_KEY_ID or the profile");

	set_error(&e, 403, "SignatureDoesNotMatch", 0, "", LIST_URL);
	assert_describe(
	    &e, "foo",
	    "credentials rejected by the server (SignatureDoesNotMatch "
	    "at " LIST_URL "): check AWS_SECRET_ACCESS_KEY or the profile");

	set_error(&e, 400, "ExpiredToken", 0, "", LIST_URL);
	assert_describe(&e, "foo",
			"session token rejected by the server (ExpiredToken "
			"at " LIST_URL "): refresh the credentials");

	set_error(&e, 403, "RequestTimeTooSkewed", 0, "", LIST_URL);
	assert_describe(
	    &e, "foo",
	    "request time rejected by the server (RequestTimeTooSkewed "
	    "at " LIST_URL "): check the system clock");

	set_error(&e, 0, "", CURLE_COULDNT_CONNECT, "",
		  "http://127.0.0.1:1/foo?list-type=2");
	assert_describe(&e, "foo",
			"cannot reach endpoint http://127.0.0.1:1 (Couldn't "
			"connect to server)");

	set_error(&e, 412, "PreconditionFailed", 0, "",
		  "http://127.0.0.1:9000/foo/a.bin");
	assert_describe(&e, "foo",
			"object changed while reading (PreconditionFailed at "
			"http://127.0.0.1:9000/foo/a.bin)");

	set_error(&e, 500, "InternalError", 0,
		  "We encountered an internal error. Please try again.",
		  LIST_URL);
	assert_describe(
	    &e, "foo",
	    "request failed: HTTP 500 InternalError (We encountered "
	    "an internal error. Please try again.) at " LIST_URL);

	set_error(&e, 502, "", 0, "", LIST_URL);
	assert_describe(&e, "foo", "request failed: HTTP 502 at " LIST_URL);

	/* TLS: no user info or path in the endpoint */
	set_error(&e, 0, "", CURLE_PEER_FAILED_VERIFICATION, "",
		  "https://user:pw@s3.example.com:8443/foo?list-type=2");
	snprintf(want, sizeof(want),
		 "tls verification failed for https://s3.example.com:8443 "
		 "(%s): fix the CA bundle or pass --no-verify-ssl",
		 curl_easy_strerror(CURLE_PEER_FAILED_VERIFICATION));
	assert_describe(&e, "foo", want);

	/* curl's own error text is the better detail for TLS */
	set_error(&e, 0, "", CURLE_PEER_FAILED_VERIFICATION,
		  "SSL certificate problem: self-signed certificate",
		  "https://127.0.0.1:9443/foo?list-type=2");
	assert_describe(&e, "foo",
			"tls verification failed for https://127.0.0.1:9443 "
			"(SSL certificate problem: self-signed certificate): "
			"fix the CA bundle or pass --no-verify-ssl");

	/* ...but not for connection failures, which name the endpoint */
	set_error(&e, 0, "", CURLE_COULDNT_RESOLVE_HOST,
		  "Could not resolve host: nosuch.invalid",
		  "https://nosuch.invalid/foo?list-type=2");
	assert_describe(&e, "foo",
			"cannot reach endpoint https://nosuch.invalid "
			"(Couldn't resolve host name)");

	/* a 200 that is not a ListBucketResult */
	set_error(&e, 200, "", 0, "malformed ListObjectsV2 response", LIST_URL);
	e.err = EPROTO;
	assert_describe(&e, "foo",
			"unexpected response from endpoint "
			"http://127.0.0.1:9000 (HTTP 200 at " LIST_URL
			": malformed ListObjectsV2 response): check that it is "
			"an s3 server");

	/* a body that is no listing: from a virtual-hosted request, a
	 * server that wants the bucket in the path may have answered with
	 * its own page (Ceph's RGW) */
	set_error(&e, 200, "", 0, "malformed ListObjectsV2 response",
		  "http://foo.rgw.example.com:7480/?list-type=2");
	e.err = EPROTO;
	assert_describe(
	    &e, "foo",
	    "unexpected response from endpoint http://foo.rgw.example.com:7480 "
	    "(HTTP 200 at http://foo.rgw.example.com:7480/?list-type=2: "
	    "malformed ListObjectsV2 response): check that it is an s3 "
	    "server, and if it expects path-style requests, pass "
	    "--force-path-style");

	/* the engine's own failures (no status, no curl code) */
	set_error(&e, 0, "", 0, "shutting down", LIST_URL);
	e.err = ECANCELED;
	assert_describe(&e, "foo",
			"request failed (shutting down) at " LIST_URL);

	/* region mismatch */
	set_error(&e, 301, "PermanentRedirect", 0, "", LIST_URL);
	assert_describe(&e, "foo",
			"bucket 'foo' is in another region (PermanentRedirect "
			"at " LIST_URL "): pass its region with --region");

	/* the bucket name is optional; server messages stay on one line */
	set_error(&e, 403, "AccessDenied", 0, "", "");
	assert_describe(&e, NULL,
			"access denied to the bucket (AccessDenied): check the "
			"credentials and the bucket policy");
	set_error(&e, 400, "InvalidArgument", 0, "bad\r\nthing", LIST_URL);
	assert_describe(&e, "foo",
			"request failed: HTTP 400 InvalidArgument (bad  thing) "
			"at " LIST_URL);

	/* a short buffer still gets a terminated prefix */
	{
		char out[16];

		set_error(&e, 404, "NoSuchBucket", 0, "", LIST_URL);
		memset(out, 'x', sizeof(out));
		s3_error_describe(&e, "foo", out, sizeof(out));
		assert_string_equal(out, "bucket 'foo' do");
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_list_aws_documented),
	    cmocka_unit_test(test_list_aws_truncated),
	    cmocka_unit_test(test_list_s3rver_pages),
	    cmocka_unit_test(test_list_empty_result),
	    cmocka_unit_test(test_list_token_rules),
	    cmocka_unit_test(test_list_namespace_prefix),
	    cmocka_unit_test(test_list_url_encoded_keys),
	    cmocka_unit_test(test_list_key_entities),
	    cmocka_unit_test(test_list_etag_quotes),
	    cmocka_unit_test(test_list_sizes),
	    cmocka_unit_test(test_list_last_modified),
	    cmocka_unit_test(test_list_last_modified_objects),
	    cmocka_unit_test(test_list_bad_contents),
	    cmocka_unit_test(test_list_wrong_root),
	    cmocka_unit_test(test_list_not_xml),
	    cmocka_unit_test(test_list_truncated_document),
	    cmocka_unit_test(test_list_too_big),
	    cmocka_unit_test(test_list_billion_laughs),
	    cmocka_unit_test(test_list_external_entities),
	    cmocka_unit_test(test_list_nesting),
	    cmocka_unit_test(test_list_many_objects),
	    cmocka_unit_test(test_error_s3rver),
	    cmocka_unit_test(test_error_aws),
	    cmocka_unit_test(test_list_etag_controls),
	    cmocka_unit_test(test_error_missing_parts),
	    cmocka_unit_test(test_error_not_xml),
	    cmocka_unit_test(test_error_truncation),
	    cmocka_unit_test(test_classify_table),
	    cmocka_unit_test(test_describe),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
