#!/bin/bash
# keeper: the mount outlives its worker.  The process that mounts (the
# keeper, whose pid --pid-file holds) keeps /dev/fuse; the worker serving
# reads is killed with SIGKILL while a reader holds an epoch file open
# (between reads, and in the middle of reading), and the reader gets
# exactly the epoch's bytes with no error; the next epoch still appears,
# and stays once it has; s3pipe stats counts the restarts and names the
# cause (SIGSEGV as a crash); SIGHUP hands over to a new worker under a
# reader; the keeper's SIGTERM unmounts and leaves no process behind.  A
# worker killed during the mount's listing is started again; FastFile
# readers doing random reads see no error and no wrong byte across a
# kill; a worker that dies five times within 60 s gives the mount up: the
# reader holding a file gets an error, and nothing is left behind.  A
# key-order reader deep in an epoch of small objects (a synthetic bucket
# of the test server, 100 keys a LIST page) goes on across a kill with
# the bytes of an epoch read with no kill, the new worker listing on from
# where the readers were: fewer LIST requests than the rest of the epoch
# would take from its start.  A shuffled channel listed in several key
# ranges (its entries not in key order): the worker that listed reads its
# catalog from the image it kept, and a reader across a kill, and the new
# worker's reader, get every object once and whole in the same order (the
# kept order's entry numbers mean the same objects to the new worker); a
# catalog read from a saved listing (--listing-ttl) is kept the same way,
# and the new worker maps it.
S3_SERVER_ARGS=(--synthetic "deep=3000" --synthetic-size 500:900 --synthetic-page-keys 100)
. "$(cd "$(dirname "$0")/.." && pwd)/lib.sh"
require_fuse
require_cmd python3
# under ASan the SIGSEGV sent below is a crash by the default action, as
# in a plain build, not a report of ASan's
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}handle_segv=0"
s3_start

s3_mb data
s3_seed data train/ 12 3000001
expected_cat "$S3_LOCAL/data" train/ >"$TEST_TMP/train.exp"

# the worker serving MP: the keeper's child
worker_of() {	# KEEPER_PID
	cat "/proc/$1/task/$1/children" 2>/dev/null | tr ' ' '\n' | grep -m1 .
}

MP=$(new_mountpoint)
mount_ok --endpoint-url "$S3_URL" --pid-file "$TEST_TMP/pid" --cache-size 8M --part-size 1M \
	train=s3://data/train/ "$MP"
KEEPER=$(cat "$TEST_TMP/pid")
W1=$(worker_of "$KEEPER")
[ -n "$W1" ] || fail "the keeper $KEEPER has no worker"
assert_eq "$KEEPER" "$(stats_of "$MP" 's.worker.keeper_pid')" "keeper pid in the stats"
assert_eq "$W1" "$(stats_of "$MP" 's.pid')" "worker pid in the stats"
assert_eq 0 "$(stats_of "$MP" 's.worker.restarts')" "restarts at start"

# a reader that stops at marks and goes on when told: it reads train_0
# through one descriptor in 256 KiB reads
cat >"$TEST_TMP/reader.py" <<'EOF'
import hashlib, os, sys, time
path, out, marks, ctl = sys.argv[1], sys.argv[2], [int(m) for m in sys.argv[3].split(",")], sys.argv[4]
fd = os.open(path, os.O_RDONLY)
n = 0
with open(out, "wb") as f:
    while True:
        if marks and n >= marks[0]:
            mark = marks.pop(0)
            open(ctl + ".at", "w").write(str(mark))
            while not os.path.exists(ctl + ".go%d" % mark):
                time.sleep(0.01)
        b = os.read(fd, 256 << 10)
        if not b:
            break
        f.write(b)
        n += len(b)
os.close(fd)
EOF
# reader_at_mark FILE OUT MARKS CTL WHAT: reader.py in the background
# ($reader), waited for until it stops at its first mark
reader_at_mark() {
	python3 "$TEST_TMP/reader.py" "$1" "$2" "$3" "$4" &
	reader=$!
	track_pid "$reader"
	wait_until 30 test -e "$4.at" || fail "$5 did not reach its mark"
}
python3 "$TEST_TMP/reader.py" "$MP/train_0" "$TEST_TMP/out0" 4194304,16777216 "$TEST_TMP/ctl" &
reader=$!
track_pid "$reader"

