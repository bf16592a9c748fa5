#!/bin/bash
# tree_pytorch: a FastFile channel read the way a PyTorch job reads it.
# About 200 objects in a few folders (and at the top, an empty one, one
# larger than a part), mounted with --input-mode fastfile --shuffle-seed 5,
# read by contrib/examples/pytorch_fastfile.py: 4 DataLoader workers, 2
# epochs, in the order of MOUNT/.s3pipe-order/img_N, every file compared
# with its local copy.  Every file is read once an epoch, byte for byte;
# the stats then show the order files read (orders >= 2) and opens that
# found their file prefetched (opens_prefetched > 0).  The order files of
# epochs 0 and 1 are two different permutations of the keys; without a
# seed the order file still exists and is key order; the root lists only
# the channel.
# Where no python3 here imports torch (Debian: python3-torch), the same
# reading is done by a multiprocessing.Pool of 4 workers (below) instead,
# and the same things are checked; the test says so.
: "${S3PIPE_TEST_TIMEOUT:=240}"
. "$(cd "$(dirname "$0")/.." && pwd)/lib.sh"
require_fuse
require_cmd python3
EXAMPLE="$S3PIPE_SRCDIR/contrib/examples/pytorch_fastfile.py"
[ -f "$EXAMPLE" ] || fail "the example is missing: $EXAMPLE"
# the python3 on PATH, or Debian's, whichever imports torch
PY=""
for p in python3 /usr/bin/python3; do
	if command -v "$p" >/dev/null && "$p" -c 'import torch' 2>/dev/null; then
		PY=$p
		break
	fi
done
s3_start

