/*
 * config: SageMaker's JSON files, read with jansson.
 *
 * - InputDataConfig (the Channel array CreateTrainingJob takes) becomes
 *   channel specs.  Each element is checked field by field in a fixed
 *   order (ChannelName first, so every later message names the channel;
 *   then InputMode, so a File channel is refused as such; then the data
 *   source, the enums, ShuffleConfig, ContentType, and last s3pipe's own
 *   S3pipe* fields, the conversion, which depend on RecordWrapperType and
 *   ContentType).  Unknown fields are ignored; a known field that is JSON
 *   null counts as absent.  A spec is built on the stack and copied into
 *   specs[] only when complete, so on error only the specs this call added
 *   need freeing.
 * - Conversion: "S3pipeConvert": "application/x-recordio-protobuf" asks
 *   for it, and the channel's ContentType (a MIME type, compared without
 *   regard to case or to whitespace around ';' and '=') says what the
 *   objects hold: text/csv (its label_size=0 means no label column) or
 *   text/libsvm (text/x-libsvm).  S3pipeCsvLabelColumn, S3pipeCsvHeader,
 *   S3pipeOnBadRow and S3pipeFeatureDim tune it; each is refused without
 *   S3pipeConvert, as the CSV ones are with LibSVM.  Values of S3pipe*
 *   fields may be written in any case; SageMaker's own are exact.
 * - resourceconfig.json gives this host's place among the hosts.
 * - inputdataconfig.json, the container's view of the channels, is written
 *   to a temporary file in the target directory, fsync'ed and renamed over
 *   the target, so a reader sees the old file or the new one, never half.
 *
 * Messages are one line for users: every one passes through util_clean_line(),
 * which replaces control characters (C0, DEL, C1, U+2028/9) and bytes that
 * are not UTF-8 with '?', since values and paths come from outside.  Echoed
 * values are cut at ECHO_MAX bytes.
 */
#include "config.h"

#include "channel/internal.h"
#include "s3/s3.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define CONFIG_FILE_MAX	      (16u << 20) /* bytes of a config file */
#define ECHO_MAX	      64 /* bytes of a value echoed in a message */
#define JSON_WHERE_MAX	      (JSON_ERROR_TEXT_LENGTH + 64) /* load_json() why */
#define PATH_ECHO_MAX	      256 /* bytes of a path echoed in a message */
#define CONTAINER_CONFIG_NAME "inputdataconfig.json"
#define RECORDIO_PROTOBUF     "application/x-recordio-protobuf"

#define S3SRC "DataSource.S3DataSource."

/* what a message is about: "channel 'train'", "channel 3 (the 3rd
 * element)", "resource config 'PATH'" */
struct parse {
	char *err;
	size_t errlen;
	char label[PATH_ECHO_MAX + 64];
};

/* "LABEL: MESSAGE" into p->err; returns EINVAL. */
static int bad(struct parse *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int bad(struct parse *p, const char *fmt, ...)
{
	va_list ap;
	int off;

	if (!p->err || p->errlen == 0)
		return EINVAL;
	off = snprintf(p->err, p->errlen, "%s: ", p->label);
	if (off >= 0 && (size_t)off < p->errlen) {
		va_start(ap, fmt);
		util_vfail(p->err + off, p->errlen - (size_t)off, EINVAL, fmt,
			   ap);
		va_end(ap);
	}
	util_clean_line(p->err); /* the label */
	return EINVAL;
}

static int no_memory(char *err, size_t errlen)
{
	return util_fail(err, errlen, ENOMEM, "out of memory");
}

/* s cut to at most size - 4 bytes (whole UTF-8 sequences) and "..." */
static const char *shown(const char *s, char *buf, size_t size)
{
	size_t len = strlen(s);
	size_t cut = size - 4;

	if (len < size)
		return s;
	while (cut > 0 && ((unsigned char)s[cut] & 0xc0) == 0x80)
		cut--;
	memcpy(buf, s, cut);
	memcpy(buf + cut, "...", 4);
	return buf;
}

static const char *ordinal(size_t n)
{
	if (n % 100 >= 11 && n % 100 <= 13)
		return "th";
	switch (n % 10) {
	case 1:
		return "st";
	case 2:
		return "nd";
	case 3:
		return "rd";
	default:
		return "th";
	}
}

static const char *type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "an object";
	case JSON_ARRAY:
		return "an array";
	case JSON_STRING:
		return "a string";
	case JSON_INTEGER:
	case JSON_REAL:
		return "a number";
	case JSON_TRUE:
		return "true";
	case JSON_FALSE:
		return "false";
	default:
		return "null";
	}
}

