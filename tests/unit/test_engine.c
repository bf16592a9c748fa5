/*
 * test_engine: the S3 client's engine, driven through the store interface
 * against a scripted HTTP server on the loopback address.
 *
 * The server (a thread in this program) accepts one request per connection
 * and answers it from a script: a status, headers and a body, of which it
 * may send only the first bytes before closing (a connection cut
 * mid-body).  It records each request's line and its Range and If-Match
 * headers, so a test can check what the engine asked for: a resumed GET's
 * range, a retry after a 503, the If-Match it sends, a HEAD's method, and
 * what reaches the caller (bytes, buffer callbacks, a HEAD's size, ETag
 * and Last-Modified time, the error), and how the concurrency limit
 * follows throttling.  Also the credential refresh rule (s3_refresh_due).
 * Nothing leaves 127.0.0.1.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "s3/refresh.h"
#include "s3/s3.h"

#define MAX_STEPS 8

/* One scripted answer. */
struct step {
	int status;
	const char *headers; /* extra header lines, each ending "\r\n" */
	const char *body;
	size_t body_len; /* the Content-Length announced */
	size_t send_len; /* bytes of body sent before closing */
};

/* One request as the server saw it. */
struct seen {
	char line[512];
	char range[64];
	char if_match[64];
};

struct server {
	int fd;
	int port;
	pthread_t thread;
	struct step steps[MAX_STEPS];
	unsigned nsteps;
	struct seen seen[MAX_STEPS];
	unsigned nseen; /* guarded by lock */
	pthread_mutex_t lock;
};

/* The value of header name (lowercase, with ':') in a request head. */
static void header_value(const char *head, const char *name, char *out,
			 size_t len)
{
	const char *p = strcasestr(head, name);
	size_t n;

	out[0] = '\0';
	if (!p)
		return;
	p += strlen(name);
	while (*p == ' ')
		p++;
	n = strcspn(p, "\r\n");
	snprintf(out, len, "%.*s", (int)n, p);
}

static void send_all(int fd, const char *p, size_t len)
{
	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n <= 0)
			return;
		p += n;
		len -= (size_t)n;
	}
}

/* Reads one request head, records it and answers step i. */
static void serve_one(struct server *sv, int fd, unsigned i)
{
	const struct step *st = &sv->steps[i];
	char head[4096];
	char resp[1024];
	size_t got = 0;
	int n;

	while (got + 1 < sizeof(head)) {
		ssize_t r = recv(fd, head + got, sizeof(head) - 1 - got, 0);

		if (r <= 0)
			return;
		got += (size_t)r;
		head[got] = '\0';
		if (strstr(head, "\r\n\r\n"))
			break;
	}
	pthread_mutex_lock(&sv->lock);
	snprintf(sv->seen[i].line, sizeof(sv->seen[i].line), "%.*s",
		 (int)strcspn(head, "\r\n"), head);
	header_value(head, "\nrange:", sv->seen[i].range,
		     sizeof(sv->seen[i].range));
	header_value(head, "\nif-match:", sv->seen[i].if_match,
		     sizeof(sv->seen[i].if_match));
	sv->nseen = i + 1;
	pthread_mutex_unlock(&sv->lock);
	n = snprintf(resp, sizeof(resp),
		     "HTTP/1.1 %d Scripted\r\nContent-Length: %zu\r\n"
		     "Connection: close\r\n%s\r\n",
		     st->status, st->body_len, st->headers ? st->headers : "");
	send_all(fd, resp, (size_t)n);
	send_all(fd, st->body ? st->body : "", st->send_len);
}

static void *server_main(void *arg)
{
	struct server *sv = arg;

	for (unsigned i = 0; i < sv->nsteps; i++) {
		int fd = accept(sv->fd, NULL, NULL);

		if (fd < 0)
			break;
		serve_one(sv, fd, i);
		close(fd);
	}
	return NULL;
}

static void server_start(struct server *sv)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t len = sizeof(sa);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	pthread_mutex_init(&sv->lock, NULL);
	sv->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(sv->fd >= 0);
	assert_int_equal(bind(sv->fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(sv->fd, 16), 0);
	assert_int_equal(getsockname(sv->fd, (struct sockaddr *)&sa, &len), 0);
	sv->port = ntohs(sa.sin_port);
	assert_int_equal(pthread_create(&sv->thread, NULL, server_main, sv), 0);
}

