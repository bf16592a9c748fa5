/*
 * s3 engine: one thread, one curl multi handle, every transfer.
 *
 * Submitters (FUSE threads, the cache) append requests to a locked queue
 * and wake the engine through an eventfd: the client is a store
 * (store/store.h) whose get, list and head only queue a request.  The engine
 * waits in epoll_wait() and drives curl with curl_multi_socket_action(),
 * so each wakeup touches only the transfers whose sockets are ready (with
 * dozens of connections a poll()-and-perform loop spends its time
 * scanning).  It moves requests to its private pending list, starts at
 * most max_connections at once, builds and signs each attempt just before
 * it starts (s3/request.c), and finishes them from curl_multi_info_read(),
 * where s3/error.c judges the outcome.  A HEAD is a GET without a body
 * (CURLOPT_NOBODY, set for every attempt since easy handles are reused):
 * its answer is the ETag, Content-Length and Last-Modified headers (the
 * last one read leniently: a form other than IMF-fixdate, or none, is an
 * mtime of 0, not an error).  GET bodies are
 * written straight into the caller's buffers (one request may fill
 * several, reporting each as it completes); a failed attempt is retried
 * after an exponential backoff with jitter and resumes at the byte where
 * it broke.  An urgent GET (a reader is waiting for it) goes first and
 * gets a head start: no non-urgent request starts while an urgent GET is
 * still waiting for its response, so a burst of prefetches never stands
 * between the server and the bytes a reader needs now.  Only the engine
 * thread touches curl handles, the pending/delayed lists, the signer's
 * key cache and the credentials, so none of those need a lock.
 *
 * Credentials that expire are refreshed by s3/refresh.c on its own thread,
 * which hands fresh ones over under the queue's lock; the engine signs
 * every attempt after that with them.  An attempt refused because the
 * credentials expired (a refresh that came late or failed) asks the
 * refresher to try at once and is retried like any other failure.
 *
 * Throttling (the concurrency rule, AIMD): the engine starts up to limit
 * transfers at once, limit starting at max_connections.  An answer asking
 * to slow down (503, 429, SlowDown, s3_error_throttled()) halves limit (not
 * below 1), once per round: only answers to attempts started after the
 * last cut count.  Successes raise it again by one per round (limit
 * successes), up to max_connections; once 10 s have passed without a cut
 * (the episode is over), by one per success (doubling each round) while it
 * is below half of where the episode began.  Cuts less than 10 s apart
 * are one episode.
 *
 * Retries: up to max_retries, but only UNANSWERED_RETRIES for a connection
 * that cannot be made before the endpoint has ever answered: at start-up
 * that is a wrong endpoint, later an outage worth the whole budget.
 *
 * Request life: queue -> pending -> running -> (delayed -> pending)* -> done.
 */
#include "config.h"

#include "s3/internal.h"
#include "s3/refresh.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#define ERROR_BODY_MAX	(64 * 1024)
#define LIST_BODY_MAX	(64 * 1024 * 1024)
#define GET_BUFFER_SIZE (512 * 1024)
#define MIN_BUFFER_SIZE (4 * 1024) /* a HEAD, a small object (below) */
#define EPOLL_BATCH	64	   /* events taken per epoll_wait() */
/* a plain-HTTP body socket wakes the engine once this much has arrived,
 * not per packet, while at least twice as much is owed (body_set_lowat) */
#define BODY_RCVLOWAT (256 * 1024)
/* retries of a connection that cannot be made, before the endpoint has
 * ever answered (a wrong endpoint fails the mount in about a second) */
#define UNANSWERED_RETRIES 2
/* throttling answers less than this apart belong to one episode */
#define LIMIT_EPISODE_NS (10ull * 1000000000u)

struct s3_request {
	struct s3_request *next;
	struct s3_request *prev; /* running list only */
	enum s3_request_kind kind;
	char *bucket;
	char *key;	   /* GET, HEAD: object key; LIST: prefix */
	char *etag;	   /* GET: If-Match value, may be NULL */
	char *token;	   /* LIST: continuation token, may be NULL */
	char *start_after; /* LIST: may be NULL */
	unsigned max_keys;
	uint64_t offset; /* GET: first byte of the object wanted */
	size_t len;	 /* GET: bytes wanted (the buffers' total) */
	size_t got;	/* GET: bytes already delivered (kept across retries) */
	unsigned buf;	/* GET: the buffer being filled */
	size_t buf_got; /* GET: bytes already in that buffer */
	size_t attempt_from; /* GET: got when this attempt started */
	bool urgent;
	bool unanswered; /* an urgent GET attempt with no response yet */
	bool whole;	 /* GET: the whole object; Range only when resuming */
	unsigned attempt;
	uint64_t started_ns; /* when this attempt started */
	uint64_t due_ns;     /* when a delayed retry may start */

	/* per attempt */
	CURL *easy;
	struct curl_slist *headers;
	long status;
	bool status_known;
	bool etag_mismatch;
	bool overflow;
	bool ignored_range;
	char resp_etag[128];
	uint64_t resp_size; /* Content-Length, when resp_size_known */
	bool resp_size_known;
	int64_t resp_mtime;   /* Last-Modified; 0 when none parsed */
	int fd;		      /* the connection's socket once curl named it */
	unsigned lowat;	      /* SO_RCVLOWAT on fd: 1 (the default) or raised */
	struct util_buf body; /* LIST body, or an error body */
	char *url;	      /* owned; rebuilt for each attempt */
	char curl_error[CURL_ERROR_SIZE];

	struct s3_client *client;
	store_get_buffer_fn *buffer_done;
	store_get_done_fn *get_done;
	store_list_done_fn *list_done;
	store_head_done_fn *head_done;
	void *arg;
	unsigned nbuffers;
	struct store_buffer buffers[]; /* GET: where the body goes */
};

