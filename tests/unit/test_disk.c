/*
 * test_disk: the disk tier (store/disk.h): its block file format with
 * damaged, short, long, foreign and temporary files; its index, budget,
 * admission and start-up scan; and the store itself, wrapped over the
 * serving test store (tests/unit/test_store.h), for hits, misses, partial
 * runs, eviction to the size, a restart, an ETag change, a second tier
 * on the same directory and a read-only one.
 *
 * Every test works in a fresh directory under $TMPDIR, removed at the end.
 */
#include "config.h"

#include "store/disk_internal.h"
#include "tests/unit/test_store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#define BS   (64u * 1024u) /* block size of every test */
#define ETAG "\"e1\""

/* ---- a scratch directory ---- */

static char scratch[256]; /* the test's DIR */
static char blocks[300];  /* DIR/s3pipe */

static int setup_dir(void **state)
{
	const char *tmp = getenv("TMPDIR");

	(void)state;
	snprintf(scratch, sizeof(scratch), "%s/test_disk.XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(scratch))
		return -1;
	snprintf(blocks, sizeof(blocks), "%s/%s", scratch, DISK_STORE_SUBDIR);
	return 0;
}

static void remove_tree(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *de;
	char sub[600];

	while (d && (de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name);
		if (unlink(sub) != 0)
			remove_tree(sub);
	}
	if (d)
		closedir(d);
	rmdir(path);
}

static int teardown_dir(void **state)
{
	(void)state;
	remove_tree(scratch);
	return 0;
}

/* An open DIR/s3pipe for the file-level tests. */
static int blocks_fd(void)
{
	int fd;

	mkdir(blocks, 0700);
	fd = open(blocks, O_RDONLY | O_DIRECTORY);
	assert_true(fd >= 0);
	return fd;
}

static void fill(char *p, size_t len, const char *key, uint64_t off)
{
	for (size_t i = 0; i < len; i++)
		p[i] = (char)test_store_byte(key, off + i);
}

static void key_of(struct disk_store_key *k, const char *key, const char *etag,
		   uint64_t index)
{
	assert_true(disk_store_key_init(k, "bkt", key, etag, BS, index));
}

static void path_of(const struct disk_store_key *k, char *out, size_t len)
{
	char name[DISK_STORE_NAME_MAX];

	disk_store_file_name(k->id, k->index, name);
	snprintf(out, len, "%s/%s", blocks, name);
}

/* Rewrites byte off of a file with its complement. */
static void flip_byte(const char *path, off_t off)
{
	int fd = open(path, O_RDWR);
	unsigned char c;

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &c, 1, off), 1);
	c = (unsigned char)~c;
	assert_int_equal(pwrite(fd, &c, 1, off), 1);
	close(fd);
}

/* ---- the file format ---- */

static void test_keys_and_names(void **state)
{
	struct disk_store_key k, k2;
	char name[DISK_STORE_NAME_MAX], longkey[DISK_STORE_KEY_MAX + 2];
	unsigned char id[DISK_STORE_ID_LEN];
	uint64_t index = 0;

	(void)state;
	assert_false(disk_store_key_init(&k, "bkt", "k", NULL, BS, 0));
	assert_false(disk_store_key_init(&k, "bkt", "k", "", BS, 0));
	memset(longkey, 'x', sizeof(longkey) - 1);
	longkey[sizeof(longkey) - 1] = '\0';
	assert_false(disk_store_key_init(&k, "bkt", longkey, ETAG, BS, 0));
	key_of(&k, "a/b", ETAG, 7);
	/* the id names (bucket, key, etag, block size), not the index */
	key_of(&k2, "a/b", ETAG, 8);
	assert_memory_equal(k.id, k2.id, DISK_STORE_ID_LEN);
	key_of(&k2, "a/b", "\"e2\"", 7);
	assert_memory_not_equal(k.id, k2.id, DISK_STORE_ID_LEN);
	assert_true(disk_store_key_init(&k2, "bkt", "a/b", ETAG, 2 * BS, 7));
	assert_memory_not_equal(k.id, k2.id, DISK_STORE_ID_LEN);

	disk_store_file_name(k.id, 0x123456789aULL, name);
	assert_int_equal(strlen(name), 32 + 1 + 16 + 3);
	assert_int_equal(disk_store_name_parse(name, id, &index),
			 DISK_STORE_NAME_BLOCK);
	assert_memory_equal(id, k.id, DISK_STORE_ID_LEN);
	assert_true(index == 0x123456789aULL);
	strcat(name, ".tmp1");
	assert_int_equal(disk_store_name_parse(name, id, &index),
			 DISK_STORE_NAME_TEMP);
	name[strlen(name) - 5] = '\0';
	name[strlen(name) - 1] = '7'; /* ".b7": another format */
	assert_int_equal(disk_store_name_parse(name, id, &index),
			 DISK_STORE_NAME_OLD);
	strcat(name, "x");
	assert_int_equal(disk_store_name_parse(name, id, &index),
			 DISK_STORE_NAME_OTHER);
	assert_int_equal(disk_store_name_parse("lock", id, &index),
			 DISK_STORE_NAME_OTHER);
	assert_int_equal(disk_store_name_parse("", id, &index),
			 DISK_STORE_NAME_OTHER);
	name[5] = 'G'; /* not hex */
	assert_int_equal(disk_store_name_parse(name, id, &index),
			 DISK_STORE_NAME_OTHER);
}

