/*
 * libFuzzer harness for sagemaker/config.c: every input is parsed as an
 * InputDataConfig twice, into an empty table and after a spec that is
 * already there (as one from the command line would be) with little room
 * left.  Parsed specs are checked against the header's promises (valid,
 * unique names; URI, bucket and prefix set; enums in range; AttributeNames
 * only, and always, for AugmentedManifestFile; a manifest URI names an
 * object) and freed.  A failed parse must leave *n, the spec already there
 * and every free slot as they were, and give one clean line.  (S3Uri is
 * kept as given: its scheme may be in any case.)
 */
#include "config.h"

#include "sagemaker/sagemaker.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* one line for users: lowercase start, no control characters, no
 * trailing period */
static void check_message(const char *err)
{
	size_t len = strlen(err);

	if (len == 0 || !(err[0] >= 'a' && err[0] <= 'z') ||
	    err[len - 1] == '.')
		__builtin_trap();
	for (const unsigned char *p = (const unsigned char *)err; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			__builtin_trap();
}

static void check_zero(const struct channel_spec *specs, unsigned from,
		       unsigned to)
{
	static const struct channel_spec zero;

	for (unsigned i = from; i < to; i++)
		if (memcmp(&specs[i], &zero, sizeof(zero)) != 0)
			__builtin_trap();
}

static size_t check_spec(const struct channel_spec *specs, unsigned i)
{
	const struct channel_spec *s = &specs[i];
	size_t sink = 0;
	size_t plen;

	if (!channel_name_valid(s->name) || !s->uri || !s->bucket ||
	    !s->prefix || strncasecmp(s->uri, "s3://", 5) != 0)
		__builtin_trap();
	for (unsigned j = 0; j < i; j++)
		if (strcmp(specs[j].name, s->name) == 0)
			__builtin_trap();
	if ((unsigned)s->data_type > CHANNEL_AUGMENTED_MANIFEST_FILE ||
	    (unsigned)s->distribution > CHANNEL_SHARDED_BY_S3_KEY ||
	    (unsigned)s->wrapper > CHANNEL_WRAPPER_RECORDIO ||
	    (unsigned)s->compression > CHANNEL_COMPRESSION_GZIP)
		__builtin_trap();
	if (!s->shuffle && s->seed != 0)
		__builtin_trap();
	plen = strlen(s->prefix);
	if (s->data_type != CHANNEL_S3_PREFIX &&
	    (plen == 0 || s->prefix[plen - 1] == '/'))
		__builtin_trap();
	if (s->data_type == CHANNEL_AUGMENTED_MANIFEST_FILE) {
		if (!s->attributes || s->nattributes == 0 ||
		    s->nattributes > 16)
			__builtin_trap();
		for (size_t j = 0; j < s->nattributes; j++) {
			if (!s->attributes[j] || !s->attributes[j][0])
				__builtin_trap();
			sink += strlen(s->attributes[j]);
		}
	} else if (s->attributes || s->nattributes) {
		__builtin_trap();
	}
	sink += strlen(s->bucket) + plen;
	if (s->content_type)
		sink += strlen(s->content_type);
	return sink;
}

static size_t run(const char *text, size_t len, unsigned max, bool seeded)
{
	struct channel_spec specs[CHANNEL_MAX];
	char err[512];
	unsigned start = seeded ? 1 : 0;
	unsigned n = start;
	size_t sink = 0;
	int rc;

	memset(specs, 0, sizeof(specs));
	if (seeded)
		memcpy(specs[0].name, "train", sizeof("train"));
	err[0] = 'x';
	err[1] = '\0';
	rc = sagemaker_input_config_parse(text, len, specs, max, &n, err,
					  sizeof(err));
	if (seeded && strcmp(specs[0].name, "train") != 0)
		__builtin_trap();
	if (rc == 0) {
		if (n <= start || n > max)
			__builtin_trap();
		for (unsigned i = start; i < n; i++)
			sink += check_spec(specs, i);
		check_zero(specs, n, CHANNEL_MAX);
		for (unsigned i = start; i < n; i++)
			channel_spec_free(&specs[i]);
	} else {
		if ((rc != EINVAL && rc != ENOMEM) || n != start)
			__builtin_trap();
		check_zero(specs, start, CHANNEL_MAX);
		check_message(err);
		sink += strlen(err);
	}
	return sink;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	volatile size_t sink = 0;

	sink += run((const char *)data, size, CHANNEL_MAX, false);
	sink += run((const char *)data, size, 3, true);
	(void)sink;
	return 0;
}
