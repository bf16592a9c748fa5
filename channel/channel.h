/*
 * channel: what SageMaker calls a channel, as data, between fs/ (and
 * sagemaker/, which reads its specs from files) and cache/.
 *
 * A channel_spec is one channel as configured: where its entries come from
 * (an S3 prefix, a manifest, an augmented manifest), how each epoch orders
 * them (ShuffleConfig), which of them this host reads (ShardedByS3Key) and
 * the byte stages every entry passes through (gunzip, conversion, RecordIO
 * framing).  Its settings are the rows of channel_settings[]
 * (channel/spec.c); specs come from the command line (fs/options.c) or
 * from an InputDataConfig file (sagemaker/, the same JSON that
 * CreateTrainingJob takes).
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

enum channel_input_mode {
	CHANNEL_INPUT_PIPE = 0, /* one file per epoch: the objects back to
				   back */
	CHANNEL_INPUT_FASTFILE, /* a directory tree: each object a file */
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
	/* as the spec's ContentType says (InputDataConfig's S3pipeConvert):
	 * channel_spec_check() turns it into CSV or LIBSVM */
	CHANNEL_CONVERT_CONTENT_TYPE,
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
 * them); a zeroed spec is valid and empty, and channel_spec_init() gives
 * every setting its default.  The fields from data_type on are the
 * settings of channel_settings[] (channel/spec.c), which says how each is
 * given and checked.
 */
struct channel_spec {
	char name[CHANNEL_NAME_MAX + 1];
	char *uri;    /* S3Uri as given: "s3://bucket/prefix-or-key" */
	char *bucket; /* from uri */
	char *prefix; /* from uri ("" when none); for manifests the key of
			 the manifest object */
	enum channel_data_type data_type;
	enum channel_input_mode input_mode;
	enum channel_distribution distribution;
	enum channel_wrapper wrapper;
	enum channel_compression compression;
	bool shuffle;	   /* ShuffleConfig present: the seed was given */
	int64_t seed;	   /* ShuffleConfig.Seed */
	char **attributes; /* AttributeNames, in order; NULL when none */
	size_t nattributes;
	char *content_type;	/* ContentType, NULL when unset */
	int64_t shuffle_buffer; /* --shuffle-buffer bytes; 0: objects only */
	struct channel_convert_conf convert; /* format NONE: no conversion */
	uint32_t given; /* bit i: channel_settings[i] was given */
};

/* What an epoch file's records are: what its reader gets (RecordIO once
 * framed or converted), else what the ContentType says its objects hold
 * (application/x-recordio and application/x-recordio-protobuf: RecordIO;
 * text/csv, text/libsvm, application/jsonlines and text/plain: lines). */
enum channel_record_format {
	CHANNEL_RECORDS_NONE = 0, /* bytes only */
	CHANNEL_RECORDS_RECORDIO,
	CHANNEL_RECORDS_LINES,
};
enum channel_record_format
channel_record_format(const struct channel_spec *spec);

/* Every setting at its default, nothing given (strings NULL). */
void channel_spec_init(struct channel_spec *spec);
void channel_spec_free(struct channel_spec *spec);

/* True when name matches SageMaker's channel rule [A-Za-z0-9.\-_]{1,64}. */
bool channel_name_valid(const char *name);

/* ---- channel/spec.c: the per-channel settings, one table ---- */

/*
 * Every per-channel setting is one row of channel_settings[]: its
 * command-line name (--NAME, -o NAME), its InputDataConfig field, its type
 * and values, its default, its help, and where it lands in struct
 * channel_spec.  Which settings need which others is a second table,
 * applied by channel_spec_check().  The command line (fs/options.c), the
 * InputDataConfig reader (sagemaker/), s3pipe-convert and the Docker
 * plugin read these rows; --help and the documents are checked against
 * them by the tests.
 */
enum channel_syntax {
	CHANNEL_SYNTAX_CLI,    /* --name and the values' command-line words */
	CHANNEL_SYNTAX_CONFIG, /* InputDataConfig's fields and spellings */
};

enum channel_setting_type {
	CHANNEL_SETTING_ENUM,	 /* one of values[] */
	CHANNEL_SETTING_FLAG,	 /* an ENUM whose command-line form is a flag
				    that selects values[1] */
	CHANNEL_SETTING_INTEGER, /* [min, max], or none_word */
	CHANNEL_SETTING_STRING,	 /* owned char *, non-empty */
	CHANNEL_SETTING_LIST,	 /* owned char **, a count beside it:
				    comma-separated on the command line, a
				    JSON array of strings in a config */
};