struct s3_client {
	struct store store; /* first: the client is a store */
	/* configuration, immutable after create */
	struct s3_endpoint endpoint;
	bool force_path_style;
	bool tls_verify;
	char *ca_bundle;
	char *region;
	struct s3_creds creds; /* empty when anonymous; engine thread only */
	unsigned max_connections;
	unsigned max_retries;
	unsigned retry_base_ms;
	unsigned retry_max_ms;
	unsigned stall_seconds;
	unsigned connect_timeout_seconds;

	CURLM *multi;
	int epoll_fd; /* curl's sockets and wake_fd */
	int wake_fd;  /* eventfd: the queue or stopping changed */
	pthread_t thread;
	bool thread_started;

	pthread_mutex_t lock; /* guards queue, stopping and fresh */
	struct s3_request *queue_head;
	struct s3_request *queue_tail;
	bool stopping;
	struct s3_creds fresh; /* from the refresher, not taken yet */
	bool have_fresh;
	struct s3_refresher *refresher; /* NULL: nothing to refresh */

	/* engine thread only */
	struct s3_request *pending_head;
	struct s3_request *pending_tail;
	struct s3_request *delayed;	 /* sorted by due_ns */
	struct s3_request *running_list; /* attached to the multi handle */
	uint64_t timer_due_ns;		 /* curl's timeout; 0 = none */
	/* sockets curl let go of while one epoll batch is being handled: a
	 * later event of that batch may name a new socket that reuses the
	 * number, and must not reach it (level-triggered epoll reports a
	 * real one again) */
	int batch_removed[EPOLL_BATCH];
	unsigned nbatch_removed; /* more than fit: skip the rest */
	unsigned running;
	unsigned running_gets;	    /* of those, GETs (stats.gets_in_flight) */
	unsigned urgent_unanswered; /* running requests with unanswered set */
	bool answered; /* the endpoint has answered at least once */
	/* the concurrency rule (see the top of the file) */
	unsigned limit;	       /* transfers that may run at once */
	unsigned limit_credit; /* successes towards the next step up */
	unsigned limit_peak;   /* where the last throttling episode began */
	uint64_t last_cut_ns;  /* when the limit was last cut */
	CURL **idle;
	unsigned nidle;
	unsigned rand_state;
	struct s3_signer signer; /* its key is a secret: wiped on destroy */
	/* written by the engine only, read by s3_client_get_stats(); a cache
	 * line of its own, away from the lock and queue the submitters write */
	struct store_stats stats __attribute__((aligned(64)));
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_result;

static void curl_init(void)
{
	curl_init_result = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static void stats_add(uint64_t *field, uint64_t n)
{
	__atomic_add_fetch(field, n, __ATOMIC_RELAXED);
}

/* The engine's count of running GETs, published for get_stats. */
static void gets_running_set(struct s3_client *c, unsigned n)
{
	c->running_gets = n;
	__atomic_store_n(&c->stats.gets_in_flight, (uint64_t)n,
			 __ATOMIC_RELAXED);
}

/* ---- requests ---- */

static void request_free(struct s3_request *r)
{
	if (!r)
		return;
	/* (bucket, key and etag are in r's own allocation) */
	free(r->token);
	free(r->start_after);
	free(r->url);
	curl_slist_free_all(r->headers);
	util_buf_free(&r->body);
	free(r);
}

/* ---- curl callbacks (engine thread) ---- */

static void note_status(struct s3_request *r)
{
	if (!r->status_known) {
		curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &r->status);
		r->status_known = true;
	}
}

/* r's response has begun, or its attempt is over: requests held back for
 * its head start may go. */
static void note_answered(struct s3_request *r)
{
	if (r->unanswered) {
		r->unanswered = false;
		r->client->urgent_unanswered--;
	}
}

static bool etag_equal(const char *a, const char *b)
{
	size_t la, lb;

	while (*a == '"')
		a++;
	while (*b == '"')
		b++;
	la = strlen(a);
	lb = strlen(b);
	while (la && a[la - 1] == '"')
		la--;
	while (lb && b[lb - 1] == '"')
		lb--;
	return la == lb && strncmp(a, b, la) == 0;
}

/*
 * Asks the kernel to wake the engine for r's socket only once
 * BODY_RCVLOWAT bytes are there: at full speed one wakeup and one recv()
 * per 256 KiB instead of per few packets.  The mark is up only while at
 * least twice that is still owed and goes back to 1 below, so it never
 * holds back the end of a body (a closed connection wakes the socket
 * anyway) nor the next response on the same connection, even if something
 * between the socket and curl (the TLS of an https proxy) has taken some
 * bytes off the socket already; bodies shorter than that never change it.
 * Not for https endpoints: there the socket holds ciphertext that OpenSSL
 * reads ahead.
 */
static void body_set_lowat(struct s3_request *r)
{
	unsigned want =
	    r->len - r->got >= 2 * BODY_RCVLOWAT ? BODY_RCVLOWAT : 1;
	int v = (int)want;

	if (r->fd < 0 || want == r->lowat)
		return;
	if (setsockopt(r->fd, SOL_SOCKET, SO_RCVLOWAT, &v, sizeof(v)) == 0)
		r->lowat = want;
}

/* r lets go of its socket: a mark left above 1 (a body cut off) goes, in
 * case curl keeps the connection for another response. */
static void body_forget_socket(struct s3_request *r)
{
	if (r->fd >= 0 && r->lowat > 1) {
		int one = 1;

		setsockopt(r->fd, SOL_SOCKET, SO_RCVLOWAT, &one, sizeof(one));
	}
	r->fd = -1;
	r->lowat = 1;
}

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	struct s3_request *r = userdata;
	size_t n = size * nmemb;

