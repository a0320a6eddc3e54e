"""scry flamegraph and scry view --format folded|speedscope: on a profile written here in
Scalene's stacks format (known counts), and on a real `scry run --stacks` profile.

Flame graph widths must equal sample counts: the folded output (Brendan Gregg's format, parsed
with flamegraph.pl's own pattern) must give every stack of the profile exactly its count, and
every frame of the SVG must be as wide as its count over the total times the drawing width.
"""

import json
import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from collections import Counter

import pytest

from conftest import TARGETS, load_profile, run_profiled, run_scry, preferred_python

# flamegraph.pl: `my ($stack, $samples) = (/^(.*)\s+?(\d+(?:\.\d*)?)$/);`
FOLDED_LINE = re.compile(r"^(.*)\s+?(\d+(?:\.\d*)?)$")
SVG_NS = "{http://www.w3.org/2000/svg}"
DRAW_WIDTH = 1200 - 2 * 10  # default width less the margins


def frame_text(scalene_frame):
    """scry's frame text for a frame string of Scalene's stacks: "FILE QUALNAME:LINE;"."""
    body = scalene_frame[:-1] if scalene_frame.endswith(";") else scalene_frame
    loc, _, line = body.rpartition(":")
    file, _, qual = loc.rpartition(" ")
    return f"{qual} ({file}:{line})".replace(";", ":")


def expected_stacks(profile):
    """stack text -> summed count, from the profile's "stacks"."""
    want = Counter()
    for frames, stats in profile["stacks"]:
        if frames and stats["count"]:
            want[";".join(frame_text(f) for f in frames)] += stats["count"]
    return want


def parse_folded(text, diff=False):
    got = {}
    for line in text.splitlines():
        m = FOLDED_LINE.match(line)
        assert m, f"not a folded line: {line!r}"
        stack, count = m.group(1), float(m.group(2))
        if diff:
            m2 = FOLDED_LINE.match(stack)
            assert m2, f"not a differential line: {line!r}"
            stack, before = m2.group(1), float(m2.group(2))
            count = (before, count)
        assert stack not in got, f"stack written twice: {stack!r}"
        assert stack and not stack.startswith(";") and ";;" not in stack
        got[stack] = count
    return got


def stack(file, qual, line):
    return f"{file} {qual}:{line};"


def stats(count):
    return {"count": count, "python_time": 0.01 * count, "c_time": 0.0,
            "cpu_samples": 0.01 * count, "sys_time": 0.0}


APP = "/srv/app/app.py"
ODD = "/srv/my app/odd.py"  # a space in the path
SYNTHETIC_STACKS = [
    [[stack(APP, "<module>", 1), stack(APP, "main", 20), stack(APP, "load", 7)], stats(400)],
    [[stack(APP, "<module>", 1), stack(APP, "main", 20), stack(APP, "parse", 11)], stats(250)],
    [[stack(APP, "<module>", 1), stack(APP, "main", 20)], stats(30)],
    [[stack(APP, "<module>", 1), stack(APP, "main", 21), stack(APP, "Cls.run", 40)], stats(7)],
    [[stack(APP, "<module>", 1), stack(APP, "main", 21), stack(APP, "Cls.run", 41)], stats(3)],
    # The same stack again (another process's part): counts add up.
    [[stack(APP, "<module>", 1), stack(APP, "main", 20), stack(APP, "load", 7)], stats(100)],
    # A ';' in a name (it cannot be escaped in the folded format: it becomes ':').
    [[stack(ODD, "weird;name", 3)], stats(10)],
    [[stack(APP, "worker", 60), stack(APP, "spin", 62)], stats(200)],
]


def write_profile(path, stacks=SYNTHETIC_STACKS, program=APP):
    doc = {"tool": "scry", "version": "0.1.0", "program": program, "n_samples": 0,
           "files": {}, "stacks": stacks}
    path.write_text(json.dumps(doc))
    return doc


@pytest.fixture
def synthetic(tmp_path):
    path = tmp_path / "profile.json"
    return path, write_profile(path)


def test_folded_counts_equal_profile(scry, synthetic, tmp_path):
    path, doc = synthetic
    cp = run_scry(["flamegraph", "--folded", path])
    assert cp.returncode == 0, cp.stderr
    got = parse_folded(cp.stdout)
    want = expected_stacks(doc)
    assert got == {k: float(v) for k, v in want.items()}
    assert sum(got.values()) == 1000
    assert "weird:name (/srv/my app/odd.py:3)" in got
    # -o FILE writes the same bytes.
    out = tmp_path / "cpu.folded"
    cp2 = run_scry(["flamegraph", "--folded", path, "-o", out])
    assert cp2.returncode == 0 and cp2.stdout == ""
    assert out.read_text() == cp.stdout
    # scry view --format folded is the same export.
    cp3 = run_scry(["view", "--format", "folded", path])
    assert cp3.returncode == 0, cp3.stderr
    assert cp3.stdout == cp.stdout


