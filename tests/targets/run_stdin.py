"""Target for `scry run`: reads all of stdin (bytes), does 0.6 s of pure-Python work (by the
thread's CPU clock), then writes each input line reversed and upper-cased, and the byte and line
counts on stderr.
"""

import sys
import time

# The work runs for a CPU time, not a count: a fixed count took 0.3 s on one machine and gave 19
# samples where the test wants 20, in a full run beside a busy loop. 0.6 s of CPU is ~60 samples
# whatever the interpreter's speed, and the output does not depend on it.
WORK_S = 0.6


def work(seconds):
    end, i = time.thread_time() + seconds, 0
    while time.thread_time() < end:
        n = i + 100_000
        while i < n: i += 1  # @work
    return i


def main():
    data = sys.stdin.buffer.read()
    work(WORK_S)
    for line in data.splitlines():
        sys.stdout.buffer.write(line[::-1].upper() + b"\n")
    print(f"read {len(data)} bytes, {len(data.splitlines())} lines", file=sys.stderr)


if __name__ == "__main__":
    main()
