# tests/s3server/start.sh: start and stop the local S3 server (server.js, the
# verifying front in front of s3rver), for the tests (tests/lib.sh), the
# benchmark (contrib/bench, contrib/bench-listing) and contrib/quickstart.
# Sourced, never run; bash.  Defines:
#
# s3server_install DIR [COPY_DIR]
#     Makes sure s3rver is installed in DIR/node_modules (npm ci, or npm
#     install where DIR has no package-lock.json), one npm at a time per
#     directory (flock: tests start servers in parallel).  Where DIR cannot
#     be written (a read-only source tree, make distcheck) and COPY_DIR is
#     given, server.js and the package files are copied there and installed
#     there instead.  Prints the directory that holds server.js and its
#     node_modules.  Returns 1, with a message on stderr, when node or npm is
#     missing or npm fails.
#
# s3server_start --log PREFIX [--js FILE] [--timeout SECONDS] [--pin CPUS]
#                [--] SERVER_ARGS...
#     Starts node FILE SERVER_ARGS... in the background (a child of the
#     calling shell) and waits until it prints its ready line.
#       --js FILE      the server (default: server.js beside this file)
#       --log PREFIX   its stdout goes to PREFIX.out (truncated), its stderr
#                      is appended to PREFIX.err (required)
#       --timeout S    how long to wait for the ready line (default 30)
#       --pin CPUS     run it on those CPUs only (taskset -c CPUS)
#     SERVER_ARGS are server.js's own (--dir DIR, --port PORT: 0 or none
#     for a free one, --tls-cert/--tls-key, --synthetic B=N, ...; see the
#     top of server.js).  Node runs with
#     NODE_OPTIONS=--openssl-legacy-provider where it knows the flag, so
#     that s3rver's continuation tokens work and the pid is the server
#     itself (else server.js re-executes node with that flag as its child).
#     Sets S3SERVER_PID, S3SERVER_URL (http[s]://ADDRESS:PORT),
#     S3SERVER_PORT, S3SERVER_CREDS_URL (the credential mocks' URL, or
#     empty) and S3SERVER_LOG (PREFIX).  Returns 0 once ready; 1 when the
#     server exited during start-up; 2 when it was not ready in time (it is
#     then stopped).  On 1 and 2 S3SERVER_PID is empty and PREFIX.err says
#     why.
#
# s3server_stop [PID]
#     Stops the server (default S3SERVER_PID): SIGTERM, up to 5 s for it
#     to exit, then SIGKILL; reaps it.  Does nothing for an empty PID.

S3SERVER_HOME="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
S3SERVER_PID='' S3SERVER_URL='' S3SERVER_PORT='' S3SERVER_CREDS_URL='' S3SERVER_LOG=''

s3server_install() {
	local src="$1" dir="$1" lock f
	command -v node >/dev/null 2>&1 || {
		echo "s3server: node is required for the local S3 server (apt-get install nodejs npm)" >&2
		return 1
	}
	if [ -f "$src/node_modules/s3rver/package.json" ]; then
		printf '%s\n' "$src"
		return 0
	fi
	if [ ! -w "$src" ] && [ -n "${2:-}" ]; then
		dir="$2"
		mkdir -p "$dir" || return 1
	fi
	command -v npm >/dev/null 2>&1 || {
		echo "s3server: npm is required to install the local S3 server (apt-get install npm)" >&2
		return 1
	}
	lock="${TMPDIR:-/tmp}/s3pipe-npm-$(id -u)-$(printf '%s' "$dir" | sha256sum | cut -c1-16).lock"
	(
		if command -v flock >/dev/null 2>&1; then
			flock -w 300 9 || { echo "s3server: timed out waiting for $lock" >&2; exit 1; }
		fi
		[ ! -f "$dir/node_modules/s3rver/package.json" ] || exit 0
		if [ "$dir" != "$src" ]; then
			for f in server.js package.json package-lock.json .npmrc; do
				[ ! -f "$src/$f" ] || cp "$src/$f" "$dir/" || exit 1
			done
		fi
		echo "s3server: installing s3rver in $dir (npm)" >&2
		if [ -f "$dir/package-lock.json" ]; then
			(cd "$dir" && npm ci --no-audit --no-fund --loglevel=error) >&2
		else
			(cd "$dir" && npm install --no-audit --no-fund --loglevel=error) >&2
		fi || { echo "s3server: npm failed in $dir" >&2; exit 1; }
	) 9>"$lock" || return 1
	[ -f "$dir/node_modules/s3rver/package.json" ] || {
		echo "s3server: s3rver missing in $dir/node_modules" >&2
		return 1
	}
	printf '%s\n' "$dir"
}

s3server_start() {
	local js="$S3SERVER_HOME/server.js" log="" timeout=30 i
	local -a pin=() node_opts=()
	while [ $# -gt 0 ]; do
		case "$1" in
		--js) js="$2"; shift 2 ;;
		--log) log="$2"; shift 2 ;;
		--timeout) timeout="$2"; shift 2 ;;
		--pin) pin=(taskset -c "$2"); shift 2 ;;
		--) shift; break ;;
		*) break ;;
		esac
	done
	S3SERVER_PID='' S3SERVER_URL='' S3SERVER_PORT='' S3SERVER_CREDS_URL=''
	[ -n "$log" ] || { echo "s3server_start: --log PREFIX is required" >&2; return 1; }
	S3SERVER_LOG="$log"
	node --openssl-legacy-provider --version >/dev/null 2>&1 &&
		node_opts=(env "NODE_OPTIONS=--openssl-legacy-provider${NODE_OPTIONS:+ $NODE_OPTIONS}")
	: >"$log.out" # no ready line of an earlier start may be read
	"${pin[@]}" "${node_opts[@]}" node "$js" "$@" >"$log.out" 2>>"$log.err" </dev/null &
	S3SERVER_PID=$!
	for ((i = 0; i < timeout * 20; i++)); do
		S3SERVER_URL="$(sed -n 's/^ready \([^ ]*\).*/\1/p' "$log.out" 2>/dev/null | head -n 1)"
		[ -n "$S3SERVER_URL" ] && break
		if ! kill -0 "$S3SERVER_PID" 2>/dev/null; then
			wait "$S3SERVER_PID" 2>/dev/null || true
			S3SERVER_PID=
			return 1
		fi
		sleep 0.05
	done
	if [ -z "$S3SERVER_URL" ]; then
		echo "s3server: not ready after $timeout s" >>"$log.err"
		s3server_stop
		return 2
	fi
	S3SERVER_PORT="${S3SERVER_URL##*:}"
	S3SERVER_CREDS_URL="$(sed -n 's/^ready .* credentials \([^ ]*\).*/\1/p' "$log.out" | head -n 1)"
	return 0
}

s3server_stop() {
	local pid="${1:-$S3SERVER_PID}" i
	[ -n "$pid" ] || return 0
	kill -TERM "$pid" 2>/dev/null || true
	for ((i = 0; i < 100; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	! kill -0 "$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	[ "$pid" != "$S3SERVER_PID" ] || S3SERVER_PID=
}
