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
 * Where to split: where the keys are.  After each page, the range's last
 * key is read as a number (struct lister_number): the characters around
 * the position where the page's keys differ (the level), all of one
 * class (decimal, hex, letters) with separators between digits
 * (2024/01/31), the class chosen by the characters seen there.  Its
 * value (the digits in the class's radix) and the keys the range listed
 * in it give a density, keys per unit.  The keys left are shared among
 * parts that start where the number's groups start: each other digit
 * at the level; before it, each other digit where the range's end
 * differs (a group it holds whole), and, finer than that, one part for
 * the rest of each digit (a guess: after shard-0000999 come 0001, 001,
 * 01 and 1, and only the keys can tell which exist); last, one part
 * past the number's class, whose keys nothing tells: a search, split in
 * turn by its own first page.  A listing follows folders and numbers
 * with one search a group, not one request per empty folder level: the
 * server skips what is empty.  Parts the density says hold fewer than
 * SPLIT_PAGES pages join a neighbour, the closest join while there are
 * more than the room for listers, and while there are fewer the largest
 * part that is no guess is halved by value: a sub-prefix that holds most
 * keys splits as finely as a flat bucket.  In a dense number a part
 * ends at its last key, so that its last page says it is done.  Split
 * keys are kept only when strictly between their neighbours, so every
 * key is listed once whatever the estimates say.
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
#define SPLIT_MAX 31
/* pages a part should have ahead of it, at least, by the estimate */
#define SPLIT_PAGES 8
/* keys of a page whose characters where the page's keys differ choose
 * the class of its number */
#define CLASS_SAMPLES 16
/* listers at the start; pages a round of the pace counts, at least; how
 * much longer than in the first round requests may take for the listers
 * to go on doubling */
#define PACE_START  2
#define PACE_ROUND  4
#define PACE_SLOWER 1.5
/* how many more pages a second than the round before a round must answer
 * for the listers to go on doubling once requests take longer */
#define PACE_FASTER 1.15

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
	struct cache_lister_stats stats;
	unsigned depth_max;
	uint64_t flight_at; /* when in_flight last changed */
	/* the pace (pace()): ranges listed at once now, at most max_listers */
	unsigned allowed;
	bool settled; /* more did not pay once: only latency doubles them */
	uint64_t round_wait;   /* ns requests of this round took, in all */
	unsigned round_pages;  /* pages answered in this round */
	uint64_t base_latency; /* a request's time in the first round */
	uint64_t round_start;  /* when this round started */
	double round_rate;     /* pages a second in the round before */
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

/* ---- the number a range's keys count in ---- */

/*
 * The classes of digits a number is read in, the smallest first: the
 * class of a number is the first that holds every character seen where
 * the keys differ and after it (hex only with a decimal digit among
 * them: "bad" is a word).  In the first three, separators between digits
 * belong to the number (2024/01/31, 00/1f/001fa3).
 */
static const char *const number_classes[] = {
    "0123456789",
    "0123456789abcdef",
    "0123456789ABCDEF",
    "abcdefghijklmnopqrstuvwxyz",
    "ABCDEFGHIJKLMNOPQRSTUVWXYZ",
    "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
};
#define CLASSES		(sizeof(number_classes) / sizeof(number_classes[0]))
#define CLASSES_NUMERIC 3

static bool is_separator(unsigned char c)
{
	return c == '/' || c == '-' || c == '_' || c == '.';
}

/* Index of c among the number's digits, or -1. */
static int digit_of(const struct lister_number *nb, unsigned char c)
{
	const char *p = c ? memchr(nb->digits, c, nb->ndigits) : NULL;

	return p ? (int)(p - nb->digits) : -1;
}

static bool in_number(const struct lister_number *nb, const char *key, size_t p)
{
	unsigned char c = (unsigned char)key[p];

	if (digit_of(nb, c) >= 0)
		return true;
	return nb->numeric && is_separator(c) && p > 0 &&
	       digit_of(nb, (unsigned char)key[p - 1]) >= 0 &&
	       digit_of(nb, (unsigned char)key[p + 1]) >= 0;
}

/* Whether name's path segments up to its extension are hex digits of one
 * case, a decimal digit among them. */
static bool hex_names(const char *name)
{
	bool digit = false, lower = false, upper = false;

	for (; *name && *name != '.'; name++) {
		unsigned char c = (unsigned char)*name;

		if (c >= '0' && c <= '9')
			digit = true;
		else if (c >= 'a' && c <= 'f')
			lower = true;
		else if (c >= 'A' && c <= 'F')
			upper = true;
		else if (c != '/')
			return false;
	}
	return digit && !(lower && upper);
}

static bool is_alnum(unsigned char c)
{
	return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') ||
	       (c >= 'a' && c <= 'z');
}

/* Adds c to set when some class holds it; false otherwise. */
static bool class_add(bool set[128], unsigned char c)
{
	if (!is_alnum(c))
		return false;
	set[c] = true;
	return true;
}

/*
 * The number of last in a page whose first key is first (first < last,
 * both starting with the same fixed bytes, valid UTF-8); seen: more
 * characters the page's keys have where first and last differ (NULL:
 * none).  False when last is no key after first.  A number with no
 * class (nb->digits NULL: the keys differ at a character of none) is
 * one position whose digits are not known.
 */
UNITTEST bool number_init(struct lister_number *nb, size_t fixed,
			  const char *first, const char *last, const char *seen)
{
	bool set[128] = {false};
	size_t level, p;
	unsigned cls;
	bool ok, digit = false;

	memset(nb, 0, sizeof(*nb));
	nb->key = last;
	/* (both must have the fixed bytes before they are compared past
	 * them) */
	if (strlen(last) < fixed || strlen(first) < fixed)
		return false;
	level = shared_bytes(first, last, fixed);
	nb->level = nb->start = nb->end = level;
	if (strcmp(first, last) >= 0 || !last[level])
		return false;
	ok = class_add(set, (unsigned char)last[level]) &&
	     (!first[level] || class_add(set, (unsigned char)first[level]));
	for (const char *s = seen ? seen : ""; ok && *s; s++)
		ok = class_add(set, (unsigned char)*s);
	/* and what follows in both ends, up to a separator */
	for (p = level + 1;
	     ok && last[p - 1] && is_alnum((unsigned char)last[p]); p++)
		class_add(set, (unsigned char)last[p]);
	for (p = level + 1;
	     ok && first[p - 1] && is_alnum((unsigned char)first[p]); p++)
		class_add(set, (unsigned char)first[p]);
	/* letters of hex digits alone are hex where the key's names from
	 * there on are hex digits with a decimal one among them (dd/70/
	 * dd70d802ebcf): so a page of hashed names differing in a letter */
	for (p = level; p > fixed && is_alnum((unsigned char)last[p - 1]);)
		p--;
	digit = hex_names(last + p);
	for (unsigned c = '0'; c <= '9'; c++)
		digit = digit || set[c];
	for (cls = 0; ok && cls < CLASSES; cls++) {
		bool all = true;

		for (unsigned c = 0; c < 128 && all; c++)
			all = !set[c] || strchr(number_classes[cls], (int)c);
		if (all && (digit || (cls != 1 && cls != 2)))
			break;
	}
	if (!ok || cls == CLASSES)
		return true;
	nb->digits = number_classes[cls];
	nb->ndigits = (unsigned)strlen(nb->digits);
	nb->numeric = cls < CLASSES_NUMERIC;
	if (digit_of(nb, (unsigned char)last[level]) < 0) {
		nb->digits = NULL;
		return true;
	}
	/* back to where the number starts, then its digits while the value
	 * holds them (a number too long for it starts at the level) */
	for (p = level; p > fixed && in_number(nb, last, p - 1);)
		p--;
	while (digit_of(nb, (unsigned char)last[p]) < 0)
		p++;
	for (int pass = 0; pass < 2; pass++) {
		nb->start = p;
		nb->span = 1;
		nb->positions = 0;
		for (; last[p] && in_number(nb, last, p); p++) {
			if (digit_of(nb, (unsigned char)last[p]) < 0)
				continue;
			if (nb->positions == NUMBER_POSITIONS ||
			    nb->span > NUMBER_SPAN / nb->ndigits)
				break;
			nb->span *= nb->ndigits;
			nb->positions++;
			nb->end = p + 1;
		}
		if (nb->end > level)
			break;
		p = level;
	}
	return true;
}

/*
 * key's value in the number: its digits in radix ndigits, separators
 * read as the number's own; where key ends or has a character of no
 * digit, the value is the largest below it (the smallest, 0, when there
 * is none).  Keys that do not start as the number's key are 0 (before
 * it) or span (after it).  Never decreasing with the key.
 */
static unsigned __int128 number_value(const struct lister_number *nb,
				      const char *key)
{
	unsigned __int128 v = 0;
	int state = 0; /* 0: the same so far; -1: below; 1: above */
	bool ended = false;
	int c = strncmp(key, nb->key, nb->start);

	if (c)
		return c < 0 ? 0 : nb->span;
	for (size_t p = nb->start; p < nb->end; p++) {
		unsigned char want = (unsigned char)nb->key[p];
		unsigned char k = ended ? 0 : (unsigned char)key[p];
		unsigned digit = 0;
		int d;

		ended = !k;
		if (digit_of(nb, want) < 0) { /* a separator */
			if (!state && k != want)
				state = k < want ? -1 : 1;
			continue;
		}
		d = digit_of(nb, k);
		if (state)
			digit = state < 0 ? 0 : nb->ndigits - 1;
		else if (d >= 0)
			digit = (unsigned)d;
		else {
			while (k && digit < nb->ndigits &&
			       (unsigned char)nb->digits[digit] < k)
				digit++;
			state = digit ? 1 : -1;
			digit -= digit > 0;
		}
		v = v * nb->ndigits + digit;
	}
	return v;
}

/* The smallest key whose value is v (< span), malloc'd (NULL on
 * ENOMEM): the number's key up to the number, then v's digits. */
static char *number_key(const struct lister_number *nb, unsigned __int128 v)
{
	unsigned digits[NUMBER_POSITIONS], i;
	char *key = malloc(nb->end + 1);
	size_t len = nb->start;

	if (!key)
		return NULL;
	for (i = nb->positions; i-- > 0;) {
		digits[i] = (unsigned)(v % nb->ndigits);
		v /= nb->ndigits;
	}
	memcpy(key, nb->key, nb->start);
	i = 0;
	for (size_t p = nb->start; p < nb->end; p++)
		key[len++] = digit_of(nb, (unsigned char)nb->key[p]) < 0
				 ? nb->key[p]
				 : nb->digits[digits[i++]];
	key[len] = '\0';
	return key;
}

/* The number's density: count keys listed from `from` up to its key. */
UNITTEST void number_density(struct lister_number *nb, const char *from,
			     uint64_t count)
{
	unsigned __int128 a = number_value(nb, from);
	unsigned __int128 b = number_value(nb, nb->key);

	nb->density = nb->digits && b > a && count > 1
			  ? (double)(count - 1) / (double)(b - a)
			  : 0;
}

/* Appends a part whose keys come after key[0, len) + cp to parts[] when
 * that is after the last one there and after key (so that they
 * increase); guess: its keys are a guess. */
static void bound_add(const char *key, size_t len, uint32_t cp, bool guess,
		      struct lister_part *parts, unsigned *n)
{
	char *b = cp ? malloc(len + 5) : NULL;

	if (!b)
		return;
	memcpy(b, key, len);
	b[len + (size_t)utf8_put(b + len, cp)] = '\0';
	if (strcmp(b, key) > 0 &&
	    (*n == 1 || strcmp(b, parts[*n - 1].after) > 0)) {
		parts[*n].after = b;
		parts[*n].keys = -1;
		parts[*n].guess = guess;
		(*n)++;
	} else {
		free(b);
	}
}

/*
 * The parts the keys after the number's key fall into, where its groups
 * start, into parts[1...] (parts[0]: the range's own): the other digits
 * at the level (when the density is known); before the level, the other
 * digits where until differs from the key (the digits of a group whose
 * end is known), and the rest of each digit finer than that, one part
 * each (0001, 001, 01, 1 after 0000999: a guess); and the rest of the
 * number's class (*rest: the last, past which nothing is known).
 * Returns how many parts, parts[0] included.
 */
static unsigned number_bounds(const struct lister_number *nb, const char *until,
			      struct lister_part *parts, bool *rest)
{
	const char *key = nb->key;
	size_t at = SIZE_MAX;
	unsigned n = 1;

	/* where until ends a group of digits, read as the value after it
	 * (split_plan() may end parts at their last key): the rest of the
	 * number's class (a search's start) is no such end */
	if (until && nb->digits) {
		unsigned __int128 v = number_value(nb, until);
		char *next = v + 1 < nb->span ? number_key(nb, v + 1) : NULL;

		if (next)
			at = shared_bytes(key, next, 0);
		free(next);
	}

	parts[0] = (struct lister_part){NULL, -1, false};
	*rest = false;
	if (!nb->digits) {
		const char *s = key + nb->level;
		uint32_t cp = utf8_next(&s);

		if (cp != 0xFFFFFFFF)
			bound_add(key, nb->level, next_char(cp), true, parts,
				  &n);
		*rest = n > 1;
		return n;
	}
	if (nb->density > 0) {
		int d = digit_of(nb, (unsigned char)key[nb->level]);

		for (unsigned i = (unsigned)d + 1; i < nb->ndigits; i++)
			bound_add(key, nb->level, (unsigned char)nb->digits[i],
				  false, parts, &n);
		for (size_t p = nb->level; p-- > nb->start;) {
			d = digit_of(nb, (unsigned char)key[p]);
			if (d < 0)
				continue;
			for (unsigned i = (unsigned)d + 1;
			     i < (p == at ? nb->ndigits : (unsigned)d + 2) &&
			     i < nb->ndigits;
			     i++)
				bound_add(key, p, (unsigned char)nb->digits[i],
					  p != at, parts, &n);
			if (p == at)
				break;
		}
	}
	bound_add(key, nb->start,
		  (unsigned char)nb->digits[nb->ndigits - 1] + 1u, true, parts,
		  &n);
	*rest = true;
	return n;
}

/* Merges part i + 1 into part i. */
static void part_merge(struct lister_part *parts, unsigned *n, unsigned i)
{
	free(parts[i + 1].after);
	parts[i].keys = parts[i].keys < 0 || parts[i + 1].keys < 0
			    ? -1
			    : parts[i].keys + parts[i + 1].keys;
	parts[i].guess = parts[i].guess || parts[i + 1].guess;
	memmove(&parts[i + 1], &parts[i + 2], (*n - i - 2) * sizeof(*parts));
	(*n)--;
}

/* A part's keys, those not known counted as the most. */
static double part_weight(const struct lister_part *p)
{
	return p->keys < 0 ? 1e300 : p->keys;
}

/*
 * How the keys after the number's key up to until (NULL: no end) are
 * shared among the range that listed them (parts[0], after NULL) and at
 * most room new ranges, each listing the keys after its part's key (in
 * parts[], increasing, malloc'd).  The parts start where the number's
 * groups do (number_bounds()), with the keys the density gives them
 * (keys -1: not known, past the number: a search).  Parts with fewer
 * than min_keys go to their smaller neighbour, the fewest first; the two
 * closest parts are joined while there are more than room + 1; while
 * there are fewer, the largest part whose keys are not a guess is halved
 * at the middle of its values if it holds 2 * min_keys.  Returns how
 * many parts (1: no split).
 */
UNITTEST unsigned split_plan(const struct lister_number *nb, const char *until,
			     unsigned room, double min_keys,
			     struct lister_part *parts)
{
	bool rest;
	unsigned n = number_bounds(nb, until, parts, &rest);

	while (n > 1 && until && strcmp(parts[n - 1].after, until) >= 0) {
		free(parts[--n].after);
		rest = false;
	}
	for (unsigned i = 0; i < n; i++) {
		const char *from = i ? parts[i].after : nb->key;
		const char *to = i + 1 < n ? parts[i + 1].after : until;

		if (nb->density > 0 && to && !(rest && i + 1 == n))
			parts[i].keys =
			    nb->density * (double)(number_value(nb, to) -
						   number_value(nb, from));
		else
			parts[i].guess = true;
	}
	/* too small: to the smaller known neighbour */
	for (;;) {
		unsigned at = n;

		for (unsigned i = 0; i < n; i++)
			if (parts[i].keys >= 0 && parts[i].keys < min_keys &&
			    ((i && parts[i - 1].keys >= 0) ||
			     (i + 1 < n && parts[i + 1].keys >= 0)) &&
			    (at == n || parts[i].keys < parts[at].keys))
				at = i;
		if (at == n)
			break;
		if (at && parts[at - 1].keys >= 0 &&
		    (at + 1 == n || part_weight(&parts[at - 1]) <=
					part_weight(&parts[at + 1])))
			part_merge(parts, &n, at - 1);
		else
			part_merge(parts, &n, at);
	}
	/* too many: the closest two together */
	while (n > room + 1) {
		unsigned at = 0;

		for (unsigned i = 1; i + 1 < n; i++)
			if (part_weight(&parts[i]) +
				part_weight(&parts[i + 1]) <
			    part_weight(&parts[at]) +
				part_weight(&parts[at + 1]))
				at = i;
		part_merge(parts, &n, at);
	}
	/* room left: the largest part known to hold keys in two */
	while (n < room + 1 && n < SPLIT_PARTS) {
		unsigned at = n;
		const char *from, *to;
		unsigned __int128 a, b;
		char *mid;

		for (unsigned i = 0; i < n; i++)
			if (!parts[i].guess && parts[i].keys >= 2 * min_keys &&
			    (at == n || parts[i].keys > parts[at].keys))
				at = i;
		if (at == n)
			break;
		from = at ? parts[at].after : nb->key;
		to = at + 1 < n ? parts[at + 1].after : until;
		a = number_value(nb, from);
		b = number_value(nb, to);
		mid = number_key(nb, a + (b - a) / 2);
		if (!mid || strcmp(mid, from) <= 0 || strcmp(mid, to) >= 0) {
			free(mid);
			parts[at].guess = true; /* (not to be halved) */
			continue;
		}
		memmove(&parts[at + 2], &parts[at + 1],
			(n - at - 1) * sizeof(*parts));
		parts[at + 1] =
		    (struct lister_part){mid, parts[at].keys / 2, false};
		parts[at].keys /= 2;
		n++;
	}
	/* keys numbered densely fill parts in multiples of a page: a part
	 * ends at its last key (the one before its group's start, with the
	 * number's key's own ending), so that a page that ends with it ends
	 * the part (without that, it comes back full and needs one more
	 * request to see the next key past it) */
	if (nb->density >= 0.5)
		for (unsigned i = 1; i < n; i++) {
			unsigned __int128 v = number_value(nb, parts[i].after);
			const char *from = i > 1 ? parts[i - 1].after : nb->key;
			const char *tail = nb->key + nb->end;
			char *b = parts[i].keys >= 0 && v
				      ? number_key(nb, v - 1)
				      : NULL;
			char *last =
			    b ? malloc(strlen(b) + strlen(tail) + 1) : NULL;

			if (last) {
				memcpy(last, b, strlen(b));
				memcpy(last + strlen(b), tail,
				       strlen(tail) + 1);
			}
			if (last && strcmp(last, from) > 0 &&
			    strcmp(last, parts[i].after) < 0) {
				free(parts[i].after);
				parts[i].after = last;
			} else {
				free(last);
			}
			free(b);
		}
	return n;
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

/* The requests in flight go from l->in_flight to that + delta: the time
 * since the last change is counted in the stats. */
static void flight_change(struct cache_lister *l, int delta)
{
	uint64_t now = util_now_ns(),
		 dt = l->flight_at ? now - l->flight_at : 0;

	if (l->in_flight)
		l->stats.busy_ns += dt;
	if (l->in_flight >= CACHE_LISTERS_WIDE)
		l->stats.wide_ns += dt;
	l->stats.flight_ns += dt * l->in_flight;
	l->flight_at = now;
	l->in_flight = (unsigned)((int)l->in_flight + delta);
}

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
	flight_change(l, 1);
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
		/* its last key: nothing more to list */
		if (r->until && strcmp(key, r->until) == 0)
			r->done = true;
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

/*
 * The number r's last page counts in (number_init()), with its density
 * from every key r listed in it: the last page's and those of the pages
 * before that start as the number does.  False when there is none.
 */
static bool range_number(const struct cache_lister *l, const struct range *r,
			 struct lister_number *nb, char *first, size_t len)
{
	size_t fixed = strlen(cache_catalog_prefix(l->cat)), level;
	const struct run *page;
	char seen[CLASS_SAMPLES + 1];
	unsigned nseen = 0;
	uint64_t count;
	size_t i;

	if (!r->last || !r->nruns)
		return false;
	page = &r->runs[r->nruns - 1];
	if (!cache_catalog_key(l->cat, page->first, first, len))
		return false;
	/* the characters the page's keys have where they differ */
	level = shared_bytes(first, r->last, fixed);
	for (i = 0; i < CLASS_SAMPLES; i++) {
		const char *name = cache_catalog_name(
		    l->cat,
		    page->first + (uint32_t)(i * page->count / CLASS_SAMPLES));

		if (strlen(name) > level - fixed)
			seen[nseen++] = name[level - fixed];
	}
	seen[nseen] = '\0';
	if (!number_init(nb, fixed, first, r->last, seen))
		return false;
	count = page->count;
	for (i = r->nruns - 1; i-- > 0;) {
		const char *name = cache_catalog_name(l->cat, r->runs[i].first);

		if (strncmp(name, r->last + fixed, nb->start - fixed) != 0 ||
		    !cache_catalog_key(l->cat, r->runs[i].first, first, len))
			break;
		count += r->runs[i].count;
	}
	number_density(nb, first, count);
	return true;
}

/* The keys to ask for in a range's next page when it has left keys
 * left by the estimate (< 0: not known): 0 (a full page) unless that is
 * less than half a page, then what is left and a margin. */
static unsigned keys_to_ask(const struct cache_lister *l, double left)
{
	if (left < 0 || left >= l->conf.page_keys / 2.0)
		return 0;
	return left + left / 4 < 48 ? 64 : (unsigned)(left + left / 4 + 16);
}

/*
 * After each page: what r has left is shared among new ranges where its
 * keys are (split_plan()), as far as there is room for more listers, and
 * they start at once; near its end, r asks for what it has left (and a
 * margin) rather than a full page whose tail would be past its end.
 */
static void range_split(struct cache_lister *l, struct range *r)
{
	char first[CACHE_KEY_MAX + 1];
	struct lister_part parts[SPLIT_PARTS];
	struct lister_number nb;
	double page = l->conf.page_keys;
	unsigned room, n;
	/* a short page that came back full (the estimate was off) is
	 * followed by a full one */
	bool short_was_full = r->next_keys && r->nruns &&
			      r->runs[r->nruns - 1].count >= r->next_keys;

	r->next_keys = 0;
	if (!range_number(l, r, &nb, first, sizeof(first)))
		return;
	room =
	    l->in_flight + 1 < l->allowed ? l->allowed - l->in_flight - 1 : 0;
	if (room > SPLIT_MAX)
		room = SPLIT_MAX;
	n = split_plan(&nb, r->until, room, SPLIT_PAGES * page, parts);
	if (!short_was_full)
		r->next_keys = keys_to_ask(l, parts[0].keys);
	/* from the far end, so each new range takes r's end before r
	 * gives it up */
	for (unsigned i = n; i-- > 1;) {
		struct range *fresh =
		    range_new(l, parts[i].after, r->until, r->depth);

		if (fresh) {
			fresh->next_keys = keys_to_ask(l, parts[i].keys);
			free(r->until);
			r->until = parts[i].after;
			parts[i].after = NULL;
			fresh->next = r->next;
			r->next = fresh;
			range_request(l, fresh);
		}
		free(parts[i].after);
	}
}

/*
 * The pace: S3 serves the requests of one prefix side by side, so more
 * listers list faster; a server that serves one request at a time (a
 * single-threaded test server, a small S3-compatible store) is only
 * slowed by more, and every range split costs a request.  Listers start
 * at PACE_START and double after each round (as many pages answered as
 * listers allowed, at least PACE_ROUND) whose requests took on average at
 * most PACE_SLOWER times as long as in the first round, or that answered
 * PACE_FASTER times the pages a second of the round before: requests that
 * take longer queue at the server, but a server that has the time to
 * answer more at once still answers more a second (one that waits tens
 * of milliseconds a page and needs a few of CPU for it).  Once neither
 * holds (the server is as busy as it gets), the listers stay as many,
 * until a later round's requests take no longer than PACE_SLOWER times
 * the first round's again: a round slowed by something else (a busy
 * host) does not stop the listers for good.  After that first stop only
 * latency lets them double again, never the pages a second alone, which
 * a server of one thread shows, too, by chance.
 */
static void pace(struct cache_lister *l, uint64_t waited)
{
	uint64_t mean, now = util_now_ns();
	double rate;

	l->round_wait += waited;
	if (l->sequential || l->allowed >= l->conf.max_listers ||
	    !l->conf.paced || ++l->round_pages < l->allowed ||
	    l->round_pages < PACE_ROUND)
		return;
	mean = l->round_wait / l->round_pages;
	rate = (double)l->round_pages * 1e9 /
	       (double)(now > l->round_start ? now - l->round_start : 1);
	if (!l->base_latency)
		l->base_latency = mean ? mean : 1;
	if (mean <= l->base_latency * PACE_SLOWER ||
	    (!l->settled && rate >= l->round_rate * PACE_FASTER)) {
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
	l->round_start = now;
	l->round_rate = rate;
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
	cache_catalog_clear(l->cat);
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
	flight_change(l, -1);
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
	l->round_start = util_now_ns();
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
