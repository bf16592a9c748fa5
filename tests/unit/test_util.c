/*
 * test_util: the one cleaner of user-facing messages (util_clean_line)
 * and util_fail, which every module's errors go through: control
 * characters of every kind and bytes that are not well-formed UTF-8 become
 * '?', one per byte that starts no valid character; valid text, including
 * multi-byte characters, is kept as it is.
 */
#include "config.h"

#include "util/util.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_clean_keeps_text),
	    cmocka_unit_test(test_clean_controls),
	    cmocka_unit_test(test_clean_invalid_utf8),
	    cmocka_unit_test(test_fail),
	    cmocka_unit_test(test_replace),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
