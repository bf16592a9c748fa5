/*
 * test_lock: the cache's lock is never held across a call out of the
 * cache, into the store below or into a stream owner's hooks.
 *
 * A gate in the test store (under the disk tier, or right under the
 * cache) holds every get() of a chosen key, or every list(), until the
 * test opens it: what a disk read that does not come back, or a store
 * call that blocks, looks like from above.  While one reader is stuck
 * there, another reads an object whose blocks are in memory already, and
 * must finish within STALL_WAIT_S seconds.  A listing stream's on-listed
 * function and a plan stream's refill function must find the cache's lock free.
 */
#include "config.h"

#include "store/disk.h"
#include "cache/internal.h"
#include "tests/unit/test_store.h"

#include <errno.h>
#include <ftw.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#define BS	     (64u * 1024u)
#define FAST_SIZE    (4 * BS + 100)
#define SLOW_SIZE    (2 * BS)
#define STALL_WAIT_S 10

/* ---- the gate ---- */

/*
 * The test store with get and list passed through gate_pass(): its ops
 * are a copy of the store's own with those two replaced.
 */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	const struct store_ops *ops; /* the test store's */
	struct store_ops gated;
	const char *key; /* get()s of this key stall while closed */
	bool lists;	 /* list()s stall while closed */
	bool closed;
	unsigned held; /* calls held at the gate so far */
} gate = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

/* Holds the caller while the gate is closed, when stall says so. */
static void gate_pass(bool stall)
{
	pthread_mutex_lock(&gate.lock);
	if (stall && gate.closed) {
		gate.held++;
		pthread_cond_broadcast(&gate.cond);
		while (gate.closed)
			pthread_cond_wait(&gate.cond, &gate.lock);
	}
	pthread_mutex_unlock(&gate.lock);
}

static int gate_get(struct store *st, const struct store_get *req)
{
	gate_pass(gate.key && strcmp(req->key, gate.key) == 0);
	return gate.ops->get(st, req);
}

static int gate_list(struct store *st, const struct store_list *req)
{
	gate_pass(gate.lists);
	return gate.ops->list(st, req);
}

/* Puts the gate in ts, open, holding nothing. */
static void gate_install(struct test_store *ts)
{
	gate.ops = ts->store.ops;
	gate.gated = *ts->store.ops;
	gate.gated.get = gate_get;
	gate.gated.list = gate_list;
	ts->store.ops = &gate.gated;
	gate.key = NULL;
	gate.lists = false;
	gate.closed = false;
	gate.held = 0;
}

static void gate_set(bool closed)
{
	pthread_mutex_lock(&gate.lock);
	gate.closed = closed;
	pthread_cond_broadcast(&gate.cond);
	pthread_mutex_unlock(&gate.lock);
}

static struct timespec deadline_in(int seconds)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += seconds;
	return ts;
}

/* Waits until a call is held at the gate; false after STALL_WAIT_S. */
static bool gate_wait_held(void)
{
	struct timespec until = deadline_in(STALL_WAIT_S);
	bool held;

	pthread_mutex_lock(&gate.lock);
	while (!gate.held && pthread_cond_timedwait(&gate.cond, &gate.lock,
						    &until) != ETIMEDOUT)
		;
	held = gate.held > 0;
	pthread_mutex_unlock(&gate.lock);
	return held;
}

/* ---- reading ---- */

/*
 * Reads s from its start with a reader of its own, checking the bytes
 * against object key (the stream's only object); returns the bytes read
 * (up to max), or -1 on an error or a wrong byte.
 */
static long long read_stream(struct cache *c, struct cache_stream *s,
			     const char *key, uint64_t max)
{
	struct cache_reader *r = cache_reader_create(s);
	struct cache_view v;
	uint64_t pos = 0;
	int rc = 0;

	if (!r)
		return -1;
	while (!rc && pos < max) {
		rc = cache_reader_read(r, pos, 16 * 1024, &v);
		if (!rc && v.bytes == 0) {
			cache_view_release(c, &v);
			break;
		}
		for (int i = 0; !rc && i < v.count; i++) {
			const unsigned char *p = v.iov[i].iov_base;

			for (size_t k = 0; k < v.iov[i].iov_len; k++, pos++)
				if (p[k] != test_store_byte(key, pos))
					rc = EBADMSG;
		}
		cache_view_release(c, &v);
	}
	cache_reader_destroy(r);
	return rc ? -1 : (long long)pos;
}

/* A read on a thread of its own, waited for with a time limit. */
struct job {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
	long long got; /* what read_stream() returned */
	/* what it reads (read_stream()'s arguments) */
	struct cache *c;
	struct cache_stream *s;
	const char *key;
	uint64_t max;
};

static void *job_run(void *arg)
{
	struct job *j = arg;
	long long got = read_stream(j->c, j->s, j->key, j->max);

	pthread_mutex_lock(&j->lock);
	j->got = got;
	j->done = true;
	pthread_cond_broadcast(&j->cond);
	pthread_mutex_unlock(&j->lock);
	return NULL;
}

