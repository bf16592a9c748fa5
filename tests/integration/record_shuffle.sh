#!/bin/bash
# record_shuffle: --shuffle-buffer mixes an epoch's records across its
# objects. On RecordIO objects (records split into parts, records crossing
# blocks, a record spanning three blocks) and on lines (a final newline or
# none, CRLF): every record of the objects comes out exactly once, whole
# (an open last line gains its '\n'); the order is the one s3pipe(1)
# specifies (an independent reproduction agrees byte for byte), not the
# objects', differs
# per epoch and per seed, and is the same on a second mount with the same
# seed; batches mix objects; resume files (@record=K, @byte=B) read exactly
# the tail of an uninterrupted read, found from the index with no read of
# what comes before; the daemon holds about the buffer, not the epoch;
# two hosts' shares together hold every record once; a worker SIGKILLed
# twice mid-epoch changes no byte (and the workers after the first take the
# index from the keeper); the channel holds about the buffer and
# its index after an epoch of 8 MiB,
# its index is saved with --cache-dir and taken by the next mount unless an
# object changed,
# not the epoch; a malformed object fails the open with EIO and one line
# naming it; and options that cannot go with it (or a buffer the cache
# size cannot hold) are refused at mount time.
. "$(cd "$(dirname "$0")/.." && pwd)/lib.sh"
. "$S3PIPE_SRCDIR/tests/channels_lib.sh"
channels_start

GEN=$TEST_TMP/gen
python3 - "$GEN" "$S3PIPE_SRCDIR/tests" <<'PY' || fail "making the objects failed"
import os, random, sys
gen = sys.argv[1]
sys.path.insert(0, sys.argv[2])
from recordio import _rec as rec
rnd = random.Random(37)
def put(key, data):
    path = os.path.join(gen, key)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    open(path, "wb").write(data)
# recs/: 6 objects of RecordIO records, each payload naming its object and
# place; r1 has a record in three parts, r3 one of 150 KiB (three 64 KiB
# blocks)
for o in range(6):
    out = []
    for i in range(rnd.randrange(300, 900)):
        body = b"o%d-r%d-" % (o, i) + bytes(rnd.getrandbits(8) for _ in range(rnd.randrange(0, 300)))
        out.append(rec(body))
        if o == 1 and i == 40:
            out.append(rec(b"s" * 10, 1) + rec(b"m" * 7, 2) + rec(b"e" * 3, 3))
        if o == 3 and i == 100:
            out.append(rec(b"big" * (50 * 1024)))
    put("recs/r%d.rec" % o, b"".join(out))
# lines/: CSV, one with CRLF, one without a final newline
for o in range(5):
    rows = [b"%d,%d,%d" % (o, i, rnd.randrange(10**9)) for i in range(rnd.randrange(2000, 6000))]
    end = b"\r\n" if o == 2 else b"\n"
    data = end.join(rows)
    if o != 4:
        data += end
    put("lines/l%d.csv" % o, data)
# bad/: a good object, then one whose second header has a bad magic
put("bad/b0.rec", rec(b"one") + rec(b"two"))
put("bad/b1.rec", rec(b"three") + b"\x01\x02\x03\x04\x05\x00\x00\x00" + b"junk")
PY
(cd "$GEN" && find . -type f | sed 's|^\./||' | LC_ALL=C sort) >"$TEST_TMP/objects"
while IFS= read -r k; do s3_put data "$k" "$GEN/$k"; done <"$TEST_TMP/objects"

# records FORMAT FILE...: each record of the files, one per line, hex (a
# line's record without its ending: the shuffle adds '\n' to an open one)
RECORDS_PY=$TEST_TMP/records.py
cat >"$RECORDS_PY" <<'PY'
import importlib.util, sys
spec = importlib.util.spec_from_file_location("recordio", sys.argv[1])
rio = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rio)
fmt = sys.argv[2]
for path in sys.argv[3:]:
    data = open(path, "rb").read()
    if fmt == "lines":
        at = 0
        while at < len(data):
            nl = data.find(b"\n", at)
            end = len(data) if nl < 0 else nl + 1
            print(data[at:end].rstrip(b"\n").hex())
            at = end
    else:
        offs = list(rio.offsets(path)) + [len(data)]
        for a, b in zip(offs, offs[1:]):
            print(data[a:b].hex())
