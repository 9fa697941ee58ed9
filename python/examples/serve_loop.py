#!/usr/bin/python3
"""A serving runtime's batch loop over a request trace, with a plan looked up per batch.

Requests arrive as the trace says (the replay's CSV: TIMESTAMP,ContextTokens,
GeneratedTokens; `enpu trace convert` writes it from other formats). Arrivals within
--window-ms of the first waiting one form a prefill batch (at most --max-batch); after
prefill a request joins the decode pool, where every iteration runs the pool's first
--max-batch requests one token further at their longest KV length, until each has
generated its tokens. Every batch asks the store for its plan at --slack (the plan's
energy is one forward pass's) and the loop sums the energy against NoDVFS's. Lookups are
cached per (phase, batch, seq): a runtime asks once per shape. This is a sketch of where
the lookups go in a loop, not a timing model (`enpu replay` is that).

usage: PYTHONPATH=python python/examples/serve_loop.py STORE TRACE.csv [--policy P]
       [--slack X] [--max-batch N] [--window-ms W] [--requests N] [--json]"""
import argparse
import csv
import datetime as dt
import json
import sys

import enpu_planstore


def read_trace(path, limit):
    rows = []
    with open(path) as f:
        for r in csv.DictReader(f):
            t = dt.datetime.fromisoformat(r["TIMESTAMP"][:26])
            rows.append((t.timestamp(), int(r["ContextTokens"]), int(r["GeneratedTokens"])))
            if limit and len(rows) >= limit:
                break
    return sorted(rows, key=lambda x: x[0])


class Meter:
    """Per-batch plans, cached per shape, and the energy they add up to."""

    def __init__(self, store, policy, slack):
        self.store, self.policy, self.slack, self.cache = store, policy, slack, {}
        self.energy_nj = self.nodvfs_nj = 0.0
        self.batches = {"prefill": 0, "decode": 0}
        self.uncovered = 0

    def run(self, phase, batch, seq):
        key = (phase, batch, seq)
        if key not in self.cache:
            try:
                p = self.store.lookup(phase=phase, batch=batch, seq=seq, slack=self.slack, policy=self.policy,
                                      vfset=False)
                self.cache[key] = (p["energy_nj"], p["e_nodvfs_nj"])
            except enpu_planstore.PlanStoreError as e:
                if e.name not in ("NOT_FOUND", "INFEASIBLE"):
                    raise
                self.cache[key] = None  # no plan for this shape: the runtime runs it at peak
        hit = self.cache[key]
        self.batches[phase] += 1
        if hit is None:
            self.uncovered += 1
            return
        self.energy_nj += hit[0]
        self.nodvfs_nj += hit[1]


def serve(rows, meter, max_batch, window_s):
    waiting, pool, i = [], [], 0
    while i < len(rows) or waiting or pool:
        if not waiting and i < len(rows):
            first = rows[i][0]
            while i < len(rows) and rows[i][0] - first <= window_s and len(waiting) < max_batch:
                waiting.append(rows[i])
                i += 1
        if waiting:
            meter.run("prefill", len(waiting), max(r[1] for r in waiting))
            pool += [[ctx + 1, gen - 1] for _, ctx, gen in waiting]  # prefill emits the first token
            waiting = []
        pool = [r for r in pool if r[1] > 0]
        if pool:
            step = pool[:max_batch]
            meter.run("decode", len(step), max(r[0] for r in step))
            for r in step:
                r[0], r[1] = r[0] + 1, r[1] - 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("store")
    ap.add_argument("trace")
    ap.add_argument("--policy", default="enpu-all")
    ap.add_argument("--slack", default="0.05", help="a fraction (0.05) or a percent with its unit (5%%)")
    ap.add_argument("--max-batch", type=int, default=8)
    ap.add_argument("--window-ms", type=float, default=50.0)
    ap.add_argument("--requests", type=int, default=0, help="the first N requests (0: all)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    try:
        a.slack = enpu_planstore.slack_fraction(a.slack)  # the library's rule, as enpu query's
    except enpu_planstore.PlanStoreError as e:
        ap.error(e.message)
    rows = read_trace(a.trace, a.requests)
    with enpu_planstore.open(a.store) as store:
        meter = Meter(store, a.policy, a.slack)
        serve(rows, meter, a.max_batch, a.window_ms / 1e3)
    out = {"requests": len(rows), "policy": a.policy, "slack": a.slack, "batches": meter.batches,
           "uncovered_batches": meter.uncovered, "lookups": len(meter.cache), "energy_j": meter.energy_nj / 1e9,
           "nodvfs_energy_j": meter.nodvfs_nj / 1e9,
           "savings": 1 - meter.energy_nj / meter.nodvfs_nj if meter.nodvfs_nj else None}
    if a.json:
        print(json.dumps(out, indent=2))
    else:
        print(f"{out['requests']} requests, {meter.batches['prefill']} prefill and {meter.batches['decode']} decode "
              f"batches ({meter.uncovered} without a plan), {len(meter.cache)} distinct lookups")
        print(f"energy {out['energy_j']:.3f} J with {a.policy} at slack {a.slack:g}, "
              f"{out['nodvfs_energy_j']:.3f} J NoDVFS: savings {100 * (out['savings'] or 0):.2f} %")
    return 0


if __name__ == "__main__":
    sys.exit(main())
