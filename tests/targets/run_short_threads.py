"""Target for `scry run`: threads that live shorter than a sampling interval. Sections (all by
default, or the ones named on the command line):
  short    3,000 threads of ~1 ms of pure-Python CPU each, started and joined one after another
  medium   200 threads of ~10 ms each, the same way
Each thread runs a plain counting loop in its own function (crunch_short, crunch_medium) and
measures its own CPU time around it with time.thread_time(); the main thread measures the wall
and CPU time it spends in t.start() and t.join(). The last line of stdout is the ground truth as
JSON: per section the summed CPU seconds of the threads' function, and the main thread's
seconds off the CPU inside start() and join().
"""

import json
import sys
import threading
import time

SECTIONS = {"short": (3000, 0.001), "medium": (200, 0.010)}
TRUTH = {}


def crunch_short(n, out):
    t0 = time.thread_time()
    i = 0
    while i < n: i += 1  # @short
    out.append(time.thread_time() - t0)


def crunch_medium(n, out):
    t0 = time.thread_time()
    i = 0
    while i < n: i += 1  # @medium
    out.append(time.thread_time() - t0)


def count(n):
    i = 0
    while i < n: i += 1
    return i


def loops_per_second():
    """Iterations of the counting loop per CPU second (best of a few tries)."""
    best = 0.0
    for _ in range(5):
        t0 = time.thread_time()
        count(200_000)
        dt = time.thread_time() - t0
        if dt > 0:
            best = max(best, 200_000 / dt)
    return best


def run(name, rate):
    nthreads, seconds = SECTIONS[name]
    func = crunch_short if name == "short" else crunch_medium
    n = max(1, int(rate * seconds))
    cpu = []
    start_off = join_off = 0.0
    w0 = time.perf_counter()
    for _ in range(nthreads):
        t = threading.Thread(target=func, args=(n, cpu))
        a, ac = time.perf_counter(), time.thread_time()
        t.start()  # @start
        b, bc = time.perf_counter(), time.thread_time()
        t.join()  # @join
        c, cc = time.perf_counter(), time.thread_time()
        start_off += (b - a) - (bc - ac)
        join_off += (c - b) - (cc - bc)
    TRUTH[name] = {"threads": nthreads, "iterations": n, "function_cpu": sum(cpu),
                   "start_off": start_off, "join_off": join_off,
                   "wall": time.perf_counter() - w0}


def main(names):
    for name in names:
        if name not in SECTIONS:
            raise SystemExit(f"run_short_threads: no section {name!r} (have {', '.join(SECTIONS)})")
    rate = loops_per_second()
    for name in names:
        run(name, rate)
    print(json.dumps({"sections": TRUTH, "cpu_total": time.process_time()}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or list(SECTIONS))
