/*
 * test_plugin: the pure logic of s3pipe-docker-plugin (contrib/docker/).
 *
 * options.c: volume names by Docker's rule; Opts -> s3pipe arguments
 * (channels positional, the rest -o, commas and backslashes escaped so a
 * value stays one option, flags without a value); refusal, naming the
 * option, of bad keys, non-string or oversized values, the plugin's own
 * options and anything credential-shaped, whatever its case or dashes.
 * state.c: a record written and read back equal; mount IDs counted once;
 * a directory with a corrupt record, a record under the wrong name, a
 * left-over temporary file and a foreign file loads the good records
 * only; deleting a record.  Files live in a mkdtemp directory.
 */
#include "config.h"

#include "contrib/docker/plugin.h"

#include <dirent.h>
#include <errno.h>
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

/* ---- helpers ---- */

static json_t *parse(const char *text)
{
	json_error_t jerr;
	json_t *o = json_loads(text, 0, &jerr);

	if (!o)
		fail_msg("bad JSON in the test: %s: %s", text, jerr.text);
	return o;
}

/* The arguments for opts joined with '|'; NULL when refused (err set). */
static char *args_of(const char *opts_json, char *err)
{
	struct plugin_argv a = {0};
	json_t *opts = parse(opts_json);
	char *joined = NULL;
	size_t len = 0;
	int rc;

	err[0] = '\0';
	rc = plugin_opts_to_args(opts, &a, err, ERRLEN);
	json_decref(opts);
	if (rc) {
		assert_int_equal(rc, EINVAL);
		plugin_argv_free(&a);
		return NULL;
	}
	assert_true(a.n == 0 || a.v[a.n] == NULL);
	for (size_t i = 0; i < a.n; i++)
		len += strlen(a.v[i]) + 1;
	joined = calloc(1, len + 1);
	assert_non_null(joined);
	for (size_t i = 0, at = 0; i < a.n; i++) {
		size_t n = strlen(a.v[i]);

		if (i)
			joined[at++] = '|';
		memcpy(joined + at, a.v[i], n);
		at += n;
	}
	plugin_argv_free(&a);
	return joined;
}

static void check_args(const char *opts_json, const char *want)
{
	char err[ERRLEN];
	char *got = args_of(opts_json, err);

	if (!got)
		fail_msg("%s refused: %s", opts_json, err);
	assert_string_equal(got, want);
	free(got);
}

/* opts_json must be refused with a message holding needle and, when
 * given, naming the option key */
static void check_refused(const char *opts_json, const char *needle)
{
	char err[ERRLEN];
	char *got = args_of(opts_json, err);

	if (got)
		fail_msg("%s accepted: %s", opts_json, got);
	if (!strstr(err, needle))
		fail_msg("%s: '%s' lacks '%s'", opts_json, err, needle);
	assert_null(strchr(err, '\n'));
}

/* ---- options.c ---- */

static void test_names(void **state)
{
	char long_name[PLUGIN_NAME_MAX + 2];

	(void)state;
	assert_true(plugin_name_valid("v1"));
	assert_true(plugin_name_valid("train-data_2.v3"));
	assert_true(plugin_name_valid("0abc"));
	assert_false(plugin_name_valid(""));
	assert_false(plugin_name_valid("a")); /* Docker: at least two */
	assert_false(plugin_name_valid("-ab"));
	assert_false(plugin_name_valid(".ab"));
	assert_false(plugin_name_valid("_ab"));
	assert_false(plugin_name_valid("a/b"));
	assert_false(plugin_name_valid("a b"));
	assert_false(plugin_name_valid("../x"));
	assert_false(plugin_name_valid("caf\xc3\xa9"));
	memset(long_name, 'a', PLUGIN_NAME_MAX);
	long_name[PLUGIN_NAME_MAX] = '\0';
	assert_true(plugin_name_valid(long_name));
	long_name[PLUGIN_NAME_MAX] = 'a';
	long_name[PLUGIN_NAME_MAX + 1] = '\0';
	assert_false(plugin_name_valid(long_name));
}

