"""Checkpoints (scry_agent_checkpoint / totals / mark_peak) around a known window of work, for
tests/e2e/test_window.py. Run under `scry run`; argv[1] is a private directory for the
checkpoint files. Prints one JSON line of ground truth at the end: each piece's own thread CPU
time (time.thread_time) and what the agent's totals said around the window."""

import ctypes
import json
import os
import sys
import time

lib = ctypes.CDLL(None, use_errno=True)
lib.scry_agent_checkpoint.argtypes = [ctypes.c_char_p]
lib.scry_agent_totals.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
out_dir = sys.argv[1]
MB = 1 << 20


def totals():
    buf = ctypes.create_string_buffer(1024)
    n = lib.scry_agent_totals(buf, 1024)
    assert n > 0, ctypes.get_errno()
    return json.loads(buf.value)


def spin(seconds):
    start = time.thread_time()
    x = 0
    while time.thread_time() - start < seconds:
        for i in range(2000):  # @hot
            x += i * i
    return time.thread_time() - start


def before_window():
    return spin(0.3)  # @before


def after_window():
    return spin(0.3)  # @after


truth = {"before": before_window()}
held = [bytes(MB) for _ in range(10)]  # @held_before
assert lib.scry_agent_mark_peak() == 0
start_totals = totals()
wall_outer = time.monotonic()
assert lib.scry_agent_checkpoint(os.path.join(out_dir, "a.json").encode()) == 0
wall_inner = time.monotonic()
# An existing file is never opened or replaced.
assert lib.scry_agent_checkpoint(os.path.join(out_dir, "a.json").encode()) == -1
window_start = time.thread_time()
kept = [bytearray(MB) for _ in range(100)]  # @window_alloc
truth["window"] = spin(0.5)  # @window
transient = [bytearray(MB) for _ in range(50)]  # @window_transient
del transient
truth["window_thread_total"] = time.thread_time() - window_start
end_totals = totals()
truth["wall_inner"] = time.monotonic() - wall_inner
assert lib.scry_agent_checkpoint(os.path.join(out_dir, "b.json").encode()) == 0
truth["wall_outer"] = time.monotonic() - wall_outer
truth["after"] = after_window()
truth["start_totals"] = start_totals
truth["end_totals"] = end_totals
print(json.dumps(truth))