static const char *want_name(json_type t)
{
	switch (t) {
	case JSON_OBJECT:
		return "an object";
	case JSON_ARRAY:
		return "an array";
	case JSON_STRING:
		return "a string";
	case JSON_INTEGER:
		return "an integer";
	default:
		return "something else";
	}
}

/*
 * obj[key] into *out: NULL when absent or null, EINVAL naming path + key
 * when of another type than want.
 */
static int field(struct parse *p, json_t *obj, const char *path,
		 const char *key, json_type want, json_t **out)
{
	json_t *v = json_object_get(obj, key);

	*out = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (json_typeof(v) != want)
		return bad(p, "%s%s must be %s", path, key, want_name(want));
	*out = v;
	return 0;
}

/*
 * obj[key], a string that must be one of names[0..count) (in any case when
 * any_case): its index into *out, or -1 when absent.  EINVAL for another
 * type or value, echoing it.
 */
static int field_enum_case(struct parse *p, json_t *obj, const char *path,
			   const char *key, const char *const *names, int count,
			   bool any_case, int *out)
{
	char list[160];
	char buf[ECHO_MAX + 4];
	const char *s;
	json_t *v;
	size_t off = 0;
	int rc;
	int i;

	*out = -1;
	rc = field(p, obj, path, key, JSON_STRING, &v);
	if (rc || !v)
		return rc;
	s = json_string_value(v);
	for (i = 0; i < count; i++) {
		if ((any_case ? strcasecmp(s, names[i])
			      : strcmp(s, names[i])) == 0) {
			*out = i;
			return 0;
		}
	}
	list[0] = '\0';
	for (i = 0; i < count && off < sizeof(list); i++) {
		const char *sep = i == 0 ? "" : i == count - 1 ? " or " : ", ";
		int w = snprintf(list + off, sizeof(list) - off, "%s%s", sep,
				 names[i]);

		if (w < 0)
			break;
		off += (size_t)w;
	}
	return bad(p, "%s%s must be %s (got '%s')", path, key, list,
		   shown(s, buf, sizeof(buf)));
}

/* field_enum_case(), spelled exactly: SageMaker's own fields */
static int field_enum(struct parse *p, json_t *obj, const char *path,
		      const char *key, const char *const *names, int count,
		      int *out)
{
	return field_enum_case(p, obj, path, key, names, count, false, out);
}

/*
 * True when json_loadb() failed for want of memory.  jansson 2.14 says so
 * only sometimes: a failed allocation of a value leaves the error text
 * empty, and one of a string token is reported as an invalid token (that
 * one cannot be told from a real syntax error).
 */
static bool jansson_no_memory(const json_error_t *jerr)
{
	return json_error_code(jerr) == json_error_out_of_memory ||
	       jerr->text[0] == '\0';
}

/*
 * text parsed as JSON into *root: 0; ENOMEM; or EINVAL with where jansson
 * failed and why ("line L, column C: TEXT") in why[JSON_WHERE_MAX].
 */
static int load_json(const char *text, size_t len, json_t **root, char *why)
{
	json_error_t jerr;

	/* jansson sets the error code only with a message: zero it first */
	memset(&jerr, 0, sizeof(jerr));
	*root = json_loadb(text, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES,
			   &jerr);
	if (*root)
		return 0;
	if (jansson_no_memory(&jerr))
		return ENOMEM;
	if (jerr.line > 0)
		snprintf(why, JSON_WHERE_MAX, "line %d, column %d: %s",
			 jerr.line, jerr.column, jerr.text);
	else
		snprintf(why, JSON_WHERE_MAX, "%s", jerr.text);
	return EINVAL;
}

static bool blank(const char *text, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (text[i] != ' ' && text[i] != '\t' && text[i] != '\n' &&
		    text[i] != '\r')
			return false;
	return true;
}

static const char *const data_types[] = {"S3Prefix", "ManifestFile",
					 "AugmentedManifestFile"};
static const char *const distributions[] = {"FullyReplicated",
					    "ShardedByS3Key"};
