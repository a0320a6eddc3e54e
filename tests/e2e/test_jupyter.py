"""scry in Jupyter (docs/jupyter.md): `scry kernel install`, and notebooks built with nbformat and
executed by nbclient in real ipykernel kernels (tests/tools/run_notebook.py) that use the magics
of `%load_ext scry`:
- in the kernel "Python 3 (scry)" (installed into a private prefix, never ~/.local), a cell that
  allocates 100 MiB on one line and runs a hot loop on another: its terminal view (%%scry --cli)
  and its profile name the hot line as the one with the largest CPU share and charge the 100 MiB
  line within 5%; the default %%scry output is scry's page in a sandboxed iframe, which Chromium
  renders without a single request (the screenshot of docs/jupyter.md); %scrun profiles one
  statement and gives its value; a cell that raises propagates its exception and leaves
  profiling off; bad options are a usage message;
- Jupyter's interrupt (SIGINT to the kernel's process group: scry run leaves it to the kernel)
  stops a profiled cell with KeyboardInterrupt, shows what ran, and leaves profiling off;
- in a plain ipykernel kernel, %%scry gives CPU time and says how to get memory.
The notebooks run on one interpreter, the virtual environment of `scripts/install-deps.sh
jupyter` (pyenv's 3.12, build/jupyter-venv); without it, or without Chromium for the browser
check, the tests skip, saying why.
"""

import html
import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from conftest import REPO, SCRY, run_scry
from test_view_html import browser  # noqa: F401  (the fixture: node, playwright-core, chromium)

# $SCRY_JUPYTER_VENV: another such environment (another Python's), for a run by hand.
VENV = Path(os.environ.get("SCRY_JUPYTER_VENV") or SCRY.parent / "jupyter-venv")
DRIVER = REPO / "tests" / "tools" / "run_notebook.py"
BROWSER_TEST = REPO / "tests" / "browser" / "jupyter.test.mjs"
ARTIFACTS = SCRY.parent / "test-artifacts" / "jupyter"
NOTEBOOK_TIMEOUT_S = 180
MIB = 100  # the cell's allocation, in MB of 2**20 bytes as the profile counts them

# The cell measures its two lines' CPU time with the thread's CPU clock, as scry does: their
# truth. Page faults of the 100 MiB are usually ~40 ms, but took 1.07 s once in CI (a virtual
# machine's first touch of memory the host had taken back), more than the loop's 0.55 s.
HOT_CELL = ("%%scry --cli -o {out}\n"
            "t0 = time.thread_time()\n"
            "data = bytearray(100 * 2**20)\n"
            "t1 = time.thread_time()\n"
            "acc = 0\n"
            "for i in range(4_000_000): acc += i * i\n"
            "t2 = time.thread_time()\n")
DATA_LINE, HOT_LINE = 2, 5  # in the cell's own file (the magic's line is not part of it)
TRUTH_CELL = "print('truth', t1 - t0, t2 - t1)"
PAGE_CELL = ("%%scry --height 720\n"
             "def squares(n):\n"
             "    return sum(i * i for i in range(n))\n"
             "squares(3_000_000)\n")
STATEMENT = "sum(i * i for i in range(2_000_000))"


@pytest.fixture(scope="module")
def venv_python():
    py = VENV / "bin" / "python"
    how = "install it with `scripts/install-deps.sh jupyter` (`make test` does)"
    if not py.is_file():
        pytest.skip(f"the notebook tests need ipykernel, nbclient and nbformat in {VENV}: {how}")
    cp = subprocess.run([py, "-c", "import ipykernel, nbclient, nbformat, scry"],
                        capture_output=True, text=True)
    if cp.returncode != 0:
        pytest.skip(f"{VENV} is not complete ({cp.stderr.strip().splitlines()[-1]}): {how}")
    return py


@pytest.fixture(scope="module")
def kernels(scry, venv_python, tmp_path_factory):
    """A private Jupyter data folder with the scry kernel (scry kernel install) and a plain
    ipykernel one; the environment that finds them."""
    prefix = tmp_path_factory.mktemp("jupyter-prefix")
    cp = run_scry(["kernel", "install", "--python", venv_python, "--prefix", prefix, "--name",
                   "scry-test"], env=dict(os.environ, PYTHONPATH=str(REPO / "python")))
    assert cp.returncode == 0, cp.stderr
    assert "installed the kernel" in cp.stdout and "note" not in cp.stdout, cp.stdout
    cp = subprocess.run([venv_python, "-m", "ipykernel", "install", "--prefix", prefix, "--name",
                         "plain-test"], capture_output=True, text=True)
    assert cp.returncode == 0, cp.stderr
    # The package of this checkout (the venv's may be another checkout's, by a .pth file), and
    # with it this build's binary and agent (scry._standalone.find_tools).
    env = dict(os.environ, JUPYTER_PATH=str(prefix / "share" / "jupyter"),
               PYTHONPATH=str(REPO / "python"))
    env.pop("SCRY_PYTHON", None)
    env.pop("SCRY_BIN", None)
    return prefix, env


