"""A real Grafana Pyroscope server (v1.9.0) for tests/e2e/test_push.py, and its query API.

The binary comes from scripts/install-pyroscope.sh (`make test` runs it first; here it is run
again, which finds the binary, or builds it when the test is run on its own), or from
$SCRY_PYROSCOPE. The server listens on 127.0.0.1 only, on free ports (HTTP, gRPC and memberlist:
its defaults, 4040, 9095 and 7946, would clash with another run on the machine), keeps its data
in a temporary folder, reports nothing home and does not profile itself.

Where it cannot be had (no Go, no module proxy), the tests that use it skip, saying why; with
$SCRY_REQUIRE_PYROSCOPE=1 (.ci/run sets it) they fail instead, so that CI cannot pass without
them.
"""

import json
import os
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
INSTALL = REPO / "scripts" / "install-pyroscope.sh"
BUILD_TIMEOUT_S = 1200   # a cold build takes minutes on a busy 2-core machine
READY_TIMEOUT_S = 120    # ready in seconds; generous for a loaded machine


def _unavailable(why):
    if os.environ.get("SCRY_REQUIRE_PYROSCOPE") == "1":
        pytest.fail(f"no Pyroscope server, and $SCRY_REQUIRE_PYROSCOPE=1: {why}")
    pytest.skip(f"no Pyroscope server: {why}")


def find_binary():
    """The pyroscope binary: $SCRY_PYROSCOPE, else what scripts/install-pyroscope.sh gives."""
    env = os.environ.get("SCRY_PYROSCOPE")
    if env:
        return env
    try:
        cp = subprocess.run(["bash", str(INSTALL)], capture_output=True, text=True,
                            timeout=BUILD_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        _unavailable(f"{INSTALL.name} did not finish in {BUILD_TIMEOUT_S} s")
    lines = cp.stdout.strip().splitlines()
    if cp.returncode != 0 or not lines:
        _unavailable(f"{INSTALL.name} could not build it (exit {cp.returncode}): "
                     f"{cp.stderr.strip()[-1500:]}")
    return lines[-1]


def _free_ports(n):
    """n distinct free TCP ports of 127.0.0.1 (held together so that they differ)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


class PyroscopeServer:
    def __init__(self, binary, workdir, extra_args=()):
        self.workdir = Path(workdir)
        http, grpc, gossip = _free_ports(3)
        self.url = f"http://127.0.0.1:{http}"
        data = self.workdir / "data"
        self.log_path = self.workdir / "pyroscope.log"
        argv = [binary, "-target=all",
                "-server.http-listen-address=127.0.0.1", f"-server.http-listen-port={http}",
                "-server.grpc-listen-address=127.0.0.1", f"-server.grpc-listen-port={grpc}",
                "-memberlist.bind-addr=127.0.0.1", f"-memberlist.bind-port={gossip}",
                "-memberlist.advertise-addr=127.0.0.1", f"-memberlist.advertise-port={gossip}",
                "-ingester.lifecycler.addr=127.0.0.1", "-ingester.lifecycler.ID=scry-e2e",
                "-distributor.ring.instance-addr=127.0.0.1",
                "-store-gateway.sharding-ring.instance-addr=127.0.0.1",
                "-query-frontend.instance-addr=127.0.0.1",
                "-query-scheduler.ring.instance-addr=127.0.0.1",
                "-compactor.ring.instance-addr=127.0.0.1",
                "-overrides-exporter.ring.instance-addr=127.0.0.1",
                "-storage.backend=filesystem", f"-storage.filesystem.dir={data / 'shared'}",
                f"-pyroscopedb.data-path={data / 'local'}",
                f"-compactor.data-dir={data / 'compactor'}",
                "-self-profiling.disable-push=true", "-usage-stats.enabled=false",
                # /ready waits 15 s more by default (for a rolling update's sake): none here.
                "-ingester.min-ready-duration=0s",
                *extra_args]
        self.started = time.monotonic()
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, cwd=self.workdir)
        self.ready_after = None

    def log_tail(self):
        self.log.flush()
        return self.log_path.read_bytes()[-3000:].decode(errors="replace")

    def wait_ready(self):
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            try:
                with urllib.request.urlopen(self.url + "/ready", timeout=2) as r:
                    if r.status == 200:
                        self.ready_after = time.monotonic() - self.started
                        return
            except OSError:
                pass
            if self.proc.poll() is not None:
                raise RuntimeError(f"pyroscope exited ({self.proc.returncode}):\n"
                                   f"{self.log_tail()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"pyroscope not ready in {READY_TIMEOUT_S} s:\n"
                                   f"{self.log_tail()}")
            time.sleep(0.5)

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()

    # ---- what Grafana's Pyroscope data source asks the server ----

    def render(self, profile_type, selector, start, end):
        """/pyroscope/render: the flame graph (flamebearer JSON) of a profile type's series that
        match the selector, merged over [start, end] (Unix seconds)."""
        query = urllib.parse.urlencode({"query": f"{profile_type}{selector}", "from": start,
                                        "until": end, "format": "json"})
        with urllib.request.urlopen(f"{self.url}/pyroscope/render?{query}", timeout=30) as r:
            return json.loads(r.read())

    def querier(self, method, body, tenant=None):
        """A call of the querier's Connect API (querier.v1.QuerierService/METHOD) in JSON, as
        the tenant when one is given (X-Scope-OrgID)."""
        headers = {"Content-Type": "application/json"}
        if tenant:
            headers["X-Scope-OrgID"] = tenant
        req = urllib.request.Request(f"{self.url}/querier.v1.QuerierService/{method}",
                                     data=json.dumps(body).encode(), headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return json.loads(r.read())
        except urllib.error.HTTPError as e:
            raise AssertionError(f"{method}: HTTP {e.code}: {e.read()[:2000]!r}") from None

    def series(self, selector, start_ms, end_ms, tenant=None):
        """Every series matching the selector: a list of {label: value}."""
        doc = self.querier("Series", {"matchers": [selector], "start": start_ms, "end": end_ms},
                           tenant)
        return [{lp["name"]: lp["value"] for lp in s.get("labels", [])}
                for s in doc.get("labelsSet", [])]


def start_server(tmp_path_factory, extra_args=()):
    """A ready server; a second try on other ports when the first does not start (a port
    taken between its choice and the server's bind, by another run on the machine)."""
    binary = find_binary()
    for attempt in (1, 2):
        server = PyroscopeServer(binary, tmp_path_factory.mktemp("pyroscope"), extra_args)
        try:
            server.wait_ready()
            return server
        except RuntimeError as e:
            server.stop()
            if attempt == 2:
                pytest.fail(str(e))
