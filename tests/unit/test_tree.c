/*
 * test_tree: a FastFile channel's directory tree (channel/tree.c) over a
 * catalog the test fills itself, with a real cache over the test store
 * (tests/unit/test_store.h) below it.
 *
 * Covered: lookups component by component and the attributes of each
 * node; readdir of every folder (exactly the direct children, each once,
 * every listed folder non-empty) and resuming it from every cookie it
 * gave; the entries' byte order ('-' and '.' sort before '/' in the keys,
 * not among the entries); the keys left out (folder markers, empty, "."
 * and ".." parts, parts longer than 255 bytes, newlines, duplicates, a
 * file whose name is a folder's); a catalog not in byte order; the shard
 * of a host; the order file against an implementation of s3pipe(1)'s
 * shuffle written here (not channel/order.c); file reads at any offset,
 * past the end, across blocks and larger than the budget; and the
 * prefetch that follows the order file, watched on a recording store:
 * which GETs were made before which opens, and when the following stops.
 */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cache/catalog.h"
#include "channel/internal.h"
#include "tests/unit/test_store.h"

#define KIB 1024ull
#define MIB (1024ull * 1024)

#define BUCKET	      "bkt"
#define PREFIX	      "p/"
#define MAX_FILES     128
#define MAX_OPEN      64
#define MAX_LIST      64
#define WATCHDOG_S    300 /* a hung read fails the run (SIGALRM) */
#define NAME_MAX_TEST 255 /* NAME_MAX: the longest entry name */

/* ---- the fixture: a store, a cache, a catalog and its tree ---- */

struct fx {
	struct test_store *ts;
	struct cache *c;
	struct cache_catalog *cat;
	struct channel_spec spec;
	struct channel_host host;
	struct channel_tree *t;
	struct channel_file *open[MAX_OPEN];
	unsigned nopen;
};

/* What a test has live, for the teardown after a failed assertion. */
static struct fx *live_fx;

static void fx_fini(struct fx *f);

static int watchdog(void **state)
{
	(void)state;
	alarm(WATCHDOG_S);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	alarm(0);
	if (live_fx)
		fx_fini(live_fx);
	return 0;
}

/* serve: a store answering from its own thread; else one that records
 * every request and answers only when the test says. */
static void fx_init(struct fx *f, bool serve, uint64_t budget,
		    uint64_t block_size)
{
	struct cache_conf conf;

	memset(f, 0, sizeof(*f));
	live_fx = f;
	f->ts = test_store_create(serve, 16);
	assert_non_null(f->ts);
	cache_conf_init(&conf);
	conf.budget_bytes = budget;
	conf.block_size = block_size;
	f->c = cache_create(&conf, &f->ts->store);
	assert_non_null(f->c);
	f->cat = cache_catalog_create(BUCKET, PREFIX);
	assert_non_null(f->cat);
	snprintf(f->spec.name, sizeof(f->spec.name), "train");
	f->spec.input_mode = CHANNEL_INPUT_FASTFILE;
	f->host.index = 0;
	f->host.count = 1;
}

/* The store first (what it still answers lands in the cache), then the
 * files and the tree, then the cache. */
static void fx_fini(struct fx *f)
{
	test_store_destroy(f->ts);
	f->ts = NULL;
	for (unsigned i = 0; i < f->nopen; i++)
		channel_file_close(f->open[i]);
	f->nopen = 0;
	channel_tree_destroy(f->t);
	f->t = NULL;
	cache_destroy(f->c);
	f->c = NULL;
	cache_catalog_destroy(f->cat);
	f->cat = NULL;
	live_fx = NULL;
}

static void etag_of(const char *key, char out[40])
{
	uint32_t h = 2166136261u;

	for (const char *p = key; *p; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	snprintf(out, 40, "\"%08x%08x%08x%08x\"", h, h ^ 0x5a5a5a5au, h * 3u,
		 h + 7u);
}

/* Adds PREFIX name to the catalog (without a position) and to the store
 * (its bytes are test_store_byte()'s); the entry number. */
static uint32_t fx_add(struct fx *f, const char *name, uint64_t size,
		       int64_t mtime)
{
	char key[CACHE_KEY_MAX + 1];
	char etag[40];
	uint32_t e;

	snprintf(key, sizeof(key), "%s%s", PREFIX, name);
	etag_of(key, etag);
	assert_int_equal(cache_catalog_add(f->cat, key, etag, size, mtime, &e),
			 0);
	test_store_put(f->ts, key, etag, NULL, size);
	return e;
}

/* Gives every entry added so far a position, as they were added. */
static void fx_order_all(struct fx *f)
{
	size_t have = cache_catalog_count(f->cat);
	size_t n = cache_catalog_entries(f->cat);

	assert_int_equal(cache_catalog_order(f->cat, (uint32_t)have, n - have),
			 0);
}

static void fx_tree(struct fx *f)
{
	char err[256] = "";

	f->t = channel_tree_create(f->c, f->cat, &f->spec, &f->host, err,
				   sizeof(err));
	if (!f->t)
		fail_msg("channel_tree_create: %s", err);
}

static struct channel_file *fx_open(struct fx *f, uint64_t node)
{
	struct channel_file *file;

	assert_true(f->nopen < MAX_OPEN);
	file = channel_file_open(f->t, node);
	if (!file)
		fail_msg("channel_file_open(%llu): errno %d",
			 (unsigned long long)node, errno);
	f->open[f->nopen++] = file;
	return file;
}

static void fx_close_all(struct fx *f)
{
	for (unsigned i = 0; i < f->nopen; i++)
		channel_file_close(f->open[i]);
	f->nopen = 0;
}

/* ---- looking up and listing ---- */

/* path from the channel's directory, one component at a time. */
static int lookup_path(const struct channel_tree *t, const char *path,
		       uint64_t *node)
{
	uint64_t at = 0;
	const char *c = path;

	for (;;) {
		const char *slash = strchr(c, '/');
		size_t len = slash ? (size_t)(slash - c) : strlen(c);
		char comp[CACHE_KEY_MAX + 1];
		int rc;

		memcpy(comp, c, len);
		comp[len] = '\0';
		rc = channel_tree_lookup(t, at, comp, &at);
		if (rc)
			return rc;
		if (!slash)
			break;
		c = slash + 1;
	}
	*node = at;
	return 0;
}

static uint64_t must_lookup(const struct channel_tree *t, const char *path)
{
	uint64_t node = UINT64_MAX;
	int rc = lookup_path(t, path, &node);

	if (rc)
		fail_msg("lookup of '%s': %s", path, strerror(rc));
	return node;
}

struct entry {
	char name[NAME_MAX_TEST + 1];
	uint64_t node;
	uint64_t next;
};

struct listing {
	struct entry e[MAX_LIST];
	size_t n;
	size_t limit; /* emit says stop once n reaches it (0: never) */
};

static bool collect(void *arg, const char *name, size_t len, uint64_t node,
		    uint64_t next)
{
	struct listing *l = arg;

	if (l->limit && l->n >= l->limit)
		return false;
	if (l->n >= MAX_LIST)
		fail_msg("more than %d entries", MAX_LIST);
	if (len == 0 || len > NAME_MAX_TEST)
		fail_msg("an entry name of %zu bytes", len);
	if (memchr(name, '/', len))
		fail_msg("an entry name with a '/': %.*s", (int)len, name);
	memcpy(l->e[l->n].name, name, len);
	l->e[l->n].name[len] = '\0';
	l->e[l->n].node = node;
	l->e[l->n].next = next;
	l->n++;
	return true;
}

static void list_from(const struct channel_tree *t, uint64_t dir,
		      uint64_t cookie, struct listing *out)
{
	memset(out, 0, sizeof(*out));
	assert_int_equal(channel_tree_list(t, dir, cookie, collect, out), 0);
}

static void assert_same_entries(const struct entry *got,
				const struct entry *want, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		assert_string_equal(got[i].name, want[i].name);
		assert_int_equal(got[i].node, want[i].node);
		assert_int_equal(got[i].next, want[i].next);
	}
}

