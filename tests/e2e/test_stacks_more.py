"""End-to-end tests of `scry stacks --locals`, `--async`, `--subprocesses` and `--native`, and of
the errors a target can cause, against tests/targets/stacks_more.py parked in a known state.

Ground truth comes from the target: it prints the repr() and type name of each known local as
the interpreter itself makes them, the line its frame waits on, and the secrets it made at run
time (random, so that no code constant holds them); the task tree is the one its code builds
(main awaits A, A awaits B, C sleeps in asyncio.sleep, G gathers G1 and G2). The asyncio test is
also the check of _asyncio.Task's field offsets and frame states (src/cpython/async_tasks.c): a
wrong one gives a wrong name, state, edge or coroutine chain.
"""

import json
import os
import re
import shutil

import pytest

from conftest import run_scry, wait_for_sleeping

FREE_THREADED = True  # conftest: python_exe includes 3.13t
SCRIPT = "stacks_more.py"
STATIC_PYTHON = "/usr/bin/python3.11"


def start(start_target, monkeypatch, python, mode):
    monkeypatch.setenv("STACKS_MORE_MODE", mode)
    target = start_target(python, SCRIPT)
    wait_for_sleeping(target.pid)
    return target


def ok_json(cp):
    assert cp.returncode == 0, f"scry failed (rc {cp.returncode}):\n{cp.stdout}\n{cp.stderr}"
    return json.loads(cp.stdout)


def error_doc(cp, code):
    """A --json error document with this code (exit status 1)."""
    assert cp.returncode == 1, f"rc {cp.returncode}:\n{cp.stdout}\n{cp.stderr}"
    doc = json.loads(cp.stdout)
    assert doc["error"]["code"] == code, doc
    assert doc["error"]["message"], doc
    return doc


def main_thread(doc, pid):
    return next(t for t in doc["threads"] if t["native_id"] == pid)


# ---- --locals ---------------------------------------------------------------------------------


def test_locals(python_exe, scry, start_target, monkeypatch):
    """The known locals of park() with their values as repr() shows them, a cell dereferenced,
    a long str cut, and both secrets (by name: password; by value: "api_key=...") redacted:
    their values appear nowhere in the output, text or JSON."""
    check_locals(start_target, monkeypatch, python_exe)


@pytest.mark.skipif(not os.path.exists(STATIC_PYTHON), reason=f"{STATIC_PYTHON} is absent")
def test_locals_static_python(scry, start_target, monkeypatch):
    """The same with Debian's static interpreter (libpython inside the executable)."""
    check_locals(start_target, monkeypatch, STATIC_PYTHON)


