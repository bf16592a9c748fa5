/*
 * fs channels: the channels the command line describes (fs/channels.c).
 */
#ifndef S3PIPE_FS_CHANNELS_H
#define S3PIPE_FS_CHANNELS_H

#include <stddef.h>

#include "fs/options.h"

/*
 * After the options and NAME=URI arguments are in: loads
 * --input-data-config or applies the per-channel options to the NAME=URI
 * channels, and works out this host (--resource-config, --host-index,
 * --host-count).  Returns 0, or EINVAL / ENOMEM with one line in err.
 */
int fs_channels_finish(struct fs_options *o, char *err, size_t errlen);

#endif
