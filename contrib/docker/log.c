/*
 * log: the plugin's one line per event on stderr, which systemd hands to
 * the journal.  Lines are cleaned (util_clean_line), since names and
 * messages may come from outside, and written in one call, so that lines
 * from several threads do not mix.  Callers never pass a secret.
 */
#include "config.h"

#include "contrib/docker/plugin.h"
#include "util/util.h"

#include <stdarg.h>
#include <stdio.h>

void plugin_log(const char *fmt, ...)
{
	char line[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	util_clean_line(line);
	fprintf(stderr, "%s: %s\n", PLUGIN_PROG, line);
}
