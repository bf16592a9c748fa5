/*
 * sagemaker: SageMaker's files, read and written at start-up.
 *
 * - InputDataConfig, the JSON array of channels that CreateTrainingJob
 *   takes, becomes channel specs: each field of channel_settings[]
 *   (channel/channel.h) is read from where the table says, then
 *   channel_spec_check() checks them together.
 * - resourceconfig.json gives this host's place among the training hosts.
 * - inputdataconfig.json, the container-side view of the channels that
 *   sagemaker-training-toolkit and PipeModeDataset read, is written.
 *
 * Between fs/ (which calls it once, at start-up) and channel/ (whose specs
 * it fills).  Nothing here streams.
 */
#ifndef S3PIPE_SAGEMAKER_SAGEMAKER_H
#define S3PIPE_SAGEMAKER_SAGEMAKER_H

#include <stddef.h>

#include "channel/channel.h"

/*
 * Parses an InputDataConfig from text[0..len) into specs[*n ..max),
 * advancing *n.  Pipe and FastFile channels (InputMode "Pipe" or absent,
 * "FastFile") become specs; "File" is refused; unknown fields are ignored.
 * Returns 0; or EINVAL with one line in err naming the channel and the
 * field ("channel 'train': CompressionType must be None or Gzip (got
 * 'zip')"), or ENOMEM.  On error the specs added are
 * freed and *n is as it was.  err: lowercase, no "s3pipe:" prefix, no
 * trailing period, no control characters.
 */
int sagemaker_input_config_parse(const char *text, size_t len,
				 struct channel_spec *specs, unsigned max,
				 unsigned *n, char *err, size_t errlen);

/* sagemaker_input_config_parse() on the contents of the file at path; a
 * file that cannot be read is EINVAL with its name and the reason in err. */
int sagemaker_input_config_load(const char *path, struct channel_spec *specs,
				unsigned max, unsigned *n, char *err,
				size_t errlen);

/*
 * Reads resourceconfig.json at path ({"current_host": "algo-2", "hosts":
 * ["algo-1", "algo-2", ...], ...}) into host: index is the position of
 * current_host in hosts.  0, or EINVAL with one line in err.
 */
int sagemaker_resource_config_load(const char *path, struct channel_host *host,
				   char *err, size_t errlen);

/*
 * Writes dir/inputdataconfig.json: an object keyed by channel name, each
 * {"TrainingInputMode": "Pipe" or "FastFile", "S3DistributionType": ...,
 * "RecordWrapperType": ..., "ContentType": ... (when set)}; a converted
 * channel is written as what its reader gets: ContentType
 * application/x-recordio-protobuf, RecordWrapperType None.  Written to a
 * temporary file in dir and renamed into place.  0, or an errno with one
 * line in err.
 */
int sagemaker_container_config_write(const char *dir,
				     const struct channel_spec *specs,
				     unsigned n, char *err, size_t errlen);

#endif