# 1. killed between two reads of an open file
wait_until 30 test -e "$TEST_TMP/ctl.at" || fail "the reader did not reach its first mark"
kill -KILL "$W1"
wait_pids_gone 10 "$W1" || fail "worker $W1 survived SIGKILL"
wait_until 10 eval '[ -n "$(worker_of "$KEEPER")" ]' || fail "no new worker within 10 s"
W2=$(worker_of "$KEEPER")
assert_ne "$W1" "$W2" "the worker after a SIGKILL"
touch "$TEST_TMP/ctl.go4194304"

# 2. killed while the reader waits in read() for a slow server: every GET
# is answered 3 s late, so past what the 8 MiB budget holds the reader
# blocks; the kill comes while it does (it cannot have ended: 20 MB more
# need GETs), and the new worker reads what the dead one had taken
wait_until 30 eval '[ "$(cat "$TEST_TMP/ctl.at")" = 16777216 ]' ||
	fail "the reader did not reach its second mark"
fault_arm 'kind=delay&seconds=3&count=1000&match=/data/train/'
touch "$TEST_TMP/ctl.go16777216"
sleep 1
kill -0 "$reader" || fail "the reader ended although every GET was held back"
kill -KILL "$W2"
fault_clear
wait_pids_gone 10 "$W2" || fail "worker $W2 survived SIGKILL"
wait "$reader" || fail "the reader of train_0 failed across two worker deaths"
assert_file_eq "$TEST_TMP/train.exp" "$TEST_TMP/out0" "train_0 across two worker deaths"
assert_mounted "$MP"
kill -0 "$KEEPER" || fail "the keeper died"

# what the stats say, from the third worker
assert_eq 2 "$(stats_of "$MP" 's.worker.restarts')" "restarts after two kills"
assert_eq "signal 9 (Killed)" "$(stats_of "$MP" 's.worker.last_restart.cause')" "cause of the last restart"
"$S3PIPE" stats "$MP" >"$TEST_TMP/stats.txt" || fail "s3pipe stats failed"
assert_match 'worker  2 restarts, the last at [0-9T:-]+Z: signal 9 \(Killed\)' \
	"$(cat "$TEST_TMP/stats.txt")" "s3pipe stats after two kills"
wait_until 10 test -e "$MP/train_1" || fail "train_1 did not appear after train_0 was closed"

# 3. SIGHUP: a new worker takes over under a reader
reader_at_mark "$MP/train_1" "$TEST_TMP/out1" 8388608 "$TEST_TMP/hup" "the reader of train_1"
W3=$(worker_of "$KEEPER")
kill -HUP "$KEEPER"
wait_until 20 eval '[ "$(worker_of "$KEEPER")" != "$W3" ]' || fail "SIGHUP: no new worker within 20 s"
wait_pids_gone 10 "$W3" || fail "SIGHUP: the old worker $W3 did not stop"
touch "$TEST_TMP/hup.go8388608"
wait "$reader" || fail "the reader of train_1 failed across a SIGHUP restart"
assert_file_eq "$TEST_TMP/train.exp" "$TEST_TMP/out1" "train_1 across a SIGHUP restart"
assert_eq "restart asked for (SIGHUP)" "$(stats_of "$MP" 's.worker.last_restart.cause')" "cause after SIGHUP"

# train_2 appeared when train_1 was closed: a new worker still shows it
wait_until 10 test -e "$MP/train_2" || fail "train_2 did not appear after train_1 was closed"
W4=$(worker_of "$KEEPER")
kill -SEGV "$W4"
wait_pids_gone 10 "$W4" || fail "worker $W4 survived SIGSEGV"
wait_until 10 eval '[ -n "$(worker_of "$KEEPER")" ]' || fail "no new worker after SIGSEGV"
assert_eq "train_0 train_1 train_2" "$(ls "$MP" | tr '\n' ' ' | sed 's/ $//')" "epochs after a restart"
assert_match '^signal 11 \(Segmentation fault\)' \
	"$(stats_of "$MP" 's.worker.last_restart.cause')" "cause after SIGSEGV"
tcat "$MP/train_2" >"$TEST_TMP/out2" || fail "reading train_2 after SIGSEGV failed"
assert_file_eq "$TEST_TMP/train.exp" "$TEST_TMP/out2" "train_2 after SIGSEGV"

