"""scry optimize and the "propose" action of scry view --serve (docs/optimize.md).

Each provider's wire format is stood in for by a loopback server of the test's own that records
what it receives and answers in that format. The profile comes from `scry run` of a fixture
whose hot line is known (tests/targets/opt_hot.py: `total += i * i % 7`), so that the prompt can
be checked for that line's source and its figures from the profile. Keys are unique strings that
are searched for afterwards in everything scry wrote."""

import http.server
import json
import os
import re
import secrets
import signal
import subprocess
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from conftest import SCRY, SUPPORTED, TARGETS, load_profile, run_profiled, run_scry
from test_view_html import browser  # noqa: F401  (the fixture: node, playwright-core, chromium)

HOT_SOURCE = "        total += i * i % 7"
PROPOSED = "        total += (i * i) % 7  # proposed"
REASONS = "Parenthesised arithmetic REASON-7f3a keeps the hot line cheaper."
ANSWER = ("Here is the faster region:\n```python\n" + PROPOSED.strip() + "\n```\n" + REASONS)
# What scry shows as the reasons: the answer's text around the code block.
REASONS_SHOWN = "Here is the faster region:\n\n" + REASONS

BROWSER_TEST = Path(__file__).resolve().parents[1] / "browser" / "propose.test.mjs"


def new_key(prefix="sk-scrytest-"):
    return prefix + secrets.token_hex(16)


# ---- the fake providers ----------------------------------------------------------------------

def answer_doc(provider, text):
    """The provider's success document holding text."""
    if provider in ("openai", "azure"):
        return {"id": "x", "object": "chat.completion",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                             "finish_reason": "stop"}]}
    if provider == "anthropic":
        return {"id": "msg", "type": "message", "role": "assistant",
                "content": [{"type": "text", "text": text}], "stop_reason": "end_turn"}
    if provider == "gemini":
        return {"candidates": [{"content": {"role": "model", "parts": [{"text": text}]},
                                "finishReason": "STOP"}]}
    return {"output": {"message": {"role": "assistant", "content": [{"text": text}]}},
            "stopReason": "end_turn"}


def user_text(provider, body):
    """The user message of a request body in the provider's format."""
    if provider in ("openai", "azure"):
        return next(m["content"] for m in body["messages"] if m["role"] == "user")
    if provider == "anthropic":
        return body["messages"][0]["content"]
    if provider == "gemini":
        return body["contents"][0]["parts"][0]["text"]
    return body["messages"][0]["content"][0]["text"]


class FakeProvider:
    """A loopback HTTP server in a thread: records every request (method, path, headers,
    body) and answers with (status, body bytes) from `reply`."""

    def __init__(self, provider, reply=None):
        self.provider = provider
        self.requests = []
        self.reply = reply or (lambda: (200, json.dumps(answer_doc(provider, ANSWER)).encode()))
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n)
                outer.requests.append({"method": "POST", "path": self.path,
                                       "headers": {k.lower(): v for k, v in self.headers.items()},
                                       "body": body})
                status, data = outer.reply()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                outer.requests.append({"method": "GET", "path": self.path, "headers": {},
                                       "body": b""})
                self.send_error(405)

            def log_message(self, *a):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


# Per provider: the options, the environment holding the key, the path the request must go to
# and the header that must carry the key.
def provider_case(provider, base, key):
    if provider == "openai":
        return (["--base-url", base + "/v1", "--model", "gpt-test"], {"OPENAI_API_KEY": key},
                "/v1/chat/completions", ("authorization", "Bearer " + key))
    if provider == "anthropic":
        return (["--base-url", base, "--model", "claude-test"], {"ANTHROPIC_API_KEY": key},
                "/v1/messages", ("x-api-key", key))
    if provider == "azure":
        return (["--base-url", base, "--deployment", "dep-1", "--api-version", "2024-10-21"],
                {"AZURE_OPENAI_API_KEY": key},
                "/openai/deployments/dep-1/chat/completions?api-version=2024-10-21",
                ("api-key", key))
    if provider == "gemini":
        return (["--base-url", base, "--model", "gemini-test"], {"GEMINI_API_KEY": key},
                "/v1beta/models/gemini-test:generateContent", ("x-goog-api-key", key))
    return (["--base-url", base, "--region", "us-west-2", "--model", "anthropic.test-v1:0"],
            {"AWS_ACCESS_KEY_ID": "AKIDSCRYTEST", "AWS_SECRET_ACCESS_KEY": key,
             "AWS_SESSION_TOKEN": "session-" + key[-8:]},
            "/model/anthropic.test-v1:0/converse", None)


