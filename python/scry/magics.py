"""scry's IPython magics (%load_ext scry): `%scrun [options] statement` profiles one statement and
`%%scry [options]` a cell, and show the profile inline: scry's browser page in the output (by
default), or with --cli the terminal view as text. docs/jupyter.md says what the numbers mean.

The cell's source is written to a private folder (one per kernel, removed when it ends) as
cell-N.py and compiled under that name, so that the profile's lines are the cell's lines and the
views can read them. Around the run, two checkpoints of scry's agent; `scry collect` makes the
cell's profile of what happened between them (scry._window_pytest's window, shared with the
pytest plugin).

In the kernel "Python 3 (scry)" (`scry kernel install`) the agent has been there since the kernel
started: CPU time and memory. In any other kernel the agent is loaded at the first profiled cell
and profiles CPU time only (memory needs hooks from the process's first allocation); the first
output says how to get memory.
"""

import argparse
import ast
import atexit
import html
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.display import HTML, display

from scry import _control, _standalone, _window_pytest

MEMORY_NOTE = ("scry: CPU time only: this kernel was not started under scry, and memory needs "
               "scry's hooks from the kernel's start. Run `scry kernel install` (once), then pick "
               "the kernel \"Python 3 (scry)\" for memory too.")
MEMORY_OFF_NOTE = ("scry: CPU time only: this kernel's scry run profiles no memory (--cpu-only); "
                   "the kernel \"Python 3 (scry)\" of `scry kernel install` does.")
SESSION_SUFFIX = ".scry-profile.json"  # as scry._kernel's


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(f"{self.prog}: {message}\n{self.format_usage().strip()}")

    def exit(self, status=0, message=None):
        if message:
            raise UsageError(message)
        raise UsageError(self.format_help())


def _parser(prog, what):
    p = _Parser(prog=prog, add_help=True,
                description=f"Profiles {what} with scry: CPU time split into Python, native "
                            f"and system time per line, and memory per line in the kernel "
                            f"\"Python 3 (scry)\" (scry kernel install).")
    shown = p.add_mutually_exclusive_group()
    shown.add_argument("--html", dest="cli", action="store_false",
                       help="show scry's browser page in the output (the default)")
    shown.add_argument("--cli", action="store_true",
                       help="show the terminal view as text (source lines with their figures)")
    p.set_defaults(cli=False)
    p.add_argument("--cpu-percent-threshold", type=float, default=1.0, metavar="P",
                   help="hide lines under P%% of the time (default 1; 0 shows every line)")
    p.add_argument("--height", type=int, default=600, metavar="PX",
                   help="the height of the page's frame in pixels (default 600)")
    p.add_argument("-o", "--outfile", metavar="FILE",
                   help="also write the profile (scry run's JSON) to FILE")
    return p


VALUED = ("--cpu-percent-threshold", "--height", "-o", "--outfile")  # options with a value


def _leading_options(line):
    """%scrun's line: (the options' text, the statement as typed after them)."""
    rest = line.strip()
    taken = []
    while rest.startswith("-"):
        word, _, rest = rest.partition(" ")
        rest = rest.lstrip()
        taken.append(word)
        if word == "--":  # the statement itself starts with "-"
            break
        if word in VALUED and rest:
            value, _, rest = rest.partition(" ")
            rest = rest.lstrip()
            taken.append(value)
    return " ".join(taken), rest


def _profile_options(p, line):
    try:
        words = shlex.split(line)
    except ValueError as e:
        raise UsageError(f"{p.prog}: {e}") from None
    return words


