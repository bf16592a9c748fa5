#!/bin/bash
# load: 16 concurrent readers across 4 channels for 3 epochs.  Each channel
# has four readers that open every epoch together and read it to the end;
# every stream must equal the channel's objects byte for byte, and the
# daemon's peak RSS (VmHWM) must stay within the cache budget + 64 MiB.
# (The RSS bound is checked on a plain build only: ASan's shadow memory and
# quarantine are not the daemon's.)
. "$(cd "$(dirname "$0")/.." && pwd)/lib.sh"
require_fuse
s3_start

CHANNELS=4
READERS=4 # per channel
EPOCHS=3
BUDGET_MIB=48

s3_mb data
args=()
for ((c = 0; c < CHANNELS; c++)); do
	# 12 MiB a channel, in objects of different sizes (not block-aligned)
	s3_seed data "c$c/a-" 3 1500000
	s3_seed data "c$c/b-" 5 1700001
	expected_cat "$S3_LOCAL/data" "c$c/" >"$TEST_TMP/c$c.exp"
	args+=("c$c=s3://data/c$c/")
done

MP=$(new_mountpoint load)
mount_ok --endpoint-url "$S3_URL" --cache-size "${BUDGET_MIB}M" --part-size 1M \
	--epochs "$EPOCHS" "${args[@]}" "$MP"
pid=$(worker_pids "$MP")
[ -n "$pid" ] || fail "no worker found for $MP"

# reader C R: reads epochs 0..EPOCHS-1 of channel C, each into its own file
reader() {
	local c=$1 r=$2 e
	for ((e = 0; e < EPOCHS; e++)); do
		wait_until 30 test -e "$MP/c${c}_$e" || {
			echo "c${c}_$e did not appear" >"$TEST_TMP/err.$c.$r"
			return 1
		}
		READ_TIMEOUT=120 tcat "$MP/c${c}_$e" >"$TEST_TMP/out.$c.$r.$e" || {
			echo "reading c${c}_$e failed" >"$TEST_TMP/err.$c.$r"
			return 1
		}
	done
}

readers=()
for ((c = 0; c < CHANNELS; c++)); do
	for ((r = 0; r < READERS; r++)); do
		reader "$c" "$r" &
		readers+=($!)
	done
done
failed=0
for p in "${readers[@]}"; do
	wait "$p" || failed=$((failed + 1))
done
[ "$failed" -eq 0 ] || fail "$failed of $((CHANNELS * READERS)) readers failed: $(cat "$TEST_TMP"/err.* 2>/dev/null | tr '\n' ';')"

streams=0
for ((c = 0; c < CHANNELS; c++)); do
	for ((r = 0; r < READERS; r++)); do
		for ((e = 0; e < EPOCHS; e++)); do
			assert_file_eq "$TEST_TMP/c$c.exp" "$TEST_TMP/out.$c.$r.$e" \
				"reader $r of c${c}_$e"
			streams=$((streams + 1))
		done
	done
done
assert_eq $((CHANNELS * READERS * EPOCHS)) "$streams" "streams checked"

hwm_kib=$(awk '/^VmHWM:/ { print $2 }' "/proc/$pid/status")
[ -n "$hwm_kib" ] || fail "cannot read VmHWM of daemon $pid"
limit_kib=$(((BUDGET_MIB + 64) * 1024))
bytes=$((streams * $(stat -c %s "$TEST_TMP/c0.exp")))
note "$streams streams byte-exact ($((bytes >> 20)) MiB); peak RSS $((hwm_kib / 1024)) MiB (budget ${BUDGET_MIB} MiB + 64)"
if [ -n "${S3PIPE_SANITIZERS:-}" ] || grep -qa __asan_init "$S3PIPE"; then
	note "sanitizer build: peak RSS not checked against the budget"
else
	[ "$hwm_kib" -le "$limit_kib" ] ||
		fail "peak RSS $((hwm_kib / 1024)) MiB is above the budget ${BUDGET_MIB} MiB + 64 MiB"
fi
unmount "$MP"
