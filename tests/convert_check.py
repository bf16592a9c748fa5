#!/usr/bin/python3
"""An independent checker of s3pipe's CSV / LibSVM -> protobuf RecordIO.

Written from the format descriptions (channel/convert.h's grammar,
channel/record.proto, SageMaker's Python SDK), not from s3pipe's code: the
RecordIO stream is read with its own framing reader, each Record is parsed
with Google's protobuf package and the classes protoc generates from
record.proto, and the source rows are parsed again here, CSV with Python's
csv module, LibSVM by splitting tokens.  Run it with /usr/bin/python3
(Debian's python3-protobuf and python3-numpy).

  convert_check.py [--proto FILE | --pb-dir DIR] check csv|libsvm [OPTIONS]
                   RECORDIO SOURCE...
      OPTIONS: --csv-label-column N|none (default 0), --csv-header
      none|skip, --feature-dim N (libsvm: required), --on-bad-row
      fail|skip (skip: rows this checker finds bad are expected to be
      absent), --expect-rows N, --expect-skipped N.
      Several SOURCEs are a channel's objects in order: their bytes back
      to back, or with --csv-header skip each a file of its own (its first
      line dropped, its end ending its last row).
  convert_check.py [--proto FILE | --pb-dir DIR] dump RECORDIO JSONL
                   [--every K]
      JSONL is `s3pipe-convert dump RECORDIO`: one JSON line per Record;
      every K-th record (default 1: all) is compared value by value.

--proto defaults to channel/record.proto next to this script's folder; it
is compiled with `protoc --python_out` into a temporary folder.  --pb-dir
names a folder that already holds record_pb2.py.

What is checked, per record: the RecordIO framing (magic 0xCED7230A, flag
0 = a whole record, the length, zero padding to 4 bytes, nothing after the
last record); the payload parses as aialgs.data.Record with no unknown
fields and re-serializes to the same bytes (the canonical encoding, as the
SDK's SerializeToString() writes it); features has exactly one key,
"values", a Value whose one field is float32_tensor; its values equal the
row's features bit for bit (as float32; -0 included), its keys the LibSVM
indices as written, its shape [feature_dim] (sparse) or empty (dense, and
then no keys); label likewise ["values"] = Float32Tensor{values: [label]}
with no keys or shape, or no label map at all with --csv-label-column
none; uid, metadata and configuration unset; and the number of records.

Exit 0 when everything matches (one line on stdout saying how many), else 1
with the first mismatch on stderr (record number from 0, source file and
line, the field); 2 for a wrong command line or a missing protoc.

Numbers: a field must be a decimal number as the grammar says ([+-],
digits with an optional '.', at least one digit, an optional exponent);
anything else, nan, inf, or a value beyond float32's range makes the row
bad.  The expected float32 is the correctly rounded one (round half to
even), computed exactly: Python's float() rounds the decimal text to the
nearest double, and numpy then rounds that double to float32.  That double
rounding (what numpy.float32(float(text)) and struct.pack('f', x) both
give) differs from rounding the decimal straight to float32 exactly when
the double lands on a midpoint between two adjacent float32s while the
text itself is not that midpoint (every float32 midpoint is a double, and
rounding to double is monotonic, so in every other case both roundings
agree).  Those cases, about one random 9+-digit input in 10^8, are
detected and decided with exact rational arithmetic (fractions.Fraction).
So the check is exact for every input, not just for the generated data.

Limits: a CSV field's quotedness is taken from a second parse with
csv.QUOTE_NONNUMERIC (quoted fields stay strings): blanks around an
unquoted field are ignored, a quoted field is taken as is.  A lone CR
inside a row is a csv.Error here, which makes the row bad, as in the
grammar (where it is an ordinary byte that no number contains).
"""

import argparse
import csv
import fractions
import importlib
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np

MAGIC = 0xCED7230A
NUM_RE = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")
NONFINITE_RE = re.compile(r"[+-]?(?:nan|inf|infinity)\Z", re.IGNORECASE)
# the double halfway between FLT_MAX and 2^128: at and above it float32 is inf
OVERFLOW_MID = float.fromhex("0x1.ffffffp+127")
FLT_MAX = float.fromhex("0x1.fffffep+127")


