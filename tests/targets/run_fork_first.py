"""Target for `scry run`: forks at its very first line, before a profiler's Python-level fork
hooks could be in place. CPython 3.12+ warns on stderr (DeprecationWarning, shown for __main__)
when os.fork() finds other threads in the process; this program has none, so neither run may
print anything but its own line."""
import os
pid = os.fork()
if pid == 0:
    os._exit(7)
_, status = os.waitpid(pid, 0)
print(f"child exited with {os.waitstatus_to_exitcode(status)}")
