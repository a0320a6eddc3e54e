#!/usr/bin/env bash
# Installs what scry needs from Debian and PyPI, and does nothing when it is already there.
#   install-deps.sh build   compiler, headers and libraries for `make`
#   install-deps.sh test    plus what `make test` uses (gdb for gcore, pytest)
#   install-deps.sh fuzz    plus clang (libFuzzer) for `make fuzz`
set -euo pipefail
what=${1:-build}

debs=(gcc make pkg-config libelf-dev libjansson-dev)
case "$what" in
  test) debs+=(gdb) ;;
  fuzz) debs+=(clang) ;;
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
