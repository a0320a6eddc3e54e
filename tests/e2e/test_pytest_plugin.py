"""scry's pytest plugin (python/scry/pytest_plugin.py, docs/pytest.md), in real pytest sessions
(pytester) of every installed interpreter that has pytest (scripts/install-deps.sh installs it,
and pytest-xdist): `pytest --scry` re-runs the session under scry run and writes its profile;
scry_limit fails the test that allocates 200 MB under memory_mb=50 and the one that spins 0.5 s
under cpu_s=0.1, and the one that keeps growing above 100 MiB under leaks=0, naming the line
responsible, while tests under their limits (and one that churns at 110 MB) pass;
--scry-per-test's table gives the 200 MB test a peak within 5% of 200 MB and the spinning test
its CPU time within 15% of what time.thread_time() measured around the test's call; with -n 2 the
workers' parts make one profile that holds lines of tests that ran in different workers, the
controller's table lists every test and a worker's test over its limit fails there with its line;
without --scry the plugin changes nothing (no re-run, the limits reported unchecked); under `scry
run -m pytest` it uses the agent that is there; an in-process pytest.main(["--scry"]) is refused. The browser view of a session's profile is screenshot for
docs/pytest.md (SCRY_DOCS_IMAGES=1 copies it into docs/images/)."""

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import REPO, SCRY, check_profile, file_detail, line_entry, preferred_python, run_scry
from test_view_html import ARTIFACTS, browser, make_page, run_browser  # noqa: F401 (fixture)

pytest_plugins = ["pytester"]

SESSION_S = 120
# One session with every kind of test: the truth of each number is in the source (200 MB held,
# 10 MB held) or measured in the session (the thread_time of each test's call: LIMITS_CONFTEST).
LIMITS_TESTS = '''\
import os
import pathlib
import time

import pytest


def spin(seconds):
    start = time.thread_time()
    n = 0
    while time.thread_time() - start < seconds:  # SPIN
        n += 1
    return n


# The leak rule (docs/json-schema.md, "Leaks") needs a footprint above 100 MiB and growth over
# many of the collector's batches (one every 10 ms): 40 steps of 20 ms; and new maxima of the
# process's footprint, so these come first, before test_big's 200 MB. A test's growth is judged
# over the test's own window: test_warm_up makes the process older when test_leaky starts than
# its 0.8 s of growth, which a rule judging the process's whole life would not flag (nor would it
# whenever a loaded machine made pytest's start slower than that).
KEPT = []


def test_warm_up():
    time.sleep(1.2)


@pytest.mark.scry_limit(leaks=0)
def test_leaky():
    base = bytearray(110 * 2**20)
    for _ in range(40):
        KEPT.append(bytearray(2**20))  # LEAK
        time.sleep(0.02)
    del base


@pytest.mark.scry_limit(leaks=0)
def test_no_leak():
    base = bytearray(110 * 2**20)
    for _ in range(40):
        temporary = bytearray(2**20)
        time.sleep(0.02)
        del temporary
    del base


@pytest.mark.scry_limit(memory_mb=50)
def test_big():
    held = bytearray(200 * 2**20)  # BIG
    assert len(held) == 200 * 2**20


@pytest.mark.scry_limit(memory_mb=50)
def test_small():
    held = bytearray(10 * 2**20)  # SMALL
    assert len(held) == 10 * 2**20


@pytest.mark.scry_limit(cpu_s=0.1)
def test_spin_over():
    assert spin(0.5)


@pytest.mark.scry_limit(cpu_s=5)
def test_spin_under():
    assert spin(0.3)


def test_plain():
    pathlib.Path("env.txt").write_text(repr(os.environ.get("SCRY_PART_DIR")))
'''
# The truth of a test's CPU seconds: its call's thread_time, measured by a hook wrapper inside
# scry's (trylast), so that it covers what scry's window covers: the spin, and whatever else the
# call does (a collection of the garbage collector that an allocation there starts costs 10-26 ms
# of CPU here under load; a truth taken around the spin alone once fell 48 ms short in CI).
LIMITS_CONFTEST = '''\
import pathlib
import time

import pytest


@pytest.hookimpl(wrapper=True, trylast=True)
def pytest_runtest_call(item):
    start = time.thread_time()
    try:
        return (yield)
    finally:
        pathlib.Path(f"cpu-{item.name}.txt").write_text(repr(time.thread_time() - start))
'''
# Each test spins on a line of its own, so that the merged profile says which tests it saw.
XDIST_TESTS = '''\
import os
import pathlib
import time

import pytest


def mark(name):
    pathlib.Path(f"pid-{name}.txt").write_text(str(os.getpid()))
    return time.thread_time()

''' + "".join(f'''

@pytest.mark.scry_limit(cpu_s={5 if name != "d" else 0.05})
def test_{name}():
    start, n = mark("{name}"), 0
    while time.thread_time() - start < 0.2:  # SPIN {name}
        n += 1
    assert n
''' for name in "abcd")
ROW = re.compile(r"^\s*([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(-|[\d.-]+)\s+(-|[\d.-]+)"
                 r"\s+(\S+::\S+)\s*$")


