#!/bin/bash
# sigv4_server: the test server verifies SigV4 signatures for real, so every
# other test's "it works" means "s3pipe signs its requests right".
#  - anonymous GET, HEAD and list pass (the seeding helpers rely on that);
#  - curl --aws-sigv4 with S3RVER's keys reads an object byte-exact (whole,
#    ranged, HEAD, a signed list) and the server counts it as verified;
#  - a wrong secret (SignatureDoesNotMatch), an unknown key
#    (InvalidAccessKeyId), a signed header changed after signing
#    (SignatureDoesNotMatch; the untouched replay passes), a 20-minute-old
#    x-amz-date (RequestTimeTooSkewed) and a missing x-amz-content-sha256
#    are refused with the right status and code;
#  - s3pipe with a wrong secret: exit 1, one line naming the signature
#    problem, no mount; with the right keys it reads byte-exact, the server
#    saw verified requests from S3RVER and not one failure;
#  - a temporary key from the credentials port (credential_process JSON)
#    works for s3pipe and curl with its session token, fails without it or
#    with a wrong one (InvalidToken), and after its lifetime (ExpiredToken);
#  - the latency mode: a GET waits the latency set, 8 at once overlap.
. "$(cd "$(dirname "$0")/.." && pwd)/lib.sh"
require_fuse
require_cmd curl
S3_CREDENTIALS=1
s3_start
[ -n "$CREDS_URL" ] || fail "the server printed no credentials URL: $(cat "$TEST_TMP/s3server.out")"

s3_mb data
s3_seed data small/ 6 70001
printf 'hello, signed world\n' >"$TEST_TMP/hello.txt"
s3_put data "dir/hello world.txt" "$TEST_TMP/hello.txt"
expected_cat "$S3_LOCAL/data" small/ >"$TEST_TMP/small.exp"
OBJ="$S3_URL/data/dir/hello%20world.txt"

# http_code_of OUT CURL_ARGS...: run curl (body to OUT), print the status
http_code_of() {
	local out=$1
	shift
	curl -sS -o "$out" -w '%{http_code}' "$@" || true
}

# refused STATUS CODE WHAT COMMAND...: COMMAND (a curl, body to stdout) must
# answer STATUS with an S3 error whose <Code> is CODE
refused() {
	local status=$1 code=$2 what=$3 got body
	shift 3
	got=$("$@" -o "$TEST_TMP/refused.body" -w '%{http_code}') || true
	body=$(cat "$TEST_TMP/refused.body" 2>/dev/null || true)
	assert_eq "$status" "$got" "$what: HTTP status"
	assert_match "<Code>$code</Code>" "$body" "$what: error body"
}

# read_small NAME KEY WHAT: mounts small=s3://data/small/ at a new mount
# point NAME with the credentials in the environment, reads small_0
# byte-exact, and checks that the server verified at least two requests
# signed with KEY and refused none; sets n to the requests verified
read_small() {
	local mp
	auth_reset
	mp=$(new_mountpoint "$1")
	mount_ok --endpoint-url "$S3_URL" small=s3://data/small/ "$mp"
	tcat "$mp/small_0" >"$TEST_TMP/small.out" || fail "reading small_0 with $3 failed"
	assert_file_eq "$TEST_TMP/small.exp" "$TEST_TMP/small.out" "small_0 ($3)"
	unmount "$mp"
	n=$(auth_stat "s.keys['$2'] ? s.keys['$2'].requests : 0")
	[ "$n" -ge 2 ] || fail "the server verified $n requests from $2: $(auth_stats)"
	assert_eq 0 "$(auth_stat 's.failed')" "requests refused while s3pipe read with $3"
}

# ---- anonymous requests pass unverified ----
auth_reset
assert_eq 200 "$(http_code_of "$TEST_TMP/anon" "$OBJ")" "anonymous GET"
assert_file_eq "$TEST_TMP/hello.txt" "$TEST_TMP/anon" "anonymous GET body"
assert_eq 200 "$(curl -sS -o /dev/null -I -w '%{http_code}' "$OBJ")" "anonymous HEAD"
assert_eq 6 "$(s3_list_keys data small/ | wc -l)" "anonymous list"
assert_eq 0 "$(auth_stat 's.verified + s.failed')" "signed requests among the anonymous ones"
assert_eq "2 1" "$(auth_stat "[s.anonymous.GET, s.anonymous.HEAD].join(' ')")" "anonymous GET and HEAD counted"

