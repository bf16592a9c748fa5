/*
 * libFuzzer harness for s3/xml.c: every input is fed to the ListObjectsV2
 * page parser and to the <Error> body parser.  A parsed page is walked (so
 * that bad pointers or unterminated strings show up under ASan) and cleared.
 */
#include "config.h"

#include "s3/internal.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct store_list_page page;
	char code[64];
	char message[256];
	volatile size_t sink = 0;
	size_t i;

	if (s3_xml_parse_list((const char *)data, size, &page) == 0) {
		for (i = 0; i < page.count; i++) {
			sink += strlen(page.objects[i].key);
			sink += strlen(page.objects[i].etag);
			sink += (size_t)page.objects[i].size;
			if (page.objects[i].mtime < 0)
				__builtin_trap(); /* 0 or a time after 1970 */
		}
		if (page.next_token)
			sink += strlen(page.next_token);
	} else if (page.objects || page.count || page.next_token) {
		__builtin_trap(); /* the page must be empty on error */
	}
	store_list_page_clear(&page);

	if (s3_xml_parse_error((const char *)data, size, code, sizeof(code),
			       message, sizeof(message)) == 0)
		sink += strlen(code) + strlen(message);
	else if (code[0] || message[0])
		__builtin_trap();
	(void)sink;
	return 0;
}
