/*
 * util spawn: starting a program the way the Docker plugin starts s3pipe
 * and s3/ starts a profile's credential_process (util/spawn.c).
 *
 * posix_spawn (safe in a threaded process) with stdin on /dev/null,
 * stdout and stderr each inherited, on /dev/null or into a pipe the
 * caller reads, every other descriptor closed, the signal mask empty and
 * every signal at its default (a parent that ignores SIGPIPE or blocks
 * SIGTERM passes neither on).
 */
#ifndef S3PIPE_UTIL_SPAWN_H
#define S3PIPE_UTIL_SPAWN_H

#include <stdbool.h>
#include <sys/types.h>

enum util_spawn_fd {
	UTIL_SPAWN_INHERIT, /* the caller's own */
	UTIL_SPAWN_NULL,    /* /dev/null */
	UTIL_SPAWN_PIPE,    /* a pipe whose read end the caller gets */
};

struct util_spawn {
	char *const *argv;	/* borrowed; argv[0] names the program */
	bool search;		/* look argv[0] up in PATH */
	bool own_group;		/* a process group of its own: kill(-pid)
				   reaches whatever the program starts */
	enum util_spawn_fd out; /* stdout */
	enum util_spawn_fd err; /* stderr (the same pipe as stdout when
				   both ask for one) */
};

/*
 * Starts s->argv.  0, *pid the child (the caller reaps it: waitpid) and
 * *pipe_fd the read end of the pipe (O_CLOEXEC; the caller closes it), or
 * -1 when neither out nor err is UTIL_SPAWN_PIPE.  Or posix_spawn's errno
 * (ENOENT for a program not found, ...), with nothing started and nothing
 * left open.  pipe_fd may be NULL when no pipe is asked for.
 */
int util_spawn(const struct util_spawn *s, pid_t *pid, int *pipe_fd);

#endif
