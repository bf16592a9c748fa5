/*
 * creds: where the access key comes from, and which region to sign for.
 *
 * Credentials are looked up along a chain, a static table of providers
 * tried in order, the AWS SDKs' (botocore's) order.  A provider returns 0
 * when it produced credentials, ENOENT to pass to the next one, or another
 * errno (with a message) to stop the chain: half-set variables, a broken
 * file or a failing command are reported, not skipped, because silently
 * falling through to other credentials is worse than failing.
 *
 *   environment          AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
 *                        AWS_SESSION_TOKEN (or legacy AWS_SECURITY_TOKEN)
 *   web identity         AWS_WEB_IDENTITY_TOKEN_FILE, AWS_ROLE_ARN,
 *                        AWS_ROLE_SESSION_NAME, each else the profile's
 *                        web_identity_token_file, role_arn,
 *                        role_session_name; STS AssumeRoleWithWebIdentity
 *                        (creds_web_identity.c)
 *   shared credentials   AWS_SHARED_CREDENTIALS_FILE or ~/.aws/credentials,
 *                        section [NAME]: static keys
 *   credential_process   the profile's credential_process (creds_process.c)
 *   shared config        AWS_CONFIG_FILE or ~/.aws/config, section
 *                        [profile NAME] ([default] for the default profile):
 *                        static keys
 *   container            AWS_CONTAINER_CREDENTIALS_RELATIVE_URI or _FULL_URI
 *                        (creds_container.c)
 *   instance metadata    EC2 IMDSv2, unless AWS_EC2_METADATA_DISABLED
 *                        (creds_imds.c)
 *
 * The profile is the argument, else AWS_PROFILE, else "default".  Its
 * values come from both files, the credentials file's winning (botocore
 * merges it over the config file), so credential_process and the web
 * identity keys may sit in either.  A profile named explicitly that exists
 * in neither file is an error, raised by the config provider once both
 * files have been seen.  Missing files are fine.  A profile that exists but
 * can only be used in ways s3pipe does not support (role_arn through
 * source_profile or credential_source, SSO) ends the chain there with
 * ENOENT and says so: container or instance credentials must not stand in
 * for the role the user configured.
 *
 * The files are parsed like botocore's configparser: '#' and ';' start
 * comment lines (there are no inline comments, a value may contain '#'),
 * keys and values are separated by '=' or ':', whitespace around section
 * names, keys and values is dropped, keys are case-insensitive, indented
 * lines other than section headers continue the previous value (nested
 * "s3 =" blocks) and are skipped, a later value overrides an earlier one.
 * A file holding a secret key or token that group or others may read is
 * warned about, once per file.
 *
 * Credentials that come with an expiration (every provider but the static
 * ones) carry it in s3_creds.expiration; s3_creds_refresh() asks the same
 * provider again.  Credentials already expired are refused.
 *
 * Secrets only ever live in heap strings that are wiped before they are
 * freed, and they never appear in a message: messages name files, profiles,
 * keys and line numbers, never values.
 */
#include "config.h"

#include "s3/internal.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_PROFILE "default"
#define DEFAULT_REGION	"us-east-1"
#define WARNED_MAX	16 /* files warned about, by device and inode */

/* The profile keys s3pipe reads. */
enum profile_key {
	KEY_ACCESS_KEY,
	KEY_SECRET_KEY,
	KEY_SESSION_TOKEN,
	KEY_REGION,
	KEY_ROLE_ARN,
	KEY_WEB_IDENTITY_TOKEN_FILE,
	KEY_ROLE_SESSION_NAME,
	KEY_CREDENTIAL_PROCESS,
	KEY_SSO_SESSION,
	KEY_SSO_START_URL,
	NKEYS
};

static const struct {
	const char *name;
	bool secret;
} profile_keys[NKEYS] = {
    [KEY_ACCESS_KEY] = {"aws_access_key_id", true},
    [KEY_SECRET_KEY] = {"aws_secret_access_key", true},
    [KEY_SESSION_TOKEN] = {"aws_session_token", true},
    [KEY_REGION] = {"region", false},
    [KEY_ROLE_ARN] = {"role_arn", false},
    [KEY_WEB_IDENTITY_TOKEN_FILE] = {"web_identity_token_file", false},
    [KEY_ROLE_SESSION_NAME] = {"role_session_name", false},
    [KEY_CREDENTIAL_PROCESS] = {"credential_process", true},
    [KEY_SSO_SESSION] = {"sso_session", false},
    [KEY_SSO_START_URL] = {"sso_start_url", false},
};

