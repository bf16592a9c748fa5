# (c) s3pipe time to first byte on a prefix of C_BIG objects of C_SIZE
# bytes against a prefix of C_SMALL: cold start (command start -> first
# byte, mount included) and open() -> first byte on a freshly mounted
# file, median of C_RUNS each; then the server's own time for a first
# list page.  (f) reads the same C_BIG objects.
# Sourced by contrib/bench, which calls c_seed, c_run, c_summary and
# c_targets (the phases: contrib/bench.d/lib.sh).
C_BIG=$((quick ? 2000 : 20000)) C_SMALL=10 C_SIZE=1024 C_RUNS=3

# c_seed_big: the C_BIG objects alone (what (f) needs)
c_seed_big() {
	# s3rver keeps a key's "/" as a directory and reads a whole directory for
	# every list page: 20,000 keys in one directory would make each page cost
	# O(prefix size) on the server, which AWS S3 does not do.  Keys in groups
	# of 100 (cbig/000/obj-00000 ...) keep the server's cost per page
	# proportional to the page; both prefixes use the same layout.
	gen "$T/data/cbig" $C_BIG $C_SIZE
	put_cfg "$T/data/cbig" cbig 100 >>"$T/put.cfg"
}
c_seed() {
	c_seed_big
	gen "$T/data/csmall" $C_SMALL $C_SIZE
	put_cfg "$T/data/csmall" csmall 100 >>"$T/put.cfg"
}

# list_ms PREFIX MAXKEYS: the server's own time for the first ListObjectsV2 page
list_ms() {
	curl -sS --fail -o /dev/null -w '%{time_total}' \
		"$URL/$BUCKET?list-type=2&prefix=$1/&max-keys=$2" |
		awk '{ printf "%.1f", $1 * 1000 }'
}

c_run() {
	echo
	echo "(c) s3pipe time to first byte: prefix of $C_BIG objects vs $C_SMALL (x $C_SIZE bytes), median of $C_RUNS"
	declare -gA C
	for kind in cold open; do
		ttfb_medians $kind C csmall csmall "" "$(printf '%6s objects:' $C_SMALL)" \
			cbig cbig "" "$(printf '%6s objects:' $C_BIG)"
	done
	for mk in 1000 100; do
		for p in csmall cbig; do
			list_ms $p $mk >/dev/null # warm up
			ls_vals=()
			for ((r = 0; r < C_RUNS; r++)); do ls_vals+=("$(list_ms $p $mk)"); done
			C["list$mk.$p"]="$(median "${ls_vals[@]}")"
		done
		printf '  server alone, first ListObjectsV2 page with max-keys=%s (curl): %s ms for %s, %s ms for %s\n' \
			$mk "${C[list$mk.csmall]}" $C_SMALL "${C[list$mk.cbig]}" $C_BIG
	done
}

c_summary() {
	if [ -n "${C[cold.cbig]:-}" ] && [ -n "${C[cold.csmall]:-}" ]; then
		printf 'c    cold start (command -> first byte): %s ms for %s objects, %s ms for %s  ratio %s\n' \
			"${C[cold.cbig]}" $C_BIG "${C[cold.csmall]}" $C_SMALL "$(calc "${C[cold.cbig]} / ${C[cold.csmall]}" 2)"
	fi
	if [ -n "${C[open.cbig]:-}" ] && [ -n "${C[open.csmall]:-}" ]; then
		printf 'c    open() -> first byte (mounted):     %s ms for %s objects, %s ms for %s  ratio %s\n' \
			"${C[open.cbig]}" $C_BIG "${C[open.csmall]}" $C_SMALL "$(calc "${C[open.cbig]} / ${C[open.csmall]}" 2)"
		printf 'c    s3rver alone takes %s ms (vs %s ms) for a first list page of 1000 keys, %s ms (vs %s) for 100\n' \
			"${C[list1000.cbig]}" "${C[list1000.csmall]}" "${C[list100.cbig]}" "${C[list100.csmall]}"
	fi
}

c_targets() {
	if [ -n "${C[cold.cbig]:-}" ] && [ -n "${C[cold.csmall]:-}" ]; then
		x="$(calc "${C[cold.cbig]} / ${C[cold.csmall]}" 2)"
		verdict "$x <= 2" "(c) cold start ttfb($C_BIG) <= 2 x ttfb($C_SMALL): $x x"
	fi
	if [ -n "${C[open.cbig]:-}" ] && [ -n "${C[open.csmall]:-}" ]; then
		x="$(calc "${C[open.cbig]} / ${C[open.csmall]}" 2)"
		verdict "$x <= 2" "(c) open() ttfb($C_BIG) <= 2 x ttfb($C_SMALL): $x x"
	fi
}
