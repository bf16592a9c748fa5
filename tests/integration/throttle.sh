#!/bin/bash
# throttle: a storm of 503 SlowDown on 30 % of GETs while an epoch streams,
# then calm.  The epoch is byte-exact; the engine cut its concurrency while
# throttled (the log says so, and the server saw fewer GETs in flight at
# once late in the storm than before it) and raised it again after (more
# GETs in flight at once after the storm than late in it).  (Throughput
# before, during and after a storm is the bench's to measure.)
. "$(cd "$(dirname "$0")/.." && pwd)/lib.sh"
require_fuse
require_cmd python3
s3_start

s3_mb data
s3_seed data big/ 400 240000
expected_cat "$S3_LOCAL/data" big/ >"$TEST_TMP/big.exp"
total=$(stat -c %s "$TEST_TMP/big.exp")
q1=$((total / 4)) # calm until here
q3=$((total * 3 / 4)) # the storm from q1 to here, then calm again

MP=$(new_mountpoint storm)
mount_fg "$TEST_TMP/daemon.log" -d --endpoint-url "$S3_URL" --cache-size 32M \
	--part-size 256K --max-connections 32 big=s3://data/big/ "$MP"
ctl="$TEST_TMP/ctl"
mkdir -p "$ctl"
python3 "$S3PIPE_SRCDIR/tests/phased_read.py" "$MP/big_0" "$TEST_TMP/out" "$ctl" "$q1" "$q3" &
reader=$!
track_pid "$reader"
wait_until 60 test -e "$ctl/at.0" || fail "the reader did not reach $q1 bytes"
gets_calm=$(fault_stat 'gets')
fault_arm 'kind=status&status=503&count=1000000&prob=0.3&match=/data/big/'
touch "$ctl/go.0"
wait_until 120 test -e "$ctl/at.1" || fail "the reader did not get through the storm"
fault_disarm
gets_storm=$(fault_stat 'gets')
touch "$ctl/go.1"
rc=0
wait "$reader" || rc=$?
[ "$rc" -eq 0 ] || fail "the read failed: $(cat "$ctl/error" 2>/dev/null)"
assert_file_eq "$TEST_TMP/big.exp" "$TEST_TMP/out" "big_0 through a SlowDown storm"

fired=$(fault_stat 'fired.status')
[ "$fired" -gt 10 ] || fail "only $fired SlowDown answers were sent"
grep -q 'throttled by the server: at most' "$TEST_TMP/daemon.log" ||
	fail "the daemon did not lower its concurrency: $(grep -c retrying "$TEST_TMP/daemon.log") retries logged"

# GETs in flight at once as the server saw them: the largest among each
# phase's last 40 GETs (phase 1: before the storm; 2: late in it; 3: after)
fault_stats >"$TEST_TMP/stats.json"
read -r before during after < <(python3 - "$TEST_TMP/stats.json" "$gets_calm" "$gets_storm" <<'PY'
import json, sys
st = json.load(open(sys.argv[1]))
g = [r["inflight"] for r in st["ranges"]]
a, b = int(sys.argv[2]), int(sys.argv[3])
phases = [g[:a], g[a:b], g[b:]]
print(" ".join(str(max(p[-40:]) if p else 0) for p in phases))
PY
)
[ "$during" -lt "$before" ] ||
	fail "GETs in flight late in the storm ($during) not below before it ($before)"
[ "$after" -gt "$during" ] ||
	fail "GETs in flight after the storm ($after) not above late in it ($during)"

note "storm: $total bytes byte-exact; $fired SlowDown answers; GETs in flight (largest of the last 40) before/late in/after the storm: $before/$during/$after"
unmount "$MP"
