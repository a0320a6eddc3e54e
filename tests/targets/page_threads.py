"""Target for the page's pictures (tests/e2e/test_view_charts.py): three threads started by the
program, each in its own function (thread_a, thread_b, thread_c) calling work(), which alternates
a pure-Python loop (`@loop`) with allocating 1 MiB bytearrays (`@alloc`): thread_a allocates 4 per
round, the others 2, so that the memory flame graph has frames of unequal widths on every Python
version (an int loop alone allocates nothing on 3.14+). The main thread waits in join().
"""

import threading

MB = 1 << 20
ROUNDS = 20
LOOP_N = 200_000


def work(n_alloc):
    keep = None
    for _ in range(ROUNDS):
        i = 0
        while i < LOOP_N: i += 1  # @loop
        keep = [bytearray(MB) for _ in range(n_alloc)]  # @alloc
    return len(keep)


def thread_a():
    return work(4)


def thread_b():
    return work(2)


def thread_c():
    return work(2)


def main():
    threads = [threading.Thread(target=f, name=f.__name__) for f in (thread_a, thread_b, thread_c)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(f"joined {len(threads)} threads")


if __name__ == "__main__":
    main()
