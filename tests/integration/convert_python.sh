#!/bin/bash
# convert_python: s3pipe-convert's protobuf RecordIO checked record by
# record against the source, by an independent reader (tests/convert_check.py:
# Python's csv module, Google's protobuf package with classes protoc makes
# from channel/record.proto, numpy; Debian's /usr/bin/python3).
#
# Generated CSV (several thousand rows, 20 to 200 columns, numbers in many
# forms: ints, decimals, exponents e-5 and E+12, signs, -0, .5 and 5.,
# 25-digit mantissas, subnormals, float32 midpoints and numbers a hair off
# them, blanks around fields, quoted fields, CRLF rows, blank lines, no
# final newline; rows of 100,000 columns; a header with --csv-header skip;
# --csv-label-column none and 3) and LibSVM (1- and 0-based indices, qid
# tokens, comments, rows without features, unsorted indices) each convert
# to exactly the records the checker expects; --threads 1 and stdin give
# the same bytes; dump prints the same values.  Bad rows of many kinds:
# --on-bad-row skip drops exactly the rows the checker finds bad and says
# how many; without it the command exits 1 with one line naming the input
# ("stdin, line N" or "FILE, line N") after writing the rows before it.
# Command-line errors exit 2, a missing input 1.  The checker is shown to
# fail on a changed value, a missing record, non-zero padding, a wrong
# label column and a changed dump line.  Last, a mounted channel with
# --convert csv (objects cut mid-row) and --convert libsvm is checked the
# same way.  Last, rows that end exactly at the converter's 1 MiB batch
# cut, through the command and through a mount.
# about a minute alone on 2 cores (most of it the checker): room for make -j
: "${S3PIPE_TEST_TIMEOUT:=300}"
. "$(cd "$(dirname "$0")/.." && pwd)/lib.sh"
PY=/usr/bin/python3 # Debian's: python3-protobuf and python3-numpy
CHECK="$S3PIPE_SRCDIR/tests/convert_check.py"
PROTO="$S3PIPE_SRCDIR/channel/record.proto"
CONVERT="$S3PIPE_BUILDDIR/s3pipe-convert"
[ -x "$CONVERT" ] || fail "s3pipe-convert is not built ($CONVERT)"
[ -x "$PY" ] || fail "$PY is required (Debian's python3)"
"$PY" -c 'import google.protobuf, numpy' 2>/dev/null ||
	fail "$PY lacks protobuf or numpy (apt-get install python3-protobuf python3-numpy)"
require_cmd protoc "apt-get install protobuf-compiler"
G="$TEST_TMP/gen"
mkdir -p "$G"

# record_pb2.py once, for every checker run
mkdir -p "$TEST_TMP/pb"
protoc --python_out="$TEST_TMP/pb" -I "$(dirname "$PROTO")" "$PROTO" || fail "protoc failed on $PROTO"
# check ARGS...: convert_check.py check ARGS...; fails the test on a mismatch
check() {
	"$PY" "$CHECK" --pb-dir "$TEST_TMP/pb" check "$@" >"$TEST_TMP/check.out" 2>"$TEST_TMP/check.err" ||
		fail "convert_check.py check $*: $(cat "$TEST_TMP/check.err")"
	note "$(cat "$TEST_TMP/check.out")"
}
# check_fails WHAT ARGS...: the checker must find a mismatch (exit 1)
check_fails() {
	local what=$1 rc=0
	shift
	"$PY" "$CHECK" --pb-dir "$TEST_TMP/pb" "$@" >"$TEST_TMP/check.out" 2>"$TEST_TMP/check.err" || rc=$?
	assert_eq 1 "$rc" "convert_check.py on $what (exit status; $(cat "$TEST_TMP/check.err"))"
	grep -q 'MISMATCH' "$TEST_TMP/check.err" || fail "convert_check.py on $what: no MISMATCH line"
	note "ok: the checker catches $what: $(cut -c1-160 "$TEST_TMP/check.err")"
}
# convert ARGS...: s3pipe-convert ARGS... must exit 0 with nothing on stderr
convert() {
	local rc=0
	"$CONVERT" "$@" 2>"$TEST_TMP/convert.err" || rc=$?
	assert_eq 0 "$rc" "s3pipe-convert $* (exit status; $(head -c 300 "$TEST_TMP/convert.err"))"
	[ ! -s "$TEST_TMP/convert.err" ] || fail "s3pipe-convert $*: unexpected stderr: $(head -c 300 "$TEST_TMP/convert.err")"
}

