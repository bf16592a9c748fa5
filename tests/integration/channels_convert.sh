#!/bin/bash
# channels_convert: --convert csv|libsvm streams protobuf RecordIO, one
# Record per row, equal byte for byte to s3pipe-convert over the same bytes.
#
# A CSV prefix of five objects (one of 5 MiB, so rows cross 1 MiB cache
# blocks and the converter's batches; one ending in the middle of a row
# that the next object finishes; the last without a final line end;
# quotes, CRLF and blank lines): epochs 0
# and 1 of the mount each equal `s3pipe-convert csv` of the objects
# concatenated.  The same objects gzipped (--compression gzip --convert
# csv), with headers (--csv-header skip: each object's first line dropped,
# its end ending its last row), with no label, as LibSVM, and from an
# InputDataConfig (ContentType text/csv;label_size=0 with S3pipeConvert;
# the container config then says application/x-recordio-protobuf).  A bad
# row fails the read with EIO after the rows before it, the log naming the
# object and line; --on-bad-row skip skips it and counts it.  An emulated
# seek converts again up to the offset.
. "$(cd "$(dirname "$0")/.." && pwd)/lib.sh"
. "$S3PIPE_SRCDIR/tests/channels_lib.sh"
require_fuse
require_cmd python3
require_cmd gzip
CONVERT="$S3PIPE_BUILDDIR/s3pipe-convert"
[ -x "$CONVERT" ] || fail "s3pipe-convert is not built ($CONVERT)"
s3_start
s3_mb data
G="$TEST_TMP/gen"
mkdir -p "$G"

# gen_csv FILE ROWS SEED [END]: rows of a label and 12 numbers in many
# forms; END "cut" leaves the last row without its end
gen_csv() {
	python3 - "$@" <<'PY'
import random, sys
path, rows, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
cut = len(sys.argv) > 4 and sys.argv[4] == "cut"
rng = random.Random(seed)
forms = [lambda: "%d" % rng.randrange(-1000, 1000),
         lambda: "%.6g" % rng.uniform(-1, 1),
         lambda: "%.9e" % rng.uniform(-1e6, 1e6),
         lambda: "%.17g" % rng.random(),
         lambda: '"%.3f"' % rng.uniform(0, 100),
         lambda: " %.2f " % rng.uniform(0, 10),
         lambda: "+%dE-3" % rng.randrange(0, 99999)]
out = []
for i in range(rows):
    fields = [str(i % 3)] + [rng.choice(forms)() for _ in range(12)]
    end = "\r\n" if i % 7 == 0 else "\n"
    out.append(",".join(fields) + end)
    if i % 101 == 0:
        out.append("\n")
text = "".join(out)
if cut:
    text = text.rstrip("\r\n")
open(path, "w").write(text)
PY
}

gen_csv "$G/1.csv" 20 1
gen_csv "$G/2.csv" 50000 2 # about 5 MiB
gen_csv "$G/3.csv" 300 3
# 3 ends after the 7th field of its last row; 4 holds the rest of that row
python3 - "$G/3.csv" "$G/4.csv" <<'PY'
import sys
text = open(sys.argv[1], newline="").read()
start = text.rstrip("\r\n").rfind("\n") + 1
cut = start
for _ in range(7):
    cut = text.index(",", cut) + 1
open(sys.argv[1], "w", newline="").write(text[:cut])
open(sys.argv[2], "w", newline="").write(text[cut:])
PY
gen_csv "$G/5.csv" 4000 5 cut
[ "$(stat -c %s "$G/2.csv")" -gt 3145728 ] || fail "test set-up: 2.csv is under 3 MiB"
csvs=("$G"/[1-5].csv)
for f in "${csvs[@]}"; do
	s3_put data "csv/$(basename "$f")" "$f"
	gzip -c -n "$f" >"${f%.csv}.gz"
	s3_put data "csvgz/$(basename "${f%.csv}").gz" "${f%.csv}.gz"
