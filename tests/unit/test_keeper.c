/*
 * test_keeper: what a worker hands over and takes over (fs/worker.c),
 * where a mount cannot reach: the keeper's messages with a descriptor
 * attached, KEEPER_ENV, the FUSE_INIT kept by the first worker and played
 * again by the next one (its reply going nowhere, a libfuse session that
 * then answers requests), a request the kernel resent (the top bit of its
 * unique set) answered with that same unique, and the resend notification
 * as the kernel expects it.  The "kernel" is the other end of a socket
 * pair that keeps message boundaries, as /dev/fuse does.
 */
#include "config.h"

#include "fs/keeper.h"

#define FUSE_USE_VERSION 314
#include <fuse_lowlevel.h>
#include <linux/fuse.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#define RESENT_BIT  (1ULL << 63) /* FUSE_UNIQUE_RESEND, Linux 6.9 */
#define INIT_UNIQUE 2
#define INO	    42

static void op_getattr(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct stat st = {0};

	(void)fi;
	st.st_ino = ino;
	st.st_mode = S_IFREG | 0444;
	st.st_nlink = 1;
	st.st_size = 12345;
	fuse_reply_attr(req, &st, 1.0);
}

static const struct fuse_lowlevel_ops ops = {.getattr = op_getattr};

static struct fuse_session *session(void)
{
	char *argv[] = {"test_keeper", NULL};
	struct fuse_args args = FUSE_ARGS_INIT(1, argv);
	struct fuse_session *se =
	    fuse_session_new(&args, &ops, sizeof(ops), NULL);

	fuse_opt_free_args(&args);
	assert_non_null(se);
	return se;
}

/* What the kernel sends first: FUSE_INIT, protocol 7.40. */
static size_t init_request(unsigned char *buf)
{
	struct fuse_in_header h = {0};
	struct fuse_init_in in = {0};

	h.len = sizeof(h) + sizeof(in);
	h.opcode = FUSE_INIT;
	h.unique = INIT_UNIQUE;
	in.major = 7;
	in.minor = 40;
	in.max_readahead = 1 << 17;
	in.flags = FUSE_ASYNC_READ | FUSE_BIG_WRITES;
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), &in, sizeof(in));
	return h.len;
}

static void send_getattr(int kernel, uint64_t unique)
{
	unsigned char
	    buf[sizeof(struct fuse_in_header) + sizeof(struct fuse_getattr_in)];
	struct fuse_in_header h = {0};
	struct fuse_getattr_in in = {0};

	h.len = sizeof(buf);
	h.opcode = FUSE_GETATTR;
	h.unique = unique;
	h.nodeid = INO;
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), &in, sizeof(in));
	assert_int_equal(write(kernel, buf, sizeof(buf)), (ssize_t)sizeof(buf));
}

/* The session takes one request from its descriptor and answers it. */
static void serve_one(struct fuse_session *se)
{
	struct fuse_buf buf = {0};

	assert_true(fuse_session_receive_buf(se, &buf) > 0);
	fuse_session_process_buf(se, &buf);
	free(buf.mem);
}

/* The reply waiting at the kernel's end: its header, and the size. */
static ssize_t reply(int kernel, struct fuse_out_header *out,
		     unsigned char *body, size_t len)
{
	unsigned char buf[4096];
	ssize_t n = read(kernel, buf, sizeof(buf));

	assert_true(n >= (ssize_t)sizeof(*out));
	memcpy(out, buf, sizeof(*out));
	assert_int_equal(out->len, n);
	if (body)
		memcpy(body, buf + sizeof(*out),
		       len < (size_t)n - sizeof(*out)
			   ? len
			   : (size_t)n - sizeof(*out));
	return n;
}

static bool nothing_waiting(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};

	return poll(&p, 1, 0) == 0;
}

static void pair(int sv[2])
{
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
}