def execute(venv_python, env, kernel, cells, where, interrupt=()):
    """Runs the cells in a new kernel in the folder where; their outputs, one list per cell.
    interrupt: ("--interrupt", S) interrupts the second-to-last cell after S seconds."""
    where.mkdir(exist_ok=True)
    (where / "cells.json").write_text(json.dumps(cells))
    out = where / "outputs.json"
    run_env = dict(env, TMPDIR=str(where))  # connection files, the magics' folder
    try:
        cp = subprocess.run([venv_python, DRIVER, *interrupt, kernel, where / "cells.json", out,
                             where],
                            capture_output=True, text=True, env=run_env,
                            timeout=NOTEBOOK_TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"the notebook did not finish in {NOTEBOOK_TIMEOUT_S} s: {e.stderr}")
    assert cp.returncode == 0, f"the notebook failed to run:\n{cp.stderr}"
    return json.loads(out.read_text())


def text_of(outputs):
    """A cell's stream text and plain-text results, joined."""
    parts = []
    for o in outputs:
        if o["output_type"] == "stream":
            parts.append(o["text"])
        elif o["output_type"] in ("execute_result", "display_data"):
            parts.append(o["data"].get("text/plain", ""))
    return "".join(parts)


def errors_of(outputs):
    return [(o["ename"], o["evalue"]) for o in outputs if o["output_type"] == "error"]


def percent(cell):
    """A share as the terminal view writes it: "34%", "<1%" (under one), or blank."""
    if not cell.endswith("%"):
        return 0.0
    return 0.5 if cell.startswith("<") else float(cell[:-1])


def view_rows(text):
    """The terminal view's source rows: {line number: (python, native, system, the other
    columns, source)}; the first table only (the cell's file)."""
    rows = {}
    for raw in text.splitlines():
        cols = [c.strip() for c in raw.split("│")]
        if len(cols) < 5 or not cols[0].isdigit():
            if rows and raw.startswith("function summary"):
                break
            continue
        pct = [percent(c) for c in cols[1:4]]
        rows.setdefault(int(cols[0]), (*pct, cols[4:-1], cols[-1]))
    return rows


def cell_file(profile):
    files = [f for f in profile["files"] if re.search(r"/cell-\d+(-\d+)?\.py$", f)]
    assert len(files) == 1, list(profile["files"])
    return profile["files"][files[0]]


def line_of(detail, lineno):
    return next(e for e in detail["lines"] if e["lineno"] == lineno)


def cpu(e):
    return e["n_cpu_percent_python"] + e["n_cpu_percent_c"] + e["n_sys_percent"]


@pytest.fixture(scope="module")
def scry_notebook(venv_python, kernels, tmp_path_factory):
    _, env = kernels
    where = tmp_path_factory.mktemp("scry-kernel")
    cells = [
        "%load_ext scry\nimport time",
        HOT_CELL.format(out=where / "hot.json"),
        PAGE_CELL,
        f"%scrun --cli {STATEMENT}",
        f"%%scry --cli -o {where / 'error.json'}\nx = 1\nraise ValueError('boom from the cell')\n",
        "import scry\nprint('profiling after the error:', scry.is_profiling())",
        "%scrun --no-such-option 1",
        "%scrun --cli",
        "%scrun --cli 6 * 7;",
        TRUTH_CELL,
    ]
    return where, execute(venv_python, env, "scry-test", cells, where)


def test_kernel_install_writes_a_spec_that_runs_under_scry(kernels, venv_python, scry):
    prefix, _ = kernels
    spec = json.loads((prefix / "share/jupyter/kernels/scry-test/kernel.json").read_text())
    argv = spec["argv"]
    assert argv[0] == str(Path(scry).resolve()) and argv[1:3] == ["run", "--off"], argv
    assert argv[argv.index("--python") + 1] == str(venv_python), argv
    assert argv[-4:] == ["-m", "ipykernel_launcher", "-f", "{connection_file}"], argv
    # scry's own package (the checkout's python/scry here) is not the notebook's code.
    assert argv[argv.index("--profile-exclude") + 1] == str(REPO / "python" / "scry") + "/", argv
    assert spec["display_name"] == "Python 3 (scry)" and spec["language"] == "python"


