/*
 * test_request: what one HTTP attempt sends and what it comes to.
 *
 *   s3/request.c  endpoint parsing; the URL, method and headers of GETs,
 *                 LISTs and HEADs;
 *                 the SigV4 headers, checked against a signature computed
 *                 here with OpenSSL from AWS's documented algorithm (the
 *                 oracle is itself checked on AWS's published examples);
 *   s3/error.c    s3_error_from_attempt(): one attempt -> errno + retry;
 *   store/store.c    store_get_check();
 *   s3/conf.c     the client settings and s3_client_conf_resolve(), with
 *                 an environment that names only files that do not exist.
 *
 * Nothing here touches the network.
 */
#include "config.h"

#include "s3/internal.h"
#include "s3/s3.h"
#include "store/store.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/unit/aws_env.h"
#include <curl/curl.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#define N_ELEMS(a) (sizeof(a) / sizeof((a)[0]))

/* 2013-05-24T00:00:00Z, the day of AWS's S3 signing examples */
#define T_20130524 ((time_t)1369353600)
#define DAY	   ((time_t)86400)

#define DNS_EP "https://s3.example.com"
#define IP_EP  "http://127.0.0.1:9000"

/* ======================================================================
 * An independent SigV4 signer (AWS's "Signature Version 4 signing
 * process"), computed with OpenSSL's HMAC and SHA-256 directly.
 * ====================================================================== */

static void to_hex(const unsigned char *in, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 15];
	}
	out[2 * n] = '\0';
}

/* out may be key */
static void hmac_sha256(const unsigned char *key, size_t klen, const char *msg,
			unsigned char out[32])
{
	unsigned char mac[EVP_MAX_MD_SIZE];
	unsigned int len = 0;

	assert_non_null(HMAC(EVP_sha256(), key, (int)klen,
			     (const unsigned char *)msg, strlen(msg), mac,
			     &len));
	assert_int_equal(len, 32);
	memcpy(out, mac, 32);
}

static void sha256_hex(const char *s, char out[65])
{
	unsigned char md[SHA256_DIGEST_LENGTH];

	SHA256((const unsigned char *)s, strlen(s), md);
	to_hex(md, sizeof(md), out);
}

static void oracle_signing_key(const char *secret, const char *date,
			       const char *region, const char *service,
			       unsigned char key[32])
{
	char k0[256];

	snprintf(k0, sizeof(k0), "AWS4%s", secret);
	hmac_sha256((const unsigned char *)k0, strlen(k0), date, key);
	hmac_sha256(key, 32, region, key);
	hmac_sha256(key, 32, service, key);
	hmac_sha256(key, 32, "aws4_request", key);
}

/* AWS's documented derivation example (secret, 20120215, us-east-1, iam):
 * proves the oracle's key before it judges anything. */
static void test_oracle_signing_key(void **state)
{
	unsigned char key[32];
	char hex[65];

	oracle_signing_key("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
			   "20120215", "us-east-1", "iam", key);
	to_hex(key, 32, hex);
	assert_string_equal(hex, "f4780e2d9f65fa895f9c67b32ce1baf0"
				 "b0d8a43505a000a1a9e090d414db404d");
}

/* ---- what a request sends, as curl would get it ---- */

#define MAX_HDRS 16

struct sent {
	char url[2048];
	size_t n;
	char name[MAX_HDRS][64];
	char value[MAX_HDRS][1024]; /* "" for "Name:" */
};

static void sent_add(struct sent *s, const char *line)
{
	const char *colon = strchr(line, ':');
	const char *v;

	assert_non_null(colon);
	assert_true(s->n < MAX_HDRS);
	assert_true((size_t)(colon - line) < sizeof(s->name[0]));
	memcpy(s->name[s->n], line, (size_t)(colon - line));
	s->name[s->n][colon - line] = '\0';
	for (v = colon + 1; *v == ' '; v++)
		;
	assert_true(strlen(v) < sizeof(s->value[0]));
	snprintf(s->value[s->n], sizeof(s->value[0]), "%s", v);
	s->n++;
}

/* The value of header name (any case), NULL when absent; at most one. */
static const char *hdr(const struct sent *s, const char *name)
{
	const char *found = NULL;

	for (size_t i = 0; i < s->n; i++) {
		if (strcasecmp(s->name[i], name) != 0)
			continue;
		assert_null(found);
		found = s->value[i];
	}
	return found;
}

static void assert_hdr(const struct sent *s, const char *name, const char *want)
{
	const char *got = hdr(s, name);

	if (!want) {
		assert_null(got);
		return;
	}
	assert_non_null(got);
	assert_string_equal(got, want);
}

/* Builds spec against endpoint and returns what would be sent. */
static void build(const char *endpoint, bool force, struct s3_signer *signer,
		  const struct s3_request_spec *spec, time_t now,
		  struct sent *out)
{
	struct s3_endpoint ep;
	struct curl_slist *headers = NULL;
	char *url = NULL;

	memset(out, 0, sizeof(*out));
	assert_int_equal(s3_endpoint_parse(endpoint, "us-east-1", &ep), 0);
	assert_int_equal(
	    s3_request_build(&ep, force, signer, spec, now, &url, &headers), 0);
	assert_non_null(url);
	assert_true(strlen(url) < sizeof(out->url));
	snprintf(out->url, sizeof(out->url), "%s", url);
	for (const struct curl_slist *l = headers; l; l = l->next)
		sent_add(out, l->data);
	free(url);
	curl_slist_free_all(headers);
	s3_endpoint_free(&ep);
}

/* ---- the oracle: signs what was sent ---- */

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Canonical query of the URL's query: parameters sorted by name. */
static void canonical_query(const char *url, char *out, size_t outlen)
{
	const char *q = strchr(url, '?');
	char copy[2048];
	char *params[16];
	size_t n = 0;
	char *p, *amp;

	out[0] = '\0';
	if (!q)
		return;
	snprintf(copy, sizeof(copy), "%s", q + 1);
	for (p = copy; p; p = amp) {
		amp = strchr(p, '&');
		if (amp)
			*amp++ = '\0';
		assert_true(n < N_ELEMS(params));
		params[n++] = p;
	}
	qsort(params, n, sizeof(params[0]), cmp_str);
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(out);

		snprintf(out + len, outlen - len, "%s%s", i ? "&" : "",
			 params[i]);
	}
}

/* Path of the URL: from the first '/' after "://" up to '?'. */
static void url_path(const char *url, char *out, size_t outlen)
{
	const char *host = strstr(url, "://");
	const char *path;

	assert_non_null(host);
	path = strchr(host + 3, '/');
	assert_non_null(path);
	snprintf(out, outlen, "%.*s", (int)strcspn(path, "?"), path);
}

/*
 * The signature over what s sends with method for the headers named in
 * signed_names ("a;b;c"), with secret in region: AWS's canonical request,
 * string to sign and HMAC chain, written out here.
 */