/* Waits for the script to be used up (or cuts it short) and closes. */
static void server_stop(struct server *sv)
{
	shutdown(sv->fd, SHUT_RDWR);
	pthread_join(sv->thread, NULL);
	close(sv->fd);
	pthread_mutex_destroy(&sv->lock);
}

static void add_step(struct server *sv, int status, const char *headers,
		     const char *body, size_t body_len, size_t send_len)
{
	assert_true(sv->nsteps < MAX_STEPS);
	sv->steps[sv->nsteps++] = (struct step){
	    .status = status,
	    .headers = headers,
	    .body = body,
	    .body_len = body_len,
	    .send_len = send_len,
	};
}

/* A client of the server: anonymous, quick retries and timeouts, at most
 * connections transfers at once (0: the default). */
static struct store *client_with(const struct server *sv, unsigned retries,
				 unsigned connections)
{
	struct s3_client_conf conf;
	struct store *st;
	char url[64];

	s3_client_conf_init(&conf);
	if (connections)
		conf.max_connections = connections;
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", sv->port);
	conf.endpoint = strdup(url);
	conf.region = strdup("us-east-1");
	conf.no_sign = true;
	conf.max_retries = retries;
	conf.retry_base_ms = 1;
	conf.retry_max_ms = 2;
	conf.stall_seconds = 5;
	conf.connect_timeout_seconds = 2;
	st = s3_client_create(&conf);
	s3_client_conf_free(&conf);
	assert_non_null(st);
	return st;
}

static struct store *client_for(const struct server *sv, unsigned retries)
{
	return client_with(sv, retries, 0);
}

/* What a GET reported, and a way to wait for it. */
struct outcome {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
	struct store_error err;
	bool failed;
	unsigned buffers_done;
	bool out_of_order; /* a buffer reported twice or before another */
};

static void on_buffer(void *arg, unsigned index)
{
	struct outcome *o = arg;

	pthread_mutex_lock(&o->lock);
	if (index != o->buffers_done) /* (no assert off the main thread) */
		o->out_of_order = true;
	o->buffers_done++;
	pthread_mutex_unlock(&o->lock);
}

static void on_done(void *arg, const struct store_error *err)
{
	struct outcome *o = arg;

	pthread_mutex_lock(&o->lock);
	o->failed = err != NULL;
	if (err)
		o->err = *err;
	o->done = true;
	pthread_cond_signal(&o->cond);
	pthread_mutex_unlock(&o->lock);
}

/* GETs key from offset into two buffers of len/2 and len - len/2 bytes
 * and waits for the outcome. */
static void get_and_wait(struct store *st, const char *etag, uint64_t offset,
			 char *dest, size_t len, unsigned flags,
			 struct outcome *o)
{
	struct store_buffer bufs[2] = {{dest, len / 2},
				       {dest + len / 2, len - len / 2}};
	struct store_get get = {
	    .bucket = "bucket",
	    .key = "dir/obj",
	    .etag = etag,
	    .offset = offset,
	    .buffers = bufs,
	    .nbuffers = 2,
	    .flags = flags,
	    .buffer_done = on_buffer,
	    .done = on_done,
	    .arg = o,
	};

	memset(o, 0, sizeof(*o));
	pthread_mutex_init(&o->lock, NULL);
	pthread_cond_init(&o->cond, NULL);
	assert_int_equal(store_get(st, &get), 0);
	pthread_mutex_lock(&o->lock);
	while (!o->done)
		pthread_cond_wait(&o->cond, &o->lock);
	pthread_mutex_unlock(&o->lock);
	assert_false(o->out_of_order);
}

static const char body[] = "0123456789abcdefghijklmnopqrstuvwxyz";
#define BODY_LEN (sizeof(body) - 1)

/* A ranged GET into two buffers: the path-style URL, the Range and
 * If-Match it sends, both buffers reported in order. */
