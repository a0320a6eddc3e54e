"""Ground-truth target for `scry run`'s leak detector: a steady leak beside a trimmed cache.

A request handler (issue 27, item 1, scaled down to a few seconds) keeps, for each request,
  cache    a 200 KiB response in a global dict, cleared every 250 requests (a cache trimmed
           back: it sets the process's new peaks, but what it holds falls back to nothing)
  history  a 20 KiB record appended to a global list that is never emptied (a leak: 20 KiB a
           request, 80 MiB after 4,100 requests, still held at exit)
A 0.2 ms pause a request spreads the run over a second or two, so that the collector sees the
growth in many batches.

Each measured line carries an `@name` marker comment (tests/targets/groundtruth.py reads them).

Usage: mem_cache_leak.py [requests]   (default 4100: the run ends with 100 responses cached)

Prints one deterministic line and exits with status 0.
"""

import sys
import time

KIB = 1024
TRIM_EVERY = 250
CACHE = {}
HISTORY = []


def handle(i):
    CACHE[i] = bytes(200 * KIB)  # @cache
    HISTORY.append(bytes(20 * KIB))  # @history
    if (i + 1) % TRIM_EVERY == 0:
        CACHE.clear()  # @trim


def main():
    requests = int(sys.argv[1]) if len(sys.argv) > 1 else 4100
    for i in range(requests):
        handle(i)
        time.sleep(0.0002)
    held = sum(map(len, HISTORY))
    return f"cache_leak: {requests} requests, {len(CACHE)} cached, {held} bytes of history"


if __name__ == "__main__":
    print(main(), flush=True)