/*
 * Resuming dir's listing: from every cookie it gave, the rest exactly;
 * one entry at a time (emit stopping after each), the whole listing.
 */
static void check_resume(const struct channel_tree *t, uint64_t dir,
			 const struct listing *full)
{
	struct listing *rest = malloc(sizeof(*rest));
	uint64_t cookie = 0;
	size_t got = 0;

	assert_non_null(rest);
	for (size_t k = 0; k < full->n; k++) {
		list_from(t, dir, full->e[k].next, rest);
		if (rest->n != full->n - k - 1)
			fail_msg("resumed after entry %zu ('%s'): %zu entries, "
				 "want %zu",
				 k, full->e[k].name, rest->n, full->n - k - 1);
		assert_same_entries(rest->e, &full->e[k + 1], rest->n);
	}
	for (;;) {
		memset(rest, 0, sizeof(*rest));
		rest->limit = 1;
		assert_int_equal(
		    channel_tree_list(t, dir, cookie, collect, rest), 0);
		if (rest->n == 0)
			break;
		assert_true(got < full->n);
		assert_same_entries(rest->e, &full->e[got], 1);
		cookie = rest->e[0].next;
		got++;
	}
	assert_int_equal(got, full->n);
	/* past the last cookie: nothing */
	list_from(t, dir, full->n ? full->e[full->n - 1].next : 0, rest);
	assert_int_equal(rest->n, 0);
	list_from(t, dir, UINT64_MAX, rest);
	assert_int_equal(rest->n, 0);
	free(rest);
}

