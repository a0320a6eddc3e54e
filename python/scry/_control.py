"""In-code control of scry: scry.start(), scry.stop(), scry.profiling() and @scry.profile.

Under `scry run` these talk to the agent that scry preloaded into this process (through ctypes,
two functions the agent exports): start/stop turn sampling on and off in this process, and
profile() records a function so that the profile reports only decorated functions. The
agent also gives the program a builtin `profile`, so `@profile` works without an import.

Without `scry run`, a plain `python app.py` that calls scry.start() loads the agent into the
running interpreter and profiles its CPU time (not its native memory: that needs the agent
from the process's start, so it is off; the profile says so); the profile is written when the
program ends, to scry-profile.json or SCRY_OUTFILE.
"""

import os

_agent = None  # the agent's functions, once found


def _bind(lib):
    import ctypes  # here, not at import: the `scry` command imports this package too

    try:
        profiling = lib.scry_agent_profiling
        register = lib.scry_agent_profile_function
    except AttributeError:
        return None
    profiling.argtypes = [ctypes.c_int]
    profiling.restype = ctypes.c_int
    register.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int]
    register.restype = ctypes.c_int
    return profiling, register


def _preloaded():
    """The agent's functions when scry run preloaded it here and it is at work; else None."""
    global _agent
    if _agent is None:
        import ctypes

        found = _bind(ctypes.CDLL(None))
        if found is not None and found[0](-1) >= 0:
            _agent = found
    return _agent


def _load(**how):
    """Loads the agent into this interpreter (plain python) and returns its functions; how:
    _standalone.load_agent's settings."""
    from scry import _standalone
    found = _bind(_standalone.load_agent(**how))
    if found is None or found[0](-1) < 0:
        raise RuntimeError("scry: the agent did not start in this process (set SCRY_LOG=debug "
                           "to see why)")
    global _agent
    _agent = found
    for fn in _pending:
        _register(fn)
    _pending.clear()
    return _agent


def is_profiling():
    """True while scry samples this process."""
    agent = _preloaded()
    return bool(agent and agent[0](-1) == 1)


def start():
    """Turns profiling on in this process (under scry run --off, or after stop()). In a plain
    python run, loads scry's agent first and profiles CPU time from here on."""
    agent = _preloaded() or _load()
    agent[0](1)


def stop():
    """Turns profiling off in this process; what ran meanwhile is not in the profile."""
    agent = _preloaded()
    if agent:
        agent[0](0)


class profiling:
    """`with scry.profiling(): ...` profiles the block (and leaves the state as it was)."""

    def __enter__(self):
        agent = _preloaded() or _load()
        self._was = agent[0](1)
        return self

    def __exit__(self, *exc):
        if self._was == 0:
            _agent[0](0)
        return False


_pending = []  # functions decorated before the agent was loaded


def _register(fn):
    code = fn.__code__
    _agent[1](os.fsencode(code.co_filename), code.co_qualname.encode("utf-8", "replace"),
              code.co_firstlineno)


def profile(fn):
    """@scry.profile: when any function is decorated, the profile reports only decorated
    functions (their share of the whole program's time); time and memory in undecorated code
    they call are their calling line's. Returns fn unchanged."""
    if not hasattr(fn, "__code__"):
        return fn
    if _preloaded():
        _register(fn)
    else:
        _pending.append(fn)
    return fn
