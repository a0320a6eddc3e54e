"""scry, a profiler for Python programs. This package carries the `scry` command (also
`python -m scry`): the C binary and its agent, under scry/_bin. In a program:
scry.start()/scry.stop(), `with scry.profiling():` and @scry.profile control what is profiled."""

from ._version import version as _version
from ._control import is_profiling, profile, profiling, start, stop

__version__ = _version()


def load_ipython_extension(ipython):
    """%load_ext scry: the magics %scrun and %%scry (scry.magics: IPython is imported there, only
    when a notebook loads the extension)."""
    from scry.magics import load
    load(ipython)


__all__ = ["start", "stop", "profiling", "profile", "is_profiling"]
