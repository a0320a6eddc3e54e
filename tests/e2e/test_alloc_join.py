"""End-to-end tests of the allocation join (docs/allocations.md): `scry analyze --allocations`,
`scry query --type T --allocations` and `scry flamegraph --allocations` on snapshots of
tests/targets/alloc_caches.py taken with `scry run --heap-at-exit` and with `scry dump --pid` of
the program while it runs under `scry run`, on every installed 3.11-3.15.

Truth comes from the target: the sum of sys.getsizeof of each cache's elements, both caches
filled by their own line (A: a dict, B: a list) with bytes objects of random contents from 1 KB
to 200 KB, and a third line (C) that allocated and freed 200 MB before the dump. Each cache's
bytes must go to its own line within 10% (the window is 64 KiB: the sampling error of either
cache is under 2%), and nothing retained to line C beyond one window.

Issue 27 item 11 (a join reported biased low, -11% on average): its programs at their own size,
tests/targets/alloc_kept.py (2,000 `bytearray(os.urandom(16)) * 4096` kept in a dict, 131 MB;
1,000 `bytes(96 * 1024)` kept in a list, 98 MB; the dict's made by 2 threads), at the default
window (1 MiB) as the issue ran them. The truth is exact: the bytes each program keeps. The bar
is at least as strict as the issue's (each holder's line within 10% in 9 runs of 10): all of 5
runs within 10%, and no bias: the runs' mean within 3%. Expected: the kept blocks are nearly all
of the sampled stream, so with stratified points a run is off by about one window (0.8-1%);
measured here -0.2% to -0.6% on average, never below -2.6%, idle or beside two busy loops (360
runs, tests/tools/alloc_join_bias.py). The one-thread programs on 3.12 and 3.13, the threads'
program on 3.13 and 3.13t: about 2 s each.
"""

import json
import subprocess
from pathlib import Path

import pytest

from conftest import SCRY, TARGETS, Target, is_free_threaded, preferred_python, run_scry

FREE_THREADED = True  # 3.13t: objects found in its mimalloc heaps (heap_mimalloc.c)

SCRIPT = TARGETS / "alloc_caches.py"
WINDOW = 65536
TOLERANCE = 0.10
CACHES = {"A": "['CACHE_A']", "B": "['CACHE_B']"}
KEPT = TARGETS / "alloc_kept.py"
KEPT_HOLDERS = {"dict": "['KEEP']", "list": "['LST']", "threads": "['KEEP']"}
# The bar is 9 runs of 10 within 10%; 5 of 5 within 10% and their mean within 3% is at
# least as strict on a bias (1 sample in 20 dropped fails the mean; 1 in 5 fails every run) and
# halves the runs of scry run --heap-at-exit.
KEPT_RUNS, KEPT_NEEDED, KEPT_BIAS = 5, 5, 0.03


def scry_json(args, code=0):
    cp = run_scry(list(args) + ["--json"], timeout=120)
    assert cp.returncode == code, (args, cp.stdout, cp.stderr)
    return json.loads(cp.stdout)


def run_args(python, out):
    return [SCRY, "run", "--no-view", "--python", python, "--allocation-sampling-window",
            WINDOW, "-o", out]


def heap_at_exit(python, tmp_path):
    """The snapshot at the program's end, and the truth it printed."""
    heap = tmp_path / "exit.heap"
    argv = [str(a) for a in run_args(python, tmp_path / "p.json")]
    cp = subprocess.run(argv + ["--heap-at-exit", str(heap), str(SCRIPT)], capture_output=True,
                        text=True, timeout=120)
    assert cp.returncode == 0, cp.stderr
    lines = cp.stdout.splitlines()
    assert len(lines) == 1, cp.stdout  # the program's own output, and nothing else
    assert "allocation samples:" in cp.stderr, cp.stderr
    return heap, json.loads(lines[0])


def dump_while_running(python, tmp_path):
    """`scry dump --pid` of the program under scry run, while it waits; then it ends."""
    argv = [str(a) for a in run_args(python, tmp_path / "p.json")] + [str(SCRIPT), "wait"]
    target = Target(argv, tmp_path / "run.stderr")
    try:
        truth = target.next_json(timeout=60)
        heap = tmp_path / "pid.heap"
        doc = scry_json(["dump", "--pid", truth["pid"], "-o", heap])
        assert doc["allocation_samples"] > 0, doc
        target.command("")
        assert target.proc.wait(timeout=60) == 0, target.stderr_text()
    finally:
        target.kill()
    return heap, truth


def line_bytes(allocations, truth, which):
    return sum(a["bytes"] for a in allocations
               if a["file"] == truth["file"] and a["line"] == truth[f"line_{which.lower()}"])


