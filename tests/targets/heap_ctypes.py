"""Ground-truth target for the heap walker's C types (`scry dump` of C containers, native buffers
and extension objects): module globals holding a collections.deque of 10 MB of bytes, an
io.BytesIO of 30 MB, an array.array of 16 MB, and, where numpy and pandas import, a numpy array
of 8 MB and a DataFrame of a million rows; smaller C containers whose sizes and references the
test checks one by one; and a `map` object (a C type with no table in the walker) that alone
holds a list, reached only through the walker's conservative scan.

One JSON line when ready:
  ready, pid, python
  numpy, pandas          whether they imported
  deep                   {NAME: retained bytes}: sys.getsizeof's deep total of what NAME alone
                         holds (DataFrame: memory_usage(deep=True).sum())
  objects                {NAME: [id, sys.getsizeof]} of each global the test looks up
  refs                   {NAME: {label: id}}: references the walker must report
Commands on stdin: `stop` prints {"done": true} and exits 0; EOF does the same.
"""

import array
import asyncio
import collections
import functools
import gc
import io
import itertools
import json
import os
import sys

try:
    import numpy as np
except ImportError:
    np = None
try:
    import pandas as pd
except ImportError:
    pd = None

MB = 1 << 20

# Contents from os.urandom: distinct objects, never interned or folded into constants.
DEQUE = collections.deque(os.urandom(1000) for _ in range(10 * 1000))
BIO = io.BytesIO()
for _ in range(30):
    BIO.write(os.urandom(MB))
ARR = array.array("d", range(2 * MB))
MAPPED_LIST = [os.urandom(2000) for _ in range(500)]
MAPPED = map(len, MAPPED_LIST)
# map -> (list_iterator,) -> list_iterator -> the list, as map's and list_iterator's tp_traverse
# see them; the walker has no table for either.
_iters = [r for r in gc.get_referents(MAPPED) if type(r) is tuple][0]
MAPPED_DEEP = (sys.getsizeof(MAPPED) + sys.getsizeof(_iters) + sys.getsizeof(_iters[0]) +
               sys.getsizeof(MAPPED_LIST) + sum(sys.getsizeof(b) for b in MAPPED_LIST))
del MAPPED_LIST, _iters  # now held only through the map object's C fields

OD = collections.OrderedDict((f"k{i}", i * 1000) for i in range(1000))
FACTORY = list
DD = collections.defaultdict(FACTORY, {1: [2]})
PART_ARGS_ITEM = os.urandom(10)
PART = functools.partial(print, PART_ARGS_ITEM, sep="")
CHAIN = itertools.chain([1], [2])
CYCLED = itertools.cycle([os.urandom(8)])
next(CYCLED)  # the first pass keeps the item in `saved`
SIO = io.StringIO()
SIO.write("x" * 100000)
SIO.seek(0)
SIO.read(1)  # reading realizes it: the text moves to the UCS-4 buffer


@functools.lru_cache(maxsize=16)
def cached(n):
    return [n]


cached(1)
FILE = open(sys.executable, "rb", buffering=MB)  # a 1 MiB native read buffer
FILE.read(10)
LOOP = asyncio.new_event_loop()
FUT = LOOP.create_future()
FUT_RESULT = object()
FUT.set_result(FUT_RESULT)

deep = {
    "DEQUE": sys.getsizeof(DEQUE) + sum(sys.getsizeof(b) for b in DEQUE),
    "BIO": sys.getsizeof(BIO),
    "ARR": sys.getsizeof(ARR),
    "MAPPED": MAPPED_DEEP,
}
objects = {name: [id(o), sys.getsizeof(o)] for name, o in
           [("DEQUE", DEQUE), ("BIO", BIO), ("ARR", ARR), ("OD", OD), ("DD", DD), ("PART", PART),
            ("CHAIN", CHAIN), ("CYCLED", CYCLED), ("MAPPED", MAPPED), ("FUT", FUT),
            ("SIO", SIO), ("FILE", FILE)]}
refs = {
    "DD": {".default_factory": id(FACTORY)},
    "PART": {".func": id(print), ".args": id(PART.args), ".keywords": id(PART.keywords)},
    "FUT": {".result": id(FUT_RESULT), ".loop": id(LOOP)},
    "FILE": {".raw": id(FILE.raw)},
    "cached": {".__wrapped__": id(cached.__wrapped__)},
}
objects["cached"] = [id(cached), sys.getsizeof(cached)]
objects["DEQUE[0]"] = [id(DEQUE[0]), sys.getsizeof(DEQUE[0])]  # 1033, 1049 on a free-threaded build
# BytesIO's buffer: a bytes object the walker reports on its own (getsizeof counts it inside).
objects["BIO.buf"] = [None, sys.getsizeof(BIO) - sys.getsizeof(io.BytesIO())]

if np is not None:
    NP = np.ones(MB)  # 8 MB, owned
    NP_VIEW_OWNER = np.arange(1000.0)
    NP_VIEW = NP_VIEW_OWNER[::2]  # a view: counts no data, refers to its owner
    NP_OBJ = np.array([os.urandom(100) for _ in range(50)], dtype=object)
    deep["NP"] = sys.getsizeof(NP)
    for name in ("NP", "NP_VIEW", "NP_VIEW_OWNER", "NP_OBJ"):
        objects[name] = [id(globals()[name]), sys.getsizeof(globals()[name])]
    refs["NP_VIEW"] = {".base": id(NP_VIEW_OWNER)}
    refs["NP_OBJ"] = {"[0]": id(NP_OBJ[0]), "[49]": id(NP_OBJ[49])}
if pd is not None and np is not None:
    n = 1000 * 1000
    DF = pd.DataFrame({"a": np.arange(n, dtype=float), "b": np.arange(n, dtype=np.int64),
                       "c": np.ones(n)})
    deep["DF"] = int(DF.memory_usage(deep=True).sum())
    objects["DF"] = [id(DF), None]  # pandas' __sizeof__ is memory_usage: not a shallow size

print(json.dumps({"ready": True, "pid": os.getpid(), "python": sys.version.split()[0],
                  "numpy": np is not None, "pandas": pd is not None and np is not None,
                  "deep": deep, "objects": objects, "refs": refs}), flush=True)
while True:
    # os.read, not sys.stdin.readline: a buffered read keeps objects of its own alive.
    line = os.read(0, 4096)
    if not line or line.strip() == b"stop":
        break
print(json.dumps({"done": True}), flush=True)
