/*
 * daemons: the s3pipe processes behind the volumes.
 *
 * s3pipe is run with util_spawn() (posix_spawn, safe from a threaded
 * process): stdin and stdout on /dev/null, stderr into a pipe, every other
 * descriptor of the plugin closed, the signal mask empty and every signal
 * at its default.  Without -f, s3pipe's first process exits 0 only once
 * the mount is ready (non-zero with one line on stderr, and no mount,
 * otherwise), and the daemon it forked lets go of stderr at that moment:
 * so the plugin reads the pipe to its end, with a deadline, then reaps
 * the first process.  The daemon is not the plugin's child; it is known
 * by its pid file (--pid-file, written once mounted, removed when it
 * ends) and checked by its command line (util_read_file()), which ends
 * with the mountpoint: a pid reused by another process, or a zombie, does
 * not count as the daemon.
 *
 * Whether a path is mounted comes from /proc/self/mountinfo (fstype
 * "fuse.s3pipe" for s3pipe's mounts).  Stopping unmounts (lazily when the
 * mount is busy; with fusermount3 when the plugin may not umount2), waits
 * for the daemon, and only then sends SIGTERM, and at last SIGKILL, to
 * whatever still serves the mountpoint, each step logged.
 */
#include "config.h"

#include "contrib/docker/plugin.h"
#include "util/spawn.h"
#include "util/util.h"

#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define STDERR_KEEP	 4096 /* bytes of a child's stderr kept */
#define EXIT_WAIT_MS	 10000
#define TERM_WAIT_MS	 5000
#define KILL_WAIT_MS	 2000
#define CMDLINE_MAX	 65536
#define PID_FILE_MAX	 32
#define MAX_STRAYS	 16
#define MOUNTINFO_FIELDS 64

/* ---- /proc ---- */

/* Decodes mountinfo's octal escapes (\040 for ' ', ...) in place. */
static void unescape(char *s)
{
	char *d = s;

	while (*s) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' &&
		    s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*d++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 +
				      (s[3] - '0'));
			s += 4;
		} else {
			*d++ = *s++;
		}
	}
	*d = '\0';
}

/* Splits line in place at spaces and newlines into at most max fields;
 * their number. */
static size_t split(char *line, char **fields, size_t max)
{
	size_t n = 0;
	char *p = line;

	while (*p && n < max) {
		while (*p == ' ' || *p == '\n')
			*p++ = '\0';
		if (!*p)
			break;
		fields[n++] = p;
		while (*p && *p != ' ' && *p != '\n')
			p++;
	}
	return n;
}

enum plugin_mount_kind plugin_mount_kind(const char *path)
{
	enum plugin_mount_kind kind = PLUGIN_NOT_MOUNTED;
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char *line = NULL;
	size_t cap = 0;

	if (!f)
		return kind;
	while (getline(&line, &cap, f) > 0) {
		/* ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [TAGS...] -
		 * FSTYPE SOURCE SUPER */
		char *fields[MOUNTINFO_FIELDS];
		size_t n = split(line, fields, MOUNTINFO_FIELDS);
		char *mp = n > 4 ? fields[4] : NULL;
		char *fstype = NULL;

		for (size_t i = 6; i + 1 < n; i++) {
			if (strcmp(fields[i], "-") == 0) {
				fstype = fields[i + 1];
				break;
			}
		}
		if (!mp || !fstype)
			continue;
		unescape(mp);
		if (strcmp(mp, path) != 0)
			continue;
		/* later lines are mounted over earlier ones */
		kind = strcmp(fstype, "fuse.s3pipe") == 0
			   ? PLUGIN_MOUNTED_S3PIPE
			   : PLUGIN_MOUNTED_OTHER;
	}
	free(line);
	fclose(f);
	return kind;
}

/* pid's command line (NUL-separated) into *cmd (owned) and *n: 0, or
 * ENOMEM, or another errno (no such process, longer than the plugin
 * ever makes one, ...). */
static int read_cmdline(pid_t pid, char **cmd, size_t *n)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%ld/cmdline", (long)pid);
	return util_read_file(path, CMDLINE_MAX, cmd, n);
}

/* Whether the command line (n bytes) ends with the argument last, and,
 * with pid_file_flag, also has "--pid-file". */
