"""End-to-end tests of `scry record --pid PID --allocations --dump FILE` (docs/allocations.md,
"From outside: eBPF"): the allocations of a plain Python process, started without scry, recorded
with eBPF uprobes on its C library's allocator, then joined to the heap snapshot taken at the end.

The target is tests/targets/alloc_caches.py (the same as test_alloc_join.py's, with the same
checks): two caches filled by two lines with bytes objects of 1-200 KB (blocks the C library's
malloc serves), and a churn of 200 MB on a third line. Each cache's retained bytes must go to its
own line within 10%, and nothing retained to the churn line. The target's output and exit status
must be those of a run without scry. Skipped, saying why, only where BPF cannot be loaded here.
"""

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import SCRY, TARGETS, Target, preferred_python, run_scry
from pythons import find_free_threaded
from test_alloc_join import WINDOW, check_analyze, check_churn_by_stack

SCRIPT = TARGETS / "alloc_caches.py"
STATIC_311 = Path("/usr/bin/python3.11")
WAITER = "import sys; print('ready', flush=True); sys.stdin.readline()"


def start_recorder(pid, heap, tmp_path, output="--dump"):
    """The recorder, once its probes are attached (it says so on stderr)."""
    err = open(tmp_path / "record.stderr", "w+")
    rec = subprocess.Popen([str(SCRY), "record", "--pid", str(pid), "--allocations", output,
                            str(heap), "--allocation-sampling-window", str(WINDOW), "--json"],
                           stdout=subprocess.PIPE, stderr=err, text=True,
                           env=dict(os.environ, SCRY_LOG="info"))
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        err.seek(0)
        text = err.read()
        if "recording the allocations" in text:
            return rec, err
        if rec.poll() is not None:
            out = rec.stdout.read()
            if "bpf_unavailable" in out and "verifier" not in out:  # a refusal is a bug
                pytest.skip("BPF cannot be loaded here: " + json.loads(out)["error"]["message"])
            pytest.fail(f"the recorder ended (rc {rec.returncode}): {out}\n{text}")
        time.sleep(0.05)
    rec.kill()
    pytest.fail("the recorder did not attach within 30 s")


def record_gated(argv, heap, tmp_path, between=None):
    """Runs a gated target (it prints {"pid"}, waits for a line, works, prints a JSON line, waits
    for a line, ends) under the recorder, from the gate to the end of its work; returns (the
    target's JSON line, the recorder's document). heap: the --dump FILE, or with between (called
    with the pid once the recorder ended, before the target does) the -o FILE. The target must
    end with 0 and print nothing on stderr."""
    target = Target([str(a) for a in argv], tmp_path / "target.stderr")
    rec = err = None
    try:
        pid = target.next_json()["pid"]
        rec, err = start_recorder(pid, heap, tmp_path, "-o" if between else "--dump")
        target.command("")
        result = target.next_json(timeout=120)
        rec.send_signal(signal.SIGINT)
        out, _ = rec.communicate(timeout=120)
        err.seek(0)
        assert rec.returncode == 0, (out, err.read())
        if between:
            between(pid)
        target.command("")
        assert target.proc.wait(timeout=60) == 0, target.stderr_text()
        assert target.stderr_text() == ""
    finally:
        if rec and rec.poll() is None:
            rec.kill()
        if err:
            err.close()
        target.kill()
    return result, json.loads(out)


def record_caches(python, tmp_path):
    """Records the target while it fills its caches, then dumps; returns (heap, truth, the
    recorder's document)."""
    heap = tmp_path / "rec.heap"
    truth, doc = record_gated([python, SCRIPT, "gate", "wait"], heap, tmp_path)
    return heap, truth, doc


def check_recorded(heap, truth, doc):
    r = doc["recording"]
    assert r["pid"] == truth["pid"] and r["window"] == WINDOW and r["lost"] == 0, r
    # the churn's 200 1-MiB blocks are each a sample, freed; the caches' 90 MiB in elements of
    # at most 200 KB are at least 471 blocks, most of them above the window (each a sample)
    assert r["samples"] >= 600 and r["frees"] >= 200, r
    # one thread, always in Python code while recorded: every sample has its stack
    assert r["without_stack"] == 0 and r["truncated_stacks"] == 0, r
    d = doc["dump"]
    assert d["pid"] == truth["pid"] and d["allocation_samples"] > 0, d
    check_analyze(heap, truth, small_objects_sampled=False)
    folded = check_churn_by_stack(heap, truth)
    leaf_a = f"fill_a ({truth['file']}:{truth['line_a']})"
    assert any(l.rsplit(" ", 1)[0].split(";")[-1] == leaf_a for l in folded.splitlines()), \
        folded[:2000]


