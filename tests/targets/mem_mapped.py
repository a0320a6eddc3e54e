"""Ground-truth target for `scry run`'s footprint of anonymous mappings (issue 10, item 3): a
mapping costs the pages that become resident, not its length.

  map       an anonymous mapping of 256 MiB (mmap.mmap(-1, ...)), of which the program touches
            the first 96 MiB (one write per page), kept until the end: 256 MiB allocated by the
            line, 96 MiB more resident

Each measured line carries an `@name` marker comment (tests/targets/groundtruth.py reads them).
Prints one JSON line: {"rss_growth": bytes}, how much VmRSS grew from before the mapping to after
the writes.
"""

import json
import mmap

MB = 1 << 20
PAGE = mmap.PAGESIZE


def rss():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def main():
    before = rss()
    m = mmap.mmap(-1, 256 * MB)  # @map
    for off in range(0, 96 * MB, PAGE):
        m[off] = 1
    print(json.dumps({"rss_growth": rss() - before}))
    return m


if __name__ == "__main__":
    KEPT = main()
