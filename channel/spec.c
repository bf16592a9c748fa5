/*
 * spec: a channel's settings, declared once.
 *
 * channel_settings[] has one row per per-channel setting: how the command
 * line names it, which InputDataConfig field holds it, its type and
 * values, its default and help, and the field of struct channel_spec it
 * lands in (by offsetof and sizeof, so one store function serves every
 * integer and enum).  channel_rules[] says which settings need which:
 * "when A is given (or has one of these values), B must be given (or have
 * one of those)"; channel_spec_check() applies it in order and names both
 * sides in the words of the syntax they came in.  Adding a setting is a
 * row here, its field in struct channel_spec, and the code that uses it;
 * the parsers, --help and the tests that check the documents follow the
 * table.
 *
 * Also here: freeing specs and entries, the channel name rule, the
 * defaults of a conversion, and a channel URI's kind.
 */
#include "config.h"

#include "channel/internal.h"
#include "util/util.h"

#include <errno.h>
#include <stdbool.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define ECHO_MAX 64 /* bytes of a value echoed in a message */

#define SPEC_FIELD(f)                                                          \
	.offset = offsetof(struct channel_spec, f),                            \
	.size = sizeof(((struct channel_spec *)0)->f)
#define COUNT(a) ((unsigned)(sizeof(a) / sizeof((a)[0])))

static const struct channel_setting_value data_types[] = {
    {"s3://", "S3Prefix", CHANNEL_S3_PREFIX, "an s3:// channel", NULL},
    {"manifest+s3://", "ManifestFile", CHANNEL_MANIFEST_FILE,
     "a manifest+s3:// channel", NULL},
    {"augmented+s3://", "AugmentedManifestFile",
     CHANNEL_AUGMENTED_MANIFEST_FILE, "an augmented+s3:// channel", NULL},
};
static const struct channel_setting_value input_modes[] = {
    {"pipe", "Pipe", CHANNEL_INPUT_PIPE, NULL, NULL},
    {"fastfile", "FastFile", CHANNEL_INPUT_FASTFILE, NULL, NULL},
};
static const struct channel_setting_value distributions[] = {
    {NULL, "FullyReplicated", CHANNEL_FULLY_REPLICATED, NULL, NULL},
    {NULL, "ShardedByS3Key", CHANNEL_SHARDED_BY_S3_KEY, "--sharded", NULL},
};
static const struct channel_setting_value wrappers[] = {
    {"none", "None", CHANNEL_WRAPPER_NONE, NULL, NULL},
    {"recordio", "RecordIO", CHANNEL_WRAPPER_RECORDIO, NULL, NULL},
};
static const struct channel_setting_value compressions[] = {
    {"none", "None", CHANNEL_COMPRESSION_NONE, NULL, NULL},
    {"gzip", "Gzip", CHANNEL_COMPRESSION_GZIP, NULL, NULL},
};
#define RECORDIO_PROTOBUF "application/x-recordio-protobuf"
static const struct channel_setting_value converts[] = {
    {"none", "None", CHANNEL_CONVERT_NONE, NULL, NULL},
    {"csv", NULL, CHANNEL_CONVERT_CSV, NULL,
     "S3pipeConvert with ContentType text/csv"},
    {"libsvm", NULL, CHANNEL_CONVERT_LIBSVM, NULL,
     "S3pipeConvert with ContentType text/libsvm"},
    {NULL, RECORDIO_PROTOBUF, CHANNEL_CONVERT_CONTENT_TYPE, NULL, NULL},
};
static const struct channel_setting_value csv_headers[] = {
    {"none", "None", false, NULL, NULL},
    {"skip", "Skip", true, NULL, NULL},
};
static const struct channel_setting_value bad_rows[] = {
    {"fail", "Fail", false, NULL, NULL},
    {"skip", "Skip", true, NULL, NULL},
};