def check_same_output(python, truth):
    """The target prints what it prints without scry (its sizes are seeded: the same numbers),
    and exits 0: checked in record_caches."""
    plain = subprocess.run([str(python), str(SCRIPT), "gate", "wait"], input="\n\n",
                           capture_output=True, text=True, timeout=120)
    assert plain.returncode == 0 and plain.stderr == "", plain.stderr
    first, second = (json.loads(l) for l in plain.stdout.splitlines())
    assert set(first) == {"pid"}
    assert {**second, "pid": truth["pid"]} == truth, (second, truth)


def test_each_cache_goes_to_its_line(python_exe, tmp_path):
    heap, truth, doc = record_caches(python_exe, tmp_path)
    check_recorded(heap, truth, doc)
    check_same_output(python_exe, truth)


def test_new_threads_have_stacks(python_exe, tmp_path):
    """Threads that allocate in their first milliseconds and end: user space lists the threads
    every 0.2 s, so the BPF program looks a thread it does not know up in the interpreter's
    list itself. Every 1 MiB block (above the window: each is a sample) has its stack, and its
    line is the thread's."""
    heap = tmp_path / "threads.heap"
    truth, doc = record_gated([python_exe, TARGETS / "alloc_new_threads.py", "40"], heap,
                              tmp_path)
    r = doc["recording"]
    # A few samples of the threads' C start-up (small blocks, before any Python frame) may have
    # no stack; none of the 1 MiB ones (before the lookup, 41 of 44 samples had none).
    assert r["samples"] >= truth["threads"], r
    assert r["without_stack"] <= r["samples"] - truth["threads"], r
    cp = run_scry(["flamegraph", "--allocations", "--folded", heap])
    assert cp.returncode == 0, cp.stderr
    leaf = f"work ({truth['file']}:{truth['line']})"
    kept = sum(int(l.rsplit(" ", 1)[1]) for l in cp.stdout.splitlines()
               if l.rsplit(" ", 1)[0].split(";")[-1] == leaf)
    assert kept >= truth["threads"] << 20, (kept, cp.stdout[:2000])


SMALL = TARGETS / "alloc_small.py"
ARENA_SLACK = 1.5 * (1 << 20)  # what one arena (1 MiB) shared by two lines may misplace


def check_small_by_arena(heap, truth, doc):
    """Caches of small objects (no malloc: no sample) go to their code by arena: each within
    15% of its truth, most of it "by arena"; another function's share at most an arena's. By
    function: an arena goes to the line whose allocation needed it, in a loop its body's line or
    the loop's header (whose new int for the loop variable may be the one: half of them on 3.14)."""
    r = doc["recording"]
    assert r["arenas"] >= 30 and r["live_arenas"] >= 30, r  # 42 MB of small objects kept
    cp = run_scry(["analyze", "--allocations", "--json", heap])
    assert cp.returncode == 0, cp.stderr
    an = json.loads(cp.stdout)
    s = an["allocation_samples"]
    assert not s["small_objects_sampled"] and s["arenas"] == r["live_arenas"], s
    assert s["arena_bytes"] >= 0.8 * sum(truth["bytes"].values()), s
    for name, tail in (("A", "['CACHE_A']"), ("B", "['CACHE_B']")):
        holder = [t for t in an["top_retainers"] if t["path"].endswith(tail)]
        assert len(holder) == 1, [t["path"] for t in an["top_retainers"]]
        by_func = {}
        for a in holder[0]["allocations"]:
            if a["file"] == truth["file"]:
                f = by_func.setdefault(a["function"], {"bytes": 0, "arena_bytes": 0})
                f["bytes"] += a["bytes"]
                f["arena_bytes"] += a["arena_bytes"]
        mine = by_func.get(f"fill_{name.lower()}", {"bytes": 0, "arena_bytes": 0})
        want = truth["bytes"][name]
        assert abs(mine["bytes"] - want) <= 0.15 * want, (name, want, holder[0])
        assert mine["arena_bytes"] >= 0.5 * mine["bytes"], (name, holder[0])
        others = sum(f["bytes"] for func, f in by_func.items() if func != f"fill_{name.lower()}")
        assert others <= ARENA_SLACK, (name, holder[0])
    cp = run_scry(["check", "--json", heap])
    chk = json.loads(cp.stdout)
    assert chk["format_version"] == "1.4" and chk["arenas"] == s["arenas"], chk
    cp = run_scry(["flamegraph", "--allocations", "--folded", heap])
    leaf = f"fill_a ({truth['file']}:"
    kept = sum(int(l.rsplit(" ", 1)[1]) for l in cp.stdout.splitlines()
               if l.rsplit(" ", 1)[0].split(";")[-1].startswith(leaf))
    assert kept >= 0.8 * truth["bytes"]["A"], (kept, truth)


