/*
 * test_providers: the credential providers after the static ones
 * (s3/creds_json.c, s3/xml.c's STS parsers, s3/creds_process.c,
 * s3/creds_web_identity.c, s3/creds_container.c, s3/creds_imds.c,
 * s3/http.c) and their place in the chain (s3/creds.c).
 *
 * HTTP providers talk to a small HTTP server on 127.0.0.1 that this test
 * runs in a thread: canned answers by method and path, every request kept
 * for the assertions.  No test sends anything anywhere else: the setup
 * disables instance metadata and points STS at a closed loopback port, and
 * the tests that enable instance metadata point it at the local server or
 * at a closed port.  credential_process scripts are written into a
 * temporary directory per test.
 */
#include "config.h"

#include "s3/internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/unit/aws_env.h"

/* Values that must never show in a message or a log. */
#define SECRET "wJalrXUtnFEMI-K7MDENG-SECRETKEY"
#define TOKEN  "SESSIONTOKEN-FwoGZXIvYXdzE-secret"
#define OIDC   "eyJhbGciOiJSUzI1NiJ9.OIDC-TOKEN+/=.sig"
#define AUTH   "container-auth-TOKEN-secret"

static const struct s3_creds_query query = {.tls_verify = true};

static char dir[64];

static void assert_contains(const char *haystack, const char *needle)
{
	if (!strstr(haystack, needle))
		fail_msg("'%s' does not contain '%s'", haystack, needle);
}

static void assert_no_secret(const char *s)
{
	static const char *const secrets[] = {SECRET, TOKEN, OIDC, AUTH,
					      "hunter2"};

	for (size_t i = 0; i < sizeof(secrets) / sizeof(secrets[0]); i++)
		if (strstr(s, secrets[i]))
			fail_msg("'%s' shows a secret", s);
}

static double seconds_since(uint64_t start)
{
	return (double)(util_now_ns() - start) / 1e9;
}

/* ---- files ---- */

/* Writes content to dir/name (mode); returns the path (static, rotating). */
static const char *write_file(const char *name, const char *content,
			      mode_t mode)
{
	static char paths[8][128];
	static int next;
	char *path = paths[next++ % 8];
	FILE *f;

	snprintf(path, sizeof(paths[0]), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_true(fputs(content, f) >= 0);
	assert_int_equal(fclose(f), 0);
	assert_int_equal(chmod(path, mode), 0);
	return path;
}

static const char *script(const char *name, const char *body)
{
	char text[4096];

	snprintf(text, sizeof(text), "#!/bin/sh\n%s\n", body);
	return write_file(name, text, 0700);
}

/* ---- stderr capture ---- */

static int saved_stderr = -1;
static char capture_path[96];

static void capture_start(void)
{
	int fd;

	snprintf(capture_path, sizeof(capture_path), "%s/stderr", dir);
	fflush(stderr);
	saved_stderr = dup(2);
	assert_true(saved_stderr >= 0);
	fd = open(capture_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(dup2(fd, 2), 2);
	close(fd);
}

/* What went to stderr since capture_start() (static buffer). */
static const char *capture_stop(void)
{
	static char text[16384];
	FILE *f;
	size_t n;

	fflush(stderr);
	assert_int_equal(dup2(saved_stderr, 2), 2);
	close(saved_stderr);
	saved_stderr = -1;
	f = fopen(capture_path, "r");
	assert_non_null(f);
	n = fread(text, 1, sizeof(text) - 1, f);
	text[n] = '\0';
	fclose(f);
	fputs(text, stderr); /* still shown */
	return text;
}

/* ---- the loopback HTTP server ---- */

struct route {
	const char *method;
	const char *path;	 /* exact, query included */
	const char *need_header; /* a header line the request must carry */
	int status;
	const char *body;
};

struct seen {
	char method[16];
	char path[512];
	char head[16384];
	char body[16384];
};

#define SEEN_MAX 16

static struct {
	int fd;
	int port;
	pthread_t thread;
	bool running;
	volatile bool stop;
	const struct route *routes;
	size_t nroutes;
	pthread_mutex_t lock;
	struct seen seen[SEEN_MAX];
	size_t nseen;
} srv = {.fd = -1, .lock = PTHREAD_MUTEX_INITIALIZER};

static bool header_present(const char *head, const char *line)
{
	const char *p = head;
	size_t n = strlen(line);

	while ((p = strstr(p, "\r\n")) != NULL) {
		p += 2;
		if (strncasecmp(p, line, n) == 0 &&
		    (p[n] == '\r' || p[n] == '\0'))
			return true;
	}
	return false;
}

static void serve_one(int c)
{
	char buf[16384];
	char reply[20000];
	size_t len = 0;
	char *end = NULL;
	size_t body_len = 0;
	const char *cl;
	struct seen s;
	const struct route *r = NULL;
	int status = 404;
	const char *body = "no route";
	int n;

	memset(&s, 0, sizeof(s));
	while (!end && len < sizeof(buf) - 1) {
		ssize_t got = read(c, buf + len, sizeof(buf) - 1 - len);

		if (got <= 0)
			return;
		len += (size_t)got;
		buf[len] = '\0';
		end = strstr(buf, "\r\n\r\n");
	}
	if (!end)
		return;
	*end = '\0';
	cl = strcasestr(buf, "\r\nContent-Length:");
	if (cl)
		body_len = strtoul(cl + 17, NULL, 10);
	while (len - (size_t)(end + 4 - buf) < body_len &&
	       len < sizeof(buf) - 1) {
		ssize_t got = read(c, buf + len, sizeof(buf) - 1 - len);

		if (got <= 0)
			break;
		len += (size_t)got;
		buf[len] = '\0';
	}
	sscanf(buf, "%15s %511s", s.method, s.path);
	snprintf(s.head, sizeof(s.head), "%s", buf);
	snprintf(s.body, sizeof(s.body), "%s", end + 4);
	for (size_t i = 0; i < srv.nroutes; i++) {
		if (strcmp(srv.routes[i].method, s.method) == 0 &&
		    strcmp(srv.routes[i].path, s.path) == 0) {
			r = &srv.routes[i];
			break;
		}
	}
	if (r && r->need_header && !header_present(s.head, r->need_header)) {
		status = 401;
		body = "missing header";
	} else if (r) {
		status = r->status;
		body = r->body;
	}
	pthread_mutex_lock(&srv.lock);
	if (srv.nseen < SEEN_MAX)
		srv.seen[srv.nseen++] = s;
	pthread_mutex_unlock(&srv.lock);
	n = snprintf(reply, sizeof(reply),
		     "HTTP/1.1 %d X\r\nContent-Length: %zu\r\n"
		     "Connection: close\r\n\r\n%s",
		     status, strlen(body), body);
	if (write(c, reply, (size_t)n) != n)
		return;
}

static void *serve(void *arg)
{
	(void)arg;
	while (!srv.stop) {
		struct pollfd p = {.fd = srv.fd, .events = POLLIN};
		int c;

		if (poll(&p, 1, 20) <= 0)
			continue;
		c = accept(srv.fd, NULL, NULL);
		if (c < 0)
			continue;
		serve_one(c);
		close(c);
	}
	return NULL;
}

static void server_start(const struct route *routes, size_t nroutes)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t alen = sizeof(a);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	srv.routes = routes;
	srv.nroutes = nroutes;
	srv.nseen = 0;
	srv.stop = false;
	srv.fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true(srv.fd >= 0);
	assert_int_equal(bind(srv.fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(srv.fd, 16), 0);
	assert_int_equal(getsockname(srv.fd, (struct sockaddr *)&a, &alen), 0);
	srv.port = ntohs(a.sin_port);
	assert_int_equal(pthread_create(&srv.thread, NULL, serve, NULL), 0);
	srv.running = true;
}

static void server_stop(void)
{
	if (!srv.running)
		return;
	srv.stop = true;
	pthread_join(srv.thread, NULL);
	close(srv.fd);
	srv.fd = -1;
	srv.running = false;
}

/* "http://127.0.0.1:PORT" of the server (static). */
static const char *server_url(void)
{
	static char url[64];

	snprintf(url, sizeof(url), "http://127.0.0.1:%d", srv.port);
	return url;
}

/* A loopback port nothing listens on. */
static int closed_port(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t alen = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	int port;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &alen), 0);
	port = ntohs(a.sin_port);
	close(fd);
	return port;
}

/* ---- setup ---- */

static int setup(void **state)
{
	(void)state;
	aws_env_clear();
	snprintf(dir, sizeof(dir), "/tmp/s3pipe-test-providers-XXXXXX");
	assert_non_null(mkdtemp(dir));
	setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/credentials", 1);
	setenv("AWS_CONFIG_FILE", "/nonexistent/config", 1);
	util_log_set_level(UTIL_LOG_DEBUG);
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	server_stop();
	util_log_set_level(UTIL_LOG_INFO);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		return -1;
	return 0;
}

