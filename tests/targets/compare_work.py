"""Target for `scry compare`: two functions of the same pure-Python loop, steady() (60% of the
work) and tuned() (40%).

Usage: compare_work.py [FACTOR]   tuned() does FACTOR times its base work (default 1.0), so
FACTOR 1.3 makes it 30% slower and leaves steady() as it was. They run interleaved, UNITS
rounds of N × 1.5 and N iterations, so load on the machine hits both alike (what
`scry compare --normalize` relies on). The sizes give ~14 s of CPU on a loaded 2-core machine:
at the ~200 samples per CPU second that the kernel's 250 Hz tick allows, enough samples that a
30% change is about 4.7 standard errors of the sampling (the change of tuned() relative to
steady(): four Poisson counts of ~1000-1500 samples).
"""

import sys

N = 100_000
UNITS = 700


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
        total += steady(N * 3 // 2)
        total += tuned(int(N * factor))
    print(total % 7)


main()
