"""Target for `scry run`'s memory profile across processes.

  fork    the parent keeps 20 MiB (`@parent_alloc`), forks; the child keeps 40 MiB more
          (`@fork_child_alloc`), prints and leaves with os._exit(7); the parent waits, prints
          the child's status and exits with status 3
  spawn   two multiprocessing children (start method spawn) each keep 30 MiB
          (`@spawn_child_alloc`) and exit with status 10 + their index; the parent prints their
          statuses and exits with status 0

Output is deterministic (the parent prints only after its children ended).

Usage: mem_children.py fork|spawn
"""

import multiprocessing
import os
import sys

MB = 1 << 20
KEPT = []


def spawn_child(index):
    KEPT.append([bytearray(MB) for _ in range(30)])  # @spawn_child_alloc
    sys.exit(10 + index)


def fork_main():
    parent = [bytearray(MB) for _ in range(20)]  # @parent_alloc
    print("parent: forking", flush=True)
    pid = os.fork()
    if pid == 0:
        kept = [bytearray(MB) for _ in range(40)]  # @fork_child_alloc
        print(f"child: {len(kept)} MiB", flush=True)
        os._exit(7)
    _, status = os.waitpid(pid, 0)
    print(f"parent: {len(parent)} MiB, child exited with {os.waitstatus_to_exitcode(status)}",
          flush=True)
    return 3


def spawn_main():
    ctx = multiprocessing.get_context("spawn")
    children = [ctx.Process(target=spawn_child, args=(i,)) for i in range(2)]
    for child in children:
        child.start()
    for child in children:
        child.join()
    print(f"spawn: children exited with {[child.exitcode for child in children]}", flush=True)
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in ("fork", "spawn"):
        raise SystemExit("usage: mem_children.py fork|spawn")
    sys.exit(fork_main() if sys.argv[1] == "fork" else spawn_main())