static const char *const compressions[] = {"None", "Gzip"};
static const char *const wrappers[] = {"None", "RecordIO"};
static const char *const input_modes[] = {"Pipe", "File", "FastFile"};
static const char *const converts[] = {"None", RECORDIO_PROTOBUF};
static const char *const csv_headers[] = {"None", "Skip"};
static const char *const bad_rows[] = {"Fail", "Skip"};

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* AttributeNames of s3 into s, after s->data_type is known. */
static int parse_attributes(struct parse *p, json_t *s3, struct channel_spec *s)
{
	json_t *attrs;
	json_t *v;
	size_t count;
	size_t i;
	int rc;

	rc = field(p, s3, S3SRC, "AttributeNames", JSON_ARRAY, &attrs);
	if (rc)
		return rc;
	if (s->data_type != CHANNEL_AUGMENTED_MANIFEST_FILE) {
		if (attrs)
			return bad(p,
				   S3SRC "AttributeNames applies only to "
					 "AugmentedManifestFile (S3DataType "
					 "is %s)",
				   data_types[s->data_type]);
		return 0;
	}
	if (!attrs)
		return bad(p, S3SRC "AttributeNames is missing: an "
				    "AugmentedManifestFile channel needs the "
				    "names of the attributes to read");
	count = json_array_size(attrs);
	if (count == 0)
		return bad(p, S3SRC "AttributeNames is empty: an "
				    "AugmentedManifestFile channel needs the "
				    "names of the attributes to read");
	if (count > CHANNEL_ATTRIBUTES_MAX)
		return bad(p,
			   S3SRC "AttributeNames has %zu names: at most %d "
				 "are supported",
			   count, CHANNEL_ATTRIBUTES_MAX);
	s->attributes = calloc(count, sizeof(*s->attributes));
	if (!s->attributes)
		return no_memory(p->err, p->errlen);
	json_array_foreach(attrs, i, v)
	{
		if (!json_is_string(v) || json_string_length(v) == 0)
			return bad(p,
				   S3SRC "AttributeNames element %zu must be "
					 "a non-empty string",
				   i + 1);
		s->attributes[i] = strdup(json_string_value(v));
		if (!s->attributes[i])
			return no_memory(p->err, p->errlen);
		s->nattributes++;
	}
	return 0;
}

/* DataSource.S3DataSource of el into s. */
static int parse_source(struct parse *p, json_t *el, struct channel_spec *s)
{
	char msg[512];
	char buf[ECHO_MAX + 4];
	json_t *ds;
	json_t *s3;
	json_t *v;
	const char *uri;
	size_t plen;
	int k;
	int rc;

	rc = field(p, el, "", "DataSource", JSON_OBJECT, &ds);
	if (rc)
		return rc;
	if (!ds)
		return bad(p, "DataSource is missing");
	rc = field(p, ds, "DataSource.", "S3DataSource", JSON_OBJECT, &s3);
	if (rc)
		return rc;
	if (!s3) {
		if (json_object_get(ds, "FileSystemDataSource"))
			return bad(p, "only S3 data sources are supported "
				      "(DataSource has a FileSystemDataSource, "
				      "DataSource.S3DataSource is missing)");
		return bad(p, "only S3 data sources are supported "
			      "(DataSource.S3DataSource is missing)");
	}

	rc = field_enum(p, s3, S3SRC, "S3DataType", data_types,
			COUNT(data_types), &k);
	if (rc)
		return rc;
	if (k < 0)
		return bad(p, S3SRC "S3DataType is missing");
	s->data_type = (enum channel_data_type)k;

	rc = field(p, s3, S3SRC, "S3Uri", JSON_STRING, &v);
	if (rc)
		return rc;
	if (!v)
		return bad(p, S3SRC "S3Uri is missing");
	uri = json_string_value(v);
	rc = s3_uri_parse(uri, &s->bucket, &s->prefix, msg, sizeof(msg));
	if (rc == ENOMEM)
		return no_memory(p->err, p->errlen);
	if (rc)
		return bad(p, S3SRC "S3Uri: %s", msg);
	s->uri = strdup(uri);
	if (!s->uri)
		return no_memory(p->err, p->errlen);
	plen = strlen(s->prefix);
	if (s->data_type != CHANNEL_S3_PREFIX && plen == 0)
		return bad(p,
			   S3SRC "S3Uri '%s' names no object: for %s it is "
				 "the manifest's s3://BUCKET/KEY",
			   shown(uri, buf, sizeof(buf)),
			   data_types[s->data_type]);
	if (s->data_type != CHANNEL_S3_PREFIX && s->prefix[plen - 1] == '/')
		return bad(p,
			   S3SRC "S3Uri '%s' ends in '/': for %s it names "
				 "the manifest object, not a prefix",
			   shown(uri, buf, sizeof(buf)),
			   data_types[s->data_type]);

	rc = field_enum(p, s3, S3SRC, "S3DataDistributionType", distributions,
			COUNT(distributions), &k);
	if (rc)
		return rc;
	s->distribution =
	    k < 0 ? CHANNEL_FULLY_REPLICATED : (enum channel_distribution)k;
	return parse_attributes(p, s3, s);
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

static bool word_is(const char *s, size_t len, const char *word)
{
	return len == strlen(word) && strncasecmp(s, word, len) == 0;
}

/*
 * What ContentType ct gives a conversion to read: *format CSV or LIBSVM
 * from its MIME type (NONE when it is neither), and for CSV *label_column
 * from its label_size parameter (1, the default: column 0; 0: none).
 * Other parameters are ignored.  0, or EINVAL for another label_size.
 */
static int content_format(struct parse *p, const char *ct,
			  enum channel_convert_format *format,
			  int *label_column)
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
			return bad(p,
				   "ContentType '%s': label_size must be 0 (no "
				   "label) or 1 (the label in the first "
				   "column)",
				   shown(ct, buf, sizeof(buf)));
	}
	return 0;
}

