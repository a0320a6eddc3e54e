"""The pictures of scry's browser page (docs/viewer.md), in headless Chromium driven by Playwright
(tests/browser/charts.test.mjs): the memory flame graph beside the CPU one (profiles recorded
with --stacks), the per-thread timeline (--timeline), the page of `scry compare --html`, and the
page of a 20,000-function profile, interactive within 3 s by the page's own clock. Each browser
run checks the page against the profile it was made from and saves screenshots under the test's
tmp dir. Chromium and playwright-core come from `scripts/install-deps.sh browser`; without them
the browser tests skip (the command tests here do not need them).
"""

import json
import re

import pytest

from conftest import run_profiled, run_scry, load_profile
from test_view_html import browser, make_page, write_json  # noqa: F401 (a fixture)
import test_view_html

CHARTS_TEST = test_view_html.REPO / "tests" / "browser" / "charts.test.mjs"
RENDER_LIMIT_MS = 3000  # the bar for a 20,000-function profile (by performance.now)


def run_charts(browser, tmp_path, name, html, profile, **expect):  # noqa: F811
    """Runs charts.test.mjs on one page; fails with every check that failed. Screenshots go to
    tmp_path/shots."""
    node, modules, chromium = browser
    shots = tmp_path / "shots"
    case = tmp_path / f"{name}.case.json"
    case.write_text(json.dumps({"name": name, "html": str(html), "profile": str(profile),
                                **expect}))
    cp = test_view_html.subprocess.run(
        [node, CHARTS_TEST, "--node-modules", modules, "--chromium", chromium, "--artifacts",
         shots, case], capture_output=True, text=True, timeout=test_view_html.NODE_TIMEOUT_S,
        cwd=test_view_html.REPO)
    assert cp.returncode == 0, f"the browser test of {name} failed to run:\n{cp.stderr}"
    report = json.loads(cp.stdout.strip().splitlines()[-1])
    (tmp_path / f"{name}-report.json").write_text(json.dumps(report, indent=1))
    failed = [f"{c['name']}: {c['detail']}" for c in report["checks"] if not c["ok"]]
    assert not failed, f"{name} ({html}):\n  " + "\n  ".join(failed)
    assert report["screenshots"] and all(p.startswith(str(shots)) for p in report["screenshots"])
    return report


def names(report):
    return {c["name"] for c in report["checks"]}


# ---- a real 3-thread program, recorded with --stacks --timeline ---------------------------------

def test_memory_flame_and_timeline_of_three_threads(scry, browser, python_exe,  # noqa: F811
                                                    tmp_path):
    ran = run_profiled(python_exe, "page_threads.py", outfile=tmp_path / "threads.json",
                       options=("--stacks", "--timeline"))
    prof = load_profile(ran)
    stream = prof.get("sample_stream")
    assert stream and prof.get("memory_stacks"), ran.describe()
    # The main thread and the three it starts: four lanes.
    assert len(stream["threads"]) == 4, stream["threads"]
    alloc_mb = sum(e.get("n_malloc_mb", 0) for d in prof["files"].values() for e in d["lines"])
    assert alloc_mb > 0, "no allocation sampled"
    page = make_page(tmp_path, ran.profile_path, "threads")
    report = run_charts(browser, tmp_path, "threads", page, ran.profile_path, lanes=4,
                        memory_total_mb=alloc_mb)
    assert {"memory flame graph root is the total sampled allocation",
            "one lane per thread", "every thread's lane is painted",
            "hovering a Python segment names its line", "wheel zooms in"} <= names(report)


def test_no_memory_stacks_no_timeline(scry, browser, tmp_path):  # noqa: F811
    """A profile with CPU stacks only: no switch, no memory graph, no timeline section."""
    doc = test_view_html.synthetic_profile(n_lines=300)
    doc["files"]["/synthetic/big_module.py"]["leaks"] = {}
    prof = write_json(tmp_path / "cpu.json", doc)
    report = run_charts(browser, tmp_path, "cpu-only", make_page(tmp_path, prof, "cpu"), prof)
    assert {"no memory switch without memory_stacks",
            "no timeline without a sample stream"} <= names(report)


