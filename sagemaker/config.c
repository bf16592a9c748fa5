/*
 * config: SageMaker's JSON files, read and written with jansson.
 *
 * - InputDataConfig (the Channel array CreateTrainingJob takes) becomes
 *   channel specs.  Each element is read in a fixed order: ChannelName
 *   first, so every later message names the channel; then InputMode, so a
 *   File channel is refused as such (Pipe and FastFile are the table's);
 *   then DataSource.S3DataSource; then every row of channel_settings[]
 *   that has a field, in the table's order (a dotted field is looked up
 *   through its objects); then S3Uri, which
 *   the data type decides how to read; last channel_spec_check(), which
 *   checks the settings together.  Unknown fields are ignored; a known
 *   field that is JSON null counts as absent.  A spec is built on the
 *   stack and copied into specs[] only when complete, so on error only the
 *   specs this call added need freeing.
 * - resourceconfig.json gives this host's place among the hosts.
 * - inputdataconfig.json, the container's view of the channels, is written
 *   through util_write_text_file(): a reader sees the old file or the new
 *   one, never half.
 *
 * Messages are one line for users: every one passes through util_clean_line(),
 * which replaces control characters (C0, DEL, C1, U+2028/9) and bytes that
 * are not UTF-8 with '?', since values and paths come from outside.  Echoed
 * values are cut at ECHO_MAX bytes.
 */
#include "config.h"

#include "sagemaker/sagemaker.h"
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

/* "an object", "a string", ...: what a JSON value of type t is; an
 * integer is "a number" unless wanted (what a field must be) */
