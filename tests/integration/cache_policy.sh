#!/bin/bash
# cache_policy: the memory cache's policy on a real mount (no disk tier).
#
# (a) Scan resistance: a 384 MiB channel with --cache-size 256M.  Epochs 1
#     and 2 each receive at most 384 - 128 MiB from S3 (the kept set, half
#     the budget, stays in memory), fetch at least 128 MiB / 8 MiB blocks
#     fewer than epoch 0 (cache.misses + cache.prefetched) and count at
#     least as many cache hits; every epoch is byte-exact.
# (b) the next epoch prefetched: with the kept set taken by another channel
#     (read first), closing epoch 0 of a channel larger than the budget
#     leaves the head of epoch 1 fetched before epoch 1 is opened (the
#     bytes received grow past what epoch 0 needed, by at least half of the
#     next-epoch prefetch, which is a quarter of the budget, and by no more
#     than it)
#     and epoch 1's first read finds its block in memory (a cache hit, no
#     miss: its first byte needs no GET); the same with a shuffled
#     channel; with --epochs 1 nothing is fetched past epoch 0.  (How much
#     sooner that first byte comes is the bench's to measure.)
# (c) Four readers of one epoch at different speeds (one unpaced, three
#     paced): all byte-exact; the fast one finishes while the slow one has
#     read less than half (it is not held back by the others' windows); the
#     daemon's peak block memory (stats memory.peak) is within the budget;
#     hardly any read fetches its block on demand (cache.misses: no
#     reader's window is evicted by another's); the bytes fetched (from
#     the server's request log) stay under one fetch per reader.
# CACHE_POLICY_PARTS (default "a b c") runs some of the parts only.

# seeding and reading about 1.5 GiB through one s3rver takes a minute or
# more on these machines
: "${S3PIPE_TEST_TIMEOUT:=600}"
. "$(cd "$(dirname "$0")/.." && pwd)/lib.sh"
require_fuse
require_cmd python3
s3_start

MIB=$((1 << 20))
: "${CACHE_POLICY_PARTS:=a b c}"

# ---- helpers ----

# stats_json MP EXPR: EXPR over the mount's `s3pipe stats --json`
stats_json() {
	"$S3PIPE" stats --json "$1" >"$TEST_TMP/stats.json" ||
		fail "s3pipe stats --json $1 failed"
	json_eval "$2" <"$TEST_TMP/stats.json"
}

received() {
	stats_json "$1" 's.s3.bytes_received'
}

# Waits until the bytes received by MP stop changing (0.5 s apart, at most
# 30 s), then prints them.
settled_received() {
	local mp=$1 a b i
	a=$(received "$mp")
	for ((i = 0; i < 60; i++)); do
		sleep 0.5
		b=$(received "$mp")
		[ "$a" = "$b" ] && break
		a=$b
	done
	printf '%s\n' "$b"
}

mib() {
	awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'
}

# read_epoch MP FILE EXPECTED WHAT: reads MP/FILE whole, checked by check
read_epoch() {
	wait_until 10 test -e "$1/$2" || fail "$2 did not appear"
	READ_TIMEOUT=180 tcat "$1/$2" >"$TEST_TMP/out" || fail "reading $2 failed"
	check "$3" "$TEST_TMP/out" "$4"
}

# check EXPECTED OUT WHAT: byte-exact (ORDER=cat), or the same 4 MiB
# objects in another order (ORDER=pieces: a shuffled epoch)
ORDER=cat
check() {
	if [ "$ORDER" = cat ]; then
		assert_file_eq "$1" "$2" "$3"
		return
	fi
	assert_eq "$(stat -c %s "$1")" "$(stat -c %s "$2")" "$3: size"
	assert_eq "$(pieces_sum "$1")" "$(pieces_sum "$2")" "$3: its objects"
}

# The sha256 of the sorted sha256s of FILE's 4 MiB pieces: the same
# objects in any order give the same sum.
pieces_sum() {
	python3 - "$1" <<'PY'
import hashlib, sys
hs = []
with open(sys.argv[1], "rb") as f:
    while True:
        b = f.read(4 << 20)
        if not b:
            break
        hs.append(hashlib.sha256(b).hexdigest())
print(hashlib.sha256("".join(sorted(hs)).encode()).hexdigest())
PY
}

