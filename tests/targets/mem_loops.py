"""Ground-truth target for `scry run`'s memory per line in loops (issue 10, item 2): lines of one
loop that keep the same bytes per iteration must be charged the same, whatever the loop's period.
A fixed net-byte threshold charged one line of such a pair 215 MB and the other 4 MB.

Shapes (one per run: mem_loops.py SHAPE [ITERATIONS]):
  one          one line keeps a 90-byte bytes object per iteration
  two          two lines each keep one (the issue's loop)
  three        three lines each keep one
  two_temp     two lines each keep one; the first also makes a 1,000-byte temporary and drops it
               (its allocations peak on that line each iteration: the aliasing case)
  two_large    two lines each keep a 40,000-byte bytes object (Python's allocator hands those to
               malloc), over fewer iterations

Every object is a new bytes object (bytes(n) is a call, never folded into a constant; only
bytes(0) is shared). Kept objects go into preallocated lists, so storing them allocates nothing. Each allocating line
carries an `@name` marker (tests/targets/groundtruth.py reads them).

The truth is measured here, by the interpreter itself, before the measured loop: the same loop
body run a few hundred times under tracemalloc gives each line's bytes per iteration allocated
and kept (tracemalloc counts each object's requested size, as the profile does), checked against
sys.getsizeof of the objects. Prints one JSON line: {"shape", "iterations", "lines": {name:
{"alloc": bytes, "kept": bytes}}}: what each line allocated in the whole run (the calibration's
iterations included) and what it keeps at the end (the measured loop's objects).
"""

import json
import sys
import tracemalloc

SMALL = 57  # sys.getsizeof(bytes(57)) == 90 on 3.11-3.13: 33 bytes of header + 57
TEMP = 967  # a 1,000-byte temporary
LARGE = 40_000 - 33
KEPT = []


def loop_one(n, a, b, c):
    for i in range(n):
        a[i] = bytes(SMALL)  # @one_a


def loop_two(n, a, b, c):
    for i in range(n):
        a[i] = bytes(SMALL)  # @two_a
        b[i] = bytes(SMALL)  # @two_b


def loop_three(n, a, b, c):
    for i in range(n):
        a[i] = bytes(SMALL)  # @three_a
        b[i] = bytes(SMALL)  # @three_b
        c[i] = bytes(SMALL)  # @three_c


def loop_two_temp(n, a, b, c):
    for i in range(n):
        a[i] = bytes(TEMP)[:SMALL]  # @two_temp_a
        b[i] = bytes(SMALL)  # @two_temp_b


def loop_two_large(n, a, b, c):
    for i in range(n):
        a[i] = bytes(LARGE)  # @two_large_a
        b[i] = bytes(LARGE)  # @two_large_b


SHAPES = {"one": (loop_one, ["one_a"], 3_000_000),
          "two": (loop_two, ["two_a", "two_b"], 4_000_000),
          "three": (loop_three, ["three_a", "three_b", "three_c"], 3_000_000),
          "two_temp": (loop_two_temp, ["two_temp_a", "two_temp_b"], 4_000_000),
          "two_large": (loop_two_large, ["two_large_a", "two_large_b"], 4_000)}


def marker_lines():
    """{name: line number} of this file's @markers."""
    out = {}
    with open(__file__) as f:
        for no, text in enumerate(f, 1):
            if "# @" in text:
                out[text.rsplit("# @", 1)[1].strip()] = no
    return out


CALIBRATION = 100  # iterations run under tracemalloc (on the same lines, so they count too)


def per_iteration(loop, names, k=CALIBRATION):
    """Each marked line's bytes per iteration, allocated and kept, by tracemalloc over k
    iterations: allocated from a trace of every allocation, kept from what is still alive."""
    lines = marker_lines()
    want = {lines[name]: name for name in names}
    a, b, c = [None] * k, [None] * k, [None] * k
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    loop(k, a, b, c)
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    kept = {name: 0 for name in names}
    for stat in after.compare_to(before, "lineno"):
        frame = stat.traceback[0]
        if frame.filename == __file__ and frame.lineno in want:
            kept[want[frame.lineno]] += stat.size_diff
    # What each line allocated: what it kept plus its temporaries, whose sizes are known.
    alloc = dict(kept)
    if "two_temp_a" in alloc:
        alloc["two_temp_a"] += k * sys.getsizeof(bytes(TEMP))
    # The objects' own sizes agree with tracemalloc's.
    for name in names:
        obj = a[0] if name.endswith("_a") else b[0] if name.endswith("_b") else c[0]
        assert kept[name] == k * sys.getsizeof(obj), (name, kept[name], sys.getsizeof(obj))
    return {name: (alloc[name] / k, kept[name] / k) for name in names}


def main():
    shape = sys.argv[1]
    loop, names, n = SHAPES[shape]
    if len(sys.argv) > 2:
        n = int(sys.argv[2])
    each = per_iteration(loop, names)
    a, b, c = [None] * n, [None] * n, [None] * n
    KEPT.extend((a, b, c))  # alive until the interpreter ends, after profiling has
    loop(n, a, b, c)
    kept = sum(len(x) for x in a + b + c if x is not None)
    # The calibration's objects were made on the same lines (allocated), and freed since.
    print(json.dumps({"shape": shape, "iterations": n, "payload": kept,
                      "lines": {name: {"alloc": al * (n + CALIBRATION), "kept": ke * n}
                                for name, (al, ke) in each.items()}}))


if __name__ == "__main__":
    main()
