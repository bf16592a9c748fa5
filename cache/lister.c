/*
 * cache lister: parallel listing of one prefix by key ranges (lister.h).
 *
 * Ranges are (after, until]: keys greater than after (a start-after; ""
 * for the prefix's start) up to until (NULL: no end), kept in a list in
 * key order.  A range's listing goes page after page with its own
 * continuation token and ends at its first key past until, or at the end
 * of the listing.  Splitting a range hands everything past a split key to
 * a new range; the keys the old one already has are never given away, so
 * every key is listed exactly once.
 *
 * Where to split.  A range with no end (the last) is split where the
 * groups its last key belongs to end, the coarsest first: after
 * "img/n01/0000999" come "img/n02", "img/n01/1", "img/n01/01", ... (the
 * rest of each folder or number block), each a part, skipping the
 * positions where the last key's character is the last one seen there.
 * A range with an end is split evenly between its last key and its end
 * in a window of the key space read as a number whose digits at each
 * position are the characters seen there so far (plus "the key ended"
 * and "past the last"): keys numbered 0000000 to 0699999 split among the
 * digits, not among all of Unicode.  It is split only when the density of
 * what it listed so far says it has SPLIT_PAGES pages a part left, and
 * ranges with an end get the room to split before a range with no end
 * makes more.  Split keys are kept only when strictly between their
 * neighbours, so every key is listed once whatever the estimates say.
 *
 * Threads: pages arrive on the store's thread; the lister's own lock
 * guards the ranges (the catalog is written only there).  Requests are
 * made with the lock held: stores never answer from inside a call.
 */
#include "config.h"

#include "cache/lister.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/internal.h"
#include "util/util.h"

/* parts one answer may split its range into, besides itself */
#define SPLIT_MAX 15
/* pages a part should have ahead of it, at least, by the estimate */
#define SPLIT_PAGES 8
/* keys in the first page of a range made by a split: most such ranges
 * turn out empty in the initial search, and then a small page costs
 * little (its keys are past the range's end) */
#define SPLIT_FIRST_KEYS 100
/* listers at the start; pages a round of the pace counts, at least; how
 * much longer than in the first round requests may take for the listers
 * to go on doubling */
#define PACE_START  2
#define PACE_ROUND  4
#define PACE_SLOWER 1.5
/* keys of each page whose characters join the alphabet (and its last) */
#define ALPHABET_SAMPLES 16

struct run {
	uint32_t first; /* catalog entry */
	uint32_t count;
};

struct range {
	struct range *next; /* in key order */
	char *after;	    /* keys greater than this; "" = the start */
	char *until;	    /* up to this one; NULL = no end */
	char *token;	    /* where its next page starts; NULL = first */
	char *last;	    /* the last key it listed; NULL = none yet */
	bool in_flight;
	bool done;
	unsigned next_keys; /* keys to ask for next; 0 = a full page */
	uint64_t sent_ns;   /* when its request went out */
	bool hungry;	    /* counted in the lister's hungry */
	unsigned depth;	    /* requests in a row that led to this one */
	struct run *runs;
	size_t nruns, cap, emitted;
	struct cache_lister *lister;
};

struct cache_lister {
	struct store *store;
	struct cache_catalog *cat;
	struct cache_lister_conf conf;
	pthread_mutex_t lock;
	pthread_cond_t changed;
	struct range *ranges; /* in key order */
	struct range *emit;   /* the first range not all given positions */
	unsigned in_flight;
	bool stopping;
	/* one range, page after page, keys in whatever order the server
	 * gives them: with max_listers 1, or after a server that does not
	 * list in key order from a start-after (restart: waiting for the
	 * requests in flight before starting again) */
	bool sequential;
	bool restart;
	bool failed;
	bool complete;
	struct store_error error;
	struct cache_alphabet alpha;
	struct cache_lister_stats stats;
	unsigned depth_max;
	/* the pace (pace()): ranges listed at once now, at most max_listers */
	unsigned allowed;
	bool settled;	       /* more did not pay: allowed stays */
	uint64_t round_wait;   /* ns requests of this round took, in all */
	unsigned round_pages;  /* pages answered in this round */
	uint64_t base_latency; /* a request's time in the first round */
	unsigned hungry;       /* ranges with an end and pages to hand out that
				  found no room: ranges with no end wait */
};

