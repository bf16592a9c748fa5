# contrib/bench.d/lib.sh: what contrib/bench's scenarios share.  Sourced by
# contrib/bench after its command line is read; then every scenario file
# contrib/bench.d/X-NAME.sh, which defines functions named after its letter
# X, each optional, that contrib/bench calls in phases, every wanted
# scenario in turn:
#   X_needs     checks the commands it needs (before the build)
#   X_seed      generates its objects and adds their uploads to
#               $T/put.cfg (one parallel curl uploads them all)
#   X_run       measures, printing as it goes
#   X_summary   its lines of the summary
#   X_targets   its PASS/FAIL lines
# and the scenario's own helpers, sizes (from $quick) and results.  The
# helpers below: the result store, mounting and measuring each FUSE tool
# and curl, seeding, time to first byte, and the summary's rows.
#
# Globals from contrib/bench: prog, quick, runs, skip, want_scen,
# want_tool, repo, s3pipe_bin, convert_bin, fusermount, time_bin,
# clk_tck, ncpu, T (the temp dir), sleep_fd, server_pid, fastget_pid (nginx
# with --server fast, else empty), URL (nginx's with --server fast, else
# the test server's), notes, broken, pids and mounts (what cleanup undoes).

CACHE_SIZE="${S3PIPE_CACHE_SIZE:-256M}"
BUCKET=bench
# s3rver's built-in key, which every tool signs with
KEY_ID=S3RVER SECRET=S3RVER REGION=us-east-1
EMPTY_SHA256=e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
READ_TIMEOUT=600

die() { echo "$prog: $*" >&2; exit 1; }
need() { command -v "$1" >/dev/null 2>&1 || die "$1 is not installed${2:+ ($2)}"; }
# is_mounted DIR: also true for a dead FUSE mount, which fails mountpoint(1)
is_mounted() { awk -v m="$1" '$2 == m { f = 1 } END { exit !f }' /proc/mounts; }
# cleanup: the EXIT trap: unmounts, stops the daemons and the server,
# removes T
cleanup() {
	local m p i
	[ "$BASHPID" = "$main_pid" ] || return 0 # never in a subshell
	trap - EXIT INT TERM
	for m in "${mounts[@]}"; do
		if is_mounted "$m"; then
			$fusermount -u "$m" 2>/dev/null || $fusermount -uz "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
		fi
	done
	for p in "${pids[@]}"; do
		kill -0 "$p" 2>/dev/null || continue
		kill "$p" 2>/dev/null
	done
	for p in "${pids[@]}"; do
		for i in 1 2 3 4 5 6 7 8 9 10; do
			kill -0 "$p" 2>/dev/null || break
			sleep 0.2
		done
		kill -0 "$p" 2>/dev/null && kill -9 "$p" 2>/dev/null
	done
	fastget_stop "$fastget_pid"
	s3server_stop "$server_pid"
	for m in "${mounts[@]}"; do
		is_mounted "$m" && { echo "$prog: $m is still mounted: leaving $T" >&2; return; }
	done
	rm -rf "$T"
}
broke() { echo "$prog: ERROR: $*" >&2; broken=1; notes+=("ERROR: $*"); }
# A sleep that does not fork: read with a timeout on a fifo nobody writes
# (contrib/bench opens it as sleep_fd).
nap() { read -r -t "$1" -u "$sleep_fd" _ 2>/dev/null || true; }

now() { echo "$EPOCHREALTIME"; }
calc() { awk "BEGIN { x = $1; printf \"%.${2:-3}f\", x }"; }
# timed NAME CMD...: runs CMD with its stderr in $T/NAME.err and its user
# and system CPU seconds in $T/NAME.time; T0 and T1: the clock around it;
# returns CMD's status
timed() {
	local name="$1" rc
	shift
	TIMEFORMAT='%U %S'
	T0=$(now)
	{ time "$@" 2>"$T/$name.err"; } 2>"$T/$name.time"
	rc=$?
	T1=$(now)
	return $rc
}
# rate BYTES NAME: after timed NAME, SECS (T1 - T0), MBPS (BYTES over it)
# and CPU (CPU seconds per GiB of BYTES)
rate() {
	local u s
	read -r u s <"$T/$2.time"
	SECS="$(calc "$T1 - $T0" 6)"
	MBPS="$(calc "$1 / $SECS / 1e6" 1)"
	CPU="$(calc "($u + $s) / ($1 / 1073741824)" 2)"
}
# host_cpu: "BUSY TOTAL", the jiffies every CPU of the host has spent busy
# and in all (/proc/stat); host_busy A B: the CPUs busy on average between
# two such readings (of ncpu): near ncpu, the host's CPU was the bound
host_cpu() { awk '/^cpu / { t = 0; for (i = 2; i <= NF; i++) t += $i; print t - $5 - $6, t; exit }' /proc/stat; }
host_busy() {
	local b0 t0 b1 t1
	read -r b0 t0 <<<"$1"
	read -r b1 t1 <<<"$2"
	[ "$t1" -gt "$t0" ] || { echo "-"; return; }
	calc "($b1 - $b0) / ($t1 - $t0) * $ncpu" 2
}
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
mib() { calc "$1 / 1048576" "${2:-1}"; }
# size_bytes SIZE: 256M, 2G ... in bytes
size_bytes() {
	awk -v s="$1" 'BEGIN { n = s + 0; u = toupper(substr(s, length(s)))
		if (u == "K") n *= 1024; else if (u == "M") n *= 1048576
		else if (u == "G") n *= 1073741824; else if (u == "T") n *= 1099511627776
		printf "%d", n }'
}

