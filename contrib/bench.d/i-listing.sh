# (i) millions of keys: contrib/bench-listing, with its own server (the
# test server's synthetic buckets), its own rounds and its own verdicts;
# run last, after the other scenarios' targets.
# Sourced by contrib/bench, which calls i_run (the phases:
# contrib/bench.d/lib.sh).

i_run() {
	# its own server (synthetic buckets), its own rounds and verdicts
	echo
	i_args=(--runs "$runs")
	[ $quick = 1 ] && i_args=(--quick)
	[ "${BENCH_I_BIG:-1}" = 0 ] && i_args+=(--big 0)
	S3PIPE="$s3pipe_bin" S3SERVER_JS="$server_js" "$repo/contrib/bench-listing" "${i_args[@]}" ||
		broke "(i) contrib/bench-listing failed"
}
