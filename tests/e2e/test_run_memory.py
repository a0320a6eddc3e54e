"""End-to-end tests of `scry run`'s memory profile (issue 4) against ground truth, on every
installed Python 3.11-3.13: bytes allocated, freed, held and copied per line, Python versus
native memory, the footprint, leak detection, threads with no Python frame, children, and that
the program's output and exit status stay what they are without scry.

The ground truth is in tests/targets/mem_*.py, whose lines carry `# @name` markers:
- mem_lines.py: 200 MiB of bytearrays kept by one line; 1000 MiB allocated and freed 10 MiB at a
  time by another; numpy arrays and libc malloc through ctypes (native); 2 million small strs
  (Python); 500 MiB copied by slice assignment (a memcpy, checked with an LD_PRELOAD counter);
- mem_leak.py: a loop that leaks 5 MiB a round and two that do not (each in its own process);
- mem_cache_leak.py: a steady leak beside a cache that sets the peaks and is trimmed back;
- mem_cache_trim.py: a cache line that grows to 64 MiB, is trimmed and grows again (the most a
  line held at once, n_max_held_mb, beside one execution's n_peak_mb);
- mem_native_thread.py: 64 MiB malloc'ed by a raw pthread (native_alloc_thread.c, built here);
- mem_stress.py: 16 threads allocating and freeing concurrently;
- mem_children.py: memory allocated by a forked child and by spawned multiprocessing children.

MB means MiB (1,048,576 bytes) everywhere, as in the profile. The sampler gives every allocated
byte the same chance to be sampled: one point at a random offset in each window W (default
1 MiB) of a thread's allocated bytes, a sample standing for W per point, and an allocation of W
or more counted at its size. A line that allocates everything (or allocates objects of W or
more) is exact to within W, which is what most tolerances below are made of; lines that share
the windows have a relative error of about 1/sqrt(samples) (the loop tests below). Python's
objects count their requested size, C blocks their usable size (the C library rounds a 1 MiB + 1
request up to its page, +0.4%), which the 2% tolerances absorb. Allocated bytes include a line's
temporaries. The footprint counts C blocks and arenas, and mappings by their resident pages.
"""

import importlib.util
import functools
import json
import math
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import (SCRY, TARGETS, assert_same_behaviour, file_detail, is_free_threaded,
                      line_entry, load_profile, run_plain, run_profiled)

_spec = importlib.util.spec_from_file_location("groundtruth", TARGETS / "groundtruth.py")
groundtruth = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(groundtruth)

# Also on the free-threaded 3.13t (conftest.FREE_THREADED), with the same tolerances: Python's
# allocator is mimalloc there, whose blocks the footprint counts by their sizes.
FREE_THREADED = True

MB = 1 << 20
W_MB = 1.0  # the default sampling window, in MB
NATIVE = "<native>"

LINES = TARGETS / "mem_lines.py"
LEAK = TARGETS / "mem_leak.py"
CACHE_LEAK = TARGETS / "mem_cache_leak.py"
CACHE_TRIM = TARGETS / "mem_cache_trim.py"
NATIVE_THREAD = TARGETS / "mem_native_thread.py"
STRESS = TARGETS / "mem_stress.py"
CHILDREN = TARGETS / "mem_children.py"
HUGE = TARGETS / "mem_huge.py"
THREADS = TARGETS / "mem_threads.py"

# Per line and per function.
MEMORY_FIELDS = ("n_malloc_mb", "n_mallocs", "n_python_fraction", "n_usage_fraction",
                 "n_peak_mb", "n_avg_mb", "n_growth_mb", "n_free_mb", "n_copy_mb_s")
# Issue 4's thresholds: a native buffer below 0.1 Python, many small Python objects above 0.9.
MAX_NATIVE_PYTHON_FRACTION = 0.10
MIN_PYTHON_FRACTION = 0.90
MALLOC_TOLERANCE = 0.02  # the "within 2%" of a known allocation
COPY_TOLERANCE = 0.10  # the "copy volume within 10%"
MIN_LEAK_LIKELIHOOD = 0.95  # the spec's reporting threshold
# The copy sampler charges a line the bytes its thread copied since the last copy sample, a
# sample each time they reach 8 MiB (SCRY_COPY_WINDOW's default): a line that copies nothing
# may still be charged less than that window of earlier lines' copies.
COPY_WINDOW_MB = 8.0


def marker(path, name):
    (lineno,) = groundtruth.marker_lines(path)[name]
    return lineno


# ---- runs, shared between tests, and the profile's memory schema ----------------------------


@pytest.fixture(scope="session")
def mem_run(tmp_path_factory):
    """mem_run(python, script, args=(), options=(), env=None, plain=False) -> Ran: each distinct
    run made once per session (plain=True: without scry). env: variables added for both runs.
    A failed run fails every test that asks for it, without running it again."""
    cache = {}

    def run(python, script, args=(), options=(), env=None, plain=False):
        key = (python, str(script), tuple(args), tuple(options), tuple(sorted((env or {}).items())),
               plain)
        if key not in cache:
            mp = pytest.MonkeyPatch()
            try:
                for k, v in (env or {}).items():
                    mp.setenv(k, v)  # conftest.program_env() copies os.environ for each run
                if plain:
                    cache[key] = run_plain(python, script, args)
                else:
                    out = tmp_path_factory.mktemp("mem") / "profile.json"
                    cache[key] = run_profiled(python, script, args, outfile=out, options=options)
            except BaseException as e:  # pytest.fail's exception is a BaseException
                cache[key] = e
                raise
            finally:
                mp.undo()
        found = cache[key]
        if isinstance(found, BaseException):
            pytest.fail(f"the shared run of {script} {' '.join(args)} {' '.join(options)} "
                        f"failed earlier: {found}")
        return found

    return run


def _number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _check_timeline(points, where, max_mb=None):
    assert isinstance(points, list), (where, points)
    last = -1
    for p in points:
        assert isinstance(p, list) and len(p) == 2 and _number(p[0]) and _number(p[1]), (where, p)
        assert p[0] >= last and p[1] >= 0, (where, points)
        if max_mb is not None:
            # A point is the footprint at that moment, never above its maximum.
            assert p[1] <= max_mb * 1.001 + 1e-6, (where, p, max_mb)
        last = p[0]


