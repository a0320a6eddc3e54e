"""Ground-truth target for `scry diff` and `scry flamegraph --diff`: a module-level cache that grows
by a known number of bytes on command, so two dumps taken around a `grow` differ by exactly that.

Prints the ready line ({"ready", "pid", "python", "entries"}) once the cache holds its first
entries. Commands on stdin, one per line:
  grow N   adds N entries ('item:%08d' -> Item with a 2000-byte bytes payload) and prints
           {"grown": N, "bytes": B, "entries": len(CACHE)}, B being sys.getsizeof of everything
           new: the keys, the items, their payloads, and the growth of the dict itself
  stop     prints {"done": true} and exits 0 (EOF does the same)
The GC is disabled and stdin is read with os.read, so nothing else lingers between dumps.
"""

import gc
import json
import os
import sys

PAYLOAD = 2000
CACHE = {}


class Item:
    __slots__ = ("payload", "serial")

    def __init__(self, payload, serial):
        self.payload = payload
        self.serial = serial


def grow(n):
    size = sys.getsizeof
    before = size(CACHE)
    added = 0
    start = len(CACHE)
    for i in range(start, start + n):
        key = "item:%08d" % i
        # serial: an int above the small-int cache, one object per item
        item = Item(os.urandom(PAYLOAD), 1_000_000 + i)
        CACHE[key] = item
        added += size(key) + size(item) + size(item.payload) + size(item.serial)
    return added + size(CACHE) - before


def main():
    gc.disable()
    grow(1000)
    print(json.dumps({"ready": True, "pid": os.getpid(),
                      "python": "%d.%d" % sys.version_info[:2], "entries": len(CACHE)}),
          flush=True)
    pending = b""
    while True:
        while b"\n" not in pending:
            chunk = os.read(0, 4096)
            if not chunk:
                return
            pending += chunk
        line, _, pending = pending.partition(b"\n")
        words = line.decode().split()
        if words[:1] == ["grow"]:
            n = int(words[1])
            added = grow(n)
            print(json.dumps({"grown": n, "bytes": added, "entries": len(CACHE)}), flush=True)
        elif words[:1] == ["stop"]:
            print(json.dumps({"done": True}), flush=True)
            return


if __name__ == "__main__":
    main()
