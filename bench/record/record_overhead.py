"""Slowdown of a running Python process while `scry record --pid` samples it from outside, side
by side with `py-spy record --pid` on the same target (issue 14). Run through
bench/record/run.sh, which makes the virtual environment with py-spy; results in
docs/PERFORMANCE.md. Timing belongs here, never in tests.

The target (started plainly, no profiler in it) waits until the profiler has attached, then does
a fixed amount of pure-Python work and reports how long it took (time.perf_counter); the
profiler is then stopped with SIGINT. Tools, interleaved in an order rotated every round so that
drifts of the machine fall on all alike:

  base            no profiler
  scry            scry record --pid PID --rate 100 (does not stop the process)
  scry-blocking   scry record --pid PID --rate 100 --blocking
  scry-native     scry record --pid PID --rate 100 --native (stops each running thread to unwind
                  its native stack with libunwind)
  py-spy-nb       py-spy record --pid PID --rate 100 --nonblocking
  py-spy          py-spy record --pid PID --rate 100 (its default: stops the process per sample)

The slowdown of a tool is the median of its times over the median of the baseline's; beside it,
the median of its per-round ratios to that round's baseline (paired, so slower drifts of the
machine between rounds cancel). The
profiler's own CPU time (user + system, from wait4) per run is given too: on a machine with
few cores that is what it takes from the target and everything else.

    --rounds N       rounds (default 7)
    --work S         seconds the work takes without a profiler (default 3)
    --tools a,b      a subset of the tools (base is always run)
    --scry PATH      the scry binary (default build/scry)
"""
import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
BIN = os.path.dirname(sys.executable)
TOOLS = ["base", "scry", "scry-blocking", "scry-native", "py-spy-nb", "py-spy"]
ATTACH_S = 1.0  # the profiler's time to attach before the work starts

TARGET = r'''
import sys, time
def work(n):
    total = 0
    for i in range(n):
        total = (total + i * i) % 1000003
    return total
n = int(sys.argv[1])
print("ready", flush=True)
sys.stdin.readline()
t = time.perf_counter()
work(n)
print(time.perf_counter() - t, flush=True)
sys.stdin.readline()
'''


def profiler(tool, pid, scry, out):
    if tool == "scry":
        return [scry, "record", "--pid", str(pid), "--rate", "100", "-o", out]
    if tool == "scry-blocking":
        return [scry, "record", "--pid", str(pid), "--rate", "100", "--blocking", "-o", out]
    if tool == "scry-native":
        return [scry, "record", "--pid", str(pid), "--rate", "100", "--native", "-o", out]
    if tool == "py-spy-nb":
        return [os.path.join(BIN, "py-spy"), "record", "--pid", str(pid), "--rate", "100",
                "--nonblocking", "-o", out, "-f", "raw"]
    if tool == "py-spy":
        return [os.path.join(BIN, "py-spy"), "record", "--pid", str(pid), "--rate", "100",
                "-o", out, "-f", "raw"]
    return None


def one_run(tool, n, scry, work_dir):
    target = subprocess.Popen([sys.executable, "-c", TARGET, str(n)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    assert target.stdout.readline().strip() == "ready"
    argv = profiler(tool, target.pid, scry, os.path.join(work_dir, f"{tool}.out"))
    prof = None
    if argv:
        prof = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(ATTACH_S)
    target.stdin.write("go\n")
    target.stdin.flush()
    elapsed = float(target.stdout.readline())
    cpu = 0.0
    if prof:
        prof.send_signal(signal.SIGINT)
        deadline = time.monotonic() + 30
        while True:
            pid, _, ru = os.wait4(prof.pid, os.WNOHANG)
            if pid:
                cpu = ru.ru_utime + ru.ru_stime
                break
            if time.monotonic() > deadline:
                prof.kill()
            time.sleep(0.01)
        prof.returncode = 0
    target.stdin.write("end\n")
    target.stdin.flush()
    target.wait(timeout=30)
    return elapsed, cpu


def calibrate(seconds):
    code = ("import time\n" + TARGET.split("n = int")[0] +
            "t = time.perf_counter(); work(2000000); print(time.perf_counter() - t)")
    per = float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                               check=True).stdout) / 2000000
    return int(seconds / per)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--work", type=float, default=3.0)
    ap.add_argument("--tools", default=",".join(TOOLS[1:]))
    ap.add_argument("--scry", default=os.path.join(REPO, "build", "scry"))
    a = ap.parse_args()
    tools = ["base"] + [t for t in a.tools.split(",") if t and t != "base"]
    n = calibrate(a.work)
    times = {t: [] for t in tools}
    cpus = {t: [] for t in tools}
    with tempfile.TemporaryDirectory() as work_dir:
        for r in range(a.rounds):
            order = tools[r % len(tools):] + tools[:r % len(tools)]
            for t in order:
                elapsed, cpu = one_run(t, n, a.scry, work_dir)
                times[t].append(elapsed)
                cpus[t].append(cpu)
            print(f"# round {r + 1}: " + ", ".join(f"{t} {times[t][-1]:.3f}" for t in tools),
                  file=sys.stderr, flush=True)
    base = statistics.median(times["base"])
    print("| tool | median s | slowdown | per-round ratio, median | min..max s | "
          "profiler CPU s per run |")
    print("|---|---|---|---|---|---|")
    for t in tools:
        med = statistics.median(times[t])
        paired = statistics.median(x / b for x, b in zip(times[t], times["base"]))
        print(f"| {t} | {med:.3f} | {med / base:.3f}x | {paired:.3f} | "
              f"{min(times[t]):.3f}..{max(times[t]):.3f} | {statistics.median(cpus[t]):.3f} |")
    print(f"\n{a.rounds} rounds, {n} iterations (~{a.work} s without a profiler), "
          f"Python {sys.version.split()[0]}, load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
