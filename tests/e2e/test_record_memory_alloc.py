"""Allocation joins (docs/allocations.md) of a process started WITHOUT scry, through the agent
that `scry record --pid PID --memory` loads into it (docs/record-memory.md).

The target is tests/targets/alloc_caches.py with "gate": it waits on stdin until the recording
is attached, then fills cache A (a dict, line A) and cache B (a list, line B) with bytes objects
and churns 200 MB through line C, and prints the truth (the sum of sys.getsizeof of each cache's
elements). While the recording runs, `scry dump --pid` finds the attached agent (its link record,
not the environment) and stores its live samples; the recording's own `--heap-at-end` takes a
second snapshot before the agent detaches. On both, `analyze --allocations` must give each
cache's bytes to its own line within 10% and nothing retained to line C (the checks of
test_alloc_join.py). After the recording the agent is idle: a dump then has no samples, and
quickly. The program's output and exit status are its own.
"""

import json
import os
import signal
import subprocess
import time

import pytest

from conftest import SANITIZER_MARKS, SCRY, TARGETS, Target, preferred_python, run_scry
from test_alloc_join import WINDOW, check_analyze
from test_record_memory import (check_error, check_line, expected_output, record_round,  # noqa: F401
                                target)

SCRIPT = TARGETS / "alloc_caches.py"


def dump_json(pid, heap):
    cp = run_scry(["dump", "--pid", pid, "-o", heap, "--json"], timeout=120)
    assert cp.returncode == 0, cp.stderr
    return json.loads(cp.stdout), cp.stderr


def minor_of(python):
    cp = subprocess.run([str(python), "-c", "import sys; print(sys.version_info[1])"],
                        capture_output=True, text=True, check=True)
    return int(cp.stdout)


def start_memory_recording(pid, heap, tmp_path):
    """`scry record --pid PID --memory --heap-at-end HEAP` at the test's window, once the agent
    has started in the process; returns it and its part directory's parent (its TMPDIR)."""
    parts = tmp_path / "parts"
    parts.mkdir()
    scry = subprocess.Popen([str(SCRY), "record", "--pid", str(pid), "--memory",
                             "--allocation-sampling-window", str(WINDOW), "--duration", "120",
                             "--heap-at-end", str(heap), "-o", str(tmp_path / "mem.json")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "TMPDIR": str(parts)})
    deadline = time.monotonic() + 20
    while not list(parts.glob(f"scry-parts-*/live-{pid}")):
        assert scry.poll() is None, scry.communicate()[1]
        assert time.monotonic() < deadline, "the agent did not start in the target"
        time.sleep(0.01)
    return scry, parts


@pytest.mark.parametrize("gate", ["gate", "busygate"])
def test_caches_through_record_memory(python_exe, tmp_path, gate):
    """gate: the main thread blocks in a read while the agent is loaded (ptrace's safe point);
    busygate: it runs Python (on 3.14+ the agent comes in through CPython's remote debugging)."""
    remote = gate == "busygate" and minor_of(python_exe) >= 14
    target = Target([str(python_exe), str(SCRIPT), gate, "wait"], tmp_path / "target.stderr")
    scry = None
    try:
        pid = target.next_json(timeout=60)["pid"]
        assert pid == target.pid
        end_heap, pid_heap = tmp_path / "end.heap", tmp_path / "pid.heap"
        scry, parts = start_memory_recording(pid, end_heap, tmp_path)
        target.command("")  # fill the caches, churn
        truth = target.next_json(timeout=120)
        doc, err = dump_json(pid, pid_heap)
        assert doc["allocation_samples"] > 0, (doc, err)
        scry.send_signal(signal.SIGINT)  # the recording ends: --heap-at-end, then the detach
        _, err = scry.communicate(timeout=120)
        for mark in SANITIZER_MARKS:
            assert mark not in err, err
        assert scry.returncode == 0, err
        assert "interrupted (SIGINT)" in err and "allocation samples:" in err, err
        how = ("the agent was loaded through CPython's remote debugging (PEP 768)" if remote
               else "the agent was loaded with ptrace")
        assert how in err, err
        assert not os.listdir(parts), "the part directory was not removed"
        for heap in (pid_heap, end_heap):
            check_analyze(heap, truth)
        # The agent is idle now: a snapshot has no samples, and does not wait for an answer.
        started = time.monotonic()
        doc, err = dump_json(pid, tmp_path / "idle.heap")
        assert doc["allocation_samples"] is None, doc
        assert time.monotonic() - started < 8, "the dump waited for an idle agent"
        assert "allocation samples" not in err, err
        target.command("")
        assert target.proc.wait(timeout=60) == 0, target.stderr_text()
        assert target._lines.get(timeout=10) is None, "the target printed more than its own"
        assert target.stderr_text() == ""
    finally:
        if scry is not None and scry.poll() is None:
            scry.kill()
            scry.communicate()
        target.kill()


