"""`scry stacks` on bad input: never a crash, always the right exit status and error code.

Text mode: exit 1 (2 for usage), stderr `scry: error: <message>` (naming the code) and
`hint: <hint>`.
--json: the same exit status and one document {"error": {"code", "message", "hint"}} on stdout.
run_scry (conftest) fails any run that dies of a signal or prints a sanitizer report.
"""

import json
import os
import random
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from conftest import (SANITIZER_MARKS, SUPPORTED, find_old_python, run_scry,
                      wait_for_sleeping)


def check_error(args, code, status=1, message_has=None):
    """Runs `scry stacks ARGS` and `scry stacks --json ARGS` (--json first, so that a usage
    error in ARGS cannot swallow it) and checks both report `code`.
    `code` may be a set of accepted codes. Returns the JSON error object."""
    codes = {code} if isinstance(code, str) else set(code)
    where = f"scry stacks {' '.join(str(a) for a in args)}"

    cp = run_scry(["stacks"] + list(args))
    assert cp.returncode == status, (
        f"{where}: exit status {cp.returncode}, want {status}\n{cp.stdout}\n{cp.stderr}")
    lines = cp.stderr.splitlines()
    errors = [ln for ln in lines if ln.startswith("scry: error: ")]
    hints = [ln for ln in lines if ln.startswith("hint: ")]
    assert len(errors) == 1 and errors[0][len("scry: error: "):].strip(), (
        f"{where}: no `scry: error: <message>` line on stderr:\n{cp.stderr}")
    assert len(hints) == 1 and hints[0][len("hint: "):].strip(), (
        f"{where}: no `hint: ...` line on stderr:\n{cp.stderr}")
    assert cp.stdout == "", f"{where}: text-mode error wrote to stdout:\n{cp.stdout}"
    assert any(c in errors[0] for c in codes), f"{where}: error line does not give the code " \
                                               f"{codes}: {errors[0]}"
    if message_has:
        assert message_has in errors[0], f"{where}: message does not name {message_has!r}: " \
                                         f"{errors[0]}"

    jcp = run_scry(["stacks", "--json"] + list(args))
    assert jcp.returncode == status, (
        f"{where} --json: exit status {jcp.returncode}, want {status}\n{jcp.stdout}\n"
        f"{jcp.stderr}")
    try:
        doc = json.loads(jcp.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"{where} --json: stdout is not one JSON document:\n{jcp.stdout!r}\n"
                    f"stderr:\n{jcp.stderr}")
    assert set(doc) == {"error"}, f"{where} --json: {doc}"
    err = doc["error"]
    assert err.get("code") in codes, f"{where} --json: code {err.get('code')!r}, want {codes}"
    for key in ("message", "hint"):
        assert isinstance(err.get(key), str) and err[key].strip(), \
            f"{where} --json: empty {key}: {err}"
    if message_has:
        assert message_has in err["message"], f"{where} --json: message does not name " \
                                              f"{message_has!r}: {err['message']}"
    return err


def a_python(pythons):
    for version in reversed(SUPPORTED):
        if pythons.get(version):
            return pythons[version]
    pytest.skip("no supported Python (3.11-3.15) is installed")


# ---- processes --------------------------------------------------------------------------------


def test_not_python_pid(scry, spawn):
    proc = spawn(["sleep", "60"])
    wait_for_sleeping(proc.pid)
    check_error(["--pid", proc.pid], "not_python")


def test_no_such_process(scry):
    proc = subprocess.Popen(["true"])
    proc.wait()  # reaped: the pid names no process (until reused, which takes a wrap-around)
    assert not os.path.exists(f"/proc/{proc.pid}")
    check_error(["--pid", proc.pid], "no_such_process")


def test_process_exits_while_read(scry, pythons):
    """A target that exits while scry reads it: an answer or a clean error, never a crash."""
    python = a_python(pythons)
    outcomes = []
    for _ in range(20):
        proc = subprocess.Popen([python, "-c", "import time; time.sleep(0.05)"])
        try:
            cp = run_scry(["stacks", "--pid", proc.pid, "--json"])
        finally:
            proc.kill()
            proc.wait()
        assert cp.returncode in (0, 1), f"rc {cp.returncode}:\n{cp.stdout}\n{cp.stderr}"
        doc = json.loads(cp.stdout)
        if cp.returncode == 0:
            assert isinstance(doc.get("threads"), list), doc
            outcomes.append("ok")
        else:
            code = doc["error"]["code"]
            assert code in ("no_such_process", "not_python", "read_failed"), doc
            assert doc["error"]["message"] and doc["error"]["hint"], doc
            outcomes.append(code)
    print("outcomes:", outcomes)


@pytest.mark.parametrize("version", ["3.10", "3.9"])
def test_unsupported_python_pid(scry, spawn, version):
    python = find_old_python(version)
    if not python:
        pytest.skip(f"Python {version} is not installed")
    proc = spawn([python, "-c", "import time; time.sleep(60)"])
    wait_for_sleeping(proc.pid)
    time.sleep(0.2)  # past startup: the runtime is initialised
    check_error(["--pid", proc.pid], "unsupported_python", message_has=version)


