"""`enpu replay --fleet` on the real binary and the synthetic Llama3-70B store of
`test_replay --write-store` (Table 3's nodes, the shipped conv trace): every policy × idle
mode × autoscaling; the energy split (busy, awake idle, sleep, transition, KV) adds up to
each run's energy; autoscaling sleeps and wakes instances, keeps fewer awake and saves
energy; and over a --rates sweep, of the conv trace and of a one-minute 6x burst
(enpu trace burst), it holds the SLO attainment of the same policy always on within
0.1 point at every rate. Bad fleets and chip parameters are refused by name.

usage: test_fleet.py ENPU SOURCE_DIR TEST_REPLAY"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import CLUSTER, TRACE, Harness, synth_store  # noqa: E402

h = Harness(sys.argv[1], sys.argv[2])
test_replay = sys.argv[3]
tmp, store = synth_store(test_replay, "test_fleet_")


def replay(*args):
    return h.run("replay", "--store", store, "--trace", TRACE, "--cluster", CLUSTER, "--threads", "2", *args)


# ---- one rate: every policy x idle mode x autoscaling -----------------------------------
out = os.path.join(tmp, "hour")
r = replay("--fleet", "@gated,+as,@gated+as", "--json", "--out", out, "--windows-only")
h.check("replay --fleet exits 0", r.returncode == 0, r.stderr)
pol = json.loads(r.stdout)["policies"]
bases = ["dvfs-c", "enpu-all", "nodvfs"]
want = sorted(b + f for b in bases for f in ("", "@gated", "+as", "@gated+as"))
h.check("one run per policy x fleet", sorted(pol) == want, sorted(pol))
for name, p in pol.items():
    f = p["fleet"]
    split = f["energy_split_j"]
    total = sum(split[k]["total"] for k in ("busy", "idle", "sleep", "transition")) + split["kv"]
    h.check(f"{name}: busy + idle + sleep + transition + KV = energy", abs(total - p["energy_j"]["total"]) <=
            1e-9 * total, (total, p["energy_j"]["total"]))
    h.check(f"{name}: split busy = busy energy", abs(split["busy"]["total"] - p["busy_energy_j"]["total"]) <=
            1e-9 * total)
    h.check(f"{name}: the fleet it was named for", f["autoscale"] == name.endswith("+as") and
            (f["idle_mode"] == "gated") == ("@gated" in name), f)
    h.check(f"{name}: TTFT/TPOT attainment per SLO class", sorted(f["classes"]) == ["P100", "P33", "P66"] and
            all(0 <= c["ttft_attainment"] <= 1 and 0 <= c["tpot_attainment"] <= 1 for c in f["classes"].values()),
            f["classes"])
for b in bases:
    on, auto, gated = pol[b], pol[b + "+as"], pol[b + "@gated"]
    fo, fa = on["fleet"], auto["fleet"]
    h.check(f"{b}: always on sleeps nothing", fo["energy_split_j"]["sleep"]["total"] == 0 and
            fo["wakes"]["total"] == 0)
    h.check(f"{b}+as: instances slept and woke", fa["sleeps"]["total"] > 0 and fa["wakes"]["total"] > 0 and
            fa["energy_split_j"]["sleep"]["total"] > 0 and fa["energy_split_j"]["transition"]["total"] > 0, fa)
    h.check(f"{b}+as: fewer instance-hours awake, in both pools",
            all(fa["active_instance_s"][ph] < fo["active_instance_s"][ph] for ph in ("prefill", "decode")),
            (fa["active_instance_s"], fo["active_instance_s"]))
    h.check(f"{b}+as: SLO attainment within 0.1 point of always on",
            auto["slo_attainment"] >= on["slo_attainment"] - 0.001, (auto["slo_attainment"], on["slo_attainment"]))
    h.check(f"{b}: gated idle and autoscaling each save energy",
            auto["energy_j"]["total"] < on["energy_j"]["total"] and gated["energy_j"]["total"] <
            on["energy_j"]["total"] and pol[b + "@gated+as"]["energy_j"]["total"] < auto["energy_j"]["total"])
ea, nd = pol["enpu-all@gated+as"], pol["nodvfs"]
print(f"     conv trace 1x: enpu-all@gated+as saves {100 * ea['energy_savings']['total']:.1f} % against nodvfs "
      f"always on ({100 * pol['enpu-all']['energy_savings']['total']:.1f} % enpu-all alone); SLO "
      f"{ea['slo_attainment']:.4f} vs {nd['slo_attainment']:.4f}")

# ---- the report: Figure 22 with the fleet's runs, and the saving split into its parts ------
rep = os.path.join(tmp, "report")
r = h.run("report", store, "--replay", out, "--out", rep)
h.check("report --replay of the fleet exits 0", r.returncode == 0, r.stderr)
md = open(os.path.join(rep, "report.md")).read()
rows = {}
for line in md.splitlines():
    cells = [c.strip() for c in line.strip("|").split("|")]
    if len(cells) == 5 and cells[1].startswith("`enpu-all"):
        rows[cells[0]] = (cells[1].strip("`"), float(cells[3]))
h.check("report: the split's steps for enpu-all", set(rows) >= {"plans", "idle mode gated", "autoscaling", "total"},
        rows)
if "total" in rows:
    steps = rows["plans"][1] + rows["idle mode gated"][1] + rows["autoscaling"][1]
    h.check("report: the steps add up to the total saving, and it is the summary's",
            abs(steps - rows["total"][1]) <= 0.15 and
            abs(rows["total"][1] - 100 * pol["enpu-all@gated+as"]["energy_savings"]["total"]) <= 0.05,
            (rows, pol["enpu-all@gated+as"]["energy_savings"]))
head = open(os.path.join(rep, "replay_energy.dat")).read().splitlines()[:2]
h.check("report: Figure 22 drawn with the fleet's runs beside the plans'",
        all(f" {run}(6)" in " ".join(head) for run in ("enpu-all", "enpu-all+as", "enpu-all@gated+as", "nodvfs")),
        head)

# ---- a load sweep: autoscaling holds the SLO at every rate --------------------------------
r = replay("--policy", "all", "--fleet", "+as", "--rates", "1,4,8", "--json")
h.check("replay --rates --fleet exits 0", r.returncode == 0, r.stderr)
sw = json.loads(r.stdout)
for b in bases:
    on, auto = sw["policies"][b], sw["policies"][b + "+as"]
    for k, rate in enumerate(sw["rates"]):
        h.check(f"rate {rate}: {b}+as SLO attainment >= {b}'s - 0.1 point",
                auto["slo_attainment"][k] >= on["slo_attainment"][k] - 0.001,
                (auto["slo_attainment"][k], on["slo_attainment"][k]))
        h.check(f"rate {rate}: {b}+as saves more than {b} always on", auto["savings"][k] > on["savings"][k],
                (auto["savings"][k], on["savings"][k]))

# ---- a bursty trace (a minute at 6x): the reactive autoscaler still holds the SLO ------------
burst = os.path.join(tmp, "burst.csv")
r = h.run("trace", "burst", os.path.join(h.src, TRACE), "--window", "1860,60,6", "-o", burst)
h.check("enpu trace burst (a minute at 6x) exits 0", r.returncode == 0, r.stderr)
r = h.run("replay", "--store", store, "--trace", burst, "--cluster", CLUSTER, "--threads", "2", "--policy",
          "enpu-all", "--fleet", "+as", "--rates", "1,2,3", "--json")
h.check("burst sweep exits 0", r.returncode == 0, r.stderr)
sw = json.loads(r.stdout)
on, auto = sw["policies"]["enpu-all"], sw["policies"]["enpu-all+as"]
for k, rate in enumerate(sw["rates"]):
    h.check(f"burst, rate {rate}: enpu-all+as SLO attainment >= enpu-all's - 0.1 point",
            auto["slo_attainment"][k] >= on["slo_attainment"][k] - 0.001,
            (auto["slo_attainment"][k], on["slo_attainment"][k]))

# ---- the chip's power states by path, and bad fleets -------------------------------------
slow = replay("--policy", "enpu-all", "--fleet", "+as", "--chip-set", "power_states.deep_sleep.wake_ms=20000",
              "--json")
h.check("--chip-set wake_ms=20000 runs", slow.returncode == 0, slow.stderr)
fs, fd = json.loads(slow.stdout)["policies"]["enpu-all+as"]["fleet"], pol["enpu-all+as"]["fleet"]
h.check("a slower wake costs more transition energy per wake-up",
        fs["energy_split_j"]["transition"]["total"] / fs["wakes"]["total"] >
        fd["energy_split_j"]["transition"]["total"] / fd["wakes"]["total"], (fs, fd))
for args, words in ((("--fleet", "@nap"), "nap"), (("--fleet", "@sleep+as"), "sleep"),
                    (("--chip-set", "power_states.deep_sleep.w=-1"), "power_states.deep_sleep.w"),
                    (("--chip-set", "power_states.nap=1"), "sweepable chip path"),
                    (("--fleet", "+as", "--fleet-params", "hold=1"), "hold"),
                    (("--fleet", "+as", "--fleet-params", "spare=1.5"), "whole numbers")):
    r = replay("--policy", "enpu-all", *args)
    h.check(f"{' '.join(args)}: refused as bad input, saying {words}", r.returncode == 2 and words in r.stderr,
            (r.returncode, r.stderr))
h.finish()