# ---- seeding ----
# gen DIR COUNT SIZE: COUNT random files obj-00000.. of SIZE bytes in DIR.
gen() {
	mkdir -p "$1"
	head -c $(($2 * $3)) /dev/urandom | (cd "$1" && split -b "$3" -a 5 -d - obj-) ||
		die "cannot generate test data in $1"
}
# put_cfg DIR PREFIX [NEST]: curl config lines uploading DIR/* to PREFIX/, or
# with NEST to PREFIX/NNN/ in groups of NEST objects.
put_cfg() {
	local f key n
	for f in "$1"/obj-*; do
		key="${f##*/}"
		if [ -n "${3:-}" ]; then
			n="${key#obj-}"
			printf -v key '%03d/%s' $((10#$n / $3)) "$key"
		fi
		printf 'upload-file = "%s"\nurl = "%s/%s/%s/%s"\noutput = "/dev/null"\n' \
			"$f" "$URL" "$BUCKET" "$2" "$key"
	done
}

# ---- result store ----
declare -A R # R[scen.tool.mbps|cpu|rss|how]
rec() { R["$1.$2.mbps"]="$3"; R["$1.$2.cpu"]="$4"; R["$1.$2.rss"]="$5"; R["$1.$2.how"]="${6:-}"; }
# keep the run with the best throughput
rec_best() {
	local old="${R["$1.$2.mbps"]:-}"
	if [ -z "$old" ] || awk "BEGIN { exit !($3 > $old) }"; then rec "$@"; fi
}
s3pipe_peak_kb=0

# ---- FUSE daemons ----
# proc_family PID: PID and its children (s3pipe's keeper and the worker
# serving its mount; another tool's one process)
proc_family() {
	echo "$1"
	tr ' ' '\n' <"/proc/$1/task/$1/children" 2>/dev/null | grep . || true
}
proc_cpu_ticks() { # PID -> utime+stime in ticks, its children's included
	local s p sum=0
	for p in $(proc_family "$1"); do
		s="$(cat "/proc/$p/stat" 2>/dev/null)" || continue
		s="${s##*) }"
		set -- $s
		sum=$((sum + ${12} + ${13}))
	done
	echo "$sum"
}
# proc_hwm_kb PID -> the largest peak RSS of PID and its children (s3pipe's
# worker, not its keeper)
proc_hwm_kb() {
	local p
	for p in $(proc_family "$1"); do
		awk '/^VmHWM:/ { print $2 }' "/proc/$p/status" 2>/dev/null
	done | sort -n | tail -n 1
}

# proc_state PID: the state letter (R, S, D, Z, ...) or nothing when gone
proc_state() {
	local s
	s="$(cat "/proc/$1/stat" 2>/dev/null)" || return 0
	s="${s##*) }"
	echo "${s%% *}"
}

# unmount_wait MNT PID: unmount, wait for the daemon to exit; sets DAEMON_EXIT
# to its exit status, or to "killed" when it had to be killed.
unmount_wait() {
	local i killed=0
	$fusermount -u "$1" 2>/dev/null || { nap 0.2; $fusermount -u "$1" 2>/dev/null; } ||
		$fusermount -uz "$1" 2>/dev/null
	for i in $(seq 100); do
		[ "$(proc_state "$2")" = Z ] && break
		kill -0 "$2" 2>/dev/null || break
		nap 0.05
	done
	if [ -n "$(proc_state "$2")" ] && [ "$(proc_state "$2")" != Z ]; then
		killed=1
		kill "$2" 2>/dev/null
		nap 0.5
		kill -9 "$2" 2>/dev/null
	fi
	wait "$2" 2>/dev/null
	DAEMON_EXIT=$?
	[ $killed = 1 ] && DAEMON_EXIT=killed
	return 0
}

# daemon_ok WHAT TOOL: reports a daemon that died before unmount, crashed or
# had to be killed (from ALIVE and DAEMON_EXIT)
daemon_ok() {
	local why=""
	if [ "$DAEMON_EXIT" = killed ]; then
		why="did not exit after unmount and was killed"
	elif [ "$DAEMON_EXIT" -gt 128 ] 2>/dev/null; then
		why="died of signal $((DAEMON_EXIT - 128)) ($(kill -l $((DAEMON_EXIT - 128)) 2>/dev/null))"
		[ "$ALIVE" = 1 ] && why="$why at unmount" || why="$why before unmount"
	elif [ "$DAEMON_EXIT" != 0 ]; then
		why="exited with status $DAEMON_EXIT"
	elif [ "$ALIVE" != 1 ]; then
		why="exited before unmount"
	fi
	[ -z "$why" ] && return 0
	broke "$1 $2 $why: $(tail -n 3 "$LOG" | tr '\n' ' ')"
	return 1
}

# wait_ready MNT PID FILE [STEP]: wait until the mount answers (FILE exists
# below it, or for peers simply the mount), polling every STEP seconds (default
# 0.01), at most 30 s; fails if the daemon died.
wait_ready() {
	local step="${4:-0.01}" t_end
	t_end=$((${EPOCHREALTIME%.*} + 30))
	while :; do
		if [ -n "$3" ]; then
			[ -e "$1/$3" ] && return 0
		else
			mountpoint -q "$1" && return 0
		fi
		kill -0 "$2" 2>/dev/null || return 1
		[ "${EPOCHREALTIME%.*}" -lt $t_end ] || return 1
		nap "$step"
	done
}

mount_seq=0
new_mnt() {
	mount_seq=$((mount_seq + 1))
	MNT="$T/mnt/$1.$mount_seq"
	mkdir -p "$MNT"
	mounts+=("$MNT")
}

# start_daemon TOOL PREFIX NAME: mounts a fresh MNT in the foreground in the
# background; sets DPID, MNT, LOG.  For s3pipe, S3PIPE_OPTS adds options
# (channel options such as --shuffle-seed) and S3PIPE_CACHE replaces the
# cache size.  PEER_CACHE_DIR gives s3fs and rclone a disk cache there:
# s3fs -o use_cache=DIR, rclone --vfs-cache-mode full with
# --vfs-cache-max-size PEER_CACHE_SIZE.
start_daemon() {
	local tool="$1" prefix="$2" name="$3"
	local -a s3fs_cache=() rclone_cache=(--cache-dir "$T/rclone-cache" --vfs-cache-mode off)
	if [ -n "${PEER_CACHE_DIR:-}" ]; then
		s3fs_cache=(-o "use_cache=$PEER_CACHE_DIR")
		rclone_cache=(--cache-dir "$PEER_CACHE_DIR" --vfs-cache-mode full --vfs-cache-max-size "$PEER_CACHE_SIZE")
	fi
	new_mnt "$tool"
	LOG="$T/$tool.$mount_seq.log"
	case "$tool" in
	s3pipe)
		# shellcheck disable=SC2086
		env -u AWS_SESSION_TOKEN -u AWS_PROFILE \
			AWS_ACCESS_KEY_ID="$KEY_ID" AWS_SECRET_ACCESS_KEY="$SECRET" AWS_REGION="$REGION" \
			"$s3pipe_bin" -f --endpoint-url "$URL" --cache-size "${S3PIPE_CACHE:-$CACHE_SIZE}" \
			${S3PIPE_EXTRA_ARGS:-} ${S3PIPE_OPTS:-} "$name=s3://$BUCKET/$prefix/" "$MNT" >"$LOG" 2>&1 &
		;;
	s3fs)
		# Settings a user tuning s3fs for reads would pick: parallel ranged
		# GETs for large objects, many parallel HEADs for listings, a stat
		# cache as big as the listing, no probing for other directory forms.
		s3fs "$BUCKET:/$prefix" "$MNT" -f \
			-o "ro,url=$URL,use_path_request_style,passwd_file=$T/s3fs.passwd" \
			-o parallel_count=16,multipart_size=8,multireq_max=32 \
			-o max_stat_cache_size=100000,enable_noobj_cache,notsup_compat_dir \
			-o "tmpdir=$T/s3fs-tmp" "${s3fs_cache[@]}" >"$LOG" 2>&1 &
		;;
	rclone)
		env -u AWS_CA_BUNDLE rclone --config "$T/rclone.conf" "${rclone_cache[0]}" "${rclone_cache[1]}" \
			mount "s3r:$BUCKET/$prefix" "$MNT" --read-only "${rclone_cache[@]:2}" \
			--no-modtime --no-checksum --max-read-ahead 1M --log-level NOTICE >"$LOG" 2>&1 &
		;;
	esac
	DPID=$!
	pids+=("$DPID")
}
# peer_configs: s3fs's password file and rclone's configuration for URL
peer_configs() {
	printf '%s:%s\n' "$KEY_ID" "$SECRET" >"$T/s3fs.passwd"
	chmod 600 "$T/s3fs.passwd"
	mkdir -p "$T/s3fs-tmp" "$T/rclone-cache"
	cat >"$T/rclone.conf" <<EOF
[s3r]
type = s3
provider = Other
env_auth = false
access_key_id = $KEY_ID
secret_access_key = $SECRET
endpoint = $URL
force_path_style = true
EOF
}

