#!/bin/bash
# resume: MOUNTPOINT/.s3pipe-resume/NAME_N@record=K and NAME_N@byte=B read
# exactly what NAME_N holds from its record K (or byte B) to its end, for
# every kind of Pipe channel: key order, shuffled and sharded RecordIO
# wrapping, lines (text/csv: with and without a final newline, CRLF, a line
# running from one object into the next), objects of RecordIO records
# (application/x-recordio: records split into parts, records crossing
# blocks), gunzipped JSON lines, gunzipped objects wrapped as RecordIO,
# rows converted to protobuf RecordIO, and a
# manifest. Records 0, 1, the middle, the last and past the end (an empty
# file), checked against the tail of an uninterrupted read, found by an
# independent parser (tests/recordio.py, or Python's own line split). A
# malformed RecordIO stream fails the open with EIO and one log line naming
# the object and the offset; a channel without records refuses @record.
# Opening epoch N's resume file makes N current (N+1 appears once it is
# closed), and a worker killed while a resume file is read goes on from
# where the reader was. Objects a scan read whole are passed over by the
# next resume: on the same mount, by the next worker, and on a later
# mount with the same --cache-dir; in an object larger than a block (lines,
# or RecordIO records crossing blocks), the resume starts at the block
# where its record is.
. "$(cd "$(dirname "$0")/.." && pwd)/lib.sh"
. "$S3PIPE_SRCDIR/tests/channels_lib.sh"
channels_start

# ---- the objects ----
GEN=$TEST_TMP/gen
python3 - "$GEN" "$RECORDIO_PY" <<'PY' || fail "making the objects failed"
import gzip, os, random, struct, subprocess, sys
gen, rio = sys.argv[1], sys.argv[2]
rnd = random.Random(36)
def put(key, data):
    path = os.path.join(gen, key)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
def hdr(flag, n):
    return struct.pack("<II", 0xCED7230A, (flag << 29) | n)
def rec(payload, flag=0):
    return hdr(flag, len(payload)) + payload + b"\0" * ((-len(payload)) % 4)