def test_unsupported_python_core(scry, spawn, make_core):
    python = find_old_python("3.10")
    if not python:
        pytest.skip("Python 3.10 is not installed")
    proc = spawn([python, "-c", "import time; time.sleep(60)"])
    wait_for_sleeping(proc.pid)
    time.sleep(0.2)
    core = make_core(proc.pid)
    check_error(["--core", core], "unsupported_python", message_has="3.10")


def test_free_threaded_is_refused(scry, spawn, pythons, tmp_path):
    """A free-threaded interpreter other than 3.13t (named python3.Xt) is refused with
    unsupported_python, and the message says what scry reads. Debian sid's 3.14 under another name
    stands in for a 3.14t (its own stdlib through PYTHONHOME): the refusal comes from the name,
    before any read; the _Py_DebugOffsets free_threaded flag is the other way in."""
    exe = pythons.get("3.14")
    root = Path(os.path.realpath(exe)).parents[1] if exe else None  # .../root/usr/bin/python3.14
    if not exe or not (root / "lib" / "python3.14").is_dir():
        pytest.skip("needs Debian sid's Python 3.14 from scripts/install-pythons.sh")
    fake = tmp_path / "python3.14t"
    shutil.copy(os.path.realpath(exe), fake)
    proc = spawn([str(fake), "-c", "import time; time.sleep(60)"],
                 env=dict(os.environ, PYTHONHOME=str(root)))
    wait_for_sleeping(proc.pid)
    time.sleep(0.2)
    check_error(["--pid", proc.pid], "unsupported_python",
                message_has="free-threaded build, which scry does not support yet: it reads the "
                            "free-threaded build of 3.13 only")


def test_permission_denied(scry, spawn, pythons, tmp_path):
    """An unprivileged user reading root's process is refused with permission_denied."""
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or not setpriv:
        pytest.skip("needs root and setpriv to run scry as an unprivileged user")
    proc = spawn([a_python(pythons), "-c", "import time; time.sleep(60)"])
    wait_for_sleeping(proc.pid)
    drop = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--"]
    probe = subprocess.run(drop + ["test", "-x", str(scry)], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"{scry} is not executable by uid 65534")
    for extra, check in (([], "text"), (["--json"], "json")):
        argv = drop + [str(scry), "stacks", "--pid", str(proc.pid)] + extra
        cp = subprocess.run(argv, capture_output=True, text=True, timeout=30)
        assert cp.returncode == 1, f"{argv}: rc {cp.returncode}\n{cp.stdout}\n{cp.stderr}"
        assert not any(m in cp.stderr for m in SANITIZER_MARKS), cp.stderr
        if check == "json":
            assert json.loads(cp.stdout)["error"]["code"] == "permission_denied", cp.stdout
        else:
            assert cp.stderr.startswith("scry: error: ") and "\nhint: " in cp.stderr, cp.stderr
            assert "permission_denied" in cp.stderr.splitlines()[0], cp.stderr


# ---- core files -------------------------------------------------------------------------------


def test_truncated_python_core(scry, spawn, pythons, make_core):
    proc = spawn([a_python(pythons), "-c", "import time; time.sleep(60)"])
    wait_for_sleeping(proc.pid)
    time.sleep(0.2)
    core = make_core(proc.pid)
    size = core.stat().st_size
    os.truncate(core, size // 2)
    check_error(["--core", core], "bad_core")


def test_core_of_non_python(scry, spawn, make_core):
    proc = spawn(["sleep", "60"])
    wait_for_sleeping(proc.pid)
    core = make_core(proc.pid)
    check_error(["--core", core], "not_python")


def test_random_bytes_core(scry, tmp_path):
    path = tmp_path / "random.core"
    path.write_bytes(random.Random(1234).randbytes(1 << 20))
    check_error(["--core", path], "bad_core")


def test_elf_header_only_core(scry, tmp_path):
    """An ELF core header promising program headers past the end of the file."""
    core = tmp_path / "header-only.core"
    # e_ident, e_type=ET_CORE, e_machine=x86-64, e_version, e_entry, e_phoff=64, e_shoff=0,
    # e_flags, e_ehsize=64, e_phentsize=56, e_phnum=40, e_shentsize=64, e_shnum=0, e_shstrndx=0
    header = (b"\x7fELF\x02\x01\x01" + b"\0" * 9 + (4).to_bytes(2, "little")
              + (62).to_bytes(2, "little") + (1).to_bytes(4, "little") + b"\0" * 8
              + (64).to_bytes(8, "little") + b"\0" * 8 + b"\0" * 4 + (64).to_bytes(2, "little")
              + (56).to_bytes(2, "little") + (40).to_bytes(2, "little")
              + (64).to_bytes(2, "little") + b"\0" * 4)
    assert len(header) == 64
    core.write_bytes(header)
    check_error(["--core", core], "bad_core")


def test_empty_core(scry, tmp_path):
    path = tmp_path / "empty.core"
    path.write_bytes(b"")
    check_error(["--core", path], "bad_core")


def test_missing_core(scry, tmp_path):
    check_error(["--core", tmp_path / "no-such-file.core"], "io_error")


# ---- usage ------------------------------------------------------------------------------------


@pytest.mark.parametrize("args", [
    [],
    ["--bogus"],
    ["--pid", "abc"],
    ["--pid"],
    ["--pid", "1", "--core", "x.core"],
], ids=["no-args", "unknown-option", "pid-not-a-number", "pid-missing-value", "pid-and-core"])
def test_usage(scry, args):
    check_error(args, "usage", status=2)
