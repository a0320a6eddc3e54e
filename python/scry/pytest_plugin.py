"""scry's pytest plugin (entry point pytest11): `pytest --scry` profiles the test session,
`--scry-per-test` prints each test's CPU time and memory at the end, and
`@pytest.mark.scry_limit(memory_mb=, cpu_s=, leaks=)` fails a test that goes over (and
pytest-memray's `@pytest.mark.limit_memory("24 MB")` is memory_mb=24). docs/pytest.md
says what every number means.

Memory needs scry's agent from the process's first allocation, so `pytest --scry` re-runs the
same command line under `scry run -m pytest` (exec: same process, output and exit status); under
`scry run` already (its SCRY_PART_DIR in the environment), the plugin just asks the agent. The
numbers are the agent's (python/scry/_window_pytest.py); nothing here measures. pytest-xdist's
workers are children of the profiled controller, so scry run profiles them too and merges their
parts into the one profile; each test's numbers travel to the controller on its report."""

import os
import re
import sys
import tempfile

import pytest

MARKER = "scry_limit"
MEMRAY_MARKER = "limit_memory"  # pytest-memray's, read as scry_limit(memory_mb=): no edits
_MEMRAY_UNITS = ("B", "KB", "MB", "GB", "TB", "PB")
_MEMRAY_SIZE = re.compile(r"\s*\+?(\d+(?:\.\d*)?|\.\d+)\s*([KMGTP]?B)\s*$", re.IGNORECASE)
LIMITS = ("memory_mb", "cpu_s", "leaks")
REEXEC_ENV = "SCRY_PYTEST_REEXEC"  # set for the re-run session
_MEASURE = pytest.StashKey()


def pytest_addoption(parser):
    group = parser.getgroup("scry", "scry profiler (docs/pytest.md)")
    group.addoption("--scry", action="store_true",
                    help="profile the test session with scry: re-runs pytest under `scry run` "
                         "and writes the profile (scry-profile.json, or --scry-out)")
    group.addoption("--scry-out", metavar="FILE",
                    help="where --scry writes the session's profile (implies --scry)")
    group.addoption("--scry-per-test", action="store_true",
                    help="print each test's CPU seconds, peak and net memory at the end "
                         "(implies --scry)")
    group.addoption("--scry-per-test-top", type=int, metavar="N",
                    help="the table shows only the N first tests (implies --scry-per-test)")
    group.addoption("--scry-sort", choices=("cpu", "memory"),
                    help="order of the table: CPU seconds (the default) or peak memory, "
                         "largest first (implies --scry-per-test)")


def _wanted(config):
    o = config.option
    return bool(o.scry or o.scry_out or _per_test(config))


def _per_test(config):
    o = config.option
    return bool(o.scry_per_test or o.scry_per_test_top is not None or o.scry_sort)


def _under_scry():
    return bool(os.environ.get("SCRY_PART_DIR"))


def pytest_configure(config):
    config.addinivalue_line(
        "markers", f"{MARKER}(memory_mb=None, cpu_s=None, leaks=None): fail the test when its "
                   "call peaks above memory_mb MB over its start, runs over cpu_s CPU seconds, or "
                   "has more than `leaks` likely leaks (checked with --scry; docs/pytest.md)")
    config.addinivalue_line(
        "markers", f"{MEMRAY_MARKER}(size): pytest-memray's marker, such as "
                   f"{MEMRAY_MARKER}(\"24 MB\"): with --scry, the same as "
                   f"{MARKER}(memory_mb=24) (docs/pytest.md)")
    _check_options(config)
    # Set by the re-exec for this session only: a pytest that a test starts does not inherit it
    # (xdist's workers, which get the controller's options, are exempt).
    reexecuted = os.environ.pop(REEXEC_ENV, None) is not None
    if config.option.scry_out and _under_scry() and not reexecuted and \
            not hasattr(config, "workerinput"):
        raise pytest.UsageError("--scry-out: this pytest already runs under scry run, which "
                                "writes the profile where its own -o says")
    config.pluginmanager.register(_Limits(config), "scry-limits")
    if _under_scry():
        # pytest --scry re-run, or `scry run -m pytest` with or without --scry: the agent is
        # there, so limits are checked (and each test measured with --scry-per-test).
        config.pluginmanager.register(_Measure(config), "scry-measure")


