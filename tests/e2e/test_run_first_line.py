"""The agent's Python hooks (the allocator wrappers, the atexit callback, builtins.profile, the
fork hooks) are there when the program's first line runs, whatever the agent's collector thread
is doing: `scry run`'s agent adds a C audit hook before the interpreter starts, which installs
them at Python's cpython.run_file event, in the main thread, and then leaves the runtime's list
of hooks (while any C hook is listed, every audited call such as id() pays for it).

Before, only the collector thread scheduled them (a pending call), once the interpreter had
imported os: on a loaded machine it could run tens of milliseconds late, and a program run with
-S, which never imports os, never got them (its allocations had no line). The -S run here is
the deterministic case of that; on every installed Python, 3.13t included."""

import subprocess

from conftest import SCRY, TARGETS, Ran, program_env, run_plain
from test_run_memory import W_MB, describe, detail_of, load_memory_profile, mem_line, near

FREE_THREADED = True  # conftest: python_exe includes 3.13t

TARGET = TARGETS / "first_line_alloc.py"


def marked_line(path, marker):
    lines = path.read_text().splitlines()
    return 1 + next(i for i, t in enumerate(lines) if t.rstrip().endswith(f"# @{marker}"))


def test_first_line_allocation_with_dash_S(python_exe, tmp_path):
    # A user's wrapper that runs the interpreter with -S (no site, so no os at start-up).
    wrapper = tmp_path / "python-S"
    wrapper.write_text(f'#!/bin/sh\nexec "{python_exe}" -S "$@"\n')
    wrapper.chmod(0o755)
    plain = run_plain(str(wrapper), "first_line_alloc.py")
    assert (plain.returncode, plain.stdout) == (0, b"67108864\n"), plain.describe()
    outfile = tmp_path / "p.json"
    argv = [str(SCRY), "run", "--no-view", "--python", str(wrapper), "-o", str(outfile),
            str(TARGET)]
    env = {**program_env(), "SCRY_LOG": "debug"}
    cp = subprocess.run(argv, capture_output=True, env=env, timeout=120)
    ran = Ran(argv, cp.returncode, cp.stdout, cp.stderr, profile_path=outfile)
    assert (cp.returncode, cp.stdout) == (0, b"67108864\n"), ran.describe()
    log = cp.stderr.decode(errors="replace")
    assert "agent: Python hooks installed at cpython.run_file" in log, log
    # The hook found its place in the runtime's list, and so left it at the program's start.
    assert "start-up audit hook added (its list head found)" in log, log
    assert "the start-up audit hook stays listed" not in log, log
    detail = detail_of(load_memory_profile(ran), TARGET, ran)
    e = mem_line(detail, marked_line(TARGET, "first"))
    assert near(e["n_malloc_mb"], 64, 0, W_MB), describe(e)
    assert e["n_python_fraction"] >= 0.9, describe(e)