/* the order of the rows is the order of --help and of the checks */
const struct channel_setting channel_settings[] = {
    {.field = "DataSource.S3DataSource.S3DataType",
     .type = CHANNEL_SETTING_ENUM,
     SPEC_FIELD(data_type),
     .values = data_types,
     .nvalues = COUNT(data_types),
     .default_value = CHANNEL_S3_PREFIX,
     .help = "what the channel's URI names: every object under a prefix, "
	     "a manifest file, or an augmented manifest file",
     .config_required = true},
    {.option = "input-mode",
     .field = "InputMode",
     .type = CHANNEL_SETTING_ENUM,
     SPEC_FIELD(input_mode),
     .values = input_modes,
     .nvalues = COUNT(input_modes),
     .default_value = CHANNEL_INPUT_PIPE,
     .metavar = "MODE",
     .help = "pipe (one file per epoch, NAME_N, the objects back to back) "
	     "or fastfile (a directory NAME/ with each object a file)"},
    {.option = "shuffle-seed",
     .field = "ShuffleConfig.Seed",
     .type = CHANNEL_SETTING_INTEGER,
     SPEC_FIELD(seed),
     .min = INT64_MIN,
     .max = INT64_MAX,
     .metavar = "N",
     .help = "shuffle every epoch from (N, epoch)",
     .default_doc = "key order",
     .needs_parent_field = true},
    {.option = "sharded",
     .field = "DataSource.S3DataSource.S3DataDistributionType",
     .type = CHANNEL_SETTING_FLAG,
     SPEC_FIELD(distribution),
     .values = distributions,
     .nvalues = COUNT(distributions),
     .default_value = CHANNEL_FULLY_REPLICATED,
     .help = "ShardedByS3Key: this host reads its share of each epoch",
     .default_doc = ""},
    {.option = "record-wrapper",
     .field = "RecordWrapperType",
     .type = CHANNEL_SETTING_ENUM,
     SPEC_FIELD(wrapper),
     .values = wrappers,
     .nvalues = COUNT(wrappers),
     .default_value = CHANNEL_WRAPPER_NONE,
     .metavar = "TYPE",
     .help = "none, or recordio (each object one RecordIO record)"},
    {.option = "compression",
     .field = "CompressionType",
     .type = CHANNEL_SETTING_ENUM,
     SPEC_FIELD(compression),
     .values = compressions,
     .nvalues = COUNT(compressions),
     .default_value = CHANNEL_COMPRESSION_NONE,
     .metavar = "TYPE",
     .help = "none, or gzip (each object gunzipped)"},
    {.option = "attribute-names",
     .field = "DataSource.S3DataSource.AttributeNames",
     .type = CHANNEL_SETTING_LIST,
     SPEC_FIELD(attributes),
     .count_offset = offsetof(struct channel_spec, nattributes),
     .min = 1,
     .max = CHANNEL_ATTRIBUTES_MAX,
     .metavar = "LIST",
     .help = "augmented+s3:// channels: the attributes to stream, "
	     "comma-separated"},
    {.option = "content-type",
     .field = "ContentType",
     .type = CHANNEL_SETTING_STRING,
     SPEC_FIELD(content_type),
     .metavar = "TYPE",
     .help = "the MIME type of the objects: application/x-recordio(-protobuf) "
	     "holds RecordIO records; text/csv, text/libsvm, "
	     "application/jsonlines and text/plain hold lines (an epoch "
	     "resumes at a record); with S3pipeConvert, what the rows are"},
    {.option = "shuffle-buffer",
     .field = "ShuffleConfig.S3pipeBufferSize",
     .type = CHANNEL_SETTING_INTEGER,
     SPEC_FIELD(shuffle_buffer),
     .min = 64 << 10,
     .max = 1LL << 40,
     .bytes = true,
     .metavar = "SIZE",
     .help = "with --shuffle-seed and records (--content-type): shuffle the "
	     "epoch's records across its objects through a buffer of SIZE "
	     "bytes, not only the objects",
     .default_doc = "objects only",
     .config_any_case = true},
    {.option = "convert",
     .field = "S3pipeConvert",
     .type = CHANNEL_SETTING_ENUM,
     SPEC_FIELD(convert.format),
     .values = converts,
     .nvalues = COUNT(converts),
     .default_value = CHANNEL_CONVERT_NONE,
     .metavar = "FORMAT",
     .help = "none, csv or libsvm: the objects' rows of that text (after "
	     "gunzip) become protobuf RecordIO, one aialgs.data.Record per "
	     "row",
     .config_any_case = true},
    {.option = "csv-label-column",
     .field = "S3pipeCsvLabelColumn",
     .type = CHANNEL_SETTING_INTEGER,
     SPEC_FIELD(convert.label_column),
     .min = 0,
     .max = CHANNEL_LABEL_COLUMN_MAX,
     .none_word = "none",
     .none_value = CHANNEL_LABEL_NONE,
     .default_value = 0,
     .metavar = "N",
     .help = "--convert csv: the label's column, from 0, or none",
     .default_doc = "0",
     .config_any_case = true,
     .conversion = true},
    {.option = "csv-header",
     .field = "S3pipeCsvHeader",
     .type = CHANNEL_SETTING_ENUM,
     SPEC_FIELD(convert.header_skip),
     .values = csv_headers,
     .nvalues = COUNT(csv_headers),
     .default_value = false,
     .metavar = "MODE",
     .help = "--convert csv: none, or skip (each object starts with a "
	     "header line)",
     .config_any_case = true,
     .conversion = true},
    {.option = "on-bad-row",
     .field = "S3pipeOnBadRow",
     .type = CHANNEL_SETTING_ENUM,
     SPEC_FIELD(convert.bad_row_skip),
     .values = bad_rows,
     .nvalues = COUNT(bad_rows),
     .default_value = false,
     .metavar = "ACTION",
     .help = "--convert: fail (the read fails with EIO), or skip (count, "
	     "log and skip the row)",
     .config_any_case = true,
     .conversion = true},
    {.option = "feature-dim",
     .field = "S3pipeFeatureDim",
     .type = CHANNEL_SETTING_INTEGER,
     SPEC_FIELD(convert.feature_dim),
     .min = 1,
     .max = (int64_t)CHANNEL_FEATURE_DIM_MAX,
     .default_value = 0,
     .metavar = "N",
     .help = "--convert: features per row, 1 to 4294967296: required with "
	     "libsvm (the tensor's shape); with csv every row must have N",
     .default_doc = "csv: as many as the first row has",
     .conversion = true},
};

