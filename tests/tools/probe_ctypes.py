#!/usr/bin/env python3
"""Generate, or check, the layout tables of module-private C types that scry's heap walker and
`stacks --async` read (src/cpython/ctype_layout_<module>.c): collections.deque and defaultdict,
_io.BytesIO, array.array, numpy.ndarray and numpy.dtype, _asyncio.Future and Task.

No number here comes from a list: each offset is found in the live module of the interpreter run.
PROBE (below) runs inside that interpreter, builds objects whose referents and scalar values it
knows (a deque of known items and length, an array of a known allocation, an ndarray of known
nd/shape/flags, futures and tasks with known loop, callbacks, result, name, coroutine...), reads
each object's bytes (ctypes.string_at(id(obj), tp_basicsize)) and takes the one word that holds
id(referent) or the known value, checked on two objects that differ in it where one could match
by chance. The deque's block (its size, where its items and links lie) is found by walking a
deque of known content block to block. A module that does not import (numpy) is said so, and
its rows are kept as they are in the file.

Rows are per interpreter build: (minor, free-threaded). A free-threaded build's rows hold the
offsets of its own objects (32-byte header).

Usage:
  probe_ctypes.py [--python EXE ...]   (re)write the rows of these interpreters in every table
                                       (default: every interpreter tests/e2e/pythons.py finds,
                                       3.11+, and the free-threaded builds); other rows are kept
  probe_ctypes.py --check EXE          exit 1 (printing a diff) unless the committed rows of
                                       EXE's build are what EXE's modules show
tests/e2e/test_ctype_layouts.py runs the check for every installed interpreter.
"""

import argparse
import difflib
import json
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
OUT_DIR = REPO / "src" / "cpython"
GENERATOR = "tests/tools/probe_ctypes.py"