void cache_lister_conf_init(struct cache_lister_conf *conf)
{
	conf->max_listers = CACHE_LISTERS_DEFAULT;
	conf->page_keys = 1000;
	conf->first_page_keys = 1000;
	conf->paced = true;
}

/* ---- characters ---- */

/* The code point at *s (advanced past it), or 0xFFFFFFFF for a byte that
 * starts no valid sequence (advanced by one). */
static uint32_t utf8_next(const char **s)
{
	const unsigned char *p = (const unsigned char *)*s;
	uint32_t cp;
	int n;

	if (p[0] < 0x80) {
		*s += 1;
		return p[0];
	}
	if (p[0] >= 0xC2 && p[0] <= 0xDF) {
		n = 1;
		cp = p[0] & 0x1F;
	} else if (p[0] >= 0xE0 && p[0] <= 0xEF) {
		n = 2;
		cp = p[0] & 0x0F;
	} else if (p[0] >= 0xF0 && p[0] <= 0xF4) {
		n = 3;
		cp = p[0] & 0x07;
	} else {
		*s += 1;
		return 0xFFFFFFFF;
	}
	for (int i = 1; i <= n; i++) {
		if ((p[i] & 0xC0) != 0x80) {
			*s += 1;
			return 0xFFFFFFFF;
		}
		cp = cp << 6 | (p[i] & 0x3F);
	}
	*s += n + 1;
	if ((n == 2 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
	    (n == 3 && (cp < 0x10000 || cp > 0x10FFFF)))
		return 0xFFFFFFFF;
	return cp;
}

/* Bytes of the character at s (1 for a byte that starts none). */
static size_t utf8_len(const char *s)
{
	const char *p = s;

	utf8_next(&p);
	return (size_t)(p - s);
}

/* Appends cp (valid, not 0) as UTF-8; returns the bytes written. */
static int utf8_put(char *out, uint32_t cp)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xC0 | cp >> 6);
		out[1] = (char)(0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xE0 | cp >> 12);
		out[1] = (char)(0x80 | (cp >> 6 & 0x3F));
		out[2] = (char)(0x80 | (cp & 0x3F));
		return 3;
	}
	out[0] = (char)(0xF0 | cp >> 18);
	out[1] = (char)(0x80 | (cp >> 12 & 0x3F));
	out[2] = (char)(0x80 | (cp >> 6 & 0x3F));
	out[3] = (char)(0x80 | (cp & 0x3F));
	return 4;
}

/* The character after cp that UTF-8 can hold (U+10FFFF has none). */
static uint32_t next_char(uint32_t cp)
{
	cp++;
	if (cp >= 0xD800 && cp <= 0xDFFF)
		cp = 0xE000;
	return cp > 0x10FFFF ? 0 : cp;
}

static unsigned column(size_t position)
{
	return position < CACHE_ALPHABET_POSITIONS
		   ? (unsigned)position
		   : CACHE_ALPHABET_POSITIONS - 1;
}

