/*
 * channel rows: CSV and LibSVM text to framed protobuf Records, one thread.
 *
 * The grammar is in channel/convert.h.  Each row is scanned once: fields
 * are found and parsed as the scan goes (a run of plain numbers in one
 * call, util_scan_float32_fields; anything else a field at a time), the
 * values gathered in a growing array, then packed (channel/record.c).  A bad
 * row is found the same way and skipped to its end with row_end(), the one
 * function that says where a row ends, which channel_rows_complete() (the
 * converter's batch cuts) uses too, so both always agree.
 */
#include "config.h"

#include "channel/convert.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "channel/record.h"
#include "util/float.h"

#define FIELD_SHOWN 40 /* bytes of a bad field quoted in messages */

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/*
 * Where the CSV row starting at p ends: just past its LF, or NULL when
 * [p, end) holds no LF that ends it (a quoted field may hold LFs).
 */
static const char *csv_row_end(const char *p, const char *end)
{
	while (p < end) {
		if (*p == '"') { /* a quoted field: to its closing quote */
			p++;
			for (;;) {
				const char *q =
				    memchr(p, '"', (size_t)(end - p));

				if (!q)
					return NULL;
				if (q + 1 < end && q[1] == '"') {
					p = q + 2; /* a doubled quote */
					continue;
				}
				if (q + 1 == end)
					return NULL; /* "" may follow */
				p = q + 1;
				break;
			}
		}
		/* the unquoted rest of the field */
		while (p < end && *p != ',' && *p != '\n')
			p++;
		if (p == end)
			return NULL;
		if (*p == '\n')
			return p + 1;
		p++; /* a comma: the next field */
	}
	return NULL;
}

static const char *row_end(enum channel_convert_format format, const char *p,
			   const char *end)
{
	const char *lf;

	if (format == CHANNEL_CONVERT_CSV)
		return csv_row_end(p, end);
	lf = memchr(p, '\n', (size_t)(end - p));
	return lf ? lf + 1 : NULL;
}

size_t channel_rows_complete(enum channel_convert_format format,
			     const char *text, size_t len)
{
	const char *p = text, *end = text + len, *last = text;

	if (format != CHANNEL_CONVERT_CSV || !memchr(text, '"', len)) {
		const char *lf = memrchr(text, '\n', len);

		return lf ? (size_t)(lf + 1 - text) : 0;
	}
	for (;;) {
		const char *next = row_end(format, p, end);

		if (!next)
			break;
		last = p = next;
	}
	return (size_t)(last - text);
}

/* Whether [p, end) holds blanks only (a CR too: a CRLF row's end). */
static bool blank_row(const char *p, const char *end)
{
	for (; p < end; p++) {
		if (!is_blank(*p) && *p != '\r' && *p != '\n')
			return false;
	}
	return true;
}

size_t channel_rows_columns(const char *text, size_t len)
{
	const char *p = text, *end = text + len;

	while (p < end) {
		const char *next = csv_row_end(p, end);
		const char *stop = next ? next : end;
		size_t n = 1;
		bool quoted = false;

		if (blank_row(p, stop)) {
			p = stop;
			continue;
		}
		for (const char *q = p; q < stop; q++) {
			if (*q == '"' && (q == p || q[-1] == ',' || quoted))
				quoted = !quoted;
			else if (*q == ',' && !quoted)
				n++;
		}
		return n;
	}
	return 0;
}

/* ---- one row ---- */

struct row_state {
	const struct channel_convert_conf *conf;
	size_t columns;
	float *values; /* grows */
	uint64_t *keys;
	size_t cap;
	char *why;
	size_t whylen;
};

__attribute__((format(printf, 2, 3))) static int bad(struct row_state *st,
						     const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(st->why, st->whylen, fmt, ap);
	va_end(ap);
	return EINVAL;
}

/* The field as printable text, at most FIELD_SHOWN bytes. */
static const char *shown(const char *p, size_t len, char *buf, size_t buflen)
{
	size_t n = len < FIELD_SHOWN ? len : FIELD_SHOWN;

	if (n >= buflen)
		n = buflen - 1;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)p[i];

		buf[i] = c < 0x20 || c == 0x7f ? '?' : (char)c;
	}
	buf[n] = '\0';
	if (n < len && n + 4 < buflen)
		memcpy(buf + n, "...", 4);
	return buf;
}

static int grow(struct row_state *st, size_t need)
{
	size_t cap = st->cap ? st->cap : 64;
	float *v;
	uint64_t *k;

	if (need <= st->cap)
		return 0;
	while (cap < need)
		cap *= 2;
	v = realloc(st->values, cap * sizeof(*v));
	if (!v)
		return ENOMEM;
	st->values = v;
	k = realloc(st->keys, cap * sizeof(*k));
	if (!k)
		return ENOMEM;
	st->keys = k;
	st->cap = cap;
	return 0;
}

