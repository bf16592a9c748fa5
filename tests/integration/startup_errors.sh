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

# A free loopback port: bind port 0, note it, close it.
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

mp() { new_mountpoint "case$MERR_CASES"; }
S=$S3PIPE
E=(--endpoint-url "$S3_URL")
GOOD=train=s3://data/train/

# ---- sanity: --help, --version ----
"$S" --version >"$TEST_TMP/v.out" 2>"$TEST_TMP/v.err" || fail "--version exited non-zero"
[ -s "$TEST_TMP/v.out" ] || fail "--version printed nothing on stdout"
"$S" --help >"$TEST_TMP/h.out" 2>&1 || fail "--help exited non-zero"
grep -q -- --endpoint-url "$TEST_TMP/h.out" || fail "--help does not mention --endpoint-url"

# ---- malformed URIs ----
M=$(mp); expect_mount_error "URI without a bucket" "$M" "train|s3://" -- "$S" "${E[@]}" "train=s3://" "$M"
M=$(mp); expect_mount_error "URI with empty bucket" "$M" "train|s3:///x" -- "$S" "${E[@]}" "train=s3:///x" "$M"
M=$(mp); expect_mount_error "URI with another scheme" "$M" "train|ftp://data/x" -- "$S" "${E[@]}" "train=ftp://data/x" "$M"
M=$(mp); expect_mount_error "URI without a scheme" "$M" "train|data/train" -- "$S" "${E[@]}" "train=data/train" "$M"

# ---- bad channel names ----
M=$(mp); expect_mount_error "channel name with '/'" "$M" "bad/name" -- "$S" "${E[@]}" "bad/name=s3://data/train/" "$M"
M=$(mp); expect_mount_error "channel name with '@'" "$M" "tr@in" -- "$S" "${E[@]}" "tr@in=s3://data/train/" "$M"
long=$(printf 'a%.0s' $(seq 65))
M=$(mp); expect_mount_error "channel name of 65 characters" "$M" "aaaaaaaaaaaaaaaaaaaa|channel" -- "$S" "${E[@]}" "$long=s3://data/train/" "$M"
M=$(mp); expect_mount_error "empty channel name" "$M" "channel" -- "$S" "${E[@]}" "=s3://data/train/" "$M"
M=$(mp); expect_mount_error "duplicate channel name" "$M" "train" -- "$S" "${E[@]}" "$GOOD" "train=s3://data/other/" "$M"

# ---- mountpoint ----
M="$TEST_TMP/does-not-exist"
expect_mount_error "mountpoint does not exist" "$M" "$M" -- "$S" "${E[@]}" "$GOOD" "$M"
M="$TEST_TMP/not-a-dir"
expect_mount_error "mountpoint is a regular file" "$M" "$M" -- "$S" "${E[@]}" "$GOOD" "$M"
expect_mount_error "no mountpoint argument" "$TEST_TMP/none" "mountpoint" -- "$S" "${E[@]}" "$GOOD"

# ---- credentials and access ----
# (lib.sh sets AWS_EC2_METADATA_DISABLED=true: the chain must end at once,
# without trying the metadata service, and say so)
t0=$(date +%s%N)
M=$(mp); expect_mount_error "no credentials" "$M" "credential" -- \
	env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY HOME="$EMPTY_HOME" "$S" "${E[@]}" "$GOOD" "$M"
ms=$((($(date +%s%N) - t0) / 1000000))
[ "$ms" -lt 3000 ] || fail "no credentials with metadata disabled took $ms ms to fail"
assert_match 'AWS_EC2_METADATA_DISABLED' "$(cat "$TEST_TMP/case.err")" "no-credentials message"
# metadata enabled but nothing listening: still a prompt failure
port=$(free_port)
t0=$(date +%s%N)
M=$(mp); expect_mount_error "no credentials, no metadata service" "$M" "credential" -- \
	env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY HOME="$EMPTY_HOME" \
	AWS_EC2_METADATA_DISABLED=false AWS_EC2_METADATA_SERVICE_ENDPOINT="http://127.0.0.1:$port" \
	"$S" "${E[@]}" "$GOOD" "$M"
ms=$((($(date +%s%N) - t0) / 1000000))
[ "$ms" -lt 5000 ] || fail "no credentials with an absent metadata service took $ms ms to fail"
M=$(mp); expect_mount_error "wrong access key id" "$M" "InvalidAccessKeyId|access" -- \
	env AWS_ACCESS_KEY_ID=NOTAKEYID "$S" "${E[@]}" "$GOOD" "$M"