/* ---- JSON documents ---- */

static time_t utc(int y, int mo, int d, int h, int mi, int s)
{
	struct tm tm = {.tm_year = y - 1900,
			.tm_mon = mo - 1,
			.tm_mday = d,
			.tm_hour = h,
			.tm_min = mi,
			.tm_sec = s};

	return timegm(&tm);
}

static int json(const char *text, enum s3_creds_json_kind kind,
		struct s3_creds *c, char *err, size_t errlen)
{
	memset(c, 0, sizeof(*c));
	c->provider = -1;
	err[0] = '\0';
	return s3_creds_json_parse(text, strlen(text), kind, "THE SOURCE", NULL,
				   c, err, errlen);
}

static void test_json_shapes(void **state)
{
	struct s3_creds c;
	char err[256];

	(void)state;
	assert_int_equal(json("{\"Version\": 1, \"AccessKeyId\": \"AKIDP\", "
			      "\"SecretAccessKey\": \"" SECRET "\", "
			      "\"SessionToken\": \"" TOKEN "\", "
			      "\"Expiration\": \"2026-11-25T12:00:00Z\"}",
			      S3_CREDS_JSON_PROCESS, &c, err, sizeof(err)),
			 0);
	assert_string_equal(c.access_key, "AKIDP");
	assert_string_equal(c.secret_key, SECRET);
	assert_string_equal(c.session_token, TOKEN);
	assert_int_equal(c.expiration, utc(2026, 11, 25, 12, 0, 0));
	assert_null(c.source);
	s3_creds_clear(&c);

	/* optional fields of credential_process: absent or null */
	assert_int_equal(json("{\"Version\": 1, \"AccessKeyId\": \"AKIDP\", "
			      "\"SecretAccessKey\": \"s\", \"SessionToken\": "
			      "null, \"Extra\": [1, 2]}",
			      S3_CREDS_JSON_PROCESS, &c, err, sizeof(err)),
			 0);
	assert_null(c.session_token);
	assert_int_equal(c.expiration, 0);
	s3_creds_clear(&c);

	assert_int_equal(
	    json("{\"AccessKeyId\": \"AKIDC\", \"SecretAccessKey\": \"" SECRET
		 "\", \"Token\": \"" TOKEN "\", \"Expiration\": "
		 "\"2026-11-25T12:00:00.123+00:00\", \"RoleArn\": \"x\"}",
		 S3_CREDS_JSON_CONTAINER, &c, err, sizeof(err)),
	    0);
	assert_string_equal(c.access_key, "AKIDC");
	assert_string_equal(c.session_token, TOKEN);
	assert_int_equal(c.expiration, utc(2026, 11, 25, 12, 0, 0));
	s3_creds_clear(&c);

	assert_int_equal(
	    json("{\"Code\": \"Success\", \"LastUpdated\": "
		 "\"2026-11-25T11:00:00Z\", \"Type\": \"AWS-HMAC\", "
		 "\"AccessKeyId\": \"AKIDI\", \"SecretAccessKey\": \"" SECRET
		 "\", \"Token\": \"" TOKEN "\", \"Expiration\": "
		 "\"2026-11-25T17:30:00Z\"}",
		 S3_CREDS_JSON_IMDS, &c, err, sizeof(err)),
	    0);
	assert_string_equal(c.access_key, "AKIDI");
	assert_int_equal(c.expiration, utc(2026, 11, 25, 17, 30, 0));
	s3_creds_clear(&c);
}

static void test_json_refused(void **state)
{
	static const struct {
		enum s3_creds_json_kind kind;
		const char *text;
		const char *want;
	} cases[] = {
	    /* credential_process: Version */
	    {S3_CREDS_JSON_PROCESS,
	     "{\"AccessKeyId\": \"A\", \"SecretAccessKey\": \"" SECRET "\"}",
	     "THE SOURCE: no Version (must be 1)"},
	    {S3_CREDS_JSON_PROCESS,
	     "{\"Version\": 2, \"AccessKeyId\": \"A\", \"SecretAccessKey\": "
	     "\"" SECRET "\"}",
	     "THE SOURCE: Version must be 1"},
	    {S3_CREDS_JSON_PROCESS,
	     "{\"Version\": \"1\", \"AccessKeyId\": \"A\", "
	     "\"SecretAccessKey\": \"" SECRET "\"}",
	     "THE SOURCE: Version must be 1"},
	    {S3_CREDS_JSON_PROCESS,
	     "{\"Version\": 1.0, \"AccessKeyId\": \"A\", "
	     "\"SecretAccessKey\": \"" SECRET "\"}",
	     "THE SOURCE: Version must be 1"},
	    /* missing and wrong-typed fields */
	    {S3_CREDS_JSON_PROCESS,
	     "{\"Version\": 1, \"SecretAccessKey\": \"" SECRET "\"}",
	     "THE SOURCE: no AccessKeyId"},
	    {S3_CREDS_JSON_PROCESS, "{\"Version\": 1, \"AccessKeyId\": \"A\"}",
	     "THE SOURCE: no SecretAccessKey"},
	    {S3_CREDS_JSON_PROCESS,
	     "{\"Version\": 1, \"AccessKeyId\": 12, \"SecretAccessKey\": "
	     "\"" SECRET "\"}",
	     "THE SOURCE: AccessKeyId must be a string"},
	    {S3_CREDS_JSON_PROCESS,
	     "{\"Version\": 1, \"AccessKeyId\": \"\", \"SecretAccessKey\": "
	     "\"" SECRET "\"}",
	     "THE SOURCE: AccessKeyId is empty"},
	    {S3_CREDS_JSON_PROCESS,
	     "{\"Version\": 1, \"AccessKeyId\": \"A\", \"SecretAccessKey\": "
	     "{\"k\": \"" SECRET "\"}}",
	     "THE SOURCE: SecretAccessKey must be a string"},
	    {S3_CREDS_JSON_PROCESS,
	     "{\"Version\": 1, \"AccessKeyId\": \"A\", \"SecretAccessKey\": "
	     "\"" SECRET "\", \"SessionToken\": [\"" TOKEN "\"]}",
	     "THE SOURCE: SessionToken must be a string"},
	    {S3_CREDS_JSON_PROCESS,
	     "{\"Version\": 1, \"AccessKeyId\": \"A\", \"SecretAccessKey\": "
	     "\"" SECRET "\", \"Expiration\": 1764072000}",
	     "THE SOURCE: Expiration must be a string"},
	    {S3_CREDS_JSON_PROCESS,
	     "{\"Version\": 1, \"AccessKeyId\": \"A\", \"SecretAccessKey\": "
	     "\"" SECRET "\", \"Expiration\": \"tomorrow\"}",
	     "THE SOURCE: Expiration 'tomorrow' is not an ISO 8601"},
	    /* header safety: no line break in a token, no space in a key */
	    {S3_CREDS_JSON_PROCESS,
	     "{\"Version\": 1, \"AccessKeyId\": \"A\", \"SecretAccessKey\": "
	     "\"" SECRET "\", \"SessionToken\": \"" TOKEN "\\r\\nX: y\"}",
	     "THE SOURCE: SessionToken holds a character that is not "
	     "allowed"},
	    {S3_CREDS_JSON_PROCESS,
	     "{\"Version\": 1, \"AccessKeyId\": \"A B\", \"SecretAccessKey\": "
	     "\"" SECRET "\"}",
	     "THE SOURCE: AccessKeyId holds a character"},
	    /* not JSON, not an object, duplicates */
	    {S3_CREDS_JSON_PROCESS,
	     "{\"Version\": 1, \"SecretAccessKey\": \"" SECRET "\" oops}",
	     "THE SOURCE: not valid JSON (line 1, column"},
	    {S3_CREDS_JSON_PROCESS, "\"" SECRET "\"",
	     "THE SOURCE: not a JSON object"},
	    {S3_CREDS_JSON_PROCESS, "", "THE SOURCE: not valid JSON"},
	    {S3_CREDS_JSON_PROCESS,
	     "{\"Version\": 1, \"AccessKeyId\": \"A\", \"AccessKeyId\": "
	     "\"B\", \"SecretAccessKey\": \"" SECRET "\"}",
	     "THE SOURCE: not valid JSON"},
	    /* container: everything required */
	    {S3_CREDS_JSON_CONTAINER,
	     "{\"AccessKeyId\": \"A\", \"SecretAccessKey\": \"" SECRET
	     "\", \"Expiration\": \"2026-11-25T12:00:00Z\"}",
	     "THE SOURCE: no Token"},
	    {S3_CREDS_JSON_CONTAINER,
	     "{\"AccessKeyId\": \"A\", \"SecretAccessKey\": \"" SECRET
	     "\", \"Token\": \"" TOKEN "\"}",
	     "THE SOURCE: no Expiration"},
	    {S3_CREDS_JSON_CONTAINER,
	     "{\"AccessKeyId\": \"A\", \"SecretAccessKey\": \"" SECRET
	     "\", \"Token\": \"" TOKEN "\", \"Expiration\": null}",
	     "THE SOURCE: no Expiration"},
	    /* instance metadata: Code */
	    {S3_CREDS_JSON_IMDS,
	     "{\"AccessKeyId\": \"A\", \"SecretAccessKey\": \"" SECRET
	     "\", \"Token\": \"" TOKEN
	     "\", \"Expiration\": \"2026-11-25T12:00:00Z\"}",
	     "THE SOURCE: no Code"},
	    {S3_CREDS_JSON_IMDS,
	     "{\"Code\": \"AssumeRoleUnauthorizedAccess\", \"AccessKeyId\": "
	     "\"A\", \"SecretAccessKey\": \"" SECRET "\", \"Token\": \"" TOKEN
	     "\", \"Expiration\": \"2026-11-25T12:00:00Z\"}",
	     "THE SOURCE: Code is 'AssumeRoleUnauthorizedAccess', not "
	     "Success"},
	    {S3_CREDS_JSON_IMDS,
	     "{\"Code\": 0, \"AccessKeyId\": \"A\", \"SecretAccessKey\": "
	     "\"" SECRET "\"}",
	     "THE SOURCE: Code must be a string"},
	};
	struct s3_creds c;
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int rc =
		    json(cases[i].text, cases[i].kind, &c, err, sizeof(err));

		if (rc != EINVAL)
			fail_msg("case %zu: rc %d (%s)", i, rc, err);
		assert_contains(err, cases[i].want);
		assert_no_secret(err);
		assert_null(c.access_key);
		assert_null(c.secret_key);
		assert_null(c.session_token);
	}
}

