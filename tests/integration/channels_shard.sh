#!/bin/bash
# channels_shard: ShardedByS3Key and ShuffleConfig. Three simulated hosts
# (three mounts of one prefix, each with its own resourceconfig.json) read
# epochs 0 and 1 with Seed 11 and RecordIO: every object exactly once over
# the hosts, shares differ by at most one, and host i's records are the
# positions p = i mod 3 of the epoch order (the order a FullyReplicated
# mount with the same seed gives); the order changes from epoch to epoch;
# a remount gives the same bytes; --host-index/--host-count and a
# resource config with hosts in another order give the same bytes as the
# matching host. Sharding without shuffle keeps key order. Shuffle without
# sharding: a permutation, not key order, the same for the same seed and
# different for another seed.
. "$(cd "$(dirname "$0")/.." && pwd)/lib.sh"
. "$S3PIPE_SRCDIR/tests/channels_lib.sh"
channels_start
N=61
# random contents: unique (records_to_keys refuses duplicates)
s3_seed data shard/ "$N" 2000
(cd "$S3_LOCAL/data" && find shard -type f | LC_ALL=C sort) >"$TEST_TMP/keys"
assert_eq "$N" "$(wc -l <"$TEST_TMP/keys")" "objects seeded (test set-up)"

E=(--endpoint-url "$S3_URL")

idc() {	# FILE DISTRIBUTION [SEED]
	python3 - "$@" <<'PY'
import json, sys
path, dist = sys.argv[1], sys.argv[2]
ch = {
    "ChannelName": "train",
    "DataSource": {"S3DataSource": {
        "S3DataType": "S3Prefix",
        "S3Uri": "s3://data/shard/",
        "S3DataDistributionType": dist}},
    "CompressionType": "None",
    "RecordWrapperType": "RecordIO",
    "InputMode": "Pipe",
}
if len(sys.argv) > 3:
    ch["ShuffleConfig"] = {"Seed": int(sys.argv[3])}
with open(path, "w") as f:
    json.dump([ch], f, indent=2)
PY
}

resource_config() {	# FILE CURRENT HOST...
	python3 - "$@" <<'PY'
import json, sys
with open(sys.argv[1], "w") as f:
    json.dump({"current_host": sys.argv[2], "hosts": sys.argv[3:],
               "network_interface_name": "eth0"}, f)
PY
}

# read_keys MOUNTPOINT EPOCH NAME: read train_EPOCH into $TEST_TMP/NAME.rio,
# split it, write the keys of its records, one a line, to $TEST_TMP/NAME.keys
read_keys() {
	local mp=$1 e=$2 name=$3
	wait_until 10 test -e "$mp/train_$e" || fail "$name: train_$e did not appear"
	tcat "$mp/train_$e" >"$TEST_TMP/$name.rio" || fail "$name: reading train_$e failed"
	rio_split "$TEST_TMP/$name.rio" "$TEST_TMP/rec" "$name" >/dev/null
	records_to_keys "$TEST_TMP/rec" "$S3_LOCAL/data" >"$TEST_TMP/$name.keys" ||
		fail "$name: cannot map records to objects"
	if grep -q '^?' "$TEST_TMP/$name.keys"; then
		fail "$name: records that are no object: $(grep '^?' "$TEST_TMP/$name.keys" | head -n3 | tr '\n' ' ')"
	fi
}

# is_permutation NAME: NAME.keys holds every key exactly once
is_permutation() {
	LC_ALL=C sort "$TEST_TMP/$1.keys" >"$TEST_TMP/sorted"
	assert_file_eq "$TEST_TMP/keys" "$TEST_TMP/sorted" "$1: the records sorted by key vs every object once"
}

# ---- the epoch order: FullyReplicated, Seed 11 ----
idc "$TEST_TMP/full.json" FullyReplicated 11
MP=$(new_mountpoint full)
mount_ok "${E[@]}" --input-data-config "$TEST_TMP/full.json" "$MP"
for e in 0 1; do
	read_keys "$MP" "$e" "full$e"
	is_permutation "full$e"
