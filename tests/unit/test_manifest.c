/*
 * test_manifest: ManifestFile and AugmentedManifestFile parsing
 * (channel/manifest.c): the entries built from valid manifests, and hostile
 * input, which must give EINVAL with a message naming where, and leave no
 * entries (run under valgrind for leaks).
 */
#include "config.h"

#include "channel/internal.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <cmocka.h>

static char err[512];

static void assert_one_line(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		assert_true(*p >= 0x20 && *p != 0x7f);
}

static void assert_contains(const char *s, const char *want)
{
	if (!strstr(s, want))
		fail_msg("'%s' does not contain '%s'", s, want);
}

/* Every handle a test makes, destroyed after it (forget_entries). */
static struct channel_entries **made;
static size_t nmade;

static struct channel_entries *entries(void)
{
	struct channel_entries *e = channel_entries_create();
	struct channel_entries **more = realloc(made, (nmade + 1) * sizeof(e));

	assert_non_null(e);
	assert_non_null(more);
	made = more;
	made[nmade++] = e;
	return e;
}

static int forget_entries(void **state)
{
	(void)state;
	while (nmade)
		channel_entries_destroy(made[--nmade]);
	free(made);
	made = NULL;
	return 0;
}

/* Nothing kept: no entry, and no more memory than a new handle's. */
static void assert_empty(const struct channel_entries *e)
{
	struct channel_entries *fresh = channel_entries_create();

	assert_non_null(fresh);
	assert_int_equal(channel_entries_count(e), 0);
	assert_int_equal(channel_entries_memory(e),
			 channel_entries_memory(fresh));
	channel_entries_destroy(fresh);
}

static struct channel_entry entry_at(const struct channel_entries *e, size_t i)
{
	struct channel_entry en;

	assert_true(i < channel_entries_count(e));
	channel_entries_get(e, i, &en);
	return en;
}

static struct channel_item item_at(const struct channel_entries *e, size_t i,
				   unsigned j)
{
	struct channel_entry en = entry_at(e, i);
	struct channel_item it;

	assert_true(j < en.nitems);
	for (unsigned k = 0; k <= j; k++)
		assert_true(channel_entry_next(&en, &it));
	return it;
}

static void assert_object(const struct channel_entries *e, size_t i, unsigned j,
			  const char *bucket, const char *key)
{
	struct channel_item it = item_at(e, i, j);
	char buf[1025];
	int error;

	assert_true(it.object);
	assert_null(it.text);
	assert_string_equal(channel_entries_bucket(e, it.ref), bucket);
	channel_entries_key(e, it.ref, buf, sizeof(buf));
	assert_string_equal(buf, key);
	/* nothing known of it before a HEAD */
	assert_int_equal(channel_entries_state(e, it.ref, &error),
			 CHANNEL_OBJECT_UNKNOWN);
}

static void assert_text(const struct channel_entries *e, size_t i, unsigned j,
			const char *want, size_t len)
{
	struct channel_item it = item_at(e, i, j);

	assert_false(it.object);
	assert_non_null(it.text);
	assert_int_equal(it.text_len, len);
	assert_memory_equal(it.text, want, len);
	assert_int_equal(it.text[len], '\0');
}

/* ---- ManifestFile ---- */

static int manifest(const char *text, struct channel_entries *e)
{
	channel_entries_clear(e);
	memset(err, 'x', sizeof(err));
	err[sizeof(err) - 1] = '\0';
	return channel_manifest_parse(text, strlen(text), e, err, sizeof(err));
}

/* text must be rejected with EINVAL and a message containing want */
static void manifest_bad(const char *text, size_t len, const char *want)
{
	struct channel_entries *e = entries();

	assert_int_equal(channel_manifest_parse(text, len, e, err, sizeof(err)),
			 EINVAL);
	assert_empty(e);
	assert_contains(err, want);
	assert_one_line(err);
}

static void test_manifest_keys(void **state)
{
	struct channel_entries *e = entries();

	assert_int_equal(manifest("[{\"prefix\": \"s3://my-bucket/train/\"},\n"
				  "  \"b.rec\", \"a.rec\", \"sub/c.rec\",\n"
				  "  \"a.rec\"]\n",
				  e),
			 0);
	assert_string_equal(err, "");
	assert_int_equal(channel_entries_count(e), 4);
	for (size_t i = 0; i < channel_entries_count(e); i++) {
		assert_int_equal(entry_at(e, i).nitems, 1);
		assert_int_equal(entry_at(e, i).line, 0);
		assert_null(entry_at(e, i).error);
	}
	/* manifest order, duplicates kept */
	assert_object(e, 0, 0, "my-bucket", "train/b.rec");
	assert_object(e, 1, 0, "my-bucket", "train/a.rec");
	assert_object(e, 2, 0, "my-bucket", "train/sub/c.rec");
	assert_object(e, 3, 0, "my-bucket", "train/a.rec");
	channel_entries_clear(e);
	assert_empty(e);
}

static void test_manifest_prefix_forms(void **state)
{
	struct channel_entries *e = entries();

	/* no trailing slash: keys are plain concatenation */
	assert_int_equal(
	    manifest("[{\"prefix\":\"s3://bkt/data-\"},\"1\",\"2\"]", e), 0);
	assert_int_equal(channel_entries_count(e), 2);
	assert_object(e, 0, 0, "bkt", "data-1");
	assert_object(e, 1, 0, "bkt", "data-2");
	channel_entries_clear(e);

	/* a bucket alone; other fields of the prefix object ignored */
	assert_int_equal(
	    manifest("[{\"x\":1,\"prefix\":\"s3://bkt\"},\"k\"]", e), 0);
	assert_int_equal(channel_entries_count(e), 1);
	assert_object(e, 0, 0, "bkt", "k");
	channel_entries_clear(e);

	/* UTF-8 keys and escapes are kept byte for byte */
	assert_int_equal(
	    manifest("[{\"prefix\":\"s3://bkt/p/\"},"
		     "\"caf\\u00e9 \\\"x\\\"\",\"\xc3\xa9t\xc3\xa9\"]",
		     e),
	    0);
	assert_int_equal(channel_entries_count(e), 2);
	assert_object(e, 0, 0, "bkt", "p/caf\xc3\xa9 \"x\"");
	assert_object(e, 1, 0, "bkt", "p/\xc3\xa9t\xc3\xa9");
	channel_entries_clear(e);

	/* a UTF-8 byte order mark is skipped */
	assert_int_equal(
	    manifest("\xef\xbb\xbf[{\"prefix\":\"s3://bkt/\"},\"k\"]", e), 0);
	assert_int_equal(channel_entries_count(e), 1);
	channel_entries_clear(e);
}

