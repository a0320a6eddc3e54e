"""Fixtures for scry's end-to-end tests: the binary, target processes, cores, interpreters.

The binary is $SCRY (default build/scry); `make test` builds it first, so a missing binary is a
failure, not a skip. Every scry run is checked for crashes (a signal, a sanitizer report) and its
command line and output are saved under the session's artifacts directory for post-mortems.
Target processes are always killed at teardown; cores are deleted after use.
"""

import glob
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pythons import find_pythons  # noqa: E402  (written alongside; maps "3.X" -> interpreter)

REPO = Path(__file__).resolve().parents[2]
TARGETS = REPO / "tests" / "targets"
SCRY = Path(os.environ.get("SCRY", REPO / "build" / "scry"))
SUPPORTED = ["3.11", "3.12", "3.13"]
SCRY_TIMEOUT_S = 30
READY_TIMEOUT_S = 30
SANITIZER_MARKS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:",
                   "ERROR: ThreadSanitizer", "WARNING: MemorySanitizer")

_artifacts = {"dir": None, "n": 0}


def run_scry(args, timeout=SCRY_TIMEOUT_S, **kwargs):
    """Runs scry with `args` (strings) and returns the CompletedProcess (text, captured).
    Fails the test if scry hangs, dies of a signal or prints a sanitizer report."""
    argv = [str(SCRY)] + [str(a) for a in args]
    try:
        cp = subprocess.run(argv, capture_output=True, text=True, errors="replace",
                            timeout=timeout, **kwargs)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{' '.join(argv)} did not finish in {timeout} s; stderr: {e.stderr!r}")
    _save_artifact(argv, cp)
    where = f"{' '.join(argv)} (rc {cp.returncode})"
    assert cp.returncode >= 0, (f"{where}: killed by signal "
                                f"{signal.Signals(-cp.returncode).name}; stderr:\n{cp.stderr}")
    for mark in SANITIZER_MARKS:
        assert mark not in cp.stderr, f"{where}: sanitizer report:\n{cp.stderr}"
    return cp


def _save_artifact(argv, cp):
    if _artifacts["dir"] is None:
        return
    _artifacts["n"] += 1
    path = _artifacts["dir"] / f"scry-{_artifacts['n']:04d}.txt"
    path.write_text(f"argv: {argv}\nrc: {cp.returncode}\n--- stdout\n{cp.stdout}"
                    f"\n--- stderr\n{cp.stderr}", errors="replace")


@pytest.fixture(scope="session", autouse=True)
def artifacts_dir(tmp_path_factory):
    """Where scry's runs are logged (pytest's basetemp keeps the last few sessions)."""
    d = tmp_path_factory.mktemp("artifacts")
    _artifacts["dir"] = d
    yield d
    _artifacts["dir"] = None


@pytest.fixture(scope="session")
def scry():
    if not (SCRY.is_file() and os.access(SCRY, os.X_OK)):
        pytest.fail(f"scry binary {SCRY} is missing: build it with `make` (`make test` does), "
                    f"or point $SCRY at it")
    return SCRY


@pytest.fixture(scope="session")
def pythons():
    return find_pythons()


@pytest.fixture(params=SUPPORTED)
def python_exe(request, pythons):
    """Each supported interpreter installed here; the others are skipped."""
    exe = pythons.get(request.param)
    if not exe:
        pytest.skip(f"Python {request.param} is not installed")
    return exe


def find_old_python(version):
    """An interpreter of an unsupported version (3.9, 3.10) from pyenv, or None."""
    found = find_pythons().get(version)
    if found:
        return found
    try:
        root = subprocess.run(["pyenv", "root"], capture_output=True, text=True,
                              timeout=10).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        root = os.path.expanduser("~/.pyenv")
    for path in sorted(glob.glob(f"{root}/versions/{version}.*/bin/python3")):
        if os.access(path, os.X_OK):
            return path
    return None


