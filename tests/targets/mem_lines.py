"""Ground-truth target for `scry run`'s memory profile: lines whose allocations are known.

  keep200   a list comprehension keeps 200 bytearrays of 1 MiB alive: 200 MiB allocated through
            Python's allocator, all of it still held at the end (growth and peak 200 MiB)
  churn1g   a generator expression allocates and drops 100 bytearrays of 10 MiB, one alive at a
            time: 1000 MiB allocated and freed, growth 0, peak 10 MiB
  numpy     8 numpy arrays of 25 MiB kept (np.ones): 200 MiB of native memory (numpy's data
            allocator calls malloc, not Python's allocator); skipped when numpy is absent
  ctypes    libc's malloc called directly through ctypes for 100 MiB, kept: native
  small     a list of 2,000,000 distinct short strs: many small objects from Python's allocator,
            and nothing else on the line
  copy500   50 copies of a 10 MiB bytearray into another (slice assignment, a memcpy in C):
            500 MiB copied; the buffers themselves are made on other lines

Each measured line carries an `@name` marker comment (tests/targets/groundtruth.py reads them).
Whatever a section allocates stays alive until the program ends (except churn1g's buffers and
the copy's), so the sections' numbers do not depend on their order.

Usage: mem_lines.py [section ...]   (default: every section, in the order above)

Prints one deterministic line per section, then a JSON line {"sections": [...], "numpy": bool,
"small_bytes": [low, high]} (small_bytes: only with the small section; see small()).
"""

import json
import sys

MB = 1 << 20
KEPT = []  # what the sections keep alive until exit
TRUTH = {}  # ground truth measured by the sections themselves


def keep200():
    keep = [bytearray(MB) for _ in range(200)]  # @keep200
    KEPT.append(keep)
    return f"keep200: {len(keep)} buffers of {len(keep[0])} bytes"


def churn1g():
    total = sum(len(bytearray(10 * MB)) for _ in range(100))  # @churn1g
    return f"churn1g: {total} bytes allocated and freed"


def numpy_section():
    try:
        import numpy as np  # @numpy_import
    except ImportError:
        return "numpy: absent"
    arrays = [np.ones(25 * MB // 8) for _ in range(8)]  # @numpy
    KEPT.append(arrays)
    return f"numpy: {len(arrays)} arrays, sum {sum(int(a.sum()) for a in arrays)}"


def ctypes_section():
    import ctypes
    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    libc.malloc.argtypes = [ctypes.c_size_t]
    libc.memset.restype = ctypes.c_void_p
    libc.memset.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]
    block = libc.malloc(100 * MB)  # @ctypes
    if not block:
        raise SystemExit("mem_lines: malloc(100 MiB) failed")
    libc.memset(block, 1, 100 * MB)
    KEPT.append(block)  # never freed
    last = ctypes.c_ubyte.from_address(block + 100 * MB - 1).value
    return f"ctypes: 100 MiB from malloc, last byte {last}"


def small():
    # 2000 x 1000 concatenations: each makes one new str and nothing else (str(i) of a range
    # would make each int, and a scratch int, as temporaries: allocated on the line too).
    heads, tails = [f"h{i:04d}" for i in range(2000)], [f"{i:03d}" for i in range(1000)]
    strs = [h + t for h in heads for t in tails]  # @small
    KEPT.append(strs)
    # What the line allocated: the objects' own sizes (what tracemalloc counts), and the same
    # rounded up to pymalloc's 16-byte size classes (what its arenas hold). Not printed: the
    # sizes differ between versions, and stdout is compared with a plain run of the same one.
    sizes = [sys.getsizeof(s) for s in strs]
    TRUTH["small_bytes"] = [sum(sizes) + sys.getsizeof(strs),
                            sum((n + 15) & ~15 for n in sizes) + sys.getsizeof(strs)]
    return f"small: {len(strs)} strs, last {strs[-1]}"


def copy500():
    src = bytearray(range(256)) * (10 * MB // 256)
    dst = bytearray(10 * MB)
    for _ in range(50): dst[:] = src  # @copy500
    KEPT.append(dst)
    return f"copy500: 50 copies of {len(src)} bytes, equal {dst == src}"


SECTIONS = {"keep200": keep200, "churn1g": churn1g, "numpy": numpy_section,
            "ctypes": ctypes_section, "small": small, "copy500": copy500}


def main(names):
    for name in names:
        if name not in SECTIONS:
            raise SystemExit(f"mem_lines: no section {name!r} (have {', '.join(SECTIONS)})")
    has_numpy = True
    for name in names:
        line = SECTIONS[name]()
        has_numpy = has_numpy and line != "numpy: absent"
        print(line, flush=True)
    print(json.dumps({"sections": names, "numpy": has_numpy, **TRUTH}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or list(SECTIONS))
