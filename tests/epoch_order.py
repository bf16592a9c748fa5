"""An epoch's order as s3pipe(1) specifies it ("Epoch order"), written
independently of channel/order.c so that the tests check the one against
the other.

As a module: shuffle(items, seed, epoch) puts a list in the order of epoch
(in place).  As a command: epoch_order.py SEED EPOCH reads one name a line
and prints them in that order ("-" for no seed: as they are).
"""
import sys

M = (1 << 64) - 1


def mix(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M
    return z ^ (z >> 31)


def shuffle(items, seed, epoch):
    """Fisher-Yates from the last position down, SplitMix64 keyed by
    (seed, epoch), with the rejection below(m) the man page gives."""
    state = mix(mix(int(seed) & M) ^ epoch)

    def below(m):
        nonlocal state
        rem = (1 << 64) % m
        while True:
            state = (state + 0x9E3779B97F4A7C15) & M
            r = mix(state)
            if r < (1 << 64) - rem:
                return r % m

    for i in range(len(items) - 1, 0, -1):
        j = below(i + 1)
        items[i], items[j] = items[j], items[i]
    return items


if __name__ == "__main__":
    names = sys.stdin.read().splitlines()
    if sys.argv[1] != "-":
        shuffle(names, sys.argv[1], int(sys.argv[2]))
    sys.stdout.write("".join(n + "\n" for n in names))
