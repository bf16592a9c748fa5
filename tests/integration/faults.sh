#!/bin/bash
# faults: the test server injects failures (tests/s3server/server.js) and the
# data must still arrive byte-exact, or the read fail with EIO while the
# daemon keeps serving: 500 twice; 503 SlowDown; failed list requests;
# a connection cut mid-body (resumed at the break with a Range request),
# also deep inside a GET that fills several cache blocks;
# a stalled body (--stall-timeout); large and small bodies in turn on one
# kept connection (the receive low-water mark); a reader's own GET answered
# late (no prefetch reaches the server before it is answered); an object
# whose ETag changed after the listing (EIO); persistent 500 past
# --max-retries (EIO, daemon alive).
. "$(cd "$(dirname "$0")/.." && pwd)/lib.sh"
require_fuse
s3_start

s3_mb data
s3_seed data s500/ 3 200001
s3_seed data s503/ 3 200001
s3_seed data slist/ 4 10000
head -c $((5 * 1024 * 1024)) /dev/urandom >"$TEST_TMP/big.bin"
s3_put data big/one.bin "$TEST_TMP/big.bin"
s3_put data stall/one.bin "$TEST_TMP/big.bin"
s3_put data cut0/one.bin "$TEST_TMP/big.bin"
s3_put data run/one.bin "$TEST_TMP/big.bin"
s3_seed data whole/ 3 200001
s3_seed data etag/ 2 300000
s3_seed data persist/ 2 300000
s3_seed data ok/ 4 100000
# bodies larger and smaller than the receive low-water mark, alternating
head -c 1000001 /dev/urandom >"$TEST_TMP/large.bin"
head -c 1000 /dev/urandom >"$TEST_TMP/small.bin"
for k in a c e; do s3_put data kept/$k.bin "$TEST_TMP/large.bin"; done
for k in b d f; do s3_put data kept/$k.bin "$TEST_TMP/small.bin"; done
s3_seed data head/ 6 2000000
for p in s500 s503 slist big cut0 run whole stall etag persist ok kept head; do
	expected_cat "$S3_LOCAL/data" "$p/" >"$TEST_TMP/$p.exp"
done

# assert_cuts_resumed [JS CONDITION on e]: every cut event (that meets the
# condition) broke at byte B of its object and was followed by a GET from B
assert_cuts_resumed() {
	local missing
	missing=$(fault_stat 's.events.filter(e => e.kind === "cut" && ('"${1:-true}"')).filter(e =>
	!s.ranges.some(r => r.path === e.path && r.range && r.range.startsWith("bytes=" + e.breakAt + "-"))
).map(e => e.breakAt).join(" ")')
	[ -z "$missing" ] || fail "no Range request resumed at the break offset(s) $missing; ranges seen: $(fault_stat 's.ranges.map(r => r.range).join(" ")')"
}

# read CHANNEL_EPOCH and compare with EXPECTED
read_ok() {	# FILE EXPECTED WHAT
	tcat "$1" >"$TEST_TMP/out" 2>"$TEST_TMP/cat.err" ||
		fail "$3: reading $1 failed: $(cat "$TEST_TMP/cat.err")"
	assert_file_eq "$2" "$TEST_TMP/out" "$3"
}

# the read must fail with EIO (cat exits non-zero, not through the timeout)
read_eio() {	# FILE WHAT
	local rc=0
	tcat "$1" >"$TEST_TMP/out" 2>"$TEST_TMP/cat.err" || rc=$?
	[ "$rc" -ne 0 ] || fail "$2: reading $1 succeeded, expected EIO"
	if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
		fail "$2: reading $1 hung (timeout), expected EIO"
	fi
	grep -q 'Input/output error' "$TEST_TMP/cat.err" ||
		fail "$2: reading $1 failed, but not with EIO: $(cat "$TEST_TMP/cat.err")"
}

daemon_alive() {	# MOUNTPOINT
	local pids
	pids=$(daemon_pids "$1")
	[ -n "$pids" ] || fail "the daemon for $1 is gone"
	kill -0 $pids 2>/dev/null || fail "the daemon for $1 is gone"
	assert_mounted "$1"
}

# ---- status 500 twice, then success ----
fault_clear
fault_arm 'kind=status&status=500&count=2&match=/data/s500/'
MP=$(new_mountpoint m500)
mount_ok --endpoint-url "$S3_URL" s500=s3://data/s500/ "$MP"
read_ok "$MP/s500_0" "$TEST_TMP/s500.exp" "after two 500s"
assert_eq 2 "$(fault_stat 's.fired.status')" "500 faults fired"
unmount "$MP"