const unsigned channel_settings_count = COUNT(channel_settings);

/* a setting's condition: given at all, or given a value in mask */
#define ANY_VALUE     0u
#define VALUES(a)     (1u << (a))
#define VALUES2(a, b) ((1u << (a)) | (1u << (b)))

struct channel_rule {
	const char *when;     /* the option (or field) of the setting ... */
	unsigned when_values; /* ... and its values (ANY_VALUE: given) */
	const char *needs;
	unsigned needs_values;
	const char *why; /* appended to "A needs B"; NULL: nothing */
};

/* settings are named by option, or by field for config-only ones */
static const struct channel_rule channel_rules[] = {
    {"input-mode", VALUES(CHANNEL_INPUT_FASTFILE),
     "DataSource.S3DataSource.S3DataType",
     VALUES2(CHANNEL_S3_PREFIX, CHANNEL_MANIFEST_FILE),
     ": each object becomes a file"},
    {"input-mode", VALUES(CHANNEL_INPUT_FASTFILE), "record-wrapper",
     VALUES(CHANNEL_WRAPPER_NONE),
     ": a file holds its object's bytes as they are"},
    {"input-mode", VALUES(CHANNEL_INPUT_FASTFILE), "compression",
     VALUES(CHANNEL_COMPRESSION_NONE),
     ": a file holds its object's bytes as they are"},
    {"input-mode", VALUES(CHANNEL_INPUT_FASTFILE), "convert",
     VALUES(CHANNEL_CONVERT_NONE),
     ": a file holds its object's bytes as they are"},
    {"csv-label-column", ANY_VALUE, "convert", VALUES(CHANNEL_CONVERT_CSV),
     NULL},
    {"csv-header", ANY_VALUE, "convert", VALUES(CHANNEL_CONVERT_CSV), NULL},
    {"on-bad-row", ANY_VALUE, "convert",
     VALUES2(CHANNEL_CONVERT_CSV, CHANNEL_CONVERT_LIBSVM), NULL},
    {"feature-dim", ANY_VALUE, "convert",
     VALUES2(CHANNEL_CONVERT_CSV, CHANNEL_CONVERT_LIBSVM), NULL},
    {"convert", VALUES2(CHANNEL_CONVERT_CSV, CHANNEL_CONVERT_LIBSVM),
     "record-wrapper", VALUES(CHANNEL_WRAPPER_NONE),
     ": converted rows are RecordIO records already"},
    {"convert", VALUES(CHANNEL_CONVERT_LIBSVM), "feature-dim", ANY_VALUE,
     ", the number of features (the tensor's shape)"},
    {"attribute-names", ANY_VALUE, "DataSource.S3DataSource.S3DataType",
     VALUES(CHANNEL_AUGMENTED_MANIFEST_FILE), NULL},
    {"shuffle-buffer", ANY_VALUE, "shuffle-seed", ANY_VALUE,
     ": the records' order comes from the seed"},
    {"shuffle-buffer", ANY_VALUE, "DataSource.S3DataSource.S3DataType",
     VALUES(CHANNEL_S3_PREFIX), NULL},
    {"shuffle-buffer", ANY_VALUE, "input-mode", VALUES(CHANNEL_INPUT_PIPE),
     NULL},
    {"shuffle-buffer", ANY_VALUE, "record-wrapper",
     VALUES(CHANNEL_WRAPPER_NONE),
     ": each object is one record already (--shuffle-seed mixes them)"},
    {"shuffle-buffer", ANY_VALUE, "compression",
     VALUES(CHANNEL_COMPRESSION_NONE),
     ": records are cut from the objects as stored"},
    {"shuffle-buffer", ANY_VALUE, "convert", VALUES(CHANNEL_CONVERT_NONE),
     ": records are cut from the objects as stored"},
    {"shuffle-buffer", ANY_VALUE, "content-type", ANY_VALUE,
     ", which says what a record is"},
    {"DataSource.S3DataSource.S3DataType",
     VALUES(CHANNEL_AUGMENTED_MANIFEST_FILE), "attribute-names", ANY_VALUE,
     ": the names of the attributes to read from each line"},
};

/* ---- the rows ---- */

static unsigned row_index(const struct channel_setting *s)
{
	return (unsigned)(s - channel_settings);
}

const struct channel_setting *channel_setting_find(enum channel_syntax syntax,
						   const char *name)
{
	for (unsigned i = 0; i < channel_settings_count; i++) {
		const struct channel_setting *s = &channel_settings[i];
		const char *n =
		    syntax == CHANNEL_SYNTAX_CLI ? s->option : s->field;

		if (n && strcmp(n, name) == 0)
			return s;
	}
	return NULL;
}

/* a rule's side: by option, else by field */
static const struct channel_setting *rule_setting(const char *name)
{
	const struct channel_setting *s =
	    channel_setting_find(CHANNEL_SYNTAX_CLI, name);

	return s ? s : channel_setting_find(CHANNEL_SYNTAX_CONFIG, name);
}