/*
 * S3pipeCsvLabelColumn of el: a column from 0, or "none".  *out untouched
 * and *given false when absent.
 */
static int parse_label_column(struct parse *p, json_t *el, bool *given,
			      int *out)
{
	char buf[ECHO_MAX + 4];
	json_t *v = json_object_get(el, "S3pipeCsvLabelColumn");
	json_int_t i;

	*given = false;
	if (!v || json_is_null(v))
		return 0;
	if (json_is_string(v)) {
		if (strcasecmp(json_string_value(v), "none") != 0)
			return bad(
			    p,
			    "S3pipeCsvLabelColumn must be none or an "
			    "integer from 0 to %d (got '%s')",
			    CHANNEL_LABEL_COLUMN_MAX,
			    shown(json_string_value(v), buf, sizeof(buf)));
		*out = CHANNEL_LABEL_NONE;
	} else if (json_is_integer(v)) {
		i = json_integer_value(v);
		if (i < 0 || i > CHANNEL_LABEL_COLUMN_MAX)
			return bad(
			    p,
			    "S3pipeCsvLabelColumn must be none or an "
			    "integer from 0 to %d (got %" JSON_INTEGER_FORMAT
			    ")",
			    CHANNEL_LABEL_COLUMN_MAX, i);
		*out = (int)i;
	} else {
		return bad(p,
			   "S3pipeCsvLabelColumn must be none or an integer "
			   "from 0 to %d, not %s",
			   CHANNEL_LABEL_COLUMN_MAX, type_name(v));
	}
	*given = true;
	return 0;
}

/* The S3pipe* fields of el into s->convert, once s->wrapper and
 * s->content_type are in. */
static int parse_convert(struct parse *p, json_t *el, struct channel_spec *s)
{
	char buf[ECHO_MAX + 4];
	enum channel_convert_format format;
	const char *stray;
	json_t *dim;
	bool label_given;
	int label_column = 0;
	int label_size;
	int convert;
	int header;
	int bad_row;
	int rc;

	rc = field_enum_case(p, el, "", "S3pipeConvert", converts,
			     COUNT(converts), true, &convert);
	if (rc)
		return rc;
	rc = parse_label_column(p, el, &label_given, &label_column);
	if (rc)
		return rc;
	rc = field_enum_case(p, el, "", "S3pipeCsvHeader", csv_headers,
			     COUNT(csv_headers), true, &header);
	if (rc)
		return rc;
	rc = field_enum_case(p, el, "", "S3pipeOnBadRow", bad_rows,
			     COUNT(bad_rows), true, &bad_row);
	if (rc)
		return rc;
	rc = field(p, el, "", "S3pipeFeatureDim", JSON_INTEGER, &dim);
	if (rc)
		return rc;
	if (dim &&
	    (json_integer_value(dim) < 1 ||
	     (uint64_t)json_integer_value(dim) > CHANNEL_FEATURE_DIM_MAX))
		return bad(p,
			   "S3pipeFeatureDim must be an integer from 1 to "
			   "%llu (got %" JSON_INTEGER_FORMAT ")",
			   (unsigned long long)CHANNEL_FEATURE_DIM_MAX,
			   json_integer_value(dim));

	if (convert <= 0) {
		stray = label_given    ? "S3pipeCsvLabelColumn"
			: header >= 0  ? "S3pipeCsvHeader"
			: bad_row >= 0 ? "S3pipeOnBadRow"
			: dim	       ? "S3pipeFeatureDim"
				       : NULL;
		if (stray)
			return bad(p,
				   "%s needs S3pipeConvert " RECORDIO_PROTOBUF,
				   stray);
		return 0; /* s->convert stays zero: no conversion */
	}
	if (s->wrapper == CHANNEL_WRAPPER_RECORDIO)
		return bad(p, "S3pipeConvert writes RecordIO records already: "
			      "leave RecordWrapperType at None");
	if (!s->content_type)
		return bad(p, "S3pipeConvert needs ContentType text/csv or "
			      "text/libsvm (ContentType is missing)");
	rc = content_format(p, s->content_type, &format, &label_size);
	if (rc)
		return rc;
	if (format == CHANNEL_CONVERT_NONE)
		return bad(p,
			   "S3pipeConvert needs ContentType text/csv or "
			   "text/libsvm (got '%s')",
			   shown(s->content_type, buf, sizeof(buf)));
	if (format == CHANNEL_CONVERT_LIBSVM) {
		stray = label_given   ? "S3pipeCsvLabelColumn"
			: header >= 0 ? "S3pipeCsvHeader"
				      : NULL;
		if (stray)
			return bad(p,
				   "%s applies to CSV only (ContentType is "
				   "'%s')",
				   stray,
				   shown(s->content_type, buf, sizeof(buf)));
		if (!dim)
			return bad(p,
				   "S3pipeConvert of ContentType '%s' needs "
				   "S3pipeFeatureDim, the number of features "
				   "(the tensor's shape)",
				   shown(s->content_type, buf, sizeof(buf)));
	}
	channel_convert_conf_init(&s->convert, format);
	if (format == CHANNEL_CONVERT_CSV)
		s->convert.label_column =
		    label_given ? label_column : label_size;
	s->convert.header_skip = header == 1;
	s->convert.bad_row_skip = bad_row == 1;
	s->convert.feature_dim = dim ? (uint64_t)json_integer_value(dim) : 0;
	return 0;
}

