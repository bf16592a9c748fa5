#!/bin/bash
# channels_config: --input-data-config (CreateTrainingJob's InputDataConfig)
# with two channels mounts both, with the right bytes; --write-container-config
# DIR writes DIR/inputdataconfig.json in the container's shape (ContentType
# only where set), for config channels and command-line channels alike;
# mount.s3pipe takes the same file as -o input_data_config=FILE.
# Config errors exit 1 with exactly one line on stderr naming the channel
# and the field, and leave no mount: InputMode File, bad enum values, Seed
# a string, invalid JSON (with its line number), a missing file, a resource
# config whose current_host is not in hosts, --input-data-config together
# with a NAME=URI channel, --host-index without --host-count or out of range.
. "$(cd "$(dirname "$0")/.." && pwd)/lib.sh"
. "$S3PIPE_SRCDIR/tests/channels_lib.sh"
require_fuse
require_cmd python3
s3_start

s3_mb data
s3_seed data train/ 5 30001
s3_seed data val/ 3 7777
expected_cat "$S3_LOCAL/data" train/ >"$TEST_TMP/train.exp"
expected_cat "$S3_LOCAL/data" val/ >"$TEST_TMP/val.exp"
E=(--endpoint-url "$S3_URL")

cat >"$TEST_TMP/idc.json" <<'EOF'
[
  {
    "ChannelName": "train",
    "DataSource": {
      "S3DataSource": {
        "S3DataType": "S3Prefix",
        "S3Uri": "s3://data/train/",
        "S3DataDistributionType": "FullyReplicated"
      }
    },
    "CompressionType": "None",
    "RecordWrapperType": "None",
    "InputMode": "Pipe"
  },
  {
    "ChannelName": "validation",
    "DataSource": {
      "S3DataSource": {
        "S3DataType": "S3Prefix",
        "S3Uri": "s3://data/val/"
      }
    },
    "ContentType": "text/csv"
  }
]
EOF

# check_container_config FILE EXPECTED_JSON: FILE parses and equals
# EXPECTED_JSON exactly (the same channels, the same fields and values)
check_container_config() {
	python3 - "$1" "$2" <<'PY' || fail "container config $1 is wrong (above)"
import json, sys
path, want = sys.argv[1], json.loads(sys.argv[2])
try:
    with open(path) as f:
        got = json.load(f)
except (OSError, ValueError) as e:
    sys.exit("cannot read %s as JSON: %s" % (path, e))
bad = []
if not isinstance(got, dict):
    sys.exit("%s: top level is %s, expected an object" % (path, type(got).__name__))
if sorted(got) != sorted(want):
    bad.append("channels %s, expected %s" % (sorted(got), sorted(want)))
for ch, fields in want.items():
    g = got.get(ch)
    if not isinstance(g, dict):
        continue
    for k, v in fields.items():
        if k not in g:
            bad.append("%s: %s missing (expected %r)" % (ch, k, v))
        elif g[k] != v:
            bad.append("%s: %s is %r, expected %r" % (ch, k, g[k], v))
    for k in sorted(set(g) - set(fields)):
        bad.append("%s: unexpected field %s = %r" % (ch, k, g[k]))
for b in bad:
    print("%s: %s" % (path, b), file=sys.stderr)
sys.exit(1 if bad else 0)
PY
}

# ---- two channels from an InputDataConfig, and the container config ----
MP=$(new_mountpoint two)
CC="$TEST_TMP/container"
mkdir -p "$CC"
mount_ok "${E[@]}" --input-data-config "$TEST_TMP/idc.json" --write-container-config "$CC" "$MP"
assert_eq "train_0 validation_0" "$(ls "$MP" | tr '\n' ' ' | sed 's/ $//')" "ls at start"
for e in 0 1; do
	wait_until 10 test -e "$MP/train_$e" || fail "train_$e did not appear"
	tcat "$MP/train_$e" >"$TEST_TMP/out" || fail "reading train_$e failed"
	assert_file_eq "$TEST_TMP/train.exp" "$TEST_TMP/out" "train_$e (InputDataConfig)"
	wait_until 10 test -e "$MP/validation_$e" || fail "validation_$e did not appear"
	tcat "$MP/validation_$e" >"$TEST_TMP/out" || fail "reading validation_$e failed"
	assert_file_eq "$TEST_TMP/val.exp" "$TEST_TMP/out" "validation_$e (InputDataConfig)"
done
assert_eq "$(stat -c %s "$TEST_TMP/train.exp")" "$(stat -c %s "$MP/train_0")" "st_size of train_0"
test -f "$CC/inputdataconfig.json" || fail "--write-container-config did not write $CC/inputdataconfig.json"
check_container_config "$CC/inputdataconfig.json" '{
  "train": {"TrainingInputMode": "Pipe", "S3DistributionType": "FullyReplicated", "RecordWrapperType": "None"},
  "validation": {"TrainingInputMode": "Pipe", "S3DistributionType": "FullyReplicated", "RecordWrapperType": "None",
                 "ContentType": "text/csv"}}'
