"""scry's layout tables (src/cpython/layout.c) checked against each installed interpreter's own
headers: for every CPython 3.11-3.15 found (pyenv's, Debian sid's 3.14/3.15 under pyenv's versions
folder, and Debian's static /usr/bin/python3.11 when python3.11-dev is installed),
tests/tools/layout_offsets.c is compiled against that version's headers (Py_BUILD_CORE) and prints
offsetof()/sizeof/enum values and _Py_DebugOffsets indices; build/tools/layout_table prints the
numbers scry's tables hold for that minor version under the same names. Every number scry holds
must be printed by the headers too, with the same value.

Two structs the heap walker reads have no header (classmethod and property objects are private to
Objects/*.c): their offsets are found in the running interpreter instead, by looking for a known
member's address in the object's words (ctypes).
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pythons import find_pythons  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("SCRY_BUILD", REPO / "build"))
TABLE = BUILD / "tools" / "layout_table"
HEADER_TOOL = REPO / "tests" / "tools" / "layout_offsets.c"
DEBIAN_STATIC = "/usr/bin/python3.11"

# Finds, in the running interpreter, the offsets of the members of objects whose structs are
# private to CPython's Objects/ (no header to compile against): the word of the object that holds
# a known member's address. Prints "name offset" lines named as tests/tools/layout_table.c does.
LIVE_PROBE = r"""
import ctypes, sys

def offset_of(obj, member):
    size = type(obj).__basicsize__
    hits = [off for off in range(16, size, 8)
            if ctypes.c_void_p.from_address(id(obj) + off).value == id(member)]
    return hits[0] if len(hits) == 1 else -1

def fget(self): pass
def fset(self, v): pass
def fdel(self): pass
def func(): pass

cm = classmethod(func)
print("ref.classmethod.__func__", offset_of(cm, func))
print("ref.classmethod.__dict__", offset_of(cm, cm.__dict__))
doc = "a property's own doc " + str(id(cm))
class C:
    prop_with_a_name = property(fget, fset, fdel, doc)
p = C.__dict__["prop_with_a_name"]
print("ref.property.fget", offset_of(p, fget))
print("ref.property.fset", offset_of(p, fset))
print("ref.property.fdel", offset_of(p, fdel))
print("ref.property.__doc__", offset_of(p, doc))
print("ref.property.__name__", offset_of(p, "prop_with_a_name"))
"""


def interpreters():
    """[(label, exe)]: every installed 3.11+ interpreter, Debian's static 3.11 included."""
    found = [(v, exe) for v, exe in sorted(find_pythons().items())
             if int(v.split(".")[1]) >= 11]
    if os.access(DEBIAN_STATIC, os.X_OK):
        found.append(("3.11-debian-static", DEBIAN_STATIC))
    return found


def parse(text):
    out = {}
    for line in text.splitlines():
        m = re.fullmatch(r"(\S+) (-?\d+)", line.strip())
        assert m, f"unexpected line {line!r}"
        assert m.group(1) not in out, f"{m.group(1)} printed twice"
        out[m.group(1)] = int(m.group(2))
    return out


def interpreter_info(exe):
    cp = subprocess.run([exe, "-c", "import sys; print(sys.prefix); "
                         "print('%d.%d.%d' % sys.version_info[:3])"],
                        capture_output=True, text=True, timeout=60)
    assert cp.returncode == 0, cp.stderr
    prefix, version = cp.stdout.split()
    return Path(prefix), version


def header_numbers(exe, tmp_path):
    """What the interpreter's headers say (None: this interpreter has no headers installed)."""
    prefix, version = interpreter_info(exe)
    minor = version.split(".")[1]
    inc = prefix / "include" / f"python3.{minor}"
    if not (inc / "Python.h").is_file() or not (inc / "internal" / "pycore_frame.h").is_file():
        return None, version
    cc = os.environ.get("CC") or shutil.which("cc") or "gcc"
    out = tmp_path / "layout_offsets"
    # -idirafter: a Debian root's pyconfig.h includes <x86_64-linux-gnu/python3.X/pyconfig.h>
    # under its own usr/include, which must not shadow this system's libc headers.
    cp = subprocess.run([cc, "-std=c11", f"-I{inc}", f"-I{inc / 'internal'}",
                         f"-idirafter{prefix / 'include'}", str(HEADER_TOOL), "-o", str(out)],
                        capture_output=True, text=True, timeout=300)
    assert cp.returncode == 0, f"compiling {HEADER_TOOL.name} against {inc}:\n{cp.stderr}"
    cp = subprocess.run([str(out)], capture_output=True, text=True, timeout=60)
    assert cp.returncode == 0, cp.stderr
    return parse(cp.stdout), version


def scry_numbers(minor):
    if not (TABLE.is_file() and os.access(TABLE, os.X_OK)):
        pytest.fail(f"{TABLE} is missing: build it with `make {TABLE.relative_to(REPO)}` "
                    f"(`make test` does), or point $SCRY_BUILD at the build directory",
                    pytrace=False)
    cp = subprocess.run([str(TABLE), str(minor)], capture_output=True, text=True, timeout=60)
    assert cp.returncode == 0, cp.stderr
    return parse(cp.stdout)


def live_numbers(exe):
    cp = subprocess.run([exe, "-c", LIVE_PROBE], capture_output=True, text=True, timeout=60)
    assert cp.returncode == 0, cp.stderr
    return parse(cp.stdout)


@pytest.mark.parametrize("label,exe", interpreters(), ids=[v for v, _ in interpreters()])
def test_tables_match_headers(label, exe, tmp_path):
    headers, version = header_numbers(exe, tmp_path)
    if headers is None:
        if exe == DEBIAN_STATIC:
            pytest.skip(f"{exe}: python3.11-dev (its headers) is not installed")
        pytest.fail(f"{exe} ({version}) has no headers under its prefix", pytrace=False)
    minor = int(version.split(".")[1])
    assert headers["minor"] == minor, "the headers are another version's"
    mine = scry_numbers(minor)
    # Every struct py_layout and py_heap_layout number, and the labelled references: a table
    # that lost its fields would pass a check of nothing.
    assert len(mine) >= 150, f"layout_table printed only {len(mine)} numbers for 3.{minor}"
    live = live_numbers(exe)
    known = {**headers, **live}
    missing = sorted(k for k in mine if k not in known)
    wrong = [f"{k}: scry {mine[k]}, Python {version} {known[k]}"
             for k in sorted(mine) if k in known and known[k] != mine[k]]
    assert not missing, f"scry's 3.{minor} tables hold numbers nothing checks: {missing}"
    assert not wrong, (f"scry's 3.{minor} tables differ from Python {version}'s headers "
                       f"(tests/tools/layout_offsets.c):\n" + "\n".join(wrong))
    if minor >= 13:  # the block's indices, and the fields taken from the block, are all there
        assert mine["dbg.sizeof"] == headers["dbg.sizeof"]
        assert sum(1 for k in mine if k.startswith("dbg.") and k.endswith(".within")) >= 40