# ---- 503 SlowDown three times ----
fault_clear
fault_arm 'kind=status&status=503&count=3&match=/data/s503/'
MP=$(new_mountpoint m503)
mount_ok --endpoint-url "$S3_URL" s503=s3://data/s503/ "$MP"
read_ok "$MP/s503_0" "$TEST_TMP/s503.exp" "after three 503 SlowDown"
assert_eq 3 "$(fault_stat 's.fired.status')" "503 faults fired"
unmount "$MP"

# ---- failed list requests at start-up are retried ----
fault_clear
fault_arm 'kind=status&status=500&count=2&list=1&match=slist'
MP=$(new_mountpoint mlist)
mount_ok --endpoint-url "$S3_URL" slist=s3://data/slist/ "$MP"
read_ok "$MP/slist_0" "$TEST_TMP/slist.exp" "after two failed list requests"
assert_eq 2 "$(fault_stat 's.fired.status')" "list faults fired"
fault_clear
fault_arm 'kind=status&status=503&count=1&list=1&match=slist'
wait_until 10 test -e "$MP/slist_1" || fail "slist_1 did not appear"
read_ok "$MP/slist_1" "$TEST_TMP/slist.exp" "slist_1 after a 503 on a list request"
unmount "$MP"

# ---- connection cut mid-body: resumed at the break ----
fault_clear
fault_arm 'kind=cut&after=300000&count=2&match=/data/big/one.bin'
MP=$(new_mountpoint mcut)
mount_ok --endpoint-url "$S3_URL" --part-size 1M big=s3://data/big/ cut0=s3://data/cut0/ "$MP"
read_ok "$MP/big_0" "$TEST_TMP/big.exp" "after two connections cut mid-body"
assert_eq 2 "$(fault_stat 's.fired.cut')" "cut faults fired"
[ "$(fault_stat 's.rangeGets')" -ge 1 ] || fail "no GET with a Range header"
assert_cuts_resumed
# cut right after the headers, too (another object: epoch 1 of big may
# come from the cache without any request)
fault_clear
fault_arm 'kind=cut&after=0&count=1&match=/data/cut0/one.bin'
read_ok "$MP/cut0_0" "$TEST_TMP/cut0.exp" "after a connection cut before the body"
assert_eq 1 "$(fault_stat 's.fired.cut')" "header-only cut fired"
wait_until 10 test -e "$MP/big_1" || fail "big_1 did not appear"
read_ok "$MP/big_1" "$TEST_TMP/big.exp" "big_1"
unmount "$MP"

# ---- a cut inside a GET that fills several blocks resumes in the right
# block: every GET of one.bin is cut 300000 bytes in, past its second
# 128 KiB block whenever it asks for three or more ----
fault_clear
fault_arm 'kind=cut&after=300000&count=12&match=/data/run/one.bin'
MP=$(new_mountpoint mrun)
mount_ok --endpoint-url "$S3_URL" --part-size 128K --max-retries 20 run=s3://data/run/ "$MP"
read_ok "$MP/run_0" "$TEST_TMP/run.exp" "after cuts inside multi-block GETs"
deep=$(fault_stat 's.events.filter(e => e.kind === "cut" && e.breakAt !== null && e.breakAt - e.start > 2 * 131072).length')
[ "$deep" -ge 1 ] || fail "no GET was cut past its second block; events: $(fault_stat 'JSON.stringify(s.events)')"
assert_cuts_resumed 'e.breakAt !== null'
unmount "$MP"

# ---- a whole small object is fetched without Range; a cut resumes it ----
fault_clear
fault_arm 'kind=cut&after=70000&count=1&match=/data/whole/'
MP=$(new_mountpoint mwhole)
mount_ok --endpoint-url "$S3_URL" whole=s3://data/whole/ "$MP"
read_ok "$MP/whole_0" "$TEST_TMP/whole.exp" "after a cut in a whole-object GET"
assert_eq 1 "$(fault_stat 's.fired.cut')" "whole-object cut fired"
resumed=$(fault_stat 's.events.filter(e => e.kind === "cut").filter(e =>
	s.ranges.some(r => r.path === e.path && r.range === "bytes=" + e.breakAt + "-200000")
).length')
assert_eq 1 "$resumed" "the cut whole-object GET resumed with Range bytes=70000-200000"
plain=$(fault_stat 's.ranges.filter(r => r.path.startsWith("/data/whole/") && r.range === null).length')
assert_eq 3 "$plain" "whole-object GETs sent without a Range header"
unmount "$MP"