struct channel_setting_value {
	const char *cli;    /* the command-line word (any case); NULL: the
			       command line cannot give it */
	const char *config; /* InputDataConfig's spelling; NULL: a config
			       cannot give it */
	int value;	    /* what lands in the spec */
	/* how messages name "this setting at this value", when
	 * "NAME SPELLING" would not say it; NULL otherwise */
	const char *cli_phrase, *config_phrase;
};

struct channel_setting {
	const char *option; /* canonical --option name, with dashes; NULL:
			       not on the command line */
	const char *field;  /* InputDataConfig field, dotted path from the
			       channel object; NULL: not in a config */
	enum channel_setting_type type;
	size_t offset, size; /* the field in struct channel_spec */
	size_t count_offset; /* LIST: its size_t count */
	const struct channel_setting_value *values; /* ENUM, FLAG */
	unsigned nvalues;
	int64_t min, max;      /* INTEGER; LIST: at most max items */
	const char *none_word; /* INTEGER: a word meaning none_value */
	int64_t none_value;
	int64_t default_value;	 /* ENUM, FLAG, INTEGER: before any is given */
	const char *metavar;	 /* --help: the value's name */
	const char *help;	 /* --help and the documents: what it does */
	const char *default_doc; /* the default as documents say it; NULL:
				    an ENUM's default word, or none */
	bool config_any_case;	 /* config values in any case (s3pipe's own
				    S3pipe* fields); SageMaker's are exact */
	bool config_required;	 /* a config must give it */
	bool bytes; /* INTEGER: a byte count, with a K, M, G or T suffix on
		       the command line (or a string so written in a
		       config) */
	bool needs_parent_field; /* a config whose parent object is present
				    must give it ("ShuffleConfig" without
				    "Seed") */
	bool conversion;	 /* a setting of the conversion stage: also
				    an option of s3pipe-convert */
};

extern const struct channel_setting channel_settings[];
extern const unsigned channel_settings_count;

/* The row whose option (or, for CHANNEL_SYNTAX_CONFIG, field) is name;
 * NULL when none. */
const struct channel_setting *channel_setting_find(enum channel_syntax syntax,
						   const char *name);
/* How messages of syntax name setting s, in buf: "--record-wrapper" or
 * "RecordWrapperType"; a setting that is not on the command line by its
 * field.  Returns buf. */
const char *channel_setting_name(const struct channel_setting *s,
				 enum channel_syntax syntax, char *buf,
				 size_t size);
bool channel_setting_given(const struct channel_spec *spec,
			   const struct channel_setting *s);

/*
 * Gives setting s of spec from a command-line value (NULL for a FLAG; a
 * LIST's items comma-separated).  shown is how the user wrote the option
 * ("--csv-header", "-o csv_header"), for messages.  Returns 0; EINVAL
 * with one line in err; or ENOMEM.
 */
int channel_setting_parse(const struct channel_setting *s, const char *text,
			  const char *shown, struct channel_spec *spec,
			  char *err, size_t errlen);
/*
 * The same from a config's values: an ENUM's or FLAG's word (exact, or
 * any case with config_any_case), an INTEGER's number or none_word, a
 * STRING, a LIST's next item.  For channel_setting_set_word() on an
 * INTEGER only none_word is a word.  The error names the field and
 * echoes the value (cut to a few dozen bytes).
 */
int channel_setting_set_word(const struct channel_setting *s, const char *word,
			     struct channel_spec *spec, char *err,
			     size_t errlen);
int channel_setting_set_integer(const struct channel_setting *s, int64_t v,
				struct channel_spec *spec, char *err,
				size_t errlen);
/* "FIELD must be ..." for a config value of the wrong JSON type, given
 * as what it is ("a string", "an object"). */
int channel_setting_bad_type(const struct channel_setting *s, const char *what,
			     char *err, size_t errlen);

/*
 * Once every setting is in: the settings checked together (what needs
 * what, named in syntax's words) and what follows from them filled in
 * (shuffle, ContentType's conversion).  0, or EINVAL with one line in err.
 */
int channel_spec_check(struct channel_spec *spec, enum channel_syntax syntax,
		       char *err, size_t errlen);

/* The default of s as --help and the documents say it ("" when none). */
const char *channel_setting_default_doc(const struct channel_setting *s);

/*
 * The rows (bit i: channel_settings[i]) a channel of spec's data type
 * takes: every row but those a rule ties to other data types
 * (--attribute-names: augmented manifests only).
 */
