"""The leaks of tests/targets/heap_fixtures.py, in a module of their own so that retaining paths
start at sys.modules['heap_leaks'] as they would for an application's module. Built by build(n)
and measured by truths(): each holder's retained size is the sum of sys.getsizeof over exactly
the objects that only it keeps alive (what a dominator tree must find)."""

import sys

CACHE = {}       # unbounded module-level cache: 'user:N' -> Session with a 1 KiB payload
LISTENERS = []   # a listener registry of closures, each holding a 4 KiB buffer
REPORT = None    # an instance whose attribute holds a large list
POINTS = []      # __slots__ instances
GEN = None       # a suspended generator holding a 1 MiB buffer
CYCLE = None     # a reachable reference cycle with a payload
CONFIG = {}      # values to redact with --capture-contents


class Session:
    def __init__(self, user, payload):
        self.user = user
        self.payload = payload


class Report:
    def __init__(self):
        self.title = "report"
        self.rows = None


class Point:
    __slots__ = ("x", "y", "label")

    def __init__(self, x, y, label):
        self.x = x
        self.y = y
        self.label = label


class Node:
    def __init__(self, name):
        self.name = name
        self.peer = None
        self.data = None


def make_listener(i):
    buf = bytearray(4096)

    def on_event(event):
        return len(buf) + event + i

    return on_event


def producer():
    buf = bytearray(1 << 20)
    yield 1
    yield len(buf)


def build(n_cache=10000, n_listeners=100, n_rows=100000, n_points=1000):
    global REPORT, GEN, CYCLE
    for i in range(n_cache):
        key = f"user:{i}"
        CACHE[key] = Session(key, (b"%08d" % i) * 128)
    for i in range(n_listeners):
        LISTENERS.append(make_listener(i))
    REPORT = Report()
    REPORT.rows = [float(i) + 0.5 for i in range(n_rows)]
    for i in range(n_points):
        POINTS.append(Point(i + 1000, i + 2000, f"point-{i}"))
    GEN = producer()
    next(GEN)
    a, b = Node("a"), Node("b")
    a.peer, b.peer = b, a
    a.data = bytes(50000)
    CYCLE = a
    CONFIG["api_token"] = "plain-words-but-secret"
    CONFIG["endpoint"] = "https://example.com/api"
    CONFIG["note"] = "sk-abcdefghijklmnopqrstuvwx0123"
    CONFIG["greeting"] = "hello world"


def truths():
    """Retained bytes per holder, computed from what build() made."""
    size = sys.getsizeof
    cache = size(CACHE) + sum(size(k) + size(v) + size(v.payload) for k, v in CACHE.items())
    listeners = size(LISTENERS)
    for fn in LISTENERS:
        listeners += size(fn) + size(fn.__closure__)
        for cell in fn.__closure__:
            listeners += size(cell) + size(cell.cell_contents)
    report = size(REPORT) + size(REPORT.rows) + sum(size(x) for x in REPORT.rows)
    # REPORT.title is an interned constant shared with the code object: not retained.
    points = size(POINTS) + sum(size(p) + size(p.label) for p in POINTS)
    # x and y are ints above the small-int cache, one object each
    points += sum(size(p.x) + size(p.y) for p in POINTS)
    gen = size(GEN) + size(GEN.gi_frame.f_locals["buf"])
    cycle = size(CYCLE) + size(CYCLE.data) + size(CYCLE.peer)
    return {
        "CACHE": {"retained": cache, "count": len(CACHE),
                  "payload_size": size(next(iter(CACHE.values())).payload)},
        "LISTENERS": {"retained": listeners, "count": len(LISTENERS)},
        "REPORT": {"retained": report, "rows": len(REPORT.rows),
                   "row_size": sys.getsizeof(REPORT.rows[0])},  # 24; 40 free-threaded
        "POINTS": {"retained": points, "count": len(POINTS)},
        "GEN": {"retained": gen, "buf_size": size(GEN.gi_frame.f_locals["buf"])},
        "CYCLE": {"retained": cycle},
    }