static void oracle_signature(const struct sent *s, const char *method,
			     const char *signed_names, const char *secret,
			     const char *region, char sig[65])
{
	char creq[8192], sts[512], path[2048], query[2048];
	char creq_hash[65], date[9];
	const char *amz_date = hdr(s, "x-amz-date");
	const char *payload = hdr(s, "x-amz-content-sha256");
	unsigned char key[32], mac[32];
	size_t len;

	assert_non_null(amz_date);
	assert_non_null(payload);
	url_path(s->url, path, sizeof(path));
	canonical_query(s->url, query, sizeof(query));
	len = (size_t)snprintf(creq, sizeof(creq), "%s\n%s\n%s\n", method, path,
			       query);
	for (const char *p = signed_names; *p;) {
		size_t n = strcspn(p, ";");
		char name[64];
		const char *v;
		size_t vlen;

		snprintf(name, sizeof(name), "%.*s", (int)n, p);
		p += n + (p[n] == ';');
		v = hdr(s, name);
		assert_non_null(v); /* a signed header that is not sent */
		for (vlen = strlen(v); vlen && v[vlen - 1] == ' '; vlen--)
			;
		len += (size_t)snprintf(creq + len, sizeof(creq) - len,
					"%s:%.*s\n", name, (int)vlen, v);
	}
	len += (size_t)snprintf(creq + len, sizeof(creq) - len, "\n%s\n%s",
				signed_names, payload);
	assert_true(len < sizeof(creq));
	sha256_hex(creq, creq_hash);
	snprintf(date, sizeof(date), "%.8s", amz_date);
	snprintf(sts, sizeof(sts),
		 "AWS4-HMAC-SHA256\n%s\n%s/%s/s3/aws4_request\n%s", amz_date,
		 date, region, creq_hash);
	oracle_signing_key(secret, date, region, "s3", key);
	hmac_sha256(key, 32, sts, mac);
	to_hex(mac, 32, sig);
}

/* Sets s to the request of AWS's "GET Object" S3 signing example. */
static void aws_example(struct sent *s, const char *url, const char *range)
{
	memset(s, 0, sizeof(*s));
	snprintf(s->url, sizeof(s->url), "%s", url);
	sent_add(s, "Host: examplebucket.s3.amazonaws.com");
	if (range)
		sent_add(s, range);
	sent_add(s, "x-amz-content-sha256: e3b0c44298fc1c149afbf4c8996fb9242"
		    "7ae41e4649b934ca495991b7852b855");
	sent_add(s, "x-amz-date: 20130524T000000Z");
}

/* The oracle against AWS's published S3 examples (GET Object, GET Bucket). */
static void test_oracle_aws_examples(void **state)
{
	const char *sk = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
	struct sent s;
	char sig[65];

	aws_example(&s, "https://examplebucket.s3.amazonaws.com/test.txt",
		    "Range: bytes=0-9");
	oracle_signature(&s, "GET",
			 "host;range;x-amz-content-sha256;x-amz-date", sk,
			 "us-east-1", sig);
	assert_string_equal(sig, "f0e8bdb87c964420e857bd35b5d6ed31"
				 "0bd44f0170aba48dd91039c6036bdb41");
	/* parameters given out of order: the oracle sorts them */
	aws_example(&s,
		    "https://examplebucket.s3.amazonaws.com/?prefix=J&"
		    "max-keys=2",
		    NULL);
	oracle_signature(&s, "GET", "host;x-amz-content-sha256;x-amz-date", sk,
			 "us-east-1", sig);
	assert_string_equal(sig, "34b48302e7b5fa45bde8084f4b7868a8"
				 "6f0a534bc59db6670ed5711ef69dc6f7");
}

/* ======================================================================
 * s3_endpoint_valid / s3_endpoint_parse
 * ====================================================================== */

struct valid_case {
	const char *url;
	size_t len; /* 0: refused */
};

static void test_endpoint_valid(void **state)
{
	static const struct valid_case cases[] = {
	    {"http://localhost", 16},
	    {"https://s3.example.com", 22},
	    {"https://s3.example.com/", 22},
	    {"http://127.0.0.1:9000", 21},
	    {"http://127.0.0.1:9000/", 21},
	    {"http://h:1", 10},
	    {"http://h:65535", 14},
	    {"http://h:00080", 14},
	    {"http://[::1]", 12},
	    {"http://[::1]:9000/", 17},
	    {"https://[2001:db8::1]:443", 25},
	    /* refused */
	    {"", 0},
	    {"s3.example.com", 0},
	    {"ftp://h", 0},
	    {"http:/h", 0},
	    {"http://", 0},
	    {"http:///", 0},
	    {"http://h//", 0},
	    {"http://h/path", 0},
	    {"http://h:9000/bucket", 0},
	    {"http://user@h", 0},
	    {"http://user:pw@h:9000", 0},
	    {"http://h?x=1", 0},
	    {"http://h/?x=1", 0},
	    {"http://h#frag", 0},
	    {"http://h\\x", 0},
	    {"http://h x", 0},
	    {"http://h ", 0},
	    {" http://h", 0},
	    {"http://h\t", 0},
	    {"http://h\x7f", 0},
	    {"http://h:0", 0},
	    {"http://h:0000", 0},
	    {"http://h:65536", 0},
	    {"http://h:99999999999999999999999", 0},
	    {"http://h:", 0},
	    {"http://h:80a", 0},
	    {"http://h:-1", 0},
	    {"http://h:+80", 0},
	    {"http://h:1:2", 0},
	    {"http://:80", 0},
	    {"http://::1", 0},
	    {"http://[]", 0},
	    {"http://[::1", 0},
	    {"http://[::1]9000", 0},
	    {"http://[::1]:", 0},
	    {"http://[::1]:0", 0},
	    {"http://[::1]:65536", 0},
	    {"http://[::1]]", 0},
	};

	for (size_t i = 0; i < N_ELEMS(cases); i++) {
		size_t len = 12345;
		bool ok = s3_endpoint_valid(cases[i].url, &len);

		print_message("endpoint '%s'\n", cases[i].url);
		assert_int_equal(ok, cases[i].len != 0);
		if (ok)
			assert_int_equal(len, cases[i].len);
		/* len may be NULL */
		assert_int_equal(s3_endpoint_valid(cases[i].url, NULL), ok);
	}
}

struct parse_case {
	const char *endpoint; /* NULL: AWS's */
	const char *region;
	const char *scheme, *authority, *host; /* scheme NULL: EINVAL */
	bool ip_or_localhost, plain_http;
};