class Mismatch(Exception):
    pass


class BadRow(Exception):
    pass


# ---- protobuf classes ----

def load_record_class(proto, pb_dir):
    tmp = None
    if pb_dir is None:
        if shutil.which("protoc") is None:
            sys.stderr.write("convert_check: protoc is not installed (Debian package protobuf-compiler)\n")
            sys.exit(2)
        tmp = tempfile.mkdtemp(prefix="convert_check.")
        pdir, pname = os.path.split(os.path.abspath(proto))
        r = subprocess.run(["protoc", "--python_out=" + tmp, "-I", pdir, os.path.join(pdir, pname)],
                           capture_output=True, text=True)
        if r.returncode != 0:
            sys.stderr.write("convert_check: protoc failed on %s: %s\n" % (proto, r.stderr.strip()))
            sys.exit(2)
        pb_dir = tmp
    sys.path.insert(0, pb_dir)
    try:
        mod = importlib.import_module("record_pb2")
    finally:
        sys.path.pop(0)
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    return mod.Record


# ---- RecordIO ----

def recordio_payloads(path):
    """Yields (offset, payload) for every record of the stream at path."""
    with open(path, "rb") as f:
        data = f.read()
    off, n = 0, 0
    while off < len(data):
        if len(data) - off < 8:
            raise Mismatch("record %d at byte %d: %d bytes left, a header needs 8"
                           % (n, off, len(data) - off))
        magic, word = struct.unpack_from("<II", data, off)
        if magic != MAGIC:
            raise Mismatch("record %d at byte %d: magic 0x%08X, expected 0x%08X" % (n, off, magic, MAGIC))
        flag, length = word >> 29, word & ((1 << 29) - 1)
        if flag != 0:
            raise Mismatch("record %d at byte %d: flag %d, expected 0 (a whole record)" % (n, off, flag))
        pad = -length & 3
        if off + 8 + length + pad > len(data):
            raise Mismatch("record %d at byte %d: truncated (length %d, %d bytes left)"
                           % (n, off, length, len(data) - off - 8))
        payload = data[off + 8:off + 8 + length]
        padding = data[off + 8 + length:off + 8 + length + pad]
        if padding != bytes(pad):
            raise Mismatch("record %d at byte %d: padding %r is not zero" % (n, off, padding))
        yield off, payload
        off += 8 + length + pad
        n += 1


def parse_record(Record, n, payload):
    rec = Record()
    try:
        rec.ParseFromString(payload)
    except Exception as e:  # DecodeError
        raise Mismatch("record %d: the payload is not an aialgs.data.Record: %s" % (n, e))
    if rec.SerializeToString(deterministic=True) != payload:
        raise Mismatch("record %d: the payload (%d bytes) is not the canonical encoding of the Record it holds"
                       % (n, len(payload)))
    return rec


def no_unknown(n, what, msg):
    if len(msg.UnknownFields()):
        raise Mismatch("record %d: %s has unknown fields" % (n, what))


def field_names(msg):
    return sorted(fd.name for fd, _ in msg.ListFields())


def tensor_of(n, rec, mapname):
    """The Float32Tensor at rec.<mapname>["values"], checking the map."""
    m = getattr(rec, mapname)
    keys = sorted(m.keys())
    if keys != ["values"]:
        raise Mismatch("record %d: %s has keys %s, expected exactly ['values']" % (n, mapname, keys))
    v = m["values"]
    no_unknown(n, mapname + "['values']", v)
    which = v.WhichOneof("value")
    if which != "float32_tensor":
        raise Mismatch("record %d: %s['values'] holds %s, expected float32_tensor" % (n, mapname, which))
    t = v.float32_tensor
    no_unknown(n, mapname + "['values'].float32_tensor", t)
    return t


def bits(values):
    return np.asarray(values, dtype=np.float32).view(np.uint32)


