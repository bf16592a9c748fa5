#!/bin/bash
# tree: FastFile channels (--input-mode fastfile, InputMode FastFile). The
# prefix is a folder of the mount whose files are the objects: every one
# byte-exact, read whole and at random offsets and lengths; readdir equals
# the listing, nested folders included, folder markers left out (names
# that cannot be files: tests/unit/test_tree.c); sizes and times as listed; a missing name is
# ENOENT and asks the server nothing; the order file equals the shuffle
# s3pipe(1) specifies, for two seeds and two epochs; opens that follow it
# find their files prefetched; a Pipe channel and a FastFile channel over
# the same prefix share blocks (InputDataConfig); a manifest's entries and
# a shard; the settings a tree cannot take are refused.
. "$(cd "$(dirname "$0")/.." && pwd)/lib.sh"
require_fuse
require_cmd python3
s3_start

s3_mb data
s3_seed data tree/ 40 3000
s3_seed data tree/sub/ 5 70000
s3_seed data tree/sub/deep/ 3 1000
s3_seed data tree/sub-x/ 2 10
head -c 2500000 /dev/urandom >"$TEST_TMP/big"
s3_put data tree/big.bin "$TEST_TMP/big"
printf '' >"$TEST_TMP/empty"
s3_put data tree/empty.bin "$TEST_TMP/empty"
s3_put_marker data tree/marker-only/
s3_put_marker data tree/sub/
LOCAL="$S3_LOCAL/data/tree"

# every file and folder of the local copy, "f PATH SIZE" or "d PATH"
tree_of() {	# DIR
	(cd "$1" && find . -mindepth 1 \( -type d -printf 'd %P\n' \) -o \
		\( -type f -printf 'f %P %s\n' \) | LC_ALL=C sort)
}

MP=$(new_mountpoint plain)
mount_ok --endpoint-url "$S3_URL" --part-size 1M --input-mode fastfile \
	train=s3://data/tree/ "$MP"
assert_eq "train" "$(ls "$MP")" "the root holds the channel's folder"
[ -d "$MP/train" ] || fail "$MP/train is not a folder"
tree_of "$LOCAL" >"$TEST_TMP/tree.exp"
tree_of "$MP/train" >"$TEST_TMP/tree.out"
assert_file_eq "$TEST_TMP/tree.exp" "$TEST_TMP/tree.out" "the folder tree"

# whole files, byte-exact
(cd "$LOCAL" && find . -type f -printf '%P\n') | while IFS= read -r f; do
	cmp -s "$LOCAL/$f" "$MP/train/$f" || fail "train/$f differs from the object"
done

# random offsets and lengths, against the objects (blocks of 1 MiB: reads
# that straddle them)
python3 - "$LOCAL" "$MP/train" <<'PY' || fail "random reads differ"
import os, random, sys
local, mnt = sys.argv[1], sys.argv[2]
rng = random.Random(7)
files = []
for d, _, names in os.walk(local):
    files += [os.path.relpath(os.path.join(d, n), local) for n in names]
files.sort()
checked = 0
for f in files + ["big.bin"] * 20:
    want = open(os.path.join(local, f), "rb").read()
    fd = os.open(os.path.join(mnt, f), os.O_RDONLY)
    try:
        for _ in range(5):
            off = rng.randrange(0, len(want) + 10)
            n = rng.choice([1, 100, 4096, 70000, 1 << 20, 3 << 20])
            got = os.pread(fd, n, off)
            if got != want[off:off + n]:
                sys.exit(f"{f}: pread({n}, {off}) gave {len(got)} bytes, not the object's")
            checked += 1
    finally:
        os.close(fd)
print(f"{checked} random reads match", file=sys.stderr)
PY

