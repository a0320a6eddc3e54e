"""`scry run --push URL`: continuous profiling into a Pyroscope server (docs/export-formats.md).

A fake ingest server (http.server, in the test) records each request: its URL parameters, the
multipart body (the gzipped pprof profile and the sample types' configuration), and `go tool
pprof` reads every pushed profile. The pushes are deltas: merged, they must equal the whole
run's profile exactly, and the hot function's share must be what the program measured itself.
A server that refuses connections, or accepts them and never answers, must not slow the
program, change its output or its exit status.

The fake server checks the requests' shape; a real Grafana Pyroscope server (v1.9.0, built by
scripts/install-pyroscope.sh and started once per session by tests/e2e/pyroscope_server.py)
checks that it takes them and shows what scry measured, as Grafana would query it: the profile
types, the labels and the flame graphs' values, for `scry run --push` and `scry record --push`.
"""

import base64
import email.parser
import email.policy
import gzip
import http.server
import json
import re
import socket
import subprocess
import threading
import time
import urllib.parse

import pytest

from conftest import SCRY, TARGETS, load_profile, run_profiled, run_scry, preferred_python
from test_export import pprof_top
from pyroscope_server import start_server

REPORT = re.compile(r"^scry: push: (\d+) of (\d+) profiles sent to (\S+), (\d+) dropped")
FLUSH_SEC = 3.0  # PUSH_FLUSH_SEC in src/push/push.h


class FakeIngest:
    """A Pyroscope /ingest stand-in on 127.0.0.1: records every request, answers the statuses
    of `answers` in turn, then 200."""

    def __init__(self, answers=()):
        self.requests = []
        self.answers = list(answers)
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                n = int(self.headers.get("Content-Length", 0))
                body = self.rfile.read(n)
                url = urllib.parse.urlsplit(self.path)
                outer.requests.append({
                    "path": url.path,
                    "query": dict(urllib.parse.parse_qsl(url.query, strict_parsing=True)),
                    "content_type": self.headers.get("Content-Type", ""),
                    "headers": {k.lower(): v for k, v in self.headers.items()},
                    "body": body,
                    "at": time.time(),
                })
                self.send_response(outer.answers.pop(0) if outer.answers else 200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake_ingest():
    srv = FakeIngest()
    yield srv
    srv.close()


def multipart_fields(content_type, body):
    """{field name: bytes} of a multipart/form-data body."""
    assert content_type.startswith("multipart/form-data"), content_type
    msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + body)
    assert msg.is_multipart()
    return {part.get_param("name", header="content-disposition"): part.get_payload(decode=True)
            for part in msg.iter_parts()}


def push_kind(req):
    """A push's profile: "time" (samples and times, in ns) or "memory" (bytes alone)."""
    fields = multipart_fields(req["content_type"], req["body"])
    return "time" if b"nanoseconds" in gzip.decompress(fields["profile"]) else "memory"


def measured(stdout):
    """(elapsed, hot, rest) seconds that push_work.py printed."""
    return measured_all(stdout)[:3]


def measured_all(stdout):
    """(elapsed, hot, rest, waited for a CPU) seconds that push_work.py printed."""
    m = re.search(rb"elapsed ([0-9.]+) hot ([0-9.]+) rest ([0-9.]+) waited ([0-9.]+)", stdout)
    assert m, stdout
    return tuple(float(x) for x in m.groups())


def push_report(ran):
    reports = [REPORT.match(line) for line in ran.scry_lines]
    reports = [m for m in reports if m]
    assert len(reports) == 1, ran.describe()
    sent, made, where, dropped = reports[0].groups()
    return int(sent), int(made), where, int(dropped)


