"""End-to-end tests of `scry mcp`, the MCP server on stdio: the official clients (PyPI `mcp`, npm
@modelcontextprotocol/sdk; scripts/install-deps.sh mcp installs both, the tests that need one
skip without it) start it, list its tools and call each on real profiles (scry run of
tests/targets/mcp_work.py, whose hot line is known) and real snapshots (tests/targets/
heap_fixtures.py's known leaks, heap_growth.py's known growth); raw pipes check the protocol's
edges (bad JSON, bad arguments, disabled tools, notifications, requests before initialize, EOF)
and that a 1M-object snapshot's summary fits its token budget. One interpreter (the suite's
preferred one): the numbers themselves are tested on every version by the commands' tests."""

import json
import os
import random
import select
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from conftest import (REPO, SANITIZER_MARKS, SCRY, TARGETS, Target, preferred_python,
                      run_scry)

MODULE = "sys.modules['heap_leaks'].__dict__"
WORK = TARGETS / "mcp_work.py"
TOOLS = {"list_processes", "stacks", "run_profile", "profile_summary", "hot_lines",
         "compare_profiles", "capture_heap", "heap_summary", "top_retainers", "retaining_path",
         "type_instances", "diff_heaps", "locate"}
HOW = "install them with `scripts/install-deps.sh mcp` (`make test` does)"
CLIENT_TIMEOUT_S = 120
GROWN = 3000


def line_of(path, marker):
    for i, text in enumerate(Path(path).read_text().splitlines(), 1):
        if marker in text:
            return i
    raise AssertionError(f"{marker} not in {path}")


def server_env(python):
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/"),
            "SCRY_PYTHON": str(python)}


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """Profiles and snapshots made once with scry's commands, and the live heap target."""
    python = preferred_python()
    d = tmp_path_factory.mktemp("mcp")
    before = d / "before.json"
    cp = run_scry(["run", "--no-view", "--python", python, "-o", before, WORK], timeout=120)
    assert cp.returncode == 0, cp.stderr
    heap = Target([str(python), str(TARGETS / "heap_fixtures.py")], d / "heap.stderr")
    growth = Target([str(python), str(TARGETS / "heap_growth.py")], d / "growth.stderr")
    try:
        heap.ready = heap.next_json()
        growth.ready = growth.next_json()
        g1, g2 = d / "g1.heap", d / "g2.heap"
        assert run_scry(["dump", "--pid", growth.pid, "-o", g1], timeout=60).returncode == 0
        growth.command(f"grow {GROWN}")
        assert growth.next_json()["grown"] == GROWN
        assert run_scry(["dump", "--pid", growth.pid, "-o", g2], timeout=60).returncode == 0
        yield {"python": python, "dir": d, "before": before, "heap": heap, "g1": g1, "g2": g2}
    finally:
        heap.kill()
        growth.kill()


def find_in_build(rel):
    for base in (os.environ.get("SCRY_BUILD"), SCRY.parent, REPO / "build"):
        if base and (Path(base) / rel).exists():
            return Path(base) / rel
    return None


def run_client(argv, plan, world, name):
    path = world["dir"] / f"{name}.plan.json"
    path.write_text(json.dumps(plan))
    try:
        cp = subprocess.run([str(a) for a in argv] + [str(path)], capture_output=True, text=True,
                            timeout=CLIENT_TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"the {name} client did not finish in {CLIENT_TIMEOUT_S} s: {e.stderr}")
    assert cp.returncode == 0, f"the {name} client failed:\n{cp.stdout}\n{cp.stderr}"
    return json.loads(cp.stdout.strip().splitlines()[-1])


def clean_stderr(text):
    """The server's standard error holds no sanitizer report (a sanitizer build's errors)."""
    marks = [m for m in SANITIZER_MARKS if m in text]
    assert not marks, text[-4000:]


def plan_for(world, calls, allow=True, name="server"):
    return {"command": str(SCRY), "env": server_env(world["python"]),
            "args": ["mcp", "--root", str(world["dir"])]
            + (["--allow-run", "--allow-dump"] if allow else []),
            "stderr": str(world["dir"] / f"{name}.stderr"),
            "calls": [{"name": n, "arguments": a} for n, a in calls]}


# ---- the official Python client --------------------------------------------------------------