def check_memory_schema(profile):
    """The memory fields of the profile (globals, every line and function, leaks) have their
    types and ranges, and agree with each other."""
    for field in ("max_footprint_mb", "growth_rate", "native_allocations_mb", "elapsed_time_sec"):
        assert _number(profile.get(field)), (field, profile.get(field))
    assert isinstance(profile.get("memory"), bool), profile.get("memory")
    assert isinstance(profile.get("alloc_samples"), int) and profile["alloc_samples"] >= 0
    assert profile["max_footprint_mb"] >= 0 and profile["native_allocations_mb"] >= 0
    footprint = profile["max_footprint_mb"]
    _check_timeline(profile.get("samples"), "samples", footprint)
    usage = 0.0
    for name, detail in profile["files"].items():
        for kind in ("lines", "functions"):
            for e in detail[kind]:
                where = (name, kind, e.get("lineno"), e.get("line"))
                for field in MEMORY_FIELDS:
                    if field == "n_free_mb" and not profile["memory"]:
                        # A scry addition, left out of CPU-only profiles (json-schema.md).
                        assert field not in e, (where, field, e[field])
                        continue
                    assert _number(e.get(field)), (where, field, e.get(field))
                    assert e[field] >= 0, (where, field, e[field])
                assert e["n_python_fraction"] <= 1 + 1e-9, (where, e["n_python_fraction"])
                assert e["n_usage_fraction"] <= 1 + 1e-9, (where, e["n_usage_fraction"])
                # What a line held at once is part of what it allocated and of the footprint.
                assert e["n_peak_mb"] <= e["n_malloc_mb"] * 1.001 + 1e-6, (where, e)
                assert e["n_peak_mb"] <= footprint * 1.001 + 1e-6, (where, e, footprint)
                assert e["n_avg_mb"] <= e["n_peak_mb"] * 1.001 + 1e-6, (where, e)
                _check_timeline(e.get("memory_samples"), where, footprint)
                if kind == "lines":
                    usage += e["n_usage_fraction"]
        leaks = detail.get("leaks")
        assert isinstance(leaks, dict), (name, leaks)
        for lineno, leak in leaks.items():
            assert lineno.isdigit(), (name, lineno)
            assert _number(leak.get("likelihood")) and _number(leak.get("velocity_mb_s")), leak
            assert MIN_LEAK_LIKELIHOOD <= leak["likelihood"] <= 1, (name, lineno, leak)
            assert leak["velocity_mb_s"] >= 0, (name, lineno, leak)
    assert usage <= 1 + 1e-6, f"the lines' n_usage_fraction add up to {usage}"
    if profile["memory"]:
        # A line's growth is never more than the whole program's: growth_rate % of everything
        # allocated, which any line's n_malloc_mb / n_usage_fraction gives.
        lines = [e for d in profile["files"].values() for e in d["lines"]
                 if e["n_usage_fraction"] > 0]
        if lines:
            top = max(lines, key=lambda e: e["n_malloc_mb"])
            program_growth = profile["growth_rate"] / 100 * (
                top["n_malloc_mb"] / top["n_usage_fraction"])
            for e in lines:
                assert e["n_growth_mb"] <= program_growth * 1.001 + 0.01, (
                    f"line {e['lineno']} grew {e['n_growth_mb']:.2f} MB, the program "
                    f"{program_growth:.2f} MB")
        assert isinstance(profile.get("memory_sampling_window"), int), profile.keys()
        assert _number(profile.get("copy_mb")) and profile["copy_mb"] >= 0, profile.get("copy_mb")
        assert profile["alloc_samples"] >= sum(
            e["n_mallocs"] for d in profile["files"].values() for e in d["lines"]), \
            "fewer alloc_samples than the lines' malloc samples"


def load_memory_profile(ran):
    """The profile of a run under scry, checked against the CPU schema (conftest) and the memory
    one (the "<native>" pseudo-file's one line is line 0, docs/agent-protocol.md)."""
    profile = load_profile(ran)
    check_memory_schema(profile)
    return profile


def detail_of(profile, path, ran):
    detail = file_detail(profile, path)
    assert detail is not None, (f"{path} is not among the profile's files: "
                                f"{list(profile['files'])}; {ran.describe()}")
    return detail


def mem_line(detail, lineno):
    """The line entry with its memory fields (zeros when the line is not listed)."""
    e = line_entry(detail, lineno)
    return {**{f: 0 for f in MEMORY_FIELDS}, "memory_samples": [], **e}


def describe(e):
    return ("line {lineno}: malloc {n_malloc_mb:.2f} MB in {n_mallocs} samples, python "
            "{n_python_fraction:.3f}, free {n_free_mb:.2f}, peak {n_peak_mb:.2f}, avg "
            "{n_avg_mb:.2f}, growth {n_growth_mb:.2f}, copy {n_copy_mb_s:.2f} MB/s, usage "
            "{n_usage_fraction:.3f}").format(**e)


def near(got, want, rel=0.0, abs_=0.0):
    return abs(got - want) <= want * rel + abs_


SMALL_LIST_LEN = 2_000_000  # mem_lines.py's small section: its list, and the list of their sizes


@functools.lru_cache(maxsize=None)
def list_moves_mb(python, n=SMALL_LIST_LEN):
    """What a list grown to n items by appends allocates, frees and copies besides its last array
    on a free-threaded build, in MB: there each resize takes a new array, copies the items into it
    and frees the old one (so that threads reading the list without a lock never see it move
    under them), where a GIL build reallocs the array in place. 0 on a GIL build. Read from the
    interpreter itself: the sizes the list reports as it grows (130.6 MB for 2,000,000 items on
    3.13t)."""
    if not is_free_threaded(python):
        return 0.0
    code = ("import sys\nl = []\nbase = seen = sys.getsizeof(l)\ntotal = 0\n"
            f"for _ in range({n}):\n"
            "    l.append(None)\n"
            "    if sys.getsizeof(l) != seen:\n"
            "        total += seen - base\n"
            "        seen = sys.getsizeof(l)\n"
            "print(total)\n")
    out = subprocess.run([python, "-c", code], capture_output=True, check=True, text=True)
    return int(out.stdout) / MB


def lines_run(mem_run, python, sections=(), options=()):
    """(run, profile, detail of mem_lines.py, the target's JSON line) under scry."""
    ran = mem_run(python, LINES, sections, options)
    assert ran.returncode == 0, ran.describe()
    truth = json.loads(ran.stdout.decode().splitlines()[-1])
    profile = load_memory_profile(ran)
    return ran, profile, detail_of(profile, LINES, ran), truth


# ---- mem_lines.py: every section in one run --------------------------------------------------


def test_lines_output_and_status_unchanged(mem_run, python_exe):
    assert_same_behaviour(mem_run(python_exe, LINES, plain=True), mem_run(python_exe, LINES))


