"""Ground truth for `scry top --thread`: two threads of known work, started without scry. The
main thread spins in pure Python (main_spin); a thread named "worker" compresses with zlib in a
loop (worker_compress: native time). Each function runs only in its own thread.

argv[1]: seconds to run; argv[2]: a file whose existence ends the run early.
Prints {"ready": true, "pid": N, "worker_tid": T} once both run, then exits 0 at the end.
"""

import json
import os
import sys
import threading
import time
import zlib

BLOB = b"".join(b"%d scry top %d\n" % (i, i * i % 9973) for i in range(40000))
STOP = threading.Event()


def worker_compress():
    while not STOP.is_set():
        zlib.compress(BLOB, 6)


def main_spin(end, stop_file):
    total = 0
    while time.monotonic() < end and not os.path.exists(stop_file):
        for i in range(20000):
            total = (total + i * i) & 0xFFFF
    return total


def main():
    seconds, stop_file = float(sys.argv[1]), sys.argv[2]
    worker = threading.Thread(target=worker_compress, name="worker")
    worker.start()
    while worker.native_id is None:
        time.sleep(0.01)
    print(json.dumps({"ready": True, "pid": os.getpid(), "worker_tid": worker.native_id}),
          flush=True)
    main_spin(time.monotonic() + seconds, stop_file)
    STOP.set()
    worker.join()


if __name__ == "__main__":
    main()
