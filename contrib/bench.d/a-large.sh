# (a) large objects: A_COUNT objects x A_SIZE, read once, curl (the limit,
# calibrated) then s3pipe, s3fs and rclone in every round.
# Sourced by contrib/bench, which calls a_seed, a_run, a_summary and
# a_targets (the phases: contrib/bench.d/lib.sh).
A_COUNT=4 A_SIZE=$(((quick ? 32 : 256) << 20))

a_seed() {
	gen "$T/data/a" $A_COUNT $A_SIZE
	put_cfg "$T/data/a" a >>"$T/put.cfg"
}

a_run() {
	a_bytes=$((A_COUNT * A_SIZE))
	echo
	echo "(a) $A_COUNT objects x $((A_SIZE >> 20)) MiB = $((a_bytes >> 20)) MiB"
	# the machine's speed drifts: each run measures every tool once, side
	# by side, and the best of the runs counts for each
	if want_tool curl; then
		curl_cfgs "$T/a.whole.cfg" a $A_COUNT $A_SIZE 0
		curl_cfgs "$T/a.range8.cfg" a $A_COUNT $A_SIZE $((8 << 20))
		curl_cfgs "$T/a.range32.cfg" a $A_COUNT $A_SIZE $((32 << 20))
		calibrate_curl a $a_bytes "whole objects, $A_COUNT parallel" $A_COUNT "$T/a.whole.cfg" \
			"8 MiB ranges, 4 parallel" 4 "$T/a.range8.cfg" \
			"8 MiB ranges, 8 parallel" 8 "$T/a.range8.cfg" \
			"8 MiB ranges, 16 parallel" 16 "$T/a.range8.cfg" \
			"8 MiB ranges, 32 parallel" 32 "$T/a.range8.cfg" \
			"32 MiB ranges, 4 parallel" 4 "$T/a.range32.cfg" \
			"32 MiB ranges, 8 parallel" 8 "$T/a.range32.cfg"
	fi
	rounds a a $a_bytes
}

a_summary() {
	peer_rows a
	peer_refs a
}

a_targets() {
	peer_targets a 0.9 3 3
	if want_tool curl && [ -n "${ROUND_CPU_RATIOS[a]:-}" ]; then
		# shellcheck disable=SC2086
		x="$(median ${ROUND_CPU_RATIOS[a]})"
		verdict "$x <= 1.5" "(a) s3pipe's CPU s/GiB <= 1.5 x curl's: $x x (per round:${ROUND_CPU_RATIOS[a]}, median $x)"
	fi
}
