"""End-to-end tests of what `scry run` must not change, and of the processes it must follow.

Each program under tests/targets/run_*.py is run twice, without scry and under
`scry run --no-view`, in the same environment: its stdout, its stderr (scry's own `scry: ` lines
at the end aside) and its exit status must be exactly the same, a profile must be written however
the program ended (exit, sys.exit, exception, os._exit, SIGTERM, SIGINT, from itself or from
outside), parse as JSON, and hold the program's work. Programs with children (os.fork,
multiprocessing pools with fork and spawn, subprocess running Python) must get the children's
lines merged into the profile, and `processes` counting them. On every installed Python
3.11-3.13.
"""

import importlib.util
import json
import signal
import subprocess
import sys

import pytest

from conftest import (TARGETS, assert_same_behaviour, describe_entry, file_detail,
                      function_entry, line_entry, line_total, load_profile,
                      preferred_python, run_plain, run_profiled, split_of)

FREE_THREADED = True  # conftest: python_exe includes 3.13t

_spec = importlib.util.spec_from_file_location("groundtruth", TARGETS / "groundtruth.py")
groundtruth = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(groundtruth)


def both(python, script, tmp_path, args=(), **kwargs):
    """(run without scry, run with scry, profile or None): the program run both ways."""
    plain = run_plain(python, script, args, **kwargs)
    profiled = run_profiled(python, script, args, outfile=tmp_path / "profile.json", **kwargs)
    return plain, profiled


def marked_entry(profile, script, marker):
    """(file entry, line entry) of the line marked `# @marker` in tests/targets/script."""
    path = TARGETS / script
    (lineno,) = groundtruth.marker_lines(path)[marker]
    detail = file_detail(profile, path)
    assert detail is not None, f"{path} is not among the profile's files: {list(profile['files'])}"
    return detail, line_entry(detail, lineno)


def assert_line_has_time(profile, script, marker, min_percent, min_samples=20):
    """The marked line got samples and at least min_percent of all sampled time."""
    _, entry = marked_entry(profile, script, marker)
    assert entry["n_samples"] >= min_samples and line_total(entry) >= min_percent, (
        f"{script} @{marker}: {describe_entry(entry)}; want >= {min_samples} samples and "
        f">= {min_percent}% of the time (profile: {profile['n_samples']} samples, "
        f"{profile['processes']} processes)")
    return entry


# ---- signals and timers the program uses itself ---------------------------------------------


def timer_results(ran):
    """(the lines before the last, the last line's JSON) of run_itimers.py's stdout."""
    lines = ran.stdout.decode().splitlines()
    assert lines, ran.describe()
    return lines[:-1], json.loads(lines[-1])


# The kernel's tick (CONFIG_HZ=250 on the machines measured: reference/agent-sampling.md): the
# CPU clocks of ITIMER_PROF and ITIMER_VIRTUAL advance a whole tick at each tick that finds the
# process on a CPU.
KERNEL_TICK_S = 0.004


def check_ticks(result, signame, clock, where):
    """The handler got one tick per interval of the clock the timer runs on, as the kernel keeps
    it (the kernel may merge a few ticks, never invent them). On a loaded machine that differs
    from the clocks the target reads, in two ways it measures too: SIGALRMs that come while the
    thread waits for a CPU merge into one (so at least the wall time less those waits,
    /proc/thread-self/schedstat's run delay, yields ticks), and the CPU clocks of SIGPROF and
    SIGVTALRM, charged a tick at a time, may charge each time slice up to one tick more than
    it ran (so at most the CPU time plus a tick a slice). On an idle machine (no waits, a few
    slices) both bounds are the clock itself."""
    interval = result["interval"]
    if clock == "wall":
        low, high = result["wall"] - result["delay"], result["wall"]
    else:
        low, high = result[clock], result[clock] + result["slices"] * KERNEL_TICK_S
    low, high = low / interval, high / interval
    got = result["ticks"][signame]
    assert 0.8 * low - 2 <= got <= 1.05 * high + 3, (
        f"{where}: {got} {signame} ticks in {result[clock]:.3f} s of {clock} time, want "
        f"{low:.0f}-{high:.0f} ({result['delay']:.3f} s waiting for a CPU, "
        f"{result['slices']} time slices)")


