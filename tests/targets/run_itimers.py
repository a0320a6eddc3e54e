"""Target for `scry run`: a program that uses interval timers and their signals itself.

  run_itimers.py real    SIGALRM from setitimer(ITIMER_REAL) every 10 ms, for ~1 s of busy loop
  run_itimers.py all     also SIGPROF (ITIMER_PROF) and SIGVTALRM (ITIMER_VIRTUAL), every 10 ms

The handlers count their ticks. Output: fixed lines, then one last line of JSON with the counts
and the clocks the timers run on ("wall", "cpu" = process CPU, "user" = process user CPU), so that
a test can check each count against its clock, with and without a profiler; and how a loaded
machine ran the main thread meanwhile ("delay": seconds it waited for a CPU, "slices": the time
slices it ran in; /proc/thread-self/schedstat).
"""

import json
import resource
import signal
import sys
import time

INTERVAL_S = 0.01
WORK_N = 16_000_000  # ~0.7 s on 3.11


def _calibrated(n, seconds):
    """At least n iterations of work()'s loop, more where this interpreter runs them faster
    (3.14's loop is ~2.5x faster than 3.11's: the fixed count left ~17 samples)."""
    probe, i = 500_000, 0
    cpu = time.thread_time()
    while i < probe: i += 1
    return max(n, int(seconds * probe / max(time.thread_time() - cpu, 1e-6)))


WORK_N = _calibrated(WORK_N, 0.7)

TICKS = {"SIGALRM": 0, "SIGPROF": 0, "SIGVTALRM": 0}


def on_tick(signum, frame):
    TICKS[signal.Signals(signum).name] += 1


def work(n):
    i = 0
    while i < n: i += 1  # @work
    return i


def user_time():
    return resource.getrusage(resource.RUSAGE_SELF).ru_utime


def sched():
    """(seconds this thread waited for a CPU, time slices it ran): /proc/thread-self/schedstat."""
    with open("/proc/thread-self/schedstat") as f:
        _, delay_ns, slices = f.read().split()
    return int(delay_ns) / 1e9, int(slices)


def main(mode):
    timers = [(signal.SIGALRM, signal.ITIMER_REAL)]
    if mode == "all":
        timers += [(signal.SIGPROF, signal.ITIMER_PROF), (signal.SIGVTALRM, signal.ITIMER_VIRTUAL)]
    elif mode != "real":
        raise SystemExit(f"run_itimers: unknown mode {mode!r}")
    for signum, _ in timers:
        signal.signal(signum, on_tick)
    print(f"timers: {', '.join(s.name for s, _ in timers)}", flush=True)
    delay, slices = sched()
    wall, cpu, user = time.perf_counter(), time.process_time(), user_time()
    for _, which in timers:
        signal.setitimer(which, INTERVAL_S, INTERVAL_S)
    work(WORK_N)
    for _, which in timers:
        signal.setitimer(which, 0)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    user = user_time() - user
    delay, slices = (end - start for end, start in zip(sched(), (delay, slices)))
    print("work done", file=sys.stderr, flush=True)
    print(json.dumps({"ticks": TICKS, "wall": wall, "cpu": cpu, "user": user,
                      "delay": delay, "slices": slices, "interval": INTERVAL_S}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
