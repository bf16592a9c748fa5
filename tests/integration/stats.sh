#!/bin/bash
# stats: live stats through the hidden .s3pipe-stats file and `s3pipe
# stats`.  A reader holds train_0 open part-way: `s3pipe stats --json`
# reports epoch 0 of train with exactly the bytes delivered, the objects'
# total and one open handle; the text table names the channel; the
# directory listing is the same as without stats (the file is never
# listed, and opening it makes no epoch appear); the live view renders in a
# tmux pane of 100 columns (a bar, MB/s, no escape characters or leftover
# fragments) and exits 0 on Ctrl-C.  After the reader finishes the epoch
# is done.  --stats-interval 1 logs lines while reading and none while
# idle.  A gzip channel's total is null until a reader met the end; a GET
# the server delays is in flight, a 500 counts as a retry.
# Errors: a plain folder, a missing path, a garbage stats file, a FIFO of
# that name, and a watch whose mount goes away: one line, exit 1.
. "$(cd "$(dirname "$0")/.." && pwd)/lib.sh"
require_fuse
require_cmd python3
require_cmd tmux "for the live view"
require_cmd gzip
s3_start

s3_mb data
s3_seed data train/ 8 $((1 << 20))
TOTAL=$((8 << 20))
head -c 3000000 /dev/urandom | base64 >"$TEST_TMP/text"
gzip -c "$TEST_TMP/text" >"$TEST_TMP/text.gz"
s3_put data gz/part-0.gz "$TEST_TMP/text.gz"
GZ_SIZE=$(stat -c %s "$TEST_TMP/text")

# stats_json EXPR: evaluates EXPR over `s s3pipe stats --json MP`
stats_json() {
	"$S3PIPE" stats --json "$MP" >"$TEST_TMP/stats.json" ||
		fail "s3pipe stats --json failed"
	json_eval "$1" <"$TEST_TMP/stats.json"
}

listing() {
	ls -a "$MP" | tr '\n' ' '
}

cat >"$TEST_TMP/idc.json" <<'EOF'
[
  {"ChannelName": "train",
   "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix",
                                   "S3Uri": "s3://data/train/"}}},
  {"ChannelName": "gz", "CompressionType": "Gzip",
   "DataSource": {"S3DataSource": {"S3DataType": "S3Prefix",
                                   "S3Uri": "s3://data/gz/"}}}
]
EOF
MP=$(new_mountpoint main)
mount_fg "$TEST_TMP/fg.log" --endpoint-url "$S3_URL" --part-size 1M \
	--stats-interval 1 --input-data-config "$TEST_TMP/idc.json" "$MP"

# ---- the hidden file: readable, never listed, makes no epoch appear ----
assert_eq ". .. gz_0 train_0 " "$(listing)" "ls -a at start"
tcat "$MP/.s3pipe-stats" >"$TEST_TMP/cat.json" || fail "cat $MP/.s3pipe-stats failed"
assert_eq 1 "$(json_eval 's.version' <"$TEST_TMP/cat.json")" "version"
assert_eq "train,gz" "$(json_eval 's.channels.map(c => c.name).join()' <"$TEST_TMP/cat.json")" "channels"
assert_eq 0 "$(json_eval 's.channels[0].epochs.length' <"$TEST_TMP/cat.json")" "epochs before any read"
assert_eq "$(realpath "$MP")" "$(json_eval 's.mountpoint' <"$TEST_TMP/cat.json")" "mountpoint"
for i in 1 2 3; do tcat "$MP/.s3pipe-stats" >/dev/null; done
sleep 0.5
assert_eq ENOENT "$(errno_of stat "$MP/train_1")" "train_1 after opening the stats file"
assert_match '^(EACCES|EROFS)$' "$(errno_of open_write "$MP/.s3pipe-stats")" "writing the stats file"
assert_eq ". .. gz_0 train_0 " "$(listing)" "ls -a after reading the stats"