def test_small_objects_by_arena(python_exe, tmp_path):
    """Python's small objects never reach malloc: the arenas they lie in, each recorded with the
    stack that mapped it (an uprobe on mmap), give them a line (docs/allocations.md, "Arenas")."""
    heap = tmp_path / "small.heap"
    truth, doc = record_gated([python_exe, SMALL, "gate", "wait"], heap, tmp_path)
    check_small_by_arena(heap, truth, doc)


def test_static_debian_311(tmp_path):
    """Debian's /usr/bin/python3.11 has no libpython: its C library is probed all the same."""
    if not STATIC_311.exists():
        pytest.skip(f"{STATIC_311} is not installed")
    heap, truth, doc = record_caches(STATIC_311, tmp_path)
    check_recorded(heap, truth, doc)


def test_allocations_file_then_dump(tmp_path, spawn):
    """record -o FILE, then scry dump --pid PID --allocations FILE: the same join; the file is
    the program's data (0600) and belongs to that process only."""
    samples, heap = tmp_path / "app.alloc", tmp_path / "later.heap"
    dumped = {}

    def dump(pid):
        dumped["doc"] = json.loads(run_scry(["dump", "--pid", pid, "--allocations", samples,
                                             "-o", heap, "--json"]).stdout)

    truth, doc = record_gated([preferred_python(), SCRIPT, "gate", "wait", 20, 10, 50], samples,
                              tmp_path, between=dump)
    assert doc["output"] == str(samples) and "dump" not in doc, doc
    assert samples.stat().st_mode & 0o777 == 0o600
    d = dumped["doc"]
    assert d["allocation_samples"] == doc["recording"]["live"] > 0, (d, doc)
    check_analyze(heap, truth, small_objects_sampled=False)
    check_churn_by_stack(heap, truth)
    # another process (the same file), a core, a file that is not one
    other = spawn([preferred_python(), "-c", WAITER], stdin=subprocess.PIPE,
                  stdout=subprocess.PIPE, text=True)
    other.stdout.readline()
    err = check_error(["dump", "--pid", other.pid, "--allocations", samples, "-o",
                       tmp_path / "o.heap"], "usage", status=2)
    assert f"process {truth['pid']}" in err["message"], err
    cp = run_scry(["dump", "--core", samples, "--allocations", samples, "-o", tmp_path / "c.heap"])
    assert cp.returncode == 2 and "--allocations" in cp.stderr, cp.stderr
    check_error(["dump", "--pid", other.pid, "--allocations", SCRIPT, "-o", tmp_path / "x.heap"],
                "bad_profile")
    assert not any((tmp_path / n).exists() for n in ("o.heap", "c.heap", "x.heap"))


THREADED = """
import json, os, sys, threading
CACHE = []
go = threading.Event()
def worker():
    go.wait()
    for i in range(400):
        CACHE.append(os.urandom(50_000 + i))  # LINE_T
t = threading.Thread(target=worker)
t.start()
print(json.dumps({"pid": os.getpid()}), flush=True)
sys.stdin.readline()
go.set()
t.join()
print(json.dumps({"bytes": sum(sys.getsizeof(b) for b in CACHE)}), flush=True)
sys.stdin.readline()
"""


