"""End-to-end tests of `scry analyze` and `scry query` on snapshots of
tests/targets/heap_fixtures.py (known leaks whose retained sizes the target computes itself),
dumped by pid and from a gcore core, on every installed 3.11-3.15."""

import json
import re
from pathlib import Path

import pytest

from conftest import run_scry

FREE_THREADED = True  # 3.13t: objects found in its mimalloc heaps (heap_mimalloc.c)
FIXTURE = "heap_fixtures.py"
LEAKS = Path(__file__).resolve().parent.parent / "targets" / "heap_leaks.py"
MODULE = "sys.modules['heap_leaks'].__dict__"

# Holder -> (the path analyze must name, whether the path may go one hop further: an object
# that passes all it retains on to one attribute leaves that attribute as the holder).
HOLDERS = {
    "CACHE": f"{MODULE}['CACHE']",
    "LISTENERS": f"{MODULE}['LISTENERS']",
    "REPORT": f"{MODULE}['REPORT']",
    "POINTS": f"{MODULE}['POINTS']",
    "GEN": f"{MODULE}['GEN']",
    "CYCLE": f"{MODULE}['CYCLE']",
}


def scry_json(args):
    cp = run_scry(args + ["--json"], timeout=120)
    assert cp.returncode == 0, f"scry {' '.join(map(str, args))}: rc {cp.returncode}\n" \
                               f"{cp.stdout}\n{cp.stderr}"
    return json.loads(cp.stdout)


def snapshot(start_target, make_core, python_exe, tmp_path, source):
    target = start_target(python_exe, FIXTURE)
    out = tmp_path / "app.heap"
    if source == "pid":
        args = ["dump", "--pid", target.pid, "-o", out]
    else:
        args = ["dump", "--core", make_core(target.pid), "-o", out]
    cp = run_scry(args, timeout=120)
    assert cp.returncode == 0, f"scry dump: rc {cp.returncode}\n{cp.stdout}\n{cp.stderr}"
    return target.ready, out


@pytest.mark.parametrize("source", ["pid", "core"])
def test_analyze_names_the_holders(start_target, make_core, python_exe, tmp_path, source):
    ready, heap = snapshot(start_target, make_core, python_exe, tmp_path, source)
    doc = scry_json(["analyze", heap, "--top", "60"])
    truths = ready["truths"]
    top = doc["top_retainers"]
    assert top, doc
    # The biggest leak is the top retainer, with its root path and its true retained size.
    assert top[0]["path"] == HOLDERS["CACHE"], [t["path"] for t in top[:5]]
    assert top[0]["type"] == "builtins.dict"
    assert top[0]["retained"] == pytest.approx(truths["CACHE"]["retained"], rel=0.05)
    assert int(top[0]["address"], 16) == ready["addresses"]["CACHE"]
    for name, path in HOLDERS.items():
        found = [t for t in top if t["path"] == path or t["path"].startswith(path + ".")]
        assert found, f"{name}: no top retainer under {path}; got {[t['path'] for t in top]}"
        assert found[0]["retained"] == pytest.approx(truths[name]["retained"], rel=0.05), (
            name, found[0])
    # Types: the 10,000 sessions, retained counted once.
    types = {t["type"]: t for t in doc["types"]}
    assert types["heap_leaks.Session"]["count"] >= truths["CACHE"]["count"]
    totals = doc["totals"]
    assert totals["objects"] >= totals["reachable_objects"] > 0
    assert 0 < totals["reachable_bytes"] <= totals["shallow_bytes"]
    if source == "pid":
        assert totals["rss_bytes"] and 0 < totals["graph_fraction_of_rss"] < 1.0

    text = run_scry(["analyze", heap])
    assert text.returncode == 0
    assert "Top retainers by retained size" in text.stdout
    assert HOLDERS["CACHE"] in text.stdout
    assert re.search(r"Python graph( accounts for|:)", text.stdout)


