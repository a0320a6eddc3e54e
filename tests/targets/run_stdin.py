"""Target for `scry run`: reads all of stdin (bytes), does ~0.5 s of pure-Python work, then
writes each input line reversed and upper-cased, and the byte and line counts on stderr.
"""

import sys

WORK_N = 12_000_000 if sys.version_info < (3, 14) else 20_000_000  # 3.14+ builds run faster


def work(n):
    i = 0
    while i < n: i += 1  # @work
    return i


def main():
    data = sys.stdin.buffer.read()
    work(WORK_N)
    for line in data.splitlines():
        sys.stdout.buffer.write(line[::-1].upper() + b"\n")
    print(f"read {len(data)} bytes, {len(data.splitlines())} lines", file=sys.stderr)


if __name__ == "__main__":
    main()
