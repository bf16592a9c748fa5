#!/bin/bash
# fastget: the benchmark's fast GET front (tests/s3server/fastget.sh: nginx
# serving GET and HEAD of the objects s3rver keeps from its files, everything
# else proxied to the test server), the one short run CI gives it: bytes,
# headers and status codes, never speed.
#   - objects written through nginx (PUT proxied), the ETag map remade
#     (fastget_reload);
#   - a channel of 7 objects (keys with a space, '+', a quote, a backslash
#     and UTF-8; one of 3 MB read in 1 MiB ranges with If-Match) read
#     through a real s3pipe mount: the objects' bytes, in key order, and not
#     one of those GETs reached the test server;
#   - signed GETs and a HEAD: the ETag equals the listing's, Content-Length,
#     Last-Modified, a Range's bytes and Content-Range, 416 InvalidRange,
#     If-Match: 206 when it matches, 412 PreconditionFailed when not; a
#     missing key: the test server's 404 NoSuchKey;
#   - two keys that differ only in case (nginx's map ignores case) are left
#     to the test server, which serves each its own bytes;
#   - latency on (POST /__latency through nginx): a GET that nginx serves
#     waits it, then gives the same bytes, also while the test server's
#     thread is stopped (the wait is nginx's), and s3pipe reads the channel
#     again byte for byte; off again: no wait.
. "$(cd "$(dirname "$0")/.." && pwd)/lib.sh"
require_fuse
require_cmd node
. "$S3PIPE_SRCDIR/tests/s3server/fastget.sh"
[ -x "$FASTGET_NGINX" ] ||
	fail "nginx is not installed (contrib/install-deps --tests: nginx, libnginx-mod-http-headers-more-filter, libnginx-mod-http-js)"

S3_SERVER_ARGS=(--latency-flag "$TEST_TMP/latency.on")
s3_start
CLEANUP_HOOK=fastget_stop
s3_mb data
fastget_start --dir "$S3_DATA" --front "$S3_URL" --flag "$TEST_TMP/latency.on" --prefix "$TEST_TMP/nginx" ||
	fail "nginx did not start: $(cat "$TEST_TMP/nginx/error.log" "$TEST_TMP/nginx/nginx.err" 2>/dev/null | tail -n 5)"
track_pid "$FASTGET_PID"
DIRECT_URL=$S3_URL
# from here on every request goes to nginx, seeding included
S3_URL=$FASTGET_URL

# ---- objects, written through nginx ----
keys=(c/a.bin "c/b with space+plus.bin" "c/quote\"back\\slash.bin" "c/ñ日本😀.bin" c/z-big.bin)
sizes=(100000 70000 1234 4096 3000000)
for i in "${!keys[@]}"; do
	head -c "${sizes[$i]}" /dev/urandom >"$TEST_TMP/obj"
	s3_put data "${keys[$i]}" "$TEST_TMP/obj"
done
s3_seed data c/seed- 2 50000
head -c 3000 /dev/urandom >"$TEST_TMP/upper"
head -c 5000 /dev/urandom >"$TEST_TMP/lower"
s3_put data d/Case.bin "$TEST_TMP/upper"
s3_put data d/case.bin "$TEST_TMP/lower"
fastget_reload || fail "nginx did not load the new ETag map"
assert_eq 7 "$FASTGET_KEYS" "keys in nginx's ETag map (9 objects, 2 differing only in case)"
expected_cat "$S3_LOCAL/data" c/ >"$TEST_TMP/c.exp"

gets() { s3_curl -sS -f "$DIRECT_URL/__fault/stats" | json_eval 's.gets'; }
# the listing's ETag of KEY (the test server's own answer)
listed_etag() {
	s3_sigv4_curl -sS -f -o "$TEST_TMP/list.xml" \
		"$DIRECT_URL/data?list-type=2&prefix=$(s3_urlencode "$1" | sed 's|/|%2F|g')" || fail "listing $1 failed"
	sed -n 's/.*<ETag>\([^<]*\)<\/ETag>.*/\1/p' "$TEST_TMP/list.xml" | sed 's/&quot;/"/g'
}
header() { tr -d '\r' <"$1" | sed -n "s/^$2: //Ip" | tail -n 1; }
status() { tr -d '\r' <"$1" | sed -n 's/^HTTP\/[0-9.]* \([0-9]*\).*/\1/p' | tail -n 1; }