/* ---- times ---- */

static void test_time_valid(void **state)
{
	static const struct {
		const char *text;
		int y, mo, d, h, mi, s;
	} cases[] = {
	    {"2026-11-25T12:00:00Z", 2026, 11, 25, 12, 0, 0},
	    {"2024-02-29T23:59:59Z", 2024, 2, 29, 23, 59, 59},
	    {"2000-02-29T00:00:00Z", 2000, 2, 29, 0, 0, 0},
	    {"2026-11-25T12:00:00.5Z", 2026, 11, 25, 12, 0, 0},
	    {"2026-11-25T12:00:00.123456789Z", 2026, 11, 25, 12, 0, 0},
	    {"2026-11-25T12:00:00+00:00", 2026, 11, 25, 12, 0, 0},
	    {"2026-11-25T12:00:00-00:00", 2026, 11, 25, 12, 0, 0},
	    {"2026-11-25T14:00:00+02:00", 2026, 11, 25, 12, 0, 0},
	    {"2026-11-25T07:30:00.25-04:30", 2026, 11, 25, 12, 0, 0},
	    {"2027-01-01T01:00:00+05:00", 2026, 12, 31, 20, 0, 0},
	    {"1970-01-01T00:00:01Z", 1970, 1, 1, 0, 0, 1},
	    {"9999-12-31T23:59:59Z", 9999, 12, 31, 23, 59, 59},
	    {"2100-03-01T00:00:00Z", 2100, 3, 1, 0, 0, 0},
	};
	time_t t;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		t = 0;
		if (s3_creds_parse_time(cases[i].text, &t) != 0)
			fail_msg("'%s' refused", cases[i].text);
		assert_int_equal(t, utc(cases[i].y, cases[i].mo, cases[i].d,
					cases[i].h, cases[i].mi, cases[i].s));
	}
}

static void test_time_refused(void **state)
{
	static const char *const cases[] = {
	    "",
	    "garbage",
	    "2023-02-29T00:00:00Z", /* not a leap year */
	    "1900-02-29T00:00:00Z", /* nor is 1900 */
	    "2100-02-29T00:00:00Z",
	    "2026-04-31T00:00:00Z",
	    "2026-13-01T00:00:00Z",
	    "2026-00-10T00:00:00Z",
	    "2026-11-00T00:00:00Z",
	    "2026-11-25T24:00:00Z",
	    "2026-11-25T12:60:00Z",
	    "2026-11-25T12:00:60Z",
	    "2026-11-25T12:00:00",  /* no zone */
	    "2026-11-25 12:00:00Z", /* no T */
	    "2026-11-25t12:00:00Z",
	    "2026-11-25T12:00:00z",
	    "2026-11-25T12:00:00.Z", /* empty fraction */
	    "2026-11-25T12:00:00,5Z",
	    "2026-11-25T12:00:00+0200", /* offset without ':' */
	    "2026-11-25T12:00:00+02",
	    "2026-11-25T12:00:00+24:00",
	    "2026-11-25T12:00:00+02:60",
	    "2026-11-25T12:00:00Zjunk",
	    "2026-11-25T12:00:00Z ",
	    " 2026-11-25T12:00:00Z",
	    "2026-11-25T12:00Z",
	    "26-11-25T12:00:00Z",
	    "+2026-11-25T12:00:00Z",
	    "2026-1-25T12:00:00Z",
	    "20261125T120000Z",
	    "1970-01-01T00:00:00Z",	 /* 0 would mean "never expires" */
	    "1970-01-01T01:00:00+01:00", /* 0 too */
	    "1969-12-31T23:59:59Z",
	    "0000-01-01T00:00:00Z",
	    "2026-11-25T12:00:00.1234+",
	    "2026-11-25T12:00:00-",
	    "\xef\xbc\x92"
	    "026-11-25T12:00:00Z",
	};
	time_t t = 42;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (s3_creds_parse_time(cases[i], &t) != EINVAL)
			fail_msg("'%s' accepted", cases[i]);
		assert_int_equal(t, 42);
	}
}

static void test_time_format(void **state)
{
	char buf[32];

	(void)state;
	s3_creds_format_time(utc(2024, 2, 29, 1, 2, 3), buf, sizeof(buf));
	assert_string_equal(buf, "2024-02-29T01:02:03Z");
}

/* ---- STS XML ---- */

#define STS_OK                                                                 \
	"<AssumeRoleWithWebIdentityResponse "                                  \
	"xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">\n"               \
	"  <AssumeRoleWithWebIdentityResult>\n"                                \
	"    <SubjectFromWebIdentityToken>system:sa</"                         \
	"SubjectFromWebIdentityToken>\n"                                       \
	"    <Audience>sts.amazonaws.com</Audience>\n"                         \
	"    <AssumedRoleUser><Arn>arn:aws:sts::1:assumed-role/r/s</Arn>"      \
	"<AssumedRoleId>AROA:s</AssumedRoleId></AssumedRoleUser>\n"            \
	"    <Credentials>\n"                                                  \
	"      <SessionToken>" TOKEN "</SessionToken>\n"                       \
	"      <SecretAccessKey>\n        " SECRET                             \
	"\n      </SecretAccessKey>\n"                                         \
	"      <Expiration>2099-11-25T12:00:00Z</Expiration>\n"                \
	"      <AccessKeyId>ASIASTS</AccessKeyId>\n"                           \
	"    </Credentials>\n"                                                 \
	"    <Provider>oidc.eks</Provider>\n"                                  \
	"  </AssumeRoleWithWebIdentityResult>\n"                               \
	"  <ResponseMetadata><RequestId>r</RequestId></ResponseMetadata>\n"    \
	"</AssumeRoleWithWebIdentityResponse>\n"

#define STS_ERROR                                                              \
	"<ErrorResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\">"  \
	"<Error><Type>Sender</Type><Code>InvalidIdentityToken</Code>"          \
	"<Message>Incorrect token audience</Message></Error>"                  \
	"<RequestId>r</RequestId></ErrorResponse>"

static int sts(const char *xml, struct s3_creds *c, const char **why)
{
	memset(c, 0, sizeof(*c));
	c->provider = -1;
	return s3_xml_parse_sts_credentials(xml, strlen(xml), c, why);
}