static void test_get_ranged(void **state)
{
	struct server sv = {0};
	struct store *st;
	struct outcome o;
	struct store_stats stats;
	char dest[10];

	add_step(&sv, 206, "ETag: \"e1\"\r\n", body + 4, 10, 10);
	server_start(&sv);
	st = client_for(&sv, 0);
	get_and_wait(st, "\"e1\"", 4, dest, 10, 0, &o);
	assert_false(o.failed);
	assert_int_equal(o.buffers_done, 2);
	assert_memory_equal(dest, body + 4, 10);
	assert_string_equal(sv.seen[0].line, "GET /bucket/dir/obj HTTP/1.1");
	assert_string_equal(sv.seen[0].range, "bytes=4-13");
	assert_string_equal(sv.seen[0].if_match, "\"e1\"");
	store_get_stats(st, &stats);
	assert_int_equal(stats.requests, 1);
	assert_int_equal(stats.bytes_received, 10);
	store_destroy(st);
	server_stop(&sv);
}

/* A body cut off mid-way: the next attempt asks for the rest only, and
 * the caller sees every byte once. */
static void test_cut_resumes_at_break(void **state)
{
	struct server sv = {0};
	struct store *st;
	struct outcome o;
	struct store_stats stats;
	char dest[BODY_LEN];

	add_step(&sv, 200, "ETag: \"e1\"\r\n", body, BODY_LEN, 20);
	add_step(&sv, 206, "ETag: \"e1\"\r\n", body + 20, BODY_LEN - 20,
		 BODY_LEN - 20);
	server_start(&sv);
	st = client_for(&sv, 3);
	get_and_wait(st, "\"e1\"", 0, dest, BODY_LEN, STORE_GET_WHOLE, &o);
	assert_false(o.failed);
	assert_memory_equal(dest, body, BODY_LEN);
	assert_int_equal(o.buffers_done, 2);
	/* the whole object without Range, then the rest from byte 20 */
	assert_string_equal(sv.seen[0].range, "");
	assert_string_equal(sv.seen[1].range, "bytes=20-35");
	store_get_stats(st, &stats);
	assert_int_equal(stats.retries, 1);
	store_destroy(st);
	server_stop(&sv);
}

/* slowdowns SlowDown answers, then ngets GETs that succeed, through a
 * client of connections transfers: every GET gets its bytes, the retries
 * cover the 503s, and the limit after each GET is after[i]. */
static void throttle_case(unsigned slowdowns, unsigned connections,
			  const uint64_t *after, unsigned ngets)
{
	static const char xml[] = "<Error><Code>SlowDown</Code></Error>";
	struct server sv = {0};
	struct store *st;
	struct outcome o;
	struct store_stats stats;
	char dest[8];

	for (unsigned i = 0; i < slowdowns; i++)
		add_step(&sv, 503, NULL, xml, sizeof(xml) - 1, sizeof(xml) - 1);
	for (unsigned i = 0; i < ngets; i++)
		add_step(&sv, 206, NULL, body, 8, 8);
	server_start(&sv);
	st = client_with(&sv, slowdowns, connections);
	for (unsigned i = 0; i < ngets; i++) {
		get_and_wait(st, NULL, 0, dest, 8, 0, &o);
		assert_false(o.failed);
		assert_memory_equal(dest, body, 8);
		store_get_stats(st, &stats);
		assert_int_equal(stats.concurrency, after[i]);
	}
	assert_int_equal(stats.throttled, slowdowns);
	assert_int_equal(sv.nseen, slowdowns + ngets);
	store_destroy(st);
	server_stop(&sv);
}

/* SlowDown is retried and the retry succeeds; and the concurrency rule: the
 * 503 halves the limit (4 -> 2, the episode's peak is 4), then it grows by
 * one per round of limit successes: the retry and the second GET take it
 * to 3, three more to 4, no further. */
static void test_throttle_halves_and_recovers(void **state)
{
	static const uint64_t after[] = {2, 3, 3, 3, 4, 4};

	(void)state;
	throttle_case(1, 4, after, 6);
}

