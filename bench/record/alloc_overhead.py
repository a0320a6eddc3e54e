"""Slowdown of a running Python process while `scry record --pid PID --allocations` probes its
C library's allocator with eBPF (docs/allocations.md; results in docs/PERFORMANCE.md). Timing
belongs here, never in tests.

The target (started plainly) waits for a line on stdin, then times three loops and prints their
seconds as JSON: `large` allocates and drops 200,000 bytes objects of 1-200 KB (each one a call
of malloc and free: the probed path), `small` 3,000,000 small tuples and strings (Python's own
allocator: no probe is hit), `mixed` appends 2,000,000 ints to lists (their buffers grow by
realloc), `grow` builds and drops three times a list of 1,000,000 small tuples (about 90 new
1 MiB arenas each time: the mmap probe and its stack, once per arena). Each round runs the target without, then with, the recorder (the order alternates),
and the medians are compared.

    python3 bench/record/alloc_overhead.py [--python PY] [--rounds N] [--scry build/scry]
"""
import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time

TARGET = r'''
import json, os, sys, time
print("ready", flush=True)
sys.stdin.readline()
out = {}
t = time.perf_counter()
sizes = [1000 + (i * 7919) % 199000 for i in range(1000)]
for i in range(200_000):
    b = bytes(sizes[i % 1000])
    del b
out["large"] = time.perf_counter() - t
t = time.perf_counter()
for i in range(3_000_000):
    x = (i, str(i))
out["small"] = time.perf_counter() - t
t = time.perf_counter()
for j in range(20):
    l = []
    for i in range(100_000):
        l.append(i)
out["mixed"] = time.perf_counter() - t
t = time.perf_counter()
for j in range(3):
    kept = [(i, float(i)) for i in range(1_000_000)]
    del kept
out["grow"] = time.perf_counter() - t
print(json.dumps(out), flush=True)
'''


def one(python, scry, probed, tmp):
    p = subprocess.Popen([python, "-c", TARGET], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         text=True)
    p.stdout.readline()
    rec = None
    if probed:
        rec = subprocess.Popen([scry, "record", "--pid", str(p.pid), "--allocations", "--dump",
                                os.path.join(tmp, "bench.heap")],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                               env=dict(os.environ, SCRY_LOG="info"))
        while "recording the allocations" not in rec.stderr.readline():
            if rec.poll() is not None:
                sys.exit("the recorder did not start")
    p.stdin.write("\n")
    p.stdin.flush()
    res = json.loads(p.stdout.readline())
    if rec:
        rec.send_signal(signal.SIGINT)
        rec.wait()
    p.stdin.close()
    p.wait()
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--scry", default="build/scry")
    a = ap.parse_args()
    tmp = f"/tmp/scry-alloc-bench-{os.getpid()}"
    os.makedirs(tmp, exist_ok=True)
    runs = {False: [], True: []}
    for r in range(a.rounds):
        for probed in ((False, True) if r % 2 == 0 else (True, False)):
            runs[probed].append(one(a.python, a.scry, probed, tmp))
    print(f"python {a.python}, {a.rounds} rounds, medians (s):")
    for loop in ("large", "small", "mixed", "grow"):
        base = statistics.median(x[loop] for x in runs[False])
        prob = statistics.median(x[loop] for x in runs[True])
        print(f"  {loop:6s} without {base:.3f}  with the probes {prob:.3f}  slowdown "
              f"{prob / base:.2f}")


if __name__ == "__main__":
    main()
