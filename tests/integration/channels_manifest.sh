#!/bin/bash
# channels_manifest: ManifestFile and AugmentedManifestFile channels.
# A manifest (keys in a non-sorted order, one in a subfolder, an object
# under the prefix left out) streams exactly its objects in manifest order;
# a manifest in another bucket than its prefix works. An augmented manifest
# with "source-ref" and "label" (numbers, strings, an object; attributes in
# any order in the line, extra attributes ignored; a -ref in another bucket):
# with RecordIO one record per attribute in AttributeNames order (also the
# reverse order, from an InputDataConfig), without RecordIO the same bytes
# back to back. A line missing "label": the read fails with EIO right after
# the earlier lines' bytes. A manifest that is not valid JSON, an augmented
# line that is not JSON and a manifest object that does not exist: the
# mount fails with one line naming the manifest and leaves no mount.
. "$(cd "$(dirname "$0")/.." && pwd)/lib.sh"
. "$S3PIPE_SRCDIR/tests/channels_lib.sh"
channels_start
s3_mb meta
E=(--endpoint-url "$S3_URL")
G="$TEST_TMP/gen"
mkdir -p "$G"

put_random() {	# BUCKET KEY SIZE
	head -c "$3" /dev/urandom >"$G/r"
	s3_put "$1" "$2" "$G/r"
}
put_random data man/a.bin 1000
put_random data man/b.bin 70001
put_random data man/c.bin 2621443
put_random data man/sub/d.bin 333
put_random data man/e.bin 5
put_random data man/zz-not-listed.bin 4444

# ---- ManifestFile ----
cat >"$G/train.manifest" <<'EOF'
[{"prefix": "s3://data/man/"},
 "e.bin",
 "sub/d.bin",
 "c.bin",
 "a.bin",
 "b.bin"]
EOF
s3_put data manifests/train.manifest "$G/train.manifest"
# in another bucket, pointing at data/man/
printf '[{"prefix":"s3://data/man/"},"b.bin","sub/d.bin","a.bin"]' >"$G/other.json"
s3_put meta lists/other.json "$G/other.json"

cat_keys() {	# BUCKET KEY... — the local copies, concatenated
	local b=$1 k
	shift
	for k in "$@"; do cat "$S3_LOCAL/$b/$k"; done
}
cat_keys data man/e.bin man/sub/d.bin man/c.bin man/a.bin man/b.bin >"$TEST_TMP/train.exp"
cat_keys data man/b.bin man/sub/d.bin man/a.bin >"$TEST_TMP/other.exp"

MP=$(new_mountpoint manifest)
mount_ok "${E[@]}" --part-size 1M \
	train=manifest+s3://data/manifests/train.manifest \
	other=manifest+s3://meta/lists/other.json "$MP"
for e in 0 1; do
	for ch in train other; do
		wait_until 10 test -e "$MP/${ch}_$e" || fail "${ch}_$e did not appear"
		tcat "$MP/${ch}_$e" >"$TEST_TMP/out" || fail "reading ${ch}_$e failed"
		assert_file_eq "$TEST_TMP/$ch.exp" "$TEST_TMP/out" "${ch}_$e (manifest order)"
	done
done
unmount "$MP"

# ---- AugmentedManifestFile ----
put_random data aug/img-1.bin 100
put_random data aug/img-2.bin 4097
put_random data aug/img-3.bin 1
put_random data aug/img-4.bin 65538
put_random data aug/img-5.bin 3
put_random meta aug/img-6.bin 1234
# attributes in either order within a line, an extra attribute, spaces
cat >"$G/aug.jsonl" <<'EOF'
{"source-ref": "s3://data/aug/img-3.bin", "label": 3}
{"source-ref": "s3://data/aug/img-1.bin", "label": "tabby cat", "other": 1}
{"label": 2.50, "source-ref": "s3://data/aug/img-5.bin"}
{"source-ref": "s3://data/aug/img-2.bin", "label": -7}
{"source-ref": "s3://data/aug/img-4.bin", "label": {"x": 1, "y": [1, 2]}}

{"source-ref":"s3://meta/aug/img-6.bin","label":"dog"}
EOF
s3_put data manifests/aug.jsonl "$G/aug.jsonl"
# the items of each line: the object, then the label as written
imgs=(data/aug/img-3.bin data/aug/img-1.bin data/aug/img-5.bin data/aug/img-2.bin data/aug/img-4.bin meta/aug/img-6.bin)
labels=('3' 'tabby cat' '2.50' '-7' '{"x": 1, "y": [1, 2]}' 'dog')
fwd=()
rev=()
for i in "${!imgs[@]}"; do
	printf '%s' "${labels[$i]}" >"$G/label$i"
	fwd+=("$S3_LOCAL/${imgs[$i]}" "$G/label$i")
	rev+=("$G/label$i" "$S3_LOCAL/${imgs[$i]}")
done
rio_frame "$TEST_TMP/aug.rio.exp" "${fwd[@]}"
rio_frame "$TEST_TMP/augrev.rio.exp" "${rev[@]}"
cat "${fwd[@]}" >"$TEST_TMP/aug.raw.exp"

# check_aug STREAM EXPECTED_RIO WHAT ITEMS...: STREAM splits into one record
# per item, each equal to its item, and equals EXPECTED_RIO
check_aug() {
	local stream=$1 exp=$2 what=$3 n i
	shift 3
	n=$(rio_split "$stream" "$TEST_TMP/rec" "$what")
	assert_eq "$#" "$n" "records in $what"
	i=0
	for item in "$@"; do
		printf -v rec '%s/rec/%06d' "$TEST_TMP" "$i"
		cmp -s "$item" "$rec" ||
			fail "$what: record $i is not item $i (line $((i / 2 + 1))): got '$(head -c 40 "$rec" | tr -c '[:print:]' '.')' ($(stat -c %s "$rec") bytes), want '$(head -c 40 "$item" | tr -c '[:print:]' '.')' ($(stat -c %s "$item") bytes)"
		i=$((i + 1))
	done
	assert_file_eq "$exp" "$stream" "$what (whole stream)"
}