def test_push_to_ingest(scry, python_exe, fake_ingest, tmp_path):
    out = tmp_path / "p.json"
    seconds, interval = 3.6, 1.0
    before = time.time()
    ran = run_profiled(python_exe, "push_work.py", args=[str(seconds), "7"], outfile=out,
                       options=["--push", f"http://127.0.0.1:{fake_ingest.port}/",
                                "--push-interval", str(interval), "--service-name", "svc-1",
                                "--tag", "env=test", "--tag", "zone=a.b"])
    after = time.time()
    assert ran.returncode == 7, ran.describe()
    elapsed, hot, rest = measured(ran.stdout)
    reqs = fake_ingest.requests
    sent, made, where, dropped = push_report(ran)
    assert (sent, made, dropped) == (len(reqs), len(reqs), 0), ran.describe()
    assert where == f"http://127.0.0.1:{fake_ingest.port}"
    # Each interval is two profiles (this is a memory profile, `scry run`'s default): its time,
    # then its memory, since Pyroscope names a profile after its sample types (`wall` and
    # `memory`, as Go's); the same interval.
    kinds = [push_kind(r) for r in reqs]
    assert kinds == ["time", "memory"] * (len(reqs) // 2), kinds
    for t, m in zip(reqs[0::2], reqs[1::2]):
        assert [t["query"][k] for k in ("from", "until")] == \
            [m["query"][k] for k in ("from", "until")], (t["query"], m["query"])
    # One push per interval the program ran (each a quarter of the interval late, so the one
    # due just before the end may fall after it), and the last one at the end.
    periodic = int(elapsed // interval)
    assert periodic + 0 <= len(reqs) // 2 <= periodic + 2, [r["query"] for r in reqs]
    assert len(reqs) // 2 >= 3

    prev_until = None
    paths, memory_paths = [], []
    for i, r in enumerate(reqs):
        q = r["query"]
        assert r["path"] == "/ingest", r["path"]
        assert "x-scope-orgid" not in r["headers"] and "authorization" not in r["headers"]
        assert q["name"] == "svc-1{env=test,zone=a.b}", q
        # No format=pprof: with it a real server reads the multipart body as one raw pprof.
        assert "format" not in q, q
        assert (q["spyName"], q["sampleRate"]) == ("scry", "100"), q
        frm, until = int(q["from"]), int(q["until"])
        assert before - 1 <= frm < until <= after + 1, (q, before, after)
        fields = multipart_fields(r["content_type"], r["body"])
        assert set(fields) == {"profile", "sample_type_config"}, fields.keys()
        config = json.loads(fields["sample_type_config"])
        assert {"samples", "python", "native", "system", "wall"} <= set(config), config
        assert fields["profile"][:2] == b"\x1f\x8b", "the profile is not gzipped"
        gzip.decompress(fields["profile"])
        path = tmp_path / f"push-{i}.pb.gz"
        path.write_bytes(fields["profile"])
        if kinds[i] == "memory":
            memory_paths.append(path)
            continue
        if prev_until is not None:
            assert abs(frm - prev_until) <= 1, [x["query"] for x in reqs]
        prev_until = until
        paths.append(path)

    # Every interval inside the loop names the hot function first. The first interval also holds
    # the interpreter's start and the last its end, both of which load can stretch: what they
    # hold is checked by the merged totals below, not here.
    for path in paths[1:-1]:
        _, wall, text = pprof_top(path, "wall")
        assert max(wall, key=wall.get) == "push_hot_loop", text

    # Deltas: merged, the pushes are the whole run's profile, to the sample.
    final = tmp_path / "final.pb.gz"
    cp = run_scry(["view", "--format", "pprof", "-o", final, out])
    assert cp.returncode == 0, cp.stderr
    for index, tol in (("samples", 0), ("wall", 1e-6 * len(paths)), ("python", 1e-6 * len(paths))):
        total_p, rows_p, text_p = pprof_top(paths, index)
        total_f, rows_f, text_f = pprof_top(final, index)
        assert abs(total_p - total_f) <= tol, (index, text_p, text_f)
        for name, v in rows_f.items():
            assert abs(rows_p.get(name, 0) - v) <= tol + 1e-9, (index, name, text_p, text_f)

    # The memory profiles merged are the run's allocations (each line's bytes rounded per push).
    total_m, rows_m, text_m = pprof_top(memory_paths, "alloc_space")
    total_f, rows_f, text_f = pprof_top(final, "alloc_space")
    assert abs(total_m - total_f) <= len(memory_paths) * (len(rows_f) + 1), (text_m, text_f)

    # The split is the program's own: its hot loop's share of the wall time, measured by it.
    total_w, wall, text = pprof_top(paths, "wall")
    share, truth = wall.get("push_hot_loop", 0) / total_w, hot / elapsed
    assert abs(share - truth) <= 0.10, (share, truth, text)
    load_profile(ran)


def test_push_retries(scry, pythons, tmp_path):
    """503 is tried again (after a back-off) and then sent; 400 is dropped at once."""
    python = preferred_python()
    srv = FakeIngest(answers=[503, 200, 400])
    try:
        ran = run_profiled(python, "push_work.py", args=["2", "0"], outfile=tmp_path / "p.json",
                           options=["--push", f"http://127.0.0.1:{srv.port}",
                                    "--push-interval", "0.5"])
    finally:
        srv.close()
    assert ran.returncode == 0, ran.describe()
    sent, made, _, dropped = push_report(ran)
    assert made >= 3 and dropped == 1 and sent == made - 1, ran.describe()
    assert "the server answered HTTP 400" in ran.scry_lines[-1], ran.scry_lines
    # One request per profile, and one more for the retried one.
    assert len(srv.requests) == made + 1, (made, len(srv.requests))
    # The retry is the same profile: the same interval, the same bytes.
    assert srv.requests[0]["query"] == srv.requests[1]["query"]
    assert (multipart_fields(srv.requests[0]["content_type"], srv.requests[0]["body"])["profile"]
            == multipart_fields(srv.requests[1]["content_type"],
                                srv.requests[1]["body"])["profile"])
    assert srv.requests[1]["at"] - srv.requests[0]["at"] >= 0.45, "no back-off before the retry"


def test_push_tenant_and_auth(scry, fake_ingest, tmp_path, monkeypatch):
    """--push-tenant sends X-Scope-OrgID; basic authentication comes from the environment
    only, and its password is never shown."""
    monkeypatch.setenv("PYROSCOPE_BASIC_AUTH_USER", "scry-user")
    monkeypatch.setenv("PYROSCOPE_BASIC_AUTH_PASSWORD", "s3cret-pw")
    ran = run_profiled(preferred_python(), "push_work.py", args=["1.2", "0"],
                       outfile=tmp_path / "p.json",
                       options=["--push", f"http://127.0.0.1:{fake_ingest.port}",
                                "--push-interval", "0.5", "--push-tenant", "team-a_1"])
    assert ran.returncode == 0, ran.describe()
    sent, made, _, dropped = push_report(ran)
    reqs = fake_ingest.requests
    assert sent == made == len(reqs) >= 2 and dropped == 0, ran.describe()
    want = "Basic " + base64.b64encode(b"scry-user:s3cret-pw").decode()
    for r in reqs:
        assert r["headers"].get("x-scope-orgid") == "team-a_1", r["headers"]
        assert r["headers"].get("authorization") == want, r["headers"]
    assert b"s3cret-pw" not in ran.stderr and all("s3cret" not in l for l in ran.scry_lines)


def test_push_default_service_name(scry, fake_ingest, tmp_path):
    """Without --service-name the service is the script's name less .py, with every character a
    Pyroscope application name cannot have (: / @ + and the like: the server answered 400 to
    every push) made '_'."""
    script = tmp_path / "my+app@v1:x.y-z.py"
    script.write_bytes((TARGETS / "push_work.py").read_bytes())
    ran = run_profiled(preferred_python(), script, args=["0.3", "0"],
                       outfile=tmp_path / "p.json",
                       options=["--push", f"http://127.0.0.1:{fake_ingest.port}"])
    assert ran.returncode == 0, ran.describe()
    names = {r["query"]["name"] for r in fake_ingest.requests}
    assert names == {"my_app_v1_x.y-z{}"}, names


def closed_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@pytest.mark.parametrize("server", ["refused", "silent"])
def test_push_server_down(scry, pythons, tmp_path, server):
    """The program's own run time, output and exit status do not change; scry ends at most
    FLUSH_SEC after it, and says how many profiles it dropped."""
    python = preferred_python()
    silent = None
    if server == "silent":
        # Accepts connections (the kernel's backlog) and never reads or answers.
        silent = socket.socket()
        silent.bind(("127.0.0.1", 0))
        silent.listen(64)
        port = silent.getsockname()[1]
    else:
        port = closed_port()
    try:
        rounds = ["--rounds", "1000", "5"]
        base = run_profiled(python, "push_work.py", args=rounds, outfile=tmp_path / "base.json")
        assert base.returncode == 5, base.describe()
        t = time.monotonic()
        ran = run_profiled(python, "push_work.py", args=rounds, outfile=tmp_path / "p.json",
                           options=["--push", f"http://127.0.0.1:{port}",
                                    "--push-interval", "0.25"])
        wall = time.monotonic() - t
    finally:
        if silent:
            silent.close()
    assert ran.returncode == 5, ran.describe()
    assert ran.stderr == base.stderr, ran.describe()
    # Each run's time less its waits for a CPU (the program's CPU time and any time it was
    # blocked, which a stalled push would add): the two runs' elapsed times moved with the load
    # each happened to get.
    (base_elapsed, *_, base_waited), (ran_elapsed, *_, ran_waited) = (
        measured_all(base.stdout), measured_all(ran.stdout))
    assert ran_elapsed - ran_waited <= (base_elapsed - base_waited) * 1.5 + 0.3, (
        f"{ran_elapsed:.3f} s ({ran_waited:.3f} s waiting for a CPU) with the server down, "
        f"{base_elapsed:.3f} s ({base_waited:.3f} s) without pushing")
    assert wall <= ran_elapsed + FLUSH_SEC + 3.0, (wall, ran_elapsed)
    sent, made, where, dropped = push_report(ran)
    assert sent == 0 and dropped == made and made >= 2, ran.describe()
    profile = load_profile(ran)
    assert "push_count" in str(profile["files"]), "the run's own profile lost its content"


@pytest.mark.parametrize("options, message", [
    (["--push", "ftp://127.0.0.1:4040"], "--push needs the URL of a Pyroscope server"),
    (["--push", "localhost"], "--push needs the URL of a Pyroscope server"),
    (["--push", "http://"], "--push needs the URL of a Pyroscope server"),
    (["--push", "http://127.0.0.1:4040/?a=b"], "without a query"),
    (["--push", "http://127.0.0.1:4040", "--tag", "novalue"], "--tag needs key=value"),
    (["--push", "http://127.0.0.1:4040", "--tag", "=x"], "--tag needs key=value"),
    (["--push", "http://127.0.0.1:4040", "--tag", "1a=b"], "not a label name"),
    (["--push", "http://127.0.0.1:4040", "--tag", "a=b c"], "a label cannot have"),
    (["--push", "http://127.0.0.1:4040", "--tag", "a=b}"], "a label cannot have"),
    (["--push", "http://127.0.0.1:4040", "--tag", "__name__=x"], "reserved"),
    (["--push", "http://127.0.0.1:4040", "--tag", "service_name=x"], "reserved"),
    # Labels the server sets, and two tags of one label: every push would be a 422.
    (["--push", "http://127.0.0.1:4040", "--tag", "pyroscope_spy=x"], "reserved"),
    (["--push", "http://127.0.0.1:4040", "--tag", "service.name=x"], "reserved"),
    (["--push", "http://127.0.0.1:4040", "--tag", "a.b=1", "--tag", "a_b=2"],
     "--tag 'a.b=1' and --tag 'a_b=2' name the same label"),
    (["--push", "http://127.0.0.1:4040", "--tag", "env=1", "--tag", "x=2", "--tag", "env=3"],
     "--tag 'env=1' and --tag 'env=3' name the same label"),
    (["--push", "http://127.0.0.1:4040", "--service-name", "a b"], "--service-name"),
    # Pyroscope's application names: one of : / @ + made every push a 400.
    (["--push", "http://127.0.0.1:4040", "--service-name", "team/app"], "--service-name"),
    (["--push", "http://127.0.0.1:4040", "--service-name", "app:1"], "--service-name"),
    (["--push", "http://127.0.0.1:4040", "--service-name", "app@x"], "--service-name"),
    (["--push", "http://127.0.0.1:4040", "--service-name", "a+b"], "--service-name"),
    (["--push", "http://127.0.0.1:4040", "--push-interval", "0"], "--push-interval"),
    (["--push", "http://127.0.0.1:4040", "--push-interval", "x"], "--push-interval"),
    (["--push", "http://127.0.0.1:4040", "--push-tenant", "a b"], "--push-tenant needs"),
    (["--push", "http://127.0.0.1:4040", "--push-tenant", ".."], "--push-tenant needs"),
    (["--push", "http://127.0.0.1:4040", "--push-tenant", "x" * 151], "--push-tenant needs"),
    (["--push-tenant", "t"], "go with --push"),
    (["--tag", "a=b"], "go with --push"),
    (["--push-interval", "5"], "go with --push"),
])
def test_push_usage_errors(scry, tmp_path, options, message):
    out = tmp_path / "p.json"
    cp = run_scry(["run", "-o", out, *options, tmp_path / "never.py"])
    assert cp.returncode == 2, cp.stderr
    assert message in cp.stderr and "[usage]" in cp.stderr, cp.stderr
    assert not out.exists()


# ---- a real Grafana Pyroscope server (tests/e2e/pyroscope_server.py) ----

@pytest.fixture(scope="session")
def pyroscope(tmp_path_factory):
    """One Pyroscope v1.9.0 server for the session, on a free port of 127.0.0.1; every test
    pushes under a service name of its own."""
    server = start_server(tmp_path_factory)
    yield server
    server.stop()


def flame_self(fb):
    """{function: self value} of a flamebearer flame graph (levels of [offset, total, self,
    name] quadruples)."""
    names, out = fb["flamebearer"]["names"], {}
    for level in fb["flamebearer"]["levels"]:
        for i in range(0, len(level), 4):
            name = names[level[i + 3]]
            out[name] = out.get(name, 0) + level[i + 2]
    return out


def assert_served(server, service, profile_path, tmp_path, start, pushes, total="wall",
                  tags=(("env", "e2e"),), memory=False):
    """What a Grafana user sees of the pushes of the service: the profile types (the series'
    names, sample types and units), the labels (service_name, the tags, the spy), and flame
    graphs whose totals and per-function self values are those of scry's own profile (the
    pushes' sum): the time to the nanosecond per push, the samples exactly."""
    final = tmp_path / "final.pb.gz"
    cp = run_scry(["view", "--format", "pprof", "-o", final, profile_path])
    assert cp.returncode == 0, cp.stderr
    name = "wall" if total == "wall" else "process_cpu"
    until = int(time.time()) + 5
    sel = f'{{service_name="{service}"}}'

    total_s, rows, text = pprof_top(final, total)
    samples, _, _ = pprof_top(final, "samples")
    tol_ns = 1000 * pushes  # each push's values are rounded to the ns
    deadline = time.monotonic() + 30
    while True:
        fb = server.render(f"{name}:{total}:nanoseconds:{total}:nanoseconds", sel, start, until)
        got = fb["flamebearer"]["numTicks"]
        if got >= total_s * 1e9 - tol_ns or time.monotonic() > deadline:
            break
        time.sleep(0.5)  # ingested, not yet queryable (a bounded wait: 30 s)
    # Every sample type with a value is a profile type (the server keeps none of all zeros:
    # a workload without native time has no `native`).
    series = server.series(sel, start * 1000, until * 1000)
    kinds = {s["__profile_type__"] for s in series}
    want = {f"{name}:{t}:{u}:{total}:nanoseconds" for t, u in
            (("samples", "count"), ("python", "nanoseconds"), ("native", "nanoseconds"),
             ("system", "nanoseconds"), (total, "nanoseconds")) if pprof_top(final, t)[0] > 0}
    assert f"{name}:{total}:nanoseconds:{total}:nanoseconds" in want
    if memory:
        # Memory is a profile of its own, named as Go's heap profile is (not under `wall`).
        alloc, alloc_rows, alloc_text = pprof_top(final, "alloc_space")
        assert alloc > 0, alloc_text
        want.add("memory:alloc_space:bytes:space:bytes")
    assert want <= kinds, (want, kinds)
    assert all(k.startswith("memory:") for k in kinds if "_space:" in k), kinds
    for s in series:
        assert s["service_name"] == service and s["pyroscope_spy"] == "scry", s
        for k, v in tags:
            assert s.get(k) == v, (k, v, s)

    # Pyroscope's own page shows a `cpu` type as samples at 1e9 a second: seconds.
    units = ("nanoseconds", 100) if total == "wall" else ("samples", 1_000_000_000)
    assert (fb["metadata"]["units"], fb["metadata"]["sampleRate"]) == units, fb["metadata"]
    assert abs(got - total_s * 1e9) <= tol_ns, (got, total_s, text)
    served = flame_self(fb)
    assert max(served, key=served.get) == "push_hot_loop", served
    # pprof's report shortens a name in angle brackets (`<module>`, `<interpreter shutdown>`)
    # to `<unknown>`: those are compared together.
    for fn in [fn for fn in served if fn.startswith("<")]:
        served["<unknown>"] = served.get("<unknown>", 0) + served.pop(fn)
    for fn, v in rows.items():
        assert abs(served.get(fn, 0) - v * 1e9) <= tol_ns, (fn, served, text)
    fb = server.render(f"{name}:samples:count:{total}:nanoseconds", sel, start, until)
    assert fb["flamebearer"]["numTicks"] == samples > 0, (fb["flamebearer"], samples)
    if memory:
        fb = server.render("memory:alloc_space:bytes:space:bytes", sel, start, until)
        got = fb["flamebearer"]["numTicks"]
        assert fb["metadata"]["units"] == "bytes", fb["metadata"]
        assert abs(got - alloc) <= pushes * (len(alloc_rows) + 1), (got, alloc, alloc_text)


@pytest.mark.parametrize("total", ["wall", "cpu"])
def test_push_real_pyroscope(scry, pythons, pyroscope, tmp_path, total):
    """A real Pyroscope server takes every push (the multipart form without format=pprof: with
    it, v1.9.0 answered 422 to all) and shows what scry measured (assert_served)."""
    service = f"scry-run-{total}"
    start = int(time.time()) - 5
    out = tmp_path / "p.json"
    ran = run_profiled(preferred_python(), "push_work.py", args=["3", "0"], outfile=out,
                       options=["--push", pyroscope.url, "--push-interval", "1",
                                "--service-name", service, "--tag", "env=e2e",
                                "--tag", "zone.name=a"]
                       + (["--use-virtual-time"] if total == "cpu" else []))
    assert ran.returncode == 0, ran.describe()
    sent, made, where, dropped = push_report(ran)
    assert sent == made >= 3 and dropped == 0, ran.describe()
    # A tag key's '.' is a '_' on the server (a label name has none).
    assert_served(pyroscope, service, out, tmp_path, start, made, total,
                  tags=(("env", "e2e"), ("zone_name", "a")), memory=True)


@pytest.fixture(scope="module")
def pyroscope_tenants(tmp_path_factory):
    """A Pyroscope server with multi-tenancy on: a push needs X-Scope-OrgID."""
    server = start_server(tmp_path_factory, ["-auth.multitenancy-enabled=true"])
    yield server
    server.stop()


def test_push_tenant_real_pyroscope(scry, pythons, pyroscope_tenants, tmp_path):
    """--push-tenant against a real multi-tenant server: without it every push is refused
    (401), with it the profiles are the tenant's, and another tenant sees none of them."""
    base = ["--push", pyroscope_tenants.url, "--push-interval", "5", "--service-name", "ten"]
    start = int(time.time()) - 5
    ran = run_profiled(preferred_python(), "push_work.py", args=["0.5", "0"],
                       outfile=tmp_path / "a.json", options=base)
    sent, made, _, dropped = push_report(ran)
    assert sent == 0 and dropped == made >= 1, ran.describe()
    assert "the server answered HTTP 401" in ran.scry_lines[-1], ran.scry_lines
    ran = run_profiled(preferred_python(), "push_work.py", args=["0.5", "0"],
                       outfile=tmp_path / "b.json", options=base + ["--push-tenant", "team-a"])
    sent, made, _, dropped = push_report(ran)
    assert sent == made >= 1 and dropped == 0, ran.describe()
    until = int(time.time()) + 5
    sel = '{service_name="ten"}'
    mine = pyroscope_tenants.series(sel, start * 1000, until * 1000, tenant="team-a")
    assert "wall:wall:nanoseconds:wall:nanoseconds" in {s["__profile_type__"] for s in mine}, mine
    assert pyroscope_tenants.series(sel, start * 1000, until * 1000, tenant="team-b") == []


# ---- scry record --pid PID --push URL: the same sender, fed by the recorder ----

def record_push(spawn, tmp_path, url, options=(), duration="2.2", seconds="8"):
    """Records a plain push_work.py with --push: (CompletedProcess, wall seconds, profile path,
    the target's Popen)."""
    target = spawn([preferred_python(), TARGETS / "push_work.py", seconds, "0"])
    time.sleep(0.5)  # the interpreter is up
    out = tmp_path / "rec.json"
    t = time.monotonic()
    cp = subprocess.run([str(SCRY), "record", "--pid", str(target.pid), "--duration", duration,
                         "-o", str(out), "--push", url, *options],
                        capture_output=True, text=True, timeout=60)
    return cp, time.monotonic() - t, out, target


def report_of(stderr):
    m = [REPORT.match(line) for line in stderr.splitlines()]
    m = [x for x in m if x]
    assert len(m) == 1, stderr
    sent, made, where, dropped = m[0].groups()
    return int(sent), int(made), where, int(dropped)


def test_record_push(scry, spawn, fake_ingest, tmp_path):
    cp, _, out, target = record_push(
        spawn, tmp_path, f"http://127.0.0.1:{fake_ingest.port}",
        ["--push-interval", "0.5", "--service-name", "rec-svc", "--tag", "env=rec",
         "--push-tenant", "team-r"])
    assert cp.returncode == 0, cp.stderr
    assert target.poll() is None, "recording with --push ended the target"
    reqs = fake_ingest.requests
    sent, made, _, dropped = report_of(cp.stderr)
    assert (sent, made, dropped) == (len(reqs), len(reqs), 0), cp.stderr
    assert 4 <= len(reqs) <= 6, [r["query"] for r in reqs]  # 2.2 s / 0.5 s, and the last one
    paths = []
    prev_until = None
    for i, r in enumerate(reqs):
        q = r["query"]
        assert r["path"] == "/ingest" and q["name"] == "rec-svc{env=rec}", (r["path"], q)
        assert r["headers"].get("x-scope-orgid") == "team-r", r["headers"]
        assert "format" not in q and q["sampleRate"] == "100", q
        if prev_until is not None:
            assert abs(int(q["from"]) - prev_until) <= 1, [x["query"] for x in reqs]
        prev_until = int(q["until"])
        fields = multipart_fields(r["content_type"], r["body"])
        path = tmp_path / f"rec-{i}.pb.gz"
        path.write_bytes(fields["profile"])
        paths.append(path)
    # The pushes are deltas of the recording: merged, they are its profile, to the sample.
    final = tmp_path / "final.pb.gz"
    assert run_scry(["view", "--format", "pprof", "-o", final, out]).returncode == 0
    for index, tol in (("samples", 0), ("wall", 1e-6 * len(paths))):
        total_p, rows_p, text_p = pprof_top(paths, index)
        total_f, rows_f, text_f = pprof_top(final, index)
        assert total_f > 0 and abs(total_p - total_f) <= tol, (index, text_p, text_f)
        for name, v in rows_f.items():
            assert abs(rows_p.get(name, 0) - v) <= tol + 1e-9, (index, name, text_p, text_f)
    _, wall, text = pprof_top(paths, "wall")
    assert max(wall, key=wall.get) == "push_hot_loop", text


def test_record_push_real_pyroscope(scry, spawn, pyroscope, tmp_path):
    """`scry record --push` to a real Pyroscope server: every push taken (422 before the fix),
    and the server shows the recording's profile (assert_served)."""
    service = "scry-record"
    start = int(time.time()) - 5
    cp, _, out, target = record_push(spawn, tmp_path, pyroscope.url,
                                     ["--push-interval", "0.5", "--service-name", service,
                                      "--tag", "env=e2e"])
    assert cp.returncode == 0, cp.stderr
    assert target.poll() is None, "recording with --push ended the target"
    sent, made, _, dropped = report_of(cp.stderr)
    assert sent == made >= 4 and dropped == 0, cp.stderr
    assert_served(pyroscope, service, out, tmp_path, start, made)


def test_record_push_server_down(scry, spawn, tmp_path):
    """A server that refuses connections neither slows the recording down nor holds scry
    past FLUSH_SEC after it; the profile is written, the drops are reported."""
    cp, took, out, target = record_push(spawn, tmp_path, f"http://127.0.0.1:{closed_port()}",
                                        ["--push-interval", "0.3"], duration="1.5")
    assert cp.returncode == 0, cp.stderr
    assert took <= 1.5 + FLUSH_SEC + 1.5, (took, cp.stderr)
    assert json.loads(out.read_text())["n_samples"] > 50
    sent, made, _, dropped = report_of(cp.stderr)
    assert sent == 0 and made >= 4 and dropped == made, cp.stderr
    assert target.poll() is None


@pytest.mark.parametrize("options, message", [
    (["--push", "localhost"], "--push needs the URL of a Pyroscope server"),
    (["--push", "http://127.0.0.1:4040", "--push-tenant", "a/b"], "--push-tenant needs"),
    (["--push", "http://127.0.0.1:4040", "--tag", "k.x=1", "--tag", "k_x=1"], "same label"),
    (["--tag", "a=b"], "go with --push"),
])
def test_record_push_usage_errors(scry, tmp_path, options, message):
    cp = run_scry(["record", "--pid", "1", "-o", tmp_path / "r.json", *options])
    assert cp.returncode == 2 and message in cp.stderr and "[usage]" in cp.stderr, cp.stderr