PY
records() { python3 "$RECORDS_PY" "$RECORDIO_PY" "$@"; }

# idc FILE NAME:PREFIX:TYPE:SEED...: an InputDataConfig of such channels,
# each with a 256K buffer (the command line's options are every channel's)
idc() {
	local out=$1 sep="" c name prefix type seed
	shift
	{
		echo "["
		for c in "$@"; do
			IFS=: read -r name prefix type seed <<<"$c"
			printf '%s{"ChannelName": "%s", "ContentType": "%s",
			 "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": "s3://data/%s/"}},
			 "ShuffleConfig": {"Seed": %s, "S3pipeBufferSize": "256K"}}\n' "$sep" "$name" "$type" "$prefix" "$seed"
			sep=","
		done
		echo "]"
	} >"$out"
}
idc "$TEST_TMP/idc.json" recs:recs:application/x-recordio:5 lines:lines:text/csv:5
MP=$(new_mountpoint mix)
LOG=$TEST_TMP/daemon.log
mount_fg "$LOG" --endpoint-url "$S3_URL" --part-size 64K --input-data-config "$TEST_TMP/idc.json" "$MP"
R=$MP/.s3pipe-resume

# ---- every record exactly once, not in the objects' order ----
for ch in recs:recordio lines:lines; do
	name=${ch%%:*} fmt=${ch#*:}
	tcat "$MP/${name}_0" >"$TEST_TMP/$name.0" || fail "$name: reading ${name}_0 failed"
	records "$fmt" "$GEN/$name"/* >"$TEST_TMP/$name.want"
	records "$fmt" "$TEST_TMP/$name.0" >"$TEST_TMP/$name.got"
	LC_ALL=C sort "$TEST_TMP/$name.want" >"$TEST_TMP/$name.want.sorted"
	LC_ALL=C sort "$TEST_TMP/$name.got" >"$TEST_TMP/$name.got.sorted"
	assert_file_eq "$TEST_TMP/$name.want.sorted" "$TEST_TMP/$name.got.sorted" \
		"$name: the records of epoch 0, as a multiset"
	cmp -s "$TEST_TMP/$name.want" "$TEST_TMP/$name.got" && fail "$name: epoch 0 is in the objects' order"
	n=$(wc -l <"$TEST_TMP/$name.got")
	note "$name: $n records once each"
done
# the order is the one s3pipe(1) specifies: an independent reproduction
# from the man page (tests/record_shuffle.py) gives the same bytes
for ch in recs:recordio lines:lines; do
	name=${ch%%:*} fmt=${ch#*:}
	(cd "$GEN/$name" && ls | LC_ALL=C sort) | python3 "$S3PIPE_SRCDIR/tests/epoch_order.py" 5 0 >"$TEST_TMP/$name.keys"
	# shellcheck disable=SC2046
	python3 "$S3PIPE_SRCDIR/tests/record_shuffle.py" "$fmt" 5 0 262144 65536 "$GEN/$name" \
		$(cat "$TEST_TMP/$name.keys") >"$TEST_TMP/$name.spec" || fail "$name: the reproduction failed"
	assert_file_eq "$TEST_TMP/$name.spec" "$TEST_TMP/$name.0" "${name}_0 against s3pipe(1)'s record shuffle"
done

# the size an epoch file shows is what it holds (lines: l4's last line
# gained a '\n')
assert_eq "$(stat -c %s "$TEST_TMP/lines.0")" "$(stat -c %s "$MP/lines_0")" "lines_0's size"
assert_eq $(($(cat "$GEN"/lines/* | wc -c) + 1)) "$(stat -c %s "$TEST_TMP/lines.0")" "lines_0: the objects and one '\\n'"
grep -q $'^2,[0-9]*,[0-9]*\r$' "$TEST_TMP/lines.0" || fail "lines: the CRLF lines lost their '\\r'"

# batches mix objects: in every run of 64 records of recs_0, 3 objects or more
python3 - "$TEST_TMP/recs.got" <<'PY' || fail "recs_0: batches do not mix objects"
import sys
objs = [bytes.fromhex(l.strip())[8:10] for l in open(sys.argv[1])]
worst = min(len(set(objs[i:i + 64])) for i in range(0, len(objs) - 64, 64))
print("fewest objects in a batch of 64:", worst)
sys.exit(0 if worst >= 3 else 1)
PY

# ---- epochs differ; a second mount with the same seed gives the same
# bytes, one with another seed does not ----
tcat "$MP/recs_1" >"$TEST_TMP/recs.1" || fail "reading recs_1 failed"
cmp -s "$TEST_TMP/recs.0" "$TEST_TMP/recs.1" && fail "recs: epochs 0 and 1 are the same"
records recordio "$TEST_TMP/recs.1" | LC_ALL=C sort >"$TEST_TMP/recs.1.sorted"
assert_file_eq "$TEST_TMP/recs.want.sorted" "$TEST_TMP/recs.1.sorted" "recs: the records of epoch 1"
MP2=$(new_mountpoint mix2)
idc "$TEST_TMP/idc2.json" recs:recs:application/x-recordio:5 other:recs:application/x-recordio:6
mount_ok --endpoint-url "$S3_URL" --part-size 64K --input-data-config "$TEST_TMP/idc2.json" "$MP2"
tcat "$MP2/recs_0" >"$TEST_TMP/recs.0b" || fail "reading recs_0 on the second mount failed"
assert_file_eq "$TEST_TMP/recs.0" "$TEST_TMP/recs.0b" "recs_0 on two mounts with seed 5"
tcat "$MP2/other_0" >"$TEST_TMP/other.0" || fail "reading other_0 failed"
cmp -s "$TEST_TMP/recs.0" "$TEST_TMP/other.0" && fail "seeds 5 and 6 give the same epoch"

# ---- resume inside a shuffled epoch: the tail, by record and by byte ----
python3 "$RECORDIO_PY" offsets "$TEST_TMP/recs.0" >"$TEST_TMP/recs.offsets" || fail "recs_0 is not RecordIO"
n=$(wc -l <"$TEST_TMP/recs.offsets")
size=$(stat -c %s "$TEST_TMP/recs.0")
tail_from() { python3 -c 'import sys; d = open(sys.argv[1], "rb").read(); open(sys.argv[3], "wb").write(d[int(sys.argv[2]):])' "$1" "$2" "$3"; }
for k in 0 1 $((n / 2)) $((n - 1)) "$n"; do
	off=$size
	[ "$k" -lt "$n" ] && off=$(sed -n "$((k + 1))p" "$TEST_TMP/recs.offsets")
	tail_from "$TEST_TMP/recs.0" "$off" "$TEST_TMP/want"
	tcat "$R/recs_0@record=$k" >"$TEST_TMP/got" || fail "reading recs_0@record=$k failed"
	assert_file_eq "$TEST_TMP/want" "$TEST_TMP/got" "recs: record $k of $n"
done
for b in 1 $((size / 3)) $((size - 1)) "$size"; do
	tail_from "$TEST_TMP/recs.0" "$b" "$TEST_TMP/want"
	tcat "$R/recs_0@byte=$b" >"$TEST_TMP/got" || fail "reading recs_0@byte=$b failed"
	assert_file_eq "$TEST_TMP/want" "$TEST_TMP/got" "recs: byte $b of $size"
done
lines_n=$(wc -l <"$TEST_TMP/lines.got")
python3 - "$TEST_TMP/lines.0" "$((lines_n * 9 / 10))" "$TEST_TMP/want" <<'PY'
import sys
d = open(sys.argv[1], "rb").read()
k = int(sys.argv[2])
at = 0
for _ in range(k):
    at = d.index(b"\n", at) + 1
open(sys.argv[3], "wb").write(d[at:])
PY
tcat "$R/lines_0@record=$((lines_n * 9 / 10))" >"$TEST_TMP/got" || fail "reading lines_0@record failed"
assert_file_eq "$TEST_TMP/want" "$TEST_TMP/got" "lines: record $((lines_n * 9 / 10)) of $lines_n"
note "resumed recs_0 at 5 records and 4 bytes, lines_0 at one record"

# ---- a shuffled prefix of records as stored (objects shuffled, no
# buffer): resume files by record come from the channel's record index
# (one pass, made by the first), byte for byte the tail; lines run from an
# object without a final newline into the next as in the epoch file ----
idc_plain() {
	printf '[{"ChannelName": "ro", "ContentType": "application/x-recordio",
	  "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": "s3://data/recs/"}},
	  "ShuffleConfig": {"Seed": 3}},
	 {"ChannelName": "lo", "ContentType": "text/csv",
	  "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": "s3://data/lines/"}},
	  "ShuffleConfig": {"Seed": 3}}]' >"$1"
}
idc_plain "$TEST_TMP/idc-plain.json"
MPP=$(new_mountpoint plain)
LOGP=$TEST_TMP/plain.log
mount_fg "$LOGP" --endpoint-url "$S3_URL" --part-size 64K --input-data-config "$TEST_TMP/idc-plain.json" "$MPP"
for ch in ro:recordio lo:lines; do
	name=${ch%%:*} fmt=${ch#*:}
	tcat "$MPP/${name}_0" >"$TEST_TMP/$name.0" || fail "reading ${name}_0 failed"
	python3 - "$fmt" "$TEST_TMP/$name.0" "$RECORDIO_PY" >"$TEST_TMP/$name.offsets" <<'PY'
import importlib.util, sys
fmt, path = sys.argv[1], sys.argv[2]
data = open(path, "rb").read()
if fmt == "recordio":
    spec = importlib.util.spec_from_file_location("recordio", sys.argv[3])
    rio = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rio)
    offs = rio.offsets(path)
else:
    offs, at = [], 0
    while at < len(data):
        offs.append(at)
        nl = data.find(b"\n", at)
        at = len(data) if nl < 0 else nl + 1
print("\n".join(str(o) for o in offs))
PY
	pn=$(wc -l <"$TEST_TMP/$name.offsets")
	psize=$(stat -c %s "$TEST_TMP/$name.0")
	for k in 0 1 $((pn / 2)) $((pn - 1)) "$pn"; do
		off=$psize
		[ "$k" -lt "$pn" ] && off=$(sed -n "$((k + 1))p" "$TEST_TMP/$name.offsets")
		tail_from "$TEST_TMP/$name.0" "$off" "$TEST_TMP/want"
		tcat "$MPP/.s3pipe-resume/${name}_0@record=$k" >"$TEST_TMP/got" ||
			fail "reading ${name}_0@record=$k failed"
		assert_file_eq "$TEST_TMP/want" "$TEST_TMP/got" "$name: record $k of $pn"
	done
	assert_eq 1 "$(grep -c "channel '$name': indexed" "$LOGP")" "$name: record indexes made for 5 resumes"
done
# (seed 3 puts l4, which ends without a newline, before another object:
# its last line and that object's first are one record of lo_0)
assert_eq $(($(wc -l <"$TEST_TMP/lines.want") - 1)) "$(wc -l <"$TEST_TMP/lo.offsets")" \
	"lo_0's records: the objects' lines, one joined"
unmount "$MPP"

# ---- a resume deep in the epoch reads a few blocks, not what comes before:
# on a fresh mount (the index made by a first open), the blocks fetched for
# the first bytes of record K at 95 %, of the 12 the objects take (a small
# cache, 256K beside the buffer: its prefetch window is a block or two) ----
MP3=$(new_mountpoint mix3)
idc "$TEST_TMP/idc3.json" recs:recs:application/x-recordio:5
mount_ok --endpoint-url "$S3_URL" --part-size 64K --cache-size 512K --epochs 1 \
	--input-data-config "$TEST_TMP/idc3.json" "$MP3"
k=$((n * 19 / 20))
off=$(sed -n "$((k + 1))p" "$TEST_TMP/recs.offsets")
tail_from "$TEST_TMP/recs.0" "$off" "$TEST_TMP/want"
head -c 1 "$MP3/recs_0" >/dev/null || fail "opening recs_0 (the index) failed"
before=$(stats_of "$MP3" 's.cache.prefetched + s.cache.misses')
head -c 100 "$MP3/.s3pipe-resume/recs_0@record=$k" >"$TEST_TMP/got.head" ||
	fail "reading recs_0@record=$k failed"
after=$(stats_of "$MP3" 's.cache.prefetched + s.cache.misses')
head -c 100 "$TEST_TMP/want" | cmp -s - "$TEST_TMP/got.head" || fail "recs_0@record=$k: its first bytes"
[ $((after - before)) -le 6 ] || fail "recs_0@record=$k: $((after - before)) blocks fetched for its first bytes"
note "record $k of $n: $((after - before)) blocks fetched for its first 100 bytes"
unmount "$MP3"

# ---- memory: an epoch of 8 MiB of lines through a 256K buffer; what the
# channel holds halfway (its index, 8 bytes a record and a block, and the
# pool's peak) stays near the buffer, far below the epoch ----
python3 - "$GEN/big" <<'PY' || fail "making the big objects failed"
import os, sys
os.makedirs(sys.argv[1])
for o in range(4):
    rows = b"".join(b"%d,%08d,%s\n" % (o, i, b"v" * (i % 40)) for i in range(80000))
    open(os.path.join(sys.argv[1], "b%d.csv" % o), "wb").write(rows[:2 << 20].rsplit(b"\n", 1)[0] + b"\n")
PY
for f in "$GEN"/big/*; do s3_put data "big/${f##*/}" "$f"; done
idc "$TEST_TMP/idc4.json" big:big:text/csv:9
MP4=$(new_mountpoint mix4)
mount_ok --endpoint-url "$S3_URL" --part-size 64K --input-data-config "$TEST_TMP/idc4.json" "$MP4"
# (the channel's memory read halfway through the epoch, the reader open)
python3 - "$MP4/big_0" "$MP4/.s3pipe-stats" "$TEST_TMP/big.0" >"$TEST_TMP/big.held" <<'PY' ||
import json, sys
src, stats, out = sys.argv[1:4]
data = b""
with open(src, "rb") as f:
    while True:
        b = f.read(1 << 16)
        if not b:
            break
        data += b
        if len(data) >= 4 << 20 and not hasattr(sys, "held"):
            s = json.load(open(stats))
            sys.held = [c for c in s["channels"] if c["name"] == "big"][0]["catalog"]["bytes"]