def _check_options(config):
    top = config.option.scry_per_test_top
    if top is not None and top < 1:
        raise pytest.UsageError("--scry-per-test-top: N must be at least 1")


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    """`pytest --scry` outside scry: the same command line again, under scry run."""
    o = config.option
    _check_options(config)
    if not _wanted(config) or _under_scry() or hasattr(config, "workerinput") or \
            getattr(o, "help", False) or getattr(o, "version", False):
        return None
    args = list(config.invocation_params.args)
    if args != sys.argv[1:]:
        raise pytest.UsageError("--scry re-runs pytest under `scry run`, which it can only do "
                                "for a pytest started from the command line; here, run the "
                                "session with `scry run -m pytest ...`")
    from scry._standalone import find_tools

    try:
        scry, _ = find_tools()
    except RuntimeError as e:
        raise pytest.UsageError(str(e)) from None
    out = os.path.abspath(os.path.join(str(config.invocation_params.dir),
                                       o.scry_out or "scry-profile.json"))
    argv = ["scry", "run", "-o", out, "--no-view", "--python", sys.executable,
            "--program-path", str(config.rootpath), "-m", "pytest", *args]
    capture = config.pluginmanager.getplugin("capturemanager")
    if capture is not None:
        capture.stop_global_capturing()
    sys.stdout.flush()
    sys.stderr.flush()
    os.environ[REEXEC_ENV] = "1"
    os.environ["SCRY_BIN"] = str(scry)  # the re-run session's `scry collect` is the same binary
    os.chdir(config.invocation_params.dir)
    try:
        os.execv(str(scry), argv)
    except OSError as e:
        raise pytest.UsageError(f"--scry: cannot run {scry}: {e.strerror}") from None


def _memray_size(mark):
    """limit_memory("24 MB")'s size in MB (MiB, as memory_mb): pytest-memray's spelling, a
    number and B, KB, MB, GB, TB or PB (powers of 1024, any case, spaces allowed)."""
    args = list(mark.args) + ([mark.kwargs["limit"]] if "limit" in mark.kwargs else [])
    extra = set(mark.kwargs) - {"limit"}
    m = _MEMRAY_SIZE.match(args[0]) if len(args) == 1 and isinstance(args[0], str) else None
    if extra or not m:
        pytest.fail(f"{MEMRAY_MARKER} takes one size, such as {MEMRAY_MARKER}(\"24 MB\") (a "
                    f"number and B, KB, MB, GB, TB or PB), not {mark.args!r} {mark.kwargs!r}",
                    pytrace=False)
    return float(m.group(1)) * 1024.0 ** _MEMRAY_UNITS.index(m.group(2).upper()) / 1048576.0


def _limits_of(item):
    """The test's limits {name: value} from its scry_limit markers, and pytest-memray's
    limit_memory as memory_mb (the closest marker wins, limit by limit); a marker that is not
    right fails the test."""
    limits = {}
    for mark in reversed([m for m in item.iter_markers() if m.name in (MARKER, MEMRAY_MARKER)]):
        if mark.name == MEMRAY_MARKER:
            limits["memory_mb"] = _memray_size(mark)
            continue
        if mark.args:
            pytest.fail(f"{MARKER} takes keywords only ({', '.join(LIMITS)})", pytrace=False)
        for key, value in mark.kwargs.items():
            if key not in LIMITS:
                pytest.fail(f"{MARKER}: unknown limit {key!r} (known: {', '.join(LIMITS)})",
                            pytrace=False)
            if value is not None and (isinstance(value, bool) or
                                      not isinstance(value, (int, float)) or value < 0):
                pytest.fail(f"{MARKER}({key}={value!r}): a limit is a number, at least 0",
                            pytrace=False)
            limits[key] = value
    return {k: v for k, v in limits.items() if v is not None}


class _Limits:
    """Everywhere: checks the markers, and counts the limits nobody checked (no --scry, no
    agent, no memory profiling) for one line in the summary."""

    def __init__(self, config):
        self.config = config
        self.unchecked = {}  # reason -> number of tests

    def pytest_runtest_setup(self, item):
        limits = _limits_of(item)
        if limits and not self.config.pluginmanager.has_plugin("scry-measure"):
            reason = ("pytest ran without --scry" if not _under_scry() else
                      "scry's agent is not at work in this process")
            item.stash[_MEASURE] = {"unchecked": reason}

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item, call):
        report = yield
        if call.when == "call" and _MEASURE in item.stash:
            # A plain attribute: pytest's own report serialisation carries it to xdist's
            # controller.
            report.scry = item.stash[_MEASURE]
        return report

    def pytest_runtest_logreport(self, report):
        scry = getattr(report, "scry", None)
        if report.when == "call" and scry and scry.get("unchecked"):
            reason = scry["unchecked"]
            self.unchecked[reason] = self.unchecked.get(reason, 0) + 1

    def pytest_terminal_summary(self, terminalreporter):
        for reason, n in self.unchecked.items():
            terminalreporter.write_line(f"scry: the {MARKER} limits of {n} test"
                                        f"{'' if n == 1 else 's'} were not checked: {reason}",
                                        yellow=True)