# dd_bytes FILE: bytes copied, from dd's stderr
dd_bytes() { awk '/bytes/ && /copied/ { b = $1 } END { print b + 0 }' "$1"; }

# measure_fuse SCEN TOOL PREFIX EXPECTED_BYTES: with FUSE_SLOT the result
# is kept under that name instead of TOOL, FUSE_LABEL is printed after the
# time, PAYLOAD (bytes) replaces the bytes read in MB/s and CPU s per GiB
# (framing not counted); S3PIPE_OPTS and S3PIPE_CACHE go to start_daemon.
# FUSE_E2E=1 also times the mount (command start to the last byte): printed,
# kept as R[SCEN.SLOT.e2e] and in E2E_MBPS.
measure_fuse() {
	local scen="$1" tool="$2" prefix="$3" expect="$4" ready="" tm t0 t1 h0 h1 ticks kb bytes rc secs cmd
	[ "$tool" = s3pipe ] && ready="${scen}_0"
	tm=$(now)
	start_daemon "$tool" "$prefix" "$scen"
	if ! wait_ready "$MNT" "$DPID" "$ready"; then
		broke "($scen) $tool did not mount: $(tail -n 3 "$LOG" | tr '\n' ' ')"
		unmount_wait "$MNT" "$DPID"
		return 1
	fi
	if [ "$tool" = s3pipe ]; then
		cmd="dd if=$(printf %q "$MNT/${scen}_0") of=/dev/null bs=1M"
	else
		cmd="set -o pipefail; cd $(printf %q "$MNT") && LC_ALL=C ls -1 | xargs -d '\n' cat | dd of=/dev/null bs=1M"
	fi
	h0="$(host_cpu)"
	t0=$(now)
	timeout -k 5 $READ_TIMEOUT bash -c "$cmd" 2>"$T/dd.err"
	rc=$?
	t1=$(now)
	h1="$(host_cpu)"
	ticks="$(proc_cpu_ticks "$DPID")"
	kb="$(proc_hwm_kb "$DPID")"
	ALIVE=0
	case "$(proc_state "$DPID")" in '' | Z) ;; *) ALIVE=1 ;; esac
	unmount_wait "$MNT" "$DPID"
	bytes="$(dd_bytes "$T/dd.err")"
	if [ $rc -ne 0 ] || [ "$bytes" != "$expect" ]; then
		broke "($scen) $tool read $bytes of $expect bytes (exit $rc): $(grep -v -e records -e copied "$T/dd.err" | tail -n 2 | tr '\n' ' ')$(tail -n 2 "$LOG" | tr '\n' ' ')"
		daemon_ok "($scen)" "$tool"
		return 1
	fi
	# The bytes all arrived: keep the throughput even if the daemon then
	# crashed (reported as an error); its CPU time and peak RSS are lost.
	daemon_ok "($scen)" "$tool"
	secs="$(calc "$t1 - $t0" 6)"
	local mbps cpu="-" rss="-" counted="${PAYLOAD:-$bytes}" e2e=""
	mbps="$(calc "$counted / $secs / 1e6" 1)"
	[ -n "$ticks" ] && cpu="$(calc "($ticks / $clk_tck) / ($counted / 1073741824)" 2)"
	[ -n "$kb" ] && rss="$(calc "$kb / 1024" 1)"
	if [ -n "${FUSE_E2E:-}" ]; then
		E2E_MBPS="$(calc "$counted / ($t1 - $tm) / 1e6" 1)"
		e2e="; mount included: $(calc "$t1 - $tm" 2) s, $E2E_MBPS MB/s"
		local old="${R["$scen.${FUSE_SLOT:-$tool}.e2e"]:-}"
		if [ -z "$old" ] || awk "BEGIN { exit !($E2E_MBPS > $old) }"; then
			R["$scen.${FUSE_SLOT:-$tool}.e2e"]="$E2E_MBPS"
		fi
	fi
	printf '  %-7s %9s MB/s  %7s CPU s/GiB  %7s MiB peak RSS  (%s s%s%s; the host %s of %s CPUs busy)\n' \
		"$tool" "$mbps" "$cpu" "$rss" "$(calc "$secs" 2)" "${FUSE_LABEL:+, $FUSE_LABEL}" "$e2e" "$(host_busy "$h0" "$h1")" "$ncpu"
	rec_best "$scen" "${FUSE_SLOT:-$tool}" "$mbps" "$cpu" "$rss" "${FUSE_LABEL:-}"
	[ "$tool" = s3pipe ] && S3PIPE_MBPS="$mbps" S3PIPE_CPU="$cpu"
	FUSE_CPU="$cpu" FUSE_SECS="$secs"
	# the memory target is for the default cache size
	if [ "$tool" = s3pipe ] && [ -z "${S3PIPE_CACHE:-}" ] && [ "${kb:-0}" -gt "$s3pipe_peak_kb" ]; then
		s3pipe_peak_kb="$kb"
	fi
	return 0
}