# ---- (a) curl --aws-sigv4 with the right keys ----
assert_eq 200 "$(s3_sigv4_curl -sS -o "$TEST_TMP/got" -w '%{http_code}' "$OBJ")" "signed GET"
assert_file_eq "$TEST_TMP/hello.txt" "$TEST_TMP/got" "signed GET body"
assert_eq 206 "$(s3_sigv4_curl -sS -o "$TEST_TMP/got" -w '%{http_code}' -H 'Range: bytes=7-12' "$OBJ")" "signed ranged GET"
assert_eq "signed" "$(cat "$TEST_TMP/got")" "signed ranged GET body"
assert_eq 200 "$(s3_sigv4_curl -sS -o /dev/null -I -w '%{http_code}' "$OBJ")" "signed HEAD"
# curl 7.88 signs the query as written: sorted and encoded here
s3_sigv4_curl -sS -f -o "$TEST_TMP/list" "$S3_URL/data?list-type=2&prefix=small%2F" ||
	fail "signed list failed: $(cat "$TEST_TMP/list")"
assert_eq 6 "$(grep -o '<Key>' "$TEST_TMP/list" | wc -l)" "keys in the signed list"
assert_eq 4 "$(auth_stat 's.keys.S3RVER.requests')" "verified requests of S3RVER"
assert_eq 0 "$(auth_stat 's.failed')" "failed requests so far"

# ---- (b) refused ----
refused 403 SignatureDoesNotMatch "wrong secret" \
	curl -sS --aws-sigv4 "aws:amz:us-east-1:s3" --user S3RVER:wrong \
	-H "x-amz-content-sha256: $EMPTY_SHA256" "$OBJ"
refused 403 InvalidAccessKeyId "unknown access key id" \
	curl -sS --aws-sigv4 "aws:amz:us-east-1:s3" --user AKIANOTAKEY0000000:S3RVER \
	-H "x-amz-content-sha256: $EMPTY_SHA256" "$OBJ"
refused 403 RequestTimeTooSkewed "x-amz-date 20 minutes old" \
	curl -sS --aws-sigv4 "aws:amz:us-east-1:s3" --user S3RVER:S3RVER \
	-H "x-amz-content-sha256: $EMPTY_SHA256" \
	-H "x-amz-date: $(date -u -d '20 minutes ago' +%Y%m%dT%H%M%SZ)" "$OBJ"
refused 400 InvalidRequest "no x-amz-content-sha256" \
	curl -sS --aws-sigv4 "aws:amz:us-east-1:s3" --user S3RVER:S3RVER "$OBJ"
# a signed header changed after signing: replay curl's own signed headers
# (the Range is signed) once as they were, once with another Range
s3_sigv4_curl -sS -v -o /dev/null -H 'Range: bytes=0-4' "$OBJ" 2>"$TEST_TMP/signed.trace" ||
	fail "signed ranged GET for the replay failed"
auth_hdr=$(sed -n 's/^> \(Authorization: .*\)\r$/\1/p' "$TEST_TMP/signed.trace" | head -n1)
date_hdr=$(sed -n 's/^> \([xX]-[aA]mz-[dD]ate: .*\)\r$/\1/p' "$TEST_TMP/signed.trace" | head -n1)
assert_match 'SignedHeaders=host;range;x-amz-content-sha256;x-amz-date' "$auth_hdr" "curl's signed headers"
replay=(-H "$auth_hdr" -H "$date_hdr" -H "x-amz-content-sha256: $EMPTY_SHA256")
assert_eq 206 "$(http_code_of "$TEST_TMP/got" "${replay[@]}" -H 'Range: bytes=0-4' "$OBJ")" "replay as signed"
assert_eq "hello" "$(cat "$TEST_TMP/got")" "replayed ranged GET body"
refused 403 SignatureDoesNotMatch "Range changed after signing" \
	curl -sS "${replay[@]}" -H 'Range: bytes=0-5' "$OBJ"