open(out, "wb").write(data)
print(sys.held)
PY
	fail "reading big_0 failed"
big_records=$(cat "$GEN"/big/* | wc -l)
assert_eq "$big_records" "$(wc -l <"$TEST_TMP/big.0")" "big_0's lines"
epoch_bytes=$(stat -c %s "$TEST_TMP/big.0")
held=$(cat "$TEST_TMP/big.held")
blocks=0
for f in "$GEN"/big/*; do blocks=$((blocks + ($(stat -c %s "$f") + 65535) / 65536)); done
index=$(((big_records + blocks) * 8 + 4096))
note "big_0: $epoch_bytes bytes, $big_records records; halfway the channel holds $held bytes (index $index, buffer 262144)"
[ "$held" -gt "$index" ] || fail "big: the channel's memory ($held) does not count its pool"
# (a buffer of 4 blocks: the blocks whose last records linger in the pool
# keep a piece each; with 64 blocks or more it is within a few per cent)
[ "$held" -le $((index + 3 * 262144)) ] ||
	fail "big: the channel holds $held bytes halfway: more than its index ($index) and 3 x the buffer"
unmount "$MP4"

# ---- the index saved beside the listing (--cache-dir): a second mount
# takes it and reads no object before its first byte (the same bytes); an
# object replaced makes it read the channel again ----
CD=$TEST_TMP/cachedir
mkdir -p "$CD"
for round in 1 2 3; do
	MP5=$(new_mountpoint "mix5-$round")
	LOG5=$TEST_TMP/saved-$round.log
	mount_fg "$LOG5" --endpoint-url "$S3_URL" --part-size 64K --cache-dir "$CD" --cache-dir-size 64M \
		--input-data-config "$TEST_TMP/idc.json" "$MP5"
	tcat "$MP5/recs_0" >"$TEST_TMP/recs.saved" || fail "reading recs_0 with --cache-dir failed"
	case $round in
	1)
		assert_file_eq "$TEST_TMP/recs.0" "$TEST_TMP/recs.saved" "recs_0 with --cache-dir"
		grep -q "channel 'recs': indexed 2957 records" "$LOG5" || fail "round 1: no index made"
		ls "$CD"/*/*.records >/dev/null 2>&1 || fail "no index saved in $CD: $(ls -R "$CD" | head)"
		;;
	2)
		assert_file_eq "$TEST_TMP/recs.0" "$TEST_TMP/recs.saved" "recs_0 from the saved index"
		grep -q "channel 'recs': took its record index (2957 records)" "$LOG5" ||
			fail "round 2: the saved index was not taken: $(grep recs "$LOG5" | head -3)"
		grep -q "indexed" "$LOG5" && fail "round 2: the channel was read again"
		# (an object replaced: another ETag and size)
		printf '\x0a\x23\xd7\xce\x03\x00\x00\x00new\x00' >"$TEST_TMP/r9.rec"
		cat "$GEN/recs/r5.rec" "$TEST_TMP/r9.rec" >"$TEST_TMP/r5.new"
		s3_put data recs/r5.rec "$TEST_TMP/r5.new"
		;;
	3)
		grep -q "channel 'recs': indexed 2958 records" "$LOG5" ||
			fail "round 3: an object changed, the index was not made again: $(grep recs "$LOG5" | head -3)"
		s3_put data recs/r5.rec "$GEN/recs/r5.rec"
		;;
	esac
	unmount "$MP5"
