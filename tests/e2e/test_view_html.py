"""scry view's browser page (docs/viewer.md): the modes of the command (--html, --standalone, -o,
the default mode with and without a display), what the page embeds (the profile, escaped; no
reference to anything outside the file), and, in headless Chromium driven by Playwright
(tests/browser/view.test.mjs), pages of real profiles made by `scry run` and of a synthetic
10,000-line profile with memory, GPU, leaks and stacks: every file and line rendered, sorting,
hiding, the function view, the flame graph's zoom and search, no console errors and no network
requests. Chromium and playwright-core come from `scripts/install-deps.sh browser` (`make test`
runs it); without them the browser tests skip and say so. Screenshots go to
build/test-artifacts/view-html/.
"""

import json
import os
import random
import re
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from conftest import REPO, SCRY, SUPPORTED, run_profiled, run_scry, load_profile

EXAMPLE = REPO / "examples" / "hotspots.py"
BROWSER_TEST = REPO / "tests" / "browser" / "view.test.mjs"
ARTIFACTS = SCRY.parent / "test-artifacts" / "view-html"
NODE_TIMEOUT_S = 300
MAX_LOAD_MS = 15000  # generous: the 10,000-line page loads in well under a second here


def page_profile(html):
    """The profile JSON embedded in a page."""
    m = re.search(r'<script type="application/json" id="scry-profile">(.*?)</script>', html, re.S)
    assert m, "no profile block in the page"
    return json.loads(m.group(1))


def small_profile(**extra):
    line = {"lineno": 1, "line": "x = 1\n", "n_cpu_percent_python": 50.0, "n_cpu_percent_c": 0,
            "n_sys_percent": 0, "n_samples": 5}
    doc = {"tool": "scry", "version": "0.1.0", "program": "/app/app.py", "elapsed_time_sec": 1.0,
           "n_samples": 10, "processes": 1,
           "files": {"/app/app.py": {"percent_cpu_time": 50.0, "lines": [line],
                                     "functions": [], "leaks": {}, "imports": []}}}
    doc.update(extra)
    return doc


def write_json(path, doc):
    path.write_text(json.dumps(doc))
    return path


# ---- the command ---------------------------------------------------------------------------------

def test_html_writes_page_and_prints_path(scry, tmp_path):
    prof = write_json(tmp_path / "p.json", small_profile())
    cp = run_scry(["view", "--html", prof], cwd=tmp_path)
    assert cp.returncode == 0, cp.stderr
    out = tmp_path / "scry-profile.html"
    assert cp.stdout.strip() == "scry-profile.html" and out.is_file(), cp.stdout
    html = out.read_text()
    assert html.startswith("<!DOCTYPE html>")
    assert page_profile(html) == json.loads(prof.read_text())
    assert "<title>scry: /app/app.py</title>" in html
    assert "@@SCRY_" not in html


@pytest.mark.parametrize("mode", ["--html", "--standalone"])
def test_outfile_and_standalone_are_self_contained(scry, tmp_path, mode):
    prof = write_json(tmp_path / "p.json", small_profile())
    dest = tmp_path / "sub" / "page.html"
    dest.parent.mkdir()
    cp = run_scry(["view", mode, "-o", dest, prof])
    assert cp.returncode == 0, cp.stderr
    assert cp.stdout.strip() == str(dest)
    html = dest.read_text()
    # Nothing outside the file: no external scripts, styles, images, fonts or URLs at all.
    assert not re.search(r"https?://|//cdn|<link[^>]+stylesheet|<script[^>]+src=|<img|@import|url\(",
                         html, re.I), "the page refers to something outside itself"
    assert "default-src 'none'" in html  # and the CSP forbids any fetch
    assert html.count("<script") == 3 and "<style>" in html
    assert not list(dest.parent.glob("*.tmp-*")), "temporary file left behind"


def test_profile_text_cannot_break_out_of_the_page(scry, tmp_path):
    evil = "</script><script>alert(1)</script><!-- \u2028 & \\u003c"
    doc = small_profile(program="/app/</title><b>x.py")
    doc["files"]["/app/app.py"]["lines"][0]["line"] = evil
    prof = write_json(tmp_path / "p.json", doc)
    cp = run_scry(["view", "--html", "-o", tmp_path / "p.html", prof])
    assert cp.returncode == 0, cp.stderr
    html = (tmp_path / "p.html").read_text()
    block = re.search(r'id="scry-profile">(.*?)</script>', html, re.S).group(1)
    assert "<" not in block
    assert page_profile(html)["files"]["/app/app.py"]["lines"][0]["line"] == evil
    assert "<title>scry: /app/&lt;/title&gt;&lt;b&gt;x.py</title>" in html


