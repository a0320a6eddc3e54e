"""Ground-truth target for `scry run`'s oversubscription mark: a pure-Python loop, either
alone ("quiet": wherever the scheduler puts it) or pinned to one CPU together with a busy
sibling process pinned to the same CPU ("loaded": the two share the CPU, so the loop waits for
it about as long as it runs, and that wait is off-CPU time that the profile counts as system
time). The sibling is a shell loop, not a Python process, so it is not profiled itself.

At the end the program reads its thread's schedstat (/proc/self/task/TID/schedstat: CPU ns,
run-queue delay ns) and prints one JSON line {"cpu_sec", "delay_sec"}: the truth the profile's
run_queue_* fields are checked against, and "read_at", CLOCK_BOOTTIME at that read: what comes
after it (exit, finalization) may add to the agent's last read, by at most the wall time from
then to the end of the process.

Usage: run_oversubscribed.py quiet|loaded [SECONDS]   (default 1.0 s of CPU time in the loop)
"""

import json
import os
import subprocess
import sys
import threading
import time


def spin(cpu_seconds):
    end = time.thread_time() + cpu_seconds
    n = 0
    while time.thread_time() < end:  # @spin
        n += 1
    return n


def own_schedstat():
    # The program's one thread (the process may hold other threads that are not Python's).
    with open(f"/proc/self/task/{threading.get_native_id()}/schedstat") as f:
        cpu, delay = f.read().split()[:2]
    return int(cpu) / 1e9, int(delay) / 1e9


def main():
    mode = sys.argv[1]
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0
    sibling = None
    if mode == "loaded":
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
        sibling = subprocess.Popen(["/bin/sh", "-c", "while :; do :; done"])
        time.sleep(0.05)  # the sibling is running before the loop starts
    try:
        spin(seconds)
    finally:
        if sibling:
            sibling.kill()
            sibling.wait()
    cpu, delay = own_schedstat()
    print(json.dumps({"cpu_sec": cpu, "delay_sec": delay, "read_at": time.clock_gettime(time.CLOCK_BOOTTIME)}),
          flush=True)


if __name__ == "__main__":
    main()