# sizes and times as listed
python3 - "$MP/train" "$S3_URL" <<'PY' || fail "sizes or times differ from the listing"
import os, re, sys, urllib.request, calendar, time
mnt, url = sys.argv[1], sys.argv[2]
xml = urllib.request.urlopen(f"{url}/data?list-type=2&prefix=tree/").read().decode()
seen = 0
for key, mod, size in re.findall(r"<Key>([^<]*)</Key><LastModified>([^<]*)</LastModified>.*?<Size>(\d+)</Size>", xml):
    path = os.path.join(mnt, key[len("tree/"):])
    if key.endswith("/"):
        continue
    st = os.stat(path)
    want = calendar.timegm(time.strptime(mod.split(".")[0], "%Y-%m-%dT%H:%M:%S"))
    if st.st_size != int(size) or int(st.st_mtime) != want:
        sys.exit(f"{key}: size {st.st_size} mtime {int(st.st_mtime)}, listed {size} {want}")
    seen += 1
if seen < 50:
    sys.exit(f"only {seen} keys in the listing")
PY

# missing names: ENOENT, and not one request to the server
before=$(auth_stat 's.keys.S3RVER.requests')
for n in nope sub/nope sub/deep/nope nope/deeper marker-only sub-x/obj-000000.bi; do
	assert_eq ENOENT "$(errno_of stat "$MP/train/$n")" "lookup of train/$n"
done
assert_eq ENOTDIR "$(errno_of stat "$MP/train/big.bin/x")" "lookup under a file"
ls -laR "$MP/train" >/dev/null
after=$(auth_stat 's.keys.S3RVER.requests')
assert_eq "$before" "$after" "requests sent by lookups, getattr and readdir"
assert_match '^(EACCES|EROFS)$' "$(errno_of open_write "$MP/train/big.bin")" "open for writing"
unmount "$MP"

# ---- the order file: the documented shuffle, two seeds, two epochs ----
# expect_order SEED EPOCH: the files in byte order of their names,
# shuffled as s3pipe(1) specifies ("-": no seed, byte order)
expect_order() {
	sed -n 's/^f \(.*\) [0-9]*$/\1/p' "$TEST_TMP/tree.exp" | LC_ALL=C sort |
		python3 "$S3PIPE_SRCDIR/tests/epoch_order.py" "$@"
}

for seed in 11 -3; do
	MP=$(new_mountpoint "seed$seed")
	mount_ok --endpoint-url "$S3_URL" --input-mode fastfile --shuffle-seed "$seed" \
		train=s3://data/tree/ "$MP"
	assert_eq "train" "$(ls -A "$MP")" "readdir of the root (the order folder is not listed)"
	assert_eq "" "$(ls -A "$MP/.s3pipe-order")" "readdir of the order folder"
	for epoch in 0 1; do
		expect_order "$seed" "$epoch" >"$TEST_TMP/order.exp"
		cat "$MP/.s3pipe-order/train_$epoch" >"$TEST_TMP/order.out" ||
			fail "reading .s3pipe-order/train_$epoch failed"
		assert_file_eq "$TEST_TMP/order.exp" "$TEST_TMP/order.out" \
			"the order of epoch $epoch with seed $seed"
		assert_eq "$(stat -c %s "$TEST_TMP/order.exp")" \
			"$(stat -c %s "$MP/.s3pipe-order/train_$epoch")" "the order file's size"
	done
	cmp -s "$TEST_TMP/order.out" <(expect_order - 0) &&
		fail "seed $seed's order is the byte order"
	assert_eq ENOENT "$(errno_of stat "$MP/.s3pipe-order/nope_0")" "an order file of no channel"
	assert_eq ENOENT "$(errno_of stat "$MP/.s3pipe-order/train_01")" "an order file with a leading zero"

	# a reader that follows epoch 1's order finds each file prefetched
	# (the stats count the opens the followed order had reached)
	if [ "$seed" = 11 ]; then
		(cd "$MP/train" && while IFS= read -r f; do cat -- "$f"; done) \
			<"$MP/.s3pipe-order/train_1" >"$TEST_TMP/ordered.out"
		(cd "$LOCAL" && while IFS= read -r f; do cat -- "$f"; done) \
			<"$TEST_TMP/order.out" >"$TEST_TMP/ordered.exp"
		assert_file_eq "$TEST_TMP/ordered.exp" "$TEST_TMP/ordered.out" "files read in the order"
		files=$(wc -l <"$TEST_TMP/order.out")
		tree_stat() { json_eval "$1" <"$MP/.s3pipe-stats"; }
		assert_eq "$files" "$(tree_stat 'channels[0].tree.opens')" "opens counted"
		assert_eq "$files" "$(tree_stat 'channels[0].tree.opens_prefetched')" \
			"opens that found their file prefetched"
		assert_eq "$files" "$(tree_stat 'channels[0].tree.files')" "files counted"
		"$S3PIPE" stats "$MP" >"$TEST_TMP/stats.txt" || fail "s3pipe stats failed"
		assert_match "channel train: FastFile, $files files in train/" \
			"$(cat "$TEST_TMP/stats.txt")" "s3pipe stats"
		assert_match "$files opened, $files of them found prefetched" \
			"$(cat "$TEST_TMP/stats.txt")" "s3pipe stats"
	fi
	unmount "$MP"
