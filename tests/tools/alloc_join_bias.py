#!/usr/bin/env python3
"""Measures the allocation join on issue 27 item 11's programs (tests/targets/alloc_kept.py):
runs each program N times per interpreter under `scry run --heap-at-exit` (default window unless
--window) and `scry analyze --allocations`, and prints, per run, the bytes joined to the
program's line in its holder against the truth (the bytes the program keeps), and the samples
that did not join it and why (unmatched: no object, by line; the line's samples joined elsewhere;
samples without a stack); then the mean and spread per program and interpreter.

    tests/tools/alloc_join_bias.py [--runs N] [--window B] [--busy K] PYTHON... \
        [-- dict list threads]

--busy K runs K busy loops beside the measurements (the machine loaded, as the issue's was).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRY = ROOT / "build" / "scry"
TARGET = ROOT / "tests" / "targets" / "alloc_kept.py"
HOLDER = {"dict": "['KEEP']", "threads": "['KEEP']", "list": "['LST']"}


def one_run(python, mode, window, tmp):
    heap, prof = Path(tmp) / "k.heap", Path(tmp) / "k.json"
    argv = [str(SCRY), "run", "--no-view", "--python", python, "-o", str(prof),
            "--heap-at-exit", str(heap)]
    if window:
        argv += ["--allocation-sampling-window", str(window)]
    cp = subprocess.run(argv + [str(TARGET), mode], capture_output=True, text=True, timeout=300)
    if cp.returncode != 0:
        raise SystemExit(cp.stderr)
    truth = json.loads(cp.stdout.splitlines()[-1])
    an = subprocess.run([str(SCRY), "analyze", "--allocations", "--top", "10", "--json",
                         str(heap)], capture_output=True, text=True, timeout=300)
    doc = json.loads(an.stdout)
    s = doc["allocation_samples"]
    mine = lambda a: a["file"] == truth["file"] and a["line"] == truth["line"]  # noqa: E731
    holder = [r for r in doc["top_retainers"] if r["path"].endswith(HOLDER[mode])]
    got = sum(a["bytes"] for a in holder[0]["allocations"] if mine(a)) if holder else 0
    other = [(a["file"], a["line"], a["bytes"]) for a in holder[0]["allocations"]
             if not mine(a)] if holder else []
    elsewhere = sum(a["bytes"] for r in doc["top_retainers"] if r not in holder
                    for a in r["allocations"] if mine(a))
    unmatched_mine = sum(a["bytes"] for a in s["unmatched_lines"] if mine(a))
    no_stack = sum(a["bytes"] for a in s["unmatched_lines"] if a["file"] is None)
    return {"mode": mode, "python": python, "truth": truth["bytes"], "got": got,
            "ratio": got / truth["bytes"], "retained": holder[0]["retained"] if holder else 0,
            "samples": s["samples"], "unmatched": s["unmatched"],
            "unmatched_mine": unmatched_mine, "unmatched_no_stack": no_stack,
            "mine_elsewhere": elsewhere,
            "holder_other_lines": other, "left_out": s["left_out_at_dump"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--window", type=int, default=0)
    ap.add_argument("--busy", type=int, default=0)
    ap.add_argument("pythons", nargs="+")
    argv = sys.argv[1:]
    modes = argv[argv.index("--") + 1:] if "--" in argv else ["dict", "list", "threads"]
    args = ap.parse_args(argv[:argv.index("--")] if "--" in argv else argv)
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.busy)]
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for python in args.pythons:
                for mode in modes:
                    rows = []
                    for _ in range(args.runs):
                        rows.append(one_run(python, mode, args.window, tmp))
                        print(json.dumps(rows[-1]), flush=True)
                    r = [x["ratio"] for x in rows]
                    out = sum(abs(x - 1) > 0.10 for x in r)
                    print(f"# {os.path.basename(python)} {mode} busy={args.busy}: n={len(r)} "
                          f"mean {statistics.mean(r) - 1:+.2%} sd {statistics.pstdev(r):.2%} "
                          f"min {min(r) - 1:+.2%} max {max(r) - 1:+.2%} outside 10%: {out}",
                          flush=True)
    finally:
        for p in busy:
            p.kill()
            p.wait()


if __name__ == "__main__":
    main()
