#!/bin/bash
# channels_recordio: --record-wrapper recordio (and "RecordWrapperType":
# "RecordIO" in an InputDataConfig) frames every non-empty object of an
# S3Prefix channel as one RecordIO record, in key order. The stream is
# checked with an independent reader (tests/recordio.py, self-tested first):
# valid framing, one record per non-empty object with that object's bytes,
# byte-identical to the expected framing; objects of 0 to 5 bytes (every
# padding), a few KiB, and 3 MiB with --part-size 1M so that records and
# headers cross cache blocks; epochs 0 and 1, small odd-sized reads, and
# st_size = the framed size once the listing is complete.
. "$(cd "$(dirname "$0")/.." && pwd)/lib.sh"
. "$S3PIPE_SRCDIR/tests/channels_lib.sh"
channels_start
# 40 objects: every size 0..9, a few odd and even KiB, one of ~3 MiB placed
# in the middle of the key order, and empty objects at the start, in the
# middle and at the end. Names sort in the order listed.
sizes=(0 1 2 3 4 5 6 7 8 9
	0 1 2 3 4 5 11 12 13 16
	1000 1023 1024 1025 4095 4096 4097 8191 3145731 0
	5000 7 65535 65536 65537 12345 3 2 1 0)
mkdir -p "$TEST_TMP/gen"
for i in "${!sizes[@]}"; do
	printf -v key 'rio/obj-%03d.bin' "$i"
	head -c "${sizes[$i]}" /dev/urandom >"$TEST_TMP/gen/o"
	s3_put data "$key" "$TEST_TMP/gen/o"
done
# one key in a "subfolder": still part of the prefix, in key order
head -c 777 /dev/urandom >"$TEST_TMP/gen/o"
s3_put data rio/sub/zz.bin "$TEST_TMP/gen/o"
# outside the prefix: must not appear
head -c 100 /dev/urandom >"$TEST_TMP/gen/o"
s3_put data rio-other/x.bin "$TEST_TMP/gen/o"

# the expected records: the non-empty objects in key (byte) order
(cd "$S3_LOCAL/data" && find rio -type f | LC_ALL=C sort) >"$TEST_TMP/keys"
# the server lists the same keys in the same order
s3_list_keys data rio/ >"$TEST_TMP/listed"
assert_file_eq "$TEST_TMP/keys" "$TEST_TMP/listed" "keys listed by the server"
: >"$TEST_TMP/nonempty"
files=()
while IFS= read -r k; do
	if [ -s "$S3_LOCAL/data/$k" ]; then
		echo "$k" >>"$TEST_TMP/nonempty"
		files+=("$S3_LOCAL/data/$k")
	fi
