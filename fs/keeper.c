/*
 * fs keeper: the process that holds the mount while workers come and go
 * (see keeper.h).
 *
 * The keeper is one thread.  Before its first fork it makes the shared
 * region (a memfd) and blocks the signals it handles; it then waits on a
 * signalfd (a worker's death, SIGTERM and SIGINT to stop, SIGHUP to
 * restart), on each worker's socket, and on the /dev/fuse descriptor with
 * no events asked (the kernel reports POLLERR once the mount is gone).
 *
 * A worker's death decides what happens next:
 *   - the mount is gone (unmounted, or the connection aborted): done, 0;
 *   - the keeper was told to stop: it unmounts, 0;
 *   - the worker was told to stop for a handover: the new one goes on;
 *   - otherwise it crashed: the death is logged once with its cause, and
 *     a new worker is started (KEEPER_CRASHES_MAX deaths within
 *     KEEPER_CRASHES_WINDOW seconds give the mount up: it is unmounted
 *     and the descriptor closed, so blocked readers get ENOTCONN).
 * Workers die with the keeper (PR_SET_PDEATHSIG): a keeper that is killed
 * takes the mount with it, as a single daemon did.
 */
#include "config.h"

#include "fs/keeper.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util/spawn.h"
#include "util/util.h"

struct keeper {
	struct fs_options *o;
	char **argv;
	char *exe; /* the binary on disk, for an upgrade (SIGHUP) */
	struct keeper_shared *shared;
	int shared_fd;
	int fuse_fd; /* the mount's, once the first worker sent it */
	int sig_fd;
	sigset_t old_mask;
	pid_t worker; /* serving, or starting after a crash */
	int worker_ctl;
	bool worker_ready; /* told to go */
	pid_t standby;	   /* started by SIGHUP, not serving yet */
	int standby_ctl;
	bool handing_over;   /* the worker was told to stop for the standby */
	bool gone;	     /* the mount is gone (unmounted, aborted) */
	int cwd_fd;	     /* where s3pipe was started: relative paths on the
				command line mean it, for every worker */
	const char *respawn; /* the binary a crash restarts: the running one,
				then the one a restart (SIGHUP) took */
	bool stopping;
	time_t crashes[KEEPER_CRASHES_MAX]; /* the last deaths, a ring */
	unsigned ncrashes;
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Why a worker ended, from its wait status. */
static void death_cause(int status, char *out, size_t len)
{
	if (WIFSIGNALED(status))
		snprintf(out, len, "signal %d (%s)%s", WTERMSIG(status),
			 strsignal(WTERMSIG(status)),
			 WCOREDUMP(status) ? ", core dumped" : "");
	else if (WIFEXITED(status))
		snprintf(out, len, "exit status %d", WEXITSTATUS(status));
	else
		snprintf(out, len, "wait status %d", status);
}

/* The shared region, before the first worker.  NULL on error (errno). */
static struct keeper_shared *shared_create(const struct fs_options *o, int *fd)
{
	struct keeper_shared *s;

