/*
 * fs channels: from the command line to channel specs.
 *
 * Channels come either from NAME=URI arguments, each URI's scheme
 * ("s3://", "manifest+s3://", "augmented+s3://") choosing its S3DataType,
 * with the per-channel options (the rows of channel_settings[]) applying
 * to every channel that takes them; or from an InputDataConfig file
 * (sagemaker/), which says all of that per channel, so the two do not mix.
 * The per-channel options are checked together (channel_spec_check()) once
 * all are in, whatever their order on the line: first as options, then
 * with each channel.  This host's place among the training hosts comes
 * from SageMaker's resourceconfig.json or from --host-index and
 * --host-count; alone it is host 0 of 1.
 */
#include "config.h"

#include "fs/channels.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sagemaker/sagemaker.h"
#include "util/util.h"

/* The first per-channel option given, as "--option (Field)", or NULL. */
static const char *per_channel_option(const struct fs_channel_args *a,
				      char *buf, size_t size)
{
	for (unsigned i = 0; i < channel_settings_count; i++) {
		const struct channel_setting *s = &channel_settings[i];

		if (!channel_setting_given(&a->settings, s))
			continue;
		snprintf(buf, size, "--%s (%s)", s->option, s->field);
		return buf;
	}
	return NULL;
}

/*
 * The options on their own first (as on a plain s3:// channel), so that
 * their messages name no channel; then on each channel, with what its data
 * type takes; last, an option no channel took is refused with the rule
 * that says why.
 */
static int apply_args(struct fs_options *o, char *err, size_t errlen)
{
	const struct channel_spec *given = &o->args.settings;
	struct channel_spec probe;
	uint32_t used = 0;
	char msg[512];
	int rc;

	channel_spec_init(&probe);
	rc = channel_spec_copy_settings(&probe, given,
					channel_spec_applicable(&probe));
	if (!rc)
		rc =
		    channel_spec_check(&probe, CHANNEL_SYNTAX_CLI, err, errlen);
	for (unsigned i = 0; !rc && i < o->nchannels; i++) {
		struct channel_spec *spec = &o->channels[i];
		uint32_t rows = channel_spec_applicable(spec);

		used |= rows & given->given;
		rc = channel_spec_copy_settings(spec, given, rows);
		if (rc || !channel_spec_check(spec, CHANNEL_SYNTAX_CLI, msg,
					      sizeof(msg)))
			continue;
		rc = util_fail(err, errlen, EINVAL, "channel '%s': %s",
			       spec->name, msg);
	}
	if (!rc && (given->given & ~used)) {
		/* the rule that ties it to a data type says which */
		rc = channel_spec_copy_settings(&probe, given, given->given);
		if (!rc)
			rc = channel_spec_check(&probe, CHANNEL_SYNTAX_CLI, err,
						errlen);
		if (!rc)
			rc = util_fail(err, errlen, EINVAL,
				       "a per-channel option applies to no "
				       "channel");
	}
	channel_spec_free(&probe);
	return rc;
}

static int find_host(struct fs_options *o, char *err, size_t errlen)
{
	const struct fs_channel_args *a = &o->args;

	o->host.index = 0;
	o->host.count = 1;
	if (o->resource_config) {
		if (a->host_index_set || a->host_count_set)
			return util_fail(
			    err, errlen, EINVAL,
			    "give either --resource-config or "
			    "--host-index and --host-count, not both");
		return sagemaker_resource_config_load(o->resource_config,
						      &o->host, err, errlen);
	}
	if (a->host_index_set != a->host_count_set)
		return util_fail(err, errlen, EINVAL,
				 "--host-index and --host-count go together");
	if (!a->host_count_set)
		return 0;
	if (a->host_index >= a->host_count)
		return util_fail(
		    err, errlen, EINVAL,
		    "--host-index (%u) must be less than --host-count "
		    "(%u): hosts count from 0",
		    a->host_index, a->host_count);
	o->host.index = a->host_index;
	o->host.count = a->host_count;
	return 0;
}

int fs_channels_finish(struct fs_options *o, char *err, size_t errlen)
{
	char opt[160];
	int rc;

	if (o->input_data_config) {
		if (o->nchannels)
			return util_fail(
			    err, errlen, EINVAL,
			    "channel '%s' given as NAME=URI: with "
			    "--input-data-config the channels come "
			    "from the file only",
			    o->channels[0].name);
		if (per_channel_option(&o->args, opt, sizeof(opt)))
			return util_fail(
			    err, errlen, EINVAL,
			    "%s applies to NAME=URI channels: with "
			    "--input-data-config set it in the file",
			    opt);
		rc = sagemaker_input_config_load(o->input_data_config,
						 o->channels, FS_MAX_CHANNELS,
						 &o->nchannels, err, errlen);
	} else {
		rc = apply_args(o, err, errlen);
	}
	if (rc == ENOMEM)
		return util_fail(err, errlen, EINVAL, "out of memory");
	if (rc)
		return rc;
	return find_host(o, err, errlen);
}