/* The entries live in the prefix's bucket, whichever bucket holds the
 * manifest itself. */
static void test_manifest_other_bucket(void **state)
{
	struct channel_entries *e = entries();

	assert_int_equal(
	    manifest("[{\"prefix\":\"s3://other.bucket-2/x/\"},\"y\"]", e), 0);
	assert_int_equal(channel_entries_count(e), 1);
	assert_object(e, 0, 0, "other.bucket-2", "x/y");
	channel_entries_clear(e);
}

static void test_manifest_empty(void **state)
{
	struct channel_entries *e = entries();

	assert_int_equal(manifest("[{\"prefix\":\"s3://bkt/p/\"}]", e), 0);
	assert_int_equal(channel_entries_count(e), 0);
	channel_entries_clear(e);
}

/* Many keys: the array grows past its first capacity. */
static void test_manifest_many(void **state)
{
	struct channel_entries *e = entries();
	size_t cap = 64 + 10000 * 16;
	char *text = malloc(cap);
	size_t len;
	char key[32];

	assert_non_null(text);
	len = (size_t)snprintf(text, cap, "[{\"prefix\":\"s3://bkt/\"}");
	for (int i = 0; i < 10000; i++)
		len += (size_t)snprintf(text + len, cap - len, ",\"%d\"", i);
	len += (size_t)snprintf(text + len, cap - len, "]");
	assert_int_equal(channel_manifest_parse(text, len, e, err, sizeof(err)),
			 0);
	assert_int_equal(channel_entries_count(e), 10000);
	/* a ManifestFile's entries are its catalog's, as for a listed
	 * prefix: 37 bytes an entry, the key (here 2-5 bytes), a byte of
	 * state, and the tables' room to grow (46 bytes an entry here,
	 * against 300 when every entry was allocations of its own) */
	assert_true(channel_entries_memory(e) < 10000 * 50);
	for (int i = 0; i < 10000; i++) {
		snprintf(key, sizeof(key), "%d", i);
		assert_object(e, (size_t)i, 0, "bkt", key);
	}
	channel_entries_clear(e);
	free(text);
}

/* An object's state, as the channel keeps it while HEADs go: unknown,
 * resolving, known or failed with its errno (one byte: errnos past it
 * are EIO). */
static void test_entries_state(void **state)
{
	struct channel_entries *e = entries();
	struct channel_item a, b;
	int error;

	(void)state;
	assert_int_equal(
	    manifest("[{\"prefix\":\"s3://bkt/p/\"},\"a\",\"b\"]", e), 0);
	a = item_at(e, 0, 0);
	b = item_at(e, 1, 0);
	assert_true(a.ref != b.ref);
	assert_string_equal(channel_entries_prefix(e, a.ref), "p/");
	channel_entries_set_state(e, a.ref, CHANNEL_OBJECT_RESOLVING, 0);
	assert_int_equal(channel_entries_state(e, a.ref, &error),
			 CHANNEL_OBJECT_RESOLVING);
	assert_int_equal(channel_entries_state(e, b.ref, &error),
			 CHANNEL_OBJECT_UNKNOWN);
	channel_entries_set_state(e, a.ref, CHANNEL_OBJECT_FAILED, ENOENT);
	assert_int_equal(channel_entries_state(e, a.ref, &error),
			 CHANNEL_OBJECT_FAILED);
	assert_int_equal(error, ENOENT);
	channel_entries_set_state(e, b.ref, CHANNEL_OBJECT_FAILED, 100000);
	assert_int_equal(channel_entries_state(e, b.ref, &error),
			 CHANNEL_OBJECT_FAILED);
	assert_int_equal(error, EIO);
	channel_entries_set_state(e, b.ref, CHANNEL_OBJECT_KNOWN, 0);
	assert_int_equal(channel_entries_state(e, b.ref, &error),
			 CHANNEL_OBJECT_KNOWN);
	assert_int_equal(error, 0);
	/* an entry of no item, with an error, after the identity: the
	 * identity's entries are written out, then it */
	assert_int_equal(channel_entries_begin(e, 9), 0);
	channel_entries_fail(e, "line %d: nothing", 9);
	assert_true(channel_entries_failed(e));
	assert_int_equal(channel_entries_end(e), 0);
	assert_int_equal(channel_entries_count(e), 3);
	/* written out, b keeps its ref (and so its state) */
	assert_true(item_at(e, 1, 0).ref == b.ref);
	assert_int_equal(entry_at(e, 2).nitems, 0);
	assert_int_equal(entry_at(e, 2).line, 9);
	assert_string_equal(entry_at(e, 2).error, "line 9: nothing");
}

/* Entries already in out stay; on error everything is freed. */
static void test_manifest_appends(void **state)
{
	struct channel_entries *e = entries();
	const char *t1 = "[{\"prefix\":\"s3://bkt/a/\"},\"1\"]";
	const char *t2 = "[{\"prefix\":\"s3://bkt/b/\"},\"2\",\"3\"]";
	const char *bad = "[{\"prefix\":\"s3://bkt/b/\"},\"2\",3]";

	assert_int_equal(
	    channel_manifest_parse(t1, strlen(t1), e, err, sizeof(err)), 0);
	assert_int_equal(
	    channel_manifest_parse(t2, strlen(t2), e, err, sizeof(err)), 0);
	assert_int_equal(channel_entries_count(e), 3);
	assert_object(e, 0, 0, "bkt", "a/1");
	assert_object(e, 2, 0, "bkt", "b/3");
	assert_int_equal(
	    channel_manifest_parse(bad, strlen(bad), e, err, sizeof(err)),
	    EINVAL);
	assert_empty(e);
}