REMOTE = "the agent was loaded through CPython's remote debugging (PEP 768)"


@pytest.fixture(params=["3.14", "3.15"])
def python_314(request, pythons):
    exe = pythons.get(request.param)
    if not exe:
        pytest.skip(f"Python {request.param} is not installed")
    return exe


@pytest.mark.parametrize("refuse", [False, True])
def test_remote_debugging_or_refused(python_314, target, tmp_path, monkeypatch, refuse):
    """3.14+: a busy main thread (and two more spinning) takes the agent through CPython's
    remote debugging; a process started with PYTHON_DISABLE_REMOTE_DEBUG refuses it, and the
    agent comes in with ptrace. Either way the line's 200 MiB are measured and the program's
    output is its own."""
    if refuse:
        monkeypatch.setenv("PYTHON_DISABLE_REMOTE_DEBUG", "1")
    t = target(python_314, "busy", "2")
    messages = []
    check_line(record_round(t, tmp_path, 1, messages), tmp_path)
    if refuse:
        assert "loaded with ptrace (not through CPython's remote debugging: the process " \
               "disables remote debugging" in messages[0], messages[0]
    else:
        assert REMOTE in messages[0], messages[0]
    rc, out, err = t.finish()
    assert rc == 0 and err == "", err
    assert out.splitlines()[-1] + "\n" == expected_output(1), out


WAITER = """
import json, os, sys, threading
audited = []
sys.addaudithook(lambda event, args: event == "cpython.remote_debugger_script"
                 and audited.append(args))
print(json.dumps({"pid": os.getpid()}), flush=True)
lock = threading.Lock(); lock.acquire()
lock.acquire(timeout=float(sys.argv[1]))  # a futex wait: the request is not taken meanwhile
sum(range(1000))
sys.stdin.readline()
with open("/proc/self/maps") as f:
    agent = "libscry-agent.so" in f.read()
print(json.dumps({"scripts_run": len(audited), "ctypes": "ctypes" in sys.modules,
                  "agent": agent}), flush=True)
"""


def finish_waiter(target, expected):
    """Lets WAITER end: what it saw of scry's scripts, then exit 0 with nothing on stderr."""
    target.command("")
    assert target.next_json(timeout=30) == expected
    assert target.proc.wait(timeout=30) == 0
    assert target.stderr_text() == ""


def short_recording(pid, tmp_path, why):
    """A 0.5 s `record --memory` whose agent came in with ptrace, remote debugging declined
    for the reason why."""
    cp = run_scry(["record", "--pid", pid, "--memory", "--duration", "0.5", "-o",
                   tmp_path / "m.json"], timeout=60)
    assert cp.returncode == 0, cp.stderr
    said = "the agent was loaded with ptrace (not through CPython's remote debugging: " + why
    assert said in cp.stderr, cp.stderr


