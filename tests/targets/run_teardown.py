"""Ground-truth target for `scry run`'s interpreter-shutdown accounting: builds two million
small dicts held by a module global, then returns. The interpreter frees them while it
finalizes (after the program's last Python frame, after every atexit callback), which takes a
large share of the run: a profile that stops at the program's last frame misses that time.

Usage: run_teardown.py [N]   (N dicts, default 2,000,000)

Prints one deterministic line and exits with status 0.
"""

import sys

N = int(sys.argv[1]) if len(sys.argv) > 1 else 2_000_000
KEPT = [{"i": i, "s": None} for i in range(N)]  # @build
print(f"teardown: {len(KEPT)} dicts held", flush=True)
