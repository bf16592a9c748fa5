/*
 * fs resume files: their names and the table of slots their inodes are
 * (see resume.h).
 */
#include "config.h"

#include "fs/resume.h"

#include <string.h>

#include "util/util.h"

static const struct {
	const char *word;
	bool by_record;
} units[] = {{"@record=", true}, {"@byte=", false}};

size_t fs_resume_name(const char *name, bool *by_record, uint64_t *value)
{
	const char *at = strrchr(name, '@');

	if (!at || at == name)
		return 0;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		size_t len = strlen(units[i].word);
		const char *digits = at + len;

		if (strncmp(at, units[i].word, len) != 0)
			continue;
		/* one name per file: no leading zero, no sign, no space */
		if (digits[0] < '0' || digits[0] > '9' ||
		    (digits[0] == '0' && digits[1] != '\0') ||
		    util_parse_uint(digits, 0, UINT64_MAX, value))
			return 0;
		*by_record = units[i].by_record;
		return (size_t)(at - name);
	}
	return 0;
}

int fs_resume_take(struct fs_resume_files *t, unsigned channel, unsigned epoch,
		   bool by_record, uint64_t value)
{
	int free_slot = -1;

	for (int i = 0; i < FS_RESUME_SLOTS; i++) {
		struct fs_resume_slot *s = &t->slot[i];

		if (s->lookups == 0) {
			if (free_slot < 0)
				free_slot = i;
			continue;
		}
		if (s->channel == channel && s->epoch == epoch &&
		    s->by_record == (uint32_t)by_record && s->value == value) {
			s->lookups++;
			return i;
		}
	}
	if (free_slot >= 0) {
		struct fs_resume_slot *s = &t->slot[free_slot];

		memset(s, 0, sizeof(*s));
		s->channel = channel;
		s->epoch = epoch;
		s->by_record = by_record;
		s->value = value;
		s->lookups = 1;
	}
	return free_slot;
}

void fs_resume_forget(struct fs_resume_files *t, uint64_t slot,
		      uint64_t nlookup)
{
	struct fs_resume_slot *s = fs_resume_slot(t, slot);

	if (s)
		s->lookups = nlookup < s->lookups ? s->lookups - nlookup : 0;
}

struct fs_resume_slot *fs_resume_slot(struct fs_resume_files *t, uint64_t n)
{
	return n < FS_RESUME_SLOTS && t->slot[n].lookups ? &t->slot[n] : NULL;
}
