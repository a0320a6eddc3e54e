"""`scry check`: a valid snapshot is described (text and --json); damaged, truncated, foreign,
empty, missing and newer-major files give bad_snapshot / io_error documents, exit 1, never a crash.

Good files come from `write_snapshot` below, a second writer of docs/snapshot-format.md written
from the spec alone (struct + zlib.crc32), so these tests also check that the C reader and the
document agree; and from the committed fuzz seeds, which the C writer produced.
"""

import json
import random
import struct
import zlib
from pathlib import Path

import pytest

from conftest import REPO, run_scry

SEEDS = REPO / "tests" / "fuzz" / "corpus" / "snapshot"


def fourcc(s):
    return struct.unpack("<I", s.encode())[0]


def write_snapshot(path, objects, edges=(), roots=(), locations=(), contents=None, meta=None,
                   extra_chunks=(), major=1, minor=0):
    """objects: [(addr, type_name, size, flags)] (any order); edges: [(from_addr, to_addr, kind,
    label)]; roots: [(addr, label)]; locations: [(addr, file, line)]; contents: {addr: bytes} or
    None (not captured). Returns the bytes written."""
    meta = dict(pid=4242, python_version="3.12.1", rss_bytes=2 << 30,
                dump_time_us=1714564800123000, pause_us=412300, max_str=64,
                tool_version="test_check.py") | (meta or {})
    strings, ids = [b""], {b"": 0}

    def sid(s):
        b = s.encode() if isinstance(s, str) else s
        if b not in ids:
            ids[b] = len(strings)
            strings.append(b)
        return ids[b]

    objs = sorted(objects)
    index = {o[0]: i for i, o in enumerate(objs)}
    objs_chunk = b"".join(struct.pack("<QQII", a, size, sid(t), fl) for a, t, size, fl in objs)
    out_edges = [[] for _ in objs]
    for f, t, kind, label in edges:
        if f in index and t in index:
            out_edges[index[f]].append((index[t], kind, sid(label)))
    first, targets, labels, kinds = [0], [], [], []
    for lst in out_edges:
        for t, k, lab in lst:
            targets.append(t)
            labels.append(lab)
            kinds.append(k)
        first.append(len(targets))
    edge_chunk = (struct.pack("<II", len(objs), len(targets)) +
                  struct.pack(f"<{len(first)}I", *first) +
                  struct.pack(f"<{len(targets)}I", *targets) +
                  struct.pack(f"<{len(labels)}I", *labels) + bytes(kinds))
    root_chunk = b"".join(struct.pack("<II", index[a], sid(lab)) for a, lab in roots)
    loc_chunk = b"".join(struct.pack("<III", index[a], sid(f), line)
                         for a, f, line in sorted(locations, key=lambda x: index[x[0]]))
    cont_chunk = None
    if contents is not None:
        cont_chunk = b"".join(struct.pack("<II", index[a], sid(data))
                              for a, data in sorted(contents.items(), key=lambda x: index[x[0]]))
    meta_chunk = struct.pack(
        "<IIQqQIIIIQQII", meta["pid"], 1 if contents is not None else 0, meta["rss_bytes"],
        meta["dump_time_us"], meta["pause_us"], meta["max_str"] if contents is not None else 0,
        sid(meta["python_version"]), sid(meta["tool_version"]), 0, 0, 0, 0, 0)
    blob, offs = b"", [0]
    for s in strings:
        blob += s + b"\0"
        offs.append(len(blob))
    strs_chunk = struct.pack("<II", len(strings), len(blob)) + \
        struct.pack(f"<{len(offs)}I", *offs) + blob
    chunks = [("META", meta_chunk), ("STRS", strs_chunk), ("OBJS", objs_chunk),
              ("EDGE", edge_chunk), ("ROOT", root_chunk), ("LOCS", loc_chunk)]
    if cont_chunk is not None:
        chunks.append(("CONT", cont_chunk))
    chunks += list(extra_chunks)

    body, directory = bytearray(64), b""
    for name, data in chunks:
        body += bytes(-len(body) % 8)
        directory += struct.pack("<IIQQ", fourcc(name), zlib.crc32(data), len(body), len(data))
        body += data
    body += bytes(-len(body) % 8)
    dir_offset = len(body)
    body += directory
    header = struct.pack("<8sHHIQQII20x", b"SCRYSNAP", major, minor, 0, len(body), dir_offset,
                         len(chunks), zlib.crc32(directory))
    header += struct.pack("<I", zlib.crc32(header))
    body[0:64] = header
    Path(path).write_bytes(bytes(body))
    return bytes(body)