done

# ---- sharded over two hosts: each host's epoch is its share of the
# objects, record-shuffled; together they hold every record once ----
for host in 0 1; do
	MPH=$(new_mountpoint "shard$host")
	mount_ok --endpoint-url "$S3_URL" --part-size 64K --host-index "$host" --host-count 2 \
		x=s3://data/recs/ --content-type application/x-recordio --sharded --shuffle-seed 5 \
		--shuffle-buffer 128K "$MPH"
	tcat "$MPH/x_0" >"$TEST_TMP/shard$host" || fail "reading host $host's x_0 failed"
	unmount "$MPH"
done
records recordio "$TEST_TMP/shard0" "$TEST_TMP/shard1" | LC_ALL=C sort >"$TEST_TMP/shards.sorted"
assert_file_eq "$TEST_TMP/recs.want.sorted" "$TEST_TMP/shards.sorted" "the two hosts' records, together"
[ -s "$TEST_TMP/shard0" ] && [ -s "$TEST_TMP/shard1" ] || fail "a host's share is empty (set-up)"

# ---- the worker SIGKILLed twice while recs_0 is read: the same bytes (the
# new worker places the reader by drawing up to its offset) ----
MPK=$(new_mountpoint kill)
LOGK=$TEST_TMP/kill.log
mount_fg "$LOGK" --endpoint-url "$S3_URL" --part-size 64K --input-data-config "$TEST_TMP/idc.json" "$MPK"
mkdir -p "$TEST_TMP/kctl"
python3 "$S3PIPE_SRCDIR/tests/phased_read.py" --chunk 16384 "$MPK/recs_0" "$TEST_TMP/recs.killed" \
	"$TEST_TMP/kctl" 200000 400000 &