def test_kept_bytearrays(mem_run, python_exe):
    """200 MiB in 1 MiB bytearrays kept by one line (a list comprehension)."""
    _, profile, detail, _ = lines_run(mem_run, python_exe)
    assert profile["memory"] is True
    e = mem_line(detail, marker(LINES, "keep200"))
    where = describe(e)
    assert near(e["n_malloc_mb"], 200, MALLOC_TOLERANCE), f"want 200 MB +-2%: {where}"
    # Held at the end and at once: 200 MB, to within the window (W) and the blocks' rounding.
    assert 190 <= e["n_growth_mb"] <= 210, f"want growth near 200 MB: {where}"
    assert near(e["n_peak_mb"], 200, MALLOC_TOLERANCE), f"want a 200 MB peak: {where}"
    # The line ran once: its average execution held what its one execution did.
    assert near(e["n_avg_mb"], 200, MALLOC_TOLERANCE), f"want an average of 200 MB: {where}"
    # Every buffer is a bytearray, whose storage comes from PyObject_Malloc.
    assert e["n_python_fraction"] > MIN_PYTHON_FRACTION, where
    # Nothing is freed: at most the window of other lines' frees lands here.
    assert e["n_free_mb"] <= 2 * W_MB, where
    # Each 1 MiB (+1 byte) buffer crosses the 1 MiB window by itself: a sample per buffer,
    # fewer only where small frees pending in the thread's counter push one to the next.
    assert 150 <= e["n_mallocs"] <= 205, f"want a malloc sample per buffer: {where}"
    assert e["memory_samples"], f"no footprint timeline for the line: {where}"
    # Zeroing the buffers is a memset, not a copy (an LD_PRELOAD counter saw 0.002 MB).
    assert e["n_copy_mb_s"] * profile["elapsed_time_sec"] < COPY_WINDOW_MB + 1, where
    # The function holding the comprehension (on 3.11 the comprehension is a function of its
    # own) is charged the same.
    names = ("keep200", "keep200.<locals>.<listcomp>")
    funcs = [f for f in detail["functions"] if f["line"] in names]
    assert funcs, f"no function entry {names}: {[f['line'] for f in detail['functions']]}"
    top = max(funcs, key=lambda f: f["n_malloc_mb"])
    assert near(top["n_malloc_mb"], 200, MALLOC_TOLERANCE), f"{top['line']}: {describe(top)}"


def test_allocate_and_free_1gb(mem_run, python_exe):
    """100 bytearrays of 10 MiB allocated and freed by one line, one alive at a time."""
    _, profile, detail, _ = lines_run(mem_run, python_exe)
    e = mem_line(detail, marker(LINES, "churn1g"))
    where = describe(e)
    assert near(e["n_malloc_mb"], 1000, MALLOC_TOLERANCE), f"want 1000 MB +-2%: {where}"
    assert near(e["n_free_mb"], 1000, MALLOC_TOLERANCE), f"want 1000 MB freed +-2%: {where}"
    # Nothing is kept: the net is 0 to within the window; 5 MB is half a buffer, so a lost free
    # (or a malloc counted twice) shows.
    assert abs(e["n_growth_mb"]) <= 5, f"want growth near 0: {where}"
    # One 10 MiB buffer alive at a time: its peak is 10 MB, +-W; two alive would be 20.
    assert 9 <= e["n_peak_mb"] <= 12, f"want a 10 MB peak: {where}"
    # Each 10 MiB allocation crosses the window by itself: one sample each.
    assert 95 <= e["n_mallocs"] <= 110, f"want ~100 malloc samples: {where}"
    assert e["n_python_fraction"] > MIN_PYTHON_FRACTION, where
    # A memset of 1000 MB to zero is not a copy.
    assert e["n_copy_mb_s"] * profile["elapsed_time_sec"] < COPY_WINDOW_MB + 1, where


def test_native_buffers_are_native(mem_run, python_exe):
    """numpy's data and libc's malloc through ctypes count as native, at their true size."""
    _, _, detail, truth = lines_run(mem_run, python_exe)
    e = mem_line(detail, marker(LINES, "ctypes"))
    assert near(e["n_malloc_mb"], 100, MALLOC_TOLERANCE), f"ctypes malloc(100 MiB): {describe(e)}"
    assert e["n_python_fraction"] < MAX_NATIVE_PYTHON_FRACTION, f"ctypes: {describe(e)}"
    if not truth["numpy"]:
        pytest.skip(f"numpy is not installed for {python_exe} (ctypes checked)")
    e = mem_line(detail, marker(LINES, "numpy"))
    assert near(e["n_malloc_mb"], 200, MALLOC_TOLERANCE), f"numpy 8 x 25 MiB: {describe(e)}"
    assert e["n_python_fraction"] < MAX_NATIVE_PYTHON_FRACTION, f"numpy: {describe(e)}"


def test_small_objects_are_python(mem_run, python_exe):
    """2,000,000 short strs and their list, made by one line, come from Python's allocator."""
    _, _, detail, truth = lines_run(mem_run, python_exe)
    e = mem_line(detail, marker(LINES, "small"))
    # On a free-threaded build the list's resizes allocate too (list_moves_mb).
    low, high = (b / MB + list_moves_mb(python_exe) for b in truth["small_bytes"])
    assert e["n_python_fraction"] > MIN_PYTHON_FRACTION, describe(e)
    # The truth lies between the objects' own sizes (what tracemalloc counts: 106.8 MB on 3.12)
    # and the same rounded to pymalloc's 16-byte classes, held in its 1 MiB arenas, whose pools
    # lose about 2% to their headers and to the arena's alignment (4% above; seen: 1.4%);
    # pymalloc may reuse a few MB its arenas had free before the line (5% below).
    assert 0.95 * low <= e["n_malloc_mb"] <= 1.04 * high + W_MB, (
        f"want {low:.1f}-{high:.1f} MB: {describe(e)}")


def test_copy_volume(mem_run, python_exe):
    """50 copies of 10 MiB by slice assignment (memcpy; an LD_PRELOAD counter saw 500.0 MB)."""
    _, profile, detail, _ = lines_run(mem_run, python_exe)
    e = mem_line(detail, marker(LINES, "copy500"))
    copied = e["n_copy_mb_s"] * profile["elapsed_time_sec"]
    assert near(copied, 500, COPY_TOLERANCE), (
        f"copy: {copied:.1f} MB ({e['n_copy_mb_s']:.2f} MB/s x {profile['elapsed_time_sec']:.2f}"
        f" s), want 500 MB +-10%: {describe(e)}")


def test_memory_stacks_and_flame_graph(mem_run, python_exe):
    """With --stacks, memory_stacks (Scalene's format) gives the MB each call stack allocated,
    and `scry flamegraph --memory` draws them: the kept 200 MiB sit under keep200's stack."""
    ran, profile, _, _ = lines_run(mem_run, python_exe, ["keep200", "churn1g"], ["--stacks"])
    line = marker(LINES, "keep200")
    stacks = profile["memory_stacks"]
    assert isinstance(stacks, list) and stacks, profile.keys()
    weights = {}
    for frames, mb in stacks:
        assert frames and all(f["kind"] == "py" and f["ip"] is None for f in frames), frames
        leaf = frames[-1]
        weights[(leaf["display_name"], leaf["line"])] = mb
    kept = [mb for (name, lineno), mb in weights.items() if lineno == line]
    assert kept and near(kept[0], 200, MALLOC_TOLERANCE), weights
    churn = [mb for (name, lineno), mb in weights.items()
             if lineno == marker(LINES, "churn1g")]
    assert churn and near(churn[0], 1000, MALLOC_TOLERANCE), weights
    cp = subprocess.run([str(SCRY), "flamegraph", "--memory", "--folded", str(ran.profile_path)],
                        capture_output=True, text=True, timeout=60)
    assert cp.returncode == 0, cp.stderr
    folded = {ln.rsplit(" ", 1)[0]: float(ln.rsplit(" ", 1)[1]) for ln in cp.stdout.splitlines()}
    ours = [w for stack, w in folded.items() if stack.endswith(f"mem_lines.py:{line})")]
    assert ours and near(ours[0], 200, MALLOC_TOLERANCE), cp.stdout


