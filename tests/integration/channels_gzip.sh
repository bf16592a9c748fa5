#!/bin/bash
# channels_gzip: --compression gzip gunzips every object as it streams.
# Objects of random-ish text (a few MiB, so that compressed and decompressed
# data cross 1 MiB cache blocks), one of two gzip members, one written by
# gzip(1) (file name in the header), one with FEXTRA, FNAME, FCOMMENT and
# FHCRC in its header: the epoch is the decompressed objects back to back in
# key order; with RecordIO each record is one object's decompressed bytes.
# st_size is 0 (the size is not known). A corrupt object (bytes flipped in
# the middle of the deflate data), a truncated one and one that is not gzip
# at all: the read fails with EIO after the earlier objects' data.  A
# budget of two blocks reads the epoch (one object inflated at a time).
# With RecordIO on budgets of 8 and 2 MiB, an object past the quarter the
# wrapping stage holds is counted, inflated again framed, and inflated once
# in the next epoch, its length known.  A
# daemon stopped by SIGTERM while a gzip file is open exits cleanly.
. "$(cd "$(dirname "$0")/.." && pwd)/lib.sh"
. "$S3PIPE_SRCDIR/tests/channels_lib.sh"
require_fuse
require_cmd python3
require_cmd gzip
recordio_selftest
s3_start

s3_mb data
G="$TEST_TMP/gen"
mkdir -p "$G"

# Plain text objects NAME.txt and their gzip forms NAME.gz in $G.
#   gen_text NAME BYTES SEED
gen_text() {
	python3 - "$G/$1.txt" "$2" "$3" <<'PY'
import base64, random, sys
path, size, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(seed)
words = ["alpha", "beta", "gamma", "delta", "epoch", "record", "shard", "pipe"]
out = []
n = 0
i = 0
while n < size:
    line = "%08d %s %s\n" % (i, rng.choice(words),
                             base64.b64encode(rng.randbytes(rng.randrange(10, 80))).decode())
    out.append(line)
    n += len(line)
    i += 1
data = "".join(out).encode()[:size]
with open(path, "wb") as f:
    f.write(data)
PY
}
gz_py() {	# NAME: $G/NAME.txt -> $G/NAME.gz (python, no file name)
	python3 -c 'import gzip, sys; d = open(sys.argv[1], "rb").read(); open(sys.argv[2], "wb").write(gzip.compress(d, compresslevel=6, mtime=0))' \
		"$G/$1.txt" "$G/$1.gz"
}

# key order = name order: 01 .. 05
gen_text 01-small 200 1
gz_py 01-small
gen_text 02-big 4500000 2
gz_py 02-big
# two members: ~1.5 MiB of text, then 300 KB
gen_text 03a 1600000 3
gen_text 03b 300001 4
gz_py 03a
gz_py 03b
cat "$G/03a.txt" "$G/03b.txt" >"$G/03-multi.txt"
cat "$G/03a.gz" "$G/03b.gz" >"$G/03-multi.gz"
# gzip(1): FNAME set in the header
gen_text 04-gzip1 2500000 5
gzip -c -9 "$G/04-gzip1.txt" >"$G/04-gzip1.gz"
# every optional header field
gen_text 05-headers 12345 6
python3 - "$G/05-headers.txt" "$G/05-headers.gz" <<'PY'
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
FHCRC, FEXTRA, FNAME, FCOMMENT = 2, 4, 8, 16
head = bytes([0x1f, 0x8b, 8, FHCRC | FEXTRA | FNAME | FCOMMENT]) + struct.pack("<I", 0) + bytes([0, 3])
extra = b"AB" + struct.pack("<H", 5) + b"hello"
head += struct.pack("<H", len(extra)) + extra + b"name.txt\0" + b"a comment\0"
head += struct.pack("<H", zlib.crc32(head) & 0xffff)
c = zlib.compressobj(6, zlib.DEFLATED, -15)
body = c.compress(data) + c.flush()
trailer = struct.pack("<II", zlib.crc32(data), len(data) & 0xffffffff)
open(sys.argv[2], "wb").write(head + body + trailer)
PY
names=(01-small 02-big 03-multi 04-gzip1 05-headers)
# the test's own data: each .gz decompresses (every member) to its .txt
for n in "${names[@]}"; do
	python3 -c 'import gzip, sys; sys.exit(gzip.decompress(open(sys.argv[1], "rb").read()) != open(sys.argv[2], "rb").read())' \
		"$G/$n.gz" "$G/$n.txt" || fail "test set-up: $n.gz does not decompress to $n.txt"
