#!/usr/bin/env bash
# Starts the bundled demo (examples/demo.py) and shows what `scry stacks` sees in it, as text and
# as JSON, then stops it. Used by `make demo`, the README's first command.
set -euo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-python3}
ready=$(mktemp)
trap 'kill "$pid" 2>/dev/null || true; rm -f "$ready"' EXIT
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
