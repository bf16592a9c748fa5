#!/bin/bash
# secrets: no secret reaches a log or the process title.  Full mounts with
# -d (every debug line) whose credentials are distinctive: a static secret
# key from the environment, temporary credentials (secret key and session
# token) from a credential_process, refreshed during the read, and a web
# identity token; retried GETs and a refused signature add error paths.
# Every log line, the mount helper's stderr and each daemon's command line
# and title are searched for every secret: none may appear.  Also: a shared
# credentials file readable by group or others draws a warning, one that
# is not does not.
. "$(cd "$(dirname "$0")/.." && pwd)/lib.sh"
require_fuse
require_cmd python3

STATIC_ID=AKIDSECRETSTEST01
STATIC_SECRET="StaticSecret-$RANDOM$RANDOM-Zq9"
WIT="WebIdentityToken-$RANDOM$RANDOM-Xk7"
S3_CREDENTIALS=1
S3_SERVER_ARGS=(--key S3RVER:S3RVER --key "$STATIC_ID:$STATIC_SECRET"
	--credential-lifetime 6 --web-identity-token "$WIT")
s3_start

s3_mb data
s3_seed data train/ 16 262144
expected_cat "$S3_LOCAL/data" train/ >"$TEST_TMP/train.exp"

# the credential_process keeps a copy of what it hands out (for this test
# only: the test must know the secrets it looks for)
cat >"$TEST_TMP/process.sh" <<EOF
#!/bin/sh
out=\$(curl -sf "$CREDS_URL/process") || exit 1
printf '%s\n' "\$out" >>"$TEST_TMP/issued.jsonl"
printf '%s\n' "\$out"
EOF
chmod +x "$TEST_TMP/process.sh"
printf '[profile proc]\ncredential_process = %s\n' "$TEST_TMP/process.sh" >"$TEST_TMP/config"
chmod 600 "$TEST_TMP/config"
printf '%s\n' "$WIT" >"$TEST_TMP/wit"

logs=()
# read NAME: mount NAME (env already set by the caller's subshell), read
# train_0 slowly with 500s injected on a few GETs, keep the log and title
read_with() {	# NAME
	local name=$1 mp="$TEST_TMP/mnt-$1" pid
	mkdir -p "$mp"
	mount_fg "$TEST_TMP/$name.log" -d --endpoint-url "$S3_URL" --part-size 256K \
		--cache-size 1M train=s3://data/train/ "$mp"
	pid=$(daemon_pids "$mp" | head -n1)
	tr '\0' ' ' <"/proc/$pid/cmdline" >"$TEST_TMP/$name.title"
	cat "/proc/$pid/comm" >>"$TEST_TMP/$name.title"
	ps -o args= -p "$pid" >>"$TEST_TMP/$name.title"
	fault_arm 'kind=status&status=500&count=3&match=/data/train/'
	python3 "$S3PIPE_SRCDIR/tests/phased_read.py" --chunk 262144 --pace 0.5 \
		"$mp/train_0" "$TEST_TMP/$name.out" - || fail "$name: reading train_0 failed"
	assert_file_eq "$TEST_TMP/train.exp" "$TEST_TMP/$name.out" "train_0 ($name)"
	fusermount3 -u "$mp" || fail "$name: unmount failed"
}

(
	export AWS_ACCESS_KEY_ID=$STATIC_ID AWS_SECRET_ACCESS_KEY=$STATIC_SECRET
	read_with static
) || exit 1
(
	unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY
	export AWS_CONFIG_FILE="$TEST_TMP/config" AWS_PROFILE=proc
	read_with process
) || exit 1
(
	unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY
	export AWS_WEB_IDENTITY_TOKEN_FILE="$TEST_TMP/wit" \
		AWS_ROLE_ARN=arn:aws:iam::123456789012:role/s3pipe-test \
		AWS_ENDPOINT_URL_STS="$CREDS_URL"
	read_with web
) || exit 1
grep -q 'credentials refreshed from' "$TEST_TMP/process.log" ||
	fail "the credential_process credentials were not refreshed during the read"
grep -q 'retrying' "$TEST_TMP/static.log" || fail "no retry was logged (the fault did not fire)"

# a refused signature: the error path names the key, never the secret
mp=$(new_mountpoint refused)
AWS_ACCESS_KEY_ID=$STATIC_ID AWS_SECRET_ACCESS_KEY="$STATIC_SECRET-wrong" \
	"$S3PIPE" -d --endpoint-url "$S3_URL" train=s3://data/train/ "$mp" \
	>"$TEST_TMP/refused.log" 2>&1 </dev/null && fail "a wrong secret mounted"
track_mount "$mp"
grep -q 'SignatureDoesNotMatch' "$TEST_TMP/refused.log" ||
	fail "the wrong secret was not reported: $(tail -n 2 "$TEST_TMP/refused.log")"

# every secret the mounts held
secrets=("$STATIC_SECRET" "$WIT")
while IFS= read -r s; do
	secrets+=("$s")
done < <(python3 -c '
import json, sys
for line in open(sys.argv[1]):
    j = json.loads(line)
    print(j["SecretAccessKey"])
    print(j["SessionToken"])
' "$TEST_TMP/issued.jsonl")
[ "${#secrets[@]}" -ge 6 ] || fail "the credential_process handed out $(((${#secrets[@]} - 2) / 2)) credentials, expected 2 or more"
files=("$TEST_TMP"/*.log "$TEST_TMP"/*.title "$TEST_TMP"/*.log.out)
[ -f "$TEST_TMP/mount.err" ] && files+=("$TEST_TMP/mount.err")
lines=$(cat "${files[@]}" | wc -l)
for name in static process web; do
	grep -q 'credentials from' "$TEST_TMP/$name.log" ||
		fail "$name: no debug line says where the credentials came from: -d did not log"
done
for s in "${secrets[@]}"; do
	# the first 16 characters are enough to find a partial leak
	needle=${s:0:16}
	if grep -rlF -- "$needle" "${files[@]}" >/dev/null; then
		fail "a secret (${needle:0:4}...) appears in $(grep -rlF -- "$needle" "${files[@]}" | head -n 1)"
	fi
done
note "${#secrets[@]} secrets searched in $lines lines of logs and titles: none found"

# ---- a credentials file readable by others draws a warning ----
printf '[default]\naws_access_key_id = S3RVER\naws_secret_access_key = S3RVER\n' >"$TEST_TMP/credentials"
perm_case() {	# MODE WANT(warn|quiet)
	local mp
	chmod "$1" "$TEST_TMP/credentials"
	mp=$(new_mountpoint)
	(
		unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY
		export AWS_SHARED_CREDENTIALS_FILE="$TEST_TMP/credentials"
		mount_ok --endpoint-url "$S3_URL" train=s3://data/train/ "$mp"
	) || exit 1
	if grep -q 'readable by group or others' "$TEST_TMP/mount.err"; then
		[ "$2" = warn ] || fail "mode $1: warned about permissions"
	else
		[ "$2" = quiet ] || fail "mode $1: no warning about permissions: $(cat "$TEST_TMP/mount.err")"
	fi
	unmount "$mp"
}
perm_case 644 warn
perm_case 640 warn
perm_case 600 quiet
note "ok"
