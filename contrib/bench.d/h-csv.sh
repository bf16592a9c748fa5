# (h) CSV to protobuf RecordIO.
# (h1) The command: s3pipe-convert csv on (h)'s objects concatenated (one
# file in $T, in the page cache after an untimed first run that also
# counts the output's bytes) to /dev/null, with --threads 1 and with the
# default (one thread per core), alternating, runs times each: MB/s of CSV
# (10^6 input bytes per second) and CPU seconds (user + sys) per GiB of
# CSV, medians.  The Python reference (contrib/bench-convert-ref.py, run by
# Debian's python3 with numpy and protobuf) converts slice.csv, the first
# H_REF_SIZE bytes, the way SageMaker's SDK does, runs times; its time is
# the one it reports (parsing and the encoding loop, not the interpreter's
# start or protoc).  s3pipe-convert converts the same slice too, and the
# two outputs are compared byte for byte.
# (h2) The channel: the objects as h=s3://bench/h/, read with dd bs=1M
# converted (--convert csv) and unconverted, one fresh mount each, seconds
# apart in every round (which goes first alternates).  MB/s and the
# daemon's CPU s/GiB count the CSV bytes in both; s3rver's CPU time over
# each measurement (mount to unmount) is given per GiB of CSV and as a
# share of a CPU over the read.
# Sourced by contrib/bench, which calls h_needs, h_seed, h_run, h_summary
# and h_targets (the phases: contrib/bench.d/lib.sh).
# 4 x 256 MiB of CSV, the Python reference on the first 64 MiB (--quick:
# 4 x 32 MiB, 16 MiB)
H_COUNT=4 H_SIZE=$(((quick ? 32 : 256) << 20)) H_REF_SIZE=$(((quick ? 16 : 64) << 20))
H_PY=/usr/bin/python3 # (h): Debian's, with python3-numpy (and python3-protobuf)

h_needs() {
	{ [ -x "$H_PY" ] && "$H_PY" -c 'import numpy' 2>/dev/null; } ||
		die "(h) needs $H_PY with numpy (Debian package python3-numpy)"
}

# (h) CSV as numpy.savetxt writes it: H_COUNT files obj-00000.. of whole
# rows, each at most H_SIZE bytes, rows of a 0/1 label and 100 float32
# columns in a fixed mix of formats: 50 "%.6g" (scales 1e-3 to 1e3), 25
# "%.9g" (float32 values, a round trip), 10 "%.18e" (savetxt's default),
# 10 "%d" counts, 5 "%.4f".  Made once (numpy, one process per file) and
# kept in BENCH_DATA_DIR, with slice.csv: the first H_REF_SIZE bytes of
# obj-00000 cut after its last whole row, for the Python reference.
H_DIR=""
h_seed() {
	H_DIR="${BENCH_DATA_DIR:-${TMPDIR:-/tmp}/s3pipe-bench-data}/h-v1-$H_COUNT-$H_SIZE-$H_REF_SIZE"
	if [ ! -f "$H_DIR/done" ]; then
		t_h=$(now)
		rm -rf "$H_DIR.tmp"
		mkdir -p "$H_DIR.tmp" || die "cannot create $H_DIR.tmp"
		cat >"$H_DIR.tmp/gen.py" <<'EOF_PY'
import sys
import numpy as np
path, size, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
lay = np.random.default_rng(0)  # the same columns in every file
kinds = lay.permutation(["g6"] * 50 + ["g9"] * 25 + ["e18"] * 10 + ["d"] * 10 + ["f4"] * 5)
fmts = {"g6": "%.6g", "g9": "%.9g", "e18": "%.18e", "d": "%d", "f4": "%.4f"}
fmt = ",".join(["%d"] + [fmts[k] for k in kinds]) + "\n"
scale = 10.0 ** lay.integers(-3, 4, size=len(kinds))
rng = np.random.default_rng(seed)
n, rows = 0, 8192
with open(path, "w") as f:
    while True:
        m = np.empty((rows, 1 + len(kinds)))
        m[:, 0] = rng.integers(0, 2, rows)
        for j, k in enumerate(kinds):
            if k == "g6":
                c = rng.standard_normal(rows) * scale[j]
            elif k == "g9":
                c = rng.standard_normal(rows).astype(np.float32).astype(np.float64)
            elif k == "e18":
                c = rng.uniform(-1e3, 1e3, rows)
            elif k == "d":
                c = rng.integers(0, 1000, rows).astype(np.float64)
            else:
                c = rng.uniform(-100, 100, rows)
            m[:, j + 1] = c
        text = "".join(fmt % tuple(r) for r in m.tolist())
        if n + len(text) > size:
            cut = text.rfind("\n", 0, size - n) + 1
            f.write(text[:cut])
            break
        f.write(text)
        n += len(text)
EOF_PY
		h_pids=()
		for ((i = 0; i < H_COUNT; i++)); do
			"$H_PY" "$H_DIR.tmp/gen.py" "$(printf '%s/obj-%05d' "$H_DIR.tmp" "$i")" "$H_SIZE" "$((i + 1))" &
			h_pids+=($!)
		done
		h_rc=0
		for p in "${h_pids[@]}"; do wait "$p" || h_rc=1; done
		[ $h_rc = 0 ] || die "cannot generate (h)'s CSV in $H_DIR.tmp"
		"$H_PY" -c 'import sys; d = open(sys.argv[1], "rb").read(int(sys.argv[2])); open(sys.argv[3], "wb").write(d[:d.rfind(b"\n") + 1])' \
			"$H_DIR.tmp/obj-00000" "$H_REF_SIZE" "$H_DIR.tmp/slice.csv" || die "cannot cut (h)'s slice"
		rm -f "$H_DIR.tmp/gen.py"
		touch "$H_DIR.tmp/done"
		rm -rf "$H_DIR"
		mv "$H_DIR.tmp" "$H_DIR" || die "cannot move $H_DIR.tmp to $H_DIR"
		echo "(h) made $H_COUNT CSV files in $H_DIR in $(calc "$(now) - $t_h" 1) s (kept for later runs)"
	fi
	put_cfg "$H_DIR" h >>"$T/put.cfg"
	H_BYTES="$(stat -c %s "$H_DIR"/obj-* | awk '{ s += $1 } END { printf "%d", s }')"
}

