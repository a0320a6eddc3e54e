"""`scry view --format pprof|trace|firefox` on a real profile.

pprof is read by `go tool pprof` (skipped, saying so, when Go is not installed): its top
functions and totals must equal the profile's own function entries (what `scry view` shows), for
a profile with call stacks and for the same profile without them. The trace and the Firefox
profile are checked against the formats' rules (no validator of either runs offline here: see
docs/export-formats.md) and against the profile's numbers.
"""

import json
import re
import shutil
import subprocess

import pytest

from conftest import (SCRY, TARGETS, check_profile, load_profile, preferred_python,
                      program_env, run_profiled, run_scry)

NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*$")  # names go tool pprof shows unchanged


@pytest.fixture(scope="module")
def real_profile(tmp_path_factory):
    python = preferred_python()
    d = tmp_path_factory.mktemp("export")
    out = d / "with-stacks.json"
    ran = run_profiled(python, "run_cpu_split.py", args=["python", "sorted", "sleep"],
                       outfile=out, options=["--stacks"])
    assert ran.returncode == 0, ran.describe()
    profile = load_profile(ran)
    assert profile["stacks"], "scry run --stacks wrote no stacks"
    flat = dict(profile)
    flat["stacks"] = []
    flat_path = d / "no-stacks.json"
    flat_path.write_text(json.dumps(flat))
    return {"stacks": (out, profile), "lines": (flat_path, flat)}


def functions(profile):
    """qualname -> (samples, python s, native s, system s), summed over files."""
    total = profile["sampled_time_sec"]
    got = {}
    for detail in profile["files"].values():
        for f in detail["functions"]:
            s, py, nat, sy = got.get(f["line"], (0, 0.0, 0.0, 0.0))
            got[f["line"]] = (s + f["n_samples"], py + f["n_cpu_percent_python"] * total / 100,
                              nat + f["n_cpu_percent_c"] * total / 100,
                              sy + f["n_sys_percent"] * total / 100)
    return got


UNITS = {"": 1, "B": 1, "ns": 1e-9}


def pprof_top(path, index):
    """`go tool pprof -top` of one sample type: (total, {function: flat}, text); times in
    seconds (printed in ns, so nothing is rounded away), bytes in bytes. path may be a list of
    profiles: pprof merges them."""
    go = shutil.which("go")
    if not go:
        pytest.skip("Go is not installed: go tool pprof cannot read the export")
    unit = {"samples": [], "alloc_space": ["-unit=B"], "inuse_space": ["-unit=B"]}.get(
        index, ["-unit=ns"])
    cp = subprocess.run([go, "tool", "pprof", "-top", "-nodecount=10000", "-nodefraction=0", "-edgefraction=0", *unit,
                         f"-sample_index={index}",
                         *[str(p) for p in (path if isinstance(path, list) else [path])]],
                        capture_output=True, text=True, timeout=300)
    assert cp.returncode == 0, cp.stderr
    m = re.search(r"of ([0-9.]+)(B|ns|) total", cp.stdout)
    assert m, cp.stdout
    rows = {}
    for line in cp.stdout.splitlines():
        r = re.match(r"^\s*([0-9.]+)(B|ns|)\s+[0-9.]+%\s+[0-9.]+%\s+[0-9.]+(?:B|ns|)"
                     r"\s+[0-9.]+%\s+(.*)$", line)
        if r:
            rows[r.group(3)] = rows.get(r.group(3), 0) + float(r.group(1)) * UNITS[r.group(2)]
    return float(m.group(1)) * UNITS[m.group(2)], rows, cp.stdout