static bool cmdline_serves(const char *cmd, size_t n, const char *last,
			   bool pid_file_flag)
{
	const char *arg = cmd;
	const char *final = NULL;
	bool flag = false;

	while (arg < cmd + n) {
		final = arg;
		if (strcmp(arg, "--pid-file") == 0)
			flag = true;
		arg += strlen(arg) + 1;
	}
	return final && strcmp(final, last) == 0 && (flag || !pid_file_flag);
}

bool plugin_daemon_alive(pid_t pid, const char *mountpoint)
{
	char *cmd;
	size_t n;
	bool alive;
	int rc;

	if (pid <= 0)
		return false;
	rc = read_cmdline(pid, &cmd, &n);
	if (rc == ENOMEM)
		return kill(pid, 0) == 0; /* cannot tell: assume it is */
	alive = !rc && n > 0 && cmdline_serves(cmd, n, mountpoint, false);
	free(cmd);
	return alive;
}

/* Other s3pipe daemons serving mountpoint (by their command lines: the
 * one the plugin gives them), at most max; their number. */
static size_t find_strays(const char *mountpoint, pid_t skip, pid_t *out,
			  size_t max)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	size_t found = 0;

	while (d && found < max && (e = readdir(d)) != NULL) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		char *cmd;
		size_t n;

		if (*end || pid <= 0 || pid == (long)getpid() || pid == skip)
			continue;
		if (read_cmdline((pid_t)pid, &cmd, &n) != 0)
			continue;
		if (n > 0 && cmdline_serves(cmd, n, mountpoint, true))
			out[found++] = (pid_t)pid;
		free(cmd);
	}
	if (d)
		closedir(d);
	return found;
}

pid_t plugin_pid_file_read(const char *pid_file)
{
	char *buf;
	size_t n;
	long pid;
	char *end;

	if (util_read_file(pid_file, PID_FILE_MAX, &buf, &n) != 0)
		return 0;
	pid = strtol(buf, &end, 10);
	if (end == buf || (*end && *end != '\n') || pid <= 0 || pid > 1 << 30)
		pid = 0;
	free(buf);
	return (pid_t)pid;
}

/* ---- running s3pipe ---- */

static pid_t wait_child(pid_t pid, int *status)
{
	pid_t r;

	do
		r = waitpid(pid, status, 0);
	while (r < 0 && errno == EINTR);
	return r;
}

/* Keeps the last STDERR_KEEP bytes of what the child writes. */
struct output {
	char text[STDERR_KEEP + 1];
	size_t len;
};

static void output_add(struct output *o, const char *data, size_t len)
{
	if (len >= STDERR_KEEP) {
		data += len - STDERR_KEEP;
		len = STDERR_KEEP;
	}
	if (o->len + len > STDERR_KEEP) {
		size_t drop = o->len + len - STDERR_KEEP;

		memmove(o->text, o->text + drop, o->len - drop);
		o->len -= drop;
	}
	memcpy(o->text + o->len, data, len);
	o->len += len;
	o->text[o->len] = '\0';
}

/*
 * Reads the child's stderr to its end and reaps it, within timeout_ms;
 * on time-out kills it (SIGKILL), reaps it and returns ETIMEDOUT.
 */
static int collect(pid_t pid, int fd, int timeout_ms, struct output *out,
		   int *status)
{
	uint64_t deadline = util_now_ns() + (uint64_t)timeout_ms * 1000000;
	char buf[1024];
	int rc = 0;

	for (;;) {
		uint64_t now = util_now_ns();
		struct pollfd p = {.fd = fd, .events = POLLIN};
		ssize_t n;
		int ready;

		if (now >= deadline) {
			rc = ETIMEDOUT;
			break;
		}
		ready = poll(&p, 1, (int)((deadline - now) / 1000000 + 1));
		if (ready < 0 && errno != EINTR) {
			rc = errno;
			break;
		}
		if (ready <= 0)
			continue;
		n = read(fd, buf, sizeof(buf));
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			break; /* the end: every writer is gone */
		output_add(out, buf, (size_t)n);
	}
	close(fd);
	if (rc)
		kill(pid, SIGKILL);
	if (wait_child(pid, status) != pid && !rc)
		rc = ECHILD;
	return rc;
}

/* The last non-empty line of out, without "s3pipe: ", cleaned, in err;
 * or fallback when there is none. */