static void test_args(void **state)
{
	(void)state;
	check_args("{}", "");
	check_args("{\"train\": \"s3://bucket/train/\"}",
		   "train=s3://bucket/train/");
	check_args(
	    "{\"m\": \"manifest+s3://b/k\", \"a\": \"augmented+s3://b/k\"}",
	    "m=manifest+s3://b/k|a=augmented+s3://b/k");
	/* options in the order given, channels where they stand */
	check_args("{\"endpoint_url\": \"http://127.0.0.1:9000\", \"train\": "
		   "\"s3://b/t\", \"epochs\": \"2\"}",
		   "-o|endpoint_url=http://127.0.0.1:9000|train=s3://b/t|-o|"
		   "epochs=2");
	/* a flag */
	check_args("{\"sharded\": \"\"}", "-o|sharded");
	/* dashes kept: s3pipe takes both */
	check_args("{\"cache-size\": \"512M\"}", "-o|cache-size=512M");
	/* a comma or backslash stays inside its value */
	check_args("{\"attribute_names\": \"source-ref,label\"}",
		   "-o|attribute_names=source-ref\\,label");
	check_args("{\"epochs\": \"2,pid_file=/x\"}",
		   "-o|epochs=2\\,pid_file=/x");
	check_args("{\"x\": \"a\\\\b\"}", "-o|x=a\\\\b");
	/* a value that is not S3 data is an option, even if it looks like
	 * a URL */
	check_args("{\"train\": \"s3:/b/t\"}", "-o|train=s3:/b/t");
	check_args("{\"train\": \"http://b/t\"}", "-o|train=http://b/t");
	/* channel names are s3pipe's to check, including a leading '.' */
	check_args("{\".hidden\": \"s3://b/t\"}", ".hidden=s3://b/t");
}

static void test_bad_keys(void **state)
{
	char big[PLUGIN_OPT_VAL_MAX + 64];
	char key[PLUGIN_OPT_KEY_MAX + 32];
	char json[sizeof(big) + sizeof(key) + 32];

	(void)state;
	check_refused("{\"\": \"1\"}", "invalid option name ''");
	check_refused("{\"a b\": \"1\"}", "invalid option name 'a b'");
	check_refused("{\"-f\": \"1\"}", "invalid option name '-f'");
	check_refused("{\"--debug\": \"\"}", "invalid option name '--debug'");
	check_refused("{\"a=b\": \"1\"}", "invalid option name 'a=b'");
	check_refused("{\"a,pid_file\": \"1\"}", "invalid option name");
	check_refused("{\"ca\\u00e9\": \"1\"}", "invalid option name");
	memset(key, 'k', PLUGIN_OPT_KEY_MAX + 1);
	key[PLUGIN_OPT_KEY_MAX + 1] = '\0';
	snprintf(json, sizeof(json), "{\"%s\": \"1\"}", key);
	check_refused(json, "invalid option name");
	key[PLUGIN_OPT_KEY_MAX] = '\0';
	snprintf(json, sizeof(json), "{\"%s\": \"s3://b/x\"}", key);
	snprintf(big, sizeof(big), "%s=s3://b/x", key);
	check_args(json, big);
	/* values */
	check_refused("{\"epochs\": 2}", "option 'epochs': the value must be a "
					 "string");
	check_refused("{\"epochs\": null}", "must be a string");
	{
		/* (the server's parser refuses \u0000; this is the guard
		 * behind it) */
		json_t *opts = json_object();
		struct plugin_argv a = {0};
		char err[ERRLEN];

		json_object_set_new(opts, "x", json_stringn("a\0b", 3));
		assert_int_equal(
		    plugin_opts_to_args(opts, &a, err, sizeof(err)), EINVAL);
		assert_non_null(strstr(err, "holds a NUL"));
		plugin_argv_free(&a);
		json_decref(opts);
	}
	memset(big, 'v', PLUGIN_OPT_VAL_MAX + 1);
	big[PLUGIN_OPT_VAL_MAX + 1] = '\0';
	snprintf(json, sizeof(json), "{\"region\": \"%s\"}", big);
	check_refused(json, "option 'region': the value is longer than");
	check_refused("[\"train\"]", "Opts must be an object");
}

static void test_too_many(void **state)
{
	json_t *opts = json_object();
	struct plugin_argv a = {0};
	char err[ERRLEN];
	char key[16];

	(void)state;
	for (int i = 0; i <= PLUGIN_OPTS_MAX; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		json_object_set_new(opts, key, json_string("1"));
	}
	assert_int_equal(plugin_opts_to_args(opts, &a, err, sizeof(err)),
			 EINVAL);
	assert_non_null(strstr(err, "too many options"));
	plugin_argv_free(&a);
	json_decref(opts);
}