/* Within a throttling episode (cuts less than 10 s apart) the limit grows
 * back one per round only, even far below the episode's peak: 8 -> 4 -> 2
 * by two 503s in a row, then 2 -> 3 after two successes, 3 -> 4 after
 * three more (one per success, the rule outside an episode, would have
 * reached 4 after two). */
static void test_throttle_episode_grows_slowly(void **state)
{
	static const uint64_t after[] = {2, 3, 3, 3, 4};

	(void)state;
	throttle_case(2, 8, after, 5);
}

/* The refresh rule: lead = min(5 min, a third of the lifetime), at least
 * 1 s, and up to a quarter of it earlier for jitter. */
static void test_refresh_due(void **state)
{
	time_t t0 = 1700000000;

	(void)state;
	/* an hour: 5 min ahead, jitter 0..75 s */
	assert_int_equal(s3_refresh_due(t0, t0 + 3600, 0), t0 + 3600 - 300);
	assert_int_equal(s3_refresh_due(t0, t0 + 3600, 75), t0 + 3600 - 375);
	assert_int_equal(s3_refresh_due(t0, t0 + 3600, 76), t0 + 3600 - 300);
	/* 30 s: 10 s ahead, jitter 0..2 s */
	assert_int_equal(s3_refresh_due(t0, t0 + 30, 0), t0 + 20);
	assert_int_equal(s3_refresh_due(t0, t0 + 30, 2), t0 + 18);
	/* 2 s: at least 1 s ahead */
	assert_int_equal(s3_refresh_due(t0, t0 + 2, 7), t0 + 1);
	/* already expired, or obtained after it: at once */
	assert_int_equal(s3_refresh_due(t0, t0, 5), t0);
	assert_int_equal(s3_refresh_due(t0, t0 - 10, 5), t0);
}

/* Retries run out: the caller gets the last error, nothing reported
 * complete. */
static void test_retries_exhausted(void **state)
{
	static const char xml[] = "<Error><Code>InternalError</Code></Error>";
	struct server sv = {0};
	struct store *st;
	struct outcome o;
	char dest[8];

	for (int i = 0; i < 3; i++)
		add_step(&sv, 500, NULL, xml, sizeof(xml) - 1, sizeof(xml) - 1);
	server_start(&sv);
	st = client_for(&sv, 2);
	get_and_wait(st, NULL, 0, dest, 8, 0, &o);
	assert_true(o.failed);
	assert_int_equal(o.err.err, EIO);
	assert_int_equal(o.err.http_status, 500);
	assert_string_equal(o.err.code, "InternalError");
	assert_int_equal(o.buffers_done, 0);
	assert_int_equal(sv.nseen, 3);
	store_destroy(st);
	server_stop(&sv);
}

/* A response for another version of the object is refused, not retried:
 * the server's ETag is checked even if it ignores If-Match. */
static void test_other_etag_refused(void **state)
{
	struct server sv = {0};
	struct store *st;
	struct outcome o;
	char dest[8];

	add_step(&sv, 206, "ETag: \"e2\"\r\n", body, 8, 8);
	server_start(&sv);
	st = client_for(&sv, 3);
	get_and_wait(st, "\"e1\"", 0, dest, 8, 0, &o);
	assert_true(o.failed);
	assert_int_equal(o.err.err, ESTALE);
	assert_string_equal(o.err.code, "PreconditionFailed");
	assert_int_equal(o.buffers_done, 0);
	assert_int_equal(sv.nseen, 1);
	store_destroy(st);
	server_stop(&sv);
}

/* A 200 with the whole object to a ranged GET is not taken for the
 * range. */
static void test_ignored_range_refused(void **state)
{
	struct server sv = {0};
	struct store *st;
	struct outcome o;
	char dest[8];

	add_step(&sv, 200, NULL, body, BODY_LEN, BODY_LEN);
	server_start(&sv);
	st = client_for(&sv, 3);
	get_and_wait(st, NULL, 8, dest, 8, 0, &o);
	assert_true(o.failed);
	assert_int_equal(o.err.err, EIO);
	assert_non_null(strstr(o.err.message, "Range"));
	assert_int_equal(o.buffers_done, 0);
	store_destroy(st);
	server_stop(&sv);
}

