/*
 * s3pipe-docker-plugin: arguments, the listening socket, signals.
 *
 *   s3pipe-docker-plugin [--socket PATH] [--state-dir DIR] [--s3pipe PATH]
 *
 * Start-up order: the socket first (so that a second plugin on it stops
 * there, before touching any mount), then the state directory, locked,
 * loaded and every recorded mount checked (plugin_volumes_create()), and
 * only then requests are answered, so that none sees a half-restored
 * table: Docker's wait in the socket's backlog.  The socket is systemd's
 * when LISTEN_PID names this process and LISTEN_FDS is 1 (fd 3, no
 * libsystemd needed); otherwise the plugin binds --socket itself (mode
 * 0660, its folder created), refusing to when another plugin answers
 * there, and removes it when it stops.
 *
 * SIGTERM and SIGINT stop serving (requests under way finish first) and
 * exit 0; the s3pipe daemons of mounted volumes keep running, since
 * containers use them, and a restarted plugin takes them over from the
 * state directory.  The signals are blocked in every thread and taken
 * with sigwait() here; s3pipe is started with them unblocked.
 */
#include "config.h"

#include "contrib/docker/plugin.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define DEFAULT_SOCKET	  "/run/docker/plugins/s3pipe.sock"
#define DEFAULT_STATE_DIR "/var/lib/s3pipe-docker"
#define SD_LISTEN_FD	  3

#ifndef S3PIPE_BINDIR
#define S3PIPE_BINDIR "/usr/local/bin"
#endif

struct args {
	const char *socket;
	const char *state_dir;
	const char *s3pipe; /* NULL: found by find_s3pipe() */
};

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: " PLUGIN_PROG " [--socket PATH] [--state-dir DIR] "
		"[--s3pipe PATH]\n"
		"\n"
		"A Docker volume plugin whose volumes are s3pipe mounts:\n"
		"  docker volume create -d s3pipe -o train=s3://BUCKET/PREFIX/ "
		"\\\n"
		"      -o endpoint_url=URL NAME\n"
		"  docker run -v NAME:/opt/ml/input/data IMAGE ...\n"
		"\n"
		"      --socket PATH     listen on PATH; Docker finds the "
		"driver NAME\n"
		"                        at /run/docker/plugins/NAME.sock "
		"(default\n"
		"                        " DEFAULT_SOCKET "; a socket from "
		"systemd\n"
		"                        is used instead when there is one)\n"
		"      --state-dir DIR   volumes, mountpoints and pid files "
		"(default\n"
		"                        " DEFAULT_STATE_DIR ")\n"
		"      --s3pipe PATH     the s3pipe binary (default: next to "
		"this one,\n"
		"                        else " S3PIPE_BINDIR "/s3pipe)\n"
		"  -h, --help            print this help and exit\n"
		"  -V, --version         print the version and exit\n"
		"\n"
		"See s3pipe-docker-plugin(8).\n");
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void die(const char *fmt, ...)
{
	char line[PLUGIN_ERR_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	util_error("%s", line);
	exit(1);
}

static void parse_args(int argc, char **argv, struct args *a)
{
	static const struct option longopts[] = {
	    {"socket", required_argument, NULL, 's'},
	    {"state-dir", required_argument, NULL, 'd'},
	    {"s3pipe", required_argument, NULL, 'p'},
	    {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, 'V'},
	    {NULL, 0, NULL, 0},
	};
	int c;

	a->socket = DEFAULT_SOCKET;
	a->state_dir = DEFAULT_STATE_DIR;
	a->s3pipe = NULL;
	while ((c = getopt_long(argc, argv, "hV", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			a->socket = optarg;
			break;
		case 'd':
			a->state_dir = optarg;
			break;
		case 'p':
			a->s3pipe = optarg;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case 'V':
			printf(PLUGIN_PROG " %s\n", PACKAGE_VERSION);
			exit(0);
		default:
			usage(stderr);
			exit(2);
		}
	}
	if (optind < argc)
		die("unexpected argument '%s' (see --help)", argv[optind]);
}

/* --s3pipe, else s3pipe next to this binary, else in S3PIPE_BINDIR;
 * made absolute (daemons are recognised by their command lines). */
static char *find_s3pipe(const char *given)
{
	char self[PATH_MAX];
	char candidate[PATH_MAX + 16];
	char real[PATH_MAX];
	ssize_t n;

	if (given) {
		snprintf(candidate, sizeof(candidate), "%s", given);
	} else {
		n = readlink("/proc/self/exe", self, sizeof(self) - 1);
		candidate[0] = '\0';
		if (n > 0) {
			self[n] = '\0';
			snprintf(candidate, sizeof(candidate), "%s/s3pipe",
				 dirname(self));
		}
		if (!candidate[0] || access(candidate, X_OK) != 0)
			snprintf(candidate, sizeof(candidate), "%s/s3pipe",
				 S3PIPE_BINDIR);
	}
	if (!realpath(candidate, real) || access(real, X_OK) != 0)
		die("s3pipe is not an executable at '%s' (give --s3pipe PATH)",
		    candidate);
	return strdup(real);
}

/* systemd's socket (fd 3), or -1; the variables are removed either way,
 * so that no s3pipe sees them. */
static int systemd_socket(void)
{
	const char *pid = getenv("LISTEN_PID");
	const char *fds = getenv("LISTEN_FDS");
	bool mine =
	    pid && fds && atol(pid) == (long)getpid() && strcmp(fds, "1") == 0;
	struct stat sb;

	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
	if (!mine)
		return -1;
	if (fstat(SD_LISTEN_FD, &sb) != 0 || !S_ISSOCK(sb.st_mode))
		die("LISTEN_FDS=1, but fd %d is not a socket", SD_LISTEN_FD);
	fcntl(SD_LISTEN_FD, F_SETFD, FD_CLOEXEC);
	return SD_LISTEN_FD;
}

static void make_parent(const char *path)
{
	char *copy = strdup(path);
	char *dir = copy ? dirname(copy) : NULL;
	char msg[128];

	for (char *p = dir ? dir + 1 : NULL; p && *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		mkdir(dir, 0755);
		*p = '/';
	}
	if (dir && mkdir(dir, 0755) != 0 && errno != EEXIST)
		die("cannot create %s: %s", dir,
		    util_strerror(errno, msg, sizeof(msg)));
	free(copy);
}

/* Binds and listens on path; a stale socket file there is replaced, a
 * live one (another plugin answers) is not. */
static int own_socket(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct stat sb;
	char msg[128];
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path))
		die("the socket path '%s' is longer than %zu bytes", path,
		    sizeof(sa.sun_path) - 1);
	memcpy(sa.sun_path, path, strlen(path) + 1);
	make_parent(path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		die("cannot create a socket: %s",
		    util_strerror(errno, msg, sizeof(msg)));
	if (lstat(path, &sb) == 0) {
		if (!S_ISSOCK(sb.st_mode))
			die("%s exists and is not a socket", path);
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
			die("another plugin is listening on %s", path);
		close(fd);
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0 || unlink(path) != 0)
			die("cannot replace the stale socket %s: %s", path,
			    util_strerror(errno, msg, sizeof(msg)));
	}
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0)
		die("cannot bind %s: %s", path,
		    util_strerror(errno, msg, sizeof(msg)));
	if (chmod(path, 0660) != 0 || listen(fd, SOMAXCONN) != 0)
		die("cannot listen on %s: %s", path,
		    util_strerror(errno, msg, sizeof(msg)));
	return fd;
}