/* What one file says about one profile. */
struct profile_values {
	bool found;	 /* the profile's section exists */
	bool has_secret; /* the file holds a secret key or token somewhere */
	char *v[NKEYS];	 /* NULL when absent */
};

enum { CRED_FILE, CONF_FILE, NFILES };

static const char *const file_what[NFILES] = {"shared credentials file",
					      "shared config file"};

struct creds_ctx {
	const struct s3_creds_query *q;
	const char *profile;
	bool explicit_profile;	     /* named by the caller or AWS_PROFILE */
	char path[NFILES][PATH_MAX]; /* "" when unknown (no HOME) */
	bool loaded[NFILES];
	struct profile_values values[NFILES];
	bool stop; /* a provider found the profile unusable: end the chain */
	/* why a profile that exists gave no credentials, or "" */
	char unsupported[PATH_MAX + 256];
	char note[384]; /* what instance metadata said, or "" */
};

typedef int creds_provider_fn(struct creds_ctx *ctx, struct s3_creds *out,
			      char *err, size_t errlen);

/* ---- the shared files ---- */

static void profile_values_clear(struct profile_values *v)
{
	for (size_t i = 0; i < NKEYS; i++) {
		if (profile_keys[i].secret)
			s3_secret_free(v->v[i]);
		else
			free(v->v[i]);
	}
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
		s3_secret_free(*slot);
	else
		free(*slot);
	*slot = copy;
	return 0;
}

/* Whether key names a secret the file should not show to others. */
static bool key_is_secret(const char *key)
{
	return strcasecmp(key, "aws_secret_access_key") == 0 ||
	       strcasecmp(key, "aws_session_token") == 0 ||
	       strcasecmp(key, "aws_security_token") == 0;
}

static int store_key(struct profile_values *v, const char *key,
		     const char *value)
{
	size_t i;

	/* Legacy name; aws_session_token wins when both are present. */
	if (strcasecmp(key, "aws_security_token") == 0) {
		if (v->v[KEY_SESSION_TOKEN])
			return 0;
		return set_value(&v->v[KEY_SESSION_TOKEN], value, true);
	}
	for (i = 0; i < NKEYS; i++)
		if (strcasecmp(key, profile_keys[i].name) == 0)
			return set_value(&v->v[i], value,
					 profile_keys[i].secret);
	return 0;
}

static pthread_mutex_t warned_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	dev_t dev;
	ino_t ino;
} warned[WARNED_MAX];
static size_t nwarned;

/* A file with secrets that group or others can read: say so, once. */
static void check_permissions(int fd, const char *path, const char *what)
{
	struct stat st;
	bool seen = false;
	size_t i;

	if (fstat(fd, &st) != 0 || !(st.st_mode & (S_IRGRP | S_IROTH)))
		return;
	pthread_mutex_lock(&warned_lock);
	for (i = 0; i < nwarned; i++)
		if (warned[i].dev == st.st_dev && warned[i].ino == st.st_ino)
			seen = true;
	if (!seen && nwarned < WARNED_MAX) {
		warned[nwarned].dev = st.st_dev;
		warned[nwarned].ino = st.st_ino;
		nwarned++;
	}
	pthread_mutex_unlock(&warned_lock);
	if (!seen)
		util_warn("%s %s is readable by group or others; chmod 600 it",
			  what, path);
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
		return util_fail(err, errlen, EINVAL, "cannot read %s %s: %s",
				 what, path,
				 util_strerror(rc, ebuf, sizeof(ebuf)));
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
				rc = util_fail(
				    err, errlen, EINVAL,
				    "cannot read %s %s: %s", what, path,
				    util_strerror(rc, ebuf, sizeof(ebuf)));
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
				rc = util_fail(err, errlen, EINVAL,
					       "malformed section header at "
					       "line %lu of %s %s",
					       lineno, what, path);
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
			rc = util_fail(err, errlen, EINVAL,
				       "malformed line %lu of %s %s: expected "
				       "KEY = VALUE",
				       lineno, what, path);
			goto fail;
		}
		have_key = true;
		*sep = '\0';
		if (key_is_secret(trim(s)) && *trim(sep + 1))
			v->has_secret = true;
		if (!in_section)
			continue;
		rc = store_key(v, trim(s), trim(sep + 1));
		if (rc)
			goto fail;
	}
	if (v->has_secret)
		check_permissions(fileno(f), path, what);
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

