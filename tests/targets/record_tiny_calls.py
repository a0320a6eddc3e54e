"""Ground-truth target for `scry record --pid`'s lines: samples that land at frame starts.

Millions of calls of tiny functions (a closure with a free variable, a function with a cell,
a generator, a plain function), so that many samples find a frame on its first instructions:
COPY_FREE_VARS, MAKE_CELL, RETURN_GENERATOR, POP_TOP, RESUME, or (3.11) before the first one.
A loop whose body ends with an `if` closes with a JUMP_BACKWARD that 3.11 gives no location.
Every line of code here has a number; a sample on line 0 is a line resolved wrongly.

Usage: record_tiny_calls.py SECONDS STOP_FILE
Prints {"pid": PID} and a newline once running, then runs until SECONDS have passed or
STOP_FILE exists, then prints {"calls": N} and exits with status 0.
"""

import json
import os
import sys
import time


def make_closure():
    k = 1

    def closure(x):
        return x + k
    return closure


def with_cell(x):
    c = x
    return (lambda: c)()


def gen(x):
    yield x


def plain(x):
    return x


def main():
    seconds, stop = float(sys.argv[1]), sys.argv[2]
    closure = make_closure()
    print(json.dumps({"pid": os.getpid()}), flush=True)
    end = time.monotonic() + seconds
    calls = 0
    while time.monotonic() < end and not os.path.exists(stop):
        for i in range(2000):
            plain(i)
            closure(i)
            with_cell(i)
            for _ in gen(i):
                pass
            if i & 1:  # 3.11: the loop's closing jump after an `if` has no location
                calls += 8
    print(json.dumps({"calls": calls}), flush=True)


if __name__ == "__main__":
    main()
