"""Ground-truth target for `scry run`'s footprint (issue 10, item 3): `import numpy` maps buffers
for its BLAS threads (OpenBLAS: tens of MiB of anonymous mappings) that it never touches, so the
process's resident set grows far less than the address space it maps. The footprint must count
what the import really costs, never more than the resident set grows.

Usage: mem_numpy_import.py [numpy|none]   (none: the same program without the import, a baseline)

Prints one JSON line: {"numpy": bool (imported), "rss_before", "rss_after", "hwm"}: the process's
resident set (VmRSS) just before and after the import line, and its peak (VmHWM) at the end, in
bytes, read from /proc/self/status.
"""

import json
import sys


def status(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def main():
    imported = False
    before = status("VmRSS")
    if sys.argv[1:] != ["none"]:
        try:
            import numpy  # @import_numpy
            imported = numpy is not None
        except ImportError:
            pass
    after = status("VmRSS")
    print(json.dumps({"numpy": imported, "rss_before": before, "rss_after": after,
                      "hwm": status("VmHWM")}))


if __name__ == "__main__":
    main()
