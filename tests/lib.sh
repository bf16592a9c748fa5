# Shared code for the s3pipe integration tests (sourced, never run).
#
# Each test gets its own temporary folder, its own S3 server (s3rver from
# tests/s3server, on the loopback address, a free port) and its own mounts.
# An EXIT trap unmounts whatever is left, stops the daemons and the server
# and removes the temporary folder, so tests can run in parallel
# (make -j check). Exit codes follow automake: 0 pass, 1 fail, 77 skip —
# and skip is used only when FUSE itself is missing.
#
# Environment (set by `make check`, defaults for a manual run):
#   S3PIPE           the binary under test ($S3PIPE_BUILDDIR/s3pipe)
#   S3PIPE_SRCDIR    top of the source tree (found from this file)
#   S3PIPE_BUILDDIR  top of the build tree ($S3PIPE_SRCDIR)
#   S3PIPE_TEST_TIMEOUT  seconds before a hung test is torn down (120)
#   S3PIPE_KEEP_TMP  set to 1 to keep the temporary folder for debugging
#
# The test S3 server (tests/s3server/server.js) verifies SigV4 signatures;
# anonymous requests (the seeding helpers below) pass unverified. Set these
# before s3_start:
#   S3_SERVER_ARGS   bash array of extra server arguments (--tls-cert F
#                    --tls-key F, --key AKID:SECRET, --credential-lifetime N,
#                    --web-identity-token V, --container-token V, ...)
#   S3_CREDENTIALS   1: also start the credential mocks (IMDSv2, container,
#                    STS, credential_process) and set CREDS_URL
#   S3_PORT, S3_CREDS_PORT  fixed ports instead of free ones
#   S3_CACERT        CA file the curl helpers trust (TLS servers); curl
#                    also honours CURL_CA_BUNDLE
# s3_start sets S3_URL (http[s]://127.0.0.1:PORT), CREDS_URL
# (http://127.0.0.1:PORT2 or empty), S3_PID, S3_DATA. s3_stop, then
# s3_start_again, or s3_restart_same_port [SECONDS] bring the server back on
# the same ports with the same data and arguments; the temporary keys it
# issued and the IMDS tokens survive (--key-store), faults and stats do not.
#
# Manual run:
#   S3PIPE=/work/build/s3pipe S3PIPE_SRCDIR=$PWD S3PIPE_BUILDDIR=/work/build \
#       bash tests/integration/basic.sh

set -euo pipefail
export LC_ALL=C

: "${S3PIPE_SRCDIR:=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
: "${S3PIPE_BUILDDIR:=$S3PIPE_SRCDIR}"
: "${S3PIPE:=$S3PIPE_BUILDDIR/s3pipe}"
export MOUNT_S3PIPE="$(dirname "$S3PIPE")/mount.s3pipe"
TEST_NAME="$(basename "$0" .sh)"
: "${S3PIPE_TEST_TIMEOUT:=120}"

# Credentials s3rver accepts; no profile, endpoint or role from the caller's
# environment may leak into a test.
export AWS_ACCESS_KEY_ID=S3RVER
export AWS_SECRET_ACCESS_KEY=S3RVER
export AWS_REGION=us-east-1
unset AWS_PROFILE AWS_DEFAULT_PROFILE AWS_SESSION_TOKEN AWS_ENDPOINT_URL \
	AWS_ENDPOINT_URL_S3 AWS_CONFIG_FILE AWS_SHARED_CREDENTIALS_FILE \
	AWS_CONTAINER_CREDENTIALS_RELATIVE_URI AWS_CONTAINER_CREDENTIALS_FULL_URI \
	AWS_WEB_IDENTITY_TOKEN_FILE AWS_ROLE_ARN AWS_ROLE_SESSION_NAME \
	AWS_CONTAINER_AUTHORIZATION_TOKEN AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE \
	AWS_EC2_METADATA_SERVICE_ENDPOINT AWS_EC2_METADATA_SERVICE_ENDPOINT_MODE \
	AWS_ENDPOINT_URL_STS || true