s3_mb data
s3_seed data img/cats/ 100 3000
s3_seed data img/dogs/ 90 70001
s3_seed data img/ 5 1234
: >"$TEST_TMP/empty"
s3_put data img/empty/nothing.bin "$TEST_TMP/empty"
head -c 9000001 /dev/urandom >"$TEST_TMP/big"
s3_put data img/big/over-a-part.bin "$TEST_TMP/big"
LOCAL="$S3_LOCAL/data/img"
N=$(find "$LOCAL" -type f | wc -l)
BYTES=$(find "$LOCAL" -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')
(cd "$LOCAL" && find . -type f | sed 's|^\./||' | LC_ALL=C sort) >"$TEST_TMP/keys"

MP=$(new_mountpoint ff)
mount_ok --endpoint-url "$S3_URL" --input-mode fastfile --shuffle-seed 5 img=s3://data/img/ "$MP"
assert_eq ". .. img" "$(ls -a "$MP" | tr '\n' ' ' | sed 's/ $//')" "ls -a of the mount"
tcat "$MP/.s3pipe-stats" >"$TEST_TMP/stats0.json" || fail "cat .s3pipe-stats failed"
assert_eq "$N" "$(json_eval 's.channels[0].tree.files' <"$TEST_TMP/stats0.json")" "tree.files"

# ---- the reader: the example, or the same shape without torch ----
cat >"$TEST_TMP/pool_reader.py" <<'PY'
# pool_reader.py MOUNT CHANNEL EPOCHS WORKERS DIR: pytorch_fastfile.py's
# reading without torch: per epoch the order file's paths, in order, to a
# Pool of WORKERS processes that read each whole; each compared with
# DIR/PATH; the same lines printed
import multiprocessing, os, sys, time
mount, chan, epochs, workers, local = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
root = os.path.join(mount, chan)

def read(p):
    with open(os.path.join(root, p), "rb") as f:
        return p, f.read()

failed = False
with multiprocessing.Pool(workers) as pool:
    for e in range(epochs):
        with open(os.path.join(mount, ".s3pipe-order", "%s_%d" % (chan, e))) as f:
            order = f.read().splitlines()
        files = nbytes = bad = 0
        seen = {}
        t0 = time.monotonic()
        for p, data in pool.imap(read, order, chunksize=4):
            files += 1
            nbytes += len(data)
            seen[p] = seen.get(p, 0) + 1
            try:
                with open(os.path.join(local, p), "rb") as f:
                    same = f.read() == data
            except FileNotFoundError:
                same = False
            if not same:
                print("epoch %d: %s differs from the local copy" % (e, p))
                bad += 1
        secs = time.monotonic() - t0
        want = set()
        for d, _, fs in os.walk(local):
            want.update(os.path.relpath(os.path.join(d, x), local) for x in fs)
        bad += len(want ^ set(seen)) + sum(1 for n in seen.values() if n != 1)
        print("epoch %d: %d files, %d bytes, %.2f s, %.1f MB/s (s3pipe's order file)"
              % (e, files, nbytes, secs, nbytes / secs / 1e6 if secs > 0 else 0.0))
        print("epoch %d: verified %d files against %s: %s"
              % (e, files, local, "all equal" if not bad else "%d problems" % bad))
        failed = failed or bad > 0
sys.exit(1 if failed else 0)
PY
rc=0
if [ -n "$PY" ]; then
	note "reading with $EXAMPLE ($PY, torch $("$PY" -c 'import torch; print(torch.__version__)'))"
	timeout -k 5 180 "$PY" -W ignore "$EXAMPLE" --mount "$MP" --channel img --epochs 2 --workers 4 \
		--batch-size 8 --verify "$LOCAL" >"$TEST_TMP/out" 2>"$TEST_TMP/err" || rc=$?
else
	note "NOTE: no python3 here imports torch (Debian: apt-get install python3-torch):" \
		"the example was NOT run; reading with a multiprocessing.Pool of 4 workers instead"
	timeout -k 5 180 python3 "$TEST_TMP/pool_reader.py" "$MP" img 2 4 "$LOCAL" \
		>"$TEST_TMP/out" 2>"$TEST_TMP/err" || rc=$?
fi
cat "$TEST_TMP/out" >&2
[ "$rc" = 0 ] || fail "the reader exited $rc: $(tail -n 5 "$TEST_TMP/err")"
for e in 0 1; do
	grep -qx "epoch $e: $N files, $BYTES bytes, .* (s3pipe's order file)" "$TEST_TMP/out" ||
		fail "epoch $e: not $N files and $BYTES bytes from the order file (output above)"
	grep -qx "epoch $e: verified $N files against $LOCAL: all equal" "$TEST_TMP/out" ||
		fail "epoch $e: not every file equal to its local copy (output above)"
done

# ---- the stats: the order files were read, and the opens found files prefetched ----
tcat "$MP/.s3pipe-stats" >"$TEST_TMP/stats.json" || fail "cat .s3pipe-stats failed"
orders=$(json_eval 's.channels[0].tree.orders' <"$TEST_TMP/stats.json")
opens=$(json_eval 's.channels[0].tree.opens' <"$TEST_TMP/stats.json")
pref=$(json_eval 's.channels[0].tree.opens_prefetched' <"$TEST_TMP/stats.json")
note "tree: $(json_eval 'JSON.stringify(s.channels[0].tree)' <"$TEST_TMP/stats.json")"
[ "$orders" -ge 2 ] || fail "tree.orders is $orders after two epochs read by their order files"
[ "$opens" -ge $((2 * N)) ] || fail "tree.opens is $opens, fewer than the $((2 * N)) files read"
[ "$pref" -gt 0 ] || fail "tree.opens_prefetched is $pref: no open found its file prefetched"

# ---- the order files: each epoch a different permutation of the keys ----
tcat "$MP/.s3pipe-order/img_0" >"$TEST_TMP/order0" || fail "reading img_0's order failed"
tcat "$MP/.s3pipe-order/img_1" >"$TEST_TMP/order1" || fail "reading img_1's order failed"
for e in 0 1; do
	LC_ALL=C sort "$TEST_TMP/order$e" | cmp -s - "$TEST_TMP/keys" ||
		fail "the order of epoch $e is not a permutation of the $N keys"
done
cmp -s "$TEST_TMP/order0" "$TEST_TMP/order1" && fail "epochs 0 and 1 have the same order"
cmp -s "$TEST_TMP/order0" "$TEST_TMP/keys" && fail "epoch 0's order is key order despite --shuffle-seed 5"
unmount "$MP"

# ---- no seed: the order file is there, in key order ----
MP=$(new_mountpoint keyorder)
mount_ok --endpoint-url "$S3_URL" --input-mode fastfile img=s3://data/img/ "$MP"
tcat "$MP/.s3pipe-order/img_0" >"$TEST_TMP/order" || fail "no order file without --shuffle-seed"
cmp -s "$TEST_TMP/order" "$TEST_TMP/keys" || fail "without --shuffle-seed the order file is not key order"
unmount "$MP"
assert_not_mounted "$MP"
note "ok"