def compare_values(n, what, exp_bits, got_values, texts=None):
    got = bits(list(got_values))
    if len(got) != len(exp_bits):
        raise Mismatch("record %d: %s has %d values, expected %d" % (n, what, len(got), len(exp_bits)))
    diff = np.nonzero(got != exp_bits)[0]
    if len(diff):
        i = int(diff[0])
        e, g = int(exp_bits[i]), int(got[i])
        src = " (from '%s')" % texts[i] if texts is not None else ""
        raise Mismatch("record %d: %s[%d] is %r (0x%08X), expected %r (0x%08X)%s; %d values differ"
                       % (n, what, i, float(np.uint32(g).view(np.float32)), g,
                          float(np.uint32(e).view(np.float32)), e, src, len(diff)))


def check_record(n, rec, feats, feat_texts, keys, dim, label, label_text):
    """feats: expected feature bits; keys: None (dense) or a list; label:
    expected bits (np.uint32) or None."""
    no_unknown(n, "the Record", rec)
    want = ["features"] + (["label"] if label is not None else [])
    got_fields = field_names(rec)
    if got_fields != sorted(want):
        raise Mismatch("record %d: fields set %s, expected %s" % (n, got_fields, sorted(want)))
    t = tensor_of(n, rec, "features")
    compare_values(n, "features['values'].values", feats, t.values, feat_texts)
    if keys is None:
        if len(t.keys) or len(t.shape):
            raise Mismatch("record %d: a dense row has keys %s / shape %s" % (n, list(t.keys)[:5], list(t.shape)))
    else:
        gk = list(t.keys)
        if gk != keys:
            i = next((i for i in range(min(len(gk), len(keys))) if gk[i] != keys[i]), min(len(gk), len(keys)))
            raise Mismatch("record %d: features['values'].keys differ at [%d]: got %s, expected %s (%d vs %d keys)"
                           % (n, i, gk[i:i + 3], keys[i:i + 3], len(gk), len(keys)))
        if list(t.shape) != [dim]:
            raise Mismatch("record %d: features['values'].shape is %s, expected [%d]" % (n, list(t.shape), dim))
    if label is not None:
        lt = tensor_of(n, rec, "label")
        if field_names(lt) != ["values"]:
            raise Mismatch("record %d: label['values'] has fields %s, expected values only" % (n, field_names(lt)))
        compare_values(n, "label['values'].values", np.array([label], dtype=np.uint32), lt.values, [label_text])


# ---- numbers ----

def exact_f32_tiebreak(text, d, f):
    """d = float(text) is a float32 midpoint or the overflow midpoint and
    text is not exactly d: round the decimal itself."""
    q = fractions.Fraction(text)
    if q == fractions.Fraction(d):
        return f  # a true tie: the double rounding already went to even
    up = q > fractions.Fraction(d)
    # the two float32s around d: one above, one below
    f64 = float(f)
    if f64 > d:
        hi, lo = f, np.nextafter(f, np.float32(-np.inf))
    else:
        lo, hi = f, np.nextafter(f, np.float32(np.inf))
    return hi if up else lo


def to_f32(texts, what):
    """float32 values (np.uint32 bits) of the decimal texts; BadRow when
    one is not a number of the grammar or out of float32's range."""
    ds = []
    for i, t in enumerate(texts):
        if not NUM_RE.match(t):
            if t == "":
                raise BadRow("%s %d is empty" % (what, i))
            if NONFINITE_RE.match(t):
                raise BadRow("%s %d ('%s') is not finite" % (what, i, t))
            raise BadRow("%s %d ('%s') is not a number" % (what, i, t[:40]))
        ds.append(float(t))
    d = np.array(ds, dtype=np.float64)
    with np.errstate(over="ignore"):
        f = d.astype(np.float32)
    # the overflow boundary first: a double at or past OVERFLOW_MID gives inf
    over = np.nonzero(np.isinf(f))[0]
    for i in over:
        i = int(i)
        if abs(d[i]) == OVERFLOW_MID and fractions.Fraction(texts[i]) != fractions.Fraction(float(d[i])) \
                and abs(fractions.Fraction(texts[i])) < fractions.Fraction(OVERFLOW_MID):
            f[i] = np.float32(FLT_MAX) if d[i] > 0 else np.float32(-FLT_MAX)
        else:
            raise BadRow("%s %d ('%s') is out of float32's range" % (what, i, texts[i][:40]))
    # double-rounding suspects: d not a float32, but exactly halfway between
    # f and its neighbour on d's side
    f64 = f.astype(np.float64)
    off = d != f64
    if off.any():
        toward = np.where(d > f64, np.float32(np.inf), np.float32(-np.inf)).astype(np.float32)
        with np.errstate(over="ignore", invalid="ignore"):
            g = np.nextafter(f, toward)
            mid = (f64 + g.astype(np.float64)) / 2
        for i in np.nonzero(off & (mid == d))[0]:
            i = int(i)
            f[i] = exact_f32_tiebreak(texts[i], float(d[i]), f[i])
    return f.view(np.uint32)