# tests talk to the loopback address only: no instance-metadata look-ups
export AWS_EC2_METADATA_DISABLED=true
# never let a proxy setting send loopback traffic elsewhere
unset http_proxy https_proxy HTTP_PROXY HTTPS_PROXY ALL_PROXY all_proxy || true
export NO_PROXY=127.0.0.1,localhost no_proxy=127.0.0.1,localhost

TEST_TMP="$(mktemp -d "${TMPDIR:-/tmp}/s3pipe-$TEST_NAME.XXXXXX")"
# a home of the test's own: no ~/.aws of whoever runs the tests takes part
export HOME="$TEST_TMP/home"
mkdir -p "$HOME"
S3_LOCAL="$TEST_TMP/local"		# local copies of what was uploaded: $S3_LOCAL/BUCKET/KEY
S3_URL=
CREDS_URL=
S3_PID=
S3_DATA=
S3_PORT_USED=	# the ports the last s3_start listened on (for s3_start_again)
S3_CREDS_PORT_USED=
declare -p S3_SERVER_ARGS >/dev/null 2>&1 || S3_SERVER_ARGS=()
WATCHDOG_PID=
mkdir -p "$S3_LOCAL"
: >"$TEST_TMP/mounts"
: >"$TEST_TMP/pids"
: >"$TEST_TMP/daemons"

# ---- messages and assertions ----

note() {
	printf '%s: %s\n' "$TEST_NAME" "$*" >&2
}

fail() {
	printf 'FAIL: %s: %s\n' "$TEST_NAME" "$*" >&2
	report_dead_daemons
	exit 1
}

# After a failure: say so when a daemon died under a mount (a crash shows
# up to readers only as ENOTCONN/ECONNABORTED).
report_dead_daemons() {
	local pid mp
	[ -s "$TEST_TMP/daemons" ] || return 0
	while IFS=' ' read -r pid mp; do
		if ! kill -0 "$pid" 2>/dev/null && is_mounted "$mp"; then
			printf 'FAIL: %s: the s3pipe daemon (pid %s) serving %s died while mounted (crash?)\n' \
				"$TEST_NAME" "$pid" "$mp" >&2
		fi
	done <"$TEST_TMP/daemons"
}

skip() {
	printf 'SKIP: %s: %s\n' "$TEST_NAME" "$*" >&2
	exit 77
}

assert_eq() {	# EXPECTED ACTUAL [WHAT]
	if [ "$1" != "$2" ]; then
		fail "${3:-value}: expected '$1', got '$2'"
	fi
}

assert_ne() {	# UNEXPECTED ACTUAL [WHAT]
	if [ "$1" = "$2" ]; then
		fail "${3:-value}: did not expect '$1'"
	fi
}

assert_match() {	# ERE STRING [WHAT]
	# (a here-string, not a pipe: under pipefail, grep -q leaving at the
	# first match may kill printf with SIGPIPE and fail a match)
	if ! grep -Eq -- "$1" <<<"$2"; then
		fail "${3:-value}: '$2' does not match /$1/"
	fi
}

sha256() {
	sha256sum <"$1" | cut -d' ' -f1
}

assert_file_eq() {	# EXPECTED_FILE ACTUAL_FILE [WHAT]
	local e a
	[ -f "$1" ] || fail "${3:-file}: expected file '$1' missing"
	[ -f "$2" ] || fail "${3:-file}: file '$2' missing"
	e=$(sha256 "$1")
	a=$(sha256 "$2")
	if [ "$e" != "$a" ]; then
		local es as off
		es=$(stat -c %s "$1")
		as=$(stat -c %s "$2")
		off=$(cmp "$1" "$2" 2>&1 | head -n1 || true)
		fail "${3:-file}: content differs (expected $es bytes sha256 $e, got $as bytes sha256 $a; $off)"
	fi
}

# Run CMD... until it succeeds or SECONDS pass (fractions allowed).
wait_until() {
	local secs=$1
	shift
	local deadline=$((SECONDS + ${secs%.*} + 1))
	while ! "$@" 2>/dev/null; do
		if [ "$SECONDS" -ge "$deadline" ]; then
			return 1
		fi
		sleep 0.05
	done
	return 0
}

# Bounded commands: a hung FUSE read must not hang the test forever.
# tcat FILE... is cat with a timeout (READ_TIMEOUT seconds, default 30).
tcat() {
	timeout -k 5 "${READ_TIMEOUT:-30}" cat "$@"
}

