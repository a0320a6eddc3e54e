#!/usr/bin/env bash
# Runs each C unit-test binary (each ends with "results: N passed, M failed") and prints one
# closing line for all of them: "unit: N passed, M failed".
set -u
passed=0; failed=0; bad=()
for t in "$@"; do
  out=$("$t" 2>&1); rc=$?
  line=$(printf '%s\n' "$out" | grep -E '^results: [0-9]+ passed, [0-9]+ failed' | tail -n1)
  p=$(printf '%s' "$line" | sed -n 's/^results: \([0-9]*\) passed.*/\1/p')
  f=$(printf '%s' "$line" | sed -n 's/.* \([0-9]*\) failed.*/\1/p')
  passed=$((passed + ${p:-0}))
  if [ $rc -ne 0 ] || [ -z "$line" ]; then
    # A crash or a missing summary counts as at least one failure.
    [ "${f:-0}" -gt 0 ] && failed=$((failed + f)) || failed=$((failed + 1))
    bad+=("$t (exit $rc)")
    printf '%s\n' "$out" | tail -n 40
  fi
done
echo "unit: $passed passed, $failed failed"
[ ${#bad[@]} -eq 0 ] || { echo "failing: ${bad[*]}"; exit 1; }