static int compare_strings(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * dir lists exactly want[0, n), in any order, each once: a name ending in
 * '/' is a folder (its node a directory whose parent is dir), else a file;
 * each entry's node is what a lookup of its name gives.
 */
static void check_dir(const struct channel_tree *t, uint64_t dir,
		      const char *const *want, size_t n)
{
	struct listing *l = malloc(sizeof(*l));
	char *got[MAX_LIST], *exp[MAX_LIST];

	assert_non_null(l);
	list_from(t, dir, 0, l);
	if (l->n != n) {
		for (size_t i = 0; i < l->n; i++)
			fprintf(stderr, "  listed: %s\n", l->e[i].name);
		fail_msg("dir %llu lists %zu entries, want %zu",
			 (unsigned long long)dir, l->n, n);
	}
	for (size_t i = 0; i < n; i++) {
		struct channel_tree_attr a;
		size_t len = strlen(l->e[i].name);
		uint64_t node;

		assert_int_equal(channel_tree_attr(t, l->e[i].node, &a), 0);
		got[i] = malloc(len + 2);
		assert_non_null(got[i]);
		memcpy(got[i], l->e[i].name, len);
		got[i][len] = a.dir ? '/' : '\0';
		got[i][len + 1] = '\0';
		if (a.dir)
			assert_int_equal(a.parent, dir);
		assert_int_equal(
		    channel_tree_lookup(t, dir, l->e[i].name, &node), 0);
		assert_int_equal(node, l->e[i].node);
		exp[i] = (char *)want[i];
	}
	qsort(got, n, sizeof(*got), compare_strings);
	qsort(exp, n, sizeof(*exp), compare_strings);
	for (size_t i = 0; i < n; i++) {
		if (i && strcmp(got[i - 1], got[i]) == 0)
			fail_msg("'%s' listed twice", got[i]);
		if (strcmp(got[i], exp[i]) != 0)
			fail_msg("dir %llu: listed '%s' where '%s' is due",
				 (unsigned long long)dir, got[i], exp[i]);
	}
	for (size_t i = 0; i < n; i++)
		free(got[i]);
	check_resume(t, dir, l);
	free(l);
}

/* The file paths of the whole tree, walked by listing: into paths (each
 * malloc'd), how many.  Every folder listed must list something. */
static size_t walk(const struct channel_tree *t, uint64_t dir, const char *base,
		   char **paths, size_t have, size_t max)
{
	struct listing *l = malloc(sizeof(*l));

	assert_non_null(l);
	list_from(t, dir, 0, l);
	if (dir != 0 && l->n == 0)
		fail_msg("folder '%s' lists nothing", base);
	for (size_t i = 0; i < l->n; i++) {
		struct channel_tree_attr a;
		char path[CACHE_KEY_MAX + NAME_MAX_TEST + 2];

		snprintf(path, sizeof(path), "%s%s%s", base, *base ? "/" : "",
			 l->e[i].name);
		assert_int_equal(channel_tree_attr(t, l->e[i].node, &a), 0);
		if (a.dir) {
			assert_int_equal(a.parent, dir);
			have = walk(t, l->e[i].node, path, paths, have, max);
			continue;
		}
		if (have == max)
			fail_msg("more than %zu files", max);
		paths[have] = strdup(path);
		assert_non_null(paths[have]);
		have++;
	}
	free(l);
	return have;
}

/* The tree shows exactly the files want[0, n) (paths, any order). */
static void check_files(const struct channel_tree *t, const char *const *want,
			size_t n)
{
	char **got = calloc(MAX_FILES, sizeof(*got));
	char **exp = calloc(n ? n : 1, sizeof(*exp));
	size_t have;

	assert_non_null(got);
	assert_non_null(exp);
	have = walk(t, 0, "", got, 0, MAX_FILES);
	for (size_t i = 0; i < n; i++)
		exp[i] = (char *)want[i];
	qsort(got, have, sizeof(*got), compare_strings);
	qsort(exp, n, sizeof(*exp), compare_strings);
	for (size_t i = 0; i < have || i < n; i++) {
		if (i >= have)
			fail_msg("'%s' is not shown", exp[i]);
		if (i >= n)
			fail_msg("'%s' is shown, and should not be", got[i]);
		if (strcmp(got[i], exp[i]) != 0)
			fail_msg("shown '%s' where '%s' is due", got[i],
				 exp[i]);
	}
	assert_int_equal(channel_tree_files(t), n);
	for (size_t i = 0; i < have; i++)
		free(got[i]);
	free(got);
	free(exp);
}

static void check_file_attr(const struct channel_tree *t, const char *path,
			    uint64_t size, int64_t mtime)
{
	struct channel_tree_attr a;

	assert_int_equal(channel_tree_attr(t, must_lookup(t, path), &a), 0);
	assert_false(a.dir);
	assert_int_equal(a.size, size);
	assert_int_equal(a.mtime, mtime);
}

/* ---- 1. nested folders ---- */

static const char *const nested_names[] = {
    "a.bin",	   "sub/b.bin", "sub/deep/c.bin", "sub/deep-2/e.bin",
    "sub-x/d.bin", "z",
};
#define NESTED_N (sizeof(nested_names) / sizeof(nested_names[0]))

static void add_nested(struct fx *f)
{
	for (size_t i = 0; i < NESTED_N; i++)
		fx_add(f, nested_names[i], 100 + i, 1700000000 + (int64_t)i);
}

static void test_nested(void **state)
{
	static struct fx f; /* outlives a failed assertion */
	struct channel_tree_attr a;
	uint64_t root_sub, sub, deep, subx, file, node;
	static const char *const root_want[] = {"a.bin", "sub/", "sub-x/", "z"};
	static const char *const sub_want[] = {"b.bin", "deep/", "deep-2/"};
	static const char *const deep2_want[] = {"e.bin"};
	static const char *const deep_want[] = {"c.bin"};
	static const char *const subx_want[] = {"d.bin"};

	(void)state;
	fx_init(&f, true, 16 * MIB, 64 * KIB);
	add_nested(&f);
	fx_order_all(&f);
	fx_tree(&f);

	/* the channel's own directory */
	assert_int_equal(channel_tree_attr(f.t, 0, &a), 0);
	assert_true(a.dir);
	assert_int_equal(a.parent, 0);

	/* folders, component by component */
	assert_int_equal(channel_tree_lookup(f.t, 0, "sub", &root_sub), 0);
	sub = must_lookup(f.t, "sub");
	assert_int_equal(sub, root_sub);
	assert_int_equal(channel_tree_attr(f.t, sub, &a), 0);
	assert_true(a.dir);
	assert_int_equal(a.parent, 0);
	deep = must_lookup(f.t, "sub/deep");
	assert_int_equal(channel_tree_attr(f.t, deep, &a), 0);
	assert_true(a.dir);
	assert_int_equal(a.parent, sub);
	subx = must_lookup(f.t, "sub-x");
	assert_int_equal(channel_tree_attr(f.t, subx, &a), 0);
	assert_true(a.dir);
	assert_int_equal(a.parent, 0);
	assert_true(sub != deep && sub != subx && deep != subx && sub != 0 &&
		    deep != 0 && subx != 0);

	/* files: size and LastModified as added */
	for (size_t i = 0; i < NESTED_N; i++)
		check_file_attr(f.t, nested_names[i], 100 + i,
				1700000000 + (int64_t)i);

	/* readdir of every folder: the direct children, once each */
	check_dir(f.t, 0, root_want, 4);
	check_dir(f.t, sub, sub_want, 3);
	check_dir(f.t, must_lookup(f.t, "sub/deep-2"), deep2_want, 1);
	assert_int_equal(
	    channel_tree_attr(f.t, must_lookup(f.t, "sub/deep-2"), &a), 0);
	assert_true(a.dir);
	assert_int_equal(a.parent, sub);
	check_dir(f.t, deep, deep_want, 1);
	check_dir(f.t, subx, subx_want, 1);
	check_files(f.t, nested_names, NESTED_N);

	/* what is not there */
	assert_int_equal(channel_tree_lookup(f.t, 0, "nope", &node), ENOENT);
	assert_int_equal(channel_tree_lookup(f.t, 0, "b.bin", &node), ENOENT);
	assert_int_equal(channel_tree_lookup(f.t, 0, "su", &node), ENOENT);
	assert_int_equal(channel_tree_lookup(f.t, 0, "sub-", &node), ENOENT);
	assert_int_equal(channel_tree_lookup(f.t, 0, "sub-x/d.bin", &node),
			 ENOENT);
	assert_int_equal(channel_tree_lookup(f.t, 0, "a", &node), ENOENT);
	assert_int_equal(channel_tree_lookup(f.t, 0, "a.bin.x", &node), ENOENT);
	assert_int_equal(channel_tree_lookup(f.t, 0, "", &node), ENOENT);
	assert_int_equal(channel_tree_lookup(f.t, sub, "c.bin", &node), ENOENT);
	assert_int_equal(channel_tree_lookup(f.t, sub, "d.bin", &node), ENOENT);
	assert_int_equal(channel_tree_lookup(f.t, subx, "b.bin", &node),
			 ENOENT);
	assert_int_equal(channel_tree_lookup(f.t, deep, "deep", &node), ENOENT);
	assert_int_equal(channel_tree_lookup(f.t, deep, "e.bin", &node),
			 ENOENT);
	assert_int_equal(channel_tree_lookup(f.t, sub, "deep-", &node), ENOENT);

	/* a file is no folder */
	file = must_lookup(f.t, "a.bin");
	assert_int_equal(channel_tree_lookup(f.t, file, "x", &node), ENOTDIR);
	assert_int_equal(
	    channel_tree_list(f.t, file, 0, collect, &(struct listing){0}),
	    ENOTDIR);
	file = must_lookup(f.t, "sub/deep/c.bin");
	assert_int_equal(channel_tree_lookup(f.t, file, "c.bin", &node),
			 ENOTDIR);

	/* nodes past the last */
	assert_int_equal(channel_tree_attr(f.t, UINT64_MAX, &a), ENOENT);
	fx_fini(&f);
}

/*
 * Entries come in byte order of their own names (channel.h: "in name
 * order"), even where the keys sort otherwise: '-' (0x2d) and '.' (0x2e)
 * sort before '/' (0x2f), so "sub-x/d.bin" < "sub/b.bin" among keys while
 * "sub" < "sub-x" among entries, and "train.csv" < "train/a" while
 * "train" < "train.csv".
 */
/* entries come in the order of the paths: a folder where its first file
 * is, after a sibling whose name is the folder's and a byte below '/' */
static void test_readdir_path_order(void **state)
{
	static struct fx f; /* outlives a failed assertion */
	static struct listing l;
	static const char *const names[] = {
	    "a.bin",	 "sub/b.bin", "sub/deep/c.bin", "sub-x/d.bin",
	    "train.csv", "train/a",   "train/b",	"z",
	};
	const char *want = "a.bin sub-x sub train.csv train z";
	char got[256] = "";

	(void)state;
	fx_init(&f, true, 16 * MIB, 64 * KIB);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		fx_add(&f, names[i], 1, 0);
	fx_order_all(&f);
	fx_tree(&f);
	list_from(f.t, 0, 0, &l);
	for (size_t i = 0; i < l.n; i++)
		snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%s",
			 i ? " " : "", l.e[i].name);
	if (strcmp(got, want) != 0)
		fail_msg("the channel's directory lists \"%s\", want \"%s\" "
			 "(the paths' order)",
			 got, want);
	fx_fini(&f);
}

/* ---- 2. keys left out ---- */

