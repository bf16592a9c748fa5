/*
 * secret: where secrets live while s3/ holds them.  Heap strings and
 * fixed-size buffers that are wiped before they are freed (a secret buffer
 * never grows, so realloc() never leaves a copy behind), a token file read
 * straight into one, and struct s3_creds filled and cleared.  Every
 * credential provider and the parsers of their answers use these; this
 * file uses none of them.
 */
#include "config.h"

#include "s3/internal.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void s3_secret_free(char *s)
{
	if (!s)
		return;
	explicit_bzero(s, strlen(s));
	free(s);
}

int s3_secret_buf_init(struct util_buf *b, size_t max)
{
	util_buf_init(b, max);
	if (max == 0 || max == SIZE_MAX)
		return EINVAL; /* util_buf would grow it without bound */
	b->data = malloc(max + 1);
	if (!b->data)
		return ENOMEM;
	b->cap = max + 1;
	b->data[0] = '\0';
	return 0;
}

void s3_secret_buf_free(struct util_buf *b)
{
	if (b->data)
		explicit_bzero(b->data, b->cap);
	util_buf_free(b);
}

int s3_token_file_read(const char *path, const char *what, struct util_buf *out,
		       char *err, size_t errlen)
{
	struct stat st;
	char ebuf[128];
	int fd = -1;
	int rc;

	memset(out, 0, sizeof(*out));
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		rc = errno;
		return util_fail(err, errlen, EINVAL, "cannot read %s %s: %s",
				 what, path,
				 util_strerror(rc, ebuf, sizeof(ebuf)));
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		rc = util_fail(err, errlen, EINVAL,
			       "%s %s is not a regular file", what, path);
		goto fail;
	}
	rc = s3_secret_buf_init(out, S3_CREDS_TOKEN_FILE_MAX);
	if (rc) {
		rc = util_fail(err, errlen, rc, "out of memory");
		goto fail;
	}
	rc = util_buf_read_all(out, fd); /* within the one allocation */
	if (rc == EFBIG) {
		rc = util_fail(err, errlen, EINVAL,
			       "%s %s is larger than %zu bytes", what, path,
			       out->max);
		goto fail;
	}
	if (rc) {
		rc = util_fail(err, errlen, EINVAL, "cannot read %s %s: %s",
			       what, path,
			       util_strerror(rc, ebuf, sizeof(ebuf)));
		goto fail;
	}
	while (out->len && isspace((unsigned char)out->data[out->len - 1]))
		out->len--;
	out->data[out->len] = '\0';
	if (out->len == 0) {
		rc = util_fail(err, errlen, EINVAL, "%s %s is empty", what,
			       path);
		goto fail;
	}
	for (size_t i = 0; i < out->len; i++) {
		unsigned char c = (unsigned char)out->data[i];

		if (c < 0x20 || c == 0x7f) {
			rc = util_fail(err, errlen, EINVAL,
				       "%s %s holds a line break or another "
				       "control character",
				       what, path);
			goto fail;
		}
	}
	rc = 0;
fail:
	if (rc)
		s3_secret_buf_free(out);
	close(fd);
	return rc;
}

int s3_creds_fill(struct s3_creds *out, const char *access_key,
		  const char *secret_key, const char *token, const char *source)
{
	out->access_key = strdup(access_key);
	out->secret_key = strdup(secret_key);
	out->session_token = token ? strdup(token) : NULL;
	out->source = source ? strdup(source) : NULL;
	if (!out->access_key || !out->secret_key || (source && !out->source) ||
	    (token && !out->session_token)) {
		s3_creds_clear(out);
		return ENOMEM;
	}
	return 0;
}

void s3_creds_clear(struct s3_creds *c)
{
	if (!c)
		return;
	free(c->access_key);
	s3_secret_free(c->secret_key);
	s3_secret_free(c->session_token);
	free(c->source);
	c->access_key = NULL;
	c->secret_key = NULL;
	c->session_token = NULL;
	c->source = NULL;
	c->expiration = 0;
	c->provider = -1;
}
