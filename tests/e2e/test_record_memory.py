"""`scry record --pid PID --memory`: the memory profile of a process started WITHOUT scry, by
loading scry's agent into it (docs/record-memory.md).

The target (tests/targets/record_memory.py) allocates 200 MiB on one line (200 bytearrays of
1 MiB, made at run time) each time the test tells it to, while a 3 s recording runs. The line
must be reported within 10% of 200 MiB; after the recording the process must run on and print
the same checksum it prints without scry, exit 0, and a second recording must work the same
(the agent stays loaded, idle, and starts again)."""

import glob
import hashlib
import json
import os
import shutil
import subprocess
import time

import pytest

from conftest import (SANITIZER_MARKS, SCRY, TARGETS, file_detail, line_entry, preferred_python,
                      run_scry)

TARGET = TARGETS / "record_memory.py"
ALLOC_LINE = next(i for i, line in enumerate(TARGET.read_text().splitlines(), 1)
                  if line.rstrip().endswith("# ALLOCATE"))


class Target:
    def __init__(self, python, tmp_path, *args):
        self.ctl = tmp_path / f"ctl-{time.monotonic_ns()}"
        self.ctl.mkdir()
        self.proc = subprocess.Popen([str(python), str(TARGET), str(self.ctl), *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        assert line, f"the target printed nothing; stderr:\n{self.proc.stderr.read()}"
        self.pid = json.loads(line)["pid"]
        self.rounds = 0

    def allocate(self):
        """Tells it to run the 200 MiB line once, and waits until it has."""
        self.rounds += 1
        (self.ctl / f"go-{self.rounds}").touch()
        deadline = time.monotonic() + 20
        while not (self.ctl / f"done-{self.rounds}").exists():
            assert time.monotonic() < deadline, "the target did not allocate"
            assert self.proc.poll() is None, self.proc.stderr.read()
            time.sleep(0.02)

    def finish(self):
        (self.ctl / "quit").touch()
        out, err = self.proc.communicate(timeout=30)
        return self.proc.returncode, out, err

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.communicate()


@pytest.fixture
def target(tmp_path):
    started = []

    def start(python, *args):
        t = Target(python, tmp_path, *args)
        started.append(t)
        return t

    yield start
    for t in started:
        t.kill()


def expected_output(rounds):
    h = hashlib.sha256()
    for _ in range(rounds):
        h.update(str(200 * 1048576).encode())
    return f"checksum {h.hexdigest()} {rounds}\n"


def record_round(t, tmp_path, n, messages=None):
    """One `record --memory --duration 3` with one 200 MiB line run while it is attached;
    returns the profile (and appends record's stderr to messages)."""
    out = tmp_path / f"mem-{n}.json"
    parts = tmp_path / f"tmp-{n}"
    parts.mkdir()
    env = {**os.environ, "TMPDIR": str(parts)}
    scry = subprocess.Popen([str(SCRY), "record", "--pid", str(t.pid), "--memory", "--duration",
                             "3", "-o", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    try:
        # Attached: the agent marks its part directory; then let it install Python's wrappers.
        deadline = time.monotonic() + 10
        while not glob.glob(str(parts / "scry-parts-*" / f"live-{t.pid}")):
            assert scry.poll() is None, scry.communicate()[1]
            assert time.monotonic() < deadline, "the agent did not start in the target"
            time.sleep(0.01)
        time.sleep(0.3)
        t.allocate()
        _, err = scry.communicate(timeout=30)
    finally:
        if scry.poll() is None:
            scry.kill()
            scry.communicate()
    for mark in SANITIZER_MARKS:
        assert mark not in err, err
    assert scry.returncode == 0, err
    assert "the duration ended" in err, err
    assert not os.listdir(parts), "the part directory was not removed"
    if messages is not None:
        messages.append(err)
    return json.loads(out.read_text())


def check_line(profile, tmp_path):
    detail = file_detail(profile, str(TARGET))
    e = line_entry(detail, ALLOC_LINE)
    mib = e["n_malloc_mb"]  # MiB, as Scalene's
    assert abs(mib - 200) <= 20, (f"line {ALLOC_LINE} allocated {mib:.1f} MiB, not 200 +- 10%",
                                  e)
    assert e["n_python_fraction"] > 0.9, e


def test_attach_twice(python_exe, target, tmp_path):
    t = target(python_exe)
    for n in (1, 2):
        check_line(record_round(t, tmp_path, n), tmp_path)
    t.allocate()  # detached: the program goes on as before
    rc, out, err = t.finish()
    assert rc == 0, err
    assert out.splitlines()[-1] + "\n" == expected_output(3), out
    assert err == "", err


def test_busy_multithreaded(target, tmp_path):
    """The main thread busy in Python (no system call to stop it in) and two more threads
    spinning: the agent is loaded where the main thread runs Python code."""
    t = target(preferred_python(), "busy", "2")
    check_line(record_round(t, tmp_path, 1), tmp_path)
    rc, out, err = t.finish()
    assert rc == 0, err
    assert out.splitlines()[-1] + "\n" == expected_output(1), out


@pytest.fixture(scope="module")
def vector_library(tmp_path_factory):
    """tests/targets/vector_regs.c built into a shared library (needs gcc)."""
    gcc = shutil.which("gcc")
    if not gcc:
        pytest.skip("gcc is not installed: it builds tests/targets/vector_regs.c")
    out = tmp_path_factory.mktemp("vector") / "vector_regs.so"
    subprocess.run([gcc, "-O2", "-shared", "-fPIC", "-o", str(out),
                    str(TARGETS / "vector_regs.c")], check=True)
    return out


def test_vector_registers_kept(python_exe, vector_library, tmp_path):
    """The main thread interrupted in native code that keeps live values in its vector
    registers: the injected dlopen and agent calls (attach, then detach) use those registers,
    and all of them (XSAVE state) must be put back with the general ones. Before they were, the
    program went on with clobbered registers: pymalloc crashed (a pool linked by an SSE store),
    and this loop saw its registers changed. Remote debugging is turned off in the target, so
    that 3.14+ are loaded with ptrace too."""
    env = {**os.environ, "PYTHON_DISABLE_REMOTE_DEBUG": "1"}
    proc = subprocess.Popen([str(python_exe), str(TARGETS / "vector_regs.py"),
                             str(vector_library), "6"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        pid = json.loads(proc.stdout.readline())["pid"]
        for n in range(2):  # two attach-detach cycles, each with two injected calls
            parts = tmp_path / f"tmp-{n}"
            parts.mkdir()
            cp = run_scry(["record", "--pid", pid, "--memory", "--duration", "1", "-o",
                           tmp_path / f"mem-{n}.json"], env={**os.environ, "TMPDIR": str(parts)})
            assert cp.returncode == 0, cp.stderr
            assert "the agent was loaded with ptrace" in cp.stderr, cp.stderr
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    result = json.loads(out.splitlines()[-1])
    assert result["rounds"] >= 5 and result["broken"] == 0, result


def check_error(args, code, status=1):
    cp = run_scry(args)
    assert cp.returncode == status, cp.stderr
    errors = [ln for ln in cp.stderr.splitlines() if ln.startswith("scry: error: ")]
    assert len(errors) == 1 and f"[{code}]" in errors[0], cp.stderr
    assert "\nhint: " in cp.stderr, cp.stderr


def test_errors(spawn, tmp_path):
    check_error(["record", "--pid", "999999999", "--memory", "-o", tmp_path / "x.json"],
                "no_such_process")
    sleeper = spawn(["sleep", "60"])
    check_error(["record", "--pid", sleeper.pid, "--memory", "-o", tmp_path / "x.json"],
                "not_python")
    assert not (tmp_path / "x.json").exists()
    check_error(["record", "--pid", sleeper.pid, "--memory", "--native", "-o",
                 tmp_path / "x.json"], "usage", status=2)


def test_free_threaded_refused(target, pythons):
    """Memory of a free-threaded build is not measured (as scry run): refused before anything
    is loaded."""
    ft = pythons.get("3.13t")
    if not ft:
        pytest.skip("Python 3.13t is not installed (scripts/install-pythons.sh builds it)")
    t = target(ft)
    check_error(["record", "--pid", t.pid, "--memory", "-o", "/tmp/scry-never-written.json"],
                "unsupported_python")
    rc, out, err = t.finish()
    assert rc == 0 and out.splitlines()[-1] + "\n" == expected_output(0), (out, err)


def test_refused_under_scry_run(tmp_path):
    """A process that `scry run` profiles already: its agent refuses a second master."""
    ctl = tmp_path / "ctl"
    ctl.mkdir()
    log = tmp_path / "run-out.txt"
    with open(log, "w") as f:
        run = subprocess.Popen([str(SCRY), "run", "--memory", "--python",
                                str(preferred_python()), "-o", str(tmp_path / "run.json"),
                                str(TARGET), str(ctl)], stdin=subprocess.DEVNULL, stdout=f,
                               stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 20
        while not log.read_text().startswith("{"):
            assert time.monotonic() < deadline and run.poll() is None, log.read_text()
            time.sleep(0.02)
        pid = json.loads(log.read_text().splitlines()[0])["pid"]
        time.sleep(0.3)
        check_error(["record", "--pid", pid, "--memory", "--duration", "1", "-o",
                     tmp_path / "x.json"], "inject_refused")
        (ctl / "quit").touch()
        assert run.wait(timeout=30) == 0, log.read_text()
        assert expected_output(0) in log.read_text()
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()


def test_permission_denied(target, tmp_path):
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or not setpriv:
        pytest.skip("needs root and setpriv to run scry as an unprivileged user")
    t = target(preferred_python())
    drop = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--"]
    if subprocess.run(drop + ["test", "-x", str(SCRY)]).returncode != 0:
        pytest.skip(f"{SCRY} is not executable by uid 65534")
    cp = subprocess.run(drop + [str(SCRY), "record", "--pid", str(t.pid), "--memory", "-o",
                                "/tmp/scry-record-memory-nobody.json"],
                        capture_output=True, text=True, timeout=30)
    assert cp.returncode == 1, cp.stderr
    assert "[permission_denied]" in cp.stderr.splitlines()[0], cp.stderr
    rc, out, err = t.finish()
    assert rc == 0 and out.splitlines()[-1] + "\n" == expected_output(0), (out, err)


@pytest.mark.parametrize("when", ["seized", "released"])
def test_a_target_that_exits_during_the_attach(python_exe, when, tmp_path):
    """Issue 26 item 7: a process that ends while scry loads its agent (its main thread in
    Thread.join, another thread calls os._exit) is no_such_process, never permission_denied or
    inject_refused. The target exits when scry has seized its main thread, or when scry has let
    it go between two tries (the next seize then meets a zombie: EPERM); five times each."""
    for n in range(5):
        proc = subprocess.Popen([str(python_exe), str(TARGETS / "exit_on_attach.py"), when],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            pid = json.loads(proc.stdout.readline())["pid"]
            out = tmp_path / f"x{n}.json"
            cp = run_scry(["record", "--pid", pid, "--memory", "-o", out])
            errors = [ln for ln in cp.stderr.splitlines() if ln.startswith("scry: error: ")]
            assert cp.returncode == 1 and len(errors) == 1, cp.stderr
            assert errors[0] == (f"scry: error: process {pid} exited while scry was loading "
                                 "its agent [no_such_process]"), (n, cp.stderr)
            assert not out.exists()
            # Still unreaped (a zombie) while scry ran: the case the kernel answers with EPERM.
            assert proc.wait(timeout=10) == 0, proc.stderr.read()
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.communicate()