static void test_left_out(void **state)
{
	static struct fx f; /* outlives a failed assertion */
	char long_ok[256], long_bad[257], key[300];
	uint64_t node, x, q, r;
	struct channel_tree_attr a;
	static const char *const bad[] = {
	    "a//b", "./c",  "d/./e",	 "f/../g",   ".",
	    "..",   "h/..", "new\nline", "dir\nx/f", "/lead",
	};
	const char *shown[16];
	size_t nshown = 0;

	(void)state;
	memset(long_ok, 'n', 255);
	long_ok[255] = '\0';
	memset(long_bad, 'm', 256);
	long_bad[256] = '\0';
	fx_init(&f, true, 16 * MIB, 64 * KIB);

	fx_add(&f, "", 0, 0);	    /* the prefix itself */
	fx_add(&f, "empty/", 0, 0); /* a folder marker, nothing under it */
	fx_add(&f, "keep/", 0, 0);  /* a folder marker with a file */
	fx_add(&f, "keep/f", 3, 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		fx_add(&f, bad[i], 4, 0);
	fx_add(&f, long_bad, 5, 0);
	snprintf(key, sizeof(key), "ok/%s/f", long_bad);
	fx_add(&f, key, 5, 0);
	fx_add(&f, long_ok, 6, 0);
	fx_add(&f, "...", 7, 0); /* a name, not ".." */
	fx_add(&f, ".hidden", 8, 0);
	fx_add(&f, "dup", 9, 5);
	fx_add(&f, "dup", 9, 5);  /* named twice, as a manifest may */
	fx_add(&f, "q/r", 10, 0); /* shadowed by folder q/r */
	fx_add(&f, "q/r/s", 11, 0);
	fx_add(&f, "x", 12, 0);	  /* shadowed by folder x */
	fx_add(&f, "x-1", 13, 0); /* between "x" and "x/y" in key order */
	fx_add(&f, "x.txt", 14, 0);
	fx_add(&f, "x/y", 15, 0);
	fx_add(&f, "zz", 16, 0);
	fx_add(&f, "zz", 16, 0);
	fx_add(&f, "zz", 16, 0);
	/* the catalog in key order, as a listing gives it ("..." etc. sort
	 * before "a//b" and so on: order them for real) */
	{
		size_t n = cache_catalog_entries(f.cat);
		uint32_t *idx = malloc(n * sizeof(*idx));
		bool moved = true;

		assert_non_null(idx);
		for (size_t i = 0; i < n; i++)
			idx[i] = (uint32_t)i;
		while (moved) {
			moved = false;
			for (size_t i = 1; i < n; i++)
				if (strcmp(
					cache_catalog_name(f.cat, idx[i - 1]),
					cache_catalog_name(f.cat, idx[i])) >
				    0) {
					uint32_t t = idx[i];

					idx[i] = idx[i - 1];
					idx[i - 1] = t;
					moved = true;
				}
		}
		for (size_t i = 0; i < n; i++)
			assert_int_equal(cache_catalog_order(f.cat, idx[i], 1),
					 0);
		free(idx);
	}
	fx_tree(&f);

	shown[nshown++] = "keep/f";
	shown[nshown++] = long_ok;
	shown[nshown++] = "...";
	shown[nshown++] = ".hidden";
	shown[nshown++] = "dup";
	shown[nshown++] = "q/r/s";
	shown[nshown++] = "x-1";
	shown[nshown++] = "x.txt";
	shown[nshown++] = "x/y";
	shown[nshown++] = "zz";
	check_files(f.t, shown, nshown);
	assert_int_equal(channel_tree_files(f.t), 10);
	{
		const char *root[] = {"keep/", long_ok, "...", ".hidden",
				      "dup",   "q/",	"x-1", "x.txt",
				      "x/",    "zz"};

		check_dir(f.t, 0, root, 10);
	}

	/* the folder wins */
	x = must_lookup(f.t, "x");
	assert_int_equal(channel_tree_attr(f.t, x, &a), 0);
	assert_true(a.dir);
	check_file_attr(f.t, "x/y", 15, 0);
	q = must_lookup(f.t, "q");
	r = must_lookup(f.t, "q/r");
	assert_int_equal(channel_tree_attr(f.t, r, &a), 0);
	assert_true(a.dir);
	assert_int_equal(a.parent, q);
	check_file_attr(f.t, "q/r/s", 11, 0);
	check_file_attr(f.t, "dup", 9, 5);
	check_file_attr(f.t, long_ok, 6, 0);

	/* what was left out */
	assert_int_equal(lookup_path(f.t, "empty", &node), ENOENT);
	assert_int_equal(lookup_path(f.t, long_bad, &node), ENOENT);
	assert_int_equal(lookup_path(f.t, "ok", &node), ENOENT);
	assert_int_equal(lookup_path(f.t, "a", &node), ENOENT);
	assert_int_equal(lookup_path(f.t, "d", &node), ENOENT);
	assert_int_equal(lookup_path(f.t, "f", &node), ENOENT);
	assert_int_equal(lookup_path(f.t, "h", &node), ENOENT);
	assert_int_equal(lookup_path(f.t, "c", &node), ENOENT);
	assert_int_equal(lookup_path(f.t, "lead", &node), ENOENT);
	assert_int_equal(lookup_path(f.t, "new\nline", &node), ENOENT);
	assert_int_equal(lookup_path(f.t, "dir\nx", &node), ENOENT);
	assert_int_equal(channel_tree_lookup(f.t, 0, ".", &node), ENOENT);
	assert_int_equal(channel_tree_lookup(f.t, 0, "..", &node), ENOENT);
	fx_fini(&f);
}

/* Folder markers alone, and nothing at all: an empty channel directory. */
static void test_empty(void **state)
{
	static struct fx f; /* outlives a failed assertion */
	struct listing l;
	uint64_t node;
	char *text = NULL;
	size_t len = 99;

	(void)state;
	for (int markers = 0; markers < 2; markers++) {
		fx_init(&f, true, 16 * MIB, 64 * KIB);
		if (markers) {
			fx_add(&f, "", 0, 0);
			fx_add(&f, "a/", 0, 0);
			fx_add(&f, "a/b/", 0, 0);
			fx_order_all(&f);
		}
		fx_tree(&f);
		assert_int_equal(channel_tree_files(f.t), 0);
		list_from(f.t, 0, 0, &l);
		assert_int_equal(l.n, 0);
		assert_int_equal(channel_tree_lookup(f.t, 0, "a", &node),
				 ENOENT);
		assert_int_equal(channel_tree_order(f.t, 0, &text, &len), 0);
		assert_non_null(text);
		assert_int_equal(len, 0);
		assert_string_equal(text, "");
		free(text);
		fx_fini(&f);
	}
}

/* ---- 3. a catalog not in byte order ---- */

static void test_unsorted_catalog(void **state)
{
	static struct fx f; /* outlives a failed assertion */
	/* added in this order; positions given in two runs out of order */
	static const char *const added[] = {
	    "m/2", "a", "m/1", "z/q", "b", "m-1", "m/0/x", "m.txt", "a0",
	};
	static const char *const root[] = {"a",	  "a0",	   "b", "m/",
					   "m-1", "m.txt", "z/"};
	static const char *const m[] = {"0/", "1", "2"};
	uint64_t mnode;

	(void)state;
	fx_init(&f, true, 16 * MIB, 64 * KIB);
	for (size_t i = 0; i < sizeof(added) / sizeof(added[0]); i++)
		fx_add(&f, added[i], 20 + i, 1000 + (int64_t)i);
	assert_int_equal(cache_catalog_order(f.cat, 5, 4), 0);
	assert_int_equal(cache_catalog_order(f.cat, 0, 5), 0);
	assert_int_equal(cache_catalog_at(f.cat, 0), 5);
	fx_tree(&f);

	check_files(f.t, added, sizeof(added) / sizeof(added[0]));
	check_dir(f.t, 0, root, 7);
	mnode = must_lookup(f.t, "m");
	check_dir(f.t, mnode, m, 3);
	for (size_t i = 0; i < sizeof(added) / sizeof(added[0]); i++)
		check_file_attr(f.t, added[i], 20 + i, 1000 + (int64_t)i);

	/* the files in byte order among themselves: the order file without
	 * a shuffle */
	{
		char *text = NULL;
		size_t len = 0;
		const char *want =
		    "a\na0\nb\nm-1\nm.txt\nm/0/x\nm/1\nm/2\nz/q\n";

		assert_int_equal(channel_tree_order(f.t, 0, &text, &len), 0);
		assert_int_equal(len, strlen(want));
		assert_string_equal(text, want);
		free(text);
	}
	assert_int_equal(test_store_wait_idle(f.ts), 0);
	fx_fini(&f);
}

/* ---- 4. sharding ---- */

static const char *const shard_names[] = {
    "a/00", "a/01",   "a/02", "b03", "c/04",
    "c/05", "c/x/06", "d07",  "e08", "f09",
};
#define SHARD_N 10

static void shard_tree(struct fx *f, enum channel_distribution dist,
		       unsigned index, unsigned count)
{
	fx_init(f, true, 16 * MIB, 64 * KIB);
	/* out of key order, and with keys left out, which take no ordinal */
	for (size_t i = SHARD_N; i-- > 0;) {
		fx_add(f, shard_names[i], 30 + i, 0);
		if (i == 4)
			fx_add(f, "c/04", 30 + i, 0);
		if (i == 7)
			fx_add(f, "c/bad//name", 1, 0);
		if (i == 2)
			fx_add(f, "a/", 0, 0);
	}
	fx_order_all(f);
	f->spec.distribution = dist;
	f->host.index = index;
	f->host.count = count;
	fx_tree(f);
}

static void test_sharded(void **state)
{
	static struct fx f; /* outlives a failed assertion */
	uint64_t node;
	bool seen[SHARD_N] = {false};

	(void)state;
	for (unsigned index = 0; index < 3; index++) {
		const char *want[SHARD_N];
		size_t n = 0;

		shard_tree(&f, CHANNEL_SHARDED_BY_S3_KEY, index, 3);
		for (size_t i = index; i < SHARD_N; i += 3) {
			want[n++] = shard_names[i];
			assert_false(seen[i]);
			seen[i] = true;
		}
		check_files(f.t, want, n);
		for (size_t i = index; i < SHARD_N; i += 3)
			check_file_attr(f.t, shard_names[i], 30 + i, 0);
		fx_fini(&f);
	}
	for (size_t i = 0; i < SHARD_N; i++)
		assert_true(seen[i]);

	/* host 1 of 3 exactly: ordinals 1, 4, 7 */
	shard_tree(&f, CHANNEL_SHARDED_BY_S3_KEY, 1, 3);
	{
		static const char *const want[] = {"a/01", "c/04", "d07"};
		static const char *const root[] = {"a/", "c/", "d07"};
		static const char *const c[] = {"04"};
		char *text = NULL;
		size_t len = 0;

		check_files(f.t, want, 3);
		check_dir(f.t, 0, root, 3);
		check_dir(f.t, must_lookup(f.t, "c"), c, 1);
		check_file_attr(f.t, "a/01", 31, 0);
		check_file_attr(f.t, "c/04", 34, 0);
		check_file_attr(f.t, "d07", 37, 0);
		assert_int_equal(lookup_path(f.t, "c/x", &node), ENOENT);
		assert_int_equal(lookup_path(f.t, "b03", &node), ENOENT);
		assert_int_equal(lookup_path(f.t, "a/00", &node), ENOENT);
		assert_int_equal(channel_tree_order(f.t, 0, &text, &len), 0);
		assert_string_equal(text, "a/01\nc/04\nd07\n");
		assert_int_equal(len, 14);
		free(text);
		assert_int_equal(test_store_wait_idle(f.ts), 0);
	}
	fx_fini(&f);

	/* one host, or not sharded: everything */
	shard_tree(&f, CHANNEL_SHARDED_BY_S3_KEY, 0, 1);
	check_files(f.t, shard_names, SHARD_N);
	fx_fini(&f);
	shard_tree(&f, CHANNEL_FULLY_REPLICATED, 1, 3);
	check_files(f.t, shard_names, SHARD_N);
	fx_fini(&f);
}

/* ---- 5. the order file ---- */

/* s3pipe(1), "Epoch order", written again here */
static uint64_t ref_mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

struct ref_rng {
	uint64_t state;
};

static void ref_start(struct ref_rng *r, int64_t seed, uint64_t epoch)
{
	r->state = ref_mix(ref_mix((uint64_t)seed) ^ epoch);
}

static uint64_t ref_next(struct ref_rng *r)
{
	r->state += 0x9E3779B97F4A7C15ull;
	return ref_mix(r->state);
}

/* r < 2^64 - (2^64 mod m), then r mod m */
static uint64_t ref_below(struct ref_rng *r, uint64_t m)
{
	uint64_t rem = (UINT64_MAX % m + 1) % m; /* 2^64 mod m */

	for (;;) {
		uint64_t v = ref_next(r);

		if (rem == 0 || v < (uint64_t)0 - rem)
			return v % m;
	}
}

static void ref_order(size_t *order, size_t n, int64_t seed, uint64_t epoch)
{
	struct ref_rng r;

	for (size_t i = 0; i < n; i++)
		order[i] = i;
	ref_start(&r, seed, epoch);
	for (size_t i = n; i-- > 1;) {
		size_t j = (size_t)ref_below(&r, i + 1);
		size_t tmp = order[i];

		order[i] = order[j];
		order[j] = tmp;
	}
}

/* names[0, n) in name order, shuffled by the reference: one a line */
static char *ref_text(const char *const *names, size_t n, bool shuffle,
		      int64_t seed, uint64_t epoch)
{
	size_t order[MAX_FILES], bytes = 1, at = 0;
	char *out;

	assert_true(n <= MAX_FILES);
	for (size_t i = 0; i < n; i++) {
		order[i] = i;
		bytes += strlen(names[i]) + 1;
	}
	if (shuffle)
		ref_order(order, n, seed, epoch);
	out = malloc(bytes);
	assert_non_null(out);
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(names[order[i]]);

		memcpy(out + at, names[order[i]], len);
		at += len;
		out[at++] = '\n';
	}
	out[at] = '\0';
	return out;
}

