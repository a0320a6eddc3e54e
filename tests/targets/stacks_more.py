"""Target for tests/e2e/test_stacks_more.py: a process parked in a known state, for
`scry stacks --locals`, `--async`, `--subprocesses` and `--native`.

Modes (argv[1], else $STACKS_MORE_MODE):
  locals  park() holds known locals: count = 12345, label = "hello stacks", items (a list of 3),
          tags (a set of 2), pair (a tuple of 2), big = 2 ** 70, negative = -7, ratio = 0.1,
          long_text (200 characters), blob = b"ab\\x00", nothing = None, flag = True, a cell
          (shared, read by an inner function), note = "api_key=<random>" and
          password = "hunter2-<random>" (the random parts are made at run time, so no code
          constant holds them); it then blocks on stdin.
  async   an event loop with named tasks: "main" awaits "A", A awaits "B" (B waits on a
          future no one sets), "C" sleeps in asyncio.sleep, "G" awaits gather("G1", "G2")
          (both wait on a future no one sets); the loop's thread then blocks.
  parent  spawns a Python child (this file in `child` mode) and a non-Python one (sleep); both
          pids are printed; then blocks on stdin.
  child   blocks on stdin.
  native  blocks inside time.sleep (a C call) under native_outer -> native_inner.

Prints one JSON line: {"ready": true, "pid": ..., "python": "3.X", ...mode facts}; exits on
`stop` (or EOF) on stdin with {"done": true}.
"""

import json
import os
import secrets
import subprocess
import sys
import threading
import time

MODE = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("STACKS_MORE_MODE", "locals")


def say(**facts):
    facts.update(ready=True, pid=os.getpid(), python="%d.%d" % sys.version_info[:2])
    print(json.dumps(facts), flush=True)


def wait_stop():
    for line in sys.stdin:
        if line.strip() == "stop":
            break
    print(json.dumps({"done": True}), flush=True)


def park():
    count = 12345
    label = "hello stacks"
    items = [1, 2, 3]
    tags = {"red", "green"}
    pair = (count, label)
    big = 2 ** 70
    negative = -7
    ratio = 0.1
    long_text = "abcdefghij" * 20
    blob = b"ab\x00"
    nothing = None
    flag = True
    shared = "in a cell"
    note = "api_key=" + secrets.token_hex(12)
    password = "hunter2-" + secrets.token_hex(8)

    def reader():
        return shared

    shown = {"count": count, "label": label, "ratio": ratio, "blob": blob, "nothing": nothing,
             "flag": flag, "negative": negative}
    say(password=password, note=note, line=wait_line(), long_text=long_text,
        reprs={k: repr(v) for k, v in shown.items()},
        types={k: type(v).__name__ for k, v in shown.items()})
    wait_stop()
    return reader, long_text, items, tags, pair, big


def wait_line():
    """The line of park()'s wait_stop() call, as the frame shows it."""
    import inspect
    src, start = inspect.getsourcelines(park)
    return start + next(i for i, s in enumerate(src) if s.strip() == "wait_stop()")


def run_async():
    import asyncio

    async def leaf_b(never):
        await never

    async def middle_a(loop):
        never = loop.create_future()
        task_b = asyncio.get_running_loop().create_task(leaf_b(never), name="B")
        await task_b

    async def sleeper_c():
        await asyncio.sleep(3600)

    async def gathered(never):
        await never

    async def gatherer(loop):
        never = loop.create_future()
        g1 = loop.create_task(gathered(never), name="G1")
        g2 = loop.create_task(gathered(never), name="G2")
        await asyncio.gather(g1, g2)

    async def main_coro():
        loop = asyncio.get_running_loop()
        task_c = loop.create_task(sleeper_c(), name="C")
        loop.create_task(gatherer(loop), name="G")
        task_a = loop.create_task(middle_a(loop), name="A")
        loop.call_later(0.2, ready)
        await task_a
        await task_c

    def ready():
        say()
        threading.Thread(target=stopper, daemon=True).start()

    def stopper():
        wait_stop()
        os._exit(0)

    loop = asyncio.new_event_loop()
    loop.run_until_complete(loop.create_task(main_coro(), name="main"))


def native_inner():
    time.sleep(3600)


def native_outer():
    native_inner()


def main():
    if MODE == "locals":
        park()
    elif MODE == "async":
        run_async()
    elif MODE == "parent":
        child = subprocess.Popen([sys.executable, __file__, "child"], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True)
        child.stdout.readline()
        other = subprocess.Popen(["sleep", "3600"])
        say(child=child.pid, other=other.pid)
        wait_stop()
        child.kill()
        other.kill()
        child.wait()
        other.wait()
    elif MODE == "child":
        say()
        wait_stop()
    elif MODE == "native":
        threading.Thread(target=lambda: (wait_stop(), os._exit(0)), daemon=True).start()
        say()
        native_outer()


if __name__ == "__main__":
    main()
