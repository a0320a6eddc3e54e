"""The generated layout tables of module-private C types (src/cpython/ctype_layout_<module>.c:
collections.deque and defaultdict, _io.BytesIO, array.array, numpy.ndarray and its descr,
_asyncio.Future and Task) checked against every installed 3.11+ interpreter, the free-threaded
builds and Debian's /usr/bin/python3.11 included: tests/tools/probe_ctypes.py --check reruns the
probe (each offset found in that interpreter's live module, from objects of known content) and
fails unless every row it makes is the committed row of that build, number for number. A table
whose module does not import there (numpy) is skipped for that interpreter; a probe that fails
on a module that imports fails the test.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pythons import find_free_threaded, find_pythons  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
PROBE = REPO / "tests" / "tools" / "probe_ctypes.py"
DEBIAN_STATIC = "/usr/bin/python3.11"
# Tables every interpreter has (numpy's two come on top where it imports).
STDLIB_TABLES = 6


def interpreters():
    found = [(v, exe) for v, exe in sorted({**find_pythons(), **find_free_threaded()}.items())
             if int(v.split(".")[1].rstrip("t")) >= 11]
    if os.access(DEBIAN_STATIC, os.X_OK):
        found.append(("3.11-debian-static", DEBIAN_STATIC))
    return found


@pytest.mark.parametrize("label,exe", interpreters(), ids=[v for v, _ in interpreters()])
def test_committed_rows_are_probed(label, exe):
    cp = subprocess.run([sys.executable, str(PROBE), "--check", exe], capture_output=True,
                        text=True, timeout=120)
    assert cp.returncode == 0, f"{PROBE.name} --check {exe}:\n{cp.stdout}{cp.stderr}"
    last = cp.stdout.splitlines()[-1].split()
    assert last[0] == "OK" and int(last[2]) >= STDLIB_TABLES, cp.stdout
