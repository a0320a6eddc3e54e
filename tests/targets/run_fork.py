"""Target for `scry run`: os.fork(); the child does ~0.5 s of pure-Python work (the line
marked `@child_work`), prints and leaves with os._exit(0); the parent waits for it.
"""

import os
import sys

# ~0.4 s on pyenv's 3.11-3.13; Debian's 3.14/3.15 (optimised builds) run this loop ~1.7x faster,
# and the tests want as many samples from them.
WORK_N = 12_000_000 if sys.version_info < (3, 14) else 20_000_000


def child_work(n):
    i = 0
    while i < n: i += 1  # @child_work
    return i


def main():
    print("parent: forking", flush=True)
    pid = os.fork()
    if pid == 0:
        total = child_work(WORK_N)
        print(f"child: done {total}", flush=True)
        os._exit(0)
    _, status = os.waitpid(pid, 0)  # @wait
    print(f"parent: child exited with {os.waitstatus_to_exitcode(status)}", flush=True)
    print("parent: bye", file=sys.stderr)


if __name__ == "__main__":
    main()