/* in name order (byte order of the whole name), as the test sorts them */
static const char *const order_names[] = {
    "a-1", "a.txt", "a/0", "a/1", "a/b/2",   "b", "c/3", "c/4",
    "d",   "e/5",   "f",   "g",	  "h/i/j/6", "k", "l",	 "m",
};
#define ORDER_N (sizeof(order_names) / sizeof(order_names[0]))

static void test_order_file(void **state)
{
	static struct fx f; /* outlives a failed assertion */
	char *text = NULL, *want, *first = NULL;
	size_t len = 0;
	struct ref_rng r;
	static const int64_t seeds[] = {7, -1234567890123ll};

	(void)state;
	for (size_t i = 1; i < ORDER_N; i++)
		assert_true(strcmp(order_names[i - 1], order_names[i]) < 0);
	/* the reference against SplitMix64's known first output */
	ref_start(&r, 0, 0);
	assert_int_equal(ref_next(&r), 0xE220A8397B1DCDAFull);

	/* no shuffle: name order, every epoch */
	fx_init(&f, true, 16 * MIB, 64 * KIB);
	for (size_t i = ORDER_N; i-- > 0;)
		fx_add(&f, order_names[i], 1 + i, 0);
	fx_order_all(&f);
	fx_tree(&f);
	want = ref_text(order_names, ORDER_N, false, 0, 0);
	for (unsigned epoch = 0; epoch < 3; epoch++) {
		assert_int_equal(channel_tree_order(f.t, epoch, &text, &len),
				 0);
		assert_int_equal(len, strlen(want));
		assert_string_equal(text, want);
		free(text);
	}
	free(want);
	assert_int_equal(test_store_wait_idle(f.ts), 0);
	fx_fini(&f);

	/* with a seed: the documented shuffle of the files in name order */
	for (size_t s = 0; s < 2; s++) {
		fx_init(&f, true, 16 * MIB, 64 * KIB);
		for (size_t i = 0; i < ORDER_N; i++)
			fx_add(&f, order_names[i], 1 + i, 0);
		fx_order_all(&f);
		f.spec.shuffle = true;
		f.spec.seed = seeds[s];
		fx_tree(&f);
		for (unsigned epoch = 0; epoch < 3; epoch++) {
			want = ref_text(order_names, ORDER_N, true, seeds[s],
					epoch);
			assert_int_equal(
			    channel_tree_order(f.t, epoch, &text, &len), 0);
			assert_int_equal(len, strlen(want));
			if (strcmp(text, want) != 0)
				fail_msg("seed %lld epoch %u:\n%s\nwant:\n%s",
					 (long long)seeds[s], epoch, text,
					 want);
			if (epoch == 0) {
				/* not name order */
				char *plain =
				    ref_text(order_names, ORDER_N, false, 0, 0);

				assert_string_not_equal(text, plain);
				free(plain);
				free(first);
				first = text;
			} else {
				/* epochs differ */
				assert_string_not_equal(text, first);
				free(text);
			}
			free(want);
		}
		/* the same epoch again: the same order */
		assert_int_equal(channel_tree_order(f.t, 0, &text, &len), 0);
		assert_string_equal(text, first);
		free(text);
		if (s == 1) {
			/* seeds differ */
			char *other =
			    ref_text(order_names, ORDER_N, true, seeds[0], 0);

			assert_string_not_equal(first, other);
			free(other);
		}
		assert_int_equal(test_store_wait_idle(f.ts), 0);
		fx_fini(&f);
	}
	free(first);
}

