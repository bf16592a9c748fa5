/*
 * fs options: the command line of s3pipe and mount.s3pipe.
 *
 *   s3pipe [OPTIONS] NAME=s3://BUCKET[/PREFIX] [NAME=URI ...] MOUNTPOINT
 *   mount.s3pipe SOURCE MOUNTPOINT [-s] [-f] [-n] [-v] [-o OPTIONS]
 *
 * Every option exists as "--long-option VALUE" (or "--long-option=VALUE")
 * and as "-o long_option=VALUE" (dashes and underscores interchangeable).
 * libfuse's fuse_opt does the splitting; -o options that s3pipe does not
 * know are handed to libfuse and the kernel (auto_unmount, fsname=, ...),
 * after libfuse has said it takes them.  fstab keywords (_netdev, nofail,
 * rw, x-*, ...) are dropped.  Parsing only checks syntax and values;
 * nothing here touches the network or the mountpoint.
 *
 * For mount.s3pipe, -s -f -n -v keep mount(8)'s meanings (see the EXTERNAL
 * HELPERS section of mount(8)): -f is "fake" (check, do not mount) and sets
 * o->fake; -s, -n, -v are accepted and ignored.  Foreground there is
 * "-o foreground".
 */
#ifndef S3PIPE_FS_OPTIONS_H
#define S3PIPE_FS_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define FUSE_USE_VERSION 314
#include <fuse_opt.h>

#include "cache/cache.h"
#include "store/disk.h"
#include "channel/channel.h"
#include "s3/s3.h"

#define FS_MAX_CHANNELS	    CHANNEL_MAX
#define FS_CHANNEL_NAME_MAX CHANNEL_NAME_MAX

#define FS_DEFAULT_CHANNEL     "train" /* mount.s3pipe without -o channel */
#define FS_DEFAULT_MAX_THREADS 16      /* FUSE worker threads */
/* the session's max_read: the FUSE init must set conn->max_read to it */
#define FS_MAX_READ (1U << 20)

enum fs_seek_mode { FS_SEEK_REJECT = 0, FS_SEEK_EMULATE = 1 };

/*
 * What the command line says of its NAME=URI channels (all of them), and
 * of this host; fs/channels.c applies it.
 */
struct fs_channel_args {
	/* the per-channel options (channel_settings[]) as given, with their
	 * given bits: copied onto each NAME=URI channel that takes them */
	struct channel_spec settings;
	bool host_index_set, host_count_set;
	unsigned host_index, host_count;
};

/*
 * Everything the command line sets.  The option table (fs/options.c) points
 * straight into the module confs embedded here, whose defaults their own
 * xxx_conf_init() writes; the rest is the mount's own.
 */
struct fs_options {
	struct s3_client_conf s3;    /* endpoint, credentials, connections */
	struct cache_conf cache;     /* budget, block size */
	bool part_size_given;	     /* else a record shuffle may lower it */
	struct disk_store_conf disk; /* --cache-dir (dir owned), its size */
	struct channel_conf channel; /* how channels run */
	/* from NAME=URI arguments or from --input-data-config */
	struct channel_spec channels[FS_MAX_CHANNELS];
	unsigned nchannels;
	struct fs_channel_args args; /* per-channel options, host */
	char *input_data_config;     /* owned: FILE, or NULL */
	char *resource_config;	     /* owned: FILE, or NULL */
	char *container_config_dir;  /* owned: DIR, or NULL */
	char *pid_file;		     /* owned: --pid-file, or NULL */
	struct channel_host host;    /* filled by the parse */
	char *mountpoint;	     /* owned */
	unsigned epochs;	     /* 0 = unlimited */
	enum fs_seek_mode seek;
	unsigned max_threads;	 /* FUSE worker threads */
	unsigned stats_interval; /* --stats-interval seconds, 0 = off */
	bool foreground;
	bool debug;
	bool allow_other;
	bool uid_set, gid_set;
	uid_t uid;
	gid_t gid;
	bool fake; /* mount.s3pipe -f (mount -f): check, do not mount */
	bool check_options; /* --check-options: parse, report, exit */
	bool help;
	bool version;
	/* options for libfuse and the kernel (what s3pipe does not know),
	 * owned: argv[0] is the program, then "-o" and the list (escaped as
	 * fuse_opt escapes) when there is one */
	struct fuse_args fuse_args;
};

/* Fills defaults.  Call before fs_options_parse(). */
void fs_options_init(struct fs_options *o);
/*
 * Frees what o owns and resets the pointers, so it is safe after a failed
 * parse and safe to call twice.
 */
void fs_options_free(struct fs_options *o);

/*
 * Parses argv (argv[0] is skipped) into o, which fs_options_init() filled;
 * argv is not modified and nothing in o points into it.  mount_helper
 * selects mount.s3pipe's convention.  Returns 0; or EINVAL (ENOMEM) with one
 * user-facing line in err (lowercase, no "s3pipe:" prefix, no trailing
 * period).  With --help or --version it returns 0 and ignores the rest of
 * the line, with o->help / o->version set, and may leave the channels,
 * mountpoint and fuse_args empty.  The caller calls fs_options_free() in
 * every case.
 *
 * Each -o option s3pipe does not know is tried on a throw-away
 * fuse_session_new() (no file descriptor, no mount) and lands in
 * o->fuse_args only if libfuse takes it; max_read is refused.  While it
 * runs, libfuse's log goes to a buffer of this module; afterwards
 * fuse_set_log_func(NULL) puts back libfuse's default (stderr).  Not
 * thread-safe: parse once, at start-up.
 */
int fs_options_parse(int argc, char **argv, bool mount_helper,
		     struct fs_options *o, char *err, size_t errlen);

/* The usage text for --help. */
void fs_options_usage(FILE *out, const char *progname);

#endif
