/*
 * libFuzzer harness for the shared credentials / config file parser: the
 * input becomes both files (through AWS_SHARED_CREDENTIALS_FILE and
 * AWS_CONFIG_FILE) and the credential chain and region resolution run
 * over them with the default and a named profile.
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "s3/s3.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char path[64];
	struct s3_creds creds;
	char err[512];
	char region[64];
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
		setenv("AWS_SHARED_CREDENTIALS_FILE", path, 1);
		setenv("AWS_CONFIG_FILE", path, 1);
	}
	f = fopen(path, "wb");
	if (!f)
		return 0;
	fwrite(data, 1, size, f);
	fclose(f);
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
