"""End-to-end tests of `scry dump` against tests/targets/heap_fixtures.py, by pid and from gcore
cores, on every installed 3.11-3.15.

Ground truth comes from the target: its own GC count (len(gc.get_objects()) plus the frozen
objects, taken when nothing else will be allocated), the id() of its holders, sys.getsizeof of
one object of many kinds, and the retained bytes of each leak computed from what it built. The
dump's graph is read from `--graph` (JSON lines written from the same walk that feeds the
snapshot), and the snapshot itself is validated with `scry check`.
"""

import json
import os
import re
import subprocess
from collections import defaultdict, deque

import pytest

from conftest import Target, run_scry

FREE_THREADED = True  # 3.13t: objects found in its mimalloc heaps (heap_mimalloc.c)
FIXTURE = "heap_fixtures.py"
WEAK = 7


class Graph:
    """The walk as written by --graph: objects, edges (from, to, kind, label), roots."""

    def __init__(self, path):
        self.objects, self.out, self.roots, self.locations = {}, defaultdict(list), [], {}
        for line in open(path, encoding="utf-8"):
            d = json.loads(line)
            if "o" in d:
                assert d["o"] not in self.objects, f"object {d['o']:#x} reported twice"
                self.objects[d["o"]] = d
            elif "e" in d:
                self.out[d["e"]].append((d["to"], d["k"], d["l"]))
            elif "r" in d:
                self.roots.append((d["r"], d["l"]))
            else:
                self.locations[d["loc"]] = (d["file"], d["line"])

    def edge(self, src, label):
        """The target of the edge labelled `label` from src (exactly one)."""
        found = [to for to, _, lbl in self.out.get(src, []) if lbl == label]
        labels = sorted({lbl for _, _, lbl in self.out.get(src, [])})[:40]
        assert len(found) == 1, (f"{len(found)} edges {label!r} from "
                                 f"{self.describe(src)}; labels: {labels}")
        return found[0]

    def describe(self, addr):
        o = self.objects.get(addr)
        return f"{addr:#x} ({o['t'] if o else 'not an object'})"

    def reachable(self, starts, skip=None):
        seen, todo = set(), deque(a for a in starts if a != skip)
        seen.update(todo)
        while todo:
            a = todo.popleft()
            for to, kind, _ in self.out.get(a, ()):
                if kind != WEAK and to != skip and to not in seen:
                    seen.add(to)
                    todo.append(to)
        return seen

    def retained(self, holder):
        """Bytes only `holder` keeps alive: reachable from it, not from the roots without it."""
        root_addrs = [a for a, _ in self.roots]
        others = self.reachable(root_addrs, skip=holder)
        mine = self.reachable([holder])
        return sum(self.objects[a]["s"] for a in mine - others if a in self.objects), mine


def dump(target, tmp_path, extra=(), core=None, exe=None):
    out, graph = tmp_path / "app.heap", tmp_path / "graph.jsonl"
    args = ["dump", "-o", out, "--graph", graph, "--json"] + list(extra)
    args += ["--core", core] + (["--exe", exe] if exe else []) if core else ["--pid", target.pid]
    cp = run_scry(args, timeout=120)
    assert cp.returncode == 0, f"scry dump failed (rc {cp.returncode}):\n{cp.stdout}\n{cp.stderr}"
    doc = json.loads(cp.stdout)
    for key in ("objects", "edges", "roots", "bytes", "gc_tracked", "permanent", "walk_ms",
                "walk_cpu_ms", "rss_bytes", "output_bytes", "pid", "python_version"):
        assert key in doc, f"--json document lacks {key}: {doc}"
    assert doc["output_bytes"] == out.stat().st_size
    return doc, Graph(graph), out


