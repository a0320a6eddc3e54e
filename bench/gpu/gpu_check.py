#!/usr/bin/env python3
"""scry's GPU figures on a real NVIDIA GPU (issue 19, item 4), by hand or with the device tool:

    python3 bench/gpu/gpu_check.py [--scry build/scry] [--python PYTHON] [--runs 3]

PYTHON must have PyTorch with CUDA. It profiles bench/gpu/gpu_target.py (a matrix-multiply line,
a host-only line, a line that allocates 8 GiB on the device) with `scry run --gpu` and checks:
  - the matmul line's n_gpu_percent >= 85
  - the host-only line's n_gpu_percent <= 5
  - the 8 GiB line's n_gpu_peak_memory_mb, less the level before it (the host line's peak),
    within 2% of 8192
  - the program's output and exit status as without scry
  - overhead: the median wall time of `scry run --gpu` within 2% of `scry run --no-gpu` on a
    fixed amount of work (--runs each, alternated)
It prints a PASS/FAIL line per check and the environment (driver, device, MIG, sources), writes
everything to gpu-check-result.json (or --out), and exits 0 when every check passed, 1 when one
failed, 2 when it cannot run here (no CUDA)."""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
TARGET = HERE / "gpu_target.py"
EIGHT_GIB_MB = 8192


def markers():
    out = {}
    for no, text in enumerate(TARGET.read_text().splitlines(), 1):
        code, sep, name = text.partition("# @")
        if sep and code.strip():
            out[name.strip()] = no
    return out


def environment(python):
    env = {}
    probe = ("import json, torch; print(json.dumps({'torch': torch.__version__, "
             "'cuda': torch.cuda.is_available() and torch.version.cuda, "
             "'device': torch.cuda.is_available() and torch.cuda.get_device_name(0)}))")
    cp = subprocess.run([python, "-c", probe], capture_output=True, text=True, timeout=300)
    env["torch_probe"] = cp.stdout.strip() or cp.stderr.strip()[-500:]
    try:
        env.update(json.loads(cp.stdout))
    except ValueError:
        env["cuda"] = False
    try:
        q = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total,"
                            "mig.mode.current,persistence_mode,accounting.mode",
                            "--format=csv,noheader"], capture_output=True, text=True, timeout=60)
        env["nvidia_smi"] = q.stdout.strip() or q.stderr.strip()
    except (OSError, subprocess.TimeoutExpired) as e:
        env["nvidia_smi"] = f"not available: {e}"
    return env


def scry_run(scry, python, out, gpu, extra_env):
    env = dict(os.environ, **extra_env)
    argv = [scry, "run", "--no-view", "--python", python, "-o", str(out),
            "--gpu" if gpu else "--no-gpu", str(TARGET)]
    t0 = time.monotonic()
    cp = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=600)
    return cp, time.monotonic() - t0


def line(profile, lineno):
    for name, f in profile.get("files", {}).items():
        if name.endswith("gpu_target.py"):
            for e in f["lines"]:
                if e["lineno"] == lineno:
                    return e
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scry", default=str(REPO / "build" / "scry"))
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--section", type=float, default=5.0, help="seconds per phase")
    ap.add_argument("--out", default="gpu-check-result.json")
    args = ap.parse_args()

    env = environment(args.python)
    print("environment:", json.dumps(env, indent=1))
    if not env.get("cuda"):
        print("SKIP: this Python has no PyTorch with CUDA, or no GPU is visible")
        return 2
    checks, result = [], {"environment": env}

    def check(name, ok, detail):
        checks.append({"check": name, "ok": bool(ok), "detail": detail})
        print(f"{'PASS' if ok else 'FAIL'}  {name}: {detail}")

    mark = markers()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        plain = subprocess.run([args.python, str(TARGET)], capture_output=True, text=True,
                               timeout=600, env=dict(os.environ, GPU_CHECK_SECTION="0.5",
                                                     GPU_CHECK_SETTLE="0"))
        cp, wall = scry_run(args.scry, args.python, tmp / "p.json", True,
                            {"GPU_CHECK_SECTION": str(args.section)})
        check("output and exit status unchanged",
              cp.returncode == plain.returncode == 0 and cp.stdout == plain.stdout,
              f"rc {cp.returncode} (plain {plain.returncode}), stdout {cp.stdout!r} "
              f"(plain {plain.stdout!r})")
        if not (tmp / "p.json").exists():
            check("profile written", False, cp.stderr[-2000:])
        else:
            p = json.loads((tmp / "p.json").read_text())
            result["profile_top"] = {k: p.get(k) for k in (
                "gpu", "gpu_device", "gpu_utilization_source", "gpu_memory_source",
                "gpu_sampler_cpu_sec", "gpu_note", "elapsed_time_sec")}
            print("profile:", json.dumps(result["profile_top"]))
            check("GPU data in the profile", p.get("gpu") is True, p.get("gpu_note"))
            mm, host, alloc = (line(p, mark[m]) or {} for m in ("MATMUL", "HOST", "ALLOC"))
            result["lines"] = {"MATMUL": mm, "HOST": host, "ALLOC": alloc}
            check("matmul line n_gpu_percent >= 85", mm.get("n_gpu_percent", 0) >= 85,
                  f"{mm.get('n_gpu_percent')}")
            check("host-only line n_gpu_percent <= 5", host and host["n_gpu_percent"] <= 5,
                  f"{host.get('n_gpu_percent')}")
            growth = alloc.get("n_gpu_peak_memory_mb", 0) - host.get("n_gpu_peak_memory_mb", 0)
            check("8 GiB line: peak growth within 2% of 8192 MB",
                  abs(growth - EIGHT_GIB_MB) <= 0.02 * EIGHT_GIB_MB,
                  f"peak {alloc.get('n_gpu_peak_memory_mb')} MB - level before "
                  f"{host.get('n_gpu_peak_memory_mb')} MB = {growth:.1f} MB")
        walls = {True: [], False: []}
        for i in range(args.runs):
            for gpu in (False, True) if i % 2 == 0 else (True, False):
                cp, w = scry_run(args.scry, args.python, tmp / f"o{i}{gpu}.json", gpu,
                                 {"GPU_CHECK_FIXED": "1"})
                if cp.returncode != 0:
                    check(f"overhead run {'--gpu' if gpu else '--no-gpu'}", False,
                          cp.stderr[-2000:])
                walls[gpu].append(w)
        if walls[True] and walls[False]:
            on, off = statistics.median(walls[True]), statistics.median(walls[False])
            result["overhead"] = {"gpu_s": walls[True], "no_gpu_s": walls[False],
                                  "ratio": on / off}
            check("overhead of GPU sampling within 2% of --no-gpu", on <= off * 1.02,
                  f"median {on:.3f} s with --gpu, {off:.3f} s with --no-gpu "
                  f"(x{on / off:.4f}, {args.runs} runs each)")
    result["checks"] = checks
    Path(args.out).write_text(json.dumps(result, indent=1))
    failed = [c for c in checks if not c["ok"]]
    print(f"\n{'FAIL' if failed else 'PASS'}: {len(checks) - len(failed)} of {len(checks)} checks "
          f"passed; details in {args.out}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
