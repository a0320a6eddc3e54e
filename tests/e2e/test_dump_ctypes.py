"""End-to-end tests of the heap walker's C types, by pid and from a gcore core, on every installed
3.11-3.15: tests/targets/heap_ctypes.py holds a deque of 10 MB of bytes, a BytesIO of 30 MB, an
array.array of 16 MB and, where numpy and pandas import for that interpreter, a numpy array of
8 MB and a DataFrame of a million rows. `scry analyze` must name each as a top retainer, at its
global's path, with a retained size within 10% of what the target measures itself
(sys.getsizeof's deep total; the DataFrame: memory_usage(deep=True)). Shallow sizes follow
sys.getsizeof; the references of the smaller C containers are checked by id(); a map object
(no table in the walker) holds a list only through its C fields, found by the conservative scan
and marked inferred in the graph, the snapshot and query's retaining path.
"""

import json
import subprocess

import pytest

from conftest import run_scry

FREE_THREADED = True  # 3.13t: objects found in its mimalloc heaps (heap_mimalloc.c)

FIXTURE = "heap_ctypes.py"
MAIN = "sys.modules['__main__'].__dict__"
TYPES = {"DEQUE": "collections.deque", "BIO": "_io.BytesIO", "ARR": "array.array",
         "NP": "numpy.ndarray", "DF": "pandas.DataFrame", "MAPPED": "builtins.map"}


def scry_json(args):
    cp = run_scry(args + ["--json"], timeout=180)
    assert cp.returncode == 0, f"scry {' '.join(map(str, args))}: rc {cp.returncode}\n" \
                               f"{cp.stdout}\n{cp.stderr}"
    return json.loads(cp.stdout)


class Walk:
    """The dump's --graph: objects {addr: (type, size)}, edges {addr: [(to, kind, label,
    inferred)]}."""

    def __init__(self, path):
        self.objects, self.out = {}, {}
        for line in open(path, encoding="utf-8"):
            d = json.loads(line)
            if "o" in d:
                self.objects[d["o"]] = (d["t"], d["s"])
            elif "e" in d:
                self.out.setdefault(d["e"], []).append(
                    (d["to"], d["k"], d["l"], d.get("inferred", False)))

    def edges(self, src, label):
        return [e for e in self.out.get(src, []) if e[2] == label]


def dump(start_target, make_core, python_exe, tmp_path, source):
    target = start_target(python_exe, FIXTURE)
    heap, graph = tmp_path / "app.heap", tmp_path / "graph.jsonl"
    args = ["dump", "-o", heap, "--graph", graph]
    args += ["--pid", target.pid] if source == "pid" else ["--core", make_core(target.pid)]
    cp = run_scry(args, timeout=180)
    assert cp.returncode == 0, f"scry dump: rc {cp.returncode}\n{cp.stdout}\n{cp.stderr}"
    return target.ready, heap, Walk(graph)


def check_top_retainers(ready, heap, names, below=False):
    """Each name is a top retainer at its global's path (below: or the one object it passes all
    it retains on to, under that path), retaining the target's own total within 10%."""
    doc = scry_json(["analyze", heap, "--top", "40"])
    top = doc["top_retainers"]
    for name in names:
        path = f"{MAIN}['{name}']"
        rows = [t for t in top if t["path"] == path or below and t["path"].startswith(path + ".")]
        assert rows, f"{name} is not a top retainer; got {[(t['path'], t['type']) for t in top]}"
        row = rows[0]
        if not below:
            # pandas 2.3+ names the class pandas.DataFrame, older ones pandas.core.frame.DataFrame
            assert row["type"] == TYPES[name] or (
                name == "DF" and row["type"] == "pandas.core.frame.DataFrame"), row
            assert int(row["address"], 16) == ready["objects"][name][0]
        want = ready["deep"][name]
        assert row["retained"] == pytest.approx(want, rel=0.10), (name, row, want)


