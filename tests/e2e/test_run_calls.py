"""End-to-end tests of `scry run`'s Python / native split on lines that call small Python
functions (issue 10, item 8), on every installed Python 3.11-3.13.

The ground truth is tests/targets/run_py_calls.py: loops whose marked lines call Python functions
and nothing written in C (`n += f(n)` and its variants), so all of their time is Python time:
the call's frame set-up and return included. The calls into C of run_cpu_split.py (sorted, zlib,
sha256) stay native: tests/e2e/test_run_cpu.py checks them.

Run with --use-virtual-time (CPU time only, so that a loaded machine's waiting does not dilute
the split) at the kernel's tick rate (~250 samples a second, ~250 per section).
"""

import json

import pytest

from conftest import (TARGETS, describe_entry, file_detail, is_free_threaded, line_entry,
                      load_profile, run_profiled, split_of)

FREE_THREADED = True  # conftest: python_exe includes 3.13t
import importlib.util

_spec = importlib.util.spec_from_file_location("groundtruth", TARGETS / "groundtruth.py")
groundtruth = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(groundtruth)

TARGET = TARGETS / "run_py_calls.py"
MARKERS = groundtruth.marker_lines(TARGET)
MIN_PYTHON = 0.95  # the bar for calls of small Python functions
MIN_SAMPLES = 50  # ~100-250 at the tick rate; 50 still shows a 17% native share as ~8 samples
# Calls the interpreter specialises into a Python-function call on every version here (their
# frame set-up is the specialised instruction's own work), and, on 3.13, keywords-free *args
# calls (CALL_PY_GENERAL) and classes with a Python __init__ (CALL_ALLOC_AND_ENTER_INIT).
SPECIALISED = ["plain", "defaults", "method"]
# Unspecialised on 3.11/3.12 (keyword arguments; *args): measured 95-98% Python (the eval loop's
# own code on a call instruction is Python time); a bar with room for sampling noise at ~120
# samples, still far above what the old rule gave (49-72%).
GENERIC_MIN_PYTHON = 0.90
FREE_THREADED_MIN_PYTHON = 0.85  # 3.13t: no specialisation, and load-sensitive (below)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    cache = {}

    def run(python):
        if python not in cache:
            out = tmp_path_factory.mktemp("calls") / "profile.json"
            ran = run_profiled(python, "run_py_calls.py", outfile=out,
                               options=("--use-virtual-time", "--cpu-sampling-rate", "0.002"))
            assert ran.returncode == 0, ran.describe()
            profile = load_profile(ran)
            detail = file_detail(profile, TARGET)
            assert detail is not None, (list(profile["files"]), ran.describe())
            cache[python] = detail
        return cache[python]

    return run


def python_share(detail, section):
    entry = line_entry(detail, MARKERS[section][0])
    python, native, system = split_of(entry)
    assert entry["n_samples"] >= MIN_SAMPLES, f"{section}: {describe_entry(entry)}"
    assert system == 0, f"{section}: system time with --use-virtual-time: {describe_entry(entry)}"
    return python, entry


@pytest.mark.parametrize("section", SPECIALISED)
def test_calls_of_python_functions_are_python(runs, python_exe, section):
    python, entry = python_share(runs(python_exe), section)
    # The free-threaded 3.13 does not specialise (dis.get_instructions(adaptive=True) shows a
    # plain CALL there): every call takes the generic path. Measured 95.7-99.2% on a quiet
    # machine, but 94.3% and 88.9% in full runs under load (which C code takes the rest there is
    # not pinned down): its bar is 85%, still far above what the old rule gave (49-72%).
    want = FREE_THREADED_MIN_PYTHON if is_free_threaded(python_exe) else MIN_PYTHON
    assert python >= want, (
        f"{section}: a line that only calls a small Python function is {python:.1%} Python, "
        f"want >= {want:.0%}; {describe_entry(entry)}")


@pytest.mark.parametrize("section", ["keywords", "varargs"])
def test_unspecialised_calls_are_mostly_python(runs, python_exe, section):
    python, entry = python_share(runs(python_exe), section)
    want = FREE_THREADED_MIN_PYTHON if is_free_threaded(python_exe) else GENERIC_MIN_PYTHON
    assert python >= want, (
        f"{section}: {python:.1%} Python, want >= {want:.0%}; {describe_entry(entry)}")