uint32_t channel_spec_applicable(const struct channel_spec *spec);

/*
 * The given settings of src onto dst, copied (dst's own are replaced);
 * only those of types allowed by the mask of setting rows (bit i: row i).
 * 0 or ENOMEM.
 */
int channel_spec_copy_settings(struct channel_spec *dst,
			       const struct channel_spec *src, uint32_t rows);

/*
 * A channel URI's kind from its scheme ("s3://", "manifest+s3://",
 * "augmented+s3://": the data type row's command-line words); *s3uri
 * points into uri at "s3://".  Returns false (*s3uri = uri) when uri
 * starts with none of them.
 */
bool channel_uri_kind(const char *uri, enum channel_data_type *type,
		      const char **s3uri);

/* This host's place among the training hosts: index < count. */
struct channel_host {
	unsigned index;
	unsigned count; /* >= 1 */
};

/* ---- channel/channel.c, start.c and reader.c: a channel's epochs ---- */

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
void channel_fault_in(struct channel *ch);
/*
 * The byte size of an epoch, when known (the listing or plan complete,
 * no stage of unknown output size such as gzip); *size is 0 otherwise.
 */
bool channel_epoch_size(struct channel *ch, unsigned epoch, uint64_t *size);
/*
 * Prefetches epoch's head: starts fetching its first bytes (min(the
 * cache's window, a quarter of the budget); with a shuffle the objects it
 * starts with) so that its first read finds them in memory.  Never evicts
 * what a reader needs (prefetch admission); what it fetches stays unread
 * until a reader passes it.  Does nothing for an epoch already opened, or
 * older than one prefetched already; a call for the same epoch tops up
 * what the budget or the listing cut short before.  Call while epoch - 1
 * drains (a reader near its end, at its end, or releasing it), only for
 * epochs that will exist (--epochs).  Does not block.
 */
void channel_prefetch_epoch(struct channel *ch, unsigned epoch);
/* What a channel holds for its listing, outside the cache's budget. */
struct channel_stats {
	uint64_t objects; /* listed so far (a manifest: its entries) */
	uint64_t bytes;	  /* the catalog, the plans and the listing's
			     segments; a record shuffle's index and pools */
};

void channel_get_stats(struct channel *ch, struct channel_stats *out);
/* Call after the store below the cache is destroyed. */
void channel_destroy(struct channel *ch);

/* ---- channel/tree.c: a FastFile channel, each object a file ---- */

/*
 * The directory tree of a FastFile channel (--input-mode fastfile), once
 * started; NULL for a Pipe channel.  Its nodes are numbers: 0 is the
 * channel's own directory.  Nothing here asks S3: the tree is an index
 * over the listing.
 */
struct channel_tree *channel_tree(struct channel *ch);

struct channel_tree_attr {
	bool dir;
	uint64_t parent; /* a directory's; the channel's own is its own */
	uint64_t size;	 /* a file's, as listed */
	int64_t mtime;	 /* a file's LastModified (seconds), 0: unknown */
};

/* name in directory dir: 0 and *node, ENOENT, or ENOTDIR. */
int channel_tree_lookup(const struct channel_tree *t, uint64_t dir,
			const char *name, uint64_t *node);
/* 0, or ENOENT when there is no such node. */
int channel_tree_attr(const struct channel_tree *t, uint64_t node,
		      struct channel_tree_attr *out);
/*
 * One entry of a directory: name[0, len) (not NUL-terminated), its node,
 * and the cookie that resumes the listing after it.  Return false to
 * stop.
 */
typedef bool channel_tree_emit_fn(void *arg, const char *name, size_t len,
				  uint64_t node, uint64_t next);
/*
 * The entries of dir from cookie on (0: the first) until emit says stop,
 * in the byte order of the paths under dir (a folder comes where its first
 * file does: "sub-x" before "sub", whose files are "sub/..."); cookies
 * stay valid for the life of the tree.  0 or ENOTDIR.
 */
int channel_tree_list(const struct channel_tree *t, uint64_t dir,
		      uint64_t cookie, channel_tree_emit_fn *emit, void *arg);
/* Files in the tree. */
size_t channel_tree_files(const struct channel_tree *t);
/*
 * The order file of epoch: every file's path (from the channel's
 * directory), one a line, in the order epoch reads them (name order,
 * shuffled with the channel's seed and epoch as Pipe epochs are).  *text
 * is malloc'd.  From now on the tree follows this order: opens that move
 * along it have the files after them prefetched.  0 or ENOMEM.
 */