def check_graph(ready, doc, g):
    """What must hold for the fixture whether it was dumped live or from a core."""
    addr = ready["addresses"]
    truths = ready["truths"]
    assert len(g.objects) == doc["objects"]
    tracked = sum(1 for o in g.objects.values() if o["f"] & 1)
    assert tracked == doc["gc_tracked"] == ready["gc_count"], (
        f"the walk found {tracked} GC-tracked objects, the target counts {ready['gc_count']}")
    assert not any("c" in o for o in g.objects.values()), "contents stored without being asked"

    # Roots: sys.modules and each module, the sys and builtins dicts, main()'s locals.
    labels = {lbl: a for a, lbl in g.roots}
    for want in ("sys.modules", "sys.__dict__", "builtins.__dict__", "sys.modules['heap_leaks']"):
        assert want in labels, f"no root {want!r}; roots: {sorted(labels)[:30]}"
    module = labels["sys.modules['heap_leaks']"]
    assert module == addr["heap_leaks_module"]
    local = [lbl for a, lbl in g.roots if a == addr["local_buf"]]
    assert any(lbl.startswith("Thread ") and f"main (" in lbl and
               lbl.endswith(f"heap_fixtures.py:{ready['main_line']}) .locals['local_buf']")
               for lbl in local), f"main()'s local is not a root as expected: {local}"

    # The cache: module -> __dict__ -> ['CACHE'] -> 10,000 sessions with 1 KiB payloads.
    mdict = g.edge(module, ".__dict__")
    cache = g.edge(mdict, "['CACHE']")
    assert cache == addr["CACHE"]
    assert g.objects[cache]["t"] == "builtins.dict"
    values = [(to, lbl) for to, kind, lbl in g.out[cache] if kind == 2]
    assert len(values) == truths["CACHE"]["count"] >= 10000
    assert all(lbl.startswith("[<str len=") for _, lbl in values), values[:3]
    assert {g.objects[to]["t"] for to, _ in values} == {"heap_leaks.Session"}
    session = addr["first_session"]
    assert g.edge(session, ".payload") == addr["first_payload"]
    assert g.objects[addr["first_payload"]]["s"] == truths["CACHE"]["payload_size"]
    assert g.objects[addr["first_payload"]]["t"] == "builtins.bytes"
    retained, below = g.retained(cache)
    assert len(below) >= 3 * 10000
    assert retained == pytest.approx(truths["CACHE"]["retained"], rel=0.05)

    # Listeners: closures holding buffers through their cells.
    fn = addr["first_listener"]
    cell = g.edge(fn, ".__closure__[0]")
    assert g.objects[cell]["t"] == "builtins.cell"
    buf = g.edge(cell, ".cell_contents")
    assert g.objects[buf]["t"] == "builtins.bytearray"
    assert g.edge(mdict, "['LISTENERS']") == addr["LISTENERS"]
    # A slots instance, an instance attribute holding a big list, a generator's local.
    point = addr["first_point"]
    assert g.objects[point]["t"] == "heap_leaks.Point"
    for slot in (".x", ".y", ".label"):
        g.edge(point, slot)
    rows = g.edge(addr["REPORT"], ".rows")
    assert len(g.out[rows]) == truths["REPORT"]["rows"]
    assert g.edge(addr["GEN"], ".locals['buf']") == addr["gen_buf"]
    assert g.objects[addr["gen_buf"]]["s"] == truths["GEN"]["buf_size"]
    peer = g.edge(addr["CYCLE"], ".peer")
    assert g.edge(peer, ".peer") == addr["CYCLE"]

    for name in ("LISTENERS", "REPORT", "POINTS", "GEN", "CYCLE"):
        got, _ = g.retained(addr[name])
        assert got == pytest.approx(truths[name]["retained"], rel=0.05), name

    # Shallow sizes are sys.getsizeof's.
    wrong = []
    for a, (kind, size) in ready["sizes"].items():
        o = g.objects.get(int(a))
        if o is None or o["s"] != size:
            wrong.append((kind, size, o and o["s"], o and o["t"]))
    assert not wrong, f"sizes differing from sys.getsizeof (kind, want, got, type): {wrong}"


def test_dump_pid(python_exe, start_target, tmp_path, scry):
    target = start_target(python_exe, FIXTURE)
    doc, g, out = dump(target, tmp_path)
    assert doc["pid"] == target.pid and doc["pause_ms"] > 0 and doc["rss_bytes"] > 0
    check_graph(target.ready, doc, g)
    # The snapshot is valid and holds what was walked.
    cp = run_scry(["check", "--json", out])
    assert cp.returncode == 0, cp.stdout + cp.stderr
    check = json.loads(cp.stdout)
    assert (check["objects"], check["edges"], check["roots"], check["shallow_bytes"]) == \
        (doc["objects"], doc["edges"], doc["roots"], doc["bytes"]), (check, doc)
    # The target was resumed and still works.
    rc, final = target.stop()
    assert rc == 0 and final["done"] is True


