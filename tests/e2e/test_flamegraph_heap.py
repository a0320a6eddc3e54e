"""End-to-end tests of the retention flame graph (`scry flamegraph app.heap`) and of heap growth
(`scry diff`, `scry flamegraph --diff`) on every installed 3.11-3.15:
- on tests/targets/heap_fixtures.py dumped by pid, the folded stacks add up to the reachable bytes
  and each holder's frame is exactly its retained size as `scry analyze` and `scry query` give it,
  with and without cutoffs; the SVG's rect widths are proportional to those sizes;
- on tests/targets/heap_growth.py, whose cache grows by a number of bytes it measures itself
  between two dumps, `scry diff` and the differential folded stacks report that growth."""

import json
import xml.etree.ElementTree as ET
from collections import Counter

import pytest

from conftest import run_scry

FREE_THREADED = True  # 3.13t: objects found in its mimalloc heaps (heap_mimalloc.c)

SVG_NS = "{http://www.w3.org/2000/svg}"
HOLDERS = ("CACHE", "LISTENERS", "REPORT", "POINTS", "GEN", "CYCLE")
NOTE = "matched approximately"


def ok(args, timeout=120):
    cp = run_scry(args, timeout=timeout)
    assert cp.returncode == 0, f"scry {' '.join(map(str, args))}: rc {cp.returncode}\n" \
                               f"{cp.stdout}\n{cp.stderr}"
    return cp.stdout


def dump(pid, out):
    ok(["dump", "--pid", pid, "-o", out])
    return out


def parse_folded(text, diff=False):
    """{stack prefix: total} (a pair (before, after) for a differential output), and the lines."""
    totals = Counter()
    before = Counter()
    lines = [l for l in text.splitlines() if l]
    for line in lines:
        if diff:
            stack, b, a = line.rsplit(" ", 2)
            b, a = int(b), int(a)
        else:
            stack, a = line.rsplit(" ", 1)
            b, a = 0, int(a)
        frames = stack.split(";")
        assert all(frames), line
        for i in range(1, len(frames) + 1):
            totals[";".join(frames[:i])] += a
            before[";".join(frames[:i])] += b
    return (totals, before) if diff else totals, lines


def holder_stack(totals, name):
    """The one frame path of a heap_leaks holder: it ends in `['NAME'] TYPE`, under the module."""
    found = [k for k in totals
             if k.split(";")[-1].startswith(f"['{name}'] ") and "heap_leaks" in k.split(";")[0]
             and k.count(";") <= 2]
    assert len(found) == 1, (name, found)
    return found[0]


@pytest.fixture
def fixture_heap(start_target, python_exe, tmp_path):
    target = start_target(python_exe, "heap_fixtures.py")
    return target.ready, dump(target.pid, tmp_path / "app.heap")


def test_folded_widths_are_retained_sizes(fixture_heap):
    ready, heap = fixture_heap
    analysis = json.loads(ok(["analyze", heap, "--json", "--top", "60"]))
    retained = {}
    for name in HOLDERS:
        q = json.loads(ok(["query", heap, "--json", "--retaining-path",
                           hex(ready["addresses"][name])]))
        retained[name] = q["path"][-1]["retained"]
    top = analysis["top_retainers"][0]
    assert top["path"].endswith("['CACHE']") and top["retained"] == retained["CACHE"]

    for cut in (["--min-pct", "0"], [], ["--min-bytes", "100000"], ["--max-depth", "3"]):
        totals, lines = parse_folded(ok(["flamegraph", heap, "--folded"] + cut))
        assert sum(int(l.rsplit(" ", 1)[1]) for l in lines) == \
            analysis["totals"]["reachable_bytes"], cut
        for name in HOLDERS:
            if cut == ["--min-bytes", "100000"] and retained[name] < 100000:
                assert not any(k.split(";")[-1].startswith(f"['{name}'] ") for k in totals)
                continue
            stack = holder_stack(totals, name)
            assert totals[stack] == retained[name], (cut, name, stack)
        cache = holder_stack(totals, "CACHE")
        if cut == ["--min-pct", "0"]:
            assert not any("[other]" in l for l in lines)
            # The 10,000 sessions merge by key length; their payloads merge above them.
            sessions = [k for k in totals if k.startswith(cache + ";[<str len=")
                        and k.endswith("heap_leaks.Session")]
            assert sessions and len(sessions) <= 5, sessions
            assert any(k.startswith(s + ";.payload bytes") for s in sessions for k in totals)
            # A list's items merge as [<index>].
            report = holder_stack(totals, "REPORT")
            floats = [k for k in totals if k.startswith(report + ";")
                      and k.endswith("[<index>] float")]
            assert len(floats) == 1, floats
            truth = ready["truths"]["REPORT"]
            assert truth["row_size"] in (24, 40)  # a double behind a 16- or 32-byte header
            assert totals[floats[0]] == truth["rows"] * truth["row_size"]
        else:
            assert any("[other]" in l for l in lines), cut
        if cut == ["--max-depth", "3"]:
            assert max(l.rsplit(" ", 1)[0].count(";") for l in lines) <= 3


