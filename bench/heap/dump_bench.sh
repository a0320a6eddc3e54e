#!/usr/bin/env bash
# Heap dump and analyze, end to end: `scry dump --pid` of tests/targets/heap_bench.py holding
# about 1M and 5M objects on every installed Python 3.11-3.13 (pause, walk objects/s, dump wall
# time, snapshot size), then `scry analyze` of each snapshot (wall time, objects/s, peak RSS per
# object). One command:
#
#   bench/heap/dump_bench.sh [--runs N] [--sizes 1M,5M|LABEL=N,...] [--pythons 3.11,3.12,3.13]
#                            [--scry PATH] [--out DIR|-]
#
# Builds build/scry if it is missing; writes bench/heap/results/<date>.md (and .json). Method and
# results: docs/PERFORMANCE.md, "Heap dump and analyze, end to end". Needs ptrace rights over its
# own children (as the e2e tests do). Timing lives here, never in tests.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
[ -x "$repo/build/scry" ] || make -C "$repo" -j"$(nproc)" build/scry >&2
exec python3 "$here/dump_bench.py" "$@"
