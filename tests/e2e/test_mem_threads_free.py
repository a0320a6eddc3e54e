"""End-to-end tests of `scry run`'s memory profile when memory is allocated in one thread and freed
in another: a pool of worker threads (concurrent.futures), numpy's temporaries, buffers mapped per
thread as OpenBLAS maps them. Ground truth: tests/targets/mem_threads_free.py (its docstring says
what each `# @name` line allocates and keeps).

What must hold, whichever thread frees a block:
- a line keeps (n_growth_mb) only what it allocated and is still there: blocks made by workers
  and freed by the main thread (or the reverse), temporaries, bytearrays grown by realloc
  (several samples of one block) keep nothing; kept blocks are kept in full;
- a mapping is kept by what it costs, its resident pages, as the footprint counts it, not its
  length (OpenBLAS's 32 MiB per-thread buffers, of which it touches a few MiB, made a pool's
  matmul line "keep" 129 MB in a process whose footprint peaked at 83 MB);
- no line keeps more than the footprint's peak, and all lines together neither;
- a line's peak is what it held at once: the temporaries of the workers running it.

MB means MiB. W: the sampling window (1 MiB); blocks of W or more are counted at their size, so
the truths below are exact up to a window per thread, and a few MiB of the interpreter's own.
"""

import importlib.util
import json

import pytest

from conftest import TARGETS, file_detail, line_entry, load_profile, run_profiled

_spec = importlib.util.spec_from_file_location("groundtruth", TARGETS / "groundtruth.py")
groundtruth = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(groundtruth)

# Also on the free-threaded 3.13t: Python's allocator is mimalloc there (mimalloc_sizes.c).
FREE_THREADED = True

TARGET = TARGETS / "mem_threads_free.py"
MARKS = {name: lines[0] for name, lines in groundtruth.marker_lines(TARGET).items()}
WORKERS = 4
W_MB = 1.0
NP_TEMP_MB = 1000 * 1000 * 8 / (1 << 20)  # one 1000 x 1000 float64 array: 7.63 MiB
MALLOC_TOLERANCE = 0.02  # allocations of W or more are counted at their size
KEPT_TOLERANCE = 0.10
FREED_MAX_MB = 2 * W_MB  # what a line that freed everything may still seem to keep
# OpenBLAS touches a few MiB of each calling thread's 32 MiB buffer (2 MiB each here): at most
# half of it per worker, far below the 128 MiB of their lengths.
BLAS_KEPT_MAX_MB = WORKERS * 16


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    cache = {}

    def run(python, mode):
        if (python, mode) not in cache:
            out = tmp_path_factory.mktemp("threadfree") / "profile.json"
            ran = run_profiled(python, TARGET, [mode], outfile=out)
            assert ran.returncode == 0, ran.describe()
            facts = json.loads(ran.stdout.decode().strip().splitlines()[-1])
            cache[(python, mode)] = (load_profile(ran), facts, ran)
        return cache[(python, mode)]

    return run


def lines_of(profile):
    detail = file_detail(profile, TARGET)
    assert detail is not None, f"no entry for {TARGET}: {sorted(profile['files'])}"
    return detail


def mem(detail, name):
    e = line_entry(detail, MARKS[name])
    return {k: e.get(k, 0) for k in ("lineno", "n_malloc_mb", "n_free_mb", "n_growth_mb",
                                     "n_peak_mb", "n_mallocs")}


def check_invariants(profile, detail):
    """No line keeps more than the footprint's peak, nor all of them together (every allocation
    of the target's process is made on its own lines, or counts in no line)."""
    peak = profile["max_footprint_mb"]
    total = 0.0
    for e in detail["lines"]:
        assert e["n_growth_mb"] <= peak + W_MB, (
            f"line {e['lineno']} keeps {e['n_growth_mb']:.1f} MB, the footprint peaked at "
            f"{peak:.1f} MB")
        total += e["n_growth_mb"]
    assert total <= peak + WORKERS * W_MB, (
        f"the lines keep {total:.1f} MB together, the footprint peaked at {peak:.1f} MB")
    return total


