"""Identical reruns under `scry compare --fail-above` (issue 27, item 5), and the rule behind it:
a line's function does not depend on the sample.

tests/targets/compare_rerun.py's hot lines are shared by a function and the generator expression
it calls: a sample is taken sometimes in the function's frame (the list growing, sum() running)
and sometimes in the genexpr's (its ints, its loop). The line belongs to the outermost profiled
frame on it (the function), whichever frame the sample caught; before, the agent's memory record
of a line took the function of its first sample, so the line's ~200 MB went to `steady_memory`
in one run and to `steady_memory.<locals>.<genexpr>` in the next, and compare failed the pair.

The reruns: 31 runs of each program (~0.4 s each) make 30 pairs of consecutive identical runs,
each compared with `--fail-above 10`. CPU time only (--use-virtual-time: the machine's load is
not the program's), compared with --normalize as tests/e2e/test_compare.py does (the CPU time of
the same work changes between runs on a shared machine, and the median function's ratio takes
that out); memory is compared as measured.
"""

import importlib.util
import json

import pytest

from conftest import TARGETS, file_detail, preferred_python, run_profiled, run_scry

FREE_THREADED = True  # python_exe also runs the free-threaded builds (conftest.FREE_THREADED)

TARGET = TARGETS / "compare_rerun.py"
RATE = ["--use-virtual-time", "--cpu-sampling-rate", "0.002"]  # as fast as the kernel's tick
OPTIONS = {"memory": RATE, "cpu": ["--cpu-only", *RATE]}
PAIRS = 30

_spec = importlib.util.spec_from_file_location("groundtruth", TARGETS / "groundtruth.py")
groundtruth = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(groundtruth)


def marker(name):
    (lineno,) = groundtruth.marker_lines(TARGET)[name]
    return lineno


def profile_of(python, mode, out):
    ran = run_profiled(python, TARGET.name, args=[mode], outfile=out, options=OPTIONS[mode])
    assert ran.returncode == 0, ran.describe()
    return json.loads(out.read_text())


def memory_counted(profile):
    """Whether the agent counted the program's Python allocations with their lines (the shared
    line allocates 200 MB on 3.11-3.13, 78 MB on 3.14+ whose ints come from a free list). Every
    run must: the agent's hooks are in place at the program's first line. (They used to wait for
    a pending call from the agent's collector thread, which a loaded machine ran after this
    0.3 s program had done its work; this test then made such a run again, up to 4 times.)"""
    detail = file_detail(profile, TARGET) or {"lines": []}
    line = marker("shared_memory")
    return any(e["lineno"] == line and e["n_malloc_mb"] >= 40 for e in detail["lines"])


def rerun_profile(python, mode, out):
    profile = profile_of(python, mode, out)
    assert mode != "memory" or memory_counted(profile), (
        f"{out.name}: the program's memory was not counted on its line "
        f"{marker('shared_memory')}: {file_detail(profile, TARGET)}")


@pytest.mark.parametrize("mode", ["memory", "cpu"])
def test_shared_line_belongs_to_its_function(python_exe, tmp_path, mode):
    """The deterministic rule: the genexpr runs on its caller's line, so every sample of that
    line, memory and time, goes to the caller; no `<genexpr>` function is charged anything."""
    out = tmp_path / f"{mode}.json"
    rerun_profile(python_exe, mode, out)
    profile = json.loads(out.read_text())
    detail = file_detail(profile, TARGET)
    assert detail, list(profile["files"])
    lineno = marker(f"shared_{mode}")
    line = next(e for e in detail["lines"] if e["lineno"] == lineno)
    funcs = {f["line"]: f for f in detail["functions"]}
    owner = funcs.get(f"steady_{mode}")
    assert owner, f"no function steady_{mode}: {sorted(funcs)}"
    if mode == "memory":
        assert owner["n_malloc_mb"] >= line["n_malloc_mb"] - 1e-6, (owner, line)
    assert line["n_samples"] >= 5, line
    assert owner["n_samples"] >= line["n_samples"], (owner, line)
    stray = {name: (f["n_samples"], f.get("n_malloc_mb", 0)) for name, f in funcs.items()
             if "<genexpr>" in name and (f["n_samples"] or f.get("n_malloc_mb", 0))}
    assert not stray, f"the shared line's samples went to the genexpr: {stray}"


@pytest.mark.parametrize("mode", ["memory", "cpu"])
def test_identical_reruns_pass_fail_above(tmp_path, mode):
    """30 pairs of identical reruns: `scry compare --fail-above 10` passes every one."""
    python = preferred_python()
    paths = []
    for i in range(PAIRS + 1):
        out = tmp_path / f"{mode}-{i}.json"
        rerun_profile(python, mode, out)
        paths.append(out)
    failed = []
    for before, after in zip(paths, paths[1:]):
        cp = run_scry(["compare", "--normalize", "--fail-above", "10", before, after])
        assert cp.returncode in (0, 1), cp.stderr
        if cp.returncode:
            failed.append(f"{before.name} -> {after.name}:\n{cp.stdout}{cp.stderr}")
    assert not failed, f"{len(failed)} of {PAIRS} identical pairs failed:\n" + "\n".join(failed)