def sample(path, **kw):
    objects = [(0x7f0000001000 + 64 * i, ["builtins.dict", "builtins.list", "app.Session"][i % 3],
                56 + i, 1) for i in range(50)]
    random.Random(7).shuffle(objects)
    edges = [(0x7f0000001000 + 64 * i, 0x7f0000001000 + 64 * ((i * 7) % 50), 3, f"[{i}]")
             for i in range(50)]
    edges.append((0x7f0000001000, 0x10, 0, ".gone"))  # to no object: not stored
    return write_snapshot(path, objects, edges,
                          roots=[(0x7f0000001000, "sys.modules['__main__']")],
                          locations=[(0x7f0000001040, "app.py", 12)], **kw)


def check_ok(path):
    """`scry check` and `scry check --json` both succeed; returns the JSON document."""
    cp = run_scry(["check", path])
    assert cp.returncode == 0, f"{cp.stdout}\n{cp.stderr}"
    assert "a valid scry heap snapshot" in cp.stdout, cp.stdout
    jcp = run_scry(["check", "--json", path])
    assert jcp.returncode == 0, f"{jcp.stdout}\n{jcp.stderr}"
    doc = json.loads(jcp.stdout)
    assert doc["valid"] is True and doc["file"] == str(path)
    return doc


def check_error(args, code, status=1, message_has=None):
    """Text: exit `status`, `scry: error: ... [code]` and `hint:` on stderr, nothing on stdout.
    --json: the same status and exactly {"error": {code, message, hint}}. Returns the error."""
    cp = run_scry(["check"] + [str(a) for a in args])
    assert cp.returncode == status, f"{cp.returncode}\n{cp.stdout}\n{cp.stderr}"
    assert cp.stdout == ""
    errors = [ln for ln in cp.stderr.splitlines() if ln.startswith("scry: error: ")]
    assert len(errors) == 1 and f"[{code}]" in errors[0], cp.stderr
    assert any(ln.startswith("hint: ") for ln in cp.stderr.splitlines()), cp.stderr
    jcp = run_scry(["check", "--json"] + [str(a) for a in args])
    assert jcp.returncode == status, f"{jcp.returncode}\n{jcp.stdout}\n{jcp.stderr}"
    doc = json.loads(jcp.stdout)
    assert set(doc) == {"error"} and doc["error"]["code"] == code, doc
    assert doc["error"]["message"].strip() and doc["error"]["hint"].strip(), doc
    if message_has:
        assert message_has in doc["error"]["message"], doc
        assert message_has in errors[0], errors[0]
    return doc["error"]


# ---- valid files ------------------------------------------------------------------------------


def test_check_describes_a_snapshot(scry, tmp_path):
    path = tmp_path / "app.heap"
    data = sample(path, contents={0x7f0000001000: b"hello\0world"})
    doc = check_ok(path)
    assert doc["format_version"] == "1.0"
    assert doc["bytes"] == len(data) == path.stat().st_size
    assert doc["objects"] == 50 and doc["edges"] == 50 and doc["roots"] == 1
    assert doc["locations"] == 1 and doc["contents"] == 1
    assert doc["shallow_bytes"] == sum(56 + i for i in range(50))
    assert doc["pid"] == 4242 and doc["python_version"] == "3.12.1"
    assert doc["rss_bytes"] == 2 << 30
    assert doc["dump_time"] == "2024-05-01T12:00:00.123Z"
    assert doc["dump_unix_time"] == pytest.approx(1714564800.123)
    assert doc["pause_ms"] == pytest.approx(412.3)
    assert doc["capture_contents"] is True and doc["max_str"] == 64
    assert doc["tool_version"] == "test_check.py"
    assert [c["type"] for c in doc["chunks"]] == ["META", "STRS", "OBJS", "EDGE", "ROOT", "LOCS",
                                                 "CONT"]
    for c in doc["chunks"]:
        assert int(c["crc32"], 16) == zlib.crc32(data[c["offset"]:c["offset"] + c["length"]])
    text = run_scry(["check", path]).stdout
    for want in ("format 1.0", "objects     50", "edges       50", "pid         4242",
                 "python      3.12.1", "2.0 GiB", "2024-05-01T12:00:00.123Z", "412.3 ms",
                 "1 captured (at most 64 bytes each)"):
        assert want in text, f"{want!r} not in:\n{text}"


