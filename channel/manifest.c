/*
 * manifest: SageMaker's two manifest formats, parsed with jansson into
 * channel entries.
 *
 * A ManifestFile is one JSON document: [{"prefix": "s3://b/p/"}, "k1",
 * "k2", ...]; each key becomes one entry of one object, in manifest order.
 * An AugmentedManifestFile is JSON Lines: every non-blank line one object,
 * one entry per line with one item per AttributeName.  Lines are split
 * here (not by jansson) so that each error names its physical line and no
 * line is parsed past CHANNEL_MANIFEST_LINE_MAX.  A value that is not a
 * string streams as its text in the line (2.50, not jansson's 2.5), found
 * by a small scanner over the text jansson has validated.
 *
 * A problem with the document (not JSON, not UTF-8, wrong shape) stops the
 * parse with EINVAL and one line in err; a problem with one line's values
 * (a missing attribute, a -ref that is not an s3:// URI) only marks that
 * entry, so that the lines before it can still be read.  Messages never
 * carry control characters: bytes from the input that could break the line
 * become '?'.
 */
#include "config.h"

#include "channel/internal.h"
#include "s3/s3.h"
#include "util/util.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define S3_KEY_MAX     1024 /* bytes of an S3 object key */
#define REF_SUFFIX     "-ref"
#define REF_SUFFIX_LEN 4

/* duplicate keys are ambiguous; a NUL is checked where it matters */
#define JSON_FLAGS (JSON_REJECT_DUPLICATES | JSON_DECODE_ANY | JSON_ALLOW_NUL)

/* A UTF-8 byte order mark, which editors on some systems write, is not
 * JSON: skip it. */
static void skip_bom(const char **text, size_t *len)
{
	if (*len >= 3 && memcmp(*text, "\xef\xbb\xbf", 3) == 0) {
		*text += 3;
		*len -= 3;
	}
}

/* jansson's failure to load what (e.g. "manifest", "augmented manifest
 * line 7"), as an errno and a message.  where_line: quote jansson's line
 * too (a whole document) or only its column (one line). */
static int json_failure(const json_error_t *jerr, const char *what,
			bool where_line, char *err, size_t errlen)
{
	char where[64];

	/* jansson fails without a message only when its lexer cannot
	 * allocate its buffer */
	if (json_error_code(jerr) == json_error_out_of_memory ||
	    jerr->text[0] == '\0') {
		return util_fail(err, errlen, ENOMEM,
				 "out of memory parsing the %s", what);
	}
	if (where_line)
		snprintf(where, sizeof(where), "line %d, column %d", jerr->line,
			 jerr->column);
	else
		snprintf(where, sizeof(where), "column %d", jerr->column);
	if (json_error_code(jerr) == json_error_invalid_utf8) {
		return util_fail(err, errlen, EINVAL,
				 "%s is not valid UTF-8 (%s)", what, where);
	}
	return util_fail(err, errlen, EINVAL, "%s is not valid JSON: %s (%s)",
			 what, jerr->text, where);
}

/* ---- ManifestFile ---- */

/* One entry for the object prefix + rel (rlen bytes) in bucket. */
static int add_key(struct channel_entries *out, const char *bucket,
		   const char *prefix, size_t plen, const char *rel,
		   size_t rlen)
{
	char key[S3_KEY_MAX + 1];
	int rc;

	memcpy(key, prefix, plen);
	memcpy(key + plen, rel, rlen);
	key[plen + rlen] = '\0';
	rc = channel_entries_begin(out, 0);
	if (!rc)
		rc = channel_entries_add_object(out, bucket, prefix, key);
	return rc ? rc : channel_entries_end(out);
}