/* A listing page through the blocking list: the query the engine sends
 * and the page it parses. */
static void test_list_page(void **state)
{
	static const char xml[] =
	    "<ListBucketResult><IsTruncated>true</IsTruncated>"
	    "<NextContinuationToken>t2</NextContinuationToken>"
	    "<Contents><Key>p%2Fa%20b</Key><ETag>\"x\"</ETag>"
	    "<Size>5</Size></Contents>"
	    "<EncodingType>url</EncodingType></ListBucketResult>";
	struct server sv = {0};
	struct store *st;
	struct store_list_page page;
	struct store_error err;

	add_step(&sv, 200, NULL, xml, sizeof(xml) - 1, sizeof(xml) - 1);
	server_start(&sv);
	st = client_for(&sv, 0);
	assert_int_equal(
	    store_list_sync(st, "bucket", "p/", "t1", 7, &page, &err), 0);
	assert_string_equal(sv.seen[0].line,
			    "GET /bucket?continuation-token=t1&encoding-type="
			    "url&list-type=2&max-keys=7&prefix=p%2F HTTP/1.1");
	assert_int_equal(page.count, 1);
	assert_string_equal(page.objects[0].key, "p/a b");
	assert_int_equal(page.objects[0].size, 5);
	assert_true(page.truncated);
	assert_string_equal(page.next_token, "t2");
	store_list_page_clear(&page);
	/* a page size S3 would refuse never leaves the client */
	assert_int_equal(
	    store_list_sync(st, "bucket", "p/", NULL, 1001, &page, &err),
	    EINVAL);
	store_destroy(st);
	server_stop(&sv);
}

/* A HEAD through the blocking helper: the method and URL, no Range or
 * If-Match, and the size (past 4 GiB), ETag and time from the headers. */
static void test_head(void **state)
{
	struct server sv = {0};
	struct store *st;
	struct store_object obj;
	struct store_error err;
	struct store_stats stats;

	/* announces 5 TiB, sends no body: a HEAD's answer */
	add_step(&sv, 200,
		 "ETag: \"e1\"\r\n"
		 "Last-Modified: Wed, 21 Oct 2015 07:28:00 GMT\r\n",
		 NULL, 5497558138880ull, 0);
	server_start(&sv);
	st = client_for(&sv, 0);
	assert_int_equal(store_head_sync(st, "bucket", "dir/obj", &obj, &err),
			 0);
	assert_int_equal(err.err, 0);
	assert_int_equal(obj.mtime, 1445412480);
	assert_string_equal(sv.seen[0].line, "HEAD /bucket/dir/obj HTTP/1.1");
	assert_string_equal(sv.seen[0].range, "");
	assert_string_equal(sv.seen[0].if_match, "");
	assert_string_equal(obj.key, "dir/obj");
	assert_string_equal(obj.etag, "\"e1\"");
	assert_true(obj.size == 5497558138880ull);
	store_object_clear(&obj);
	assert_null(obj.key);
	assert_null(obj.etag);
	store_get_stats(st, &stats);
	assert_int_equal(stats.requests, 1);
	assert_int_equal(stats.failures, 0);
	assert_int_equal(stats.bytes_received, 0);
	store_destroy(st);
	server_stop(&sv);
}

/* HEADs answered with the headers of each of cases (at most MAX_STEPS):
 * the mtime of each into out. */
static void head_mtimes(const char *const *cases, size_t n, int64_t *out)
{
	struct server sv = {0};
	struct store_object obj;
	struct store_error err;
	struct store *st;

	for (size_t i = 0; i < n; i++)
		add_step(&sv, 200, cases[i], NULL, 1, 0);
	server_start(&sv);
	st = client_for(&sv, 0);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(
		    store_head_sync(st, "bucket", "dir/obj", &obj, &err), 0);
		assert_string_equal(obj.etag, "\"e\"");
		out[i] = obj.mtime;
		store_object_clear(&obj);
	}
	store_destroy(st);
	server_stop(&sv);
}

/* Last-Modified in IMF-fixdate is the HEAD's mtime; any other form, an
 * impossible date or none is 0, and the HEAD still succeeds.  (Expected
 * values: Python's calendar.timegm of the same fields.) */
