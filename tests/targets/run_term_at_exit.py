"""Target for `scry run`: children that get SIGTERM as they exit, as a multiprocessing Pool's
workers do when Pool.terminate() races with the sentinels that already told them to stop.

  run_term_at_exit.py N MAX_DELAY_MS

Starts N children one after the other (this interpreter, each under the agent that `scry run`
preloads). Each allocates a little and prints "exiting"; as it reads that line the parent waits
a random 0..MAX_DELAY_MS and sends SIGTERM, which then lands in the child's interpreter exit
(the agent's exit callback drains its samples there) more often than anywhere else. A child
dies of the signal at once, or exits 0 if it was gone first; either way within a second.
Prints one JSON line: {"children": N, "slow": [delays in ms of the children that took longer
than 1 s to die], "codes": [sorted distinct exit statuses]}.
"""

import json
import random
import subprocess
import sys
import time

CHILD = r'''
x = [bytearray(5000) for i in range(5000)]
y = [str(i) * 5 for i in range(50000)]
print("exiting", flush=True)
'''


def main(n, max_delay_ms):
    rng = random.Random(1)
    slow, codes = [], set()
    for _ in range(n):
        child = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE)
        child.stdout.readline()
        delay = rng.uniform(0, max_delay_ms / 1000)
        time.sleep(delay)
        sent = time.monotonic()
        child.terminate()
        codes.add(child.wait())
        child.stdout.close()
        if time.monotonic() - sent > 1.0:
            slow.append(round(delay * 1000, 3))
    print(json.dumps({"children": n, "slow": slow, "codes": sorted(codes)}))


if __name__ == "__main__":
    main(int(sys.argv[1]), float(sys.argv[2]))
