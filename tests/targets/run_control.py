"""Target for scry's in-code control (issue 13). Modes (argv[1]):
  region     under `scry run --off`: spins in before() (0.4 s of CPU), then in inside()
             between scry.start() and scry.stop() (0.4 s), then in after() (0.4 s)
  decorated  three functions of 0.5 s of CPU each; two of them decorated with the builtin
             @profile and scry.profile
  external   under `scry run --off`: prints "ready PID", spins in outside_off() until profiling
             is on (a test runs `scry control PID on`), prints "on", spins in while_on() until
             the file argv[2] exists and profiling is off again (`scry control PID off`), then
             works 0.3 s in after_off()
  memory     under `scry run --off`: keeps 50 MiB of bytearrays in keep_before(), then 80 MiB
             in keep_inside() between scry.start() and scry.stop(), then frees 100 MiB in
             drop_after()
  plain      a plain `python` run (no scry run): spins 0.3 s, calls scry.start(), spins in
             profiled() 0.5 s
Each piece of work is a counting loop in its own function (its length calibrated to the
interpreter's speed), timed with time.thread_time() around it.
The last line of stdout is the truth as JSON: each function's CPU seconds.
"""

import json
import os
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


def timed(fn):
    def run(*args):
        t0 = time.thread_time()
        fn(*args)
        TRUTH[fn.__name__] = TRUTH.get(fn.__name__, 0.0) + time.thread_time() - t0
    run.__name__ = fn.__name__
    return run


def before(n):
    i = 0
    while i < n: i += 1  # @before


def inside(n):
    i = 0
    while i < n: i += 1  # @inside


def after(n):
    i = 0
    while i < n: i += 1  # @after


def one(n):
    i = 0
    while i < n: i += 1  # @one


def two(n):
    i = 0
    while i < n: i += 1  # @two


def three(n):
    i = 0
    while i < n: i += 1  # @three


def outside_off():
    """Spins until scry says profiling is on; its CPU time after the switch is what the check
    takes to see it (one loop iteration and the collector's tick)."""
    i = 0
    while not scry.is_profiling():
        i += 1


def while_on(flag):
    t0 = time.thread_time()
    i = 0
    while not os.path.exists(flag):
        i += 1  # @while_on
    while scry.is_profiling():
        i += 1
    TRUTH["while_on"] = time.thread_time() - t0


def after_off(n):
    i = 0
    while i < n: i += 1  # @after_off


def unprofiled(n):
    i = 0
    while i < n: i += 1  # @unprofiled


def profiled(n):
    i = 0
    while i < n: i += 1  # @profiled


KEPT = []


def keep_before():
    for _ in range(50):
        KEPT.append(bytearray(1 << 20))  # @keep_before


def keep_inside():
    for _ in range(80):
        KEPT.append(bytearray(1 << 20))  # @keep_inside


def drop_after():
    del KEPT[:100]


def main(mode):
    if mode == "region":
        timed(before)(work(0.4))
        scry.start()
        timed(inside)(work(0.4))
        scry.stop()
        timed(after)(work(0.4))
    elif mode == "decorated":
        profile(one)  # noqa: F821 (the builtin scry run gives the program)
        scry.profile(two)
        for fn in (one, two, three):
            timed(fn)(work(0.5))
    elif mode == "external":
        print(f"ready {os.getpid()}", flush=True)
        outside_off()
        print("on", flush=True)
        while_on(sys.argv[2])
        timed(after_off)(work(0.3))
    elif mode == "memory":
        keep_before()
        scry.start()
        keep_inside()
        scry.stop()
        drop_after()
    elif mode == "plain":
        timed(unprofiled)(work(0.3))
        scry.start()
        timed(profiled)(work(0.5))
    else:
        raise SystemExit(f"run_control: no mode {mode!r}")
    print(json.dumps(TRUTH), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
