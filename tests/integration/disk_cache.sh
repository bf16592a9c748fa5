#!/bin/bash
# disk_cache: the disk tier (--cache-dir, --cache-dir-size) on real mounts,
# with a memory budget (8M) far smaller than the channel (about 30 MB).
#  - start-up errors: one line, exit 1, no mount;
#  - epochs after the first come from disk: byte-exact, no GET to S3;
#  - a block file with a flipped byte, then a truncated one: logged once,
#    refetched (one GET each), the data exact, the file written again;
#  - a restart on the same DIR serves from disk (no GETs), after removing
#    the temporaries a daemon killed with SIGKILL mid-epoch left;
#  - an object replaced in S3 between mounts (new ETag): its new bytes are
#    read from S3, the rest from disk;
#  - a budget (16M) smaller than the data: reads exact, the files (du) never
#    over the budget, and later epochs still hit (scan resistance);
#  - a file system that fills up (a 6 MiB tmpfs under a 64M budget): one
#    line, reads exact, writing pauses;
#  - a read-only DIR (a read-only bind mount): one line, the blocks there
#    are still read (no GETs), nothing written; with no s3pipe/ in it, S3
#    serves everything;
#  - a second daemon on a DIR in use: one line, it streams from S3.
. "$(cd "$(dirname "$0")/.." && pwd)/lib.sh"
require_fuse
require_cmd python3
s3_start

NOBJ=20
OBJ=1500000 # two blocks of 1 MiB: a whole one and a part
NBLOCKS=$((NOBJ * 2))
s3_mb data
s3_seed data train/ "$NOBJ" "$OBJ"
expected_cat "$S3_LOCAL/data" train/ >"$TEST_TMP/train.exp"

CD="$TEST_TMP/cache"
mkdir -p "$CD"
COMMON=(--endpoint-url "$S3_URL" --cache-size 8M --part-size 1M)

# ---- start-up errors ----
MP=$(new_mountpoint errors)
expect_mount_error "cache dir without size" "$MP" "--cache-dir-size" -- \
	"$S3PIPE" "${COMMON[@]}" --cache-dir "$CD" train=s3://data/train/ "$MP"
expect_mount_error "size without cache dir" "$MP" "needs --cache-dir" -- \
	"$S3PIPE" "${COMMON[@]}" --cache-dir-size 1G train=s3://data/train/ "$MP"
expect_mount_error "size below four blocks" "$MP" "at least 4 times" "3M" -- \
	"$S3PIPE" "${COMMON[@]}" -o cache_dir="$CD",cache_dir_size=3M \
	train=s3://data/train/ "$MP"
expect_mount_error "share out of range" "$MP" "invalid share" "150%" -- \
	"$S3PIPE" "${COMMON[@]}" --cache-dir="$CD" --cache-dir-size=150% \
	train=s3://data/train/ "$MP"
expect_mount_error "missing cache dir" "$MP" "$TEST_TMP/nowhere" "not usable" -- \
	"$S3PIPE" "${COMMON[@]}" --cache-dir "$TEST_TMP/nowhere" \
	--cache-dir-size 1G train=s3://data/train/ "$MP"
: >"$TEST_TMP/afile"
expect_mount_error "cache dir is a file" "$MP" "not a directory" -- \
	"$S3PIPE" "${COMMON[@]}" --cache-dir "$TEST_TMP/afile" \
	--cache-dir-size 1G train=s3://data/train/ "$MP"
expect_mount_error_done

# read_epoch MP E [EXPECTED]: reads train_E whole, compares
read_epoch() {
	wait_until 10 test -e "$1/train_$2" || fail "train_$2 did not appear in $1"
	tcat "$1/train_$2" >"$TEST_TMP/out" || fail "reading $1/train_$2 failed"
	assert_file_eq "${3:-$TEST_TMP/train.exp}" "$TEST_TMP/out" "$1/train_$2"
}

gets() {
	fault_stat 's.gets'
}

# GETs since the last fault_clear whose path names KEY
gets_of() {
	fault_stat "s.ranges.filter(r => r.path.includes('$1')).length"
}

# block_file DIR KEY INDEX: the file of block INDEX of data/KEY as it is
# now (its ETag, s3rver's, is the MD5 of the bytes): the name is the SHA-256
# of "bucket\0key\0etag\0block size", cut to 32 hex digits, and the index
block_file() {
	local md5 id
	md5=$(md5sum <"$S3_LOCAL/data/$2" | cut -d' ' -f1)
	id=$(printf 'data\0%s\0"%s"\0%s' "$2" "$md5" $((1 << 20)) | sha256sum | cut -c1-32)
	printf '%s/s3pipe/%s-%016x.b1\n' "$1" "$id" "$3"
}