	*fd = memfd_create("s3pipe-keeper", MFD_CLOEXEC);
	if (*fd < 0)
		return NULL;
	if (ftruncate(*fd, sizeof(*s)) != 0) {
		close(*fd);
		return NULL;
	}
	s = mmap(NULL, sizeof(*s), PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
	if (s == MAP_FAILED) {
		close(*fd);
		return NULL;
	}
	s->magic = KEEPER_MAGIC;
	s->size = sizeof(*s);
	s->nchannels = o->nchannels;
	s->generation = 1;
	for (unsigned i = 0; i < FS_MAX_CHANNELS; i++) {
		s->catalog_fd[i] =
		    i < o->nchannels
			? memfd_create("s3pipe-catalog", MFD_CLOEXEC)
			: -1;
		s->order_fd[i] =
		    i < o->nchannels
			? memfd_create("s3pipe-orders", MFD_CLOEXEC)
			: -1;
		s->records_fd[i] =
		    i < o->nchannels &&
			    channel_record_format(&o->channels[i]) !=
				CHANNEL_RECORDS_NONE
			? memfd_create("s3pipe-records", MFD_CLOEXEC)
			: -1;
	}
	if (!realpath(o->mountpoint, s->mountpoint))
		snprintf(s->mountpoint, sizeof(s->mountpoint), "%s",
			 o->mountpoint);
	return s;
}

/* A process that goes when the keeper goes, with the keeper's signals
 * back to their defaults. */
static void worker_setup(struct keeper *k, pid_t keeper)
{
	signal(SIGCHLD, SIG_DFL);
	sigprocmask(SIG_SETMASK, &k->old_mask, NULL);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != keeper)
		_exit(1); /* the keeper went before the line above */
}

/* A new worker, from binary (fork and exec), told its descriptors by
 * KEEPER_ENV: 0 with *pid and *ctl, or an errno. */
static int worker_spawn(struct keeper *k, const char *binary, pid_t *pid,
			int *ctl)
{
	pid_t keeper = getpid();
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
		return errno;
	*pid = fork();
	if (*pid < 0) {
		int err = errno;

		close(sv[0]);
		close(sv[1]);
		return err;
	}
	if (*pid == 0) {
		char env[64];

		worker_setup(k, keeper);
		if (k->cwd_fd >= 0 && fchdir(k->cwd_fd) != 0) {
			/* then relative paths mean "/" */
		}
		/* its descriptors stay open across exec */
		keeper_worker_cloexec(k->fuse_fd, k->shared_fd, sv[1],
				      k->shared, false);
		snprintf(env, sizeof(env), "%d,%d,%d", k->fuse_fd, k->shared_fd,
			 sv[1]);
		setenv(KEEPER_ENV, env, 1);
		execv(binary, k->argv);
		_exit(127);
	}
	close(sv[1]);
	*ctl = sv[0];
	return 0;
}

/* Whether the mount is gone (unmounted, or its connection aborted). */
static bool mount_gone(int fuse_fd)
{
	struct pollfd p = {.fd = fuse_fd, .events = 0};

	return fuse_fd < 0 ||
	       (poll(&p, 1, 0) == 1 && (p.revents & (POLLERR | POLLHUP)));
}

/* Unmounts mnt lazily (a reader still inside does not stop it), as
 * libfuse does: root itself, anyone else through fusermount3. */
static void unmount_path(const char *mnt)
{
	char *const args[] = {"fusermount3", "-u",	  "-q", "-z",
			      "--",	     (char *)mnt, NULL};
	struct util_spawn sp = {.argv = args,
				.search = true,
				.out = UTIL_SPAWN_NULL,
				.err = UTIL_SPAWN_INHERIT};
	pid_t pid;
	int status;

	if (geteuid() == 0 && umount2(mnt, MNT_DETACH) == 0)
		return;
	if (util_spawn(&sp, &pid, NULL) == 0)
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
}

/* The mount undone and its descriptor closed (blocked readers then get
 * ENOTCONN). */
static void keeper_unmount(struct keeper *k)
{
	bool gone = k->gone || mount_gone(k->fuse_fd);

	if (k->fuse_fd >= 0)
		close(k->fuse_fd);
	k->fuse_fd = -1;
	if (!gone)
		unmount_path(k->shared->mountpoint);
}

/* --pid-file: the keeper's pid, written whole. */
static int write_pid_file(const char *path)
{
	char line[32];

	if (!path)
		return 0;
	snprintf(line, sizeof(line), "%ld", (long)getpid());
	return util_write_text_file(path, line, 0644);
}

/* Detached: the shell that started s3pipe learns the mount is there, and
 * the keeper's output goes to syslog. */
static void go_quiet(int ready_fd)
{
	if (ready_fd >= 0) {
		if (write(ready_fd, "R", 1) != 1) {
			/* the parent is gone; keep the mount */
		}
		close(ready_fd);
	}
	util_daemon_quiet();
}

/*
 * The pages the start touched (the command line's parse, the credential
 * check, the libraries' relocations) are not the keeper's working set: its
 * loop uses a few pages of code.  Each read-only file mapping that holds
 * no page of its own (no copy-on-write copy: text and constants) drops its
 * pages from the keeper's tables (MADV_DONTNEED: they stay in the page
 * cache, shared with the worker, and come back on a touch); the heap is
 * trimmed.  What the keeper then holds is what it uses.
 */
static void shed_start_pages(void)
{
	FILE *smaps = fopen("/proc/self/smaps", "re");
	unsigned long start = 0, end = 0;
	bool candidate = false;
	char line[4096];

	malloc_trim(0);
	if (!smaps)
		return;
	while (fgets(line, sizeof(line), smaps)) {
		unsigned long a, b, kb;
		char perms[8], path[8] = "";

		if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %7s", &a, &b, perms,
			   path) >= 3 &&
		    strchr(line, '-') < strchr(line, ' ')) {
			start = a;
			end = b;
			candidate = path[0] == '/' && perms[1] != 'w';
		} else if (candidate &&
			   (sscanf(line, "Anonymous: %lu kB", &kb) == 1 ||
			    sscanf(line, "Swap: %lu kB", &kb) == 1)) {
			/* a copy-on-write page, resident or swapped out,
			 * is the mapping's own: leave it whole */
			if (kb != 0)
				candidate = false;
			else if (strncmp(line, "Swap:", 5) == 0) {
				madvise((void *)start, end - start,
					MADV_DONTNEED);
				candidate = false;
			}
		}
	}
	fclose(smaps);
}

