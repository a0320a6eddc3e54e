"""Target for `scry run`: loops whose lines call small Python functions (no C call anywhere on
them): the time of those lines, frame set-up and return included, is Python time. Each section
runs for 1 s of its thread's CPU time (argv: those seconds, default 1.0), however loaded the
machine; the last line of stdout is the ground truth as JSON (per section its wall and CPU
seconds).

  plain     n += f(n)                  a plain function (CALL_PY_EXACT_ARGS once specialised)
  defaults  n += g(n)                  a function with a default argument (CALL_PY_WITH_DEFAULTS)
  method    n += obj.m(n)              a method of a Python class (bound-method calls)
  keywords  n += h(n, k=1)             a keyword argument (no specialisation on 3.11 and 3.12)
  varargs   n += v(n, 1, 2)            a function taking *args (CALL_PY_GENERAL on 3.13)
  init      n += P(n).x                a class with a Python __init__ (CALL_ALLOC_AND_ENTER_INIT)
"""

import json
import sys
import time

TRUTH = {}


def f(x):
    return x & 1


def g(x, y=1):
    return x & y


def h(x, k=0):
    return x & k


def v(x, *rest):
    return x & 1


class Obj:
    def m(self, x):
        return x & 1


class P:
    def __init__(self, x):
        self.x = x & 1


def plain(rounds):
    n = 0
    for i in range(rounds):
        n += f(i)  # @plain
    return n


def defaults(rounds):
    n = 0
    for i in range(rounds):
        n += g(i)  # @defaults
    return n


def method(rounds):
    n = 0
    obj = Obj()
    for i in range(rounds):
        n += obj.m(i)  # @method
    return n


def keywords(rounds):
    n = 0
    for i in range(rounds):
        n += h(i, k=1)  # @keywords
    return n


def varargs(rounds):
    n = 0
    for i in range(rounds):
        n += v(i, 1, 2)  # @varargs
    return n


def init(rounds):
    n = 0
    for i in range(rounds):
        n += P(i).x  # @init
    return n


SECTIONS = {"plain": plain, "defaults": defaults, "method": method, "keywords": keywords,
            "varargs": varargs, "init": init}


CHUNK = 20_000  # rounds between two looks at the clock: ~1-3 ms of work


def main(scale):
    # Each section runs until its thread has had `scale` seconds of CPU time. A count of rounds
    # from a probe of ~1 ms was at the mercy of that millisecond (a switch and cold caches on a
    # loaded machine): in a loaded full run the plain line got 46 samples where ~100 are usual.
    for name, func in SECTIONS.items():
        func(CHUNK)  # warm up: the interpreter specialises the call on its first runs
        w0, c0 = time.perf_counter(), time.thread_time()
        while time.thread_time() - c0 < scale:
            func(CHUNK)
        TRUTH[name] = {"wall": time.perf_counter() - w0, "cpu": time.thread_time() - c0}
    print(json.dumps({"sections": TRUTH}), flush=True)


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 1.0)
