"""scry's version. The one source of truth is the C side's SCRY_VERSION (src/cli/cli.h): the wheel
records it (setup.py reads it with from_header), an installed package reads its metadata, and a
source checkout, where python/ is put on sys.path without installing, reads the header."""

import re
from importlib import metadata
from pathlib import Path

HEADER = Path("src") / "cli" / "cli.h"


def from_header(root):
    """SCRY_VERSION from the header under the source tree `root`."""
    text = (Path(root) / HEADER).read_text(encoding="utf-8")
    m = re.search(r'^#define SCRY_VERSION "([^"]+)"', text, re.M)
    if not m:
        raise RuntimeError(f"{Path(root) / HEADER} defines no SCRY_VERSION")
    return m.group(1)


def version():
    try:
        return metadata.version("scry")
    except metadata.PackageNotFoundError:
        return from_header(Path(__file__).resolve().parents[2])
