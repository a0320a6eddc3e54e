"""Ground-truth target for `scry dump`: known leaks (tests/targets/heap_leaks.py), an unreachable
reference cycle (the GC is disabled so it stays), a local in main(), then one JSON line:

  ready, pid, python        as every target prints them
  gc_count                  len(gc.get_objects()) + gc.get_freeze_count(), taken last, when
                            nothing else will be allocated before the dump
  truths                    retained bytes per holder (heap_leaks.truths())
  addresses                 id() of objects the test looks up: holders and samples
  sizes                     {address: sys.getsizeof} of one object of many kinds
  main_line                 the line main() waits on

Commands on stdin: `stop` prints {"done": true} and exits 0; EOF does the same.
Arguments: --scale N multiplies the cache (for benchmarks: --scale 100 gives ~1M objects).
"""

import gc
import json
import os
import sys
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import heap_leaks  # noqa: E402
from groundtruth import marker_lines  # noqa: E402


def sample_objects():
    """One object per kind, kept alive in SAMPLES, for the size comparison."""
    class Plain:
        pass

    class WithDict:
        pass

    class Slotted:
        __slots__ = ("a",)

    p = Plain()
    p.x = 1
    d = WithDict()
    d.y = 2
    d.__dict__  # materialize the dict
    s = Slotted()
    s.a = "slot"

    def closure():
        v = [1]

        def inner():
            return v
        return inner

    def gen():
        yield 1

    g = gen()
    inner = closure()
    samples = {
        "empty_dict": {},
        "small_dict": {"a": 1, "b": 2},
        "int_key_dict": {i: i for i in range(50)},
        "big_dict": {f"k{i}": i for i in range(1000)},
        "instance": p,
        "instance_with_dict": d,
        "instance_dict": d.__dict__,
        "slots_instance": s,
        "class": Plain,
        "function": closure,
        "closure": inner,
        "cell": inner.__closure__[0],
        "module": types,
        "str_ascii": "abc" + str(os.getpid()),
        "str_latin1": "caf\xe9" + str(os.getpid()),
        "str_ucs2": "\u20ac" + str(os.getpid()),
        "str_ucs4": "\U0001f600" + str(os.getpid()),
        "bytes": b"xyz" * 100,
        "bytearray": bytearray(b"abc"),
        "big_int": 10 ** 40,
        "neg_int": -(2 ** 70),
        "float": 1.5 + os.getpid(),
        "tuple": (1, 2, "three"),
        "list": [1, 2, 3, 4, 5],
        "set": {1, 2, 3},
        "big_set": set(range(100)),
        "frozenset": frozenset({"a", "b"}),
        "generator": g,
        "bound_method": heap_leaks.Session("u", b"").__init__,
        "code": closure.__code__,
        "static_type": int,
        "none": None,
        "true": True,
        "exception": ValueError("boom"),
    }
    return samples


SAMPLES = sample_objects()


def make_orphan_cycle():
    a, b = [], []
    a.append(b)
    b.append(a)


def main():
    gc.disable()
    scale = 1
    if "--scale" in sys.argv:
        scale = int(sys.argv[sys.argv.index("--scale") + 1])
    heap_leaks.build(n_cache=10000 * scale)
    make_orphan_cycle()
    local_buf = bytearray(12345)
    truths = heap_leaks.truths()
    addresses = {name: id(getattr(heap_leaks, name)) for name in
                 ("CACHE", "LISTENERS", "REPORT", "POINTS", "GEN", "CYCLE", "CONFIG")}
    addresses["local_buf"] = id(local_buf)
    addresses["heap_leaks_module"] = id(heap_leaks)
    addresses["first_session"] = id(heap_leaks.CACHE["user:0"])
    addresses["first_payload"] = id(heap_leaks.CACHE["user:0"].payload)
    addresses["gen_buf"] = id(heap_leaks.GEN.gi_frame.f_locals["buf"])
    addresses["first_point"] = id(heap_leaks.POINTS[0])
    addresses["first_listener"] = id(heap_leaks.LISTENERS[0])
    sizes = {str(id(v)): [k, sys.getsizeof(v)] for k, v in SAMPLES.items()}
    head = json.dumps({"ready": True, "pid": os.getpid(),
                       "python": "%d.%d" % sys.version_info[:2], "truths": truths,
                       "addresses": addresses, "sizes": sizes,
                       "main_line": marker_lines(__file__)["wait"][0]})
    # Nothing tracked by the GC is made from here until the dump: the count is exact.
    gc_count = len(gc.get_objects()) + gc.get_freeze_count()
    sys.stdout.write(head[:-1] + ', "gc_count": ' + str(gc_count) + "}\n")
    sys.stdout.flush()
    # os.read, not sys.stdin.readline: a buffered read keeps a memoryview and its managed
    # buffer (both GC-tracked) alive while it blocks, which the dump would count.
    pending = b""
    while b"stop" not in pending:
        chunk = os.read(0, 4096)  # @wait
        if not chunk:
            break
        pending += chunk
    print(json.dumps({"done": True, "local_buf": len(local_buf)}), flush=True)


if __name__ == "__main__":
    main()
