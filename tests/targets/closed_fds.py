"""A program started with some of fds 0-2 closed (issue 11, item 5). Writes what it sees to the
file named by argv[1], as JSON: which of sys.stdin/stdout/stderr are None (the interpreter makes
them None when their descriptor is closed at start), and every descriptor it has, with what it
refers to and whether it is inheritable. Then it prints to its stdout and stderr, which plain
Python does silently when they are None, and spends some CPU time so that the agent samples."""
import json
import os
import sys
import time


def descriptors():
    out = {}
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        try:
            out[fd] = [os.readlink(f"/proc/self/fd/{fd}"), os.get_inheritable(fd)]
        except OSError:
            pass  # the listing's own descriptor, closed by now
    return out


def spin(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


spin(0.2)
seen = {"none": [sys.stdin is None, sys.stdout is None, sys.stderr is None],
        "fds": descriptors()}
with open(sys.argv[1], "w") as f:
    json.dump(seen, f)
print("to stdout")
print("to stderr", file=sys.stderr)
spin(0.1)