kreader=$!
track_pid "$kreader"
for n in 0 1; do
	wait_until 30 test -e "$TEST_TMP/kctl/at.$n" || fail "the reader did not reach mark $n"
	# (the first worker hands its index to the keeper on a thread of its
	# own; the next one takes it from there, and it stays for the third)
	[ "$n" -gt 0 ] || wait_until 30 grep -q "channel 'recs': its record index is kept" "$LOGK" ||
		fail "the first worker did not keep its record index"
	w=$(worker_pids "$MPK" | head -n 1)
	[ -n "$w" ] || fail "no worker to kill"
	kill -KILL "$w"
	wait_pids_gone 10 "$w" || fail "worker $w survived SIGKILL"
	touch "$TEST_TMP/kctl/go.$n"
done
wait "$kreader" || fail "the reader of recs_0 failed across two worker deaths: $(cat "$TEST_TMP/kctl/error" 2>/dev/null)"
assert_file_eq "$TEST_TMP/recs.0" "$TEST_TMP/recs.killed" "recs_0 across two worker deaths"
# (the index made once: the workers after the first took it from the
# keeper's memfd, and read no object to make it)
assert_eq 1 "$(grep -c "channel 'recs': indexed" "$LOGK")" "indexes made across two worker deaths"
assert_eq 2 "$(grep -c "channel 'recs': took its record index (2957 records) from the worker before" "$LOGK")" \
	"indexes taken from the keeper"