static void last_line(struct output *out, const char *fallback, char *err,
		      size_t errlen)
{
	char *end = out->text + out->len;
	char *start;

	while (end > out->text &&
	       (end[-1] == '\n' || end[-1] == '\r' || end[-1] == ' '))
		end--;
	*end = '\0';
	start = end;
	while (start > out->text && start[-1] != '\n')
		start--;
	if (strncmp(start, "s3pipe: ", 8) == 0)
		start += 8;
	if (!*start)
		start = (char *)fallback;
	util_fail(err, errlen, EINVAL, "%s", start);
	util_clean_line(err);
}

/* What a status says when the child said nothing. */
static void describe_status(int status, const char *what, char *buf, size_t len)
{
	if (WIFEXITED(status))
		snprintf(buf, len, "%s exited with status %d", what,
			 WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, len, "%s was killed by signal %d", what,
			 WTERMSIG(status));
	else
		snprintf(buf, len, "%s failed", what);
}

/*
 * Runs argv to its end within timeout_ms: 0 when it exits 0; EINVAL with
 * its last line (or its status) in err; ETIMEDOUT or another errno with err
 * set.
 */
static int run(char *const argv[], bool search, int timeout_ms,
	       const char *what, char *err, size_t errlen)
{
	struct output *out = calloc(1, sizeof(*out));
	char msg[128];
	char fallback[256];
	pid_t pid;
	int fd = -1;
	int status = 0;
	int rc;

	if (!out)
		return util_fail(err, errlen, ENOMEM, "out of memory");
	rc = util_spawn(&(struct util_spawn){.argv = argv,
					     .search = search,
					     .out = UTIL_SPAWN_NULL,
					     .err = UTIL_SPAWN_PIPE},
			&pid, &fd);
	if (rc) {
		util_fail(err, errlen, rc, "cannot run %s (%s): %s", what,
			  argv[0], util_strerror(rc, msg, sizeof(msg)));
		goto fail;
	}
	rc = collect(pid, fd, timeout_ms, out, &status);
	if (rc == ETIMEDOUT) {
		util_fail(err, errlen, rc, "%s did not finish within %d s",
			  what, timeout_ms / 1000);
		goto fail;
	}
	if (rc) {
		util_fail(err, errlen, rc, "%s: %s", what,
			  util_strerror(rc, msg, sizeof(msg)));
		goto fail;
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		goto fail; /* success */
	describe_status(status, what, fallback, sizeof(fallback));
	last_line(out, fallback, err, errlen);
	rc = EINVAL;
fail:
	free(out);
	return rc;
}

/* argv: s3pipe, the given arguments, then each of the NULL-terminated
 * extra ones */
static int build_argv(struct plugin_argv *argv, const char *s3pipe,
		      const struct plugin_argv *args, const char *const *extra)
{
	int rc = plugin_argv_add(argv, s3pipe);

	for (size_t i = 0; !rc && i < args->n; i++)
		rc = plugin_argv_add(argv, args->v[i]);
	for (size_t i = 0; !rc && extra[i]; i++)
		rc = plugin_argv_add(argv, extra[i]);
	return rc;
}

int plugin_check_options(const char *s3pipe, const struct plugin_argv *args,
			 const char *mountpoint, const char *pid_file,
			 char *err, size_t errlen)
{
	const char *extra[] = {"-o",	 "allow_other",	    "--pid-file",
			       pid_file, "--check-options", mountpoint,
			       NULL};
	struct plugin_argv argv = {0};
	int rc = build_argv(&argv, s3pipe, args, extra);

	if (rc)
		util_fail(err, errlen, rc, "out of memory");
	else
		rc = run(argv.v, false, PLUGIN_CHECK_TIMEOUT * 1000,
			 "s3pipe --check-options", err, errlen);
	plugin_argv_free(&argv);
	return rc;
}

/* ---- stopping ---- */

static bool wait_gone(pid_t pid, const char *mountpoint, int ms)
{
	for (int waited = 0; plugin_daemon_alive(pid, mountpoint);
	     waited += 50) {
		if (waited >= ms)
			return false;
		usleep(50 * 1000);
	}
	return true;
}

/* SIGTERM, then SIGKILL, to a daemon that outlived its mount. */
static void terminate(pid_t pid, const char *mountpoint)
{
	if (!plugin_daemon_alive(pid, mountpoint))
		return;
	util_warn("s3pipe (pid %ld) for %s is still running: SIGTERM",
		  (long)pid, mountpoint);
	kill(pid, SIGTERM);
	if (wait_gone(pid, mountpoint, TERM_WAIT_MS))
		return;
	util_warn("s3pipe (pid %ld) for %s ignored SIGTERM: SIGKILL", (long)pid,
		  mountpoint);
	kill(pid, SIGKILL);
	wait_gone(pid, mountpoint, KILL_WAIT_MS);
}

/* umount2, lazily when busy; fusermount3 -u -z when not allowed */
static int unmount(const char *mountpoint, char *err, size_t errlen)
{
	char *fusermount[] = {"fusermount3", "-u", "-z", (char *)mountpoint,
			      NULL};
	char msg[128];
	int rc;

	if (umount2(mountpoint, UMOUNT_NOFOLLOW) == 0)
		return 0;
	rc = errno;
	if (rc == EINVAL || rc == ENOENT)
		return 0; /* not mounted (any more) */
	if (rc == EBUSY) {
		util_info("%s is busy: detaching it lazily", mountpoint);
		if (umount2(mountpoint, MNT_DETACH | UMOUNT_NOFOLLOW) == 0)
			return 0;
		rc = errno;
	} else if (rc == EPERM) {
		return run(fusermount, true, TERM_WAIT_MS, "fusermount3 -u",
			   err, errlen);
	}
	return util_fail(err, errlen, rc, "cannot unmount %s: %s", mountpoint,
			 util_strerror(rc, msg, sizeof(msg)));
}

int plugin_daemon_stop(const char *mountpoint, pid_t pid, const char *pid_file,
		       char *err, size_t errlen)
{
	pid_t strays[MAX_STRAYS];
	size_t n;
	int rc = 0;

	if (plugin_mount_kind(mountpoint) == PLUGIN_MOUNTED_S3PIPE)
		rc = unmount(mountpoint, err, errlen);
	if (pid > 0 && !wait_gone(pid, mountpoint, rc ? 0 : EXIT_WAIT_MS))
		terminate(pid, mountpoint);
	n = find_strays(mountpoint, pid, strays, MAX_STRAYS);
	for (size_t i = 0; i < n; i++)
		if (!wait_gone(strays[i], mountpoint, EXIT_WAIT_MS))
			terminate(strays[i], mountpoint);
	/* a daemon killed under its mount leaves it behind, dead */
	if (plugin_mount_kind(mountpoint) == PLUGIN_MOUNTED_S3PIPE &&
	    umount2(mountpoint, MNT_DETACH | UMOUNT_NOFOLLOW) != 0 && !rc) {
		char msg[128];

		rc = util_fail(err, errlen, errno, "cannot unmount %s: %s",
			       mountpoint,
			       util_strerror(errno, msg, sizeof(msg)));
	}
	if (plugin_mount_kind(mountpoint) != PLUGIN_MOUNTED_S3PIPE)
		rc = 0;
	if (pid_file)
		unlink(pid_file);
	return rc;
}

/* ---- starting ---- */

int plugin_daemon_start(const char *s3pipe, const struct plugin_argv *args,
			const char *mountpoint, const char *pid_file,
			pid_t *pid, char *err, size_t errlen)
{
	const char *extra[] = {"-o",	 "allow_other", "--pid-file",
			       pid_file, mountpoint,	NULL};
	struct plugin_argv argv = {0};
	char ignored[PLUGIN_ERR_MAX];
	int rc;

	*pid = 0;
	unlink(pid_file); /* one a killed daemon left */
	rc = build_argv(&argv, s3pipe, args, extra);
	if (rc) {
		util_fail(err, errlen, rc, "out of memory");
		goto fail;
	}
	rc = run(argv.v, false, PLUGIN_MOUNT_TIMEOUT * 1000, "s3pipe", err,
		 errlen);
	if (!rc) {
		*pid = plugin_pid_file_read(pid_file);
		if (!plugin_daemon_alive(*pid, mountpoint) ||
		    plugin_mount_kind(mountpoint) != PLUGIN_MOUNTED_S3PIPE)
			rc = util_fail(err, errlen, EIO,
				       "s3pipe reported %s mounted, but its "
				       "daemon or its mount is not there",
				       mountpoint);
	}
fail:
	if (rc) {
		/* s3pipe leaves nothing behind on a failure it reports; on a
		 * time-out or the case above, the plugin cleans up */
		plugin_daemon_stop(mountpoint, *pid, pid_file, ignored,
				   sizeof(ignored));
		*pid = 0;
	}
	plugin_argv_free(&argv);
	return rc;
}
