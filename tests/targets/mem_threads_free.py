"""Ground-truth target for `scry run`'s memory profile when memory is allocated in one thread and
freed in another (a thread pool, numpy's temporaries, OpenBLAS's per-thread buffers).

Usage: mem_threads_free.py python|numpy

python (pure Python, a pool of 4 threads; MiB blocks, each of its own allocation):
  worker_alloc  80 blocks of 4 MiB made by the workers, freed by the main thread: 320 MiB
                allocated, nothing kept
  main_alloc    80 blocks of 4 MiB made by the main thread, freed by the workers: nothing kept
  worker_temp   80 temporaries of 4 MiB made and dropped by the workers: nothing kept, at most
                one per worker alive at once (16 MiB)
  grow          8 bytearrays grown to 4 MiB by `+=` (realloc) in the workers, freed by the main
                thread: nothing kept
  worker_keep   20 blocks of 2 MiB made by the workers and kept to the end: 40 MiB kept
  thread_buffer one anonymous mapping of 32 MiB per worker (as OpenBLAS maps for each thread
                that calls it), of which the worker touches 3 MiB, kept to the end: 128 MiB
                allocated (mapped), 12 MiB kept (what is resident: all the program holds)
numpy (the same pool):
  np_temp       100 temporaries of 1000 x 1000 float64 (`a + b`, 7.63 MiB, no BLAS) made and
                dropped by the workers: 763 MiB allocated, nothing kept
  np_matmul     16 products `a @ b` (7.63 MiB each, dropped): OpenBLAS maps a 32 MiB buffer
                for each thread that calls it, of which it touches a few MiB; the line keeps
                those resident pages and nothing else
  np_keep       6 arrays of 8 MiB made by the workers and kept: 48 MiB kept

Prints one JSON line: {"numpy": bool, "blas_kept": bytes}: with numpy, how much the process's
anonymous resident memory (RssAnon, after glibc's malloc_trim) grew over the matmul phase.
"""

import concurrent.futures as cf
import ctypes
import json
import mmap
import sys
import threading

MB = 1 << 20
WORKERS = 4
ROUNDS = 10
KEPT = []
CHUNK = bytes(128 * 1024)
BUFFER = 32 * MB
TOUCHED = 3 * MB
PAGE = mmap.PAGESIZE
MAPS = []


def rss_anon():
    """The anonymous resident memory, once the C library gave back what it holds freed."""
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):
        pass
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no RssAnon in /proc/self/status")


def make(i):
    return bytearray(4 * MB)  # @worker_alloc


def temp(i):
    b = bytearray(4 * MB)  # @worker_temp
    return len(b)


def grow(i):
    b = bytearray()
    for _ in range(32):
        b += CHUNK  # @grow
    return b


def keep(i):
    KEPT.append(bytearray(2 * MB))  # @worker_keep


def drop(box):
    box.pop()


def thread_buffer(barrier):
    barrier.wait()  # one task per worker: every worker maps its own buffer
    m = mmap.mmap(-1, BUFFER)  # @thread_buffer
    for off in range(0, TOUCHED, PAGE):
        m[off] = 1
    MAPS.append(m)


def python_mode(ex):
    for _ in range(ROUNDS):
        blocks = list(ex.map(make, range(8)))
        del blocks
    for _ in range(ROUNDS):
        boxes = [[bytearray(4 * MB)] for _ in range(8)]  # @main_alloc
        list(ex.map(drop, boxes))
        del boxes
    for _ in range(ROUNDS):
        list(ex.map(temp, range(8)))
    for _ in range(ROUNDS):
        grown = list(ex.map(grow, range(8)))
        del grown
    list(ex.map(keep, range(20)))
    barrier = threading.Barrier(WORKERS)
    list(ex.map(thread_buffer, [barrier] * WORKERS))
    return {"buffers": len(MAPS)}


def numpy_mode(ex):
    try:
        import numpy as np
    except ImportError:
        return {"numpy": False}
    a = np.ones((1000, 1000))
    b = np.ones((1000, 1000))

    def add(i):
        c = a + b  # @np_temp
        return float(c[0, 0])

    def product(i):
        c = a @ b  # @np_matmul
        return float(c[0, 0])

    def keep_array(i):
        KEPT.append(np.full(1 << 20, float(i)))  # @np_keep

    list(ex.map(add, range(100)))
    before = rss_anon()
    list(ex.map(product, range(16)))
    after = rss_anon()
    list(ex.map(keep_array, range(6)))
    return {"numpy": True, "blas_kept": max(0, after - before)}


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "python"
    with cf.ThreadPoolExecutor(WORKERS) as ex:
        facts = python_mode(ex) if mode == "python" else numpy_mode(ex)
    facts["kept"] = len(KEPT)
    print(json.dumps(facts))


if __name__ == "__main__":
    main()
