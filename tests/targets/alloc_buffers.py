"""Containers whose bytes are mostly a native block of their own, for the allocation join of
buffers (tests/e2e/test_alloc_buffers.py, docs/allocations.md): the sampled block is a numpy
array's data, a list's item array, a dict's keys table, a bytearray's buffer or an array.array's
items, never the object itself, and each must still be credited to the line that made it.

Each line marked LINE_<NAME> fills its own module-level holder; LINE_CHURN makes and drops numpy
arrays; LINE_NATIVE mallocs blocks through ctypes and keeps only their addresses (ints): native
memory that no object owns, which the join must leave unmatched and give to that line. The target prints one JSON line: the line numbers and the truth, the sum of
sys.getsizeof of each holder's elements (numpy's counts the data an array owns). Modes as
alloc_caches.py: "gate" or "busygate" print {"pid": PID} and wait for a line on stdin before
anything is filled; "wait" waits for a line on stdin after the JSON line.

    python alloc_buffers.py [gate|busygate] [wait]
"""
import array
import ctypes
import json
import os
import random
import sys

from alloc_gate import gate, line_of

import numpy

rng = random.Random(15)
ARRAYS = []  # numpy arrays that own their data
LISTS = []  # lists of one shared object: all but 72 bytes is the item array
DICTS = []  # dicts of keys made elsewhere (KEYS): all but 64 bytes is the keys table
BLOBS = []  # bytearrays
DOUBLES = []  # array.array('d')
KEYS = tuple(range(10**6, 10**6 + 60_000))
NATIVE = []  # addresses of blocks malloc'd through ctypes: ints, owning nothing
NATIVE_SIZES = (3_000_000, 2_500_000, 4_000_000)


def fill():
    for _ in range(16):
        ARRAYS.append(numpy.ones(rng.randint(150_000, 500_000)))  # LINE_NUMPY
    for _ in range(16):
        LISTS.append([None] * rng.randint(60_000, 160_000))  # LINE_LIST
    for i in range(6):
        DICTS.append(dict.fromkeys(KEYS[: 30_000 + 5_000 * i]))  # LINE_DICT
    for _ in range(16):
        BLOBS.append(bytearray(rng.randint(300_000, 1_500_000)))  # LINE_BYTEARRAY
    for _ in range(8):
        DOUBLES.append(array.array("d", [0.5]) * rng.randint(60_000, 200_000))  # LINE_ARRAY


def native():
    malloc = ctypes.CDLL(None).malloc
    malloc.restype, malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
    for size in NATIVE_SIZES:
        NATIVE.append(malloc(size))  # LINE_NATIVE
    return sum(NATIVE_SIZES)


def churn():
    for _ in range(60):
        tmp = numpy.zeros(500_000)  # LINE_CHURN
        del tmp


gate(sys.argv[1:])
# The first thing after the gate, before any Python function is entered (where the interpreter
# runs pending calls: an agent loaded meanwhile has not run its own yet): still this line's.
FIRST = bytearray(8 << 20)  # LINE_FIRST
fill()
native()
churn()
HOLDERS = {"numpy": ARRAYS, "list": LISTS, "dict": DICTS, "bytearray": BLOBS, "array": DOUBLES,
           "first": [FIRST]}
print(json.dumps({
    "pid": os.getpid(),
    "file": os.path.abspath(__file__),
    "lines": {name: line_of(__file__, "LINE_" + name.upper())
              for name in [*HOLDERS, "churn", "native"]},
    "bytes": {name: sum(sys.getsizeof(x) for x in held) for name, held in HOLDERS.items()},
    "native": sum(NATIVE_SIZES),
}), flush=True)
if "wait" in sys.argv[1:]:
    sys.stdin.readline()
