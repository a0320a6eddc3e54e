"""Target for `scry run`: three threads started by the program, each running its own function
with the same pure-Python loop (the lines marked `@thread_a`, `@thread_b` and `@thread_c`, ~0.35 s
of CPU each), while the main thread waits in join().
"""

import threading

WORK_N = 8_000_000


def crunch_a(n):
    i = 0
    while i < n: i += 1  # @thread_a
    return i


def crunch_b(n):
    i = 0
    while i < n: i += 1  # @thread_b
    return i


def crunch_c(n):
    i = 0
    while i < n: i += 1  # @thread_c
    return i


def main():
    threads = [threading.Thread(target=f, args=(WORK_N,), name=f.__name__)
               for f in (crunch_a, crunch_b, crunch_c)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()  # @join
    print(f"joined {len(threads)} threads")


if __name__ == "__main__":
    main()
