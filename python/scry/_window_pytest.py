"""A window of a profiled process (a test's call): what the agent that `scry run` preloaded
counted between two moments, through the functions it exports for this (ctypes): totals (CPU
seconds, allocated bytes, footprint, peak since a mark) at both ends, and, when asked, the
window's own profile (two checkpoint parts, `scry collect --part AFTER --since BEFORE`).

The numbers are the agent's: nothing here measures anything itself. Shared by the pytest
plugin and the Jupyter magics (scry.magics, which also use it with the agent the package loads
into a plain kernel)."""

import json
import os
import subprocess

MB = 1048576.0
TOTALS_SIZE = 1024  # the agent's totals document fits in 1 KiB
COLLECT_TIMEOUT_S = 120


class Agent:
    """The preloaded agent's window functions in this process."""

    def __init__(self, lib):
        import ctypes  # only when used: the `scry` command imports this package too

        self._totals = lib.scry_agent_totals
        self._totals.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
        self._totals.restype = ctypes.c_int
        self._mark_peak = lib.scry_agent_mark_peak
        self._mark_peak.argtypes = []
        self._mark_peak.restype = ctypes.c_int
        self._checkpoint = lib.scry_agent_checkpoint
        self._checkpoint.argtypes = [ctypes.c_char_p]
        self._checkpoint.restype = ctypes.c_int
        self._buf = ctypes.create_string_buffer(TOTALS_SIZE)

    @classmethod
    def find(cls):
        """The agent's functions when scry run preloaded it into this process and it profiles
        it; else None (a plain python, or a process the agent does not profile)."""
        import ctypes

        try:
            agent = cls(ctypes.CDLL(None, use_errno=True))
        except AttributeError:
            return None
        return agent if agent.totals() is not None else None

    def totals(self):
        """The agent's totals so far (docs/pytest.md), or None when it does not profile here."""
        n = self._totals(self._buf, TOTALS_SIZE)
        if n < 0:
            return None
        return json.loads(self._buf.raw[:n].decode("utf-8"))

    def mark_peak(self):
        if self._mark_peak() != 0:
            raise OSError("scry: the agent could not restart its peak")

    def checkpoint(self, path):
        """Writes the process's statistics so far as a part file at `path` (a new file)."""
        if self._checkpoint(os.fsencode(path)) != 0:
            import ctypes

            raise OSError(ctypes.get_errno(), f"scry: the agent could not write a checkpoint to {path}")


class Window:
    """From construction to end(): the totals' differences; with a part directory, also the
    checkpoint that lets profile() collect the window's own profile."""

    def __init__(self, agent, part_dir=None, name="window"):
        self.agent = agent
        self.before = self.after = None
        if part_dir:
            self.before = os.path.join(part_dir, f"{name}.before.json")
            self.after = os.path.join(part_dir, f"{name}.after.json")
            agent.checkpoint(self.before)
        agent.mark_peak()
        self.start = agent.totals()

    def end(self):
        """The window's numbers: CPU seconds (python, native: on the CPU; system: off it), and,
        when memory is profiled, the peak footprint over the window's start, the net change of
        the footprint and the bytes allocated, in MB."""
        a, b = self.start, self.agent.totals()
        out = {
            "profiling": bool(a["profiling"] and b["profiling"]),
            "memory": bool(a["memory"] and b["memory"]),
            "python_s": b["python_sec"] - a["python_sec"],
            "native_s": b["native_sec"] - a["native_sec"],
            "system_s": b["system_sec"] - a["system_sec"],
            "pid": os.getpid(),
        }
        out["cpu_s"] = out["python_s"] + out["native_s"]
        if out["memory"]:
            out["peak_mb"] = max(0, b["peak_since_mark_bytes"] - a["footprint_bytes"]) / MB
            out["net_mb"] = (b["footprint_bytes"] - a["footprint_bytes"]) / MB
            out["alloc_mb"] = (b["malloc_bytes"] - a["malloc_bytes"]) / MB
        return out

    def profile(self, scry, program_path, program):
        """The window's profile (scry-profile.json's schema): a checkpoint now, then `scry
        collect` of the two. Needs the part directory given at the start."""
        self.agent.checkpoint(self.after)
        out = self.after[: -len(".after.json")] + ".profile.json"
        argv = [str(scry), "collect", "--part", self.after, "--since", self.before, "-o", out,
                "--program-path", program_path, "--program", program]
        try:
            cp = subprocess.run(argv, capture_output=True, text=True, errors="replace",
                                stdin=subprocess.DEVNULL, timeout=COLLECT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"scry collect did not finish in {COLLECT_TIMEOUT_S} s")
        if cp.returncode != 0:
            raise RuntimeError(f"scry collect failed (exit status {cp.returncode}): "
                               f"{cp.stderr.strip()}")
        with open(out, encoding="utf-8") as f:
            return json.load(f)


def lines(profile):
    """(file, line entry) of every line of a profile."""
    for name, detail in profile.get("files", {}).items():
        for entry in detail.get("lines", []):
            yield name, entry


def top_allocating_line(profile):
    """(file, lineno, MB) of the line that allocated most in the profile, or None."""
    best = max(lines(profile), key=lambda fe: fe[1].get("n_malloc_mb", 0), default=None)
    if best is None or best[1].get("n_malloc_mb", 0) <= 0:
        return None
    return best[0], best[1]["lineno"], best[1]["n_malloc_mb"]


def top_cpu_line(profile):
    """(file, lineno, seconds on the CPU: python + native) of the busiest line, or None."""
    total = profile.get("sampled_time_sec", 0)

    def cpu(entry):
        return (entry.get("n_cpu_percent_python", 0) + entry.get("n_cpu_percent_c", 0)) / 100

    best = max(lines(profile), key=lambda fe: cpu(fe[1]), default=None)
    if best is None or cpu(best[1]) <= 0:
        return None
    return best[0], best[1]["lineno"], cpu(best[1]) * total


def leaks(profile):
    """[(file, lineno, likelihood, MB/s)] of the lines the profile flags as likely leaks."""
    found = []
    for name, detail in profile.get("files", {}).items():
        for lineno, leak in detail.get("leaks", {}).items():
            found.append((name, int(lineno), leak.get("likelihood", 0),
                          leak.get("velocity_mb_s", 0)))
    return found
