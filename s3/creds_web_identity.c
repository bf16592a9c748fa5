/*
 * creds_web_identity: credentials for a role, in exchange for an OIDC token
 * in a file (Kubernetes service accounts, EKS IRSA, GitHub Actions), from
 * STS AssumeRoleWithWebIdentity.
 *
 * The token file is read at every call: the platform rotates it.  The
 * request is an unsigned form POST to AWS_ENDPOINT_URL_STS, else
 * AWS_ENDPOINT_URL, else https://sts.REGION.amazonaws.com (.com.cn in the
 * China regions; us-east-1 without a region), with the token, the role ARN
 * and the session name (AWS_ROLE_SESSION_NAME / role_session_name, else
 * "s3pipe-UNIXSECONDS") percent-encoded in the body, never in the URL.
 * A transport failure, a 5xx or STS's Throttling / IDPCommunicationError
 * is tried once more; an ErrorResponse becomes "sts
 * AssumeRoleWithWebIdentity failed: CODE: MESSAGE".
 *
 * The token travels in a secret buffer (the body is built in one with
 * room enough, so it is never moved) and both are wiped after the call.
 */
#include "config.h"

#include "s3/internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define STS_CONNECT_TIMEOUT_MS 3000
#define STS_TIMEOUT_MS	       10000
#define STS_ATTEMPTS	       2
#define STS_ENDPOINT_MAX       512

/* The STS endpoint for q: "http(s)://host[:port]" into out.  0 or EINVAL. */
static int sts_endpoint(const struct s3_creds_query *q, char *out,
			size_t outlen, char *err, size_t errlen)
{
	const char *names[] = {"AWS_ENDPOINT_URL_STS", "AWS_ENDPOINT_URL"};
	const char *region =
	    q && q->region && *q->region ? q->region : "us-east-1";
	size_t len;
	int n;

	for (size_t i = 0; i < 2; i++) {
		const char *v = getenv(names[i]);

		if (!v || !*v)
			continue;
		if (!s3_endpoint_valid(v, &len) || len >= outlen)
			return util_fail(err, errlen, EINVAL,
					 "%s '%.200s' is not an endpoint: use "
					 "http(s)://HOST[:PORT]",
					 names[i], v);
		memcpy(out, v, len);
		out[len] = '\0';
		return 0;
	}
	if (!s3_region_valid(region))
		return util_fail(err, errlen, EINVAL,
				 "invalid region '%s' for STS", region);
	n = snprintf(out, outlen, "https://sts.%s.amazonaws.com%s", region,
		     strncmp(region, "cn-", 3) == 0 ? ".cn" : "");
	if (n < 0 || (size_t)n >= outlen)
		return util_fail(err, errlen, EINVAL,
				 "invalid region '%s' for STS", region);
	return 0;
}

/* The form body into a secret buffer.  0 or ENOMEM / EFBIG. */
static int sts_body(const struct s3_web_identity *w, const char *session,
		    const struct util_buf *token, struct util_buf *body)
{
	size_t max =
	    3 * (strlen(w->role_arn) + strlen(session) + token->len) + 256;
	int rc = s3_secret_buf_init(body, max);

	if (!rc)
		rc =
		    util_buf_append_str(body, "Action=AssumeRoleWithWebIdentity"
					      "&Version=2011-06-15&RoleArn=");
	if (!rc)
		rc = s3_uri_encode(body, w->role_arn, false);
	if (!rc)
		rc = util_buf_append_str(body, "&RoleSessionName=");
	if (!rc)
		rc = s3_uri_encode(body, session, false);
	if (!rc)
		rc = util_buf_append_str(body, "&WebIdentityToken=");
	if (!rc)
		rc = s3_uri_encode(body, token->data, false);
	return rc;
}

/* Whether an answer is worth a second attempt. */
static bool sts_retryable(long status, const char *code)
{
	return status >= 500 || status == 429 ||
	       strcmp(code, "Throttling") == 0 ||
	       strcmp(code, "IDPCommunicationError") == 0;
}

/* The errno for an error answer: refusals are EACCES. */
static int sts_errno(long status, const char *code)
{
	if (status >= 500)
		return EIO;
	if (status == 401 || status == 403 ||
	    strcmp(code, "AccessDenied") == 0 ||
	    strcmp(code, "InvalidIdentityToken") == 0 ||
	    strcmp(code, "ExpiredTokenException") == 0)
		return EACCES;
	return EINVAL;
}

