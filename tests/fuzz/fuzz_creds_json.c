/*
 * libFuzzer harness for s3/creds_json.c: the first byte picks the document
 * (credential_process, container, instance metadata), the rest is parsed
 * as that document.  The rest is also given to the ISO 8601 time parser
 * as a string.  Success must give both keys, a token where one is
 * required, and values the signer can put into headers; an error must
 * leave the credentials empty and say something.
 */
#include "config.h"

#include "s3/internal.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum s3_creds_json_kind kinds[] = {
	    S3_CREDS_JSON_PROCESS, S3_CREDS_JSON_CONTAINER, S3_CREDS_JSON_IMDS};
	struct s3_creds c = {.provider = -1};
	enum s3_creds_json_kind kind;
	char err[256] = "";
	char *text;
	time_t t = 0;
	int rc;

	if (size == 0)
		return 0;
	kind = kinds[data[0] % 3];
	rc = s3_creds_json_parse((const char *)data + 1, size - 1, kind, "fuzz",
				 NULL, &c, err, sizeof(err));
	if (rc == 0) {
		if (!c.access_key || !c.secret_key || !c.access_key[0] ||
		    !c.secret_key[0])
			abort();
		if (kind != S3_CREDS_JSON_PROCESS &&
		    (!c.session_token || !c.expiration))
			abort();
		if (!s3_creds_value_ok(c.access_key, true) ||
		    (c.session_token &&
		     !s3_creds_value_ok(c.session_token, true)))
			abort();
	} else if (c.access_key || c.secret_key || c.session_token || !err[0]) {
		abort();
	}
	s3_creds_clear(&c);

	text = malloc(size);
	if (!text)
		return 0;
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	if (s3_creds_parse_time(text, &t) == 0 && t <= 0)
		abort();
	free(text);
	return 0;
}