def test_python_client_calls_every_tool(world):
    venv_python = find_in_build("mcp-venv/bin/python")
    if not venv_python:
        pytest.skip(f"the Python MCP client (PyPI mcp) is not installed: {HOW}")
    d, heap = world["dir"], world["heap"]
    truths, addresses = heap.ready["truths"], heap.ready["addresses"]
    cap = d / "cap.heap"
    hot_line, cold_line = line_of(WORK, "# HOT_LINE"), line_of(WORK, "# COLD_LINE")
    listener_line = line_of(TARGETS / "heap_leaks.py", "def make_listener")
    calls = [
        ("list_processes", {"limit": 200, "token_budget": 50000}),
        ("stacks", {"pid": heap.pid}),
        ("run_profile", {"command": [str(WORK), "4"], "cwd": str(d), "timeout_s": 120}),
        ("profile_summary", {"profile": str(world["before"])}),
        ("hot_lines", {"profile": str(world["before"]), "limit": 5}),
        ("compare_profiles", {"before": str(world["before"]), "after": "{{2.profile}}"}),
        ("capture_heap", {"pid": heap.pid, "output": str(cap)}),
        ("heap_summary", {"snapshot": str(cap)}),
        ("top_retainers", {"snapshot": str(cap), "limit": 10}),
        ("retaining_path", {"snapshot": str(cap), "address": hex(addresses["CACHE"])}),
        ("type_instances", {"snapshot": str(cap), "type": "heap_leaks.Session"}),
        ("diff_heaps", {"before": str(world["g1"]), "after": str(world["g2"])}),
        ("locate", {"snapshot": str(cap), "name": "heap_leaks.make_listener"}),
        ("heap_summary", {"snapshot": str(d / "missing.heap")}),
        ("stacks", {"pid": 4194000}),
        ("heap_summary", {"snapshot": 5}),
        ("no_such_tool", {}),
        ("capture_heap", {"pid": heap.pid, "output": str(cap)}),
    ]
    out = run_client([venv_python, REPO / "tests" / "e2e" / "mcp_client.py"],
                     plan_for(world, calls, name="python-server"), world, "python")
    clean_stderr((d / "python-server.stderr").read_text())
    assert out["server"]["name"] == "scry"
    assert out["protocol"] == "2025-11-25"
    assert {t["name"] for t in out["tools"]} == TOOLS
    for t in out["tools"]:
        assert t["inputSchema"]["type"] == "object" and t["description"], t
    r = out["results"]
    for i, (name, _) in enumerate(calls[:13]):
        assert r[i].get("is_error") is False, (name, r[i])
        assert r[i]["text"] and isinstance(r[i]["structured"], dict), (name, r[i])

    procs = {p["pid"]: p for p in r[0]["structured"]["processes"]}
    assert heap.pid in procs, r[0]["text"]
    assert procs[heap.pid]["python_version"].startswith(heap.ready["python"])
    assert "heap_fixtures.py" in procs[heap.pid]["command"]

    frames = [f for t in r[1]["structured"]["threads"] for f in t["frames"]]
    assert any(f["file"].endswith("heap_fixtures.py") for f in frames), r[1]["text"]

    run = r[2]["structured"]
    assert run["exit_status"] == 0 and not run["timed_out"], run
    assert Path(run["profile"]).is_file()
    assert run["lines"][0]["line"] == hot_line, run
    # The source as in the file (the profile stores Scalene's \u003c for <, \u0026 for &)
    assert run["lines"][0]["source"] == Path(WORK).read_text().splitlines()[hot_line - 1], run

    summary = r[3]["structured"]
    assert summary["lines"][0]["line"] == hot_line, r[3]["text"]
    assert summary["functions"][0]["function"].startswith("hot"), r[3]["text"]
    # hot() does 4 times cold()'s work: its line has most of the time, and over twice cold's
    # CPU time (Python and native: the threads' CPU clocks; a wait for a CPU counts as system
    # time on whichever line runs, as much as the machine's load at that moment makes it).
    lines = {x["line"]: x for x in summary["lines"] if x["file"] == str(WORK)}

    def cpu(line):
        return line["python_sec"] + line["native_sec"]

    assert cpu(lines[hot_line]) > 2 * cpu(lines[cold_line]), r[3]["text"]
    assert lines[hot_line]["percent"] > 40, r[3]["text"]

    hot = r[4]
    assert len(hot["structured"]["lines"]) <= 5
    assert hot["structured"]["lines"][0]["line"] == hot_line
    assert f"line={hot_line}" in hot["text"], hot["text"]
    assert "# HOT_LINE: n < 10**7 & > 0" in hot["text"], hot["text"]

    hot_funcs = [f for f in r[5]["structured"]["functions"]
                 if f["function"].startswith("hot") and f["metric"] == "time_sec"]
    assert hot_funcs, r[5]["text"]
    # after's hot() does 4 times the work: its CPU time (Python and native: the threads' CPU
    # clocks) is well over 2.5 times before's (4.8 here). Not the wall time: each profile's
    # waits for a CPU count as system time, and the two runs need not share a machine's load.
    cpu_rows = [f for f in r[5]["structured"]["functions"]
                if f["function"].startswith("hot") and f["metric"] in ("python_sec", "native_sec")]
    assert cpu_rows, r[5]["text"]

    def cpu(side):
        return sum(f[side] for f in cpu_rows)

    assert cpu("after") > 2.5 * cpu("before"), r[5]["text"]

    dump = r[6]["structured"]
    assert dump["output"] == str(cap) and cap.is_file() and dump["objects"] > 10000, dump

    top = r[7]["structured"]["top_retainers"]
    assert top[0]["path"] == f"{MODULE}['CACHE']", r[7]["text"]
    assert top[0]["retained"] == pytest.approx(truths["CACHE"]["retained"], rel=0.05)
    assert f"{MODULE}['CACHE']" in r[7]["text"]
    assert "retaining_path" in r[7]["text"]  # the next call named

    assert len(r[8]["structured"]["top_retainers"]) <= 10
    assert r[8]["structured"]["top_retainers"][0]["path"] == f"{MODULE}['CACHE']"

    hops = r[9]["structured"]["path"]
    assert hops[0]["root"] == "sys.modules['heap_leaks']", hops
    assert int(hops[-1]["address"], 16) == addresses["CACHE"]
    assert "['CACHE']" in r[9]["text"]

    inst = r[10]["structured"]
    # The cache's sessions, and whatever Session build() still had in hand (as test_analyze.py)
    assert truths["CACHE"]["count"] <= inst["count"] <= truths["CACHE"]["count"] + 2, inst

    grew = {t["type"]: t for t in r[11]["structured"]["types"]}
    assert grew["__main__.Item"]["count_delta"] == GROWN, r[11]["text"]
    assert "['CACHE']" in r[11]["structured"]["sites"][0]["stack"], r[11]["text"]

    loc = r[12]["structured"]["matches"][0]
    assert loc["file"].endswith("heap_leaks.py") and loc["line"] == listener_line, loc

    # Tool failures: isError with scry's stable code first; protocol errors: -32602.
    assert r[13]["is_error"] and r[13]["text"].startswith("io_error:"), r[13]
    assert r[14]["is_error"] and r[14]["text"].startswith("no_such_process:"), r[14]
    assert r[15].get("error_code") == -32602 and "snapshot" in r[15]["message"], r[15]
    assert r[16].get("error_code") == -32602 and "no_such_tool" in r[16]["message"], r[16]
    # capture_heap never overwrites
    assert r[17]["is_error"] and "exists" in r[17]["text"], r[17]