static void test_endpoint_parse(void **state)
{
	static const struct parse_case cases[] = {
	    {NULL, "eu-west-1", "https", "s3.eu-west-1.amazonaws.com",
	     "s3.eu-west-1.amazonaws.com", false, false},
	    {NULL, "us-east-1", "https", "s3.us-east-1.amazonaws.com",
	     "s3.us-east-1.amazonaws.com", false, false},
	    {"https://minio.example.com", NULL, "https", "minio.example.com",
	     "minio.example.com", false, false},
	    {"https://s3.example.com:8443/", NULL, "https",
	     "s3.example.com:8443", "s3.example.com", false, false},
	    {"http://127.0.0.1:9000/", NULL, "http", "127.0.0.1:9000",
	     "127.0.0.1", true, true},
	    {"http://10.1.2.3", NULL, "http", "10.1.2.3", "10.1.2.3", true,
	     true},
	    {"http://localhost:4568", NULL, "http", "localhost:4568",
	     "localhost", true, true},
	    {"http://LocalHost", NULL, "http", "LocalHost", "LocalHost", true,
	     true},
	    {"https://[::1]:443", NULL, "https", "[::1]:443", "::1", true,
	     false},
	    {"http://[fd00::5]", NULL, "http", "[fd00::5]", "fd00::5", true,
	     true},
	    {"http://localhost.example.com", NULL, "http",
	     "localhost.example.com", "localhost.example.com", false, true},
	    {"http://1.example.com", NULL, "http", "1.example.com",
	     "1.example.com", false, true},
	    /* refused */
	    {"ftp://h", NULL, NULL, NULL, NULL, false, false},
	    {"http://h/path", NULL, NULL, NULL, NULL, false, false},
	    {NULL, "bad region", NULL, NULL, NULL, false, false},
	    {NULL, "a/b", NULL, NULL, NULL, false, false},
	};

	for (size_t i = 0; i < N_ELEMS(cases); i++) {
		const struct parse_case *c = &cases[i];
		struct s3_endpoint ep;
		int rc;

		print_message("endpoint '%s' region '%s'\n",
			      c->endpoint ? c->endpoint : "(null)",
			      c->region ? c->region : "(null)");
		memset(&ep, 0xa5, sizeof(ep));
		rc = s3_endpoint_parse(c->endpoint, c->region, &ep);
		if (!c->scheme) {
			assert_int_equal(rc, EINVAL);
			assert_null(ep.scheme);
			assert_null(ep.authority);
			assert_null(ep.host);
			continue;
		}
		assert_int_equal(rc, 0);
		assert_string_equal(ep.scheme, c->scheme);
		assert_string_equal(ep.authority, c->authority);
		assert_string_equal(ep.host, c->host);
		assert_int_equal(ep.ip_or_localhost, c->ip_or_localhost);
		assert_int_equal(ep.plain_http, c->plain_http);
		s3_endpoint_free(&ep);
		assert_null(ep.host);
	}
}

/* ======================================================================
 * s3_request_build: URLs
 * ====================================================================== */

struct url_case {
	const char *endpoint;
	bool force;
	enum s3_request_kind kind;
	const char *bucket;
	const char *key;   /* GET, HEAD: key; LIST: prefix */
	const char *token; /* LIST */
	unsigned max_keys;
	const char *url;
	const char *host;
};

static void test_request_urls(void **state)
{
	static const struct url_case cases[] = {
	    /* GET: virtual-hosted for a DNS name */
	    {DNS_EP, false, S3_REQUEST_GET, "bkt", "train/part-0.rec", NULL, 0,
	     "https://bkt.s3.example.com/train/part-0.rec",
	     "bkt.s3.example.com"},
	    {"https://s3.example.com:8443/", false, S3_REQUEST_GET, "bkt", "k",
	     NULL, 0, "https://bkt.s3.example.com:8443/k",
	     "bkt.s3.example.com:8443"},
	    {NULL, false, S3_REQUEST_GET, "bkt", "k", NULL, 0,
	     "https://bkt.s3.us-east-1.amazonaws.com/k",
	     "bkt.s3.us-east-1.amazonaws.com"},
	    /* GET: path-style */
	    {DNS_EP, true, S3_REQUEST_GET, "bkt", "k", NULL, 0,
	     "https://s3.example.com/bkt/k", "s3.example.com"},
	    {DNS_EP, false, S3_REQUEST_GET, "my.bucket", "k", NULL, 0,
	     "https://s3.example.com/my.bucket/k", "s3.example.com"},
	    {IP_EP, false, S3_REQUEST_GET, "bkt", "k", NULL, 0,
	     "http://127.0.0.1:9000/bkt/k", "127.0.0.1:9000"},
	    {"http://localhost:9000", false, S3_REQUEST_GET, "bkt", "k", NULL,
	     0, "http://localhost:9000/bkt/k", "localhost:9000"},
	    {"http://[::1]:9000/", false, S3_REQUEST_GET, "bkt", "k", NULL, 0,
	     "http://[::1]:9000/bkt/k", "[::1]:9000"},
	    /* GET: key encoding ('/' kept, everything else but A-Za-z0-9-._~
	     * escaped, UTF-8 bytes one by one) */
	    {DNS_EP, false, S3_REQUEST_GET, "bkt", "a b/c+d~e_f.g-h", NULL, 0,
	     "https://bkt.s3.example.com/a%20b/c%2Bd~e_f.g-h",
	     "bkt.s3.example.com"},
	    {DNS_EP, false, S3_REQUEST_GET, "bkt", "caf\xc3\xa9/\xe2\x82\xac",
	     NULL, 0, "https://bkt.s3.example.com/caf%C3%A9/%E2%82%AC",
	     "bkt.s3.example.com"},
	    {IP_EP, false, S3_REQUEST_GET, "bkt", "a//b?c=d#e%f&g", NULL, 0,
	     "http://127.0.0.1:9000/bkt/a//b%3Fc%3Dd%23e%25f%26g",
	     "127.0.0.1:9000"},
	    {IP_EP, false, S3_REQUEST_GET, "bkt", "/lead", NULL, 0,
	     "http://127.0.0.1:9000/bkt//lead", "127.0.0.1:9000"},
	    /* LIST: canonical order, every value encoded, '/' too */
	    {DNS_EP, false, S3_REQUEST_LIST, "bkt", "train/a b", NULL, 1000,
	     "https://bkt.s3.example.com/?encoding-type=url&list-type=2&"
	     "max-keys=1000&prefix=train%2Fa%20b",
	     "bkt.s3.example.com"},
	    {DNS_EP, false, S3_REQUEST_LIST, "bkt", "", "1/ab+c=d e", 7,
	     "https://bkt.s3.example.com/?continuation-token=1%2Fab%2Bc%3Dd%"
	     "20e&encoding-type=url&list-type=2&max-keys=7&prefix=",
	     "bkt.s3.example.com"},
	    {IP_EP, false, S3_REQUEST_LIST, "bkt", "p~\xc3\xa9", "tok", 1,
	     "http://127.0.0.1:9000/bkt?continuation-token=tok&"
	     "encoding-type=url&list-type=2&max-keys=1&prefix=p~%C3%A9",
	     "127.0.0.1:9000"},
	    {DNS_EP, true, S3_REQUEST_LIST, "bkt", "x", NULL, 1000,
	     "https://s3.example.com/bkt?encoding-type=url&list-type=2&"
	     "max-keys=1000&prefix=x",
	     "s3.example.com"},
	    /* HEAD: the object's URL, as for GET; no query */
	    {DNS_EP, false, S3_REQUEST_HEAD, "bkt", "a b/c+d", NULL, 1000,
	     "https://bkt.s3.example.com/a%20b/c%2Bd", "bkt.s3.example.com"},
	    {IP_EP, false, S3_REQUEST_HEAD, "bkt", "m/manifest", "tok", 7,
	     "http://127.0.0.1:9000/bkt/m/manifest", "127.0.0.1:9000"},
	    {DNS_EP, false, S3_REQUEST_HEAD, "my.bucket", "k", NULL, 0,
	     "https://s3.example.com/my.bucket/k", "s3.example.com"},
	};

	for (size_t i = 0; i < N_ELEMS(cases); i++) {
		const struct url_case *c = &cases[i];
		struct s3_request_spec spec = {
		    .kind = c->kind,
		    .bucket = c->bucket,
		    .key = c->key,
		    .token = c->token,
		    .max_keys = c->max_keys,
		};
		struct sent s;

		print_message("case %zu: %s\n", i, c->url);
		build(c->endpoint, c->force, NULL, &spec, T_20130524, &s);
		assert_string_equal(s.url, c->url);
		assert_hdr(&s, "Host", c->host);
		/* unsigned: nothing of SigV4 */
		assert_hdr(&s, "Authorization", NULL);
		assert_hdr(&s, "x-amz-date", NULL);
		assert_hdr(&s, "x-amz-content-sha256", NULL);
		assert_hdr(&s, "x-amz-security-token", NULL);
		/* curl's "Expect: 100-continue" suppressed */
		assert_hdr(&s, "Expect", "");
	}
}