def svg_frames(path):
    """(name, weight, x, y, width, fill) of every frame of a flame graph SVG."""
    root = ET.parse(path).getroot()
    assert root.tag == f"{SVG_NS}svg"
    frames = []
    for g in root.iter(f"{SVG_NS}g"):
        if g.get("class") != "f":
            continue
        title = g.find(f"{SVG_NS}title").text
        rect = g.find(f"{SVG_NS}rect")
        frames.append((title.split("\n")[0], float(g.get("data-w")), float(rect.get("x")),
                       float(rect.get("y")), float(rect.get("width")), rect.get("fill")))
    return root, frames


def inclusive(want):
    """frame path (tuple) -> total count of every stack through it."""
    totals = Counter()
    for stk, count in want.items():
        parts = tuple(stk.split(";"))
        for i in range(1, len(parts) + 1):
            totals[parts[:i]] += count
    return totals


def test_svg_widths_equal_counts(scry, synthetic, tmp_path):
    path, doc = synthetic
    out = tmp_path / "cpu.svg"
    cp = run_scry(["flamegraph", path, "-o", out, "--title", "T <1>"])
    assert cp.returncode == 0, cp.stderr
    root, frames = svg_frames(out)
    text = out.read_text()
    assert "<script" in text and "href" not in text and "T &lt;1&gt;" in text
    totals = inclusive(expected_stacks(doc))
    # One rect per node of the call tree, plus "all".
    assert len(frames) == len(totals) + 1
    total = sum(s["count"] for _, s in doc["stacks"])
    names = Counter(f[0] for f in frames)
    for path_, count in totals.items():
        assert names[path_[-1]] >= 1, f"frame {path_[-1]!r} is missing"
    by_name_weight = Counter((f[0], f[1]) for f in frames)
    for path_, count in totals.items():
        assert by_name_weight[(path_[-1], float(count))] >= 1, (path_, count)
    for name, weight, x, y, width, _ in frames:
        assert abs(width - weight / total * DRAW_WIDTH) < 1e-3, (name, weight, width)
        # Children sit inside their parent, one row up.
        kids = sum(w for _, w, kx, ky, kw, _ in frames
                   if abs(ky - (y - 16)) < 1e-6 and kx >= x - 1e-3 and kx + kw <= x + width + 1e-3)
        assert kids <= weight


def test_cutoffs_keep_widths(scry, synthetic, tmp_path):
    path, doc = synthetic
    full = parse_folded(run_scry(["flamegraph", "--folded", path]).stdout)
    cp = run_scry(["flamegraph", "--folded", "--min-pct", "1.5", path])
    assert cp.returncode == 0, cp.stderr
    cut = parse_folded(cp.stdout)
    assert sum(cut.values()) == sum(full.values())
    # Under 15 of 1000: main:21 (10) folds with everything above it into an [other] under
    # <module>, and weird:name (10) into an [other] at the bottom.
    assert cut["<module> (/srv/app/app.py:1);[other]"] == 10
    assert cut["[other]"] == 10
    assert not any("Cls.run" in s or "weird" in s for s in cut)
    full_tot, cut_tot = inclusive(full), inclusive(cut)
    for p, count in cut_tot.items():
        if p[-1] != "[other]":
            assert full_tot[p] == count, p
    # The SVG agrees: the frames left are exactly as wide as without the cutoff.
    a, b = tmp_path / "a.svg", tmp_path / "b.svg"
    assert run_scry(["flamegraph", path, "-o", a]).returncode == 0
    assert run_scry(["flamegraph", path, "-o", b, "--min-pct", "1.5"]).returncode == 0
    fa = {(f[0], f[3]): f for f in svg_frames(a)[1]}
    fb = svg_frames(b)[1]
    for name, weight, x, y, width, _ in fb:
        if name != "[other]":
            assert (fa[(name, y)][1], fa[(name, y)][4]) == (weight, width), name
    # --max-depth 2: the third level is all [other].
    cp = run_scry(["flamegraph", "--folded", "--max-depth", "2", path])
    deep = parse_folded(cp.stdout)
    assert sum(deep.values()) == 1000
    for stk in deep:
        parts = stk.split(";")
        assert len(parts) <= 3 and (len(parts) < 3 or parts[2] == "[other]"), stk