def check_locals(start_target, monkeypatch, python_exe):
    target = start(start_target, monkeypatch, python_exe, "locals")
    ready = target.ready
    where = f"Python {ready['python']} ({python_exe})"
    secrets = [ready["password"], ready["password"].split("-", 1)[1],
               ready["note"].split("=", 1)[1]]

    cp = run_scry(["stacks", "--pid", target.pid, "--locals", "--json"])
    doc = ok_json(cp)
    for s in secrets:
        assert s not in cp.stdout and s not in cp.stderr, f"{where}: a secret leaked"
    frames = main_thread(doc, target.pid)["frames"]
    park = next((f for f in frames if f["function"] == "park"), None)
    assert park, f"{where}: no park frame in {[f['function'] for f in frames]}"
    assert park["line"] == ready["line"], f"{where}: park at line {park['line']}"
    assert park["locals_truncated"] is False
    got = {l["name"]: l for l in park["locals"]}
    for name, text in ready["reprs"].items():
        assert got[name]["value"] == text, f"{where}: {name} = {got[name]} != {text}"
        assert got[name]["type"] == ready["types"][name], f"{where}: {name}: {got[name]}"
        assert got[name]["redacted"] is False and got[name]["cell"] is False, got[name]
    assert got["items"]["value"] == "list[len=3]", got["items"]
    assert got["shown"]["value"] == "dict[len=7]", got["shown"]
    assert got["tags"]["value"] == "set[len=2]", got["tags"]
    assert got["pair"]["value"] == "tuple[len=2]", got["pair"]
    assert got["big"]["value"] == "<int over 64 bits>" and got["big"]["type"] == "int"
    assert got["long_text"]["value"] == "'" + ready["long_text"][:80] + "...'", got["long_text"]
    assert got["shared"] == {"name": "shared", "type": "str", "value": "'in a cell'",
                             "redacted": False, "cell": True}, got["shared"]
    assert re.fullmatch(r"<function at 0x[0-9a-f]+>", got["reader"]["value"]), got["reader"]
    for name in ("password", "note"):
        assert got[name]["value"] == "<redacted>" and got[name]["redacted"] is True, got[name]
        assert got[name]["type"] == "str", got[name]
    # locals of the other frames: wait_stop has none bound yet but `line` once read; every frame
    # has a locals list
    assert all(isinstance(f["locals"], list) for f in frames), frames

    cp = run_scry(["stacks", "--pid", target.pid, "--locals"])
    assert cp.returncode == 0, cp.stderr
    for s in secrets:
        assert s not in cp.stdout and s not in cp.stderr, f"{where}: a secret leaked (text)"
    lines = cp.stdout.split("\n")
    i = next(i for i, l in enumerate(lines) if l.startswith("    park ("))
    shown = {}
    for l in lines[i + 1:]:
        m = re.fullmatch(r"        (\w+)( \(cell\))? = (.*)", l)
        if not m:
            break
        shown[m.group(1)] = m.group(3)
    assert shown["count"] == ready["reprs"]["count"] and shown["label"] == ready["reprs"]["label"]
    assert shown["password"] == "<redacted>" and shown["note"] == "<redacted>", shown
    assert shown["shared"] == "'in a cell'", shown

    # without --locals: no locals key, as before
    doc = ok_json(run_scry(["stacks", "--pid", target.pid, "--json"]))
    assert all("locals" not in f for t in doc["threads"] for f in t["frames"]), doc
    rc, final = target.stop()
    assert rc == 0 and final == {"done": True}


# ---- --async ----------------------------------------------------------------------------------


