/*
 * test_spec: channel/spec.c, the table of per-channel settings itself.
 *
 * The rows' invariants (one name per option and field, fields of the size
 * the store function writes, defaults among the values, room in the given
 * mask), every value of every setting through both syntaxes, the rules
 * between settings (each says what needs what, in the words of the syntax
 * it is checked in), copying given settings, and channel URIs' kinds.
 * The parsers that read the table (fs/options.c, sagemaker/) have tests of
 * their own; these hold whatever rows are added.
 */
#include "config.h"

#include "channel/channel.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* One line for users: no control characters, no trailing period. */
static void check_message(const char *err)
{
	size_t len = strlen(err);

	assert_true(len > 0);
	for (size_t i = 0; i < len; i++)
		assert_true((unsigned char)err[i] >= 0x20);
	assert_true(err[len - 1] != '.');
}

static void test_rows(void **state)
{
	(void)state;
	assert_true(channel_settings_count > 0);
	assert_true(channel_settings_count < 32); /* the given mask */
	for (unsigned i = 0; i < channel_settings_count; i++) {
		const struct channel_setting *s = &channel_settings[i];

		assert_true(s->option || s->field);
		assert_non_null(s->help);
		if (s->option)
			assert_ptr_equal(
			    channel_setting_find(CHANNEL_SYNTAX_CLI, s->option),
			    s);
		if (s->field)
			assert_ptr_equal(channel_setting_find(
					     CHANNEL_SYNTAX_CONFIG, s->field),
					 s);
		assert_true(s->offset + s->size <= sizeof(struct channel_spec));
		switch (s->type) {
		case CHANNEL_SETTING_STRING:
		case CHANNEL_SETTING_LIST:
			assert_int_equal(s->size, sizeof(char *));
			break;
		default:
			assert_true(s->size == 1 || s->size == 4 ||
				    s->size == 8);
		}
		if (s->option && s->type != CHANNEL_SETTING_FLAG)
			assert_non_null(s->metavar);
		if (s->type == CHANNEL_SETTING_ENUM ||
		    s->type == CHANNEL_SETTING_FLAG) {
			bool found = false;

			assert_true(s->nvalues >= 2);
			for (unsigned v = 0; v < s->nvalues; v++) {
				assert_true(s->values[v].value >= 0 &&
					    s->values[v].value < 32);
				found |= s->values[v].value == s->default_value;
			}
			assert_true(found);
		}
		if (s->type == CHANNEL_SETTING_INTEGER)
			assert_true(s->min <= s->max);
		if (s->conversion)
			assert_non_null(s->option);
	}
}

/* init writes every default; free empties; a zeroed spec frees */
static void test_init_free(void **state)
{
	struct channel_spec spec;

	(void)state;
	channel_spec_init(&spec);
	assert_int_equal(spec.given, 0);
	assert_int_equal(spec.data_type, CHANNEL_S3_PREFIX);
	assert_int_equal(spec.convert.format, CHANNEL_CONVERT_NONE);
	assert_int_equal(spec.convert.label_column, 0);
	assert_int_equal(channel_spec_check(&spec, CHANNEL_SYNTAX_CLI, NULL, 0),
			 0);
	assert_false(spec.shuffle);
	channel_spec_free(&spec);
	channel_spec_free(&spec);
}

/*
 * Every command-line word of every ENUM lands its value and marks it
 * given; a word that is not one is refused, naming the option as shown
 * and echoing the word.
 */
static void test_words(void **state)
{
	char err[256];

	(void)state;
	for (unsigned i = 0; i < channel_settings_count; i++) {
		const struct channel_setting *s = &channel_settings[i];

		if (s->type != CHANNEL_SETTING_ENUM || !s->option)
			continue;
		for (unsigned v = 0; v < s->nvalues; v++) {
			struct channel_spec spec;

			if (!s->values[v].cli)
				continue;
			channel_spec_init(&spec);
			assert_int_equal(
			    channel_setting_parse(s, s->values[v].cli, "--x",
						  &spec, err, sizeof(err)),
			    0);
			assert_true(channel_setting_given(&spec, s));
			channel_spec_free(&spec);
		}
		{
			struct channel_spec spec;

			channel_spec_init(&spec);
			assert_int_equal(
			    channel_setting_parse(s, "no-such", "-o x", &spec,
						  err, sizeof(err)),
			    EINVAL);
			check_message(err);
			assert_non_null(strstr(err, "-o x must be "));
			assert_non_null(strstr(err, "(got 'no-such')"));
			assert_false(channel_setting_given(&spec, s));
			channel_spec_free(&spec);
		}
	}
}

static const struct channel_setting *opt(const char *name)
{
	const struct channel_setting *s =
	    channel_setting_find(CHANNEL_SYNTAX_CLI, name);

	assert_non_null(s);
	return s;
}

