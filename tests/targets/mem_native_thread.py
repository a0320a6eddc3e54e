"""Ground-truth target for `scry run`: 64 MiB allocated with malloc by a raw pthread, a thread
with no Python frame at all (tests/targets/native_alloc_thread.c, built by the test into a
temporary directory), kept alive until exit. The ctypes call that starts the thread and joins
it is the line marked `@native_call`; the main thread itself allocates almost nothing there.

Usage: mem_native_thread.py path/to/native_alloc_thread.so [MiB]   (default 64)

Prints the checksum and exits with status 4 (a non-zero status to pass through).
"""

import ctypes
import sys


def main(lib_path, mib):
    lib = ctypes.CDLL(lib_path)
    lib.alloc_in_thread.restype = ctypes.c_int64
    lib.alloc_in_thread.argtypes = [ctypes.c_uint]
    checksum = lib.alloc_in_thread(mib)  # @native_call
    if checksum < 0:
        raise SystemExit("mem_native_thread: the native thread failed")
    print(f"native thread: {mib} MiB, checksum {checksum}", flush=True)
    return 4


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 64))