# Print the errno name (ENOENT, EACCES, ...) that OP on FILE fails with, or
# OK. OP: stat, open_read, open_write, open_rdwr, truncate.
errno_of() {	# OP FILE
	python3 - "$1" "$2" <<'PY'
import errno, os, sys
op, path = sys.argv[1], sys.argv[2]
try:
    if op == "stat":
        os.stat(path)
    elif op == "open_read":
        os.close(os.open(path, os.O_RDONLY))
    elif op == "open_write":
        os.close(os.open(path, os.O_WRONLY))
    elif op == "open_rdwr":
        os.close(os.open(path, os.O_RDWR))
    elif op == "truncate":
        os.truncate(path, 0)
    else:
        sys.exit("errno_of: unknown op " + op)
    print("OK")
except OSError as e:
    print(errno.errorcode.get(e.errno, str(e.errno)))
PY
}

# ---- mounts ----

is_mounted() {	# MOUNTPOINT
	local mp
	mp=$(realpath -m "$1")
	mp=${mp// /\\040}
	awk -v mp="$mp" '$5 == mp { found = 1 } END { exit !found }' /proc/self/mountinfo
}

assert_mounted() {
	is_mounted "$1" || fail "$1 is not mounted"
}

assert_not_mounted() {
	if is_mounted "$1"; then
		fail "$1 is still mounted"
	fi
}

# PIDs of s3pipe processes (any name the binary runs under) whose command
# line names MOUNTPOINT, keepers and workers alike.
s3pipe_pids() {	# MOUNTPOINT
	local want exe p arg mp
	want=$(realpath -m "$S3PIPE")
	mp=$(realpath -m "$1")
	for p in /proc/[0-9]*; do
		exe=$(readlink "$p/exe" 2>/dev/null) || continue
		[ "$exe" = "$want" ] || continue
		while IFS= read -r -d '' arg; do
			if [ "$arg" = "$1" ] || [ "$arg" = "$mp" ]; then
				echo "${p#/proc/}"
				break
			fi
		done <"$p/cmdline" 2>/dev/null || true
	done
}

# The daemons of MOUNTPOINT: the keepers (the processes that mounted, whose
# pid --pid-file holds), not the workers they started.
daemon_pids() {	# MOUNTPOINT
	local all p parent
	all=" $(s3pipe_pids "$1" | tr '\n' ' ') "
	for p in $all; do
		parent=$(awk '{ print $4 }' "/proc/$p/stat" 2>/dev/null) || continue
		case $all in *" $parent "*) continue ;; esac
		echo "$p"
	done
}

# The workers serving MOUNTPOINT: its keepers' children.
worker_pids() {	# MOUNTPOINT
	local p
	for p in $(daemon_pids "$1"); do
		tr ' ' '\n' <"/proc/$p/task/$p/children" 2>/dev/null | grep . || true
	done
}

