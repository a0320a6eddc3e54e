"""Work for `scry run --push` (tests/e2e/test_push.py).

push_work.py SECONDS STATUS: for SECONDS of wall time, rounds of push_hot_loop (pure Python, on
the CPU) then push_rest (a 2 ms sleep); prints the time the program itself measured in each and
exits with STATUS.
push_work.py --rounds N STATUS: N rounds of push_hot_loop alone (fixed work), then the same.
"""
import sys
import time


def push_hot_loop():
    x = 0
    for i in range(20000):
        x += i * i % 7
    return x


def push_rest():
    time.sleep(0.002)


def main():
    hot = rest = 0.0
    start = time.perf_counter()
    if sys.argv[1] == "--rounds":
        for _ in range(int(sys.argv[2])):
            push_hot_loop()
        hot = time.perf_counter() - start
    else:
        until = start + float(sys.argv[1])
        while time.perf_counter() < until:
            t = time.perf_counter()
            push_hot_loop()
            u = time.perf_counter()
            push_rest()
            hot += u - t
            rest += time.perf_counter() - u
    elapsed = time.perf_counter() - start
    print(f"elapsed {elapsed:.6f} hot {hot:.6f} rest {rest:.6f}", flush=True)
    sys.exit(int(sys.argv[-1]))


main()
