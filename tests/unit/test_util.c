/*
 * test_util: the one cleaner of user-facing messages (util_clean_line)
 * and util_fail, which every module's errors go through: control
 * characters of every kind and bytes that are not well-formed UTF-8 become
 * '?', one per byte that starts no valid character; valid text, including
 * multi-byte characters, is kept as it is.  Then the plumbing written
 * once: a log line, writing all of a buffer or of iovecs, replacing a
 * file, reading one whole within a bound, and starting a program.
 */
#include "config.h"

#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "util/spawn.h"

static void check_clean(const char *in, const char *want)
{
	char buf[128];

	assert_true(strlen(in) < sizeof(buf));
	memcpy(buf, in, strlen(in) + 1);
	util_clean_line(buf);
	assert_string_equal(buf, want);
}

static void test_clean_keeps_text(void **state)
{
	(void)state;
	check_clean("", "");
	check_clean("channel 'train': CompressionType",
		    "channel 'train': CompressionType");
	check_clean("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
		    "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
}

static void test_clean_controls(void **state)
{
	(void)state;
	check_clean("a\nb\rc\td", "a?b?c?d");
	check_clean("\x1b[31mred", "?[31mred");
	check_clean("del\x7f", "del?");
	check_clean("c1\xc2\x85x", "c1?x");		       /* U+0085, NEL */
	check_clean("ls\xe2\x80\xa8ps\xe2\x80\xa9", "ls?ps?"); /* U+2028/9 */
}

static void test_clean_invalid_utf8(void **state)
{
	(void)state;
	check_clean("\xff", "?");
	check_clean("a\xc0\xaf"
		    "b",
		    "a??b");		       /* overlong '/' */
	check_clean("cut \xe2\x82", "cut ??"); /* truncated at the end */
	check_clean("\xed\xa0\x80", "???");    /* a UTF-16 surrogate */
	check_clean("\x80x", "?x");	       /* a lone continuation byte */
	assert_true(util_utf8_valid("caf\xc3\xa9"));
	assert_false(util_utf8_valid("caf\xc3"));
	assert_false(util_utf8_valid("\xc0\xaf"));
}

static void test_fail(void **state)
{
	char err[16];

	(void)state;
	assert_int_equal(
	    util_fail(err, sizeof(err), EINVAL, "bad '%s'", "x\ny"), EINVAL);
	assert_string_equal(err, "bad 'x?y'");
	/* cut to the buffer, still one clean line, and saying so */
	assert_int_equal(
	    util_fail(err, sizeof(err), ENOENT, "%s", "0123456789abcdef\n"),
	    ENOENT);
	assert_string_equal(err, "0123456789ab\xe2\x80\xa6");
	/* exactly fits: not marked */
	util_fail(err, sizeof(err), EINVAL, "%s", "0123456789abcde");
	assert_string_equal(err, "0123456789abcde");
	/* the cut never splits a character: "é" is 2 bytes at 11 and 12 */
	util_fail(err, sizeof(err), EINVAL, "%s",
		  "0123456789a\xc3\xa9"
		  "bcdef");
	assert_string_equal(err, "0123456789a\xe2\x80\xa6");
	assert_true(util_utf8_valid(err));
	/* a message that ended in '.' when cut no longer does */
	util_fail(err, sizeof(err), EINVAL, "%s", "name 'a.b.c.d.e.f.g'");
	assert_string_equal(err, "name 'a.b.c.\xe2\x80\xa6");
	/* no buffer: only the code */
	assert_int_equal(util_fail(NULL, 0, E2BIG, "%s", "ignored"), E2BIG);
}

/* Files in dir, "." and ".." aside. */
static int files_in(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return n;
}

/* Replacing a file whole: the old contents until the commit, the new
 * after, mode 0600, nothing left behind by a commit or an abort, and a
 * directory that is not there an error. */
static void test_replace(void **state)
{
	char dir[] = "/tmp/test_util.XXXXXX", path[64], buf[16] = {0};
	struct util_replace r;
	struct stat st;
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/file", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("old", f);
	fclose(f);

	assert_int_equal(util_replace_begin(&r, path), 0);
	assert_int_equal(util_write_all(r.fd, "new!", 4), 0);
	assert_int_equal(files_in(dir), 2);
	f = fopen(path, "r");
	assert_int_equal(fread(buf, 1, sizeof(buf), f), 3); /* still old */
	fclose(f);
	assert_int_equal(util_replace_commit(&r), 0);
	assert_null(r.tmp);
	assert_int_equal(files_in(dir), 1);
	f = fopen(path, "r");
	assert_int_equal(fread(buf, 1, sizeof(buf), f), 4);
	fclose(f);
	assert_memory_equal(buf, "new!", 4);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);

	assert_int_equal(util_replace_begin(&r, path), 0);
	assert_int_equal(util_write_all(r.fd, "x", 1), 0);
	util_replace_abort(&r);
	assert_int_equal(files_in(dir), 1);

	snprintf(path, sizeof(path), "%s/nodir/file", dir);
	assert_int_equal(util_replace_begin(&r, path), ENOENT);
	assert_int_equal(r.fd, -1);
	snprintf(path, sizeof(path), "%s/file", dir);
	unlink(path);
	rmdir(dir);
}

