/*
 * Unit tests for fs/options.c: the command lines of s3pipe and mount.s3pipe.
 *
 * Every parse goes through run(), which copies the arguments, parses, then
 * overwrites and frees the copies before any assertion, so a result that
 * still pointed into argv would show up as garbage (or as a use-after-free
 * under ASan).  Error cases compare the exact message and check the style
 * rules: one line, no trailing period, no "s3pipe:" prefix.
 */
#include "config.h"

#include "fs/options.h"
#include "fs/session.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#define MAX_ARGS 200

static char err[512];

/* Parses args (NULL-terminated, without argv[0]) into a fresh o. */
static int run(bool helper, struct fs_options *o, const char *const *args)
{
	char *argv[MAX_ARGS + 1];
	int argc = 0;
	int rc, i;

	argv[argc++] = strdup(helper ? "mount.s3pipe" : "s3pipe");
	for (i = 0; args[i]; i++) {
		assert_true(argc < MAX_ARGS);
		argv[argc] = strdup(args[i]);
		assert_non_null(argv[argc]);
		argc++;
	}
	argv[argc] = NULL;
	fs_options_init(o);
	memset(err, 'Z', sizeof(err) - 1);
	err[sizeof(err) - 1] = '\0';
	rc = fs_options_parse(argc, argv, helper, o, err, sizeof(err));
	for (i = 0; i < argc; i++) {
		memset(argv[i], 'X', strlen(argv[i]));
		free(argv[i]);
	}
	return rc;
}

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})

/* Asserts parse succeeds; o is left for the caller to check and free. */
#define OK(helper, o, ...)                                                     \
	do {                                                                   \
		int rc_ = run(helper, o, ARGS(__VA_ARGS__));                   \
		if (rc_ != 0)                                                  \
			print_error("unexpected failure: %s\n", err);          \
		assert_int_equal(rc_, 0);                                      \
	} while (0)

static void check_style(const char *msg)
{
	size_t len = strlen(msg);

	assert_true(len > 0);
	assert_null(strchr(msg, '\n'));
	/* no trailing period ("s3://..." is an ellipsis, not a period) */
	if (len < 3 || strcmp(msg + len - 3, "...") != 0)
		assert_int_not_equal(msg[len - 1], '.');
	assert_true(strncmp(msg, "s3pipe:", 7) != 0);
	/* lowercase start, except where the message starts with an option */
	assert_false(msg[0] >= 'A' && msg[0] <= 'Z');
}

static void expect_error_v(bool helper, const char *msg,
			   const char *const *args)
{
	struct fs_options o;
	int rc = run(helper, &o, args);

	if (rc != EINVAL || strcmp(err, msg) != 0)
		print_error("rc %d, got '%s', want '%s'\n", rc, err, msg);
	assert_int_equal(rc, EINVAL);
	assert_string_equal(err, msg);
	check_style(err);
	fs_options_free(&o);
}

#define ERR(helper, msg, ...) expect_error_v(helper, msg, ARGS(__VA_ARGS__))

/* As ERR but only the start of the message is ours (s3/uri.c writes the
 * rest). */
static void expect_error_prefix_v(bool helper, const char *prefix,
				  const char *const *args)
{
	struct fs_options o;
	int rc = run(helper, &o, args);

	assert_int_equal(rc, EINVAL);
	if (strncmp(err, prefix, strlen(prefix)) != 0)
		print_error("got '%s', want prefix '%s'\n", err, prefix);
	assert_true(strncmp(err, prefix, strlen(prefix)) == 0);
	check_style(err);
	fs_options_free(&o);
}

#define ERR_PREFIX(helper, prefix, ...)                                        \
	expect_error_prefix_v(helper, prefix, ARGS(__VA_ARGS__))

#define CHANNEL_HINT "invalid channel name '%s': use 1-64 of A-Z a-z 0-9 . - _"

/* ---- defaults and the documented command lines ---- */

static void test_defaults(void **state)
{
	struct fs_options o;

	fs_options_init(&o);
	assert_int_equal(o.nchannels, 0);
	assert_null(o.mountpoint);
	assert_null(o.s3.endpoint);
	assert_null(o.s3.region);
	assert_null(o.s3.profile);
	assert_null(o.s3.ca_bundle);
	assert_false(o.s3.no_sign);
	assert_false(o.s3.force_path_style);
	assert_true(o.s3.tls_verify);
	assert_int_equal(o.cache.budget_bytes, 256ULL << 20);
	assert_int_equal(o.cache.block_size, 8ULL << 20);
	assert_int_equal(o.s3.max_connections, 64);
	assert_int_equal(o.s3.max_retries, 10);
	assert_int_equal(o.s3.stall_seconds, 30);
	assert_int_equal(o.epochs, 0);
	assert_int_equal(o.seek, FS_SEEK_REJECT);
	assert_false(o.foreground);
	assert_false(o.debug);
	assert_false(o.allow_other);
	assert_false(o.uid_set);
	assert_false(o.gid_set);
	assert_false(o.fake);
	assert_false(o.help);
	assert_false(o.version);
	assert_int_equal(o.max_threads, 16);
	assert_int_equal(o.fuse_args.argc, 0);
	fs_options_free(&o);
}

static void test_defaults_after_parse(void **state)
{
	struct fs_options o;

	OK(false, &o, "train=s3://bucket", "/mnt");
	assert_int_equal(o.cache.budget_bytes, 256ULL << 20);
	assert_int_equal(o.cache.block_size, 8ULL << 20);
	assert_int_equal(o.s3.max_connections, 64);
	assert_int_equal(o.s3.max_retries, 10);
	assert_int_equal(o.s3.stall_seconds, 30);
	assert_int_equal(o.epochs, 0);
	assert_int_equal(o.seek, FS_SEEK_REJECT);
	assert_false(o.foreground);
	assert_int_equal(o.max_threads, FS_DEFAULT_MAX_THREADS);
	assert_int_equal(o.nchannels, 1);
	assert_string_equal(o.channels[0].bucket, "bucket");
	assert_string_equal(o.channels[0].prefix, "");
	/* nothing for libfuse but the program */
	assert_int_equal(o.fuse_args.argc, 1);
	assert_string_equal(o.fuse_args.argv[0], "s3pipe");
	assert_null(o.fuse_args.argv[1]);
	fs_options_free(&o);
}

static void test_two_channels_with_endpoint(void **state)
{
	struct fs_options o;

	OK(false, &o, "--endpoint-url", "http://127.0.0.1:9000",
	   "train=s3://bucket/data/train/", "validation=s3://bucket/data/val/",
	   "/opt/ml/input/data");
	assert_string_equal(o.s3.endpoint, "http://127.0.0.1:9000");
	assert_int_equal(o.nchannels, 2);
	assert_string_equal(o.channels[0].name, "train");
	assert_string_equal(o.channels[0].uri, "s3://bucket/data/train/");
	assert_string_equal(o.channels[0].bucket, "bucket");
	assert_string_equal(o.channels[0].prefix, "data/train/");
	assert_string_equal(o.channels[1].name, "validation");
	assert_string_equal(o.channels[1].uri, "s3://bucket/data/val/");
	assert_string_equal(o.channels[1].bucket, "bucket");
	assert_string_equal(o.channels[1].prefix, "data/val/");
	assert_string_equal(o.mountpoint, "/opt/ml/input/data");
	assert_false(o.help);
	fs_options_free(&o);
}

static void test_mount_helper_source_and_options(void **state)
{
	struct fs_options o;

	OK(true, &o, "s3://bucket/data/train/", "/mnt/train", "-o",
	   "channel=train,region=eu-west-1,cache_size=512M");
	assert_int_equal(o.nchannels, 1);
	assert_string_equal(o.channels[0].name, "train");
	assert_string_equal(o.channels[0].uri, "s3://bucket/data/train/");
	assert_string_equal(o.channels[0].bucket, "bucket");
	assert_string_equal(o.channels[0].prefix, "data/train/");
	assert_string_equal(o.mountpoint, "/mnt/train");
	assert_string_equal(o.s3.region, "eu-west-1");
	assert_int_equal(o.cache.budget_bytes, 512ULL << 20);
	assert_false(o.foreground);
	assert_false(o.fake);
	fs_options_free(&o);
}

static void test_fstab_style(void **state)
{
	struct fs_options o;

	OK(true, &o, "s3://bucket/data/train/", "/mnt/train", "-o",
	   "rw,_netdev,channel=train,allow_other");
	assert_string_equal(o.channels[0].name, "train");
	assert_true(o.allow_other);
	assert_string_equal(o.mountpoint, "/mnt/train");
	fs_options_free(&o);

	/* as util-linux mount(8) runs it: flags before -o */
	OK(true, &o, "s3://bucket/data/val", "/mnt/val", "-n", "-o",
	   "rw,_netdev,channel=validation,allow_other");
	assert_string_equal(o.channels[0].name, "validation");
	assert_string_equal(o.channels[0].prefix, "data/val");
	fs_options_free(&o);

	/* every keyword fstab or mount may hand us */
	OK(true, &o, "s3://bucket", "/mnt", "-o",
	   "_netdev,auto,noauto,user,users,nofail,defaults,rw,ro,nouser,exec,"
	   "noexec,suid,nosuid,dev,nodev,owner,group,x-systemd.automount,"
	   "x-systemd.idle-timeout=60,comment=hello,user=alice");
	assert_string_equal(o.channels[0].name, "train");
	assert_false(o.allow_other);
	assert_int_equal(o.cache.budget_bytes, 256ULL << 20);
	/* dropped, not handed to libfuse (which would take rw and user=) */
	assert_int_equal(o.fuse_args.argc, 1);
	fs_options_free(&o);

	/* the keywords are harmless on s3pipe's own command line too */
	OK(false, &o, "-o", "defaults,_netdev", "a=s3://bucket", "/mnt");
	assert_int_equal(o.nchannels, 1);
	fs_options_free(&o);
}

static void test_helper_default_channel(void **state)
{
	struct fs_options o;

	OK(true, &o, "s3://my.bucket-1/x/y", "/mnt/x");
	assert_string_equal(o.channels[0].name, "train");
	assert_string_equal(o.channels[0].bucket, "my.bucket-1");
	assert_string_equal(o.channels[0].prefix, "x/y");
	fs_options_free(&o);
}

/* ---- every option, every form ---- */

static void check_all_set(const struct fs_options *o)
{
	assert_string_equal(o->s3.endpoint, "https://s3.example.com:8443");
	assert_string_equal(o->s3.region, "eu-west-1");
	assert_string_equal(o->s3.profile, "dev");
	assert_string_equal(o->s3.ca_bundle, "/etc/ssl/ca.pem");
	assert_true(o->s3.no_sign);
	assert_true(o->s3.force_path_style);
	assert_false(o->s3.tls_verify);
	assert_int_equal(o->cache.budget_bytes, 1ULL << 30);
	assert_int_equal(o->cache.block_size, 16ULL << 20);
	assert_int_equal(o->s3.max_connections, 64);
	assert_int_equal(o->s3.max_retries, 0);
	assert_int_equal(o->s3.stall_seconds, 90);
	assert_int_equal(o->epochs, 3);
	assert_int_equal(o->seek, FS_SEEK_EMULATE);
	assert_true(o->uid_set);
	assert_int_equal(o->uid, 1000);
	assert_true(o->gid_set);
	assert_int_equal(o->gid, 1001);
	assert_true(o->allow_other);
	assert_true(o->foreground);
	assert_false(o->debug);
	assert_int_equal(o->nchannels, 1);
	assert_string_equal(o->mountpoint, "/mnt");
}