int channel_tree_order(struct channel_tree *t, unsigned epoch, char **text,
		       size_t *len);
/* The size of every epoch's order file (the same files, in another
 * order). */
uint64_t channel_tree_order_size(const struct channel_tree *t);

struct channel_tree_stats {
	uint64_t opens; /* files opened */
	/* opens of a file the order followed had prefetched (or started
	 * to) */
	uint64_t opens_prefetched;
	uint64_t orders;     /* order files taken */
	uint64_t prefetched; /* files prefetched along an order */
	/* files along it that no open took, given up once the opens went
	 * a prefetch window's bytes past them */
	uint64_t released;
};

void channel_tree_get_stats(struct channel_tree *t,
			    struct channel_tree_stats *out);

/* A file of a tree, open: reads at any offset. */
struct channel_file *channel_file_open(struct channel_tree *t, uint64_t node);
void channel_file_close(struct channel_file *f);
uint64_t channel_file_size(const struct channel_file *f);

/* Bytes a file read returns, pinned until channel_file_view_release(). */
struct channel_file_view {
	const struct iovec *iov; /* count entries, bytes in all */
	int count;
	size_t bytes;
	char *copy; /* owned, when the blocks could not be pinned at once */
	struct iovec one;
	struct cache_view cache;
};

/*
 * Reads size bytes at offset, all of them unless the file ends first (a
 * short read would tell a page cache the file is shorter).  0, EIO
 * (logged), or another errno; the view must be released even on error.
 */
int channel_file_read(struct channel_file *f, uint64_t offset, size_t size,
		      struct channel_file_view *view);
void channel_file_view_release(struct channel_file *f,
			       struct channel_file_view *view);

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

/*
 * Descriptors (memfds that the mount's keeper holds, fs/keeper.h): fd,
 * where a catalog listed whole (a shuffle, a FastFile tree) is written
 * once listed, and read back at channel_start() instead of listing when
 * it holds one (a worker that replaces another starts without a LIST);
 * order_fd, where each shuffled epoch's order is kept, and taken by the
 * next worker instead of shuffling again.  Either may be -1.  Call before
 * channel_start(); they stay the caller's.
 */
void channel_set_handover(struct channel *ch, int fd, int order_fd);
/*
 * A memfd the keeper holds (or -1) where the record shuffle's index is
 * kept for the next worker, which takes it instead of reading the channel
 * again (when its objects are the same).  Before the first open; it stays
 * the caller's.
 */
void channel_set_records_fd(struct channel *ch, int fd);
/*
 * Two points (struct cache_resume, in memory the keeper holds) where a
 * key-order epoch's listing can go on from, for a worker that takes over
 * a reader deep in an epoch: it lists on from there, not from the start.
 * The points there now (a worker before this one) are taken once each;
 * the channel's epochs write theirs.  Call before channel_start().
 */
void channel_set_resume(struct channel *ch, struct cache_resume *slots);

/* A sequential reader of one epoch.  NULL and errno on failure. */
struct channel_reader *channel_reader_open(struct channel *ch, unsigned epoch);
/* The same, its first read at offset (a reader another worker had): a
 * channel whose bytes are its objects' (no gzip, no conversion) starts
 * there without reading what comes before. */
struct channel_reader *channel_reader_open_at(struct channel *ch,
					      unsigned epoch, uint64_t offset);
/* The same for a reader that starts at offset and reads on from there
 * (a resume file): a shuffled prefix's epoch places it from its plan's
 * index, without adding the entries before it. */
struct channel_reader *
channel_reader_open_from(struct channel *ch, unsigned epoch, uint64_t offset);
/*
 * A reader of epoch from where its record number record begins (from 0;
 * channel_record_format() says what a record is), *start that offset:
 * the epoch's end when it has fewer records (the reader then reads
 * nothing).  The records before it are streamed without being delivered.
 * NULL and errno: EINVAL when the channel has no records, EIO when they
 * are malformed (logged, naming the object and the offset), ENOMEM.
 */
struct channel_reader *channel_reader_open_record(struct channel *ch,
						  unsigned epoch,
						  uint64_t record,
						  uint64_t *start);
void channel_reader_close(struct channel_reader *r);
/* The offset the next sequential read starts at. */
uint64_t channel_reader_position(struct channel_reader *r);
/*
 * True once r is within one prefetch window of its epoch's end (when the
 * size is known: no gzip) or a read found the end: the time to prefetch the
 * next epoch.
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
