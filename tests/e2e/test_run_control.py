"""End-to-end tests of profiling switched on and off while the program runs, and of @profile
(issue 13): `scry run --off` with scry.start()/scry.stop(), `scry control PID on|off` from
another process, the builtin @profile and scry.profile, `--profile-interval`, and scry.start() in
a plain `python` run (no scry run). On every installed Python 3.11+.

The ground truth is tests/targets/run_control.py: each piece of work is a counting loop in a
function of its own, timed with time.thread_time() around it.
"""

import importlib.util
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from conftest import (REPO, SCRY, TARGETS, Ran, file_detail, load_profile, preferred_python,
                      program_env)

FREE_THREADED = True  # conftest: python_exe includes 3.13t

_spec = importlib.util.spec_from_file_location("groundtruth", TARGETS / "groundtruth.py")
groundtruth = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(groundtruth)

TARGET = TARGETS / "run_control.py"
MARKERS = groundtruth.marker_lines(TARGET)
CPU_TOLERANCE = 0.10  # a function's profiled CPU time against its own thread_time()
SAMPLE_SLACK = 0.03   # plus 3 samples' worth at the default 10 ms
PACKAGE = REPO / "python"


def env_with_package():
    env = program_env()
    env["PYTHONPATH"] = str(PACKAGE)
    return env


def scry_run(python, outfile, mode, *args, options=(), cwd=None):
    argv = [str(a) for a in (SCRY, "run", "--no-view", "--python", python, "-o", outfile,
                             *options, TARGET, mode, *args)]
    cp = subprocess.run(argv, capture_output=True, env=env_with_package(), cwd=cwd, timeout=120)
    return Ran(argv, cp.returncode, cp.stdout, cp.stderr, profile_path=Path(outfile))


def functions(profile):
    detail = file_detail(profile, TARGET)
    return {} if detail is None else {f["line"]: f for f in detail["functions"]}


def cpu_seconds(profile, entry):
    return (entry["n_cpu_percent_python"] + entry["n_cpu_percent_c"]) * \
        profile["sampled_time_sec"] / 100


def assert_cpu(profile, entry, want, what):
    got = cpu_seconds(profile, entry)
    assert abs(got - want) <= CPU_TOLERANCE * want + SAMPLE_SLACK, (
        f"{what}: {got:.3f} s of CPU in the profile, its thread measured {want:.3f} s")


def test_region_between_start_and_stop_is_all_there_is(python_exe, tmp_path):
    ran = scry_run(python_exe, tmp_path / "p.json", "region", options=["--off"])
    assert ran.returncode == 0, ran.describe()
    truth = json.loads(ran.stdout.decode().splitlines()[-1])
    profile = load_profile(ran)
    funcs = functions(profile)
    # Only the region was profiled: before() and after() ran 0.4 s each with profiling off.
    assert "before" not in funcs and "after" not in funcs, list(funcs)
    assert_cpu(profile, funcs["inside"], truth["inside"], "inside(), between start and stop")
    # Every CPU second sampled is the region's: the rest of the program was off.
    others = {n: cpu_seconds(profile, f) for n, f in funcs.items() if n != "inside"}
    assert sum(others.values()) <= SAMPLE_SLACK, others
    off = truth["before"] + truth["after"]
    assert profile["profiling_off_sec"] >= 0.9 * off, (profile["profiling_off_sec"], truth)
    view = subprocess.run([str(SCRY), "view", "--cli", "--no-color", str(ran.profile_path)],
                          capture_output=True, text=True)
    assert f"{profile['profiling_off_sec']:.3f} s of it with profiling off" in view.stdout, \
        view.stdout


def test_memory_counts_only_while_on(python_exe, tmp_path):
    ran = scry_run(python_exe, tmp_path / "p.json", "memory", options=["--off"])
    assert ran.returncode == 0, ran.describe()
    profile = load_profile(ran)
    detail = file_detail(profile, TARGET)
    assert detail is not None, list(profile["files"])
    mb = {e["lineno"]: e.get("n_malloc_mb", 0) for e in detail["lines"] if e.get("n_malloc_mb")}
    inside = MARKERS["keep_inside"][0]
    # 80 MiB kept between start and stop, to within the sampling window (1 MiB); the 50 MiB
    # before and the 100 MiB freed after are not the profile's.
    assert abs(mb.get(inside, 0) - 80) <= 2, mb
    assert set(mb) == {inside}, mb
    assert abs(profile["max_footprint_mb"] - 80) <= 5, profile["max_footprint_mb"]


def test_off_without_start_says_so(python_exe, tmp_path):
    ran = scry_run(python_exe, tmp_path / "p.json", "decorated", options=["--off"])
    assert ran.returncode == 0, ran.describe()
    profile = load_profile(ran)
    assert profile["n_samples"] == 0, profile["n_samples"]
    assert "profiling was off for the whole run" in profile.get("note", ""), profile.get("note")