	note_status(r);
	if (r->status < 200 || r->status > 299) {
		size_t room = ERROR_BODY_MAX - r->body.len;

		util_buf_append(&r->body, ptr, n < room ? n : room);
		return n;
	}
	if (r->kind == S3_REQUEST_HEAD)
		return n; /* (curl reads no body for a HEAD) */
	if (r->kind == S3_REQUEST_LIST) {
		if (util_buf_append(&r->body, ptr, n))
			return 0; /* too large: abort */
		return n;
	}
	if (r->got == r->attempt_from) {
		/* the first bytes of this attempt: is it what we asked for? */
		if (r->etag && r->resp_etag[0] &&
		    !etag_equal(r->etag, r->resp_etag)) {
			r->etag_mismatch = true;
			return 0;
		}
		if (r->status == 200 && r->offset + r->attempt_from != 0) {
			r->ignored_range = true;
			return 0;
		}
	}
	if (n > r->len - r->got) {
		r->overflow = true;
		return 0;
	}
	r->got += n;
	while (n) {
		struct store_buffer *b = &r->buffers[r->buf];
		size_t take = b->len - r->buf_got;

		if (take > n)
			take = n;
		util_copy_to_cold(b->dest + r->buf_got, ptr, take);
		ptr += take;
		n -= take;
		r->buf_got += take;
		if (r->buf_got == b->len) {
			util_copy_publish();
			if (r->buffer_done)
				r->buffer_done(r->arg, r->buf);
			r->buf++;
			r->buf_got = 0;
		}
	}
	body_set_lowat(r);
	return size * nmemb;
}

static size_t on_header(char *buf, size_t size, size_t nitems, void *userdata)
{
	struct s3_request *r = userdata;
	size_t n = size * nitems, len = 0;
	const char *v;

	if (n >= 5 && strncmp(buf, "HTTP/", 5) == 0) {
		note_answered(r);
		r->resp_etag[0] = '\0';
		r->resp_size_known = false;
		r->resp_mtime = 0;
		r->status_known = false;
		return n;
	}
	v = s3_header_value(buf, n, "etag:", &len);
	if (v) {
		if (len < sizeof(r->resp_etag)) {
			memcpy(r->resp_etag, v, len);
			r->resp_etag[len] = '\0';
		}
		return n;
	}
	v = s3_header_value(buf, n, "content-length:", &len);
	if (v) {
		r->resp_size_known = s3_parse_length(v, len, &r->resp_size);
		return n;
	}
	v = s3_header_value(buf, n, "last-modified:", &len);
	if (v)
		r->resp_mtime = s3_parse_http_date(v, len);
	return n;
}

/* ---- starting and finishing attempts (engine thread) ---- */

/*
 * Easy handles are kept and reused without curl_easy_reset(): the options
 * that never change are set once here, so curl keeps its receive buffer
 * (a reset would free it and the next transfer would fault in a new one).
 */
static CURL *take_easy(struct s3_client *c)
{
	CURL *e;

	if (c->nidle)
		return c->idle[--c->nidle];
	e = curl_easy_init();
	if (!e)
		return NULL;
	s3_http_easy_setup(e, c->connect_timeout_seconds * 1000u, c->tls_verify,
			   c->ca_bundle);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, (long)c->stall_seconds);
	curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
	return e;
}

static void give_easy(struct s3_client *c, CURL *e)
{
	if (c->nidle < c->max_connections) {
		c->idle[c->nidle++] = e;
	} else {
		curl_easy_cleanup(e);
	}
}

static void set_error(struct store_error *err, int e,
		      const struct s3_request *r)
{
	memset(err, 0, sizeof(*err));
	err->err = e;
	if (r) {
		err->http_status = r->status;
		snprintf(err->url, sizeof(err->url), "%s",
			 r->url ? r->url : "");
	}
}

/* Hands the outcome to the submitter (a LIST body is parsed here, a
 * HEAD's headers become an object) and frees the request. */
static void complete(struct s3_client *c, struct s3_request *r,
		     const struct store_error *err)
{
	struct store_list_page page;
	struct store_object obj = {
	    .key = r->key,
	    .etag = r->resp_etag[0] ? r->resp_etag : NULL,
	    .size = r->resp_size,
	    .mtime = r->resp_mtime,
	};
	struct store_error perr;

	if (r->kind == S3_REQUEST_LIST && !err) {
		int rc = s3_xml_parse_list(r->body.data, r->body.len, &page);

		if (rc) {
			set_error(&perr, rc, r);
			snprintf(perr.message, sizeof(perr.message),
				 "malformed ListObjectsV2 response");
			err = &perr;
		}
	}
	if (err)
		stats_add(&c->stats.failures, 1);
	switch (r->kind) {
	case S3_REQUEST_GET:
		r->get_done(r->arg, err);
		break;
	case S3_REQUEST_LIST:
		r->list_done(r->arg, err ? NULL : &page, err);
		break;
	case S3_REQUEST_HEAD:
		r->head_done(r->arg, err ? NULL : &obj, err);
		break;
	}
	request_free(r);
}

/* Whether the first pending request may start now: there is a free
 * connection, and it is urgent or no urgent GET is waiting for its
 * response (see the top of the file). */
static bool may_start(const struct s3_client *c)
{
	const struct s3_request *r = c->pending_head;

	return r && c->running < c->limit &&
	       (r->urgent || c->urgent_unanswered == 0);
}

static void publish_limit(struct s3_client *c)
{
	__atomic_store_n(&c->stats.concurrency, (uint64_t)c->limit,
			 __ATOMIC_RELAXED);
}

/* A throttling answer to an attempt that started after the last cut (the
 * answers to attempts sent at the old rate count as one): halve. */
static void limit_throttled(struct s3_client *c, const struct s3_request *r)
{
	unsigned was = c->limit;

	stats_add(&c->stats.throttled, 1);
	if (r->started_ns <= c->last_cut_ns)
		return;
	/* a new episode: the level where it began is the peak */
	if (c->last_cut_ns == 0 ||
	    util_now_ns() - c->last_cut_ns > LIMIT_EPISODE_NS)
		c->limit_peak = c->limit;
	c->limit = c->limit / 2 ? c->limit / 2 : 1;
	c->limit_credit = 0;
	c->last_cut_ns = util_now_ns();
	publish_limit(c);
	if (c->limit != was)
		util_info("throttled by the server: at most %u transfers at "
			  "once (was %u)",
			  c->limit, was);
}

