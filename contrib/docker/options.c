/*
 * options: what `docker volume create -o KEY=VALUE` may say, and the
 * s3pipe arguments it becomes.
 *
 * A value that names S3 data (a channel URI: s3://, manifest+s3://,
 * augmented+s3://, as channel_uri_kind() knows them) is a channel,
 * passed as the positional "KEY=VALUE"; every other option is
 * "-o KEY=VALUE", which s3pipe parses like its own --long-option (or hands
 * to libfuse).  fuse_opt splits -o lists at commas, so a value's commas
 * and backslashes are escaped: "epochs=2,pid_file=/x" stays one (bad)
 * value of epochs instead of smuggling in an option the plugin owns.  Keys
 * are restricted to [A-Za-z0-9_.-]+ not starting with '-', for the same
 * reason (no '=' or ',', and no key taken for an option of s3pipe's).  s3pipe
 * itself checks everything else (plugin_check_options()); this file only
 * refuses what s3pipe would take but the plugin must not: the options that
 * would break its control of the daemon, and credentials, which would be stored
 * in the state directory and shown by `docker volume inspect`.
 */
#include "config.h"

#include "contrib/docker/plugin.h"
#include "channel/channel.h"
#include "util/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* options the plugin sets or that would break its control of s3pipe
 * (normalized: lowercase, '-' as '_') */
static const char *const owned_options[] = {
    "foreground", "f", "debug",	  "d", "pid_file",   "check_options",
    "help",	  "h", "version", "v", "mountpoint", NULL,
};

/* a key holding any of these is credential-shaped */
static const char *const secret_words[] = {
    "secret", "token", "password", "passwd", "credential", NULL,
};

/* ... and so are these, whole */
static const char *const secret_options[] = {
    "aws_access_key_id",
    "access_key",
    "access_key_id",
    NULL,
};

int plugin_argv_add(struct plugin_argv *a, const char *s)
{
	char *copy = NULL;

	if (a->n + 2 > a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 16;
		char **v = realloc(a->v, cap * sizeof(*v));

		if (!v)
			return ENOMEM;
		a->v = v;
		a->cap = cap;
	}
	copy = strdup(s);
	if (!copy)
		return ENOMEM;
	a->v[a->n++] = copy;
	a->v[a->n] = NULL;
	return 0;
}

void plugin_argv_free(struct plugin_argv *a)
{
	for (size_t i = 0; i < a->n; i++)
		free(a->v[i]);
	free(a->v);
	a->v = NULL;
	a->n = 0;
	a->cap = 0;
}

static bool name_char(char c, bool first)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9'))
		return true;
	return !first && (c == '_' || c == '.' || c == '-');
}

/* [A-Za-z0-9][A-Za-z0-9_.-]* of 1..max bytes */
static bool word_valid(const char *s, size_t min, size_t max)
{
	size_t len = strlen(s);

	if (len < min || len > max)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!name_char(s[i], i == 0))
			return false;
	return true;
}

/* [A-Za-z0-9_.-]{1,PLUGIN_OPT_KEY_MAX}, not starting with '-' (an option
 * to s3pipe); channel names are s3pipe's to check further */
static bool key_valid(const char *key)
{
	size_t len = strlen(key);

	if (len < 1 || len > PLUGIN_OPT_KEY_MAX || key[0] == '-')
		return false;
	for (size_t i = 0; i < len; i++)
		if (!name_char(key[i], false))
			return false;
	return true;
}

bool plugin_name_valid(const char *name)
{
	return word_valid(name, 2, PLUGIN_NAME_MAX);
}

static bool in_list(const char *s, const char *const *list)
{
	for (size_t i = 0; list[i]; i++)
		if (strcmp(s, list[i]) == 0)
			return true;
	return false;
}

bool plugin_opt_is_channel(const char *value)
{
	enum channel_data_type type;
	const char *s3uri;

	return channel_uri_kind(value, &type, &s3uri);
}

