"""A small program with three kinds of hot spots, for `scry run examples/hotspots.py`.

Its time splits between Python bytecode (a pure-Python loop), native code (sorting and
compressing in C) and waiting (a sleep, a worker thread's blocking queue read)."""

import queue
import random
import threading
import time
import zlib


def checksum(values):
    total = 0
    for v in values:  # pure Python: the interpreter runs every step
        total = (total * 31 + v) & 0xFFFFFFFF
    return total


def sort_and_pack(values):
    ordered = sorted(values)  # native: the work happens inside a C function
    blob = repr(ordered).encode()
    return zlib.compress(blob, 6)  # native, too


def consumer(q, results):
    while True:
        item = q.get()  # waiting: this thread is off the CPU until work arrives
        if item is None:
            return
        results.append(checksum(item))


def main():
    rng = random.Random(7)
    values = [rng.randrange(1 << 30) for _ in range(300_000)]
    q, results = queue.Queue(), []
    worker = threading.Thread(target=consumer, args=(q, results), name="consumer")
    worker.start()
    for _ in range(3):
        for _ in range(4):
            checksum(values)
        sort_and_pack(values)
        time.sleep(0.2)  # waiting: system time
        q.put(values[:50_000])
    q.put(None)
    worker.join()
    print("done:", len(results), "checksums")


if __name__ == "__main__":
    main()
