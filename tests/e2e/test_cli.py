"""scry's command line as a whole: the one command table (src/cli/main.c) makes `scry --help`,
`scry help CMD`, `scry CMD --help` and dispatch; usage errors have one form and one code; a failed
write to standard output is an io_error (exit 1) whatever the command.

The table is read from the source, so that a command added to it without help, or a cmd_*.c
handler left out of it, fails here.
"""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, SCRY, run_scry

MAIN_C = REPO / "src" / "cli" / "main.c"


def table():
    """(name, handler, takes --json) for each entry of cli_commands[], in order."""
    src = MAIN_C.read_text()
    body = src[src.index("const struct cli_command cli_commands[] = {"):]
    body = body[:body.index("\n};")] + "\n"
    entries = re.findall(r'\{"([a-z]+)",\s*(\w+),(.*?)\},?\n', body, re.S)
    assert entries, "no entry found in cli_commands[]"
    return [(name, handler, re.search(r"\bCLI_JSON\b", rest) is not None)
            for name, handler, rest in entries]


def handlers_defined():
    """Every `int cmd_X(int argc, char **argv)` defined in src/cli/cmd_*.c."""
    names = set()
    for f in (REPO / "src" / "cli").glob("cmd_*.c"):
        names |= set(re.findall(r"^int (cmd_\w+)\(int argc, char \*\*argv\)$", f.read_text(),
                                re.M))
    return names


def listed_commands(text):
    """The command names of `scry --help`'s commands: section, in order."""
    section = text[text.index("commands:\n"):].split("\n\n")[0].splitlines()[1:]
    return [line.split()[0] for line in section]


def test_help_lists_every_command_of_the_table(scry):
    entries = table()
    names = [n for n, _, _ in entries]
    assert len(set(names)) == len(names), names
    # Every handler written in a cmd_*.c is in the table (main.c once missed some).
    in_table = {h for _, h, _ in entries}
    missing = handlers_defined() - in_table
    assert not missing, f"handlers not in the command table: {missing}"
    for args in (["--help"], ["-h"], ["help"]):
        cp = run_scry(args)
        assert cp.returncode == 0 and cp.stderr == "", (args, cp.stderr)
        assert listed_commands(cp.stdout) == names, (args, cp.stdout)
    # No arguments: the same list, on stderr, as a usage error's exit status.
    cp = run_scry([])
    assert cp.returncode == 2 and cp.stdout == ""
    assert listed_commands(cp.stderr) == names
    # An unknown command names them all.
    cp = run_scry(["frobnicate"])
    assert cp.returncode == 2
    assert "commands: " + ", ".join(names) in cp.stderr, cp.stderr


@pytest.mark.parametrize("args, suggestion", [
    (["prog.py"], "scry run prog.py"),
    (["--cpu", "prog.py"], "scry run --cpu prog.py"),
    (["--cli", "prog.py", "--json", "x"], "scry run --cli prog.py ..."),
    (["--outfile", "p.json", "-m", "pkg.mod", "arg"], "scry run --outfile p.json -m pkg.mod ..."),
    (["--cpu-only", "my app's.py"], "scry run --cpu-only 'my app'\\''s.py'"),
])
def test_options_before_a_program_suggest_run(args, suggestion):
    """Scalene's habit (`scalene --cpu prog.py`): scry says which run command was meant, up to the
    program (its own arguments are left out); the JSON flag among them is the program's."""
    cp = run_scry(args)
    assert cp.returncode == 2 and cp.stdout == "", cp
    assert f"; did you mean: {suggestion} [usage]" in cp.stderr, cp.stderr
    # No program: no guess.
    cp = run_scry(["--cpu", "--cli"])
    assert cp.returncode == 2 and "did you mean" not in cp.stderr, cp.stderr


def test_run_suggestion_is_cleaned():
    """The suggestion repeats the command line: a name holding terminal escapes is shown with
    '?' for them, as every text scry shows (docs/SECURITY.md)."""
    cp = run_scry(["--cpu", "\x1b]0;owned\x07\x1b[2Jx.py"])
    assert cp.returncode == 2, cp.stderr
    assert "\x1b" not in cp.stderr and "\x07" not in cp.stderr, repr(cp.stderr)
    assert "did you mean: scry run --cpu '?]0;owned??[2Jx.py'" in cp.stderr, repr(cp.stderr)


