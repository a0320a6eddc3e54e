"""Which CPython interpreters the end-to-end tests run against.

find_pythons() -> {"3.11": "/root/.pyenv/versions/3.11.7/bin/python3", ...}: one interpreter per
minor version. With $SCRY_PYTHONS set (a colon-separated list of interpreter paths) exactly those
are used, each keyed by the version it reports; otherwise pyenv's release builds are used
($(pyenv root)/versions/3.X.Y/bin/python3, the highest patch release of each minor version).
Debug ("-dbg"), free-threaded ("t") and other non-release names are not picked from pyenv.
"""

import functools
import glob
import os
import re
import subprocess

_RELEASE = re.compile(r"^3\.(\d+)\.(\d+)$")


def _pyenv_root():
    root = os.environ.get("PYENV_ROOT")
    if root:
        return root
    try:
        cp = subprocess.run(["pyenv", "root"], capture_output=True, text=True, timeout=10)
        if cp.returncode == 0 and cp.stdout.strip():
            return cp.stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        pass
    return os.path.expanduser("~/.pyenv")


def _version_of(exe):
    """The "3.X" an interpreter reports, or None if it does not run."""
    try:
        cp = subprocess.run([exe, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                            capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    out = cp.stdout.strip()
    return out if cp.returncode == 0 and re.fullmatch(r"\d+\.\d+", out) else None


@functools.lru_cache(maxsize=1)
def _find(env_value):
    found = {}
    if env_value is not None:
        for exe in filter(None, env_value.split(":")):
            version = _version_of(exe)
            if version is None:
                raise RuntimeError(f"SCRY_PYTHONS: {exe} is not a working Python interpreter")
            found.setdefault(version, exe)
        return found
    best = {}
    for exe in glob.glob(os.path.join(_pyenv_root(), "versions", "3.*", "bin", "python3")):
        name = os.path.basename(os.path.dirname(os.path.dirname(exe)))
        m = _RELEASE.match(name)
        if not m or not os.access(exe, os.X_OK):
            continue
        minor, patch = int(m.group(1)), int(m.group(2))
        if minor not in best or patch > best[minor][0]:
            best[minor] = (patch, exe)
    for minor in sorted(best):
        found[f"3.{minor}"] = best[minor][1]
    return found


def find_pythons():
    """Maps "3.X" to the path of an interpreter of that version (see the module docstring)."""
    return dict(_find(os.environ.get("SCRY_PYTHONS")))


if __name__ == "__main__":
    for v, exe in find_pythons().items():
        print(v, exe)
