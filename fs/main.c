/*
 * s3pipe / mount.s3pipe: start-up, detach, serve, shut down.
 *
 * Order matters for "no mount left behind on error":
 *   1. parse options, check the mountpoint and credentials (no threads yet);
 *   2. unless in the foreground, fork: the parent waits on a pipe and exits
 *      with the child's verdict, so the shell sees success only once the
 *      mount is ready;
 *   3. the child starts the S3 engine and lists the first page of every
 *      channel (this is the bucket check), then mounts;
 *   4. only then it tells the parent, silences stdio and serves.
 * Every error before step 4 prints one line "s3pipe: ..." and exits 1.
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
#include "s3/s3.h"
#include "util/util.h"

/* the most block memory faulted in per channel before the mount appears:
 * the default prefetch window (half the 256M cache) and two 8 MiB blocks */
#define WARM_MAX (144u << 20)

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

static void go_quiet(int ready_fd)
{
	int null = open("/dev/null", O_RDWR);

	if (ready_fd >= 0) {
		if (write(ready_fd, "R", 1) != 1) {
			/* the parent is gone; keep serving */
		}
		close(ready_fd);
	}
	if (null >= 0) {
		dup2(null, STDIN_FILENO);
		dup2(null, STDOUT_FILENO);
		dup2(null, STDERR_FILENO);
		if (null > STDERR_FILENO)
			close(null);
	}
	util_log_use_syslog();
	if (chdir("/") != 0) {
		/* harmless */
	}
}

static void add_arg(struct fuse_args *args, const char *arg)
{
	if (fuse_opt_add_arg(args, arg) != 0)
		die("out of memory");
}

