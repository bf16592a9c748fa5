# (b) small objects: B_COUNT objects x B_SIZE, read once, curl (the limit,
# calibrated) then s3pipe, s3fs and rclone in every round; then the
# server's own time to list the prefix.  (d) reads the same objects.
# Sourced by contrib/bench, which calls b_seed, b_run, b_summary and
# b_targets (the phases: contrib/bench.d/lib.sh).
B_COUNT=$((quick ? 500 : 5000)) B_SIZE=$((64 << 10))

b_seed() {
	gen "$T/data/b" $B_COUNT $B_SIZE
	put_cfg "$T/data/b" b >>"$T/put.cfg"
}

b_run() {
	b_bytes=$((B_COUNT * B_SIZE))
	echo
	echo "(b) $B_COUNT objects x $((B_SIZE >> 10)) KiB = $(calc "$b_bytes / 1048576" 1) MiB"
	if want_tool curl; then
		curl_cfgs "$T/b.whole.cfg" b $B_COUNT $B_SIZE 0
		calibrate_curl b $b_bytes "whole objects, 8 parallel" 8 "$T/b.whole.cfg" \
			"whole objects, 16 parallel" 16 "$T/b.whole.cfg" \
			"whole objects, 32 parallel" 32 "$T/b.whole.cfg" \
			"whole objects, 64 parallel" 64 "$T/b.whole.cfg"
	fi
	rounds b b $b_bytes
	# what the FUSE tools pay and curl (given the keys) does not: s3rver
	# walks its directory synchronously for every page, stalling all GETs
	B_LIST_MS="$(list_all_ms b)"
	echo "  server alone, listing b/ in pages of 1000 (curl): $B_LIST_MS ms"
}

b_summary() {
	peer_rows b
	a="${R["b.s3pipe.mbps"]:-}" b="${R["b.curl.mbps"]:-}"
	if [ -n "$a" ] && [ -n "$b" ] && [ -n "${B_LIST_MS:-}" ]; then
		b="$(calc "$b_bytes / ($b_bytes / ($b * 1e6) + $B_LIST_MS / 1000) / 1e6" 1)"
		echo "  (curl given the keys skips the listing; its best time plus the server's time to list b/ is $b MB/s, s3pipe/that $(calc "$a / $b" 2))"
	fi
	peer_refs b
}

b_targets() {
	peer_targets b 0.9 6 ""
}
