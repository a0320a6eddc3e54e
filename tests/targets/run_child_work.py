"""Target for `scry run`: ~0.6 s of pure-Python work (the line marked `@child_work`), then a
line on stdout and one on stderr. Run as a program, as a module (-m run_child_work) and as the child of
tests/targets/run_subprocess.py.

Usage: run_child_work.py [millions of iterations, default 24; 48 on 3.14+, whose optimised
Debian builds run the loop ~1.7x faster: the tests want at least 20 samples of it, and a loaded
machine's CPU timers (checked at the kernel's ticks) deliver fewer samples than the CPU time
holds: half of it gave 17-19 in a full run beside a busy loop]
"""

import sys


def child_work(n):
    i = 0
    while i < n: i += 1  # @child_work
    return i


def main(argv):
    millions = int(argv[0]) if argv else 24 if sys.version_info < (3, 14) else 48
    total = child_work(millions * 1_000_000)
    print(f"child_work: {total}")
    print(f"child_work: stderr {millions}", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])
