/*
 * test_docs: the documents against the tables they describe.
 *
 * --help is printed from fs/options.c's table and channel_settings[]; the
 * README's option table and s3pipe(1) are written by hand.  These tests tie
 * them together, so that an option or a per-channel setting added to a
 * table and missing from a document (or left in a document after it left
 * the table) fails the build's tests:
 *
 * - every option --help prints has a row in README.md's option table and
 *   a tagged entry (.TP, then .B/.BI/.BR with the option) in s3pipe(1);
 *   every option those two document is one --help prints;
 * - every per-channel setting's command-line values and default are in its
 *   README row, its values and its InputDataConfig field's name in its man
 *   page entry, and its field has an entry in SAGEMAKER CHANNELS with each
 *   of its config spellings;
 * - s3pipe-convert's section names each conversion setting.
 *
 * The documents are read from $S3PIPE_SRCDIR (make check sets it).
 */
#include "config.h"

#include "fs/options.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define OPTIONS_MAX 128

struct docs {
	char *readme;
	char *man;
	char *help;			  /* s3pipe --help */
	const char *options[OPTIONS_MAX]; /* in help, each "name\0" */
	unsigned noptions;
};

static char *read_doc(const char *name)
{
	const char *dir = getenv("S3PIPE_SRCDIR");
	char path[4096];
	char *text = NULL;
	long len;
	FILE *f;

	if (!dir)
		dir = ".";
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "rb");
	if (!f)
		fail_msg("cannot open %s (is S3PIPE_SRCDIR set?)", path);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	len = ftell(f);
	assert_true(len > 0);
	rewind(f);
	text = calloc(1, (size_t)len + 1);
	assert_non_null(text);
	assert_int_equal(fread(text, 1, (size_t)len, f), (size_t)len);
	fclose(f);
	return text;
}

static bool name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
}

/* The options at the start of --help's rows: "  -f, --foreground",
 * "      --cache-size SIZE"; cut in place. */
static void collect_options(struct docs *d)
{
	for (char *line = d->help; line && *line;) {
		char *next = strchr(line, '\n');
		char *p = line;

		if (next)
			*next++ = '\0';
		while (*p == ' ')
			p++;
		if (p[0] == '-' && p[1] != '-' && p[1] && p[2] == ',')
			p += 4; /* "-f, " */
		if (p > line + 1 && p[0] == '-' && p[1] == '-' &&
		    name_char(p[2])) {
			char *end = p + 2;

			while (name_char(*end))
				end++;
			*end = '\0';
			assert_true(d->noptions < OPTIONS_MAX);
			d->options[d->noptions++] = p + 2;
		}
		line = next;
	}
}

static int setup(void **state)
{
	struct docs *d = calloc(1, sizeof(*d));
	size_t len = 0;
	FILE *f;

	assert_non_null(d);
	d->readme = read_doc("README.md");
	d->man = read_doc("doc/s3pipe.1");
	f = open_memstream(&d->help, &len);
	assert_non_null(f);
	fs_options_usage(f, "s3pipe");
	fclose(f);
	collect_options(d);
	*state = d;
	return 0;
}

static int teardown(void **state)
{
	struct docs *d = *state;

	free(d->readme);
	free(d->man);
	free(d->help);
	free(d);
	return 0;
}

/* "--cache-dir" as s3pipe(1) writes it: "\-\-cache\-dir" */
static void man_escape(const char *s, char *out, size_t size)
{
	size_t o = 0;

	for (; *s && o + 3 < size; s++) {
		if (*s == '-')
			out[o++] = '\\';
		out[o++] = *s;
	}
	out[o] = '\0';
}

/* where word stands in text as a whole name (not followed by more of a
 * name, nor by "\-" and more), from from on; NULL when nowhere */
static const char *find_word(const char *text, const char *word)
{
	size_t len = strlen(word);

	for (const char *p = strstr(text, word); p; p = strstr(p + 1, word)) {
		const char *after = p + len;

		if (name_char(*after) || (after[0] == '\\' && after[1] == '-'))
			continue;
		return p;
	}
	return NULL;
}

/* The README option table's row whose first cell holds tag (a copy), or
 * NULL. */
static char *readme_row_tagged(const char *readme, const char *tag)
{
	for (const char *line = readme; line; line = strchr(line, '\n')) {
		const char *end, *at;

		line += *line == '\n';
		end = strchr(line, '\n');
		if (line[0] != '|')
			continue;
		at = strstr(line, tag);
		if (!at || (end && at > end) || name_char(at[strlen(tag)]))
			continue;
		return strndup(line, end ? (size_t)(end - line) : strlen(line));
	}
	return NULL;
}

/* The README option table's row for --name, or for "-o name" (an option
 * of mount.s3pipe's -o only), as a copy; NULL when none. */