# ---- a 20,000-function profile ------------------------------------------------------------------

def big_profile(n_files=200, funcs_per_file=100, threads=8, samples_per_thread=12_500):
    """n_files × funcs_per_file functions (two lines each), a CPU and a memory stack through every
    function, and a sample stream of threads × samples_per_thread samples."""
    files, stacks, mem_stacks, ss_stacks = {}, [], [], []
    for f in range(n_files):
        path = f"/big/pkg/module_{f:03d}.py"
        lines, funcs = [], []
        for k in range(funcs_per_file):
            first = 1 + 3 * k
            name = f"func_{f}_{k}"
            funcs.append({"lineno": first, "line": name, "n_cpu_percent_python": 0.004,
                          "n_cpu_percent_c": 0.001, "n_sys_percent": 0, "n_samples": 1})
            for ln, text in ((first, f"def {name}(x):\n"), (first + 1, "    return x * 2\n")):
                lines.append({"lineno": ln, "line": text, "n_cpu_percent_python": 0.002,
                              "n_cpu_percent_c": 0.0005, "n_sys_percent": 0, "n_samples": 1,
                              "n_malloc_mb": 0.01 if ln == first + 1 else 0})
            outer = f"{path} main:1;"
            stacks.append([[outer, f"{path} {name}:{first + 1};"],
                           {"count": 1 + (f * k) % 7, "python_time": 1e-4, "c_time": 0,
                            "sys_time": 0, "cpu_samples": 1e-4}])
            frame = {"kind": "py", "filename_or_module": path, "ip": None, "offset": None}
            mem_stacks.append([[dict(frame, display_name="main", line=1),
                                dict(frame, display_name=name, line=first + 1)],
                               0.99 if f < 3 else 0.01])  # three files hold most: frames to zoom on
            ss_stacks.append([[path, name, first, first + 1]])
        files[path] = {"percent_cpu_time": 100.0 / n_files, "n_samples": 2 * funcs_per_file,
                       "lines": lines, "functions": funcs, "leaks": {}, "imports": []}
    samples = []
    for i in range(samples_per_thread):
        for t in range(threads):
            stack = (i * threads + t) % len(ss_stacks)
            samples.append([1000 + i * 1000 + t, t, (i + t) % 3, 1000, stack])
    return {
        "tool": "scry", "version": "0.1.0", "program": "/big/main.py", "python_version": "3.12.1",
        "elapsed_time_sec": samples_per_thread / 1000 + 0.01, "sampled_time_sec": 100.0,
        "n_samples": len(samples), "processes": 1, "cpu_sampling_rate": 0.01, "memory": True,
        "stacks": stacks, "memory_stacks": mem_stacks, "native_stacks": [], "combined_stacks": [],
        "sample_stream": {"threads": [{"pid": 7, "tid": 7 + t, "name": f"worker-{t}", "stride": 1}
                                      for t in range(threads)],
                          "stacks": ss_stacks, "samples": samples},
        "files": files,
    }


def test_20000_function_profile_is_interactive_within_3s(scry, browser, tmp_path):  # noqa: F811
    doc = big_profile()
    assert sum(len(d["functions"]) for d in doc["files"].values()) == 20_000
    prof = write_json(tmp_path / "big.json", doc)
    report = run_charts(browser, tmp_path, "big-20k", make_page(tmp_path, prof, "big"), prof,
                        lanes=8, max_render_ms=RENDER_LIMIT_MS)
    assert "interactive within the limit (renderMs)" in names(report)
    print(f"20,000-function page: script {report['render_ms']:.0f} ms, load {report['load_ms']} ms")


# ---- scry compare --html ------------------------------------------------------------------------

HOSTILE = "/app/</script><img src=x onerror=\"window.__pwned=1\">\u202e\x1b[31m.py"


