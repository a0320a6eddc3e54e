"""Target for `scry run`: a multiprocessing Pool of 4 workers doing pure-Python work in this
file's work() (the line marked `@pool_work`): 8 tasks of ~0.15 s each.

  run_mp_pool.py fork|spawn     the start method

The pool is used the usual way (`with ... Pool(4) as pool: pool.map(...)`), so its workers are
ended by Pool.terminate() (SIGTERM) when the with-block exits. Output is deterministic.
"""

import multiprocessing
import sys

TASK_N = 3_500_000
TASKS = 8


def work(n):
    i = 0
    while i < n: i += 1  # @pool_work
    return i


def main(method):
    ctx = multiprocessing.get_context(method)
    with ctx.Pool(4) as pool:
        results = pool.map(work, [TASK_N] * TASKS, chunksize=1)
    print(f"{method}: {len(results)} tasks, sum {sum(results)}")


if __name__ == "__main__":
    main(sys.argv[1])