@pytest.mark.parametrize("source", ["pid", "core"])
def test_stdlib_containers(start_target, make_core, python_exe, tmp_path, source):
    ready, heap, g = dump(start_target, make_core, python_exe, tmp_path, source)
    objs = ready["objects"]
    check_top_retainers(ready, heap, ["DEQUE", "BIO", "ARR"])

    # Shallow sizes as sys.getsizeof, with the native memory each owns.
    for name in ("DEQUE", "ARR", "OD", "DD", "PART", "CHAIN", "CYCLED", "MAPPED", "FUT",
                 "cached", "FILE"):
        addr, size = objs[name]
        assert g.objects[addr][1] == size, (name, g.objects[addr], size)
    # BytesIO: its buffer is a bytes object of its own; together they make getsizeof.
    bio = objs["BIO"][0]
    (buf, _, _, inferred), = g.edges(bio, ".buf")
    assert not inferred and g.objects[buf][0] == "builtins.bytes"
    assert g.objects[buf][1] == objs["BIO.buf"][1]
    assert g.objects[bio][1] + g.objects[buf][1] == objs["BIO"][1]
    # StringIO: getsizeof leaves out its UCS-4 buffer (100,000 characters); the walker counts it.
    sio_size, sio_truth = g.objects[objs["SIO"][0]][1], objs["SIO"][1]
    assert 4 * 100000 <= sio_size - sio_truth <= 4 * 100000 * 1.25 + 64, (sio_size, sio_truth)

    # References read from the layouts, checked by id().
    for name, want in ready["refs"].items():
        if name.startswith("NP"):
            continue
        src = objs[name][0]
        for label, to in want.items():
            found = g.edges(src, label)
            assert [e[0] for e in found] == [to], (name, label, found, g.out.get(src))
            assert not found[0][3]
    deque_items = [e for e in g.out[objs["DEQUE"][0]] if e[1] == 3]
    assert len(deque_items) == 10000 and deque_items[-1][2] == "[9999]"
    assert objs["DEQUE[0]"][1] in (1033, 1049)  # 1000 bytes behind a 16- or 32-byte header
    assert all(g.objects[e[0]] == ("builtins.bytes", objs["DEQUE[0]"][1]) for e in deque_items)

    # The map object: its list is reached only through inferred references (map -> its tuple of
    # iterators -> list_iterator -> list). The map passes it all on to the list_iterator.
    check_top_retainers(ready, heap, ["MAPPED"], below=True)
    mapped = objs["MAPPED"][0]
    out = g.out[objs["MAPPED"][0]]
    assert any(inf and g.objects[to][0] == "builtins.tuple" for to, _, _, inf in out), out
    cp = run_scry(["check", "--json", heap])
    assert cp.returncode == 0, cp.stdout + cp.stderr
    doc = json.loads(cp.stdout)
    assert doc["inferred_edges"] > 0 and doc["format_version"] == "1.1"
    lists = [a for a, (t, s) in g.objects.items() if t == "builtins.list" and
             len([e for e in g.out.get(a, []) if e[1] == 3]) == 500]
    held = [a for a in lists if any(e[0] == a and e[3] for es in g.out.values() for e in es)]
    assert len(held) == 1, lists
    path = scry_json(["query", heap, "--retaining-path", hex(held[0])])["path"]
    assert any(h.get("label") == "['MAPPED']" for h in path), path
    assert any(h.get("inferred") for h in path), path
    assert all(not h.get("inferred") for h in path if h.get("label", "").startswith("[")), path
    assert mapped in [int(h["address"], 16) for h in path]


@pytest.mark.parametrize("source", ["pid", "core"])
def test_numpy_and_pandas(start_target, make_core, python_exe, tmp_path, source):
    if subprocess.run([python_exe, "-c", "import numpy"], capture_output=True).returncode:
        pytest.skip(f"numpy does not import in {python_exe} (scripts/install-deps.sh test)")
    ready, heap, g = dump(start_target, make_core, python_exe, tmp_path, source)
    objs = ready["objects"]
    names = ["NP"] + (["DF"] if ready["pandas"] else [])
    check_top_retainers(ready, heap, names)
    for name in ("NP", "NP_VIEW", "NP_VIEW_OWNER", "NP_OBJ"):
        addr, size = objs[name]
        assert g.objects[addr] == ("numpy.ndarray", size), (name, g.objects[addr], size)
    for name in ("NP_VIEW", "NP_OBJ"):
        for label, to in ready["refs"][name].items():
            assert [e[0] for e in g.edges(objs[name][0], label)] == [to], (name, label)
    if not ready["pandas"]:
        pytest.skip(f"pandas does not import in {python_exe}: numpy checked alone")