# block files in DIR/s3pipe
block_files() {
	find "$1/s3pipe" -name '*.b1' -type f | wc -l
}

# bytes of DIR/s3pipe's files, as du counts them (blocks allocated); a
# temporary file renamed into place while du walks the folder is not there
# when du looks at it, which du reports and exits 1 for after printing the
# total of the rest: that is not a failure here
disk_bytes() {
	(du -s --block-size=1 "$1/s3pipe" 2>/dev/null || true) | cut -f1
}

# waits until MP's disk tier holds N files (the write-behind is done)
wait_files() {
	wait_until 20 test "$(stats_of "$1" 's.disk.files')" -ge "$2" ||
		fail "$1: $(stats_of "$1" 's.disk.files') block files on disk, expected $2 ($(stats_of "$1" 'JSON.stringify(s.disk)'))"
}

# ---- epochs from disk ----
MP=$(new_mountpoint main)
mount_fg "$TEST_TMP/main.log" "${COMMON[@]}" --cache-dir "$CD" --cache-dir-size 256M \
	train=s3://data/train/ "$MP"
[ -d "$CD/s3pipe" ] || fail "no $CD/s3pipe after mounting"
assert_eq true "$(stats_of "$MP" 's.disk.writing')" "disk.writing"
fault_clear
read_epoch "$MP" 0
[ "$(gets)" -ge "$NOBJ" ] || fail "$(gets) GETs for epoch 0"
wait_files "$MP" "$NBLOCKS"
assert_eq 0 "$(stats_of "$MP" 's.disk.write_drops')" "write drops"
assert_eq "$NBLOCKS" "$(block_files "$CD")" "block files after epoch 0"
fault_clear
read_epoch "$MP" 1
read_epoch "$MP" 2
assert_eq 0 "$(gets)" "GETs of epochs 1-2 (from disk)"
# what memory did not hold came from disk
[ "$(stats_of "$MP" 's.disk.hits')" -ge "$NBLOCKS" ] ||
	fail "$(stats_of "$MP" 's.disk.hits') disk hits in epochs 1-2"
[ "$(stats_of "$MP" 's.disk.hit_bytes')" -ge "$((NOBJ * OBJ))" ] ||
	fail "$(stats_of "$MP" 's.disk.hit_bytes') bytes from disk in epochs 1-2"
"$S3PIPE" stats "$MP" | grep -q '^disk  .*hits' || fail "s3pipe stats shows no disk line"

# ---- a damaged block file: one GET, logged once, written again ----
pyflip() {	# FILE OFFSET
	/usr/bin/python3 - "$1" "$2" <<'PY'
import sys
with open(sys.argv[1], "r+b") as f:
    f.seek(int(sys.argv[2]))
    b = f.read(1)
    f.seek(int(sys.argv[2]))
    f.write(bytes([b[0] ^ 0xFF]))
PY
}
# blocks in the middle of the channel: not among what memory keeps
VICTIM=$(block_file "$CD" train/obj-000010.bin 0)
[ -f "$VICTIM" ] || fail "no block file $VICTIM"
pyflip "$VICTIM" 500000
fault_clear
read_epoch "$MP" 3
assert_eq 1 "$(gets)" "GETs after a damaged block"
assert_eq 1 "$(grep -c 'is damaged (checksum mismatch)' "$TEST_TMP/main.log")" "damaged-block log lines"
assert_eq 1 "$(stats_of "$MP" 's.disk.bad_files')" "disk.bad_files"
wait_files "$MP" "$NBLOCKS"
VICTIM2=$(block_file "$CD" train/obj-000012.bin 1)
[ -f "$VICTIM2" ] || fail "no block file $VICTIM2"
truncate -s 1000 "$VICTIM2"
fault_clear
read_epoch "$MP" 4
read_epoch "$MP" 5
assert_eq 1 "$(gets)" "GETs after a truncated block (two epochs)"
assert_eq 1 "$(grep -c 'is damaged (short file)' "$TEST_TMP/main.log")" "short-file log lines"
assert_eq 2 "$(grep -c 'is damaged' "$TEST_TMP/main.log")" "damaged-file log lines in all"

