"""Ground-truth target for `scry analyze`'s nesting of retainers (tests/e2e/test_analyze.py): a
pandas DataFrame of a million rows held by one global, with a float column (a NumPy block) and a
nullable-integer column (an ExtensionBlock: an IntegerArray of 8 MB of data and 1 MB of mask). The
DataFrame dominates its blocks and their arrays, so none of them may stand beside it as a top
retainer. Prints one ready line {"ready", "pid", "pandas", "df"}: whether pandas imported, and the
DataFrame's address; then waits for "stop" (or EOF) on stdin.
"""

import json
import os
import sys

try:
    import numpy as np
    import pandas as pd
except ImportError:
    np = pd = None

DF = None
if pd is not None:
    n = 1000 * 1000
    DF = pd.DataFrame({"x": np.arange(n, dtype=float),
                       "n": pd.array(np.arange(n), dtype="Int64")})

print(json.dumps({"ready": True, "pid": os.getpid(), "python": sys.version.split()[0],
                  "pandas": pd is not None, "df": id(DF)}), flush=True)
while True:
    # os.read, not sys.stdin.readline: a buffered read keeps objects of its own alive.
    line = os.read(0, 4096)
    if not line or line.strip() == b"stop":
        break