def test_python_v2_auto_client(world):
    """pip's default mcp (2.x): its Client probes server/discover on the same pipe; scry answers
    -32601 and keeps running, and the client falls back to the handshake."""
    venv_python = find_in_build("mcp2-venv/bin/python")
    if not venv_python:
        pytest.skip(f"the Python MCP client 2.x (PyPI mcp) is not installed: {HOW}")
    hot_line = line_of(WORK, "# HOT_LINE")
    calls = [("hot_lines", {"profile": str(world["before"]), "limit": 2}),
             ("locate", {"snapshot": str(world["g2"]), "name": "Item"}),
             ("no_such_tool", {})]
    plan = plan_for(world, calls, allow=False, name="v2-server")
    plan["auto"] = True
    out = run_client([venv_python, REPO / "tests" / "e2e" / "mcp_client.py"], plan, world, "v2")
    assert {t["name"] for t in out["tools"]} == TOOLS
    r = out["results"]
    assert r[0]["is_error"] is False and r[0]["structured"]["lines"][0]["line"] == hot_line, r[0]
    assert r[1]["is_error"] is False, r[1]
    assert r[1]["structured"]["matches"][0]["file"].endswith("heap_growth.py"), r[1]
    assert r[2].get("error_code") == -32602, r[2]


# ---- the official TypeScript client ----------------------------------------------------------

def test_typescript_client(world):
    node = shutil.which("node")
    modules = find_in_build("node_modules")
    if not node or not modules or not (modules / "@modelcontextprotocol/sdk/package.json").is_file():
        pytest.skip(f"the TypeScript MCP client (npm @modelcontextprotocol/sdk) or node is "
                    f"missing: {HOW}")
    hot_line = line_of(WORK, "# HOT_LINE")
    calls = [
        ("hot_lines", {"profile": str(world["before"]), "limit": 3}),
        ("heap_summary", {"snapshot": str(world["g2"]), "limit": 5}),
        ("diff_heaps", {"before": str(world["g1"]), "after": str(world["g2"]), "limit": 5}),
        ("type_instances", {"snapshot": str(world["g2"]), "type": "Item"}),
        ("no_such_tool", {}),
        ("heap_summary", {"snapshot": str(world["g2"]), "limit": 0}),
        ("run_profile", {"command": [str(WORK)]}),
    ]
    out = run_client([node, REPO / "tests" / "e2e" / "mcp_client.mjs", modules],
                     plan_for(world, calls, allow=False), world, "typescript")
    assert out["server"]["name"] == "scry"
    clean_stderr(out["stderr"])
    assert {t["name"] for t in out["tools"]} == TOOLS
    r = out["results"]
    for i in range(4):
        assert r[i].get("is_error") is False, (calls[i], r[i])
    assert r[0]["structured"]["lines"][0]["line"] == hot_line, r[0]["text"]
    assert "['CACHE']" in r[1]["text"]
    assert any(t["type"] == "__main__.Item" and t["count_delta"] == GROWN
               for t in r[2]["structured"]["types"]), r[2]["text"]
    assert r[3]["structured"]["count"] == 1000 + GROWN, r[3]["text"]
    assert r[4].get("error_code") == -32602, r[4]
    assert r[5].get("error_code") == -32602 and "limit" in r[5]["message"], r[5]
    assert r[6]["is_error"] and "--allow-run" in r[6]["text"], r[6]
    assert r[6]["text"].startswith("permission_denied:")


# ---- raw pipes: the protocol's edges ----------------------------------------------------------

class Pipe:
    """scry mcp on pipes: send lines, read the answers (each line must be JSON)."""

    def __init__(self, args=(), cwd=None, env=None):
        self.p = subprocess.Popen([str(SCRY), "mcp", *args], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd,
                                  env=env)
        self.buf = b""

    def send(self, line):
        self.p.stdin.write(line if isinstance(line, bytes) else line.encode())
        self.p.stdin.write(b"\n")
        self.p.stdin.flush()

    def request(self, id, method, params=None):
        msg = {"jsonrpc": "2.0", "id": id, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(json.dumps(msg))
        return self.read()

    def call(self, id, name, arguments):
        return self.request(id, "tools/call", {"name": name, "arguments": arguments})

    def read(self, timeout=30):
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            assert left > 0, "no answer from scry mcp"
            ready, _, _ = select.select([self.p.stdout], [], [], left)
            if ready:
                chunk = os.read(self.p.stdout.fileno(), 1 << 20)
                assert chunk, f"scry mcp closed its output: {self.p.stderr.read().decode()}"
                self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\n")
        return json.loads(line)

    def close(self):
        self.p.stdin.close()
        rc = self.p.wait(timeout=10)
        rest = self.p.stdout.read()
        clean_stderr(self.p.stderr.read().decode(errors="replace"))
        return rc, self.buf + rest

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()


@pytest.fixture
def pipe():
    opened = []

    def start(*args, init=True, cwd=None, env=None):
        p = Pipe(args, cwd, env)
        opened.append(p)
        if init:
            got = p.request(0, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                              "clientInfo": {"name": "t", "version": "0"}})
            assert got["id"] == 0 and got["result"]["protocolVersion"] == "2025-11-25", got
            p.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        return p

    yield start
    # Each server still running ends at EOF, with status 0 and a clean standard error.
    try:
        for p in opened:
            if p.p.poll() is None:
                assert p.close()[0] == 0
    finally:
        for p in opened:
            p.kill()