PROVIDERS = ["openai", "anthropic", "azure", "gemini", "bedrock"]
KEY_VARS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "AZURE_OPENAI_API_KEY", "AZURE_OPENAI_ENDPOINT",
            "GEMINI_API_KEY", "GOOGLE_API_KEY", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
            "AWS_SESSION_TOKEN", "AWS_REGION", "AWS_DEFAULT_REGION", "http_proxy", "https_proxy",
            "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "all_proxy", "DISPLAY", "WAYLAND_DISPLAY")


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """Where this module's scry runs write: their TMPDIR, profiles and pages (searched for keys
    at the end), and every stdout/stderr they printed."""
    d = tmp_path_factory.mktemp("optimize")
    (d / "tmp").mkdir()
    return {"dir": d, "outputs": [], "keys": []}


def scry_env(work, extra=None):
    env = {k: v for k, v in os.environ.items() if k not in KEY_VARS}
    env.update({"TMPDIR": str(work["dir"] / "tmp"), "SCRY_LOG": "debug"})
    env.update(extra or {})
    return env


def ask(work, args, env=None, **kw):
    cp = run_scry(args, env=scry_env(work, env), **kw)
    work["outputs"] += [cp.stdout, cp.stderr]
    return cp


@pytest.fixture(scope="module")
def hot(work, pythons):
    """The fixture's profile (the first supported interpreter), its file and hot line."""
    python = next((pythons[v] for v in SUPPORTED if pythons.get(v)), None)
    if not python:
        pytest.skip("no supported Python is installed")
    ran = run_profiled(python, "opt_hot.py", outfile=work["dir"] / "hot.json")
    prof = load_profile(ran)
    name = str((TARGETS / "opt_hot.py").resolve())
    lines = prof["files"][name]["lines"]
    # The loop's time is shared between its `for` line and its body in a proportion that load
    # can move: the truth is the two together, and the body is the line the tests ask about.
    share = {e["line"].rstrip("\n"): e["n_cpu_percent_python"] + e["n_cpu_percent_c"]
             + e["n_sys_percent"] for e in lines}
    loop = share.get(HOT_SOURCE, 0) + share.get("    for i in range(n):", 0)
    assert loop > 0.9 * sum(share.values()), (share, "the fixture's loop is not its hot spot")
    top = next(e for e in lines if e["line"].rstrip("\n") == HOT_SOURCE)
    return {"path": ran.profile_path, "file": name, "line": top, "profile": prof}


def figures_row(line):
    """The figures of a line as the prompt's region table writes them."""
    return [f"{line['n_cpu_percent_python']:.1f}", f"{line['n_cpu_percent_c']:.1f}",
            f"{line['n_sys_percent']:.1f}", f"{line['n_malloc_mb']:.1f}"]


def check_prompt(prompt, hot):
    rows = [r for r in prompt.splitlines() if r.endswith(HOT_SOURCE)]
    assert rows, prompt
    row = rows[0]
    cells = [c.strip() for c in row.split("|")]
    assert cells[0] == str(hot["line"]["lineno"]), row
    assert cells[1:5] == figures_row(hot["line"]), (row, hot["line"])
    assert "import math" in prompt and "import os" in prompt, prompt
    assert "Function: work" in prompt, prompt
    # The lines around the region, as context.
    assert "for i in range(n):" in prompt and "return total" in prompt, prompt


