/*
 * util spawn: see util/spawn.h.  The file actions run in the child in
 * order: stdin from /dev/null, stdout and stderr set, then everything
 * from 3 up closed (the pipe's ends are O_CLOEXEC in any case, which
 * covers ours but not a library's descriptors).
 */
#include "config.h"

#include "util/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <unistd.h>

extern char **environ;

/* fd of the child (1 or 2) set up as how asks; wfd: the pipe's write end. */
static int set_output(posix_spawn_file_actions_t *fa, int fd,
		      enum util_spawn_fd how, int wfd)
{
	switch (how) {
	case UTIL_SPAWN_NULL:
		return posix_spawn_file_actions_addopen(fa, fd, "/dev/null",
							O_WRONLY, 0);
	case UTIL_SPAWN_PIPE:
		return posix_spawn_file_actions_adddup2(fa, wfd, fd);
	case UTIL_SPAWN_INHERIT:
		break;
	}
	return 0;
}

int util_spawn(const struct util_spawn *s, pid_t *pid, int *pipe_fd)
{
	bool want_pipe = s->out == UTIL_SPAWN_PIPE || s->err == UTIL_SPAWN_PIPE;
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	bool have_fa = false;
	bool have_attr = false;
	sigset_t set;
	int fds[2] = {-1, -1};
	short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
	int rc;

	if (pipe_fd)
		*pipe_fd = -1;
	if (want_pipe && !pipe_fd)
		return EINVAL;
	if (want_pipe && pipe2(fds, O_CLOEXEC) != 0)
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
		rc = set_output(&fa, 1, s->out, fds[1]);
	if (!rc)
		rc = set_output(&fa, 2, s->err, fds[1]);
#if defined(__GLIBC__) && __GLIBC_PREREQ(2, 34)
	if (!rc)
		rc = posix_spawn_file_actions_addclosefrom_np(&fa, 3);
#endif
	sigemptyset(&set);
	if (!rc)
		rc = posix_spawnattr_setsigmask(&attr, &set);
	sigfillset(&set);
	if (!rc)
		rc = posix_spawnattr_setsigdefault(&attr, &set);
	if (s->own_group) {
		flags |= POSIX_SPAWN_SETPGROUP;
		if (!rc)
			rc = posix_spawnattr_setpgroup(&attr, 0);
	}
	if (!rc)
		rc = posix_spawnattr_setflags(&attr, flags);
	if (!rc)
		rc = s->search ? posix_spawnp(pid, s->argv[0], &fa, &attr,
					      s->argv, environ)
			       : posix_spawn(pid, s->argv[0], &fa, &attr,
					     s->argv, environ);
	if (!rc && want_pipe) {
		*pipe_fd = fds[0];
		fds[0] = -1;
	}
fail:
	if (have_fa)
		posix_spawn_file_actions_destroy(&fa);
	if (have_attr)
		posix_spawnattr_destroy(&attr);
	if (fds[0] >= 0)
		close(fds[0]);
	if (fds[1] >= 0)
		close(fds[1]);
	return rc;
}
