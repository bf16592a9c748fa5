/*
 * fs resume files: FS_RESUME_DIR/NAME_N@record=K and NAME_N@byte=B, epoch
 * N of Pipe channel NAME from its record K (or byte B) to its end, found
 * by name and never listed (fs/ops.c serves them).
 *
 * A name cannot be derived from an inode number alone (K and B take 64
 * bits), so each name looked up takes a slot of a table, and the slot is
 * its inode.  The table lives in the keeper's shared region (fs/keeper.h),
 * so that the next worker reads the same inodes the same way; the
 * kernel's FORGET gives a slot back once it holds no reference to it.  A
 * slot keeps, once an open found it, the epoch's byte where the file
 * starts: a worker that takes over an open file goes on from there
 * without counting records again.
 */
#ifndef S3PIPE_FS_RESUME_H
#define S3PIPE_FS_RESUME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The folder of resume files in the mount root, never listed. */
#define FS_RESUME_DIR ".s3pipe-resume"
/* names the kernel may hold at once */
#define FS_RESUME_SLOTS 256

struct fs_resume_slot {
	uint64_t lookups; /* the kernel's references: 0 is a free slot */
	uint64_t value;	  /* K, or B */
	uint64_t start;	  /* the epoch's byte the file starts at, + 1;
			     0 until an open found it */
	uint32_t channel;
	uint32_t epoch;
	uint32_t by_record; /* 1: value is K */
	uint32_t pad;
};

struct fs_resume_files {
	struct fs_resume_slot slot[FS_RESUME_SLOTS];
};

/*
 * Splits "FILE@record=K" or "FILE@byte=B" (K and B decimal, no sign, no
 * leading zero): the length of FILE, with *by_record and *value; 0 when
 * name is not such a name.
 */
size_t fs_resume_name(const char *name, bool *by_record, uint64_t *value);

/*
 * The slot of (channel, epoch, by_record, value), one lookup more: the
 * slot that has it, else a free one.  The slot's number, or -1 when every
 * slot is taken.  The caller serializes calls on one table.
 */
int fs_resume_take(struct fs_resume_files *t, unsigned channel, unsigned epoch,
		   bool by_record, uint64_t value);

/* The kernel forgot nlookup lookups of slot: freed at none. */
void fs_resume_forget(struct fs_resume_files *t, uint64_t slot,
		      uint64_t nlookup);

/* Slot n when it is taken, else NULL. */
struct fs_resume_slot *fs_resume_slot(struct fs_resume_files *t, uint64_t n);

#endif
