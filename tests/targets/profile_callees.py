"""Target for @profile with undecorated callees (issue 27 item 4). Modes (argv[1]):
  calling     decorated calling() loops 0.5 s of CPU itself, then `return s + helper(n)`
              spends 0.5 s in the undecorated helper(): the calling line's truth is the helper's
              share of calling()'s time
  all_in      decorated all_in() does nothing but call the undecorated helper() (0.8 s)
  caller      undecorated caller() loops 0.5 s itself, then calls the decorated inner(), which
              loops 0.2 s and calls helper() for 0.4 s: only inner()'s lines are the profile's
  memory      decorated keep() calls the undecorated grow(), which keeps 40 MiB of bytearrays
Every function is decorated with scry.profile (the builtin @profile records the same table).
Each piece of work is a counting loop, timed with time.thread_time() around it; the truth (CPU
seconds per name) is written as JSON to the file argv[2].
"""

import json
import sys
import time

import scry

TRUTH = {}


def loops_per_second():
    """Iterations of the counting loop per CPU second (best of a few tries)."""
    best = 0.0
    for _ in range(5):
        t0 = time.thread_time()
        i = 0
        while i < 200_000:
            i += 1
        dt = time.thread_time() - t0
        if dt > 0:
            best = max(best, 200_000 / dt)
    return best


RATE = loops_per_second()


def work(seconds):
    return max(1, int(RATE * seconds))


def note(name, t0):
    TRUTH[name] = TRUTH.get(name, 0.0) + time.thread_time() - t0


def helper(n):
    i = 0
    while i < n:
        i += 1
    return i


@scry.profile
def calling(n, m):
    t0 = time.thread_time()
    s = 0
    while s < n:
        s += 1
    t1 = time.thread_time()
    TRUTH["calling_own"] = t1 - t0
    try:
        return s + helper(m)  # @calling_helper
    finally:
        note("calling_helper", t1)


@scry.profile
def all_in(n):
    t0 = time.thread_time()
    try:
        return helper(n)  # @all_in_helper
    finally:
        note("all_in_helper", t0)


@scry.profile
def inner(n, m):
    t0 = time.thread_time()
    s = 0
    while s < n:
        s += 1
    t1 = time.thread_time()
    TRUTH["inner_own"] = t1 - t0
    try:
        return s + helper(m)  # @inner_helper
    finally:
        note("inner_helper", t1)


def caller(n):
    t0 = time.thread_time()
    s = 0
    while s < n:
        s += 1
    note("caller_own", t0)
    t0 = time.thread_time()
    try:
        return s + inner(work(0.2), work(0.4))  # @caller_inner
    finally:
        note("inner", t0)


KEPT = []


def grow(mib):
    for _ in range(mib):
        KEPT.append(bytearray(1 << 20))


@scry.profile
def keep():
    grow(40)  # @keep_grow


def main(mode, out):
    t0 = time.thread_time()
    if mode == "calling":
        calling(work(0.5), work(0.5))
        note("calling", t0)
    elif mode == "all_in":
        all_in(work(0.8))
        note("all_in", t0)
    elif mode == "caller":
        caller(work(0.5))
    elif mode == "memory":
        keep()
    else:
        raise SystemExit(f"profile_callees: no mode {mode!r}")
    with open(out, "w", encoding="utf-8") as f:
        json.dump(TRUTH, f)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