/* The query a LIST sends is already in canonical order, whatever is set. */
static void test_list_query_sorted(void **state)
{
	static const char *const tokens[] = {NULL, "", "zz", "AA", "~"};

	for (size_t i = 0; i < N_ELEMS(tokens); i++) {
		struct s3_request_spec spec = {.kind = S3_REQUEST_LIST,
					       .bucket = "bkt",
					       .key = "p",
					       .token = tokens[i],
					       .max_keys = 5};
		char sorted[2048];
		struct sent s;

		build(DNS_EP, false, NULL, &spec, T_20130524, &s);
		canonical_query(s.url, sorted, sizeof(sorted));
		assert_string_equal(strchr(s.url, '?') + 1, sorted);
	}
}

/* ======================================================================
 * s3_request_build: Range, If-Match and the rest of the header list
 * ====================================================================== */

struct hdr_case {
	enum s3_request_kind kind;
	const char *etag;
	bool ranged;
	uint64_t first, last;
	const char *range;    /* Range value wanted, NULL: none */
	const char *if_match; /* If-Match value wanted, NULL: none */
};

static void test_request_range_etag(void **state)
{
	static const struct hdr_case cases[] = {
	    {S3_REQUEST_GET, NULL, false, 0, 0, NULL, NULL},
	    {S3_REQUEST_GET, NULL, false, 5, 9, NULL, NULL},
	    {S3_REQUEST_GET, NULL, true, 0, 0, "bytes=0-0", NULL},
	    {S3_REQUEST_GET, NULL, true, 1048576, 2097151,
	     "bytes=1048576-2097151", NULL},
	    {S3_REQUEST_GET, NULL, true, UINT64_MAX - 1, UINT64_MAX,
	     "bytes=18446744073709551614-18446744073709551615", NULL},
	    {S3_REQUEST_GET, "\"9b2cf535f27731c974343645a3985328\"", false, 0,
	     0, NULL, "\"9b2cf535f27731c974343645a3985328\""},
	    {S3_REQUEST_GET, "\"abc-3\"", true, 10, 19, "bytes=10-19",
	     "\"abc-3\""},
	    /* a LIST has neither */
	    {S3_REQUEST_LIST, "\"abc\"", true, 10, 19, NULL, NULL},
	    /* nor a HEAD */
	    {S3_REQUEST_HEAD, "\"abc\"", true, 10, 19, NULL, NULL},
	};

	for (size_t i = 0; i < N_ELEMS(cases); i++) {
		const struct hdr_case *c = &cases[i];
		struct s3_request_spec spec = {
		    .kind = c->kind,
		    .bucket = "bkt",
		    .key = "k",
		    .etag = c->etag,
		    .max_keys = 1000,
		    .ranged = c->ranged,
		    .first = c->first,
		    .last = c->last,
		};
		struct sent s;

		print_message("case %zu\n", i);
		build(DNS_EP, false, NULL, &spec, T_20130524, &s);
		assert_hdr(&s, "Range", c->range);
		assert_hdr(&s, "If-Match", c->if_match);
		/* Host, Expect and those two: nothing else unsigned */
		assert_int_equal(s.n, 2 + (c->range != NULL) +
					  (c->if_match != NULL));
	}
}

/* A signer without credentials signs nothing and keeps no key. */
static void test_request_unsigned_signer(void **state)
{
	struct s3_signer signer = {.creds = NULL, .region = "us-east-1"};
	struct s3_request_spec spec = {.bucket = "bkt", .key = "k"};
	struct sent s;

	build(DNS_EP, false, &signer, &spec, T_20130524, &s);
	assert_hdr(&s, "Authorization", NULL);
	assert_hdr(&s, "x-amz-date", NULL);
	assert_hdr(&s, "x-amz-content-sha256", NULL);
	assert_int_equal(s.n, 2);
	assert_string_equal(signer.key_date, "");
}

/* ======================================================================
 * s3_request_build: signed requests
 * ====================================================================== */

#define AK "AKIDTESTREQUEST"

static char secret1[] = "secret/one+KEY";
static char secret2[] = "secret/two+KEY";
static char token1[] = "FQoGZXIvYXdz/session+token==";
static char ak[] = AK;

/*
 * Checks the signed headers of s, sent with method: the date for now, the
 * payload hash of an
 * empty body, the token when there is one, and an Authorization whose
 * credential scope, signed header list and signature agree with what is
 * sent, as the oracle signs it with secret.
 */
static void check_signed(const struct sent *s, const char *method,
			 const char *token, time_t now, const char *region,
			 const char *secret)
{
	char amz_date[17], scope[128], want_names[128], empty_hash[65];
	char prefix[512], sig[65];
	const char *auth = hdr(s, "Authorization");
	struct tm tm;

	assert_non_null(gmtime_r(&now, &tm));
	strftime(amz_date, sizeof(amz_date), "%Y%m%dT%H%M%SZ", &tm);
	assert_hdr(s, "x-amz-date", amz_date);
	sha256_hex("", empty_hash);
	assert_hdr(s, "x-amz-content-sha256", empty_hash);
	assert_hdr(s, "x-amz-security-token", token);
	/* every x-amz-* header sent is signed, and only those and host */
	snprintf(want_names, sizeof(want_names),
		 "host;x-amz-content-sha256;x-amz-date%s",
		 token ? ";x-amz-security-token" : "");
	snprintf(scope, sizeof(scope), "%.8s/%s/s3/aws4_request", amz_date,
		 region);
	snprintf(prefix, sizeof(prefix),
		 "AWS4-HMAC-SHA256 Credential=" AK "/%s, SignedHeaders=%s, "
		 "Signature=",
		 scope, want_names);
	assert_non_null(auth);
	assert_int_equal(strncmp(auth, prefix, strlen(prefix)), 0);
	oracle_signature(s, method, want_names, secret, region, sig);
	assert_string_equal(auth + strlen(prefix), sig);
	/* no secret anywhere in what is sent */
	assert_null(strstr(s->url, secret));
	for (size_t i = 0; i < s->n; i++)
		assert_null(strstr(s->value[i], secret));
}

