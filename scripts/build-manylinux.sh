#!/usr/bin/env bash
# The manylinux2014 (glibc 2.17, x86-64) build of scry that `make wheel` packages: the binary and
# the agent compiled with `zig cc -target x86_64-linux-gnu.2.17` (PyPI's ziglang, in a virtual
# environment), the C libraries the binary uses built from their Debian 12 source packages as
# static libraries and linked in, and libunwind (which the agent dlopens for --stacks) as a shared
# library built the same way, without liblzma. Everything is cached under $BUILD/manylinux; a
# second run only rebuilds scry itself (make's dependencies).
#
#   scripts/build-manylinux.sh        -> $BUILD/manylinux/out/{scry,libscry-agent.so,libunwind.so.8}
#
# What is left out on purpose: curl is built for http and https only, with mbedTLS (one TLS
# library, no OpenSSL or GnuTLS) and zlib, and without LDAP, RTMP, SSH, Kerberos/GSSAPI, IDN, PSL,
# brotli, zstd or HTTP/2; its CA bundle is none at build time: scry's src/push/tls_ca.c picks the
# system's at run time (Debian's, RHEL's, SUSE's, Alpine's path, or $SSL_CERT_FILE).
# libelf is compiled from elfutils' libelf/ sources alone (elfutils' configure wants gcc, and
# nothing else of elfutils is needed); libbpf through its own src/Makefile.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "$ROOT" && mkdir -p "${BUILD:-build}" && cd "${BUILD:-build}" && pwd)
PYTHON=${PYTHON:-python3}
ZIG_VERSION=0.17.1
TARGET=x86_64-linux-gnu.2.17
JOBS=${JOBS:-2}

M=$BUILD/manylinux
PREFIX=$M/prefix
SRC=$M/src
WORK=$M/work
OUT=$M/out
say() { echo "scry: manylinux: $*" >&2; }
# What is built depends on these scripts and the zig version: when they change, the libraries and
# scry's objects are built again (the sources and downloads are kept).
sig="$ZIG_VERSION $(cat "$0" "$ROOT/scripts/manylinux-libelf.sh" | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$M/signature" 2>/dev/null)" != "$sig" ]; then
  rm -rf "$PREFIX" "$WORK" "$OUT" "$M/scry" "$M/zig-cache"
  mkdir -p "$M"
  echo "$sig" >"$M/signature"
fi
mkdir -p "$PREFIX/lib" "$PREFIX/include" "$SRC" "$WORK" "$OUT" "$M/bin"

# 1. zig, and cc/ar wrappers that name the target (configure scripts take one word for CC).
venv=$M/zig-venv
if [ ! -f "$venv/installed" ] || [ "$(cat "$venv/installed")" != "ziglang==$ZIG_VERSION" ]; then
  say "installing ziglang==$ZIG_VERSION into $venv..."
  rm -rf "$venv"
  "$PYTHON" -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check --retries 1 --timeout 60 \
    "ziglang==$ZIG_VERSION"
  echo "ziglang==$ZIG_VERSION" >"$venv/installed"
fi
zig=$("$venv/bin/python" -c \
  'import os, ziglang; print(os.path.join(os.path.dirname(ziglang.__file__), "zig"))')
# zig keeps its compilation cache under $HOME by default: under build/ instead.
export ZIG_GLOBAL_CACHE_DIR=$M/zig-cache ZIG_LOCAL_CACHE_DIR=$M/zig-cache
# -fno-sanitize=undefined: zig cc turns UBSan traps on by default.
cat >"$M/bin/zcc" <<EOF
#!/bin/sh
exec "$zig" cc -target $TARGET -fno-sanitize=undefined "\$@"
EOF
cat >"$M/bin/zar" <<EOF
#!/bin/sh
exec "$zig" ar "\$@"
EOF
cat >"$M/bin/zranlib" <<EOF
#!/bin/sh
exec "$zig" ranlib "\$@"
EOF
chmod +x "$M/bin/zcc" "$M/bin/zar" "$M/bin/zranlib"
CC=$M/bin/zcc
AR=$M/bin/zar
RANLIB=$M/bin/zranlib
CFLAGS_DEPS="-O2 -g -fPIC"