class Target:
    """A running target program that speaks the ready-line / stdin-command protocol."""

    def __init__(self, argv, stderr_path):
        self.argv = argv
        self.stderr_path = stderr_path
        self._stderr = open(stderr_path, "wb")
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self._stderr, text=True, bufsize=1)
        self.pid = self.proc.pid
        self._lines = queue.Queue()
        self._reader = threading.Thread(target=self._read_stdout, daemon=True)
        self._reader.start()
        self.ready = None

    def _read_stdout(self):
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def stderr_text(self):
        self._stderr.flush()
        return Path(self.stderr_path).read_text(errors="replace")

    def next_json(self, timeout=READY_TIMEOUT_S):
        """The next line the target prints, parsed as JSON."""
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            pytest.fail(f"{self.argv}: no output within {timeout} s; stderr:\n"
                        f"{self.stderr_text()}")
        if line is None:
            pytest.fail(f"{self.argv}: exited (rc {self.proc.wait()}) before printing; "
                        f"stderr:\n{self.stderr_text()}")
        return json.loads(line)

    def command(self, text):
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()

    def count(self):
        """The busy loop's iteration count, asked of the running target."""
        self.command("count")
        return self.next_json(timeout=10)["count"]

    def stop(self, timeout=10):
        """Asks the target to stop; returns (exit status, final JSON line)."""
        self.command("stop")
        final = self.next_json(timeout=timeout)
        try:
            rc = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pytest.fail(f"{self.argv}: did not exit {timeout} s after 'stop'")
        return rc, final

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        for f in (self.proc.stdin, self.proc.stdout):
            try:
                f.close()
            except OSError:
                pass
        self._stderr.close()


@pytest.fixture
def start_target(tmp_path):
    """start_target(python, script="three_threads.py", wait_ready=True) -> Target, with
    Target.ready the parsed ready line. Every target is killed at teardown."""
    started = []

    def start(python, script="three_threads.py", wait_ready=True):
        argv = [str(python), str(TARGETS / script)]
        target = Target(argv, tmp_path / f"target-{len(started)}.stderr")
        started.append(target)
        if wait_ready:
            target.ready = target.next_json()
            assert target.ready.get("ready") is True, target.ready
            assert target.ready["pid"] == target.pid
        return target

    yield start
    for target in started:
        target.kill()


@pytest.fixture
def spawn(tmp_path):
    """spawn(argv) -> Popen of a plain helper process (sleep, python -c ...), killed at teardown."""
    procs = []

    def start(argv, **kwargs):
        kwargs.setdefault("stdin", subprocess.DEVNULL)
        kwargs.setdefault("stdout", subprocess.DEVNULL)
        p = subprocess.Popen([str(a) for a in argv], **kwargs)
        procs.append(p)
        return p

    yield start
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait()


def wait_for_sleeping(pid, timeout=10.0):
    """Waits until every thread of `pid` sleeps in the kernel (it reached its blocking call)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            states = [task_state(pid, tid) for tid in os.listdir(f"/proc/{pid}/task")]
        except OSError:
            states = []
        if states and all(s in "SD" for s in states):
            return
        time.sleep(0.02)
    pytest.fail(f"process {pid} did not settle into a blocking call")


def task_state(pid, tid):
    with open(f"/proc/{pid}/task/{tid}/stat", encoding="ascii") as f:
        return f.read().rpartition(")")[2].split()[0]


def tracer_pid(pid):
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("TracerPid:"):
                return int(line.split()[1])
    return 0


@pytest.fixture(scope="session")
def gcore_path():
    path = shutil.which("gcore")
    if not path:
        pytest.skip("gcore (from gdb) is not installed: apt-get install gdb")
    return path


@pytest.fixture
def make_core(gcore_path, tmp_path):
    """make_core(pid) -> Path of a fresh core of the process (gcore); deleted at teardown
    (and by the test as soon as it is done with it, as cores are large)."""
    made = []

    def make(pid):
        prefix = tmp_path / f"core{len(made)}"
        cp = subprocess.run([gcore_path, "-o", str(prefix), str(pid)], capture_output=True,
                            text=True, timeout=120)
        core = Path(f"{prefix}.{pid}")
        assert cp.returncode == 0 and core.is_file(), (
            f"gcore {pid} failed (rc {cp.returncode}):\n{cp.stdout}\n{cp.stderr}")
        made.append(core)
        return core

    yield make
    for core in made:
        core.unlink(missing_ok=True)
