#!/usr/bin/env python3
"""Generate, or check, src/cpython/opcodes.c: which opcodes belong to the CALL family on each
CPython minor version (3.11+), as 256-bit bitmaps indexed by the low byte of a code unit of
co_code_adaptive (a generic, specialised or instrumented opcode).

The family: every opcode whose name starts with "CALL" (generic, specialised), every
INSTRUMENTED_CALL*, and on 3.11 PRECALL and its PRECALL_* specialisations (on 3.11 the specialised
PRECALLs make the C call themselves), but never CALL_INTRINSIC_1/2 (small helpers of the compiler,
not calls the program wrote; Scalene leaves them out too), nor the specialisations whose callee is
a Python function (PYTHON_CALLEES: CALL_PY_*, CALL_BOUND_METHOD_*, CALL_ALLOC_AND_ENTER_INIT,
CALL_KW_PY, CALL_KW_BOUND_METHOD, 3.15's CALL_EX_PY, 3.11's PRECALL_PYFUNC and
PRECALL_BOUND_METHOD): time on those
is the frame set-up of a call into Python, not C work. Why the family matters:
shared/reference/agent-sampling.md sections 4 and 5.

Where the names and numbers come from, per interpreter (run in that interpreter, --dump):
  3.11, 3.12   dis._all_opmap (opmap plus opcode._specialized_instructions) and opcode.opmap
  3.13+        opcode.opmap (includes INSTRUMENTED_*) plus opcode._specialized_opmap
Pseudo-instructions (numbers >= 256) never reach co_code_adaptive and are left out.

For a version with no interpreter here, --metadata 3.X=FILE[,DESCRIPTION] reads CPython's
generated Lib/_opcode_metadata.py of that version (opmap and _specialized_opmap). Every table in
opcodes.c now comes from a live interpreter: 3.14 and 3.15 from Debian sid's 3.14.10 and 3.15.2
(scripts/install-pythons.sh). The earlier 3.14 table, made from the _opcode_metadata.py of
CPython 3.14.2 in pyodide@314.0.7, was identical.

Usage:
  gen_opcodes.py [--python EXE ...] [--metadata 3.X=FILE[,DESC] ...] > src/cpython/opcodes.c
        print the whole C file for the interpreters given, or else every pyenv release build of
        3.11+ found ($(pyenv root)/versions/3.X.Y/bin/python3, highest patch per minor)
  gen_opcodes.py --check src/cpython/opcodes.c [--metadata 3.X=FILE]
        compare the CALL family of the interpreter running this script (or of FILE) with the
        committed table for its version; exit 1 and list the differences if they differ
  gen_opcodes.py --dump
        print this interpreter's version and opcode map as JSON (used by the generator)

Regenerating opcodes.c (what was run for the committed file):
  V=$(pyenv root)/versions
  python3 tests/tools/gen_opcodes.py --python $V/3.11.7/bin/python3 --python $V/3.12.1/bin/python3 \
      --python $V/3.13.0/bin/python3 --python $V/3.14.10/bin/python3.14 \
      --python $V/3.15.2/bin/python3.15 > src/cpython/opcodes.c
"""
import argparse
import glob
import json
import os
import re
import subprocess
import sys

RELEASE = re.compile(r"^3\.(\d+)\.(\d+)$")
EXCLUDED = {"CALL_INTRINSIC_1", "CALL_INTRINSIC_2"}
# Specialised calls whose callee is a Python function (its frame is pushed by the eval loop, or
# the instruction only rearranges the stack for the CALL that follows): time on them is frame
# set-up, not C work (issue 10, item 8). CALL_ALLOC_AND_ENTER_INIT allocates a plain instance of
# a class with a Python __init__ and pushes that __init__'s frame.
PYTHON_CALLEES = {
    "CALL_PY_EXACT_ARGS", "CALL_PY_WITH_DEFAULTS", "CALL_PY_GENERAL",
    "CALL_BOUND_METHOD_EXACT_ARGS", "CALL_BOUND_METHOD_GENERAL", "CALL_ALLOC_AND_ENTER_INIT",
    "CALL_KW_PY", "CALL_KW_BOUND_METHOD", "PRECALL_PYFUNC", "PRECALL_BOUND_METHOD",
    "CALL_EX_PY",  # 3.15: CALL_FUNCTION_EX specialised for a Python function
}


def is_call_family(name, minor):
    if name in EXCLUDED or name in PYTHON_CALLEES:
        return False
    if name.startswith("CALL") or name.startswith("INSTRUMENTED_CALL"):
        return True
    return minor == 11 and name.startswith("PRECALL")