def test_kernel_install_errors(scry, tmp_path):
    cp = run_scry(["kernel", "install", "--user", "--prefix", tmp_path])
    assert cp.returncode == 2 and "[usage]" in cp.stderr, cp.stderr
    cp = run_scry(["kernel", "remove"])
    assert cp.returncode == 2 and "[usage]" in cp.stderr, cp.stderr
    cp = run_scry(["kernel", "install", "--python", tmp_path / "no-python"])
    assert cp.returncode == 1 and "[not_found]" in cp.stderr, cp.stderr
    # An interpreter without ipykernel: says which and how to get it.
    plain = shutil.which("python3")
    if plain and subprocess.run([plain, "-c", "import ipykernel"],
                                capture_output=True).returncode != 0:
        cp = run_scry(["kernel", "install", "--python", plain, "--prefix", tmp_path])
        assert cp.returncode == 1 and "[not_found]" in cp.stderr, cp.stderr
        assert "ipykernel" in cp.stderr and not (tmp_path / "share").exists(), cp.stderr


def test_cell_names_hot_line_and_100mb_line(scry_notebook):
    where, outs = scry_notebook
    assert not errors_of(outs[0]) and not errors_of(outs[1]), outs[:2]
    text = text_of(outs[1])
    assert "scry: CPU time only" not in text, text  # memory in the scry kernel
    rows = view_rows(text)
    assert HOT_LINE in rows and DATA_LINE in rows, text
    assert rows[HOT_LINE][4].startswith("for i in range"), text
    # The line that used more CPU time (on the thread's clock) has the larger CPU share, when
    # one used half as much again as the other.
    truth = dict(zip((DATA_LINE, HOT_LINE), map(float, text_of(outs[-1]).split()[1:])))
    hottest = max(rows, key=lambda n: sum(rows[n][:2]))
    if max(truth.values()) > 1.5 * min(truth.values()):
        assert hottest == max(truth, key=truth.get), (truth, text)
    assert rows[DATA_LINE][4].startswith("data = bytearray"), text
    shown_mb = [float(c[:-1]) for c in rows[DATA_LINE][3] if re.fullmatch(r"[\d.]+M", c)]
    assert shown_mb and abs(shown_mb[0] - MIB) <= 0.05 * MIB, (rows[DATA_LINE], text)

    # The same cell's profile (-o): the 100 MiB line within 5%, the loop the hot line, nothing
    # of the cells before.
    assert (where / "hot.json").stat().st_mode & 0o777 == 0o600
    prof = json.loads((where / "hot.json").read_text())
    assert prof["args"] == [], prof["args"]  # the kernel's command line is not the cell's
    detail = cell_file(prof)
    data = line_of(detail, DATA_LINE)
    assert abs(data["n_malloc_mb"] - MIB) <= 0.05 * MIB, data
    assert abs(data["n_peak_mb"] - MIB) <= 0.05 * MIB, data
    hot = line_of(detail, HOT_LINE)
    # Each line's CPU seconds within 20% of its truth, give or take a sampling interval at each
    # end of it.
    for lineno, sec in truth.items():
        e = line_of(detail, lineno)
        got = (e["n_cpu_percent_python"] + e["n_cpu_percent_c"]) / 100 * prof["sampled_time_sec"]
        assert abs(got - sec) <= 0.2 * sec + 2 * prof["cpu_sampling_rate"], (lineno, got, truth)
    # Pure Python: time on the CPU is Python time (the rest is system time, which an
    # oversubscribed machine inflates).
    assert hot["n_cpu_percent_python"] > 5 * hot["n_cpu_percent_c"], hot
    others = [e for e in detail["lines"] if e["lineno"] not in (DATA_LINE, HOT_LINE)]
    assert sum(e.get("n_malloc_mb", 0) for e in others) < 0.05 * MIB, others
    assert 0.9 * MIB <= prof["max_footprint_mb"] <= 1.5 * MIB, prof["max_footprint_mb"]


