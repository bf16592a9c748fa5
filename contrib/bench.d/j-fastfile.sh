# (j) FastFile mode: J_COUNT objects of 100 KiB under j/, read as files by a
# map-style reader (contrib/bench.d/j-reader.py map: 8 worker processes,
# each file opened, read whole and closed, paths handed out 8 at a time in
# the reader's order, as a PyTorch DataLoader does), every tool a fresh
# mount per measurement, in every round:
#   (1) s3pipe --input-mode fastfile --shuffle-seed 1: the reader reads
#       MOUNT/.s3pipe-order/j_0 (on the clock) and the files in that order,
#       which s3pipe then prefetches ahead of the opens;
#   (2) s3pipe --input-mode fastfile (no seed): the reader reads in an order
#       s3pipe is not told, random.Random(12345)'s permutation of the keys;
#   (3) s3pipe's Pipe mode on the same objects (--shuffle-seed 1), j_0
#       read with dd bs=1M;
#   s3fs and rclone (the same settings as in (a) to (f)) reading (1)'s order
#   (the order file of epoch 0, taken once from an s3pipe mount before the
#   rounds, and checked against every round's) and (2)'s.
# MB/s (10^6 bytes/s) from the reader's start (the order file's read
# included) to its last byte, the daemon's CPU s/GiB and peak RSS (VmHWM,
# before unmount); s3pipe's tree stats (opens, opens that found their file
# prefetched) and S3 requests.  Ratios per round, then their medians:
# (1)/(3), (1) and (2) against s3fs and rclone.
# First byte: from the mount command's start to the first byte of the first
# file of the order (FastFile: the mount, the order file's first line, that
# file's first byte) against the Pipe channel's first byte (j_0, shuffled
# alike), both from the mount command's start; median of J_FB_RUNS each,
# alternating.  Both list j/ in full before the mount appears.
# Random reads: one object of J_BIG bytes under jr/, a FastFile mount, one
# reader doing J_PREADS os.pread()s of 4 KiB at offsets from
# random.Random(7); s3.requests and s3.bytes_received from .s3pipe-stats
# before and after: requests and KiB received a read (a reader that jumps
# about gets pieces of 128 KiB, not blocks of the 8 MiB part size), and
# ms a read against signed curl's ms a 4 KiB range GET at the same
# offsets (one curl process, one GET after another on one connection:
# the least a GET costs); then the same object read whole by dd bs=1M on
# a fresh mount (MB/s: a sequential reader must lose nothing).
# Sourced by contrib/bench, which calls j_needs, j_seed, j_run, j_summary
# and j_targets (the phases: contrib/bench.d/lib.sh).
# 20,000 x 100 KiB and 1 GiB, 2,000 preads (--quick: 2,000, 128 MiB, 500)
J_COUNT=$((quick ? 2000 : 20000)) J_SIZE=$((100 << 10))
J_BIG=$(((quick ? 128 : 1024) << 20)) J_PREADS=$((quick ? 500 : 2000)) J_PREAD_SIZE=4096
J_WORKERS=8 J_SEED=1 J_RANDOM=12345 J_FB_RUNS=3
J_PART=$((8 << 20)) # s3pipe's default --part-size
J_READER="$repo/contrib/bench.d/j-reader.py"

j_needs() {
	need python3 # the readers (j-reader.py: the standard library only)
	[ -f "$J_READER" ] || die "(j) its reader is missing: $J_READER"
}

j_seed() {
	gen "$T/data/j" $J_COUNT $J_SIZE
	put_cfg "$T/data/j" j >>"$T/put.cfg"
	gen "$T/data/jr" 1 $J_BIG
	put_cfg "$T/data/jr" jr >>"$T/put.cfg"
}