# first_read MP FILE OUT: opens MP/FILE, reads 1 MiB (one block), reads
# the rest into OUT; prints the cache's misses and hits (from the stats
# file) before and after that first read.
first_read() {
	python3 - "$1" "$2" "$3" <<'PY'
import json, os, shutil, sys
mp, name, out = sys.argv[1:4]
def cache():
    with open(os.path.join(mp, ".s3pipe-stats"), "rb") as f:
        c = json.load(f)["cache"]
    return c["misses"], c["hits"]
before = cache()
fd = os.open(os.path.join(mp, name), os.O_RDONLY)
data = os.read(fd, 1 << 20)
after = cache()
with open(out, "wb") as o, os.fdopen(fd, "rb", buffering=0) as f:
    o.write(data)
    shutil.copyfileobj(f, o, 1 << 20)
print("%d %d %d %d" % (before[0], after[0], before[1], after[1]))
PY
}

# ---- (a) a 384 MiB channel, the default 256 MiB of memory ----

part_a() {
	local mp e got prev=0 hits prev_hits=0 fetched prev_fetched=0 blocks
	local blocks0=0 peak scan=$((384 * MIB))

	# whole blocks: the recycling before this policy kept nothing of
	# them (odd sizes leave tail blocks it could not recycle, by chance
	# a part of the data)
	s3_seed data scan/ 24 $((16 * MIB))
	expected_cat "$S3_LOCAL/data" scan/ >"$TEST_TMP/scan.exp"
	assert_eq "$scan" "$(stat -c %s "$TEST_TMP/scan.exp")" "scan channel size"
	mp=$(new_mountpoint scan)
	mount_ok --endpoint-url "$S3_URL" --cache-size 256M --epochs 3 \
		scan=s3://data/scan/ "$mp"
	ORDER=cat
	for e in 0 1 2; do
		read_epoch "$mp" "scan_$e" "$TEST_TMP/scan.exp" "scan_$e"
		got=$(settled_received "$mp")
		hits=$(stats_json "$mp" 's.cache.hits')
		fetched=$(json_eval 's.cache.misses + s.cache.prefetched' <"$TEST_TMP/stats.json")
		blocks=$((fetched - prev_fetched))
		[ "$e" -gt 0 ] || blocks0=$blocks
		note "(a) scan_$e: $(mib $((got - prev))) MiB received, $blocks blocks fetched, $((hits - prev_hits)) hits"
		if [ "$e" -eq 0 ]; then
			# all of it from S3, each 8 MiB block at least once
			[ "$got" -ge "$scan" ] ||
				fail "(a) scan_0 received $(mib "$got") MiB from S3, less than the channel"
			[ "$blocks" -ge 48 ] ||
				fail "(a) scan_0 fetched $blocks blocks, fewer than 384 MiB / 8 MiB"
			[ "$hits" -gt 0 ] || fail "(a) scan_0: no cache hits"
		else
			[ $((got - prev)) -le $((scan - 128 * MIB)) ] ||
				fail "(a) scan_$e received $(mib $((got - prev))) MiB from S3, more than 384 - 128 MiB"
			[ $((blocks0 - blocks)) -ge 16 ] ||
				fail "(a) scan_$e fetched $blocks blocks, not 128 MiB / 8 MiB fewer than scan_0's $blocks0"
			[ $((hits - prev_hits)) -ge 16 ] ||
				fail "(a) scan_$e: $((hits - prev_hits)) cache hits, fewer than 128 MiB / 8 MiB"
		fi
		prev=$got
		prev_hits=$hits
		prev_fetched=$fetched
	done
	peak=$(stats_json "$mp" 's.memory.peak')
	[ "$peak" -le $((256 * MIB)) ] || fail "(a) peak block memory $(mib "$peak") MiB over the budget"
	unmount "$mp"
	rm -f "$S3_LOCAL"/data/scan/* "$TEST_TMP/scan.exp"
}

# ---- (b) the next epoch prefetched ----

# fill: 40 MiB, read first, takes the kept set (32 MiB of the 64 MiB
# budget); pw: 96 MiB, larger than the budget.  The next-epoch prefetch is
# a quarter of the budget: 16 MiB.
FILL=$((40 * MIB))
PW=$((96 * MIB))
EPOCH_PREFETCH=$((16 * MIB))

# epoch_prefetch_case WHAT ARGS...: mounts fill and pw with ARGS, reads fill_0
# and pw_0, checks that pw_1's head came before pw_1 was opened and that
# its first read found its block in memory.
epoch_prefetch_case() {
	local what=$1 mp got grown m0 m1 h0 h1
	shift
	mp=$(new_mountpoint "pw-$what")
	mount_ok --endpoint-url "$S3_URL" --cache-size 64M --part-size 1M "$@" \
		fill=s3://data/fill/ pw=s3://data/pw/ "$mp"
	ORDER=cat
	[ "$what" != shuffled ] || ORDER=pieces
	read_epoch "$mp" fill_0 "$TEST_TMP/fill.exp" "($what) fill_0"
	wait_until 10 test -e "$mp/pw_0" || fail "pw_0 did not appear"
	read -r m0 m1 h0 h1 < <(first_read "$mp" pw_0 "$TEST_TMP/pw0.out")
	check "$TEST_TMP/pw.exp" "$TEST_TMP/pw0.out" "($what) pw_0"
	wait_until 10 test -e "$mp/pw_1" || fail "pw_1 did not appear"
	got=$(settled_received "$mp")
	grown=$((got - FILL - PW))
	note "($what) after pw_0: $(mib "$got") MiB received, $(mib "$grown") MiB past fill_0 + pw_0"
	[ "$grown" -ge $((EPOCH_PREFETCH / 2)) ] ||
		fail "($what) pw_1's head was not fetched before pw_1 was opened ($(mib "$grown") MiB past epoch 0)"
	[ "$grown" -le $((EPOCH_PREFETCH + MIB)) ] ||
		fail "($what) the next-epoch prefetch fetched $(mib "$grown") MiB, more than a quarter of the budget"
	read -r m0 m1 h0 h1 < <(first_read "$mp" pw_1 "$TEST_TMP/pw1.out")
	check "$TEST_TMP/pw.exp" "$TEST_TMP/pw1.out" "($what) pw_1"
	assert_eq "$m0" "$m1" "($what) cache misses of pw_1's first read"
	[ "$h1" -gt "$h0" ] ||
		fail "($what) pw_1's first read found no block in memory (hits $h0 -> $h1): its first byte waited for a GET"
	unmount "$mp"
}

part_b() {
	local mp got

	s3_seed data fill/ 10 $((4 * MIB))
	s3_seed data pw/ 24 $((4 * MIB))
	expected_cat "$S3_LOCAL/data" fill/ >"$TEST_TMP/fill.exp"
	expected_cat "$S3_LOCAL/data" pw/ >"$TEST_TMP/pw.exp"
	epoch_prefetch_case listing
	# seed 11 (the generator of s3pipe(1)): epoch 1 of the 24 objects
	# starts with objects 15, 13, 10 and 9, none of them among the last
	# 12 of epoch 0, which may still be in memory when epoch 0 ends
	epoch_prefetch_case shuffled --shuffle-seed 11

	# --epochs 1: pw_1 never exists, nothing of it is fetched
	mp=$(new_mountpoint pw-one)
	mount_ok --endpoint-url "$S3_URL" --cache-size 64M --part-size 1M \
		--epochs 1 fill=s3://data/fill/ pw=s3://data/pw/ "$mp"
	ORDER=cat
	read_epoch "$mp" fill_0 "$TEST_TMP/fill.exp" "(--epochs 1) fill_0"
	read_epoch "$mp" pw_0 "$TEST_TMP/pw.exp" "(--epochs 1) pw_0"
	got=$(settled_received "$mp")
	note "(--epochs 1) after pw_0: $(mib "$got") MiB received"
	[ "$got" -le $((FILL + PW + MIB)) ] ||
		fail "(--epochs 1) $(mib $((got - FILL - PW))) MiB fetched past epoch 0: a prefetch of an epoch that never comes"
	unmount "$mp"
	rm -f "$S3_LOCAL"/data/fill/* "$S3_LOCAL"/data/pw/*
}

# ---- (c) four readers at different speeds ----

part_c() {
	local mp i n p failed=0 fast_end slow_then peak budget misses fetched
	local multi=$((160 * MIB))
	local names=(fast mid1 mid2 slow) paces=(0 0.02 0.04 0.08) pids=()

	s3_seed data multi/ 20 $((8 * MIB))
	expected_cat "$S3_LOCAL/data" multi/ >"$TEST_TMP/multi.exp"
	mp=$(new_mountpoint multi)
	mount_ok --endpoint-url "$S3_URL" --cache-size 64M --part-size 1M \
		--epochs 1 multi=s3://data/multi/ "$mp"
	fault_clear
	for i in 0 1 2 3; do
		mkdir -p "$TEST_TMP/ctl.${names[i]}"
		python3 "$S3PIPE_SRCDIR/tests/phased_read.py" --pace "${paces[i]}" \
			"$mp/multi_0" "$TEST_TMP/multi.${names[i]}" \
			"$TEST_TMP/ctl.${names[i]}" &
		pids+=($!)
	done
	for p in "${pids[@]}"; do
		wait "$p" || failed=$((failed + 1))
	done
	[ "$failed" -eq 0 ] || fail "(c) $failed of 4 readers failed"
	for n in "${names[@]}"; do
		assert_file_eq "$TEST_TMP/multi.exp" "$TEST_TMP/multi.$n" "(c) reader $n"
	done
	# where the slow reader was when the fast one had read everything
	fast_end=$(tail -n 1 "$TEST_TMP/ctl.fast/reads" | cut -d' ' -f1)
	slow_then=$(awk -v t="$fast_end" '$1 <= t { b = $2 } END { print b + 0 }' \
		"$TEST_TMP/ctl.slow/reads")
	note "(c) when the fast reader finished the slow one had read $(mib "$slow_then") of $(mib "$multi") MiB"
	[ "$slow_then" -lt $((multi / 2)) ] ||
		fail "(c) the fast reader finished only when the slow one had read $(mib "$slow_then") MiB: held back"
	peak=$(stats_json "$mp" 's.memory.peak')
	budget=$(json_eval 's.memory.budget' <"$TEST_TMP/stats.json")
	misses=$(json_eval 's.cache.misses' <"$TEST_TMP/stats.json")
	note "(c) $misses reads fetched their block on demand (not in memory, not prefetched)"
	# a read that finds its block neither in memory nor coming had its
	# window taken by another reader (before this policy: over 100 here)
	[ "$misses" -le 8 ] ||
		fail "(c) $misses reads fetched on demand: readers' windows were evicted by others"
	[ "$peak" -le "$budget" ] ||
		fail "(c) peak block memory $(mib "$peak") MiB over the budget $(mib "$budget") MiB"
	# the bytes fetched, from the server's log of GETs
	fetched=$(fault_stats | json_eval 's.ranges.filter(r => r.path.includes("/multi/")).reduce((bytes, r) => {
		const m = /bytes=(\d+)-(\d+)/.exec(r.range || "");
		return bytes + (m ? Number(m[2]) - Number(m[1]) + 1 : 8 * 1048576);
	}, 0)')
	note "(c) $(mib "$fetched") MiB fetched for a $(mib "$multi") MiB epoch read 4 times ($(awk -v a="$fetched" -v b="$multi" 'BEGIN { printf "%.2f", a / b }') x); peak memory $(mib "$peak") MiB"
	[ "$fetched" -ge "$multi" ] ||
		fail "(c) $(mib "$fetched") MiB fetched: less than the epoch (the server's log is incomplete)"
	[ "$fetched" -le $((4 * multi)) ] ||
		fail "(c) $(mib "$fetched") MiB fetched: more than once per reader"
	unmount "$mp"
}

s3_mb data
for part in a b c; do
	case " $CACHE_POLICY_PARTS " in
	*" $part "*) "part_$part" ;;
	esac
done
note "ok"
