/*
 * fs worker: a worker's side of the keeper (see keeper.h): the region it
 * shares with the keeper, the I/O libfuse does through it, the resend, and
 * the messages on the keeper's socket.
 *
 * libfuse reads and writes the /dev/fuse descriptor through our I/O
 * (fuse_session_custom_io, libfuse 3.13+).  Reading, the first FUSE_INIT
 * the kernel sends is copied into the shared region.  A replacement plays
 * that INIT to its own session before serving (fuse_session_process_buf on
 * the main thread, before any loop thread reads), and its reply, which the
 * kernel does not wait for, goes nowhere.  One session a process: the I/O
 * state is this file's.
 */
#include "config.h"

#include "fs/keeper.h"

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>
#include <linux/fuse.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "util/util.h"

/* Linux 6.9's notification (include/uapi/linux/fuse.h, 7.40): the kernel
 * puts the requests the daemon has taken back on its queue, the top bit
 * of each one's unique set */
#ifndef FUSE_NOTIFY_RESEND
#define FUSE_NOTIFY_RESEND 7
#endif

static struct {
	struct keeper_shared *shared;
	bool replaying; /* the replayed INIT's reply is dropped */
	uint64_t replay_unique;
	pthread_mutex_t lock;
} io = {.lock = PTHREAD_MUTEX_INITIALIZER};

struct keeper_shared *keeper_shared_map(int fd)
{
	struct keeper_shared *s;
	struct stat sb;
	size_t len;

	/* a region of a layout this version does not know (another size)
	 * is not read at all */
	if (fstat(fd, &sb) != 0 ||
	    (sb.st_size != (off_t)sizeof(*s) &&
	     sb.st_size != (off_t)KEEPER_SHARED_BEFORE_RECORDS &&
	     sb.st_size != (off_t)KEEPER_SHARED_BEFORE_RESUME))
		return NULL;
	len = (size_t)sb.st_size;
	s = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (s == MAP_FAILED || s->magic != KEEPER_MAGIC || s->size != len) {
		if (s != MAP_FAILED)
			munmap(s, len);
		return NULL;
	}
	return s;
}

bool keeper_worker_env(int *fuse_fd, int *shared_fd, int *ctl_fd)
{
	const char *v = getenv(KEEPER_ENV);
	int n = 0;

	*fuse_fd = *shared_fd = *ctl_fd = -1;
	if (!v)
		return false;
	if (sscanf(v, "%d,%d,%d%n", fuse_fd, shared_fd, ctl_fd, &n) != 3 ||
	    v[n] != '\0' || *fuse_fd < 0 || *shared_fd < 0 || *ctl_fd < 0)
		*fuse_fd = *shared_fd = *ctl_fd = -1;
	unsetenv(KEEPER_ENV); /* not for what this worker runs */
	return true;
}

void keeper_worker_cloexec(int fuse_fd, int shared_fd, int ctl_fd,
			   const struct keeper_shared *shared, bool on)
{
	int flag = on ? FD_CLOEXEC : 0;

	fcntl(fuse_fd, F_SETFD, flag);
	fcntl(shared_fd, F_SETFD, flag);
	fcntl(ctl_fd, F_SETFD, flag);
	for (unsigned i = 0; i < shared->nchannels && i < FS_MAX_CHANNELS;
	     i++) {
		if (shared->catalog_fd[i] >= 0)
			fcntl(shared->catalog_fd[i], F_SETFD, flag);
		if (shared->order_fd[i] >= 0)
			fcntl(shared->order_fd[i], F_SETFD, flag);
		if (shared->size >= sizeof(*shared) &&
		    shared->records_fd[i] >= 0)
			fcntl(shared->records_fd[i], F_SETFD, flag);
	}
}

uint16_t keeper_generation(const struct keeper_shared *shared)
{
	return shared ? (uint16_t)__atomic_load_n(&shared->generation,
						  __ATOMIC_ACQUIRE)
		      : 0;
}

/* ---- the journal of requests taken and not answered ---- */

static size_t journal_slot(uint64_t unique)
{
	return (size_t)((unique >> 1) * 0x9E3779B97F4A7C15ULL >> 54) &
	       (KEEPER_INFLIGHT - 1);
}

/* Requests answered by nobody: no entry (FORGET, BATCH_FORGET,
 * INTERRUPT). */
static bool has_reply(uint32_t opcode)
{
	return opcode != FUSE_FORGET && opcode != FUSE_BATCH_FORGET &&
	       opcode != FUSE_INTERRUPT;
}

static void journal_add(uint64_t unique)
{
	size_t at = journal_slot(unique);

	for (size_t i = 0; i < KEEPER_INFLIGHT; i++) {
		uint64_t *slot =
		    &io.shared->inflight[(at + i) & (KEEPER_INFLIGHT - 1)];
		uint64_t free_slot = 0;

		if (__atomic_compare_exchange_n(slot, &free_slot, unique, false,
						__ATOMIC_RELEASE,
						__ATOMIC_RELAXED))
			return;
	}
	/* full: this one is not journaled */
}

static void journal_remove(uint64_t unique)
{
	size_t at = journal_slot(unique);

	for (size_t i = 0; i < KEEPER_INFLIGHT; i++) {
		uint64_t *slot =
		    &io.shared->inflight[(at + i) & (KEEPER_INFLIGHT - 1)];
		uint64_t want = unique;

		if (__atomic_compare_exchange_n(slot, &want, 0, false,
						__ATOMIC_RELEASE,
						__ATOMIC_RELAXED))
			return;
	}
}