static void test_init_kept_and_replayed(void **state)
{
	struct keeper_shared *shared = calloc(1, sizeof(*shared));
	unsigned char init[KEEPER_INIT_MAX];
	struct fuse_out_header out;
	struct fuse_attr_out attr;
	struct fuse_session *se;
	size_t init_len = init_request(init);
	int first[2], next[2];

	(void)state;
	assert_non_null(shared);
	shared->magic = KEEPER_MAGIC;

	/* the first worker: the kernel's INIT goes through and is kept */
	pair(first);
	se = session();
	assert_int_equal(keeper_session_io(se, first[1], shared, false), 0);
	assert_int_equal(write(first[0], init, init_len), (ssize_t)init_len);
	serve_one(se);
	reply(first[0], &out, NULL, 0);
	assert_int_equal(out.unique, INIT_UNIQUE);
	assert_int_equal(out.error, 0);
	assert_int_equal(shared->init_len, init_len);
	assert_memory_equal(shared->init, init, init_len);
	fuse_session_destroy(se); /* closes first[1] */
	close(first[0]);

	/* the next worker: the INIT played again, its reply to nobody */
	pair(next);
	se = session();
	assert_int_equal(keeper_session_io(se, next[1], shared, true), 0);
	assert_true(nothing_waiting(next[0]));
	/* it answers at once what the kernel resent: the same unique */
	send_getattr(next[0], RESENT_BIT | 1234);
	serve_one(se);
	reply(next[0], &out, (unsigned char *)&attr, sizeof(attr));
	assert_true(out.unique == (RESENT_BIT | 1234));
	assert_int_equal(out.error, 0);
	assert_int_equal(attr.attr.ino, INO);
	assert_int_equal(attr.attr.size, 12345);
	fuse_session_destroy(se);
	close(next[0]);
	free(shared);
}

/* Without the INIT played, libfuse 3.14 answers a request with EIO:
 * what the replay is for. */
static void test_no_replay_no_answer(void **state)
{
	struct fuse_out_header out;
	struct fuse_session *se;
	int sv[2];

	(void)state;
	pair(sv);
	se = session();
	assert_int_equal(keeper_session_io(se, sv[1], NULL, true), 0);
	send_getattr(sv[0], 77);
	serve_one(se);
	reply(sv[0], &out, NULL, 0);
	assert_int_equal(out.unique, 77);
	assert_int_equal(out.error, -EIO);
	fuse_session_destroy(se);
	close(sv[0]);
}

/* The journal of requests taken and not answered: what a kernel without
 * FUSE_NOTIFY_RESEND would never send again is answered with EIO. */
static void test_inflight_journal(void **state)
{
	struct keeper_shared *shared = calloc(1, sizeof(*shared));
	struct fuse_out_header out;
	struct fuse_buf buf = {0};
	struct fuse_session *se;
	unsigned char init[KEEPER_INIT_MAX];
	size_t init_len = init_request(init);
	int sv[2];

	(void)state;
	assert_non_null(shared);
	shared->magic = KEEPER_MAGIC;
	pair(sv);
	se = session();
	assert_int_equal(keeper_session_io(se, sv[1], shared, false), 0);
	assert_int_equal(write(sv[0], init, init_len), (ssize_t)init_len);
	serve_one(se);
	reply(sv[0], &out, NULL, 0);
	/* one request answered, one taken when the worker "dies" */
	send_getattr(sv[0], 10);
	serve_one(se);
	reply(sv[0], &out, NULL, 0);
	assert_int_equal(out.unique, 10);
	send_getattr(sv[0], 12);
	assert_true(fuse_session_receive_buf(se, &buf) > 0);
	free(buf.mem);
	buf = (struct fuse_buf){0}; /* libfuse reuses a buffer it is given */
	/* the next worker answers it with EIO, once */
	assert_int_equal(keeper_fail_inflight(sv[1], shared), 1);
	reply(sv[0], &out, NULL, 0);
	assert_int_equal(out.unique, 12);
	assert_int_equal(out.error, -EIO);
	assert_int_equal(keeper_fail_inflight(sv[1], shared), 0);
	assert_true(nothing_waiting(sv[0]));
	/* a kernel that resends: the journal is only emptied */
	send_getattr(sv[0], 14);
	assert_true(fuse_session_receive_buf(se, &buf) > 0);
	free(buf.mem);
	keeper_inflight_clear(shared);
	assert_int_equal(keeper_fail_inflight(sv[1], shared), 0);
	fuse_session_destroy(se);
	close(sv[0]);
	free(shared);
}

static void test_resend_notification(void **state)
{
	struct fuse_out_header out;
	int fds[2];

	(void)state;
	assert_int_equal(pipe(fds), 0);
	assert_int_equal(keeper_resend(fds[1]), 0);
	assert_int_equal(read(fds[0], &out, sizeof(out)), (ssize_t)sizeof(out));
	assert_int_equal(out.len, sizeof(out));
	assert_int_equal(out.error, 7);	 /* FUSE_NOTIFY_RESEND */
	assert_int_equal(out.unique, 0); /* a notification */
	close(fds[0]);
	close(fds[1]);
	assert_int_equal(keeper_resend(fds[1]), EBADF);
}