/* A temporary directory's name into dir (64 bytes). */
static void make_dir(char *dir)
{
	snprintf(dir, 64, "/tmp/test_util.XXXXXX");
	assert_non_null(mkdtemp(dir));
}

/* path (in dir) holding len bytes of a pattern. */
static void make_file(const char *path, size_t len)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	for (size_t i = 0; i < len; i++)
		fputc('a' + (int)(i % 26), f);
	assert_int_equal(fclose(f), 0);
}

/* A log line: "prog: message", one line whatever the message holds. */
static void test_log_line(void **state)
{
	char dir[64], path[80], buf[64] = {0};
	int saved = dup(STDERR_FILENO);
	int fd;

	(void)state;
	make_dir(dir);
	snprintf(path, sizeof(path), "%s/log", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0 && saved >= 0);
	assert_int_equal(dup2(fd, STDERR_FILENO), STDERR_FILENO);
	util_log_set_prog("prog");
	util_info("volume '%s' %s", "a\nb\x1b[2J", "ok");
	util_debug("not shown at the default level");
	util_log_set_prog("s3pipe");
	assert_int_equal(dup2(saved, STDERR_FILENO), STDERR_FILENO);
	close(saved);
	close(fd);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_true(read(fd, buf, sizeof(buf) - 1) > 0);
	close(fd);
	assert_string_equal(buf, "prog: volume 'a?b?[2J' ok\n");
	unlink(path);
	rmdir(dir);
}

/* All of many iovecs (more than one writev() takes, empty ones among
 * them) in order; a write cut short inside an iovec is taken up from
 * there (here the next write fails: the file size limit). */
static void test_writev_all(void **state)
{
	enum { N = IOV_MAX + 300 };
	static struct iovec iov[N];
	static char want[N * 3];
	char dir[64], path[80];
	struct rlimit old, lim;
	struct stat st;
	size_t total = 0;
	char *got;
	size_t len;
	int fd;

	(void)state;
	make_dir(dir);
	snprintf(path, sizeof(path), "%s/out", dir);
	for (int i = 0; i < N; i++) {
		size_t n = (size_t)(i % 4); /* 0 to 3 bytes */

		for (size_t j = 0; j < n; j++)
			want[total + j] = (char)('a' + (i + (int)j) % 26);
		iov[i].iov_base = want + total;
		iov[i].iov_len = n;
		total += n;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(util_writev_all(fd, iov, N), 0);
	assert_int_equal(util_writev_all(fd, iov, 0), 0);
	close(fd);
	assert_int_equal(util_read_file(path, total, &got, &len), 0);
	assert_int_equal(len, total);
	assert_memory_equal(got, want, total);
	free(got);
	/* the iovecs are left as they were */
	assert_ptr_equal(iov[5].iov_base, want + 6);
	assert_int_equal(iov[5].iov_len, 1);

	/* 10 bytes allowed: the first writev stops inside iov[1] */
	signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	lim = old;
	lim.rlim_cur = 10;
	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	assert_int_equal(
	    util_writev_all(fd, (struct iovec[]){{want, 4}, {want + 4, 20}}, 2),
	    EFBIG);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, SIG_DFL);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_size, 10);
	close(fd);
	unlink(path);
	rmdir(dir);
}

/* A whole file within a bound: exactly max is fine, one more byte is
 * EFBIG; empty is ""; what is not a readable file is its errno. */
