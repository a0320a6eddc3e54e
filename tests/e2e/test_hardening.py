"""Hardening (issue 11, items 1, 3, 4 and 7): output files, terminal text, inputs that never end,
messages.

Output files: every file scry writes goes through one helper (src/platform/outfile.h): a new file
with an unpredictable name in the target's folder (O_EXCL|O_NOFOLLOW), mode 0600, fsynced, then
renamed over the target. A symlink planted at the target is replaced, never followed; files and
symlinks planted at the temporary names scry used to use (PATH.tmp-PID, PATH.tmp.PID) are never
opened; another user's planting in a world-writable folder changes nothing.

Terminal text: the names of tests/targets/hostile_names.py (function, file, thread, type, dict
key, command line) carry an OSC sequence, CSI, the one-character C1 CSI, a bidirectional override,
a tab and U+FFFE/U+FFFF; no text output may carry any of them, every text output must be UTF-8,
and the names must still be there ("pwned" marks them). The SVG must parse as XML.

Inputs: a FIFO or /dev/zero given as a profile, snapshot or core, or named as an ELF image by a
core's file notes, ends with an error within a second; `flamegraph --folded --max-depth 100000` on
a long chain ends with too_large instead of growing with the square of the chain's depth.
"""

import json
import os
import re
import resource
import shutil
import stat
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conftest import (SANITIZER_MARKS, SCRY, SCRY_TIMEOUT_S, TARGETS, Target,
                      preferred_python)

FREE_THREADED = True  # 3.13t: its stacks and heap (the tests taking python_exe)

HOSTILE = TARGETS / "hostile_names.py"
# What must never reach a terminal: C0 controls (newline aside), DEL, C1, the bidirectional
# controls, the line/paragraph separators and the noncharacters U+FFFE/U+FFFF.
FORBIDDEN = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029"
                       "\u202a-\u202e\u2066-\u2069\ufffe\uffff]")
CMD_ARG = "arg\x1b]0;cmd-pwned\x07\u009b2J"


def run_bytes(args, timeout=SCRY_TIMEOUT_S, **kwargs):
    """scry ARGS with stdout and stderr as bytes (run_scry decodes with errors=replace, which
    would hide bytes that are not UTF-8). Fails on a hang, a signal or a sanitizer report."""
    argv = [str(a) for a in args]
    try:
        cp = subprocess.run(argv, capture_output=True, timeout=timeout, **kwargs)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{' '.join(argv)} did not finish in {timeout} s")
    assert cp.returncode >= 0, f"{argv}: killed by signal {-cp.returncode}"
    for mark in SANITIZER_MARKS:
        assert mark.encode() not in cp.stderr, cp.stderr.decode(errors="replace")
    return cp


