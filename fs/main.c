/*
 * fs_main(): the mount of s3pipe and mount.s3pipe (tools/s3pipe.c calls
 * it): start-up, detach, serve, shut down.
 *
 * Order matters for "no mount left behind on error":
 *   1. parse options, check the mountpoint and credentials (no threads yet);
 *   2. unless in the foreground, fork: the parent waits on a pipe and exits
 *      with the child's verdict, so the shell sees success only once the
 *      mount is ready;
 *   3. the child builds the stack (build_stack(): the S3 client, the disk
 *      tier over it with --cache-dir, the cache over that, the channels'
 *      streams over the cache) and starts every channel (its first listing
 *      page, the whole listing when a shuffle needs every key, or its
 *      manifest: this is the bucket check), then mounts;
 *   4. only then it tells the parent, silences stdio and serves.
 * Every error before step 4 prints one line "s3pipe: ..." and exits 1.
 * The live stats (fs/stats.h) are created with the stack, their logger
 * (--stats-interval) runs while the session serves.  "s3pipe stats ..."
 * is another command altogether: the stats client, tools/stats.c.
 * Each module works out its own derived settings from the conf the options
 * filled (fs/options.h): nothing here decides how the cache or the client
 * behave.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fs/fs.h"
#include "fs/keeper.h"
#include "fs/session.h"
#include "sagemaker/sagemaker.h"
#include "s3/s3.h"
#include "util/util.h"

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void die(const char *fmt, ...)
{
	va_list ap;

	fputs("s3pipe: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static void check_mountpoint(const char *path)
{
	struct stat sb;
	char msg[128];

	if (stat(path, &sb) != 0)
		die("mountpoint '%s' is not usable: %s", path,
		    util_strerror(errno, msg, sizeof(msg)));
	if (!S_ISDIR(sb.st_mode))
		die("mountpoint '%s' is not a directory", path);
	if (access(path, W_OK | X_OK) != 0 && getuid() != 0)
		die("mountpoint '%s' is not writable by you: %s", path,
		    util_strerror(errno, msg, sizeof(msg)));
}

/* Forks; the parent returns only through exit() with the child's verdict.
 * The child gets the write end of the readiness pipe. */
static int detach_with_handshake(void)
{
	int fds[2];
	pid_t pid;
	char byte = 0;
	int status = 0;

	if (pipe(fds) != 0) {
		char msg[128];

		die("cannot create a pipe: %s",
		    util_strerror(errno, msg, sizeof(msg)));
	}
	pid = fork();
	if (pid < 0)
		die("cannot fork the daemon");
	if (pid > 0) {
		close(fds[1]);
		if (read(fds[0], &byte, 1) == 1 && byte == 'R')
			exit(0);
		/* the child failed and said why on stderr */
		if (waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
		    WEXITSTATUS(status) != 0)
			exit(WEXITSTATUS(status));
		exit(1);
	}
	close(fds[0]);
	setsid();
	return fds[1];
}

/* With --cache-dir: the disk tier over the S3 client, which it then owns
 * (destroying the tier destroys the client). */
static struct store *disk_tier(struct fs_options *o, struct store *s3)
{
	struct store *disk;
	char err[1024];

	if (!o->disk.dir)
		return s3;
	o->disk.block_size = o->cache.block_size;
	disk = disk_store_create(&o->disk, s3, err, sizeof(err));
	if (!disk)
		die("%s", err);
	return disk;
}

/* The S3 client (under the disk tier, with --cache-dir), the cache over
 * it and the channels, each started (its first listing page, its
 * manifest, ...) and its first window's memory faulted in. */
static void build_stack(struct fs_options *o, struct fs_state *st,
			struct keeper_shared *shared, bool replacement)
{
	struct store *store = s3_client_create(&o->s3);
	char msg[128];