@pytest.mark.parametrize("mode,timers", [
    ("real", [("SIGALRM", "wall")]),
    ("all", [("SIGALRM", "wall"), ("SIGPROF", "cpu"), ("SIGVTALRM", "user")]),
], ids=["sigalrm", "sigalrm-sigprof-sigvtalrm"])
def test_program_keeps_its_own_itimers(python_exe, tmp_path, mode, timers):
    """Each run's ticks are checked against its own clocks, as the kernel keeps them. The ratio
    of the two runs' rates, checked before, moved with the load each run happened to get (on a
    heavily loaded machine SIGPROF ran 0-29% ahead of the CPU time, from one run to the next)."""
    plain, profiled = both(python_exe, "run_itimers.py", tmp_path, [mode])
    assert plain.returncode == 0, plain.describe()
    plain_lines, plain_result = timer_results(plain)
    prof_lines, prof_result = timer_results(profiled)
    assert prof_lines == plain_lines, (prof_lines, plain_lines)
    assert profiled.returncode == plain.returncode and profiled.stderr == plain.stderr, (
        f"without scry:\n{plain.describe()}\nwith scry:\n{profiled.describe()}")
    for signame, clock in timers:
        check_ticks(plain_result, signame, clock, "without scry")
        check_ticks(prof_result, signame, clock, "with scry")
    if mode == "all":
        # SIGPROF's and SIGVTALRM's clocks are charged at the same ticks, SIGVTALRM's with user
        # time only: their counts differ by the system time, however loaded the machine (the
        # bound that check_ticks puts above each grows with the load's time slices).
        for where, result in (("without scry", plain_result), ("with scry", prof_result)):
            ticks, system = result["ticks"], (result["cpu"] - result["user"]) / result["interval"]
            assert -2 <= ticks["SIGPROF"] - ticks["SIGVTALRM"] <= 1.05 * max(system, 0) + 3, (
                f"{where}: {ticks['SIGPROF']} SIGPROF and {ticks['SIGVTALRM']} SIGVTALRM ticks, "
                f"{system * result['interval']:.3f} s of system time")
    for signame in {"SIGALRM", "SIGPROF", "SIGVTALRM"} - {s for s, _ in timers}:
        assert prof_result["ticks"][signame] == 0, prof_result
    profile = load_profile(profiled)
    assert_line_has_time(profile, "run_itimers.py", "work", 50)


# ---- however the program ends -----------------------------------------------------------------


@pytest.mark.parametrize("mode,status", [
    ("normal", 0), ("sys_exit", 3), ("os_exit", 7), ("exception", 1),
    ("sigterm_self", -signal.SIGTERM), ("sigint_self", -signal.SIGINT),
])
def test_program_ending(python_exe, tmp_path, mode, status):
    plain, profiled = both(python_exe, "run_endings.py", tmp_path, [mode])
    assert plain.returncode == status, f"the target itself misbehaves: {plain.describe()}"
    assert_same_behaviour(plain, profiled)
    if mode == "exception":
        assert b"ValueError: even value" in plain.stderr, plain.describe()
    if mode == "sigint_self":
        assert b"KeyboardInterrupt" in plain.stderr, plain.describe()
    profile = load_profile(profiled)
    assert profile["processes"] == 1, profile["processes"]
    assert_line_has_time(profile, "run_endings.py", "work", 50)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_program_killed_from_outside(python_exe, tmp_path, signum):
    """The signal goes to the whole process group (scry and the program), as `kill -TERM -PGID`
    or Ctrl-C in a terminal sends it. SIGINT gives Python's KeyboardInterrupt traceback at the
    line that slept, then death by SIGINT."""
    plain, profiled = both(python_exe, "run_endings.py", tmp_path, ["wait"],
                           signal_on=(b"ready", signum))
    assert plain.returncode == -signum, f"the target itself misbehaves: {plain.describe()}"
    assert_same_behaviour(plain, profiled)
    profile = load_profile(profiled)
    assert_line_has_time(profile, "run_endings.py", "work", 50)


