"""Overhead of `scry run` against no profiler, side by side with its peers, on the ten
pyperformance benchmarks of Scalene's paper (workload.py). Two modes:

  cpu   `scry run --cpu-only` with Scalene --cpu-only, py-spy, Austin and pyinstrument
  full  everything on: `scry run` as it runs by default (CPU, memory, copy volume, leak
        detection) with Scalene profiling memory (its default) and memray

Run through bench/overhead/run.sh, which makes the virtual environment; see docs/PERFORMANCE.md
for the method. Options:

    --quick            2 rounds, ~1 s per run (a smoke test of the harness, not a measurement)
    --mode cpu|full|all  which tools (default cpu; all: both sets, one baseline)
    --rounds N         rounds (default 5); every (benchmark, tool) pair runs once per round
    --target S         seconds one baseline run should take (default 2.5); sets the iterations
    --benchmarks a,b   a subset of workload.NAMES
    --tools a,b        tools by name, instead of the mode's (base is always run)
    --scry PATH        the scry binary (default build/scry)
    --no-write         print the table only; do not write results/<date>.md and .json
    --name STEM        write results/STEM.md and .json instead (default: the date, then
                       -full or -all for those modes, then -quick for --quick)

Within a round the benchmarks run one after another and, for each, every tool once, in an order
rotated from round to round, so slow drifts of the machine (other jobs, thermal state) fall on all
tools alike. Each run is a fresh process; two times are taken: the whole process's wall time, and
the time of the benchmark loop alone (workload.py --time-file), which leaves out interpreter and
profiler start-up and the writing of the profile. Ratios are medians over rounds of a tool's time
divided by the median of the baseline's; the summary is the median over benchmarks.
"""
import argparse
import datetime
import json
import math
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
WORKLOAD = os.path.join(HERE, "workload.py")
sys.path.insert(0, HERE)
from workload import NAMES  # noqa: E402

PY = sys.executable
BIN = os.path.dirname(PY)
SLOW = 8  # a run taking longer than SLOW x the baseline's is stopped
MODES = {
    "cpu": ["base", "scry", "scalene", "py-spy", "austin", "pyinstrument"],
    "full": ["base", "scry-full", "scalene-full", "memray"],
}
MODES["all"] = MODES["cpu"] + MODES["full"][1:]
TOOLS = MODES["all"] + ["scry-full-ref"]  # (only with --scry-ref: an A/B of two builds)
LABELS = {
    "base": "no profiler",
    "scry": "scry run --cpu-only --no-view",
    "scalene": "scalene run --cpu-only",
    "py-spy": "py-spy record (100 Hz)",
    "austin": "austin -i 10ms",
    "pyinstrument": "pyinstrument (1 ms)",
    "scry-full": "scry run --no-view (CPU, memory, copy, leaks)",
    "scry-full-ref": "the same, --scry-ref build",
    "scalene-full": "scalene run (CPU, memory, copy, leaks)",
    "memray": "memray run",
}


SCRY_REF = None  # --scry-ref


def command(tool, args, work, scry):
    """argv running workload.py with `args` under `tool`, writing its output into `work`."""
    prog = [WORKLOAD, *args]
    if tool == "base":
        return [PY, *prog]
    if tool == "scry":
        return [scry, "run", "--cpu-only", "--no-view", "--python", PY,
                "-o", os.path.join(work, "scry.json"), WORKLOAD, "---", *args]
    if tool in ("scry-full", "scry-full-ref"):
        # Memory, copy volume and the leak detector are on by default: no option needed.
        if tool == "scry-full-ref":
            scry = SCRY_REF
        return [scry, "run", "--no-view", "--python", PY,
                "-o", os.path.join(work, "scry.json"), WORKLOAD, "---", *args]
    if tool == "scalene":
        return [os.path.join(BIN, "scalene"), "run", "--cpu-only",
                "-o", os.path.join(work, "scalene.json"), WORKLOAD, "---", *args]
    if tool == "scalene-full":
        # Without --cpu-only Scalene profiles memory, copy volume and leaks (its defaults).
        return [os.path.join(BIN, "scalene"), "run",
                "-o", os.path.join(work, "scalene.json"), WORKLOAD, "---", *args]
    if tool == "memray":
        # Its defaults: every allocation through the Python allocators and malloc is recorded
        # (no native stacks, no pymalloc tracing), into a capture file it writes as it goes.
        return [PY, "-m", "memray", "run", "-q", "-o", os.path.join(work, "memray.bin"),
                "--force", *prog]
    if tool == "py-spy":
        return [os.path.join(BIN, "py-spy"), "record", "-o", os.path.join(work, "py-spy.raw"),
                "--format", "raw", "--", PY, *prog]
    if tool == "austin":
        return [os.path.join(BIN, "austin"), "-i", "10ms", "-o", os.path.join(work, "austin.txt"),
                PY, *prog]
    if tool == "pyinstrument":
        return [os.path.join(BIN, "pyinstrument"), "-o", os.path.join(work, "pyinstrument.txt"),
                *prog]
    raise ValueError(tool)


