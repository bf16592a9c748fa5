/*
 * test_policy: the cache's memory policy end to end, over a serving test
 * store (tests/unit/test_store.h) that answers LISTs and GETs from its own
 * thread as the S3 engine does.
 *
 * Covered: scan resistance (a stream larger than the budget, read pass
 * after pass, gets the kept set's bytes from memory every pass, and
 * nothing without a kept set), the window's room beside the kept set (one
 * reader never has to fetch on demand), readers of one stream sharing
 * blocks (a block one passes stays unread for another that has it ahead
 * within its window, is trailing for one further behind, is claimed back
 * by a window that reaches it; a reader destroyed gives its window up),
 * the windows' shares of the budget, four readers at different speeds
 * (byte-exact, within the budget, the fast one not held back), and the
 * next-epoch prefetch (cache_stream_prefetch): what it fetches, that it never
 * evicts unread data, and that the reader it was for finds it in memory.
 *
 * The bytes the store sent count refetches exactly: every GET is made by
 * the thread that reads (or prefetches), so once those have returned the
 * tests wait until the store has answered all it was asked
 * (test_store_wait_idle()) and read its final count.
 */
#include "config.h"

#include "cache/internal.h"
#include "tests/unit/test_store.h"

#include <errno.h>
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

#define KIB 1024ull
#define MIB (1024ull * 1024)
#define BS  (64 * KIB)

/* A serving store holding count objects "s/NNN" of size bytes each, a
 * cache over it and a listing stream of them. */
struct fixture {
	struct test_store *ts;
	struct cache *c;
	struct cache_stream *s;
	unsigned count;
	uint64_t size; /* of each object */
	uint64_t total;
	unsigned char *want; /* the stream's bytes */
};

/* window 0: the automatic one; kept: conf.kept_max */
static void fixture_window(struct fixture *f, unsigned count, uint64_t size,
			   uint64_t budget, uint64_t window, uint64_t kept)
{
	struct cache_conf conf;
	struct store_error err;
	char key[32];

	memset(f, 0, sizeof(*f));
	f->ts = test_store_create(true, 8);
	assert_non_null(f->ts);
	f->count = count;
	f->size = size;
	f->total = count * size;
	f->want = malloc(f->total);
	assert_non_null(f->want);
	for (unsigned i = 0; i < count; i++) {
		snprintf(key, sizeof(key), "s/%03u", i);
		test_store_put(f->ts, key, "\"v1\"", NULL, size);
		for (uint64_t k = 0; k < size; k++)
			f->want[i * size + k] = test_store_byte(key, k);
	}
	cache_conf_init(&conf);
	conf.budget_bytes = budget;
	conf.block_size = BS;
	conf.max_window = window;
	conf.kept_max = kept;
	f->c = cache_create(&conf, &f->ts->store);
	assert_non_null(f->c);
	f->s = cache_stream_create(f->c, "bucket", "s/");
	assert_non_null(f->s);
	assert_int_equal(cache_stream_start(f->s, &err), 0);
	assert_int_equal(cache_stream_list_all(f->s), 0);
}

static void fixture_start(struct fixture *f, unsigned count, uint64_t size,
			  uint64_t budget, uint64_t kept)
{
	fixture_window(f, count, size, budget, 0, kept);
}

/* The store first: what it still answers lands in the cache. */
static void fixture_stop(struct fixture *f)
{
	test_store_destroy(f->ts);
	cache_stream_destroy(f->s);
	cache_destroy(f->c);
	free(f->want);
}

static struct cache_stats stats_of(const struct fixture *f)
{
	struct cache_stats st;

	cache_get_stats(f->c, &st);
	return st;
}

static uint64_t received(const struct fixture *f)
{
	struct store_stats st;

	store_get_stats(&f->ts->store, &st);
	return st.bytes_received;
}

/* The store's byte count once it has answered every GET made so far. */
static uint64_t settled(const struct fixture *f)
{
	assert_int_equal(test_store_wait_idle(f->ts), 0);
	return received(f);
}

/* The block of the stream holding offset off (NULL when none); the lock
 * is taken. */
static struct cache_block *block_at(const struct fixture *f, uint64_t off)
{
	struct cache_block *b = NULL;
	struct cache_object *o;
	char key[32];

	snprintf(key, sizeof(key), "s/%03u", (unsigned)(off / f->size));
	cache_lock(f->c);
	o = cache_object_intern(f->c, "bucket", key, "\"v1\"", f->size);
	assert_non_null(o);
	b = cache_block_lookup(f->c, o, (off % f->size) / BS);
	cache_object_unref(f->c, o);
	cache_unlock(f->c);
	return b;
}

