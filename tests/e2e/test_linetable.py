"""Ground truth for the location-table decoder (src/cpython/linetable.c): for every code unit of
every code object in the standard library of each installed CPython 3.11-3.15, the line
py_linetable_line computes must equal the one CPython's own co_lines() gives.

tests/tools/dump_linetables.py (run by the interpreter under test) writes the tables and expected
lines; build/tools/linetable_check (`make test` builds it; $SCRY_BUILD overrides build/) checks them.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pythons import find_free_threaded, find_pythons  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
DUMP = REPO / "tests" / "tools" / "dump_linetables.py"
BUILD = Path(os.environ.get("SCRY_BUILD", REPO / "build"))
CHECKER = BUILD / "tools" / "linetable_check"
SUMMARY = re.compile(r"^linetable: (\d+) code objects, (\d+) instructions checked, "
                     r"(\d+) mismatches", re.M)
# The whole stdlib gives 15-20k code objects; several thousand guards against a dump that
# silently lost most of its input.
MIN_OBJECTS = 5000
MIN_UNITS = 200000


def checker():
    if not (CHECKER.is_file() and os.access(CHECKER, os.X_OK)):
        pytest.fail(f"{CHECKER} is missing: build it with `make {CHECKER.relative_to(REPO)}` "
                    f"(`make test` does), or point $SCRY_BUILD at the build directory",
                    pytrace=False)
    return CHECKER


def interpreter(version):
    exe = {**find_pythons(), **find_free_threaded()}.get(version)
    if not exe:
        pytest.skip(f"Python {version} is not installed")
    return exe


def dump(python, out, *args):
    cp = subprocess.run([python, str(DUMP), "-o", str(out), *args], capture_output=True,
                        text=True, timeout=600)
    assert cp.returncode == 0, f"{DUMP.name} failed under {python}:\n{cp.stderr}"
    return cp


def run_checker(path):
    cp = subprocess.run([str(checker()), str(path)], capture_output=True, text=True,
                        errors="replace", timeout=600)
    assert cp.returncode >= 0, f"linetable_check died of signal {-cp.returncode}:\n{cp.stderr}"
    m = SUMMARY.search(cp.stdout)
    return cp, m


@pytest.mark.parametrize("version", ["3.11", "3.12", "3.13", "3.14", "3.15", "3.13t"])
def test_linetable_matches_co_lines(version, tmp_path):
    python = interpreter(version)
    data = tmp_path / f"linetables-{version}.txt"
    dump(python, data, "--all-stdlib")
    cp, m = run_checker(data)
    assert m, f"no summary line from linetable_check:\n{cp.stdout}\n{cp.stderr}"
    objects, units, mismatches = map(int, m.groups())
    assert cp.returncode == 0 and mismatches == 0 and not cp.stderr, (
        f"py_linetable_line disagrees with co_lines() of Python {version} ({python}):\n"
        f"{cp.stdout}{cp.stderr}(dump kept at {data})")
    assert objects >= MIN_OBJECTS, f"only {objects} code objects checked:\n{cp.stdout}"
    assert units >= MIN_UNITS, f"only {units} code units checked:\n{cp.stdout}"


def test_checker_reports_a_wrong_line(tmp_path):
    """The checker must catch one wrong expected line and a truncated dump, or the test above
    could pass without checking anything."""
    found = find_pythons()
    python = next((found[v] for v in ("3.12", "3.13", "3.11") if v in found), None)
    if python is None:
        pytest.skip("no Python 3.11-3.13 is installed")
    good = tmp_path / "good.txt"
    dump(python, good, "typing")
    lines = good.read_text().splitlines()
    rec = next(i for i, line in enumerate(lines[1:], 1)
               if not line.startswith("#") and line.split(" ")[3] != "-"
               and int(line.split(" ")[3].split(",")[0]) > 0)
    fields = lines[rec].split(" ")
    expected = fields[3].split(",")
    expected[0] = str(int(expected[0]) + 1)
    fields[3] = ",".join(expected)
    bad = tmp_path / "bad.txt"
    bad.write_text("\n".join(lines[:rec] + [" ".join(fields)] + lines[rec + 1:]) + "\n")
    cp, m = run_checker(bad)
    assert cp.returncode == 1 and m and m.group(3) == "1", cp.stdout + cp.stderr
    assert "mismatch:" in cp.stdout and "unit 0" in cp.stdout, cp.stdout

    truncated = tmp_path / "truncated.txt"
    truncated.write_text("\n".join(lines[:-1]) + "\n")  # the "# end N" line is gone
    cp, _ = run_checker(truncated)
    assert cp.returncode == 1 and "truncated" in cp.stderr, cp.stdout + cp.stderr
