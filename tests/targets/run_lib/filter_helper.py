"""Helper module of tests/targets/run_filters.py, in a subdirectory of the program's directory."""


def helper_work(n):
    i = 0
    while i < n: i += 1  # @helper
    return i
