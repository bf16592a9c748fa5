/*
 * test_config: sagemaker/config.c, SageMaker's JSON files.
 *
 * InputDataConfig: every field mapped, defaults, unknown fields, and one
 * test per error, each checking the message (what it names, that it is one
 * clean line) and that a failed parse leaves *n and specs[] as they were.
 * Run under valgrind, the error tests also show that nothing leaks.
 * resourceconfig.json and the container's inputdataconfig.json are read and
 * written in a mkdtemp directory.
 *
 * JSON in this file is written with ' for " (J() swaps them back); a real
 * ' in JSON is \u0027.
 */
#include "config.h"

#include "sagemaker/sagemaker.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#define ERRLEN 512
#define NSPECS 32

/* ---- helpers ---- */

static char jbuf[1 << 16];

/* s with every ' turned into " (into a static buffer) */
static const char *J(const char *s)
{
	size_t len = strlen(s);

	assert_true(len < sizeof(jbuf));
	for (size_t i = 0; i <= len; i++)
		jbuf[i] = s[i] == '\'' ? '"' : s[i];
	return jbuf;
}

static int parse(const char *squoted, struct channel_spec *specs, unsigned max,
		 unsigned *n, char *err)
{
	const char *text = J(squoted);

	return sagemaker_input_config_parse(text, strlen(text), specs, max, n,
					    err, ERRLEN);
}

static bool utf8_ok(const unsigned char *s)
{
	while (*s) {
		size_t len;
		size_t i;

		if (*s < 0x80)
			len = 1;
		else if (*s >= 0xc2 && *s <= 0xdf)
			len = 2;
		else if (*s >= 0xe0 && *s <= 0xef)
			len = 3;
		else if (*s >= 0xf0 && *s <= 0xf4)
			len = 4;
		else
			return false;
		for (i = 1; i < len; i++)
			if ((s[i] & 0xc0) != 0x80)
				return false;
		if (len == 2 && s[1] <= 0x9f && s[0] == 0xc2)
			return false; /* C1 control */
		s += len;
	}
	return true;
}

/* One line for users: lowercase start, no trailing period, no control
 * characters, UTF-8, no "s3pipe:" prefix. */
static void check_message(const char *err)
{
	size_t len = strlen(err);

	if (len == 0)
		fail_msg("empty message");
	if (!(err[0] >= 'a' && err[0] <= 'z'))
		fail_msg("message does not start in lowercase: '%s'", err);
	if (err[len - 1] == '.')
		fail_msg("message ends in a period: '%s'", err);
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)err[i] < 0x20 ||
		    (unsigned char)err[i] == 0x7f)
			fail_msg("control character 0x%02x in message '%s'",
				 (unsigned char)err[i], err);
	if (!utf8_ok((const unsigned char *)err))
		fail_msg("message is not clean UTF-8: '%s'", err);
	if (strstr(err, "s3pipe:"))
		fail_msg("message has the program prefix: '%s'", err);
}

static void check_contains(const char *err, const char *needle)
{
	if (!strstr(err, needle))
		fail_msg("message '%s' does not contain '%s'", err, needle);
}

static void check_zero(const struct channel_spec *specs, unsigned from,
		       unsigned to)
{
	static const struct channel_spec zero;

	for (unsigned i = from; i < to; i++)
		if (memcmp(&specs[i], &zero, sizeof(zero)) != 0)
			fail_msg("spec %u was touched by a failed parse", i);
}

/* text (with ' for ") fails with EINVAL, a clean message containing
 * needle, *n unchanged and no spec touched */
static void expect_error(const char *squoted, const char *needle)
{
	struct channel_spec specs[NSPECS];
	char err[ERRLEN];
	unsigned n = 0;

	memset(specs, 0, sizeof(specs));
	assert_int_equal(parse(squoted, specs, NSPECS, &n, err), EINVAL);
	assert_int_equal(n, 0);
	check_zero(specs, 0, NSPECS);
	check_message(err);
	check_contains(err, needle);
}

/* the same, for the whole message */
static void expect_error_is(const char *squoted, const char *want)
{
	struct channel_spec specs[NSPECS];
	char err[ERRLEN];
	unsigned n = 0;

	memset(specs, 0, sizeof(specs));
	assert_int_equal(parse(squoted, specs, NSPECS, &n, err), EINVAL);
	assert_int_equal(n, 0);
	check_zero(specs, 0, NSPECS);
	check_message(err);
	assert_string_equal(err, want);
}

static void free_specs(struct channel_spec *specs, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		channel_spec_free(&specs[i]);
}

/* A channel with fields... inserted into its S3DataSource (S3Prefix) */
#define S3(fields)                                                             \
	"[{'ChannelName': 'train', 'DataSource': {'S3DataSource': "            \
	"{'S3DataType': 'S3Prefix', 'S3Uri': 's3://bucket/train/'" fields      \
	"}}}]"
/* A channel with fields... added at its top level */
#define CH(fields)                                                             \
	"[{'ChannelName': 'train', 'DataSource': {'S3DataSource': "            \
	"{'S3DataType': 'S3Prefix', 'S3Uri': 's3://bucket/train/'}}" fields    \
	"}]"

static char tmpdir[] = "/tmp/test_config.XXXXXX";

static int setup_dir(void **state)
{
	memcpy(tmpdir + sizeof(tmpdir) - 7, "XXXXXX", 6);
	if (!mkdtemp(tmpdir))
		return -1;
	return 0;
}

static void remove_tree(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[PATH_MAX];

	if (!d)
		return;
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (unlink(path) != 0)
			remove_tree(path);
	}
	closedir(d);
	rmdir(dir);
}

static int teardown_dir(void **state)
{
	remove_tree(tmpdir);
	return 0;
}

