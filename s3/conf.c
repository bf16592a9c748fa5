/*
 * s3 client settings: the defaults, written once, and the step that
 * completes them from the environment (region, CA bundle, credentials)
 * before the client starts.  The region and the CA bundle come first:
 * credential providers that ask STS or a metadata endpoint use them.
 * Only the credential chain may touch the network (s3/creds.c).
 */
#include "config.h"

#include "s3/internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/util.h"

#define DEFAULT_RETRY_BASE_MS	200
#define DEFAULT_RETRY_MAX_MS	5000
#define DEFAULT_CONNECT_TIMEOUT 10 /* seconds */
#define REGION_MAX		256 /* longer than any valid one: no silent cut */

void s3_client_conf_init(struct s3_client_conf *conf)
{
	s3_creds_json_init(); /* before jansson parses anything */
	memset(conf, 0, sizeof(*conf));
	conf->tls_verify = true;
	conf->max_connections = S3_DEFAULT_MAX_CONNECTIONS;
	conf->max_retries = S3_DEFAULT_MAX_RETRIES;
	conf->retry_base_ms = DEFAULT_RETRY_BASE_MS;
	conf->retry_max_ms = DEFAULT_RETRY_MAX_MS;
	conf->stall_seconds = S3_DEFAULT_STALL_SECONDS;
	conf->connect_timeout_seconds = DEFAULT_CONNECT_TIMEOUT;
}

void s3_client_conf_free(struct s3_client_conf *conf)
{
	free(conf->endpoint);
	free(conf->region);
	free(conf->profile);
	free(conf->ca_bundle);
	conf->endpoint = conf->region = conf->profile = conf->ca_bundle = NULL;
	s3_creds_clear(&conf->creds);
}

/* Replaces *field with a copy of value. */
static int set_string(char **field, const char *value)
{
	char *copy = strdup(value);

	if (!copy)
		return ENOMEM;
	free(*field);
	*field = copy;
	return 0;
}

static int resolve_region(struct s3_client_conf *conf, char *err, size_t errlen)
{
	char region[REGION_MAX];

	s3_region_resolve(conf->region, conf->profile, region, sizeof(region));
	if (!s3_region_valid(region)) {
		snprintf(err, errlen,
			 "invalid region '%s': use lowercase letters, digits "
			 "and '-' (e.g. us-east-1)",
			 region);
		return EINVAL;
	}
	return set_string(&conf->region, region);
}

/* A CA bundle the user named must be readable; one left in the
 * environment that is not is ignored (a stale variable). */
static int resolve_ca_bundle(struct s3_client_conf *conf, char *err,
			     size_t errlen)
{
	const char *env = getenv("AWS_CA_BUNDLE");

	if (conf->ca_bundle) {
		if (access(conf->ca_bundle, R_OK) != 0) {
			snprintf(err, errlen, "cannot read the CA bundle '%s'",
				 conf->ca_bundle);
			return EINVAL;
		}
		return 0;
	}
	if (env && *env && access(env, R_OK) == 0)
		return set_string(&conf->ca_bundle, env);
	return 0;
}

int s3_client_conf_resolve(struct s3_client_conf *conf, char *err,
			   size_t errlen)
{
	struct s3_creds_query q;
	int rc;

	if (errlen)
		err[0] = '\0';
	/* region and CA bundle first: credential providers use them */
	rc = resolve_region(conf, err, errlen);
	if (!rc)
		rc = resolve_ca_bundle(conf, err, errlen);
	if (rc == ENOMEM)
		return util_fail(err, errlen, ENOMEM, "out of memory");
	if (rc || conf->no_sign)
		return rc;
	s3_creds_clear(&conf->creds);
	q = (struct s3_creds_query){
	    .profile = conf->profile,
	    .region = conf->region,
	    .ca_bundle = conf->ca_bundle,
	    /* --no-verify-ssl is for the S3 endpoint only, as in the AWS
	     * CLI: tokens and credentials never cross unverified TLS */
	    .tls_verify = true,
	};
	return s3_creds_resolve(&q, &conf->creds, err, errlen);
}
