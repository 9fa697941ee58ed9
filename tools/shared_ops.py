#!/usr/bin/env python3
"""How many operator signatures jobs share: what an operator-result cache
(`enpu farm --cache`) saves when they are farmed one after the other on one machine.

For each job, every compiled bucket's per-chip graph (`enpu graph --json`, the graph
signature of each op) gives its set of distinct signatures; an op result's cache key is
that signature with the chip, the cost model version, the policy and the search options,
which the paper jobs share (one chip, the same slacks and options), so two jobs reuse
each other's op results exactly where their signatures are equal (per op policy they
both have). Prints per job its signatures, pairwise shared counts, and for the jobs in
the given order how many a cache finds computed already.

Usage: tools/shared_ops.py [--enpu build/enpu] [--json] JOB..."""
import argparse
import concurrent.futures
import json
import os
import subprocess


def run_json(enpu, *args):
    return json.loads(subprocess.run([enpu, *args, "--json"], capture_output=True, text=True, check=True).stdout)


def signatures(enpu, job):
    """Distinct graph signatures over the job's compiled buckets (feasible, or every
    bucket when the job ignores the capacity)."""
    grid = run_json(enpu, "buckets", job)
    todo = [(phase, b["batch"], b["seq"]) for phase, p in grid["phases"].items() for b in p["buckets"]
            if b.get("feasible", True)]

    def one(bucket):
        phase, batch, seq = bucket
        g = run_json(enpu, "graph", job, "--phase", phase, "--batch", str(batch), "--seq", str(seq))
        return {op["signature"] for op in g["ops"]}

    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        return len(todo), set().union(*pool.map(one, todo))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--enpu", default="build/enpu")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("jobs", nargs="+")
    a = ap.parse_args()
    names = [os.path.splitext(os.path.basename(j))[0] for j in a.jobs]
    found = {n: signatures(a.enpu, j) for n, j in zip(names, a.jobs)}
    sigs = {n: s for n, (_, s) in found.items()}
    seen, order = set(), []
    for n in names:
        order.append({"job": n, "buckets": found[n][0], "signatures": len(sigs[n]),
                      "cached_before": len(sigs[n] & seen)})
        seen |= sigs[n]
    pairs = {f"{x} & {y}": len(sigs[x] & sigs[y]) for i, x in enumerate(names) for y in names[i + 1:]}
    doc = {"jobs": order, "pairs": pairs, "union": len(seen), "sum": sum(len(s) for s in sigs.values())}
    if a.json:
        print(json.dumps(doc, indent=2))
        return
    print("| job | compiled buckets | op signatures | already in the cache (jobs above it) |\n|---|---|---|---|")
    for o in order:
        print(f"| {o['job']} | {o['buckets']} | {o['signatures']} | {o['cached_before']} |")
    print(f"\nall jobs: {doc['sum']} signatures, {doc['union']} distinct")
    for k, v in pairs.items():
        print(f"{k}: {v} shared")


if __name__ == "__main__":
    main()
