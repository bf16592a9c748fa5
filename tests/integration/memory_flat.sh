#!/bin/bash
# memory_flat: reading an epoch keeps nothing per key read, on a real
# mount.  A synthetic bucket of N keys in the skewed layout (most in one
# run of sequential shard names, the rest in deep and sparse folders and
# unicode ones) is read in key order through a small budget, and
# `s3pipe stats --json` is sampled while a reader moves through it: the
# cache's records ("objects" and "segments": what it holds outside the
# budget) stay below one in eight keys the whole way (the code before
# this test kept one of each a key read, N by the end), and what the
# channel holds stays flat.  Then:
#   - train_1 lists again and is the same bytes, as flat;
#   - a second reader opened once the first is well into train_2 (the
#     stream dropped its start) reads all of it, byte-exact;
#   - a shuffled channel of the same keys is as flat.
# Gunzipped and converted channels: the unit tests (test_gzip_flat,
# test_flat_converted).
. "$(cd "$(dirname "$0")/.." && pwd)/lib.sh"
require_fuse
require_cmd python3

N=40000
S3_SERVER_ARGS=(--synthetic "flat=$N:skewed")
s3_start
E=(--endpoint-url "$S3_URL" --cache-size 2M --part-size 512K)

s3_curl -sS -f "$S3_URL/__synthetic/keys?bucket=flat&prefix=data%2F" \
	>"$TEST_TMP/keys.tsv" || fail "cannot read the synthetic key list"
assert_eq "$N" "$(wc -l <"$TEST_TMP/keys.tsv")" "keys in the synthetic bucket"

# the epoch's bytes in key order, from the server's key list and its
# content formula (tests/s3server/server.js)
/usr/bin/env python3 - "$TEST_TMP/keys.tsv" "$TEST_TMP/want" <<'PY'
import hashlib, sys, urllib.parse
with open(sys.argv[1]) as f, open(sys.argv[2], "wb") as out:
    for line in f:
        k, size = line.rstrip("\n").split("\t")[:2]
        k, size = urllib.parse.unquote(k), int(size)
        if size:
            h = hashlib.md5(k.encode()).hexdigest()
            out.write((h * (size // 32 + 1))[:size].encode())
PY

# read_sampled MP FILE OUT: reads FILE whole in 256 KiB reads, and every
# 64 reads (and at the end) writes the mount's cache.objects,
# cache.segments and catalog bytes to OUT.samples, a line each
read_sampled() {
	/usr/bin/env python3 - "$S3PIPE" "$1" "$2" "$3" <<'PY' ||
import json, subprocess, sys
s3pipe, mp, path, out = sys.argv[1:5]
def sample(f):
    d = json.loads(subprocess.run([s3pipe, "stats", "--json", mp], check=True,
                                  capture_output=True).stdout)
    f.write("%d %d %d\n" % (d["cache"]["objects"], d["cache"]["segments"],
                            sum(c["catalog"]["bytes"] for c in d["channels"])))
with open(path, "rb", buffering=0) as src, open(out, "wb") as dst, \
        open(out + ".samples", "w") as f:
    n = 0
    while True:
        b = src.read(256 << 10)
        if not b:
            break
        dst.write(b)
        n += 1
        if n % 64 == 1:
            sample(f)
    sample(f)
PY
		fail "reading $2 with stats samples failed"
}

# flat WHAT SAMPLES: every sample below N/8 records of each kind, and
# what the channel holds (its catalog, plans and streams) at the end at
# most 8 bytes a key above the first sample: the next epoch's plan, 4 a
# key, may be made meanwhile
flat() {
	local what="$1" samples="$2" n
	n=$(wc -l <"$samples")
	[ "$n" -ge 4 ] || fail "$what: only $n stats samples"
	awk -v n="$N" -v what="$what" '
		NR == 1 { cat0 = $3 }
		{ if ($1 > mo) mo = $1; if ($2 > ms) ms = $2; cat = $3 }
		END {
			printf "%s: at most %d objects and %d segments held over %d keys; catalog %d -> %d bytes\n",
				what, mo, ms, n, cat0, cat
			if (mo >= n / 8 || ms >= n / 8 || cat > cat0 + 8 * n) exit 1
		}' "$samples" >>"$TEST_TMP/flat.txt" ||
		fail "$what: records grew with the keys read: $(tail -n 1 "$TEST_TMP/flat.txt")"
	note "$(tail -n 1 "$TEST_TMP/flat.txt")"
}

# ---- key order: every epoch lists again, one page ahead ----
MP=$(new_mountpoint keyorder)
mount_ok "${E[@]}" train=s3://flat/data/ "$MP"
wait_until 10 test -e "$MP/train_0" || fail "train_0 did not appear"
read_sampled "$MP" "$MP/train_0" "$TEST_TMP/got"
assert_file_eq "$TEST_TMP/want" "$TEST_TMP/got" "key order, epoch 0"
flat "key order, epoch 0" "$TEST_TMP/got.samples"
wait_until 10 test -e "$MP/train_1" || fail "train_1 did not appear"
read_sampled "$MP" "$MP/train_1" "$TEST_TMP/got"
assert_file_eq "$TEST_TMP/want" "$TEST_TMP/got" "key order, epoch 1 (listed again)"
flat "key order, epoch 1" "$TEST_TMP/got.samples"

# a reader that opens train_2 once another is far into it: the stream
# dropped its start, the late reader gets a listing of its own
wait_until 10 test -e "$MP/train_2" || fail "train_2 did not appear"
exec 7<"$MP/train_2"
head -c $(($(wc -c <"$TEST_TMP/want") / 2)) <&7 >/dev/null ||
	fail "reading half of train_2 failed"
tcat "$MP/train_2" >"$TEST_TMP/got" || fail "the late reader of train_2 failed"
assert_file_eq "$TEST_TMP/want" "$TEST_TMP/got" "a late reader of epoch 2"
cat <&7 >/dev/null || fail "the first reader of train_2 could not go on"
exec 7<&-
unmount "$MP"

# ---- shuffled (a plan over the catalog) ----
MP=$(new_mountpoint shuffled)
mount_ok "${E[@]}" --shuffle-seed 3 train=s3://flat/data/ "$MP"
wait_until 10 test -e "$MP/train_0" || fail "train_0 did not appear"
read_sampled "$MP" "$MP/train_0" "$TEST_TMP/got"
assert_eq "$(wc -c <"$TEST_TMP/want")" "$(wc -c <"$TEST_TMP/got")" "shuffled epoch's bytes"
flat "shuffled, epoch 0" "$TEST_TMP/got.samples"
unmount "$MP"

note "ok"
