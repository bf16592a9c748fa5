/*
 * util file: reading and writing files whole, the one way the daemon, the
 * tools and the plugin do it.
 *
 * Writing: util_write_all() and util_writev_all() resume after short
 * writes and EINTR.  util_replace_begin() makes a temporary file beside
 * the target (mkostemp: a name of its own, mode 0600, so a crash's
 * left-over never stands in the way); the caller writes to its fd;
 * util_replace_commit() syncs it, renames it over the target and syncs
 * the directory, so a reader sees the old file or the new one, whole;
 * any failure removes the temporary file.
 *
 * Reading: util_buf_read() is one read() into a bounded util_buf (one
 * byte past the bound is read, to tell "exactly max" from "more", and
 * wiped); util_buf_read_all() repeats it to the end; util_read_file()
 * opens a path and reads it whole, sized up front for a regular file.
 * A buffer made whole before the first read (a secret buffer, cap past
 * max) is never reallocated, so no copy of its bytes is left in freed
 * memory.
 */
#include "config.h"

#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#define READ_CHUNK 4096 /* the first read of a file of unknown size */

uint64_t util_fnv1a(uint64_t h, const void *p, size_t len)
{
	const unsigned char *c = p;

	for (size_t i = 0; i < len; i++)
		h = (h ^ c[i]) * 0x100000001b3ULL;
	return h;
}

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

int util_writev_all(int fd, const struct iovec *iov, int count)
{
	size_t done = 0; /* bytes of iov[0] already written */

	while (count > 0) {
		ssize_t n;

		if (iov->iov_len == done) {
			iov++;
			count--;
			done = 0;
			continue;
		}
		if (done) /* a short write stopped inside iov[0] */
			n = write(fd, (const char *)iov->iov_base + done,
				  iov->iov_len - done);
		else
			n = writev(fd, iov, count < IOV_MAX ? count : IOV_MAX);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno;
		done += (size_t)n;
		while (count > 0 && done >= iov->iov_len) {
			done -= iov->iov_len;
			iov++;
			count--;
		}
	}
	return 0;
}

ssize_t util_buf_read(struct util_buf *b, int fd)
{
	size_t room = b->cap > b->len + 1 ? b->cap - b->len - 1 : READ_CHUNK;
	char *p;
	ssize_t n;

	if (b->max && b->len >= b->max) {
		char extra;

		n = read(fd, &extra, 1);
		if (n > 0) {
			explicit_bzero(&extra, sizeof(extra));
			errno = EFBIG;
			return -1;
		}
		return n;
	}
	if (b->max && room > b->max - b->len)
		room = b->max - b->len;
	p = util_buf_reserve(b, room);
	if (!p)
		return -1;
	n = read(fd, p, room);
	util_buf_commit(b, n > 0 ? (size_t)n : 0);
	return n;
}

int util_buf_read_all(struct util_buf *b, int fd)
{
	for (;;) {
		ssize_t n = util_buf_read(b, fd);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno;
		if (n == 0)
			return 0;
	}
}

int util_read_file(const char *path, size_t max, char **out, size_t *len)
{
	struct util_buf b;
	struct stat st;
	int fd;
	int rc;

	*out = NULL;
	*len = 0;
	if (max == 0 || max == SIZE_MAX)
		return EINVAL;
	util_buf_init(&b, max);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return errno;
	if (fstat(fd, &st) != 0) {
		rc = errno;
	} else if (S_ISREG(st.st_mode) && (uint64_t)st.st_size > max) {
		rc = EFBIG;
	} else {
		/* a regular file's size (and a byte to see its end) at once;
		 * /proc's files say 0 and are read as a pipe would be */
		size_t want = S_ISREG(st.st_mode) ? (size_t)st.st_size : 0;

		if (want && want < max)
			want++;
		rc = want && !util_buf_reserve(&b, want) ? errno : 0;
		if (!rc)
			rc = util_buf_read_all(&b, fd);
	}
	close(fd);
	if (!rc && !b.data && !util_buf_reserve(&b, 0))
		rc = errno; /* an empty file is "" all the same */
	if (rc) {
		util_buf_free(&b);
		return rc;
	}
	util_buf_commit(&b, 0);
	*len = b.len;
	*out = util_buf_take(&b);
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

int util_sync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int rc = 0;

	if (fd < 0)
		return errno;
	if (fsync(fd) != 0)
		rc = errno;
	close(fd);
	return rc;
}

/* The directory of path, synced: the rename is then durable too (some
 * file systems refuse, harmlessly). */
static void sync_dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	char *dir = slash ? strndup(path, (size_t)(slash - path)) : NULL;

	(void)util_sync_dir(dir && *dir ? dir : slash ? "/" : ".");
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