class TimedOut(RuntimeError):
    pass


def run_once(tool, name, iterations, scry, timeout):
    """(wall seconds, loop seconds) of one run; raises TimedOut, or RuntimeError with the reason.
    The run gets its own process group so that a timeout ends the profiler's children too."""
    with tempfile.TemporaryDirectory(prefix=f"overhead-{tool}-") as work:
        tf = os.path.join(work, "loop-time")
        argv = command(tool, [name, str(iterations), "--time-file", tf], work, scry)
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=work, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, start_new_session=True)
        try:
            out, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise TimedOut(f"timed out after {timeout:.0f} s")
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            tail = out.decode(errors="replace").strip().splitlines()[-3:]
            raise RuntimeError(f"exit {proc.returncode}: " + " | ".join(tail))
        try:
            with open(tf) as f:
                loop = float(f.read())
        except (OSError, ValueError):
            raise RuntimeError("the workload wrote no loop time")
        return wall, loop


def available(tool, scry):
    """None when `tool` runs a tiny program here, else why not."""
    if tool == "scry-full-ref":
        scry = SCRY_REF
    if tool.startswith("scry") and not (os.path.isfile(scry) and os.access(scry, os.X_OK)):
        return f"{scry} is not built"
    try:
        # One real iteration: a program that exits at once can end before a sampler attaches.
        run_once(tool, "fannkuch", 1, scry, timeout=120)
    except (RuntimeError, OSError) as e:
        return str(e)[:200]
    return None


def tool_version(tool, scry):
    argv = {"scry": [scry, "version"], "scalene": [os.path.join(BIN, "scalene"), "--version"],
            "scry-full": [scry, "version"], "scry-full-ref": [SCRY_REF, "version"],
            "scalene-full": [os.path.join(BIN, "scalene"), "--version"],
            "memray": [PY, "-m", "memray", "--version"],
            "py-spy": [os.path.join(BIN, "py-spy"), "--version"],
            "austin": [os.path.join(BIN, "austin"), "--version"],
            "pyinstrument": [os.path.join(BIN, "pyinstrument"), "--version"],
            "base": [PY, "--version"]}[tool]
    try:
        cp = subprocess.run(argv, capture_output=True, text=True, timeout=30)
        out = (cp.stdout or cp.stderr).strip().splitlines()
        return out[0][:80] if out else "?"
    except (OSError, subprocess.TimeoutExpired):
        return "?"


def fmt_ratio(x):
    if x is None:
        return "–"
    return f">{SLOW}" if x == math.inf else f"{x:.3f}"


def summarize(results, benches, tools, key, too_slow):
    """{tool: {bench: ratio}} of medians, for key 'wall' or 'loop'; float('inf') when the tool
    was stopped as too slow (it then sorts above every measured ratio in the median)."""
    table = {}
    for tool in tools:
        row = {}
        for b in benches:
            if (b, tool) in too_slow:
                row[b] = math.inf
                continue
            base = [r[key] for r in results[b]["base"] if r is not None]
            mine = [r[key] for r in results[b][tool] if r is not None]
            row[b] = (statistics.median(mine) / statistics.median(base)
                      if base and mine else None)
        table[tool] = row
    return table


def median_of(row):
    vals = [v for v in row.values() if v is not None]
    return statistics.median(vals) if vals else None