def test_default_output_is_the_page_in_a_sandboxed_frame(scry_notebook):
    _, outs = scry_notebook
    assert not errors_of(outs[2]), outs[2]
    pages = [o["data"]["text/html"] for o in outs[2] if o["output_type"] == "display_data"
             and "text/html" in o["data"]]
    assert len(pages) == 1, outs[2]
    frame = pages[0]
    assert re.match(r'<div class="scry-profile"><iframe sandbox="allow-scripts" ', frame), \
        frame[:300]
    assert "height:720px" in frame, frame[:300]
    page = html.unescape(re.search(r'srcdoc="([^"]*)"', frame).group(1))
    m = re.search(r'<script type="application/json" id="scry-profile">(.*?)</script>', page,
                  re.S)
    assert m, page[:500]
    detail = cell_file(json.loads(m.group(1)))
    assert any(e["line"].startswith("    return sum(") and cpu(e) > 20
               for e in detail["lines"]), detail["lines"]
    # The cell's value is its output, as without the magic.
    results = [o for o in outs[2] if o["output_type"] == "execute_result"]
    assert results and results[0]["data"]["text/plain"] == str(sum(i * i for i in
                                                                   range(3_000_000)))


def test_page_makes_no_request_in_chromium(scry_notebook, browser, tmp_path):  # noqa: F811
    _, outs = scry_notebook
    frame = next(o["data"]["text/html"] for o in outs[2] if o["output_type"] == "display_data")
    source = html.escape(PAGE_CELL)
    host = tmp_path / "notebook-output.html"
    host.write_text('<!doctype html><html><head><meta charset="utf-8"><title>%%scry</title>'
                    '<style>body{font:14px sans-serif;margin:12px}pre{background:#f5f5f5;'
                    'padding:8px;margin:0 0 8px}</style></head><body>'
                    f'<pre>In [3]: {source}</pre>{frame}</body></html>', encoding="utf-8")
    node, modules, chromium = browser
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "jupyter-cell.png"
    cp = subprocess.run([node, BROWSER_TEST, modules, chromium, shot, host],
                        capture_output=True, text=True, timeout=120, cwd=REPO)
    assert cp.returncode == 0, cp.stderr
    report = json.loads(cp.stdout.strip().splitlines()[-1])
    assert report["ready"] and not report["errors"], report
    assert report["requests"] == [], report["requests"]
    assert "return sum(i * i for i in range(n))" in report["frame_text"], report["frame_text"]
    assert shot.stat().st_size > 10_000


def test_scrun_profiles_one_statement(scry_notebook):
    _, outs = scry_notebook
    assert not errors_of(outs[3]), outs[3]
    text = text_of(outs[3])
    rows = view_rows(text)
    assert rows.get(1) and rows[1][4] == STATEMENT and sum(rows[1][:3]) > 50, text
    assert "/scry/" not in text, text  # scry's own package is not profiled
    results = [o for o in outs[3] if o["output_type"] == "execute_result"]
    assert results[0]["data"]["text/plain"] == str(sum(i * i for i in range(2_000_000)))
    # As in IPython, a trailing ';' hides the value (the profile is still shown).
    assert "profile of " in text_of(outs[8]) and not errors_of(outs[8]), outs[8]
    assert not [o for o in outs[8] if o["output_type"] == "execute_result"], outs[8]


def test_error_propagates_and_profiling_stops(scry_notebook):
    where, outs = scry_notebook
    assert errors_of(outs[4]) == [("ValueError", "boom from the cell")], outs[4]
    assert "profiling after the error: False" in text_of(outs[5]), outs[5]
    # The cell took a millisecond, right after %scrun's busy statement: nothing of that one is
    # in its profile (the time since profiling went on is not charged where the thread was
    # before it went off).
    prof = json.loads((where / "error.json").read_text())
    cells = [f for f in prof["files"] if "/cell-" in f]
    assert all(f == prof["program"] for f in cells), (prof["program"], cells)


def test_bad_options_are_a_usage_message(scry_notebook):
    _, outs = scry_notebook
    for out, what in ((outs[6], "--no-such-option"), (outs[7], "give a statement")):
        text = text_of(out) + "".join(v for _, v in errors_of(out))
        assert "UsageError" in text and what in text and "Traceback" not in text, out


def test_session_profile_next_to_connection_file(scry_notebook):
    where, _ = scry_notebook
    # Written by scry run when the kernel ended: every profiled cell, nothing else.
    found = list(where.glob("*.scry-profile.json"))
    assert len(found) == 1, list(where.iterdir())
    prof = json.loads(found[0].read_text())
    names = [Path(f).name for f in prof["files"] if "/cell-" in f]
    assert len(names) >= 3, list(prof["files"])
    assert not (where / "scry-profile.json").exists()


