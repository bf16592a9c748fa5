/*
 * state: a volume's record in memory, and as the file
 * STATE/volumes/NAME.json that lets volumes and their mounts outlive the
 * plugin:
 *
 *   {"Name": "NAME", "Opts": {...as Docker gave them...},
 *    "CreatedAt": "2026-01-02T03:04:05Z", "MountIDs": ["ID", ...]}
 *
 * A file is replaced whole (a temporary file, fsync, rename, fsync of the
 * folder), so after a crash it holds either the old record or the new one.
 * Loading checks everything, since the file is outside input: a record
 * that does not hold up is reported and skipped, never half-used.  Opts
 * hold no secret (options.c refuses credential-shaped ones), so the files
 * may be read by root's tools; they are created 0600 all the same.
 */
#include "config.h"

#include "contrib/docker/plugin.h"
#include "util/util.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define STATE_FILE_MAX (4 * 1024 * 1024) /* bytes */

struct plugin_volume *plugin_volume_new(const char *name, json_t *opts)
{
	struct plugin_volume *v = calloc(1, sizeof(*v));
	struct tm tm;
	char when[32];
	time_t now = time(NULL);

	if (!v)
		goto fail;
	gmtime_r(&now, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	v->name = strdup(name);
	v->created_at = strdup(when);
	v->opts = json_incref(opts);
	if (!v->name || !v->created_at)
		goto fail;
	return v;
fail:
	plugin_volume_free(v);
	errno = ENOMEM;
	return NULL;
}

void plugin_volume_free(struct plugin_volume *v)
{
	if (!v)
		return;
	plugin_volume_clear_ids(v);
	free(v->ids);
	free(v->name);
	free(v->created_at);
	json_decref(v->opts);
	free(v);
}

bool plugin_volume_has_id(const struct plugin_volume *v, const char *id)
{
	for (size_t i = 0; i < v->nids; i++)
		if (strcmp(v->ids[i], id) == 0)
			return true;
	return false;
}

int plugin_volume_add_id(struct plugin_volume *v, const char *id)
{
	char **ids;
	char *copy;

	if (plugin_volume_has_id(v, id))
		return 0;
	copy = strdup(id);
	ids = copy ? realloc(v->ids, (v->nids + 1) * sizeof(*ids)) : NULL;
	if (!ids) {
		free(copy);
		return ENOMEM;
	}
	ids[v->nids++] = copy;
	v->ids = ids;
	return 0;
}

void plugin_volume_drop_id(struct plugin_volume *v, const char *id)
{
	for (size_t i = 0; i < v->nids; i++) {
		if (strcmp(v->ids[i], id) != 0)
			continue;
		free(v->ids[i]);
		memmove(&v->ids[i], &v->ids[i + 1],
			(v->nids - i - 1) * sizeof(*v->ids));
		v->nids--;
		return;
	}
}

void plugin_volume_clear_ids(struct plugin_volume *v)
{
	for (size_t i = 0; i < v->nids; i++)
		free(v->ids[i]);
	v->nids = 0;
}

static json_t *record_json(const struct plugin_volume *v)
{
	json_t *ids = json_array();
	json_t *o = NULL;

	for (size_t i = 0; ids && i < v->nids; i++)
		if (json_array_append_new(ids, json_string(v->ids[i])) != 0)
			goto fail;
	o = json_pack("{s:s, s:O, s:s, s:O}", "Name", v->name, "Opts", v->opts,
		      "CreatedAt", v->created_at, "MountIDs", ids);
fail:
	json_decref(ids);
	return o;
}

int plugin_state_save(const char *dir, const struct plugin_volume *v, char *err,
		      size_t errlen)
{
	json_t *o = record_json(v);
	char *text = NULL;
	char *path = NULL;
	char msg[128];
	int rc = ENOMEM;

	if (!o)
		goto fail;
	text = json_dumps(o, JSON_INDENT(2));
	if (!text || asprintf(&path, "%s/%s.json", dir, v->name) < 0) {
		path = NULL;
		goto fail;
	}
	/* (its temporary name does not end in .json, so a load never takes
	 * it for a volume) */
	rc = util_write_text_file(path, text, 0600);
fail:
	if (rc)
		util_fail(err, errlen, rc,
			  "cannot write the state of volume "
			  "'%s' in %s: %s",
			  v->name, dir, util_strerror(rc, msg, sizeof(msg)));
	free(path);
	free(text);
	json_decref(o);
	return rc;
}

int plugin_state_delete(const char *dir, const char *name, char *err,
			size_t errlen)
{
	char *path = NULL;
	char msg[128];
	int rc = 0;

	if (asprintf(&path, "%s/%s.json", dir, name) < 0)
		return util_fail(err, errlen, ENOMEM, "out of memory");
	if (unlink(path) != 0 && errno != ENOENT)
		rc = errno;
	if (!rc)
		rc = util_sync_dir(dir);
	if (rc)
		util_fail(err, errlen, rc,
			  "cannot remove the state of volume '%s' in %s: %s",
			  name, dir, util_strerror(rc, msg, sizeof(msg)));
	free(path);
	return rc;
}

/* Checks the parsed record o against the file's name; fills v. */
static int record_from_json(json_t *o, const char *name,
			    struct plugin_volume *v, char *err, size_t errlen)
{
	json_t *jname = json_object_get(o, "Name");
	json_t *opts = json_object_get(o, "Opts");
	json_t *created = json_object_get(o, "CreatedAt");
	json_t *ids = json_object_get(o, "MountIDs");
	const char *key;
	json_t *value;
	size_t i;