/* One number, with what is wrong with it said for the field's name. */
static int number(struct row_state *st, const char *p, size_t len,
		  const char *what, uint64_t which, float *out)
{
	char buf[FIELD_SHOWN + 8], name[64];
	int rc = EINVAL;

	if (len > 0) {
		rc = util_parse_float32(p, len, out);
		if (!rc)
			return 0;
	}
	if (which == UINT64_MAX)
		snprintf(name, sizeof(name), "%s", what);
	else
		snprintf(name, sizeof(name), "%s %llu", what,
			 (unsigned long long)which);
	if (len == 0)
		return bad(st, "%s is empty", name);
	if (rc == EDOM)
		return bad(st, "%s is '%s': only finite numbers convert", name,
			   shown(p, len, buf, sizeof(buf)));
	if (rc == ERANGE)
		return bad(st, "%s ('%s') is out of float32's range", name,
			   shown(p, len, buf, sizeof(buf)));
	return bad(st, "%s ('%s') is not a number", name,
		   shown(p, len, buf, sizeof(buf)));
}

/*
 * The unquoted field at p (up to a comma, a LF or end) as a number, in one
 * pass when it is one: *p moves to its end.  Otherwise the field is found
 * first and number() says what is wrong with it.
 */
static int csv_number(struct row_state *st, const char **p, const char *end,
		      size_t col)
{
	const char *f = *p, *fe;
	size_t used;

	while (f < end && is_blank(*f))
		f++;
	if (util_scan_float32(f, (size_t)(end - f), &st->values[col], &used) ==
	    0) {
		fe = f + used;
		while (fe < end && (is_blank(*fe) || *fe == '\r'))
			fe++;
		if (fe == end || *fe == ',' || *fe == '\n') {
			*p = fe;
			return 0;
		}
	}
	fe = f;
	while (fe < end && *fe != ',' && *fe != '\n')
		fe++;
	*p = fe;
	while (fe > f && (is_blank(fe[-1]) || fe[-1] == '\r'))
		fe--;
	return number(st, f, (size_t)(fe - f), "column", col, &st->values[col]);
}

/*
 * The CSV row at p: values[0..*n) gets its fields in order, *next where
 * the next row starts (past the LF, or end).  On a bad row *next is not
 * set: row_end() finds it.
 */
static int csv_fields(struct row_state *st, const char *p, const char *end,
		      size_t *n, const char **next)
{
	size_t col = 0;

	for (;;) {
		const char *f, *fe, *q;
		size_t k;
		int rc;

		if (col >= st->cap && grow(st, col + 1))
			return ENOMEM;
		k = util_scan_float32_fields(p, end, ',', &st->values[col],
					     st->cap - col, &q);
		if (k > 0) { /* the plain numbers, as many as come */
			col += k;
			p = q;
			if (p < end && *p == '\r') /* (a CR LF, the run says) */
				p++;
			if (p >= end || *p == '\n')
				break;
			p++; /* the comma */
			continue;
		}
		if (p < end && *p == '"') {
			f = ++p;
			fe = memchr(p, '"', (size_t)(end - p));
			if (!fe)
				return bad(st,
					   "column %zu: a quoted field is not "
					   "closed",
					   col);
			if (fe + 1 < end && fe[1] == '"')
				return bad(st,
					   "column %zu is not a number (it "
					   "holds a quote)",
					   col);
			p = fe + 1;
			if (p < end && *p == '\r' && p + 1 < end &&
			    p[1] == '\n')
				p++;
			if (p < end && *p != ',' && *p != '\n')
				return bad(st,
					   "column %zu: text after a quoted "
					   "field's closing quote",
					   col);
			rc = number(st, f, (size_t)(fe - f), "column", col,
				    &st->values[col]);
		} else {
			rc = csv_number(st, &p, end, col);
		}
		if (rc)
			return rc;
		col++;
		if (p >= end || *p == '\n')
			break;
		p++; /* the comma */
	}
	*n = col;
	*next = p < end ? p + 1 : end;
	return 0;
}

static int csv_row(struct row_state *st, const char *p, const char *end,
		   struct util_buf *out, const char **next)
{
	const struct channel_convert_conf *conf = st->conf;
	struct channel_record rec = {0};
	float label;
	size_t n = 0;
	int rc;

	rc = csv_fields(st, p, end, &n, next);
	if (rc)
		return rc;
	if (n != st->columns && conf->feature_dim)
		return bad(st, "%zu columns where the configuration says %zu",
			   n, st->columns);
	if (n != st->columns)
		return bad(st, "%zu columns where the first row has %zu", n,
			   st->columns);
	rec.values = st->values;
	rec.count = n;
	if (conf->label_column != CHANNEL_LABEL_NONE) {
		size_t lc = (size_t)conf->label_column;

		if (lc >= n)
			return bad(st, "no label column %zu (%zu columns)", lc,
				   n);
		label = st->values[lc];
		if (lc == 0)
			rec.values = st->values + 1;
		else
			memmove(st->values + lc, st->values + lc + 1,
				(n - lc - 1) * sizeof(*st->values));
		rec.count = n - 1;
		rec.label = &label;
	}
	return channel_record_append(out, &rec);
}