/* a string literal, embedded NULs and all */
#define MANIFEST_BAD(lit, want) manifest_bad(lit, sizeof(lit) - 1, want)

static void test_manifest_not_json(void **state)
{
	char deep[5000];

	MANIFEST_BAD("", "manifest is not valid JSON");
	MANIFEST_BAD("   \n", "manifest is not valid JSON");
	MANIFEST_BAD("s3://bkt/key", "manifest is not valid JSON");
	MANIFEST_BAD("[{\"prefix\":\"s3://bkt/\"},\"a\"",
		     "manifest is not valid JSON");
	MANIFEST_BAD("[{\"prefix\":\"s3://bkt/\"},\"a\"] x",
		     "manifest is not valid JSON");
	/* where: jansson's line and column */
	MANIFEST_BAD("[{\"prefix\":\"s3://bkt/\"},\n\"a\",\n\"b\" \"c\"]",
		     "(line 3, column");
	/* a NUL byte in the text */
	MANIFEST_BAD("[{\"prefix\":\"s3://bkt/\"},\"a\0\"]",
		     "manifest is not valid JSON");
	MANIFEST_BAD("[{\"prefix\":\"s3://bkt/\"},\"a\"]\0",
		     "manifest is not valid JSON");
	/* nesting deeper than jansson's bound */
	memset(deep, '[', sizeof(deep));
	manifest_bad(deep, sizeof(deep), "manifest is not valid JSON");
}

static void test_manifest_not_array(void **state)
{
	MANIFEST_BAD("{\"prefix\":\"s3://bkt/\"}",
		     "manifest is not a JSON array");
	MANIFEST_BAD("\"s3://bkt/\"", "manifest is not a JSON array");
	MANIFEST_BAD("42", "manifest is not a JSON array");
	MANIFEST_BAD("null", "manifest is not a JSON array");
}

static void test_manifest_bad_prefix(void **state)
{
	const char *t;

	MANIFEST_BAD("[]", "manifest is an empty array");
	t = "[\"s3://bkt/\",\"a\"]";
	manifest_bad(t, strlen(t), "manifest element 0 is not an object");
	t = "[[{\"prefix\":\"s3://bkt/\"}],\"a\"]";
	manifest_bad(t, strlen(t), "manifest element 0 is not an object");
	t = "[{},\"a\"]";
	manifest_bad(t, strlen(t), "manifest element 0 has no \"prefix\"");
	t = "[{\"Prefix\":\"s3://bkt/\"},\"a\"]";
	manifest_bad(t, strlen(t), "manifest element 0 has no \"prefix\"");
	t = "[{\"prefix\":42},\"a\"]";
	manifest_bad(t, strlen(t), "manifest element 0 has no \"prefix\"");
	t = "[{\"prefix\":null},\"a\"]";
	manifest_bad(t, strlen(t), "manifest element 0 has no \"prefix\"");
	t = "[{\"prefix\":\"http://bkt/p/\"},\"a\"]";
	manifest_bad(t, strlen(t), "manifest element 0: malformed uri");
	t = "[{\"prefix\":\"s3:///p/\"},\"a\"]";
	manifest_bad(t, strlen(t), "manifest element 0: malformed uri");
	t = "[{\"prefix\":\"s3://Bad_Bucket/p/\"},\"a\"]";
	manifest_bad(t, strlen(t), "manifest element 0: invalid bucket name");
	t = "[{\"prefix\":\"\"}]";
	manifest_bad(t, strlen(t), "manifest element 0: malformed uri");
	/* a control character in the prefix does not reach the message */
	t = "[{\"prefix\":\"x\\n\\u001b[31m\"},\"a\"]";
	manifest_bad(t, strlen(t),
		     "manifest element 0: malformed uri 'x??[31m'");
	t = "[{\"prefix\":\"s3://bkt/a\\u0000b\"},\"a\"]";
	manifest_bad(t, strlen(t),
		     "manifest element 0: the prefix contains a NUL");
}

static void test_manifest_bad_elements(void **state)
{
	const char *t;

	t = "[{\"prefix\":\"s3://bkt/\"},\"a\",\"b\",3,\"c\"]";
	manifest_bad(t, strlen(t), "manifest element 3 is not a string");
	t = "[{\"prefix\":\"s3://bkt/\"},null]";
	manifest_bad(t, strlen(t), "manifest element 1 is not a string");
	t = "[{\"prefix\":\"s3://bkt/\"},\"a\",[\"b\"]]";
	manifest_bad(t, strlen(t), "manifest element 2 is not a string");
	t = "[{\"prefix\":\"s3://bkt/\"},\"a\",{\"k\":\"b\"}]";
	manifest_bad(t, strlen(t), "manifest element 2 is not a string");
	t = "[{\"prefix\":\"s3://bkt/\"},\"a\",{\"prefix\":\"s3://bkt/\"}]";
	manifest_bad(t, strlen(t), "manifest element 2 is not a string");
	t = "[{\"prefix\":\"s3://bkt/\"},\"a\",\"\"]";
	manifest_bad(t, strlen(t), "manifest element 2 is an empty string");
	t = "[{\"prefix\":\"s3://bkt/\"},\"a\\u0000b\"]";
	manifest_bad(t, strlen(t), "manifest element 1 contains a NUL");
}

