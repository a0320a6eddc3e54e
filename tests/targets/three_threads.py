"""Ground-truth target for `scry stacks`: exactly three Python threads parked at known frames.

  busy     Worker.run -> crunch -> a pure-Python loop (the lines marked `# @busy`)
  waiter   wait_for_stop -> Gate.block -> threading.Event.wait -> Condition.wait (blocked)
  main     <module> -> main -> serve -> outer -> outer.<locals>.inner -> sys.stdin.readline()

Once the main and waiter threads are parked (their frames stable and their /proc state
sleeping), the busy thread prints one JSON line with the expected stacks, innermost frame
first, and enters its loop. Stacks are taken as Python itself sees them (sys._current_frames,
f_code.co_qualname, f_lineno), so the stdlib frames (threading.py) are exact for every version.
The busy thread's innermost frame moves between the `# @busy` lines: it is given as a set.

Commands on stdin, one per line:
  count   print {"count": N}, the busy loop's iteration count (to prove it still runs)
  stop    stop the threads, print {"done": true, "count": N} and exit 0
EOF or SIGTERM do the same as `stop`.
"""

import json
import os
import platform
import signal
import sys
import threading
import time

from groundtruth import build_facts, marker_lines, stack_of, thread_state, wait_asleep

STOP = False  # checked by the busy loop on every iteration
COUNT = 0  # the busy loop's iterations
ON_LAST_PATH = set()  # "main", "waiter": set just before the call that thread blocks in
MAIN_IDENT = threading.get_ident()




MARKERS = marker_lines(__file__)


class Stop(Exception):
    """Raised by the SIGTERM handler to leave the main thread's blocking read."""


def on_sigterm(signum, frame):
    raise Stop()




def wait_parked(threads, check, deadline_s=20.0):
    """Waits until every thread in `threads` (ident -> native id) has a stack for which
    check(ident, frames) holds, the same in 5 consecutive samples, and sleeps in the kernel.
    Their frames are walked only once both are asleep on their last path (wait_asleep)."""
    deadline = time.monotonic() + deadline_s
    if not wait_asleep(threads.values(), lambda: ON_LAST_PATH == {"main", "waiter"}, deadline_s):
        raise SystemExit("three_threads: the main and waiter threads did not block")
    previous, same = None, 0
    while time.monotonic() < deadline:
        current = sys._current_frames()
        stacks = {ident: stack_of(current.get(ident)) for ident in threads}
        ok = all(check(ident, stacks[ident]) for ident in threads)
        ok = ok and all(thread_state(native) == "S" for native in threads.values())
        same = same + 1 if ok and stacks == previous else 0
        if same >= 5:
            return stacks
        previous = stacks
        time.sleep(0.01)
    raise SystemExit(f"three_threads: threads did not park: {previous}")


class Gate:
    def __init__(self):
        self.event = threading.Event()

    def block(self):
        self.event.wait()  # @waiter-block


GATE = Gate()


def wait_for_stop():
    ON_LAST_PATH.add("waiter")
    GATE.block()  # @waiter-call


class Worker:
    def __init__(self, waiter, main_native_id):
        self.waiter = waiter
        self.main_native_id = main_native_id

    def run(self):
        crunch(self)  # @busy-call

    def announce(self, loop_frame):
        """Prints the expected stacks of all three threads, once the other two are parked."""

        def check(ident, frames):
            if ident == MAIN_IDENT:
                return frames[0]["line"] in MARKERS["main-block"]
            functions = [f["function"] for f in frames]
            return (functions[:3] == ["Condition.wait", "Event.wait", "Gate.block"]
                    and frames[2]["line"] in MARKERS["waiter-block"])

        stacks = wait_parked({MAIN_IDENT: self.main_native_id,
                              self.waiter.ident: self.waiter.native_id}, check)
        busy = stack_of(loop_frame)
        busy[0]["line"] = None
        busy[0]["lines"] = MARKERS["busy"]
        threads = [
            {"name": "busy", "ident": threading.get_ident(),
             "native_id": threading.get_native_id(), "frames": busy},
            {"name": "waiter", "ident": self.waiter.ident, "native_id": self.waiter.native_id,
             "frames": stacks[self.waiter.ident]},
            {"name": threading.main_thread().name, "ident": MAIN_IDENT,
             "native_id": self.main_native_id, "frames": stacks[MAIN_IDENT]},
        ]
        print(json.dumps({"ready": True, "pid": os.getpid(),
                          "python_version": platform.python_version(),
                          "executable": sys.executable, "threads": threads,
                          **build_facts()}), flush=True)


def crunch(worker):
    global COUNT
    worker.announce(sys._getframe())
    while not STOP:  # @busy
        COUNT += 1  # @busy


def outer():
    def inner():
        return sys.stdin.readline()  # @main-block

    return inner()  # @main-inner-call


def serve():
    while True:
        try:
            command = outer().strip()  # @main-outer-call
        except Stop:
            return
        if command == "count":
            print(json.dumps({"count": COUNT}), flush=True)
        elif command in ("stop", ""):
            return


def main():
    global STOP
    signal.signal(signal.SIGTERM, on_sigterm)
    waiter = threading.Thread(target=wait_for_stop, name="waiter")
    waiter.start()
    busy = threading.Thread(target=Worker(waiter, threading.get_native_id()).run, name="busy")
    busy.start()
    ON_LAST_PATH.add("main")
    try:
        serve()  # @main-serve-call
    except Stop:
        pass
    STOP = True
    GATE.event.set()
    busy.join()
    waiter.join()
    print(json.dumps({"done": True, "count": COUNT}), flush=True)


if __name__ == "__main__":
    main()  # @main-call
