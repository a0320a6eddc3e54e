#!/usr/bin/env bash
# Installs what scry needs from Debian and PyPI, and does nothing when it is already there.
#   install-deps.sh build   compiler, headers and libraries for `make`
#   install-deps.sh test    plus what `make test` uses (gdb for gcore, pytest; pytest, numpy,
#                           pandas and memray in each pyenv interpreter, where they install)
#   install-deps.sh packages only the latter (`make test` runs it again after
#                           scripts/install-pythons.sh has added 3.14 and 3.15)
#   install-deps.sh fuzz    plus clang (libFuzzer) for `make fuzz`
#   install-deps.sh browser Debian's chromium and npm's playwright-core (into build/node_modules)
#                           for the browser view's tests; `make test` runs it and carries on
#                           without them (the tests then skip, saying why)
set -euo pipefail
what=${1:-build}

debs=(gcc make pkg-config libelf-dev libjansson-dev libunwind-dev) # libunwind: --stacks (dlopen)
case "$what" in
  test) debs+=(gdb) ;;
  fuzz) debs+=(clang) ;;
  browser)
    debs=(chromium)
    command -v node >/dev/null 2>&1 || debs+=(nodejs)
    command -v npm >/dev/null 2>&1 || debs+=(npm) ;;
esac

missing=()
for p in "${debs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "scry: installing Debian packages: ${missing[*]}" >&2
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if [ "$what" = test ]; then
  py=${PYTHON:-python3}
  if ! "$py" -c 'import pytest' 2>/dev/null; then
    echo "scry: installing pytest for $py" >&2
    "$py" -m pip install -q pytest
  fi
fi

if [ "$what" = test ] || [ "$what" = packages ]; then
  # pytest, numpy and pandas in the interpreters the e2e tests target (tests/e2e/pythons.py: 3.11+
  # under pyenv's versions folder, 3.14/3.15 from scripts/install-pythons.sh included), for the
  # heap walker's tests of C types (tests/e2e/test_dump_ctypes.py), and memray for bench/overhead;
  # where they do not install (no wheel, no network) those tests skip, saying why. Wheels only:
  # building memray or numpy from source would take longer than the whole test run.
  root=$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")
  for tp in "$root"/versions/3.1[1-9].*/bin/python3; do
    [ -x "$tp" ] || continue
    case "$tp" in *-dbg*|*t/bin/python3) continue ;; esac
    if ! "$tp" -c 'import pytest, numpy, pandas' 2>/dev/null; then
      echo "scry: installing pytest, numpy and pandas for $tp" >&2
      "$tp" -m pip install -q --retries 1 --timeout 20 --only-binary=:all: pytest numpy pandas \
        >/dev/null 2>&1 ||
        echo "scry: numpy/pandas do not install for $tp: their heap tests will be skipped" >&2
    fi
    if ! "$tp" -c 'import memray' 2>/dev/null; then
      "$tp" -m pip install -q --retries 1 --timeout 20 --only-binary=:all: memray >/dev/null 2>&1 ||
        echo "scry: memray has no wheel for $tp (bench/overhead leaves it out there)" >&2
    fi
  done
fi

if [ "$what" = browser ]; then
  # playwright-core drives the system's chromium (no browser download); it lives under build/ so
  # that it is never committed. PLAYWRIGHT_VERSION pins the version the tests were written for.
  dir=${BUILD:-build}
  if [ ! -f "$dir/node_modules/playwright-core/package.json" ]; then
    echo "scry: installing playwright-core into $dir/node_modules" >&2
    mkdir -p "$dir"
    [ -f "$dir/package.json" ] || echo '{"name": "scry-browser-tests", "private": true}' >"$dir/package.json"
    (cd "$dir" && npm install --no-audit --no-fund --loglevel=error \
      "playwright-core@${PLAYWRIGHT_VERSION:-1.57.0}" >/dev/null)
  fi
fi
