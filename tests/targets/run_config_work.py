"""Target for `scry run --config` and Scalene's option names (tests/e2e/test_run_config.py).

It prints the settings scry run gave its agent (the SCRY_* environment, the random part directory
aside) on stdout, one `NAME=value` a line, then works:
  own     N iterations of a Python loop on its own line (~0.3 s at the default N)
  helper  N/2 iterations in run_lib/filter_helper.py: a second file, for the file filters
  big     32 bytearrays of 1 MiB, kept: 32 MiB allocated on one line
  small   one bytearray of 4 MiB, kept: 4 MiB allocated on one line
Each measured line carries an `@name` marker comment.

Usage: run_config_work.py [N]   (default 6_000_000; 1000 for a run that only checks options)
"""

import os
import sys

from run_lib import filter_helper

for name in sorted(os.environ):
    if name.startswith("SCRY_") and name != "SCRY_PART_DIR":
        print(f"{name}={os.environ[name]}")
sys.stdout.flush()


def own_work(n):
    i = 0
    while i < n: i += 1  # @own
    return i


def big():
    return [bytearray(1 << 20) for _ in range(32)]  # @big


def small():
    return bytearray(4 << 20)  # @small


N = int(sys.argv[1]) if len(sys.argv) > 1 else 6_000_000
own_work(N)
filter_helper.helper_work(N // 2)
kept = (big(), small())
print("done")