const char *channel_setting_name(const struct channel_setting *s,
				 enum channel_syntax syntax, char *buf,
				 size_t size)
{
	if ((syntax == CHANNEL_SYNTAX_CONFIG && s->field) || !s->option)
		snprintf(buf, size, "%s", s->field);
	else
		snprintf(buf, size, "--%s", s->option);
	return buf;
}

bool channel_setting_given(const struct channel_spec *spec,
			   const struct channel_setting *s)
{
	return spec->given & (1u << row_index(s));
}

static void *field_at(struct channel_spec *spec,
		      const struct channel_setting *s)
{
	return (char *)spec + s->offset;
}

/* v into the integer or enum field of s, whatever its size */
static void store(struct channel_spec *spec, const struct channel_setting *s,
		  int64_t v)
{
	void *p = field_at(spec, s);

	switch (s->size) {
	case 1:
		*(bool *)p = v != 0;
		break;
	case 4:
		*(int32_t *)p = (int32_t)v;
		break;
	default:
		*(int64_t *)p = v;
		break;
	}
}

static int64_t load(const struct channel_spec *spec,
		    const struct channel_setting *s)
{
	const void *p = (const char *)spec + s->offset;

	switch (s->size) {
	case 1:
		return *(const bool *)p;
	case 4:
		return *(const int32_t *)p;
	default:
		return *(const int64_t *)p;
	}
}

static void mark(struct channel_spec *spec, const struct channel_setting *s)
{
	spec->given |= 1u << row_index(s);
}

/* "a, b or c": the spellings of s's values in syntax */
static const char *value_list(const struct channel_setting *s,
			      enum channel_syntax syntax, char *buf,
			      size_t size)
{
	unsigned n = 0, count = 0;
	size_t off = 0;

	for (unsigned i = 0; i < s->nvalues; i++)
		count += (syntax == CHANNEL_SYNTAX_CLI
			      ? s->values[i].cli
			      : s->values[i].config) != NULL;
	buf[0] = '\0';
	for (unsigned i = 0; i < s->nvalues && off < size; i++) {
		const char *w = syntax == CHANNEL_SYNTAX_CLI
				    ? s->values[i].cli
				    : s->values[i].config;
		int k;

		if (!w)
			continue;
		k = snprintf(buf + off, size - off, "%s%s",
			     n == 0	      ? ""
			     : n + 1 == count ? " or "
					      : ", ",
			     w);
		if (k < 0)
			break;
		off += (size_t)k;
		n++;
	}
	return buf;
}

/* "an integer from MIN to MAX" (a 64-bit integer for the whole range),
 * after "WORD or " when there is a none_word */
static const char *integer_range(const struct channel_setting *s, char *buf,
				 size_t size)
{
	const char *none = s->none_word ? s->none_word : "";
	const char * or = s->none_word ? " or " : "";

	if (s->bytes)
		snprintf(buf, size, "a size from %" PRId64 "K to %" PRId64 "G",
			 s->min >> 10, s->max >> 30);
	else if (s->min == INT64_MIN && s->max == INT64_MAX)
		snprintf(buf, size, "%s%sa 64-bit integer", none, or);
	else
		snprintf(buf, size,
			 "%s%san integer from %" PRId64 " to %" PRId64, none,
			 or, s->min, s->max);
	return buf;
}

/* "NAME must be an integer from MIN to MAX (got ...)": got in quotes
 * when it was text */
static int bad_integer(const struct channel_setting *s, const char *name,
		       const char *got, bool text, char *err, size_t errlen)
{
	char range[128];
	char buf[ECHO_MAX + 4];

	return util_fail(err, errlen, EINVAL, "%s must be %s (got %s%s%s)",
			 name, integer_range(s, range, sizeof(range)),
			 text ? "'" : "", util_shorten(got, buf, sizeof(buf)),
			 text ? "'" : "");
}

static int bad_word(const struct channel_setting *s, const char *name,
		    enum channel_syntax syntax, const char *got, char *err,
		    size_t errlen)
{
	char list[160];
	char buf[ECHO_MAX + 4];

	if (s->type == CHANNEL_SETTING_INTEGER)
		return bad_integer(s, name, got, true, err, errlen);
	return util_fail(err, errlen, EINVAL, "%s must be %s (got '%s')", name,
			 value_list(s, syntax, list, sizeof(list)),
			 util_shorten(got, buf, sizeof(buf)));
}

static int set_value(struct channel_spec *spec, const struct channel_setting *s,
		     int64_t v)
{
	store(spec, s, v);
	mark(spec, s);
	return 0;
}

/* an ENUM's word in syntax: its value into *v */
static bool find_word(const struct channel_setting *s,
		      enum channel_syntax syntax, bool any_case,
		      const char *word, int64_t *v)
{
	for (unsigned i = 0; i < s->nvalues; i++) {
		const char *w = syntax == CHANNEL_SYNTAX_CLI
				    ? s->values[i].cli
				    : s->values[i].config;

		if (w &&
		    (any_case ? strcasecmp(w, word) : strcmp(w, word)) == 0) {
			*v = s->values[i].value;
			return true;
		}
	}
	return false;
}

