"""End-to-end tests of `scry stacks` against real Python processes and their cores.

Ground truth comes from the targets themselves (tests/targets/three_threads.py prints every
thread's stack as Python sees it), so the comparison is exact: every frame's function
(co_qualname), file (co_filename) and line, stdlib frames included. Only the busy thread's
innermost line moves, within a known set of lines. The busy thread's gil/active flags are read
up to 5 times, as it may briefly drop the GIL; everything else must be right on every read.
On a free-threaded build (3.13t) without a GIL no thread may be said to hold one (`gil` null in
JSON, no `, gil` in text); with PYTHON_GIL=1 the busy thread holds it as in other builds.
"""

import json
import os
import re
import time
from pathlib import Path

import pytest

from conftest import TARGETS, run_scry, task_state, tracer_pid, wait_for_sleeping

FREE_THREADED = True  # conftest: python_exe includes 3.13t
STATIC_PYTHON = "/usr/bin/python3.11"
FLAG_ATTEMPTS = 5

THREAD_LINE = re.compile(r'Thread (\d+) \((active|idle)(, gil)?\)(?:: "(.*)")?')
FRAME_LINE = re.compile(r"    (\S.*?) \((.+):(\d+)\)")


# ---- turning both output forms into one shape: native_id -> thread -------------------------


def parse_json(cp):
    """The --json document, checked for the contract's fields and types, and its threads
    keyed by native id."""
    assert cp.returncode == 0, f"scry failed (rc {cp.returncode}):\n{cp.stdout}\n{cp.stderr}"
    doc = json.loads(cp.stdout)
    assert set(doc) >= {"pid", "python_version", "free_threaded", "threads"}, doc
    assert isinstance(doc["pid"], int) and isinstance(doc["python_version"], str)
    assert isinstance(doc["free_threaded"], bool), doc
    threads = {}
    for t in doc["threads"]:
        gil_kind = (bool, type(None)) if doc["free_threaded"] else bool
        for key, kind in (("thread_id", int), ("native_id", int), ("interpreter_id", int),
                          ("idle", bool), ("gil", gil_kind), ("frames", list)):
            assert isinstance(t.get(key), kind), f"thread field {key!r} is not {kind}: {t}"
        assert "name" in t and (t["name"] is None or isinstance(t["name"], str)), t
        for f in t["frames"]:
            assert isinstance(f.get("function"), str) and isinstance(f.get("file"), str) \
                and isinstance(f.get("line"), int), f"bad frame {f}"
        assert t["native_id"] not in threads, f"native id {t['native_id']} listed twice"
        threads[t["native_id"]] = {
            "name": t["name"], "idle": t["idle"], "gil": t["gil"],
            "thread_id": t["thread_id"], "interpreter_id": t["interpreter_id"],
            "frames": [(f["function"], f["file"], f["line"]) for f in t["frames"]]}
    return doc, threads


def parse_text(cp):
    """(header lines, threads keyed by native id) from the text output, whose grammar is
    header lines, then per thread a blank line, a `Thread ...` line and `    f (file:line)`s."""
    assert cp.returncode == 0, f"scry failed (rc {cp.returncode}):\n{cp.stdout}\n{cp.stderr}"
    lines = cp.stdout.split("\n")
    while lines and lines[-1] == "":
        lines.pop()
    assert "" in lines, f"no thread in the output:\n{cp.stdout}"
    first_blank = lines.index("")
    header, body = lines[:first_blank], lines[first_blank:]
    assert header, f"no header before the threads:\n{cp.stdout}"
    threads, current, i = {}, None, 0
    while i < len(body):
        assert body[i] == "", f"expected a blank line before a thread, got {body[i]!r}:\n" \
                              f"{cp.stdout}"
        m = THREAD_LINE.fullmatch(body[i + 1] if i + 1 < len(body) else "")
        assert m, f"bad thread line {body[i + 1:i + 2]}:\n{cp.stdout}"
        native_id = int(m.group(1))
        assert native_id not in threads, f"thread {native_id} listed twice:\n{cp.stdout}"
        current = threads[native_id] = {"name": m.group(4), "idle": m.group(2) == "idle",
                                        "gil": m.group(3) is not None, "frames": []}
        i += 2
        while i < len(body) and body[i] != "":
            f = FRAME_LINE.fullmatch(body[i])
            assert f, f"bad frame line {body[i]!r}:\n{cp.stdout}"
            current["frames"].append((f.group(1), f.group(2), int(f.group(3))))
            i += 1
    return header, threads


# ---- the comparison with the target's ground truth ------------------------------------------