def test_thread_stacks(tmp_path):
    """Samples of a thread other than the main one get that thread's stack (its thread state is
    a heap block, found through the interpreter's thread list)."""
    script = tmp_path / "threaded.py"
    script.write_text(THREADED)
    line = next(n for n, t in enumerate(THREADED.splitlines(), 1) if t.endswith("# LINE_T"))
    heap = tmp_path / "t.heap"
    result, rec = record_gated([preferred_python(), script], heap, tmp_path)
    want = result["bytes"]
    assert rec["recording"]["without_stack"] == 0, rec
    doc = json.loads(run_scry(["analyze", "--allocations", "--json", heap]).stdout)
    holder = [r for r in doc["top_retainers"] if r["path"].endswith("['CACHE']")]
    assert len(holder) == 1, [r["path"] for r in doc["top_retainers"]]
    got = sum(a["bytes"] for a in holder[0]["allocations"]
              if a["file"] == str(script) and a["line"] == line and a["function"] == "worker")
    assert abs(got - want) <= 0.10 * want, (got, want, holder[0]["allocations"])


def check_error(args, code, status=1):
    cp = run_scry(args + ["--json"])
    assert cp.returncode == status, (cp.stdout, cp.stderr)
    err = json.loads(cp.stdout)["error"]
    assert err["code"] == code, err
    return err


def test_errors(spawn, tmp_path):
    heap = tmp_path / "x.heap"
    cp = run_scry(["record", "--pid", "1", "--allocations"])
    assert cp.returncode == 2 and "--dump" in cp.stderr, cp.stderr
    cp = run_scry(["record", "--pid", "1", "--allocations", "--dump", heap, "-o", heap])
    assert cp.returncode == 2 and "either" in cp.stderr, cp.stderr
    cp = run_scry(["record", "--pid", "1", "--allocations", "--dump", heap, "--rate", "10"])
    assert cp.returncode == 2 and "--rate" in cp.stderr, cp.stderr
    sleeper = spawn(["sleep", "60"])
    check_error(["record", "--pid", sleeper.pid, "--allocations", "--dump", heap], "not_python")
    assert not heap.exists()


def test_free_threaded_refused(spawn, tmp_path):
    ft = next(iter(find_free_threaded().values()), None)
    if not ft:
        pytest.skip("no free-threaded build installed (scripts/install-pythons.sh builds 3.13t)")
    proc = spawn([ft, "-c", WAITER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    proc.stdout.readline()
    heap = tmp_path / "ft.heap"
    err = check_error(["record", "--pid", proc.pid, "--allocations", "--dump", heap],
                      "unsupported_python")
    assert "free-threaded" in err["message"], err
    assert not heap.exists()


def test_process_ends_while_recording(tmp_path):
    python = preferred_python()
    proc = subprocess.Popen([python, "-c", WAITER], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    heap = tmp_path / "gone.heap"
    try:
        proc.stdout.readline()
        rec, err = start_recorder(proc.pid, heap, tmp_path)
        proc.stdin.write("\n")
        proc.stdin.flush()
        proc.wait(timeout=30)
        out, _ = rec.communicate(timeout=30)
        err.close()
        assert rec.returncode == 1, out
        e = json.loads(out)["error"]
        assert e["code"] == "no_such_process" and "ended while" in e["message"], e
        assert not heap.exists()
    finally:
        proc.kill()
        proc.wait()


def test_without_privileges(tmp_path):
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or not setpriv:
        pytest.skip("needs root and setpriv to run scry and a target as an unprivileged user")
    drop = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--"]
    python = shutil.which("python3")
    if subprocess.run(drop + ["test", "-x", str(SCRY)]).returncode != 0:
        pytest.skip(f"{SCRY} is not executable by uid 65534")
    proc = subprocess.Popen(drop + [python, "-c", WAITER], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        proc.stdout.readline()
        cp = subprocess.run(drop + [str(SCRY), "record", "--pid", str(proc.pid),
                                    "--allocations", "--dump", "/tmp/scry-nobody.heap",
                                    "--json"],
                            capture_output=True, text=True, timeout=30)
        assert cp.returncode == 1, (cp.stdout, cp.stderr)
        err = json.loads(cp.stdout)["error"]
        assert err["code"] == "bpf_unavailable", err
        assert "CAP_BPF" in err["message"] and "root" in err["hint"], err
        assert not Path("/tmp/scry-nobody.heap").exists()
    finally:
        proc.kill()
        proc.wait()