def compare_profile(hot_pct):
    """A profile of one file with a hostile name: line 3's share is hot_pct, the rest steady."""
    lines = []
    for ln in range(1, 9):
        pct = hot_pct if ln == 3 else 8.0
        lines.append({"lineno": ln, "line": f"x{ln} = work({ln})  # </script>\n",
                      "n_cpu_percent_python": pct, "n_cpu_percent_c": 0, "n_sys_percent": 0,
                      "n_samples": int(pct * 50)})
    total = sum(e["n_cpu_percent_python"] for e in lines)
    return {"tool": "scry", "version": "0.1.0", "program": "/app/main.py", "elapsed_time_sec": 50.0,
            "sampled_time_sec": 50.0, "n_samples": sum(e["n_samples"] for e in lines),
            "processes": 1,
            "files": {HOSTILE: {"percent_cpu_time": total, "lines": lines,
                                "functions": [{"lineno": 1, "line": "work",
                                               "n_cpu_percent_python": total,
                                               "n_cpu_percent_c": 0, "n_sys_percent": 0}],
                                "leaks": {}, "imports": []}}}


def test_compare_html_page(scry, browser, tmp_path):  # noqa: F811
    before = write_json(tmp_path / "before.json", compare_profile(2.0))
    after = write_json(tmp_path / "after.json", compare_profile(40.0))
    page = tmp_path / "cmp.html"
    cp = run_scry(["compare", "--html", "-o", page, "--fail-above", "10", before, after])
    assert cp.returncode == 1 and cp.stdout.strip() == str(page), (cp.stdout, cp.stderr)
    assert (page.stat().st_mode & 0o777) == 0o600
    html = page.read_text()
    # The names reach the page cleaned by the one sanitizer, and nothing in them ends the script.
    block = re.search(r'id="scry-profile">(.*?)</script>', html, re.S).group(1)
    assert "<" not in block and "\x1b" not in html and "\u202e" not in html
    doc = json.loads(block)
    cleaned = "/app/</script><img src=x onerror=\"window.__pwned=1\">??[31m.py"
    assert doc["lines"][0]["file"] == cleaned
    assert doc["lines"][0]["line"] == 3 and doc["lines"][0]["significant"], doc["lines"][0]
    cp = run_scry(["compare", "--json", before, after])
    exact = json.loads(cp.stdout)
    assert exact["lines"][0]["file"] == HOSTILE  # --json keeps the data exact
    cp = run_scry(["compare", before, after])  # the terminal's text: cleaned as the page's
    assert cp.returncode == 0 and "\u202e" not in cp.stdout and "\x1b" not in cp.stdout, cp.stdout
    assert "onerror=\"window.__pwned=1\">??[31m.py:3 (in " in cp.stdout, cp.stdout
    report = run_charts(browser, tmp_path, "compare", page, page, compare=True,
                        first_line=f"{doc['lines'][0]['file']}:3",
                        significant_lines=sum(r["significant"] for r in doc["lines"]),
                        all_lines=len(doc["lines"]))
    assert {"the changed line first", "no script injected by a file name"} <= names(report)


def test_compare_html_default_file_and_usage(scry, tmp_path):
    before = write_json(tmp_path / "before.json", compare_profile(2.0))
    after = write_json(tmp_path / "after.json", compare_profile(40.0))
    cp = run_scry(["compare", "--html", before, after], cwd=tmp_path)
    assert cp.returncode == 0 and cp.stdout.strip() == "scry-compare.html", cp.stderr
    html = (tmp_path / "scry-compare.html").read_text()
    assert '"page":"compare"' in html and "<title>scry: compare " in html
    assert not re.search(r"https?://|<script[^>]+src=|<link[^>]+stylesheet", html, re.I)
    cp = run_scry(["compare", "--html", "--json", before, after])  # --json: the error as JSON
    assert cp.returncode == 2 and json.loads(cp.stdout)["error"]["code"] == "usage", cp.stdout
    cp = run_scry(["compare", "-o", tmp_path / "x.html", before, after])
    assert cp.returncode == 2 and "--html" in cp.stderr, cp.stderr
    cp = run_scry(["compare", "--html", "-o", tmp_path / "nodir" / "x.html", before, after])
    assert cp.returncode == 1 and "[io_error]" in cp.stderr, cp.stderr