# ---- a second daemon on the same DIR ----
MP2=$(new_mountpoint second)
mount_fg "$TEST_TMP/second.log" "${COMMON[@]}" --cache-dir "$CD" --cache-dir-size 256M \
	train=s3://data/train/ "$MP2"
fault_clear
read_epoch "$MP2" 0
[ "$(gets)" -ge "$NOBJ" ] || fail "$(gets) GETs for a second daemon on a DIR in use"
assert_eq 1 "$(grep -c 'in use by another s3pipe' "$TEST_TMP/second.log")" "second daemon's log line"
assert_eq false "$(stats_of "$MP2" 's.disk.writing')" "second daemon writing"
unmount "$MP2"

# ---- restart: the same DIR serves the next mount ----
unmount "$MP"
grep -q 'disk tier .*hits' "$TEST_TMP/main.log" || fail "no disk tier line at unmount"
MP=$(new_mountpoint restart)
mount_fg "$TEST_TMP/restart.log" "${COMMON[@]}" -o "cache_dir=$CD,cache_dir_size=256M" \
	train=s3://data/train/ "$MP"
assert_eq "$NBLOCKS" "$(stats_of "$MP" 's.disk.files')" "files found at start"
fault_clear
read_epoch "$MP" 0
assert_eq 0 "$(gets)" "GETs of epoch 0 after a restart"

# killed mid-epoch (while writing): the next start is clean
unmount "$MP"
CD2="$TEST_TMP/cache2"
mkdir -p "$CD2"
MP=$(new_mountpoint killed)
mount_fg "$TEST_TMP/killed.log" "${COMMON[@]}" --cache-dir "$CD2" --cache-dir-size 256M \
	train=s3://data/train/ "$MP"
KILLED=$FG_PID
head -c 20000000 "$MP/train_0" >/dev/null || fail "reading before the kill failed"
kill -KILL "$KILLED"
wait "$KILLED" 2>/dev/null || true
wait_pids_gone 5 "$KILLED" || fail "daemon $KILLED survived SIGKILL"
fusermount3 -u -z "$MP" 2>/dev/null || true
# a temporary as a write cut short would leave it
printf 'partial' >"$CD2/s3pipe/$(printf '%032d-%016d' 7 0).b1.tmp0"
MP=$(new_mountpoint after-kill)
mount_fg "$TEST_TMP/after-kill.log" "${COMMON[@]}" --cache-dir "$CD2" --cache-dir-size 256M \
	train=s3://data/train/ "$MP"
assert_eq 0 "$(find "$CD2/s3pipe" -name '*.tmp*' | wc -l)" "temporaries after a restart"
fault_clear
read_epoch "$MP" 0
KEPT=$(stats_of "$MP" 's.disk.hits')
[ "$KEPT" -gt 0 ] || fail "nothing reused after a SIGKILL"
assert_eq 0 "$(stats_of "$MP" 's.disk.bad_files')" "damaged files after a SIGKILL"
unmount "$MP"

# ---- an object replaced in S3 between mounts: its new bytes ----
head -c "$OBJ" /dev/urandom >"$TEST_TMP/new-obj"
s3_put data train/obj-000004.bin "$TEST_TMP/new-obj"
expected_cat "$S3_LOCAL/data" train/ >"$TEST_TMP/train2.exp"
MP=$(new_mountpoint etag)
mount_fg "$TEST_TMP/etag.log" "${COMMON[@]}" --cache-dir "$CD" --cache-dir-size 256M \
	train=s3://data/train/ "$MP"
fault_clear
read_epoch "$MP" 0 "$TEST_TMP/train2.exp"
[ "$(gets)" -ge 1 ] || fail "the replaced object was not read from S3"
assert_eq "$(gets)" "$(gets_of obj-000004.bin)" "GETs after an ETag change: the replaced object's only"
wait_files "$MP" $((NBLOCKS + 2))
fault_clear
read_epoch "$MP" 1 "$TEST_TMP/train2.exp"
assert_eq 0 "$(gets)" "GETs of the next epoch"
unmount "$MP"
cp "$TEST_TMP/train2.exp" "$TEST_TMP/train.exp"

# ---- a budget smaller than the data ----
CD3="$TEST_TMP/cache3"
mkdir -p "$CD3"
SMALL=$((16 << 20))
MP=$(new_mountpoint small)
mount_fg "$TEST_TMP/small.log" "${COMMON[@]}" --cache-dir "$CD3" --cache-dir-size 16M \
	train=s3://data/train/ "$MP"