# SIGTERM to the keeper: unmounted, nothing left running
W5=$(worker_of "$KEEPER")
kill -TERM "$KEEPER"
wait_pids_gone 10 "$KEEPER" "$W5" || fail "keeper or worker still running 10 s after SIGTERM"
wait_until 5 eval "! is_mounted '$MP'" || fail "$MP still mounted after the keeper's SIGTERM"
assert_not_mounted "$MP"

# ---- killed during the listing at mount time: started again ----
fault_arm 'kind=delay&seconds=2&list=1&count=1&match=train'
# keeper_fg LOG ARGS...: s3pipe -f ARGS in the background, its output in
# LOG; KEEPER is its pid (the mount, the last argument, unmounted at exit)
keeper_fg() {
	local log=$1
	shift
	"$S3PIPE" -f --endpoint-url "$S3_URL" "$@" >"$log" 2>&1 </dev/null &
	KEEPER=$!
	track_pid "$KEEPER"
	echo "${!#}" >>"$TEST_TMP/mounts"
}
MP=$(new_mountpoint listing)
keeper_fg "$TEST_TMP/listing.log" --shuffle-seed 7 train=s3://data/train/ "$MP"
wait_until 10 eval '[ -n "$(worker_of "$KEEPER")" ]' || fail "no worker while mounting"
W1=$(worker_of "$KEEPER")
is_mounted "$MP" && fail "mounted before the delayed listing answered"
kill -KILL "$W1"
wait_until 30 is_mounted "$MP" ||
	fail "not mounted after the worker was killed while listing: $(cat "$TEST_TMP/listing.log")"
grep -q 'killed while starting' "$TEST_TMP/listing.log" ||
	fail "the kill while starting was not reported: $(cat "$TEST_TMP/listing.log")"
tcat "$MP/train_0" >"$TEST_TMP/shuffled" || fail "reading the shuffled train_0 failed"
assert_eq "$(stat -c %s "$TEST_TMP/train.exp")" "$(stat -c %s "$TEST_TMP/shuffled")" "size of the shuffled train_0"
# the next worker takes the listing and the order the last one kept (no
# LIST, no shuffle), and its epoch 0 is the same shuffle
W2=$(worker_of "$KEEPER")
kill -KILL "$W2"
wait_until 10 eval '[ -n "$(worker_of "$KEEPER")" ] && [ "$(worker_of "$KEEPER")" != "$W2" ]' ||
	fail "no worker after the shuffled mount's kill"
wait_until 10 grep -q "keys mapped from the last worker's catalog, no LIST" "$TEST_TMP/listing.log" ||
	fail "the new worker listed again: $(tail -n 3 "$TEST_TMP/listing.log")"
grep -q "epoch 0's order of [0-9]* entries from the last worker" "$TEST_TMP/listing.log" ||
	fail "the new worker shuffled again: $(tail -n 3 "$TEST_TMP/listing.log")"
tcat "$MP/train_0" >"$TEST_TMP/shuffled2" || fail "reading train_0 after the kill failed"
cmp -s "$TEST_TMP/shuffled" "$TEST_TMP/shuffled2" || fail "train_0 is another shuffle after the kill"
unmount "$MP"

# ---- a kept order is read in place: not written over while read ----
# (more objects than a plan fills at once, so that the held reader's plan
# reads the order again after epoch 2's order, the same slot, was made)
s3_seed data many/ 2500 100
MP=$(new_mountpoint inplace)
keeper_fg "$TEST_TMP/inplace.log" --shuffle-seed 7 many=s3://data/many/ "$MP"
wait_until 30 is_mounted "$MP" || fail "not mounted: $(cat "$TEST_TMP/inplace.log")"
tcat "$MP/many_0" >"$TEST_TMP/many0" || fail "reading many_0 failed"
wait_until 10 grep -q "kept for the next worker" "$TEST_TMP/inplace.log" ||
	fail "the catalog was not kept: $(tail -n 3 "$TEST_TMP/inplace.log")"
W1=$(worker_of "$KEEPER")
kill -KILL "$W1"
wait_until 10 eval '[ -n "$(worker_of "$KEEPER")" ] && [ "$(worker_of "$KEEPER")" != "$W1" ]' ||
	fail "no worker after the kill"