static void test_all_long_space(void **state)
{
	struct fs_options o;

	OK(false, &o, "--endpoint-url", "https://s3.example.com:8443/",
	   "--region", "eu-west-1", "--profile", "dev", "--no-sign-request",
	   "--force-path-style", "--no-verify-ssl", "--ca-bundle",
	   "/etc/ssl/ca.pem", "--cache-size", "1G", "--part-size", "16M",
	   "--max-connections", "64", "--max-retries", "0", "--stall-timeout",
	   "90", "--epochs", "3", "--seek", "emulate", "--uid", "1000", "--gid",
	   "1001", "--allow-other", "--foreground", "c=s3://bucket", "/mnt");
	check_all_set(&o);
	fs_options_free(&o);
}

static void test_all_long_equals(void **state)
{
	struct fs_options o;

	OK(false, &o, "--endpoint-url=https://s3.example.com:8443",
	   "--region=eu-west-1", "--profile=dev", "--no-sign-request",
	   "--force-path-style", "--no-verify-ssl",
	   "--ca-bundle=/etc/ssl/ca.pem", "--cache-size=1G", "--part-size=16M",
	   "--max-connections=64", "--max-retries=0", "--stall-timeout=90",
	   "--epochs=3", "--seek=emulate", "--uid=1000", "--gid=1001",
	   "--allow-other", "-f", "c=s3://bucket", "/mnt");
	check_all_set(&o);
	fs_options_free(&o);
}

static void test_all_o_one_list(void **state)
{
	struct fs_options o;

	OK(false, &o, "-o",
	   "endpoint_url=https://s3.example.com:8443/,region=eu-west-1,"
	   "profile=dev,no_sign_request,force_path_style,no_verify_ssl,"
	   "ca_bundle=/etc/ssl/ca.pem,cache_size=1G,part_size=16M,"
	   "max_connections=64,max_retries=0,stall_timeout=90,epochs=3,"
	   "seek=emulate,uid=1000,gid=1001,allow_other,foreground",
	   "c=s3://bucket", "/mnt");
	check_all_set(&o);
	fs_options_free(&o);

	/* the same list through mount.s3pipe */
	OK(true, &o, "s3://bucket", "/mnt", "-o",
	   "endpoint_url=https://s3.example.com:8443/,region=eu-west-1,"
	   "profile=dev,no_sign_request,force_path_style,no_verify_ssl,"
	   "ca_bundle=/etc/ssl/ca.pem,cache_size=1G,part_size=16M,"
	   "max_connections=64,max_retries=0,stall_timeout=90,epochs=3,"
	   "seek=emulate,uid=1000,gid=1001,allow_other,foreground");
	check_all_set(&o);
	fs_options_free(&o);
}

static void test_all_o_many(void **state)
{
	struct fs_options o;

	/* several -o, dashes in -o names, attached -oVALUE */
	OK(false, &o, "-o", "endpoint-url=https://s3.example.com:8443",
	   "-oregion=eu-west-1", "-o", "profile=dev", "-o", "no-sign-request",
	   "-o", "force_path_style,no_verify_ssl", "-o",
	   "ca-bundle=/etc/ssl/ca.pem", "-o", "cache-size=1G", "-o",
	   "part_size=16M", "-o", "max-connections=64", "-o", "max_retries=0",
	   "-o", "stall-timeout=90", "-o", "epochs=3", "-o", "seek=emulate",
	   "-o", "uid=1000", "-o", "gid=1001", "-o", "allow-other", "-o",
	   "foreground", "c=s3://bucket", "/mnt");
	check_all_set(&o);
	fs_options_free(&o);
}

static void test_underscores_in_long(void **state)
{
	struct fs_options o;

	OK(false, &o, "--cache_size", "64M", "--allow_other",
	   "--no_sign-request", "--max_connections=2", "a=s3://bucket", "/mnt");
	assert_int_equal(o.cache.budget_bytes, 64ULL << 20);
	assert_true(o.allow_other);
	assert_true(o.s3.no_sign);
	assert_int_equal(o.s3.max_connections, 2);
	fs_options_free(&o);
}

static void test_debug(void **state)
{
	struct fs_options o;

	OK(false, &o, "-d", "a=s3://bucket", "/mnt");
	assert_true(o.debug);
	assert_true(o.foreground);
	fs_options_free(&o);

	OK(false, &o, "--debug", "a=s3://bucket", "/mnt");
	assert_true(o.debug);
	assert_true(o.foreground);
	fs_options_free(&o);

	OK(true, &o, "s3://bucket", "/mnt", "-o", "debug");
	assert_true(o.debug);
	assert_true(o.foreground);
	assert_false(o.fake);
	fs_options_free(&o);

	OK(false, &o, "-fd", "a=s3://bucket", "/mnt");
	assert_true(o.debug);
	assert_true(o.foreground);
	fs_options_free(&o);
}

static void test_sizes(void **state)
{
	static const struct {
		const char *text;
		uint64_t value;
	} cases[] = {
	    {"64K", 64ULL << 10}, {"64k", 64ULL << 10}, {"65536", 65536},
	    {"8M", 8ULL << 20},	  {"8MiB", 8ULL << 20}, {"1G", 1ULL << 30},
	    {"1g", 1ULL << 30},	  {"100000", 100000},
	};
	struct fs_options o;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		OK(false, &o, "--part-size", cases[i].text, "--cache-size",
		   "4G", "a=s3://bucket", "/mnt");
		assert_int_equal(o.cache.block_size, cases[i].value);
		fs_options_free(&o);
	}
	OK(false, &o, "--cache-size", "2T", "a=s3://bucket", "/mnt");
	assert_int_equal(o.cache.budget_bytes, 2ULL << 40);
	fs_options_free(&o);
}

static void test_limits_accepted(void **state)
{
	struct fs_options o;

	OK(false, &o, "--part-size", "64K", "--cache-size", "128K",
	   "--max-connections", "1", "--max-retries", "20", "--stall-timeout",
	   "1", "--epochs", "4294967295", "--uid", "0", "--gid", "0",
	   "a=s3://bucket", "/mnt");
	assert_int_equal(o.cache.block_size, 64ULL << 10);
	assert_int_equal(o.cache.budget_bytes, 128ULL << 10);
	assert_int_equal(o.s3.max_connections, 1);
	assert_int_equal(o.s3.max_retries, 20);
	assert_int_equal(o.s3.stall_seconds, 1);
	assert_int_equal(o.epochs, 4294967295U);
	assert_true(o.uid_set);
	assert_int_equal(o.uid, 0);
	assert_true(o.gid_set);
	fs_options_free(&o);

	OK(false, &o, "--part-size", "1G", "--cache-size", "2G",
	   "--max-connections", "256", "--stall-timeout", "3600", "--uid",
	   "4294967294", "a=s3://bucket", "/mnt");
	assert_int_equal(o.cache.block_size, 1ULL << 30);
	assert_int_equal(o.s3.max_connections, 256);
	assert_int_equal(o.s3.stall_seconds, 3600);
	assert_int_equal(o.uid, (uid_t)4294967294U);
	fs_options_free(&o);
}

static void test_seek_reject(void **state)
{
	struct fs_options o;

	OK(false, &o, "--seek", "emulate", "--seek=reject", "a=s3://bucket",
	   "/mnt");
	assert_int_equal(o.seek, FS_SEEK_REJECT);
	fs_options_free(&o);
}

static void test_last_wins(void **state)
{
	struct fs_options o;

	OK(false, &o, "--region", "us-east-1", "-o", "region=eu-west-1",
	   "--region=ap-south-1", "--profile", "a", "--profile", "b",
	   "--cache-size", "1G", "--cache-size", "32M", "a=s3://bucket",
	   "/mnt");
	assert_string_equal(o.s3.region, "ap-south-1");
	assert_string_equal(o.s3.profile, "b");
	assert_int_equal(o.cache.budget_bytes, 32ULL << 20);
	fs_options_free(&o);

	OK(true, &o, "s3://bucket", "/mnt", "-o", "channel=a,channel=b");
	assert_string_equal(o.channels[0].name, "b");
	fs_options_free(&o);
}

static void test_endpoint_forms(void **state)
{
	static const struct {
		const char *in;
		const char *out;
	} cases[] = {
	    {"http://localhost", "http://localhost"},
	    {"http://localhost/", "http://localhost"},
	    {"https://s3.eu-west-1.amazonaws.com",
	     "https://s3.eu-west-1.amazonaws.com"},
	    {"http://127.0.0.1:9000/", "http://127.0.0.1:9000"},
	    {"http://[::1]:9000", "http://[::1]:9000"},
	    {"http://[::1]", "http://[::1]"},
	};
	struct fs_options o;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		OK(false, &o, "--endpoint-url", cases[i].in, "a=s3://bucket",
		   "/mnt");
		assert_string_equal(o.s3.endpoint, cases[i].out);
		fs_options_free(&o);
	}
}

/* ---- positionals ---- */

static void test_options_anywhere(void **state)
{
	struct fs_options o;

	OK(false, &o, "a=s3://bucket/x", "--region", "r1", "b=s3://bucket/y",
	   "/mnt", "-f", "-o", "allow_other");
	assert_int_equal(o.nchannels, 2);
	assert_string_equal(o.channels[1].name, "b");
	assert_string_equal(o.s3.region, "r1");
	assert_true(o.foreground);
	assert_true(o.allow_other);
	assert_string_equal(o.mountpoint, "/mnt");
	fs_options_free(&o);

	OK(true, &o, "-o", "channel=val", "s3://bucket/v", "--region=r2",
	   "/mnt/v");
	assert_string_equal(o.channels[0].name, "val");
	assert_string_equal(o.s3.region, "r2");
	assert_string_equal(o.mountpoint, "/mnt/v");
	fs_options_free(&o);
}

static void test_double_dash(void **state)
{
	struct fs_options o;

	OK(false, &o, "-f", "--", "a=s3://bucket", "-mnt");
	assert_true(o.foreground);
	assert_string_equal(o.mountpoint, "-mnt");
	fs_options_free(&o);

	OK(true, &o, "--", "s3://bucket", "-mnt");
	assert_string_equal(o.mountpoint, "-mnt");
	fs_options_free(&o);
}

static void test_mountpoint_with_equals(void **state)
{
	struct fs_options o;

	OK(false, &o, "a=s3://bucket", "/mnt/x=y");
	assert_string_equal(o.mountpoint, "/mnt/x=y");
	fs_options_free(&o);
}

static void test_max_channels(void **state)
{
	const char *args[FS_MAX_CHANNELS + 3];
	char names[FS_MAX_CHANNELS + 1][32];
	struct fs_options o;
	int i;

	for (i = 0; i <= FS_MAX_CHANNELS; i++) {
		snprintf(names[i], sizeof(names[i]), "c%d=s3://bucket/%d", i,
			 i);
		args[i] = names[i];
	}
	/* exactly the maximum works */
	args[FS_MAX_CHANNELS] = "/mnt";
	args[FS_MAX_CHANNELS + 1] = NULL;
	assert_int_equal(run(false, &o, args), 0);
	assert_int_equal(o.nchannels, FS_MAX_CHANNELS);
	assert_string_equal(o.channels[FS_MAX_CHANNELS - 1].name, "c63");
	assert_string_equal(o.channels[FS_MAX_CHANNELS - 1].prefix, "63");
	fs_options_free(&o);

	/* one more does not */
	args[FS_MAX_CHANNELS] = names[FS_MAX_CHANNELS];
	args[FS_MAX_CHANNELS + 1] = "/mnt";
	args[FS_MAX_CHANNELS + 2] = NULL;
	expect_error_v(false, "too many channels: at most 64", args);
}