	if (!json_is_object(o))
		return util_fail(err, errlen, EINVAL, "not a JSON object");
	if (!json_is_string(jname) ||
	    strcmp(json_string_value(jname), name) != 0)
		return util_fail(err, errlen, EINVAL,
				 "Name is not the file's name");
	if (!json_is_object(opts))
		return util_fail(err, errlen, EINVAL, "Opts is not an object");
	json_object_foreach(opts, key, value) if (
	    !json_is_string(
		value)) return util_fail(err, errlen, EINVAL,
					 "option '%.64s' is not a string", key);
	if (!json_is_string(created))
		return util_fail(err, errlen, EINVAL,
				 "CreatedAt is not a string");
	if (!json_is_array(ids))
		return util_fail(err, errlen, EINVAL,
				 "MountIDs is not an array");
	json_array_foreach(ids, i, value)
	{
		if (!json_is_string(value) || json_string_length(value) == 0 ||
		    json_string_length(value) > PLUGIN_ID_MAX)
			return util_fail(err, errlen, EINVAL,
					 "MountIDs holds something that is "
					 "not a mount ID");
		if (plugin_volume_add_id(v, json_string_value(value)))
			return util_fail(err, errlen, ENOMEM, "out of memory");
	}
	v->name = strdup(name);
	v->created_at = strdup(json_string_value(created));
	v->opts = json_incref(opts);
	if (!v->name || !v->created_at)
		return util_fail(err, errlen, ENOMEM, "out of memory");
	return 0;
}

struct plugin_volume *plugin_state_load(const char *dir, const char *file,
					char *err, size_t errlen)
{
	struct plugin_volume *v = NULL;
	json_t *o = NULL;
	json_error_t jerr;
	char *path = NULL;
	char *name = NULL;
	size_t len = strlen(file);
	struct stat sb;
	char msg[128];

	if (len <= 5 || strcmp(file + len - 5, ".json") != 0) {
		util_fail(err, errlen, EINVAL, "not a NAME.json file");
		goto fail;
	}
	name = strndup(file, len - 5);
	if (!name || asprintf(&path, "%s/%s", dir, file) < 0) {
		path = NULL;
		util_fail(err, errlen, ENOMEM, "out of memory");
		goto fail;
	}
	if (!plugin_name_valid(name)) {
		util_fail(err, errlen, EINVAL, "not a valid volume name");
		goto fail;
	}
	if (stat(path, &sb) != 0) {
		util_fail(err, errlen, errno, "%s",
			  util_strerror(errno, msg, sizeof(msg)));
		goto fail;
	}
	if (!S_ISREG(sb.st_mode) || sb.st_size > STATE_FILE_MAX) {
		util_fail(err, errlen, EINVAL,
			  "not a regular file of at most %d bytes",
			  STATE_FILE_MAX);
		goto fail;
	}
	o = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
	if (!o) {
		util_fail(err, errlen, EINVAL, "line %d: %s", jerr.line,
			  jerr.text);
		goto fail;
	}
	v = calloc(1, sizeof(*v));
	if (!v) {
		util_fail(err, errlen, ENOMEM, "out of memory");
		goto fail;
	}
	if (record_from_json(o, name, v, err, errlen)) {
		plugin_volume_free(v);
		v = NULL;
	}
fail:
	json_decref(o);
	free(path);
	free(name);
	return v;
}

static int state_file(const struct dirent *d)
{
	size_t len = strlen(d->d_name);

	return d->d_name[0] != '.' && len > 5 &&
	       strcmp(d->d_name + len - 5, ".json") == 0;
}

struct plugin_volume *plugin_state_load_all(const char *dir, unsigned *nbad)
{
	struct dirent **list = NULL;
	struct plugin_volume *head = NULL;
	struct plugin_volume **tail = &head;
	int n = scandir(dir, &list, state_file, alphasort);

	*nbad = 0;
	if (n < 0)
		return NULL;
	for (int i = 0; i < n; i++) {
		char err[PLUGIN_ERR_MAX];
		struct plugin_volume *v =
		    plugin_state_load(dir, list[i]->d_name, err, sizeof(err));

		if (v) {
			*tail = v;
			tail = &v->next;
		} else {
			util_warn("skipping %s/%s: %s", dir, list[i]->d_name,
				  err);
			(*nbad)++;
		}
		free(list[i]);
	}
	free(list);
	errno = 0;
	return head;
}
