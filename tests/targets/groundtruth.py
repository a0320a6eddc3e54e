"""Helpers shared by the target programs: how a target states its own ground truth.

A target marks the lines tests care about with `# @name` comments and reports its stacks the way
Python itself sees them (co_qualname, co_filename, f_lineno), innermost first."""


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


def build_facts():
    """What the ready line says about the interpreter's build: free-threaded (Py_GIL_DISABLED)
    and whether it runs with a GIL now (a free-threaded build has none unless PYTHON_GIL=1)."""
    import sys
    import sysconfig
    return {"free_threaded": bool(sysconfig.get_config_var("Py_GIL_DISABLED")),
            "gil": getattr(sys, "_is_gil_enabled", lambda: True)()}