# The start time of process PID (clock ticks after boot, field 22 of
# /proc/PID/stat), or nothing when it is gone: with the pid it names one
# process, where a pid alone may have been reused by then.
proc_start() {	# PID
	local stat
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	stat=${stat##*) }
	# shellcheck disable=SC2086
	set -- $stat
	printf '%s\n' "${20}"
}

# Record process PID for cleanup, which stops it only if it is still the
# same process (same start time).
track_pid() {	# PID
	local start
	start=$(proc_start "$1") || return 0
	echo "$1 $start" >>"$TEST_TMP/pids"
}

# The pids recorded with track_pid that still name the same process.
tracked_pids() {
	local p start
	[ -s "$TEST_TMP/pids" ] || return 0
	sort -u "$TEST_TMP/pids" | while read -r p start; do
		[ -n "$start" ] && [ "$(proc_start "$p")" = "$start" ] && echo "$p"
	done
	return 0
}

# Record MOUNTPOINT (and the daemon serving it) for cleanup.
track_mount() {
	local mp
	mp=$(realpath -m "$1")
	echo "$mp" >>"$TEST_TMP/mounts"
	local p
	for p in $(daemon_pids "$mp"); do
		track_pid "$p"
		echo "$p $mp" >>"$TEST_TMP/daemons"
	done
}

# Make a fresh empty mountpoint under the test folder and print its path.
new_mountpoint() {	# [NAME]
	local mp="$TEST_TMP/mnt-${1:-$RANDOM$RANDOM}"
	mkdir -p "$mp"
	printf '%s\n' "$mp"
}

# s3pipe_mount ARGS... — run the binary (the mountpoint is the last argument),
# record the mount for cleanup. Returns the binary's exit status; its
# stderr is kept in $TEST_TMP/mount.err (and repeated on failure).
s3pipe_mount() {
	local mp=${!#} rc=0
	"$S3PIPE" "$@" 2>"$TEST_TMP/mount.err" </dev/null || rc=$?
	if [ "$rc" -ne 0 ]; then
		note "s3pipe $* exited $rc:"
		cat "$TEST_TMP/mount.err" >&2 || true
	fi
	track_mount "$mp"
	return "$rc"
}

# Mount and wait until the root lists something; fail the test otherwise.
mount_ok() {	# ARGS... (the mountpoint last)
	local mp=${!#}
	s3pipe_mount "$@" || fail "s3pipe exited non-zero for: $*"
	assert_mounted "$mp"
}

# mount_fg LOG ARGS... (the mountpoint last): run s3pipe -f ARGS... in the
# background with its output in LOG, wait until it is mounted; FG_PID is
# the daemon. Fails if it exits or does not mount within 30 s.
FG_PID=
mount_fg() {
	local log=$1 mp
	shift
	mp=${!#}
	"$S3PIPE" -f "$@" >"$log" 2>&1 </dev/null &
	FG_PID=$!
	echo "$(realpath -m "$mp")" >>"$TEST_TMP/mounts"
	track_pid "$FG_PID"
	echo "$FG_PID $(realpath -m "$mp")" >>"$TEST_TMP/daemons"
	local i
	for ((i = 0; i < 600; i++)); do
		if is_mounted "$mp"; then
			return 0
		fi
		if ! kill -0 "$FG_PID" 2>/dev/null; then
			tail -n 5 "$log" >&2 || true
			fail "s3pipe -f $* exited before mounting"
		fi
		sleep 0.05
	done
	fail "s3pipe -f $*: not mounted after 30 s: $(tail -n 3 "$log")"
}

# expect_mount_error WHAT MOUNTPOINT NEEDLE... -- COMMAND...
# COMMAND must exit 1 within 60 s with exactly one line on stderr, starting
# "s3pipe: " and containing every NEEDLE (each a '|'-separated list of
# fixed strings, one of which must appear, case-insensitive; a NEEDLE
# starting with '~' is an extended regular expression instead), and leave
# no mount and no daemon behind. Failures are counted in MERR_FAIL (and
# reported at once); call expect_mount_error_done at the end.
MERR_CASES=0
MERR_FAIL=0
expect_mount_error() {
	local what=$1 mp=$2 rc=0 msg n needle alt ok pids
	shift 2
	local needles=()
	while [ "$#" -gt 0 ] && [ "$1" != -- ]; do
		needles+=("$1")
		shift
	done
	[ "${1:-}" = -- ] || fail "expect_mount_error: no -- before the command"
	shift
	MERR_CASES=$((MERR_CASES + 1))
	timeout -k 5 60 "$@" >"$TEST_TMP/case.out" 2>"$TEST_TMP/case.err" </dev/null || rc=$?
	echo "$mp" >>"$TEST_TMP/mounts"
	local problems=()
	if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
		problems+=("did not exit within 60 s")
	elif [ "$rc" -ne 1 ]; then
		problems+=("exit status $rc, expected 1")
	fi
	n=$(awk 'END { print NR }' "$TEST_TMP/case.err")
	[ "$n" -eq 1 ] || problems+=("stderr has $n lines, expected exactly 1")
	msg=$(head -n1 "$TEST_TMP/case.err")
	case $msg in
	"s3pipe: "*) ;;
	*) problems+=("message does not start with 's3pipe: '") ;;
	esac
	for needle in "${needles[@]}"; do
		ok=0
		if [ "${needle#\~}" != "$needle" ]; then
			if printf '%s' "$msg" | grep -Eqi -- "${needle#\~}"; then ok=1; fi
		else
			local arr
			IFS='|' read -r -a arr <<<"$needle"
			for alt in "${arr[@]}"; do
				if printf '%s' "$msg" | grep -Fqi -- "$alt"; then ok=1; fi
			done
		fi
		[ "$ok" -eq 1 ] || problems+=("message does not mention '$needle'")
	done
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
		MERR_FAIL=$((MERR_FAIL + 1))
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

expect_mount_error_done() {
	[ "$MERR_FAIL" -eq 0 ] || fail "$MERR_FAIL of $MERR_CASES start-up error cases failed"
}

unmount() {	# MOUNTPOINT — unmount and wait for its daemon(s) to exit
	local mp=$1 pids
	pids=$(daemon_pids "$mp")
	fusermount3 -u "$mp" || fail "fusermount3 -u $mp failed"
	wait_pids_gone 10 $pids || fail "daemon ($pids) still running after unmounting $mp"
}

pids_gone() {
	local p
	for p in "$@"; do
		if kill -0 "$p" 2>/dev/null; then
			return 1
		fi
	done
	return 0
}

wait_pids_gone() {	# SECONDS PID...
	local secs=$1
	shift
	wait_until "$secs" pids_gone "$@"
}

# ---- the S3 server ----

# The server is started and stopped by tests/s3server/start.sh, as for the
# benchmark and the quickstart. A read-only source tree (distcheck) gets
# its npm install in a copy in the build tree.
. "$S3PIPE_SRCDIR/tests/s3server/start.sh"

# Start a private server; sets S3_URL (http[s]://127.0.0.1:PORT), CREDS_URL,
# S3_PID, S3_DATA. Honours S3_SERVER_ARGS, S3_CREDENTIALS, S3_PORT and
# S3_CREDS_PORT (see the top of this file).
s3_start() {
	local rc=0
	s3_launch || rc=$?
	case $rc in
	0) ;;
	1)
		cat "$TEST_TMP/s3server.err" >&2 || true
		fail "the S3 server exited during start-up"
		;;
	*) fail "the S3 server did not become ready in 30 s" ;;
	esac
}

