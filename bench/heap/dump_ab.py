#!/usr/bin/env python3
"""Two scry binaries' `scry dump` side by side on the same target process, alternated run by run,
so that both see the same heap and (as far as a shared machine allows) the same load.

  bench/heap/dump_ab.py --base /path/to/old/scry [--new build/scry] [--pythons 3.11,3.12,3.13]
                        [--sizes 1M,5M] [--runs 3] [--analyze] [--new-first]

Per Python, size and binary: objects and edges (which must match: the same graph), the walk's
median and best objects/s (walk_ms: the copy while stopped and the walk), objects per CPU second
of the walk (walk_cpu_ms: the walking thread's CPU time over walk_ms, when the binary prints it),
the pause, the dump's
wall time, CPU time (user + system, from wait4: what a loaded machine stretches least) and
objects per CPU second, its peak RSS, and the target's RSS; with --analyze, `scry analyze --json`
of each binary's last snapshot by that binary, alternated the same way: CPU time and peak RSS
per object. Uses dump_bench.py's target.
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from dump_bench import (DEFAULT_SIZES, REPO, find_pythons,  # noqa: E402
                        start_target, stop_target)


def run_measured(argv):
    """Runs argv; returns (wall seconds, peak RSS bytes, stdout, CPU seconds)."""
    import subprocess
    import time
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(argv, stdout=out, stderr=err)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        out.seek(0)
        err.seek(0)
        if os.waitstatus_to_exitcode(status) != 0:
            raise RuntimeError(f"{' '.join(argv)} failed: "
                               f"{err.read().decode(errors='replace')[-2000:]}")
        return wall, ru.ru_maxrss * 1024, out.read().decode(), ru.ru_utime + ru.ru_stime


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base", required=True, help="the scry binary to compare against")
    ap.add_argument("--new", default=str(REPO / "build" / "scry"))
    ap.add_argument("--pythons", default="3.11,3.12,3.13")
    ap.add_argument("--sizes", default="1M,5M",
                    help="labels of DEFAULT_SIZES, or LABEL=N (heap_bench.py --objects N)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--analyze", action="store_true", help="also scry analyze, alternated")
    ap.add_argument("--new-first", action="store_true",
                    help="all of the new binary's dumps first, then the base's, instead of "
                         "alternated: a binary that reads a block whole maps the pages of it "
                         "that the target never touched (as the zero page), and a binary that "
                         "leaves untouched pages out of its copy then sees them as touched")
    args = ap.parse_args()
    bins = {"base": args.base, "new": args.new}
    pythons = find_pythons()
    print("| Python | objects | edges | scry | walk objects/s (median) | best "
          "| walk objects per walk CPU s (median) | pause | "
          "dump wall | dump CPU | objects per CPU s | dump peak RSS | target RSS |"
          + (" analyze CPU | analyze peak RSS / object |" if args.analyze else ""))
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|"
          + ("---|---|" if args.analyze else ""))
    with tempfile.TemporaryDirectory(prefix="scry-dump-ab-") as tmp:
        for version in args.pythons.split(","):
            if version not in pythons:
                print(f"# Python {version}: not installed, skipped", file=sys.stderr)
                continue
            for size in args.sizes.split(","):
                label, _, n = size.partition("=")
                target, head = start_target(pythons[version], int(n) if n else DEFAULT_SIZES[label])
                runs = {k: [] for k in bins}
                try:
                    order = ([(name, exe) for name, exe in reversed(bins.items())
                              for _ in range(args.runs)] if args.new_first
                             else [(name, exe) for _ in range(args.runs)
                                   for name, exe in bins.items()])
                    for name, exe in order:
                        wall, rss, out, cpu = run_measured(
                            [exe, "dump", "--pid", str(head["pid"]), "-o",
                             os.path.join(tmp, name + ".heap"), "--json"])
                        runs[name].append((wall, rss, json.loads(out), cpu))
                    ana = {k: [] for k in bins}
                    for _ in range(args.runs if args.analyze else 0):
                        for name, exe in bins.items():
                            _, rss, _, cpu = run_measured(
                                [exe, "analyze", os.path.join(tmp, name + ".heap"), "--json"])
                            ana[name].append((cpu, rss))
                finally:
                    stop_target(target)
                for name, rs in runs.items():
                    d = rs[-1][2]
                    ops = [r[2]["objects"] / (r[2]["walk_ms"] / 1e3) for r in rs]
                    cps = [r[2]["objects"] / (r[2]["walk_cpu_ms"] / 1e3) for r in rs
                           if r[2].get("walk_cpu_ms")]
                    cpu_rate = f"{statistics.median(cps) / 1e6:.2f}M" if cps else "-"
                    print(f"| {version} | {d['objects'] / 1e6:.2f}M | {d['edges'] / 1e6:.2f}M "
                          f"| {name} | **{statistics.median(ops) / 1e6:.2f}M** "
                          f"| {max(ops) / 1e6:.2f}M | {cpu_rate} "
                          f"| {statistics.median(r[2]['pause_ms'] for r in rs):.0f} ms "
                          f"| {statistics.median(r[0] for r in rs):.2f} s "
                          f"| {statistics.median(r[3] for r in rs):.2f} s "
                          f"| {d['objects'] / statistics.median(r[3] for r in rs) / 1e6:.2f}M "
                          f"| {statistics.median(r[1] for r in rs) / 2**20:.0f} MiB "
                          f"| {d['rss_bytes'] / 2**20:.0f} MiB |"
                          + (f" {statistics.median(a[0] for a in ana[name]):.2f} s "
                             f"| {statistics.median(a[1] for a in ana[name]) / d['objects']:.0f}"
                             " B |"
                             if args.analyze else ""), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