/*
 * Element pos (1-based) of the array, el, into *out.  specs[0..nprev)
 * are the specs before it: nold from earlier calls, then this call's.
 */
static int parse_channel(struct parse *p, json_t *el, size_t pos,
			 const struct channel_spec *specs, unsigned nprev,
			 unsigned nold, struct channel_spec *out)
{
	struct channel_spec s;
	char buf[ECHO_MAX + 4];
	json_t *v;
	json_t *shuffle;
	const char *name;
	int k;
	int rc;

	memset(&s, 0, sizeof(s));
	snprintf(p->label, sizeof(p->label), "channel %zu (the %zu%s element)",
		 pos, pos, ordinal(pos));
	if (!json_is_object(el)) {
		return util_fail(p->err, p->errlen, EINVAL,
				 "%s must be a JSON object, not %s", p->label,
				 type_name(el));
	}

	rc = field(p, el, "", "ChannelName", JSON_STRING, &v);
	if (rc)
		goto fail;
	if (!v) {
		rc = bad(p, "ChannelName is missing");
		goto fail;
	}
	name = json_string_value(v);
	if (!channel_name_valid(name)) {
		rc = bad(p,
			 "ChannelName '%s' is not a valid channel name: use 1 "
			 "to %d of A-Z a-z 0-9 . - _",
			 shown(name, buf, sizeof(buf)), CHANNEL_NAME_MAX);
		goto fail;
	}
	for (unsigned i = 0; i < nprev; i++) {
		if (strcmp(specs[i].name, name) != 0)
			continue;
		if (i < nold)
			rc = util_fail(p->err, p->errlen, EINVAL,
				       "channel '%s' is already defined", name);
		else
			rc = util_fail(
			    p->err, p->errlen, EINVAL,
			    "channel '%s' appears twice (the %u%s and "
			    "%zu%s elements)",
			    name, i - nold + 1, ordinal(i - nold + 1), pos,
			    ordinal(pos));
		goto fail;
	}
	memcpy(s.name, name, strlen(name) + 1);
	snprintf(p->label, sizeof(p->label), "channel '%s'", name);

	rc = field_enum(p, el, "", "InputMode", input_modes, COUNT(input_modes),
			&k);
	if (rc)
		goto fail;
	if (k > 0) {
		rc = bad(p,
			 "InputMode %s is not supported: s3pipe serves Pipe "
			 "channels",
			 input_modes[k]);
		goto fail;
	}

	rc = parse_source(p, el, &s);
	if (rc)
		goto fail;

	rc = field_enum(p, el, "", "CompressionType", compressions,
			COUNT(compressions), &k);
	if (rc)
		goto fail;
	s.compression =
	    k < 0 ? CHANNEL_COMPRESSION_NONE : (enum channel_compression)k;

	rc = field_enum(p, el, "", "RecordWrapperType", wrappers,
			COUNT(wrappers), &k);
	if (rc)
		goto fail;
	s.wrapper = k < 0 ? CHANNEL_WRAPPER_NONE : (enum channel_wrapper)k;

	rc = field(p, el, "", "ShuffleConfig", JSON_OBJECT, &shuffle);
	if (rc)
		goto fail;
	if (shuffle) {
		rc = field(p, shuffle, "ShuffleConfig.", "Seed", JSON_INTEGER,
			   &v);
		if (rc)
			goto fail;
		if (!v) {
			rc = bad(p, "ShuffleConfig.Seed is missing");
			goto fail;
		}
		s.shuffle = true;
		s.seed = (int64_t)json_integer_value(v);
	}

	rc = field(p, el, "", "ContentType", JSON_STRING, &v);
	if (rc)
		goto fail;
	if (v) {
		s.content_type = strdup(json_string_value(v));
		if (!s.content_type) {
			rc = no_memory(p->err, p->errlen);
			goto fail;
		}
	}

	rc = parse_convert(p, el, &s);
	if (rc)
		goto fail;

	*out = s;
	return 0;
fail:
	channel_spec_free(&s);
	return rc;
}

