#!/bin/bash
# startup_errors: every start-up error exits non-zero with exactly one line
# "s3pipe: ..." on stderr that names what failed, leaves no mount behind and
# no daemon running: malformed URIs, bad channel names, missing or unusable
# mountpoints, no credentials, access denied, no such bucket, unreachable
# endpoint, bad option values, -o options libfuse refuses. Also:
# --help/--version, and that --no-sign-request needs no credentials.
. "$(cd "$(dirname "$0")/.." && pwd)/lib.sh"
require_fuse
require_cmd python3
s3_start
s3_mb data
s3_seed data train/ 2 1000

EMPTY_HOME="$TEST_TMP/empty-home"
mkdir -p "$EMPTY_HOME"
: >"$TEST_TMP/not-a-dir"
ncase=0
nfail=0

# A free loopback port: bind port 0, note it, close it.
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# expect_error WHAT NEEDLES MOUNTPOINT -- COMMAND...
# NEEDLES: '|'-separated fixed strings, one of which (case-insensitive) the
# message must contain.
expect_error() {
	local what=$1 needles=$2 mp=$3 rc=0 n msg ok=0 pids
	shift 4
	ncase=$((ncase + 1))
	timeout -k 5 60 "$@" >"$TEST_TMP/case.out" 2>"$TEST_TMP/case.err" </dev/null || rc=$?
	echo "$mp" >>"$TEST_TMP/mounts"
	local problems=()
	if [ "$rc" -eq 0 ]; then
		problems+=("exit status 0")
	elif [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
		problems+=("did not exit within 60 s")
	elif [ "$rc" -gt 128 ]; then
		problems+=("killed by signal $((rc - 128))")
	fi
	n=$(wc -l <"$TEST_TMP/case.err")
	msg=$(head -n1 "$TEST_TMP/case.err")
	if [ "$n" -ne 1 ] || [ "$(awk 'END { print NR }' "$TEST_TMP/case.err")" -ne 1 ]; then
		problems+=("stderr has $(awk 'END { print NR }' "$TEST_TMP/case.err") lines, expected exactly 1")
	fi
	case $msg in
	"s3pipe: "*) ;;
	*) problems+=("message does not start with 's3pipe: '") ;;
	esac
	local arr needle
	IFS='|' read -r -a arr <<<"$needles"
	for needle in "${arr[@]}"; do
		if printf '%s' "$msg" | grep -Fqi -- "$needle"; then
			ok=1
		fi
	done
	[ "$ok" -eq 1 ] || problems+=("message does not mention '$needles'")
	if is_mounted "$mp"; then
		problems+=("$mp is mounted afterwards")
		fusermount3 -u -z "$mp" 2>/dev/null || true
	fi
	sleep 0.2
	pids=$(daemon_pids "$mp")
	if [ -n "$pids" ]; then
		problems+=("a daemon is still running (pid $pids)")
		kill -KILL $pids 2>/dev/null || true
	fi
	if [ "${#problems[@]}" -gt 0 ]; then
		nfail=$((nfail + 1))
		printf 'FAIL: %s: %s: %s\n' "$TEST_NAME" "$what" "$(
			IFS=';'
			echo "${problems[*]}"
		)" >&2
		printf '    command: %s\n    exit: %s\n    stderr: ' "$*" "$rc" >&2
		sed 's/^/    | /' "$TEST_TMP/case.err" | sed '1s/^    //' >&2
		[ -s "$TEST_TMP/case.err" ] || echo '(empty)' >&2
	else
		note "ok: $what: $msg"
	fi
}

mp() { new_mountpoint "case$ncase"; }
S=$S3PIPE
E=(--endpoint-url "$S3_URL")
GOOD=train=s3://data/train/

# ---- sanity: --help, --version ----
"$S" --version >"$TEST_TMP/v.out" 2>"$TEST_TMP/v.err" || fail "--version exited non-zero"
[ -s "$TEST_TMP/v.out" ] || fail "--version printed nothing on stdout"
"$S" --help >"$TEST_TMP/h.out" 2>&1 || fail "--help exited non-zero"
grep -q -- --endpoint-url "$TEST_TMP/h.out" || fail "--help does not mention --endpoint-url"