def test_async(python_exe, scry, start_target, monkeypatch):
    """Three tasks and main: main awaits A, A awaits B (which waits on a bare future), C sleeps
    (its chain ends in asyncio's sleep, waiting on a Future); G awaits gather(G1, G2). 3.11-3.13
    find the tasks in asyncio's registries, 3.14+ in the per-thread lists of .AsyncioDebug."""
    target = start(start_target, monkeypatch, python_exe, "async")
    where = f"Python {target.ready['python']} ({python_exe})"
    doc = ok_json(run_scry(["stacks", "--pid", target.pid, "--async", "--json"]))
    tasks = {t["name"]: t for t in doc["async_tasks"]}
    assert set(tasks) == {"main", "A", "B", "C", "G", "G1", "G2"}, f"{where}: tasks {list(tasks)}"
    addr = {name: t["address"] for name, t in tasks.items()}
    assert len(set(addr.values())) == 7
    loops = {t["loop"] for t in tasks.values()}
    assert len(loops) == 1 and None not in loops, f"{where}: loops {loops}"
    for t in tasks.values():
        assert t["state"] == "pending", f"{where}: {t}"
    assert tasks["main"]["awaits_task"] == addr["A"], f"{where}: main: {tasks['main']}"
    assert tasks["A"]["awaits_task"] == addr["B"], f"{where}: A: {tasks['A']}"
    assert tasks["B"]["awaits_task"] is None and tasks["B"]["awaits_type"] == "_asyncio.Future"
    assert tasks["C"]["awaits_task"] is None and tasks["C"]["awaits_type"] == "_asyncio.Future"
    assert tasks["G"]["awaits_task"] is None, tasks["G"]
    assert tasks["G"]["awaits_type"] == "_GatheringFuture", tasks["G"]
    assert sorted(tasks["G"]["gathers"]) == sorted([addr["G1"], addr["G2"]]), tasks["G"]
    assert all(t["gathers"] == [] for n, t in tasks.items() if n != "G"), tasks
    chains = {n: [f["function"] for f in t["coroutine_stack"]] for n, t in tasks.items()}
    prefix = "run_async.<locals>."
    assert chains == {"main": [prefix + "main_coro"], "A": [prefix + "middle_a"],
                      "B": [prefix + "leaf_b"], "C": [prefix + "sleeper_c", "sleep"],
                      "G": [prefix + "gatherer"], "G1": [prefix + "gathered"],
                      "G2": [prefix + "gathered"]}, chains
    assert tasks["C"]["coroutine_stack"][1]["file"].endswith("asyncio/tasks.py")
    for t in tasks.values():
        for f in t["coroutine_stack"]:
            assert isinstance(f["line"], int) and f["line"] > 0, f"{where}: {f}"

    cp = run_scry(["stacks", "--pid", target.pid, "--async"])
    assert cp.returncode == 0, cp.stderr
    text = cp.stdout[cp.stdout.index("Asyncio tasks (7)"):]
    tree = [l for l in text.split("\n") if "(T)" in l]
    depth = {re.search(r"\(T\) (\S+)", l).group(1): len(l) - len(l.lstrip()) for l in tree}
    assert len(tree) == 7, tree
    assert depth["main"] == 0 and depth["C"] == 0 and depth["G"] == 0, tree
    assert depth["main"] < depth["A"] < depth["B"], tree
    assert depth["G"] < depth["G1"] == depth["G2"], tree
    assert re.search(r"\(T\) C \[pending, awaits _asyncio\.Future\]", text), text
    rc, final = target.stop()
    assert rc == 0 and final == {"done": True}


# ---- cores ------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["locals", "async"])
def test_core(scry, start_target, monkeypatch, make_core, pythons, mode):
    """A gcore core of a parked target gives the same locals and task tree as the live process
    (the process does not move while parked: every frame, local and task is where it was)."""
    python = next((pythons[v] for v in ("3.12", "3.13", "3.11") if pythons.get(v)), None)
    if not python:
        pytest.skip("no Python 3.11-3.13 installed")
    target = start(start_target, monkeypatch, python, mode)
    opt = "--locals" if mode == "locals" else "--async"
    live = ok_json(run_scry(["stacks", "--pid", target.pid, opt, "--json"]))
    core = make_core(target.pid)
    cp = run_scry(["stacks", "--core", core, opt, "--json"])
    core.unlink()
    doc = ok_json(cp)
    if mode == "locals":
        secret = target.ready["password"]
        assert secret not in cp.stdout and secret not in cp.stderr
        got = {t["native_id"]: t["frames"] for t in doc["threads"]}
        want = {t["native_id"]: t["frames"] for t in live["threads"]}
        assert got == want, f"core:\n{got}\nlive:\n{want}"
    else:
        key = lambda d: sorted(d["async_tasks"], key=lambda t: t["address"])  # noqa: E731
        assert key(doc) == key(live) and len(doc["async_tasks"]) == 7, doc["async_tasks"]
    rc, final = target.stop()
    assert rc == 0 and final == {"done": True}


# ---- --subprocesses ---------------------------------------------------------------------------


