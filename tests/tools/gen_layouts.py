#!/usr/bin/env python3
"""Generate, or check, scry's per-version layout files src/cpython/layout_3XX.c from each installed
interpreter's own headers.

For one interpreter: tests/tools/layout_offsets.c is compiled against its headers (Py_BUILD_CORE)
and prints offsetof()/sizeof/enum values and _Py_DebugOffsets indices; two structs with no header
(classmethod and property objects, private to Objects/*.c) are measured in the running interpreter
(LIVE_PROBE). Those numbers, and the few rules that are not numbers (RULES below: flags and enums
that say how a version behaves), make the file: struct py_layout (3.11, 3.12) or what
py_layout_from_debug_offsets starts from and the block's indices (3.13+), and struct
py_heap_layout with the heap walker's labelled references (tp_traverse order).

Usage:
  gen_layouts.py [--python EXE ...]     write src/cpython/layout_3XX.c for each interpreter given,
                                        or else every pyenv release build of 3.11+ found and
                                        the free-threaded 3.13t (layout_313t.c, tables named
                                        *_313t: Py_GIL_DISABLED headers, python3.13t include)
  gen_layouts.py --check EXE            exit 1 (printing a diff) unless the committed file of
                                        EXE's version is what EXE's headers make
tests/e2e/test_layout_headers.py runs the check for every installed interpreter.
"""

import argparse
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HEADER_TOOL = REPO / "tests" / "tools" / "layout_offsets.c"
OUT_DIR = REPO / "src" / "cpython"

# Finds, in the running interpreter, the offsets of the members of objects whose structs are
# private to CPython's Objects/ (no header to compile against): the word of the object that holds
# a known member's address. Prints "name offset" lines named as layout_offsets.c names its own.
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

# struct py_layout's numbers (uint64_t, then int), as layout_offsets.c names them.
LAYOUT_U64 = """rt_size rt_interpreters_head rt_gil_locked rt_gil_last_holder is_size is_next is_id
    is_threads_head is_gc is_modules is_sysdict is_builtins is_ceval_gil gil_locked
    gil_last_holder gil_enabled ts_size ts_next ts_interp ts_thread_id ts_native_thread_id ts_cframe
    cframe_current_frame ts_current_frame ts_datastack_chunk fr_size fr_previous fr_code fr_instr
    fr_owner fr_localsplus fr_is_entry co_size co_nunits co_filename co_name co_qualname
    co_linetable co_firstlineno co_firsttraceable co_code_adaptive ob_type tp_name tp_basicsize
    tp_flags tp_dictoffset ht_cached_keys str_length str_state str_ascii_size str_compact_size
    long_digits bytes_size bytes_sval dict_keys dict_values mod_dict managed_dict""".split()
LAYOUT_INT = ["owner_generator", "owner_cstack", "owner_interpreter"]
# struct py_heap_layout's numbers (gc_generations is written from gc_gen0..2).
HEAP_U64 = """gc_permanent gc_collecting gc_garbage tp_itemsize tp_weaklistoffset tp_base tp_dict
    tp_bases tp_mro tp_is_gc ht_name ht_slots ht_qualname ht_module sizeof_type sizeof_heaptype
    tuple_items list_items list_allocated set_mask set_table set_smalltable ba_alloc ba_start
    ba_basicsize ba_bytes_header dk_usable dk_nentries co_localsplusnames co_nlocalsplus
    co_stacksize co_extra fr_func fr_globals fr_builtins fr_locals fr_frame_obj fr_stacktop
    frobj_back frobj_frame frobj_trace frobj_data gi_name gi_qualname gi_exc_value gi_frame_state
    gi_iframe ts_dict ts_async_exc ts_context ts_exc_info ts_current_exception
    gc_head_size gc_next gc_prev ob_size object_size tp_dealloc preheader_gc preheader_flags
    preheader_dict managed_values member_size member_name member_type member_offset
    member_t_object member_t_object_ex dk_refcnt dk_log2_size dk_log2_index_bytes dk_kind
    dk_indices dke_size dke_key dke_value dkue_size dkue_key dkue_value dv_values dv_capacity
    dv_embedded dv_valid long_tag func_code func_closure weakref_object setentry_size
    setentry_key exc_item_value""".split()
