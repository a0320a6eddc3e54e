"""Heap dump and analyze, end to end (run it through bench/heap/dump_bench.sh).

For each installed Python 3.11-3.13 and each heap size, starts tests/targets/heap_bench.py with
about that many objects, runs `scry dump --pid PID -o FILE --json` RUNS times against the same
process (the pause, the walk and its objects/s as scry measures them; the dump's wall time and
the snapshot's size as seen from here), then `scry analyze FILE --json` RUNS times on the last
snapshot (wall time, objects/s, and the peak RSS of that process from wait4's rusage, the same
number /usr/bin/time -v prints as "Maximum resident set size"). Every cell is the median of the
runs. Prints a Markdown table and writes it, with the machine's state, to
bench/heap/results/<date>.md and the raw numbers to <date>.json. Timing lives only here.
"""

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "e2e"))
from pythons import find_pythons  # noqa: E402  (the interpreters the e2e tests use)

TARGET = REPO / "tests" / "targets" / "heap_bench.py"
# heap_bench.py --objects N builds about 1.23 N objects as scry counts them (its records also
# hold interned names, type objects, the modules...): these give about 1M and 5M.
DEFAULT_SIZES = {"1M": 810000, "5M": 4050000}


def loadavg():
    return "%.2f %.2f %.2f" % os.getloadavg()