# Start the server; 0 when ready, 1 when it exited during start-up, 2 when
# it did not become ready in 30 s.
s3_launch() {
	local dir rc=0
	local -a args
	dir=$(s3server_install "$S3PIPE_SRCDIR/tests/s3server" "$S3PIPE_BUILDDIR/tests/s3server") ||
		fail "cannot install the test S3 server"
	S3_DATA="$TEST_TMP/s3data"
	mkdir -p "$S3_DATA"
	args=(--dir "$S3_DATA" --address 127.0.0.1 --port "${S3_PORT:-0}"
		--key-store "$TEST_TMP/s3server.keys")
	if [ "${S3_CREDENTIALS:-0}" = 1 ]; then
		args+=(--credentials-port "${S3_CREDS_PORT:-0}")
	fi
	args+=("${S3_SERVER_ARGS[@]}")
	s3server_start --js "$dir/server.js" --log "$TEST_TMP/s3server" -- "${args[@]}" || rc=$?
	S3_PID=$S3SERVER_PID
	[ "$rc" = 0 ] || return "$rc"
	S3_URL=$S3SERVER_URL
	CREDS_URL=$S3SERVER_CREDS_URL
	S3_PORT_USED=$S3SERVER_PORT
	S3_CREDS_PORT_USED=${CREDS_URL##*:}
	export S3_URL CREDS_URL
}

# Start the server again after s3_stop: same ports, data, arguments and
# issued keys. Retries for 5 s while a port is still taken.
s3_start_again() {
	[ -n "$S3_PORT_USED" ] || fail "s3_start_again: the server was never started"
	[ -z "$S3_PID" ] || fail "s3_start_again: the server is still running (s3_stop first)"
	local i rc
	for ((i = 0; i < 50; i++)); do
		rc=0
		S3_PORT=$S3_PORT_USED S3_CREDS_PORT=${S3_CREDS_PORT_USED:-0} s3_launch || rc=$?
		case $rc in
		0) return 0 ;;
		2) fail "the S3 server did not become ready in 30 s" ;;
		esac
		sleep 0.1
	done
	tail -n 5 "$TEST_TMP/s3server.err" >&2 || true
	fail "the S3 server did not start again on port $S3_PORT_USED"
}