int channel_manifest_parse(const char *text, size_t len,
			   struct channel_entries *out, char *err,
			   size_t errlen)
{
	json_t *root = NULL;
	json_t *first;
	json_t *v;
	json_error_t jerr;
	char uerr[512];
	char *bucket = NULL;
	char *prefix = NULL;
	size_t n, plen;
	int rc;

	util_fail(err, errlen, 0, "%s", "");
	if (len > CHANNEL_MANIFEST_MAX) {
		rc = util_fail(err, errlen, EINVAL,
			       "manifest is larger than %llu bytes",
			       (unsigned long long)CHANNEL_MANIFEST_MAX);
		goto fail;
	}
	skip_bom(&text, &len);
	root = json_loadb(text, len, JSON_FLAGS, &jerr);
	if (!root) {
		rc = json_failure(&jerr, "manifest", true, err, errlen);
		goto fail;
	}
	rc = EINVAL;
	if (!json_is_array(root)) {
		util_fail(
		    err, errlen, EINVAL,
		    "manifest is not a JSON array: expected "
		    "[{\"prefix\": \"s3://BUCKET/PREFIX/\"}, \"KEY\", ...]");
		goto fail;
	}
	n = json_array_size(root);
	if (n == 0) {
		util_fail(
		    err, errlen, EINVAL,
		    "manifest is an empty array: expected "
		    "[{\"prefix\": \"s3://BUCKET/PREFIX/\"}, \"KEY\", ...]");
		goto fail;
	}
	first = json_array_get(root, 0);
	if (!json_is_object(first)) {
		util_fail(err, errlen, EINVAL,
			  "manifest element 0 is not an object: expected "
			  "{\"prefix\": \"s3://BUCKET/PREFIX/\"}");
		goto fail;
	}
	v = json_object_get(first, "prefix");
	if (!v || !json_is_string(v)) {
		util_fail(
		    err, errlen, EINVAL,
		    "manifest element 0 has no \"prefix\" string: expected "
		    "{\"prefix\": \"s3://BUCKET/PREFIX/\"}");
		goto fail;
	}
	if (strlen(json_string_value(v)) != json_string_length(v)) {
		util_fail(err, errlen, EINVAL,
			  "manifest element 0: the prefix contains a NUL "
			  "character");
		goto fail;
	}
	rc = s3_uri_parse(json_string_value(v), &bucket, &prefix, uerr,
			  sizeof(uerr));
	if (rc) {
		util_fail(err, errlen, EINVAL, "manifest element 0: %s", uerr);
		goto fail;
	}
	rc = EINVAL;
	plen = strlen(prefix);
	if (plen >= S3_KEY_MAX) {
		util_fail(err, errlen, EINVAL,
			  "manifest element 0: the prefix is longer than S3 "
			  "keys may be (%d bytes)",
			  S3_KEY_MAX);
		goto fail;
	}
	for (size_t i = 1; i < n; i++) {
		const char *rel;
		size_t rlen;

		v = json_array_get(root, i);
		if (!json_is_string(v)) {
			util_fail(err, errlen, EINVAL,
				  "manifest element %zu is not a string", i);
			goto fail;
		}
		rel = json_string_value(v);
		rlen = json_string_length(v);
		if (rlen == 0) {
			util_fail(err, errlen, EINVAL,
				  "manifest element %zu is an empty string", i);
			goto fail;
		}
		if (memchr(rel, '\0', rlen)) {
			util_fail(
			    err, errlen, EINVAL,
			    "manifest element %zu contains a NUL character", i);
			goto fail;
		}
		if (rlen > S3_KEY_MAX - plen) {
			util_fail(
			    err, errlen, EINVAL,
			    "manifest element %zu: the prefix and the key "
			    "are longer than S3 keys may be (%d bytes)",
			    i, S3_KEY_MAX);
			goto fail;
		}
		if (add_key(out, bucket, prefix, plen, rel, rlen)) {
			rc = ENOMEM;
			util_fail(err, errlen, ENOMEM,
				  "out of memory parsing the manifest");
			goto fail;
		}
	}
	json_decref(root);
	free(bucket);
	free(prefix);
	return 0;
fail:
	json_decref(root);
	free(bucket);
	free(prefix);
	channel_entries_clear(out);
	return rc;
}

/* ---- AugmentedManifestFile ---- */

static bool is_ref(const char *name)
{
	size_t n = strlen(name);

	return n >= REF_SUFFIX_LEN && memcmp(name + n - REF_SUFFIX_LEN,
					     REF_SUFFIX, REF_SUFFIX_LEN) == 0;
}

/* The item of attribute name (a "-ref") of line: the object its URI names;
 * else the entry's error is set and the item is empty literal bytes. */