def test_dump_core(python_exe, start_target, make_core, tmp_path, scry):
    target = start_target(python_exe, FIXTURE)
    core = make_core(target.pid)
    doc, g, _ = dump(target, tmp_path, core=core)
    assert doc["source"] == "core" and doc["pause_ms"] is None
    check_graph(target.ready, doc, g)
    core.unlink()
    rc, final = target.stop()
    assert rc == 0 and final["done"] is True


def test_capture_contents(python_exe, start_target, tmp_path, scry):
    target = start_target(python_exe, FIXTURE)
    doc, g, _ = dump(target, tmp_path, extra=["--capture-contents", "--max-str", "64"])
    assert doc["capture_contents"] is True and doc["max_str"] == 64
    addr = target.ready["addresses"]
    config = addr["CONFIG"]
    content = {lbl: g.objects[to].get("c") for to, kind, lbl in g.out[config] if kind == 2}
    assert content["['api_token']"] == "<redacted>", content   # by its key
    assert content["['note']"] == "<redacted>", content        # by its shape (sk-...)
    assert content["['endpoint']"] == "https://example.com/api", content
    assert content["['greeting']"] == "hello world", content
    # Keys are shown, payloads are capped.
    assert g.edge(addr["CACHE"], "['user:0']") == addr["first_session"]
    assert len(g.objects[addr["first_payload"]]["c"]) == 64
    target.stop()


def test_dump_errors(start_target, spawn, tmp_path, scry, pythons):
    def error(args, code, status=1):
        cp = run_scry(["dump", "--json"] + [str(a) for a in args])
        assert cp.returncode == status, cp.stdout + cp.stderr
        assert json.loads(cp.stdout)["error"]["code"] == code, cp.stdout
        cp = run_scry(["dump"] + [str(a) for a in args])
        assert cp.returncode == status and f"[{code}]" in cp.stderr, cp.stderr

    out = tmp_path / "x.heap"
    sleeper = spawn(["sleep", "60"])
    error(["--pid", sleeper.pid, "-o", out], "not_python")
    bad = tmp_path / "bad.core"
    bad.write_bytes(os.urandom(4096))
    error(["--core", bad, "-o", out], "bad_core")
    dead = subprocess.Popen(["true"])
    dead.wait()
    error(["--pid", dead.pid, "-o", out], "no_such_process")
    error(["--pid", sleeper.pid], "usage", status=2)
    error(["--pid", sleeper.pid, "-o", out, "--max-str", "5"], "usage", status=2)
    assert not out.exists() and not list(tmp_path.glob("x.heap.tmp*")), "a failed dump left files"
    # A bad output path fails before the target is touched.
    exe = next((pythons[v] for v in ("3.12", "3.13", "3.11") if v in pythons), None)
    if exe:
        target = start_target(exe, FIXTURE)
        error(["--pid", target.pid, "-o", tmp_path / "no" / "such" / "dir.heap"], "io_error")
        rc, _ = target.stop()
        assert rc == 0


@pytest.mark.parametrize("source", ["pid", "core"])
def test_free_threaded_heaps(pythons, start_target, make_core, tmp_path, source):
    """3.13t, whose objects are found in its threads' mimalloc heaps (no GC lists): those built by
    threads still alive and by threads that exited (the last one's segment left in the
    interpreter's abandoned pool, which the walk reads: the debug log counts it), instances
    with a pre-header (managed dict) and without (__slots__), and gc.freeze()'s objects. The
    counts are the interpreter's own, exactly; each thread's list retains what it built."""
    exe = pythons.get("3.13t")
    if not exe:
        pytest.skip("Python 3.13t is not installed (scripts/install-pythons.sh builds it)")
    target = start_target(exe, "ft_threads.py")
    ready = target.ready
    out, graph = tmp_path / "ft.heap", tmp_path / "graph.jsonl"
    args = ["dump", "-o", out, "--graph", graph, "--json"]
    args += ["--core", make_core(target.pid)] if source == "core" else ["--pid", target.pid]
    cp = run_scry(args, timeout=120, env={**os.environ, "SCRY_LOG": "debug"})
    assert cp.returncode == 0, cp.stdout + cp.stderr
    doc, g = json.loads(cp.stdout), Graph(graph)
    assert doc["gc_tracked"] == ready["gc_count"], (doc["gc_tracked"], ready["gc_count"])
    assert doc["permanent"] == ready["frozen"] > 1000, (doc["permanent"], ready["frozen"])
    assert sum(1 for o in g.objects.values() if o["f"] & 1) == ready["gc_count"]
    types = defaultdict(int)
    for o in g.objects.values():
        types[o["t"]] += 1
    assert (types["__main__.Item"], types["__main__.Slot"]) == (ready["items"], ready["slots"])
    abandoned = [int(n) for n in re.findall(r"\((\d+) abandoned segments\)", cp.stderr)]
    assert abandoned and abandoned[0] >= 1, cp.stderr
    for name, (addr, n, retained) in ready["kept"].items():
        assert len([e for e in g.out[addr] if e[1] == 3]) == n, name
        got, _ = g.retained(addr)
        assert got == retained, (name, got, retained)