def test_default_mode_without_display_prints_path(scry, tmp_path):
    prof = write_json(tmp_path / "p.json", small_profile())
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env["TMPDIR"] = str(tmp_path)
    cp = run_scry(["view", prof], env=env)
    assert cp.returncode == 0, cp.stderr
    page = Path(cp.stdout.strip())
    assert page.is_file() and page.parent == tmp_path and page.suffix == ".html", cp.stdout
    assert "no display" in cp.stderr and "--html" in cp.stderr, cp.stderr
    assert page_profile(page.read_text())["program"] == "/app/app.py"


def test_default_mode_opens_browser_when_display(scry, tmp_path):
    prof = write_json(tmp_path / "p.json", small_profile())
    seen = tmp_path / "opened.txt"
    fake = tmp_path / "fake-browser"
    fake.write_text(f"#!/bin/sh\nprintf '%s' \"$1\" > {seen}\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    env = dict(os.environ, DISPLAY=":99", BROWSER=f"{fake}:firefox", TMPDIR=str(tmp_path))
    cp = run_scry(["view", prof], env=env)
    assert cp.returncode == 0, cp.stderr
    opened = Path(seen.read_text())
    assert opened.is_file() and opened.suffix == ".html" and "opened" in cp.stderr, cp.stderr
    # A browser that fails: the path is printed instead.
    env["BROWSER"] = "/bin/false"
    env["PATH"] = str(tmp_path)  # no xdg-open either
    cp = run_scry(["view", prof], env=env)
    assert cp.returncode == 0 and Path(cp.stdout.strip()).is_file(), (cp.stdout, cp.stderr)
    assert "no browser could be started" in cp.stderr, cp.stderr


def test_bad_inputs(scry, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"files": {"a.py": {"lines": [{"lineno": "x"}]}}}')
    cp = run_scry(["view", "--html", "-o", tmp_path / "x.html", bad])
    assert cp.returncode == 1 and "[bad_profile]" in cp.stderr, cp.stderr
    assert not (tmp_path / "x.html").exists()
    cp = run_scry(["view", "--html", tmp_path / "missing.json"])
    assert cp.returncode == 1 and "[io_error]" in cp.stderr, cp.stderr
    cp = run_scry(["view", "--cli", "--html", bad])
    assert cp.returncode == 2 and "[usage]" in cp.stderr, cp.stderr
    cp = run_scry(["view", "--cli", "-o", tmp_path / "x", bad])
    assert cp.returncode == 2 and "[usage]" in cp.stderr, cp.stderr


# ---- in the browser ------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def browser():
    """(node, node_modules, chromium) or a skip that says what is missing and how to get it."""
    how = "install them with `scripts/install-deps.sh browser` (`make test` does)"
    node = shutil.which("node")
    chromium = next((p for p in (os.environ.get("SCRY_CHROMIUM"), "/usr/bin/chromium",
                                 shutil.which("chromium")) if p and os.access(p, os.X_OK)), None)
    modules = next((Path(p) for p in (os.environ.get("SCRY_NODE_MODULES"),
                                      SCRY.parent / "node_modules", REPO / "build" / "node_modules")
                    if p and (Path(p) / "playwright-core" / "package.json").is_file()), None)
    missing = [what for what, have in (("node", node), ("chromium", chromium),
                                       ("playwright-core", modules)) if not have]
    if missing:
        pytest.skip(f"browser tests need {', '.join(missing)}: {how}")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return node, modules, chromium


def run_browser(browser, tmp_path, name, html, profile, threshold=1.0, min_checks=15):
    node, modules, chromium = browser
    case = tmp_path / f"{name}.case.json"
    case.write_text(json.dumps({"name": name, "html": str(html), "profile": str(profile),
                                "threshold": threshold, "max_load_ms": MAX_LOAD_MS}))
    try:
        cp = subprocess.run([node, BROWSER_TEST, "--node-modules", modules, "--chromium", chromium,
                             "--artifacts", ARTIFACTS, case], capture_output=True, text=True,
                            timeout=NODE_TIMEOUT_S, cwd=REPO)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"the browser test of {name} did not finish in {NODE_TIMEOUT_S} s: {e.stderr}")
    assert cp.returncode == 0, f"the browser test of {name} failed to run:\n{cp.stderr}"
    report = json.loads(cp.stdout.strip().splitlines()[-1])
    (ARTIFACTS / f"{name}-report.json").write_text(json.dumps(report, indent=1))
    failed = [f"{c['name']}: {c['detail']}" for c in report["checks"] if not c["ok"]]
    assert not failed, f"{name} ({html}):\n  " + "\n  ".join(failed)
    assert len(report["checks"]) >= min_checks, report["checks"]
    return report