/* writes len bytes of data to tmpdir/name; the path into path */
static void write_file(const char *name, const void *data, size_t len,
		       char *path, size_t pathlen)
{
	FILE *f;

	snprintf(path, pathlen, "%s/%s", tmpdir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

static void write_text(const char *name, const char *squoted, char *path,
		       size_t pathlen)
{
	const char *text = J(squoted);

	write_file(name, text, strlen(text), path, pathlen);
}

/* ---- valid InputDataConfigs ---- */

static void test_every_field_mapped(void **state)
{
	struct channel_spec specs[NSPECS];
	char err[ERRLEN];
	unsigned n = 0;

	memset(specs, 0, sizeof(specs));
	assert_int_equal(
	    parse("[{'ChannelName': 'train',"
		  "  'DataSource': {'S3DataSource': {"
		  "    'S3DataType': 'AugmentedManifestFile',"
		  "    'S3Uri': 's3://bucket/train/manifest.jsonl',"
		  "    'S3DataDistributionType': 'ShardedByS3Key',"
		  "    'AttributeNames': ['source-ref', 'label']}},"
		  "  'CompressionType': 'Gzip', 'RecordWrapperType': "
		  "'RecordIO',"
		  "  'ShuffleConfig': {'Seed': 42}, 'InputMode': 'Pipe',"
		  "  'ContentType': 'application/x-recordio'}]",
		  specs, NSPECS, &n, err),
	    0);
	assert_int_equal(n, 1);
	assert_string_equal(specs[0].name, "train");
	assert_string_equal(specs[0].uri, "s3://bucket/train/manifest.jsonl");
	assert_string_equal(specs[0].bucket, "bucket");
	assert_string_equal(specs[0].prefix, "train/manifest.jsonl");
	assert_int_equal(specs[0].data_type, CHANNEL_AUGMENTED_MANIFEST_FILE);
	assert_int_equal(specs[0].distribution, CHANNEL_SHARDED_BY_S3_KEY);
	assert_int_equal(specs[0].wrapper, CHANNEL_WRAPPER_RECORDIO);
	assert_int_equal(specs[0].compression, CHANNEL_COMPRESSION_GZIP);
	assert_true(specs[0].shuffle);
	assert_int_equal(specs[0].seed, 42);
	assert_int_equal(specs[0].nattributes, 2);
	assert_string_equal(specs[0].attributes[0], "source-ref");
	assert_string_equal(specs[0].attributes[1], "label");
	assert_string_equal(specs[0].content_type, "application/x-recordio");
	check_zero(specs, 1, NSPECS);
	free_specs(specs, n);
}

static void test_defaults(void **state)
{
	struct channel_spec specs[NSPECS];
	char err[ERRLEN];
	unsigned n = 0;

	memset(specs, 0, sizeof(specs));
	assert_int_equal(parse("[{'ChannelName': 'a', 'DataSource': "
			       "{'S3DataSource': {'S3DataType': 'S3Prefix', "
			       "'S3Uri': 's3://bucket'}}}]",
			       specs, NSPECS, &n, err),
			 0);
	assert_int_equal(n, 1);
	assert_string_equal(specs[0].name, "a");
	assert_string_equal(specs[0].uri, "s3://bucket");
	assert_string_equal(specs[0].bucket, "bucket");
	assert_string_equal(specs[0].prefix, "");
	assert_int_equal(specs[0].data_type, CHANNEL_S3_PREFIX);
	assert_int_equal(specs[0].distribution, CHANNEL_FULLY_REPLICATED);
	assert_int_equal(specs[0].wrapper, CHANNEL_WRAPPER_NONE);
	assert_int_equal(specs[0].compression, CHANNEL_COMPRESSION_NONE);
	assert_false(specs[0].shuffle);
	assert_int_equal(specs[0].seed, 0);
	assert_null(specs[0].attributes);
	assert_int_equal(specs[0].nattributes, 0);
	assert_null(specs[0].content_type);
	free_specs(specs, n);
}

static void test_explicit_defaults(void **state)
{
	struct channel_spec specs[NSPECS];
	char err[ERRLEN];
	unsigned n = 0;

	memset(specs, 0, sizeof(specs));
	assert_int_equal(parse(S3(", 'S3DataDistributionType': "
				  "'FullyReplicated'") "",
			       specs, NSPECS, &n, err),
			 0);
	free_specs(specs, n);
	n = 0;
	assert_int_equal(parse(CH(", 'CompressionType': 'None', "
				  "'RecordWrapperType': 'None', 'InputMode': "
				  "'Pipe'"),
			       specs, NSPECS, &n, err),
			 0);
	assert_int_equal(n, 1);
	assert_int_equal(specs[0].distribution, CHANNEL_FULLY_REPLICATED);
	assert_int_equal(specs[0].wrapper, CHANNEL_WRAPPER_NONE);
	assert_int_equal(specs[0].compression, CHANNEL_COMPRESSION_NONE);
	free_specs(specs, n);
}

/* JSON null in an optional field counts as absent */
static void test_null_optional_fields(void **state)
{
	struct channel_spec specs[NSPECS];
	char err[ERRLEN];
	unsigned n = 0;

	memset(specs, 0, sizeof(specs));
	assert_int_equal(
	    parse("[{'ChannelName': 'a', 'DataSource': {'S3DataSource': "
		  "{'S3DataType': 'S3Prefix', 'S3Uri': 's3://bucket/p', "
		  "'S3DataDistributionType': null, 'AttributeNames': null}}, "
		  "'CompressionType': null, 'RecordWrapperType': null, "
		  "'ShuffleConfig': null, 'InputMode': null, 'ContentType': "
		  "null}]",
		  specs, NSPECS, &n, err),
	    0);
	assert_int_equal(n, 1);
	assert_false(specs[0].shuffle);
	assert_null(specs[0].content_type);
	assert_null(specs[0].attributes);
	free_specs(specs, n);
}

static void test_several_channels_in_order(void **state)
{
	struct channel_spec specs[NSPECS];
	char err[ERRLEN];
	unsigned n = 0;

	memset(specs, 0, sizeof(specs));
	assert_int_equal(
	    parse("[{'ChannelName': 'train', 'DataSource': {'S3DataSource': "
		  "{'S3DataType': 'S3Prefix', 'S3Uri': 's3://bk1/train/'}}},"
		  " {'ChannelName': 'validation', 'DataSource': "
		  "{'S3DataSource': {'S3DataType': 'ManifestFile', 'S3Uri': "
		  "'s3://bk2/manifests/validation.json'}}, 'CompressionType': "
		  "'Gzip'},"
		  " {'ChannelName': 'test.set-1_x', 'DataSource': "
		  "{'S3DataSource': {'S3DataType': 'S3Prefix', 'S3Uri': "
		  "'s3://bk3/t'}}, 'ShuffleConfig': {'Seed': 7}}]",
		  specs, NSPECS, &n, err),
	    0);
	assert_int_equal(n, 3);
	assert_string_equal(specs[0].name, "train");
	assert_string_equal(specs[0].bucket, "bk1");
	assert_string_equal(specs[0].prefix, "train/");
	assert_int_equal(specs[0].compression, CHANNEL_COMPRESSION_NONE);
	assert_string_equal(specs[1].name, "validation");
	assert_int_equal(specs[1].data_type, CHANNEL_MANIFEST_FILE);
	assert_string_equal(specs[1].bucket, "bk2");
	assert_string_equal(specs[1].prefix, "manifests/validation.json");
	assert_int_equal(specs[1].compression, CHANNEL_COMPRESSION_GZIP);
	assert_false(specs[1].shuffle);
	assert_string_equal(specs[2].name, "test.set-1_x");
	assert_true(specs[2].shuffle);
	assert_int_equal(specs[2].seed, 7);
	check_zero(specs, 3, NSPECS);
	free_specs(specs, n);
}

/* specs from earlier (the command line) stay; new ones go after them */
static void test_appends_after_existing(void **state)
{
	struct channel_spec specs[NSPECS];
	char err[ERRLEN];
	unsigned n = 1;

	memset(specs, 0, sizeof(specs));
	memcpy(specs[0].name, "cli", 4);
	specs[0].uri = strdup("s3://cli-bucket/x");
	assert_non_null(specs[0].uri);
	assert_int_equal(parse(S3(""), specs, NSPECS, &n, err), 0);
	assert_int_equal(n, 2);
	assert_string_equal(specs[0].name, "cli");
	assert_string_equal(specs[0].uri, "s3://cli-bucket/x");
	assert_null(specs[0].bucket);
	assert_string_equal(specs[1].name, "train");
	assert_string_equal(specs[1].bucket, "bucket");
	free_specs(specs, n);
}

static void test_unknown_fields_ignored(void **state)
{
	struct channel_spec specs[NSPECS];
	char err[ERRLEN];
	unsigned n = 0;

	memset(specs, 0, sizeof(specs));
	assert_int_equal(
	    parse("[{'ChannelName': 'train', 'Extra': [1, {'x': null}],"
		  "  'DataSource': {'Other': 1, 'S3DataSource': {"
		  "    'S3DataType': 'S3Prefix', 'S3Uri': 's3://bucket/p/',"
		  "    'InstanceGroupNames': ['g1'], 'ModelAccessConfig': "
		  "{'AcceptEula': true}}},"
		  "  'ShuffleConfig': {'Seed': 1, 'Window': 'x'},"
		  "  'FutureField': {'a': 'b'}}]",
		  specs, NSPECS, &n, err),
	    0);
	assert_int_equal(n, 1);
	assert_string_equal(specs[0].prefix, "p/");
	assert_true(specs[0].shuffle);
	assert_int_equal(specs[0].seed, 1);
	free_specs(specs, n);
}

static void check_seed(const char *squoted, int64_t want)
{
	struct channel_spec specs[NSPECS];
	char err[ERRLEN];
	unsigned n = 0;

	memset(specs, 0, sizeof(specs));
	assert_int_equal(parse(squoted, specs, NSPECS, &n, err), 0);
	assert_int_equal(n, 1);
	assert_true(specs[0].shuffle);
	assert_true(specs[0].seed == want);
	free_specs(specs, n);
}

static void test_seeds(void **state)
{
	check_seed(CH(", 'ShuffleConfig': {'Seed': 0}"), 0);
	check_seed(CH(", 'ShuffleConfig': {'Seed': -1}"), -1);
	check_seed(CH(", 'ShuffleConfig': {'Seed': -123456789012}"),
		   -123456789012LL);
	check_seed(CH(", 'ShuffleConfig': {'Seed': 9223372036854775807}"),
		   INT64_MAX);
	check_seed(CH(", 'ShuffleConfig': {'Seed': -9223372036854775808}"),
		   INT64_MIN);
}

static void test_content_type_copied(void **state)
{
	struct channel_spec specs[NSPECS];
	char err[ERRLEN];
	unsigned n = 0;
	const char *text = "[{\"ChannelName\": \"a\", \"DataSource\": "
			   "{\"S3DataSource\": {\"S3DataType\": \"S3Prefix\", "
			   "\"S3Uri\": \"s3://bucket/p\"}}, \"ContentType\": "
			   "\"text/csv; label_size=1 \\u00e9\"}]";
	char *copy = strdup(text);

	assert_non_null(copy);
	memset(specs, 0, sizeof(specs));
	assert_int_equal(sagemaker_input_config_parse(copy, strlen(copy), specs,
						      NSPECS, &n, err, ERRLEN),
			 0);
	/* the spec owns its own copy */
	memset(copy, 'x', strlen(copy));
	free(copy);
	assert_string_equal(specs[0].content_type,
			    "text/csv; label_size=1 \xc3\xa9");
	free_specs(specs, n);
}

static void test_manifest_file(void **state)
{
	struct channel_spec specs[NSPECS];
	char err[ERRLEN];
	unsigned n = 0;

	memset(specs, 0, sizeof(specs));
	assert_int_equal(parse("[{'ChannelName': 'm', 'DataSource': "
			       "{'S3DataSource': {'S3DataType': "
			       "'ManifestFile', 'S3Uri': "
			       "'s3://bucket/dir/train.manifest'}}}]",
			       specs, NSPECS, &n, err),
			 0);
	assert_int_equal(specs[0].data_type, CHANNEL_MANIFEST_FILE);
	assert_string_equal(specs[0].prefix, "dir/train.manifest");
	assert_null(specs[0].attributes);
	free_specs(specs, n);
}

static void test_sixteen_attributes(void **state)
{
	struct channel_spec specs[NSPECS];
	char err[ERRLEN];
	unsigned n = 0;

	memset(specs, 0, sizeof(specs));
	assert_int_equal(
	    parse("[{'ChannelName': 'm', 'DataSource': {'S3DataSource': "
		  "{'S3DataType': 'AugmentedManifestFile', 'S3Uri': "
		  "'s3://bucket/m.jsonl', 'AttributeNames': ['a1', 'a2', "
		  "'a3', 'a4', 'a5', 'a6', 'a7', 'a8', 'a9', 'a10', 'a11', "
		  "'a12', 'a13', 'a14', 'a15', 'a16']}}}]",
		  specs, NSPECS, &n, err),
	    0);
	assert_int_equal(specs[0].nattributes, 16);
	assert_string_equal(specs[0].attributes[0], "a1");
	assert_string_equal(specs[0].attributes[15], "a16");
	free_specs(specs, n);
}

static void test_max_channels_fit(void **state)
{
	struct channel_spec specs[2];
	char err[ERRLEN];
	unsigned n = 0;

	memset(specs, 0, sizeof(specs));
	assert_int_equal(
	    parse("[{'ChannelName': 'a', 'DataSource': {'S3DataSource': "
		  "{'S3DataType': 'S3Prefix', 'S3Uri': 's3://bucket/a'}}},"
		  " {'ChannelName': 'b', 'DataSource': {'S3DataSource': "
		  "{'S3DataType': 'S3Prefix', 'S3Uri': 's3://bucket/b'}}}]",
		  specs, 2, &n, err),
	    0);
	assert_int_equal(n, 2);
	free_specs(specs, n);
}

/* ---- InputDataConfig errors: the document ---- */

static void test_syntax_error_line(void **state)
{
	expect_error("[\n  {'ChannelName': 'a',\n   'DataSource': ,\n  }\n]",
		     "input data config is not valid JSON: line 3, column");
	expect_error("[{'ChannelName': 'a'}", "line 1");
	expect_error("[{'ChannelName': 'a'}] x", "line 1");
	expect_error("[{'ChannelName': 'a'},\n\n{'ChannelName': 'a', "
		     "'ChannelName': 'b'}]",
		     "line 3");
	expect_error("[{'ChannelName': 'a'},\n\n{'ChannelName': 'a', "
		     "'ChannelName': 'b'}]",
		     "duplicate");
	/* larger than int64: jansson refuses it while parsing */
	expect_error(CH(", 'ShuffleConfig': {'Seed': 9223372036854775808}"),
		     "not valid JSON");
}

static void test_invalid_utf8(void **state)
{
	const char text[] = "[{\"ChannelName\": \"a\xff\xfe\"}]";
	struct channel_spec specs[NSPECS];
	char err[ERRLEN];
	unsigned n = 0;

	memset(specs, 0, sizeof(specs));
	assert_int_equal(sagemaker_input_config_parse(text, sizeof(text) - 1,
						      specs, NSPECS, &n, err,
						      ERRLEN),
			 EINVAL);
	assert_int_equal(n, 0);
	check_message(err);
	check_contains(err, "not valid JSON");
}

/* only len bytes are parsed: a NUL inside is an error, what follows len
 * is never read */
static void test_length_respected(void **state)
{
	const char text[] = "[{\"ChannelName\": \"a\"}]\0garbage";
	const char *good = J(S3(""));
	struct channel_spec specs[NSPECS];
	char err[ERRLEN];
	char *copy;
	unsigned n = 0;
	size_t len = strlen(good);

	memset(specs, 0, sizeof(specs));
	assert_int_equal(sagemaker_input_config_parse(text, sizeof(text) - 1,
						      specs, NSPECS, &n, err,
						      ERRLEN),
			 EINVAL);
	check_message(err);
	/* not NUL-terminated: exactly len bytes on the heap (valgrind) */
	copy = malloc(len);
	assert_non_null(copy);
	memcpy(copy, good, len);
	assert_int_equal(sagemaker_input_config_parse(copy, len, specs, NSPECS,
						      &n, err, ERRLEN),
			 0);
	assert_int_equal(n, 1);
	free(copy);
	free_specs(specs, n);
}

static void test_empty_text(void **state)
{
	struct channel_spec specs[NSPECS];
	char err[ERRLEN];
	unsigned n = 0;

	memset(specs, 0, sizeof(specs));
	assert_int_equal(
	    sagemaker_input_config_parse("", 0, specs, NSPECS, &n, err, ERRLEN),
	    EINVAL);
	check_message(err);
	check_contains(err, "input data config is empty");
	expect_error(" \n\t\r\n", "input data config is empty");
	assert_int_equal(n, 0);
}

static void test_empty_array(void **state)
{
	expect_error_is("[]", "input data config has no channels");
	expect_error_is(" [ \n ] \n", "input data config has no channels");
}

static void test_not_an_array(void **state)
{
	expect_error_is("{'ChannelName': 'train'}",
			"input data config must be a JSON array of channels, "
			"not an object");
	expect_error("'train'",
		     "must be a JSON array of channels, not a string");
	expect_error("42", "not a number");
	expect_error("null", "not null");
	expect_error("true", "not true");
}

static void test_too_many_channels(void **state)
{
	struct channel_spec specs[3];
	char err[ERRLEN];
	unsigned n = 0;
	const char *three =
	    "[{'ChannelName': 'a', 'DataSource': {'S3DataSource': "
	    "{'S3DataType': 'S3Prefix', 'S3Uri': 's3://bucket/a'}}},"
	    " {'ChannelName': 'b', 'DataSource': {'S3DataSource': "
	    "{'S3DataType': 'S3Prefix', 'S3Uri': 's3://bucket/b'}}},"
	    " {'ChannelName': 'c', 'DataSource': {'S3DataSource': "
	    "{'S3DataType': 'S3Prefix', 'S3Uri': 's3://bucket/c'}}}]";

	memset(specs, 0, sizeof(specs));
	assert_int_equal(parse(three, specs, 2, &n, err), EINVAL);
	assert_int_equal(n, 0);
	check_message(err);
	assert_string_equal(err, "input data config has 3 channels: at most 2 "
				 "are supported");
	check_zero(specs, 0, 3);

	/* with one already there, two more do not fit in three */
	n = 1;
	memcpy(specs[0].name, "cli", 4);
	assert_int_equal(parse(three, specs, 3, &n, err), EINVAL);
	assert_int_equal(n, 1);
	check_message(err);
	assert_string_equal(err, "input data config has 3 channels: only 2 "
				 "more fit beside the 1 already defined");
	assert_string_equal(specs[0].name, "cli");
	check_zero(specs, 1, 3);

	/* *n past max: none fit */
	n = 3;
	assert_int_equal(parse(three, specs, 2, &n, err), EINVAL);
	assert_int_equal(n, 3);
	check_message(err);
}

/* a later channel's error frees the earlier ones (valgrind) */
static void test_error_after_good_channels(void **state)
{
	struct channel_spec specs[NSPECS];
	char err[ERRLEN];
	unsigned n = 1;

	memset(specs, 0, sizeof(specs));
	memcpy(specs[0].name, "cli", 4);
	assert_int_equal(
	    parse("[{'ChannelName': 'a', 'DataSource': {'S3DataSource': "
		  "{'S3DataType': 'AugmentedManifestFile', 'S3Uri': "
		  "'s3://bucket/a.jsonl', 'AttributeNames': ['x', 'y']}}, "
		  "'ContentType': 'x/y', 'ShuffleConfig': {'Seed': 3}},"
		  " {'ChannelName': 'b', 'DataSource': {'S3DataSource': "
		  "{'S3DataType': 'S3Prefix', 'S3Uri': 's3://bucket/b'}}},"
		  " {'ChannelName': 'c', 'DataSource': {'S3DataSource': "
		  "{'S3DataType': 'AugmentedManifestFile', 'S3Uri': "
		  "'s3://bucket/c.jsonl', 'AttributeNames': ['x', 7]}}}]",
		  specs, NSPECS, &n, err),
	    EINVAL);
	assert_int_equal(n, 1);
	assert_string_equal(specs[0].name, "cli");
	check_zero(specs, 1, NSPECS);
	check_message(err);
	assert_string_equal(err, "channel 'c': DataSource.S3DataSource."
				 "AttributeNames element 2 must be a "
				 "non-empty string");
}

/* ---- InputDataConfig errors: each element ---- */

static void test_element_must_be_object(void **state)
{
	expect_error_is("[42]", "channel 1 (the 1st element) must be a JSON "
				"object, not a number");
	expect_error_is(
	    "[{'ChannelName': 'a', 'DataSource': {'S3DataSource': "
	    "{'S3DataType': 'S3Prefix', 'S3Uri': 's3://bucket/a'}}},"
	    " ['b']]",
	    "channel 2 (the 2nd element) must be a JSON object, "
	    "not an array");
}

static void test_channel_name_missing(void **state)
{
	expect_error_is("[{'DataSource': {}}]",
			"channel 1 (the 1st element): ChannelName is missing");
	expect_error_is(
	    "[{'ChannelName': 'a', 'DataSource': {'S3DataSource': "
	    "{'S3DataType': 'S3Prefix', 'S3Uri': 's3://bucket/a'}}},"
	    " {'ChannelName': 'b', 'DataSource': {'S3DataSource': "
	    "{'S3DataType': 'S3Prefix', 'S3Uri': 's3://bucket/b'}}},"
	    " {'DataSource': {}}]",
	    "channel 3 (the 3rd element): ChannelName is missing");
}

static void test_ordinals(void **state)
{
	char text[8192];
	size_t off = 0;

	/* 11 good channels, then one without a name: "the 12th element" */
	off += (size_t)snprintf(text + off, sizeof(text) - off, "[");
	for (int i = 0; i < 11; i++)
		off += (size_t)snprintf(
		    text + off, sizeof(text) - off,
		    "{'ChannelName': 'c%d', 'DataSource': {'S3DataSource': "
		    "{'S3DataType': 'S3Prefix', 'S3Uri': 's3://bucket/a'}}},",
		    i);
	snprintf(text + off, sizeof(text) - off, "{}]");
	expect_error_is(
	    text, "channel 12 (the 12th element): ChannelName is missing");
	text[0] = '[';
	off = 1;
	for (int i = 0; i < 20; i++)
		off += (size_t)snprintf(
		    text + off, sizeof(text) - off,
		    "{'ChannelName': 'c%d', 'DataSource': {'S3DataSource': "
		    "{'S3DataType': 'S3Prefix', 'S3Uri': 's3://bucket/a'}}},",
		    i);
	snprintf(text + off, sizeof(text) - off, "{}]");
	expect_error_is(
	    text, "channel 21 (the 21st element): ChannelName is missing");
}

static void test_channel_name_wrong_type(void **state)
{
	expect_error_is("[{'ChannelName': 7}]",
			"channel 1 (the 1st element): ChannelName must be a "
			"string");
	expect_error_is("[{'ChannelName': ['train']}]",
			"channel 1 (the 1st element): ChannelName must be a "
			"string");
}

static void test_channel_name_invalid(void **state)
{
	expect_error_is("[{'ChannelName': 'my train'}]",
			"channel 1 (the 1st element): ChannelName 'my train' "
			"is not a valid channel name: use 1 to 64 of A-Z a-z "
			"0-9 . - _");
	expect_error("[{'ChannelName': ''}]", "ChannelName '' is not a valid");
	expect_error("[{'ChannelName': 'a/b'}]", "ChannelName 'a/b' is not");
	/* 64 characters are fine, 65 are not */
	{
		struct channel_spec specs[NSPECS];
		char name[CHANNEL_NAME_MAX + 2];
		char text[512];
		char err[ERRLEN];
		unsigned n = 0;

		memset(name, 'x', CHANNEL_NAME_MAX);
		name[CHANNEL_NAME_MAX] = '\0';
		snprintf(
		    text, sizeof(text),
		    "[{'ChannelName': '%s', 'DataSource': {'S3DataSource': "
		    "{'S3DataType': 'S3Prefix', 'S3Uri': "
		    "'s3://bucket/a'}}}]",
		    name);
		memset(specs, 0, sizeof(specs));
		assert_int_equal(parse(text, specs, NSPECS, &n, err), 0);
		assert_int_equal(n, 1);
		assert_string_equal(specs[0].name, name);
		free_specs(specs, n);

		name[CHANNEL_NAME_MAX] = 'x';
		name[CHANNEL_NAME_MAX + 1] = '\0';
		snprintf(text, sizeof(text), "[{'ChannelName': '%s'}]", name);
		expect_error(text, "is not a valid channel name");
	}
}

static void test_duplicate_names(void **state)
{
	struct channel_spec specs[NSPECS];
	char err[ERRLEN];
	unsigned n = 1;

	expect_error_is(
	    "[{'ChannelName': 'a', 'DataSource': {'S3DataSource': "
	    "{'S3DataType': 'S3Prefix', 'S3Uri': 's3://bucket/a'}}},"
	    " {'ChannelName': 'b', 'DataSource': {'S3DataSource': "
	    "{'S3DataType': 'S3Prefix', 'S3Uri': 's3://bucket/b'}}},"
	    " {'ChannelName': 'a', 'DataSource': {'S3DataSource': "
	    "{'S3DataType': 'S3Prefix', 'S3Uri': 's3://bucket/c'}}}]",
	    "channel 'a' appears twice (the 1st and 3rd elements)");

	/* the same name as a spec already there */
	memset(specs, 0, sizeof(specs));
	memcpy(specs[0].name, "train", 6);
	assert_int_equal(parse(S3(""), specs, NSPECS, &n, err), EINVAL);
	assert_int_equal(n, 1);
	check_message(err);
	assert_string_equal(err, "channel 'train' is already defined");
	assert_string_equal(specs[0].name, "train");
	check_zero(specs, 1, NSPECS);
}

static void test_input_mode_file_refused(void **state)
{
	expect_error_is(CH(", 'InputMode': 'File'"),
			"channel 'train': InputMode File is not supported: "
			"s3pipe serves Pipe and FastFile channels");
	/* refused as such even when the rest is not an S3 source */
	expect_error_is("[{'ChannelName': 'fs', 'InputMode': 'File', "
			"'DataSource': {'FileSystemDataSource': {}}}]",
			"channel 'fs': InputMode File is not supported: s3pipe "
			"serves Pipe and FastFile channels");
	/* FastFile takes no stage that changes the bytes */
	expect_error_is(CH(", 'InputMode': 'FastFile', "
			   "'CompressionType': 'Gzip'"),
			"channel 'train': InputMode FastFile needs "
			"CompressionType None: a file holds its object's bytes "
			"as they are");
}

static void test_input_mode_fastfile(void **state)
{
	struct channel_spec specs[NSPECS];
	char err[ERRLEN];
	unsigned n = 0;

	memset(specs, 0, sizeof(specs));
	assert_int_equal(parse("[{'ChannelName': 'a', 'InputMode': 'FastFile', "
			       "'DataSource': {'S3DataSource': {'S3DataType': "
			       "'S3Prefix', 'S3Uri': 's3://bucket/p/'}}}, "
			       "{'ChannelName': 'b', 'DataSource': "
			       "{'S3DataSource': {'S3DataType': 'S3Prefix', "
			       "'S3Uri': 's3://bucket/p/'}}}]",
			       specs, NSPECS, &n, err),
			 0);
	assert_int_equal(n, 2);
	assert_int_equal(specs[0].input_mode, CHANNEL_INPUT_FASTFILE);
	assert_int_equal(specs[1].input_mode, CHANNEL_INPUT_PIPE);
	free_specs(specs, n);
	/* SageMaker's spelling only */
	expect_error_is(CH(", 'InputMode': 'fastfile'"),
			"channel 'train': InputMode must be Pipe, File or "
			"FastFile (got 'fastfile')");
}

static void test_input_mode_bad(void **state)
{
	expect_error_is(CH(", 'InputMode': 'pipe'"),
			"channel 'train': InputMode must be Pipe, File or "
			"FastFile (got 'pipe')");
	expect_error_is(CH(", 'InputMode': 1"),
			"channel 'train': InputMode must be a string");
}

static void test_data_source_missing(void **state)
{
	expect_error_is("[{'ChannelName': 'train'}]",
			"channel 'train': DataSource is missing");
	expect_error_is("[{'ChannelName': 'train', 'DataSource': null}]",
			"channel 'train': DataSource is missing");
}

static void test_data_source_wrong_type(void **state)
{
	expect_error_is("[{'ChannelName': 'train', 'DataSource': 's3://b/p'}]",
			"channel 'train': DataSource must be an object");
	expect_error_is("[{'ChannelName': 'train', 'DataSource': "
			"{'S3DataSource': []}}]",
			"channel 'train': DataSource.S3DataSource must be an "
			"object");
}

static void test_not_s3_source(void **state)
{
	expect_error_is("[{'ChannelName': 'train', 'DataSource': "
			"{'FileSystemDataSource': {'FileSystemId': 'fs-1'}}}]",
			"channel 'train': only S3 data sources are supported "
			"(DataSource has a FileSystemDataSource, "
			"DataSource.S3DataSource is missing)");
	expect_error_is("[{'ChannelName': 'train', 'DataSource': {}}]",
			"channel 'train': only S3 data sources are supported "
			"(DataSource.S3DataSource is missing)");
}

static void test_data_type_errors(void **state)
{
	expect_error_is(
	    "[{'ChannelName': 'train', 'DataSource': "
	    "{'S3DataSource': {'S3Uri': 's3://bucket/p'}}}]",
	    "channel 'train': DataSource.S3DataSource.S3DataType is "
	    "missing");
	expect_error_is("[{'ChannelName': 'train', 'DataSource': "
			"{'S3DataSource': {'S3DataType': 'Prefix', 'S3Uri': "
			"'s3://bucket/p'}}}]",
			"channel 'train': DataSource.S3DataSource.S3DataType "
			"must be S3Prefix, ManifestFile or "
			"AugmentedManifestFile (got 'Prefix')");
	expect_error_is("[{'ChannelName': 'train', 'DataSource': "
			"{'S3DataSource': {'S3DataType': 0, 'S3Uri': "
			"'s3://bucket/p'}}}]",
			"channel 'train': DataSource.S3DataSource.S3DataType "
			"must be S3Prefix, ManifestFile or "
			"AugmentedManifestFile, not a number");
}

static void test_uri_missing(void **state)
{
	expect_error_is("[{'ChannelName': 'train', 'DataSource': "
			"{'S3DataSource': {'S3DataType': 'S3Prefix'}}}]",
			"channel 'train': DataSource.S3DataSource.S3Uri is "
			"missing");
}

static void test_uri_wrong_type(void **state)
{
	expect_error_is("[{'ChannelName': 'train', 'DataSource': "
			"{'S3DataSource': {'S3DataType': 'S3Prefix', 'S3Uri': "
			"['s3://bucket/p']}}}]",
			"channel 'train': DataSource.S3DataSource.S3Uri must "
			"be a string");
}

static void test_uri_bad(void **state)
{
	expect_error_is("[{'ChannelName': 'train', 'DataSource': "
			"{'S3DataSource': {'S3DataType': 'S3Prefix', 'S3Uri': "
			"'https://bucket/p'}}}]",
			"channel 'train': DataSource.S3DataSource.S3Uri: "
			"malformed uri 'https://bucket/p': expected "
			"s3://BUCKET[/PREFIX]");
	expect_error("[{'ChannelName': 'train', 'DataSource': "
		     "{'S3DataSource': {'S3DataType': 'S3Prefix', 'S3Uri': "
		     "'s3:///p'}}}]",
		     "channel 'train': DataSource.S3DataSource.S3Uri: "
		     "malformed uri 's3:///p': missing bucket name");
	expect_error("[{'ChannelName': 'train', 'DataSource': "
		     "{'S3DataSource': {'S3DataType': 'S3Prefix', 'S3Uri': "
		     "'s3://My_Bucket/p'}}}]",
		     "channel 'train': DataSource.S3DataSource.S3Uri: invalid "
		     "bucket name 'My_Bucket' in 's3://My_Bucket/p'");
	expect_error("[{'ChannelName': 'train', 'DataSource': "
		     "{'S3DataSource': {'S3DataType': 'S3Prefix', 'S3Uri': "
		     "''}}}]",
		     "malformed uri ''");
}

static void test_manifest_uri_rules(void **state)
{
	expect_error_is(
	    "[{'ChannelName': 'm', 'DataSource': {'S3DataSource': "
	    "{'S3DataType': 'ManifestFile', 'S3Uri': "
	    "'s3://bucket/manifests/'}}}]",
	    "channel 'm': DataSource.S3DataSource.S3Uri "
	    "'s3://bucket/manifests/' ends in '/': for ManifestFile "
	    "it names the manifest object, not a prefix");
	expect_error("[{'ChannelName': 'm', 'DataSource': {'S3DataSource': "
		     "{'S3DataType': 'AugmentedManifestFile', 'S3Uri': "
		     "'s3://bucket/m/', 'AttributeNames': ['a']}}}]",
		     "ends in '/': for AugmentedManifestFile");
	expect_error_is("[{'ChannelName': 'm', 'DataSource': {'S3DataSource': "
			"{'S3DataType': 'ManifestFile', 'S3Uri': "
			"'s3://bucket'}}}]",
			"channel 'm': DataSource.S3DataSource.S3Uri "
			"'s3://bucket' names no object: for ManifestFile it is "
			"the manifest's s3://BUCKET/KEY");
	expect_error("[{'ChannelName': 'm', 'DataSource': {'S3DataSource': "
		     "{'S3DataType': 'AugmentedManifestFile', 'S3Uri': "
		     "'s3://bucket/', 'AttributeNames': ['a']}}}]",
		     "names no object");
}

static void test_distribution_errors(void **state)
{
	expect_error_is(S3(", 'S3DataDistributionType': 'Sharded'"),
			"channel 'train': DataSource.S3DataSource."
			"S3DataDistributionType must be FullyReplicated or "
			"ShardedByS3Key (got 'Sharded')");
	expect_error_is(S3(", 'S3DataDistributionType': true"),
			"channel 'train': DataSource.S3DataSource."
			"S3DataDistributionType must be FullyReplicated or "
			"ShardedByS3Key, not true");
}

static void test_attribute_names_rules(void **state)
{
	/* the CreateTrainingJob example with AttributeNames on S3Prefix */
	expect_error_is(S3(", 'AttributeNames': ['source-ref', 'label']"),
			"channel 'train': DataSource.S3DataSource."
			"AttributeNames needs DataSource.S3DataSource."
			"S3DataType AugmentedManifestFile");
	expect_error("[{'ChannelName': 'm', 'DataSource': {'S3DataSource': "
		     "{'S3DataType': 'ManifestFile', 'S3Uri': 's3://bucket/m', "
		     "'AttributeNames': []}}}]",
		     "AttributeNames is empty");
	expect_error_is(
	    "[{'ChannelName': 'm', 'DataSource': {'S3DataSource': "
	    "{'S3DataType': 'AugmentedManifestFile', 'S3Uri': "
	    "'s3://bucket/m'}}}]",
	    "channel 'm': DataSource.S3DataSource.S3DataType "
	    "AugmentedManifestFile needs DataSource.S3DataSource."
	    "AttributeNames: the names of the attributes to read from each "
	    "line");
	expect_error_is("[{'ChannelName': 'm', 'DataSource': {'S3DataSource': "
			"{'S3DataType': 'AugmentedManifestFile', 'S3Uri': "
			"'s3://bucket/m', 'AttributeNames': []}}}]",
			"channel 'm': DataSource.S3DataSource.AttributeNames "
			"is empty");
	expect_error_is("[{'ChannelName': 'm', 'DataSource': {'S3DataSource': "
			"{'S3DataType': 'AugmentedManifestFile', 'S3Uri': "
			"'s3://bucket/m', 'AttributeNames': 'source-ref'}}}]",
			"channel 'm': DataSource.S3DataSource.AttributeNames "
			"must be an array of strings, not a string");
	expect_error_is("[{'ChannelName': 'm', 'DataSource': {'S3DataSource': "
			"{'S3DataType': 'AugmentedManifestFile', 'S3Uri': "
			"'s3://bucket/m', 'AttributeNames': ['a', '']}}}]",
			"channel 'm': DataSource.S3DataSource.AttributeNames "
			"element 2 must be a non-empty string");
	expect_error("[{'ChannelName': 'm', 'DataSource': {'S3DataSource': "
		     "{'S3DataType': 'AugmentedManifestFile', 'S3Uri': "
		     "'s3://bucket/m', 'AttributeNames': [null]}}}]",
		     "AttributeNames element 1 must be a non-empty string");
	expect_error_is(
	    "[{'ChannelName': 'm', 'DataSource': {'S3DataSource': "
	    "{'S3DataType': 'AugmentedManifestFile', 'S3Uri': "
	    "'s3://bucket/m.jsonl', 'AttributeNames': ['a1', 'a2', "
	    "'a3', 'a4', 'a5', 'a6', 'a7', 'a8', 'a9', 'a10', 'a11', "
	    "'a12', 'a13', 'a14', 'a15', 'a16', 'a17']}}}]",
	    "channel 'm': DataSource.S3DataSource.AttributeNames: at most 16 "
	    "names");
}

static void test_compression_errors(void **state)
{
	/* the header's example */
	expect_error_is(CH(", 'CompressionType': 'zip'"),
			"channel 'train': CompressionType must be None or Gzip "
			"(got 'zip')");
	expect_error_is(CH(", 'CompressionType': 'gzip'"),
			"channel 'train': CompressionType must be None or Gzip "
			"(got 'gzip')");
	expect_error_is(CH(", 'CompressionType': false"),
			"channel 'train': CompressionType must be None or "
			"Gzip, not false");
}

static void test_wrapper_errors(void **state)
{
	expect_error_is(CH(", 'RecordWrapperType': 'Protobuf'"),
			"channel 'train': RecordWrapperType must be None or "
			"RecordIO (got 'Protobuf')");
	expect_error_is(CH(", 'RecordWrapperType': {}"),
			"channel 'train': RecordWrapperType must be None or "
			"RecordIO, not an object");
}

static void test_shuffle_errors(void **state)
{
	expect_error_is(CH(", 'ShuffleConfig': 42"),
			"channel 'train': ShuffleConfig must be an object");
	expect_error_is(CH(", 'ShuffleConfig': {}"),
			"channel 'train': ShuffleConfig.Seed is missing");
	expect_error_is(CH(", 'ShuffleConfig': {'Seed': 4.5}"),
			"channel 'train': ShuffleConfig.Seed must be a "
			"64-bit integer, not a number");
	expect_error_is(CH(", 'ShuffleConfig': {'Seed': 1e3}"),
			"channel 'train': ShuffleConfig.Seed must be a "
			"64-bit integer, not a number");
	expect_error_is(CH(", 'ShuffleConfig': {'Seed': '42'}"),
			"channel 'train': ShuffleConfig.Seed must be a "
			"64-bit integer (got '42')");
}

static void test_content_type_wrong_type(void **state)
{
	expect_error_is(CH(", 'ContentType': ['text/csv']"),
			"channel 'train': ContentType must be a string, not "
			"an array");
}

/* values from the file with control characters, C1 controls and line
 * separators never reach the message as such */
static void test_control_characters(void **state)
{
	struct channel_spec specs[NSPECS];
	char err[ERRLEN];
	unsigned n = 0;
	const char *text =
	    "[{\"ChannelName\": \"train\", \"DataSource\": {\"S3DataSource\": "
	    "{\"S3DataType\": \"x\\u001b[31mred\\nline2\\r\\t\\u007f\\u0085"
	    "\\u2028end\", \"S3Uri\": \"s3://bucket/p\"}}}]";

	memset(specs, 0, sizeof(specs));
	assert_int_equal(sagemaker_input_config_parse(text, strlen(text), specs,
						      NSPECS, &n, err, ERRLEN),
			 EINVAL);
	check_message(err);
	assert_string_equal(err, "channel 'train': DataSource.S3DataSource."
				 "S3DataType must be S3Prefix, ManifestFile or "
				 "AugmentedManifestFile (got "
				 "'x?[31mred?line2?????end')");

	/* in a name, before it is known to be valid */
	text = "[{\"ChannelName\": \"a\\nb\\u0000c\"}]";
	assert_int_equal(sagemaker_input_config_parse(text, strlen(text), specs,
						      NSPECS, &n, err, ERRLEN),
			 EINVAL);
	check_message(err);

	text = "[{\"ChannelName\": \"a\\nb\"}]";
	assert_int_equal(sagemaker_input_config_parse(text, strlen(text), specs,
						      NSPECS, &n, err, ERRLEN),
			 EINVAL);
	check_message(err);
	assert_string_equal(err, "channel 1 (the 1st element): ChannelName "
				 "'a?b' is not a valid channel name: use 1 to "
				 "64 of A-Z a-z 0-9 . - _");

	/* in the URI, echoed by s3_uri_parse */
	text = "[{\"ChannelName\": \"t\", \"DataSource\": {\"S3DataSource\": "
	       "{\"S3DataType\": \"S3Prefix\", \"S3Uri\": "
	       "\"s3:/\\n/bucket\"}}}]";
	assert_int_equal(sagemaker_input_config_parse(text, strlen(text), specs,
						      NSPECS, &n, err, ERRLEN),
			 EINVAL);
	check_message(err);
	check_contains(err, "s3:/?/bucket");

	/* raw control characters in the text itself (a syntax error) */
	text = "[\x1b\x07\n]";
	assert_int_equal(sagemaker_input_config_parse(text, strlen(text), specs,
						      NSPECS, &n, err, ERRLEN),
			 EINVAL);
	check_message(err);
	assert_int_equal(n, 0);
	check_zero(specs, 0, NSPECS);
}

/* a long value is cut in the message */
static void test_long_value_cut(void **state)
{
	char text[4096];
	char err[ERRLEN];
	struct channel_spec specs[NSPECS];
	unsigned n = 0;
	char big[1001];

	memset(big, 'z', 1000);
	big[1000] = '\0';
	snprintf(text, sizeof(text), CH(", 'CompressionType': '%s'"), big);
	memset(specs, 0, sizeof(specs));
	assert_int_equal(parse(text, specs, NSPECS, &n, err), EINVAL);
	check_message(err);
	check_contains(err, "(got 'zzzz");
	check_contains(err, "zzz...')");
	assert_true(strlen(err) < 200);
}

/* err is always terminated, however small; NULL err is allowed */
static void test_small_err_buffer(void **state)
{
	const char *text = J("[]");
	struct channel_spec specs[NSPECS];
	char err[8];
	unsigned n = 0;

	memset(specs, 0, sizeof(specs));
	memset(err, 'x', sizeof(err));
	assert_int_equal(sagemaker_input_config_parse(text, strlen(text), specs,
						      NSPECS, &n, err,
						      sizeof(err)),
			 EINVAL);
	assert_string_equal(err, "inpu\xe2\x80\xa6"); /* "inpu…" */
	assert_int_equal(sagemaker_input_config_parse(text, strlen(text), specs,
						      NSPECS, &n, NULL, 0),
			 EINVAL);
	err[0] = 'x';
	assert_int_equal(sagemaker_input_config_parse(text, strlen(text), specs,
						      NSPECS, &n, err, 1),
			 EINVAL);
	assert_int_equal(err[0], '\0');
	/* a multi-byte character cut in half becomes '?' */
	{
		const char *t2 = "[{\"ChannelName\": \"\xc3\xa9\xc3\xa9\"}]";
		char e2[48];

		assert_int_equal(sagemaker_input_config_parse(t2, strlen(t2),
							      specs, NSPECS, &n,
							      e2, sizeof(e2)),
				 EINVAL);
		check_message(e2);
	}
}

/* jansson's allocations fail one after another: ENOMEM or EINVAL (jansson
 * reports some as syntax errors), never a half result, nothing leaked */
static int alloc_budget = -1;

static void *failing_malloc(size_t size)
{
	if (alloc_budget == 0)
		return NULL;
	if (alloc_budget > 0)
		alloc_budget--;
	return malloc(size);
}

static void test_out_of_memory(void **state)
{
	struct channel_spec specs[NSPECS];
	char err[ERRLEN];
	unsigned n;
	int rc;
	int k;
	int enomem = 0;

	json_set_alloc_funcs(failing_malloc, free);
	for (k = 0;; k++) {
		memset(specs, 0, sizeof(specs));
		n = 0;
		alloc_budget = k;
		rc = parse("[{'ChannelName': 'train', 'DataSource': "
			   "{'S3DataSource': {'S3DataType': "
			   "'AugmentedManifestFile', 'S3Uri': "
			   "'s3://bucket/m.jsonl', 'AttributeNames': ['a', "
			   "'b-ref']}}, 'ContentType': 'x', 'ShuffleConfig': "
			   "{'Seed': 1}}, {'ChannelName': 'v', 'DataSource': "
			   "{'S3DataSource': {'S3DataType': 'S3Prefix', "
			   "'S3Uri': 's3://bucket/v'}}}]",
			   specs, NSPECS, &n, err);
		alloc_budget = -1;
		if (rc == 0)
			break;
		if (rc != ENOMEM && rc != EINVAL)
			fail_msg("allocation %d failing gave %d", k, rc);
		if (rc == ENOMEM) {
			assert_string_equal(err, "out of memory");
			enomem++;
		}
		check_message(err);
		assert_int_equal(n, 0);
		check_zero(specs, 0, NSPECS);
	}
	json_set_alloc_funcs(malloc, free);
	assert_true(k > 0);
	assert_true(enomem > 0);
	assert_int_equal(n, 2);
	free_specs(specs, n);
}

/* ---- conversion: S3pipeConvert and the S3pipe* fields ---- */

#define CONVERT ", 'S3pipeConvert': 'application/x-recordio-protobuf'"

/* squoted parses to one channel whose conversion is as given */
static void check_convert(const char *squoted,
			  enum channel_convert_format format, int label,
			  bool header_skip, bool bad_row_skip, uint64_t dim)
{
	struct channel_spec specs[NSPECS];
	char err[ERRLEN];
	unsigned n = 0;
	int rc;

	memset(specs, 0, sizeof(specs));
	rc = parse(squoted, specs, NSPECS, &n, err);
	if (rc != 0)
		fail_msg("%s: unexpected error '%s'", J(squoted), err);
	assert_int_equal(n, 1);
	assert_int_equal(specs[0].convert.format, format);
	assert_int_equal(specs[0].convert.label_column, label);
	assert_int_equal(specs[0].convert.header_skip, header_skip);
	assert_int_equal(specs[0].convert.bad_row_skip, bad_row_skip);
	assert_true(specs[0].convert.feature_dim == dim);
	free_specs(specs, n);
}

static void test_convert_absent(void **state)
{
	/* no S3pipe* field, whatever the ContentType: no conversion */
	check_convert(CH(""), CHANNEL_CONVERT_NONE, 0, false, false, 0);
	check_convert(CH(", 'ContentType': 'text/csv'"), CHANNEL_CONVERT_NONE,
		      0, false, false, 0);
	check_convert(CH(", 'ContentType': 'text/csv;label_size=7', "
			 "'RecordWrapperType': 'RecordIO'"),
		      CHANNEL_CONVERT_NONE, 0, false, false, 0);
	/* None, in any case, and null */
	check_convert(CH(", 'S3pipeConvert': 'None', 'ContentType': "
			 "'text/csv'"),
		      CHANNEL_CONVERT_NONE, 0, false, false, 0);
	check_convert(CH(", 'S3pipeConvert': 'none'"), CHANNEL_CONVERT_NONE, 0,
		      false, false, 0);
	check_convert(CH(", 'S3pipeConvert': null, 'S3pipeCsvLabelColumn': "
			 "null, 'S3pipeCsvHeader': null, 'S3pipeOnBadRow': "
			 "null, 'S3pipeFeatureDim': null"),
		      CHANNEL_CONVERT_NONE, 0, false, false, 0);
}

static void test_convert_csv(void **state)
{
	/* the defaults: label in column 0, no header, fail, any width */
	check_convert(CH(CONVERT ", 'ContentType': 'text/csv'"),
		      CHANNEL_CONVERT_CSV, 0, false, false, 0);
	/* the MIME type in any case, S3pipeConvert too */
	check_convert(CH(", 'S3pipeConvert': 'Application/X-RecordIO-Protobuf',"
			 " 'ContentType': 'Text/CSV'"),
		      CHANNEL_CONVERT_CSV, 0, false, false, 0);
	/* every field */
	check_convert(CH(CONVERT
			 ", 'ContentType': 'text/csv', "
			 "'S3pipeCsvLabelColumn': 5, 'S3pipeCsvHeader': "
			 "'Skip', 'S3pipeOnBadRow': 'Skip', "
			 "'S3pipeFeatureDim': 4294967296"),
		      CHANNEL_CONVERT_CSV, 5, true, true, 1ULL << 32);
	/* the explicit defaults, values in any case */
	check_convert(CH(CONVERT
			 ", 'ContentType': 'text/csv', "
			 "'S3pipeCsvLabelColumn': 0, 'S3pipeCsvHeader': "
			 "'NONE', 'S3pipeOnBadRow': 'fail', "
			 "'S3pipeFeatureDim': 1"),
		      CHANNEL_CONVERT_CSV, 0, false, false, 1);
	check_convert(CH(CONVERT ", 'ContentType': 'text/csv', "
				 "'S3pipeCsvLabelColumn': 'none', "
				 "'S3pipeCsvHeader': 'skip', 'S3pipeOnBadRow': "
				 "'SKIP'"),
		      CHANNEL_CONVERT_CSV, CHANNEL_LABEL_NONE, true, true, 0);
	check_convert(CH(CONVERT ", 'ContentType': 'text/csv', "
				 "'S3pipeCsvLabelColumn': 'None'"),
		      CHANNEL_CONVERT_CSV, CHANNEL_LABEL_NONE, false, false, 0);
	check_convert(CH(CONVERT ", 'ContentType': 'text/csv', "
				 "'S3pipeCsvLabelColumn': 1000000"),
		      CHANNEL_CONVERT_CSV, 1000000, false, false, 0);
	/* with gzip and manifests */
	check_convert(
	    "[{'ChannelName': 'train', 'DataSource': {'S3DataSource': "
	    "{'S3DataType': 'ManifestFile', 'S3Uri': "
	    "'s3://bucket/m.json'}}, 'CompressionType': 'Gzip', "
	    "'RecordWrapperType': 'None', 'ContentType': 'text/csv'" CONVERT
	    "}]",
	    CHANNEL_CONVERT_CSV, 0, false, false, 0);
}

/* label_size in a text/csv ContentType; parameters and whitespace */
static void test_convert_content_type_params(void **state)
{
	check_convert(CH(CONVERT ", 'ContentType': 'text/csv;label_size=0'"),
		      CHANNEL_CONVERT_CSV, CHANNEL_LABEL_NONE, false, false, 0);
	check_convert(CH(CONVERT ", 'ContentType': 'text/csv;label_size=1'"),
		      CHANNEL_CONVERT_CSV, 0, false, false, 0);
	check_convert(CH(CONVERT ", 'ContentType': ' text/csv ; label_size "
				 "= 0 '"),
		      CHANNEL_CONVERT_CSV, CHANNEL_LABEL_NONE, false, false, 0);
	check_convert(CH(CONVERT ", 'ContentType': 'TEXT/Csv;\\tLABEL_SIZE=0'"),
		      CHANNEL_CONVERT_CSV, CHANNEL_LABEL_NONE, false, false, 0);
	check_convert(CH(CONVERT ", 'ContentType': 'text/csv; label_size="
				 "\\\"0\\\"'"),
		      CHANNEL_CONVERT_CSV, CHANNEL_LABEL_NONE, false, false, 0);
	/* other parameters are ignored; the last label_size counts */
	check_convert(CH(CONVERT ", 'ContentType': 'text/csv; charset=utf-8; "
				 "header=present; label_size=0'"),
		      CHANNEL_CONVERT_CSV, CHANNEL_LABEL_NONE, false, false, 0);
	check_convert(CH(CONVERT ", 'ContentType': 'text/csv;label_size=0;"
				 "label_size=1;;'"),
		      CHANNEL_CONVERT_CSV, 0, false, false, 0);
	check_convert(CH(CONVERT ", 'ContentType': 'text/csv;'"),
		      CHANNEL_CONVERT_CSV, 0, false, false, 0);
	/* S3pipeCsvLabelColumn overrides label_size */
	check_convert(CH(CONVERT ", 'ContentType': 'text/csv;label_size=0', "
				 "'S3pipeCsvLabelColumn': 2"),
		      CHANNEL_CONVERT_CSV, 2, false, false, 0);
	check_convert(CH(CONVERT ", 'ContentType': 'text/csv;label_size=1', "
				 "'S3pipeCsvLabelColumn': 'none'"),
		      CHANNEL_CONVERT_CSV, CHANNEL_LABEL_NONE, false, false, 0);
	/* label_size means nothing to LibSVM */
	check_convert(CH(CONVERT ", 'ContentType': 'text/libsvm; label_size=3',"
				 " 'S3pipeFeatureDim': 10"),
		      CHANNEL_CONVERT_LIBSVM, 0, false, false, 10);
	/* the ContentType itself is kept as given */
	{
		struct channel_spec specs[NSPECS];
		char err[ERRLEN];
		unsigned n = 0;

		memset(specs, 0, sizeof(specs));
		assert_int_equal(parse(CH(CONVERT ", 'ContentType': "
						  "'text/csv; label_size=0'"),
				       specs, NSPECS, &n, err),
				 0);
		assert_string_equal(specs[0].content_type,
				    "text/csv; label_size=0");
		free_specs(specs, n);
	}
}

static void test_convert_libsvm(void **state)
{
	check_convert(CH(CONVERT ", 'ContentType': 'text/libsvm', "
				 "'S3pipeFeatureDim': 784"),
		      CHANNEL_CONVERT_LIBSVM, 0, false, false, 784);
	check_convert(CH(CONVERT ", 'ContentType': 'text/x-libsvm', "
				 "'S3pipeFeatureDim': 1, 'S3pipeOnBadRow': "
				 "'Skip'"),
		      CHANNEL_CONVERT_LIBSVM, 0, false, true, 1);
	check_convert(CH(CONVERT ", 'ContentType': 'Text/X-LibSVM ; "
				 "charset=utf-8', 'S3pipeFeatureDim': "
				 "4294967296"),
		      CHANNEL_CONVERT_LIBSVM, 0, false, false, 1ULL << 32);
}

static void test_convert_value_errors(void **state)
{
	expect_error_is(CH(", 'S3pipeConvert': 'protobuf'"),
			"channel 'train': S3pipeConvert must be None or "
			"application/x-recordio-protobuf (got 'protobuf')");
	expect_error_is(CH(", 'S3pipeConvert': true"),
			"channel 'train': S3pipeConvert must be None or "
			"application/x-recordio-protobuf, not true");
	expect_error_is(CH(CONVERT ", 'ContentType': 'text/csv', "
				   "'S3pipeCsvLabelColumn': -1"),
			"channel 'train': S3pipeCsvLabelColumn must be none or "
			"an integer from 0 to 1000000 (got -1)");
	expect_error_is(CH(CONVERT ", 'ContentType': 'text/csv', "
				   "'S3pipeCsvLabelColumn': 1000001"),
			"channel 'train': S3pipeCsvLabelColumn must be none or "
			"an integer from 0 to 1000000 (got 1000001)");
	expect_error_is(CH(CONVERT ", 'ContentType': 'text/csv', "
				   "'S3pipeCsvLabelColumn': '3'"),
			"channel 'train': S3pipeCsvLabelColumn must be none or "
			"an integer from 0 to 1000000 (got '3')");
	expect_error_is(CH(CONVERT ", 'ContentType': 'text/csv', "
				   "'S3pipeCsvLabelColumn': 1.5"),
			"channel 'train': S3pipeCsvLabelColumn must be none or "
			"an integer from 0 to 1000000, not a number");
	expect_error_is(CH(CONVERT ", 'ContentType': 'text/csv', "
				   "'S3pipeCsvLabelColumn': false"),
			"channel 'train': S3pipeCsvLabelColumn must be none or "
			"an integer from 0 to 1000000, not false");
	expect_error_is(CH(CONVERT ", 'ContentType': 'text/csv', "
				   "'S3pipeCsvHeader': 'Present'"),
			"channel 'train': S3pipeCsvHeader must be None or Skip "
			"(got 'Present')");
	expect_error_is(CH(CONVERT ", 'ContentType': 'text/csv', "
				   "'S3pipeCsvHeader': 1"),
			"channel 'train': S3pipeCsvHeader must be None or "
			"Skip, not a number");
	expect_error_is(CH(CONVERT ", 'ContentType': 'text/csv', "
				   "'S3pipeOnBadRow': 'Ignore'"),
			"channel 'train': S3pipeOnBadRow must be Fail or Skip "
			"(got 'Ignore')");
	expect_error_is(CH(CONVERT ", 'ContentType': 'text/libsvm', "
				   "'S3pipeFeatureDim': 0"),
			"channel 'train': S3pipeFeatureDim must be an integer "
			"from 1 to 4294967296 (got 0)");
	expect_error_is(CH(CONVERT ", 'ContentType': 'text/libsvm', "
				   "'S3pipeFeatureDim': -3"),
			"channel 'train': S3pipeFeatureDim must be an integer "
			"from 1 to 4294967296 (got -3)");
	expect_error_is(CH(CONVERT ", 'ContentType': 'text/libsvm', "
				   "'S3pipeFeatureDim': 4294967297"),
			"channel 'train': S3pipeFeatureDim must be an integer "
			"from 1 to 4294967296 (got 4294967297)");
	expect_error_is(CH(CONVERT ", 'ContentType': 'text/libsvm', "
				   "'S3pipeFeatureDim': '784'"),
			"channel 'train': S3pipeFeatureDim must be an integer "
			"from 1 to 4294967296 (got '784')");
	expect_error_is(CH(CONVERT ", 'ContentType': 'text/libsvm', "
				   "'S3pipeFeatureDim': 7.0"),
			"channel 'train': S3pipeFeatureDim must be an integer "
			"from 1 to 4294967296, not a number");
}

static void test_convert_content_type_errors(void **state)
{
	/* the brief's example */
	expect_error_is(CH(CONVERT ", 'ContentType': 'image/png'"),
			"channel 'train': S3pipeConvert needs ContentType "
			"text/csv or text/libsvm (got 'image/png')");
	expect_error_is(CH(CONVERT),
			"channel 'train': S3pipeConvert needs ContentType "
			"text/csv or text/libsvm (ContentType is missing)");
	expect_error_is(CH(CONVERT ", 'ContentType': null"),
			"channel 'train': S3pipeConvert needs ContentType "
			"text/csv or text/libsvm (ContentType is missing)");
	expect_error_is(CH(CONVERT ", 'ContentType': ''"),
			"channel 'train': S3pipeConvert needs ContentType "
			"text/csv or text/libsvm (got '')");
	/* the type whole, not a part or a longer one */
	expect_error_is(CH(CONVERT ", 'ContentType': 'text/csvx'"),
			"channel 'train': S3pipeConvert needs ContentType "
			"text/csv or text/libsvm (got 'text/csvx')");
	expect_error_is(CH(CONVERT ", 'ContentType': 'text/cs'"),
			"channel 'train': S3pipeConvert needs ContentType "
			"text/csv or text/libsvm (got 'text/cs')");
	expect_error_is(CH(CONVERT ", 'ContentType': 'text / csv'"),
			"channel 'train': S3pipeConvert needs ContentType "
			"text/csv or text/libsvm (got 'text / csv')");
	/* already protobuf RecordIO: nothing to convert */
	expect_error_is(CH(CONVERT ", 'ContentType': "
				   "'application/x-recordio-protobuf'"),
			"channel 'train': S3pipeConvert needs ContentType "
			"text/csv or text/libsvm (got "
			"'application/x-recordio-protobuf')");
	/* label_size other than 0 and 1 */
	expect_error_is(CH(CONVERT ", 'ContentType': 'text/csv;label_size=2'"),
			"channel 'train': ContentType 'text/csv;label_size=2': "
			"label_size must be 0 (no label) or 1 (the label in "
			"the first column)");
	expect_error_is(CH(CONVERT ", 'ContentType': 'text/csv; label_size'"),
			"channel 'train': ContentType 'text/csv; label_size': "
			"label_size must be 0 (no label) or 1 (the label in "
			"the first column)");
	expect_error_is(CH(CONVERT ", 'ContentType': 'text/csv;label_size='"),
			"channel 'train': ContentType 'text/csv;label_size=': "
			"label_size must be 0 (no label) or 1 (the label in "
			"the first column)");
	expect_error_is(
	    CH(CONVERT ", 'ContentType': 'text/csv;label_size=01'"),
	    "channel 'train': ContentType 'text/csv;label_size=01': "
	    "label_size must be 0 (no label) or 1 (the label in "
	    "the first column)");
	/* even when S3pipeCsvLabelColumn overrides it */
	expect_error(CH(CONVERT ", 'ContentType': 'text/csv;label_size=-1', "
				"'S3pipeCsvLabelColumn': 0"),
		     "label_size must be 0");
	/* a long ContentType is cut */
	expect_error(CH(CONVERT
			", 'ContentType': 'image/"
			"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
			"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
			"xxxxx'"),
		     "(got 'image/xxxx");
	expect_error(CH(CONVERT
			", 'ContentType': 'image/"
			"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
			"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
			"xxxxx'"),
		     "xxx...')");
}

/* the fields that go only with others */
static void test_convert_rules(void **state)
{
#define CSV_ONLY      "S3pipeConvert with ContentType text/csv"
#define CSV_OR_LIBSVM CSV_ONLY " or text/libsvm"
	static const char *const stray[][3] = {
	    {", 'S3pipeCsvLabelColumn': 0", "S3pipeCsvLabelColumn", CSV_ONLY},
	    {", 'S3pipeCsvLabelColumn': 'none'", "S3pipeCsvLabelColumn",
	     CSV_ONLY},
	    {", 'S3pipeCsvHeader': 'None'", "S3pipeCsvHeader", CSV_ONLY},
	    {", 'S3pipeOnBadRow': 'Skip'", "S3pipeOnBadRow", CSV_OR_LIBSVM},
	    {", 'S3pipeFeatureDim': 3", "S3pipeFeatureDim", CSV_OR_LIBSVM},
	};
	char text[1024];
	char want[256];

	/* an S3pipe* field without S3pipeConvert, or with None */
	for (size_t i = 0; i < sizeof(stray) / sizeof(stray[0]); i++) {
		snprintf(want, sizeof(want), "channel 'train': %s needs %s",
			 stray[i][1], stray[i][2]);
		snprintf(text, sizeof(text),
			 CH("%s, 'ContentType': 'text/csv'"), stray[i][0]);
		expect_error_is(text, want);
		snprintf(text, sizeof(text),
			 CH("%s, 'S3pipeConvert': 'None', 'ContentType': "
			    "'text/csv'"),
			 stray[i][0]);
		expect_error_is(text, want);
	}
	/* RecordIO twice */
	expect_error_is(CH(CONVERT ", 'ContentType': 'text/csv', "
				   "'RecordWrapperType': 'RecordIO'"),
			"channel 'train': " CSV_ONLY " needs "
			"RecordWrapperType None: converted rows are RecordIO "
			"records already");
	/* LibSVM without its shape */
	expect_error_is(CH(CONVERT ", 'ContentType': 'text/libsvm'"),
			"channel 'train': S3pipeConvert with ContentType "
			"text/libsvm needs S3pipeFeatureDim, the number of "
			"features (the tensor's shape)");
	expect_error_is(CH(CONVERT ", 'ContentType': 'text/x-libsvm', "
				   "'S3pipeOnBadRow': 'Skip'"),
			"channel 'train': S3pipeConvert with ContentType "
			"text/libsvm needs S3pipeFeatureDim, the number of "
			"features (the tensor's shape)");
	/* CSV's fields with LibSVM */
	expect_error_is(
	    CH(CONVERT ", 'ContentType': 'text/libsvm', "
		       "'S3pipeFeatureDim': 3, "
		       "'S3pipeCsvLabelColumn': 0"),
	    "channel 'train': S3pipeCsvLabelColumn needs " CSV_ONLY);
	expect_error_is(CH(CONVERT ", 'ContentType': 'text/x-libsvm', "
				   "'S3pipeFeatureDim': 3, "
				   "'S3pipeCsvHeader': 'Skip'"),
			"channel 'train': S3pipeCsvHeader needs " CSV_ONLY);
}

/* one bad channel among good ones: nothing added */
static void test_convert_error_second_channel(void **state)
{
	struct channel_spec specs[NSPECS];
	char err[ERRLEN];
	unsigned n = 0;

	memset(specs, 0, sizeof(specs));
	assert_int_equal(
	    parse("[{'ChannelName': 'a', 'DataSource': {'S3DataSource': "
		  "{'S3DataType': 'S3Prefix', 'S3Uri': 's3://bucket/a'}}, "
		  "'ContentType': 'text/csv'" CONVERT "},"
		  " {'ChannelName': 'b', 'DataSource': {'S3DataSource': "
		  "{'S3DataType': 'S3Prefix', 'S3Uri': 's3://bucket/b'}}, "
		  "'ContentType': 'text/libsvm'" CONVERT "}]",
		  specs, NSPECS, &n, err),
	    EINVAL);
	assert_int_equal(n, 0);
	check_zero(specs, 0, NSPECS);
	check_message(err);
	check_contains(err, "channel 'b': S3pipeConvert with ContentType "
			    "text/libsvm needs S3pipeFeatureDim");
}

/* ---- channel_config_load ---- */

static void test_load_good(void **state)
{
	struct channel_spec specs[NSPECS];
	char path[PATH_MAX];
	char err[ERRLEN];
	unsigned n = 0;

	write_text("input.json", CH(", 'ContentType': 'text/csv'"), path,
		   sizeof(path));
	memset(specs, 0, sizeof(specs));
	assert_int_equal(
	    sagemaker_input_config_load(path, specs, NSPECS, &n, err, ERRLEN),
	    0);
	assert_int_equal(n, 1);
	assert_string_equal(specs[0].name, "train");
	assert_string_equal(specs[0].content_type, "text/csv");
	free_specs(specs, n);
}

static void test_load_missing(void **state)
{
	struct channel_spec specs[NSPECS];
	char path[PATH_MAX];
	char want[PATH_MAX + 128];
	char err[ERRLEN];
	unsigned n = 0;

	snprintf(path, sizeof(path), "%s/no-such.json", tmpdir);
	snprintf(want, sizeof(want),
		 "cannot read input data config '%s': No such file or "
		 "directory",
		 path);
	memset(specs, 0, sizeof(specs));
	assert_int_equal(
	    sagemaker_input_config_load(path, specs, NSPECS, &n, err, ERRLEN),
	    EINVAL);
	assert_int_equal(n, 0);
	check_message(err);
	assert_string_equal(err, want);

	/* a directory */
	snprintf(want, sizeof(want),
		 "cannot read input data config '%s': Is a directory", tmpdir);
	assert_int_equal(
	    sagemaker_input_config_load(tmpdir, specs, NSPECS, &n, err, ERRLEN),
	    EINVAL);
	assert_string_equal(err, want);

	/* control characters in the path */
	assert_int_equal(sagemaker_input_config_load("/nonexistent/a\nb\x1b",
						     specs, NSPECS, &n, err,
						     ERRLEN),
			 EINVAL);
	check_message(err);
	check_contains(err, "'/nonexistent/a?b?'");
	check_zero(specs, 0, NSPECS);
}

static void test_load_syntax_error(void **state)
{
	struct channel_spec specs[NSPECS];
	char path[PATH_MAX];
	char err[ERRLEN];
	unsigned n = 0;

	write_text("bad.json", "[\n{'ChannelName': 'a'\n\n'x': 1}]", path,
		   sizeof(path));
	memset(specs, 0, sizeof(specs));
	assert_int_equal(
	    sagemaker_input_config_load(path, specs, NSPECS, &n, err, ERRLEN),
	    EINVAL);
	check_message(err);
	check_contains(err, "input data config is not valid JSON: line 4");
	assert_int_equal(n, 0);
}

static void test_load_too_large(void **state)
{
	struct channel_spec specs[NSPECS];
	char path[PATH_MAX];
	char want[PATH_MAX + 128];
	char err[ERRLEN];
	const char *text = J(S3(""));
	size_t len = strlen(text);
	unsigned n = 0;
	char *big;
	int fd;

	/* exactly 16 MiB: a config, then spaces */
	big = malloc(16u << 20);
	assert_non_null(big);
	memset(big, ' ', 16u << 20);
	memcpy(big, text, len);
	write_file("16mib.json", big, 16u << 20, path, sizeof(path));
	free(big);
	memset(specs, 0, sizeof(specs));
	assert_int_equal(
	    sagemaker_input_config_load(path, specs, NSPECS, &n, err, ERRLEN),
	    0);
	assert_int_equal(n, 1);
	free_specs(specs, n);
	n = 0;

	/* one byte more (sparse) */
	snprintf(path, sizeof(path), "%s/big.json", tmpdir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (16 << 20) + 1), 0);
	close(fd);
	snprintf(want, sizeof(want),
		 "input data config '%s' is larger than 16 MiB: refusing to "
		 "read it",
		 path);
	assert_int_equal(
	    sagemaker_input_config_load(path, specs, NSPECS, &n, err, ERRLEN),
	    EINVAL);
	assert_string_equal(err, want);
	check_message(err);

	/* not a regular file: the read itself is bounded */
	assert_int_equal(sagemaker_input_config_load("/dev/zero", specs, NSPECS,
						     &n, err, ERRLEN),
			 EINVAL);
	assert_string_equal(err, "input data config '/dev/zero' is larger "
				 "than 16 MiB: refusing to read it");
	assert_int_equal(n, 0);
	check_zero(specs, 0, NSPECS);
}

/* ---- channel_resource_config_load ---- */

static void test_resource_good(void **state)
{
	struct channel_host host = {99, 99};
	char path[PATH_MAX];
	char err[ERRLEN];

	write_text("rc.json",
		   "{'current_host': 'algo-2', 'hosts': ['algo-1', 'algo-2', "
		   "'algo-3'], 'network_interface_name': 'eth0', "
		   "'current_group_name': 'homogeneousCluster', "
		   "'instance_groups': [{'hosts': ['algo-1']}]}",
		   path, sizeof(path));
	assert_int_equal(
	    sagemaker_resource_config_load(path, &host, err, ERRLEN), 0);
	assert_int_equal(host.index, 1);
	assert_int_equal(host.count, 3);

	write_text("rc1.json",
		   "{'current_host': 'algo-1', 'hosts': ['algo-1']}", path,
		   sizeof(path));
	assert_int_equal(
	    sagemaker_resource_config_load(path, &host, err, ERRLEN), 0);
	assert_int_equal(host.index, 0);
	assert_int_equal(host.count, 1);

	write_text("rc2.json",
		   "{'hosts': ['a', 'b', 'c', 'd'], 'current_host': 'd'}", path,
		   sizeof(path));
	assert_int_equal(
	    sagemaker_resource_config_load(path, &host, err, ERRLEN), 0);
	assert_int_equal(host.index, 3);
	assert_int_equal(host.count, 4);
}

/* content (with ' for ") fails with a clean message "resource config
 * 'PATH': " + want; host untouched */
static void expect_resource_error(const char *squoted, const char *want)
{
	struct channel_host host = {99, 99};
	char path[PATH_MAX];
	char full[PATH_MAX + ERRLEN];
	char err[ERRLEN];

	write_text("resource.json", squoted, path, sizeof(path));
	assert_int_equal(
	    sagemaker_resource_config_load(path, &host, err, ERRLEN), EINVAL);
	check_message(err);
	snprintf(full, sizeof(full), "resource config '%s': %s", path, want);
	assert_string_equal(err, full);
	assert_int_equal(host.index, 99);
	assert_int_equal(host.count, 99);
}

static void test_resource_missing_file(void **state)
{
	struct channel_host host = {99, 99};
	char path[PATH_MAX];
	char want[PATH_MAX + 128];
	char err[ERRLEN];

	snprintf(path, sizeof(path), "%s/none.json", tmpdir);
	snprintf(want, sizeof(want),
		 "cannot read resource config '%s': No such file or directory",
		 path);
	assert_int_equal(
	    sagemaker_resource_config_load(path, &host, err, ERRLEN), EINVAL);
	assert_string_equal(err, want);
	assert_int_equal(host.count, 99);
}

static void test_resource_not_json(void **state)
{
	expect_resource_error("{'current_host': 'a',\n 'hosts': ['a',]}",
			      "not valid JSON: line 2, column 16: unexpected "
			      "token near ']'");
	expect_resource_error("", "the file is empty");
	expect_resource_error(" \n", "the file is empty");
	expect_resource_error("{'current_host': 'a', 'current_host': 'b', "
			      "'hosts': ['a']}",
			      "not valid JSON: line 1, column 36: duplicate "
			      "object key near '\"current_host\"'");
}

static void test_resource_not_object(void **state)
{
	expect_resource_error("['algo-1']",
			      "must be a JSON object, not an array");
}

static void test_resource_current_host_errors(void **state)
{
	expect_resource_error("{'hosts': ['algo-1']}",
			      "current_host is missing");
	expect_resource_error("{'current_host': 1, 'hosts': ['algo-1']}",
			      "current_host must be a string");
	expect_resource_error("{'current_host': '', 'hosts': ['algo-1']}",
			      "current_host is empty");
	expect_resource_error(
	    "{'current_host': 'algo-3', 'hosts': ['algo-1', 'algo-2']}",
	    "current_host 'algo-3' is not one of the 2 hosts");
	expect_resource_error(
	    "{'current_host': 'algo\\n1', 'hosts': ['algo-1', 'algo-2']}",
	    "current_host 'algo?1' is not one of the 2 hosts");
}

static void test_resource_hosts_errors(void **state)
{
	expect_resource_error("{'current_host': 'algo-1'}", "hosts is missing");
	expect_resource_error("{'current_host': 'algo-1', 'hosts': 'algo-1'}",
			      "hosts must be an array");
	expect_resource_error("{'current_host': 'algo-1', 'hosts': []}",
			      "hosts is empty");
	expect_resource_error("{'current_host': 'algo-1', 'hosts': ['algo-1', "
			      "2]}",
			      "hosts element 2 must be a non-empty string");
	expect_resource_error("{'current_host': 'algo-1', 'hosts': ['']}",
			      "hosts element 1 must be a non-empty string");
	expect_resource_error("{'current_host': 'algo-1', 'hosts': ['algo-1', "
			      "'algo-2', 'algo-1']}",
			      "host 'algo-1' is listed twice in hosts");
	expect_resource_error("{'current_host': 'algo-1', 'hosts': ['algo-2', "
			      "'algo-2', 'algo-1']}",
			      "host 'algo-2' is listed twice in hosts");
}

/* ---- channel_container_config_write ---- */

static void set_spec(struct channel_spec *s, const char *name)
{
	memset(s, 0, sizeof(*s));
	memcpy(s->name, name, strlen(name) + 1);
}

static json_t *load_container(const char *dir)
{
	char path[PATH_MAX];
	json_error_t jerr;
	json_t *root;

	snprintf(path, sizeof(path), "%s/inputdataconfig.json", dir);
	root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
	if (!root)
		fail_msg("%s: %s", path, jerr.text);
	return root;
}

static void check_entry(json_t *root, const char *name, const char *dist,
			const char *wrapper, const char *content_type)
{
	json_t *ch = json_object_get(root, name);

	assert_non_null(ch);
	assert_true(json_is_object(ch));
	assert_string_equal(
	    json_string_value(json_object_get(ch, "TrainingInputMode")),
	    "Pipe");
	assert_string_equal(
	    json_string_value(json_object_get(ch, "S3DistributionType")), dist);
	assert_string_equal(
	    json_string_value(json_object_get(ch, "RecordWrapperType")),
	    wrapper);
	if (content_type) {
		assert_string_equal(
		    json_string_value(json_object_get(ch, "ContentType")),
		    content_type);
		assert_int_equal(json_object_size(ch), 4);
	} else {
		assert_null(json_object_get(ch, "ContentType"));
		assert_int_equal(json_object_size(ch), 3);
	}
}

static unsigned count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	unsigned count = 0;

	assert_non_null(d);
	while ((e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
			count++;
	closedir(d);
	return count;
}

static void test_container_write(void **state)
{
	struct channel_spec specs[3];
	char dir[512];
	char path[PATH_MAX];
	char err[ERRLEN];
	struct stat st;
	json_t *root;
	FILE *f;
	char text[4096];
	size_t len;
	const char *key;
	json_t *v;
	unsigned i = 0;

	snprintf(dir, sizeof(dir), "%s/container", tmpdir);
	assert_int_equal(mkdir(dir, 0755), 0);
	set_spec(&specs[0], "train");
	specs[0].distribution = CHANNEL_SHARDED_BY_S3_KEY;
	specs[0].wrapper = CHANNEL_WRAPPER_RECORDIO;
	specs[0].content_type = strdup("application/x-recordio");
	assert_non_null(specs[0].content_type);
	set_spec(&specs[1], "validation");
	set_spec(&specs[2], "aux");
	specs[2].content_type = strdup("");
	assert_non_null(specs[2].content_type);

	assert_int_equal(
	    sagemaker_container_config_write(dir, specs, 3, err, ERRLEN), 0);
	root = load_container(dir);
	assert_int_equal(json_object_size(root), 3);
	check_entry(root, "train", "ShardedByS3Key", "RecordIO",
		    "application/x-recordio");
	check_entry(root, "validation", "FullyReplicated", "None", NULL);
	check_entry(root, "aux", "FullyReplicated", "None", "");
	/* in the order given */
	json_object_foreach(root, key, v)
	{
		assert_string_equal(key, specs[i].name);
		i++;
	}
	json_decref(root);

	/* pretty-printed with 4 spaces, a newline at the end */
	snprintf(path, sizeof(path), "%s/inputdataconfig.json", dir);
	f = fopen(path, "r");
	assert_non_null(f);
	len = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[len] = '\0';
	assert_true(len > 0);
	assert_int_equal(text[len - 1], '\n');
	assert_int_not_equal(text[len - 2], '\n');
	check_contains(text, "{\n    \"train\": {\n        "
			     "\"TrainingInputMode\": \"Pipe\",\n");
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0644);
	/* no temporary file left */
	assert_int_equal(count_entries(dir), 1);

	/* written again, over the old one */
	assert_int_equal(
	    sagemaker_container_config_write(dir, &specs[1], 1, err, ERRLEN),
	    0);
	root = load_container(dir);
	assert_int_equal(json_object_size(root), 1);
	check_entry(root, "validation", "FullyReplicated", "None", NULL);
	json_decref(root);
	assert_int_equal(count_entries(dir), 1);

	/* no channels: an empty object */
	assert_int_equal(
	    sagemaker_container_config_write(dir, specs, 0, err, ERRLEN), 0);
	root = load_container(dir);
	assert_true(json_is_object(root));
	assert_int_equal(json_object_size(root), 0);
	json_decref(root);

	free_specs(specs, 3);
}

static void test_container_missing_dir(void **state)
{
	struct channel_spec spec;
	char dir[512];
	char want[PATH_MAX + 128];
	char err[ERRLEN];

	set_spec(&spec, "train");
	snprintf(dir, sizeof(dir), "%s/missing", tmpdir);
	snprintf(want, sizeof(want),
		 "cannot write the container config: directory '%s': No such "
		 "file or directory",
		 dir);
	assert_int_equal(
	    sagemaker_container_config_write(dir, &spec, 1, err, ERRLEN),
	    ENOENT);
	check_message(err);
	assert_string_equal(err, want);

	/* a file, not a directory */
	write_text("plain", "x", dir, sizeof(dir));
	snprintf(want, sizeof(want),
		 "cannot write the container config: '%s' is not a directory",
		 dir);
	assert_int_equal(
	    sagemaker_container_config_write(dir, &spec, 1, err, ERRLEN),
	    ENOTDIR);
	check_message(err);
	assert_string_equal(err, want);
}

static void test_container_bad_specs(void **state)
{
	struct channel_spec specs[2];
	char dir[512];
	char err[ERRLEN];

	snprintf(dir, sizeof(dir), "%s/bad", tmpdir);
	assert_int_equal(mkdir(dir, 0755), 0);

	set_spec(&specs[0], "train");
	set_spec(&specs[1], "train");
	assert_int_equal(
	    sagemaker_container_config_write(dir, specs, 2, err, ERRLEN),
	    EINVAL);
	check_message(err);
	assert_string_equal(err, "cannot write the container config: channel "
				 "'train' appears twice");

	set_spec(&specs[1], "bad name");
	assert_int_equal(
	    sagemaker_container_config_write(dir, specs, 2, err, ERRLEN),
	    EINVAL);
	check_message(err);
	assert_string_equal(err, "cannot write the container config: invalid "
				 "channel name 'bad name'");

	set_spec(&specs[1], "ok");
	specs[1].content_type = strdup("bad \xff utf-8");
	assert_non_null(specs[1].content_type);
	assert_int_equal(
	    sagemaker_container_config_write(dir, specs, 2, err, ERRLEN),
	    EINVAL);
	check_message(err);
	assert_string_equal(err, "channel 'ok': ContentType is not UTF-8");
	channel_spec_free(&specs[1]);

	/* nothing was written */
	assert_int_equal(count_entries(dir), 0);
}

/* a converted channel: protobuf RecordIO, whatever it reads */
static void test_container_converted(void **state)
{
	struct channel_spec specs[3];
	char dir[512];
	char err[ERRLEN];
	json_t *root;

	snprintf(dir, sizeof(dir), "%s/converted", tmpdir);
	assert_int_equal(mkdir(dir, 0755), 0);
	set_spec(&specs[0], "train");
	specs[0].content_type = strdup("text/csv;label_size=0");
	assert_non_null(specs[0].content_type);
	channel_convert_conf_init(&specs[0].convert, CHANNEL_CONVERT_CSV);
	specs[0].distribution = CHANNEL_SHARDED_BY_S3_KEY;
	/* from the command line: no ContentType of its own */
	set_spec(&specs[1], "svm");
	channel_convert_conf_init(&specs[1].convert, CHANNEL_CONVERT_LIBSVM);
	specs[1].convert.feature_dim = 10;
	/* not converted: as before */
	set_spec(&specs[2], "raw");
	specs[2].content_type = strdup("text/csv");
	assert_non_null(specs[2].content_type);
	specs[2].wrapper = CHANNEL_WRAPPER_RECORDIO;

	assert_int_equal(
	    sagemaker_container_config_write(dir, specs, 3, err, ERRLEN), 0);
	root = load_container(dir);
	assert_int_equal(json_object_size(root), 3);
	check_entry(root, "train", "ShardedByS3Key", "None",
		    "application/x-recordio-protobuf");
	check_entry(root, "svm", "FullyReplicated", "None",
		    "application/x-recordio-protobuf");
	check_entry(root, "raw", "FullyReplicated", "RecordIO", "text/csv");
	json_decref(root);

	/* a spec's own RecordIO wrapper never reaches a converted channel */
	specs[1].wrapper = CHANNEL_WRAPPER_RECORDIO;
	assert_int_equal(
	    sagemaker_container_config_write(dir, &specs[1], 1, err, ERRLEN),
	    0);
	root = load_container(dir);
	check_entry(root, "svm", "FullyReplicated", "None",
		    "application/x-recordio-protobuf");
	json_decref(root);
	free_specs(specs, 3);
}

/* parsed, then written: the container reads protobuf RecordIO */
static void test_container_converted_round_trip(void **state)
{
	struct channel_spec specs[NSPECS];
	char dir[512];
	char err[ERRLEN];
	unsigned n = 0;
	json_t *root;

	snprintf(dir, sizeof(dir), "%s/round", tmpdir);
	assert_int_equal(mkdir(dir, 0755), 0);
	memset(specs, 0, sizeof(specs));
	assert_int_equal(parse(CH(CONVERT ", 'ContentType': 'text/csv', "
					  "'RecordWrapperType': 'None'"),
			       specs, NSPECS, &n, err),
			 0);
	assert_int_equal(
	    sagemaker_container_config_write(dir, specs, n, err, ERRLEN), 0);
	root = load_container(dir);
	check_entry(root, "train", "FullyReplicated", "None",
		    "application/x-recordio-protobuf");
	json_decref(root);
	free_specs(specs, n);
}

/* Found by fuzz_config: an invalid bucket name so long that the message
 * is cut to the buffer; the cut message still ends without a period (in
 * "…") and is clean UTF-8. */
static void test_long_bucket_message_cut(void **state)
{
	char text[2048];
	char bucket[1200];

	(void)state;
	memset(bucket, 'H', sizeof(bucket) - 1);
	bucket[sizeof(bucket) - 1] = '\0';
	memcpy(bucket, "bu.ck.", 6); /* a dot at the 512th byte too */
	bucket[400] = '.';
	snprintf(text, sizeof(text),
		 "[{'ChannelName': 'train', 'DataSource': {'S3DataSource': "
		 "{'S3DataType': 'S3Prefix', 'S3Uri': 's3://%s/p/'}}}]",
		 bucket);
	expect_error(text, "invalid bucket name");
	expect_error(text, "\xe2\x80\xa6");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_every_field_mapped),
	    cmocka_unit_test(test_defaults),
	    cmocka_unit_test(test_explicit_defaults),
	    cmocka_unit_test(test_null_optional_fields),
	    cmocka_unit_test(test_several_channels_in_order),
	    cmocka_unit_test(test_appends_after_existing),
	    cmocka_unit_test(test_unknown_fields_ignored),
	    cmocka_unit_test(test_seeds),
	    cmocka_unit_test(test_content_type_copied),
	    cmocka_unit_test(test_manifest_file),
	    cmocka_unit_test(test_sixteen_attributes),
	    cmocka_unit_test(test_max_channels_fit),
	    cmocka_unit_test(test_syntax_error_line),
	    cmocka_unit_test(test_invalid_utf8),
	    cmocka_unit_test(test_length_respected),
	    cmocka_unit_test(test_empty_text),
	    cmocka_unit_test(test_empty_array),
	    cmocka_unit_test(test_not_an_array),
	    cmocka_unit_test(test_too_many_channels),
	    cmocka_unit_test(test_error_after_good_channels),
	    cmocka_unit_test(test_element_must_be_object),
	    cmocka_unit_test(test_channel_name_missing),
	    cmocka_unit_test(test_ordinals),
	    cmocka_unit_test(test_channel_name_wrong_type),
	    cmocka_unit_test(test_channel_name_invalid),
	    cmocka_unit_test(test_duplicate_names),
	    cmocka_unit_test(test_input_mode_file_refused),
	    cmocka_unit_test(test_input_mode_fastfile),
	    cmocka_unit_test(test_input_mode_bad),
	    cmocka_unit_test(test_data_source_missing),
	    cmocka_unit_test(test_data_source_wrong_type),
	    cmocka_unit_test(test_not_s3_source),
	    cmocka_unit_test(test_data_type_errors),
	    cmocka_unit_test(test_uri_missing),
	    cmocka_unit_test(test_uri_wrong_type),
	    cmocka_unit_test(test_uri_bad),
	    cmocka_unit_test(test_manifest_uri_rules),
	    cmocka_unit_test(test_distribution_errors),
	    cmocka_unit_test(test_attribute_names_rules),
	    cmocka_unit_test(test_compression_errors),
	    cmocka_unit_test(test_wrapper_errors),
	    cmocka_unit_test(test_shuffle_errors),
	    cmocka_unit_test(test_content_type_wrong_type),
	    cmocka_unit_test(test_convert_absent),
	    cmocka_unit_test(test_convert_csv),
	    cmocka_unit_test(test_convert_content_type_params),
	    cmocka_unit_test(test_convert_libsvm),
	    cmocka_unit_test(test_convert_value_errors),
	    cmocka_unit_test(test_convert_content_type_errors),
	    cmocka_unit_test(test_convert_rules),
	    cmocka_unit_test(test_convert_error_second_channel),
	    cmocka_unit_test(test_control_characters),
	    cmocka_unit_test(test_long_value_cut),
	    cmocka_unit_test(test_small_err_buffer),
	    cmocka_unit_test(test_out_of_memory),
	    cmocka_unit_test(test_load_good),
	    cmocka_unit_test(test_load_missing),
	    cmocka_unit_test(test_load_syntax_error),
	    cmocka_unit_test(test_load_too_large),
	    cmocka_unit_test(test_resource_good),
	    cmocka_unit_test(test_resource_missing_file),
	    cmocka_unit_test(test_resource_not_json),
	    cmocka_unit_test(test_resource_not_object),
	    cmocka_unit_test(test_resource_current_host_errors),
	    cmocka_unit_test(test_resource_hosts_errors),
	    cmocka_unit_test(test_container_write),
	    cmocka_unit_test(test_container_missing_dir),
	    cmocka_unit_test(test_container_bad_specs),
	    cmocka_unit_test(test_container_converted),
	    cmocka_unit_test(test_container_converted_round_trip),
	    cmocka_unit_test(test_long_bucket_message_cut),
	};

	return cmocka_run_group_tests(tests, setup_dir, teardown_dir);
}