static void test_head_last_modified(void **state)
{
	static const struct {
		const char *headers;
		int64_t mtime;
	} cases[] = {
	    {"ETag: \"e\"\r\nLast-Modified: Fri, 27 Nov 2026 17:00:00 GMT\r\n",
	     1795798800},
	    /* the name in any case, blanks around the value */
	    {"last-modified:   Thu, 29 Feb 2024 12:00:00 GMT  \r\n"
	     "ETag: \"e\"\r\n",
	     1709208000},
	    /* the weekday is not checked against the date */
	    {"ETag: \"e\"\r\nLast-Modified: Mon, 21 Oct 2015 07:28:00 GMT\r\n",
	     1445412480},
	    {"ETag: \"e\"\r\n", 0}, /* none */
	    /* the obsolete forms, which S3 never sends */
	    {"ETag: \"e\"\r\nLast-Modified: Wednesday, 21-Oct-15 07:28:00 "
	     "GMT\r\n",
	     0},
	    {"ETag: \"e\"\r\nLast-Modified: Wed Oct 21 07:28:00 2015\r\n", 0},
	    /* not GMT, not a date, not IMF-fixdate's case */
	    {"ETag: \"e\"\r\nLast-Modified: Wed, 21 Oct 2015 07:28:00 UTC\r\n",
	     0},
	    {"ETag: \"e\"\r\nLast-Modified: 2015-10-21T07:28:00Z\r\n", 0},
	    {"ETag: \"e\"\r\nLast-Modified: wed, 21 oct 2015 07:28:00 GMT\r\n",
	     0},
	    /* out of range fields */
	    {"ETag: \"e\"\r\nLast-Modified: Wed, 31 Nov 2015 07:28:00 GMT\r\n",
	     0},
	    {"ETag: \"e\"\r\nLast-Modified: Wed, 29 Feb 2015 07:28:00 GMT\r\n",
	     0},
	    {"ETag: \"e\"\r\nLast-Modified: Wed, 21 Oct 2015 24:00:00 GMT\r\n",
	     0},
	    {"ETag: \"e\"\r\nLast-Modified: Wed, 21 Oct 2015 07:60:00 GMT\r\n",
	     0},
	    {"ETag: \"e\"\r\nLast-Modified: Wed, 21 Oct 2015 07:28:60 GMT\r\n",
	     0},
	    {"ETag: \"e\"\r\nLast-Modified: Wed, 00 Oct 2015 07:28:00 GMT\r\n",
	     0},
	    {"ETag: \"e\"\r\nLast-Modified: Xyz, 21 Oct 2015 07:28:00 GMT\r\n",
	     0},
	    {"ETag: \"e\"\r\nLast-Modified: Wed, 21 Okt 2015 07:28:00 GMT\r\n",
	     0},
	    {"ETag: \"e\"\r\nLast-Modified: Wed, 21 Oct 2015 7:28:00 GMT\r\n",
	     0},
	    {"ETag: \"e\"\r\nLast-Modified: Wed, 21 Oct 2015 07:28:00 GMT "
	     "x\r\n",
	     0},
	    {"ETag: \"e\"\r\nLast-Modified: Thu, 01 Jan 1970 00:00:00 GMT\r\n",
	     0},
	    {"ETag: \"e\"\r\nLast-Modified: Wed, 31 Dec 1969 23:59:59 GMT\r\n",
	     0},
	    {"ETag: \"e\"\r\nLast-Modified:\r\n", 0},
	};
	size_t n = sizeof(cases) / sizeof(cases[0]);
	const char *headers[MAX_STEPS];
	int64_t got[MAX_STEPS];

	(void)state;
	for (size_t first = 0; first < n; first += MAX_STEPS) {
		size_t k = n - first < MAX_STEPS ? n - first : MAX_STEPS;

		for (size_t i = 0; i < k; i++)
			headers[i] = cases[first + i].headers;
		head_mtimes(headers, k, got);
		for (size_t i = 0; i < k; i++)
			if (got[i] != cases[first + i].mtime)
				fail_msg("%s: mtime %lld, not %lld",
					 cases[first + i].headers,
					 (long long)got[i],
					 (long long)cases[first + i].mtime);
	}
}