def test_remote_request_withdrawn(python_314, tmp_path):
    """The main thread waits on a lock (a futex, GIL released) for 3.5 s: the request is not
    taken within its 2 s, is withdrawn, and the agent comes in with ptrace once the thread
    blocks in a read. The withdrawn script never runs: nothing on the program's stderr."""
    target = Target([str(python_314), "-c", WAITER, "3.5"], tmp_path / "t.stderr")
    try:
        pid = target.next_json(timeout=30)["pid"]
        short_recording(pid, tmp_path, "the interpreter did not run the script in time")
        finish_waiter(target, {"scripts_run": 0, "ctypes": False, "agent": True})
    finally:
        target.kill()


def test_remote_request_of_a_killed_scry(python_314, tmp_path):
    """scry killed with SIGKILL while its request is pending: the interpreter runs the script
    when the main thread next runs Python, and the script does nothing (its scry is gone): no
    agent loaded, not even ctypes imported, nothing on the program's stderr."""
    target = Target([str(python_314), "-c", WAITER, "2"], tmp_path / "t.stderr")
    parts = tmp_path / "parts"
    parts.mkdir()
    try:
        pid = target.next_json(timeout=30)["pid"]
        scry = subprocess.Popen([str(SCRY), "record", "--pid", str(pid), "--memory", "-o",
                                 str(tmp_path / "m.json")], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env={**os.environ, "TMPDIR": str(parts)})
        deadline = time.monotonic() + 10
        while not list(parts.glob("scry-parts-*/scry_agent_attach.py")):
            assert scry.poll() is None and time.monotonic() < deadline, scry.communicate()
            time.sleep(0.005)
        time.sleep(0.1)  # the request written after the script
        scry.kill()
        scry.communicate()
        time.sleep(2.5)  # the lock wait ends: the main thread runs Python again
        finish_waiter(target, {"scripts_run": 1, "ctypes": False, "agent": False})
    finally:
        target.kill()


