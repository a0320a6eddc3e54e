"""`scry record --pid`: sampling a Python process that was started without scry, from outside.

The target (tests/targets/record_split.py) spends about 55% of its time on a pure-Python line,
27% on a native line (zlib.compress) and 18% asleep, and measures that itself (time.thread_time
around each part). A 3 s recording must give each line its own kind (python, native, system) for
at least 85% of the line's time, and the python : native ratio within 5 points of the target's
own clocks."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import (SANITIZER_MARKS, SCRY, TARGETS, check_profile, file_detail,
                      is_free_threaded, line_entry, line_total, preferred_python, run_scry,
                      split_of, describe_entry, wait_for_sleeping)

TARGET = TARGETS / "record_split.py"
FREE_THREADED = True  # python_exe also runs the free-threaded builds (conftest.FREE_THREADED)
KINDS = {"python": 0, "native": 1, "sleep": 2}  # index into split_of's (python, native, system)


class SplitTarget:
    """record_split.py started with plain python; stop() ends it and returns its truth."""

    def __init__(self, python, tmp_path, seconds=60):
        self.stop_file = tmp_path / f"stop-{time.monotonic_ns()}"
        self.proc = subprocess.Popen([str(python), str(TARGET), str(seconds), str(self.stop_file)],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        assert line, f"the target printed nothing; stderr:\n{self.proc.stderr.read()}"
        self.ready = json.loads(line)
        self.pid = self.proc.pid
        assert self.ready["pid"] == self.pid

    def stop(self):
        self.stop_file.touch()
        out, err = self.proc.communicate(timeout=30)
        assert self.proc.returncode == 0, err
        return json.loads(out.strip().splitlines()[-1])

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.communicate()


@pytest.fixture
def split_target(tmp_path):
    started = []

    def start(python, seconds=60):
        t = SplitTarget(python, tmp_path, seconds)
        started.append(t)
        return t

    yield start
    for t in started:
        t.kill()


def record(pid, out, *options, timeout=60):
    cp = run_scry(["record", "--pid", pid, "-o", out, *options], timeout=timeout)
    assert cp.returncode == 0, cp.stderr
    profile = json.loads(Path(out).read_text())
    check_profile(profile)
    return cp, profile


def check_split(profile, ready, truth):
    detail = file_detail(profile, TARGET)
    assert detail is not None, sorted(profile["files"])
    entries = {name: line_entry(detail, ready["lines"][name]) for name in KINDS}
    for name, kind in KINDS.items():
        e = entries[name]
        assert line_total(e) > 0, f"{name}: no time; {describe_entry(e)}"
        share = split_of(e)[kind]
        assert share >= 0.85, f"{name} line is {share:.2f} its own kind: {describe_entry(e)}"
    py, nat = line_total(entries["python"]), line_total(entries["native"])
    measured = py / (py + nat)
    # A runnable thread waiting for a CPU is sampled on its line (state R), as py-spy does: the
    # truth is the target's wall time on each line (its CPU time on a quiet machine).
    true = truth["python_wall"] / (truth["python_wall"] + truth["native_wall"])
    assert abs(measured - true) <= 0.05, (
        f"python : native is {measured:.3f} recorded, {true:.3f} measured by the target "
        f"({describe_entry(entries['python'])}; {describe_entry(entries['native'])}; {truth})")
    return entries


def test_split_matches_the_targets_own_clocks(python_exe, split_target, tmp_path):
    target = split_target(python_exe)
    out = tmp_path / "rec.json"
    cp, profile = record(target.pid, out, "--duration", "3")
    truth = target.stop()
    assert "the duration ended" in cp.stderr, cp.stderr
    assert 2.5 <= profile["elapsed_time_sec"] <= 4.0, profile["elapsed_time_sec"]
    # 100 Hz for 3 s: every tick samples the one thread (a starved sampler skips ticks; each
    # sample weighs the wall time since the thread's previous one, so the shares hold).
    assert 150 <= profile["n_samples"] <= 310, profile["n_samples"]
    # The run-queue counters of the sampled intervals: the thread ran or waited to run for
    # about the 82% of the time it was not asleep (2.46 s of the 3).
    busy = profile["run_queue_cpu_sec"] + profile["run_queue_delay_sec"]
    assert 0.68 * 3 <= busy <= 3.2, (profile["run_queue_cpu_sec"], profile["run_queue_delay_sec"])
    entries = check_split(profile, target.ready, truth)
    # The GIL: held on the Python line, released by zlib.compress (large input) and time.sleep.
    main = [t for t in profile["threads"] if t["native_id"] == target.pid]
    assert len(main) == 1, profile["threads"]
    gil = main[0]["gil_samples"] / main[0]["samples"]
    if is_free_threaded(python_exe):
        assert gil == 0, main  # no GIL to hold
    else:
        py_share = line_total(entries["python"]) / 100
        assert abs(gil - py_share) <= 0.1, (f"the GIL was held in {gil:.2f} of the samples, "
                                            f"the Python line took {py_share:.2f}: {main[0]}")
    assert profile["program"] == str(TARGET)
    version = subprocess.run([python_exe, "-c", "import platform; print(platform.python_version())"],
                             capture_output=True, text=True).stdout.strip()
    assert profile["python_version"] == version, (profile["python_version"], version)


def test_blocking_stops_the_target_and_resumes_it(split_target, tmp_path):
    target = split_target(preferred_python())
    cp, profile = record(target.pid, tmp_path / "rec.json", "--duration", "3", "--blocking")
    truth = target.stop()
    assert "stopping it" in cp.stderr, cp.stderr
    check_split(profile, target.ready, truth)


def test_native_frames_are_stitched(python_exe, split_target, tmp_path):
    """--native: the native chain of each running thread, with each eval-loop call replaced by
    the Python frames it runs: zlib's frames follow the native line, none follow the Python line
    (there: the interpreter's own code, the allocator, the dynamic loader's TLS look-up)."""
    target = split_target(python_exe)
    cp, profile = record(target.pid, tmp_path / "rec.json", "--duration", "3", "--native")
    truth = target.stop()
    check_split(profile, target.ready, truth)
    assert profile["native_stacks"], "no native stacks"
    hits = {"python": [0, 0], "native": [0, 0]}  # [stacks' hits, those with zlib's frames]
    for frames, n in profile["combined_stacks"]:
        py = [i for i, f in enumerate(frames) if f["kind"] == "py"]
        assert py and frames[0]["kind"] == "py" and frames[0]["display_name"] == "<module>", \
            frames[:3]
        inner = frames[py[-1]]
        for name in hits:
            if inner["line"] == target.ready["lines"][name]:
                rest = frames[py[-1] + 1:]
                hits[name][0] += n
                hits[name][1] += n * any(
                    f["display_name"].startswith("deflate") or
                    "libz." in f["filename_or_module"] for f in rest)
    assert hits["native"][0] >= 30 and hits["native"][1] >= 0.8 * hits["native"][0], hits
    assert hits["python"][0] >= 60 and hits["python"][1] == 0, hits
    # Stitched: each eval-loop call stands for its Python frames, and the start-up frames under
    # the outermost one are left out. That needs the eval loop's frames to be recognised: by
    # their symbol (_PyEval_EvalFrameDefault) in the pyenv builds and Debian's static 3.11; in
    # Debian sid's 3.14/3.15, which run the loop in a local clone no symbol names, by the
    # clone's range in the unwind tables (named _PyEval_EvalFrameDefault too).
    eval_named = any(f[1] == "_PyEval_EvalFrameDefault" for st, _ in profile["native_stacks"]
                     for f in st)
    assert eval_named, "no eval-loop frame named in the native chains"
    for frames, _ in profile["combined_stacks"]:
        names = [f["display_name"] for f in frames]
        assert "_start" not in names and "Py_RunMain" not in names, names


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_ends_recording_and_writes_the_profile(split_target, tmp_path, sig):
    target = split_target(preferred_python())
    out = tmp_path / "rec.json"
    proc = subprocess.Popen([str(SCRY), "record", "--pid", str(target.pid), "-o", str(out)],
                            stderr=subprocess.PIPE, text=True)
    time.sleep(2)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert ("interrupted" if sig == signal.SIGINT else "terminated") in err, err
    profile = json.loads(out.read_text())
    check_profile(profile)
    assert 1.5 <= profile["elapsed_time_sec"] <= 4, profile["elapsed_time_sec"]
    detail = file_detail(profile, TARGET)
    assert line_total(line_entry(detail, target.ready["lines"]["python"])) > 30, detail["lines"]
    assert target.proc.poll() is None, "the target must keep running"
    target.stop()


def test_a_target_that_exits_ends_recording(split_target, tmp_path):
    target = split_target(preferred_python(), seconds=1.5)
    out = tmp_path / "rec.json"
    t0 = time.monotonic()
    cp, profile = record(target.pid, out, "--duration", "30")
    assert time.monotonic() - t0 < 10, "recording went on after the process exited"
    assert "the process exited" in cp.stderr, cp.stderr
    detail = file_detail(profile, TARGET)
    assert line_total(line_entry(detail, target.ready["lines"]["python"])) > 30, detail["lines"]


def test_the_file_filter_is_scry_runs(split_target, tmp_path):
    """--profile-exclude and --program-path take the target's file out, with the rule that did;
    by default its directory is the program's (the script's, from its command line)."""
    target = split_target(preferred_python())
    _, excluded = record(target.pid, tmp_path / "x.json", "--duration", "1",
                         "--profile-exclude", "record_split")
    _, outside = record(target.pid, tmp_path / "o.json", "--duration", "1",
                        "--program-path", str(tmp_path))
    target.stop()
    for profile, rule in ((excluded, "excluded"), (outside, "outside_program")):
        assert file_detail(profile, TARGET) is None, sorted(profile["files"])
        rules = {x["file"]: x["rule"] for x in profile["excluded"]}
        assert rules.get(str(TARGET)) == rule, profile["excluded"]
        assert "note" in profile, sorted(profile)
    assert outside["filename"] == str(tmp_path)
    assert excluded["filename"] == str(TARGET.parent)


def test_view_and_flamegraph_work_on_a_recording(split_target, tmp_path):
    target = split_target(preferred_python())
    out = tmp_path / "rec.json"
    record(target.pid, out, "--duration", "1")
    target.stop()
    cp = run_scry(["view", "--cli", out])
    assert cp.returncode == 0, cp.stderr
    assert "# @python" in cp.stdout and "python_part" in cp.stdout, cp.stdout
    svg = tmp_path / "rec.svg"
    cp = run_scry(["flamegraph", out, "-o", svg])
    assert cp.returncode == 0, cp.stderr
    text = svg.read_text()
    assert "python_part" in text and "native_part" in text and "main" in text


def test_subprocesses_are_recorded(tmp_path):
    """A parent (not profiled: a -c program) whose child runs the split: the child's lines are
    in the profile only with --subprocesses."""
    python = preferred_python()
    stop = tmp_path / "stop"
    code = ("import subprocess, sys, time; time.sleep(0.5); "
            f"subprocess.run([sys.executable, {str(TARGET)!r}, '30', {str(stop)!r}], "
            "stdout=subprocess.DEVNULL)")
    parent = subprocess.Popen([python, "-c", code])
    try:
        _, plain = record(parent.pid, tmp_path / "plain.json", "--duration", "1.5")
        _, withsub = record(parent.pid, tmp_path / "sub.json", "--duration", "1.5",
                            "--subprocesses")
        _, idle = record(parent.pid, tmp_path / "idle.json", "--duration", "1.5",
                         "--subprocesses", "--idle")
    finally:
        stop.touch()
        parent.wait(timeout=30)
    assert file_detail(plain, TARGET) is None, sorted(plain["files"])
    assert plain["processes"] == 1
    assert withsub["processes"] == 2, withsub["processes"]
    detail = file_detail(withsub, TARGET)
    assert detail is not None, sorted(withsub["files"])
    # The parent waits with no frame of a file (<string>, subprocess.py): its off-CPU time is
    # not counted, so the child's lines take all the time...
    assert sum(line_total(e) for e in detail["lines"]) > 95, detail["lines"]
    # ...unless --idle counts it (as system time in no line): about half, two processes.
    share = sum(line_total(e) for e in file_detail(idle, TARGET)["lines"])
    assert 35 <= share <= 65, share
    # The excluded time is the innermost frame's file's: subprocess.py, waiting for the child.
    assert any(x["file"].endswith("/subprocess.py") and x["rule"] == "system_library" and
               x["seconds"] > 1 for x in idle["excluded"]), idle["excluded"]


def test_a_child_that_execs_python_is_read_afresh(tmp_path):
    """A forked child (a copy of its parent's Python) found by --subprocesses, that then execs
    the split target: its reads fail until scry finds the new interpreter."""
    python = preferred_python()
    stop = tmp_path / "stop"
    code = ("import os, sys, time\n"
            "pid = os.fork()\n"
            "if pid == 0:\n"
            "    time.sleep(1)\n"
            f"    os.execv(sys.executable, [sys.executable, {str(TARGET)!r}, '30', {str(stop)!r}])\n"
            "os.waitpid(pid, 0)\n")
    parent = subprocess.Popen([python, "-c", code], stdout=subprocess.DEVNULL)
    try:
        cp, profile = record(parent.pid, tmp_path / "exec.json", "--duration", "3",
                             "--subprocesses")
    finally:
        stop.touch()
        parent.wait(timeout=30)
    assert profile["processes"] == 2, profile["processes"]
    detail = file_detail(profile, TARGET)
    assert detail is not None, sorted(profile["files"])
    assert sum(line_total(e) for e in detail["lines"]) > 50, detail["lines"]


def test_frames_at_their_start_are_on_a_line(python_exe, tmp_path):
    """Issue 27 item 6: a frame on its first instructions (MAKE_CELL, COPY_FREE_VARS,
    RETURN_GENERATOR, RESUME, 3.11's prev_instr before the code) or on an instruction the
    location table gives no line (3.11's jump that closes a loop after an `if`) is on the line
    CPython gives it: no sample on line 0, every sample on a line of code of the target."""
    target = TARGETS / "record_tiny_calls.py"
    stop = tmp_path / "stop"
    proc = subprocess.Popen([str(python_exe), str(target), "60", str(stop)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert json.loads(proc.stdout.readline())["pid"] == proc.pid, proc.stderr.read()
        out = tmp_path / "tiny.json"
        _, profile = record(str(proc.pid), str(out), "--duration", "2", "--rate", "2000")
    finally:
        stop.touch()
        proc.wait(timeout=30)
    assert proc.returncode == 0, proc.stderr.read()
    detail = file_detail(profile, target)
    assert detail, f"no samples in the target: {list(profile['files'])}"
    source = target.read_text().splitlines()
    sampled = [e for e in detail["lines"] if e["n_samples"] > 0]
    assert sum(e["n_samples"] for e in sampled) >= 500, "too few samples to mean anything"
    for e in sampled:
        n = e["lineno"]
        assert 1 <= n <= len(source), f"{e['n_samples']} samples on line {n}"
        code = source[n - 1].strip()
        assert code and not code.startswith(("#", '"')), (
            f"{e['n_samples']} samples on line {n}, which holds no code: {code!r}")
    for name, d in profile["files"].items():
        if name.startswith("<"):
            continue  # <native> and the like have no lines (line 0 by definition)
        zero = [e["n_samples"] for e in d["lines"] if e["lineno"] == 0 and e["n_samples"]]
        assert not zero, f"{name}: {zero} samples on line 0"


def check_error(argv, code):
    cp = run_scry(argv)
    assert cp.returncode == 1, cp.stderr
    first = cp.stderr.splitlines()[0]
    assert first.startswith("scry: error: ") and f"[{code}]" in first, cp.stderr
    assert "\nhint: " in cp.stderr, cp.stderr


def test_errors(spawn, tmp_path):
    check_error(["record", "--pid", "999999999", "-o", tmp_path / "x.json"], "no_such_process")
    proc = spawn(["sleep", "30"])
    wait_for_sleeping(proc.pid)
    check_error(["record", "--pid", proc.pid, "-o", tmp_path / "x.json"], "not_python")
    assert not (tmp_path / "x.json").exists()


def test_permission_denied(spawn, tmp_path):
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or not setpriv:
        pytest.skip("needs root and setpriv to run scry as an unprivileged user")
    proc = spawn([preferred_python(), "-c", "import time; time.sleep(60)"])
    wait_for_sleeping(proc.pid)
    drop = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--"]
    if subprocess.run(drop + ["test", "-x", str(SCRY)]).returncode != 0:
        pytest.skip(f"{SCRY} is not executable by uid 65534")
    cp = subprocess.run(drop + [str(SCRY), "record", "--pid", str(proc.pid), "-o",
                                "/tmp/scry-record-nobody.json"],
                        capture_output=True, text=True, timeout=30)
    assert not any(m in cp.stderr for m in SANITIZER_MARKS), cp.stderr
    assert cp.returncode == 1, cp.stderr
    assert "[permission_denied]" in cp.stderr.splitlines()[0], cp.stderr
    assert "\nhint: " in cp.stderr, cp.stderr