/* A crash: counted, and whether the mount is given up (too many). */
static bool crash_counts_out(struct keeper *k)
{
	time_t now = time(NULL);
	time_t oldest;

	k->crashes[k->ncrashes++ % KEEPER_CRASHES_MAX] = now;
	if (k->ncrashes < KEEPER_CRASHES_MAX)
		return false;
	oldest = k->crashes[k->ncrashes % KEEPER_CRASHES_MAX];
	return now - oldest < KEEPER_CRASHES_WINDOW;
}

static void close_ctl(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* Tells the worker (now serving) to go: its handles carry the next
 * generation. */
static void worker_go(struct keeper *k)
{
	__atomic_add_fetch(&k->shared->generation, 1, __ATOMIC_RELEASE);
	if (keeper_send(k->worker_ctl, KEEPER_GO, -1) == 0)
		k->worker_ready = true;
}

/* A worker started after another, for s3pipe stats. */
static void note_restart(struct keeper *k, const char *cause)
{
	snprintf(k->shared->last_cause, sizeof(k->shared->last_cause), "%s",
		 cause);
	k->shared->last_restart_ms = now_ms();
	__atomic_add_fetch(&k->shared->restarts, 1, __ATOMIC_RELEASE);
}

/* The serving worker died: what comes next (see the top of the file).
 * Returns an exit status when the keeper is done, else -1. */
static int worker_died(struct keeper *k, int status)
{
	char cause[KEEPER_CAUSE_MAX];
	int rc;

	close_ctl(&k->worker_ctl);
	k->worker = 0;
	if (k->gone || mount_gone(k->fuse_fd) || k->stopping) {
		if (k->standby > 0)
			kill(k->standby, SIGTERM);
		keeper_unmount(k);
		return 0;
	}
	if (k->handing_over && k->standby > 0) {
		k->handing_over = false;
		k->worker = k->standby;
		k->worker_ctl = k->standby_ctl;
		k->standby = 0;
		k->standby_ctl = -1;
		note_restart(k, "restart asked for (SIGHUP)");
		if (k->exe)
			k->respawn = k->exe; /* crashes restart the new one */
		worker_go(k);
		return -1;
	}
	death_cause(status, cause, sizeof(cause));
	util_warn("worker for %s died (%s): starting another",
		  k->shared->mountpoint, cause);
	note_restart(k, cause);
	if (crash_counts_out(k)) {
		util_error("workers for %s died %d times within %d s: giving "
			   "the mount up",
			   k->shared->mountpoint, KEEPER_CRASHES_MAX,
			   KEEPER_CRASHES_WINDOW);
		if (k->standby > 0)
			kill(k->standby, SIGKILL);
		keeper_unmount(k);
		return 1;
	}
	k->worker_ready = false;
	rc = worker_spawn(k, k->respawn, &k->worker, &k->worker_ctl);
	if (rc) {
		char msg[128];

		util_error("cannot start a worker for %s: %s; giving the "
			   "mount up",
			   k->shared->mountpoint,
			   util_strerror(rc, msg, sizeof(msg)));
		keeper_unmount(k);
		return 1;
	}
	return -1;
}

/* Reaps what died.  An exit status when the keeper is done, else -1. */
static int reap(struct keeper *k)
{
	int status, done = -1;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		if (pid == k->worker) {
			done = worker_died(k, status);
			if (done >= 0)
				return done;
		} else if (pid == k->standby) {
			char cause[KEEPER_CAUSE_MAX];

			death_cause(status, cause, sizeof(cause));
			util_warn("the new worker for %s died before it "
				  "served (%s): the old one goes on",
				  k->shared->mountpoint, cause);
			close_ctl(&k->standby_ctl);
			k->standby = 0;
			k->handing_over = false;
		}
	}
	return done;
}