/* A success: one step up per round (limit successes); one per success
 * (doubling each round) once no cut came for an episode's length, while
 * below half the peak. */
static void limit_succeeded(struct s3_client *c)
{
	bool calm = util_now_ns() - c->last_cut_ns > LIMIT_EPISODE_NS;
	unsigned step_every =
	    calm && c->limit < c->limit_peak / 2 ? 1 : c->limit;

	if (c->limit >= c->max_connections)
		return;
	if (++c->limit_credit < step_every)
		return;
	c->limit_credit = 0;
	c->limit++;
	publish_limit(c);
	if (c->limit == c->max_connections)
		util_info("no longer throttled: up to %u transfers at once",
			  c->limit);
	else
		util_debug("up to %u transfers at once", c->limit);
}

static void enqueue_pending(struct s3_client *c, struct s3_request *r)
{
	r->next = NULL;
	if (r->urgent) {
		r->next = c->pending_head;
		c->pending_head = r;
		if (!c->pending_tail)
			c->pending_tail = r;
		return;
	}
	if (c->pending_tail)
		c->pending_tail->next = r;
	else
		c->pending_head = r;
	c->pending_tail = r;
}

/* Builds what this attempt sends: a fresh URL, headers and signature. */
static int build_attempt(struct s3_client *c, struct s3_request *r)
{
	struct s3_request_spec spec = {
	    .kind = r->kind,
	    .bucket = r->bucket,
	    .key = r->key,
	    .etag = r->etag,
	    .token = r->token,
	    .start_after = r->start_after,
	    .max_keys = r->max_keys,
	    /* a whole-object GET sends Range only to resume */
	    .ranged = r->kind == S3_REQUEST_GET && !(r->whole && r->got == 0),
	    .first = r->offset + r->got,
	    .last = r->offset + r->len - 1,
	};

	free(r->url);
	r->url = NULL;
	curl_slist_free_all(r->headers);
	r->headers = NULL;
	return s3_request_build(&c->endpoint, c->force_path_style, &c->signer,
				&spec, time(NULL), &r->url, &r->headers);
}

/*
 * The receive buffer for r's next attempt.  curl allocates it at the start
 * of every transfer and frees it at the end, from the heap: a large GET
 * gets GET_BUFFER_SIZE (fewer, larger reads), a small one what its bytes
 * need.  A 512 KiB buffer for every 2 KiB object (below the daemon's mmap
 * threshold, so from the heap) spread touched pages over the heap: RSS
 * grew 13 MiB more over an epoch of 200,000 small objects.  Even curl's
 * default of 16 KiB, for a HEAD and each object of 2 KiB, took a MiB of
 * the engine's heap at 64 transfers at once.
 */
static long receive_buffer_size(const struct s3_request *r)
{
	size_t left = r->len - r->got;

	if (r->kind == S3_REQUEST_LIST) /* a page: hundreds of KiB */
		return GET_BUFFER_SIZE;
	if (r->kind != S3_REQUEST_GET || left <= MIN_BUFFER_SIZE)
		return MIN_BUFFER_SIZE;
	if (left >= GET_BUFFER_SIZE)
		return GET_BUFFER_SIZE;
	return (long)((left + MIN_BUFFER_SIZE - 1) / MIN_BUFFER_SIZE *
		      MIN_BUFFER_SIZE);
}

