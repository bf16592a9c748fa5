/*
 * creds: where the access key comes from, and which region to sign for.
 *
 * Credentials are looked up along a chain, a static table of providers
 * tried in order.  A provider returns 0 when it produced credentials,
 * ENOENT to pass to the next one, or another errno (with a message) to stop
 * the chain: half-set variables or a broken file are reported, not skipped,
 * because silently falling through to other credentials is worse than
 * failing.  Instance-metadata and container providers slot in at the end of
 * the table.
 *
 *   environment          AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
 *                        AWS_SESSION_TOKEN (or legacy AWS_SECURITY_TOKEN)
 *   shared credentials   AWS_SHARED_CREDENTIALS_FILE or ~/.aws/credentials,
 *                        section [NAME]
 *   shared config        AWS_CONFIG_FILE or ~/.aws/config, section
 *                        [profile NAME] ([default] for the default profile)
 *
 * The profile is the argument, else AWS_PROFILE, else "default".  A profile
 * named explicitly that exists in neither file is an error, raised by the
 * config provider once both files have been seen.  Missing files are fine.
 *
 * The files are parsed like botocore's configparser: '#' and ';' start
 * comment lines (there are no inline comments, a value may contain '#'),
 * keys and values are separated by '=' or ':', whitespace around section
 * names, keys and values is dropped, keys are case-insensitive, indented
 * lines other than section headers continue the previous value (nested
 * "s3 =" blocks) and are skipped, a later value overrides an earlier one.
 *
 * Secrets only ever live in heap strings that are wiped before they are
 * freed, and they never appear in a message: messages name files, profiles,
 * keys and line numbers, never values.
 */
#include "config.h"

#include "s3/s3.h"
#include "util/util.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define DEFAULT_PROFILE "default"
#define DEFAULT_REGION	"us-east-1"

/* What one file says about one profile. */
struct profile_values {
	bool found; /* the profile's section exists */
	char *access_key;
	char *secret_key;
	char *session_token;
	char *region;
	const char *unsupported; /* e.g. "role_arn"; static string or NULL */
};

struct creds_ctx {
	const char *profile;
	bool explicit_profile;	  /* named by the caller or AWS_PROFILE */
	bool profile_found;	  /* seen in a shared file */
	char cred_path[PATH_MAX]; /* "" when unknown (no HOME) */
	char conf_path[PATH_MAX];
	/* why a profile that exists gave no credentials, or "" */
	char unsupported[PATH_MAX + 128];
};

typedef int creds_provider_fn(struct creds_ctx *ctx, struct s3_creds *out,
			      char *err, size_t errlen);

static void free_secret(char *s)
{
	if (!s)
		return;
	explicit_bzero(s, strlen(s));
	free(s);
}

static void profile_values_clear(struct profile_values *v)
{
	free_secret(v->access_key);
	free_secret(v->secret_key);
	free_secret(v->session_token);
	free(v->region);
	memset(v, 0, sizeof(*v));
}

