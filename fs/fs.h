/*
 * fs: the mounted namespace and its FUSE low-level operations.
 *
 * The root directory holds NAME_N for every channel NAME and every epoch N
 * below the channel's visible count.  NAME_0 is there from the start;
 * NAME_{N+1} appears when a handle on NAME_N is released (read to the end
 * or abandoned), unless --epochs forbids it.  Inode numbers are derived:
 * 1 is the root, 2 + epoch * nchannels + channel is a channel file.
 *
 * Every open gets its own channel_reader (its own position) on the
 * channel's epoch, so concurrent readers share blocks.
 *
 * The root also has FS_STATS_FILE (fs/stats.h), which lookup finds and
 * readdir does not list: each open of it is one snapshot of the stats.
 *
 * A FastFile channel NAME is a directory NAME/ instead, its objects files
 * (channel_tree()), and FS_ORDER_DIR/NAME_N, found by name and never
 * listed, is epoch N's order of its files, one path a line.
 *
 * FS_RESUME_DIR/NAME_N@record=K and NAME_N@byte=B (fs/resume.h), found by
 * name and never listed, are Pipe channel NAME's epoch N from its record
 * K or byte B to its end; opening one makes N the channel's current
 * epoch, so that closing it makes NAME_{N+1} appear.
 */
#ifndef S3PIPE_FS_FS_H
#define S3PIPE_FS_FS_H

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>
#include <pthread.h>

#include "cache/cache.h"
#include "channel/channel.h"
#include "fs/options.h"
#include "fs/stats.h"

/* The folder of order files in the mount root, never listed. */
#define FS_ORDER_DIR ".s3pipe-order"

struct fs_handle;
struct fs_adopted;
struct fs_resume_files;
struct keeper_shared;

struct fs_channel {
	const char *name;	 /* points into the options */
	struct channel *channel; /* owned by the fs_state's owner */
	unsigned visible;	 /* epochs 0..visible-1 are listed */
};

struct fs_state {
	const struct fs_options *opts;
	char *mountpoint_real; /* the mountpoint's realpath(), or NULL */
	struct store *store;   /* under the cache; owned by the state's owner */
	struct cache *cache;
	struct fs_channel *channels;
	unsigned nchannels;
	uid_t uid;
	gid_t gid;
	struct timespec mount_time;
	pthread_mutex_t lock; /* guards visible counts, seek_warned, handles */
	bool seek_warned;
	bool readahead_raised;	    /* readahead_raise() was tried */
	struct fs_handle *handles;  /* open files */
	struct fs_adopted *adopted; /* other workers' handles, rebuilt */
	struct fs_stats *stats; /* owned by the state's owner; may be NULL */
	/* what outlives this worker (fs/keeper.h): visible epochs, the
	 * generation its handles carry */
	struct keeper_shared *shared;
	/* the resume files' slots: the shared region's, or the state's own
	 * (under lock) */
	struct fs_resume_files *resume_files;
};

/* The operations table; userdata for fuse_session_new is the fs_state. */
const struct fuse_lowlevel_ops *fs_operations(void);

/*
 * Closes the files still open when the session ended (a daemon stopped by
 * a signal while readers held files): their readers, and a gzip stage's
 * threads, stop before the stack below them goes.
 */
void fs_close_handles(struct fs_state *st);

/* ---- fs/main.c ---- */

/*
 * The mount, as s3pipe or mount.s3pipe (argv[0]'s name): parses the
 * command line, checks S3, mounts, daemonizes and serves until unmounted.
 * Returns the exit status.
 */
int fs_main(int argc, char **argv);

#endif