HEAP_INT = ["frame_owned_by_frame_object", "gen_state_cleared"]
# The labelled references, per struct py_heap_layout array, in the order tp_traverse visits them:
# (name in the numbers, edge kind). A reference this version's headers do not have is left out.
REFS = [
    ("func", "func", [("__globals__", "INTERNAL"), ("__builtins__", "INTERNAL"),
                      ("__name__", "INTERNAL"), ("__qualname__", "INTERNAL"),
                      ("__code__", "INTERNAL"), ("__defaults__", "ATTR"),
                      ("__kwdefaults__", "ATTR"), ("__closure__", "INTERNAL"), ("__doc__", "ATTR"),
                      ("__dict__", "ATTR"), ("__module__", "INTERNAL"),
                      ("__annotations__", "ATTR"), ("__annotate__", "ATTR"),
                      ("__type_params__", "ATTR")]),
    ("exc", "exc", [("__dict__", "ATTR"), ("args", "ATTR"), ("__notes__", "ATTR"),
                    ("__traceback__", "ATTR"), ("__context__", "ATTR"), ("__cause__", "ATTR")]),
    ("tb", "tb", [("tb_next", "ATTR"), ("tb_frame", "ATTR")]),
    ("method", "method", [("__func__", "ATTR"), ("__self__", "ATTR")]),
    ("cfunc", "cfunc", [("__self__", "ATTR"), ("__module__", "INTERNAL")]),
    ("cell", "cell", [("cell_contents", "CELL")]),
    ("classmethod", "classmethod", [("__func__", "ATTR"), ("__dict__", "ATTR")]),
    ("property", "property", [("fget", "ATTR"), ("fset", "ATTR"), ("fdel", "ATTR"),
                              ("__doc__", "ATTR"), ("__name__", "INTERNAL")]),
    ("weakref_cb", "weakref", [("__callback__", "ATTR")]),
    ("module", "module", [("__dict__", "ATTR"), ("__name__", "INTERNAL")]),
    ("type_fields", "type", [("__dict__", "ATTR"), ("__mro__", "INTERNAL"),
                             ("__bases__", "INTERNAL"), ("__base__", "INTERNAL"),
                             ("__module_object__", "INTERNAL"), ("__name__", "INTERNAL"),
                             ("__qualname__", "INTERNAL"), ("__slots__", "INTERNAL")]),
    ("frobj", "frame", [("f_back", "INTERNAL"), ("f_trace", "ATTR"),
                        ("f_extra_locals", "ATTR"), ("f_locals_cache", "INTERNAL")]),
]


def rules(minor, free_threaded):
    """What is not a number in the headers: how this version behaves (cpython-internals.md)."""
    layout = {
        # a free-threaded build (Py_GIL_DISABLED): no GIL unless enabled at run time, mimalloc
        "free_threaded": "true" if free_threaded else "false",
        # 3.12+: PyLongObject has lv_tag; 3.11: a signed ob_size
        "long_has_lv_tag": "true" if minor >= 12 else "false",
        # how instances keep attributes without a dict (layout.h, enum py_values_kind)
        "values_kind": {11: "PY_VALUES_311", 12: "PY_VALUES_312"}.get(minor, "PY_VALUES_313"),
        # 3.14+: f_executable is a _PyStackRef (tagged)
        "fr_code_tagged": "true" if minor >= 14 else "false",
    }
    heap = {
        # sys.getsizeof adds the GC head to static types (3.11, 3.12)
        "static_type_presize": "true" if minor <= 12 else "false",
        # 3.14+: the frame keeps a stack pointer, not a slot count
        "fr_stackpointer": "true" if minor >= 14 else "false",
    }
    return layout, heap


def parse(text):
    out = {}
    for line in text.splitlines():
        m = re.fullmatch(r"(\S+) (-?\d+)", line.strip())
        if not m:
            raise ValueError(f"unexpected line {line!r}")
        if m.group(1) in out:
            raise ValueError(f"{m.group(1)} printed twice")
        out[m.group(1)] = int(m.group(2))
    return out