# measure_curl SCEN LABEL PARALLEL CFG EXPECTED_BYTES: also the server's
# CPU seconds per GiB over the sample (server_ticks: s3rver, and nginx with
# --server fast), kept in SERVER_CPU[SCEN] for the summary
declare -A SERVER_CPU=()
measure_curl() {
	local scen="$1" label="$2" par="$3" cfg="$4" expect="$5" bytes rc kb="" rss="-" st0 st1 scpu h0 h1
	local -a wrap=()
	[ -n "$time_bin" ] && wrap=("$time_bin" -f %M -o "$T/curl.rss")
	rm -f "$T/curl.rss"
	st0="$(server_ticks)" h0="$(host_cpu)"
	timed curl "${wrap[@]}" curl -sS --no-progress-meter --fail --parallel --parallel-max "$par" \
		-w '%{size_download}\n' -K "$cfg" >"$T/curl.sizes"
	rc=$?
	h1="$(host_cpu)" st1="$(server_ticks)"
	bytes="$(awk '{ s += $1 } END { printf "%d", s }' "$T/curl.sizes")"
	if [ $rc -ne 0 ] || [ "$bytes" != "$expect" ]; then
		broke "($scen) curl $label read $bytes of $expect bytes (exit $rc): $(tail -n 2 "$T/curl.err" | tr '\n' ' ')"
		return 1
	fi
	[ -s "$T/curl.rss" ] && kb="$(tail -n 1 "$T/curl.rss")"
	rate "$bytes" curl
	[ -n "$kb" ] && rss="$(calc "$kb / 1024" 1)"
	scpu="$(calc "($st1 - $st0) / $clk_tck / ($bytes / 1073741824)" 2)"
	SERVER_CPU[$scen]="${SERVER_CPU[$scen]:-} $scpu"
	printf '  %-7s %9s MB/s  %7s CPU s/GiB  %7s MiB peak RSS  (%s s, %s; the server %s CPU s/GiB; the host %s of %s CPUs busy)\n' \
		curl "$MBPS" "$CPU" "$rss" "$(calc "$SECS" 2)" "$label" "$scpu" "$(host_busy "$h0" "$h1")" "$ncpu"
	rec_best "$scen" "${CURL_SLOT:-curl}" "$MBPS" "$CPU" "$rss" "$label"
	[ "${CURL_SLOT:-}" = curlanon ] || rec_best "$scen" curlany "$MBPS" "$CPU" "$rss" "$label"
	LAST_MBPS="$MBPS"
}