def test_profile_decorator_reports_exactly_the_decorated(python_exe, tmp_path):
    ran = scry_run(python_exe, tmp_path / "p.json", "decorated")
    assert ran.returncode == 0, ran.describe()
    truth = json.loads(ran.stdout.decode().splitlines()[-1])
    profile = load_profile(ran)
    funcs = functions(profile)
    # one() has the builtin @profile, two() scry.profile; three() and main() are left out.
    assert set(funcs) == {"one", "two"}, list(funcs)
    for name in ("one", "two"):
        assert_cpu(profile, funcs[name], truth[name], f"{name}()")
    detail = file_detail(profile, TARGET)
    lines = {e["lineno"] for e in detail["lines"] if e["n_samples"] > 0}
    starts = {funcs[n]["lineno"] for n in funcs}
    assert lines and all(any(0 <= ln - s <= 3 for s in starts) for ln in lines), (lines, starts)
    # Their shares are of the whole program: three() ran as long as each, outside the report.
    total = sum(cpu_seconds(profile, funcs[n]) for n in funcs)
    assert total <= 0.75 * profile["sampled_time_sec"], (total, profile["sampled_time_sec"])


def test_scry_control_switches_the_run_from_another_process(python_exe, tmp_path):
    flag = tmp_path / "stop"
    argv = [str(a) for a in (SCRY, "run", "--no-view", "--off", "--python", python_exe, "-o",
                             tmp_path / "p.json", TARGET, "external", flag)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env_with_package(), start_new_session=True)
    try:
        ready = proc.stdout.readline().split()
        assert ready and ready[0] == b"ready", ready
        pid = ready[1].decode()
        time.sleep(0.3)  # outside_off() spins meanwhile, with profiling off
        on = subprocess.run([str(SCRY), "control", pid, "on"], capture_output=True, text=True)
        assert on.returncode == 0 and f"profiling on for the run of pid {pid}" in on.stdout, on
        assert proc.stdout.readline() == b"on\n"
        time.sleep(0.5)  # while_on() spins, profiled
        flag.touch()
        # This time through scry run's own pid: the run is its child's.
        off = subprocess.run([str(SCRY), "control", str(proc.pid), "off"], capture_output=True,
                             text=True)
        assert off.returncode == 0, off
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    ran = Ran(argv, proc.returncode, b"", err, profile_path=tmp_path / "p.json")
    assert proc.returncode == 0, ran.describe()
    truth = json.loads(out.decode().splitlines()[-1])
    profile = load_profile(ran)
    funcs = functions(profile)
    assert "after_off" not in funcs, list(funcs)
    assert_cpu(profile, funcs["while_on"], truth["while_on"], "while_on(), between on and off")
    # outside_off() only for the moment it took to see the switch.
    if "outside_off" in funcs:
        assert cpu_seconds(profile, funcs["outside_off"]) <= 0.05, funcs["outside_off"]


def test_control_errors_say_what_to_do(tmp_path):
    cp = subprocess.run([str(SCRY), "control", "-5", "on"], capture_output=True, text=True)
    assert cp.returncode == 2 and "[usage]" in cp.stderr, cp.stderr
    dead = subprocess.Popen(["true"])
    dead.wait()
    cp = subprocess.run([str(SCRY), "control", str(dead.pid), "on"], capture_output=True,
                        text=True)
    assert cp.returncode != 0 and "[no_such_process]" in cp.stderr, cp.stderr
    cp = subprocess.run([str(SCRY), "control", str(os.getpid()), "off"], capture_output=True,
                        text=True)
    assert cp.returncode != 0 and "[not_found]" in cp.stderr and "scry run" in cp.stderr, cp.stderr
    cp = subprocess.run([str(SCRY), "control", str(os.getpid()), "pause"], capture_output=True,
                        text=True)
    assert cp.returncode == 2 and "say on or off" in cp.stderr, cp.stderr


def test_control_and_collect_touch_only_part_directories(tmp_path):
    """An environment (or a command line) may name any directory: scry control writes only into
    a run's own part directory, and scry collect empties only one."""
    victim = tmp_path / "data"
    victim.mkdir(mode=0o700)
    (victim / "keep").write_text("precious")
    env = program_env()
    env["SCRY_PART_DIR"] = str(victim)
    sleeper = subprocess.Popen(["sleep", "30"], env=env)
    try:
        cp = subprocess.run([str(SCRY), "control", str(sleeper.pid), "off"], capture_output=True,
                            text=True)
        assert cp.returncode != 0 and "[not_found]" in cp.stderr, cp
        assert sorted(p.name for p in victim.iterdir()) == ["keep"]
        done = subprocess.Popen(["true"])
        done.wait()
        cp = subprocess.run([str(SCRY), "collect", "--pid", str(done.pid), "--part-dir",
                             str(victim), "-o", str(tmp_path / "p.json")], capture_output=True,
                            text=True)
        assert cp.returncode == 2 and "not a part directory" in cp.stderr, cp
        assert (victim / "keep").read_text() == "precious"
    finally:
        sleeper.kill()
        sleeper.wait()