exec 7<"$MP/many_0"
head -c 1 <&7 >/dev/null || fail "reading the held many_0 failed"
grep -q "epoch 0's order of 2500 entries from the last worker" "$TEST_TMP/inplace.log" ||
	fail "the new worker shuffled again: $(tail -n 3 "$TEST_TMP/inplace.log")"
tcat "$MP/many_1" >/dev/null || fail "reading many_1 failed"
tcat "$MP/many_2" >"$TEST_TMP/many2" || fail "reading many_2 failed"
cmp -s "$TEST_TMP/many0" "$TEST_TMP/many2" && fail "epoch 2 is epoch 0's shuffle"
cat <&7 >"$TEST_TMP/many0.rest" || fail "reading the rest of the held many_0 failed"
exec 7<&-
tail -c +2 "$TEST_TMP/many0" | cmp -s - "$TEST_TMP/many0.rest" ||
	fail "the held many_0 changed when epoch 2's order was made"
unmount "$MP"

# ---- FastFile: 8 readers of random ranges over the files, a kill ----
s3_seed data files/ 50 300007
MP=$(new_mountpoint tree)
mount_ok --endpoint-url "$S3_URL" --pid-file "$TEST_TMP/pid.tree" --input-mode fastfile \
	--part-size 1M --cache-size 16M files=s3://data/files/ "$MP"
KEEPER=$(cat "$TEST_TMP/pid.tree")
cat >"$TEST_TMP/random.py" <<'EOF'
import os, random, sys
mnt, local, seed, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
rng = random.Random(seed)
names = sorted(os.listdir(local))
fds = {name: os.open(os.path.join(mnt, name), os.O_RDONLY) for name in names}
bad = 0
for i in range(n):
    name = rng.choice(names)
    size = os.path.getsize(os.path.join(local, name))
    off = rng.randrange(size)
    ln = rng.randrange(1, 200000)
    got = os.pread(fds[name], ln, off)
    with open(os.path.join(local, name), "rb") as f:
        f.seek(off)
        want = f.read(ln)
    if got != want:
        bad += 1
print(bad)
sys.exit(1 if bad else 0)
EOF
# GETs held 2 s: the readers' first reads wait in the worker (the page
# cache holds nothing yet) when it is killed
fault_arm 'kind=delay&seconds=2&count=1000&match=/data/files/'
pids=()
for r in 1 2 3 4 5 6 7 8; do
	python3 "$TEST_TMP/random.py" "$MP/files" "$S3_LOCAL/data/files" "$r" 400 >"$TEST_TMP/random.$r" 2>&1 &
	pids+=($!)
	track_pid "${pids[-1]}"
done
W1=$(worker_of "$KEEPER")
wait_until 30 eval '[ "$(stats_of "$MP" "s.channels[0].tree.opens")" -ge 8 ]' ||
	fail "the FastFile readers did not open their files"
sleep 0.5
alive=0
for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=$((alive + 1)); done
assert_eq 8 "$alive" "FastFile readers still reading at the kill"
kill -KILL "$W1"
fault_clear
for r in 1 2 3 4 5 6 7 8; do
	wait "${pids[$((r - 1))]}" || fail "FastFile reader $r: $(tail -n 3 "$TEST_TMP/random.$r")"
	assert_eq 0 "$(tail -n 1 "$TEST_TMP/random.$r")" "wrong reads of FastFile reader $r"
done
assert_eq 1 "$(stats_of "$MP" 's.worker.restarts')" "FastFile restarts"
unmount "$MP"

# ---- deep in a key-order epoch of small objects: the listing goes on ----
synth_lists() { s3_curl -sS -f "$S3_URL/__synthetic/stats" | json_eval 's.lists'; }
MP=$(new_mountpoint deep)
mount_ok --endpoint-url "$S3_URL" --pid-file "$TEST_TMP/pid.deep" --cache-size 8M --part-size 1M \
	train=s3://deep/data/ "$MP"