def markdown(table, benches, tools, unavailable):
    head = "| tool | " + " | ".join(benches) + " | **median** |"
    lines = [head, "|" + "---|" * (len(benches) + 2)]
    for tool in tools:
        if tool == "base":
            continue
        if tool in unavailable:
            cells = ["n/a"] * len(benches) + ["not measured (below)"]
        else:
            cells = [fmt_ratio(table[tool][b]) for b in benches]
            cells.append(f"**{fmt_ratio(median_of(table[tool]))}**")
        lines.append(f"| {LABELS[tool]} | " + " | ".join(cells) + " |")
    for tool in tools:
        if tool in unavailable:
            lines.append("")
            lines.append(f"Not measured: {LABELS[tool]}: {unavailable[tool]}")
    return "\n".join(lines)


def noise_table(results, benches, iterations):
    lines = ["| benchmark | iterations | base loop median s | base min/median | base max/median |"
             " base wall median s |", "|---|---|---|---|---|---|"]
    for b in benches:
        loops = [r["loop"] for r in results[b]["base"] if r is not None]
        walls = [r["wall"] for r in results[b]["base"] if r is not None]
        if not loops:
            lines.append(f"| {b} | {iterations[b]} | – | – | – | – |")
            continue
        med = statistics.median(loops)
        lines.append(f"| {b} | {iterations[b]} | {med:.3f} | {min(loops) / med:.3f} | "
                     f"{max(loops) / med:.3f} | {statistics.median(walls):.3f} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rounds", type=int)
    ap.add_argument("--target", type=float)
    ap.add_argument("--benchmarks", default=",".join(NAMES))
    ap.add_argument("--mode", choices=sorted(MODES), default="cpu")
    ap.add_argument("--tools", help="comma-separated tool names (default: the mode's)")
    ap.add_argument("--scry", default=os.path.join(REPO, "build", "scry"))
    ap.add_argument("--scry-ref", help="another scry build (its agent beside it), run as the "
                    "tool scry-full-ref in the same rounds: an A/B of two versions")
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--name", help="file name stem under results/ (default: the date)")
    args = ap.parse_args()
    rounds = args.rounds or (2 if args.quick else 5)
    target = args.target or (1.0 if args.quick else 2.5)
    benches = [b for b in args.benchmarks.split(",") if b]
    for b in benches:
        if b not in NAMES:
            sys.exit(f"unknown benchmark {b}; known: {', '.join(NAMES)}")
    wanted = args.tools.split(",") if args.tools else MODES[args.mode]
    tools = ["base"] + [t for t in wanted if t and t != "base"]
    for t in tools:
        if t not in TOOLS:
            sys.exit(f"unknown tool {t}; known: {', '.join(TOOLS)}")
    scry = os.path.abspath(args.scry)
    global SCRY_REF
    if "scry-full-ref" in tools and not args.scry_ref:
        sys.exit("the tool scry-full-ref needs --scry-ref PATH")
    SCRY_REF = os.path.abspath(args.scry_ref) if args.scry_ref else None

    unavailable = {}
    for t in tools[1:]:
        why = available(t, scry)
        if why:
            unavailable[t] = why
            print(f"# {t}: not measured: {why}", flush=True)
    active = [t for t in tools if t not in unavailable]
    versions = {t: tool_version(t, scry) for t in active}

    iterations, expected = {}, {}
    for b in benches:
        wall, loop = run_once("base", b, 1, scry, timeout=600)
        iterations[b] = max(1, round(target / loop))
        expected[b] = wall + loop * (iterations[b] - 1)
        print(f"# {b}: {loop:.2f} s per iteration -> {iterations[b]} iterations", flush=True)

    # A tool slower than SLOW x the baseline is stopped there and not run on that benchmark
    # again: its ratio is reported as ">SLOWx", which is all that matters at that point.
    results = {b: {t: [] for t in tools} for b in benches}
    too_slow = set()
    failures = []
    started = time.time()
    load0 = f"{os.getloadavg()[0]:.2f}"

    def write_report(done, final):
        minutes = (time.time() - started) / 60

        loop_table = summarize(results, benches, active, "loop", too_slow)
        wall_table = summarize(results, benches, active, "wall", too_slow)
        report = []
        report.append(f"Rounds: {done} of {rounds}; target {target} s per baseline run; "
                      f"{minutes:.1f} min; "
                      f"{'QUICK (not a measurement)' if args.quick else 'full'}; "
                      f"load average {load0} at the start, {os.getloadavg()[0]:.2f} now")
        report.append("")
        report.append("Slowdown, benchmark loop only "
                      "(median over rounds of time / baseline's median):")
        report.append("")
        report.append(markdown(loop_table, benches, tools, unavailable))
        report.append("")
        report.append("Slowdown, whole process wall time (adds interpreter and profiler "
                      "start-up and the writing of the profile):")
        report.append("")
        report.append(markdown(wall_table, benches, tools, unavailable))
        report.append("")
        report.append("Noise of the baseline (loop time over rounds):")
        report.append("")
        report.append(noise_table(results, benches, iterations))
        if failures:
            report.append("")
            report.append("Failed runs (left out of the medians) and tools stopped as too slow:")
            report.append("")
            report.extend(f"- {f}" for f in failures)
        text = "\n".join(report)
        if final:
            print()
            print(text)
        if args.no_write:
            return
        now = datetime.datetime.now()
        stem = args.name or (now.strftime("%Y-%m-%d")
                             + ("" if args.mode == "cpu" else f"-{args.mode}")
                             + ("-quick" if args.quick else ""))
        outdir = os.path.join(HERE, "results")
        os.makedirs(outdir, exist_ok=True)
        try:
            rev = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"],
                                 capture_output=True, text=True, timeout=10).stdout.strip()
            if subprocess.run(["git", "-C", REPO, "status", "--porcelain", "src"],
                              capture_output=True, text=True, timeout=10).stdout.strip():
                rev += " with uncommitted changes under src/"
        except (OSError, subprocess.TimeoutExpired):
            rev = "?"
        cpu = "?"
        try:
            with open("/proc/cpuinfo") as f:
                cpu = next((ln.split(":", 1)[1].strip() for ln in f
                            if ln.startswith("model name")), "?")
        except OSError:
            pass
        env = [f"- date: {now.isoformat(timespec='seconds')}, scry commit {rev}",
               f"- machine: {os.cpu_count()} CPUs ({cpu}), {platform.platform()}",
               f"- python: {platform.python_version()} ({PY})"]
        if any(t.startswith("scry") for t in active):
            env.append(f"- scry binary: {scry} (the commit above is the checkout's; --scry may "
                       f"name another build)")
        env += [f"- {t}: {versions[t]}" for t in active if t != "base"]
        env += [f"- {t}: not measured: {unavailable[t]}" for t in unavailable]
        md = (f"# Profiler overhead, {stem}\n\nMade by `bench/overhead/run.sh"
              f"{' --quick' if args.quick else ''}"
              f"{'' if args.mode == 'cpu' else ' --mode ' + args.mode}`; "
              f"method in docs/PERFORMANCE.md.\n\n"
              + "\n".join(env) + "\n\n" + text + "\n")
        with open(os.path.join(outdir, stem + ".md"), "w") as f:
            f.write(md)
        with open(os.path.join(outdir, stem + ".json"), "w") as f:
            json.dump({"mode": args.mode, "rounds": rounds, "target": target,
                       "iterations": iterations,
                       "versions": versions, "unavailable": unavailable, "results": results,
                       "too_slow": sorted(f"{b} {t}" for b, t in too_slow), "rounds_done": done},
                      f, indent=1)
        if final:
            print(f"\nwrote {os.path.join(outdir, stem + '.md')}")

    for r in range(rounds):
        for b in benches:
            order = active[r % len(active):] + active[:r % len(active)]
            for t in order:
                if (b, t) in too_slow:
                    continue
                timeout = max(30.0, SLOW * expected[b])
                try:
                    wall, loop = run_once(t, b, iterations[b], scry, timeout)
                    results[b][t].append({"wall": wall, "loop": loop})
                    print(f"round {r + 1}/{rounds} {b:24s} {t:13s} wall {wall:7.3f} s  "
                          f"loop {loop:7.3f} s", flush=True)
                except TimedOut as e:
                    too_slow.add((b, t))
                    failures.append(f"{b} {t}: {e}, more than {SLOW}x the baseline; "
                                    f"not run again on {b}")
                    print(f"round {r + 1}/{rounds} {b:24s} {t:13s} TOO SLOW {e}", flush=True)
                except RuntimeError as e:
                    results[b][t].append(None)
                    failures.append(f"round {r + 1} {b} {t}: {e}")
                    print(f"round {r + 1}/{rounds} {b:24s} {t:13s} FAILED {e}", flush=True)
        write_report(r + 1, r + 1 == rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