STATIC_PYTHON = "/usr/bin/python3.11"  # Debian's: libpython inside the executable


def test_static_python(mem_run):
    """Debian's static interpreter: the allocator and PyMem hooks are found in the executable
    itself; kept bytes, the Python/native split and copies as on the shared builds."""
    if not os.access(STATIC_PYTHON, os.X_OK):
        pytest.skip(f"{STATIC_PYTHON} (Debian's static Python 3.11) is not installed")
    ran, profile, detail, _ = lines_run(mem_run, STATIC_PYTHON, ["keep200", "ctypes", "copy500"])
    assert_same_behaviour(mem_run(STATIC_PYTHON, LINES, ["keep200", "ctypes", "copy500"],
                                  plain=True), ran)
    kept = mem_line(detail, marker(LINES, "keep200"))
    assert near(kept["n_malloc_mb"], 200, MALLOC_TOLERANCE), describe(kept)
    assert kept["n_python_fraction"] > MIN_PYTHON_FRACTION, describe(kept)
    native = mem_line(detail, marker(LINES, "ctypes"))
    assert near(native["n_malloc_mb"], 100, MALLOC_TOLERANCE), describe(native)
    assert native["n_python_fraction"] < MAX_NATIVE_PYTHON_FRACTION, describe(native)
    copy = mem_line(detail, marker(LINES, "copy500"))
    copied = copy["n_copy_mb_s"] * profile["elapsed_time_sec"]
    assert near(copied, 500, COPY_TOLERANCE), describe(copy)


def test_footprint_of_all_sections(mem_run, python_exe):
    """The peak footprint holds what the sections keep, and not much more."""
    _, profile, detail, truth = lines_run(mem_run, python_exe)
    low, high = (b / MB for b in truth["small_bytes"])
    kept = 200 + 100 + 10 + (200 if truth["numpy"] else 0)  # the copy's destination: 10
    # What `import numpy` allocates is up to its BLAS (70 MB of anonymous mappings here, which
    # tracemalloc does not see): taken from the profile's own line for it.
    numpy_import = mem_line(detail, marker(LINES, "numpy_import"))["n_malloc_mb"]
    got = profile["max_footprint_mb"]
    # Above it by at most: interpreter start-up and other imports, the copy's 10 MiB source,
    # the 16 MB list of sizes the small section makes afterwards, and 2% of rounding.
    assert 0.98 * (kept + low) <= got <= 1.02 * (kept + high) + numpy_import + 40, (
        f"max_footprint_mb {got:.1f}, kept {kept + low:.1f}-{kept + high:.1f} MB, numpy's "
        f"import {numpy_import:.1f} MB")
    assert profile["memory_sampling_window"] == MB, profile["memory_sampling_window"]
    # Every copy of the program: the copy line's 500 MB, the copy source's 10 MB (made by
    # doubling), numpy's import 6 MB (an LD_PRELOAD counter: 516 MB in the sections), and the
    # interpreter's own start-up copies (a few MB).
    # On a free-threaded build, the small section's two lists copy their items at each resize
    # (list_moves_mb).
    moves = 2 * list_moves_mb(python_exe)
    assert 500 + moves <= profile["copy_mb"] <= 540 + moves, (profile["copy_mb"], moves)
    assert profile["samples"], "no footprint timeline"
    assert profile["alloc_samples"] > 0
    assert profile["native_allocations_mb"] <= W_MB, (
        f"{profile['native_allocations_mb']:.2f} MB charged to <native>: this program has no "
        f"thread without a Python frame")


# ---- options ----------------------------------------------------------------------------------


def test_cpu_only_has_no_memory(mem_run, python_exe):
    _, profile, detail, _ = lines_run(mem_run, python_exe, ["keep200"], ["--cpu-only"])
    assert profile["memory"] is False
    for field in ("max_footprint_mb", "native_allocations_mb", "alloc_samples", "growth_rate"):
        assert profile[field] == 0, (field, profile[field])
    assert profile["samples"] == []
    for name, d in profile["files"].items():
        assert d["leaks"] == {}, (name, d["leaks"])
        for e in d["lines"] + d["functions"]:
            assert all(e.get(f, 0) == 0 for f in MEMORY_FIELDS), (name, e)
            assert e["memory_samples"] == [], (name, e)
    assert NATIVE not in profile["files"]
    # The scry additions are left out, so a CPU-only profile is what it was before memory.
    assert "memory_sampling_window" not in profile and "copy_mb" not in profile


def test_sampling_window_10mb(mem_run, python_exe):
    """With a 10 MiB window the kept 200 MiB are still right to within the window."""
    _, profile, detail, _ = lines_run(mem_run, python_exe, ["keep200"],
                                      ["--allocation-sampling-window", "10485760"])
    e = mem_line(detail, marker(LINES, "keep200"))
    assert profile["memory"] is True
    assert 200 - 10 <= e["n_malloc_mb"] <= 201 + 10, f"want 200 MB +-10 MB: {describe(e)}"
    assert e["n_python_fraction"] > MIN_PYTHON_FRACTION, describe(e)
    assert profile["memory_sampling_window"] == 10 * MB, profile["memory_sampling_window"]
    # The window is in effect: one sample per ten buffers, not one per buffer.
    assert 18 <= e["n_mallocs"] <= 21, f"want ~20 malloc samples: {describe(e)}"


def test_pythonmalloc_malloc(mem_run, python_exe):
    """PYTHONMALLOC=malloc (no pymalloc): same output, same numbers for the kept buffers."""
    if is_free_threaded(python_exe):
        pytest.skip("a free-threaded build refuses PYTHONMALLOC=malloc itself (its objects must "
                    "come from mimalloc): \"PYTHONMALLOC: unknown allocator\"")
    env = {"PYTHONMALLOC": "malloc"}
    plain = mem_run(python_exe, LINES, ["keep200"], env=env, plain=True)
    ran = mem_run(python_exe, LINES, ["keep200"], env=env)
    assert_same_behaviour(plain, ran)
    profile = load_memory_profile(ran)
    e = mem_line(detail_of(profile, LINES, ran), marker(LINES, "keep200"))
    assert near(e["n_malloc_mb"], 200, MALLOC_TOLERANCE), describe(e)
    assert 190 <= e["n_growth_mb"] <= 210, describe(e)
    assert e["n_python_fraction"] > MIN_PYTHON_FRACTION, describe(e)


# ---- leaks ------------------------------------------------------------------------------------


def leak_run(mem_run, python, section, options=()):
    ran = mem_run(python, LEAK, [section], options)
    # The output is known: the same as without scry (checked by hand, see mem_leak.py).
    want = {"leak": "leak: 80 buffers, 419430400 bytes held\n",
            "noleak": "noleak: 90 MiB held, last buffer 15597568 bytes\n",
            "noleak_del": "noleak_del: 90 MiB held, last buffer 15597568 bytes\n",
            "early_table": "early_table: 250 MiB held\n",
            "table_to_end": "table_to_end: 250 MiB held\n"}[section]
    assert (ran.returncode, ran.stdout.decode(), ran.stderr) == (0, want, b""), ran.describe()
    profile = load_memory_profile(ran)
    return profile, detail_of(profile, LEAK, ran)


