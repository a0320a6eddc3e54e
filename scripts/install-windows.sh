#!/usr/bin/env bash
# Installs what the Windows tests need, and does nothing when it is already there:
#   - Debian's mingw-w64 cross compiler (x86_64-w64-mingw32-gcc) and Wine 8 (wine64);
#   - the official Windows CPython 3.13.5 (MSVC build) from Maven Central's
#     org.bytedeco:cpython:3.13.5-1.5.12:jar:windows-x86_64, unpacked into
#     $SCRY_WINDOWS_PYTHON_DIR (default /opt/scry-windows/python3.13, python.exe at its top);
#   - a Wine prefix ($SCRY_WINEPREFIX, default /opt/scry-windows/wineprefix), created by a first
#     start of that python.exe, which is checked to print 1.
# Exits non-zero, saying what is missing, when something cannot be installed: the Windows tests
# then skip with that message.
set -euo pipefail

pydir=${SCRY_WINDOWS_PYTHON_DIR:-/opt/scry-windows/python3.13}
prefix=${SCRY_WINEPREFIX:-/opt/scry-windows/wineprefix}
artifact=org.bytedeco:cpython:3.13.5-1.5.12:jar:windows-x86_64
jar_rel=org/bytedeco/cpython/3.13.5-1.5.12/cpython-3.13.5-1.5.12-windows-x86_64.jar

fail() { echo "install-windows.sh: $*" >&2; exit 1; }

sudo_cmd=()
if [ "$(id -u)" != 0 ]; then sudo_cmd=(sudo); fi

need=()
command -v x86_64-w64-mingw32-gcc >/dev/null || need+=(gcc-mingw-w64-x86-64)
[ -x /usr/lib/wine/wine64 ] || command -v wine64 >/dev/null || need+=(wine64 wine)
command -v unzip >/dev/null || need+=(unzip)
if [ ${#need[@]} -gt 0 ]; then
    "${sudo_cmd[@]}" apt-get update -qq || true
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends \
        "${need[@]}" >/dev/null || fail "could not install ${need[*]} with apt-get"
fi
command -v x86_64-w64-mingw32-gcc >/dev/null || fail "x86_64-w64-mingw32-gcc is missing after install"

wine=$(command -v wine64 || true)
[ -n "$wine" ] || wine=/usr/lib/wine/wine64
[ -x "$wine" ] || fail "wine64 is missing after install"

if [ ! -f "$pydir/python.exe" ] || [ ! -f "$pydir/python313.dll" ]; then
    jar="${HOME}/.m2/repository/$jar_rel"
    if [ ! -f "$jar" ]; then
        command -v mvn >/dev/null || fail "mvn (Maven) is needed to fetch $artifact"
        mvn -q dependency:get -Dartifact="$artifact" -Dtransitive=false \
            || fail "could not fetch $artifact from Maven Central"
    fi
    [ -f "$jar" ] || fail "$jar is missing after mvn dependency:get"
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    unzip -q "$jar" 'org/bytedeco/cpython/windows-x86_64/*' -d "$tmp" || fail "could not unzip $jar"
    src="$tmp/org/bytedeco/cpython/windows-x86_64"
    cp "$src/bin/python.exe" "$src/" # python.exe starts only beside python313.dll
    mkdir -p "$(dirname "$pydir")"
    rm -rf "$pydir.new"
    mv "$src" "$pydir.new"
    rm -rf "$pydir"
    mv "$pydir.new" "$pydir"
fi

mkdir -p "$prefix"
out=$(WINEPREFIX="$prefix" WINEDEBUG=-all "$wine" "$pydir/python.exe" -c "print(1)" 2>&1 | cat) || true
case "$out" in
*1*) ;;
*) fail "wine could not run $pydir/python.exe: $out" ;;
esac
echo "install-windows.sh: Windows CPython 3.13.5 at $pydir runs under $wine (WINEPREFIX=$prefix)"
