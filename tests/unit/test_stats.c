/*
 * test_stats: the pieces of live stats that are pure arithmetic or text,
 * reached through the UNITTEST convention (fs/stats.h): the per-second
 * rate ring of the daemon (fs/stats.c: slots, the window, the time since
 * the first read, saturation, concurrent adds), and the client's side
 * (tools/stats.c): byte units, MB/s, ETA, the progress bar, cutting lines
 * to a width, and parsing the stats document, which is outside input:
 * hostile or garbage documents are refused or tamed (types checked, lists
 * and strings cut, control characters replaced), never a crash, and what
 * is rendered from them has no escape characters and fits the width.
 */
#include "config.h"

#include "fs/stats.h"
#include "tools/tools.h"

#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "util/util.h"

#define S  1000000000ULL /* ns */
#define MS 1000000ULL

/* |x|, without libm */
static double magnitude(double x)
{
	return x < 0 ? -x : x;
}

/* ---- the rate ring ---- */

static void test_rate_window(void **state)
{
	struct fs_rate r;

	(void)state;
	memset(&r, 0, sizeof(r));
	assert_true(fs_rate_get(&r, 15 * S, 0) == 0.0);
	/* 1 MB in each of the seconds 8 .. 14 */
	for (uint64_t sec = 8; sec <= 14; sec++)
		fs_rate_add(&r, sec * S + 300 * MS, 1000000);
	/* at 15.0 s the window is 11.0 .. 15.0: 4 MB in 4 s */
	assert_true(magnitude(fs_rate_get(&r, 15 * S, 0) - 1e6) < 1.0);
	/* half a second later: 11.0 .. 15.5, with nothing in second 15 */
	assert_true(
	    magnitude(fs_rate_get(&r, 15 * S + 500 * MS, 0) - 4e6 / 4.5) < 1.0);
	/* long after: nothing in the window, however the slots wrapped */
	assert_true(fs_rate_get(&r, 30 * S, 0) == 0.0);
	assert_true(fs_rate_get(&r, (8 + 8 * 1000) * S, 0) == 0.0);
}

static void test_rate_slots_reused(void **state)
{
	struct fs_rate r;

	(void)state;
	memset(&r, 0, sizeof(r));
	fs_rate_add(&r, 7 * S, 5000000);
	/* second 15 falls in second 7's slot: that count is not its */
	fs_rate_add(&r, 15 * S + 100 * MS, 1000000);
	assert_true(magnitude(fs_rate_get(&r, 16 * S, 0) - 1e6 / 4.0) < 1.0);
	/* more in the same second adds up */
	fs_rate_add(&r, 15 * S + 900 * MS, 1000000);
	assert_true(magnitude(fs_rate_get(&r, 16 * S, 0) - 2e6 / 4.0) < 1.0);
}

static void test_rate_since_first_read(void **state)
{
	struct fs_rate r;

	(void)state;
	memset(&r, 0, sizeof(r));
	fs_rate_add(&r, 14 * S + 500 * MS, 1000000);
	/* the first read was half a second ago: 1 MB in 0.5 s */
	assert_true(
	    magnitude(fs_rate_get(&r, 15 * S, 14 * S + 500 * MS) - 2e6) < 1.0);
	/* a first read a moment ago is not taken as a huge rate: 250 ms */
	assert_true(
	    magnitude(fs_rate_get(&r, 14 * S + 501 * MS, 14 * S + 500 * MS) -
		      4e6) < 1.0);
	/* a first read "after now" (clocks of two threads) is no division by
	 * zero or a negative time */
	assert_true(fs_rate_get(&r, 14 * S + 600 * MS, 15 * S) > 0.0);
	/* the first seconds of the mount */
	memset(&r, 0, sizeof(r));
	fs_rate_add(&r, 1 * S, 3000000);
	assert_true(magnitude(fs_rate_get(&r, 2 * S, 0) - 1.5e6) < 1.0);
}