static void test_sts_xml(void **state)
{
	static const struct {
		const char *xml;
		const char *why;
	} bad[] = {
	    {"<AssumeRoleWithWebIdentityResponse/>",
	     "no AssumeRoleWithWebIdentityResult"},
	    {"<AssumeRoleWithWebIdentityResponse><"
	     "AssumeRoleWithWebIdentityResult/></"
	     "AssumeRoleWithWebIdentityResponse>",
	     "no Credentials"},
	    {"<AssumeRoleWithWebIdentityResponse><"
	     "AssumeRoleWithWebIdentityResult><Credentials><AccessKeyId>A</"
	     "AccessKeyId><SecretAccessKey>S</"
	     "SecretAccessKey><Expiration>2026-11-25T12:00:00Z</Expiration></"
	     "Credentials></AssumeRoleWithWebIdentityResult></"
	     "AssumeRoleWithWebIdentityResponse>",
	     "no Credentials/SessionToken"},
	    {"<AssumeRoleWithWebIdentityResponse><"
	     "AssumeRoleWithWebIdentityResult><Credentials><AccessKeyId>A</"
	     "AccessKeyId><SecretAccessKey>S</"
	     "SecretAccessKey><SessionToken>T</"
	     "SessionToken><Expiration>soon</Expiration></"
	     "Credentials></AssumeRoleWithWebIdentityResult></"
	     "AssumeRoleWithWebIdentityResponse>",
	     "an Expiration that is not an ISO 8601 time"},
	    {"<AssumeRoleWithWebIdentityResponse><"
	     "AssumeRoleWithWebIdentityResult><Credentials><AccessKeyId>A B</"
	     "AccessKeyId><SecretAccessKey>S</"
	     "SecretAccessKey><SessionToken>T</"
	     "SessionToken><Expiration>2026-11-25T12:00:00Z</Expiration></"
	     "Credentials></AssumeRoleWithWebIdentityResult></"
	     "AssumeRoleWithWebIdentityResponse>",
	     "a malformed AccessKeyId"},
	    {"<AssumeRoleWithWebIdentityResponse><"
	     "AssumeRoleWithWebIdentityResult><Credentials/><Credentials/></"
	     "AssumeRoleWithWebIdentityResult></"
	     "AssumeRoleWithWebIdentityResponse>",
	     "no Credentials"},
	    {STS_ERROR, "not an AssumeRoleWithWebIdentityResponse"},
	    {"not xml", "not an AssumeRoleWithWebIdentityResponse"},
	    /* hostile: a DTD with an entity never expands */
	    {"<?xml version=\"1.0\"?><!DOCTYPE r [<!ENTITY x SYSTEM "
	     "\"file:///etc/passwd\">]><AssumeRoleWithWebIdentityResponse>&x;"
	     "</AssumeRoleWithWebIdentityResponse>",
	     "not an AssumeRoleWithWebIdentityResponse"},
	    {"<AssumeRoleWithWebIdentityResponse><unclosed>",
	     "not an AssumeRoleWithWebIdentityResponse"},
	};
	struct s3_creds c;
	const char *why = NULL;
	char code[64];
	char message[64];

	(void)state;
	assert_int_equal(sts(STS_OK, &c, &why), 0);
	assert_null(why);
	assert_string_equal(c.access_key, "ASIASTS");
	assert_string_equal(c.secret_key, SECRET);
	assert_string_equal(c.session_token, TOKEN);
	assert_int_equal(c.expiration, utc(2099, 11, 25, 12, 0, 0));
	s3_creds_clear(&c);

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (sts(bad[i].xml, &c, &why) != EPROTO)
			fail_msg("case %zu accepted", i);
		assert_string_equal(why, bad[i].why);
		assert_null(c.access_key);
	}

	assert_int_equal(s3_xml_parse_sts_error(STS_ERROR, strlen(STS_ERROR),
						code, sizeof(code), message,
						sizeof(message)),
			 0);
	assert_string_equal(code, "InvalidIdentityToken");
	assert_string_equal(message, "Incorrect token audience");
	assert_int_equal(s3_xml_parse_sts_error(STS_OK, strlen(STS_OK), code,
						sizeof(code), message,
						sizeof(message)),
			 EPROTO);
	assert_string_equal(code, "");
	assert_int_equal(s3_xml_parse_sts_error("<ErrorResponse/>", 16, code,
						sizeof(code), message,
						sizeof(message)),
			 EPROTO);
}

/* ---- container URI allow-list ---- */