/* Reads file i of ctx once.  0, or EINVAL / ENOMEM with a message. */
static int load_file(struct creds_ctx *ctx, int i, char *err, size_t errlen)
{
	int rc;

	if (ctx->loaded[i] || !ctx->path[i][0])
		return 0;
	rc = ini_read_profile(ctx->path[i], file_what[i], ctx->profile,
			      i == CONF_FILE, &ctx->values[i], err, errlen);
	if (rc == ENOMEM)
		return util_fail(err, errlen, ENOMEM, "out of memory");
	if (!rc)
		ctx->loaded[i] = true;
	return rc;
}

static int load_profile(struct creds_ctx *ctx, char *err, size_t errlen)
{
	int rc = load_file(ctx, CRED_FILE, err, errlen);

	return rc ? rc : load_file(ctx, CONF_FILE, err, errlen);
}

/* The profile's value for key, the credentials file's first; *file says
 * which file (may be NULL).  NULL when neither has it. */
static const char *profile_get(const struct creds_ctx *ctx,
			       enum profile_key key, int *file)
{
	for (int i = 0; i < NFILES; i++) {
		if (ctx->values[i].v[key]) {
			if (file)
				*file = i;
			return ctx->values[i].v[key];
		}
	}
	return NULL;
}

/* ---- the providers ---- */

static int provider_env(struct creds_ctx *ctx, struct s3_creds *out, char *err,
			size_t errlen)
{
	const char *ak = getenv_nonempty("AWS_ACCESS_KEY_ID");
	const char *sk = getenv_nonempty("AWS_SECRET_ACCESS_KEY");
	const char *token = getenv_nonempty("AWS_SESSION_TOKEN");

	(void)ctx;
	if (!token)
		token = getenv_nonempty("AWS_SECURITY_TOKEN");
	if (!ak && !sk)
		return ENOENT;
	if (!sk)
		return util_fail(err, errlen, EINVAL,
				 "AWS_ACCESS_KEY_ID is set but "
				 "AWS_SECRET_ACCESS_KEY is not");
	if (!ak)
		return util_fail(err, errlen, EINVAL,
				 "AWS_SECRET_ACCESS_KEY is set but "
				 "AWS_ACCESS_KEY_ID is not");
	return s3_creds_fill(out, ak, sk, token, "environment");
}

/* Each of the three from the environment, else from the profile
 * (botocore's rule: the environment wins key by key). */
static int provider_web_identity(struct creds_ctx *ctx, struct s3_creds *out,
				 char *err, size_t errlen)
{
	struct s3_web_identity w = {
	    .token_file = getenv_nonempty("AWS_WEB_IDENTITY_TOKEN_FILE"),
	    .role_arn = getenv_nonempty("AWS_ROLE_ARN"),
	    .session_name = getenv_nonempty("AWS_ROLE_SESSION_NAME"),
	};
	bool from_env = w.token_file != NULL;
	int rc = load_profile(ctx, err, errlen);

	if (rc)
		return rc;
	if (!w.token_file)
		w.token_file =
		    profile_get(ctx, KEY_WEB_IDENTITY_TOKEN_FILE, NULL);
	if (!w.token_file)
		return ENOENT;
	if (!w.role_arn)
		w.role_arn = profile_get(ctx, KEY_ROLE_ARN, NULL);
	if (!w.session_name)
		w.session_name = profile_get(ctx, KEY_ROLE_SESSION_NAME, NULL);
	if (!w.role_arn && from_env)
		return util_fail(
		    err, errlen, EINVAL,
		    "AWS_WEB_IDENTITY_TOKEN_FILE is set but no "
		    "role to assume: set AWS_ROLE_ARN, or role_arn "
		    "in profile '%s'",
		    ctx->profile);
	if (!w.role_arn)
		return util_fail(err, errlen, EINVAL,
				 "profile '%s' has web_identity_token_file but "
				 "no role_arn (and AWS_ROLE_ARN is not set)",
				 ctx->profile);
	return s3_creds_web_identity(ctx->q, &w, out, err, errlen);
}

