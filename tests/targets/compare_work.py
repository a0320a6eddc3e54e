"""Target for `scry compare`: two functions of equal pure-Python work, steady() and tuned().

Usage: compare_work.py [FACTOR]   tuned() does FACTOR times its base work (default 1.0), so
FACTOR 1.3 makes it 30% slower and leaves steady() as it was. Each base amount is UNITS rounds
of a loop of N iterations; both run interleaved, so load on the machine hits both alike.
"""

import sys

N = 100_000
UNITS = 300  # ~1.5 s of CPU per function on the machine the sizes were chosen on


def steady(n):
    s = 0
    for i in range(n):
        s += i * i
    return s


def tuned(n):
    s = 0
    for i in range(n):
        s += i * i
    return s


def main():
    factor = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
    total = 0
    for _ in range(UNITS):
        total += steady(N)
        total += tuned(int(N * factor))
    print(total % 7)


main()