/* item[0..len) as the next of s's list; whole is what the user wrote
 * (the whole list), for messages */
static int add_item(struct channel_spec *spec, const struct channel_setting *s,
		    const char *item, size_t len, const char *whole,
		    const char *name, char *err, size_t errlen)
{
	char buf[ECHO_MAX + 4];
	char ***list = (char ***)field_at(spec, s);
	size_t *count = (size_t *)((char *)spec + s->count_offset);
	char **grown;

	if (len == 0)
		return util_fail(err, errlen, EINVAL,
				 "%s '%s' has an empty name", name,
				 util_shorten(whole, buf, sizeof(buf)));
	if (*count >= (size_t)s->max)
		return util_fail(err, errlen, EINVAL,
				 "%s: at most %" PRId64 " names", name, s->max);
	grown = realloc(*list, (*count + 1) * sizeof(*grown));
	if (!grown)
		return ENOMEM;
	*list = grown;
	grown[*count] = strndup(item, len);
	if (!grown[*count])
		return ENOMEM;
	(*count)++;
	mark(spec, s);
	return 0;
}

static void clear_list(struct channel_spec *spec,
		       const struct channel_setting *s)
{
	char ***list = (char ***)field_at(spec, s);
	size_t *count = (size_t *)((char *)spec + s->count_offset);

	for (size_t i = 0; i < *count; i++)
		free((*list)[i]);
	free(*list);
	*list = NULL;
	*count = 0;
}

static int set_string(struct channel_spec *spec,
		      const struct channel_setting *s, const char *text)
{
	char **p = (char **)field_at(spec, s);
	char *copy = strdup(text);

	if (!copy)
		return ENOMEM;
	free(*p);
	*p = copy;
	mark(spec, s);
	return 0;
}

/* "-5" or "12" within s's range */
static bool parse_integer(const struct channel_setting *s, const char *text,
			  int64_t *v)
{
	bool negative = text[0] == '-';
	uint64_t u;

	if (s->bytes) {
		if (util_parse_size(text, &u) != 0 || u > (uint64_t)INT64_MAX)
			return false;
		*v = (int64_t)u;
		return *v >= s->min && *v <= s->max;
	}
	if (util_parse_uint(negative ? text + 1 : text, 0,
			    negative ? (uint64_t)INT64_MAX + 1
				     : (uint64_t)INT64_MAX,
			    &u) != 0)
		return false;
	*v = negative ? (int64_t)(0 - u) : (int64_t)u;
	return *v >= s->min && *v <= s->max;
}

int channel_setting_parse(const struct channel_setting *s, const char *text,
			  const char *shown, struct channel_spec *spec,
			  char *err, size_t errlen)
{
	int64_t v;
	int rc;

	switch (s->type) {
	case CHANNEL_SETTING_FLAG:
		return set_value(spec, s, s->values[1].value);
	case CHANNEL_SETTING_ENUM:
		if (!find_word(s, CHANNEL_SYNTAX_CLI, true, text, &v))
			return bad_word(s, shown, CHANNEL_SYNTAX_CLI, text, err,
					errlen);
		return set_value(spec, s, v);
	case CHANNEL_SETTING_INTEGER:
		if (s->none_word && strcasecmp(text, s->none_word) == 0)
			return set_value(spec, s, s->none_value);
		if (!parse_integer(s, text, &v))
			return bad_integer(s, shown, text, true, err, errlen);
		return set_value(spec, s, v);
	case CHANNEL_SETTING_STRING:
		return set_string(spec, s, text);
	case CHANNEL_SETTING_LIST:
	default:
		clear_list(spec, s);
		for (const char *p = text;;) {
			size_t len = strcspn(p, ",");

			rc =
			    add_item(spec, s, p, len, text, shown, err, errlen);
			if (rc)
				return rc;
			if (!p[len])
				return 0;
			p += len + 1;
		}
	}
}

int channel_setting_set_word(const struct channel_setting *s, const char *word,
			     struct channel_spec *spec, char *err,
			     size_t errlen)
{
	int64_t v;

	switch (s->type) {
	case CHANNEL_SETTING_STRING:
		return set_string(spec, s, word);
	case CHANNEL_SETTING_LIST:
		return add_item(spec, s, word, strlen(word), word, s->field,
				err, errlen);
	case CHANNEL_SETTING_INTEGER:
		if (s->none_word && strcasecmp(word, s->none_word) == 0)
			return set_value(spec, s, s->none_value);
		if (s->bytes && parse_integer(s, word, &v))
			return set_value(spec, s, v);
		return bad_integer(s, s->field, word, true, err, errlen);
	case CHANNEL_SETTING_ENUM:
	case CHANNEL_SETTING_FLAG:
	default:
		if (!find_word(s, CHANNEL_SYNTAX_CONFIG, s->config_any_case,
			       word, &v))
			return bad_word(s, s->field, CHANNEL_SYNTAX_CONFIG,
					word, err, errlen);
		return set_value(spec, s, v);
	}
}