def check_threads(ready, got, where, flags="pid"):
    """Asserts the exact thread set, names, ids and frames; returns the list of problems with
    the busy thread's flags (retried by the caller). Blocked threads' flags must be right."""
    expected = {t["native_id"]: t for t in ready["threads"]}
    has_gil = ready["gil"]
    assert set(got) == set(expected), (
        f"{where}: threads {sorted(got)} != expected {sorted(expected)} "
        f"({[(t['name'], t['native_id']) for t in ready['threads']]})")
    soft = []
    for native_id, exp in expected.items():
        g = got[native_id]
        label = f"{where}: thread {native_id} ({exp['name']})"
        assert g["name"] == exp["name"], f"{label}: name {g['name']!r} != {exp['name']!r}"
        if "thread_id" in g:
            assert g["thread_id"] == exp["ident"], \
                f"{label}: thread_id {g['thread_id']} != threading ident {exp['ident']}"
            assert g["interpreter_id"] == 0, f"{label}: interpreter_id {g['interpreter_id']}"
        want = [(f["function"], f["file"], f["line"]) for f in exp["frames"]]
        have = g["frames"]
        busy_lines = exp["frames"][0].get("lines")
        if busy_lines:
            assert have and have[0][:2] == want[0][:2] and have[0][2] in busy_lines, (
                f"{label}: innermost frame {have[:1]} is not {want[0][:2]} at one of the "
                f"lines {busy_lines}\nwhole stack: {have}")
            have, want = have[1:], want[1:]
        assert have == want, f"{label}: frames differ\n got: {have}\nwant: {want}"
        if not has_gil:  # JSON says null, text says nothing
            no_gil = None if "thread_id" in g else False
            assert g["gil"] is no_gil, f"{label}: gil {g['gil']!r} in a build without a GIL"
        if busy_lines:
            if g["idle"]:
                soft.append(f"{label}: busy thread reported idle")
            if has_gil and not g["gil"]:
                soft.append(f"{label}: busy thread does not hold the gil")
        elif not g["idle"]:
            # A blocked thread may be caught in the moment it wakes (a timed wait, a signal):
            # like the busy thread's flags, it must be right in one of the reads.
            soft.append(f"{label}: a blocked thread is reported active ({flags})")
            assert not g["gil"], f"{label}: a blocked thread is reported holding the gil"
    return soft


def read_with_retries(read_once, ready, where, flags="pid"):
    """Reads up to FLAG_ATTEMPTS times until the busy thread's flags are right too."""
    problems = []
    for attempt in range(FLAG_ATTEMPTS):
        got = read_once()
        soft = check_threads(ready, got, f"{where} (read {attempt + 1})", flags)
        if not soft:
            return got
        problems += soft
    pytest.fail(f"{where}: busy thread flags wrong in all {FLAG_ATTEMPTS} reads:\n"
                + "\n".join(problems))


def check_version_header(header, ready, where):
    text = "\n".join(header)
    version = ready["python_version"]
    assert re.search(rf"\bPython {re.escape(version)}(?![\d.])", text), (
        f"{where}: header does not name Python {version}:\n{text}")
    assert ("free-threaded" in text) == ready["free_threaded"], (
        f"{where}: header does not say whether the build is free-threaded:\n{text}")


def assert_still_running(target):
    """The target is detached, not stopped, keeps running and exits cleanly when told."""
    deadline = time.monotonic() + 2
    while True:
        states = {tid: task_state(target.pid, tid) for tid in os.listdir(f"/proc/{target.pid}/task")}
        tracer = tracer_pid(target.pid)
        if tracer == 0 and not any(s in "tT" for s in states.values()):
            break
        assert time.monotonic() < deadline, \
            f"target left traced/stopped after scry: TracerPid {tracer}, states {states}"
        time.sleep(0.02)
    # Still counting: a loaded machine may not run the busy thread for a while, so look for
    # progress for up to 2 s (a stopped target never makes any).
    c1 = c2 = target.count()
    deadline = time.monotonic() + 2
    while c2 <= c1 and time.monotonic() < deadline:
        time.sleep(0.05)
        c2 = target.count()
    assert c2 > c1, f"busy loop stopped after being read: count {c1} then {c2}"
    rc, final = target.stop()
    assert rc == 0 and final.get("done") is True and final["count"] >= c2, (rc, final)


# ---- the target's own ground truth, checked without scry -------------------------------------


def _markers(path):
    lines = {}
    for number, text in enumerate(Path(path).read_text().splitlines(), 1):
        code, sep, comment = text.partition("# @")
        if sep and code.strip():
            lines.setdefault(comment.strip(), []).append(number)
    return lines


def test_target_ground_truth(python_exe, start_target):
    """The target's self-reported stacks agree with its marker comments (so a mistake in the
    target cannot make the scry tests pass or fail wrongly)."""
    target = start_target(python_exe)
    m = _markers(TARGETS / "three_threads.py")
    path = str(TARGETS / "three_threads.py")
    own = {t["name"]: [(f["function"], f["line"]) for f in t["frames"] if f["file"] == path]
           for t in target.ready["threads"]}
    assert own["busy"] == [("crunch", None), ("Worker.run", m["busy-call"][0])]
    assert own["waiter"] == [("Gate.block", m["waiter-block"][0]),
                             ("wait_for_stop", m["waiter-call"][0])]
    assert own["MainThread"] == [("outer.<locals>.inner", m["main-block"][0]),
                                 ("outer", m["main-inner-call"][0]),
                                 ("serve", m["main-outer-call"][0]),
                                 ("main", m["main-serve-call"][0]),
                                 ("<module>", m["main-call"][0])]
    busy = target.ready["threads"][0]
    assert busy["frames"][0]["lines"] == m["busy"] and len(m["busy"]) == 2
    # Thread.run, _bootstrap_inner, _bootstrap come from threading.py, as Python reports them.
    for t in target.ready["threads"][:2]:
        stdlib = [f["function"] for f in t["frames"] if f["file"] != path]
        assert stdlib[-3:] == ["Thread.run", "Thread._bootstrap_inner", "Thread._bootstrap"]
    assert_still_running(target)


