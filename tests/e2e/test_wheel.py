"""The Python package: `make wheel` builds the manylinux2014 wheel (glibc 2.17:
scripts/build-manylinux.sh) once per session; every installed interpreter (3.11-3.15, the
free-threaded 3.13t and Debian's static 3.11) gets a fresh virtual environment with only that
wheel installed (pip --no-index), and
`scry run` and `python -m scry run` from there profile the bundled example (examples/hotspots.py,
copied out of the tree) with nothing of the build tree on PATH: the profile is valid and the
example's pure-Python loop (its two lines) is its hot spot. `scry run` does so with the system's
copies of the libraries the build tree's binary links hidden (a private mount namespace, where one
can be made). The wheel's binaries link nothing beyond glibc (the C libraries are linked in,
curl with mbedTLS alone: no second TLS library, no LDAP, RTMP, SSH, Kerberos, IDN), need no glibc
symbol newer than 2.17, and libunwind (loaded by the agent for --stacks) is the wheel's; `run
--push` to an https server checks its certificate (mbedTLS); the wrappers hand over the exit
status and start scry with SIGPIPE at its default. `pip install .` from the checkout builds a
working package too.

Skips (saying why) when the build tools (scripts/install-deps.sh wheel: pip packages) cannot be
installed; a wheel that does not build, repair or install is a failure."""

import fnmatch
import http.server
import json
import os
import re
import shutil
import ssl
import subprocess
import sys
import threading
import time
import zipfile

import pytest

from conftest import (FREE_THREADED, REPO, SCRY, SUPPORTED, TARGETS, check_profile, file_detail,
                      find_free_threaded, find_pythons, line_entry, preferred_python)

STATIC_PYTHON = "/usr/bin/python3.11"
EXAMPLE = REPO / "examples" / "hotspots.py"
HOT_LINE = "total = (total * 31 + v) & 0xFFFFFFFF"  # the example's pure-Python loop
HOT_LINENO = next(n for n, text in enumerate(EXAMPLE.read_text().splitlines(), 1)
                  if text.strip() == HOT_LINE)
BUILD = SCRY.parent
SLOW_S = 600
FIRST_BUILD_S = 1500  # make wheel on a fresh machine: ziglang, Debian's sources, their build
RUN_S = 120
# What a manylinux wheel may take from the system (auditwheel's policy); everything else that the
# binary or libunwind loads must resolve inside the virtual environment.
SYSTEM_LIBS = {"linux-vdso.so.1", "libc.so.6", "libm.so.6", "libz.so.1", "libpthread.so.0",
               "libdl.so.2", "librt.so.1", "libresolv.so.2", "ld-linux-x86-64.so.2"}
# What the wheel's binaries may link: glibc alone (the rest is linked in statically).
GLIBC_LIBS = {"linux-vdso.so.1", "libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2",
              "librt.so.1", "ld-linux-x86-64.so.2"}
# What the manylinux_2_34 wheel bundled through Debian's libcurl and that scry never used: none of
# it may be in the wheel, under any name.
UNWANTED = ("libldap", "liblber", "librtmp", "libssh", "libgssapi", "libkrb5", "libk5crypto",
            "libgnutls", "libnettle", "libhogweed", "libidn", "libpsl", "libsasl", "libnghttp2",
            "libbrotli", "libzstd", "libssl", "libcrypto", "libunistring", "libp11", "liblzma")
BINARIES = ("scry", "libscry-agent.so", "libunwind.so.8")


def _run(argv, timeout=RUN_S, **kwargs):
    try:
        return subprocess.run([str(a) for a in argv], capture_output=True, text=True,
                              errors="replace", timeout=timeout, **kwargs)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"{' '.join(map(str, argv))} did not finish in {timeout} s: {e.stderr!r}")


def _describe(cp):
    return f"{' '.join(map(str, cp.args))} (rc {cp.returncode})\n{cp.stdout}\n{cp.stderr}"


