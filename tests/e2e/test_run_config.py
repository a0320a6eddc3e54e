"""`scry run --config FILE` (a YAML mapping of run's long option names) and Scalene's option
names (docs/scalene-options.md).

The target (tests/targets/run_config_work.py) prints the settings scry run gave its agent (the
SCRY_* environment) before it works, so a config and a command line can be compared exactly on
what the agent was told, and on what landed in the profile: the sampling rate, CPU-only or
memory, stacks, the file filters, the reduced profile's lines.
"""

import importlib.util
import json
import os
import resource
import stat
import subprocess

import pytest

from conftest import SCRY, TARGETS, load_profile, preferred_python, run_profiled, run_scry

_spec = importlib.util.spec_from_file_location("groundtruth", TARGETS / "groundtruth.py")
groundtruth = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(groundtruth)

TARGET = "run_config_work.py"
MARKERS = {k: v[0] for k, v in groundtruth.marker_lines(TARGETS / TARGET).items()}
HELPER_LINE = groundtruth.marker_lines(TARGETS / "run_lib" / "filter_helper.py")["helper"][0]
QUICK = ("1000",)  # the loops' size for runs that only check options


def settings(ran):
    """The agent's settings the target printed: {NAME: value}."""
    out = {}
    for line in ran.stdout.decode().splitlines():
        if line.startswith("SCRY_"):
            name, _, value = line.partition("=")
            # The rate is written with every digit (%.17g): compare it as a number.
            out[name] = float(value) if name == "SCRY_CPU_SAMPLING_RATE" else value
    assert out, ran.describe()
    return out