@pytest.mark.parametrize("options", [[], ["--memory-leak-detector"]], ids=["default", "option"])
def test_leaking_loop_is_flagged(mem_run, python_exe, options):
    """Flagged with the detector on, as it is by default and with its option."""
    profile, detail = leak_run(mem_run, python_exe, "leak", options)
    lineno = marker(LEAK, "leak")
    e = mem_line(detail, lineno)
    assert near(e["n_malloc_mb"], 400, MALLOC_TOLERANCE), describe(e)
    assert near(e["n_growth_mb"], 400, MALLOC_TOLERANCE), f"all of it is kept: {describe(e)}"
    assert profile["growth_rate"] >= 1, profile["growth_rate"]
    leak = detail["leaks"].get(str(lineno))
    assert leak is not None, (f"line {lineno} (80 x 5 MiB kept) is not in leaks: "
                              f"{detail['leaks']}; {describe(e)}")
    # Rule of succession over ~60 new peaks past 100 MiB, none freed: about 0.98.
    assert leak["likelihood"] >= MIN_LEAK_LIKELIHOOD, leak
    assert leak["velocity_mb_s"] > 0, leak
    assert set(detail["leaks"]) == {str(lineno)}, f"other lines flagged: {detail['leaks']}"


@pytest.mark.parametrize("section", ["noleak", "noleak_del"])
def test_loop_that_frees_is_not_flagged(mem_run, python_exe, section):
    profile, detail = leak_run(mem_run, python_exe, section)
    e = mem_line(detail, marker(LEAK, section))
    # The test means something only if the detector had every reason to look at the loop:
    # it allocated what it did (5 to 15 MiB, 795 MiB in all), past 100 MB of footprint, and
    # the program grew (90 MB held) by more than the 1% at which leaks are reported.
    assert near(e["n_malloc_mb"], 795, MALLOC_TOLERANCE), describe(e)
    assert profile["max_footprint_mb"] > 100 and profile["growth_rate"] >= 1, (
        profile["max_footprint_mb"], profile["growth_rate"])
    # What the loop's line keeps: at most its last buffer (14.9 MB; the function's return
    # frees it, on another line), whichever line the frees happen on (noleak_del: the del's).
    assert e["n_growth_mb"] <= 15.6, f"{section}: the loop frees what it allocates: {describe(e)}"
    base = mem_line(detail, marker(LEAK, f"{section}_base"))
    assert near(base["n_growth_mb"], 90, MALLOC_TOLERANCE), f"90 MiB kept: {describe(base)}"
    assert detail["leaks"] == {}, f"{section}: flagged {detail['leaks']}; {describe(e)}"


def test_table_built_early_and_kept_is_not_flagged(mem_run, python_exe):
    """Growth over the whole run: a global table built in the first sixth of the run and kept
    while the program runs on is no leak, although its ~30 unfreed new peaks pass Scalene's
    0.95 (table_to_end, the same table at the end of the run, shows that they do)."""
    profile, detail = leak_run(mem_run, python_exe, "early_table")
    lineno = marker(LEAK, "early_table")
    e = mem_line(detail, lineno)
    assert near(e["n_growth_mb"], 250, MALLOC_TOLERANCE), f"all of it is kept: {describe(e)}"
    assert profile["max_footprint_mb"] > 100 and profile["growth_rate"] >= 1, (
        profile["max_footprint_mb"], profile["growth_rate"])
    # The line's growth stopped early: its last memory sample in the first quarter of the run.
    last = max(p[0] for p in e["memory_samples"])
    assert last < 0.25 * profile["elapsed_time_sec"] * 1e9, (last, profile["elapsed_time_sec"])
    assert detail["leaks"] == {}, f"flagged {detail['leaks']}; {describe(e)}"


def test_table_growing_until_the_end_is_flagged(mem_run, python_exe):
    profile, detail = leak_run(mem_run, python_exe, "table_to_end")
    lineno = marker(LEAK, "early_table")
    e = mem_line(detail, lineno)
    assert near(e["n_growth_mb"], 250, MALLOC_TOLERANCE), describe(e)
    leak = detail["leaks"].get(str(lineno))
    assert leak is not None and leak["likelihood"] >= MIN_LEAK_LIKELIHOOD, (
        f"line {lineno} grows until the end: {detail['leaks']}; {describe(e)}")


def test_steady_leak_beside_a_trimmed_cache(mem_run, python_exe):
    """Issue 27 item 1: the history line leaks 20 KiB a request until the end and is reported
    although the cache line beside it sets the process's new peaks; the cache, trimmed back
    every 250 requests (100 responses, 20 MiB, still cached at exit), is not."""
    ran = mem_run(python_exe, CACHE_LEAK)
    want = "cache_leak: 4100 requests, 100 cached, 83968000 bytes of history\n"
    assert (ran.returncode, ran.stdout.decode(), ran.stderr) == (0, want, b""), ran.describe()
    profile = load_memory_profile(ran)
    detail = detail_of(profile, CACHE_LEAK, ran)
    history, cache = marker(CACHE_LEAK, "history"), marker(CACHE_LEAK, "cache")
    e = mem_line(detail, history)
    # The rule had something to see: the history kept tens of MB, the cache allocated ~800 MB.
    assert e["n_growth_mb"] >= 40, describe(e)
    assert mem_line(detail, cache)["n_malloc_mb"] >= 400, describe(mem_line(detail, cache))
    leak = detail["leaks"].get(str(history))
    assert leak is not None, f"line {history} (history) is not in leaks: {detail['leaks']}"
    assert leak["likelihood"] >= MIN_LEAK_LIKELIHOOD and leak["velocity_mb_s"] > 0, leak
    assert str(cache) not in detail["leaks"], f"the trimmed cache is flagged: {detail['leaks']}"
    assert set(detail["leaks"]) == {str(history)}, f"other lines flagged: {detail['leaks']}"