def test_subprocesses(scry, start_target, monkeypatch, pythons):
    python = next((pythons[v] for v in ("3.12", "3.13", "3.11") if pythons.get(v)), None)
    if not python:
        pytest.skip("no Python 3.11-3.13 installed")
    target = start(start_target, monkeypatch, python, "parent")
    child, other = target.ready["child"], target.ready["other"]
    doc = ok_json(run_scry(["stacks", "--pid", target.pid, "--subprocesses", "--json"]))
    kids = {c["pid"]: c for c in doc["subprocesses"]}
    assert set(kids) == {child, other}, kids
    assert kids[child]["parent_pid"] == target.pid and "error" not in kids[child]
    fns = [f["function"] for f in main_thread(kids[child], child)["frames"]]
    assert fns[:2] == ["wait_stop", "main"], fns
    assert "child" in kids[child]["command"]
    assert kids[other]["error"]["code"] == "not_python", kids[other]
    assert kids[other]["command"] == "sleep 3600"

    cp = run_scry(["stacks", "--pid", target.pid, "--subprocesses"])
    assert cp.returncode == 0, cp.stderr
    assert f"\nProcess {child} (child of {target.pid}): " in cp.stdout, cp.stdout
    assert re.search(rf"\nProcess {other} \(child of {target.pid}\): sleep 3600\n.*\(not_python\)",
                     cp.stdout), cp.stdout
    # without the option: no subprocesses key
    assert "subprocesses" not in ok_json(run_scry(["stacks", "--pid", target.pid, "--json"]))
    rc, final = target.stop()
    assert rc == 0 and final == {"done": True}


# ---- --native ---------------------------------------------------------------------------------


def test_native(python_exe, scry, start_target, monkeypatch):
    """The main thread sleeps in time.sleep: libc's clock_nanosleep, then the C function
    time_sleep, then native_inner and native_outer where the eval loop ran them; no eval-loop
    frame is left. Debian sid's 3.14/3.15 run the eval loop in a clone no symbol names: found
    by its range in the unwind tables, stitched the same way."""
    target = start(start_target, monkeypatch, python_exe, "native")
    where = f"Python {target.ready['python']} ({python_exe})"
    cp = run_scry(["stacks", "--pid", target.pid, "--native", "--json"])
    if cp.returncode == 1 and json.loads(cp.stdout)["error"]["code"] == "not_found":
        pytest.skip("libunwind-ptrace is not installed")
    doc = ok_json(cp)
    frames = main_thread(doc, target.pid)["frames"]
    kinds = [f["kind"] for f in frames]
    names = [f["function"] for f in frames]
    assert kinds[0] == "native", f"{where}: {names}"
    assert "clock_nanosleep" in names[:4], f"{where}: {names}"
    py = [f["function"] for f in frames if f["kind"] == "python"]
    assert py == ["native_inner", "native_outer", "main", "<module>"], f"{where}: {py}"
    assert "_PyEval_EvalFrameDefault" not in names, f"{where}: {names}"
    inner = names.index("native_inner")
    # Stitched in place: the C function that sleeps just above the Python frame that called it
    # (sid's stripped 3.14/3.15 name it after the nearest exported symbol: by position then).
    assert kinds[inner - 1] == "native", f"{where}: {names}"
    if "time_sleep" in names:
        assert names.index("time_sleep") < inner, f"{where}: {names}"
    assert any(k == "native" for k in kinds[inner:]), f"{where}: nothing under Python"
    assert "_start" not in names[:inner], f"{where}: the start-up frames above Python: {names}"
    rc, final = target.stop()
    assert rc == 0 and final == {"done": True}


# ---- errors -----------------------------------------------------------------------------------


def test_errors(scry, spawn, tmp_path):
    """A pid that does not exist, a process that runs no Python, and options that need a live
    process: each its stable code."""
    error_doc(run_scry(["stacks", "--pid", "999999999", "--locals", "--json"]),
              "no_such_process")
    sleeper = spawn([shutil.which("sleep"), "60"])
    wait_for_sleeping(sleeper.pid)
    for opt in ("--locals", "--async", "--subprocesses"):
        error_doc(run_scry(["stacks", "--pid", sleeper.pid, opt, "--json"]), "not_python")
    core = tmp_path / "none.core"
    core.write_bytes(b"")
    for opt in ("--native", "--subprocesses"):
        cp = run_scry(["stacks", "--core", core, opt, "--json"])
        assert cp.returncode == 2 and json.loads(cp.stdout)["error"]["code"] == "usage", cp
