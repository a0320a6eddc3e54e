"""Checkpoints: the profile of a window of a run (a notebook cell, a test), issue 16's
foundation. tests/targets/window_work.py takes a checkpoint, allocates and keeps 100 MB, spins
0.5 s, allocates and frees 50 MB, takes a second checkpoint, and prints its own truth (thread
CPU time of each piece, and the agent's totals around the window). `scry collect --part B
--since A` must give exactly the window: its lines, its seconds, its memory. On every installed
Python 3.11+ that profiles memory, the free-threaded 3.13t included."""

import importlib.util
import json
import subprocess

import pytest

from conftest import (SCRY, TARGETS, file_detail, function_entry, line_entry, load_profile,
                      run_profiled, Ran)

_spec = importlib.util.spec_from_file_location("groundtruth", TARGETS / "groundtruth.py")
groundtruth = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(groundtruth)

FREE_THREADED = True  # python_exe also runs the free-threaded builds (conftest.FREE_THREADED)
TARGET = TARGETS / "window_work.py"
MARK = {k: v[0] for k, v in groundtruth.marker_lines(TARGET).items()}
MB = 1 << 20
CPU_TOLERANCE = 0.10
SAMPLE_SLACK = 0.03
MEM_TOLERANCE = 0.05


def cpu_sec(profile, entry):
    return (entry["n_cpu_percent_python"] + entry["n_cpu_percent_c"]) * \
        profile["sampled_time_sec"] / 100


def near(got, want, rel, slack=0.0):
    return abs(got - want) <= rel * want + slack


@pytest.fixture
def window_run(python_exe, tmp_path):
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir(mode=0o700)
    ran = run_profiled(python_exe, "window_work.py", [ckpt], outfile=tmp_path / "whole.json")
    assert ran.returncode == 0, ran.describe()
    truth = json.loads(ran.stdout.decode().splitlines()[-1])
    return ran, truth, ckpt


def collect(tmp_path, *args):
    out = tmp_path / "window.json"
    argv = [str(a) for a in (SCRY, "collect", *args, "-o", out, "--program-path", TARGETS)]
    cp = subprocess.run(argv, capture_output=True, timeout=60)
    return Ran(argv, cp.returncode, cp.stdout, cp.stderr, profile_path=out)


def test_window_profile_is_the_window(window_run, tmp_path):
    ran, truth, ckpt = window_run
    for name in ("a.json", "b.json"):
        assert (ckpt / name).stat().st_mode & 0o777 == 0o600
    got = collect(tmp_path, "--part", ckpt / "b.json", "--since", ckpt / "a.json")
    assert got.returncode == 0, got.describe()
    window = load_profile(got)
    detail = file_detail(window, TARGET)
    assert detail is not None, list(window["files"])
    # spin() ran in all three pieces; the window holds the window's only.
    hot = cpu_sec(window, function_entry(detail, "spin"))
    assert near(hot, truth["window"], CPU_TOLERANCE, SAMPLE_SLACK), (hot, truth)
    for outside in ("before", "after"):
        assert line_entry(detail, MARK[outside])["n_samples"] == 0, outside
    # The window's length is the time between the two checkpoints (wall clock).
    assert truth["wall_inner"] - 0.002 <= window["elapsed_time_sec"] <= truth["wall_outer"] + 0.002, \
        (window["elapsed_time_sec"], truth)
    # Memory: 100 MB kept and 50 MB allocated and freed in the window; nothing of before's.
    kept = line_entry(detail, MARK["window_alloc"])
    assert near(kept.get("n_malloc_mb", 0), 100, MEM_TOLERANCE), kept
    transient = line_entry(detail, MARK["window_transient"])
    assert near(transient.get("n_malloc_mb", 0), 50, MEM_TOLERANCE), transient
    assert line_entry(detail, MARK["held_before"]).get("n_malloc_mb", 0) == 0
    # The whole run's profile still has every piece.
    whole = load_profile(ran)
    wdetail = file_detail(whole, TARGET)
    all_hot = cpu_sec(whole, function_entry(wdetail, "spin"))
    want = truth["before"] + truth["window"] + truth["after"]
    assert near(all_hot, want, CPU_TOLERANCE, SAMPLE_SLACK), (all_hot, truth)
    view = subprocess.run([str(SCRY), "view", "--cli", "--no-color", str(got.profile_path)],
                          capture_output=True, text=True)
    assert view.returncode == 0 and "bytearray(MB) for _ in range(100)" in view.stdout, view


def test_totals_and_peak_since_mark(window_run):
    _, truth, _ = window_run
    a, b = truth["start_totals"], truth["end_totals"]
    assert a["profiling"] and a["memory"]
    cpu = (b["python_sec"] + b["native_sec"]) - (a["python_sec"] + a["native_sec"])
    assert near(cpu, truth["window_thread_total"], CPU_TOLERANCE, SAMPLE_SLACK), (cpu, truth)
    peak = (b["peak_since_mark_bytes"] - a["footprint_bytes"]) / MB
    assert near(peak, 150, MEM_TOLERANCE, 2), (peak, a, b)
    net = (b["footprint_bytes"] - a["footprint_bytes"]) / MB
    assert near(net, 100, MEM_TOLERANCE, 2), (net, a, b)
    # At least the 150 MB of buffers (the spin's int objects churn through more).
    allocated = (b["malloc_bytes"] - a["malloc_bytes"]) / MB
    assert allocated >= 150 * (1 - MEM_TOLERANCE), (allocated, a, b)


def test_collect_refuses_checkpoints_that_do_not_make_a_window(window_run, tmp_path):
    _, _, ckpt = window_run
    backwards = collect(tmp_path, "--part", ckpt / "a.json", "--since", ckpt / "b.json")
    assert backwards.returncode != 0
    assert b"later checkpoint" in backwards.stderr, backwards.describe()
    assert not (tmp_path / "window.json").exists()
    other = tmp_path / "other.json"
    doc = json.loads((ckpt / "a.json").read_text())
    doc["pid"] += 1
    other.write_text(json.dumps(doc))
    mixed = collect(tmp_path, "--part", ckpt / "b.json", "--since", other)
    assert mixed.returncode != 0 and b"not of the same process" in mixed.stderr, mixed.describe()
    garbage = tmp_path / "garbage.json"
    garbage.write_text("{not json")
    bad = collect(tmp_path, "--part", garbage)
    assert bad.returncode != 0 and b"not JSON" in bad.stderr, bad.describe()
    usage = collect(tmp_path, "--part", ckpt / "b.json", "--pid", "1")
    assert usage.returncode != 0, usage.describe()
