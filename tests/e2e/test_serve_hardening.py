"""`scry view --serve` against another local user, a hostile page and slow clients (issue 26,
second pass; docs/SECURITY.md, "view --serve: the token, the key and slow clients").

- The URL's token never reaches a command line or an environment another user can read: the
  browser gets a private file that redirects (a second Unix user, made and removed by the test,
  scans every /proc/*/cmdline and /proc/*/environ it can while the server runs).
- The key of scry's environment goes only to the provider and base URL of scry's command line:
  a base URL named by the page gets no key but one typed in the page.
- Connections are served concurrently, each with a deadline for its whole request: clients that
  trickle a byte a second neither stall a legitimate request nor hold their connection.
- The browser scry starts is not waited for: the page is served while it runs."""

import json
import os
import secrets
import shutil
import signal
import socket
import stat
import subprocess
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from conftest import SCRY
from test_optimize import FakeProvider, hot, scry_env, work  # noqa: F401  (fixtures)
from test_view_html import browser  # noqa: F401  (the fixture: node, playwright-core, chromium)

BROWSER_OPEN_TEST = Path(__file__).resolve().parents[1] / "browser" / "serve_open.test.mjs"


class Served:
    """scry view --serve on a free port; its URL read from its first line of output."""

    def __init__(self, work, profile, args=(), env=None):
        self.proc = subprocess.Popen([str(SCRY), "view", "--serve", *args, str(profile)],
                                     env=scry_env(work, env), stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline().strip()
        assert line.startswith("http://127.0.0.1:"), (line, self.proc.stderr.read())
        self.url = line
        self.origin = line[:line.index("/", 7)]
        self.port = int(self.origin.rsplit(":", 1)[1])
        self.token = line.rstrip("/").rsplit("/", 1)[1]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            out, err = self.proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, err = self.proc.communicate()
            err += "\n(the server did not stop on SIGINT within 20 s)"
            return None, err
        return self.proc.returncode, err

    def request(self, path, method="GET", headers=None, data=None, timeout=30):
        req = urllib.request.Request(self.origin + path, method=method, data=data,
                                     headers=headers or {})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def propose(self, doc):
        h = {"Origin": self.origin, "X-Scry-Token": self.token,
             "Content-Type": "application/json"}
        status, data = self.request(f"/{self.token}/propose", "POST", h, json.dumps(doc).encode())
        return status, json.loads(data)


def new_key(prefix):
    return prefix + secrets.token_hex(16)


# ---- item 1: the token and another user ------------------------------------------------------

def scan_proc(token, marker):
    """Every /proc/*/cmdline and environ this process can read: where token is, and the command
    lines holding marker."""
    token, marker = token.encode(), marker.encode()
    out = {"uid": os.getuid(), "cmdlines": 0, "environs": 0, "hits": [], "browser": []}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        for what in ("cmdline", "environ"):
            try:
                with open(f"/proc/{pid}/{what}", "rb") as f:
                    data = f.read()
            except OSError:
                continue
            out[what + "s"] += 1
            if token in data:
                out["hits"].append(f"{pid}/{what}")
            if what == "cmdline" and marker in data:
                out["browser"].append(data.replace(b"\0", b" ").decode(errors="replace"))
    return out


def scan_as(user, token, marker):
    """scan_proc in a child that has become user (a fork, so that neither the token nor a
    script is on any command line; pyenv's interpreter under /root is not the user's to run)."""
    import pwd
    pw = pwd.getpwnam(user)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            os.setgroups([])
            os.setgid(pw.pw_gid)
            os.setuid(pw.pw_uid)
            os.write(w, json.dumps(scan_proc(token, marker)).encode())
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        data = f.read()
    os.waitpid(pid, 0)
    return json.loads(data)


FAKE_BROWSER = """#!/bin/sh
# A browser that stays in the foreground: records its pid and argument, then waits.
echo "$$ $1" > "{rec}.part" && mv "{rec}.part" "{rec}"
while :; do sleep 1; done
"""


@pytest.fixture
def other_user():
    """A throwaway Unix user, removed afterwards even when the test fails."""
    if os.geteuid() != 0 or not shutil.which("useradd"):
        pytest.skip("needs root and useradd to make a second user")
    name = "scryt" + secrets.token_hex(4)
    subprocess.run(["useradd", "-M", "-N", "-s", "/usr/sbin/nologin", name], check=True,
                   capture_output=True)
    try:
        yield name
    finally:
        subprocess.run(["userdel", "-f", name], capture_output=True)


def kill_browser(rec):
    """The fake browser, whose pid it recorded, if it started."""
    try:
        os.kill(int(rec.read_text().split(" ", 1)[0]), signal.SIGKILL)
    except (OSError, ValueError):
        pass


def wait_for(path, timeout=20):
    end = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < end, f"{path} never appeared"
        time.sleep(0.05)


def test_other_user_finds_no_token_and_page_serves_while_browser_runs(scry, work, hot,
                                                                      other_user, tmp_path):
    rec = tmp_path / "browser.rec"
    fake = tmp_path / "scry-fake-browser"
    fake.write_text(FAKE_BROWSER.format(rec=rec))
    fake.chmod(0o755)
    browser_pid = None
    s = Served(work, hot["path"], env={"DISPLAY": ":99", "BROWSER": str(fake)})
    try:
        wait_for(rec)
        browser_pid, opened = rec.read_text().split(" ", 1)
        browser_pid, opened = int(browser_pid), Path(opened.strip())
        # Another user scans every command line and environment it can read.
        seen = scan_as(other_user, s.token, fake.name)
        assert seen["uid"] != 0
        assert not seen["hits"], seen
        # The scan saw the browser's command line (so it could have seen a token there).
        assert any(str(opened) in c for c in seen["browser"]), seen
        assert seen["cmdlines"] > 3, seen
        # Item 3: the page is served while the browser is still in the foreground.
        status, page = s.request(f"/{s.token}/", timeout=5)
        assert status == 200 and b'"serve":true' in page
        os.kill(browser_pid, 0)
        # The browser was given a private file that redirects, not the URL.
        assert opened.is_file() and s.token not in str(opened), opened
        assert stat.S_IMODE(opened.stat().st_mode) == 0o600
        assert stat.S_IMODE(opened.parent.stat().st_mode) == 0o700
        assert opened.parent.stat().st_uid == os.geteuid()
        assert s.url in opened.read_text()
    finally:
        kill_browser(rec)
        rc, err = s.stop()
    assert rc == 0, err
    # The file and its directory go when the server stops.
    assert not opened.exists() and not opened.parent.exists()


def test_page_served_while_browser_stays_in_foreground(scry, work, hot, tmp_path):
    """Item 3 without a second user: the browser scry starts never exits on its own, and the
    page is served all the while; Ctrl-C ends the server, not the browser."""
    rec = tmp_path / "browser.rec"
    fake = tmp_path / "scry-fake-browser"
    fake.write_text(FAKE_BROWSER.format(rec=rec))
    fake.chmod(0o755)
    browser_pid = None
    s = Served(work, hot["path"], env={"DISPLAY": ":99", "BROWSER": str(fake)})
    try:
        wait_for(rec)
        browser_pid = int(rec.read_text().split(" ", 1)[0])
        for _ in range(3):
            status, page = s.request(f"/{s.token}/", timeout=5)
            assert status == 200 and b'"serve":true' in page
        os.kill(browser_pid, 0)
    finally:
        kill_browser(rec)
        rc, err = s.stop()
    assert rc == 0, err
    assert "opening the page in the browser" in err, err


# ---- item 1: the key goes where scry's command line says --------------------------------------

def key_holders(req, key):
    return [k for k, v in req["headers"].items() if key in v] + \
        (["body"] if key.encode() in req["body"] else []) + (["path"] if key in req["path"] else [])


def test_page_base_url_gets_no_environment_key(scry, work, hot):
    env_key, typed = new_key("sk-env-"), new_key("sk-typed-")
    region = {"file": hot["file"], "first_line": hot["line"]["lineno"],
              "last_line": hot["line"]["lineno"]}
    with FakeProvider("openai") as fake:
        s = Served(work, hot["path"], env={"OPENAI_API_KEY": env_key,
                                           "ANTHROPIC_API_KEY": env_key})
        try:
            # openai (any OpenAI-compatible server) at the page's base URL: asked without a key.
            status, doc = s.propose(dict(region, provider="openai", base_url=fake.url + "/v1"))
            assert status == 200, doc
            assert len(fake.requests) == 1
            assert key_holders(fake.requests[0], env_key) == [], fake.requests[0]["headers"]
            assert "authorization" not in fake.requests[0]["headers"]
            # A provider that needs a key: refused, saying why, and nothing is sent.
            status, doc = s.propose(dict(region, provider="anthropic", base_url=fake.url))
            assert status == 400 and doc["error"]["code"] == "no_api_key", doc
            assert "command line" in doc["error"]["message"], doc
            assert len(fake.requests) == 1
            # A key typed in the page goes where the page says.
            status, doc = s.propose(dict(region, provider="openai", base_url=fake.url + "/v1",
                                         key=typed))
            assert status == 200, doc
            assert key_holders(fake.requests[1], typed) == ["authorization"]
            assert key_holders(fake.requests[1], env_key) == []
        finally:
            rc, err = s.stop()
    assert rc == 0, err
    assert env_key not in err and typed not in err


def test_command_line_base_url_gets_environment_key(scry, work, hot):
    env_key = new_key("sk-env-")
    region = {"file": hot["file"], "first_line": hot["line"]["lineno"],
              "last_line": hot["line"]["lineno"]}
    with FakeProvider("openai") as fake, FakeProvider("openai") as other:
        s = Served(work, hot["path"], ["--provider", "openai", "--base-url", fake.url + "/v1",
                                       "--model", "gpt-test"], env={"OPENAI_API_KEY": env_key})
        try:
            status, page = s.request(f"/{s.token}/")
            assert status == 200 and b'"provider":"openai"' in page
            # No base URL from the page: the command line's, with the environment's key.
            status, doc = s.propose(dict(region, provider="openai"))
            assert status == 200, doc
            # The same base URL named by the page (a trailing '/' aside): the key too.
            status, doc = s.propose(dict(region, provider="openai", base_url=fake.url + "/v1/"))
            assert status == 200, doc
            assert len(fake.requests) == 2
            for req in fake.requests:
                assert req["headers"]["authorization"] == "Bearer " + env_key
                assert json.loads(req["body"])["model"] == "gpt-test"
            # Another base URL: no key.
            status, doc = s.propose(dict(region, provider="openai", base_url=other.url + "/v1"))
            assert status == 200, doc
            assert len(other.requests) == 1 and key_holders(other.requests[0], env_key) == []
        finally:
            rc, err = s.stop()
    assert rc == 0, err


def test_serve_provider_options_are_checked(scry, work, hot):
    from conftest import run_scry
    for args, what in ((["--provider", "nosuch"], "--provider takes one of"),
                       (["--base-url", "http://127.0.0.1:1"], "settings of the --provider"),
                       (["--provider", "openai", "--base-url", "ftp://x"], "--base-url needs"),
                       (["--provider", "openai", "--api-key", "sk-x"], "no key on the command"),
                       (["--provider", "openai"], "go with --serve")):
        argv = ["view", *(["--serve"] if what != "go with --serve" else []), *args, hot["path"]]
        cp = run_scry(argv, env=scry_env(work), timeout=30)
        assert cp.returncode == 2 and what in cp.stderr, (args, cp.stderr)
        assert "sk-x" not in cp.stderr


# ---- item 2: slow clients ---------------------------------------------------------------------

def trickle(port, request, stop, closed_after):
    """Sends request a byte a second until the server closes the connection (or stop is set);
    closed_after gets the seconds from the connection to the server's close (None: never)."""
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(0.05)
    start = time.monotonic()
    try:
        for b in request:
            if stop.is_set():
                break
            try:
                s.send(bytes([b]))
            except OSError:
                closed_after.append(time.monotonic() - start)
                return
            end = time.monotonic() + 1
            while time.monotonic() < end:
                try:
                    if s.recv(4096) == b"":
                        closed_after.append(time.monotonic() - start)
                        return
                except socket.timeout:
                    continue
                except OSError:
                    closed_after.append(time.monotonic() - start)
                    return
        closed_after.append(None)
    finally:
        s.close()


def test_trickling_clients_do_not_stall_the_server(scry, work, hot):
    s = Served(work, hot["path"])
    stop = threading.Event()
    closed = [[] for _ in range(6)]
    slow = (f"GET /{s.token}/ HTTP/1.1\r\nHost: 127.0.0.1:{s.port}\r\n" + "X-Slow: " + "a" * 60
            + "\r\n\r\n").encode()
    threads = [threading.Thread(target=trickle, args=(s.port, slow, stop, closed[i]))
               for i in range(6)]
    try:
        for t in threads:
            t.start()
        time.sleep(1.5)  # every trickler is connected and has sent a byte or two
        # A legitimate request, timed from its send: answered in under a second.
        c = socket.create_connection(("127.0.0.1", s.port), timeout=10)
        req = f"GET /{s.token}/ HTTP/1.1\r\nHost: 127.0.0.1:{s.port}\r\n\r\n".encode()
        sent = time.monotonic()
        c.sendall(req)
        first = c.recv(64)
        took = time.monotonic() - sent
        c.close()
        assert first.startswith(b"HTTP/1.1 200 "), first
        assert took < 1.0, f"the page took {took:.2f} s while 6 clients trickled"
        # The tricklers are cut by the whole-request deadline (3 s), long before their 100-odd
        # bytes are sent at a byte a second.
        for t in threads:
            t.join(timeout=30)
        for c_after in closed:
            assert c_after and c_after[0] is not None and c_after[0] < 10, closed
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=5)
        rc, err = s.stop()
    assert rc == 0, err