# ---- stalled body: --stall-timeout 2 gives up on it and resumes ----
fault_clear
fault_arm 'kind=stall&after=100000&seconds=25&count=1&match=/data/stall/one.bin'
MP=$(new_mountpoint mstall)
mount_ok --endpoint-url "$S3_URL" --part-size 1M --stall-timeout 2 stall=s3://data/stall/ "$MP"
t0=$SECONDS
read_ok "$MP/stall_0" "$TEST_TMP/stall.exp" "after a stalled body"
elapsed=$((SECONDS - t0))
assert_eq 1 "$(fault_stat 's.fired.stall')" "stall faults fired"
[ "$elapsed" -lt 20 ] ||
	fail "reading through a stall took $elapsed s: --stall-timeout 2 did not cut the stalled transfer"
unmount "$MP"

# ---- one kept connection carries large and small bodies in turn ----
# A large body raises the socket's receive low-water mark so that the
# daemon wakes per 256 KiB; it must be back at 1 when the body ends, or
# the next small response on the same connection never wakes the daemon
# (it would stall, be cut by --stall-timeout and retried on a new
# connection).
fault_clear
MP=$(new_mountpoint mkept)
mount_ok --endpoint-url "$S3_URL" --max-connections 1 --stall-timeout 2 kept=s3://data/kept/ "$MP"
read_ok "$MP/kept_0" "$TEST_TMP/kept.exp" "large and small bodies on one connection"
assert_eq 6 "$(fault_stat 's.ranges.filter(r => r.path.startsWith("/data/kept/")).length')" \
	"GETs of the six objects (a retry would add one)"
assert_eq 1 "$(fault_stat 'new Set(s.ranges.filter(r => r.path.startsWith("/data/kept/")).map(r => r.port)).size')" \
	"connections that carried the six GETs"
unmount "$MP"

# ---- the GET a reader waits for gets a head start ----
# A new reader's first read asks for its own object first (urgent), then
# for the rest of its window at once; the engine holds those prefetches
# until the server has begun to answer the urgent GET, so that they never
# stand between the server and the first bytes.  The server sits on the
# first object for a second: no other GET may reach it in that time.
fault_clear
fault_arm 'kind=delay&seconds=1&count=1&match=/data/head/obj-000000'
MP=$(new_mountpoint mhead)
mount_ok --endpoint-url "$S3_URL" head=s3://data/head/ "$MP"
read_ok "$MP/head_0" "$TEST_TMP/head.exp" "a first object answered late"
assert_eq 1 "$(fault_stat 's.fired.delay')" "delay faults fired"
assert_eq 6 "$(fault_stat 's.ranges.filter(r => r.path.startsWith("/data/head/")).length')" \
	"GETs of the six objects"
assert_eq 0 "$(fault_stat 'const d = s.events.find(e => e.kind === "delay");
s.ranges.filter(r => r.path.startsWith("/data/head/") &&
	!r.path.endsWith("/obj-000000.bin") && r.t < d.answeredAt).length')" \
	"other GETs that reached the server before it answered the first read's own GET"
unmount "$MP"

# ---- ETag changed after the listing: EIO, the daemon keeps serving ----
fault_clear
fault_arm 'kind=etag&count=1000&match=/data/etag/'
MP=$(new_mountpoint metag)
mount_ok --endpoint-url "$S3_URL" etag=s3://data/etag/ ok=s3://data/ok/ "$MP"
read_eio "$MP/etag_0" "object replaced after the listing"
[ "$(fault_stat 's.fired.etag')" -ge 1 ] || fail "the etag fault never fired"
daemon_alive "$MP"
read_ok "$MP/ok_0" "$TEST_TMP/ok.exp" "another channel after an ETag failure"
fault_clear
wait_until 10 test -e "$MP/etag_1" || fail "etag_1 did not appear after etag_0 failed and was closed"
read_ok "$MP/etag_1" "$TEST_TMP/etag.exp" "etag_1 once the object is stable again"
unmount "$MP"

# ---- persistent 500 past --max-retries 1: EIO, daemon alive ----
fault_clear
fault_arm 'kind=status&status=500&count=100000&match=/data/persist/'
MP=$(new_mountpoint mpersist)
mount_ok --endpoint-url "$S3_URL" --max-retries 1 persist=s3://data/persist/ ok=s3://data/ok/ "$MP"
t0=$SECONDS
read_eio "$MP/persist_0" "persistent 500 with --max-retries 1"
elapsed=$((SECONDS - t0))
[ "$elapsed" -lt 30 ] || fail "giving up after --max-retries 1 took $elapsed s"
daemon_alive "$MP"
# the other channel still works while the fault is armed
read_ok "$MP/ok_0" "$TEST_TMP/ok.exp" "another channel during persistent 500s"
fault_clear
wait_until 10 test -e "$MP/persist_1" || fail "persist_1 did not appear after persist_0 failed"
read_ok "$MP/persist_1" "$TEST_TMP/persist.exp" "persist_1 once the server recovered"
unmount "$MP"
note "ok"
