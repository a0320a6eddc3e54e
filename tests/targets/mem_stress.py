"""Stress target for `scry run`'s memory hooks: 16 threads allocate and free concurrently (bytes,
bytearrays, lists, dicts, strs, numpy arrays when numpy is installed) for a few seconds. Sizes
run from a few bytes to 4 MiB, each thread keeps its last 32 objects alive (older ones are
freed as it goes), and every 8th object goes into a slot shared by all threads, where another
thread's object replaces it: blocks are freed by threads other than the one that made them.

Each thread's work is fixed by its seed, not by time, so that the output is deterministic: one
line per thread with a checksum of what it made, then a summary. Exits with status 5.

Usage: mem_stress.py [rounds]   (default 4000 per thread: about 3 s on 2 cores)
"""

import collections
import random
import sys
import threading

try:
    import numpy as np
except ImportError:
    np = None

THREADS = 16
KEEP = 32
MASK = (1 << 61) - 1
shared = [None] * THREADS


def make(rng):
    """One object of a random kind and size, and a number derived from its contents."""
    kind = rng.randrange(6 if np is not None else 5)
    n = rng.randrange(1, 64 << 10) if rng.randrange(64) else rng.randrange(1 << 20, 4 << 20)
    if kind == 0:
        obj = bytearray(n)
        obj[-1] = n & 0xff
        return obj, obj[-1] + len(obj)
    if kind == 1:
        obj = bytes(n)
        return obj, len(obj)
    if kind == 2:
        obj = list(range(n // 64 + 1))
        return obj, obj[-1]
    if kind == 3:
        obj = {i: str(i) for i in range(n // 256 + 1)}
        return obj, len(obj) + len(obj[len(obj) - 1])
    if kind == 4:
        obj = "x" * (n // 8 + 1)
        return obj, len(obj)
    obj = np.arange(n // 64 + 1, dtype=np.int64)
    return obj, int(obj.sum())


def worker(index, rounds, results):
    rng = random.Random(1000 + index)
    live = collections.deque(maxlen=KEEP)
    checksum = index
    for i in range(rounds):
        obj, value = make(rng)
        checksum = (checksum * 31 + value) & MASK
        live.append(obj)
        if i % 8 == 0:
            shared[(index + i) % THREADS] = obj
    results[index] = checksum


def main(rounds):
    results = [None] * THREADS
    threads = [threading.Thread(target=worker, args=(i, rounds, results), name=f"stress-{i}")
               for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, checksum in enumerate(results):
        print(f"thread {i:2d}: checksum {checksum}")
    print(f"stress: {THREADS} threads x {rounds} rounds, numpy {np is not None}, "
          f"total {sum(results) & MASK}")
    sys.stdout.flush()
    return 5


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 4000))
