"""Target for tests/e2e/test_mcp.py's profiles: hot() does 4 times the work of cold(), in one
line each, so a profile's hottest line is hot()'s loop line (HOT_LINE, marked below) with about
80% of the time. Usage: mcp_work.py [FACTOR]: hot() does FACTOR times its base work (default
1), so two profiles with FACTOR 1 and 2 differ in hot() only. About 1 s of CPU at FACTOR 1 (32
rounds: 8 took 0.23 s, ~22 samples, and cold()'s line got a third of them once in a CI run: the
tests compare the two lines' shares, which needs ~100 samples to stand clear of chance)."""

import sys

N = 400_000


def hot(n):
    return sum(i * i for i in range(n))  # HOT_LINE: n < 10**7 & > 0


def cold(n):
    return sum(i * i for i in range(n))  # COLD_LINE


def main():
    factor = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
    total = 0
    for _ in range(32):
        total += hot(int(N * factor))
        total += cold(N // 4)
    print(total % 7)


if __name__ == "__main__":
    main()
