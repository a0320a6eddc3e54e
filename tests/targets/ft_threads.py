"""Ground-truth target for `scry dump` on a free-threaded build, where each thread allocates from
heaps of its own: objects built by threads that have exited (their pages went to the
interpreter's abandoned pool, or were taken over by another thread) and by threads still alive
(blocked), instances with a managed dict (the heap whose blocks carry a pre-header) and with
__slots__ (the plain GC heap), and the objects frozen by gc.freeze() before any of it. Then one
JSON line:

  ready, pid, python        as every target prints them
  gc_count                  len(gc.get_objects()) + gc.get_freeze_count(), taken last
  frozen                    gc.get_freeze_count()
  kept                      {name: [id(list), len(list), retained bytes]} per thread's list;
                            retained: the list, its items and what only they hold
  items, slots              how many Item and Slot instances are alive

Commands on stdin: EOF exits (the blocked threads are daemons).
"""

import gc
import json
import os
import sys
import threading

gc.disable()
gc.freeze()  # the interpreter's own objects: the permanent generation of the other builds


class Item:  # a managed dict: its blocks carry the two-word pre-header
    def __init__(self, i):
        self.i = i
        self.tag = [i]


class Slot:  # no dict: the plain GC heap
    __slots__ = ("i", "ref")

    def __init__(self, i):
        self.i = i
        self.ref = (i, str(i))


KEPT = {}
built = threading.Semaphore(0)
hold = threading.Event()
size = sys.getsizeof


def make(name, base, n, stay):
    # ints from 1000 up and str(i) are new objects each: retained by their item alone
    KEPT[name] = [Item(i) if i % 2 else Slot(i) for i in range(base, base + n)]
    built.release()
    if stay:
        hold.wait()


def retained(items):
    total = size(items)
    for o in items:
        if isinstance(o, Item):
            total += size(o) + size(o.tag) + size(o.i)
        else:
            total += size(o) + size(o.ref) + size(o.i) + size(o.ref[1])
    return total


# The blocked threads first: a thread that starts takes over the segments that one that exited
# left, so the last to exit leaves its segments in the abandoned pool.
alive = [threading.Thread(target=make, args=(f"alive{k}", 100000 + 10000 * k, 2000, True),
                          daemon=True) for k in range(2)]
for t in alive:
    t.start()
for _ in alive:
    built.acquire()
for k in range(3):
    t = threading.Thread(target=make, args=(f"exited{k}", 1000 + 10000 * k, 3000, False))
    t.start()
    t.join()
    built.acquire()

kept = {name: [id(v), len(v), retained(v)] for name, v in KEPT.items()}
n_items = sum(isinstance(o, Item) for v in KEPT.values() for o in v)
n_slots = sum(isinstance(o, Slot) for v in KEPT.values() for o in v)
head = json.dumps({"ready": True, "pid": os.getpid(), "python": sys.version.split()[0],
                   "frozen": gc.get_freeze_count(), "kept": kept, "items": n_items,
                   "slots": n_slots})
gc_count = len(gc.get_objects()) + gc.get_freeze_count()
sys.stdout.write(head[:-1] + ', "gc_count": ' + str(gc_count) + "}\n")
sys.stdout.flush()
while os.read(0, 4096):
    pass