def test_svg_widths(fixture_heap, tmp_path):
    ready, heap = fixture_heap
    svg = tmp_path / "app.svg"
    ok(["flamegraph", heap, "-o", svg, "--title", "heap of the fixtures"])
    root = ET.parse(svg).getroot()
    fw = float(root.get("data-fw"))
    frames = []
    for g in root.iter(f"{SVG_NS}g"):
        if g.get("class") != "f":
            continue
        title = g.find(f"{SVG_NS}title").text
        rect = g.find(f"{SVG_NS}rect")
        frames.append((title.split("\n")[0], float(g.get("data-w")), float(rect.get("width"))))
    assert frames and frames[0][0] == "all"
    total = frames[0][1]
    for name, w, width in frames:
        assert width == pytest.approx(w / total * fw, abs=0.01), name
    cache = [w for name, w, _ in frames if name == "['CACHE'] dict"]
    q = json.loads(ok(["query", heap, "--json", "--retaining-path",
                       hex(ready["addresses"]["CACHE"])]))
    assert cache == [q["path"][-1]["retained"]]
    text = svg.read_text()
    assert "heap of the fixtures" in text and "reachable" in text


def grown_heaps(start_target, python_exe, tmp_path, n=3000):
    target = start_target(python_exe, "heap_growth.py")
    before = dump(target.pid, tmp_path / "before.heap")
    target.command(f"grow {n}")
    grown = target.next_json()
    assert grown["grown"] == n
    after = dump(target.pid, tmp_path / "after.heap")
    return before, after, grown["bytes"]


def test_diff_reports_the_growth(start_target, python_exe, tmp_path):
    before, after, truth = grown_heaps(start_target, python_exe, tmp_path)
    doc = json.loads(ok(["diff", before, after, "--json"]))
    assert doc["matching"] == "approximate" and NOTE in doc["note"]
    site = doc["sites"][0]
    assert site["stack"].endswith("['CACHE'] dict"), doc["sites"][:3]
    assert site["retained_delta"] == pytest.approx(truth, rel=0.05)
    assert site["retained_after"] - site["retained_before"] == site["retained_delta"]
    assert doc["totals"]["same_process"] is True
    assert doc["totals"]["reachable_bytes_delta"] == pytest.approx(truth, rel=0.05)
    types = {t["type"]: t for t in doc["types"]}
    assert types["__main__.Item"]["count_delta"] == 3000
    assert types["builtins.bytes"]["count_delta"] >= 3000
    assert types["builtins.bytes"]["shallow_delta"] >= 3000 * 2000

    text = ok(["diff", before, after])
    assert NOTE in text and "Growth by retaining site" in text and "Growth by type" in text
    assert "['CACHE'] dict" in text

    (after_t, before_t), lines = parse_folded(
        ok(["flamegraph", "--diff", before, after, "--folded"]), diff=True)
    cache = [k for k in after_t if k.endswith("['CACHE'] dict")]
    assert len(cache) == 1, cache
    assert after_t[cache[0]] - before_t[cache[0]] == pytest.approx(truth, rel=0.05)
    assert after_t[cache[0]] == site["retained_after"]
    assert before_t[cache[0]] == site["retained_before"]

    svg = tmp_path / "diff.svg"
    ok(["flamegraph", "--diff", before, after, "-o", svg])
    root = ET.parse(svg).getroot()
    assert NOTE in svg.read_text()
    fills = {g.find(f"{SVG_NS}title").text.split("\n")[0]: g.find(f"{SVG_NS}rect").get("fill")
             for g in root.iter(f"{SVG_NS}g") if g.get("class") == "f"}
    r, g_, b = map(int, fills["['CACHE'] dict"][4:-1].split(","))
    assert r > b, fills["['CACHE'] dict"]  # grew: red


def test_diff_errors(tmp_path):
    cp = run_scry(["diff", "--json", tmp_path / "one.heap"])
    assert cp.returncode == 2 and json.loads(cp.stdout)["error"]["code"] == "usage"
    bad = tmp_path / "bad.heap"
    bad.write_bytes(b"SCRYSNAP" + bytes(100))
    cp = run_scry(["diff", "--json", bad, bad])
    assert cp.returncode == 1 and json.loads(cp.stdout)["error"]["code"] == "bad_snapshot"
    cp = run_scry(["flamegraph", bad, "--folded"])
    assert cp.returncode == 1 and "bad_snapshot" in cp.stderr + cp.stdout
