/*
 * fs usage: --help, from the same option rows the parse uses (fs/options.c),
 * each with its default read from a freshly initialised struct fs_options.
 */
#include "config.h"

#include "fs/parse.h"

#include <stdio.h>
#include <string.h>

#include "util/util.h"

/* One row of --help; SIZE and UINT rows end with their default. */
static void usage_row(FILE *out, const struct opt_def *d,
		      const struct fs_options *defaults)
{
	const char *field = (const char *)defaults + d->offset;
	char left[64], help[512], v[32];
	int n;

	if (d->short_name)
		n = snprintf(left, sizeof(left), "  -%c, --%s%s%s",
			     d->short_name, d->name, d->metavar ? " " : "",
			     d->metavar ? d->metavar : "");
	else
		n = snprintf(left, sizeof(left), "      --%s%s%s", d->name,
			     d->metavar ? " " : "",
			     d->metavar ? d->metavar : "");
	if (n < 0)
		return;
	if (d->kind == OPT_SIZE)
		snprintf(help, sizeof(help), "%s (default %s)", d->help,
			 opt_size_str(*(const uint64_t *)field, v, sizeof(v)));
	else if (d->kind == OPT_UINT)
		snprintf(help, sizeof(help), "%s (default %u)", d->help,
			 *(const unsigned *)field);
	else if (d->kind == OPT_CHANNEL &&
		 *channel_setting_default_doc(d->setting))
		snprintf(help, sizeof(help), "%s (default %s)", d->help,
			 channel_setting_default_doc(d->setting));
	else
		snprintf(help, sizeof(help), "%s", d->help);
	util_help_row(out, left, help);
}

void fs_options_usage(FILE *out, const char *progname)
{
	const char *base = progname ? strrchr(progname, '/') : NULL;
	struct fs_options defaults;
	size_t i;

	base = base ? base + 1 : (progname ? progname : "s3pipe");
	if (strncmp(base, "mount.", 6) == 0) {
		fprintf(out,
			"Usage: %s s3://BUCKET[/PREFIX] MOUNTPOINT [-o "
			"OPTIONS]\n"
			"       %s NAME MOUNTPOINT -o "
			"input_data_config=FILE[,OPTIONS]\n",
			base, base);
	} else {
		fprintf(out,
			"Usage: %s [OPTIONS] NAME=URI [NAME=URI ...] "
			"MOUNTPOINT\n"
			"       %s [OPTIONS] --input-data-config FILE "
			"MOUNTPOINT\n"
			"       %s stats [--json] [--watch] [--interval "
			"SECONDS] MOUNTPOINT\n",
			base, base, base);
	}
	fputs("\nServes each channel as read-only files NAME_0, NAME_1, ... "
	      "(one per epoch)\n"
	      "holding its objects back to back, like SageMaker Pipe mode.  "
	      "URI is\n"
	      "s3://BUCKET[/PREFIX] (every object under the prefix, in key "
	      "order),\n"
	      "manifest+s3://BUCKET/KEY (a manifest file) or "
	      "augmented+s3://BUCKET/KEY\n"
	      "(an augmented manifest, with --attribute-names).\n"
	      "\nOptions (each also as -o name=VALUE, or -o name for flags; "
	      "'-' and '_'\n"
	      "are the same in names; SIZE takes a K, M or G suffix):\n",
	      out);
	fs_options_init(&defaults);
	for (i = 0; i < opt_general_rows(); i++)
		usage_row(out, opt_row_at(i), &defaults);
	util_help_row(out, "  -o OPTS",
		      "options as a comma-separated list; those s3pipe does "
		      "not know go to libfuse and the kernel (auto_unmount, "
		      "default_permissions, fsname=, subtype=, ...)");
	fputs("\nPer-channel options, for every NAME=URI channel that takes "
	      "them (an\n"
	      "InputDataConfig gives them per channel instead; see s3pipe(1), "
	      "SAGEMAKER\n"
	      "CHANNELS):\n",
	      out);
	for (i = opt_general_rows(); i < opt_row_count(); i++)
		usage_row(out, opt_row_at(i), &defaults);
	fs_options_free(&defaults);
	fputs("\nmount.s3pipe (mount -t s3pipe, /etc/fstab) takes one SOURCE "
	      "and names its\n"
	      "channel with -o channel=NAME.  Its -f is mount's fake mode, "
	      "not foreground\n"
	      "(use -o foreground); -s, -n and -v are ignored, and so are "
	      "fstab keywords\n"
	      "such as _netdev, nofail, user, rw, ro, defaults, x-* and "
	      "comment=.\n"
	      "\ns3pipe stats MOUNTPOINT prints a mount's live stats (see "
	      "s3pipe stats --help).\n"
	      "\nSee s3pipe(1).\n",
	      out);
}
