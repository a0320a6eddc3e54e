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

from conftest import SANITIZER_MARKS, SCRY, TARGETS, Target, run_scry
from test_alloc_join import WINDOW, check_analyze

SCRIPT = TARGETS / "alloc_caches.py"


def dump_json(pid, heap):
    cp = run_scry(["dump", "--pid", pid, "-o", heap, "--json"], timeout=120)
    assert cp.returncode == 0, cp.stderr
    return json.loads(cp.stdout), cp.stderr


def test_caches_through_record_memory(python_exe, tmp_path):
    target = Target([str(python_exe), str(SCRIPT), "gate", "wait"], tmp_path / "target.stderr")
    scry = None
    try:
        pid = target.next_json(timeout=60)["pid"]
        assert pid == target.pid
        parts = tmp_path / "parts"
        parts.mkdir()
        end_heap, pid_heap = tmp_path / "end.heap", tmp_path / "pid.heap"
        scry = subprocess.Popen([str(SCRY), "record", "--pid", str(pid), "--memory",
                                 "--allocation-sampling-window", str(WINDOW), "--duration",
                                 "120", "--heap-at-end", str(end_heap), "-o",
                                 str(tmp_path / "mem.json")],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env={**os.environ, "TMPDIR": str(parts)})
        deadline = time.monotonic() + 20
        while not list(parts.glob(f"scry-parts-*/live-{pid}")):
            assert scry.poll() is None, scry.communicate()[1]
            assert time.monotonic() < deadline, "the agent did not start in the target"
            time.sleep(0.01)
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
