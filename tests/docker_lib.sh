# shellcheck shell=bash
# Shared code for the tests of s3pipe-docker-plugin (sourced after lib.sh).
#
#   S3PIPE_DOCKER_PLUGIN  the plugin under test (default: next to $S3PIPE)
#
# plugin_start runs the plugin in the background on $PLUGIN_SOCK with its
# state in $PLUGIN_STATE and its log appended to $PLUGIN_LOG, and waits
# until it answers; plugin_stop sends SIGTERM and checks that it exits 0.
# plugin_call ENDPOINT JSON posts to it with curl --unix-socket, prints the
# body and sets PLUGIN_STATUS to the HTTP status (so: not in $(...)).  The cleanup (hooked into
# lib.sh's) stops the plugin and unmounts and stops every volume's daemon
# left under $PLUGIN_STATE/mounts; the plugin is not in lib.sh's list of
# pids, so that a hook run before it (a Docker daemon's clean-up) can still
# reach it.

: "${S3PIPE_DOCKER_PLUGIN:=$(dirname "$S3PIPE")/s3pipe-docker-plugin}"
PLUGIN_PID=
PLUGIN_SOCK=
PLUGIN_STATE="$TEST_TMP/state"
PLUGIN_LOG="$TEST_TMP/plugin.log"
PLUGIN_STATUS=

[ -x "$S3PIPE_DOCKER_PLUGIN" ] || fail "plugin under test not found: $S3PIPE_DOCKER_PLUGIN"

# plugin_start [ARG...]: extra arguments for the plugin
plugin_start() {
	local i
	"$S3PIPE_DOCKER_PLUGIN" --socket "$PLUGIN_SOCK" --state-dir "$PLUGIN_STATE" \
		--s3pipe "$S3PIPE" "$@" </dev/null >>"$PLUGIN_LOG" 2>&1 &
	PLUGIN_PID=$!
	for ((i = 0; i < 300; i++)); do
		if curl -sf --unix-socket "$PLUGIN_SOCK" -X POST \
			http://plugin/Plugin.Activate >/dev/null 2>&1; then
			return 0
		fi
		if ! kill -0 "$PLUGIN_PID" 2>/dev/null; then
			tail -n 5 "$PLUGIN_LOG" >&2
			fail "the plugin exited during start-up"
		fi
		sleep 0.05
	done
	fail "the plugin did not answer on $PLUGIN_SOCK within 15 s"
}

# SIGTERM; it must exit 0 within 10 s
plugin_stop() {
	local rc=0
	[ -n "$PLUGIN_PID" ] || return 0
	kill -TERM "$PLUGIN_PID"
	wait_pids_gone 10 "$PLUGIN_PID" || fail "the plugin did not exit within 10 s of SIGTERM"
	wait "$PLUGIN_PID" || rc=$?
	PLUGIN_PID=
	[ "$rc" -eq 0 ] || fail "the plugin exited $rc after SIGTERM"
}

plugin_call() {	# ENDPOINT [JSON]
	local status
	status=$(curl -sS --unix-socket "$PLUGIN_SOCK" -X POST --max-time 150 \
		-H 'Content-Type: application/json' --data-binary "${2:-}" \
		-o "$TEST_TMP/plugin.resp" -w '%{http_code}' "http://plugin/$1") ||
		fail "curl to $1 failed"
	PLUGIN_STATUS=$status
	cat "$TEST_TMP/plugin.resp"
}

# EXPR, a JavaScript expression over the JSON body `s` (lib.sh's
# json_eval), e.g. 's.Volume.Status.Mounts'
jfield() {	# BODY EXPR
	printf '%s' "$1" | json_eval "$2" 2>/dev/null || fail "not JSON: $1"
}

# plugin_ok ENDPOINT JSON: the call must answer 200 with an empty Err
# (when there is an Err); prints the body
plugin_ok() {
	local out err
	plugin_call "$1" "${2:-}" >/dev/null
	out=$(cat "$TEST_TMP/plugin.resp")
	err=$(jfield "$out" 's.Err || ""')
	[ "$PLUGIN_STATUS" = 200 ] || fail "$1 $2: HTTP $PLUGIN_STATUS: $out"
	[ -z "$err" ] || fail "$1 $2: Err: $err"
	printf '%s\n' "$out"
}

# plugin_err STATUS ENDPOINT JSON NEEDLE: the call must answer STATUS with
# an Err holding NEEDLE (fixed string, case-insensitive)
plugin_err() {
	local out err
	plugin_call "$2" "${3:-}" >/dev/null
	out=$(cat "$TEST_TMP/plugin.resp")
	err=$(jfield "$out" 's.Err || ""')
	[ "$PLUGIN_STATUS" = "$1" ] || fail "$2 $3: expected HTTP $1, got $PLUGIN_STATUS: $out"
	[ -n "$err" ] || fail "$2 $3: expected an Err holding '$4', got: $out"
	printf '%s' "$err" | grep -Fqi -- "$4" || fail "$2 $3: Err '$err' does not mention '$4'"
	note "ok: $2 refused: $err"
}

# The pid of the s3pipe daemon serving MOUNTPOINT, or nothing.
daemon_of() {	# MOUNTPOINT
	daemon_pids "$1" | head -n1
}

plugin_cleanup() {	# EXIT_STATUS
	local mp p pids=() more
	if [ -n "$PLUGIN_PID" ]; then
		kill -TERM "$PLUGIN_PID" 2>/dev/null
		wait_pids_gone 10 "$PLUGIN_PID" || kill -KILL "$PLUGIN_PID" 2>/dev/null
	fi
	for mp in "$PLUGIN_STATE"/mounts/*; do
		[ -d "$mp" ] || continue
		mapfile -t more < <(daemon_pids "$mp")
		pids+=("${more[@]}")
		if is_mounted "$mp"; then
			fusermount3 -u -z "$mp" 2>/dev/null || umount -l "$mp" 2>/dev/null
		fi
	done
	for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do
		wait_pids_gone 5 "$p" || kill -KILL "$p" 2>/dev/null
	done
	[ -z "$PLUGIN_SOCK" ] || rm -f "$PLUGIN_SOCK"
	if [ "${1:-0}" -ne 0 ] && [ -s "$PLUGIN_LOG" ]; then
		note "plugin log (last lines):"
		tail -n 20 "$PLUGIN_LOG" >&2
	fi
}
CLEANUP_HOOK='plugin_cleanup "$rc"'
