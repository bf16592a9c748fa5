/*
 * s3pipe: the program.  "s3pipe stats ..." is the stats client
 * (tools/stats.c); everything else, under either name (s3pipe or
 * mount.s3pipe), is the mount (fs_main(), fs/main.c).
 */
#include "config.h"

#include <string.h>

#include "fs/fs.h"
#include "tools/tools.h"

int main(int argc, char **argv)
{
	const char *slash = argv[0] ? strrchr(argv[0], '/') : NULL;
	const char *prog = slash ? slash + 1 : argv[0] ? argv[0] : "s3pipe";

	if (strcmp(prog, "mount.s3pipe") != 0 && argc > 1 &&
	    strcmp(argv[1], "stats") == 0)
		return tools_stats_main(argc - 1, argv + 1);
	return fs_main(argc, argv);
}