int main(int argc, char **argv)
{
	struct fs_options opts;
	struct s3_creds creds = {0};
	struct s3_client_conf s3conf;
	struct s3_client *s3 = NULL;
	struct cache_conf cconf;
	struct cache *cache = NULL;
	struct fs_state st;
	struct fuse_args fargs = FUSE_ARGS_INIT(0, NULL);
	struct fuse_session *se = NULL;
	struct fuse_loop_config *loop = NULL;
	char err[512];
	char region[64];
	char fsopts[1024];
	const char *prog = basename(argv[0]);
	const char *fsname;
	bool helper = strcmp(prog, "mount.s3pipe") == 0;
	int ready_fd = -1;
	int rc;

	/* A fixed mmap threshold: large buffers go back to the system when
	 * freed, so RSS tracks the cache budget ... */
	mallopt(M_MMAP_THRESHOLD, 1024 * 1024);
	/* ... and freed small blocks stay mapped for reuse instead of being
	 * trimmed and faulted in again for the next small object. */
	mallopt(M_TRIM_THRESHOLD, 32 * 1024 * 1024);
	mallopt(M_ARENA_MAX, 2);
	signal(SIGPIPE, SIG_IGN);

	fs_options_init(&opts);
	if (fs_options_parse(argc, argv, helper, &opts, err, sizeof(err)))
		die("%s", err);
	if (opts.help) {
		fs_options_usage(stdout, prog);
		return 0;
	}
	if (opts.version) {
		printf("s3pipe %s\n", PACKAGE_VERSION);
		return 0;
	}
	if (opts.debug)
		util_log_set_level(UTIL_LOG_DEBUG);
	check_mountpoint(opts.mountpoint);

	if (!opts.no_sign_request) {
		rc = s3_creds_resolve(opts.profile, &creds, err, sizeof(err));
		if (rc == ENOENT)
			die("%s%sor pass --no-sign-request", err,
			    err[0] ? ", " : "");
		if (rc)
			die("%s", err);
	}
	s3_region_resolve(opts.region, opts.profile, region, sizeof(region));
	if (!s3_region_valid(region))
		die("invalid region '%s': use lowercase letters, digits and "
		    "'-' "
		    "(e.g. us-east-1)",
		    region);
	if (opts.fake)
		return 0; /* mount -f: everything checked, nothing mounted */

	if (!opts.foreground)
		ready_fd = detach_with_handshake();

	memset(&s3conf, 0, sizeof(s3conf));
	s3conf.endpoint = opts.endpoint_url;
	s3conf.region = region;
	s3conf.force_path_style = opts.force_path_style;
	s3conf.no_sign = opts.no_sign_request;
	s3conf.tls_verify = !opts.no_verify_ssl;
	s3conf.ca_bundle =
	    opts.ca_bundle ? opts.ca_bundle : getenv("AWS_CA_BUNDLE");
	if (s3conf.ca_bundle && access(s3conf.ca_bundle, R_OK) != 0) {
		if (opts.ca_bundle)
			die("cannot read the CA bundle '%s'", opts.ca_bundle);
		s3conf.ca_bundle = NULL; /* a stale environment variable */
	}
	s3conf.creds = opts.no_sign_request ? NULL : &creds;
	s3conf.max_connections = opts.max_connections;
	s3conf.max_retries = opts.max_retries;
	s3conf.retry_base_ms = 100;
	s3conf.retry_max_ms = 5000;
	s3conf.stall_seconds = opts.stall_timeout;
	s3conf.connect_timeout_seconds = 10;
	s3 = s3_client_create(&s3conf);
	s3_creds_clear(&creds);
	if (!s3) {
		char msg[128];

		die("cannot start the S3 client for endpoint '%s': %s",
		    opts.endpoint_url ? opts.endpoint_url : "(aws)",
		    util_strerror(errno, msg, sizeof(msg)));
	}

	memset(&cconf, 0, sizeof(cconf));
	cconf.budget_bytes = opts.cache_size;
	cconf.block_size = opts.part_size;
	cconf.list_page_keys = 1000;
	cconf.first_page_keys = 100;
	/* enough fetched small objects to keep every connection busy */
	cconf.max_ahead_objects = 4 * opts.max_connections;
	cache = cache_create(&cconf, s3);
	if (!cache)
		die("out of memory");

	memset(&st, 0, sizeof(st));
	st.opts = &opts;
	st.cache = cache;
	st.nchannels = opts.nchannels;
	st.channels = calloc(opts.nchannels, sizeof(*st.channels));
	st.uid = opts.uid_set ? opts.uid : getuid();
	st.gid = opts.gid_set ? opts.gid : getgid();
	clock_gettime(CLOCK_REALTIME, &st.mount_time);
	pthread_mutex_init(&st.lock, NULL);
	if (!st.channels)
		die("out of memory");
	for (unsigned i = 0; i < opts.nchannels; i++) {
		struct fs_channel_spec *spec = &opts.channels[i];
		struct s3_error serr;

		st.channels[i].name = spec->name;
		st.channels[i].visible = 1;
		st.channels[i].stream =
		    cache_stream_create(cache, spec->bucket, spec->prefix);
		if (!st.channels[i].stream)
			die("out of memory");
		if (cache_stream_start(st.channels[i].stream, &serr)) {
			char desc[768];

			s3_error_describe(&serr, spec->bucket, desc,
					  sizeof(desc));
			die("channel '%s' (%s): %s", spec->name, spec->uri,
			    desc);
		}
	}

	/* the first epoch streams at full speed from its first byte: the
	 * fresh memory its window takes is faulted in before the mount
	 * appears (WARM_MAX at most, so a large cache does not hold up the
	 * mount) */
	for (unsigned i = 0; i < st.nchannels; i++)
		cache_stream_warm(st.channels[i].stream, WARM_MAX);

	/* mount(8) shows the source as the file system's name; a comma would
	 * end the option, so such a URI is not used */
	fsname = helper && !strpbrk(opts.channels[0].uri, ",\\") &&
			 strlen(opts.channels[0].uri) < 512
		     ? opts.channels[0].uri
		     : "s3pipe";
	snprintf(fsopts, sizeof(fsopts),
		 "-oro,fsname=%s,subtype=s3pipe,max_read=1048576%s", fsname,
		 opts.allow_other ? ",allow_other" : "");
	add_arg(&fargs, prog);
	add_arg(&fargs, fsopts);
	se = fuse_session_new(&fargs, fs_operations(),
			      sizeof(struct fuse_lowlevel_ops), &st);
	if (!se)
		die("cannot create the FUSE session (see the message above)");
	if (fuse_session_mount(se, opts.mountpoint) != 0)
		die("cannot mount on '%s' (is /dev/fuse available, and are "
		    "you root or is fusermount3 installed?)",
		    opts.mountpoint);
	if (fuse_set_signal_handlers(se) != 0) {
		fuse_session_unmount(se);
		die("cannot install signal handlers");
	}
	if (opts.foreground)
		util_info("mounted %u channel(s) on %s", opts.nchannels,
			  opts.mountpoint);
	else
		go_quiet(ready_fd);

	loop = fuse_loop_cfg_create();
	fuse_loop_cfg_set_max_threads(loop, 16);
	fuse_loop_cfg_set_clone_fd(loop, 0);
	rc = fuse_session_loop_mt(se, loop);
	fuse_loop_cfg_destroy(loop);

	fuse_remove_signal_handlers(se);
	fuse_session_unmount(se);
	fuse_session_destroy(se);
	fuse_opt_free_args(&fargs);

	{
		struct cache_stats cs;
		struct s3_stats ss;

		cache_get_stats(cache, &cs);
		s3_client_get_stats(s3, &ss);
		util_info("unmounted %s: %llu requests, %llu retries, "
			  "%llu failures, %llu MiB received, cache peak %llu "
			  "MiB, %llu hits, %llu misses, %llu seeks",
			  opts.mountpoint, (unsigned long long)ss.requests,
			  (unsigned long long)ss.retries,
			  (unsigned long long)ss.failures,
			  (unsigned long long)(ss.bytes_received >> 20),
			  (unsigned long long)(cs.peak_bytes >> 20),
			  (unsigned long long)cs.hits,
			  (unsigned long long)cs.misses,
			  (unsigned long long)cs.seeks);
	}
	s3_client_destroy(s3);
	for (unsigned i = 0; i < st.nchannels; i++)
		cache_stream_destroy(st.channels[i].stream);
	cache_destroy(cache);
	free(st.channels);
	pthread_mutex_destroy(&st.lock);
	fs_options_free(&opts);
	return rc < 0 ? 1 : 0;
}
