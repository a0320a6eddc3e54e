#!/usr/bin/env bash
# Builds each fuzz target and runs it for SECONDS on its seed corpus; exits non-zero on any crash.
#   scripts/run-fuzz.sh SECONDS tests/fuzz/fuzz_core.c tests/fuzz/fuzz_elf.c ...
# With clang (and its libFuzzer): -fsanitize=fuzzer,address,undefined. Without: gcc, ASan + UBSan
# and tests/fuzz/driver.c, a random-mutation loop over the seeds. The target fuzz_NAME.c reads its
# seeds from tests/fuzz/corpus/NAME/; new inputs go to build-fuzz/corpus/NAME/ and crashing ones to
# build-fuzz/crashes/ (turn each into a corpus file once fixed). FUZZ_MODE=driver forces the gcc
# driver even where clang is installed. A target that needs sources outside the library names them
# on ' * fuzz-links: src/a.c src/b.c' lines of its header comment.
set -euo pipefail
secs=${1:?usage: run-fuzz.sh SECONDS fuzz_src...}
shift
[ $# -gt 0 ] || { echo "run-fuzz: no fuzz targets given" >&2; exit 2; }
out=build-fuzz
mkdir -p "$out/crashes" "$out/obj"

mode=driver
cc=${FUZZ_CC:-gcc}
if [ "${FUZZ_MODE:-}" != driver ] && command -v clang >/dev/null 2>&1; then
  probe=$(mktemp -d)
  echo 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { (void)d; (void)n; return 0; }' \
    >"$probe/p.c"
  if clang -fsanitize=fuzzer "$probe/p.c" -o "$probe/p" >/dev/null 2>&1; then
    mode=libfuzzer
    cc=clang
  fi
  rm -rf "$probe"
fi

cflags=(-std=c11 -D_GNU_SOURCE -Isrc -g -O1 -fno-omit-frame-pointer -Wall -fno-sanitize-recover=all)
if [ "$mode" = libfuzzer ]; then
  objsan=(-fsanitize=fuzzer-no-link,address,undefined)
  linksan=(-fsanitize=fuzzer,address,undefined)
else
  objsan=(-fsanitize=address,undefined)
  linksan=(-fsanitize=address,undefined)
fi
echo "run-fuzz: $mode mode ($cc), $secs s per target" >&2

# The library under test: everything a target may reach, compiled once. The binary's files that a
# target drives are named by the target itself (fuzz-links, below).
objs=()
for src in src/common/*.c src/platform/linux/*.c src/reader/*.c src/cpython/*.c src/analysis/*.c \
           src/render/*.c src/snapshot/*.c; do
  [ -f "$src" ] || continue
  obj="$out/obj/$(echo "${src%.c}" | tr / _).o"
  "$cc" "${cflags[@]}" "${objsan[@]}" -c "$src" -o "$obj"
  objs+=("$obj")
done
extra=()
if [ "$mode" = driver ]; then
  "$cc" "${cflags[@]}" "${objsan[@]}" -c tests/fuzz/driver.c -o "$out/obj/driver.o"
  extra=("$out/obj/driver.o")
fi

failed=()
for target in "$@"; do
  name=$(basename "$target" .c)
  seeds="tests/fuzz/corpus/${name#fuzz_}"
  work="$out/corpus/$name"
  mkdir -p "$work" "$seeds"
  # Sources outside the library that a target drives (the MCP server, serve_http.c), named in the
  # target's header comment on lines ' * fuzz-links: src/... src/...'.
  links=()
  for src in $(sed -n 's/^ \* fuzz-links: //p' "$target" | tr ' ' '\n' | grep '^src/.*\.c$'); do
    obj="$out/obj/$(echo "${src%.c}" | tr / _).o"
    "$cc" "${cflags[@]}" "${objsan[@]}" -c "$src" -o "$obj"
    links+=("$obj")
  done
  "$cc" "${cflags[@]}" "${linksan[@]}" "$target" "${extra[@]}" "${links[@]}" "${objs[@]}" \
    -lelf -ljansson -lz -lm -o "$out/$name"
  echo "run-fuzz: $name for $secs s (seeds: $seeds)" >&2
  rc=0
  if [ "$mode" = libfuzzer ]; then
    # The first directory receives new inputs; the seed directory is only read.
    ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} "$out/$name" -max_total_time="$secs" -timeout=10 \
      -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$out/crashes/$name-" \
      "$work" "$seeds" >"$out/$name.log" 2>&1 || rc=$?
  else
    ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} "$out/$name" -max_total_time="$secs" \
      -artifact_prefix="$out/crashes/$name-" "$seeds" >"$out/$name.log" 2>&1 || rc=$?
  fi
  if [ $rc -ne 0 ]; then
    tail -n 40 "$out/$name.log" >&2
    echo "run-fuzz: $name FAILED (exit $rc); inputs in $out/crashes/" >&2
    failed+=("$name")
  else
    tail -n 3 "$out/$name.log" >&2
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: ${#failed[@]} target(s) crashed: ${failed[*]}" >&2
  exit 1
fi
echo "fuzz: $# target(s) ran $secs s each without a crash"
