#!/usr/bin/env python3
"""fleet_breakeven.py — the wake-latency break-even of autoscaling, as a sweep.

For each wake latency (the chip's power_states.deep_sleep.wake_ms, set per run with
`enpu replay --chip-set`), replay POLICY always on and POLICY+as (autoscaling, idle
instances in deep sleep) on the same trace and rate, and report the SLO attainment of
both, the energy autoscaling saves against the same policy always on, and its wake-ups.
The break-even is the largest wake latency at which autoscaling still holds the SLO
(attainment >= always-on's - 0.1 point) and saves energy; with --rates, one per rate.

  tools/fleet_breakeven.py --enpu build/enpu --store S --cluster C --trace T \\
      [--policy enpu-all] [--fleet +as] [--rates 1,8] [--wake-ms 10,100,...] [--json OUT]

Every number comes from `enpu replay --json`; nothing here models anything.
"""
import argparse
import json
import subprocess
import sys

from policy_names import NAME

WAKES = [10, 100, 1000, 2969, 10000, 30000, 60000, 120000]


def replay(a, rate, wake_ms, fleet):
    cmd = [a.enpu, "replay", "--store", a.store, "--cluster", a.cluster, "--trace", a.trace, "--policy", a.policy,
           "--fleet", fleet, "--rate", str(rate), "--threads", "2", "--json",
           "--chip-set", f"power_states.deep_sleep.wake_ms={wake_ms}"] + a.extra
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"fleet_breakeven: {' '.join(cmd)}: {r.stderr.strip()}")
    return json.loads(r.stdout)["policies"]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    p.add_argument("--enpu", default="build/enpu")
    p.add_argument("--store", required=True)
    p.add_argument("--cluster", required=True)
    p.add_argument("--trace", required=True)
    p.add_argument("--policy", default=NAME["ENPU_ALL"])
    p.add_argument("--fleet", default="+as", help="the autoscaled fleet (+as or @gated+as)")
    p.add_argument("--rates", default="1")
    p.add_argument("--wake-ms", default=",".join(map(str, WAKES)))
    p.add_argument("--json", help="write the sweep here")
    p.add_argument("extra", nargs="*", help="more enpu replay options (after --)")
    a = p.parse_args()
    rows = []
    print(f"{'rate':>6} {'wake ms':>9} {'SLO on %':>9} {'SLO as %':>9} {'saves %':>8} {'wakes':>6}  holds")
    for rate in (float(x) for x in a.rates.split(",")):
        best = None
        for wake in (float(x) for x in a.wake_ms.split(",")):
            runs = replay(a, rate, wake, a.fleet)
            on, auto = runs[a.policy], runs[a.policy + a.fleet]
            save = 1 - auto["energy_j"]["total"] / on["energy_j"]["total"]
            holds = auto["slo_attainment"] >= on["slo_attainment"] - 0.001 and save > 0
            wakes = auto["fleet"]["wakes"]["total"]
            rows.append({"rate": rate, "wake_ms": wake, "slo_on": on["slo_attainment"],
                         "slo_as": auto["slo_attainment"], "saving": save, "wakes": wakes, "holds": holds})
            print(f"{rate:6g} {wake:9g} {100 * on['slo_attainment']:9.3f} {100 * auto['slo_attainment']:9.3f} "
                  f"{100 * save:8.2f} {wakes:6.0f}  {'yes' if holds else 'no'}")
            if holds:
                best = wake
        print(f"  rate {rate:g}: break-even wake latency >= {best:g} ms (the largest tried that holds)"
              if best is not None else f"  rate {rate:g}: no wake latency tried holds")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"policy": a.policy, "fleet": a.fleet, "rows": rows}, f, indent=2)


if __name__ == "__main__":
    main()
