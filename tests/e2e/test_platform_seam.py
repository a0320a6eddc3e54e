"""The platform seam (docs/ARCHITECTURE.md): what depends on the operating system lives in
src/platform/, with each system's implementation in its own subfolder. Linux-only system
headers appear only in files with linux/ in their path, and no file outside src/platform/
branches on the system it is built for."""
import re
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"

LINUX_ONLY = re.compile(
    r"^\s*#\s*include\s*<(sys/ptrace\.h|sys/uio\.h|sys/prctl\.h|sys/syscall\.h|sys/epoll\.h|"
    r"sys/eventfd\.h|sys/signalfd\.h|sys/timerfd\.h|linux/[^>]*|asm/[^>]*)>",
    re.M,
)
SYSTEM_BRANCH = re.compile(r"^\s*#\s*(if|ifdef|ifndef|elif).*\b(__linux__|_WIN32|_WIN64|__APPLE__)\b", re.M)


def sources():
    files = sorted(p for p in SRC.rglob("*") if p.suffix in (".c", ".h"))
    assert len(files) > 100, "the source tree was not found"
    return files


def test_linux_headers_only_under_a_linux_folder():
    offenders = []
    for p in sources():
        rel = p.relative_to(SRC).as_posix()
        if "/linux/" in f"/{rel}":
            continue
        for m in LINUX_ONLY.finditer(p.read_text(errors="replace")):
            offenders.append(f"src/{rel}: <{m.group(1)}>")
    assert not offenders, (
        "Linux-only system headers outside a linux/ folder (put the code behind an interface "
        "in src/platform/):\n" + "\n".join(offenders))


def test_no_system_branches_outside_platform():
    offenders = []
    for p in sources():
        rel = p.relative_to(SRC).as_posix()
        if rel.startswith("platform/"):
            continue
        for m in SYSTEM_BRANCH.finditer(p.read_text(errors="replace")):
            offenders.append(f"src/{rel}: {m.group(0).strip()}")
    assert not offenders, (
        "#if on the operating system outside src/platform/:\n" + "\n".join(offenders))


DECLARED = re.compile(r"^(?!typedef)[a-z_][\w \t\*]*?\b([a-z_][a-z0-9_]*)\s*\([^;{]*\);", re.M)
LISTED = re.compile(r"^ \*\s+[\w \*]*?\b(pf_[a-z0-9_]+)\(", re.M)


def test_every_platform_interface_has_a_linux_implementation():
    """Each function a header of src/platform/ declares (or lists as defined by each system's
    file) is defined under src/platform/linux/."""
    headers = sorted((SRC / "platform").glob("*.h"))
    assert len(headers) >= 5, "src/platform/ has too few interfaces"
    linux = SRC / "platform" / "linux"
    impl = "".join(p.read_text() for p in sorted(linux.iterdir()) if p.suffix in (".c", ".h"))
    missing = []
    for h in headers:
        text = h.read_text()
        names = set(DECLARED.findall(text)) | set(LISTED.findall(text))
        assert names, f"{h.name} declares no function"
        for name in sorted(names):
            if not re.search(rf"\b{name}\s*\([^;]*?\)\s*\{{", impl):
                missing.append(f"{name} ({h.name})")
    assert not missing, "declared in src/platform/ but not defined for Linux:\n" + "\n".join(missing)
