"""Target for `scry run`'s file filters: its own loop, a helper module in a subdirectory
(run_lib/filter_helper.py) and the json module of the standard library, ~0.4 s each.

By default the profile holds this file and the helper (both under the program's directory), and
the json time is charged to the line here that called json (the first profiled frame outwards).
--profile-only run_lib keeps the helper alone; --profile-exclude run_lib charges the helper's time
to the line here that called it; --profile-all and --profile-system-libraries add json's files.
"""

import json

from run_lib import filter_helper

OWN_N = 9_000_000  # ~0.4 s (the json work: ~0.25 s a round)
HELPER_N = 9_000_000
JSON_ROUNDS = 2


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