/* S3 keys are at most 1024 bytes: prefix and element together. */
static void test_manifest_key_length(void **state)
{
	struct channel_entries *e = entries();
	char text[2200];
	char p[601], k[500];

	memset(p, 'p', 600);
	p[600] = '\0';
	memset(k, 'k', 424);
	k[424] = '\0';
	/* 600 + 424 = 1024: allowed */
	snprintf(text, sizeof(text), "[{\"prefix\":\"s3://bkt/%s\"},\"%s\"]", p,
		 k);
	assert_int_equal(manifest(text, e), 0);
	assert_int_equal(channel_entries_count(e), 1);
	{
		struct channel_item it = item_at(e, 0, 0);
		char buf[1025];

		channel_entries_key(e, it.ref, buf, sizeof(buf));
		assert_int_equal(strlen(buf), 1024);
	}
	channel_entries_clear(e);
	/* 1025: not */
	snprintf(text, sizeof(text),
		 "[{\"prefix\":\"s3://bkt/%s\"},\"a\",\"%sk\"]", p, k);
	manifest_bad(text, strlen(text),
		     "manifest element 2: the prefix and "
		     "the key are longer than S3 keys "
		     "may be (1024 bytes)");
	/* a prefix that leaves no room for any key */
	{
		char big[1100];

		memset(big, 'p', 1024);
		big[1024] = '\0';
		snprintf(text, sizeof(text), "[{\"prefix\":\"s3://bkt/%s\"}]",
			 big);
		manifest_bad(text, strlen(text),
			     "manifest element 0: the prefix is longer");
	}
}

static void test_manifest_bad_utf8(void **state)
{
	const char *t = "[{\"prefix\":\"s3://bkt/\"},\"a\xff\xfe\"]";

	manifest_bad(t, strlen(t), "manifest is not valid UTF-8");
	manifest_bad(t, strlen(t), "line 1");
	/* an overlong encoding of '/' and a lone continuation byte */
	t = "[{\"prefix\":\"s3://bkt/\"},\"\xc0\xaf\"]";
	manifest_bad(t, strlen(t), "manifest is not valid UTF-8");
	t = "[{\"prefix\":\"s3://bkt/\"},\n\"\x80\"]";
	manifest_bad(t, strlen(t), "manifest is not valid UTF-8 (line 2");
	/* outside strings too */
	t = "[{\"prefix\":\"s3://bkt/\"},\xff\"a\"]";
	manifest_bad(t, strlen(t), "manifest is not valid UTF-8");
}

static void test_manifest_duplicate_keys(void **state)
{
	const char *t =
	    "[{\"prefix\":\"s3://bkt/a/\",\"prefix\":\"s3://bkt/b/\"},"
	    "\"k\"]";

	manifest_bad(t, strlen(t), "manifest is not valid JSON");
	manifest_bad(t, strlen(t), "duplicate");
}

/*
 * Past CHANNEL_MANIFEST_MAX the text is refused before it is read: the
 * "text" is address space that cannot be read, so an implementation that
 * looked at it would crash here.
 */