def lineno_of(source, mark):
    return next(n for n, text in enumerate(source.splitlines(), 1) if text.endswith(mark))


def has_module(python, module):
    return subprocess.run([python, "-c", f"import {module}"], capture_output=True).returncode == 0


def run_session(pytester, monkeypatch, python, source, *args):
    """Runs `python -m pytest -p scry.pytest_plugin ARGS` on test_session.py made of source,
    with the checkout's package and binary; returns pytester's result."""
    for module, package in (("pytest", "pytest"), ("xdist", "pytest-xdist")):
        if (module == "pytest" or "-n" in args) and not has_module(python, module):
            pytest.skip(f"{package} is not installed for {python} (scripts/install-deps.sh "
                        f"packages installs it)")
    monkeypatch.setenv("PYTHONPATH", str(REPO / "python"))
    monkeypatch.setenv("SCRY_BIN", str(SCRY))
    for name in ("SCRY_PART_DIR", "LD_PRELOAD", "SCRY_PYTEST_REEXEC"):
        monkeypatch.delenv(name, raising=False)
    pytester.makepyfile(test_session=source)
    return pytester.run(python, "-m", "pytest", "-p", "scry.pytest_plugin",
                        "-p", "no:cacheprovider", "-q", *args, timeout=SESSION_S)


@pytest.fixture
def session(pytester, monkeypatch, python_exe):
    """session(source, *args): run_session on each interpreter."""
    return lambda source, *args: run_session(pytester, monkeypatch, python_exe, source, *args)


def table(result):
    """{test id: (cpu, python, native, system, peak MB, net MB)} of --scry-per-test's table."""
    return table_of(result.outlines)


def table_of(lines):
    rows = {}
    for line in lines:
        m = ROW.match(line)
        if m:
            rows[m.group(7).split("::")[-1]] = tuple(
                None if v == "-" else float(v) for v in m.groups()[:6])
    return rows


def failure_of(result, test):
    """The failure section pytest printed for the test."""
    text = "\n".join(result.outlines)
    m = re.search(rf"_{{3,}} {test} _{{3,}}\n(.*?)(?=\n_{{3,}} |\n=+ )", text, re.S)
    assert m, f"no failure section for {test}:\n{text}"
    return m.group(1)


def describe(result):
    return "\n".join(result.outlines + ["--- stderr"] + result.errlines)


