"""Operators from outside (issue 27 item 3): `c = a @ b` on numpy arrays is numpy's C code,
run by the eval loop's BINARY_OP with no call on the stack; `scry record --pid` and `scry top`
must call it native, as `scry run` does, while a pure-Python operator (`x = x + 1` on ints, a
class whose `@` is a Python method) stays Python.

The target (tests/targets/record_operators.py) spends about a third of its CPU time on each; its
truth is what each line does, so the shares are checked per line (>= 70% of the line's on-CPU
time is its own kind; waiting for a CPU, the load's part, is left out), not against a clock.
Run on every installed interpreter with numpy (skipped without)."""

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from conftest import (TARGETS, check_profile, describe_entry, file_detail, line_entry,
                      preferred_python, run_scry)
from test_top import parse_screen, row_named

TARGET = TARGETS / "record_operators.py"
FREE_THREADED = True  # the sampler reads 3.13t too


def on_cpu_split(entry):
    """(python, native) as fractions of the entry's on-CPU time. What the line does decides this
    split; its system share is the time it waited for a CPU (state R, off the CPU), which the
    machine's load decides."""
    py, nat = entry["n_cpu_percent_python"], entry["n_cpu_percent_c"]
    return (py / (py + nat), nat / (py + nat)) if py + nat > 0 else (0.0, 0.0)


def top_python_share(row):
    """A top row's Python share of its on-CPU time (the same reason)."""
    cpu = row["Py%"] + row["Nat%"]
    return row["Py%"] / cpu if cpu > 0 else 0.0


def numpy_or_skip(python):
    if subprocess.run([str(python), "-c", "import numpy"], capture_output=True).returncode:
        pytest.skip(f"numpy is not installed for {python} (scripts/install-deps.sh packages)")


@pytest.fixture
def operators_target(tmp_path):
    started = []

    def start(python):
        numpy_or_skip(python)
        stop = tmp_path / f"stop-{time.monotonic_ns()}"
        # One BLAS thread: the product runs on the sampled thread (not in a pool it waits on).
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
                   MKL_NUM_THREADS="1")
        proc = subprocess.Popen([str(python), str(TARGET), "60", str(stop)], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        started.append((proc, stop))
        line = proc.stdout.readline()
        assert line, f"the target printed nothing; stderr:\n{proc.stderr.read()}"
        ready = json.loads(line)
        assert ready["pid"] == proc.pid
        return proc, ready

    yield start
    for proc, stop in started:
        stop.touch()
        try:
            proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()


def test_record_calls_a_c_types_operator_native(python_exe, operators_target, tmp_path):
    proc, ready = operators_target(python_exe)
    out = tmp_path / "rec.json"
    cp = run_scry(["record", "--pid", proc.pid, "--duration", "3", "-o", out], timeout=60)
    assert cp.returncode == 0, cp.stderr
    profile = json.loads(Path(out).read_text())
    check_profile(profile)
    detail = file_detail(profile, TARGET)
    assert detail is not None, sorted(profile["files"])
    lines = {name: line_entry(detail, n) for name, n in ready["lines"].items()}
    # The `@` line of the Python operator is mostly the call through the slot, a small part of
    # that third: it is counted with its method's loop, as the share below is.
    for name in ("matmul", "intadd", "pybody"):
        assert lines[name]["n_samples"] >= 5, f"{name}: {describe_entry(lines[name])}"
    matmul = lines["matmul"]
    assert on_cpu_split(matmul)[1] >= 0.70, f"numpy's a @ b: {describe_entry(matmul)}"
    intadd = lines["intadd"]
    assert on_cpu_split(intadd)[0] >= 0.70, f"x = x + 1: {describe_entry(intadd)}"
    # A class's Python __matmul__: the `@` line (the slot wrapper, the call) and the method's.
    py = sum(lines[n]["n_cpu_percent_python"] for n in ("pymatmul", "pybody"))
    total = sum(lines[n]["n_cpu_percent_python"] + lines[n]["n_cpu_percent_c"]
                for n in ("pymatmul", "pybody"))
    assert py >= 0.70 * total, (f"Python __matmul__: {describe_entry(lines['pymatmul'])}; "
                                f"{describe_entry(lines['pybody'])}")


def test_top_calls_a_c_types_operator_native(operators_target):
    proc, _ = operators_target(preferred_python())
    env = dict(os.environ, COLUMNS="120", LINES="40")
    cp = run_scry(["top", "--pid", proc.pid, "--once", "--duration", "2.5"], timeout=30, env=env)
    assert cp.returncode == 0, cp.stderr
    _, _, rows = parse_screen(cp.stdout)
    assert top_python_share(row_named(rows, "matmul_part")) <= 0.30, rows
    for name in ("intadd_part", "pymatmul_part", "Vec.__matmul__"):
        assert top_python_share(row_named(rows, name)) >= 0.70, (name, rows)