static void test_messages(void **state)
{
	int sv[2], fds[2], got = -1;
	char byte = 0;

	(void)state;
	pair(sv);
	assert_int_equal(pipe(fds), 0);
	/* a descriptor goes across and works there */
	assert_int_equal(keeper_send(sv[1], KEEPER_MOUNTED, fds[1]), 0);
	assert_int_equal(keeper_recv(sv[0], &got), KEEPER_MOUNTED);
	assert_true(got >= 0 && got != fds[1]);
	assert_true(fcntl(got, F_GETFD) & FD_CLOEXEC);
	assert_int_equal(write(got, "x", 1), 1);
	assert_int_equal(read(fds[0], &byte, 1), 1);
	assert_int_equal(byte, 'x');
	close(got);
	/* a message alone */
	assert_int_equal(keeper_send(sv[0], KEEPER_GO, -1), 0);
	assert_int_equal(keeper_recv(sv[1], &got), KEEPER_GO);
	assert_int_equal(got, -1);
	/* the other side gone */
	close(sv[0]);
	assert_int_equal(keeper_recv(sv[1], &got), -1);
	assert_int_equal(keeper_send(sv[1], KEEPER_READY, -1), EPIPE);
	close(sv[1]);
	close(fds[0]);
	close(fds[1]);
}

static void test_worker_env(void **state)
{
	static const char *const bad[] = {"",	    "5,6",   "5,6,7,8",
					  "5,-6,7", "a,b,c", "5,6,7x"};
	int f, s, c;

	(void)state;
	unsetenv(KEEPER_ENV);
	assert_false(keeper_worker_env(&f, &s, &c));
	setenv(KEEPER_ENV, "5,6,7", 1);
	assert_true(keeper_worker_env(&f, &s, &c));
	assert_int_equal(f, 5);
	assert_int_equal(s, 6);
	assert_int_equal(c, 7);
	/* read once: not passed on to what the worker runs */
	assert_null(getenv(KEEPER_ENV));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		setenv(KEEPER_ENV, bad[i], 1);
		assert_true(keeper_worker_env(&f, &s, &c));
		assert_int_equal(f, -1);
		assert_int_equal(s, -1);
		assert_int_equal(c, -1);
	}
}

static void test_shared_map(void **state)
{
	struct keeper_shared *s;
	int fd = memfd_create("test", 0);

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, sizeof(*s)), 0);
	/* not the keeper's: no magic */
	assert_null(keeper_shared_map(fd));
	s = keeper_shared_map(-1);
	assert_null(s);
	{
		uint32_t head[2] = {KEEPER_MAGIC, sizeof(*s)};

		assert_int_equal(pwrite(fd, head, sizeof(head), 0),
				 (ssize_t)sizeof(head));
		/* another version's layout, another size: not taken */
		head[1] = sizeof(*s) + 8;
		assert_int_equal(pwrite(fd, head, sizeof(head), 0),
				 (ssize_t)sizeof(head));
		assert_null(keeper_shared_map(fd));
		head[1] = sizeof(*s);
		assert_int_equal(pwrite(fd, head, sizeof(head), 0),
				 (ssize_t)sizeof(head));
		assert_int_equal(ftruncate(fd, sizeof(*s) + 4096), 0);
		assert_null(keeper_shared_map(fd));
		assert_int_equal(ftruncate(fd, sizeof(*s)), 0);
	}
	/* keepers from before the resume files, and from before the record
	 * indexes: taken, at their sizes */
	for (int k = 0; k < 2; k++) {
		size_t older = k ? KEEPER_SHARED_BEFORE_RECORDS
				 : KEEPER_SHARED_BEFORE_RESUME;
		uint32_t head[2] = {KEEPER_MAGIC, (uint32_t)older};

		assert_int_equal(ftruncate(fd, (off_t)older), 0);
		assert_int_equal(pwrite(fd, head, sizeof(head), 0),
				 (ssize_t)sizeof(head));
		s = keeper_shared_map(fd);
		assert_non_null(s);
		assert_int_equal(s->size, older);
		munmap(s, older);
		/* its size in the head, but a region of the full size */
		assert_int_equal(ftruncate(fd, sizeof(*s)), 0);
		assert_null(keeper_shared_map(fd));
		head[1] = sizeof(*s);
		assert_int_equal(pwrite(fd, head, sizeof(head), 0),
				 (ssize_t)sizeof(head));
	}
	s = keeper_shared_map(fd);
	assert_non_null(s);
	assert_int_equal(keeper_generation(s), 0);
	s->generation = 3;
	assert_int_equal(keeper_generation(s), 3);
	assert_int_equal(keeper_generation(NULL), 0);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_init_kept_and_replayed),
	    cmocka_unit_test(test_no_replay_no_answer),
	    cmocka_unit_test(test_inflight_journal),
	    cmocka_unit_test(test_resend_notification),
	    cmocka_unit_test(test_messages),
	    cmocka_unit_test(test_worker_env),
	    cmocka_unit_test(test_shared_map),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