def check_key_only_in(req, key, header):
    assert key not in req["path"], req["path"]
    assert key.encode() not in req["body"]
    holders = [k for k, v in req["headers"].items() if key in v]
    assert holders == ([header[0]] if header else []), (holders, header)
    if header:
        assert req["headers"][header[0]] == header[1]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_provider_wire_format(scry, work, hot, provider):
    key = new_key()
    work["keys"].append(key)
    with FakeProvider(provider) as fake:
        opts, env, path, header = provider_case(provider, fake.url, key)
        cp = ask(work, ["optimize", hot["path"], f"opt_hot.py:{hot['line']['lineno']}",
                         "--provider", provider, *opts], env=env)
    assert cp.returncode == 0, cp.stderr
    assert len(fake.requests) == 1, fake.requests
    req = fake.requests[0]
    assert req["method"] == "POST" and req["path"] == path, req["path"]
    assert req["headers"]["content-type"] == "application/json"
    body = json.loads(req["body"])
    check_prompt(user_text(provider, body), hot)
    if provider == "bedrock":
        auth = req["headers"]["authorization"]
        assert re.fullmatch(r"AWS4-HMAC-SHA256 Credential=AKIDSCRYTEST/\d{8}/us-west-2/bedrock/"
                            r"aws4_request, SignedHeaders=[a-z0-9;-]+, Signature=[0-9a-f]{64}",
                            auth), auth
        assert "x-amz-date" in req["headers"], req["headers"]
        assert req["headers"]["x-amz-security-token"] == "session-" + key[-8:]
        check_key_only_in(req, key, None)
    else:
        check_key_only_in(req, key, header)
    if provider == "anthropic":
        assert req["headers"]["anthropic-version"] == "2023-06-01"
    # The terminal shows the answer's code as a diff of the region, and the reasons.
    out = cp.stdout
    assert f"-{HOT_SOURCE}\n" in out and f"+{PROPOSED}\n" in out, out
    assert f"@@ -{hot['line']['lineno']},1 +{hot['line']['lineno']},1 @@" in out, out
    assert REASONS in out, out
    assert key not in out + cp.stderr


def test_json_and_default_region(scry, work, hot):
    """Without lines: the hottest function (work, from its def to its return)."""
    key = new_key()
    work["keys"].append(key)
    with FakeProvider("openai") as fake:
        cp = ask(work, ["optimize", "--json", hot["path"], hot["file"], "--provider", "openai",
                         "--base-url", fake.url + "/v1"], env={"OPENAI_API_KEY": key})
    assert cp.returncode == 0, cp.stderr
    doc = json.loads(cp.stdout)
    src = (TARGETS / "opt_hot.py").read_text().splitlines()
    first = src.index("def work(n):") + 1
    assert (doc["first_line"], doc["last_line"]) == (first, src.index("    return total") + 1)
    assert doc["function"] == "work" and doc["provider"] == "openai"
    assert doc["model"] == "gpt-4o-mini"
    assert doc["reasons"] == REASONS_SHOWN
    # The whole function was the region: the answer replaced it; the code came back unindented
    # and is put back at the region's indentation (the def's, 0 here).
    assert doc["code"] == PROPOSED.strip() + "\n"
    assert "-def work(n):" in doc["diff"] and f"+{PROPOSED.strip()}" in doc["diff"]
    body = json.loads(fake.requests[0]["body"])
    assert body["model"] == "gpt-4o-mini"
    assert f"lines {first}-{doc['last_line']}" in user_text("openai", body)


def test_function_region_and_keyless_local_server(scry, work, hot):
    """--function picks the function's lines; an OpenAI-compatible server of the user's
    (--base-url, no key set: Ollama) gets no Authorization header at all."""
    src = (TARGETS / "opt_hot.py").read_text().splitlines()
    cp = ask(work, ["optimize", "--show-prompt", "--json", hot["path"], "opt_hot.py",
                    "--function", "helper"])
    assert cp.returncode == 0, cp.stderr
    user = json.loads(cp.stdout)["user"]
    first = src.index("def helper(n):") + 1
    assert f"lines {first}-{first + 1}" in user, user
    assert "Function: helper" in user
    with FakeProvider("openai") as fake:
        cp = ask(work, ["optimize", hot["path"], "opt_hot.py", "--function", "work",
                        "--provider", "openai", "--base-url", fake.url + "/v1"])
    assert cp.returncode == 0, cp.stderr
    assert "authorization" not in fake.requests[0]["headers"], fake.requests[0]["headers"]
    assert f"for {hot['file']}:{src.index('def work(n):') + 1}-" in cp.stdout, cp.stdout


