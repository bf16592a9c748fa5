#!/bin/bash
# mount_helper: mount.s3pipe SOURCE MOUNTPOINT -o channel=NAME,... (the
# mount(8)/fstab convention): options given as -o keys, fstab keywords
# accepted and ignored, umount stops the daemon; libfuse's own -o options
# (auto_unmount, fsname=) reach the mount and an unknown one is refused
# before anything starts; and, as root, a real `mount -t s3pipe` through
# /sbin/mount.s3pipe.
. "$(cd "$(dirname "$0")/.." && pwd)/lib.sh"
require_fuse
require_cmd python3
s3_start

[ -x "$MOUNT_S3PIPE" ] || fail "mount helper not found: $MOUNT_S3PIPE (a symlink to s3pipe)"

s3_mb data
s3_seed data train/ 5 70001
s3_seed data val/ 3 12345
expected_cat "$S3_LOCAL/data" train/ >"$TEST_TMP/train.exp"
expected_cat "$S3_LOCAL/data" val/ >"$TEST_TMP/val.exp"

# umount(8) when available (root), else fusermount3; then the daemon must go
umount_and_check() {	# MOUNTPOINT
	local mp=$1 pids
	pids=$(daemon_pids "$mp")
	[ -n "$pids" ] || fail "no s3pipe process found for $mp"
	if [ "$(id -u)" -eq 0 ] && command -v umount >/dev/null; then
		umount "$mp" || fail "umount $mp failed"
	else
		fusermount3 -u "$mp" || fail "fusermount3 -u $mp failed"
	fi
	wait_pids_gone 10 $pids || fail "daemon ($pids) still running after unmounting $mp"
	assert_not_mounted "$mp"
}

# ---- mount.s3pipe with -o channel=,endpoint_url= ----
MP=$(new_mountpoint helper)
rc=0
"$MOUNT_S3PIPE" s3://data/train/ "$MP" -o "channel=train,endpoint_url=$S3_URL" \
	2>"$TEST_TMP/mount.err" </dev/null || rc=$?
track_mount "$MP"
[ "$rc" -eq 0 ] || fail "mount.s3pipe exited $rc: $(cat "$TEST_TMP/mount.err")"
assert_mounted "$MP"
assert_eq "train_0" "$(ls "$MP" | tr '\n' ' ' | sed 's/ $//')" "ls after mount.s3pipe"
tcat "$MP/train_0" >"$TEST_TMP/out" || fail "reading train_0 failed"
assert_file_eq "$TEST_TMP/train.exp" "$TEST_TMP/out" "train_0 via mount.s3pipe"
umount_and_check "$MP"

# ---- fstab keywords, options as -o keys (epochs=1, seek=emulate) ----
MP=$(new_mountpoint fstab)
opts="channel=val,endpoint_url=$S3_URL,_netdev,nofail,noauto,defaults,rw,user,x-systemd.automount"
opts+=",comment=test,epochs=1,seek=emulate,part_size=1M,max_connections=4,max_retries=3"
opts+=",stall_timeout=10,cache_size=64M,region=us-east-1,uid=1234,gid=4321"
# allow_other needs root (or user_allow_other in /etc/fuse.conf)
if [ "$(id -u)" -eq 0 ]; then
	opts+=",allow_other"
fi
rc=0
"$MOUNT_S3PIPE" s3://data/val/ "$MP" -o "$opts" 2>"$TEST_TMP/mount.err" </dev/null || rc=$?
track_mount "$MP"
[ "$rc" -eq 0 ] || fail "mount.s3pipe with fstab keywords exited $rc: $(cat "$TEST_TMP/mount.err")"
assert_mounted "$MP"
assert_eq "val_0" "$(ls "$MP" | tr '\n' ' ' | sed 's/ $//')" "ls after mount.s3pipe -o channel=val"
assert_eq "1234:4321" "$(stat -c %u:%g "$MP/val_0")" "owner of val_0 with -o uid=1234,gid=4321"
if [ "$(id -u)" -eq 0 ]; then
	grep -F " $MP " /proc/self/mountinfo | grep -q allow_other ||
		fail "-o allow_other: the mount options do not show allow_other: $(grep -F " $MP " /proc/self/mountinfo)"
fi
# seek=emulate took effect: pread works
python3 - "$MP/val_0" "$TEST_TMP/val.exp" <<'PY' || fail "pread with -o seek=emulate (see above)"
import os, sys
path, exp = sys.argv[1], open(sys.argv[2], "rb").read()
fd = os.open(path, os.O_RDONLY)
try:
    for off in (20000, 12340, 0, len(exp) - 3):
        got = os.pread(fd, 10, off)
        if got != exp[off:off + 10][:len(got)] or not got:
            sys.exit("mount_helper.sh: pread(10 at %d) returned wrong bytes" % off)
except OSError as e:
    sys.exit("mount_helper.sh: pread failed: %s" % e)