# 2. The Debian 12 source packages, through apt with a private state (its own sources list with
# the deb-src entries, its own lists and cache under $M/apt: the system's apt is left as it is),
# unpacked by dpkg-source (Debian's patches applied).
PACKAGES=(zlib jansson libyaml elfutils libbpf mbedtls curl libunwind)
apt_dir=$M/apt
apt_opts=(-o "Dir::Etc::SourceList=$apt_dir/sources.list" -o Dir::Etc::SourceParts=/dev/null
          -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache"
          -o Debug::NoLocking=1 -o APT::Sandbox::User=root)
fetch_sources() {
  mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"
  cat >"$apt_dir/sources.list" <<'EOF'
deb-src http://deb.debian.org/debian bookworm main
deb-src http://deb.debian.org/debian bookworm-updates main
deb-src http://deb.debian.org/debian-security bookworm-security main
EOF
  say "fetching the Debian source packages: ${PACKAGES[*]}..."
  apt-get "${apt_opts[@]}" update -qq
  command -v dpkg-source >/dev/null ||
    { say "dpkg-source is missing (dpkg-dev: scripts/install-deps.sh wheel)"; exit 1; }
  for p in "${PACKAGES[@]}"; do
    [ -n "$(ls -d "$SRC/$p"-[0-9]*/ 2>/dev/null)" ] && continue
    # The newest version first; where a mirror lacks it (a security update not yet there), the
    # release's own.
    (cd "$SRC" && { apt-get "${apt_opts[@]}" source --download-only -qq "$p" ||
                    apt-get "${apt_opts[@]}" source --download-only -qq "$p/bookworm"; })
    dsc=$(ls -t "$SRC/${p}"_*.dsc | head -n 1)
    (cd "$SRC" && dpkg-source -x -q "$dsc" >/dev/null 2>&1)
    [ -n "$(ls -d "$SRC/$p"-[0-9]*/ 2>/dev/null)" ] || { say "could not unpack $dsc"; exit 1; }
  done
}
srcdir() { ls -d "$SRC/$1"-[0-9]*/ | head -n 1 | sed 's:/$::'; }
have_sources=1
for p in "${PACKAGES[@]}"; do
  [ -n "$(ls -d "$SRC/$p"-[0-9]*/ 2>/dev/null)" ] || have_sources=0
done
[ "$have_sources" = 1 ] || fetch_sources

# A copy of a source tree to build in (the unpacked one stays clean).
fresh() {
  rm -rf "$WORK/$1"
  cp -a "$(srcdir "$1")" "$WORK/$1"
  echo "$WORK/$1"
}
built() { [ -f "$PREFIX/.built-$1" ]; }
# A step's output goes to $M/log-NAME; where it fails, its end is shown.
failed() {
  say "building $1 failed; the end of $M/log-$1:"
  tail -n 30 "$M/log-$1" >&2
  exit 1
}
mark() { touch "$PREFIX/.built-$1"; }
configure_static() {
  CC=$CC AR=$AR RANLIB=$RANLIB CFLAGS="$CFLAGS_DEPS" CPPFLAGS="-I$PREFIX/include" \
    LDFLAGS="-L$PREFIX/lib" ./configure -q --prefix="$PREFIX" --disable-shared --enable-static \
    --host=x86_64-linux-gnu --build=x86_64-linux-gnu "$@"
}

# 3. The libraries.
if ! built zlib; then
  say "zlib..."
  d=$(fresh zlib)
  (cd "$d" && CC=$CC AR=$AR RANLIB=$RANLIB CFLAGS="$CFLAGS_DEPS" ./configure --static \
     --prefix="$PREFIX" && make -s -j"$JOBS" libz.a && make -s install) >"$M/log-zlib" 2>&1 ||
    failed zlib
  mark zlib
fi