/* Reads r from its position for up to bytes (to the end when 0) in reads
 * of size, checking each byte; returns the bytes read.  With pace, sleeps
 * that many microseconds after each read; progress (when not NULL) gets
 * the position after each read. */
static uint64_t read_on(const struct fixture *f, struct cache_reader *r,
			uint64_t bytes, size_t size, unsigned pace,
			uint64_t *progress)
{
	struct cache_view *v = calloc(1, sizeof(*v));
	uint64_t pos = cache_reader_position(r), start = pos;

	assert_non_null(v);
	while (!bytes || pos - start < bytes) {
		size_t want = size;

		if (bytes && bytes - (pos - start) < want)
			want = (size_t)(bytes - (pos - start));
		assert_int_equal(cache_reader_read(r, pos, want, v), 0);
		if (v->bytes == 0) {
			cache_view_release(f->c, v);
			break;
		}
		for (int i = 0; i < v->count; i++) {
			size_t n = v->iov[i].iov_len;

			if (pos + n > f->total ||
			    memcmp(v->iov[i].iov_base, f->want + pos, n) != 0)
				fail_msg("bytes at %llu differ",
					 (unsigned long long)pos);
			pos += n;
		}
		cache_view_release(f->c, v);
		if (progress)
			__atomic_store_n(progress, pos, __ATOMIC_RELAXED);
		if (pace)
			usleep(pace);
	}
	free(v);
	return pos - start;
}

/* One pass over the whole stream with a fresh reader. */
static void read_pass(const struct fixture *f)
{
	struct cache_reader *r = cache_reader_create(f->s);

	assert_non_null(r);
	assert_int_equal(read_on(f, r, 0, 100000, 0, NULL), f->total);
	cache_reader_destroy(r);
}

/* ---- scan resistance ---- */

/*
 * A stream of 1.5 budgets (the 384 MiB over 256 MiB of the issue, scaled
 * down), read three times: every pass after the first gets the kept set,
 * half the budget, from memory (the store sends the rest only), never
 * fetches on demand, and stays within the budget.  Without a kept set
 * every pass is fetched whole.
 */
static void test_scan_resistance(void **state)
{
	struct fixture f;
	uint64_t prev, got;

	fixture_start(&f, 24, BS, 1 * MIB, CACHE_KEPT_AUTO);
	assert_int_equal(f.c->kept_quota, 512 * KIB);
	read_pass(&f);
	prev = settled(&f);
	assert_int_equal(prev, f.total);
	for (int pass = 1; pass < 3; pass++) {
		read_pass(&f);
		got = settled(&f);
		assert_int_equal(got - prev, f.total - 512 * KIB);
		prev = got;
	}
	assert_int_equal(stats_of(&f).misses, 0);
	assert_int_equal(stats_of(&f).kept_bytes, 512 * KIB);
	assert_true(stats_of(&f).peak_bytes <= 1 * MIB);
	fixture_stop(&f);

	/* the same without a kept set: plain recycling keeps nothing */
	fixture_start(&f, 24, BS, 1 * MIB, 0);
	for (int pass = 0; pass < 3; pass++)
		read_pass(&f);
	assert_int_equal(settled(&f), 3 * f.total);
	fixture_stop(&f);
}

/*
 * One reader over four budgets: beside a full kept set its window always
 * finds room (no read ever fetches on demand) and memory stays within the
 * budget.
 */
static void test_window_room(void **state)
{
	struct fixture f;

	fixture_start(&f, 16, 256 * KIB, 1 * MIB, CACHE_KEPT_AUTO);
	read_pass(&f);
	assert_int_equal(stats_of(&f).misses, 0);
	assert_int_equal(stats_of(&f).kept_bytes, 512 * KIB);
	assert_true(stats_of(&f).peak_bytes <= 1 * MIB);
	assert_int_equal(settled(&f), f.total);
	fixture_stop(&f);
}

/* ---- several readers ---- */

/* The windows share what the kept set leaves: (budget - quota) / readers,
 * at least two blocks, at most the reader's own window. */