# Runs in the probed interpreter; prints one JSON object {"python": ..., "ft": ..., "rows":
# {table: {member: value}}, "missing": {table: reason}}.
PROBE = r'''
import array, asyncio, collections, contextvars, ctypes, gc, io, json, struct, sys, sysconfig

FT = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
HEAD = 32 if FT else 16
out = {"python": "%d.%d.%d" % sys.version_info[:3], "minor": sys.version_info[1], "ft": FT,
       "rows": {}, "missing": {}}


class ProbeError(Exception):
    pass


def raw(o, n=None):
    return ctypes.string_at(id(o), n or type(o).__basicsize__)


MEM = open("/proc/self/mem", "rb", buffering=0)


def at(addr, n):
    """n bytes at addr; zeros where nothing is mapped (a candidate word that is no pointer)."""
    try:
        MEM.seek(addr)
        b = MEM.read(n)
    except (OSError, ValueError, OverflowError):
        b = b""
    return b + bytes(n - len(b))


def where(buf, value, width=8, start=HEAD):
    """Offsets (from start on, aligned to width) of the words of buf equal to value."""
    fmt = {8: "<q", 4: "<i"}[width]
    return {o for o in range(start, len(buf) - width + 1, width)
            if struct.unpack_from(fmt, buf, o)[0] == value}


def word(buf, off):
    return struct.unpack_from("<Q", buf, off)[0]


def one(what, *sets):
    s = set.intersection(*sets)
    if len(s) != 1:
        raise ProbeError("%s: %d candidates %s" % (what, len(s), sorted(s)))
    return s.pop()


def ref(o, r):
    return where(raw(o), id(r))


def pointers(buf, start=HEAD):
    """Offsets of the words that can be heap pointers (aligned, in user space)."""
    return [o for o in range(start, len(buf) - 7, 8)
            if 4096 < word(buf, o) < (1 << 47) and word(buf, o) % 8 == 0]


def probe(table, fn):
    try:
        out["rows"][table] = fn()
    except ImportError as e:
        out["missing"][table] = "not installed (%s)" % e
    except ProbeError as e:
        out["missing"][table] = "probe failed: %s" % e


def deque_row():
    items = [object() for _ in range(300)]
    d1, d2 = collections.deque(), collections.deque()
    for x in items[:5]:
        d1.appendleft(x)
    for x in items[:9]:
        d2.appendleft(x)
    for x in items[9:12]:
        d2.append(x)
    d2.pop()
    d2.pop()  # len 10; the mutation count (state) 14
    r = {"basicsize": collections.deque.__basicsize__}
    b1, b2 = raw(d1), raw(d2)
    r["len"] = one("deque len", where(b1, 5), where(b2, 10))
    # appendleft moves leftindex down by one: 4 more in d2 than in d1
    r["leftindex"] = one("deque leftindex", {
        o for o in range(HEAD, len(b1), 8)
        if word(b1, o) < 64 and word(b1, o) - word(b2, o) == 4})
    d = collections.deque(items)
    b = raw(d)
    left = word(b, r["leftindex"])
    # leftblock: the pointer to the block holding items[0] at data + 8 * leftindex
    found = {}
    for o in pointers(b):
        blk = at(word(b, o), 1024)
        # a block's items start near its start (the next block may follow it in memory); a
        # recycled block may hold a stale copy of an item where no item is
        hits = {h - 8 * left for h in where(blk, id(items[0]), start=0)
                if h - 8 * left < 64 and word(blk, h + 8) == id(items[1])}
        if len(hits) == 1:
            found[o] = hits.pop()
    r["leftblock"] = one("deque leftblock", set(found))
    data = found[r["leftblock"]]
    blk0 = word(b, r["leftblock"])
    mem = at(blk0, 1024)
    n = 0
    while word(mem, data + 8 * (left + n)) == id(items[n]):
        n += 1
    slots = left + n
    nxt = data + 8 * slots
    blk1 = word(mem, nxt)
    if word(at(blk1, data + 8), data) != id(items[n]):
        raise ProbeError("deque: no link to the next block after the items")
    prev = where(at(blk1, nxt), blk0, start=0)
    if prev != {0} or data != 8:
        raise ProbeError("deque: the block's back link is not first (%s)" % sorted(prev))
    r.update(block_items=data, block_slots=slots, block_next=nxt, block_size=nxt + 8)
    return r


def defaultdict_row():
    f = lambda: None  # noqa: E731
    d = collections.defaultdict(f)
    return {"basicsize": collections.defaultdict.__basicsize__,
            "default_factory": one("default_factory", ref(d, f))}


def bytesio_row():
    init = bytes(range(256)) * 4
    return {"basicsize": io.BytesIO.__basicsize__, "buf": one("BytesIO buf", ref(io.BytesIO(init), init))}


def array_row():
    r = {"basicsize": array.array.__basicsize__}
    a1, a2 = array.array("d", range(1000)), array.array("h", range(3000))
    r["ob_item"] = one("array ob_item", where(raw(a1), a1.buffer_info()[0]),
                       where(raw(a2), a2.buffer_info()[0]))
    alloc = lambda a: (a.__sizeof__() - array.array.__basicsize__) // a.itemsize  # noqa: E731
    r["allocated"] = one("array allocated", where(raw(a1), alloc(a1)), where(raw(a2), alloc(a2)))
    # ob_descr: a static struct that starts with the typecode and holds the item size
    descr = set()
    for o in pointers(raw(a1)):
        p1, p2 = word(raw(a1), o), word(raw(a2), o)
        if p1 != p2 and o != r["ob_item"] and at(p1, 1) == b"d" and at(p2, 1) == b"h":
            descr.add(o)
    r["ob_descr"] = one("array ob_descr", descr)
    d1, d2 = at(word(raw(a1), r["ob_descr"]), 16), at(word(raw(a2), r["ob_descr"]), 16)
    r["descr_itemsize"] = one("arraydescr itemsize", where(d1, 8, 4, 0), where(d2, 2, 4, 0))
    return r


def numpy_rows():
    import numpy as np
    import datetime
    a = np.zeros((3, 5, 7), dtype="f8")
    v = a[1:]
    r = {"basicsize": np.ndarray.__basicsize__, "numpy": np.__version__}
    ba, bv = raw(a), raw(v)
    r["data"] = one("ndarray data", where(ba, a.ctypes.data), where(bv, v.ctypes.data))
    r["nd"] = one("ndarray nd", where(ba, 3, 4), where(raw(a[0]), 2, 4))
    dims = {o for o in pointers(ba) if struct.unpack("<3q", at(word(ba, o), 24)) == a.shape}
    r["dimensions"] = one("ndarray dimensions", dims)
    r["base"] = one("ndarray base", ref(v, a))
    r["descr"] = one("ndarray descr", ref(a, a.dtype), ref(np.zeros(3, "i2"), np.dtype("i2")))
    r["flags"] = one("ndarray flags", where(ba, a.flags.num, 4), where(bv, v.flags.num, 4))
    r["owndata"] = a.flags.num & ~v.flags.num
    if bin(r["owndata"]).count("1") != 1:
        raise ProbeError("ndarray OWNDATA: %#x" % r["owndata"])
    capsule = id(type(datetime.datetime_CAPI))
    r["mem_handler"] = one("ndarray mem_handler", {
        o for o in pointers(ba) if word(at(word(ba, o) + HEAD - 8, 8), 0) == capsule})
    d = {"dtype_basicsize": np.dtype.__basicsize__, "numpy": np.__version__,
         "numpy_major": int(np.__version__.split(".")[0])}
    f8, s = np.dtype("f8"), np.dtype("S123")
    d["type_num"] = one("dtype type_num", where(raw(f8), f8.num, 4), where(raw(s), s.num, 4))
    d["object_type_num"] = np.dtype(object).num
    w = 8 if d["numpy_major"] >= 2 else 4
    d["elsize"] = one("dtype elsize", where(raw(f8), 8, w), where(raw(s), 123, w))
    d["elsize_bytes"] = w
    return r, d


def odict_row():
    r = {"basicsize": collections.OrderedDict.__basicsize__}
    ods = [collections.OrderedDict((object(), i) for i in range(n + 3)) for n in (5, 40)]
    for od in ods:  # 3 fewer items than inserts: the length is not the mutation count
        for _ in range(3):
            od.popitem()
    bs = [raw(od) for od in ods]
    r["used"] = one("OrderedDict used", where(bs[0], 5), where(bs[1], 40))
    # __sizeof__ = the dict's + a pointer per slot of the fast-node index + a node per item
    extra = [od.__sizeof__() - dict.__sizeof__(od) for od in ods]
    cands = {}
    for o in range(HEAD, len(bs[0]) - 7, 8):
        w = [word(b, o) for b in bs]
        if all(0 < x < 1 << 20 and (e - 8 * x) > 0 and (e - 8 * x) % n == 0
               for x, e, n in zip(w, extra, (5, 40))):
            sizes = {(e - 8 * x) // n for x, e, n in zip(w, extra, (5, 40))}
            if len(sizes) == 1:
                cands[o] = sizes.pop()
    r["fast_nodes_size"] = one("OrderedDict fast_nodes_size", set(cands))
    r["node_size"] = cands[r["fast_nodes_size"]]
    # od_fast_nodes: slots of node pointers; a node starts with its key
    keys = {id(k) for k in ods[1]}
    nodes = set()
    for o in pointers(bs[1]):
        n = word(bs[1], r["fast_nodes_size"])
        slots = [word(at(word(bs[1], o), 8 * n), 8 * i) for i in range(n)]
        if sum(1 for q in slots if q and 4096 < q < 1 << 47 and word(at(q, 8), 0) in keys) == 40:
            nodes.add(o)
    r["fast_nodes"] = one("OrderedDict fast_nodes", nodes)
    return r


def points_to(b, typ):
    """Offsets of the words of b that point to an object of type typ."""
    return {o for o in pointers(b) if word(at(word(b, o) + HEAD - 8, 8), 0) == id(typ)}


def stringio_row():
    r = {"basicsize": io.StringIO.__basicsize__}
    sios = []
    for n in (1001, 3000):
        s = io.StringIO()
        s.write("\u20ac" * n)
        s.seek(0)
        s.read(1)  # realized: the text in a Py_UCS4 buffer
        sios.append((s, n))
    s = io.StringIO()  # realized, then grown: its buffer is larger than what made it
    s.write("\u20ac" * 1001)
    s.seek(0)
    s.read(1)
    s.seek(0, 2)
    s.write("\u20ac" * 5000)
    sios.append((s, 6001))
    ucs4 = "\u20ac\u20ac".encode("utf-32-le")
    r["buf"] = one("StringIO buf", *[{o for o in pointers(raw(s)) if at(word(raw(s), o), 8) == ucs4}
                                     for s, n in sios])
    r["buf_size"] = one("StringIO buf_size", *[
        {o for o in range(HEAD, len(raw(s)) - 7, 8) if n < word(raw(s), o) <= 2 * n + 16}
        for s, n in sios])
    dec = io.StringIO(newline=None)
    nodec = io.StringIO(newline="\n")  # no decoder: what else looks like one is not it
    r["decoder"] = one("StringIO decoder", points_to(raw(dec), io.IncrementalNewlineDecoder) -
                       points_to(raw(nodec), io.IncrementalNewlineDecoder))
    r["readnl"] = one("StringIO readnl", ref(io.StringIO(newline="\n"), "\n"))
    both = ref(io.StringIO(newline="\r"), "\r")  # readnl and writenl, the same string
    r["writenl"] = one("StringIO writenl", both - {r["readnl"]})
    acc = io.StringIO(newline=None)
    acc.write("abc" * 10)
    known = {r["buf"], r["decoder"]}
    if sys.version_info < (3, 12):  # _PyAccu: a list of small strings, joined into large
        r["accu_small"] = one("StringIO accu.small", points_to(raw(acc), list) - known)
        for _ in range(100001):
            acc.write("x")
        r["accu_large"] = one("StringIO accu.large",
                              points_to(raw(acc), list) - known - {r["accu_small"]})
    elif sys.version_info < (3, 14):  # a _PyUnicodeWriter in the object: its buffer, a str
        r["writer_buffer"] = one("StringIO writer.buffer", points_to(raw(acc), str) - known)
    return r


def buffered_row():
    import tempfile, os
    r = {"basicsize": io.BufferedReader.__basicsize__}
    if not io.BufferedReader.__basicsize__ == io.BufferedWriter.__basicsize__ == \
            io.BufferedRandom.__basicsize__:
        raise ProbeError("the buffered files differ in size")
    fd, path = tempfile.mkstemp()
    content = bytes(range(7, 250)) * 40
    os.write(fd, content)
    os.close(fd)
    try:
        with open(path, "rb", buffering=12345) as f:
            f.read(1)
            b = raw(f)
            r["raw"] = one("Buffered raw", ref(f, f.raw))
            r["buffer_size"] = one("Buffered buffer_size", where(b, f.__sizeof__() - r["basicsize"]),
                                   where(b, 12345))
            r["buffer"] = one("Buffered buffer", {o for o in pointers(b)
                                                  if at(word(b, o), 64) == content[:64]})
    finally:
        os.unlink(path)
    return r


def itertools_rows():
    import itertools

    class Iterable:
        def __init__(self, it):
            self.it = it

        def __iter__(self):
            return self.it

    first = iter([1, 2, 3])
    src = iter([Iterable(first)])
    c = itertools.chain.from_iterable(src)
    next(c)
    chain = {"basicsize": itertools.chain.__basicsize__, "source": one("chain source", ref(c, src)),
             "active": one("chain active", ref(c, first))}
    it = iter([1, 2, 3])
    cy = itertools.cycle(it)
    next(cy)
    saved = [x for x in gc.get_referents(cy) if type(x) is list]
    cycle = {"basicsize": itertools.cycle.__basicsize__, "it": one("cycle it", ref(cy, it)),
             "saved": one("cycle saved", *[ref(cy, x) for x in saved[:1]] or [set()])}
    start, step = 3 ** 50, 5 ** 40
    cn = itertools.count(start, step)
    count = {"basicsize": itertools.count.__basicsize__,
             "long_cnt": one("count long_cnt", ref(cn, start)),
             "long_step": one("count long_step", ref(cn, step))}
    return chain, cycle, count


def lru_rows():
    import functools
    key, res = 3 ** 60, object()

    def fn(k):
        return res

    w = functools.lru_cache(maxsize=10)(fn)
    w(key)
    refs = gc.get_referents(w)
    caches = [x for x in refs if type(x) is dict and key in x]
    if len(caches) != 1:
        raise ProbeError("lru_cache: %d caches" % len(caches))
    cache = caches[0]
    link = cache[key]
    kinds = {"kwd_mark": [x for x in refs if type(x) is object and x is not res],
             "lru_list_elem_type": [x for x in refs if x is type(link)],
             "cache_info_type": [x for x in refs if isinstance(x, type) and
                                 x.__name__ == "CacheInfo"]}
    r = {"basicsize": type(w).__basicsize__, "cache": one("lru cache", ref(w, cache)),
         "wrapped": one("lru __wrapped__", ref(w, fn))}
    for k, xs in kinds.items():
        r[k] = one("lru " + k, *[ref(w, x) for x in xs[:1]] or [set()])
    e = {"basicsize": type(link).__basicsize__, "key": one("lru link key", ref(link, key)),
         "result": one("lru link result", ref(link, res))}
    return r, e


def partial_row():
    import functools
    p = functools.partial(Cb(), 1, 2, k=3)
    return {"basicsize": functools.partial.__basicsize__, "fn": one("partial func", ref(p, p.func)),
            "args": one("partial args", ref(p, p.args)),
            "kw": one("partial keywords", ref(p, p.keywords))}


class Cb:
    def __call__(self, fut):
        pass


def asyncio_rows():
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    F = asyncio.Future
    if F.__module__ != "_asyncio":
        raise ProbeError("asyncio.Future is not _asyncio's")
    f = {"basicsize": F.__basicsize__}
    pend, cb0, cb1 = loop.create_future(), Cb(), Cb()
    ctx = contextvars.copy_context()
    pend.add_done_callback(cb0, context=ctx)
    f["loop"] = one("Future loop", ref(pend, loop))
    f["callback0"] = one("Future callback0", ref(pend, cb0))
    f["context0"] = one("Future context0", ref(pend, ctx))
    pend.add_done_callback(cb1)
    lists = [x for x in gc.get_referents(pend) if type(x) is list]
    f["callbacks"] = one("Future callbacks", *[ref(pend, x) for x in lists[:1]] or [set()])
    done, res = loop.create_future(), object()
    done.set_result(res)
    f["result"] = one("Future result", ref(done, res))
    exc = None
    try:
        raise ValueError("probe")
    except ValueError as e:
        exc = e
    failed = loop.create_future()
    failed.set_exception(exc)
    f["exception"] = one("Future exception", ref(failed, exc))
    f["exception_tb"] = one("Future exception_tb", ref(failed, exc.__traceback__))
    failed.exception()  # retrieved: no "never retrieved" message at exit
    cancelled, msg = loop.create_future(), "probe cancel message"
    cancelled.cancel(msg=msg)
    f["cancel_msg"] = one("Future cancel_msg", ref(cancelled, msg))
    f["state"] = one("Future state", where(raw(pend), 0, 4), where(raw(done), 2, 4),
                     where(raw(cancelled), 1, 4))
    loop.set_debug(True)
    traced = loop.create_future()
    loop.set_debug(False)
    f["source_tb"] = one("Future source_tb", ref(traced, traced._source_traceback))

    t = {"basicsize": asyncio.Task.__basicsize__}
    seen = {}

    async def inner():
        await asyncio.sleep(0.001)

    async def outer():
        b = loop.create_task(inner())
        seen["inner"] = b
        await b

    async def watch():
        await asyncio.sleep(0)
        a, b = seen["outer"], seen["inner"]
        seen["fut_waiter"] = ref(a, b)
        if sys.version_info >= (3, 14):
            seen["awaited_by"] = ref(b, a)

    async def sleeper():
        await asyncio.sleep(10)

    name, tctx = "probe task name", contextvars.copy_context()
    coro = outer()
    a = loop.create_task(coro, name=name, context=tctx)
    seen["outer"] = a
    t["coro"] = one("Task coro", ref(a, coro))
    t["name"] = one("Task name", ref(a, a.get_name()))
    t["context"] = one("Task context", ref(a, tctx))
    loop.run_until_complete(asyncio.gather(a, watch()))
    t["fut_waiter"] = one("Task fut_waiter", seen["fut_waiter"])
    if "awaited_by" in seen:
        f["awaited_by"] = one("Future awaited_by", seen["awaited_by"])
    # cancelled_exc: kept by a task whose coroutine ended with CancelledError, until read
    s = loop.create_task(sleeper())
    loop.run_until_complete(asyncio.sleep(0))
    s.cancel()
    loop.run_until_complete(asyncio.sleep(0.001))  # s ends; its result is never asked for
    if not s.cancelled():
        raise ProbeError("the cancelled task did not end")
    errs = [x for x in gc.get_referents(s) if isinstance(x, asyncio.CancelledError)]
    f["cancelled_exc"] = one("Future cancelled_exc", *[ref(s, x) for x in errs[:1]] or [set()])
    if f["loop"] not in ref(a, loop):
        raise ProbeError("a Task does not start with a Future's fields")
    loop.close()
    return f, dict(f, **t)  # a Task starts with a Future's fields (FutureObj_HEAD)


probe("collections_deque", deque_row)
probe("collections_defaultdict", defaultdict_row)
probe("collections_odict", odict_row)
probe("io_bytesio", bytesio_row)
probe("io_buffered", buffered_row)
probe("io_stringio", stringio_row)
probe("functools_partial", partial_row)
try:
    out["rows"]["functools_lru_wrapper"], out["rows"]["functools_lru_elem"] = lru_rows()
except ProbeError as e:
    out["missing"]["functools_lru_wrapper"] = out["missing"]["functools_lru_elem"] = \
        "probe failed: %s" % e
try:
    rows = itertools_rows()
    for t, row in zip(("itertools_chain", "itertools_cycle", "itertools_count"), rows):
        out["rows"][t] = row
except ProbeError as e:
    for t in ("itertools_chain", "itertools_cycle", "itertools_count"):
        out["missing"][t] = "probe failed: %s" % e
probe("array_array", array_row)
try:
    nd, dt = numpy_rows()
    out["rows"]["numpy_ndarray"], out["rows"]["numpy_dtype"] = nd, dt
except ImportError as e:
    out["missing"]["numpy_ndarray"] = out["missing"]["numpy_dtype"] = "not installed (%s)" % e
except ProbeError as e:
    out["missing"]["numpy_ndarray"] = out["missing"]["numpy_dtype"] = "probe failed: %s" % e
try:
    fr, tr = asyncio_rows()
    out["rows"]["asyncio_future"], out["rows"]["asyncio_task"] = fr, tr
except ProbeError as e:
    out["missing"]["asyncio_future"] = out["missing"]["asyncio_task"] = "probe failed: %s" % e
print(json.dumps(out))
'''

