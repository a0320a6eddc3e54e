"""`scry kernel install`: writes the Jupyter kernel spec "Python 3 (scry)", a kernel started under
scry's agent with profiling off, so that %%scry and %scrun (scry.magics) profile memory as well as
CPU time. The C command (src/cli/cmd_kernel.c) checks its options and runs this module with the
chosen interpreter: `python -m scry._kernel install --scry /abs/scry [--user|--sys-prefix|--prefix
P] [--name N] [--display-name D]`. The spec is installed with jupyter_client (a dependency of
ipykernel), into the folders Jupyter itself searches.

The kernel runs `scry run --off --no-view --profile-only / ... -m ipykernel_launcher`: its file
filter is set at start, and "/" makes it any file that is not the standard library or an installed
package, so the cells' own files (written by the magics to a private folder) and the notebook's
modules are profiled wherever they lie. When the kernel ends, scry run writes the profile of every
cell profiled in it next to the kernel's connection file (Jupyter's runtime folder, private).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

SESSION_SUFFIX = ".scry-profile.json"  # after the connection file's name: the whole session


def _fail(message, code, hint):
    sys.stderr.write(f"scry: error: {message} [{code}]\nhint: {hint}\n")
    return 1


def own_package(lent):
    """The folder of the scry package the kernel's Python imports (None: it cannot), as it runs
    without the path the scry command lent this process (lent: PYTHONPATH's first entry)."""
    env = dict(os.environ)
    if lent:
        rest = env.get("PYTHONPATH", "").split(os.pathsep, 1)[1:]
        env["PYTHONPATH"] = rest[0] if rest else ""
    probe = ("import importlib.util, os; s = importlib.util.find_spec('scry'); "
             "print(os.path.dirname(os.path.abspath(s.origin)) if s and s.origin else '')")
    cp = subprocess.run([sys.executable, "-c", probe], env=env, cwd="/", capture_output=True,
                        text=True)
    found = cp.stdout.strip() if cp.returncode == 0 else ""
    return found or None


def kernel_spec(scry, python, display_name, package):
    """The kernel.json document. package: scry's own package (not the user's code: a checkout's
    python/scry is outside the system libraries), excluded from the profile."""
    exclude = ["--profile-exclude", package + os.sep] if package else []
    return {
        "argv": [scry, "run", "--off", "--no-view", "--profile-only", "/", *exclude,
                 "-o", "{connection_file}" + SESSION_SUFFIX, "--python", python,
                 "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": display_name,
        "language": "python",
        "metadata": {"debugger": False, "scry": True},
    }


def install(args):
    try:
        import ipykernel  # noqa: F401  (the kernel the spec starts)
        from jupyter_client.kernelspec import KernelSpecManager
    except ImportError as e:
        return _fail(f"{sys.executable} cannot import {e.name}: the scry kernel runs ipykernel",
                     "not_found", f"{sys.executable} -m pip install ipykernel (or name another "
                     f"interpreter with --python)")
    package = own_package(args.package_path)
    where = {"user": args.user, "prefix": args.prefix}
    if args.sys_prefix:
        where["prefix"] = sys.prefix
    with tempfile.TemporaryDirectory(prefix="scry-kernel-") as tmp:
        os.chmod(tmp, 0o755)  # copied as it is: a shared prefix's kernels are for everyone
        with open(os.path.join(tmp, "kernel.json"), "w", encoding="utf-8") as f:
            json.dump(kernel_spec(args.scry, sys.executable, args.display_name, package), f,
                      indent=1)
        try:
            dest = KernelSpecManager().install_kernel_spec(tmp, args.name, **where)
        except (OSError, ValueError) as e:
            return _fail(f"cannot install the kernel spec {args.name!r}: {e}", "io_error",
                         "install it for yourself (--user, the default) or into this "
                         "environment (--sys-prefix)")
    print(f"scry: installed the kernel \"{args.display_name}\" ({args.name}) in {dest}")
    if package is None:
        print(f"scry: note: {sys.executable} cannot import scry's package, which %load_ext scry "
              f"needs in the kernel: {sys.executable} -m pip install scry")
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(prog="scry kernel")
    sub = p.add_subparsers(dest="action", required=True)
    i = sub.add_parser("install")
    i.add_argument("--scry", required=True)
    i.add_argument("--package-path")
    i.add_argument("--name", default="scry")
    i.add_argument("--display-name", default="Python 3 (scry)")
    g = i.add_mutually_exclusive_group()
    g.add_argument("--user", action="store_true")
    g.add_argument("--sys-prefix", action="store_true")
    g.add_argument("--prefix")
    args = p.parse_args(argv)
    if not (args.sys_prefix or args.prefix):
        args.user = True
    return install(args)


if __name__ == "__main__":
    sys.exit(main())