static void test_window_shares(void **state)
{
	struct cache_reader *r[20];
	struct fixture f;

	fixture_start(&f, 4, BS, 2 * MIB, CACHE_KEPT_AUTO);
	assert_int_equal(f.c->kept_quota, 1 * MIB);
	r[0] = cache_reader_create(f.s);
	assert_non_null(r[0]);
	cache_lock(f.c);
	assert_int_equal(cache_reader_window(r[0]), 1 * MIB);
	cache_unlock(f.c);
	for (int i = 1; i < 20; i++) {
		r[i] = cache_reader_create(f.s);
		assert_non_null(r[i]);
		cache_lock(f.c);
		if (i == 3)
			assert_int_equal(cache_reader_window(r[0]), 256 * KIB);
		cache_unlock(f.c);
	}
	cache_lock(f.c);
	assert_int_equal(f.c->nreaders, 20);
	assert_int_equal(cache_reader_window(r[7]), 2 * BS);
	cache_unlock(f.c);
	for (int i = 19; i > 0; i--)
		cache_reader_destroy(r[i]);
	cache_lock(f.c);
	assert_int_equal(f.c->nreaders, 1);
	assert_int_equal(cache_reader_window(r[0]), 1 * MIB);
	cache_unlock(f.c);
	cache_reader_destroy(r[0]);
	fixture_stop(&f);
}

enum flag { CONSUMED, TRAILING };

/* A flag of the block holding off (which must be there). */
static bool flag_at(const struct fixture *f, uint64_t off, enum flag which)
{
	struct cache_block *b = block_at(f, off);
	bool set;

	assert_non_null(b);
	cache_lock(f->c);
	set = which == CONSUMED ? b->consumed : b->trailing;
	cache_unlock(f->c);
	return set;
}

static bool is_consumed(const struct fixture *f, uint64_t off)
{
	return flag_at(f, off, CONSUMED);
}

static bool is_trailing(const struct fixture *f, uint64_t off)
{
	return flag_at(f, off, TRAILING);
}

/*
 * Two readers of one stream, in one thread.  Blocks the leader passes stay
 * unread while the follower has them ahead within its window, are trailing
 * past that window, and are claimed back (unread again) when its window
 * reaches them; blocks both passed are consumed, not trailing; the
 * leader's window, given up when it goes, is trailing for the follower.
 * The store sends every byte once.
 */
static void test_readers_share(void **state)
{
	struct cache_reader *lead, *follow;
	struct fixture f;
	uint64_t fw;

	/* 4 MiB of 64 KiB objects, 4 MiB of memory: quota 2 MiB, two
	 * readers' windows 1 MiB each */
	fixture_start(&f, 64, BS, 4 * MIB, CACHE_KEPT_AUTO);
	follow = cache_reader_create(f.s);
	lead = cache_reader_create(f.s);
	assert_non_null(follow);
	assert_non_null(lead);
	cache_lock(f.c);
	fw = cache_reader_window(follow);
	cache_unlock(f.c);
	assert_int_equal(fw, 1 * MIB);
	/* the leader passes 2.5 MiB: the first MiB is in the follower's
	 * window, the rest further on */
	assert_int_equal(
	    read_on(&f, lead, 2 * MIB + 512 * KIB, 100000, 0, NULL),
	    2 * MIB + 512 * KIB);
	assert_false(is_consumed(&f, 0));
	assert_false(is_consumed(&f, fw - BS));
	assert_true(is_consumed(&f, fw));
	assert_true(is_trailing(&f, fw));
	assert_true(is_trailing(&f, 2 * MIB + 448 * KIB));
	assert_int_equal(stats_of(&f).claimed, 0);
	/* the follower reads 256 KiB: its window reaches 1.25 MiB, and
	 * claims that block back; what both passed is consumed, nobody
	 * behind it */
	assert_int_equal(read_on(&f, follow, 256 * KIB, 100000, 0, NULL),
			 256 * KIB);
	assert_true(is_consumed(&f, 0));
	assert_false(is_trailing(&f, 0));
	assert_false(is_consumed(&f, fw));
	assert_false(is_consumed(&f, fw + 192 * KIB));
	assert_true(is_consumed(&f, fw + 256 * KIB));
	assert_true(stats_of(&f).claimed >= 4);
	/* the leader goes: its window, unread, is now the follower's to
	 * read later (trailing) */
	assert_false(is_consumed(&f, 2 * MIB + 512 * KIB));
	cache_reader_destroy(lead);
	assert_true(is_consumed(&f, 2 * MIB + 512 * KIB));
	assert_true(is_trailing(&f, 2 * MIB + 512 * KIB));
	/* the follower reads the rest: every byte was sent once */
	assert_int_equal(read_on(&f, follow, 0, 100000, 0, NULL),
			 f.total - 256 * KIB);
	cache_reader_destroy(follow);
	assert_int_equal(settled(&f), f.total);
	assert_int_equal(stats_of(&f).misses, 0);
	fixture_stop(&f);
}

