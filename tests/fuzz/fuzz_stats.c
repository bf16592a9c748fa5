/*
 * libFuzzer harness for the client side of `s3pipe stats` (tools/stats.c,
 * built with -DUNITTESTS): every input is a stats document as read from a
 * mount's .s3pipe-stats, which is outside input.  A refused document gives
 * one clean line; an accepted one is rendered as the table and as the live
 * view at a few sizes, and the text must hold no control character but
 * '\n', lines no wider than asked, no more lines than asked.
 */
#include "config.h"

#include "fs/stats.h"
#include "tools/tools.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_text(const char *text, int width, int rows)
{
	int lines = 0, col = 0;

	if (!util_utf8_valid(text))
		abort();
	for (const char *p = text; *p; p++) {
		if (((unsigned char)*p < 0x20 && *p != '\n') || *p == 0x7f)
			abort();
		if (*p == '\n') {
			lines++;
			col = 0;
		} else if (((unsigned char)*p & 0xc0) != 0x80 &&
			   ++col > width && width) {
			abort();
		}
	}
	if (rows && lines > rows)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const int sizes[][2] = {{0, 0}, {20, 3}, {80, 24}, {200, 60}};
	char err[256];
	struct tools_stats_view *v;

	err[0] = '\0';
	v = tools_stats_parse((const char *)data, size, err, sizeof(err));
	if (!v) {
		if (!err[0] || strchr(err, '\n') || !util_utf8_valid(err))
			abort();
		return 0;
	}
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		for (int watch = 0; watch < 2; watch++) {
			char *text = tools_stats_render(v, watch, sizes[i][0],
							sizes[i][1]);

			if (!text)
				abort();
			check_text(text, sizes[i][0], sizes[i][1]);
			free(text);
		}
	}
	tools_stats_view_free(v);
	return 0;
}