	s3_creds_clear(&o->s3.creds); /* the client has its own copy */
	if (!store)
		die("cannot start the S3 client for endpoint '%s': %s",
		    o->s3.endpoint ? o->s3.endpoint : "(aws)",
		    util_strerror(errno, msg, sizeof(msg)));
	store = disk_tier(o, store);
	memset(st, 0, sizeof(*st));
	st->opts = o;
	st->shared = shared;
	/* (a keeper from before the resume files has no room for them) */
	st->resume_files = shared->size >= KEEPER_SHARED_BEFORE_RECORDS
			       ? &shared->resume_files
			       : calloc(1, sizeof(*st->resume_files));
	/* made by the keeper before the mount: the mountpoint is not looked
	 * at again (a new worker's own mount waits for it) */
	st->mountpoint_real = strdup(shared->mountpoint);
	st->store = store;
	st->cache = cache_create(&o->cache, store);
	st->nchannels = o->nchannels;
	st->channels = calloc(o->nchannels, sizeof(*st->channels));
	st->uid = o->uid_set ? o->uid : getuid();
	st->gid = o->gid_set ? o->gid : getgid();
	clock_gettime(CLOCK_REALTIME, &st->mount_time);
	pthread_mutex_init(&st->lock, NULL);
	if (!st->cache || !st->channels || !st->resume_files)
		die("out of memory");
	/* listings are saved beside the disk tier's blocks */
	o->channel.listing_dir = o->disk.dir;
	for (unsigned i = 0; i < o->nchannels; i++) {
		struct fs_channel *ch = &st->channels[i];
		char err[1024];

		ch->name = o->channels[i].name;
		ch->visible = 1;
		ch->channel = channel_create(&o->channels[i], &o->host,
					     &o->channel, st->cache);
		if (!ch->channel)
			die("out of memory");
		/* a listing made once is kept for the workers after this one */
		channel_set_handover(ch->channel, shared->catalog_fd[i],
				     shared->order_fd[i]);
		/* (a keeper from before them keeps none) */
		channel_set_records_fd(ch->channel,
				       shared->size >= sizeof(*shared)
					   ? shared->records_fd[i]
					   : -1);
		channel_set_resume(ch->channel, shared->resume[i]);
		if (channel_start(ch->channel, err, sizeof(err)))
			die("%s", err);
		if (channel_tree(ch->channel))
			ch->visible = 0; /* a directory, no epoch files */
		/* the epochs a worker before this one made appear stay */
		if (replacement)
			ch->visible = shared->visible[i];
		else
			shared->visible[i] = ch->visible;
	}
	/* the first epoch streams at full speed from its first byte: the
	 * fresh memory its window takes is faulted in before the mount
	 * appears (not by a replacement: its readers are waiting, and most
	 * are not at an epoch's start) */
	for (unsigned i = 0; i < st->nchannels && !replacement; i++)
		channel_fault_in(st->channels[i].channel);
	st->stats = fs_stats_create(st);
	if (!st->stats)
		die("out of memory");
}

/* One line of what the disk tier did, when there is one. */
static void log_disk_tier(struct fs_state *st)
{
	struct disk_store_stats ds;

	if (!disk_store_get_stats(st->store, &ds))
		return;
	util_info("disk tier %s: %llu hits (%llu MiB), %llu misses, %llu "
		  "blocks written (%llu MiB), %llu not written (queue full), "
		  "%llu write errors, %llu damaged files, %llu evicted; %llu "
		  "MiB on disk of %llu MiB",
		  st->opts->disk.dir, (unsigned long long)ds.hits,
		  (unsigned long long)(ds.hit_bytes >> 20),
		  (unsigned long long)ds.misses, (unsigned long long)ds.writes,
		  (unsigned long long)(ds.write_bytes >> 20),
		  (unsigned long long)ds.write_drops,
		  (unsigned long long)ds.write_errors,
		  (unsigned long long)ds.bad_files,
		  (unsigned long long)ds.evictions,
		  (unsigned long long)(ds.bytes_on_disk >> 20),
		  (unsigned long long)(ds.size_bytes >> 20));
}

/* Closes what readers left open, logs what the mount did, then frees the
 * stack: the store first (its callbacks land in the cache and the
 * channels; the disk tier finishes its writes, then destroys the S3
 * client), then the channels, then the cache. */
static void teardown_stack(struct fs_state *st)
{
	struct cache_stats cs;
	struct store_stats ss;

	fs_close_handles(st);
	fs_stats_destroy(st->stats);
	cache_get_stats(st->cache, &cs);
	store_get_stats(st->store, &ss);
	util_info("unmounted %s: %llu requests, %llu retries, %llu failures, "
		  "%llu MiB received, cache peak %llu MiB, %llu hits, %llu "
		  "misses, %llu seeks",
		  st->opts->mountpoint, (unsigned long long)ss.requests,
		  (unsigned long long)ss.retries,
		  (unsigned long long)ss.failures,
		  (unsigned long long)(ss.bytes_received >> 20),
		  (unsigned long long)(cs.peak_bytes >> 20),
		  (unsigned long long)cs.hits, (unsigned long long)cs.misses,
		  (unsigned long long)cs.seeks);
	log_disk_tier(st);
	store_destroy(st->store);
	for (unsigned i = 0; i < st->nchannels; i++)
		channel_destroy(st->channels[i].channel);
	cache_destroy(st->cache);
	free(st->channels);
	free(st->mountpoint_real);
	if (st->resume_files != &st->shared->resume_files)
		free(st->resume_files);
	pthread_mutex_destroy(&st->lock);
}

