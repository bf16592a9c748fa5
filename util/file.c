/*
 * util file: writing a file whole, the one way the daemon, the tools and
 * the plugin do it.  util_replace_begin() makes a temporary file beside
 * the target (mkostemp: a name of its own, mode 0600, so a crash's
 * left-over never stands in the way); the caller writes to its fd;
 * util_replace_commit() syncs it, renames it over the target and syncs
 * the directory, so a reader sees the old file or the new one, whole;
 * any failure removes the temporary file.
 */
#include "config.h"

#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int util_write_all(int fd, const void *data, size_t len)
{
	const char *p = data;

	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int util_replace_begin(struct util_replace *r, const char *path)
{
	size_t len = strlen(path);

	r->fd = -1;
	r->path = strdup(path);
	r->tmp = malloc(len + sizeof(".XXXXXX"));
	if (!r->path || !r->tmp) {
		util_replace_abort(r);
		return ENOMEM;
	}
	memcpy(r->tmp, path, len);
	memcpy(r->tmp + len, ".XXXXXX", sizeof(".XXXXXX"));
	r->fd = mkostemp(r->tmp, O_CLOEXEC);
	if (r->fd < 0) {
		int rc = errno;

		free(r->tmp); /* (nothing was made) */
		r->tmp = NULL;
		util_replace_abort(r);
		return rc;
	}
	return 0;
}

/* The directory of path, synced: the rename is then durable too (some
 * file systems refuse, harmlessly). */
static void sync_dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	char *dir = slash ? strndup(path, (size_t)(slash - path)) : NULL;
	int fd = open(dir && *dir ? dir
		      : slash	  ? "/"
				  : ".",
		      O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd >= 0) {
		(void)fsync(fd);
		close(fd);
	}
	free(dir);
}

int util_replace_commit(struct util_replace *r)
{
	int rc = 0;

	if (fsync(r->fd) != 0)
		rc = errno;
	if (close(r->fd) != 0 && !rc)
		rc = errno;
	r->fd = -1;
	if (!rc && rename(r->tmp, r->path) != 0)
		rc = errno;
	if (rc) {
		util_replace_abort(r);
		return rc;
	}
	sync_dir_of(r->path);
	free(r->tmp);
	r->tmp = NULL;
	util_replace_abort(r); /* (frees what is left) */
	return 0;
}

int util_write_text_file(const char *path, const char *text, unsigned mode)
{
	struct util_replace r;
	int rc = util_replace_begin(&r, path);

	if (rc)
		return rc;
	rc = fchmod(r.fd, (mode_t)mode) != 0 ? errno : 0;
	if (!rc)
		rc = util_write_all(r.fd, text, strlen(text));
	if (!rc)
		rc = util_write_all(r.fd, "\n", 1);
	if (rc) {
		util_replace_abort(&r);
		return rc;
	}
	return util_replace_commit(&r);
}

void util_replace_abort(struct util_replace *r)
{
	if (r->fd >= 0)
		close(r->fd);
	r->fd = -1;
	if (r->tmp)
		unlink(r->tmp);
	free(r->tmp);
	free(r->path);
	r->tmp = NULL;
	r->path = NULL;
}