refused 403 SignatureDoesNotMatch "path changed after signing" \
	curl -sS "${replay[@]}" -H 'Range: bytes=0-4' "$S3_URL/data/small/obj-000000.bin"
n=$(auth_stat 's.failures.SignatureDoesNotMatch')
assert_eq 3 "$n" "SignatureDoesNotMatch failures counted"

# ---- (c) s3pipe with a wrong secret ----
MP=$(new_mountpoint wrong)
rc=0
AWS_SECRET_ACCESS_KEY=wrong timeout -k 5 60 "$S3PIPE" --endpoint-url "$S3_URL" \
	small=s3://data/small/ "$MP" 2>"$TEST_TMP/wrong.err" </dev/null || rc=$?
track_mount "$MP"
[ "$rc" -ne 0 ] || fail "s3pipe with a wrong secret exited 0"
[ "$rc" -lt 124 ] || fail "s3pipe with a wrong secret: exit $rc (timeout or signal)"
assert_eq 1 "$(awk 'END { print NR }' "$TEST_TMP/wrong.err")" "lines s3pipe printed for a wrong secret"
assert_match '^s3pipe: .*SignatureDoesNotMatch.*AWS_SECRET_ACCESS_KEY' "$(cat "$TEST_TMP/wrong.err")" \
	"s3pipe's message for a wrong secret"
assert_not_mounted "$MP"
sleep 0.2
assert_eq "" "$(daemon_pids "$MP")" "daemon left after a wrong secret"
note "wrong secret: exit $rc: $(cat "$TEST_TMP/wrong.err")"

# ---- (d) s3pipe with the right keys ----
read_small right S3RVER "the right keys"
assert_eq 0 "$(auth_stat 's.anonymousTotal')" "unsigned requests from s3pipe"
note "right keys: $n requests verified, none refused"

# ---- (e) a temporary key from the credentials port ----
# key_from JSON: sets KID, KSECRET, KTOKEN
key_from() {
	KID=$(printf '%s' "$1" | json_eval 's.AccessKeyId')
	KSECRET=$(printf '%s' "$1" | json_eval 's.SecretAccessKey')
	KTOKEN=$(printf '%s' "$1" | json_eval 's.SessionToken')
	assert_match '^ASIA[A-Z0-9]{16}$' "$KID" "temporary access key id"
	assert_eq 40 "${#KSECRET}" "length of the temporary secret"
	[ "${#KTOKEN}" -ge 200 ] || fail "session token of ${#KTOKEN} characters"
}
json=$(curl -sS -f "$CREDS_URL/process") || fail "GET $CREDS_URL/process failed"
assert_eq 1 "$(printf '%s' "$json" | json_eval 's.Version')" "credential_process Version"
assert_match '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$' \
	"$(printf '%s' "$json" | json_eval 's.Expiration')" "credential_process Expiration"
key_from "$json"
AWS_ACCESS_KEY_ID=$KID AWS_SECRET_ACCESS_KEY=$KSECRET AWS_SESSION_TOKEN=$KTOKEN \
	read_small temp "$KID" "a temporary key"
assert_eq true "$(auth_stat "s.keys['$KID'].temporary")" "$KID counted as temporary"

# the token with its last character changed
case $KTOKEN in *x) BADTOKEN=${KTOKEN%?}y ;; *) BADTOKEN=${KTOKEN%?}x ;; esac
tmpcurl=(--aws-sigv4 "aws:amz:us-east-1:s3" --user "$KID:$KSECRET"
	-H "x-amz-content-sha256: $EMPTY_SHA256")
assert_eq 200 "$(http_code_of "$TEST_TMP/got" "${tmpcurl[@]}" -H "x-amz-security-token: $KTOKEN" "$OBJ")" \
	"GET with a temporary key and its token"
refused 403 InvalidToken "temporary key without its token" curl -sS "${tmpcurl[@]}" "$OBJ"
refused 403 InvalidToken "temporary key with a wrong token" \
	curl -sS "${tmpcurl[@]}" -H "x-amz-security-token: $BADTOKEN" "$OBJ"
