#!/usr/bin/python3
"""CLI contract test of `enpu op` and `enpu graph --time` : JSON field
names, internal consistency of the numbers, and the exit status and message of bad input.

usage: test_cost_cli.py ENPU_BINARY SOURCE_DIR"""
import sys

from harness import Harness

enpu, src = sys.argv[1], sys.argv[2]
JOB = "jobs/llama3-70b.json"
BUCKET = ("--phase", "decode", "--batch", "1", "--seq", "4096")
PEAK = "34,34,34,34,34"
UNITS = ("sa", "vu", "sram", "hbm", "ici", "fe")
h = Harness(enpu, src)


def op(op_id, plan, *extra):
    return h.run_json("op", JOB, *BUCKET, "--op", str(op_id), "--plan", plan, *extra)


g = h.run_json("graph", JOB, *BUCKET, "--time")
ops = g["ops"]
h.check("graph --time: every op has time_ns and energy_nj > 0",
      all(o["time_ns"] > 0 and o["energy_nj"] > 0 for o in ops))
t = g["totals"]
h.check("graph --time: totals time_ns = sum of op time x multiplicity",
      abs(t["time_ns"] - sum(o["time_ns"] * o["multiplicity"] for o in ops)) <= 1e-9 * t["time_ns"])
h.check("graph --time: totals energy_nj = sum of op energy x multiplicity",
      abs(t["energy_nj"] - sum(o["energy_nj"] * o["multiplicity"] for o in ops))
      <= 1e-9 * t["energy_nj"])
h.check("graph without --time has no time fields",
      "time_ns" not in h.run_json("graph", JOB, *BUCKET)["ops"][0])

ffn = next(o for o in ops if o["name"] == "ffn.gate")  # gate and up are separate by default
r = op(ffn["id"], PEAK, "--pipeline", "nodvfs")
h.check("op: JSON fields", {"time_ns", "energy_nj", "busy_ns", "energy_nj_by_component", "utilization",
                          "fe_stall_ns", "unroll", "sw_depth"} <= set(r), str(sorted(r)))
h.check("op: busy_ns keyed by unit", set(r["busy_ns"]) == set(UNITS), str(r["busy_ns"]))
h.check("op: energy keyed sa/vu/sram/hbm/ici/fe/other",
      set(r["energy_nj_by_component"]) == set(UNITS) | {"other"})
h.check("op nodvfs at peak = graph --time for the same op",
      r["time_ns"] == ffn["time_ns"] and r["energy_nj"] == ffn["energy_nj"],
      f"{r['time_ns']} vs {ffn['time_ns']}")
h.check("op: energy_nj = sum by component", abs(sum(r["energy_nj_by_component"].values())
                                                - r["energy_nj"]) <= 1e-9 * r["energy_nj"])
h.check("op: busy <= time and utilization = busy / time",
      all(r["busy_ns"][u] <= r["time_ns"] * (1 + 1e-12) and
          abs(r["utilization"][u] - r["busy_ns"][u] / r["time_ns"]) < 1e-9 for u in UNITS))
h.check("op: decode gate projection is HBM-bound (HBM utilisation > 90 %)", r["utilization"]["hbm"] > 0.9,
      str(r["utilization"]))
slow = op(ffn["id"], "34,34,34,17,34")
fast = op(ffn["id"], PEAK)
h.check("op: halving the HBM state slows an HBM-bound op", slow["time_ns"] > 1.5 * fast["time_ns"],
      f"{slow['time_ns']} vs {fast['time_ns']}")
for extra in (("--pipeline", "ideal"), ("--domains", "3"), ("--domains", "4", "--hbm", "full")):
    h.check(f"op {' '.join(extra)} runs", op(ffn["id"], "20,20,20,20,20", *extra)["time_ns"] > 0)

# The VU shadow register file (§3.1, §4.5): the norm's dependent VU commands wait for the
# FE round trip without it, forward inside the VU with it.
norm = next(o for o in ops if o["kind"] == "norm")
sh = {n: op(norm["id"], "34,20,34,34,34", "--shadow", str(n)) for n in (0, 4, 32)}
h.check("op --shadow 0 stalls the FE more than the chip's 4 and is no faster",
        sh[0]["fe_stall_ns"] > sh[4]["fe_stall_ns"] and sh[0]["time_ns"] >= sh[4]["time_ns"],
        str({n: (r["fe_stall_ns"], r["time_ns"]) for n, r in sh.items()}))
h.check("op --shadow 32 is no slower than --shadow 4", sh[32]["time_ns"] <= sh[4]["time_ns"])

last = len(ops) - 1
for name, args, code, needle in (
        ("unknown op id names the range", ("--op", "999", "--plan", PEAK), 2, f"0..{last}"),
        ("bad plan names the position", ("--op", "1", "--plan", "34,34,x,34,34"), 2, "position 3 (sram)"),
        ("plan state out of range", ("--op", "1", "--plan", "34,34,34,35,34"), 2, "position 4 (hbm)"),
        ("short plan", ("--op", "1", "--plan", "34,34"), 2, "expected 5"),
        ("nodvfs needs the all-peak plan", ("--op", "1", "--plan", "30,34,34,34,34", "--pipeline",
                                            "nodvfs"), 2, "peak"),
        ("gated unit with work", ("--op", "1", "--plan", "34,0,34,34,34"), 1, "gated"),
        ("missing --plan is a usage error", ("--op", "1"), 2, "--plan"),
        ("unknown pipeline is a usage error", ("--op", "1", "--plan", PEAK, "--pipeline", "x"), 2,
         "--pipeline"),
        ("more shadow registers than the chip's vregs", ("--op", "1", "--plan", PEAK, "--shadow", "33"), 1,
         "32 vector registers"),
        ("bad domain count is a usage error", ("--op", "1", "--plan", PEAK, "--domains", "2"), 2,
         "--domains")):
    p = h.run("op", JOB, *BUCKET, *args)
    h.check(f"op error: {name}", p.returncode == code and needle in p.stderr,
          f"exit {p.returncode}: {p.stderr.strip()[:200]}")

h.finish()