# ---- s3pipe reads a channel through nginx ----
read_channel() { # WHAT
	local mp
	mp=$(new_mountpoint "$1")
	mount_ok --endpoint-url "$S3_URL" --part-size 1M c=s3://data/c/ "$mp"
	tcat "$mp/c_0" >"$TEST_TMP/c.got" || fail "$1: reading c_0 failed: $(tail -n 3 "$TEST_TMP/mount.err")"
	assert_file_eq "$TEST_TMP/c.exp" "$TEST_TMP/c.got" "$1: c_0 through nginx"
	unmount "$mp"
}
g0=$(gets)
read_channel plain
assert_eq "$g0" "$(gets)" "GETs of objects that reached the test server while s3pipe read c/"

# ---- the S3 semantics s3pipe relies on, one key at a time ----
for i in 0 1 2 3 4; do
	key=${keys[$i]} size=${sizes[$i]}
	url="$S3_URL/data/$(s3_urlencode "$key")"
	local_copy="$S3_LOCAL/data/$key"
	etag=$(listed_etag "$key")
	assert_match '^"[0-9a-f]{32}"$' "$etag" "$key: the listing's ETag"
	assert_eq "\"$(md5sum <"$local_copy" | cut -c1-32)\"" "$etag" "$key: the listing's ETag against the MD5"
	# the whole object
	s3_sigv4_curl -sS -D "$TEST_TMP/h" -o "$TEST_TMP/body" "$url" || fail "$key: GET failed"
	assert_eq 200 "$(status "$TEST_TMP/h")" "$key: GET status"
	assert_eq "$etag" "$(header "$TEST_TMP/h" ETag)" "$key: GET ETag"
	assert_eq "$size" "$(header "$TEST_TMP/h" Content-Length)" "$key: GET Content-Length"
	assert_eq "$(date -u -r "$S3_DATA/data/$key._S3rver_object" '+%a, %d %b %Y %H:%M:%S GMT')" \
		"$(header "$TEST_TMP/h" Last-Modified)" "$key: GET Last-Modified"
	assert_file_eq "$local_copy" "$TEST_TMP/body" "$key: GET body"
	# a range, with the listed ETag as s3pipe sends it
	from=$((size / 3)) to=$((size / 3 + size / 4))
	s3_sigv4_curl -sS -D "$TEST_TMP/h" -o "$TEST_TMP/body" -H "Range: bytes=$from-$to" -H "If-Match: $etag" "$url" ||
		fail "$key: ranged GET failed"
	assert_eq 206 "$(status "$TEST_TMP/h")" "$key: ranged GET status"
	assert_eq "bytes $from-$to/$size" "$(header "$TEST_TMP/h" Content-Range)" "$key: Content-Range"
	assert_eq $((to - from + 1)) "$(header "$TEST_TMP/h" Content-Length)" "$key: ranged Content-Length"
	assert_eq "$etag" "$(header "$TEST_TMP/h" ETag)" "$key: ranged GET ETag"
	head -c $((to + 1)) "$local_copy" | tail -c $((to - from + 1)) >"$TEST_TMP/slice"
	assert_file_eq "$TEST_TMP/slice" "$TEST_TMP/body" "$key: bytes $from-$to"
	# If-Match with another ETag
	s3_sigv4_curl -sS -D "$TEST_TMP/h" -o "$TEST_TMP/body" -H "Range: bytes=0-9" \
		-H 'If-Match: "0123456789abcdef0123456789abcdef"' "$url" || fail "$key: GET with another If-Match failed"
	assert_eq 412 "$(status "$TEST_TMP/h")" "$key: GET with another If-Match"
	assert_match '<Code>PreconditionFailed</Code>' "$(cat "$TEST_TMP/body")" "$key: 412 body"
	# a range past the end
	s3_sigv4_curl -sS -D "$TEST_TMP/h" -o "$TEST_TMP/body" -H "Range: bytes=$size-" "$url" ||
		fail "$key: GET past the end failed"
	assert_eq 416 "$(status "$TEST_TMP/h")" "$key: GET past the end"
	assert_match '<Code>InvalidRange</Code>' "$(cat "$TEST_TMP/body")" "$key: 416 body"
	# HEAD
	s3_sigv4_curl -sS -I -o "$TEST_TMP/h" "$url" || fail "$key: HEAD failed"
	assert_eq 200 "$(status "$TEST_TMP/h")" "$key: HEAD status"
	assert_eq "$etag" "$(header "$TEST_TMP/h" ETag)" "$key: HEAD ETag"
	assert_eq "$size" "$(header "$TEST_TMP/h" Content-Length)" "$key: HEAD Content-Length"