USER, OTHER = 54321, 54322  # uids with no account: only their numbers matter


def _process_of(uid, part_dir):
    """A process of user uid whose environment names part_dir; returned once /proc shows it as
    uid's (setpriv has switched)."""
    setpriv = shutil.which("setpriv")
    env = program_env()
    env["SCRY_PART_DIR"] = str(part_dir)
    proc = subprocess.Popen([setpriv, f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
                             "--", "sleep", "60"], env=env)
    deadline = time.monotonic() + 10
    while os.stat(f"/proc/{proc.pid}").st_uid != uid:
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.01)
    return proc


def _part_dir(parent, name, mode=0o755, owner=0):
    parent.mkdir(mode=mode, exist_ok=True)
    os.chmod(parent, mode)
    os.chown(parent, owner, owner)
    d = parent / name
    d.mkdir(mode=0o700)
    os.chown(d, USER, USER)
    return d


def test_root_control_walks_the_part_directory_component_by_component(tmp_path):
    """Issue 26 item 9: root's `scry control PID` writes into the directory named by the
    process's SCRY_PART_DIR. Only the last component was checked: a link or a directory another
    user can change in the middle led root's write elsewhere. Each component is now opened with
    O_NOFOLLOW and must be root's or the process's user's, and not writable by others unless
    sticky; the write goes through the last one's descriptor."""
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("needs root (scry control as root) and setpriv (a process of another user)")
    os.chmod(tmp_path, 0o755)
    real = _part_dir(tmp_path / "real", "scry-parts-t")
    user_dir = tmp_path / "u"
    user_dir.mkdir()
    os.chown(user_dir, USER, USER)
    (user_dir / "link").symlink_to(real.parent)
    refused = {
        "a link in the middle": (user_dir / "link" / real.name, "is a symbolic link"),
        "another user's world-writable directory": (
            _part_dir(tmp_path / "shared", "scry-parts-s", 0o777, OTHER),
            "belongs to another user"),
        "a group-writable directory": (_part_dir(tmp_path / "grp", "scry-parts-g", 0o775),
                                       "may be changed by other users"),
        "a world-writable directory of the user's": (
            _part_dir(tmp_path / "open", "scry-parts-o", 0o777, USER),
            "may be changed by other users"),
    }
    for case, (part_dir, why) in refused.items():
        proc = _process_of(USER, part_dir)
        try:
            cp = subprocess.run([str(SCRY), "control", str(proc.pid), "off"],
                                capture_output=True, text=True, timeout=30)
        finally:
            proc.kill()
            proc.wait()
        first = cp.stderr.splitlines()[0] if cp.stderr else ""
        assert cp.returncode == 1 and first.endswith("[permission_denied]"), (case, cp.stderr)
        assert f"refusing the part directory {part_dir}" in first and why in first, (case, first)
        assert not (real / "control").exists(), case
        assert not os.path.exists(os.path.realpath(part_dir) + "/control"), case
    # A sticky world-writable directory (like /tmp) on the way is fine, and so is a plain path.
    for part_dir in (_part_dir(tmp_path / "sticky", "scry-parts-k", 0o1777),
                     _part_dir(tmp_path / "ok", "scry-parts-ok")):
        proc = _process_of(USER, part_dir)
        try:
            cp = subprocess.run([str(SCRY), "control", str(proc.pid), "off"],
                                capture_output=True, text=True, timeout=30)
        finally:
            proc.kill()
            proc.wait()
        assert cp.returncode == 0, cp.stderr
        assert (part_dir / "control").read_text() == "off\n"
        assert (part_dir / "control").stat().st_mode & 0o777 == 0o600
        assert sorted(p.name for p in part_dir.iterdir()) == ["control"]


def test_dump_pid_asks_for_allocations_only_through_a_checked_directory(tmp_path):
    """The same walk for `scry dump --pid`'s request for a run's allocation samples: a
    SCRY_PART_DIR through a link is refused at once (a warning; the heap is dumped without
    them), where the request used to be written through the link and waited for 10 s."""
    real = tmp_path / "real" / "scry-parts-d"
    real.mkdir(parents=True, mode=0o700)
    os.chmod(real, 0o700)
    (tmp_path / "link").symlink_to(real.parent)
    env = program_env()
    env["SCRY_PART_DIR"] = str(tmp_path / "link" / real.name)
    proc = subprocess.Popen([str(preferred_python()), "-c",
                             "import sys, time; print(1, flush=True); time.sleep(60)"],
                            env=env, stdout=subprocess.PIPE)
    try:
        assert proc.stdout.readline()
        cp = subprocess.run([str(SCRY), "dump", "--pid", str(proc.pid), "-o",
                             str(tmp_path / "h.heap")], capture_output=True, text=True,
                            timeout=60)
    finally:
        proc.kill()
        proc.wait()
    assert cp.returncode == 0, cp.stderr
    assert "no allocation samples: refusing the part directory" in cp.stderr, cp.stderr
    assert "is a symbolic link" in cp.stderr, cp.stderr
    assert list(real.iterdir()) == []