static void test_container_allow_list(void **state)
{
	static const struct {
		const char *url;
		bool ok;
	} cases[] = {
	    {"http://127.0.0.1/creds", true},
	    {"http://127.1.2.3:80/x", true},
	    {"http://127.255.255.254:8080/v1", true},
	    {"http://[::1]/x", true},
	    {"http://[::1]:9000/x", true},
	    {"http://localhost/x", true},
	    {"http://LOCALHOST:1234/x", true},
	    {"http://169.254.170.2/v2/credentials/x", true},
	    {"http://169.254.170.23/v1/credentials", true},
	    {"http://[fd00:ec2::23]/v1/credentials", true},
	    {"https://example.com/x", true},
	    {"https://10.1.2.3/x", true},
	    {"http://example.com/x", false},
	    {"http://10.0.0.1/x", false},
	    {"http://169.254.169.254/latest", false},
	    {"http://169.254.170.3/x", false},
	    {"http://[fd00:ec2::254]/x", false},
	    {"http://[::2]/x", false},
	    {"http://128.0.0.1/x", false},
	    {"http://localhost.example.com/x", false},
	    {"http://127.0.0.1.example.com/x", false},
	    {"http://example.com@127.0.0.1/x", true},
	    {"http://127.0.0.1@example.com/x", false},
	    {"ftp://127.0.0.1/x", false},
	    {"file:///etc/passwd", false},
	    {"127.0.0.1/x", false},
	    {"", false},
	    {"http://", false},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (s3_container_uri_allowed(cases[i].url) != cases[i].ok)
			fail_msg("'%s' should be %s", cases[i].url,
				 cases[i].ok ? "allowed" : "refused");
}

static void test_url_shown(void **state)
{
	char out[128];

	(void)state;
	s3_http_url_shown("http://user:pw@127.0.0.1:80/path?token=x#frag", out,
			  sizeof(out));
	assert_string_equal(out, "http://127.0.0.1:80/path");
	s3_http_url_shown("not a url at all", out, sizeof(out));
	assert_string_equal(out, "");
	assert_true(s3_http_host_loopback("127.0.0.1"));
	assert_true(s3_http_host_loopback("[::1]"));
	assert_true(s3_http_host_loopback("localhost"));
	assert_false(s3_http_host_loopback("169.254.169.254"));
	assert_false(s3_http_host_loopback("[::2]"));
}

/* ---- credential_process ---- */

#define PROCESS_JSON                                                           \
	"{\"Version\": 1, \"AccessKeyId\": \"AKIDPROC\", "                     \
	"\"SecretAccessKey\": \"" SECRET "\", \"SessionToken\": \"" TOKEN      \
	"\", \"Expiration\": \"2099-01-01T00:00:00Z\"}"

static int process(const char *command, unsigned timeout_ms, struct s3_creds *c,
		   char *err, size_t errlen)
{
	memset(c, 0, sizeof(*c));
	c->provider = -1;
	err[0] = '\0';
	return s3_creds_process(command, "dev", timeout_ms, c, err, errlen);
}

static void test_process(void **state)
{
	struct s3_creds c;
	char err[512];
	char cmd[256];
	const char *good;
	int fd;

	(void)state;
	good = script("good.sh", "printf '%s\\n' '" PROCESS_JSON "'");
	assert_int_equal(process(good, 5000, &c, err, sizeof(err)), 0);
	assert_string_equal(c.access_key, "AKIDPROC");
	assert_string_equal(c.secret_key, SECRET);
	assert_string_equal(c.session_token, TOKEN);
	assert_int_equal(c.expiration, utc(2099, 1, 1, 0, 0, 0));
	assert_string_equal(c.source, "credential_process (profile dev)");
	s3_creds_clear(&c);

	/* through sh -c: arguments, quoting, pipes */
	snprintf(cmd, sizeof(cmd), "cat '%s' | sh | cat", good);
	assert_int_equal(process(cmd, 5000, &c, err, sizeof(err)), 0);
	assert_string_equal(c.access_key, "AKIDPROC");
	s3_creds_clear(&c);

	/* stdin is /dev/null (cat ends at once), no other descriptor: an
	 * inheritable one of ours is not there */
	fd = open("/dev/null", O_RDONLY); /* no O_CLOEXEC on purpose */
	assert_true(fd >= 3);
	snprintf(cmd, sizeof(cmd),
		 "cat; if [ -e /dev/fd/%d ]; then exit 9; fi; cat '%s' | sh",
		 fd, good);
	assert_int_equal(process(cmd, 5000, &c, err, sizeof(err)), 0);
	s3_creds_clear(&c);
	close(fd);

	/* a non-zero exit; the command (and its secret) are not shown */
	assert_int_equal(process("echo hunter2 >/dev/null; exit 3", 5000, &c,
				 err, sizeof(err)),
			 EINVAL);
	assert_string_equal(
	    err, "credential_process for profile 'dev' exited with status 3");
	assert_no_secret(err);
	assert_int_equal(process("/nonexistent/helper --password hunter2", 5000,
				 &c, err, sizeof(err)),
			 EINVAL);
	assert_contains(err, "exited with status 127 (command not found?)");
	assert_no_secret(err);
	assert_int_equal(process("kill -9 $$", 5000, &c, err, sizeof(err)),
			 EINVAL);
	assert_contains(err, "was killed by signal 9");

	/* bad output, with the secret near the error */
	assert_int_equal(
	    process("printf '{\"Version\": 1, \"SecretAccessKey\": "
		    "\"" SECRET "\" x'",
		    5000, &c, err, sizeof(err)),
	    EINVAL);
	assert_contains(err, "credential_process for profile 'dev': not valid "
			     "JSON (line 1, column");
	assert_no_secret(err);
	assert_int_equal(
	    process("echo '{\"Version\": 2}'", 5000, &c, err, sizeof(err)),
	    EINVAL);
	assert_string_equal(
	    err, "credential_process for profile 'dev': Version must be 1");
	assert_int_equal(process("true", 5000, &c, err, sizeof(err)), EINVAL);
	assert_string_equal(err, "credential_process for profile 'dev' printed "
				 "nothing");
	assert_int_equal(process("head -c 70000 /dev/zero | tr '\\0' x", 5000,
				 &c, err, sizeof(err)),
			 EINVAL);
	assert_contains(err, "printed more than 65536 bytes");
	assert_null(c.access_key);
}

/* Whether pid runs (a zombie does not: PID 1 may not reap here). */
static bool process_alive(int pid)
{
	char path[64];
	char stat[512];
	const char *close;
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return false;
	n = fread(stat, 1, sizeof(stat) - 1, f);
	fclose(f);
	stat[n] = '\0';
	close = strrchr(stat, ')');
	return close && close[1] == ' ' && close[2] != 'Z' && close[2] != 'X';
}

static void test_process_timeout(void **state)
{
	struct s3_creds c;
	char err[512];
	uint64_t start = util_now_ns();
	char pidfile[128];
	char cmd[256];
	FILE *f;
	int pid = 0;

	(void)state;
	/* silent and never ending: killed at the deadline */
	assert_int_equal(process("sleep 30", 300, &c, err, sizeof(err)),
			 ETIMEDOUT);
	assert_true(seconds_since(start) < 3);
	assert_string_equal(err, "credential_process for profile 'dev' did "
				 "not finish within 1 s");

	/* stdout closed, still running; and a grandchild, killed with it */
	snprintf(pidfile, sizeof(pidfile), "%s/pid", dir);
	snprintf(cmd, sizeof(cmd),
		 "sleep 30 >/dev/null & echo $! >'%s'; exec >&-; sleep 30",
		 pidfile);
	start = util_now_ns();
	assert_int_equal(process(cmd, 300, &c, err, sizeof(err)), ETIMEDOUT);
	assert_true(seconds_since(start) < 3);
	f = fopen(pidfile, "r");
	assert_non_null(f);
	assert_int_equal(fscanf(f, "%d", &pid), 1);
	fclose(f);
	for (int i = 0; i < 100 && process_alive(pid); i++)
		usleep(10000);
	assert_false(process_alive(pid)); /* gone */
}

/* ---- instance metadata ---- */

static int imds(struct s3_creds *c, char *note, size_t notelen, char *err,
		size_t errlen)
{
	memset(c, 0, sizeof(*c));
	c->provider = -1;
	err[0] = '\0';
	return s3_creds_imds(&query, c, note, notelen, err, errlen);
}

static void test_imds_disabled_or_absent(void **state)
{
	struct s3_creds c;
	char note[256];
	char err[256];
	char url[64];
	uint64_t start = util_now_ns();

	(void)state;
	assert_int_equal(imds(&c, note, sizeof(note), err, sizeof(err)),
			 ENOENT);
	assert_string_equal(note, "disabled by AWS_EC2_METADATA_DISABLED");
	setenv("AWS_EC2_METADATA_DISABLED", "TRUE", 1);
	assert_int_equal(imds(&c, note, sizeof(note), err, sizeof(err)),
			 ENOENT);
	assert_true(seconds_since(start) < 0.5);

	/* nothing listening: not found, quickly */
	setenv("AWS_EC2_METADATA_DISABLED", "false", 1);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/", closed_port());
	setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", url, 1);
	start = util_now_ns();
	assert_int_equal(imds(&c, note, sizeof(note), err, sizeof(err)),
			 ENOENT);
	assert_true(seconds_since(start) < 2.5);
	assert_contains(note, "cannot reach http://127.0.0.1:");
	assert_contains(note, "/latest/api/token");

	/* a bad endpoint mode is an error */
	unsetenv("AWS_EC2_METADATA_SERVICE_ENDPOINT");
	setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE", "IPv5", 1);
	assert_int_equal(imds(&c, note, sizeof(note), err, sizeof(err)),
			 EINVAL);
	assert_contains(err, "must be IPv4 or IPv6");
}

#define IMDS_JSON                                                              \
	"{\"Code\": \"Success\", \"Type\": \"AWS-HMAC\", \"AccessKeyId\": "    \
	"\"ASIAIMDS\", \"SecretAccessKey\": \"" SECRET                         \
	"\", \"Token\": \"" TOKEN                                              \
	"\", \"Expiration\": \"2099-01-01T00:00:00Z\"}"

static const struct route imds_routes[] = {
    {"PUT", "/latest/api/token", "X-aws-ec2-metadata-token-ttl-seconds: 21600",
     200, "IMDS-SESSION-TOKEN"},
    {"GET", "/latest/meta-data/iam/security-credentials/",
     "X-aws-ec2-metadata-token: IMDS-SESSION-TOKEN", 200, "my-role\n"},
    {"GET", "/latest/meta-data/iam/security-credentials/my-role",
     "X-aws-ec2-metadata-token: IMDS-SESSION-TOKEN", 200, IMDS_JSON},
};

static void test_imds_server(void **state)
{
	static const struct route no_role[] = {
	    {"PUT", "/latest/api/token", NULL, 200, "T"},
	    {"GET", "/latest/meta-data/iam/security-credentials/", NULL, 404,
	     "not found"},
	};
	static const struct route no_v2[] = {
	    {"PUT", "/latest/api/token", NULL, 403, "forbidden"},
	};
	static const struct route bad_role[] = {
	    {"PUT", "/latest/api/token", NULL, 200, "T"},
	    {"GET", "/latest/meta-data/iam/security-credentials/", NULL, 200,
	     "../../x\n"},
	};
	struct s3_creds c;
	char note[256];
	char err[256];
	char proxy[64];

	(void)state;
	setenv("AWS_EC2_METADATA_DISABLED", "false", 1);
	server_start(imds_routes, 3);
	setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", server_url(), 1);
	/* a proxy that is not there: loopback is reached without it */
	snprintf(proxy, sizeof(proxy), "http://127.0.0.1:%d", closed_port());
	setenv("http_proxy", proxy, 1);
	assert_int_equal(imds(&c, note, sizeof(note), err, sizeof(err)), 0);
	assert_string_equal(c.access_key, "ASIAIMDS");
	assert_string_equal(c.secret_key, SECRET);
	assert_string_equal(c.session_token, TOKEN);
	assert_string_equal(c.source, "instance metadata (role my-role)");
	assert_int_equal(c.expiration, utc(2099, 1, 1, 0, 0, 0));
	s3_creds_clear(&c);
	assert_int_equal(srv.nseen, 3);
	assert_string_equal(srv.seen[0].method, "PUT");
	assert_true(header_present(srv.seen[0].head, "Content-Length: 0"));
	server_stop();

	server_start(no_role, 2);
	setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", server_url(), 1);
	assert_int_equal(imds(&c, note, sizeof(note), err, sizeof(err)),
			 ENOENT);
	assert_contains(note, "no IAM role is attached to this instance");
	server_stop();

	server_start(no_v2, 1);
	setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", server_url(), 1);
	assert_int_equal(imds(&c, note, sizeof(note), err, sizeof(err)),
			 ENOENT);
	assert_contains(note,
			"answered the IMDSv2 token request with HTTP 403");
	server_stop();

	server_start(bad_role, 2);
	setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", server_url(), 1);
	assert_int_equal(imds(&c, note, sizeof(note), err, sizeof(err)),
			 EPROTO);
	assert_contains(err, "gave a malformed role name");
}

/* ---- container ---- */

#define CONTAINER_JSON                                                         \
	"{\"AccessKeyId\": \"ASIACONT\", \"SecretAccessKey\": \"" SECRET       \
	"\", \"Token\": \"" TOKEN "\", \"Expiration\": "                       \
	"\"2099-01-01T00:00:00Z\", \"RoleArn\": \"arn:aws:iam::1:role/t\"}"

static int container(struct s3_creds *c, char *err, size_t errlen)
{
	memset(c, 0, sizeof(*c));
	c->provider = -1;
	err[0] = '\0';
	return s3_creds_container(&query, c, err, errlen);
}

static void test_container(void **state)
{
	static const struct route routes[] = {
	    {"GET", "/v1/creds?id=7", "Authorization: " AUTH, 200,
	     CONTAINER_JSON},
	    {"GET", "/open", NULL, 200, CONTAINER_JSON},
	    {"GET", "/denied", NULL, 403, "{\"message\": \"no\"}"},
	    {"GET", "/broken", NULL, 500, "oops"},
	    {"GET", "/bad", NULL, 200, "{\"AccessKeyId\": \"A\"}"},
	};
	struct s3_creds c;
	char err[512];
	char url[128];

	(void)state;
	assert_int_equal(container(&c, err, sizeof(err)), ENOENT);
	server_start(routes, 5);

	/* FULL_URI with the token from a file (trailing newline trimmed) */
	snprintf(url, sizeof(url), "%s/v1/creds?id=7", server_url());
	setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", url, 1);
	setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
	       write_file("auth", AUTH "\n", 0600), 1);
	setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", "the file wins", 1);
	assert_int_equal(container(&c, err, sizeof(err)), 0);
	assert_string_equal(c.access_key, "ASIACONT");
	assert_string_equal(c.session_token, TOKEN);
	assert_string_equal(c.source, "container credentials");
	assert_int_equal(c.expiration, utc(2099, 1, 1, 0, 0, 0));
	s3_creds_clear(&c);

	/* the token from the environment */
	unsetenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE");
	setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", AUTH, 1);
	assert_int_equal(container(&c, err, sizeof(err)), 0);
	s3_creds_clear(&c);

	/* a token that would inject a header */
	setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", AUTH "\r\nX-Evil: 1", 1);
	assert_int_equal(container(&c, err, sizeof(err)), EINVAL);
	assert_contains(err, "AWS_CONTAINER_AUTHORIZATION_TOKEN holds a line "
			     "break");
	assert_no_secret(err);
	setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
	       write_file("auth2", AUTH "\nX-Evil: 1\n", 0600), 1);
	assert_int_equal(container(&c, err, sizeof(err)), EINVAL);
	assert_contains(err, "container authorization token file");
	assert_contains(err, "holds a line break");
	assert_no_secret(err);
	setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", "/nonexistent/token",
	       1);
	assert_int_equal(container(&c, err, sizeof(err)), EINVAL);
	assert_contains(err, "cannot read container authorization token file "
			     "/nonexistent/token");
	unsetenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE");
	unsetenv("AWS_CONTAINER_AUTHORIZATION_TOKEN");

	/* answers that are not credentials */
	snprintf(url, sizeof(url), "%s/denied", server_url());
	setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", url, 1);
	assert_int_equal(container(&c, err, sizeof(err)), EACCES);
	assert_contains(err, "answered HTTP 403");
	srv.nseen = 0;
	snprintf(url, sizeof(url), "%s/broken", server_url());
	setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", url, 1);
	assert_int_equal(container(&c, err, sizeof(err)), EIO);
	assert_int_equal(srv.nseen, 2); /* tried twice */
	snprintf(url, sizeof(url), "%s/bad", server_url());
	setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", url, 1);
	assert_int_equal(container(&c, err, sizeof(err)), EINVAL);
	assert_contains(err, "container credentials from http://127.0.0.1:");
	assert_contains(err, "/bad: no SecretAccessKey");

	/* refused before any request */
	srv.nseen = 0;
	setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI",
	       "http://example.com/creds?token=hunter2", 1);
	assert_int_equal(container(&c, err, sizeof(err)), EINVAL);
	assert_contains(err, "AWS_CONTAINER_CREDENTIALS_FULL_URI "
			     "'http://example.com/creds' is not allowed");
	assert_no_secret(err);
	unsetenv("AWS_CONTAINER_CREDENTIALS_FULL_URI");
	setenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "@example.com/x", 1);
	assert_int_equal(container(&c, err, sizeof(err)), EINVAL);
	assert_contains(err, "must start with '/'");
	assert_int_equal(srv.nseen, 0);

	/* the relative URI beats the full one (and would go to
	 * 169.254.170.2: not asked here) */
	snprintf(url, sizeof(url), "%s/open", server_url());
	setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", url, 1);
	unsetenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
	assert_int_equal(container(&c, err, sizeof(err)), 0);
	s3_creds_clear(&c);
}