def interpreter_info(exe):
    """(prefix, "3.X.Y") of an interpreter; "3.X.Yt" for a free-threaded build."""
    cp = subprocess.run([exe, "-c", "import sys, sysconfig; print(sys.prefix); "
                         "print('%d.%d.%d' % sys.version_info[:3] + "
                         "('t' if sysconfig.get_config_var('Py_GIL_DISABLED') else ''))"],
                        capture_output=True, text=True, timeout=60, check=True)
    prefix, version = cp.stdout.split()
    return Path(prefix), version


def variant(version):
    """"13" or "13t" from "3.13.0" or "3.13.15t": the suffix of the file and its tables."""
    return version.split(".")[1] + ("t" if version.endswith("t") else "")


def minor_of(version):
    return int(version.split(".")[1].rstrip("t"))


def include_dir(exe):
    """The interpreter's include/python3.X (python3.Xt) with its internal headers, or None."""
    prefix, version = interpreter_info(exe)
    inc = prefix / "include" / ("python3." + variant(version))
    if (inc / "Python.h").is_file() and (inc / "internal" / "pycore_frame.h").is_file():
        return inc
    return None


def header_numbers(exe):
    """What layout_offsets.c prints for the interpreter's headers; None if it has none."""
    inc = include_dir(exe)
    if inc is None:
        return None
    cc = os.environ.get("CC") or shutil.which("cc") or "gcc"
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "layout_offsets"
        # -idirafter: a Debian root's pyconfig.h includes <x86_64-linux-gnu/python3.X/pyconfig.h>
        # under its own usr/include, which must not shadow this system's libc headers.
        cp = subprocess.run([cc, "-std=c11", f"-I{inc}", f"-I{inc / 'internal'}",
                             f"-idirafter{inc.parent}", str(HEADER_TOOL), "-o", str(out)],
                            capture_output=True, text=True, timeout=300)
        if cp.returncode != 0:
            raise RuntimeError(f"compiling {HEADER_TOOL.name} against {inc}:\n{cp.stderr}")
        cp = subprocess.run([str(out)], capture_output=True, text=True, timeout=60, check=True)
    return parse(cp.stdout)


def live_numbers(exe):
    cp = subprocess.run([exe, "-c", LIVE_PROBE], capture_output=True, text=True, timeout=60,
                        check=True)
    return parse(cp.stdout)


def numbers(exe):
    """Every number of exe's version: its headers' and the live probe's; None: no headers."""
    headers = header_numbers(exe)
    return None if headers is None else {**headers, **live_numbers(exe)}


def out_path(version):
    return OUT_DIR / f"layout_3{variant(version)}.c"