/* --write-container-config: what the training code's toolkit reads. */
static void write_container_config(const struct fs_options *o)
{
	char err[1024];

	if (!o->container_config_dir)
		return;
	if (sagemaker_container_config_write(o->container_config_dir,
					     o->channels, o->nchannels, err,
					     sizeof(err)))
		die("%s", err);
}

/* A FUSE session for st, its arguments in fargs. */
static struct fuse_session *new_session(struct fs_options *o,
					struct fs_state *st, const char *prog,
					bool helper, struct fuse_args *fargs)
{
	struct fuse_session *se;

	if (fs_session_args(o, prog, helper, fargs) != 0)
		die("out of memory");
	se = fuse_session_new(fargs, fs_operations(),
			      sizeof(struct fuse_lowlevel_ops), st);
	if (!se)
		die("cannot create the FUSE session (see the message above)");
	return se;
}

/* The first worker's session, mounted on the mountpoint. */
static struct fuse_session *mount_session(struct fs_options *o,
					  struct fs_state *st, const char *prog,
					  bool helper, struct fuse_args *fargs)
{
	struct fuse_session *se = new_session(o, st, prog, helper, fargs);

	if (fuse_session_mount(se, o->mountpoint) != 0)
		die("cannot mount on '%s' (is /dev/fuse available, and are "
		    "you root or is fusermount3 installed?)",
		    o->mountpoint);
	if (keeper_session_io(se, fuse_session_fd(se), st->shared, false) !=
	    0) {
		fuse_session_unmount(se);
		die("out of memory");
	}
	if (fuse_set_signal_handlers(se) != 0) {
		fuse_session_unmount(se);
		die("cannot install signal handlers");
	}
	return se;
}

/* A session over the keeper's descriptor, for a worker that replaces
 * another: no mount, the INIT played again. */
static struct fuse_session *adopt_session(struct fs_options *o,
					  struct fs_state *st, const char *prog,
					  bool helper, struct fuse_args *fargs,
					  int fuse_fd)
{
	struct fuse_session *se = new_session(o, st, prog, helper, fargs);

	if (keeper_session_io(se, fuse_fd, st->shared, true) != 0)
		die("out of memory");
	if (fuse_set_signal_handlers(se) != 0)
		die("cannot install signal handlers");
	return se;
}

/* The daemon works from "/": a relative --pid-file is made absolute first,
 * so that it is removed from where it was written. */
static void absolute_pid_file(struct fs_options *o)
{
	char cwd[4096];
	char *abs = NULL;

	if (!o->pid_file || o->pid_file[0] == '/')
		return;
	if (!getcwd(cwd, sizeof(cwd)) ||
	    asprintf(&abs, "%s/%s", cwd, o->pid_file) < 0)
		die("cannot work out where the pid file '%s' goes",
		    o->pid_file);
	free(o->pid_file);
	o->pid_file = abs;
}

/* Serves until unmounted, or told to stop (the keeper unmounts);
 * returns the loop's result. */
static int serve(struct fuse_session *se, unsigned max_threads)
{
	struct fuse_loop_config *loop = fuse_loop_cfg_create();
	int rc;

	if (!loop)
		die("out of memory");
	fuse_loop_cfg_set_max_threads(loop, max_threads);
	fuse_loop_cfg_set_clone_fd(loop, 0);
	rc = fuse_session_loop_mt(se, loop);
	fuse_loop_cfg_destroy(loop);
	fuse_remove_signal_handlers(se);
	fuse_session_destroy(se);
	return rc;
}

/* Credentials, region and CA bundle, checked before anything starts. */
static void resolve_client_conf(struct fs_options *o)
{
	char err[512];
	int rc = s3_client_conf_resolve(&o->s3, err, sizeof(err));

	if (rc == ENOENT)
		die("%s%sor pass --no-sign-request", err, err[0] ? ", " : "");
	if (rc)
		die("%s", err);
}

/*
 * A worker: builds the stack, then either mounts and hands the descriptor
 * to the keeper (the first, fuse_fd < 0), or takes the keeper's
 * descriptor once told to (a replacement), has the kernel resend what
 * the dead worker had taken, and serves.  Returns the exit status.
 */