RESERVED = """
import json, mmap, os, sys
area = mmap.mmap(-1, 3 << 30, flags=mmap.MAP_PRIVATE)  # 3 GiB writable, one page touched
area[4096 * 1000] = 1
held = [bytes([i % 256]) * 1000 + str(i).encode() for i in range(2000)]
print(json.dumps({"ready": True, "pid": os.getpid(), "held": id(held),
                  "retained": sys.getsizeof(held) + sum(sys.getsizeof(b) for b in held)}),
      flush=True)
os.read(0, 1)
"""


PARTLY = """
import json, mmap, os
area = mmap.mmap(-1, 256 << 20, flags=mmap.MAP_PRIVATE)  # 256 MiB, one page of 16 touched
for off in range(0, 256 << 20, 65536):
    area[off] = 1
print(json.dumps({"ready": True, "pid": os.getpid()}), flush=True)
os.read(0, 1)
"""


def test_untouched_pages_are_not_copied(python_exe, tmp_path):
    """The pages of a copied block that the target never touched are left out of the copy and
    take no memory in scry: 256 MiB of blocks here, of which 16 MiB were touched. scry's peak
    RSS (its VmHWM, which it logs: wait4's ru_maxrss would count this test process's memory,
    which the child had before its exec) stays far below the blocks' size."""
    target = Target([python_exe, "-c", PARTLY], tmp_path / "target.stderr")
    try:
        target.next_json()
        cp = run_scry(["dump", "--pid", target.pid, "-o", tmp_path / "p.heap"], timeout=120,
                      env={**os.environ, "SCRY_LOG": "debug"})
        assert cp.returncode == 0, cp.stdout + cp.stderr
        peak = re.search(r"peak resident memory so far (\d+) KiB", cp.stderr)
        assert peak and int(peak.group(1)) < 128 << 10, cp.stderr
        left = re.search(r"bytes copied\); (\d+) untouched pages", cp.stderr)
        assert left and int(left.group(1)) >= 4096 * 15 - 32, cp.stderr
    finally:
        target.kill()


def test_reserved_memory_is_not_copied(python_exe, tmp_path):
    """Private anonymous memory that the target reserved but never touched (an allocator's
    arenas: mimalloc's on 3.13t, 3 GiB here, over the copy's 2 GiB cap) is not copied: the copy
    stays small, so the target is let go before the walk, and what the walk finds is the
    same."""
    target = Target([python_exe, "-c", RESERVED], tmp_path / "target.stderr")
    try:
        ready = target.next_json()
        out, graph = tmp_path / "r.heap", tmp_path / "graph.jsonl"
        cp = run_scry(["dump", "--pid", target.pid, "-o", out, "--graph", graph, "--json"],
                      timeout=120, env={**os.environ, "SCRY_LOG": "debug"})
        assert cp.returncode == 0, cp.stdout + cp.stderr
        copied = re.search(r"walking a copy of the writable memory \((\d+) bytes copied\)",
                           cp.stderr)
        assert copied and int(copied.group(1)) < 1 << 30, cp.stderr
        doc = json.loads(cp.stdout)
        assert doc["pause_ms"] < doc["walk_ms"], doc
        g = Graph(graph)
        assert len([e for e in g.out[ready["held"]] if e[1] == 3]) == 2000
        assert g.retained(ready["held"])[0] == ready["retained"]
    finally:
        target.kill()