ASYNCIO = ["basicsize", "loop", "callback0", "context0", "callbacks", "exception", "exception_tb",
           "result", "source_tb", "cancel_msg", "state", "cancelled_exc", "awaited_by", "fut_waiter",
           "coro", "name", "context"]

# One generated file per module; each table's C struct (ctype_layouts.h) and its members in order.
FILES = {
    "collections": [
        ("collections_deque", "ctl_deque", ["basicsize", "len", "leftblock", "leftindex",
                                            "block_size", "block_items", "block_slots",
                                            "block_next"]),
        ("collections_defaultdict", "ctl_defaultdict", ["basicsize", "default_factory"]),
        ("collections_odict", "ctl_odict", ["basicsize", "used", "fast_nodes", "fast_nodes_size",
                                            "node_size"]),
    ],
    "io": [("io_bytesio", "ctl_bytesio", ["basicsize", "buf"]),
           ("io_buffered", "ctl_buffered", ["basicsize", "raw", "buffer", "buffer_size"]),
           ("io_stringio", "ctl_stringio", ["basicsize", "buf", "buf_size", "accu_large",
                                            "accu_small", "writer_buffer", "decoder", "readnl",
                                            "writenl"])],
    "functools": [("functools_partial", "ctl_partial", ["basicsize", "fn", "args", "kw"]),
                  ("functools_lru_wrapper", "ctl_lru_wrapper",
                   ["basicsize", "cache", "wrapped", "kwd_mark", "lru_list_elem_type",
                    "cache_info_type"]),
                  ("functools_lru_elem", "ctl_lru_elem", ["basicsize", "key", "result"])],
    "itertools": [("itertools_chain", "ctl_chain", ["basicsize", "source", "active"]),
                  ("itertools_cycle", "ctl_cycle", ["basicsize", "it", "saved"]),
                  ("itertools_count", "ctl_count", ["basicsize", "long_cnt", "long_step"])],
    "array": [("array_array", "ctl_array", ["basicsize", "ob_item", "allocated", "ob_descr",
                                            "descr_itemsize"])],
    "numpy": [
        ("numpy_ndarray", "ctl_ndarray", ["basicsize", "data", "nd", "dimensions", "base",
                                          "descr", "flags", "mem_handler", "owndata"]),
        ("numpy_dtype", "ctl_dtype", ["numpy_major", "dtype_basicsize", "type_num", "elsize",
                                      "elsize_bytes", "object_type_num"]),
    ],
    "asyncio": [("asyncio_future", "ctl_future", ASYNCIO), ("asyncio_task", "ctl_future", ASYNCIO)],
}

