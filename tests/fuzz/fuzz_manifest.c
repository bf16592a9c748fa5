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

static size_t walk(const struct channel_entries *e, unsigned nitems)
{
	size_t sink = 0;

	for (size_t i = 0; i < channel_entries_count(e); i++) {
		struct channel_entry en;
		struct channel_item it;
		unsigned seen = 0;

		channel_entries_get(e, i, &en);
		if (en.nitems != nitems)
			__builtin_trap();
		if (en.error) {
			check_line(en.error);
			sink += strlen(en.error);
		}
		for (; channel_entry_next(&en, &it); seen++) {
			char key[1025];
			int error;

			if (!it.object) {
				if (!it.text || it.text[it.text_len] != '\0')
					__builtin_trap();
				sink += it.text_len;
				continue;
			}
			channel_entries_key(e, it.ref, key, sizeof(key));
			if (it.text || strlen(key) == 0 ||
			    channel_entries_state(e, it.ref, &error) !=
				CHANNEL_OBJECT_UNKNOWN)
				__builtin_trap();
			sink += strlen(channel_entries_bucket(e, it.ref));
		}
		if (seen != nitems)
			__builtin_trap();
	}
	return sink;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char *const attrs[] = {"source-ref", "label", "meta"};
	struct channel_entries *e = channel_entries_create();
	char err[256];
	volatile size_t sink = 0;
	int rc;

	if (!e)
		return 0;
	rc = channel_manifest_parse((const char *)data, size, e, err,
				    sizeof(err));
	if (rc == 0) {
		sink += walk(e, 1);
	} else {
		if ((rc != EINVAL && rc != ENOMEM) || channel_entries_count(e))
			__builtin_trap();
		check_line(err);
	}
	channel_entries_clear(e);

	rc = channel_augmented_parse((const char *)data, size, attrs, 3, e, err,
				     sizeof(err));
	if (rc == 0) {
		sink += walk(e, 3);
		for (size_t i = 0; i < channel_entries_count(e); i++) {
			struct channel_entry en;

			channel_entries_get(e, i, &en);
			if (en.line == 0)
				__builtin_trap();
		}
	} else {
		if ((rc != EINVAL && rc != ENOMEM) || channel_entries_count(e))
			__builtin_trap();
		check_line(err);
	}
	channel_entries_destroy(e);
	(void)sink;
	return 0;
}
