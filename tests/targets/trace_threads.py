"""Two threads with known time windows, for the timeline exports (tests/e2e/test_export.py).

Thread A runs f() for BUSY seconds, then sleeps BUSY seconds; thread B sleeps BUSY seconds,
then runs g() for BUSY seconds. Each prints its native id and the Unix times (time.time())
of its busy window: `window NAME NATIVE_ID START END`. An optional second argument: seconds to
wait before starting the threads (for `scry record` to attach), after printing `ready`."""
import sys
import threading
import time

BUSY = float(sys.argv[1]) if len(sys.argv) > 1 else 0.4
DELAY = float(sys.argv[2]) if len(sys.argv) > 2 else 0.0


def f():
    end = time.monotonic() + BUSY
    n = 0
    while time.monotonic() < end:
        n += 1
    return n


def g():
    end = time.monotonic() + BUSY
    n = 0
    while time.monotonic() < end:
        n += 1
    return n


def a(out):
    t0 = time.time()
    f()
    t1 = time.time()
    out.append(("A", threading.get_native_id(), t0, t1))
    time.sleep(BUSY)


def b(out):
    time.sleep(BUSY)
    t0 = time.time()
    g()
    t1 = time.time()
    out.append(("B", threading.get_native_id(), t0, t1))


def main():
    if DELAY:
        print("ready", flush=True)
        time.sleep(DELAY)
    out = []
    ta = threading.Thread(target=a, args=(out,), name="worker-a")
    tb = threading.Thread(target=b, args=(out,), name="worker-b")
    ta.start()
    tb.start()
    ta.join()
    tb.join()
    for name, tid, t0, t1 in sorted(out):
        print(f"window {name} {tid} {t0:.6f} {t1:.6f}")


if __name__ == "__main__":
    main()
