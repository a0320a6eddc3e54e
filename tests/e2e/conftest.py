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
import re
import shutil
import signal
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pythons import find_free_threaded, find_pythons  # noqa: E402  ("3.X"/"3.Xt" -> interpreter)

REPO = Path(__file__).resolve().parents[2]
TARGETS = REPO / "tests" / "targets"
SCRY = Path(os.environ.get("SCRY", REPO / "build" / "scry"))
SUPPORTED = ["3.11", "3.12", "3.13", "3.14", "3.15"]
# Free-threaded builds: python_exe gives them only to the suites that work there, which say so
# with a module-level FREE_THREADED = True (stacks, run's CPU and memory suites, dump's).
FREE_THREADED = ["3.13t"]
SCRY_TIMEOUT_S = 30
READY_TIMEOUT_S = 30
SANITIZER_MARKS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:",
                   "ERROR: ThreadSanitizer", "WARNING: MemorySanitizer")

_artifacts = {"dir": None, "n": 0}

# A shell that starts this test run in the background leaves SIGINT ignored, and an ignored signal
# stays ignored across exec: every target (with or without scry) would then shrug off Ctrl-C and
# the SIGINT tests would test nothing. A handler (unlike SIG_IGN) is reset to the default at exec.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


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
    return {**find_pythons(), **find_free_threaded()}


def pytest_generate_tests(metafunc):
    if "python_exe" in metafunc.fixturenames:
        ft = FREE_THREADED if getattr(metafunc.module, "FREE_THREADED", False) else []
        metafunc.parametrize("python_exe", SUPPORTED + ft, indirect=True)


@pytest.fixture
def python_exe(request, pythons):
    """Each supported interpreter installed here (and the free-threaded builds, for a module
    with FREE_THREADED = True); the others are skipped."""
    exe = pythons.get(request.param)
    if not exe:
        pytest.skip(f"Python {request.param} is not installed"
                    + (" (scripts/install-pythons.sh builds it)" if request.param.endswith("t")
                       else ""))
    return exe


def is_free_threaded(python):
    """Whether the interpreter is one of the free-threaded builds (FREE_THREADED)."""
    return python in find_free_threaded().values()


def preferred_python():
    """One supported interpreter for tests that need just one (3.12 first: the suite's most
    exercised); skips the test when none is installed."""
    found = find_pythons()
    python = next((found[v] for v in ("3.12", "3.13", "3.11") if found.get(v)), None)
    if not python:
        pytest.skip("no supported Python (3.11-3.13) is installed")
    return python


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


_READ_FAILED = re.compile(r"Memory read failed for corefile section, \d+ bytes at (0x[0-9a-f]+)")


def _fill_unread_sections(core, pid, gcore_output):
    """Copies into the core what gcore left as zeros. A glibc of 2.42 or later (Debian sid's, under
    the 3.14 and 3.15 interpreters of scripts/install-pythons.sh) marks thread stacks' guard pages
    with MADV_GUARD_INSTALL inside the stack's own mapping; gdb 13's gcore then fails to read the
    chunk that holds the guard page ("Memory read failed for corefile section") and writes zeros
    for the whole rest of that mapping, the thread's stack included. Each such segment is read
    again here through /proc/PID/mem, page by page (the guard pages stay zero), right after
    gcore: the stacks' outer frames, which the tests compare, do not move in between."""
    starts = [int(a, 16) for a in _READ_FAILED.findall(gcore_output)]
    if not starts:
        return
    with open(core, "r+b") as f, open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
        ehdr = f.read(64)
        phoff, phentsize, phnum = (struct.unpack_from("<Q", ehdr, 32)[0],
                                   struct.unpack_from("<H", ehdr, 54)[0],
                                   struct.unpack_from("<H", ehdr, 56)[0])
        f.seek(phoff)
        table = f.read(phentsize * phnum)
        for i in range(phnum):
            p_type, _, p_offset, p_vaddr, _, p_filesz = struct.unpack_from(
                "<IIQQQQ", table, i * phentsize)
            for start in starts:
                if p_type != 1 or not p_vaddr <= start < p_vaddr + p_filesz:
                    continue
                for page in range(start, p_vaddr + p_filesz, 4096):
                    try:
                        mem.seek(page)
                        data = mem.read(4096)
                    except (OSError, OverflowError):
                        continue  # a guard page, gone, or past what a file offset holds
                    f.seek(p_offset + page - p_vaddr)
                    f.write(data)


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
        _fill_unread_sections(core, pid, cp.stdout + cp.stderr)
        return core

    yield make
    for core in made:
        core.unlink(missing_ok=True)


# ---- scry run: a program run with and without the profiler ------------------------------------

RUN_TIMEOUT_S = 180
SCRY_MESSAGE = b"scry: "
PERCENT_FIELDS = ("n_cpu_percent_python", "n_cpu_percent_c", "n_sys_percent")