done <"$TEST_TMP/keys"
nrec=${#files[@]}
assert_eq 37 "$nrec" "non-empty objects (test set-up)"
rio_frame "$TEST_TMP/expected.rio" "${files[@]}"
framed_size=$(stat -c %s "$TEST_TMP/expected.rio")
assert_eq "$framed_size" "$(rio_size "${files[@]}")" "framed size (test set-up)"

# check_records STREAM WHAT: STREAM splits into exactly the non-empty objects
# in key order, and equals the expected framing byte for byte
check_records() {
	local stream=$1 what=$2 n i k
	n=$(rio_split "$stream" "$TEST_TMP/rec" "$what")
	assert_eq "$nrec" "$n" "records in $what"
	i=0
	while IFS= read -r k; do
		printf -v rec '%s/rec/%06d' "$TEST_TMP" "$i"
		cmp -s "$S3_LOCAL/data/$k" "$rec" ||
			fail "$what: record $i ($(stat -c %s "$rec") bytes) is not object $k ($(stat -c %s "$S3_LOCAL/data/$k") bytes)"
		i=$((i + 1))
	done <"$TEST_TMP/nonempty"
	assert_file_eq "$TEST_TMP/expected.rio" "$stream" "$what (whole stream)"
}

# ---- command line: --record-wrapper recordio ----
MP=$(new_mountpoint cli)
mount_ok --endpoint-url "$S3_URL" --part-size 1M --record-wrapper recordio \
	train=s3://data/rio/ "$MP"
tcat "$MP/train_0" >"$TEST_TMP/out0" || fail "reading train_0 failed"
check_records "$TEST_TMP/out0" "train_0"
# the listing is complete once the whole epoch was read
assert_eq "$framed_size" "$(stat -c %s "$MP/train_0")" "st_size of train_0 after reading"
ls -l "$MP" >"$TEST_TMP/ls" || fail "ls -l of the root failed"
assert_match " $framed_size [A-Z][a-z]{2} .* train_0\$" "$(grep ' train_0$' "$TEST_TMP/ls")" "ls -l line of train_0"

# epoch 1, read in small odd-sized pieces (reads end inside headers,
# payloads and padding)
wait_until 10 test -e "$MP/train_1" || fail "train_1 did not appear"
timeout -k 5 30 dd if="$MP/train_1" of="$TEST_TMP/out1" bs=4099 status=none ||
	fail "reading train_1 with dd bs=4099 failed"
check_records "$TEST_TMP/out1" "train_1 (bs=4099)"
assert_eq "$framed_size" "$(stat -c %s "$MP/train_1")" "st_size of train_1 after reading"
# epoch 2 with 7-byte reads over the first 64 KiB, then the rest
wait_until 10 test -e "$MP/train_2" || fail "train_2 did not appear"
python3 - "$MP/train_2" "$TEST_TMP/out2" <<'PY' || fail "reading train_2 in 7-byte pieces failed"
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
with open(sys.argv[2], "wb") as out:
    got = 0
    while got < 65536:
        b = os.read(fd, 7)
        if not b:
            break
        out.write(b)
        got += len(b)
    while True:
        b = os.read(fd, 1 << 20)
        if not b:
            break
        out.write(b)
os.close(fd)
PY
check_records "$TEST_TMP/out2" "train_2 (7-byte reads)"
unmount "$MP"

# ---- InputDataConfig: "RecordWrapperType": "RecordIO" ----
cat >"$TEST_TMP/idc.json" <<'EOF'
[
  {
    "ChannelName": "train",
    "DataSource": {
      "S3DataSource": {
        "S3DataType": "S3Prefix",
        "S3Uri": "s3://data/rio/",
        "S3DataDistributionType": "FullyReplicated"
      }
    },
    "CompressionType": "None",
    "RecordWrapperType": "RecordIO",
    "InputMode": "Pipe"
  },
  {
    "ChannelName": "plain",
    "DataSource": {
      "S3DataSource": {
        "S3DataType": "S3Prefix",
        "S3Uri": "s3://data/rio/"
      }
    },
    "RecordWrapperType": "None"
  }
]
EOF
MP=$(new_mountpoint config)
mount_ok --endpoint-url "$S3_URL" --part-size 1M --input-data-config "$TEST_TMP/idc.json" "$MP"
tcat "$MP/train_0" >"$TEST_TMP/out0" || fail "reading train_0 (config) failed"
check_records "$TEST_TMP/out0" "train_0 (config)"
assert_eq "$framed_size" "$(stat -c %s "$MP/train_0")" "st_size of train_0 (config) after reading"
wait_until 10 test -e "$MP/train_1" || fail "train_1 (config) did not appear"
tcat "$MP/train_1" >"$TEST_TMP/out1" || fail "reading train_1 (config) failed"
check_records "$TEST_TMP/out1" "train_1 (config)"
# the channel without a wrapper in the same mount: raw bytes, key order
expected_cat "$S3_LOCAL/data" rio/ >"$TEST_TMP/plain.exp"
tcat "$MP/plain_0" >"$TEST_TMP/plain.out" || fail "reading plain_0 (config) failed"
assert_file_eq "$TEST_TMP/plain.exp" "$TEST_TMP/plain.out" "plain_0 (RecordWrapperType None)"
assert_eq "$(stat -c %s "$TEST_TMP/plain.exp")" "$(stat -c %s "$MP/plain_0")" "st_size of plain_0"
unmount "$MP"
assert_not_mounted "$MP"
note "ok"