declare -A JV=() # JV[KEY]: a value a round, space separated
declare -A JR=() # JR[KEY@ROUND]: the same by round, to pair rows of a round
J_ROUND=0
j_peak_kb=0 # every s3pipe mount of (j)
j_add() { JV["$1"]="${JV["$1"]:-} $2"; JR["$1@$J_ROUND"]="$2"; }
# j_kv FILE KEY: the value of KEY=VALUE in FILE's words
j_kv() { tr ' ' '\n' <"$1" | sed -n "s/^$2=//p" | tail -n 1; }
j_note_kb() {
	[ -n "$1" ] || return 0
	[ "$1" -gt "$j_peak_kb" ] && j_peak_kb="$1"
	[ -z "${S3PIPE_CACHE:-}" ] && [ "$1" -gt "$s3pipe_peak_kb" ] && s3pipe_peak_kb="$1"
	return 0
}
j_label() {
	case "$1" in
	s3pipe.order) echo "(1) its order file" ;;
	*.order) echo "(1) s3pipe's order" ;;
	*.random) echo "(2) random order" ;;
	s3pipe.pipe) echo "(3) Pipe mode, dd" ;;
	esac
}

# j_measure TOOL CASE: one fresh mount, one read of j/'s objects; CASE
# order, random or pipe (s3pipe only)
j_measure() {
	local tool="$1" kase="$2" ready="" root="" rc kb ticks secs mbps cpu="-" rss="-" files bytes extra=""
	local expect=$((J_COUNT * J_SIZE)) opts label
	local -a src=()
	label="$(j_label "$tool.$kase")"
	case "$tool.$kase" in
	s3pipe.order) opts="--input-mode fastfile --shuffle-seed $J_SEED" ready=j ;;
	s3pipe.random) opts="--input-mode fastfile" ready=j ;;
	s3pipe.pipe) opts="--shuffle-seed $J_SEED" ready=j_0 ;;
	esac
	if [ "$tool" = s3pipe ]; then
		S3PIPE_OPTS="$opts" start_daemon s3pipe j j
		root="$MNT/j"
	else
		start_daemon "$tool" j j
		root="$MNT"
	fi
	case "$tool.$kase" in
	s3pipe.order) src=(--order "$MNT/.s3pipe-order/j_0" --save-order "$T/j.order.round") ;;
	*.order) src=(--keys "$T/j.order") ;;
	*.random) src=(--keys "$T/j.keys" --shuffle $J_RANDOM) ;;
	esac
	if ! wait_ready "$MNT" "$DPID" "$ready"; then
		broke "(j) $tool did not mount ($label): $(tail -n 3 "$LOG" | tr '\n' ' ')"
		unmount_wait "$MNT" "$DPID"
		return 1
	fi
	rm -f "$T/j.out" "$T/j.order.round" "$T/j.stats"
	if [ "$kase" = pipe ]; then
		local t0 t1
		t0=$(now)
		timeout -k 5 $READ_TIMEOUT dd if="$MNT/j_0" of=/dev/null bs=1M 2>"$T/j.err"
		rc=$?
		t1=$(now)
		printf 'files=%d bytes=%d secs=%s\n' $J_COUNT "$(dd_bytes "$T/j.err")" "$(calc "$t1 - $t0" 6)" >"$T/j.out"
	else
		timeout -k 5 $READ_TIMEOUT python3 "$J_READER" map --root "$root" --workers $J_WORKERS \
			"${src[@]}" >"$T/j.out" 2>"$T/j.err"
		rc=$?
	fi
	ticks="$(proc_cpu_ticks "$DPID")"
	kb="$(proc_hwm_kb "$DPID")"
	[ "$tool" = s3pipe ] && cat "$MNT/.s3pipe-stats" >"$T/j.stats.json" 2>/dev/null &&
		python3 "$J_READER" stats "$T/j.stats.json" >"$T/j.stats" 2>/dev/null
	ALIVE=0
	case "$(proc_state "$DPID")" in '' | Z) ;; *) ALIVE=1 ;; esac
	unmount_wait "$MNT" "$DPID"
	files="$(j_kv "$T/j.out" files 2>/dev/null)" bytes="$(j_kv "$T/j.out" bytes 2>/dev/null)"
	if [ $rc -ne 0 ] || [ "${bytes:-}" != "$expect" ] || [ "${files:-}" != "$J_COUNT" ]; then
		broke "(j) $tool ($label) read ${files:-?} files, ${bytes:-?} of $expect bytes (exit $rc): $(grep -v -e records -e copied "$T/j.err" | tail -n 3 | tr '\n' ' ')$(tail -n 2 "$LOG" | tr '\n' ' ')"
		daemon_ok "(j)" "$tool"
		return 1
	fi
	daemon_ok "(j)" "$tool"
	if [ "$tool.$kase" = s3pipe.order ] && ! cmp -s "$T/j.order" "$T/j.order.round"; then
		broke "(j) the order file of epoch 0 with --shuffle-seed $J_SEED differs from the first mount's"
	fi
	secs="$(j_kv "$T/j.out" secs)"
	mbps="$(calc "$bytes / $secs / 1e6" 1)"
	[ -n "$ticks" ] && cpu="$(calc "($ticks / $clk_tck) / ($bytes / 1073741824)" 2)"
	[ -n "$kb" ] && rss="$(calc "$kb / 1024" 1)"
	if [ -s "$T/j.stats" ]; then
		local op pf
		op="$(j_kv "$T/j.stats" tree.opens)" pf="$(j_kv "$T/j.stats" tree.opens_prefetched)"
		[ -n "$op" ] && extra="; opens $op, prefetched at open $pf"
		extra="$extra; S3 $(j_kv "$T/j.stats" s3.requests) requests ($(j_kv "$T/j.stats" s3.retries) retries), $(mib "$(j_kv "$T/j.stats" s3.bytes_received)") MiB; memory.peak $(mib "$(j_kv "$T/j.stats" memory.peak)") MiB"
	fi
	[ "$kase" = order ] && [ "$tool" = s3pipe ] && extra="$extra; order file read in $(calc "$(j_kv "$T/j.out" order_ms)" 1) ms"
	printf '  %-7s %-20s %9s MB/s  %7s CPU s/GiB  %7s MiB peak RSS  (%s s%s)\n' \
		"$tool" "$label" "$mbps" "$cpu" "$rss" "$(calc "$secs" 2)" "$extra"
	j_add "$tool.$kase.mbps" "$mbps"
	[ -n "$kb" ] && j_add "$tool.$kase.rss" "$rss"
	[ -n "$ticks" ] && j_add "$tool.$kase.cpu" "$cpu"
	[ "$tool" = s3pipe ] && j_note_kb "$kb"
	return 0
}