# written through a temporary file renamed into place: nothing else is left
assert_eq "inputdataconfig.json" "$(ls -A "$CC" | tr '\n' ' ' | sed 's/ $//')" "files in the container config folder"
unmount "$MP"

# ---- the same config through mount.s3pipe (fstab): the source only names
# the mount ----
MP=$(new_mountpoint helper)
rc=0
"$MOUNT_S3PIPE" s3pipe-sagemaker "$MP" \
	-o "input_data_config=$TEST_TMP/idc.json,endpoint_url=$S3_URL" \
	2>"$TEST_TMP/helper.err" </dev/null || rc=$?
track_mount "$MP"
[ "$rc" -eq 0 ] || fail "mount.s3pipe -o input_data_config exited $rc: $(cat "$TEST_TMP/helper.err")"
assert_eq "train_0 validation_0" "$(ls "$MP" | tr '\n' ' ' | sed 's/ $//')" "ls after mount.s3pipe"
tcat "$MP/validation_0" >"$TEST_TMP/out" || fail "reading validation_0 (mount.s3pipe) failed"
assert_file_eq "$TEST_TMP/val.exp" "$TEST_TMP/out" "validation_0 via mount.s3pipe -o input_data_config"
unmount "$MP"

# ---- errors ----
# write_idc FILE PYTHON: the config above with PYTHON applied to `c` (the
# list of channels) first
write_idc() {
	python3 - "$TEST_TMP/idc.json" "$1" "$2" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
exec(sys.argv[3])
with open(sys.argv[2], "w") as f:
    json.dump(c, f, indent=2)
PY
}
S=$S3PIPE
mp() { new_mountpoint "err$MERR_CASES"; }

write_idc "$TEST_TMP/e-file.json" 'c[0]["InputMode"] = "File"'
M=$(mp); expect_mount_error "InputMode File" "$M" "train" "InputMode" -- \
	"$S" "${E[@]}" --input-data-config "$TEST_TMP/e-file.json" "$M"
write_idc "$TEST_TMP/e-type.json" 'c[0]["DataSource"]["S3DataSource"]["S3DataType"] = "S3Folder"'
M=$(mp); expect_mount_error "S3DataType S3Folder" "$M" "train" "S3DataType" -- \
	"$S" "${E[@]}" --input-data-config "$TEST_TMP/e-type.json" "$M"
write_idc "$TEST_TMP/e-seed.json" 'c[0]["ShuffleConfig"] = {"Seed": "7"}'
M=$(mp); expect_mount_error "Seed a string" "$M" "train" "Seed" -- \
	"$S" "${E[@]}" --input-data-config "$TEST_TMP/e-seed.json" "$M"
write_idc "$TEST_TMP/e-compression.json" 'c[1]["CompressionType"] = "Zip"'
M=$(mp); expect_mount_error "CompressionType Zip (second channel)" "$M" "validation" "CompressionType" -- \
	"$S" "${E[@]}" --input-data-config "$TEST_TMP/e-compression.json" "$M"
write_idc "$TEST_TMP/e-wrapper.json" 'c[1]["RecordWrapperType"] = "TFRecord"'
M=$(mp); expect_mount_error "RecordWrapperType TFRecord" "$M" "validation" "RecordWrapperType" -- \
	"$S" "${E[@]}" --input-data-config "$TEST_TMP/e-wrapper.json" "$M"
write_idc "$TEST_TMP/e-dist.json" 'c[0]["DataSource"]["S3DataSource"]["S3DataDistributionType"] = "Sharded"'
M=$(mp); expect_mount_error "S3DataDistributionType Sharded" "$M" "train" "S3DataDistributionType" -- \
	"$S" "${E[@]}" --input-data-config "$TEST_TMP/e-dist.json" "$M"
write_idc "$TEST_TMP/e-uri.json" 'c[1]["DataSource"]["S3DataSource"]["S3Uri"] = "http://data/val/"'
M=$(mp); expect_mount_error "S3Uri not s3://" "$M" "validation" "S3Uri" -- \
	"$S" "${E[@]}" --input-data-config "$TEST_TMP/e-uri.json" "$M"
write_idc "$TEST_TMP/e-attrs.json" 'c[0]["DataSource"]["S3DataSource"].update(S3DataType="AugmentedManifestFile", S3Uri="s3://data/aug.jsonl")'
M=$(mp); expect_mount_error "AugmentedManifestFile without AttributeNames" "$M" "train" "AttributeNames" -- \
	"$S" "${E[@]}" --input-data-config "$TEST_TMP/e-attrs.json" "$M"