def test_profile_interval_rewrites_a_growing_profile(python_exe, tmp_path):
    out = tmp_path / "p.json"
    argv = [str(a) for a in (SCRY, "run", "--no-view", "--profile-interval", "0.5", "--python",
                             python_exe, "-o", out, TARGETS / "run_cpu_split.py")]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=program_env())
    seen = []
    try:
        while proc.poll() is None:
            time.sleep(0.2)
            if out.exists():
                # Every read is a whole profile: the writes are atomic.
                seen.append(json.loads(out.read_text()))
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    ran = Ran(argv, proc.returncode, stdout, stderr, profile_path=out)
    assert proc.returncode == 0, ran.describe()
    final = load_profile(ran)
    elapsed = [p["elapsed_time_sec"] for p in seen]
    assert len(set(elapsed)) >= 3, elapsed  # several rewrites while it ran
    assert elapsed == sorted(elapsed), elapsed  # growing
    assert elapsed[0] < final["elapsed_time_sec"] - 0.5, (elapsed, final["elapsed_time_sec"])
    assert [p["n_samples"] for p in seen] == sorted(p["n_samples"] for p in seen)


def test_start_in_a_plain_python_run_profiles_cpu(python_exe, tmp_path):
    env = env_with_package()
    env["SCRY_BIN"] = str(SCRY)
    env["SCRY_OUTFILE"] = str(tmp_path / "p.json")
    cp = subprocess.run([python_exe, str(TARGET), "plain"], capture_output=True, env=env,
                        cwd=tmp_path, timeout=120)
    returncode, stdout, stderr = cp.returncode, cp.stdout, cp.stderr
    ran = Ran([python_exe, str(TARGET), "plain"], returncode, stdout, stderr,
              profile_path=tmp_path / "p.json")
    assert returncode == 0, ran.describe()
    truth = json.loads(stdout.decode().splitlines()[-1])
    # Complete at once: the agent's exit path waited for `scry collect` to write it.
    profile = load_profile(ran)
    funcs = functions(profile)
    assert "unprofiled" not in funcs, list(funcs)
    assert_cpu(profile, funcs["profiled"], truth["profiled"], "profiled(), after scry.start()")
    # CPU only: memory needs the agent from the process's start (scry run).
    assert profile["memory"] is False, profile["memory"]
    assert "scry run --off" in profile.get("note", ""), profile.get("note")



QUICK_APP = """\
import os
import sys

import scry

scry.start()
total = sum(i * i for i in range(200000))
if sys.argv[1] == "os._exit":
    os._exit(0)
"""


def test_start_in_a_plain_python_run_profile_is_complete_at_exit(python_exe, tmp_path):
    """scry.start() in a plain `python app.py`: the profile is there, whole, the moment the
    process's exit is seen (it came about 0.3 s after: a script reading it at once raced the
    writer). 20 runs, ending by returning and by os._exit, read at once, never waited for."""
    app = tmp_path / "app.py"
    app.write_text(QUICK_APP)
    env = env_with_package()
    env["SCRY_BIN"] = str(SCRY)
    parts = tmp_path / "tmp"  # the part directories (tempfile.mkdtemp), to see them removed
    parts.mkdir()
    env["TMPDIR"] = str(parts)
    for i in range(20):
        out = tmp_path / f"p{i}.json"
        env["SCRY_OUTFILE"] = str(out)
        how = "os._exit" if i % 2 else "return"
        # stderr to a file, not a pipe: `scry collect` shares it, and a pipe's reader would
        # wait for collect too (a shell does not).
        with open(tmp_path / f"err{i}.txt", "wb") as err:
            cp = subprocess.run([python_exe, str(app), how], stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=err, env=env, cwd=tmp_path,
                                timeout=120)
        there = out.exists()
        text = out.read_text() if there else ""
        said = (tmp_path / f"err{i}.txt").read_text(errors="replace")
        assert cp.returncode == 0, said
        assert there, f"run {i} ({how}): no {out.name} when the process had exited; {said}"
        profile = json.loads(text)
        assert profile["memory"] is False and profile["elapsed_time_sec"] > 0, (how, profile)
        assert f"scry: wrote {out}" in said, said
    assert not list(parts.iterdir()), list(parts.iterdir())
