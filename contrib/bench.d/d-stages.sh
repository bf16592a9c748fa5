# (d) shuffle and RecordIO on small objects.
# What the channel stages cost a reader: (b)'s objects read through a
# channel shuffled from seed 1 and framed as RecordIO (one record per
# object), against the plain channel, one fresh mount each, seconds apart
# in every round.  The shuffled channel lists the prefix in full at mount,
# before the clock starts, so each is also timed from the command's start
# to the last byte (mount included).  MB/s and CPU count the objects'
# bytes (the payload), not the 8-byte record headers.
# Sourced by contrib/bench, which calls d_seed, d_run, d_summary and
# d_targets (the phases: contrib/bench.d/lib.sh).

# (b)'s objects, unless (b) seeds them
d_seed() {
	want_scen b || b_seed
}

d_run() {
	d_bytes=$((B_COUNT * B_SIZE))
	# one RecordIO part per object (B_SIZE < 2^29): header, payload, padding
	d_framed=$((B_COUNT * (8 + B_SIZE + (-B_SIZE & 3))))
	echo
	echo "(d) $B_COUNT objects x $((B_SIZE >> 10)) KiB: s3pipe --shuffle-seed 1 --record-wrapper recordio vs plain s3pipe (payload MB/s)"
	for ((r = 0; r < runs; r++)); do
		d_plain="" d_sr="" d_plain_e2e="" d_sr_e2e=""
		# alternate which goes first, so that drift hits both alike
		for v in $((r % 2)) $((1 - r % 2)); do
			if [ $v = 0 ]; then
				FUSE_E2E=1 FUSE_LABEL=plain measure_fuse d s3pipe b $d_bytes &&
					d_plain="$S3PIPE_MBPS" d_plain_e2e="$E2E_MBPS"
			else
				FUSE_E2E=1 FUSE_SLOT=s3pipe-sr FUSE_LABEL="shuffled + recordio" PAYLOAD=$d_bytes \
					S3PIPE_OPTS="--shuffle-seed 1 --record-wrapper recordio" \
					measure_fuse d s3pipe b $d_framed && d_sr="$S3PIPE_MBPS" d_sr_e2e="$E2E_MBPS"
			fi
			nap 0.3
		done
		if [ -n "$d_plain" ] && [ -n "$d_sr" ]; then
			ROUND_RATIOS[d]="${ROUND_RATIOS[d]:-} $(calc "$d_sr / $d_plain" 2)"
			ROUND_RATIOS[d.e2e]="${ROUND_RATIOS[d.e2e]:-} $(calc "$d_sr_e2e / $d_plain_e2e" 2)"
		fi
	done
}

d_summary() {
	sum_row d s3pipe s3pipe
	sum_row d s3pipe-sr s3pipe
	x="$(ratio_of d s3pipe-sr s3pipe)"
	[ -n "$x" ] && echo "ratio (d): shuffled + recordio / plain $x$(per_round d)  (payload bytes)"
	a="${R[d.s3pipe-sr.e2e]:-}" b="${R[d.s3pipe.e2e]:-}"
	[ -n "$a" ] && [ -n "$b" ] &&
		echo "  mount included (the shuffle lists every key before the mount): $a vs $b MB/s, $(calc "$a / $b" 2)$(per_round d.e2e)"
}

d_targets() {
	if [ -n "${R[d.s3pipe.mbps]:-}" ] && [ -n "${R[d.s3pipe-sr.mbps]:-}" ]; then
		x="$(ratio_of d s3pipe-sr s3pipe)"
		verdict "$x >= 0.9" "(d) shuffled + recordio >= 0.9 x plain s3pipe: $x x$(per_round d)"
		if [ -n "${R[d.s3pipe-sr.e2e]:-}" ] && [ -n "${R[d.s3pipe.e2e]:-}" ]; then
			x="$(calc "${R[d.s3pipe-sr.e2e]} / ${R[d.s3pipe.e2e]}" 2)"
			verdict "$x >= 0.9" "(d) the same, mount included: $x x$(per_round d.e2e)"
		fi
	fi
}
