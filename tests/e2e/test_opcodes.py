"""The CALL-family tables in src/cpython/opcodes.c agree with each installed CPython 3.11-3.15:
tests/tools/gen_opcodes.py --check, run by the interpreter under test, lists that interpreter's
CALL-family opcodes (generic, specialised and instrumented, from dis/opcode) and compares them
with the committed bitmap for its version. A table edited by hand, or a version whose opcode
numbers moved, fails here.
"""

import re
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pythons import find_free_threaded, find_pythons  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
GEN = REPO / "tests" / "tools" / "gen_opcodes.py"
TABLE = REPO / "src" / "cpython" / "opcodes.c"


VERSIONS = ["3.11", "3.12", "3.13", "3.14", "3.15"]


# 3.13t: the sampler reads it with 3.13's table, which must hold for its opcodes too
@pytest.mark.parametrize("version", VERSIONS + ["3.13t"])
def test_table_matches_interpreter(version):
    exe = {**find_pythons(), **find_free_threaded()}.get(version)
    if not exe:
        pytest.skip(f"Python {version} is not installed")
    cp = subprocess.run([exe, str(GEN), "--check", str(TABLE)], capture_output=True, text=True,
                        timeout=120)
    assert cp.returncode == 0, f"{GEN.name} --check under {exe}:\n{cp.stdout}{cp.stderr}"
    assert f"OK {exe} {version.rstrip('t')}:" in cp.stdout, cp.stdout


def test_check_catches_a_wrong_table(tmp_path):
    """The checker itself can fail: a table with one bit cleared is reported as missing it."""
    pythons = find_pythons()
    exe = next((pythons[v] for v in VERSIONS if v in pythons), None)
    if not exe:
        pytest.skip("no Python 3.11+ installed")
    text = TABLE.read_text()
    # Clear the lowest set bit of the first word of every table.
    def clear_low_bit(m):
        word = int(m.group(1), 16)
        return "{\n    0x%016xu," % (word & (word - 1))

    broken = re.sub(r"\{\n    0x([0-9a-f]{16})u,", clear_low_bit, text)
    assert broken != text
    bad = tmp_path / "opcodes.c"
    bad.write_text(broken)
    cp = subprocess.run([exe, str(GEN), "--check", str(bad)], capture_output=True, text=True,
                        timeout=120)
    assert cp.returncode == 1, cp.stdout + cp.stderr
    assert "missing" in cp.stdout, cp.stdout