# ---- buckets and endpoint ----
M=$(mp); expect_mount_error "no such bucket" "$M" "nosuchbucket" -- "$S" "${E[@]}" "train=s3://nosuchbucket/x/" "$M"
M=$(mp); expect_mount_error "no such bucket (second channel)" "$M" "otherbucket" -- \
	"$S" "${E[@]}" "$GOOD" "val=s3://otherbucket/" "$M"
port=$(free_port)
M=$(mp); expect_mount_error "endpoint unreachable" "$M" "127.0.0.1:$port" -- \
	"$S" --endpoint-url "http://127.0.0.1:$port" --max-retries 1 "$GOOD" "$M"
M=$(mp); expect_mount_error "endpoint unreachable (default retries)" "$M" "127.0.0.1:$port" -- \
	"$S" --endpoint-url "http://127.0.0.1:$port" "$GOOD" "$M"

# ---- bad option values ----
M=$(mp); expect_mount_error "--part-size below 64K" "$M" "part-size|part_size" -- "$S" "${E[@]}" --part-size 1K "$GOOD" "$M"
M=$(mp); expect_mount_error "--part-size not a size" "$M" "part-size|part_size" -- "$S" "${E[@]}" --part-size 12Q "$GOOD" "$M"
M=$(mp); expect_mount_error "--cache-size not a size" "$M" "cache-size|cache_size" -- "$S" "${E[@]}" --cache-size lots "$GOOD" "$M"
M=$(mp); expect_mount_error "--seek bad mode" "$M" "seek" -- "$S" "${E[@]}" --seek sideways "$GOOD" "$M"
M=$(mp); expect_mount_error "--max-connections 0" "$M" "max-connections|max_connections" -- "$S" "${E[@]}" --max-connections 0 "$GOOD" "$M"
M=$(mp); expect_mount_error "--max-retries not a number" "$M" "max-retries|max_retries" -- "$S" "${E[@]}" --max-retries x "$GOOD" "$M"
M=$(mp); expect_mount_error "--stall-timeout 0" "$M" "stall-timeout|stall_timeout" -- "$S" "${E[@]}" --stall-timeout 0 "$GOOD" "$M"
M=$(mp); expect_mount_error "-o epochs=many" "$M" "epochs" -- "$S" "${E[@]}" -o epochs=many "$GOOD" "$M"
M=$(mp); expect_mount_error "--uid not a number" "$M" "uid" -- "$S" "${E[@]}" --uid nobody-at-all "$GOOD" "$M"
M=$(mp); expect_mount_error "--endpoint-url not a URL" "$M" "endpoint" -- "$S" --endpoint-url "not a url" "$GOOD" "$M"
M=$(mp); expect_mount_error "unknown option" "$M" "frobnicate" -- "$S" "${E[@]}" --frobnicate "$GOOD" "$M"
M=$(mp); expect_mount_error "unknown -o option" "$M" "frobnicate" -- "$S" "${E[@]}" -o frobnicate=1 "$GOOD" "$M"
M=$(mp); expect_mount_error "-o option libfuse does not know" "$M" "'-o bogus_option'" -- \
	"$S" "${E[@]}" -o auto_unmount,bogus_option "$GOOD" "$M"
M=$(mp); expect_mount_error "-o max_read" "$M" "max_read" -- "$S" "${E[@]}" -o max_read=65536 "$GOOD" "$M"
M=$(mp); expect_mount_error "--max-threads 0" "$M" "max-threads|max_threads" -- "$S" "${E[@]}" --max-threads 0 "$GOOD" "$M"
# the pid file is written once the mount is up: a failure unmounts again
M=$(mp); expect_mount_error "--pid-file in a missing folder" "$M" "pid file|$TEST_TMP/no-such-dir/s3pipe.pid" -- \
	"$S" "${E[@]}" --pid-file "$TEST_TMP/no-such-dir/s3pipe.pid" "$GOOD" "$M"
# --check-options reports what a mount would, and mounts nothing
M=$(mp); expect_mount_error "--check-options with a bad URI" "$M" "train|ftp://data/x" -- \
	"$S" --check-options "${E[@]}" "train=ftp://data/x" "$M"
rc=0
"$S" --check-options "${E[@]}" "$GOOD" "$TEST_TMP/no-such-mountpoint" 2>"$TEST_TMP/check.err" || rc=$?
[ "$rc" -eq 0 ] && [ ! -s "$TEST_TMP/check.err" ] ||
	fail "--check-options on a good line: exit $rc, stderr: $(cat "$TEST_TMP/check.err")"

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

expect_mount_error_done
note "ok ($MERR_CASES cases)"