/* The fast reader tells the parked one that it has finished. */
struct finish_line {
	pthread_mutex_t lock;
	pthread_cond_t done;
	bool fast_done;
	bool timed_out; /* the parked reader gave up waiting */
};

struct paced {
	struct fixture *f;
	struct finish_line *line;
	unsigned pace;	  /* microseconds after each read */
	uint64_t park_at; /* read this much, then wait for the fast one */
	uint64_t got;
	uint64_t progress;
	uint64_t slow_at_end; /* the fast one: the slow one's progress when
				 it finished */
	uint64_t *slow_progress;
};

static void wait_for_fast(struct finish_line *line)
{
	struct timespec until;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 120;
	pthread_mutex_lock(&line->lock);
	while (!line->fast_done && !line->timed_out)
		if (pthread_cond_timedwait(&line->done, &line->lock, &until) ==
		    ETIMEDOUT)
			line->timed_out = true;
	pthread_mutex_unlock(&line->lock);
}

static void *paced_run(void *arg)
{
	struct paced *p = arg;
	struct cache_reader *r = cache_reader_create(p->f->s);

	assert_non_null(r);
	if (p->park_at) {
		p->got = read_on(p->f, r, p->park_at, 64 * KIB, p->pace,
				 &p->progress);
		wait_for_fast(p->line);
	}
	p->got += read_on(p->f, r, 0, 64 * KIB, p->pace, &p->progress);
	if (p->slow_progress) {
		p->slow_at_end =
		    __atomic_load_n(p->slow_progress, __ATOMIC_RELAXED);
		pthread_mutex_lock(&p->line->lock);
		p->line->fast_done = true;
		pthread_cond_broadcast(&p->line->done);
		pthread_mutex_unlock(&p->line->lock);
	}
	cache_reader_destroy(r);
	return NULL;
}

/*
 * Four readers of one stream at different speeds: each gets every byte;
 * memory stays within the budget; the slowest stops a quarter of the way
 * in and waits for the unpaced one, which must finish on its own (had the
 * slow one's window held it back, it would wait until the slow one gave
 * up); the store sends less than one copy per reader.  Waiting rather
 * than pacing keeps this true however slowly the host runs (valgrind).
 */
static void test_readers_speeds(void **state)
{
	static const unsigned paces[4] = {0, 1000, 2000, 5000};
	struct finish_line line = {.lock = PTHREAD_MUTEX_INITIALIZER,
				   .done = PTHREAD_COND_INITIALIZER};
	struct paced jobs[4];
	pthread_t threads[4];
	struct fixture f;
	uint64_t sent;

	fixture_start(&f, 48, 128 * KIB, 1 * MIB, CACHE_KEPT_AUTO);
	for (int i = 0; i < 4; i++)
		jobs[i] =
		    (struct paced){.f = &f, .line = &line, .pace = paces[i]};
	jobs[0].slow_progress = &jobs[3].progress;
	jobs[3].park_at = f.total / 4;
	for (int i = 3; i >= 0; i--)
		assert_int_equal(
		    pthread_create(&threads[i], NULL, paced_run, &jobs[i]), 0);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(pthread_join(threads[i], NULL), 0);
		assert_int_equal(jobs[i].got, f.total);
	}
	assert_false(line.timed_out);
	assert_true(jobs[0].slow_at_end <= f.total / 4);
	assert_true(stats_of(&f).peak_bytes <= 1 * MIB);
	sent = settled(&f);
	print_message("4 readers: %.2f copies sent, the slow one at %.0f%% "
		      "when the fast one finished\n",
		      (double)sent / (double)f.total,
		      100.0 * (double)jobs[0].slow_at_end / (double)f.total);
	assert_true(sent < 4 * f.total);
	fixture_stop(&f);
}

/* ---- the next-epoch prefetch ---- */

/*
 * cache_stream_prefetch() fetches the first bytes of a stream for a reader
 * to come, and only those; the reader then finds them in memory (no miss,
 * nothing sent again).  A second call fetches nothing more.
 */