# ---- the data: gen.py writes the files and G/rows (NAME ROWS BAD) ----
cat >"$G/gen.py" <<'PY'
import random, struct, sys
from decimal import Decimal, getcontext
getcontext().prec = 80
out_dir = sys.argv[1]
rng = random.Random(20261127)
counts = open(out_dir + "/rows", "w")

def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]

def midpoint_text(off):
    # halfway between a random float32 and the next, or a hair off it
    # (decimal -> double lands on the midpoint: the double-rounding trap)
    b = rng.randrange(0x00800000, 0x7F000000)
    lo = Decimal(struct.unpack("<f", struct.pack("<I", b))[0])
    hi = Decimal(struct.unpack("<f", struct.pack("<I", b + 1))[0])
    m = (lo + hi) / 2
    if off:
        m += m.scaleb(-40) * off
    s = format(m, "e") if rng.random() < 0.5 else format(m, "f")
    return ("-" + s) if rng.random() < 0.3 else s

FORMS = [
    lambda: str(rng.randint(-10**6, 10**6)),                       # int
    lambda: "%.*f" % (rng.randint(1, 6), rng.uniform(-1e4, 1e4)),  # decimal
    lambda: "%.6g" % rng.uniform(-1e3, 1e3),                       # numpy.savetxt-like
    lambda: "%.9g" % f32(rng.gauss(0, 100)),                       # a float32 round trip
    lambda: "%.17g" % rng.uniform(-1, 1),                          # 17 digits
    lambda: "%de-5" % rng.randint(-99999, 99999),                  # e-5
    lambda: "%.4fE+12" % rng.uniform(-9, 9),                       # E+12
    lambda: "%.3e" % rng.uniform(-1e-30, 1e30),
    lambda: "+" + str(rng.randint(0, 99999)),                      # leading +
    lambda: "+%.3f" % rng.uniform(0, 99),
    lambda: "." + str(rng.randint(0, 99999)),                      # .5
    lambda: str(rng.randint(0, 9999)) + ".",                       # 5.
    lambda: rng.choice(["0", "-0", "-0.0", "+0", "0.000", "-0e5", "00012", "1e0", "1E+0"]),
    lambda: "".join(rng.choice("0123456789") for _ in range(12)) + "." + "".join(rng.choice("0123456789") for _ in range(13)),
    lambda: rng.choice(["1.4e-45", "1e-45", "7e-46", "3e-40", "1e-50", "-2.5e-39", "1.17549435e-38",
                        "3.4028234e38", "-3.40282346638528859811704183484516925440e+38",
                        "16777217", "16777219", "33554433", "0.1", "0.3", "123456789012345678901234567890"]),
    lambda: midpoint_text(0),
    lambda: midpoint_text(rng.choice([-1, 1])),
]

def number():
    return rng.choice(FORMS)()

def field():
    s = number()
    r = rng.random()
    if r < 0.05:
        return '"%s"' % s                          # quoted
    if r < 0.10:
        return rng.choice([" ", "\t", "  "]) + s + rng.choice(["", " ", "\t"])  # blanks around
    return s

def csv_file(name, rows, cols, header=False, final_newline=True, blank_every=53, crlf=0.1):
    lines = []
    if header:
        lines.append(",".join(['"col %d, the %dth"' % (i, i) if i % 5 == 0 else "c%d" % i for i in range(cols)]) + "\n")
    for i in range(rows):
        end = "\r\n" if rng.random() < crlf else "\n"
        lines.append(",".join(field() for _ in range(cols)) + end)
        if i % blank_every == 7 % blank_every:
            lines.append(rng.choice(["\n", "   \n", "\t\r\n", "\r\n", " \t \n"]))
    text = "".join(lines)
    if not final_newline:
        text = text.rstrip("\r\n \t")
    with open(out_dir + "/" + name, "w", newline="") as f:
        f.write(text)
    counts.write("%s %d 0\n" % (name, rows))