/* SIGHUP: a new worker from the binary on disk, which takes over once it
 * runs (a binary that does not start leaves the old worker serving). */
static void restart(struct keeper *k)
{
	int rc;

	if (k->standby > 0 || !k->worker_ready) {
		util_info("a restart of %s is already under way",
			  k->shared->mountpoint);
		return;
	}
	rc = worker_spawn(k, k->exe ? k->exe : "/proc/self/exe", &k->standby,
			  &k->standby_ctl);
	if (rc) {
		char msg[128];

		util_warn("cannot start a new worker for %s: %s",
			  k->shared->mountpoint,
			  util_strerror(rc, msg, sizeof(msg)));
		k->standby = 0;
	}
}

/* A worker's message on its socket (ctl): -1 from a socket closed. */
static void on_message(struct keeper *k, bool standby)
{
	int fd = -1;
	int msg = keeper_recv(standby ? k->standby_ctl : k->worker_ctl, &fd);

	if (fd >= 0)
		close(fd); /* only the first worker sends one */
	if (msg < 0) {
		close_ctl(standby ? &k->standby_ctl : &k->worker_ctl);
		return;
	}
	if (msg != KEEPER_READY)
		return;
	if (!standby) {
		worker_go(k); /* a crash's replacement: at once */
		return;
	}
	/* the new worker is ready: the old one stops, and its death hands
	 * over (worker_died) */
	k->handing_over = true;
	kill(k->worker, SIGTERM);
}

/* The loop, once mounted.  Returns the exit status. */
static int keeper_loop(struct keeper *k)
{
	for (;;) {
		struct pollfd p[4] = {
		    {.fd = k->sig_fd, .events = POLLIN},
		    /* (once gone, it would report POLLERR at every poll) */
		    {.fd = k->gone ? -1 : k->fuse_fd, .events = 0},
		    {.fd = k->worker_ctl, .events = POLLIN},
		    {.fd = k->standby_ctl, .events = POLLIN},
		};
		struct signalfd_siginfo si;
		int done;

		if (poll(p, 4, -1) < 0) {
			if (errno == EINTR)
				continue;
			return 1;
		}
		if (p[2].revents)
			on_message(k, false);
		if (p[3].revents)
			on_message(k, true);
		if (p[1].revents & (POLLERR | POLLHUP)) {
			k->gone = true; /* the worker's death ends it */
			if (k->worker <= 0)
				return 0;
		}
		if (!(p[0].revents & POLLIN) ||
		    read(k->sig_fd, &si, sizeof(si)) != sizeof(si))
			continue;
		switch (si.ssi_signo) {
		case SIGCHLD:
			done = reap(k);
			if (done >= 0)
				return done;
			break;
		case SIGHUP:
			restart(k);
			break;
		default: /* SIGTERM, SIGINT: unmount once the worker is gone */
			k->stopping = true;
			if (k->worker > 0)
				kill(k->worker, SIGTERM);
			if (k->standby > 0)
				kill(k->standby, SIGTERM);
			if (k->worker <= 0) {
				keeper_unmount(k);
				return 0;
			}
			break;
		}
	}
}

/* The first worker's start-up, watched: 0 once it sent the mounted
 * descriptor; -1 when it was killed by a signal (another is started);
 * else the status the keeper exits with (the worker said why on stderr).
 * SIGTERM or SIGINT meanwhile stop it, and the start fails. */
