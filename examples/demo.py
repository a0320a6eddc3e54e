"""A small program to point scry at: a few named threads doing recognisable work.

    python3 examples/demo.py &
    scry stacks --pid $!

Threads:
  "primes"   counts primes by trial division, forever (busy, holds the GIL most of the time)
  "consumer" waits for jobs in queue.Queue.get (idle), handling one now and then
  main       waits in threading.Event.wait (idle), queueing a job every 5 seconds
It prints its pid once the threads run, and runs until it is killed (Ctrl-C or SIGTERM end it
cleanly).
"""

import os
import queue
import signal
import sys
import threading
import time

stop = threading.Event()


def is_prime(n):
    if n < 2:
        return False
    d = 2
    while d * d <= n:
        if n % d == 0:
            return False
        d += 1
    return True


class PrimeCounter:
    def __init__(self):
        self.found = 0

    def run(self):
        n = 2
        while not stop.is_set():
            if is_prime(n):
                self.found += 1
            n += 1


def consume(jobs):
    while not stop.is_set():
        job = jobs.get()
        if job is None:
            return
        time.sleep(0.01 * job)


def main():
    jobs = queue.Queue()
    threads = [
        threading.Thread(target=PrimeCounter().run, name="primes", daemon=True),
        threading.Thread(target=consume, args=(jobs,), name="consumer", daemon=True),
    ]
    for t in threads:
        t.start()

    def shutdown(signum, frame):
        stop.set()
        jobs.put(None)

    signal.signal(signal.SIGTERM, shutdown)
    signal.signal(signal.SIGINT, shutdown)
    print(f"demo running as pid {os.getpid()}: try `scry stacks --pid {os.getpid()}`",
          flush=True)
    while not stop.wait(timeout=5.0):
        jobs.put(1)  # a short job for the consumer every few seconds
    for t in threads:
        t.join()
    return 0


if __name__ == "__main__":
    sys.exit(main())