static void test_header(void **state)
{
	unsigned char hdr[DISK_STORE_HEADER_MAX];
	struct disk_store_key k, other;
	const char *why = NULL;
	uint32_t crc = 0;
	unsigned kind = 0;
	size_t len;

	(void)state;
	key_of(&k, "key", ETAG, 3);
	len = disk_store_header_len(&k);
	assert_int_equal(len, DISK_STORE_HEADER_FIXED + 3 + 3 + 4);
	disk_store_header_encode(&k, 1000, DISK_STORE_SUM_CRC32, 0xdeadbeef,
				 hdr);
	assert_int_equal(
	    disk_store_header_check(hdr, len, &k, 1000, &kind, &crc, &why), 0);
	assert_true(crc == 0xdeadbeef);
	assert_int_equal(kind, DISK_STORE_SUM_CRC32);
	/* another length, block, ETag */
	assert_int_equal(
	    disk_store_header_check(hdr, len, &k, 999, &kind, &crc, &why),
	    EBADMSG);
	key_of(&other, "key", ETAG, 4);
	assert_int_equal(
	    disk_store_header_check(hdr, len, &other, 1000, &kind, &crc, &why),
	    EBADMSG);
	key_of(&other, "key", "\"e9\"", 3);
	assert_int_equal(
	    disk_store_header_check(hdr, len, &other, 1000, &kind, &crc, &why),
	    EBADMSG);
	assert_string_equal(why, "names another block");
	/* a checksum nobody computes */
	disk_store_header_encode(&k, 1000, 7, 0xdeadbeef, hdr);
	assert_int_equal(
	    disk_store_header_check(hdr, len, &k, 1000, &kind, &crc, &why),
	    EBADMSG);
	disk_store_header_encode(&k, 1000, DISK_STORE_SUM_CRC32, 0xdeadbeef,
				 hdr);
	/* any flipped bit */
	for (size_t i = 0; i < len; i++) {
		hdr[i] ^= 0x10;
		assert_int_equal(disk_store_header_check(hdr, len, &k, 1000,
							 &kind, &crc, &why),
				 EBADMSG);
		assert_non_null(why);
		hdr[i] ^= 0x10;
	}
}

/* Bit by bit, for the checks. */
static uint32_t crc32c_ref(const unsigned char *p, size_t n)
{
	uint32_t c = 0xffffffffu;

	while (n--) {
		c ^= *p++;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
	}
	return ~c;
}

static void test_checksums(void **state)
{
	const size_t big = (1u << 20) + 12345;
	unsigned char *data = malloc(big);

	(void)state;
	assert_true(disk_store_sum(DISK_STORE_SUM_CRC32, "123456789", 9) ==
		    0xcbf43926u);
	if (disk_store_sum_kind() != DISK_STORE_SUM_CRC32C) {
		print_message("no CRC-32C instruction here: zlib's crc32\n");
		free(data);
		return;
	}
	assert_true(disk_store_sum(DISK_STORE_SUM_CRC32C, "123456789", 9) ==
		    0xe3069283u);
	fill((char *)data, big, "sums", 0);
	/* one stream below 12K, three above: every split point */
	for (size_t n = 0; n < 40000; n += 331)
		assert_true(disk_store_sum(DISK_STORE_SUM_CRC32C, data, n) ==
			    crc32c_ref(data, n));
	for (size_t n = big - 24; n <= big; n++)
		assert_true(disk_store_sum(DISK_STORE_SUM_CRC32C, data, n) ==
			    crc32c_ref(data, n));
	free(data);
}