def test_python_m_scry_suggests_python_m_scry_run(tmp_path):
    """python -m scry --cli prog.py: the suggestion is the same wrapper's run command. The package
    from the checkout, with the built binary as its bundled one."""
    pkg = tmp_path / "python" / "scry"
    shutil.copytree(REPO / "python" / "scry", pkg)
    (pkg / "_bin").mkdir(exist_ok=True)
    (pkg / "_bin" / "scry").symlink_to(SCRY)
    (tmp_path / "src" / "cli").mkdir(parents=True)  # the version, as in a checkout
    shutil.copy(REPO / "src" / "cli" / "cli.h", tmp_path / "src" / "cli")
    env = dict(os.environ, PYTHONPATH=str(tmp_path / "python"))
    cp = subprocess.run([sys.executable, "-m", "scry", "--cli", "prog.py"], env=env, cwd=tmp_path,
                        capture_output=True, text=True, timeout=60)
    assert cp.returncode == 2, cp
    assert "did you mean: python -m scry run --cli prog.py [usage]" in cp.stderr, cp.stderr


@pytest.mark.parametrize("name", [n for n, _, _ in table()])
def test_each_command_help(scry, name):
    via_help = run_scry(["help", name])
    assert via_help.returncode == 0 and via_help.stderr == "", via_help.stderr
    assert via_help.stdout.startswith(f"usage: scry {name}"), via_help.stdout
    for flag in ("--help", "-h"):
        if name == "version" and flag == "-h":
            continue
        cp = run_scry([name, flag])
        assert cp.returncode == 0, (name, flag, cp.stderr)
        assert cp.stderr == "", (name, flag, cp.stderr)
        assert cp.stdout == via_help.stdout, (name, flag)


def check_usage_text(cp, name, message_has):
    assert cp.returncode == 2, (cp.returncode, cp.stderr)
    assert cp.stdout == "", cp.stdout
    lines = cp.stderr.splitlines()
    assert len(lines) == 2, cp.stderr
    assert lines[0].startswith("scry: error: ") and lines[0].endswith(" [usage]"), lines[0]
    assert message_has in lines[0], lines[0]
    assert lines[1] == f"hint: run 'scry {name} --help' to see its options", lines[1]


# One usage error per command: (command, arguments, a part of the message).
USAGE_CASES = [
    ("run", ["--bogus", "x.py"], "unknown option '--bogus'"),
    ("run", ["--cpu-sampling-rate"], "option --cpu-sampling-rate needs a value"),
    ("view", ["--cli", "--html"], "give one of --cli, --html and --standalone"),
    ("stacks", ["--pid", "abc"], "--pid needs a process id, not 'abc'"),
    ("stacks", ["--pid", "1", "--core", "x"], "give exactly one of --pid PID and --core FILE"),
    ("dump", ["--pid", "1"], "give the snapshot to write with -o FILE"),
    ("analyze", ["--top", "0", "x.heap"], "--top needs a count from 1 to 100000, not '0'"),
    ("query", ["x.heap"], "give one of --type T, --retaining-path ADDR, --locate NAME"),
    ("check", ["a.heap", "b.heap"], "unexpected argument 'b.heap'"),
    ("diff", ["a.heap"], "give two snapshot files"),
    ("compare", ["--top", "-1", "a", "b"], "--top needs a count of at least 0, not '-1'"),
    ("flamegraph", ["--colors", "plaid", "p.json"], "--colors takes kind or hash, not 'plaid'"),
    ("version", ["extra"], "unexpected argument 'extra'"),
]


