/*
 * test_creds: the credential chain (environment, shared credentials file,
 * shared config file), its error messages, and region resolution.  Every
 * test starts from an environment with no AWS_* variables and HOME pointing
 * at a directory that does not exist; files are temporary files under /tmp
 * removed by the teardown.
 */
#include "config.h"

#include "s3/s3.h"

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

#include "tests/unit/aws_env.h"

#define MAX_TEMP 8

static const struct s3_creds_query no_query = {.tls_verify = true};
static const struct s3_creds_query other_query = {.profile = "other",
						  .tls_verify = true};

static char temp_files[MAX_TEMP][128];
static size_t ntemp;
static char temp_dir[64];
static char temp_dir_aws[96];

static int setup(void **state)
{
	aws_env_clear();
	ntemp = 0;
	return 0;
}

static int teardown(void **state)
{
	size_t i;

	for (i = 0; i < ntemp; i++)
		unlink(temp_files[i]);
	ntemp = 0;
	if (temp_dir_aws[0]) {
		rmdir(temp_dir_aws);
		temp_dir_aws[0] = '\0';
	}
	if (temp_dir[0]) {
		rmdir(temp_dir);
		temp_dir[0] = '\0';
	}
	return 0;
}

/* Writes content to a new temporary file; returns its path. */
static const char *temp_file(const char *content)
{
	char *path;
	FILE *f;
	int fd;

	assert_true(ntemp < MAX_TEMP);
	path = temp_files[ntemp];
	snprintf(path, sizeof(temp_files[0]), "/tmp/s3pipe-test-creds-XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	ntemp++;
	f = fdopen(fd, "w");
	assert_non_null(f);
	assert_true(fputs(content, f) >= 0);
	assert_int_equal(fclose(f), 0);
	return path;
}

static const char *credentials_file(const char *content)
{
	const char *path = temp_file(content);

	setenv("AWS_SHARED_CREDENTIALS_FILE", path, 1);
	return path;
}

static const char *config_file(const char *content)
{
	const char *path = temp_file(content);

	setenv("AWS_CONFIG_FILE", path, 1);
	return path;
}

static void assert_contains(const char *haystack, const char *needle)
{
	if (!strstr(haystack, needle))
		fail_msg("'%s' does not contain '%s'", haystack, needle);
}

static const char creds_text[] = "# shared credentials\n"
				 "[default]\n"
				 "aws_access_key_id = AKIDDEFAULT\n"
				 "aws_secret_access_key = secret/default+key\n"
				 "\n"
				 "; another comment\n"
				 "  [ other ]  \n"
				 "\tAWS_ACCESS_KEY_ID=AKIDOTHER\n"
				 "aws_secret_access_key:secret#other\n"
				 "aws_session_token =   token-other  \n"
				 "s3 =\n"
				 "    aws_access_key_id = NESTED-NOT-A-KEY\n";

/* ---- environment ---- */

static void test_env(void **state)
{
	struct s3_creds c;
	char err[256] = "";

	setenv("AWS_ACCESS_KEY_ID", "AKIDENV", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "secret-env", 1);
	assert_int_equal(s3_creds_resolve(&no_query, &c, err, sizeof(err)), 0);
	assert_string_equal(c.access_key, "AKIDENV");
	assert_string_equal(c.secret_key, "secret-env");
	assert_null(c.session_token);
	assert_string_equal(c.source, "environment");
	s3_creds_clear(&c);
	assert_null(c.access_key);
	assert_null(c.secret_key);
	assert_null(c.source);

	setenv("AWS_SESSION_TOKEN", "token-env", 1);
	assert_int_equal(s3_creds_resolve(&no_query, &c, err, sizeof(err)), 0);
	assert_string_equal(c.session_token, "token-env");
	s3_creds_clear(&c);
}

static void test_env_half_set(void **state)
{
	struct s3_creds c;
	char err[256] = "";

	setenv("AWS_ACCESS_KEY_ID", "AKIDENV", 1);
	assert_int_equal(s3_creds_resolve(&no_query, &c, err, sizeof(err)),
			 EINVAL);
	assert_string_equal(
	    err, "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not");
	assert_null(c.access_key);

	unsetenv("AWS_ACCESS_KEY_ID");
	setenv("AWS_SECRET_ACCESS_KEY", "secret-env", 1);
	assert_int_equal(s3_creds_resolve(&no_query, &c, err, sizeof(err)),
			 EINVAL);
	assert_string_equal(
	    err, "AWS_SECRET_ACCESS_KEY is set but AWS_ACCESS_KEY_ID is not");
	assert_null(strstr(err, "secret-env"));

	/* Half-set wins over a usable file: no silent fallback. */
	credentials_file(creds_text);
	assert_int_equal(s3_creds_resolve(&no_query, &c, err, sizeof(err)),
			 EINVAL);
}

static void test_env_over_files(void **state)
{
	struct s3_creds c;
	char err[256] = "";

	credentials_file(creds_text);
	setenv("AWS_ACCESS_KEY_ID", "AKIDENV", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "secret-env", 1);
	assert_int_equal(s3_creds_resolve(&no_query, &c, err, sizeof(err)), 0);
	assert_string_equal(c.access_key, "AKIDENV");
	s3_creds_clear(&c);
}

static void test_nothing_found(void **state)
{
	struct s3_creds c;
	char err[256] = "";

	/* Empty variables count as unset. */
	setenv("AWS_ACCESS_KEY_ID", "", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "", 1);
	assert_int_equal(s3_creds_resolve(&no_query, &c, err, sizeof(err)),
			 ENOENT);
	assert_contains(err, "no credentials found");
	assert_contains(err, "/nonexistent/s3pipe-test-home/.aws/credentials");
	assert_null(c.access_key);
}

/* ---- shared credentials file ---- */

static void test_credentials_file(void **state)
{
	struct s3_creds c;
	char err[256] = "";
	char want[256];
	const char *path = credentials_file(creds_text);

	assert_int_equal(s3_creds_resolve(&no_query, &c, err, sizeof(err)), 0);
	assert_string_equal(c.access_key, "AKIDDEFAULT");
	assert_string_equal(c.secret_key, "secret/default+key");
	assert_null(c.session_token);
	snprintf(want, sizeof(want),
		 "shared credentials file %s (profile default)", path);
	assert_string_equal(c.source, want);
	s3_creds_clear(&c);

	assert_int_equal(s3_creds_resolve(&other_query, &c, err, sizeof(err)),
			 0);
	assert_string_equal(c.access_key, "AKIDOTHER");
	assert_string_equal(c.secret_key, "secret#other");
	assert_string_equal(c.session_token, "token-other");
	snprintf(want, sizeof(want),
		 "shared credentials file %s (profile other)", path);
	assert_string_equal(c.source, want);
	s3_creds_clear(&c);

	setenv("AWS_PROFILE", "other", 1);
	assert_int_equal(s3_creds_resolve(&no_query, &c, err, sizeof(err)), 0);
	assert_string_equal(c.access_key, "AKIDOTHER");
	s3_creds_clear(&c);

	/* The argument beats AWS_PROFILE. */
	assert_int_equal(
	    s3_creds_resolve(&(struct s3_creds_query){.profile = "default"}, &c,
			     err, sizeof(err)),
	    0);
	assert_string_equal(c.access_key, "AKIDDEFAULT");
	s3_creds_clear(&c);
}

static void test_home_default_path(void **state)
{
	struct s3_creds c;
	char err[256] = "";
	char path[128];
	FILE *f;

	snprintf(temp_dir, sizeof(temp_dir), "/tmp/s3pipe-test-home-XXXXXX");
	assert_non_null(mkdtemp(temp_dir));
	snprintf(temp_dir_aws, sizeof(temp_dir_aws), "%s/.aws", temp_dir);
	assert_int_equal(mkdir(temp_dir_aws, 0700), 0);
	snprintf(path, sizeof(path), "%s/credentials", temp_dir_aws);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("[default]\naws_access_key_id=AKIDHOME\n"
	      "aws_secret_access_key=s\n",
	      f);
	assert_int_equal(fclose(f), 0);
	assert_true(ntemp < MAX_TEMP);
	snprintf(temp_files[ntemp++], sizeof(temp_files[0]), "%s", path);

	setenv("HOME", temp_dir, 1);
	assert_int_equal(s3_creds_resolve(&no_query, &c, err, sizeof(err)), 0);
	assert_string_equal(c.access_key, "AKIDHOME");
	assert_contains(c.source, path);
	s3_creds_clear(&c);

	/* "~/" in AWS_SHARED_CREDENTIALS_FILE means HOME. */
	setenv("AWS_SHARED_CREDENTIALS_FILE", "~/.aws/credentials", 1);
	assert_int_equal(s3_creds_resolve(&no_query, &c, err, sizeof(err)), 0);
	assert_string_equal(c.access_key, "AKIDHOME");
	s3_creds_clear(&c);
}

static void test_file_half_set(void **state)
{
	struct s3_creds c;
	char err[512] = "";

	credentials_file("[default]\naws_access_key_id = AKIDHALF\n");
	assert_int_equal(s3_creds_resolve(&no_query, &c, err, sizeof(err)),
			 EINVAL);
	assert_contains(err, "profile 'default'");
	assert_contains(err,
			"has aws_access_key_id but no aws_secret_access_key");
	assert_null(strstr(err, "AKIDHALF"));
}

static void test_malformed_file(void **state)
{
	struct s3_creds c;
	char err[512] = "";

	credentials_file("[default]\naws_access_key_id = AKID\n"
			 "secret-without-key\n");
	assert_int_equal(s3_creds_resolve(&no_query, &c, err, sizeof(err)),
			 EINVAL);
	assert_contains(err, "malformed line 3 of shared credentials file");
	assert_null(strstr(err, "secret-without-key"));

	credentials_file("[default\naws_access_key_id = AKID\n");
	assert_int_equal(s3_creds_resolve(&no_query, &c, err, sizeof(err)),
			 EINVAL);
	assert_contains(err, "malformed section header at line 1");
}

static void test_unreadable_file(void **state)
{
	struct s3_creds c;
	char err[512] = "";

	/* A directory opens but cannot be read as a file. */
	setenv("AWS_SHARED_CREDENTIALS_FILE", "/tmp", 1);
	assert_int_equal(s3_creds_resolve(&no_query, &c, err, sizeof(err)),
			 EINVAL);
	assert_contains(err, "cannot read shared credentials file /tmp");
}

/* ---- shared config file ---- */

static const char config_text[] = "[default]\n"
				  "region = eu-west-1\n"
				  "\n"
				  "[profile other]\n"
				  "region=ap-south-1\n"
				  "aws_access_key_id = AKIDCONFIG\n"
				  "aws_secret_access_key = secret-config\n"
				  "\n"
				  "[profile   third ]\n"
				  "aws_access_key_id = AKIDTHIRD\n"
				  "aws_secret_access_key = secret-third\n"
				  "[other]\n"
				  "aws_access_key_id = WRONG-SECTION\n"
				  "aws_secret_access_key = wrong\n";

static void test_config_file(void **state)
{
	struct s3_creds c;
	char err[256] = "";
	char want[256];
	const char *path = config_file(config_text);

	/* The credentials file has no [other]: the config file supplies it. */
	credentials_file("[default]\naws_access_key_id=A\n"
			 "aws_secret_access_key=B\n");
	assert_int_equal(s3_creds_resolve(&other_query, &c, err, sizeof(err)),
			 0);
	assert_string_equal(c.access_key, "AKIDCONFIG");
	assert_string_equal(c.secret_key, "secret-config");
	snprintf(want, sizeof(want), "shared config file %s (profile other)",
		 path);
	assert_string_equal(c.source, want);
	s3_creds_clear(&c);

	assert_int_equal(
	    s3_creds_resolve(&(struct s3_creds_query){.profile = "third"}, &c,
			     err, sizeof(err)),
	    0);
	assert_string_equal(c.access_key, "AKIDTHIRD");
	s3_creds_clear(&c);

	/* The credentials file comes before the config file. */
	assert_int_equal(s3_creds_resolve(&no_query, &c, err, sizeof(err)), 0);
	assert_string_equal(c.access_key, "A");
	s3_creds_clear(&c);
}

static void test_missing_profile(void **state)
{
	struct s3_creds c;
	char err[512] = "";
	char want[512];
	const char *cred = credentials_file(creds_text);
	const char *conf = config_file(config_text);

	snprintf(want, sizeof(want), "profile 'nope' not found in %s, %s", cred,
		 conf);
	assert_int_equal(
	    s3_creds_resolve(&(struct s3_creds_query){.profile = "nope"}, &c,
			     err, sizeof(err)),
	    EINVAL);
	assert_string_equal(err, want);

	setenv("AWS_PROFILE", "nope", 1);
	assert_int_equal(s3_creds_resolve(&no_query, &c, err, sizeof(err)),
			 EINVAL);
	assert_string_equal(err, want);

	/* Missing files are fine, but the profile is still missing. */
	setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/credentials", 1);
	setenv("AWS_CONFIG_FILE", "/nonexistent/config", 1);
	assert_int_equal(s3_creds_resolve(&no_query, &c, err, sizeof(err)),
			 EINVAL);
	assert_string_equal(err, "profile 'nope' not found in "
				 "/nonexistent/credentials, "
				 "/nonexistent/config");

	/* A profile that exists but has no keys is not "not found". */
	unsetenv("AWS_PROFILE");
	config_file("[profile roles]\nrole_arn = arn:aws:iam::1:role/x\n"
		    "source_profile = default\n");
	assert_int_equal(
	    s3_creds_resolve(&(struct s3_creds_query){.profile = "roles"}, &c,
			     err, sizeof(err)),
	    ENOENT);
	assert_contains(err, "profile 'roles'");
	assert_contains(err, "uses role_arn, which s3pipe does not support");
}

/* ---- region ---- */

static void test_region(void **state)
{
	char region[32];

	s3_region_resolve(NULL, NULL, region, sizeof(region));
	assert_string_equal(region, "us-east-1");

	config_file(config_text);
	s3_region_resolve(NULL, NULL, region, sizeof(region));
	assert_string_equal(region, "eu-west-1");
	s3_region_resolve(NULL, "other", region, sizeof(region));
	assert_string_equal(region, "ap-south-1");
	s3_region_resolve(NULL, "third", region, sizeof(region));
	assert_string_equal(region, "us-east-1");
	setenv("AWS_PROFILE", "other", 1);
	s3_region_resolve(NULL, NULL, region, sizeof(region));
	assert_string_equal(region, "ap-south-1");

	setenv("AWS_DEFAULT_REGION", "us-west-1", 1);
	s3_region_resolve(NULL, "other", region, sizeof(region));
	assert_string_equal(region, "us-west-1");

	setenv("AWS_REGION", "us-west-2", 1);
	s3_region_resolve(NULL, "other", region, sizeof(region));
	assert_string_equal(region, "us-west-2");

	s3_region_resolve("ca-central-1", "other", region, sizeof(region));
	assert_string_equal(region, "ca-central-1");
	s3_region_resolve("", "other", region, sizeof(region));
	assert_string_equal(region, "us-west-2");

	/* Bounded output. */
	s3_region_resolve("ca-central-1", NULL, region, 4);
	assert_string_equal(region, "ca-");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_env, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_env_half_set, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_env_over_files, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_nothing_found, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_credentials_file, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_home_default_path, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_file_half_set, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_malformed_file, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_unreadable_file, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_config_file, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_missing_profile, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_region, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