unmount "$MPK"

# ---- a malformed object: EIO at the open, one line naming it ----
MPB=$(new_mountpoint bad)
LOGB=$TEST_TMP/bad.log
mount_fg "$LOGB" --endpoint-url "$S3_URL" \
	bad=s3://data/bad/ --content-type application/x-recordio --shuffle-seed 1 --shuffle-buffer 64K "$MPB"
assert_eq EIO "$(errno_of open_read "$MPB/bad_0")" "opening bad_0"
wait_until 10 grep -q 's3://data/bad/b1.rec at byte 16' "$LOGB" ||
	fail "no log line names the bad object and offset: $(grep -i recordio "$LOGB" | head -3)"
unmount "$MPB"

# ---- options that do not go with it ----
mp() { new_mountpoint "err$MERR_CASES"; }
E=(--endpoint-url "$S3_URL")
cat >"$TEST_TMP/idc-bad.json" <<'JSON'
[{"ChannelName": "x", "ContentType": "text/csv",
  "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": "s3://data/lines/"}},
  "ShuffleConfig": {"Seed": 1, "S3pipeBufferSize": "lots"}}]
JSON
M=$(mp); expect_mount_error "no seed" "$M" "shuffle-buffer needs --shuffle-seed" -- \
	"$S3PIPE" "${E[@]}" x=s3://data/recs/ --content-type application/x-recordio --shuffle-buffer 1M "$M"
