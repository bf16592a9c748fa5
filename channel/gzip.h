/*
 * channel gzip stage: gunzips the objects of an epoch's stream ahead of its
 * reader, on worker threads, and frames them when asked (RecordIO).
 *
 * Used by channel.c only.  The stream holds the compressed objects as
 * whole-object segments and literal bytes (augmented manifest attributes,
 * passed through); the stage's output is their decompressed bytes back to
 * back, each item one record when part_max is not 0.
 */
#ifndef S3PIPE_CHANNEL_GZIP_H
#define S3PIPE_CHANNEL_GZIP_H

#include <stddef.h>
#include <stdint.h>

#include "cache/cache.h"
#include "channel/channel.h"

struct channel_gzip;

/*
 * A stage over stream s of cache c for one reader; name is the channel's,
 * for messages.  part_max: 0 for no framing, else RecordIO parts of at
 * most that many bytes.  threads: workers, 0 = one per online core.
 * NULL and errno on failure.
 */
struct channel_gzip *channel_gzip_create(struct cache *c,
					 struct cache_stream *s,
					 const char *name, uint64_t part_max,
					 unsigned threads);
/* Stops the workers and frees what the stage holds; views handed out must
 * be released first. */
void channel_gzip_destroy(struct channel_gzip *g);
uint64_t channel_gzip_position(struct channel_gzip *g);
/* As channel_reader_read(); a read at another offset than the position
 * restarts the stage there (decompressing from the start). */
int channel_gzip_read(struct channel_gzip *g, uint64_t offset, size_t size,
		      struct channel_view *view);
/*
 * The next bytes, as channel_gzip_read() at the position, but the view
 * holds bytes of one object only, which origin names (for the conversion
 * stage, which needs to know where each object starts).
 */
struct channel_origin;
int channel_gzip_read_object(struct channel_gzip *g, size_t size,
			     struct channel_view *view,
			     struct channel_origin *origin);
void channel_gzip_release(struct channel_gzip *g, struct channel_view *view);

#endif