s3_stop() {
	s3server_stop "$S3_PID"
	S3_PID=
}

# Stop the server, wait SECONDS (default 0), start it again on the same ports.
s3_restart_same_port() {	# [SECONDS]
	s3_stop
	sleep "${1:-0}"
	s3_start_again
}

# Percent-encode a key for a URL path ('/' kept).
s3_urlencode() {
	local LC_ALL=C s=$1 out='' c i
	for ((i = 0; i < ${#s}; i++)); do
		c=${s:i:1}
		case $c in
		[a-zA-Z0-9.~_/-]) out+=$c ;;
		*)
			printf -v c '%%%02X' "'$c"
			out+=$c
			;;
		esac
	done
	printf '%s' "$out"
}

# curl for the test server: trusts S3_CACERT when set.
s3_curl() {
	if [ -n "${S3_CACERT:-}" ]; then
		curl --cacert "$S3_CACERT" "$@"
	else
		curl "$@"
	fi
}

# curl ARGS... signed with SigV4 as AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY
# (and AWS_SESSION_TOKEN when set) for AWS_REGION, empty payload: for GET,
# HEAD and DELETE. curl 7.88 signs the query as written: give parameters
# sorted and encoded (or none).
EMPTY_SHA256=e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
s3_sigv4_curl() {
	local -a sign=(--aws-sigv4 "aws:amz:${AWS_REGION:-us-east-1}:s3"
		--user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY"
		-H "x-amz-content-sha256: $EMPTY_SHA256")
	if [ -n "${AWS_SESSION_TOKEN:-}" ]; then
		sign+=(-H "x-amz-security-token: $AWS_SESSION_TOKEN")
	fi
	s3_curl "${sign[@]}" "$@"
}

s3_mb() {	# BUCKET
	s3_curl -sS -f -o /dev/null -X PUT "$S3_URL/$1" || fail "cannot create bucket $1"
	mkdir -p "$S3_LOCAL/$1"
}

# Upload FILE as KEY; keep a local copy at $S3_LOCAL/BUCKET/KEY (not for
# keys ending in '/', which are folder markers).
s3_put() {	# BUCKET KEY FILE
	s3_curl -sS -f -o /dev/null -T "$3" "$S3_URL/$1/$(s3_urlencode "$2")" ||
		fail "cannot upload $1/$2"
	case $2 in
	*/) ;;
	*)
		mkdir -p "$(dirname "$S3_LOCAL/$1/$2")"
		cp "$3" "$S3_LOCAL/$1/$2"
		;;
	esac
}

# Upload a folder marker KEY/ (zero bytes).
s3_put_marker() {	# BUCKET KEY/
	s3_curl -sS -f -o /dev/null -X PUT -H 'Content-Length: 0' \
		"$S3_URL/$1/$(s3_urlencode "$2")" || fail "cannot create marker $1/$2"
}

# Write COUNT random objects of SIZE bytes each as PREFIXobj-NNNNNN.bin
# (zero-padded: key order = sort order) in one parallel curl; local copies
# go to DIR/KEY (DIR defaults to $S3_LOCAL/BUCKET).
s3_seed() {	# BUCKET PREFIX COUNT SIZE [DIR]
	local bucket=$1 prefix=$2 count=$3 size=$4 dir=${5:-$S3_LOCAL/$1}
	local blob="$TEST_TMP/seed.$$.$RANDOM" cfg i key f base
	base="$dir/$prefix"
	mkdir -p "$(dirname "${base}x")"
	: >"$TEST_TMP/seed.cfg"
	cfg="$TEST_TMP/seed.cfg"
	if [ "$size" -gt 0 ]; then
		head -c $((count * size)) /dev/urandom >"$blob"
		split -b "$size" -d -a 6 --additional-suffix=.bin "$blob" "${base}obj-"
		rm -f "$blob"
	else
		for ((i = 0; i < count; i++)); do
			printf -v f '%sobj-%06d.bin' "$base" "$i"
			: >"$f"
		done
	fi
	for ((i = 0; i < count; i++)); do
		printf -v key '%sobj-%06d.bin' "$prefix" "$i"
		printf 'url = "%s/%s/%s"\nupload-file = "%s"\noutput = "/dev/null"\n' \
			"$S3_URL" "$bucket" "$(s3_urlencode "$key")" "$dir/$key" >>"$cfg"
	done
	s3_curl -sS -f --no-progress-meter --parallel --parallel-max 16 -K "$cfg" ||
		fail "seeding $count objects in $bucket/$prefix failed"
}

