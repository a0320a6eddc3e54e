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

"shared" is "loaded" with every thread of the process pinned to that CPU, a profiler's own
threads too; "others_delay_sec" is how long the threads that are not Python's waited.

Usage: run_oversubscribed.py quiet|loaded|shared [SECONDS]   (default 1.0 s of CPU time in the
loop)
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


def others_delay():
    """The run-queue delay of the process's threads that are not Python's (a profiler's)."""
    total = 0
    for tid in os.listdir("/proc/self/task"):
        if int(tid) != threading.get_native_id():
            try:
                with open(f"/proc/self/task/{tid}/schedstat") as f:
                    total += int(f.read().split()[1])
            except OSError:
                pass  # ended meanwhile
    return total / 1e9


def main():
    mode = sys.argv[1]
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0
    sibling = None
    if mode in ("loaded", "shared"):
        cpu = {min(os.sched_getaffinity(0))}
        # shared: every thread of the process on that CPU, the profiler's own too (they are not
        # the program's: their waits must not count as the program's).
        for tid in os.listdir("/proc/self/task") if mode == "shared" else [0]:
            os.sched_setaffinity(int(tid), cpu)
        sibling = subprocess.Popen(["/bin/sh", "-c", "while :; do :; done"])
        time.sleep(0.05)  # the sibling is running before the loop starts
    try:
        spin(seconds)
    finally:
        if sibling:
            sibling.kill()
            sibling.wait()
    cpu, delay = own_schedstat()
    print(json.dumps({"cpu_sec": cpu, "delay_sec": delay, "others_delay_sec": others_delay(),
                      "read_at": time.clock_gettime(time.CLOCK_BOOTTIME)}), flush=True)


if __name__ == "__main__":
    main()
