"""A small service loop whose memory `scry run` explains line by line: a per-request buffer that
comes and goes (allocated, freed, no growth), a cache that keeps a slice of every request (the
leak: it grows until the end and is reported as a likely leak), copies made by slicing, and a
buffer from C's malloc (native memory, outside Python's allocator)."""

import ctypes
import time

MB = 1 << 20
CACHE = []


def handle(request):
    payload = bytearray(4 * MB)  # allocated and freed on every request: no growth
    CACHE.append(bytes(payload[:MB]))  # keeps 1 MB per request: this line leaks
    return len(payload) + request


def native_buffer():
    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    return libc.malloc(64 * MB)  # native: allocated by C, not by Python's allocator


def main():
    buffer = native_buffer()
    total = 0
    for request in range(150):
        total += handle(request)
        time.sleep(0.01)  # waiting for the next request
    print(f"served 150 requests ({total} bytes), cache holds {len(CACHE)} MB, "
          f"native buffer {'ok' if buffer else 'missing'}")


if __name__ == "__main__":
    main()
