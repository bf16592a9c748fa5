#!/bin/bash
# seek: by default an epoch file behaves like a pipe (lseek and pread fail
# with ESPIPE, plain reads still work); with --seek emulate every offset
# works: pread/lseek at object boundaries, across them, at and past the end,
# backwards, and dd skip= give the exact bytes.
. "$(cd "$(dirname "$0")/.." && pwd)/lib.sh"
require_fuse
require_cmd python3
s3_start

s3_mb data
s3_seed data d/ 5 100000
head -c 777 /dev/urandom >"$TEST_TMP/last.bin"
s3_put data d/zz-last.bin "$TEST_TMP/last.bin"
head -c 3000000 /dev/urandom >"$TEST_TMP/large.bin"
s3_put data e/large.bin "$TEST_TMP/large.bin"
expected_cat "$S3_LOCAL/data" d/ >"$TEST_TMP/d.exp"
expected_cat "$S3_LOCAL/data" e/ >"$TEST_TMP/e.exp"
total=$(stat -c %s "$TEST_TMP/d.exp")

# ---- default: like a pipe ----
MP=$(new_mountpoint reject)
mount_ok --endpoint-url "$S3_URL" d=s3://data/d/ "$MP"
python3 - "$MP/d_0" "$TEST_TMP/d.exp" <<'PY' || fail "pipe semantics (see above)"
import errno, os, sys
path, exp = sys.argv[1], open(sys.argv[2], "rb").read()
bad = []
fd = os.open(path, os.O_RDONLY)
def expect_espipe(what, fn):
    try:
        r = fn()
        bad.append("%s succeeded (%r), expected ESPIPE" % (what, r))
    except OSError as e:
        if e.errno != errno.ESPIPE:
            bad.append("%s failed with %s, expected ESPIPE" % (what, errno.errorcode.get(e.errno, e.errno)))
expect_espipe("lseek(10, SEEK_SET)", lambda: os.lseek(fd, 10, os.SEEK_SET))
expect_espipe("lseek(0, SEEK_END)", lambda: os.lseek(fd, 0, os.SEEK_END))
expect_espipe("pread(100 bytes at 1000)", lambda: os.pread(fd, 100, 1000))
first = os.read(fd, 1000)
expect_espipe("lseek(0, SEEK_SET) after a read", lambda: os.lseek(fd, 0, os.SEEK_SET))
expect_espipe("pread(10 bytes at 0) after a read", lambda: os.pread(fd, 10, 0))
data = first
while True:
    b = os.read(fd, 1 << 20)
    if not b:
        break
    data += b
os.close(fd)
if data != exp:
    bad.append("sequential read after failed seeks: %d bytes, expected %d (same: %s)" % (len(data), len(exp), data == exp))
