"""The agent preloaded into profiled programs (build/libscry-agent.so) carries only what it uses:
no libelf (readelf -d, ldd), and none of the heap walker, the ptrace (pid) reader, the core reader,
the ELF file reader or the ELF-based runtime finder (nm over all its symbols, local ones included:
the agent is built with hidden visibility and -g). The names to look for are taken from the
objects that define them (build/obj/...), so a renamed function is still caught.
"""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("SCRY_BUILD", REPO / "build"))
AGENT = BUILD / "libscry-agent.so"

# Objects of scry's commands that must stay out of the agent.
EXCLUDED_OBJECTS = [
    "src/cpython/heap_walk.o", "src/cpython/heap_ctypes.o", "src/cpython/memcache.o",
    "src/cpython/redact.o", "src/cpython/runtime_elf.o",
    "src/platform/linux/pid_reader.o", "src/reader/core_reader.o", "src/reader/elf_image.o",
]
# The same by name, in case the objects are not built where the test looks.
EXCLUDED_NAMES = {"hw_walk", "hc_walk", "mc_init", "rd_open_pid", "rd_pid_exited",
                  "rd_open_core", "elf_open", "elf_symbol", "py_runtime_open"}
# What the agent must contain (proves nm sees its local symbols).
REQUIRED_NAMES = {"py_runtime_open_self", "self_symbols_find", "rd_open_self"}


def tool(name):
    path = shutil.which(name)
    if not path:
        pytest.skip(f"{name} is not installed")
    return path


def agent():
    if not AGENT.is_file():
        pytest.fail(f"{AGENT} is missing: run `make`", pytrace=False)
    return str(AGENT)


def symbols(path, *flags):
    cp = subprocess.run([tool("nm"), *flags, path], capture_output=True, text=True, timeout=60)
    assert cp.returncode == 0, cp.stderr
    names = set()
    for line in cp.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 2:
            names.add(parts[-1])
    return names


def test_agent_needs_no_libelf():
    needed = subprocess.run([tool("readelf"), "-d", agent()], capture_output=True, text=True,
                            timeout=60)
    assert needed.returncode == 0, needed.stderr
    libs = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", needed.stdout)
    assert libs, "readelf -d shows no NEEDED entry: not the agent's dynamic section?"
    assert not [lib for lib in libs if "libelf" in lib], libs
    ldd = subprocess.run([tool("ldd"), agent()], capture_output=True, text=True, timeout=60)
    assert ldd.returncode == 0, ldd.stderr
    assert "libc.so" in ldd.stdout
    assert "libelf" not in ldd.stdout, ldd.stdout


def test_agent_has_no_heap_ptrace_or_core_code():
    have = symbols(agent())
    missing = REQUIRED_NAMES - have
    assert not missing, f"nm does not show the agent's own symbols {missing}: stripped?"
    forbidden = set(EXCLUDED_NAMES)
    for rel in EXCLUDED_OBJECTS:
        obj = BUILD / "obj" / rel
        if obj.is_file():
            defined = symbols(str(obj), "--defined-only", "--extern-only")
            assert defined, f"{obj} defines nothing?"
            forbidden |= defined
    leaked = sorted(forbidden & have)
    assert not leaked, f"the agent carries code of scry's commands: {leaked}"
    # And it never calls ptrace (the pid reader's) nor libelf.
    undefined = symbols(agent(), "--undefined-only", "-D")
    assert not [s for s in undefined if s.startswith(("ptrace", "elf_", "gelf_"))], undefined