def test_diff(scry, synthetic, tmp_path):
    path, doc = synthetic
    after = tmp_path / "after.json"
    grown = json.loads(json.dumps(SYNTHETIC_STACKS))
    grown[0][1]["count"] = 900  # load: 400 + 100 -> 900 + 100
    grown[7][1]["count"] = 50   # spin: 200 -> 50
    write_profile(after, grown)
    cp = run_scry(["flamegraph", "--diff", path, after, "--folded"])
    assert cp.returncode == 0, cp.stderr
    got = parse_folded(cp.stdout, diff=True)
    load = "<module> (/srv/app/app.py:1);main (/srv/app/app.py:20);load (/srv/app/app.py:7)"
    assert got[load] == (500, 1000)
    assert got["worker (/srv/app/app.py:60);spin (/srv/app/app.py:62)"] == (200, 50)
    out = tmp_path / "diff.svg"
    assert run_scry(["flamegraph", "--diff", path, after, "-o", out]).returncode == 0
    _, frames = svg_frames(out)
    fill = {f[0]: f[5] for f in frames}
    assert fill["load (/srv/app/app.py:7)"].startswith("rgb(255,")  # grew: red
    assert fill["spin (/srv/app/app.py:62)"].endswith(",255)")      # shrank: blue
    assert fill["parse (/srv/app/app.py:11)"] == "rgb(235,235,235)"  # same


def test_speedscope(scry, synthetic, tmp_path):
    path, doc = synthetic
    out = tmp_path / "cpu.speedscope.json"
    cp = run_scry(["view", "--format", "speedscope", "-o", out, path])
    assert cp.returncode == 0, cp.stderr
    ss = json.loads(out.read_text())
    assert ss["$schema"] == "https://www.speedscope.app/file-format-schema.json"
    frames = ss["shared"]["frames"]
    (prof,) = ss["profiles"]
    assert prof["type"] == "sampled"
    assert len(prof["samples"]) == len(prof["weights"])
    assert sum(prof["weights"]) == sum(s["count"] for _, s in doc["stacks"])
    assert prof["endValue"] - prof["startValue"] == sum(prof["weights"])
    got = Counter()
    for sample, weight in zip(prof["samples"], prof["weights"]):
        assert weight > 0
        names = []
        for i in sample:
            f = frames[i]
            names.append(f"{f['name']} ({f['file']}:{f['line']})")
        got[";".join(names)] += weight
    assert got == expected_stacks(doc)
    assert ss["name"] == APP


def test_errors(scry, tmp_path):
    nostacks = tmp_path / "nostacks.json"
    write_profile(nostacks, stacks=[])
    for args in (["flamegraph", "--folded", nostacks], ["view", "--format", "speedscope",
                                                        nostacks]):
        cp = run_scry(args)
        assert cp.returncode == 1, cp.stderr
        assert "no call stacks" in cp.stderr and "scry run --stacks" in cp.stderr
        assert "[bad_profile]" in cp.stderr
    heap = tmp_path / "app.heap"
    heap.write_bytes(b"SCRYSNAP" + bytes(56))
    cp = run_scry(["flamegraph", heap, "-o", tmp_path / "x.svg"])
    # A snapshot goes to the retention flame graph (test_flamegraph_heap.py): this one is damaged.
    assert cp.returncode == 1 and "[bad_snapshot]" in cp.stderr
    junk = tmp_path / "junk.json"
    junk.write_text("not json at all")
    cp = run_scry(["flamegraph", "--folded", junk])
    assert cp.returncode == 1 and "not a profile" in cp.stderr and "[bad_profile]" in cp.stderr
    cp = run_scry(["flamegraph", "--folded", tmp_path / "missing.json"])
    assert cp.returncode == 1 and "[io_error]" in cp.stderr
    cp = run_scry(["view", "--format", "svg", junk])
    assert cp.returncode == 2 and "folded, speedscope, pprof, trace or firefox" in cp.stderr
    cp = run_scry(["view", "--format", "pprof", "-o", tmp_path / "p.pb.gz", junk])
    assert cp.returncode == 1 and "not a profile" in cp.stderr and "[bad_profile]" in cp.stderr
    cp = run_scry(["flamegraph", "--min-pct", "200", junk])
    assert cp.returncode == 2
    assert not (tmp_path / "x.svg").exists()


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return "/usr/lib/chromium/chromium" if os.access("/usr/lib/chromium/chromium",
                                                     os.X_OK) else None