class _Measure:
    """Under scry run: each test's call phase is a window of the agent's totals."""

    def __init__(self, config):
        from scry import _window_pytest as window

        self.config = config
        self.window = window
        self.agent = window.Agent.find()
        self.per_test = _per_test(config)
        self.rows = []  # (nodeid, measure) of every test's call, from every worker
        self.part_dir = None

    def _parts(self):
        if self.part_dir is None:
            self.part_dir = tempfile.mkdtemp(prefix="scry-pytest-")
        return self.part_dir

    def pytest_unconfigure(self, config):
        if self.part_dir:
            for name in os.listdir(self.part_dir):
                os.unlink(os.path.join(self.part_dir, name))
            os.rmdir(self.part_dir)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item):
        limits = _limits_of(item)
        if self.agent is None:
            if limits:
                item.stash[_MEASURE] = {"unchecked": "scry's agent is not at work in this "
                                                     "process (docs/pytest.md)"}
            return (yield)
        if not limits and not self.per_test:
            return (yield)
        name = f"test-{len(self.rows)}-{os.getpid()}-{id(item):x}"
        win = self.window.Window(self.agent, self._parts() if limits else None, name)
        try:
            result = yield
        except BaseException:
            item.stash[_MEASURE] = win.end()
            raise
        measure = win.end()
        item.stash[_MEASURE] = measure
        if limits:
            self._check(item, limits, win, measure)
        return result

    def _check(self, item, limits, win, measure):
        """Fails the test when it went over a limit, naming the line responsible (from the
        window's own profile, collected only then)."""
        if not measure["profiling"]:
            measure["unchecked"] = "profiling was off during the test"
            return
        if "memory_mb" in limits and not measure["memory"]:
            measure["unchecked"] = "scry does not profile memory in this process"
            limits = {k: v for k, v in limits.items() if k != "memory_mb"}
        over = []
        if "memory_mb" in limits and measure["peak_mb"] > limits["memory_mb"]:
            over.append("memory_mb")
        if "cpu_s" in limits and measure["cpu_s"] > limits["cpu_s"]:
            over.append("cpu_s")
        if "leaks" not in limits and not over:
            return
        profile = win.profile(self._scry_binary(), str(self.config.rootpath), item.nodeid)
        found = self.window.leaks(profile)
        if "leaks" in limits and len(found) > limits["leaks"]:
            over.append("leaks")
        if over:
            pytest.fail("\n".join(self._message(k, limits[k], measure, profile, found)
                                  for k in over), pytrace=False)

    def _scry_binary(self):
        from scry._standalone import find_tools

        return find_tools()[0]

    def _where(self, path):
        try:
            rel = os.path.relpath(path, str(self.config.rootpath))
        except ValueError:
            return path
        return path if rel.startswith("..") else rel

    def _message(self, key, limit, measure, profile, found):
        w = self.window
        if key == "memory_mb":
            top = w.top_allocating_line(profile)
            where = (f"; most allocated at {self._where(top[0])}:{top[1]} ({top[2]:.1f} MB)"
                     if top else "")
            return (f"{MARKER}: the test's memory peaked at {measure['peak_mb']:.1f} MB over its "
                    f"start, over its limit of {limit:g} MB{where}")
        if key == "cpu_s":
            top = w.top_cpu_line(profile)
            where = (f"; most CPU time at {self._where(top[0])}:{top[1]} ({top[2]:.2f} s)"
                     if top else "")
            return (f"{MARKER}: the test ran {measure['cpu_s']:.2f} s on the CPU (python "
                    f"{measure['python_s']:.2f} s, native {measure['native_s']:.2f} s), over its "
                    f"limit of {limit:g} s{where}")
        listed = ", ".join(f"{self._where(f)}:{n} (likelihood {p * 100:.0f}%, {v:.1f} MB/s)"
                           for f, n, p, v in sorted(found, key=lambda x: -x[2]))
        return (f"{MARKER}: {len(found)} likely leak{'' if len(found) == 1 else 's'}, over its "
                f"limit of {limit:g}: {listed}")

    def pytest_runtest_logreport(self, report):
        scry = getattr(report, "scry", None)
        if report.when == "call" and scry and "cpu_s" in scry:
            self.rows.append((report.nodeid, scry))

    def pytest_terminal_summary(self, terminalreporter):
        if not self.per_test:
            return
        tr = terminalreporter
        tr.write_sep("-", "scry: each test's call (docs/pytest.md)")
        if not self.rows:
            tr.write_line("no test was measured"
                          + ("" if self.agent else ": scry's agent is not at work in this "
                             "process"))
            return
        by_memory = self.config.option.scry_sort == "memory"
        rows = sorted(self.rows, key=lambda r: -(r[1].get("peak_mb", 0) if by_memory
                                                  else r[1]["cpu_s"]))
        top = self.config.option.scry_per_test_top
        shown = rows[:top] if top else rows
        tr.write_line(f"{'CPU s':>8} {'python':>8} {'native':>8} {'system s':>9} "
                      f"{'peak MB':>9} {'net MB':>9}  test")
        for nodeid, m in shown:
            mem = (f"{m['peak_mb']:>9.1f} {m['net_mb']:>9.1f}" if m.get("memory")
                   else f"{'-':>9} {'-':>9}")
            tr.write_line(f"{m['cpu_s']:>8.3f} {m['python_s']:>8.3f} {m['native_s']:>8.3f} "
                          f"{m['system_s']:>9.3f} {mem}  {nodeid}")
        if len(shown) < len(rows):
            hidden = len(rows) - len(shown)
            tr.write_line(f"({hidden} more test{'' if hidden == 1 else 's'} not shown: "
                          f"--scry-per-test-top {top})")
