"""Ground truth for `scry record --pid`: a program started without scry whose one thread spends
its time in cycles of about 220 ms, 55% on a pure-Python line (marked python), 27% on a native
line (marked native: zlib.compress, a call into C) and 18% asleep (marked sleep).

argv[1]: seconds to run (default 6); argv[2], optional: a file whose existence ends the run early.
Prints {"ready": true, "pid": N, "lines": {marker: line}} once calibrated, works, then prints
{"done": true, "python_cpu": s, "native_cpu": s, "python_wall": s, "native_wall": s,
"sleep_wall": s, "wall": s, "cycles": n}: the thread's CPU time (time.thread_time) and the wall
time (time.perf_counter) on the Python and native lines and the wall time of the sleeps, measured
by the program itself, and exits 0. SIGTERM ends it early the same way. On a busy machine the
wall times include the waits for a CPU, which the CPU times do not.
"""

import json
import os
import signal
import sys
import time
import zlib

from groundtruth import marker_lines

# Compressible but not trivial: about a millisecond of zlib per call.
BLOB = b"".join(b"%d scry record %d\n" % (i, i * i % 9973) for i in range(40000))
STOP = False


def on_term(signum, frame):
    global STOP
    STOP = True


def python_part(n):
    total = 0
    for i in range(n): total = (total + i * i) & 0xFFFF  # @python
    return total


def native_part(k):
    for _ in range(k): zlib.compress(BLOB, 6)  # @native


def sleep_part():
    time.sleep(0.04)  # @sleep


def calibrate():
    """Iterations of python_part for 120 ms of CPU and calls of native_part for 60 ms (the
    40 ms sleep: the wait for a CPU after the thread wakes up, which counts as the native time of
    the call on a busy machine, is a few ms; a 20 ms sleep left the line 84% system under a
    loaded CI run)."""
    t = time.thread_time()
    python_part(200000)
    per_py = (time.thread_time() - t) / 200000
    t = time.thread_time()
    native_part(5)
    per_native = (time.thread_time() - t) / 5
    return max(1, int(0.120 / per_py)), max(1, round(0.060 / per_native))


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 6.0
    stop_file = sys.argv[2] if len(sys.argv) > 2 else None
    signal.signal(signal.SIGTERM, on_term)
    n, k = calibrate()
    markers = {name: lines[0] for name, lines in marker_lines(__file__).items()}
    print(json.dumps({"ready": True, "pid": os.getpid(), "lines": markers, "n": n, "k": k}),
          flush=True)
    python_cpu = native_cpu = python_wall = native_wall = sleep_wall = 0.0
    cycles = 0
    start = time.perf_counter()
    end = start + seconds
    while not STOP and time.perf_counter() < end:
        if stop_file and os.path.exists(stop_file):
            break
        w0, t0 = time.perf_counter(), time.thread_time()
        python_part(n)
        w1, t1 = time.perf_counter(), time.thread_time()
        native_part(k)
        w2, t2 = time.perf_counter(), time.thread_time()
        sleep_part()
        sleep_wall += time.perf_counter() - w2
        python_cpu += t1 - t0
        native_cpu += t2 - t1
        python_wall += w1 - w0
        native_wall += w2 - w1
        cycles += 1
    print(json.dumps({"done": True, "python_cpu": python_cpu, "native_cpu": native_cpu,
                      "python_wall": python_wall, "native_wall": native_wall, "sleep_wall": sleep_wall, "wall": time.perf_counter() - start,
                      "cycles": cycles}), flush=True)


if __name__ == "__main__":
    main()