struct signed_case {
	const char *endpoint;
	enum s3_request_kind kind;
	const char *key;
	const char *token; /* LIST continuation */
	bool ranged;
	const char *etag;
	char *session_token;
	const char *region;
	time_t now;
};

static void test_request_signed(void **state)
{
	static const struct signed_case cases[] = {
	    {DNS_EP, S3_REQUEST_GET, "train/a b.rec", NULL, false, NULL, NULL,
	     "us-east-1", T_20130524},
	    {DNS_EP, S3_REQUEST_GET, "caf\xc3\xa9+~", NULL, true, "\"e\"",
	     token1, "eu-west-1", T_20130524 + 13 * 3600 + 5 * 60 + 7},
	    {IP_EP, S3_REQUEST_GET, "k", NULL, true, NULL, token1, "us-east-1",
	     T_20130524 + 400 * DAY + 59},
	    {DNS_EP, S3_REQUEST_LIST, "train/", NULL, false, NULL, NULL,
	     "ap-south-1", T_20130524 + DAY - 1},
	    {IP_EP, S3_REQUEST_LIST, "p q", "1/x+y=", false, NULL, token1,
	     "us-east-1", T_20130524},
	    /* HEAD: signed for "HEAD", never with Range or If-Match */
	    {DNS_EP, S3_REQUEST_HEAD, "m/manifest", NULL, true, "\"e\"", NULL,
	     "us-east-1", T_20130524},
	    {IP_EP, S3_REQUEST_HEAD, "caf\xc3\xa9 x", NULL, false, NULL, token1,
	     "eu-west-1", T_20130524 + 400 * DAY + 59},
	};

	for (size_t i = 0; i < N_ELEMS(cases); i++) {
		const struct signed_case *c = &cases[i];
		struct s3_creds creds = {.access_key = ak,
					 .secret_key = secret1,
					 .session_token = c->session_token};
		struct s3_signer signer = {.creds = &creds,
					   .region = c->region};
		struct s3_request_spec spec = {
		    .kind = c->kind,
		    .bucket = "bkt",
		    .key = c->key,
		    .token = c->token,
		    .max_keys = 1000,
		    .etag = c->etag,
		    .ranged = c->ranged,
		    .first = 0,
		    .last = 99,
		};
		struct sent s;

		print_message("case %zu\n", i);
		build(c->endpoint, false, &signer, &spec, c->now, &s);
		check_signed(&s, c->kind == S3_REQUEST_HEAD ? "HEAD" : "GET",
			     c->session_token, c->now, c->region, secret1);
		/* Range and If-Match are sent as asked (GET only), signed or
		 * not */
		assert_hdr(&s, "Range",
			   c->ranged && c->kind == S3_REQUEST_GET ? "bytes=0-99"
								  : NULL);
		assert_hdr(&s, "If-Match",
			   c->kind == S3_REQUEST_GET ? c->etag : NULL);
	}
}

/* The signing key is derived once a day: a second request on the same day
 * signs with the key of the first secret even when the creds changed. */
static void test_signing_key_cached_per_day(void **state)
{
	struct s3_creds creds = {.access_key = ak, .secret_key = secret1};
	struct s3_signer signer = {.creds = &creds, .region = "us-east-1"};
	struct s3_request_spec spec = {.bucket = "bkt", .key = "k"};
	char sig2[65];
	struct sent s;

	build(DNS_EP, false, &signer, &spec, T_20130524, &s);
	check_signed(&s, "GET", NULL, T_20130524, "us-east-1", secret1);
	assert_string_equal(signer.key_date, "20130524");

	creds.secret_key = secret2;
	build(DNS_EP, false, &signer, &spec, T_20130524 + DAY - 1, &s);
	check_signed(&s, "GET", NULL, T_20130524 + DAY - 1, "us-east-1",
		     secret1);
	oracle_signature(&s, "GET", "host;x-amz-content-sha256;x-amz-date",
			 secret2, "us-east-1", sig2);
	assert_null(strstr(hdr(&s, "Authorization"), sig2));

	/* the next day: derived again, from the secret now in creds */
	build(DNS_EP, false, &signer, &spec, T_20130524 + DAY, &s);
	check_signed(&s, "GET", NULL, T_20130524 + DAY, "us-east-1", secret2);
	assert_string_equal(signer.key_date, "20130525");
}

/* A HEAD is the GET of the same object with another method: the same URL
 * and headers (no Range, no If-Match), signed for "HEAD", so its
 * signature is not the GET's. */
static void test_request_head(void **state)
{
	struct s3_creds creds = {.access_key = ak, .secret_key = secret1};
	struct s3_signer signer = {.creds = &creds, .region = "us-east-1"};
	struct s3_request_spec spec = {
	    .kind = S3_REQUEST_HEAD,
	    .bucket = "bkt",
	    .key = "train/manifest",
	    .etag = "\"e\"",
	    .ranged = true,
	    .last = 9,
	};
	struct sent head, get;
	char get_sig[65];

	assert_string_equal(s3_request_method(S3_REQUEST_HEAD), "HEAD");
	assert_string_equal(s3_request_method(S3_REQUEST_GET), "GET");
	assert_string_equal(s3_request_method(S3_REQUEST_LIST), "GET");

	build(DNS_EP, false, &signer, &spec, T_20130524, &head);
	assert_string_equal(head.url,
			    "https://bkt.s3.example.com/train/manifest");
	check_signed(&head, "HEAD", NULL, T_20130524, "us-east-1", secret1);
	assert_hdr(&head, "Range", NULL);
	assert_hdr(&head, "If-Match", NULL);
	/* Host, the two x-amz-*, Authorization, Expect */
	assert_int_equal(head.n, 5);

	spec.kind = S3_REQUEST_GET;
	spec.ranged = false;
	spec.etag = NULL;
	build(DNS_EP, false, &signer, &spec, T_20130524, &get);
	assert_string_equal(get.url, head.url);
	check_signed(&get, "GET", NULL, T_20130524, "us-east-1", secret1);
	oracle_signature(&head, "GET", "host;x-amz-content-sha256;x-amz-date",
			 secret1, "us-east-1", get_sig);
	assert_null(strstr(hdr(&head, "Authorization"), get_sig));
}

/* ======================================================================
 * s3_error_from_attempt
 * ====================================================================== */

#define URL "http://127.0.0.1:9000/bkt/train/part-0.rec"

#define XML_ERROR(code, msg)                                                   \
	"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>" code       \
	"</Code><Message>" msg "</Message><RequestId>4442587FB7D0A2F9"         \
	"</RequestId></Error>"

#define SLOWDOWN  XML_ERROR("SlowDown", "Please reduce your request rate.")
#define NOSUCHKEY XML_ERROR("NoSuchKey", "The specified key does not exist.")
#define DENIED	  XML_ERROR("AccessDenied", "Access Denied")
#define HTML	  "<html><body>503 busy</body></html>"

/* what the engine saw, besides status, curl code and sizes */
#define MISMATCH 1u /* etag_mismatch: listed "\"a\"", got "\"b\"" */
#define OVERFLOW 2u
#define IGNORED	 4u  /* ignored_range */
#define LIST	 8u  /* a LIST, else a GET */
#define HEAD	 16u /* a HEAD, else a GET */
#define NOLEN	 32u /* no_length: no Content-Length came */

