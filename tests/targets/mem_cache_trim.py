"""Ground-truth target for a line's most held at once (issue 27 item 8): a cache that grows,
is trimmed, and grows again.

One line (`@fill`) adds a 2 MiB entry to a global cache an execution, 32 times: the cache
holds 64 MiB. Another line (`@trim`) clears it. The fill line then adds 16 entries again
(32 MiB, held at exit). Between its executions another line (`@stamp`) allocates and frees
1 MiB, as a program's other lines do, so that the sampler sees the fill line's executions
end. So the most the fill line held at once is 64 MiB, while one execution of
it adds 2 MiB (Scalene's n_peak_mb). Entries of a sampling window (1 MiB) or more are
sampled at their size, so the truth holds to within a window.

Each measured line carries an `@name` marker comment (tests/targets/groundtruth.py reads them).

Prints one deterministic line and exits with status 0.
"""

KIB = 1024
CACHE = {}


def fill(first, n):
    for i in range(first, first + n):
        CACHE[i] = bytes(2048 * KIB)  # @fill
        stamp = bytes(1024 * KIB)  # @stamp
        del stamp


def main():
    fill(0, 32)
    top = sum(map(len, CACHE.values()))
    CACHE.clear()  # @trim
    fill(32, 16)
    held = sum(map(len, CACHE.values()))
    return f"cache_trim: {top} bytes at the top, {held} bytes held at the end"


if __name__ == "__main__":
    print(main(), flush=True)