# ---- sources ----

def read_sources(paths, header_skip):
    """The channel's text (latin-1: bytes kept one to one) and, for
    messages, (start offset, path, first line number) per source."""
    parts, where, off = [], [], 0
    for p in paths:
        with open(p, "rb") as fh:
            b = fh.read()
        line0 = 1
        if header_skip:
            lf = b.find(b"\n")
            b = b"" if lf < 0 else b[lf + 1:]
            line0 = 2
            if b and not b.endswith(b"\n"):
                b += b"\n"
        where.append((off, p, line0))
        parts.append(b.decode("latin-1"))
        off += len(b)
    return "".join(parts), where


def locate(text, where, off):
    src = where[0]
    for w in where:
        if w[0] <= off:
            src = w
    return "%s, line %d" % (src[1], src[2] + text.count("\n", src[0], off))


def blank(raw):
    return raw.strip(" \t\r\n") == ""


def csv_rows(text):
    """Yields (offset, raw lines, fields or None, csv error or None) per
    row: a row ends with LF, except that LFs inside a quoted field belong
    to it (the csv module decides, reading line by line)."""
    lines = _lf_lines(text)
    consumed = [0]

    def feed():
        for ln in lines:
            consumed[0] += 1
            yield ln

    reader = csv.reader(feed(), strict=True)
    start_line = 0
    offs = [0]
    for ln in lines:
        offs.append(offs[-1] + len(ln))
    while start_line < len(lines):
        try:
            fields = next(reader)
            err = None
        except StopIteration:
            break
        except csv.Error as e:
            fields, err = None, str(e)
        end_line = consumed[0]
        if end_line == start_line:  # (the reader consumed nothing)
            end_line = start_line + 1
        raw_lines = lines[start_line:end_line]
        yield offs[start_line], raw_lines, fields, err
        start_line = end_line


def _lf_lines(text):
    out, p = [], 0
    while p < len(text):
        q = text.find("\n", p)
        q = len(text) if q < 0 else q + 1
        out.append(text[p:q])
        p = q
    return out


def csv_values(raw_lines, fields, err):
    """The row's fields as float32 bits and their texts; BadRow."""
    if err is not None:
        raise BadRow("not CSV: %s" % err)
    # quotedness: with QUOTE_NONNUMERIC, quoted fields stay str and
    # unquoted ones go through float(), which rejects whatever the grammar
    # rejects among unquoted fields (it accepts more, checked below)
    try:
        typed = next(csv.reader(iter(raw_lines), strict=True, quoting=csv.QUOTE_NONNUMERIC))
        quoted = [isinstance(x, str) for x in typed]
        if len(quoted) != len(fields):
            raise BadRow("the second parse found %d fields, the first %d" % (len(quoted), len(fields)))
    except (ValueError, csv.Error, StopIteration):
        quoted = [False] * len(fields)  # some unquoted field is not a number
    texts = [t if q else t.strip(" \t") for t, q in zip(fields, quoted)]
    return to_f32(texts, "column"), texts


