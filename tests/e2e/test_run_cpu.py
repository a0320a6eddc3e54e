"""End-to-end tests of `scry run`'s CPU profile: the Python / native / system split per line and
per function against ground truth, on every installed Python 3.11-3.13.

The ground truth is tests/targets/run_cpu_split.py: sections whose true split is known (a pure
Python loop, sorted/zlib/sha256 in C, sleep and a blocking pipe read off the CPU, a busy worker
thread while the main thread waits in join, two functions doing 70/30 of the same work). The
target profiles itself too: it prints each section's wall and CPU time, so the tests know each
measured line's expected share of the sampled time, and how much of a busy line's time a loaded
machine kept off the CPU (which scry rightly calls system time: "at least 90% Python" is checked
as at least 90% of the time the section actually ran on a CPU; on an idle machine that is the
plain 90%). Tolerances are the issue's (#3): >= 90% Python, >= 85% native, >= 90% system, 70/30
within 5 points.

The profile of run_cpu_split.py is made once per interpreter and shared by the tests that read
it (about 15 s of work). Filters, --use-virtual-time, the notes of empty profiles and
`scry view --cli` have tests of their own.
"""

import importlib.util
import json
import re

import pytest

from conftest import (TARGETS, describe_entry, file_detail, function_entry, line_entry,
                      line_total, load_profile, run_profiled, run_scry, split_of)

FREE_THREADED = True  # conftest: python_exe includes 3.13t

_spec = importlib.util.spec_from_file_location("groundtruth", TARGETS / "groundtruth.py")
groundtruth = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(groundtruth)

CPU_TARGET = TARGETS / "run_cpu_split.py"
MARKERS = groundtruth.marker_lines(CPU_TARGET)
FILTER_TARGET = TARGETS / "run_filters.py"
FILTER_HELPER = TARGETS / "run_lib" / "filter_helper.py"
# The pseudo-file of the interpreter's finalization, after the program's last atexit callback:
# in every profile of a program that was sampled, unless --profile-only leaves it out.
SHUTDOWN = "<interpreter shutdown>"
FILTER_MARKERS = groundtruth.marker_lines(FILTER_TARGET)
HELPER_MARKERS = groundtruth.marker_lines(FILTER_HELPER)

MIN_PYTHON = 0.90  # the thresholds, as fractions of a line's own time
MIN_NATIVE = 0.85
MIN_SYSTEM = 0.90
SPLIT_TOLERANCE = 0.05  # 70/30 within 5 points
SAMPLE_WEIGHT_S = 0.010  # a CPU sample's mean weight: the default interval
MIN_LINE_SAMPLES = 50  # a measured line runs ~1.5 s: ~150 samples at the default 10 ms
# A line's share of all sampled time against the wall time it ran: within 10% of it plus one
# point (about 2 points for the ~10% lines here; the brief's bar for attribution is 3 points).
SHARE_TOLERANCE = 0.10


@pytest.fixture(scope="session")
def cached_run(tmp_path_factory):
    """cached_run(python, script, args=(), options=()) -> Ran: each distinct run made once per
    session (a failed one fails every test that asks for it, without running it again)."""
    cache = {}

    def run(python, script, args=(), options=()):
        key = (python, script, tuple(args), tuple(options))
        if key not in cache:
            out = tmp_path_factory.mktemp("run") / "profile.json"
            try:
                cache[key] = run_profiled(python, script, args, outfile=out, options=options)
            except BaseException as e:  # pytest.fail's exception is a BaseException
                cache[key] = e
                raise
        found = cache[key]
        if isinstance(found, BaseException):
            pytest.fail(f"the shared run of {script} {' '.join(options)} failed earlier: {found}")
        return found

    return run


def ground_truth(ran):
    """The target's own timing: its last line of stdout."""
    assert ran.returncode == 0, ran.describe()
    return json.loads(ran.stdout.decode().splitlines()[-1])


