# tests/s3server/fastget.sh: the benchmark's fast GET front.  nginx, on
# loopback, serves GET and HEAD of the objects s3rver keeps on disk
# straight from its files (sendfile), and hands every other request to the
# test server (server.js in front of s3rver): one endpoint for the client.
# s3rver is one Node.js thread; on two cores it, not the client, set the
# pace of the benchmark's throughput rows (issue 37).  The tests keep the
# verifying front alone: this is for contrib/bench and its smoke test
# (tests/integration/fastget.sh).  Sourced, never run; bash.
#
# What nginx serves: GET and HEAD without a query string, without
# If-None-Match, of a key that the ETag map holds (below): the object's
# file, Content-Length, Last-Modified (the file's mtime, as s3rver gives
# it), ETag (s3rver's quoted MD5, from the map, as the listing gives it),
# Range (one range: 206 with Content-Range; bytes past the end: 416 with an
# S3 InvalidRange error body; several ranges: the whole object, as S3),
# If-Match (412 PreconditionFailed with an S3 error body unless it equals
# the ETag, quoted or not, or is *).  Keys are the decoded path ($uri):
# spaces, '+' and UTF-8 work; keys with '//', '/./' or '/../' segments,
# or that differ from another key only in ASCII case (nginx's map ignores
# case: both are left out of the map), are served by s3rver.
# What it does not: verify SigV4 signatures (nginx passes over the
# Authorization header: anything is served, signed or not), inject faults
# (/__fault applies to what reaches the test server only), keep the map
# up to date (an object written after the map was made is served by s3rver
# when it is new, and with a stale ETag when it overwrote a mapped key:
# call fastget_reload after writing).
# Everything else (LIST, PUT, DELETE, requests with a query string, keys
# not in the map, the control routes /__latency, /__fault, /__auth, ...)
# is proxied to the test server unchanged (the raw URI, the client's Host:
# its signature checks as before).
#
# Latency: the test server must be started with --latency-flag FILE (the
# same FILE as fastget_start --flag), which exists, holding N, while its
# latency (POST /__latency?ms=N, --latency-ms) is on.  nginx tests for it
# on every object request: when it exists, the request first goes to the
# gate (fastget_gate.js, nginx's JavaScript module), which waits N ms on a
# timer of nginx's own and then serves the bytes (@object).  So with
# latency on, every request still waits N ms on a timer before it is
# answered, as with the test server alone, and Node sees no GET at all,
# either way: a LIST that keeps s3rver's one thread busy (a quarter of a
# second for 1,000 keys) holds up no GET, as on S3.  (The gate was the test
# server's until 2026-11-30: every GET waited behind the LIST in Node's
# event loop, 85-105 ms instead of 21.)
#
# Needs nginx with its headers-more and JavaScript modules (Debian: nginx,
# libnginx-mod-http-headers-more-filter, libnginx-mod-http-js;
# contrib/install-deps --bench or --tests): nginx's own If-Match test
# compares with its own ETag (mtime and size), not S3's, so nginx checks
# If-Match itself and clears the header (more_clear_input_headers) before
# the file is served.
#
# fastget_map DIR OUT
#     Writes OUT, the body of an nginx map from "/BUCKET/KEY" to the quoted
#     ETag, for every object s3rver keeps under DIR (its --dir: DIR/BUCKET/
#     KEY._S3rver_object, the MD5 in KEY._S3rver_object.md5).  Prints the
#     number of keys mapped and of keys left out (case collisions).
# fastget_start --dir DIR --front URL --flag FILE --prefix PREFIX
#                [--pin CPUS] [--workers N] [--timeout SECONDS]
#     Makes the map, writes PREFIX/nginx.conf and starts nginx in the
#     foreground (daemon off), a child of the calling shell, on a free port
#     of 127.0.0.1, with its pid file, error log (PREFIX/error.log) and
#     temporary folders under PREFIX; waits until a request reaches the
#     test server through it.  --front: the test server's URL (http://
#     127.0.0.1:PORT); --pin: taskset -c CPUS; --workers: worker processes
#     (default: one per CPU).  Sets FASTGET_PID (the master), FASTGET_URL,
#     FASTGET_PORT, FASTGET_PREFIX, FASTGET_KEYS (keys mapped).  Returns 0
#     once ready, 1 when nginx failed to start (PREFIX/error.log and
#     PREFIX/nginx.err say why).
# fastget_reload
#     Makes the map again and has nginx load it (SIGHUP), waiting until
#     every worker of the old configuration is gone.
# fastget_stop [PID]
#     Stops nginx (default FASTGET_PID): SIGTERM, up to 5 s, then SIGKILL
#     to it and its workers; reaps it.  Does nothing for an empty PID.

