/*
 * libFuzzer harness for the shared credentials / config file parser: the
 * input becomes both files (through AWS_SHARED_CREDENTIALS_FILE and
 * AWS_CONFIG_FILE) and the credential chain and region resolution run
 * over them with the default and a named profile.
 *
 * The chain must not reach out: instance metadata is disabled, STS is a
 * closed loopback port (a web identity profile gets "connection refused"),
 * the container variables are unset, and every "credential_process" key in
 * the input is renamed before the file is written, so no fuzzed command
 * line is ever run.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "s3/s3.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* "credential_process" (any case) becomes "Xredential_process". */
static void defuse(char *text, size_t size)
{
	static const char key[] = "credential_process";
	size_t n = sizeof(key) - 1;

	for (size_t i = 0; i + n <= size; i++)
		if (strncasecmp(text + i, key, n) == 0)
			text[i] = 'X';
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char path[64];
	struct s3_creds creds;
	char err[512];
	char region[64];
	char *text;
	FILE *f;

	if (!path[0]) {
		snprintf(path, sizeof(path), "/tmp/s3pipe-fuzz-creds-%d",
			 (int)getpid());
		unsetenv("AWS_ACCESS_KEY_ID");
		unsetenv("AWS_SECRET_ACCESS_KEY");
		unsetenv("AWS_SESSION_TOKEN");
		unsetenv("AWS_PROFILE");
		unsetenv("AWS_REGION");
		unsetenv("AWS_DEFAULT_REGION");
		unsetenv("AWS_WEB_IDENTITY_TOKEN_FILE");
		unsetenv("AWS_ROLE_ARN");
		unsetenv("AWS_ENDPOINT_URL");
		unsetenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI");
		unsetenv("AWS_CONTAINER_CREDENTIALS_FULL_URI");
		unsetenv("AWS_EC2_METADATA_SERVICE_ENDPOINT");
		setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
		setenv("AWS_ENDPOINT_URL_STS", "http://127.0.0.1:1", 1);
		setenv("AWS_SHARED_CREDENTIALS_FILE", path, 1);
		setenv("AWS_CONFIG_FILE", path, 1);
	}
	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	defuse(text, size);
	f = fopen(path, "wb");
	if (f) {
		fwrite(text, 1, size, f);
		fclose(f);
	}
	free(text);
	if (!f)
		return 0;
	for (int i = 0; i < 2; i++) {
		const char *profile = i ? "other" : NULL;

		memset(&creds, 0, sizeof(creds));
		if (s3_creds_resolve(
			&(struct s3_creds_query){.profile = profile}, &creds,
			err, sizeof(err)) == 0 &&
		    (!creds.access_key || !creds.secret_key))
			abort(); /* success must give both keys */
		s3_creds_clear(&creds);
		s3_region_resolve(NULL, profile, region, sizeof(region));
		if (!region[0] || strlen(region) >= sizeof(region))
			abort();
	}
	return 0;
}
