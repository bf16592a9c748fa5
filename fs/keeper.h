/*
 * fs keeper: a mount that outlives its daemon (fs/keeper.c, fs/worker.c).
 *
 * The process that mounts is the keeper: it holds the /dev/fuse
 * descriptor and the mount, and does nothing else (no S3, no user data).
 * A worker process serves every request.  The first worker is forked
 * from the keeper: it builds the stack, mounts, and hands the descriptor
 * to the keeper.  When a worker dies, the kernel keeps the connection (the
 * keeper's descriptor holds it) and readers wait; the keeper starts a new
 * worker (fork and exec of the same binary, KEEPER_ENV naming the
 * descriptors it inherits), which builds its stack, replays the FUSE_INIT
 * the first worker saw (libfuse 3.14 answers everything before an INIT
 * with EIO, and the kernel sends INIT once a connection), asks the kernel
 * to resend what the dead worker had taken (FUSE_NOTIFY_RESEND, Linux
 * 6.9+) and serves.  SIGHUP to the keeper starts a new worker from the
 * binary on disk; once it runs (its command line taken), the old one stops
 * and exits, and the new one builds its stack and goes on the same way (a
 * worker builds only once the one before it is gone: the epochs that one
 * made appear, and the disk tier it held, are the new one's).
 *
 * What survives a worker lives in a shared memory region the keeper made
 * (struct keeper_shared): which epochs are visible, the INIT, the restart
 * count and cause, where each key-order epoch's listing can go on from,
 * the resume files' slots (their inodes, fs/resume.h; new fields go last,
 * so that a worker takes an older keeper's region on an upgrade);
 * beside it, a memfd a channel holds its listed catalog as an image the
 * next worker maps (cache/catalog_image.c).  Inode numbers are derived from
 * what the catalog and the channel fix (fs/ops.c); file handles carry the
 * generation of the worker that opened them, so a new worker knows a handle it
 * did not make and rebuilds it from the inode and the read's offset.
 */
#ifndef S3PIPE_FS_KEEPER_H
#define S3PIPE_FS_KEEPER_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "fs/options.h"
#include "fs/resume.h"

/* How a worker the keeper started finds its descriptors: "FUSE,SHARED,CTL"
 * (decimal descriptor numbers) */
#define KEEPER_ENV "S3PIPE_WORKER"

#define KEEPER_MAGIC	 0x53335057u /* "S3PW" */
#define KEEPER_INIT_MAX	 512	     /* bytes of the FUSE_INIT request kept */
#define KEEPER_CAUSE_MAX 96
/* requests a worker has taken and not answered, journaled (a power of 2) */
#define KEEPER_INFLIGHT 1024
/* a worker that dies this often gives the mount up */
#define KEEPER_CRASHES_MAX    5
#define KEEPER_CRASHES_WINDOW 60 /* seconds */

struct keeper_shared {
	uint32_t magic;
	uint32_t size; /* sizeof(struct keeper_shared): a worker of another
			  layout (another version) does not take it */
	uint32_t nchannels;
	uint32_t generation;	 /* the serving worker's: 1 is the first */
	uint32_t restarts;	 /* workers started after the first */
	int64_t last_restart_ms; /* wall clock, ms since the epoch; 0: none */
	char last_cause[KEEPER_CAUSE_MAX]; /* "signal 9 (Killed)", ... */
	uint32_t init_len;		   /* 0 until the first INIT */
	unsigned char init[KEEPER_INIT_MAX];
	uint32_t visible[FS_MAX_CHANNELS]; /* epochs visible, a channel */
	/* a memfd a channel, the keeper's (the same number in every worker):
	 * where a worker keeps the channel's listed catalog for the next
	 * (channel_set_handover); -1 when there is none */
	int32_t catalog_fd[FS_MAX_CHANNELS];
	/* a memfd a channel, the keeper's: where a worker keeps each
	 * shuffled epoch's order for the next (channel_set_handover) */
	int32_t order_fd[FS_MAX_CHANNELS];
	/* where each channel's key-order epochs can list on from, a slot an
	 * epoch's parity (channel_set_resume): a worker taking over a reader
	 * deep in an epoch lists from there, not from the start */
	struct cache_resume resume[FS_MAX_CHANNELS][2];
	/* the uniques of the requests the serving worker took and has not
	 * answered (0: a free slot): what a kernel without
	 * FUSE_NOTIFY_RESEND will not send again */
	uint64_t inflight[KEEPER_INFLIGHT];
	/* the mountpoint's realpath, made before the mount: a worker never
	 * looks at the mountpoint itself (its own mount, which may be
	 * waiting for it) */
	char mountpoint[PATH_MAX];
	/* (new fields go last: a worker takes a region of any layout it
	 * knows, KEEPER_SHARED_BEFORE_RESUME below) */
	/* the resume files' names the kernel holds, their inodes
	 * (fs/resume.h) */
	struct fs_resume_files resume_files;
	/* a memfd a channel, the keeper's: where a worker keeps a record
	 * shuffle's index for the next (channel_set_records_fd) */
	int32_t records_fd[FS_MAX_CHANNELS];
};