FASTGET_PID='' FASTGET_URL='' FASTGET_PORT='' FASTGET_PREFIX='' FASTGET_KEYS=''
FASTGET_DIR='' FASTGET_MODULES="${FASTGET_MODULES:-/usr/lib/nginx/modules}"
# nginx lives in /usr/sbin, which a user's PATH may lack
FASTGET_NGINX="${FASTGET_NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}"
FASTGET_GATE_JS="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/fastget_gate.js"

fastget_map() {
	local dir="$1" out="$2"
	# one line per file, BUCKET/KEY._S3rver_object.md5 (19 characters of
	# suffix), whose first line is the hex MD5 (-N after a multipart
	# upload); a name with a newline in it reads as no file, and is left out
	(cd "$dir" && find . -type f -name '*._S3rver_object.md5' -printf '%P\n' |
		LC_ALL=C awk '
			{
				f = $0
				if ((getline m <f) > 0 && m ~ /^[0-9a-f]+(-[0-9]+)?$/ && length(m) >= 32) {
					k = "/" substr(f, 1, length(f) - 19)
					low = tolower(k)
					n[low]++
					key[low] = k
					etag[low] = m
				}
				close(f)
			}
			END {
				for (low in n) {
					if (n[low] > 1) { left += n[low]; continue }
					kept++
					k = key[low]
					gsub(/\\/, "\\\\", k)
					gsub(/"/, "\\\"", k)
					printf "\"%s\" \"\\\"%s\\\"\";\n", k, etag[low]
				}
				printf "%d %d\n", kept, left >"/dev/stderr"
			}') 2>"$out.count" >"$out" || return 1
	cat "$out.count"
}

# fastget_conf PREFIX PORT FRONT_PORT FLAG WORKERS MAX_KEY: nginx.conf
fastget_conf() {
	local prefix="$1" port="$2" front="$3" flag="$4" workers="$5" max_key="$6" bucket=64 user=""
	while [ $bucket -lt $((max_key + 32)) ]; do bucket=$((bucket * 2)); done
	[ "$(id -u)" = 0 ] && user="user root;" # the workers read the test's files
	cat <<EOF
# made by tests/s3server/fastget.sh: the benchmark's fast GET front
load_module $FASTGET_MODULES/ngx_http_headers_more_filter_module.so;
load_module $FASTGET_MODULES/ngx_http_js_module.so;
daemon off;
master_process on;
worker_processes $workers;
$user
pid $prefix/nginx.pid;
error_log $prefix/error.log notice;
events { worker_connections 4096; }
http {
	access_log off;
	js_import fastget_gate from $FASTGET_GATE_JS;
	js_var \$fastget_flag "$flag";
	client_body_temp_path $prefix/tmp/body;
	proxy_temp_path $prefix/tmp/proxy;
	fastcgi_temp_path $prefix/tmp/fastcgi;
	uwsgi_temp_path $prefix/tmp/uwsgi;
	scgi_temp_path $prefix/tmp/scgi;
	types { }
	default_type application/octet-stream;
	sendfile on;
	tcp_nopush on;
	keepalive_timeout 75s;
	keepalive_requests 1000000;
	merge_slashes off;
	client_max_body_size 0;
	large_client_header_buffers 8 32k;
	map_hash_max_size $((FASTGET_KEYS * 2 + 1024));
	map_hash_bucket_size $bucket;

	# "/BUCKET/KEY" -> the ETag s3rver lists ("" for any other path)
	map \$fastget_key \$fastget_etag {
		default "";
		include $prefix/etags.map;
	}
	# If-Match: none, *, or the ETag (quoted or not) pass
	map "\$http_if_match|\$fastget_etag" \$fastget_if_match_failed {
		default 1;
		"~^\\|" 0;
		"~^\\*\\|" 0;
		"~^\"?([^\"|]+)\"?\\|\"\\1\"\$" 0;
	}
	upstream fastget_front {
		server 127.0.0.1:$front;
		keepalive 64;
	}
	server {
		listen 127.0.0.1:$port;
		root $FASTGET_DIR;
		etag off;
		max_ranges 1;
		# (codes 460 to 461 never leave: they pick a named location)
		error_page 460 = @front;
		error_page 461 = @gate;
		error_page 412 = @precondition_failed;
		error_page 416 = @invalid_range;

		location / {
			set \$fastget_key \$uri;
			if (\$request_method !~ ^(GET|HEAD)\$) { return 460; }
			if (\$is_args) { return 460; }
			if (\$fastget_etag = "") { return 460; }
			if (\$http_if_none_match) { return 460; }
			if (-f $flag) { return 461; }
			if (\$fastget_if_match_failed) { return 412; }
			more_clear_input_headers If-Match;
			add_header ETag \$fastget_etag;
			try_files "\${fastget_key}._S3rver_object" @front;
		}
		# after the gate's wait: the same as above
		location @object {
			set \$fastget_key \$uri;
			if (\$fastget_if_match_failed) { return 412; }
			more_clear_input_headers If-Match;
			add_header ETag \$fastget_etag;
			try_files "\${fastget_key}._S3rver_object" @front;
		}
		location @front {
			proxy_pass http://fastget_front;
			proxy_http_version 1.1;
			proxy_set_header Connection "";
			proxy_set_header Host \$http_host;
			proxy_buffering off;
			proxy_request_buffering off;
			proxy_read_timeout 3600s;
			proxy_send_timeout 3600s;
		}
		location @gate {
			js_content fastget_gate.wait;
		}
		location @precondition_failed {
			default_type application/xml;
			return 412 '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>PreconditionFailed</Code><Message>At least one of the pre-conditions you specified did not hold</Message><Condition>If-Match</Condition><Resource>\$fastget_key</Resource></Error>\n';
		}
		location @invalid_range {
			default_type application/xml;
			return 416 '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>InvalidRange</Code><Message>The requested range is not satisfiable</Message><Resource>\$fastget_key</Resource></Error>\n';
		}
	}
}
EOF
}

# fastget_free_port: a port of 127.0.0.1 free right now
fastget_free_port() {
	node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); });'
}