static void test_rate_saturates(void **state)
{
	struct fs_rate r;
	double rate;

	(void)state;
	memset(&r, 0, sizeof(r));
	fs_rate_add(&r, 20 * S, 1ULL << 39);
	fs_rate_add(&r, 20 * S, 1ULL << 39);
	fs_rate_add(&r, 20 * S, 1ULL << 39); /* past the slot's 40 bits */
	rate = fs_rate_get(&r, 21 * S, 0);
	/* capped, not wrapped into the second: still this second's count */
	assert_true(rate > (double)((1ULL << 40) - 2) / 5.0);
	assert_true(rate < (double)(1ULL << 40) / 4.0);
}

struct adder {
	struct fs_rate *r;
	uint64_t now;
};

static void *add_many(void *arg)
{
	struct adder *a = arg;

	for (int i = 0; i < 100000; i++)
		fs_rate_add(a->r, a->now, 1);
	return NULL;
}

static void test_rate_concurrent(void **state)
{
	struct fs_rate r;
	struct adder a;
	pthread_t t[4];

	(void)state;
	memset(&r, 0, sizeof(r));
	a.r = &r;
	a.now = 40 * S + 10 * MS;
	for (int i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&t[i], NULL, add_many, &a), 0);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	/* every add counted: 400000 bytes over 37.0 .. 41.0 s */
	assert_true(magnitude(fs_rate_get(&r, 41 * S, 0) - 400000.0 / 4.0) <
		    1e-6);
}

/* ---- formatting ---- */

static void test_fmt_bytes(void **state)
{
	char b[32];

	(void)state;
	assert_string_equal(tools_fmt_bytes(0, b, sizeof(b)), "0 B");
	assert_string_equal(tools_fmt_bytes(1023, b, sizeof(b)), "1023 B");
	assert_string_equal(tools_fmt_bytes(1024, b, sizeof(b)), "1.0 KiB");
	assert_string_equal(tools_fmt_bytes(412ULL << 20, b, sizeof(b)),
			    "412.0 MiB");
	assert_string_equal(tools_fmt_bytes(3ULL << 29, b, sizeof(b)),
			    "1.5 GiB");
	assert_string_equal(tools_fmt_bytes(UINT64_MAX, b, sizeof(b)),
			    "16.0 EiB");
	/* a small buffer is cut, not overrun */
	assert_string_equal(tools_fmt_bytes(412ULL << 20, b, 5), "412.");
}

static void test_fmt_part(void **state)
{
	char b[48];

	(void)state;
	assert_string_equal(
	    tools_fmt_part(3ULL << 20, 8ULL << 20, b, sizeof(b)),
	    "3.0/8.0 MiB");
	/* 1 GiB is shown in MiB: tenths of a GiB are too coarse */
	assert_string_equal(
	    tools_fmt_part(412ULL << 20, 1ULL << 30, b, sizeof(b)),
	    "412.0/1024.0 MiB");
	assert_string_equal(
	    tools_fmt_part(7ULL << 30, 12ULL << 30, b, sizeof(b)),
	    "7.0/12.0 GiB");
	assert_string_equal(tools_fmt_part(10, 1000, b, sizeof(b)),
			    "10/1000 B");
	assert_string_equal(tools_fmt_part(512, 2048, b, sizeof(b)),
			    "0.5/2.0 KiB");
}

static void test_fmt_rate(void **state)
{
	char b[32];

	(void)state;
	assert_string_equal(tools_fmt_rate(180.3e6, b, sizeof(b)),
			    "180.3 MB/s");
	assert_string_equal(tools_fmt_rate(0, b, sizeof(b)), "0.0 MB/s");
	assert_string_equal(tools_fmt_rate(2450e6, b, sizeof(b)),
			    "2450.0 MB/s");
	assert_string_equal(tools_fmt_rate(25e9, b, sizeof(b)), "25.0 GB/s");
	assert_string_equal(tools_fmt_rate(-5, b, sizeof(b)), "0.0 MB/s");
	assert_string_equal(tools_fmt_rate(NAN, b, sizeof(b)), "0.0 MB/s");
	assert_string_equal(tools_fmt_rate(INFINITY, b, sizeof(b)), "0.0 MB/s");
	assert_string_equal(tools_fmt_rate(1e300, b, sizeof(b)),
			    ">999999 GB/s");
}

