# (e) gzipped objects.
# Gunzip as a channel stage against gunzip after curl: 4 gzipped objects of
# 256 MiB of text (about 3:1, see gen_text), read by s3pipe --compression
# gzip, and by curl | gunzip >/dev/null, once four pipelines in parallel
# (one per object, as many cores as there are) and once one pipeline per
# object one after another (one core).  MB/s is decompressed bytes (1 GiB)
# over the time; CPU s per GiB is the daemon's, or curl's and gunzip's
# together.  s3pipe runs twice per round: with the default cache and with
# --cache-size 1G, since the stage inflates an object ahead of the reader
# only as far as half the budget holds its output (with 256 MiB objects
# the default budget holds half of one).
# Sourced by contrib/bench, which calls e_needs, e_seed, e_run, e_summary
# and e_targets (the phases: contrib/bench.d/lib.sh).
E_COUNT=4 E_SIZE=$(((quick ? 32 : 256) << 20))

e_needs() {
	need python3
	need gzip
}

# gen_text DIR COUNT SIZE: COUNT gzipped files obj-00000.. in DIR, each SIZE
# bytes of text once gunzipped: lines of 12 words drawn uniformly from a
# vocabulary of 1,000 made-up words (2 to 9 letters).  A pool of 512 Ki
# words is drawn once per file and the file is cut from it in 64 KiB
# slices at random offsets, which gzip (a 32 KiB window) cannot tell from
# fresh text; gzip -6 (its default) packs it about 3:1.  The files are
# made in parallel, one python3 | gzip pipeline each.
gen_text() {
	local i pids_gen=() p rc=0
	mkdir -p "$1"
	cat >"$T/gen_text.py" <<'EOF_PY'
import random, sys
size, seed = int(sys.argv[1]), int(sys.argv[2])
rng = random.Random(1)
abc = "abcdefghijklmnopqrstuvwxyz"
vocab = ["".join(rng.choice(abc) for _ in range(rng.randint(2, 9))) for _ in range(1000)]
rng = random.Random(seed)
words = rng.choices(vocab, k=1 << 19)
pool = ("\n".join(" ".join(words[i:i + 12]) for i in range(0, len(words), 12)) + "\n").encode()
out, n, cut = sys.stdout.buffer, 0, 1 << 16
while n < size:
    o, k = rng.randrange(len(pool) - cut), min(cut, size - n)
    out.write(pool[o:o + k])
    n += k
EOF_PY
	for ((i = 0; i < $2; i++)); do
		python3 "$T/gen_text.py" "$3" "$i" | gzip -6 >"$(printf '%s/obj-%05d' "$1" "$i")" &
		pids_gen+=($!)
	done
	for p in "${pids_gen[@]}"; do wait "$p" || rc=1; done
	[ $rc = 0 ] || die "cannot generate gzipped text in $1"
}
e_seed() {
	gen_text "$T/data/e" $E_COUNT $E_SIZE
	put_cfg "$T/data/e" e >>"$T/put.cfg"
	E_GZ_BYTES="$(stat -c %s "$T/data/e"/obj-* | awk '{ s += $1 } END { printf "%d", s }')"
}

# gunzip_pipes MODE URL...: curl URL | gunzip for every URL, all at once (par)
# or one after another (seq), signed like measure_curl's GETs.  gunzip
# checks every object's length and CRC-32, so success means every byte.
gunzip_pipes() {
	local mode="$1" u p rc=0
	local -a ps=() sign=(--aws-sigv4 "aws:amz:$REGION:s3" --user "$KEY_ID:$SECRET"
		-H "x-amz-content-sha256: $EMPTY_SHA256")
	shift
	for u in "$@"; do
		if [ "$mode" = par ]; then
			(curl -sS --fail --max-time $READ_TIMEOUT "${sign[@]}" "$u" | gunzip >/dev/null) &
			ps+=($!)
		else
			curl -sS --fail --max-time $READ_TIMEOUT "${sign[@]}" "$u" | gunzip >/dev/null || rc=1
		fi
	done
	for p in "${ps[@]}"; do wait "$p" || rc=1; done
	return $rc
}
# measure_gunzip SCEN SLOT MODE LABEL BYTES: one run of gunzip_pipes over
# SCEN's objects; BYTES is their decompressed total
measure_gunzip() {
	local scen="$1" slot="$2" mode="$3" label="$4" bytes="$5" i
	local -a urls=()
	for ((i = 0; i < E_COUNT; i++)); do urls+=("$(printf '%s/%s/%s/obj-%05d' "$URL" "$BUCKET" "$scen" "$i")"); done
	if ! timed gz gunzip_pipes "$mode" "${urls[@]}"; then
		broke "($scen) curl | gunzip ($label) failed: $(tail -n 2 "$T/gz.err" | tr '\n' ' ')"
		return 1
	fi
	rate "$bytes" gz
	printf '  %-7s %9s MB/s  %7s CPU s/GiB  %7s MiB peak RSS  (%s s, %s)\n' \
		curl "$MBPS" "$CPU" - "$(calc "$SECS" 2)" "$label"
	rec_best "$scen" "$slot" "$MBPS" "$CPU" - "$label"
	LAST_MBPS="$MBPS"
}

