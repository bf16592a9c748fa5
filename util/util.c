/*
 * util: logging, bounded growable buffers, number parsing.  See util.h.
 */
#include "config.h"

#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

static enum util_log_level log_level = UTIL_LOG_INFO;
static bool log_syslog;
static const char *log_prog = "s3pipe";

void util_log_set_prog(const char *prog)
{
	log_prog = prog;
}

void util_log_set_level(enum util_log_level level)
{
	log_level = level;
}

enum util_log_level util_log_get_level(void)
{
	return log_level;
}

void util_log_use_syslog(void)
{
	openlog(log_prog, LOG_PID, LOG_DAEMON);
	log_syslog = true;
}

void util_daemon_quiet(void)
{
	int null = open("/dev/null", O_RDWR);

	if (null >= 0) {
		dup2(null, STDIN_FILENO);
		dup2(null, STDOUT_FILENO);
		dup2(null, STDERR_FILENO);
		if (null > STDERR_FILENO)
			close(null);
	}
	util_log_use_syslog();
	if (chdir("/") != 0) {
		/* harmless: nothing is opened by a relative name */
	}
}

void util_log(enum util_log_level level, const char *fmt, ...)
{
	static const int syslog_prio[] = {LOG_ERR, LOG_WARNING, LOG_INFO,
					  LOG_DEBUG};
	char line[2048];
	va_list ap;

	if (level > log_level)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	util_clean_line(line); /* names from outside: one line, whatever */
	if (log_syslog)
		syslog(syslog_prio[level], "%s", line);
	else
		fprintf(stderr, "%s: %s\n", log_prog, line);
}

const char *util_strerror(int err, char *buf, size_t len)
{
	/* GNU strerror_r may return a static string instead of filling buf. */
	return strerror_r(err, buf, len);
}

void util_buf_init(struct util_buf *b, size_t max)
{
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
	b->max = max;
}

char *util_buf_reserve(struct util_buf *b, size_t len)
{
	size_t need = b->len + len + 1;

	if (need < b->len || (b->max && b->len + len > b->max)) {
		errno = EFBIG;
		return NULL;
	}
	if (need > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		char *p;

		while (cap < need)
			cap *= 2;
		p = realloc(b->data, cap);
		if (!p) {
			errno = ENOMEM;
			return NULL;
		}
		b->data = p;
		b->cap = cap;
	}
	return b->data + b->len;
}

void util_buf_commit(struct util_buf *b, size_t len)
{
	b->len += len;
	b->data[b->len] = '\0';
}

int util_buf_append(struct util_buf *b, const void *data, size_t len)
{
	char *room = util_buf_reserve(b, len);

	if (!room)
		return errno;
	if (len)
		memcpy(room, data, len);
	util_buf_commit(b, len);
	return 0;
}

int util_buf_append_str(struct util_buf *b, const char *s)
{
	return util_buf_append(b, s, strlen(s));
}

/*
 * Length of the well-formed UTF-8 sequence at s (RFC 3629: no overlong
 * forms, no surrogates, nothing past U+10FFFF), its code point in *cp; 0
 * when s does not start one.  Stops at a NUL.
 */
static size_t utf8_seq(const unsigned char *s, uint32_t *cp)
{
	uint32_t v;
	uint32_t min;
	size_t len;
	size_t i;

	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	}
	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		len = 2;
		v = s[0] & 0x1f;
		min = 0x80;
	} else if ((s[0] & 0xf0) == 0xe0) {
		len = 3;
		v = s[0] & 0x0f;
		min = 0x800;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		len = 4;
		v = s[0] & 0x07;
		min = 0x10000;
	} else {
		return 0;
	}
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		v = (v << 6) | (s[i] & 0x3f);
	}
	if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
		return 0;
	*cp = v;
	return len;
}

int util_hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

bool util_utf8_valid(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	uint32_t cp;
	size_t len;

	while (*p) {
		len = utf8_seq(p, &cp);
		if (len == 0)
			return false;
		p += len;
	}
	return true;
}

void util_clean_line(char *s)
{
	const unsigned char *in = (const unsigned char *)s;
	unsigned char *out = (unsigned char *)s;
	uint32_t cp;
	size_t len;

	while (*in) {
		len = utf8_seq(in, &cp);
		if (len == 0 || cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) ||
		    cp == 0x2028 || cp == 0x2029) {
			*out++ = '?';
			in += len ? len : 1;
			continue;
		}
		memmove(out, in, len);
		out += len;
		in += len;
	}
	*out = '\0';
}

/* "…" in UTF-8: a message cut to its buffer says so */
#define UTIL_ELLIPSIS "\xe2\x80\xa6"

