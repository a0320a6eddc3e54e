"""The CALL-family tables in src/cpython/opcodes.c, and the operator tables of
src/cpython/operators.c (test_operator_table_matches_interpreter), agree with each installed
CPython 3.11-3.15:
tests/tools/gen_opcodes.py --check, run by the interpreter under test, lists that interpreter's
CALL-family opcodes (generic, specialised and instrumented, from dis/opcode) and compares them
with the committed bitmap for its version. A table edited by hand, or a version whose opcode
numbers moved, fails here.
"""

import json
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


# The operator instructions of src/cpython/operators.c (issue 27 item 3): the generic forms (and
# 3.11's adaptive ones) by kind, as each interpreter names them.
OPERATOR_NAMES = {
    "K_BINARY": ["BINARY_OP", "BINARY_OP_ADAPTIVE"],
    "K_SUBSCR": ["BINARY_SUBSCR", "BINARY_SUBSCR_ADAPTIVE"],
    "K_STORE_SUBSCR": ["STORE_SUBSCR", "STORE_SUBSCR_ADAPTIVE"],
    "K_COMPARE": ["COMPARE_OP", "COMPARE_OP_ADAPTIVE"],
    "K_CONTAINS": ["CONTAINS_OP"],
    "K_ITER": ["FOR_ITER", "INSTRUMENTED_FOR_ITER"],
    "K_LOAD_ATTR": ["LOAD_ATTR", "LOAD_ATTR_ADAPTIVE", "LOAD_METHOD", "LOAD_METHOD_ADAPTIVE"],
    "K_STORE_ATTR": ["STORE_ATTR", "STORE_ATTR_ADAPTIVE"],
}
OPERATORS = REPO / "src" / "cpython" / "operators.c"
OPMAP = ("import dis, json, opcode\n"
         "m = {}\n"
         "m.update(getattr(dis, '_all_opmap', {})); m.update(opcode.opmap)\n"
         "m.update(getattr(opcode, '_specialized_opmap', {}))\n"
         "nb = getattr(opcode, '_nb_ops', None) or dis._nb_ops\n"
         "print(json.dumps({'opmap': m, 'nb': [n for n, _ in nb]}))\n")
NB_ORDER = ["ADD", "AND", "FLOOR_DIVIDE", "LSHIFT", "MATRIX_MULTIPLY", "MULTIPLY", "REMAINDER",
            "OR", "POWER", "RSHIFT", "SUBTRACT", "TRUE_DIVIDE", "XOR"]


@pytest.mark.parametrize("version", VERSIONS + ["3.13t"])
def test_operator_table_matches_interpreter(version):
    exe = {**find_pythons(), **find_free_threaded()}.get(version)
    if not exe:
        pytest.skip(f"Python {version} is not installed")
    minor = version.rstrip("t").split(".")[1]
    text = OPERATORS.read_text()
    body = re.search(r"ops_3%s\[\] = \{(.*?)\};" % minor, text, re.S)
    assert body, f"no operator table for {version} in {OPERATORS.name}"
    table = set((int(n), k) for n, k in re.findall(r"\{(\d+), (K_\w+)\}", body.group(1)))
    cp = subprocess.run([exe, "-c", OPMAP], capture_output=True, text=True, timeout=60)
    assert cp.returncode == 0, cp.stderr
    live = json.loads(cp.stdout)
    want = set((live["opmap"][n], k) for k, names in OPERATOR_NAMES.items() for n in names
               if 0 <= live["opmap"].get(n, -1) < 256)
    assert table == want, f"{version}: table {sorted(table)}, interpreter {sorted(want)}"
    # BINARY_OP's oparg order, which operators.c's nb_binary/nb_inplace follow.
    nb = NB_ORDER + ["INPLACE_" + n for n in NB_ORDER]
    assert live["nb"][:26] == ["NB_" + n for n in nb], live["nb"]
    assert live["nb"][26:] in ([], ["NB_SUBSCR"]), live["nb"]