def test_interrupt_stops_the_cell_and_profiling(venv_python, kernels, tmp_path):
    _, env = kernels
    cells = ["%load_ext scry",
             "%%scry --cli\nimport time\ntime.sleep(60)\n",
             "import scry\nprint('profiling after the interrupt:', scry.is_profiling())"]
    t0 = time.monotonic()
    outs = execute(venv_python, env, "scry-test", cells, tmp_path / "interrupt",
                   ("--interrupt", "2"))
    assert time.monotonic() - t0 < 40, "the interrupt did not stop the cell"
    assert [e for e, _ in errors_of(outs[1])] == ["KeyboardInterrupt"], outs[1]
    rows = view_rows(text_of(outs[1]))
    assert rows.get(2) and rows[2][4] == "time.sleep(60)" and rows[2][2] > 90, outs[1]
    assert "profiling after the interrupt: False" in text_of(outs[2]), outs[2]


def test_plain_kernel_gives_cpu_and_says_how_to_get_memory(venv_python, kernels, tmp_path):
    _, env = kernels
    cells = ["%load_ext scry",
             "%%scry --cli\nacc = 0\nfor i in range(3_000_000): acc += i * i\n",
             "%%scry --cli\nacc = sum(i for i in range(10**6))\n"]
    outs = execute(venv_python, env, "plain-test", cells, tmp_path / "plain")
    assert not any(errors_of(o) for o in outs), outs
    text = text_of(outs[1])
    assert text.count("scry kernel install") == 1 and "Python 3 (scry)" in text, text
    rows = view_rows(text)
    assert rows.get(2) and sum(rows[2][:3]) > 50 and rows[2][4].startswith("for i"), text
    assert "Memory" not in text, text  # no memory columns: none was measured
    assert "scry kernel install" not in text_of(outs[2]), outs[2]  # said once
    assert view_rows(text_of(outs[2])).get(1), outs[2]
    assert not (tmp_path / "plain" / "scry-profile.json").exists()


def test_unprofiled_cells_show_their_source_and_the_cell_comes_first(venv_python, kernels,
                                                                      tmp_path):
    """A function from a cell run without the magic (ipykernel's ipykernel_PID/NNNN.py, a file
    it never writes) takes nearly all the time of the profiled cell that calls it: its lines
    show their source (from IPython's linecache), and the cell's own file still comes first, in
    the terminal view and in the page's order (the profile's first_file)."""
    _, env = kernels
    where = tmp_path / "earlier"
    cells = ["%load_ext scry",
             "def slow(n):\n    return sum(i * i for i in range(n))  # EARLIER CELL\n",
             f"%%scry --cli -o {where / 'cli.json'}\nslow(3_000_000)\n"
             "acc = sum(i for i in range(300_000))\n"]
    outs = execute(venv_python, env, "scry-test", cells, where)
    assert not any(errors_of(o) for o in outs), outs
    text = text_of(outs[2])
    rows = view_rows(text)  # the first table
    assert rows.get(2) and rows[2][4].startswith("acc = sum("), text
    assert "return sum(i * i for i in range(n))  # EARLIER CELL" in text, text
    profile = json.loads((where / "cli.json").read_text())
    earlier = [f for f, d in profile["files"].items()
               if re.search(r"ipykernel_\d+/\d+\.py$", f) and
               any(fn["line"] == "slow" for fn in d["functions"])]
    assert len(earlier) == 1, profile["files"]
    detail = profile["files"][earlier[0]]
    assert line_of(detail, 2)["line"].endswith("# EARLIER CELL"), detail["lines"]
    assert cpu(line_of(detail, 2)) > cpu(line_of(cell_file(profile), 2)), profile["files"]
    assert re.search(r"/cell-\d+\.py$", profile["first_file"]), profile["first_file"]
    assert profile["files"][profile["first_file"]] == cell_file(profile)


def test_importing_scry_does_not_import_ipython(venv_python):
    # The extension's magics (and IPython) load only with %load_ext scry.
    cp = subprocess.run([venv_python, "-c", "import sys, scry; assert callable("
                         "scry.load_ipython_extension); print(sorted(m for m in sys.modules "
                         "if m.split('.')[0] in ('IPython', 'ipykernel', 'scry')))"],
                        capture_output=True, text=True)
    assert cp.returncode == 0, cp.stderr
    assert "IPython" not in cp.stdout and "scry.magics" not in cp.stdout, cp.stdout