def cpu_profile(cached_run, python, sections=(), options=()):
    """(ground truth, profile, the target's file entry) of run_cpu_split.py under scry."""
    ran = cached_run(python, "run_cpu_split.py", sections, options)
    truth = ground_truth(ran)
    profile = load_profile(ran)
    detail = file_detail(profile, CPU_TARGET)
    assert detail is not None, (f"{CPU_TARGET} is not among the profile's files: "
                                f"{list(profile['files'])}; {ran.describe()}")
    return truth, profile, detail


def marked(detail, marker, markers=MARKERS):
    (lineno,) = markers[marker]
    return line_entry(detail, lineno)


def on_cpu(truth, section):
    """The share of the section's wall time that it spent on a CPU (1.0 on an idle machine)."""
    times = truth["sections"][section]
    return min(1.0, times["cpu"] / times["wall"])


def context(truth, section, entry):
    return (f"{describe_entry(entry)}; the section ran {truth['sections'][section]['wall']:.2f} s, "
            f"{on_cpu(truth, section):.1%} of it on a CPU")


# ---- the split of each known line ------------------------------------------------------------


def test_pure_python_line_is_python(cached_run, python_exe):
    truth, _, detail = cpu_profile(cached_run, python_exe)
    entry = marked(detail, "python")
    python, native, system = split_of(entry)
    busy = on_cpu(truth, "python")
    assert entry["n_samples"] >= MIN_LINE_SAMPLES, context(truth, "python", entry)
    assert python >= MIN_PYTHON * busy, (
        f"pure-Python loop: {python:.1%} Python (native {native:.1%}, system {system:.1%}), "
        f"want >= {MIN_PYTHON:.0%} of its on-CPU share; {context(truth, 'python', entry)}")
    assert system <= (1 - busy) + 0.05, (
        f"pure-Python loop: {system:.1%} system but it was off the CPU {1 - busy:.1%} of the "
        f"time; {context(truth, 'python', entry)}")


@pytest.mark.parametrize("section", ["sorted", "zlib", "sha256"])
def test_native_lines_are_native(cached_run, python_exe, section):
    truth, _, detail = cpu_profile(cached_run, python_exe)
    entry = marked(detail, section)
    python, native, system = split_of(entry)
    busy = on_cpu(truth, section)
    assert entry["n_samples"] >= MIN_LINE_SAMPLES, context(truth, section, entry)
    assert native >= MIN_NATIVE * busy, (
        f"{section}: {native:.1%} native (Python {python:.1%}, system {system:.1%}), want >= "
        f"{MIN_NATIVE:.0%} of its on-CPU share; {context(truth, section, entry)}")
    assert system <= (1 - busy) + 0.05, (
        f"{section}: {system:.1%} system but it was off the CPU {1 - busy:.1%} of the time; "
        f"{context(truth, section, entry)}")


@pytest.mark.parametrize("section", ["sleep", "pipe"])
def test_blocking_lines_are_system(cached_run, python_exe, section):
    truth, _, detail = cpu_profile(cached_run, python_exe)
    entry = marked(detail, section)
    python, native, system = split_of(entry)
    assert entry["n_samples"] >= MIN_LINE_SAMPLES, context(truth, section, entry)
    assert system >= MIN_SYSTEM, (
        f"{section}: {system:.1%} system (Python {python:.1%}, native {native:.1%}), want >= "
        f"{MIN_SYSTEM:.0%}; {context(truth, section, entry)}")


def test_worker_thread_gets_its_time_while_main_waits(cached_run, python_exe):
    truth, _, detail = cpu_profile(cached_run, python_exe)
    busy_entry, join_entry = marked(detail, "thread_busy"), marked(detail, "join")
    busy = on_cpu(truth, "thread_busy")
    python, _, system = split_of(busy_entry)
    assert busy_entry["n_samples"] >= MIN_LINE_SAMPLES, context(truth, "thread_busy", busy_entry)
    assert python >= MIN_PYTHON * busy, (
        f"worker thread's loop: {python:.1%} Python, want >= {MIN_PYTHON:.0%} of its on-CPU "
        f"share; {context(truth, 'thread_busy', busy_entry)}")
    assert system <= (1 - busy) + 0.05, context(truth, "thread_busy", busy_entry)
    join_system = split_of(join_entry)[2]
    assert join_system >= MIN_SYSTEM, (
        f"main thread's join(): {join_system:.1%} system, want >= {MIN_SYSTEM:.0%}; "
        f"{context(truth, 'thread', join_entry)}")
    # Both threads were sampled for the same wall time: the two lines weigh the same.
    ratio = line_total(busy_entry) / max(line_total(join_entry), 1e-9)
    assert 0.75 <= ratio <= 1.33, (
        f"the worker's line has {ratio:.2f}x the time of the join() line that waited for it; "
        f"worker {describe_entry(busy_entry)}; join {describe_entry(join_entry)}")


