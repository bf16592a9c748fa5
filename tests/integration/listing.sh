#!/bin/bash
# listing: what a channel is made of. A prefix of more than one 1000-key
# ListObjectsV2 page; empty objects; folder markers ("dir/") skipped; keys
# with spaces and non-ASCII characters; a prefix that is a plain string (no
# trailing '/'); a prefix with no objects; the whole bucket (no prefix).
. "$(cd "$(dirname "$0")/.." && pwd)/lib.sh"
require_fuse
s3_start

# ---- data ----
s3_mb big
s3_seed big many/ 1100 517
s3_mb mixed
rnd() {	# SIZE -> a new random file, path printed
	local f
	f=$(mktemp "$TEST_TMP/rnd.XXXXXX")
	head -c "$1" /dev/urandom >"$f"
	printf '%s\n' "$f"
}
s3_put mixed "a b/é ü.bin" "$(rnd 3001)"
s3_put_marker mixed "dir/"
s3_put mixed "dir/empty.bin" "$(rnd 0)"
s3_put mixed "dir/x.bin" "$(rnd 70001)"
s3_put_marker mixed "dir/sub/"
s3_put mixed "dir/sub/y.bin" "$(rnd 12345)"
s3_put_marker mixed "emptydir/"
s3_put mixed "plain-000.bin" "$(rnd 1000)"
s3_put mixed "plain-001.bin" "$(rnd 0)"
s3_put mixed "plain-002.bin" "$(rnd 2000)"
s3_put mixed "plainly.bin" "$(rnd 333)"
s3_put mixed "zero.bin" "$(rnd 0)"
s3_put mixed "日本.bin" "$(rnd 4099)"
s3_put mixed "日本語/x.bin" "$(rnd 5003)"
# a key whose encoded URL passes 1,000 characters (each of these characters
# is 3 bytes, 9 once percent-encoded)
long_part=$(printf '語%.0s' $(seq 40))
s3_mb long
s3_put long "k/$long_part/$long_part/$long_part.bin" "$(rnd 7777)"