write_idc "$TEST_TMP/e-dup.json" 'c[1]["ChannelName"] = "train"'
M=$(mp); expect_mount_error "duplicate ChannelName" "$M" "train" "ChannelName|duplicate|twice|more than once" -- \
	"$S" "${E[@]}" --input-data-config "$TEST_TMP/e-dup.json" "$M"
write_idc "$TEST_TMP/e-name.json" 'c[1]["ChannelName"] = "val/idation"'
M=$(mp); expect_mount_error "ChannelName with '/'" "$M" "val/idation" "ChannelName|channel name" -- \
	"$S" "${E[@]}" --input-data-config "$TEST_TMP/e-name.json" "$M"

# invalid JSON: the error is on line 4
cat >"$TEST_TMP/broken.json" <<'EOF'
[
  {"ChannelName": "train",
   "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": "s3://data/train/"}},
   "InputMode": "Pipe",,
  }
]
EOF
M=$(mp); expect_mount_error "invalid JSON" "$M" "broken.json|input data config|input-data-config|InputDataConfig" '~line 4([^0-9]|$)|:4:' -- \
	"$S" "${E[@]}" --input-data-config "$TEST_TMP/broken.json" "$M"
M=$(mp); expect_mount_error "missing config file" "$M" "$TEST_TMP/no-such-idc.json" -- \
	"$S" "${E[@]}" --input-data-config "$TEST_TMP/no-such-idc.json" "$M"

# resource configs
printf '{"current_host": "algo-9", "hosts": ["algo-1", "algo-2", "algo-3"]}\n' >"$TEST_TMP/rc-bad.json"
M=$(mp); expect_mount_error "current_host not in hosts" "$M" "algo-9" "current_host|hosts" -- \
	"$S" "${E[@]}" --input-data-config "$TEST_TMP/idc.json" --resource-config "$TEST_TMP/rc-bad.json" "$M"
M=$(mp); expect_mount_error "missing resource config" "$M" "$TEST_TMP/no-such-rc.json" -- \
	"$S" "${E[@]}" --input-data-config "$TEST_TMP/idc.json" --resource-config "$TEST_TMP/no-such-rc.json" "$M"
printf '{"current_host": "algo-1", "hosts": ["algo-1",\n' >"$TEST_TMP/rc-broken.json"
M=$(mp); expect_mount_error "resource config that is not JSON" "$M" "rc-broken.json" -- \
	"$S" "${E[@]}" --input-data-config "$TEST_TMP/idc.json" --resource-config "$TEST_TMP/rc-broken.json" "$M"

# command-line combinations
M=$(mp); expect_mount_error "--input-data-config with a NAME=URI channel" "$M" "input-data-config" -- \
	"$S" "${E[@]}" --input-data-config "$TEST_TMP/idc.json" extra=s3://data/train/ "$M"
M=$(mp); expect_mount_error "--host-index without --host-count" "$M" "host-count" -- \
	"$S" "${E[@]}" --sharded --host-index 1 train=s3://data/train/ "$M"
M=$(mp); expect_mount_error "--host-index 3 --host-count 3" "$M" "host-index" -- \
	"$S" "${E[@]}" --sharded --host-index 3 --host-count 3 train=s3://data/train/ "$M"
M=$(mp); expect_mount_error "--host-count 0" "$M" "host-count" -- \
	"$S" "${E[@]}" --sharded --host-index 0 --host-count 0 train=s3://data/train/ "$M"
expect_mount_error_done

# ---- container config of a command-line channel: RecordIO, sharded ----
MP=$(new_mountpoint cli)
CC2="$TEST_TMP/container2"
mkdir -p "$CC2"
mount_ok "${E[@]}" --record-wrapper recordio --sharded --host-index 0 --host-count 1 \
	--write-container-config "$CC2" train=s3://data/train/ "$MP"
test -f "$CC2/inputdataconfig.json" || fail "--write-container-config did not write $CC2/inputdataconfig.json"
check_container_config "$CC2/inputdataconfig.json" '{
  "train": {"TrainingInputMode": "Pipe", "S3DistributionType": "ShardedByS3Key", "RecordWrapperType": "RecordIO"}}'
# one host of one: every object, framed
(cd "$S3_LOCAL/data" && find train -type f | LC_ALL=C sort) >"$TEST_TMP/keys"
files=()
while IFS= read -r k; do files+=("$S3_LOCAL/data/$k"); done <"$TEST_TMP/keys"
rio_frame "$TEST_TMP/train.rio.exp" "${files[@]}"
tcat "$MP/train_0" >"$TEST_TMP/out" || fail "reading train_0 (sharded, 1 host, RecordIO) failed"
assert_file_eq "$TEST_TMP/train.rio.exp" "$TEST_TMP/out" "train_0 (sharded, host 0 of 1, RecordIO)"
unmount "$MP"
assert_not_mounted "$MP"
note "ok"
