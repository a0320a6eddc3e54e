"""Target for `scry run`'s file filters: its own loop, a helper module in a subdirectory
(run_lib/filter_helper.py) and the json module of the standard library, ~0.5-0.8 s each.

By default the profile holds this file and the helper (both under the program's directory), and
the json time is charged to the line here that called json (the first profiled frame outwards).
--profile-only run_lib keeps the helper alone; --profile-exclude run_lib charges the helper's time
to the line here that called it; --profile-all and --profile-system-libraries add json's files.
"""

import json
import sys

from run_lib import filter_helper

# ~0.8 s each (the json work: ~0.25 s a round). Debian's 3.14/3.15 builds run this loop about
# twice as fast: 9M gave 13 samples there, and the two lines' ratio missed its bar once in a run
# beside a busy loop.
OWN_N = 18_000_000 if sys.version_info < (3, 14) else 40_000_000
HELPER_N = OWN_N
JSON_ROUNDS = 6  # json stays a fifth or more of the run beside the two longer loops


def own_work(n):
    i = 0
    while i < n: i += 1  # @own
    return i


def json_work(rounds):
    doc = {f"key{i}": [i, str(i) * 3, {"x": i * 0.5, "y": None, "z": [True, False]}]
           for i in range(20_000)}
    size = 0
    for _ in range(rounds):
        size += len(json.dumps(json.loads(json.dumps(doc))))  # @json
    return size


def main():
    own_work(OWN_N)  # @call_own
    filter_helper.helper_work(HELPER_N)  # @call_helper
    size = json_work(JSON_ROUNDS)  # @call_json
    print(f"done {size}")


if __name__ == "__main__":
    main()
