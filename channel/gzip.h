/*
 * channel gzip stage: gunzips the objects of an epoch's stream ahead of its
 * reader, on worker threads.
 *
 * Used by channel.c only.  The stream holds the compressed objects as
 * whole-object segments and literal bytes (augmented manifest attributes,
 * passed through); the stage's output is their decompressed bytes back to
 * back (each one record when the RecordIO wrapping stage is above it).
 */
#ifndef S3PIPE_CHANNEL_GZIP_H
#define S3PIPE_CHANNEL_GZIP_H

#include <stddef.h>
#include <stdint.h>

#include "cache/cache.h"
#include "channel/channel.h"
#include "channel/stage.h"

/*
 * The gunzip stage (channel/stage.h) over stream s of cache c, for one
 * reader: the bottom of its stack, reading the stream's objects itself,
 * several at once.  name is the channel's, for messages.  threads:
 * workers, 0 = one per online core.  first_seg: the stream's segment it
 * starts at (0: the stream's start), its output then counted from 0.  Its
 * read at another offset than its position is ESPIPE (the caller starts a
 * new stack); with origin, the view holds bytes of one object.  NULL and
 * errno on failure (ESTALE: the stream dropped first_seg).
 */
struct channel_stage *channel_gzip_create(struct cache *c,
					  struct cache_stream *s,
					  const char *name, unsigned threads,
					  size_t first_seg);
/*
 * Hands on object index's bytes once more from its start, inflated again:
 * index is the object a read with tell_ends (stage.h) has just told the
 * end of, and no read since.  0, or EINVAL when it is not.
 */
int channel_gzip_again(struct channel_stage *st, uint64_t index);

#endif
