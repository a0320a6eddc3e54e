"""The allocation join on issue 27's shapes (docs/allocations.md), over several runs each, on
every installed interpreter: `scry run --heap-at-exit` then `scry analyze --allocations`.

- Buffers grown by realloc (item 2): an array.array('d') filled by append, a bytearray extended
  chunk by chunk. realloc moves such a buffer many times; the agent follows the block (a move
  sample), so the samples of its growth join the buffer where it ends up. Before, each kept the
  address where it was taken: about half the bytes landed "in no object".
- Buffers kept whole (item 11): bytearray(os.urandom(16)) * 4096 kept in a dict, a list of
  bytes(96 * 1024).

The bar is the issue's: the holder's line within 10% of the truth (sys.getsizeof of the holder
and its elements) in 9 runs of 10. Expected spread: the window is 64 KiB and the targets'
loops allocate nearly nothing but the measured buffers, so with stratified points a holder of
4 MB (about 64 windows) is off by about one window, 1.6%, and at most a few windows (its bytes
interleave with the other holder's only at the boundary); the kept shapes' blocks are the window
or more, each counted at its exact size. A run outside 10% is a defect, not chance.
"""

import json
import subprocess

import pytest

from conftest import SCRY, TARGETS, run_scry

FREE_THREADED = True  # run --heap-at-exit works on 3.13t too

SCRIPT = TARGETS / "alloc_grown.py"
WINDOW = 65536
TOLERANCE = 0.10
RUNS = 10
NEEDED = 9  # runs of RUNS within TOLERANCE
HOLDERS = {"array": "['ARR']", "bytearray": "['BUF']", "kept_bytearray": "['KEEP']",
           "kept_bytes": "['LST']"}


def one_run(python, tmp_path, mode, i):
    """The bytes each holder's own line is credited with in one run, and the truth."""
    heap = tmp_path / f"{mode}{i}.heap"
    argv = [str(SCRY), "run", "--no-view", "--python", str(python),
            "--allocation-sampling-window", str(WINDOW), "-o", str(tmp_path / f"{mode}{i}.json"),
            "--heap-at-exit", str(heap), str(SCRIPT), mode]
    cp = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert cp.returncode == 0, cp.stderr
    truth = json.loads(cp.stdout.splitlines()[-1])
    an = run_scry(["analyze", "--allocations", "--top", "12", "--json", str(heap)], timeout=120)
    assert an.returncode == 0, an.stderr
    retainers = json.loads(an.stdout)["top_retainers"]
    got = {}
    for name in truth["bytes"]:
        holder = [r for r in retainers if r["path"].endswith(HOLDERS[name])]
        assert len(holder) == 1, (name, [r["path"] for r in retainers])
        got[name] = sum(a["bytes"] for a in holder[0]["allocations"]
                        if a["file"] == truth["file"] and a["line"] == truth["lines"][name])
    return got, truth["bytes"]


@pytest.mark.parametrize("mode", ["grown", "kept"])
def test_join_within_sampling_error(python_exe, tmp_path, mode):
    within = {}
    seen = []
    for i in range(RUNS):
        got, want = one_run(python_exe, tmp_path, mode, i)
        seen.append({n: round(got[n] / want[n], 3) for n in want})
        for name in want:
            within[name] = within.get(name, 0) + (abs(got[name] - want[name])
                                                  <= TOLERANCE * want[name])
        if min(within.values()) >= NEEDED:
            break  # the bar is met, whatever further runs would give
    for name, n in within.items():
        assert n >= NEEDED, (name, f"{n} runs of {len(seen)} within 10%", seen)
