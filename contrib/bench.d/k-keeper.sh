# (k) a mount whose worker dies: contrib/bench-keeper, with its own server
# (the test server's synthetic buckets) and its own verdicts; run last,
# after (i).
# Sourced by contrib/bench, which calls k_run (the phases:
# contrib/bench.d/lib.sh).

k_run() {
	echo
	k_args=()
	[ $quick = 1 ] && k_args=(--keys 100000)
	S3PIPE="$s3pipe_bin" S3SERVER_JS="$server_js" "$repo/contrib/bench-keeper" "${k_args[@]}" ||
		broke "(k) contrib/bench-keeper failed"
}