@pytest.mark.parametrize("variant", ["stacks", "lines"])
def test_pprof_matches_view(scry, real_profile, tmp_path, variant):
    src, profile = real_profile[variant]
    out = tmp_path / "p.pb.gz"
    cp = run_scry(["view", "--format", "pprof", "-o", out, src])
    assert cp.returncode == 0, cp.stderr
    assert out.read_bytes()[:2] == b"\x1f\x8b", "not gzipped"
    want = functions(profile)
    total, rows, text = pprof_top(out, "samples")
    assert total == sum(v[0] for v in want.values()), text
    for name, v in want.items():
        if NAME.match(name) and v[0]:
            assert rows.get(name) == v[0], f"{name}: {rows.get(name)} != {v[0]}\n{text}"
    # The measured functions are there and on top.
    top = max(rows, key=rows.get)
    assert top in ("python_section", "sorted_section", "sleep_section"), text
    for index, k in (("wall", None), ("python", 1), ("native", 2), ("system", 3)):
        total, rows, text = pprof_top(out, index)
        exp = sum(v[1] + v[2] + v[3] for v in want.values()) if k is None else \
            sum(v[k] for v in want.values())
        # To the nanosecond the values were written in (one per sample or line).
        assert abs(total - exp) <= 1e-6 + 1e-9 * exp, f"{index}: {total} != {exp}\n{text}"
        for name, v in want.items():
            e = v[1] + v[2] + v[3] if k is None else v[k]
            if NAME.match(name) and e > 0:
                assert abs(rows.get(name, 0) - e) <= 1e-6 + 1e-9 * e, \
                    f"{index} {name}: {rows.get(name)} != {e}\n{text}"
    assert profile["memory"], "the profile was recorded with memory on"
    lines = [l for d in profile["files"].values() for l in d["lines"]]
    for index, key in (("alloc_space", "n_malloc_mb"), ("inuse_space", "n_growth_mb")):
        total, rows, text = pprof_top(out, index)
        exp = sum(l[key] for l in lines) * 1048576
        assert abs(total - exp) <= len(lines), f"{index}: {total} != {exp}\n{text}"


def check_trace(doc):
    """The Trace Event Format's rules for the phases scry writes."""
    assert isinstance(doc, dict) and isinstance(doc["traceEvents"], list)
    assert doc.get("displayTimeUnit", "ms") in ("ms", "ns")
    for e in doc["traceEvents"]:
        assert e["ph"] in ("M", "X", "C", "i", "B", "E"), e
        assert isinstance(e["name"], str) and isinstance(e["pid"], int), e
        assert isinstance(e.get("tid", 0), int), e
        if e["ph"] == "M":
            assert e["name"] in ("process_name", "thread_name", "process_sort_index",
                                 "thread_sort_index", "process_labels"), e
            assert isinstance(e["args"]["name"], str), e
            continue
        assert isinstance(e["ts"], (int, float)) and e["ts"] >= 0, e
        if e["ph"] == "X":
            assert isinstance(e["dur"], (int, float)) and e["dur"] >= 0, e
        if e["ph"] == "C":
            assert e["args"] and all(isinstance(v, (int, float)) for v in e["args"].values()), e


def test_trace(scry, real_profile, tmp_path):
    src, profile = real_profile["stacks"]
    out = tmp_path / "t.json"
    assert run_scry(["view", "--format", "trace", "-o", out, src]).returncode == 0
    doc = json.loads(out.read_text())
    check_trace(doc)
    ev = doc["traceEvents"]
    run = [e for e in ev if e["ph"] == "X"]
    assert len(run) == 1 and abs(run[0]["dur"] - profile["elapsed_time_sec"] * 1e6) < 1
    want = functions(profile)
    top = run[0]["args"]["top_functions_sec"]
    assert top, run[0]
    for key, sec in top.items():
        name = key.split(" (")[0]
        assert abs(sec - sum(want[name][1:])) < 1e-6 * max(1, sec), key
    counters = [(e["ts"], e["args"]["MB"]) for e in ev if e["ph"] == "C"]
    assert counters == [(t / 1000, mb) for t, mb in profile["samples"]]
    assert counters, "a memory profile has a footprint timeline"
    instants = sorted((e["name"], e["ts"], e["args"]["footprint_mb"]) for e in ev
                      if e["ph"] == "i")
    want_i = sorted((f"memory sample {path}:{l['lineno']}", t / 1000, mb)
                    for path, detail in profile["files"].items() for l in detail["lines"]
                    for t, mb in l["memory_samples"])
    assert instants == want_i and instants


