# (f) time to first byte, shuffled.
# What a shuffle costs at start: (c)'s prefix of 20,000 objects served
# shuffled (--shuffle-seed 1) vs in key order, cold start (command ->
# first byte) and open() -> first byte on a fresh mount, alternating, median
# of 3.  A shuffled epoch's order needs every key, so s3pipe lists the
# prefix in full before it mounts; the unshuffled channel needs one page.
# Sourced by contrib/bench, which calls f_seed, f_run, f_summary and
# f_targets (the phases: contrib/bench.d/lib.sh).

# (c)'s C_BIG objects, unless (c) seeds them
f_seed() {
	want_scen c || c_seed_big
}

f_run() {
	echo
	echo "(f) s3pipe time to first byte on $C_BIG objects: shuffled (--shuffle-seed 1) vs unshuffled, median of $C_RUNS"
	declare -gA F
	for kind in cold open; do
		TTFB_SCEN=f ttfb_medians $kind F plain cbig "" "$(printf '%-10s' unshuffled)" \
			shuf cbig "--shuffle-seed 1" "$(printf '%-10s' shuffled)"
	done
	F_LIST_MS="$(list_all_ms cbig)"
	echo "  server alone, listing cbig/ in full in pages of 1000 (curl): $F_LIST_MS ms"
}

f_summary() {
	for kind in cold open; do
		[ -n "${F[$kind.shuf]:-}" ] && [ -n "${F[$kind.plain]:-}" ] || continue
		printf 'f    %-35s %s ms shuffled, %s ms unshuffled (%s objects)  ratio %s\n' \
			"$([ $kind = cold ] && echo "cold start (command -> first byte):" || echo "open() -> first byte (mounted):")" \
			"${F[$kind.shuf]}" "${F[$kind.plain]}" $C_BIG "$(calc "${F[$kind.shuf]} / ${F[$kind.plain]}" 2)"
	done
	[ -n "${F_LIST_MS:-}" ] &&
		echo "f    s3rver alone lists the $C_BIG keys in $F_LIST_MS ms (pages of 1000), which a shuffle waits for"
}

f_targets() {
	for kind in cold open; do
		[ -n "${F[$kind.shuf]:-}" ] && [ -n "${F[$kind.plain]:-}" ] || continue
		x="$(calc "${F[$kind.shuf]} / ${F[$kind.plain]}" 2)"
		verdict "$x <= 3" "(f) $([ $kind = cold ] && echo "cold start" || echo "open()") ttfb shuffled <= 3 x unshuffled ($C_BIG objects): $x x"
	done
}