def make_page(tmp_path, profile, name):
    html = tmp_path / f"{name}.html"
    cp = run_scry(["view", "--standalone", "-o", html, profile])
    assert cp.returncode == 0, cp.stderr
    return html


@pytest.fixture(scope="module")
def any_python(pythons):
    for v in SUPPORTED:
        if pythons.get(v):
            return pythons[v]
    pytest.skip("no supported Python is installed")


def test_browser_real_profile_hotspots(scry, browser, any_python, tmp_path):
    ran = run_profiled(any_python, EXAMPLE, outfile=tmp_path / "hot.json")
    prof = load_profile(ran)
    assert prof["files"], ran.describe()
    run_browser(browser, tmp_path, "hotspots", make_page(tmp_path, ran.profile_path, "hotspots"),
                ran.profile_path)


def test_browser_real_profile_many_files(scry, browser, any_python, tmp_path):
    ran = run_profiled(any_python, "run_filters.py", outfile=tmp_path / "filters.json",
                       options=("--profile-all",))
    prof = load_profile(ran)
    assert len(prof["files"]) >= 3, list(prof["files"])
    run_browser(browser, tmp_path, "many-files", make_page(tmp_path, ran.profile_path, "many"),
                ran.profile_path)


def test_browser_empty_profile_note(scry, browser, any_python, tmp_path):
    ran = run_profiled(any_python, "run_filters.py", outfile=tmp_path / "empty.json",
                       options=("--profile-only", "nomatch"))
    prof = load_profile(ran)
    assert not prof["files"] and prof.get("note"), prof
    run_browser(browser, tmp_path, "empty", make_page(tmp_path, ran.profile_path, "empty"),
                ran.profile_path, min_checks=8)