/* ---- 6. reading files ---- */

static void check_read(struct channel_file *file, const char *key,
		       uint64_t size, uint64_t offset, size_t len)
{
	struct channel_file_view v;
	size_t want = offset >= size	    ? 0
		      : size - offset < len ? (size_t)(size - offset)
					    : len;
	uint64_t off = offset;
	size_t sum = 0;
	int rc = channel_file_read(file, offset, len, &v);

	if (rc) {
		channel_file_view_release(file, &v);
		fail_msg("read %zu at %llu: %s", len,
			 (unsigned long long)offset, strerror(rc));
	}
	if (v.bytes != want) {
		size_t got = v.bytes;

		channel_file_view_release(file, &v);
		fail_msg("read %zu at %llu of %llu: %zu bytes, want %zu", len,
			 (unsigned long long)offset, (unsigned long long)size,
			 got, want);
	}
	for (int k = 0; k < v.count; k++) {
		const unsigned char *p = v.iov[k].iov_base;

		for (size_t j = 0; j < v.iov[k].iov_len; j++, off++)
			if (p[j] != test_store_byte(key, off))
				fail_msg("%s byte %llu differs", key,
					 (unsigned long long)off);
		sum += v.iov[k].iov_len;
	}
	assert_int_equal(sum, want);
	channel_file_view_release(file, &v);
	assert_int_equal(v.bytes, 0);
	assert_null(v.copy);
}

static void test_file_read(void **state)
{
	static struct fx f; /* outlives a failed assertion */
	struct channel_file *big, *small, *empty;
	const uint64_t big_size = 200000; /* 3 blocks and a bit */
	uint64_t seed = 12345;

	(void)state;
	fx_init(&f, true, 4 * MIB, 64 * KIB);
	fx_add(&f, "d/big", big_size, 0);
	fx_add(&f, "d/empty", 0, 0);
	fx_add(&f, "small", 1000, 0);
	fx_order_all(&f);
	fx_tree(&f);

	big = fx_open(&f, must_lookup(f.t, "d/big"));
	assert_int_equal(channel_file_size(big), big_size);
	/* across block boundaries, forward, backward, whole */
	check_read(big, PREFIX "d/big", big_size, 64 * KIB - 7, 14);
	check_read(big, PREFIX "d/big", big_size, 128 * KIB - 1, 2);
	check_read(big, PREFIX "d/big", big_size, 0, 200000);
	check_read(big, PREFIX "d/big", big_size, 1, 199999);
	check_read(big, PREFIX "d/big", big_size, 3 * 64 * KIB - 100, 4000);
	check_read(big, PREFIX "d/big", big_size, 10, 64 * KIB + 2);
	/* at and past the end */
	check_read(big, PREFIX "d/big", big_size, big_size - 10, 100);
	check_read(big, PREFIX "d/big", big_size, big_size - 1, 1);
	check_read(big, PREFIX "d/big", big_size, big_size, 4096);
	check_read(big, PREFIX "d/big", big_size, big_size + 1, 4096);
	check_read(big, PREFIX "d/big", big_size, 1ull << 40, 4096);
	check_read(big, PREFIX "d/big", big_size, 5, 0);
	/* at random */
	for (int i = 0; i < 300; i++) {
		uint64_t off, len;

		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		off = (seed >> 33) % (big_size + 100);
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		len = 1 + (seed >> 33) % (i % 10 == 0 ? 150000 : 9000);
		check_read(big, PREFIX "d/big", big_size, off, (size_t)len);
	}
	/* a sequential run, as a reader going forward */
	for (uint64_t off = 0; off < big_size; off += 4096)
		check_read(big, PREFIX "d/big", big_size, off, 4096);

	small = fx_open(&f, must_lookup(f.t, "small"));
	assert_int_equal(channel_file_size(small), 1000);
	check_read(small, PREFIX "small", 1000, 0, 1000);
	check_read(small, PREFIX "small", 1000, 999, 5000);
	check_read(small, PREFIX "small", 1000, 1000, 1);
	empty = fx_open(&f, must_lookup(f.t, "d/empty"));
	assert_int_equal(channel_file_size(empty), 0);
	check_read(empty, PREFIX "d/empty", 0, 0, 4096);

	/* folders and nodes past the last are no files */
	errno = 0;
	assert_null(channel_file_open(f.t, 0));
	assert_int_equal(errno, EISDIR);
	errno = 0;
	assert_null(channel_file_open(f.t, must_lookup(f.t, "d")));
	assert_int_equal(errno, EISDIR);
	errno = 0;
	assert_null(channel_file_open(f.t, UINT64_MAX));
	assert_int_equal(errno, ENOENT);

	/* two opens of one file read the same bytes */
	{
		struct channel_file *again =
		    fx_open(&f, must_lookup(f.t, "d/big"));

		check_read(again, PREFIX "d/big", big_size, 70000, 60000);
		check_read(big, PREFIX "d/big", big_size, 70000, 60000);
	}
	fx_close_all(&f);
	assert_int_equal(test_store_wait_idle(f.ts), 0);
	fx_fini(&f);
}

/* A read larger than the whole budget still returns every byte asked
 * for (channel.h: a short read would make the file look shorter). */
static void test_file_read_over_budget(void **state)
{
	static struct fx f; /* outlives a failed assertion */
	struct channel_file *big;
	const uint64_t size = 6 * 64 * KIB + 123;

	(void)state;
	fx_init(&f, true, 256 * KIB, 64 * KIB);
	fx_add(&f, "big", size, 0);
	fx_order_all(&f);
	fx_tree(&f);
	big = fx_open(&f, must_lookup(f.t, "big"));
	check_read(big, PREFIX "big", size, 0, (size_t)size);
	check_read(big, PREFIX "big", size, 100, (size_t)size);
	check_read(big, PREFIX "big", size, 64 * KIB - 1, 5 * 64 * KIB);
	fx_close_all(&f);
	assert_int_equal(test_store_wait_idle(f.ts), 0);
	fx_fini(&f);
}

/* ---- 7. following the order file ---- */

#define FOLLOW_N    12
#define FOLLOW_SIZE (64 * KIB) /* one block each */