ROW = re.compile(r"^    \{(\d+), (true|false), .*\},$")


def file_path(module):
    return OUT_DIR / f"ctype_layout_{module}.c"


def run_probe(exe):
    cp = subprocess.run([exe, "-c", PROBE], capture_output=True, text=True, timeout=60)
    if cp.returncode != 0:
        raise SystemExit(f"{exe}: the probe failed (rc {cp.returncode}):\n{cp.stderr}")
    return json.loads(cp.stdout)


def row_line(minor, ft, members, values, note):
    nums = ", ".join(str(values.get(m, 0)) for m in members)
    return f"    /* {note} */\n    {{{minor}, {'true' if ft else 'false'}, {nums}}},"


def probed_lines(p):
    """{table: (key, line)} for what the probe of one interpreter found."""
    lines = {}
    key = (p["minor"], p["ft"])
    for module, tables in FILES.items():
        for table, _struct, members in tables:
            if table in p["rows"]:
                values = p["rows"][table]
                note = p["python"] + ("t" if p["ft"] else "")
                if "numpy" in values:
                    note += ", numpy " + values["numpy"]
                lines[table] = (key, row_line(key[0], key[1], members, values, note))
    return lines


def existing_rows(module):
    """{table: {key: line}} of the committed file."""
    rows, table = {}, None
    path = file_path(module)
    if not path.exists():
        return rows
    prev = ""
    for line in path.read_text().splitlines():
        m = re.match(r"^const struct \w+ (\w+)\[\] = \{$", line)
        if m:
            table = m.group(1)[len("ctl_"):]
            rows[table] = {}
        m = ROW.match(line)
        if m and table:  # a row, after its comment
            rows[table][(int(m.group(1)), m.group(2) == "true")] = prev + "\n" + line
        prev = line
    return rows