static int ref_item(struct channel_entries *en, const char *name,
		    const json_t *v, unsigned long line)
{
	char uerr[512];
	char *bucket = NULL;
	char *key = NULL;
	const char *s;
	int rc;

	if (!json_is_string(v)) {
		channel_entries_fail(
		    en,
		    "augmented manifest line %lu: attribute '%s' "
		    "is not a string (expected an s3:// URI)",
		    line, name);
		goto literal;
	}
	s = json_string_value(v);
	if (strlen(s) != json_string_length(v)) {
		channel_entries_fail(
		    en,
		    "augmented manifest line %lu: attribute '%s' "
		    "contains a NUL character",
		    line, name);
		goto literal;
	}
	rc = s3_uri_parse(s, &bucket, &key, uerr, sizeof(uerr));
	if (rc == ENOMEM)
		return ENOMEM;
	if (rc) {
		channel_entries_fail(
		    en, "augmented manifest line %lu: attribute '%s': %s", line,
		    name, uerr);
		goto literal;
	}
	if (key[0] == '\0') {
		channel_entries_fail(
		    en,
		    "augmented manifest line %lu: attribute '%s' "
		    "names no object ('%s' has no key)",
		    line, name, s);
		goto literal;
	}
	if (strlen(key) > S3_KEY_MAX) {
		channel_entries_fail(
		    en,
		    "augmented manifest line %lu: attribute '%s': "
		    "the key is longer than S3 keys may be (%d "
		    "bytes)",
		    line, name, S3_KEY_MAX);
		goto literal;
	}
	rc = channel_entries_add_object(en, bucket, "", key);
	free(bucket);
	free(key);
	return rc;
literal:
	free(bucket);
	free(key);
	return channel_entries_add_text(en, "", 0);
}

/*
 * The span scanner: where a member's value lies in the text of its line.
 * jansson has validated the text as one JSON object (with whitespace
 * around it) before the scanner looks at it, so the scanner only skips
 * whitespace, strings (with their escapes) and whole values, and counts
 * members; it matches no keys.  Every step is still bounded by the
 * length, and a text it cannot follow gives false.
 */

/* JSON's whitespace, and NUL: jansson drops one NUL byte that follows a
 * number or a literal (it reads "1\0," as "1,"). */
static bool is_ws(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\0';
}

static size_t skip_ws(const char *s, size_t len, size_t i)
{
	while (i < len && is_ws(s[i]))
		i++;
	return i;
}

/* s[i] is '"': the index past the closing quote, or len. */
static size_t skip_string(const char *s, size_t len, size_t i)
{
	for (i++; i < len && s[i] != '"'; i++) {
		if (s[i] == '\\')
			i++;
	}
	return i < len ? i + 1 : len;
}

/* The index past the value at s[i], or len.  An object or an array ends
 * where its depth returns to 0; a number or a literal at the first byte
 * that can follow a value. */
static size_t skip_value(const char *s, size_t len, size_t i)
{
	size_t depth = 0;

	if (i < len && s[i] == '"')
		return skip_string(s, len, i);
	if (i < len && s[i] != '{' && s[i] != '[') {
		while (i < len && !is_ws(s[i]) && s[i] != ',' && s[i] != ']' &&
		       s[i] != '}')
			i++;
		return i;
	}
	while (i < len) {
		if (s[i] == '"') {
			i = skip_string(s, len, i);
			continue;
		}
		if (s[i] == '{' || s[i] == '[')
			depth++;
		else if ((s[i] == '}' || s[i] == ']') && --depth == 0)
			return i + 1;
		i++;
	}
	return len;
}

/* The value of member index (0 for the first) of the object in s[0..len):
 * s[*start..*end). */
static bool value_span(const char *s, size_t len, size_t index, size_t *start,
		       size_t *end)
{
	size_t i = skip_ws(s, len, 0);

	if (i >= len || s[i] != '{')
		return false;
	i = skip_ws(s, len, i + 1);
	for (size_t k = 0; i < len && s[i] == '"'; k++) {
		i = skip_ws(s, len, skip_string(s, len, i));
		if (i >= len || s[i] != ':')
			return false;
		i = skip_ws(s, len, i + 1);
		*start = i;
		i = skip_value(s, len, i);
		if (k == index) {
			*end = i;
			return *start < *end;
		}
		i = skip_ws(s, len, i);
		if (i >= len || s[i] != ',')
			return false;
		i = skip_ws(s, len, i + 1);
	}
	return false;
}

/* The position of member name in obj (which has it), counting from 0 in
 * the line's order: jansson (2.8 on) keeps an object's keys in the order
 * it read them, refuses keys with a NUL, and duplicates were refused. */
static size_t member_index(json_t *obj, const char *name)
{
	size_t i = 0;

	for (void *m = json_object_iter(obj); m;
	     m = json_object_iter_next(obj, m), i++) {
		if (strcmp(json_object_iter_key(m), name) == 0)
			break;
	}
	return i;
}

