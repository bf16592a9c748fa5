/*
 * fs positionals: the command line's non-options, once every option is in
 * (see fs/options.c): for s3pipe the channels as NAME=URI and the
 * mountpoint, last; for mount.s3pipe the source (one URI, a channel named
 * by -o channel=, "train" when not; or with --input-data-config only the
 * mount's name) and the mountpoint.  A mountpoint shaped like NAME=URI is
 * refused as a channel given where the mountpoint goes.
 */
#include "config.h"

#include "fs/parse.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "s3/s3.h"
#include "util/util.h"

/* "NAME=s3://x" shaped: a channel where a mountpoint was expected. */
static bool looks_like_channel(const char *s)
{
	const char *eq = strchr(s, '=');
	const char *p;

	if (!eq || eq == s)
		return false;
	for (p = eq + 1; *p; p++) {
		if (strncmp(p, "://", 3) == 0)
			return p > eq + 1;
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '+' || *p == '-' ||
		      *p == '.'))
			return false;
	}
	return false;
}

static int add_channel(struct parse_state *st, const char *name, size_t namelen,
		       const char *uri)
{
	struct fs_options *o = st->o;
	struct channel_spec *c;
	const char *s3uri = uri;
	enum channel_data_type type;
	char uerr[512];
	char namebuf[FS_CHANNEL_NAME_MAX + 1];
	char *bucket = NULL;
	char *prefix = NULL;
	char *copy = NULL;
	unsigned i;
	int rc;

	channel_uri_kind(uri, &type, &s3uri);
	if (namelen > FS_CHANNEL_NAME_MAX) {
		return options_fail(
		    st, EINVAL,
		    "invalid channel name '%.*s...': use 1-64 of A-Z "
		    "a-z 0-9 . - _",
		    FS_CHANNEL_NAME_MAX, name);
	}
	memcpy(namebuf, name, namelen);
	namebuf[namelen] = '\0';
	if (!channel_name_valid(namebuf))
		return options_fail(
		    st, EINVAL,
		    "invalid channel name '%s': use 1-64 of A-Z a-z "
		    "0-9 . - _",
		    namebuf);
	for (i = 0; i < o->nchannels; i++) {
		if (strcmp(o->channels[i].name, namebuf) == 0)
			return options_fail(st, EINVAL,
					    "duplicate channel '%s'", namebuf);
	}
	if (o->nchannels >= FS_MAX_CHANNELS)
		return options_fail(st, EINVAL, "too many channels: at most %d",
				    FS_MAX_CHANNELS);
	uerr[0] = '\0';
	rc = s3_uri_parse(s3uri, &bucket, &prefix, uerr, sizeof(uerr));
	if (rc == 0 && type != CHANNEL_S3_PREFIX &&
	    (!*prefix || prefix[strlen(prefix) - 1] == '/')) {
		snprintf(uerr, sizeof(uerr),
			 "'%s' must name the manifest object, not a prefix",
			 uri);
		rc = EINVAL;
	}
	if (rc == ENOMEM)
		goto nomem;
	if (rc) {
		if (st->mount_helper && looks_like_channel(uri))
			rc = options_fail(
			    st, EINVAL,
			    "source '%s' is not an s3:// uri: give "
			    "s3://BUCKET[/PREFIX] and name the channel "
			    "with -o channel=NAME",
			    uri);
		else if (st->mount_helper)
			rc = options_fail(st, EINVAL, "%s", uerr);
		else
			rc = options_fail(st, EINVAL, "channel '%s': %s",
					  namebuf, uerr);
		goto fail;
	}
	copy = strdup(uri);
	if (!copy)
		goto nomem;
	c = &o->channels[o->nchannels++];
	channel_spec_init(c);
	memcpy(c->name, namebuf, namelen + 1);
	c->data_type = type;
	c->uri = copy;
	c->bucket = bucket;
	c->prefix = prefix;
	return 0;
nomem:
	rc = options_fail_nomem(st);
fail:
	free(bucket);
	free(prefix);
	free(copy);
	return rc;
}

static int set_mountpoint(struct parse_state *st, const char *path)
{
	char *copy;

	if (!*path)
		return options_fail(st, EINVAL, "no mountpoint given");
	copy = strdup(path);
	if (!copy)
		return options_fail_nomem(st);
	free(st->o->mountpoint);
	st->o->mountpoint = copy;
	return 0;
}

/* s3pipe: NAME=URI ... MOUNTPOINT */
int positionals_s3pipe(struct parse_state *st, const char **pos, int npos)
{
	const char *last, *eq;
	int i, rc;

	for (i = 0; i + 1 < npos; i++) {
		eq = strchr(pos[i], '=');
		if (!eq)
			return options_fail(
			    st, EINVAL,
			    "unexpected argument '%s': channels are "
			    "NAME=s3://BUCKET[/PREFIX] and the mountpoint "
			    "comes last",
			    pos[i]);
		rc = add_channel(st, pos[i], (size_t)(eq - pos[i]), eq + 1);
		if (rc)
			return rc;
	}
	if (npos == 0 && st->o->input_data_config)
		return options_fail(st, EINVAL, "no mountpoint given");
	if (npos == 0)
		return options_fail(
		    st, EINVAL,
		    "no channel given: expected NAME=s3://BUCKET[/PREFIX] or "
		    "--input-data-config FILE");
	last = pos[npos - 1];
	if (!*last || looks_like_channel(last))
		return options_fail(st, EINVAL, "no mountpoint given");
	if (st->o->nchannels == 0 && !st->o->input_data_config)
		return options_fail(
		    st, EINVAL,
		    "no channel given: expected NAME=s3://BUCKET[/PREFIX] or "
		    "--input-data-config FILE");
	return set_mountpoint(st, last);
}

/* mount.s3pipe: SOURCE MOUNTPOINT */
int positionals_helper(struct parse_state *st, const char **pos, int npos)
{
	const char *name = st->channel[0] ? st->channel : FS_DEFAULT_CHANNEL;
	int rc;

	if (npos == 0)
		return options_fail(
		    st, EINVAL,
		    "no source given: expected mount.s3pipe "
		    "s3://BUCKET[/PREFIX] MOUNTPOINT [-o OPTIONS]");
	if (npos == 1)
		return options_fail(st, EINVAL, "no mountpoint given");
	if (npos > 2)
		return options_fail(
		    st, EINVAL,
		    "unexpected argument '%s': mount.s3pipe takes "
		    "SOURCE MOUNTPOINT [-o OPTIONS]",
		    pos[2]);
	/* with an input data config, SOURCE only names the mount (fstab's
	 * first field) */
	if (!st->o->input_data_config) {
		rc = add_channel(st, name, strlen(name), pos[0]);
		if (rc)
			return rc;
	}
	return set_mountpoint(st, pos[1]);
}