static void job_start(struct job *j, struct cache *c, struct cache_stream *s,
		      const char *key, uint64_t max)
{
	memset(j, 0, sizeof(*j));
	j->c = c;
	j->s = s;
	j->key = key;
	j->max = max;
	pthread_mutex_init(&j->lock, NULL);
	pthread_cond_init(&j->cond, NULL);
	assert_int_equal(pthread_create(&j->thread, NULL, job_run, j), 0);
}

/* Whether j finished within seconds. */
static bool job_wait(struct job *j, int seconds)
{
	struct timespec until = deadline_in(seconds);
	bool done;

	pthread_mutex_lock(&j->lock);
	while (!j->done &&
	       pthread_cond_timedwait(&j->cond, &j->lock, &until) != ETIMEDOUT)
		;
	done = j->done;
	pthread_mutex_unlock(&j->lock);
	return done;
}

static long long job_join(struct job *j)
{
	pthread_join(j->thread, NULL);
	pthread_cond_destroy(&j->cond);
	pthread_mutex_destroy(&j->lock);
	return j->got;
}

/* ---- the stack ---- */

static char scratch[256]; /* the disk tier's directory */

static int remove_one(const char *path, const struct stat *sb, int type,
		      struct FTW *ftw)
{
	(void)sb;
	(void)type;
	(void)ftw;
	remove(path);
	return 0;
}

enum stack { GATE_ONLY, DISK_OVER_GATE };

struct fixture {
	struct test_store *ts; /* with the gate */
	struct store *top;     /* what the cache is given */
	struct cache *c;
	struct cache_stream *fast, *slow;
};

/*
 * The test store with "fast/0", "slow/0" and "list/0", "list/1", and the
 * gate; with DISK_OVER_GATE a disk tier over it; a cache on top
 * (pages of one key, so that every object of a listing stream is a page
 * of its own); fast and slow, listing streams of one object each.
 */
static void fixture_start(struct fixture *f, enum stack stack)
{
	struct cache_conf conf;
	struct store_error err;

	memset(f, 0, sizeof(*f));
	f->ts = test_store_create(true, 4);
	assert_non_null(f->ts);
	test_store_put(f->ts, "fast/0", "\"f\"", NULL, FAST_SIZE);
	test_store_put(f->ts, "list/0", "\"l0\"", NULL, BS);
	test_store_put(f->ts, "list/1", "\"l1\"", NULL, BS);
	test_store_put(f->ts, "slow/0", "\"s\"", NULL, SLOW_SIZE);
	gate_install(f->ts);
	f->top = &f->ts->store;
	if (stack == DISK_OVER_GATE) {
		struct disk_store_conf dconf;
		const char *tmp = getenv("TMPDIR");
		char msg[256];

		snprintf(scratch, sizeof(scratch), "%s/test_lock.XXXXXX",
			 tmp && *tmp ? tmp : "/tmp");
		assert_non_null(mkdtemp(scratch));
		disk_store_conf_init(&dconf);
		dconf.dir = scratch;
		dconf.size_bytes = 64 * BS;
		dconf.block_size = BS;
		f->top =
		    disk_store_create(&dconf, &f->ts->store, msg, sizeof(msg));
		if (!f->top)
			fail_msg("disk_store_create: %s", msg);
	}
	cache_conf_init(&conf);
	conf.budget_bytes = 32 * BS;
	conf.block_size = BS;
	conf.list_page_keys = 1;
	conf.first_page_keys = 1;
	f->c = cache_create(&conf, f->top);
	assert_non_null(f->c);
	f->fast = cache_stream_create(f->c, "bucket", "fast/");
	f->slow = cache_stream_create(f->c, "bucket", "slow/");
	assert_non_null(f->fast);
	assert_non_null(f->slow);
	assert_int_equal(cache_stream_start(f->fast, &err), 0);
	assert_int_equal(cache_stream_start(f->slow, &err), 0);
	/* fast's blocks into memory */
	assert_int_equal(read_stream(f->c, f->fast, "fast/0", UINT64_MAX),
			 FAST_SIZE);
	assert_int_equal(test_store_wait_idle(f->ts), 0);
}

static void fixture_stop(struct fixture *f, enum stack stack)
{
	store_destroy(f->top); /* its callbacks land in the cache */
	cache_stream_destroy(f->fast);
	cache_stream_destroy(f->slow);
	cache_destroy(f->c);
	if (stack == DISK_OVER_GATE)
		nftw(scratch, remove_one, 8, FTW_DEPTH | FTW_PHYS);
}

/*
 * One reader is held at the gate (in a get() of slow/0, or a list() of
 * the next page of s, as the gate is set); another reads fast/0, whose
 * blocks are in memory, and must be done within STALL_WAIT_S.  Then the
 * gate opens and the held reader gets its bytes.
 */
