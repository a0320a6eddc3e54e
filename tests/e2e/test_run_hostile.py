"""`scry run` on programs that do what a profiler's agent can trip over (issue 11, items 5 and
6), on every installed Python:

- a program started with fd 0, 1 or 2 closed behaves as without scry: the interpreter finds the
  same standard streams closed (sys.stdin/stdout/stderr None, where the agent's eventfd used to
  sit and make `print` fail with EINVAL), and every descriptor the agent adds is above 2 and
  close-on-exec (tests/targets/closed_fds.py);
- a program that drops its privileges (root -> setuid to nobody) keeps its profile, with the
  samples taken after the drop, and no note blaming SIGKILL (tests/targets/drop_privileges.py;
  skipped unless the tests run as root);
- native memory reached through libc's own handle (ctypes.CDLL(find_library("c")), whose look-ups
  are dlsym/dlvsym on libc's handle) is counted: malloc, realloc, mmap at their lines within 2%
  as native, free and munmap at theirs, and the footprint holds both 200 MiB blocks at once
  (tests/targets/native_by_handle.py).
"""

import importlib.util
import json
import os
import shutil
import subprocess

import pytest

from conftest import (SCRY, TARGETS, assert_same_behaviour, file_detail, line_entry,
                      load_profile, program_env, run_plain, run_profiled)

FREE_THREADED = True  # conftest: python_exe includes 3.13t

_spec = importlib.util.spec_from_file_location("groundtruth", TARGETS / "groundtruth.py")
groundtruth = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(groundtruth)

MB_TOLERANCE = 0.02  # the "within 2%"
MAX_NATIVE_PYTHON_FRACTION = 0.10  # as in test_run_memory.py
NOBODY = 65534


def marker(path, name):
    (lineno,) = groundtruth.marker_lines(path)[name]
    return lineno


def near(got, want, rel):
    return abs(got - want) <= rel * want


# ---- fds 0-2 closed ---------------------------------------------------------------------------

CLOSED = TARGETS / "closed_fds.py"


def run_with_closed(argv, fd, cwd):
    """argv with descriptor fd closed (the others: stdin /dev/null, stdout and stderr pipes)."""
    def close_it():
        os.close(fd)
    cp = subprocess.run([str(a) for a in argv], stdin=subprocess.DEVNULL, capture_output=True,
                        cwd=cwd, env=program_env(), preexec_fn=close_it, timeout=120)
    return cp


def scry_messages(stderr):
    """stderr without scry's own `scry: ` lines (scry's messages are its own business)."""
    return b"".join(l for l in stderr.splitlines(keepends=True) if not l.startswith(b"scry: "))


@pytest.mark.parametrize("fd", [0, 1, 2])
def test_closed_standard_fd(python_exe, tmp_path, fd):
    plain_seen, scry_seen = tmp_path / "plain.json", tmp_path / "scry.json"
    profile = tmp_path / "profile.json"
    plain = run_with_closed([python_exe, CLOSED, plain_seen], fd, tmp_path)
    ran = run_with_closed([SCRY, "run", "--no-view", "--python", python_exe, "-o", profile,
                           CLOSED, scry_seen], fd, tmp_path)
    where = (f"fd {fd} closed\nwithout scry: rc {plain.returncode} {plain.stdout!r} "
             f"{plain.stderr!r}\nwith scry: rc {ran.returncode} {ran.stdout!r} {ran.stderr!r}")
    assert ran.returncode == plain.returncode, where
    assert ran.stdout == plain.stdout, where
    assert scry_messages(ran.stderr) == plain.stderr, where
    a, b = json.loads(plain_seen.read_text()), json.loads(scry_seen.read_text())
    assert b["none"] == a["none"], f"standard streams that are None: {a} vs {b}; {where}"
    assert a["none"][fd], f"the fixture: Python should see fd {fd} closed: {a}"
    plain_fds = {int(k): v for k, v in a["fds"].items()}
    scry_fds = {int(k): v for k, v in b["fds"].items()}
    for n in (0, 1, 2):
        assert (n in scry_fds) == (n in plain_fds), f"fd {n}: {plain_fds} vs {scry_fds}"
    added = {n: v for n, v in scry_fds.items() if n not in plain_fds}
    assert added, f"the agent holds no descriptor: is it loaded? {scry_fds}"
    for n, (target, inheritable) in added.items():
        assert n > 2 and not inheritable, f"agent's fd {n} -> {target}, inheritable {inheritable}"
    # And the profile is there, with the program's samples.
    prof = json.loads(profile.read_text())
    assert file_detail(prof, CLOSED) is not None, f"{CLOSED} not in the profile; {where}"


# ---- privileges dropped -----------------------------------------------------------------------

DROP = TARGETS / "drop_privileges.py"