static const char *getenv_nonempty(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

static char *trim(char *s)
{
	char *end;

	while (*s && isspace((unsigned char)*s))
		s++;
	end = s + strlen(s);
	while (end > s && isspace((unsigned char)end[-1]))
		end--;
	*end = '\0';
	return s;
}

/*
 * Does the section header "[name]" (name already trimmed) select profile?
 * In the config file other profiles are "[profile NAME]" and the default
 * one is "[default]" (or "[profile default]").
 */
static bool section_matches(const char *name, const char *profile, bool config)
{
	if (!config)
		return strcmp(name, profile) == 0;
	if (strcmp(profile, DEFAULT_PROFILE) == 0 &&
	    strcmp(name, DEFAULT_PROFILE) == 0)
		return true;
	if (strncmp(name, "profile", 7) != 0 ||
	    !isspace((unsigned char)name[7]))
		return false;
	name += 7;
	while (isspace((unsigned char)*name))
		name++;
	return strcmp(name, profile) == 0;
}

/* Replaces *slot by a copy of value; "" means absent. 0 or ENOMEM. */
static int set_value(char **slot, const char *value, bool secret)
{
	char *copy = NULL;

	if (*value) {
		copy = strdup(value);
		if (!copy)
			return ENOMEM;
	}
	if (secret)
		free_secret(*slot);
	else
		free(*slot);
	*slot = copy;
	return 0;
}

static int store_key(struct profile_values *v, const char *key,
		     const char *value)
{
	static const char *const unsupported[] = {
	    "role_arn",	   "credential_process",      "sso_start_url",
	    "sso_session", "web_identity_token_file",
	};
	size_t i;

	if (strcasecmp(key, "aws_access_key_id") == 0)
		return set_value(&v->access_key, value, true);
	if (strcasecmp(key, "aws_secret_access_key") == 0)
		return set_value(&v->secret_key, value, true);
	if (strcasecmp(key, "aws_session_token") == 0)
		return set_value(&v->session_token, value, true);
	/* Legacy name; aws_session_token wins when both are present. */
	if (strcasecmp(key, "aws_security_token") == 0) {
		if (v->session_token)
			return 0;
		return set_value(&v->session_token, value, true);
	}
	if (strcasecmp(key, "region") == 0)
		return set_value(&v->region, value, false);
	for (i = 0; i < sizeof(unsupported) / sizeof(unsupported[0]); i++) {
		if (strcasecmp(key, unsupported[i]) == 0 && *value &&
		    !v->unsupported)
			v->unsupported = unsupported[i];
	}
	return 0;
}

/*
 * Reads profile's values from the INI file at path (config: the config
 * file's "[profile NAME]" convention).  A missing file leaves v empty and
 * returns 0.  Returns EINVAL with a message for an unreadable or malformed
 * file, or ENOMEM.  what names the file kind in messages.
 */
static int ini_read_profile(const char *path, const char *what,
			    const char *profile, bool config,
			    struct profile_values *v, char *err, size_t errlen)
{
	FILE *f = NULL;
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	unsigned long lineno = 0;
	bool in_section = false;
	bool have_key = false; /* a key line was seen: indents continue it */
	char ebuf[128];
	int rc = 0;

	memset(v, 0, sizeof(*v));
	f = fopen(path, "re");
	if (!f) {
		if (errno == ENOENT || errno == ENOTDIR)
			return 0;
		rc = errno;
		snprintf(err, errlen, "cannot read %s %s: %s", what, path,
			 util_strerror(rc, ebuf, sizeof(ebuf)));
		return EINVAL;
	}
	for (;;) {
		char *s;
		char *sep;
		bool indented;

		errno = 0;
		n = getline(&line, &cap, f);
		if (n < 0) {
			if (errno == ENOMEM) {
				rc = ENOMEM;
				goto fail;
			}
			if (ferror(f)) {
				rc = errno ? errno : EIO;
				snprintf(err, errlen, "cannot read %s %s: %s",
					 what, path,
					 util_strerror(rc, ebuf, sizeof(ebuf)));
				rc = EINVAL;
				goto fail;
			}
			break;
		}
		lineno++;
		indented = n > 0 && (line[0] == ' ' || line[0] == '\t');
		s = trim(line);
		if (*s == '\0' || *s == '#' || *s == ';')
			continue;
		if (*s == '[') {
			char *close = strrchr(s, ']');

			if (!close || close[1] != '\0') {
				snprintf(err, errlen,
					 "malformed section header at line "
					 "%lu of %s %s",
					 lineno, what, path);
				rc = EINVAL;
				goto fail;
			}
			*close = '\0';
			in_section =
			    section_matches(trim(s + 1), profile, config);
			if (in_section)
				v->found = true;
			have_key = false;
			continue;
		}
		if (indented && have_key)
			continue; /* continuation of a (nested) value */
		sep = strpbrk(s, "=:");
		if (!sep) {
			snprintf(err, errlen,
				 "malformed line %lu of %s %s: expected "
				 "KEY = VALUE",
				 lineno, what, path);
			rc = EINVAL;
			goto fail;
		}
		have_key = true;
		if (!in_section)
			continue;
		*sep = '\0';
		rc = store_key(v, trim(s), trim(sep + 1));
		if (rc)
			goto fail;
	}
	rc = 0;
fail:
	if (line) {
		explicit_bzero(line, cap);
		free(line);
	}
	fclose(f);
	if (rc)
		profile_values_clear(v);
	return rc;
}

/* out is "" when the path is unknown or does not fit. */
static void resolve_path(const char *envname, const char *name, char *out,
			 size_t outlen)
{
	const char *v = getenv_nonempty(envname);
	const char *home = getenv_nonempty("HOME");
	int n;

	if (v && strncmp(v, "~/", 2) == 0 && home)
		n = snprintf(out, outlen, "%s%s", home, v + 1);
	else if (v)
		n = snprintf(out, outlen, "%s", v);
	else if (home)
		n = snprintf(out, outlen, "%s/.aws/%s", home, name);
	else
		n = -1;
	if (n < 0 || (size_t)n >= outlen)
		out[0] = '\0';
}

static int fill_creds(struct s3_creds *out, const char *ak, const char *sk,
		      const char *token, const char *source)
{
	out->access_key = strdup(ak);
	out->secret_key = strdup(sk);
	out->session_token = token ? strdup(token) : NULL;
	out->source = strdup(source);
	if (!out->access_key || !out->secret_key || !out->source ||
	    (token && !out->session_token)) {
		s3_creds_clear(out);
		return ENOMEM;
	}
	return 0;
}

static int provider_env(struct creds_ctx *ctx, struct s3_creds *out, char *err,
			size_t errlen)
{
	const char *ak = getenv_nonempty("AWS_ACCESS_KEY_ID");
	const char *sk = getenv_nonempty("AWS_SECRET_ACCESS_KEY");
	const char *token = getenv_nonempty("AWS_SESSION_TOKEN");

	if (!token)
		token = getenv_nonempty("AWS_SECURITY_TOKEN");
	if (!ak && !sk)
		return ENOENT;
	if (!sk) {
		snprintf(err, errlen,
			 "AWS_ACCESS_KEY_ID is set but "
			 "AWS_SECRET_ACCESS_KEY is not");
		return EINVAL;
	}
	if (!ak) {
		snprintf(err, errlen,
			 "AWS_SECRET_ACCESS_KEY is set but "
			 "AWS_ACCESS_KEY_ID is not");
		return EINVAL;
	}
	return fill_creds(out, ak, sk, token, "environment");
}

static int provider_file(struct creds_ctx *ctx, bool config,
			 struct s3_creds *out, char *err, size_t errlen)
{
	const char *path = config ? ctx->conf_path : ctx->cred_path;
	const char *what =
	    config ? "shared config file" : "shared credentials file";
	struct profile_values v;
	struct util_buf source;
	int rc;

	util_buf_init(&source, 0);
	if (!*path)
		return ENOENT;
	rc =
	    ini_read_profile(path, what, ctx->profile, config, &v, err, errlen);
	if (rc)
		return rc;
	if (v.found)
		ctx->profile_found = true;
	if (v.access_key && v.secret_key) {
		rc = util_buf_printf(&source, "%s %s (profile %s)", what, path,
				     ctx->profile);
		if (!rc)
			rc = fill_creds(out, v.access_key, v.secret_key,
					v.session_token, source.data);
	} else if (v.access_key || v.secret_key) {
		snprintf(err, errlen, "profile '%s' in %s %s has %s but no %s",
			 ctx->profile, what, path,
			 v.access_key ? "aws_access_key_id"
				      : "aws_secret_access_key",
			 v.access_key ? "aws_secret_access_key"
				      : "aws_access_key_id");
		rc = EINVAL;
	} else {
		if (v.unsupported && !ctx->unsupported[0])
			snprintf(ctx->unsupported, sizeof(ctx->unsupported),
				 "profile '%s' in %s uses %s, which s3pipe "
				 "does not support",
				 ctx->profile, path, v.unsupported);
		rc = ENOENT;
	}
	util_buf_free(&source);
	profile_values_clear(&v);
	return rc;
}

static int provider_credentials_file(struct creds_ctx *ctx,
				     struct s3_creds *out, char *err,
				     size_t errlen)
{
	return provider_file(ctx, false, out, err, errlen);
}

/* Also the place where a missing explicit profile is reported: both shared
 * files have been read by now. */
static int provider_config_file(struct creds_ctx *ctx, struct s3_creds *out,
				char *err, size_t errlen)
{
	int rc = provider_file(ctx, true, out, err, errlen);

	if (rc != ENOENT || !ctx->explicit_profile || ctx->profile_found)
		return rc;
	if (ctx->cred_path[0] && ctx->conf_path[0])
		snprintf(err, errlen, "profile '%s' not found in %s, %s",
			 ctx->profile, ctx->cred_path, ctx->conf_path);
	else if (ctx->cred_path[0] || ctx->conf_path[0])
		snprintf(err, errlen, "profile '%s' not found in %s",
			 ctx->profile,
			 ctx->cred_path[0] ? ctx->cred_path : ctx->conf_path);
	else
		snprintf(err, errlen,
			 "profile '%s' not found: no shared credentials or "
			 "config file (HOME is not set)",
			 ctx->profile);
	return EINVAL;
}

static const struct {
	const char *name;
	creds_provider_fn *fn;
} providers[] = {
    {"environment", provider_env},
    {"shared credentials file", provider_credentials_file},
    {"shared config file", provider_config_file},
};

/*
 * The profile to use.  "default" never counts as explicit: naming it in
 * AWS_PROFILE must not fail where leaving AWS_PROFILE unset would work.
 */
static const char *profile_name(const char *arg, bool *explicit_profile)
{
	const char *p = arg && *arg ? arg : getenv_nonempty("AWS_PROFILE");

	if (!p)
		p = DEFAULT_PROFILE;
	*explicit_profile = strcmp(p, DEFAULT_PROFILE) != 0;
	return p;
}

static void init_ctx(struct creds_ctx *ctx, const char *profile)
{
	memset(ctx, 0, sizeof(*ctx));
	ctx->profile = profile_name(profile, &ctx->explicit_profile);
	resolve_path("AWS_SHARED_CREDENTIALS_FILE", "credentials",
		     ctx->cred_path, sizeof(ctx->cred_path));
	resolve_path("AWS_CONFIG_FILE", "config", ctx->conf_path,
		     sizeof(ctx->conf_path));
}

#define NPROVIDERS (sizeof(providers) / sizeof(providers[0]))

int s3_creds_resolve(const struct s3_creds_query *q, struct s3_creds *out,
		     char *err, size_t errlen)
{
	struct creds_ctx ctx;
	size_t i;
	int rc = ENOENT;

	memset(out, 0, sizeof(*out));
	out->provider = -1;
	if (errlen)
		err[0] = '\0';
	init_ctx(&ctx, q->profile);
	for (i = 0; i < NPROVIDERS; i++) {
		rc = providers[i].fn(&ctx, out, err, errlen);
		if (rc == 0) {
			out->provider = (int)i;
			util_debug("credentials from %s", out->source);
			return 0;
		}
		if (rc != ENOENT) {
			util_debug("credential provider '%s' failed",
				   providers[i].name);
			return rc;
		}
	}
	if (ctx.unsupported[0])
		snprintf(err, errlen, "no credentials found: %s",
			 ctx.unsupported);
	else
		snprintf(err, errlen,
			 "no credentials found: set AWS_ACCESS_KEY_ID and "
			 "AWS_SECRET_ACCESS_KEY, or add aws_access_key_id and "
			 "aws_secret_access_key to profile '%s' in %s",
			 ctx.profile,
			 ctx.cred_path[0] ? ctx.cred_path
					  : "~/.aws/credentials");
	return ENOENT;
}

int s3_creds_refresh(const struct s3_creds_query *q, const struct s3_creds *old,
		     struct s3_creds *out, char *err, size_t errlen)
{
	struct creds_ctx ctx;
	int rc;

	memset(out, 0, sizeof(*out));
	out->provider = -1;
	if (errlen)
		err[0] = '\0';
	if (old->provider < 0 || (size_t)old->provider >= NPROVIDERS)
		return util_fail(err, errlen, EINVAL,
				 "these credentials cannot be refreshed");
	init_ctx(&ctx, q->profile);
	rc = providers[old->provider].fn(&ctx, out, err, errlen);
	if (rc == ENOENT)
		return util_fail(err, errlen, ENOENT,
				 "%s no longer gives credentials",
				 providers[old->provider].name);
	if (rc == 0)
		out->provider = old->provider;
	return rc;
}

void s3_creds_clear(struct s3_creds *c)
{
	if (!c)
		return;
	free(c->access_key);
	free_secret(c->secret_key);
	free_secret(c->session_token);
	free(c->source);
	c->access_key = NULL;
	c->secret_key = NULL;
	c->session_token = NULL;
	c->source = NULL;
	c->expiration = 0;
	c->provider = -1;
}

void s3_region_resolve(const char *cli, const char *profile, char *out,
		       size_t outlen)
{
	struct creds_ctx ctx;
	struct profile_values v;
	const char *region = NULL;
	char err[256];

	if (outlen == 0)
		return;
	if (cli && *cli)
		region = cli;
	if (!region)
		region = getenv_nonempty("AWS_REGION");
	if (!region)
		region = getenv_nonempty("AWS_DEFAULT_REGION");
	if (region) {
		snprintf(out, outlen, "%s", region);
		return;
	}
	init_ctx(&ctx, profile);
	snprintf(out, outlen, "%s", DEFAULT_REGION);
	if (!ctx.conf_path[0])
		return;
	if (ini_read_profile(ctx.conf_path, "shared config file", ctx.profile,
			     true, &v, err, sizeof(err)) != 0) {
		util_debug("region: %s", err);
		return;
	}
	if (v.region)
		snprintf(out, outlen, "%s", v.region);
	profile_values_clear(&v);
}