static void test_file_roundtrip_and_damage(void **state)
{
	char data[3000], out[3000], path[600];
	struct disk_store_key k, other;
	const char *why = NULL;
	int dirfd = blocks_fd();

	(void)state;
	fill(data, sizeof(data), "obj", 0);
	key_of(&k, "obj", ETAG, 0);
	assert_int_equal(
	    disk_store_block_read(dirfd, &k, out, sizeof(out), &why), ENOENT);
	assert_int_equal(
	    disk_store_block_write(dirfd, &k, data, sizeof(data), 0), 0);
	assert_int_equal(
	    disk_store_block_read(dirfd, &k, out, sizeof(out), &why), 0);
	assert_memory_equal(data, out, sizeof(data));
	/* a file written with zlib's crc32 (on a host without CRC-32C) */
	{
		unsigned char hdr[DISK_STORE_HEADER_MAX];
		size_t hl = disk_store_header_len(&k);
		int fd;

		disk_store_header_encode(
		    &k, sizeof(data), DISK_STORE_SUM_CRC32,
		    disk_store_sum(DISK_STORE_SUM_CRC32, data, sizeof(data)),
		    hdr);
		path_of(&k, path, sizeof(path));
		fd = open(path, O_WRONLY | O_TRUNC);
		assert_true(fd >= 0);
		assert_int_equal(write(fd, hdr, hl), (ssize_t)hl);
		assert_int_equal(write(fd, data, sizeof(data)),
				 (ssize_t)sizeof(data));
		close(fd);
		memset(out, 0, sizeof(out));
		assert_int_equal(
		    disk_store_block_read(dirfd, &k, out, sizeof(out), &why),
		    0);
		assert_memory_equal(data, out, sizeof(data));
	}
	/* asked for another length: not this block */
	assert_int_equal(disk_store_block_read(dirfd, &k, out, 2000, &why),
			 EBADMSG);

	/* a flipped data byte */
	path_of(&k, path, sizeof(path));
	flip_byte(path, (off_t)disk_store_header_len(&k) + 1234);
	assert_int_equal(
	    disk_store_block_read(dirfd, &k, out, sizeof(out), &why), EBADMSG);
	assert_string_equal(why, "checksum mismatch");

	/* truncated */
	assert_int_equal(
	    disk_store_block_write(dirfd, &k, data, sizeof(data), 0), 0);
	assert_int_equal(truncate(path, 1000), 0);
	assert_int_equal(
	    disk_store_block_read(dirfd, &k, out, sizeof(out), &why), EBADMSG);
	assert_string_equal(why, "short file");
	assert_int_equal(truncate(path, 10), 0);
	assert_int_equal(
	    disk_store_block_read(dirfd, &k, out, sizeof(out), &why), EBADMSG);

	/* too long */
	assert_int_equal(
	    disk_store_block_write(dirfd, &k, data, sizeof(data), 0), 0);
	assert_int_equal(truncate(path, (off_t)(disk_store_header_len(&k) +
						sizeof(data) + 1)),
			 0);
	assert_int_equal(
	    disk_store_block_read(dirfd, &k, out, sizeof(out), &why), EBADMSG);
	assert_string_equal(why, "file too long");

	/* a damaged header */
	assert_int_equal(
	    disk_store_block_write(dirfd, &k, data, sizeof(data), 0), 0);
	flip_byte(path, 20);
	assert_int_equal(
	    disk_store_block_read(dirfd, &k, out, sizeof(out), &why), EBADMSG);

	/* another ETag's file under this name: the header tells */
	key_of(&other, "obj", "\"e2\"", 0);
	assert_int_equal(
	    disk_store_block_write(dirfd, &other, data, sizeof(data), 0), 0);
	{
		char from[600];

		path_of(&other, from, sizeof(from));
		assert_int_equal(rename(from, path), 0);
	}
	assert_int_equal(
	    disk_store_block_read(dirfd, &k, out, sizeof(out), &why), EBADMSG);
	assert_string_equal(why, "names another block");
	close(dirfd);
}