def test_svg_zoom_and_search_in_browser(scry, synthetic, tmp_path):
    """The SVG's own script, run by headless Chromium: zoom fills the width with the frame and
    keeps its ancestors, search reports the matched share (nested matches counted once)."""
    browser = chromium()
    if not browser:
        pytest.skip("no Chromium here (apt-get install chromium)")
    path, doc = synthetic
    out = tmp_path / "cpu.svg"
    assert run_scry(["flamegraph", path, "-o", out]).returncode == 0
    probe = """<script type="text/ecmascript"><![CDATA[
(function () {
  var f = window.scryFlame, r = {};
  var i = f.frames.findIndex(function (g) { return g._name.indexOf("main (") === 0 &&
                                                   g._weight === 780; });
  f.zoom(i);
  r.zoomWidth = +f.frames[i].querySelector("rect").getAttribute("width");
  r.hidden = f.frames.filter(function (g) { return g.classList.contains("hide"); })
               .map(function (g) { return g._name; });
  r.ancestors = f.frames.filter(function (g) { return g.classList.contains("a"); })
               .map(function (g) { return g._name; });
  f.unzoom();
  r.searchMain = f.search("^main ");
  r.searchApp = f.search("app\\\\.py");
  f.clearSearch();
  document.getElementById("details").textContent = "RESULT" + JSON.stringify(r) + "END";
})();
]]></script></svg>"""
    probed = tmp_path / "probe.svg"
    probed.write_text(out.read_text().replace("</svg>", probe))
    cp = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu",
                         "--dump-dom", probed.as_uri()], capture_output=True, text=True,
                        timeout=120)
    m = re.search(r"RESULT(.*?)END", cp.stdout)
    assert m, f"no result from the page; stderr:\n{cp.stderr[-2000:]}"
    r = json.loads(m.group(1).replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">")
                   .replace("&amp;", "&"))
    assert abs(r["zoomWidth"] - DRAW_WIDTH) < 1e-3
    assert sorted(r["ancestors"]) == ["<module> (/srv/app/app.py:1)", "all"]
    assert "worker (/srv/app/app.py:60)" in r["hidden"] and "load (/srv/app/app.py:7)" not in \
        r["hidden"]
    assert abs(r["searchMain"] - 79.0) < 1e-9      # main:20 (780) + main:21 (10) of 1000
    assert abs(r["searchApp"] - 99.0) < 1e-9       # everything but odd.py (10), counted once


@pytest.fixture(scope="module")
def real_profile(tmp_path_factory):
    python = preferred_python()
    out = tmp_path_factory.mktemp("real") / "profile.json"
    ran = run_profiled(python, "run_cpu_split.py", args=["python", "sorted"], outfile=out,
                       options=["--stacks"])
    assert ran.returncode == 0, ran.describe()
    profile = load_profile(ran)
    if not profile.get("stacks"):
        pytest.fail(f"scry run --stacks wrote no stacks; {ran.describe()}")
    return out, profile


def test_real_profile(scry, real_profile, tmp_path):
    path, profile = real_profile
    cp = run_scry(["flamegraph", "--folded", path])
    assert cp.returncode == 0, cp.stderr
    got = parse_folded(cp.stdout)
    want = expected_stacks(profile)
    assert got == {k: float(v) for k, v in want.items()}
    # The measured functions appear under the module, with most of the samples.
    target = str(TARGETS / "run_cpu_split.py")
    py = sum(c for s, c in got.items() if s.split(";")[-1].startswith("python_section ("))
    srt = sum(c for s, c in got.items() if s.split(";")[-1].startswith("sorted_section ("))
    assert py > 0 and srt > 0, cp.stdout
    assert all(f"({target}:" in s.split(";")[-1] for s in got
               if s.split(";")[-1].startswith(("python_section (", "sorted_section ("))), cp.stdout
    svg = tmp_path / "real.svg"
    assert run_scry(["flamegraph", path, "-o", svg]).returncode == 0
    _, frames = svg_frames(svg)
    total = sum(got.values())
    assert frames[0][0] == "all" and frames[0][1] == total
    for name, weight, x, y, width, _ in frames:
        assert abs(width - weight / total * DRAW_WIDTH) < 1e-3
    ss = json.loads(run_scry(["view", "--format", "speedscope", path]).stdout)
    assert sum(ss["profiles"][0]["weights"]) == total