declare -A HV=() # HV[KEY]: a value per run
h_add() { HV["$1"]="${HV["$1"]:-} $2"; }
# h_med KEY [DIGITS]: the median of HV[KEY]'s numbers, or nothing
h_med() {
	local v
	# shellcheck disable=SC2086
	v="$(printf '%s\n' ${HV[$1]:-} | grep '^[0-9][0-9.]*$' | tr '\n' ' ')"
	# shellcheck disable=SC2086
	[ -n "$v" ] && calc "$(median $v)" "${2:-1}"
}
# conv_run LABEL IN ARGS...: s3pipe-convert csv ARGS IN /dev/null once;
# sets CONV_MBPS and CONV_CPU
conv_run() {
	local label="$1" in="$2" rc bytes
	shift 2
	CONV_MBPS="" CONV_CPU=""
	bytes="$(stat -c %s "$in")"
	timed conv "$convert_bin" csv "$@" "$in" /dev/null
	rc=$?
	if [ $rc -ne 0 ]; then
		broke "(h) $label on $(basename "$in") failed (exit $rc$([ $rc -gt 128 ] && echo ", signal $(kill -l $((rc - 128)) 2>/dev/null)")): $(tail -n 2 "$T/conv.err" | tr '\n' ' ')"
		return 1
	fi
	rate "$bytes" conv
	CONV_MBPS="$MBPS" CONV_CPU="$CPU"
	printf '  %-30s %9s MB/s  %7s CPU s/GiB  (%s s, %s MiB of CSV)\n' \
		"$label" "$CONV_MBPS" "$CONV_CPU" "$(calc "$SECS" 2)" "$(mib "$bytes")"
}
H_REF_WHY="" H_CMP="" H_CPU_NOTE=""
h_run() {
	echo
	echo "(h) CSV to protobuf RecordIO: $H_COUNT CSV objects, $(mib "$H_BYTES") MiB (a label and 100 float32 columns, $(awk -F, 'NR == 1 { print NF }' "$H_DIR/obj-00000") fields a row)"
	cat "$H_DIR"/obj-* >"$T/h.csv" || die "cannot concatenate (h)'s CSV into $T"
	sync # no write-back of the seeding or of that copy during the runs
	# untimed: warms the page cache, counts the RecordIO bytes (h2 expects them)
	H_RIO_BYTES="$("$convert_bin" csv "$T/h.csv" 2>"$T/conv.err" | wc -c)"
	rc=$?
	if [ $rc -ne 0 ] || [ "${H_RIO_BYTES:-0}" -le 0 ]; then
		broke "(h) s3pipe-convert csv failed on (h)'s $(mib "$H_BYTES") MiB of CSV (exit $rc$([ $rc -gt 128 ] && echo ", signal $(kill -l $((rc - 128)) 2>/dev/null)")): $(tail -n 2 "$T/conv.err" | tr '\n' ' ')"
		H_RIO_BYTES=""
	else
		echo "  s3pipe-convert csv: $(mib "$H_BYTES") MiB of CSV -> $(mib "$H_RIO_BYTES") MiB of RecordIO (untimed first run)"
	fi
	# the reference's protobuf classes, once
	if ! "$H_PY" -c 'import google.protobuf' 2>/dev/null; then
		H_REF_WHY="$H_PY lacks the protobuf package (Debian package python3-protobuf)"
	elif ! command -v protoc >/dev/null 2>&1; then
		H_REF_WHY="protoc is not installed (Debian package protobuf-compiler)"
	elif ! { mkdir -p "$T/pb" && protoc --python_out="$T/pb" -I "$repo/channel" "$repo/channel/record.proto"; }; then
		H_REF_WHY="protoc failed on channel/record.proto"
	fi
	[ -n "$H_REF_WHY" ] && notes+=("(h) the Python reference: skipped: $H_REF_WHY")
	h_ncpu="$ncpu"
	echo "  (h1) s3pipe-convert csv, $(mib "$H_BYTES") MiB to /dev/null; the Python reference and s3pipe-convert on the first $(mib "$(stat -c %s "$H_DIR/slice.csv")") MiB"
	for ((r = 0; r < runs; r++)); do
		for v in $((r % 2)) $((1 - r % 2)); do
			if [ $v = 0 ]; then
				conv_run "s3pipe-convert --threads 1" "$T/h.csv" --threads 1 &&
					{ h_add h1.t1.mbps "$CONV_MBPS"; h_add h1.t1.cpu "$CONV_CPU"; }
			else
				conv_run "s3pipe-convert (--threads $h_ncpu)" "$T/h.csv" &&
					{ h_add h1.tn.mbps "$CONV_MBPS"; h_add h1.tn.cpu "$CONV_CPU"; h_round_tn="$CONV_MBPS"; }
			fi
		done
		conv_run "s3pipe-convert, the slice" "$H_DIR/slice.csv" && h_add h1.slice.mbps "$CONV_MBPS"
		[ -z "$H_REF_WHY" ] || continue
		if "$H_PY" "$repo/contrib/bench-convert-ref.py" --pb-dir "$T/pb" "$H_DIR/slice.csv" "$T/h.ref.rio" \
			>"$T/ref.out" 2>"$T/ref.err"; then
			ref_s="$(sed -n 's/.*total_s=\([0-9.]*\).*/\1/p' "$T/ref.out")"
			v="$(calc "$(stat -c %s "$H_DIR/slice.csv") / $ref_s / 1e6" 1)"
			h_add h1.ref.mbps "$v"
			# this round's ratio, side by side
			[ -z "${h_round_tn:-}" ] || h_add h1.ratio "$(calc "$h_round_tn / $v" 1)"
			h_round_tn=
			printf '  %-30s %9s MB/s  %7s CPU s/GiB  (%s s: %s)\n' "Python reference (SDK's way)" "$v" - \
				"$(calc "$ref_s" 2)" "$(sed 's/ total_s=.*//' "$T/ref.out")"
		else
			broke "(h) the Python reference failed: $(tail -n 2 "$T/ref.err" | tr '\n' ' ')"
		fi
	done
	# the same slice, the same bytes?
	if [ -z "$H_REF_WHY" ] && [ -s "$T/h.ref.rio" ]; then
		if ! "$convert_bin" csv "$H_DIR/slice.csv" "$T/h.slice.rio" 2>"$T/conv.err"; then
			broke "(h) s3pipe-convert csv failed on the slice: $(tail -n 2 "$T/conv.err" | tr '\n' ' ')"
		elif cmp -s "$T/h.ref.rio" "$T/h.slice.rio"; then
			H_CMP="identical byte for byte ($(stat -c %s "$T/h.slice.rio") bytes, $(grep -o 'rows=[0-9]*' "$T/ref.out" | cut -d= -f2) records)"
		else
			# which one is right: the independent checker (exact float32
			# rounding) on each
			H_CMP="DIFFERENT: $(cmp "$T/h.ref.rio" "$T/h.slice.rio" 2>&1 | head -n 1)"
			for o in ref slice; do
				if "$H_PY" "$repo/tests/convert_check.py" --pb-dir "$T/pb" check csv "$T/h.$o.rio" "$H_DIR/slice.csv" \
					>"$T/check.out" 2>&1; then
					H_CMP="$H_CMP; $o: matches the exact expectation"
				else
					H_CMP="$H_CMP; $o: $(head -c 300 "$T/check.out")"
				fi
			done
			notes+=("(h) the reference's output and s3pipe-convert's differ: $H_CMP")
		fi
		rm -f "$T/h.ref.rio" "$T/h.slice.rio"
		echo "  the reference's output vs s3pipe-convert's, same slice: $H_CMP"
	fi
	rm -f "$T/h.csv"

	echo "  (h2) a channel of the $H_COUNT objects, --convert csv vs unconverted, CSV MB/s (dd bs=1M)"
	[ -n "$H_RIO_BYTES" ] || echo "  skipped: the converted size is not known (s3pipe-convert failed above)"
	for ((r = 0; r < runs && ${#H_RIO_BYTES} > 0; r++)); do
		h_plain="" h_conv=""
		for v in $((r % 2)) $((1 - r % 2)); do
			st0="$(server_ticks)"
			ok=0
			if [ $v = 0 ]; then
				key=plain
				FUSE_LABEL="unconverted" measure_fuse h s3pipe h "$H_BYTES" && ok=1 h_plain="$S3PIPE_MBPS"
			else
				key=conv
				FUSE_SLOT=s3pipe-conv FUSE_LABEL="--convert csv" PAYLOAD="$H_BYTES" S3PIPE_OPTS="--convert csv" \
					measure_fuse h s3pipe h "$H_RIO_BYTES" && ok=1 h_conv="$S3PIPE_MBPS"
			fi
			st1="$(server_ticks)"
			if [ $ok = 1 ]; then
				h_add "h2.$key.mbps" "$S3PIPE_MBPS"
				h_add "h2.$key.cpu" "$FUSE_CPU"
				srv_s="$(calc "($st1 - $st0) / $clk_tck" 2)"
				h_add "h2.$key.srv" "$(calc "$srv_s / ($H_BYTES / 1073741824)" 2)"
				h_add "h2.$key.share" "$(calc "$srv_s / $FUSE_SECS" 2)"
				echo "            s3rver: $(calc "$srv_s / ($H_BYTES / 1073741824)" 2) CPU s/GiB, $(calc "$srv_s / $FUSE_SECS" 2) of a CPU over the read (mount to unmount)"
			fi
			nap 0.3
		done
		if [ -n "$h_plain" ] && [ -n "$h_conv" ]; then
			ROUND_RATIOS[h]="${ROUND_RATIOS[h]:-} $(calc "$h_conv / $h_plain" 2)"
		fi
	done
	if [ -n "${ROUND_RATIOS[h]:-}" ]; then
		# shellcheck disable=SC2086
		echo "  converted / unconverted, per round:${ROUND_RATIOS[h]} (median $(median ${ROUND_RATIOS[h]}))"
		# what the converted rate costs: CPUs kept busy at that rate
		hc="$(h_med h2.conv.mbps)" hcc="$(h_med h2.conv.cpu 2)" hcs="$(h_med h2.conv.share 2)"
		hp="$(h_med h2.plain.mbps)" hpc="$(h_med h2.plain.cpu 2)" hps="$(h_med h2.plain.share 2)"
		if [ -n "$hc" ] && [ -n "$hcc" ] && [ -n "$hcs" ] && [ -n "$hp" ] && [ -n "$hpc" ] && [ -n "$hps" ]; then
			dcores="$(calc "$hcc * $hc * 1e6 / 1073741824" 2)"
			pcores="$(calc "$hpc * $hp * 1e6 / 1073741824" 2)"
			busy="$(calc "$dcores + $hcs" 2)"
			H_CPU_NOTE="converted: $hc MB/s of CSV, the daemon $hcc CPU s/GiB ($dcores CPUs busy at that rate) and s3rver $hcs of a CPU, $busy of the $ncpu CPUs; unconverted: $hp MB/s, the daemon $hpc CPU s/GiB ($pcores CPUs), s3rver $hps; so converting costs the daemon $(calc "$hcc - $hpc" 2) CPU s/GiB, s3pipe-convert $(h_med h1.tn.cpu 2); s3pipe-convert alone: $(h_med h1.t1.mbps) MB/s with --threads 1, $(h_med h1.tn.mbps) MB/s with --threads $h_ncpu (medians)"
			if awk "BEGIN { exit !($busy >= 0.85 * $ncpu) }"; then
				H_CPU_NOTE="the converted channel is CPU-bound: $H_CPU_NOTE"
			else
				H_CPU_NOTE="the converted channel is not CPU-bound by this measure: $H_CPU_NOTE"
			fi
			echo "  $H_CPU_NOTE"
		fi
	fi
}

h_summary() {
	v="$(h_med h1.tn.mbps)"
	[ -n "$v" ] && printf 'h    s3pipe-convert csv, %s MiB of CSV to /dev/null: %s MB/s with --threads %s (the default, one per core), %s MB/s with --threads 1; %s and %s CPU s/GiB (medians)\n' \
		"$(mib "$H_BYTES")" "$v" "$h_ncpu" "$(h_med h1.t1.mbps)" "$(h_med h1.tn.cpu 2)" "$(h_med h1.t1.cpu 2)"
	r="$(h_med h1.ref.mbps)"
	if [ -n "$r" ]; then
		printf 'h    Python reference (np.loadtxt, then the SDK'"'"'s write_numpy_to_dense_tensor loop), first %s MiB: %s MB/s; s3pipe-convert on that slice: %s MB/s\n' \
			"$(mib "$(stat -c %s "$H_DIR/slice.csv")")" "$r" "$(h_med h1.slice.mbps)"
		[ -n "$v" ] && echo "ratio (h1): s3pipe-convert / the Python reference $(h_med h1.ratio 1) (MB/s of CSV, median of per-round ratios:${HV[h1.ratio]:-}; of the medians $(calc "$v / $r" 1); on the same slice $(calc "$(h_med h1.slice.mbps) / $r" 1))"
		echo "     the reference's output vs s3pipe-convert's on the slice: ${H_CMP:-not compared}"
	elif [ -n "$H_REF_WHY" ]; then
		echo "h    Python reference: skipped: $H_REF_WHY"
	fi
	sum_row h s3pipe s3pipe
	sum_row h s3pipe-conv s3pipe
	x="$(ratio_of h s3pipe-conv s3pipe)"
	[ -n "$x" ] && echo "ratio (h2): --convert csv / unconverted $x (best runs)$(per_round h)  (CSV MB/s)"
	[ -n "$H_CPU_NOTE" ] && echo "     $H_CPU_NOTE"
	[ -n "$(h_med h2.conv.srv)" ] &&
		echo "     s3rver CPU s per GiB of CSV (medians): $(h_med h2.conv.srv 2) converted, $(h_med h2.plain.srv 2) unconverted"
}

h_targets() {
	x="$(h_med h1.ratio 1)"
	if [ -n "$x" ]; then
		verdict "$x >= 20" "(h) s3pipe-convert >= 20 x the SDK-style Python reference (MB/s of CSV, median of per-round ratios:${HV[h1.ratio]:-}): $x x"
	else
		echo "  FAIL  (h) s3pipe-convert >= 20 x the SDK-style Python reference: no figures${H_REF_WHY:+ ($H_REF_WHY)}"
	fi
	if [ -n "${ROUND_RATIOS[h]:-}" ]; then
		# shellcheck disable=SC2086
		x="$(median ${ROUND_RATIOS[h]})"
		verdict "$x >= 0.7" "(h) a channel --convert csv >= 0.7 x unconverted (CSV MB/s, median of per-round ratios): $x x$(per_round h)"
	else
		echo "  FAIL  (h) a channel --convert csv >= 0.7 x unconverted: no figures"
	fi
}
