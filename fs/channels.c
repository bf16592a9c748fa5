/*
 * fs channels: from the command line to channel specs.
 *
 * Channels come either from NAME=URI arguments, each URI's kind prefix
 * ("manifest+", "augmented+") choosing its S3DataType, with the
 * per-channel options (--shuffle-seed, --record-wrapper, --compression,
 * --sharded, --attribute-names, --convert and its options) applying to all
 * of them; or from an InputDataConfig file (channel/config.c), which says
 * all of that per channel, so the two do not mix.  The conversion options
 * are checked together here, once all are in, whatever their order on the
 * line.  This host's place among the training hosts comes from SageMaker's
 * resourceconfig.json or from --host-index and --host-count; alone it is
 * host 0 of 1.
 */
#include "config.h"

#include "fs/options.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

static const struct {
	const char *prefix;
	enum channel_data_type type;
} uri_kinds[] = {
    {"manifest+", CHANNEL_MANIFEST_FILE},
    {"augmented+", CHANNEL_AUGMENTED_MANIFEST_FILE},
};

enum channel_data_type fs_channel_uri_kind(const char *uri, const char **s3uri)
{
	for (size_t i = 0; i < sizeof(uri_kinds) / sizeof(uri_kinds[0]); i++) {
		size_t n = strlen(uri_kinds[i].prefix);

		if (strncmp(uri, uri_kinds[i].prefix, n) == 0) {
			*s3uri = uri + n;
			return uri_kinds[i].type;
		}
	}
	*s3uri = uri;
	return CHANNEL_S3_PREFIX;
}

/* "a,b,c" into spec's AttributeNames. */
static int set_attributes(struct channel_spec *spec, const char *list,
			  char *err, size_t errlen)
{
	const char *p = list;

	while (*p) {
		size_t len = strcspn(p, ",");
		char **names;

		if (len == 0)
			return util_fail(
			    err, errlen, EINVAL,
			    "--attribute-names '%s' has an empty name", list);
		if (spec->nattributes == CHANNEL_ATTRIBUTES_MAX)
			return util_fail(err, errlen, EINVAL,
					 "--attribute-names: at most %d names",
					 CHANNEL_ATTRIBUTES_MAX);
		names = realloc(spec->attributes,
				(spec->nattributes + 1) * sizeof(*names));
		if (!names)
			return ENOMEM;
		spec->attributes = names;
		names[spec->nattributes] = strndup(p, len);
		if (!names[spec->nattributes])
			return ENOMEM;
		spec->nattributes++;
		p += len;
		if (*p != ',')
			continue;
		p++;
		if (!*p)
			return util_fail(
			    err, errlen, EINVAL,
			    "--attribute-names '%s' has an empty name", list);
	}
	return 0;
}

/* --shuffle-seed and the others given with an input data config. */
static const char *per_channel_option(const struct fs_channel_args *a)
{
	if (a->shuffle)
		return "--shuffle-seed (ShuffleConfig)";
	if (a->wrapper_set)
		return "--record-wrapper (RecordWrapperType)";
	if (a->compression_set)
		return "--compression (CompressionType)";
	if (a->sharded)
		return "--sharded (S3DataDistributionType)";
	if (a->attribute_names)
		return "--attribute-names (AttributeNames)";
	if (a->convert_set)
		return "--convert (S3pipeConvert)";
	if (a->label_column_set)
		return "--csv-label-column (S3pipeCsvLabelColumn)";
	if (a->header_set)
		return "--csv-header (S3pipeCsvHeader)";
	if (a->bad_row_set)
		return "--on-bad-row (S3pipeOnBadRow)";
	if (a->feature_dim_set)
		return "--feature-dim (S3pipeFeatureDim)";
	return NULL;
}

/*
 * --convert and the options that go with it, checked together, into conf
 * (format NONE when there is no conversion).
 */
