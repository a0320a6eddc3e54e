"""What the allocation-join targets (alloc_caches.py, alloc_buffers.py) share: the gate before
their work, for a recorder attached beforehand, and the lines their comments mark."""
import json
import os
import sys


def gate(argv):
    """With "gate" or "busygate" in argv: prints {"pid": PID} and waits for a line on stdin,
    the main thread blocked in a read ("gate") or running Python meanwhile ("busygate")."""
    if not {"gate", "busygate"} & set(argv):
        return
    print(json.dumps({"pid": os.getpid()}), flush=True)
    if "busygate" in argv:
        import select
        while not select.select([sys.stdin], [], [], 0)[0]:
            sum(range(2000))
    sys.stdin.readline()


def line_of(path, mark):
    """The number of the line of path that ends with the comment "# MARK"."""
    with open(path, encoding="utf-8") as f:
        for no, text in enumerate(f, 1):
            if text.rstrip().endswith("# " + mark):
                return no
    raise SystemExit(f"no line marked {mark}")