def test_query(start_target, make_core, python_exe, tmp_path):
    ready, heap = snapshot(start_target, make_core, python_exe, tmp_path, "pid")
    addr = ready["addresses"]

    path = scry_json(["query", heap, "--retaining-path", hex(addr["first_payload"])])
    hops = path["path"]
    assert hops[0]["root"] == "sys.modules['heap_leaks']"
    labels = [h.get("label") for h in hops[1:]]
    assert labels[:2] == [".__dict__", "['CACHE']"], labels
    assert labels[-1] == ".payload"
    assert hops[-1]["type"] == "builtins.bytes"
    assert int(hops[-1]["address"], 16) == addr["first_payload"]
    text = run_scry(["query", heap, "--retaining-path", hex(addr["first_payload"])]).stdout
    lines = text.splitlines()
    assert lines[0].startswith("sys.modules['heap_leaks']")
    assert lines[-1].lstrip().startswith(".payload") and "builtins.bytes" in lines[-1]

    sessions = scry_json(["query", heap, "--type", "Session"])
    assert sessions["count"] >= ready["truths"]["CACHE"]["count"]
    assert sessions["largest"] and all(x["type"] == "heap_leaks.Session"
                                       for x in sessions["largest"])
    assert all(x["path"].startswith(HOLDERS["CACHE"]) or "SAMPLES" in x["path"]
               for x in sessions["largest"])

    located = scry_json(["query", heap, "--locate", "heap_leaks.Session"])
    source = LEAKS.read_text().splitlines()
    class_line = next(i for i, l in enumerate(source, 1) if l.startswith("class Session"))
    # A class is placed at its first method (approximately), a function exactly.
    assert any(m["file"].endswith("heap_leaks.py") and m["approximate"]
               and class_line < m["line"] <= class_line + 10
               for m in located["matches"]), located
    fn = scry_json(["query", heap, "--locate", "make_listener"])
    fn_line = next(i for i, l in enumerate(source, 1) if l.startswith("def make_listener"))
    assert any(m["line"] == fn_line and not m["approximate"] for m in fn["matches"]), fn


def test_query_errors(start_target, make_core, python_exe, tmp_path):
    _, heap = snapshot(start_target, make_core, python_exe, tmp_path, "pid")
    for args, code, rc in ((["--type", "NoSuchType"], "not_found", 1),
                           (["--retaining-path", "0x10"], "not_found", 1),
                           (["--retaining-path", "zz"], "usage", 2),
                           (["--locate", "no.such.name"], "not_found", 1),
                           ([], "usage", 2)):
        cp = run_scry(["query", heap, "--json"] + args)
        assert cp.returncode == rc, (args, cp.stdout, cp.stderr)
        err = json.loads(cp.stdout)["error"]
        assert err["code"] == code and err["message"] and err["hint"], (args, err)
    bad = tmp_path / "bad.heap"
    bad.write_bytes(b"SCRYSNAP" + bytes(100))
    cp = run_scry(["analyze", bad, "--json"])
    assert cp.returncode == 1 and json.loads(cp.stdout)["error"]["code"] == "bad_snapshot"


def nested(entry):
    """Every entry inside `entry`, at any depth."""
    for inner in entry["dominates"]:
        yield inner
        yield from nested(inner)


def test_analyze_nests_a_dataframes_blocks(start_target, python_exe, tmp_path):
    """Issue 27, item 9: a DataFrame (tests/targets/heap_pandas.py: a float block and an
    ExtensionBlock of nullable integers) and the blocks and arrays inside it are never top
    retainers side by side: they are listed inside it ("dominates"; indented under it in the
    text), and the total of the list counts their bytes once."""
    target = start_target(python_exe, "heap_pandas.py")
    if not target.ready["pandas"]:
        pytest.skip(f"pandas does not import in {python_exe} (scripts/install-deps.sh test)")
    heap = tmp_path / "df.heap"
    cp = run_scry(["dump", "--pid", target.pid, "-o", heap], timeout=120)
    assert cp.returncode == 0, f"scry dump: rc {cp.returncode}\n{cp.stdout}\n{cp.stderr}"
    doc = scry_json(["analyze", heap, "--top", "40"])
    top = doc["top_retainers"]
    frames = [t for t in top if int(t["address"], 16) == target.ready["df"]]
    assert len(frames) == 1, [(t["type"], t["path"]) for t in top]
    frame = frames[0]
    inside = list(nested(frame))
    assert any(t["type"].endswith("ExtensionBlock") for t in inside), inside
    # Nothing under the DataFrame's path stands beside it, and no block is at the top level.
    for t in top:
        assert t is frame or not t["path"].startswith(frame["path"]), (t, frame["path"])
        assert not t["type"].endswith("Block"), t
    for t in inside:
        assert t["path"].startswith(frame["path"]) and t["retained"] <= frame["retained"], t
    # The list's total: each top-level entry once, never one inside another again.
    total = doc["totals"]["top_retainers_bytes"]
    assert total == sum(t["retained"] for t in top), (total, top)
    assert total <= doc["totals"]["reachable_bytes"], doc["totals"]

    text = run_scry(["analyze", heap, "--top", "40"])
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    at = [i for i, line in enumerate(lines) if line.endswith(frame["path"])]
    assert len(at) == 1, text.stdout
    block = [line for line in lines[at[0] + 1:] if "ExtensionBlock" in line]
    assert block and "\u2514 " in block[0], text.stdout