/* ---- web identity ---- */

#define ROLE_ARN "arn:aws:iam::123456789012:role/s3 reader+x"

static void test_web_identity(void **state)
{
	static const struct route routes[] = {
	    {"POST", "/", NULL, 200, STS_OK},
	};
	static const struct route refused[] = {
	    {"POST", "/", NULL, 400, STS_ERROR},
	};
	static const struct route throttled[] = {
	    {"POST", "/", NULL, 503, "<nope/>"},
	};
	struct s3_web_identity w = {.role_arn = ROLE_ARN};
	struct s3_creds c = {.provider = -1};
	char err[512] = "";
	const char *body;

	(void)state;
	w.token_file = write_file("token", OIDC "\n\n", 0600);
	server_start(routes, 1);
	setenv("AWS_ENDPOINT_URL_STS", server_url(), 1);
	assert_int_equal(
	    s3_creds_web_identity(&query, &w, &c, err, sizeof(err)), 0);
	assert_string_equal(c.access_key, "ASIASTS");
	assert_string_equal(c.secret_key, SECRET);
	assert_string_equal(c.session_token, TOKEN);
	assert_int_equal(c.expiration, utc(2099, 11, 25, 12, 0, 0));
	assert_string_equal(c.source, "web identity (" ROLE_ARN ")");
	s3_creds_clear(&c);
	assert_int_equal(srv.nseen, 1);
	body = srv.seen[0].body;
	assert_contains(body, "Action=AssumeRoleWithWebIdentity&Version="
			      "2011-06-15&RoleArn=arn%3Aaws%3Aiam%3A%3A"
			      "123456789012%3Arole%2Fs3%20reader%2Bx"
			      "&RoleSessionName=s3pipe-");
	assert_contains(body, "&WebIdentityToken=eyJhbGciOiJSUzI1NiJ9.OIDC-"
			      "TOKEN%2B%2F%3D.sig");
	assert_true(header_present(srv.seen[0].head,
				   "Content-Type: application/x-www-form-"
				   "urlencoded; charset=utf-8"));
	assert_null(strstr(srv.seen[0].path, "Token"));
	assert_null(strstr(srv.seen[0].head, "Authorization"));

	/* the session name, and AWS_ENDPOINT_URL when no STS endpoint */
	srv.nseen = 0;
	w.session_name = "my session";
	unsetenv("AWS_ENDPOINT_URL_STS");
	setenv("AWS_ENDPOINT_URL", server_url(), 1);
	assert_int_equal(
	    s3_creds_web_identity(&query, &w, &c, err, sizeof(err)), 0);
	s3_creds_clear(&c);
	assert_contains(srv.seen[0].body, "&RoleSessionName=my%20session&");
	server_stop();

	/* STS says no */
	server_start(refused, 1);
	setenv("AWS_ENDPOINT_URL_STS", server_url(), 1);
	assert_int_equal(
	    s3_creds_web_identity(&query, &w, &c, err, sizeof(err)), EACCES);
	assert_string_equal(err, "sts AssumeRoleWithWebIdentity failed: "
				 "InvalidIdentityToken: Incorrect token "
				 "audience");
	server_stop();
	server_start(throttled, 1);
	setenv("AWS_ENDPOINT_URL_STS", server_url(), 1);
	assert_int_equal(
	    s3_creds_web_identity(&query, &w, &c, err, sizeof(err)), EIO);
	assert_contains(err, "answered HTTP 503");
	assert_int_equal(srv.nseen, 2);
	server_stop();

	/* token files that cannot be used */
	w.token_file = "/nonexistent/token";
	assert_int_equal(
	    s3_creds_web_identity(&query, &w, &c, err, sizeof(err)), EINVAL);
	assert_contains(
	    err, "cannot read web identity token file /nonexistent/token");
	w.token_file = write_file("empty", " \n", 0600);
	assert_int_equal(
	    s3_creds_web_identity(&query, &w, &c, err, sizeof(err)), EINVAL);
	assert_contains(err, "is empty");
	w.token_file = dir;
	assert_int_equal(
	    s3_creds_web_identity(&query, &w, &c, err, sizeof(err)), EINVAL);
	assert_contains(err, "is not a regular file");

	/* nothing there: an error naming STS's URL */
	w.token_file = write_file("token", OIDC, 0600);
	assert_int_equal(
	    s3_creds_web_identity(&query, &w, &c, err, sizeof(err)),
	    ECONNREFUSED);
	assert_contains(err, "cannot reach http://127.0.0.1:");
	assert_no_secret(err);
	setenv("AWS_ENDPOINT_URL_STS", "http://sts.example.com/path", 1);
	assert_int_equal(
	    s3_creds_web_identity(&query, &w, &c, err, sizeof(err)), EINVAL);
	assert_contains(err, "AWS_ENDPOINT_URL_STS");
}