done

# ---- a sampler that resumes at line K of the order: the prefetch follows
# from there (300 files of 64 KiB, a 16 MiB budget: the order's prefetch
# covers its first 64 files when the order is taken) ----
s3_seed data jump/ 300 65536
MP=$(new_mountpoint jump)
mount_ok --endpoint-url "$S3_URL" --input-mode fastfile --shuffle-seed 4 --cache-size 16M \
	jump=s3://data/jump/ "$MP"
tcat "$MP/.s3pipe-order/jump_0" >"$TEST_TMP/jump.order" || fail "reading the order of jump_0 failed"
sed -n '200,$p' "$TEST_TMP/jump.order" >"$TEST_TMP/jump.tail"
(cd "$MP/jump" && while IFS= read -r f; do cat -- "$f"; done) <"$TEST_TMP/jump.tail" >"$TEST_TMP/jump.out"
(cd "$S3_LOCAL/data/jump" && while IFS= read -r f; do cat -- "$f"; done) <"$TEST_TMP/jump.tail" >"$TEST_TMP/jump.exp"
assert_file_eq "$TEST_TMP/jump.exp" "$TEST_TMP/jump.out" "files 200 to 300 of the order"
# every open after the first found its file prefetched
assert_eq 101 "$(json_eval 's.channels[0].tree.opens' <"$MP/.s3pipe-stats")" "opens from line 200"
assert_eq 100 "$(json_eval 's.channels[0].tree.opens_prefetched' <"$MP/.s3pipe-stats")" \
	"opens from line 201 on that found their file prefetched"
unmount "$MP"

# ---- InputDataConfig: a Pipe and a FastFile channel over one prefix ----
cat >"$TEST_TMP/idc.json" <<EOF
[{"ChannelName": "pipe", "InputMode": "Pipe",
  "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": "s3://data/tree/sub/"}}},
 {"ChannelName": "files", "InputMode": "FastFile",
  "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": "s3://data/tree/sub/"}}}]
EOF
MP=$(new_mountpoint idc)
mount_ok --endpoint-url "$S3_URL" --input-data-config "$TEST_TMP/idc.json" "$MP"
assert_eq "files pipe_0" "$(ls "$MP" | tr '\n' ' ' | sed 's/ $//')" "a folder and an epoch file"
expected_cat "$LOCAL" sub/ >"$TEST_TMP/sub.exp"
tcat "$MP/pipe_0" >"$TEST_TMP/sub.out" || fail "reading pipe_0 failed"
assert_file_eq "$TEST_TMP/sub.exp" "$TEST_TMP/sub.out" "the Pipe channel"
# the same objects as files: their blocks are in memory already
before=$(auth_stat 's.keys.S3RVER.requests')
(cd "$LOCAL/sub" && find . -type f -printf '%P\n') | while IFS= read -r f; do
	cmp -s "$LOCAL/sub/$f" "$MP/files/$f" || fail "files/$f differs from the object"