# j_first_byte KIND: fastfile or pipe: milliseconds from the mount command's
# start to the first byte of the first file of epoch 0's order (fastfile) or
# of j_0 (pipe), both --shuffle-seed J_SEED, in J_FB
j_first_byte() {
	local kind="$1" t0 t1 first="" file what ready kb
	J_FB=""
	t0=$(now)
	if [ "$kind" = fastfile ]; then
		S3PIPE_OPTS="--input-mode fastfile --shuffle-seed $J_SEED" start_daemon s3pipe j j
		ready=j
	else
		S3PIPE_OPTS="--shuffle-seed $J_SEED" start_daemon s3pipe j j
		ready=j_0
	fi
	if ! wait_ready "$MNT" "$DPID" $ready 0.001; then
		broke "(j) s3pipe ($kind) did not mount: $(tail -n 3 "$LOG" | tr '\n' ' ')"
		unmount_wait "$MNT" "$DPID"
		return 1
	fi
	file="$MNT/j_0" what=j_0
	if [ "$kind" = fastfile ]; then
		IFS= read -r first <"$MNT/.s3pipe-order/j_0"
		file="$MNT/j/$first" what="j/$first (the first line of .s3pipe-order/j_0)"
	fi
	if [ "$kind" = fastfile ] && [ -z "$first" ]; then
		: >"$T/dd.err"
		false
	else
		timeout 60 dd if="$file" of=/dev/null bs=1 count=1 status=none 2>"$T/dd.err"
	fi || {
		broke "(j) s3pipe ($kind) first byte of $what failed: $(cat "$T/dd.err") $(tail -n 2 "$LOG" | tr '\n' ' ')"
		unmount_wait "$MNT" "$DPID"
		return 1
	}
	t1=$(now)
	kb="$(proc_hwm_kb "$DPID")"
	ALIVE=0
	case "$(proc_state "$DPID")" in '' | Z) ;; *) ALIVE=1 ;; esac
	unmount_wait "$MNT" "$DPID"
	daemon_ok "(j) first byte ($kind):" s3pipe || return 1
	j_note_kb "$kb"
	J_FB="$(calc "($t1 - $t0) * 1000" 1)"
}