# Rows no installed interpreter can reproduce, kept with the versions they were checked on.
KEPT = {
    # numpy 1.x's descr: elsize an int at 32; the dtype type's basicsize 96 (numpy 1.26, 3.11/3.12)
    "numpy_dtype": [row_line(0, False, FILES["numpy"][1][2],
                             {"numpy_major": 1, "dtype_basicsize": 96, "type_num": 28,
                              "elsize": 32, "elsize_bytes": 4, "object_type_num": 17},
                             "numpy 1.26 (any Python; kept, not probed here)")],
}


def render(module, rows):
    out = [f"/* Generated by {GENERATOR} from the live modules: do not edit. */",
           f"/* Layouts of {module}'s C types, one row per interpreter build (minor, free-threaded),",
           " * each found by probing objects of known content in that interpreter. Regenerate",
           " * rather than edit; tests/e2e/test_ctype_layouts.py checks it. */",
           '#include "cpython/ctype_layouts.h"', ""]
    for table, struct, _members in FILES[module]:
        out.append(f"const struct {struct} ctl_{table}[] = {{")
        for key in sorted(rows.get(table, {})):
            out.append(rows[table][key])
        for line in KEPT.get(table, []):
            if line not in out:
                out.append(line)
        out.append("};")
        out.append(f"const size_t ctl_{table}_count =")
        out.append(f"    sizeof(ctl_{table}) / sizeof(ctl_{table}[0]);")
        out.append("")
    return "\n".join(out[:-1]) + "\n"