# fastget_children PID: the pids of PID's children
fastget_children() { tr ' ' '\n' 2>/dev/null <"/proc/$1/task/$1/children" | grep . || true; }

fastget_start() {
	local dir="" front="" flag="" prefix="" workers=auto timeout=30 port counts max_key i try
	local -a pin=()
	while [ $# -gt 0 ]; do
		case "$1" in
		--dir) dir="$2"; shift 2 ;;
		--front) front="$2"; shift 2 ;;
		--flag) flag="$2"; shift 2 ;;
		--prefix) prefix="$2"; shift 2 ;;
		--pin) pin=(taskset -c "$2"); shift 2 ;;
		--workers) workers="$2"; shift 2 ;;
		--timeout) timeout="$2"; shift 2 ;;
		*) echo "fastget_start: unknown argument '$1'" >&2; return 1 ;;
		esac
	done
	FASTGET_PID='' FASTGET_URL='' FASTGET_PORT=''
	if [ -z "$dir" ] || [ -z "$front" ] || [ -z "$flag" ] || [ -z "$prefix" ]; then
		echo "fastget_start: --dir, --front, --flag and --prefix are required" >&2
		return 1
	fi
	[ -x "$FASTGET_NGINX" ] || {
		echo "fastget: nginx is not installed (Debian packages nginx, libnginx-mod-http-headers-more-filter and libnginx-mod-http-js)" >&2
		return 1
	}
	[ -f "$FASTGET_MODULES/ngx_http_headers_more_filter_module.so" ] || {
		echo "fastget: no headers-more module in $FASTGET_MODULES (Debian package libnginx-mod-http-headers-more-filter)" >&2
		return 1
	}
	[ -f "$FASTGET_MODULES/ngx_http_js_module.so" ] || {
		echo "fastget: no JavaScript module in $FASTGET_MODULES (Debian package libnginx-mod-http-js)" >&2
		return 1
	}
	case "$front" in http://127.0.0.1:*) ;; *) echo "fastget_start: --front must be http://127.0.0.1:PORT, not '$front'" >&2; return 1 ;; esac
	FASTGET_DIR="$(cd "$dir" && pwd)" FASTGET_PREFIX="$(mkdir -p "$prefix/tmp" && cd "$prefix" && pwd)" || return 1
	FASTGET_FRONT_PORT="${front##*:}" FASTGET_FLAG="$flag" FASTGET_WORKERS="$workers"
	counts="$(fastget_map "$FASTGET_DIR" "$FASTGET_PREFIX/etags.map")" || {
		echo "fastget: cannot make the ETag map of $FASTGET_DIR" >&2
		return 1
	}
	FASTGET_KEYS="${counts%% *}"
	for ((try = 0; try < 5; try++)); do
		port="$(fastget_free_port)" || return 1
		max_key="$(awk '{ if (length($1) > m) m = length($1) } END { print m + 0 }' "$FASTGET_PREFIX/etags.map")"
		fastget_conf "$FASTGET_PREFIX" "$port" "$FASTGET_FRONT_PORT" "$FASTGET_FLAG" "$FASTGET_WORKERS" "$max_key" \
			>"$FASTGET_PREFIX/nginx.conf"
		: >"$FASTGET_PREFIX/error.log"
		"${pin[@]}" "$FASTGET_NGINX" -p "$FASTGET_PREFIX/" -c "$FASTGET_PREFIX/nginx.conf" -e "$FASTGET_PREFIX/error.log" \
			</dev/null >>"$FASTGET_PREFIX/nginx.err" 2>&1 &
		FASTGET_PID=$!
		for ((i = 0; i < timeout * 20; i++)); do
			if ! kill -0 "$FASTGET_PID" 2>/dev/null; then
				wait "$FASTGET_PID" 2>/dev/null || true
				FASTGET_PID=''
				break
			fi
			# ready: a request goes through nginx to the test server
			if curl -s -f -o /dev/null --max-time 2 "http://127.0.0.1:$port/__latency"; then
				FASTGET_PORT=$port FASTGET_URL="http://127.0.0.1:$port"
				return 0
			fi
			sleep 0.05
		done
		if [ -n "$FASTGET_PID" ]; then
			echo "fastget: nginx did not answer in $timeout s" >>"$FASTGET_PREFIX/nginx.err"
			fastget_stop
			return 1
		fi
		# another program took the port meanwhile: another one
		grep -q 'Address already in use' "$FASTGET_PREFIX/error.log" "$FASTGET_PREFIX/nginx.err" 2>/dev/null ||
			return 1
	done
	return 1
}