/* ---- the index ---- */

static void test_index_budget_and_pins(void **state)
{
	struct disk_store_index ix;
	struct disk_store_entry *a, *b, *c;
	unsigned char id[DISK_STORE_ID_LEN] = {1};

	(void)state;
	assert_int_equal(disk_store_index_init(&ix, 10 * 4096, 4096), 0);
	assert_true(disk_store_index_cost(&ix, 1) == 4096);
	assert_true(disk_store_index_cost(&ix, 4096) == 4096);
	assert_true(disk_store_index_cost(&ix, 4097) == 8192);
	a = disk_store_index_add(&ix, id, 0, 5000);
	b = disk_store_index_add(&ix, id, 1, 100);
	c = disk_store_index_add(&ix, id, 2, 100);
	assert_true(ix.used == 4 * 4096);
	assert_ptr_equal(disk_store_index_find(&ix, id, 1), b);
	assert_null(disk_store_index_find(&ix, id, 3));
	/* coldest first; a pinned entry is skipped */
	assert_ptr_equal(disk_store_index_victim(&ix), a);
	a->pins++;
	assert_ptr_equal(disk_store_index_victim(&ix), b);
	disk_store_index_touch(&ix, b);
	assert_ptr_equal(disk_store_index_victim(&ix), c);
	/* removed while pinned: out of the table, freed by the last unpin */
	disk_store_index_remove(&ix, a);
	assert_null(disk_store_index_find(&ix, id, 0));
	assert_true(ix.used == 2 * 4096);
	disk_store_index_unpin(&ix, a);
	disk_store_index_remove(&ix, c);
	assert_int_equal(ix.count, 1);
	/* many entries: the table grows */
	for (uint64_t i = 100; i < 2100; i++)
		assert_non_null(disk_store_index_add(&ix, id, i, 1));
	for (uint64_t i = 100; i < 2100; i++)
		assert_non_null(disk_store_index_find(&ix, id, i));
	disk_store_index_free(&ix);
}

static void test_index_admission(void **state)
{
	struct disk_store_index ix;
	unsigned char id[DISK_STORE_ID_LEN] = {2};
	unsigned admitted = 0;

	(void)state;
	assert_int_equal(disk_store_index_init(&ix, 4 * 4096, 4096), 0);
	assert_false(disk_store_index_admit(&ix, 5 * 4096, 0)); /* too big */
	assert_true(disk_store_index_admit(&ix, 4096, 0));
	assert_true(disk_store_index_admit(&ix, 4096, 3 * 4096));
	for (uint64_t i = 0; i < 4; i++)
		disk_store_index_add(&ix, id, i, 4096);
	/* full: one in DISK_STORE_ADMIT_FULL_EVERY */
	for (unsigned i = 0; i < 10 * DISK_STORE_ADMIT_FULL_EVERY; i++)
		admitted += disk_store_index_admit(&ix, 4096, 0);
	assert_int_equal(admitted, 10);
	disk_store_index_free(&ix);
}

/* Writes block index of "obj" with mtime secs (after the epoch). */
static void write_block_at(int dirfd, uint64_t index, time_t secs)
{
	struct disk_store_key k;
	char data[1000], path[600];
	struct timespec ts[2] = {{secs, 0}, {secs, 0}};

	fill(data, sizeof(data), "obj", index * BS);
	key_of(&k, "obj", ETAG, index);
	assert_int_equal(
	    disk_store_block_write(dirfd, &k, data, sizeof(data), 0), 0);
	path_of(&k, path, sizeof(path));
	assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
}

static void touch_file(const char *name)
{
	char path[600];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", blocks, name);
	fd = open(path, O_WRONLY | O_CREAT, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "x", 1), 1);
	close(fd);
}

static bool exists(const char *name)
{
	char path[600];
	struct stat sb;

	snprintf(path, sizeof(path), "%s/%s", blocks, name);
	return stat(path, &sb) == 0;
}