def expected_csv(text, where, label_col, feature_dim):
    """Yields (offset, None, features bits, texts, label bits, label text)
    per good row, or (offset, why, ...) per bad row."""
    columns = None
    if feature_dim:
        columns = feature_dim + (0 if label_col is None else 1)
    for off, raw_lines, fields, err in csv_rows(text):
        raw = "".join(raw_lines)
        if blank(raw):
            continue
        if columns is None:
            columns = len(fields) if fields is not None else raw.count(",") + 1
        try:
            vals, texts = csv_values(raw_lines, fields, err)
            if len(vals) != columns:
                raise BadRow("%d columns, expected %d" % (len(vals), columns))
            if label_col is None:
                yield off, None, vals, texts, None, None
                continue
            if label_col >= len(vals):
                raise BadRow("no label column %d" % label_col)
            lab, ltext = vals[label_col], texts[label_col]
            vals = np.delete(vals, label_col)
            texts = texts[:label_col] + texts[label_col + 1:]
            yield off, None, vals, texts, lab, ltext
        except BadRow as e:
            yield off, str(e), None, None, None, None


def expected_libsvm(text, where, feature_dim):
    """As expected_csv, with keys: (off, why, vals, texts, label, ltext, keys)."""
    off = 0
    for ln in _lf_lines(text):
        row_off, off = off, off + len(ln)
        if blank(ln):
            continue
        # tokens are separated by blanks; a token starting with '#' starts
        # a comment that runs to the row's end
        toks = []
        for t in re.split(r"[ \t\r\n]+", ln):
            if t.startswith("#"):
                break
            if t:
                toks.append(t)
        if not toks:
            continue  # a comment only: no record
        try:
            lab = to_f32([toks[0]], "label")[0]
            keys, vtexts = [], []
            for t in toks[1:]:
                k, sep, v = t.partition(":")
                if not sep or not k:
                    raise BadRow("'%s' is not INDEX:VALUE" % t)
                if k == "qid":
                    continue
                if not k.isascii() or not k.isdigit():
                    raise BadRow("'%s': the index is not a number" % t)
                k = int(k)
                if k >= feature_dim:
                    raise BadRow("index %d is past the feature dimension %d" % (k, feature_dim))
                keys.append(k)
                vtexts.append(v)
            vals = to_f32(vtexts, "value") if vtexts else np.zeros(0, dtype=np.uint32)
            yield row_off, None, vals, vtexts, lab, toks[0], keys
        except BadRow as e:
            yield row_off, str(e), None, None, None, None, None


# ---- commands ----

def cmd_check(a, Record):
    label_col = 0
    if a.format == "csv":
        if a.csv_label_column.lower() == "none":
            label_col = None
        else:
            label_col = int(a.csv_label_column)
    elif a.feature_dim is None:
        sys.stderr.write("convert_check: libsvm needs --feature-dim\n")
        return 2
    text, where = read_sources(a.sources, a.format == "csv" and a.csv_header == "skip")
    if a.format == "csv":
        rows = (r + (None,) for r in expected_csv(text, where, label_col, a.feature_dim))
    else:
        rows = expected_libsvm(text, where, a.feature_dim)
    records = recordio_payloads(a.recordio)
    n = skipped = 0
    for off, why, vals, texts, lab, ltext, keys in rows:
        if why is not None:
            if a.on_bad_row == "skip":
                skipped += 1
                continue
            raise Mismatch("%s: a bad row (%s), and --on-bad-row fail: the stream should have stopped "
                           "(%d records before it)" % (locate(text, where, off), why, n))
        try:
            _, payload = next(records)
        except StopIteration:
            raise Mismatch("the stream ends after %d records; the source has more (the next: %s)"
                           % (n, locate(text, where, off)))
        rec = parse_record(Record, n, payload)
        try:
            check_record(n, rec, vals, texts, keys, a.feature_dim, None if lab is None else int(lab), ltext)
        except Mismatch as e:
            raise Mismatch("%s (source %s)" % (e, locate(text, where, off)))
        n += 1
    extra = sum(1 for _ in records)
    if extra:
        raise Mismatch("the stream has %d records more than the %d rows of the source" % (extra, n))
    if a.expect_rows is not None and n != a.expect_rows:
        raise Mismatch("%d records, expected %d (--expect-rows)" % (n, a.expect_rows))
    if a.expect_skipped is not None and skipped != a.expect_skipped:
        raise Mismatch("%d bad rows, expected %d (--expect-skipped)" % (skipped, a.expect_skipped))
    print("ok: %d records match %s (%d bad rows skipped)" % (n, " ".join(a.sources), skipped))
    return 0


