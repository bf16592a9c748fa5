# (g) epochs: the memory and disk tiers against the peers' disk caches.
# One mount per tool and round reads epochs 0, 1 and 2 of a channel of 16
# MiB objects, one after another, through one reader (epochs.py below):
# s3pipe its files g_0, g_1, g_2 (--epochs 3), s3fs and rclone every object
# in key order, once per epoch, nothing dropped between epochs.  Rows on the
# 1 GiB channel: s3pipe --cache-size G_MEM with the disk tier (--cache-dir,
# a fresh empty directory each round, --cache-dir-size G_DISK) and without,
# s3fs -o use_cache=DIR, rclone --vfs-cache-mode full --vfs-cache-max-size
# G_DISK --cache-dir DIR.  Then the 384 MiB channel, s3pipe memory only:
# what a later epoch finds in memory when the channel is 1.5 times the
# budget.  Then the 4 GiB channel, the same four rows, one round, where the
# disk allows (decided at seeding).
#
# Time to first byte: epoch 0's is open() to the first byte on a freshly
# mounted file, as in (c); a later epoch's runs from the return of the
# previous epoch's close() to its first byte, the wait for NAME_{N+1} to
# appear included.  MB/s counts an epoch from that same start to its last
# byte.  After each epoch's last byte, before its close, the reader notes
# the daemon's CPU ticks, du -sb of the cache directory and, for s3pipe,
# s3pipe stats --json (cache.hits and misses count the blocks each read
# request pins, about 2,000 per GiB here, and a block the prefetcher has
# just fetched from S3 counts as a hit: "from memory" below is the
# channel's bytes less s3.bytes_received instead).
# Sourced by contrib/bench, which calls g_needs, g_seed, g_run, g_summary
# and g_targets (the phases: contrib/bench.d/lib.sh).
# --quick: everything an eighth of the full run's, the ratios kept; the
# full run: 1 GiB, 384 MiB and 4 GiB channels of 16 MiB objects, and the
# memory and disk budgets are the issue's, whatever S3PIPE_CACHE_SIZE says
G_COUNT=$((quick ? 8 : 64)) G_SMALL_COUNT=$((quick ? 3 : 24)) G_BIG_COUNT=$((quick ? 32 : 256))
G_MEM=256M G_DISK=2G
[ $quick = 0 ] || G_MEM=32M G_DISK=256M
G_SIZE=$((16 << 20)) G_EPOCHS=3

g_needs() {
	need python3 # the epochs reader
	need du
	need df
}

# (g) 1 GiB and 384 MiB channels of 16 MiB objects, and the 4 GiB one
# where the disk allows: decided here, before anything is seeded.  It needs
# twice its size (the server's copy, and first the generated files, later
# s3fs's cache, which has no bound and keeps every object) plus 4 GiB for
# the rest of the run (the other channels, the disk tiers of the 1 GiB
# channel); set BENCH_G_BIG=0 to leave it out anyway.
G_BIG_WHY=""
g_seed() {
	gen "$T/data/g1" $G_COUNT $G_SIZE; put_cfg "$T/data/g1" g1 >>"$T/put.cfg"
	gen "$T/data/gs" $G_SMALL_COUNT $G_SIZE; put_cfg "$T/data/gs" gs >>"$T/put.cfg"
	g_big_need=$((2 * G_BIG_COUNT * G_SIZE + (4 << 30)))
	g_avail="$(df -P -B1 "$T" 2>/dev/null | awk 'NR == 2 { print $4 }')"
	if [ "${BENCH_G_BIG:-}" = 0 ]; then
		G_BIG_WHY="BENCH_G_BIG=0"
	elif [ -z "$g_avail" ]; then
		G_BIG_WHY="df cannot tell the free space of $T"
	elif [ "$g_avail" -lt "$g_big_need" ]; then
		G_BIG_WHY="$(calc "$g_avail / 1073741824" 1) GiB free in $T's file system, it needs $(calc "$g_big_need / 1073741824" 1) GiB (twice the channel: the server's copy and a peer's cache of all of it, plus 4 GiB for the rest of the run)"
	else
		gen "$T/data/gb" $G_BIG_COUNT $G_SIZE; put_cfg "$T/data/gb" gb >>"$T/put.cfg"
	fi
}