static void test_read_file(void **state)
{
	char dir[64], path[80];
	char *got = (char *)1;
	size_t len = 1;

	(void)state;
	make_dir(dir);
	snprintf(path, sizeof(path), "%s/f", dir);
	make_file(path, 0);
	assert_int_equal(util_read_file(path, 1, &got, &len), 0);
	assert_int_equal(len, 0);
	assert_string_equal(got, "");
	free(got);

	make_file(path, 100000); /* several reads' worth */
	assert_int_equal(util_read_file(path, 100000, &got, &len), 0);
	assert_int_equal(len, 100000);
	assert_int_equal(got[len], '\0');
	assert_int_equal(got[99999], 'a' + 99999 % 26);
	free(got);
	assert_int_equal(util_read_file(path, 99999, &got, &len), EFBIG);
	assert_null(got);
	assert_int_equal(len, 0);
	assert_int_equal(util_read_file(path, 0, &got, &len), EINVAL);

	/* a file whose size says nothing: read to its end all the same */
	assert_int_equal(
	    util_read_file("/proc/self/cmdline", 65536, &got, &len), 0);
	assert_true(len > 0);
	assert_non_null(strstr(got, "test_util"));
	free(got);
	assert_int_equal(util_read_file("/proc/self/cmdline", 2, &got, &len),
			 EFBIG);

	assert_int_equal(util_read_file(dir, 100, &got, &len), EISDIR);
	unlink(path);
	assert_int_equal(util_read_file(path, 100, &got, &len), ENOENT);
	rmdir(dir);
}

/* Reading into a buffer allocated whole up front (a secret's): it never
 * moves, and one byte past its bound is EFBIG. */
static void test_buf_read_bound(void **state)
{
	struct util_buf b;
	char *data;
	int fds[2];

	(void)state;
	util_buf_init(&b, 8);
	b.data = malloc(9);
	assert_non_null(b.data);
	b.cap = 9;
	data = b.data;
	assert_int_equal(pipe(fds), 0);
	assert_int_equal(util_write_all(fds[1], "0123", 4), 0);
	assert_int_equal(util_buf_read(&b, fds[0]), 4);
	assert_int_equal(util_write_all(fds[1], "4567", 4), 0);
	close(fds[1]);
	assert_int_equal(util_buf_read_all(&b, fds[0]), 0);
	close(fds[0]);
	assert_ptr_equal(b.data, data);
	assert_int_equal(b.len, 8);
	assert_string_equal(b.data, "01234567");

	b.len = 0;
	assert_int_equal(pipe(fds), 0);
	assert_int_equal(util_write_all(fds[1], "012345678", 9), 0);
	close(fds[1]);
	assert_int_equal(util_buf_read_all(&b, fds[0]), EFBIG);
	close(fds[0]);
	assert_ptr_equal(b.data, data);
	assert_int_equal(b.len, 8);
	util_buf_free(&b);
}

/* Descriptors open in this process. */
static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* Runs argv as s says, its pipe read to the end into out: the exit
 * status. */
static int run_spawn(struct util_spawn *s, char *out, size_t outlen)
{
	size_t len = 0;
	pid_t pid;
	int status;
	int fd;
	ssize_t n;

	assert_int_equal(util_spawn(s, &pid, &fd), 0);
	assert_true(fd > STDERR_FILENO);
	while ((n = read(fd, out + len, outlen - 1 - len)) > 0)
		len += (size_t)n;
	out[len] = '\0';
	close(fd);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return status;
}

/* A program started with stdin on /dev/null, stdout and stderr as asked,
 * no other descriptor, nothing blocked or ignored, in a group of its own
 * when asked; nothing left open here; a missing program is ENOENT. */