static int convert_args(const struct fs_channel_args *a,
			struct channel_convert_conf *conf, char *err,
			size_t errlen)
{
	enum channel_convert_format format = a->convert.format;

	channel_convert_conf_init(conf, CHANNEL_CONVERT_NONE);
	if (format != CHANNEL_CONVERT_CSV && a->label_column_set)
		return util_fail(err, errlen, EINVAL,
				 "--csv-label-column needs --convert csv");
	if (format != CHANNEL_CONVERT_CSV && a->header_set)
		return util_fail(err, errlen, EINVAL,
				 "--csv-header needs --convert csv");
	if (format == CHANNEL_CONVERT_NONE && a->bad_row_set)
		return util_fail(err, errlen, EINVAL,
				 "--on-bad-row needs --convert csv or "
				 "--convert libsvm");
	if (format == CHANNEL_CONVERT_NONE && a->feature_dim_set)
		return util_fail(err, errlen, EINVAL,
				 "--feature-dim needs --convert csv or "
				 "--convert libsvm");
	if (format == CHANNEL_CONVERT_NONE)
		return 0;
	if (a->wrapper == CHANNEL_WRAPPER_RECORDIO)
		return util_fail(err, errlen, EINVAL,
				 "--convert writes RecordIO records already: "
				 "leave --record-wrapper at none");
	if (format == CHANNEL_CONVERT_LIBSVM && !a->feature_dim_set)
		return util_fail(err, errlen, EINVAL,
				 "--convert libsvm needs --feature-dim N, the "
				 "number of features (the tensor's shape)");
	channel_convert_conf_init(conf, format);
	if (a->label_column_set)
		conf->label_column = a->convert.label_column;
	conf->header_skip = a->header_set && a->convert.header_skip;
	conf->bad_row_skip = a->bad_row_set && a->convert.bad_row_skip;
	conf->feature_dim = a->feature_dim_set ? a->convert.feature_dim : 0;
	return 0;
}

static int apply_args(struct fs_options *o, char *err, size_t errlen)
{
	const struct fs_channel_args *a = &o->args;
	struct channel_convert_conf convert;
	bool augmented = false;
	int rc;

	rc = convert_args(a, &convert, err, errlen);
	if (rc)
		return rc;
	for (unsigned i = 0; i < o->nchannels; i++) {
		struct channel_spec *spec = &o->channels[i];

		spec->shuffle = a->shuffle;
		spec->seed = a->seed;
		spec->wrapper = a->wrapper;
		spec->compression = a->compression;
		spec->convert = convert;
		spec->distribution = a->sharded ? CHANNEL_SHARDED_BY_S3_KEY
						: CHANNEL_FULLY_REPLICATED;
		if (spec->data_type != CHANNEL_AUGMENTED_MANIFEST_FILE)
			continue;
		augmented = true;
		if (!a->attribute_names)
			return util_fail(
			    err, errlen, EINVAL,
			    "channel '%s' is an augmented manifest: "
			    "give its AttributeNames with "
			    "--attribute-names NAME[,NAME...]",
			    spec->name);
		rc = set_attributes(spec, a->attribute_names, err, errlen);
		if (rc)
			return rc;
	}
	if (a->attribute_names && !augmented)
		return util_fail(
		    err, errlen, EINVAL,
		    "--attribute-names applies only to augmented+s3:// "
		    "channels");
	return 0;
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
		return channel_resource_config_load(o->resource_config,
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
	const char *opt;
	int rc;

	if (o->input_data_config) {
		if (o->nchannels)
			return util_fail(
			    err, errlen, EINVAL,
			    "channel '%s' given as NAME=URI: with "
			    "--input-data-config the channels come "
			    "from the file only",
			    o->channels[0].name);
		opt = per_channel_option(&o->args);
		if (opt)
			return util_fail(
			    err, errlen, EINVAL,
			    "%s applies to NAME=URI channels: with "
			    "--input-data-config set it in the file",
			    opt);
		rc = channel_config_load(o->input_data_config, o->channels,
					 FS_MAX_CHANNELS, &o->nchannels, err,
					 errlen);
	} else {
		rc = apply_args(o, err, errlen);
	}
	if (rc == ENOMEM)
		return util_fail(err, errlen, EINVAL, "out of memory");
	if (rc)
		return rc;
	return find_host(o, err, errlen);
}