def test_most_held_at_once_over_trims(mem_run, python_exe):
    """Issue 27 item 8: the cache line's most held at once is its 64 MiB before the trim (within
    a few windows), while its n_peak_mb (one execution's net, Scalene's meaning) is a few
    windows at most; the function shows it too, and so do the text view and the page's profile."""
    ran = mem_run(python_exe, CACHE_TRIM)
    want = "cache_trim: 67108864 bytes at the top, 33554432 bytes held at the end\n"
    assert (ran.returncode, ran.stdout.decode(), ran.stderr) == (0, want, b""), ran.describe()
    profile = load_memory_profile(ran)
    detail = detail_of(profile, CACHE_TRIM, ran)
    fill = marker(CACHE_TRIM, "fill")
    e = mem_line(detail, fill)
    assert "n_max_held_mb" in e, describe(e)
    held = e["n_max_held_mb"]
    # The line allocates 96 MiB in 2 MiB blocks, each sampled at its size. Rarely a few of its
    # samples come without a stack (issue 27 item 11, cause open) and miss the line: what it
    # missed (at most 4 blocks) lowers what it can have held.
    missed = 96 - e["n_malloc_mb"]
    assert -W_MB <= missed <= 8 + W_MB, describe(e)
    assert near(held, 64, abs_=4 * W_MB + max(missed, 0)), (held, describe(e))
    assert e["n_peak_mb"] <= held / 4, (held, describe(e))
    fn = next(f for f in detail["functions"] if f["line"] == "fill")
    assert fn["n_max_held_mb"] == held, fn  # its one line that holds anything
    cp = subprocess.run([str(SCRY), "view", "--cli", "--no-color", str(ran.profile_path)],
                        capture_output=True, text=True)
    assert cp.returncode == 0, cp.stderr
    assert " peak │   held │ timeline/%" in cp.stdout, cp.stdout
    row = next(x for x in cp.stdout.splitlines() if x.startswith(f"{fill:6d} │"))
    cells = [c.strip() for c in row.split("│")]
    assert cells[7] == f"{held:.0f}M", (row, held)  # Line, 3 times, Python, net, peak, held
    page = ran.profile_path.parent / "page.html"
    cp = subprocess.run([str(SCRY), "view", "--standalone", "-o", str(page),
                         str(ran.profile_path)], capture_output=True, text=True)
    assert cp.returncode == 0, cp.stderr
    html = page.read_text()
    m = re.search(r'<script type="application/json" id="scry-profile">(.*?)</script>', html, re.S)
    assert m, "no profile block in the page"
    embedded = detail_of(json.loads(m.group(1)), CACHE_TRIM, ran)
    assert mem_line(embedded, fill)["n_max_held_mb"] == held


def test_footprint_spans_the_whole_run(mem_run, python_exe):
    """The footprint timeline (and the terminal's sparkline) runs to the end of the program,
    not to its last memory sample: early_table holds 250 MiB from its first sixth to its end."""
    profile, _ = leak_run(mem_run, python_exe, "early_table")
    ran = mem_run(python_exe, LEAK, ["early_table"])  # the same run (cached)
    samples = profile["samples"]
    end_ns = profile["elapsed_time_sec"] * 1e9
    assert samples and abs(samples[-1][0] - end_ns) <= 0.01 * end_ns, (samples[-3:], end_ns)
    assert near(samples[-1][1], 250, 0.05), samples[-3:]  # still held at the end
    # The view's 27 bars cover the run's time: the full table shows from its first sixth on, so
    # at least 20 bars are full (bars by point would draw the growth across all of them).
    cp = subprocess.run([str(SCRY), "view", "--cli", "--no-color", str(ran.profile_path)],
                        capture_output=True, text=True)
    assert cp.returncode == 0, cp.stderr
    line = next(x for x in cp.stdout.splitlines() if x.startswith("Memory usage: "))
    bars = line[len("Memory usage: "):].split(" ")[0]
    assert len(bars) == 27 and bars.count("█") >= 20, line


def test_leak_detector_off(mem_run, python_exe):
    profile, _ = leak_run(mem_run, python_exe, "leak", ["--no-memory-leak-detector"])
    assert profile["memory"] is True
    for name, d in profile["files"].items():
        assert d["leaks"] == {}, (name, d["leaks"])


# ---- threads without Python, many threads, children -------------------------------------------


@pytest.fixture(scope="session")
def native_thread_lib(tmp_path_factory):
    """tests/targets/native_alloc_thread.c built into a shared library (needs gcc)."""
    gcc = shutil.which("gcc") or shutil.which("cc")
    if not gcc:
        pytest.skip("gcc is not installed: it builds tests/targets/native_alloc_thread.c "
                    "(apt-get install gcc)")
    out = tmp_path_factory.mktemp("native") / "native_alloc_thread.so"
    cp = subprocess.run([gcc, "-O1", "-shared", "-fPIC", "-pthread", "-o", str(out),
                         str(TARGETS / "native_alloc_thread.c")],
                        capture_output=True, text=True, timeout=120)
    assert cp.returncode == 0, f"building {out} failed:\n{cp.stderr}"
    return out


def test_raw_pthread_allocations_are_native(mem_run, python_exe, native_thread_lib):
    args = [str(native_thread_lib)]
    ran = mem_run(python_exe, NATIVE_THREAD, args)
    assert_same_behaviour(mem_run(python_exe, NATIVE_THREAD, args, plain=True), ran)
    profile = load_memory_profile(ran)
    got = profile["native_allocations_mb"]
    # 64 blocks of 1 MiB; the thread ends with less than the window unsampled (-1 MB), and the
    # C library rounds each block up to its page (+0.4%): 10% is the allowance.
    assert near(got, 64, 0.10), f"native_allocations_mb {got:.2f}, want 64 +-10%"
    assert NATIVE in profile["files"], f"no {NATIVE} file: {list(profile['files'])}"
    native = profile["files"][NATIVE]
    total = sum(e.get("n_malloc_mb", 0) for e in native["lines"])
    assert near(total, got, 0.001, 0.01), (f"{NATIVE}'s lines have {total:.2f} MB, "
                                           f"native_allocations_mb {got:.2f}")
    assert all(e["lineno"] == 0 for e in native["lines"]), native["lines"]
    # The thread's memory is not charged to the line that started it (the line itself
    # allocates next to nothing; 8 MB would be the thread's stack, if it were counted). The
    # program runs ~40 ms, mostly waiting: on a loaded machine the collector may take no sample
    # of it and no allocation sample may fall on its lines; then the file is not in the profile,
    # which means that nothing was charged to it (seen in a CI run: 0 samples over 0.040 s).
    detail = file_detail(profile, NATIVE_THREAD)
    if detail is not None:
        e = mem_line(detail, marker(NATIVE_THREAD, "native_call"))
        assert e["n_malloc_mb"] < 16, describe(e)


def test_stress_16_threads(mem_run, python_exe):
    ran = mem_run(python_exe, STRESS)
    assert_same_behaviour(mem_run(python_exe, STRESS, plain=True), ran)
    assert ran.returncode == 5, ran.describe()
    profile = load_memory_profile(ran)
    assert profile["memory"] is True and profile["alloc_samples"] > 0
    # Sane: objects of 1-4 MiB are made, and at most 16 threads x 33 objects of at most 4 MiB
    # (plus the interpreter and numpy) are alive at once.
    assert 1 <= profile["max_footprint_mb"] <= 16 * 33 * 4 + 100, profile["max_footprint_mb"]
    detail = detail_of(profile, STRESS, ran)
    assert sum(e["n_malloc_mb"] for e in detail["lines"]) > 0


def test_many_short_threads(mem_run, python_exe):
    """1000 threads of a few ms each allocate 2 MiB apiece: every byte is in the profile (a
    sample that waited for a queue slot or a scratch buffer is not lost with its thread)."""
    ran = mem_run(python_exe, THREADS)
    assert_same_behaviour(mem_run(python_exe, THREADS, plain=True), ran)
    profile = load_memory_profile(ran)
    e = mem_line(detail_of(profile, THREADS, ran), marker(THREADS, "thread"))
    # 2000 MiB requested; malloc's usable size adds a page per 1 MiB block (0.4%): 2%.
    assert near(e["n_malloc_mb"], 2000, MALLOC_TOLERANCE), describe(e)
    assert 1900 <= e["n_mallocs"] <= 2010, f"want a sample per buffer: {describe(e)}"