def check_firefox(doc):
    """The processed format's invariants: column lengths, indices inside their tables."""
    meta = doc["meta"]
    assert isinstance(meta["version"], int) and isinstance(meta["preprocessedProfileVersion"], int)
    assert isinstance(meta["interval"], (int, float)) and meta["interval"] > 0
    cats = meta["categories"]
    assert all(isinstance(c["name"], str) and c["subcategories"] for c in cats)
    strings = doc["shared"]["stringArray"]
    for th in doc["threads"]:
        for table in ("samples", "stackTable", "frameTable", "funcTable", "resourceTable",
                      "nativeSymbols", "markers"):
            t = th[table]
            n = t["length"]
            for col, v in t.items():
                if isinstance(v, list):
                    assert len(v) == n, f"{table}.{col}: {len(v)} != {n}"
        st, fr, fu, rs = th["stackTable"], th["frameTable"], th["funcTable"], th["resourceTable"]
        for i in range(st["length"]):
            p = st["prefix"][i]
            assert p is None or 0 <= p < i, "a prefix precedes its stack"
            assert 0 <= st["frame"][i] < fr["length"] and 0 <= st["category"][i] < len(cats)
        for i in range(fr["length"]):
            assert 0 <= fr["func"][i] < fu["length"] and 0 <= fr["category"][i] < len(cats)
        for i in range(fu["length"]):
            assert 0 <= fu["name"][i] < len(strings) and 0 <= fu["fileName"][i] < len(strings)
            assert 0 <= fu["resource"][i] < rs["length"]
        s = th["samples"]
        assert all(0 <= x < st["length"] for x in s["stack"])
        assert s["weightType"] in ("samples", "tracing-ms", "bytes")
        assert all(w > 0 for w in s["weight"])


@pytest.mark.parametrize("variant", ["stacks", "lines"])
def test_firefox(scry, real_profile, tmp_path, variant):
    src, profile = real_profile[variant]
    out = tmp_path / "f.json"
    assert run_scry(["view", "--format", "firefox", "-o", out, src]).returncode == 0
    doc = json.loads(out.read_text())
    check_firefox(doc)
    cpu = doc["threads"][0]
    cats = [c["name"] for c in doc["meta"]["categories"]]
    st, s = cpu["stackTable"], cpu["samples"]
    by_cat = {}
    for stack, w in zip(s["stack"], s["weight"]):
        c = cats[st["category"][stack]]
        by_cat[c] = by_cat.get(c, 0) + w
    want = functions(profile)
    for cat, k in (("Python", 1), ("Native", 2), ("System", 3)):
        exp = sum(v[k] for v in want.values()) * 1000
        assert abs(by_cat.get(cat, 0) - exp) <= 1 + 0.001 * exp, (cat, by_cat, exp)
    # Self time per function, as the profiler's call tree adds it up.
    strings = doc["shared"]["stringArray"]
    fr, fu = cpu["frameTable"], cpu["funcTable"]
    self_ms = {}
    for stack, w in zip(s["stack"], s["weight"]):
        name = strings[fu["name"][fr["func"][st["frame"][stack]]]]
        self_ms[name] = self_ms.get(name, 0) + w
    for name, v in want.items():
        exp = (v[1] + v[2] + v[3]) * 1000
        if exp > 1:
            assert abs(self_ms.get(name, 0) - exp) <= 1 + 0.001 * exp, (name, self_ms, exp)


def test_export_errors(scry, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"files": 3}')
    for fmt in ("pprof", "trace", "firefox"):
        cp = run_scry(["view", "--format", fmt, "-o", tmp_path / "o", bad])
        assert cp.returncode == 1 and "files" in cp.stderr, cp.stderr
        assert not (tmp_path / "o").exists()
    cp = run_scry(["view", "--format", "nope", "-o", tmp_path / "o", bad])
    assert cp.returncode == 2 and "pprof" in cp.stderr, cp.stderr


# ---- the sample stream (scry run --timeline): per-thread timelines ----

SLACK_S = 0.005  # clock reads: the target's time.time() against the agent's monotonic clock