done
[ "$(stat -c %s "$G/02-big.gz")" -gt 2097152 ] || fail "test set-up: 02-big.gz is under 2 MiB ($(stat -c %s "$G/02-big.gz") bytes)"
[ "$(stat -c %s "$G/03a.gz")" -gt 1048576 ] || fail "test set-up: the first member of 03-multi.gz is under 1 MiB"

txts=()
for n in "${names[@]}"; do
	s3_put data "gz/$n.gz" "$G/$n.gz"
	txts+=("$G/$n.txt")
done
cat "${txts[@]}" >"$TEST_TMP/gz.exp"
rio_frame "$TEST_TMP/gz.rio.exp" "${txts[@]}"

# ---- objects that fail: corrupt, truncated, not gzip ----
gen_text b1 50000 11
gen_text b2 1300000 12
gen_text b3 200000 13
gen_text b4 40000 14
for n in b1 b2 b3 b4; do gz_py "$n"; done
# flip 16 bytes in the middle of b3's deflate data
python3 - "$G/b3.gz" "$G/b3-corrupt.gz" <<'PY'
import gzip, sys
d = bytearray(open(sys.argv[1], "rb").read())
mid = len(d) // 2
for i in range(mid, mid + 16):
    d[i] ^= 0xFF
open(sys.argv[2], "wb").write(d)
try:
    gzip.decompress(bytes(d))
except Exception:
    sys.exit(0)
sys.exit("test set-up: the corrupt object still decompresses")
PY
head -c $(($(stat -c %s "$G/b3.gz") / 2)) "$G/b3.gz" >"$G/b3-truncated.gz"
s3_put data gzbad/1.gz "$G/b1.gz"
s3_put data gzbad/2.gz "$G/b2.gz"
s3_put data gzbad/3.gz "$G/b3-corrupt.gz"
s3_put data gzbad/4.gz "$G/b4.gz"
s3_put data gztrunc/1.gz "$G/b1.gz"
s3_put data gztrunc/2.gz "$G/b2.gz"
s3_put data gztrunc/3.gz "$G/b3-truncated.gz"
s3_put data gztrunc/4.gz "$G/b4.gz"
s3_put data gznot/1.gz "$G/b1.gz"
s3_put data gznot/2.gz "$G/b2.gz"
s3_put data gznot/3.gz "$G/b3.txt"
s3_put data gznot/4.gz "$G/b4.gz"
cat "$G/b1.txt" "$G/b2.txt" >"$TEST_TMP/bad.before"
cat "$G/b1.txt" "$G/b2.txt" "$G/b3.txt" "$G/b4.txt" >"$TEST_TMP/bad.all"

MP=$(new_mountpoint gzip)
mount_ok --endpoint-url "$S3_URL" --part-size 1M --compression gzip \
	train=s3://data/gz/ bad=s3://data/gzbad/ trunc=s3://data/gztrunc/ notgz=s3://data/gznot/ "$MP"