# compile_lib LIB DIR FLAGS FILE...: DIR's FILEs compiled with FLAGS into $PREFIX/lib/LIB (the
# small libraries whose Debian sources carry no generated configure: their own few defines).
compile_lib() {
  local lib=$1 dir=$2 flags=$3
  shift 3
  mkdir -p "$dir/obj"
  printf '%s\n' "$@" | xargs -P "$JOBS" -I{} sh -c \
    'f={}; o=$(basename "${f%.c}").o; exec "$0" $1 -c "$f" -o obj/$o' "$CC" "$CFLAGS_DEPS $flags" \
    >>"$M/log-$lib" 2>&1 || failed "$lib"
  (cd "$dir" && rm -f "$PREFIX/lib/$lib" && "$AR" rcs "$PREFIX/lib/$lib" obj/*.o)
}

if ! built jansson; then
  say "jansson..."
  d=$(fresh jansson)
  sed -e 's/@json_inline@/inline/' -e 's/@json_have_long_long@/1/' \
      -e 's/@json_have_localeconv@/1/' -e 's/@json_have_atomic_builtins@/1/' \
      -e 's/@json_have_sync_builtins@/1/' "$d/src/jansson_config.h.in" >"$d/src/jansson_config.h"
  for def in HAVE_STDINT_H HAVE_FCNTL_H HAVE_UNISTD_H HAVE_SYS_TIME_H HAVE_SYS_TYPES_H \
             HAVE_SYS_STAT_H HAVE_SCHED_H HAVE_SCHED_YIELD HAVE_GETPID HAVE_GETTIMEOFDAY \
             HAVE_CLOSE HAVE_OPEN HAVE_READ USE_URANDOM HAVE_ATOMIC_BUILTINS HAVE_SYNC_BUILTINS; do
    echo "#define $def 1"
  done >"$d/src/jansson_private_config.h"
  (cd "$d" && compile_lib libjansson.a "$d" "-std=gnu99 -Isrc -DHAVE_CONFIG_H=1" src/*.c)
  cp "$d/src/jansson.h" "$d/src/jansson_config.h" "$PREFIX/include/"
  mark jansson
fi

if ! built libyaml; then
  say "libyaml..."
  d=$(fresh libyaml)
  v=$(basename "$(srcdir libyaml)" | sed 's/^libyaml-//')
  IFS=. read -r vmaj vmin vpatch <<<"$v"
  printf '#define YAML_VERSION_%s %s\n' MAJOR "$vmaj" MINOR "$vmin" PATCH "$vpatch" \
    STRING "\"$v\"" >"$d/config.h"
  (cd "$d" && compile_lib libyaml.a "$d" "-I. -Iinclude -DHAVE_CONFIG_H=1 -DYAML_DECLARE_STATIC" \
     src/*.c)
  cp "$d/include/yaml.h" "$PREFIX/include/"
  mark libyaml
fi

if ! built libelf; then
  say "libelf (elfutils' libelf/ only)..."
  d=$(fresh elfutils)
  "$ROOT/scripts/manylinux-libelf.sh" "$d" "$PREFIX" "$CC" "$AR" "$CFLAGS_DEPS" "$JOBS" \
    >"$M/log-libelf" 2>&1 || failed libelf
  mark libelf
fi

if ! built libbpf; then
  say "libbpf..."
  d=$(fresh libbpf)
  mkdir -p "$d/obj"
  # PKG_CONFIG=true: no flags of the system's libelf; -dumpmachine (zig has none) only picks a
  # lib64 directory, which LIBDIR names.
  make -s PKG_CONFIG=true -C "$d/src" -j"$JOBS" BUILD_STATIC_ONLY=1 OBJDIR="$d/obj" DESTDIR= \
    PREFIX="$PREFIX" LIBDIR="$PREFIX/lib" CC="$CC" AR="$AR" \
    CFLAGS="$CFLAGS_DEPS -I$PREFIX/include" install >"$M/log-libbpf" 2>&1 || failed libbpf
  mark libbpf
fi

if ! built mbedtls; then
  say "mbedtls..."
  d=$(fresh mbedtls)
  make -s -C "$d/library" -j"$JOBS" CC="$CC" AR="$AR" CFLAGS="$CFLAGS_DEPS" \
    libmbedcrypto.a libmbedx509.a libmbedtls.a >"$M/log-mbedtls" 2>&1 || failed mbedtls
  cp "$d"/library/libmbed{crypto,x509,tls}.a "$PREFIX/lib/"
  cp -r "$d/include/mbedtls" "$d/include/psa" "$PREFIX/include/"
  mark mbedtls
fi

if ! built curl; then
  say "curl (http and https, mbedTLS)..."
  d=$(fresh curl)
  (cd "$d" && configure_static --with-mbedtls="$PREFIX" --without-openssl --without-gnutls \
     --with-zlib="$PREFIX" --without-ca-bundle --without-ca-path --without-ca-fallback \
     --disable-ldap --disable-ldaps --disable-rtsp --disable-dict --disable-telnet \
     --disable-tftp --disable-pop3 --disable-imap --disable-smb --disable-smtp --disable-gopher \
     --disable-mqtt --disable-ftp --disable-file --disable-manual \
     --disable-ntlm --disable-ntlm-wb --disable-tls-srp --disable-netrc \
     --without-libidn2 --without-libpsl --without-brotli --without-zstd --without-nghttp2 \
     --without-nghttp3 --without-ngtcp2 --without-quiche --without-msh3 --without-librtmp \
     --without-libssh2 --without-libssh --without-wolfssh --without-gssapi --without-libgsasl \
     --without-hyper --disable-unix-sockets --enable-threaded-resolver &&
     make -s -j"$JOBS" -C lib && make -s -C lib install && make -s -C include install) \
    >"$M/log-curl" 2>&1 || failed curl
  mark curl
fi

if ! built libunwind; then
  say "libunwind (shared, for the agent's --stacks; no liblzma)..."
  d=$(fresh libunwind)
  (cd "$d" && CC=$CC AR=$AR RANLIB=$RANLIB CFLAGS="-O2 -g" ./configure -q \
     --prefix="$PREFIX/unwind" --host=x86_64-linux-gnu --build=x86_64-linux-gnu \
     --disable-static --enable-shared --disable-minidebuginfo --disable-zlibdebuginfo \
     --disable-coredump --disable-ptrace --disable-setjmp --disable-tests --disable-documentation \
     --disable-cxx-exceptions --disable-debug-frame &&
     make -s -j"$JOBS" -C src && make -s -C src install &&
     make -s install-includeHEADERS install-nodist_includeHEADERS) >"$M/log-libunwind" 2>&1 ||
    failed libunwind
  mark libunwind
fi
rm -rf "$WORK" # the build trees (300 MB): the libraries are installed
# record --native dlopens the system's libunwind-ptrace; it only needs the header's types.
cp "$(srcdir libunwind)/include/libunwind-ptrace.h" "$PREFIX/unwind/include/"

# 4. scry, with the same target, the libraries above linked in statically. Its own build
# directory ($M/scry): the system build under $BUILD is untouched.
say "scry..."
make -s -C "$ROOT" -j"$JOBS" BUILD="$M/scry" CC="$CC" \
  BPF_INC=/usr/include/x86_64-linux-gnu \
  EXTRA_CFLAGS="-isystem $PREFIX/include -isystem $PREFIX/unwind/include" \
  LDLIBS="-L$PREFIX/lib -lbpf -lelf -ljansson -lyaml -lcurl -lmbedtls -lmbedx509 -lmbedcrypto \
          -lz -lpthread -lm -ldl -lrt" \
  "$M/scry/scry" "$M/scry/libscry-agent.so"
# The wheel's copies without their DWARF (the symbol tables stay: names in backtraces and perf);
# the build tree's keep it.
rm -f "$OUT"/*
strip --strip-debug -o "$OUT/scry" "$M/scry/scry"
strip --strip-debug -o "$OUT/libscry-agent.so" "$M/scry/libscry-agent.so"
strip --strip-debug -o "$OUT/libunwind.so.8" "$(readlink -f "$PREFIX/unwind/lib/libunwind.so.8")"

# 5. No symbol of glibc newer than 2.17.
for f in "$OUT"/*; do
  newest=$(objdump -T "$f" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -n 1)
  if [ -n "$newest" ] && [ "$(printf '%s\n2.17\n' "$newest" | sort -V | tail -n 1)" != 2.17 ]; then
    say "$f needs glibc $newest (> 2.17):"
    objdump -T "$f" | grep -E "GLIBC_2\.(1[89]|[2-9][0-9])" >&2
    exit 1
  fi
done
say "built $OUT: scry, libscry-agent.so, libunwind.so.8 (glibc 2.17 symbols at most)"