# rio/: objects wrapped as one record each; one of 3 MiB crosses blocks
sizes = [rnd.randrange(1, 5000) for _ in range(24)]
sizes.insert(4, 3 * 1024 * 1024 + 5)
for i, n in enumerate(sizes):
    put("rio/obj-%03d.bin" % i, bytes(rnd.getrandbits(8) for _ in range(min(n, 64))) * (n // 64) + bytes(n % 64))
# lines/: a final newline, CRLF, none (the line runs into the next object)
put("lines/l0.csv", b"a,1\nb,2\n")
put("lines/l1.csv", b"c,3\r\nd,4\r\n")
put("lines/l2.csv", b"e,5\nf,6")
put("lines/l3.csv", b"".join(b"%d,%d,%d\n" % (i, rnd.randrange(10**6), i * 7) for i in range(3000)))
put("lines/l4.csv", b"")
put("lines/l5.csv", b"\n\nz,9")
# recs/: objects of RecordIO records, one split into START MIDDLE END parts,
# one of 1.5 MiB (crossing a 1 MiB block)
put("recs/r0.rec", b"".join(rec(b"r0-%d" % i * (i + 1)) for i in range(5)))
put("recs/r1.rec", rec(b"s" * 10, 1) + rec(b"m" * 7, 2) + rec(b"e" * 3, 3) + rec(b"after"))
put("recs/r2.rec", b"".join(rec(bytes([i % 251]) * (i % 37)) for i in range(300)))
put("recs/r3.rec", rec(b"x" * (1536 * 1024 + 3)) + rec(b"tail"))
# gz/: gzipped JSON lines
for j in range(3):
    text = b"".join(b'{"i": %d, "j": %d}\n' % (i, j) for i in range(400 + j))
    put("gz/g%d.jsonl.gz" % j, gzip.compress(text))
# csv/: rows converted to protobuf RecordIO
for j in range(3):
    put("csv/c%d.csv" % j, b"".join(b"%d,%d.5,%d\n" % (i % 2, i, j) for i in range(500)))
# bad/: a valid object, then one whose third header has a bad magic
put("bad/b0.rec", rec(b"one") + rec(b"two") + rec(b"three"))
put("bad/b1.rec", rec(b"four") + rec(b"five") + b"\x01\x02\x03\x04\x05\x00\x00\x00" + b"junk")
# past/: a record whose length runs past the end of its object
put("past/p0.rec", rec(b"fine") + hdr(0, 100) + b"only ten b")
put("past/p1.rec", rec(b"next"))
# big/: lines of incompressible text, five objects of about 700 KB, as
# stored (bigl/) and gzipped (bigz/), for a resume after a saved pass
for j in range(5):
    text = b"".join(b"%d,%d,%s\n" % (j, i, rnd.randbytes(30).hex().encode()) for i in range(9000))
    put("bigl/l%d.csv" % j, text)
    put("bigz/z%d.csv.gz" % j, gzip.compress(text))
    # and rows of numbers, converted (bigc/)
    put("bigc/c%d.csv" % j, b"".join(b"%d,%d.%d,%d,%d\n" % (i % 2, i, rnd.randrange(10**6), j, rnd.randrange(10**9)) for i in range(9000)))
# bign/: three objects of lines, about 5 MB each (five 1 MiB blocks);
# bigr/: three of RecordIO records of 150 to 450 KB, about 3.6 MB each
for j in range(3):
    put("bign/n%d.csv" % j, b"".join(b"%d,%d,%s\n" % (j, i, rnd.randbytes(36).hex().encode()) for i in range(60000)))
    put("bigr/r%d.rec" % j, b"".join(rec(rnd.randbytes(rnd.randrange(150000, 450000))) for i in range(12)))
# manifest: some of rio/, in an order of its own
keys = ["obj-%03d.bin" % i for i in (7, 3, 20, 11, 0, 24)]
put("m/manifest.json", ("[{\"prefix\": \"s3://data/rio/\"}, %s]" % ", ".join('"%s"' % k for k in keys)).encode())
PY
(cd "$GEN" && find . -type f | sed 's|^\./||' | LC_ALL=C sort) >"$TEST_TMP/objects"
while IFS= read -r k; do s3_put data "$k" "$GEN/$k"; done <"$TEST_TMP/objects"

idc_channel() { # NAME URI [EXTRA_JSON]
	printf '{"ChannelName": "%s", "DataSource": {"S3DataSource": {"S3DataType": "%s", "S3Uri": "%s"%s}}%s}' \
		"$1" "${TYPE:-S3Prefix}" "$2" "${DIST:-}" "${3:-}"
}
# idc_file OUT NAME URI EXTRA_JSON [NAME URI EXTRA_JSON]...: an
# InputDataConfig of those channels
idc_file() {
	local out=$1 sep=""
	shift
	{
		echo "["
		while [ $# -ge 3 ]; do
			printf '%s' "$sep"
			idc_channel "$1" "$2" "$3"
			echo
			sep=","
			shift 3
		done
		echo "]"
	} >"$out"
}
{
	echo "["
	idc_channel rio s3://data/rio/ ', "RecordWrapperType": "RecordIO"'
	echo ","
	idc_channel rios s3://data/rio/ ', "RecordWrapperType": "RecordIO", "ShuffleConfig": {"Seed": 7}'
	echo ","
	DIST=', "S3DataDistributionType": "ShardedByS3Key"' idc_channel rioh s3://data/rio/ \
		', "RecordWrapperType": "RecordIO", "ShuffleConfig": {"Seed": 3}'
	echo ","
	idc_channel lines s3://data/lines/ ', "ContentType": "text/csv"'
	echo ","
	idc_channel recs s3://data/recs/ ', "ContentType": "application/x-recordio"'
	echo ","
	idc_channel gz s3://data/gz/ ', "ContentType": "application/jsonlines", "CompressionType": "Gzip"'
	echo ","
	idc_channel gzr s3://data/gz/ ', "CompressionType": "Gzip", "RecordWrapperType": "RecordIO"'
	echo ","
	idc_channel conv s3://data/csv/ ', "ContentType": "text/csv", "S3pipeConvert": "application/x-recordio-protobuf"'
	echo ","
	TYPE=ManifestFile idc_channel man s3://data/m/manifest.json ', "RecordWrapperType": "RecordIO"'
	echo ","
	idc_channel bad s3://data/bad/ ', "ContentType": "application/x-recordio"'
	echo ","
	idc_channel past s3://data/past/ ', "ContentType": "application/x-recordio"'
	echo ","
	idc_channel raw s3://data/lines/
	echo "]"
} >"$TEST_TMP/idc.json"
python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$TEST_TMP/idc.json" ||
	fail "the test's InputDataConfig is not JSON"

MP=$(new_mountpoint resume)
LOG=$TEST_TMP/daemon.log
mount_fg "$LOG" --endpoint-url "$S3_URL" --part-size 1M --host-index 1 --host-count 2 \
	--input-data-config "$TEST_TMP/idc.json" "$MP"
R=$MP/.s3pipe-resume

# offsets_of FORMAT FILE: where each record of FILE begins, one a line
offsets_of() {
	if [ "$1" = recordio ]; then
		python3 "$RECORDIO_PY" offsets "$2" || fail "$2 is not RecordIO"
	else
		# lines: after each '\n'; the bytes after the last one are a line
		python3 - "$2" <<'PY'
import sys
data = open(sys.argv[1], "rb").read()
at = 0
while at < len(data):
    print(at)
    nl = data.find(b"\n", at)
    at = len(data) if nl < 0 else nl + 1
PY
	fi
}

# s3_bytes MOUNTPOINT: the bytes its daemon received from S3
s3_bytes() {
	"$S3PIPE" stats --json "$1" | python3 -c 'import json, sys; print(json.load(sys.stdin)["s3"]["bytes_received"])'
}

# tail_from FILE OFFSET OUT: FILE's bytes from OFFSET on
tail_from() {
	python3 -c 'import sys; d = open(sys.argv[1], "rb").read(); open(sys.argv[3], "wb").write(d[int(sys.argv[2]):])' "$1" "$2" "$3"
}

# check_channel NAME FORMAT [MIN_RECORDS]: resume files of NAME_0 at records
# 0, 1, the middle, the last, past the end, and at bytes, vs NAME_0 read
# whole
check_channel() {
	local name=$1 format=$2 min=${3:-3} ref n size k off b
	ref=$TEST_TMP/$name.ref
	tcat "$MP/${name}_0" >"$ref" || fail "$name: reading ${name}_0 failed"
	size=$(stat -c %s "$ref")
	offsets_of "$format" "$ref" >"$TEST_TMP/$name.offsets"
	n=$(wc -l <"$TEST_TMP/$name.offsets")
	[ "$n" -ge "$min" ] || fail "$name: $n records in ${name}_0 (test set-up wants $min)"
	for k in 0 1 $((n / 2)) $((n - 1)) "$n" $((n + 3)); do
		if [ "$k" -lt "$n" ]; then
			off=$(sed -n "$((k + 1))p" "$TEST_TMP/$name.offsets")
		else
			off=$size
		fi
		tail_from "$ref" "$off" "$TEST_TMP/want"
		tcat "$R/${name}_0@record=$k" >"$TEST_TMP/got" ||
			fail "$name: reading ${name}_0@record=$k failed"
		assert_file_eq "$TEST_TMP/want" "$TEST_TMP/got" "$name: record $k of $n (byte $off)"
	done
	for b in 0 1 $((size / 2)) $((size - 1)) "$size" $((size + 7)); do
		tail_from "$ref" "$b" "$TEST_TMP/want"
		tcat "$R/${name}_0@byte=$b" >"$TEST_TMP/got" ||
			fail "$name: reading ${name}_0@byte=$b failed"
		assert_file_eq "$TEST_TMP/want" "$TEST_TMP/got" "$name: byte $b of $size"
	done
	note "$name: $n records, $size bytes: resumed at 6 records and 6 bytes"
}

check_channel rio recordio 20
check_channel rios recordio 20
check_channel rioh recordio 10
check_channel lines lines 3000
check_channel recs recordio 300
check_channel gz lines 1200
check_channel gzr recordio 3
check_channel conv recordio 1500
check_channel man recordio 5

# the shuffle is not key order, and the sharded share is not all of it
cmp -s "$TEST_TMP/rio.ref" "$TEST_TMP/rios.ref" && fail "rios_0 is in key order (set-up)"
[ "$(stat -c %s "$TEST_TMP/rioh.ref")" -lt "$(stat -c %s "$TEST_TMP/rio.ref")" ] ||
	fail "rioh_0 is not a share of the objects (set-up)"
# lines: CRLF endings are kept, and l2's last line runs into l3's first
grep -q $'d,4\r$' "$TEST_TMP/lines.ref" || fail "lines: the CRLF lines are not there (set-up)"
grep -qE '^f,60,[0-9]+,0$' "$TEST_TMP/lines.ref" || fail "lines: l2's last line does not run into l3's (set-up)"

# ---- a wrapped prefix finds record K from the listing (or the catalog),
# not by reading what comes before: a fresh mount receives the tail from
# S3, not the 3 MiB object before it ----
idc_file "$TEST_TMP/idc-walk.json" \
	rio s3://data/rio/ ', "RecordWrapperType": "RecordIO"' \
	rios s3://data/rio/ ', "RecordWrapperType": "RecordIO", "ShuffleConfig": {"Seed": 7}'
for name in rio rios; do
	MPW=$(new_mountpoint "walk-$name")
	# (--epochs 1: no prefetch of epoch 1 counts in the bytes received)
	mount_ok --endpoint-url "$S3_URL" --part-size 1M --epochs 1 \
		--input-data-config "$TEST_TMP/idc-walk.json" "$MPW"
	# the first record that begins past the 3 MiB object (obj-004.bin)
	k=0
	while read -r off; do
		[ "$off" -ge $((3 * 1024 * 1024)) ] && break
		k=$((k + 1))
	done <"$TEST_TMP/$name.offsets"
	[ "$name" = rio ] && assert_eq 5 "$k" "rio: the record after the 3 MiB object (set-up)"
	tail_from "$TEST_TMP/$name.ref" "$off" "$TEST_TMP/want"
	tcat "$MPW/.s3pipe-resume/${name}_0@record=$k" >"$TEST_TMP/got" || fail "$name: reading ${name}_0@record=$k on a fresh mount failed"
	assert_file_eq "$TEST_TMP/want" "$TEST_TMP/got" "$name: record $k on a fresh mount"
	got=$(s3_bytes "$MPW")
	want=$(stat -c %s "$TEST_TMP/want")
	note "$name: record $k resumed with $got bytes from S3 ($want bytes in the tail)"
	[ "$got" -le $((want + 1048576)) ] ||
		fail "$name: ${name}_0@record=$k received $got bytes from S3, more than its $want bytes and a block"
	unmount "$MPW"
done

# ---- objects measured by a scan are passed over by the next resume ----
for name in lines recs gz; do
	grep -qE "channel '$name' \(epoch 0\): record [0-9]+: [1-9][0-9]* records in objects measured before" "$LOG" ||
		fail "$name: no resume passed over objects an earlier scan measured"
done
# (CSV rows whose field count the conversion learns from the epoch's first
# row are always scanned from the start)
grep -q "channel 'conv' (epoch 0): record [0-9]*: .* measured before" "$LOG" &&
	fail "conv: a resume started past the first object of a channel that learns its field count there"

# ---- ... and by a resume on a later mount, with --cache-dir: the S3 bytes
# are the last object's and the tail's, not the epoch's ----
idc_file "$TEST_TMP/idc-big.json" \
	bigl s3://data/bigl/ ', "ContentType": "text/csv"' \
	bigz s3://data/bigz/ ', "ContentType": "text/csv", "CompressionType": "Gzip"' \
	bigc s3://data/bigc/ ', "ContentType": "text/csv", "S3pipeConvert": "application/x-recordio-protobuf", "S3pipeFeatureDim": 3'
CD=$TEST_TMP/cache-dir
mkdir -p "$CD"
for round in 1 2 3; do
	for name in bigl bigz bigc; do
		format=lines
		[ "$name" = bigc ] && format=recordio
		MPB=$(new_mountpoint "big-$name-$round")
		LOGB=$TEST_TMP/big-$name-$round.log
		# (the disk tier's blocks go: what the resume reads comes from S3)
		rm -f "$CD"/s3pipe/*.b1
		mount_fg "$LOGB" --endpoint-url "$S3_URL" --part-size 1M --epochs 1 --cache-dir "$CD" --cache-dir-size 64M \
			--input-data-config "$TEST_TMP/idc-big.json" "$MPB"
		if [ "$round" = 1 ]; then
			tcat "$MPB/${name}_0" >"$TEST_TMP/$name.ref" || fail "$name: reading ${name}_0 failed"
			offsets_of "$format" "$TEST_TMP/$name.ref" >"$TEST_TMP/$name.offsets"
			unmount "$MPB"
			continue
		fi
		# a line of the last object (44,000 lines before it)
		k=$((4 * 9000 + 1234))
		off=$(sed -n "$((k + 1))p" "$TEST_TMP/$name.offsets")
		tail_from "$TEST_TMP/$name.ref" "$off" "$TEST_TMP/want"
		tcat "$MPB/.s3pipe-resume/${name}_0@record=$k" >"$TEST_TMP/got" ||
			fail "$name: reading ${name}_0@record=$k (round $round) failed"
		assert_file_eq "$TEST_TMP/want" "$TEST_TMP/got" "$name: record $k (round $round)"
		got=$(s3_bytes "$MPB")
		stored=0
		for key in $(grep "^$name/" "$TEST_TMP/objects"); do
			stored=$((stored + $(stat -c %s "$GEN/$key")))
		done
		last=$(stat -c %s "$GEN/$(grep "^$name/" "$TEST_TMP/objects" | tail -n 1)")
		note "$name round $round: record $k resumed with $got bytes from S3 (the objects: $stored, the last: $last)"
		if [ "$round" = 2 ]; then
			# nothing measured yet: the scan reads every object
			[ "$got" -ge "$stored" ] || fail "$name: the first resume received $got bytes, less than the $stored before it (set-up)"
			ls "$CD"/s3pipe-listings/*.counts-* >/dev/null 2>&1 || fail "$name: no counts saved in $CD"
		else
			grep -qE "record $k: 36000 records in objects measured before" "$LOGB" ||
				fail "$name: the saved counts were not used: $(grep -E 'record|counts' "$LOGB" | tail -n 3)"
			[ "$got" -le $((last + 1048576)) ] ||
				fail "$name: ${name}_0@record=$k received $got bytes from S3, more than the last object ($last) and a block"
		fi
		unmount "$MPB"
	done
done
# a counts file that does not check is ignored, with one line
for f in "$CD"/s3pipe-listings/*.counts-*; do printf 'garbage' >"$f"; done
MPB=$(new_mountpoint big-garbage)
LOGB=$TEST_TMP/big-garbage.log
mount_fg "$LOGB" --endpoint-url "$S3_URL" --part-size 1M --epochs 1 --cache-dir "$CD" --cache-dir-size 64M \
	--input-data-config "$TEST_TMP/idc-big.json" "$MPB"
tcat "$MPB/.s3pipe-resume/bigz_0@record=$k" >"$TEST_TMP/got" || fail "bigz: reading bigz_0@record=$k over a bad counts file failed"
tail_from "$TEST_TMP/bigz.ref" "$(sed -n "$((k + 1))p" "$TEST_TMP/bigz.offsets")" "$TEST_TMP/want"
assert_file_eq "$TEST_TMP/want" "$TEST_TMP/got" "bigz: record $k over a bad counts file"
wait_until 10 grep -q "ignoring .*counts.*not the counts of this channel's objects" "$LOGB" ||
	fail "no log line about the bad counts file: $(tail -n 3 "$LOGB")"
unmount "$MPB"

# ---- objects larger than a block: once a scan read the objects whole
# (here a resume past the end), a resume starts at the block of the
# object where its record is, not at the object's start: lines and
# RecordIO records crossing blocks ----
idc_file "$TEST_TMP/idc-bign.json" \
	bign s3://data/bign/ ', "ContentType": "text/csv"' \
	bigr s3://data/bigr/ ', "ContentType": "application/x-recordio"'
CD=$TEST_TMP/cache-dir-bign
mkdir -p "$CD"
for round in 1 2 3; do
	MPB=$(new_mountpoint "bign-$round")
	LOGB=$TEST_TMP/bign-$round.log
	rm -f "$CD"/s3pipe/*.b1 # (what the resume reads comes from S3)
	mount_fg "$LOGB" --endpoint-url "$S3_URL" --part-size 1M --epochs 1 --cache-dir "$CD" --cache-dir-size 4M \
		--input-data-config "$TEST_TMP/idc-bign.json" "$MPB"
	for name in bign bigr; do
		format=lines
		[ "$name" = bigr ] && format=recordio
		objs=$(grep "^$name/" "$TEST_TMP/objects")
		last=$(stat -c %s "$GEN/$(echo "$objs" | tail -n 1)")
		case $round in
		1)
			tcat "$MPB/${name}_0" >"$TEST_TMP/$name.ref" || fail "$name: reading ${name}_0 failed"
			offsets_of "$format" "$TEST_TMP/$name.ref" >"$TEST_TMP/$name.offsets"
			[ "$last" -gt $((3 * 1048576)) ] || fail "$name: the last object is $last bytes, not over 3 MiB (set-up)"
			;;
		2)
			n=$(wc -l <"$TEST_TMP/$name.offsets")
			tcat "$MPB/.s3pipe-resume/${name}_0@record=$n" >"$TEST_TMP/got" ||
				fail "$name: reading ${name}_0@record=$n failed"
			[ -s "$TEST_TMP/got" ] && fail "$name: ${name}_0@record=$n (past the end) is not empty"
			;;
		3)
			# the first record that begins 2.5 MiB into the last object
			start=$(($(stat -c %s "$TEST_TMP/$name.ref") - last))
			k=$(awk -v min=$((start + 5 * 524288)) '$1 >= min { print NR - 1; exit }' "$TEST_TMP/$name.offsets")
			off=$(sed -n "$((k + 1))p" "$TEST_TMP/$name.offsets")
			tail_from "$TEST_TMP/$name.ref" "$off" "$TEST_TMP/want"
			before=$(s3_bytes "$MPB")
			tcat "$MPB/.s3pipe-resume/${name}_0@record=$k" >"$TEST_TMP/got" ||
				fail "$name: reading ${name}_0@record=$k failed"
			assert_file_eq "$TEST_TMP/want" "$TEST_TMP/got" "$name: record $k, placed inside its object"
			got=$(($(s3_bytes "$MPB") - before))
			note "$name: record $k ($((off - start)) bytes into the last object) resumed with $got bytes from S3 (the last object: $last)"
			grep -qE "record $k: [0-9]+ records in objects measured before, scanning from byte [0-9]+" "$LOGB" ||
				fail "$name: the saved counts were not used: $(grep -E 'record|counts' "$LOGB" | tail -n 3)"
			# from the record's block (2 MiB in, or the point a record
			# crossing it puts later) and a block of slack; from the
			# object's start it would be all $last
			[ "$got" -le $((last - 1048576)) ] ||
				fail "$name: ${name}_0@record=$k received $got bytes from S3: the scan did not start at the record's block"
			;;
		esac
	done
	unmount "$MPB"
done

# ---- malformed records: EIO on open, one line naming the object ----
tcat "$MP/bad_0" >"$TEST_TMP/bad.ref" || fail "reading bad_0 failed"
python3 "$RECORDIO_PY" offsets "$TEST_TMP/bad.ref" >/dev/null 2>&1 && fail "bad_0 parses (set-up)"
tcat "$R/bad_0@record=4" >"$TEST_TMP/got" || fail "bad_0@record=4 (before the bad header) failed"
# b0.rec is 40 bytes (3 records), b1.rec's second record begins 12 further
assert_eq "$(($(stat -c %s "$TEST_TMP/bad.ref") - 52))" "$(stat -c %s "$TEST_TMP/got")" \
	"bad_0@record=4: the bytes from record 4 (b1.rec's second) on"
assert_eq EIO "$(errno_of open_read "$R/bad_0@record=5")" "bad_0@record=5: the scan meets a bad magic"
wait_until 10 grep -q 'bad magic.*s3://data/bad/b1.rec at byte 24 ' "$LOG" ||
	fail "no log line naming s3://data/bad/b1.rec at byte 24: $(grep -i recordio "$LOG" | tail -n 3)"

# a part that runs past its object: EIO, naming that object
assert_eq EIO "$(errno_of open_read "$R/past_0@record=2")" "past_0@record=2: a part runs past its object"
wait_until 10 grep -q 'runs past the end of its object, at s3://data/past/p0.rec at byte 12 ' "$LOG" ||
	fail "no log line naming s3://data/past/p0.rec at byte 12: $(grep -i 'past' "$LOG" | tail -n 3)"
assert_eq OK "$(errno_of open_read "$R/past_0@record=1")" "past_0@record=1 (the record that runs past begins there)"

# ---- a channel without records: @record refused, @byte served ----
assert_eq EINVAL "$(errno_of open_read "$R/raw_0@record=1")" "raw_0@record=1 (no ContentType)"
tcat "$MP/raw_0" >"$TEST_TMP/raw.ref" || fail "reading raw_0 failed"
tail_from "$TEST_TMP/raw.ref" 5 "$TEST_TMP/want"
tcat "$R/raw_0@byte=5" >"$TEST_TMP/got" || fail "reading raw_0@byte=5 failed"
assert_file_eq "$TEST_TMP/want" "$TEST_TMP/got" "raw_0@byte=5"

# names that are not resume files, and the folder is never listed
for bad in 'rio_0@record=01' 'rio_0@record=-1' 'rio_0@record=' 'rio_0@rec=1' \
	'rio_0@record=18446744073709551616' 'nosuch_0@byte=1' 'rio_x@byte=1' 'rio_0'; do
	assert_eq ENOENT "$(errno_of stat "$R/$bad")" "$bad"
done
ls -a "$MP" | grep -q s3pipe-resume && fail "the mount root lists .s3pipe-resume"
assert_eq "" "$(ls -A "$R")" "readdir of .s3pipe-resume (names are found, never listed)"
tcat "$R/rio_0@byte=18446744073709551615" >"$TEST_TMP/got" || fail "reading rio_0@byte=2^64-1 failed"
assert_eq 0 "$(stat -c %s "$TEST_TMP/got")" "rio_0@byte=2^64-1: empty"

# ---- opening epoch N's resume file makes N current ----
assert_eq ENOENT "$(errno_of stat "$MP/recs_3")" "recs_3 before its resume file is opened"
tcat "$R/recs_3@record=2" >"$TEST_TMP/got" || fail "reading recs_3@record=2 failed"
tail_from "$TEST_TMP/recs.ref" "$(sed -n 3p "$TEST_TMP/recs.offsets")" "$TEST_TMP/want"
assert_file_eq "$TEST_TMP/want" "$TEST_TMP/got" "recs_3@record=2 (key order: epoch 3 holds what epoch 0 does)"
wait_until 10 test -e "$MP/recs_4" || fail "recs_4 did not appear once recs_3@record=2 was closed"
test -e "$MP/recs_3" || fail "recs_3 is not visible after its resume file was read"

# ---- a worker killed while a resume file is read ----
k=$(($(wc -l <"$TEST_TMP/rios.offsets") / 3))
off=$(sed -n "$((k + 1))p" "$TEST_TMP/rios.offsets")
tail_from "$TEST_TMP/rios.ref" "$off" "$TEST_TMP/want"
W=$(worker_pids "$MP")
[ -n "$W" ] || fail "no worker found"
python3 - "$R/rios_0@record=$k" "$TEST_TMP/got" "$TEST_TMP/held" <<'PY' &
import os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
with open(sys.argv[2], "wb") as out:
    out.write(os.read(fd, 65536))
    open(sys.argv[3], "w").close()
    while os.path.exists(sys.argv[3]):
        time.sleep(0.01)
    while True:
        b = os.read(fd, 1 << 20)
        if not b:
            break
        out.write(b)
PY
reader=$!
wait_until 20 test -e "$TEST_TMP/held" || fail "the reader of rios_0@record=$k did not start"
kill -KILL "$W"
rm -f "$TEST_TMP/held"
wait "$reader" || fail "reading rios_0@record=$k across a worker's death failed"
assert_file_eq "$TEST_TMP/want" "$TEST_TMP/got" "rios_0@record=$k read across a worker's death"
wait_until 20 test -n "$(worker_pids "$MP")" || fail "no new worker"
# the new worker has the objects the dead one measured (the keeper's memfd,
# no --cache-dir here): gz_0's last record but one (a name not looked up
# before, so that it is found again), from them
n=$(wc -l <"$TEST_TMP/gz.offsets")
tail_from "$TEST_TMP/gz.ref" "$(sed -n "$((n - 1))p" "$TEST_TMP/gz.offsets")" "$TEST_TMP/want"
tcat "$R/gz_0@record=$((n - 2))" >"$TEST_TMP/got" || fail "reading gz_0@record=$((n - 2)) after the worker's death failed"
assert_file_eq "$TEST_TMP/want" "$TEST_TMP/got" "gz_0@record=$((n - 2)) after the worker's death"
wait_until 10 grep -qE "channel 'gz': [1-9][0-9]* objects measured, from the worker before this one" "$LOG" ||
	fail "the new worker did not take the objects the dead one measured: $(grep -E "'gz'" "$LOG" | tail -n 3)"

unmount "$MP"
assert_not_mounted "$MP"
note "ok"