int util_vfail(char *err, size_t errlen, int rc, const char *fmt, va_list ap)
{
	int n;

	if (!err || errlen == 0)
		return rc;
	n = vsnprintf(err, errlen, fmt, ap);
	if (n >= 0 && (size_t)n >= errlen && errlen > sizeof(UTIL_ELLIPSIS)) {
		size_t cut = errlen - sizeof(UTIL_ELLIPSIS);

		/* back to the start of a character, so none is split */
		while (cut > 0 && ((unsigned char)err[cut] & 0xc0) == 0x80)
			cut--;
		memcpy(err + cut, UTIL_ELLIPSIS, sizeof(UTIL_ELLIPSIS));
	}
	util_clean_line(err);
	return rc;
}

int util_fail(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	rc = util_vfail(err, errlen, rc, fmt, ap);
	va_end(ap);
	return rc;
}

int util_buf_printf(struct util_buf *b, const char *fmt, ...)
{
	char small[256];
	char *big = NULL;
	va_list ap;
	int n;
	int rc;

	va_start(ap, fmt);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0)
		return EINVAL;
	if ((size_t)n < sizeof(small))
		return util_buf_append(b, small, (size_t)n);
	big = malloc((size_t)n + 1);
	if (!big)
		return ENOMEM;
	va_start(ap, fmt);
	vsnprintf(big, (size_t)n + 1, fmt, ap);
	va_end(ap);
	rc = util_buf_append(b, big, (size_t)n);
	free(big);
	return rc;
}

void util_buf_reset(struct util_buf *b)
{
	b->len = 0;
	if (b->data)
		b->data[0] = '\0';
}

char *util_buf_take(struct util_buf *b)
{
	char *p = b->data;

	if (!p)
		p = calloc(1, 1);
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
	return p;
}

void util_buf_free(struct util_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
}

int util_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;
	const char *p = s;

	if (!s || !*s)
		return EINVAL;
	for (; *p; p++) {
		if (*p < '0' || *p > '9')
			return EINVAL;
		if (v > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
			return ERANGE;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	if (v < min || v > max)
		return ERANGE;
	*out = v;
	return 0;
}

int util_parse_size(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	unsigned shift = 0;
	const char *p = s;
	bool digits = false;

	if (!s)
		return EINVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		digits = true;
		if (v > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
			return ERANGE;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	if (!digits)
		return EINVAL;
	switch (*p) {
	case '\0':
		break;
	case 'k':
	case 'K':
		shift = 10;
		break;
	case 'm':
	case 'M':
		shift = 20;
		break;
	case 'g':
	case 'G':
		shift = 30;
		break;
	case 't':
	case 'T':
		shift = 40;
		break;
	case 'b':
	case 'B':
		if (p[1] != '\0')
			return EINVAL;
		break;
	default:
		return EINVAL;
	}
	if (shift) {
		p++;
		if (*p && strcasecmp(p, "b") != 0 && strcasecmp(p, "ib") != 0)
			return EINVAL;
		if (v > (UINT64_MAX >> shift))
			return ERANGE;
		v <<= shift;
	}
	*out = v;
	return 0;
}

size_t util_last_at_most(const uint64_t *a, size_t n, uint64_t x)
{
	size_t lo = 0, hi = n;

	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (a[mid] <= x)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

uint64_t util_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

char *util_strdup0(const char *s)
{
	return s ? strdup(s) : NULL;
}

void util_help_row(FILE *out, const char *left, const char *help)
{
	const int col = UTIL_HELP_COLUMN;
	int pos = (int)strlen(left);
	const char *p = help;

	fputs(left, out);
	if (pos + 2 > col) {
		fprintf(out, "\n%*s", col, "");
	} else {
		fprintf(out, "%*s", col - pos, "");
	}
	pos = col;
	while (*p) {
		size_t word;

		while (*p == ' ')
			p++;
		word = strcspn(p, " ");
		if (word == 0)
			break;
		if (pos > col && pos + 1 + (int)word > UTIL_HELP_WIDTH) {
			fprintf(out, "\n%*s", col, "");
			pos = col;
		} else if (pos > col) {
			fputc(' ', out);
			pos++;
		}
		fwrite(p, 1, word, out);
		pos += (int)word;
		p += word;
	}
	fputc('\n', out);
}

const char *util_shorten(const char *s, char *buf, size_t size)
{
	size_t len = strlen(s);
	size_t cut = size - 4;

	if (len < size)
		return s;
	while (cut > 0 && ((unsigned char)s[cut] & 0xc0) == 0x80)
		cut--;
	memcpy(buf, s, cut);
	memcpy(buf + cut, "...", 4);
	return buf;
}