static void test_manifest_too_large(void **state)
{
	size_t len = (size_t)CHANNEL_MANIFEST_MAX + 1;
	struct channel_entries *e = entries();
	char *attrs[] = {"source-ref"};
	void *p;

	p = mmap(NULL, len, PROT_NONE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	assert_true(p != MAP_FAILED);
	assert_int_equal(channel_manifest_parse(p, len, e, err, sizeof(err)),
			 EINVAL);
	assert_empty(e);
	assert_string_equal(err, "manifest is larger than 1073741824 bytes");
	assert_int_equal(
	    channel_augmented_parse(p, len, attrs, 1, e, err, sizeof(err)),
	    EINVAL);
	assert_empty(e);
	assert_string_equal(
	    err, "augmented manifest is larger than 1073741824 bytes");
	munmap(p, len);
}

static void test_manifest_small_err(void **state)
{
	struct channel_entries *e = entries();
	char small[8];

	assert_int_equal(
	    channel_manifest_parse("[1]", 3, e, small, sizeof(small)), EINVAL);
	assert_string_equal(small, "mani\xe2\x80\xa6"); /* "mani…" */
	assert_int_equal(channel_manifest_parse("[1]", 3, e, NULL, 0), EINVAL);
	assert_empty(e);
}

/* ---- AugmentedManifestFile ---- */

static char *const attrs2[] = {"source-ref", "label"};

static int augmented(const char *text, size_t len, char *const *attributes,
		     size_t n, struct channel_entries *e)
{
	channel_entries_clear(e);
	memset(err, 'x', sizeof(err));
	err[sizeof(err) - 1] = '\0';
	return channel_augmented_parse(text, len, attributes, n, e, err,
				       sizeof(err));
}

static void augmented_bad(const char *text, size_t len, const char *want)
{
	struct channel_entries *e = entries();

	assert_int_equal(augmented(text, len, attrs2, 2, e), EINVAL);
	assert_empty(e);
	assert_contains(err, want);
	assert_one_line(err);
}

static void test_augmented_values(void **state)
{
	const char *t =
	    "{\"source-ref\":\"s3://bkt/img/1.jpg\",\"label\":\"cat\"}\n"
	    "{\"label\": 3, \"source-ref\": \"s3://other-bkt/2.jpg\"}\n"
	    "{\"source-ref\":\"s3://bkt/3.jpg\",\"label\":{\"b\": [1, 2.5, "
	    "null], \"a\": \"x\\u00e9\"},\"extra\":true}\n"
	    "{\"source-ref\":\"s3://bkt/4.jpg\",\"label\":[true, false]}\n"
	    "{\"source-ref\":\"s3://bkt/5.jpg\",\"label\":\"a\\nb\\u0000c\"}\n"
	    "{\"source-ref\":\"s3://bkt/6.jpg\",\"label\":\"\"}\n"
	    "{\"source-ref\":\"s3://bkt/7.jpg\",\"label\":-17}\n";
	struct channel_entries *e = entries();

	assert_int_equal(augmented(t, strlen(t), attrs2, 2, e), 0);
	assert_string_equal(err, "");
	assert_int_equal(channel_entries_count(e), 7);
	for (size_t i = 0; i < channel_entries_count(e); i++) {
		assert_int_equal(entry_at(e, i).line, i + 1);
		assert_int_equal(entry_at(e, i).nitems, 2);
		assert_null(entry_at(e, i).error);
	}
	assert_object(e, 0, 0, "bkt", "img/1.jpg");
	assert_text(e, 0, 1, "cat", 3);
	assert_object(e, 1, 0, "other-bkt", "2.jpg");
	assert_text(e, 1, 1, "3", 1);
	/* the value's text as written: spacing and escapes kept */
	assert_text(e, 2, 1, "{\"b\": [1, 2.5, null], \"a\": \"x\\u00e9\"}",
		    37);
	assert_text(e, 3, 1, "[true, false]", 13);
	/* a string's bytes, escapes decoded, an embedded NUL kept */
	assert_text(e, 4, 1, "a\nb\0c", 5);
	assert_text(e, 5, 1, "", 0);
	assert_text(e, 6, 1, "-17", 3);
	channel_entries_clear(e);
}

/* line holds attribute "label", whose value's text must be want */
static void augmented_text(const char *line, const char *want)
{
	char *const attrs[] = {"label"};
	struct channel_entries *e = entries();

	if (augmented(line, strlen(line), attrs, 1, e))
		fail_msg("%s: %s", line, err);
	assert_string_equal(err, "");
	assert_int_equal(channel_entries_count(e), 1);
	assert_null(entry_at(e, 0).error);
	assert_text(e, 0, 0, want, strlen(want));
	channel_entries_clear(e);
}

/* A value that is not a string streams as its text in the line, not as
 * jansson would write it again. */
static void test_augmented_source_text(void **state)
{
	/* numbers: no rounding, no normal form */
	augmented_text("{\"label\": 2.50}", "2.50");
	augmented_text("{\"label\":0.1}", "0.1");
	augmented_text("{\"label\":-0.0}", "-0.0");
	augmented_text("{\"label\":1E+3}", "1E+3");
	augmented_text("{\"label\":1e3 }", "1e3");
	augmented_text("{\"label\":0.30000000000000000000001}",
		       "0.30000000000000000000001");
	augmented_text("{\"label\":10}", "10");
	/* literals */
	augmented_text("{\"label\":true}", "true");
	augmented_text("{\"label\":false,\"x\":1}", "false");
	augmented_text("{\"label\": null }", "null");
	/* objects and arrays verbatim, inner whitespace and escapes too */
	augmented_text("{\"label\": {\"a\": [1, 2.0], \"b\": \"x\\\"y\"} }",
		       "{\"a\": [1, 2.0], \"b\": \"x\\\"y\"}");
	augmented_text("{\"label\":[ ]}", "[ ]");
	augmented_text("{\"label\":{}}", "{}");
	augmented_text("{\"label\":[[1,[2]],{\"a\":{\"b\":[]}}],\"z\":[3]}",
		       "[[1,[2]],{\"a\":{\"b\":[]}}]");
	/* brackets and quotes inside strings do not count */
	augmented_text("{\"label\":[\"]}\",\"\\\\\",\"{[\\\"\"],\"z\":0}",
		       "[\"]}\",\"\\\\\",\"{[\\\"\"]");
	/* after a key with escaped quotes and braces, and after values
	 * holding them */
	augmented_text("{\"k\\\"}{[,:\": \"a\\\"},\", \"label\": 0.10}",
		       "0.10");
	augmented_text("{\"m\":{\"s\":\"}\\\"{\",\"t\":[{\"u\":\"]\"}]},"
		       "\"n\":[\"[\",{}],\"label\":7.0}",
		       "7.0");
	/* whitespace of every kind around members */
	augmented_text("  { \"a\" : 1 ,\t\"label\"\t:\r\t1.0\r }\t", "1.0");
	/* keys are matched by jansson's decoding, not their spelling */
	augmented_text("{\"\\u006cabel\": 2.50}", "2.50");
	augmented_text("{\"labe\":2,\"labe\\u006c\":[1.50],\"label \":3}",
		       "[1.50]");
	augmented_text("{\"x\\u0022\\\\\":1,\"\\u006c\\u0061bel\":-1.5e-7}",
		       "-1.5e-7");
	/* strings are still their contents */
	augmented_text("{\"label\":\"2.50\"}", "2.50");
	augmented_text("{\"label\":\"a\\\"b\"}", "a\"b");
}

/* jansson drops one NUL byte after a number or a literal; the values
 * around it are still found, without it. */
static void test_augmented_source_text_nul(void **state)
{
	char *const attrs[] = {"x", "label", "y"};
	static const char t[] = "{\"x\":1\0,\"label\":true\0 ,\"y\":2.50\0}";
	struct channel_entries *e = entries();

	assert_int_equal(augmented(t, sizeof(t) - 1, attrs, 3, e), 0);
	assert_int_equal(channel_entries_count(e), 1);
	assert_null(entry_at(e, 0).error);
	assert_text(e, 0, 0, "1", 1);
	assert_text(e, 0, 1, "true", 4);
	assert_text(e, 0, 2, "2.50", 4);
	channel_entries_clear(e);
}

/* Attributes in an order other than the line's: each finds its own
 * member's text. */
static void test_augmented_source_text_order(void **state)
{
	char *const attrs[] = {"c", "a-ref", "b", "d", "a"};
	const char *t = "{\"a\":1.0,\"b\":[2 ,3],\"a-ref\":\"s3://bkt/k\","
			"\"c\":{\"x\":3.10},\"d\":\"s\"}\n"
			"{\"d\":\"t\",\"c\":null,\"b\":2e0,\"a\":-0,"
			"\"a-ref\":\"s3://bkt/j\"}\n";
	struct channel_entries *e = entries();

	assert_int_equal(augmented(t, strlen(t), attrs, 5, e), 0);
	assert_int_equal(channel_entries_count(e), 2);
	assert_null(entry_at(e, 0).error);
	assert_text(e, 0, 0, "{\"x\":3.10}", 10);
	assert_object(e, 0, 1, "bkt", "k");
	assert_text(e, 0, 2, "[2 ,3]", 6);
	assert_text(e, 0, 3, "s", 1);
	assert_text(e, 0, 4, "1.0", 3);
	assert_null(entry_at(e, 1).error);
	assert_text(e, 1, 0, "null", 4);
	assert_object(e, 1, 1, "bkt", "j");
	assert_text(e, 1, 2, "2e0", 3);
	assert_text(e, 1, 3, "t", 1);
	assert_text(e, 1, 4, "-0", 2);
	channel_entries_clear(e);
}

/* Items follow AttributeNames, not the line's key order. */
static void test_augmented_attribute_order(void **state)
{
	char *const attrs[] = {"label", "meta", "source-ref", "mask-ref"};
	const char *t = "{\"mask-ref\":\"s3://bkt/m.png\",\"source-ref\":"
			"\"s3://bkt/i.png\",\"meta\":{\"w\":2},\"label\":7}";
	struct channel_entries *e = entries();

	assert_int_equal(augmented(t, strlen(t), attrs, 4, e), 0);
	assert_int_equal(channel_entries_count(e), 1);
	assert_int_equal(entry_at(e, 0).nitems, 4);
	assert_null(entry_at(e, 0).error);
	assert_text(e, 0, 0, "7", 1);
	assert_text(e, 0, 1, "{\"w\":2}", 7);
	assert_object(e, 0, 2, "bkt", "i.png");
	assert_object(e, 0, 3, "bkt", "m.png");
	channel_entries_clear(e);
}

static void test_augmented_missing(void **state)
{
	const char *t = "{\"source-ref\":\"s3://bkt/1\",\"label\":1}\n"
			"{\"source-ref\":\"s3://bkt/2\"}\n"
			"{\"label\":3}\n"
			"{}\n"
			"{\"source-ref\":\"s3://bkt/5\",\"label\":5}";
	struct channel_entries *e = entries();

	assert_int_equal(augmented(t, strlen(t), attrs2, 2, e), 0);
	assert_int_equal(channel_entries_count(e), 5);
	assert_null(entry_at(e, 0).error);
	assert_string_equal(entry_at(e, 1).error,
			    "augmented manifest line 2: attribute 'label' is "
			    "missing");
	assert_int_equal(entry_at(e, 1).line, 2);
	assert_object(e, 1, 0, "bkt", "2");
	assert_string_equal(entry_at(e, 2).error,
			    "augmented manifest line 3: attribute 'source-ref' "
			    "is missing");
	assert_text(e, 2, 1, "3", 1);
	/* the first problem only */
	assert_string_equal(entry_at(e, 3).error,
			    "augmented manifest line 4: attribute 'source-ref' "
			    "is missing");
	/* every entry keeps one item per attribute */
	for (size_t i = 0; i < channel_entries_count(e); i++)
		assert_int_equal(entry_at(e, i).nitems, 2);
	/* the other lines intact */
	assert_null(entry_at(e, 4).error);
	assert_int_equal(entry_at(e, 4).line, 5);
	assert_object(e, 4, 0, "bkt", "5");
	assert_text(e, 4, 1, "5", 1);
	channel_entries_clear(e);
}

static void test_augmented_bad_ref(void **state)
{
	const char *t = "{\"source-ref\":42,\"label\":1}\n"
			"{\"source-ref\":\"https://bkt/x\",\"label\":1}\n"
			"{\"source-ref\":\"s3://bkt\",\"label\":1}\n"
			"{\"source-ref\":\"s3://bkt/\",\"label\":1}\n"
			"{\"source-ref\":{\"s3\":\"s3://bkt/x\"},\"label\":1}\n"
			"{\"source-ref\":\"s3://BKT/x\",\"label\":1}\n"
			"{\"source-ref\":\"s3://bkt/a\\u0000b\",\"label\":1}\n"
			"{\"source-ref\":\"s3://bkt/ok\",\"label\":1}\n"
			"{\"source-ref\":\"x\\u001b]0;\",\"label\":1}\n";
	struct channel_entries *e = entries();

	assert_int_equal(augmented(t, strlen(t), attrs2, 2, e), 0);
	assert_int_equal(channel_entries_count(e), 9);
	assert_string_equal(entry_at(e, 0).error,
			    "augmented manifest line 1: attribute 'source-ref' "
			    "is not a string (expected an s3:// URI)");
	assert_contains(entry_at(e, 1).error,
			"augmented manifest line 2: attribute 'source-ref': "
			"malformed uri 'https://bkt/x'");
	assert_contains(entry_at(e, 2).error,
			"augmented manifest line 3: attribute 'source-ref' "
			"names no object");
	assert_contains(entry_at(e, 3).error,
			"augmented manifest line 4: attribute 'source-ref' "
			"names no object");
	assert_contains(entry_at(e, 4).error,
			"augmented manifest line 5: attribute 'source-ref' "
			"is not a string");
	assert_contains(entry_at(e, 5).error,
			"augmented manifest line 6: attribute 'source-ref': "
			"invalid bucket name");
	assert_contains(entry_at(e, 6).error,
			"augmented manifest line 7: attribute 'source-ref' "
			"contains a NUL");
	assert_null(entry_at(e, 7).error);
	assert_object(e, 7, 0, "bkt", "ok");
	assert_contains(entry_at(e, 8).error, "malformed uri 'x?]0;'");
	for (size_t i = 0; i < channel_entries_count(e); i++) {
		assert_int_equal(entry_at(e, i).nitems, 2);
		assert_text(e, i, 1, "1", 1);
		if (entry_at(e, i).error)
			assert_one_line(entry_at(e, i).error);
	}
	channel_entries_clear(e);
}

/* A name not ending in -ref is literal even when it holds a URI. */
static void test_augmented_ref_suffix(void **state)
{
	char *const attrs[] = {"uri", "x-ref", "-ref"};
	const char *t = "{\"uri\":\"s3://bkt/a\",\"x-ref\":\"s3://bkt/b\","
			"\"-ref\":\"s3://bkt/c\"}";
	struct channel_entries *e = entries();

	assert_int_equal(augmented(t, strlen(t), attrs, 3, e), 0);
	assert_int_equal(channel_entries_count(e), 1);
	assert_text(e, 0, 0, "s3://bkt/a", 10);
	assert_object(e, 0, 1, "bkt", "b");
	assert_object(e, 0, 2, "bkt", "c");
	channel_entries_clear(e);
}

static void test_augmented_not_object(void **state)
{
	const char *t;

	t = "{\"source-ref\":\"s3://bkt/1\",\"label\":1}\n"
	    "[\"s3://bkt/2\"]\n";
	augmented_bad(t, strlen(t),
		      "augmented manifest line 2 is not a JSON "
		      "object");
	t = "\"s3://bkt/1\"\n";
	augmented_bad(t, strlen(t),
		      "augmented manifest line 1 is not a JSON "
		      "object");
	t = "{\"source-ref\":\"s3://bkt/1\",\"label\":1}\n\n\n42\n";
	augmented_bad(t, strlen(t),
		      "augmented manifest line 4 is not a JSON "
		      "object");
	t = "{\"source-ref\":\"s3://bkt/1\",\"label\":1}\nnull";
	augmented_bad(t, strlen(t),
		      "augmented manifest line 2 is not a JSON "
		      "object");
	/* not JSON at all, a line cut short, two objects on one line */
	t = "{\"source-ref\":\"s3://bkt/1\",\"label\":1}\nlabel=1\n";
	augmented_bad(t, strlen(t),
		      "augmented manifest line 2 is not valid "
		      "JSON");
	t = "{\"source-ref\":\"s3://bkt/1\",\n\"label\":1}\n";
	augmented_bad(t, strlen(t),
		      "augmented manifest line 1 is not valid "
		      "JSON");
	t = "{\"label\":1} {\"label\":2}\n";
	augmented_bad(t, strlen(t),
		      "augmented manifest line 1 is not valid "
		      "JSON");
	/* duplicate keys */
	t = "\n{\"label\":1,\"label\":2}\n";
	augmented_bad(t, strlen(t),
		      "augmented manifest line 2 is not valid "
		      "JSON");
	augmented_bad(t, strlen(t), "duplicate");
}

static void test_augmented_bad_utf8(void **state)
{
	const char *t = "{\"source-ref\":\"s3://bkt/1\",\"label\":1}\n"
			"\n"
			"{\"source-ref\":\"s3://bkt/2\",\"label\":\"\xff\"}\n";

	augmented_bad(t, strlen(t),
		      "augmented manifest line 3 is not valid "
		      "UTF-8");
	t = "{\"source-ref\":\"s3://bkt/\xc3\",\"label\":1}";
	augmented_bad(t, strlen(t),
		      "augmented manifest line 1 is not valid "
		      "UTF-8");
}

static void test_augmented_long_line(void **state)
{
	const size_t max = CHANNEL_MANIFEST_LINE_MAX;
	const char *head = "{\"source-ref\":\"s3://bkt/1\",\"label\":\"";
	struct channel_entries *e = entries();
	size_t hlen = strlen(head);
	char *t = malloc(2 * max + 100);
	size_t len;

	assert_non_null(t);
	/* line 1 short, line 2 exactly max bytes (then \r\n): accepted */
	len = (size_t)snprintf(t, 100,
			       "{\"label\":1,\"source-ref\":\"s3://"
			       "bkt/0\"}\n");
	memcpy(t + len, head, hlen);
	memset(t + len + hlen, 'a', max - hlen - 2);
	memcpy(t + len + max - 2, "\"}\r\n", 4);
	len += max + 2;
	assert_int_equal(augmented(t, len, attrs2, 2, e), 0);
	assert_int_equal(channel_entries_count(e), 2);
	assert_int_equal(item_at(e, 1, 1).text_len, max - hlen - 2);
	channel_entries_clear(e);
	/* one byte more: refused, naming line 2 */
	memcpy(t + len - 4, "a\"}\n", 4);
	memcpy(t + len, "\n", 1);
	len += 1;
	assert_int_equal(augmented(t, len, attrs2, 2, e), EINVAL);
	assert_empty(e);
	assert_string_equal(err, "augmented manifest line 2 is longer than "
				 "1048576 bytes");
	/* long without a newline, at the end */
	memset(t, ' ', max + 1);
	assert_int_equal(augmented(t, max + 1, attrs2, 2, e), EINVAL);
	assert_string_equal(err, "augmented manifest line 1 is longer than "
				 "1048576 bytes");
	free(t);
}

static void test_augmented_blank_lines(void **state)
{
	const char *t = "\n"
			"   \t\n"
			"{\"source-ref\":\"s3://bkt/3\",\"label\":3}\n"
			"\r\n"
			"\n"
			"  {\"source-ref\":\"s3://bkt/6\"}  \n"
			"\n";
	struct channel_entries *e = entries();

	assert_int_equal(augmented(t, strlen(t), attrs2, 2, e), 0);
	assert_int_equal(channel_entries_count(e), 2);
	assert_int_equal(entry_at(e, 0).line, 3);
	assert_null(entry_at(e, 0).error);
	assert_int_equal(entry_at(e, 1).line, 6);
	assert_string_equal(entry_at(e, 1).error,
			    "augmented manifest line 6: attribute 'label' is "
			    "missing");
	channel_entries_clear(e);

	/* nothing but blank lines, and nothing at all */
	assert_int_equal(augmented("\n \n\r\n", 5, attrs2, 2, e), 0);
	assert_empty(e);
	assert_int_equal(augmented("", 0, attrs2, 2, e), 0);
	assert_empty(e);
}

static void test_augmented_crlf_and_last_line(void **state)
{
	const char *t = "{\"source-ref\":\"s3://bkt/1\",\"label\":\"a\"}\r\n"
			"\r\n"
			"{\"source-ref\":\"s3://bkt/3\",\"label\":\"b\"}\r\n"
			"{\"source-ref\":\"s3://bkt/4\",\"label\":\"c\"}";
	struct channel_entries *e = entries();

	assert_int_equal(augmented(t, strlen(t), attrs2, 2, e), 0);
	assert_int_equal(channel_entries_count(e), 3);
	assert_int_equal(entry_at(e, 0).line, 1);
	assert_text(e, 0, 1, "a", 1);
	assert_int_equal(entry_at(e, 1).line, 3);
	assert_object(e, 1, 0, "bkt", "3");
	assert_text(e, 1, 1, "b", 1);
	assert_int_equal(entry_at(e, 2).line, 4);
	assert_object(e, 2, 0, "bkt", "4");
	assert_text(e, 2, 1, "c", 1);
	channel_entries_clear(e);

	/* the BOM before the first line */
	t = "\xef\xbb\xbf{\"source-ref\":\"s3://bkt/1\",\"label\":2}\n";
	assert_int_equal(augmented(t, strlen(t), attrs2, 2, e), 0);
	assert_int_equal(channel_entries_count(e), 1);
	channel_entries_clear(e);
}

/* Many lines: the array grows; an error after them frees them all. */
static void test_augmented_many(void **state)
{
	struct channel_entries *e = entries();
	size_t cap = 5000 * 64 + 64;
	char *t = malloc(cap);
	size_t len = 0;

	assert_non_null(t);
	for (int i = 0; i < 5000; i++)
		len += (size_t)snprintf(t + len, cap - len,
					"{\"source-ref\":\"s3://bkt/%d\","
					"\"label\":%d}\n",
					i, i);
	assert_int_equal(augmented(t, len, attrs2, 2, e), 0);
	assert_int_equal(channel_entries_count(e), 5000);
	assert_object(e, 4999, 0, "bkt", "4999");
	assert_text(e, 4999, 1, "4999", 4);
	assert_int_equal(entry_at(e, 4999).line, 5000);
	channel_entries_clear(e);
	len += (size_t)snprintf(t + len, cap - len, "[]\n");
	assert_int_equal(augmented(t, len, attrs2, 2, e), EINVAL);
	assert_empty(e);
	assert_string_equal(err, "augmented manifest line 5001 is not a JSON "
				 "object");
	free(t);
}

/* An augmented manifest's -refs go into one catalog a bucket; more than
 * CHANNEL_ENTRIES_BUCKETS_MAX buckets is refused, naming the line. */
static void test_augmented_buckets(void **state)
{
	char *const attrs[] = {"source-ref"};
	struct channel_entries *e = entries();
	size_t cap = (CHANNEL_ENTRIES_BUCKETS_MAX + 2) * 64, len = 0;
	char *t = malloc(cap);

	(void)state;
	assert_non_null(t);
	for (unsigned i = 0; i < CHANNEL_ENTRIES_BUCKETS_MAX; i++)
		len +=
		    (size_t)snprintf(t + len, cap - len,
				     "{\"source-ref\":\"s3://bkt-%u/k\"}\n", i);
	len += (size_t)snprintf(t + len, cap - len,
				"{\"source-ref\":\"s3://bkt-0/j\"}\n");
	assert_int_equal(augmented(t, len, attrs, 1, e), 0);
	assert_int_equal(channel_entries_count(e),
			 CHANNEL_ENTRIES_BUCKETS_MAX + 1);
	assert_object(e, CHANNEL_ENTRIES_BUCKETS_MAX, 0, "bkt-0", "j");
	assert_object(e, 7, 0, "bkt-7", "k");
	len += (size_t)snprintf(t + len, cap - len,
				"{\"source-ref\":\"s3://one-more/k\"}\n");
	assert_int_equal(augmented(t, len, attrs, 1, e), EINVAL);
	assert_empty(e);
	assert_contains(err, "line 258");
	assert_contains(err, "more than 256 buckets");
	free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_teardown(test_manifest_keys, forget_entries),
	    cmocka_unit_test_teardown(test_manifest_prefix_forms,
				      forget_entries),
	    cmocka_unit_test_teardown(test_manifest_other_bucket,
				      forget_entries),
	    cmocka_unit_test_teardown(test_manifest_empty, forget_entries),
	    cmocka_unit_test_teardown(test_manifest_many, forget_entries),
	    cmocka_unit_test_teardown(test_manifest_appends, forget_entries),
	    cmocka_unit_test_teardown(test_entries_state, forget_entries),
	    cmocka_unit_test_teardown(test_augmented_buckets, forget_entries),
	    cmocka_unit_test_teardown(test_manifest_not_json, forget_entries),
	    cmocka_unit_test_teardown(test_manifest_not_array, forget_entries),
	    cmocka_unit_test_teardown(test_manifest_bad_prefix, forget_entries),
	    cmocka_unit_test_teardown(test_manifest_bad_elements,
				      forget_entries),
	    cmocka_unit_test_teardown(test_manifest_key_length, forget_entries),
	    cmocka_unit_test_teardown(test_manifest_bad_utf8, forget_entries),
	    cmocka_unit_test_teardown(test_manifest_duplicate_keys,
				      forget_entries),
	    cmocka_unit_test_teardown(test_manifest_too_large, forget_entries),
	    cmocka_unit_test_teardown(test_manifest_small_err, forget_entries),
	    cmocka_unit_test_teardown(test_augmented_values, forget_entries),
	    cmocka_unit_test_teardown(test_augmented_source_text,
				      forget_entries),
	    cmocka_unit_test_teardown(test_augmented_source_text_nul,
				      forget_entries),
	    cmocka_unit_test_teardown(test_augmented_source_text_order,
				      forget_entries),
	    cmocka_unit_test_teardown(test_augmented_attribute_order,
				      forget_entries),
	    cmocka_unit_test_teardown(test_augmented_missing, forget_entries),
	    cmocka_unit_test_teardown(test_augmented_bad_ref, forget_entries),
	    cmocka_unit_test_teardown(test_augmented_ref_suffix,
				      forget_entries),
	    cmocka_unit_test_teardown(test_augmented_not_object,
				      forget_entries),
	    cmocka_unit_test_teardown(test_augmented_bad_utf8, forget_entries),
	    cmocka_unit_test_teardown(test_augmented_long_line, forget_entries),
	    cmocka_unit_test_teardown(test_augmented_blank_lines,
				      forget_entries),
	    cmocka_unit_test_teardown(test_augmented_crlf_and_last_line,
				      forget_entries),
	    cmocka_unit_test_teardown(test_augmented_many, forget_entries),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
