"""The setuptools side of the Python package (pyproject.toml): no second build system. build_py
runs `make` (the one build: build/scry, build/libscry-agent.so; the viewer's files are compiled
into the binary) and puts the binary, the agent and libunwind (which the agent dlopens for
--stacks and finds next to itself through its $ORIGIN run path) under scry/_bin; bdist_wheel tags
the wheel py3-none-PLATFORM, since nothing in it depends on the Python ABI. The C libraries the
binary links stay system ones here (`pip install .`). `make wheel` sets SCRY_WHEEL_BINARIES to the
manylinux2014 build's directory (scripts/build-manylinux.sh: glibc 2.17, the libraries linked in
statically), whose three files are taken instead, and auditwheel tags the wheel."""

import os
import shutil
import subprocess
import sys
from importlib.util import module_from_spec, spec_from_file_location
from pathlib import Path

from setuptools import Distribution, setup
from setuptools.command.bdist_wheel import bdist_wheel
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
BUILD = ROOT / os.environ.get("BUILD", "build")  # the Makefile's BUILD, passed on by `make wheel`
STAGE = BUILD / "python"  # setuptools' own build and egg-info directories


def _version_module():
    spec = spec_from_file_location("scry_version", ROOT / "python" / "scry" / "_version.py")
    mod = module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _libunwind():
    """The libunwind.so.8 the agent was compiled against (libunwind-dev's), or None."""
    cc = os.environ.get("CC", "cc")
    out = subprocess.run([cc, "-print-file-name=libunwind.so.8"], capture_output=True,
                         text=True, check=True).stdout.strip()
    return Path(out).resolve() if os.path.isabs(out) and os.path.isfile(out) else None


class BuildWithMake(build_py):
    def run(self):
        super().run()
        dest = Path(self.build_lib) / "scry" / "_bin"
        dest.mkdir(parents=True, exist_ok=True)
        prebuilt = os.environ.get("SCRY_WHEEL_BINARIES")
        if prebuilt:
            # `make wheel`: the manylinux2014 build's scry, agent and libunwind
            # (scripts/build-manylinux.sh), which link no library beyond glibc.
            for name in ("scry", "libscry-agent.so", "libunwind.so.8"):
                shutil.copy2(Path(prebuilt) / name, dest / name)
            return
        jobs = str(os.cpu_count() or 1)
        subprocess.run(["make", "-C", str(ROOT), f"BUILD={BUILD}", "-j", jobs, "all"], check=True)
        for name in ("scry", "libscry-agent.so"):
            shutil.copy2(BUILD / name, dest / name)
        unwind = _libunwind()
        if unwind is None:
            sys.stderr.write("scry: libunwind.so.8 not found: the package's `scry run --stacks` "
                             "will show no native frames unless the machine has libunwind\n")
        else:
            shutil.copy2(unwind, dest / "libunwind.so.8")


class BinaryDistribution(Distribution):
    """Binaries inside: installed under platlib, into a platform wheel."""

    def has_ext_modules(self):
        return True


class PlatformWheel(bdist_wheel):
    def get_tag(self):
        return "py3", "none", super().get_tag()[2]


STAGE.mkdir(parents=True, exist_ok=True)
setup(
    version=_version_module().from_header(ROOT),
    distclass=BinaryDistribution,
    cmdclass={"build_py": BuildWithMake, "bdist_wheel": PlatformWheel},
    options={"build": {"build_base": str(STAGE / "build")},
             "egg_info": {"egg_base": str(STAGE)}},
)