static int first_mount(struct keeper *k)
{
	int fd = -1, status = 0, msg;

	for (;;) {
		struct pollfd p[2] = {{.fd = k->worker_ctl, .events = POLLIN},
				      {.fd = k->sig_fd, .events = POLLIN}};
		struct signalfd_siginfo si;

		if (poll(p, 2, -1) < 0 && errno != EINTR)
			return 1;
		if ((p[1].revents & POLLIN) &&
		    read(k->sig_fd, &si, sizeof(si)) == sizeof(si) &&
		    (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT)) {
			k->stopping = true;
			kill(k->worker, SIGTERM);
		}
		if (p[0].revents)
			break;
	}
	msg = keeper_recv(k->worker_ctl, &fd);
	if (msg == KEEPER_MOUNTED && fd >= 0) {
		k->fuse_fd = fd;
		k->worker_ready = true;
		if (!k->stopping)
			return 0;
		kill(k->worker, SIGTERM);
	} else if (fd >= 0) {
		close(fd);
	}
	/* the worker's end closed (it exited or died), or it is stopped */
	while (waitpid(k->worker, &status, 0) < 0 && errno == EINTR)
		;
	k->worker = 0;
	if (k->fuse_fd < 0) {
		struct stat sb;

		/* it died mounted, before it could hand the mount over: no
		 * descriptor is left, and the mount only answers ENOTCONN */
		if (stat(k->shared->mountpoint, &sb) != 0 && errno == ENOTCONN)
			unmount_path(k->shared->mountpoint);
	}
	if (k->stopping) {
		keeper_unmount(k);
		return 1;
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
		return WEXITSTATUS(status);
	return WIFSIGNALED(status) ? -1 : 1;
}

/* Forks the first worker: in the child, -1 with *worker_ctl; in the
 * keeper, 0, or 1 when it cannot. */
static int first_fork(struct keeper *k, pid_t keeper, int *worker_ctl)
{
	int sv[2];
	char msg[128];

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0 ||
	    (k->worker = fork()) < 0) {
		fprintf(stderr, "s3pipe: cannot start the daemon: %s\n",
			util_strerror(errno, msg, sizeof(msg)));
		return 1;
	}
	if (k->worker == 0) {
		worker_setup(k, keeper);
		close(sv[0]);
		close(k->sig_fd);
		free(k->exe);
		*worker_ctl = sv[1];
		return -1;
	}
	close(sv[1]);
	k->worker_ctl = sv[0];
	return 0;
}

int keeper_main(struct fs_options *o, char **argv, int ready_fd,
		int *worker_ctl, struct keeper_shared **shared)
{
	struct keeper k = {.o = o,
			   .argv = argv,
			   .fuse_fd = -1,
			   .worker_ctl = -1,
			   .standby_ctl = -1,
			   .respawn = "/proc/self/exe"};
	pid_t keeper = getpid();
	sigset_t mask;
	int rc;
	char msg[128];

	k.shared = shared_create(o, &k.shared_fd);
	if (!k.shared) {
		fprintf(stderr, "s3pipe: cannot start the keeper: %s\n",
			util_strerror(errno, msg, sizeof(msg)));
		return 1;
	}
	k.exe = realpath("/proc/self/exe", NULL);
	k.cwd_fd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, &k.old_mask);
	k.sig_fd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (k.sig_fd < 0) {
		fprintf(stderr, "s3pipe: cannot start the keeper: %s\n",
			util_strerror(errno, msg, sizeof(msg)));
		rc = 1;
		goto out;
	}
	/* a worker killed while it starts (the listing can take a while) is
	 * started again, as one killed later is */
	do {
		rc = first_fork(&k, keeper, worker_ctl);
		if (rc < 0) {
			*shared = k.shared;
			return -1;
		}
		rc = rc ? rc : first_mount(&k);
		if (rc < 0) {
			close_ctl(&k.worker_ctl);
			if (crash_counts_out(&k)) {
				fprintf(stderr,
					"s3pipe: the daemon was killed %d "
					"times while starting: giving up\n",
					KEEPER_CRASHES_MAX);
				rc = 1;
				goto out;
			}
			fprintf(stderr,
				"s3pipe: the daemon was killed while starting: "
				"starting it again\n");
		}
	} while (rc < 0);
	if (rc)
		goto out;
	rc = write_pid_file(o->pid_file);
	if (rc) {
		fprintf(stderr, "s3pipe: cannot write the pid file '%s': %s\n",
			o->pid_file, util_strerror(rc, msg, sizeof(msg)));
		k.stopping = true;
		kill(k.worker, SIGTERM);
		while (waitpid(k.worker, NULL, 0) < 0 && errno == EINTR)
			;
		keeper_unmount(&k);
		rc = 1;
		goto out;
	}
	if (o->foreground)
		util_info("mounted %u channel(s) on %s", o->nchannels,
			  o->mountpoint);
	else
		go_quiet(ready_fd);
	shed_start_pages();
	rc = keeper_loop(&k);
	if (o->pid_file)
		unlink(o->pid_file);
out:
	free(k.exe);
	return rc;
}