def assert_clean(data, where, marker=True):
    """data (bytes) is UTF-8 and holds none of FORBIDDEN; with marker, the evil names are in it."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        pytest.fail(f"{where}: output is not UTF-8 ({e}): {data[max(0, e.start - 40):e.end + 40]!r}")
    bad = FORBIDDEN.search(text)
    assert bad is None, (f"{where}: {bad.group()!r} reached the output: "
                         f"{text[max(0, bad.start() - 60):bad.end() + 60]!r}")
    if marker:
        assert "pwned" in text, f"{where}: the evil names are not in the output:\n{text[:2000]}"
    return text


@pytest.fixture
def one_python():
    return preferred_python()


@pytest.fixture
def hostile(tmp_path):
    """hostile(python) -> a running hostile_names.py target (killed at teardown)."""
    started = []

    def start(python):
        t = Target([str(python), str(HOSTILE), CMD_ARG], tmp_path / f"hostile{len(started)}.err")
        started.append(t)
        t.ready = t.next_json()
        assert t.ready.get("ready") is True, t.ready
        return t

    yield start
    for t in started:
        t.kill()


def scry(*args):
    return [str(SCRY)] + [str(a) for a in args]


def profile(python, out, seconds, *opts):
    """scry run of hostile_names.py --run SECONDS (every file profiled: the evil file name is
    not under the program's folder)."""
    cp = run_bytes(scry("run", "--python", python, "--no-view", "--profile-all", *opts, "-o", out,
                        HOSTILE, "--run", seconds), timeout=120)
    assert cp.returncode == 0, cp.stderr.decode(errors="replace")


def ok_bytes(*args, timeout=120):
    cp = run_bytes(scry(*args), timeout=timeout)
    assert cp.returncode == 0, (f"scry {' '.join(map(str, args))}: rc {cp.returncode}\n"
                                f"{cp.stderr.decode(errors='replace')}")
    return cp


# ---- 3: terminal text --------------------------------------------------------------------------

def test_no_control_reaches_a_text_output(hostile, python_exe, tmp_path):
    t = hostile(python_exe)
    pid = t.pid
    assert_clean(ok_bytes("stacks", "--pid", pid).stdout, "stacks")
    text = ok_bytes("stacks", "--pid", pid).stdout.decode()
    assert "cmd-pwned" in text, "the command line is not shown"
    # --json keeps the data exact, escaped: the document reads back to the very names.
    doc = json.loads(assert_clean(ok_bytes("stacks", "--json", "--pid", pid).stdout,
                                  "stacks --json"))
    names = {t_["name"] for t_ in doc["threads"]}
    assert "thread\x1b]0;pwned\x07\x1b[31m\u009b2J\u202eevil\t\ufffe\uffff" in names, names
    funcs = {f["function"] for t_ in doc["threads"] for f in t_["frames"]}
    assert any(f.startswith("evil\x1b]0;pwned\x07") for f in funcs), funcs
    # a local's value (stacks --locals): controls escaped in the value itself, the rest cleaned
    text = assert_clean(ok_bytes("stacks", "--locals", "--pid", pid).stdout, "stacks --locals")
    assert "label = 'local\\x1b]0;pwned\\x07" in text, text
    doc = json.loads(assert_clean(ok_bytes("stacks", "--locals", "--json", "--pid", pid).stdout,
                                  "stacks --locals --json"))
    values = {l_["value"] for t_ in doc["threads"] for f in t_["frames"] for l_ in f["locals"]}
    want = "'local\\x1b]0;pwned\\x07\\x1b[31m\u009b2J\u202eevil\\t\ufffe\uffff'"
    assert want in values, values

    before = tmp_path / "before.heap"
    after = tmp_path / "after.heap"
    # Contents captured: the dict key's text is in the root paths.
    ok_bytes("dump", "--capture-contents", "--pid", pid, "-o", before)
    t.command("grow 200")
    assert t.next_json()["grown"] == 200
    ok_bytes("dump", "--capture-contents", "--pid", pid, "-o", after)

    assert_clean(ok_bytes("analyze", "--top", "1000", after).stdout, "analyze")
    assert_clean(ok_bytes("analyze", "--top", "1000", "--json", after).stdout, "analyze --json")
    out = assert_clean(ok_bytes("query", after, "--type", "Evil" + "\x1b]0;pwned\x07\x1b[31m"
                                "\u009b2J\u202eevil\t\ufffe\uffff").stdout, "query --type")
    addr = re.search(r"0x[0-9a-f]+", out.split("largest by retained size")[1]).group()
    assert_clean(ok_bytes("query", after, "--retaining-path", addr).stdout,
                 "query --retaining-path")
    assert_clean(ok_bytes("query", after, "--locate", "main").stdout, "query --locate",
                 marker=False)
    assert_clean(ok_bytes("diff", before, after).stdout, "diff")
    assert_clean(ok_bytes("flamegraph", "--folded", after).stdout, "flamegraph --folded (heap)")
    assert_clean(ok_bytes("flamegraph", "--folded", "--diff", before, after).stdout,
                 "flamegraph --folded --diff (heap)")
    svg = tmp_path / "heap.svg"
    ok_bytes("flamegraph", after, "-o", svg)
    root = ET.parse(svg).getroot()  # U+FFFE/U+FFFF would make it unreadable
    assert "pwned" in "".join(root.itertext())
    assert_clean(svg.read_bytes(), "flamegraph SVG")
    # Error messages quote what they were given.
    cp = run_bytes(scry("query", after, "--type", "No\x1b]0;pwned\x07Such"))
    assert cp.returncode == 1
    assert_clean(cp.stderr, "error message")


def test_no_control_reaches_the_profile_views(one_python, tmp_path):
    prof = tmp_path / "p.json"
    profile(one_python, prof, "0.6", "--stacks")
    assert_clean(ok_bytes("view", "--cli", prof).stdout, "view --cli")
    assert_clean(ok_bytes("flamegraph", "--folded", prof).stdout, "flamegraph --folded (profile)")
    assert_clean(ok_bytes("view", "--format", "folded", prof).stdout, "view --format folded")
    svg = tmp_path / "cpu.svg"
    ok_bytes("flamegraph", prof, "-o", svg)
    assert "pwned" in "".join(ET.parse(svg).getroot().itertext())


# ---- 1: output files ---------------------------------------------------------------------------

def _mode(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


def run_with_known_pid(argv, plant, cwd=None, umask=None):
    """Forks, lets plant(pid) prepare the folder knowing the pid scry will have, then execs
    argv in the child. Returns (returncode, stderr bytes)."""
    r, w = os.pipe()
    err_r, err_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(w)
            os.close(err_r)
            os.read(r, 1)
            os.dup2(err_w, 2)
            fd = os.open(os.devnull, os.O_RDWR)
            os.dup2(fd, 0)
            os.dup2(fd, 1)
            if cwd:
                os.chdir(cwd)
            if umask is not None:
                os.umask(umask)
            os.execv(argv[0], argv)
        finally:
            os._exit(127)
    os.close(r)
    os.close(err_w)
    try:
        plant(pid)
    finally:
        os.write(w, b"x")
        os.close(w)
    deadline = time.monotonic() + 120
    while True:  # stderr is small: the pipe holds it until the end
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            os.close(err_r)
            pytest.fail(f"{argv} did not finish in 120 s")
        time.sleep(0.01)
    chunks = []
    while True:
        c = os.read(err_r, 65536)
        if not c:
            break
        chunks.append(c)
    os.close(err_r)
    return os.waitstatus_to_exitcode(status), b"".join(chunks)


@pytest.fixture
def heap_and_profile(hostile, one_python, tmp_path):
    """A snapshot and a profile to turn into outputs."""
    t = hostile(one_python)
    heap = tmp_path / "src.heap"
    ok_bytes("dump", "--pid", t.pid, "-o", heap)
    prof = tmp_path / "src.json"
    profile(one_python, prof, "0.2", "--stacks")
    return t, heap, prof


def _outputs(t, heap, prof, one_python):
    """(name, argv builder taking the output path, mode): every command that writes a file."""
    return [
        ("profile", lambda p: scry("run", "--python", one_python, "--no-view", "-o", p, HOSTILE,
                                   "--run", "0.05"), 0o600),
        ("snapshot", lambda p: scry("dump", "--pid", t.pid, "-o", p), 0o600),
        ("graph", lambda p: scry("dump", "--pid", t.pid, "-o", str(p) + ".heap", "--graph", p),
         0o600),
        ("html", lambda p: scry("view", "--html", "-o", p, prof), 0o600),
        ("svg", lambda p: scry("flamegraph", heap, "-o", p), 0o600),
        ("folded", lambda p: scry("view", "--format", "folded", "-o", p, prof), 0o600),
        ("profile-svg", lambda p: scry("flamegraph", prof, "-o", p), 0o600),
    ]


def test_planted_links_and_files_are_never_followed(heap_and_profile, one_python, tmp_path):
    t, heap, prof = heap_and_profile
    for name, argv_of, mode in _outputs(t, heap, prof, one_python):
        d = tmp_path / f"out-{name}"
        d.mkdir()
        victim = tmp_path / f"victim-{name}"
        victim.write_text("precious\n")
        os.chmod(victim, 0o644)
        target = d / f"report-{name}"
        os.symlink(victim, target)
        planted = []

        def plant(pid, target=target, victim=victim, planted=planted):
            for i, old in enumerate((f"{target}.tmp-{pid}", f"{target}.tmp.{pid}")):
                other = tmp_path / f"victim-{name}-{i}"
                other.write_text("precious\n")
                os.symlink(other, old)
                planted.append((Path(old), other))

        rc, err = run_with_known_pid(argv_of(target), plant, umask=0)
        assert rc == 0, f"{name}: rc {rc}\n{err.decode(errors='replace')}"
        assert victim.read_text() == "precious\n", f"{name}: the symlink's target was written"
        assert target.is_file() and not target.is_symlink(), f"{name}: target not replaced"
        assert target.stat().st_size > 0
        assert _mode(target) == mode, f"{name}: mode {oct(_mode(target))} under umask 0"
        for old, other in planted:
            assert old.is_symlink(), f"{name}: {old} was removed or replaced"
            assert other.read_text() == "precious\n", f"{name}: {old} was followed"
        left = [p.name for p in d.iterdir()
                if p != target and p not in [o for o, _ in planted]
                and p.name != f"report-{name}.heap"]  # dump --graph's snapshot
        assert left == [], f"{name}: temporary files left behind: {left}"


def test_another_users_plantings_change_nothing(heap_and_profile, one_python, tmp_path):
    """nobody plants, in a world-writable sticky folder, a symlink at the target and files (mode
    0666, owned by nobody) at the old temporary names; root then writes there."""
    if os.geteuid() != 0:
        pytest.skip("needs root to act as another user")
    try:
        import pwd
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("no user 'nobody'")
    t, heap, prof = heap_and_profile
    shared = Path("/tmp") / f"scry-shared-{os.getpid()}"
    shared.mkdir(mode=0o1777)
    os.chmod(shared, 0o1777)
    victim = tmp_path / "root-victim"
    victim.write_text("precious\n")
    try:
        for name, argv_of, mode in _outputs(t, heap, prof, one_python):
            target = shared / f"out-{name}"

            def plant(pid, target=target):
                child = os.fork()
                if child == 0:
                    try:
                        os.setgid(nobody.pw_gid)
                        os.setuid(nobody.pw_uid)
                        os.symlink(victim, target)
                        for old in (f"{target}.tmp-{pid}", f"{target}.tmp.{pid}"):
                            fd = os.open(old, os.O_CREAT | os.O_WRONLY, 0o666)
                            os.fchmod(fd, 0o666)
                            os.close(fd)
                        os._exit(0)
                    except BaseException:
                        os._exit(1)
                _, st = os.waitpid(child, 0)
                assert os.waitstatus_to_exitcode(st) == 0, "nobody could not plant"

            rc, err = run_with_known_pid(argv_of(target), plant)
            assert rc == 0, f"{name}: rc {rc}\n{err.decode(errors='replace')}"
            assert victim.read_text() == "precious\n", f"{name}: root followed nobody's link"
            st = os.lstat(target)
            assert stat.S_ISREG(st.st_mode) and st.st_uid == 0, f"{name}: {st}"
            assert stat.S_IMODE(st.st_mode) == mode
            for old in shared.glob(f"out-{name}.tmp*"):
                s2 = os.lstat(old)
                assert s2.st_uid == nobody.pw_uid and s2.st_size == 0, (
                    f"{name}: scry wrote into nobody's {old}")
        # nobody's FIFO at the target: opening it would wait for nobody's reader; replaced.
        fifo_target = shared / "out-fifo.svg"

        def plant_fifo(pid):
            child = os.fork()
            if child == 0:
                try:
                    os.setgid(nobody.pw_gid)
                    os.setuid(nobody.pw_uid)
                    os.mkfifo(fifo_target, 0o666)
                    os._exit(0)
                except BaseException:
                    os._exit(1)
            _, st = os.waitpid(child, 0)
            assert os.waitstatus_to_exitcode(st) == 0

        t0 = time.monotonic()
        rc, err = run_with_known_pid(scry("flamegraph", heap, "-o", fifo_target), plant_fifo)
        assert rc == 0, err.decode(errors="replace")
        assert time.monotonic() - t0 < 10
        st = os.lstat(fifo_target)
        assert stat.S_ISREG(st.st_mode) and st.st_uid == 0 and stat.S_IMODE(st.st_mode) == 0o600
    finally:
        shutil.rmtree(shared, ignore_errors=True)


def test_dev_stdout_is_written_not_replaced(heap_and_profile):
    """-o /dev/stdout is the one symlink written through: it leads to our own stdout (as root,
    replacing it would replace the system's /dev/stdout)."""
    _, heap, prof = heap_and_profile
    before = os.readlink("/dev/stdout")
    cp = ok_bytes("view", "--format", "folded", "-o", "/dev/stdout", prof)
    assert b"pwned" in cp.stdout
    cp = ok_bytes("flamegraph", "--folded", "-o", "/dev/stdout", heap)
    assert b"pwned" in cp.stdout
    assert os.path.islink("/dev/stdout") and os.readlink("/dev/stdout") == before


def test_dump_graph_does_not_follow_a_symlink(hostile, one_python, tmp_path):
    t = hostile(one_python)
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    graph = tmp_path / "graph.jsonl"
    os.symlink(victim, graph)
    ok_bytes("dump", "--pid", t.pid, "-o", tmp_path / "g.heap", "--graph", graph)
    assert victim.read_text() == "precious\n"
    assert graph.is_file() and not graph.is_symlink()
    assert _mode(graph) == 0o600 and _mode(tmp_path / "g.heap") == 0o600
    assert json.loads(graph.read_text().splitlines()[0])


def test_run_checks_its_output_before_the_program_starts(one_python, tmp_path):
    marker = tmp_path / "started"
    prog = tmp_path / "prog.py"
    prog.write_text(f"open({str(marker)!r}, 'w').close()\nprint('ran')\n")
    cp = run_bytes(scry("run", "--python", one_python, "-o", "/nonexistent/dir/x.json", prog))
    assert cp.returncode == 1, cp
    err = cp.stderr.decode()
    assert "scry: error: cannot write /nonexistent/dir/x.json: its directory does not exist " \
           "[io_error]" in err, err
    assert not marker.exists(), "the program ran although its profile could not be written"
    assert cp.stdout == b""
    # A folder where the file cannot be created fails the same way.
    ro = tmp_path / "dir-as-target"
    ro.mkdir()
    cp = run_bytes(scry("run", "--python", one_python, "-o", ro, prog))
    assert cp.returncode == 1 and b"is a directory" in cp.stderr, cp.stderr
    assert not marker.exists()


# ---- 4: inputs that never end -----------------------------------------------------------------

def _fast_error(args, what):
    t0 = time.monotonic()
    cp = run_bytes(scry(*args), timeout=10)
    took = time.monotonic() - t0
    assert cp.returncode == 1, f"{what}: rc {cp.returncode}\n{cp.stderr!r}"
    assert took < 1.0, f"{what}: took {took:.2f} s"
    return cp.stderr.decode()


def test_fifos_and_devices_end_with_an_error(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    cases = [
        (["view", "--cli", fifo], "FIFO"), (["view", "--cli", "/dev/zero"], "character device"),
        (["view", "--html", "-o", tmp_path / "x.html", "/dev/zero"], "character device"),
        (["analyze", fifo], "FIFO"), (["analyze", "/dev/zero"], "character device"),
        (["check", fifo], "FIFO"), (["query", fifo, "--type", "x"], "FIFO"),
        (["diff", fifo, fifo], "FIFO"), (["flamegraph", "--folded", fifo], "FIFO"),
        (["flamegraph", "--folded", "/dev/zero"], "character device"),
        (["stacks", "--core", fifo], "FIFO"), (["stacks", "--core", "/dev/zero"], "character"),
        (["dump", "--core", fifo, "-o", tmp_path / "x.heap"], "FIFO"),
    ]
    for args, kind in cases:
        err = _fast_error(args, " ".join(map(str, args)))
        assert f"is a {kind}" in err and "not a regular file [io_error]" in err, (args, err)
    assert not (tmp_path / "x.heap").exists() and not (tmp_path / "x.html").exists()


def test_a_profile_over_the_cap_is_refused(tmp_path):
    big = tmp_path / "big.json"
    with open(big, "wb") as f:
        f.truncate((1 << 30) + 1)  # sparse: nothing is written
    err = _fast_error(["view", "--cli", big], "view of a 1 GiB + 1 profile")
    assert "[too_large]" in err and "1073741825 bytes" in err, err


def test_a_core_naming_a_fifo_as_its_image_ends(one_python, hostile, make_core, tmp_path):
    """The core's file notes name the interpreter's image; that path, rewritten in place to a
    FIFO's of the same length, must not block the reader."""
    t = hostile(one_python)
    with open(f"/proc/{t.pid}/maps") as f:
        paths = {line.split(None, 5)[5].strip() for line in f if len(line.split(None, 5)) == 6}
    image = next((p for p in paths if "libpython3" in os.path.basename(p)),
                 os.path.realpath(f"/proc/{t.pid}/exe"))
    core = make_core(t.pid)
    data = core.read_bytes()
    core.unlink()
    # A FIFO with the image's own name (scry picks libpython by its name) in a folder chosen
    # so that its path has exactly the image path's length.
    base = Path("/tmp") / f"scry-fifo-{os.getpid()}"
    base.mkdir()
    try:
        name = os.path.basename(image)
        fill = len(image) - len(str(base)) - 2 - len(name)
        if fill <= 0:
            pytest.skip(f"the image path {image} is too short to rewrite")
        (base / ("d" * fill)).mkdir()
        fifo = base / ("d" * fill) / name
        os.mkfifo(fifo)
        assert len(str(fifo)) == len(image)
        needle = image.encode() + b"\0"
        assert needle in data, "the image is not named in the core"
        bad = tmp_path / "fifo.core"
        bad.write_bytes(data.replace(needle, str(fifo).encode() + b"\0"))
        del data
        t0 = time.monotonic()
        cp = run_bytes(scry("stacks", "--core", bad), timeout=10)
        took = time.monotonic() - t0
        assert cp.returncode == 1, cp
        assert took < 1.0, f"took {took:.2f} s"
        assert b"is a FIFO, not a regular file" in cp.stderr, cp.stderr
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_folded_output_of_a_deep_chain_stays_bounded(hostile, one_python, tmp_path):
    t = hostile(one_python)
    t.command("chain 20000")
    assert t.next_json()["chain"] == 20000
    heap = tmp_path / "chain.heap"
    ok_bytes("dump", "--pid", t.pid, "-o", heap)

    def limit():  # 20000 frames deep: about 8 GB of folded lines if built
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    t0 = time.monotonic()
    cp = run_bytes(scry("flamegraph", "--folded", "--max-depth", "100000", heap), timeout=60,
                   preexec_fn=limit)
    took = time.monotonic() - t0
    assert cp.returncode == 1, cp.stderr
    err = cp.stderr.decode()
    assert "[too_large]" in err and "--max-depth" in err, err
    assert took < 30, took
    # The SVG of the same tree is linear in it, and so are folded lines cut at a depth.
    ok = run_bytes(scry("flamegraph", "--folded", "--max-depth", "200", heap), timeout=60,
                   preexec_fn=limit)
    assert ok.returncode == 0, ok.stderr
    # 200 frames kept, everything deeper in one [other] frame after them.
    assert max(line.count(b";") for line in ok.stdout.splitlines()) == 200
    assert b";[other] " in ok.stdout


# ---- 7: messages -------------------------------------------------------------------------------

def test_max_depth_message_names_the_range(tmp_path):
    cp = run_bytes(scry("flamegraph", "--max-depth", "1000000", tmp_path / "x"))
    assert cp.returncode == 2
    assert b"--max-depth needs a depth from 1 to 100000, not '1000000'" in cp.stderr, cp.stderr


def test_stdout_write_error_hints_about_stdout(heap_and_profile):
    _, heap, prof = heap_and_profile
    for args in (["analyze", heap], ["view", "--cli", prof], ["flamegraph", "--folded", heap]):
        with open("/dev/full", "wb") as full:
            cp = subprocess.run(scry(*args), stdout=full, stderr=subprocess.PIPE, timeout=60)
        err = cp.stderr.decode()
        assert cp.returncode == 1, (args, err)
        assert "cannot write to standard output" in err and "[io_error]" in err, err
        hint = [line for line in err.splitlines() if line.startswith("hint: ")]
        assert hint and "standard output" in hint[0] and "path" not in hint[0], err


def test_root_refused_is_not_told_to_run_as_root(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("about root")
    cp = run_bytes(scry("stacks", "--pid", "1"))
    if cp.returncode == 0 or b"[permission_denied]" not in cp.stderr:
        pytest.skip("pid 1 is readable here")
    err = cp.stderr.decode()
    assert "run as root" not in err and "already runs as root" in err, err


def test_a_process_that_exits_is_no_such_process(pythons, one_python):
    """Interpreters killed at every point of a read (before the attach, while _PyRuntime is
    read, while the image is opened through /proc/PID/root, while frames are read): the error
    is always no_such_process, never read_failed, not_python or io_error."""
    python = pythons.get("3.13") or one_python
    codes = {}
    for i in range(40):
        p = subprocess.Popen([python, "-c", "import time\nx = [str(i) for i in range(300000)]\n"
                              "print('r', flush=True)\ntime.sleep(10)"], stdout=subprocess.PIPE)
        try:
            assert p.stdout.readline() == b"r\n"
            s = subprocess.Popen(scry("stacks", "--json", "--pid", p.pid),
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            time.sleep(0.0005 * (i % 20))
        finally:
            p.kill()
            p.wait()
            p.stdout.close()
        out = s.communicate(timeout=SCRY_TIMEOUT_S)[0]
        assert s.returncode >= 0, f"scry died of signal {-s.returncode}"
        if s.returncode:
            err = json.loads(out)["error"]
            codes.setdefault(err["code"], err["message"])
    assert set(codes) <= {"no_such_process"}, codes