class Ran:
    """One run of a program: argv, returncode (negative: killed by that signal), stdout and
    stderr as bytes; for a run under scry, `scry_lines` (the trailing `scry: ` lines taken off
    stderr, decoded) and `profile_path`."""

    def __init__(self, argv, returncode, stdout, stderr, profile_path=None):
        self.argv = argv
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        self.scry_lines = []
        self.profile_path = profile_path
        if profile_path is not None:
            self.stderr, self.scry_lines = split_scry_lines(stderr)

    def describe(self):
        return (f"{' '.join(self.argv)} (rc {self.returncode})\n--- stdout\n"
                f"{self.stdout.decode(errors='replace')}\n--- stderr\n"
                f"{self.stderr.decode(errors='replace')}"
                + "".join(f"\n{line}" for line in self.scry_lines))


def split_scry_lines(stderr):
    """(the program's stderr, scry's messages): scry adds only `scry: ` lines, after the
    program's own output, so they are taken off the end."""
    lines = stderr.splitlines(keepends=True)
    messages = []
    while lines and lines[-1].startswith(SCRY_MESSAGE):
        messages.insert(0, lines.pop().decode(errors="replace").rstrip("\n"))
    return b"".join(lines), messages


def program_env():
    """The environment both runs get: ours without scry's own settings and without
    PYTHONUNBUFFERED (so that Python's stdout buffering is the default one)."""
    return {k: v for k, v in os.environ.items()
            if not k.startswith("SCRY_") and k != "PYTHONUNBUFFERED"}


def run_command(argv, *, input=None, cwd=None, timeout=RUN_TIMEOUT_S, signal_on=None):
    """Runs argv in a session of its own and returns (returncode, stdout, stderr) as bytes.
    signal_on=(line, signum): when the program prints that line (bytes, without its newline)
    on stdout, signum goes to the whole process group, as a terminal's Ctrl-C or a `kill` of
    the job would send it. Whatever is left of the group afterwards is killed."""
    argv = [str(a) for a in argv]
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL if input is None else subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd,
                            env=program_env(), start_new_session=True)
    out, err = [], []

    def read_stdout():
        for line in iter(proc.stdout.readline, b""):
            out.append(line)
            if signal_on and line.rstrip(b"\n") == signal_on[0]:
                try:
                    os.killpg(proc.pid, signal_on[1])
                except ProcessLookupError:
                    pass

    def read_stderr():
        err.append(proc.stderr.read())

    def write_stdin():
        try:
            proc.stdin.write(input)
            proc.stdin.close()
        except BrokenPipeError:
            pass

    helpers = [threading.Thread(target=read_stdout, daemon=True),
               threading.Thread(target=read_stderr, daemon=True)]
    if input is not None:
        helpers.append(threading.Thread(target=write_stdin, daemon=True))
    for t in helpers:
        t.start()
    try:
        rc = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        rc = None
    for t in helpers:
        t.join(timeout=10)
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    if rc is None:
        proc.wait()
        pytest.fail(f"{' '.join(argv)} did not finish in {timeout} s\n--- stdout\n"
                    f"{b''.join(out).decode(errors='replace')}\n--- stderr\n"
                    f"{b''.join(err).decode(errors='replace')}")
    return rc, b"".join(out), b"".join(err)


def run_plain(python, script, args=(), module=False, **kwargs):
    """The program without scry: `python script args` (or `python -m script args`)."""
    argv = [python] + (["-m", script] if module else [TARGETS / script]) + list(args)
    argv = [str(a) for a in argv]
    return Ran(argv, *run_command(argv, **kwargs))


def run_profiled(python, script, args=(), outfile=None, options=(), module=False,
                 separator=False, **kwargs):
    """The program under `scry run --no-view --python PYTHON -o OUTFILE OPTIONS`, checked for
    sanitizer reports in scry's messages. outfile=None: no -o (scry-profile.json in cwd)."""
    argv = [SCRY, "run", "--no-view", "--python", python]
    if outfile is not None:
        argv += ["-o", outfile]
    argv += list(options)
    argv += ["-m", script] if module else [TARGETS / script]
    argv += (["---"] if separator else []) + list(args)
    argv = [str(a) for a in argv]
    if not (SCRY.is_file() and os.access(SCRY, os.X_OK)):
        pytest.fail(f"scry binary {SCRY} is missing: build it with `make`, or point $SCRY at it")
    if outfile is None:
        outfile = Path(kwargs.get("cwd") or os.getcwd()) / "scry-profile.json"
    ran = Ran(argv, *run_command(argv, **kwargs), profile_path=Path(outfile))
    _save_run_artifact(ran)
    text = ran.stderr.decode(errors="replace") + "\n".join(ran.scry_lines)
    for mark in SANITIZER_MARKS:
        assert mark not in text, f"sanitizer report:\n{ran.describe()}"
    return ran


