/*
 * aws_env: the environment the credential tests (test_creds,
 * test_providers, test_request) start from: none of the AWS_* variables
 * s3pipe reads and no proxy, HOME at a directory that does not exist, and
 * never the real instance metadata service nor STS.  Header-only.
 */
#ifndef S3PIPE_TESTS_UNIT_AWS_ENV_H
#define S3PIPE_TESTS_UNIT_AWS_ENV_H

#include <stddef.h>
#include <stdlib.h>

static const char *const aws_env_vars[] = {
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_SECURITY_TOKEN",
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_CA_BUNDLE",
    "AWS_SHARED_CREDENTIALS_FILE",
    "AWS_CONFIG_FILE",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_ROLE_ARN",
    "AWS_ROLE_SESSION_NAME",
    "AWS_ENDPOINT_URL",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
    "AWS_EC2_METADATA_SERVICE_ENDPOINT",
    "AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE",
    "http_proxy",
    "HTTP_PROXY",
    "https_proxy",
    "HTTPS_PROXY",
    "all_proxy",
    "ALL_PROXY",
};

static inline void aws_env_clear(void)
{
	for (size_t i = 0; i < sizeof(aws_env_vars) / sizeof(aws_env_vars[0]);
	     i++)
		unsetenv(aws_env_vars[i]);
	setenv("HOME", "/nonexistent/s3pipe-test-home", 1);
	/* never the real instance metadata service, nor STS */
	setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
	setenv("AWS_ENDPOINT_URL_STS", "http://127.0.0.1:1", 1);
}

#endif
