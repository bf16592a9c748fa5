# Helpers for the channel tests (tests/integration/channels_*.sh), sourced
# after lib.sh: RecordIO through the independent reader tests/recordio.py,
# mapping records back to the objects they came from, reading a file until
# it fails, and start-up errors that must leave no mount behind.

RECORDIO_PY="$S3PIPE_SRCDIR/tests/recordio.py"
[ -f "$RECORDIO_PY" ] || fail "tests/recordio.py not found in $S3PIPE_SRCDIR"

# The usual start of a channel test: FUSE and python3 are there, the
# RecordIO reader checks itself, the server runs with a bucket "data".
channels_start() {
	require_fuse
	require_cmd python3
	recordio_selftest
	s3_start
	s3_mb data
}

# The RecordIO reader checks itself first: a broken reader must not pass
# (or fail) the channel tests.
recordio_selftest() {
	python3 "$RECORDIO_PY" selftest >"$TEST_TMP/recordio-selftest.out" 2>&1 ||
		fail "tests/recordio.py selftest failed: $(cat "$TEST_TMP/recordio-selftest.out")"
}

# Split FILE (a RecordIO stream) into OUTDIR/000000, ...; print the record
# count. Fails the test when the stream is not valid RecordIO.
rio_split() {	# FILE OUTDIR [WHAT]
	local n
	rm -rf "$2"
	n=$(python3 "$RECORDIO_PY" split "$1" "$2" 2>"$TEST_TMP/rio.err") ||
		fail "${3:-$1}: not a valid RecordIO stream: $(cat "$TEST_TMP/rio.err")"
	printf '%s\n' "$n"
}

# Frame FILE... into OUT as one record each (no record for empty files).
rio_frame() {	# OUT FILE...
	python3 "$RECORDIO_PY" frame --skip-empty "$@" >/dev/null ||
		fail "framing $# files with tests/recordio.py failed"
}

# Print the framed size of FILE... (empty files contribute nothing).
rio_size() {	# FILE...
	python3 "$RECORDIO_PY" size --skip-empty "$@"
}

# For each record file in RECDIR (in name order), print the key under DIR
# whose local copy has the same bytes, or "?SIZE:SHA256" when none does.
# Keys are found by content, so the objects must have unique contents.
records_to_keys() {	# RECDIR DIR
	python3 - "$1" "$2" <<'PY'
import hashlib, os, sys
recdir, top = sys.argv[1], sys.argv[2]
by_hash = {}
for dirpath, _, files in os.walk(top):
    for fn in files:
        p = os.path.join(dirpath, fn)
        with open(p, "rb") as f:
            h = hashlib.sha256(f.read()).hexdigest()
        by_hash.setdefault(h, []).append(os.path.relpath(p, top))
for h, keys in by_hash.items():
    if len(keys) > 1:
        sys.exit("records_to_keys: objects with the same contents: %s" % keys)
for fn in sorted(os.listdir(recdir)):
    with open(os.path.join(recdir, fn), "rb") as f:
        data = f.read()
    h = hashlib.sha256(data).hexdigest()
    print(by_hash[h][0] if h in by_hash else "?%d:%s" % (len(data), h))
PY
}

# Read FILE from the start in CHUNK-byte reads (default 4096) until EOF or an
# error; the bytes read go to OUT. Prints OK at EOF, else the errno name
# (EIO, ...). Bounded by READ_TIMEOUT like tcat.
read_to_error() {	# FILE OUT [CHUNK]
	timeout -k 5 "${READ_TIMEOUT:-30}" python3 - "$1" "$2" "${3:-4096}" <<'PY'
import errno, os, sys
path, out, chunk = sys.argv[1], sys.argv[2], int(sys.argv[3])
res = "OK"
with open(out, "wb") as o:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as e:
        print("open:" + errno.errorcode.get(e.errno, str(e.errno)))
        sys.exit(0)
    try:
        while True:
            b = os.read(fd, chunk)
            if not b:
                break
            o.write(b)
    except OSError as e:
        res = errno.errorcode.get(e.errno, str(e.errno))
    finally:
        os.close(fd)
print(res)
PY
}

# Write TEXT to a temporary file and upload it as BUCKET/KEY.
s3_put_text() {	# BUCKET KEY TEXT
	local f="$TEST_TMP/put.$RANDOM$RANDOM"
	printf '%s' "$3" >"$f"
	s3_put "$1" "$2" "$f"
	rm -f "$f"
}

# ---- start-up errors ----
#