def live_opmap():
    """name -> opcode for every real (< 256) opcode of the running interpreter."""
    import dis
    import opcode

    names = {}
    names.update(getattr(dis, "_all_opmap", {}))
    names.update(opcode.opmap)
    names.update(getattr(opcode, "_specialized_opmap", {}))
    if not hasattr(opcode, "_specialized_opmap") and not hasattr(dis, "_all_opmap"):
        raise SystemExit("this interpreter exposes no specialised opcodes (dis._all_opmap or "
                         "opcode._specialized_opmap); is it 3.11+?")
    return {name: num for name, num in names.items() if 0 <= num < 256}


def metadata_opmap(path):
    """name -> opcode from a CPython 3.13+ Lib/_opcode_metadata.py (data only: it assigns dicts)."""
    ns = {}
    with open(path, encoding="utf-8") as f:
        exec(compile(f.read(), path, "exec"), ns)  # noqa: S102 - a generated file of dict literals
    if "opmap" not in ns or "_specialized_opmap" not in ns:
        raise SystemExit(f"{path}: no opmap/_specialized_opmap: not a CPython _opcode_metadata.py")
    names = dict(ns["opmap"])
    names.update(ns["_specialized_opmap"])
    return {name: num for name, num in names.items() if 0 <= num < 256}


def family(opmap, minor):
    """Sorted [(opcode, name)] of the CALL family; two names on one number is an error."""
    by_num = {}
    for name, num in opmap.items():
        if is_call_family(name, minor):
            if num in by_num:
                raise SystemExit(f"3.{minor}: opcode {num} is both {by_num[num]} and {name}")
            by_num[num] = name
    return sorted(by_num.items())


def pyenv_pythons():
    root = os.environ.get("PYENV_ROOT")
    if not root:
        try:
            root = subprocess.run(["pyenv", "root"], capture_output=True, text=True,
                                  timeout=10).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            root = ""
    root = root or os.path.expanduser("~/.pyenv")
    best = {}
    for exe in glob.glob(os.path.join(root, "versions", "3.*", "bin", "python3")):
        m = RELEASE.match(os.path.basename(os.path.dirname(os.path.dirname(exe))))
        if m and int(m.group(1)) >= 11 and os.access(exe, os.X_OK):
            minor, patch = int(m.group(1)), int(m.group(2))
            if minor not in best or patch > best[minor][0]:
                best[minor] = (patch, exe)
    return [best[m][1] for m in sorted(best)]


def dump_of(exe):
    cp = subprocess.run([exe, os.path.abspath(__file__), "--dump"], capture_output=True,
                        text=True, timeout=60)
    if cp.returncode != 0:
        raise SystemExit(f"{exe} --dump failed:\n{cp.stderr}")
    return json.loads(cp.stdout)


def bitmap(nums):
    words = [0, 0, 0, 0]
    for n in nums:
        words[n >> 6] |= 1 << (n & 63)
    return words


def wrap(prefix, items, width=100):
    """Comment lines " * <prefix>item, item, ..." no longer than width."""
    lines, cur = [], " * " + prefix
    for i, item in enumerate(items):
        piece = item + ("," if i + 1 < len(items) else ".")
        if len(cur) + 1 + len(piece) > width and cur.strip() != "*":
            lines.append(cur)
            cur = " *  "
        cur += ("" if cur.endswith(("* ", ":", "*  ")) else " ") + piece
    lines.append(cur)
    return lines


def render(tables):
    """tables: [(minor, source, [(opcode, name)])] -> the text of opcodes.c."""
    out = [
        "/* Generated by tests/tools/gen_opcodes.py from each version's opcode tables: "
        "do not edit. */",
        "/* CALL-family opcodes per CPython minor version, as 256-bit bitmaps indexed by the low",
        " * byte of a code unit of co_code_adaptive. gen_opcodes.py's docstring says how to",
        " * regenerate it; tests/e2e/test_opcodes.py checks it against every installed "
        "interpreter.",
        " *",
        " * The family is every opcode named CALL* (generic and specialised) and",
        " * INSTRUMENTED_CALL*, plus PRECALL and PRECALL_* on 3.11, less CALL_INTRINSIC_1/2 and",
        " * less the specialisations whose callee is a Python function (CALL_PY_*,",
        " * CALL_BOUND_METHOD_*, CALL_ALLOC_AND_ENTER_INIT, CALL_KW_PY, CALL_KW_BOUND_METHOD,",
        " * CALL_EX_PY, PRECALL_PYFUNC, PRECALL_BOUND_METHOD): an instruction pointer that rests",
        " * on one of them means the thread is inside a call that may be into C",
        " * (shared/reference/agent-sampling.md sections 4 and 5). Looked up from signal handlers:",
        " * constant data, no locks, no allocation. */",
        '#include "cpython/opcodes.h"',
        "",
    ]
    for minor, source, fam in tables:
        words = bitmap(n for n, _ in fam)
        out.append(f"/* 3.{minor}, from {source}:")
        out.extend(wrap("", [f"{name} {num}" for num, name in fam]))
        out.append(" */")
        out.append(f"static const uint64_t call_family_3{minor}[4] = {{")
        out.append("    " + ", ".join(f"0x{w:016x}u" for w in words) + ",")
        out.append("};")
        out.append("")
    out.append("static const uint64_t *call_family(int minor)")
    out.append("{")
    out.append("    switch (minor) {")
    for minor, _, _ in tables:
        out.append(f"    case {minor}:")
        out.append(f"        return call_family_3{minor};")
    out.append("    default:")
    out.append("        return NULL;")
    out.append("    }")
    out.append("}")
    out.append("")
    out.append("bool py_opcodes_known(int minor) { return call_family(minor) != NULL; }")
    out.append("")
    out.append("bool py_opcode_is_call(int minor, uint8_t opcode)")
    out.append("{")
    out.append("    const uint64_t *bits = call_family(minor);")
    out.append("    return bits != NULL && (bits[opcode >> 6] >> (opcode & 63) & 1) != 0;")
    out.append("}")
    return "\n".join(out) + "\n"


