#!/usr/bin/python3
"""CSV to protobuf RecordIO the way SageMaker's Python SDK does it: the
reference that contrib/bench (h) measures s3pipe-convert against.

  bench-convert-ref.py [--proto FILE | --pb-dir DIR] [--label-column N]
                       IN OUT

IN is CSV of numbers (no header, no quotes: what numpy.savetxt writes),
OUT gets one RecordIO-framed aialgs.data.Record per row.  As a user of the
SDK would: np.loadtxt(IN, delimiter=",", dtype=np.float32), the label
column split off, then sagemaker.amazon.common.write_numpy_to_dense_tensor's
loop, with the classes protoc generates from channel/record.proto and the
protobuf package:

    record.Clear()
    record.features["values"].float32_tensor.values.extend(vector)
    record.label["values"].float32_tensor.values.extend([label])
    magic, length, payload, zero padding to 4 bytes

Prints one line: "rows=N parse_s=P encode_s=E total_s=T" (parsing, the
loop with the writes, and both: interpreter start-up, imports and protoc
are not counted).  Run it with /usr/bin/python3 (Debian's python3-numpy
and python3-protobuf).
"""

import argparse
import importlib
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np

MAGIC = 0xCED7230A
PADDING = [b"", b"\x00\x00\x00", b"\x00\x00", b"\x00"]


def record_class(proto, pb_dir):
    tmp = None
    if pb_dir is None:
        tmp = tempfile.mkdtemp(prefix="bench-convert-ref.")
        pdir = os.path.dirname(os.path.abspath(proto))
        subprocess.run(["protoc", "--python_out=" + tmp, "-I", pdir, os.path.abspath(proto)], check=True)
        pb_dir = tmp
    sys.path.insert(0, pb_dir)
    try:
        return importlib.import_module("record_pb2").Record
    finally:
        sys.path.pop(0)
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--proto", default=os.path.join(here, "..", "channel", "record.proto"))
    ap.add_argument("--pb-dir")
    ap.add_argument("--label-column", type=int, default=0)
    ap.add_argument("input")
    ap.add_argument("output")
    a = ap.parse_args()
    Record = record_class(a.proto, a.pb_dir)

    t0 = time.perf_counter()
    data = np.loadtxt(a.input, delimiter=",", dtype=np.float32, ndmin=2)
    labels = data[:, a.label_column]
    array = np.delete(data, a.label_column, axis=1)
    t1 = time.perf_counter()
    # sagemaker.amazon.common.write_numpy_to_dense_tensor and _write_recordio
    record = Record()
    with open(a.output, "wb") as f:
        for index, vector in enumerate(array):
            record.Clear()
            record.features["values"].float32_tensor.values.extend(vector)
            record.label["values"].float32_tensor.values.extend([labels[index]])
            payload = record.SerializeToString()
            length = len(payload)
            f.write(struct.pack("I", MAGIC))
            f.write(struct.pack("I", length))
            f.write(payload)
            f.write(PADDING[length & 3])
    t2 = time.perf_counter()
    print("rows=%d parse_s=%.3f encode_s=%.3f total_s=%.3f" % (len(array), t1 - t0, t2 - t1, t2 - t0))


if __name__ == "__main__":
    main()