KEEPER=$(cat "$TEST_TMP/pid.deep")
# about 2,000 of the 3,000 objects (700 bytes on average) read, then the kill
reader_at_mark "$MP/train_0" "$TEST_TMP/deep0" 1400000 "$TEST_TMP/deep" "the deep reader"
W1=$(worker_of "$KEEPER")
before=$(synth_lists)
kill -KILL "$W1"
wait_pids_gone 10 "$W1" || fail "worker $W1 survived SIGKILL"
touch "$TEST_TMP/deep.go1400000"
wait "$reader" || fail "the deep reader of train_0 failed across a kill"
after=$(synth_lists)
wait_until 10 test -e "$MP/train_1" || fail "train_1 did not appear after the deep train_0"
tcat "$MP/train_1" >"$TEST_TMP/deep1" || fail "reading the deep train_1 failed"
assert_file_eq "$TEST_TMP/deep1" "$TEST_TMP/deep0" "the deep train_0 across a kill against train_1"
# from the start the rest would take 30 pages; from where the reader was
# (at most a trim batch, 256 objects, and a page behind) about 13
[ $((after - before)) -lt 20 ] ||
	fail "the new worker listed the deep epoch from its start: $((after - before)) LIST requests"
unmount "$MP"

# ---- shuffled, listed by key ranges at once: the worker that listed
# reads its catalog from the image it kept (its heap freed), entries
# numbered as it listed them; a reader across a kill after that, and a
# reader of the new worker, get every object whole and once, in the same
# order ----
cat >"$TEST_TMP/objects.py" <<'EOF'
import hashlib, sys, urllib.parse
# KEYS (the server's ground truth) EPOCH: the epoch is every non-empty
# object once, whole (its bytes: its key's md5 hex repeated)
objs = {}
for line in open(sys.argv[1]):
    k, size = line.rstrip("\n").split("\t")[:2]
    k = urllib.parse.unquote(k)
    if int(size):
        objs[hashlib.md5(k.encode()).hexdigest()] = int(size)