def test_before_initialize(pipe):
    p = pipe(init=False)
    # The Python v2 client probes server/discover on the same pipe, then falls back.
    got = p.request(1, "server/discover", {})
    assert got["id"] == 1 and got["error"]["code"] == -32601, got
    assert p.request("a", "ping") == {"jsonrpc": "2.0", "id": "a", "result": {}}
    got = p.call(2, "heap_summary", {"snapshot": "x"})
    assert got["error"]["code"] == -32600 and "initialize" in got["error"]["message"], got
    # An unknown revision is answered with the newest served; the client decides.
    got = p.request(3, "initialize", {"protocolVersion": "1999-01-01", "capabilities": {}})
    assert got["result"]["protocolVersion"] == "2025-11-25", got
    assert got["result"]["capabilities"] == {"tools": {"listChanged": False}}
    got = p.request(4, "initialize", {"protocolVersion": "2025-06-18"})
    assert got["result"]["protocolVersion"] == "2025-06-18", got
    rc, rest = p.close()
    assert rc == 0 and rest == b""


def test_bad_messages(pipe):
    p = pipe()
    for bad in [b"{not json", b'{"jsonrpc": "2.0", "id": 1, "method": "ping"',
                b"\xff\xfe{}", b'"just a string"' if False else b"{]"]:
        p.send(bad)
        got = p.read()
        assert got["error"]["code"] == -32700 and "id" not in got, (bad, got)
    p.send(b"[]")
    assert p.read()["error"]["code"] == -32600
    p.send(json.dumps([{"jsonrpc": "2.0", "id": 1, "method": "ping"}]))
    got = p.read()
    assert got["error"]["code"] == -32600 and "batch" in got["error"]["message"], got
    for bad in [{"jsonrpc": "2.0", "id": None, "method": "ping"},
                {"jsonrpc": "2.0", "id": 1.5, "method": "ping"},
                {"jsonrpc": "2.0", "id": [1], "method": "ping"},
                {"jsonrpc": "2.0", "id": 7, "method": 5},
                {"jsonrpc": "1.0", "id": 8, "method": "ping"},
                "a string", 42]:
        p.send(json.dumps(bad))
        got = p.read()
        assert got["error"]["code"] == -32600, (bad, got)
    got = p.request(9, "tools/list", [1, 2])
    assert got["error"]["code"] == -32602, got
    got = p.request(10, "no/such/method", {})
    assert got["id"] == 10 and got["error"]["code"] == -32601, got
    got = p.request(11, "resources/list", {})
    assert got["error"]["code"] == -32601, got
    got = p.request(12, "tools/list", {"cursor": "bogus"})
    assert got["error"]["code"] == -32602, got
    # Notifications (known or not) are never answered: the next answer is the ping's.
    for method in ["notifications/cancelled", "notifications/whatever", "ping"]:
        p.send(json.dumps({"jsonrpc": "2.0", "method": method,
                           "params": {"requestId": 10, "reason": "test"}}))
    p.send(b"")
    assert p.request(13, "ping") == {"jsonrpc": "2.0", "id": 13, "result": {}}
    # A line over the 4 MiB cap is a parse error; the next one is read normally.
    p.send(b'{"jsonrpc": "2.0", "id": 14, "method": "ping", "x": "' + b"a" * (5 << 20) + b'"}')
    got = p.read()
    assert got["error"]["code"] == -32700 and "too long" in got["error"]["message"], got
    assert p.request(15, "ping")["result"] == {}
    rc, rest = p.close()
    assert rc == 0 and rest == b""


def test_bad_arguments(pipe):
    p = pipe()
    cases = [
        ("heap_summary", {}, "snapshot"),
        ("heap_summary", {"snapshot": "x", "limit": 0}, "limit"),
        ("heap_summary", {"snapshot": "x", "limit": 100000}, "limit"),
        ("heap_summary", {"snapshot": "x", "limit": "20"}, "limit"),
        ("heap_summary", {"snapshot": "x", "color": "red"}, "color"),
        ("hot_lines", {"profile": "x", "by": "speed"}, "by"),
        ("stacks", {"pid": -3}, "pid"),
        ("stacks", {"pid": 1.5}, "pid"),
        ("run_profile", {"command": []}, "command"),
        ("run_profile", {"command": [1]}, "command[0]"),
        ("retaining_path", {"snapshot": "x", "address": ""}, "address"),
    ]
    for i, (name, args, field) in enumerate(cases):
        got = p.call(i, name, args)
        assert got["id"] == i and got["error"]["code"] == -32602, (name, args, got)
        assert f"'{field}'" in got["error"]["message"], (name, args, got)
    got = p.request(50, "tools/call", {"name": "heap_summary", "arguments": [1]})
    assert got["error"]["code"] == -32602, got
    got = p.request(51, "tools/call", {"arguments": {}})
    assert got["error"]["code"] == -32602, got
    # The schema tools/list declares is the one checked: every tool's, with every property.
    tools = p.request(52, "tools/list")["result"]["tools"]
    assert [t["name"] for t in tools] == [
        "list_processes", "stacks", "run_profile", "profile_summary", "hot_lines",
        "compare_profiles", "capture_heap", "heap_summary", "top_retainers", "retaining_path",
        "type_instances", "diff_heaps", "locate"]
    for t in tools:
        s = t["inputSchema"]
        assert s["type"] == "object" and s["additionalProperties"] is False, t
        assert {"limit", "token_budget"} <= set(s["properties"]), t
        for prop in s["properties"].values():
            assert prop.get("description"), t
    assert p.request(53, "ping")["result"] == {}