# ---- live processes ---------------------------------------------------------------------------


def test_stacks_pid_json(python_exe, scry, start_target):
    target = start_target(python_exe)
    ready = target.ready
    docs = []

    def read():
        doc, threads = parse_json(run_scry(["stacks", "--pid", target.pid, "--json"]))
        docs.append(doc)
        return threads

    read_with_retries(read, ready, f"Python {ready['python_version']} --pid --json")
    for doc in docs:
        assert doc["pid"] == target.pid
        assert doc["python_version"] == ready["python_version"]
        assert doc["free_threaded"] == ready["free_threaded"]
    assert_still_running(target)


def test_stacks_pid_text(python_exe, scry, start_target):
    target = start_target(python_exe)
    ready = target.ready
    where = f"Python {ready['python_version']} --pid (text)"

    def read():
        header, threads = parse_text(run_scry(["stacks", "--pid", target.pid]))
        check_version_header(header, ready, where)
        return threads

    read_with_retries(read, ready, where)
    assert_still_running(target)


def test_stacks_unnamed_thread(python_exe, scry, start_target):
    """A thread with no threading name: name null in JSON, no `: "..."` in text."""
    target = start_target(python_exe, "unnamed_thread.py")
    wait_for_sleeping(target.pid)
    where = f"Python {target.ready['python_version']} unnamed thread"
    _, threads = parse_json(run_scry(["stacks", "--pid", target.pid, "--json"]))
    check_threads(target.ready, threads, where + " --json")
    _, threads = parse_text(run_scry(["stacks", "--pid", target.pid]))
    check_threads(target.ready, threads, where + " (text)")
    rc, final = target.stop()
    assert rc == 0 and final == {"done": True}


# ---- cores --------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["json", "text", "json-exe"])
def test_stacks_core(python_exe, scry, start_target, make_core, mode):
    """The same stacks from a gcore core; idle there means 'inside a system call'."""
    target = start_target(python_exe)
    ready = target.ready
    where = f"Python {ready['python_version']} --core ({mode})"
    extra = {"json": ["--json"], "text": [],
             "json-exe": ["--exe", os.path.realpath(python_exe), "--json"]}[mode]

    def read():
        core = make_core(target.pid)
        try:
            cp = run_scry(["stacks", "--core", core] + extra)
        finally:
            core.unlink(missing_ok=True)
        if mode == "text":
            header, threads = parse_text(cp)
            check_version_header(header, ready, where)
            return threads
        doc, threads = parse_json(cp)
        assert doc["pid"] == target.pid, f"{where}: pid {doc['pid']} != {target.pid}"
        assert doc["python_version"] == ready["python_version"], where
        return threads

    read_with_retries(read, ready, where, flags="core")
    assert_still_running(target)


# ---- Debian's static interpreter (libpython inside the executable) ---------------------------


@pytest.mark.skipif(not os.path.exists(STATIC_PYTHON), reason=f"{STATIC_PYTHON} is absent")
def test_stacks_static_python(scry, start_target):
    target = start_target(STATIC_PYTHON)
    ready = target.ready
    where = f"{STATIC_PYTHON} (Python {ready['python_version']}, static)"

    def read_json():
        doc, threads = parse_json(run_scry(["stacks", "--pid", target.pid, "--json"]))
        assert doc["python_version"] == ready["python_version"], where
        assert doc["pid"] == target.pid
        return threads

    def read_text():
        header, threads = parse_text(run_scry(["stacks", "--pid", target.pid]))
        check_version_header(header, ready, where)
        return threads

    read_with_retries(read_json, ready, where + " --json")
    read_with_retries(read_text, ready, where + " (text)")
    assert_still_running(target)


# ---- a free-threaded build with its GIL enabled again -----------------------------------------


def test_stacks_free_threaded_gil_enabled(pythons, scry, start_target, monkeypatch):
    """3.13t with PYTHON_GIL=1 has a GIL (the interpreter's gil.enabled): the busy thread is
    reported holding it, as in a default build, and the document still says free-threaded."""
    exe = pythons.get("3.13t")
    if not exe:
        pytest.skip("Python 3.13t is not installed (scripts/install-pythons.sh builds it)")
    monkeypatch.setenv("PYTHON_GIL", "1")
    target = start_target(exe)
    ready = target.ready
    assert ready["free_threaded"] and ready["gil"], ready
    docs = []

    def read():
        doc, threads = parse_json(run_scry(["stacks", "--pid", target.pid, "--json"]))
        docs.append(doc)
        return threads

    read_with_retries(read, ready, "Python 3.13t PYTHON_GIL=1 --pid --json")
    assert all(doc["free_threaded"] for doc in docs)
    assert_still_running(target)
