"""scry, a profiler for Python programs. This package carries the `scry` command (also
`python -m scry`): the C binary and its agent, under scry/_bin."""

from ._version import version as _version

__version__ = _version()