done
cmp -s "$TEST_TMP/keys" "$TEST_TMP/full0.keys" && fail "Seed 11 epoch 0 is in key order (not shuffled)"
cmp -s "$TEST_TMP/full0.keys" "$TEST_TMP/full1.keys" && fail "Seed 11: epochs 0 and 1 have the same order"
unmount "$MP"

# ---- three hosts: ShardedByS3Key, Seed 11, one resource config each ----
idc "$TEST_TMP/sharded.json" ShardedByS3Key 11
declare -A HMP
for h in 1 2 3; do
	resource_config "$TEST_TMP/rc$h.json" "algo-$h" algo-1 algo-2 algo-3
	HMP[$h]=$(new_mountpoint "host$h")
	mount_ok "${E[@]}" --input-data-config "$TEST_TMP/sharded.json" \
		--resource-config "$TEST_TMP/rc$h.json" "${HMP[$h]}"
done

# check_shares EPOCH NAME1 NAME2 NAME3: the three shares of an epoch against
# the epoch order full$EPOCH.keys
check_shares() {
	local e=$1
	shift
	python3 - "$TEST_TMP" "$e" "$@" <<'PY' || fail "epoch $e: the hosts' shares are wrong (above)"
import sys
tmp, e, names = sys.argv[1], sys.argv[2], sys.argv[3:]
def keys(n):
    with open("%s/%s.keys" % (tmp, n)) as f:
        return f.read().split("\n")[:-1]
full = keys("full" + e)
shares = [keys(n) for n in names]
bad = []
with open(tmp + "/keys") as f:
    allk = sorted(f.read().split("\n")[:-1])
union = [k for s in shares for k in s]
if sorted(union) != allk:
    missing = sorted(set(allk) - set(union))
    dup = sorted({k for k in union if union.count(k) > 1})
    bad.append("union over hosts is not every object once: %d records, missing %s, repeated %s"
               % (len(union), missing[:5], dup[:5]))
for i in range(len(shares)):
    for j in range(i + 1, len(shares)):
        common = set(shares[i]) & set(shares[j])
        if common:
            bad.append("hosts %d and %d share %s" % (i + 1, j + 1, sorted(common)[:5]))
sizes = [len(s) for s in shares]
if max(sizes) - min(sizes) > 1:
    bad.append("share sizes %s differ by more than 1" % sizes)
for i, s in enumerate(shares):
    want = full[i::len(shares)]
    if s != want:
        bad.append("host %d (algo-%d): records are not positions p mod %d == %d of the epoch order:\n  got  %s\n  want %s"
                   % (i + 1, i + 1, len(shares), i, s[:6], want[:6]))
for b in bad:
    print("epoch %s: %s" % (e, b), file=sys.stderr)
print("epoch %s: share sizes %s" % (e, sizes), file=sys.stderr)
sys.exit(1 if bad else 0)
PY
}

for e in 0 1; do
	for h in 1 2 3; do
		read_keys "${HMP[$h]}" "$e" "h$h.e$e"
	done
	check_shares "$e" "h1.e$e" "h2.e$e" "h3.e$e"
done
changed=0
for h in 1 2 3; do
	cmp -s "$TEST_TMP/h$h.e0.keys" "$TEST_TMP/h$h.e1.keys" || changed=1
done
[ "$changed" -eq 1 ] || fail "no host's order changed from epoch 0 to epoch 1"
for h in 1 2 3; do
	unmount "${HMP[$h]}"
done

# ---- determinism: host algo-2 again ----
MP=$(new_mountpoint host2-again)
mount_ok "${E[@]}" --input-data-config "$TEST_TMP/sharded.json" \
	--resource-config "$TEST_TMP/rc2.json" "$MP"