# ---- processes the program starts ------------------------------------------------------------


def test_sigterm_as_children_exit(tmp_path):
    """A child that gets SIGTERM while its interpreter exits (the agent's exit callback
    draining its samples, under its lock) still writes its part and dies at once. The flush
    handler waits for the collector, which waited for that lock: the child hung for 5 s and its
    part was lost (a Pool worker, CI). Three busy processes beside it (not profiled) stretch the
    window: unfixed, 1-5 of 40-60 children hung here."""
    python = preferred_python()
    children = 40
    load = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(3)]
    try:
        ran = run_profiled(python, "run_term_at_exit.py", [str(children), "1.5"],
                           outfile=tmp_path / "profile.json")
    finally:
        for p in load:
            p.kill()
            p.wait()
    assert ran.returncode == 0, ran.describe()
    result = json.loads(ran.stdout.decode().splitlines()[-1])
    assert not result["slow"], (
        f"children that took over 1 s to die of SIGTERM (their delays, ms): {result}")
    assert set(result["codes"]) <= {0, -signal.SIGTERM}, result
    profile = load_profile(ran)
    assert profile["processes"] == children + 1, (
        f"{children} children and their parent, each a part: processes = "
        f"{profile['processes']}")


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_multiprocessing_pool(python_exe, tmp_path, method):
    plain, profiled = both(python_exe, "run_mp_pool.py", tmp_path, [method])
    assert plain.returncode == 0, plain.describe()
    assert_same_behaviour(plain, profiled)
    profile = load_profile(profiled)
    assert profile["processes"] >= 5, (
        f"a pool of 4 workers and its parent: processes = {profile['processes']}")
    detail, entry = marked_entry(profile, "run_mp_pool.py", "pool_work")
    # 8 tasks of ~0.15 s of CPU, all in the workers: most CPU time the profile shows is there.
    cpu = entry["n_cpu_percent_python"] + entry["n_cpu_percent_c"]
    all_cpu = sum(e["n_cpu_percent_python"] + e["n_cpu_percent_c"]
                  for d in profile["files"].values() for e in d["lines"])
    assert entry["n_samples"] >= 30 and cpu >= 0.7 * all_cpu and cpu >= 2.0, (
        f"the workers' loop: {describe_entry(entry)}, of {all_cpu:.2f}% CPU time in all lines")
    assert line_total(function_entry(detail, "work")) >= line_total(entry) - 0.5


def test_fork_child(python_exe, tmp_path):
    plain, profiled = both(python_exe, "run_fork.py", tmp_path)
    assert plain.returncode == 0, plain.describe()
    assert_same_behaviour(plain, profiled)
    profile = load_profile(profiled)
    assert profile["processes"] >= 2, profile["processes"]
    entry = assert_line_has_time(profile, "run_fork.py", "child_work", 10)
    assert entry["n_cpu_percent_python"] >= 10, describe_entry(entry)
    _, wait = marked_entry(profile, "run_fork.py", "wait")
    assert split_of(wait)[2] >= 0.9, f"the parent waiting in waitpid: {describe_entry(wait)}"


