"""Ground-truth target for `scry run`'s leak detector: a loop that leaks and loops that do not.

  leak        80 times: a 5 MiB bytearray appended to a global list that is never emptied,
              with a 15 ms sleep (about 1.3 s, 400 MiB held at the end: a leak, growing at
              about 300 MiB/s, whose allocations set a new peak footprint every time once it
              passed 100 MiB)
  noleak      90 MiB held first (its own line, under the 100 MiB at which leak tracking starts;
              kept until exit, so that the program grows by more than the 1% of what it
              allocated at which leaks are reported),
              then 80 times: a bytearray 128 KiB larger than the last replaces it, with the
              same sleep. Every allocation of the loop sets a new peak (the old buffer is still
              alive while the new one is made) and is freed one iteration later: no leak
  noleak_del  the same loop, but each buffer is dropped (del) before the next one is made
  early_table a global table of 250 x 1 MiB bytearrays built in about 0.4 s (from 100 MiB on,
              a 2 ms sleep a round: about 30 collector batches then each set a new peak that is
              never freed, which Scalene's rule alone calls a leak), then the program runs on
              for 3.6 s (a sleep) with the table kept: its growth stopped in the first sixth of
              the run (Python's start-up included), so it is no leak
  table_to_end the same table, and the program ends as soon as it is built: it grows until the
              end (a leak by the rule)

Each measured line carries an `@name` marker comment (tests/targets/groundtruth.py reads them).

Usage: mem_leak.py section   (one of the above; each needs a process of its own, as the leak
                              detector's state depends on the footprint the program reached)

Prints one deterministic line and exits with status 0.
"""

import sys
import time

MB = 1 << 20
ROUNDS = 80
PAUSE_S = 0.015
LEAKED = []
HELD = []  # what the loops that do not leak keep, so that the program does grow (by 90 MiB)


def leak():
    for _ in range(ROUNDS):
        LEAKED.append(bytearray(5 * MB))  # @leak
        time.sleep(PAUSE_S)
    return f"leak: {len(LEAKED)} buffers, {sum(map(len, LEAKED))} bytes held"


def noleak():
    held = [bytearray(MB) for _ in range(90)]  # @noleak_base
    HELD.append(held)
    buf = None
    for i in range(ROUNDS):
        buf = bytearray(5 * MB + i * (MB // 8))  # @noleak
        time.sleep(PAUSE_S)
    return f"noleak: {len(held)} MiB held, last buffer {len(buf)} bytes"


def noleak_del():
    held = [bytearray(MB) for _ in range(90)]  # @noleak_del_base
    HELD.append(held)
    last = 0
    for i in range(ROUNDS):
        buf = bytearray(5 * MB + i * (MB // 8))  # @noleak_del
        last = len(buf)
        del buf
        time.sleep(PAUSE_S)
    return f"noleak_del: {len(held)} MiB held, last buffer {last} bytes"


TABLE = []
TABLE_MB = 250
RUN_ON_S = 3.6


def build_table():
    for i in range(TABLE_MB):
        TABLE.append(bytearray(MB))  # @early_table
        if i >= 100:
            time.sleep(0.002)


def early_table():
    build_table()
    time.sleep(RUN_ON_S)
    return f"early_table: {len(TABLE)} MiB held"


def table_to_end():
    build_table()
    return f"table_to_end: {len(TABLE)} MiB held"


SECTIONS = {"leak": leak, "noleak": noleak, "noleak_del": noleak_del,
            "early_table": early_table, "table_to_end": table_to_end}

if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in SECTIONS:
        raise SystemExit(f"usage: mem_leak.py {'|'.join(SECTIONS)}")
    print(SECTIONS[sys.argv[1]](), flush=True)