static void test_scan_and_shrink(void **state)
{
	struct disk_store_index ix;
	struct disk_store_key k;
	char name[DISK_STORE_NAME_MAX], tmp[DISK_STORE_NAME_MAX + 8],
	    old[DISK_STORE_NAME_MAX];
	int dirfd = blocks_fd();

	(void)state;
	/* blocks 0-4, written oldest last: block 4 is the oldest */
	for (uint64_t i = 0; i < 5; i++)
		write_block_at(dirfd, i, (time_t)(1000000 - i * 10));
	key_of(&k, "obj", ETAG, 9);
	disk_store_file_name(k.id, 9, name);
	snprintf(tmp, sizeof(tmp), "%s.tmp0", name);
	touch_file(tmp);
	snprintf(old, sizeof(old), "%s", name);
	old[strlen(old) - 1] = '0'; /* format 0 */
	touch_file(old);
	touch_file("notes.txt");

	assert_int_equal(disk_store_index_init(&ix, UINT64_MAX, 4096), 0);
	assert_int_equal(disk_store_index_scan(&ix, dirfd, true), 0);
	assert_int_equal(ix.count, 5);
	assert_false(exists(tmp));
	assert_false(exists(old));
	assert_true(exists("notes.txt"));
	/* LRU by mtime: 4 is the coldest, 0 the hottest */
	assert_true(ix.cold->index == 4);
	assert_true(ix.hot->index == 0);
	assert_true(ix.used == 5 * 4096);
	/* a smaller size: the oldest go, files and all */
	ix.size = 3 * 4096;
	assert_true(disk_store_index_shrink(&ix, dirfd, true) == 2);
	assert_int_equal(ix.count, 3);
	key_of(&k, "obj", ETAG, 4);
	disk_store_file_name(k.id, 4, name);
	assert_false(exists(name));
	key_of(&k, "obj", ETAG, 2);
	disk_store_file_name(k.id, 2, name);
	assert_true(exists(name));
	disk_store_index_free(&ix);

	/* read-only: nothing is removed */
	touch_file(tmp);
	assert_int_equal(disk_store_index_init(&ix, UINT64_MAX, 4096), 0);
	assert_int_equal(disk_store_index_scan(&ix, dirfd, false), 0);
	assert_int_equal(ix.count, 3);
	assert_true(exists(tmp));
	ix.size = 4096;
	disk_store_index_shrink(&ix, dirfd, false);
	assert_int_equal(ix.count, 1);
	assert_true(ix.hot->index == 0);
	key_of(&k, "obj", ETAG, 2); /* out of the index, not removed */
	disk_store_file_name(k.id, 2, name);
	assert_true(exists(name));
	disk_store_index_free(&ix);
	close(dirfd);
}

/* ---- the store ---- */

#define OBJ_SIZE (5 * BS + BS / 2) /* 6 blocks, the last a half */

static struct test_store *inner;

/* One GET, waited for: what its callbacks saw. */
struct get_wait {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned next; /* buffer_done calls so far (in order) */
	bool out_of_order;
	bool done;
	int err;
};

static void wait_buffer(void *arg, unsigned index)
{
	struct get_wait *w = arg;

	pthread_mutex_lock(&w->lock);
	if (index != w->next)
		w->out_of_order = true;
	w->next++;
	pthread_mutex_unlock(&w->lock);
}

