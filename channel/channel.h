/*
 * channel: what SageMaker calls a channel, as data, between fs/ and cache/.
 *
 * A channel_spec is one channel as configured: where its entries come from
 * (an S3 prefix, a manifest, an augmented manifest), how each epoch orders
 * them (ShuffleConfig), which of them this host reads (ShardedByS3Key) and
 * the byte stages every entry passes through (gunzip, RecordIO framing).
 * Specs come from the command line (fs/options.c) or from an InputDataConfig
 * file (channel/config.c, the same JSON that CreateTrainingJob takes).
 *
 * A channel (channel/channel.c) turns a spec into one byte sequence per
 * epoch, read through channel readers.  Nothing here knows FUSE.
 */
#ifndef S3PIPE_CHANNEL_CHANNEL_H
#define S3PIPE_CHANNEL_CHANNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "cache/cache.h"

#define CHANNEL_NAME_MAX       64 /* SageMaker: [A-Za-z0-9.\-_]{1,64} */
#define CHANNEL_MAX	       64 /* channels per mount */
#define CHANNEL_ATTRIBUTES_MAX 16 /* AttributeNames per channel */

enum channel_data_type {
	CHANNEL_S3_PREFIX = 0,		 /* every object under the prefix */
	CHANNEL_MANIFEST_FILE,		 /* a JSON list of keys */
	CHANNEL_AUGMENTED_MANIFEST_FILE, /* JSON Lines, AttributeNames */
};

enum channel_distribution {
	CHANNEL_FULLY_REPLICATED = 0, /* every host reads everything */
	CHANNEL_SHARDED_BY_S3_KEY,    /* host i of n: positions = i mod n */
};

enum channel_wrapper {
	CHANNEL_WRAPPER_NONE = 0,
	CHANNEL_WRAPPER_RECORDIO, /* each object (attribute) one record */
};

enum channel_compression {
	CHANNEL_COMPRESSION_NONE = 0,
	CHANNEL_COMPRESSION_GZIP, /* each object gunzipped as it streams */
};

/* What the conversion stage reads (after gunzip); it writes protobuf
 * RecordIO: one RecordIO-framed aialgs.data.Record per row. */
enum channel_convert_format {
	CHANNEL_CONVERT_NONE = 0,
	CHANNEL_CONVERT_CSV,	/* dense rows: label, features */
	CHANNEL_CONVERT_LIBSVM, /* sparse rows: label idx:val ... */
};

#define CHANNEL_LABEL_NONE	 (-1) /* CSV rows without a label column */
#define CHANNEL_LABEL_COLUMN_MAX 1000000
#define CHANNEL_FEATURE_DIM_MAX	 (1ULL << 32)

/*
 * How rows become Records; a zeroed struct is "no conversion", and
 * channel_convert_conf_init() gives CSV's defaults: the label in column 0,
 * no header, bad rows fail the read.
 */
struct channel_convert_conf {
	enum channel_convert_format format;
	int label_column;     /* CSV: the label's column, from 0; or
				 CHANNEL_LABEL_NONE */
	bool header_skip;     /* CSV: each object starts with a header line */
	bool bad_row_skip;    /* count, log and skip rows that do not convert
				 instead of failing the read with EIO */
	uint64_t feature_dim; /* LibSVM: the tensor's shape (required);
				 CSV: features per row (0: as many as the
				 first row has) */
};

void channel_convert_conf_init(struct channel_convert_conf *conf,
			       enum channel_convert_format format);

/*
 * One channel.  Strings are owned by the spec (channel_spec_free() frees
 * them); a zeroed spec is valid and empty.
 */
struct channel_spec {
	char name[CHANNEL_NAME_MAX + 1];
	char *uri;    /* S3Uri as given: "s3://bucket/prefix-or-key" */
	char *bucket; /* from uri */
	char *prefix; /* from uri ("" when none); for manifests the key of
			 the manifest object */
	enum channel_data_type data_type;
	enum channel_distribution distribution;
	enum channel_wrapper wrapper;
	enum channel_compression compression;
	bool shuffle;	   /* ShuffleConfig present */
	int64_t seed;	   /* ShuffleConfig.Seed */
	char **attributes; /* AttributeNames, in order; NULL when none */
	size_t nattributes;
	char *content_type;		     /* ContentType, NULL when unset */
	struct channel_convert_conf convert; /* format NONE: no conversion */
};

void channel_spec_free(struct channel_spec *spec);

/* True when name matches SageMaker's channel rule [A-Za-z0-9.\-_]{1,64}. */
bool channel_name_valid(const char *name);

/* This host's place among the training hosts: index < count. */
struct channel_host {
	unsigned index;
	unsigned count; /* >= 1 */
};

/* ---- channel/config.c: SageMaker's JSON files ---- */

/*
 * Parses an InputDataConfig, the JSON array that CreateTrainingJob takes,
 * from text[0..len), into specs[*n ..max), advancing *n.  Pipe channels
 * (InputMode "Pipe" or absent) become specs; unknown fields are ignored.
 * Returns 0; or EINVAL with one line in err naming the channel and the
 * field ("channel 'train': CompressionType must be None or Gzip (got
 * 'zip')"), or ENOMEM.  On error the specs added are freed and *n is as it
 * was.  err: lowercase, no "s3pipe:" prefix, no trailing period, no control
 * characters.
 */
int channel_config_parse(const char *text, size_t len,
			 struct channel_spec *specs, unsigned max, unsigned *n,
			 char *err, size_t errlen);

/* channel_config_parse() on the contents of the file at path; a file that
 * cannot be read is EINVAL with its name and the reason in err. */
int channel_config_load(const char *path, struct channel_spec *specs,
			unsigned max, unsigned *n, char *err, size_t errlen);