/* Index in column col of the first character not below cp. */
static unsigned alphabet_find(const struct cache_alphabet *a, unsigned col,
			      uint32_t cp)
{
	unsigned lo = 0, hi = a->n[col];

	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;

		if (a->cp[col][mid] < cp)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

UNITTEST void alphabet_add_key(struct cache_alphabet *a, const char *name)
{
	for (size_t pos = 0; *name; pos++) {
		uint32_t cp = utf8_next(&name);
		unsigned col = column(pos), n = a->n[col], at;

		if (cp == 0xFFFFFFFF)
			return;
		at = alphabet_find(a, col, cp);
		if ((at < n && a->cp[col][at] == cp) || n == CACHE_ALPHABET_MAX)
			continue;
		memmove(&a->cp[col][at + 1], &a->cp[col][at],
			(n - at) * sizeof(a->cp[0][0]));
		a->cp[col][at] = cp;
		a->n[col]++;
	}
}

/*
 * A window of the key space: the characters at positions [pos, pos +
 * width) of keys that share their first `shared` bytes, read as one
 * number in mixed radix, each position's digits being 0 ("the key ended"),
 * 1..n for the n characters seen there, and n + 1 for any past them.
 * Positions are counted in characters from the end of the listing's
 * prefix.  The window is as wide as 120 bits allow.
 */
struct key_window {
	const struct cache_alphabet *alpha;
	size_t shared; /* bytes */
	size_t pos;    /* characters after the prefix */
	unsigned width;
	unsigned __int128 span; /* the product of the radices */
};

static unsigned radix_at(const struct key_window *w, unsigned i)
{
	return w->alpha->n[column(w->pos + i)] + 2u;
}

static void window_init(struct key_window *w,
			const struct cache_alphabet *alpha, size_t fixed,
			const char *key, size_t shared)
{
	const char *s = key + fixed;

	w->alpha = alpha;
	w->shared = shared;
	w->pos = 0;
	while (s < key + shared) {
		utf8_next(&s);
		w->pos++;
	}
	w->span = 1;
	for (w->width = 0; w->width < 40; w->width++) {
		unsigned r = radix_at(w, w->width);

		if (w->span > ((unsigned __int128)1 << 120) / r)
			break;
		w->span *= r;
	}
}

/* key's digits in the window (key shares its first w->shared bytes):
 * a character that was not seen counts as the one seen below it. */
static unsigned __int128 window_value(const struct key_window *w,
				      const char *key)
{
	const char *s = key + w->shared;
	unsigned __int128 v = 0;

	for (unsigned i = 0; i < w->width; i++) {
		unsigned col = column(w->pos + i), n = w->alpha->n[col];
		unsigned digit = 0;

		if (*s) {
			uint32_t cp = utf8_next(&s);
			unsigned at = alphabet_find(w->alpha, col, cp);

			if (cp == 0xFFFFFFFF || at == n)
				digit = n + 1;
			else if (w->alpha->cp[col][at] == cp)
				digit = at + 1;
			else
				digit = at; /* between: the one below */
		}
		v = v * radix_at(w, i) + digit;
		if (digit == 0)
			s = ""; /* ended */
	}
	return v;
}

/* The key whose digits are v (< w->span) after prefix's first w->shared
 * bytes, malloc'd; NULL on ENOMEM or when a digit cannot be written. */
static char *window_key(const struct key_window *w, const char *prefix,
			unsigned __int128 v)
{
	unsigned digits[40];
	char *key = malloc(w->shared + 4 * w->width + 1);
	size_t len = w->shared;

	if (!key)
		return NULL;
	for (unsigned i = w->width; i-- > 0;) {
		digits[i] = (unsigned)(v % radix_at(w, i));
		v /= radix_at(w, i);
	}
	memcpy(key, prefix, w->shared);
	for (unsigned i = 0; i < w->width && digits[i]; i++) {
		unsigned col = column(w->pos + i), n = w->alpha->n[col];
		uint32_t cp = digits[i] <= n ? w->alpha->cp[col][digits[i] - 1]
			      : n ? next_char(w->alpha->cp[col][n - 1])
				  : 0;

		if (!cp)
			break;
		len += (size_t)utf8_put(key + len, cp);
	}
	key[len] = '\0';
	return key;
}

/* Bytes a and b share, cut back to a character boundary (at least
 * fixed). */
static size_t shared_bytes(const char *a, const char *b, size_t fixed)
{
	size_t n = fixed;

	while (a[n] && a[n] == b[n])
		n++;
	while (n > fixed && ((unsigned char)a[n] & 0xC0) == 0x80)
		n--;
	return n;
}

/* Keeps key in out[] when it lies strictly between a and b (b NULL: no
 * end) and after the last kept; frees it otherwise. */
static void keep_between(char *key, const char *a, const char *b, char **out,
			 unsigned *made)
{
	if (key && strcmp(key, a) > 0 && (!b || strcmp(key, b) < 0) &&
	    (*made == 0 || strcmp(key, out[*made - 1]) > 0))
		out[(*made)++] = key;
	else
		free(key);
}

/*
 * Up to k keys strictly between a and b (b NULL: no end), increasing,
 * each valid UTF-8 and malloc'd into out[]; fixed: the bytes of the
 * listing's prefix, which every key here starts with.
 *
 * With an end, the keys divide the window from a to b evenly.  With no
 * end, they are where the groups of keys that a shares its first
 * characters with end (a = "img/n01/0000999" gives "img/n01/0001",
 * "img/n01/001", "img/n01/01", "img/n01/1", "img/n02", ...): one part
 * each for the rest of ever larger groups, the way keys are laid out in
 * folders and numbers, from the group of the first character where a
 * differs from first (the first key of the page a ends) on.  Returns how
 * many (0 when the ends are not valid UTF-8).
 */
UNITTEST unsigned split_keys(const struct cache_alphabet *seen, size_t fixed,
			     const char *first, const char *a, const char *b,
			     unsigned k, char **out)
{
	struct cache_alphabet copy, *alpha = &copy;
	unsigned made = 0;

	if (strlen(a) < fixed || !util_utf8_valid(a + fixed) ||
	    (b && !util_utf8_valid(b)) || strlen(first) < fixed ||
	    strncmp(first, a, fixed) != 0)
		return 0;
	/* the ends' own characters are digits of the window, so that they
	 * are read exactly */
	copy = *seen;
	alphabet_add_key(alpha, first + fixed);
	alphabet_add_key(alpha, a + fixed);
	if (b && strlen(b) >= fixed)
		alphabet_add_key(alpha, b + fixed);
	if (b) {
		struct key_window w;
		unsigned __int128 va, vb;

		window_init(&w, alpha, fixed, a, shared_bytes(a, b, fixed));
		va = window_value(&w, a);
		vb = window_value(&w, b);
		for (unsigned j = 1; j <= k && vb > va; j++)
			keep_between(
			    window_key(&w, a, va + (vb - va) * j / (k + 1)), a,
			    b, out, &made);
		return made;
	}
	/* the ends of the groups: a cut after each of its characters up to
	 * the first that differs from first, that character stepped; the
	 * coarsest first (the largest parts), then reversed */
	{
		size_t cut = shared_bytes(first, a, fixed), pos = 0;
		const char *p = a + fixed;

		if (a[cut])
			cut += utf8_len(a + cut);
		while (made < k && p < a + cut) {
			size_t start = (size_t)(p - a);
			uint32_t cp = utf8_next(&p), next;
			unsigned col = column(pos++), n = alpha->n[col];
			unsigned at = alphabet_find(alpha, col, cp);
			char *key;

			/* where several characters were seen and a's is the
			 * last of them, the group most likely has no keys
			 * left: it stays with the next larger one */
			if (cp == 0xFFFFFFFF ||
			    (n >= 2 &&
			     at + (at < n && alpha->cp[col][at] == cp) >= n))
				continue;
			next = next_char(cp);
			key = next ? malloc(start + 5) : NULL;
			if (!key)
				continue;
			memcpy(key, a, start);
			key[start + (size_t)utf8_put(key + start, next)] = '\0';
			/* coarse to fine: each smaller than the one before */
			if (strcmp(key, a) > 0 &&
			    (made == 0 || strcmp(key, out[made - 1]) < 0))
				out[made++] = key;
			else
				free(key);
		}
		for (unsigned i = 0; i < made / 2; i++) {
			char *t = out[i];

			out[i] = out[made - 1 - i];
			out[made - 1 - i] = t;
		}
	}
	return made;
}

/* ---- ranges (lock held) ---- */

static void range_free(struct range *r)
{
	free(r->after);
	free(r->until);
	free(r->token);
	free(r->last);
	free(r->runs);
	free(r);
}

static void page_arrived(void *arg, struct store_list_page *page,
			 const struct store_error *err);

/* Asks for r's next page; false (and the listing failed) when the
 * request cannot be made. */
static bool range_request(struct cache_lister *l, struct range *r)
{
	struct store_list req = {
	    .bucket = cache_catalog_bucket(l->cat),
	    .prefix = cache_catalog_prefix(l->cat),
	    .token = r->token,
	    .start_after = r->token ? NULL : r->after,
	    .max_keys = r->next_keys && r->next_keys < l->conf.page_keys
			    ? r->next_keys
			: r == l->ranges && !r->token && !r->last
			    ? l->conf.first_page_keys
			    : l->conf.page_keys,
	    .done = page_arrived,
	    .arg = r,
	};
	int rc = store_list(l->store, &req);

	if (rc) {
		if (!l->failed) {
			memset(&l->error, 0, sizeof(l->error));
			l->error.err = rc;
			snprintf(l->error.message, sizeof(l->error.message),
				 "a listing request could not be made");
		}
		l->failed = true;
		return false;
	}
	r->in_flight = true;
	r->sent_ns = util_now_ns();
	l->in_flight++;
	if (l->in_flight > l->stats.in_flight_max)
		l->stats.in_flight_max = l->in_flight;
	return true;
}

static struct range *range_new(struct cache_lister *l, const char *after,
			       const char *until, unsigned depth)
{
	struct range *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->after = strdup(after);
	r->until = util_strdup0(until);
	if (!r->after || (until && !r->until)) {
		range_free(r);
		return NULL;
	}
	r->lister = l;
	r->depth = depth;
	l->stats.ranges++;
	return r;
}

/* The failure that ends the listing: the first one is what users see. */
static void lister_fail(struct cache_lister *l, const struct store_error *err,
			const char *why)
{
	if (!l->failed) {
		if (err) {
			l->error = *err;
		} else {
			memset(&l->error, 0, sizeof(l->error));
			l->error.err = EIO;
			snprintf(l->error.message, sizeof(l->error.message),
				 "%s", why);
		}
	}
	l->failed = true;
}

/*
 * Takes page into r: the keys up to r's end, in order, into the catalog
 * as one run.  0, or an errno with why set (a hostile page).
 */
static int range_take(struct cache_lister *l, struct range *r,
		      struct store_list_page *page, const char **why)
{
	const char *prev = r->last ? r->last : r->after;
	size_t before = cache_catalog_entries(l->cat);
	uint32_t first = 0, entry;
	size_t n = 0;
	int rc = 0;

	for (size_t i = 0; i < page->count && !rc; i++) {
		const char *key = page->objects[i].key;

		if (!key || (!l->sequential && strcmp(key, prev) <= 0)) {
			*why = "the listing gave keys out of order";
			rc = key ? EAGAIN : EPROTO;
			break;
		}
		if (r->until && strcmp(key, r->until) > 0) {
			r->done = true;
			l->stats.discarded += page->count - i;
			break;
		}
		rc = cache_catalog_add(l->cat, key, page->objects[i].etag,
				       page->objects[i].size,
				       page->objects[i].mtime, &entry);
		if (rc) {
			*why = rc == EINVAL
				   ? "the listing gave a key outside the "
				     "prefix or too long, a size past "
				     "S3's largest or an unusable ETag"
			       : rc == EOVERFLOW
				   ? "the prefix holds more objects than a "
				     "catalog can (2^32)"
				   : "out of memory";
			break;
		}
		if (n++ == 0)
			first = entry;
		prev = key;
		if (i % (page->count / ALPHABET_SAMPLES + 1) == 0 ||
		    i + 1 == page->count)
			alphabet_add_key(
			    &l->alpha,
			    key + strlen(cache_catalog_prefix(l->cat)));
	}
	if (!rc && n && r->nruns == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 4;
		struct run *p = realloc(r->runs, cap * sizeof(*p));

		if (p) {
			r->runs = p;
			r->cap = cap;
		} else {
			rc = ENOMEM;
			*why = "out of memory";
		}
	}
	if (!rc && n) {
		char *last = strdup(prev);

		if (!last) {
			rc = ENOMEM;
			*why = "out of memory";
		} else {
			free(r->last);
			r->last = last;
			r->runs[r->nruns++] = (struct run){first, (uint32_t)n};
		}
	}
	if (rc) {
		cache_catalog_truncate(l->cat, before);
		return rc;
	}
	l->stats.objects += n;
	if (!r->done && !page->truncated)
		r->done = true;
	if (!r->done && !page->next_token) {
		*why = "the listing was truncated with no continuation token";
		return EPROTO;
	}
	if (!r->done) {
		free(r->token);
		r->token = page->next_token;
		page->next_token = NULL;
	}
	return 0;
}

/* Gives positions to what the ranges in key order have, up to the first
 * range still listing.  0 or ENOMEM. */
static int emit_positions(struct cache_lister *l)
{
	while (l->emit) {
		struct range *r = l->emit;

		for (; r->emitted < r->nruns; r->emitted++) {
			int rc = cache_catalog_order(l->cat,
						     r->runs[r->emitted].first,
						     r->runs[r->emitted].count);

			if (rc)
				return rc;
		}
		if (!r->done)
			break;
		l->emit = r->next;
	}
	return 0;
}

/* The first key of r's last page, into buf; a when there is none. */
static const char *page_first(const struct cache_lister *l,
			      const struct range *r, char *buf, size_t len)
{
	if (!r->nruns ||
	    !cache_catalog_key(l->cat, r->runs[r->nruns - 1].first, buf, len))
		return r->last ? r->last : r->after;
	return buf;
}

/*
 * The keys between key and r's end at the density of the keys r listed
 * from first to key (count of them), in the key window they share with
 * the end; 0 when the window cannot tell.
 */
static double keys_left(const struct cache_lister *l, const struct range *r,
			uint32_t first, uint64_t count)
{
	size_t fixed = strlen(cache_catalog_prefix(l->cat));
	char start[CACHE_KEY_MAX + 1];
	unsigned __int128 vs, va, vb;
	struct key_window w;

	if (!cache_catalog_key(l->cat, first, start, sizeof(start)))
		return 0;
	window_init(&w, &l->alpha, fixed, r->last,
		    shared_bytes(start, r->until, fixed));
	vs = window_value(&w, start);
	va = window_value(&w, r->last);
	vb = window_value(&w, r->until);
	if (vb <= va || va <= vs)
		return 0;
	return (double)count * (double)(vb - va) / (double)(va - vs);
}

/*
 * The keys r has left, estimated by the density of all it listed so far
 * and by that of its last page, whichever says more: a range's first keys
 * may be a sparse group before a dense one (then its last page knows
 * better), and one page of keys numbered under folders is a sliver of one
 * folder (then all of it knows better).  UINT64_MAX for a range with no
 * end (it may hold anything), 0 when nothing is known.
 */
static uint64_t range_left(const struct cache_lister *l, const struct range *r)
{
	uint64_t listed = 0;
	double all, last;

	if (!r->until)
		return UINT64_MAX;
	if (!r->last || !r->nruns)
		return 0;
	for (size_t i = 0; i < r->nruns; i++)
		listed += r->runs[i].count;
	all = keys_left(l, r, r->runs[0].first, listed);
	last = keys_left(l, r, r->runs[r->nruns - 1].first,
			 r->runs[r->nruns - 1].count);
	if (last > all)
		all = last;
	return all >= 1e18 ? UINT64_MAX : (uint64_t)all;
}

/* How many more parts r is worth splitting into, besides itself: one for
 * every SPLIT_PAGES pages it has left. */
static unsigned range_parts(const struct cache_lister *l, uint64_t left)
{
	uint64_t parts = left / ((uint64_t)l->conf.page_keys * SPLIT_PAGES);

	(void)l;
	return parts >= SPLIT_MAX ? SPLIT_MAX : (unsigned)parts;
}

/* Splits what r has left among new ranges while there is room for more
 * listers and r has far to go, and starts them. */
/* Whether r waits for room to split (lock held). */
static void set_hungry(struct cache_lister *l, struct range *r, bool hungry)
{
	if (r->hungry != hungry)
		l->hungry += hungry ? 1 : -1;
	r->hungry = hungry;
}

static void range_split(struct cache_lister *l, struct range *r)
{
	char buf[CACHE_KEY_MAX + 1];
	const char *first = page_first(l, r, buf, sizeof(buf));
	uint64_t left = range_left(l, r);
	char *keys[SPLIT_MAX];
	unsigned room, n, parts;

	/* near its end, ask for what is left (and a margin) rather than a
	 * full page whose tail would be past the end; a short page that
	 * came back full (the estimate was off) is followed by a full one */
	bool short_was_full = r->next_keys && r->nruns &&
			      r->runs[r->nruns - 1].count >= r->next_keys;

	r->next_keys = 0;
	if (left && left < l->conf.page_keys / 2 && !short_was_full)
		r->next_keys =
		    (unsigned)(left + left / 4 < 48 ? 64
						    : left + left / 4 + 16);
	/* ranges with keys to hand out go first: a range with no end only
	 * finds more ranges */
	if (!r->until && l->hungry)
		return;
	room =
	    l->in_flight + 1 < l->allowed ? l->allowed - l->in_flight - 1 : 0;
	parts = range_parts(l, left);
	set_hungry(l, r, r->until && parts && !room);
	if (parts < room)
		room = parts;
	if (room == 0)
		return;
	n = split_keys(&l->alpha, strlen(cache_catalog_prefix(l->cat)), first,
		       r->last ? r->last : r->after, r->until, room, keys);
	/* from the far end, so each new range takes r's end before r
	 * gives it up */
	for (unsigned i = n; i-- > 0;) {
		struct range *fresh = range_new(l, keys[i], r->until, r->depth);

		if (fresh) {
			/* the ends of groups past a range with no end are
			 * a search (most hold nothing); the parts of a
			 * range with an end hold its keys */
			fresh->next_keys = SPLIT_FIRST_KEYS;
			alphabet_add_key(
			    &l->alpha,
			    keys[i] + strlen(cache_catalog_prefix(l->cat)));
			free(r->until);
			r->until = keys[i];
			keys[i] = NULL;
			fresh->next = r->next;
			r->next = fresh;
			range_request(l, fresh);
		}
		free(keys[i]);
	}
}

/*
 * The pace: S3 serves the requests of one prefix side by side, so more
 * listers list faster; a server that serves one request at a time (a
 * single-threaded test server, a small S3-compatible store) is only
 * slowed by more, and every range split costs a request.  Listers start
 * at PACE_START and double after each round (as many pages answered as
 * listers allowed, at least PACE_ROUND) whose requests took on average at
 * most PACE_SLOWER times as long as in the first round; once they take
 * longer (they queue at the server, which is then as busy as it gets)
 * the listers stay as many.
 */
static void pace(struct cache_lister *l, uint64_t waited)
{
	uint64_t mean;

	l->round_wait += waited;
	if (l->settled || ++l->round_pages < l->allowed ||
	    l->round_pages < PACE_ROUND)
		return;
	mean = l->round_wait / l->round_pages;
	if (!l->base_latency)
		l->base_latency = mean ? mean : 1;
	if (mean <= l->base_latency * PACE_SLOWER) {
		l->allowed = l->allowed * 2 < l->conf.max_listers
				 ? l->allowed * 2
				 : l->conf.max_listers;
	} else {
		/* queueing starts here: the server is as busy as it gets */
		l->settled = true;
	}
	l->stats.listers = l->allowed;
	l->round_wait = 0;
	l->round_pages = 0;
}

/*
 * The server gave keys out of order (S3 lists in key order and honours
 * start-after; S3 Express directory buckets do neither, nor may other
 * stores): once no request is in flight, everything listed is forgotten
 * and the prefix is listed again as one range, page after page, in the
 * order the server gives (lock held).
 */
static void restart(struct cache_lister *l)
{
	while (l->ranges) {
		struct range *next = l->ranges->next;

		range_free(l->ranges);
		l->ranges = next;
	}
	l->hungry = 0;
	cache_catalog_clear(l->cat);
	memset(&l->alpha, 0, sizeof(l->alpha));
	util_warn("listing %s/%s: the server does not list keys in order "
		  "from a start-after: listing again, one page after another",
		  cache_catalog_bucket(l->cat), cache_catalog_prefix(l->cat));
	l->restart = false;
	l->sequential = true;
	l->settled = true;
	l->allowed = 1;
	l->stats.listers = 1;
	l->ranges = range_new(l, "", NULL, l->depth_max);
	l->emit = l->ranges;
	if (!l->ranges)
		lister_fail(l, NULL, "out of memory");
	else
		range_request(l, l->ranges);
}

static void page_arrived(void *arg, struct store_list_page *page,
			 const struct store_error *err)
{
	struct range *r = arg;
	struct cache_lister *l = r->lister;
	const char *why = NULL;
	bool empty;
	int rc;

	pthread_mutex_lock(&l->lock);
	r->in_flight = false;
	l->in_flight--;
	r->depth++;
	if (r->depth > l->depth_max)
		l->depth_max = r->depth;
	if (err) {
		if (!l->stopping || err->err != ECANCELED)
			lister_fail(l, err, NULL);
	} else if (!l->stopping && !l->failed && !l->restart) {
		l->stats.pages++;
		pace(l, util_now_ns() - r->sent_ns);
		empty = !r->last;
		rc = range_take(l, r, page, &why);
		if (!rc && r->done && empty && !r->last)
			l->stats.empty++;
		if (!rc)
			rc = emit_positions(l);
		if (r->done)
			set_hungry(l, r, false);
		if (rc == EAGAIN)
			l->restart = true; /* out of order: see restart() */
		else if (rc)
			lister_fail(l, NULL, why ? why : "out of memory");
		else if (!r->done) {
			range_split(l, r);
			range_request(l, r);
		}
	}
	if (page)
		store_list_page_clear(page);
	if (l->restart && l->in_flight == 0 && !l->failed && !l->stopping)
		restart(l);
	if (l->in_flight == 0 && !l->failed && !l->stopping) {
		l->complete = true;
		for (struct range *q = l->ranges; q; q = q->next)
			l->complete = l->complete && q->done;
	}
	l->stats.complete = l->complete;
	pthread_cond_broadcast(&l->changed);
	pthread_mutex_unlock(&l->lock);
}

/* ---- the lister ---- */

struct cache_lister *cache_lister_start(struct cache *c,
					struct cache_catalog *cat,
					const struct cache_lister_conf *conf)
{
	struct cache_lister *l = calloc(1, sizeof(*l));

	if (!l) {
		errno = ENOMEM;
		return NULL;
	}
	l->store = c->store;
	l->cat = cat;
	cache_lister_conf_init(&l->conf);
	if (conf)
		l->conf = *conf;
	if (l->conf.max_listers < 1)
		l->conf.max_listers = 1;
	if (l->conf.max_listers > CACHE_LISTERS_MAX)
		l->conf.max_listers = CACHE_LISTERS_MAX;
	if (l->conf.page_keys < 1 || l->conf.page_keys > 1000)
		l->conf.page_keys = 1000;
	if (l->conf.first_page_keys < 1 || l->conf.first_page_keys > 1000)
		l->conf.first_page_keys = l->conf.page_keys;
	l->sequential = l->conf.max_listers == 1;
	l->allowed = PACE_START < l->conf.max_listers && l->conf.paced
			 ? PACE_START
			 : l->conf.max_listers;
	l->settled = !l->conf.paced;
	l->stats.listers = l->allowed;
	pthread_mutex_init(&l->lock, NULL);
	pthread_cond_init(&l->changed, NULL);
	l->ranges = range_new(l, "", NULL, 0);
	if (!l->ranges) {
		cache_lister_destroy(l);
		errno = ENOMEM;
		return NULL;
	}
	l->emit = l->ranges;
	pthread_mutex_lock(&l->lock);
	range_request(l, l->ranges);
	pthread_mutex_unlock(&l->lock);
	return l;
}

int cache_lister_wait(struct cache_lister *l, size_t pos,
		      struct store_error *err)
{
	int rc;

	pthread_mutex_lock(&l->lock);
	while (!l->failed && !l->complete && cache_catalog_count(l->cat) <= pos)
		pthread_cond_wait(&l->changed, &l->lock);
	if (cache_catalog_count(l->cat) > pos)
		rc = 0;
	else if (l->failed)
		rc = EIO;
	else
		rc = ENODATA;
	if (rc == EIO && err)
		*err = l->error;
	pthread_mutex_unlock(&l->lock);
	return rc;
}

void cache_lister_get_stats(struct cache_lister *l,
			    struct cache_lister_stats *out)
{
	pthread_mutex_lock(&l->lock);
	*out = l->stats;
	out->depth = l->depth_max;
	pthread_mutex_unlock(&l->lock);
}

void cache_lister_destroy(struct cache_lister *l)
{
	if (!l)
		return;
	pthread_mutex_lock(&l->lock);
	l->stopping = true;
	while (l->in_flight)
		pthread_cond_wait(&l->changed, &l->lock);
	pthread_mutex_unlock(&l->lock);
	while (l->ranges) {
		struct range *next = l->ranges->next;

		range_free(l->ranges);
		l->ranges = next;
	}
	pthread_cond_destroy(&l->changed);
	pthread_mutex_destroy(&l->lock);
	free(l);
}
