/*
 * creds_process: credentials printed by a program, the profile's
 * credential_process (as the AWS CLI and SDKs run it).
 *
 * The command line runs through /bin/sh -c, in a process group of its own,
 * with stdin on /dev/null, stdout on a pipe, stderr inherited (its
 * prompts and errors reach the user) and no other descriptor open.  Its
 * signal mask is emptied and the signals a daemon may ignore or handle are
 * back to their defaults.  The output is read up to S3_CREDS_BODY_MAX
 * bytes within the timeout; past the timeout the whole group is killed.
 * Only exit status 0 counts, and then stdout must be the JSON document
 * creds_json.c parses (Version 1).
 *
 * The command may carry a secret of its own (a password, a key file), so
 * messages name the profile and never the command.  The output is a
 * secret buffer, wiped after parsing.
 */
#include "config.h"

#include "s3/internal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* Milliseconds left until deadline (monotonic ns), at least 0. */
static int process_ms_left(uint64_t deadline)
{
	uint64_t now = util_now_ns();

	if (now >= deadline)
		return 0;
	return (int)((deadline - now + 999999) / 1000000);
}

/* Starts the command with its stdout on *out_fd.  0 or an errno. */
static int process_spawn(const char *command, pid_t *pid, int *out_fd)
{
	static const int defaults[] = {SIGPIPE, SIGINT,	 SIGTERM,
				       SIGHUP,	SIGQUIT, SIGCHLD,
				       SIGUSR1, SIGUSR2, SIGALRM};
	char *const argv[] = {"sh", "-c", (char *)command, NULL};
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	bool have_fa = false;
	bool have_attr = false;
	sigset_t set;
	int fds[2] = {-1, -1};
	int rc;

	if (pipe2(fds, O_CLOEXEC) != 0)
		return errno;
	rc = posix_spawn_file_actions_init(&fa);
	if (rc)
		goto fail;
	have_fa = true;
	rc = posix_spawnattr_init(&attr);
	if (rc)
		goto fail;
	have_attr = true;
	rc = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	if (!rc)
		rc = posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
#if defined(__GLIBC__) && __GLIBC_PREREQ(2, 34)
	/* everything else too (O_CLOEXEC covers ours, not a library's) */
	if (!rc)
		rc = posix_spawn_file_actions_addclosefrom_np(&fa, 3);
#endif
	if (rc)
		goto fail;
	sigemptyset(&set);
	rc = posix_spawnattr_setsigmask(&attr, &set);
	for (size_t i = 0; i < sizeof(defaults) / sizeof(defaults[0]); i++)
		sigaddset(&set, defaults[i]);
	if (!rc)
		rc = posix_spawnattr_setsigdefault(&attr, &set);
	if (!rc)
		rc = posix_spawnattr_setpgroup(&attr, 0);
	if (!rc)
		rc = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK |
							 POSIX_SPAWN_SETSIGDEF |
							 POSIX_SPAWN_SETPGROUP);
	if (!rc)
		rc = posix_spawn(pid, "/bin/sh", &fa, &attr, argv, environ);
	if (rc)
		goto fail;
	*out_fd = fds[0];
	fds[0] = -1;
fail:
	if (have_fa)
		posix_spawn_file_actions_destroy(&fa);
	if (have_attr)
		posix_spawnattr_destroy(&attr);
	if (fds[0] >= 0)
		close(fds[0]);
	close(fds[1]);
	return rc;
}

/*
 * Reads fd into out until end of file: 0, ETIMEDOUT at deadline, EFBIG
 * past out->max, or another errno.
 */
static int process_read(int fd, struct util_buf *out, uint64_t deadline)
{
	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int ms = process_ms_left(deadline);
		char extra;
		ssize_t n;
		int pr;

		if (ms == 0)
			return ETIMEDOUT;
		pr = poll(&p, 1, ms);
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr < 0)
			return errno;
		if (pr == 0)
			return ETIMEDOUT;
		if (out->len == out->max)
			n = read(fd, &extra, 1);
		else
			n = read(fd, out->data + out->len, out->max - out->len);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0)
			return errno;
		if (n == 0)
			return 0;
		if (out->len == out->max) {
			explicit_bzero(&extra, 1);
			return EFBIG;
		}
		out->len += (size_t)n;
		out->data[out->len] = '\0';
	}
}

/* Waits for pid until deadline: 0 with *status, or ETIMEDOUT. */
static int process_wait(pid_t pid, int *status, uint64_t deadline)
{
	for (;;) {
		struct timespec ts = {.tv_nsec = 2000000};
		pid_t w = waitpid(pid, status, WNOHANG);

		if (w == pid)
			return 0;
		if (w < 0 && errno != EINTR)
			return errno;
		if (process_ms_left(deadline) == 0)
			return ETIMEDOUT;
		nanosleep(&ts, NULL);
	}
}

int s3_creds_process(const char *command, const char *profile,
		     unsigned timeout_ms, struct s3_creds *out, char *err,
		     size_t errlen)
{
	uint64_t deadline = util_now_ns() + (uint64_t)timeout_ms * 1000000u;
	struct util_buf output = {0};
	char what[256];
	char source[256];
	char ebuf[128];
	pid_t pid = -1;
	int fd = -1;
	int status = 0;
	int rc;

	snprintf(what, sizeof(what), "credential_process for profile '%s'",
		 profile);
	snprintf(source, sizeof(source), "credential_process (profile %s)",
		 profile);
	rc = s3_secret_buf_init(&output, S3_CREDS_BODY_MAX);
	if (rc) {
		rc = util_fail(err, errlen, ENOMEM, "out of memory");
		goto fail;
	}
	rc = process_spawn(command, &pid, &fd);
	if (rc) {
		pid = -1;
		rc = util_fail(err, errlen, rc, "cannot start %s: %s", what,
			       util_strerror(rc, ebuf, sizeof(ebuf)));
		goto fail;
	}
	rc = process_read(fd, &output, deadline);
	if (!rc)
		rc = process_wait(pid, &status, deadline);
	if (rc == 0)
		pid = -1; /* reaped */
	if (rc == ETIMEDOUT) {
		rc = util_fail(err, errlen, ETIMEDOUT,
			       "%s did not finish within %u s", what,
			       (timeout_ms + 999) / 1000);
		goto fail;
	}
	if (rc == EFBIG) {
		rc = util_fail(err, errlen, EINVAL,
			       "%s printed more than %zu bytes", what,
			       output.max);
		goto fail;
	}
	if (rc) {
		rc = util_fail(err, errlen, rc, "cannot read from %s: %s", what,
			       util_strerror(rc, ebuf, sizeof(ebuf)));
		goto fail;
	}
	if (WIFSIGNALED(status)) {
		rc =
		    util_fail(err, errlen, EINVAL, "%s was killed by signal %d",
			      what, WTERMSIG(status));
		goto fail;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		rc = util_fail(
		    err, errlen, EINVAL, "%s exited with status %d%s", what,
		    WEXITSTATUS(status),
		    WEXITSTATUS(status) == 127 ? " (command not found?)" : "");
		goto fail;
	}
	if (output.len == 0) {
		rc = util_fail(err, errlen, EINVAL, "%s printed nothing", what);
		goto fail;
	}
	rc = s3_creds_json_parse(output.data, output.len, S3_CREDS_JSON_PROCESS,
				 what, source, out, err, errlen);
fail:
	if (fd >= 0)
		close(fd);
	if (pid > 0) {
		/* still running (timeout, output too long): end it all */
		kill(-pid, SIGKILL);
		kill(pid, SIGKILL);
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
	}
	s3_secret_buf_free(&output);
	return rc;
}