for e in 0 1; do
	read_keys "$MP" "$e" "again.e$e"
	assert_file_eq "$TEST_TMP/h2.e$e.rio" "$TEST_TMP/again.e$e.rio" "algo-2 epoch $e after a remount"
done
unmount "$MP"

# ---- the command line: --host-index 1 --host-count 3 is algo-2 ----
MP=$(new_mountpoint cli-host)
mount_ok "${E[@]}" --sharded --shuffle-seed 11 --record-wrapper recordio \
	--host-index 1 --host-count 3 train=s3://data/shard/ "$MP"
for e in 0 1; do
	read_keys "$MP" "$e" "cli.e$e"
	assert_file_eq "$TEST_TMP/h2.e$e.rio" "$TEST_TMP/cli.e$e.rio" \
		"--host-index 1 --host-count 3 vs algo-2's resource config, epoch $e"
done
unmount "$MP"

# ---- a resource config listing the hosts in another order: the index is
# current_host's position in "hosts" ----
resource_config "$TEST_TMP/rc-reordered.json" algo-3 algo-1 algo-3 algo-2
MP=$(new_mountpoint reordered)
mount_ok "${E[@]}" --input-data-config "$TEST_TMP/sharded.json" \
	--resource-config "$TEST_TMP/rc-reordered.json" "$MP"
read_keys "$MP" 0 "reordered.e0"
assert_file_eq "$TEST_TMP/h2.e0.rio" "$TEST_TMP/reordered.e0.rio" \
	"algo-3 at position 1 of hosts vs host index 1"
unmount "$MP"

# ---- sharding without shuffle: positions of the key order ----
MP=$(new_mountpoint noshuffle)
mount_ok "${E[@]}" --sharded --record-wrapper recordio --host-index 2 --host-count 3 \
	train=s3://data/shard/ "$MP"
awk 'NR % 3 == 0' "$TEST_TMP/keys" >"$TEST_TMP/want"
for e in 0 1; do
	read_keys "$MP" "$e" "noshuffle.e$e"
	assert_file_eq "$TEST_TMP/want" "$TEST_TMP/noshuffle.e$e.keys" \
		"--sharded without shuffle, host 2 of 3, epoch $e: keys at positions 2, 5, 8, ..."
done
unmount "$MP"

# ---- shuffle without sharding: --shuffle-seed 5 ----
for run in a b; do
	MP=$(new_mountpoint "seed5$run")
	mount_ok "${E[@]}" --shuffle-seed 5 --record-wrapper recordio train=s3://data/shard/ "$MP"
	for e in 0 1; do
		read_keys "$MP" "$e" "seed5$run.e$e"
		is_permutation "seed5$run.e$e"
		cmp -s "$TEST_TMP/keys" "$TEST_TMP/seed5$run.e$e.keys" &&
			fail "--shuffle-seed 5 epoch $e (run $run) is in key order"
	done
	unmount "$MP"
done
for e in 0 1; do
	assert_file_eq "$TEST_TMP/seed5a.e$e.rio" "$TEST_TMP/seed5b.e$e.rio" \
		"--shuffle-seed 5 epoch $e, two mounts"
done
cmp -s "$TEST_TMP/seed5a.e0.keys" "$TEST_TMP/seed5a.e1.keys" &&
	fail "--shuffle-seed 5: epochs 0 and 1 have the same order"
MP=$(new_mountpoint seed6)
mount_ok "${E[@]}" --shuffle-seed 6 --record-wrapper recordio train=s3://data/shard/ "$MP"
read_keys "$MP" 0 "seed6.e0"
is_permutation "seed6.e0"
cmp -s "$TEST_TMP/seed5a.e0.rio" "$TEST_TMP/seed6.e0.rio" &&
	fail "--shuffle-seed 6 gives the same epoch 0 as --shuffle-seed 5"
unmount "$MP"
assert_not_mounted "$MP"
note "ok"