def test_errors(scry, work, hot, tmp_path):
    where = f"opt_hot.py:{hot['line']['lineno']}"
    key = new_key()
    work["keys"].append(key)
    with FakeProvider("anthropic") as fake:
        # No key: says which variable; nothing is sent.
        cp = ask(work, ["optimize", hot["path"], where, "--provider", "anthropic",
                         "--base-url", fake.url])
        assert cp.returncode == 1 and "[no_api_key]" in cp.stderr, cp.stderr
        assert "ANTHROPIC_API_KEY" in cp.stderr
        cp = ask(work, ["optimize", hot["path"], where, "--provider", "gemini",
                         "--base-url", fake.url, "--api-key-env", "MY_GEMINI"])
        assert cp.returncode == 1 and "MY_GEMINI" in cp.stderr, cp.stderr
        assert fake.requests == []
    # The key on the command line is refused and not repeated.
    cp = ask(work, ["optimize", hot["path"], where, "--provider", "openai", "--api-key", key])
    assert cp.returncode == 2 and "[usage]" in cp.stderr and key not in cp.stderr, cp.stderr
    # The server is down.
    with FakeProvider("openai") as fake:
        down = fake.url
    cp = ask(work, ["optimize", hot["path"], where, "--provider", "openai", "--base-url", down,
                     "--timeout", "5"], env={"OPENAI_API_KEY": key})
    assert cp.returncode == 1 and "[provider_unreachable]" in cp.stderr, cp.stderr
    # HTTP 401 with the provider's error body, which repeats the key: shown without it.
    err = {"type": "error", "error": {"type": "authentication_error",
                                      "message": f"invalid x-api-key {key}"}}
    with FakeProvider("anthropic", lambda: (401, json.dumps(err).encode())) as fake:
        cp = ask(work, ["optimize", "--json", hot["path"], where, "--provider", "anthropic",
                         "--base-url", fake.url], env={"ANTHROPIC_API_KEY": key})
    assert cp.returncode == 1, cp.stderr
    doc = json.loads(cp.stdout)
    assert doc["error"]["code"] == "provider_error", doc
    assert "HTTP 401" in doc["error"]["message"] and "invalid x-api-key [key]" in doc["error"]["message"]
    assert key not in cp.stdout + cp.stderr
    # Garbage, and an answer without code.
    for reply in (lambda: (200, b"<html>not json"),
                  lambda: (200, json.dumps(answer_doc("gemini", "I would not change it.")).encode())):
        with FakeProvider("gemini", reply) as fake:
            cp = ask(work, ["optimize", hot["path"], where, "--provider", "gemini",
                             "--base-url", fake.url], env={"GOOGLE_API_KEY": key})
        assert cp.returncode == 1 and "[bad_answer]" in cp.stderr, cp.stderr
    # Regions that are not in the profile.
    cp = ask(work, ["optimize", hot["path"], "nosuch.py:3", "--provider", "openai"])
    assert cp.returncode == 2 and "no file 'nosuch.py'" in cp.stderr, cp.stderr
    cp = ask(work, ["optimize", hot["path"], "opt_hot.py:9999", "--provider", "openai"])
    assert cp.returncode == 2 and "past its end" in cp.stderr, cp.stderr
    cp = ask(work, ["optimize", hot["path"], "opt_hot.py", "--function", "nosuch",
                     "--provider", "openai"])
    assert cp.returncode == 2 and "no function 'nosuch'" in cp.stderr, cp.stderr
    cp = ask(work, ["optimize", hot["path"], where, "--provider", "nosuch"])
    assert cp.returncode == 2 and "unknown provider" in cp.stderr, cp.stderr


def test_prompt_has_hot_line_figures(scry, work, python_exe, tmp_path):
    """On every interpreter: the hot loop's body line and its figures are what the prompt holds
    (--show-prompt sends nothing). What the fixture determines is that the loop, its `for` line
    and its body together, holds the time: how the samples split between those two lines is
    not (a loaded machine once made the `for` line the hotter one), so the line asked for is the
    body, found by its source, and the loop is checked as one."""
    ran = run_profiled(python_exe, "opt_hot.py", outfile=tmp_path / "p.json")
    prof = load_profile(ran)
    name = str((TARGETS / "opt_hot.py").resolve())
    lines = prof["files"][name]["lines"]

    def share(e):
        return e["n_cpu_percent_python"] + e["n_cpu_percent_c"] + e["n_sys_percent"]

    body = next(e for e in lines if e["line"].rstrip("\n") == HOT_SOURCE)
    head = next(e for e in lines if e["lineno"] == body["lineno"] - 1)
    assert head["line"].strip() == "for i in range(n):", (head, "the fixture's loop moved")
    loop = share(body) + share(head)
    others = [share(e) for e in lines if e["lineno"] not in (body["lineno"], head["lineno"])]
    assert loop > 0.9 * (loop + sum(others)), (loop, others)
    assert body["n_cpu_percent_python"] + head["n_cpu_percent_python"] > 0, (body, head)
    cp = ask(work, ["optimize", ran.profile_path, f"{name}:{body['lineno']}", "--show-prompt"])
    assert cp.returncode == 0, cp.stderr
    check_prompt(cp.stdout, {"line": body})