/* Static keys from one of the files. */
static int provider_file(struct creds_ctx *ctx, int file, struct s3_creds *out,
			 char *err, size_t errlen)
{
	const struct profile_values *v = &ctx->values[file];
	const char *what = file_what[file];
	const char *path = ctx->path[file];
	const char *ak;
	const char *sk;
	struct util_buf source;
	int rc = load_file(ctx, file, err, errlen);

	if (rc)
		return rc;
	ak = v->v[KEY_ACCESS_KEY];
	sk = v->v[KEY_SECRET_KEY];
	if (!ak && !sk)
		return ENOENT;
	if (!ak || !sk)
		return util_fail(
		    err, errlen, EINVAL,
		    "profile '%s' in %s %s has %s but no %s", ctx->profile,
		    what, path,
		    ak ? "aws_access_key_id" : "aws_secret_access_key",
		    ak ? "aws_secret_access_key" : "aws_access_key_id");
	util_buf_init(&source, 0);
	rc = util_buf_printf(&source, "%s %s (profile %s)", what, path,
			     ctx->profile);
	if (!rc)
		rc = s3_creds_fill(out, ak, sk, v->v[KEY_SESSION_TOKEN],
				   source.data);
	util_buf_free(&source);
	if (rc)
		return util_fail(err, errlen, rc, "out of memory");
	return 0;
}

static int provider_credentials_file(struct creds_ctx *ctx,
				     struct s3_creds *out, char *err,
				     size_t errlen)
{
	return provider_file(ctx, CRED_FILE, out, err, errlen);
}

static int provider_process(struct creds_ctx *ctx, struct s3_creds *out,
			    char *err, size_t errlen)
{
	const char *command;
	int rc = load_profile(ctx, err, errlen);

	if (rc)
		return rc;
	command = profile_get(ctx, KEY_CREDENTIAL_PROCESS, NULL);
	if (!command)
		return ENOENT;
	return s3_creds_process(command, ctx->profile,
				S3_CREDS_PROCESS_TIMEOUT_MS, out, err, errlen);
}

/*
 * A profile that is there but configured for something s3pipe cannot do:
 * the reason into ctx->unsupported, and the chain stops (ENOENT).
 */
static int profile_unsupported(struct creds_ctx *ctx)
{
	static const struct {
		enum profile_key key;
		const char *why;
	} checks[] = {
	    {KEY_ROLE_ARN, "role_arn, which s3pipe does not support without "
			   "web_identity_token_file (assume role through "
			   "source_profile or credential_source)"},
	    {KEY_SSO_SESSION, "sso_session, which s3pipe does not support"},
	    {KEY_SSO_START_URL, "sso_start_url, which s3pipe does not "
				"support"},
	};
	size_t i;
	int file;

	for (i = 0; i < sizeof(checks) / sizeof(checks[0]); i++) {
		if (!profile_get(ctx, checks[i].key, &file))
			continue;
		util_fail(ctx->unsupported, sizeof(ctx->unsupported), ENOENT,
			  "profile '%s' in %s uses %s; export temporary "
			  "credentials into the environment instead",
			  ctx->profile, ctx->path[file], checks[i].why);
		ctx->stop = true;
		return ENOENT;
	}
	return ENOENT;
}

/* Also the place where a missing explicit profile is reported: both shared
 * files have been read by now. */
static int provider_config_file(struct creds_ctx *ctx, struct s3_creds *out,
				char *err, size_t errlen)
{
	const char *cred = ctx->path[CRED_FILE];
	const char *conf = ctx->path[CONF_FILE];
	int rc = load_profile(ctx, err, errlen);

	if (!rc)
		rc = provider_file(ctx, CONF_FILE, out, err, errlen);
	if (rc != ENOENT)
		return rc;
	if (ctx->values[CRED_FILE].found || ctx->values[CONF_FILE].found)
		return profile_unsupported(ctx);
	if (!ctx->explicit_profile)
		return ENOENT;
	if (cred[0] && conf[0])
		return util_fail(err, errlen, EINVAL,
				 "profile '%s' not found in %s, %s",
				 ctx->profile, cred, conf);
	if (cred[0] || conf[0])
		return util_fail(err, errlen, EINVAL,
				 "profile '%s' not found in %s", ctx->profile,
				 cred[0] ? cred : conf);
	return util_fail(err, errlen, EINVAL,
			 "profile '%s' not found: no shared credentials or "
			 "config file (HOME is not set)",
			 ctx->profile);
}

static int provider_container(struct creds_ctx *ctx, struct s3_creds *out,
			      char *err, size_t errlen)
{
	return s3_creds_container(ctx->q, out, err, errlen);
}

static int provider_imds(struct creds_ctx *ctx, struct s3_creds *out, char *err,
			 size_t errlen)
{
	return s3_creds_imds(ctx->q, out, ctx->note, sizeof(ctx->note), err,
			     errlen);
}