for variant in missing wrong; do
	MP=$(new_mountpoint "token-$variant")
	rc=0
	if [ "$variant" = missing ]; then
		env -u AWS_SESSION_TOKEN AWS_ACCESS_KEY_ID="$KID" AWS_SECRET_ACCESS_KEY="$KSECRET" \
			timeout -k 5 60 "$S3PIPE" --endpoint-url "$S3_URL" small=s3://data/small/ "$MP" \
			2>"$TEST_TMP/token.err" </dev/null || rc=$?
	else
		AWS_ACCESS_KEY_ID="$KID" AWS_SECRET_ACCESS_KEY="$KSECRET" AWS_SESSION_TOKEN="$BADTOKEN" \
			timeout -k 5 60 "$S3PIPE" --endpoint-url "$S3_URL" small=s3://data/small/ "$MP" \
			2>"$TEST_TMP/token.err" </dev/null || rc=$?
	fi
	track_mount "$MP"
	[ "$rc" -ne 0 ] && [ "$rc" -lt 124 ] || fail "s3pipe with a $variant session token: exit $rc"
	assert_match '^s3pipe: .*InvalidToken' "$(head -n1 "$TEST_TMP/token.err")" "s3pipe with a $variant session token"
	assert_not_mounted "$MP"
done

# a key used after its lifetime
creds_set lifetime=5
key_from "$(curl -sS -f "$CREDS_URL/process")"
tmpcurl=(--aws-sigv4 "aws:amz:us-east-1:s3" --user "$KID:$KSECRET"
	-H "x-amz-content-sha256: $EMPTY_SHA256" -H "x-amz-security-token: $KTOKEN")
assert_eq 200 "$(http_code_of "$TEST_TMP/got" "${tmpcurl[@]}" "$OBJ")" "GET with a 5 s key at once"
sleep 6
refused 400 ExpiredToken "a 5 s key used after 6 s" curl -sS "${tmpcurl[@]}" "$OBJ"
creds_set lifetime=3600

# stats list what was issued, never a secret or a token
assert_eq process "$(creds_stat 's.issued.map(i => i.via).filter((v, i, a) => a.indexOf(v) === i).join()')" \
	"how the keys were issued"
for f in "$TEST_TMP/s3server.out" "$TEST_TMP/s3server.err"; do
	if grep -qF -e "$KSECRET" -e "$KTOKEN" "$f"; then
		fail "a secret or session token appears in $(basename "$f")"
	fi
done
if { creds_stats; auth_stats; } | grep -qF -e "$KSECRET" -e "$KTOKEN"; then
	fail "a secret or session token appears in the stats"
fi

# the latency mode (the bench's S3-like server): every S3 request waits on
# a timer first, and the waits of requests at once overlap
s3_curl -sS -f -o /dev/null -X POST "$S3_URL/__latency?ms=500" || fail "cannot set the latency"
assert_eq 500 "$(s3_curl -sS -f "$S3_URL/__latency" | json_eval 's.ms')" "the latency set"
t0=$EPOCHREALTIME
s3_curl -sS -f -o "$TEST_TMP/late" "$OBJ" || fail "GET with latency failed"
t1=$EPOCHREALTIME
cmp -s "$TEST_TMP/late" "$TEST_TMP/hello.txt" || fail "GET with latency: wrong bytes"
awk -v a="$t0" -v b="$t1" 'BEGIN { exit !(b - a >= 0.5) }' ||
	fail "a GET with 500 ms of latency took $(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }') s"
t0=$EPOCHREALTIME
gets=()
for i in 1 2 3 4 5 6 7 8; do
	s3_curl -sS -f -o /dev/null "$OBJ" &
	gets+=($!)
done
for pid in "${gets[@]}"; do wait "$pid" || fail "a GET of 8 at once failed"; done
t1=$EPOCHREALTIME
awk -v a="$t0" -v b="$t1" 'BEGIN { exit !(b - a >= 0.5 && b - a < 3) }' ||
	fail "8 GETs at once with 500 ms of latency took $(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }') s (4 s one after another)"
s3_curl -sS -f -o /dev/null -X POST "$S3_URL/__latency?ms=0" || fail "cannot clear the latency"
assert_eq 400 "$(s3_curl -sS -o /dev/null -w '%{http_code}' -X POST "$S3_URL/__latency?ms=soon")" \
	"a latency that is no number"
note "ok"