static void test_escaped_comma(void **state)
{
	struct fs_options o;

	OK(false, &o, "-o", "ca_bundle=/etc/a\\,b.pem,allow_other,,", "-o",
	   ",profile=x\\\\y", "a=s3://bucket", "/mnt");
	assert_string_equal(o.s3.ca_bundle, "/etc/a,b.pem");
	assert_string_equal(o.s3.profile, "x\\y");
	assert_true(o.allow_other);
	fs_options_free(&o);

	/* as in libfuse: a backslash escapes any character, \NNN is octal */
	OK(false, &o, "-o", "ca_bundle=/a\\b\\054c,profile=p\\",
	   "a=s3://bucket", "/mnt");
	assert_string_equal(o.s3.ca_bundle, "/ab,c");
	assert_string_equal(o.s3.profile, "p\\");
	fs_options_free(&o);

	/* on the command line a backslash is just a character */
	OK(false, &o, "--profile", "a\\,b", "a=s3://bucket", "/mnt");
	assert_string_equal(o.s3.profile, "a\\,b");
	fs_options_free(&o);
}

/* ---- options for libfuse ---- */

/* Asserts that o.fuse_args is exactly "PROG -o LIST". */
static void check_fuse_args(const struct fs_options *o, const char *prog,
			    const char *list)
{
	assert_int_equal(o->fuse_args.argc, 3);
	assert_string_equal(o->fuse_args.argv[0], prog);
	assert_string_equal(o->fuse_args.argv[1], "-o");
	assert_string_equal(o->fuse_args.argv[2], list);
	assert_null(o->fuse_args.argv[3]);
}

static void test_passthrough(void **state)
{
	struct fs_options o;

	OK(false, &o, "-o", "auto_unmount", "a=s3://bucket", "/mnt");
	check_fuse_args(&o, "s3pipe", "auto_unmount");
	fs_options_free(&o);

	/* mixed with s3pipe's own and fstab's, over several -o */
	OK(false, &o, "-o", "allow_other,auto_unmount,cache_size=64M,_netdev",
	   "-odefault_permissions", "a=s3://bucket", "/mnt", "-o",
	   "fsname=data,subtype=train,debug");
	check_fuse_args(&o, "s3pipe",
			"auto_unmount,default_permissions,fsname=data,"
			"subtype=train");
	assert_true(o.allow_other);
	assert_true(o.debug);
	assert_int_equal(o.cache.budget_bytes, 64ULL << 20);
	fs_options_free(&o);

	/* mount.s3pipe, as fstab gives it */
	OK(true, &o, "s3://bucket/p", "/mnt", "-o",
	   "rw,nofail,channel=c,auto_unmount,allow_root");
	check_fuse_args(&o, "mount.s3pipe", "auto_unmount,allow_root");
	assert_string_equal(o.channels[0].name, "c");
	fs_options_free(&o);

	/* a comma in a value stays escaped for libfuse */
	OK(false, &o, "-o", "fsname=a\\,b", "a=s3://bucket", "/mnt");
	check_fuse_args(&o, "s3pipe", "fsname=a\\,b");
	fs_options_free(&o);

	/* argv[0] as given */
	{
		char *argv[] = {"/usr/bin/s3pipe", "-o",   "auto_unmount",
				"a=s3://bucket",   "/mnt", NULL};

		fs_options_init(&o);
		assert_int_equal(
		    fs_options_parse(5, argv, false, &o, err, sizeof(err)), 0);
		check_fuse_args(&o, "/usr/bin/s3pipe", "auto_unmount");
		fs_options_free(&o);
	}
}

static void test_passthrough_errors(void **state)
{
	static const char *const unknown[] = {"bogus",
					      "bogus=1",
					      "fsname",
					      "nonempty",
					      "max_idle_threads=4",
					      "auto-unmount",
					      "clone_fd"};
	char msg[256], name[64];
	size_t i;

	for (i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++) {
		snprintf(name, sizeof(name), "%.*s",
			 (int)strcspn(unknown[i], "="), unknown[i]);
		snprintf(msg, sizeof(msg),
			 "unknown option '-o %s' (see s3pipe --help)", name);
		ERR(false, msg, "-o", unknown[i], "a=s3://bucket", "/mnt");
	}
	ERR(true, "unknown option '-o bogus_option' (see mount.s3pipe --help)",
	    "s3://bucket", "/mnt", "-o", "auto_unmount,bogus_option");
	/* the first bad one is named */
	ERR(false, "unknown option '-o one' (see s3pipe --help)", "-o",
	    "auto_unmount,one,two", "a=s3://bucket", "/mnt");
	/* s3pipe's FUSE init depends on its max_read */
	snprintf(msg, sizeof(msg),
		 "option -o max_read cannot be set: s3pipe mounts with "
		 "max_read=%u",
		 1U << 20);
	ERR(false, msg, "-o", "max_read=4096", "a=s3://bucket", "/mnt");
	ERR(true, msg, "s3://bucket", "/mnt", "-o", "max-read");
	/* libfuse's options exist only in -o */
	ERR(false, "unknown option '--auto-unmount' (see s3pipe --help)",
	    "--auto-unmount", "a=s3://bucket", "/mnt");
	ERR(false, "unknown option '--fsname' (see s3pipe --help)",
	    "--fsname=x", "a=s3://bucket", "/mnt");
}

static void test_max_threads(void **state)
{
	struct fs_options o;

	OK(false, &o, "--max-threads", "4", "a=s3://bucket", "/mnt");
	assert_int_equal(o.max_threads, 4);
	assert_int_equal(o.fuse_args.argc, 1);
	fs_options_free(&o);

	OK(false, &o, "--max_threads=1", "a=s3://bucket", "/mnt");
	assert_int_equal(o.max_threads, 1);
	fs_options_free(&o);

	/* libfuse's own name, in -o, is s3pipe's option */
	OK(true, &o, "s3://bucket", "/mnt", "-o", "max_threads=256");
	assert_int_equal(o.max_threads, 256);
	assert_int_equal(o.fuse_args.argc, 1);
	fs_options_free(&o);

	ERR(false, "--max-threads must be between 1 and 256", "--max-threads",
	    "0", "a=s3://bucket", "/mnt");
	ERR(false, "-o max_threads must be between 1 and 256", "-o",
	    "max_threads=257", "a=s3://bucket", "/mnt");
	ERR(false, "invalid number 'x' for --max-threads", "--max-threads=x",
	    "a=s3://bucket", "/mnt");
	ERR(false, "option --max-threads needs a value", "a=s3://bucket",
	    "/mnt", "--max-threads");
}

static void test_max_listers(void **state)
{
	struct fs_options o;

	OK(false, &o, "a=s3://bucket", "/mnt");
	assert_int_equal(o.channel.max_listers, 32);
	fs_options_free(&o);
	OK(false, &o, "--max-listers", "1", "a=s3://bucket", "/mnt");
	assert_int_equal(o.channel.max_listers, 1);
	fs_options_free(&o);
	OK(true, &o, "s3://bucket", "/mnt", "-o", "max_listers=256");
	assert_int_equal(o.channel.max_listers, 256);
	fs_options_free(&o);
	ERR(false, "--max-listers must be between 1 and 256", "--max-listers",
	    "0", "a=s3://bucket", "/mnt");
	ERR(false, "-o max_listers must be between 1 and 256", "-o",
	    "max_listers=257", "a=s3://bucket", "/mnt");
}

static void test_stats_interval(void **state)
{
	struct fs_options o;

	OK(false, &o, "a=s3://bucket", "/mnt");
	assert_int_equal(o.stats_interval, 0); /* off */
	fs_options_free(&o);

	OK(false, &o, "--stats-interval", "5", "a=s3://bucket", "/mnt");
	assert_int_equal(o.stats_interval, 5);
	fs_options_free(&o);

	OK(true, &o, "s3://bucket", "/mnt", "-o", "stats_interval=86400");
	assert_int_equal(o.stats_interval, 86400);
	assert_int_equal(o.fuse_args.argc, 1);
	fs_options_free(&o);

	ERR(false, "--stats-interval must be between 0 and 86400",
	    "--stats-interval=86401", "a=s3://bucket", "/mnt");
	ERR(false, "invalid number '1.5' for --stats-interval",
	    "--stats-interval", "1.5", "a=s3://bucket", "/mnt");
}

/* Parses args, builds the session's arguments and compares them with
 * want (NULL-terminated, after the program). */
static void expect_session_v(bool helper, const char *const *want,
			     const char *const *args)
{
	struct fuse_args fa = FUSE_ARGS_INIT(0, NULL);
	struct fs_options o;
	int i, rc = run(helper, &o, args);

	if (rc)
		print_error("unexpected failure: %s\n", err);
	assert_int_equal(rc, 0);
	assert_int_equal(fs_session_args(&o, "prog", helper, &fa), 0);
	fs_options_free(&o); /* fa owns its strings */
	assert_string_equal(fa.argv[0], "prog");
	for (i = 0; want[i]; i++) {
		assert_true(i + 1 < fa.argc);
		assert_string_equal(fa.argv[i + 1], want[i]);
	}
	assert_int_equal(fa.argc, i + 1);
	assert_null(fa.argv[fa.argc]);
	fuse_opt_free_args(&fa);
}

#define SESSION(helper, want, ...)                                             \
	expect_session_v(helper, want, ARGS(__VA_ARGS__))

static void test_session_args(void **state)
{
	char uri[600], arg[700];

	SESSION(false,
		ARGS("-oro,fsname=s3pipe,subtype=s3pipe,max_read=1048576"),
		"a=s3://bucket/x", "/mnt");
	SESSION(false,
		ARGS("-oro,fsname=s3pipe,subtype=s3pipe,max_read=1048576,"
		     "allow_other",
		     "-o", "auto_unmount"),
		"--allow-other", "-o", "auto_unmount", "a=s3://bucket/x",
		"/mnt");
	/* mount.s3pipe: the source is the file system's name */
	SESSION(true,
		ARGS("-oro,fsname=s3://bucket/x,subtype=s3pipe,"
		     "max_read=1048576"),
		"s3://bucket/x", "/mnt");
	/* ... unless it would need escaping or is too long */
	SESSION(true,
		ARGS("-oro,fsname=s3pipe,subtype=s3pipe,max_read=1048576"),
		"s3://bucket/a,b", "/mnt");
	SESSION(true,
		ARGS("-oro,fsname=s3pipe,subtype=s3pipe,max_read=1048576"),
		"s3://bucket/a\\b", "/mnt");
	memset(uri, 'k', sizeof(uri));
	memcpy(uri, "s3://bucket/", 12);
	uri[511] = '\0';
	snprintf(arg, sizeof(arg),
		 "-oro,fsname=%s,subtype=s3pipe,max_read=1048576", uri);
	SESSION(true, ARGS(arg), uri, "/mnt");
	uri[511] = 'k';
	uri[512] = '\0';
	SESSION(true,
		ARGS("-oro,fsname=s3pipe,subtype=s3pipe,max_read=1048576"), uri,
		"/mnt");
	/* the user's fsname= and subtype= replace s3pipe's */
	SESSION(true,
		ARGS("-oro,subtype=s3pipe,max_read=1048576,allow_other", "-o",
		     "auto_unmount,fsname=mine"),
		"s3://bucket/x", "/mnt", "-o",
		"allow_other,auto_unmount,fsname=mine");
	SESSION(
	    false,
	    ARGS("-oro,fsname=s3pipe,max_read=1048576", "-o", "subtype=data"),
	    "-o", "subtype=data", "a=s3://bucket/x", "/mnt");
	SESSION(false,
		ARGS("-oro,max_read=1048576", "-o", "fsname=a\\,b,subtype=t"),
		"-o", "fsname=a\\,b", "-osubtype=t", "a=s3://bucket/x", "/mnt");
	/* a name that only starts like fsname= is not one */
	SESSION(false,
		ARGS("-oro,fsname=s3pipe,subtype=s3pipe,max_read=1048576", "-o",
		     "default_permissions"),
		"-o", "default_permissions", "a=s3://bucket/x", "/mnt");
}

/* ---- mount(8) helper flags ---- */