/* message wanted: curl's own text for the curl code */
#define CURL_TEXT "\x01"

struct attempt_case {
	const char *name;
	/* the attempt */
	long status;
	int curl;
	size_t wanted, got;
	unsigned flags;
	const char *body, *curl_message;
	/* what it comes to */
	int err;
	bool retryable;
	long http_status;
	const char *code;
	const char *msg_has; /* NULL: anything */
};

static const struct attempt_case attempt_cases[] = {
    {"get all bytes", 200, 0, 10, 10, 0, NULL, NULL, 0, false, 0, "", NULL},
    {"ranged get all bytes", 206, 0, 4096, 4096, 0, NULL, NULL, 0, false, 0, "",
     NULL},
    {"list 200", 200, 0, 0, 0, LIST, NULL, NULL, 0, false, 0, "", NULL},
    {"all bytes, then the connection broke", 206, CURLE_RECV_ERROR, 10, 10, 0,
     NULL, "reset", 0, false, 0, "", NULL},
    {"short body", 206, 0, 10, 4, 0, NULL, NULL, EIO, true, 206, "", "4 of 10"},
    {"short body, connection reset", 200, CURLE_RECV_ERROR, 10, 4, 0, NULL,
     "Recv failure: Connection reset by peer", EIO, true, 0, "",
     "Recv failure: Connection reset by peer"},
    {"list body broke off", 200, CURLE_PARTIAL_FILE, 0, 0, LIST, NULL, "", EIO,
     true, 0, "", CURL_TEXT},
    {"etag mismatch", 200, 0, 10, 10, MISMATCH, NULL, NULL, ESTALE, false, 200,
     "PreconditionFailed", "\"b\""},
    {"412 from the server", 412, 0, 10, 0, 0, NULL, NULL, ESTALE, false, 412,
     "", NULL},
    {"overflow", 206, 0, 10, 10, OVERFLOW, NULL, NULL, EIO, false, 206, "",
     NULL},
    {"ignored range", 200, 0, 10, 10, IGNORED, NULL, NULL, EIO, false, 200, "",
     NULL},
    {"503 SlowDown", 503, 0, 10, 0, 0, SLOWDOWN, NULL, EIO, true, 503,
     "SlowDown", "Please reduce your request rate."},
    {"503 html", 503, 0, 0, 0, LIST, HTML, NULL, EIO, true, 503, "", NULL},
    {"500 no body", 500, 0, 0, 0, LIST, NULL, NULL, EIO, true, 500, "", NULL},
    {"404 NoSuchKey", 404, 0, 10, 0, 0, NOSUCHKEY, NULL, ENOENT, false, 404,
     "NoSuchKey", "The specified key does not exist."},
    {"404 no body", 404, 0, 0, 0, LIST, NULL, NULL, ENOENT, false, 404, "",
     NULL},
    {"403 no body", 403, 0, 10, 0, 0, NULL, NULL, EACCES, false, 403, "", NULL},
    {"403 AccessDenied", 403, 0, 0, 0, LIST, DENIED, NULL, EACCES, false, 403,
     "AccessDenied", "Access Denied"},
    {"connection refused", 0, CURLE_COULDNT_CONNECT, 10, 0, 0, NULL,
     "Failed to connect to 127.0.0.1 port 9000: Connection refused",
     ECONNREFUSED, true, 0, "",
     "Failed to connect to 127.0.0.1 port 9000: Connection refused"},
    {"timeout, empty curl message", 0, CURLE_OPERATION_TIMEDOUT, 0, 0, LIST,
     NULL, "", ETIMEDOUT, true, 0, "", CURL_TEXT},
    {"timeout, no curl message", 0, CURLE_OPERATION_TIMEDOUT, 10, 0, 0, NULL,
     NULL, ETIMEDOUT, true, 0, "", CURL_TEXT},
    {"timeout after a 503 status line", 503, CURLE_OPERATION_TIMEDOUT, 10, 0, 0,
     SLOWDOWN, NULL, ETIMEDOUT, true, 0, "", CURL_TEXT},
    {"get without Content-Length", 200, 0, 10, 10, NOLEN, NULL, NULL, 0, false,
     0, "", NULL},
    /* a HEAD: no body, so no body checks; its size is a header */
    {"head 200", 200, 0, 0, 0, HEAD, NULL, NULL, 0, false, 0, "", NULL},
    {"head 200 without Content-Length", 200, 0, 0, 0, HEAD | NOLEN, NULL, NULL,
     EPROTO, false, 200, "", "Content-Length"},
    {"head 200, then the connection broke", 200, CURLE_RECV_ERROR, 0, 0, HEAD,
     NULL, "reset", EIO, true, 0, "", "reset"},
    {"head 404", 404, 0, 0, 0, HEAD | NOLEN, NULL, NULL, ENOENT, false, 404, "",
     NULL},
    {"head 403", 403, 0, 0, 0, HEAD, NULL, NULL, EACCES, false, 403, "", NULL},
    {"head 412", 412, 0, 0, 0, HEAD, NULL, NULL, ESTALE, false, 412, "", NULL},
    {"head 503", 503, 0, 0, 0, HEAD, NULL, NULL, EIO, true, 503, "", NULL},
};

static void check_attempt(const struct attempt_case *c, const char *url)
{
	struct s3_attempt a = {
	    .http_status = c->status,
	    .curl_code = c->curl,
	    .kind = c->flags & LIST   ? S3_REQUEST_LIST
		    : c->flags & HEAD ? S3_REQUEST_HEAD
				      : S3_REQUEST_GET,
	    .wanted = c->wanted,
	    .got = c->got,
	    .etag_mismatch = c->flags & MISMATCH,
	    .etag = c->flags & MISMATCH ? "\"a\"" : NULL,
	    .resp_etag = c->flags & MISMATCH ? "\"b\"" : NULL,
	    .overflow = c->flags & OVERFLOW,
	    .ignored_range = c->flags & IGNORED,
	    .no_length = c->flags & NOLEN,
	    .body = c->body,
	    .body_len = c->body ? strlen(c->body) : 0,
	    .curl_message = c->curl_message,
	    .url = url,
	};
	struct store_error err;
	bool retryable = !c->retryable;

	print_message("attempt: %s\n", c->name);
	memset(&err, 0xa5, sizeof(err));
	s3_error_from_attempt(&a, &err, &retryable);
	assert_int_equal(err.err, c->err);
	assert_int_equal(retryable, c->retryable);
	if (!c->err)
		return;
	assert_int_equal(err.http_status, c->http_status);
	assert_int_equal(err.fault == STORE_FAULT_NONE, c->curl == CURLE_OK);
	if (c->curl)
		assert_string_equal(err.fault_what,
				    curl_easy_strerror((CURLcode)c->curl));
	assert_string_equal(err.code, c->code);
	if (c->msg_has && strcmp(c->msg_has, CURL_TEXT) == 0)
		assert_string_equal(err.message,
				    curl_easy_strerror((CURLcode)c->curl));
	else if (c->msg_has)
		assert_non_null(strstr(err.message, c->msg_has));
	/* copied whole, or the first sizeof(err.url) - 1 bytes */
	if (!url)
		url = "";
	assert_true(memchr(err.url, '\0', sizeof(err.url)) != NULL);
	assert_int_equal(strlen(err.url), strlen(url) < sizeof(err.url)
					      ? strlen(url)
					      : sizeof(err.url) - 1);
	assert_memory_equal(err.url, url, strlen(err.url));
}

