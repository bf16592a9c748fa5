#!/usr/bin/env python3
"""An independent RecordIO reader and writer for the s3pipe tests.

Written from the format description, not from s3pipe's code, so that the
integration tests check s3pipe's framing against a second implementation:

  record   = part+
  part     = magic (u32 LE 0xCED7230A)
             length word (u32 LE: low 29 bits the part's payload length,
                          high 3 bits the flag)
             payload, then zero bytes up to a multiple of 4
  flags    = 0 a whole record; a payload of 2^29 bytes or more is split into
             parts flagged 1 (start), 2 (middle, any number) and 3 (end),
             whose payloads concatenate into the record

Usage:
  recordio.py split FILE OUTDIR    write each record's payload to
                                   OUTDIR/000000, 000001, ...; print the count
  recordio.py frame [--skip-empty] [--part-max N] OUT FILE...
                                   frame each FILE as one record into OUT
                                   (--skip-empty: no record for empty files;
                                   --part-max: split payloads longer than N
                                   bytes, default 2^29 - 4)
  recordio.py size [--skip-empty] FILE...
                                   print the framed size of FILE... (what
                                   frame would write), without writing it
  recordio.py offsets FILE         print the byte offset where each record
                                   of FILE begins, one a line
  recordio.py selftest             check this script on hand-made streams

split exits 1 with one line on stderr on a bad magic, a truncated record,
non-zero padding, an unknown flag or a bad flag sequence (1 not followed by
2* then 3; 2 or 3 without a 1 before it; a stream ending inside a record).
Python 3 standard library only.
"""

import os
import struct
import sys
import tempfile

MAGIC = 0xCED7230A
LEN_BITS = 29
LEN_MASK = (1 << LEN_BITS) - 1
PART_MAX = (1 << LEN_BITS) - 4  # largest part payload frame() writes
WHOLE, START, MIDDLE, END = 0, 1, 2, 3
CHUNK = 1 << 20


class FormatError(Exception):
    pass


def _read_exact(f, n, what, offset):
    """Read exactly n bytes or raise FormatError naming what was cut."""
    data = f.read(n)
    if len(data) != n:
        raise FormatError(
            "truncated %s at offset %d: need %d bytes, %d left"
            % (what, offset, n, len(data)))
    return data


def _copy_exact(f, n, sinks, offset):
    """Copy n payload bytes from f into every writable in sinks."""
    left = n
    while left:
        data = f.read(min(left, CHUNK))
        if not data:
            raise FormatError(
                "truncated payload at offset %d: need %d bytes, %d left"
                % (offset, n, n - left))
        for s in sinks:
            s.write(data)
        left -= len(data)


def parse(f, on_record_start, sinks_for_record):
    """Walk the stream in f.  For each record, on_record_start(index) is
    called once and every payload byte of it goes to the file objects in
    sinks_for_record().  Returns (records, parts).  Raises FormatError."""
    off = 0
    records = 0
    parts = 0
    in_record = False  # inside a 1 (2*) ... 3 sequence
    sinks = []
    while True:
        head = f.read(8)
        if not head:
            break
        if len(head) < 8:
            raise FormatError(
                "truncated header at offset %d: %d of 8 bytes"
                % (off, len(head)))
        magic, word = struct.unpack("<II", head)
        if magic != MAGIC:
            raise FormatError(
                "bad magic 0x%08X at offset %d (part %d)" % (magic, off, parts))
        flag = word >> LEN_BITS
        length = word & LEN_MASK
        if flag > END:
            raise FormatError("unknown flag %d at offset %d" % (flag, off))
        if flag in (WHOLE, START):
            if in_record:
                raise FormatError(
                    "flag %d at offset %d inside a split record (expected 2 or 3)"
                    % (flag, off))
            on_record_start(records)
            sinks = sinks_for_record()
            in_record = flag == START
        else:  # MIDDLE or END
            if not in_record:
                raise FormatError(
                    "flag %d at offset %d without a start part (flag 1) before it"
                    % (flag, off))
            if flag == END:
                in_record = False
        _copy_exact(f, length, sinks, off + 8)
        pad = (-length) % 4
        if pad:
            p = _read_exact(f, pad, "padding", off + 8 + length)
            if p != b"\0" * pad:
                raise FormatError(
                    "non-zero padding at offset %d: %s" % (off + 8 + length, p.hex()))
        if not in_record:
            records += 1
            for s in sinks:
                if hasattr(s, "close"):
                    s.close()
            sinks = []
        parts += 1
        off += 8 + length + pad
    if in_record:
        raise FormatError(
            "stream ends at offset %d inside a split record (no end part, flag 3)" % off)
    return records, parts