def test_disabled_tools_and_failures(pipe, tmp_path):
    p = pipe("--root", str(tmp_path))
    got = p.call(1, "run_profile", {"command": [str(WORK)]})["result"]
    assert got["isError"] is True
    assert got["content"][0]["text"].startswith("permission_denied:"), got
    assert "--allow-run" in got["content"][0]["text"]
    assert got["structuredContent"]["error"]["code"] == "permission_denied"
    got = p.call(2, "capture_heap", {"pid": os.getpid()})["result"]
    assert got["isError"] and "--allow-dump" in got["content"][0]["text"], got
    # A pid that is gone: scry's code for it.
    dead = subprocess.Popen(["true"])
    dead.wait()
    got = p.call(3, "stacks", {"pid": dead.pid})["result"]
    assert got["isError"] and got["content"][0]["text"].startswith("no_such_process:"), got
    # A corrupt snapshot and a file that is not a profile.
    bad = tmp_path / "bad.heap"
    bad.write_bytes(b"SCRYHEAP" + b"\0" * 100)
    got = p.call(4, "heap_summary", {"snapshot": str(bad)})["result"]
    assert got["isError"] and got["content"][0]["text"].split(":")[0] in (
        "bad_snapshot", "too_large"), got
    notjson = tmp_path / "p.json"
    notjson.write_text("{")
    got = p.call(5, "profile_summary", {"profile": str(notjson)})["result"]
    assert got["isError"] and got["content"][0]["text"].startswith("bad_profile:"), got
    # run_profile and capture_heap with the flags, refused by their own checks.
    q = pipe("--root", str(tmp_path), "--allow-run", "--allow-dump", "--max-dump-mb", "1")
    got = q.call(6, "capture_heap", {"pid": os.getpid()})["result"]
    assert got["isError"] and got["content"][0]["text"].startswith("too_large:"), got
    assert "--max-dump-mb" in got["content"][0]["text"]
    got = q.call(7, "run_profile", {"command": ["--evil"]})["result"]
    assert got["isError"] and got["content"][0]["text"].startswith("usage:"), got
    assert p.request(8, "ping")["result"] == {}


def test_fuzzed_lines(pipe):
    """Random garbage and random JSON never crash the server; every answer is one JSON line."""
    p = pipe()
    rng = random.Random(18)
    values = [None, True, 0, -1, 2 ** 70, 1.5, "", "x" * 300, [], {}, [None], {"a": 1}]
    methods = ["initialize", "ping", "tools/list", "tools/call", "x", "", "notifications/x"]
    for i in range(300):
        kind = rng.randrange(3)
        if kind == 0:
            line = bytes(rng.choice(b'{}[]":,0123456789.eE+-truefalsnul\\ \t\x00\xc3\xff')
                         for _ in range(rng.randrange(1, 60)))
        elif kind == 1:
            msg = {"jsonrpc": rng.choice(["2.0", "2.0", "1.0", 2]),
                   "method": rng.choice(methods + values)}
            if rng.random() < 0.8:
                msg["id"] = rng.choice([i, str(i), None, 1.5, [i]])
            if rng.random() < 0.8:
                msg["params"] = rng.choice(values + [{"name": rng.choice(sorted(TOOLS) + ["?"]),
                                                      "arguments": rng.choice(values)}])
            line = json.dumps(msg).encode()
        else:
            line = json.dumps({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                               "params": {"name": rng.choice(sorted(TOOLS)),
                                          "arguments": {rng.choice(["snapshot", "pid", "limit",
                                                                    "profile", "zz"]):
                                                        rng.choice(values)}}}).encode()
        p.send(line.replace(b"\n", b" "))
    p.send(json.dumps({"jsonrpc": "2.0", "id": "last", "method": "ping"}))
    # Everything before the final ping's answer parses; the server is still there.
    for _ in range(400):
        got = p.read()
        if got.get("id") == "last":
            break
    assert got == {"jsonrpc": "2.0", "id": "last", "result": {}}
    assert p.p.poll() is None


# ---- compare_profiles answers what changed; a small budget keeps the top lines ------------------

def answer_size(got):
    return len(got["content"][0]["text"].encode()) + len(
        json.dumps(got["structuredContent"], separators=(",", ":"), ensure_ascii=False).encode())


def test_compare_profiles_answers_what_changed(pipe, world, tmp_path):
    """Only the metrics beyond the sampling error, one row each, with no sigma or interval: a
    fraction of scry compare's report, which gives every metric of every row (16 KB here)."""
    after = tmp_path / "after.json"
    cp = run_scry(["run", "--no-view", "--python", world["python"], "-o", after, WORK, "4"],
                  timeout=120)
    assert cp.returncode == 0, cp.stderr
    full = json.loads(run_scry(["compare", "--json", world["before"], after]).stdout)
    p = pipe("--root", str(world["dir"]), "--root", str(tmp_path))
    got = p.call(1, "compare_profiles", {"before": str(world["before"]), "after": str(after),
                                         "limit": 1000, "token_budget": 200000})["result"]
    doc = got["structuredContent"]
    z = full["z_significant"]
    for group in ("functions", "lines"):
        significant = [row for row in full[group] if row["significant"]]
        assert doc["unchanged"][group] == len(full[group]) - len(significant), doc
        where = {(row["function"], row.get("first_line", row.get("line"))) for row in significant}
        for row in doc[group]:
            assert set(row) == {"file", "function", "first_line" if group == "functions" else
                                "line", "metric", "before", "after", "delta", "pct", "z"}, row
            assert (row["function"], row.get("first_line", row.get("line"))) in where, row
            assert abs(row["z"]) >= z - 0.005, row
    hot = [row for row in doc["functions"]
           if row["function"].startswith("hot") and row["metric"] == "time_sec"]
    assert hot and hot[0]["after"] > 1.5 * hot[0]["before"], got["content"][0]["text"]
    assert "sigma" not in got["content"][0]["text"], got["content"][0]["text"]
    full_size = len(json.dumps(full, separators=(",", ":")).encode())
    assert answer_size(got) < full_size / 2, (answer_size(got), full_size)


