#!/usr/bin/env python3
"""Train from an s3pipe Pipe-mode channel, checkpoint (epoch, record), resume.

    s3pipe --record-wrapper recordio --shuffle-seed 7 train=s3://bucket/prefix/ /mnt/data
    python3 pytorch_resume.py --mount /mnt/data --channel train --epochs 3 \\
        --format recordio --checkpoint ckpt.json --out seen.txt

A Pipe-mode channel is one file per epoch, MOUNT/CHANNEL_N, read once from
start to end.  A job that restarts from a checkpoint does not read epoch N
again: it opens MOUNT/.s3pipe-resume/CHANNEL_N@record=K, which holds what
CHANNEL_N holds from its record K on (the same shuffle, the same share),
and s3pipe fetches nothing before it where it can.  Closing it makes
CHANNEL_{N+1} appear, as after a whole epoch.

The "training" here writes one line per record, "EPOCH INDEX SHA256[:16]",
to --out; every --checkpoint-every records it makes the lines durable and
then writes the checkpoint, {"epoch", "record", "out_bytes"}, atomically
(a new file renamed over the old).  On start, an existing checkpoint is
taken: --out is cut back to out_bytes (what the model had seen when the
checkpoint was written) and the epoch resumes at its record.  Killed at
any point and started again, a run ends with exactly the lines of a run
that was never interrupted.

--format says what a record is: recordio (MXNet RecordIO: a wrapped or
converted channel, application/x-recordio) or lines (text/csv,
application/jsonlines, text/plain), as the channel's ContentType does.

The records come through a torch.utils.data.IterableDataset and a
DataLoader (one process: an IterableDataset read by several workers would
need its own split of the records).  Where PyTorch is not installed
(Debian: apt-get install python3-torch), the dataset is iterated directly
and the script says so.
"""
import argparse
import hashlib
import json
import os
import struct
import sys
import time

try:
    from torch.utils.data import DataLoader, IterableDataset
except ImportError:  # the same reading without PyTorch
    DataLoader = None
    IterableDataset = object

RECORDIO_MAGIC = 0xCED7230A


def recordio_records(f):
    """The records of a RecordIO stream: a whole part (flag 0), or a start
    part (1), middle parts (2) and an end part (3), each a header (magic,
    (flag << 29) | length, little-endian), its bytes and padding to 4."""
    parts = []
    while True:
        head = f.read(8)
        if not head:
            if parts:
                raise ValueError("the stream ends inside a record")
            return
        if len(head) < 8:
            raise ValueError("a truncated RecordIO header")
        magic, word = struct.unpack("<II", head)
        if magic != RECORDIO_MAGIC:
            raise ValueError("a bad RecordIO magic")
        flag, length = word >> 29, word & ((1 << 29) - 1)
        payload = f.read(length)
        f.read((-length) % 4)
        parts.append(payload)
        if flag in (0, 3):
            yield b"".join(parts)
            parts = []


def line_records(f):
    """Lines, each with its newline; the bytes after the last one are a
    line too."""
    for line in f:
        yield line


class EpochRecords(IterableDataset):
    """Epoch EPOCH of CHANNEL under MOUNT, from its record START on: items
    are (index in the epoch, record bytes)."""

    def __init__(self, mount, channel, epoch, start, fmt):
        self.mount, self.channel, self.epoch = mount, channel, epoch
        self.start, self.fmt = start, fmt

    def path(self):
        name = "%s_%d" % (self.channel, self.epoch)
        if self.start == 0:
            return os.path.join(self.mount, name)
        return os.path.join(self.mount, ".s3pipe-resume",
                            "%s@record=%d" % (name, self.start))

    def __iter__(self):
        path = self.path()
        # epoch N's file appears once N - 1's is closed
        deadline = time.monotonic() + 60
        while not os.path.exists(path):
            if time.monotonic() > deadline:
                raise FileNotFoundError(path)
            time.sleep(0.05)
        records = recordio_records if self.fmt == "recordio" else line_records
        with open(path, "rb", buffering=1 << 20) as f:
            for i, record in enumerate(records(f), self.start):
                yield i, record


def batches_of_one(dataset):
    """(index, record) pairs from the dataset, through a DataLoader when
    PyTorch is there."""
    if DataLoader is None:
        yield from iter(dataset)
        return
    loader = DataLoader(dataset, batch_size=None, num_workers=0)
    for i, record in loader:
        yield int(i), bytes(record)


def write_checkpoint(path, state):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(state, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mount", required=True)
    ap.add_argument("--channel", required=True)
    ap.add_argument("--epochs", type=int, required=True)
    ap.add_argument("--format", choices=("recordio", "lines"), required=True)
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--checkpoint-every", type=int, default=1000)
    ap.add_argument("--step-seconds", type=float, default=0.0,
                    help="what a training step takes (a sleep: to watch, or kill, a run)")
    args = ap.parse_args()

    state = {"epoch": 0, "record": 0, "out_bytes": 0}
    if os.path.exists(args.checkpoint):
        with open(args.checkpoint) as f:
            state = json.load(f)
        print("resuming at epoch %d, record %d" % (state["epoch"], state["record"]))
    if DataLoader is None:
        print("PyTorch not found: iterating the dataset directly")
    out = open(args.out, "ab")
    out.truncate(state["out_bytes"])
    out.seek(state["out_bytes"])
    for epoch in range(state["epoch"], args.epochs):
        start = state["record"] if epoch == state["epoch"] else 0
        t0, n = time.monotonic(), 0
        for index, record in batches_of_one(
                EpochRecords(args.mount, args.channel, epoch, start, args.format)):
            # the training step
            out.write(b"%d %d %s\n" % (epoch, index,
                                       hashlib.sha256(record).hexdigest()[:16].encode()))
            n += 1
            if args.step_seconds:
                time.sleep(args.step_seconds)
            if (index + 1) % args.checkpoint_every == 0:
                out.flush()
                os.fsync(out.fileno())
                write_checkpoint(args.checkpoint, {"epoch": epoch, "record": index + 1,
                                                   "out_bytes": out.tell()})
        out.flush()
        os.fsync(out.fileno())
        write_checkpoint(args.checkpoint, {"epoch": epoch + 1, "record": 0,
                                           "out_bytes": out.tell()})
        print("epoch %d: %d records from record %d in %.2f s"
              % (epoch, n, start, time.monotonic() - t0))
    out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