# The expected bytes come from the local copies in byte order of the keys;
# make sure the server lists in that order too (else the test, not the
# daemon, is wrong).
for spec in "big many/" "mixed " "mixed dir/" "mixed plain" "mixed 日本"; do
	b=${spec%% *} p=${spec#* }
	s3_list_keys "$b" "$p" | grep -v '/$' >"$TEST_TMP/keys.listed" || true
	(cd "$S3_LOCAL/$b" && find . -type f | sed 's|^\./||' | sort | { grep "^$p" || true; }) >"$TEST_TMP/keys.local"
	cmp -s "$TEST_TMP/keys.listed" "$TEST_TMP/keys.local" ||
		fail "test setup: server listing order of $b/$p differs from byte order: $(diff "$TEST_TMP/keys.local" "$TEST_TMP/keys.listed" | head -5)"
done
[ "$(s3_list_keys big many/ | wc -l)" -eq 1100 ] || fail "test setup: expected 1100 keys"

expected_cat "$S3_LOCAL/big" many/ >"$TEST_TMP/many.exp"
expected_cat "$S3_LOCAL/mixed" "" >"$TEST_TMP/all.exp"
expected_cat "$S3_LOCAL/mixed" dir/ >"$TEST_TMP/dir.exp"
expected_cat "$S3_LOCAL/long" k/ >"$TEST_TMP/long.exp"
expected_cat "$S3_LOCAL/mixed" plain >"$TEST_TMP/plain.exp"
expected_cat "$S3_LOCAL/mixed" 日本 >"$TEST_TMP/jp.exp"
expected_cat "$S3_LOCAL/mixed" "a b/" >"$TEST_TMP/space.exp"

MP=$(new_mountpoint)
fault_clear
mount_ok --endpoint-url "$S3_URL" --part-size 64K \
	many=s3://big/many/ all=s3://mixed dir=s3://mixed/dir/ plain=s3://mixed/plain \
	jp=s3://mixed/日本 "space=s3://mixed/a b/" emptydir=s3://mixed/emptydir/ \
	none=s3://mixed/nothing-here/ long=s3://long/k/ "$MP"

check() {	# CHANNEL EXPECTED_FILE
	local ch=$1 exp=$2 size
	size=$(stat -c %s "$exp")
	tcat "$MP/${ch}_0" >"$TEST_TMP/out" || fail "reading ${ch}_0 failed"
	assert_file_eq "$exp" "$TEST_TMP/out" "${ch}_0"
	assert_eq "$size" "$(stat -c %s "$MP/${ch}_0")" "st_size of ${ch}_0"
	wait_until 10 test -e "$MP/${ch}_1" || fail "${ch}_1 did not appear after ${ch}_0 was read"
}

check many "$TEST_TMP/many.exp"
[ "$(fault_stat 's.lists')" -ge 2 ] ||
	fail "expected the 1100-key prefix to take at least 2 list requests, server saw $(fault_stat 's.lists')"
check all "$TEST_TMP/all.exp"
check dir "$TEST_TMP/dir.exp"
check plain "$TEST_TMP/plain.exp"
check jp "$TEST_TMP/jp.exp"
check space "$TEST_TMP/space.exp"
: >"$TEST_TMP/empty.exp"
check emptydir "$TEST_TMP/empty.exp"
check none "$TEST_TMP/empty.exp"
check long "$TEST_TMP/long.exp"

# a second epoch of the big listing is byte-exact too
tcat "$MP/many_1" >"$TEST_TMP/out" || fail "reading many_1 failed"
assert_file_eq "$TEST_TMP/many.exp" "$TEST_TMP/out" "many_1"

# folder markers are skipped: never fetched
markers=$(fault_stat 's.ranges.filter(r => r.path.endsWith("/")).map(r => r.path).join(" ")')
assert_eq "" "$markers" "GET requests for folder markers"

unmount "$MP"
assert_not_mounted "$MP"

# st_size is 0 until the listing is complete: hold the second list page back
# for 4 s (the server stalls it, then drops the connection; the daemon
# retries), so for a while only the first 1000 keys are known
fault_clear
fault_arm 'kind=stall&list=1&after=0&seconds=4&count=1&match=continuation-token'
MP=$(new_mountpoint slow)
t0=$(date +%s%N)
mount_ok --endpoint-url "$S3_URL" many=s3://big/many/ "$MP"
size=$(stat -c %s "$MP/many_0")
ms=$((($(date +%s%N) - t0) / 1000000))
total=$(stat -c %s "$TEST_TMP/many.exp")
if [ "$ms" -lt 3000 ]; then
	assert_eq 0 "$size" "st_size of many_0 while its listing is incomplete (${ms} ms after start)"
else
	assert_eq "$total" "$size" "st_size of many_0 after a ${ms} ms start-up"
	note "many_0: a ${ms} ms start-up outlasted the stalled page: st_size while listing not checked"
fi
# the listing is streamed: the first bytes come while page 2 is stalled
t0=$(date +%s%N)
head -c 4096 "$MP/many_0" >"$TEST_TMP/head" || fail "reading the start of many_0 with a stalled list page failed"
ms=$((($(date +%s%N) - t0) / 1000000))
head -c 4096 "$TEST_TMP/many.exp" >"$TEST_TMP/head.exp"
assert_file_eq "$TEST_TMP/head.exp" "$TEST_TMP/head" "the first 4096 bytes of many_0"
if [ "$ms" -lt 3000 ]; then
	assert_eq 0 "$(stat -c %s "$MP/many_0")" "st_size of many_0 after its first bytes were read (${ms} ms), listing still stalled"
fi
tcat "$MP/many_0" >"$TEST_TMP/out" || fail "reading many_0 with a stalled list page failed"
assert_file_eq "$TEST_TMP/many.exp" "$TEST_TMP/out" "many_0 with a stalled list page"
assert_eq 1 "$(fault_stat 's.fired.stall')" "stalled list pages"
assert_eq "$total" "$(stat -c %s "$MP/many_0")" "st_size of many_0 once listed"
unmount "$MP"
note "ok"
