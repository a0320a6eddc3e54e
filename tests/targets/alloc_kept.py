"""Issue 27 item 11's programs at their own size, for the allocation join with the default window
(tests/e2e/test_alloc_join.py, tests/tools/alloc_join_bias.py, docs/allocations.md).

- "dict": 2,000 bytearray(os.urandom(16)) * 4096 kept in a dict (131 MB), by LINE_DICT.
- "list": 1,000 bytes(96 * 1024) kept in a list (98 MB), by LINE_LIST.
- "threads": the dict's 2,000 bytearrays made by 2 threads (1,000 each, into one dict), by
  LINE_THREADS.

Prints one JSON line: the marked line and the truth, the bytes the program keeps, known by
construction: sys.getsizeof of the holder plus that of each element (exact: the elements are
all alive and distinct; the holder's own table is the holder's retained size too).

    python alloc_kept.py dict|list|threads [COUNT]
"""
import json
import os
import sys
import threading

from alloc_gate import line_of

MODE = sys.argv[1]
COUNT = int(sys.argv[2]) if len(sys.argv) > 2 else (1000 if MODE == "list" else 2000)
KEEP = {}
LST = []


def fill_dict(lo, hi):
    for i in range(lo, hi):
        KEEP[i] = bytearray(os.urandom(16)) * 4096  # LINE_DICT


def fill_threads(lo, hi):
    for i in range(lo, hi):
        KEEP[i] = bytearray(os.urandom(16)) * 4096  # LINE_THREADS


def fill_list(n):
    for _ in range(n):
        LST.append(bytes(96 * 1024))  # LINE_LIST


if MODE == "dict":
    fill_dict(0, COUNT)
elif MODE == "list":
    fill_list(COUNT)
else:
    half = COUNT // 2
    threads = [threading.Thread(target=fill_threads, args=(0, half)),
               threading.Thread(target=fill_threads, args=(half, COUNT))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
HOLDER = LST if MODE == "list" else KEEP
print(json.dumps({
    "file": os.path.abspath(__file__),
    "line": line_of(__file__, "LINE_" + MODE.upper()),
    "bytes": sys.getsizeof(HOLDER) + sum(map(sys.getsizeof, LST or KEEP.values())),
}), flush=True)
