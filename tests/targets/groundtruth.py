"""Helpers shared by the target programs: how a target states its own ground truth.

A target marks the lines tests care about with `# @name` comments and reports its stacks the way
Python itself sees them (co_qualname, co_filename, f_lineno), innermost first."""

import time


def marker_lines(path):
    """Maps each `# @name` marker in the file at path to the line numbers that carry it."""
    lines = {}
    with open(path, encoding="utf-8") as f:
        for number, text in enumerate(f, 1):
            code, sep, comment = text.partition("# @")
            if sep and code.strip():
                lines.setdefault(comment.strip(), []).append(number)
    return lines


def stack_of(frame):
    """The stack from frame outwards, as dicts with function, file and line."""
    frames = []
    while frame is not None:
        code = frame.f_code
        frames.append({"function": code.co_qualname, "file": code.co_filename,
                       "line": frame.f_lineno})
        frame = frame.f_back
    return frames


def thread_state(native_id):
    """The /proc state letter of one of this process's threads (S: asleep in the kernel)."""
    with open(f"/proc/self/task/{native_id}/stat", encoding="ascii") as f:
        return f.read().rpartition(")")[2].split()[0]


def wait_asleep(native_ids, on_last_path, deadline_s=20.0):
    """Waits until on_last_path() holds (the threads have said they are on their way to the
    call they block in) and every thread in native_ids sleeps in the kernel (state S); False
    at the deadline. Only then may another thread's frames be walked: a thread that pops a
    frame while this one follows f_back leaves it reading freed memory, which a free-threaded
    build does not prevent (3.13t crashed so under load)."""
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if on_last_path() and all(thread_state(n) == "S" for n in native_ids):
            return True
        time.sleep(0.01)
    return False


def build_facts():
    """What the ready line says about the interpreter's build: free-threaded (Py_GIL_DISABLED)
    and whether it runs with a GIL now (a free-threaded build has none unless PYTHON_GIL=1)."""
    import sys
    import sysconfig
    return {"free_threaded": bool(sysconfig.get_config_var("Py_GIL_DISABLED")),
            "gil": getattr(sys, "_is_gil_enabled", lambda: True)()}