static const struct {
	const char *name;
	creds_provider_fn *fn;
} providers[] = {
    {"environment", provider_env},
    {"web identity", provider_web_identity},
    {"shared credentials file", provider_credentials_file},
    {"credential_process", provider_process},
    {"shared config file", provider_config_file},
    {"container credentials", provider_container},
    {"instance metadata", provider_imds},
};

#define NPROVIDERS (sizeof(providers) / sizeof(providers[0]))

/* ---- the chain ---- */

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

static void ctx_init(struct creds_ctx *ctx, const struct s3_creds_query *q)
{
	memset(ctx, 0, sizeof(*ctx));
	ctx->q = q;
	ctx->profile =
	    profile_name(q ? q->profile : NULL, &ctx->explicit_profile);
	resolve_path("AWS_SHARED_CREDENTIALS_FILE", "credentials",
		     ctx->path[CRED_FILE], sizeof(ctx->path[CRED_FILE]));
	resolve_path("AWS_CONFIG_FILE", "config", ctx->path[CONF_FILE],
		     sizeof(ctx->path[CONF_FILE]));
}

static void ctx_free(struct creds_ctx *ctx)
{
	for (int i = 0; i < NFILES; i++)
		profile_values_clear(&ctx->values[i]);
}

/* Runs provider i; credentials that have expired already are an error. */
static int run_provider(struct creds_ctx *ctx, size_t i, struct s3_creds *out,
			char *err, size_t errlen)
{
	char when[32];
	int rc = providers[i].fn(ctx, out, err, errlen);

	if (rc)
		return rc;
	out->provider = (int)i;
	if (out->expiration && out->expiration <= time(NULL)) {
		s3_creds_format_time(out->expiration, when, sizeof(when));
		rc = util_fail(err, errlen, EINVAL,
			       "the credentials from %s expired at %s",
			       out->source ? out->source : providers[i].name,
			       when);
		s3_creds_clear(out);
		return rc;
	}
	if (out->expiration) {
		s3_creds_format_time(out->expiration, when, sizeof(when));
		util_debug("credentials from %s, valid until %s", out->source,
			   when);
	} else {
		util_debug("credentials from %s", out->source);
	}
	return 0;
}

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
	ctx_init(&ctx, q);
	for (i = 0; i < NPROVIDERS && !ctx.stop; i++) {
		rc = run_provider(&ctx, i, out, err, errlen);
		if (rc == 0)
			goto done;
		if (rc != ENOENT) {
			util_debug("credential provider '%s' failed",
				   providers[i].name);
			goto done;
		}
	}
	if (ctx.unsupported[0])
		util_fail(err, errlen, ENOENT, "no credentials found: %s",
			  ctx.unsupported);
	else
		util_fail(err, errlen, ENOENT,
			  "no credentials found%s%s%s: set AWS_ACCESS_KEY_ID "
			  "and AWS_SECRET_ACCESS_KEY, or add aws_access_key_id "
			  "and aws_secret_access_key to profile '%s' in %s",
			  ctx.note[0] ? " (instance metadata: " : "", ctx.note,
			  ctx.note[0] ? ")" : "", ctx.profile,
			  ctx.path[CRED_FILE][0] ? ctx.path[CRED_FILE]
						 : "~/.aws/credentials");
	rc = ENOENT;
done:
	ctx_free(&ctx);
	return rc;
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
	ctx_init(&ctx, q);
	rc = run_provider(&ctx, (size_t)old->provider, out, err, errlen);
	if (rc == ENOENT)
		util_fail(err, errlen, ENOENT,
			  "%s no longer gives credentials%s%s",
			  providers[old->provider].name,
			  ctx.note[0] ? ": " : "", ctx.note);
	if (rc)
		out->provider = -1;
	ctx_free(&ctx);
	return rc;
}

void s3_region_resolve(const char *cli, const char *profile, char *out,
		       size_t outlen)
{
	struct creds_ctx ctx;
	struct s3_creds_query q = {.profile = profile};
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
	ctx_init(&ctx, &q);
	snprintf(out, outlen, "%s", DEFAULT_REGION);
	if (load_file(&ctx, CONF_FILE, err, sizeof(err)) != 0)
		util_debug("region: %s", err);
	else if (ctx.values[CONF_FILE].v[KEY_REGION])
		snprintf(out, outlen, "%s",
			 ctx.values[CONF_FILE].v[KEY_REGION]);
	ctx_free(&ctx);
}
