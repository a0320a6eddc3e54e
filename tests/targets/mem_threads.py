"""Ground-truth target for `scry run`'s memory profile: many short-lived threads.

  thread    1000 threads, at most 50 alive at once, each allocating two bytearrays of 1 MiB on
            one line and ending: 2000 MiB allocated by threads that each live a few ms, so a
            sample that could not be queued at once (many threads sampling together) would be
            lost when its thread ends

Each measured line carries an `@name` marker comment (tests/targets/groundtruth.py reads them).
Prints the number of buffers made.
"""

import threading

MB = 1 << 20
made = []


def short():
    x = [bytearray(MB) for _ in range(2)]  # @thread
    made.append(len(x))


def main():
    alive = []
    for _ in range(1000):
        t = threading.Thread(target=short)
        t.start()
        alive.append(t)
        if len(alive) > 50:
            alive.pop(0).join()
    for t in alive:
        t.join()
    print("buffers", sum(made))


if __name__ == "__main__":
    main()
