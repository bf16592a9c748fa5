/*
 * channel RecordIO wrapping stage: each object of the stage below becomes
 * one RecordIO record, for channels whose objects' lengths the listing
 * does not give (gzip: what an object inflates to).  A plain channel's
 * records are framed in its plan instead, where the sizes are known.
 *
 * Used by channel/reader.c, over the gunzip stage (reads with origin that
 * tell where each object ends).
 */
#ifndef S3PIPE_CHANNEL_WRAP_H
#define S3PIPE_CHANNEL_WRAP_H

#include <stdint.h>

#include "channel/stage.h"

struct channel;

/*
 * The wrapping stage over below, for one reader of channel ch.  An object
 * whose length the channel's counts (channel/object_counts.h) know is
 * framed as it comes; another is held until it ends, up to a quarter of
 * the cache's budget; past that it is counted to its end, and then
 * again(below, index) makes below hand on the object (index: its
 * origin's) from its start once more; its length is kept in the counts.
 * NULL and errno on failure.
 */
struct channel_stage *
channel_wrap_create(struct channel *ch, struct channel_stage *below,
		    int (*again)(struct channel_stage *below, uint64_t index));

#endif
