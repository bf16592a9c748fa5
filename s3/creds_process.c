/*
 * creds_process: credentials printed by a program, the profile's
 * credential_process (as the AWS CLI and SDKs run it).
 *
 * The command line runs through /bin/sh -c (util_spawn()), in a process
 * group of its own, with stdin on /dev/null, stdout on a pipe, stderr
 * inherited (its prompts and errors reach the user) and no other
 * descriptor open, its signal mask empty and every signal at its
 * default.  The output is read up to S3_CREDS_BODY_MAX bytes within the
 * timeout; past the timeout the whole group is killed.  Only exit status
 * 0 counts, and then stdout must be the JSON document creds_json.c parses
 * (Version 1).
 *
 * The command may carry a secret of its own (a password, a key file), so
 * messages name the profile and never the command.  The output is a
 * secret buffer, wiped after parsing.
 */
#include "config.h"

#include "s3/internal.h"
#include "util/spawn.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

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
	char *const argv[] = {"/bin/sh", "-c", (char *)command, NULL};

	return util_spawn(&(struct util_spawn){.argv = argv,
					       .own_group = true,
					       .out = UTIL_SPAWN_PIPE,
					       .err = UTIL_SPAWN_INHERIT},
			  pid, out_fd);
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
		n = util_buf_read(out, fd);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0)
			return errno; /* EFBIG past out->max */
		if (n == 0)
			return 0;
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