def timeline_run(python, tmp_path, env=None, busy="0.4", options=()):
    """trace_threads.py under scry run --timeline: (profile, {name: (tid, t0, t1)}) with the
    windows in seconds since the program's start."""
    out = tmp_path / "timeline.json"
    argv = [SCRY, "run", "--no-view", "--timeline", *options, "--python", python, "-o", out,
            TARGETS / "trace_threads.py", busy]
    cp = subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=120,
                        env={**program_env(), **(env or {})})
    assert cp.returncode == 0, cp.stderr
    profile = json.loads(out.read_text())
    check_profile(profile)
    start = profile["start_time_absolute"]
    windows = {}
    for line in cp.stdout.splitlines():
        _, name, tid, t0, t1 = line.split()
        windows[name] = (int(tid), float(t0) - start, float(t1) - start)
    assert set(windows) == {"A", "B"}, cp.stdout
    return out, profile, windows


def line_samples(profile):
    return sum(l["n_samples"] for d in profile["files"].values() for l in d["lines"])


def test_timeline_stream_and_exports(scry, python_exe, tmp_path):
    src, profile, windows = timeline_run(python_exe, tmp_path)
    ss = profile["sample_stream"]
    threads = ss["threads"]
    assert all(t["stride"] == 1 and t["pid"] == threads[0]["pid"] for t in threads), threads
    # Every sample charged to a line is in the stream, once (no decimation here).
    assert len(ss["samples"]) == line_samples(profile) > 0
    times = [s[0] for s in ss["samples"]]
    assert times == sorted(times) and times[-1] <= profile["elapsed_time_sec"] * 1e6 + 1e4
    tids = {t["tid"]: i for i, t in enumerate(threads)}
    assert windows["A"][0] in tids and windows["B"][0] in tids, (threads, windows)

    # Trace Event: slices of f on A's thread inside A's busy window, of g on B's inside B's.
    out = tmp_path / "t.json"
    assert run_scry(["view", "--format", "trace", "-o", out, src]).returncode == 0
    doc = json.loads(out.read_text())
    check_trace(doc)
    ev = doc["traceEvents"]
    pid = threads[0]["pid"]
    names = {e["tid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["pid"] == pid
             and e["name"] == "thread_name"}
    assert set(names) == set(tids), names
    slices = [e for e in ev if e["ph"] == "X" and e["pid"] == pid]
    assert sum(e["args"]["samples"] for e in slices) == len(ss["samples"])
    for fn, mine, other in (("f", "A", "B"), ("g", "B", "A")):
        tid, t0, t1 = windows[mine]
        got = [e for e in slices if e["name"] == fn and e["tid"] == tid]
        assert not [e for e in slices if e["name"] == fn and e["tid"] == windows[other][0]]
        assert sum(e["args"]["samples"] for e in got) >= 5, (fn, got)
        ends = [(e["ts"] + e["dur"]) / 1e6 for e in got]
        # A sample is taken while its function runs: each slice ends inside the window, and
        # together they span it.
        assert all(t0 - SLACK_S <= x <= t1 + SLACK_S for x in ends), (fn, t0, t1, ends)
        assert min(ends) <= t0 + 0.15 and max(ends) >= t1 - 0.15, (fn, t0, t1, ends)
        assert all(e["cat"] in ("python", "native", "system") for e in got)

    # Firefox: one thread per real thread, samples at increasing real times over the window.
    out = tmp_path / "f.json"
    assert run_scry(["view", "--format", "firefox", "-o", out, src]).returncode == 0
    ff = json.loads(out.read_text())
    check_firefox(ff)
    real = {th["tid"]: th for th in ff["threads"] if th["pid"] == str(pid)}
    assert set(real) == set(tids), list(real)
    strings = ff["shared"]["stringArray"]
    for fn, mine in (("f", "A"), ("g", "B")):
        tid, t0, t1 = windows[mine]
        th = real[tid]
        s, st, fr, fu = th["samples"], th["stackTable"], th["frameTable"], th["funcTable"]
        assert s["time"] == sorted(s["time"])
        want_ms = sum(x[3] for x in ss["samples"] if x[1] == tids[tid]) / 1e3
        assert abs(sum(s["weight"]) - want_ms) <= 1e-6 * want_ms + 1e-3
        at = [t / 1e3 for t, stack in zip(s["time"], s["stack"])
              if strings[fu["name"][fr["func"][st["frame"][stack]]]] == fn]
        assert at and all(t0 - SLACK_S <= t <= t1 + SLACK_S for t in at), (fn, t0, t1, at)
        assert min(at) <= t0 + 0.15 and max(at) >= t1 - 0.15, (fn, t0, t1, at)


def test_timeline_with_stacks(scry, tmp_path):
    """With --stacks every stream sample has its call stack: per stack, the stream's samples are
    the stack's count in the profile, and f's samples on A's thread are under a()."""
    src, profile, windows = timeline_run(preferred_python(), tmp_path, options=["--stacks"])
    ss = profile["sample_stream"]
    counts = {}
    for x in ss["samples"]:
        key = tuple(f"{f[0]} {f[1]}:{f[3]};" for f in ss["stacks"][x[4]])
        counts[key] = counts.get(key, 0) + 1
    want = {tuple(frames): c["count"] for frames, c in profile["stacks"] if c["count"]}
    assert counts == want
    tid = {t["tid"]: i for i, t in enumerate(ss["threads"])}[windows["A"][0]]
    callers = {tuple(f[1] for f in ss["stacks"][x[4]]) for x in ss["samples"]
               if x[1] == tid and ss["stacks"][x[4]][-1][1] == "f"}
    assert callers and all(c[-2:] == ("a", "f") for c in callers), callers


def test_speedscope_a_profile_per_thread_in_time_order(scry, python_exe, tmp_path):
    """With --timeline, speedscope gets one profile per thread (they were merged into one): each
    holds its thread's stream samples, in the stream's (time) order, with their call stacks
    and weights; f only on A's thread and g only on B's. Without a stream, one merged profile
    (test_flamegraph.py)."""
    src, profile, windows = timeline_run(python_exe, tmp_path, options=["--stacks"])
    ss = profile["sample_stream"]
    out = tmp_path / "s.speedscope.json"
    cp = run_scry(["view", "--format", "speedscope", "-o", out, src])
    assert cp.returncode == 0, cp.stderr
    doc = json.loads(out.read_text())
    assert doc["$schema"] == "https://www.speedscope.app/file-format-schema.json"
    frames = doc["shared"]["frames"]
    profiles = doc["profiles"]
    assert len(profiles) == len(ss["threads"]) >= 2, [p["name"] for p in profiles]
    for i, (th, prof) in enumerate(zip(ss["threads"], profiles)):
        assert f"({th['tid']})" in prof["name"] or f"Thread {th['tid']}" == prof["name"], prof
        assert prof["type"] == "sampled" and prof["unit"] == "microseconds", prof["name"]
        mine = [x for x in ss["samples"] if x[1] == i]
        want = [[(f[1], f[0], f[3]) for f in ss["stacks"][x[4]]] for x in mine]
        got = [[(frames[k]["name"], frames[k]["file"], frames[k].get("line", 0)) for k in s]
               for s in prof["samples"]]
        assert got == want, prof["name"]
        assert prof["weights"] == pytest.approx([x[3] for x in mine])
        assert prof["endValue"] == pytest.approx(sum(x[3] for x in mine))
    by_tid = {th["tid"]: prof for th, prof in zip(ss["threads"], profiles)}
    for fn, mine, other in (("f", "A", "B"), ("g", "B", "A")):
        leaves = lambda prof: [frames[s[-1]]["name"] for s in prof["samples"]]  # noqa: E731
        assert leaves(by_tid[windows[mine][0]]).count(fn) >= 5, fn
        assert fn not in leaves(by_tid[windows[other][0]]), fn
    busiest = max(range(len(profiles)), key=lambda k: profiles[k]["endValue"])
    assert doc["activeProfileIndex"] == busiest


def test_timeline_bound(scry, tmp_path):
    """SCRY_TIMELINE_MAX: the stream keeps every stride-th sample, stride the smallest power of
    two that fits, and still spans the run."""
    src, profile, windows = timeline_run(preferred_python(), tmp_path,
                                         env={"SCRY_TIMELINE_MAX": "16"})
    ss = profile["sample_stream"]
    stride = ss["threads"][0]["stride"]
    seen = line_samples(profile)
    assert seen > 32, seen
    assert stride & (stride - 1) == 0 and stride > 1
    assert len(ss["samples"]) == -(-seen // stride) <= 16, (len(ss["samples"]), seen, stride)
    assert -(-seen // (stride // 2)) > 16, "the stride doubles only when the stream is full"
    times = [s[0] / 1e6 for s in ss["samples"]]
    assert times[0] <= windows["A"][1] + 0.2 and times[-1] >= windows["B"][2] - 0.2, times


def test_record_timeline(scry, python_exe, tmp_path):
    """scry record --timeline: the same stream from outside the process, its samples at the
    times the threads were read, on the threads' real ids with their threading names."""
    proc = subprocess.Popen([python_exe, str(TARGETS / "trace_threads.py"), "0.4", "0.6"],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        out = tmp_path / "rec.json"
        cp = subprocess.run([str(SCRY), "record", "--pid", str(proc.pid), "--timeline", "-o",
                             str(out)], capture_output=True, text=True, timeout=60)
        rest = proc.stdout.read()
    finally:
        proc.kill()
        proc.wait()
    if cp.returncode != 0 and "permission" in cp.stderr:
        pytest.skip("scry record cannot read the process here: " + cp.stderr.strip())
    assert cp.returncode == 0, cp.stderr
    profile = json.loads(out.read_text())
    check_profile(profile)
    start = profile["start_time_absolute"]
    windows = {}
    for line in rest.splitlines():
        _, name, tid, t0, t1 = line.split()
        windows[name] = (int(tid), float(t0) - start, float(t1) - start)
    ss = profile["sample_stream"]
    assert len(ss["samples"]) == line_samples(profile) > 0
    names = {t["tid"]: t["name"] for t in ss["threads"]}
    assert names.get(windows["A"][0]) == "worker-a" and names.get(windows["B"][0]) == "worker-b"
    tidx = {t["tid"]: i for i, t in enumerate(ss["threads"])}
    for fn, mine in (("f", "A"), ("g", "B")):
        tid, t0, t1 = windows[mine]
        at = [s[0] / 1e6 for s in ss["samples"]
              if ss["stacks"][s[4]][-1][1] == fn and s[1] == tidx[tid]]
        # Read while the function ran: within the window, to a sampling interval (10 ms).
        assert len(at) >= 10 and all(t0 - 0.012 <= t <= t1 + 0.012 for t in at), (fn, t0, t1, at)
        assert min(at) <= t0 + 0.1 and max(at) >= t1 - 0.1, (fn, t0, t1, at)
    out_t = tmp_path / "t.json"
    assert run_scry(["view", "--format", "trace", "-o", out_t, out]).returncode == 0
    check_trace(json.loads(out_t.read_text()))


def test_exports_without_stream(scry, real_profile, tmp_path):
    """A profile without a stream (scry run without --timeline, Scalene's) exports as before:
    no real thread ids, every Firefox sample at time 0."""
    src, profile = real_profile["stacks"]
    assert "sample_stream" not in profile
    out = tmp_path / "f.json"
    assert run_scry(["view", "--format", "firefox", "-o", out, src]).returncode == 0
    ff = json.loads(out.read_text())
    assert len(ff["threads"]) == (2 if profile["memory"] else 1)
    assert all(t == 0 for th in ff["threads"] for t in th["samples"]["time"])
    out = tmp_path / "t.json"
    assert run_scry(["view", "--format", "trace", "-o", out, src]).returncode == 0
    doc = json.loads(out.read_text())
    assert {e["pid"] for e in doc["traceEvents"]} == {1}
    assert "--timeline" in doc["otherData"]["note"]
