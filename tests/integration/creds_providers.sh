#!/bin/bash
# creds_providers: each credential provider that hands out temporary
# credentials, end to end against the test server's mocks on loopback
# (tests/s3server/server.js --credentials-port): credential_process, web
# identity (STS AssumeRoleWithWebIdentity), container credentials (full URI
# with an authorization token file) and EC2 instance metadata (IMDSv2).
#
# The mocks issue keys that live 9 s; four mounts, one per provider, each
# read a 16 MiB epoch slowly (about 20 s, through a 1 MiB cache so that GETs
# go on all the way), in parallel.  Each stream must be byte-exact, each
# provider must have been asked again (refreshed) at least twice, the S3
# server must have seen at least two of its keys in use, and not one signed
# request may have been refused (no ExpiredToken, nothing).  Then a refresh
# that fails once: logged, tried again, and still nothing refused.
. "$(cd "$(dirname "$0")/.." && pwd)/lib.sh"
require_fuse
require_cmd python3

WIT="web-identity-token-$RANDOM$RANDOM"
CTOKEN="container-token-$RANDOM$RANDOM"
LIFETIME=9
S3_CREDENTIALS=1
S3_SERVER_ARGS=(--credential-lifetime "$LIFETIME" --web-identity-token "$WIT"
	--container-token "$CTOKEN")
s3_start
[ -n "$CREDS_URL" ] || fail "the server did not start its credential mocks"

s3_mb data
s3_seed data slow/ 8 2097152
expected_cat "$S3_LOCAL/data" slow/ >"$TEST_TMP/slow.exp"

printf '%s\n' "$WIT" >"$TEST_TMP/wit"
printf '%s\n' "$CTOKEN" >"$TEST_TMP/ctoken"
cat >"$TEST_TMP/process.sh" <<EOF
#!/bin/sh
exec curl -sf "$CREDS_URL/process"
EOF
chmod +x "$TEST_TMP/process.sh"
printf '[profile proc]\ncredential_process = %s\n' "$TEST_TMP/process.sh" >"$TEST_TMP/config"
chmod 600 "$TEST_TMP/config"

PROVIDERS=(process web container imds)

# the environment of one provider, on top of lib.sh's (which has S3RVER keys
# and instance metadata disabled)
provider_env() {	# PROVIDER
	unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN
	case $1 in
	process)
		export AWS_CONFIG_FILE="$TEST_TMP/config" AWS_PROFILE=proc ;;
	web)
		export AWS_WEB_IDENTITY_TOKEN_FILE="$TEST_TMP/wit" \
			AWS_ROLE_ARN=arn:aws:iam::123456789012:role/s3pipe-test \
			AWS_ROLE_SESSION_NAME=s3pipe-test AWS_ENDPOINT_URL_STS="$CREDS_URL" ;;
	container)
		export AWS_CONTAINER_CREDENTIALS_FULL_URI="$CREDS_URL/container/creds" \
			AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE="$TEST_TMP/ctoken" ;;
	imds)
		export AWS_EC2_METADATA_DISABLED=false \
			AWS_EC2_METADATA_SERVICE_ENDPOINT="$CREDS_URL" ;;
	esac
}

# mount_provider PROVIDER NAME: a foreground mount whose log is NAME.log
mount_provider() {
	local p=$1 name=$2
	(
		provider_env "$p"
		mount_fg "$TEST_TMP/$name.log" -d --endpoint-url "$S3_URL" \
			--part-size 256K --cache-size 1M slow=s3://data/slow/ \
			"$TEST_TMP/mnt-$name"
	) || fail "mounting with $p credentials failed: $(tail -n 3 "$TEST_TMP/$name.log")"
}

# slow_read FILE OUT: 256 KiB every 0.3 s (about 0.85 MB/s)
slow_read() {
	python3 "$S3PIPE_SRCDIR/tests/phased_read.py" --chunk 262144 --pace 0.3 "$1" "$2" -
}

# ---- every provider at once, keys expiring during the read ----
for p in "${PROVIDERS[@]}"; do
	mkdir -p "$TEST_TMP/mnt-$p"
	mount_provider "$p" "$p"
