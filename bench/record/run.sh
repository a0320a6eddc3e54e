#!/usr/bin/env bash
# The slowdown of a process while `scry record --pid` samples it, side by side with py-spy:
#
#   bench/record/run.sh [record_overhead.py options]
#
# Makes (once) a virtual environment with py-spy, builds scry if needed, and runs
# bench/record/record_overhead.py. Method and results: docs/PERFORMANCE.md.
#   $BENCH_PYTHON  interpreter for the venv (default python3)
#   $BENCH_VENV    where the venv lives (default build/bench-venv, shared with bench/overhead)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
python=${BENCH_PYTHON:-python3}
venv=${BENCH_VENV:-$repo/build/bench-venv}

if [ ! -x "$venv/bin/py-spy" ]; then
    [ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check py-spy==0.4.3
fi
if [ ! -x "$repo/build/scry" ]; then
    make -C "$repo" -s all >&2
fi
exec "$venv/bin/python" "$here/record_overhead.py" "$@"