def render(version, n):
    """The C file for Python `version` ("3.X.Y", "3.X.Yt") from its numbers n."""
    minor, var = minor_of(version), variant(version)
    if n["minor"] != minor or n["free_threaded"] != var.endswith("t"):
        raise ValueError(f"the headers are 3.{n['minor']}'s (free-threaded: "
                         f"{n['free_threaded']}), the interpreter {version}")
    lay_rules, heap_rules = rules(minor, var.endswith("t"))
    block = minor >= 13
    build = "t" if var.endswith("t") else ""
    lines = [
        f"/* Generated by tests/tools/gen_layouts.py from CPython {version}'s headers: "
        "do not edit. */",
        f"/* Python 3.{minor}{build}'s layout: offsetof, sizeof and enum values from the headers;",
        " * classmethod and property measured in the interpreter. Regenerate rather than edit;",
        " * tests/e2e/test_layout_headers.py checks it. */",
        '#include "cpython/layout_tables.h"',
        "",
    ]
    name = f"py_layout_fixed_3{var}" if block else f"py_layout_3{var}"
    lines.append(f"const struct py_layout {name} = {{")
    lines.append(f"    .minor = {minor},")
    if block:
        lines.append("    .from_debug_offsets = true,")
    for k in LAYOUT_U64 + LAYOUT_INT:
        if block and (f"dbg.{k}" in n or k in ("gil_locked", "gil_last_holder")):
            continue  # from the target's block
        lines.append(f"    .{k} = {n[k]},")
    for k, v in lay_rules.items():
        lines.append(f"    .{k} = {v},")
    lines.append("};")
    lines.append("")
    if block:
        fields = [k[4:] for k in n if k.startswith("dbg.") and not k.endswith(".within")
                  and k not in ("dbg.sizeof", "dbg.gil_start", "dbg.gil_locked", "dbg.gil_holder")]
        lines.append(f"const size_t py_dbg_size_3{var} = {n['dbg.sizeof']};")
        lines.append(f"const struct py_dbg_field py_dbg_fields_3{var}[] = {{")
        for f in fields:
            lines.append(f"    PY_DBG({f}, {n['dbg.' + f]}, {n['dbg.' + f + '.within']}),")
        lines.append("};")
        lines.append(f"const size_t py_dbg_nfields_3{var} = "
                     f"sizeof(py_dbg_fields_3{var}) / sizeof(py_dbg_fields_3{var}[0]);")
        lines.append(f"const int py_dbg_gil_3{var}[PY_DBG_GIL_INDICES] = "
                     f"{{{n['dbg.gil_start']}, {n['dbg.gil_locked']}, {n['dbg.gil_holder']}}};")
        lines.append("")
    lines.append(f"const struct py_heap_layout py_heap_layout_3{var} = {{")
    lines.append(f"    .minor = {minor},")
    lines.append(f"    .gc_generations = {{{n['gc_gen0']}, {n['gc_gen1']}, {n['gc_gen2']}}},")
    for k in HEAP_U64 + HEAP_INT:
        lines.append(f"    .{k} = {n[k]},")
    for k, v in heap_rules.items():
        lines.append(f"    .{k} = {v},")
    for field, kind, refs in REFS:
        present = [(label, edge) for label, edge in refs if f"ref.{kind}.{label}" in n]
        lines.append(f"    .{field} = {{")
        for label, edge in present:
            off = n[f"ref.{kind}.{label}"]
            if off < 0:
                raise ValueError(f"ref.{kind}.{label} was not found in the interpreter")
            lines.append(f'        PY_REF({off}, {edge}, ".{label}"),')
        lines.append("    },")
    lines.append("};")
    return "\n".join(lines) + "\n"


def release_pythons():
    sys.path.insert(0, str(REPO / "tests" / "e2e"))
    from pythons import find_free_threaded, find_pythons
    found = {**find_pythons(), **find_free_threaded()}
    return [exe for v, exe in sorted(found.items()) if int(v.split(".")[1].rstrip("t")) >= 11]


def check(exe):
    n = numbers(exe)
    if n is None:
        print(f"SKIP {exe}: no headers")
        return 0
    _, version = interpreter_info(exe)
    want = render(version, n)
    path = out_path(version)
    have = path.read_text() if path.is_file() else ""
    # The first line names the patch release that made the file; another patch release of the
    # same minor version (Debian's 3.11.2 against pyenv's 3.11.7) must give the same numbers.
    if want.split("\n", 1)[1] != have.split("\n", 1)[-1]:
        sys.stdout.writelines(difflib.unified_diff(have.splitlines(True), want.splitlines(True),
                                                   str(path), f"from {exe} ({version})"))
        print(f"DIFFERS {exe} {version}: {path.relative_to(REPO)}")
        return 1
    print(f"OK {exe} {version}: {path.relative_to(REPO)}")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--python", action="append", default=[])
    ap.add_argument("--check", metavar="EXE")
    args = ap.parse_args()
    if args.check:
        return check(args.check)
    for exe in args.python or release_pythons():
        n = numbers(exe)
        if n is None:
            print(f"{exe}: no headers, skipped", file=sys.stderr)
            continue
        _, version = interpreter_info(exe)
        path = out_path(version)
        path.write_text(render(version, n))
        print(f"wrote {path.relative_to(REPO)} from {version}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
