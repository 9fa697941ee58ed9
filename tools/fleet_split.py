#!/usr/bin/env python3
"""fleet_split.py — split a replay's total energy saving into what the compiled plans,
the idle mode and autoscaling each contribute, from the summary.json of
`enpu replay --policy nodvfs,POLICY --fleet @MODE,+as,@MODE+as --out DIR`.

The split is a chain of runs, each adding one thing to the one before, against NoDVFS
always on: POLICY (plans), POLICY@MODE (idle mode), POLICY@MODE+as (autoscaling).
Attribution depends on the order, so the other order (autoscaling before plans and idle
mode: nodvfs+as, POLICY+as, POLICY@MODE+as) is printed too; every number is a run's.

  tools/fleet_split.py DIR/summary.json [--policy POLICY (default enpu-all)] [--mode gated]
"""
import argparse
import json

from policy_names import NAME

BASE = NAME["NODVFS"]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    p.add_argument("summary")
    p.add_argument("--policy", default=NAME["ENPU_ALL"])
    p.add_argument("--mode", default="gated")
    a = p.parse_args()
    pol = json.load(open(a.summary))["policies"]
    x, m = a.policy, a.mode
    base = pol[BASE]["energy_j"]["total"]
    chains = {
        "plans, then idle mode, then autoscaling": [("plans", x), (f"idle mode {m}", f"{x}@{m}"),
                                                    ("autoscaling", f"{x}@{m}+as")],
        "autoscaling, then plans, then idle mode": [("autoscaling", f"{BASE}+as"), ("plans", f"{x}+as"),
                                                    (f"idle mode {m}", f"{x}@{m}+as")],
    }
    for title, chain in chains.items():
        missing = [run for _, run in chain if run not in pol]
        if missing:
            print(f"{title}: runs missing from the summary: {', '.join(missing)}")
            continue
        print(f"\n{title} (against {BASE} always on, {base / 1e6:.1f} MJ):\n")
        print(f"| step | run | energy MJ | step saves MJ | step saves % of {BASE} | SLO attainment |")
        print("|---|---|---:|---:|---:|---:|")
        prev = base
        for step, run in chain:
            e = pol[run]["energy_j"]["total"]
            print(f"| {step} | `{run}` | {e / 1e6:.1f} | {(prev - e) / 1e6:.1f} | {100 * (prev - e) / base:.1f} | "
                  f"{100 * pol[run]['slo_attainment']:.3f} % |")
            prev = e
        print(f"| total | | {prev / 1e6:.1f} | {(base - prev) / 1e6:.1f} | {100 * (base - prev) / base:.1f} | "
              f"{BASE} {100 * pol[BASE]['slo_attainment']:.3f} % |")


if __name__ == "__main__":
    main()