MP=$(new_mountpoint aug-rio)
mount_ok "${E[@]}" --record-wrapper recordio --attribute-names source-ref,label \
	aug=augmented+s3://data/manifests/aug.jsonl "$MP"
for e in 0 1; do
	wait_until 10 test -e "$MP/aug_$e" || fail "aug_$e did not appear"
	tcat "$MP/aug_$e" >"$TEST_TMP/out" || fail "reading aug_$e (RecordIO) failed"
	check_aug "$TEST_TMP/out" "$TEST_TMP/aug.rio.exp" "aug_$e (RecordIO)" "${fwd[@]}"
done
unmount "$MP"

MP=$(new_mountpoint aug-raw)
mount_ok "${E[@]}" --attribute-names source-ref,label \
	aug=augmented+s3://data/manifests/aug.jsonl "$MP"
tcat "$MP/aug_0" >"$TEST_TMP/out" || fail "reading aug_0 (no wrapper) failed"
assert_file_eq "$TEST_TMP/aug.raw.exp" "$TEST_TMP/out" "aug_0 without RecordIO (items back to back)"
unmount "$MP"

# AttributeNames in the other order, from an InputDataConfig
cat >"$TEST_TMP/idc.json" <<'EOF'
[{"ChannelName": "aug",
  "DataSource": {"S3DataSource": {
    "S3DataType": "AugmentedManifestFile",
    "S3Uri": "s3://data/manifests/aug.jsonl",
    "S3DataDistributionType": "FullyReplicated",
    "AttributeNames": ["label", "source-ref"]}},
  "RecordWrapperType": "RecordIO",
  "InputMode": "Pipe"}]
EOF
MP=$(new_mountpoint aug-config)
mount_ok "${E[@]}" --input-data-config "$TEST_TMP/idc.json" "$MP"
tcat "$MP/aug_0" >"$TEST_TMP/out" || fail "reading aug_0 (config, label first) failed"
check_aug "$TEST_TMP/out" "$TEST_TMP/augrev.rio.exp" "aug_0 (AttributeNames label,source-ref)" "${rev[@]}"
unmount "$MP"

# ---- a line missing "label" in the middle ----
cat >"$G/missing.jsonl" <<'EOF'
{"source-ref": "s3://data/aug/img-2.bin", "label": 1}
{"source-ref": "s3://data/aug/img-4.bin", "label": "two"}
{"source-ref": "s3://data/aug/img-1.bin", "tag": 3}
{"source-ref": "s3://data/aug/img-5.bin", "label": 4}
EOF
s3_put data manifests/missing.jsonl "$G/missing.jsonl"
printf '1' >"$G/m1"
printf 'two' >"$G/m2"
before=("$S3_LOCAL/data/aug/img-2.bin" "$G/m1" "$S3_LOCAL/data/aug/img-4.bin" "$G/m2")
rio_frame "$TEST_TMP/missing.rio.exp" "${before[@]}"
cat "${before[@]}" >"$TEST_TMP/missing.raw.exp"
for wrap in recordio none; do
	MP=$(new_mountpoint "missing-$wrap")
	mount_ok "${E[@]}" --record-wrapper "$wrap" --attribute-names source-ref,label \
		aug=augmented+s3://data/manifests/missing.jsonl "$MP"
	res=$(read_to_error "$MP/aug_0" "$TEST_TMP/out" 4096) || fail "read_to_error on aug_0 ($wrap) did not finish"
	assert_eq EIO "$res" "reading aug_0 ($wrap) through a line without 'label'"
	exp="$TEST_TMP/missing.rio.exp"
	[ "$wrap" = recordio ] || exp="$TEST_TMP/missing.raw.exp"
	assert_file_eq "$exp" "$TEST_TMP/out" "bytes returned before the EIO ($wrap): lines 1 and 2"
	unmount "$MP"
done

# ---- manifests that cannot be used: the mount fails ----
printf '[{"prefix": "s3://data/man/"},\n "a.bin",\n "b.bin"\n' >"$G/bad.manifest"
s3_put data manifests/bad.manifest "$G/bad.manifest"
M=$(new_mountpoint bad-json)
expect_mount_error "manifest that is not valid JSON" "$M" "bad.manifest" -- \
	"$S3PIPE" "${E[@]}" train=manifest+s3://data/manifests/bad.manifest "$M"
printf '{"source-ref": "s3://data/aug/img-1.bin", "label": 1}\n{"source-ref": "s3://data/aug/img-2.bin", "label": 2\n' >"$G/bad.jsonl"
s3_put data manifests/bad.jsonl "$G/bad.jsonl"
M=$(new_mountpoint bad-jsonl)
expect_mount_error "augmented manifest with a line that is not JSON" "$M" "bad.jsonl" '~line 2([^0-9]|$)' -- \
	"$S3PIPE" "${E[@]}" --attribute-names source-ref,label aug=augmented+s3://data/manifests/bad.jsonl "$M"
M=$(new_mountpoint no-manifest)
expect_mount_error "manifest object that does not exist" "$M" "nothing.manifest" -- \
	"$S3PIPE" "${E[@]}" train=manifest+s3://data/manifests/nothing.manifest "$M"
expect_mount_error_done
note "ok"