static void test_prefetch_head(void **state)
{
	struct cache_reader *r;
	struct fixture f;
	uint64_t got;

	fixture_start(&f, 16, 256 * KIB, 2 * MIB, 0);
	assert_true(cache_stream_prefetch(f.s, 384 * KIB));
	assert_int_equal(settled(&f), 384 * KIB);
	assert_false(is_consumed(&f, 0));
	assert_false(is_consumed(&f, 320 * KIB));
	assert_null(block_at(&f, 384 * KIB));
	assert_true(cache_stream_prefetch(f.s, 384 * KIB));
	assert_int_equal(settled(&f), 384 * KIB);
	assert_int_equal(stats_of(&f).prefetched, 6);
	/* the reader it was for: its first reads are hits */
	r = cache_reader_create(f.s);
	assert_non_null(r);
	assert_int_equal(read_on(&f, r, 384 * KIB, 64 * KIB, 0, NULL),
			 384 * KIB);
	assert_int_equal(stats_of(&f).misses, 0);
	assert_int_equal(stats_of(&f).hits, 6);
	got = read_on(&f, r, 0, 64 * KIB, 0, NULL);
	assert_int_equal(got, f.total - 384 * KIB);
	cache_reader_destroy(r);
	assert_int_equal(settled(&f), f.total);
	fixture_stop(&f);
}

/*
 * The next-epoch prefetch never evicts unread data: with the budget full of a
 * reader's window it fetches nothing and says so; once the reader has
 * passed blocks, a later call takes their room.
 */
static void test_prefetch_within_budget(void **state)
{
	struct cache_reader *r;
	struct fixture f;
	struct cache_stats st;

	/* 2 MiB of data, 1 MiB of memory, no kept set: the reader's
	 * window is the whole budget */
	fixture_window(&f, 32, BS, 1 * MIB, 1 * MIB, 0);
	r = cache_reader_create(f.s);
	assert_non_null(r);
	/* the reader at 1 MiB: its window fills the budget, unread, but for
	 * the block it has just passed */
	assert_int_equal(read_on(&f, r, 1 * MIB, 64 * KIB, 0, NULL), 1 * MIB);
	(void)settled(&f);
	st = stats_of(&f);
	assert_int_equal(st.used_bytes, 1 * MIB);
	for (uint64_t off = 1 * MIB; off < 2 * MIB - BS; off += BS)
		assert_non_null(block_at(&f, off));
	/* the next-epoch prefetch takes that one block's room, and no unread
	 * block's */
	assert_false(cache_stream_prefetch(f.s, 256 * KIB));
	assert_int_equal(stats_of(&f).evictions, st.evictions + 1);
	for (uint64_t off = 1 * MIB; off < 2 * MIB - BS; off += BS)
		assert_non_null(block_at(&f, off));
	assert_non_null(block_at(&f, 0));
	assert_null(block_at(&f, BS));
	/* the reader passes four blocks, which its window, at the end of
	 * the stream, does not need: their room goes to the next-epoch prefetch
	 */
	assert_int_equal(read_on(&f, r, 256 * KIB, 64 * KIB, 0, NULL),
			 256 * KIB);
	assert_true(cache_stream_prefetch(f.s, 256 * KIB));
	assert_non_null(block_at(&f, 0));
	assert_non_null(block_at(&f, 192 * KIB));
	assert_true(stats_of(&f).peak_bytes <= 1 * MIB);
	cache_reader_destroy(r);
	fixture_stop(&f);
}

/* A plan stream's owner adds segments when asked: the next-epoch prefetch asks
 * and fetches what it added at once. */
static void want_all(void *arg, struct cache_stream *s)
{
	struct fixture *f = arg;
	char key[32];

	for (unsigned i = 0; i < f->count; i++) {
		struct cache_object *o;

		snprintf(key, sizeof(key), "s/%03u", i);
		o = cache_object_get(f->c, "bucket", key, "\"v1\"", f->size);
		assert_non_null(o);
		assert_int_equal(cache_stream_add_object(s, o, 0, f->size), 0);
		cache_object_put(f->c, o);
	}
	cache_stream_end(s, 0);
}

static void test_prefetch_plan(void **state)
{
	struct cache_stream *plan;
	struct fixture f;

	fixture_start(&f, 8, BS, 2 * MIB, 0);
	plan = cache_stream_create_plan(f.c, want_all, &f);
	assert_non_null(plan);
	assert_true(cache_stream_prefetch(plan, 3 * BS));
	assert_int_equal(settled(&f), 3 * BS);
	/* a plan shorter than the next-epoch prefetch: all of it */
	assert_true(cache_stream_prefetch(plan, 100 * MIB));
	assert_int_equal(settled(&f), f.total);
	cache_stream_destroy(plan);
	fixture_stop(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_scan_resistance),
	    cmocka_unit_test(test_window_room),
	    cmocka_unit_test(test_window_shares),
	    cmocka_unit_test(test_readers_share),
	    cmocka_unit_test(test_readers_speeds),
	    cmocka_unit_test(test_prefetch_head),
	    cmocka_unit_test(test_prefetch_within_budget),
	    cmocka_unit_test(test_prefetch_plan),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