def default_pythons():
    sys.path.insert(0, str(REPO / "tests" / "e2e"))
    from pythons import find_free_threaded, find_pythons
    found = [exe for v, exe in find_pythons().items() if tuple(map(int, v.split("."))) >= (3, 11)]
    return found + list(find_free_threaded().values())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--python", action="append", default=[])
    ap.add_argument("--check", metavar="EXE")
    args = ap.parse_args()
    if args.check:
        p = run_probe(args.check)
        found, bad, checked = probed_lines(p), [], 0
        for t, why in sorted(p["missing"].items()):
            print(f"{p['python']}: {t}: {why}")
            if not why.startswith("not installed"):
                bad.append(f"{t}: {why}")
        for module, tables in FILES.items():
            have = existing_rows(module)
            for table, _s, _m in tables:
                if table not in found:
                    continue
                key, line = found[table]
                old = have.get(table, {}).get(key)
                checked += 1
                # the numbers; the comment (the patch release probed) may differ
                row, old_row = line.split("\n")[-1], (old or "(no row)").split("\n")[-1]
                if old_row != row:
                    bad.append(f"{file_path(module).relative_to(REPO)}: ctl_{table} ({key})\n" +
                               "\n".join(difflib.unified_diff([old_row], [row], "committed",
                                                              "probed", lineterm="")))
        if bad:
            print("\n".join(bad))
            return 1
        print(f"OK {p['python']}{'t' if p['ft'] else ''}: {checked} rows")
        return 0
    exes = args.python or default_pythons()
    merged = {m: existing_rows(m) for m in FILES}
    for exe in exes:
        p = run_probe(exe)
        for t, why in p["missing"].items():
            print(f"{p['python']}{'t' if p['ft'] else ''}: {t}: {why} (rows kept)")
        found = probed_lines(p)
        for module, tables in FILES.items():
            for table, _s, _m in tables:
                if table in found:
                    key, line = found[table]
                    merged[module].setdefault(table, {})[key] = line
    for module in FILES:
        file_path(module).write_text(render(module, merged[module]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
