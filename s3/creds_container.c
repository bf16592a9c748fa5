/*
 * creds_container: credentials from the container's credential endpoint
 * (ECS task roles, EKS Pod Identity, Greengrass, local emulators).
 *
 * AWS_CONTAINER_CREDENTIALS_RELATIVE_URI (it must start with '/') is asked
 * at http://169.254.170.2; else AWS_CONTAINER_CREDENTIALS_FULL_URI, which,
 * as in the AWS SDKs, must be https (any host) or http to a loopback
 * address (127.0.0.0/8, ::1, localhost) or to one of the container
 * endpoints 169.254.170.2, 169.254.170.23 and fd00:ec2::23.  The host is
 * judged by curl's URL parser, the one that then sends the request, and by
 * its literal form (no name is looked up but "localhost").
 *
 * The Authorization header comes from AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE
 * (read at every call: EKS rotates it) or AWS_CONTAINER_AUTHORIZATION_TOKEN;
 * a token with a line break or another control character is refused (it
 * would inject headers).  Two attempts, two seconds each.  The answer is
 * the JSON creds_json.c parses (AccessKeyId, SecretAccessKey, Token,
 * Expiration).  Once either URI is set, any failure is an error: the
 * chain does not fall through to instance metadata.
 */
#include "config.h"

#include "s3/internal.h"

#include <sys/socket.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#define CONTAINER_ENDPOINT   "http://169.254.170.2"
#define CONTAINER_TIMEOUT_MS 2000
#define CONTAINER_ATTEMPTS   2
#define CONTAINER_URL_MAX    2048

/* Whether host ("[v6]" or v4, as curl gives it) is a container endpoint. */
static bool container_host(const char *host)
{
	static const unsigned char v4a[4] = {169, 254, 170, 2};
	static const unsigned char v4b[4] = {169, 254, 170, 23};
	static const unsigned char v6[16] = {0xfd, 0x00, 0x0e,
					     0xc2, [15] = 0x23};
	unsigned char a[16];
	int family = s3_http_host_addr(host, a);

	if (family == AF_INET6)
		return memcmp(a, v6, sizeof(v6)) == 0;
	return family == AF_INET &&
	       (memcmp(a, v4a, 4) == 0 || memcmp(a, v4b, 4) == 0);
}

bool s3_container_uri_allowed(const char *url)
{
	CURLU *u = curl_url();
	char *scheme = NULL;
	char *host = NULL;
	bool ok = false;

	if (!u)
		return false;
	if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK)
		goto fail;
	if (strcmp(scheme, "https") == 0)
		ok = true;
	else if (strcmp(scheme, "http") == 0)
		ok = s3_http_host_loopback(host) || container_host(host);
fail:
	curl_free(scheme);
	curl_free(host);
	curl_url_cleanup(u);
	return ok;
}

static const char *getenv_nonempty(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

/* The Authorization header line into a secret buffer, or nothing when no
 * token is configured.  0, or EINVAL / ENOMEM with a message. */
static int container_auth(struct util_buf *header, char *err, size_t errlen)
{
	const char *file =
	    getenv_nonempty("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE");
	const char *env = getenv_nonempty("AWS_CONTAINER_AUTHORIZATION_TOKEN");
	struct util_buf token = {0};
	const char *value;
	int rc;

	memset(header, 0, sizeof(*header));
	if (file) {
		rc = s3_token_file_read(file,
					"container authorization token file",
					&token, err, errlen);
		if (rc)
			return rc;
		value = token.data;
	} else if (env) {
		if (!s3_creds_value_ok(env, false))
			return util_fail(err, errlen, EINVAL,
					 "AWS_CONTAINER_AUTHORIZATION_TOKEN "
					 "holds a line break or another "
					 "control character");
		value = env;
	} else {
		return 0;
	}
	rc = s3_secret_buf_init(header, strlen(value) + 32);
	if (!rc)
		rc = util_buf_append_str(header, "Authorization: ");
	if (!rc)
		rc = util_buf_append_str(header, value);
	s3_secret_buf_free(&token);
	if (rc) {
		s3_secret_buf_free(header);
		return util_fail(err, errlen, ENOMEM, "out of memory");
	}
	return 0;
}

int s3_creds_container(const struct s3_creds_query *q, struct s3_creds *out,
		       char *err, size_t errlen)
{
	const char *rel =
	    getenv_nonempty("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
	const char *full =
	    getenv_nonempty("AWS_CONTAINER_CREDENTIALS_FULL_URI");
	char url[CONTAINER_URL_MAX];
	char shown[CONTAINER_URL_MAX];
	char what[CONTAINER_URL_MAX + 64];
	const char *headers[2] = {NULL, NULL};
	struct s3_http_request req = {
	    .method = "GET",
	    .url = url,
	    .headers = headers,
	    .connect_timeout_ms = CONTAINER_TIMEOUT_MS,
	    .timeout_ms = CONTAINER_TIMEOUT_MS,
	    .max_body = S3_CREDS_BODY_MAX,
	    .ca_bundle = q ? q->ca_bundle : NULL,
	    .tls_verify = q ? q->tls_verify : true,
	};
	struct util_buf auth = {0};
	struct util_buf resp = {0};
	long status = 0;
	int n;
	int rc;

	if (!rel && !full)
		return ENOENT;
	if (rel) {
		if (rel[0] != '/')
			return util_fail(
			    err, errlen, EINVAL,
			    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI "
			    "must start with '/'");
		n = snprintf(url, sizeof(url), "%s%s", CONTAINER_ENDPOINT, rel);
	} else {
		n = snprintf(url, sizeof(url), "%s", full);
	}
	if (n < 0 || (size_t)n >= sizeof(url))
		return util_fail(err, errlen, EINVAL,
				 "the container credentials URI is too long");
	s3_http_url_shown(url, shown, sizeof(shown));
	if (!rel && !s3_container_uri_allowed(url))
		return util_fail(
		    err, errlen, EINVAL,
		    "AWS_CONTAINER_CREDENTIALS_FULL_URI '%s' is "
		    "not allowed: use https, or http to a loopback "
		    "address, 169.254.170.2, 169.254.170.23 or "
		    "[fd00:ec2::23]",
		    shown[0] ? shown : "(not a URL)");
	rc = container_auth(&auth, err, errlen);
	if (rc)
		return rc;
	headers[0] = auth.data;
	rc = s3_http_request_retry(&req, CONTAINER_ATTEMPTS, &status, &resp,
				   err, errlen);
	if (rc)
		goto fail;
	if (status != 200) {
		rc = util_fail(err, errlen,
			       status == 401 || status == 403 ? EACCES : EIO,
			       "container credentials at %s answered HTTP %ld",
			       shown, status);
		goto fail;
	}
	snprintf(what, sizeof(what), "container credentials from %s", shown);
	rc = s3_creds_json_parse(resp.data, resp.len, S3_CREDS_JSON_CONTAINER,
				 what, "container credentials", out, err,
				 errlen);
fail:
	s3_secret_buf_free(&auth);
	s3_secret_buf_free(&resp);
	return rc;
}
