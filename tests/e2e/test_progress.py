"""The progress line of long commands (src/common/progress.c): dump, analyze, diff, record and the
merge at the end of run, on every installed 3.11-3.15.

Each command runs with its stderr on a pseudo-terminal and SCRY_PROGRESS=always (drawn from the
start instead of after half a second, so that a small target shows it; still only on a terminal
and never with --json or --quiet). A progress line must appear (drawn with \\r ... ESC[K) and be
gone at the end: the terminal's final screen, replayed from the bytes, holds none of the texts
drawn. On a pipe, with --json and with --quiet, stderr has no progress bytes at all. An error
while a line is shown starts on a clean line.
"""

import fcntl
import os
import pty
import re
import struct
import subprocess
import termios
import threading
import time

import pytest

from conftest import SCRY, TARGETS, preferred_python, run_scry

DRAWN = re.compile(rb"\r(scry: [^\r\x1b]*)\x1b\[K")


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCRY_")}
    env.update(extra)
    return env


def on_pty(args, timeout=120, env=None):
    """Runs scry with stderr on a pseudo-terminal (200 columns, output not translated) and stdout
    on a pipe; returns (returncode, stdout, the bytes the terminal got)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
    attrs = termios.tcgetattr(slave)
    attrs[1] &= ~termios.OPOST  # the bytes as scry wrote them: no \n -> \r\n
    termios.tcsetattr(slave, termios.TCSANOW, attrs)
    proc = subprocess.Popen([str(SCRY)] + [str(a) for a in args], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=slave,
                            env=env or _env(SCRY_PROGRESS="always"), start_new_session=True)
    os.close(slave)
    out = []
    reader = threading.Thread(target=lambda: out.append(proc.stdout.read()), daemon=True)
    reader.start()
    got, deadline = b"", time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: every writer of the terminal has closed it
            break
        if not chunk:
            break
        got += chunk
    os.close(master)
    try:
        rc = proc.wait(timeout=max(1, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        pytest.fail(f"scry {args} did not finish in {timeout} s; terminal: {got[-2000:]!r}")
    reader.join(timeout=10)
    return rc, out[0] if out else b"", got


def screen(data):
    """The lines a terminal shows after data: \\r, \\n and ESC[K (erase to the end of the line)
    as a terminal does them; other bytes are text."""
    lines, col, i = [""], 0, 0
    text = data.decode("utf-8", "replace")
    while i < len(text):
        if text.startswith("\x1b[K", i):
            lines[-1] = lines[-1][:col]
            i += 3
            continue
        c = text[i]
        if c == "\r":
            col = 0
        elif c == "\n":
            lines.append("")
            col = 0
        else:
            line = lines[-1].ljust(col)
            lines[-1] = line[:col] + c + line[col + 1:]
            col += 1
        i += 1
    return lines


def check_shown_and_erased(got, *phases):
    """Each phase was drawn as a progress line, and no progress text is left on the screen."""
    drawn = [m.decode() for m in DRAWN.findall(got)]
    for phase in phases:
        assert any(d.startswith(f"scry: {phase}") for d in drawn), \
            f"no progress line for {phase!r}; drawn: {drawn}; terminal: {got[-1500:]!r}"
    shown = screen(got)
    for d in set(drawn):
        assert not any(d in line for line in shown), \
            f"progress text {d!r} left on the screen: {shown}"
    return drawn, shown


def check_silent(err):
    assert b"\r" not in err and b"\x1b[K" not in err, f"progress bytes in stderr: {err[-800:]!r}"


@pytest.fixture
def heap(start_target, tmp_path, python_exe):
    target = start_target(python_exe, "heap_fixtures.py")
    return target, tmp_path


def test_dump_analyze_diff(heap):
    target, tmp = heap
    snap = tmp / "a.heap"
    rc, out, got = on_pty(["dump", "--pid", target.pid, "-o", snap])
    assert rc == 0, got
    assert out.startswith(b"wrote "), out
    drawn, _ = check_shown_and_erased(got, "walking objects", "writing the snapshot")
    # objects counted up as the walk goes (every 4096), never down
    counts = [int(m) for m in re.findall(r"walking objects: (\d+) objects", " ".join(drawn))]
    assert counts == sorted(counts), counts

    rc, out, got = on_pty(["analyze", snap])
    assert rc == 0 and b"Top retainers" in out, (out, got)
    check_shown_and_erased(got, "reading the snapshot", "computing dominators",
                           "retained sizes and paths")
    rc, out, got = on_pty(["diff", snap, snap])
    assert rc == 0 and b"Heap growth" in out, (out, got)
    check_shown_and_erased(got, "reading the first snapshot", "computing dominators",
                           "reading the second snapshot", "matching objects")

    # --json and --quiet: nothing on the terminal but what was there before
    for args in (["dump", "--pid", target.pid, "-o", tmp / "b.heap", "--json"],
                 ["dump", "--pid", target.pid, "-o", tmp / "c.heap", "--quiet"],
                 ["analyze", "--json", snap], ["analyze", "-q", snap],
                 ["diff", "--json", snap, snap], ["diff", "--quiet", snap, snap]):
        rc, out, got = on_pty(args)
        assert rc == 0, (args, got)
        check_silent(got)
    # a pipe: nothing, even when asked for from the start
    for args in (["dump", "--pid", target.pid, "-o", tmp / "d.heap"], ["analyze", snap],
                 ["diff", snap, snap]):
        cp = subprocess.run([str(SCRY)] + [str(a) for a in args], capture_output=True,
                            env=_env(SCRY_PROGRESS="always"), timeout=120)
        assert cp.returncode == 0, cp.stderr
        check_silent(cp.stderr)


def test_error_starts_on_a_clean_line(tmp_path):
    """A snapshot that fails to open while "reading the snapshot..." is shown: the error is a
    line of its own, the progress text gone."""
    bad = tmp_path / "bad.heap"
    bad.write_bytes(b"SCRYHEAP" + b"\0" * 200)
    rc, out, got = on_pty(["analyze", bad])
    assert rc == 1, got
    drawn, shown = check_shown_and_erased(got, "reading the snapshot")
    errors = [line for line in shown if "scry: error:" in line]
    assert errors and all(line.startswith("scry: error:") for line in errors), shown


def test_record_and_run(spawn, tmp_path, python_exe):
    busy = spawn([python_exe, "-c", "import time\nt = time.time()\n"
                  "while time.time() - t < 60: sum(range(1000))"])
    time.sleep(0.5)
    out_json = tmp_path / "rec.json"
    rc, out, got = on_pty(["record", "--pid", busy.pid, "-d", "1.5", "-o", out_json])
    assert rc == 0, got
    drawn, shown = check_shown_and_erased(got, "recording", "merging and writing the profile")
    assert any(re.match(r"scry: recording: \d s of 2 s \(\d+%\), \d+ samples", d)
               for d in drawn), drawn
    assert any(line.startswith("scry: the duration ended: wrote ") for line in shown), shown
    rc, out, got = on_pty(["record", "--pid", busy.pid, "-d", "0.5", "-o", out_json, "--quiet"])
    assert rc == 0, got
    check_silent(got)
    assert not info_lines(screen(got)), screen(got)  # "recording process", "wrote": not either
    cp = subprocess.run([str(SCRY), "record", "--pid", str(busy.pid), "-d", "0.5", "-o",
                         str(out_json)], capture_output=True, env=_env(SCRY_PROGRESS="always"),
                        timeout=60)
    assert cp.returncode == 0, cp.stderr
    check_silent(cp.stderr)

    # run: the merge of the parts of a program that forks, at the end (the view on stdout)
    prog = tmp_path / "forks.py"
    prog.write_text("import os\nfor i in range(3):\n    pid = os.fork()\n    if pid == 0:\n"
                    "        sum(range(100000))\n        os._exit(0)\n    os.waitpid(pid, 0)\n")
    prof = tmp_path / "prof.json"
    rc, out, got = on_pty(["run", "--python", python_exe, "-o", prof, "--cli", prog])
    assert rc == 0, got
    drawn, shown = check_shown_and_erased(got, "merging the parts", "writing the profile")
    assert any(re.match(r"scry: merging the parts: \d+/4 parts", d) for d in drawn), drawn
    assert any(line.startswith("scry: wrote ") for line in shown), shown
    rc, out, got = on_pty(["run", "--python", python_exe, "-o", prof, "--json", prog])
    assert rc == 0, got
    check_silent(got)
    cp = subprocess.run([str(SCRY), "run", "--python", str(python_exe), "-o", str(prof), "--cli",
                         str(prog)], capture_output=True, env=_env(SCRY_PROGRESS="always"),
                        timeout=60)
    assert cp.returncode == 0, cp.stderr
    check_silent(cp.stderr)


def info_lines(shown):
    """scry's lines on the screen that are neither warnings nor errors."""
    return [line for line in shown if line.startswith("scry: ")
            and not line.startswith(("scry: warning:", "scry: error:"))]


POOL = """\
import multiprocessing, sys

def work(i):
    total = sum(range(300000))
    print(f"worker line {i}", file=sys.stderr, flush=True)
    return total

if __name__ == "__main__":
    pool = multiprocessing.Pool(16)
    pool.map(work, range(32), chunksize=1)
    pool.close()
    pool.join()
    print("PROGRAM" + "-DONE", file=sys.stderr, flush=True)  # not the view's text of this line
"""


WORKER = re.compile(rb"worker line \d+")  # the program's output, not the view's source line


def test_run_many_parts(tmp_path, python_exe):
    """A pool of 16 workers: the merge of its 17+ parts at the end of run shows its count, only
    after the program's last output (the program's terminal is its own while it runs), and is
    gone when the view is printed. --quiet (and -q) draws nothing and leaves out the line that
    says what was written, never the view, the program's own output or its exit status."""
    prog = tmp_path / "pool.py"
    prog.write_text(POOL)
    prof = tmp_path / "prof.json"
    rc, out, got = on_pty(["run", "--python", python_exe, "-o", prof, "--cli", prog])
    assert rc == 0, got[-3000:]
    drawn, shown = check_shown_and_erased(got, "merging the parts", "writing the profile")
    counts = [int(m) for m in re.findall(r"merging the parts: \d+/(\d+) parts", " ".join(drawn))]
    assert counts and min(counts) >= 17, drawn
    end = got.rfind(b"PROGRAM-DONE")
    assert end >= 0 and len(WORKER.findall(got)) == 32, got[-3000:]
    first = min(m.start() for m in DRAWN.finditer(got))
    assert first > end, f"a progress line before the program's last output: {got[:first + 200]!r}"
    assert any(line.startswith("scry: wrote ") for line in shown), shown

    for quiet in ("--quiet", "-q"):
        rc, out, got = on_pty(["run", "--python", python_exe, "-o", prof, quiet, "--cli", prog])
        assert rc == 0, got[-3000:]
        check_silent(got)
        shown = screen(got)
        assert not info_lines(shown), shown
        assert b"PROGRAM-DONE" in got and len(WORKER.findall(got)) == 32, got[-3000:]
        # the view (stdout is a pipe: it goes to stderr, the terminal) names the program
        assert any("pool.py" in line for line in shown), shown
    # a pipe: no progress bytes even when asked for from the start; the lines as before
    cp = subprocess.run([str(SCRY), "run", "--python", str(python_exe), "-o", str(prof),
                         "--no-view", str(prog)], capture_output=True,
                        env=_env(SCRY_PROGRESS="always"), timeout=120)
    assert cp.returncode == 0, cp.stderr[-3000:]
    check_silent(cp.stderr)
    assert b"scry: wrote " in cp.stderr, cp.stderr[-3000:]
    cp = subprocess.run([str(SCRY), "run", "--python", str(python_exe), "-o", str(prof), "-q",
                         "--no-view", str(prog)], capture_output=True,
                        env=_env(SCRY_PROGRESS="always"), timeout=120)
    assert cp.returncode == 0, cp.stderr[-3000:]
    check_silent(cp.stderr)
    assert not info_lines(cp.stderr.decode().splitlines()), cp.stderr[-3000:]
    assert b"PROGRAM-DONE" in cp.stderr, cp.stderr[-3000:]


BUSY = "import time\nt = time.time()\nwhile time.time() - t < 90: sum(range(1000))"


def test_record_memory(spawn, tmp_path, python_exe):
    """record --memory (the agent loaded into a running process): the seconds recorded of
    --duration on the line, gone at the end; --quiet, with the dump of --heap-at-end, prints
    nothing but warnings; a pipe gets no progress bytes."""
    busy = spawn([python_exe, "-c", BUSY])
    time.sleep(0.5)
    prof = tmp_path / "mem.json"
    rc, out, got = on_pty(["record", "--pid", busy.pid, "--memory", "-d", "1.5", "-o", prof])
    assert rc == 0, got
    drawn, shown = check_shown_and_erased(got, "recording", "writing the profile")
    assert any(re.match(r"scry: recording: \d s of 2 s \(\d+%\)$", d) for d in drawn), drawn
    assert any(line.startswith("scry: the duration ended: wrote ") for line in shown), shown

    heap = tmp_path / "mem.heap"
    rc, out, got = on_pty(["record", "--pid", busy.pid, "--memory", "-d", "0.5", "-o", prof,
                           "--heap-at-end", heap, "--quiet"])
    assert rc == 0, got
    check_silent(got)
    assert not info_lines(screen(got)), screen(got)
    assert heap.stat().st_size > 0

    cp = subprocess.run([str(SCRY), "record", "--pid", str(busy.pid), "--memory", "-d", "0.5",
                         "-o", str(prof)], capture_output=True, env=_env(SCRY_PROGRESS="always"),
                        timeout=120)
    assert cp.returncode == 0, cp.stderr
    check_silent(cp.stderr)
    assert b"scry: loading scry's agent" in cp.stderr, cp.stderr


def test_record_allocations(spawn, tmp_path):
    """record --allocations (eBPF, from outside): the seconds recorded and the samples on the
    line, then the dump's own phases; nothing with --json, --quiet or on a pipe."""
    python = preferred_python()
    busy = spawn([python, "-c", "import time\nt = time.time()\nkeep = []\n"
                  "while time.time() - t < 90:\n    keep.append(bytes(100000))\n"
                  "    keep = keep[-50:]\n    time.sleep(0.001)"])
    time.sleep(0.5)
    samples = tmp_path / "alloc.json"
    rc, out, got = on_pty(["record", "--pid", busy.pid, "--allocations", "-o", samples, "-d",
                           "1.5"])
    if rc != 0 and b"bpf_unavailable" in got and b"verifier" not in got:
        pytest.skip("BPF cannot be loaded here")
    assert rc == 0, got
    drawn, _ = check_shown_and_erased(got, "loading the probes", "recording allocations",
                                      "writing the samples")
    assert any(re.match(r"scry: recording allocations: \d s of 2 s \(\d+%\), \d+ samples$", d)
               for d in drawn), drawn
    assert out.startswith(b"recorded the allocations of pid"), out

    heap = tmp_path / "alloc.heap"
    rc, out, got = on_pty(["record", "--pid", busy.pid, "--allocations", "--dump", heap, "-d",
                           "0.5"])
    assert rc == 0, got
    check_shown_and_erased(got, "recording allocations", "walking objects",
                           "writing the snapshot")
    for extra in (["--json"], ["--quiet"], ["-q"]):
        rc, out, got = on_pty(["record", "--pid", busy.pid, "--allocations", "--dump", heap,
                               "-d", "0.5", *extra])
        assert rc == 0, (extra, got)
        check_silent(got)
    cp = subprocess.run([str(SCRY), "record", "--pid", str(busy.pid), "--allocations", "-o",
                         str(samples), "-d", "0.5"], capture_output=True,
                        env=_env(SCRY_PROGRESS="always"), timeout=120)
    assert cp.returncode == 0, cp.stderr
    check_silent(cp.stderr)