def test_python_pool(runs, python_exe):
    """Blocks made in one thread and freed in another, temporaries, realloc'd blocks, kept
    blocks and per-thread mappings (pure Python, no numpy)."""
    profile, facts, ran = runs(python_exe, "python")
    assert facts == {"buffers": WORKERS, "kept": 20}, facts
    detail = lines_of(profile)
    for name in ("worker_alloc", "main_alloc", "worker_temp"):
        e = mem(detail, name)
        assert abs(e["n_malloc_mb"] - 320) <= 320 * MALLOC_TOLERANCE, f"{name}: {e}"
        assert e["n_growth_mb"] <= FREED_MAX_MB, f"{name} freed everything it made: {e}"
    grow = mem(detail, "grow")
    assert grow["n_malloc_mb"] >= 80 * 4 * (1 - MALLOC_TOLERANCE), f"grow: {grow}"
    assert grow["n_growth_mb"] <= FREED_MAX_MB, f"grow's blocks were all freed: {grow}"
    # One 4 MiB temporary per worker at once; the line never holds more than that.
    temp = mem(detail, "worker_temp")
    assert 4 - W_MB <= temp["n_peak_mb"] <= WORKERS * 4 + W_MB, f"worker_temp: {temp}"
    keep = mem(detail, "worker_keep")
    assert abs(keep["n_growth_mb"] - 40) <= 40 * KEPT_TOLERANCE, f"worker_keep: {keep}"
    # 4 mappings of 32 MiB, 3 MiB of each touched: allocated 128, kept 12.
    buf = mem(detail, "thread_buffer")
    assert abs(buf["n_malloc_mb"] - 128) <= 128 * MALLOC_TOLERANCE, f"thread_buffer: {buf}"
    assert abs(buf["n_growth_mb"] - 12) <= 12 * KEPT_TOLERANCE + W_MB, f"thread_buffer: {buf}"
    total = check_invariants(profile, detail)
    # Kept: 40 + 12 MiB, and a few MiB of the imports (concurrent.futures, ctypes).
    assert 52 * (1 - KEPT_TOLERANCE) <= total <= 52 * (1 + KEPT_TOLERANCE) + 6, (
        f"the lines keep {total:.1f} MB together: {detail['lines']}")


def test_numpy_pool(runs, python_exe):
    """numpy in a thread pool: temporaries of `a + b` and `a @ b` dropped by the workers keep
    nothing; OpenBLAS's per-thread buffers keep only their resident pages; kept arrays are
    kept."""
    profile, facts, ran = runs(python_exe, "numpy")
    if not facts.get("numpy"):
        pytest.skip(f"numpy is not installed for {python_exe} (scripts/install-deps.sh "
                    f"packages installs it where a wheel exists)")
    detail = lines_of(profile)
    temp = mem(detail, "np_temp")
    assert abs(temp["n_malloc_mb"] - 100 * NP_TEMP_MB) <= 100 * NP_TEMP_MB * MALLOC_TOLERANCE, (
        f"np_temp: {temp}")
    assert temp["n_growth_mb"] <= FREED_MAX_MB, f"np_temp: {temp}"
    # Each worker may also hold one sample of a small block made on the line (counted as W):
    # 4 temporaries and one such sample came to 31.5176 MiB on 3.13t, 32 bytes over 4 x 7.63 + W.
    assert NP_TEMP_MB - W_MB <= temp["n_peak_mb"] <= WORKERS * (NP_TEMP_MB + W_MB), (
        f"np_temp: {temp}")
    product = mem(detail, "np_matmul")
    assert product["n_malloc_mb"] >= 16 * NP_TEMP_MB * (1 - MALLOC_TOLERANCE), (
        f"np_matmul: {product}")
    assert product["n_growth_mb"] <= BLAS_KEPT_MAX_MB, f"np_matmul: {product}"
    assert product["n_peak_mb"] <= WORKERS * NP_TEMP_MB + BLAS_KEPT_MAX_MB, f"np_matmul: {product}"
    keep = mem(detail, "np_keep")
    assert abs(keep["n_growth_mb"] - 48) <= 48 * KEPT_TOLERANCE, f"np_keep: {keep}"
    check_invariants(profile, detail)