static int worker_main(struct fs_options *o, const char *prog, bool helper,
		       int ctl, struct keeper_shared *shared, int fuse_fd)
{
	struct fuse_args fargs = FUSE_ARGS_INIT(0, NULL);
	struct fuse_session *se;
	struct fs_state st;
	char err[512];
	int fd = -1;
	int rc;

	if (fuse_fd >= 0) {
		/* a replacement starts its stack once the worker before it is
		 * gone: the epochs that one made appear, and the disk tier it
		 * held, are then this one's */
		if (keeper_send(ctl, KEEPER_READY, -1) != 0 ||
		    keeper_recv(ctl, &fd) != KEEPER_GO)
			return 0; /* the keeper stopped wanting this one */
	}
	build_stack(o, &st, shared, fuse_fd >= 0);
	if (fuse_fd < 0) {
		write_container_config(o);
		se = mount_session(o, &st, prog, helper, &fargs);
		if (keeper_send(ctl, KEEPER_MOUNTED, fuse_session_fd(se)) != 0)
			die("cannot reach the keeper");
	} else {
		se = adopt_session(o, &st, prog, helper, &fargs, fuse_fd);
		rc = keeper_resend(fuse_fd);
		if (rc)
			util_warn("this kernel cannot resend what the last "
				  "worker had taken (FUSE_NOTIFY_RESEND, Linux "
				  "6.9: %s): %u requests fail with EIO",
				  util_strerror(rc, err, sizeof(err)),
				  keeper_fail_inflight(fuse_fd, shared));
		else
			keeper_inflight_clear(shared);
		util_info("worker %ld serves %s", (long)getpid(),
			  shared->mountpoint);
	}
	if (!o->foreground)
		util_daemon_quiet();
	rc = fs_stats_log_start(st.stats, o->stats_interval);
	if (rc)
		util_warn("cannot start the --stats-interval logger: %s",
			  util_strerror(rc, err, sizeof(err)));
	rc = serve(se, o->max_threads);
	fs_stats_log_stop(st.stats);
	fuse_opt_free_args(&fargs);
	teardown_stack(&st);
	fs_options_free(o);
	return rc < 0 ? 1 : 0;
}

int fs_main(int argc, char **argv)
{
	struct fs_options opts;
	struct keeper_shared *shared = NULL;
	char err[512];
	const char *prog = basename(argv[0]);
	bool helper = strcmp(prog, "mount.s3pipe") == 0;
	int ready_fd = -1, fuse_fd, shared_fd, ctl = -1;
	int rc;

	/* A fixed mmap threshold: large buffers go back to the system when
	 * freed, so RSS tracks the cache budget ... */
	mallopt(M_MMAP_THRESHOLD, 1024 * 1024);
	/* ... and an arena's free top goes back past a megabyte.  (At 32 MiB,
	 * once kept for small objects' buffers that the slabs hold now, a
	 * worker kept up to 30 MiB of a listing's freed heap resident after a
	 * million keys, and took that much longer to die.) */
	mallopt(M_TRIM_THRESHOLD, 1024 * 1024);
	mallopt(M_ARENA_MAX, 2);
	signal(SIGPIPE, SIG_IGN);

	fs_options_init(&opts);
	if (fs_options_parse(argc, argv, helper, &opts, err, sizeof(err)))
		die("%s", err);
	if (opts.help || opts.version) {
		if (opts.help)
			fs_options_usage(stdout, prog);
		else
			printf("s3pipe %s\n", PACKAGE_VERSION);
		return 0;
	}
	if (opts.check_options) {
		fs_options_free(&opts);
		return 0; /* the line is good; nothing else is looked at */
	}
	if (opts.debug)
		util_log_set_level(UTIL_LOG_DEBUG);
	if (keeper_worker_env(&fuse_fd, &shared_fd, &ctl)) {
		/* a worker the keeper started: the checks were made */
		shared = fuse_fd >= 0 ? keeper_shared_map(shared_fd) : NULL;
		if (!shared)
			die("%s is not the keeper's (or of another version)",
			    KEEPER_ENV);
		keeper_worker_cloexec(fuse_fd, shared_fd, ctl, shared, true);
		if (!opts.foreground)
			util_log_use_syslog();
		resolve_client_conf(&opts);
		return worker_main(&opts, prog, helper, ctl, shared, fuse_fd);
	}
	check_mountpoint(opts.mountpoint);
	absolute_pid_file(&opts);
	resolve_client_conf(&opts);
	if (opts.fake)
		return 0; /* mount -f: everything checked, nothing mounted */

	if (!opts.foreground)
		ready_fd = detach_with_handshake();
	rc = keeper_main(&opts, argv, ready_fd, &ctl, &shared);
	if (rc >= 0) {
		fs_options_free(&opts);
		return rc;
	}
	if (ready_fd >= 0)
		close(ready_fd); /* the keeper's to write */
	return worker_main(&opts, prog, helper, ctl, shared, -1);
}
