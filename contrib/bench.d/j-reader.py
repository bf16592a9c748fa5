# contrib/bench.d/j-reader.py: (j)'s readers, plain Python 3 (no torch, no
# numpy), run by contrib/bench.d/j-fastfile.sh.
#
#   j-reader.py map --root DIR [--workers 8] [--chunk 8]
#               (--order FILE | --keys FILE [--shuffle SEED]) [--save-order OUT]
#       A map-style reader as a PyTorch DataLoader is one: WORKERS processes
#       (a multiprocessing.Pool, started before the clock) each open a file,
#       read it whole and close it, taking the paths (relative to DIR) in
#       the given order, CHUNK at a time.  --order FILE: the paths are
#       FILE's lines (s3pipe's MOUNT/.s3pipe-order/NAME_N: reading it is on
#       the clock, and is what tells s3pipe the order); --keys FILE: a local
#       list, shuffled with random.Random(SEED) when --shuffle is given.
#       --save-order OUT writes the order read.  Prints one line:
#       files=N bytes=B secs=S order_ms=M (the order file's read).
#   j-reader.py pread FILE COUNT SIZE SEED
#       COUNT os.pread()s of SIZE bytes at offsets from random.Random(SEED)
#       (uniform over the file), one after another.  Prints files=1
#       bytes=B secs=S reads=COUNT short=K (reads that returned less).
#   j-reader.py offsets FILESIZE COUNT SIZE SEED
#       The offsets pread would use on a file of FILESIZE bytes, one a line
#       (for curl's ranges at the same places).
#   j-reader.py stats FILE
#       Numbers of an s3pipe stats JSON (MOUNT/.s3pipe-stats): s3.*,
#       memory.*, and tree.* of the first channel with a tree, one
#       KEY=VALUE a line.
import json
import multiprocessing
import os
import random
import sys
import time


def read_whole(path):
    with open(path, "rb", buffering=0) as f:
        return len(f.readall())


def read_chunk(paths):
    return len(paths), sum(read_whole(p) for p in paths)


def cmd_map(args):
    opts = {"--workers": "8", "--chunk": "8"}
    i = 0
    while i < len(args):
        opts[args[i]] = args[i + 1]
        i += 2
    root, workers, chunk = opts["--root"], int(opts["--workers"]), int(opts["--chunk"])
    pool = multiprocessing.Pool(workers)
    pool.map(abs, range(workers))  # the workers are up before the clock starts
    t0 = time.monotonic()
    if "--order" in opts:
        with open(opts["--order"]) as f:
            order = f.read().splitlines()
    else:
        with open(opts["--keys"]) as f:
            order = f.read().splitlines()
        if "--shuffle" in opts:
            random.Random(int(opts["--shuffle"])).shuffle(order)
    t_order = time.monotonic()
    paths = [os.path.join(root, p) for p in order]
    chunks = [paths[k:k + chunk] for k in range(0, len(paths), chunk)]
    files = nbytes = 0
    for n, b in pool.imap(read_chunk, chunks):
        files += n
        nbytes += b
    secs = time.monotonic() - t0
    pool.close()
    pool.join()
    if "--save-order" in opts:
        with open(opts["--save-order"], "w") as f:
            f.write("".join(p + "\n" for p in order))
    print("files=%d bytes=%d secs=%.6f order_ms=%.3f" % (files, nbytes, secs, (t_order - t0) * 1e3))


def pread_offsets(filesize, count, size, seed):
    rng = random.Random(int(seed))
    end = int(filesize) - int(size)
    return [rng.randrange(0, end + 1) for _ in range(int(count))]


def cmd_pread(path, count, size, seed):
    count, size = int(count), int(size)
    fd = os.open(path, os.O_RDONLY)
    offsets = pread_offsets(os.fstat(fd).st_size, count, size, seed)
    nbytes = short = 0
    t0 = time.monotonic()
    for off in offsets:
        n = len(os.pread(fd, size, off))
        nbytes += n
        short += n != size
    secs = time.monotonic() - t0
    os.close(fd)
    print("files=1 bytes=%d secs=%.6f reads=%d short=%d" % (nbytes, secs, count, short))


def cmd_stats(path):
    with open(path) as f:
        s = json.load(f)
    out = {}
    for sect in ("s3", "memory"):
        for k, v in (s.get(sect) or {}).items():
            out[sect + "." + k] = v
    for c in s.get("channels") or []:
        if c.get("tree"):
            for k, v in c["tree"].items():
                out["tree." + k] = v
            break
    for k, v in out.items():
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            print("%s=%s" % (k, v))


if __name__ == "__main__":
    cmd, rest = sys.argv[1], sys.argv[2:]
    if cmd == "map":
        cmd_map(rest)
    elif cmd == "pread":
        cmd_pread(*rest)
    elif cmd == "offsets":
        print("\n".join(str(o) for o in pread_offsets(*rest)))
    elif cmd == "stats":
        cmd_stats(*rest)
    else:
        sys.exit("j-reader.py: unknown command %r" % cmd)