static const char *type_word(json_type t, bool wanted)
{
	switch (t) {
	case JSON_OBJECT:
		return "an object";
	case JSON_ARRAY:
		return "an array";
	case JSON_STRING:
		return "a string";
	case JSON_INTEGER:
		return wanted ? "an integer" : "a number";
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

static const char *type_name(const json_t *v)
{
	return type_word(json_typeof(v), false);
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
		return bad(p, "%s%s must be %s", path, key,
			   type_word(want, true));
	*out = v;
	return 0;
}

/* field(), and "PATHKEY is missing" when absent */
static int required(struct parse *p, json_t *obj, const char *path,
		    const char *key, json_type want, json_t **out)
{
	int rc = field(p, obj, path, key, want, out);

	if (!rc && !*out)
		rc = bad(p, "%s%s is missing", path, key);
	return rc;
}

/*
 * obj[key], a string that must be one of names[0..count), spelled exactly:
 * its index into *out, or -1 when absent.  EINVAL for another type or
 * value, echoing it.
 */
static int field_enum(struct parse *p, json_t *obj, const char *path,
		      const char *key, const char *const *names, int count,
		      int *out)
{
	char buf[ECHO_MAX + 4];
	const char *s;
	json_t *v;
	int rc;

	*out = -1;
	rc = field(p, obj, path, key, JSON_STRING, &v);
	if (rc || !v)
		return rc;
	s = json_string_value(v);
	for (int i = 0; i < count; i++) {
		if (strcmp(s, names[i]) == 0) {
			*out = i;
			return 0;
		}
	}
	return bad(p, "%s%s must be %s, %s or %s (got '%s')", path, key,
		   names[0], names[1], names[2],
		   util_shorten(s, buf, sizeof(buf)));
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

static const char *const input_modes[] = {"Pipe", "File", "FastFile"};

/* what a spec function said, prefixed with the label */
static int labelled(struct parse *p, int rc)
{
	char msg[512];

	if (rc == ENOMEM)
		return no_memory(p->err, p->errlen);
	if (!p->err || p->errlen == 0)
		return rc;
	snprintf(msg, sizeof(msg), "%s", p->err);
	return bad(p, "%s", msg);
}

/*
 * The value at el's dotted path (*out NULL when it or an object on the
 * way is absent or null; *parent whether the object holding it is there).
 * EINVAL when something on the way is not an object.
 */
static int lookup(struct parse *p, json_t *el, const char *path, json_t **out,
		  bool *parent)
{
	char prefix[128];
	const char *at = path;
	json_t *cur = el;

	*out = NULL;
	*parent = true;
	for (;;) {
		size_t len = strcspn(at, ".");
		char key[64];
		json_t *v;

		snprintf(key, sizeof(key), "%.*s", (int)len, at);
		v = json_object_get(cur, key);
		if (!v || json_is_null(v)) {
			*parent = at[len] == '\0';
			return 0;
		}
		if (at[len] == '\0') {
			*out = v;
			return 0;
		}
		if (!json_is_object(v)) {
			snprintf(prefix, sizeof(prefix), "%.*s",
				 (int)(at + len - path), path);
			return bad(p, "%s must be an object", prefix);
		}
		cur = v;
		at += len + 1;
	}
}

/* A LIST setting from a JSON array of non-empty strings. */
static int read_list(struct parse *p, const struct channel_setting *set,
		     json_t *v, struct channel_spec *s)
{
	json_t *item;
	size_t i;

	if (!json_is_array(v))
		return labelled(p, channel_setting_bad_type(set, type_name(v),
							    p->err, p->errlen));
	if (json_array_size(v) < (size_t)set->min)
		return bad(p, "%s is empty", set->field);
	json_array_foreach(v, i, item)
	{
		if (!json_is_string(item) || json_string_length(item) == 0)
			return bad(p,
				   "%s element %zu must be a non-empty "
				   "string",
				   set->field, i + 1);
		if (channel_setting_set_word(set, json_string_value(item), s,
					     p->err, p->errlen))
			return labelled(p, EINVAL);
	}
	return 0;
}

/* One setting of el into s, as the table says. */
static int read_setting(struct parse *p, const struct channel_setting *set,
			json_t *el, struct channel_spec *s)
{
	bool parent;
	json_t *v;
	int rc;

	rc = lookup(p, el, set->field, &v, &parent);
	if (rc)
		return rc;
	if (!v && (set->config_required || (set->needs_parent_field && parent)))
		return bad(p, "%s is missing", set->field);
	if (!v)
		return 0;
	if (set->type == CHANNEL_SETTING_LIST)
		return read_list(p, set, v, s);
	if (json_is_string(v))
		rc = channel_setting_set_word(set, json_string_value(v), s,
					      p->err, p->errlen);
	else if (json_is_integer(v) && set->type == CHANNEL_SETTING_INTEGER)
		rc = channel_setting_set_integer(set, json_integer_value(v), s,
						 p->err, p->errlen);
	else
		rc = channel_setting_bad_type(set, type_name(v), p->err,
					      p->errlen);
	return rc ? labelled(p, rc) : 0;
}

/* DataSource.S3DataSource.S3Uri of el into s, once s's data type is in. */
static int read_uri(struct parse *p, json_t *el, struct channel_spec *s)
{
	const char *type = s->data_type == CHANNEL_MANIFEST_FILE
			       ? "ManifestFile"
			       : "AugmentedManifestFile";
	char msg[512];
	char buf[ECHO_MAX + 4];
	const char *uri;
	bool parent;
	json_t *v;
	size_t plen;
	int rc;

	rc = lookup(p, el, S3SRC "S3Uri", &v, &parent);
	if (rc)
		return rc;
	if (!v)
		return bad(p, S3SRC "S3Uri is missing");
	if (!json_is_string(v))
		return bad(p, S3SRC "S3Uri must be a string");
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
			   util_shorten(uri, buf, sizeof(buf)), type);
	if (s->data_type != CHANNEL_S3_PREFIX && s->prefix[plen - 1] == '/')
		return bad(p,
			   S3SRC "S3Uri '%s' ends in '/': for %s it names "
				 "the manifest object, not a prefix",
			   util_shorten(uri, buf, sizeof(buf)), type);
	return 0;
}

/* The data source must be S3's. */
static int check_source(struct parse *p, json_t *el)
{
	json_t *ds;
	json_t *s3;
	int rc;

	rc = required(p, el, "", "DataSource", JSON_OBJECT, &ds);
	if (rc)
		return rc;
	rc = field(p, ds, "DataSource.", "S3DataSource", JSON_OBJECT, &s3);
	if (rc || s3)
		return rc;
	if (json_object_get(ds, "FileSystemDataSource"))
		return bad(p, "only S3 data sources are supported "
			      "(DataSource has a FileSystemDataSource, "
			      "DataSource.S3DataSource is missing)");
	return bad(p, "only S3 data sources are supported "
		      "(DataSource.S3DataSource is missing)");
}

/* ChannelName of el, checked against specs[0..nprev), into s->name. */
static int read_name(struct parse *p, json_t *el, size_t pos,
		     const struct channel_spec *specs, unsigned nprev,
		     unsigned nold, struct channel_spec *s)
{
	char buf[ECHO_MAX + 4];
	const char *name;
	json_t *v;
	int rc;

	rc = required(p, el, "", "ChannelName", JSON_STRING, &v);
	if (rc)
		return rc;
	name = json_string_value(v);
	if (!channel_name_valid(name))
		return bad(p,
			   "ChannelName '%s' is not a valid channel name: use "
			   "1 to %d of A-Z a-z 0-9 . - _",
			   util_shorten(name, buf, sizeof(buf)),
			   CHANNEL_NAME_MAX);
	for (unsigned i = 0; i < nprev; i++) {
		if (strcmp(specs[i].name, name) != 0)
			continue;
		if (i < nold)
			return util_fail(p->err, p->errlen, EINVAL,
					 "channel '%s' is already defined",
					 name);
		return util_fail(p->err, p->errlen, EINVAL,
				 "channel '%s' appears twice (the %u%s and "
				 "%zu%s elements)",
				 name, i - nold + 1, ordinal(i - nold + 1), pos,
				 ordinal(pos));
	}
	memcpy(s->name, name, strlen(name) + 1);
	snprintf(p->label, sizeof(p->label), "channel '%s'", name);
	return 0;
}

/* el's fields in the order the top of the file gives */
static int read_channel(struct parse *p, json_t *el, size_t pos,
			const struct channel_spec *specs, unsigned nprev,
			unsigned nold, struct channel_spec *s)
{
	int k;
	int rc;

	rc = read_name(p, el, pos, specs, nprev, nold, s);
	if (rc)
		return rc;
	rc =
	    field_enum(p, el, "", "InputMode", input_modes,
		       (int)(sizeof(input_modes) / sizeof(input_modes[0])), &k);
	if (rc)
		return rc;
	if (k == 1)
		return bad(p,
			   "InputMode %s is not supported: s3pipe serves Pipe "
			   "and FastFile channels",
			   input_modes[k]);
	rc = check_source(p, el);
	for (unsigned i = 0; !rc && i < channel_settings_count; i++)
		if (channel_settings[i].field)
			rc = read_setting(p, &channel_settings[i], el, s);
	if (!rc)
		rc = read_uri(p, el, s);
	if (!rc &&
	    channel_spec_check(s, CHANNEL_SYNTAX_CONFIG, p->err, p->errlen))
		rc = labelled(p, EINVAL);
	return rc;
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
	int rc;

	channel_spec_init(&s);
	snprintf(p->label, sizeof(p->label), "channel %zu (the %zu%s element)",
		 pos, pos, ordinal(pos));
	if (!json_is_object(el))
		return util_fail(p->err, p->errlen, EINVAL,
				 "%s must be a JSON object, not %s", p->label,
				 type_name(el));
	rc = read_channel(p, el, pos, specs, nprev, nold, &s);
	if (rc) {
		channel_spec_free(&s);
		return rc;
	}
	*out = s;
	return 0;
}

int sagemaker_input_config_parse(const char *text, size_t len,
				 struct channel_spec *specs, unsigned max,
				 unsigned *n, char *err, size_t errlen)
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
	int rc = util_read_file(path, CONFIG_FILE_MAX, out, outlen);

	if (rc == ENOMEM)
		return no_memory(err, errlen);
	if (rc == EFBIG)
		return util_fail(err, errlen, EINVAL,
				 "%s '%s' is larger than %u MiB: refusing to "
				 "read it",
				 what, util_shorten(path, pbuf, sizeof(pbuf)),
				 CONFIG_FILE_MAX >> 20);
	if (rc)
		return util_fail(err, errlen, EINVAL, "cannot read %s '%s': %s",
				 what, util_shorten(path, pbuf, sizeof(pbuf)),
				 util_strerror(rc, ebuf, sizeof(ebuf)));
	return 0;
}

int sagemaker_input_config_load(const char *path, struct channel_spec *specs,
				unsigned max, unsigned *n, char *err,
				size_t errlen)
{
	char *text = NULL;
	size_t len;
	int rc;

	rc = read_file(path, "input data config", &text, &len, err, errlen);
	if (rc)
		return rc;
	rc =
	    sagemaker_input_config_parse(text, len, specs, max, n, err, errlen);
	free(text);
	return rc;
}

int sagemaker_resource_config_load(const char *path, struct channel_host *host,
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
		 util_shorten(path, pbuf, sizeof(pbuf)));
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

	rc = required(&p, root, "", "current_host", JSON_STRING, &v);
	if (rc)
		goto fail;
	if (json_string_length(v) == 0) {
		rc = bad(&p, "current_host is empty");
		goto fail;
	}
	current = json_string_value(v);

	rc = required(&p, root, "", "hosts", JSON_ARRAY, &hosts);
	if (rc)
		goto fail;
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
				 util_shorten(h, buf, sizeof(buf)));
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
			 util_shorten(current, buf, sizeof(buf)), count);
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
 * spec as the container sees it: {"TrainingInputMode": "Pipe" (or
 * "FastFile"), ...}.  A converted channel holds protobuf RecordIO whatever
 * its objects hold, so that is its ContentType, and its RecordWrapperType
 * is None.
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
	if (json_object_set_new(
		ch, "TrainingInputMode",
		json_string(s->input_mode == CHANNEL_INPUT_FASTFILE ? "FastFile"
								    : "Pipe")))
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

int sagemaker_container_config_write(const char *dir,
				     const struct channel_spec *specs,
				     unsigned n, char *err, size_t errlen)
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
	d = util_shorten(dir, pbuf, sizeof(pbuf));
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