def dump_tensor(n, what, rec_t, js):
    if not isinstance(js, dict) or "float32" not in js:
        raise Mismatch("dump line %d: %s is %r, expected {\"float32\": [...]}" % (n, what, js))
    exp = bits(list(rec_t.values))
    got = np.array([float(x) for x in js["float32"]], dtype=np.float64).astype(np.float32).view(np.uint32)
    if len(got) != len(exp) or (got != exp).any():
        i = int(np.nonzero(got != exp)[0][0]) if len(got) == len(exp) else -1
        raise Mismatch("dump line %d: %s float32 differ from the record's (%d vs %d values, first at %d)"
                       % (n, what, len(got), len(exp), i))
    if [int(k) for k in js.get("keys", [])] != list(rec_t.keys):
        raise Mismatch("dump line %d: %s keys differ" % (n, what))
    if [int(k) for k in js.get("shape", [])] != list(rec_t.shape):
        raise Mismatch("dump line %d: %s shape %r, the record's %r" % (n, what, js.get("shape"), list(rec_t.shape)))
    other = set(js) - {"float32", "keys", "shape"}
    if other:
        raise Mismatch("dump line %d: %s has %s too" % (n, what, sorted(other)))


def cmd_dump(a, Record):
    with open(a.jsonl, "rb") as f:
        lines = f.read().split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    else:
        raise Mismatch("the dump does not end with a newline")
    n = compared = 0
    for _, payload in recordio_payloads(a.recordio):
        if n >= len(lines):
            raise Mismatch("the dump has %d lines, the stream more records" % len(lines))
        try:
            # "-0" (negative zero, as dump prints it) must stay -0.0, which
            # json's default int parsing would lose
            js = json.loads(lines[n], parse_int=lambda s: -0.0 if s == "-0" else int(s))
        except ValueError as e:
            raise Mismatch("dump line %d is not JSON: %s" % (n, e))
        if n % a.every == 0:
            rec = parse_record(Record, n, payload)
            want = {"features"} | ({"label"} if len(rec.label) else set())
            if set(js) != want:
                raise Mismatch("dump line %d has %s, the record %s" % (n, sorted(js), sorted(want)))
            for m in sorted(want):
                if sorted(js[m]) != sorted(getattr(rec, m).keys()):
                    raise Mismatch("dump line %d: %s keys %s" % (n, m, sorted(js[m])))
                for k in js[m]:
                    dump_tensor(n, "%s[%s]" % (m, k), getattr(rec, m)[k].float32_tensor, js[m][k])
            compared += 1
        n += 1
    if n != len(lines):
        raise Mismatch("the dump has %d lines, the stream %d records" % (len(lines), n))
    print("ok: %d dump lines, %d compared value by value" % (n, compared))
    return 0


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(prog="convert_check.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--proto", default=os.path.join(here, "..", "channel", "record.proto"))
    ap.add_argument("--pb-dir", help="a folder holding record_pb2.py (no protoc run)")
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("check")
    c.add_argument("format", choices=["csv", "libsvm"])
    c.add_argument("--csv-label-column", default="0")
    c.add_argument("--csv-header", choices=["none", "skip"], default="none")
    c.add_argument("--feature-dim", type=int)
    c.add_argument("--on-bad-row", choices=["fail", "skip"], default="fail")
    c.add_argument("--expect-rows", type=int)
    c.add_argument("--expect-skipped", type=int)
    c.add_argument("recordio")
    c.add_argument("sources", nargs="+")
    d = sub.add_parser("dump")
    d.add_argument("recordio")
    d.add_argument("jsonl")
    d.add_argument("--every", type=int, default=1)
    a = ap.parse_args()
    csv.field_size_limit(1 << 30)
    Record = load_record_class(a.proto, a.pb_dir)
    try:
        return cmd_check(a, Record) if a.cmd == "check" else cmd_dump(a, Record)
    except Mismatch as e:
        sys.stderr.write("convert_check: MISMATCH: %s\n" % e)
        return 1
    except OSError as e:
        sys.stderr.write("convert_check: %s\n" % e)
        return 1


if __name__ == "__main__":
    sys.exit(main())