static char *readme_row(const char *readme, const char *name)
{
	char tag[96];
	char *row;

	snprintf(tag, sizeof(tag), "`--%s", name);
	row = readme_row_tagged(readme, tag);
	if (row)
		return row;
	snprintf(tag, sizeof(tag), "`-o %s", name);
	return readme_row_tagged(readme, tag);
}

/*
 * s3pipe(1)'s entry tagged with what (already escaped): the line after a
 * .TP that starts with .B, .BI or .BR and names it, through the line before
 * the next .TP, .PP, .SS or .SH.  A copy, or NULL.
 */
static char *man_entry(const char *man, const char *what)
{
	for (const char *p = strstr(man, "\n.TP\n"); p;
	     p = strstr(p + 1, "\n.TP\n")) {
		const char *tag = p + 5;
		const char *eol = strchr(tag, '\n');
		const char *at = find_word(tag, what);
		const char *end = eol;

		if (!eol || !at || at > eol || tag[0] != '.' || tag[1] != 'B')
			continue;
		while (end && strncmp(end, "\n.TP\n", 5) != 0 &&
		       strncmp(end, "\n.PP\n", 5) != 0 &&
		       strncmp(end, "\n.SS ", 5) != 0 &&
		       strncmp(end, "\n.SH ", 5) != 0)
			end = strchr(end + 1, '\n');
		return strndup(tag, end ? (size_t)(end - tag) : strlen(tag));
	}
	return NULL;
}

/* s3pipe(1)'s entry for --name, or for "-o name=" (mount.s3pipe's -o
 * only) */
static char *man_option(const char *man, const char *name)
{
	char opt[96], esc[192];
	char *entry;

	snprintf(opt, sizeof(opt), "--%s", name);
	man_escape(opt, esc, sizeof(esc));
	entry = man_entry(man, esc);
	if (entry)
		return entry;
	snprintf(opt, sizeof(opt), "-o %s=", name);
	man_escape(opt, esc, sizeof(esc));
	return man_entry(man, esc);
}

/* Each option --help prints is in the README's table and in s3pipe(1). */
static void test_help_options_documented(void **state)
{
	struct docs *d = *state;
	unsigned missing = 0;

	assert_true(d->noptions > 40);
	for (unsigned i = 0; i < d->noptions; i++) {
		char *row = readme_row(d->readme, d->options[i]);
		char *entry = man_option(d->man, d->options[i]);

		if (!row) {
			print_error("README.md: no option-table row for --%s\n",
				    d->options[i]);
			missing++;
		}
		if (!entry) {
			print_error("s3pipe(1): no .TP entry for --%s\n",
				    d->options[i]);
			missing++;
		}
		free(row);
		free(entry);
	}
	assert_int_equal(missing, 0);
}

static bool in_help(const struct docs *d, const char *name, size_t len)
{
	for (unsigned i = 0; i < d->noptions; i++)
		if (strlen(d->options[i]) == len &&
		    strncmp(d->options[i], name, len) == 0)
			return true;
	return false;
}

/* Each option the README's table documents is one --help prints. */
static void test_readme_options_exist(void **state)
{
	struct docs *d = *state;
	unsigned rows = 0, stale = 0;

	for (const char *line = d->readme; line; line = strchr(line, '\n')) {
		const char *cell_end;

		line += *line == '\n';
		if (strncmp(line, "| `-", 4) != 0)
			continue;
		rows++;
		cell_end = strchr(line + 1, '|');
		while (cell_end && cell_end[-1] == '\\')
			cell_end = strchr(cell_end + 1, '|');
		for (const char *p = strstr(line, "`--"); p && p < cell_end;
		     p = strstr(p + 1, "`--")) {
			size_t len = 0;

			while (name_char(p[3 + len]))
				len++;
			if (in_help(d, p + 3, len))
				continue;
			print_error("README.md: --%.*s is not an option\n",
				    (int)len, p + 3);
			stale++;
		}
	}
	assert_true(rows > 30);
	assert_int_equal(stale, 0);
}

/* Each tagged option in s3pipe(1)'s OPTIONS is one --help prints. */
static void test_man_options_exist(void **state)
{
	struct docs *d = *state;
	const char *start = strstr(d->man, "\n.SH OPTIONS\n");
	const char *end = start ? strstr(start + 1, "\n.SH ") : NULL;
	unsigned tags = 0, stale = 0;
	char name[96];

	assert_non_null(start);
	assert_non_null(end);
	for (const char *p = strstr(start, "\n.TP\n.B"); p && p < end;
	     p = strstr(p + 1, "\n.TP\n.B")) {
		const char *at = strstr(p + 5, "\\-\\-");
		const char *eol = strchr(p + 5, '\n');
		size_t n = 0;

		if (!at || at > eol)
			continue;
		tags++;
		for (at += 4;
		     n + 1 < sizeof(name) &&
		     (name_char(*at) || (at[0] == '\\' && at[1] == '-'));
		     at++)
			if (*at != '\\')
				name[n++] = *at;
		name[n] = '\0';
		if (in_help(d, name, n))
			continue;
		print_error("s3pipe(1): --%s is not an option\n", name);
		stale++;
	}
	assert_true(tags > 30);
	assert_int_equal(stale, 0);
}