static void test_helper_flags(void **state)
{
	struct fs_options o;

	OK(true, &o, "s3://bucket", "/mnt", "-s", "-n", "-v");
	assert_false(o.fake);
	assert_false(o.foreground);
	fs_options_free(&o);

	/* -f from mount(8) is "fake", never foreground */
	OK(true, &o, "s3://bucket", "/mnt", "-f");
	assert_true(o.fake);
	assert_false(o.foreground);
	fs_options_free(&o);

	OK(true, &o, "s3://bucket", "/mnt", "-sfnv", "-o", "channel=t");
	assert_true(o.fake);
	assert_false(o.foreground);
	assert_string_equal(o.channels[0].name, "t");
	fs_options_free(&o);

	/* -t type.subtype is accepted and ignored, attached or not */
	OK(true, &o, "s3://bucket", "/mnt", "-t", "fuse.s3pipe", "-o", "ro");
	assert_int_equal(o.nchannels, 1);
	fs_options_free(&o);
	OK(true, &o, "s3://bucket", "/mnt", "-ts3pipe");
	assert_int_equal(o.nchannels, 1);
	fs_options_free(&o);

	/* foreground for the helper is spelled out */
	OK(true, &o, "s3://bucket", "/mnt", "-o", "foreground");
	assert_true(o.foreground);
	assert_false(o.fake);
	fs_options_free(&o);
	OK(true, &o, "s3://bucket", "/mnt", "--foreground");
	assert_true(o.foreground);
	fs_options_free(&o);

	/* for s3pipe itself -f is foreground */
	OK(false, &o, "-f", "a=s3://bucket", "/mnt");
	assert_true(o.foreground);
	assert_false(o.fake);
	fs_options_free(&o);
}

static void test_helper_flag_errors(void **state)
{
	ERR(true,
	    "option -N (mount in another namespace) is not supported: run "
	    "mount.s3pipe inside that namespace",
	    "s3://bucket", "/mnt", "-N", "/proc/1/ns/mnt");
	ERR(true, "option -t needs a value", "s3://bucket", "/mnt", "-t");
	/* mount's flags mean nothing to s3pipe itself */
	ERR(false, "unknown option '-s' (see s3pipe --help)", "-s",
	    "a=s3://bucket", "/mnt");
	ERR(false, "unknown option '-v' (see s3pipe --help)", "-v",
	    "a=s3://bucket", "/mnt");
	ERR(false, "unknown option '-n' (see s3pipe --help)", "-fn",
	    "a=s3://bucket", "/mnt");
	ERR(false, "unknown option '-t' (see s3pipe --help)", "-t", "x",
	    "a=s3://bucket", "/mnt");
	/* a lone dash is no option, and no place to mount on */
	ERR(false, "unknown option '-' (see s3pipe --help)", "a=s3://bucket",
	    "-");
	ERR(true, "unknown option '-' (see mount.s3pipe --help)", "s3://bucket",
	    "/mnt", "-o", "-");
	ERR(true, "option -t needs a value", "s3://bucket", "/mnt", "-vt");
	/* -o does not hide in a cluster */
	ERR(true, "option -o must start an argument: -o OPTIONS or -oOPTIONS",
	    "s3://bucket", "/mnt", "-so", "foreground");
}

/* ---- --help and --version ---- */

static void test_help_version(void **state)
{
	struct fs_options o;

	OK(false, &o, "--help");
	assert_true(o.help);
	assert_false(o.version);
	assert_int_equal(o.nchannels, 0);
	fs_options_free(&o);

	OK(false, &o, "-h");
	assert_true(o.help);
	fs_options_free(&o);

	OK(false, &o, "--version");
	assert_true(o.version);
	assert_false(o.help);
	fs_options_free(&o);

	OK(false, &o, "-V");
	assert_true(o.version);
	fs_options_free(&o);

	/* once seen, the rest of the line does not matter */
	OK(false, &o, "a=s3://bucket", "--help", "--bogus", "x", "y");
	assert_true(o.help);
	fs_options_free(&o);

	OK(true, &o, "-h");
	assert_true(o.help);
	fs_options_free(&o);

	OK(true, &o, "-o", "version");
	assert_true(o.version);
	fs_options_free(&o);

	/* an error before --help still counts */
	ERR(false, "unknown option '--bogus' (see s3pipe --help)", "--bogus",
	    "--help");
}

static char *usage_text(const char *progname)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	fs_options_usage(f, progname);
	assert_int_equal(fclose(f), 0);
	assert_non_null(buf);
	return buf;
}

static void test_usage(void **state)
{
	static const char *const expect[] = {
	    "--endpoint-url URL",
	    "--region REGION",
	    "--profile NAME",
	    "--no-sign-request",
	    "--force-path-style",
	    "--no-verify-ssl",
	    "--ca-bundle FILE",
	    "--cache-size SIZE",
	    "--part-size SIZE",
	    "--max-connections N",
	    "--max-retries N",
	    "--stall-timeout SECONDS",
	    "--max-threads N",
	    "--max-listers N",
	    "--stats-interval SECONDS",
	    "s3pipe stats [--json] [--watch]",
	    "--epochs N",
	    "--seek MODE",
	    "--uid N",
	    "--gid N",
	    "--allow-other",
	    "-f, --foreground",
	    "-d, --debug",
	    "--channel NAME",
	    "-h, --help",
	    "-V, --version",
	    "-o OPTS",
	    "mount.s3pipe",
	    "(default 256M)",
	    "(default 8M)",
	    "(default 64)",
	    "(default 10)",
	    "(default 30)",
	    "(default 16)",
	    "(default 0)",
	    "(default reject)",
	    "(default train)",
	    "auto_unmount",
	    "--input-data-config FILE",
	    "--resource-config FILE",
	    "--host-index I",
	    "--host-count N",
	    "--write-container-config DIR",
	    "--shuffle-seed N",
	    "--record-wrapper TYPE",
	    "--compression TYPE",
	    "--sharded",
	    "--attribute-names LIST",
	    "--convert FORMAT",
	    "--csv-label-column N",
	    "--csv-header MODE",
	    "--on-bad-row ACTION",
	    "--feature-dim N",
	};
	char *text = usage_text("/usr/bin/s3pipe");
	const char *line;
	size_t i, len;

	for (i = 0; i < sizeof(expect) / sizeof(expect[0]); i++) {
		if (!strstr(text, expect[i]))
			print_error("usage lacks '%s'\n", expect[i]);
		assert_non_null(strstr(text, expect[i]));
	}
	assert_true(strncmp(text, "Usage: s3pipe [OPTIONS] NAME=", 29) == 0);
	/* wrapped for an 80-column terminal */
	for (line = text; *line; line += len + (line[len] == '\n')) {
		len = strcspn(line, "\n");
		if (len > 79)
			print_error("long line: %.*s\n", (int)len, line);
		assert_true(len <= 79);
	}
	free(text);

	text = usage_text("/sbin/mount.s3pipe");
	assert_true(strncmp(text, "Usage: mount.s3pipe s3://", 25) == 0);
	free(text);

	text = usage_text(NULL);
	assert_true(strncmp(text, "Usage: s3pipe ", 14) == 0);
	free(text);
}

/* ---- channel names ---- */

static void test_channel_name_valid(void **state)
{
	char n64[65], n65[66];

	memset(n64, 'a', 64);
	n64[64] = '\0';
	memset(n65, 'a', 65);
	n65[65] = '\0';
	assert_true(channel_name_valid("train"));
	assert_true(channel_name_valid("a"));
	assert_true(channel_name_valid("Train-2.v_1"));
	assert_true(channel_name_valid("0"));
	assert_true(channel_name_valid(n64));
	assert_false(channel_name_valid(n65));
	assert_false(channel_name_valid(""));
	assert_false(channel_name_valid(NULL));
	assert_false(channel_name_valid("a b"));
	assert_false(channel_name_valid("a/b"));
	assert_false(channel_name_valid("a=b"));
	assert_false(channel_name_valid("tr\xc3\xa4in"));
	assert_false(channel_name_valid("x\n"));
}

/* ---- errors ---- */

static void test_errors_common_mistakes(void **state)
{
	ERR(false, "unknown option '--foo' (see s3pipe --help)", "--foo",
	    "a=s3://bucket", "/mnt");
	ERR(false, "invalid channel name 'a b': use 1-64 of A-Z a-z 0-9 . - _",
	    "a b=s3://bucket", "/mnt");
	ERR(false, "option --cache-size needs a value", "a=s3://bucket", "/mnt",
	    "--cache-size");
	ERR(false, "invalid size '12X' for --cache-size", "--cache-size", "12X",
	    "a=s3://bucket", "/mnt");
	ERR(false, "no mountpoint given", "train=s3://bucket/data");
	ERR(false, "no mountpoint given", "a=s3://bucket", "b=s3://bucket");
	ERR(false,
	    "no channel given: expected NAME=s3://BUCKET[/PREFIX] or "
	    "--input-data-config FILE",
	    "/mnt");
	/* no positional argument at all */
	ERR(false,
	    "no channel given: expected NAME=s3://BUCKET[/PREFIX] or "
	    "--input-data-config FILE",
	    "--region", "x");
	ERR(false, "duplicate channel 'train'", "train=s3://bucket/a",
	    "train=s3://bucket/b", "/mnt");
	ERR(false, "--seek must be reject or emulate", "--seek", "random",
	    "a=s3://bucket", "/mnt");
	ERR(false,
	    "option 'channel' is only for mount.s3pipe; name channels as "
	    "NAME=s3://...",
	    "-o", "channel=train", "a=s3://bucket", "/mnt");
	ERR(false,
	    "option 'channel' is only for mount.s3pipe; name channels as "
	    "NAME=s3://...",
	    "--channel", "train", "a=s3://bucket", "/mnt");
}

static void test_errors_forms(void **state)
{
	/* the message names the option the way it was written */
	ERR(false, "unknown option '--foo' (see s3pipe --help)", "--foo=bar",
	    "a=s3://bucket", "/mnt");
	ERR(false, "unknown option '-x' (see s3pipe --help)", "-x",
	    "a=s3://bucket", "/mnt");
	ERR(false, "unknown option '-o foo' (see s3pipe --help)", "-o",
	    "allow_other,foo=1", "a=s3://bucket", "/mnt");
	ERR(true, "unknown option '-o bogus' (see mount.s3pipe --help)",
	    "s3://bucket", "/mnt", "-o", "rw,bogus");
	ERR(true, "unknown option '--foo' (see mount.s3pipe --help)",
	    "s3://bucket", "/mnt", "--foo");
	ERR(false, "option --cache-size needs a value",
	    "--cache-size=", "a=s3://bucket", "/mnt");
	ERR(false, "option -o cache_size needs a value", "-o", "cache_size",
	    "a=s3://bucket", "/mnt");
	ERR(false, "option -o region needs a value", "-o",
	    "region=", "a=s3://bucket", "/mnt");
	ERR(false, "option --region needs a value", "a=s3://bucket", "/mnt",
	    "--region");
	ERR(false, "invalid size '12X' for -o cache_size", "-o",
	    "cache-size=12X", "a=s3://bucket", "/mnt");
	ERR(false, "-o seek must be reject or emulate", "-o", "seek=Emulate",
	    "a=s3://bucket", "/mnt");
	ERR(false, "option --allow-other takes no value", "--allow-other=yes",
	    "a=s3://bucket", "/mnt");
	ERR(false, "option -o allow_other takes no value", "-o",
	    "allow_other=1", "a=s3://bucket", "/mnt");
	ERR(false, "option --debug takes no value", "--debug=1",
	    "a=s3://bucket", "/mnt");
	ERR(false, "option -o needs a value", "a=s3://bucket", "/mnt", "-o");
	/* a value is glued with '=' only */
	ERR(false, "unknown option '--regionx' (see s3pipe --help)",
	    "--regionx", "a=s3://bucket", "/mnt");
	ERR(false, "unknown option '--max-threads4' (see s3pipe --help)",
	    "--max-threads4", "a=s3://bucket", "/mnt");
	/* control characters never reach the message */
	ERR(false, "unknown option '--fo?o' (see s3pipe --help)", "--fo\no",
	    "a=s3://bucket", "/mnt");
}