void keeper_inflight_clear(struct keeper_shared *shared)
{
	for (size_t i = 0; i < KEEPER_INFLIGHT; i++)
		__atomic_store_n(&shared->inflight[i], 0, __ATOMIC_RELEASE);
}

unsigned keeper_fail_inflight(int fd, struct keeper_shared *shared)
{
	unsigned n = 0;

	for (size_t i = 0; i < KEEPER_INFLIGHT; i++) {
		uint64_t unique = __atomic_exchange_n(&shared->inflight[i], 0,
						      __ATOMIC_ACQ_REL);
		struct fuse_out_header out = {
		    .len = sizeof(out),
		    .error = -EIO,
		    .unique = unique,
		};

		if (unique && write(fd, &out, sizeof(out)) == sizeof(out))
			n++;
	}
	return n;
}

/* ---- the I/O libfuse does ---- */

static ssize_t io_read(int fd, void *buf, size_t len, void *userdata)
{
	ssize_t n = read(fd, buf, len);
	const struct fuse_in_header *in = buf;

	(void)userdata;
	if (n >= (ssize_t)sizeof(*in) && io.shared && in->unique &&
	    has_reply(in->opcode) && in->opcode != FUSE_INIT)
		journal_add(in->unique);
	if (n >= (ssize_t)sizeof(*in) && in->opcode == FUSE_INIT && io.shared &&
	    (size_t)n <= KEEPER_INIT_MAX &&
	    !__atomic_load_n(&io.shared->init_len, __ATOMIC_ACQUIRE)) {
		memcpy(io.shared->init, buf, (size_t)n);
		__atomic_store_n(&io.shared->init_len, (uint32_t)n,
				 __ATOMIC_RELEASE);
	}
	return n;
}

static ssize_t io_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	const struct fuse_out_header *out = iov[0].iov_base;
	ssize_t len = 0;

	(void)userdata;
	if (count > 0 && iov[0].iov_len >= sizeof(*out)) {
		bool drop;

		pthread_mutex_lock(&io.lock);
		drop = io.replaying && out->unique == io.replay_unique;
		pthread_mutex_unlock(&io.lock);
		if (drop) {
			for (int i = 0; i < count; i++)
				len += (ssize_t)iov[i].iov_len;
			return len;
		}
		if (io.shared && out->unique)
			journal_remove(out->unique);
	}
	return writev(fd, iov, count);
}

int keeper_session_io(struct fuse_session *se, int fd,
		      struct keeper_shared *shared, bool replay)
{
	static const struct fuse_custom_io ops = {
	    .read = io_read,
	    .writev = io_writev,
	};
	uint32_t len =
	    shared ? __atomic_load_n(&shared->init_len, __ATOMIC_ACQUIRE) : 0;
	struct fuse_buf buf = {0};
	int rc;

	io.shared = shared;
	rc = fuse_session_custom_io(se, &ops, fd);
	if (rc < 0)
		return -rc;
	if (!replay || len < sizeof(struct fuse_in_header) ||
	    len > KEEPER_INIT_MAX)
		return 0; /* no INIT was seen: the kernel's is still to come */
	buf.mem = malloc(len);
	if (!buf.mem)
		return ENOMEM;
	memcpy(buf.mem, shared->init, len);
	buf.size = len;
	pthread_mutex_lock(&io.lock);
	io.replaying = true;
	io.replay_unique = ((const struct fuse_in_header *)buf.mem)->unique;
	pthread_mutex_unlock(&io.lock);
	fuse_session_process_buf(se, &buf);
	pthread_mutex_lock(&io.lock);
	io.replaying = false;
	pthread_mutex_unlock(&io.lock);
	free(buf.mem);
	return 0;
}

int keeper_resend(int fd)
{
	struct fuse_out_header out = {
	    .len = sizeof(out),
	    .error = FUSE_NOTIFY_RESEND,
	    .unique = 0,
	};

	return write(fd, &out, sizeof(out)) == (ssize_t)sizeof(out) ? 0 : errno;
}

int keeper_send(int sock, char msg, int fd)
{
	char ctrl[CMSG_SPACE(sizeof(int))];
	struct iovec iov = {.iov_base = &msg, .iov_len = 1};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};

	if (fd >= 0) {
		struct cmsghdr *c;

		memset(ctrl, 0, sizeof(ctrl));
		mh.msg_control = ctrl;
		mh.msg_controllen = sizeof(ctrl);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	while (sendmsg(sock, &mh, MSG_NOSIGNAL) < 0) {
		if (errno != EINTR)
			return errno;
	}
	return 0;
}

int keeper_recv(int sock, int *fd)
{
	char ctrl[CMSG_SPACE(sizeof(int))];
	char msg = 0;
	struct iovec iov = {.iov_base = &msg, .iov_len = 1};
	struct msghdr mh = {.msg_iov = &iov,
			    .msg_iovlen = 1,
			    .msg_control = ctrl,
			    .msg_controllen = sizeof(ctrl)};
	ssize_t n;

	*fd = -1;
	do
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		return -1;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c;
	     c = CMSG_NXTHDR(&mh, c)) {
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
		    c->cmsg_len == CMSG_LEN(sizeof(int)))
			memcpy(fd, CMSG_DATA(c), sizeof(int));
	}
	return (unsigned char)msg;
}
