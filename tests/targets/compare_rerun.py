"""Target for identical reruns under `scry compare --fail-above` (issue 27, item 5): short
programs whose hot line is shared by a function and the generator expression it calls, so that
the line's samples are taken sometimes in steady()'s frame and sometimes in the genexpr's.

  memory  steady() builds lists of ints from a generator expression, 40 rounds of 50,000: the
          ints are made in the genexpr's frame, the list's item array grows in steady()'s (the
          genexpr is suspended then); ~200 MB allocated on 3.11-3.13 (78 MB on 3.14+, whose ints
          come from a free list), nothing kept
  cpu     steady() sums squares from a generator expression (the time goes to the genexpr's
          frame and to sum() under steady()'s), and plain() runs a plain loop

Each takes about 0.3-0.5 s. The line shared with the genexpr carries an `@shared` marker.

Usage: compare_rerun.py memory|cpu
Prints one deterministic line and exits with status 0.
"""

import sys


def steady_memory(rounds):
    kept = 0
    for r in range(rounds):
        items = list(i * 1000 + r for i in range(50_000))  # @shared_memory
        kept += len(items)
    return kept


def steady_cpu(n):
    return sum(i * i for i in range(n))  # @shared_cpu


def plain(n):
    s = 0
    for i in range(n):
        s += i
    return s


def main():
    mode = sys.argv[1] if len(sys.argv) == 2 else ""
    if mode == "memory":
        print(f"memory: {steady_memory(40)} items")
    elif mode == "cpu":
        print(f"cpu: {(steady_cpu(2_500_000) + plain(1_000_000)) % 1000}")
    else:
        raise SystemExit("usage: compare_rerun.py memory|cpu")


if __name__ == "__main__":
    main()
