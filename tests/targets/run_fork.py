"""Target for `scry run`: os.fork(); the child does 0.6 s of pure-Python work (by its CPU
clock, the line marked `@child_work`), prints and leaves with os._exit(0); the parent waits for it.
"""

import os
import sys
import time

# A CPU time, not a count: the tests want 20 samples of the line whatever the interpreter's speed
# (a fixed count ran 0.3 s on one machine, ~21 samples), and the output must not depend on it.
WORK_S = 0.6


def child_work(seconds):
    end, i = time.thread_time() + seconds, 0
    while time.thread_time() < end:
        n = i + 100_000
        while i < n: i += 1  # @child_work
    return i


def main():
    print("parent: forking", flush=True)
    pid = os.fork()
    if pid == 0:
        child_work(WORK_S)
        print("child: done", flush=True)
        os._exit(0)
    _, status = os.waitpid(pid, 0)  # @wait
    print(f"parent: child exited with {os.waitstatus_to_exitcode(status)}", flush=True)
    print("parent: bye", file=sys.stderr)


if __name__ == "__main__":
    main()