def start_target(python, n):
    p = subprocess.Popen([python, str(TARGET), "--objects", str(n)], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    if not line:
        p.kill()
        raise RuntimeError(f"{python} {TARGET.name} exited before it was ready")
    return p, json.loads(line)


def stop_target(p):
    try:
        p.stdin.write("stop\n")
        p.stdin.close()
        p.wait(timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        p.kill()
        p.wait()


def run_measured(argv):
    """Runs argv; returns (wall seconds, peak RSS bytes, stdout)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(argv, stdout=out, stderr=err)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if p.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} failed ({p.returncode}): "
                               f"{err.read().decode(errors='replace')[-2000:]}")
        return wall, ru.ru_maxrss * 1024, out.read().decode()


def med(values):
    return statistics.median(values)


def bench_one(scry, version, python, label, n, runs, workdir):
    target, head = start_target(python, n)
    snap = os.path.join(workdir, f"{version}-{label}.heap")
    row = {"python": version, "size": label, "objects_arg": n, "load_start": loadavg(),
           "dumps": [], "analyses": []}
    try:
        for _ in range(runs):
            wall, rss, out = run_measured([scry, "dump", "--pid", str(head["pid"]), "-o", snap,
                                           "--json"])
            d = json.loads(out)
            row["dumps"].append({"wall_s": wall, "peak_rss": rss, "objects": d["objects"],
                                 "edges": d["edges"], "pause_ms": d["pause_ms"],
                                 "walk_ms": d["walk_ms"], "output_bytes": d["output_bytes"],
                                 "target_rss": d["rss_bytes"]})
    finally:
        stop_target(target)
    for _ in range(runs):
        wall, rss, out = run_measured([scry, "analyze", snap, "--json"])
        a = json.loads(out)
        row["analyses"].append({"wall_s": wall, "peak_rss": rss,
                                "objects": a["totals"]["objects"]})
    os.unlink(snap)
    row["load_end"] = loadavg()
    d, a = row["dumps"], row["analyses"]
    objects = d[-1]["objects"]
    row["summary"] = {
        "objects": objects,
        "edges": d[-1]["edges"],
        "target_rss_mib": d[-1]["target_rss"] / 2**20,
        "pause_ms": med([x["pause_ms"] for x in d]),
        "walk_ms": med([x["walk_ms"] for x in d]),
        "walk_ops": med([x["objects"] / (x["walk_ms"] / 1e3) for x in d]),
        "walk_ops_best": max(x["objects"] / (x["walk_ms"] / 1e3) for x in d),
        "dump_wall_s": med([x["wall_s"] for x in d]),
        "dump_rss_mib": med([x["peak_rss"] for x in d]) / 2**20,
        "snapshot_mib": d[-1]["output_bytes"] / 2**20,
        "analyze_wall_s": med([x["wall_s"] for x in a]),
        "analyze_ops": objects / med([x["wall_s"] for x in a]),
        "analyze_rss_mib": med([x["peak_rss"] for x in a]) / 2**20,
        "analyze_bytes_per_object": med([x["peak_rss"] for x in a]) / objects,
    }
    return row


def table(rows):
    lines = [
        "| Python | objects | edges | target RSS | pause | walk | walk objects/s | dump wall "
        "| dump peak RSS | snapshot | analyze wall | analyze objects/s | analyze peak RSS "
        "| B/object |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        s = r["summary"]
        lines.append(
            f"| {r['python']} | {s['objects'] / 1e6:.2f}M | {s['edges'] / 1e6:.2f}M "
            f"| {s['target_rss_mib']:.0f} MiB | {s['pause_ms']:.0f} ms | {s['walk_ms']:.0f} ms "
            f"| **{s['walk_ops'] / 1e6:.2f}M** (best {s['walk_ops_best'] / 1e6:.2f}M) "
            f"| {s['dump_wall_s']:.2f} s | {s['dump_rss_mib']:.0f} MiB "
            f"| {s['snapshot_mib']:.1f} MiB | {s['analyze_wall_s']:.2f} s "
            f"| **{s['analyze_ops'] / 1e6:.2f}M** | {s['analyze_rss_mib']:.0f} MiB "
            f"| **{s['analyze_bytes_per_object']:.0f}** |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scry", default=str(REPO / "build" / "scry"))
    ap.add_argument("--pythons", default="3.11,3.12,3.13")
    ap.add_argument("--sizes", default="1M,5M",
                    help="labels of DEFAULT_SIZES, or LABEL=N (heap_bench.py --objects N)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--out", default=str(REPO / "bench" / "heap" / "results"),
                    help="directory for <date>.md and <date>.json ('-': none)")
    args = ap.parse_args()

    sizes = []
    for s in args.sizes.split(","):
        label, _, n = s.partition("=")
        sizes.append((label, int(n) if n else DEFAULT_SIZES[label]))
    pythons = find_pythons()
    rows, skipped = [], []
    workdir = tempfile.mkdtemp(prefix="scry-dump-bench-")
    scry_rev = subprocess.run(["git", "-C", str(REPO), "describe", "--always", "--dirty"],
                              capture_output=True, text=True).stdout.strip()
    started = loadavg()
    for version in args.pythons.split(","):
        if version not in pythons:
            skipped.append(version)
            print(f"# Python {version}: not installed, skipped", file=sys.stderr)
            continue
        for label, n in sizes:
            print(f"# Python {version}, {label} (--objects {n}), load {loadavg()}",
                  file=sys.stderr)
            rows.append(bench_one(args.scry, version, pythons[version], label, n, args.runs,
                                  workdir))
            print(table(rows[-1:]).splitlines()[-1], file=sys.stderr)
    os.rmdir(workdir)

    date = datetime.date.today().isoformat()
    text = [
        f"# scry dump and analyze, end to end ({date})",
        "",
        f"`bench/heap/dump_bench.sh` ({args.runs} runs per cell, medians), scry {scry_rev}, "
        f"{platform.machine()}, {os.cpu_count()} CPUs, load average {started} at the start, "
        f"{loadavg()} at the end. Skipped (not installed): {', '.join(skipped) or 'none'}.",
        "",
        "pause: how long the target was stopped; walk: from the stop to the end of the walk "
        "(copy of the writable memory included), objects/s = objects / walk; dump wall: the "
        "whole `scry dump` (snapshot built and written); analyze: `scry analyze FILE --json`, "
        "wall time and peak RSS of the process (wait4 rusage), B/object = peak RSS / objects.",
        "",
        table(rows),
        "",
    ]
    print("\n".join(text))
    if args.out != "-":
        os.makedirs(args.out, exist_ok=True)
        md = os.path.join(args.out, f"{date}.md")
        with open(md, "w") as f:
            f.write("\n".join(text))
        with open(os.path.join(args.out, f"{date}.json"), "w") as f:
            json.dump({"date": date, "scry": scry_rev, "runs": args.runs, "rows": rows}, f,
                      indent=1)
        print(f"# wrote {md}", file=sys.stderr)


if __name__ == "__main__":
    main()
