"""A heap of about N objects of mixed kinds for measuring `scry dump` (bench, tests of speed
belong in bench/): records (instances with a managed dict) holding a str, a float and a small
list, grouped in dicts and lists. Prints one JSON line (ready, pid, objects: the number of objects
built, gc_count), then waits for `stop` or EOF on stdin. Usage: heap_bench.py [--objects N]."""

import gc
import json
import os
import sys


class Record:
    def __init__(self, i):
        self.name = "record-%d" % i
        self.value = i * 1.5
        self.tags = [i, i + 1000]


def build(n):
    groups = {}
    units = n // 5  # a record, its str, its float, its list and the list's big int
    for i in range(units):
        groups.setdefault("g%d" % (i % 1000), []).append(Record(i + 10 ** 6))
    return groups


def main():
    n = 1000000
    if "--objects" in sys.argv:
        n = int(sys.argv[sys.argv.index("--objects") + 1])
    gc.disable()
    data = build(n)
    head = json.dumps({"ready": True, "pid": os.getpid(), "objects": n,
                       "python": "%d.%d" % sys.version_info[:2]})
    gc_count = len(gc.get_objects()) + gc.get_freeze_count()
    sys.stdout.write(head[:-1] + ', "gc_count": ' + str(gc_count) + "}\n")
    sys.stdout.flush()
    pending = b""
    while b"stop" not in pending:
        chunk = os.read(0, 4096)
        if not chunk:
            break
        pending += chunk
    print(json.dumps({"done": True, "groups": len(data)}), flush=True)


if __name__ == "__main__":
    main()