def test_check_reads_unknown_chunks_and_newer_minor(scry, tmp_path):
    path = tmp_path / "future.heap"
    sample(path, extra_chunks=[("XTRA", b"from a later minor version")], minor=3)
    doc = check_ok(path)
    assert doc["format_version"] == "1.3"
    assert doc["chunks"][-1]["type"] == "XTRA" and doc["objects"] == 50


@pytest.mark.parametrize("name", ["small.heap", "tiny-no-contents.heap", "empty.heap",
                                  "small-1.0.heap"])
def test_check_on_the_c_writers_files(scry, name):
    doc = check_ok(SEEDS / name)
    if name == "tiny-no-contents.heap":
        assert (doc["objects"], doc["edges"], doc["roots"], doc["locations"]) == (3, 4, 1, 1)
        assert doc["inferred_edges"] == 1 and doc["format_version"] == "1.1"
        assert "INFR" in [c["type"] for c in doc["chunks"]]
        assert doc["capture_contents"] is False and doc["contents"] == 0
        assert "CONT" not in [c["type"] for c in doc["chunks"]]
    if name == "small-1.0.heap":  # written before inferred edges: still read
        assert doc["format_version"] == "1.0" and doc["inferred_edges"] == 0
    if name == "empty.heap":
        assert doc["objects"] == 0 and doc["dump_time"] is None


# ---- bad files --------------------------------------------------------------------------------


def test_check_damaged_bytes(scry, tmp_path):
    good = sample(tmp_path / "good.heap")
    rng = random.Random(11)
    positions = [0, 8, 16, 40, 63, 64, len(good) // 2, len(good) - 1] + \
        [rng.randrange(len(good)) for _ in range(8)]
    for pos in positions:
        bad = bytearray(good)
        bad[pos] ^= 0x20
        path = tmp_path / f"flip{pos}.heap"
        path.write_bytes(bytes(bad))
        err = check_error([path], "bad_snapshot", message_has="at offset ")
        assert str(path) in err["message"]


def test_check_truncated(scry, tmp_path):
    good = sample(tmp_path / "good.heap")
    for n in (1, 63, 64, 200, len(good) - 1):
        path = tmp_path / f"cut{n}.heap"
        path.write_bytes(good[:n])
        err = check_error([path], "bad_snapshot")
        if n >= 64:
            assert "truncated" in err["message"], err


def test_check_newer_major_version(scry, tmp_path):
    path = tmp_path / "v2.heap"
    sample(path, major=2)
    err = check_error([path], "bad_snapshot", message_has="format version 2.0 is newer")
    assert "upgrade scry" in err["hint"]


def test_check_not_a_snapshot(scry, tmp_path):
    junk = tmp_path / "random.heap"
    junk.write_bytes(random.Random(3).randbytes(4096))
    check_error([junk], "bad_snapshot", message_has="not a scry heap snapshot")
    empty = tmp_path / "empty.heap"
    empty.write_bytes(b"")
    check_error([empty], "bad_snapshot", message_has="empty")
    profile = tmp_path / "scry-profile.json"
    profile.write_text('{"tool": "scry"}\n')
    check_error([profile], "bad_snapshot")


def test_check_io_errors(scry, tmp_path):
    check_error([tmp_path / "missing.heap"], "io_error", message_has="missing.heap")
    check_error([tmp_path], "io_error", message_has="directory")


def test_check_usage(scry):
    check_error([], "usage", status=2)
    check_error(["a.heap", "b.heap"], "usage", status=2)
    check_error(["--frobnicate", "a.heap"], "usage", status=2)
    cp = run_scry(["check", "--help"])
    assert cp.returncode == 0 and "usage: scry check" in cp.stdout