/* The order file's lines, split in place: lines[i] points into text. */
static size_t split_lines(char *text, char **lines, size_t max)
{
	size_t n = 0;

	for (char *p = text; *p;) {
		char *nl = strchr(p, '\n');

		assert_non_null(nl);
		*nl = '\0';
		assert_true(n < max);
		lines[n++] = p;
		p = nl + 1;
	}
	return n;
}

/* Whether a GET of PREFIX name was made (recording store), and how many
 * of them. */
static unsigned gets_of(struct fx *f, const char *name)
{
	char key[256];
	unsigned n = 0;

	snprintf(key, sizeof(key), "%s%s", PREFIX, name);
	for (unsigned i = 0; i < f->ts->ngets; i++)
		if (strcmp(f->ts->gets[i].key, key) == 0)
			n++;
	return n;
}

static void follow_tree(struct fx *f, size_t nfiles, char names[][16])
{
	/* the window the order keeps prefetched is a quarter of the
	 * budget: 256 KiB, four of these files */
	fx_init(f, false, 1 * MIB, 64 * KIB);
	for (size_t i = 0; i < nfiles; i++) {
		snprintf(names[i], 16, "%s/f%03zu", i % 2 ? "odd" : "even", i);
		fx_add(f, names[i], FOLLOW_SIZE, 0);
	}
	/* sorted: "even/..." before "odd/..." */
	{
		size_t n = cache_catalog_entries(f->cat);

		for (size_t i = 0; i < n; i += 2)
			assert_int_equal(
			    cache_catalog_order(f->cat, (uint32_t)i, 1), 0);
		for (size_t i = 1; i < n; i += 2)
			assert_int_equal(
			    cache_catalog_order(f->cat, (uint32_t)i, 1), 0);
	}
	f->spec.shuffle = true;
	f->spec.seed = 99;
	fx_tree(f);
}

/* follow_tree(), then epoch 0's order file taken: its text (the caller's
 * to free) cut into lines[0, nfiles). */
static char *follow_order0(struct fx *f, size_t nfiles, char names[][16],
			   char *lines[])
{
	char *text = NULL;
	size_t len = 0;

	follow_tree(f, nfiles, names);
	assert_int_equal(channel_tree_order(f->t, 0, &text, &len), 0);
	assert_int_equal(split_lines(text, lines, nfiles), nfiles);
	return text;
}

static void test_follow(void **state)
{
	static struct fx f; /* outlives a failed assertion */
	char names[FOLLOW_N][16];
	char *text = NULL, *lines[FOLLOW_N];
	size_t len = 0, n;
	struct channel_tree_stats st;
	struct channel_file *files[FOLLOW_N];

	(void)state;
	follow_tree(&f, FOLLOW_N, names);
	channel_tree_get_stats(f.t, &st);
	assert_int_equal(st.orders, 0);
	assert_int_equal(st.prefetched, 0);
	assert_int_equal(f.ts->ngets, 0);

	assert_int_equal(channel_tree_order(f.t, 0, &text, &len), 0);
	n = split_lines(text, lines, FOLLOW_N);
	assert_int_equal(n, FOLLOW_N);
	/* the first four in the order are being fetched, whole, and
	 * nothing else */
	assert_int_equal(f.ts->ngets, 4);
	for (size_t p = 0; p < FOLLOW_N; p++)
		assert_int_equal(gets_of(&f, lines[p]), p < 4 ? 1 : 0);
	for (unsigned i = 0; i < f.ts->ngets; i++) {
		assert_int_equal(f.ts->gets[i].offset, 0);
		assert_int_equal(f.ts->gets[i].len, FOLLOW_SIZE);
	}
	channel_tree_get_stats(f.t, &st);
	assert_int_equal(st.orders, 1);
	assert_int_equal(st.prefetched, 4);
	assert_int_equal(st.opens, 0);

	/* opening in the order: each file's GET was made before its open,
	 * and each open moves the window one file on */
	for (size_t p = 0; p < FOLLOW_N; p++) {
		if (gets_of(&f, lines[p]) != 1)
			fail_msg("no GET of '%s' (position %zu) before its "
				 "open",
				 lines[p], p);
		files[p] = fx_open(&f, must_lookup(f.t, lines[p]));
		assert_int_equal(f.ts->ngets,
				 p + 5 < FOLLOW_N ? p + 5 : FOLLOW_N);
		channel_tree_get_stats(f.t, &st);
		assert_int_equal(st.opens, p + 1);
		assert_int_equal(st.opens_prefetched, p + 1);
		assert_int_equal(st.prefetched, f.ts->ngets);
	}
	for (size_t p = 0; p < FOLLOW_N; p++)
		assert_int_equal(gets_of(&f, lines[p]), 1);

	/* the store answers: every read is served from those blocks, with
	 * no GET more */
	for (unsigned i = 0; i < f.ts->ngets; i++)
		test_store_finish_get(f.ts, i, 0);
	for (size_t p = 0; p < FOLLOW_N; p++) {
		char key[64];

		snprintf(key, sizeof(key), "%s%s", PREFIX, lines[p]);
		check_read(files[p], key, FOLLOW_SIZE, 0, FOLLOW_SIZE);
	}
	assert_int_equal(f.ts->ngets, FOLLOW_N);
	free(text);
	fx_fini(&f);
}

static void open_close(struct fx *f, uint64_t node)
{
	struct channel_file *file = channel_file_open(f->t, node);

	if (!file)
		fail_msg("channel_file_open(%llu): errno %d",
			 (unsigned long long)node, errno);
	channel_file_close(file);
}

/* Opens far from the window stop the following; an open in the order
 * before that resets the count; a new order file starts again. */
static void test_follow_strays(void **state)
{
	static struct fx f; /* outlives a failed assertion */
	enum { N = 100 };
	static char names[N][16];
	char *text = NULL, *lines[N], *text1 = NULL, *lines1[N];
	size_t len = 0;
	struct channel_tree_stats st;
	uint64_t far;
	unsigned want_new = 0;
	char asked[6][64];

	(void)state;
	text = follow_order0(&f, N, names, lines);
	assert_int_equal(f.ts->ngets, 4);

	/* following from the first open on: the window moves */
	open_close(&f, must_lookup(f.t, lines[0]));
	assert_int_equal(f.ts->ngets, 5);
	assert_int_equal(gets_of(&f, lines[4]), 1);

	/* position 90: beyond the window and a batch after it, a stray */
	far = must_lookup(f.t, lines[90]);
	for (int i = 0; i < 31; i++)
		open_close(&f, far);
	assert_int_equal(f.ts->ngets, 5);
	channel_tree_get_stats(f.t, &st);
	assert_int_equal(st.opens, 1 + 31);
	assert_int_equal(st.opens_prefetched, 1);

	/* in the order again: following, the window moves */
	open_close(&f, must_lookup(f.t, lines[1]));
	assert_int_equal(f.ts->ngets, 6);
	assert_int_equal(gets_of(&f, lines[5]), 1);
	channel_tree_get_stats(f.t, &st);
	assert_int_equal(st.opens_prefetched, 2);

	/* 32 in a row stop it */
	for (int i = 0; i < 32; i++)
		open_close(&f, far);
	open_close(&f, must_lookup(f.t, lines[2]));
	assert_int_equal(f.ts->ngets, 6);
	channel_tree_get_stats(f.t, &st);
	assert_int_equal(st.opens, 1 + 31 + 1 + 32 + 1);
	assert_int_equal(st.opens_prefetched, 2);
	assert_int_equal(st.prefetched, 6);

	/* a new order file: its first four, less those asked for already */
	for (unsigned i = 0; i < 6; i++)
		snprintf(asked[i], sizeof(asked[i]), "%s", f.ts->gets[i].key);
	assert_int_equal(channel_tree_order(f.t, 1, &text1, &len), 0);
	assert_int_equal(split_lines(text1, lines1, N), N);
	for (size_t p = 0; p < 4; p++) {
		char key[64];
		bool before = false;

		snprintf(key, sizeof(key), "%s%s", PREFIX, lines1[p]);
		for (unsigned i = 0; i < 6; i++)
			before = before || strcmp(asked[i], key) == 0;
		want_new += !before;
	}
	for (size_t p = 0; p < 4; p++)
		assert_int_equal(gets_of(&f, lines1[p]), 1);
	assert_int_equal(f.ts->ngets, 6 + want_new);
	channel_tree_get_stats(f.t, &st);
	assert_int_equal(st.orders, 2);
	assert_int_equal(st.prefetched, 6 + 4);
	free(text);
	free(text1);
	fx_fini(&f);
}

