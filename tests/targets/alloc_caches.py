"""Two caches filled by two different lines and a churn on a third, for the allocation join
(tests/e2e/test_alloc_join.py, docs/allocations.md).

CACHE_A (a dict) is filled by the line marked LINE_A, CACHE_B (a list) by LINE_B, with bytes
objects of varied sizes whose contents are random (nothing folded into a constant or shared);
LINE_C allocates and frees CHURN_MB in a loop. The target prints one JSON line: the line numbers
and the truth, the sum of sys.getsizeof of each cache's elements. With "wait" it then waits for a
line on stdin before it ends (for `scry dump --pid`); without it, it ends at once (for
`scry run --heap-at-exit`). With "gate" it first prints {"pid": PID} and waits for a line on
stdin before it fills anything (for `scry record --pid --memory` or `--allocations` attached
beforehand); with "busygate" the same, its main thread running Python meanwhile (polling stdin)
instead of blocking in a read.

    python alloc_caches.py [gate|busygate] [wait] [A_MB B_MB CHURN_MB]
"""
import json
import os
import random
import sys

from alloc_gate import gate, line_of

args = [a for a in sys.argv[1:] if a not in ("wait", "gate", "busygate")]
A_MB, B_MB, CHURN_MB = (int(x) for x in args) if args else (60, 30, 200)
rng = random.Random(15)
CACHE_A = {}
CACHE_B = []


def sizes(total):
    """Sizes from 1 KB to 200 KB summing to about total bytes (some below, some above any window
    the test uses)."""
    out, left = [], total
    while left > 0:
        n = min(rng.randint(1_000, 200_000), left)
        out.append(n)
        left -= n
    return out


def fill_a():
    for i, n in enumerate(sizes(A_MB << 20)):
        CACHE_A[i] = os.urandom(n)  # LINE_A


def fill_b():
    for n in sizes(B_MB << 20):
        CACHE_B.append(os.urandom(n))  # LINE_B


def churn():
    for _ in range(CHURN_MB):
        tmp = os.urandom(1 << 20)  # LINE_C
        del tmp


gate(sys.argv[1:])
fill_a()
churn()
fill_b()
print(json.dumps({
    "pid": os.getpid(),
    "file": os.path.abspath(__file__),
    **{f"line_{k}": line_of(__file__, f"LINE_{k.upper()}") for k in "abc"},
    "bytes_a": sum(sys.getsizeof(v) for v in CACHE_A.values()),
    "bytes_b": sum(sys.getsizeof(v) for v in CACHE_B),
}), flush=True)
if "wait" in sys.argv[1:]:
    sys.stdin.readline()