def test_connection_cap(scry, work, hot):
    """Over 32 open connections, a new one is answered 503 and closed; once the idle ones are cut
    by the deadline, the page is served again."""
    s = Served(work, hot["path"])
    idle = []
    try:
        for _ in range(32):
            idle.append(socket.create_connection(("127.0.0.1", s.port)))
        time.sleep(0.5)
        extra = socket.create_connection(("127.0.0.1", s.port), timeout=10)
        extra.sendall(f"GET /{s.token}/ HTTP/1.1\r\nHost: 127.0.0.1:{s.port}\r\n\r\n".encode())
        try:
            got = extra.recv(64)
        except ConnectionResetError:
            got = b""  # closed at once, the request unread: a reset may come before the 503
        assert got == b"" or got.startswith(b"HTTP/1.1 503 "), got
        extra.close()
        # Each idle connection is answered 408 and closed once its 3 s are up.
        for c in idle:
            c.settimeout(15)
            assert c.recv(64).startswith(b"HTTP/1.1 408 ")
        status, _ = s.request(f"/{s.token}/", timeout=10)
        assert status == 200
    finally:
        for c in idle:
            c.close()
        rc, err = s.stop()
    assert rc == 0, err


# ---- a real browser opens the file --------------------------------------------------------------

def test_browser_follows_the_private_file(scry, work, hot, browser, tmp_path):
    """Chromium, given the file scry hands its browser, lands on the served page; the page shows
    the command line's provider and base URL and says where the environment's key goes."""
    node, modules, chromium = browser
    rec = tmp_path / "browser.rec"
    fake = tmp_path / "scry-fake-browser"
    fake.write_text(FAKE_BROWSER.format(rec=rec))
    fake.chmod(0o755)
    base = "http://127.0.0.1:9/v1"
    s = Served(work, hot["path"], ["--provider", "anthropic", "--base-url", base],
               env={"DISPLAY": ":99", "BROWSER": str(fake)})
    browser_pid = None
    try:
        wait_for(rec)
        browser_pid, opened = rec.read_text().split(" ", 1)
        browser_pid = int(browser_pid)
        case = tmp_path / "open.case.json"
        case.write_text(json.dumps({"opener": opened.strip(), "url": s.url,
                                    "provider": "anthropic", "base_url": base}))
        cp = subprocess.run([node, BROWSER_OPEN_TEST, "--node-modules", modules, "--chromium",
                             chromium, case], capture_output=True, text=True, timeout=120)
    finally:
        kill_browser(rec)
        rc, err = s.stop()
    assert rc == 0, err
    assert cp.returncode == 0, cp.stderr
    report = json.loads(cp.stdout.strip().splitlines()[-1])
    failed = [f"{c['name']}: {c['detail']}" for c in report["checks"] if not c["ok"]]
    assert not failed, "\n".join(failed)
    assert len(report["checks"]) == 5, report
