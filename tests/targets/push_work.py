"""Work for `scry run --push` (tests/e2e/test_push.py).

push_work.py SECONDS STATUS: for SECONDS of wall time, rounds of push_hot_loop (pure Python on
the CPU for 160 ms) then push_rest (an 80 ms sleep): phases long beside the sampling interval, so
that the profile's split can be checked against the time the program measured in each, which it
prints; then exits with STATUS. (80/40 ms phases put the sleep 10.4 points under its share in a
loaded CI run: each switch costs the sleep the sampler's delay in reaching the thread.)
push_work.py --rounds N STATUS: N calls of push_count (fixed work), then the same.
Both also print how long the main thread waited for a CPU meanwhile ("waited", from
/proc/thread-self/schedstat), the part of the elapsed time that a loaded machine adds.
"""
import sys
import time


def push_hot_loop(until):
    x = 0
    while time.perf_counter() < until:
        for i in range(2000):
            x += i * i % 7
    return x


def push_rest():
    time.sleep(0.08)


def push_count():
    x = 0
    for i in range(20000):
        x += i * i % 7
    return x


def waited():
    """Seconds this thread has waited for a CPU (/proc/thread-self/schedstat's run delay)."""
    with open("/proc/thread-self/schedstat") as f:
        return int(f.read().split()[1]) / 1e9


def main():
    hot = rest = 0.0
    waited_before = waited()
    start = time.perf_counter()
    if sys.argv[1] == "--rounds":
        for _ in range(int(sys.argv[2])):
            push_count()
        hot = time.perf_counter() - start
    else:
        end = start + float(sys.argv[1])
        while time.perf_counter() < end:
            t = time.perf_counter()
            push_hot_loop(min(t + 0.16, end))
            u = time.perf_counter()
            if u < end:
                push_rest()
            hot += u - t
            rest += time.perf_counter() - u
    elapsed = time.perf_counter() - start
    print(f"elapsed {elapsed:.6f} hot {hot:.6f} rest {rest:.6f} waited "
          f"{waited() - waited_before:.6f}", flush=True)
    sys.exit(int(sys.argv[-1]))


main()
