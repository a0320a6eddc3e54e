"""Target for tests/e2e/test_run_first_line.py: allocates 64 MiB (one bytearray) in its very first
line of work, imports nothing (run with -S, the interpreter never imports os), and prints the
size. What scry must see: the 64 MiB on the line marked `@first`."""


def first():
    return bytearray(64 << 20)  # @first


print(len(first()))
