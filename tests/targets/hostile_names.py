"""Target for tests/e2e/test_hardening.py: every name scry can show carries characters that must
never reach a terminal raw. EVIL holds an OSC sequence (it retitles a terminal), a CSI colour,
the one-character C1 CSI (U+009B), a RIGHT-TO-LEFT OVERRIDE, a tab and the noncharacters U+FFFE
and U+FFFF (not allowed in XML); "pwned" marks where it went, so a test can see that the names
did reach the output.

It is in a function's co_name and co_qualname, its co_filename, a thread's name, a class's
__name__, __qualname__ and __module__, a dict key, a local variable's value, and (given as
argv[1] by the test) the command line.

  python hostile_names.py ARG            prints {"ready", "pid", "python"} with a thread blocked
                                         in the evil function, then reads commands:
      grow N    adds N instances of the evil class; prints {"grown": N}
      chain N   keeps a linked chain of N objects (each retains the rest); prints {"chain": N}
      stop      prints {"done": true} and exits 0
  python hostile_names.py --run SECONDS  spins in the evil function for SECONDS, then exits 0
                                         (for `scry run --stacks`)
"""

import json
import os
import sys
import threading
import time

EVIL = "\x1b]0;pwned\x07\x1b[31m\u009b2J\u202eevil\t\ufffe\uffff"

Evil = type("Evil" + EVIL, (), {"__slots__": ("n",)})
Evil.__qualname__ = "Evil" + EVIL
Evil.__module__ = "mod" + EVIL
HOLD = {"key" + EVIL: []}
CHAIN = []


class Node:
    __slots__ = ("next",)


def _blocked(event):
    label = "local" + EVIL  # a local's value (scry stacks --locals)
    event.wait()
    return label


def _spin(seconds):
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < end:
        n += 1
    return n


def _evil(f):
    """f with the evil name and file (co_firstlineno stays: the lines exist)."""
    f.__code__ = f.__code__.replace(co_name="fn" + EVIL, co_qualname="evil" + EVIL + ".fn",
                                    co_filename="/tmp/evil" + EVIL + ".py")
    return f


blocked = _evil(_blocked)
spin = _evil(_spin)


def main():
    if sys.argv[1:2] == ["--run"]:
        spin(float(sys.argv[2]))
        return
    HOLD["key" + EVIL].extend(Evil() for _ in range(50))
    event = threading.Event()
    t = threading.Thread(target=blocked, args=(event,), name="thread" + EVIL, daemon=True)
    t.start()
    print(json.dumps({"ready": True, "pid": os.getpid(),
                      "python": "%d.%d" % sys.version_info[:2]}), flush=True)
    for line in sys.stdin:
        words = line.split()
        if words[:1] == ["grow"]:
            HOLD["key" + EVIL].extend(Evil() for _ in range(int(words[1])))
            print(json.dumps({"grown": int(words[1])}), flush=True)
        elif words[:1] == ["chain"]:
            head = None
            for _ in range(int(words[1])):
                node = Node()
                node.next = head
                head = node
            CHAIN.append(head)
            print(json.dumps({"chain": int(words[1])}), flush=True)
        elif words[:1] == ["stop"]:
            break
    event.set()
    print(json.dumps({"done": True}), flush=True)


if __name__ == "__main__":
    main()