static void test_spawn(void **state)
{
	char *const io[] = {"/bin/sh", "-c",
			    "echo out; echo err >&2; read x; echo \"in:$x.\"; "
			    "ls /proc/self/fd/50 2>/dev/null || echo closed; "
			    "exec grep -E '^Sig(Blk|Ign)' /proc/self/status",
			    NULL};
	char *const stat_argv[] = {"cat", "/proc/self/stat", NULL};
	char *const missing[] = {"/nonexistent/program", NULL};
	struct util_spawn s = {
	    .argv = io, .out = UTIL_SPAWN_PIPE, .err = UTIL_SPAWN_PIPE};
	char out[4096];
	char *ign;
	sigset_t set, old;
	int before = open_fds();
	long pid, pgrp;
	pid_t child;
	int fd;
	int rc;
	int extra = fcntl(STDIN_FILENO, F_DUPFD, 50); /* not O_CLOEXEC */

	(void)state;
	assert_int_equal(extra, 50);
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	assert_int_equal(run_spawn(&s, out, sizeof(out)), 0);
	ign = strstr(out, "SigIgn:\t");
	assert_non_null(ign);
	*ign = '\0';
	assert_string_equal(out, "out\nerr\nin:.\nclosed\n"
				 "SigBlk:\t0000000000000000\n");
	/* no standard signal ignored (glibc's spawn leaves its own two
	 * real-time signals, 32 and 33, ignored) */
	assert_int_equal(strtoull(ign + 8, NULL, 16) & 0x7fffffffu, 0);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	signal(SIGPIPE, SIG_DFL);
	close(extra);

	/* stderr on /dev/null, looked up in PATH, a group of its own */
	s = (struct util_spawn){.argv = stat_argv,
				.search = true,
				.own_group = true,
				.out = UTIL_SPAWN_PIPE,
				.err = UTIL_SPAWN_NULL};
	assert_int_equal(run_spawn(&s, out, sizeof(out)), 0);
	assert_int_equal(sscanf(out, "%ld (cat) %*c %*d %ld", &pid, &pgrp), 2);
	assert_int_equal(pgrp, pid);

	s = (struct util_spawn){.argv = missing, .out = UTIL_SPAWN_PIPE};
	fd = 123;
	rc = util_spawn(&s, &child, &fd);
	if (rc == 0) {
		/* valgrind runs posix_spawn as fork and exec: there the
		 * child says it, as exit status 127 */
		assert_true(fd > STDERR_FILENO);
		close(fd);
		assert_int_equal(waitpid(child, &rc, 0), child);
		assert_true(WIFEXITED(rc) && WEXITSTATUS(rc) == 127);
	} else {
		assert_int_equal(rc, ENOENT);
		assert_int_equal(fd, -1);
	}
	/* a pipe asked for, nowhere to put it */
	s.argv = stat_argv;
	assert_int_equal(util_spawn(&s, &child, NULL), EINVAL);
	assert_int_equal(open_fds(), before);
}

/* util_shorten: whole UTF-8 sequences, and "..." within size */
static void test_shorten(void **state)
{
	char buf[8];

	(void)state;
	assert_string_equal(util_shorten("short", buf, sizeof(buf)), "short");
	assert_string_equal(util_shorten("1234567", buf, sizeof(buf)),
			    "1234567");
	assert_string_equal(util_shorten("12345678", buf, sizeof(buf)),
			    "1234...");
	/* "\xc3\xa9" is one character: not cut in two */
	assert_string_equal(util_shorten("123\xc3\xa9xyz", buf, sizeof(buf)),
			    "123...");
}

/* util_help_row: help from the column, wrapped before the width, on the
 * next line when the left part is too long */
static void test_help_row(void **state)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	const char *line2;

	(void)state;
	assert_non_null(f);
	util_help_row(f, "  --a N", "one two");
	util_help_row(f, "  --a-very-long-option-name N", "x");
	util_help_row(f, "  --b",
		      "word word word word word word word word word word word "
		      "word word");
	fclose(f);
	assert_non_null(text);
	assert_true(strncmp(text,
			    "  --a N                     one two\n"
			    "  --a-very-long-option-name N\n"
			    "                            x\n"
			    "  --b                       word",
			    100) == 0);
	line2 = strstr(text, "word word\n");
	assert_non_null(line2);
	/* every line within the width */
	for (const char *p = text; *p;) {
		size_t n = strcspn(p, "\n");

		assert_true(n <= UTIL_HELP_WIDTH);
		p += n + (p[n] == '\n');
	}
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_clean_keeps_text),
	    cmocka_unit_test(test_clean_controls),
	    cmocka_unit_test(test_clean_invalid_utf8),
	    cmocka_unit_test(test_fail),
	    cmocka_unit_test(test_replace),
	    cmocka_unit_test(test_log_line),
	    cmocka_unit_test(test_writev_all),
	    cmocka_unit_test(test_read_file),
	    cmocka_unit_test(test_buf_read_bound),
	    cmocka_unit_test(test_spawn),
	    cmocka_unit_test(test_shorten),
	    cmocka_unit_test(test_help_row),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