fastget_reload() {
	local old counts max_key p i left
	[ -n "$FASTGET_PID" ] || { echo "fastget_reload: nginx is not running" >&2; return 1; }
	counts="$(fastget_map "$FASTGET_DIR" "$FASTGET_PREFIX/etags.map")" || return 1
	FASTGET_KEYS="${counts%% *}"
	max_key="$(awk '{ if (length($1) > m) m = length($1) } END { print m + 0 }' "$FASTGET_PREFIX/etags.map")"
	fastget_conf "$FASTGET_PREFIX" "$FASTGET_PORT" "$FASTGET_FRONT_PORT" "$FASTGET_FLAG" "$FASTGET_WORKERS" "$max_key" \
		>"$FASTGET_PREFIX/nginx.conf"
	old="$(fastget_children "$FASTGET_PID")"
	kill -HUP "$FASTGET_PID" || return 1
	for ((i = 0; i < 200; i++)); do
		left=0
		for p in $old; do kill -0 "$p" 2>/dev/null && left=1; done
		[ $left = 0 ] && [ -n "$(fastget_children "$FASTGET_PID")" ] && return 0
		kill -0 "$FASTGET_PID" 2>/dev/null || { echo "fastget_reload: nginx exited" >&2; return 1; }
		sleep 0.05
	done
	echo "fastget_reload: the old workers did not leave in 10 s" >&2
	return 1
}

fastget_stop() {
	local pid="${1:-$FASTGET_PID}" i kids
	[ -n "$pid" ] || return 0
	kids="$(fastget_children "$pid")"
	kill -TERM "$pid" 2>/dev/null || true
	for ((i = 0; i < 100; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	if kill -0 "$pid" 2>/dev/null; then
		# shellcheck disable=SC2086
		kill -KILL "$pid" $kids 2>/dev/null || true
	fi
	wait "$pid" 2>/dev/null || true
	[ "$pid" != "$FASTGET_PID" ] || FASTGET_PID=
}
