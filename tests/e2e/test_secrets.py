"""Secrets never leave a process in a heap snapshot (docs/SECURITY.md, "Redaction").

tests/targets/secrets_target.py holds random secrets: an interned dict key "ghp_...", an
instance attribute named "sk_live_...", and values "ghp_<200 chars>", "Authorization: Bearer
...", "https://alice:<password>@host/". After `scry dump` (by pid on every installed Python,
without --capture-contents, with it and a small --max-str, with it and the default one; and
once from a core), no 8 characters
in a row of any secret's sensitive part may appear in the .heap file's bytes, the --graph file,
`analyze` and `query` (text and JSON), or the folded and SVG flame graphs, while ordinary
names (the key "user_id", the attribute "payload") stay readable there.
"""

import json

import pytest

from conftest import SUPPORTED, run_scry

FREE_THREADED = True  # 3.13t: objects found in its mimalloc heaps (heap_mimalloc.c)

SCRIPT = "secrets_target.py"
RUN = 8  # the longest run of a secret allowed anywhere


def ok(args, timeout=120):
    cp = run_scry(args, timeout=timeout)
    assert cp.returncode == 0, f"scry {args} failed (rc {cp.returncode}):\n{cp.stdout}\n{cp.stderr}"
    return cp.stdout


def leaked(blob, secret):
    """The runs of RUN characters of `secret` found in `blob` (bytes)."""
    return sorted({secret[i:i + RUN] for i in range(len(secret) - RUN + 1)
                   if secret[i:i + RUN].encode() in blob})


def outputs(heap, graph, tmp_path):
    """Every output that shows what the snapshot holds, as bytes, by name."""
    out = {"heap file": heap.read_bytes(), "graph file": graph.read_bytes()}
    for fmt in ([], ["--json"]):
        tag = " --json" if fmt else ""
        out["analyze" + tag] = ok(["analyze", heap, "--top", "200"] + fmt).encode()
        for t in ("Holder", "bytearray", "str", "dict"):
            out[f"query --type {t}{tag}"] = ok(["query", heap, "--type", t] + fmt).encode()
    out["folded"] = ok(["flamegraph", heap, "--folded"]).encode()
    svg = tmp_path / "heap.svg"
    ok(["flamegraph", heap, "-o", svg])
    out["svg"] = svg.read_bytes()
    return out


def check(target, heap, graph, tmp_path, capture):
    found = {}
    for name, blob in outputs(heap, graph, tmp_path).items():
        for what, secret in target.ready["secrets"].items():
            runs = leaked(blob, secret)
            if runs:
                found[f"{what} in {name}"] = runs[:3]
    assert not found, f"secrets left the process: {found}"

    # The secrets were where the test looks: redacted labels and contents are there.
    labels = [json.loads(line).get("l") for line in graph.read_text().splitlines()]
    assert labels.count("[<redacted>]") >= 1, "the ghp_ key is not in the graph"
    assert ".<redacted>" in labels or labels.count("[<redacted>]") >= 2, "the attribute is missing"
    contents = [json.loads(line).get("c") for line in graph.read_text().splitlines()]
    if capture:
        assert contents.count("<redacted>") >= 3, "the three secret values were not met"
    else:
        assert not any(contents), "contents stored without --capture-contents"

    # Ordinary names stay readable.
    out = outputs(heap, graph, tmp_path)
    for name in ("heap file", "folded", "svg", "analyze"):
        for word in (b"user_id", b"payload"):
            assert word in out[name], f"{word!r} is no longer readable in {name}"
    assert "['user_id']" in labels
    assert ".payload" in labels or "['payload']" in labels


# Without contents (names only); contents cut small (the start of the long token would survive
# a rule applied after the cut); contents at the default --max-str (128: the Bearer token and
# the URL's password are whole in what is kept).
@pytest.mark.parametrize("extra", [[], ["--capture-contents", "--max-str", "16"],
                                   ["--capture-contents"]],
                         ids=["names", "contents-max16", "contents"])
def test_secrets_by_pid(python_exe, start_target, tmp_path, scry, extra):
    target = start_target(python_exe, SCRIPT)
    heap, graph = tmp_path / "app.heap", tmp_path / "graph.jsonl"
    ok(["dump", "--pid", target.pid, "-o", heap, "--graph", graph] + extra)
    check(target, heap, graph, tmp_path, bool(extra))
    target.stop()


def test_secrets_from_core(pythons, start_target, make_core, tmp_path, scry):
    installed = [v for v in SUPPORTED if v in pythons]
    if not installed:
        pytest.skip("no supported Python is installed")
    python = pythons[installed[-1]]
    target = start_target(python, SCRIPT)
    core = make_core(target.pid)
    heap, graph = tmp_path / "app.heap", tmp_path / "graph.jsonl"
    ok(["dump", "--core", core, "-o", heap, "--graph", graph, "--capture-contents"])
    core.unlink()
    check(target, heap, graph, tmp_path, True)
    target.stop()
