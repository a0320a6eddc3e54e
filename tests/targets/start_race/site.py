"""Stands in for the interpreter's own site module (run with `python -X frozen_modules=off` and
PYTHONPATH set to this directory; tests/e2e/test_heap_at_exit_start.py), then runs the real one.

It makes the start-up race of `scry run`'s agent happen every time: the agent's audit hook
(cpython.run_*, src/agent/pyhooks.c on_audit) registers the atexit callback before the
collector thread's pending call (install()) has run, and install() runs inside that
registration's import of atexit. A loaded machine does this now and then, by keeping the
collector off the CPU through the interpreter's start.

The gate is builtins.__import__, which PyImport_ImportModule (the agent's imports) goes through:
- while site runs, the agent's imports of atexit and os fail: install() registers nothing and
  is scheduled again, as when it comes after the program has started;
- the first such import from no Python frame at all is the audit hook's: it sleeps half a second
  without the GIL, so the collector schedules install() again, which then runs at the next
  bytecode of that import.
An import the agent makes is told from the program's own by its arguments: PyImport_Import
passes an empty list as fromlist, `import os` passes None.
"""
import builtins
import sys
import time

_real_import = builtins.__import__
_released = []


def _gate(name, globals=None, locals=None, fromlist=(), level=0):
    if (name in ("atexit", "os") and type(fromlist) is list and not fromlist and level == 0
            and not _released):
        try:
            sys._getframe(1)
        except ValueError:  # no Python frame: the audit hook's import
            _released.append(True)
            time.sleep(0.5)
        else:  # install() while site runs
            raise ImportError("scry start_race: not yet")
    return _real_import(name, globals, locals, fromlist, level)


builtins.__import__ = _gate
_version = "%d.%d" % sys.version_info[:2]
for _dir in sys.path:
    if not _dir.rstrip("/").endswith(("/python" + _version, "/python" + _version + "t")):
        continue
    try:
        with open(_dir + "/site.py") as _f:
            _source = _f.read()
    except OSError:
        continue
    __file__ = _dir + "/site.py"
    exec(compile(_source, __file__, "exec"), globals())
    break
else:
    raise ImportError("scry start_race: the interpreter's own site.py was not found")
