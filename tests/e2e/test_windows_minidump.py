"""`scry stacks --minidump` on a full-memory minidump of the official Windows CPython 3.13.5,
written under Wine by tests/windows/minidump_write.c (MiniDumpWriteDump, as procdump -ma), and
damaged copies of it (bad_minidump, never a crash). The layout numbers that scry takes from its
own tables rather than from the target's _Py_DebugOffsets are checked against the Windows
headers with x86_64-w64-mingw32-gcc.

Needs Wine, mingw-w64 and the Windows Python that scripts/install-windows.sh installs
($SCRY_WINDOWS_PYTHON_DIR, default /opt/scry-windows/python3.13; $SCRY_WINEPREFIX, default
/opt/scry-windows/wineprefix): the tests skip, saying what is missing, without them. One Windows
python starts for the whole module and one dump serves every check.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO, run_scry

PYDIR = Path(os.environ.get("SCRY_WINDOWS_PYTHON_DIR", "/opt/scry-windows/python3.13"))
PREFIX = os.environ.get("SCRY_WINEPREFIX", "/opt/scry-windows/wineprefix")
MINGW = "x86_64-w64-mingw32-gcc"
INSTALL_HINT = "run scripts/install-windows.sh"

PROGRAM = r'''
import os, sys, threading, time

ready = threading.Event()

class Marker:
    pass

KEEP = [Marker() for _ in range(77)]

def blocked_waiter():
    ready.wait()  # LINE-WAITER

def busy_spinner():
    x = 0
    while True: x += 1  # LINE-SPINNER  (one line: wherever it is caught, the same line)

def main_sleeper():
    print("PID", os.getpid(), flush=True)
    while True:
        time.sleep(0.05)  # LINE-MAIN

threading.Thread(target=blocked_waiter, name="waiter-thread", daemon=True).start()
threading.Thread(target=busy_spinner, name="spinner-thread", daemon=True).start()
main_sleeper()  # LINE-MODULE
'''


def marker_line(tag):
    for i, line in enumerate(PROGRAM.splitlines(), 1):
        if "# " + tag in line:
            return i
    raise AssertionError(tag)


def wine_binary():
    for cand in (shutil.which("wine64"), "/usr/lib/wine/wine64", shutil.which("wine")):
        if cand and os.access(cand, os.X_OK):
            return cand
    return None


def windows_path(path):
    return "Z:" + str(path).replace("/", "\\")


def wine_env():
    env = dict(os.environ, WINEPREFIX=PREFIX, WINEDEBUG="-all")
    env.pop("DISPLAY", None)
    return env


def require_mingw_headers():
    if not shutil.which(MINGW):
        pytest.skip(f"{MINGW} (Debian's gcc-mingw-w64-x86-64) is missing: {INSTALL_HINT}")
    if not (PYDIR / "include" / "Python.h").is_file():
        pytest.skip(f"the Windows CPython is missing at {PYDIR}: {INSTALL_HINT}")


@pytest.fixture(scope="module")
def dump(tmp_path_factory):
    """(path of a full-memory minidump of PROGRAM under Windows python.exe, its Windows pid)."""
    require_mingw_headers()
    wine = wine_binary()
    if not wine:
        pytest.skip(f"Wine (Debian's wine64) is missing: {INSTALL_HINT}")
    if not (PYDIR / "python.exe").is_file():
        pytest.skip(f"{PYDIR}/python.exe is missing: {INSTALL_HINT}")
    d = tmp_path_factory.mktemp("windows")
    writer = d / "minidump_write.exe"
    subprocess.run([MINGW, "-O1", "-o", str(writer), str(REPO / "tests/windows/minidump_write.c"),
                    "-ldbghelp"], check=True, timeout=120)
    prog = d / "prog.py"
    prog.write_text(PROGRAM)
    out = d / "out.txt"
    # Wine gives a Windows program an invalid handle for a regular file on stdout: pipe it.
    proc = subprocess.Popen(f"'{wine}' '{PYDIR}/python.exe' '{prog}' 2>&1 | cat > '{out}'",
                            shell=True, env=wine_env(), start_new_session=True)
    try:
        deadline = time.monotonic() + 90  # the first start creates the prefix
        pid = None
        while time.monotonic() < deadline and pid is None:
            m = re.search(r"^PID (\d+)", out.read_text() if out.exists() else "", re.M)
            if m:
                pid = int(m.group(1))
            elif proc.poll() is not None:
                break
            else:
                time.sleep(0.2)
        if pid is None:
            pytest.fail(f"the Windows python did not start: {out.read_text()!r}")
        time.sleep(0.5)  # the threads reach their waits
        path = d / "app.dmp"
        cp = subprocess.run(f"'{wine}' '{writer}' {pid} '{windows_path(path)}' 2>&1 | cat",
                            shell=True, env=wine_env(), capture_output=True, text=True,
                            timeout=120)
        assert path.is_file() and path.stat().st_size > 1 << 20, (
            f"minidump_write wrote no dump: {cp.stdout}")
    finally:
        os.killpg(proc.pid, 9)  # the shell, wine's loader and python.exe
        proc.wait()
    return path, pid


def test_stacks_minidump_text(scry, dump):
    path, pid = dump
    cp = run_scry(["stacks", "--minidump", path, "--no-color"])
    assert cp.returncode == 0, cp.stderr
    out = cp.stdout
    assert f"Minidump {path} of process {pid}" in out
    assert "Python 3.13.5" in out and "python313.dll" in out
    for func, tag, name in (("blocked_waiter", "LINE-WAITER", "waiter-thread"),
                            ("busy_spinner", "LINE-SPINNER", "spinner-thread"),
                            ("main_sleeper", "LINE-MAIN", "MainThread")):
        assert re.search(rf'^Thread \d+ \([^)]*\): "{name}"$', out, re.M), out
        assert re.search(rf"^    {func} \(Z:\\.*prog\.py:{marker_line(tag)}\)$", out, re.M), out
    assert "<module> (" in out and f"prog.py:{marker_line('LINE-MODULE')})" in out


def test_stacks_minidump_json(scry, dump):
    path, pid = dump
    cp = run_scry(["stacks", "--minidump", path, "--json"])
    assert cp.returncode == 0, cp.stderr
    doc = json.loads(cp.stdout)
    assert doc["pid"] == pid and doc["minidump"] == str(path) and "core" not in doc
    assert doc["python_version"] == "3.13.5" and doc["free_threaded"] is False
    by_name = {t["name"]: t for t in doc["threads"]}
    assert set(by_name) == {"MainThread", "waiter-thread", "spinner-thread"}, by_name.keys()
    want = {"MainThread": [("main_sleeper", "LINE-MAIN"), ("<module>", "LINE-MODULE")],
            "waiter-thread": [("blocked_waiter", "LINE-WAITER")],
            "spinner-thread": [("busy_spinner", "LINE-SPINNER")]}
    for name, frames in want.items():
        t = by_name[name]
        ours = [(f["function"], f["line"]) for f in t["frames"] if f["file"].endswith("prog.py")]
        assert ours == [(fn, marker_line(tag)) for fn, tag in frames], (name, t["frames"])
        # Windows: threading.get_ident() is the thread's id, as is its native id.
        assert t["native_id"] == t["thread_id"] > 0
        assert isinstance(t["idle"], bool) and t["gil"] in (True, False)
    assert by_name["waiter-thread"]["frames"][0]["function"] == "Condition.wait"
    assert sum(t["gil"] for t in doc["threads"]) <= 1
    # The spinner is the only thread not blocked in a system call.
    assert by_name["waiter-thread"]["idle"] and by_name["MainThread"]["idle"]


def test_dump_minidump_and_analyze(scry, dump, tmp_path):
    path, pid = dump
    heap = tmp_path / "app.heap"
    cp = run_scry(["dump", "--minidump", path, "-o", heap, "--json", "--quiet"])
    assert cp.returncode == 0, cp.stderr
    doc = json.loads(cp.stdout)
    assert doc["source"] == "minidump" and doc["minidump"] == str(path) and doc["core"] is None
    assert doc["pid"] == pid and doc["python_version"] == "3.13.5"
    assert doc["objects"] > 1000 and doc["gc_tracked"] > 1000 and doc["unreadable"] == 0, doc
    cp = run_scry(["analyze", heap, "--json", "--top", "100000"])
    assert cp.returncode == 0, cp.stderr
    types = {t["type"]: t for t in json.loads(cp.stdout)["types"]}
    assert types["__main__.Marker"]["count"] == 77, types.get("__main__.Marker")
    cp = run_scry(["dump", "--minidump", path, "-o", heap, "--quiet"])
    assert cp.returncode == 0 and "minidump of pid" in cp.stdout, cp.stdout + cp.stderr
    bad = tmp_path / "bad.dmp"
    bad.write_bytes(path.read_bytes()[:1 << 16])
    cp = run_scry(["dump", "--json", "--minidump", bad, "-o", tmp_path / "bad.heap"])
    assert cp.returncode == 1
    assert json.loads(cp.stdout or cp.stderr)["error"]["code"] == "bad_minidump"
    assert not (tmp_path / "bad.heap").exists()


def check_bad(path, code="bad_minidump", has=None):
    cp = run_scry(["stacks", "--minidump", path])
    assert cp.returncode == 1, (cp.returncode, cp.stderr)
    assert cp.stdout == ""
    assert "scry: error: " in cp.stderr and "hint: " in cp.stderr, cp.stderr
    jcp = run_scry(["stacks", "--json", "--minidump", path])
    assert jcp.returncode == 1
    err = json.loads(jcp.stdout or jcp.stderr)["error"]
    assert err["code"] == code, err
    if has:
        assert has in err["message"], err
    return err


def test_damaged_minidumps(scry, dump, tmp_path):
    path, _ = dump
    data = path.read_bytes()
    nstreams, dir_rva = int.from_bytes(data[8:12], "little"), int.from_bytes(data[12:16], "little")
    cases = {
        "empty": b"",
        "magic": b"XDMP" + data[4:4096],
        "header": data[:20],
        "directory": data[:dir_rva + 6],
        "streams": data[:dir_rva + nstreams * 12 + 64],
        "half": data[:len(data) // 2],
        "tail": data[:len(data) - 4096],
        "zeroed-directory": data[:dir_rva] + bytes(nstreams * 12) + data[dir_rva + nstreams * 12:],
    }
    for name, blob in cases.items():
        p = tmp_path / f"{name}.dmp"
        p.write_bytes(blob)
        check_bad(p)
        p.unlink()
    # No memory list (a dump written without full memory): the message says so.
    blob = bytearray(data[:1 << 16])
    for i in range(nstreams):
        e = dir_rva + i * 12
        if int.from_bytes(blob[e:e + 4], "little") in (5, 9):  # MemoryList, Memory64List
            blob[e:e + 4] = (0xffff).to_bytes(4, "little")
    p = tmp_path / "no-memory.dmp"
    p.write_bytes(bytes(blob))
    err = check_bad(p, has="no memory list")
    assert "full memory" in err["message"]


def test_32bit_minidump_refused(scry, dump, tmp_path):
    path, _ = dump
    blob = bytearray(path.read_bytes()[:1 << 16])
    nstreams, dir_rva = int.from_bytes(blob[8:12], "little"), int.from_bytes(blob[12:16], "little")
    for i in range(nstreams):
        e = dir_rva + i * 12
        if int.from_bytes(blob[e:e + 4], "little") == 7:  # SystemInfo: ProcessorArchitecture
            rva = int.from_bytes(blob[e + 8:e + 12], "little")
            blob[rva:rva + 2] = (0).to_bytes(2, "little")  # x86
    p = tmp_path / "x86.dmp"
    p.write_bytes(bytes(blob))
    check_bad(p, code="unsupported_python", has="32-bit")


def test_minidump_usage_errors(scry, tmp_path):
    for args in (["--minidump", "x.dmp", "--pid", "1"], ["--minidump", "x.dmp", "--core", "c"],
                 ["--minidump", "x.dmp", "--exe", "python"],
                 ["--minidump", "x.dmp", "--native"]):
        cp = run_scry(["stacks"] + args)
        assert cp.returncode == 2, (args, cp.stderr)
        assert "usage" in cp.stderr
    cp = run_scry(["stacks", "--minidump", tmp_path / "missing.dmp"])
    assert cp.returncode == 1 and "io_error" in cp.stderr


def test_windows_layout_matches_headers(tmp_path):
    """Every number of scry's Windows 3.13 tables (build/tools/layout_table 13w: the fixed
    py_layout numbers, the _Py_DebugOffsets indices, py_heap_layout_windows) against what
    tests/tools/layout_offsets.c, built with mingw-w64 against the official build's headers and
    run under Wine, prints; the two structs with no header measured in the Windows python
    (gen_layouts.LIVE_PROBE), as test_layout_headers.py does for the Linux builds."""
    require_mingw_headers()
    wine = wine_binary()
    if not wine:
        pytest.skip(f"Wine (Debian's wine64) is missing: {INSTALL_HINT}")
    sys.path.insert(0, str(REPO / "tests" / "tools"))
    import gen_layouts
    table = Path(os.environ.get("SCRY_BUILD", REPO / "build")) / "tools" / "layout_table"
    if not os.access(table, os.X_OK):
        pytest.fail(f"{table} is missing: build it with `make build/tools/layout_table`")
    cp = subprocess.run([str(table), "13w"], capture_output=True, text=True, timeout=60)
    assert cp.returncode == 0, cp.stderr
    mine = gen_layouts.parse(cp.stdout)
    inc = PYDIR / "include"
    exe = tmp_path / "layout_offsets.exe"
    cp = subprocess.run([MINGW, "-std=c11", f"-I{inc}", f"-I{inc / 'internal'}",
                         str(REPO / "tests/tools/layout_offsets.c"), "-o", str(exe)],
                        capture_output=True, text=True, timeout=300)
    assert cp.returncode == 0, cp.stderr
    probe = tmp_path / "probe.py"
    probe.write_text(gen_layouts.LIVE_PROBE)
    known = {}
    for argv in ([str(exe)], [str(PYDIR / "python.exe"), str(probe)]):
        cmd = " ".join(f"'{a}'" for a in [wine] + argv) + " 2>&1 | cat"
        cp = subprocess.run(cmd, shell=True, env=wine_env(), capture_output=True, text=True,
                            timeout=120)
        known.update(gen_layouts.parse(cp.stdout.replace("\r", "")))
    assert known.get("minor") == 13 and known.get("free_threaded") == 0, known
    assert len(mine) >= 150, f"layout_table printed only {len(mine)} numbers for 3.13w"
    missing = sorted(k for k in mine if k not in known)
    wrong = [f"{k}: scry {mine[k]}, Windows 3.13.5 {known[k]}"
             for k in sorted(mine) if k in known and known[k] != mine[k]]
    assert not missing, f"scry's Windows 3.13 tables hold numbers nothing checks: {missing}"
    assert not wrong, "scry's Windows 3.13 tables differ from the Windows headers:\n" + \
        "\n".join(wrong)
    # layout.llp64: the thread ids are 4 bytes (native_thread_id right after thread_id).
    c = tmp_path / "llp64.c"
    c.write_text("#include <Python.h>\n"
                 "_Static_assert(sizeof(((PyThreadState *)0)->thread_id) == 4, \"tid\");\n"
                 "_Static_assert(sizeof(((PyThreadState *)0)->native_thread_id) == 4, \"n\");\n")
    cp = subprocess.run([MINGW, "-std=c11", "-fsyntax-only", f"-I{inc}", str(c)],
                        capture_output=True, text=True, timeout=120)
    assert cp.returncode == 0, cp.stderr