# ---- scry view --serve -----------------------------------------------------------------------

class Served:
    """scry view --serve on a free port; its URL read from its first line of output."""

    def __init__(self, work, profile, env=None):
        self.proc = subprocess.Popen([str(SCRY), "view", "--serve", str(profile)],
                                     env=scry_env(work, env), stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self.work = work
        line = self.proc.stdout.readline().strip()
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/[0-9a-f]{64}/", line), line
        self.url = line
        self.origin = line[:line.index("/", 7)]
        self.token = line.rstrip("/").rsplit("/", 1)[1]

    def stop(self):
        self.proc.send_signal(signal.SIGINT)
        out, err = self.proc.communicate(timeout=10)
        self.work["outputs"] += [self.url + out, err]
        return self.proc.returncode, err

    def request(self, path, method="GET", headers=None, data=None):
        req = urllib.request.Request(self.origin + path, method=method, data=data,
                                     headers=headers or {})
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()


def test_serve_security(scry, work, hot):
    s = Served(work, hot["path"])
    try:
        t = s.token
        status, page = s.request(f"/{t}/")
        assert status == 200 and b"connect-src 'self'" in page and b'"serve":true' in page
        assert s.request("/")[0] == 403
        assert s.request(f"/{t[:-1]}0/")[0] == 403 or t.endswith("0")
        assert s.request("/" + "a" * 64 + "/")[0] == 403
        assert s.request(f"/{t}/propose")[0] == 405
        assert s.request(f"/{t}/nosuch")[0] == 404
        # DNS rebinding: another Host is refused even with the token.
        assert s.request(f"/{t}/", headers={"Host": "evil.example:80"})[0] == 403
        body = json.dumps({"file": "opt_hot.py", "provider": "openai"}).encode()
        ok_headers = {"Origin": s.origin, "X-Scry-Token": t, "Content-Type": "application/json"}
        for drop in ("Origin", "X-Scry-Token"):
            h = {k: v for k, v in ok_headers.items() if k != drop}
            assert s.request(f"/{t}/propose", "POST", h, body)[0] == 403, drop
        h = dict(ok_headers, Origin="http://evil.example")
        assert s.request(f"/{t}/propose", "POST", h, body)[0] == 403
        # A proposal without a key in the page or the environment: the error, as JSON.
        status, data = s.request(f"/{t}/propose", "POST", ok_headers,
                                 json.dumps({"file": "opt_hot.py", "provider": "anthropic"}).encode())
        assert status == 400 and json.loads(data)["error"]["code"] == "no_api_key", data
    finally:
        rc, err = s.stop()
    assert rc == 0, err


def test_static_page_makes_no_request(scry, work, hot):
    page = work["dir"] / "static.html"
    cp = ask(work, ["view", "--html", "-o", page, hot["path"]])
    assert cp.returncode == 0, cp.stderr
    html = page.read_text()
    assert "connect-src" not in html and '"serve"' not in html and '"token"' not in html
    assert "default-src 'none'" in html


def test_browser_propose(scry, work, hot, browser):
    node, modules, chromium = browser
    key = new_key("sk-typed-")
    work["keys"].append(key)
    with FakeProvider("anthropic") as fake:
        s = Served(work, hot["path"])
        try:
            case = work["dir"] / "propose.case.json"
            case.write_text(json.dumps({
                "url": s.url, "file": hot["file"], "hot": hot["line"]["lineno"],
                "provider": "anthropic", "base_url": fake.url, "key": key,
                "del": "-" + HOT_SOURCE, "add": "+" + PROPOSED, "reasons": REASONS_SHOWN}))
            cp = subprocess.run([node, BROWSER_TEST, "--node-modules", modules, "--chromium",
                                 chromium, case], capture_output=True, text=True, timeout=120)
        finally:
            rc, err = s.stop()
    assert rc == 0, err
    assert cp.returncode == 0, cp.stderr
    report = json.loads(cp.stdout.strip().splitlines()[-1])
    failed = [f"{c['name']}: {c['detail']}" for c in report["checks"] if not c["ok"]]
    assert not failed, "\n".join(failed)
    assert len(report["checks"]) >= 8, report
    # Two proposals (the hot line, then a selected region), both from scry, not from the page.
    assert len(fake.requests) == 2, fake.requests
    hot_line = hot["line"]["lineno"]
    for req, region in zip(fake.requests, ((hot_line, hot_line), (hot_line - 1, hot_line))):
        assert req["path"] == "/v1/messages"
        assert req["headers"]["user-agent"].startswith("scry/"), req["headers"]
        check_key_only_in(req, key, ("x-api-key", key))
        prompt = user_text("anthropic", json.loads(req["body"]))
        check_prompt(prompt, hot)
        assert f"lines {region[0]}-{region[1]}" in prompt
    # The page's requests: only to scry's own server.
    assert report["requests"] and all(r.split(" ", 1)[1].startswith(s.url)
                                      for r in report["requests"]), report["requests"]
    assert key not in err


SECRETS = ("correct-horse-battery-staple", "sk-scryfixture0123456789abcdefghijklmnopqrstuv")


def test_secrets_in_the_source_are_redacted(scry, work, pythons, tmp_path):
    """Issue 26 item 8: DB_PASSWORD = "..." and API_KEY = "sk-..." in the context lines reached
    the provider. The snapshot's redaction rule now applies to everything sent: the request
    holds neither value, <redacted> instead; stderr says before sending which lines and names
    were redacted (never the values); --no-redact sends the source as it is."""
    python = next((pythons[v] for v in SUPPORTED if pythons.get(v)), None)
    if not python:
        pytest.skip("no supported Python is installed")
    ran = run_profiled(python, "opt_secrets.py", outfile=tmp_path / "s.json")
    assert ran.returncode == 0, ran.describe()
    src = (TARGETS / "opt_secrets.py").read_text().splitlines()
    hot = src.index(HOT_SOURCE) + 1
    pw_line = next(i for i, t in enumerate(src, 1) if t.startswith("DB_PASSWORD"))
    key = new_key()
    work["keys"].append(key)
    bodies = {}
    for mode in ("redacted", "as it is"):
        with FakeProvider("openai") as fake:
            cp = ask(work, ["optimize", ran.profile_path, f"opt_secrets.py:{hot - 6}-{hot}",
                            "--provider", "openai", "--base-url", fake.url + "/v1"]
                     + (["--no-redact"] if mode == "as it is" else []),
                     env={"OPENAI_API_KEY": key})
        assert cp.returncode == 0, cp.stderr
        assert len(fake.requests) == 1
        bodies[mode] = fake.requests[0]["body"].decode()
        said = cp.stderr.split("scry: redacted before sending", 1)
        if mode == "redacted":
            # Not in the diff of the region either (it is of the redacted lines).
            for secret in SECRETS:
                assert secret not in cp.stdout + cp.stderr, secret
            assert len(said) == 2, cp.stderr
            assert f"line {pw_line}: the string assigned to DB_PASSWORD" in said[1], cp.stderr
            assert f"line {pw_line + 1}: a string that looks like a secret" in said[1], cp.stderr
        else:
            assert len(said) == 1, cp.stderr
    prompt = user_text("openai", json.loads(bodies["redacted"]))
    for secret in SECRETS:
        assert secret not in bodies["redacted"], secret
        assert secret in bodies["as it is"], secret
    assert 'DB_PASSWORD = \\"<redacted>\\"' in bodies["redacted"], prompt
    assert 'DB_PASSWORD = "<redacted>"' in prompt and 'API_KEY = "<redacted>"' in prompt, prompt
    assert HOT_SOURCE in prompt and "<redacted>" not in bodies["as it is"]
    # --show-prompt shows the same redacted prompt, and says so on stderr.
    cp = ask(work, ["optimize", "--show-prompt", ran.profile_path, f"opt_secrets.py:{hot}"])
    assert cp.returncode == 0 and "scry: redacted before sending" in cp.stderr, cp.stderr
    assert not any(secret in cp.stdout + cp.stderr for secret in SECRETS), cp.stdout


def test_no_key_in_anything_scry_wrote(scry, work, hot):
    """Runs last: every key the tests gave scry, searched for in every file under the module's
    directory (profiles, pages, TMPDIR) and in everything scry printed (SCRY_LOG=debug)."""
    assert work["keys"], "no key was used: run the whole file"
    files = [p for p in work["dir"].rglob("*") if p.is_file() and not p.name.endswith(".case.json")]
    assert any(p.suffix == ".json" for p in files)
    for key in work["keys"]:
        for p in files:
            assert key.encode() not in p.read_bytes(), p
        for out in work["outputs"]:
            assert key not in out
