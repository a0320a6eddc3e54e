"""scry: a profiler for Python. `scry run prog.py` profiles a program; in the program,
scry.start()/scry.stop(), `with scry.profiling():` and @scry.profile control what is profiled."""

from scry._control import is_profiling, profile, profiling, start, stop

__all__ = ["start", "stop", "profiling", "profile", "is_profiling"]
