"""Target for `scry run`: runs tests/targets/run_child_work.py in a new Python process
(subprocess.run([sys.executable, ...])), which inherits stdout and stderr, and reports its exit
status. The parent itself only waits.
"""

import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    print("parent: starting the child", flush=True)
    cp = subprocess.run([sys.executable, os.path.join(HERE, "run_child_work.py")])  # @run
    print(f"parent: child exited with {cp.returncode}", flush=True)


if __name__ == "__main__":
    main()
