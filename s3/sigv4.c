/*
 * sigv4: AWS Signature Version 4 for header-signed requests (OpenSSL 3).
 *
 * The caller hands over an already canonical request (encoded path, sorted
 * and encoded query, lowercase sorted headers with trimmed values, payload
 * hash).  The canonical request is streamed into SHA-256 piece by piece, so
 * its length is unbounded and never copied; everything else (scope, string
 * to sign, keys) lives in small stack buffers with explicit bounds.  Key
 * material is wiped before returning.  Nothing here logs: the secret key,
 * the derived keys and the finished Authorization value are all secrets or
 * derived from them.
 */
#include "config.h"

#include "s3/internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#define SIGV4_ALGORITHM	 "AWS4-HMAC-SHA256"
#define SIGV4_TERMINATOR "aws4_request"
#define SIGV4_DATE_LEN	 8 /* "YYYYMMDD", the first 8 bytes of amz_date */
#define SIGV4_SCOPE_MAX	 256
#define SIGV4_SECRET_MAX 256
#define SIGV4_STS_MAX	 512

static void hex_encode(const unsigned char *in, size_t len, char *out)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < len; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 0x0f];
	}
	out[2 * len] = '\0';
}

void s3_sha256_hex(const void *data, size_t len, char out[65])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;

	if (!EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL) ||
	    mdlen != 32) {
		out[0] = '\0';
		return;
	}
	hex_encode(md, 32, out);
}

/* One HMAC-SHA256 step; out receives 32 bytes.  0 or ENOMEM. */
static int hmac_sha256(const void *key, size_t keylen, const void *data,
		       size_t len, unsigned char out[32])
{
	unsigned int outlen = 0;

	if (!HMAC(EVP_sha256(), key, (int)keylen, data, len, out, &outlen) ||
	    outlen != 32)
		return ENOMEM;
	return 0;
}

static int digest_str(EVP_MD_CTX *md, const char *s)
{
	return EVP_DigestUpdate(md, s, strlen(s)) ? 0 : ENOMEM;
}

/* SHA-256 of the canonical request, as lowercase hex. */
static int canonical_request_hash(const struct s3_sigv4_request *req,
				  char hex[65])
{
	EVP_MD_CTX *md = NULL;
	unsigned char digest[EVP_MAX_MD_SIZE];
	unsigned int dlen = 0;
	size_t i;
	int rc = ENOMEM;

	md = EVP_MD_CTX_new();
	if (!md)
		goto fail;
	if (!EVP_DigestInit_ex(md, EVP_sha256(), NULL))
		goto fail;
	if (digest_str(md, req->method) || digest_str(md, "\n") ||
	    digest_str(md, req->canonical_uri) || digest_str(md, "\n") ||
	    digest_str(md, req->canonical_query) || digest_str(md, "\n"))
		goto fail;
	for (i = 0; i < req->nheaders; i++) {
		if (digest_str(md, req->headers[i].name) ||
		    digest_str(md, ":") ||
		    digest_str(md, req->headers[i].value) ||
		    digest_str(md, "\n"))
			goto fail;
	}
	if (digest_str(md, "\n"))
		goto fail;
	for (i = 0; i < req->nheaders; i++) {
		if ((i > 0 && digest_str(md, ";")) ||
		    digest_str(md, req->headers[i].name))
			goto fail;
	}
	if (digest_str(md, "\n") || digest_str(md, req->payload_hash))
		goto fail;
	if (!EVP_DigestFinal_ex(md, digest, &dlen) || dlen != 32)
		goto fail;
	hex_encode(digest, 32, hex);
	rc = 0;
fail:
	EVP_MD_CTX_free(md);
	return rc;
}

/* Bounded appender into a caller's buffer; sticks at ENOSPC. */
struct outbuf {
	char *p;
	size_t cap;
	size_t len;
	int err;
};

static void out_append(struct outbuf *o, const char *s)
{
	size_t n = strlen(s);

	if (o->err)
		return;
	if (n >= o->cap - o->len) {
		o->err = ENOSPC;
		return;
	}
	memcpy(o->p + o->len, s, n);
	o->len += n;
	o->p[o->len] = '\0';
}