# calibrate_curl SCEN EXPECTED_BYTES LABEL PARALLEL CFG [LABEL PARALLEL CFG
# ...]: measures every curl setting once and keeps the fastest (CURL_BEST)
# as the limit that the runs then measure side by side with the FUSE tools:
# each tool gets the same number of samples, so the best of many curl
# settings and runs does not stand against the best of a few s3pipe runs.
calibrate_curl() {
	local scen="$1" expect="$2" i bestv=0
	shift 2
	CURL_L=() CURL_P=() CURL_C=() CURL_BEST=-1
	while [ $# -ge 3 ]; do
		CURL_L+=("$1") CURL_P+=("$2") CURL_C+=("$3")
		shift 3
	done
	echo "  calibration: every curl setting once, the fastest is the limit"
	for i in "${!CURL_L[@]}"; do
		CURL_SLOT=calib measure_curl "$scen" "${CURL_L[$i]}" "${CURL_P[$i]}" "${CURL_C[$i]}" "$expect" || continue
		if awk "BEGIN { exit !($LAST_MBPS > $bestv) }"; then
			CURL_BEST=$i bestv="$LAST_MBPS"
		fi
	done
	[ $CURL_BEST -ge 0 ] && echo "  the limit: curl with ${CURL_L[$CURL_BEST]}"
}

# measure_curl_limit SCEN EXPECTED_BYTES: one run of the calibrated setting
measure_curl_limit() {
	[ "${CURL_BEST:--1}" -ge 0 ] || return 1
	measure_curl "$1" "${CURL_L[$CURL_BEST]}" "${CURL_P[$CURL_BEST]}" "${CURL_C[$CURL_BEST]}" "$2"
}
# measure_curl_anon SCEN EXPECTED_BYTES: the same setting with unsigned
# requests, for reference only (the test server verifies every signed
# request, about 22 us each, and passes anonymous ones: the difference is
# curl's signing plus the server's check)
measure_curl_anon() {
	[ "${CURL_BEST:--1}" -ge 0 ] || return 1
	CURL_SLOT=curlanon measure_curl "$1" "${CURL_L[$CURL_BEST]}, unsigned" "${CURL_P[$CURL_BEST]}" \
		"${CURL_C[$CURL_BEST]}.anon" "$2"
}
# curl_cfgs FILE PREFIX COUNT SIZE PART: FILE signed and FILE.anon unsigned
curl_cfgs() {
	local out="$1"
	shift
	get_cfg "$@" >"$out" && get_cfg "$@" anon >"$out.anon"
}

# get_cfg PREFIX COUNT SIZE PART [anon]: GETs of every object, whole (PART=0)
# or in ranges of PART bytes, signed with SigV4 like every other tool's (the
# same headers s3pipe signs), or unsigned with "anon".
get_cfg() {
	local i o key sep="" sign=""
	[ "${5:-}" = anon ] ||
		printf -v sign 'aws-sigv4 = "aws:amz:%s:s3"\nuser = "%s:%s"\nheader = "x-amz-content-sha256: %s"\n' \
			"$REGION" "$KEY_ID" "$SECRET" "$EMPTY_SHA256"
	# whole objects: one operation, so its options are given once
	[ "$4" = 0 ] && printf '%s' "$sign"
	for ((i = 0; i < $2; i++)); do
		printf -v key 'obj-%05d' "$i"
		if [ "$4" = 0 ]; then
			printf 'url = "%s/%s/%s/%s"\noutput = "/dev/null"\n' "$URL" "$BUCKET" "$1" "$key"
		else
			# a range belongs to an operation: one operation (ended by
			# "next") per range, each with the options measure_curl
			# gives on its command line, which apply to the first only
			for ((o = 0; o < $3; o += $4)); do
				printf '%surl = "%s/%s/%s/%s"\nrange = "%d-%d"\noutput = "/dev/null"\n%s' \
					"$sep" "$URL" "$BUCKET" "$1" "$key" "$o" $((o + $4 - 1 < $3 - 1 ? o + $4 - 1 : $3 - 1)) "$sign"
				printf 'silent\nshow-error\nfail\nwrite-out = "%%{size_download}\\n"\n'
				sep="next"$'\n'
			done
		fi
	done
}

# round SCEN PREFIX EXPECTED [pair]: the curl limit, then each FUSE tool,
# once; notes s3pipe/curl of this round (the two ran seconds apart).  A
# pair round runs curl and s3pipe only, and leaves the rows' best figures
# to the full rounds (its samples count in the per-round ratios alone).
declare -A ROUND_RATIOS=()
round() {
	local c_mbps="" c_cpu=""
	S3PIPE_MBPS="" S3PIPE_CPU=""
	if [ "${4:-}" = pair ]; then
		if want_tool curl && CURL_SLOT=curlpair measure_curl_limit "$1" "$3"; then
			c_mbps="${LAST_MBPS:-}" c_cpu="$CPU"
		fi
		FUSE_SLOT=s3pipepair measure_fuse "$1" s3pipe "$2" "$3"
	else
		if want_tool curl && measure_curl_limit "$1" "$3"; then
			c_mbps="${LAST_MBPS:-}" c_cpu="$CPU"
		fi
		want_tool curl && measure_curl_anon "$1" "$3"
		run_peers "$1" "$2" "$3"
	fi
	if [ -n "$c_mbps" ] && [ -n "$S3PIPE_MBPS" ]; then
		ROUND_RATIOS[$1]="${ROUND_RATIOS[$1]:-} $(calc "$S3PIPE_MBPS / $c_mbps" 2)"
	fi
	if [ -n "$c_cpu" ] && [ -n "$S3PIPE_CPU" ] && [ "$S3PIPE_CPU" != - ]; then
		ROUND_CPU_RATIOS[$1]="${ROUND_CPU_RATIOS[$1]:-} $(calc "$S3PIPE_CPU / $c_cpu" 2)"
	fi
}
declare -A ROUND_CPU_RATIOS=()

# rounds SCEN PREFIX EXPECTED: --runs full rounds, then pair rounds up to
# PAIR_ROUNDS in all: a ratio to curl is the median of at least that many
# rounds even when the slow peers run once
PAIR_ROUNDS=3
rounds() {
	local r
	for ((r = 0; r < runs || r < PAIR_ROUNDS; r++)); do
		if ((r < runs)); then
			round "$@"
		elif want_tool curl; then
			round "$@" pair
		fi
	done
}

run_peers() { # SCEN PREFIX EXPECTED: one measurement of each FUSE tool
	local tool
	for tool in s3pipe s3fs rclone; do
		want_tool "$tool" || continue
		measure_fuse "$1" "$tool" "$2" "$3"
		nap 0.3
	done
}

# list_all_ms PREFIX: the server's time to list PREFIX/ completely
list_all_ms() {
	local token="" t0 body
	t0=$(now)
	while :; do
		body="$(curl -sS --fail -G "$URL/$BUCKET" --data-urlencode list-type=2 \
			--data-urlencode "prefix=$1/" --data-urlencode max-keys=1000 \
			${token:+--data-urlencode "continuation-token=$token"})" || return 1
		token="$(printf '%s' "$body" | sed -n 's/.*<NextContinuationToken>\([^<]*\)<.*/\1/p')"
		[ -n "$token" ] || break
	done
	calc "($(now) - $t0) * 1000" 0
}

# ---- time to first byte ((c) and (f)) ----
# ttfb KIND PREFIX: milliseconds to the first byte of c_0 on a fresh mount
# of PREFIX, in TTFB: KIND cold from starting s3pipe (mount included), open
# from open() once mounted.  Errors name the scenario TTFB_SCEN (default
# c); S3PIPE_OPTS go to start_daemon; ttfb_kb is the daemon's peak RSS.
ttfb() {
	local t0 t1 s="${TTFB_SCEN:-c}" step=0.01
	[ "$1" = cold ] && step=0.001
	t0=$(now)
	start_daemon s3pipe "$2" c
	if ! wait_ready "$MNT" "$DPID" c_0 $step; then
		broke "($s) s3pipe did not mount $2: $(tail -n 3 "$LOG" | tr '\n' ' ')"
		unmount_wait "$MNT" "$DPID"
		return 1
	fi
	[ "$1" = open ] && t0=$(now)
	if ! timeout 60 dd if="$MNT/c_0" of=/dev/null bs=1 count=1 status=none 2>"$T/dd.err"; then
		broke "($s) s3pipe first byte of $2 failed: $(cat "$T/dd.err") $(tail -n 2 "$LOG" | tr '\n' ' ')"
		unmount_wait "$MNT" "$DPID"
		return 1
	fi
	t1=$(now)
	ttfb_kb="$(proc_hwm_kb "$DPID")"
	ALIVE=0
	case "$(proc_state "$DPID")" in '' | Z) ;; *) ALIVE=1 ;; esac
	unmount_wait "$MNT" "$DPID"
	daemon_ok "($s) $2:" s3pipe
	TTFB="$(calc "($t1 - $t0) * 1000" 1)"
}
# ttfb_medians KIND OUT [KEY PREFIX OPTS LABEL]...: C_RUNS rounds of ttfb
# KIND on each PREFIX (with S3PIPE_OPTS=OPTS) in turn, so that drift hits
# them alike; then for each, the median into OUT[KIND.KEY] (OUT: the name
# of an associative array) and a line "KIND LABEL MEDIAN ms (runs: ...)"
ttfb_medians() {
	local kind="$1" r i
	local -n _medians="$2"
	local -a key=() prefix=() opts=() label=() vals=()
	shift 2
	while [ $# -ge 4 ]; do
		key+=("$1") prefix+=("$2") opts+=("$3") label+=("$4")
		shift 4
	done
	for ((r = 0; r < C_RUNS; r++)); do
		for i in "${!key[@]}"; do
			TTFB=""
			S3PIPE_OPTS="${opts[$i]}" ttfb "$kind" "${prefix[$i]}" || continue
			vals[$i]="${vals[$i]:-} $TTFB"
			[ "${ttfb_kb:-0}" -gt "$s3pipe_peak_kb" ] && s3pipe_peak_kb="$ttfb_kb"
			nap 0.3 # let the server finish list pages still in flight
		done
	done
	for i in "${!key[@]}"; do
		# shellcheck disable=SC2086
		set -- ${vals[$i]:-}
		[ $# -eq $C_RUNS ] || continue
		_medians["$kind.${key[$i]}"]="$(median "$@")"
		printf '  %-5s %s %8s ms  (runs: %s)\n' "$kind" "${label[$i]}" "${_medians["$kind.${key[$i]}"]}" "$*"
	done
}

# server_ticks: utime+stime of the server and its children (server.js
# re-executes node as its child where NODE_OPTIONS cannot give it
# --openssl-legacy-provider), and of nginx and its workers with --server
# fast
server_ticks() {
	local sum=0 p s
	for p in /proc/[0-9]*; do
		read -r s 2>/dev/null <"$p/stat" || continue
		s="${s##*) }"
		# shellcheck disable=SC2086
		set -- $s
		case " ${p#/proc/} $2 " in
		*" $server_pid "* | *" ${fastget_pid:-none} "*) ;;
		*) continue ;;
		esac
		sum=$((sum + ${12} + ${13}))
	done
	echo "$sum"
}