static void test_fmt_eta(void **state)
{
	char b[32];

	(void)state;
	assert_string_equal(tools_fmt_eta(0, b, sizeof(b)), "0:00");
	assert_string_equal(tools_fmt_eta(3, b, sizeof(b)), "0:03");
	assert_string_equal(tools_fmt_eta(2.1, b, sizeof(b)), "0:03"); /* up */
	assert_string_equal(tools_fmt_eta(754, b, sizeof(b)), "12:34");
	assert_string_equal(tools_fmt_eta(3599.5, b, sizeof(b)), "1:00:00");
	assert_string_equal(tools_fmt_eta(3723, b, sizeof(b)), "1:02:03");
	assert_string_equal(
	    tools_fmt_eta(99 * 3600 + 59 * 60 + 59, b, sizeof(b)), "99:59:59");
	assert_string_equal(tools_fmt_eta(100 * 3600, b, sizeof(b)), ">99h");
	assert_string_equal(tools_fmt_eta(1e300, b, sizeof(b)), ">99h");
	assert_string_equal(tools_fmt_eta(-1, b, sizeof(b)), "--:--");
	assert_string_equal(tools_fmt_eta(NAN, b, sizeof(b)), "--:--");
	assert_string_equal(tools_fmt_eta(INFINITY, b, sizeof(b)), "--:--");
}

static void test_render_bar(void **state)
{
	char b[64];

	(void)state;
	tools_render_bar(b, 12, 0.5);
	assert_string_equal(b, "[====>     ]");
	tools_render_bar(b, 12, 0.0);
	assert_string_equal(b, "[          ]");
	tools_render_bar(b, 12, 1.0);
	assert_string_equal(b, "[==========]");
	tools_render_bar(b, 12, 0.999);
	assert_string_equal(b, "[========> ]");
	tools_render_bar(b, 12, 7.0); /* more than all: full */
	assert_string_equal(b, "[==========]");
	tools_render_bar(b, 12, -1.0);
	assert_string_equal(b, "[          ]");
	tools_render_bar(b, 12, NAN);
	assert_string_equal(b, "[          ]");
	tools_render_bar(b, 3, 0.5);
	assert_string_equal(b, "[ ]");
	tools_render_bar(b, 2, 0.5); /* no room for a bar */
	assert_string_equal(b, "");
	for (int w = 3; w < 60; w++) {
		for (int i = 0; i <= 20; i++) {
			tools_render_bar(b, w, i / 20.0);
			assert_int_equal((int)strlen(b), w);
			assert_int_equal(b[0], '[');
			assert_int_equal(b[w - 1], ']');
		}
	}
}

static void test_fit_width(void **state)
{
	char b[64];

	(void)state;
	strcpy(b, "abcdef");
	tools_fit_width(b, 3);
	assert_string_equal(b, "abc");
	strcpy(b, "abc");
	tools_fit_width(b, 10);
	assert_string_equal(b, "abc");
	strcpy(b, "abc");
	tools_fit_width(b, 3);
	assert_string_equal(b, "abc");
	strcpy(b, "abc");
	tools_fit_width(b, 0);
	assert_string_equal(b, "");
	/* characters, not bytes: "é" is one column of two bytes */
	strcpy(b, "a\xc3\xa9"
		  "bc");
	tools_fit_width(b, 2);
	assert_string_equal(b, "a\xc3\xa9");
	strcpy(b, "\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac");
	tools_fit_width(b, 2);
	assert_string_equal(b, "\xe2\x82\xac\xe2\x82\xac");
}

/* ---- the document ---- */

