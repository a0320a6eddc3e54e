#!/usr/bin/env bash
# Heap analysis benchmark: dominators + retained sizes + top retainers on synthetic heap-like graphs
# of 1M and 5M objects, in generation order and shuffled; prints objects/s and peak RSS per object. One command:
#
#   bench/heap/run.sh [N ...]        (default: 1000000 5000000; 5 repetitions each, median and fastest)
#
# Each size runs in its own process so that its peak RSS (getrusage ru_maxrss) is its own.
# Method and results: docs/PERFORMANCE.md, "Heap analysis". Timing lives here, never in tests.
# The end-to-end bench (scry dump and scry analyze of real Python heaps) is bench/heap/dump_bench.sh.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
out="$repo/build/bench"
mkdir -p "$out"
${CC:-cc} -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -I"$repo/src" \
    "$here/analysis_bench.c" "$repo/src/analysis/dominators.c" "$repo/src/common/error.c" \
    -o "$out/analysis_bench"
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(1000000 5000000)
for n in "${sizes[@]}"; do
    echo "== $n objects, in the generator's order (objects near the objects they reference)"
    "$out/analysis_bench" "$n" "${REPS:-5}"
    echo "== $n objects, indices shuffled (no locality at all)"
    "$out/analysis_bench" "$n" "${REPS:-5}" shuffled
done