csv_file("mix20.csv", 3000, 20)
csv_file("mix57.csv", 2000, 57)                          # label column 3
csv_file("mix200.csv", 1500, 200, final_newline=False)   # no label
csv_file("header.csv", 2500, 33, header=True)            # --csv-header skip
csv_file("long.csv", 4, 100000, blank_every=2)           # 100,000 columns

# bad rows among good ones (10 columns), for --on-bad-row skip: each kind
# of bad field, a wrong field count, a quoted field holding a comma or a
# line end (one row over two lines), a lone CR inside a row
BAD_FIELDS = ["nan", "NaN", "inf", "-Infinity", "", " ", "1e39", "-1e39", "abc", "0x10", "1_000",
              '" 1"', '"1 "', '"1" ', '"1"x', '"1,5"', '"1\n2"', "1 2", "1e", "e5", "+-1", "1..2",
              ".", "-", "1e+", "--1", "1,", '""', "1\r2", "١"]
rows, bad = [], 0
for i in range(1200):
    fields = [field() for _ in range(10)]
    if i % 37 == 5:
        k = (i // 37) % (len(BAD_FIELDS) + 2)
        if k == len(BAD_FIELDS):
            fields = fields[:9]                     # 9 columns
        elif k == len(BAD_FIELDS) + 1:
            fields = fields + ["1"]                 # 11 columns
        else:
            fields[rng.randrange(10)] = BAD_FIELDS[k]
        if BAD_FIELDS[k % len(BAD_FIELDS)] == "1,":
            fields = fields[:9] + ["1,"]            # 11 columns again, by a trailing comma
        bad += 1
    rows.append(",".join(fields) + ("\r\n" if i % 9 == 0 else "\n"))
with open(out_dir + "/bad.csv", "w", newline="", encoding="utf-8") as f:
    f.write("".join(rows))
counts.write("bad.csv %d %d\n" % (1200 - bad, bad))

def svm_file(name, rows, dim, base, bad_every=0):
    lines, nbad, nrec = [], 0, 0
    lines.append("# a comment line\n")
    for i in range(rows):
        label = rng.choice(["0", "1", "-1", "+1", "2.5", "%.6g" % rng.uniform(-5, 5), "1e3"])
        k = rng.choice([0, 0, 1, 3, 10, 50, 200])
        idx = sorted(rng.sample(range(base, dim), k))
        if rng.random() < 0.05 and len(idx) > 1:
            idx.reverse()                            # unsorted: kept as written
        toks = [label]
        if rng.random() < 0.3:
            toks.append("qid:%d" % rng.randint(1, 99))
        toks += ["%d:%s" % (j, number()) for j in idx]
        if bad_every and i % bad_every == 3:
            toks.insert(rng.randint(1, len(toks)),
                        rng.choice(["%d:nan" % base, "x:1", "%d:" % base, ":5", "12", "%d:1" % dim,
                                    "%d:1e40" % base, "-1:2", "1:2:3", "%d:0x1" % base]))
            nbad += 1
        else:
            nrec += 1
        line = rng.choice([" ", "\t", "  "]).join(toks)
        if rng.random() < 0.1:
            line += " # comment %d: 1:2 3:4 x:y" % i
        if rng.random() < 0.05:
            line = " " + line + "\t"
        lines.append(line + ("\r\n" if rng.random() < 0.1 else "\n"))
        if i % 61 == 2:
            lines.append(rng.choice(["\n", " \n", "# just a comment\n", "\t# indented comment\r\n"]))
    with open(out_dir + "/" + name, "w", newline="") as f:
        f.write("".join(lines))
    counts.write("%s %d %d\n" % (name, nrec, nbad))

svm_file("one.svm", 3000, 1001, 1)     # 1-based: indices 1..1000, --feature-dim 1001
svm_file("zero.svm", 2000, 700, 0)     # 0-based: indices 0..699
svm_file("bad.svm", 1000, 500, 1, bad_every=40)
PY
"$PY" "$G/gen.py" "$G" || fail "test set-up: generating the data failed"
declare -A ROWS BAD
while read -r name n b; do
	ROWS[$name]=$n
	BAD[$name]=$b
done <"$G/rows"
# the set-up has what the test claims
[ "$(grep -c $'\r$' "$G/mix20.csv")" -gt 100 ] || fail "test set-up: mix20.csv has few CRLF rows"
[ "$(tail -c 1 "$G/mix200.csv" | od -An -c | tr -d ' ')" != '\n' ] || fail "test set-up: mix200.csv ends with a newline"
[ "$(grep -c '"' "$G/mix57.csv")" -gt 100 ] || fail "test set-up: mix57.csv has few quoted fields"
[ "$(stat -c %s "$G/long.csv")" -gt 2000000 ] || fail "test set-up: long.csv is short"
[ "$(stat -c %s "$G/mix200.csv")" -gt 3000000 ] || fail "test set-up: mix200.csv is under 3 MB (the converter cuts 1 MiB batches)"

# ---- CSV: every file, record by record ----
# run_csv NAME OPTIONS...: convert NAME with OPTIONS, check it
run_csv() {
	local name=$1
	shift
	convert csv "$@" "$G/$name" "$TEST_TMP/$name.rio"
	check csv "$@" --expect-rows "${ROWS[$name]}" "$TEST_TMP/$name.rio" "$G/$name"
}
run_csv mix20.csv
run_csv mix57.csv --csv-label-column 3
run_csv mix200.csv --csv-label-column none
run_csv header.csv --csv-header skip
run_csv long.csv --csv-label-column 99999
# --feature-dim: the count every row must have (the label not counted)
run_csv mix20.csv --feature-dim 19
rc=0
"$CONVERT" csv --feature-dim 20 "$G/mix20.csv" /dev/null 2>"$TEST_TMP/err" || rc=$?
assert_eq 1 "$rc" "s3pipe-convert csv --feature-dim 20 on 20 columns with a label (exit status)"
assert_match '^s3pipe-convert: .*mix20\.csv, line 1: ' "$(cat "$TEST_TMP/err")" "--feature-dim 20 on 20 columns"

# the same bytes with one thread, and from stdin to stdout
"$CONVERT" csv --threads 1 "$G/mix20.csv" "$TEST_TMP/t1.rio" || fail "s3pipe-convert --threads 1 failed"
assert_file_eq "$TEST_TMP/mix20.csv.rio" "$TEST_TMP/t1.rio" "--threads 1 vs the default"
"$CONVERT" csv --csv-label-column none <"$G/mix200.csv" >"$TEST_TMP/stdin.rio" || fail "s3pipe-convert from stdin failed"
assert_file_eq "$TEST_TMP/mix200.csv.rio" "$TEST_TMP/stdin.rio" "stdin to stdout vs files"

# ---- LibSVM ----
convert libsvm --feature-dim 1001 "$G/one.svm" "$TEST_TMP/one.rio"
check libsvm --feature-dim 1001 --expect-rows "${ROWS[one.svm]}" "$TEST_TMP/one.rio" "$G/one.svm"
convert libsvm --feature-dim 700 --threads 2 "$G/zero.svm" "$TEST_TMP/zero.rio"
check libsvm --feature-dim 700 --expect-rows "${ROWS[zero.svm]}" "$TEST_TMP/zero.rio" "$G/zero.svm"

# ---- dump: JSON lines with the same values ----
for f in mix20.csv.rio mix57.csv.rio one.rio; do
	"$CONVERT" dump "$TEST_TMP/$f" "$TEST_TMP/$f.jsonl" || fail "s3pipe-convert dump $f failed"
	"$PY" "$CHECK" --pb-dir "$TEST_TMP/pb" dump --every 7 "$TEST_TMP/$f" "$TEST_TMP/$f.jsonl" \
		>"$TEST_TMP/check.out" 2>"$TEST_TMP/check.err" ||
		fail "dump of $f: $(cat "$TEST_TMP/check.err")"
	note "dump $f: $(cat "$TEST_TMP/check.out")"
done

# ---- bad rows, skipped: the same rows dropped, counted ----
# skip_case FORMAT NAME OPTIONS...
skip_case() {
	local format=$1 name=$2 rc=0 msg
	shift 2
	"$CONVERT" "$format" --on-bad-row skip "$@" "$G/$name" "$TEST_TMP/$name.rio" 2>"$TEST_TMP/skip.err" || rc=$?
	assert_eq 0 "$rc" "s3pipe-convert $format --on-bad-row skip $name (exit status; $(tail -n 2 "$TEST_TMP/skip.err"))"
	check "$format" --on-bad-row skip --expect-skipped "${BAD[$name]}" --expect-rows "${ROWS[$name]}" "$@" \
		"$TEST_TMP/$name.rio" "$G/$name"
	msg=$(tail -n 1 "$TEST_TMP/skip.err")
	assert_match "^s3pipe-convert: ${BAD[$name]} bad rows? skipped, [0-9]+ of them logged \\(${ROWS[$name]} rows converted\\)\$" "$msg" \
		"the last line of --on-bad-row skip's messages for $name"
	grep -q "^s3pipe-convert: .*$name, line [0-9]*: .*row skipped" "$TEST_TMP/skip.err" ||
		fail "--on-bad-row skip $name: no message naming a skipped row's line: $(head -n 2 "$TEST_TMP/skip.err")"
	note "ok: $name: $msg"
}
[ "${BAD[bad.csv]}" -gt 25 ] || fail "test set-up: only ${BAD[bad.csv]} bad CSV rows"
skip_case csv bad.csv
skip_case libsvm bad.svm --feature-dim 500

# ---- bad rows, failing: one line naming the line, the rows before it out ----
# fail_case WHAT INPUT_DESC EXPECTED_LINE OUT RC_FILE ERR_FILE: checks the exit
# status 1 and the one line "s3pipe-convert: INPUT_DESC, line N: ..."
fail_case() {
	local what=$1 desc=$2 line=$3 rc=$4 err=$5 n
	assert_eq 1 "$rc" "$what: exit status"
	n=$(awk 'END { print NR }' "$err")
	assert_eq 1 "$n" "$what: lines on stderr ($(head -n 3 "$err"))"
	assert_match "^s3pipe-convert: $desc, line $line: " "$(cat "$err")" "$what: the message"
	note "ok: $what: $(cat "$err")"
}
# stdin: mix20.csv's first 2000 lines, a bad row, the rest
head -n 2000 "$G/mix20.csv" >"$TEST_TMP/before.csv"
{
	cat "$TEST_TMP/before.csv"
	printf '1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,nan,20\n'
	tail -n +2001 "$G/mix20.csv"
} >"$TEST_TMP/stdin-bad.csv"
rc=0
"$CONVERT" csv <"$TEST_TMP/stdin-bad.csv" >"$TEST_TMP/partial.rio" 2>"$TEST_TMP/err" || rc=$?
fail_case "a bad row from stdin" stdin 2001 "$rc" "$TEST_TMP/err"
assert_match "column 18" "$(cat "$TEST_TMP/err")" "the bad row's message names the column"
# the rows before it were written, nothing after
check csv "$TEST_TMP/partial.rio" "$TEST_TMP/before.csv"
# FILE: with a header (line 1), the bad row on line 1501 of the file
{
	head -n 1500 "$G/header.csv"
	printf '%s\n' "$(head -n 2 "$G/header.csv" | tail -n 1 | tr -d '\r' | sed 's/,[^,]*$/,"12" 3/')"
	tail -n +1501 "$G/header.csv"
} >"$TEST_TMP/header-bad.csv"
rc=0
"$CONVERT" csv --csv-header skip "$TEST_TMP/header-bad.csv" "$TEST_TMP/partial.rio" 2>"$TEST_TMP/err" || rc=$?
fail_case "a bad row in a file with a header" "$TEST_TMP/header-bad.csv" 1501 "$rc" "$TEST_TMP/err"
head -n 1500 "$G/header.csv" >"$TEST_TMP/before.csv"
check csv --csv-header skip "$TEST_TMP/partial.rio" "$TEST_TMP/before.csv"
# LibSVM: an index past --feature-dim on line 777
{
	head -n 776 "$G/one.svm"
	printf '1 3:1 1001:2\n'
	tail -n +777 "$G/one.svm"
} >"$TEST_TMP/bad-index.svm"
rc=0
"$CONVERT" libsvm --feature-dim 1001 "$TEST_TMP/bad-index.svm" "$TEST_TMP/partial.rio" 2>"$TEST_TMP/err" || rc=$?
fail_case "an index past --feature-dim" "$TEST_TMP/bad-index.svm" 777 "$rc" "$TEST_TMP/err"
head -n 776 "$G/one.svm" >"$TEST_TMP/before.svm"
check libsvm --feature-dim 1001 "$TEST_TMP/partial.rio" "$TEST_TMP/before.svm"
# a quoted field with a line end in it: one bad row over lines 3 and 4
rc=0
printf '1,2\n3,4\r\n"5\n6",7\n8,9\n' | "$CONVERT" csv >/dev/null 2>"$TEST_TMP/err" || rc=$?
fail_case "a quoted field holding a line end" stdin 3 "$rc" "$TEST_TMP/err"

# ---- command-line errors ----
# usage_case WHAT EXPECTED_RC NEEDLE COMMAND...
usage_case() {
	local what=$1 want=$2 needle=$3 rc=0
	shift 3
	"$@" </dev/null >/dev/null 2>"$TEST_TMP/err" || rc=$?
	assert_eq "$want" "$rc" "$what: exit status ($(head -n 2 "$TEST_TMP/err"))"
	assert_eq 1 "$(wc -l <"$TEST_TMP/err")" "$what: lines on stderr ($(cat "$TEST_TMP/err"))"
	tail -n 1 "$TEST_TMP/err" | grep -q '^s3pipe-convert: ' || fail "$what: the message does not start with 's3pipe-convert: ': $(cat "$TEST_TMP/err")"
	grep -qi -- "$needle" "$TEST_TMP/err" || fail "$what: the message does not mention '$needle': $(cat "$TEST_TMP/err")"
	note "ok: $what: exit $rc: $(tail -n 1 "$TEST_TMP/err")"
}
usage_case "libsvm without --feature-dim" 2 feature-dim "$CONVERT" libsvm "$G/one.svm"
usage_case "an unknown option" 2 "--no-such-option" "$CONVERT" csv --no-such-option "$G/mix20.csv"
usage_case "an option without its value" 2 "--feature-dim" "$CONVERT" csv "$G/mix20.csv" --feature-dim
usage_case "an unknown command" 2 "frobnicate" "$CONVERT" frobnicate
usage_case "a bad --csv-label-column" 2 "csv-label-column" "$CONVERT" csv --csv-label-column x
usage_case "a missing input file" 1 "$TEST_TMP/no-such.csv" "$CONVERT" csv "$TEST_TMP/no-such.csv" "$TEST_TMP/out.rio"
usage_case "dump of a file that is not RecordIO" 1 "" "$CONVERT" dump "$G/mix20.csv"

# ---- the checker itself fails where it must ----
# mutate SRC DST PYTHON: DST = SRC with the change the python code makes to d
mutate() {
	"$PY" - "$1" "$2" "$3" <<'PY' || fail "test set-up: mutating $1 failed"
import struct, sys
src, dst, code = sys.argv[1:4]
d = bytearray(open(src, "rb").read())
recs, off = [], 0                     # (offset, length) of each record
while off < len(d):
    n = struct.unpack_from("<I", d, off + 4)[0] & ((1 << 29) - 1)
    recs.append((off, n))
    off += 8 + n + (-n & 3)
exec(code)
open(dst, "wb").write(d)
PY
}
R="$TEST_TMP/mix20.csv.rio"
# the middle of record 1500's payload: one of its 19 packed features
mutate "$R" "$TEST_TMP/m.rio" 'o, n = recs[1500]; d[o + 8 + n // 2] ^= 0x01'
check_fails "a feature changed in one bit" check csv "$TEST_TMP/m.rio" "$G/mix20.csv"
# the payload's last byte: the top of the label
mutate "$R" "$TEST_TMP/m.rio" 'o, n = recs[2222]; d[o + 8 + n - 1] ^= 0x80'
check_fails "a label's sign changed" check csv "$TEST_TMP/m.rio" "$G/mix20.csv"
mutate "$R" "$TEST_TMP/m.rio" 'del d[recs[-1][0]:]'
check_fails "the last record missing" check csv "$TEST_TMP/m.rio" "$G/mix20.csv"
# (mix20's records are all 4-byte multiples: one.svm's sparse rows vary)
mutate "$TEST_TMP/one.rio" "$TEST_TMP/m.rio" '
o, n = [r for r in recs if r[1] % 4][5]
d[o + 8 + n] = 1'
check_fails "non-zero padding" check libsvm --feature-dim 1001 "$TEST_TMP/m.rio" "$G/one.svm"
mutate "$R" "$TEST_TMP/m.rio" 'o, n = recs[7]; d[o + 4:o + 8] = struct.pack("<I", (1 << 29) | n)'
check_fails "a record flagged as a first part" check csv "$TEST_TMP/m.rio" "$G/mix20.csv"
check_fails "the wrong label column" check csv --csv-label-column 1 "$R" "$G/mix20.csv"
check_fails "a header skipped that is not there" check csv --csv-header skip "$R" "$G/mix20.csv"
check_fails "CSV output checked as LibSVM" check libsvm --feature-dim 20 "$R" "$G/mix20.csv"
check_fails "a wrong --feature-dim (shape)" check libsvm --feature-dim 1002 "$TEST_TMP/one.rio" "$G/one.svm"
check_fails "a bad row expected to be skipped" check csv --expect-skipped 1 "$R" "$G/mix20.csv"
"$PY" - "$TEST_TMP/mix20.csv.rio.jsonl" "$TEST_TMP/m.jsonl" <<'PY' || fail "test set-up: changing the dump failed"
import json, sys
lines = open(sys.argv[1]).read().split("\n")
js = json.loads(lines[4])
js["features"]["values"]["float32"][3] *= 1.0000002  # a float32 or two away
lines[4] = json.dumps(js)
open(sys.argv[2], "w").write("\n".join(lines))
PY
cmp -s "$TEST_TMP/m.jsonl" "$TEST_TMP/mix20.csv.rio.jsonl" && fail "test set-up: the dump was not changed"
check_fails "a changed dump line" dump "$R" "$TEST_TMP/m.jsonl"

# ---- a mounted channel: --convert csv and libsvm, checked the same way ----
require_fuse
s3_start
s3_mb data
# mix57.csv in three objects, cut in the middle of rows
size=$(stat -c %s "$G/mix57.csv")
"$PY" -c 'import sys; d = open(sys.argv[1], "rb").read()
for name, a, b in (("m1", 0, 1000003), ("m2", 1000003, 1000780), ("m3", 1000780, len(d))):
    open(sys.argv[2] + "/" + name, "wb").write(d[a:b])' "$G/mix57.csv" "$G"
assert_eq "$size" "$(($(stat -c %s "$G/m1") + $(stat -c %s "$G/m2") + $(stat -c %s "$G/m3")))" "test set-up: the pieces of mix57.csv"
s3_put data csv/part-1 "$G/m1"
s3_put data csv/part-2 "$G/m2"
s3_put data csv/part-3 "$G/m3"
# header.csv's header on each of two objects
head -n 1201 "$G/header.csv" >"$G/h1"
{
	head -n 1 "$G/header.csv"
	tail -n +1202 "$G/header.csv"
} >"$G/h2"
s3_put data hdr/1.csv "$G/h1"
s3_put data hdr/2.csv "$G/h2"
s3_put data svm/one.svm "$G/one.svm"
MP=$(new_mountpoint csv)
mount_ok --endpoint-url "$S3_URL" --part-size 1M --convert csv --csv-label-column 3 train=s3://data/csv/ "$MP"
READ_TIMEOUT=60 tcat "$MP/train_0" >"$TEST_TMP/mnt.rio" || fail "reading train_0 (--convert csv) failed"
check csv --csv-label-column 3 --expect-rows "${ROWS[mix57.csv]}" "$TEST_TMP/mnt.rio" "$G/m1" "$G/m2" "$G/m3"
assert_file_eq "$TEST_TMP/mix57.csv.rio" "$TEST_TMP/mnt.rio" "train_0 (--convert csv) vs s3pipe-convert"
unmount "$MP"
MP=$(new_mountpoint hdr)
mount_ok --endpoint-url "$S3_URL" --convert csv --csv-header skip train=s3://data/hdr/ "$MP"
READ_TIMEOUT=60 tcat "$MP/train_0" >"$TEST_TMP/mnt.rio" || fail "reading train_0 (--csv-header skip) failed"
check csv --csv-header skip --expect-rows "${ROWS[header.csv]}" "$TEST_TMP/mnt.rio" "$G/h1" "$G/h2"
unmount "$MP"
MP=$(new_mountpoint svm)
mount_ok --endpoint-url "$S3_URL" --convert libsvm --feature-dim 1001 train=s3://data/svm/ "$MP"
READ_TIMEOUT=60 tcat "$MP/train_0" >"$TEST_TMP/mnt.rio" || fail "reading train_0 (--convert libsvm) failed"
check libsvm --feature-dim 1001 --expect-rows "${ROWS[one.svm]}" "$TEST_TMP/mnt.rio" "$G/one.svm"
unmount "$MP"

# ---- a row ending exactly where the converter cuts a batch (1 MiB) ----
# The first 1,048,576 bytes are 1,024 rows of 1,024 bytes, then 200,000
# short rows (3 MB): the first batch's cut leaves nothing over, and the
# next batches must still know which object and line they hold.
"$PY" - "$G/edge.csv" <<'PY' || fail "test set-up: writing edge.csv failed"
import sys
rows = ["1,0." + "1" * 1019 + "\n" for _ in range(1024)]
assert sum(map(len, rows)) == 1 << 20
rows += ["%d,%d.%d\n" % (i % 2, i, i * 7) for i in range(200000)]
open(sys.argv[1], "w").write("".join(rows))
PY
convert csv "$G/edge.csv" "$TEST_TMP/edge.rio"
check csv --expect-rows 201024 "$TEST_TMP/edge.rio" "$G/edge.csv"
{
	cat "$G/edge.csv"
	printf '1,x\n'
} >"$TEST_TMP/edge-bad.csv"
rc=0
"$CONVERT" csv "$TEST_TMP/edge-bad.csv" /dev/null 2>"$TEST_TMP/err" || rc=$?
fail_case "a bad row after a batch cut at a row's end" "$TEST_TMP/edge-bad.csv" 201025 "$rc" "$TEST_TMP/err"
s3_put data edge/edge.csv "$G/edge.csv"
MP=$(new_mountpoint edge)
mount_ok --endpoint-url "$S3_URL" --part-size 1M --convert csv train=s3://data/edge/ "$MP"
READ_TIMEOUT=60 tcat "$MP/train_0" >"$TEST_TMP/mnt.rio" || fail "reading train_0 (edge.csv, --convert csv) failed"
check csv --expect-rows 201024 "$TEST_TMP/mnt.rio" "$G/edge.csv"
unmount "$MP"
note "ok"
