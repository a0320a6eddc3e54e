"""Ground-truth target for `scry run`: sections whose Python / native / system split is known.

  python    a pure-Python loop on one line (no calls): Python time only
  sorted    sorted() of a shuffled list of 200,000 ints, re-sorted each round: native
  zlib      zlib.compress of 4 MiB of random bytes: native
  sha256    hashlib.sha256 of 32 MiB: native
  sleep     time.sleep(0.05) in a loop: system (off the CPU)
  pipe      os.read of a pipe that a shell writes one byte into every 0.15 s: system
  thread    a worker thread runs a pure-Python loop (Python) while the main thread waits in
            join() (system)
  split     seventy() and thirty() run the same loop 7:3 times, in two rounds: 70/30 of their
            sum (few rounds: each switch between them is a sampling interval that may be
            charged to the wrong one, ~10 ms of noise)

Each measured line carries an `@name` marker comment (tests/targets/groundtruth.py reads
them). Every section does about 1.5 s of work on the machine the sizes were chosen on (2 cores).

Usage: run_cpu_split.py [section ...]   (default: every section, in the order above)

At the end it prints one JSON line: {"sections": {name: {"wall": s, "cpu": s}}, "elapsed": s,
"extra_thread_seconds": s, "cpu_total": s}: the sections' own timing of their measured loops (not
their set-up; "thread_busy" is the worker thread's loop; "split.seventy" and "split.thirty" each
function's calls), the main thread's time since this module started, the worker thread's lifetime
and the process's CPU time. The tests derive each line's expected share of the sampled time from
the wall times, and from cpu/wall how much of a busy line's time the machine's load kept off the
CPU (system time, by scry's definition).
"""

import hashlib
import json
import os
import random
import subprocess
import sys
import threading
import time
import zlib

T0 = time.perf_counter()

PYTHON_N = 34_000_000  # iterations of the one-line loop (~44 ns each): ~1.5 s
SORT_N, SORT_ROUNDS = 200_000, 25  # ~60 ms a sort
ZLIB_BYTES, ZLIB_ROUNDS = 4 << 20, 12  # ~125 ms a compress
SHA_BYTES, SHA_ROUNDS = 32 << 20, 50  # ~30 ms a hash
SLEEP_S, SLEEP_ROUNDS = 0.05, 30
PIPE_DELAY_S, PIPE_ROUNDS = 0.15, 10
THREAD_N = 34_000_000
SPLIT_UNIT, SPLIT_ROUNDS = 2_300_000, 2  # 10 units a round: ~2 s in all



def _seconds_per_iteration(probe=1_000_000):
    i = 0  # a local, like the sections' loops
    cpu = time.thread_time()
    while i < probe: i += 1
    return max(time.thread_time() - cpu, 1e-6) / probe


# 3.14's loop is ~2.5x faster than 3.11's: fixed counts left the Python line ~60 samples, too few
# to judge its split. Each count is at least the one above, more where this interpreter runs the
# loop faster; timed on the thread's CPU clock, so load does not shrink the counts.
SECONDS_PER_ITERATION = _seconds_per_iteration()
PYTHON_N = max(PYTHON_N, int(1.5 / SECONDS_PER_ITERATION))
THREAD_N = max(THREAD_N, int(1.5 / SECONDS_PER_ITERATION))
SPLIT_UNIT = max(SPLIT_UNIT, int(0.2 / SPLIT_ROUNDS / SECONDS_PER_ITERATION))

TIMES = {}  # section -> {"wall": s, "cpu": s} of its measured loop
EXTRA_THREAD_SECONDS = [0.0]  # lifetime of threads other than the main one


class Timed:
    """Times a section's measured loop (wall clock and the calling thread's CPU clock)."""

    def __init__(self, name):
        self.name = name

    def __enter__(self):
        self.wall, self.cpu = time.perf_counter(), time.thread_time()

    def __exit__(self, *exc):
        TIMES[self.name] = {"wall": time.perf_counter() - self.wall,
                            "cpu": time.thread_time() - self.cpu}


def python_section():
    n = PYTHON_N
    i = 0
    with Timed("python"):
        while i < n: i += 1  # @python
    return i


def rounds_for(default, one_round):
    """At least `default` rounds, more where one round takes less CPU time than the sizes were
    chosen for: each native section keeps ~1.5 s of work (3.15 sorts twice as fast as 3.11, which
    left the sorted line under 50 samples). Timed on the thread's CPU clock, so load does not
    shrink the count."""
    fastest = float("inf")
    for _ in range(2):  # the faster of two: the first may pay for cold caches
        cpu = time.thread_time()
        one_round()
        fastest = min(fastest, time.thread_time() - cpu)
    return max(default, int(1.5 / max(fastest, 1e-6)) + 1)