/* The next blank-separated token of [*p, end) (a '#' ends the row). */
static bool token(const char **p, const char *end, const char **t, size_t *len)
{
	const char *q = *p;

	while (q < end && (is_blank(*q) || *q == '\r' || *q == '\n'))
		q++;
	if (q == end || *q == '#') {
		*p = end;
		return false;
	}
	*t = q;
	while (q < end && !is_blank(*q) && *q != '\r' && *q != '\n')
		q++;
	*len = (size_t)(q - *t);
	*p = q;
	return true;
}

static const uint64_t no_keys[1];

static int libsvm_row(struct row_state *st, const char *p, const char *end,
		      struct util_buf *out)
{
	struct channel_record rec = {0};
	char buf[FIELD_SHOWN + 8];
	const char *t;
	size_t len, n = 0;
	float label;
	int rc;

	if (!token(&p, end, &t, &len))
		return ENODATA; /* a comment line: no row */
	rc = number(st, t, len, "the label", UINT64_MAX, &label);
	if (rc)
		return rc;
	while (token(&p, end, &t, &len)) {
		const char *colon = memchr(t, ':', len);
		uint64_t idx = 0;

		if (!colon || colon == t)
			return bad(st, "'%s' is not INDEX:VALUE",
				   shown(t, len, buf, sizeof(buf)));
		if (colon - t == 3 && memcmp(t, "qid", 3) == 0)
			continue;
		for (const char *d = t; d < colon; d++) {
			if (*d < '0' || *d > '9' || idx > (UINT64_MAX - 9) / 10)
				return bad(st,
					   "'%s': the index is not a number",
					   shown(t, len, buf, sizeof(buf)));
			idx = idx * 10 + (uint64_t)(*d - '0');
		}
		if (idx >= st->conf->feature_dim)
			return bad(st,
				   "index %llu is past the feature dimension "
				   "(%llu)",
				   (unsigned long long)idx,
				   (unsigned long long)st->conf->feature_dim);
		if (n >= st->cap && grow(st, n + 1))
			return ENOMEM;
		rc = number(st, colon + 1, len - (size_t)(colon + 1 - t),
			    "the value of index", idx, &st->values[n]);
		if (rc)
			return rc;
		st->keys[n++] = idx;
	}
	rec.values = st->values;
	rec.count = n;
	rec.keys = st->keys ? st->keys : no_keys; /* sparse, even empty */
	rec.dim = st->conf->feature_dim;
	rec.label = &label;
	return channel_record_append(out, &rec);
}

/* The marks at or before p (text's offset): where out stood when a row
 * began there, SIZE_MAX when a row runs across it. */
static void marks_pass(const struct channel_rows_marks *m, size_t *done,
		       size_t p, size_t out_len)
{
	for (; m && *done < m->count && m->at[*done] <= p; (*done)++)
		m->out[*done] = m->at[*done] == p ? out_len : SIZE_MAX;
}

int channel_rows_convert(const struct channel_convert_conf *conf,
			 size_t columns, const char *text, size_t len,
			 struct util_buf *out, struct channel_rows_result *res)
{
	return channel_rows_convert_marked(conf, columns, text, len, NULL, out,
					   res);
}

int channel_rows_convert_marked(const struct channel_convert_conf *conf,
				size_t columns, const char *text, size_t len,
				const struct channel_rows_marks *marks,
				struct util_buf *out,
				struct channel_rows_result *res)
{
	struct row_state st = {.conf = conf, .columns = columns};
	const char *p = text, *end = text + len;
	char later[sizeof(res->why)]; /* why for bad rows after the first */
	size_t marked = 0;
	int rc = 0;

	memset(res, 0, sizeof(*res));
	res->bad_at = SIZE_MAX;
	st.why = res->why;
	st.whylen = sizeof(res->why);
	while (p < end) {
		const char *next = NULL, *q = p;

		marks_pass(marks, &marked, (size_t)(p - text), out->len);

		/* a blank row, without looking further */
		while (q < end && (is_blank(*q) || *q == '\r'))
			q++;
		if (q == end || *q == '\n') {
			p = q < end ? q + 1 : end;
			continue;
		}
		if (conf->format == CHANNEL_CONVERT_CSV) {
			rc = csv_row(&st, p, end, out, &next);
		} else {
			next = row_end(conf->format, p, end);
			if (!next)
				next = end;
			rc = libsvm_row(&st, p, next, out);
		}
		if (rc == ENODATA) {
			rc = 0;
		} else if (rc == EINVAL) {
			/* (a bad row appends nothing) */
			if (res->bad_at == SIZE_MAX) {
				res->bad_at = (size_t)(p - text);
				st.why = later;
			}
			if (!conf->bad_row_skip)
				break;
			res->skipped++;
			rc = 0;
			next = row_end(conf->format, p, end);
			if (!next)
				next = end;
		} else if (rc) {
			break;
		} else {
			res->rows++;
		}
		p = next;
	}
	/* (marks at the end: out is whole there; past a failure: unknown) */
	if (!rc)
		marks_pass(marks, &marked, len, out->len);
	for (; marks && marked < marks->count; marked++)
		marks->out[marked] = SIZE_MAX;
	free(st.values);
	free(st.keys);
	return rc;
}