int channel_setting_set_integer(const struct channel_setting *s, int64_t v,
				struct channel_spec *spec, char *err,
				size_t errlen)
{
	char got[32];

	if (s->type != CHANNEL_SETTING_INTEGER)
		return channel_setting_bad_type(s, "a number", err, errlen);
	if (v < s->min || v > s->max) {
		snprintf(got, sizeof(got), "%" PRId64, v);
		return bad_integer(s, s->field, got, false, err, errlen);
	}
	return set_value(spec, s, v);
}

int channel_setting_bad_type(const struct channel_setting *s, const char *what,
			     char *err, size_t errlen)
{
	char list[160];

	switch (s->type) {
	case CHANNEL_SETTING_INTEGER:
		return util_fail(err, errlen, EINVAL, "%s must be %s, not %s",
				 s->field, integer_range(s, list, sizeof(list)),
				 what);
	case CHANNEL_SETTING_LIST:
		return util_fail(err, errlen, EINVAL,
				 "%s must be an array of strings, not %s",
				 s->field, what);
	case CHANNEL_SETTING_STRING:
		return util_fail(err, errlen, EINVAL,
				 "%s must be a string, not %s", s->field, what);
	default:
		return util_fail(
		    err, errlen, EINVAL, "%s must be %s, not %s", s->field,
		    value_list(s, CHANNEL_SYNTAX_CONFIG, list, sizeof(list)),
		    what);
	}
}

/* ---- the checks ---- */

/* whether spec's setting s meets the condition values (ANY_VALUE: given) */
static bool holds(const struct channel_spec *spec,
		  const struct channel_setting *s, unsigned values)
{
	int64_t v;

	if (values == ANY_VALUE)
		return channel_setting_given(spec, s);
	v = load(spec, s);
	return v >= 0 && v < 32 && (values & (1u << v));
}

/* how many leading bytes of b repeat a's, up to and with a space */
static size_t shared_words(const char *a, const char *b)
{
	size_t n = 0;

	for (size_t i = 0; a[i] && a[i] == b[i]; i++)
		if (a[i] == ' ')
			n = i + 1;
	return n;
}

/*
 * "--convert csv or libsvm": the setting at values, in syntax (each
 * value's own phrase, or "NAME WORD"; the words the first one has said
 * are not said again); for ANY_VALUE the name, and its METAVAR when
 * metavar.
 */
static void phrase(const struct channel_setting *s, unsigned values,
		   bool metavar, enum channel_syntax syntax, char *buf,
		   size_t size)
{
	char name[80];
	char one[160];
	char first[160];
	size_t off = 0;
	unsigned n = 0;

	buf[0] = '\0';
	channel_setting_name(s, syntax, name, sizeof(name));
	metavar = metavar && syntax == CHANNEL_SYNTAX_CLI && s->metavar;
	if (values == ANY_VALUE) {
		snprintf(buf, size, "%s%s%s", name, metavar ? " " : "",
			 metavar ? s->metavar : "");
		return;
	}
	for (unsigned i = 0; i < s->nvalues && off < size; i++) {
		const struct channel_setting_value *v = &s->values[i];
		const char *own = syntax == CHANNEL_SYNTAX_CLI
				      ? v->cli_phrase
				      : v->config_phrase;
		const char *word =
		    syntax == CHANNEL_SYNTAX_CLI ? v->cli : v->config;
		int k;

		if (!(values & (1u << v->value)))
			continue;
		if (own)
			snprintf(one, sizeof(one), "%s", own);
		else
			snprintf(one, sizeof(one), "%s %s", name,
				 word ? word : "?");
		if (n == 0)
			snprintf(first, sizeof(first), "%s", one);
		k = snprintf(buf + off, size - off, "%s%s", n ? " or " : "",
			     n ? one + shared_words(first, one) : one);
		if (k < 0)
			return;
		off += (size_t)k;
		n++;
	}
}

static bool word_is(const char *s, size_t len, const char *word)
{
	return len == strlen(word) && strncasecmp(s, word, len) == 0;
}

/* s[0..*len) without the spaces and tabs around it */
static const char *trim(const char *s, size_t *len)
{
	while (*len > 0 && (*s == ' ' || *s == '\t')) {
		s++;
		(*len)--;
	}
	while (*len > 0 && (s[*len - 1] == ' ' || s[*len - 1] == '\t'))
		(*len)--;
	return s;
}

/*
 * What ContentType ct gives a conversion to read: *format CSV or LIBSVM
 * from its MIME type (NONE when it is neither, compared without regard to
 * case or to whitespace around ';' and '='), and for CSV *label_column
 * from its label_size parameter (1, the default: column 0; 0: none).
 * Other parameters are ignored.  0, or EINVAL for another label_size.
 */
