#!/bin/bash
# keeper: the mount outlives its worker.  The process that mounts (the
# keeper, whose pid --pid-file holds) keeps /dev/fuse; the worker serving
# reads is killed with SIGKILL while a reader holds an epoch file open
# (between reads, and in the middle of reading), and the reader gets
# exactly the epoch's bytes with no error; the next epoch still appears;
# s3pipe stats counts the restarts and names the cause; SIGHUP hands over
# to a new worker under a reader; the keeper's SIGTERM unmounts and leaves
# no process behind.
. "$(cd "$(dirname "$0")/.." && pwd)/lib.sh"
require_fuse
require_cmd python3
s3_start

s3_mb data
s3_seed data train/ 12 3000001
expected_cat "$S3_LOCAL/data" train/ >"$TEST_TMP/train.exp"

# the worker serving MP: the keeper's child
worker_of() {	# KEEPER_PID
	cat "/proc/$1/task/$1/children" 2>/dev/null | tr ' ' '\n' | grep -m1 .
}

MP=$(new_mountpoint)
mount_ok --endpoint-url "$S3_URL" --pid-file "$TEST_TMP/pid" --cache-size 8M --part-size 1M \
	train=s3://data/train/ "$MP"
KEEPER=$(cat "$TEST_TMP/pid")
W1=$(worker_of "$KEEPER")
[ -n "$W1" ] || fail "the keeper $KEEPER has no worker"
assert_eq "$KEEPER" "$(stats_of "$MP" 's.worker.keeper_pid')" "keeper pid in the stats"
assert_eq "$W1" "$(stats_of "$MP" 's.pid')" "worker pid in the stats"
assert_eq 0 "$(stats_of "$MP" 's.worker.restarts')" "restarts at start"

# a reader that stops at marks and goes on when told: it reads train_0
# through one descriptor in 256 KiB reads
cat >"$TEST_TMP/reader.py" <<'EOF'
import hashlib, os, sys, time
path, out, marks, ctl = sys.argv[1], sys.argv[2], [int(m) for m in sys.argv[3].split(",")], sys.argv[4]
fd = os.open(path, os.O_RDONLY)
n = 0
with open(out, "wb") as f:
    while True:
        if marks and n >= marks[0]:
            mark = marks.pop(0)
            open(ctl + ".at", "w").write(str(mark))
            while not os.path.exists(ctl + ".go%d" % mark):
                time.sleep(0.01)
        b = os.read(fd, 256 << 10)
        if not b:
            break
        f.write(b)
        n += len(b)
os.close(fd)
EOF
python3 "$TEST_TMP/reader.py" "$MP/train_0" "$TEST_TMP/out0" 4194304,16777216 "$TEST_TMP/ctl" &
reader=$!
track_pid "$reader"

# 1. killed between two reads of an open file
wait_until 30 test -e "$TEST_TMP/ctl.at" || fail "the reader did not reach its first mark"
kill -KILL "$W1"
wait_pids_gone 10 "$W1" || fail "worker $W1 survived SIGKILL"
wait_until 10 eval '[ -n "$(worker_of "$KEEPER")" ]' || fail "no new worker within 10 s"
W2=$(worker_of "$KEEPER")
assert_ne "$W1" "$W2" "the worker after a SIGKILL"
touch "$TEST_TMP/ctl.go4194304"

# 2. killed while the reader waits in read() for a slow server: every GET
# is answered 3 s late, so past what the 8 MiB budget holds the reader
# blocks; the kill comes while it does (it cannot have ended: 20 MB more
# need GETs), and the new worker reads what the dead one had taken
wait_until 30 eval '[ "$(cat "$TEST_TMP/ctl.at")" = 16777216 ]' ||
	fail "the reader did not reach its second mark"
fault_arm 'kind=delay&seconds=3&count=1000&match=/data/train/'
touch "$TEST_TMP/ctl.go16777216"
sleep 1
kill -0 "$reader" || fail "the reader ended although every GET was held back"
kill -KILL "$W2"
fault_clear
wait_pids_gone 10 "$W2" || fail "worker $W2 survived SIGKILL"
wait "$reader" || fail "the reader of train_0 failed across two worker deaths"
assert_file_eq "$TEST_TMP/train.exp" "$TEST_TMP/out0" "train_0 across two worker deaths"
assert_mounted "$MP"
kill -0 "$KEEPER" || fail "the keeper died"

# what the stats say, from the third worker
assert_eq 2 "$(stats_of "$MP" 's.worker.restarts')" "restarts after two kills"
assert_eq "signal 9 (Killed)" "$(stats_of "$MP" 's.worker.last_restart.cause')" "cause of the last restart"
wait_until 10 test -e "$MP/train_1" || fail "train_1 did not appear after train_0 was closed"

# 3. SIGHUP: a new worker takes over under a reader
python3 "$TEST_TMP/reader.py" "$MP/train_1" "$TEST_TMP/out1" 8388608 "$TEST_TMP/hup" &
reader=$!
track_pid "$reader"
wait_until 30 test -e "$TEST_TMP/hup.at" || fail "the reader of train_1 did not reach its mark"
W3=$(worker_of "$KEEPER")
kill -HUP "$KEEPER"
wait_until 20 eval '[ "$(worker_of "$KEEPER")" != "$W3" ]' || fail "SIGHUP: no new worker within 20 s"
wait_pids_gone 10 "$W3" || fail "SIGHUP: the old worker $W3 did not stop"
touch "$TEST_TMP/hup.go8388608"
wait "$reader" || fail "the reader of train_1 failed across a SIGHUP restart"
assert_file_eq "$TEST_TMP/train.exp" "$TEST_TMP/out1" "train_1 across a SIGHUP restart"
assert_eq "restart asked for (SIGHUP)" "$(stats_of "$MP" 's.worker.last_restart.cause')" "cause after SIGHUP"

# SIGTERM to the keeper: unmounted, nothing left running
W4=$(worker_of "$KEEPER")
kill -TERM "$KEEPER"
wait_pids_gone 10 "$KEEPER" "$W4" || fail "keeper or worker still running 10 s after SIGTERM"
wait_until 5 eval "! is_mounted '$MP'" || fail "$MP still mounted after the keeper's SIGTERM"
assert_not_mounted "$MP"
note "ok"
