"""Caches of Python's small objects (512 bytes or less: pymalloc's, which never calls malloc),
for the arenas of `record --allocations` (tests/e2e/test_record_allocations.py,
docs/allocations.md, "Arenas"): from outside only malloc's blocks are sampled, and these objects
are credited to the line that made the arena they lie in.

LINE_A fills CACHE_A, a dict of new ints to (int, float) tuples; LINE_B fills CACHE_B, a list of
strings built at run time; LINE_C then makes and drops small tuples (nothing kept). The target
prints one JSON line: the line numbers, and per cache the truth, the sum of sys.getsizeof of the
cache and of every object its line made (the keys, tuples and their items; the strings). Modes
as alloc_caches.py: "gate" or "busygate" print {"pid": PID} and wait for a line on stdin before
anything is filled; "wait" waits for a line on stdin after the JSON line.

    python alloc_small.py [gate|busygate] [wait]
"""
import json
import os
import sys

from alloc_gate import gate, line_of

N_A, N_B = 150_000, 200_000
CACHE_A = {}
CACHE_B = []


def fill_a():
    for i in range(N_A):
        CACHE_A[10**6 + i] = (3 * i + 10**7, i / 7)  # LINE_A


def fill_b():
    for i in range(N_B):
        CACHE_B.append(f"item-{i:08d}-" + "x" * (i % 40))  # LINE_B


def churn():
    kept = 0
    for i in range(400_000):
        t = (i + 10**7, str(i))  # LINE_C
        kept += len(t)
    return kept


gate(sys.argv[1:])
fill_a()
fill_b()
churn()
size = sys.getsizeof
truth_a = size(CACHE_A) + sum(size(k) + size(v) + size(v[0]) + size(v[1])
                              for k, v in CACHE_A.items())
truth_b = size(CACHE_B) + sum(size(s) for s in CACHE_B)
print(json.dumps({
    "pid": os.getpid(),
    "file": os.path.abspath(__file__),
    "lines": {name: line_of(__file__, "LINE_" + name) for name in "ABC"},
    "bytes": {"A": truth_a, "B": truth_b},
}), flush=True)
if "wait" in sys.argv[1:]:
    sys.stdin.readline()