int channel_config_parse(const char *text, size_t len,
			 struct channel_spec *specs, unsigned max, unsigned *n,
			 char *err, size_t errlen)
{
	struct parse p = {.err = err, .errlen = errlen};
	char why[JSON_WHERE_MAX];
	json_t *root = NULL;
	json_t *el;
	unsigned start = *n;
	unsigned added = 0;
	unsigned room = start < max ? max - start : 0;
	size_t count;
	size_t i;
	int rc;

	if (err && errlen)
		err[0] = '\0';
	if (!text || blank(text, len)) {
		return util_fail(
		    err, errlen, EINVAL,
		    "input data config is empty: expected a JSON array of "
		    "channels");
	}
	rc = load_json(text, len, &root, why);
	if (rc == ENOMEM)
		return no_memory(err, errlen);
	if (rc)
		return util_fail(err, errlen, EINVAL,
				 "input data config is not valid JSON: %s",
				 why);
	if (!json_is_array(root)) {
		rc = util_fail(
		    err, errlen, EINVAL,
		    "input data config must be a JSON array of channels, "
		    "not %s",
		    type_name(root));
		goto fail;
	}
	count = json_array_size(root);
	if (count == 0) {
		rc = util_fail(err, errlen, EINVAL,
			       "input data config has no channels");
		goto fail;
	}
	if (count > room) {
		if (start == 0)
			rc = util_fail(
			    err, errlen, EINVAL,
			    "input data config has %zu channels: at most "
			    "%u are supported",
			    count, max);
		else
			rc = util_fail(
			    err, errlen, EINVAL,
			    "input data config has %zu channels: only %u "
			    "more fit beside the %u already defined",
			    count, room, start);
		goto fail;
	}
	json_array_foreach(root, i, el)
	{
		rc = parse_channel(&p, el, i + 1, specs, start + added, start,
				   &specs[start + added]);
		if (rc)
			goto fail;
		added++;
	}
	json_decref(root);
	*n = start + added;
	return 0;
fail:
	while (added > 0)
		channel_spec_free(&specs[start + --added]);
	json_decref(root);
	return rc;
}

/*
 * The whole file at path, at most CONFIG_FILE_MAX bytes, into *out (owned
 * by the caller, NUL-terminated) and *outlen.  what names the file in
 * messages.  0, EINVAL or ENOMEM.
 */
static int read_file(const char *path, const char *what, char **out,
		     size_t *outlen, char *err, size_t errlen)
{
	char pbuf[PATH_ECHO_MAX + 4];
	char ebuf[128];
	struct stat st;
	char *buf = NULL;
	size_t len = 0;
	size_t cap;
	ssize_t r;
	int fd = -1;
	int rc;

	*out = NULL;
	*outlen = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) != 0) {
		rc = errno;
		goto unreadable;
	}
	if (S_ISREG(st.st_mode) && st.st_size > (off_t)CONFIG_FILE_MAX)
		goto too_large;
	cap = S_ISREG(st.st_mode) && st.st_size > 0 ? (size_t)st.st_size + 1
						    : 4096;
	buf = malloc(cap);
	if (!buf)
		goto no_mem;
	for (;;) {
		if (len == cap) {
			size_t ncap = cap * 2 > CONFIG_FILE_MAX + 1
					  ? CONFIG_FILE_MAX + 1
					  : cap * 2;
			char *nbuf = realloc(buf, ncap);

			if (!nbuf)
				goto no_mem;
			buf = nbuf;
			cap = ncap;
		}
		r = read(fd, buf + len, cap - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = errno;
			goto unreadable;
		}
		if (r == 0)
			break;
		len += (size_t)r;
		if (len > CONFIG_FILE_MAX)
			goto too_large;
	}
	close(fd);
	if (len == cap) {
		char *nbuf = realloc(buf, len + 1);

		if (!nbuf) {
			free(buf);
			return no_memory(err, errlen);
		}
		buf = nbuf;
	}
	buf[len] = '\0';
	*out = buf;
	*outlen = len;
	return 0;

