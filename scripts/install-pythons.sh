#!/usr/bin/env bash
# Installs the CPython interpreters that this Debian does not ship, from Debian's unstable suite
# (sid), so that the tests can run on them: each goes under pyenv's versions folder
# ($(pyenv root)/versions/3.X.Y/bin/python3.X and bin/python3), where tests/e2e/pythons.py finds
# the others. Does nothing for a version that is already there and runs.
#
#   install-pythons.sh [3.14] [3.15] [3.13t]     (default: all three)
#
# How: a private apt configuration (sid's entries, Debian's archive keyring, its own lists and
# cache under $SCRY_PYTHONS_CACHE, never the system's) downloads python3.X, its -dev and -venv
# packages and every library they need, sid's libc included; dpkg -x unpacks them into
# versions/3.X.Y/root (nothing is installed into the system), and patchelf points the
# interpreter at that root's dynamic loader and, with an RPATH, at its libraries (RPATH rather
# than RUNPATH: the extension modules of lib-dynload then find sid's libssl, libsqlite3, ... too).
# The root's own pip wheel serves venv and installs pip for the interpreter itself, and the EXTERNALLY-MANAGED marker goes:
# this interpreter belongs to no system package manager.
#
# A first run downloads about 35 MB per version and takes about a minute (compiling the stdlib's
# bytecode included).
#
# 3.13t, the free-threaded build (--disable-gil), has no binary package: it is built from the
# upstream tarball of Debian's python3.13 source package (the newest one the archive serves) with
# Debian 12's own -dev packages, and installed as versions/3.13.Nt (bin/python3.13t, bin/python3).
# That first build takes 10-20 minutes on two cores.
set -euo pipefail