declare -A GV=() # GV[CHAN.ROW.eK.mbps|ttfb|cpu], GV[CHAN.ROW.rss|du|mem1]: lists, a value a round
G_NODISK=""	 # why this s3pipe has no disk tier, once a mount said so
g_peak_kb=0	 # every s3pipe mount of (g)
g_du_max=-1	 # the disk tier's largest du
g_label() {
	case "$1" in
	disk) echo "s3pipe disk tier" ;;
	mem) echo "s3pipe memory only" ;;
	s3fs) echo "s3fs use_cache" ;;
	rclone) echo "rclone full cache" ;;
	esac
}
declare -A GR=() # GR[KEY@ROUND]: the same by round, to pair rows of a round
G_ROUND=0
g_add() { GV["$1"]="${GV["$1"]:-} $2"; GR["$1@$G_ROUND"]="$2"; }

# g_measure CHAN PREFIX COUNT ROW: one mount, G_EPOCHS epochs of PREFIX
# (COUNT objects of G_SIZE) for ROW (disk, mem, s3fs, rclone)
g_measure() {
	local chan="$1" prefix="$2" count="$3" row="$4" tool ready="" dir="-" stats="-" i k rc
	local expect=$((count * G_SIZE)) kb ticks0 du_end="" label
	local -a files=()
	label="$(g_label "$row")"
	case "$row" in disk | mem) tool=s3pipe ;; *) tool="$row" ;; esac
	if [ "$row" = disk ] && [ -n "$G_NODISK" ]; then
		printf '  %-19s option not supported by this s3pipe: no figures\n' "$label"
		return 1
	fi
	case "$row" in
	disk | s3fs | rclone)
		dir="$T/gcache/$chan.$row.$((mount_seq + 1))"
		rm -rf "$dir"
		mkdir -p "$dir"
		;;
	esac
	local s3pipe_opts="--epochs $G_EPOCHS"
	[ "$row" = disk ] && s3pipe_opts="$s3pipe_opts --cache-dir $dir --cache-dir-size $G_DISK"
	if [ "$tool" = s3pipe ]; then
		ready=g_0
		S3PIPE_CACHE="$G_MEM" S3PIPE_OPTS="$s3pipe_opts" start_daemon s3pipe "$prefix" g
	else
		PEER_CACHE_DIR="$dir" PEER_CACHE_SIZE="$G_DISK" start_daemon "$tool" "$prefix" g
	fi
	if ! wait_ready "$MNT" "$DPID" "$ready"; then
		unmount_wait "$MNT" "$DPID"
		if [ "$row" = disk ] && grep -q "unknown option '--cache-dir" "$LOG"; then
			G_NODISK="$(grep -m 1 "unknown option" "$LOG")"
			printf '  %-19s option not supported by this s3pipe (%s): no figures\n' "$label" "$G_NODISK"
			notes+=("(g) the disk-tier rows: option not supported by this s3pipe ($G_NODISK)")
		else
			broke "(g) $tool ($label) did not mount: $(tail -n 3 "$LOG" | tr '\n' ' ')"
		fi
		[ "$dir" = - ] || rm -rf "$dir"
		return 1
	fi
	if [ "$tool" = s3pipe ]; then
		files=("$MNT/g_{e}")
		stats="$(printf '%q stats --json %q' "$s3pipe_bin" "$MNT")"
	else
		for ((i = 0; i < count; i++)); do files+=("$(printf '%s/obj-%05d' "$MNT" "$i")"); done
	fi
	ticks0="$(proc_cpu_ticks "$DPID")"
	timeout -k 5 $((READ_TIMEOUT * G_EPOCHS)) python3 "$T/epochs.py" "$T/g.out" "$DPID" $G_EPOCHS \
		"$dir" "$stats" "${files[@]}" 2>"$T/g.err"
	rc=$?
	kb="$(proc_hwm_kb "$DPID")"
	ALIVE=0
	case "$(proc_state "$DPID")" in '' | Z) ;; *) ALIVE=1 ;; esac
	unmount_wait "$MNT" "$DPID"
	[ "$dir" = - ] || du_end="$(du -sb "$dir" 2>/dev/null | awk '{ print $1 }')"
	local -a lines=()
	mapfile -t lines <"$T/g.out"
	if [ $rc -ne 0 ] || [ ${#lines[@]} -ne $G_EPOCHS ]; then
		broke "(g) $tool ($label) read ${#lines[@]} of $G_EPOCHS epochs (exit $rc): $(tail -n 2 "$T/g.err" | tr '\n' ' ')$(tail -n 2 "$LOG" | tr '\n' ' ')"
		daemon_ok "(g)" "$tool"
		[ "$dir" = - ] || rm -rf "$dir"
		return 1
	fi
	daemon_ok "(g)" "$tool"
	local -A P=() Q=() # this epoch's and the previous epoch's numbers
	local prev_ticks="${ticks0:--1}" mbps cpu extra du_max=-1 hits=""
	for ((k = 0; k < G_EPOCHS; k++)); do
		Q=()
		for i in "${!P[@]}"; do Q[$i]="${P[$i]}"; done
		P=()
		for i in ${lines[$k]}; do P["${i%%=*}"]="${i#*=}"; done
		if [ "${P[bytes]}" != "$expect" ]; then
			broke "(g) $tool ($label) epoch $k read ${P[bytes]} of $expect bytes"
			[ "$dir" = - ] || rm -rf "$dir"
			return 1
		fi
		mbps="$(calc "${P[bytes]} / ${P[secs]} / 1e6" 1)"
		cpu="-"
		[ "${P[ticks]}" -ge 0 ] && [ "$prev_ticks" -ge 0 ] &&
			cpu="$(calc "((${P[ticks]} - $prev_ticks) / $clk_tck) / (${P[bytes]} / 1073741824)" 2)"
		prev_ticks="${P[ticks]}"
		extra=""
		if [ "$k" -gt 0 ]; then extra="; open() to first byte $(calc "${P[ttfb_open]}" 2) ms"; fi
		if [ -n "${P[s3.bytes_received]:-}" ]; then
			local d_s3 d_hits d_misses
			d_s3=$((${P[s3.bytes_received]} - ${Q[s3.bytes_received]:-0}))
			d_hits=$((${P[cache.hits]:-0} - ${Q[cache.hits]:-0}))
			d_misses=$((${P[cache.misses]:-0} - ${Q[cache.misses]:-0}))
			extra="$extra; S3 $(mib $d_s3) MiB, hits +$d_hits misses +$d_misses"
			hits="$hits $d_hits/$d_misses"
			# what the disk tier served (its other numbers: on the mount's line)
			[ -n "${P[disk.hit_bytes]:-}" ] &&
				extra="$extra, from disk $(mib $((${P[disk.hit_bytes]} - ${Q[disk.hit_bytes]:-0}))) MiB"
		fi
		if [ -n "${P[du]:-}" ]; then
			extra="$extra; cache dir $(mib "${P[du]}") MiB"
			[ "${P[du]}" -gt "$du_max" ] && du_max="${P[du]}"
		fi
		printf '  %-19s epoch %d %9s MB/s  %7s CPU s/GiB  first byte %8s ms  (%s s%s)\n' \
			"$label" "$k" "$mbps" "$cpu" "$(calc "${P[ttfb]}" 2)" "$(calc "${P[secs]}" 2)" "$extra"
		g_add "$chan.$row.e$k.mbps" "$mbps"
		g_add "$chan.$row.e$k.ttfb" "$(calc "${P[ttfb]}" 2)"
		g_add "$chan.$row.e$k.cpu" "$cpu"
		# epoch 1 from memory, at least: two epochs' bytes less all that
		# came from S3 by the end of epoch 1 (a pre-warm of epoch 2 counts
		# against it)
		[ "$k" = 1 ] && [ -n "${P[s3.bytes_received]:-}" ] && [ "$row" = mem ] &&
			g_add "$chan.$row.mem1" "$(mib $((2 * expect - ${P[s3.bytes_received]})))"
	done
	[ -n "$du_end" ] && [ "$du_end" -gt "$du_max" ] && du_max="$du_end"
	extra=""
	case "$row" in
	disk) extra="; --cache-dir-size $G_DISK" ;;
	rclone) extra="; --vfs-cache-max-size $G_DISK" ;;
	s3fs) extra="; no bound" ;;
	esac
	[ "$dir" != - ] && extra="; cache dir at most $(mib "$du_max") MiB (du -sb after each epoch and after unmount$extra)"
	[ -n "$hits" ] && extra="$extra; hits/misses per epoch:$hits"
	# the disk tier's own numbers at the end, whatever their names
	local dn=""
	for i in $(printf '%s\n' "${!P[@]}" | grep disk | sort); do dn="$dn ${i#disk.}=${P[$i]}"; done
	[ -n "$dn" ] && extra="$extra; disk tier stats after epoch $((G_EPOCHS - 1)):$dn"
	printf '  %-19s peak RSS %s MiB%s\n' "$label" "$([ -n "$kb" ] && calc "$kb / 1024" 1 || echo -)" "$extra"
	[ -n "$kb" ] && g_add "$chan.$row.rss" "$(calc "$kb / 1024" 1)"
	[ "$dir" != - ] && g_add "$chan.$row.du" "$(mib "$du_max")"
	if [ "$tool" = s3pipe ] && [ "${kb:-0}" -gt "$g_peak_kb" ]; then g_peak_kb="$kb"; fi
	if [ "$row" = disk ] && [ "$du_max" -gt "$g_du_max" ]; then g_du_max="$du_max"; fi
	[ "$dir" = - ] || rm -rf "$dir"
	return 0
}
# g_rounds CHAN PREFIX COUNT ROUNDS ROW...: ROUNDS rounds of every ROW
g_rounds() {
	local chan="$1" prefix="$2" count="$3" n="$4" r row
	shift 4
	for ((r = 0; r < n; r++)); do
		G_ROUND=$r
		[ "$n" -gt 1 ] && echo "  round $((r + 1))"
		for row in "$@"; do
			case "$row" in s3fs | rclone) want_tool "$row" || continue ;; esac
			g_measure "$chan" "$prefix" "$count" "$row"
			nap 0.3
		done
	done
}

