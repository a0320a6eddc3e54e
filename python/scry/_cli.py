"""The `scry` command of the Python package and `python -m scry`: both become the bundled C binary
(scry/_bin/scry, which finds its agent next to itself) with the same arguments, by exec, so that
its output, exit status and signals are the binary's own."""

import os
import signal
import sys


def binary():
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "_bin", "scry")


def main(prog="scry"):
    """prog: the name the binary's messages give the command (its argv[0]): "python -m scry"
    from __main__, so that a suggestion such as `python -m scry run prog.py` can be pasted."""
    exe = binary()
    # Python ignores SIGPIPE and SIGXFSZ at start-up and an ignored signal stays ignored across
    # exec: put back the defaults (as subprocess does for its children), so that scry and the
    # programs it runs start as they would from the shell.
    for name in ("SIGPIPE", "SIGXFSZ"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
    # `scry run` profiles the program with the interpreter the package is installed in.
    if sys.executable:
        os.environ.setdefault("SCRY_PYTHON", sys.executable)
    try:
        os.execv(exe, [prog, *sys.argv[1:]])
    except OSError as e:
        # As the binary reports an error (its io_error code, exit status 1).
        sys.stderr.write(f"scry: error: cannot run the scry package's binary {exe}: "
                         f"{e.strerror} [io_error]\nhint: install the package from its wheel "
                         f"(make wheel) or with pip install . in a checkout\n")
        return 1