/* Answers every GET still open (recording store), then opens PREFIX name,
 * reads it whole and closes it, as a sampler's worker would. */
static void open_read_close(struct fx *f, const char *name)
{
	struct channel_file *file;
	char key[64];

	for (unsigned i = 0; i < f->ts->ngets; i++)
		if (!f->ts->gets[i].finished)
			test_store_finish_get(f->ts, i, 0);
	file = fx_open(f, must_lookup(f->t, name));
	snprintf(key, sizeof(key), "%s%s", PREFIX, name);
	check_read(file, key, FOLLOW_SIZE, 0, FOLLOW_SIZE);
	fx_close_all(f);
}

/*
 * Taking the order file of the epoch being followed again (another rank
 * on the host, a DataLoader worker, a `cat` of it: fs/ops.c takes it at
 * every open) keeps the following where the opens are: the files after
 * them are still prefetched before they are opened.
 */
static void test_follow_order_reread(void **state)
{
	static struct fx f; /* outlives a failed assertion */
	enum { N = 150, FIRST = 80 };
	static char names[N][16];
	char *text = NULL, *lines[N], *again = NULL, *lines2[N];
	size_t len = 0;
	struct channel_tree_stats st;

	(void)state;
	text = follow_order0(&f, N, names, lines);
	for (size_t p = 0; p < FIRST; p++) {
		if (gets_of(&f, lines[p]) != 1)
			fail_msg("no GET of '%s' (position %zu) before its "
				 "open",
				 lines[p], p);
		open_read_close(&f, lines[p]);
	}
	assert_int_equal(f.ts->ngets, FIRST + 4);

	/* the same order, taken again */
	assert_int_equal(channel_tree_order(f.t, 0, &again, &len), 0);
	assert_int_equal(split_lines(again, lines2, N), N);
	for (size_t p = 0; p < N; p++)
		assert_string_equal(lines2[p], lines[p]);
	for (size_t p = FIRST; p < N; p++) {
		if (gets_of(&f, lines[p]) != 1)
			fail_msg("no GET of '%s' (position %zu) before its "
				 "open, after the order file was taken again",
				 lines[p], p);
		open_read_close(&f, lines[p]);
	}
	channel_tree_get_stats(f.t, &st);
	assert_int_equal(st.opens, N);
	assert_int_equal(st.opens_prefetched, N);
	assert_int_equal(f.ts->ngets, N);
	free(again);
	free(text);
	fx_fini(&f);
}

/*
 * A sampler that skips files of the order (every third here): what was
 * prefetched for them is given up once the opens are a window (four
 * files) past them.  Kept unread, 20 skipped files' blocks would fill the
 * 1 MiB budget and stop the prefetch; given up, every open finds its file
 * prefetched to the end.
 */
/*
 * A sampler resumed at position 70 of the order: its first open there
 * moves the following (the next four are fetched, then one more each open
 * in the order), and the four prefetched at the head, which no open will
 * take, are given up.
 */
static void test_follow_jump(void **state)
{
	static struct fx f; /* outlives a failed assertion */
	enum { N = 100 };
	static char names[N][16];
	char *text = NULL, *lines[N];
	struct channel_tree_stats st;

	(void)state;
	text = follow_order0(&f, N, names, lines);
	assert_int_equal(f.ts->ngets, 4); /* the head: 0 to 3 */
	open_close(&f, must_lookup(f.t, lines[70]));
	assert_int_equal(f.ts->ngets, 8);
	for (size_t p = 71; p < 75; p++)
		assert_int_equal(gets_of(&f, lines[p]), 1);
	channel_tree_get_stats(f.t, &st);
	assert_int_equal(st.released, 4);
	assert_int_equal(st.opens_prefetched, 0);
	/* the order from there on: each open found prefetched, the window
	 * one file further each time */
	for (size_t p = 71; p < 80; p++)
		open_read_close(&f, lines[p]);
	assert_int_equal(f.ts->ngets, 8 + 9);
	assert_int_equal(gets_of(&f, lines[83]), 1);
	assert_int_equal(gets_of(&f, lines[84]), 0);
	assert_int_equal(gets_of(&f, lines[4]), 0);
	channel_tree_get_stats(f.t, &st);
	assert_int_equal(st.opens_prefetched, 9);
	/* an open behind the frontier (a worker a little behind) asks for
	 * nothing */
	open_close(&f, must_lookup(f.t, lines[5]));
	assert_int_equal(f.ts->ngets, 17);
	free(text);
	fx_fini(&f);
}

static void test_follow_skipped(void **state)
{
	static struct fx f; /* outlives a failed assertion */
	enum { N = 61 };
	static char names[N][16];
	char *text = NULL, *lines[N];
	size_t opened = 0, skipped = 0;
	struct channel_tree_stats st;

	(void)state;
	text = follow_order0(&f, N, names, lines);
	for (size_t p = 0; p < N; p++) {
		if (p % 3 == 2) {
			/* skipped, but prefetched all the same */
			assert_int_equal(gets_of(&f, lines[p]), 1);
			skipped += p < N - 4;
			continue;
		}
		if (gets_of(&f, lines[p]) != 1)
			fail_msg(
			    "'%s' (position %zu) was not prefetched before "
			    "its open",
			    lines[p], p);
		open_read_close(&f, lines[p]);
		opened++;
	}
	channel_tree_get_stats(f.t, &st);
	assert_int_equal(st.opens, opened);
	assert_int_equal(st.opens_prefetched, opened);
	/* given up: the skipped ones more than four files behind the last
	 * open (the window) */
	assert_int_equal(st.released, skipped);
	free(text);
	fx_fini(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_nested, watchdog, teardown),
	    cmocka_unit_test_setup_teardown(test_readdir_path_order, watchdog,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_left_out, watchdog, teardown),
	    cmocka_unit_test_setup_teardown(test_empty, watchdog, teardown),
	    cmocka_unit_test_setup_teardown(test_unsorted_catalog, watchdog,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_sharded, watchdog, teardown),
	    cmocka_unit_test_setup_teardown(test_order_file, watchdog,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_file_read, watchdog, teardown),
	    cmocka_unit_test_setup_teardown(test_file_read_over_budget,
					    watchdog, teardown),
	    cmocka_unit_test_setup_teardown(test_follow, watchdog, teardown),
	    cmocka_unit_test_setup_teardown(test_follow_strays, watchdog,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_follow_jump, watchdog,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_follow_order_reread, watchdog,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_follow_skipped, watchdog,
					    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
