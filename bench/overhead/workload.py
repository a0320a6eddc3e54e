"""One benchmark of Scalene's paper (pyperformance's bm_*/run_benchmark.py), looped a fixed number
of times, as a plain program that any profiler can run.

    python workload.py NAME ITERATIONS [--time-file FILE]

The benchmark code is pyperformance's own, loaded at run time from the installed pyperformance
package (its data-files/benchmarks/bm_*/run_benchmark.py; the modules' __main__ blocks, which start
pyperf's Runner, do not run). pyperf itself is needed only because those modules import it. The
work per iteration is fixed, so a run's time depends only on how fast the interpreter goes; the
harness (overhead.py) picks ITERATIONS once, from a baseline run, and uses the same count for every
profiler. With --time-file, the seconds spent in the loop (without interpreter start-up, imports
and the profiler's own start and finish) are written to FILE.
"""
import argparse
import asyncio
import importlib.util
import os
import sys
import time

NAMES = ["async_tree_none", "async_tree_io", "async_tree_cpu_io_mixed", "async_tree_memoization",
         "docutils", "fannkuch", "mdp", "pprint", "raytrace", "sympy"]


def load(bm):
    import pyperformance

    path = os.path.join(os.path.dirname(pyperformance.__file__), "data-files", "benchmarks",
                        f"bm_{bm}", "run_benchmark.py")
    spec = importlib.util.spec_from_file_location(f"bm_{bm}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def workload(name):
    """A function doing one iteration of benchmark `name`."""
    if name.startswith("async_tree_"):
        m = load("async_tree")
        cls = m.BENCHMARKS[name[len("async_tree_"):]]

        def one():
            asyncio.run(cls().run())
        return one
    if name == "docutils":
        m = load("docutils")
        return lambda: m.build_html(m.DOC_ROOT)
    if name == "fannkuch":
        m = load("fannkuch")
        return lambda: m.fannkuch(m.DEFAULT_ARG)
    if name == "mdp":
        m = load("mdp")
        return lambda: m.bench_mdp(1)  # checks its own result
    if name == "pprint":
        m = load("pprint")
        return lambda: m.p.pformat(m.printable)
    if name == "raytrace":
        m = load("raytrace")
        return lambda: m.bench_raytrace(1, m.DEFAULT_WIDTH, m.DEFAULT_HEIGHT, None)
    if name == "sympy":
        m = load("sympy")
        # pyperformance's four sympy benchmarks, each after clearing sympy's cache as it does.
        funcs = [m.bench_expand, m.bench_integrate, m.bench_sum, m.bench_str]

        def one():
            for f in funcs:
                m.bench_sympy(1, f)
        return one
    raise SystemExit(f"unknown benchmark {name!r}; known: {', '.join(NAMES)}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("name", choices=NAMES)
    ap.add_argument("iterations", type=int)
    ap.add_argument("--time-file")
    args = ap.parse_args()
    one = workload(args.name)
    t0 = time.perf_counter()
    for _ in range(args.iterations):
        one()
    elapsed = time.perf_counter() - t0
    if args.time_file:
        with open(args.time_file, "w") as f:
            f.write(f"{elapsed:.6f}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
