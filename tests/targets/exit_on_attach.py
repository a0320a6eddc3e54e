"""A target that ends during `scry record --pid --memory`'s attach (issue 26 item 7): its main
thread waits in Thread.join (a lock wait, never a safe point: scry stops it, lets it go and
tries again every 10 ms) on a thread that watches the main thread's TracerPid
(/proc/self/status is the main thread's) and calls os._exit(0):
  seized:   as soon as a tracer is attached (scry holds the main thread);
  released: as soon as the first tracer has let it go again (scry is between two tries).
The exit depends on scry's own steps, not on a timer, whatever the machine's load. Prints
{"pid": PID} when it waits."""
import json
import os
import sys
import threading
import time


def tracer():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("TracerPid:"):
                return int(line.split()[1])
    return 0


def watch(mode):
    while not tracer():
        time.sleep(0.0002)
    if mode == "released":
        while tracer():
            time.sleep(0.0002)
    os._exit(0)


watcher = threading.Thread(target=watch, args=(sys.argv[1],), daemon=True)
watcher.start()
print(json.dumps({"pid": os.getpid()}), flush=True)
watcher.join()