static const char good_doc[] =
    "{\"version\": 1, \"pid\": 42, \"mountpoint\": \"/mnt/data\", "
    "\"uptime\": 83.5, \"stats_interval\": 0,"
    " \"memory\": {\"budget\": 268435456, \"in_use\": 125829120, "
    "\"peak\": 209715200},"
    " \"cache\": {\"hits\": 120, \"misses\": 40},"
    " \"s3\": {\"requests\": 1234, \"gets_in_flight\": 32, "
    "\"concurrency\": 64, \"retries\": 1, \"failures\": 2, "
    "\"bytes_received\": 1288490188},"
    " \"channels\": ["
    "  {\"name\": \"train\", \"visible\": 2, \"catalog\": {\"objects\": "
    "1000000, \"bytes\": 67108864}, \"epochs\": ["
    "   {\"epoch\": 0, \"file\": \"train_0\", \"state\": \"done\", "
    "\"handles\": 0, \"bytes_delivered\": 1073741824, \"bytes_served\": "
    "1073741824, \"total\": 1073741824, \"bytes_per_second\": 0},"
    "   {\"epoch\": 1, \"file\": \"train_1\", \"state\": \"open\", "
    "\"handles\": 1, \"bytes_delivered\": 432013312, \"bytes_served\": "
    "432013312, \"total\": 1073741824, \"bytes_per_second\": 180300000}]},"
    "  {\"name\": \"validation\", \"visible\": 1, \"epochs\": ["
    "   {\"epoch\": 0, \"file\": \"validation_0\", \"state\": \"open\", "
    "\"handles\": 1, \"bytes_delivered\": 12582912, \"total\": null, "
    "\"bytes_per_second\": 40100000}]},"
    "  {\"name\": \"test\", \"visible\": 1, \"epochs\": []},"
    "  {\"name\": \"images\", \"visible\": 0, \"catalog\": {\"objects\": "
    "20000, \"bytes\": 1400000}, \"epochs\": [], \"tree\": {\"files\": "
    "20000, \"opens\": 1500, \"opens_prefetched\": 1490, \"orders\": 1, "
    "\"prefetched\": 2100}}]}";

/* Every line of text at most width characters, no more than rows lines,
 * no escape or other control character but '\n'. */
static void check_text(const char *text, int width, int rows)
{
	int lines = 0, col = 0;

	for (const char *p = text; *p; p++) {
		assert_false((unsigned char)*p < 0x20 && *p != '\n');
		assert_false(*p == 0x7f);
		if (*p == '\n') {
			lines++;
			col = 0;
		} else if (((unsigned char)*p & 0xc0) != 0x80) {
			col++;
			if (width)
				assert_true(col <= width);
		}
	}
	if (rows)
		assert_true(lines <= rows);
}

static char *render(const char *doc, bool watch, int width, int rows)
{
	char err[256];
	struct tools_stats_view *v =
	    tools_stats_parse(doc, strlen(doc), err, sizeof(err));
	char *text;

	assert_non_null(v);
	text = tools_stats_render(v, watch, width, rows);
	tools_stats_view_free(v);
	assert_non_null(text);
	check_text(text, width, rows);
	return text;
}

static void test_parse_and_render(void **state)
{
	char *text;

	(void)state;
	text = render(good_doc, false, 0, 0);
	assert_non_null(strstr(text, "s3pipe on /mnt/data (pid 42), up 1:24"));
	assert_non_null(strstr(text, "channel train: 2 file(s) listed, "
				     "1000000 objects (64.0 MiB outside"));
	/* a daemon that does not say (older): 0 */
	assert_non_null(strstr(text, "channel test: 1 file(s) listed, 0 "
				     "objects"));
	assert_non_null(strstr(text, "channel validation"));
	assert_non_null(strstr(text, "no file opened yet"));
	assert_non_null(strstr(text, "32 GETs in flight (limit 64)"));
	assert_non_null(strstr(text, "120.0 MiB in use of 256.0 MiB"));
	assert_non_null(strstr(text, "train_1       open"));
	assert_non_null(strstr(text, "180.3 MB/s"));
	/* a FastFile channel: its files and opens, no epochs */
	assert_non_null(strstr(text, "channel images: FastFile, 20000 files "
				     "in images/, 20000 objects listed"));
	assert_non_null(strstr(text, "1500 opened, 1490 of them found "
				     "prefetched; 1 order files taken"));
	free(text);

	text = render(good_doc, true, 99, 29);
	/* 412.0 of 1024.0 MiB at 180.3 MB/s: 612 MiB left, 3.6 s */
	assert_non_null(strstr(text, "  40%  412.0/1024.0 MiB  180.3 MB/s  "
				     "ETA 0:04\n"));
	/* the bar takes what the rest leaves of the 99 columns */
	assert_non_null(strstr(text, "\ntrain_1       [=============>          "
				     "             ]   40%  412.0/1024.0 "
				     "MiB  180.3 MB/s  ETA 0:04\n"));
	assert_non_null(strstr(text, "memory 120.0/256.0 MiB  GETs 32/64"));
	/* no total: bytes and rate, no bar */
	assert_non_null(strstr(text, "validation_0  12.0 MiB  40.1 MB/s\n"));
	assert_non_null(strstr(text, "test          waiting for a reader of "
				     "test_0"));
	assert_non_null(strstr(text, "images/  20000 files  1500 opened, 1490 "
				     "found prefetched  1 order files taken"));
	/* a done epoch is not shown while another of its channel is open */
	assert_null(strstr(text, "train_0"));
	free(text);

	/* narrow: no bar, the line cut; short: the lines that fit */
	text = render(good_doc, true, 40, 0);
	assert_null(strstr(text, "[="));
	free(text);
	text = render(good_doc, true, 99, 3);
	assert_null(strstr(text, "validation_0"));
	free(text);
}

