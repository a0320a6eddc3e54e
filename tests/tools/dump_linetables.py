#!/usr/bin/env python3
"""Dump the location tables of many real code objects, with the line CPython itself gives for
every code unit, as ground truth for tests/tools/linetable_check.c.

Runs on any Python 3.11+. For each module it compiles the module's source file (the code objects
an import would create) and walks co_consts recursively. Output, one line per code object:

    <firstlineno> <code units> <co_linetable as hex, or -> <line,line,...> <qualname>@<file>

where the line list has one entry per code unit (len(co_code) // 2; co_code has the length of
co_code_adaptive), taken from co.co_lines(), with None written as -1. The first line is a header
"# scry-linetables 1 <version>" and the last is "# end <count>" so a truncated file is detected.

Usage: dump_linetables.py [--all-stdlib] [-o OUT] [module ...]
"""
import argparse
import importlib
import importlib.util
import os
import sys
import sysconfig
import types

DEFAULT_MODULES = [
    "typing", "argparse", "email.message", "email._header_value_parser", "asyncio.base_events",
    "asyncio.tasks", "ast", "inspect", "collections", "dataclasses", "pydoc", "enum", "pathlib",
    "json.decoder", "http.client", "urllib.parse", "difflib", "tarfile", "zipfile", "logging",
    "unittest.mock", "datetime", "decimal", "statistics", "textwrap", "re._parser", "pickle",
    "tkinter",  # optional: skipped when the interpreter was built without Tk
]


def source_files(modules, all_stdlib):
    seen = set()
    for name in modules:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        if spec is None or not spec.origin or not spec.origin.endswith(".py"):
            print(f"dump_linetables: skipping {name} (no Python source)", file=sys.stderr)
            continue
        if spec.origin not in seen:
            seen.add(spec.origin)
            yield spec.origin
    if all_stdlib:
        root = sysconfig.get_paths()["stdlib"]
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames
                                 if d not in ("site-packages", "test", "tests", "idle_test",
                                              "lib2to3", "__pycache__"))
            for f in sorted(filenames):
                path = os.path.join(dirpath, f)
                if f.endswith(".py") and path not in seen:
                    seen.add(path)
                    yield path


def walk(co):
    yield co
    for c in co.co_consts:
        if isinstance(c, types.CodeType):
            yield from walk(c)


def expected_lines(co):
    n = len(co.co_code) // 2
    lines = [None] * n
    for start, end, line in co.co_lines():
        if start % 2 or end % 2 or not 0 <= start <= end <= 2 * n:
            raise ValueError(f"{co.co_qualname}: odd co_lines range ({start}, {end})")
        for u in range(start // 2, end // 2):
            lines[u] = -1 if line is None else line
    missing = [u for u, l in enumerate(lines) if l is None]
    if missing:
        raise ValueError(f"{co.co_qualname}: co_lines leaves code units {missing[:5]} uncovered")
    return lines


def main():
    if sys.version_info < (3, 11):
        sys.exit("dump_linetables.py needs Python 3.11+ (the location table format)")
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-o", "--output", help="output file (default stdout)")
    ap.add_argument("--all-stdlib", action="store_true", help="also every .py of the stdlib")
    ap.add_argument("modules", nargs="*", help="module names (default: a set of large ones)")
    args = ap.parse_args()

    out = open(args.output, "w") if args.output else sys.stdout
    count = 0
    out.write(f"# scry-linetables 1 {sys.version.split()[0]}\n")
    for path in source_files(args.modules or DEFAULT_MODULES, args.all_stdlib):
        try:
            with open(path, "rb") as f:
                src = f.read()
            top = compile(src, path, "exec", dont_inherit=True)
        except (OSError, SyntaxError, ValueError) as e:
            print(f"dump_linetables: skipping {path}: {e}", file=sys.stderr)
            continue
        base = os.path.basename(path)
        for co in walk(top):
            table = co.co_linetable
            lines = expected_lines(co)
            name = f"{co.co_qualname}@{base}:{co.co_firstlineno}".replace(" ", "_")
            out.write(f"{co.co_firstlineno} {len(lines)} {table.hex() or '-'} "
                      f"{','.join(map(str, lines)) or '-'} {name}\n")
            count += 1
    out.write(f"# end {count}\n")
    if out is not sys.stdout:
        out.close()
    print(f"dump_linetables: {count} code objects", file=sys.stderr)


if __name__ == "__main__":
    main()
