#!/usr/bin/env bash
# Profiler overhead benchmark on the ten pyperformance benchmarks of Scalene's paper. One command:
#
#   bench/overhead/run.sh [--quick] [--mode cpu|full|all] [overhead.py options]
#
# --mode cpu (the default): scry run --cpu-only against no profiler, Scalene --cpu-only, py-spy,
# Austin and pyinstrument. --mode full: everything on (scry run's default: CPU, memory, copy
# volume, leaks) against no profiler, Scalene with memory and memray. --mode all: both.
#
# Makes (once) a virtual environment with the benchmarks and the peer profilers, builds scry if
# needed, runs bench/overhead/overhead.py, and writes bench/overhead/results/<date>.md (and .json).
# Timing belongs here, never in tests. Method and results: docs/PERFORMANCE.md.
#   $BENCH_PYTHON  interpreter for the venv (default python3: 3.11 here)
#   $BENCH_VENV    where the venv lives (default build/bench-venv)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
python=${BENCH_PYTHON:-python3}
venv=${BENCH_VENV:-$repo/build/bench-venv}

# Pinned so that runs on different days compare. docutils 0.18.1 is what pyperformance's
# bm_docutils asks for; austin-dist 4.x needs glibc 2.38, older than Debian 12 has.
packages=(pyperformance==1.14.0 pyperf==2.11.0 docutils==0.18.1 sympy==1.14.0
          scalene==2.4.0 py-spy==0.4.3 austin-dist==3.7.0 pyinstrument==5.1.3 memray==1.20.0)
stamp="$venv/.scry-bench-${packages[*]// /_}"
stamp=${stamp//[^A-Za-z0-9._\/-]/_}
if [ ! -e "$stamp" ]; then
    echo "# setting up $venv with $($python --version 2>&1)" >&2
    "$python" -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check "${packages[@]}" || {
        # A peer that does not install is reported as not measured, not a failure of the bench.
        echo "# some packages failed to install together; installing one at a time" >&2
        for p in "${packages[@]}"; do
            "$venv/bin/pip" install -q --disable-pip-version-check "$p" ||
                echo "# $p did not install: that tool will be reported as not measured" >&2
        done
    }
    rm -f "$venv"/.scry-bench-*
    touch "$stamp"
fi

if [ ! -x "$repo/build/scry" ] || [ ! -e "$repo/build/libscry-agent.so" ]; then
    make -C "$repo" -s all >&2 || echo "# scry did not build: it will be reported as not measured" >&2
fi

exec "$venv/bin/python" "$here/overhead.py" "$@"
