#!/usr/bin/env bash
# Builds the Pyroscope server that tests/e2e/test_push.py pushes to (a real server, not only the
# fake one), from its Go module, and prints the binary's path. `make test` runs it; the tests
# skip, saying why, where it cannot build (no Go, no module proxy).
#
# The binary goes outside the checkout ($SCRY_PYROSCOPE_ROOT, default /opt/scry-pyroscope, else
# ~/.cache/scry-pyroscope where /opt is not writable) so that every clone on a machine (CI
# starts from a fresh one) builds it once: a cold build takes minutes, an existing binary of the
# right version is used as it is.
#
# Why not `go install github.com/grafana/pyroscope/cmd/pyroscope@v1.9.0`: the module's go.mod
# replaces github.com/grafana/pyroscope/api with ./api, and go install refuses a module with
# replace directives. So the module is downloaded, copied to a writable place, its ./api is
# replaced by the api module's release it was made with, and it is built there.
set -euo pipefail

version=1.9.0
api_version=1.0.0
module=github.com/grafana/pyroscope

root=${SCRY_PYROSCOPE_ROOT:-}
if [ -z "$root" ]; then
  root=/opt/scry-pyroscope
  if ! mkdir -p "$root" 2>/dev/null || [ ! -w "$root" ]; then
    root=${XDG_CACHE_HOME:-$HOME/.cache}/scry-pyroscope
  fi
fi
dest=$root/v$version
bin=$dest/pyroscope

# The binary says its version (`pyroscope -version`): a half-written or other one is rebuilt.
have_it() {
  [ -x "$bin" ] && "$bin" -version 2>/dev/null | grep -q "version v$version"
}
if have_it; then
  echo "$bin"
  exit 0
fi

# Go from PATH, else the official tarball's place (CI's shell may not have it on PATH). Debian
# 12's golang-go (1.19) is older than the module's go 1.22.7, so it is not installed for this.
go=$(command -v go || true)
[ -n "$go" ] || [ ! -x /usr/local/go/bin/go ] || go=/usr/local/go/bin/go
if [ -z "$go" ]; then
  echo "scry: no Go toolchain (go 1.22 or later) here: cannot build the Pyroscope server" >&2
  exit 1
fi

mkdir -p "$dest"
# Two clones building at once (parallel CI runs) take turns; the second finds the binary.
exec 9>"$root/.lock"
flock 9
if have_it; then
  echo "$bin"
  exit 0
fi

work=$(mktemp -d "$root/build.XXXXXX")
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
started=$(date +%s)

# The directory of a module in Go's module cache (go mod download -json's "Dir"; its "Error",
# on standard output too, says why when there is none).
module_dir() {
  local json dir
  json=$(cd "$work" &&
    GOWORK=off GOFLAGS=-mod=mod GOTOOLCHAIN=local "$go" mod download -json "$1") || true
  dir=$(printf '%s\n' "$json" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
  if [ -z "$dir" ] || [ ! -d "$dir" ]; then
    echo "scry: go mod download $1 failed:" \
      "$(printf '%s\n' "$json" | sed -n 's/^[[:space:]]*"Error": "\(.*\)",\{0,1\}$/\1/p')" >&2
    return 1
  fi
  echo "$dir"
}
echo "scry: building the Pyroscope server v$version into $dest (minutes the first time)" >&2
src=$(module_dir "$module@v$version")
api=$(module_dir "$module/api@v$api_version")
if [ ! -d "$src/cmd/pyroscope" ]; then
  echo "scry: $module@v$version has no cmd/pyroscope" >&2
  exit 1
fi

# The module cache is read-only; the build needs the tree writable and its ./api replaced.
cp -R "$src" "$work/src"
chmod -R u+w "$work/src"
rm -rf "$work/src/api"
cp -R "$api" "$work/src/api"
chmod -R u+w "$work/src/api"
(cd "$work/src" &&
  GOWORK=off GOFLAGS=-mod=mod GOTOOLCHAIN=local CGO_ENABLED=0 "$go" build \
    -ldflags "-X github.com/grafana/pyroscope/pkg/util/build.Version=v$version" \
    -o "$work/pyroscope" ./cmd/pyroscope)
mv -f "$work/pyroscope" "$bin"
echo "scry: built the Pyroscope server in $(($(date +%s) - started)) s" >&2
if ! have_it; then
  echo "scry: $bin does not say it is version v$version" >&2
  exit 1
fi
echo "$bin"