static void start_request(struct s3_client *c, struct s3_request *r)
{
	struct store_error err;
	char ebuf[64];
	int rc;

	r->status = 0;
	r->status_known = false;
	r->etag_mismatch = false;
	r->overflow = false;
	r->ignored_range = false;
	r->attempt_from = r->got;
	r->started_ns = util_now_ns();
	r->resp_etag[0] = '\0';
	r->resp_size = 0;
	r->resp_size_known = false;
	r->resp_mtime = 0;
	r->fd = -1; /* (the last attempt forgot its socket in detach) */
	r->lowat = 1;
	r->curl_error[0] = '\0';
	util_buf_free(&r->body);
	util_buf_init(&r->body, r->kind == S3_REQUEST_LIST ? LIST_BODY_MAX : 0);

	rc = build_attempt(c, r);
	if (rc)
		goto fail;
	r->easy = take_easy(c);
	if (!r->easy) {
		rc = ENOMEM;
		goto fail;
	}
	curl_easy_setopt(r->easy, CURLOPT_URL, r->url);
	curl_easy_setopt(r->easy, CURLOPT_HTTPHEADER, r->headers);
	curl_easy_setopt(r->easy, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(r->easy, CURLOPT_HEADERDATA, r);
	curl_easy_setopt(r->easy, CURLOPT_PRIVATE, r);
	curl_easy_setopt(r->easy, CURLOPT_ERRORBUFFER, r->curl_error);
	curl_easy_setopt(r->easy, CURLOPT_BUFFERSIZE, receive_buffer_size(r));
	/* set for every attempt: the handle may have done a HEAD before (0
	 * makes it a GET again) */
	curl_easy_setopt(r->easy, CURLOPT_NOBODY,
			 r->kind == S3_REQUEST_HEAD ? 1L : 0L);
	if (curl_multi_add_handle(c->multi, r->easy) != CURLM_OK) {
		give_easy(c, r->easy);
		r->easy = NULL;
		rc = ENOMEM;
		goto fail;
	}
	c->running++;
	if (r->kind == S3_REQUEST_GET)
		gets_running_set(c, c->running_gets + 1);
	r->prev = NULL;
	r->next = c->running_list;
	if (c->running_list)
		c->running_list->prev = r;
	c->running_list = r;
	r->attempt++;
	if (r->kind == S3_REQUEST_GET && r->urgent) {
		r->unanswered = true;
		c->urgent_unanswered++;
	}
	stats_add(&c->stats.requests, 1);
	return;

fail:
	set_error(&err, rc, r);
	snprintf(err.message, sizeof(err.message),
		 "cannot build a request for s3://%s/%s: %s", r->bucket, r->key,
		 util_strerror(rc, ebuf, sizeof(ebuf)));
	util_warn("%s", err.message);
	complete(c, r, &err);
}

static unsigned backoff_ms(struct s3_client *c, unsigned attempt)
{
	uint64_t d = c->retry_base_ms;

	while (attempt-- > 1 && d < c->retry_max_ms)
		d *= 2;
	if (d > c->retry_max_ms)
		d = c->retry_max_ms;
	/* full range of [d/2, d] */
	return (unsigned)(d / 2 +
			  (uint64_t)rand_r(&c->rand_state) % (d / 2 + 1));
}

static void schedule_retry(struct s3_client *c, struct s3_request *r)
{
	struct s3_request **pp = &c->delayed;

	r->due_ns =
	    util_now_ns() + (uint64_t)backoff_ms(c, r->attempt) * 1000000u;
	while (*pp && (*pp)->due_ns <= r->due_ns)
		pp = &(*pp)->next;
	r->next = *pp;
	*pp = r;
	stats_add(&c->stats.retries, 1);
}

/* Takes a running request off the multi handle and the running list. */
static void detach(struct s3_client *c, struct s3_request *r)
{
	note_answered(r);
	body_forget_socket(r);
	curl_multi_remove_handle(c->multi, r->easy);
	give_easy(c, r->easy);
	r->easy = NULL;
	if (r->prev)
		r->prev->next = r->next;
	else
		c->running_list = r->next;
	if (r->next)
		r->next->prev = r->prev;
	r->next = r->prev = NULL;
	c->running--;
	if (r->kind == S3_REQUEST_GET)
		gets_running_set(c, c->running_gets - 1);
}

/* Whether err says the signing credentials had expired: by its code, or
 * for a HEAD (no body, no code) by a 400/403 after their expiration. */
static bool creds_ran_out(const struct s3_client *c, const struct s3_request *r,
			  const struct store_error *err)
{
	if (s3_error_credentials_expired(err))
		return true;
	return r->kind == S3_REQUEST_HEAD &&
	       (err->http_status == 400 || err->http_status == 403) &&
	       c->creds.expiration && time(NULL) >= c->creds.expiration;
}

static void finish_request(struct s3_client *c, struct s3_request *r,
			   CURLcode result)
{
	struct store_error err;
	struct s3_attempt a;
	bool retryable = false;

	if (!r->status_known)
		curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &r->status);
	detach(c, r);
	stats_add(&c->stats.bytes_received, r->got - r->attempt_from);
	a = (struct s3_attempt){
	    .http_status = r->status,
	    .curl_code = (int)result,
	    .kind = r->kind,
	    .wanted = r->len,
	    .got = r->got,
	    .etag_mismatch = r->etag_mismatch,
	    .etag = r->etag,
	    .resp_etag = r->resp_etag,
	    .overflow = r->overflow,
	    .ignored_range = r->ignored_range,
	    .no_length = !r->resp_size_known,
	    .body = r->body.data,
	    .body_len = r->body.len,
	    .curl_message = r->curl_error,
	    .url = r->url,
	};
	s3_error_from_attempt(&a, &err, &retryable);
	if (r->status != 0)
		c->answered = true;
	/* before the endpoint has ever answered, a connection that cannot be
	 * made is most likely a wrong endpoint: fail fast */
	if (!c->answered && r->status == 0 &&
	    (err.err == ECONNREFUSED || err.err == EHOSTUNREACH ||
	     err.err == ETIMEDOUT) &&
	    r->attempt > UNANSWERED_RETRIES)
		retryable = false;
	if (!err.err) {
		limit_succeeded(c);
		complete(c, r, NULL);
		return;
	}
	if (s3_error_throttled(&err))
		limit_throttled(c, r);
	/* the credentials ran out before fresh ones came: ask for them now
	 * and try again (with backoff, within max_retries) */
	if (!retryable && c->refresher && creds_ran_out(c, r, &err)) {
		s3_refresher_nudge(c->refresher);
		retryable = true;
	}
	if (retryable && r->attempt <= c->max_retries) {
		util_debug("retrying %s (attempt %u): %s %s", r->url,
			   r->attempt + 1, err.code, err.message);
		schedule_retry(c, r);
		return;
	}
	if (r->kind == S3_REQUEST_GET)
		util_warn("GET %s failed after %u attempt(s): %ld %s %s",
			  r->url, r->attempt, err.http_status, err.code,
			  err.message);
	complete(c, r, &err);
}

static void cancel_list(struct s3_client *c, struct s3_request *r)
{
	while (r) {
		struct s3_request *next = r->next;
		struct store_error err;

		set_error(&err, ECANCELED, r);
		snprintf(err.message, sizeof(err.message), "shutting down");
		complete(c, r, &err);
		r = next;
	}
}

/* CURLMOPT_SOCKETFUNCTION: mirror what curl wants to wait for in epoll.
 * A socket curl has not seen since its last REMOVE comes with socketp NULL:
 * it is added and marked (curl_multi_assign), later calls modify it, so no
 * request pays for a failed epoll_ctl. */
static int on_socket(CURL *easy, curl_socket_t fd, int what, void *userp,
		     void *socketp)
{
	struct s3_client *c = userp;
	struct s3_request *r = NULL;
	struct epoll_event ev;
	int op = socketp ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;

	if (easy)
		curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&r);
	if (r && r->kind == S3_REQUEST_GET && c->endpoint.plain_http) {
		if (what == CURL_POLL_REMOVE) {
			if (r->fd == fd)
				body_forget_socket(r);
		} else if (r->fd != fd) {
			/* a new or kept connection: its mark is 1 */
			body_forget_socket(r);
			r->fd = fd;
		}
	}
	if (what == CURL_POLL_REMOVE) {
		epoll_ctl(c->epoll_fd, EPOLL_CTL_DEL, fd, NULL);
		if (c->nbatch_removed < EPOLL_BATCH)
			c->batch_removed[c->nbatch_removed] = fd;
		c->nbatch_removed++;
		return 0;
	}
	memset(&ev, 0, sizeof(ev));
	ev.data.fd = fd;
	if (what & CURL_POLL_IN)
		ev.events |= EPOLLIN;
	if (what & CURL_POLL_OUT)
		ev.events |= EPOLLOUT;
	if (epoll_ctl(c->epoll_fd, op, fd, &ev)) {
		/* out of step with curl's view: the other operation fits */
		if (errno == ENOENT || errno == EEXIST)
			epoll_ctl(c->epoll_fd,
				  op == EPOLL_CTL_ADD ? EPOLL_CTL_MOD
						      : EPOLL_CTL_ADD,
				  fd, &ev);
	}
	if (!socketp)
		curl_multi_assign(c->multi, fd, c);
	return 0;
}