static void test_errors_numbers(void **state)
{
	ERR(false, "invalid size '-1' for --cache-size", "--cache-size", "-1",
	    "a=s3://bucket", "/mnt");
	ERR(false, "option --part-size needs a value", "--part-size", "",
	    "a=s3://bucket", "/mnt");
	ERR(false, "invalid size '8X' for --part-size", "--part-size", "8X",
	    "a=s3://bucket", "/mnt");
	ERR(false, "--part-size must be between 64K and 1G", "--part-size",
	    "32K", "a=s3://bucket", "/mnt");
	ERR(false, "size '2G' for --part-size is too large: at most 1G",
	    "--part-size", "2G", "--cache-size", "8G", "a=s3://bucket", "/mnt");
	ERR(false, "size '99999999999999999999' for --cache-size is too large",
	    "--cache-size", "99999999999999999999", "a=s3://bucket", "/mnt");
	ERR(false, "--max-connections must be between 1 and 256",
	    "--max-connections", "0", "a=s3://bucket", "/mnt");
	ERR(false, "--max-connections must be between 1 and 256",
	    "--max-connections=257", "a=s3://bucket", "/mnt");
	ERR(false, "invalid number 'many' for --max-connections",
	    "--max-connections", "many", "a=s3://bucket", "/mnt");
	ERR(false, "invalid number '4k' for -o max_connections", "-o",
	    "max_connections=4k", "a=s3://bucket", "/mnt");
	ERR(false, "--max-retries must be between 0 and 20", "--max-retries",
	    "21", "a=s3://bucket", "/mnt");
	ERR(false, "--stall-timeout must be between 1 and 3600",
	    "--stall-timeout", "0", "a=s3://bucket", "/mnt");
	ERR(false, "--stall-timeout must be between 1 and 3600",
	    "--stall-timeout", "3601", "a=s3://bucket", "/mnt");
	ERR(false, "invalid number '-1' for --epochs", "--epochs", "-1",
	    "a=s3://bucket", "/mnt");
	ERR(false, "--epochs must be between 0 and 4294967295", "--epochs",
	    "4294967296", "a=s3://bucket", "/mnt");
	ERR(false, "invalid number '-1' for --uid", "--uid", "-1",
	    "a=s3://bucket", "/mnt");
	ERR(false, "--uid must be between 0 and 4294967294", "--uid",
	    "4294967295", "a=s3://bucket", "/mnt");
	ERR(false, "invalid number 'root' for -o gid", "-o", "gid=root",
	    "a=s3://bucket", "/mnt");
}

static void test_errors_cache_vs_part(void **state)
{
	struct fs_options o;

	ERR(false,
	    "--cache-size (8M) must be at least twice --part-size (8M): raise "
	    "--cache-size or lower --part-size",
	    "--cache-size", "8M", "a=s3://bucket", "/mnt");
	ERR(false,
	    "--cache-size (256M) must be at least twice --part-size (512M): "
	    "raise --cache-size or lower --part-size",
	    "--part-size", "512M", "a=s3://bucket", "/mnt");
	ERR(true,
	    "--cache-size (0) must be at least twice --part-size (8M): raise "
	    "--cache-size or lower --part-size",
	    "s3://bucket", "/mnt", "-o", "cache_size=0");
	ERR(false,
	    "--cache-size (16777215) must be at least twice --part-size (8M): "
	    "raise --cache-size or lower --part-size",
	    "--cache-size", "16777215", "a=s3://bucket", "/mnt");
	/* exactly twice is enough */
	OK(false, &o, "--cache-size", "16M", "a=s3://bucket", "/mnt");
	assert_int_equal(o.cache.budget_bytes, 16ULL << 20);
	fs_options_free(&o);
}

static void test_errors_endpoint(void **state)
{
	static const char *const bad[] = {
	    "http://",	     "http:///",      "http://h/path",	"http://h/b/",
	    "http://h?x=1",  "http://h/?x=1", "http://h#f",	"http://u:p@h",
	    "http://h:",     "http://h:0",    "http://h:65536", "http://h:9x",
	    "http://h:1:2",  "http://:9000",  "http://[::1",	"http://[]",
	    "http://[::1]x", "http://h h",    "https://h//",
	};
	char msg[256];
	size_t i;

	ERR(false,
	    "invalid --endpoint-url 'ftp://h': it must start with http:// or "
	    "https://",
	    "--endpoint-url", "ftp://h", "a=s3://bucket", "/mnt");
	ERR(false,
	    "invalid --endpoint-url '127.0.0.1:9000': it must start with "
	    "http:// or https://",
	    "--endpoint-url", "127.0.0.1:9000", "a=s3://bucket", "/mnt");

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(
		    msg, sizeof(msg),
		    "invalid --endpoint-url '%s': use http(s)://HOST[:PORT] "
		    "with no path (the bucket goes in s3://BUCKET)",
		    bad[i]);
		ERR(false, msg, "--endpoint-url", bad[i], "a=s3://bucket",
		    "/mnt");
	}
	ERR(true,
	    "invalid -o endpoint_url 'http://h/p': use http(s)://HOST[:PORT] "
	    "with no path (the bucket goes in s3://BUCKET)",
	    "s3://bucket", "/mnt", "-o", "endpoint_url=http://h/p");
}

static void test_errors_channels(void **state)
{
	char name65[66], arg[128], msg[256];

	memset(name65, 'c', 65);
	name65[65] = '\0';
	snprintf(arg, sizeof(arg), "%s=s3://bucket", name65);
	snprintf(msg, sizeof(msg),
		 "invalid channel name '%.64s...': use 1-64 of A-Z a-z 0-9 . "
		 "- _",
		 name65);
	ERR(false, msg, arg, "/mnt");

	snprintf(msg, sizeof(msg), CHANNEL_HINT, "");
	ERR(false, msg, "=s3://bucket", "/mnt");
	snprintf(msg, sizeof(msg), CHANNEL_HINT, "a/b");
	ERR(false, msg, "a/b=s3://bucket", "/mnt");
	snprintf(msg, sizeof(msg), CHANNEL_HINT, "bad name");
	ERR(true, msg, "s3://bucket", "/mnt", "-o", "channel=bad name");
	ERR(true, "option -o channel needs a value", "s3://bucket", "/mnt",
	    "-o", "channel=");

	ERR(false,
	    "unexpected argument 'foo': channels are NAME=s3://BUCKET[/PREFIX] "
	    "and the mountpoint comes last",
	    "foo", "a=s3://bucket", "/mnt");
	ERR(false, "no mountpoint given", "a=s3://bucket", "");

	/* the URI itself is checked by s3_uri_parse() */
	ERR_PREFIX(false, "channel 'train': ", "train=bucket/data", "/mnt");
	ERR_PREFIX(false, "channel 'train': ", "train=s3://", "/mnt");
	ERR_PREFIX(false, "channel 'v': ", "v=s3://Bad_Bucket/x", "/mnt");
}

static void test_errors_helper(void **state)
{
	static const char *const none[] = {NULL};

	expect_error_v(true,
		       "no source given: expected mount.s3pipe "
		       "s3://BUCKET[/PREFIX] MOUNTPOINT [-o OPTIONS]",
		       none);
	ERR(true,
	    "no source given: expected mount.s3pipe s3://BUCKET[/PREFIX] "
	    "MOUNTPOINT [-o OPTIONS]",
	    "-o", "channel=x");
	ERR(true, "no mountpoint given", "s3://bucket/x");
	ERR(true, "no mountpoint given", "s3://bucket/x", "");
	ERR(true,
	    "unexpected argument 'extra': mount.s3pipe takes SOURCE "
	    "MOUNTPOINT [-o OPTIONS]",
	    "s3://bucket/x", "/mnt", "extra");
	ERR(true,
	    "source 'train=s3://bucket/x' is not an s3:// uri: give "
	    "s3://BUCKET[/PREFIX] and name the channel with -o channel=NAME",
	    "train=s3://bucket/x", "/mnt");
	ERR_PREFIX(true, "malformed uri 'bucket/x'", "bucket/x", "/mnt");
	ERR_PREFIX(true, "invalid bucket name", "s3://B/x", "/mnt");
}

static void test_free_is_idempotent(void **state)
{
	struct fs_options o;

	OK(false, &o, "--region", "x", "--endpoint-url", "http://h", "-o",
	   "auto_unmount", "a=s3://bucket/p", "b=s3://bucket/q", "/mnt");
	fs_options_free(&o);
	assert_int_equal(o.nchannels, 0);
	assert_null(o.mountpoint);
	assert_null(o.s3.region);
	assert_null(o.s3.endpoint);
	assert_int_equal(o.fuse_args.argc, 0);
	assert_null(o.fuse_args.argv);
	fs_options_free(&o);

	/* a failure half-way leaves o freeable (ASan/valgrind: no leak) */
	assert_int_equal(run(false, &o,
			     ARGS("--region", "x", "a=s3://bucket",
				  "a=s3://bucket", "/mnt")),
			 EINVAL);
	assert_int_equal(o.nchannels, 1);
	fs_options_free(&o);
	assert_int_equal(o.nchannels, 0);
	fs_options_free(&o);
}

static void test_no_argv(void **state)
{
	struct fs_options o;
	char e[128];

	fs_options_init(&o);
	assert_int_equal(fs_options_parse(0, NULL, false, &o, e, sizeof(e)),
			 EINVAL);
	assert_string_equal(
	    e, "no channel given: expected NAME=s3://BUCKET[/PREFIX] or "
	       "--input-data-config FILE");
	fs_options_free(&o);

	/* a short err buffer is truncated, never overrun */
	fs_options_init(&o);
	{
		char *argv[] = {"s3pipe", "--nope", NULL};
		char small[8];

		memset(small, 'Q', sizeof(small));
		assert_int_equal(
		    fs_options_parse(2, argv, false, &o, small, sizeof(small)),
		    EINVAL);
		assert_int_equal(small[7], '\0');
		assert_string_equal(small, "unkn\xe2\x80\xa6"); /* "unkn…" */
		assert_int_equal(fs_options_parse(2, argv, false, &o, NULL, 0),
				 EINVAL);
	}
	fs_options_free(&o);
}

/* ---- the channel options (fs/channels.c) ---- */

/* NAME=URI channels with no channel option: S3Prefix, fully replicated, no
 * shuffle, no stages, host 0 of 1. */
static void test_channel_defaults(void **state)
{
	struct fs_options o;

	OK(false, &o, "a=s3://bucket/p/", "/mnt");
	assert_int_equal(o.nchannels, 1);
	assert_int_equal(o.channels[0].data_type, CHANNEL_S3_PREFIX);
	assert_int_equal(o.channels[0].distribution, CHANNEL_FULLY_REPLICATED);
	assert_int_equal(o.channels[0].wrapper, CHANNEL_WRAPPER_NONE);
	assert_int_equal(o.channels[0].compression, CHANNEL_COMPRESSION_NONE);
	assert_false(o.channels[0].shuffle);
	assert_null(o.channels[0].attributes);
	assert_int_equal(o.channels[0].nattributes, 0);
	assert_int_equal(o.channels[0].convert.format, CHANNEL_CONVERT_NONE);
	assert_int_equal(o.channels[0].convert.label_column, 0);
	assert_false(o.channels[0].convert.header_skip);
	assert_false(o.channels[0].convert.bad_row_skip);
	assert_int_equal(o.channels[0].convert.feature_dim, 0);
	assert_null(o.input_data_config);
	assert_int_equal(o.host.index, 0);
	assert_int_equal(o.host.count, 1);
	fs_options_free(&o);
}

/* The per-channel options apply to every NAME=URI channel, whatever its
 * kind; the URI's kind prefix picks the S3DataType and stays in the URI. */