for e in 0 1 2 3; do
	wait_until 10 test -e "$MP/train_$e" || fail "train_$e did not appear"
	tcat "$MP/train_$e" >"$TEST_TMP/out" &
	reader=$!
	while kill -0 "$reader" 2>/dev/null; do
		b=$(disk_bytes "$CD3")
		[ "$b" -le $((SMALL + 65536)) ] || fail "du says $b bytes in $CD3/s3pipe, over the 16M budget"
		sleep 0.05
	done
	wait "$reader" || fail "reading train_$e (small budget) failed"
	assert_file_eq "$TEST_TMP/train.exp" "$TEST_TMP/out" "train_$e (small budget)"
done
[ "$(stats_of "$MP" 's.disk.bytes')" -le "$SMALL" ] || fail "disk.bytes over the budget"
[ "$(stats_of "$MP" 's.disk.hits')" -gt 0 ] || fail "no disk hits with a budget smaller than the data"
unmount "$MP"

# ---- mounts of our own: a full file system, a read-only DIR ----
if [ "$(id -u)" -ne 0 ]; then
	fail "the full-disk and read-only cases mount a tmpfs and a bind mount: run as root"
fi
OWN_MOUNTS=()
CLEANUP_HOOK='for m in "${OWN_MOUNTS[@]}"; do umount -l "$m" 2>/dev/null; done'

# a 6 MiB tmpfs under a 64M budget: ENOSPC while writing
FULL="$TEST_TMP/full"
mkdir -p "$FULL"
mount -t tmpfs -o size=6m tmpfs "$FULL" || fail "cannot mount a tmpfs on $FULL"
OWN_MOUNTS+=("$FULL")
MP=$(new_mountpoint full)
mount_fg "$TEST_TMP/full.log" "${COMMON[@]}" --cache-dir "$FULL" --cache-dir-size 64M \
	train=s3://data/train/ "$MP"
read_epoch "$MP" 0
read_epoch "$MP" 1
assert_eq 1 "$(grep -c 'is full' "$TEST_TMP/full.log")" "disk-full log lines"
[ "$(stats_of "$MP" 's.disk.write_errors')" -ge 1 ] || fail "no write error counted on a full disk"
assert_eq 0 "$(find "$FULL/s3pipe" -name '*.tmp*' | wc -l)" "temporaries left on a full disk"
unmount "$MP"
umount "$FULL"

# a read-only bind mount of a populated DIR: read, not written
RO="$TEST_TMP/ro"
mkdir -p "$RO"
mount --bind "$CD" "$RO" && mount -o remount,bind,ro "$RO" ||
	fail "cannot make a read-only bind mount of $CD"
OWN_MOUNTS+=("$RO")
touch "$RO/probe" 2>/dev/null && fail "$RO is writable"
MP=$(new_mountpoint ro)
mount_fg "$TEST_TMP/ro.log" "${COMMON[@]}" --cache-dir "$RO" --cache-dir-size 256M \
	train=s3://data/train/ "$MP"
fault_clear
read_epoch "$MP" 0
assert_eq 0 "$(gets)" "GETs with a read-only DIR of valid blocks"
assert_eq 1 "$(grep -c 'cannot write in' "$TEST_TMP/ro.log")" "read-only log lines"
assert_eq false "$(stats_of "$MP" 's.disk.writing')" "writing on a read-only DIR"
unmount "$MP"
umount "$RO"

# a read-only DIR with no s3pipe/ in it: S3 serves all
mkdir -p "$TEST_TMP/empty" "$RO"
mount --bind "$TEST_TMP/empty" "$RO" && mount -o remount,bind,ro "$RO" ||
	fail "cannot make a read-only bind mount of $TEST_TMP/empty"
MP=$(new_mountpoint ro-empty)
mount_fg "$TEST_TMP/ro-empty.log" "${COMMON[@]}" --cache-dir "$RO" --cache-dir-size 256M \
	train=s3://data/train/ "$MP"
fault_clear
read_epoch "$MP" 0
read_epoch "$MP" 1
[ "$(gets)" -ge "$((2 * NOBJ))" ] || fail "$(gets) GETs with an unusable read-only DIR"
assert_eq 1 "$(grep -c 'running without it' "$TEST_TMP/ro-empty.log")" "log lines for an unusable read-only DIR"
unmount "$MP"
umount "$RO"
note "ok"