def check_analyze(heap, truth, small_objects_sampled=True):
    doc = scry_json(["analyze", "--allocations", "--top", "10", heap])
    retainers = doc["top_retainers"]
    for r in retainers:
        for a in r["allocations"]:
            assert set(a) == {"file", "line", "function", "bytes", "samples", "error_bytes",
                              "arena_bytes"}, a
    s = doc["allocation_samples"]
    assert s["window"] == WINDOW and s["samples"] == s["matched"] + s["unmatched"], s
    # the agent samples Python's small objects too; the eBPF recorder only malloc's blocks
    assert s["small_objects_sampled"] is small_objects_sampled, s
    for which, tail in CACHES.items():
        holder = [r for r in retainers if r["path"].endswith(tail)]
        assert len(holder) == 1, [r["path"] for r in retainers]
        got, want = line_bytes(holder[0]["allocations"], truth, which), truth[f"bytes_{which.lower()}"]
        assert abs(got - want) <= TOLERANCE * want, (which, got, want, holder[0]["allocations"])
        other = "B" if which == "A" else "A"
        assert line_bytes(holder[0]["allocations"], truth, other) == 0, holder[0]
        top = holder[0]["allocations"][0]
        assert top["line"] == truth[f"line_{which.lower()}"] and top["function"] == f"fill_{which.lower()}"
    churn = sum(line_bytes(r["allocations"], truth, "C") for r in retainers)
    assert churn <= WINDOW, churn


def check_churn_by_stack(heap, truth):
    """Nothing retained anywhere from the churn line, by stack either; returns the folded
    stacks."""
    cp = run_scry(["flamegraph", "--allocations", "--folded", heap])
    assert cp.returncode == 0, cp.stderr
    tail = f"({truth['file']}:{truth['line_c']})"
    churn = sum(int(l.rsplit(" ", 1)[1]) for l in cp.stdout.splitlines()
                if l.rsplit(" ", 1)[0].endswith(tail))
    assert churn <= WINDOW, churn
    return cp.stdout


@pytest.mark.parametrize("how", ["heap_at_exit", "dump_pid"])
def test_each_cache_goes_to_its_line(python_exe, tmp_path, how):
    take = heap_at_exit if how == "heap_at_exit" else dump_while_running
    heap, truth = take(python_exe, tmp_path)
    check_analyze(heap, truth)
    check_churn_by_stack(heap, truth)


def kept_line_bytes(python, tmp_path, mode, i):
    """One run of alloc_kept.py MODE at the default window: the bytes its holder's line is
    credited with, and the truth."""
    heap = tmp_path / f"{mode}{i}.heap"
    cp = subprocess.run([str(SCRY), "run", "--no-view", "--python", str(python), "-o",
                         str(tmp_path / f"{mode}{i}.json"), "--heap-at-exit", str(heap),
                         str(KEPT), mode], capture_output=True, text=True, timeout=120)
    assert cp.returncode == 0, cp.stderr
    truth = json.loads(cp.stdout.splitlines()[-1])
    retainers = scry_json(["analyze", "--allocations", "--top", "5", heap])["top_retainers"]
    holder = [r for r in retainers if r["path"].endswith(KEPT_HOLDERS[mode])]
    assert len(holder) == 1, [r["path"] for r in retainers]
    got = sum(a["bytes"] for a in holder[0]["allocations"]
              if a["file"] == truth["file"] and a["line"] == truth["line"])
    return got, truth["bytes"]


@pytest.mark.parametrize("mode", ["dict", "list", "threads"])
def test_kept_buffers_join_without_bias(python_exe, pythons, tmp_path, mode):
    if mode == "threads" and not (is_free_threaded(python_exe)
                                  or python_exe == pythons.get("3.13")):
        pytest.skip("2 threads: on 3.13 and 3.13t (the sampler's per-thread streams are the "
                    "same code on every version; this keeps the test's cost low)")
    if mode != "threads" and python_exe not in (pythons.get("3.12"), pythons.get("3.13")):
        pytest.skip("one thread: on 3.12 and 3.13 (the join is the same code on every version; "
                    "this keeps the test's cost low)")
    ratios = []
    for i in range(KEPT_RUNS):
        got, want = kept_line_bytes(python_exe, tmp_path, mode, i)
        ratios.append(round(got / want, 4))
        if sum(abs(r - 1) <= TOLERANCE for r in ratios) >= KEPT_NEEDED:
            break  # the bar is met, whatever further runs would give
    assert sum(abs(r - 1) <= TOLERANCE for r in ratios) >= KEPT_NEEDED, ratios
    assert abs(sum(ratios) / len(ratios) - 1) <= KEPT_BIAS, ratios


@pytest.fixture(scope="module")
def one_heap(tmp_path_factory):
    return heap_at_exit(preferred_python(), tmp_path_factory.mktemp("alloc"))