def test_limits_table_and_profile(session, pytester):
    out = pytester.path / "session.json"
    pytester.makeconftest(LIMITS_CONFTEST)
    result = session(LIMITS_TESTS, "--scry", "--scry-per-test", "--scry-out", str(out))
    summary = describe(result)
    assert result.ret == 1, summary
    result.assert_outcomes(passed=5, failed=3)
    big_line = lineno_of(LIMITS_TESTS, "# BIG")
    spin_line = lineno_of(LIMITS_TESTS, "# SPIN")
    leak_line = lineno_of(LIMITS_TESTS, "# LEAK")

    big = failure_of(result, "test_big")
    assert "over its limit of 50 MB" in big, big
    assert f"most allocated at test_session.py:{big_line} (" in big, big
    over = failure_of(result, "test_spin_over")
    assert "over its limit of 0.1 s" in over, over
    assert f"most CPU time at test_session.py:{spin_line} (" in over, over
    leak = failure_of(result, "test_leaky")
    assert f"1 likely leak, over its limit of 0: test_session.py:{leak_line} (" in leak, leak

    rows = table(result)
    assert set(rows) == {"test_warm_up", "test_big", "test_small", "test_spin_over",
                         "test_spin_under", "test_plain", "test_leaky", "test_no_leak"}, summary
    peak = rows["test_big"][4]
    assert abs(peak - 200) <= 0.05 * 200, f"test_big's peak {peak} MB, not 200 MB\n{summary}"
    # Within the allocation window (1 MiB) of the truth: the footprint moves in its steps.
    small = rows["test_small"][4]
    assert abs(small - 10) <= 1.5, f"test_small's peak {small} MB, not 10 MB\n{summary}"
    # Net: what the test kept once it returned (its locals are gone; KEPT holds 40 MB).
    for name, kept in (("test_big", 0), ("test_small", 0), ("test_leaky", 40)):
        net = rows[name][5]
        assert abs(net - kept) <= 1.5, f"{name}'s net {net} MB, not {kept} MB\n{summary}"
    said = float(re.search(r"memory peaked at ([\d.]+) MB", big).group(1))
    assert said == peak, (said, peak)
    for name in ("over", "under"):
        truth = float((pytester.path / f"cpu-test_spin_{name}.txt").read_text())
        cpu = rows[f"test_spin_{name}"][0]
        assert abs(cpu - truth) <= 0.15 * truth, \
            f"test_spin_{name}: {cpu} s on the CPU, the call's thread_time says {truth:.3f} s\n{summary}"
    # The re-run session is the profiled one.
    assert (pytester.path / "env.txt").read_text() != "None"

    profile = json.loads(out.read_text())
    check_profile(profile)
    detail = file_detail(profile, pytester.path / "test_session.py")
    assert detail is not None, list(profile["files"])
    allocated = line_entry(detail, big_line).get("n_malloc_mb", 0)
    assert abs(allocated - 200) <= 0.05 * 200, (big_line, line_entry(detail, big_line))
    view = run_scry(["view", "--cli", out])
    assert view.returncode == 0, view.stderr
    assert "bytearray(200 * 2**20)" in view.stdout + view.stderr, view.stdout


def test_xdist_one_merged_profile(session, pytester):
    out = pytester.path / "xdist.json"
    result = session(XDIST_TESTS, "-n", "2", "--scry", "--scry-per-test", "--scry-out", str(out))
    summary = describe(result)
    assert result.ret == 1, summary
    # test_d goes over its limit in its worker, which names the line from its own profile.
    result.assert_outcomes(passed=3, failed=1)
    over = failure_of(result, "test_d")
    assert "over its limit of 0.05 s; most CPU time at test_session.py:" \
        f"{lineno_of(XDIST_TESTS, '# SPIN d')} (" in over, over
    assert set(table(result)) == {f"test_{n}" for n in "abcd"}, summary
    pids = {n: (pytester.path / f"pid-{n}.txt").read_text() for n in "abcd"}
    assert len(set(pids.values())) == 2, f"the tests ran in {pids}: not in two workers"
    profile = json.loads(out.read_text())
    check_profile(profile)
    assert profile["processes"] >= 3, profile["processes"]  # the controller and two workers
    detail = file_detail(profile, pytester.path / "test_session.py")
    assert detail is not None, list(profile["files"])
    for n in "abcd":
        entry = line_entry(detail, lineno_of(XDIST_TESTS, f"# SPIN {n}"))
        assert entry["n_samples"] > 0, f"test_{n} (pid {pids[n]}) is not in the profile: {entry}"


# pytest-memray's marker, unedited: limit_memory("24 MB") is scry_limit(memory_mb=24); the closest
# marker wins between the two spellings; a size memray would not read fails the test.
MEMRAY_TESTS = '''\
import pytest

pytestmark = pytest.mark.scry_limit(memory_mb=500)


@pytest.mark.limit_memory("24 MB")
def test_over():
    held = bytearray(100 * 2**20)  # OVER
    assert len(held) == 100 * 2**20


@pytest.mark.limit_memory("24mb")
def test_under():
    held = bytearray(8 * 2**20)
    assert len(held) == 8 * 2**20


def test_module_limit():
    held = bytearray(100 * 2**20)  # under the module's 500 MB
    assert len(held) == 100 * 2**20


@pytest.mark.limit_memory("0.5 GB")
@pytest.mark.scry_limit(memory_mb=24)
def test_closest_wins():
    held = bytearray(100 * 2**20)  # over scry_limit's 24 MB, the closer marker
    assert len(held) == 100 * 2**20


@pytest.mark.limit_memory("24 furlongs")
def test_bad_size():
    pass
'''


