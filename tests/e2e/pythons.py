"""Which CPython interpreters the end-to-end tests run against.

find_pythons() -> {"3.11": "/root/.pyenv/versions/3.11.7/bin/python3", ...}: one interpreter per
minor version. With $SCRY_PYTHONS set (a colon-separated list of interpreter paths) exactly those
are used, each keyed by the version it reports; otherwise pyenv's release builds are used
($(pyenv root)/versions/3.X.Y/bin/python3, the highest patch release of each minor version).
Debug ("-dbg"), free-threaded ("t") and other non-release names are not picked from pyenv.

find_free_threaded() -> {"3.13t": "/root/.pyenv/versions/3.13.15t/bin/python3.13t"}: the
free-threaded builds, kept apart so that only the suites that work on them pick them up
(pyenv's 3.X.Yt, or those $SCRY_PYTHONS names that report Py_GIL_DISABLED).
"""

import functools
import glob
import os
import re
import subprocess

_RELEASE = re.compile(r"^3\.(\d+)\.(\d+)(t?)$")


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
    """The "3.X" an interpreter reports ("3.Xt" for a free-threaded build), or None if it does
    not run."""
    try:
        cp = subprocess.run([exe, "-c", "import sys, sysconfig; print('%d.%d' % "
                             "sys.version_info[:2] + ('t' if sysconfig.get_config_var("
                             "'Py_GIL_DISABLED') else ''))"],
                            capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    out = cp.stdout.strip()
    return out if cp.returncode == 0 and re.fullmatch(r"\d+\.\d+t?", out) else None


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
    for version_dir in glob.glob(os.path.join(_pyenv_root(), "versions", "3.*")):
        m = _RELEASE.match(os.path.basename(version_dir))
        if not m:
            continue
        minor, patch, t = int(m.group(1)), int(m.group(2)), m.group(3)
        # a free-threaded build's bin/python3 may be the default build installed alongside
        exe = os.path.join(version_dir, "bin", f"python3.{minor}t" if t else "python3")
        key = f"3.{minor}{t}"
        if os.access(exe, os.X_OK) and (key not in best or patch > best[key][0]):
            best[key] = (patch, exe)
    for key in sorted(best):
        found[key] = best[key][1]
    return found


def find_pythons():
    """Maps "3.X" to the path of an interpreter of that version (see the module docstring)."""
    return {v: exe for v, exe in _find(os.environ.get("SCRY_PYTHONS")).items()
            if not v.endswith("t")}


def find_free_threaded():
    """Maps "3.Xt" to the path of a free-threaded interpreter of that version."""
    return {v: exe for v, exe in _find(os.environ.get("SCRY_PYTHONS")).items()
            if v.endswith("t")}


if __name__ == "__main__":
    for v, exe in {**find_pythons(), **find_free_threaded()}.items():
        print(v, exe)