/* ---- the chain ---- */

static int resolve(struct s3_creds *c, char *err, size_t errlen)
{
	return s3_creds_resolve(&query, c, err, errlen);
}

static void test_chain_process(void **state)
{
	struct s3_creds c;
	struct s3_creds fresh;
	char err[512];
	char text[512];
	const char *good =
	    script("good.sh", "printf '%s\\n' '" PROCESS_JSON "'");

	(void)state;
	/* credential_process in the config file */
	snprintf(text, sizeof(text), "[profile dev]\ncredential_process = %s\n",
		 good);
	setenv("AWS_CONFIG_FILE", write_file("config", text, 0600), 1);
	setenv("AWS_PROFILE", "dev", 1);
	assert_int_equal(resolve(&c, err, sizeof(err)), 0);
	assert_string_equal(c.access_key, "AKIDPROC");
	assert_string_equal(c.source, "credential_process (profile dev)");
	assert_int_equal(c.expiration, utc(2099, 1, 1, 0, 0, 0));
	assert_true(c.provider >= 0);

	/* refresh asks it again */
	assert_int_equal(s3_creds_refresh(&query, &c, &fresh, err, sizeof(err)),
			 0);
	assert_string_equal(fresh.access_key, "AKIDPROC");
	assert_int_equal(fresh.provider, c.provider);
	s3_creds_clear(&fresh);
	s3_creds_clear(&c);

	/* the environment wins over it */
	setenv("AWS_ACCESS_KEY_ID", "AKIDENV", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "env-secret", 1);
	assert_int_equal(resolve(&c, err, sizeof(err)), 0);
	assert_string_equal(c.source, "environment");
	assert_int_equal(c.expiration, 0);
	s3_creds_clear(&c);
	unsetenv("AWS_ACCESS_KEY_ID");
	unsetenv("AWS_SECRET_ACCESS_KEY");

	/* static keys in the credentials file win over it, and it wins over
	 * static keys in the config file */
	snprintf(text, sizeof(text),
		 "[profile dev]\ncredential_process = %s\n"
		 "aws_access_key_id = AKIDCONF\naws_secret_access_key = x\n",
		 good);
	setenv("AWS_CONFIG_FILE", write_file("config", text, 0600), 1);
	assert_int_equal(resolve(&c, err, sizeof(err)), 0);
	assert_string_equal(c.access_key, "AKIDPROC");
	s3_creds_clear(&c);
	setenv("AWS_SHARED_CREDENTIALS_FILE",
	       write_file("credentials",
			  "[dev]\naws_access_key_id = AKIDCRED\n"
			  "aws_secret_access_key = y\n",
			  0600),
	       1);
	assert_int_equal(resolve(&c, err, sizeof(err)), 0);
	assert_string_equal(c.access_key, "AKIDCRED");
	s3_creds_clear(&c);

	/* in the credentials file too (botocore reads it there) */
	unsetenv("AWS_CONFIG_FILE");
	snprintf(text, sizeof(text), "[dev]\ncredential_process = %s\n", good);
	setenv("AWS_SHARED_CREDENTIALS_FILE",
	       write_file("credentials", text, 0600), 1);
	assert_int_equal(resolve(&c, err, sizeof(err)), 0);
	assert_string_equal(c.access_key, "AKIDPROC");
	s3_creds_clear(&c);

	/* a failing one stops the chain */
	snprintf(text, sizeof(text), "[dev]\ncredential_process = %s\n",
		 script("fail.sh", "exit 1"));
	write_file("credentials", text, 0600);
	setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://127.0.0.1:1/x", 1);
	assert_int_equal(resolve(&c, err, sizeof(err)), EINVAL);
	assert_string_equal(
	    err, "credential_process for profile 'dev' exited with status 1");
	unsetenv("AWS_CONTAINER_CREDENTIALS_FULL_URI");

	/* credentials that have expired already */
	snprintf(text, sizeof(text), "[dev]\ncredential_process = %s\n",
		 script("old.sh", "echo '{\"Version\": 1, \"AccessKeyId\": "
				  "\"A\", \"SecretAccessKey\": \"" SECRET
				  "\", \"Expiration\": "
				  "\"2001-01-01T00:00:00Z\"}'"));
	write_file("credentials", text, 0600);
	assert_int_equal(resolve(&c, err, sizeof(err)), EINVAL);
	assert_string_equal(err, "the credentials from credential_process "
				 "(profile dev) expired at "
				 "2001-01-01T00:00:00Z");
	assert_null(c.access_key);
	assert_int_equal(c.provider, -1);
}

static void test_chain_web_identity(void **state)
{
	static const struct route routes[] = {
	    {"POST", "/", NULL, 200, STS_OK},
	};
	struct s3_creds c;
	char err[512];
	char text[512];
	const char *token = write_file("token", OIDC, 0600);

	(void)state;
	server_start(routes, 1);
	setenv("AWS_ENDPOINT_URL_STS", server_url(), 1);
	setenv("AWS_SHARED_CREDENTIALS_FILE",
	       write_file("credentials",
			  "[default]\naws_access_key_id = AKIDCRED\n"
			  "aws_secret_access_key = y\n",
			  0600),
	       1);

	/* from the environment: before the credentials file */
	setenv("AWS_WEB_IDENTITY_TOKEN_FILE", token, 1);
	setenv("AWS_ROLE_ARN", "arn:aws:iam::1:role/env", 1);
	setenv("AWS_ROLE_SESSION_NAME", "envsession", 1);
	assert_int_equal(resolve(&c, err, sizeof(err)), 0);
	assert_string_equal(c.access_key, "ASIASTS");
	assert_string_equal(c.source, "web identity (arn:aws:iam::1:role/env)");
	s3_creds_clear(&c);
	assert_contains(srv.seen[0].body, "RoleSessionName=envsession&");

	/* from the profile, the environment winning key by key */
	unsetenv("AWS_WEB_IDENTITY_TOKEN_FILE");
	unsetenv("AWS_ROLE_SESSION_NAME");
	snprintf(text, sizeof(text),
		 "[default]\nweb_identity_token_file = %s\n"
		 "role_arn = arn:aws:iam::1:role/profile\n"
		 "role_session_name = profsession\n",
		 token);
	setenv("AWS_CONFIG_FILE", write_file("config", text, 0600), 1);
	assert_int_equal(resolve(&c, err, sizeof(err)), 0);
	assert_string_equal(c.source, "web identity (arn:aws:iam::1:role/env)");
	s3_creds_clear(&c);
	unsetenv("AWS_ROLE_ARN");
	assert_int_equal(resolve(&c, err, sizeof(err)), 0);
	assert_string_equal(c.source,
			    "web identity (arn:aws:iam::1:role/profile)");
	s3_creds_clear(&c);
	assert_contains(srv.seen[2].body, "RoleSessionName=profsession&");

	/* a token file without a role */
	setenv("AWS_WEB_IDENTITY_TOKEN_FILE", token, 1);
	setenv("AWS_CONFIG_FILE", "/nonexistent/config", 1);
	assert_int_equal(resolve(&c, err, sizeof(err)), EINVAL);
	assert_string_equal(err, "AWS_WEB_IDENTITY_TOKEN_FILE is set but no "
				 "role to assume: set AWS_ROLE_ARN, or "
				 "role_arn in profile 'default'");
	unsetenv("AWS_WEB_IDENTITY_TOKEN_FILE");
	snprintf(text, sizeof(text),
		 "[default]\nweb_identity_token_file = %s\n", token);
	setenv("AWS_CONFIG_FILE", write_file("config", text, 0600), 1);
	assert_int_equal(resolve(&c, err, sizeof(err)), EINVAL);
	assert_contains(err, "profile 'default' has web_identity_token_file "
			     "but no role_arn");
}