TABLE_RE = re.compile(r"call_family_3(\d+)\[4\]\s*=\s*\{([^}]*)\}")


def parse_c(path):
    """minor -> set of opcodes, from the bitmaps of a generated opcodes.c."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    tables = {}
    for m in TABLE_RE.finditer(text):
        words = [int(w.strip().rstrip("uU"), 16) for w in m.group(2).split(",") if w.strip()]
        if len(words) != 4:
            raise SystemExit(f"{path}: table for 3.{m.group(1)} has {len(words)} words, not 4")
        tables[int(m.group(1))] = {i * 64 + b for i, w in enumerate(words) for b in range(64)
                                   if w >> b & 1}
    if not tables:
        raise SystemExit(f"{path}: no call_family_3X[4] tables found")
    return tables


def check(path, minor, opmap, label):
    tables = parse_c(path)
    want = dict(family(opmap, minor))
    if minor not in tables:
        print(f"FAIL {label}: {path} has no table for 3.{minor}")
        return 1
    have = tables[minor]
    names = {num: name for name, num in opmap.items()}
    missing = sorted(set(want) - have)
    extra = sorted(have - set(want))
    if missing or extra:
        print(f"FAIL {label} 3.{minor}: table differs from the interpreter")
        for n in missing:
            print(f"  missing {n} {want[n]}")
        for n in extra:
            print(f"  extra   {n} {names.get(n, '(no opcode of that number)')}")
        return 1
    print(f"OK {label} 3.{minor}: {len(want)} CALL-family opcodes match")
    return 0


def parse_metadata_args(items):
    result = []
    for item in items:
        m = re.fullmatch(r"3\.(\d+)=([^,]+)(?:,(.+))?", item)
        if not m:
            raise SystemExit(f"--metadata wants 3.X=FILE[,DESCRIPTION], got {item!r}")
        result.append((int(m.group(1)), m.group(2), m.group(3)))
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--python", action="append", default=[], help="interpreter (repeatable)")
    ap.add_argument("--metadata", action="append", default=[],
                    help="3.X=PATH[,DESCRIPTION]: that version's Lib/_opcode_metadata.py, and "
                    "where it came from for the comment in the C file (repeatable)")
    ap.add_argument("--check", metavar="OPCODES_C", help="check the table of this interpreter")
    ap.add_argument("--dump", action="store_true", help="print this interpreter's opcode map")
    args = ap.parse_args()
    metadata = parse_metadata_args(args.metadata)

    if args.dump:
        json.dump({"version": "%d.%d.%d" % sys.version_info[:3], "minor": sys.version_info[1],
                   "opmap": live_opmap()}, sys.stdout)
        return 0
    if args.check:
        rc = 0
        if metadata:
            for minor, path, _ in metadata:
                rc |= check(args.check, minor, metadata_opmap(path), path)
        else:
            rc = check(args.check, sys.version_info[1], live_opmap(), sys.executable)
        return rc

    tables = {}
    for exe in args.python or pyenv_pythons():
        d = dump_of(exe)
        tables[d["minor"]] = (f"CPython {d['version']}'s dis/opcode modules",
                              family(d["opmap"], d["minor"]))
    for minor, path, description in metadata:
        tables[minor] = (description or f"CPython 3.{minor}'s Lib/_opcode_metadata.py",
                         family(metadata_opmap(path), minor))
    if not tables:
        raise SystemExit("no interpreters found (give --python or --metadata)")
    sys.stdout.write(render([(m, src, fam) for m, (src, fam) in sorted(tables.items())]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