e_run() {
	e_bytes=$((E_COUNT * E_SIZE))
	echo
	echo "(e) $E_COUNT gzipped objects x $((E_SIZE >> 20)) MiB of text ($(calc "$E_GZ_BYTES / 1048576" 1) MiB gzipped, $(calc "$e_bytes / $E_GZ_BYTES" 2):1, gzip -6): decompressed MB/s"
	for ((r = 0; r < runs; r++)); do
		declare -A EV=() # this round's MB/s: par, seq, s (default cache), s1g
		if want_tool curl; then
			measure_gunzip e gzpar par "| gunzip, $E_COUNT pipelines in parallel" $e_bytes && EV[par]="$LAST_MBPS"
			nap 0.3
			measure_gunzip e gzseq seq "| gunzip, one object after another" $e_bytes && EV[seq]="$LAST_MBPS"
			nap 0.3
		fi
		FUSE_LABEL="--compression gzip --cache-size $CACHE_SIZE" S3PIPE_OPTS="--compression gzip" \
			measure_fuse e s3pipe e $e_bytes && EV[s]="$S3PIPE_MBPS"
		nap 0.3
		FUSE_SLOT=s3pipe1g FUSE_LABEL="--compression gzip --cache-size 1G" S3PIPE_OPTS="--compression gzip" \
			S3PIPE_CACHE=1G measure_fuse e s3pipe e $e_bytes && EV[s1g]="$S3PIPE_MBPS"
		nap 0.3
		for k in s:par s:seq s1g:par s1g:seq; do
			a="${EV[${k%%:*}]:-}" b="${EV[${k#*:}]:-}"
			[ -n "$a" ] && [ -n "$b" ] && ROUND_RATIOS[e.$k]="${ROUND_RATIOS[e.$k]:-} $(calc "$a / $b" 2)"
		done
	done
}

e_summary() {
	want_tool curl && { sum_row e gzpar curl; sum_row e gzseq curl; }
	sum_row e s3pipe s3pipe
	sum_row e s3pipe1g s3pipe
	if want_tool curl; then
		for k in s:par s:seq s1g:par s1g:seq; do
			slot=s3pipe
			[ "${k%%:*}" = s1g ] && slot=s3pipe1g
			x="$(ratio_of e $slot "gz${k#*:}")"
			[ -n "$x" ] || continue
			printf 'ratio (e): s3pipe --cache-size %s / curl | gunzip %s: %s%s\n' \
				"$([ $slot = s3pipe ] && echo "$CACHE_SIZE" || echo 1G)" \
				"$([ "${k#*:}" = par ] && echo "in parallel" || echo "one after another")" "$x" "$(per_round "e.$k")"
		done
	fi
}

e_targets() {
	if want_tool curl; then
		for slot in s3pipe s3pipe1g; do
			cs="$CACHE_SIZE"
			[ $slot = s3pipe1g ] && cs=1G k=s1g || k=s
			x="$(ratio_of e $slot gzpar)"
			[ -n "$x" ] && verdict "$x >= 0.8" "(e) s3pipe gzip (--cache-size $cs) >= 0.8 x curl | gunzip in parallel: $x x$(per_round e.$k:par)"
			x="$(ratio_of e $slot gzseq)"
			[ -n "$x" ] && verdict "$x >= 1.5" "(e) s3pipe gzip (--cache-size $cs) >= 1.5 x curl | gunzip one after another: $x x$(per_round e.$k:seq)"
		done
	fi
}