static void test_credentials_refused(void **state)
{
	static const char *const keys[] = {
	    "aws_access_key_id",
	    "AWS_ACCESS_KEY_ID",
	    "aws-access-key-id",
	    "aws_secret_access_key",
	    "AWS_SECRET_ACCESS_KEY",
	    "aws_session_token",
	    "Aws-Session-Token",
	    "secret",
	    "secret_key",
	    "client_secret",
	    "token",
	    "session-token",
	    "password",
	    "db_password",
	    "passwd",
	    "credential_process",
	    "access_key",
	    "access_key_id",
	    NULL,
	};
	char json[256];
	char needle[128];

	(void)state;
	for (size_t i = 0; keys[i]; i++) {
		snprintf(json, sizeof(json),
			 "{\"train\": \"s3://b/t\", \"%s\": \"AKIAVALUE\"}",
			 keys[i]);
		snprintf(needle, sizeof(needle),
			 "option '%s': credentials are not volume options",
			 keys[i]);
		check_refused(json, needle);
		/* never the value */
		{
			char err[ERRLEN];
			char *got = args_of(json, err);

			assert_null(got);
			assert_null(strstr(err, "AKIAVALUE"));
		}
	}
	/* ... also as a channel name */
	check_refused("{\"secret\": \"s3://b/t\"}", "credentials");
	/* the profile is how to choose credentials */
	check_args("{\"profile\": \"training\"}", "-o|profile=training");
}

static void test_owned_refused(void **state)
{
	static const char *const keys[] = {
	    "foreground",
	    "f",
	    "debug",
	    "d",
	    "pid_file",
	    "pid-file",
	    "PID_FILE",
	    "check_options",
	    "check-options",
	    "help",
	    "h",
	    "version",
	    "V",
	    "mountpoint",
	    NULL,
	};
	char json[256];
	char needle[128];

	(void)state;
	for (size_t i = 0; keys[i]; i++) {
		snprintf(json, sizeof(json), "{\"%s\": \"\"}", keys[i]);
		snprintf(needle, sizeof(needle),
			 "option '%s' is the plugin's own", keys[i]);
		check_refused(json, needle);
	}
}

/* ---- state.c ---- */

static char *tmpdir(void)
{
	char *dir = strdup("/tmp/test_plugin.XXXXXX");

	assert_non_null(dir);
	assert_non_null(mkdtemp(dir));
	return dir;
}

static void rmtree(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[4096];

	assert_non_null(d);
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		assert_int_equal(unlink(path), 0);
	}
	closedir(d);
	assert_int_equal(rmdir(dir), 0);
}

static void write_file(const char *dir, const char *name, const char *text)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

