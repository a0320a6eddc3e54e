"""scry's layout tables checked against each installed interpreter's own headers, for every
CPython 3.11-3.15 found (pyenv's, Debian sid's 3.14/3.15 under pyenv's versions folder, and Debian's
static /usr/bin/python3.11 when python3.11-dev is installed):

- the numbers: tests/tools/layout_offsets.c, compiled against that version's headers
  (Py_BUILD_CORE), prints offsetof()/sizeof/enum values and _Py_DebugOffsets indices;
  build/tools/layout_table prints the numbers scry's compiled tables hold for that minor version
  under the same names. Every number scry holds must be printed by the headers too, with the same
  value. Two structs with no header (classmethod and property objects, private to Objects/*.c) are
  measured in the running interpreter instead (gen_layouts.LIVE_PROBE).
- the files: src/cpython/layout_3X.c is what tests/tools/gen_layouts.py makes from the headers
  (gen_layouts.py --check), so a hand edit, or a generator change not regenerated, fails too.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import gen_layouts  # noqa: E402
from pythons import find_free_threaded, find_pythons  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("SCRY_BUILD", REPO / "build"))
TABLE = BUILD / "tools" / "layout_table"
GEN = REPO / "tests" / "tools" / "gen_layouts.py"
DEBIAN_STATIC = "/usr/bin/python3.11"


def interpreters():
    """[(label, exe)]: every installed 3.11+ interpreter, Debian's static 3.11 and the
    free-threaded builds (3.13t) included."""
    found = [(v, exe) for v, exe in sorted({**find_pythons(), **find_free_threaded()}.items())
             if int(v.split(".")[1].rstrip("t")) >= 11]
    if os.access(DEBIAN_STATIC, os.X_OK):
        found.append(("3.11-debian-static", DEBIAN_STATIC))
    return found


def scry_numbers(variant):
    if not (TABLE.is_file() and os.access(TABLE, os.X_OK)):
        pytest.fail(f"{TABLE} is missing: build it with `make {TABLE.relative_to(REPO)}` "
                    f"(`make test` does), or point $SCRY_BUILD at the build directory",
                    pytrace=False)
    cp = subprocess.run([str(TABLE), variant], capture_output=True, text=True, timeout=60)
    assert cp.returncode == 0, cp.stderr
    return gen_layouts.parse(cp.stdout)


def headers_or_skip(exe):
    n = gen_layouts.numbers(exe)
    if n is None:
        if exe == DEBIAN_STATIC:
            pytest.skip(f"{exe}: python3.11-dev (its headers) is not installed")
        pytest.fail(f"{exe} has no headers under its prefix", pytrace=False)
    return n


@pytest.mark.parametrize("label,exe", interpreters(), ids=[v for v, _ in interpreters()])
def test_tables_match_headers(label, exe):
    known = headers_or_skip(exe)
    _, version = gen_layouts.interpreter_info(exe)
    minor = gen_layouts.minor_of(version)
    assert known["minor"] == minor, "the headers are another version's"
    assert known["free_threaded"] == version.endswith("t"), "the headers are another build's"
    mine = scry_numbers(gen_layouts.variant(version))
    # Every struct py_layout and py_heap_layout number, and the labelled references: a table
    # that lost its fields would pass a check of nothing.
    assert len(mine) >= 150, f"layout_table printed only {len(mine)} numbers for 3.{minor}"
    missing = sorted(k for k in mine if k not in known)
    wrong = [f"{k}: scry {mine[k]}, Python {version} {known[k]}"
             for k in sorted(mine) if k in known and known[k] != mine[k]]
    assert not missing, f"scry's 3.{minor} tables hold numbers nothing checks: {missing}"
    assert not wrong, (f"scry's 3.{minor} tables differ from Python {version}'s headers "
                       f"(tests/tools/layout_offsets.c):\n" + "\n".join(wrong))
    if minor >= 13:  # the block's indices, and the fields taken from the block, are all there
        assert mine["dbg.sizeof"] == known["dbg.sizeof"]
        assert sum(1 for k in mine if k.startswith("dbg.") and k.endswith(".within")) >= 40


@pytest.mark.parametrize("label,exe", interpreters(), ids=[v for v, _ in interpreters()])
def test_committed_file_is_generated(label, exe):
    headers_or_skip(exe)
    cp = subprocess.run([sys.executable, str(GEN), "--check", exe], capture_output=True,
                        text=True, timeout=600)
    assert cp.returncode == 0, f"{GEN.name} --check {exe}:\n{cp.stdout}{cp.stderr}"
    assert cp.stdout.startswith("OK "), cp.stdout


MIMALLOC_TOOL = REPO / "tests" / "tools" / "mimalloc_offsets.c"
FREE_THREADED_BUILDS = sorted(find_free_threaded().items()) or [("3.13t", None)]


@pytest.mark.parametrize("label,exe", FREE_THREADED_BUILDS,
                         ids=[v for v, _ in FREE_THREADED_BUILDS])
def test_mimalloc_layout_matches_headers(label, exe, tmp_path):
    """What the agent reads of a free-threaded build's mimalloc to size Python's blocks
    (src/agent/mimalloc_layout.h) is what that build's headers say (tests/tools/
    mimalloc_offsets.c prints each number both ways and fails on any difference)."""
    if not exe:
        pytest.skip("Python 3.13t is not installed (scripts/install-pythons.sh builds it)")
    inc = gen_layouts.include_dir(exe)
    if inc is None:
        pytest.fail(f"{exe} has no headers under its prefix", pytrace=False)
    cc = os.environ.get("CC") or "cc"
    out = tmp_path / "mimalloc_offsets"
    cp = subprocess.run([cc, "-std=c11", f"-I{inc}", f"-I{inc / 'internal' / 'mimalloc'}",
                         f"-I{REPO / 'src'}", str(MIMALLOC_TOOL), "-o", str(out)],
                        capture_output=True, text=True, timeout=300)
    assert cp.returncode == 0, f"compiling {MIMALLOC_TOOL.name} against {inc}:\n{cp.stderr}"
    cp = subprocess.run([str(out)], capture_output=True, text=True, timeout=60)
    assert cp.returncode == 0 and cp.stdout.count(" scry ") >= 10, cp.stdout + cp.stderr