def offsets(path):
    """The offsets where the records of the RecordIO stream at path begin
    (a header with flag 0 or 1); FormatError on a bad magic or flag."""
    starts = []
    off = 0
    with open(path, "rb") as f:
        while True:
            head = f.read(8)
            if not head:
                return starts
            if len(head) < 8:
                raise FormatError("truncated header at offset %d" % off)
            magic, word = struct.unpack("<II", head)
            flag, length = word >> LEN_BITS, word & LEN_MASK
            if magic != MAGIC or flag > END:
                raise FormatError("bad header at offset %d" % off)
            if flag in (WHOLE, START):
                starts.append(off)
            step = length + (-length) % 4
            f.seek(step, 1)
            off += 8 + step


def split(path, outdir):
    os.makedirs(outdir, exist_ok=True)
    current = {}

    def start(i):
        current["path"] = os.path.join(outdir, "%06d" % i)

    def sinks():
        return [open(current["path"], "wb")]

    with open(path, "rb") as f:
        records, _ = parse(f, start, sinks)
    return records


def frame_one(out, data_iter, length, part_max):
    """Frame one payload of length bytes read from data_iter (an iterable of
    byte strings) into out."""
    nparts = max(1, -(-length // part_max))
    left = length
    buf = b""
    it = iter(data_iter)
    for i in range(nparts):
        n = min(left, part_max)
        if nparts == 1:
            flag = WHOLE
        elif i == 0:
            flag = START
        elif i == nparts - 1:
            flag = END
        else:
            flag = MIDDLE
        out.write(struct.pack("<II", MAGIC, (flag << LEN_BITS) | n))
        need = n
        while need:
            if not buf:
                buf = next(it)
            take = buf[:need]
            buf = buf[need:]
            out.write(take)
            need -= len(take)
        out.write(b"\0" * ((-n) % 4))
        left -= n


def _chunks(path):
    with open(path, "rb") as f:
        while True:
            b = f.read(CHUNK)
            if not b:
                return
            yield b


def framed_size(length, part_max=PART_MAX):
    nparts = max(1, -(-length // part_max))
    size = 0
    left = length
    for _ in range(nparts):
        n = min(left, part_max)
        size += 8 + n + (-n) % 4
        left -= n
    return size


def frame(out_path, files, skip_empty=False, part_max=PART_MAX):
    count = 0
    with open(out_path, "wb") as out:
        for p in files:
            n = os.path.getsize(p)
            if n == 0 and skip_empty:
                continue
            frame_one(out, _chunks(p), n, part_max)
            count += 1
    return count


# ---- self-test on hand-made streams ----

def _hdr(flag, n, magic=MAGIC):
    return struct.pack("<II", magic, (flag << LEN_BITS) | n)


def _rec(payload, flag=WHOLE):
    return _hdr(flag, len(payload)) + payload + b"\0" * ((-len(payload)) % 4)


def selftest():
    failures = []
    tmp = tempfile.mkdtemp(prefix="recordio-selftest.")

    def run_split(name, stream):
        src = os.path.join(tmp, name + ".rio")
        with open(src, "wb") as f:
            f.write(stream)
        out = os.path.join(tmp, name + ".out")
        try:
            n = split(src, out)
        except FormatError as e:
            return None, str(e)
        got = []
        for i in range(n):
            with open(os.path.join(out, "%06d" % i), "rb") as f:
                got.append(f.read())
        if sorted(os.listdir(out)) != ["%06d" % i for i in range(n)]:
            failures.append("%s: OUTDIR holds %s for %d records"
                            % (name, sorted(os.listdir(out)), n))
        return got, None

    def good(name, stream, expect):
        got, err = run_split(name, stream)
        if err is not None:
            failures.append("%s: rejected a good stream: %s" % (name, err))
        elif got != expect:
            failures.append("%s: records %r, expected %r" % (name, got, expect))

    def bad(name, stream, needle):
        got, err = run_split(name, stream)
        if err is None:
            failures.append("%s: accepted a bad stream (records %r)" % (name, got))
        elif needle not in err:
            failures.append("%s: message %r does not mention %r" % (name, err, needle))

    # Hand-written bytes for a few records, independent of _rec/_hdr.
    literal = (b"\x0a\x23\xd7\xce" b"\x01\x00\x00\x00" b"A\0\0\0"
               b"\x0a\x23\xd7\xce" b"\x04\x00\x00\x00" b"BCDE"
               b"\x0a\x23\xd7\xce" b"\x05\x00\x00\x00" b"FGHIJ\0\0\0")
    good("literal", literal, [b"A", b"BCDE", b"FGHIJ"])
    # a split record by hand: start "ab" (flag 1 = 0x20 in the top byte),
    # middle "cde" (0x40), end "f" (0x60)
    literal_split = (b"\x0a\x23\xd7\xce" b"\x02\x00\x00\x20" b"ab\0\0"
                     b"\x0a\x23\xd7\xce" b"\x03\x00\x00\x40" b"cde\0"
                     b"\x0a\x23\xd7\xce" b"\x01\x00\x00\x60" b"f\0\0\0")
    good("literal-split", literal_split, [b"abcdef"])

    good("empty stream", b"", [])
    sizes = [0, 1, 2, 3, 4, 5, 7, 8, 9, 1000, 4096, 70001]
    payloads = [bytes((i * 7 + j) % 256 for j in range(n)) for i, n in enumerate(sizes)]
    good("sizes", b"".join(_rec(p) for p in payloads), payloads)
    good("zero-length record", _rec(b"") + _rec(b"x"), [b"", b"x"])
    good("start+end", _rec(b"abc", START) + _rec(b"defg", END), [b"abcdefg"])
    good("start+middles+end",
         _rec(b"a", START) + _rec(b"bc", MIDDLE) + _rec(b"", MIDDLE)
         + _rec(b"defgh", MIDDLE) + _rec(b"ij", END) + _rec(b"k"),
         [b"abcdefghij", b"k"])
    good("whole, split, whole",
         _rec(b"1") + _rec(b"22", START) + _rec(b"33", END) + _rec(b"4"),
         [b"1", b"2233", b"4"])

    bad("bad magic", _rec(b"abcd") + _hdr(0, 4, magic=0xCED7230B) + b"wxyz", "bad magic")
    bad("bad magic first", b"\0" * 12, "bad magic")
    bad("big-endian magic", struct.pack(">II", MAGIC, 4) + b"abcd", "bad magic")
    bad("truncated header", _rec(b"ab") + _hdr(0, 4)[:5], "truncated header")
    bad("truncated payload", _hdr(0, 10) + b"12345", "truncated payload")
    bad("truncated padding", _hdr(0, 5) + b"12345\0", "truncated padding")
    bad("missing padding at end", _hdr(0, 1) + b"x", "truncated padding")
    bad("non-zero padding", _hdr(0, 5) + b"12345\0\x01\0", "non-zero padding")
    bad("unknown flag 4", _hdr(4, 4) + b"abcd", "unknown flag")
    bad("unknown flag 7", _hdr(7, 0), "unknown flag")
    bad("middle without start", _rec(b"a") + _rec(b"b", MIDDLE) + _rec(b"c", END), "without a start")
    bad("end without start", _rec(b"c", END), "without a start")
    bad("start then whole", _rec(b"a", START) + _rec(b"b"), "inside a split record")
    bad("start then start", _rec(b"a", START) + _rec(b"b", START) + _rec(b"c", END),
        "inside a split record")
    bad("start at end of stream", _rec(b"a") + _rec(b"b", START), "ends at offset")
    bad("start+middle at end of stream", _rec(b"b", START) + _rec(b"c", MIDDLE), "ends at offset")

    # frame -> split round trip, with and without forced parts
    files = []
    for i, p in enumerate(payloads):
        fp = os.path.join(tmp, "in%02d" % i)
        with open(fp, "wb") as f:
            f.write(p)
        files.append(fp)
    for part_max, skip in ((PART_MAX, False), (PART_MAX, True), (4, False), (8, True)):
        out = os.path.join(tmp, "framed-%d-%d" % (part_max, skip))
        n = frame(out, files, skip_empty=skip, part_max=part_max)
        expect = [p for p in payloads if p or not skip]
        if n != len(expect):
            failures.append("frame part_max=%d skip=%s: wrote %d records, expected %d"
                            % (part_max, skip, n, len(expect)))
        want_size = sum(framed_size(len(p), part_max) for p in expect)
        if os.path.getsize(out) != want_size:
            failures.append("frame part_max=%d: %d bytes, framed_size says %d"
                            % (part_max, os.path.getsize(out), want_size))
        with open(out, "rb") as f:
            stream = f.read()
        if part_max == PART_MAX and stream != b"".join(_rec(p) for p in expect):
            failures.append("frame skip=%s: bytes differ from hand-built records" % skip)
        if part_max == 4:
            # 70001 bytes in parts of 4: 17501 parts, first START, last END
            if stream.count(struct.pack("<I", MAGIC)) < 17501:
                failures.append("frame part_max=4 wrote too few parts")
        got, err = run_split("roundtrip-%d-%d" % (part_max, skip), stream)
        if err is not None or got != expect:
            failures.append("frame part_max=%d skip=%s: round trip failed: %s"
                            % (part_max, skip, err or "records differ"))
    # a frame with parts must use flags 1, 2..., 3 in that order
    out = os.path.join(tmp, "flags")
    fp = os.path.join(tmp, "ten")
    with open(fp, "wb") as f:
        f.write(b"0123456789")
    frame(out, [fp], part_max=4)
    with open(out, "rb") as f:
        stream = f.read()
    expect = _rec(b"0123", START) + _rec(b"4567", MIDDLE) + _rec(b"89", END)
    if stream != expect:
        failures.append("frame of 10 bytes in parts of 4: %s, expected %s"
                        % (stream.hex(), expect.hex()))

    for dirpath, dirnames, filenames in os.walk(tmp, topdown=False):
        for fn in filenames:
            os.unlink(os.path.join(dirpath, fn))
        for d in dirnames:
            os.rmdir(os.path.join(dirpath, d))
    os.rmdir(tmp)
    return failures


def main(argv):
    prog = "recordio.py"
    if len(argv) < 2:
        sys.stderr.write(__doc__)
        return 2
    cmd = argv[1]
    if cmd == "split":
        if len(argv) != 4:
            sys.stderr.write("usage: %s split FILE OUTDIR\n" % prog)
            return 2
        try:
            n = split(argv[2], argv[3])
        except FormatError as e:
            sys.stderr.write("%s: %s: %s\n" % (prog, argv[2], e))
            return 1
        except OSError as e:
            sys.stderr.write("%s: %s\n" % (prog, e))
            return 1
        print(n)
        return 0
    if cmd in ("frame", "size"):
        args = argv[2:]
        skip = False
        part_max = PART_MAX
        while args and args[0].startswith("--"):
            if args[0] == "--skip-empty":
                skip = True
                args = args[1:]
            elif args[0] == "--part-max" and len(args) > 1:
                part_max = int(args[1])
                if part_max < 1 or part_max > LEN_MASK:
                    sys.stderr.write("%s: --part-max must be 1 to %d\n" % (prog, LEN_MASK))
                    return 2
                args = args[2:]
            else:
                sys.stderr.write("%s: unknown option %s\n" % (prog, args[0]))
                return 2
        if cmd == "frame":
            if len(args) < 1:
                sys.stderr.write("usage: %s frame [--skip-empty] [--part-max N] OUT FILE...\n" % prog)
                return 2
            print(frame(args[0], args[1:], skip_empty=skip, part_max=part_max))
        else:
            total = 0
            for p in args:
                n = os.path.getsize(p)
                if n or not skip:
                    total += framed_size(n, part_max)
            print(total)
        return 0
    if cmd == "offsets":
        if len(argv) != 3:
            sys.stderr.write("usage: %s offsets FILE\n" % prog)
            return 2
        try:
            for at in offsets(argv[2]):
                print(at)
        except FormatError as e:
            sys.stderr.write("%s: %s: %s\n" % (prog, argv[2], e))
            return 1
        return 0
    if cmd == "selftest":
        failures = selftest()
        for f in failures:
            sys.stderr.write("%s selftest: FAIL: %s\n" % (prog, f))
        if failures:
            return 1
        print("ok")
        return 0
    sys.stderr.write("%s: unknown command %r (split, frame, size, selftest)\n" % (prog, cmd))
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