def test_memray_limit_memory_marker(session, pytester):
    result = session(MEMRAY_TESTS, "--scry", "--strict-markers")
    summary = describe(result)
    result.assert_outcomes(passed=2, failed=2, errors=1)
    over = failure_of(result, "test_over")
    assert "over its limit of 24 MB; most allocated at test_session.py:" \
        f"{lineno_of(MEMRAY_TESTS, '# OVER')} (" in over, over
    closest = failure_of(result, "test_closest_wins")
    assert "over its limit of 24 MB" in closest, closest
    assert "limit_memory takes one size, such as limit_memory(\"24 MB\")" in summary, summary


def test_without_scry_nothing_changes(session, pytester):
    result = session(LIMITS_TESTS, "-k", "big or spin_over or plain")
    summary = describe(result)
    assert result.ret == 0, summary
    result.assert_outcomes(passed=3, deselected=5)
    assert (pytester.path / "env.txt").read_text() == "None", "the session ran under scry"
    assert not list(pytester.path.glob("*.json")), list(pytester.path.iterdir())
    assert "the scry_limit limits of 2 tests were not checked: pytest ran without --scry" \
        in summary, summary


def test_under_scry_run(pytester, monkeypatch, tmp_path):
    """`scry run -m pytest` (no --scry): the plugin uses the agent there; --scry-out is refused
    since scry run says where the profile goes."""
    python = preferred_python()
    monkeypatch.setenv("PYTHONPATH", str(REPO / "python"))
    monkeypatch.setenv("SCRY_BIN", str(SCRY))
    pytester.makepyfile(test_session=LIMITS_TESTS)
    out = tmp_path / "run.json"
    base = ["run", "--python", python, "--no-view", "-o", out, "-m", "pytest", "-q",
            "-p", "scry.pytest_plugin", "-p", "no:cacheprovider"]
    cp = run_scry(base + ["--scry-per-test", "-k", "big or plain"], timeout=SESSION_S,
                  cwd=pytester.path)
    assert cp.returncode == 1, cp.stdout + cp.stderr
    assert "1 failed, 1 passed" in cp.stdout, cp.stdout
    rows = table_of(cp.stdout.splitlines())
    assert set(rows) == {"test_big", "test_plain"} and out.is_file(), cp.stdout
    assert abs(rows["test_big"][4] - 200) <= 0.05 * 200, cp.stdout
    cp = run_scry(base + ["--scry-out", tmp_path / "x.json"], timeout=SESSION_S,
                  cwd=pytester.path)
    assert cp.returncode == 4, cp.stdout + cp.stderr  # pytest's usage error
    assert "already runs under scry run" in cp.stderr, cp.stderr


def test_browser_view_of_a_session(browser, pytester, monkeypatch, tmp_path):
    """The page of an xdist session's profile passes the viewer's browser checks; its first
    screenshot is docs/pytest.md's (copied there with SCRY_DOCS_IMAGES=1)."""
    out = pytester.path / "xdist.json"
    result = run_session(pytester, monkeypatch, preferred_python(), XDIST_TESTS, "-n", "2",
                         "--scry", "--scry-out", out.name)
    assert result.ret == 1, describe(result)  # test_d over its limit
    report = run_browser(browser, tmp_path, "pytest-session",
                         make_page(tmp_path, out, "pytest-session"), out)
    shot = ARTIFACTS / "pytest-session-loaded.png"
    assert str(shot) in report["screenshots"], report["screenshots"]
    if os.environ.get("SCRY_DOCS_IMAGES") == "1":
        shutil.copy(shot, REPO / "docs" / "images" / "pytest-session.png")


def test_in_process_session_is_refused(pytester, monkeypatch):
    """pytest.main(["--scry"]) from a program cannot be re-run under scry run: a usage error
    that says what to do, not a session without its profile."""
    monkeypatch.syspath_prepend(str(REPO / "python"))
    monkeypatch.delenv("SCRY_PART_DIR", raising=False)
    pytester.makepyfile(test_session="def test_nothing():\n    pass\n")
    result = pytester.runpytest_inprocess("-p", "scry.pytest_plugin", "--scry")
    assert result.ret == pytest.ExitCode.USAGE_ERROR, describe(result)
    assert "run the session with `scry run -m pytest ...`" in "\n".join(result.errlines), \
        describe(result)
    assert not (pytester.path / "scry-profile.json").exists()
