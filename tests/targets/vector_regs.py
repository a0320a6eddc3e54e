"""The main thread spends its time in a C loop that holds known values in its vector registers
(vector_regs.c, built by the test into the shared library given), for `scry record --pid
--memory`'s injected calls (tests/e2e/test_record_memory.py): prints {"pid": PID}, then runs the
loop in rounds of about 0.2 s for SECONDS (Python runs between rounds: the agent's pending call
gets its turn), then prints {"rounds": N, "broken": B}: B rounds found a register changed.

    python vector_regs.py LIBRARY SECONDS
"""
import ctypes
import json
import os
import sys
import time

lib = ctypes.CDLL(sys.argv[1])
lib.hold_vector_registers.argtypes = [ctypes.c_uint64]
seconds = float(sys.argv[2])
t0 = time.perf_counter()
lib.hold_vector_registers(10_000_000)
turns = max(1, int(10_000_000 * 0.2 / max(time.perf_counter() - t0, 1e-6)))
print(json.dumps({"pid": os.getpid()}), flush=True)
rounds = broken = 0
end = time.monotonic() + seconds
while time.monotonic() < end:
    rounds += 1
    broken += lib.hold_vector_registers(turns) != 1
print(json.dumps({"rounds": rounds, "broken": broken}), flush=True)