/* The item of attribute name, which holds v, of the line s[0..len) (the
 * text of obj) as literal bytes: a string's contents, anything else its
 * JSON text as written in the line.  0, ENOMEM, or EINVAL if the scanner
 * cannot find the value. */
static int value_item(struct channel_entries *en, json_t *obj, const char *name,
		      const json_t *v, const char *s, size_t len)
{
	size_t start, end;

	if (json_is_string(v))
		return channel_entries_add_text(en, json_string_value(v),
						json_string_length(v));
	if (!value_span(s, len, member_index(obj, name), &start, &end))
		return EINVAL;
	return channel_entries_add_text(en, s + start, end - start);
}

/* The item of attribute name, missing from line: the entry's error, and
 * empty literal bytes so that every entry has one item per attribute. */
static int missing_item(struct channel_entries *en, const char *name,
			unsigned long line)
{
	channel_entries_fail(
	    en, "augmented manifest line %lu: attribute '%s' is missing", line,
	    name);
	return channel_entries_add_text(en, "", 0);
}

/* One non-blank line (len bytes, without its newline) into one entry. */
static int parse_line(const char *s, size_t len, unsigned long line,
		      char *const *attributes, size_t nattributes,
		      struct channel_entries *out, char *err, size_t errlen)
{
	char what[64];
	json_error_t jerr;
	json_t *obj;
	int rc = 0;

	snprintf(what, sizeof(what), "augmented manifest line %lu", line);
	obj = json_loadb(s, len, JSON_FLAGS, &jerr);
	if (!obj)
		return json_failure(&jerr, what, false, err, errlen);
	if (!json_is_object(obj)) {
		rc = util_fail(err, errlen, EINVAL, "%s is not a JSON object",
			       what);
		goto done;
	}
	rc = channel_entries_begin(out, line);
	for (size_t i = 0; i < nattributes && !rc; i++) {
		const char *name = attributes[i];
		json_t *v = json_object_get(obj, name);

		if (!v)
			rc = missing_item(out, name, line);
		else if (is_ref(name))
			rc = ref_item(out, name, v, line);
		else
			rc = value_item(out, obj, name, v, s, len);
	}
	if (!rc)
		rc = channel_entries_end(out);
	if (rc == EINVAL)
		util_fail(err, errlen, EINVAL,
			  "%s: cannot find the text of a value jansson read "
			  "(please report this line)",
			  what);
	else if (rc == ENOSPC)
		rc = util_fail(err, errlen, EINVAL,
			       "%s: the manifest names objects in more than "
			       "%u buckets",
			       what, CHANNEL_ENTRIES_BUCKETS_MAX);
	else if (rc)
		util_fail(err, errlen, rc, "out of memory parsing the %s",
			  what);
done:
	json_decref(obj);
	return rc;
}

static bool is_blank(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
			return false;
	}
	return true;
}

int channel_augmented_parse(const char *text, size_t len,
			    char *const *attributes, size_t nattributes,
			    struct channel_entries *out, char *err,
			    size_t errlen)
{
	unsigned long line = 0;
	size_t pos = 0;
	int rc;

	util_fail(err, errlen, 0, "%s", "");
	if (len > CHANNEL_MANIFEST_MAX) {
		rc = util_fail(err, errlen, EINVAL,
			       "augmented manifest is larger than %llu bytes",
			       (unsigned long long)CHANNEL_MANIFEST_MAX);
		goto fail;
	}
	if (nattributes > UINT_MAX) {
		rc = util_fail(err, errlen, EINVAL,
			       "too many attribute names (%zu)", nattributes);
		goto fail;
	}
	skip_bom(&text, &len);
	while (pos < len) {
		const char *s = text + pos;
		const char *nl = memchr(s, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - s) : len - pos;

		pos += nl ? n + 1 : n;
		line++;
		if (n > 0 && s[n - 1] == '\r')
			n--;
		if (n > CHANNEL_MANIFEST_LINE_MAX) {
			rc = util_fail(err, errlen, EINVAL,
				       "augmented manifest line %lu is longer "
				       "than "
				       "%u bytes",
				       line, CHANNEL_MANIFEST_LINE_MAX);
			goto fail;
		}
		if (is_blank(s, n))
			continue;
		rc = parse_line(s, n, line, attributes, nattributes, out, err,
				errlen);
		if (rc)
			goto fail;
	}
	return 0;
fail:
	channel_entries_clear(out);
	return rc;
}