def write_config(tmp_path, text, name="scry.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def kept_lines(profile):
    """{(file name, line number)} of every line the profile holds."""
    return {(os.path.basename(name), entry["lineno"])
            for name, detail in profile["files"].items() for entry in detail["lines"]
            if not name.startswith("<")}


def what_landed(profile):
    """The options' traces in a profile: what must be equal for equal options."""
    return {
        "rate": profile["cpu_sampling_rate"],
        "virtual": profile["use_virtual_time"],
        "memory": profile["memory"],
        "stacks": bool(profile.get("stacks")),
        # Pseudo-files (<interpreter shutdown>) come and go with the samples.
        "files": sorted(os.path.basename(f) for f in profile["files"] if not f.startswith("<")),
    }


# Each case: the command line, and the same options as a config (dashes and underscores mixed).
EQUAL_CASES = {
    "cpu-stacks-exclude": (
        ["--cpu-sampling-rate", "0.004", "--cpu", "--stacks", "--profile-exclude", "run_lib",
         "--use-virtual-time"],
        "cpu-sampling-rate: 0.004\ncpu: true\nstacks: true\nprofile_exclude: run_lib\n"
        "use_virtual_time: true\n"),
    # CPU time only, sampled every 2 ms: the target's work is 0.2 s of CPU on 3.14/3.15, ~20
    # samples at 10 ms, where one sample of the 4 MiB bytearray's line came to 7-10% (over the
    # 8% threshold in one of two runs, in CI) and the helper's 20-30% to 13%; at 2 ms (~100
    # samples) that line stays under 3.5% and the helper over 24%.
    "memory-reduced-only": (
        ["--allocation-sampling-window", "524288", "--no-memory-leak-detector",
         "--profile-only", "run_lib,run_config", "--program-path", str(TARGETS),
         "--reduced-profile", "--cpu-percent-threshold", "8", "--malloc-threshold", "10",
         "--use-virtual-time", "--cpu-sampling-rate", "0.002"],
        "allocation_sampling_window: 524288\nmemory-leak-detector: false\n"
        "profile-only: run_lib,run_config\n"
        f"program_path: '{TARGETS}'\nreduced-profile: true\ncpu_percent_threshold: 8\n"
        "malloc-threshold: 10\nuse-virtual-time: true\ncpu_sampling_rate: 0.002\n"),
}


@pytest.mark.parametrize("case", sorted(EQUAL_CASES))
def test_config_equal_to_command_line_gives_the_same_profile(python_exe, tmp_path, case):
    argv, text = EQUAL_CASES[case]
    config = write_config(tmp_path, text)
    by_line = run_profiled(python_exe, TARGET, outfile=tmp_path / "line.json", options=argv)
    by_file = run_profiled(python_exe, TARGET, outfile=tmp_path / "file.json",
                           options=["--config", config])
    for ran in (by_line, by_file):
        assert ran.returncode == 0, ran.describe()
    assert settings(by_file) == settings(by_line)
    line_profile, file_profile = load_profile(by_line), load_profile(by_file)
    assert what_landed(file_profile) == what_landed(line_profile)
    if case == "cpu-stacks-exclude":
        s = settings(by_file)
        assert (s["SCRY_MEMORY"], s["SCRY_STACKS"], s["SCRY_VIRTUAL_TIME"]) == ("0", "1", "1")
        assert s["SCRY_PROFILE_EXCLUDE"] == "run_lib" and s["SCRY_CPU_SAMPLING_RATE"] == 0.004
        # The helper is excluded; the interpreter's shutdown may have a file of its own.
        assert file_profile["memory"] is False and file_profile["stacks"]
        assert TARGET in what_landed(file_profile)["files"]
        assert "filter_helper.py" not in what_landed(file_profile)["files"]
    else:
        s = settings(by_file)
        assert (s["SCRY_ALLOCATION_WINDOW"], s["SCRY_LEAK_DETECTOR"]) == ("524288", "0")
        assert s["SCRY_PROGRAM_PATH"] == str(TARGETS)
        # Reduced at 8% of the time and 10 MB: the loops' lines (~45% and ~20% of the time) and
        # big's 32 MiB stay; small's 4 MiB (and ~1% of the time) goes. The same lines both ways.
        assert kept_lines(file_profile) == kept_lines(line_profile)
        lines = kept_lines(file_profile)
        assert (TARGET, MARKERS["own"]) in lines, lines
        assert ("filter_helper.py", HELPER_LINE) in lines, lines
        assert (TARGET, MARKERS["big"]) in lines, lines
        assert (TARGET, MARKERS["small"]) not in lines, lines


def test_command_line_wins_over_the_config(tmp_path):
    python = preferred_python()
    config = write_config(tmp_path, "cpu-sampling-rate: 0.004\nstacks: true\ncpu-only: true\n"
                                    "profile-only: nomatch\nno-view: true\n")
    ran = run_profiled(python, TARGET, args=QUICK, outfile=tmp_path / "p.json",
                       options=["--config", config, "--cpu-sampling-rate", "0.006",
                                "--no-stacks", "--memory", "--profile-only", "run_config",
                                "--cli"])
    assert ran.returncode == 0, ran.describe()
    s = settings(ran)
    assert (s["SCRY_CPU_SAMPLING_RATE"], s["SCRY_STACKS"], s["SCRY_MEMORY"],
            s["SCRY_PROFILE_ONLY"]) == (0.006, "0", "1", "run_config"), s
    # --cli after the config's no-view: the terminal view is printed (on stderr: not a tty).
    assert "Line │" in ran.stderr.decode(errors="replace"), ran.describe()
    # And the config alone does what it says.
    alone = run_profiled(python, TARGET, args=QUICK, outfile=tmp_path / "q.json",
                         options=["--config", config])
    s = settings(alone)
    assert (s["SCRY_CPU_SAMPLING_RATE"], s["SCRY_STACKS"], s["SCRY_MEMORY"],
            s["SCRY_PROFILE_ONLY"]) == (0.004, "1", "0", "nomatch"), s


def test_dash_c_is_config(tmp_path):
    """-c FILE is Scalene's spelling of --config FILE (issue 28, item 5); twice is refused."""
    config = write_config(tmp_path, "cpu-sampling-rate: 0.004\nstacks: true\ncpu-only: true\n")
    ran = run_profiled(preferred_python(), TARGET, args=QUICK, outfile=tmp_path / "p.json",
                       options=["-c", config])
    assert ran.returncode == 0, ran.describe()
    s = settings(ran)
    assert (s["SCRY_CPU_SAMPLING_RATE"], s["SCRY_STACKS"], s["SCRY_MEMORY"]) == \
        (0.004, "1", "0"), s
    cp = run_scry(["run", "-c", config, "--config", config, TARGETS / TARGET])
    assert cp.returncode == 2 and "give --config once" in cp.stderr, cp.stderr


@pytest.mark.parametrize("key", ["use-virtual-time", "use_virtual_time"])
def test_dash_and_underscore_keys(tmp_path, key):
    config = write_config(tmp_path, f"{key}: true\nprofile_all: true\n")
    ran = run_profiled(preferred_python(), TARGET, args=QUICK, outfile=tmp_path / "p.json",
                       options=["--config", config])
    s = settings(ran)
    assert (s["SCRY_VIRTUAL_TIME"], s["SCRY_PROFILE_ALL"]) == ("1", "1"), s


def test_a_list_for_a_repeatable_option(tmp_path):
    """tag: [a, b] is --tag a --tag b; a list for a one-value option is an error (below)."""
    config = write_config(tmp_path, "push: http://127.0.0.1:9/\npush-interval: 0.5\n"
                                    "tag:\n  - env=test\n  - 'bad tag'\n")
    cp = run_scry(["run", "--config", config, TARGETS / TARGET])
    assert cp.returncode == 2, cp.stderr
    # The second item is the bad one: its own line (5) is named.
    assert f"{config}:5: --tag" in cp.stderr, cp.stderr


# (config text, the line named, what the message must hold besides)
BAD = {
    "unknown key": ("cpu-sampling-rate: 0.01\nsampling: 3\n", 2, "'sampling' is not an option"),
    "bad value": ("# rate\n\ncpu-sampling-rate: fast\n", 3,
                  "--cpu-sampling-rate needs a number of seconds above 0 (such as 0.01), "
                  "not 'fast'"),
    "flag with a value": ("stacks: maybe\n", 1, "stacks is a flag: give true or false, not "
                                                "'maybe'"),
    "list for one value": ("stacks: true\nprofile-only: [a, b]\n", 2,
                           "profile-only takes one value, not a list"),
    "boolean for a value": ("outfile: true\n", 1, "outfile needs a value"),
    "no value": ("memory: true\noutfile:\n", 2, "outfile needs a value"),
    "false without a twin": ("memory: false\n", 1,
                             "memory: false has no meaning: scry run has no --no-memory"),
    "twice": ("stacks: true\nno_view: true\nno-view: false\n", 3,
              "no-view is given twice (first on line 2)"),
    "malformed": ("stacks: true\ncpu-only: true: false\n", 2, "not valid YAML"),
    "not a mapping": ("- stacks\n- cpu-only\n", 1, "a config is a mapping"),
    "two documents": ("stacks: true\n---\ncpu-only: true\n", 3, "one YAML document"),
    "help": ("help: true\n", 1, "'help' is not an option of scry run in a config file"),
    "program path": ("program-path: /nonexistent/dir\n", 1,
                     "--program-path needs a directory, not '/nonexistent/dir'"),
    "bad window": ("allocation_sampling_window: -5\n", 1,
                   "--allocation-sampling-window needs a number of bytes above 0"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_bad_config_names_the_file_line_and_key(tmp_path, case):
    text, line, message = BAD[case]
    config = write_config(tmp_path, text)
    out = tmp_path / "p.json"
    cp = run_scry(["run", "--config", config, "-o", out, TARGETS / TARGET], cwd=tmp_path)
    assert cp.returncode == 2, cp.stderr
    first = cp.stderr.splitlines()[0]
    assert first.startswith(f"scry: error: {config}:{line}: "), first
    assert message in first and first.endswith("[usage]"), first
    assert cp.stdout == "", cp.stdout  # the program never ran
    assert not out.exists()


MIB = 1 << 20


def _flow(size):
    half = (size - 8) // 2
    return "tag: " + "[" * half + "]" * half + "\n"


def _flow_lines(size):
    n = (size - 8) // 3
    return "tag: " + "[\n" * n + "]" * n + "\n"


def _block_mappings(size):
    out, i = [], 0
    while sum(map(len, out)) < size - 2000:
        out.append(" " * i + f"k{i}:\n")
        i += 1
    return "".join(out)


def _block_lists(size):
    return "tag:\n" + "- " * ((size - 16) // 2) + "x\n"


def _aliases(size):
    """5,000 anchors, then aliases of them to 1 MiB: each alias costs libyaml's loader a search
    of every anchor; expanded, nested aliases blow up like the "billion laughs"."""
    text = "tag:\n" + "".join(f"- &a{i} x\n" for i in range(5000))
    return text + "".join(f"- *a{i % 5000}\n" for i in range((size - len(text)) // 9))


def _many_values(size):
    return "tag: [" + ",".join(["x"] * ((size - 16) // 2)) + "]\n"


# (a ~1 MiB config, the line the message names, what it says): issue 26 item 4. libyaml took
# minutes on deep nesting (a 1 MiB file of `[[[[` about half an hour); the shape is bounded as
# the parser's events arrive: depth 64, 10,000 values, no aliases.
HOSTILE = {
    "flow nesting": (_flow, 1, "nested deeper than 64 levels"),
    "flow nesting over lines": (_flow_lines, 64, "nested deeper than 64 levels"),
    "block mappings": (_block_mappings, 65, "nested deeper than 64 levels"),
    "block lists": (_block_lists, 2, "nested deeper than 64 levels"),
    "aliases": (_aliases, 5002, "an alias (*name)"),
    "many values": (_many_values, 1, "more than 10000 values"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_config_fails_at_once_with_bad_config(tmp_path, case):
    """A config from an untrusted repository: deep or huge files fail with bad_config naming the
    line, in CPU seconds (getrusage of the child, not wall time: a busy machine changes nothing)
    rather than minutes."""
    make, line, message = HOSTILE[case]
    config = write_config(tmp_path, make(MIB - 64))
    assert MIB // 2 < config.stat().st_size < MIB
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    cp = run_scry(["run", "--config", config, TARGETS / TARGET], timeout=60, cwd=tmp_path)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    assert cp.returncode == 1, cp.stderr[:2000]
    first = cp.stderr.splitlines()[0]
    assert first.startswith(f"scry: error: {config}:{line}: "), first
    assert message in first and first.endswith("[bad_config]"), first
    assert cp.stdout == ""
    assert cpu < 5, f"{cpu:.2f} s of CPU for a {case} config"


def test_a_config_at_the_bounds_still_loads(tmp_path):
    """Depth 64 is allowed (the first pass counts, it does not forbid nesting as such): the
    error then comes from what the values are, as for any config."""
    config = write_config(tmp_path, "tag: " + "[" * 63 + "]" * 63 + "\n")
    cp = run_scry(["run", "--config", config, TARGETS / TARGET])
    assert cp.returncode == 2 and "[usage]" in cp.stderr, cp.stderr
    assert f"{config}:1: tag needs a value" in cp.stderr, cp.stderr


def test_a_missing_or_unreadable_config(tmp_path):
    cp = run_scry(["run", "--config", tmp_path / "nope.yaml", TARGETS / TARGET])
    assert cp.returncode == 1 and cp.stdout == "", cp.stderr
    assert f"cannot open the config file {tmp_path / 'nope.yaml'}" in cp.stderr, cp.stderr
    assert "[io_error]" in cp.stderr
    cp = run_scry(["run", "--config", tmp_path, TARGETS / TARGET])  # a directory
    assert cp.returncode == 1 and "[io_error]" in cp.stderr, cp.stderr
    config = write_config(tmp_path, "stacks: true\n")
    cp = run_scry(["run", "--config", config, "--config", config, TARGETS / TARGET])
    assert cp.returncode == 2 and "give --config once" in cp.stderr, cp.stderr


def test_a_config_may_not_name_the_program(tmp_path):
    """The keys are options; the program comes from the command line only."""
    config = write_config(tmp_path, f"program: {TARGETS / TARGET}\n")
    cp = run_scry(["run", "--config", config])
    assert cp.returncode == 2 and f"{config}:1: 'program' is not an option" in cp.stderr, \
        cp.stderr
    config = write_config(tmp_path, "stacks: true\n")
    cp = run_scry(["run", "--config", config])
    assert cp.returncode == 2 and "give the program to profile" in cp.stderr, cp.stderr


def test_config_text_is_cleaned_in_messages(tmp_path):
    config = tmp_path / "scry.yaml"
    config.write_bytes(b"cpu-sampling-rate: \"\\e[31mred\"\n")
    cp = run_scry(["run", "--config", config, TARGETS / TARGET])
    assert cp.returncode == 2 and "\x1b" not in cp.stderr, repr(cp.stderr)
    assert f"{config}:1: --cpu-sampling-rate needs" in cp.stderr, cp.stderr


def test_malloc_threshold_in_the_view(tmp_path):
    """The terminal view at the end shows a line under the time threshold for its share of the
    memory only when it allocated --malloc-threshold MB: small (4 MiB, ~10% of the ~38 MiB
    allocated by the quick run) at 0, not at 10; big (32 MiB) at both. A sample every 100 s
    on average: no line has time, memory alone decides."""
    python = preferred_python()
    shown = {}
    for mt in ("0", "10"):
        ran = run_profiled(python, TARGET, args=QUICK, outfile=tmp_path / f"p{mt}.json",
                           options=["--cli", "--cpu-percent-threshold", "5",
                                    "--cpu-sampling-rate", "100", "--malloc-threshold", mt])
        assert ran.returncode == 0, ran.describe()
        view = ran.stderr.decode(errors="replace")
        shown[mt] = {name for name in ("big", "small") if f"# @{name}" in view}
    assert shown == {"0": {"big", "small"}, "10": {"big"}}, shown
    cp = run_scry(["run", "--malloc-threshold", "ten", TARGETS / TARGET])
    assert cp.returncode == 2 and "--malloc-threshold needs a number of MB" in cp.stderr


def fake_browser(tmp_path):
    """A $BROWSER that records the page it was given."""
    log = tmp_path / "opened.txt"
    script = tmp_path / "browser.sh"
    script.write_text(f"#!/bin/sh\nprintf '%s\\n' \"$1\" >> '{log}'\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script, log


def run_quick(tmp_path, options, env_extra=None, no_display=True, outfile=True):
    """The target under scry run with options (no --no-view added), in tmp_path; the profile
    goes to tmp_path/p.json unless outfile is false."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("SCRY_") and k not in ("BROWSER",)}
    if no_display:
        env.pop("DISPLAY", None)
        env.pop("WAYLAND_DISPLAY", None)
    env.update(env_extra or {})
    argv = [str(SCRY), "run", "--python", preferred_python()]
    argv += ["-o", str(tmp_path / "p.json")] if outfile else []
    argv += [str(o) for o in options] + [str(TARGETS / TARGET), *QUICK]
    cp = subprocess.run(argv, capture_output=True, text=True, errors="replace", env=env,
                        cwd=tmp_path, timeout=120)
    assert cp.returncode == 0, cp.stderr
    assert cp.stdout.splitlines()[-1] == "done", cp.stdout
    return cp


VIEW = "Line │"


def test_output_options(tmp_path):
    """--json/--no-view: no view; --cli: the view; --html/--no-browser: the page next to the
    profile; --web/--viewer: the browser ($BROWSER), or the terminal view without a display."""
    page = tmp_path / "p.html"
    cp = run_quick(tmp_path, ["--json"])
    assert VIEW not in cp.stderr and (tmp_path / "p.json").is_file(), cp.stderr
    cp = run_quick(tmp_path, ["--json", "--cli"])
    assert VIEW in cp.stderr, cp.stderr
    for opt in ("--html", "--no-browser"):
        page.unlink(missing_ok=True)
        cp = run_quick(tmp_path, [opt])
        assert page.is_file() and f"scry: wrote the page to {page}" in cp.stderr, cp.stderr
        assert stat.S_IMODE(page.stat().st_mode) == 0o600
        assert "<html" in page.read_text().lower() and VIEW in cp.stderr
    browser, log = fake_browser(tmp_path)
    for opt in ("--web", "--viewer"):
        log.unlink(missing_ok=True)
        cp = run_quick(tmp_path, [opt], {"DISPLAY": ":99", "BROWSER": str(browser)},
                       no_display=False)
        opened = log.read_text().split()
        assert len(opened) == 1 and "in the browser" in cp.stderr, cp.stderr
        with open(opened[0]) as f:
            assert "<html" in f.read().lower()
        assert VIEW not in cp.stderr  # the browser showed it
        # Without a display: the page's path and the terminal view.
        cp = run_quick(tmp_path, [opt], {"BROWSER": str(browser)})
        assert "there is no display" in cp.stderr and VIEW in cp.stderr, cp.stderr
    # --web with --html opens the page written next to the profile; --no-browser cancels --web.
    log.unlink(missing_ok=True)
    run_quick(tmp_path, ["--web", "--html"], {"DISPLAY": ":99", "BROWSER": str(browser)},
              no_display=False)
    assert log.read_text().split() == [str(page.resolve())]
    log.unlink()
    cp = run_quick(tmp_path, ["--web", "--no-browser"], {"DISPLAY": ":99",
                                                          "BROWSER": str(browser)},
                   no_display=False)
    assert not log.exists() and VIEW in cp.stderr, cp.stderr


# Every Scalene option of docs/scalene-options.md that scry accepts, with a value where it takes
# one, and what the agent must then be told (None: nothing of the environment to check).
SCALENE_OPTIONS = [
    (["--outfile", "{tmp}/o.json"], None),
    (["--cli"], None),
    (["--json"], None),
    (["--html"], None),
    (["--web"], None),
    (["--no-browser"], None),
    (["--viewer"], None),
    (["--reduced-profile"], None),
    (["--profile-only", "run_config"], ("SCRY_PROFILE_ONLY", "run_config")),
    (["--profile-exclude", "run_lib"], ("SCRY_PROFILE_EXCLUDE", "run_lib")),
    (["--profile-all"], ("SCRY_PROFILE_ALL", "1")),
    (["--program-path", "{targets}"], ("SCRY_PROGRAM_PATH", "{targets}")),
    (["--cpu"], ("SCRY_MEMORY", "0")),
    (["--cpu-only"], ("SCRY_MEMORY", "0")),
    (["--memory"], ("SCRY_MEMORY", "1")),
    (["--stacks"], ("SCRY_STACKS", "1")),
    (["--no-stacks"], ("SCRY_STACKS", "0")),
    (["--off"], None),
    (["--profile-interval", "5"], None),
    (["--use-virtual-time"], ("SCRY_VIRTUAL_TIME", "1")),
    (["--cpu-sampling-rate", "0.02"], ("SCRY_CPU_SAMPLING_RATE", "0.02")),
    (["--allocation-sampling-window", "65536"], ("SCRY_ALLOCATION_WINDOW", "65536")),
    (["--malloc-threshold", "5"], None),
    (["--cpu-percent-threshold", "3"], None),
    (["--memory-leak-detector"], ("SCRY_LEAK_DETECTOR", "1")),
    (["--profile-system-libraries"], ("SCRY_PROFILE_SYSTEM_LIBRARIES", "1")),
    (["--config", "{tmp}/c.yaml"], ("SCRY_STACKS", "1")),
]


@pytest.fixture(scope="module")
def run_help():
    return run_scry(["run", "--help"]).stdout


@pytest.mark.parametrize("option,expect", SCALENE_OPTIONS, ids=[o[0][0] for o in SCALENE_OPTIONS])
def test_every_scalene_option_is_accepted(tmp_path, run_help, option, expect):
    if option[0] not in run_help:
        if option[0] in ("--off", "--profile-interval"):
            pytest.skip(f"{option[0]} comes with the lead's on/off branch")
        pytest.fail(f"scry run --help does not list {option[0]}")
    write_config(tmp_path, "stacks: true\n", "c.yaml")
    sub = {"{tmp}": str(tmp_path), "{targets}": str(TARGETS)}

    def fill(s):
        for k, v in sub.items():
            s = s.replace(k, v)
        return s
    cp = run_quick(tmp_path, [fill(o) for o in option])
    s = {}
    for line in cp.stdout.splitlines():
        name, _, value = line.partition("=")
        if name.startswith("SCRY_"):
            s[name] = value
    if option[0] == "--outfile":
        assert (tmp_path / "o.json").is_file() and not (tmp_path / "p.json").exists()
    if expect:
        got, want = s.get(expect[0]), fill(expect[1])
        if expect[0] == "SCRY_CPU_SAMPLING_RATE":
            got, want = float(got), float(want)
        assert got == want, (option, s)


def test_every_scalene_option_in_a_config(tmp_path):
    """One config with every Scalene key of the table that takes effect at once (underscores,
    as Scalene's own configs are often written)."""
    config = write_config(tmp_path, "\n".join([
        f"outfile: '{tmp_path}/o.json'", "cli: true", "html: true", "reduced_profile: true",
        "profile_only: run_config", "profile_exclude: nomatch",
        "profile_system_libraries: true", f"program_path: '{TARGETS}'", "cpu: true",
        "memory: true", "stacks: true", "use_virtual_time: true", "cpu_sampling_rate: 0.02",
        "allocation_sampling_window: 65536", "malloc_threshold: 5",
        "cpu_percent_threshold: 3", "memory_leak_detector: true", ""]))
    cp = run_quick(tmp_path, ["--config", config], outfile=False)
    assert (tmp_path / "o.json").is_file() and (tmp_path / "o.html").is_file(), cp.stderr
    profile = json.loads((tmp_path / "o.json").read_text())
    assert profile["cpu_sampling_rate"] == 0.02 and profile["use_virtual_time"] is True
    assert profile["memory"] is True and VIEW in cp.stderr
    assert [os.path.basename(f) for f in profile["files"]] in ([TARGET], []), profile["files"]
