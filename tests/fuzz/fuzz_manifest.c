/*
 * libFuzzer harness for channel/manifest.c: every input is fed to the
 * ManifestFile parser and to the AugmentedManifestFile parser (with a -ref
 * attribute and two literal ones).  The entries are walked and checked
 * against the header's promises (an item is an object or literal bytes,
 * keys fit S3's bound, errors and messages are one line naming where), and
 * must be empty after a failure.
 */
#include "config.h"

#include "channel/internal.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_line(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			__builtin_trap();
}

static size_t walk(const struct channel_entries *e, size_t nitems)
{
	size_t sink = 0;

	if (e->count > e->cap || (e->count && !e->entries))
		__builtin_trap();
	for (size_t i = 0; i < e->count; i++) {
		const struct channel_entry *en = &e->entries[i];

		if (nitems && en->nitems != nitems)
			__builtin_trap();
		if (en->error) {
			check_line(en->error);
			sink += strlen(en->error);
		}
		for (unsigned j = 0; j < en->nitems; j++) {
			const struct channel_item *it = &en->items[j];

			if (it->text) {
				if (it->bucket || it->key ||
				    it->text[it->text_len] != '\0')
					__builtin_trap();
				sink += it->text_len;
			} else {
				if (!it->bucket || !it->key ||
				    strlen(it->key) == 0 ||
				    strlen(it->key) > 1024)
					__builtin_trap();
				sink += strlen(it->bucket);
			}
		}
	}
	return sink;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char *const attrs[] = {"source-ref", "label", "meta"};
	struct channel_entries e;
	char err[256];
	volatile size_t sink = 0;
	int rc;

	memset(&e, 0, sizeof(e));
	rc = channel_manifest_parse((const char *)data, size, &e, err,
				    sizeof(err));
	if (rc == 0) {
		sink += walk(&e, 1);
	} else {
		if ((rc != EINVAL && rc != ENOMEM) || e.entries || e.count)
			__builtin_trap();
		check_line(err);
	}
	channel_entries_free(&e);

	rc = channel_augmented_parse((const char *)data, size, attrs, 3, &e,
				     err, sizeof(err));
	if (rc == 0) {
		sink += walk(&e, 3);
		for (size_t i = 0; i < e.count; i++)
			if (e.entries[i].line == 0)
				__builtin_trap();
	} else {
		if ((rc != EINVAL && rc != ENOMEM) || e.entries || e.count)
			__builtin_trap();
		check_line(err);
	}
	channel_entries_free(&e);
	(void)sink;
	return 0;
}