g_run() {
	cat >"$T/epochs.py" <<'EOF_PY'
# epochs.py OUT PID EPOCHS DU_DIR STATS_CMD FILE...: reads FILE... in turn,
# EPOCHS times ({e} in a FILE is the epoch), 1 MiB reads after a first
# read of 1 byte, and writes one line per epoch to OUT: bytes, seconds,
# first byte (ms), open() to first byte (ms), the daemon's CPU ticks (its
# children's, s3pipe's worker, included),
# du -sb DU_DIR ("-": none) and the numbers of STATS_CMD's JSON ("-": none),
# all taken after the last byte and before the last close.
import os, subprocess, sys, time
out_path, pid, epochs, du_dir, stats_cmd = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
files = sys.argv[6:]
buf = memoryview(bytearray(1 << 20))

def ticks():
    # the daemon and its children (s3pipe's worker under its keeper), as
    # proc_cpu_ticks counts them before the first epoch
    try:
        with open("/proc/%s/task/%s/children" % (pid, pid)) as f:
            family = [pid] + f.read().split()
        total = 0
        for p in family:
            with open("/proc/%s/stat" % p) as f:
                v = f.read().rsplit(")", 1)[1].split()
            total += int(v[11]) + int(v[12])
        return total
    except (OSError, IndexError, ValueError):
        return -1

def flat(o, path, d):
    if isinstance(o, dict):
        for k, v in o.items():
            flat(v, path + [str(k)], d)
    elif isinstance(o, (int, float)) and not isinstance(o, bool):
        d[".".join(path)] = o

def drain(fd, n):
    while True:
        k = os.readv(fd, [buf])
        if k == 0:
            return n
        n += k

out = open(out_path, "w")
t_ref = None
for e in range(epochs):
    names = [f.replace("{e}", str(e)) for f in files]
    t_start = time.time()
    if t_ref is None:
        t_ref = t_start
    while True:  # NAME_{N+1} appears once NAME_N is closed
        t_try = time.time()
        try:
            fd = os.open(names[0], os.O_RDONLY)
            break
        except FileNotFoundError:
            if t_try - t_start > 30:
                raise
            time.sleep(0.0005)
    n = len(os.read(fd, 1))
    t_first = time.time()
    if n:
        n += os.readv(fd, [buf[:(1 << 20) - 1]])
        n = drain(fd, n)
    for name in names[1:]:
        os.close(fd)
        fd = os.open(name, os.O_RDONLY)
        n = drain(fd, n)
    t_end = time.time()
    line = "epoch=%d bytes=%d secs=%.6f ttfb=%.3f ttfb_open=%.3f ticks=%d" % (
        e, n, t_end - t_ref, (t_first - t_ref) * 1e3, (t_first - t_try) * 1e3, ticks())
    if du_dir != "-":
        r = subprocess.run(["du", "-sb", du_dir], capture_output=True, text=True)
        line += " du=%s" % (r.stdout.split() or ["-1"])[0]
    if stats_cmd != "-":
        import json
        r = subprocess.run(stats_cmd, shell=True, capture_output=True, text=True)
        d = {}
        try:
            flat(json.loads(r.stdout), [], d)
        except ValueError:
            pass
        line += "".join(" %s=%s" % (k, v) for k, v in sorted(d.items()) if "=" not in k and " " not in k)
    os.close(fd)
    t_ref = time.time()
    out.write(line + "\n")
    out.flush()
EOF_PY
	echo
	echo "(g) epochs 0-$((G_EPOCHS - 1)) on one mount, $((G_COUNT * G_SIZE >> 20)) MiB channel ($G_COUNT x $((G_SIZE >> 20)) MiB): s3pipe --cache-size $G_MEM with the disk tier (--cache-dir-size $G_DISK) and without, s3fs -o use_cache, rclone --vfs-cache-mode full --vfs-cache-max-size $G_DISK"
	echo "  (first byte: epoch 0's from open(), a later one's from the previous epoch's close)"
	g_rounds g1 g1 $G_COUNT "$runs" disk mem s3fs rclone
	echo
	echo "(g) $((G_SMALL_COUNT * G_SIZE >> 20)) MiB channel ($G_SMALL_COUNT x $((G_SIZE >> 20)) MiB), s3pipe --cache-size $G_MEM, memory only"
	g_rounds gs gs $G_SMALL_COUNT "$runs" mem
	echo
	if [ -n "$G_BIG_WHY" ]; then
		echo "(g) $((G_BIG_COUNT * G_SIZE >> 20)) MiB channel: skipped: $G_BIG_WHY"
	else
		echo "(g) $((G_BIG_COUNT * G_SIZE >> 20)) MiB channel ($G_BIG_COUNT x $((G_SIZE >> 20)) MiB), one round: the same four rows"
		g_rounds gb gb $G_BIG_COUNT 1 disk mem s3fs rclone
	fi
}