static void test_attempts(void **state)
{
	for (size_t i = 0; i < N_ELEMS(attempt_cases); i++)
		check_attempt(&attempt_cases[i], URL);
}

/* The URL is copied, cut to fit, or "" when there is none. */
static void test_attempt_url(void **state)
{
	static char long_url[3000];
	const struct attempt_case *refused = NULL;

	for (size_t i = 0; i < N_ELEMS(attempt_cases); i++)
		if (attempt_cases[i].err == ECONNREFUSED)
			refused = &attempt_cases[i];
	assert_non_null(refused);
	memset(long_url, 'u', sizeof(long_url) - 1);
	memcpy(long_url, "http://", 7);
	check_attempt(refused, long_url);
	check_attempt(refused, NULL);
}

/* ======================================================================
 * store_get_check
 * ====================================================================== */

static void done_cb(void *arg, const struct store_error *err)
{
}

static char mem[64];

/* what a GET check case leaves out */
#define NO_DEST	   1u /* buffer 1's dest */
#define NO_BUFFERS 2u
#define NO_BUCKET  4u
#define NO_KEY	   8u
#define NO_DONE	   16u

struct get_check_case {
	const char *name;
	unsigned nbuffers;
	size_t len0, len1, len2; /* the first three lengths, the rest 1 */
	unsigned missing;
	uint64_t offset;
	int rc;
	size_t total;
};

static void test_get_check(void **state)
{
	static const struct get_check_case cases[] = {
	    {"one", 1, 10, 0, 0, 0, 0, 0, 10},
	    {"three", 3, 10, 20, 30, 0, 7, 0, 60},
	    {"the most", STORE_GET_BUFFERS_MAX, 1, 1, 1, 0, 0, 0,
	     STORE_GET_BUFFERS_MAX},
	    {"too many", STORE_GET_BUFFERS_MAX + 1, 1, 1, 1, 0, 0, EINVAL, 0},
	    {"none", 0, 1, 1, 1, 0, 0, EINVAL, 0},
	    {"NULL buffers", 1, 10, 0, 0, NO_BUFFERS, 0, EINVAL, 0},
	    {"zero-length buffer", 3, 10, 0, 5, 0, 0, EINVAL, 0},
	    {"NULL dest", 3, 10, 10, 5, NO_DEST, 0, EINVAL, 0},
	    {"NULL bucket", 1, 10, 0, 0, NO_BUCKET, 0, EINVAL, 0},
	    {"NULL key", 1, 10, 0, 0, NO_KEY, 0, EINVAL, 0},
	    {"NULL done", 1, 10, 0, 0, NO_DONE, 0, EINVAL, 0},
	    {"ends at 2^64 - 1", 2, 6, 4, 0, 0, UINT64_MAX - 10, 0, 10},
	    {"offset + length wraps", 2, 6, 5, 0, 0, UINT64_MAX - 10, EINVAL,
	     0},
	    {"offset 2^64 - 1", 1, 2, 0, 0, 0, UINT64_MAX, EINVAL, 0},
	    {"lengths wrap", 2, SIZE_MAX / 2 + 1, SIZE_MAX / 2 + 1, 0, 0, 0,
	     EINVAL, 0},
	};
	struct store_buffer bufs[STORE_GET_BUFFERS_MAX + 1];

	for (size_t i = 0; i < N_ELEMS(cases); i++) {
		const struct get_check_case *c = &cases[i];
		struct store_get req = {
		    .bucket = c->missing & NO_BUCKET ? NULL : "bkt",
		    .key = c->missing & NO_KEY ? NULL : "k",
		    .offset = c->offset,
		    .buffers = c->missing & NO_BUFFERS ? NULL : bufs,
		    .nbuffers = c->nbuffers,
		    .done = c->missing & NO_DONE ? NULL : done_cb,
		};
		size_t total = 12345;

		print_message("get check: %s\n", c->name);
		for (size_t b = 0; b < N_ELEMS(bufs); b++) {
			bufs[b].dest = mem;
			bufs[b].len = 1;
		}
		bufs[0].len = c->len0;
		bufs[1].len = c->len1;
		bufs[2].len = c->len2;
		if (c->missing & NO_DEST)
			bufs[1].dest = NULL;
		assert_int_equal(store_get_check(&req, &total), c->rc);
		if (!c->rc)
			assert_int_equal(total, c->total);
		assert_int_equal(store_get_check(&req, NULL), c->rc);
	}
}

/* ======================================================================
 * s3_client_conf
 * ====================================================================== */

static char temp_dir[64];
static char ca_file[128];

/* An environment naming only files that do not exist, no metadata. */
static int conf_setup(void **state)
{
	char path[128];

	aws_env_clear();
	snprintf(path, sizeof(path), "%s/credentials", temp_dir);
	setenv("AWS_SHARED_CREDENTIALS_FILE", path, 1);
	snprintf(path, sizeof(path), "%s/config", temp_dir);
	setenv("AWS_CONFIG_FILE", path, 1);
	return 0;
}

static int group_setup(void **state)
{
	FILE *f;

	snprintf(temp_dir, sizeof(temp_dir), "/tmp/test_request.XXXXXX");
	if (!mkdtemp(temp_dir))
		return -1;
	snprintf(ca_file, sizeof(ca_file), "%s/ca.pem", temp_dir);
	f = fopen(ca_file, "w");
	if (!f)
		return -1;
	fputs("not a certificate, but readable\n", f);
	fclose(f);
	return conf_setup(state);
}

static int group_teardown(void **state)
{
	unlink(ca_file);
	rmdir(temp_dir);
	return 0;
}

static void test_conf_init(void **state)
{
	struct s3_client_conf conf;

	memset(&conf, 0xa5, sizeof(conf));
	s3_client_conf_init(&conf);
	assert_null(conf.endpoint);
	assert_null(conf.region);
	assert_null(conf.profile);
	assert_null(conf.ca_bundle);
	assert_null(conf.creds.access_key);
	assert_null(conf.creds.secret_key);
	assert_null(conf.creds.session_token);
	assert_null(conf.creds.source);
	assert_false(conf.force_path_style);
	assert_false(conf.no_sign);
	assert_true(conf.tls_verify);
	assert_int_equal(conf.max_connections, S3_DEFAULT_MAX_CONNECTIONS);
	assert_in_range(conf.max_connections, 1, 256);
	assert_int_equal(conf.max_retries, S3_DEFAULT_MAX_RETRIES);
	assert_int_equal(conf.stall_seconds, S3_DEFAULT_STALL_SECONDS);
	assert_true(conf.retry_base_ms > 0);
	assert_true(conf.retry_max_ms >= conf.retry_base_ms);
	assert_true(conf.connect_timeout_seconds > 0);
	/* free: everything NULL, twice is fine */
	conf.endpoint = strdup("http://127.0.0.1:9000");
	conf.region = strdup("us-east-1");
	s3_client_conf_free(&conf);
	assert_null(conf.endpoint);
	assert_null(conf.region);
	s3_client_conf_free(&conf);
}