/* A HEAD's 404 and 403 (no body: the status decides) are ENOENT and
 * EACCES, not retried, and leave nothing in out. */
static void test_head_errors(void **state)
{
	struct server sv = {0};
	struct store *st;
	struct store_object obj;
	struct store_error err;

	add_step(&sv, 404, NULL, NULL, 0, 0);
	add_step(&sv, 403, NULL, NULL, 0, 0);
	server_start(&sv);
	st = client_for(&sv, 3);
	assert_int_equal(store_head_sync(st, "bucket", "missing", &obj, &err),
			 ENOENT);
	assert_int_equal(err.err, ENOENT);
	assert_int_equal(err.http_status, 404);
	assert_null(obj.key);
	assert_null(obj.etag);
	assert_int_equal(store_head_sync(st, "bucket", "secret", &obj, &err),
			 EACCES);
	assert_int_equal(err.http_status, 403);
	assert_null(obj.key);
	assert_int_equal(sv.nseen, 2);
	assert_string_equal(sv.seen[1].line, "HEAD /bucket/secret HTTP/1.1");
	/* an invalid request never leaves the client */
	assert_int_equal(store_head_sync(st, "bucket", NULL, &obj, &err),
			 EINVAL);
	assert_int_equal(err.err, EINVAL);
	store_destroy(st);
	server_stop(&sv);
}

/* A HEAD answered 503 is retried like a GET, and the retry's headers are
 * the answer. */
static void test_head_retried(void **state)
{
	struct server sv = {0};
	struct store *st;
	struct store_object obj;
	struct store_error err;
	struct store_stats stats;

	add_step(&sv, 503,
		 "ETag: \"old\"\r\n"
		 "Last-Modified: Wed, 21 Oct 2015 07:28:00 GMT\r\n",
		 NULL, 99, 0);
	add_step(&sv, 200, "ETag: \"e2\"\r\n", NULL, BODY_LEN, 0);
	server_start(&sv);
	st = client_for(&sv, 2);
	assert_int_equal(store_head_sync(st, "bucket", "dir/obj", &obj, &err),
			 0);
	assert_string_equal(obj.etag, "\"e2\"");
	assert_int_equal(obj.size, BODY_LEN);
	assert_int_equal(obj.mtime, 0); /* the 503's time is not the object's */
	store_object_clear(&obj);
	assert_int_equal(sv.nseen, 2);
	assert_string_equal(sv.seen[0].line, "HEAD /bucket/dir/obj HTTP/1.1");
	assert_string_equal(sv.seen[1].line, "HEAD /bucket/dir/obj HTTP/1.1");
	store_get_stats(st, &stats);
	assert_int_equal(stats.requests, 2);
	assert_int_equal(stats.retries, 1);
	assert_int_equal(stats.failures, 0);
	store_destroy(st);
	server_stop(&sv);
}

/* What start-up does: a HEAD, then a blocking GET of the whole object
 * with the ETag it told.  The GET runs on the easy handle the HEAD used
 * and must be a GET again, with its body (no retries to hide it); a GET
 * of 0 bytes asks the server nothing. */
