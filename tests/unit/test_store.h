/*
 * test_store: an in-memory store (store/store.h) for the unit tests.
 *
 * Two ways to answer:
 *   - recording (serve == false): every GET, LIST and HEAD is kept, in
 *     order, and answered only when a test says so (test_store_finish_get(),
 *     test_store_finish_head(), or by calling the recorded callbacks
 *     itself), so a test can look at the ranges the cache asks for and play
 *     the store's part step by step;
 *   - serving (serve == true): a thread of its own answers from the objects
 *     put in with test_store_put(), like the S3 engine: LIST pages in key
 *     order with continuation tokens, GETs copied into the buffers with a
 *     buffer_done per buffer, the listed ETag checked, HEADs with an
 *     object's size and ETag (ENOENT for a key it does not hold), and
 *     faults on request (every Nth GET fails).
 * Destroying it cancels what is still open with ECANCELED, as the engine
 * does.
 *
 * Waiting instead of sleeping: every request taken or answered (and every
 * test_store_notify()) wakes whoever waits on the store, so a test waits
 * for a condition (the store idle, n requests made, a flag of its own)
 * rather than for time to pass.  A wait gives up after
 * TEST_STORE_WAIT_SECONDS, says on stderr what it waited for and returns
 * ETIMEDOUT, for the test to fail.
 */
#ifndef S3PIPE_TEST_STORE_H
#define S3PIPE_TEST_STORE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "store/store.h"

#define TEST_STORE_MAX_RECORDED 256
#define TEST_STORE_WAIT_SECONDS 60

enum test_request { TEST_GET, TEST_LIST, TEST_HEAD };

struct test_get {
	char bucket[64];
	char key[256];
	char etag[64]; /* "" when none was sent */
	uint64_t offset;
	uint64_t len; /* all buffers */
	unsigned nbuffers;
	unsigned flags;
	struct store_buffer buffers[STORE_GET_BUFFERS_MAX];
	store_get_buffer_fn *buffer_done;
	store_get_done_fn *done;
	void *arg;
	bool finished; /* done has run */
};

struct test_list {
	char bucket[64];
	char prefix[256];
	char token[64];	       /* "" for the first page */
	char start_after[256]; /* "" when none */
	unsigned max_keys;
	store_list_done_fn *done;
	void *arg;
	bool finished;
};

struct test_head {
	char bucket[64];
	char key[256];
	store_head_done_fn *done;
	void *arg;
	bool finished;
};

struct test_object {
	char *key;
	char *etag;
	unsigned char *data;
	uint64_t size;
};

struct test_store {
	struct store store; /* first: what the cache is given */
	bool serve;
	pthread_mutex_t lock;
	/* recording: what was asked, in order */
	struct test_get gets[TEST_STORE_MAX_RECORDED];
	unsigned ngets;
	struct test_list lists[TEST_STORE_MAX_RECORDED];
	unsigned nlists;
	struct test_head heads[TEST_STORE_MAX_RECORDED];
	unsigned nheads;
	/* serving */
	struct test_object *objects; /* sorted by key */
	unsigned nobjects;
	unsigned fail_every; /* fail every Nth GET with a 503; 0 = never */
	unsigned get_count;
	struct test_queued *queue_head, *queue_tail;
	pthread_cond_t wake;
	bool stopping;
	pthread_t thread;
	struct store_stats stats;
	/* waiting */
	pthread_cond_t changed; /* events moved */
	uint64_t events;	/* requests taken and answered, notifications */
	unsigned pending;	/* serving: taken and not yet answered */
	unsigned made[3];	/* serving: taken, by enum test_request */
};

struct test_store *test_store_create(bool serve, unsigned max_parallel);
void test_store_destroy(struct test_store *ts);
/* Adds (or replaces) an object; data is copied.  Before the first request
 * or with nothing in flight.  Serving mode serves it; recording mode
 * answers HEADs from it (test_store_finish_head). */
void test_store_put(struct test_store *ts, const char *key, const char *etag,
		    const void *data, uint64_t size);
/* Recording mode: answers GET i, filling its buffers with
 * test_store_byte() values and reporting each, then done (err NULL or an
 * error with that errno). */
void test_store_finish_get(struct test_store *ts, unsigned i, int err);
/* Recording mode: answers HEAD i from the objects put in (their size and
 * ETag, or ENOENT for an unknown key) when err is 0, else with an error
 * with that errno. */
void test_store_finish_head(struct test_store *ts, unsigned i, int err);
/* Recording mode: ends every open GET, LIST and HEAD with ECANCELED and
 * forgets them all. */
void test_store_cancel_all(struct test_store *ts);
/*
 * Serving mode: waits until the store is idle, with nothing queued and
 * nothing being answered, so every request made so far has been answered
 * (with the requests its callbacks made in turn).  Once the threads that
 * read through a cache have returned, nothing more will come: the store's
 * byte count is final.  0 or ETIMEDOUT.
 */
int test_store_wait_idle(struct test_store *ts);
/* Waits until at least n requests of a kind have been made: recorded
 * (recording mode: ngets, nlists or nheads, which a test may reset) or
 * taken since the store was made (serving).  0 or ETIMEDOUT. */
int test_store_wait_made(struct test_store *ts, enum test_request kind,
			 unsigned n);
/* Waits until cond(arg) is true; it is tried now and again each time the
 * store takes or answers a request or test_store_notify() runs.  cond runs
 * without the store's lock (it may take a cache's).  what names the
 * condition in the message on a time-out.  0 or ETIMEDOUT. */
typedef bool test_store_cond_fn(void *arg);
int test_store_wait_until(struct test_store *ts, test_store_cond_fn *cond,
			  void *arg, const char *what);
/* Wakes the waiters of test_store_wait_until(): for a test's own events (a
 * hook called, a job done).  Any thread, any lock held but the store's. */
void test_store_notify(struct test_store *ts);
/* The byte at offset of an object (a pattern that differs per key). */
unsigned char test_store_byte(const char *key, uint64_t offset);

#endif