def test_fork_at_first_line_warns_of_no_thread(python_exe, tmp_path):
    """A fork in the program's first milliseconds, before the agent's Python fork hooks are
    installed: the agent's collector thread must not be alive when os.fork() counts threads.
    Sixteen runs, since the window is a few milliseconds (3.13 warned in 5-15% of runs before)."""
    plain = run_plain(python_exe, "run_fork_first.py")
    assert plain.returncode == 0 and plain.stderr == b"", plain.describe()
    for attempt in range(16):
        profiled = run_profiled(python_exe, "run_fork_first.py",
                                outfile=tmp_path / f"profile{attempt}.json")
        assert_same_behaviour(plain, profiled)


def test_subprocess_python_child(python_exe, tmp_path):
    plain, profiled = both(python_exe, "run_subprocess.py", tmp_path)
    assert plain.returncode == 0, plain.describe()
    assert_same_behaviour(plain, profiled)
    profile = load_profile(profiled)
    assert profile["processes"] >= 2, profile["processes"]
    entry = assert_line_has_time(profile, "run_child_work.py", "child_work", 10)
    assert entry["n_cpu_percent_python"] >= 10, describe_entry(entry)


def test_module_mode(python_exe, tmp_path):
    """`scry run -m module` runs the module as `python -m module` does (from the current
    directory here) and profiles it."""
    plain = run_plain(python_exe, "run_child_work", module=True, cwd=TARGETS)
    profiled = run_profiled(python_exe, "run_child_work", outfile=tmp_path / "profile.json",
                            module=True, cwd=TARGETS)
    assert plain.returncode == 0, plain.describe()
    assert_same_behaviour(plain, profiled)
    profile = load_profile(profiled)
    assert_line_has_time(profile, "run_child_work.py", "child_work", 50)


# ---- input, arguments, threads ---------------------------------------------------------------


def test_stdin_passes_through(python_exe, tmp_path):
    data = b"first line\nsecond \xff\xfe bytes\n\nlast line without newline"
    plain, profiled = both(python_exe, "run_stdin.py", tmp_path, input=data)
    assert plain.returncode == 0, plain.describe()
    assert plain.stdout.startswith(b"ENIL TSRIF\n"), plain.describe()
    assert_same_behaviour(plain, profiled)
    assert_line_has_time(load_profile(profiled), "run_stdin.py", "work", 50)


@pytest.mark.parametrize("separator", [False, True], ids=["args", "args-after---"])
def test_arguments_pass_through(python_exe, tmp_path, separator):
    """Arguments after the program, scry-like options included, are the program's; without -o
    the profile is scry-profile.json in the current directory."""
    args = ["-o", "other.json", "--cpu-only", "--profile-all", "two words", ""]
    plain = run_plain(python_exe, "run_argv.py", args, cwd=tmp_path)
    profiled = run_profiled(python_exe, "run_argv.py", args, outfile=None, separator=separator,
                            cwd=tmp_path)
    assert json.loads(plain.stdout)[1:] == args, plain.describe()
    assert_same_behaviour(plain, profiled)
    assert profiled.profile_path == tmp_path / "scry-profile.json"
    load_profile(profiled)
    assert not (tmp_path / "other.json").exists(), "the program's -o was taken by scry"


def test_program_threads_are_profiled(python_exe, tmp_path):
    plain, profiled = both(python_exe, "run_threads.py", tmp_path)
    assert plain.returncode == 0, plain.describe()
    assert_same_behaviour(plain, profiled)
    profile = load_profile(profiled)
    assert profile["processes"] == 1, profile["processes"]
    entries = {m: marked_entry(profile, "run_threads.py", m)[1]
               for m in ("thread_a", "thread_b", "thread_c")}
    python = {m: e["n_cpu_percent_python"] for m, e in entries.items()}
    total = sum(python.values())
    for marker, entry in entries.items():
        # The three threads do the same work: a third of the Python time each.
        assert entry["n_samples"] >= 10 and 0.20 <= python[marker] / max(total, 1e-9) <= 0.47, (
            f"{marker}: {describe_entry(entry)}; Python time of the three: "
            f"{ {m: round(v, 2) for m, v in python.items()} }")