/*
 * Reads SageMaker's resourceconfig.json at path ({"current_host":
 * "algo-2", "hosts": ["algo-1", "algo-2", ...], ...}) into host: index is
 * the position of current_host in hosts.  0, or EINVAL with one line in err.
 */
int channel_resource_config_load(const char *path, struct channel_host *host,
				 char *err, size_t errlen);

/*
 * Writes dir/inputdataconfig.json, the container-side view of specs that
 * sagemaker-training-toolkit and PipeModeDataset read: an object keyed by
 * channel name, each {"TrainingInputMode": "Pipe", "S3DistributionType":
 * ..., "RecordWrapperType": ..., "ContentType": ... (when set)}; a
 * converted channel is written as what its reader gets: ContentType
 * application/x-recordio-protobuf, RecordWrapperType None.  Written
 * to a temporary file in dir and renamed into place.  0, or an errno with
 * one line in err.
 */
int channel_container_config_write(const char *dir,
				   const struct channel_spec *specs, unsigned n,
				   char *err, size_t errlen);

/* ---- channel/channel.c: a channel's epochs ---- */

/* Settings; channel_conf_init() writes the defaults. */
struct channel_conf {
	/* RecordIO parts carry at most this many payload bytes (a multiple
	 * of 4): CHANNEL_RECORDIO_PART_MAX, smaller only in tests */
	uint64_t recordio_part_max;
	/* objects whose sizes are asked for (HEAD) ahead of the stream's end,
	 * for manifests */
	unsigned resolve_ahead;
	/* gunzip worker threads per channel; 0 = one per online core */
	unsigned inflate_threads;
	/* row conversion worker threads per reader; 0 = one per core */
	unsigned convert_threads;
	/* key ranges listed at once when a channel needs every key first
	 * (cache/lister.h); 1 = one page after another */
	unsigned max_listers;
	/* where listings are saved for the next mount (the --cache-dir;
	 * borrowed), NULL: nowhere */
	const char *listing_dir;
	/* a saved listing at most this many seconds old is used instead of
	 * listing again; 0: always list */
	unsigned listing_ttl;
};

void channel_conf_init(struct channel_conf *conf);

/*
 * A channel over spec (which must outlive it) for this host, reading
 * through cache.  Returns NULL and sets errno.
 */
struct channel *channel_create(const struct channel_spec *spec,
			       const struct channel_host *host,
			       const struct channel_conf *conf,
			       struct cache *cache);
/*
 * The start-up work and check: the first listing page (or, when the
 * epoch's order needs every key, the whole listing, logged as it goes);
 * for manifests the manifest itself and the first entry's object.
 * Returns 0, or an errno with one line for users in err.
 */
int channel_start(struct channel *ch, char *err, size_t errlen);
/* Faults in the memory of epoch 0's first prefetch window (start-up). */
void channel_warm(struct channel *ch);
/*
 * The byte size of an epoch, when known (the listing or plan complete,
 * no stage of unknown output size such as gzip); *size is 0 otherwise.
 */
bool channel_epoch_size(struct channel *ch, unsigned epoch, uint64_t *size);
/*
 * Pre-warms epoch's head: starts fetching its first bytes (min(the
 * cache's window, a quarter of the budget); with a shuffle the objects it
 * starts with) so that its first read finds them in memory.  Never evicts
 * what a reader needs (prefetch admission); what it fetches stays unread
 * until a reader passes it.  Does nothing for an epoch already opened, or
 * older than one pre-warmed already; a call for the same epoch tops up
 * what the budget or the listing cut short before.  Call while epoch - 1
 * drains (a reader near its end, at its end, or releasing it), only for
 * epochs that will exist (--epochs).  Does not block.
 */
void channel_prewarm(struct channel *ch, unsigned epoch);
/* What a channel holds for its listing, outside the cache's budget. */
struct channel_stats {
	uint64_t objects; /* listed so far (a manifest: its entries) */
	uint64_t bytes;	  /* the catalog, the plans and the listing's
			     segments */
};

void channel_get_stats(struct channel *ch, struct channel_stats *out);
/* Call after the store below the cache is destroyed. */
void channel_destroy(struct channel *ch);

#define CHANNEL_VIEW_MAX 256

struct channel_chunk;

/* Bytes a read returns, pinned until channel_view_release(). */
struct channel_view {
	struct iovec *iov; /* count entries, bytes in all */
	int count;
	size_t bytes;
	struct cache_view cache; /* what iov points into, for direct reads */
	struct channel_chunk *chunks[CHANNEL_VIEW_MAX]; /* staged reads */
	int nchunks;
	struct iovec stage_iov[CHANNEL_VIEW_MAX];
};

/* A sequential reader of one epoch.  NULL and errno on failure. */
struct channel_reader *channel_reader_open(struct channel *ch, unsigned epoch);
void channel_reader_close(struct channel_reader *r);
/* The offset the next sequential read starts at. */
uint64_t channel_reader_position(struct channel_reader *r);
/*
 * True once r is within one prefetch window of its epoch's end (when the
 * size is known: no gzip) or a read found the end: the time to pre-warm
 * the next epoch.
 */
bool channel_reader_near_end(struct channel_reader *r);
/*
 * Reads up to size bytes at offset (another offset than the position
 * restarts the epoch there: the caller decides whether seeking is
 * allowed).  Returns 0 (view->bytes == 0 at the end), EIO (logged), or
 * another errno.  The view must be released even on error.
 */
int channel_reader_read(struct channel_reader *r, uint64_t offset, size_t size,
			struct channel_view *view);
void channel_view_release(struct channel_reader *r, struct channel_view *view);

#endif