@pytest.mark.parametrize("name,args,message_has", USAGE_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(USAGE_CASES)])
def test_usage_error_form(scry, tmp_path, name, args, message_has):
    cp = run_scry([name] + args, cwd=tmp_path)
    check_usage_text(cp, name, message_has)
    takes_json = dict((n, j) for n, _, j in table())[name]
    jcp = run_scry([name, "--json"] + args, cwd=tmp_path)
    if takes_json:
        # The same error as one JSON document on stdout, same exit status.
        assert jcp.returncode == 2, jcp.stderr
        doc = json.loads(jcp.stdout)
        assert set(doc) == {"error"}, doc
        err = doc["error"]
        assert err["code"] == "usage" and message_has in err["message"], err
        assert err["hint"] == f"run 'scry {name} --help' to see its options", err
        assert jcp.stderr == "", jcp.stderr
    elif name == "run":
        # run takes Scalene's --json (the JSON profile only, no view at the end): not a request
        # for error documents, so the same error comes as text.
        check_usage_text(jcp, name, message_has)
    else:
        # Not an option of this command: a text usage error about --json itself.
        check_usage_text(jcp, name, "--json")


def run_to_dev_full(args, cwd=None):
    with open("/dev/full", "wb") as full:
        return subprocess.run([str(SCRY)] + [str(a) for a in args], stdout=full,
                              stderr=subprocess.PIPE, timeout=60, cwd=cwd)


def check_stdout_error(cp, status=1):
    err = cp.stderr.decode()
    assert cp.returncode == status, (cp.returncode, err)
    lines = [ln for ln in err.splitlines() if ln.startswith("scry: error: ")]
    assert any("cannot write to standard output" in ln and ln.endswith("[io_error]")
               for ln in lines), err
    hints = [ln for ln in err.splitlines() if ln.startswith("hint: ")]
    assert hints and "standard output" in hints[-1], err


@pytest.mark.parametrize("args", [["--help"], ["help"], ["version"], ["--version"],
                                  ["help", "dump"], ["check", "--help"], ["run", "--help"]])
def test_help_and_version_to_a_full_disk_fail(scry, args):
    # Before the final check these exited 0 having written nothing.
    check_stdout_error(run_to_dev_full(args))


def test_reports_to_a_full_disk_fail(scry, tmp_path):
    profile = {"program": "/app/app.py", "elapsed_time_sec": 1.0, "files": {}}
    for name in ("a.json", "b.json"):
        (tmp_path / name).write_text(json.dumps(profile))
    check_stdout_error(run_to_dev_full(["compare", tmp_path / "a.json", tmp_path / "b.json"]))
    check_stdout_error(run_to_dev_full(["compare", "--json", tmp_path / "a.json",
                                        tmp_path / "b.json"]))
    # The same command to a working stdout succeeds: the failure above is the disk's.
    ok = run_scry(["compare", "--json", tmp_path / "a.json", tmp_path / "b.json"])
    assert ok.returncode == 0, ok.stderr


def test_json_error_to_a_full_disk_is_said_on_stderr(scry):
    # The usage error's JSON document cannot be written: its exit status stays 2 and stderr
    # says why nothing came out.
    check_stdout_error(run_to_dev_full(["stacks", "--json", "--pid"]), status=2)


def test_outfile_commands_hint_at_o(scry, tmp_path):
    profile = tmp_path / "p.json"
    profile.write_text(json.dumps({"program": "/app/app.py", "elapsed_time_sec": 1.0,
                                   "files": {},
                                   "stacks": [[["/app/app.py main:3;", "/app/app.py f:7;"],
                                               {"count": 5}]]}))
    cp = run_to_dev_full(["flamegraph", "--folded", profile])
    check_stdout_error(cp)
    hint = [ln for ln in cp.stderr.decode().splitlines() if ln.startswith("hint: ")][-1]
    assert "-o FILE" in hint and "path" not in hint, hint
    # The same graph to a file works.
    out = tmp_path / "p.folded"
    ok = run_scry(["flamegraph", "--folded", "-o", out, profile])
    assert ok.returncode == 0 and out.read_text().strip() != "", ok.stderr
    # A command whose -o is not where its printout goes does not suggest it.
    cp = run_to_dev_full(["view", "--format", "folded", profile])
    check_stdout_error(cp)
    hint = [ln for ln in cp.stderr.decode().splitlines() if ln.startswith("hint: ")][-1]
    assert "-o" not in hint, hint