static void expect_refused(const char *doc, size_t len)
{
	char err[256];
	struct tools_stats_view *v;

	err[0] = '\0';
	v = tools_stats_parse(doc, len, err, sizeof(err));
	if (v) {
		fail_msg("accepted: %.*s", (int)(len > 200 ? 200 : len), doc);
		tools_stats_view_free(v);
	}
	assert_true(err[0] != '\0');
	assert_true(util_utf8_valid(err));
	assert_null(strchr(err, '\n'));
}

#define REFUSED(doc) expect_refused(doc, sizeof(doc) - 1)

static void test_parse_refuses_garbage(void **state)
{
	char *deep;
	size_t n = 100000;

	(void)state;
	REFUSED("");
	REFUSED("null");
	REFUSED("[]");
	REFUSED("{}");
	REFUSED("\x1b[2J");
	REFUSED("{\"version\": \"1\", \"channels\": []}");
	REFUSED("{\"version\": 2, \"channels\": []}");
	REFUSED("{\"version\": 1.0, \"channels\": []}");
	REFUSED("{\"version\": 1}");
	REFUSED("{\"version\": 1, \"channels\": {}}");
	REFUSED("{\"version\": 1, \"channels\": [1]}");
	REFUSED("{\"version\": 1, \"channels\": [{\"name\": 5}]}");
	REFUSED("{\"version\": 1, \"channels\": [{\"epochs\": \"x\"}]}");
	REFUSED("{\"version\": 1, \"channels\": [{\"epochs\": [null]}]}");
	REFUSED("{\"version\": 1, \"channels\": [{\"epochs\": "
		"[{\"bytes_delivered\": -1}]}]}");
	REFUSED("{\"version\": 1, \"channels\": [{\"epochs\": "
		"[{\"bytes_delivered\": 1e300}]}]}");
	REFUSED("{\"version\": 1, \"channels\": [{\"epochs\": "
		"[{\"total\": \"big\"}]}]}");
	REFUSED("{\"version\": 1, \"uptime\": -5, \"channels\": []}");
	REFUSED("{\"version\": 1, \"uptime\": \"5\", \"channels\": []}");
	REFUSED("{\"version\": 1, \"memory\": [], \"channels\": []}");
	REFUSED("{\"version\": 1, \"s3\": {\"retries\": true}, "
		"\"channels\": []}");
	REFUSED("{\"version\": 1, \"mountpoint\": [], \"channels\": []}");
	REFUSED("{\"version\": 1, \"version\": 1, \"channels\": []}");
	REFUSED("{\"version\": 1, \"channels\": [");
	REFUSED("{\"version\": 1, \"mountpoint\": \"a\\u0000b\", "
		"\"channels\": []}");
	/* a NUL byte inside the text */
	expect_refused("{\"version\": 1,\0 \"channels\": []}", 31);
	/* invalid UTF-8 */
	REFUSED("{\"version\": 1, \"mountpoint\": \"\xff\xfe\", "
		"\"channels\": []}");
	/* nesting far past any sane depth */
	deep = malloc(2 * n + 1);
	assert_non_null(deep);
	memset(deep, '[', n);
	memset(deep + n, ']', n);
	expect_refused(deep, 2 * n);
	free(deep);
}

