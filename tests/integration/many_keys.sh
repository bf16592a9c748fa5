#!/bin/bash
# many_keys: a prefix of many keys, listed by key ranges at once, on a
# synthetic bucket of the test server (keys made by the server: most under
# one deep folder, shallow and deep folders, unicode with 2-, 3- and
# 4-byte characters and a space and a plus, keys that extend others, keys
# that differ in their last byte, empty objects and a folder marker; pages
# of at most 40 keys, so that there are many). Expected bytes come from
# the server's own key list and its content formula, never from s3pipe.
#
#   - in key order: train_0 is every non-empty object, byte-exact;
#   - shuffled (Seed 5), with 16 listers and with 1: the epoch is the
#     documented order of s3pipe(1) over the key-ordered objects, the
#     same however the listing was split; the listers used start-after;
#   - two shards in key order (streamed as the listing goes) and two
#     shards shuffled: disjoint, together every object once, each the
#     positions p mod 2 of its epoch's order;
#   - a LIST that fails mid-listing (500 after the engine's retries run
#     out is not this: one 500 is retried) and a SlowDown storm on LIST:
#     the mount comes up, nothing lost or doubled;
#   - --cache-dir keeps the listing; with --listing-ttl the next mount
#     starts from it with no LIST, byte-exact; a corrupt file is ignored
#     with one log line and the prefix listed again; an old one is
#     listed again;
#   - a key-order channel saves the listing it streams; with --listing-ttl
#     its next epoch and the next mount read it back a page at a time,
#     with no LIST, byte-exact (a shuffled mount starts from it too);
#     without, every epoch lists again.
. "$(cd "$(dirname "$0")/.." && pwd)/lib.sh"
require_fuse
require_cmd python3

N=4000
S3_SERVER_ARGS=(--synthetic "synth=$N" --synthetic-page-keys 40)
s3_start
E=(--endpoint-url "$S3_URL")

synth_stats() {	# EXPR over the synthetic stats
	s3_curl -sS -f "$S3_URL/__synthetic/stats" | json_eval "$1"
}
synth_reset() {
	s3_curl -sS -f -o /dev/null -X DELETE "$S3_URL/__synthetic/stats" ||
		fail "cannot reset the synthetic stats"
}

# The server's keys under data/, in ListObjectsV2 order: "KEY<TAB>SIZE" a
# line (the key percent-encoded).
s3_curl -sS -f "$S3_URL/__synthetic/keys?bucket=synth&prefix=data%2F" \
	>"$TEST_TMP/keys.tsv" || fail "cannot read the synthetic key list"
assert_eq "$N" "$(wc -l <"$TEST_TMP/keys.tsv")" "keys in the synthetic bucket"

