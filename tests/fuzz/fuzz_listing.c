/*
 * libFuzzer harness for the saved listing (cache/catalog.c): every input,
 * its last 4 bytes replaced by the crc32 of the rest (else nearly every
 * input would stop at the checksum), is written to a file and loaded as
 * a listing of bucket "b", prefix "p/".  A catalog that loads is walked
 * (keys, sizes, times, ETags) so that bad pointers show up under ASan.
 */
#include "config.h"

#include "cache/catalog.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char path[64];
	struct cache_catalog *cat = NULL;
	char key[CACHE_KEY_MAX + 1], etag[CACHE_ETAG_MAX + 1];
	volatile size_t sink = 0;
	unsigned char *buf;
	const char *why;
	int64_t at;
	uLong crc;
	FILE *f;

	if (size < 4 || size > (1u << 20))
		return 0;
	if (!path[0])
		snprintf(path, sizeof(path), "/tmp/fuzz_listing.%d",
			 (int)getpid());
	buf = malloc(size);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	crc = crc32(0, buf, (uInt)(size - 4));
	for (int i = 0; i < 4; i++)
		buf[size - 4 + i] = (unsigned char)(crc >> (8 * i));
	f = fopen(path, "wb");
	if (f) {
		fwrite(buf, 1, size, f);
		fclose(f);
		if (cache_catalog_load(path, "b", "p/", 1000, UINT64_MAX / 2,
				       &cat, &at, &why) == 0) {
			for (size_t p = 0; p < cache_catalog_count(cat); p++) {
				uint32_t e = cache_catalog_at(cat, p);

				sink +=
				    cache_catalog_key(cat, e, key, sizeof(key));
				sink += cache_catalog_size(cat, e);
				if (cache_catalog_mtime(cat, e) < 0 ||
				    cache_catalog_mtime(cat, e) > UINT32_MAX)
					__builtin_trap(); /* 32 bits kept */
				sink += (size_t)cache_catalog_mtime(cat, e);
				if (cache_catalog_etag(cat, e, etag,
						       sizeof(etag)))
					sink += strlen(etag);
			}
		} else if (cat) {
			__builtin_trap(); /* nothing comes back on an error */
		} else {
			sink += strlen(why);
		}
		cache_catalog_destroy(cat);
		unlink(path);
	}
	free(buf);
	(void)sink;
	return 0;
}