done
cat "${csvs[@]}" >"$TEST_TMP/all.csv"
"$CONVERT" csv "$TEST_TMP/all.csv" "$TEST_TMP/csv.exp" || fail "s3pipe-convert csv of the objects failed"
rows=$("$CONVERT" dump "$TEST_TMP/csv.exp" | wc -l)
want_rows=$(python3 -c 'import sys; print(sum(1 for l in open(sys.argv[1], newline="").read().split("\n") if l.strip("\r\t ")))' "$TEST_TMP/all.csv")
assert_eq "$want_rows" "$rows" "records in s3pipe-convert's output"

# ---- CSV: two epochs, plain and gzipped ----
MP=$(new_mountpoint csv)
mount_ok --endpoint-url "$S3_URL" --part-size 1M --cache-size 8M --convert csv \
	--epochs 2 train=s3://data/csv/ "$MP"
assert_eq 0 "$(stat -c %s "$MP/train_0")" "st_size of a converted epoch (not known before reading)"
tcat "$MP/train_0" >"$TEST_TMP/out" || fail "reading train_0 (--convert csv) failed"
assert_file_eq "$TEST_TMP/csv.exp" "$TEST_TMP/out" "train_0 (--convert csv) vs s3pipe-convert csv"
wait_until 10 test -e "$MP/train_1" || fail "train_1 did not appear"
timeout -k 5 60 dd if="$MP/train_1" of="$TEST_TMP/out" bs=65521 status=none ||
	fail "reading train_1 (--convert csv, bs=65521) failed"
assert_file_eq "$TEST_TMP/csv.exp" "$TEST_TMP/out" "train_1 (--convert csv, bs=65521) vs s3pipe-convert csv"
unmount "$MP"

# an emulated seek converts again from the start up to the offset
MP=$(new_mountpoint seek)
mount_ok --endpoint-url "$S3_URL" --part-size 1M --convert csv --seek emulate \
	train=s3://data/csv/ "$MP"
timeout -k 5 60 python3 - "$MP/train_0" "$TEST_TMP/csv.exp" <<'PY' || fail "--convert csv --seek emulate: a seek back and forth does not read the right bytes"
import os, sys
want = open(sys.argv[2], "rb").read()
fd = os.open(sys.argv[1], os.O_RDONLY)
assert os.read(fd, 1000) == want[:1000]
for off in (3000001, 17, len(want) - 5):
    os.lseek(fd, off, os.SEEK_SET)
    got = os.read(fd, 4096)
    assert got == want[off:off + 4096], off
os.close(fd)
PY
unmount "$MP"

MP=$(new_mountpoint csvgz)
mount_ok --endpoint-url "$S3_URL" --part-size 1M --compression gzip --convert csv \
	train=s3://data/csvgz/ "$MP"
tcat "$MP/train_0" >"$TEST_TMP/out" || fail "reading train_0 (--compression gzip --convert csv) failed"
assert_file_eq "$TEST_TMP/csv.exp" "$TEST_TMP/out" "train_0 (gzip, then converted) vs s3pipe-convert csv"
unmount "$MP"

# ---- headers: each object a file of its own ----
python3 - "$G" <<'PY'
import sys
g = sys.argv[1]
for n in (1, 2, 5):
    body = open("%s/%d.csv" % (g, n), newline="").read()
    open("%s/h%d.csv" % (g, n), "w", newline="").write("label,f1,f2,\"f,3\"\r\n" + body)
PY
exp_parts=()
for n in 1 2 5; do
	s3_put data "csvh/h$n.csv" "$G/h$n.csv"
	# the file's rows, its last one ended
	cp "$G/$n.csv" "$G/h$n.exp.csv"
	[ -z "$(tail -c 1 "$G/$n.csv")" ] || printf '\n' >>"$G/h$n.exp.csv"
	exp_parts+=("$G/h$n.exp.csv")