unreadable:
	rc = util_fail(err, errlen, EINVAL, "cannot read %s '%s': %s", what,
		       shown(path, pbuf, sizeof(pbuf)),
		       util_strerror(rc, ebuf, sizeof(ebuf)));
	goto fail;
too_large:
	rc = util_fail(err, errlen, EINVAL,
		       "%s '%s' is larger than %u MiB: refusing to read it",
		       what, shown(path, pbuf, sizeof(pbuf)),
		       CONFIG_FILE_MAX >> 20);
	goto fail;
no_mem:
	rc = no_memory(err, errlen);
fail:
	if (fd >= 0)
		close(fd);
	free(buf);
	return rc;
}

int channel_config_load(const char *path, struct channel_spec *specs,
			unsigned max, unsigned *n, char *err, size_t errlen)
{
	char *text = NULL;
	size_t len;
	int rc;

	rc = read_file(path, "input data config", &text, &len, err, errlen);
	if (rc)
		return rc;
	rc = channel_config_parse(text, len, specs, max, n, err, errlen);
	free(text);
	return rc;
}

int channel_resource_config_load(const char *path, struct channel_host *host,
				 char *err, size_t errlen)
{
	struct parse p = {.err = err, .errlen = errlen};
	char pbuf[PATH_ECHO_MAX + 4];
	char buf[ECHO_MAX + 4];
	char why[JSON_WHERE_MAX];
	json_t *root = NULL;
	json_t *seen = NULL;
	json_t *hosts;
	json_t *v;
	const char *current;
	char *text = NULL;
	size_t len;
	size_t count;
	size_t i;
	size_t index = 0;
	bool found = false;
	int rc;

	if (err && errlen)
		err[0] = '\0';
	snprintf(p.label, sizeof(p.label), "resource config '%s'",
		 shown(path, pbuf, sizeof(pbuf)));
	rc = read_file(path, "resource config", &text, &len, err, errlen);
	if (rc)
		return rc;
	if (blank(text, len)) {
		rc = bad(&p, "the file is empty");
		goto fail;
	}
	rc = load_json(text, len, &root, why);
	if (rc == ENOMEM)
		rc = no_memory(err, errlen);
	else if (rc)
		rc = bad(&p, "not valid JSON: %s", why);
	if (rc)
		goto fail;
	if (!json_is_object(root)) {
		rc = bad(&p, "must be a JSON object, not %s", type_name(root));
		goto fail;
	}

	rc = field(&p, root, "", "current_host", JSON_STRING, &v);
	if (rc)
		goto fail;
	if (!v) {
		rc = bad(&p, "current_host is missing");
		goto fail;
	}
	if (json_string_length(v) == 0) {
		rc = bad(&p, "current_host is empty");
		goto fail;
	}
	current = json_string_value(v);

	rc = field(&p, root, "", "hosts", JSON_ARRAY, &hosts);
	if (rc)
		goto fail;
	if (!hosts) {
		rc = bad(&p, "hosts is missing");
		goto fail;
	}
	count = json_array_size(hosts);
	if (count == 0) {
		rc = bad(&p, "hosts is empty");
		goto fail;
	}
	if (count > UINT_MAX) {
		rc = bad(&p, "hosts has %zu names: too many", count);
		goto fail;
	}
	seen = json_object();
	if (!seen) {
		rc = no_memory(err, errlen);
		goto fail;
	}
	json_array_foreach(hosts, i, v)
	{
		const char *h;

		if (!json_is_string(v) || json_string_length(v) == 0) {
			rc = bad(&p,
				 "hosts element %zu must be a non-empty "
				 "string",
				 i + 1);
			goto fail;
		}
		h = json_string_value(v);
		if (json_object_get(seen, h)) {
			rc = bad(&p, "host '%s' is listed twice in hosts",
				 shown(h, buf, sizeof(buf)));
			goto fail;
		}
		if (json_object_set_new(seen, h, json_true()) != 0) {
			rc = no_memory(err, errlen);
			goto fail;
		}
		if (!found && strcmp(h, current) == 0) {
			found = true;
			index = i;
		}
	}
	if (!found) {
		rc = bad(&p, "current_host '%s' is not one of the %zu hosts",
			 shown(current, buf, sizeof(buf)), count);
		goto fail;
	}
	host->index = (unsigned)index;
	host->count = (unsigned)count;
	rc = 0;
fail:
	json_decref(seen);
	json_decref(root);
	free(text);
	return rc;
}

