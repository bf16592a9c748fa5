#!/bin/bash
# epochs: --epochs limits the epoch files (train_2 never appears with
# --epochs 2, even after train_1 was read and closed; -o epochs=1 likewise);
# abandoning an epoch part-way (head -c, open+close without reading, closing
# while the prefetcher is busy) still makes the next one appear, and the next
# one starts again from byte 0.
. "$(cd "$(dirname "$0")/.." && pwd)/lib.sh"
require_fuse
require_cmd python3
s3_start

s3_mb data
s3_seed data train/ 6 50000
s3_seed data large/ 3 4000000
expected_cat "$S3_LOCAL/data" train/ >"$TEST_TMP/train.exp"
expected_cat "$S3_LOCAL/data" large/ >"$TEST_TMP/large.exp"

# ---- --epochs 2 ----
MP=$(new_mountpoint two)
mount_ok --endpoint-url "$S3_URL" --epochs 2 train=s3://data/train/ "$MP"
assert_eq "train_0" "$(ls "$MP" | tr '\n' ' ' | sed 's/ $//')" "ls at start"
for e in 0 1; do
	wait_until 10 test -e "$MP/train_$e" || fail "train_$e did not appear"
	tcat "$MP/train_$e" >"$TEST_TMP/out" || fail "reading train_$e failed"
	assert_file_eq "$TEST_TMP/train.exp" "$TEST_TMP/out" "train_$e"
done
# give the daemon time to (wrongly) add train_2
sleep 1
assert_eq ENOENT "$(errno_of stat "$MP/train_2")" "lookup of train_2 with --epochs 2"
if ls "$MP" | grep -qx train_2; then
	fail "ls shows train_2 with --epochs 2"
fi
assert_eq ENOENT "$(errno_of stat "$MP/train_3")" "lookup of train_3 with --epochs 2"
unmount "$MP"

# ---- -o epochs=1 (the -o spelling of the same option) ----
MP=$(new_mountpoint one)
mount_ok -o "endpoint_url=$S3_URL,epochs=1" train=s3://data/train/ "$MP"
tcat "$MP/train_0" >"$TEST_TMP/out" || fail "reading train_0 (epochs=1) failed"
assert_file_eq "$TEST_TMP/train.exp" "$TEST_TMP/out" "train_0 (epochs=1)"
sleep 1
assert_eq ENOENT "$(errno_of stat "$MP/train_1")" "lookup of train_1 with -o epochs=1"
unmount "$MP"

# ---- abandoning epochs (no limit) ----
MP=$(new_mountpoint abandon)
mount_ok --endpoint-url "$S3_URL" --part-size 1M train=s3://data/train/ large=s3://data/large/ "$MP"

# head -c: read 1000 bytes, close
head -c 1000 "$MP/train_0" >"$TEST_TMP/out" || fail "head -c 1000 train_0 failed"
head -c 1000 "$TEST_TMP/train.exp" >"$TEST_TMP/exp1000"
assert_file_eq "$TEST_TMP/exp1000" "$TEST_TMP/out" "first 1000 bytes of train_0"
wait_until 10 test -e "$MP/train_1" || fail "train_1 did not appear after train_0 was abandoned"
# the next epoch starts at byte 0 and is complete
tcat "$MP/train_1" >"$TEST_TMP/out" || fail "reading train_1 failed"
assert_file_eq "$TEST_TMP/train.exp" "$TEST_TMP/out" "train_1 after an abandoned train_0"
wait_until 10 test -e "$MP/train_2" || fail "train_2 did not appear"

# open and close without reading a byte
exec 8<"$MP/train_2"
exec 8<&-
wait_until 10 test -e "$MP/train_3" || fail "train_3 did not appear after train_2 was opened and closed"
# abandon in the middle of an object (not at a block boundary)
head -c 123457 "$MP/train_3" >"$TEST_TMP/out" || fail "head -c 123457 train_3 failed"
head -c 123457 "$TEST_TMP/train.exp" >"$TEST_TMP/exp"
assert_file_eq "$TEST_TMP/exp" "$TEST_TMP/out" "first 123457 bytes of train_3"
wait_until 10 test -e "$MP/train_4" || fail "train_4 did not appear"
tcat "$MP/train_4" >"$TEST_TMP/out" || fail "reading train_4 failed"
assert_file_eq "$TEST_TMP/train.exp" "$TEST_TMP/out" "train_4"

# close a large epoch while its prefetch is in flight, several times in a row
for e in 0 1 2; do
	wait_until 10 test -e "$MP/large_$e" || fail "large_$e did not appear"
	head -c $((e * 2500000 + 1)) "$MP/large_$e" >"$TEST_TMP/out" || fail "head on large_$e failed"
	head -c $((e * 2500000 + 1)) "$TEST_TMP/large.exp" >"$TEST_TMP/exp"
	assert_file_eq "$TEST_TMP/exp" "$TEST_TMP/out" "prefix of large_$e"
done
wait_until 10 test -e "$MP/large_3" || fail "large_3 did not appear"
tcat "$MP/large_3" >"$TEST_TMP/out" || fail "reading large_3 failed"
assert_file_eq "$TEST_TMP/large.exp" "$TEST_TMP/out" "large_3 after three abandoned epochs"

unmount "$MP"
assert_not_mounted "$MP"
note "ok"