# g_best KEY, g_med KEY: the largest and the median of GV[KEY] ("" if none)
g_best() {
	# shellcheck disable=SC2086
	[ -n "${GV[$1]:-}" ] && printf '%s\n' ${GV[$1]} | grep -v '^-$' | sort -g | tail -n 1
}
g_med() {
	local v
	# shellcheck disable=SC2086
	v="$(printf '%s\n' ${GV[$1]:-} | grep '[0-9]' | tr '\n' ' ')"
	# shellcheck disable=SC2086
	[ -n "$v" ] && calc "$(median $v)" "${2:-2}"
}
# g_ratio A B: best of A over best of B, or nothing
g_ratio() {
	local a b
	a="$(g_best "$1")" b="$(g_best "$2")"
	[ -n "$a" ] && [ -n "$b" ] && calc "$a / $b" 2
}
# g_per_round A B: " (per round: R..., median M)" of A / B in the same round
g_per_round() {
	local r l=""
	for ((r = 0; r < runs; r++)); do
		[ -n "${GR["$1@$r"]:-}" ] && [ -n "${GR["$2@$r"]:-}" ] || continue
		l="$l $(calc "${GR["$1@$r"]} / ${GR["$2@$r"]}" 2)"
	done
	[ -n "$l" ] || return 0
	# shellcheck disable=SC2086
	printf ' (per round:%s, median %s)' "$l" "$(median $l)"
}
# g_ttfb_ratio CHAN ROW K: median first byte of epoch K over epoch 0's
g_ttfb_ratio() {
	local a b
	a="$(g_med "$1.$2.e$3.ttfb")" b="$(g_med "$1.$2.e0.ttfb")"
	[ -n "$a" ] && [ -n "$b" ] && calc "$a / $b" 3
}

