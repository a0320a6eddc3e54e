"""scry.start() in a program not started by `scry run`: loads scry's agent into this running
interpreter and starts `scry collect` beside it, which writes the profile as this process ends
(to SCRY_OUTFILE, default scry-profile.json in the current directory): the agent's exit path
waits for it, so the file is complete once the process has exited.

Only CPU time is profiled this way: the agent's memory hooks must be in place from the
process's first allocation (LD_PRELOAD, which `scry run` gives), so memory is off and the
profile has no memory columns; run the program with `scry run --off` for memory too."""

import ctypes
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

_AGENT = "libscry-agent.so"


def _candidates():
    here = Path(__file__).resolve().parent
    yield here / "_bin"                  # the wheel
    yield here.parent.parent / "build"   # a checkout: python/scry -> build/
    found = shutil.which("scry")
    if found:
        yield Path(found).resolve().parent


def find_tools():
    """(the scry binary, the agent library); SCRY_BIN names the binary (the agent is next to
    it)."""
    given = os.environ.get("SCRY_BIN")
    dirs = [Path(given).resolve().parent] if given else list(_candidates())
    for d in dirs:
        if (d / "scry").is_file() and (d / _AGENT).is_file():
            return d / "scry", d / _AGENT
    raise RuntimeError("scry: cannot find the scry binary and its agent (" + _AGENT + "); "
                       "install scry with pip, or set SCRY_BIN to the scry binary")


def load_agent(settings=None, outfile=None):
    """Loads the agent; settings: SCRY_* variables that replace the defaults below; outfile:
    where the profile goes (default: SCRY_OUTFILE, else scry-profile.json)."""
    if os.environ.get("SCRY_PART_DIR"):
        raise RuntimeError("scry: this process runs under scry run, but its agent is not at "
                           "work here (a process scry run does not profile?)")
    binary, agent = find_tools()
    part_dir = tempfile.mkdtemp(prefix="scry-parts-")
    main = sys.modules.get("__main__")
    program = os.path.abspath(getattr(main, "__file__", "") or sys.argv[0] or "")
    program_path = os.path.dirname(program) if os.path.isfile(program) else os.getcwd()
    env = {
        "SCRY_PART_DIR": part_dir,
        "SCRY_PROGRAM_PATH": program_path,
        "SCRY_MEMORY": "0",
        "SCRY_SNAPSHOT_INTERVAL": "0",
        **(settings or {}),
    }
    outfile = outfile or os.environ.get("SCRY_OUTFILE", "scry-profile.json")
    collect = subprocess.Popen([str(binary), "collect", "--pid", str(os.getpid()),
                                "--part-dir", part_dir, "-o", os.path.abspath(outfile),
                                "--program", program, "--program-path", program_path],
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               start_new_session=True, close_fds=True)
    # The agent waits at exit for this collect to write the profile (bounded, 10 s): the file is
    # complete when this process has exited, for a script that reads it at once.
    env["SCRY_COLLECT_PID"] = str(collect.pid)
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        lib = ctypes.CDLL(str(agent), mode=ctypes.RTLD_GLOBAL)
    finally:
        # The agent read its settings: the program's children are not profiled by it.
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    _route_os_exit(lib)
    return lib


def _route_os_exit(lib):
    """os._exit through the agent's _exit: loaded this late, the agent's interposer is not the
    _exit the interpreter already bound (scry run preloads it), and os._exit would end the
    process with its part unwritten and no wait for the profile."""
    agent_exit = lib._exit
    agent_exit.argtypes = [ctypes.c_int]
    agent_exit.restype = None
    plain = os._exit

    def _exit(status):
        if not isinstance(status, int):
            return plain(status)  # its own TypeError, as before
        agent_exit(status & 0xFF)  # what the kernel keeps of it

    _exit.__doc__ = plain.__doc__
    os._exit = _exit