static void test_head_then_get_sync(void **state)
{
	static const char xml[] = "<Error><Code>NoSuchKey</Code></Error>";
	struct server sv = {0};
	struct store *st;
	struct store_object obj;
	struct store_error err;
	struct store_stats stats;
	struct outcome o;
	char dest[BODY_LEN];

	add_step(&sv, 200, "ETag: \"e1\"\r\n", NULL, BODY_LEN, 0);
	add_step(&sv, 206, "ETag: \"e1\"\r\n", body, BODY_LEN, BODY_LEN);
	add_step(&sv, 200, "ETag: \"e1\"\r\n", NULL, BODY_LEN, 0);
	add_step(&sv, 206, "ETag: \"e1\"\r\n", body + 4, 10, 10);
	add_step(&sv, 404, NULL, xml, sizeof(xml) - 1, sizeof(xml) - 1);
	server_start(&sv);
	st = client_for(&sv, 0);
	assert_int_equal(store_head_sync(st, "bucket", "dir/obj", &obj, &err),
			 0);
	assert_int_equal(obj.size, BODY_LEN);
	memset(dest, 0, sizeof(dest));
	assert_int_equal(store_get_sync(st, "bucket", "dir/obj", obj.etag, dest,
					obj.size, &err),
			 0);
	assert_memory_equal(dest, body, BODY_LEN);
	assert_string_equal(sv.seen[1].line, "GET /bucket/dir/obj HTTP/1.1");
	assert_string_equal(sv.seen[1].range, "bytes=0-35");
	assert_string_equal(sv.seen[1].if_match, "\"e1\"");
	store_object_clear(&obj);

	/* the asynchronous GET after a HEAD, too */
	assert_int_equal(store_head_sync(st, "bucket", "dir/obj", &obj, &err),
			 0);
	store_object_clear(&obj);
	get_and_wait(st, NULL, 4, dest, 10, 0, &o);
	assert_false(o.failed);
	assert_memory_equal(dest, body + 4, 10);
	assert_string_equal(sv.seen[3].line, "GET /bucket/dir/obj HTTP/1.1");

	/* nothing to fetch: no request, success */
	store_get_stats(st, &stats);
	assert_int_equal(stats.requests, 4);
	memset(&err, 0xa5, sizeof(err));
	assert_int_equal(
	    store_get_sync(st, "bucket", "empty", NULL, dest, 0, &err), 0);
	assert_int_equal(err.err, 0);
	store_get_stats(st, &stats);
	assert_int_equal(stats.requests, 4);
	assert_int_equal(sv.nseen, 4);

	/* an error reaches the caller */
	assert_int_equal(
	    store_get_sync(st, "bucket", "gone", NULL, dest, 8, &err), ENOENT);
	assert_int_equal(err.http_status, 404);
	assert_string_equal(err.code, "NoSuchKey");
	assert_string_equal(sv.seen[4].line, "GET /bucket/gone HTTP/1.1");
	store_destroy(st);
	server_stop(&sv);
}

/* Requests still waiting when the client stops end with ECANCELED. */
static void test_destroy_cancels(void **state)
{
	struct server sv = {0};
	struct store *st;
	struct outcome o;
	char dest[8];
	struct store_buffer buf = {dest, 8};
	struct store_get get = {
	    .bucket = "bucket",
	    .key = "k",
	    .buffers = &buf,
	    .nbuffers = 1,
	    .done = on_done,
	    .arg = &o,
	};

	/* a server that accepts and never answers */
	sv.nsteps = 0;
	server_start(&sv);
	memset(&o, 0, sizeof(o));
	pthread_mutex_init(&o.lock, NULL);
	pthread_cond_init(&o.cond, NULL);
	st = client_for(&sv, 0);
	assert_int_equal(store_get(st, &get), 0);
	store_destroy(st);
	assert_true(o.done);
	assert_true(o.failed);
	assert_int_equal(o.err.err, ECANCELED);
	server_stop(&sv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_get_ranged),
	    cmocka_unit_test(test_cut_resumes_at_break),
	    cmocka_unit_test(test_throttle_halves_and_recovers),
	    cmocka_unit_test(test_throttle_episode_grows_slowly),
	    cmocka_unit_test(test_refresh_due),
	    cmocka_unit_test(test_retries_exhausted),
	    cmocka_unit_test(test_other_etag_refused),
	    cmocka_unit_test(test_ignored_range_refused),
	    cmocka_unit_test(test_list_page),
	    cmocka_unit_test(test_head),
	    cmocka_unit_test(test_head_errors),
	    cmocka_unit_test(test_head_retried),
	    cmocka_unit_test(test_head_last_modified),
	    cmocka_unit_test(test_head_then_get_sync),
	    cmocka_unit_test(test_destroy_cancels),
	};

	/* nothing here may reach a proxy or a metadata address */
	unsetenv("http_proxy");
	unsetenv("HTTP_PROXY");
	unsetenv("all_proxy");
	unsetenv("ALL_PROXY");
	return cmocka_run_group_tests(tests, NULL, NULL);
}