# Print the bytes a channel must deliver: every local copy under DIR whose
# key starts with PREFIX, in byte order of the keys.
expected_cat() {	# DIR [PREFIX]
	local dir=$1 prefix=${2:-}
	(
		cd "$dir"
		find . -type f -print0 | sed -z 's|^\./||' | LC_ALL=C sort -z |
			while IFS= read -r -d '' k; do
				case $k in
				"$prefix"*) cat -- "$k" ;;
				esac
			done
	)
}

# Keys the server lists under PREFIX (ListObjectsV2, every page), one a line.
s3_list_keys() {	# BUCKET [PREFIX]
	local token='' out q
	while :; do
		q="list-type=2&prefix=$(s3_urlencode "${2:-}" | sed 's|/|%2F|g')"
		if [ -n "$token" ]; then
			q+="&continuation-token=$(s3_urlencode "$token" | sed 's|/|%2F|g')"
		fi
		out=$(s3_curl -sS -f "$S3_URL/$1?$q") || fail "listing $1 failed"
		printf '%s' "$out" | grep -o '<Key>[^<]*</Key>' | sed 's/<Key>\(.*\)<\/Key>/\1/' |
			sed 's/&amp;/\&/g; s/&lt;/</g; s/&gt;/>/g; s/&quot;/"/g; s/&apos;/'"'"'/g'
		case $out in
		*'<IsTruncated>true</IsTruncated>'*) ;;
		*) break ;;
		esac
		token=$(printf '%s' "$out" | sed -n 's/.*<NextContinuationToken>\([^<]*\)<\/NextContinuationToken>.*/\1/p')
		[ -n "$token" ] || fail "truncated listing without a continuation token"
	done
}

# ---- fault injection (tests/s3server/server.js) ----

fault_arm() {	# 'kind=K&count=N&...'
	s3_curl -sS -f -o /dev/null -X POST "$S3_URL/__fault?$1" || fail "cannot arm fault $1"
}

# Disarm every fault, keep the counters (fault_clear resets both).
fault_disarm() {
	s3_curl -sS -f -o /dev/null -X DELETE "$S3_URL/__fault" || fail "cannot disarm faults"
}

fault_clear() {
	s3_curl -sS -f -o /dev/null -X DELETE "$S3_URL/__fault" || fail "cannot clear faults"
	s3_curl -sS -f -o /dev/null -X DELETE "$S3_URL/__fault/stats" || fail "cannot reset fault stats"
}

fault_stats() {
	s3_curl -sS -f "$S3_URL/__fault/stats" || fail "cannot read fault stats"
}

# Evaluate a JavaScript expression over the stats object `s`, print it.
#   fault_stat 's.fired.cut'
fault_stat() {	# EXPR
	fault_stats | json_eval "$1"
}

# Evaluate a JavaScript expression over the JSON object `s` read from
# stdin, print it (objects as JSON). Its fields are in scope too: 's.gets'
# and 'gets' are the same.
json_eval() {	# EXPR
	node -e '
		let d = ""; process.stdin.on("data", c => d += c).on("end", () => {
			const s = JSON.parse(d);
			// "s.gets" and plain "gets" both work
			let v;
			with (s) v = eval(process.argv[1]);
			console.log(typeof v === "object" ? JSON.stringify(v) : String(v));
		});' "$1"
}

# ---- signature checks and credential mocks (server.js) ----

# Auth stats: {verified, anonymous:{METHOD:n}, failed, failures:{CODE:n},
# keys:{AKID:{requests, failed, first, last, temporary}}, recent:[...]}
# stats_of MP EXPR: EXPR over the mount's live stats (`s`)
stats_of() {
	tcat "$1/.s3pipe-stats" >"$TEST_TMP/stats.json" || fail "reading the stats of $1 failed"
	json_eval "$2" <"$TEST_TMP/stats.json"
}