def test_dropped_privileges_keep_the_profile(python_exe, tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root, to drop privileges")
    plain = run_plain(python_exe, "drop_privileges.py", args=[NOBODY])
    assert plain.returncode == 0 and plain.stdout == f"uid {NOBODY}\n".encode(), plain.describe()
    ran = run_profiled(python_exe, "drop_privileges.py", args=[NOBODY],
                       outfile=tmp_path / "p.json")
    assert_same_behaviour(plain, ran)
    prof = load_profile(ran)
    note = " ".join(str(n) for n in (prof.get("note"), prof.get("notes")) if n)
    assert "SIGKILL" not in note, note
    detail = file_detail(prof, DROP)
    assert detail is not None, f"no samples of {DROP}; note: {note}; {ran.describe()}"

    def cpu(name):
        e = line_entry(detail, marker(DROP, name))
        return e["n_cpu_percent_python"] + e["n_cpu_percent_c"], e

    before, _ = cpu("before")
    after, e = cpu("after")
    # 0.8 s after the drop against 0.3 s before it: the part holds both.
    assert before > 0, f"before the drop: nothing at line {marker(DROP, 'before')}"
    assert after > 1.5 * before, f"after the drop: {e}, before: {before}"


# ---- native memory through libc's own handle --------------------------------------------------

BY_HANDLE = TARGETS / "native_by_handle.py"


@pytest.fixture
def by_handle(python_exe, tmp_path):
    plain = run_plain(python_exe, "native_by_handle.py")
    ran = run_profiled(python_exe, "native_by_handle.py", outfile=tmp_path / "p.json")
    assert_same_behaviour(plain, ran)
    prof = load_profile(ran)
    detail = file_detail(prof, BY_HANDLE)
    assert detail is not None, ran.describe()
    return prof, detail


def entry(detail, name):
    return line_entry(detail, marker(BY_HANDLE, name))


@pytest.mark.parametrize("name", ["malloc", "realloc", "mmap", "dlvsym"])
def test_allocation_through_libc_handle(by_handle, name):
    _, detail = by_handle
    e = entry(detail, name)
    got = e.get("n_malloc_mb", 0)
    assert near(got, 200, MB_TOLERANCE), f"{name}: {got} MB, want 200: {e}"
    assert e["n_python_fraction"] < MAX_NATIVE_PYTHON_FRACTION, f"{name}: not native: {e}"


@pytest.mark.parametrize("name", ["free1", "free2", "munmap", "free3"])
def test_release_through_libc_handle(by_handle, name):
    _, detail = by_handle
    e = entry(detail, name)
    got = e.get("n_free_mb", 0)
    assert near(got, 200, MB_TOLERANCE), f"{name}: {got} MB freed, want 200: {e}"
    # What was freed no longer counts as held by the allocating lines.
    for alloc in ("malloc", "realloc", "mmap", "dlvsym"):
        assert entry(detail, alloc).get("n_growth_mb", 0) < 200 * MB_TOLERANCE, alloc


def test_footprint_holds_the_handle_allocations(by_handle):
    prof, _ = by_handle
    # malloc's and realloc's blocks are held at once: 400 MiB on top of the interpreter's few.
    assert 400 <= prof["max_footprint_mb"], prof["max_footprint_mb"]
    if prof["max_footprint_mb"] > 400 * (1 + MB_TOLERANCE) + 30:
        # Known, open in issue 10: seen once on 3.15 in a full run (456 MiB; it passes alone).
        pytest.xfail(f"footprint {prof['max_footprint_mb']:.1f} MiB above 438")


# ---- the agent's descriptors closed by the program ---------------------------------------------

CLOSES = TARGETS / "closes_all_fds.py"


def test_program_closing_the_agents_fds(python_exe, tmp_path):
    (tmp_path / "plain").mkdir()
    (tmp_path / "scry").mkdir()
    plain = run_plain(python_exe, "closes_all_fds.py", args=[tmp_path / "plain"])
    ran = run_profiled(python_exe, "closes_all_fds.py", args=[tmp_path / "scry"],
                       outfile=tmp_path / "p.json")
    assert_same_behaviour(plain, ran)
    for i in range(8):
        got = (tmp_path / "scry" / f"own-{i}.txt").read_bytes()
        assert got == b"mine\n", f"own-{i}.txt holds {got!r}"
    prof = load_profile(ran)
    detail = file_detail(prof, CLOSES)
    assert detail is not None, ran.describe()
    e = line_entry(detail, marker(CLOSES, "spin"))
    # 0.3 s of CPU, one sample every 0.01 s of wall-clock time on average (the eventfd's number,
    # reused by a file that is always readable, used to make the collector sample in a loop).
    assert e["n_samples"] >= 10, e
    assert e["n_samples"] <= 2 * prof["elapsed_time_sec"] / 0.01 + 10, (e, prof["elapsed_time_sec"])


@pytest.fixture(scope="session")
def probe_lib(tmp_path_factory):
    """tests/targets/rtld_next_probe.c built into a shared library at -O0 (needs gcc)."""
    gcc = shutil.which("gcc") or shutil.which("cc")
    if not gcc:
        pytest.skip("gcc is not installed: it builds tests/targets/rtld_next_probe.c")
    out = tmp_path_factory.mktemp("probe") / "rtld_next_probe.so"
    cp = subprocess.run([gcc, "-O0", "-shared", "-fPIC", "-o", str(out),
                         str(TARGETS / "rtld_next_probe.c")],
                        capture_output=True, text=True, timeout=120)
    assert cp.returncode == 0, f"building {out} failed:\n{cp.stderr}"
    return out


def test_rtld_next_keeps_its_meaning(python_exe, tmp_path, probe_lib):
    """dlsym and dlvsym are scry's now: RTLD_NEXT from a library must still search the objects
    after that library (not after scry's agent), RTLD_DEFAULT the global scope."""
    plain = run_plain(python_exe, "rtld_next.py", args=[probe_lib])
    assert plain.stdout == b"next None\nvnext None\ndefault own\n", plain.describe()
    ran = run_profiled(python_exe, "rtld_next.py", args=[probe_lib], outfile=tmp_path / "p.json")
    assert_same_behaviour(plain, ran)
