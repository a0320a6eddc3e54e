"""End-to-end tests of @profile with undecorated callees (issue 27 item 4): time spent in code
that a decorated function calls belongs to the decorated function's calling line, as Scalene and
line_profiler report it; time with no decorated function on the stack is in no line. On every
installed Python 3.11+.

The ground truth is tests/targets/profile_callees.py: each piece of work is a counting loop,
timed with time.thread_time() around it, written by the target to a file.
"""

import importlib.util
import json
import subprocess
from pathlib import Path

from conftest import REPO, SCRY, TARGETS, Ran, file_detail, load_profile, program_env

FREE_THREADED = True  # conftest: python_exe includes 3.13t

_spec = importlib.util.spec_from_file_location("groundtruth", TARGETS / "groundtruth.py")
groundtruth = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(groundtruth)

TARGET = TARGETS / "profile_callees.py"
MARKERS = groundtruth.marker_lines(TARGET)
POINTS = 10           # a line's share of its function, in points, against the truth
CPU_TOLERANCE = 0.10  # a function's profiled CPU time against its own thread_time()
SAMPLE_SLACK = 0.03   # plus 3 samples' worth at the default 10 ms


def run(python, tmp_path, mode, options=()):
    env = program_env()
    env["PYTHONPATH"] = str(REPO / "python")
    truth_file = tmp_path / "truth.json"
    out = tmp_path / "p.json"
    argv = [str(a) for a in (SCRY, "run", "--no-view", "--python", python, "-o", out, *options,
                             TARGET, mode, truth_file)]
    cp = subprocess.run(argv, capture_output=True, env=env, timeout=120)
    ran = Ran(argv, cp.returncode, cp.stdout, cp.stderr, profile_path=Path(out))
    assert ran.returncode == 0, ran.describe()
    return load_profile(ran), json.loads(truth_file.read_text())


def cpu_seconds(profile, entry):
    return (entry["n_cpu_percent_python"] + entry["n_cpu_percent_c"]) * \
        profile["sampled_time_sec"] / 100


def functions(profile):
    detail = file_detail(profile, TARGET)
    assert detail is not None, f"the target is not in the profile: {list(profile['files'])}"
    return {f["line"]: f for f in detail["functions"]}


def line_seconds(profile, lineno):
    detail = file_detail(profile, TARGET)
    return sum(cpu_seconds(profile, e) for e in detail["lines"] if e["lineno"] == lineno)


def assert_cpu(got, want, what):
    assert abs(got - want) <= CPU_TOLERANCE * want + SAMPLE_SLACK, (
        f"{what}: {got:.3f} s of CPU in the profile, its thread measured {want:.3f} s")


def assert_share(profile, func, marker, want_sec, whole_sec):
    """The marker's line holds want_sec of its function's whole_sec, within POINTS points."""
    line = MARKERS[marker][0]
    got = 100 * line_seconds(profile, line) / cpu_seconds(profile, func)
    want = 100 * want_sec / whole_sec
    assert abs(got - want) <= POINTS, (
        f"line {line} ({marker}) holds {got:.1f}% of {func['line']}(), the truth is {want:.1f}%; "
        f"lines: {file_detail(profile, TARGET)['lines']}")


def test_calling_line_gets_the_undecorated_helpers_time(python_exe, tmp_path):
    profile, truth = run(python_exe, tmp_path, "calling")
    funcs = functions(profile)
    assert set(funcs) == {"calling"}, list(funcs)
    assert_cpu(cpu_seconds(profile, funcs["calling"]), truth["calling"], "calling()")
    assert_share(profile, funcs["calling"], "calling_helper", truth["calling_helper"],
                 truth["calling"])


def test_decorated_function_whose_work_is_all_in_a_helper_is_reported(python_exe, tmp_path):
    profile, truth = run(python_exe, tmp_path, "all_in")
    assert profile["files"], "no file in the profile"
    funcs = functions(profile)
    assert set(funcs) == {"all_in"}, list(funcs)
    whole = cpu_seconds(profile, funcs["all_in"])
    assert_cpu(whole, truth["all_in"], "all_in()")
    line = MARKERS["all_in_helper"][0]
    assert line_seconds(profile, line) >= 0.9 * whole, file_detail(profile, TARGET)["lines"]


def test_undecorated_caller_is_left_out_and_the_decorated_callee_keeps_its_helper(python_exe,
                                                                                tmp_path):
    profile, truth = run(python_exe, tmp_path, "caller")
    funcs = functions(profile)
    assert set(funcs) == {"inner"}, list(funcs)
    assert_cpu(cpu_seconds(profile, funcs["inner"]), truth["inner"], "inner()")
    # Only inner()'s own lines: caller()'s loop and calling line are no line of the profile.
    first = funcs["inner"]["lineno"]
    last = MARKERS["inner_helper"][0] + 2
    lines = {e["lineno"] for e in file_detail(profile, TARGET)["lines"] if e["n_samples"] > 0}
    assert lines and all(first <= ln <= last for ln in lines), (lines, first, last)
    assert_share(profile, funcs["inner"], "inner_helper", truth["inner_helper"], truth["inner"])
    # caller()'s own 0.5 s is still the program's: inner()'s share is of everything sampled.
    assert cpu_seconds(profile, funcs["inner"]) <= 0.75 * profile["sampled_time_sec"], (
        funcs["inner"], profile["sampled_time_sec"])


def test_memory_of_an_undecorated_callee_is_the_calling_lines(python_exe, tmp_path):
    profile, _ = run(python_exe, tmp_path, "memory")
    funcs = functions(profile)
    assert set(funcs) == {"keep"}, list(funcs)
    mb = {e["lineno"]: e.get("n_malloc_mb", 0) for e in file_detail(profile, TARGET)["lines"]
          if e.get("n_malloc_mb")}
    # 40 MiB kept by grow(), to within the sampling window (1 MiB), all on keep()'s call of it.
    line = MARKERS["keep_grow"][0]
    assert abs(mb.get(line, 0) - 40) <= 2 and set(mb) == {line}, (line, mb)
