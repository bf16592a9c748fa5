/*
 * creds_imds: the EC2 instance's role credentials from the instance
 * metadata service, IMDSv2 only (a session token first; IMDSv1 is never
 * tried).
 *
 *   PUT /latest/api/token               X-aws-ec2-metadata-token-ttl-seconds
 *   GET /latest/meta-data/iam/security-credentials/       the role's name
 *   GET /latest/meta-data/iam/security-credentials/ROLE   the JSON document
 *
 * Endpoint: AWS_EC2_METADATA_SERVICE_ENDPOINT, else
 * AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE "IPv6" -> http://[fd00:ec2::254],
 * else http://169.254.169.254.  AWS_EC2_METADATA_DISABLED=true (any case)
 * skips it.  It is the chain's last provider and runs on every host that
 * has no other credentials, so it is quick to give up: one second to
 * connect, one second per request, two attempts.  A service that does not
 * answer the token request (nothing there, or no IMDSv2) is "nothing
 * found" (ENOENT), with a note for the chain's final message, and so is an
 * instance without a role (404 on the role list).  Anything wrong after
 * that is an error.  The token and the document are wiped after use.
 */
#include "config.h"

#include "s3/internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define IMDS_ENDPOINT_V4 "http://169.254.169.254"
#define IMDS_ENDPOINT_V6 "http://[fd00:ec2::254]"
#define IMDS_TIMEOUT_MS	 1000
#define IMDS_ATTEMPTS	 2
#define IMDS_TOKEN_MAX	 1024
#define IMDS_ROLE_MAX	 128 /* IAM role names are at most 64 */
#define IMDS_URL_MAX	 1024
#define IMDS_CREDS_PATH	 "/latest/meta-data/iam/security-credentials/"

/* The endpoint without a trailing '/' into out.  0 or EINVAL. */
static int imds_endpoint(char *out, size_t outlen, char *err, size_t errlen)
{
	const char *ep = getenv("AWS_EC2_METADATA_SERVICE_ENDPOINT");
	const char *mode = getenv("AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE");
	size_t n;

	if (ep && *ep) {
		n = strlen(ep);
		while (n > 0 && ep[n - 1] == '/')
			n--;
		if (n == 0 || n >= outlen)
			return util_fail(err, errlen, EINVAL,
					 "AWS_EC2_METADATA_SERVICE_ENDPOINT is "
					 "not a usable URL");
		memcpy(out, ep, n);
		out[n] = '\0';
		return 0;
	}
	if (!mode || !*mode || strcasecmp(mode, "IPv4") == 0) {
		snprintf(out, outlen, "%s", IMDS_ENDPOINT_V4);
		return 0;
	}
	if (strcasecmp(mode, "IPv6") == 0) {
		snprintf(out, outlen, "%s", IMDS_ENDPOINT_V6);
		return 0;
	}
	return util_fail(err, errlen, EINVAL,
			 "AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE must be IPv4 "
			 "or IPv6, not '%.32s'",
			 mode);
}

/*
 * One request with up to IMDS_ATTEMPTS attempts (a transport failure or a
 * 5xx is tried again).  0 with *status and *resp, or the last errno.
 */
static int imds_request(const struct s3_creds_query *q, const char *method,
			const char *url, const char *header, long *status,
			struct util_buf *resp, char *err, size_t errlen)
{
	const char *headers[2] = {header, NULL};
	struct s3_http_request req = {
	    .method = method,
	    .url = url,
	    .headers = headers,
	    .connect_timeout_ms = IMDS_TIMEOUT_MS,
	    .timeout_ms = IMDS_TIMEOUT_MS,
	    .max_body = S3_CREDS_BODY_MAX,
	    .ca_bundle = q ? q->ca_bundle : NULL,
	    .tls_verify = q ? q->tls_verify : true,
	};

	return s3_http_request_retry(&req, IMDS_ATTEMPTS, status, resp, err,
				     errlen);
}

/* The first line of the role list, checked, into role. */
static bool imds_role(const struct util_buf *list, char *role, size_t rolelen)
{
	size_t n = strcspn(list->data, "\r\n");

	while (n > 0 && (list->data[n - 1] == ' ' || list->data[n - 1] == '\t'))
		n--;
	if (n == 0 || n >= rolelen)
		return false;
	/* IAM's role name characters: nothing that would change the URL */
	for (size_t i = 0; i < n; i++) {
		char c = list->data[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || strchr("+=,.@_-", c)))
			return false;
	}
	memcpy(role, list->data, n);
	role[n] = '\0';
	return true;
}

