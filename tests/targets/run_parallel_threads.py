"""Target for `scry run`: threads that run pure Python at the same time (on a free-threaded
build, truly in parallel: there is no GIL to take turns on). Three threads start together at a
barrier and each runs its own counting loop in its own function for a different amount of work
(spin_one ~0.6 s, spin_two ~1.2 s, spin_three ~1.8 s of CPU on an idle machine); each measures
its own CPU time around the loop with time.thread_time(), and the wall-clock interval in which it
ran. The main thread waits in join(). The last line of stdout is the ground truth as JSON: per
function its thread's CPU seconds, and how many seconds at least two threads were running at
once (all of them on a GIL build show as overlapping in wall time too: they take turns).
"""

import json
import sys
import threading
import time

SECONDS = {"spin_one": 0.6, "spin_two": 1.2, "spin_three": 1.8}
TRUTH = {}
BARRIER = threading.Barrier(len(SECONDS))


def spin_one(n):
    t0 = time.thread_time()
    i = 0
    while i < n: i += 1  # @spin_one
    return time.thread_time() - t0


def spin_two(n):
    t0 = time.thread_time()
    i = 0
    while i < n: i += 1  # @spin_two
    return time.thread_time() - t0


def spin_three(n):
    t0 = time.thread_time()
    i = 0
    while i < n: i += 1  # @spin_three
    return time.thread_time() - t0


def loops_per_second():
    """Iterations of the counting loop per CPU second (best of a few tries)."""
    best = 0.0
    for _ in range(5):
        t0 = time.thread_time()
        i = 0
        while i < 200_000: i += 1
        dt = time.thread_time() - t0
        if dt > 0:
            best = max(best, 200_000 / dt)
    return best


def worker(func, n):
    BARRIER.wait()
    w0 = time.perf_counter()
    cpu = func(n)
    TRUTH[func.__name__] = {"cpu": cpu, "start": w0, "end": time.perf_counter()}


def main():
    rate = loops_per_second()
    funcs = {"spin_one": spin_one, "spin_two": spin_two, "spin_three": spin_three}
    threads = [threading.Thread(target=worker, args=(funcs[name], int(rate * s)), name=name)
               for name, s in SECONDS.items()]
    for t in threads:
        t.start()
    for t in threads:
        t.join()  # @join
    intervals = sorted((v["start"], v["end"]) for v in TRUTH.values())
    overlap = sum(max(0.0, min(a[1], b[1]) - max(a[0], b[0]))
                  for i, a in enumerate(intervals) for b in intervals[i + 1:])
    gil = getattr(sys, "_is_gil_enabled", lambda: True)()
    print(json.dumps({"cpu": {k: v["cpu"] for k, v in TRUTH.items()}, "overlap_sec": overlap,
                      "gil": gil}))


if __name__ == "__main__":
    main()
