#!/bin/bash
# outage: the S3 server goes away while an epoch is being read.
#  1. Gone for 10 s mid-epoch, then back on the same port: the reader (one
#     open handle throughout) stalls, resumes within the retry budget once
#     the server is back (within 15 s: the backoff waits 5 s at most
#     between attempts), and the epoch is byte-exact; the daemon logged
#     retries and no request failed for good.
#  2. Gone for good: the read fails with EIO within the documented bound
#     (10 retries, backoff 0.2 s doubling to 5 s, each delay drawn from
#     [d/2, d]: at most 31.2 s of waiting, plus the attempts themselves),
#     the daemon stays alive and unmounts cleanly.
. "$(cd "$(dirname "$0")/.." && pwd)/lib.sh"
require_fuse
require_cmd python3
s3_start

s3_mb data
s3_seed data big/ 6 8000001
expected_cat "$S3_LOCAL/data" big/ >"$TEST_TMP/big.exp"
total=$(stat -c %s "$TEST_TMP/big.exp")

# now as a floating-point number of seconds
now() { date +%s.%N; }

# ---- 1. ten seconds without a server ----
MP=$(new_mountpoint brief)
mount_fg "$TEST_TMP/brief.log" -d --endpoint-url "$S3_URL" --cache-size 16M \
	--part-size 1M big=s3://data/big/ "$MP"
ctl="$TEST_TMP/ctl1"
mkdir -p "$ctl"
python3 "$S3PIPE_SRCDIR/tests/phased_read.py" "$MP/big_0" "$TEST_TMP/out1" "$ctl" 4000000 &
reader=$!
track_pid "$reader"
wait_until 30 test -e "$ctl/at.0" || fail "the reader did not reach 4 MB"
s3_stop
t_gone=$(now)
touch "$ctl/go.0" # read on: what is cached, then wait for the server
sleep 10
s3_start_again
t_back=$(now)
rc=0
wait "$reader" || rc=$?
[ "$rc" -eq 0 ] || fail "the read across a 10 s outage failed: $(cat "$ctl/error" 2>/dev/null)"
assert_file_eq "$TEST_TMP/big.exp" "$TEST_TMP/out1" "big_0 across a 10 s outage"
# the bytes stopped during the outage and came again after it
read -r stalled_at resumed_at < <(awk -v back="$t_back" '
	$1 <= back { at = $2 }
	$1 > back && !seen { seen = 1; first = $1 }
	END { printf "%d %.3f\n", at, first - back }' "$ctl/reads")
[ "$stalled_at" -lt "$total" ] ||
	fail "the whole epoch was read before the server came back: no outage seen"
awk -v r="$resumed_at" 'BEGIN { exit !(r <= 15) }' ||
	fail "the first bytes came ${resumed_at} s after the server was back (bound 15 s)"
retries=$(grep -c 'retrying' "$TEST_TMP/brief.log" || true)
[ "$retries" -gt 0 ] || fail "no retry logged during the outage"
if grep -q 'failed after' "$TEST_TMP/brief.log"; then
	fail "a request gave up during a 10 s outage: $(grep 'failed after' "$TEST_TMP/brief.log" | head -n1)"
fi
note "10 s outage: $total bytes byte-exact; stalled at $stalled_at bytes; first bytes ${resumed_at} s after the server came back; $retries retries logged"
unmount "$MP"

# ---- 2. the server gone for good ----
MP=$(new_mountpoint gone)
mount_ok --endpoint-url "$S3_URL" --cache-size 16M --part-size 1M big=s3://data/big/ "$MP"
wait_until 10 test -e "$MP/big_0" || fail "big_0 did not appear"
s3_stop
t0=$(now)
result=$(python3 - "$MP/big_0" <<'PY'
import errno, os, signal, sys
signal.alarm(90)  # a hung read ends the test here, not at the watchdog
fd = os.open(sys.argv[1], os.O_RDONLY)
n = 0
try:
    while True:
        b = os.read(fd, 1 << 20)
        if not b:
            print("EOF %d" % n)
            break
        n += len(b)
except OSError as e:
    print("%s %d" % (errno.errorcode.get(e.errno, e.errno), n))
PY
)
t1=$(now)
elapsed=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
assert_match '^EIO ' "$result" "reading with the server gone"
# 31.2 s of backoff at most, plus the first window's requests: 45 s is the bound
awk -v e="$elapsed" 'BEGIN { exit !(e <= 45) }' ||
	fail "EIO took ${elapsed} s with the server gone (bound 45 s)"
assert_mounted "$MP"
pid=$(worker_pids "$MP")
[ -n "$pid" ] || fail "the worker died when the server went away"
note "server gone: EIO after ${elapsed} s"
unmount "$MP"
assert_not_mounted "$MP"