g_summary() {
	for chan in g1 gs gb; do
		case $chan in
		g1) cn=$G_COUNT ;; gs) cn=$G_SMALL_COUNT ;; gb) cn=$G_BIG_COUNT ;;
		esac
		[ $chan = gb ] && [ -n "$G_BIG_WHY" ] && { echo "g    $((cn * G_SIZE >> 20)) MiB channel: skipped ($G_BIG_WHY)"; continue; }
		echo "g    $((cn * G_SIZE >> 20)) MiB channel: MB/s per epoch (best of rounds), first byte (median, ms; epoch 0 from open(), later ones from the previous close)"
		printf '     %-19s %9s %9s %9s  %-26s %8s %10s\n' "" "epoch 0" "epoch 1" "epoch 2" "first byte 0 / 1 / 2" "peak RSS" "cache dir"
		for row in disk mem s3fs rclone; do
			[ $chan = gs ] && [ $row != mem ] && continue
			case "$row" in s3fs | rclone) want_tool "$row" || continue ;; esac
			if [ -z "${GV[$chan.$row.e0.mbps]:-}" ]; then
				printf '     %-19s %9s  %s\n' "$(g_label $row)" failed \
					"$([ $row = disk ] && [ -n "$G_NODISK" ] && echo "option not supported by this s3pipe")"
				continue
			fi
			printf '     %-19s %9s %9s %9s  %-26s %8s %10s\n' "$(g_label $row)" \
				"$(g_best $chan.$row.e0.mbps)" "$(g_best $chan.$row.e1.mbps)" "$(g_best $chan.$row.e2.mbps)" \
				"$(g_med $chan.$row.e0.ttfb) / $(g_med $chan.$row.e1.ttfb) / $(g_med $chan.$row.e2.ttfb)" \
				"$(g_best $chan.$row.rss)" "$(g_best $chan.$row.du)"
		done
		if [ $chan = gs ]; then
			v="$(g_med gs.mem.mem1 1)"
			[ -n "$v" ] && echo "     epoch 1 from memory, at least (2 x the channel less what came from S3 by its end): $v MiB (per round:${GV[gs.mem.mem1]}; budget $G_MEM)"
			continue
		fi
		for k in 1 2; do
			line="ratios (g, $((cn * G_SIZE >> 20)) MiB) epoch $k:"
			for row in disk mem s3fs rclone; do
				x="$(g_ratio $chan.$row.e$k.mbps $chan.$row.e0.mbps)"
				[ -n "$x" ] && line="$line $(g_label $row) / its epoch 0 $x$(g_per_round $chan.$row.e$k.mbps $chan.$row.e0.mbps);"
			done
			echo "${line%;}"
			line=""
			for row in s3fs rclone mem; do
				x="$(g_ratio $chan.disk.e$k.mbps $chan.$row.e$k.mbps)"
				[ -n "$x" ] && line="$line s3pipe disk tier / $(g_label $row) $x$(g_per_round $chan.disk.e$k.mbps $chan.$row.e$k.mbps);"
			done
			[ -n "$line" ] && echo " ${line%;}"
			line=""
			for row in mem s3fs rclone; do
				[ $row = mem ] || want_tool $row || continue
				x="$(g_ratio $chan.mem.e$k.mbps $chan.$row.e$k.mbps)"
				[ $row != mem ] && [ -n "$x" ] && line="$line s3pipe memory only / $(g_label $row) $x$(g_per_round $chan.mem.e$k.mbps $chan.$row.e$k.mbps);"
			done
			[ -n "$line" ] && echo " ${line%;}"
		done
	done
}

