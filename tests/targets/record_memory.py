"""Target of test_record_memory.py: a program started WITHOUT scry that allocates 200 MiB on one
line each time it is told to, while `scry record --pid --memory` may or may not be attached.

argv: CONTROL_DIR [busy] [THREADS]. It prints {"pid": ...} once it runs, then polls
CONTROL_DIR: a file go-N makes the ALLOCATE line run (200 bytearrays of 1 MiB each: 200 MiB,
one allocation of 1 MiB per object, made at run time), after which it writes done-N; a file
quit ends it, printing a checksum of its work (the same with or without scry) and exiting 0.
With busy, the main thread spins in Python between polls instead of sleeping in time.sleep;
THREADS more threads spin in Python until the end."""

import hashlib
import json
import os
import sys
import threading
import time

MIB = 1 << 20
ctl = sys.argv[1]
busy = "busy" in sys.argv[2:]
nthreads = int(sys.argv[-1]) if sys.argv[-1].isdigit() else 0
stop = False


def spin():
    x = 0
    while not stop:
        x += 1


def allocate(n):
    return [bytearray(MIB) for _ in range(n)]  # ALLOCATE


def pause():
    if busy:
        end = time.monotonic() + 0.01
        while time.monotonic() < end:
            pass
    else:
        time.sleep(0.01)


workers = [threading.Thread(target=spin) for _ in range(nthreads)]
for w in workers:
    w.start()
print(json.dumps({"pid": os.getpid()}), flush=True)
h = hashlib.sha256()
done = 0
while not os.path.exists(os.path.join(ctl, "quit")):
    if os.path.exists(os.path.join(ctl, f"go-{done + 1}")):
        blocks = allocate(200)
        h.update(str(sum(len(b) for b in blocks)).encode())
        del blocks
        done += 1
        open(os.path.join(ctl, f"done-{done}"), "w").close()
    pause()
stop = True
for w in workers:
    w.join()
print("checksum", h.hexdigest(), done, flush=True)