def test_huge_allocations(mem_run, python_exe):
    """A 4 GiB anonymous mapping is counted when mapped and when unmapped (the mmap/munmap
    hooks) as the line's allocation, and in the footprint only for the page it touches (issue
    10: reserved address space is not memory); a 2**60-byte request that fails counts nothing
    and the program still sees its MemoryError."""
    ran = mem_run(python_exe, HUGE)
    assert_same_behaviour(mem_run(python_exe, HUGE, plain=True), ran)
    assert ran.returncode == 4, ran.describe()
    profile = load_memory_profile(ran)
    detail = detail_of(profile, HUGE, ran)
    mapped = mem_line(detail, marker(HUGE, "map"))
    unmapped = mem_line(detail, marker(HUGE, "unmap"))
    failed = mem_line(detail, marker(HUGE, "fail"))
    # Exact to the window: the mapping is one 4096 MiB allocation.
    assert near(mapped["n_malloc_mb"], 4096, 0, W_MB), describe(mapped)
    assert mapped["n_python_fraction"] < MAX_NATIVE_PYTHON_FRACTION, describe(mapped)
    assert near(unmapped["n_free_mb"], 4096, 0, W_MB), describe(unmapped)
    assert failed["n_malloc_mb"] <= W_MB, describe(failed)
    # The interpreter's start-up and the program's objects (a few MB), not the mapping's 4 GiB.
    assert profile["max_footprint_mb"] <= 100, profile["max_footprint_mb"]


def test_mapping_costs_its_resident_pages(mem_run, python_exe):
    """A 256 MiB mapping of which 96 MiB are touched: 256 MiB allocated on its line, 96 MiB in
    the footprint (what the process's RSS grew, +-2%)."""
    ran = mem_run(python_exe, TARGETS / "mem_mapped.py")
    assert ran.returncode == 0, ran.describe()
    rss_growth = json.loads(ran.stdout.decode().splitlines()[-1])["rss_growth"] / MB
    profile = load_memory_profile(ran)
    e = mem_line(detail_of(profile, TARGETS / "mem_mapped.py", ran),
                 marker(TARGETS / "mem_mapped.py", "map"))
    assert near(e["n_malloc_mb"], 256, 0, W_MB), describe(e)
    assert e["n_python_fraction"] < MAX_NATIVE_PYTHON_FRACTION, describe(e)
    base = mem_run(python_exe, NUMPY_IMPORT, ["none"])  # the interpreter alone
    added = profile["max_footprint_mb"] - load_memory_profile(base)["max_footprint_mb"]
    assert near(rss_growth, 96, 0.02), f"the target's RSS grew {rss_growth:.1f} MB"
    assert near(added, 96, MALLOC_TOLERANCE, W_MB), (
        f"the mapping added {added:.1f} MB to the footprint, 96 MiB of it is resident")


