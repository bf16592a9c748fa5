#!/bin/bash
# basic: two channels mounted together, three epochs of each read in full and
# compared byte for byte with the objects; the epoch file appearing only
# after the previous one was closed; two concurrent readers of one epoch;
# st_size; read-only files; every request sent with s3pipe's User-Agent;
# SIGTERM unmounts and stops the daemon.
. "$(cd "$(dirname "$0")/.." && pwd)/lib.sh"
require_fuse
require_cmd python3
s3_start

s3_mb data
# sizes that do not line up with any block or part size
s3_seed data train/ 24 65537
head -c 1234567 /dev/urandom >"$TEST_TMP/tail.bin"
s3_put data train/zz-tail.bin "$TEST_TMP/tail.bin"
s3_seed data validation/ 7 300001
expected_cat "$S3_LOCAL/data" train/ >"$TEST_TMP/train.exp"
expected_cat "$S3_LOCAL/data" validation/ >"$TEST_TMP/validation.exp"
train_size=$(stat -c %s "$TEST_TMP/train.exp")
val_size=$(stat -c %s "$TEST_TMP/validation.exp")

MP=$(new_mountpoint)
fault_clear
mount_ok --endpoint-url "$S3_URL" \
	train=s3://data/train/ validation=s3://data/validation/ "$MP"

# the root lists epoch 0 of each channel, and nothing else
assert_eq "train_0 validation_0" "$(ls "$MP" | tr '\n' ' ' | sed 's/ $//')" "ls at start"
assert_eq ENOENT "$(errno_of stat "$MP/train_1")" "train_1 before train_0 was opened"

# read-only regular files
assert_eq "regular file" "$(stat -c %F "$MP/train_0")" "file type of train_0"
for op in open_write open_rdwr; do
	e=$(errno_of "$op" "$MP/validation_0")
	case $e in
	EACCES | EROFS) ;;
	*) fail "$op on validation_0: expected EACCES or EROFS, got $e" ;;
	esac
done
# (the failed opens above must not count as opening the epoch)
assert_eq ENOENT "$(errno_of stat "$MP/validation_1")" "validation_1 after failed write opens"

# epoch 0 of train: two concurrent readers, each its own stream from byte 0;
# train_1 must not appear while a reader still holds train_0 open
exec 7<"$MP/train_0"
assert_eq ENOENT "$(errno_of stat "$MP/train_1")" "train_1 while train_0 is open"
tcat "$MP/train_0" >"$TEST_TMP/r1" &
p1=$!
tcat "$MP/train_0" >"$TEST_TMP/r2" &
p2=$!
wait "$p1" || fail "reader 1 of train_0 failed"
wait "$p2" || fail "reader 2 of train_0 failed"
assert_file_eq "$TEST_TMP/train.exp" "$TEST_TMP/r1" "train_0 (concurrent reader 1)"
assert_file_eq "$TEST_TMP/train.exp" "$TEST_TMP/r2" "train_0 (concurrent reader 2)"
# the descriptor opened first reads its own full stream as well
timeout -k 5 30 cat <&7 >"$TEST_TMP/r0" || fail "reading train_0 through fd 7 failed"
assert_file_eq "$TEST_TMP/train.exp" "$TEST_TMP/r0" "train_0 (first opener)"
assert_eq "$train_size" "$(stat -c %s "$MP/train_0")" "st_size of train_0 after reading"
exec 7<&-
wait_until 10 test -e "$MP/train_1" || fail "train_1 did not appear after train_0 was closed"

# epochs 1 and 2 of train, then 0..2 of validation
for e in 1 2; do
	tcat "$MP/train_$e" >"$TEST_TMP/out" || fail "reading train_$e failed"
	assert_file_eq "$TEST_TMP/train.exp" "$TEST_TMP/out" "train_$e"
	assert_eq "$train_size" "$(stat -c %s "$MP/train_$e")" "st_size of train_$e"
	wait_until 10 test -e "$MP/train_$((e + 1))" ||
		fail "train_$((e + 1)) did not appear after train_$e was closed"
done
for e in 0 1 2; do
	wait_until 10 test -e "$MP/validation_$e" || fail "validation_$e did not appear"
	tcat "$MP/validation_$e" >"$TEST_TMP/out" || fail "reading validation_$e failed"
	assert_file_eq "$TEST_TMP/validation.exp" "$TEST_TMP/out" "validation_$e"
	assert_eq "$val_size" "$(stat -c %s "$MP/validation_$e")" "st_size of validation_$e"
done
wait_until 10 test -e "$MP/validation_3" || fail "validation_3 did not appear"
ls "$MP" >"$TEST_TMP/ls" || fail "ls of the root failed after reading"
grep -qx train_3 "$TEST_TMP/ls" || fail "ls does not show train_3: $(tr '\n' ' ' <"$TEST_TMP/ls")"
grep -qx validation_3 "$TEST_TMP/ls" || fail "ls does not show validation_3: $(tr '\n' ' ' <"$TEST_TMP/ls")"

# every request the mount made said who it is (the server's count by
# User-Agent since the mount)
version=$("$S3PIPE" --version | sed -n 's/^s3pipe //p')
assert_eq "s3pipe/$version" "$(fault_stat 'Object.keys(s.userAgents).join(" ")')" "User-Agent of the mount's requests"
# SIGTERM: the daemon unmounts and exits
pids=$(daemon_pids "$MP")
[ -n "$pids" ] || fail "no s3pipe process found for $MP"
kill -TERM $pids
wait_pids_gone 10 $pids || fail "daemon ($pids) still running 10 s after SIGTERM"
wait_until 5 eval "! is_mounted '$MP'" || fail "$MP still mounted after SIGTERM"
assert_not_mounted "$MP"

# -f: serves in the foreground; fusermount3 -u ends it with status 0
MP=$(new_mountpoint fg)
"$S3PIPE" -f --endpoint-url "$S3_URL" validation=s3://data/validation/ "$MP" \
	>"$TEST_TMP/fg.out" 2>"$TEST_TMP/fg.err" </dev/null &
fg_pid=$!
echo "$MP" >>"$TEST_TMP/mounts"
track_pid "$fg_pid"
wait_until 15 is_mounted "$MP" || fail "-f: not mounted after 15 s: $(cat "$TEST_TMP/fg.err")"
wait_until 10 test -e "$MP/validation_0" || fail "-f: validation_0 did not appear"
tcat "$MP/validation_0" >"$TEST_TMP/out" || fail "-f: reading validation_0 failed"
assert_file_eq "$TEST_TMP/validation.exp" "$TEST_TMP/out" "validation_0 (-f)"
kill -0 "$fg_pid" 2>/dev/null || fail "-f: the process is not running while mounted"
fusermount3 -u "$MP" || fail "fusermount3 -u $MP failed"
wait_pids_gone 10 "$fg_pid" || fail "-f: still running 10 s after fusermount3 -u"
rc=0
wait "$fg_pid" || rc=$?
assert_eq 0 "$rc" "exit status of s3pipe -f after fusermount3 -u"
assert_not_mounted "$MP"
note "ok"