def sorted_section():
    data = [(i * 2654435761) % 4294967296 for i in range(SORT_N)]  # a fixed pseudo-shuffle
    rounds = rounds_for(SORT_ROUNDS, lambda: sorted(data))
    with Timed("sorted"):
        for _ in range(rounds):
            sorted(data)  # @sorted


def zlib_section():
    buf = random.Random(2).randbytes(ZLIB_BYTES)
    rounds = rounds_for(ZLIB_ROUNDS, lambda: zlib.compress(buf, 6))
    with Timed("zlib"):
        for _ in range(rounds):
            zlib.compress(buf, 6)  # @zlib


def sha256_section():
    buf = random.Random(3).randbytes(SHA_BYTES)
    rounds = rounds_for(SHA_ROUNDS, lambda: hashlib.sha256(buf).digest())
    with Timed("sha256"):
        for _ in range(rounds):
            hashlib.sha256(buf).digest()  # @sha256


def sleep_section():
    with Timed("sleep"):
        for _ in range(SLEEP_ROUNDS):
            time.sleep(SLEEP_S)  # @sleep


def pipe_section():
    # The writer is a shell, not a Python thread, so that no other Python thread's time is
    # sampled while the main thread blocks in read.
    script = f"for i in $(seq {PIPE_ROUNDS}); do sleep {PIPE_DELAY_S}; printf x; done"
    writer = subprocess.Popen(["sh", "-c", script], stdout=subprocess.PIPE)
    fd = writer.stdout.fileno()
    got = b""
    with Timed("pipe"):
        for _ in range(PIPE_ROUNDS):
            got += os.read(fd, 1)  # @pipe
    writer.stdout.close()
    if writer.wait() != 0 or got != b"x" * PIPE_ROUNDS:
        raise SystemExit(f"run_cpu_split: pipe writer failed ({got!r})")


def spin(n, out):
    started, cpu = time.perf_counter(), time.thread_time()
    i = 0
    while i < n: i += 1  # @thread_busy
    out["wall"], out["cpu"] = time.perf_counter() - started, time.thread_time() - cpu


def thread_section():
    out = {}
    worker = threading.Thread(target=spin, args=(THREAD_N, out), name="busy-worker")
    with Timed("thread"):
        worker.start()
        worker.join()  # @join
    TIMES["thread_busy"] = out
    EXTRA_THREAD_SECONDS[0] += out["wall"]


def seventy(n):
    i = 0
    while i < n: i += 1  # @seventy
    return i


def thirty(n):
    i = 0
    while i < n: i += 1  # @thirty
    return i


def split_section(rounds=SPLIT_ROUNDS, name="split"):
    # Each function's own wall and CPU time too ("split.seventy", "split.thirty"): their walls
    # split 70/30 only on a machine whose load holds still over the section.
    parts = {f"{name}.{fn.__name__}": {"wall": 0.0, "cpu": 0.0} for fn in (seventy, thirty)}
    with Timed(name):
        for _ in range(rounds):
            for fn, units in ((seventy, 7), (thirty, 3)):
                wall, cpu = time.perf_counter(), time.thread_time()
                fn(units * SPLIT_UNIT)
                part = parts[f"{name}.{fn.__name__}"]
                part["wall"] += time.perf_counter() - wall
                part["cpu"] += time.thread_time() - cpu
    TIMES.update(parts)


def split_long_section():
    """The split three times over (~6 s): enough samples for a 70/30 check within 5 points."""
    split_section(3 * SPLIT_ROUNDS, "split_long")


SECTIONS = {"python": python_section, "sorted": sorted_section, "zlib": zlib_section,
            "sha256": sha256_section, "sleep": sleep_section, "pipe": pipe_section,
            "thread": thread_section, "split": split_section}
# Run only when asked for by name (not part of the default run of every section).
EXTRA_SECTIONS = {"split_long": split_long_section}


def main(names):
    known = {**SECTIONS, **EXTRA_SECTIONS}
    for name in names:
        if name not in known:
            raise SystemExit(f"run_cpu_split: no section {name!r} (have {', '.join(known)})")
    for name in names:
        known[name]()
    print(json.dumps({"sections": TIMES, "elapsed": time.perf_counter() - T0,
                      "extra_thread_seconds": EXTRA_THREAD_SECONDS[0],
                      "cpu_total": time.process_time()}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or list(SECTIONS))