def test_readme_footprint_example(mem_run, python_exe, tmp_path):
    """README.md's "Footprint and memray's peak" example, run as written there: its mapping's
    line allocated 256 MiB and kept 16 (resident), the footprint grew by the 16 MiB written and
    the 64 MiB bytearray, not by the 256 MiB mapped (which memray's peak counts, as it says)."""
    readme = (Path(SCRY).resolve().parents[1] / "README.md").read_text()
    section = readme.split("### Footprint and memray's peak", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    example = tmp_path / "footprint_example.py"
    example.write_text(code)
    ran = mem_run(python_exe, example)
    assert ran.returncode == 0 and ran.stdout.decode() == "done\n", ran.describe()
    profile = load_memory_profile(ran)
    detail = detail_of(profile, example, ran)
    lines = code.splitlines()
    mapping = mem_line(detail, 1 + next(i for i, t in enumerate(lines) if "mmap.mmap(" in t))
    held = mem_line(detail, 1 + next(i for i, t in enumerate(lines) if "bytearray(" in t))
    assert near(mapping["n_malloc_mb"], 256, 0, W_MB), describe(mapping)
    assert near(mapping["n_growth_mb"], 16, MALLOC_TOLERANCE, W_MB), describe(mapping)
    assert near(held["n_malloc_mb"], 64, MALLOC_TOLERANCE, W_MB), describe(held)
    base = mem_run(python_exe, NUMPY_IMPORT, ["none"])  # the interpreter alone
    added = profile["max_footprint_mb"] - load_memory_profile(base)["max_footprint_mb"]
    assert near(added, 16 + 64, MALLOC_TOLERANCE, 2 * W_MB), (
        f"the example added {added:.1f} MB to the footprint: 16 MiB resident + 64 MiB held")


def test_fork_child_memory(mem_run, python_exe):
    ran = mem_run(python_exe, CHILDREN, ["fork"])
    assert_same_behaviour(mem_run(python_exe, CHILDREN, ["fork"], plain=True), ran)
    profile = load_memory_profile(ran)
    assert profile["memory"] is True and profile["processes"] >= 2, profile["processes"]
    detail = detail_of(profile, CHILDREN, ran)
    parent = mem_line(detail, marker(CHILDREN, "parent_alloc"))
    child = mem_line(detail, marker(CHILDREN, "fork_child_alloc"))
    # 20 and 40 buffers of 1 MiB: 2%, or the window (a child inherits its parent's counters).
    assert near(parent["n_malloc_mb"], 20, MALLOC_TOLERANCE, W_MB), describe(parent)
    assert near(child["n_malloc_mb"], 40, MALLOC_TOLERANCE, W_MB), (
        f"the forked child's line (it ends with os._exit): {describe(child)}")
    # At most both processes' memory, with each one's start-up.
    assert 40 <= profile["max_footprint_mb"] <= 60 + 40, profile["max_footprint_mb"]


def test_spawn_children_memory(mem_run, python_exe):
    ran = mem_run(python_exe, CHILDREN, ["spawn"])
    assert_same_behaviour(mem_run(python_exe, CHILDREN, ["spawn"], plain=True), ran)
    profile = load_memory_profile(ran)
    assert profile["memory"] is True and profile["processes"] >= 3, profile["processes"]
    e = mem_line(detail_of(profile, CHILDREN, ran), marker(CHILDREN, "spawn_child_alloc"))
    # Two children, 30 buffers of 1 MiB each: 2%, plus a window per child.
    assert near(e["n_malloc_mb"], 60, MALLOC_TOLERANCE, 2 * W_MB), describe(e)
    assert e["n_python_fraction"] > MIN_PYTHON_FRACTION, describe(e)


@pytest.mark.parametrize("value", ["0", "-5", "abc", "1e6", ""])
def test_bad_sampling_window_is_a_usage_error(value, tmp_path):
    """A window that is not a positive byte count is refused before anything runs."""
    marker_file = tmp_path / "ran"
    script = tmp_path / "prog.py"
    script.write_text(f"open({str(marker_file)!r}, 'w').close()\n")
    cp = subprocess.run([str(SCRY), "run", "--allocation-sampling-window", value, str(script)],
                        capture_output=True, text=True, timeout=60)
    assert cp.returncode == 2, (cp.returncode, cp.stderr)
    assert "[usage]" in cp.stderr and "--allocation-sampling-window" in cp.stderr, cp.stderr
    assert not marker_file.exists(), "the program ran despite the bad option"


# ---- lines of one loop (issue 10, item 2) -----------------------------------------------------

LOOPS = TARGETS / "mem_loops.py"
# Every byte has the same chance to be sampled, so a line's estimate has a relative standard
# error of about 1/sqrt(its samples). A 64 KiB window gives the loops' lines 2,300-5,500 samples
# each (1.4-2%; seen under load: up to twice that, samples that wait for a queue slot going with
# the thread's next one): the 10% between two lines is then several standard errors, and
# a real bias (the fixed threshold gave one line of a pair everything) is far beyond it.
LOOP_WINDOW = ["--allocation-sampling-window", "65536"]
LOOP_TOLERANCE = 0.10  # the "within 10% of each other and of the truth"
LOOP_SHAPES = ["one", "two", "three", "two_temp", "two_large"]


def loop_profile(mem_run, python, shape):
    ran = mem_run(python, LOOPS, [shape], LOOP_WINDOW)
    assert ran.returncode == 0, ran.describe()
    truth = json.loads(ran.stdout.decode().splitlines()[-1])
    profile = load_memory_profile(ran)
    return profile, detail_of(profile, LOOPS, ran), truth


def memray_kept(python, shape, tmp_path):
    """memray's exact bytes still allocated at the end per line of mem_loops.py (every Python
    allocation traced), or None where memray is not installed for that interpreter."""
    probe = subprocess.run([python, "-c", "import memray"], capture_output=True, timeout=60)
    if probe.returncode != 0:
        return None
    out = tmp_path / f"memray-{shape}.bin"
    cp = subprocess.run([python, "-m", "memray", "run", "--trace-python-allocators", "-q", "-o",
                         str(out), str(LOOPS), shape], capture_output=True, text=True,
                        timeout=600)
    assert cp.returncode == 0, cp.stderr
    reader = ("import collections, json, sys, memray\n"
              "kept = collections.Counter()\n"
              "for r in memray.FileReader(sys.argv[1]).get_leaked_allocation_records("
              "merge_threads=True):\n"
              "    top = r.stack_trace(1)\n"
              "    if top and top[0][1].endswith('mem_loops.py'):\n"
              "        kept[top[0][2]] += r.size\n"
              "print(json.dumps(kept))\n")
    cp = subprocess.run([python, "-c", reader, str(out)], capture_output=True, text=True,
                        timeout=600)
    assert cp.returncode == 0, cp.stderr
    return {int(k): v for k, v in json.loads(cp.stdout).items()}


@pytest.mark.parametrize("shape", LOOP_SHAPES)
def test_loop_lines_get_their_own_bytes(mem_run, python_exe, shape, tmp_path):
    """Lines of one loop are charged what they allocate and keep, each within 10% of the truth
    (tracemalloc's per-iteration bytes, checked against sys.getsizeof, and memray's exact
    totals where memray installs) and of each other when they keep the same."""
    profile, detail, truth = loop_profile(mem_run, python_exe, shape)
    got = {}
    for name, want in truth["lines"].items():
        e = mem_line(detail, marker(LOOPS, name))
        where = f"{shape}/{name}: {describe(e)}; truth {want['alloc'] / MB:.1f} MB allocated, " \
                f"{want['kept'] / MB:.1f} MB kept"
        assert near(e["n_malloc_mb"], want["alloc"] / MB, LOOP_TOLERANCE), where
        assert near(e["n_growth_mb"], want["kept"] / MB, LOOP_TOLERANCE), where
        # bytes objects come from Python's allocator.
        assert e["n_python_fraction"] > MIN_PYTHON_FRACTION, where
        got[name] = e["n_growth_mb"]
    # Every line keeps the same bytes per iteration: charged the same, to within 10%.
    assert max(got.values()) <= (1 + LOOP_TOLERANCE) * min(got.values()), got
    kept = memray_kept(python_exe, shape, tmp_path)
    if kept is None:
        pytest.skip(f"memray is not installed for {python_exe} (checked against tracemalloc)")
    for name, want in truth["lines"].items():
        exact = kept.get(marker(LOOPS, name), 0)
        # The oracle and the interpreter's own truth agree (memray rounds nothing).
        assert near(exact, want["kept"], 0.01), (name, exact, want["kept"])
        assert near(got[name], exact / MB, LOOP_TOLERANCE), (name, got[name], exact / MB)


# ---- reserved address space (issue 10, item 3) ------------------------------------------------

NUMPY_IMPORT = TARGETS / "mem_numpy_import.py"
RSS_ALLOWANCE = 0.10  # the "no more than its RSS growth plus 10%"


def test_numpy_import_costs_what_is_resident(mem_run, python_exe):
    """`import numpy` maps its BLAS threads' buffers (tens of MiB it never touches): the footprint
    grows by what became resident, never more than the process's RSS grew (+10%), and never ends
    above the peak RSS (issue 10: 72 MB for 25 MB of RSS, 551 MiB of footprint for 484 of peak)."""
    plain = mem_run(python_exe, NUMPY_IMPORT, ["numpy"], plain=True)
    truth = json.loads(plain.stdout.decode().splitlines()[-1])
    if not truth["numpy"]:
        pytest.skip(f"numpy is not installed for {python_exe}")
    ran = mem_run(python_exe, NUMPY_IMPORT, ["numpy"])
    base = mem_run(python_exe, NUMPY_IMPORT, ["none"])
    assert ran.returncode == 0 and base.returncode == 0, (ran.describe(), base.describe())
    profiled = json.loads(ran.stdout.decode().splitlines()[-1])
    profile, baseline = load_memory_profile(ran), load_memory_profile(base)
    added = profile["max_footprint_mb"] - baseline["max_footprint_mb"]
    rss_growth = (truth["rss_after"] - truth["rss_before"]) / MB
    assert added <= (1 + RSS_ALLOWANCE) * rss_growth, (
        f"import numpy added {added:.1f} MB to the footprint, its RSS grew {rss_growth:.1f} MB")
    # The import is seen: numpy's own allocations are in the footprint.
    assert added >= 1, f"import numpy added {added:.2f} MB to the footprint"
    hwm = profiled["hwm"] / MB
    assert profile["max_footprint_mb"] <= hwm, (
        f"max_footprint_mb {profile['max_footprint_mb']:.1f} above the peak RSS {hwm:.1f} MB")
    # The line that mapped the buffers is still charged the address space it allocated.
    e = mem_line(detail_of(profile, NUMPY_IMPORT, ran), marker(NUMPY_IMPORT, "import_numpy"))
    assert e["n_malloc_mb"] >= added, describe(e)
