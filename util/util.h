/*
 * util: the few helpers that fs/, cache/ and s3/ all need.
 *
 * Logging goes to stderr, one line a message ("prog: message", written
 * in one call so that threads' lines do not mix), until
 * util_log_use_syslog() is called (the daemon switches once it detaches).
 * Each message is cleaned as util_clean_line() does, since names in it
 * may come from outside.  Messages must never carry secrets.
 * util_buf is a growable byte buffer with a hard upper bound, used for HTTP
 * bodies and strings built piecewise; it always keeps a NUL after the data.
 * util_copy_to_cold() fills memory that is read much later (util/copy.c).
 */
#ifndef S3PIPE_UTIL_H
#define S3PIPE_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <sys/types.h>

struct iovec;

enum util_log_level {
	UTIL_LOG_ERROR = 0,
	UTIL_LOG_WARN = 1,
	UTIL_LOG_INFO = 2,
	UTIL_LOG_DEBUG = 3,
};

void util_log_set_level(enum util_log_level level);
/* The program name that starts each line on stderr and names the syslog
 * ident ("s3pipe" unless set); prog must outlive the logging. */
void util_log_set_prog(const char *prog);
enum util_log_level util_log_get_level(void);
/* Send further messages to syslog (facility daemon) instead of stderr. */
void util_log_use_syslog(void);
/* A daemon's detaching: stdin, stdout and stderr on /dev/null, logging to
 * syslog, the working directory "/". */
