"""Ground-truth target for `scry stacks` on a thread that has no threading name.

A thread started with _thread.start_new_thread has no threading.Thread object (it must never
call threading.current_thread(), which would register a "Dummy-N" one), so scry reports its
name as null and the text output omits the `: "<name>"` part. Two threads, both blocked:
  unnamed  park -> Parker.hold -> lock.acquire()        (the line marked `# @unnamed-block`)
  main     <module> -> main -> wait_command -> sys.stdin.readline()
The unnamed thread prints one JSON line with both expected stacks before it blocks; the test
waits for every thread to sleep in the kernel before reading. `stop` on stdin ends it (exit 0).
"""

import _thread
import json
import os
import platform
import sys
import threading  # registers the main thread as "MainThread"; the other stays unnamed
import time

from groundtruth import build_facts, marker_lines, stack_of, wait_asleep

MAIN_IDENT = _thread.get_ident()
MAIN_NATIVE_ID = _thread.get_native_id()
MAIN_ON_LAST_PATH = []  # appended to just before the main thread's loop of blocking reads




MARKERS = marker_lines(__file__)




class Parker:
    def __init__(self):
        self.lock = _thread.allocate_lock()
        self.lock.acquire()
        self.done = _thread.allocate_lock()
        self.done.acquire()

    def hold(self):
        self.announce(sys._getframe())
        self.lock.acquire()  # @unnamed-block
        self.done.release()

    def announce(self, frame):
        # The main thread's frames are walked only once it sleeps in its read (wait_asleep).
        if not wait_asleep([MAIN_NATIVE_ID], lambda: MAIN_ON_LAST_PATH):
            raise SystemExit("unnamed_thread: main thread did not block")
        deadline = time.monotonic() + 20
        while True:
            main = stack_of(sys._current_frames().get(MAIN_IDENT))
            if main and main[0]["line"] in MARKERS["main-block"]:
                break
            if time.monotonic() > deadline:
                raise SystemExit(f"unnamed_thread: main thread did not block: {main}")
            time.sleep(0.01)
        own = stack_of(frame)
        own[0]["line"] = MARKERS["unnamed-block"][0]
        threads = [
            {"name": None, "ident": _thread.get_ident(), "native_id": _thread.get_native_id(),
             "frames": own},
            {"name": threading.main_thread().name, "ident": MAIN_IDENT, "native_id": MAIN_NATIVE_ID,
             "frames": main},
        ]
        print(json.dumps({"ready": True, "pid": os.getpid(),
                          "python_version": platform.python_version(),
                          "executable": sys.executable, "threads": threads,
                          **build_facts()}), flush=True)


def park(parker):
    parker.hold()  # @unnamed-call


def wait_command():
    return sys.stdin.readline()  # @main-block


def main():
    parker = Parker()
    _thread.start_new_thread(park, (parker,))
    MAIN_ON_LAST_PATH.append(True)
    while wait_command().strip() not in ("stop", ""):  # @main-call
        pass
    parker.lock.release()
    parker.done.acquire()
    print(json.dumps({"done": True}), flush=True)


if __name__ == "__main__":
    main()  # @module-call