def _save_run_artifact(ran):
    if _artifacts["dir"] is None:
        return
    _artifacts["n"] += 1
    path = _artifacts["dir"] / f"scry-{_artifacts['n']:04d}.txt"
    path.write_text(f"argv: {ran.argv}\n{ran.describe()}", errors="replace")


def assert_same_behaviour(plain, profiled):
    """The program's stdout, stderr (scry's `scry: ` lines aside) and exit status are exactly
    what they are without scry."""
    where = f"without scry:\n{plain.describe()}\n\nwith scry:\n{profiled.describe()}"
    assert profiled.returncode == plain.returncode, f"exit status changed; {where}"
    assert profiled.stdout == plain.stdout, f"stdout changed; {where}"
    assert profiled.stderr == plain.stderr, f"stderr changed; {where}"
    for line in profiled.scry_lines:
        assert line.startswith("scry: "), line


def load_profile(ran):
    """The profile that a run under scry wrote, parsed and checked against the schema."""
    path = Path(ran.profile_path)
    assert path.is_file(), f"no profile at {path}; {ran.describe()}"
    try:
        profile = json.loads(path.read_text())
    except ValueError as e:
        pytest.fail(f"{path} is not JSON ({e}); {ran.describe()}")
    check_profile(profile)
    return profile


def _number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def check_profile(profile):
    """The schema of `scry run`'s profile: top-level fields, and per line and per function the
    three percentages, each 0-100 and adding up to at most 100, as do all lines together."""
    assert profile.get("tool") == "scry", profile.get("tool")
    assert isinstance(profile.get("version"), str) and profile["version"], profile.get("version")
    assert _number(profile.get("elapsed_time_sec")) and profile["elapsed_time_sec"] >= 0
    assert isinstance(profile.get("n_samples"), int) and profile["n_samples"] >= 0
    assert isinstance(profile.get("processes"), int) and profile["processes"] >= 1
    assert isinstance(profile.get("files"), dict), type(profile.get("files"))
    grand = 0.0
    for name, detail in profile["files"].items():
        assert _number(detail.get("percent_cpu_time")), (name, detail.get("percent_cpu_time"))
        assert isinstance(detail.get("lines"), list) and isinstance(detail.get("functions"), list)
        for kind, entries in (("lines", detail["lines"]), ("functions", detail["functions"])):
            for e in entries:
                assert isinstance(e.get("line"), str), (name, kind, e)
                # The pseudo-files are line 0: <native> (allocations of threads with no Python
                # frame) and <interpreter shutdown> (the interpreter finalizing, after the
                # program's last atexit callback).
                first = 0 if name in ("<native>", "<interpreter shutdown>") else 1
                assert isinstance(e.get("lineno"), int) and e["lineno"] >= first, (name, kind, e)
                for field in PERCENT_FIELDS:
                    assert _number(e.get(field)) and -1e-9 <= e[field] <= 100 + 1e-6, \
                        (name, kind, field, e)
                assert line_total(e) <= 100 + 1e-3, (name, kind, e)
                if kind == "lines":
                    assert isinstance(e.get("n_samples"), int) and e["n_samples"] >= 0, e
                    grand += line_total(e)
    assert grand <= 100 + 0.5, f"all lines together take {grand:.2f}% of the sampled time"


def line_total(entry):
    return sum(entry[f] for f in PERCENT_FIELDS)


def file_detail(profile, path):
    """The profile's entry for the file at path (compared as real paths), or None."""
    want = os.path.realpath(path)
    for name, detail in profile["files"].items():
        if os.path.realpath(name) == want:
            return detail
    return None


def line_entry(detail, lineno):
    """The line entry of detail with that number; a zero entry if the line is not listed."""
    for e in detail["lines"]:
        if e["lineno"] == lineno:
            return e
    return {"lineno": lineno, "line": "", "n_samples": 0, **{f: 0.0 for f in PERCENT_FIELDS}}


def function_entry(detail, qualname):
    found = [e for e in detail["functions"] if e["line"] == qualname]
    assert len(found) == 1, (f"{len(found)} function entries named {qualname!r}: "
                             f"{[e['line'] for e in detail['functions']]}")
    return found[0]


def split_of(entry):
    """(python, native, system) as fractions of the entry's own time (0s if it has none)."""
    total = line_total(entry)
    if total <= 0:
        return 0.0, 0.0, 0.0
    return tuple(entry[f] / total for f in PERCENT_FIELDS)


def describe_entry(entry):
    return (f"line {entry['lineno']}: python {entry['n_cpu_percent_python']:.2f}% native "
            f"{entry['n_cpu_percent_c']:.2f}% system {entry['n_sys_percent']:.2f}% "
            f"({entry.get('n_samples')} samples)")