/* An error answer: its errno and message. */
static int sts_error(long status, const struct util_buf *resp,
		     const char *shown, char *err, size_t errlen)
{
	char code[128];
	char message[512];

	if (s3_xml_parse_sts_error(resp->data, resp->len, code, sizeof(code),
				   message, sizeof(message)) == 0 &&
	    code[0])
		return util_fail(err, errlen, sts_errno(status, code),
				 "sts AssumeRoleWithWebIdentity failed: %s%s%s",
				 code, message[0] ? ": " : "", message);
	return util_fail(
	    err, errlen, sts_errno(status, ""),
	    "sts AssumeRoleWithWebIdentity at %s answered HTTP %ld", shown,
	    status);
}

int s3_creds_web_identity(const struct s3_creds_query *q,
			  const struct s3_web_identity *w, struct s3_creds *out,
			  char *err, size_t errlen)
{
	static const char *const headers[] = {
	    "Content-Type: application/x-www-form-urlencoded; charset=utf-8",
	    "Accept: text/xml", NULL};
	char endpoint[STS_ENDPOINT_MAX];
	char url[STS_ENDPOINT_MAX + 2];
	struct timespec backoff = {.tv_nsec = 200000000};
	char session[64];
	char shown[STS_ENDPOINT_MAX];
	struct util_buf token = {0};
	struct util_buf body = {0};
	struct util_buf resp = {0};
	struct s3_creds c = {.provider = -1};
	struct util_buf source;
	const char *why = NULL;
	long status = 0;
	int rc;

	util_buf_init(&source, 0);
	rc = sts_endpoint(q, endpoint, sizeof(endpoint), err, errlen);
	if (rc)
		goto fail;
	snprintf(url, sizeof(url), "%s/", endpoint);
	s3_http_url_shown(url, shown, sizeof(shown));
	rc = s3_token_file_read(w->token_file, "web identity token file",
				&token, err, errlen);
	if (rc)
		goto fail;
	snprintf(session, sizeof(session), "s3pipe-%lld",
		 (long long)time(NULL));
	rc = sts_body(w, w->session_name ? w->session_name : session, &token,
		      &body);
	if (rc) {
		rc = util_fail(err, errlen, ENOMEM, "out of memory");
		goto fail;
	}
	for (int attempt = 1; attempt <= STS_ATTEMPTS; attempt++) {
		struct s3_http_request req = {
		    .method = "POST",
		    .url = url,
		    .headers = headers,
		    .body = body.data,
		    .body_len = body.len,
		    .connect_timeout_ms = STS_CONNECT_TIMEOUT_MS,
		    .timeout_ms = STS_TIMEOUT_MS,
		    .max_body = S3_CREDS_BODY_MAX,
		    .ca_bundle = q ? q->ca_bundle : NULL,
		    .tls_verify = q ? q->tls_verify : true,
		};
		char code[128] = "";

		s3_secret_buf_free(&resp);
		rc = s3_http_request(&req, &status, &resp, err, errlen);
		if (rc == ENOMEM || rc == EINVAL || rc == EFBIG)
			goto fail;
		if (rc) {
			if (attempt < STS_ATTEMPTS)
				continue;
			goto fail;
		}
		if (status == 200)
			break;
		s3_xml_parse_sts_error(resp.data, resp.len, code, sizeof(code),
				       NULL, 0);
		if (attempt < STS_ATTEMPTS && sts_retryable(status, code)) {
			nanosleep(&backoff, NULL);
			continue;
		}
		rc = sts_error(status, &resp, shown, err, errlen);
		goto fail;
	}
	rc = s3_xml_parse_sts_credentials(resp.data, resp.len, &c, &why);
	if (rc == ENOMEM) {
		rc = util_fail(err, errlen, ENOMEM, "out of memory");
		goto fail;
	}
	if (rc) {
		rc = util_fail(err, errlen, EPROTO,
			       "sts AssumeRoleWithWebIdentity at %s gave an "
			       "unusable answer: %s",
			       shown, why);
		goto fail;
	}
	rc = util_buf_printf(&source, "web identity (%s)", w->role_arn);
	if (!rc) {
		c.source = util_buf_take(&source);
		if (!c.source)
			rc = ENOMEM;
	}
	if (rc) {
		s3_creds_clear(&c);
		rc = util_fail(err, errlen, ENOMEM, "out of memory");
		goto fail;
	}
	*out = c;
	rc = 0;
fail:
	util_buf_free(&source);
	s3_secret_buf_free(&token);
	s3_secret_buf_free(&body);
	s3_secret_buf_free(&resp);
	return rc;
}
