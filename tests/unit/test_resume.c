/*
 * test_resume: the resume files' names and the table of slots that are
 * their inodes (fs/resume.c): what parses and what does not, one slot per
 * name however often it is looked up, FORGET freeing a slot only when
 * every lookup is forgotten, and a full table refusing a new name while
 * the names it holds still resolve.
 */
#include "config.h"

#include "fs/resume.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

static void test_names(void **state)
{
	bool by_record = false;
	uint64_t v = 0;
	static const char *const bad[] = {
	    "train_0",
	    "train_0@",
	    "train_0@record=",
	    "train_0@record=01",
	    "train_0@record=-1",
	    "train_0@record=+1",
	    "train_0@record= 1",
	    "train_0@record=1x",
	    "train_0@record=18446744073709551616",
	    "train_0@records=1",
	    "train_0@bytes=1",
	    "@record=1",
	};

	(void)state;
	assert_int_equal(
	    fs_resume_name("train_3@record=1234567", &by_record, &v), 7);
	assert_true(by_record);
	assert_int_equal(v, 1234567);
	assert_int_equal(fs_resume_name("a@b_0@byte=0", &by_record, &v), 5);
	assert_false(by_record);
	assert_int_equal(v, 0);
	assert_int_equal(
	    fs_resume_name("x_1@byte=18446744073709551615", &by_record, &v), 3);
	assert_int_equal(v, UINT64_MAX);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (fs_resume_name(bad[i], &by_record, &v) != 0)
			fail_msg("'%s' parsed as a resume name", bad[i]);
}

static void test_slots(void **state)
{
	static struct fs_resume_files t;
	int a, b, again;

	(void)state;
	memset(&t, 0, sizeof(t));
	a = fs_resume_take(&t, 1, 3, true, 42);
	b = fs_resume_take(&t, 1, 3, false, 42); /* a byte: another name */
	again = fs_resume_take(&t, 1, 3, true, 42);
	assert_true(a >= 0 && b >= 0);
	assert_int_not_equal(a, b);
	assert_int_equal(again, a);
	assert_int_equal(fs_resume_slot(&t, (uint64_t)a)->lookups, 2);
	/* forgotten once of twice: still there */
	fs_resume_forget(&t, (uint64_t)a, 1);
	assert_non_null(fs_resume_slot(&t, (uint64_t)a));
	fs_resume_forget(&t, (uint64_t)a, 1);
	assert_null(fs_resume_slot(&t, (uint64_t)a));
	/* more forgotten than looked up, or a slot out of range: no harm */
	fs_resume_forget(&t, (uint64_t)b, 5);
	assert_null(fs_resume_slot(&t, (uint64_t)b));
	fs_resume_forget(&t, FS_RESUME_SLOTS + 7, 1);
	assert_null(fs_resume_slot(&t, FS_RESUME_SLOTS));

	/* a full table: a new name is refused, a held one still resolves */
	for (unsigned k = 0; k < FS_RESUME_SLOTS; k++)
		assert_true(fs_resume_take(&t, 0, k, true, 7) >= 0);
	assert_int_equal(fs_resume_take(&t, 0, 9999, true, 7), -1);
	a = fs_resume_take(&t, 0, 17, true, 7);
	assert_true(a >= 0);
	assert_int_equal(fs_resume_slot(&t, (uint64_t)a)->epoch, 17);
	fs_resume_forget(&t, (uint64_t)a, 2);
	b = fs_resume_take(&t, 0, 9999, true, 7);
	assert_int_equal(b, a); /* the freed slot */
	assert_int_equal(fs_resume_slot(&t, (uint64_t)b)->epoch, 9999);
	assert_int_equal(fs_resume_slot(&t, (uint64_t)b)->start, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_names),
	    cmocka_unit_test(test_slots),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