g_targets() {
	# g_no_figures TEXT: a target without its figures
	g_why="the disk-tier runs failed"
	[ -n "$G_NODISK" ] && g_why="option not supported by this s3pipe"
	g_mb=$((G_COUNT * G_SIZE >> 20))
	for k in 1 2; do
		x="$(g_ratio g1.disk.e$k.mbps g1.disk.e0.mbps)"
		if [ -n "$x" ]; then
			verdict "$x >= 3" "(g) epoch $k with the disk tier >= 3 x its epoch 0 ($g_mb MiB): $x x$(g_per_round g1.disk.e$k.mbps g1.disk.e0.mbps)"
		else
			echo "  FAIL  (g) epoch $k with the disk tier >= 3 x its epoch 0 ($g_mb MiB): no figures ($g_why)"
		fi
		for peer in s3fs rclone; do
			want_tool $peer || continue
			x="$(g_ratio g1.disk.e$k.mbps g1.$peer.e$k.mbps)"
			if [ -n "$x" ]; then
				verdict "$x >= 1.5" "(g) epoch $k with the disk tier >= 1.5 x $(g_label $peer): $x x$(g_per_round g1.disk.e$k.mbps g1.$peer.e$k.mbps)"
			elif [ -z "${GV[g1.disk.e$k.mbps]:-}" ]; then
				echo "  FAIL  (g) epoch $k with the disk tier >= 1.5 x $(g_label $peer): no figures ($g_why)"
			fi
		done
	done
	v="$(g_med gs.mem.mem1 1)"
	half="$(calc "$(size_bytes "$G_MEM") / 2 / 1048576" 1)"
	[ -n "$v" ] && verdict "$v >= $half" "(g) memory only, $((G_SMALL_COUNT * G_SIZE >> 20)) MiB channel: epoch 1 from memory >= half the budget ($half MiB): $v MiB (median; per round:${GV[gs.mem.mem1]})"
	for cr in g1.disk g1.mem gs.mem; do
		x1="$(g_ttfb_ratio ${cr%.*} ${cr#*.} 1)" x2="$(g_ttfb_ratio ${cr%.*} ${cr#*.} 2)"
		what="(g) $(g_label ${cr#*.}), $([ ${cr%.*} = g1 ] && echo $g_mb || echo $((G_SMALL_COUNT * G_SIZE >> 20))) MiB: first byte of epochs 1 and 2 after closing the previous one <= 0.2 x epoch 0's"
		if [ -n "$x1" ] && [ -n "$x2" ]; then
			verdict "$x1 <= 0.2 && $x2 <= 0.2" "$what: $x1 x, $x2 x (medians: $(g_med $cr.e0.ttfb), $(g_med $cr.e1.ttfb), $(g_med $cr.e2.ttfb) ms)"
		elif [ ${cr#*.} = disk ]; then
			echo "  FAIL  $what: no figures ($g_why)"
		fi
	done
	g_mem_mib="$(calc "$(size_bytes "$G_MEM") / 1048576" 1)"
	if [ "$g_peak_kb" -gt 0 ]; then
		peak="$(calc "$g_peak_kb / 1024" 1)"
		verdict "$peak <= $g_mem_mib + 64" "(g) s3pipe peak RSS <= memory budget + 64 MiB: $peak MiB (--cache-size $G_MEM, every (g) mount)"
	fi
	if [ "$g_du_max" -ge 0 ]; then
		verdict "$g_du_max <= $(size_bytes "$G_DISK")" "(g) the disk tier within its size: at most $(mib "$g_du_max") MiB (du -sb after each epoch and after unmount; --cache-dir-size $G_DISK)"
	else
		echo "  FAIL  (g) the disk tier within its size (--cache-dir-size $G_DISK): no figures ($g_why)"
	fi
}
