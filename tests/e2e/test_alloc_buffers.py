"""The allocation join of objects' own native blocks (docs/allocations.md, "Buffers"): a sample
whose block is a numpy array's data, a list's item array, a dict's keys table, a bytearray's
buffer or an array.array's items holds no object, and must be credited to the object that owns
the block (the snapshot's BUFS chunk), then to the top retainer that holds that object.

The target is tests/targets/alloc_buffers.py: five module-level lists, each filled by its own
line with containers whose bytes are nearly all such a block, a churn of numpy arrays on a
sixth line, and blocks malloc'd through ctypes (their addresses kept as ints) on a seventh:
native memory no object owns, left unmatched and shown on its line. Truth is the target's own
sum of sys.getsizeof of each list's elements. Each list's retained bytes must go to its own
line within 10% (the window is 64 KiB and nearly every block is above it: the sampling error is
a few percent at most), nothing retained to the churn line, and no retainer credited with more
than it retains. Checked through every way a snapshot gets its samples: `scry run
--heap-at-exit` (every interpreter, 3.13t too), `scry record --pid --memory --heap-at-end` (the
agent loaded into a process started without scry) and `scry record --pid --allocations --dump`
(eBPF, nothing loaded). A snapshot taken without this join (an older scry's) read by this one credits nothing
to buffers: the join is only as good as the BUFS chunk, which test_check_reads_bufs checks.
"""

import json
import signal
import subprocess

import pytest

from conftest import SCRY, TARGETS, Target, preferred_python, run_scry
from test_alloc_join import WINDOW
from test_record_allocations import record_gated
from test_record_memory_alloc import start_memory_recording

FREE_THREADED = True  # run --heap-at-exit only: record --memory/--allocations refuse 3.13t

SCRIPT = TARGETS / "alloc_buffers.py"
TOLERANCE = 0.10
HOLDERS = {"numpy": "['ARRAYS']", "list": "['LISTS']", "dict": "['DICTS']",
           "bytearray": "['BLOBS']", "array": "['DOUBLES']", "first": "['FIRST']"}


def numpy_or_skip(python):
    if subprocess.run([str(python), "-c", "import numpy"], capture_output=True).returncode:
        pytest.skip(f"numpy is not installed for {python} (scripts/install-deps.sh packages)")


def scry_json(args):
    cp = run_scry([str(a) for a in args] + ["--json"], timeout=120)
    assert cp.returncode == 0, (args, cp.stdout, cp.stderr)
    return json.loads(cp.stdout)


def line_bytes(allocations, truth, name):
    return sum(a["bytes"] for a in allocations
               if a["file"] == truth["file"] and a["line"] == truth["lines"][name])


def check_buffers(heap, truth, small_objects_sampled=True):
    doc = scry_json(["analyze", "--allocations", "--top", "12", heap])
    retainers = doc["top_retainers"]
    for name, tail in HOLDERS.items():
        holder = [r for r in retainers if r["path"].endswith(tail)]
        assert len(holder) == 1, (name, [r["path"] for r in retainers])
        allocations = holder[0]["allocations"]
        got, want = line_bytes(allocations, truth, name), truth["bytes"][name]
        assert abs(got - want) <= TOLERANCE * want, (name, got, want, allocations)
        assert allocations[0]["line"] == truth["lines"][name], (name, allocations)
        others = sum(line_bytes(allocations, truth, n) for n in HOLDERS if n != name)
        assert others == 0, (name, allocations)
    churn = sum(line_bytes(r["allocations"], truth, "churn") for r in retainers)
    assert churn <= WINDOW, churn
    for r in retainers:  # no retainer holds more than it retains (the capped estimates)
        assert sum(a["bytes"] for a in r["allocations"]) <= r["retained"], r
        assert line_bytes(r["allocations"], truth, "native") == 0, r
    s = doc["allocation_samples"]
    assert s["small_objects_sampled"] is small_objects_sampled, s
    # The blocks malloc'd through ctypes are owned by no object: unmatched, on their line (each
    # above the window: counted at its size, which malloc rounds up to whole pages).
    unmatched = s["unmatched_lines"]
    assert sum(u["bytes"] for u in unmatched) == s["unmatched_bytes"], s
    native = line_bytes(unmatched, truth, "native")
    assert truth["native"] <= native <= truth["native"] * (1 + TOLERANCE), (truth["native"], s)
    # Nearly all of the 92 MB held is in blocks of the containers, not in the objects.
    assert s["in_buffers_bytes"] >= 0.9 * sum(truth["bytes"].values()), s
    assert s["in_buffers"] <= s["matched"] and s["samples"] == s["matched"] + s["unmatched"], s
    return doc