# j_pread: a FastFile mount of jr/ (one J_BIG object), J_PREADS random
# 4 KiB preads; S3 requests and bytes from .s3pipe-stats around them
j_pread() {
	local f rc kb req bytes secs reads short budget
	S3PIPE_OPTS="--input-mode fastfile" start_daemon s3pipe jr jr
	if ! wait_ready "$MNT" "$DPID" jr; then
		broke "(j) s3pipe did not mount jr/: $(tail -n 3 "$LOG" | tr '\n' ' ')"
		unmount_wait "$MNT" "$DPID"
		return 1
	fi
	f="$MNT/jr/obj-00000"
	cat "$MNT/.s3pipe-stats" >"$T/jr.0.json" 2>/dev/null
	timeout -k 5 $READ_TIMEOUT python3 "$J_READER" pread "$f" $J_PREADS $J_PREAD_SIZE 7 >"$T/jr.out" 2>"$T/jr.err"
	rc=$?
	cat "$MNT/.s3pipe-stats" >"$T/jr.1.json" 2>/dev/null
	kb="$(proc_hwm_kb "$DPID")"
	ALIVE=0
	case "$(proc_state "$DPID")" in '' | Z) ;; *) ALIVE=1 ;; esac
	unmount_wait "$MNT" "$DPID"
	reads="$(j_kv "$T/jr.out" reads 2>/dev/null)" short="$(j_kv "$T/jr.out" short 2>/dev/null)"
	if [ $rc -ne 0 ] || [ "${reads:-}" != "$J_PREADS" ] || [ "${short:-}" != 0 ]; then
		broke "(j) random reads of jr/obj-00000: ${reads:-?} reads, ${short:-?} short (exit $rc): $(tail -n 3 "$T/jr.err" | tr '\n' ' ')$(tail -n 2 "$LOG" | tr '\n' ' ')"
		daemon_ok "(j) random reads:" s3pipe
		return 1
	fi
	daemon_ok "(j) random reads:" s3pipe || return 1
	python3 "$J_READER" stats "$T/jr.0.json" >"$T/jr.0" && python3 "$J_READER" stats "$T/jr.1.json" >"$T/jr.1" || {
		broke "(j) random reads: no stats from $MNT/.s3pipe-stats"
		return 1
	}
	req=$(($(j_kv "$T/jr.1" s3.requests) - $(j_kv "$T/jr.0" s3.requests)))
	bytes=$(($(j_kv "$T/jr.1" s3.bytes_received) - $(j_kv "$T/jr.0" s3.bytes_received)))
	budget="$(j_kv "$T/jr.1" memory.budget)"
	secs="$(j_kv "$T/jr.out" secs)"
	local bpr rpr kpr
	bpr="$(calc "$bytes / $J_PART / $J_PREADS" 3)"
	rpr="$(calc "$req / $J_PREADS" 3)"
	kpr="$(calc "$bytes / 1024 / $J_PREADS" 1)"
	printf '  random 4 KiB reads: %d in %s s (%s ms a read); S3 +%d requests (%s a read), +%s MiB (%s KiB a read, %s blocks of %d MiB a read); peak RSS %s MiB (budget %s MiB, memory.peak %s MiB)\n' \
		$J_PREADS "$(calc "$secs" 2)" "$(calc "$secs * 1000 / $J_PREADS" 2)" $req "$rpr" "$(mib $bytes)" "$kpr" \
		"$bpr" $((J_PART >> 20)) "$(calc "${kb:-0} / 1024" 1)" "$(mib "${budget:-0}")" "$(mib "$(j_kv "$T/jr.1" memory.peak)")"
	j_add pread.blocks "$bpr"
	j_add pread.kib "$kpr"
	j_add pread.requests "$rpr"
	j_add pread.ms "$(calc "$secs * 1000 / $J_PREADS" 3)"
	[ -n "$kb" ] && j_add pread.rss "$(calc "$kb / 1024" 1)"
	j_note_kb "$kb"
}