/* CURLMOPT_TIMERFUNCTION: one timer, checked by the engine loop. */
static int on_timer(CURLM *multi, long timeout_ms, void *userp)
{
	struct s3_client *c = userp;

	(void)multi;
	c->timer_due_ns = timeout_ms < 0
			      ? 0
			      : util_now_ns() + (uint64_t)timeout_ms * 1000000u;
	return 0;
}

static bool removed_in_batch(const struct s3_client *c, int fd)
{
	if (c->nbatch_removed > EPOLL_BATCH)
		return fd != c->wake_fd;
	for (unsigned i = 0; i < c->nbatch_removed; i++)
		if (c->batch_removed[i] == fd)
			return true;
	return false;
}

static void finish_done(struct s3_client *c)
{
	struct CURLMsg *msg;
	int left = 0;

	while ((msg = curl_multi_info_read(c->multi, &left))) {
		struct s3_request *r = NULL;

		if (msg->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE,
				  (char **)&r);
		finish_request(c, r, msg->data.result);
	}
}

/* Milliseconds until curl's timer or the first delayed retry is due. */
static int wait_ms(const struct s3_client *c)
{
	uint64_t now = util_now_ns(), due = now + 1000000000u;

	if (c->timer_due_ns && c->timer_due_ns < due)
		due = c->timer_due_ns;
	if (c->delayed && c->delayed->due_ns < due)
		due = c->delayed->due_ns;
	return due <= now ? 0 : (int)((due - now + 999999u) / 1000000u);
}

/* Under c->lock, on the engine thread: sign with the refresher's latest
 * credentials from now on (the day's key belongs to the old secret). */
static void take_fresh_creds(struct s3_client *c)
{
	s3_creds_clear(&c->creds);
	c->creds = c->fresh;
	memset(&c->fresh, 0, sizeof(c->fresh));
	c->have_fresh = false;
	explicit_bzero(c->signer.key, sizeof(c->signer.key));
	c->signer.key_date[0] = '\0';
	stats_add(&c->stats.credential_refreshes, 1);
}

static void *engine_main(void *arg)
{
	struct s3_client *c = arg;
	struct epoll_event events[EPOLL_BATCH];

	for (;;) {
		struct s3_request *incoming;
		bool stopping;
		int still = 0, n;
		uint64_t now;

		pthread_mutex_lock(&c->lock);
		incoming = c->queue_head;
		c->queue_head = c->queue_tail = NULL;
		stopping = c->stopping;
		if (c->have_fresh)
			take_fresh_creds(c);
		pthread_mutex_unlock(&c->lock);
		while (incoming) {
			struct s3_request *next = incoming->next;

			enqueue_pending(c, incoming);
			incoming = next;
		}
		if (stopping)
			break;

		now = util_now_ns();
		while (c->delayed && c->delayed->due_ns <= now) {
			struct s3_request *r = c->delayed;

			c->delayed = r->next;
			r->urgent = true; /* a retry was already waited for */
			enqueue_pending(c, r);
		}
		while (may_start(c)) {
			struct s3_request *r = c->pending_head;

			c->pending_head = r->next;
			if (!c->pending_head)
				c->pending_tail = NULL;
			start_request(c, r);
		}
		if (c->timer_due_ns && c->timer_due_ns <= util_now_ns()) {
			c->timer_due_ns = 0;
			curl_multi_socket_action(c->multi, CURL_SOCKET_TIMEOUT,
						 0, &still);
		}
		finish_done(c);
		if (may_start(c))
			continue;

		n = epoll_wait(c->epoll_fd, events, EPOLL_BATCH, wait_ms(c));
		c->nbatch_removed = 0;
		for (int i = 0; i < n; i++) {
			int fd = events[i].data.fd, flags = 0;

			if (removed_in_batch(c, fd))
				continue;

			if (fd == c->wake_fd) {
				uint64_t v;
				ssize_t got = read(c->wake_fd, &v, sizeof(v));

				(void)got; /* EAGAIN: drained already */
				continue;
			}
			if (events[i].events & EPOLLIN)
				flags |= CURL_CSELECT_IN;
			if (events[i].events & EPOLLOUT)
				flags |= CURL_CSELECT_OUT;
			if (events[i].events & (EPOLLERR | EPOLLHUP))
				flags |= CURL_CSELECT_ERR;
			curl_multi_socket_action(c->multi, fd, flags, &still);
		}
		finish_done(c);
	}

	/* shutting down: abort what runs, cancel what waits */
	while (c->running_list) {
		struct s3_request *r = c->running_list;

		detach(c, r);
		cancel_list(c, r);
	}
	cancel_list(c, c->pending_head);
	c->pending_head = c->pending_tail = NULL;
	cancel_list(c, c->delayed);
	c->delayed = NULL;
	return NULL;
}

/* ---- the store ---- */

static void wake(struct s3_client *c)
{
	uint64_t one = 1;
	ssize_t put = write(c->wake_fd, &one, sizeof(one));

	(void)put; /* EAGAIN only when the counter is full: awake anyway */
}

/* Queues r for the engine; wakes it only if the queue was empty (the
 * engine drains the whole queue each time it wakes). */
