/*
 * libFuzzer harness for fs/options.c.
 *
 * The input is split on NUL bytes into at most MAX_ARGS arguments (the rest
 * is dropped), then parsed once as s3pipe and once as mount.s3pipe.  A
 * successful parse must yield a consistent result (channels valid, a
 * mountpoint, cache >= 2 x part, the FUSE session's arguments built from
 * it); a failed one must leave one line in err.  fs_options_usage() is
 * exercised once on the first run.
 *
 * Build: ./configure CC=clang --enable-fuzzing && make tests/fuzz/fuzz_options
 * (it links libfs.a, libcache.a, libs3.a, libutil.a and libfuse3).
 */
#include "config.h"

#include "fs/options.h"
#include "fs/session.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ARGS  64
#define MAX_INPUT 8192

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_session_args(const struct fs_options *o, bool helper)
{
	struct fuse_args fa = FUSE_ARGS_INIT(0, NULL);

	if (fs_session_args(o, "s3pipe", helper, &fa) != 0)
		return; /* out of memory */
	if (fa.argc < 2 || strcmp(fa.argv[0], "s3pipe") != 0 ||
	    strncmp(fa.argv[1], "-oro,", 5) != 0 || fa.argv[fa.argc])
		abort();
	fuse_opt_free_args(&fa);
}

static void check(const struct fs_options *o, bool helper, int rc,
		  const char *err)
{
	unsigned i;

	if (rc != 0) {
		if (err[0] == '\0' || strchr(err, '\n'))
			abort();
		return;
	}
	if (o->help || o->version)
		return;
	if (o->nchannels == 0 || o->nchannels > FS_MAX_CHANNELS ||
	    !o->mountpoint || !o->mountpoint[0])
		abort();
	if (o->cache.budget_bytes / 2 < o->cache.block_size)
		abort();
	for (i = 0; i < o->nchannels; i++) {
		if (!channel_name_valid(o->channels[i].name) ||
		    !o->channels[i].uri || !o->channels[i].bucket ||
		    !o->channels[i].prefix)
			abort();
	}
	if (o->fuse_args.argc < 1)
		abort();
	check_session_args(o, helper);
}

static void parse_once(int argc, char **argv, bool helper)
{
	struct fs_options o;
	char err[256];
	int rc;

	fs_options_init(&o);
	err[0] = '\0';
	rc = fs_options_parse(argc, argv, helper, &o, err, sizeof(err));
	check(&o, helper, rc, err);
	fs_options_free(&o);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool usage_done;
	char *argv[MAX_ARGS + 2];
	char *buf;
	size_t i, start = 0;
	int argc = 0;

	if (!usage_done) {
		FILE *null = fopen("/dev/null", "w");

		if (null) {
			fs_options_usage(null, "s3pipe");
			fs_options_usage(null, "/sbin/mount.s3pipe");
			fclose(null);
		}
		usage_done = true;
	}
	if (size > MAX_INPUT)
		size = MAX_INPUT;
	/* one exact-size copy so ASan sees reads past any argument */
	buf = malloc(size + 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	argv[argc++] = "s3pipe";
	for (i = 0; i <= size && argc <= MAX_ARGS; i++) {
		if (buf[i] == '\0') {
			argv[argc++] = buf + start;
			start = i + 1;
		}
	}
	argv[argc] = NULL;
	parse_once(argc, argv, false);
	argv[0] = "mount.s3pipe";
	parse_once(argc, argv, true);
	free(buf);
	return 0;
}