/*
 * spec as the container sees it: {"TrainingInputMode": "Pipe", ...}.  A
 * converted channel holds protobuf RecordIO whatever its objects hold, so
 * that is its ContentType, and its RecordWrapperType is None.
 */
static int container_channel(const struct channel_spec *s, json_t **out,
			     char *err, size_t errlen)
{
	bool converted = s->convert.format != CHANNEL_CONVERT_NONE;
	const char *content_type =
	    converted ? RECORDIO_PROTOBUF : s->content_type;
	json_t *ch = NULL;
	json_t *ct = NULL;

	*out = NULL;
	if (content_type && !util_utf8_valid(content_type)) {
		return util_fail(err, errlen, EINVAL,
				 "channel '%s': ContentType is not UTF-8",
				 s->name);
	}
	ch = json_object();
	if (!ch)
		goto no_mem;
	if (json_object_set_new(ch, "TrainingInputMode", json_string("Pipe")))
		goto no_mem;
	if (json_object_set_new(
		ch, "S3DistributionType",
		json_string(s->distribution == CHANNEL_SHARDED_BY_S3_KEY
				? "ShardedByS3Key"
				: "FullyReplicated")))
		goto no_mem;
	if (json_object_set_new(
		ch, "RecordWrapperType",
		json_string(s->wrapper == CHANNEL_WRAPPER_RECORDIO && !converted
				? "RecordIO"
				: "None")))
		goto no_mem;
	if (content_type) {
		ct = json_string(content_type);
		if (!ct || json_object_set_new(ch, "ContentType", ct))
			goto no_mem;
	}
	*out = ch;
	return 0;
no_mem:
	json_decref(ch);
	return no_memory(err, errlen);
}

int channel_container_config_write(const char *dir,
				   const struct channel_spec *specs, unsigned n,
				   char *err, size_t errlen)
{
	char pbuf[PATH_ECHO_MAX + 4];
	char ebuf[128];
	char target[PATH_MAX];
	struct stat st;
	json_t *root = NULL;
	json_t *ch;
	char *text = NULL;
	const char *d;
	int w;
	int rc;

	if (err && errlen)
		err[0] = '\0';
	d = shown(dir, pbuf, sizeof(pbuf));
	if (stat(dir, &st) != 0) {
		rc = errno;
		return util_fail(
		    err, errlen, rc,
		    "cannot write the container config: directory '%s': "
		    "%s",
		    d, util_strerror(rc, ebuf, sizeof(ebuf)));
	}
	if (!S_ISDIR(st.st_mode)) {
		return util_fail(
		    err, errlen, ENOTDIR,
		    "cannot write the container config: '%s' is not a "
		    "directory",
		    d);
	}
	/* (room for the temporary file's suffix too) */
	w = snprintf(target, sizeof(target), "%s/%s", dir,
		     CONTAINER_CONFIG_NAME);
	if (w < 0 || (size_t)w + sizeof(".XXXXXX") > sizeof(target)) {
		return util_fail(
		    err, errlen, ENAMETOOLONG,
		    "cannot write the container config: directory name "
		    "'%s' is too long",
		    d);
	}

	root = json_object();
	if (!root) {
		rc = no_memory(err, errlen);
		goto fail;
	}
	for (unsigned i = 0; i < n; i++) {
		if (!channel_name_valid(specs[i].name)) {
			rc = util_fail(
			    err, errlen, EINVAL,
			    "cannot write the container config: invalid "
			    "channel name '%.64s'",
			    specs[i].name);
			goto fail;
		}
		if (json_object_get(root, specs[i].name)) {
			rc = util_fail(
			    err, errlen, EINVAL,
			    "cannot write the container config: channel "
			    "'%s' appears twice",
			    specs[i].name);
			goto fail;
		}
		rc = container_channel(&specs[i], &ch, err, errlen);
		if (rc)
			goto fail;
		if (json_object_set_new(root, specs[i].name, ch)) {
			rc = no_memory(err, errlen);
			goto fail;
		}
	}
	text = json_dumps(root, JSON_INDENT(4));
	if (!text) {
		rc = no_memory(err, errlen);
		goto fail;
	}

	/* mode 0644: the training code may run as another user */
	rc = util_write_text_file(target, text, 0644);
	if (rc)
		util_fail(err, errlen, rc, "cannot write '%s/%s': %s", d,
			  CONTAINER_CONFIG_NAME,
			  util_strerror(rc, ebuf, sizeof(ebuf)));
fail:
	free(text);
	json_decref(root);
	return rc;
}