@magics_class
class ScryMagics(Magics):
    def __init__(self, shell):
        super().__init__(shell)
        self._agent = None
        self._late = False  # the agent was loaded by the magics, not preloaded by scry run
        self._dir = None
        self._memory_noted = False
        self._cell = _parser("%%scry", "the cell")
        self._line = _parser("%scrun", "one statement (after the options)")

    # ---- the magics ----------------------------------------------------------------------------

    @cell_magic
    def scry(self, line, cell):
        """%%scry [--cli|--html] [--cpu-percent-threshold P] [--height PX] [-o FILE]: profile
        the cell."""
        opts = self._cell.parse_args(_profile_options(self._cell, line))
        return self._run(self.shell.transform_cell(cell), cell, opts)

    @line_magic
    def scrun(self, line):
        """%scrun [--cli|--html] [--cpu-percent-threshold P] [--height PX] [-o FILE] statement:
        profile one statement; an expression's value is the magic's."""
        words, statement = _leading_options(line)
        opts = self._line.parse_args(_profile_options(self._line, words))
        if not statement:
            raise UsageError("%scrun: give a statement to profile: %scrun sum(range(10**6))")
        return self._run(statement + "\n", statement + "\n", opts)

    # ---- one window ----------------------------------------------------------------------------

    def _folder(self):
        if self._dir is None:
            self._dir = tempfile.mkdtemp(prefix="scry-cells-")  # 0700, ours
            atexit.register(shutil.rmtree, self._dir, True)
        return self._dir

    def _session_profile(self):
        """Where the whole kernel's profile goes when the agent is loaded late: next to the
        kernel's connection file, as the scry kernel's (scry._kernel)."""
        try:
            from ipykernel.connect import get_connection_file
            return get_connection_file() + SESSION_SUFFIX
        except Exception:  # not an ipykernel (IPython in a terminal): nothing to keep
            return os.devnull

    def _the_agent(self):
        if self._agent is None:
            self._agent = _window_pytest.Agent.find()
            if self._agent is None:
                # The file filter is fixed when the agent starts: "/" is every file that is not
                # the standard library or an installed package: cells and the notebook's modules.
                # Off until a cell turns it on, as in the scry kernel; scry's own package is
                # not the user's code.
                own = os.path.dirname(os.path.abspath(_control.__file__)) + os.sep
                self._late = True
                try:
                    _control._load(settings={"SCRY_PROFILE_ONLY": "/", "SCRY_OFF": "1",
                                             "SCRY_PROFILE_EXCLUDE": own},
                                   outfile=self._session_profile())
                except RuntimeError as e:
                    raise UsageError(str(e)) from None
                self._agent = _window_pytest.Agent.find()
                if self._agent is None:
                    raise UsageError("scry: the agent loaded into this kernel does not profile "
                                     "it (set SCRY_LOG=debug to see why)")
        return self._agent

    def _new_name(self):
        n = self.shell.execution_count
        base = os.path.join(self._folder(), f"cell-{n}")
        k = 0
        name = base
        while os.path.exists(name + ".py"):
            k += 1
            name = f"{base}-{k}"
        return name

    def _run(self, code, typed, opts):
        agent = self._the_agent()
        name = self._new_name()
        # What the user typed, unless IPython's rewriting (a %magic line) moved lines.
        source = typed if typed.count("\n") == code.count("\n") else code
        fd = os.open(name + ".py", os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(source)
        body, last = _split_last_expression(code, name + ".py")
        ns = self.shell.user_ns
        window = _window_pytest.Window(agent, self._folder(), os.path.basename(name))
        was = _control.is_profiling()
        _control.start()
        failed = True
        try:
            if body is not None:
                exec(body, ns)
            value = eval(last, ns) if last is not None else None
            failed = False
            if code.rstrip().endswith(";"):  # as IPython: a trailing ';' hides the value
                value = None
        finally:
            if not was:
                _control.stop()
            # The profile of what ran, even when it raised (the exception then goes on).
            try:
                self._show(window, name, opts)
            except Exception as e:
                if not failed:
                    raise
                print(f"scry: no profile of the cell: {e}", file=sys.stderr)
        return value

    def _show(self, window, name, opts):
        binary, _ = _standalone.find_tools()
        doc = window.profile(binary, self._folder(), name + ".py")
        # The program is the cell; the kernel's command line (its args) is not the cell's.
        doc["args"] = []
        # The cell's own lines first in the views, whatever took more time (a function of an
        # earlier cell): in a 600 px frame they are what the user asked about.
        doc["first_file"] = name + ".py"
        _fill_cell_sources(doc)
        profile = name + ".json"
        text = json.dumps(doc)
        with open(profile, "w", encoding="utf-8") as f:
            f.write(text)
        if opts.outfile:
            # As scry's output files: never through a symbolic link, readable by its owner only.
            fd = os.open(os.path.expanduser(opts.outfile),
                         os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
        if not window.agent.totals().get("memory") and not self._memory_noted:
            self._memory_noted = True
            print(MEMORY_NOTE if self._late else MEMORY_OFF_NOTE)
        threshold = ["--cpu-percent-threshold", repr(opts.cpu_percent_threshold)]
        if opts.cli:
            print(_view(binary, profile, "--cli", "--no-color", *threshold), end="")
            return
        page = name + ".html"
        _view(binary, profile, "--html", "-o", page, *threshold)
        with open(page, encoding="utf-8") as f:
            doc = f.read()
        # The page is self-contained (no request leaves it); a sandboxed frame keeps its
        # scripts away from the notebook's page.
        style = f"width:100%;height:{max(opts.height, 100)}px;border:1px solid #ccc"
        display(HTML(f'<div class="scry-profile"><iframe sandbox="allow-scripts" '
                     f'title="scry profile" style="{style}" '
                     f'srcdoc="{html.escape(doc, quote=True)}"></iframe></div>'))


def _fill_cell_sources(doc):
    """The source of lines whose file is not on disk from linecache, where IPython keeps the
    cells it ran without the magic (ipykernel names them ipykernel_PID/NNNN.py in the temporary
    folder, a file it never writes): a function defined there shows its code."""
    import linecache

    for fname, detail in (doc.get("files") or {}).items():
        if not isinstance(detail, dict) or os.path.exists(fname):
            continue
        if not linecache.getlines(fname):
            continue
        for entry in detail.get("lines") or []:
            n = entry.get("lineno")
            if isinstance(n, int) and not entry.get("line"):
                entry["line"] = linecache.getline(fname, n).rstrip("\n")


def _view(binary, profile, *options):
    """`scry view OPTIONS profile`'s standard output."""
    cp = subprocess.run([str(binary), "view", *options, str(profile)], stdin=subprocess.DEVNULL,
                        capture_output=True, text=True, errors="replace")
    if cp.returncode != 0:
        raise RuntimeError(f"scry view failed: {cp.stderr.strip()}")
    return cp.stdout


def _split_last_expression(code, filename):
    """(the code before the last statement, that statement as an expression) when the last is an
    expression, as IPython shows its value; else (all of it, None). Both compiled as filename."""
    tree = ast.parse(code, filename, "exec")
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last = ast.Expression(tree.body.pop().value)
        body = compile(tree, filename, "exec") if tree.body else None
        return body, compile(last, filename, "eval")
    return compile(tree, filename, "exec"), None


def load(ipython):
    ipython.register_magics(ScryMagics)
