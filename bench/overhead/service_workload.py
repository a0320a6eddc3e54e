"""A service-like program for the overhead benchmark (issue 31 item 2): what a small web or batch
service does, as opposed to pyperformance's loops. It parses JSON records into dicts (C parser,
many short-lived dicts and strings), aggregates them per key, formats a text report, and runs a
float loop, ROUNDS times over (default 4, about 1.2 s on the 2-core machine with Python 3.11).

    python service_workload.py [ROUNDS]

Run it bare and under each profiler with farm-bench (pairs A B A B, whole process, start and end
included), e.g.
    farm-bench -n 11 --vs "python3 service_workload.py" -- scry run --no-view -q -o /tmp/p.json service_workload.py
"""
import json
import random
import sys


def records(n, rng):
    return [json.dumps({"id": i, "name": f"user{i}", "score": rng.random(),
                        "tags": ["a", "b", str(i % 7)]}) for i in range(n)]


def aggregate(lines):
    out = {}
    for line in lines:
        r = json.loads(line)
        d = out.setdefault(r["tags"][2], {"n": 0, "s": 0.0})
        d["n"] += 1
        d["s"] += r["score"]
    return out


def report(agg):
    return "\n".join(f"{k}: {v['n']} {v['s']:.3f}" for k, v in sorted(agg.items()))


def floats(n):
    x = 0.0
    for i in range(n):
        x += (i * 0.5) ** 0.5
    return x


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    rng = random.Random(1)
    total = 0
    for _ in range(rounds):
        total += len(report(aggregate(records(60000, rng))))
        floats(600000)
    return total


if __name__ == "__main__":
    main()