# ---- malformed URIs ----
M=$(mp); expect_error "URI without a bucket" "train|s3://" "$M" -- "$S" "${E[@]}" "train=s3://" "$M"
M=$(mp); expect_error "URI with empty bucket" "train|s3:///x" "$M" -- "$S" "${E[@]}" "train=s3:///x" "$M"
M=$(mp); expect_error "URI with another scheme" "train|ftp://data/x" "$M" -- "$S" "${E[@]}" "train=ftp://data/x" "$M"
M=$(mp); expect_error "URI without a scheme" "train|data/train" "$M" -- "$S" "${E[@]}" "train=data/train" "$M"

# ---- bad channel names ----
M=$(mp); expect_error "channel name with '/'" "bad/name" "$M" -- "$S" "${E[@]}" "bad/name=s3://data/train/" "$M"
M=$(mp); expect_error "channel name with '@'" "tr@in" "$M" -- "$S" "${E[@]}" "tr@in=s3://data/train/" "$M"
long=$(printf 'a%.0s' $(seq 65))
M=$(mp); expect_error "channel name of 65 characters" "aaaaaaaaaaaaaaaaaaaa|channel" "$M" -- "$S" "${E[@]}" "$long=s3://data/train/" "$M"
M=$(mp); expect_error "empty channel name" "channel" "$M" -- "$S" "${E[@]}" "=s3://data/train/" "$M"
M=$(mp); expect_error "duplicate channel name" "train" "$M" -- "$S" "${E[@]}" "$GOOD" "train=s3://data/other/" "$M"

# ---- mountpoint ----
M="$TEST_TMP/does-not-exist"
expect_error "mountpoint does not exist" "$M" "$M" -- "$S" "${E[@]}" "$GOOD" "$M"
M="$TEST_TMP/not-a-dir"
expect_error "mountpoint is a regular file" "$M" "$M" -- "$S" "${E[@]}" "$GOOD" "$M"
expect_error "no mountpoint argument" "mountpoint" "$TEST_TMP/none" -- "$S" "${E[@]}" "$GOOD"

# ---- credentials and access ----
# (lib.sh sets AWS_EC2_METADATA_DISABLED=true: the chain must end at once,
# without trying the metadata service, and say so)
t0=$(date +%s%N)
M=$(mp); expect_error "no credentials" "credential" "$M" -- \
	env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY HOME="$EMPTY_HOME" "$S" "${E[@]}" "$GOOD" "$M"
ms=$((($(date +%s%N) - t0) / 1000000))
[ "$ms" -lt 3000 ] || fail "no credentials with metadata disabled took $ms ms to fail"
assert_match 'AWS_EC2_METADATA_DISABLED' "$(cat "$TEST_TMP/case.err")" "no-credentials message"
# metadata enabled but nothing listening: still a prompt failure
port=$(free_port)
t0=$(date +%s%N)
M=$(mp); expect_error "no credentials, no metadata service" "credential" "$M" -- \
	env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY HOME="$EMPTY_HOME" \
	AWS_EC2_METADATA_DISABLED=false AWS_EC2_METADATA_SERVICE_ENDPOINT="http://127.0.0.1:$port" \
	"$S" "${E[@]}" "$GOOD" "$M"
ms=$((($(date +%s%N) - t0) / 1000000))
[ "$ms" -lt 5000 ] || fail "no credentials with an absent metadata service took $ms ms to fail"
M=$(mp); expect_error "wrong access key id" "InvalidAccessKeyId|access" "$M" -- \
	env AWS_ACCESS_KEY_ID=NOTAKEYID "$S" "${E[@]}" "$GOOD" "$M"

# ---- buckets and endpoint ----
M=$(mp); expect_error "no such bucket" "nosuchbucket" "$M" -- "$S" "${E[@]}" "train=s3://nosuchbucket/x/" "$M"
M=$(mp); expect_error "no such bucket (second channel)" "otherbucket" "$M" -- \
	"$S" "${E[@]}" "$GOOD" "val=s3://otherbucket/" "$M"