# ---- a reader part-way through train_0 ----
N=$((3 * 1048576 + 12345))
mkdir -p "$TEST_TMP/ctl"
python3 "$S3PIPE_SRCDIR/tests/phased_read.py" --chunk 65536 "$MP/train_0" \
	"$TEST_TMP/train.out" "$TEST_TMP/ctl" "$N" &
READER=$!
track_pid "$READER"
wait_until 30 test -e "$TEST_TMP/ctl/at.0" || fail "the reader did not reach $N"

stats_json 's' >/dev/null
E='s.channels[0].epochs'
assert_eq train "$(json_eval 's.channels[0].name' <"$TEST_TMP/stats.json")" "channel name"
assert_eq 1 "$(json_eval "$E.length" <"$TEST_TMP/stats.json")" "train's epochs while reading"
assert_eq "0 train_0 open 1" \
	"$(json_eval "[$E[0].epoch, $E[0].file, $E[0].state, $E[0].handles].join(' ')" <"$TEST_TMP/stats.json")" \
	"epoch, file, state, handles"
delivered=$(json_eval "$E[0].bytes_delivered" <"$TEST_TMP/stats.json")
total=$(json_eval "$E[0].total" <"$TEST_TMP/stats.json")
assert_eq "$TOTAL" "$total" "the epoch's total"
[ "$delivered" -ge "$N" ] && [ "$delivered" -le "$total" ] ||
	fail "bytes_delivered $delivered is not within [$N, $total]"
assert_eq "$N" "$delivered" "bytes delivered to the one reader"
assert_eq "$N" "$(json_eval "$E[0].bytes_served" <"$TEST_TMP/stats.json")" "bytes served"
assert_match '^[0-9]+$' "$(json_eval 's.s3.gets_in_flight' <"$TEST_TMP/stats.json")" "gets_in_flight"
assert_match '^[1-9][0-9]*$' "$(json_eval 's.memory.budget' <"$TEST_TMP/stats.json")" "memory budget"
assert_eq null "$(json_eval 's.channels[1].epochs[0]?.total ?? null' <"$TEST_TMP/stats.json")" "gz epochs"
assert_eq ". .. gz_0 train_0 " "$(listing)" "ls -a while train_0 is read"

# the table names the channel and the file
"$S3PIPE" stats "$MP" >"$TEST_TMP/table" || fail "s3pipe stats failed"
grep -q '^channel train' "$TEST_TMP/table" || fail "the table does not name channel train: $(cat "$TEST_TMP/table")"
grep -Eq '^ +train_0 +open +1 ' "$TEST_TMP/table" || fail "no train_0 row in the table: $(cat "$TEST_TMP/table")"
if grep -q $'\x1b' "$TEST_TMP/table"; then fail "escape codes in the table on a pipe"; fi

# ---- the live view in a terminal ----
TMUX_SOCK="$TEST_TMP/tmux.sock"
CLEANUP_HOOK="tmux -S '$TMUX_SOCK' kill-server 2>/dev/null"
tmux -S "$TMUX_SOCK" new-session -d -s stats -x 100 -y 30 \
	"'$S3PIPE' stats --watch --interval 0.2 '$MP'; echo \$? >'$TEST_TMP/watch.rc'; sleep 30"
pane() {
	tmux -S "$TMUX_SOCK" capture-pane -p -t stats >"$TEST_TMP/pane"
}
view_shown() {
	pane && grep -q '^train_0 ' "$TEST_TMP/pane"
}
wait_until 10 view_shown || fail "no train_0 line in the live view: $(cat "$TEST_TMP/pane")"
sleep 1 # a few redraws
pane
note "live view:"
sed 's/^/    | /' "$TEST_TMP/pane" >&2
if grep -q $'\x1b' "$TEST_TMP/pane"; then fail "escape characters in the pane"; fi
if grep -Eq '\[(\?25[hl]|[0-9;]*[HJK])' "$TEST_TMP/pane"; then fail "fragments of escape sequences in the pane"; fi
awk 'length > 100 { exit 1 }' "$TEST_TMP/pane" || fail "a line wider than the pane"
assert_eq 1 "$(grep -c '^train_0 ' "$TEST_TMP/pane")" "train_0 lines in the pane"
assert_eq 1 "$(grep -c '^s3pipe ' "$TEST_TMP/pane")" "header lines in the pane"
grep -Eq '^train_0 +\[=*>? *\] +37% +3\.0/8\.0 MiB +[0-9]+\.[0-9] MB/s +ETA ' "$TEST_TMP/pane" ||
	fail "the train_0 line has no bar, percentage, bytes, MB/s and ETA: $(grep '^train_0' "$TEST_TMP/pane")"
