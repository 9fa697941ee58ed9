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

Every batch is counted. A batch whose bucket has no plan (its compilation failed, or it
does not fit the chips) runs at peak on the nearest larger compiled bucket (the smallest
`ok` bucket with batch and seq at least its own): its energy is that bucket's NoDVFS
energy, in both sums, so it saves nothing ("fallback"). A batch beyond every compiled
bucket has no energy to count ("uncovered"): its count and share are reported, and the
saving is over the covered batches only, with the coverage printed beside it. Coverage
below --min-coverage (default 90 %) is a loud warning on stderr and exit 1.

usage: PYTHONPATH=python python/examples/serve_loop.py STORE TRACE.csv [--policy P]
       [--slack X] [--max-batch N] [--window-ms W] [--requests N] [--min-coverage F]
       [--json]"""
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


KINDS = ("planned", "fallback", "uncovered")


class Meter:
    """Per-batch plans, cached per shape, and the energy they add up to; every batch is
    counted as planned, fallback (at peak on a larger compiled bucket) or uncovered."""

    def __init__(self, store, policy, slack):
        self.store, self.policy, self.slack, self.cache = store, policy, slack, {}
        self.energy_nj = self.nodvfs_nj = 0.0
        self.batches = {"prefill": 0, "decode": 0}
        self.kinds = {ph: dict.fromkeys(KINDS, 0) for ph in self.batches}
        self.ok = {ph: sorted((b["batch"], b["seq"]) for b in store.buckets(policy)
                              if b["phase"] == ph and b["status"] == "ok") for ph in self.batches}

    def _fallback(self, phase, batch, seq):
        """At peak on the nearest larger compiled bucket (the library's padding order:
        smallest batch, then smallest seq): its NoDVFS energy, or None when none is as large."""
        for b, s in self.ok[phase]:
            if b >= batch and s >= seq:
                p = self.store.lookup(phase=phase, batch=b, seq=s, slack=0.0, policy=self.policy, vfset=False)
                return ("fallback", p["e_nodvfs_nj"], p["e_nodvfs_nj"])
        return ("uncovered", 0.0, 0.0)

    def _price(self, phase, batch, seq):
        try:
            p = self.store.lookup(phase=phase, batch=batch, seq=seq, slack=self.slack, policy=self.policy, vfset=False)
            return ("planned", p["energy_nj"], p["e_nodvfs_nj"])
        except enpu_planstore.PlanStoreError as e:
            if e.name not in ("NOT_FOUND", "INFEASIBLE"):
                raise
            return self._fallback(phase, batch, seq)

    def run(self, phase, batch, seq):
        key = (phase, batch, seq)
        if key not in self.cache:
            self.cache[key] = self._price(phase, batch, seq)
        kind, energy_nj, nodvfs_nj = self.cache[key]
        self.batches[phase] += 1
        self.kinds[phase][kind] += 1
        self.energy_nj += energy_nj
        self.nodvfs_nj += nodvfs_nj

    def count(self, kind):
        return sum(k[kind] for k in self.kinds.values())


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
    ap.add_argument("--policy", default=None, help="a policy of the store (default: the store's default, as enpu query)")
    ap.add_argument("--slack", default="0.05", help="a fraction (0.05) or a percent with its unit (5%%)")
    ap.add_argument("--max-batch", type=int, default=8)
    ap.add_argument("--window-ms", type=float, default=50.0)
    ap.add_argument("--requests", type=int, default=0, help="the first N requests (0: all)")
    ap.add_argument("--min-coverage", type=float, default=0.9,
                    help="the share of batches with an energy below which the run fails (exit 1)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    try:
        a.slack = enpu_planstore.slack_fraction(a.slack)  # the library's rule, as enpu query's
    except enpu_planstore.PlanStoreError as e:
        ap.error(e.message)
    rows = read_trace(a.trace, a.requests)
    with enpu_planstore.open(a.store) as store:
        a.policy = a.policy or enpu_planstore.default_policy(store.policies())
        meter = Meter(store, a.policy, a.slack)
        serve(rows, meter, a.max_batch, a.window_ms / 1e3)
    out = report(rows, meter, a)
    if a.json:
        print(json.dumps(out, indent=2))
    else:
        print_text(out, meter, a)
    if out["coverage"] < a.min_coverage:
        print(f"serve_loop.py: WARNING: only {100 * out['coverage']:.2f} % of the batches have an energy "
              f"({out['uncovered_batches']} of {out['total_batches']} beyond every compiled bucket); the saving is "
              f"over the covered {100 * out['coverage']:.2f} % only, below --min-coverage "
              f"{100 * a.min_coverage:g} %: compile larger buckets", file=sys.stderr)
        return 1
    return 0


def report(rows, meter, a):
    total = sum(meter.batches.values())
    covered = total - meter.count("uncovered")
    return {"requests": len(rows), "policy": a.policy, "slack": a.slack, "batches": meter.batches,
            "total_batches": total, "planned_batches": meter.count("planned"),
            "fallback_batches": meter.count("fallback"), "uncovered_batches": meter.count("uncovered"),
            "by_phase": meter.kinds, "coverage": covered / total if total else 1.0,
            "uncovered_share": meter.count("uncovered") / total if total else 0.0,
            "lookups": len(meter.cache), "energy_j": meter.energy_nj / 1e9, "nodvfs_energy_j": meter.nodvfs_nj / 1e9,
            "savings": 1 - meter.energy_nj / meter.nodvfs_nj if meter.nodvfs_nj else None,
            "savings_over": "covered batches (planned, and fallback at NoDVFS)"}


def print_text(out, meter, a):
    print(f"{out['requests']} requests, {meter.batches['prefill']} prefill and {meter.batches['decode']} decode "
          f"batches: {out['planned_batches']} with a plan, {out['fallback_batches']} at peak on a larger compiled "
          f"bucket (its NoDVFS energy), {out['uncovered_batches']} uncovered "
          f"({100 * out['uncovered_share']:.2f} %, beyond every compiled bucket: no energy counted); "
          f"{out['lookups']} distinct lookups")
    saving = "n/a" if out["savings"] is None else f"{100 * out['savings']:.2f} %"
    print(f"energy {out['energy_j']:.3f} J with {a.policy} at slack {a.slack:g}, {out['nodvfs_energy_j']:.3f} J "
          f"NoDVFS: savings {saving} over the covered batches (coverage {100 * out['coverage']:.2f} %)")


if __name__ == "__main__":
    sys.exit(main())