def synthetic_profile(n_lines=10_000):
    """One 10,000-line file with CPU, memory, copy, GPU and leaks, two small files, the global
    footprint and Scalene-format stacks: every column and chart the page has."""
    rng = random.Random(6)
    big = "/synthetic/big_module.py"

    def line(i, text):
        hot = i % 97 == 0
        py = rng.uniform(0.5, 3) if hot else (rng.uniform(0, 0.2) if i % 5 == 0 else 0)
        mem = i % 211 == 0
        return {"lineno": i, "line": text + "\n", "n_cpu_percent_python": py,
                "n_cpu_percent_c": py / 3 if i % 2 else 0, "n_sys_percent": py / 5 if i % 3 else 0,
                "n_core_utilization": 0.1, "n_samples": int(py * 10), "cpu_samples_list": [],
                "n_malloc_mb": 12.5 if mem else 0, "n_mallocs": 3 if mem else 0,
                "n_peak_mb": 8.0 if mem else 0, "n_avg_mb": 4.0 if mem else 0,
                "n_max_held_mb": 40.0 if mem else 0,
                "n_growth_mb": 0, "n_python_fraction": 0.4 if mem else 0,
                "n_usage_fraction": 0.01 if mem else 0, "n_copy_mb_s": 3.0 if i % 401 == 0 else 0,
                "memory_samples": [[k * 10_000_000, (k % 7) * 1.5] for k in range(50)] if mem else [],
                "n_gpu_percent": 20.0 if i % 503 == 0 else 0, "n_gpu_avg_memory_mb": 0,
                "n_gpu_peak_memory_mb": 512.0 if i % 503 == 0 else 0}

    lines = [line(i, f"    value_{i} = compute(value_{i - 1}) if i < {i} else None  # & <tag>")
             for i in range(1, n_lines + 1)]
    total = sum(e["n_cpu_percent_python"] + e["n_cpu_percent_c"] + e["n_sys_percent"]
                for e in lines)
    scale = 80.0 / total
    for e in lines:
        for k in ("n_cpu_percent_python", "n_cpu_percent_c", "n_sys_percent"):
            e[k] *= scale
    funcs = [{"lineno": s, "line": f"func_{s}", "n_cpu_percent_python": 1.0, "n_cpu_percent_c": 0,
              "n_sys_percent": 0} for s in range(1, n_lines, 100)]
    small = {f"/synthetic/small_{k}.py": {
        "percent_cpu_time": 5.0 - k, "n_samples": 10,
        "lines": [{"lineno": j, "line": f"x{j} = {j}\n", "n_cpu_percent_python": 1.0 if j == 2 else 0,
                   "n_cpu_percent_c": 0, "n_sys_percent": 0, "n_samples": 1} for j in range(1, 6)],
        "functions": [{"lineno": 1, "line": "<module>", "n_cpu_percent_python": 1.0,
                       "n_cpu_percent_c": 0, "n_sys_percent": 0}],
        "leaks": {}, "imports": []} for k in range(2)}
    names = ["main", "run_epoch", "train_step", "forward", "backward", "load_batch", "decode",
             "matmul", "softmax", "checksum"]
    first_line = {name: 100 * (k + 1) + 5 for k, name in enumerate(names)}
    stacks = []
    for _ in range(400):
        depth = rng.randint(1, 8)
        frames = [f"{big} <module>:1;"] + [
            f"{big} {name}:{first_line[name]};" for name in rng.sample(names, depth)]
        n = rng.randint(1, 50)
        stacks.append([frames, {"count": n, "python_time": n * 0.6 / 5000,
                                "c_time": n * 0.3 / 5000, "cpu_samples": n / 5000,
                                "sys_time": n * 0.1 / 5000}])
    return {
        "tool": "scry", "version": "0.1.0", "program": "/synthetic/train.py", "args": ["--epochs", "3"],
        "entrypoint_dir": "/synthetic", "filename": "/synthetic", "python_version": "3.12.1",
        "elapsed_time_sec": 12.5, "sampled_time_sec": 12.0, "profiled_time_sec": 11.0,
        "n_samples": 5000, "processes": 2, "cpu_sampling_rate": 0.01, "use_virtual_time": False,
        "memory": True, "gpu": True, "gpu_device": "GPU", "max_footprint_mb": 812.0,
        "growth_rate": 12.0,
        "samples": [[k * 125_000_000, 100 + 7 * k] for k in range(100)],
        "stacks": stacks,
        "files": {big: {"percent_cpu_time": 80.0, "n_samples": 4000, "lines": lines,
                        "functions": funcs, "imports": [],
                        "leaks": {"211": {"likelihood": 0.95, "velocity_mb_s": 1.5},
                                  "4220": {"likelihood": 0.9, "velocity_mb_s": 0.5}}},
                  **small},
    }


def test_browser_synthetic_10k_lines(scry, browser, tmp_path):
    prof = write_json(tmp_path / "synthetic.json", synthetic_profile())
    report = run_browser(browser, tmp_path, "synthetic-10k", make_page(tmp_path, prof, "synth"),
                         prof)
    print(f"10,000-line page: loaded in {report['load_ms']} ms "
          f"(script {report['render_ms']:.0f} ms)")


def test_browser_footprint_spans_the_run_and_oversubscription(scry, browser, tmp_path):
    """A long run whose memory was sampled only at its start (the last sample at 0.5 s of a 40 s
    run): the footprint chart's time axis still ends at 40 s, the line reaching the end; and an
    oversubscribed profile carries its warning."""
    doc = synthetic_profile(n_lines=200)
    doc.update({"elapsed_time_sec": 40.0, "sampled_time_sec": 39.5,
                "samples": [[k * 5_000_000, 10 + k] for k in range(101)],
                "oversubscribed": True, "run_queue_delay_sec": 12.0, "run_queue_cpu_sec": 20.0})
    doc["files"]["/synthetic/big_module.py"]["leaks"] = {}  # its leaks are on lines past 200
    prof = write_json(tmp_path / "long.json", doc)
    report = run_browser(browser, tmp_path, "long-run", make_page(tmp_path, prof, "long"), prof)
    names = {c["name"] for c in report["checks"]}
    assert {"footprint axis ends at the end of the run",
            "footprint line reaches the end of the axis",
            "oversubscription warned exactly when marked"} <= names, names