done
pids=()
for p in "${PROVIDERS[@]}"; do
	slow_read "$TEST_TMP/mnt-$p/slow_0" "$TEST_TMP/out-$p" &
	pids+=($!)
done
i=0
for p in "${PROVIDERS[@]}"; do
	wait "${pids[$i]}" || fail "the slow read with $p credentials failed: $(grep -E 'failed|cannot' "$TEST_TMP/$p.log" | head -n 3)"
	i=$((i + 1))
done

via_of() {	# PROVIDER: the mock's name for it
	case $1 in process) echo process ;; web) echo sts ;; container) echo container ;; imds) echo imds ;; esac
}
auth_stats >"$TEST_TMP/auth.json"
creds_stats >"$TEST_TMP/creds.json"
summary=()
for p in "${PROVIDERS[@]}"; do
	assert_file_eq "$TEST_TMP/slow.exp" "$TEST_TMP/out-$p" "slow_0 with $p credentials"
	grep -q "credentials from" "$TEST_TMP/$p.log" || fail "$p: the daemon did not log where its credentials came from"
	read -r issued used < <(python3 - "$TEST_TMP/creds.json" "$TEST_TMP/auth.json" "$(via_of "$p")" <<'PY'
import json, sys
creds, auth, via = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
keys = [i["accessKeyId"] for i in creds["issued"] if i["via"] == via]
used = [k for k in keys if auth["keys"].get(k, {}).get("requests", 0) > 0]
print(len(keys), len(used))
PY
)
	[ "$issued" -ge 3 ] || fail "$p: only $issued credentials issued in a 20 s read of 9 s keys (no refresh?)"
	[ "$used" -ge 2 ] || fail "$p: only $used of its keys signed requests (the refreshed key was not used)"
	refreshes=$(grep -c 'credentials refreshed from' "$TEST_TMP/$p.log" || true)
	[ "$refreshes" -ge 2 ] || fail "$p: $refreshes refreshes logged"
	if grep -q 'failed after' "$TEST_TMP/$p.log"; then
		fail "$p: a request failed: $(grep 'failed after' "$TEST_TMP/$p.log" | head -n1)"
	fi
	summary+=("$p: $issued keys issued, $used used, $refreshes refreshes")
done
refused=$(json_eval 's.failed' <"$TEST_TMP/auth.json")
assert_eq 0 "$refused" "signed requests the server refused ($(json_eval 's.failures' <"$TEST_TMP/auth.json"))"
verified=$(json_eval 's.verified' <"$TEST_TMP/auth.json")
[ "$verified" -gt 0 ] || fail "the server verified no signed request"
note "$(IFS=';'; echo "${summary[*]}"); $verified signed requests verified, 0 refused"
for p in "${PROVIDERS[@]}"; do
	fusermount3 -u "$TEST_TMP/mnt-$p" || fail "unmounting $p"
done

# ---- a refresh that fails once ----
auth_reset
creds_set 'lifetime=12'
mkdir -p "$TEST_TMP/mnt-retry"
mount_provider process retry
creds_set 'fail=1'
slow_read "$TEST_TMP/mnt-retry/slow_0" "$TEST_TMP/out-retry" ||
	fail "the slow read across a failed refresh failed"
assert_file_eq "$TEST_TMP/slow.exp" "$TEST_TMP/out-retry" "slow_0 across a failed refresh"
grep -q 'cannot refresh the credentials (attempt 1)' "$TEST_TMP/retry.log" ||
	fail "the failed refresh was not logged: $(grep -i refresh "$TEST_TMP/retry.log" | head -n 3)"
grep -q 'credentials refreshed from' "$TEST_TMP/retry.log" ||
	fail "no refresh succeeded after the failed one"
assert_eq 1 "$(creds_stat 's.failed')" "credential requests failed on purpose"
assert_eq 0 "$(auth_stat 's.failed')" "signed requests refused across a failed refresh"
fusermount3 -u "$TEST_TMP/mnt-retry" || fail "unmounting the retry mount"
note "a failed refresh: logged, retried, stream byte-exact, nothing refused"
