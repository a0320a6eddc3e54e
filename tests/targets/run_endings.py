"""Target for `scry run`: ~0.6 s of pure-Python work (the line marked `@work`), output on
stdout and stderr, then one of the ways a program ends:

  normal        returns (exit status 0)
  sys_exit      sys.exit(3)
  os_exit       os._exit(7), with a last print left in Python's stdout buffer (lost, as always)
  exception     an uncaught ValueError raised two calls deep (traceback, exit status 1)
  sigterm_self  os.kill(own pid, SIGTERM) with SIGTERM's default action: killed by signal 15
  sigint_self   os.kill(own pid, SIGINT): KeyboardInterrupt traceback, then killed by signal 2
  wait          sleeps for 60 s in wait(), printing "ready" once the main thread sleeps in the
                kernel (a signal sent on "ready" interrupts the sleep, not the code before it),
                to be killed by whoever reads "ready"
"""

import os
import platform
import signal
import sys
import threading
import time

# ~0.6 s on pyenv's 3.11-3.13; Debian's 3.14/3.15 (optimised builds) run this loop ~1.7x faster,
# and the tests want as many samples from them. The count is fixed (the output, and the value the
# exception mode checks, must be the same in every run) and even. Half of it (~0.29 s on 3.13)
# gave 18-21 samples where 20 are wanted on a loaded machine, whose CPU timers (checked at the
# kernel's ticks) deliver fewer samples than the CPU time holds.
WORK_N = 24_000_000 if sys.version_info < (3, 14) else 40_000_000


def work(n):
    i = 0
    while i < n: i += 1  # @work
    return i


def check_value(value):
    if value % 2 == 0:
        raise ValueError(f"even value: {value}")


def validate(value):
    check_value(value)


# clock_nanosleep and nanosleep: what time.sleep waits in
SLEEP_SYSCALLS = {"x86_64": {"230", "35"}, "aarch64": {"115", "101"}}


def announce_when_sleeping(native_id):
    # A signal sent to the process on "ready" must reach the sleeping main thread: were this
    # thread (still alive then) to take it, Python's handler would only set a flag and the main
    # thread would sleep its 60 s (once in CI: the work line got 0.7% of a 53 s profile).
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    wanted = SLEEP_SYSCALLS.get(platform.machine())
    deadline = time.monotonic() + 30
    while wanted and time.monotonic() < deadline:
        try:
            with open(f"/proc/self/task/{native_id}/syscall", encoding="ascii") as f:
                if f.read().split()[0] in wanted:
                    break
        except OSError:  # /proc/PID/syscall not readable here
            wanted = None
            continue
        time.sleep(0.005)
    else:
        time.sleep(0.5)  # no way to see the sleep: give it time to start
    print("ready", flush=True)


def wait():
    threading.Thread(target=announce_when_sleeping, args=(threading.get_native_id(),),
                     daemon=True).start()
    time.sleep(60)  # @wait


def main(mode):
    print(f"mode {mode}", flush=True)
    total = work(WORK_N)
    print(f"work done: {total}", flush=True)
    print(f"stderr line for {mode}", file=sys.stderr, flush=True)
    if mode == "normal":
        return
    if mode == "sys_exit":
        sys.exit(3)
    if mode == "os_exit":
        print("left in the buffer: os._exit does not flush it")
        os._exit(7)
    if mode == "exception":
        validate(total)
    if mode == "sigterm_self":
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(10)
    if mode == "sigint_self":
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(10)
    if mode == "wait":
        wait()
    print(f"run_endings: mode {mode} did not end the program", file=sys.stderr)
    sys.exit(99)


if __name__ == "__main__":
    main(sys.argv[1])