done
assert_eq "$g0" "$(gets)" "GETs of objects that reached the test server (every one above is nginx's)"
# a missing key: the test server answers
s3_sigv4_curl -sS -D "$TEST_TMP/h" -o "$TEST_TMP/body" "$S3_URL/data/c/missing" || fail "GET of a missing key failed"
assert_eq 404 "$(status "$TEST_TMP/h")" "GET of a missing key"
assert_match '<Code>NoSuchKey</Code>' "$(cat "$TEST_TMP/body")" "404 body"
# keys that differ only in case: left out of the map, the test server
# serves each its own bytes
for k in Case case; do
	s3_sigv4_curl -sS -f -o "$TEST_TMP/body" "$S3_URL/data/d/$k.bin" || fail "GET of d/$k.bin failed"
	assert_file_eq "$S3_LOCAL/data/d/$k.bin" "$TEST_TMP/body" "d/$k.bin"
done
assert_eq $((g0 + 3)) "$(gets)" "GETs that reached the test server (the missing key, d/Case.bin, d/case.bin)"

# ---- latency: the GETs nginx serves wait too ----
ms_get() { # URL: milliseconds for one signed GET of its first 10 bytes, into $TEST_TMP/body
	local t0 t1
	t0=$(date +%s%N)
	s3_sigv4_curl -sS -f -o "$TEST_TMP/body" -H "Range: bytes=0-9" "$1" || fail "GET $1 failed"
	t1=$(date +%s%N)
	echo $(((t1 - t0) / 1000000))
}
url="$S3_URL/data/$(s3_urlencode c/a.bin)"
head -c 10 "$S3_LOCAL/data/c/a.bin" >"$TEST_TMP/slice"
s3_curl -sS -f -o /dev/null -X POST "$S3_URL/__latency?ms=300" || fail "cannot set the latency through nginx"
[ -f "$TEST_TMP/latency.on" ] || fail "latency on, but the test server wrote no flag file"
g1=$(gets)
took=$(ms_get "$url")
assert_file_eq "$TEST_TMP/slice" "$TEST_TMP/body" "bytes 0-9 with latency on"
[ "$took" -ge 300 ] || fail "a GET with 300 ms of latency took $took ms"
assert_eq "$g1" "$(gets)" "GETs of objects that reached the test server with latency on"
# the wait is nginx's own: a GET is answered while the test server's one
# thread is held (stopped here; a long LIST in s3rver did the same)
kill -STOP "$S3_PID" || fail "cannot stop the test server"
rc=0
s3_sigv4_curl -sS -f --max-time 20 -o "$TEST_TMP/body" -H "Range: bytes=0-9" "$url" || rc=$?
kill -CONT "$S3_PID"
[ $rc = 0 ] || fail "a GET with latency on was not answered while the test server was stopped (curl: $rc)"
assert_file_eq "$TEST_TMP/slice" "$TEST_TMP/body" "bytes 0-9 with the test server stopped"
s3_curl -sS -f -o /dev/null -X POST "$S3_URL/__latency?ms=50" || fail "cannot set the latency through nginx"
read_channel latency
s3_curl -sS -f -o /dev/null -X POST "$S3_URL/__latency?ms=0" || fail "cannot set the latency through nginx"
[ ! -e "$TEST_TMP/latency.on" ] || fail "latency off, but the flag file is still there"
took=$(ms_get "$url")
assert_file_eq "$TEST_TMP/slice" "$TEST_TMP/body" "bytes 0-9 with latency off again"
[ "$took" -lt 250 ] || fail "a GET with latency off took $took ms"
note "ok: nginx served the channel and every GET above byte for byte, with S3's ETag, Range and If-Match, with and without latency"