static int submit(struct s3_client *c, struct s3_request *r)
{
	bool was_empty;

	pthread_mutex_lock(&c->lock);
	was_empty = c->queue_head == NULL;
	if (r->urgent && c->queue_head) {
		r->next = c->queue_head;
		c->queue_head = r;
	} else {
		if (c->queue_tail)
			c->queue_tail->next = r;
		else
			c->queue_head = r;
		c->queue_tail = r;
	}
	pthread_mutex_unlock(&c->lock);
	if (was_empty)
		wake(c);
	return 0;
}

/*
 * A new request of kind for bucket/key (and etag, may be NULL), copied
 * after the request and its room for nbuffers GET buffers, in one
 * allocation: requests are made on the callers' threads and freed on the
 * engine's, and four allocations a request crossing threads left holes
 * in both arenas.  NULL: ENOMEM.
 */
static struct s3_request *
request_new(struct s3_client *c, enum s3_request_kind kind, const char *bucket,
	    const char *key, const char *etag, unsigned nbuffers, void *arg)
{
	size_t head =
	    sizeof(struct s3_request) + nbuffers * sizeof(struct store_buffer);
	size_t nb = strlen(bucket) + 1, nk = strlen(key) + 1;
	size_t ne = etag ? strlen(etag) + 1 : 0;
	struct s3_request *r = calloc(1, head + nb + nk + ne);
	char *text;

	if (!r)
		return NULL;
	text = (char *)r + head;
	r->kind = kind;
	r->client = c;
	r->arg = arg;
	util_buf_init(&r->body, kind == S3_REQUEST_LIST ? LIST_BODY_MAX : 0);
	r->bucket = memcpy(text, bucket, nb);
	r->key = memcpy(text + nb, key, nk);
	if (etag)
		r->etag = memcpy(text + nb + nk, etag, ne);
	return r;
}

static int client_get(struct store *st, const struct store_get *req)
{
	struct s3_client *c = (struct s3_client *)st;
	struct s3_request *r;
	size_t len = 0;
	int rc = store_get_check(req, &len);

	if (rc)
		return rc;
	r = request_new(c, S3_REQUEST_GET, req->bucket, req->key, req->etag,
			req->nbuffers, req->arg);
	if (!r)
		return ENOMEM;
	r->offset = req->offset;
	r->len = len;
	memcpy(r->buffers, req->buffers, req->nbuffers * sizeof(*req->buffers));
	r->nbuffers = req->nbuffers;
	r->urgent = (req->flags & STORE_GET_URGENT) != 0;
	r->whole = (req->flags & STORE_GET_WHOLE) != 0 && req->offset == 0;
	r->buffer_done = req->buffer_done;
	r->get_done = req->done;
	return submit(c, r);
}

static int client_list(struct store *st, const struct store_list *req)
{
	struct s3_client *c = (struct s3_client *)st;
	struct s3_request *r;

	if (!req->bucket || !req->done || req->max_keys < 1 ||
	    req->max_keys > 1000)
		return EINVAL;
	r = request_new(c, S3_REQUEST_LIST, req->bucket,
			req->prefix ? req->prefix : "", NULL, 0, req->arg);
	if (!r)
		return ENOMEM;
	r->token = util_strdup0(req->token);
	r->start_after = util_strdup0(req->start_after);
	if ((req->token && !r->token) ||
	    (req->start_after && !r->start_after)) {
		request_free(r);
		return ENOMEM;
	}
	r->max_keys = req->max_keys;
	r->urgent = true; /* a reader may be waiting for the next segment */
	r->list_done = req->done;
	return submit(c, r);
}

static int client_head(struct store *st, const struct store_head *req)
{
	struct s3_client *c = (struct s3_client *)st;
	struct s3_request *r;

	if (!req->bucket || !req->key || !req->done)
		return EINVAL;
	r = request_new(c, S3_REQUEST_HEAD, req->bucket, req->key, NULL, 0,
			req->arg);
	if (!r)
		return ENOMEM;
	r->urgent = true; /* a reader may be waiting for the object's size */
	r->head_done = req->done;
	return submit(c, r);
}

static void client_get_stats(struct store *st, struct store_stats *out)
{
	struct s3_client *c = (struct s3_client *)st;

	out->requests = __atomic_load_n(&c->stats.requests, __ATOMIC_RELAXED);
	out->retries = __atomic_load_n(&c->stats.retries, __ATOMIC_RELAXED);
	out->failures = __atomic_load_n(&c->stats.failures, __ATOMIC_RELAXED);
	out->bytes_received =
	    __atomic_load_n(&c->stats.bytes_received, __ATOMIC_RELAXED);
	out->throttled = __atomic_load_n(&c->stats.throttled, __ATOMIC_RELAXED);
	out->concurrency =
	    __atomic_load_n(&c->stats.concurrency, __ATOMIC_RELAXED);
	out->credential_refreshes =
	    __atomic_load_n(&c->stats.credential_refreshes, __ATOMIC_RELAXED);
	out->gets_in_flight =
	    __atomic_load_n(&c->stats.gets_in_flight, __ATOMIC_RELAXED);
}

