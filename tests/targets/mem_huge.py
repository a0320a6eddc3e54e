"""Ground-truth target for `scry run`'s memory profile: huge allocations.

  map       an anonymous 4 GiB mapping (mmap.mmap(-1, ...): mmap with MAP_ANONYMOUS, never
            touched, so it costs no RAM): 4096 MiB allocated natively, all of it at once
  unmap     the mapping closed (munmap): 4096 MiB freed
  fail      a bytearray of 2**60 bytes: malloc returns NULL, Python raises MemoryError, and
            nothing is allocated

Each measured line carries an `@name` marker comment (tests/targets/groundtruth.py reads them).
Prints what happened and exits with status 4.
"""

import mmap
import sys
import time

GIB = 1 << 30


def main():
    # The agent marks Python's allocator from a pending call in the interpreter's first
    # milliseconds; what a program allocates before that is start-up (footprint only). This
    # program's whole life is ~15 ms: on a busy machine its mapping came first (once in CI).
    time.sleep(0.1)
    m = mmap.mmap(-1, 4 * GIB)  # @map
    m[0:5] = b"hello"
    print("mapped", len(m), bytes(m[0:5]).decode())
    m.close()  # @unmap
    try:
        bytearray(1 << 60)  # @fail
    except MemoryError:
        print("MemoryError")
    return 4


if __name__ == "__main__":
    sys.exit(main())