static void wait_done(void *arg, const struct store_error *err)
{
	struct get_wait *w = arg;

	pthread_mutex_lock(&w->lock);
	if (w->done)
		w->out_of_order = true; /* twice */
	w->done = true;
	w->err = err ? err->err : 0;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

/* GETs blocks [first, first + n) of key (etag may be NULL) through st into
 * a fresh buffer, checks the bytes and the callbacks; returns the error. */
static int get_blocks(struct store *st, const char *key, const char *etag,
		      unsigned first, unsigned n)
{
	struct store_buffer bufs[STORE_GET_BUFFERS_MAX];
	char *mem = malloc((size_t)n * BS);
	struct get_wait w = {.lock = PTHREAD_MUTEX_INITIALIZER,
			     .cond = PTHREAD_COND_INITIALIZER};
	struct store_get req = {.bucket = "bkt",
				.key = key,
				.etag = etag,
				.offset = (uint64_t)first * BS,
				.buffers = bufs,
				.nbuffers = n,
				.buffer_done = wait_buffer,
				.done = wait_done,
				.arg = &w};
	uint64_t total = 0;

	assert_non_null(mem);
	for (unsigned i = 0; i < n; i++) {
		uint64_t off = (uint64_t)(first + i) * BS;

		bufs[i].dest = mem + (size_t)i * BS;
		bufs[i].len = OBJ_SIZE - off < BS ? OBJ_SIZE - off : BS;
		total += bufs[i].len;
	}
	memset(mem, 0, (size_t)n * BS);
	assert_int_equal(store_get(st, &req), 0);
	pthread_mutex_lock(&w.lock);
	while (!w.done)
		pthread_cond_wait(&w.cond, &w.lock);
	pthread_mutex_unlock(&w.lock);
	assert_false(w.out_of_order);
	if (!w.err) {
		char *want = malloc(total);

		assert_int_equal(w.next, n);
		fill(want, total, key, (uint64_t)first * BS);
		assert_memory_equal(want, mem, total);
		free(want);
	}
	free(mem);
	return w.err;
}

/* GETs the test store has served */
static uint64_t inner_gets(struct store *st)
{
	struct store_stats s;

	store_get_stats(st, &s);
	return s.requests;
}

static struct disk_store_stats stats_of(struct store *st)
{
	struct disk_store_stats ds;

	assert_true(disk_store_get_stats(st, &ds));
	return ds;
}

/* Waits (60 s at most: valgrind on a busy machine took over 5) until st
 * has written at least n blocks in all; fails the test when it has not. */
static void wait_writes_at_least(struct store *st, uint64_t n)
{
	for (int i = 0; i < 6000 && stats_of(st).writes < n; i++)
		usleep(10000);
	assert_true(stats_of(st).writes >= n);
}

/* Waits (60 s at most) until st has written n blocks in all. */
static void wait_writes(struct store *st, uint64_t n)
{
	wait_writes_at_least(st, n);
	assert_true(stats_of(st).writes == n);
}

static void put_object(struct test_store *ts, const char *key, const char *etag)
{
	char *data = malloc(OBJ_SIZE);

	fill(data, OBJ_SIZE, key, 0);
	test_store_put(ts, key, etag, data, OBJ_SIZE);
	free(data);
}

/* A tier of size bytes in the scratch directory over a new serving test
 * store holding "obj" (ETAG) and "plain" (no ETag). */
static struct store *new_tier(uint64_t size)
{
	struct disk_store_conf conf;
	struct store *st;
	char err[256];

	inner = test_store_create(true, 4);
	assert_non_null(inner);
	put_object(inner, "obj", ETAG);
	put_object(inner, "plain", NULL);
	disk_store_conf_init(&conf);
	conf.dir = scratch;
	conf.size_bytes = size;
	conf.block_size = BS;
	st = disk_store_create(&conf, &inner->store, err, sizeof(err));
	if (!st)
		fail_msg("disk_store_create: %s", err);
	return st;
}

static void test_store_hits_and_misses(void **state)
{
	struct store *st = new_tier(1u << 20);
	struct disk_store_stats ds;

	(void)state;
	assert_true(st->max_parallel == 4);
	/* epoch 0: one GET to S3, every block written */
	assert_int_equal(get_blocks(st, "obj", ETAG, 0, 6), 0);
	assert_true(inner_gets(st) == 1);
	wait_writes(st, 6);
	/* epoch 1: all from disk */
	assert_int_equal(get_blocks(st, "obj", ETAG, 0, 6), 0);
	assert_int_equal(get_blocks(st, "obj", ETAG, 2, 3), 0);
	assert_true(inner_gets(st) == 1);
	ds = stats_of(st);
	assert_true(ds.hits == 9);
	assert_true(ds.hit_bytes == OBJ_SIZE + 3 * BS);
	assert_true(ds.misses == 6);
	assert_true(ds.files == 6);
	assert_true(ds.writing);
	/* no ETag: never kept */
	assert_int_equal(get_blocks(st, "plain", NULL, 0, 2), 0);
	assert_int_equal(get_blocks(st, "plain", NULL, 0, 2), 0);
	assert_true(inner_gets(st) == 3);
	/* another ETag (the object changed): not served from disk, and the
	 * store refuses the old one */
	put_object(inner, "obj", "\"e2\"");
	assert_int_equal(get_blocks(st, "obj", "\"e2\"", 0, 1), 0);
	assert_true(inner_gets(st) == 4);
	assert_int_not_equal(get_blocks(st, "obj", "\"e3\"", 0, 1), 0);
	store_destroy(st);
}

/* A block file in the middle is damaged: the run is served from disk up
 * to it, the rest from the store in one GET, and the file is rewritten. */
static void test_store_partial_runs(void **state)
{
	struct store *st = new_tier(1u << 20);
	struct disk_store_key k;
	struct disk_store_stats ds;
	char path[600];

	(void)state;
	assert_int_equal(get_blocks(st, "obj", ETAG, 0, 6), 0);
	wait_writes(st, 6);
	key_of(&k, "obj", ETAG, 2);
	path_of(&k, path, sizeof(path));
	flip_byte(path, (off_t)disk_store_header_len(&k) + 500);
	assert_int_equal(get_blocks(st, "obj", ETAG, 0, 6), 0);
	assert_true(inner_gets(st) == 2);
	assert_true(inner->stats.bytes_received ==
		    OBJ_SIZE + OBJ_SIZE - 2 * BS);
	ds = stats_of(st);
	assert_true(ds.bad_files == 1);
	assert_true(ds.hits == 2);
	/* block 2 comes back (the others, already there, are not rewritten) */
	wait_writes(st, 7);
	assert_int_equal(get_blocks(st, "obj", ETAG, 0, 6), 0);
	assert_true(inner_gets(st) == 2);
	/* a missing first block: the whole run goes on */
	assert_int_equal(unlink(path), 0);
	assert_int_equal(get_blocks(st, "obj", ETAG, 2, 4), 0);
	assert_true(inner_gets(st) == 3);
	/* truncated: a miss, removed */
	wait_writes(st, 8);
	key_of(&k, "obj", ETAG, 5);
	path_of(&k, path, sizeof(path));
	assert_int_equal(truncate(path, 100), 0);
	assert_int_equal(get_blocks(st, "obj", ETAG, 5, 1), 0);
	assert_true(stats_of(st).bad_files == 2);
	store_destroy(st);
}

/* Bytes of the block files in DIR/s3pipe, as the budget counts them. */
static uint64_t bytes_in_dir(void)
{
	DIR *d = opendir(blocks);
	struct dirent *de;
	uint64_t sum = 0;

	while (d && (de = readdir(d)) != NULL) {
		char path[600];
		struct stat sb;

		snprintf(path, sizeof(path), "%s/%s", blocks, de->d_name);
		if (stat(path, &sb) == 0 && S_ISREG(sb.st_mode))
			sum += ((uint64_t)sb.st_size + 4095) / 4096 * 4096;
	}
	if (d)
		closedir(d);
	return sum;
}

/* A budget of four blocks: never passed, and repeated scans of six keep
 * hitting (the admission policy), where LRU would never hit. */
static void test_store_size_and_scans(void **state)
{
	uint64_t size = disk_store_min_size(BS) + 4 * 4096;
	struct store *st = new_tier(size);
	uint64_t hits = 0;

	(void)state;
	for (int epoch = 0; epoch < 6; epoch++) {
		for (unsigned b = 0; b < 6; b++) {
			assert_int_equal(get_blocks(st, "obj", ETAG, b, 1), 0);
			assert_true(bytes_in_dir() <= size);
		}
		/* the writes land (the budget's four at least), and stay
		 * within it */
		wait_writes_at_least(st, 4);
		assert_true(stats_of(st).bytes_on_disk <= size);
	}
	hits = stats_of(st).hits;
	assert_true(hits >= 5 * 3); /* three blocks stay, epochs 1-5 */
	store_destroy(st);
}

static void test_store_restart(void **state)
{
	struct store *st = new_tier(1u << 20);
	char tmp[600];

	(void)state;
	assert_int_equal(get_blocks(st, "obj", ETAG, 0, 6), 0);
	store_destroy(st); /* the queued writes are finished */
	/* a temporary left by a crash goes at the next start */
	snprintf(tmp, sizeof(tmp), "%s/%032d-%016d.b%d.tmp1", blocks, 0, 0,
		 DISK_STORE_FORMAT);
	close(open(tmp, O_WRONLY | O_CREAT, 0600));
	st = new_tier(1u << 20);
	assert_true(access(tmp, F_OK) != 0);
	assert_true(stats_of(st).files == 6);
	assert_int_equal(get_blocks(st, "obj", ETAG, 0, 6), 0);
	assert_true(inner_gets(st) == 0);
	assert_true(stats_of(st).hits == 6);
	store_destroy(st);
	/* a smaller size at the next start: evicted down to it */
	st = new_tier(disk_store_min_size(BS) + 4 * 4096);
	assert_true(stats_of(st).files == 4);
	assert_true(bytes_in_dir() <= disk_store_min_size(BS) + 4 * 4096);
	store_destroy(st);
}

/* A second tier on the same directory runs without the tier. */
static void test_store_locked(void **state)
{
	struct store *a = new_tier(1u << 20);
	struct test_store *first = inner;
	struct store *b = new_tier(1u << 20);

	(void)state;
	(void)first;
	assert_false(stats_of(b).writing);
	assert_int_equal(get_blocks(a, "obj", ETAG, 0, 6), 0);
	wait_writes(a, 6);
	assert_int_equal(get_blocks(b, "obj", ETAG, 0, 6), 0);
	assert_true(inner_gets(b) == 1);
	assert_true(stats_of(b).hits == 0);
	assert_true(stats_of(b).writes == 0);
	store_destroy(b);
	store_destroy(a);
}

/* Errors that fail the start, and ones that do not. */
static void test_create_checks(void **state)
{
	struct disk_store_conf conf;
	struct store *st;
	char err[256], file[600];

	(void)state;
	inner = test_store_create(true, 1);
	disk_store_conf_init(&conf);
	conf.block_size = BS;
	conf.size_bytes = 1u << 20;
	snprintf(file, sizeof(file), "%s/missing", scratch);
	conf.dir = file;
	assert_null(disk_store_create(&conf, &inner->store, err, sizeof(err)));
	assert_non_null(strstr(err, "is not usable"));
	close(open(file, O_WRONLY | O_CREAT, 0600));
	assert_null(disk_store_create(&conf, &inner->store, err, sizeof(err)));
	assert_non_null(strstr(err, "is not a directory"));
	/* a share of the free space */
	conf.dir = scratch;
	conf.size_bytes = 0;
	conf.size_percent = 1;
	st = disk_store_create(&conf, &inner->store, err, sizeof(err));
	if (st) {
		assert_true(stats_of(st).size_bytes > 0);
		store_destroy(st); /* and inner with it */
	} else {
		/* a nearly full TMPDIR */
		assert_non_null(strstr(err, "of the free space"));
		test_store_destroy(inner);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_keys_and_names, setup_dir,
					    teardown_dir),
	    cmocka_unit_test_setup_teardown(test_header, setup_dir,
					    teardown_dir),
	    cmocka_unit_test_setup_teardown(test_checksums, setup_dir,
					    teardown_dir),
	    cmocka_unit_test_setup_teardown(test_file_roundtrip_and_damage,
					    setup_dir, teardown_dir),
	    cmocka_unit_test_setup_teardown(test_index_budget_and_pins,
					    setup_dir, teardown_dir),
	    cmocka_unit_test_setup_teardown(test_index_admission, setup_dir,
					    teardown_dir),
	    cmocka_unit_test_setup_teardown(test_scan_and_shrink, setup_dir,
					    teardown_dir),
	    cmocka_unit_test_setup_teardown(test_store_hits_and_misses,
					    setup_dir, teardown_dir),
	    cmocka_unit_test_setup_teardown(test_store_partial_runs, setup_dir,
					    teardown_dir),
	    cmocka_unit_test_setup_teardown(test_store_size_and_scans,
					    setup_dir, teardown_dir),
	    cmocka_unit_test_setup_teardown(test_store_restart, setup_dir,
					    teardown_dir),
	    cmocka_unit_test_setup_teardown(test_store_locked, setup_dir,
					    teardown_dir),
	    cmocka_unit_test_setup_teardown(test_create_checks, setup_dir,
					    teardown_dir),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