static void test_channel_options_apply(void **state)
{
	struct fs_options o;

	OK(false, &o, "--shuffle-seed", "42", "--record-wrapper", "recordio",
	   "--compression", "gzip", "--sharded", "--host-index", "2",
	   "--host-count", "3", "a=s3://bucket/p/",
	   "b=manifest+s3://bucket/m/list.json", "/mnt");
	assert_int_equal(o.nchannels, 2);
	for (unsigned i = 0; i < 2; i++) {
		const struct channel_spec *c = &o.channels[i];

		assert_true(c->shuffle);
		assert_int_equal(c->seed, 42);
		assert_int_equal(c->wrapper, CHANNEL_WRAPPER_RECORDIO);
		assert_int_equal(c->compression, CHANNEL_COMPRESSION_GZIP);
		assert_int_equal(c->distribution, CHANNEL_SHARDED_BY_S3_KEY);
		assert_string_equal(c->bucket, "bucket");
	}
	assert_int_equal(o.channels[0].data_type, CHANNEL_S3_PREFIX);
	assert_string_equal(o.channels[0].prefix, "p/");
	assert_int_equal(o.channels[1].data_type, CHANNEL_MANIFEST_FILE);
	assert_string_equal(o.channels[1].uri,
			    "manifest+s3://bucket/m/list.json");
	assert_string_equal(o.channels[1].prefix, "m/list.json");
	assert_int_equal(o.host.index, 2);
	assert_int_equal(o.host.count, 3);
	fs_options_free(&o);

	/* the -o forms, values in any case */
	OK(false, &o, "-o",
	   "shuffle_seed=7,record_wrapper=RecordIO,compression=GZIP,sharded",
	   "-o", "host_index=0,host_count=1", "a=s3://bucket", "/mnt");
	assert_true(o.channels[0].shuffle);
	assert_int_equal(o.channels[0].seed, 7);
	assert_int_equal(o.channels[0].wrapper, CHANNEL_WRAPPER_RECORDIO);
	assert_int_equal(o.channels[0].compression, CHANNEL_COMPRESSION_GZIP);
	assert_int_equal(o.channels[0].distribution, CHANNEL_SHARDED_BY_S3_KEY);
	assert_int_equal(o.host.index, 0);
	assert_int_equal(o.host.count, 1);
	fs_options_free(&o);

	/* none is a value too, and the last one wins */
	OK(false, &o, "--record-wrapper", "recordio", "--record-wrapper",
	   "None", "--compression", "gzip", "--compression=none",
	   "a=s3://bucket", "/mnt");
	assert_int_equal(o.channels[0].wrapper, CHANNEL_WRAPPER_NONE);
	assert_int_equal(o.channels[0].compression, CHANNEL_COMPRESSION_NONE);
	fs_options_free(&o);
}

/* A seed is any whole number of 64 bits, negative ones included (Python's
 * ShuffleConfig takes them); one bit more is refused, not wrapped. */
static void test_shuffle_seed(void **state)
{
	static const struct {
		const char *arg;
		int64_t seed;
	} good[] = {
	    {"0", 0},
	    {"-0", 0},
	    {"1", 1},
	    {"-1", -1},
	    {"-5", -5},
	    {"9223372036854775807", INT64_MAX},
	    {"-9223372036854775807", -INT64_MAX},
	    {"-9223372036854775808", INT64_MIN},
	};
	static const char *const bad[] = {"9223372036854775808",
					  "-9223372036854775809",
					  "18446744073709551615",
					  "18446744073709551616",
					  "99999999999999999999999",
					  "-",
					  "--5",
					  "+5",
					  "1.5",
					  "0x10",
					  "5k",
					  " 5",
					  "abc"};
	struct fs_options o;
	char arg[64], msg[128];

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		snprintf(arg, sizeof(arg), "--shuffle-seed=%s", good[i].arg);
		OK(false, &o, arg, "a=s3://bucket", "/mnt");
		assert_true(o.channels[0].shuffle);
		assert_true(o.channels[0].seed == good[i].seed);
		fs_options_free(&o);
	}
	/* a negative seed as a separate argument is the option's value, not
	 * an option of its own */
	OK(false, &o, "--shuffle-seed", "-3", "a=s3://bucket", "/mnt");
	assert_true(o.channels[0].shuffle);
	assert_true(o.channels[0].seed == -3);
	fs_options_free(&o);
	OK(false, &o, "-o", "shuffle_seed=-9223372036854775808",
	   "a=s3://bucket", "/mnt");
	assert_true(o.channels[0].seed == INT64_MIN);
	fs_options_free(&o);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(arg, sizeof(arg), "--shuffle-seed=%s", bad[i]);
		snprintf(msg, sizeof(msg),
			 "--shuffle-seed must be a 64-bit integer (got '%s')",
			 bad[i]);
		ERR(false, msg, arg, "a=s3://bucket", "/mnt");
	}
	ERR(false,
	    "-o shuffle_seed must be a 64-bit integer (got "
	    "'-9223372036854775809')",
	    "-o", "shuffle_seed=-9223372036854775809", "a=s3://bucket", "/mnt");
	ERR(false, "option --shuffle-seed needs a value", "a=s3://bucket",
	    "/mnt", "--shuffle-seed");
}

static void test_channel_option_errors(void **state)
{
	ERR(false, "--record-wrapper must be none or recordio (got 'protobuf')",
	    "--record-wrapper", "protobuf", "a=s3://bucket", "/mnt");
	ERR(false,
	    "-o record_wrapper must be none or recordio (got 'recordio2')",
	    "-o", "record_wrapper=recordio2", "a=s3://bucket", "/mnt");
	ERR(false, "--compression must be none or gzip (got 'zip')",
	    "--compression", "zip", "a=s3://bucket", "/mnt");
	ERR(false, "option --sharded takes no value", "--sharded=yes",
	    "a=s3://bucket", "/mnt");
	/* manifests name an object, not a prefix */
	ERR(false,
	    "channel 'm': 'manifest+s3://bucket/dir/' must name the manifest "
	    "object, not a prefix",
	    "m=manifest+s3://bucket/dir/", "/mnt");
	ERR(false,
	    "channel 'm': 'augmented+s3://bucket' must name the manifest "
	    "object, not a prefix",
	    "m=augmented+s3://bucket", "--attribute-names", "x", "/mnt");
	/* the kind prefix is a prefix of the s3:// URI only */
	ERR_PREFIX(false, "channel 'm': ", "m=manifest+http://bucket/m.json",
		   "/mnt");
	ERR_PREFIX(false, "channel 'm': ", "m=Manifest+s3://bucket/m.json",
		   "/mnt");
}

/* --host-index and --host-count: both or neither, index below count,
 * neither with --resource-config. */
static void test_host_rules(void **state)
{
	struct fs_options o;

	OK(false, &o, "--host-index", "65535", "--host-count", "65536",
	   "a=s3://bucket", "/mnt");
	assert_int_equal(o.host.index, 65535);
	assert_int_equal(o.host.count, 65536);
	fs_options_free(&o);
	ERR(false, "--host-index and --host-count go together", "--host-index",
	    "0", "a=s3://bucket", "/mnt");
	ERR(false, "--host-index and --host-count go together", "--host-count",
	    "2", "a=s3://bucket", "/mnt");
	ERR(false,
	    "--host-index (3) must be less than --host-count (3): hosts count "
	    "from 0",
	    "--host-index", "3", "--host-count", "3", "a=s3://bucket", "/mnt");
	ERR(false, "--host-count must be between 1 and 65536", "--host-index",
	    "0", "--host-count", "0", "a=s3://bucket", "/mnt");
	ERR(false, "--host-count must be between 1 and 65536", "--host-index",
	    "0", "--host-count", "65537", "a=s3://bucket", "/mnt");
	ERR(false, "--host-index must be between 0 and 65535", "--host-index",
	    "65536", "--host-count", "2", "a=s3://bucket", "/mnt");
	ERR(false, "invalid number '-1' for --host-index", "--host-index", "-1",
	    "--host-count", "2", "a=s3://bucket", "/mnt");
	ERR(false,
	    "give either --resource-config or --host-index and --host-count, "
	    "not both",
	    "--resource-config", "/nonexistent/resourceconfig.json",
	    "--host-index", "0", "--host-count", "2", "a=s3://bucket", "/mnt");
}

/* AttributeNames: required by augmented manifests, refused elsewhere. */
static void test_attribute_names(void **state)
{
	struct fs_options o;

	OK(false, &o, "--attribute-names", "source-ref,class",
	   "plain=s3://bucket1", "aug=augmented+s3://bucket/a/train.manifest",
	   "/mnt");
	assert_int_equal(o.nchannels, 2);
	assert_int_equal(o.channels[0].nattributes, 0);
	assert_null(o.channels[0].attributes);
	assert_int_equal(o.channels[1].data_type,
			 CHANNEL_AUGMENTED_MANIFEST_FILE);
	assert_string_equal(o.channels[1].prefix, "a/train.manifest");
	assert_int_equal(o.channels[1].nattributes, 2);
	assert_string_equal(o.channels[1].attributes[0], "source-ref");
	assert_string_equal(o.channels[1].attributes[1], "class");
	fs_options_free(&o);
	OK(false, &o, "-o", "attribute_names=one", "x=augmented+s3://bucket/m",
	   "/mnt");
	assert_int_equal(o.channels[0].nattributes, 1);
	assert_string_equal(o.channels[0].attributes[0], "one");
	fs_options_free(&o);

	ERR(false,
	    "channel 'aug': an augmented+s3:// channel needs --attribute-names "
	    "LIST: the names of the attributes to read from each line",
	    "aug=augmented+s3://bucket/a.manifest", "/mnt");
	ERR(false, "--attribute-names needs an augmented+s3:// channel",
	    "--attribute-names", "a", "p=s3://bucket/x",
	    "m=manifest+s3://bucket/m.json", "/mnt");
	ERR(false, "--attribute-names 'a,,b' has an empty name",
	    "--attribute-names", "a,,b", "x=augmented+s3://bucket/m", "/mnt");
	ERR(false, "--attribute-names 'a,' has an empty name",
	    "--attribute-names", "a,", "x=augmented+s3://bucket/m", "/mnt");
	ERR(false, "--attribute-names ',a' has an empty name",
	    "--attribute-names", ",a", "x=augmented+s3://bucket/m", "/mnt");
}