static int content_format(const char *ct, enum channel_convert_format *format,
			  int *label_column, char *err, size_t errlen)
{
	char buf[ECHO_MAX + 4];
	size_t len = strcspn(ct, ";");
	const char *type = trim(ct, &len);
	const char *at = ct + strcspn(ct, ";");

	*label_column = 0;
	if (word_is(type, len, "text/csv"))
		*format = CHANNEL_CONVERT_CSV;
	else if (word_is(type, len, "text/libsvm") ||
		 word_is(type, len, "text/x-libsvm"))
		*format = CHANNEL_CONVERT_LIBSVM;
	else
		*format = CHANNEL_CONVERT_NONE;
	if (*format != CHANNEL_CONVERT_CSV)
		return 0;
	while (*at == ';') {
		const char *item = at + 1;
		size_t ilen = strcspn(item, ";");
		size_t nlen = strcspn(item, "=");
		size_t vlen;
		const char *name;
		const char *val;

		at = item + ilen;
		if (nlen > ilen)
			nlen = ilen;
		val = item + nlen + (nlen < ilen);
		vlen = (size_t)(at - val);
		name = trim(item, &nlen);
		val = trim(val, &vlen);
		if (!word_is(name, nlen, "label_size"))
			continue;
		if (vlen >= 2 && val[0] == '"' && val[vlen - 1] == '"') {
			val++;
			vlen -= 2;
		}
		if (word_is(val, vlen, "0"))
			*label_column = CHANNEL_LABEL_NONE;
		else if (word_is(val, vlen, "1"))
			*label_column = 0;
		else
			return util_fail(
			    err, errlen, EINVAL,
			    "ContentType '%s': label_size must be 0 (no "
			    "label) or 1 (the label in the first column)",
			    util_shorten(ct, buf, sizeof(buf)));
	}
	return 0;
}

enum channel_record_format
channel_record_format(const struct channel_spec *spec)
{
	static const char *const recordio[] = {
	    "application/x-recordio", "application/x-recordio-protobuf"};
	static const char *const lines[] = {"text/csv",
					    "text/libsvm",
					    "text/x-libsvm",
					    "application/jsonlines",
					    "application/x-jsonlines",
					    "text/plain"};
	const char *type;
	size_t len;

	if (spec->wrapper == CHANNEL_WRAPPER_RECORDIO ||
	    spec->convert.format != CHANNEL_CONVERT_NONE)
		return CHANNEL_RECORDS_RECORDIO;
	if (!spec->content_type)
		return CHANNEL_RECORDS_NONE;
	len = strcspn(spec->content_type, ";");
	type = trim(spec->content_type, &len);
	for (size_t i = 0; i < COUNT(recordio); i++)
		if (word_is(type, len, recordio[i]))
			return CHANNEL_RECORDS_RECORDIO;
	for (size_t i = 0; i < COUNT(lines); i++)
		if (word_is(type, len, lines[i]))
			return CHANNEL_RECORDS_LINES;
	return CHANNEL_RECORDS_NONE;
}

/* S3pipeConvert: the format the spec's ContentType names */
static int resolve_content_type(struct channel_spec *spec, char *err,
				size_t errlen)
{
	const struct channel_setting *label =
	    channel_setting_find(CHANNEL_SYNTAX_CLI, "csv-label-column");
	enum channel_convert_format format;
	char buf[ECHO_MAX + 4];
	int label_size;
	int rc;

	if (!spec->content_type)
		return util_fail(err, errlen, EINVAL,
				 "S3pipeConvert needs ContentType text/csv or "
				 "text/libsvm (ContentType is missing)");
	rc = content_format(spec->content_type, &format, &label_size, err,
			    errlen);
	if (rc)
		return rc;
	if (format == CHANNEL_CONVERT_NONE)
		return util_fail(
		    err, errlen, EINVAL,
		    "S3pipeConvert needs ContentType text/csv or "
		    "text/libsvm (got '%s')",
		    util_shorten(spec->content_type, buf, sizeof(buf)));
	spec->convert.format = format;
	if (format == CHANNEL_CONVERT_CSV &&
	    !channel_setting_given(spec, label))
		spec->convert.label_column = label_size;
	return 0;
}

int channel_spec_check(struct channel_spec *spec, enum channel_syntax syntax,
		       char *err, size_t errlen)
{
	char a[160], b[160];
	int rc;

	if (err && errlen)
		err[0] = '\0';
	if (spec->convert.format == CHANNEL_CONVERT_CONTENT_TYPE) {
		rc = resolve_content_type(spec, err, errlen);
		if (rc)
			return rc;
	}
	for (unsigned i = 0; i < COUNT(channel_rules); i++) {
		const struct channel_rule *r = &channel_rules[i];
		const struct channel_setting *when = rule_setting(r->when);
		const struct channel_setting *needs = rule_setting(r->needs);

		if (!holds(spec, when, r->when_values) ||
		    holds(spec, needs, r->needs_values))
			continue;
		/* the value it has, not every value the rule names */
		phrase(when,
		       r->when_values == ANY_VALUE ? ANY_VALUE
						   : 1u << load(spec, when),
		       false, syntax, a, sizeof(a));
		phrase(needs, r->needs_values, true, syntax, b, sizeof(b));
		return util_fail(err, errlen, EINVAL, "%s needs %s%s", a, b,
				 r->why ? r->why : "");
	}
	spec->shuffle = channel_setting_given(
	    spec, channel_setting_find(CHANNEL_SYNTAX_CLI, "shuffle-seed"));
	if (spec->shuffle_buffer &&
	    channel_record_format(spec) == CHANNEL_RECORDS_NONE)
		return util_fail(
		    err, errlen, EINVAL,
		    "%s needs a %s that holds records (RecordIO or lines), "
		    "not '%s'",
		    syntax == CHANNEL_SYNTAX_CLI
			? "--shuffle-buffer"
			: "ShuffleConfig.S3pipeBufferSize",
		    syntax == CHANNEL_SYNTAX_CLI ? "--content-type"
						 : "ContentType",
		    util_shorten(spec->content_type, a, sizeof(a)));
	return 0;
}

