"""Buffers grown in place by realloc, and buffers kept whole, for the allocation join
(tests/e2e/test_alloc_grown.py, docs/allocations.md): issue 27's shapes, scaled to a run of a
second or so.

- "grown": an array.array('d') filled by append and a bytearray extended chunk by chunk, each by
  its own line. Their buffers grow by realloc, which moves them: the samples of the growth must
  join the buffer where it ends up, not where each was taken.
- "kept": bytearray(os.urandom(16)) * 4096 kept in a dict, and a list of bytes(96 * 1024), each
  made by its own line.

The loops run over itertools.repeat, which allocates nothing: the marked lines' bytes are nearly
all of the sampled stream, so the sampling error is about one window per holder. Prints one JSON
line: the marked lines and the truth, sys.getsizeof of each holder plus its elements.

    python alloc_grown.py grown|kept [SCALE]
"""
import array
import json
import os
import sys
from itertools import repeat

from alloc_gate import line_of

SCALE = int(sys.argv[2]) if len(sys.argv) > 2 else 1
ARR = array.array("d")
BUF = bytearray()
CHUNK = b"x" * 1000
KEEP = {}
LST = []


def grown():
    for _ in repeat(None, 500_000 * SCALE):
        ARR.append(0.5)  # LINE_ARRAY
    for _ in repeat(None, 4_000 * SCALE):
        BUF.extend(CHUNK)  # LINE_BYTEARRAY
    return {"array": sys.getsizeof(ARR), "bytearray": sys.getsizeof(BUF)}


def kept():
    for i in range(500 * SCALE):
        KEEP[i] = bytearray(os.urandom(16)) * 4096  # LINE_KEPT_BYTEARRAY
    for _ in repeat(None, 250 * SCALE):
        LST.append(bytes(96 * 1024))  # LINE_KEPT_BYTES
    return {"kept_bytearray": sys.getsizeof(KEEP) + sum(sys.getsizeof(v) for v in KEEP.values()),
            "kept_bytes": sys.getsizeof(LST) + sum(sys.getsizeof(v) for v in LST)}


truth = grown() if sys.argv[1] == "grown" else kept()
print(json.dumps({
    "file": os.path.abspath(__file__),
    "lines": {name: line_of(__file__, "LINE_" + name.upper()) for name in truth},
    "bytes": truth,
}), flush=True)