static void test_parse_tames_hostile(void **state)
{
	struct util_buf b;
	char *text;

	(void)state;
	/* control characters (escape sequences) in every string */
	text = render("{\"version\": 1, \"mountpoint\": \"/m\\u001b[2J\\u0007"
		      "\\u009b\", \"channels\": [{\"name\": \"x\\u001b]0;t"
		      "\\u0007\", \"epochs\": [{\"file\": \"\\u001b[H\\r\\n"
		      "\", \"state\": \"open\\u001b\", \"handles\": 1, "
		      "\"total\": 10, \"bytes_delivered\": 20}]}]}",
		      true, 80, 24);
	assert_null(strchr(text, '\x1b'));
	free(text);

	/* huge numbers, a delivered count past the total, extra members */
	text = render("{\"version\": 1, \"uptime\": 1e300, \"extra\": "
		      "{\"a\": [1, 2]}, \"memory\": {\"budget\": "
		      "9223372036854775807, \"in_use\": 9223372036854775807}, "
		      "\"channels\": [{\"name\": \"t\", \"epochs\": [{"
		      "\"file\": \"t_0\", \"handles\": 9223372036854775807, "
		      "\"bytes_delivered\": 9223372036854775807, \"total\": 1, "
		      "\"bytes_per_second\": 9223372036854775807}]}]}",
		      true, 80, 24);
	free(text);
	text = render("{\"version\": 1, \"channels\": [{\"epochs\": [{"
		      "\"handles\": 1, \"total\": 0, \"bytes_per_second\": 1}"
		      "]}]}",
		      true, 80, 24);
	free(text);

	/* a long mountpoint and thousands of channels and epochs: cut */
	util_buf_init(&b, 0);
	util_buf_append_str(&b, "{\"version\": 1, \"mountpoint\": \"");
	for (int i = 0; i < 100000; i++)
		util_buf_append_str(&b, "\xc3\xa9");
	util_buf_append_str(&b, "\", \"channels\": [");
	for (int i = 0; i < 2000; i++) {
		util_buf_printf(&b, "%s{\"name\": \"c%d\", \"epochs\": [",
				i ? ", " : "", i);
		for (int j = 0; j < (i < 3 ? 1000 : 1); j++)
			util_buf_printf(
			    &b,
			    "%s{\"epoch\": %d, \"file\": "
			    "\"c%d_%d\", \"handles\": 1, \"total\": "
			    "100, \"bytes_delivered\": 50}",
			    j ? ", " : "", j, i, j);
		util_buf_append_str(&b, "]}");
	}
	util_buf_append_str(&b, "]}");
	text = render(b.data, true, 100, 30);
	free(text);
	text = render(b.data, false, 0, 0);
	/* the newest epochs of a long list are the ones kept */
	assert_non_null(strstr(text, "c0_999 "));
	assert_null(strstr(text, "c0_0 "));
	/* at most 64 channels */
	assert_non_null(strstr(text, "channel c63:"));
	assert_null(strstr(text, "channel c64:"));
	free(text);
	util_buf_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rate_window),
	    cmocka_unit_test(test_rate_slots_reused),
	    cmocka_unit_test(test_rate_since_first_read),
	    cmocka_unit_test(test_rate_saturates),
	    cmocka_unit_test(test_rate_concurrent),
	    cmocka_unit_test(test_fmt_bytes),
	    cmocka_unit_test(test_fmt_part),
	    cmocka_unit_test(test_fmt_rate),
	    cmocka_unit_test(test_fmt_eta),
	    cmocka_unit_test(test_render_bar),
	    cmocka_unit_test(test_fit_width),
	    cmocka_unit_test(test_parse_and_render),
	    cmocka_unit_test(test_parse_refuses_garbage),
	    cmocka_unit_test(test_parse_tames_hostile),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