/* The region of a keeper from before the resume files (s3pipe up to the
 * version that added them), which a worker of this version takes (a
 * SIGHUP upgrade): it keeps its resume files' slots to itself then, and
 * they do not outlive it. */
#define KEEPER_SHARED_BEFORE_RESUME offsetof(struct keeper_shared, resume_files)
/* The region of a keeper from before the record indexes kept for the next
 * worker: a worker of this version takes it and makes its indexes again. */
#define KEEPER_SHARED_BEFORE_RECORDS offsetof(struct keeper_shared, records_fd)

/* Messages on the keeper's socket with a worker (one byte each). */
enum keeper_msg {
	KEEPER_MOUNTED = 'M', /* worker: mounted, the descriptor attached */
	KEEPER_READY = 'R',   /* worker: stack built, waiting to serve */
	KEEPER_GO = 'G',      /* keeper: serve now */
};

/* ---- the keeper (fs/keeper.c) ---- */

/*
 * The keeper's life, after the command line is checked: makes the shared
 * region, forks the first worker (which returns from here with
 * *worker_ctl and *shared set, to serve), holds the mount, starts workers
 * as they die or on SIGHUP, and gives the mount up after
 * KEEPER_CRASHES_MAX deaths within KEEPER_CRASHES_WINDOW seconds.
 * ready_fd (>= 0 when detached) gets 'R' once the mount is there.
 * Returns the keeper's exit status, or -1 in the first worker.
 */
int keeper_main(struct fs_options *o, char **argv, int ready_fd,
		int *worker_ctl, struct keeper_shared **shared);

/* ---- a worker's side (fs/worker.c) ---- */

struct fuse_session;

/* The region of fd (a replacement's inheritance), mapped: NULL on error. */
struct keeper_shared *keeper_shared_map(int fd);

/*
 * Parses KEEPER_ENV: false when it is not set (not a worker the keeper
 * started); else true with the three descriptors, or -1s when it is
 * malformed.
 */
bool keeper_worker_env(int *fuse_fd, int *shared_fd, int *ctl_fd);

/*
 * Serves se over fd through the worker's own I/O: the first INIT seen is
 * kept in shared (the first worker), and with replay (a replacement) the
 * one kept is played to libfuse now, its reply to nobody.  0 or an errno.
 */
int keeper_session_io(struct fuse_session *se, int fd,
		      struct keeper_shared *shared, bool replay);

/* Asks the kernel to resend the requests a dead worker had taken: 0, or
 * an errno (EINVAL: the kernel has no FUSE_NOTIFY_RESEND). */
int keeper_resend(int fd);
/* The requests the dead worker had taken (shared's journal) answered with
 * EIO, for a kernel that cannot resend them; the journal emptied.  How
 * many. */
unsigned keeper_fail_inflight(int fd, struct keeper_shared *shared);
/* The journal emptied (what it held is being resent). */
void keeper_inflight_clear(struct keeper_shared *shared);

/* Sends msg, with fd attached when >= 0: 0 or an errno. */
int keeper_send(int sock, char msg, int fd);
/* Waits for a message (an attached descriptor into *fd, else -1): the
 * message, or -1 when the other side is gone. */
int keeper_recv(int sock, int *fd);

/* The descriptors a worker has from the keeper (the FUSE one, the shared
 * region, its socket, each channel's memfds) kept open across exec (on
 * false: the keeper's child, about to exec a worker) or closed on exec
 * again (on true: in the worker, so that what it runs, a
 * credential_process, does not hold the mount). */
void keeper_worker_cloexec(int fuse_fd, int shared_fd, int ctl_fd,
			   const struct keeper_shared *shared, bool on);

/* The generation a handle of this worker carries (0 when there is no
 * keeper). */
uint16_t keeper_generation(const struct keeper_shared *shared);

#endif
