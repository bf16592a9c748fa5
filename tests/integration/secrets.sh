#!/bin/bash
# secrets: no secret reaches a log or the process title.  Five full mounts
# with -d (every debug line), one per source of credentials, each
# distinctive: a static secret key from the environment, and temporary
# credentials (secret key and session token, refreshed during the read)
# from a credential_process, from STS for a web identity token, from a
# container endpoint with its authorization token and from instance
# metadata; retried GETs and a refused signature add error paths.  Every
# log line, the mount helper's stderr and each daemon's command line and
# title are searched for every secret and token (the server's key store
# lists each one it issued), and for any signature or token header: none
# may appear.  Also: a shared credentials file readable by group or others
# draws a warning, one that is not does not.
. "$(cd "$(dirname "$0")/.." && pwd)/lib.sh"
require_fuse
require_cmd python3

STATIC_ID=AKIDSECRETSTEST01
STATIC_SECRET="StaticSecret-$RANDOM$RANDOM-Zq9"
WIT="WebIdentityToken-$RANDOM$RANDOM-Xk7"
CTOKEN="ContainerAuthToken-$RANDOM$RANDOM-Qw3"
S3_CREDENTIALS=1
S3_SERVER_ARGS=(--key S3RVER:S3RVER --key "$STATIC_ID:$STATIC_SECRET"
	--credential-lifetime 6 --web-identity-token "$WIT" --container-token "$CTOKEN")
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

# read_with NAME: in a subshell whose environment the caller set, mount
# NAME, keep its command line and title, read train_0 slowly (with the 500s
# armed below some GETs are retried) and compare
read_with() {	# NAME
	local name=$1 mp="$TEST_TMP/mnt-$1" pid
	mkdir -p "$mp"
	mount_fg "$TEST_TMP/$name.log" -d --endpoint-url "$S3_URL" --part-size 256K \
		--cache-size 1M train=s3://data/train/ "$mp"
	# the titles of the keeper and of the worker it started
	for pid in $(daemon_pids "$mp") $(worker_pids "$mp"); do
		tr '\0' ' ' <"/proc/$pid/cmdline" >>"$TEST_TMP/$name.title"
		cat "/proc/$pid/comm" >>"$TEST_TMP/$name.title"
		ps -o args= -p "$pid" >>"$TEST_TMP/$name.title"
	done
	[ -s "$TEST_TMP/$name.title" ] || fail "$name: no daemon found for $mp"
	python3 "$S3PIPE_SRCDIR/tests/phased_read.py" --chunk 262144 --pace 0.5 \
		"$mp/train_0" "$TEST_TMP/$name.out" - || fail "$name: reading train_0 failed"
	assert_file_eq "$TEST_TMP/train.exp" "$TEST_TMP/$name.out" "train_0 ($name)"
	fusermount3 -u "$mp" || fail "$name: unmount failed"
}

# every source of credentials at once (keys live 6 s: each read of about
# 8 s sees a refresh)
fault_arm 'kind=status&status=500&count=8&match=/data/train/'
NAMES=(static process web container imds)
pids=()
for name in "${NAMES[@]}"; do
	(
		unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY
		case $name in
		static) export AWS_ACCESS_KEY_ID=$STATIC_ID AWS_SECRET_ACCESS_KEY=$STATIC_SECRET ;;
		process) export AWS_CONFIG_FILE="$TEST_TMP/config" AWS_PROFILE=proc ;;
		web) export AWS_WEB_IDENTITY_TOKEN_FILE="$TEST_TMP/wit" \
			AWS_ROLE_ARN=arn:aws:iam::123456789012:role/s3pipe-test \
			AWS_ENDPOINT_URL_STS="$CREDS_URL" ;;
		container) export AWS_CONTAINER_CREDENTIALS_FULL_URI="$CREDS_URL/container/x" \
			AWS_CONTAINER_AUTHORIZATION_TOKEN="$CTOKEN" ;;
		imds) export AWS_EC2_METADATA_DISABLED=false \
			AWS_EC2_METADATA_SERVICE_ENDPOINT="$CREDS_URL" ;;
		esac
		read_with "$name"
	) &
	pids+=($!)
done
for i in "${!NAMES[@]}"; do
	wait "${pids[$i]}" || fail "the ${NAMES[$i]} mount failed (above)"
done
grep -q 'credentials refreshed from' "$TEST_TMP/process.log" ||
	fail "the credential_process credentials were not refreshed during the read"
grep -q 'retrying' "$TEST_TMP"/*.log || fail "no retry was logged (the fault did not fire)"

# a refused signature: the error path names the key, never the secret
mp=$(new_mountpoint refused)
AWS_ACCESS_KEY_ID=$STATIC_ID AWS_SECRET_ACCESS_KEY="$STATIC_SECRET-wrong" \
	"$S3PIPE" -d --endpoint-url "$S3_URL" train=s3://data/train/ "$mp" \
	>"$TEST_TMP/refused.log" 2>&1 </dev/null && fail "a wrong secret mounted"
track_mount "$mp"
grep -q 'SignatureDoesNotMatch' "$TEST_TMP/refused.log" ||
	fail "the wrong secret was not reported: $(tail -n 2 "$TEST_TMP/refused.log")"

# every secret the mounts held: the static one, the tokens the test made,
# and every temporary secret key and session token the mocks issued (the
# server's key store; the credential_process's own copy must agree)
secrets=("$STATIC_SECRET" "$WIT" "$CTOKEN")
while IFS= read -r s; do
	secrets+=("$s")
done < <(python3 -c '
import json, sys
for k in json.load(open(sys.argv[1]))["keys"]:
    print(k["secret"])
    print(k["token"])
for line in open(sys.argv[2]):
    j = json.loads(line)
    print(j["SecretAccessKey"])
    print(j["SessionToken"])
' "$TEST_TMP/s3server.keys" "$TEST_TMP/issued.jsonl")
# two keys or more for each of the four temporary sources
[ "${#secrets[@]}" -ge 19 ] || fail "only $(((${#secrets[@]} - 3) / 2)) temporary keys were issued"
files=("$TEST_TMP"/*.log "$TEST_TMP"/*.title)
[ -f "$TEST_TMP/mount.err" ] && files+=("$TEST_TMP/mount.err")
lines=$(cat "${files[@]}" | wc -l)
for name in "${NAMES[@]}"; do
	grep -q 'credentials from' "$TEST_TMP/$name.log" ||
		fail "$name: no debug line says where the credentials came from: -d did not log"
done
# nor any part of a signed request that carries one
if grep -iE 'Signature=|Authorization:|x-amz-security-token|X-Amz-Credential' "${files[@]}"; then
	fail "a signature, an Authorization header or a token header appears in a log (above)"
fi
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