static void client_destroy(struct s3_client *c)
{
	if (!c)
		return;
	s3_refresher_stop(c->refresher); /* it may still deliver until then */
	c->refresher = NULL;
	if (c->thread_started) {
		pthread_mutex_lock(&c->lock);
		c->stopping = true;
		pthread_mutex_unlock(&c->lock);
		wake(c);
		pthread_join(c->thread, NULL);
		/* requests submitted after the engine's last look */
		cancel_list(c, c->queue_head);
		c->queue_head = c->queue_tail = NULL;
	}
	for (unsigned i = 0; i < c->nidle; i++)
		curl_easy_cleanup(c->idle[i]);
	free(c->idle);
	if (c->multi)
		curl_multi_cleanup(c->multi);
	if (c->epoll_fd >= 0)
		close(c->epoll_fd);
	if (c->wake_fd >= 0)
		close(c->wake_fd);
	s3_creds_clear(&c->creds);
	s3_creds_clear(&c->fresh);
	explicit_bzero(&c->signer, sizeof(c->signer));
	s3_endpoint_free(&c->endpoint);
	free(c->ca_bundle);
	free(c->region);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

static void client_store_destroy(struct store *st)
{
	client_destroy((struct s3_client *)st);
}

static const struct store_ops client_ops = {
    .get = client_get,
    .list = client_list,
    .head = client_head,
    .get_stats = client_get_stats,
    .destroy = client_store_destroy,
};

/* The multi handle and the epoll set the engine waits in. */
static int client_open_multi(struct s3_client *c)
{
	struct epoll_event ev = {.events = EPOLLIN};

	c->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	c->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (c->epoll_fd < 0 || c->wake_fd < 0)
		return errno;
	ev.data.fd = c->wake_fd;
	if (epoll_ctl(c->epoll_fd, EPOLL_CTL_ADD, c->wake_fd, &ev))
		return errno;
	c->multi = curl_multi_init();
	if (!c->multi)
		return ENOMEM;
	curl_multi_setopt(c->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
	curl_multi_setopt(c->multi, CURLMOPT_SOCKETDATA, c);
	curl_multi_setopt(c->multi, CURLMOPT_TIMERFUNCTION, on_timer);
	curl_multi_setopt(c->multi, CURLMOPT_TIMERDATA, c);
	curl_multi_setopt(c->multi, CURLMOPT_MAX_TOTAL_CONNECTIONS,
			  (long)c->max_connections);
	curl_multi_setopt(c->multi, CURLMOPT_MAX_HOST_CONNECTIONS,
			  (long)c->max_connections);
	curl_multi_setopt(c->multi, CURLMOPT_MAXCONNECTS,
			  (long)c->max_connections);
	return 0;
}

/* Copies the credentials unless the conf asks for anonymous requests. */
static int client_take_creds(struct s3_client *c,
			     const struct s3_client_conf *conf)
{
	const struct s3_creds *cr = &conf->creds;

	if (conf->no_sign)
		return 0;
	if (!cr->access_key || !cr->secret_key)
		return EINVAL;
	c->creds.access_key = strdup(cr->access_key);
	c->creds.secret_key = strdup(cr->secret_key);
	c->creds.session_token = util_strdup0(cr->session_token);
	c->creds.expiration = cr->expiration;
	c->creds.provider = cr->provider;
	if (!c->creds.access_key || !c->creds.secret_key ||
	    (cr->session_token && !c->creds.session_token))
		return ENOMEM;
	c->signer.creds = &c->creds;
	return 0;
}

/* On the refresher's thread: hand fresh credentials to the engine. */
static void client_deliver_creds(void *arg, struct s3_creds *fresh)
{
	struct s3_client *c = arg;

	pthread_mutex_lock(&c->lock);
	s3_creds_clear(&c->fresh);
	c->fresh = *fresh;
	c->have_fresh = true;
	pthread_mutex_unlock(&c->lock);
	memset(fresh, 0, sizeof(*fresh));
	wake(c);
}

/* Credentials that expire are refreshed on a thread of their own. */
static int client_start_refresher(struct s3_client *c,
				  const struct s3_client_conf *conf)
{
	struct s3_creds_query q = {
	    .profile = conf->profile,
	    .region = c->region,
	    .ca_bundle = c->ca_bundle,
	    .tls_verify = true, /* see s3_client_conf_resolve() */
	};

	if (conf->no_sign || conf->creds.expiration == 0 ||
	    conf->creds.provider < 0)
		return 0;
	c->refresher =
	    s3_refresher_start(&q, &conf->creds, client_deliver_creds, c);
	return c->refresher ? 0 : errno;
}

struct store *s3_client_create(const struct s3_client_conf *conf)
{
	struct s3_client *c = NULL;
	int rc = 0;

	pthread_once(&curl_once, curl_init);
	if (curl_init_result != CURLE_OK) {
		errno = EIO;
		return NULL;
	}
	if (!conf->region || conf->max_connections == 0) {
		errno = EINVAL;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		errno = ENOMEM;
		return NULL;
	}
	c->store.ops = &client_ops;
	c->store.max_parallel = conf->max_connections;
	c->epoll_fd = c->wake_fd = -1;
	pthread_mutex_init(&c->lock, NULL);
	rc = s3_endpoint_parse(conf->endpoint, conf->region, &c->endpoint);
	if (rc)
		goto fail;
	c->force_path_style = conf->force_path_style;
	c->tls_verify = conf->tls_verify;
	c->ca_bundle = util_strdup0(conf->ca_bundle);
	c->region = strdup(conf->region);
	c->max_connections = conf->max_connections;
	c->limit = c->limit_peak = conf->max_connections;
	c->stats.concurrency = conf->max_connections;
	c->max_retries = conf->max_retries;
	c->retry_base_ms = conf->retry_base_ms;
	c->retry_max_ms = conf->retry_max_ms;
	c->stall_seconds = conf->stall_seconds;
	c->connect_timeout_seconds = conf->connect_timeout_seconds;
	c->rand_state = (unsigned)util_now_ns();
	c->signer.region = c->region;
	if (!c->region || (conf->ca_bundle && !c->ca_bundle)) {
		rc = ENOMEM;
		goto fail;
	}
	rc = client_take_creds(c, conf);
	if (rc)
		goto fail;
	c->idle = calloc(c->max_connections, sizeof(*c->idle));
	if (!c->idle) {
		rc = ENOMEM;
		goto fail;
	}
	rc = client_open_multi(c);
	if (rc)
		goto fail;
	rc = pthread_create(&c->thread, NULL, engine_main, c);
	if (rc)
		goto fail;
	c->thread_started = true;
	rc = client_start_refresher(c, conf);
	if (rc)
		goto fail;
	return &c->store;

fail:
	client_destroy(c);
	errno = rc;
	return NULL;
}