def test_heap_at_exit(python_exe, tmp_path):
    numpy_or_skip(python_exe)
    heap = tmp_path / "exit.heap"
    cp = subprocess.run([str(SCRY), "run", "--no-view", "--python", str(python_exe),
                         "--allocation-sampling-window", str(WINDOW), "-o",
                         str(tmp_path / "p.json"), "--heap-at-exit", str(heap), str(SCRIPT)],
                        capture_output=True, text=True, timeout=180)
    assert cp.returncode == 0, cp.stderr
    lines = cp.stdout.splitlines()
    assert len(lines) == 1, cp.stdout
    check_buffers(heap, json.loads(lines[0]))


def test_record_memory_heap_at_end(python_exe, tmp_path):
    """The agent loaded into a process started without scry (ptrace: the main thread waits in
    a read), its samples stored by --heap-at-end before it detaches."""
    numpy_or_skip(python_exe)
    if python_exe.endswith("t"):
        pytest.skip("record --memory refuses free-threaded builds")
    target = Target([str(python_exe), str(SCRIPT), "gate", "wait"], tmp_path / "target.stderr")
    heap = tmp_path / "end.heap"
    scry = None
    try:
        pid = target.next_json(timeout=60)["pid"]
        scry, _ = start_memory_recording(pid, heap, tmp_path)
        target.command("")
        truth = target.next_json(timeout=120)
        scry.send_signal(signal.SIGINT)
        _, err = scry.communicate(timeout=120)
        assert scry.returncode == 0 and "allocation samples:" in err, err
        target.command("")
        assert target.proc.wait(timeout=60) == 0, target.stderr_text()
        assert target.stderr_text() == ""
    finally:
        if scry is not None and scry.poll() is None:
            scry.kill()
            scry.communicate()
        target.kill()
    # ctypes looks malloc up with dlsym, after the attach: the patched dlsym answers the hook.
    check_buffers(heap, truth)


def test_record_allocations_ebpf(python_exe, tmp_path):
    """eBPF uprobes on the C library's allocator: every block here is malloc's (over 512
    bytes), numpy's data included."""
    numpy_or_skip(python_exe)
    if python_exe.endswith("t"):
        pytest.skip("record --allocations refuses free-threaded builds")
    heap = tmp_path / "bpf.heap"
    truth, doc = record_gated([python_exe, SCRIPT, "gate", "wait"], heap, tmp_path)
    assert doc["recording"]["lost"] == 0, doc
    check_buffers(heap, truth, small_objects_sampled=False)


def test_check_reads_bufs(tmp_path, start_target):
    """The snapshot says 1.3 and lists BUFS; a snapshot without samples has no BUFS (the blocks
    are only written to be joined to samples) and stays 1.1."""
    python = preferred_python()
    numpy_or_skip(python)
    heap = tmp_path / "exit.heap"
    cp = subprocess.run([str(SCRY), "run", "--no-view", "--python", str(python), "-o",
                         str(tmp_path / "p.json"), "--heap-at-exit", str(heap), str(SCRIPT)],
                        capture_output=True, text=True, timeout=180)
    assert cp.returncode == 0, cp.stderr
    doc = check_json(heap)
    assert doc["format_version"] == "1.3", doc
    assert {"ALOC", "BUFS"} <= {c["type"] for c in doc["chunks"]}, doc
    # only buffers where a sampled block starts: at the default 1 MiB window, at least the 16
    # numpy arrays' data and FIRST's (each a block of the window or more: always sampled)
    assert 17 <= doc["owned_buffers"] <= doc["allocation_samples"], doc
    target = start_target(python, "heap_fixtures.py")
    plain = tmp_path / "plain.heap"
    assert run_scry(["dump", "--pid", target.pid, "-o", plain]).returncode == 0
    doc = check_json(plain)
    assert doc["format_version"] == "1.1" and doc["owned_buffers"] == 0, doc
    assert "BUFS" not in {c["type"] for c in doc["chunks"]}, doc


def check_json(heap):
    cp = run_scry(["check", "--json", heap])
    assert cp.returncode == 0, cp.stderr
    doc = json.loads(cp.stdout)
    assert doc["valid"], doc
    return doc