def test_small_budget_summary_keeps_the_top_lines(pipe, world, tmp_path):
    """profile_summary with token_budget 600: the hottest line is there (it was `lines (0)`:
    the lines, longer with their source, were emptied first), with the hottest function."""
    # A long path, as a project's own: every row repeats it, in the text and the JSON.
    deep = tmp_path / ("a-project-directory-with-a-long-name-" * 3) / "profiles"
    deep.mkdir(parents=True)
    shutil.copy(world["before"], deep / "scry-profile.json")
    p = pipe("--root", str(tmp_path))
    hot_line = line_of(WORK, "# HOT_LINE")
    got = p.call(1, "profile_summary", {"profile": str(deep / "scry-profile.json"),
                                        "token_budget": 600})["result"]
    doc, text = got["structuredContent"], got["content"][0]["text"]
    assert answer_size(got) <= 600 * 4 * 1.01, answer_size(got)
    assert doc["lines"] and doc["lines"][0]["line"] == hot_line, text
    assert doc["functions"] and doc["functions"][0]["function"].startswith("hot"), text
    assert "lines (0)" not in text and "more lines" in text, text


# ---- the token budget on a big snapshot ---------------------------------------------------------

def test_million_object_summary_fits_the_budget(pipe, tmp_path):
    python = preferred_python()
    bench = Target([str(python), str(TARGETS / "heap_bench.py"), "--objects", "1000000"],
                   tmp_path / "bench.stderr")
    try:
        ready = bench.next_json(timeout=60)
        heap = tmp_path / "big.heap"
        t0 = time.monotonic()
        cp = run_scry(["dump", "--pid", bench.pid, "-o", heap], timeout=120)
        dump_s = time.monotonic() - t0
        assert cp.returncode == 0, cp.stderr
    finally:
        bench.kill()
    p = pipe("--root", str(tmp_path))
    for budget in (4000, 1000):
        t0 = time.monotonic()
        got = p.call(budget, "heap_summary", {"snapshot": str(heap), "limit": 1000,
                                              "token_budget": budget})["result"]
        took = time.monotonic() - t0
        text = got["content"][0]["text"]
        doc = got["structuredContent"]
        size = len(text.encode()) + len(json.dumps(doc, separators=(",", ":"),
                                                   ensure_ascii=False).encode())
        # The rule (docs/mcp.md): text and JSON together, 4 bytes a token; 1% for the float
        # formatting Python and jansson write differently.
        assert size <= budget * 4 * 1.01, (budget, size)
        assert size > budget * 4 * 0.5, (budget, size)  # cut to the budget, not far below it
        assert doc["totals"]["objects"] >= ready["objects"], doc["totals"]
        cut = doc["truncated"]
        assert cut.get("top_retainers", 0) + cut.get("types", 0) > 0, cut
        assert "truncated:" in text and "more top_retainers" in text, text[-400:]
        print(f"1M objects: dump {dump_s:.2f} s, heap_summary {took:.2f} s, {size} bytes "
              f"for a budget of {budget} tokens")


# ---- hardening: the roots rule, no content in errors, no control characters in answers -------

SECRET = "AKIAIOSFODNN7EXAMPLE"
# Every tool that takes a path, with the argument that names it.
FILE_CALLS = [("profile_summary", "profile", {}), ("hot_lines", "profile", {}),
              ("compare_profiles", "before", {"after": "{ok_profile}"}),
              ("compare_profiles", "after", {"before": "{ok_profile}"}),
              ("heap_summary", "snapshot", {}), ("top_retainers", "snapshot", {}),
              ("retaining_path", "snapshot", {"address": "0x10"}),
              ("type_instances", "snapshot", {"type": "x"}), ("locate", "snapshot", {"name": "x"}),
              ("diff_heaps", "before", {"after": "{ok_heap}"}),
              ("diff_heaps", "after", {"before": "{ok_heap}"})]


def file_calls(path, ok_profile, ok_heap):
    for name, key, rest in FILE_CALLS:
        args = {k: v.format(ok_profile=ok_profile, ok_heap=ok_heap) for k, v in rest.items()}
        args[key] = str(path)
        yield name, args


def error_of(got):
    res = got["result"]
    assert res["isError"] is True, got
    return res["content"][0]["text"], json.dumps(res, ensure_ascii=False)


@pytest.fixture(scope="module")
def roots_world(tmp_path_factory):
    """A root with a real profile and snapshot; beside it, outside, a secret and another root."""
    d = tmp_path_factory.mktemp("roots")
    root, outside, root2, extra = d / "root", d / "outside", d / "root2", d / "extra"
    for x in (root, outside, root2, extra):
        x.mkdir()
    python = preferred_python()
    cp = run_scry(["run", "--no-view", "--cpu-only", "--python", python, "-o",
                   root / "ok.json", WORK, "0.2"], timeout=120)
    assert cp.returncode == 0, cp.stderr
    shutil.copy(root / "ok.json", extra / "extra.json")
    growth = Target([str(python), str(TARGETS / "heap_growth.py")], d / "growth.stderr")
    try:
        growth.ready = growth.next_json()
        assert run_scry(["dump", "--pid", growth.pid, "-o", root / "ok.heap"],
                        timeout=60).returncode == 0
    finally:
        growth.kill()
    for where in (outside, root, root2):
        (where / "creds").write_text(f"{SECRET}\nwJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n")
    (root / "link").symlink_to(outside / "creds")
    (root / "dirlink").symlink_to(outside)
    (root / "sub").mkdir()
    return {"d": d, "root": root, "outside": outside, "root2": root2, "extra": extra,
            "python": python}