/* Lowercase, '-' as '_', into out (at least PLUGIN_OPT_KEY_MAX + 1). */
static void normalize(const char *key, char *out)
{
	size_t i;

	for (i = 0; key[i] && i < PLUGIN_OPT_KEY_MAX; i++) {
		char c = key[i];

		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		out[i] = c == '-' ? '_' : c;
	}
	out[i] = '\0';
}

static bool credential_shaped(const char *norm)
{
	if (in_list(norm, secret_options))
		return true;
	for (size_t i = 0; secret_words[i]; i++)
		if (strstr(norm, secret_words[i]))
			return true;
	return false;
}

/* Checks one KEY=VALUE; 0 or EINVAL with err set. */
static int check_option(const char *key, const json_t *value, char *err,
			size_t errlen)
{
	char norm[PLUGIN_OPT_KEY_MAX + 1];

	if (!key_valid(key))
		return util_fail(err, errlen, EINVAL,
				 "invalid option name '%.*s': use 1 to %d of "
				 "A-Z a-z 0-9 _ . -, not starting with -",
				 PLUGIN_OPT_KEY_MAX, key, PLUGIN_OPT_KEY_MAX);
	normalize(key, norm);
	if (credential_shaped(norm))
		return util_fail(
		    err, errlen, EINVAL,
		    "option '%s': credentials are not volume "
		    "options: the plugin's own credential chain is "
		    "used; use -o profile=NAME",
		    key);
	if (in_list(norm, owned_options))
		return util_fail(
		    err, errlen, EINVAL,
		    "option '%s' is the plugin's own and cannot be "
		    "set on a volume",
		    key);
	if (!json_is_string(value))
		return util_fail(err, errlen, EINVAL,
				 "option '%s': the value must be a string",
				 key);
	if (json_string_length(value) > PLUGIN_OPT_VAL_MAX ||
	    strlen(json_string_value(value)) != json_string_length(value))
		return util_fail(err, errlen, EINVAL,
				 "option '%s': the value is longer than %d "
				 "bytes or holds a NUL",
				 key, PLUGIN_OPT_VAL_MAX);
	return 0;
}

/* "-o" and KEY[=VALUE] with VALUE's '\' and ',' escaped for fuse_opt */
static int add_fuse_option(struct plugin_argv *out, const char *key,
			   const char *value)
{
	struct util_buf b;
	int rc;

	util_buf_init(&b, 0);
	rc = util_buf_append_str(&b, key);
	if (!rc && value[0])
		rc = util_buf_append_str(&b, "=");
	for (const char *p = value; !rc && *p; p++) {
		if (*p == '\\' || *p == ',')
			rc = util_buf_append(&b, "\\", 1);
		if (!rc)
			rc = util_buf_append(&b, p, 1);
	}
	if (!rc)
		rc = plugin_argv_add(out, "-o");
	if (!rc)
		rc = plugin_argv_add(out, b.data);
	util_buf_free(&b);
	return rc;
}

int plugin_opts_to_args(const json_t *opts, struct plugin_argv *out, char *err,
			size_t errlen)
{
	const char *key;
	json_t *value;
	struct util_buf b;
	int rc = 0;

	util_buf_init(&b, 0);
	if (!json_is_object(opts))
		return util_fail(err, errlen, EINVAL,
				 "Opts must be an object of strings");
	if (json_object_size(opts) > PLUGIN_OPTS_MAX)
		return util_fail(err, errlen, EINVAL,
				 "too many options (at most %d)",
				 PLUGIN_OPTS_MAX);
	/* json_object_foreach() wants a non-const object; it only reads */
	json_object_foreach((json_t *)opts, key, value)
	{
		rc = check_option(key, value, err, errlen);
		if (rc)
			goto fail;
		if (plugin_opt_is_channel(json_string_value(value))) {
			util_buf_reset(&b);
			rc = util_buf_printf(&b, "%s=%s", key,
					     json_string_value(value));
			if (!rc)
				rc = plugin_argv_add(out, b.data);
		} else {
			rc =
			    add_fuse_option(out, key, json_string_value(value));
		}
		if (rc) {
			util_fail(err, errlen, rc, "out of memory");
			goto fail;
		}
	}
fail:
	util_buf_free(&b);
	return rc;
}