static size_t count_files(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	size_t n = 0;

	assert_non_null(d);
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

static void test_ids(void **state)
{
	json_t *opts = json_object();
	struct plugin_volume *v = plugin_volume_new("vol", opts);

	(void)state;
	assert_non_null(v);
	assert_int_equal(v->nids, 0);
	assert_int_equal(plugin_volume_add_id(v, "a"), 0);
	assert_int_equal(plugin_volume_add_id(v, "b"), 0);
	assert_int_equal(plugin_volume_add_id(v, "a"), 0); /* once */
	assert_int_equal(v->nids, 2);
	assert_true(plugin_volume_has_id(v, "a"));
	assert_false(plugin_volume_has_id(v, "c"));
	plugin_volume_drop_id(v, "c");
	assert_int_equal(v->nids, 2);
	plugin_volume_drop_id(v, "a");
	assert_int_equal(v->nids, 1);
	assert_string_equal(v->ids[0], "b");
	plugin_volume_clear_ids(v);
	assert_int_equal(v->nids, 0);
	assert_non_null(v->created_at);
	assert_int_equal(strlen(v->created_at), 20); /* YYYY-MM-DDTHH:MM:SSZ */
	plugin_volume_free(v);
	json_decref(opts);
}

static void test_round_trip(void **state)
{
	char *dir = tmpdir();
	json_t *opts = parse("{\"train\": \"s3://b/t\", \"epochs\": \"2\", "
			     "\"odd\": \"\\\"quoted\\\" caf\\u00e9\\n\"}");
	struct plugin_volume *v = plugin_volume_new("vol-1", opts);
	struct plugin_volume *back;
	char err[ERRLEN];

	(void)state;
	assert_non_null(v);
	assert_int_equal(plugin_volume_add_id(v, "id-1"), 0);
	assert_int_equal(plugin_volume_add_id(v, "id-2"), 0);
	assert_int_equal(plugin_state_save(dir, v, err, sizeof(err)), 0);
	/* written whole: no temporary file left */
	assert_int_equal(count_files(dir), 1);
	back = plugin_state_load(dir, "vol-1.json", err, sizeof(err));
	if (!back)
		fail_msg("load: %s", err);
	assert_string_equal(back->name, "vol-1");
	assert_string_equal(back->created_at, v->created_at);
	assert_true(json_equal(back->opts, opts));
	assert_int_equal(back->nids, 2);
	assert_string_equal(back->ids[0], "id-1");
	assert_string_equal(back->ids[1], "id-2");
	plugin_volume_free(back);

	/* saved again with fewer IDs: replaced */
	plugin_volume_drop_id(v, "id-1");
	assert_int_equal(plugin_state_save(dir, v, err, sizeof(err)), 0);
	back = plugin_state_load(dir, "vol-1.json", err, sizeof(err));
	assert_non_null(back);
	assert_int_equal(back->nids, 1);
	plugin_volume_free(back);

	assert_int_equal(plugin_state_delete(dir, "vol-1", err, sizeof(err)),
			 0);
	assert_int_equal(count_files(dir), 0);
	/* deleting what is not there is fine */
	assert_int_equal(plugin_state_delete(dir, "vol-1", err, sizeof(err)),
			 0);
	plugin_volume_free(v);
	json_decref(opts);
	rmtree(dir);
	free(dir);
}

static void test_load_all_skips_bad(void **state)
{
	char *dir = tmpdir();
	json_t *opts = parse("{\"train\": \"s3://b/t\"}");
	const char *names[] = {"aa", "zz"};
	struct plugin_volume *list;
	unsigned nbad = 99;
	char err[ERRLEN];

	(void)state;
	for (size_t i = 0; i < 2; i++) {
		struct plugin_volume *v = plugin_volume_new(names[i], opts);

		assert_non_null(v);
		assert_int_equal(plugin_state_save(dir, v, err, sizeof(err)),
				 0);
		plugin_volume_free(v);
	}
	write_file(dir, "corrupt.json", "{\"Name\": \"corrupt\", \"Opts\": ");
	write_file(dir, "misnamed.json",
		   "{\"Name\": \"other\", \"Opts\": {}, \"CreatedAt\": \"x\", "
		   "\"MountIDs\": []}");
	write_file(dir, "badids.json",
		   "{\"Name\": \"badids\", \"Opts\": {}, \"CreatedAt\": \"x\", "
		   "\"MountIDs\": [\"ok\", 3]}");
	write_file(dir, "badopts.json",
		   "{\"Name\": \"badopts\", \"Opts\": {\"a\": 1}, "
		   "\"CreatedAt\": \"x\", \"MountIDs\": []}");
	write_file(dir, "dup.json",
		   "{\"Name\": \"dup\", \"Name\": \"dup\", \"Opts\": {}, "
		   "\"CreatedAt\": \"x\", \"MountIDs\": []}");
	write_file(dir, "x.json",
		   "{\"Name\": \"x\", \"Opts\": {}, "
		   "\"CreatedAt\": \"x\", \"MountIDs\": []}");
	write_file(dir, ".aa.json.tmp", "{");	      /* a write cut short */
	write_file(dir, "notes.txt", "not a record"); /* not ours */

	list = plugin_state_load_all(dir, &nbad);
	assert_non_null(list);
	assert_int_equal(nbad, 6); /* x.json: a name Docker would refuse */
	assert_string_equal(list->name, "aa");
	assert_non_null(list->next);
	assert_string_equal(list->next->name, "zz");
	assert_null(list->next->next);
	assert_true(json_equal(list->opts, opts));
	while (list) {
		struct plugin_volume *next = list->next;

		plugin_volume_free(list);
		list = next;
	}

	/* a single load says why */
	assert_null(plugin_state_load(dir, "misnamed.json", err, sizeof(err)));
	assert_non_null(strstr(err, "Name"));
	assert_null(plugin_state_load(dir, "nothere.json", err, sizeof(err)));
	assert_null(plugin_state_load(dir, "notes.txt", err, sizeof(err)));

	json_decref(opts);
	rmtree(dir);
	free(dir);
}

static void test_load_all_empty(void **state)
{
	char *dir = tmpdir();
	unsigned nbad = 7;

	(void)state;
	errno = 0;
	assert_null(plugin_state_load_all(dir, &nbad));
	assert_int_equal(errno, 0);
	assert_int_equal(nbad, 0);
	rmtree(dir);
	free(dir);
	assert_null(plugin_state_load_all("/nonexistent/test_plugin", &nbad));
	assert_int_equal(errno, ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_names),
	    cmocka_unit_test(test_args),
	    cmocka_unit_test(test_bad_keys),
	    cmocka_unit_test(test_too_many),
	    cmocka_unit_test(test_credentials_refused),
	    cmocka_unit_test(test_owned_refused),
	    cmocka_unit_test(test_ids),
	    cmocka_unit_test(test_round_trip),
	    cmocka_unit_test(test_load_all_skips_bad),
	    cmocka_unit_test(test_load_all_empty),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