def on_cpu_share(entry):
    """The entry's time on a CPU, as a percentage of the sampled time."""
    return entry["n_cpu_percent_python"] + entry["n_cpu_percent_c"]


def test_seventy_thirty_functions(cached_run, python_exe):
    # A 70/30 share is a binomial estimate: at the default 10 ms the ~2 s split gives about 200
    # samples (sigma 3 points, so a 5-point check fails one run in eight). Here the split runs
    # ~6 s at the kernel's tick rate (about 1,500 samples, sigma 1.2 points).
    truth, _, detail = cpu_profile(cached_run, python_exe, ("split_long",),
                                   ("--cpu-sampling-rate", "0.002"))
    f70, f30 = function_entry(detail, "seventy"), function_entry(detail, "thirty")
    assert f70["lineno"] == MARKERS["seventy"][0] - 2, f70  # def, i = 0, the loop
    assert f30["lineno"] == MARKERS["thirty"][0] - 2, f30
    # On-CPU time (Python + native: the thread's CPU clock), not the total: a wait for a CPU is
    # system time charged to whichever function runs, so a load that comes and goes between
    # the two would move a split of the totals; the work's 70/30 is in the CPU time.
    t70, t30 = on_cpu_share(f70), on_cpu_share(f30)
    share = t70 / max(t70 + t30, 1e-9)
    assert abs(share - 0.70) <= SPLIT_TOLERANCE, (
        f"functions: seventy {t70:.2f}%, thirty {t30:.2f}% on a CPU: {share:.1%} / "
        f"{1 - share:.1%}, want 70/30 within {SPLIT_TOLERANCE:.0%}")
    l70, l30 = marked(detail, "seventy"), marked(detail, "thirty")
    line_share = on_cpu_share(l70) / max(on_cpu_share(l70) + on_cpu_share(l30), 1e-9)
    assert abs(line_share - 0.70) <= SPLIT_TOLERANCE, (
        f"lines: {describe_entry(l70)} vs {describe_entry(l30)}: {line_share:.1%} / "
        f"{1 - line_share:.1%}, want 70/30 within {SPLIT_TOLERANCE:.0%}")
    # A function's time is its lines' time; the loop line is nearly all of it.
    for fn, line in ((f70, l70), (f30, l30)):
        assert abs(line_total(fn) - line_total(line)) <= 1.0 + 0.05 * line_total(fn), (
            f"function {fn['line']} has {line_total(fn):.2f}% but its loop line "
            f"{line_total(line):.2f}%")
        assert split_of(fn)[0] >= MIN_PYTHON * on_cpu(truth, "split_long"), (
            f"function {fn['line']}: {split_of(fn)[0]:.1%} Python; {context(truth, 'split_long', fn)}")


# ---- absolute shares and the profile as a whole ----------------------------------------------