def test_paths_outside_the_roots_are_refused(pipe, roots_world):
    """/etc/shadow (readable: the tests run as root in CI), a secret beside the root, a symlink
    in the root pointing out, /root2 beside /root: refused by the roots rule, before a byte is
    read, with the path named and the content never quoted; a missing file outside the roots is
    refused the same way (no probing what exists)."""
    w = roots_world
    root = w["root"]
    p = pipe("--allow-run", "--allow-dump", cwd=root)
    ok_profile, ok_heap = str(root / "ok.json"), str(root / "ok.heap")
    i = 0
    for path in ["/etc/shadow", "/etc/scry-no-such-file", w["outside"] / "missing",
                 w["outside"] / "creds", root / "link", w["root2"] / "creds",
                 root / "dirlink" / "creds", root / "sub" / ".." / ".." / "outside" / "creds"]:
        for name, args in file_calls(path, ok_profile, ok_heap):
            i += 1
            text, whole = error_of(p.call(i, name, args))
            assert text.startswith("permission_denied:"), (name, args, text)
            assert "outside this server's roots" in text and "--root" in text, text
            assert SECRET not in whole and "root:" not in whole, whole
    # What tools write or run in follows the same rule.
    text, _ = error_of(p.call(100, "capture_heap", {"pid": os.getpid(),
                                                    "output": str(w["outside"] / "x.heap")}))
    assert text.startswith("permission_denied:"), text
    assert not (w["outside"] / "x.heap").exists()
    text, _ = error_of(p.call(101, "capture_heap", {"pid": os.getpid(),
                                                    "output": str(root / "dirlink" / "x.heap")}))
    assert text.startswith("permission_denied:"), text
    text, _ = error_of(p.call(102, "run_profile", {"command": [str(WORK)], "cwd": "/etc"}))
    assert text.startswith("permission_denied:"), text
    # Inside the root, a directory and a missing file: named, with what was expected.
    text, _ = error_of(p.call(103, "heap_summary", {"snapshot": str(root / "sub")}))
    assert text.startswith("io_error:") and "a directory: a regular file expected" in text, text
    text, _ = error_of(p.call(104, "profile_summary", {"profile": "missing.json"}))
    assert text.startswith("io_error:") and "missing.json" in text, text
    # The allowed ones still answer, relative paths resolved from the working directory.
    got = p.call(105, "profile_summary", {"profile": "ok.json"})["result"]
    assert got["isError"] is False and got["structuredContent"]["profile"] == ok_profile, got
    got = p.call(106, "heap_summary", {"snapshot": "ok.heap"})["result"]
    assert got["isError"] is False, got


def test_root_option_allows_a_directory(pipe, roots_world):
    w = roots_world
    extra = str(w["extra"] / "extra.json")
    p = pipe(cwd=w["root"])
    text, _ = error_of(p.call(1, "hot_lines", {"profile": extra}))
    assert text.startswith("permission_denied:"), text
    q = pipe("--root", str(w["extra"]), cwd=w["root"])
    got = q.call(2, "hot_lines", {"profile": extra})["result"]
    assert got["isError"] is False and got["structuredContent"]["lines"], got
    got = q.call(3, "compare_profiles", {"before": extra, "after": "ok.json"})["result"]
    assert got["isError"] is False, got
    # --root of something that is not a directory: a usage error at start.
    cp = subprocess.run([str(SCRY), "mcp", "--root", extra], input=b"", capture_output=True,
                        timeout=30)
    assert cp.returncode == 2 and b"[usage]" in cp.stderr, cp.stderr


def test_parse_errors_never_quote_content(pipe, roots_world):
    """A file inside the roots that is no profile or snapshot: the error gives the path, where
    the parser stopped and what it expected, never the bytes it found."""
    w = roots_world
    p = pipe(cwd=w["root"])
    creds = w["root"] / "creds"
    for i, (name, args) in enumerate(file_calls(creds, str(w["root"] / "ok.json"),
                                                str(w["root"] / "ok.heap"))):
        text, whole = error_of(p.call(i, name, args))
        assert text.split(":")[0] in ("bad_profile", "bad_snapshot"), (name, text)
        assert str(creds) in text, text
        assert "AKIA" not in whole and "EXAMPLE" not in whole, whole
        if text.startswith("bad_profile"):
            assert "line 1, column" in text, text
    shadow_like = w["root"] / "shadow"
    shadow_like.write_text("root:$6$salt$hash:19000:0:99999:7:::\n")
    text, whole = error_of(p.call(50, "profile_summary", {"profile": str(shadow_like)}))
    assert "root:" not in whole.replace(f"{shadow_like}", "") and "salt" not in whole, whole


HIDDEN = set(range(0x00, 0x20)) | set(range(0x7f, 0xa0)) | {0x61c, 0x200e, 0x200f, 0x2028, 0x2029} \
    | set(range(0x202a, 0x202f)) | set(range(0x2066, 0x206a))
EVIL = "\x1b[31mevil\x07\u202etxt\x9b"