port=$(free_port)
M=$(mp); expect_error "endpoint unreachable" "127.0.0.1:$port" "$M" -- \
	"$S" --endpoint-url "http://127.0.0.1:$port" --max-retries 1 "$GOOD" "$M"
M=$(mp); expect_error "endpoint unreachable (default retries)" "127.0.0.1:$port" "$M" -- \
	"$S" --endpoint-url "http://127.0.0.1:$port" "$GOOD" "$M"

# ---- bad option values ----
M=$(mp); expect_error "--part-size below 64K" "part-size|part_size" "$M" -- "$S" "${E[@]}" --part-size 1K "$GOOD" "$M"
M=$(mp); expect_error "--part-size not a size" "part-size|part_size" "$M" -- "$S" "${E[@]}" --part-size 12Q "$GOOD" "$M"
M=$(mp); expect_error "--cache-size not a size" "cache-size|cache_size" "$M" -- "$S" "${E[@]}" --cache-size lots "$GOOD" "$M"
M=$(mp); expect_error "--seek bad mode" "seek" "$M" -- "$S" "${E[@]}" --seek sideways "$GOOD" "$M"
M=$(mp); expect_error "--max-connections 0" "max-connections|max_connections" "$M" -- "$S" "${E[@]}" --max-connections 0 "$GOOD" "$M"
M=$(mp); expect_error "--max-retries not a number" "max-retries|max_retries" "$M" -- "$S" "${E[@]}" --max-retries x "$GOOD" "$M"
M=$(mp); expect_error "--stall-timeout 0" "stall-timeout|stall_timeout" "$M" -- "$S" "${E[@]}" --stall-timeout 0 "$GOOD" "$M"
M=$(mp); expect_error "-o epochs=many" "epochs" "$M" -- "$S" "${E[@]}" -o epochs=many "$GOOD" "$M"
M=$(mp); expect_error "--uid not a number" "uid" "$M" -- "$S" "${E[@]}" --uid nobody-at-all "$GOOD" "$M"
M=$(mp); expect_error "--endpoint-url not a URL" "endpoint" "$M" -- "$S" --endpoint-url "not a url" "$GOOD" "$M"
M=$(mp); expect_error "unknown option" "frobnicate" "$M" -- "$S" "${E[@]}" --frobnicate "$GOOD" "$M"
M=$(mp); expect_error "unknown -o option" "frobnicate" "$M" -- "$S" "${E[@]}" -o frobnicate=1 "$GOOD" "$M"
M=$(mp); expect_error "-o option libfuse does not know" "'-o bogus_option'" "$M" -- \
	"$S" "${E[@]}" -o auto_unmount,bogus_option "$GOOD" "$M"
M=$(mp); expect_error "-o max_read" "max_read" "$M" -- "$S" "${E[@]}" -o max_read=65536 "$GOOD" "$M"
M=$(mp); expect_error "--max-threads 0" "max-threads|max_threads" "$M" -- "$S" "${E[@]}" --max-threads 0 "$GOOD" "$M"

# ---- the opposite: --no-sign-request needs no credentials ----
M=$(mp)
rc=0
env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY HOME="$EMPTY_HOME" \
	"$S" "${E[@]}" --no-sign-request "$GOOD" "$M" 2>"$TEST_TMP/mount.err" </dev/null || rc=$?
track_mount "$M"
[ "$rc" -eq 0 ] || fail "--no-sign-request without credentials did not mount (exit $rc): $(cat "$TEST_TMP/mount.err")"
assert_mounted "$M"
expected_cat "$S3_LOCAL/data" train/ >"$TEST_TMP/train.exp"
tcat "$M/train_0" >"$TEST_TMP/out" || fail "reading train_0 (--no-sign-request) failed"
assert_file_eq "$TEST_TMP/train.exp" "$TEST_TMP/out" "train_0 (--no-sign-request)"
unmount "$M"

[ "$nfail" -eq 0 ] || fail "$nfail of $ncase start-up error cases failed"
note "ok ($ncase cases)"