done
cat "${exp_parts[@]}" | "$CONVERT" csv >"$TEST_TMP/csvh.exp" || fail "s3pipe-convert of the header-less rows failed"
"$CONVERT" csv --csv-header skip "$G/h5.csv" >"$TEST_TMP/h5.rec" || fail "s3pipe-convert --csv-header skip failed"
"$CONVERT" csv "$G/h5.exp.csv" >"$TEST_TMP/h5.exp" || fail "s3pipe-convert of 5.csv failed"
assert_file_eq "$TEST_TMP/h5.exp" "$TEST_TMP/h5.rec" "s3pipe-convert --csv-header skip drops the first line"
MP=$(new_mountpoint csvh)
mount_ok --endpoint-url "$S3_URL" --part-size 1M --convert csv --csv-header skip \
	train=s3://data/csvh/ "$MP"
tcat "$MP/train_0" >"$TEST_TMP/out" || fail "reading train_0 (--csv-header skip) failed"
assert_file_eq "$TEST_TMP/csvh.exp" "$TEST_TMP/out" "train_0 (--csv-header skip): each object's rows, its header dropped"
unmount "$MP"

# ---- no label; LibSVM ----
"$CONVERT" csv --csv-label-column none "$TEST_TMP/all.csv" "$TEST_TMP/nolabel.exp" ||
	fail "s3pipe-convert --csv-label-column none failed"
"$CONVERT" dump "$TEST_TMP/nolabel.exp" >"$TEST_TMP/nolabel.json" || fail "s3pipe-convert dump failed"
assert_eq "$rows" "$(grep -c '"label": {}}$' "$TEST_TMP/nolabel.json")" \
	"records without a label (--csv-label-column none)"
python3 - "$G" <<'PY'
import random, sys
g = sys.argv[1]
rng = random.Random(9)
for n in range(1, 4):
    lines = []
    for i in range(3000 * n):
        idx = sorted(rng.sample(range(1, 5000), rng.randrange(0, 30)))
        feats = " ".join("%d:%.6g" % (k, rng.uniform(-5, 5)) for k in idx)
        lines.append(("%d %s" % (rng.randrange(2), feats)).rstrip())
        if i % 50 == 0:
            lines.append("# a comment")
    open("%s/%d.svm" % (g, n), "w").write("\n".join(lines) + "\n")
PY
cat "$G"/[1-3].svm >"$TEST_TMP/all.svm"
"$CONVERT" libsvm --feature-dim 5000 "$TEST_TMP/all.svm" "$TEST_TMP/svm.exp" || fail "s3pipe-convert libsvm failed"
for n in 1 2 3; do s3_put data "svm/$n.svm" "$G/$n.svm"; done
MP=$(new_mountpoint misc)
mount_ok --endpoint-url "$S3_URL" --part-size 1M --convert libsvm --feature-dim 5000 \
	train=s3://data/svm/ "$MP"
tcat "$MP/train_0" >"$TEST_TMP/out" || fail "reading train_0 (--convert libsvm) failed"
assert_file_eq "$TEST_TMP/svm.exp" "$TEST_TMP/out" "train_0 (--convert libsvm) vs s3pipe-convert libsvm"
unmount "$MP"

# ---- InputDataConfig: ContentType text/csv;label_size=0 ----
cat >"$TEST_TMP/idc.json" <<'JSON'
[{"ChannelName": "train",
  "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": "s3://data/csv/"}},
  "ContentType": "text/csv; label_size=0",
  "S3pipeConvert": "application/x-recordio-protobuf",
  "InputMode": "Pipe"}]
JSON
mkdir -p "$TEST_TMP/container"
MP=$(new_mountpoint idc)
mount_ok --endpoint-url "$S3_URL" --part-size 1M --input-data-config "$TEST_TMP/idc.json" \
	--write-container-config "$TEST_TMP/container" "$MP"