# j_curl4k: signed curl, one process, J_PREADS GETs of 4 KiB (Range) of
# jr/obj-00000 at j_pread's offsets, one after another on one connection
j_curl4k() {
	local sign t0 t1 rc bytes o sep=""
	printf -v sign 'aws-sigv4 = "aws:amz:%s:s3"\nuser = "%s:%s"\nheader = "x-amz-content-sha256: %s"\n' \
		"$REGION" "$KEY_ID" "$SECRET" "$EMPTY_SHA256"
	python3 "$J_READER" offsets $J_BIG $J_PREADS $J_PREAD_SIZE 7 | while read -r o; do
		printf '%surl = "%s/%s/jr/obj-00000"\nrange = "%d-%d"\noutput = "/dev/null"\n%s' \
			"$sep" "$URL" "$BUCKET" "$o" $((o + J_PREAD_SIZE - 1)) "$sign"
		printf 'silent\nshow-error\nfail\nwrite-out = "%%{size_download}\\n"\n'
		sep="next"$'\n'
	done >"$T/jr.curl"
	t0=$(now)
	curl -K "$T/jr.curl" >"$T/jr.curl.sizes" 2>"$T/jr.curl.err"
	rc=$?
	t1=$(now)
	bytes="$(awk '{ s += $1 } END { printf "%d", s }' "$T/jr.curl.sizes")"
	if [ $rc -ne 0 ] || [ "$bytes" != $((J_PREADS * J_PREAD_SIZE)) ]; then
		broke "(j) curl's 4 KiB range GETs: $bytes bytes (exit $rc): $(tail -n 2 "$T/jr.curl.err" | tr '\n' ' ')"
		return 1
	fi
	printf '  signed curl, %d range GETs of 4 KiB at the same offsets, one connection: %s s (%s ms a GET)\n' \
		$J_PREADS "$(calc "$t1 - $t0" 2)" "$(calc "($t1 - $t0) * 1000 / $J_PREADS" 3)"
	j_add curl4k.ms "$(calc "($t1 - $t0) * 1000 / $J_PREADS" 3)"
}

# j_seq: a fresh FastFile mount of jr/, its one object read whole, dd bs=1M
j_seq() {
	local t0 t1 rc bytes
	S3PIPE_OPTS="--input-mode fastfile" start_daemon s3pipe jr jr
	if ! wait_ready "$MNT" "$DPID" jr; then
		broke "(j) s3pipe did not mount jr/: $(tail -n 3 "$LOG" | tr '\n' ' ')"
		unmount_wait "$MNT" "$DPID"
		return 1
	fi
	t0=$(now)
	timeout -k 5 $READ_TIMEOUT dd if="$MNT/jr/obj-00000" of=/dev/null bs=1M 2>"$T/jr.dd"
	rc=$?
	t1=$(now)
	ALIVE=0
	case "$(proc_state "$DPID")" in '' | Z) ;; *) ALIVE=1 ;; esac
	unmount_wait "$MNT" "$DPID"
	bytes="$(dd_bytes "$T/jr.dd")"
	if [ $rc -ne 0 ] || [ "$bytes" != $J_BIG ]; then
		broke "(j) dd of jr/obj-00000: $bytes of $J_BIG bytes (exit $rc)"
		daemon_ok "(j) sequential read:" s3pipe
		return 1
	fi
	daemon_ok "(j) sequential read:" s3pipe || return 1
	printf '  the same object read whole, dd bs=1M, a fresh mount: %s MB/s (%s s)\n' \
		"$(calc "$bytes / ($t1 - $t0) / 1e6" 1)" "$(calc "$t1 - $t0" 2)"
	j_add seq.mbps "$(calc "$bytes / ($t1 - $t0) / 1e6" 1)"
}