M=$(mp); expect_mount_error "no records" "$M" "needs a --content-type that holds records" -- \
	"$S3PIPE" "${E[@]}" x=s3://data/recs/ --content-type image/png --shuffle-seed 1 --shuffle-buffer 1M "$M"
M=$(mp); expect_mount_error "wrapped" "$M" "shuffle-buffer needs --record-wrapper none" -- \
	"$S3PIPE" "${E[@]}" x=s3://data/recs/ --record-wrapper recordio --content-type application/x-recordio \
	--shuffle-seed 1 --shuffle-buffer 1M "$M"
M=$(mp); expect_mount_error "bad size" "$M" "shuffle-buffer must be a size" -- \
	"$S3PIPE" "${E[@]}" x=s3://data/recs/ --content-type text/csv --shuffle-seed 1 --shuffle-buffer 12Q "$M"
M=$(mp); expect_mount_error "no room" "$M" "must hold the record shuffle's buffers" -- \
	"$S3PIPE" "${E[@]}" x=s3://data/recs/ --content-type text/csv --shuffle-seed 1 --shuffle-buffer 300M "$M"
M=$(mp); expect_mount_error "in a config" "$M" "S3pipeBufferSize" -- \
	"$S3PIPE" "${E[@]}" --input-data-config "$TEST_TMP/idc-bad.json" "$M"
expect_mount_error_done