# ---- summary and targets ----
# peer_rows SCEN: a row per tool (curl, s3pipe, s3fs, rclone), the ratios
# of s3pipe to each, the per-round ratios to curl
peer_rows() {
	local scen="$1"
	for tool in curl s3pipe s3fs rclone; do
		v="${R["$scen.$tool.mbps"]:-}"
		if [ -z "$v" ]; then
			if [ $tool = s3pipe ] || want_tool $tool; then
				printf '%-4s %-7s %10s\n' $scen $tool failed
			fi
			continue
		fi
		printf '%-4s %-7s %10s %12s %14s  %s\n' $scen $tool "$v" "${R["$scen.$tool.cpu"]}" \
			"${R["$scen.$tool.rss"]}" "${R["$scen.$tool.how"]}"
	done
	line="ratios ($scen):"
	for peer in curl s3fs rclone; do
		a="${R["$scen.s3pipe.mbps"]:-}" b="${R["$scen.$peer.mbps"]:-}"
		[ -n "$a" ] && [ -n "$b" ] && line="$line  s3pipe/$peer $(calc "$a / $b" 2)"
	done
	echo "$line"
	if [ -n "${ROUND_RATIOS[$scen]:-}" ]; then
		# shellcheck disable=SC2086
		echo "  per round, s3pipe/curl run seconds apart:${ROUND_RATIOS[$scen]} (median $(median ${ROUND_RATIOS[$scen]}))"
	fi
	if [ -n "${SERVER_CPU[$scen]:-}" ]; then
		# shellcheck disable=SC2086
		echo "  the server's CPU s per GiB curl read, every curl sample:${SERVER_CPU[$scen]} (median $(median ${SERVER_CPU[$scen]}))"
	fi
}
# peer_refs SCEN: s3pipe against curl unsigned and against curl's fastest
# single sample
peer_refs() {
	local scen="$1"
	a="${R["$scen.s3pipe.mbps"]:-}" b="${R["$scen.curlanon.mbps"]:-}"
	[ -n "$a" ] && [ -n "$b" ] &&
		echo "  (curl with the same setting but unsigned requests, as for a public bucket: $b MB/s; s3pipe/that $(calc "$a / $b" 2))"
	a="${R["$scen.s3pipe.mbps"]:-}" b="${R["$scen.curlany.mbps"]:-}"
	[ -n "$a" ] && [ -n "$b" ] &&
		echo "  (the fastest single curl sample of any setting, calibration included: $b MB/s, ${R["$scen.curlany.how"]}; s3pipe/that $(calc "$a / $b" 2))"
}
# sum_row SCEN SLOT TOOL: one summary row from R
sum_row() {
	local v="${R["$1.$2.mbps"]:-}"
	if [ -z "$v" ]; then
		printf '%-4s %-7s %10s  %s\n' "$1" "$3" failed "$2"
		return
	fi
	printf '%-4s %-7s %10s %12s %14s  %s\n' "$1" "$3" "$v" "${R["$1.$2.cpu"]}" "${R["$1.$2.rss"]}" "${R["$1.$2.how"]}"
}
# ratio_of SCEN SLOT_A SLOT_B: best A over best B, or nothing
ratio_of() {
	local a="${R["$1.$2.mbps"]:-}" b="${R["$1.$3.mbps"]:-}"
	[ -n "$a" ] && [ -n "$b" ] && calc "$a / $b" 2
}
# per_round KEY: " (per round: R1 R2 ..., median M)" from ROUND_RATIOS
per_round() {
	[ -n "${ROUND_RATIOS[$1]:-}" ] || return 0
	# shellcheck disable=SC2086
	printf ' (per round:%s, median %s)' "${ROUND_RATIOS[$1]}" "$(median ${ROUND_RATIOS[$1]})"
}
# peer_targets SCEN CURL S3FS RCLONE: the verdicts s3pipe >= CURL x curl
# (the median of the per-round ratios, curl run seconds apart in every
# round), >= S3FS x s3fs and >= RCLONE x rclone (their best runs: one
# round each when they are slow); an empty bound is no target
peer_targets() {
	local scen="$1" x peer min
	if [ -n "$2" ] && want_tool curl && [ -n "${ROUND_RATIOS[$scen]:-}" ]; then
		# shellcheck disable=SC2086
		x="$(median ${ROUND_RATIOS[$scen]})"
		verdict "$x >= $2" "($scen) s3pipe >= $2 x curl: $x x$(per_round "$scen")"
	fi
	for peer in s3fs rclone; do
		[ $peer = s3fs ] && min="$3" || min="$4"
		if [ -z "$min" ] || ! want_tool $peer || [ -z "${R["$scen.s3pipe.mbps"]:-}" ] ||
			[ -z "${R["$scen.$peer.mbps"]:-}" ]; then
			continue
		fi
		x="$(calc "${R["$scen.s3pipe.mbps"]} / ${R["$scen.$peer.mbps"]}" 2)"
		verdict "$x >= $min" "($scen) s3pipe >= $min x $peer: $x x"
	done
}
verdict() { # CONDITION TEXT
	if awk "BEGIN { exit !($1) }"; then echo "  PASS  $2"; else echo "  FAIL  $2"; fi
}

# phase NAME LETTER...: NAME (needs, seed, run, summary, targets) of every
# wanted scenario that has one, in that order
phase() {
	local _phase="$1" _scen _late
	shift
	for _scen in "$@"; do
		want_scen "$_scen" && declare -F "${_scen}_$_phase" >/dev/null || continue
		# the scenarios whose prefetch and parallelism exist to hide
		# S3's latency run with it (the test server's timers: every
		# request answered latency_ms late, no CPU spent waiting)
		_late=0
		[ "$_phase" = run ] && [ "$latency_ms" != 0 ] &&
			case " $LATENCY_SCENS " in *" $_scen "*) _late=1 ;; esac
		[ $_late = 1 ] && server_latency "$latency_ms" &&
			echo && echo "(every S3 request of ($_scen) answered $latency_ms ms late)"
		"${_scen}_$_phase"
		[ $_late = 1 ] && server_latency 0
	done
	return 0
}
LATENCY_SCENS="b f j"
server_latency() { # MS: the test server's latency from now on
	curl -sS -f -o /dev/null -X POST "$URL/__latency?ms=$1" ||
		{ broke "the server's latency could not be set to $1 ms"; return 1; }
}
