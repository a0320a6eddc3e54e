#!/usr/bin/env bash
# The README's first command (`make demo`): profiles the bundled examples/hotspots.py with
# `scry run` (per-line Python / native / system time) and examples/memory.py (per-line memory:
# allocations, growth, copies, a leak), then shows what `scry stacks` sees in the
# bundled examples/demo.py process, as text and as JSON.
set -euo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-python3}
out=$(mktemp -d)
ready="$out/ready"
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$out"' EXIT

echo "\$ build/scry run -o $out/scry-profile.json examples/hotspots.py"
build/scry run --python "$(command -v "$py")" -o "$out/scry-profile.json" examples/hotspots.py
echo

echo "\$ build/scry run -o $out/memory-profile.json examples/memory.py"
build/scry run --python "$(command -v "$py")" -o "$out/memory-profile.json" examples/memory.py
echo

"$py" examples/demo.py >"$ready" &
pid=$!
for _ in $(seq 100); do
  [ -s "$ready" ] && break
  sleep 0.05
done
echo "\$ build/scry stacks --pid $pid"
build/scry stacks --pid "$pid"
echo
echo "\$ build/scry stacks --pid $pid --json"
build/scry stacks --pid "$pid" --json
