"""A record-shuffled epoch as s3pipe(1) specifies it ("Record shuffle"),
written from the man page, independently of channel/mix_draw.c, so that the
tests check the one against the other.

    record_shuffle.py FORMAT SEED EPOCH BUFFER BLOCK DIR [KEY...]

FORMAT is recordio or lines; KEY... are the objects' keys (files in DIR)
in the epoch's object order (their key order, shuffled as epoch_order.py
does when the channel has a seed).  Writes the epoch's bytes to stdout.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import epoch_order  # noqa: E402
import recordio  # noqa: E402

M = (1 << 64) - 1
BLOCKS_KEY = 0x6D69782D626C6F63
DRAWS_KEY = 0x6D69782D64726177


class Rng:
    def __init__(self, seed, epoch):
        self.state = epoch_order.mix(epoch_order.mix(seed & M) ^ epoch)

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & M
        return epoch_order.mix(self.state)

    def below(self, m):
        rem = (1 << 64) % m
        while True:
            r = self.next()
            if r < (1 << 64) - rem:
                return r % m

    def below_mul(self, m):
        while True:
            p = self.next() * m
            low = p & M
            if low >= ((1 << 64) - m) % m:
                return p >> 64


def record_starts(fmt, data, path):
    if fmt == "recordio":
        return list(recordio.offsets(path))
    starts, at = [], 0
    while at < len(data):
        starts.append(at)
        nl = data.find(b"\n", at)
        at = len(data) if nl < 0 else nl + 1
    return starts


def main(argv):
    fmt, seed, epoch, buf, block, folder = argv[1:7]
    seed, epoch, buf, block = int(seed), int(epoch), int(buf), int(block)
    objs = []
    for key in argv[7:]:
        path = os.path.join(folder, key)
        data = open(path, "rb").read()
        if not data:
            continue
        starts = record_starts(fmt, data, path)
        ends = starts[1:] + [len(data)]
        recs = [(a, b) for a, b in zip(starts, ends)]
        objs.append((data, recs))
    # blocks, numbered in the objects' order
    blocks = []  # (object, first byte)
    for o, (data, _) in enumerate(objs):
        for j in range((len(data) + block - 1) // block):
            blocks.append((o, j * block))
    # the load order: each object's blocks shuffled, the k-th of n keyed
    # ((k << 64) + next()) // n, sorted by key, then number
    rng = Rng(seed, epoch ^ BLOCKS_KEY)
    keyed, base = [], 0
    for o, (data, _) in enumerate(objs):
        n = (len(data) + block - 1) // block
        mine = list(range(base, base + n))
        for i in range(n - 1, 0, -1):
            j = rng.below(i + 1)
            mine[i], mine[j] = mine[j], mine[i]
        for k in range(n):
            keyed.append((((k << 64) + rng.next()) // n, mine[k]))
        base += n
    order = [b for _, b in sorted(keyed)]
    pos = {b: t for t, b in enumerate(order)}
    # each record's blocks, and the one that loads it: the last in P
    first_block = []
    base = 0
    for data, _ in objs:
        first_block.append(base)
        base += (len(data) + block - 1) // block
    loads = {b: [] for b in range(len(blocks))}
    for o, (data, recs) in enumerate(objs):
        for i, (a, b) in enumerate(recs):
            span = range(first_block[o] + a // block,
                         first_block[o] + (b - 1) // block + 1)
            owner = max(span, key=lambda x: pos[x])
            loads[owner].append((o, i))
    # (a block loads the record reaching into it first, then those that
    # begin in it: in record order, as they are appended)
    tickets = []
    for b in order:
        tickets.extend([b] * len(loads[b]))
    records = sum(len(r) for _, r in objs)
    stored = sum(len(d) for d, _ in objs)
    cap = int(float(buf) * float(records) / float(stored)) if stored else 1
    cap = max(1, min(cap, records)) if records else 1
    rng = Rng(seed, epoch ^ DRAWS_KEY)
    pool = tickets[:cap]
    feed = iter(tickets[cap:])
    cursor = {b: 0 for b in range(len(blocks))}
    out = sys.stdout.buffer
    while pool:
        j = rng.below_mul(len(pool))
        b = pool[j]
        o, i = loads[b][cursor[b]]
        cursor[b] += 1
        data, recs = objs[o]
        a, e = recs[i]
        out.write(data[a:e])
        if fmt == "lines" and i == len(recs) - 1 and not data.endswith(b"\n"):
            out.write(b"\n")
        nxt = next(feed, None)
        if nxt is None:
            pool[j] = pool[-1]
            pool.pop()
        else:
            pool[j] = nxt
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