data = open(sys.argv[2], "rb").read()
at, seen = 0, set()
while at < len(data):
    hx = data[at:at + 32].decode("latin1")
    if hx not in objs or hx in seen:
        sys.exit("byte %d: not the start of an object not seen yet" % at)
    size = objs[hx]
    if data[at:at + size] != (hx * (size // 32 + 1))[:size].encode():
        sys.exit("byte %d: an object's bytes are not its own" % at)
    seen.add(hx)
    at += size
if len(seen) != len(objs):
    sys.exit("%d of %d objects" % (len(seen), len(objs)))
EOF
s3_curl -sS -f "$S3_URL/__synthetic/keys?bucket=deep&prefix=data%2F" >"$TEST_TMP/deep.keys" ||
	fail "the test server did not give the deep keys"
MP=$(new_mountpoint adopt)
keeper_fg "$TEST_TMP/adopt.log" --cache-size 8M --part-size 1M --shuffle-seed 7 \
	train=s3://deep/data/ "$MP"
wait_until 30 is_mounted "$MP" || fail "not mounted: $(cat "$TEST_TMP/adopt.log")"
wait_until 10 grep -q "kept for the next worker, and read in place from there" "$TEST_TMP/adopt.log" ||
	fail "the worker that listed reads its catalog from its heap: $(tail -n 3 "$TEST_TMP/adopt.log")"
ranges=$(sed -n 's/.* pages over \([0-9]*\) key ranges.*/\1/p' "$TEST_TMP/adopt.log")
[ "${ranges:-0}" -ge 2 ] ||
	fail "listed in ${ranges:-?} key range (entries in key order: nothing to tell apart)"
reader_at_mark "$MP/train_0" "$TEST_TMP/adopt0" 1000000 "$TEST_TMP/adopt" "the shuffled reader"
W1=$(worker_of "$KEEPER")
kill -KILL "$W1"
wait_pids_gone 10 "$W1" || fail "worker $W1 survived SIGKILL"
touch "$TEST_TMP/adopt.go1000000"
wait "$reader" || fail "the shuffled reader of train_0 failed across a kill"
python3 "$TEST_TMP/objects.py" "$TEST_TMP/deep.keys" "$TEST_TMP/adopt0" ||
	fail "the shuffled train_0 read across a kill is not every object once"
grep -q "epoch 0's order of [0-9]* entries from the last worker" "$TEST_TMP/adopt.log" ||
	fail "the new worker shuffled again: $(tail -n 3 "$TEST_TMP/adopt.log")"
tcat "$MP/train_0" >"$TEST_TMP/adopt0.again" || fail "reading the shuffled train_0 again failed"
assert_file_eq "$TEST_TMP/adopt0.again" "$TEST_TMP/adopt0" "the new worker's train_0 against the one read across the kill"
unmount "$MP"

# ---- a catalog read from a saved listing (--listing-ttl) is kept for
# the next worker as a listed one is, and read from there: the new worker
# maps it instead of reading the file again ----
CD="$TEST_TMP/cachedir"
mkdir -p "$CD"
MP=$(new_mountpoint saved1)
keeper_fg "$TEST_TMP/saved1.log" --cache-dir "$CD" --cache-dir-size 64M --shuffle-seed 7 \
	train=s3://deep/data/ "$MP"
wait_until 30 is_mounted "$MP" || fail "not mounted: $(cat "$TEST_TMP/saved1.log")"
unmount "$MP"
MP=$(new_mountpoint saved2)
keeper_fg "$TEST_TMP/saved2.log" --cache-dir "$CD" --cache-dir-size 64M --listing-ttl 3600 \
	--shuffle-seed 7 train=s3://deep/data/ "$MP"
wait_until 30 is_mounted "$MP" || fail "not mounted: $(cat "$TEST_TMP/saved2.log")"
grep -q "a catalog from the listing saved .* no LIST" "$TEST_TMP/saved2.log" ||
	fail "the saved listing was not read: $(tail -n 3 "$TEST_TMP/saved2.log")"
wait_until 10 grep -q "kept for the next worker, and read in place from there" "$TEST_TMP/saved2.log" ||
	fail "the catalog read from the saved listing was not kept: $(tail -n 3 "$TEST_TMP/saved2.log")"
W1=$(worker_of "$KEEPER")
kill -KILL "$W1"
wait_until 10 grep -q "keys mapped from the last worker's catalog, no LIST" "$TEST_TMP/saved2.log" ||
	fail "the new worker did not map the catalog: $(tail -n 3 "$TEST_TMP/saved2.log")"
tcat "$MP/train_0" >"$TEST_TMP/saved0" || fail "reading train_0 after the kill failed"
assert_file_eq "$TEST_TMP/saved0" "$TEST_TMP/adopt0" "train_0 from the saved listing against the listed one"
unmount "$MP"

# ---- a crash loop gives the mount up ----
MP=$(new_mountpoint loop)
mount_ok --endpoint-url "$S3_URL" --pid-file "$TEST_TMP/pid.loop" --part-size 1M \
	--cache-size 8M train=s3://data/train/ "$MP"
KEEPER=$(cat "$TEST_TMP/pid.loop")
cat >"$TEST_TMP/holder.py" <<'EOF'
import errno, os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
os.read(fd, 65536)
open(sys.argv[2], "w").close()
while not os.path.exists(sys.argv[2] + ".go"):
    time.sleep(0.01)
try:
    while os.read(fd, 1 << 20):
        pass
    print("read to the end")
except OSError as e:
    print(errno.errorcode.get(e.errno, e.errno))
EOF
python3 "$TEST_TMP/holder.py" "$MP/train_0" "$TEST_TMP/held" >"$TEST_TMP/holder.out" &
holder=$!
track_pid "$holder"
wait_until 30 test -e "$TEST_TMP/held" || fail "the holder did not open train_0"
for i in 1 2 3 4 5; do
	w=$(worker_of "$KEEPER")
	[ -n "$w" ] || fail "no worker before kill $i"
	kill -KILL "$w"
	wait_pids_gone 10 "$w" || fail "worker $w survived SIGKILL"
	if [ "$i" != 5 ]; then
		wait_until 10 eval '[ -n "$(worker_of "$KEEPER")" ]' || fail "no worker after kill $i"
	fi
done
wait_pids_gone 10 "$KEEPER" || fail "the keeper did not give up after 5 deaths"
wait_until 5 eval "! is_mounted '$MP'" || fail "$MP still mounted after the keeper gave up"
touch "$TEST_TMP/held.go"
wait "$holder" || fail "the holder failed"
assert_match '^(ENOTCONN|EIO|ENODEV)$' "$(cat "$TEST_TMP/holder.out")" "a read after the mount was given up"
note "ok"
