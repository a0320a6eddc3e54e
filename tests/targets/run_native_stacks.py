"""Target for `scry run --stacks`: Python lines that call into native code, so that the
profile's combined stacks must show native frames right under them.

  zlib      zlib.compress of 4 MiB of random bytes, 10 times (~1.2 s): the extension module
            zlib.cpython-*.so, then libz's deflate
  numpy     a 400x400 float64 matrix product, repeated (~1 s): numpy's _multiarray_umath, then
            its BLAS; skipped (and said so on stdout) when numpy is not installed

Usage: run_native_stacks.py [section ...]   (default: zlib)
Prints one deterministic line per section (a checksum of the results), so that the tests can
compare the program's output with and without scry.
"""

import os
import random
import sys
import time
import zlib

ZLIB_BYTES, ZLIB_ROUNDS = 4 << 20, 10
MATMUL_N, MATMUL_CPU_SECONDS = 400, 1.0


def compress_all(buf, rounds):
    size = 0
    for _ in range(rounds):
        size += len(zlib.compress(buf, 6))  # @zlib
    return size


def zlib_section():
    buf = random.Random(7).randbytes(ZLIB_BYTES)
    print("zlib", compress_all(buf, ZLIB_ROUNDS), flush=True)


def multiply_all(a, cpu_seconds):
    """Matrix products until this thread has spent cpu_seconds on them: BLAS speed varies a lot
    between machines, and the test needs enough samples on the line."""
    b = a
    end = time.thread_time() + cpu_seconds
    while time.thread_time() < end:
        b = a @ a  # @matmul
    return b


def numpy_section():
    # BLAS worker threads are not Python threads: keep the work on this one, so that its CPU
    # samples (which carry the native stacks) see it.
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = "1"
    try:
        import numpy
    except ImportError:
        print("numpy: not installed", flush=True)
        return
    a = numpy.arange(MATMUL_N * MATMUL_N, dtype=numpy.float64).reshape(MATMUL_N, MATMUL_N)
    a = a / a.size
    b = multiply_all(a, MATMUL_CPU_SECONDS)
    print("numpy", round(float(b.trace()), 3), flush=True)


SECTIONS = {"zlib": zlib_section, "numpy": numpy_section}

if __name__ == "__main__":
    for name in sys.argv[1:] or ["zlib"]:
        SECTIONS[name]()
