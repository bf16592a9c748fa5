/*
 * channel specs and entries: freeing them, the channel name rule, and the
 * defaults of a conversion.
 */
#include "config.h"

#include "channel/internal.h"

#include <stdlib.h>
#include <string.h>

void channel_spec_free(struct channel_spec *spec)
{
	if (!spec)
		return;
	free(spec->uri);
	free(spec->bucket);
	free(spec->prefix);
	for (size_t i = 0; i < spec->nattributes; i++)
		free(spec->attributes[i]);
	free(spec->attributes);
	free(spec->content_type);
	memset(spec, 0, sizeof(*spec));
}

void channel_convert_conf_init(struct channel_convert_conf *conf,
			       enum channel_convert_format format)
{
	memset(conf, 0, sizeof(*conf));
	conf->format = format;
	conf->label_column = 0; /* CSV: the label first, as SageMaker's */
}

bool channel_name_valid(const char *name)
{
	size_t i;

	if (!name)
		return false;
	for (i = 0; name[i]; i++) {
		char c = name[i];

		if (i >= CHANNEL_NAME_MAX)
			return false;
		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '-' ||
		      c == '_'))
			return false;
	}
	return i > 0;
}

void channel_entries_free(struct channel_entries *e)
{
	if (!e)
		return;
	for (size_t i = 0; i < e->count; i++) {
		struct channel_entry *en = &e->entries[i];

		for (unsigned j = 0; j < en->nitems; j++) {
			free(en->items[j].bucket);
			free(en->items[j].key);
			free(en->items[j].text);
		}
		free(en->items);
		free(en->error);
	}
	free(e->entries);
	memset(e, 0, sizeof(*e));
}