assert_eq 0 "$(stat -c %s "$MP/train_0")" "st_size of train_0 (gzip) before reading"
tcat "$MP/train_0" >"$TEST_TMP/out" || fail "reading train_0 (gzip) failed"
assert_file_eq "$TEST_TMP/gz.exp" "$TEST_TMP/out" "train_0 (gzip): the decompressed objects in key order"
assert_eq 0 "$(stat -c %s "$MP/train_0")" "st_size of train_0 (gzip) after reading"
wait_until 10 test -e "$MP/train_1" || fail "train_1 (gzip) did not appear"
timeout -k 5 30 dd if="$MP/train_1" of="$TEST_TMP/out" bs=65521 status=none ||
	fail "reading train_1 (gzip) with dd bs=65521 failed"
assert_file_eq "$TEST_TMP/gz.exp" "$TEST_TMP/out" "train_1 (gzip, bs=65521)"
assert_eq 0 "$(stat -c %s "$MP/train_1")" "st_size of train_1 (gzip)"

# check_failed CHANNEL WHAT: reading CHANNEL_0 ends in EIO, after every byte
# of objects 1 and 2 (some of object 3's bytes may come before the error is
# found)
check_failed() {
	local ch=$1 what=$2 res got before all
	res=$(read_to_error "$MP/${ch}_0" "$TEST_TMP/out" 65536) || fail "$what: the read did not finish"
	assert_eq EIO "$res" "$what: reading ${ch}_0"
	got=$(stat -c %s "$TEST_TMP/out")
	before=$(stat -c %s "$TEST_TMP/bad.before")
	all=$(stat -c %s "$TEST_TMP/bad.all")
	[ "$got" -ge "$before" ] ||
		fail "$what: only $got bytes before the EIO, expected at least the $before bytes of objects 1 and 2"
	head -c "$before" "$TEST_TMP/out" >"$TEST_TMP/out.head"
	assert_file_eq "$TEST_TMP/bad.before" "$TEST_TMP/out.head" "$what: the bytes of objects 1 and 2 before the EIO"
	[ "$got" -lt "$all" ] ||
		fail "$what: $got bytes before the EIO: as many as all four objects decompressed ($all)"
	note "$what: EIO after $got bytes (objects 1 and 2: $before)"
}
check_failed bad "corrupt deflate data"
check_failed trunc "truncated gzip object"
check_failed notgz "object that is not gzip"
unmount "$MP"

# ---- a budget of two blocks: one object inflated at a time, none stuck
# (a job ahead that took the last chunk waited for the reader, which
# waited for the head job, which waited for a chunk) ----
MP=$(new_mountpoint gzip-small)
mount_ok --endpoint-url "$S3_URL" --part-size 1M --cache-size 2M --compression gzip \
	train=s3://data/gz/ "$MP"
timeout -k 5 60 cat "$MP/train_0" >"$TEST_TMP/out" ||
	fail "reading train_0 (gzip) with --cache-size 2M failed or hung"
assert_file_eq "$TEST_TMP/gz.exp" "$TEST_TMP/out" "train_0 (gzip, a budget of two blocks)"
unmount "$MP"

# ---- gzip and RecordIO: one record per object, decompressed ----
MP=$(new_mountpoint gzip-rio)
mount_ok --endpoint-url "$S3_URL" --part-size 1M --compression gzip --record-wrapper recordio \
	train=s3://data/gz/ "$MP"
tcat "$MP/train_0" >"$TEST_TMP/out" || fail "reading train_0 (gzip, RecordIO) failed"
n=$(rio_split "$TEST_TMP/out" "$TEST_TMP/rec" "train_0 (gzip, RecordIO)")
assert_eq "${#names[@]}" "$n" "records in train_0 (gzip, RecordIO)"
for i in "${!names[@]}"; do
	printf -v rec '%s/rec/%06d' "$TEST_TMP" "$i"
	cmp -s "$G/${names[$i]}.txt" "$rec" ||
		fail "train_0 (gzip, RecordIO): record $i ($(stat -c %s "$rec") bytes) is not ${names[$i]} decompressed ($(stat -c %s "$G/${names[$i]}.txt") bytes)"