done
after=$(auth_stat 's.keys.S3RVER.requests')
assert_eq "$before" "$after" "requests for files whose blocks the Pipe channel fetched"
unmount "$MP"

# InputMode File is still refused, with its message
sed 's/"InputMode": "FastFile"/"InputMode": "File"/' "$TEST_TMP/idc.json" >"$TEST_TMP/file.json"
M=$(new_mountpoint file)
expect_mount_error "InputMode File" "$M" "InputMode File is not supported" -- \
	"$S3PIPE" --endpoint-url "$S3_URL" --input-data-config "$TEST_TMP/file.json" "$M"

# ---- a manifest's entries, and a shard ----
printf '[{"prefix": "s3://data/tree/"}, "sub/obj-000001.bin", "big.bin", "sub/deep/obj-000000.bin"]' \
	>"$TEST_TMP/manifest.json"
s3_put data manifests/m.json "$TEST_TMP/manifest.json"
MP=$(new_mountpoint manifest)
mount_ok --endpoint-url "$S3_URL" --input-mode fastfile m=manifest+s3://data/manifests/m.json "$MP"
printf 'd sub\nd sub/deep\nf big.bin 2500000\nf sub/deep/obj-000000.bin 1000\nf sub/obj-000001.bin 70000\n' |
	LC_ALL=C sort >"$TEST_TMP/m.exp"
tree_of "$MP/m" >"$TEST_TMP/m.out"
assert_file_eq "$TEST_TMP/m.exp" "$TEST_TMP/m.out" "the manifest's tree"
cmp -s "$LOCAL/big.bin" "$MP/m/big.bin" || fail "m/big.bin differs from the object"
# its time is the one HEAD gives (Last-Modified), the listing's to the second
listed=$(s3_curl -sS -f "$S3_URL/data?list-type=2&prefix=tree/big.bin" |
	python3 -c 'import calendar, re, sys, time
m = re.search(r"<LastModified>([^<.]*)", sys.stdin.read())
print(calendar.timegm(time.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S")))')
assert_eq "$listed" "$(stat -c %Y "$MP/m/big.bin")" "a manifest file's time"
unmount "$MP"
printf '[{"prefix": "s3://data/tree/"}, "sub/obj-000001.bin", "nope.bin"]' >"$TEST_TMP/m2.json"
s3_put data manifests/m2.json "$TEST_TMP/m2.json"
M=$(new_mountpoint manifest-missing)
expect_mount_error "a manifest naming a missing key" "$M" "nope.bin (manifest element 2) does not exist" -- \
	"$S3PIPE" --endpoint-url "$S3_URL" --input-mode fastfile m=manifest+s3://data/manifests/m2.json "$M"

MP=$(new_mountpoint shard)
mount_ok --endpoint-url "$S3_URL" --input-mode fastfile --sharded --host-index 1 --host-count 3 \
	train=s3://data/tree/sub/deep/ "$MP"
assert_eq "obj-000001.bin" "$(ls "$MP/train")" "host 1 of 3's share of three files"
unmount "$MP"

# ---- what a tree cannot take ----
for bad in "--compression gzip|--input-mode fastfile needs --compression none" \
	"--record-wrapper recordio|--input-mode fastfile needs --record-wrapper none" \
	"--convert csv|--input-mode fastfile needs --convert none"; do
	M=$(new_mountpoint refused)
	expect_mount_error "${bad%%|*}" "$M" "${bad#*|}" -- \
		"$S3PIPE" --endpoint-url "$S3_URL" --input-mode fastfile ${bad%%|*} train=s3://data/tree/ "$M"
done
M=$(new_mountpoint refused)
expect_mount_error "an augmented manifest" "$M" "--input-mode fastfile needs an s3:// channel or a manifest+s3:// channel" -- \
	"$S3PIPE" --endpoint-url "$S3_URL" --input-mode fastfile --attribute-names a \
	t=augmented+s3://data/manifests/m.json "$M"
expect_mount_error_done
