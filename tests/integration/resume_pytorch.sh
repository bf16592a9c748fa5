#!/bin/bash
# resume_pytorch: contrib/examples/pytorch_resume.py, a training loop that
# checkpoints (epoch, record) and resumes through MOUNT/.s3pipe-resume.
# 240 objects in a shuffled RecordIO-wrapped channel, 3 epochs: one run
# never interrupted; another SIGKILLed once its checkpoint is well into
# epoch 1, then started again from that checkpoint. The second ends with
# exactly the first's lines (epoch, record index, record digest): every
# record of every epoch once, in the same order, none twice. The same for
# a text/csv channel, whose records are lines. Where no python3 here
# imports torch (Debian: python3-torch), the example iterates its dataset
# without a DataLoader, and says so.
. "$(cd "$(dirname "$0")/.." && pwd)/lib.sh"
require_fuse
require_cmd python3
EXAMPLE="$S3PIPE_SRCDIR/contrib/examples/pytorch_resume.py"
[ -f "$EXAMPLE" ] || fail "the example is missing: $EXAMPLE"
s3_start
s3_mb data
python3 - "$TEST_TMP/gen" <<'PY' || fail "making the objects failed"
import os, random, sys
gen = sys.argv[1]
rnd = random.Random(7)
os.makedirs(gen + "/ex", exist_ok=True)
os.makedirs(gen + "/csv", exist_ok=True)
for i in range(240):
    with open("%s/ex/o-%04d.bin" % (gen, i), "wb") as f:
        f.write(os.urandom(rnd.randrange(1, 3000)))
for i in range(6):
    with open("%s/csv/c-%d.csv" % (gen, i), "wb") as f:
        f.write(b"".join(b"%d,%d,%d\n" % (i, j, rnd.randrange(10**9)) for j in range(700)))
PY
for f in "$TEST_TMP"/gen/ex/* "$TEST_TMP"/gen/csv/*; do
	s3_put data "${f#"$TEST_TMP"/gen/}" "$f"
done

# run_example NAME FORMAT [ARGS...]: the example over channel NAME of $MP,
# 3 epochs, its checkpoint and lines in $TEST_TMP/NAME.*
run_example() {
	local name=$1 fmt=$2
	shift 2
	timeout -k 5 120 python3 "$EXAMPLE" --mount "$MP" --channel "$name" --epochs 3 \
		--format "$fmt" --checkpoint "$TEST_TMP/$name.ckpt" --out "$TEST_TMP/$name.out" "$@"
}

# check NAME FORMAT EVERY KILL_AT STEP: a run never interrupted (channel NAME), then
# (channel NAME, mounted again) a run killed once its checkpoint reaches
# epoch 1, record KILL_AT, and started again: the same lines
check() {
	local name=$1 fmt=$2 every=$3 kill_at=$4 step=$5 pid
	MP=$(new_mountpoint "$name-whole")
	mount_ok --endpoint-url "$S3_URL" --shuffle-seed 9 --epochs 3 $MOUNT_ARGS "$name=s3://data/$DIR/" "$MP"
	run_example "$name" "$fmt" >"$TEST_TMP/$name.log1" 2>&1 ||
		fail "$name: the uninterrupted run failed: $(tail -n 3 "$TEST_TMP/$name.log1")"
	mv "$TEST_TMP/$name.out" "$TEST_TMP/$name.whole"
	rm -f "$TEST_TMP/$name.ckpt"
	unmount "$MP"

	MP=$(new_mountpoint "$name-killed")
	mount_ok --endpoint-url "$S3_URL" --shuffle-seed 9 --epochs 3 $MOUNT_ARGS "$name=s3://data/$DIR/" "$MP"
	# (python itself in the background: the pid is the one to kill)
	python3 "$EXAMPLE" --mount "$MP" --channel "$name" --epochs 3 --format "$fmt" \
		--checkpoint "$TEST_TMP/$name.ckpt" --out "$TEST_TMP/$name.out" \
		--checkpoint-every "$every" --step-seconds "$step" >"$TEST_TMP/$name.log2" 2>&1 &
	pid=$!
	wait_until 60 python3 -c 'import json, sys; s = json.load(open(sys.argv[1])); sys.exit(0 if (s["epoch"], s["record"]) >= (1, int(sys.argv[2])) else 1)' \
		"$TEST_TMP/$name.ckpt" "$kill_at" 2>/dev/null ||
		fail "$name: the run's checkpoint never reached epoch 1, record $kill_at: $(tail -n 3 "$TEST_TMP/$name.log2")"
	kill -KILL "$pid" || fail "$name: the run ended before it could be killed"
	wait "$pid" 2>/dev/null || true
	note "$name: killed with its checkpoint at $(cat "$TEST_TMP/$name.ckpt")"
	run_example "$name" "$fmt" --checkpoint-every "$every" >"$TEST_TMP/$name.log3" 2>&1 ||
		fail "$name: the resumed run failed: $(tail -n 3 "$TEST_TMP/$name.log3")"
	grep -q '^resuming at epoch [12], record' "$TEST_TMP/$name.log3" ||
		fail "$name: the second run did not resume: $(head -n 2 "$TEST_TMP/$name.log3")"
	assert_file_eq "$TEST_TMP/$name.whole" "$TEST_TMP/$name.out" "$name: the resumed run's lines vs the uninterrupted run's"
	unmount "$MP"
}

DIR=ex MOUNT_ARGS="--record-wrapper recordio" check rio recordio 7 40 0.005
assert_eq 720 "$(wc -l <"$TEST_TMP/rio.whole")" "rio: records in 3 epochs of 240 objects"
[ "$(awk '$1 == 0 { print $3 }' "$TEST_TMP/rio.whole" | sort | uniq | wc -l)" = 240 ] ||
	fail "rio: epoch 0 does not hold 240 different records"
[ "$(awk '$1 == 0 { print $3 }' "$TEST_TMP/rio.whole")" != "$(awk '$1 == 1 { print $3 }' "$TEST_TMP/rio.whole")" ] ||
	fail "rio: epochs 0 and 1 are in the same order (not shuffled)"
DIR=csv MOUNT_ARGS="--content-type text/csv" check csv lines 50 1000 0.0005
assert_eq 12600 "$(wc -l <"$TEST_TMP/csv.whole")" "csv: lines in 3 epochs of 4,200"
grep -q "PyTorch not found" "$TEST_TMP/rio.log1" && note "PyTorch is not installed: the example iterated its dataset without a DataLoader"
note "ok"