def assert_clean(value, where):
    """No control character (a text's newlines aside) nor bidirectional control anywhere in a
    result: strings, member names, the text block."""
    if isinstance(value, dict):
        for k, v in value.items():
            assert_clean(k, where)
            assert_clean(v, where)
    elif isinstance(value, list):
        for v in value:
            assert_clean(v, where)
    elif isinstance(value, str):
        bad = [hex(ord(c)) for c in value if ord(c) in HIDDEN and c != "\n"]
        assert not bad, (where, bad, value[:300])


EVIL_PROGRAM = r"""
import sys, threading, time
EVIL = "\x1b[31mevil\x07\u202etxt\x9b"
def work(n):
    s = 0
    for i in range(n):
        s += i * i
    return s
work.__code__ = work.__code__.replace(co_name="f" + EVIL, co_qualname="q" + EVIL)
Evil = type("T" + EVIL, (), {})
KEEP = [Evil() for _ in range(20000)]
if sys.argv[1:] == ["live"]:
    stop = threading.Event()
    threading.Thread(target=stop.wait, name="t" + EVIL, daemon=True).start()
    print('{"ready": true}', flush=True)
    sys.stdin.readline()
else:
    print("\x1b]0;title\x07\x1b[2J\u202eout\x1b[0m", flush=True)
    for _ in range(6):
        work(300000)
"""


def test_no_control_characters_in_answers(pipe, python_exe, tmp_path):
    """File, function, thread and type names with ESC, BEL, U+202E and CSI, and a program that
    prints escape sequences: every MCP result is clean, the names still there with '?'. On every
    installed version: each lays out names in its own way."""
    script = tmp_path / f"prog{EVIL}.py"
    script.write_text(EVIL_PROGRAM)
    env = {**os.environ, "SCRY_PYTHON": str(python_exe)}
    p = pipe("--allow-run", "--allow-dump", cwd=tmp_path, env=env)
    got = p.call(1, "run_profile", {"command": [str(script)], "timeout_s": 120})
    assert got["result"]["isError"] is False, got
    assert_clean(got, "run_profile")
    run = got["result"]["structuredContent"]
    assert "?]0;title?" in run["output_tail"] and "?out?[0m" in run["output_tail"], run
    assert any(f["function"].startswith("q?[31mevil??txt?") for f in run["functions"]), run
    assert any("prog?[31mevil??txt?.py" in f["file"] for f in run["lines"]), run
    assert "?[31mevil??txt?" in got["result"]["content"][0]["text"]
    for i, (name, args) in enumerate([("profile_summary", {"profile": run["profile"]}),
                                      ("hot_lines", {"profile": run["profile"]})], 2):
        got = p.call(i, name, args)
        assert got["result"]["isError"] is False, got
        assert_clean(got, name)
        assert "?[31mevil??txt?" in got["result"]["content"][0]["text"], got
    live = Target([str(python_exe), str(script), "live"], tmp_path / "live.stderr")
    try:
        live.next_json()
        got = p.call(5, "stacks", {"pid": live.pid})
        assert got["result"]["isError"] is False, got
        assert_clean(got, "stacks")
        assert "t?[31mevil??txt?" in got["result"]["content"][0]["text"], got
        got = p.call(6, "capture_heap", {"pid": live.pid, "output": str(tmp_path / "e.heap")})
        assert got["result"]["isError"] is False, got
    finally:
        live.kill()
    for i, (name, args) in enumerate([
            ("heap_summary", {"snapshot": "e.heap", "limit": 200, "token_budget": 50000}),
            ("type_instances", {"snapshot": "e.heap", "type": "T" + EVIL}),
            ("diff_heaps", {"before": "e.heap", "after": "e.heap"})], 7):
        got = p.call(i, name, args)
        assert got["result"]["isError"] is False, (name, got)
        assert_clean(got, name)
    text = p.call(10, "heap_summary", {"snapshot": "e.heap", "limit": 200,
                                       "token_budget": 50000})["result"]["content"][0]["text"]
    assert "T?[31mevil??txt?" in text, text[:3000]
    # Protocol errors quote the tool's name: cleaned too.
    got = p.call(11, "no" + EVIL, {})
    assert got["error"]["code"] == -32602, got
    assert_clean(got["error"], "unknown tool")


def test_hot_lines_by_memory_say_the_most_held(pipe, tmp_path):
    """Issue 27 item 8: hot_lines by memory lists each line's most held at once (max_held_mb)
    where the profile has it; a line of an older profile without n_max_held_mb has none."""
    def entry(lineno, malloc, **extra):
        return {"lineno": lineno, "line": f"x{lineno} = {lineno}\n", "n_cpu_percent_python": 1.0,
                "n_cpu_percent_c": 0, "n_sys_percent": 0, "n_samples": 1, "n_malloc_mb": malloc,
                "n_growth_mb": 0, "n_peak_mb": 14.0, **extra}
    doc = {"tool": "scry", "version": "0.1.0", "program": "/app/app.py", "elapsed_time_sec": 1.0,
           "n_samples": 10, "processes": 1, "memory": True,
           "files": {"/app/app.py": {"percent_cpu_time": 2.0, "functions": [], "leaks": {},
                                     "lines": [entry(1, 900.0, n_max_held_mb=195.0),
                                               entry(2, 500.0)]}}}
    prof = tmp_path / "p.json"
    prof.write_text(json.dumps(doc))
    p = pipe("--root", str(tmp_path))
    got = p.call(1, "hot_lines", {"profile": str(prof), "by": "memory"})["result"]
    lines = got["structuredContent"]["lines"]
    assert [(r["line"], r.get("max_held_mb")) for r in lines] == [(1, 195.0), (2, None)], lines
    assert "max_held_mb=195" in got["content"][0]["text"], got["content"][0]["text"]