def _say(config, text):
    """A line on the terminal before a slow step (a minute of silence looks like a hang): past
    pytest's capture, which would hold it until the test ends."""
    capman = config.pluginmanager.getplugin("capturemanager")
    with capman.global_and_fixture_disabled():
        sys.stderr.write(f"\nscry: {text}\n")
        sys.stderr.flush()


@pytest.fixture(scope="session")
def wheel(tmp_path_factory, pytestconfig):
    """The manylinux wheel, made once by `make wheel` from the build SCRY belongs to."""
    env = dict(os.environ, BUILD=str(BUILD), PYTHON=sys.executable)
    _say(pytestconfig, "test_wheel: the wheel's build tools, then the wheel (the first time, 2-3 "
                       "minutes: scripts/build-manylinux.sh builds its libraries)...")
    tools = _run([REPO / "scripts" / "install-deps.sh", "wheel"], timeout=SLOW_S, cwd=REPO,
                 env=env)
    if tools.returncode != 0:
        pytest.skip(f"the wheel's build tools did not install (scripts/install-deps.sh wheel):"
                    f" {tools.stderr.strip()[-600:]}")
    out = tmp_path_factory.mktemp("wheel")
    made = _run(["make", "-C", REPO, f"BUILD={BUILD}", f"WHEEL_DIR={out}", "wheel"],
                timeout=FIRST_BUILD_S)
    assert made.returncode == 0, _describe(made)
    found = list(out.glob("scry-*.whl"))
    assert len(found) == 1, f"make wheel left {found} in {out}"
    whl = found[0]
    assert re.fullmatch(r"scry-[^-]+-py3-none-manylinux2014_x86_64\.manylinux_2_17_x86_64\.whl",
                        whl.name), whl.name
    shown = " ".join(made.stdout.split())  # auditwheel show's verdict, unwrapped
    assert f'{whl.name} is consistent with the following platform tag: "manylinux_2_17_x86_64"' \
        in shown, made.stdout[-3000:]
    names = zipfile.ZipFile(whl).namelist()
    for name in [f"scry/_bin/{b}" for b in BINARIES] + ["scry/__main__.py", "scry/magics.py",
                                                        "scry/_kernel.py"]:
        assert name in names, f"{name} is not in {whl.name}: {names}"
    # Nothing grafted: the binaries link glibc alone.
    assert not [n for n in names if n.startswith("scry.libs/")], names
    for name in names:
        assert not any(lib in os.path.basename(name) for lib in UNWANTED), name
    # The pytest plugin's entry point (docs/pytest.md): installing the wheel registers it.
    assert "scry/pytest_plugin.py" in names, names
    (entry_points,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
    text = zipfile.ZipFile(whl).read(entry_points).decode()
    assert re.search(r"^\[pytest11\]\nscry = scry\.pytest_plugin$", text, re.M), text
    return whl


def _interpreters():
    found = {**find_pythons(), **find_free_threaded()}
    params = [pytest.param(found.get(v), id=v) for v in SUPPORTED + FREE_THREADED]
    return params + [pytest.param(STATIC_PYTHON if os.path.exists(STATIC_PYTHON) else None,
                                  id="static-3.11")]


@pytest.fixture(scope="session")
def venvs(tmp_path_factory, wheel, pytestconfig):
    """venvs(python) -> Path of a fresh virtual environment of that interpreter with the wheel
    installed (made once per interpreter and session)."""
    made = {}

    def make(python):
        if python not in made:
            if _run([python, "-c", "import ensurepip"]).returncode != 0:
                pytest.skip(f"{python} has no ensurepip: it cannot make a virtual environment "
                            f"with pip (Debian: python3-venv)")
            venv = tmp_path_factory.mktemp("venv")
            _say(pytestconfig, f"test_wheel: a virtual environment of {python} with the wheel "
                               f"(10-30 s)...")
            cp = _run([python, "-m", "venv", venv], timeout=SLOW_S)
            assert cp.returncode == 0, _describe(cp)
            cp = _run([venv / "bin" / "pip", "install", "--no-index", "--no-deps",
                       "--disable-pip-version-check", wheel], timeout=SLOW_S)
            assert cp.returncode == 0, _describe(cp)
            made[python] = venv
        return made[python]

    return make


@pytest.fixture(params=_interpreters())
def venv(request, venvs):
    if not request.param:
        pytest.skip(f"Python {request.node.callspec.id} is not installed")
    return venvs(request.param)


def _env(venv, home):
    """The venv's bin first, then the system's: nothing of the build tree or of pyenv."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SCRY", "PYTHON", "LD_", "VIRTUAL_ENV"))}
    env.update(PATH=f"{venv}/bin:/usr/bin:/bin", HOME=str(home))
    assert str(REPO) not in env["PATH"] and str(BUILD) not in env["PATH"]
    return env


def _package_dir(venv):
    (found,) = venv.glob("lib/python3.*/site-packages/scry")
    return found


def _profile_example(argv, venv, tmp_path, options=()):
    """Runs `argv run --no-view -o OUT [options] hotspots.py` (a copy, outside the tree) from the
    venv and returns the checked profile, whose hot spot must be the example's loop (its lines)."""
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    example = work / EXAMPLE.name
    shutil.copy(EXAMPLE, example)
    out = work / "profile.json"
    cp = _run([*argv, "run", "--no-view", "-o", out, *options, example.name], cwd=work,
              env=_env(venv, tmp_path))
    assert cp.returncode == 0, _describe(cp)
    # No warning about the program; one about the machine (oversubscribed: other work held the
    # CPUs) depends on the load, not on the wheel.
    warned = [line for line in cp.stderr.splitlines()
              if "warn" in line and "the machine was oversubscribed" not in line]
    assert not warned, _describe(cp)
    assert cp.stdout == "done: 3 checksums\n", _describe(cp)
    profile = json.loads(out.read_text())
    check_profile(profile)
    detail = file_detail(profile, example)
    assert detail is not None, f"{example} not among the profile's files: {list(profile['files'])}"
    # The loop's Python time is shared between its `for` line and its body, in proportions that
    # are not determined (load moves them): the two lines together are the hot spot, ahead of
    # every other line.
    loop = [HOT_LINENO - 1, HOT_LINENO]
    assert EXAMPLE.read_text().splitlines()[HOT_LINENO - 2].strip().startswith("for v in values:")
    in_loop = sum(e["n_cpu_percent_python"] for e in detail["lines"] if e["lineno"] in loop)
    rest = [e for e in detail["lines"] if e["lineno"] not in loop]
    hot = max(rest, key=lambda e: e["n_cpu_percent_python"], default=None)
    assert hot is None or in_loop > hot["n_cpu_percent_python"], (
        f"line {hot['lineno']} has {hot['n_cpu_percent_python']:.1f}% of Python time, more than "
        f"the loop's lines {loop} together ({in_loop:.1f}%)")
    assert in_loop > 1.0, [line_entry(detail, n) for n in loop]
    return profile


def test_python_m_scry_profiles_the_example(venv, tmp_path):
    profile = _profile_example([venv / "bin" / "python", "-m", "scry"], venv, tmp_path)
    # One version everywhere: the binary's (the profile's), the package's metadata and __version__.
    cp = _run([venv / "bin" / "python", "-c",
               "import scry, importlib.metadata as m; print(scry.__version__, m.version('scry'))"],
              env=_env(venv, tmp_path))
    assert cp.returncode == 0, _describe(cp)
    assert cp.stdout.split() == [profile["version"]] * 2, (cp.stdout, profile["version"])
    # The program ran under the venv's own interpreter (the wrapper's SCRY_PYTHON).
    cp = _run([venv / "bin" / "python", "-c", "import platform; print(platform.python_version())"],
              env=_env(venv, tmp_path))
    assert profile["python_version"] == cp.stdout.strip(), (profile["python_version"], cp.stdout)


def test_kernel_install_runs_the_wheels_package(venv, tmp_path):
    """python -m scry kernel install: the binary runs the package's scry._kernel with the venv's
    interpreter, which (without ipykernel here) says what the kernel needs and writes nothing."""
    cp = _run([venv / "bin" / "python", "-m", "scry", "kernel", "install", "--prefix",
               tmp_path / "prefix"], env=_env(venv, tmp_path))
    assert cp.returncode == 1 and "[not_found]" in cp.stderr, _describe(cp)
    assert f"{venv}/bin/python" in cp.stderr and "pip install ipykernel" in cp.stderr, \
        _describe(cp)
    assert not (tmp_path / "prefix").exists()


def test_start_in_plain_python_finds_the_wheels_agent(venv, tmp_path):
    """scry.start() in a plain run of the venv's python loads the agent from the package's _bin
    and `scry collect` writes the profile when the program ends."""
    work = tmp_path / "plain"
    work.mkdir()
    shutil.copy(TARGETS / "run_control.py", work / "run_control.py")
    env = _env(venv, tmp_path)
    env["SCRY_OUTFILE"] = str(work / "p.json")
    cp = _run([venv / "bin" / "python", "run_control.py", "plain"], cwd=work, env=env)
    assert cp.returncode == 0, _describe(cp)
    for _ in range(100):
        if (work / "p.json").exists():
            break
        time.sleep(0.05)
    profile = json.loads((work / "p.json").read_text())
    check_profile(profile)
    detail = file_detail(profile, work / "run_control.py")
    assert detail is not None, list(profile["files"])
    names = [f["line"] for f in detail["functions"]]
    # Before scry.start(): nothing; after it, the work (and maybe a sample of its wrapper,
    # timed.<locals>.run, listed first by line number, or of what follows): the work has the
    # most time.
    assert "unprofiled" not in names and "profiled" in names, names
    top = max(detail["functions"], key=lambda f: f["n_cpu_percent_python"] + f["n_cpu_percent_c"])
    assert top["line"] == "profiled", detail["functions"]


def _ldd(path):
    cp = _run(["ldd", path])
    assert cp.returncode == 0, _describe(cp)
    libs = {}
    for line in cp.stdout.splitlines():
        m = re.match(r"\s*(\S+)(?: => (\S+))? \(0x", line)
        assert m, f"ldd {path}: unexpected line {line!r}"
        libs[os.path.basename(m.group(1))] = m.group(2) or m.group(1)
    return libs


def test_binaries_need_only_glibc_2_17(venv):
    """Each binary of the installed package links glibc's libraries alone, and asks for no glibc
    symbol version newer than 2.17 (manylinux2014: CentOS 7, RHEL 8, Ubuntu 20.04, Amazon Linux
    2)."""
    package = _package_dir(venv)
    for binary in BINARIES:
        path = package / "_bin" / binary
        libs = _ldd(path)
        assert set(libs) <= GLIBC_LIBS, f"{binary} links {sorted(set(libs) - GLIBC_LIBS)}"
        cp = _run(["objdump", "-T", path])
        assert cp.returncode == 0, _describe(cp)
        versions = {tuple(map(int, v.split("."))) for v in re.findall(r"GLIBC_([0-9.]+)\b",
                                                                      cp.stdout)}
        assert versions and max(versions) <= (2, 17), f"{binary}: {sorted(versions)}"
    # The agent's thread-local block is static TLS (initial-exec): a late dlopen (scry.start())
    # fails unless it fits into glibc's surplus, 1664 bytes shared with every such library.
    cp = _run(["readelf", "-lW", package / "_bin" / "libscry-agent.so"])
    tls = re.search(r"^\s*TLS\s+(?:\S+\s+){4}(0x[0-9a-f]+)", cp.stdout, re.M)
    assert tls and int(tls.group(1), 16) <= 1280, cp.stdout


def test_scry_command_profiles_the_example(venv, tmp_path):
    """`scry run --stacks` of the example from the venv, on a machine without the libraries:
    where a private mount namespace can be made (root), /dev/null is mounted over every system
    library that the build tree's binary or libunwind loads beyond what manylinux allows (libelf,
    jansson, curl and theirs, libunwind, liblzma; those the interpreter itself needs stay): the
    wheel's binary has them linked in."""
    scry = venv / "bin" / "scry"
    assert scry.is_file(), f"the package installed no scry command: {list(venv.glob('bin/*'))}"
    _profile_example([*_hiding_system_libraries(venv), scry], venv, tmp_path,
                     options=["--stacks"])


def _hiding_system_libraries(venv):
    """The argv prefix that runs a command with the system's copies of the bundled libraries
    hidden (checked: the build tree's scry fails under it), or [] where that cannot be done
    (test_libraries_come_from_the_wheel still checks where each library resolves)."""
    if shutil.which("unshare") is None:
        return []
    python = next(venv.glob("bin/python3"))
    keep = set(_ldd(python.resolve()).values())
    # libunwind is no NEEDED entry of anything (the agent dlopens it): hidden by name.
    unwind = _run(["cc", "-print-file-name=libunwind.so.8"]).stdout.strip()
    if not os.path.isabs(unwind):
        pytest.fail(f"cc finds no libunwind.so.8, which the wheel was built with: {unwind!r}")
    hide = {os.path.realpath(unwind)}
    for binary in (SCRY, unwind):
        for name, path in _ldd(binary).items():
            if name not in SYSTEM_LIBS and path not in keep and not path.startswith(str(REPO)):
                hide.add(os.path.realpath(path))
    assert any("libelf" in p for p in hide) and any("libunwind" in p for p in hide), hide
    if _run(["unshare", "-m", "--propagation", "private", "true"]).returncode != 0:
        return []
    mounts = "".join(f"mount --bind /dev/null '{p}' && " for p in sorted(hide))
    hidden = ["unshare", "-m", "--propagation", "private", "sh", "-c", mounts + 'exec "$@"', "sh"]
    cp = _run([*hidden, SCRY, "--version"])
    assert cp.returncode != 0, f"the build tree's scry ran with {sorted(hide)} hidden"
    return hidden


def test_stacks_load_the_bundled_libunwind(venv, tmp_path):
    """--stacks: the agent dlopens libunwind.so.8; its run path ($ORIGIN) finds the wheel's copy
    before the system's, and that copy loads no liblzma (built without it)."""
    program = tmp_path / "maps.py"
    program.write_text(
        "import time\n"
        "end = time.process_time() + 0.2\n"
        "while time.process_time() < end:\n"
        "    pass\n"
        "import json\n"
        "print(json.dumps(sorted({l.split()[-1] for l in open('/proc/self/maps')\n"
        "                         if 'libunwind' in l or 'liblzma' in l})))\n")
    cp = _run([venv / "bin" / "scry", "run", "--stacks", "--no-view", "-o",
               tmp_path / "p.json", program], env=_env(venv, tmp_path))
    assert cp.returncode == 0, _describe(cp)
    mapped = json.loads(cp.stdout)
    package = _package_dir(venv.resolve())
    assert str(package / "_bin" / "libunwind.so.8") in mapped, mapped
    assert all(p.startswith(f"{venv.resolve()}/") for p in mapped), mapped
    assert not any("liblzma" in p for p in mapped), mapped


def test_wrappers_keep_exit_status_and_default_sigpipe(venv, tmp_path):
    """The program's parent is the scry binary: Python's ignored SIGPIPE (and SIGXFSZ) must not
    be inherited by it (and from it by what it runs); the program's exit status comes back."""
    program = tmp_path / "parent.py"
    program.write_text(
        "import json, os, sys\n"
        "status = open(f'/proc/{os.getppid()}/status').read().splitlines()\n"
        "print(json.dumps([l.split()[1] for l in status if l.startswith(('Name:', 'SigIgn:'))]))\n"
        "sys.exit(3)\n")
    for argv in ([venv / "bin" / "scry"], [venv / "bin" / "python", "-m", "scry"]):
        cp = _run([*argv, "run", "--no-view", "-o", tmp_path / "p.json", program],
                  env=_env(venv, tmp_path))
        assert cp.returncode == 3, _describe(cp)
        name, ignored = json.loads(cp.stdout)  # the program's parent's Name and SigIgn
        assert name == "scry", _describe(cp)
        for signo in (13, 25):  # SIGPIPE, SIGXFSZ
            assert not int(ignored, 16) & (1 << (signo - 1)), f"signal {signo} ignored: {ignored}"


class _HttpsIngest:
    """A Pyroscope /ingest stand-in over https on 127.0.0.1 with a self-signed certificate
    (cert.pem: its own CA) for the name localhost (mbedTLS 2.28 matches no IP address in a
    certificate): counts the POSTs that reach it through a completed handshake."""

    def __init__(self, workdir):
        self.cert = workdir / "cert.pem"
        key = workdir / "key.pem"
        cp = _run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                   "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost",
                   "-keyout", key, "-out", self.cert])
        assert cp.returncode == 0, _describe(cp)
        self.paths = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                outer.paths.append(self.path.split("?")[0])
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(self.cert, key)
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.socket = ctx.wrap_socket(self.server.socket, server_side=True)
        self.url = f"https://localhost:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def test_push_over_https(venvs, tmp_path):
    """run --push to an https server, from the wheel (its libcurl: mbedTLS, built without a CA
    path; src/push/tls_ca.c names one): with $SSL_CERT_FILE naming the server's certificate the
    profiles arrive; without it (the system's bundle, which does not hold that certificate) the
    handshake is refused and scry says so: the certificate is checked."""
    if shutil.which("openssl") is None:
        pytest.skip("no openssl command to make the server's certificate")
    venv = venvs(preferred_python())
    server = _HttpsIngest(tmp_path)
    program = tmp_path / "loop.py"
    program.write_text("import time\nend = time.process_time() + 1.5\n"
                       "while time.process_time() < end:\n    pass\n")
    try:
        for trusted in (True, False):
            env = _env(venv, tmp_path)
            if trusted:
                env["SSL_CERT_FILE"] = str(server.cert)
            before = len(server.paths)
            # Untrusted: which bundle was read, where strace can say.
            traced = [] if trusted or not shutil.which("strace") else \
                ["strace", "-f", "-e", "trace=openat", "-o", tmp_path / "trace.txt"]
            cp = _run([*traced, venv / "bin" / "scry", "run", "--no-view", "-o",
                       tmp_path / "p.json", "--push", server.url, "--push-interval", "0.5",
                       program], env=env)
            assert cp.returncode == 0, _describe(cp)
            got = server.paths[before:]
            if trusted:
                assert got and set(got) == {"/ingest"}, (got, cp.stderr)
                assert re.search(r"scry: push: (\d+) of \1 profiles sent to .*, 0 dropped",
                                 cp.stderr), cp.stderr
            else:
                assert got == [], got
                assert re.search(r"scry: push: 0 of \d+ profiles sent to .*dropped \(.*"
                                 r"(certificate|SSL|TLS)", cp.stderr), cp.stderr
                if traced:
                    # The first of tls_ca.h's list that this machine has: Debian's here, RHEL's
                    # on RHEL.
                    bundle = next(p for p in ("/etc/ssl/certs/ca-certificates.crt",
                                              "/etc/pki/tls/certs/ca-bundle.crt")
                                  if os.access(p, os.R_OK))
                    assert f'openat(AT_FDCWD, "{bundle}", O_RDONLY' in \
                        (tmp_path / "trace.txt").read_text(), bundle
    finally:
        server.close()