grep -Eq '^gz_0 +waiting|^gz ' "$TEST_TMP/pane" || fail "no line for channel gz"
tmux -S "$TMUX_SOCK" send-keys -t stats C-c
wait_until 10 test -s "$TEST_TMP/watch.rc" || fail "the live view did not end on Ctrl-C"
assert_eq 0 "$(cat "$TEST_TMP/watch.rc")" "exit status of the live view after Ctrl-C"
tmux -S "$TMUX_SOCK" kill-server 2>/dev/null || true

# ---- the reader finishes ----
touch "$TEST_TMP/ctl/go.0"
wait "$READER" || fail "the reader failed"
expected_cat "$S3_LOCAL/data" train/ >"$TEST_TMP/train.exp"
assert_file_eq "$TEST_TMP/train.exp" "$TEST_TMP/train.out" "train_0"
wait_until 10 test -e "$MP/train_1" || fail "train_1 did not appear"
stats_json 's' >/dev/null
assert_eq "done 0 $TOTAL $TOTAL" \
	"$(json_eval "[$E[0].state, $E[0].handles, $E[0].bytes_delivered, $E[0].total].join(' ')" <"$TEST_TMP/stats.json")" \
	"state, handles, delivered, total after the end"
assert_eq ". .. gz_0 train_0 train_1 " "$(listing)" "ls -a after train_0"

# ---- gzip: no total until the end; a GET in flight, a retry ----
# the object's first GET fails (a retry), the next one waits 3 s
fault_arm 'kind=status&status=500&count=1&match=gz/part-0'
fault_arm 'kind=delay&seconds=3&count=1&match=gz/part-0'
exec 7<"$MP/gz_0"
head -c 1000 <&7 >/dev/null &
HEAD=$!
get_in_flight() {
	stats_json 's' >/dev/null
	[ "$(json_eval 's.s3.gets_in_flight' <"$TEST_TMP/stats.json")" -ge 1 ]
}
wait_until 10 get_in_flight || fail "no GET in flight while the server delays one: $(cat "$TEST_TMP/stats.json")"
[ "$(json_eval 's.s3.retries' <"$TEST_TMP/stats.json")" -ge 1 ] || fail "no retry counted after a 500"
wait "$HEAD" || fail "reading gz_0 failed"
stats_json 's' >/dev/null
G='s.channels[1].epochs[0]'
assert_eq '["open",null]' "$(json_eval "[$G.state, $G.total]" <"$TEST_TMP/stats.json")" "gz_0 while read"
cat <&7 >/dev/null
stats_json 's' >/dev/null
assert_eq "done $GZ_SIZE" "$(json_eval "[$G.state, $G.total].join(' ')" <"$TEST_TMP/stats.json")" "gz_0 after the end"
exec 7<&-

# ---- --stats-interval 1: lines while reading, none while idle ----
wait_until 5 grep -Eq 'stats: train_0 [0-9.]+/8\.0 MiB [0-9]+% [0-9.]+ MB/s' "$TEST_TMP/fg.log" ||
	fail "no stats line for train_0 in the log: $(tail -n 5 "$TEST_TMP/fg.log")"
