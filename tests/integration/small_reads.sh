#!/bin/bash
# small_reads: a reader that jumps about gets small requests (issue 37).
# One 48 MiB object (s3pipe's default 8 MiB blocks) and a 32 MiB cache
# (so that the object does not fit: each read goes to S3 for what it does
# not find), read through a FastFile mount by 200 os.pread()s of 4 KiB at
# random offsets: every
# byte equals the object's, and the test server's GET log (/__fault/stats
# ranges: each GET and the Range it asked) shows at most 256 KiB received
# a read on average (a whole block a read, 8 MiB, is what the code before
# pieces asked for) and no more GETs than two a read.  Then the same file
# read whole in sequence on a fresh mount: byte-exact, once it shows
# itself sequential it gets whole blocks (a GET of 8 MiB or more), and at
# most 1.25 times the file is fetched.  Then a Pipe channel with
# --seek emulate over the same object: random preads after a first read
# (which places a Pipe reader with a sequential window: a Pipe file is
# meant to be read in sequence), bounded the same way.
. "$(cd "$(dirname "$0")/.." && pwd)/lib.sh"
require_fuse
require_cmd python3
s3_start

SIZE=$((48 << 20))
READS=200
s3_mb data
head -c $SIZE /dev/urandom >"$TEST_TMP/big.bin"
s3_put data big/file.bin "$TEST_TMP/big.bin"

# got_bytes KEY: bytes the server was asked for by GETs of KEY since the
# stats were reset (a GET without Range: the whole object), then the GETs,
# then the largest GET
got_bytes() {
	fault_stats | json_eval "(() => {
		let bytes = 0, gets = 0, most = 0;
		for (const r of s.ranges) {
			if (!r.path.endsWith('/$1')) continue;
			let n = $SIZE;
			const m = /^bytes=(\\d+)-(\\d*)\$/.exec(r.range || '');
			if (m) n = (m[2] === '' ? $SIZE - 1 : Math.min(+m[2], $SIZE - 1)) - +m[1] + 1;
			bytes += n; gets++; most = Math.max(most, n);
		}
		return bytes + ' ' + gets + ' ' + most;
	})()"
}

# random_preads FILE SEED [first]: READS preads of 4 KiB at random offsets,
# compared with the object; with "first", one at 0 before them, and the
# server's stats reset after it
random_preads() {
	python3 - "$1" "$TEST_TMP/big.bin" "$READS" "$2" "$S3_URL" "${3:-}" <<'PY'
import os, random, sys, urllib.request
path, local, count, seed, url, first = sys.argv[1:7]
count, seed = int(count), int(seed)
want = open(local, "rb").read()
rng = random.Random(seed)
fd = os.open(path, os.O_RDONLY)
if first:
    if os.pread(fd, 4096, 0) != want[:4096]:
        sys.exit("the first 4 KiB differ")
    urllib.request.urlopen(urllib.request.Request(url + "/__fault/stats", method="DELETE")).read()
for i in range(count):
    off = rng.randrange(0, len(want) - 4096 + 1)
    got = os.pread(fd, 4096, off)
    if got != want[off:off + 4096]:
        sys.exit(f"pread(4096, {off}) gave {len(got)} bytes, not the object's")
os.close(fd)
PY
}

# check_bounded WHAT: the GETs since the reset, READS reads
check_bounded() {
	local bytes gets most
	read -r bytes gets most <<<"$(got_bytes file.bin)"
	note "$1: $READS random reads of 4 KiB: $gets GETs, $bytes bytes ($((bytes / READS / 1024)) KiB a read, the largest GET $most bytes)"
	[ "$gets" -ge 1 ] || fail "$1: no GET reached the server (the stats?)"
	[ "$bytes" -le $((READS * 256 * 1024)) ] ||
		fail "$1: $((bytes / READS / 1024)) KiB received a 4 KiB read, more than 256 KiB"
	[ "$gets" -le $((READS * 2)) ] || fail "$1: $gets GETs for $READS reads"
}

# ---- FastFile ----
MP=$(new_mountpoint fastfile)
mount_ok --endpoint-url "$S3_URL" --cache-size 32M --input-mode fastfile \
	train=s3://data/big/ "$MP"
assert_eq $SIZE "$(stat -c %s "$MP/train/file.bin")" "the file's size"
fault_clear
random_preads "$MP/train/file.bin" 7 || fail "FastFile random reads differ from the object"
check_bounded FastFile

# the whole file in sequence, on a fresh mount: the page cache of the
# first holds pages around every random read, which a sequential reader's
# reads would skip (each skip a jump, back to pieces): exact, whole blocks
# once sequential, and little read twice
unmount "$MP"
MP=$(new_mountpoint fastfile_seq)
mount_ok --endpoint-url "$S3_URL" --cache-size 32M --input-mode fastfile \
	train=s3://data/big/ "$MP"
fault_clear
cmp "$TEST_TMP/big.bin" "$MP/train/file.bin" || fail "FastFile sequential read differs"
read -r bytes gets most <<<"$(got_bytes file.bin)"
note "FastFile sequential: $gets GETs, $bytes bytes, the largest $most"
[ "$most" -ge $((8 << 20)) ] || fail "a sequential reader got no whole block (largest GET $most bytes)"
[ "$bytes" -le $((SIZE + SIZE / 4)) ] || fail "a sequential read took $bytes bytes for $SIZE"
unmount "$MP"

# ---- Pipe, --seek emulate: each seek is a jump ----
MP=$(new_mountpoint pipe)
mount_ok --endpoint-url "$S3_URL" --cache-size 32M --seek emulate \
	train=s3://data/big/ "$MP"
random_preads "$MP/train_0" 11 first || fail "Pipe (--seek emulate) random reads differ from the object"
check_bounded "Pipe --seek emulate"
unmount "$MP"