static void given(struct channel_spec *spec, const char *name,
		  const char *value)
{
	char err[256];

	assert_int_equal(channel_setting_parse(opt(name), value, name, spec,
					       err, sizeof(err)),
			 0);
}

/* The rules, each named in both syntaxes. */
static void test_rules(void **state)
{
	static const struct {
		const char *name, *value;
		const char *cli, *config;
	} cases[] = {
	    {"csv-header", "skip", "--csv-header needs --convert csv",
	     "S3pipeCsvHeader needs S3pipeConvert with ContentType text/csv"},
	    {"on-bad-row", "skip", "--on-bad-row needs --convert csv or libsvm",
	     "S3pipeOnBadRow needs S3pipeConvert with ContentType text/csv "
	     "or text/libsvm"},
	    {"attribute-names", "a,b",
	     "--attribute-names needs an augmented+s3:// channel",
	     "DataSource.S3DataSource.AttributeNames needs "
	     "DataSource.S3DataSource.S3DataType AugmentedManifestFile"},
	};
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct channel_spec spec;

		channel_spec_init(&spec);
		given(&spec, cases[i].name, cases[i].value);
		assert_int_equal(channel_spec_check(&spec, CHANNEL_SYNTAX_CLI,
						    err, sizeof(err)),
				 EINVAL);
		assert_string_equal(err, cases[i].cli);
		assert_int_equal(channel_spec_check(&spec,
						    CHANNEL_SYNTAX_CONFIG, err,
						    sizeof(err)),
				 EINVAL);
		assert_string_equal(err, cases[i].config);
		channel_spec_free(&spec);
	}
}

/* A conversion from the ContentType: the format and label_size. */
static void test_content_type(void **state)
{
	const struct channel_setting *convert = opt("convert");
	struct channel_spec spec;
	char err[256];

	(void)state;
	channel_spec_init(&spec);
	assert_int_equal(
	    channel_setting_set_word(convert, "application/x-recordio-protobuf",
				     &spec, err, sizeof(err)),
	    0);
	assert_int_equal(
	    channel_setting_set_word(
		channel_setting_find(CHANNEL_SYNTAX_CONFIG, "ContentType"),
		"Text/CSV ; label_size = 0", &spec, err, sizeof(err)),
	    0);
	assert_int_equal(
	    channel_spec_check(&spec, CHANNEL_SYNTAX_CONFIG, err, sizeof(err)),
	    0);
	assert_int_equal(spec.convert.format, CHANNEL_CONVERT_CSV);
	assert_int_equal(spec.convert.label_column, CHANNEL_LABEL_NONE);
	channel_spec_free(&spec);
}

/* Given settings copied, deep, and only the rows asked for. */
static void test_copy(void **state)
{
	struct channel_spec from, to;

	(void)state;
	channel_spec_init(&from);
	channel_spec_init(&to);
	given(&from, "attribute-names", "x,y");
	given(&from, "shuffle-seed", "-7");
	given(&from, "compression", "GZIP");
	assert_int_equal(channel_spec_copy_settings(&to, &from, UINT32_MAX), 0);
	assert_int_equal(to.nattributes, 2);
	assert_string_equal(to.attributes[1], "y");
	assert_ptr_not_equal(to.attributes, from.attributes);
	assert_int_equal(to.seed, -7);
	assert_int_equal(to.compression, CHANNEL_COMPRESSION_GZIP);
	assert_int_equal(to.given, from.given);
	channel_spec_free(&to);
	/* a plain prefix does not take AttributeNames */
	channel_spec_init(&to);
	assert_int_equal(channel_spec_copy_settings(
			     &to, &from, channel_spec_applicable(&to)),
			 0);
	assert_int_equal(to.nattributes, 0);
	assert_int_equal(to.seed, -7);
	channel_spec_free(&to);
	channel_spec_free(&from);
}

static void test_uri_kind(void **state)
{
	enum channel_data_type type;
	const char *s3uri;

	(void)state;
	assert_true(channel_uri_kind("s3://b/p", &type, &s3uri));
	assert_int_equal(type, CHANNEL_S3_PREFIX);
	assert_string_equal(s3uri, "s3://b/p");
	assert_true(channel_uri_kind("augmented+s3://b/m", &type, &s3uri));
	assert_int_equal(type, CHANNEL_AUGMENTED_MANIFEST_FILE);
	assert_string_equal(s3uri, "s3://b/m");
	assert_true(channel_uri_kind("manifest+s3://b/m", &type, &s3uri));
	assert_int_equal(type, CHANNEL_MANIFEST_FILE);
	assert_false(channel_uri_kind("gs://b/p", &type, &s3uri));
	assert_string_equal(s3uri, "gs://b/p");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rows),
	    cmocka_unit_test(test_init_free),
	    cmocka_unit_test(test_words),
	    cmocka_unit_test(test_rules),
	    cmocka_unit_test(test_content_type),
	    cmocka_unit_test(test_copy),
	    cmocka_unit_test(test_uri_kind),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