finally:
    os.close(fd)
PY
# epochs=1 took effect: no val_1 after val_0 was closed
sleep 1
assert_eq ENOENT "$(errno_of stat "$MP/val_1")" "val_1 with -o epochs=1"
umount_and_check "$MP"

# ---- an -o option libfuse does not know: one line, exit 1, nothing mounted ----
MP=$(new_mountpoint bogus)
rc=0
"$MOUNT_S3PIPE" s3://data/train/ "$MP" -o "channel=train,endpoint_url=$S3_URL,bogus_option" \
	2>"$TEST_TMP/mount.err" </dev/null || rc=$?
track_mount "$MP"
assert_eq 1 "$rc" "exit status of mount.s3pipe -o bogus_option"
assert_eq "s3pipe: unknown option '-o bogus_option' (see mount.s3pipe --help)" \
	"$(cat "$TEST_TMP/mount.err")" "stderr of mount.s3pipe -o bogus_option"
assert_not_mounted "$MP"
assert_eq "" "$(daemon_pids "$MP")" "daemons left by mount.s3pipe -o bogus_option"

# ---- libfuse's options reach the mount: auto_unmount, fsname= ----
# auto_unmount goes through fusermount3 even for root; when the daemon dies
# (SIGKILL: no clean-up of its own), fusermount3 unmounts.
MP=$(new_mountpoint auto)
rc=0
"$MOUNT_S3PIPE" s3://data/train/ "$MP" \
	-o "channel=train,endpoint_url=$S3_URL,auto_unmount,fsname=s3pipe-auto" \
	2>"$TEST_TMP/mount.err" </dev/null || rc=$?
track_mount "$MP"
[ "$rc" -eq 0 ] || fail "mount.s3pipe -o auto_unmount exited $rc: $(cat "$TEST_TMP/mount.err")"
assert_mounted "$MP"
tcat "$MP/train_0" >"$TEST_TMP/out" || fail "reading train_0 (-o auto_unmount) failed"
assert_file_eq "$TEST_TMP/train.exp" "$TEST_TMP/out" "train_0 with -o auto_unmount"
info=$(awk -v mp="$(realpath -m "$MP")" '$5 == mp' /proc/self/mountinfo)
assert_match ' - fuse\.s3pipe s3pipe-auto ro,' "$info" "mountinfo with -o fsname=s3pipe-auto"
pids=$(daemon_pids "$MP")
[ -n "$pids" ] || fail "no s3pipe process found for $MP"
kill -KILL $pids
wait_pids_gone 10 $pids || fail "daemon ($pids) survived SIGKILL"
# (fusermount3's watcher unmounts once it sees the daemon's end of its
# socket close; on a loaded 2-core machine that took over 10 s once, and
# over 30 s twice in CI runs of the sanitizers' pass or beside a build)
wait_until 60 eval '! is_mounted "$MP"' ||
	fail "-o auto_unmount: $MP still mounted 60 s after its daemon was killed (left: $(ps -eo pid,ppid,stat,comm | awk '$4 ~ /s3pipe|fusermount|exe/' | tr '\n' ';'))"

# ---- real mount -t s3pipe (root only) ----
if [ "$(id -u)" -ne 0 ]; then
	note "not root: skipping the mount -t s3pipe part"
elif ! command -v mount >/dev/null; then
	note "no mount(8): skipping the mount -t s3pipe part"
else
	helper=/sbin/mount.s3pipe
	real=$(realpath -m "$S3PIPE")
	if [ -e "$helper" ] || [ -L "$helper" ]; then
		if [ "$(realpath -m "$helper")" != "$real" ]; then
			note "$helper exists and is not the binary under test: skipping the mount -t s3pipe part"
			helper=
		fi
	else
		ln -s "$real" "$helper" || fail "cannot create $helper"
		CLEANUP_HOOK="rm -f '$helper'"
	fi
	if [ -n "$helper" ]; then
		MP=$(new_mountpoint mount8)
		rc=0
		mount -t s3pipe -o "channel=train,endpoint_url=$S3_URL,_netdev,nofail" \
			s3://data/train/ "$MP" 2>"$TEST_TMP/mount.err" </dev/null || rc=$?
		track_mount "$MP"
		[ "$rc" -eq 0 ] || fail "mount -t s3pipe exited $rc: $(cat "$TEST_TMP/mount.err")"
		assert_mounted "$MP"
		tcat "$MP/train_0" >"$TEST_TMP/out" || fail "reading train_0 (mount -t s3pipe) failed"
		assert_file_eq "$TEST_TMP/train.exp" "$TEST_TMP/out" "train_0 via mount -t s3pipe"
		wait_until 10 test -e "$MP/train_1" || fail "train_1 did not appear (mount -t s3pipe)"
		umount_and_check "$MP"
	fi
fi
note "ok"