/* Waits for SIGTERM or SIGINT (blocked in every thread). */
static void wait_for_stop(const sigset_t *set)
{
	for (;;) {
		int sig = 0;

		if (sigwait(set, &sig) != 0)
			continue;
		if (sig == SIGTERM || sig == SIGINT) {
			util_info("%s: stopping (mounted volumes stay "
				  "mounted)",
				  sig == SIGTERM ? "SIGTERM" : "SIGINT");
			return;
		}
		util_warn("signal %d ignored", sig);
	}
}

int main(int argc, char **argv)
{
	struct plugin_volumes *t = NULL;
	struct plugin_http *h = NULL;
	struct args a;
	char err[PLUGIN_ERR_MAX];
	char *s3pipe = NULL;
	sigset_t set;
	bool activated;
	int fd;

	util_log_set_prog(PLUGIN_PROG);
	signal(SIGPIPE, SIG_IGN);
	parse_args(argc, argv, &a);
	/* before any thread: they all inherit the mask */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);

	s3pipe = find_s3pipe(a.s3pipe);
	fd = systemd_socket();
	activated = fd >= 0;
	if (!activated)
		fd = own_socket(a.socket);
	/* requests wait in the socket's backlog meanwhile */
	t = plugin_volumes_create(a.state_dir, s3pipe, err, sizeof(err));
	if (!t) {
		if (!activated)
			unlink(a.socket);
		die("%s", err);
	}
	h = plugin_http_start(fd, t, err, sizeof(err));
	if (!h)
		die("%s", err);
	util_info("serving on %s (%s), state in %s, s3pipe %s",
		  activated ? "the socket from systemd" : a.socket,
		  PACKAGE_VERSION, a.state_dir, s3pipe);

	wait_for_stop(&set);
	plugin_http_stop(h);
	if (!activated)
		unlink(a.socket);
	plugin_volumes_destroy(t);
	free(s3pipe);
	util_info("stopped");
	return 0;
}