def test_query_type_allocations(one_heap):
    heap, truth = one_heap
    doc = scry_json(["query", heap, "--type", "bytes", "--allocations"])
    for which in CACHES:
        got, want = line_bytes(doc["allocations"], truth, which), truth[f"bytes_{which.lower()}"]
        assert abs(got - want) <= TOLERANCE * want, (which, got, want)
    assert line_bytes(doc["allocations"], truth, "C") <= WINDOW
    # Line B made no dict; line A's dict samples are CACHE_A's own keys table (a buffer of
    # the dict), never its bytes values.
    doc = scry_json(["query", heap, "--type", "builtins.dict", "--allocations"])
    assert line_bytes(doc["allocations"], truth, "B") == 0
    assert line_bytes(doc["allocations"], truth, "A") <= 0.1 * truth["bytes_a"]


def test_flamegraph_allocations_by_stack(one_heap, tmp_path):
    heap, truth = one_heap
    cp = run_scry(["flamegraph", "--allocations", "--folded", heap])
    assert cp.returncode == 0, cp.stderr
    by_leaf = {}
    for line in cp.stdout.splitlines():
        stack, weight = line.rsplit(" ", 1)
        by_leaf[stack.split(";")[-1]] = by_leaf.get(stack.split(";")[-1], 0) + int(weight)
        if stack.endswith(f"({truth['file']}:{truth['line_a']})"):
            assert stack.split(";")[-2].startswith("<module> ("), stack  # called from the module
    for which in CACHES:
        leaf = f"fill_{which.lower()} ({truth['file']}:{truth['line_' + which.lower()]})"
        want = truth[f"bytes_{which.lower()}"]
        assert abs(by_leaf.get(leaf, 0) - want) <= TOLERANCE * want, (leaf, by_leaf)
    svg = tmp_path / "a.svg"
    assert run_scry(["flamegraph", "--allocations", heap, "-o", svg]).returncode == 0
    assert "Retained bytes by allocating stack" in svg.read_text()


def test_snapshot_without_allocations(start_target, tmp_path):
    python = preferred_python()
    target = start_target(python, "heap_fixtures.py")
    heap = tmp_path / "plain.heap"
    doc = scry_json(["dump", "--pid", target.pid, "-o", heap])
    assert doc["allocation_samples"] is None
    for args in (["analyze", "--allocations", heap],
                 ["query", heap, "--type", "dict", "--allocations"]):
        err = scry_json(args, code=1)["error"]
        assert err["code"] == "no_allocations" and "scry run" in err["message"], err
    cp = run_scry(["flamegraph", "--allocations", "--folded", heap])
    assert cp.returncode == 1 and "[no_allocations]" in cp.stderr, cp.stderr
    # Without --allocations the snapshot reads as before.
    assert "allocation_samples" not in scry_json(["analyze", heap])


def test_allocations_option_errors(one_heap):
    heap, _ = one_heap
    for args in (["query", heap, "--locate", "x", "--allocations"],
                 ["diff", heap, heap, "--allocations"],
                 ["flamegraph", "--allocations", "--diff", heap, heap, "--folded"]):
        cp = run_scry(args)
        assert cp.returncode == 2 and "--allocations" in cp.stderr, (args, cp.stderr)
    cp = run_scry(["run", "--cpu-only", "--heap-at-exit", "x.heap", str(SCRIPT)])
    assert cp.returncode == 2 and "--heap-at-exit" in cp.stderr, cp.stderr


def test_check_reads_the_allocation_chunk(one_heap):
    heap, _ = one_heap
    cp = run_scry(["check", "--json", heap])
    assert cp.returncode == 0, cp.stderr
    doc = json.loads(cp.stdout)
    assert doc["valid"] and doc["format_version"] == "1.3", doc  # with BUFS
    assert doc["allocation_samples"] > 0 and "ALOC" in [c["type"] for c in doc["chunks"]], doc


def test_heap_at_exit_keeps_status_and_says_when_no_atexit(tmp_path):
    python = preferred_python()
    ok = tmp_path / "ok.py"
    ok.write_text("import sys\nprint('out')\nsys.exit(3)\n")
    gone = tmp_path / "gone.py"
    gone.write_text("import os\nprint('out', flush=True)\nos._exit(4)\n")
    for prog, rc, written in ((ok, 3, True), (gone, 4, False)):
        heap = tmp_path / f"{prog.stem}.heap"
        argv = [str(a) for a in run_args(python, tmp_path / "p.json")]
        cp = subprocess.run(argv + ["--heap-at-exit", str(heap), str(prog)], capture_output=True,
                            text=True, timeout=120)
        assert cp.returncode == rc and cp.stdout == "out\n", (prog, cp.returncode, cp.stderr)
        assert heap.exists() == written, cp.stderr
        assert ("no heap snapshot at exit" in cp.stderr) == (not written), cp.stderr
