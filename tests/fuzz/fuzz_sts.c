/*
 * libFuzzer harness for the STS parsers in s3/xml.c: every input is fed to
 * the AssumeRoleWithWebIdentity response parser and to the ErrorResponse
 * parser.  Credentials that come out must be complete and usable in
 * headers; a failure must leave them empty and say why.
 */
#include "config.h"

#include "s3/internal.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct s3_creds c = {.provider = -1};
	const char *why = NULL;
	char code[64];
	char message[256];
	volatile size_t sink = 0;

	if (s3_xml_parse_sts_credentials((const char *)data, size, &c, &why) ==
	    0) {
		if (why || !c.access_key || !c.secret_key || !c.session_token ||
		    c.expiration <= 0 ||
		    !s3_creds_value_ok(c.access_key, true) ||
		    !s3_creds_value_ok(c.session_token, true))
			abort();
	} else if (!why || c.access_key || c.secret_key || c.session_token) {
		abort();
	}
	s3_creds_clear(&c);

	if (s3_xml_parse_sts_error((const char *)data, size, code, sizeof(code),
				   message, sizeof(message)) == 0)
		sink += strlen(code) + strlen(message);
	else if (code[0] || message[0])
		abort(); /* both empty on error */
	(void)sink;
	return 0;
}
