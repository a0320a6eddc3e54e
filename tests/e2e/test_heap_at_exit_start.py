"""`scry run --heap-at-exit` when the agent's start-up race happens (tests/targets/start_race):
its atexit callback must be registered once, and the program must end as soon as its snapshot
is taken.

The race: the audit hook that installs the agent's Python side at the program's first line
registers the callback, and the import of atexit it makes runs bytecode, so the collector's
pending install() could run inside it and register the callback too. At exit the second one
waited again for scry run's snapshot, which scry run had already taken: the program, and scry
run with it, hung for the 600 s of the agent's wait (once in some hundreds of runs on a loaded
machine; every time here). On every installed interpreter.
"""

import subprocess

from conftest import SCRY, TARGETS

FREE_THREADED = True  # conftest: python_exe includes 3.13t

RACE = TARGETS / "start_race"


def test_callback_registered_once(python_exe, tmp_path):
    wrapper = tmp_path / "python"
    # site.py here is used only with the frozen modules off (a frozen site is found first).
    wrapper.write_text(f'#!/bin/sh\nexec "{python_exe}" -X frozen_modules=off "$@"\n')
    wrapper.chmod(0o755)
    heap = tmp_path / "exit.heap"
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(RACE)}
    # Without scry: the interpreter's own callbacks (3.11 has one).
    plain = subprocess.run([str(wrapper), str(RACE / "atexit_count.py")], capture_output=True,
                           text=True, timeout=60, env=env)
    assert plain.returncode == 0, plain.stderr
    cp = subprocess.run([str(SCRY), "run", "--no-view", "--python", str(wrapper), "-o",
                         str(tmp_path / "p.json"), "--heap-at-exit", str(heap),
                         str(RACE / "atexit_count.py")],
                        capture_output=True, text=True, timeout=60, env=env)
    assert cp.returncode == 0, cp.stderr
    # scry's callback, once
    assert cp.stdout.split() == [str(int(plain.stdout) + 1)], (plain.stdout, cp.stdout, cp.stderr)
    assert heap.stat().st_size > 0 and (tmp_path / "p.json").stat().st_size > 0