auth_stats() {
	s3_curl -sS -f "$S3_URL/__auth/stats" || fail "cannot read auth stats"
}

auth_stat() {	# EXPR over `s`, e.g. 's.keys.S3RVER.requests'
	auth_stats | json_eval "$1"
}

auth_reset() {
	s3_curl -sS -f -o /dev/null -X DELETE "$S3_URL/__auth/stats" || fail "cannot reset auth stats"
}

# Change the credential mocks: 'lifetime=N', 'fail=N&status=C'.
creds_set() {	# QUERY
	s3_curl -sS -f -o /dev/null -X POST "$S3_URL/__creds?$1" || fail "cannot set credentials $1"
}

# Credential stats: {issued:[{via, accessKeyId, expiration, t}],
# requests:{imdsToken, imdsRoles, imds, imdsOther, container, sts, process,
# other}, failed, rejected}
creds_stats() {
	s3_curl -sS -f "$S3_URL/__creds/stats" || fail "cannot read credential stats"
}

creds_stat() {	# EXPR over `s`
	creds_stats | json_eval "$1"
}

# ---- environment checks ----

require_fuse() {
	[ -c /dev/fuse ] || skip "/dev/fuse is missing (no FUSE in this environment)"
	command -v fusermount3 >/dev/null || skip "fusermount3 is not installed (apt-get install fuse3)"
	[ -x "$S3PIPE" ] || fail "binary under test not found: $S3PIPE"
}

require_cmd() {	# CMD [WHY]
	command -v "$1" >/dev/null || fail "$1 is required${2:+ ($2)}"
}

# ---- cleanup ----

cleanup() {
	local rc=$? mp p
	trap - EXIT INT TERM HUP
	set +e
	if [ -n "$WATCHDOG_PID" ]; then
		kill "$WATCHDOG_PID" 2>/dev/null
		wait "$WATCHDOG_PID" 2>/dev/null
	fi
	if [ -s "$TEST_TMP/mounts" ]; then
		while IFS= read -r mp; do
			for p in $(daemon_pids "$mp"); do track_pid "$p"; done
			if is_mounted "$mp"; then
				fusermount3 -u -z "$mp" 2>/dev/null || umount -l "$mp" 2>/dev/null
			fi
		done < <(tac "$TEST_TMP/mounts")
	fi
	local live
	live=$(tracked_pids)
	for p in $live; do
		kill -TERM "$p" 2>/dev/null
	done
	for p in $live; do
		wait_pids_gone 3 "$p" || kill -KILL "$p" 2>/dev/null
	done
	if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ] && [ -s "$TEST_TMP/s3server.err" ]; then
		note "S3 server stderr:"
		tail -n 20 "$TEST_TMP/s3server.err" >&2
	fi
	s3_stop
	if [ -n "${CLEANUP_HOOK:-}" ]; then
		eval "$CLEANUP_HOOK"
	fi
	if [ "${S3PIPE_KEEP_TMP:-0}" = 1 ]; then
		note "kept $TEST_TMP"
	else
		rm -rf "$TEST_TMP"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# Tear a hung test down: unmount and kill its daemons so blocked reads
# return, then stop the test.
watchdog() {
	local main=$1 end=$((SECONDS + S3PIPE_TEST_TIMEOUT)) mp
	while kill -0 "$main" 2>/dev/null; do
		if [ "$SECONDS" -ge "$end" ]; then
			printf 'FAIL: %s: timed out after %s s\n' "$TEST_NAME" "$S3PIPE_TEST_TIMEOUT" >&2
			while IFS= read -r mp; do
				for p in $(daemon_pids "$mp"); do kill -KILL "$p" 2>/dev/null; done
				fusermount3 -u -z "$mp" 2>/dev/null
			done <"$TEST_TMP/mounts"
			kill -TERM "$main" 2>/dev/null
			return
		fi
		sleep 1
	done
}
watchdog $$ </dev/null >/dev/null 2>&2 &
WATCHDOG_PID=$!
