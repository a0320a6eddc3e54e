"""Ground truth for the native time of operators from outside (`scry record --pid`, `scry top`):
a program started without scry whose one thread goes round three parts of about equal CPU time:
numpy's matrix product through the `@` operator (marked matmul: the work is numpy's C code,
run by the eval loop's BINARY_OP with no call on the stack), a pure-Python integer loop (marked
intadd: `x = x + 1`, BINARY_OP_ADD_INT, the eval loop's own work) and a class whose `@` is a
Python method (marked pymatmul on the `@` line, pybody on the method's loop): Python time. The
method's loop holds most of that part's time, so that `scry top` has a row for the method in
any 2 s (with a one-line body, most of a Python `@` was the call through the slot, and the
method was missing from a loaded machine's screen at times).

argv[1]: seconds to run (default 60); argv[2], optional: a file whose existence ends the run.
Prints {"ready": true, "pid": N, "lines": {marker: line}} once calibrated, then works. Run with
OPENBLAS_NUM_THREADS=1 (and OMP_NUM_THREADS=1) so that the product runs on this thread.
"""

import json
import os
import sys
import time

import numpy as np

from groundtruth import marker_lines


class Vec:
    def __init__(self, n):
        self.n = n

    def __matmul__(self, other):
        s = self.n
        for _ in range(24):
            s = s + other.n  # @pybody
        return s


def matmul_part(a, b, k):
    for _ in range(k):
        c = a @ b  # @matmul
    return c


def intadd_part(n):
    x = 0
    for _ in range(n):
        x = x + 1  # @intadd
    return x


def pymatmul_part(p, q, k):
    for _ in range(k):
        r = p @ q  # @pymatmul
    return r


def per_call(fn, *args):
    t = time.thread_time()
    fn(*args)
    return max(time.thread_time() - t, 1e-6)


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 60.0
    stop_file = sys.argv[2] if len(sys.argv) > 2 else None
    a = np.random.default_rng(1).random((160, 160))
    b = np.random.default_rng(2).random((160, 160))
    p, q = Vec(2), Vec(1)
    # About 60 ms of CPU per part and cycle.
    k = max(1, int(0.060 / (per_call(matmul_part, a, b, 20) / 20)))
    n = max(1, int(0.060 / (per_call(intadd_part, 200000) / 200000)))
    per_call(pymatmul_part, p, q, 20000)  # warm: the first calls are slower
    j = max(1, int(0.060 / (per_call(pymatmul_part, p, q, 200000) / 200000)))
    markers = {name: lines[0] for name, lines in marker_lines(__file__).items()}
    print(json.dumps({"ready": True, "pid": os.getpid(), "lines": markers}), flush=True)
    end = time.monotonic() + seconds
    while time.monotonic() < end and not (stop_file and os.path.exists(stop_file)):
        matmul_part(a, b, k)
        intadd_part(n)
        pymatmul_part(p, q, j)


if __name__ == "__main__":
    main()