def test_pip_install_from_the_checkout(wheel, tmp_path):
    """`pip install .` (pip's isolated build of the pinned backend, here from the wheels that
    install-deps.sh downloaded, without the network) builds the package from this tree, and its
    scry runs a program."""
    python = preferred_python()
    venv = tmp_path / "venv"
    cp = _run([python, "-m", "venv", venv], timeout=SLOW_S)
    assert cp.returncode == 0, _describe(cp)
    cp = _run([venv / "bin" / "pip", "install", "--disable-pip-version-check", "--no-cache-dir",
               "--no-index", "--find-links", BUILD / "wheel-venv" / "wheelhouse", "."],
              timeout=SLOW_S, cwd=REPO, env=dict(os.environ, BUILD=str(BUILD)))
    assert cp.returncode == 0, _describe(cp)
    program = tmp_path / "loop.py"
    program.write_text("import time\nend = time.process_time() + 0.3\n"
                       "while time.process_time() < end:\n    pass\n")
    out = tmp_path / "p.json"
    cp = _run([venv / "bin" / "scry", "run", "--no-view", "-o", out, program],
              env=_env(venv, tmp_path))
    assert cp.returncode == 0, _describe(cp)
    profile = json.loads(out.read_text())
    check_profile(profile)
    assert file_detail(profile, program)["lines"], profile


