"""Ground-truth target for `scry run`'s interpreter-shutdown accounting: builds small dicts held
by a module global, then returns. The interpreter frees them while it finalizes (after the
program's last Python frame, after every atexit callback), which takes a large share of the
run: a profile that stops at the program's last frame misses that time.

Usage: run_teardown.py [N [S [--pid]]]   (N dicts, default 2,000,000; first S seconds of CPU
                                          time in a pure-Python loop, default 0; --pid: first
                                          print "pid PID S", S the main thread's CPU time at
                                          its first line, and last "cpu S", the same at its
                                          last line, so that a test can watch the process)

Prints one deterministic line (after the pid line) and exits with status 0.
"""

import os
import sys
import time

N = int(sys.argv[1]) if len(sys.argv) > 1 else 2_000_000
SPIN_S = float(sys.argv[2]) if len(sys.argv) > 2 else 0.0
if "--pid" in sys.argv[3:]:
    print(f"pid {os.getpid()} {time.thread_time():.6f}", flush=True)

end = time.thread_time() + SPIN_S
while time.thread_time() < end:  # @spin
    pass
KEPT = [{"i": i, "s": None} for i in range(N)]  # @build
print(f"teardown: {len(KEPT)} dicts held", flush=True)
if "--pid" in sys.argv[3:]:
    print(f"cpu {time.thread_time():.6f}", flush=True)  # the main thread's CPU at its last line
