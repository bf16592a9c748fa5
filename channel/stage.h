/*
 * channel stages: the byte stages between an epoch's stream and its
 * reader, stacked like the stores.
 *
 *   reader -> [conversion | RecordIO wrapping] -> (cache reader | gunzip)
 *          -> the epoch's stream
 *
 * Each stage implements struct channel_stage_ops and reads the stage
 * below it (st->below); the bottom one reads the stream through the cache.
 * channel.c assembles a reader's stack in one function (stack_open()) and
 * talks to its top only; adding a stage is a file implementing the ops and
 * a line there.  Stages that make bytes of their own (gunzip, conversion)
 * hand them out in reference-counted chunks (struct channel_chunk); the
 * cache reader hands out pinned cache blocks.
 *
 * A stack belongs to one reader: its ops are called from one thread at a
 * time (the reader's, or a stage's own feeder thread for the stage below
 * it), never concurrently on the same stage.
 */
#ifndef S3PIPE_CHANNEL_STAGE_H
#define S3PIPE_CHANNEL_STAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cache/cache.h"
#include "channel/channel.h"

/* Where bytes come from, for messages: bucket NULL for a file or literal
 * bytes, named by key alone. */
struct channel_origin {
	uint64_t index; /* changes from one object to the next */
	const char *bucket;
	const char *key;
	/* the whole object's id (object_counts_id()), or 0: part of an
	 * object, literal bytes, or bytes of more than one object */
	uint64_t object_id;
	/* in: the caller is told where each object ends (the gunzip stage
	 * only): a read finding the object's bytes all handed out returns a
	 * view of 0 bytes with ended set, an empty object's too; 0 bytes
	 * without ended is the end */
	bool tell_ends;
	/* out, with tell_ends: the object's last bytes are in this view or
	 * were in the ones before */
	bool ended;
	/* in (the gunzip stage only): EAGAIN instead of waiting for bytes */
	bool no_wait;
};

struct channel_stage;

struct channel_stage_ops {
	/*
	 * Up to size bytes at offset into view, blocking until there are
	 * some; 0 with view->bytes 0 at the end, or an errno (ESTALE: the
	 * stream dropped what offset needs; ESPIPE: this stage cannot go to
	 * offset).  With origin, offset is the position and the view holds
	 * bytes of one object only, which origin names (what a conversion
	 * needs to know where each object starts); a stage that cannot say
	 * returns EINVAL.  The view is released even on error.
	 */
	int (*read)(struct channel_stage *st, uint64_t offset, size_t size,
		    struct channel_view *view, struct channel_origin *origin);
	void (*release)(struct channel_stage *st, struct channel_view *view);
	/* The offset the next sequential read starts at. */
	uint64_t (*position)(struct channel_stage *st);
	/* Stops the stage and frees it (not the one below); views handed
	 * out must be released first. */
	void (*destroy)(struct channel_stage *st);
};

struct channel_stage {
	const struct channel_stage_ops *ops;
	struct channel_stage *below; /* what it reads; NULL for the bottom */
};

/* Destroys top and every stage below it, top first (a stage may read the
 * one below until it stops). */
void channel_stack_destroy(struct channel_stage *top);

/*
 * The bottom stage that reads stream s through cache c: a cache reader
 * whose first read is at first_read (0: the stream's start;
 * cache_reader_create_before()).  NULL and errno (ESTALE: s dropped that
 * already; ENOMEM).
 */
struct channel_stage *channel_cache_stage_create(struct cache *c,
						 struct cache_stream *s,
						 uint64_t first_read);
/* Whether st is a cache stage (whose bytes are the stream's own). */
bool channel_stage_is_cache(const struct channel_stage *st);

/* ---- what stages that make bytes share ---- */

/*
 * Bytes a stage made (gunzip, conversion), handed to the reader by views
 * (channel_view.chunks) and reference-counted under the stage's lock.
 */
struct channel_chunk {
	char *data;
	size_t cap;
	unsigned refs;	 /* pieces and views holding it */
	bool from_cache; /* a cache buffer (cache_buffer_get), else malloc'd */
	/* when set, the last reference hands data to it instead of freeing
	 * it (called where the unref is: under the owner's lock) */
	void (*recycle)(void *arg, char *data, size_t cap);
	void *recycle_arg;
};

/* A small chunk of its own holding a copy of bytes[0..len); NULL when out
 * of memory. */
struct channel_chunk *channel_chunk_copy(const void *bytes, size_t len);
/* A chunk owning data (malloc'd, cap bytes); NULL when out of memory (data
 * is then freed). */
struct channel_chunk *channel_chunk_adopt(char *data, size_t cap);
/* Drops a reference; the last frees the chunk (to cache c when from it). */
void channel_chunk_unref(struct cache *c, struct channel_chunk *chunk);
/* Worker threads a stage starts by default: one per online core, 1..8. */
unsigned channel_stage_threads(void);

#endif