static void check_stall(struct fixture *f, struct cache_stream *s,
			const char *key, uint64_t max, long long want)
{
	struct job held, fast;
	bool stalled, fast_done = false;

	gate_set(true);
	job_start(&held, f->c, s, key, max);
	stalled = gate_wait_held();
	if (stalled) {
		job_start(&fast, f->c, f->fast, "fast/0", UINT64_MAX);
		fast_done = job_wait(&fast, STALL_WAIT_S);
	}
	gate_set(false); /* whatever happened: let everyone go */
	if (stalled)
		assert_int_equal(job_join(&fast), FAST_SIZE);
	assert_int_equal(job_join(&held), want);
	assert_true(stalled);
	if (!fast_done)
		fail_msg("a read of blocks in memory waited for a store call "
			 "that stalled (the cache's lock held across it)");
}

/*
 * A store whose get() does not return (a synchronous read that stalls),
 * then the disk tier (whose get() passes a miss on to the store below
 * from the caller's thread) over it.
 */
static void test_stalled_get(void **state)
{
	const enum stack stacks[] = {GATE_ONLY, DISK_OVER_GATE};

	(void)state;
	for (size_t i = 0; i < sizeof(stacks) / sizeof(stacks[0]); i++) {
		struct fixture f;

		fixture_start(&f, stacks[i]);
		gate.key = "slow/0";
		check_stall(&f, f.slow, "slow/0", UINT64_MAX, SLOW_SIZE);
		fixture_stop(&f, stacks[i]);
	}
}

/* A reader asking for a listing's next page, whose list() stalls. */
static void test_stalled_list(void **state)
{
	struct fixture f;
	struct cache_stream *s;
	struct store_error err;

	(void)state;
	fixture_start(&f, GATE_ONLY);
	s = cache_stream_create(f.c, "bucket", "list/");
	assert_non_null(s);
	assert_int_equal(cache_stream_start(s, &err), 0); /* list/0 */
	gate.lists = true;
	/* list/0 is read; the page with list/1 is asked for then, and
	 * stalls; both objects' bytes are the pattern of list/0's key only
	 * for the first BS bytes: read those */
	check_stall(&f, s, "list/0", BS, BS);
	/* (the page it asked for lands in s) */
	assert_int_equal(test_store_wait_idle(f.ts), 0);
	cache_stream_destroy(s);
	fixture_stop(&f, GATE_ONLY);
}

/* ---- the hooks ---- */

/* Whether this thread can take the cache's lock, that is, its caller does
 * not hold it (another thread holds it only briefly). */
static bool lock_free(struct cache *c)
{
	struct timespec until = deadline_in(2);

	if (pthread_mutex_timedlock(&c->lock, &until) != 0)
		return false;
	pthread_mutex_unlock(&c->lock);
	return true;
}

struct hook_log {
	struct cache *c;
	unsigned calls;
	unsigned locked; /* calls made with the cache's lock held */
};

static int frame_check(void *arg, struct cache_stream *s,
		       struct cache_object *obj)
{
	struct hook_log *h = arg;

	h->calls++;
	if (!lock_free(h->c))
		h->locked++;
	return cache_stream_add_object(s, obj, 0, cache_object_size(obj));
}

static void want_check(void *arg, struct cache_stream *s)
{
	struct hook_log *h = arg;

	h->calls++;
	if (!lock_free(h->c))
		h->locked++;
	cache_stream_end(s, 0);
}

static void test_hooks_unlocked(void **state)
{
	struct hook_log frames = {0}, wants = {0};
	struct cache_stream *s;
	struct store_error err;
	struct fixture f;

	(void)state;
	fixture_start(&f, GATE_ONLY);
	frames.c = wants.c = f.c;
	/* an on-listed function, for the first page and the next */
	s = cache_stream_create(f.c, "bucket", "list/");
	assert_non_null(s);
	cache_stream_on_listed(s, frame_check, &frames);
	assert_int_equal(cache_stream_start(s, &err), 0);
	assert_int_equal(cache_stream_list_all(s), 0);
	assert_int_equal(frames.calls, 2);
	assert_int_equal(frames.locked, 0);
	assert_int_equal(read_stream(f.c, s, "list/0", BS), BS);
	cache_stream_destroy(s);
	/* a plan's owner asked for more by a reader */
	s = cache_stream_create_plan(f.c, want_check, &wants);
	assert_non_null(s);
	assert_int_equal(read_stream(f.c, s, "none", UINT64_MAX), 0);
	assert_true(wants.calls >= 1);
	assert_int_equal(wants.locked, 0);
	cache_stream_destroy(s);
	assert_int_equal(test_store_wait_idle(f.ts), 0);
	fixture_stop(&f, GATE_ONLY);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_stalled_get),
	    cmocka_unit_test(test_stalled_list),
	    cmocka_unit_test(test_hooks_unlocked),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