j_run() {
	local r tool kase
	echo
	echo "(j) FastFile: $J_COUNT objects x $((J_SIZE >> 10)) KiB = $(calc "$J_COUNT * $J_SIZE / 1048576" 1) MiB, a map-style reader of $J_WORKERS processes (open, read whole, close)"
	# the keys, and epoch 0's order with --shuffle-seed J_SEED from one
	# mount, for the peers' (1): a permutation of the keys
	for ((r = 0; r < J_COUNT; r++)); do printf 'obj-%05d\n' $r; done >"$T/j.keys"
	S3PIPE_OPTS="--input-mode fastfile --shuffle-seed $J_SEED" start_daemon s3pipe j j
	if wait_ready "$MNT" "$DPID" j; then
		timeout 60 cat "$MNT/.s3pipe-order/j_0" >"$T/j.order" 2>"$T/j.err" ||
			broke "(j) reading $MNT/.s3pipe-order/j_0 failed: $(cat "$T/j.err")"
	else
		broke "(j) s3pipe did not mount: $(tail -n 3 "$LOG" | tr '\n' ' ')"
	fi
	ALIVE=0
	case "$(proc_state "$DPID")" in '' | Z) ;; *) ALIVE=1 ;; esac
	unmount_wait "$MNT" "$DPID"
	daemon_ok "(j) the order file:" s3pipe
	if [ -s "$T/j.order" ] && LC_ALL=C sort "$T/j.order" | cmp -s - "$T/j.keys"; then
		echo "  the order of epoch 0 (--shuffle-seed $J_SEED): $(wc -l <"$T/j.order") paths, a permutation of the keys, starting $(head -n 3 "$T/j.order" | tr '\n' ' ')"
	else
		broke "(j) the order file of epoch 0 is not a permutation of the $J_COUNT keys ($(wc -l <"$T/j.order" 2>/dev/null) lines): the peers read key order in (1)"
		cp "$T/j.keys" "$T/j.order"
	fi
	for ((r = 0; r < runs; r++)); do
		J_ROUND=$r
		[ "$runs" -gt 1 ] && echo "  round $((r + 1))"
		for tool in s3pipe s3fs rclone; do
			want_tool "$tool" || continue
			for kase in order random pipe; do
				[ $kase = pipe ] && [ $tool != s3pipe ] && continue
				j_measure "$tool" "$kase"
				nap 0.3
			done
		done
	done
	echo
	echo "(j) first byte from the mount command's start, --shuffle-seed $J_SEED: FastFile (the order file's first file) vs Pipe (j_0); $J_FB_RUNS of each, alternating"
	local -a fbf=() fbp=()
	for ((r = 0; r < J_FB_RUNS; r++)); do
		j_first_byte fastfile && fbf+=("$J_FB")
		nap 0.3
		j_first_byte pipe && fbp+=("$J_FB")
		nap 0.3
	done
	[ ${#fbf[@]} = $J_FB_RUNS ] && J_FB_FF="$(median "${fbf[@]}")" &&
		printf '  FastFile %9s ms  (runs: %s)\n' "$J_FB_FF" "${fbf[*]}"
	[ ${#fbp[@]} = $J_FB_RUNS ] && J_FB_PIPE="$(median "${fbp[@]}")" &&
		printf '  Pipe     %9s ms  (runs: %s)\n' "$J_FB_PIPE" "${fbp[*]}"
	echo
	echo "(j) random reads: one object of $(mib $J_BIG 0) MiB under jr/, FastFile, $J_PREADS os.pread()s of $((J_PREAD_SIZE >> 10)) KiB at random offsets (random.Random(7)), one reader; blocks of $((J_PART >> 20)) MiB (s3pipe's default --part-size); --cache-size $CACHE_SIZE"
	for ((r = 0; r < runs; r++)); do
		J_ROUND=$r
		j_pread
		nap 0.3
		j_curl4k
		j_seq
		nap 0.3
	done
}

# j_best KEY, j_med KEY, j_max KEY: of JV[KEY] ("" if none)
j_best() {
	# shellcheck disable=SC2086
	[ -n "${JV[$1]:-}" ] && printf '%s\n' ${JV[$1]} | sort -g | tail -n 1
}
j_max() { j_best "$@"; }
j_med() {
	# shellcheck disable=SC2086
	[ -n "${JV[$1]:-}" ] && calc "$(median ${JV[$1]})" "${2:-1}"
}
# j_rounds A B: "R1 R2 ..." of A / B in the same round
j_rounds() {
	local r l=""
	for ((r = 0; r < runs; r++)); do
		[ -n "${JR["$1@$r"]:-}" ] && [ -n "${JR["$2@$r"]:-}" ] || continue
		l="$l $(calc "${JR["$1@$r"]} / ${JR["$2@$r"]}" 2)"
	done
	echo "${l# }"
}
# j_ratio A B: the median of the per-round ratios A / B ("" if none)
j_ratio() {
	local l
	l="$(j_rounds "$1" "$2")"
	# shellcheck disable=SC2086
	[ -n "$l" ] && calc "$(median $l)" 2
}

j_summary() {
	local tool kase v
	echo "j    FastFile, $J_COUNT x $((J_SIZE >> 10)) KiB, $J_WORKERS reader processes: MB/s (median and best of rounds), CPU s/GiB (median), peak RSS MiB (largest)"
	for tool in s3pipe s3fs rclone; do
		[ $tool = s3pipe ] || want_tool $tool || continue
		for kase in order random pipe; do
			[ $kase = pipe ] && [ $tool != s3pipe ] && continue
			v="$(j_med $tool.$kase.mbps)"
			if [ -z "$v" ]; then
				printf '     %-7s %-20s %9s\n' $tool "$(j_label $tool.$kase)" failed
				continue
			fi
			printf '     %-7s %-20s %9s %9s %8s %8s  (rounds:%s)\n' $tool "$(j_label $tool.$kase)" "$v" \
				"$(j_best $tool.$kase.mbps)" "$(j_med $tool.$kase.cpu 2)" "$(j_max $tool.$kase.rss)" "${JV[$tool.$kase.mbps]}"
		done
	done
	local line="ratios (j), medians of the per-round ratios:"
	v="$(j_ratio s3pipe.order.mbps s3pipe.pipe.mbps)"
	[ -n "$v" ] && line="$line (1)/(3) $v (per round: $(j_rounds s3pipe.order.mbps s3pipe.pipe.mbps));"
	for kase in order random; do
		for tool in s3fs rclone; do
			v="$(j_ratio s3pipe.$kase.mbps $tool.$kase.mbps)"
			[ -n "$v" ] && line="$line $([ $kase = order ] && echo "(1)" || echo "(2)") s3pipe/$tool $v (per round: $(j_rounds s3pipe.$kase.mbps $tool.$kase.mbps));"
		done
	done
	echo "${line%;}"
	if [ -n "${J_FB_FF:-}" ] && [ -n "${J_FB_PIPE:-}" ]; then
		echo "j    first byte from the mount command's start (median of $J_FB_RUNS): FastFile $J_FB_FF ms, Pipe $J_FB_PIPE ms, FastFile/Pipe $(calc "$J_FB_FF / $J_FB_PIPE" 2)"
	fi
	if [ -n "${JV[pread.blocks]:-}" ]; then
		echo "j    random 4 KiB reads over $(mib $J_BIG 0) MiB: KiB received a read (per round):${JV[pread.kib]}; S3 requests a read:${JV[pread.requests]}; ms a read:${JV[pread.ms]}; signed curl's ms a 4 KiB GET:${JV[curl4k.ms]:-}; s3pipe/curl $(j_ratio pread.ms curl4k.ms) (median of rounds); peak RSS MiB:${JV[pread.rss]:-}"
		echo "j    the same object read whole (dd bs=1M): MB/s (per round):${JV[seq.mbps]:-}"
	fi
}

j_targets() {
	local v tool kase min what budget_mib peak
	v="$(j_ratio s3pipe.order.mbps s3pipe.pipe.mbps)"
	if [ -n "$v" ]; then
		verdict "$v >= 0.8" "(j) FastFile in its order file's order >= 0.8 x Pipe mode, same objects: $v x (median; per round: $(j_rounds s3pipe.order.mbps s3pipe.pipe.mbps))"
	else
		echo "  FAIL  (j) FastFile in its order file's order >= 0.8 x Pipe mode: no figures"
	fi
	for kase in order random; do
		min=3 what="(1) in s3pipe's order (s3pipe: its order file)"
		[ $kase = random ] && min=2 what="(2) in a random order s3pipe is not told"
		for tool in s3fs rclone; do
			want_tool $tool || continue
			v="$(j_ratio s3pipe.$kase.mbps $tool.$kase.mbps)"
			if [ -n "$v" ]; then
				verdict "$v >= $min" "(j) $what: s3pipe >= $min x $tool: $v x (median; per round: $(j_rounds s3pipe.$kase.mbps $tool.$kase.mbps))"
			else
				echo "  FAIL  (j) $what: s3pipe >= $min x $tool: no figures"
			fi
		done
	done
	if [ -n "${J_FB_FF:-}" ] && [ -n "${J_FB_PIPE:-}" ]; then
		v="$(calc "$J_FB_FF / $J_FB_PIPE" 2)"
		verdict "$v <= 2" "(j) first file's first byte <= 2 x the Pipe channel's, from the mount command's start: $v x ($J_FB_FF ms vs $J_FB_PIPE ms, medians of $J_FB_RUNS)"
	else
		echo "  FAIL  (j) first file's first byte <= 2 x the Pipe channel's: no figures"
	fi
	v="$(j_max pread.kib)"
	if [ -n "$v" ]; then
		verdict "$v <= 256" "(j) random 4 KiB reads: <= 256 KiB from S3 a read on average, every round: at most $v (per round:${JV[pread.kib]})"
	else
		echo "  FAIL  (j) random 4 KiB reads: <= 256 KiB a read: no figures"
	fi
	v="$(j_ratio pread.ms curl4k.ms)"
	if [ -n "$v" ]; then
		verdict "$v <= 1.5" "(j) random 4 KiB reads: latency <= 1.5 x a signed curl range GET of 4 KiB: $v x (median; per round: $(j_rounds pread.ms curl4k.ms))"
	else
		echo "  FAIL  (j) random 4 KiB reads: latency <= 1.5 x curl's: no figures"
	fi
	budget_mib="$(calc "$(size_bytes "$CACHE_SIZE") / 1048576" 1)"
	if [ "$j_peak_kb" -gt 0 ]; then
		peak="$(calc "$j_peak_kb / 1024" 1)"
		verdict "$peak <= $budget_mib + 64" "(j) s3pipe peak RSS <= budget + 64 MiB in every case: at most $peak MiB (--cache-size $CACHE_SIZE; every (j) mount)"
	fi
}