/* A temporary file holding text; its path in path. */
static void write_temp(char *path, size_t len, const char *text)
{
	FILE *f;
	int fd;

	snprintf(path, len, "/tmp/test_options.XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	assert_non_null(f);
	assert_int_equal(fputs(text, f) >= 0, 1);
	assert_int_equal(fclose(f), 0);
}

/* --input-data-config: the channels come from the file, all their
 * settings with them; NAME=URI channels and per-channel options are
 * refused beside it. */
static void test_input_data_config(void **state)
{
	static const char *const per_channel[][3] = {
	    {"--shuffle-seed", "1", "--shuffle-seed (ShuffleConfig.Seed)"},
	    {"--record-wrapper", "none",
	     "--record-wrapper (RecordWrapperType)"},
	    {"--compression", "gzip", "--compression (CompressionType)"},
	    {"--attribute-names", "a",
	     "--attribute-names (DataSource.S3DataSource.AttributeNames)"},
	    {"--convert", "none", "--convert (S3pipeConvert)"},
	    {"--csv-label-column", "none",
	     "--csv-label-column (S3pipeCsvLabelColumn)"},
	    {"--csv-header", "skip", "--csv-header (S3pipeCsvHeader)"},
	    {"--on-bad-row", "skip", "--on-bad-row (S3pipeOnBadRow)"},
	    {"--feature-dim", "8", "--feature-dim (S3pipeFeatureDim)"},
	};
	struct fs_options o;
	char path[64], opt[128], msg[256];

	write_temp(path, sizeof(path),
		   "[{\"ChannelName\": \"train\", \"DataSource\": "
		   "{\"S3DataSource\": {\"S3Uri\": \"s3://bucket/t/\", "
		   "\"S3DataType\": \"S3Prefix\", \"S3DataDistributionType\": "
		   "\"ShardedByS3Key\"}}, \"ShuffleConfig\": {\"Seed\": -7}, "
		   "\"RecordWrapperType\": \"RecordIO\", \"CompressionType\": "
		   "\"Gzip\"}, {\"ChannelName\": \"val\", \"DataSource\": "
		   "{\"S3DataSource\": {\"S3Uri\": \"s3://bucket/v.json\", "
		   "\"S3DataType\": \"ManifestFile\"}}}]");
	snprintf(opt, sizeof(opt), "--input-data-config=%s", path);
	OK(false, &o, opt, "--host-index", "1", "--host-count", "2", "/mnt");
	assert_string_equal(o.input_data_config, path);
	assert_string_equal(o.mountpoint, "/mnt");
	assert_int_equal(o.nchannels, 2);
	assert_string_equal(o.channels[0].name, "train");
	assert_string_equal(o.channels[0].bucket, "bucket");
	assert_string_equal(o.channels[0].prefix, "t/");
	assert_int_equal(o.channels[0].data_type, CHANNEL_S3_PREFIX);
	assert_int_equal(o.channels[0].distribution, CHANNEL_SHARDED_BY_S3_KEY);
	assert_true(o.channels[0].shuffle);
	assert_true(o.channels[0].seed == -7);
	assert_int_equal(o.channels[0].wrapper, CHANNEL_WRAPPER_RECORDIO);
	assert_int_equal(o.channels[0].compression, CHANNEL_COMPRESSION_GZIP);
	assert_string_equal(o.channels[1].name, "val");
	assert_int_equal(o.channels[1].data_type, CHANNEL_MANIFEST_FILE);
	assert_string_equal(o.channels[1].prefix, "v.json");
	assert_int_equal(o.channels[1].distribution, CHANNEL_FULLY_REPLICATED);
	assert_false(o.channels[1].shuffle);
	assert_int_equal(o.host.index, 1);
	assert_int_equal(o.host.count, 2);
	fs_options_free(&o);

	/* with NAME=URI channels, whatever their place on the line */
	ERR(false,
	    "channel 'a' given as NAME=URI: with --input-data-config the "
	    "channels come from the file only",
	    opt, "a=s3://bucket/x", "/mnt");
	ERR(false,
	    "channel 'b' given as NAME=URI: with --input-data-config the "
	    "channels come from the file only",
	    "b=s3://bucket/x", "-o", "input_data_config=/x.json", "/mnt");
	/* with a per-channel option */
	for (size_t i = 0; i < sizeof(per_channel) / sizeof(per_channel[0]);
	     i++) {
		snprintf(msg, sizeof(msg),
			 "%s applies to NAME=URI channels: with "
			 "--input-data-config set it in the file",
			 per_channel[i][2]);
		ERR(false, msg, opt, per_channel[i][0], per_channel[i][1],
		    "/mnt");
	}
	ERR(false,
	    "--sharded (DataSource.S3DataSource.S3DataDistributionType) "
	    "applies to NAME=URI channels: with --input-data-config set it in "
	    "the file",
	    opt, "--sharded", "/mnt");
	/* the mountpoint is still needed */
	ERR(false, "no mountpoint given", opt);
	unlink(path);
}

/* ---- conversion: --convert and the options of its rows ---- */

/* Asserts every channel of o converts as given. */
static void check_convert(const struct fs_options *o,
			  enum channel_convert_format format, int label,
			  bool header_skip, bool bad_row_skip, uint64_t dim)
{
	assert_true(o->nchannels > 0);
	for (unsigned i = 0; i < o->nchannels; i++) {
		const struct channel_convert_conf *c = &o->channels[i].convert;

		assert_int_equal(c->format, format);
		assert_int_equal(c->label_column, label);
		assert_int_equal(c->header_skip, header_skip);
		assert_int_equal(c->bad_row_skip, bad_row_skip);
		assert_true(c->feature_dim == dim);
		/* the wrapper stays none: the stage writes RecordIO itself */
		assert_int_equal(o->channels[i].wrapper, CHANNEL_WRAPPER_NONE);
	}
}

static void test_convert_conf_init(void **state)
{
	struct channel_convert_conf c;

	memset(&c, 0x5a, sizeof(c));
	channel_convert_conf_init(&c, CHANNEL_CONVERT_CSV);
	assert_int_equal(c.format, CHANNEL_CONVERT_CSV);
	assert_int_equal(c.label_column, 0);
	assert_false(c.header_skip);
	assert_false(c.bad_row_skip);
	assert_int_equal(c.feature_dim, 0);
	memset(&c, 0x5a, sizeof(c));
	channel_convert_conf_init(&c, CHANNEL_CONVERT_LIBSVM);
	assert_int_equal(c.format, CHANNEL_CONVERT_LIBSVM);
	assert_int_equal(c.label_column, 0);
	assert_false(c.header_skip);
	assert_false(c.bad_row_skip);
	assert_int_equal(c.feature_dim, 0);
	memset(&c, 0x5a, sizeof(c));
	channel_convert_conf_init(&c, CHANNEL_CONVERT_NONE);
	assert_int_equal(c.format, CHANNEL_CONVERT_NONE);
	assert_int_equal(c.label_column, 0);
	assert_false(c.header_skip);
	assert_false(c.bad_row_skip);
	assert_int_equal(c.feature_dim, 0);
}

/* Each option in each form: --x V, --x=V, -o x=V (also -o x-y=V), values
 * in any case; the defaults when only --convert is given. */
static void test_convert_forms(void **state)
{
	struct fs_options o;

	/* csv's defaults: the label in column 0, no header, fail, any
	 * number of features */
	OK(false, &o, "--convert", "csv", "a=s3://bucket/p/", "/mnt");
	check_convert(&o, CHANNEL_CONVERT_CSV, 0, false, false, 0);
	fs_options_free(&o);
	OK(false, &o, "--convert=CSV", "a=s3://bucket/p/", "/mnt");
	check_convert(&o, CHANNEL_CONVERT_CSV, 0, false, false, 0);
	fs_options_free(&o);
	OK(false, &o, "-o", "convert=Csv", "a=s3://bucket/p/", "/mnt");
	check_convert(&o, CHANNEL_CONVERT_CSV, 0, false, false, 0);
	fs_options_free(&o);

	/* --x V */
	OK(false, &o, "--convert", "csv", "--csv-label-column", "3",
	   "--csv-header", "skip", "--on-bad-row", "skip", "--feature-dim",
	   "4294967296", "a=s3://bucket/p/", "/mnt");
	check_convert(&o, CHANNEL_CONVERT_CSV, 3, true, true, 1ULL << 32);
	fs_options_free(&o);
	/* --x=V */
	OK(false, &o, "--convert=csv", "--csv-label-column=none",
	   "--csv-header=SKIP", "--on-bad-row=Skip", "--feature-dim=1",
	   "a=s3://bucket/p/", "/mnt");
	check_convert(&o, CHANNEL_CONVERT_CSV, CHANNEL_LABEL_NONE, true, true,
		      1);
	fs_options_free(&o);
	/* -o x=V, one list */
	OK(false, &o, "-o",
	   "convert=csv,csv_label_column=1000000,csv_header=skip,"
	   "on_bad_row=skip,feature_dim=17",
	   "a=s3://bucket/p/", "/mnt");
	check_convert(&o, CHANNEL_CONVERT_CSV, 1000000, true, true, 17);
	fs_options_free(&o);
	/* -o with dashes, several -o, and underscores in the long form */
	OK(false, &o, "-o", "convert=csv", "-o", "csv-label-column=NONE", "-o",
	   "csv-header=none", "-o", "on-bad-row=fail", "--feature_dim", "2",
	   "a=s3://bucket/p/", "/mnt");
	check_convert(&o, CHANNEL_CONVERT_CSV, CHANNEL_LABEL_NONE, false, false,
		      2);
	fs_options_free(&o);

	/* libsvm, which needs --feature-dim */
	OK(false, &o, "--convert", "libsvm", "--feature-dim", "100",
	   "a=s3://bucket/p/", "/mnt");
	check_convert(&o, CHANNEL_CONVERT_LIBSVM, 0, false, false, 100);
	fs_options_free(&o);
	OK(false, &o, "--convert=LIBSVM", "--feature-dim=5",
	   "--on-bad-row=skip", "a=s3://bucket/p/", "/mnt");
	check_convert(&o, CHANNEL_CONVERT_LIBSVM, 0, false, true, 5);
	fs_options_free(&o);
	OK(false, &o, "-o", "convert=libsvm,feature_dim=9,on_bad_row=fail",
	   "a=s3://bucket/p/", "/mnt");
	check_convert(&o, CHANNEL_CONVERT_LIBSVM, 0, false, false, 9);
	fs_options_free(&o);

	/* none is a value too; the last one wins */
	OK(false, &o, "--convert", "csv", "--convert", "None",
	   "a=s3://bucket/p/", "/mnt");
	check_convert(&o, CHANNEL_CONVERT_NONE, 0, false, false, 0);
	fs_options_free(&o);
	OK(false, &o, "--convert", "libsvm", "--convert", "csv", "--csv-header",
	   "skip", "--csv-header", "none", "--csv-label-column", "none",
	   "--csv-label-column", "4", "a=s3://bucket/p/", "/mnt");
	check_convert(&o, CHANNEL_CONVERT_CSV, 4, false, false, 0);
	fs_options_free(&o);

	/* the options may come before --convert, and apply to every
	 * channel, gzip and manifests included */
	OK(false, &o, "--feature-dim", "3", "--csv-header", "skip",
	   "--compression", "gzip", "--record-wrapper", "none", "a=s3://bk1/p/",
	   "m=manifest+s3://bk2/m.json", "--convert", "csv", "/mnt");
	assert_int_equal(o.nchannels, 2);
	check_convert(&o, CHANNEL_CONVERT_CSV, 0, true, false, 3);
	assert_int_equal(o.channels[0].compression, CHANNEL_COMPRESSION_GZIP);
	assert_int_equal(o.channels[1].compression, CHANNEL_COMPRESSION_GZIP);
	assert_null(o.channels[0].content_type);
	fs_options_free(&o);

	/* mount.s3pipe */
	OK(true, &o, "s3://bucket/p/", "/mnt", "-o",
	   "convert=libsvm,feature_dim=28,on_bad_row=skip");
	check_convert(&o, CHANNEL_CONVERT_LIBSVM, 0, false, true, 28);
	fs_options_free(&o);
}

/* Values out of their sets and ranges, in the form they were written. */
static void test_convert_value_errors(void **state)
{
	static const char *const bad_columns[] = {
	    "-1",  "1000001", "x",  "1.5",
	    "0x1", "none1",   " 1", "99999999999999999999"};
	char arg[64], msg[160];

	ERR(false, "--convert must be none, csv or libsvm (got 'json')",
	    "--convert", "json", "a=s3://bucket", "/mnt");
	ERR(false, "--convert must be none, csv or libsvm (got 'tsv')",
	    "--convert=tsv", "a=s3://bucket", "/mnt");
	ERR(false,
	    "-o convert must be none, csv or libsvm (got "
	    "'recordio-protobuf')",
	    "-o", "convert=recordio-protobuf", "a=s3://bucket", "/mnt");
	ERR(false, "option --convert needs a value", "a=s3://bucket", "/mnt",
	    "--convert");
	ERR(false, "option -o convert needs a value", "-o",
	    "convert=", "a=s3://bucket", "/mnt");
	for (size_t i = 0; i < sizeof(bad_columns) / sizeof(bad_columns[0]);
	     i++) {
		snprintf(arg, sizeof(arg), "--csv-label-column=%s",
			 bad_columns[i]);
		snprintf(msg, sizeof(msg),
			 "--csv-label-column must be none or an integer from 0 "
			 "to 1000000 (got '%s')",
			 bad_columns[i]);
		ERR(false, msg, "--convert", "csv", arg, "a=s3://bucket",
		    "/mnt");
	}
	ERR(false,
	    "-o csv_label_column must be none or an integer from 0 to 1000000 "
	    "(got 'first')",
	    "-o", "convert=csv,csv_label_column=first", "a=s3://bucket",
	    "/mnt");
	ERR(false, "option --csv-label-column needs a value", "--convert",
	    "csv", "--csv-label-column=", "a=s3://bucket", "/mnt");
	ERR(false, "--csv-header must be none or skip (got 'present')",
	    "--convert", "csv", "--csv-header", "present", "a=s3://bucket",
	    "/mnt");
	ERR(false, "-o csv_header must be none or skip (got '1')", "-o",
	    "convert=csv,csv-header=1", "a=s3://bucket", "/mnt");
	ERR(false, "--on-bad-row must be fail or skip (got 'ignore')",
	    "--convert", "csv", "--on-bad-row", "ignore", "a=s3://bucket",
	    "/mnt");
	ERR(false, "-o on_bad_row must be fail or skip (got 'continue')", "-o",
	    "convert=csv,on_bad_row=continue", "a=s3://bucket", "/mnt");
	ERR(false,
	    "--feature-dim must be an integer from 1 to 4294967296 (got '0')",
	    "--convert", "libsvm", "--feature-dim", "0", "a=s3://bucket",
	    "/mnt");
	ERR(false,
	    "--feature-dim must be an integer from 1 to 4294967296 (got "
	    "'4294967297')",
	    "--convert", "libsvm", "--feature-dim=4294967297", "a=s3://bucket",
	    "/mnt");
	ERR(false,
	    "--feature-dim must be an integer from 1 to 4294967296 (got "
	    "'1e3')",
	    "--convert", "libsvm", "--feature-dim", "1e3", "a=s3://bucket",
	    "/mnt");
	ERR(false,
	    "-o feature_dim must be an integer from 1 to 4294967296 (got "
	    "'-5')",
	    "-o", "convert=libsvm,feature_dim=-5", "a=s3://bucket", "/mnt");
	/* no name is the start of another: the templates of one do not take
	 * the other's spellings */
	ERR(false, "unknown option '--convert-to' (see s3pipe --help)",
	    "--convert-to", "csv", "a=s3://bucket", "/mnt");
	ERR(false, "unknown option '--converts' (see s3pipe --help)",
	    "--converts=csv", "a=s3://bucket", "/mnt");
	ERR(false, "unknown option '--csv' (see s3pipe --help)", "--csv",
	    "a=s3://bucket", "/mnt");
	ERR(false, "unknown option '--csv-headers' (see s3pipe --help)",
	    "--csv-headers=skip", "a=s3://bucket", "/mnt");
	ERR(false, "unknown option '--feature-dims' (see s3pipe --help)",
	    "--feature-dims", "3", "a=s3://bucket", "/mnt");
	ERR(false, "unknown option '-o conv' (see s3pipe --help)", "-o",
	    "conv=csv", "a=s3://bucket", "/mnt");
}

/* The options that only go with others, whatever the order. */
static void test_convert_rules(void **state)
{
	struct fs_options o;

	ERR(false, "--csv-label-column needs --convert csv",
	    "--csv-label-column", "2", "a=s3://bucket", "/mnt");
	ERR(false, "--csv-label-column needs --convert csv", "-o",
	    "csv_label_column=none", "a=s3://bucket", "/mnt");
	ERR(false, "--csv-label-column needs --convert csv", "--convert",
	    "libsvm", "--feature-dim", "4", "--csv-label-column", "0",
	    "a=s3://bucket", "/mnt");
	ERR(false, "--csv-label-column needs --convert csv", "--convert", "csv",
	    "--csv-label-column", "0", "--convert", "none", "a=s3://bucket",
	    "/mnt");
	ERR(false, "--csv-header needs --convert csv", "--csv-header", "skip",
	    "a=s3://bucket", "/mnt");
	ERR(false, "--csv-header needs --convert csv", "--csv-header", "none",
	    "--convert", "libsvm", "--feature-dim", "4", "a=s3://bucket",
	    "/mnt");
	ERR(false, "--on-bad-row needs --convert csv or libsvm", "--on-bad-row",
	    "skip", "a=s3://bucket", "/mnt");
	ERR(false, "--on-bad-row needs --convert csv or libsvm", "--on-bad-row",
	    "fail", "--convert", "none", "a=s3://bucket", "/mnt");
	ERR(false, "--feature-dim needs --convert csv or libsvm",
	    "--feature-dim", "3", "a=s3://bucket", "/mnt");
	ERR(false, "--feature-dim needs --convert csv or libsvm", "-o",
	    "feature_dim=3", "a=s3://bucket", "/mnt");
	ERR(false,
	    "--convert libsvm needs --feature-dim N, the number of features "
	    "(the tensor's shape)",
	    "--convert", "libsvm", "a=s3://bucket", "/mnt");
	ERR(false,
	    "--convert libsvm needs --feature-dim N, the number of features "
	    "(the tensor's shape)",
	    "-o", "convert=libsvm,on_bad_row=skip", "a=s3://bucket", "/mnt");
	ERR(true,
	    "--convert libsvm needs --feature-dim N, the number of features "
	    "(the tensor's shape)",
	    "s3://bucket", "/mnt", "-o", "convert=libsvm");
	ERR(false,
	    "--convert csv needs --record-wrapper none: converted rows are "
	    "RecordIO records already",
	    "--convert", "csv", "--record-wrapper", "recordio", "a=s3://bucket",
	    "/mnt");
	ERR(false,
	    "--convert libsvm needs --record-wrapper none: converted rows are "
	    "RecordIO records already",
	    "-o", "record_wrapper=RecordIO,convert=libsvm,feature_dim=3",
	    "a=s3://bucket", "/mnt");
	/* --record-wrapper recordio without a conversion is still fine */
	OK(false, &o, "--convert", "none", "--record-wrapper", "recordio",
	   "a=s3://bucket", "/mnt");
	assert_int_equal(o.channels[0].convert.format, CHANNEL_CONVERT_NONE);
	assert_int_equal(o.channels[0].wrapper, CHANNEL_WRAPPER_RECORDIO);
	fs_options_free(&o);
}

/* The conversion fields of an InputDataConfig reach the specs through
 * --input-data-config. */
static void test_input_data_config_convert(void **state)
{
	struct fs_options o;
	char path[64], opt[128];

	write_temp(path, sizeof(path),
		   "[{\"ChannelName\": \"train\", \"DataSource\": "
		   "{\"S3DataSource\": {\"S3Uri\": \"s3://bucket/t/\", "
		   "\"S3DataType\": \"S3Prefix\"}}, \"ContentType\": "
		   "\"text/csv; label_size=0\", \"S3pipeConvert\": "
		   "\"application/x-recordio-protobuf\", \"S3pipeCsvHeader\": "
		   "\"Skip\"}, {\"ChannelName\": \"val\", \"DataSource\": "
		   "{\"S3DataSource\": {\"S3Uri\": \"s3://bucket/v/\", "
		   "\"S3DataType\": \"S3Prefix\"}}, \"ContentType\": "
		   "\"text/libsvm\", \"S3pipeConvert\": "
		   "\"application/x-recordio-protobuf\", \"S3pipeFeatureDim\": "
		   "784, \"S3pipeOnBadRow\": \"Skip\"}]");
	snprintf(opt, sizeof(opt), "--input-data-config=%s", path);
	OK(false, &o, opt, "/mnt");
	assert_int_equal(o.nchannels, 2);
	assert_int_equal(o.channels[0].convert.format, CHANNEL_CONVERT_CSV);
	assert_int_equal(o.channels[0].convert.label_column,
			 CHANNEL_LABEL_NONE);
	assert_true(o.channels[0].convert.header_skip);
	assert_false(o.channels[0].convert.bad_row_skip);
	assert_int_equal(o.channels[0].convert.feature_dim, 0);
	assert_int_equal(o.channels[1].convert.format, CHANNEL_CONVERT_LIBSVM);
	assert_true(o.channels[1].convert.bad_row_skip);
	assert_int_equal(o.channels[1].convert.feature_dim, 784);
	fs_options_free(&o);
	unlink(path);

	/* and their errors come out as the file's */
	write_temp(path, sizeof(path),
		   "[{\"ChannelName\": \"train\", \"DataSource\": "
		   "{\"S3DataSource\": {\"S3Uri\": \"s3://bucket/t/\", "
		   "\"S3DataType\": \"S3Prefix\"}}, \"ContentType\": "
		   "\"image/png\", \"S3pipeConvert\": "
		   "\"application/x-recordio-protobuf\"}]");
	snprintf(opt, sizeof(opt), "--input-data-config=%s", path);
	ERR(false,
	    "channel 'train': S3pipeConvert needs ContentType text/csv or "
	    "text/libsvm (got 'image/png')",
	    opt, "/mnt");
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_defaults),
	    cmocka_unit_test(test_defaults_after_parse),
	    cmocka_unit_test(test_two_channels_with_endpoint),
	    cmocka_unit_test(test_mount_helper_source_and_options),
	    cmocka_unit_test(test_fstab_style),
	    cmocka_unit_test(test_helper_default_channel),
	    cmocka_unit_test(test_all_long_space),
	    cmocka_unit_test(test_all_long_equals),
	    cmocka_unit_test(test_all_o_one_list),
	    cmocka_unit_test(test_all_o_many),
	    cmocka_unit_test(test_underscores_in_long),
	    cmocka_unit_test(test_debug),
	    cmocka_unit_test(test_sizes),
	    cmocka_unit_test(test_limits_accepted),
	    cmocka_unit_test(test_seek_reject),
	    cmocka_unit_test(test_last_wins),
	    cmocka_unit_test(test_endpoint_forms),
	    cmocka_unit_test(test_options_anywhere),
	    cmocka_unit_test(test_double_dash),
	    cmocka_unit_test(test_mountpoint_with_equals),
	    cmocka_unit_test(test_max_channels),
	    cmocka_unit_test(test_escaped_comma),
	    cmocka_unit_test(test_passthrough),
	    cmocka_unit_test(test_passthrough_errors),
	    cmocka_unit_test(test_max_threads),
	    cmocka_unit_test(test_max_listers),
	    cmocka_unit_test(test_stats_interval),
	    cmocka_unit_test(test_session_args),
	    cmocka_unit_test(test_helper_flags),
	    cmocka_unit_test(test_helper_flag_errors),
	    cmocka_unit_test(test_help_version),
	    cmocka_unit_test(test_usage),
	    cmocka_unit_test(test_channel_name_valid),
	    cmocka_unit_test(test_errors_common_mistakes),
	    cmocka_unit_test(test_errors_forms),
	    cmocka_unit_test(test_errors_numbers),
	    cmocka_unit_test(test_errors_cache_vs_part),
	    cmocka_unit_test(test_errors_endpoint),
	    cmocka_unit_test(test_errors_channels),
	    cmocka_unit_test(test_errors_helper),
	    cmocka_unit_test(test_free_is_idempotent),
	    cmocka_unit_test(test_no_argv),
	    cmocka_unit_test(test_channel_defaults),
	    cmocka_unit_test(test_channel_options_apply),
	    cmocka_unit_test(test_shuffle_seed),
	    cmocka_unit_test(test_channel_option_errors),
	    cmocka_unit_test(test_host_rules),
	    cmocka_unit_test(test_attribute_names),
	    cmocka_unit_test(test_input_data_config),
	    cmocka_unit_test(test_convert_conf_init),
	    cmocka_unit_test(test_convert_forms),
	    cmocka_unit_test(test_convert_value_errors),
	    cmocka_unit_test(test_convert_rules),
	    cmocka_unit_test(test_input_data_config_convert),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