/* text holds word (man-escaped when man) as a whole word */
static bool mentions(const char *text, const char *word, bool man)
{
	char esc[192];

	if (!man)
		return find_word(text, word) != NULL;
	man_escape(word, esc, sizeof(esc));
	return find_word(text, esc) != NULL;
}

static const char *last_part(const char *field)
{
	const char *dot = strrchr(field, '.');

	return dot ? dot + 1 : field;
}

/* A per-channel setting on the command line: its README row and man page
 * entry say its values, its default and its config field. */
static void test_channel_options_documented(void **state)
{
	struct docs *d = *state;
	unsigned bad = 0;

	for (unsigned i = 0; i < channel_settings_count; i++) {
		const struct channel_setting *s = &channel_settings[i];
		const char *def = channel_setting_default_doc(s);
		char *row, *entry;

		if (!s->option)
			continue;
		row = readme_row(d->readme, s->option);
		entry = man_option(d->man, s->option);
		assert_non_null(row);
		assert_non_null(entry);
		for (unsigned v = 0; v < s->nvalues; v++) {
			const char *w = s->values[v].cli;

			if (!w || s->type == CHANNEL_SETTING_FLAG)
				continue;
			if (!mentions(row, w, false)) {
				print_error("README.md: --%s's row lacks %s\n",
					    s->option, w);
				bad++;
			}
			if (!mentions(entry, w, true)) {
				print_error("s3pipe(1): --%s lacks %s\n",
					    s->option, w);
				bad++;
			}
		}
		if (*def && !strstr(row, def)) {
			print_error("README.md: --%s's row lacks its default "
				    "'%s'\n",
				    s->option, def);
			bad++;
		}
		if (s->field && !mentions(entry, last_part(s->field), true)) {
			print_error("s3pipe(1): --%s does not name %s\n",
				    s->option, last_part(s->field));
			bad++;
		}
		free(row);
		free(entry);
	}
	assert_int_equal(bad, 0);
}

/* A per-channel setting in an InputDataConfig: its field's entry in
 * SAGEMAKER CHANNELS has each of its spellings. */
static void test_config_fields_documented(void **state)
{
	struct docs *d = *state;
	const char *section = strstr(d->man, "\n.SH SAGEMAKER CHANNELS\n");
	unsigned bad = 0;

	assert_non_null(section);
	for (unsigned i = 0; i < channel_settings_count; i++) {
		const struct channel_setting *s = &channel_settings[i];
		char esc[192];
		char *entry;

		if (!s->field)
			continue;
		man_escape(s->field, esc, sizeof(esc));
		entry = man_entry(section, esc);
		if (!entry) {
			print_error("s3pipe(1): no entry for %s\n", s->field);
			bad++;
			continue;
		}
		for (unsigned v = 0; v < s->nvalues; v++) {
			const char *w = s->values[v].config;

			if (w && !mentions(entry, w, true)) {
				print_error("s3pipe(1): %s lacks %s\n",
					    s->field, w);
				bad++;
			}
		}
		if (s->none_word && !mentions(entry, s->none_word, true)) {
			print_error("s3pipe(1): %s lacks %s\n", s->field,
				    s->none_word);
			bad++;
		}
		free(entry);
	}
	assert_int_equal(bad, 0);
}

/* s3pipe-convert's section names each conversion setting. */
static void test_convert_tool_documented(void **state)
{
	struct docs *d = *state;
	const char *start = strstr(d->man, "\n.SS s3pipe-convert\n");
	const char *end = start ? strstr(start + 1, "\n.SH ") : NULL;
	unsigned n = 0;
	char *section;

	assert_non_null(start);
	assert_non_null(end);
	section = strndup(start, (size_t)(end - start));
	assert_non_null(section);
	for (unsigned i = 0; i < channel_settings_count; i++) {
		char opt[96];

		if (!channel_settings[i].conversion)
			continue;
		n++;
		snprintf(opt, sizeof(opt), "--%s", channel_settings[i].option);
		if (!mentions(section, opt, true))
			fail_msg("s3pipe(1), s3pipe-convert: no %s", opt);
	}
	free(section);
	assert_true(n >= 4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_help_options_documented),
	    cmocka_unit_test(test_readme_options_exist),
	    cmocka_unit_test(test_man_options_exist),
	    cmocka_unit_test(test_channel_options_documented),
	    cmocka_unit_test(test_config_fields_documented),
	    cmocka_unit_test(test_convert_tool_documented),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