done
assert_file_eq "$TEST_TMP/gz.rio.exp" "$TEST_TMP/out" "train_0 (gzip, RecordIO, whole stream)"
assert_eq 0 "$(stat -c %s "$MP/train_0")" "st_size of train_0 (gzip, RecordIO)"
unmount "$MP"

# ---- gzip and RecordIO on a budget of 8 MiB: 02-big inflates past the
# quarter the wrapping stage holds, so it is counted, then inflated again
# framed; epoch 1 knows its length and inflates it once. And on 2 MiB:
# none stuck ----
for size in 8M 2M; do
	MP=$(new_mountpoint "gzip-rio-$size")
	mount_fg "$TEST_TMP/rio-$size.log" --debug --endpoint-url "$S3_URL" --part-size 1M \
		--cache-size "$size" --compression gzip --record-wrapper recordio \
		train=s3://data/gz/ "$MP"
	timeout -k 5 60 cat "$MP/train_0" >"$TEST_TMP/out" ||
		fail "reading train_0 (gzip, RecordIO, --cache-size $size) failed or hung"
	assert_file_eq "$TEST_TMP/gz.rio.exp" "$TEST_TMP/out" "train_0 (gzip, RecordIO, --cache-size $size)"
	wait_until 10 test -e "$MP/train_1" || fail "train_1 did not appear (gzip, RecordIO, --cache-size $size)"
	timeout -k 5 60 cat "$MP/train_1" >"$TEST_TMP/out" ||
		fail "reading train_1 (gzip, RecordIO, --cache-size $size) failed or hung"
	assert_file_eq "$TEST_TMP/gz.rio.exp" "$TEST_TMP/out" "train_1 (gzip, RecordIO, --cache-size $size)"
	assert_eq 1 "$(grep -c '/02-big.gz inflates to [0-9]* bytes: framed after counting them' "$TEST_TMP/rio-$size.log")" \
		"02-big.gz counted before it was framed, once (--cache-size $size)"
	grep -q '/02-big.gz inflates to [0-9]* bytes, counted before: framed as it comes' "$TEST_TMP/rio-$size.log" ||
		fail "epoch 1 did not frame 02-big.gz by the length counted in epoch 0 (--cache-size $size)"
	unmount "$MP"
done

# ---- the same from an InputDataConfig: "CompressionType": "Gzip" ----
cat >"$TEST_TMP/idc.json" <<'EOF'
[{"ChannelName": "train",
  "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": "s3://data/gz/"}},
  "CompressionType": "Gzip",
  "InputMode": "Pipe"}]
EOF
MP=$(new_mountpoint gzip-config)
mount_ok --endpoint-url "$S3_URL" --part-size 1M --input-data-config "$TEST_TMP/idc.json" "$MP"
tcat "$MP/train_0" >"$TEST_TMP/out" || fail "reading train_0 (CompressionType Gzip) failed"
assert_file_eq "$TEST_TMP/gz.exp" "$TEST_TMP/out" "train_0 (CompressionType Gzip)"
unmount "$MP"
assert_not_mounted "$MP"

# ---- stopped with a file open: the gzip stage's threads end before the
# cache and the S3 client under them (a clean exit, no crash) ----
MP=$(new_mountpoint gzip-term)
"$S3PIPE" -f --endpoint-url "$S3_URL" --part-size 1M --compression gzip \
	train=s3://data/gz/ "$MP" 2>"$TEST_TMP/term.err" &
pid=$!
track_mount "$MP"
wait_until 10 test -e "$MP/train_0" || fail "train_0 did not appear (foreground daemon)"
exec 8<"$MP/train_0"
head -c 1000 <&8 >/dev/null || fail "reading the start of train_0 failed"
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
exec 8<&-
assert_eq 0 "$rc" "exit status of a daemon stopped by SIGTERM with a gzip file open ($(tail -n 3 "$TEST_TMP/term.err" | tr '\n' ' '))"
note "ok"