# expect OUT [SEED EPOCH] [INDEX COUNT]: the bytes an epoch must hold: the
# non-empty objects in key order, shuffled as s3pipe(1) specifies when a
# seed is given ("-" for none), then positions p mod COUNT == INDEX.
expect() {
	/usr/bin/env python3 - "$S3PIPE_SRCDIR/tests" "$TEST_TMP/keys.tsv" "$@" <<'PY'
import hashlib, sys, urllib.parse
tests, tsv, out = sys.argv[1], sys.argv[2], sys.argv[3]
seed = sys.argv[4] if len(sys.argv) > 4 else "-"
epoch = int(sys.argv[5]) if len(sys.argv) > 5 else 0
index, count = (int(sys.argv[6]), int(sys.argv[7])) if len(sys.argv) > 7 else (0, 1)
items = []
with open(tsv) as f:
    for line in f:
        k, size = line.rstrip("\n").split("\t")[:2]
        if int(size) > 0:
            items.append((urllib.parse.unquote(k), int(size)))
sys.path.insert(0, tests)
from epoch_order import shuffle
if seed != "-":
    shuffle(items, seed, epoch)
items = items[index::count]
with open(out, "wb") as f:
    for k, size in items:
        h = hashlib.md5(k.encode()).hexdigest()
        f.write((h * (size // 32 + 1))[:size].encode())
PY
}

# read_epoch MOUNTPOINT EPOCH OUT
read_epoch() {
	wait_until 10 test -e "$1/train_$2" || fail "train_$2 did not appear in $1"
	tcat "$1/train_$2" >"$3" || fail "reading $1/train_$2 failed"
}

# ---- in key order: streams page by page ----
expect "$TEST_TMP/want.key"
MP=$(new_mountpoint keyorder)
mount_ok "${E[@]}" train=s3://synth/data/ "$MP"
read_epoch "$MP" 0 "$TEST_TMP/got"
assert_file_eq "$TEST_TMP/want.key" "$TEST_TMP/got" "key order, epoch 0"
unmount "$MP"

# ---- shuffled: 16 listers, then 1 ----
expect "$TEST_TMP/want.s0" 5 0
expect "$TEST_TMP/want.s1" 5 1
for listers in 16 1; do
	synth_reset
	MP=$(new_mountpoint "shuffled$listers")
	mount_ok "${E[@]}" --shuffle-seed 5 --max-listers "$listers" \
		train=s3://synth/data/ "$MP"
	lists=$(synth_stats 's.lists')
	# 4000 keys in pages of at most 40: 100 pages in a row for one lister
	if [ "$listers" = 1 ]; then
		assert_eq 100 "$lists" "LIST requests of one lister (100 pages)"
	elif [ "$lists" -lt 100 ]; then
		fail "16 listers made $lists LIST requests: fewer than the pages"
	fi
	read_epoch "$MP" 0 "$TEST_TMP/got"
	assert_file_eq "$TEST_TMP/want.s0" "$TEST_TMP/got" "shuffled, $listers listers, epoch 0"
	read_epoch "$MP" 1 "$TEST_TMP/got"
	assert_file_eq "$TEST_TMP/want.s1" "$TEST_TMP/got" "shuffled, $listers listers, epoch 1"
	unmount "$MP"
done
grep -q 'key ranges at once' "$TEST_TMP/mount.err" ||
	fail "the mount did not say how it listed: $(head -n 3 "$TEST_TMP/mount.err")"

# ---- two shards, in key order and shuffled ----
for seed in - 9; do
	args=()
	[ "$seed" = - ] || args=(--shuffle-seed "$seed")
	for h in 0 1; do
		expect "$TEST_TMP/want.h$h" "$seed" 0 "$h" 2
		MP=$(new_mountpoint "shard$seed$h")
		mount_ok "${E[@]}" "${args[@]}" --sharded --host-index "$h" --host-count 2 \
			train=s3://synth/data/ "$MP"
		read_epoch "$MP" 0 "$TEST_TMP/got.h$h"
		assert_file_eq "$TEST_TMP/want.h$h" "$TEST_TMP/got.h$h" "seed $seed, host $h of 2"
		unmount "$MP"
	done
	assert_eq "$(wc -c <"$TEST_TMP/want.key")" \
		"$(($(wc -c <"$TEST_TMP/got.h0") + $(wc -c <"$TEST_TMP/got.h1")))" \
		"seed $seed: the two shares' bytes add up to the whole"
done

# ---- a LIST that fails once mid-listing; a SlowDown storm on LIST ----
fault_clear
fault_arm 'kind=status&status=500&count=1&list=1&match=start-after'
MP=$(new_mountpoint listfail)
mount_ok "${E[@]}" --shuffle-seed 5 train=s3://synth/data/ "$MP"
assert_eq 1 "$(fault_stat 's.fired.status')" "the LIST failure fired"
read_epoch "$MP" 0 "$TEST_TMP/got"
assert_file_eq "$TEST_TMP/want.s0" "$TEST_TMP/got" "after a failed LIST page"
unmount "$MP"
fault_clear
fault_arm 'kind=status&status=503&count=1000000&prob=0.3&list=1'
MP=$(new_mountpoint slowdown)
mount_ok "${E[@]}" --shuffle-seed 5 train=s3://synth/data/ "$MP"
fault_disarm
fired=$(fault_stat 's.fired.status')
[ "$fired" -gt 0 ] || fail "the SlowDown storm never fired"
read_epoch "$MP" 0 "$TEST_TMP/got"
assert_file_eq "$TEST_TMP/want.s0" "$TEST_TMP/got" "through $fired SlowDown answers to LIST"
unmount "$MP"
fault_clear

# ---- the listing kept in --cache-dir ----
CD="$TEST_TMP/cachedir"
mkdir -p "$CD"
KEEP=(--cache-dir "$CD" --cache-dir-size 64M --shuffle-seed 5)
MP=$(new_mountpoint keep1)
mount_ok "${E[@]}" "${KEEP[@]}" train=s3://synth/data/ "$MP"
unmount "$MP"
saved=("$CD"/s3pipe-listings/*.listing)
[ -f "${saved[0]}" ] || fail "no listing saved in $CD/s3pipe-listings"
assert_eq 600 "$(stat -c %a "${saved[0]}")" "the saved listing's mode"

synth_reset
MP=$(new_mountpoint keep2)
mount_ok "${E[@]}" "${KEEP[@]}" --listing-ttl 3600 train=s3://synth/data/ "$MP"
assert_eq 0 "$(synth_stats 's.lists')" "LIST requests with a fresh saved listing"
grep -q 'no LIST' "$TEST_TMP/mount.err" || fail "the mount did not say it used the saved listing"
read_epoch "$MP" 0 "$TEST_TMP/got"
assert_file_eq "$TEST_TMP/want.s0" "$TEST_TMP/got" "from the saved listing"
unmount "$MP"

# a corrupt file: one line, listed again, the same bytes
printf 'X' | dd of="${saved[0]}" bs=1 seek=100 conv=notrunc status=none
synth_reset
MP=$(new_mountpoint keep3)
mount_ok "${E[@]}" "${KEEP[@]}" --listing-ttl 3600 train=s3://synth/data/ "$MP"
assert_eq 1 "$(grep -c 'ignoring the saved listing' "$TEST_TMP/mount.err")" \
	"log lines about the corrupt listing"
[ "$(synth_stats 's.lists')" -gt 0 ] || fail "a corrupt saved listing was used"
read_epoch "$MP" 0 "$TEST_TMP/got"
assert_file_eq "$TEST_TMP/want.s0" "$TEST_TMP/got" "after a corrupt saved listing"
unmount "$MP"

# too old for the ttl: listed again (the file says when it was listed)
older_than_2s() { [ $(($(date +%s) - $(stat -c %Y "$1"))) -ge 2 ]; }
wait_until 10 older_than_2s "${saved[0]}" || fail "the clock did not move"
synth_reset
MP=$(new_mountpoint keep4)
mount_ok "${E[@]}" "${KEEP[@]}" --listing-ttl 1 train=s3://synth/data/ "$MP"
[ "$(synth_stats 's.lists')" -gt 0 ] || fail "a saved listing older than --listing-ttl was used"
unmount "$MP"

# ---- a key-order channel's listing, saved as it streams ----
CD2="$TEST_TMP/cachedir2"
mkdir -p "$CD2"
KO=(--cache-dir "$CD2" --cache-dir-size 64M)
has_listing() { compgen -G "$CD2/s3pipe-listings/*.listing" >/dev/null; }
synth_reset
MP=$(new_mountpoint order1)
mount_ok "${E[@]}" "${KO[@]}" --listing-ttl 3600 train=s3://synth/data/ "$MP"
read_epoch "$MP" 0 "$TEST_TMP/got"
assert_file_eq "$TEST_TMP/want.key" "$TEST_TMP/got" "key order, epoch 0, recording its listing"
# (saved once the listing is complete, on a thread of its own)
wait_until 30 has_listing || fail "the key-order listing was not saved in $CD2"
lists=$(synth_stats 's.lists')
read_epoch "$MP" 1 "$TEST_TMP/got"
assert_file_eq "$TEST_TMP/want.key" "$TEST_TMP/got" "key order, epoch 1 from the saved listing"
assert_eq "$lists" "$(synth_stats 's.lists')" "LIST requests for epoch 1 with the listing saved"
unmount "$MP"
# the next mount: no LIST at all, its epochs a page at a time from the
# file; a shuffled mount's catalog loads from the same file
synth_reset
MP=$(new_mountpoint order2)
mount_ok "${E[@]}" "${KO[@]}" --listing-ttl 3600 train=s3://synth/data/ "$MP"
grep -q 'epoch 0 from the listing saved' "$TEST_TMP/mount.err" ||
	fail "the mount did not say it read the saved listing: $(head -n 3 "$TEST_TMP/mount.err")"
read_epoch "$MP" 0 "$TEST_TMP/got"
assert_file_eq "$TEST_TMP/want.key" "$TEST_TMP/got" "key order, the next mount from the saved listing"
unmount "$MP"
MP=$(new_mountpoint order3)
mount_ok "${E[@]}" "${KO[@]}" --listing-ttl 3600 --shuffle-seed 5 train=s3://synth/data/ "$MP"
read_epoch "$MP" 0 "$TEST_TMP/got"
assert_file_eq "$TEST_TMP/want.s0" "$TEST_TMP/got" "shuffled, from a listing a key-order channel saved"
unmount "$MP"
assert_eq 0 "$(synth_stats 's.lists')" "LIST requests of two mounts with the listing saved"
# without --listing-ttl each epoch lists again
MP=$(new_mountpoint order4)
mount_ok "${E[@]}" "${KO[@]}" train=s3://synth/data/ "$MP"
read_epoch "$MP" 0 "$TEST_TMP/got"
lists=$(synth_stats 's.lists')
read_epoch "$MP" 1 "$TEST_TMP/got"
assert_file_eq "$TEST_TMP/want.key" "$TEST_TMP/got" "key order, epoch 1 listed again"
[ "$(synth_stats 's.lists')" -gt "$lists" ] || fail "epoch 1 did not list again without --listing-ttl"
unmount "$MP"

note "ok"