def test_line_shares_match_the_wall_time(cached_run, python_exe):
    """Each measured line's share of all sampled time is the wall time its section took over
    the thread-seconds of the run (the main thread's lifetime plus the worker's); together the
    measured lines take nearly all of it."""
    truth, _, detail = cpu_profile(cached_run, python_exe)
    walls = {name: t["wall"] for name, t in truth["sections"].items()}
    thread_seconds = truth["elapsed"] + truth["extra_thread_seconds"]
    expected = {m: walls[m] for m in ("python", "sorted", "zlib", "sha256", "sleep", "pipe",
                                      "thread_busy")}
    expected["join"] = walls["thread"]
    # Each function's own wall time: 70/30 of the section's is the work's split, which the wall
    # time keeps only while the machine's load holds still.
    expected["seventy"], expected["thirty"] = walls["split.seventy"], walls["split.thirty"]
    problems, got_sum, want_sum = [], 0.0, 0.0
    for marker, wall in expected.items():
        want = 100 * wall / thread_seconds
        got = line_total(marked(detail, marker))
        got_sum, want_sum = got_sum + got, want_sum + want
        if abs(got - want) > SHARE_TOLERANCE * want + 1.0:
            problems.append(f"{marker}: {got:.2f}% of the sampled time, want {want:.2f}% "
                            f"({wall:.2f} s of {thread_seconds:.2f} thread-seconds)")
    assert not problems, "; ".join(problems)
    assert got_sum >= 80, (f"the measured lines take {got_sum:.1f}% of the sampled time "
                           f"(want most of it: they ran {want_sum:.1f}% of it)")


def test_profile_fields(cached_run, python_exe):
    truth, profile, detail = cpu_profile(cached_run, python_exe)
    # The pipe's writer is a shell: it loads the agent but runs no Python, so writes no part.
    assert profile["processes"] == 1, profile["processes"]
    assert sorted(profile["files"]) == sorted([str(CPU_TARGET), SHUTDOWN]), (
        f"by default only the program's own files: {sorted(profile['files'])}")
    assert profile["n_samples"] >= 500, profile["n_samples"]
    assert truth["elapsed"] * 0.95 <= profile["elapsed_time_sec"] <= truth["elapsed"] + 10, (
        f"elapsed_time_sec {profile['elapsed_time_sec']}, the program ran {truth['elapsed']:.2f} s")
    # The file's share: all of its lines' time (Scalene), or at least their time on the CPU.
    lines_all = sum(line_total(e) for e in detail["lines"])
    lines_cpu = sum(e["n_cpu_percent_python"] + e["n_cpu_percent_c"] for e in detail["lines"])
    assert lines_cpu - 1.0 <= detail["percent_cpu_time"] <= lines_all + 1.0, (
        f"percent_cpu_time {detail['percent_cpu_time']:.2f}, its lines: {lines_all:.2f}% "
        f"({lines_cpu:.2f}% on the CPU)")
    source = CPU_TARGET.read_text().splitlines()
    for marker, (lineno,) in MARKERS.items():
        text = marked(detail, marker)["line"]
        for escaped, char in (("\\u003c", "<"), ("\\u003e", ">"), ("\\u0026", "&")):
            text = text.replace(escaped, char)  # Scalene's escaping of HTML characters
        assert text.rstrip() == source[lineno - 1].rstrip(), (marker, lineno, text)


# ---- options -------------------------------------------------------------------------------


def test_virtual_time_counts_no_system_time(cached_run, python_exe):
    truth, profile, detail = cpu_profile(cached_run, python_exe, ("python", "sleep"),
                                         ("--use-virtual-time",))
    for name, fdetail in profile["files"].items():
        for e in fdetail["lines"] + fdetail["functions"]:
            assert e["n_sys_percent"] == 0, f"{name}: system time with --use-virtual-time: {e}"
    sleep, python = marked(detail, "sleep"), marked(detail, "python")
    # Its 30 wake-ups take a few ms of CPU, measured by the target on its thread's clock (more
    # on a loaded machine: a woken thread finds its caches cold): the line has that, within the
    # weight of three samples (a sample that lands there carries the CPU time since the one
    # before, 10 ms on average). Its wall time counted would be 1.5 s.
    sleep_cpu = line_total(sleep) / 100 * profile["sampled_time_sec"]
    assert sleep_cpu <= truth["sections"]["sleep"]["cpu"] + 3 * SAMPLE_WEIGHT_S, (
        f"sleep line with --use-virtual-time: {sleep_cpu:.3f} s of CPU, its loop measured "
        f"{truth['sections']['sleep']['cpu']:.3f} s: {describe_entry(sleep)}")
    # Its share of the sampled (CPU) time is its share of the process's CPU time, within 5 points.
    share = 100 * truth["sections"]["python"]["cpu"] / truth["cpu_total"]
    assert line_total(python) >= share - 5.0 and split_of(python)[0] >= MIN_PYTHON, (
        f"with CPU time only, the Python loop ({truth['sections']['python']['cpu']:.2f} s of "
        f"{truth['cpu_total']:.2f} s of CPU, {share:.1f}%) should take its share: "
        f"{describe_entry(python)}")