for m in bad:
    print("seek.sh: " + m, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
wait_until 10 test -e "$MP/d_1" || fail "d_1 did not appear"
unmount "$MP"

# ---- --seek emulate ----
MP=$(new_mountpoint emulate)
mount_ok --endpoint-url "$S3_URL" --seek emulate --part-size 64K \
	d=s3://data/d/ e=s3://data/e/ "$MP"
# make sure the listing is complete (st_size is the total) before SEEK_END
size_is() { [ "$(stat -c %s "$1")" = "$2" ]; }
wait_until 10 size_is "$MP/d_0" "$total" ||
	fail "st_size of d_0 is $(stat -c %s "$MP/d_0"), expected $total"

python3 - "$MP/d_0" "$TEST_TMP/d.exp" <<'PY' || fail "emulated seeks on d_0 (see above)"
import os, random, sys
path, exp = sys.argv[1], open(sys.argv[2], "rb").read()
n = len(exp)
bad = []
fd = os.open(path, os.O_RDONLY)
def pread_full(length, off):
    out = b""
    while len(out) < length:
        b = os.pread(fd, length - len(out), off + len(out))
        if not b:
            break
        out += b
    return out
def check(length, off):
    try:
        got = pread_full(length, off)
    except OSError as e:
        bad.append("pread(%d at %d) failed: %s" % (length, off, e))
        return
    want = exp[off:off + length]
    if got != want:
        bad.append("pread(%d at %d): %d bytes, expected %d, equal=%s" % (length, off, len(got), len(want), got == want))
# object boundaries are at multiples of 100000; the last object is 777 bytes
cases = [(10, 0), (1, 1), (100, 99950), (1, 99999), (1, 100000), (20, 99990),
         (250000, 50000), (100001, 399999), (800, 499990), (10, n - 5), (1, n - 1),
         (10, n), (10, n + 1000), (n, 0), (65536, 65536), (65537, 131071), (5, 3)]
for length, off in cases:
    check(length, off)
rng = random.Random(1234)
for _ in range(40):
    off = rng.randrange(0, n)
    check(rng.randrange(1, 200000), off)
# lseek + read, including SEEK_END and SEEK_CUR, backwards
def seek_read(off, whence, length, want_pos):
    try:
        pos = os.lseek(fd, off, whence)
    except OSError as e:
        bad.append("lseek(%d, %d) failed: %s" % (off, whence, e))
        return
    if pos != want_pos:
        bad.append("lseek(%d, %d) = %d, expected %d" % (off, whence, pos, want_pos))
        return
    out = b""
    while len(out) < length:
        b = os.read(fd, length - len(out))
        if not b:
            break
        out += b
    if out != exp[want_pos:want_pos + length]:
        bad.append("read(%d) after lseek to %d: wrong bytes (%d)" % (length, want_pos, len(out)))
seek_read(-10, os.SEEK_END, 10, n - 10)
seek_read(123456, os.SEEK_SET, 5000, 123456)
seek_read(-100000, os.SEEK_CUR, 300, 123456 + 5000 - 100000)
seek_read(0, os.SEEK_SET, 1000, 0)
seek_read(n, os.SEEK_SET, 10, n)
os.close(fd)
for m in bad:
    print("seek.sh: " + m, file=sys.stderr)
sys.exit(1 if bad else 0)
PY

# dd skip= (block and byte offsets), each on the next epoch
e=0
next_epoch() {
	e=$((e + 1))
	wait_until 10 test -e "$MP/d_$e" || fail "d_$e did not appear after d_$((e - 1)) was closed"
}
for spec in "4096 30 10" "1000 99 3" "100000 4 1" "512 970 100"; do
	set -- $spec
	next_epoch
	timeout -k 5 30 dd if="$MP/d_$e" of="$TEST_TMP/dd.out" bs="$1" skip="$2" count="$3" status=none ||
		fail "dd bs=$1 skip=$2 count=$3 on d_$e failed"
	dd if="$TEST_TMP/d.exp" of="$TEST_TMP/dd.exp" bs="$1" skip="$2" count="$3" status=none
	assert_file_eq "$TEST_TMP/dd.exp" "$TEST_TMP/dd.out" "dd bs=$1 skip=$2 count=$3 on d_$e"
done
next_epoch
timeout -k 5 30 dd if="$MP/d_$e" of="$TEST_TMP/dd.out" bs=4096 skip=299997 count=1000 \
	iflag=skip_bytes,count_bytes status=none || fail "dd with byte offsets failed"
dd if="$TEST_TMP/d.exp" of="$TEST_TMP/dd.exp" bs=4096 skip=299997 count=1000 \
	iflag=skip_bytes,count_bytes status=none
assert_file_eq "$TEST_TMP/dd.exp" "$TEST_TMP/dd.out" "dd skip_bytes=299997 on d_$e"

# a large object read backwards in 256 KiB steps (each part fetched out of order)
python3 - "$MP/e_0" "$TEST_TMP/e.exp" <<'PY' || fail "backwards reads on e_0 (see above)"
import os, sys
path, exp = sys.argv[1], open(sys.argv[2], "rb").read()
fd = os.open(path, os.O_RDONLY)
step = 256 * 1024
off = (len(exp) // step) * step
bad = 0
while off >= 0:
    out = b""
    while len(out) < step:
        b = os.pread(fd, step - len(out), off + len(out))
        if not b:
            break
        out += b
    if out != exp[off:off + step]:
        print("seek.sh: backwards pread at %d: wrong bytes" % off, file=sys.stderr)
        bad += 1
    off -= step
os.close(fd)
sys.exit(1 if bad else 0)
PY
# and a sequential read of an emulated-seek file is still exact
next_epoch
tcat "$MP/d_$e" >"$TEST_TMP/out" || fail "reading d_$e failed"
assert_file_eq "$TEST_TMP/d.exp" "$TEST_TMP/out" "d_$e sequential"
unmount "$MP"
assert_not_mounted "$MP"
note "ok"
