"""Threads that allocate in their first milliseconds, for `scry record --allocations`
(tests/e2e/test_record_allocations.py): each of THREADS threads, started one after another,
makes a 1 MiB bytearray on the line marked LINE_NEW and ends. The recorder must give each of
those samples its stack, though no thread lives long enough for user space's listing of the
threads (every 0.2 s) to see it. Gated as alloc_caches.py: prints {"pid": PID}, waits for a line,
works, prints {"threads": N, "file", "line"}, waits for a line, ends.

    python alloc_new_threads.py [THREADS]
"""
import json
import os
import sys
import threading

THREADS = int(sys.argv[1]) if len(sys.argv) > 1 else 40
KEPT = []


def work():
    KEPT.append(bytearray(1 << 20))  # LINE_NEW


print(json.dumps({"pid": os.getpid()}), flush=True)
sys.stdin.readline()
for _ in range(THREADS):
    t = threading.Thread(target=work)
    t.start()
    t.join()
with open(__file__, encoding="utf-8") as f:
    line = next(n for n, text in enumerate(f, 1) if text.rstrip().endswith("# LINE_NEW"))
print(json.dumps({"threads": THREADS, "file": os.path.abspath(__file__), "line": line}),
      flush=True)
sys.stdin.readline()