def cpu_share(entry):
    """A line's share of the time spent on a CPU: Python and native, not system."""
    return entry["n_cpu_percent_python"] + entry["n_cpu_percent_c"]


def filter_profile(cached_run, python, options):
    ran = cached_run(python, "run_filters.py", (), options)
    assert ran.returncode == 0, ran.describe()
    assert ran.stdout.startswith(b"done "), ran.describe()
    return load_profile(ran)


def test_filter_default_profiles_program_directory(cached_run, python_exe):
    profile = filter_profile(cached_run, python_exe, ())
    assert sorted(profile["files"]) == sorted([str(FILTER_TARGET), str(FILTER_HELPER), SHUTDOWN]), (
        f"by default the program's directory (helper included), no stdlib: "
        f"{sorted(profile['files'])}")
    main, helper = file_detail(profile, FILTER_TARGET), file_detail(profile, FILTER_HELPER)
    for what, entry in (("own loop", marked(main, "own", FILTER_MARKERS)),
                        ("helper's loop", marked(helper, "helper", HELPER_MARKERS)),
                        ("json calls (json's own files are not profiled)",
                         marked(main, "json", FILTER_MARKERS))):
        assert line_total(entry) >= 10, f"{what}: {describe_entry(entry)}"


def test_filter_profile_only(cached_run, python_exe):
    profile = filter_profile(cached_run, python_exe, ("--profile-only", "run_lib"))
    assert sorted(profile["files"]) == [str(FILTER_HELPER)], sorted(profile["files"])
    entry = marked(file_detail(profile, FILTER_HELPER), "helper", HELPER_MARKERS)
    assert line_total(entry) >= 10, describe_entry(entry)


def test_filter_profile_exclude(cached_run, python_exe):
    """The helper's time goes to the line that called it, the first profiled frame outwards."""
    profile = filter_profile(cached_run, python_exe, ("--profile-exclude", "run_lib"))
    assert sorted(profile["files"]) == sorted([str(FILTER_TARGET), SHUTDOWN]), (
        sorted(profile["files"]))
    main = file_detail(profile, FILTER_TARGET)
    own, call = marked(main, "own", FILTER_MARKERS), marked(main, "call_helper", FILTER_MARKERS)
    assert line_total(own) >= 10, describe_entry(own)
    # The same CPU work: compared on the CPU's shares (Python and native). Waiting for a CPU is
    # system time, which a loaded machine hands out unevenly between the two loops (seen: 31%
    # against 8% beside other suites, with their CPU shares 13.5% and 14.1%).
    ratio = cpu_share(call) / max(cpu_share(own), 1e-9)
    assert 0.6 <= ratio <= 1.6, (f"the excluded helper did the same work as the own loop; the "
                                 f"line calling it: {describe_entry(call)}, own loop: "
                                 f"{describe_entry(own)}")


@pytest.mark.parametrize("option", ["--profile-all", "--profile-system-libraries"])
def test_filter_profile_all_and_system_libraries(cached_run, python_exe, option):
    profile = filter_profile(cached_run, python_exe, (option,))
    names = set(profile["files"])
    assert {str(FILTER_TARGET), str(FILTER_HELPER)} <= names, sorted(names)
    json_files = [n for n in names if "/json/" in n]
    assert json_files, f"{option}: no file of the json package in {sorted(names)}"
    json_time = sum(profile["files"][n]["percent_cpu_time"] for n in json_files)
    assert json_time >= 5, f"{option}: json's files take {json_time:.2f}%: {json_files}"
    pseudo = [n for n in names if (n.startswith("<") or not n) and n != SHUTDOWN]
    assert not pseudo, f"{option}: files that are not real paths: {pseudo}"
    assert SHUTDOWN in names, sorted(names)