uint32_t channel_spec_applicable(const struct channel_spec *spec)
{
	const struct channel_setting *type = channel_setting_find(
	    CHANNEL_SYNTAX_CONFIG, "DataSource.S3DataSource.S3DataType");
	uint32_t rows = (1u << channel_settings_count) - 1;

	for (unsigned i = 0; i < COUNT(channel_rules); i++) {
		const struct channel_rule *r = &channel_rules[i];
		const struct channel_setting *when = rule_setting(r->when);

		if (r->when_values == ANY_VALUE &&
		    rule_setting(r->needs) == type &&
		    !holds(spec, type, r->needs_values))
			rows &= ~(1u << row_index(when));
	}
	return rows;
}

const char *channel_setting_default_doc(const struct channel_setting *s)
{
	if (s->default_doc)
		return s->default_doc;
	for (unsigned i = 0; i < s->nvalues; i++)
		if (s->values[i].value == s->default_value && s->values[i].cli)
			return s->values[i].cli;
	return "";
}

int channel_spec_copy_settings(struct channel_spec *dst,
			       const struct channel_spec *src, uint32_t rows)
{
	for (unsigned i = 0; i < channel_settings_count; i++) {
		const struct channel_setting *s = &channel_settings[i];
		const size_t *count;
		int rc;

		if (!(rows & (1u << i)) || !channel_setting_given(src, s))
			continue;
		switch (s->type) {
		case CHANNEL_SETTING_STRING:
			rc = set_string(
			    dst, s,
			    *(char *const *)((const char *)src + s->offset));
			if (rc)
				return rc;
			break;
		case CHANNEL_SETTING_LIST:
			clear_list(dst, s);
			count = (const size_t *)((const char *)src +
						 s->count_offset);
			for (size_t j = 0; j < *count; j++) {
				const char *item =
				    (*(char **const *)((const char *)src +
						       s->offset))[j];

				rc = add_item(dst, s, item, strlen(item), item,
					      "", NULL, 0);
				if (rc)
					return rc;
			}
			break;
		default:
			set_value(dst, s, load(src, s));
			break;
		}
	}
	return 0;
}

void channel_spec_init(struct channel_spec *spec)
{
	memset(spec, 0, sizeof(*spec));
	for (unsigned i = 0; i < channel_settings_count; i++) {
		const struct channel_setting *s = &channel_settings[i];

		if (s->type != CHANNEL_SETTING_STRING &&
		    s->type != CHANNEL_SETTING_LIST)
			store(spec, s, s->default_value);
	}
}

bool channel_uri_kind(const char *uri, enum channel_data_type *type,
		      const char **s3uri)
{
	const struct channel_setting *s = channel_setting_find(
	    CHANNEL_SYNTAX_CONFIG, "DataSource.S3DataSource.S3DataType");

	*s3uri = uri;
	*type = CHANNEL_S3_PREFIX;
	for (unsigned i = 0; i < s->nvalues; i++) {
		const char *scheme = s->values[i].cli;
		size_t n = strlen(scheme);

		if (strncmp(uri, scheme, n) != 0)
			continue;
		*type = (enum channel_data_type)s->values[i].value;
		*s3uri = uri + n - strlen("s3://");
		return true;
	}
	return false;
}

/* ---- the rest ---- */

void channel_spec_free(struct channel_spec *spec)
{
	if (!spec)
		return;
	free(spec->uri);
	free(spec->bucket);
	free(spec->prefix);
	for (size_t i = 0; i < spec->nattributes; i++)
		free(spec->attributes[i]);
	free(spec->attributes);
	free(spec->content_type);
	memset(spec, 0, sizeof(*spec));
}

void channel_convert_conf_init(struct channel_convert_conf *conf,
			       enum channel_convert_format format)
{
	memset(conf, 0, sizeof(*conf));
	conf->format = format;
	conf->label_column = 0; /* CSV: the label first, as SageMaker's */
}

bool channel_name_valid(const char *name)
{
	size_t i;

	if (!name)
		return false;
	for (i = 0; name[i]; i++) {
		char c = name[i];

		if (i >= CHANNEL_NAME_MAX)
			return false;
		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '-' ||
		      c == '_'))
			return false;
	}
	return i > 0;
}
