#!/usr/bin/python3
"""ONNX Runtime's per-node profile summed by op type: milliseconds per run.

  node bench/ort/ort_run.js MODEL.onnx --bench --threads 1 --iterations 10 --profile /tmp/prof
  /usr/bin/python3 bench/ort/profile_ops.py /tmp/prof_*.json [--top 20]

ort_run.js --profile writes ONNX Runtime's Chrome trace (one JSON list of
events). Each node's kernel time is an event of category "Node" named
"<node>_kernel_time" with its op in args.op_name and its duration in
microseconds; each run is a "model_run" event of category "Session" (the
warm-up runs included). Prints, per op type, the total over all runs divided
by the number of runs, and how many nodes of that type one run executes; set
it beside `kiln-bench --top` to see where the two runtimes differ.
"""

import argparse
import collections
import json
import sys


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("profile", help="the JSON file ort_run.js --profile wrote")
    parser.add_argument("--top", type=int, default=20, help="op types to print")
    args = parser.parse_args()
    try:
        with open(args.profile) as f:
            events = json.load(f)
    except (OSError, ValueError) as err:
        print(f"profile_ops: error: {args.profile}: {err}", file=sys.stderr)
        return 1
    runs = sum(1 for e in events if e.get("cat") == "Session" and e.get("name") == "model_run")
    totals = collections.defaultdict(lambda: [0, 0.0])
    for e in events:
        if e.get("cat") != "Node" or not str(e.get("name", "")).endswith("_kernel_time"):
            continue
        op = e.get("args", {}).get("op_name", "?")
        totals[op][0] += 1
        totals[op][1] += e.get("dur", 0) / 1000.0
    if not runs or not totals:
        print(f"profile_ops: error: {args.profile}: no model runs or node events", file=sys.stderr)
        return 1
    print(f"{runs} runs; ms per run by op type")
    for op, (count, ms) in sorted(totals.items(), key=lambda kv: -kv[1][1])[:args.top]:
        print(f"{op:28s} {ms / runs:9.3f} ms  {count // runs:4d} nodes")
    print(f"{'total':28s} {sum(v[1] for v in totals.values()) / runs:9.3f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
