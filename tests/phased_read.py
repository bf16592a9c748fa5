#!/usr/bin/env python3
"""Reads one file through a single open handle, in phases, for the outage
and throttling tests (the test changes the server between phases while the
same reader keeps its file open), or slowly, for the tests whose
credentials must expire during a read.

Usage:
  phased_read.py [--chunk BYTES] [--pace SECONDS] FILE OUT CTL OFFSET...

Reads FILE in reads of BYTES (default 1 MiB), sleeping SECONDS (default 0)
after each (a slow reader), and writes every byte to OUT.  CTL may be "-"
when there are no phases and no log is wanted.  On reaching each
OFFSET (in bytes, ascending) it creates CTL/at.N (N = 0, 1, ...) and waits
for CTL/go.N to exist before reading on.  Throughout it appends one line
per read to CTL/reads: "<seconds since the epoch> <bytes so far>", so that
a test can tell when the bytes stopped and when they came again.  On a read
error it writes CTL/error (the errno's name and the offset) and exits 1.
"""
import errno
import os
import sys
import time

CHUNK = 1 << 20


WAIT_MAX = 300  # seconds: a test that failed in between never says go


def wait_for(path):
    deadline = time.time() + WAIT_MAX
    while not os.path.exists(path):
        # the test is gone (its folder removed) or has waited too long
        if not os.path.isdir(os.path.dirname(path)) or time.time() > deadline:
            sys.exit("phased_read.py: no %s: giving up" % path)
        time.sleep(0.02)


def main():
    args = sys.argv[1:]
    chunk, pace = CHUNK, 0.0
    while args and args[0].startswith("--"):
        if len(args) < 2 or args[0] not in ("--chunk", "--pace"):
            sys.exit(__doc__)
        if args[0] == "--chunk":
            chunk = int(args[1])
        else:
            pace = float(args[1])
        args = args[2:]
    if len(args) < 3:
        sys.exit(__doc__)
    src, out, ctl = args[:3]
    offsets = [int(x) for x in args[3:]]
    if ctl == "-" and offsets:
        sys.exit("phased_read.py: phases need a CTL directory")
    phase = 0
    done = 0
    fd = os.open(src, os.O_RDONLY)
    log_path = os.devnull if ctl == "-" else os.path.join(ctl, "reads")
    with open(out, "wb") as o, open(log_path, "w") as log:
        while True:
            if phase < len(offsets) and done >= offsets[phase]:
                open(os.path.join(ctl, "at.%d" % phase), "w").close()
                wait_for(os.path.join(ctl, "go.%d" % phase))
                phase += 1
                continue
            want = chunk
            if phase < len(offsets):
                want = min(want, offsets[phase] - done)
            try:
                data = os.read(fd, want)
            except OSError as e:
                what = "%s %d\n" % (errno.errorcode.get(e.errno, e.errno), done)
                if ctl == "-":
                    sys.exit("phased_read.py: " + what.strip())
                with open(os.path.join(ctl, "error"), "w") as f:
                    f.write(what)
                sys.exit(1)
            if not data:
                break
            o.write(data)
            done += len(data)
            log.write("%.3f %d\n" % (time.time(), done))
            log.flush()
            if pace:
                time.sleep(pace)
    os.close(fd)


if __name__ == "__main__":
    main()