def test_heap_at_end_errors(target, tmp_path):
    check_error(["record", "--pid", "1", "--heap-at-end", tmp_path / "x.heap"], "usage", status=2)
    check_error(["record", "--pid", "1", "--memory", "--allocation-sampling-window", "0"],
                "usage", status=2)
    # The process ends before the recording does: the profile is written, the snapshot cannot
    # be taken (no_such_process, exit 1).
    t = target(preferred_python())
    out, heap = tmp_path / "m.json", tmp_path / "end.heap"
    scry = subprocess.Popen([str(SCRY), "record", "--pid", str(t.pid), "--memory",
                             "--heap-at-end", str(heap), "-o", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1.5)
    rc, _, _ = t.finish()
    assert rc == 0
    _, err = scry.communicate(timeout=60)
    assert scry.returncode == 1, err
    errors = [ln for ln in err.splitlines() if ln.startswith("scry: error: ")]
    assert len(errors) == 1 and "[no_such_process]" in errors[0], err
    assert "the process exited: wrote" in err and json.loads(out.read_text())["files"] is not None
    assert not heap.exists()


FORGER = """
import ctypes, json, os, sys
lib = ctypes.CDLL(sys.argv[1])  # inert: no SCRY_PART_DIR, never attached


class Link(ctypes.Structure):  # src/common/agent_link.h
    _fields_ = [("magic", ctypes.c_char * 8), ("version", ctypes.c_uint32),
                ("attached", ctypes.c_uint32), ("seq", ctypes.c_uint64),
                ("pid", ctypes.c_int32), ("reserved", ctypes.c_uint32),
                ("part_dir", ctypes.c_char * 4096)]


link = Link.in_dll(lib, "scry_agent_link")
assert link.magic == b"SCRYLNK" and link.version == 1 and not link.attached
print(json.dumps({"pid": os.getpid()}), flush=True)
for line in sys.stdin:
    link.part_dir = line.strip().encode()
    link.pid = os.getpid()
    link.attached = 1
    print(json.dumps({"set": line.strip()}), flush=True)
"""


def test_forged_link_not_followed(tmp_path):
    """The link record is the target's memory: `scry dump --pid` takes only a private part
    directory of the target's own user from it. A record naming a directory open to others, a
    link to a private one, or (as root) another user's private directory is not used: nothing
    is written there and the snapshot has no samples."""
    agent = SCRY.parent / "libscry-agent.so"
    python = preferred_python()
    t = Target([str(python), "-c", FORGER, str(agent)], tmp_path / "f.stderr")
    try:
        pid = t.next_json(timeout=30)["pid"]
        private = tmp_path / "scry-parts-private"
        private.mkdir(mode=0o700)
        forged = {"open": tmp_path / "scry-parts-open", "link": tmp_path / "scry-parts-link",
                  "other-user": tmp_path / "scry-parts-other"}
        forged["open"].mkdir(mode=0o755)
        forged["link"].symlink_to(private)
        forged["other-user"].mkdir(mode=0o700)
        if os.geteuid() == 0:
            os.chown(forged["other-user"], 65534, 65534)
        else:
            del forged["other-user"]
        for name, d in forged.items():
            t.command(str(d))
            assert t.next_json(timeout=10) == {"set": str(d)}
            started = time.monotonic()
            doc, err = dump_json(pid, tmp_path / f"{name}.heap")
            assert doc["allocation_samples"] is None, (name, doc, err)
            assert time.monotonic() - started < 8, name  # no request waited for
            assert not list(tmp_path.glob("scry-parts-*/alloc*")), name
        # The same record naming a private directory of the user is followed: the request is
        # written there (no collector answers it in this process: a warning, no samples).
        t.command(str(private))
        assert t.next_json(timeout=10) == {"set": str(private)}
        cp = run_scry(["dump", "--pid", pid, "-o", tmp_path / "p.heap"], timeout=60)
        assert cp.returncode == 0, cp.stderr
        assert "did not report its allocation samples" in cp.stderr, cp.stderr
    finally:
        t.kill()


def test_control_attached(target, tmp_path):
    """`scry control PID off` finds the attached agent the same way: 1 s after the attach, the
    rest of the recording is off."""
    t = target(preferred_python(), "busy")
    parts = tmp_path / "parts"
    parts.mkdir()
    out = tmp_path / "m.json"
    scry = subprocess.Popen([str(SCRY), "record", "--pid", str(t.pid), "--memory", "--duration",
                             "2.5", "-o", str(out)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "TMPDIR": str(parts)})
    try:
        deadline = time.monotonic() + 20
        while not list(parts.glob(f"scry-parts-*/live-{t.pid}")):
            assert scry.poll() is None and time.monotonic() < deadline, scry.communicate()[1]
            time.sleep(0.01)
        time.sleep(1)
        cp = run_scry(["control", t.pid, "off"])
        assert cp.returncode == 0, cp.stderr
        _, err = scry.communicate(timeout=60)
    finally:
        if scry.poll() is None:
            scry.kill()
            scry.communicate()
    assert scry.returncode == 0, err
    doc = json.loads(out.read_text())
    off, elapsed = doc["profiling_off_sec"], doc["elapsed_time_sec"]
    assert elapsed - 1.6 <= off <= elapsed - 0.9, (off, elapsed)
    rc, _, _ = t.finish()
    assert rc == 0


def test_x_disable_remote_debug_respected(python_314, tmp_path):
    """-X disable-remote-debug (with hyphens: CPython ignores `-X disable_remote_debug`): the
    busy main thread would take the request, but the process refuses remote debugging; the
    agent comes in with ptrace."""
    target = Target([str(python_314), "-X", "disable-remote-debug", str(SCRIPT), "busygate",
                     "1", "1", "1"], tmp_path / "t.stderr")
    try:
        pid = target.next_json(timeout=30)["pid"]
        short_recording(pid, tmp_path, "the process disables remote debugging")
        target.command("")
        assert target.next_json(timeout=60)["pid"] == pid
        assert target.proc.wait(timeout=30) == 0
        assert target.stderr_text() == ""
    finally:
        target.kill()