versions=("$@")
[ ${#versions[@]} -gt 0 ] || versions=(3.14 3.15 3.13t)

pyenv_root=${PYENV_ROOT:-}
if [ -z "$pyenv_root" ]; then
  pyenv_root=$(pyenv root 2>/dev/null || true)
  [ -n "$pyenv_root" ] || pyenv_root=$HOME/.pyenv
fi
dest_dir=${SCRY_PYTHONS_DIR:-$pyenv_root/versions}
cache=${SCRY_PYTHONS_CACHE:-/var/cache/scry-pythons}
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
arch=$(dpkg --print-architecture)

say() { echo "scry: install-pythons: $*" >&2; }

# An interpreter of this minor version (3.13t: free-threaded) already under $dest_dir that runs:
# nothing to do.
installed() {
  local minor=$1 exe
  for exe in "$dest_dir"/"${minor%t}".*"${minor//[0-9.]/}"/bin/python"$minor"; do
    [ -x "$exe" ] && "$exe" -c 'import ssl, sqlite3, venv' >/dev/null 2>&1 && return 0
  done
  return 1
}

# The free-threaded 3.13 built from the upstream tarball of Debian's source package: the newest
# version sid lists, else the newest older one the archive still serves.
build_free_threaded() {
  local pool=http://deb.debian.org/debian/pool/main/p/python3.13 listed v full="" work prefix
  local deps=(build-essential pkg-config libssl-dev zlib1g-dev libffi-dev libsqlite3-dev
    libbz2-dev liblzma-dev uuid-dev libreadline-dev libncurses-dev libexpat1-dev libgdbm-dev)
  local missing=()
  for p in "${deps[@]}"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    say "installing Debian packages to build 3.13t: ${missing[*]}"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
  listed=$(curl -fsS "http://deb.debian.org/debian/dists/sid/main/source/Sources.xz" 2>/dev/null |
    xz -dc 2>/dev/null | sed -n '/^Package: python3.13$/,/^$/s/^Version: \([0-9.]*\).*/\1/p' |
    head -n1 || true)
  mkdir -p "$cache/src"
  for v in $listed 3.13.15 3.13.5; do
    if [ -s "$cache/src/python3.13_$v.orig.tar.xz" ] ||
      curl -fsS -o "$cache/src/python3.13_$v.orig.tar.xz.part" "$pool/python3.13_$v.orig.tar.xz" \
        2>/dev/null; then
      [ -s "$cache/src/python3.13_$v.orig.tar.xz" ] ||
        mv "$cache/src/python3.13_$v.orig.tar.xz.part" "$cache/src/python3.13_$v.orig.tar.xz"
      full=$v
      break
    fi
    rm -f "$cache/src/python3.13_$v.orig.tar.xz.part"
  done
  if [ -z "$full" ]; then
    say "no python3.13 source tarball is served by deb.debian.org (tried: $listed 3.13.15 3.13.5)"
    exit 1
  fi
  prefix="$dest_dir/${full}t"
  mkdir -p "$dest_dir"
  work=$(mktemp -d "$dest_dir/.${full}t.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  say "building free-threaded Python $full (10-20 minutes on two cores)"
  tar -xJf "$cache/src/python3.13_$full.orig.tar.xz" -C "$work"
  local src
  src=$(ls -d "$work"/Python-* "$work"/python3.13-* 2>/dev/null | head -n1)
  (cd "$src" && ./configure -q --disable-gil --prefix="$prefix" --with-ensurepip=install \
      >"$work/configure.log" 2>&1 &&
    make -s -j"$(nproc)" >"$work/make.log" 2>&1 &&
    make -s install >"$work/install.log" 2>&1) || {
    say "the build of 3.13t failed; the last lines of its logs:"
    tail -n 20 "$work"/*.log >&2
    rm -rf "$prefix"
    exit 1
  }
  ln -sf python3.13t "$prefix/bin/python3"
  rm -rf "$work"
  trap - EXIT
  if ! "$prefix/bin/python3.13t" -c 'import sys, ssl, sqlite3, venv; assert not sys._is_gil_enabled()' \
    >/dev/null; then
    say "free-threaded Python $full was built into $prefix but does not run without the GIL"
    exit 1
  fi
  say "free-threaded Python $full is at $prefix/bin/python3.13t"
}

wanted=()
for v in "${versions[@]}"; do
  case "$v" in
    3.1[4-9] | 3.13t) installed "$v" || wanted+=("$v") ;;
    *) say "unknown version '$v' (this script installs 3.14, 3.15 and 3.13t)"; exit 2 ;;
  esac
done
[ ${#wanted[@]} -gt 0 ] || exit 0

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
need=()
command -v patchelf >/dev/null 2>&1 || need+=(patchelf)
[ -f "$keyring" ] || need+=(debian-archive-keyring)
if [ ${#need[@]} -gt 0 ]; then
  say "installing Debian packages: ${need[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
fi

mkdir -p "$cache"/etc "$cache"/lists/partial "$cache"/archives/partial
echo "deb [signed-by=$keyring] http://deb.debian.org/debian sid main" >"$cache/etc/sources.list"
: >"$cache/etc/status" # an empty package database: apt resolves the whole closure
apt_opts=(-o "Dir::Etc::SourceList=$cache/etc/sources.list" -o "Dir::Etc::SourceParts=/dev/null"
  -o "Dir::Etc::Preferences=/dev/null" -o "Dir::Etc::PreferencesParts=/dev/null"
  -o "Dir::State::Lists=$cache/lists" -o "Dir::State::Status=$cache/etc/status"
  -o "Dir::Cache::Archives=$cache/archives" -o "APT::Architecture=$arch"
  -o "APT::Sandbox::User=root" -o "Debug::NoLocking=1" -o "Acquire::Languages=none")

binary=()
for v in "${wanted[@]}"; do
  [ "$v" = 3.13t ] || binary+=("$v")
done
ft_failed=0
if [ ${#binary[@]} -ne ${#wanted[@]} ]; then
  (build_free_threaded) || ft_failed=1 # 3.14/3.15 are installed even if this build fails
fi
[ ${#binary[@]} -gt 0 ] || exit $ft_failed
wanted=("${binary[@]}")

say "reading Debian sid's package lists"
apt-get "${apt_opts[@]}" update -qq

for minor in "${wanted[@]}"; do
  pkgs=("python$minor" "python$minor-dev" "python$minor-venv")
  full=$(apt-cache "${apt_opts[@]}" show --no-all-versions "python$minor" 2>/dev/null |
    sed -n 's/^Version: \([0-9.]*\).*/\1/p' | head -n1)
  if [ -z "$full" ]; then
    say "Debian sid has no python$minor package"
    exit 1
  fi
  say "downloading Python $full and the libraries it needs"
  apt-get "${apt_opts[@]}" install -y -qq --download-only --no-install-recommends "${pkgs[@]}" \
    >/dev/null
  # The exact files of this closure (the cache may hold other versions' packages too).
  mapfile -t debs < <(apt-get "${apt_opts[@]}" install -s --no-install-recommends "${pkgs[@]}" |
    sed -n 's/^Inst \([^ ]*\) (\([^ ]*\) .*/\1 \2/p')

  prefix="$dest_dir/$full"
  mkdir -p "$dest_dir"
  work=$(mktemp -d "$dest_dir/.$full.XXXXXX")
  chmod 755 "$work"
  trap 'rm -rf "$work"' EXIT
  root="$work/root"
  mkdir -p "$root" "$work/bin"
  for entry in "${debs[@]}"; do
    name=${entry% *}
    ver=${entry#* }
    file=$(ls "$cache/archives/${name}_${ver//:/%3a}_"*.deb 2>/dev/null | head -n1)
    if [ -z "$file" ]; then
      say "the download of $name $ver is missing from $cache/archives"
      exit 1
    fi
    dpkg-deb -x "$file" "$root"
  done

  # Paths are fixed up where they will finally be: $prefix/root.
  final="$prefix/root"
  exe="$root/usr/bin/python$minor"
  patchelf --set-interpreter "$final/usr/lib64/ld-linux-x86-64.so.2" \
    --force-rpath --set-rpath "$final/usr/lib/x86_64-linux-gnu" "$exe"
  rm -f "$root/usr/lib/python$minor/EXTERNALLY-MANAGED"
  for f in "$root"/usr/lib/python"$minor"/_sysconfigdata_*.py; do
    sed -i "s|'WHEEL_PKG_DIR': '/usr/share/python-wheels/'|'WHEEL_PKG_DIR': '$final/usr/share/python-wheels/'|" "$f"
  done
  ln -s "../root/usr/bin/python$minor" "$work/bin/python$minor"
  ln -s "python$minor" "$work/bin/python3"

  rm -rf "$prefix"
  mv "$work" "$prefix"
  trap - EXIT
  if ! "$prefix/bin/python$minor" -c 'import ssl, sqlite3, ctypes, zlib, venv' >/dev/null; then
    say "Python $full was unpacked into $prefix but does not run"
    exit 1
  fi
  # pip for the interpreter itself (Debian's ensurepip works only inside a virtual
  # environment): the root's own wheel runs pip to install itself.
  wheel=$(ls "$final"/usr/share/python-wheels/pip-*.whl | head -n1)
  "$prefix/bin/python$minor" "$wheel/pip" install -q --no-index --no-warn-script-location \
    --root-user-action=ignore --break-system-packages "$wheel" >/dev/null
  # The stdlib's bytecode, as Debian's postinst (py3compile) and pyenv's install make it: without
  # it every run compiles what it imports (PYTHONDONTWRITEBYTECODE keeps it from being cached),
  # and a profile shows that compile time on the import lines.
  "$prefix/bin/python$minor" -m compileall -q -j0 -x '/(test|idlelib|lib2to3)/' \
    "$final/usr/lib/python$minor" >/dev/null 2>&1 || true
  say "Python $full is at $prefix/bin/python$minor"
done
exit $ft_failed