void util_daemon_quiet(void);
void util_log(enum util_log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#define util_error(...) util_log(UTIL_LOG_ERROR, __VA_ARGS__)
#define util_warn(...)	util_log(UTIL_LOG_WARN, __VA_ARGS__)
#define util_info(...)	util_log(UTIL_LOG_INFO, __VA_ARGS__)
#define util_debug(...)                                                        \
	do {                                                                   \
		if (util_log_get_level() >= UTIL_LOG_DEBUG)                    \
			util_log(UTIL_LOG_DEBUG, __VA_ARGS__);                 \
	} while (0)

/*
 * memcpy() for bulk fills of memory that will not be read again soon (cache
 * blocks): streaming stores where the CPU has them.  Same contract as
 * memcpy() (no overlap), and util_copy_publish() must run after the last
 * copy and before another thread may read the memory.
 */
void util_copy_to_cold(void *dest, const void *src, size_t len);
void util_copy_publish(void);

/*
 * In place, makes s one line for users: control characters (C0, DEL, C1,
 * U+2028/9) and bytes that are not well-formed UTF-8 become '?'.
 */
void util_clean_line(char *s);

/* Whether s is well-formed UTF-8 (RFC 3629). */
bool util_utf8_valid(const char *s);
/* The value of a lowercase hex digit, or -1 (upper case too: it would not
 * print back the same). */
int util_hex_digit(char c);

/*
 * Writes one line for users into err (when err and errlen are set), cleaned
 * by util_clean_line() since values may come from outside, and returns rc:
 * for "return util_fail(err, errlen, EINVAL, ...)".  A message longer than
 * errlen ends in "…" (UTF-8), cut between characters.
 */
int util_fail(char *err, size_t errlen, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
int util_vfail(char *err, size_t errlen, int rc, const char *fmt, va_list ap)
    __attribute__((format(printf, 4, 0)));

/* Thread-safe description of an errno value, written into buf. */
const char *util_strerror(int err, char *buf, size_t len);

/*
 * s for echoing an outside value in a message: s itself when shorter than
 * size, else its first bytes (whole UTF-8 sequences) and "..." in buf
 * (size > 4 bytes).  Returns s or buf.
 */
const char *util_shorten(const char *s, char *buf, size_t size);

/* In a[0..n) sorted ascending (n >= 1): the last i with a[i] <= x (0 when
 * there is none), by binary search. */
size_t util_last_at_most(const uint64_t *a, size_t n, uint64_t x);

#define UTIL_HELP_COLUMN 28 /* where --help text starts */
#define UTIL_HELP_WIDTH	 79 /* and where it wraps */

/*
 * One row of a --help: left ("      --cache-size SIZE"), then help from
 * UTIL_HELP_COLUMN (on the next line when left reaches it), wrapped at
 * words before UTIL_HELP_WIDTH.
 */
void util_help_row(FILE *out, const char *left, const char *help);

struct util_buf {
	char
	    *data; /* owned; NUL-terminated after len bytes; NULL while empty */
	size_t len;
	size_t cap;
	size_t max; /* appends past this fail with EFBIG; 0 = no bound */
};

void util_buf_init(struct util_buf *b, size_t max);
/* Returns 0, ENOMEM, or EFBIG when the bound would be passed. */
int util_buf_append(struct util_buf *b, const void *data, size_t len);
int util_buf_append_str(struct util_buf *b, const char *s);
/*
 * Room for len more bytes at the end, to write in place and then
 * util_buf_commit(): a pointer to it, or NULL with errno ENOMEM or EFBIG.
 * The pointer is valid until the next call that grows the buffer.
 */
char *util_buf_reserve(struct util_buf *b, size_t len);
/* Adds len bytes written at util_buf_reserve()'s pointer (len at most
 * what was reserved). */
void util_buf_commit(struct util_buf *b, size_t len);
int util_buf_printf(struct util_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void util_buf_reset(struct util_buf *b);
/* Hands the data to the caller (who frees it) and empties the buffer. */
char *util_buf_take(struct util_buf *b);
void util_buf_free(struct util_buf *b);

/*
 * Parses a byte size: digits with an optional K, M, G or T suffix (powers
 * of 1024, case-insensitive, an optional trailing "B" or "iB").  Returns 0 or
 * EINVAL / ERANGE.
 */
int util_parse_size(const char *s, uint64_t *out);
/* Parses a whole decimal number within [min, max].  0, EINVAL or ERANGE. */
int util_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out);

/* Monotonic clock in nanoseconds. */
uint64_t util_now_ns(void);

/* FNV-1a, 64 bits: h (UTIL_FNV1A_START for a new hash) extended by
 * p[0..len). */
#define UTIL_FNV1A_START 0xcbf29ce484222325ULL
uint64_t util_fnv1a(uint64_t h, const void *p, size_t len);

/* All of data to fd (short writes and EINTR retried): 0 or an errno. */
int util_write_all(int fd, const void *data, size_t len);
/* All of iov[0..count) to fd, in order, the same way (iov is left as it
 * is): 0 or an errno. */
int util_writev_all(int fd, const struct iovec *iov, int count);

/*
 * Reading to the end (util/file.c).  util_buf_read() appends what one
 * read() of fd gives to b (never more than b->max allows): the bytes read,
 * 0 at the end of the file, or -1 with errno: read()'s (EINTR and EAGAIN
 * included), ENOMEM, or EFBIG when fd holds more than b->max allows.
 * util_buf_read_all() repeats it to the end of the file, EINTR retried:
 * 0 or an errno, b holding what was read either way.  Neither
 * reallocates b while b->cap > b->max: a buffer allocated whole up front
 * (s3's secret buffers) keeps its one allocation.
 */
ssize_t util_buf_read(struct util_buf *b, int fd);
int util_buf_read_all(struct util_buf *b, int fd);

/*
 * The whole file at path, at most max bytes (0 < max < SIZE_MAX), into
 * *out (owned by the caller: free(); NUL-terminated after *len bytes,
 * also when empty) and *len.  Regular files, pipes and /proc files alike.
 * 0, EFBIG when it holds more than max bytes, ENOMEM, EINVAL for max, or
 * open()'s or read()'s errno (ENOENT, EACCES, EISDIR, ...); on error *out
 * is NULL and *len 0.
 */
int util_read_file(const char *path, size_t max, char **out, size_t *len);

/*
 * Replacing a file whole (util/file.c): begin makes a temporary file
 * beside path, mode 0600 (fchmod r->fd for another), open as r->fd for
 * the caller to write; commit syncs it, renames it over path and syncs
 * the directory; abort (or a failed commit) removes it.  Each returns 0
 * or an errno; after commit or abort r holds nothing.
 */
struct util_replace {
	char *path; /* owned */
	char *tmp;  /* owned: the temporary file's name */
	int fd;
};

int util_replace_begin(struct util_replace *r, const char *path);
int util_replace_commit(struct util_replace *r);
void util_replace_abort(struct util_replace *r);
/* The file at path replaced whole by text and a newline, with mode (as
 * chmod takes it): 0 or an errno. */
int util_write_text_file(const char *path, const char *text, unsigned mode);
/* fsync() of the directory dir, so that a rename or an unlink in it
 * lasts: 0 or an errno. */
int util_sync_dir(const char *dir);

/* strdup that returns NULL for NULL. */
char *util_strdup0(const char *s);

/*
 * The test hook of every module: functions marked UNITTEST are static in
 * the product; the unit tests compile the module's sources with
 * -DUNITTESTS, which makes them visible (declared in the module's header
 * or internal header under #ifdef UNITTESTS).
 */
#ifdef UNITTESTS
#define UNITTEST
#else
#define UNITTEST static
#endif

#endif
