"""End-to-end tests of `scry run --stacks`' native and combined stacks, on every installed
Python 3.11-3.13 (the issue's check: "--stacks on a numpy or zlib workload shows native frames
under the Python line that called them").

The target is tests/targets/run_native_stacks.py: a line that calls zlib.compress (the
extension module, then libz's deflate) and, where numpy is installed for that interpreter, a
line that multiplies two matrices (numpy's _multiarray_umath, then its BLAS). In the combined
stacks (Scalene's format, outermost first) the Python frame of that line must be followed, on
its innermost side, by native frames of that code, in most of the samples taken on the line;
native_stacks must hold the same code; without --stacks both are empty; and the program's
output is the same as without scry.
"""

import importlib.util
import subprocess

import pytest

from conftest import TARGETS, assert_same_behaviour, load_profile, run_plain, run_profiled

FREE_THREADED = True  # conftest: python_exe includes 3.13t

_spec = importlib.util.spec_from_file_location("groundtruth", TARGETS / "groundtruth.py")
groundtruth = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(groundtruth)

TARGET = TARGETS / "run_native_stacks.py"
MARKERS = groundtruth.marker_lines(TARGET)
MIN_HITS = 20          # the zlib line runs ~1.2 s: ~100 CPU samples at the default 10 ms
MIN_NATIVE_SHARE = 0.8  # of the line's combined-stack hits, those with the library's frames


def is_zlib(frame):
    module = frame["filename_or_module"].rsplit("/", 1)[-1]
    return "zlib" in module or module.startswith("libz.") or \
        frame["display_name"].startswith("deflate")


def is_numpy(frame):
    module = frame["filename_or_module"]
    return "numpy" in module or "blas" in module.lower() or "_multiarray_umath" in module


def check_frame_shapes(profile):
    for stack, hits in profile["combined_stacks"]:
        assert isinstance(hits, int) and hits > 0, (stack, hits)
        assert stack, "an empty combined stack"
        for f in stack:
            assert set(f) == {"kind", "display_name", "filename_or_module", "line", "ip",
                              "offset"}, f
            if f["kind"] == "py":
                assert isinstance(f["line"], int) and f["ip"] is None and f["offset"] is None, f
            else:
                assert f["kind"] == "native", f
                assert f["line"] is None and isinstance(f["ip"], int), f
                assert isinstance(f["offset"], int) and f["display_name"], f
    for stack, hits in profile["native_stacks"]:
        assert isinstance(hits, int) and hits > 0 and stack, (stack, hits)
        for f in stack:
            assert len(f) == 4 and isinstance(f[0], str) and isinstance(f[1], str), f
            assert isinstance(f[2], int) and isinstance(f[3], int), f


def under_line(profile, lineno, is_library):
    """(hits of combined stacks whose innermost Python frame is the target's line lineno,
    those of them where native frames of the library follow that frame)."""
    total = native = 0
    for stack, hits in profile["combined_stacks"]:
        py = [i for i, f in enumerate(stack) if f["kind"] == "py"]
        if not py:
            continue
        last = stack[py[-1]]
        if last["line"] != lineno or not last["filename_or_module"].endswith(TARGET.name):
            continue
        total += hits
        after = stack[py[-1] + 1:]
        if after and all(f["kind"] == "native" for f in after) and any(map(is_library, after)):
            native += hits
    return total, native


def describe(profile, n=5):
    top = sorted(profile["combined_stacks"], key=lambda s: -s[1])[:n]
    return "\n".join(f"{hits}: " + " | ".join(
        f"{f['display_name']}:{f['line']}" if f["kind"] == "py"
        else f"{f['filename_or_module'].rsplit('/', 1)[-1]}!{f['display_name']}"
        for f in stack) for stack, hits in top)


def has_numpy(python):
    return subprocess.run([python, "-c", "import numpy"], capture_output=True,
                          timeout=60).returncode == 0


def test_zlib_native_frames_under_the_line(python_exe, tmp_path):
    out = tmp_path / "profile.json"
    profiled = run_profiled(python_exe, "run_native_stacks.py", ["zlib"], outfile=out,
                            options=["--stacks"])
    assert_same_behaviour(run_plain(python_exe, "run_native_stacks.py", ["zlib"]), profiled)
    profile = load_profile(profiled)
    check_frame_shapes(profile)
    total, native = under_line(profile, MARKERS["zlib"][0], is_zlib)
    assert total >= MIN_HITS, f"{total} samples on the zlib line:\n{describe(profile)}"
    assert native >= MIN_NATIVE_SHARE * total, (
        f"only {native} of {total} samples on the zlib line have zlib frames under it:\n"
        f"{describe(profile)}")
    assert any(any(is_zlib({"filename_or_module": f[0], "display_name": f[1]}) for f in stack)
               for stack, _ in profile["native_stacks"]), "no zlib frame in native_stacks"
    # The interpreter's own start-up is not part of the combined stacks: they begin with the
    # program's outermost Python frame.
    for stack, hits in profile["combined_stacks"]:
        assert stack[0]["kind"] == "py", describe({"combined_stacks": [[stack, hits]]})


def test_numpy_native_frames_under_the_line(python_exe, tmp_path):
    if not has_numpy(python_exe):
        pytest.skip(f"numpy is not installed for {python_exe} "
                    f"({python_exe} -m pip install numpy to run this test)")
    out = tmp_path / "profile.json"
    profiled = run_profiled(python_exe, "run_native_stacks.py", ["numpy"], outfile=out,
                            options=["--stacks"])
    assert_same_behaviour(run_plain(python_exe, "run_native_stacks.py", ["numpy"]), profiled)
    profile = load_profile(profiled)
    check_frame_shapes(profile)
    total, native = under_line(profile, MARKERS["matmul"][0], is_numpy)
    assert total >= MIN_HITS, f"{total} samples on the matmul line:\n{describe(profile)}"
    assert native >= MIN_NATIVE_SHARE * total, (
        f"only {native} of {total} samples on the matmul line have numpy frames under it:\n"
        f"{describe(profile)}")


def test_no_native_stacks_without_the_option(python_exe, tmp_path):
    out = tmp_path / "profile.json"
    profiled = run_profiled(python_exe, "run_native_stacks.py", ["zlib"], outfile=out)
    assert_same_behaviour(run_plain(python_exe, "run_native_stacks.py", ["zlib"]), profiled)
    profile = load_profile(profiled)
    assert profile["combined_stacks"] == [] and profile["native_stacks"] == [], describe(profile)
    assert profile["stacks"] == []