static bool request_complete(const struct s3_sigv4_request *req)
{
	size_t i;

	if (!req->method || !req->canonical_uri || !req->canonical_query ||
	    !req->payload_hash || !req->amz_date || !req->region ||
	    !req->service || !req->access_key || !req->secret_key)
		return false;
	if (req->nheaders && !req->headers)
		return false;
	for (i = 0; i < req->nheaders; i++) {
		if (!req->headers[i].name || !req->headers[i].value)
			return false;
	}
	return strlen(req->amz_date) >= SIGV4_DATE_LEN;
}

int s3_sigv4_signing_key(const char *secret_key, const char *date,
			 const char *region, const char *service,
			 unsigned char out[32])
{
	unsigned char key[4 + SIGV4_SECRET_MAX];
	unsigned char k1[32];
	size_t secret_len = strlen(secret_key);
	int rc;

	if (secret_len > SIGV4_SECRET_MAX || strlen(date) != SIGV4_DATE_LEN)
		return EINVAL;
	/* kSigning = HMAC(HMAC(HMAC(HMAC("AWS4" + secret, date), region),
	 * service), "aws4_request") */
	memcpy(key, "AWS4", 4);
	memcpy(key + 4, secret_key, secret_len);
	rc = hmac_sha256(key, 4 + secret_len, date, SIGV4_DATE_LEN, k1);
	if (!rc)
		rc = hmac_sha256(k1, sizeof(k1), region, strlen(region), out);
	if (!rc)
		rc = hmac_sha256(out, 32, service, strlen(service), k1);
	if (!rc)
		rc = hmac_sha256(k1, sizeof(k1), SIGV4_TERMINATOR,
				 strlen(SIGV4_TERMINATOR), out);
	OPENSSL_cleanse(key, sizeof(key));
	OPENSSL_cleanse(k1, sizeof(k1));
	if (rc)
		OPENSSL_cleanse(out, 32);
	return rc;
}

int s3_sigv4_authorization(const struct s3_sigv4_request *req, char *out,
			   size_t outlen, char *sig)
{
	char date[SIGV4_DATE_LEN + 1];
	char scope[SIGV4_SCOPE_MAX];
	char sts[SIGV4_STS_MAX];
	char creq_hash[65];
	char signature[65];
	unsigned char k2[32];
	unsigned char mac[32];
	struct outbuf o = {out, outlen, 0, 0};
	size_t i;
	int n;
	int rc;

	if (outlen == 0)
		return ENOSPC;
	out[0] = '\0';
	if (sig)
		sig[0] = '\0';
	if (!request_complete(req))
		return EINVAL;
	if (strlen(req->secret_key) > SIGV4_SECRET_MAX)
		return EINVAL;

	memcpy(date, req->amz_date, SIGV4_DATE_LEN);
	date[SIGV4_DATE_LEN] = '\0';
	n = snprintf(scope, sizeof(scope), "%s/%s/%s/%s", date, req->region,
		     req->service, SIGV4_TERMINATOR);
	if (n < 0 || (size_t)n >= sizeof(scope))
		return EINVAL;

	rc = canonical_request_hash(req, creq_hash);
	if (rc)
		return rc;
	n = snprintf(sts, sizeof(sts), "%s\n%s\n%s\n%s", SIGV4_ALGORITHM,
		     req->amz_date, scope, creq_hash);
	if (n < 0 || (size_t)n >= sizeof(sts))
		return EINVAL;

	if (req->signing_key) {
		rc = hmac_sha256(req->signing_key, 32, sts, (size_t)n, mac);
	} else {
		rc = s3_sigv4_signing_key(req->secret_key, date, req->region,
					  req->service, k2);
		if (!rc)
			rc = hmac_sha256(k2, sizeof(k2), sts, (size_t)n, mac);
		OPENSSL_cleanse(k2, sizeof(k2));
	}
	if (rc)
		return rc;
	hex_encode(mac, sizeof(mac), signature);
	OPENSSL_cleanse(mac, sizeof(mac));

	out_append(&o, SIGV4_ALGORITHM " Credential=");
	out_append(&o, req->access_key);
	out_append(&o, "/");
	out_append(&o, scope);
	out_append(&o, ", SignedHeaders=");
	for (i = 0; i < req->nheaders; i++) {
		if (i > 0)
			out_append(&o, ";");
		out_append(&o, req->headers[i].name);
	}
	out_append(&o, ", Signature=");
	out_append(&o, signature);
	if (o.err) {
		out[0] = '\0';
		return o.err;
	}
	if (sig)
		memcpy(sig, signature, sizeof(signature));
	return 0;
}