grep -Eq 'stats: .*; cache [0-9]+ hits [0-9]+ misses; [0-9]+ GETs in flight; [0-9]+ retries [0-9]+ errors; memory [0-9]+/[0-9]+ MiB$' "$TEST_TMP/fg.log" ||
	fail "stats line without cache, GETs, retries or memory: $(grep 'stats:' "$TEST_TMP/fg.log" | tail -n 1)"
sleep 1.5
before=$(grep -c 'stats: ' "$TEST_TMP/fg.log")
sleep 2.5
assert_eq "$before" "$(grep -c 'stats: ' "$TEST_TMP/fg.log")" "stats lines while nothing is read"
grep 'stats: ' "$TEST_TMP/fg.log" | tail -n 2 | sed 's/^/    | /' >&2

# ---- option forms ----
"$S3PIPE" --check-options -o stats_interval=5 train=s3://data/train/ "$MP" ||
	fail "-o stats_interval=5 refused"
if "$S3PIPE" --check-options --stats-interval 86401 train=s3://data/train/ "$MP" 2>/dev/null; then
	fail "--stats-interval 86401 accepted"
fi

# ---- errors: one line, exit 1 ----
expect_stats_error() {	# WHAT NEEDLE ARGS...
	local what=$1 needle=$2 rc=0
	shift 2
	timeout -k 2 10 "$S3PIPE" stats "$@" >"$TEST_TMP/err.out" 2>"$TEST_TMP/err.err" </dev/null || rc=$?
	assert_eq 1 "$rc" "exit status for $what"
	assert_eq 1 "$(awk 'END { print NR }' "$TEST_TMP/err.err")" "stderr lines for $what"
	assert_match "^s3pipe: .*$needle" "$(cat "$TEST_TMP/err.err")" "message for $what"
}
mkdir -p "$TEST_TMP/plain" "$TEST_TMP/garbage" "$TEST_TMP/fifo"
expect_stats_error "a plain folder" "is not an s3pipe mount" "$TEST_TMP/plain"
expect_stats_error "a missing path" "No such file" "$TEST_TMP/missing"
expect_stats_error "no mountpoint" "no mountpoint given"
expect_stats_error "an unknown option" "unknown option" --bogus "$MP"
printf '{"version": 1, "channels": [{"name": 5}]}' >"$TEST_TMP/garbage/.s3pipe-stats"
expect_stats_error "a garbage stats file" "is not an s3pipe mount" "$TEST_TMP/garbage"
mkfifo "$TEST_TMP/fifo/.s3pipe-stats"
expect_stats_error "a FIFO named like the stats file" "is not an s3pipe mount" --watch "$TEST_TMP/fifo"

# a watch (not on a terminal: plain snapshots) whose mount goes away
"$S3PIPE" stats --watch --interval 0.2 "$MP" >"$TEST_TMP/watch.out" 2>"$TEST_TMP/watch.err" &
WATCH=$!
track_pid "$WATCH"
two_snapshots() {
	[ "$(grep -c '^train_0 ' "$TEST_TMP/watch.out")" -ge 2 ]
}
wait_until 10 two_snapshots || fail "not two plain snapshots from --watch on a pipe: $(cat "$TEST_TMP/watch.out")"
# (the watch holds the stats file open now and then: retry a busy unmount)
pids=$(daemon_pids "$MP")
wait_until 10 fusermount3 -u "$MP" || fail "fusermount3 -u $MP failed"
wait_pids_gone 10 $pids || fail "the daemon did not exit after the unmount"
rc=0
wait_until 10 pids_gone "$WATCH" || fail "the watch did not end when the mount went away"
wait "$WATCH" || rc=$?
assert_eq 1 "$rc" "exit status of a watch whose mount went away"
assert_match "^s3pipe: .*is no longer an s3pipe mount" "$(cat "$TEST_TMP/watch.err")" "message of that watch"
if grep -q $'\x1b' "$TEST_TMP/watch.out"; then fail "escape codes in --watch output on a pipe"; fi
expect_stats_error "an unmounted mountpoint" "is not an s3pipe mount" "$MP"

note "ok"
