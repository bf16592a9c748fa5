/*
 * tools: the command-line programs around the mount.
 *
 *   s3pipe        tools/s3pipe.c: the mount (fs_main()), or, as
 *                 "s3pipe stats ...", the stats client
 *   s3pipe stats  tools/stats.c: a mount's live stats, read from its
 *                 FS_STATS_FILE (fs/stats.h)
 *   s3pipe-convert tools/convert.c: the conversion stage over a file
 *
 * The top floor: tools call fs/ and channel/, nothing calls them.
 */
#ifndef S3PIPE_TOOLS_TOOLS_H
#define S3PIPE_TOOLS_TOOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/util.h"

/*
 * s3pipe stats [--json] [--watch] [--interval SECONDS] MOUNTPOINT, with
 * argv[0] "stats".  Returns the exit status: 0, or 1 after one line
 * "s3pipe: ..." on stderr.
 */
int tools_stats_main(int argc, char **argv);

#ifdef UNITTESTS
/* tools/stats.c, for the unit tests: the snapshot parsed, and rendered */
struct tools_stats_view;
struct tools_stats_view *tools_stats_parse(const char *text, size_t len,
					   char *err, size_t errlen);
void tools_stats_view_free(struct tools_stats_view *v);
char *tools_stats_render(const struct tools_stats_view *v, bool watch,
			 int width, int rows);
const char *tools_fmt_bytes(uint64_t n, char *buf, size_t len);
const char *tools_fmt_part(uint64_t part, uint64_t whole, char *buf,
			   size_t len);
const char *tools_fmt_rate(double bytes_per_second, char *buf, size_t len);
const char *tools_fmt_eta(double seconds, char *buf, size_t len);
void tools_render_bar(char *buf, int width, double fraction);
void tools_fit_width(char *line, int cols);
#endif

#endif
