#!/usr/bin/env python3
"""Two scry binaries' `scry dump` side by side on the same target process, alternated run by run,
so that both see the same heap and (as far as a shared machine allows) the same load.

  bench/heap/dump_ab.py --base /path/to/old/scry [--new build/scry] [--pythons 3.11,3.12,3.13]
                        [--sizes 1M,5M] [--runs 3]

Per Python, size and binary: objects and edges (which must match: the same graph), the walk's
median and best objects/s (walk_ms: the copy while stopped and the walk), the pause, the dump's
wall time and peak RSS, and the target's RSS. Uses dump_bench.py's target and measurement.
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from dump_bench import (DEFAULT_SIZES, REPO, find_pythons, run_measured,  # noqa: E402
                        start_target, stop_target)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--base", required=True, help="the scry binary to compare against")
    ap.add_argument("--new", default=str(REPO / "build" / "scry"))
    ap.add_argument("--pythons", default="3.11,3.12,3.13")
    ap.add_argument("--sizes", default="1M,5M",
                    help="labels of DEFAULT_SIZES, or LABEL=N (heap_bench.py --objects N)")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    bins = {"base": args.base, "new": args.new}
    pythons = find_pythons()
    print("| Python | objects | edges | scry | walk objects/s (median) | best | pause | "
          "dump wall | dump peak RSS | target RSS |")
    print("|---|---|---|---|---|---|---|---|---|---|")
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
                    for _ in range(args.runs):
                        for name, exe in bins.items():
                            wall, rss, out = run_measured(
                                [exe, "dump", "--pid", str(head["pid"]), "-o",
                                 os.path.join(tmp, name + ".heap"), "--json"])
                            runs[name].append((wall, rss, json.loads(out)))
                finally:
                    stop_target(target)
                for name, rs in runs.items():
                    d = rs[-1][2]
                    ops = [r[2]["objects"] / (r[2]["walk_ms"] / 1e3) for r in rs]
                    print(f"| {version} | {d['objects'] / 1e6:.2f}M | {d['edges'] / 1e6:.2f}M "
                          f"| {name} | **{statistics.median(ops) / 1e6:.2f}M** "
                          f"| {max(ops) / 1e6:.2f}M "
                          f"| {statistics.median(r[2]['pause_ms'] for r in rs):.0f} ms "
                          f"| {statistics.median(r[0] for r in rs):.2f} s "
                          f"| {statistics.median(r[1] for r in rs) / 2**20:.0f} MiB "
                          f"| {d['rss_bytes'] / 2**20:.0f} MiB |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