#define CA_TEMP "@ca" /* the readable temporary file */

struct conf_case {
	const char *name;
	const char *env_ak, *env_sk, *env_token; /* NULL: unset */
	const char *env_region, *env_ca;
	const char *region, *ca_bundle; /* set in the conf */
	bool no_sign;
	int rc;
	const char *want_region; /* on success */
	const char *want_ca;	 /* on success; NULL: none */
	bool want_creds;
	const char *err_has; /* in err; "" on success */
};

static const char *ca_path(const char *s)
{
	return s && strcmp(s, CA_TEMP) == 0 ? ca_file : s;
}

static void setenv_or_unset(const char *name, const char *value)
{
	if (value)
		setenv(name, value, 1);
	else
		unsetenv(name);
}

#define REGION63                                                               \
	"abcdefghijklmnopqrstuvwxyz0123456789-abcdefghijklmnopqrstuvwxyz"

static void check_conf(const struct conf_case *c)
{
	struct s3_client_conf conf;
	char err[512] = "left over";
	int rc;

	print_message("conf: %s\n", c->name);
	conf_setup(NULL);
	setenv_or_unset("AWS_ACCESS_KEY_ID", c->env_ak);
	setenv_or_unset("AWS_SECRET_ACCESS_KEY", c->env_sk);
	setenv_or_unset("AWS_SESSION_TOKEN", c->env_token);
	setenv_or_unset("AWS_REGION", c->env_region);
	setenv_or_unset("AWS_CA_BUNDLE", ca_path(c->env_ca));
	s3_client_conf_init(&conf);
	conf.no_sign = c->no_sign;
	if (c->region)
		conf.region = strdup(c->region);
	if (c->ca_bundle)
		conf.ca_bundle = strdup(ca_path(c->ca_bundle));

	rc = s3_client_conf_resolve(&conf, err, sizeof(err));
	assert_int_equal(rc, c->rc);
	if (c->err_has[0])
		assert_non_null(strstr(err, c->err_has));
	else
		assert_string_equal(err, "");
	if (!rc) {
		assert_string_equal(conf.region, c->want_region);
		if (c->want_ca)
			assert_string_equal(conf.ca_bundle,
					    ca_path(c->want_ca));
		else
			assert_null(conf.ca_bundle);
	}
	if (!rc && c->want_creds) {
		assert_string_equal(conf.creds.access_key, c->env_ak);
		assert_string_equal(conf.creds.secret_key, c->env_sk);
		if (c->env_token)
			assert_string_equal(conf.creds.session_token,
					    c->env_token);
		else
			assert_null(conf.creds.session_token);
	} else if (!rc) {
		assert_null(conf.creds.access_key);
	}
	s3_client_conf_free(&conf);
	assert_null(conf.creds.secret_key);
}

static void test_conf_resolve(void **state)
{
	static const struct conf_case cases[] = {
	    {"env creds, AWS_REGION", "AKIDENV", "secret-env", NULL,
	     "eu-central-1", NULL, NULL, NULL, false, 0, "eu-central-1", NULL,
	     true, ""},
	    {"env creds with token", "AKIDENV", "secret-env", "tok", NULL, NULL,
	     NULL, NULL, false, 0, "us-east-1", NULL, true, ""},
	    {"conf region over AWS_REGION", "AKIDENV", "secret-env", NULL,
	     "eu-central-1", NULL, "ap-south-1", NULL, false, 0, "ap-south-1",
	     NULL, true, ""},
	    {"invalid AWS_REGION", "AKIDENV", "secret-env", NULL, "EU_West 1",
	     NULL, NULL, NULL, false, EINVAL, NULL, NULL, false, "EU_West 1"},
	    {"invalid conf region", "AKIDENV", "secret-env", NULL, NULL, NULL,
	     "us-east-1.evil.com/x", NULL, false, EINVAL, NULL, NULL, false,
	     "invalid region"},
	    {"AWS_REGION of 63 letters", "AKIDENV", "secret-env", NULL,
	     REGION63, NULL, NULL, NULL, false, 0, REGION63, NULL, true, ""},
	    {"no creds", NULL, NULL, NULL, "us-west-2", NULL, NULL, NULL, false,
	     ENOENT, NULL, NULL, false, "no credentials"},
	    {"no creds, no_sign", NULL, NULL, NULL, "us-west-2", NULL, NULL,
	     NULL, true, 0, "us-west-2", NULL, false, ""},
	    {"env creds, no_sign", "AKIDENV", "secret-env", NULL, NULL, NULL,
	     NULL, NULL, true, 0, "us-east-1", NULL, false, ""},
	    {"unreadable --ca-bundle", "AKIDENV", "secret-env", NULL, NULL,
	     NULL, NULL, "/nonexistent/ca.pem", false, EINVAL, NULL, NULL,
	     false, "/nonexistent/ca.pem"},
	    {"readable --ca-bundle over AWS_CA_BUNDLE", NULL, NULL, NULL, NULL,
	     "/nonexistent/env-ca.pem", NULL, CA_TEMP, true, 0, "us-east-1",
	     CA_TEMP, false, ""},
	    {"stale AWS_CA_BUNDLE ignored", "AKIDENV", "secret-env", NULL, NULL,
	     "/nonexistent/env-ca.pem", NULL, NULL, false, 0, "us-east-1", NULL,
	     true, ""},
	    {"readable AWS_CA_BUNDLE used", NULL, NULL, NULL, NULL, CA_TEMP,
	     NULL, NULL, true, 0, "us-east-1", CA_TEMP, false, ""},
	};

	for (size_t i = 0; i < N_ELEMS(cases); i++)
		check_conf(&cases[i]);
}

/* A region longer than 63 characters is not a region (s3_region_valid),
 * however it is cut on the way. */
static void test_conf_region_too_long(void **state)
{
	static const struct conf_case c = {"AWS_REGION of 70 letters",
					   "AKIDENV",
					   "secret-env",
					   NULL,
					   REGION63 "1234567",
					   NULL,
					   NULL,
					   NULL,
					   false,
					   EINVAL,
					   NULL,
					   NULL,
					   false,
					   "invalid region"};

	check_conf(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_oracle_signing_key),
	    cmocka_unit_test(test_oracle_aws_examples),
	    cmocka_unit_test(test_endpoint_valid),
	    cmocka_unit_test(test_endpoint_parse),
	    cmocka_unit_test(test_request_urls),
	    cmocka_unit_test(test_list_query_sorted),
	    cmocka_unit_test(test_request_range_etag),
	    cmocka_unit_test(test_request_unsigned_signer),
	    cmocka_unit_test(test_request_signed),
	    cmocka_unit_test(test_signing_key_cached_per_day),
	    cmocka_unit_test(test_request_head),
	    cmocka_unit_test(test_attempts),
	    cmocka_unit_test(test_attempt_url),
	    cmocka_unit_test(test_get_check),
	    cmocka_unit_test(test_conf_init),
	    cmocka_unit_test(test_conf_resolve),
	    cmocka_unit_test(test_conf_region_too_long),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