def test_readme_names_the_wheels_path():
    """README.md's `pip install` names the file `make wheel` writes (its default WHEEL_DIR), so
    that the line can be pasted after `make wheel` in a checkout."""
    readme = (REPO / "README.md").read_text()
    pasted = re.search(r"^pip install (\S+\.whl)", readme, re.M).group(1)
    made = _run(["make", "-s", "--no-print-directory", "-C", REPO, "--eval",
                 "print-wheel-dir: ; @echo $(WHEEL_DIR)", "print-wheel-dir"], timeout=60)
    assert made.returncode == 0, _describe(made)
    wheel_dir = made.stdout.strip()
    version = re.search(r'#define SCRY_VERSION "([^"]+)"', (REPO / "src/cli/cli.h").read_text())
    tag = "manylinux2014_x86_64.manylinux_2_17_x86_64"
    name = f"{wheel_dir}/scry-{version.group(1)}-py3-none-{tag}.whl"
    assert fnmatch.fnmatchcase(name, pasted), (pasted, name)
    assert f"The wheel is `{wheel_dir}/scry-VERSION-py3-none-{tag}.whl`" in \
        " ".join(readme.split()), wheel_dir


def test_wrapper_without_its_binary_reports_io_error():
    """The package's sources alone (python/ of the checkout on sys.path: no scry/_bin, as in an
    editable install): `python -m scry` says what is missing, with scry's error code, exits 1;
    `import scry` works and reads the version from the checkout's header."""
    env = dict(os.environ, PYTHONPATH=str(REPO / "python"))
    cp = _run([preferred_python(), "-m", "scry", "--version"], env=env, cwd="/")
    assert cp.returncode == 1, _describe(cp)
    assert cp.stdout == "", _describe(cp)
    missing = REPO / "python" / "scry" / "_bin" / "scry"
    assert cp.stderr.startswith(f"scry: error: cannot run the scry package's binary {missing}: "
                                f"No such file or directory [io_error]\nhint: "), _describe(cp)
    version = re.search(r'#define SCRY_VERSION "([^"]+)"', (REPO / "src/cli/cli.h").read_text())
    cp = _run([preferred_python(), "-c", "import scry; print(scry.__version__)"], env=env, cwd="/")
    assert cp.returncode == 0 and cp.stdout == f"{version.group(1)}\n", _describe(cp)