# ---- empty and filtered profiles -------------------------------------------------------------


def test_too_short_program_gets_a_note(cached_run, python_exe):
    """A program that ends before its first sample. At the default rate even a hello-world
    gets a sample or two in its start-up (then its note says they were filtered out, or the
    import line has them), so the mean interval is made 1000 s: the ~30 ms program is then
    sampled with a probability of about 0.01%. CPU only: with memory on, its imports' allocations
    are a (memory) profile, and the note then says only the CPU time was too short. Virtual
    time: the off-CPU sampler charges any millisecond the main thread waits (a page fault on
    a busy machine, in the first ticks, which come every millisecond): that is measured, not
    sampled, and made 3% of these runs a one-sample profile in CI."""
    ran = cached_run(python_exe, "run_argv.py", ("x",), ("--cpu-sampling-rate", "1000",
                                                         "--cpu-only", "--use-virtual-time"))
    assert ran.returncode == 0, ran.describe()
    profile = load_profile(ran)
    assert profile["files"] == {}, sorted(profile["files"])
    assert profile["n_samples"] == 0, profile["n_samples"]
    note = profile.get("note")
    assert isinstance(note, str) and re.search(r"too short|long enough|briefly", note, re.I), (
        f"a program that ended before its first sample should get a note saying it was too "
        f"short: note={note!r}")


def test_everything_filtered_gets_a_note(cached_run, python_exe):
    ran = cached_run(python_exe, "run_filters.py", (), ("--profile-only", "nomatch"))
    assert ran.returncode == 0, ran.describe()
    profile = load_profile(ran)
    assert profile["files"] == {}, sorted(profile["files"])
    assert profile["n_samples"] > 0, "the program ran ~1 s: it was sampled"
    note = profile.get("note")
    assert isinstance(note, str), f"no note in a profile whose samples were all filtered out"
    for name in ("run_filters.py", "filter_helper.py"):
        assert name in note, f"the note should list the excluded file {name}: {note!r}"
    assert re.search(r"profile[-_ ]only", note), f"the note should name the rule: {note!r}"


# ---- the terminal view -------------------------------------------------------------------------


VIEW_LINES = {"sorted": ("sorted(data)  # @sorted", "n_cpu_percent_c"),
              "zlib": ("zlib.compress(buf, 6)  # @zlib", "n_cpu_percent_c"),
              "sleep": ("time.sleep(SLEEP_S)", "n_sys_percent"),
              "pipe": ("os.read(fd, 1)", "n_sys_percent")}


def test_view_cli_shows_lines_and_percentages(cached_run, python_exe, tmp_path):
    _, _, detail = cpu_profile(cached_run, python_exe)
    ran = cached_run(python_exe, "run_cpu_split.py")
    cp = run_scry(["view", "--cli", ran.profile_path])
    assert cp.returncode == 0, cp.stderr
    out = cp.stdout
    for word in ("python", "native", "system"):
        assert word in out.lower(), f"no {word!r} column in:\n{out}"
    for marker, (code, field) in VIEW_LINES.items():
        rows = [row for row in out.splitlines() if code in row]
        assert rows, f"the line {code!r} is not shown:\n{out}"
        want = marked(detail, marker)[field]
        numbers = [float(x) for x in re.findall(r"\d+(?:\.\d+)?", rows[0].split(code)[0])]
        assert any(abs(x - want) <= 1.0 for x in numbers), (
            f"row {rows[0]!r} should show {field} {want:.1f}")
    # Without a file name it reads scry-profile.json in the current directory.
    (tmp_path / "scry-profile.json").write_bytes(ran.profile_path.read_bytes())
    cp2 = run_scry(["view", "--cli"], cwd=tmp_path)
    assert cp2.returncode == 0, cp2.stderr
    assert cp2.stdout == out
