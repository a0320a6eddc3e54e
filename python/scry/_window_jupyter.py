"""A window of a process's profile: what it did between two checkpoints of scry's agent (the cell a
magic runs). The agent exports the checkpoints (docs/agent-protocol.md, "Checkpoints"): each one
settles the statistics and writes them so far as a part document to a new file; `scry collect
--part AFTER --since BEFORE` writes the profile of what happened between the two.

Under `scry run` (the scry kernel) the agent is preloaded, memory included; in a plain process it
is loaded late by the package (CPU time only: its memory hooks must be there from the first
allocation).
"""

import ctypes
import json
import os
import subprocess

from scry import _control, _standalone

TOTALS_SIZE = 1024  # the agent's totals fit (its contract)


class Agent:
    """The agent's window functions, bound through ctypes."""

    def __init__(self, lib):
        try:
            self._checkpoint = lib.scry_agent_checkpoint
            self._totals = lib.scry_agent_totals
        except AttributeError:
            raise RuntimeError("scry: this scry agent has no checkpoints (scry_agent_checkpoint): "
                               "it is older than the package; install one scry") from None
        self._checkpoint.argtypes = [ctypes.c_char_p]
        self._checkpoint.restype = ctypes.c_int
        self._totals.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
        self._totals.restype = ctypes.c_int

    def checkpoint(self, path):
        """Writes the process's statistics so far to the new file path (its folder exists)."""
        if self._checkpoint(os.fsencode(path)) != 0:
            e = ctypes.get_errno()
            raise OSError(e, f"scry: the agent could not write a checkpoint to {path}: "
                             f"{os.strerror(e) if e else 'not profiled here'}")

    def totals(self):
        """The process's totals so far (a dict: the agent's JSON object)."""
        buf = ctypes.create_string_buffer(TOTALS_SIZE)
        n = self._totals(buf, TOTALS_SIZE)
        if n < 0:
            raise OSError(ctypes.get_errno(), "scry: the agent could not give its totals")
        return json.loads(buf.raw[:n].decode("utf-8"))


def preloaded():
    """The agent when `scry run` preloaded it into this process; else None."""
    if _control._preloaded() is None:
        return None
    return Agent(ctypes.CDLL(None, use_errno=True))


def load(settings, outfile):
    """Loads the agent into this process (not started by scry run) with these SCRY_* settings;
    `scry collect` writes the whole process's profile to outfile when it ends."""
    _control._load(settings=settings, outfile=outfile)
    return Agent(ctypes.CDLL(None, use_errno=True))


def _tool_env():
    """The environment for scry's own commands: without the kernel's agent and run settings
    (scry run preloads the agent into its program's children; the commands are not Python)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCRY_") or k == "SCRY_LOG"}
    kept = [p for p in env.get("LD_PRELOAD", "").split(":")
            if p and os.path.basename(p) != _standalone._AGENT]
    if kept:
        env["LD_PRELOAD"] = ":".join(kept)
    else:
        env.pop("LD_PRELOAD", None)
    return env


def collect(before, after, outfile, program, program_path):
    """Writes the profile of what the process did between the checkpoints before and after to
    outfile; returns None, or scry collect's complaint."""
    binary, _ = _standalone.find_tools()
    cp = subprocess.run([str(binary), "collect", "--part", str(after), "--since", str(before),
                         "-o", str(outfile), "--program", str(program),
                         "--program-path", str(program_path)],
                        stdin=subprocess.DEVNULL, capture_output=True, text=True,
                        errors="replace", env=_tool_env())
    return None if cp.returncode == 0 else (cp.stderr.strip() or f"exit status {cp.returncode}")


def view(profile, *options):
    """`scry view OPTIONS profile`: (exit status, standard output, standard error)."""
    binary, _ = _standalone.find_tools()
    cp = subprocess.run([str(binary), "view", *options, str(profile)], stdin=subprocess.DEVNULL,
                        capture_output=True, text=True, errors="replace", env=_tool_env())
    return cp.returncode, cp.stdout, cp.stderr
