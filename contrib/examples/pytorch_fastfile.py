#!/usr/bin/env python3
"""Read an s3pipe FastFile channel with PyTorch.

    s3pipe --input-mode fastfile --shuffle-seed 7 train=s3://bucket/prefix/ /mnt/data
    python3 pytorch_fastfile.py --mount /mnt/data --channel train --epochs 2

A FastFile channel is a read-only folder, MOUNT/CHANNEL/, with each object
under the prefix a file.  Any map-style Dataset can read it; what s3pipe adds
is MOUNT/.s3pipe-order/CHANNEL_N, epoch N's order (one path a line, relative
to MOUNT/CHANNEL/; key order, or shuffled from --shuffle-seed).  A Sampler
that reads it and yields the files in that order lets s3pipe fetch each file
before the workers open it, instead of on the open.

Prints, per epoch: files read, bytes, seconds and MB/s (10^6 bytes/s).  With
--verify DIR every file is also compared with DIR/PATH, a local copy of the
prefix; the exit status is then 1 if any file differs or is missing.
"""
import argparse
import os
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset, Sampler


class FastFileDataset(Dataset):
    """Every file under ROOT (a FastFile channel folder), in key order.

    Item i is (i, the bytes of file i as a 1-D uint8 tensor): decode it
    (an image, a record, ...) here, in the worker, in a real job.
    """

    def __init__(self, root):
        self.root = root
        paths = []
        for dirpath, _, files in os.walk(root):
            rel = os.path.relpath(dirpath, root)
            paths += [f if rel == "." else rel + "/" + f for f in files]
        # key order: the order of the keys' bytes, which is how s3pipe
        # lists them when it is not shuffling
        self.paths = sorted(paths, key=os.fsencode)
        self.index = {p: i for i, p in enumerate(self.paths)}

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        # open, read whole, close: one file, one item
        with open(os.path.join(self.root, self.paths[i]), "rb") as f:
            data = f.read()
        if not data:  # an empty object (frombuffer refuses an empty buffer)
            return i, torch.empty(0, dtype=torch.uint8)
        return i, torch.frombuffer(bytearray(data), dtype=torch.uint8)


class OrderFileSampler(Sampler):
    """Yields the dataset's indices in s3pipe's order for the epoch.

    Call set_epoch(n) before each epoch, as with DistributedSampler.
    Reading MOUNT/.s3pipe-order/CHANNEL_N is what tells s3pipe the order:
    it then prefetches the files in that order, ahead of the workers.
    Without the file (not an s3pipe mount, or a Pipe channel) it falls
    back to key order, with no prefetch.
    """

    def __init__(self, dataset, mount, channel):
        self.dataset = dataset
        self.order_dir = os.path.join(mount, ".s3pipe-order")
        self.channel = channel
        self.epoch = 0
        self.from_order_file = None  # known once an epoch has started

    def set_epoch(self, epoch):
        self.epoch = epoch

    def __len__(self):
        return len(self.dataset)

    def __iter__(self):
        path = os.path.join(self.order_dir, "%s_%d" % (self.channel, self.epoch))
        try:
            # one path a line, relative to MOUNT/CHANNEL/
            with open(path) as f:
                order = f.read().splitlines()
        except FileNotFoundError:
            if self.from_order_file is None:  # say it once
                print("note: no order file %s: reading in key order, without s3pipe's "
                      "prefetch (is this an s3pipe FastFile channel?)" % path, file=sys.stderr)
            self.from_order_file = False
            return iter(range(len(self.dataset)))
        self.from_order_file = True
        return iter([self.dataset.index[p] for p in order])


def collate(batch):
    """Files differ in size: a batch is one flat tensor and each file's length."""
    idx = torch.tensor([i for i, _ in batch])
    lengths = torch.tensor([len(t) for _, t in batch])
    return idx, torch.cat([t for _, t in batch]), lengths


def main():
    ap = argparse.ArgumentParser(description="read an s3pipe FastFile channel with a PyTorch DataLoader")
    ap.add_argument("--mount", required=True, help="the s3pipe mountpoint")
    ap.add_argument("--channel", required=True, help="the channel's NAME (the folder MOUNT/NAME/)")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--workers", type=int, default=8, help="DataLoader worker processes (default 8)")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--verify", metavar="DIR", help="compare every file with DIR/PATH")
    args = ap.parse_args()

    root = os.path.join(args.mount, args.channel)
    if not os.path.isdir(root):
        sys.exit("pytorch_fastfile: %s is not a folder (is %s a FastFile channel of %s?)"
                 % (root, args.channel, args.mount))
    dataset = FastFileDataset(root)
    sampler = OrderFileSampler(dataset, args.mount, args.channel)
    loader = DataLoader(dataset, batch_size=args.batch_size, sampler=sampler,
                        num_workers=args.workers, collate_fn=collate,
                        persistent_workers=args.workers > 0)
    print("%s: %d files, %d workers, batch size %d"
          % (root, len(dataset), args.workers, args.batch_size))

    failed = False
    for epoch in range(args.epochs):
        bad = 0
        sampler.set_epoch(epoch)
        seen = bytearray(len(dataset))  # how often each file came back
        files = nbytes = 0
        t0 = time.monotonic()
        for idx, data, lengths in loader:
            files += len(idx)
            nbytes += len(data)
            # the training step goes here
            if args.verify:
                for i, t in zip(idx.tolist(), torch.split(data, lengths.tolist())):
                    seen[i] = min(seen[i] + 1, 255)
                    try:
                        with open(os.path.join(args.verify, dataset.paths[i]), "rb") as f:
                            same = f.read() == t.numpy().tobytes()
                    except FileNotFoundError:
                        same = False
                    if not same:
                        print("epoch %d: %s differs from the local copy" % (epoch, dataset.paths[i]))
                        bad += 1
        secs = time.monotonic() - t0
        how = "s3pipe's order file" if sampler.from_order_file else "key order, no order file"
        print("epoch %d: %d files, %d bytes, %.2f s, %.1f MB/s (%s)"
              % (epoch, files, nbytes, secs, nbytes / secs / 1e6 if secs > 0 else 0.0, how))
        if args.verify:
            missed = [dataset.paths[i] for i, n in enumerate(seen) if n != 1]
            for p in missed[:10]:
                print("epoch %d: %s read %d times, not once" % (epoch, p, seen[dataset.index[p]]))
            bad += len(missed)
            print("epoch %d: verified %d files against %s: %s"
                  % (epoch, files, args.verify, "all equal" if not bad else "%d problems" % bad))
        failed = failed or bad > 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