static void test_chain_container_and_imds(void **state)
{
	static const struct route routes[] = {
	    {"GET", "/creds", NULL, 200, CONTAINER_JSON},
	    {"PUT", "/latest/api/token",
	     "X-aws-ec2-metadata-token-ttl-seconds: 21600", 200,
	     "IMDS-SESSION-TOKEN"},
	    {"GET", "/latest/meta-data/iam/security-credentials/",
	     "X-aws-ec2-metadata-token: IMDS-SESSION-TOKEN", 200, "my-role\n"},
	    {"GET", "/latest/meta-data/iam/security-credentials/my-role",
	     "X-aws-ec2-metadata-token: IMDS-SESSION-TOKEN", 200, IMDS_JSON},
	};
	struct s3_creds c;
	struct s3_creds fresh;
	char err[512];
	char url[128];

	(void)state;
	server_start(routes, 4);
	snprintf(url, sizeof(url), "%s/creds", server_url());

	/* nothing else: the container, then instance metadata */
	setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", url, 1);
	setenv("AWS_EC2_METADATA_DISABLED", "false", 1);
	setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", server_url(), 1);
	assert_int_equal(resolve(&c, err, sizeof(err)), 0);
	assert_string_equal(c.source, "container credentials");
	s3_creds_clear(&c);
	unsetenv("AWS_CONTAINER_CREDENTIALS_FULL_URI");
	assert_int_equal(resolve(&c, err, sizeof(err)), 0);
	assert_string_equal(c.source, "instance metadata (role my-role)");
	assert_int_equal(c.expiration, utc(2099, 1, 1, 0, 0, 0));
	assert_int_equal(s3_creds_refresh(&query, &c, &fresh, err, sizeof(err)),
			 0);
	assert_string_equal(fresh.source, "instance metadata (role my-role)");
	s3_creds_clear(&fresh);

	/* instance metadata gone: refresh says so */
	setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
	assert_int_equal(s3_creds_refresh(&query, &c, &fresh, err, sizeof(err)),
			 ENOENT);
	assert_string_equal(err, "instance metadata no longer gives "
				 "credentials: disabled by "
				 "AWS_EC2_METADATA_DISABLED");
	assert_null(fresh.access_key);
	s3_creds_clear(&c);

	/* a profile with a role s3pipe cannot assume ends the chain: no
	 * container or instance credentials in its place */
	setenv("AWS_EC2_METADATA_DISABLED", "false", 1);
	setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", url, 1);
	setenv("AWS_CONFIG_FILE",
	       write_file("config",
			  "[default]\nrole_arn = arn:aws:iam::1:role/x\n"
			  "source_profile = base\n",
			  0600),
	       1);
	srv.nseen = 0;
	assert_int_equal(resolve(&c, err, sizeof(err)), ENOENT);
	assert_contains(err, "no credentials found: profile 'default' in ");
	assert_contains(err, "uses role_arn, which s3pipe does not support");
	assert_int_equal(srv.nseen, 0);
	write_file("config", "[default]\nsso_session = corp\n", 0600);
	assert_int_equal(resolve(&c, err, sizeof(err)), ENOENT);
	assert_contains(err, "uses sso_session, which s3pipe does not support");
	assert_int_equal(srv.nseen, 0);
}

static void test_chain_nothing_found(void **state)
{
	struct s3_creds c;
	char err[512];
	char url[64];
	uint64_t start;

	(void)state;
	assert_int_equal(resolve(&c, err, sizeof(err)), ENOENT);
	assert_contains(err, "no credentials found (instance metadata: "
			     "disabled by AWS_EC2_METADATA_DISABLED): set "
			     "AWS_ACCESS_KEY_ID");

	setenv("AWS_EC2_METADATA_DISABLED", "false", 1);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", closed_port());
	setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", url, 1);
	start = util_now_ns();
	assert_int_equal(resolve(&c, err, sizeof(err)), ENOENT);
	assert_true(seconds_since(start) < 2.5);
	assert_contains(err, "(instance metadata: cannot reach "
			     "http://127.0.0.1:");
}

/* ---- the shared files' permissions ---- */

static void test_permission_warning(void **state)
{
	struct s3_creds c;
	char err[512];
	const char *path;
	const char *out;
	char want[256];

	(void)state;
	path = write_file("credentials",
			  "[default]\naws_access_key_id = A\n"
			  "aws_secret_access_key = " SECRET "\n",
			  0644);
	setenv("AWS_SHARED_CREDENTIALS_FILE", path, 1);
	capture_start();
	assert_int_equal(resolve(&c, err, sizeof(err)), 0);
	s3_creds_clear(&c);
	assert_int_equal(resolve(&c, err, sizeof(err)), 0); /* once only */
	s3_creds_clear(&c);
	out = capture_stop();
	snprintf(want, sizeof(want),
		 "s3pipe: shared credentials file %s is readable by group or "
		 "others; chmod 600 it\n",
		 path);
	assert_contains(out, want);
	assert_null(strstr(strstr(out, want) + 1, want));
	assert_no_secret(out);

	/* private: no warning; a config file without secrets: none either */
	path = write_file("credentials2",
			  "[default]\naws_access_key_id = A\n"
			  "aws_secret_access_key = " SECRET "\n",
			  0600);
	setenv("AWS_SHARED_CREDENTIALS_FILE", path, 1);
	setenv("AWS_CONFIG_FILE",
	       write_file("config", "[default]\nregion = eu-west-1\n", 0644),
	       1);
	capture_start();
	assert_int_equal(resolve(&c, err, sizeof(err)), 0);
	s3_creds_clear(&c);
	out = capture_stop();
	assert_null(strstr(out, "readable by group or others"));

	/* a config file with a secret in another profile */
	path = write_file("config2",
			  "[profile x]\naws_session_token = " TOKEN "\n", 0640);
	setenv("AWS_CONFIG_FILE", path, 1);
	capture_start();
	assert_int_equal(resolve(&c, err, sizeof(err)), 0);
	s3_creds_clear(&c);
	out = capture_stop();
	snprintf(want, sizeof(want),
		 "shared config file %s is readable by group or others", path);
	assert_contains(out, want);
}

/* Everything above at debug level: no secret in what was logged. */
static void test_no_secret_logged(void **state)
{
	static const struct route routes[] = {
	    {"POST", "/", NULL, 200, STS_OK},
	    {"PUT", "/latest/api/token", NULL, 200, "IMDS-SESSION-TOKEN"},
	    {"GET", "/latest/meta-data/iam/security-credentials/", NULL, 200,
	     "my-role\n"},
	    {"GET", "/latest/meta-data/iam/security-credentials/my-role", NULL,
	     200, IMDS_JSON},
	    {"GET", "/c", "Authorization: " AUTH, 200, CONTAINER_JSON},
	};
	struct s3_creds c;
	char err[512];
	char url[128];
	char text[512];
	const char *out;

	(void)state;
	server_start(routes, 5);
	capture_start();
	setenv("AWS_EC2_METADATA_DISABLED", "false", 1);
	setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", server_url(), 1);
	assert_int_equal(resolve(&c, err, sizeof(err)), 0);
	s3_creds_clear(&c);
	snprintf(url, sizeof(url), "%s/c", server_url());
	setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", url, 1);
	setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", AUTH, 1);
	assert_int_equal(resolve(&c, err, sizeof(err)), 0);
	s3_creds_clear(&c);
	setenv("AWS_ENDPOINT_URL_STS", server_url(), 1);
	setenv("AWS_WEB_IDENTITY_TOKEN_FILE", write_file("t", OIDC, 0600), 1);
	setenv("AWS_ROLE_ARN", "arn:aws:iam::1:role/r", 1);
	assert_int_equal(resolve(&c, err, sizeof(err)), 0);
	s3_creds_clear(&c);
	unsetenv("AWS_WEB_IDENTITY_TOKEN_FILE");
	snprintf(text, sizeof(text), "[default]\ncredential_process = %s\n",
		 script("p.sh", "printf '%s\\n' '" PROCESS_JSON "'"));
	setenv("AWS_CONFIG_FILE", write_file("config", text, 0600), 1);
	assert_int_equal(resolve(&c, err, sizeof(err)), 0);
	s3_creds_clear(&c);
	out = capture_stop();
	assert_contains(out, "credentials from");
	assert_no_secret(out);
	assert_null(strstr(out, "IMDS-SESSION-TOKEN"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_json_shapes, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_json_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_time_valid, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_time_refused, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_time_format, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_sts_xml, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_container_allow_list, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_url_shown, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_process, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_process_timeout, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_imds_disabled_or_absent, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_imds_server, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_container, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_web_identity, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_chain_process, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_chain_web_identity, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_chain_container_and_imds,
					    setup, teardown),
	    cmocka_unit_test_setup_teardown(test_chain_nothing_found, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_permission_warning, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_no_secret_logged, setup,
					    teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