tcat "$MP/train_0" >"$TEST_TMP/out" || fail "reading train_0 (S3pipeConvert) failed"
assert_file_eq "$TEST_TMP/nolabel.exp" "$TEST_TMP/out" "train_0 (text/csv;label_size=0, S3pipeConvert)"
assert_eq "application/x-recordio-protobuf" \
	"$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["train"]["ContentType"])' "$TEST_TMP/container/inputdataconfig.json")" \
	"the container config's ContentType for a converted channel"
unmount "$MP"

# ---- a bad row: EIO after the rows before it, or skipped ----
gen_csv "$G/b1.csv" 3000 21
gen_csv "$G/b2.csv" 3000 22
python3 - "$G/b2.csv" "$G/b2bad.csv" <<'PY'
import sys
lines = open(sys.argv[1], newline="").read().split("\n")
# the 1200th line gets a field that is not a number
f = lines[1199].split(",")
f[5] = "oops"
lines[1199] = ",".join(f)
open(sys.argv[2], "w", newline="").write("\n".join(lines))
head = "\n".join(lines[:1199]) + "\n"
open(sys.argv[2] + ".head", "w", newline="").write(head)
PY
s3_put data bad/1.csv "$G/b1.csv"
s3_put data bad/2.csv "$G/b2bad.csv"
cat "$G/b1.csv" "$G/b2bad.csv.head" | "$CONVERT" csv >"$TEST_TMP/bad.before" ||
	fail "s3pipe-convert of the rows before the bad one failed"
MP=$(new_mountpoint bad)
mount_fg "$TEST_TMP/bad.log" --endpoint-url "$S3_URL" --part-size 1M --convert csv \
	train=s3://data/bad/ "$MP"
res=$(read_to_error "$MP/train_0" "$TEST_TMP/out" 65536) || fail "reading train_0 (a bad row) did not finish"
assert_eq EIO "$res" "reading train_0 with a bad row"
assert_file_eq "$TEST_TMP/bad.before" "$TEST_TMP/out" "the records before the bad row"
wait_until 10 grep -q "s3://data/bad/2.csv, line 1200: column 5 ('oops') is not a number" "$TEST_TMP/bad.log" ||
	fail "the log does not name the bad row: $(grep -i 'line\|row' "$TEST_TMP/bad.log" | head -3)"
unmount "$MP"
MP=$(new_mountpoint skip)
mount_fg "$TEST_TMP/skip.log" --endpoint-url "$S3_URL" --part-size 1M --convert csv \
	--on-bad-row skip train=s3://data/bad/ "$MP"
tcat "$MP/train_0" >"$TEST_TMP/out" || fail "reading train_0 (--on-bad-row skip) failed"
cat "$G/b1.csv" "$G/b2bad.csv" | "$CONVERT" csv --on-bad-row skip >"$TEST_TMP/skip.exp" 2>"$TEST_TMP/skip.err" ||
	fail "s3pipe-convert --on-bad-row skip failed"
assert_file_eq "$TEST_TMP/skip.exp" "$TEST_TMP/out" "train_0 (--on-bad-row skip) vs s3pipe-convert --on-bad-row skip"
kept=$("$CONVERT" dump "$TEST_TMP/out" | wc -l)
all_rows=$("$CONVERT" dump "$TEST_TMP/csv.exp" | wc -l) # (only a sanity bound)
[ "$kept" -gt 0 ] && [ "$kept" -lt "$all_rows" ] || fail "records with a row skipped: $kept"
grep -q "line 1200: column 5 ('oops') is not a number: row skipped" "$TEST_TMP/skip.log" ||
	fail "the log does not name the skipped row"
grep -q "1 bad row skipped, 1 of them logged" "$TEST_TMP/skip.err" || fail "s3pipe-convert does not count the skipped row"
unmount "$MP"
wait_until 10 grep -q "1 bad row skipped, 1 of them logged" "$TEST_TMP/skip.log" || fail "the daemon does not count the skipped row"