int s3_creds_imds(const struct s3_creds_query *q, struct s3_creds *out,
		  char *note, size_t notelen, char *err, size_t errlen)
{
	const char *disabled = getenv("AWS_EC2_METADATA_DISABLED");
	char base[IMDS_URL_MAX];
	char url[IMDS_URL_MAX + IMDS_ROLE_MAX + 64];
	char shown[IMDS_URL_MAX];
	char why[256];
	char role[IMDS_ROLE_MAX];
	char what[IMDS_ROLE_MAX + 64];
	struct util_buf header = {0};
	struct util_buf resp = {0};
	long status = 0;
	int rc;

	if (notelen)
		note[0] = '\0';
	if (disabled && strcasecmp(disabled, "true") == 0)
		return util_fail(note, notelen, ENOENT,
				 "disabled by AWS_EC2_METADATA_DISABLED");
	rc = imds_endpoint(base, sizeof(base), err, errlen);
	if (rc)
		return rc;
	s3_http_url_shown(base, shown, sizeof(shown));
	if (!shown[0])
		return util_fail(err, errlen, EINVAL,
				 "AWS_EC2_METADATA_SERVICE_ENDPOINT is not a "
				 "usable URL");

	/* the session token: no answer here means no instance metadata */
	snprintf(url, sizeof(url), "%s/latest/api/token", base);
	rc = imds_request(q, "PUT", url,
			  "X-aws-ec2-metadata-token-ttl-seconds: 21600",
			  &status, &resp, why, sizeof(why));
	if (rc == ENOMEM || rc == EFBIG || rc == EINVAL) {
		util_fail(err, errlen, rc, "instance metadata: %s", why);
		goto fail;
	}
	if (rc) {
		rc = util_fail(note, notelen, ENOENT, "%s", why);
		goto fail;
	}
	if (status != 200) {
		rc = util_fail(note, notelen, ENOENT,
			       "%s answered the IMDSv2 token request with HTTP "
			       "%ld",
			       shown, status);
		goto fail;
	}
	if (resp.len == 0 || resp.len > IMDS_TOKEN_MAX ||
	    !s3_creds_value_ok(resp.data, true)) {
		rc = util_fail(err, errlen, EPROTO,
			       "instance metadata at %s gave a malformed token",
			       shown);
		goto fail;
	}
	rc = s3_secret_buf_init(&header, resp.len + 64);
	if (!rc)
		rc = util_buf_append_str(&header, "X-aws-ec2-metadata-token: ");
	if (!rc)
		rc = util_buf_append(&header, resp.data, resp.len);
	if (rc) {
		rc = util_fail(err, errlen, ENOMEM, "out of memory");
		goto fail;
	}

	/* the role */
	snprintf(url, sizeof(url), "%s%s", base, IMDS_CREDS_PATH);
	rc = imds_request(q, "GET", url, header.data, &status, &resp, err,
			  errlen);
	if (rc)
		goto fail;
	if (status == 404) {
		rc = util_fail(note, notelen, ENOENT,
			       "no IAM role is attached to this instance (%s)",
			       shown);
		goto fail;
	}
	if (status != 200) {
		rc = util_fail(err, errlen,
			       status == 401 || status == 403 ? EACCES : EIO,
			       "instance metadata at %s answered HTTP %ld for "
			       "the role name",
			       shown, status);
		goto fail;
	}
	if (!imds_role(&resp, role, sizeof(role))) {
		rc = util_fail(err, errlen, EPROTO,
			       "instance metadata at %s gave a malformed role "
			       "name",
			       shown);
		goto fail;
	}

	/* its credentials */
	snprintf(url, sizeof(url), "%s%s%s", base, IMDS_CREDS_PATH, role);
	rc = imds_request(q, "GET", url, header.data, &status, &resp, err,
			  errlen);
	if (rc)
		goto fail;
	if (status != 200) {
		rc = util_fail(err, errlen,
			       status == 401 || status == 403 ? EACCES : EIO,
			       "instance metadata at %s answered HTTP %ld for "
			       "the credentials of role %s",
			       shown, status, role);
		goto fail;
	}
	snprintf(what, sizeof(what), "instance metadata (role %s)", role);
	rc = s3_creds_json_parse(resp.data, resp.len, S3_CREDS_JSON_IMDS, what,
				 what, out, err, errlen);
fail:
	s3_secret_buf_free(&header);
	s3_secret_buf_free(&resp);
	return rc;
}
