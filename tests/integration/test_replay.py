"""`enpu replay` on the real binary: the JSON summary contract, conservation read back from
the output CSVs, byte-identical outputs for a seed, safeguard 2 at five times the trace
rate, bad trace rows, usage errors; then a replay of a real `enpu farm` store of the small
job tests/integration/replay/farm-small.json (its grid covers the first 200 trace
requests). The big stores come from `test_replay --write-store` (the analytical model of
tests/integration/replay/synth_store.h).

With ENPU_REPLAY_STORE=<a llama3-70b store of the full grid> it also replays the whole
conv trace with nodvfs on Table 3's nodes and checks SLO attainment >= 99 %.

usage: test_replay.py ENPU SOURCE_DIR TEST_REPLAY"""
import csv
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import CLUSTER, TRACE, Harness, synth_store  # noqa: E402

h = Harness(sys.argv[1], sys.argv[2])
test_replay = sys.argv[3]
tmp, store = synth_store(test_replay, "test_replay_")


def replay(*args, store_path=store, trace=TRACE):
    return h.run("replay", "--store", store_path, "--trace", trace, "--cluster", CLUSTER, *args)


def files(d):
    return {f: open(os.path.join(d, f), "rb").read() for f in sorted(os.listdir(d))}


def trace_head(n):
    path = os.path.join(tmp, f"head{n}.csv")
    with open(os.path.join(h.src, TRACE)) as src, open(path, "w") as out:
        for i, line in enumerate(src):
            if i > n:
                break
            out.write(line)
    return path


# ---- the whole trace, every policy: summary contract and conservation ---------------
out1 = os.path.join(tmp, "out1")
r = replay("--out", out1, "--json")
h.check("replay exits 0", r.returncode == 0, r.stderr)
doc = json.loads(r.stdout)
pol = doc["policies"]
h.check("summary: 19366 requests", doc["requests"] == 19366, doc["requests"])
h.check("summary: the store's three policies", sorted(pol) == ["dvfs-c", "enpu-all", "nodvfs"], sorted(pol))
h.check("summary: baseline nodvfs", doc["baseline"] == "nodvfs")
keys = {"requests", "served", "slo_attainment", "energy_savings", "ttft_ms", "tpot_ms", "batches", "kv_transfer"}
h.check("summary: per-policy keys", all(keys <= set(p) for p in pol.values()), [sorted(p) for p in pol.values()])
nd, ea, dc = pol["nodvfs"], pol["enpu-all"], pol["dvfs-c"]
h.check("nodvfs SLO attainment >= 99 % (synthetic store, Table 3 nodes)", nd["slo_attainment"] >= 0.99,
        nd["slo_attainment"])
print(f"     synthetic store, conv trace, Table 3: SLO attainment nodvfs {nd['slo_attainment']:.4f}, "
      f"enpu-all {ea['slo_attainment']:.4f}; energy savings enpu-all {ea['energy_savings']}, "
      f"dvfs-c {dc['energy_savings']}")
for ph in ("prefill", "decode"):
    h.check(f"enpu-all saves more than dvfs-c in {ph}",
            ea["energy_savings"][ph] > dc["energy_savings"][ph] > 0, (ea["energy_savings"], dc["energy_savings"]))
h.check("nodvfs never slows a batch", nd["batches"]["prefill"]["slowed"] + nd["batches"]["decode"]["slowed"] == 0)
h.check("percentiles ordered", all(p["ttft_ms"]["p50"] <= p["ttft_ms"]["p99"] for p in pol.values()))

for name, p in pol.items():
    rows = list(csv.DictReader(open(os.path.join(out1, f"requests_{name}.csv"))))
    ids = [int(row["id"]) for row in rows]
    h.check(f"{name}: every request once in the CSV", ids == list(range(19366)))
    h.check(f"{name}: every request served", all(row["status"] == "done" for row in rows))
    energy = sum(float(row["energy_j"]) for row in rows)
    busy, kv = p["busy_energy_j"]["total"], p["kv_energy_j"]
    h.check(f"{name}: request energies add up to the batches' and KV transfers'",
            abs(energy - busy - kv) <= 1e-6 * busy, (energy, busy, kv))
    total = p["energy_j"]["total"]
    h.check(f"{name}: energy = batches + idle + KV",
            abs(busy + p["idle_energy_j"]["total"] + kv - total) <= 1e-9 * total)
    wins = list(csv.DictReader(open(os.path.join(out1, f"windows_{name}.csv"))))
    wsum = sum(float(w["prefill_energy_j"]) + float(w["decode_energy_j"]) + float(w["kv_energy_j"]) for w in wins)
    h.check(f"{name}: windows add up to the total energy", abs(wsum - total) <= 1e-6 * total, (wsum, total))
    h.check(f"{name}: windows count every arrival", sum(int(w["arrivals"]) for w in wins) == 19366)
    gen = sum(int(row["generated_tokens"]) for row in rows)
    h.check(f"{name}: decode made every token but the first",
            p["tokens"]["decode_generated"] + 19366 == gen, (p["tokens"], gen))

# ---- same seed, same bytes -----------------------------------------------------------
out2 = os.path.join(tmp, "out2")
r = replay("--out", out2)
h.check("second run exits 0", r.returncode == 0, r.stderr)
h.check("same inputs: byte-identical output files", files(out1) == files(out2))
head = trace_head(3000)
seeded = []
for k, seed in enumerate(("3", "3", "4")):
    d = os.path.join(tmp, f"seed{k}")
    r = replay("--rate", "1.5", "--seed", seed, "--policy", "enpu-all", "--out", d, trace=head)
    h.check(f"--rate 1.5 --seed {seed} exits 0", r.returncode == 0, r.stderr)
    seeded.append(files(d))
h.check("same seed: byte-identical outputs", seeded[0] == seeded[1])
# A rerun into out1 with one policy leaves only that run's files (not the other policies' CSVs).
r = replay("--rate", "1.5", "--seed", "3", "--policy", "enpu-all", "--out", out1, trace=head)
h.check("rerun into a used --out exits 0", r.returncode == 0, r.stderr)
h.check("rerun into a used --out: only this run's files stay", files(out1) == seeded[0],
        sorted(files(out1)))
h.check("another seed: different outputs", seeded[0] != seeded[2])

# ---- five times the rate on a cluster too small for it: safeguard 2 locks batches -------
with open(os.path.join(h.src, CLUSTER)) as f:
    small = json.load(f)
small["prefill"]["nodes"], small["decode"]["nodes"] = 3, 1
small_path = os.path.join(tmp, "small.json")
with open(small_path, "w") as f:
    json.dump(small, f)
out5 = os.path.join(tmp, "out5")
r = h.run("replay", "--store", store, "--trace", trace_head(1500), "--cluster", small_path, "--model",
          "jobs/models/llama3-70b.json", "--chip", "jobs/chips/tpuv5p.json", "--rate", "5", "--policy", "enpu-all",
          "--json", "--out", out5)
h.check("--rate 5 exits 0", r.returncode == 0, r.stderr)
p5 = json.loads(r.stdout)["policies"]["enpu-all"]
locked = p5["batches"]["prefill"]["locked"] + p5["batches"]["decode"]["locked"]
h.check("5x rate on 3 + 1 nodes: safeguard 2 engages", locked > 0, p5["batches"])
h.check("3 prefill nodes under predictive safeguards: a note says no prefill batch can slow, and why",
        "predictive safeguards on 3 prefill nodes" in r.stderr and "--safeguards switching" in r.stderr
        and p5["fastest_time_share"]["prefill"] == 1.0, r.stderr + str(p5["fastest_time_share"]))
print(f"     5x rate: {p5['requests']} requests, SLO attainment {p5['slo_attainment']:.4f}, "
      f"locked {p5['batches']['prefill']['locked']}/{p5['batches']['decode']['locked']} of "
      f"{p5['batches']['prefill']['total']}/{p5['batches']['decode']['total']} prefill/decode batches")
wins = list(csv.DictReader(open(os.path.join(out5, "windows_enpu-all.csv"))))
h.check("5x rate: the windows show the locked batches",
        sum(int(w["prefill_locked"]) + int(w["decode_locked"]) for w in wins) == locked)
h.check("one policy without nodvfs: energy_savings null in JSON", p5["energy_savings"] is None,
        p5["energy_savings"])

# ---- no nodvfs run to compare with: the table's savings columns print "-" ------------
r = replay("--policy", "enpu-all", trace=trace_head(200))
row = next((ln.split() for ln in r.stdout.splitlines() if ln.startswith("enpu-all ")), [])
h.check("one policy without nodvfs: table exits 0", r.returncode == 0, r.stderr)
h.check("one policy without nodvfs: savings columns are '-', no nan",
        row[8:14] == ["-"] * 6 and "nan" not in r.stdout.lower(), r.stdout)
r = replay("--policy", "all", trace=trace_head(200))
row = next((ln.split() for ln in r.stdout.splitlines() if ln.startswith("enpu-all ")), [])
h.check("with nodvfs: the savings columns are numbers", len(row) > 13 and all(
    c.replace(".", "", 1).lstrip("-").isdigit() for c in row[8:14]), r.stdout)

# ---- bad input ---------------------------------------------------------------------------
bad = os.path.join(tmp, "bad.csv")
with open(bad, "w") as f:
    f.write("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.68,374,44\n"
            "2023-11-16 18:15:50.99,39x,109\n2023-11-16 18:15:51.22,879,55\n")
r = replay("--policy", "nodvfs", trace=bad)
h.check("bad row: exit 2 (bad input)", r.returncode == 2, r.returncode)
h.check("bad row: file, line and column", f"{bad}:3:26: expected ',' after ContextTokens" in r.stderr, r.stderr)
r = replay("--policy", "nodvfs", "--skip-bad-rows", "--json", trace=bad)
h.check("--skip-bad-rows: exit 0", r.returncode == 0, r.stderr)
h.check("--skip-bad-rows: counted", "skipped 1 bad rows" in r.stderr, r.stderr)
h.check("--skip-bad-rows: the good rows run", r.returncode == 0 and json.loads(r.stdout)["requests"] == 2)
year = os.path.join(tmp, "year9999.csv")
with open(year, "w") as f:
    f.write("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.68,374,44\n9999-11-16 18:15:50.99,39,109\n")
r = replay("--policy", "nodvfs", trace=year)
h.check("a row dated 9999: exit 2 naming file, line and column",
        r.returncode == 2 and f"{year}:3:1: expected a year from 1970 to 2100" in r.stderr, r.stderr)
far = os.path.join(tmp, "far.csv")
with open(far, "w") as f:
    f.write("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.68,374,44\n2023-11-16 18:15:47,3,4\n"
            "2099-11-16 18:15:50.99,39,109\n")
r = replay("--policy", "nodvfs", "--skip-bad-rows", trace=far)
h.check("rows 76 years apart: exit 2 naming the odd row, even with --skip-bad-rows",
        r.returncode == 2 and f"{far}:4:1: expected a timestamp within 366 days" in r.stderr, r.stderr)
r = replay("--rate", "1e9", "--policy", "nodvfs")
h.check("--rate 1e9: exit 2 before allocating", r.returncode == 2 and "more than the 30000000" in r.stderr, r.stderr)
r = h.run("replay", "--store", store, "--cluster", CLUSTER)
h.check("missing --trace: usage error 2", r.returncode == 2 and "missing --trace" in r.stderr, r.stderr)
r = replay("--rate", "2", "--rates", "1,2")
h.check("--rate with --rates: usage error 2", r.returncode == 2, r.stderr)
r = replay("--rates", "1,0")
h.check("--rates with a zero: usage error 2", r.returncode == 2, r.stderr)

# ---- the load sweep ----------------------------------------------------------------------
sweep_dir = os.path.join(tmp, "sweep")
r = replay("--rates", "2,0.5,1", "--json", "--out", sweep_dir, trace=trace_head(1500))
h.check("--rates: exit 0", r.returncode == 0, r.stderr)
if r.returncode == 0:
    sw = json.loads(r.stdout)
    h.check("--rates: rates sorted, requests growing", sw["rates"] == [0.5, 1, 2] and
            sw["requests"][0] < sw["requests"][1] == 1500 < sw["requests"][2], (sw["rates"], sw["requests"]))
    ea = sw["policies"]["enpu-all"]
    h.check("--rates: a value per rate and a capacity", len(ea["slo_attainment"]) == 3 and "capacity_rate" in ea, ea)
    # What five-minute utilisation hides: the peak second's arrivals grow with the rate
    # (1x: the most rows of the head in one second), and the longest queue is counted.
    peak = sw["peak_arrivals_per_s"]
    h.check("--rates: peak arrivals per second grow with the rate", 0 < peak[0] <= peak[1] < peak[2], peak)
    h.check("--rates: peak queue and switched share per rate",
            all(len(ea[k]) == 3 for k in ("peak_queue", "switched_share", "switch_energy_share")) and
            all(q >= 0 for q in ea["peak_queue"]), ea)
    h.check("--rates: sweep.json, sweep.dat and a PNG", json.load(open(os.path.join(sweep_dir, "sweep.json"))) == sw
            and open(os.path.join(sweep_dir, "sweep.png"), "rb").read(8) == b"\x89PNG\r\n\x1a\n")
r = replay("--rates", "0.5,1", trace=trace_head(300))
h.check("--rates table: every rate and the capacities", r.returncode == 0 and "Capacity" in r.stdout and
        sum(1 for ln in r.stdout.splitlines() if ln.split()[:1] in (["0.5"], ["1"])) == 6, r.stdout)
r = replay("--rate", "-2")
h.check("negative --rate: usage error 2", r.returncode == 2, r.stderr)
r = replay("--policy", "ideal")
h.check("unknown policy: exit 2 naming it", r.returncode == 2 and "ideal" in r.stderr, r.stderr)
r = replay(store_path=os.path.join(tmp, "missing.h5"))
h.check("missing store: exit 2 naming it", r.returncode == 2 and "missing.h5" in r.stderr, r.stderr)

# ---- a real farm store -------------------------------------------------------------------
if h.run("farm", "--help").returncode == 0:
    farm_store = os.path.join(tmp, "farm", "plans.h5")
    os.makedirs(os.path.dirname(farm_store))
    job = "tests/integration/replay/farm-small.json"
    r = h.run("farm", job, "--store", farm_store, "--results", os.path.join(tmp, "farm", "results"), "--quiet")
    h.check("farm of the small job exits 0", r.returncode == 0, r.stderr[-2000:])
    r = replay("--json", store_path=farm_store, trace=trace_head(200))
    h.check("replay of the farm store exits 0", r.returncode == 0, r.stderr)
    if r.returncode == 0:
        fp = json.loads(r.stdout)["policies"]
        h.check("farm store: 200 served, none unservable",
                all(p["served"] == 200 and p["unservable"] == 0 for p in fp.values()), fp)
        h.check("farm store: nodvfs SLO attainment >= 99 %", fp["nodvfs"]["slo_attainment"] >= 0.99)
        sav = fp["enpu-all"]["busy_energy_savings"]
        h.check("farm store: enpu-all saves busy energy in both phases", sav["prefill"] > 0 and sav["decode"] > 0, sav)
        print(f"     farm store (first 200 requests): enpu-all busy-energy savings {sav}, "
              f"with idle {fp['enpu-all']['energy_savings']}")
    r = h.run("replay", "--store", farm_store, "--trace", trace_head(20), "--cluster",
              "jobs/clusters/deepseek-v3-671b.json")
    h.check("a Llama3-70B store on DeepSeek-V3's cluster: exit 2 (bad input) naming both models", r.returncode == 2 and
            "compiled for model 'llama3-70b', but cluster" in r.stderr and "'deepseek-v3-671b'" in r.stderr,
            r.stderr)
else:
    print("skip: `enpu farm` is not in this build")

# ---- the sweep of the whole trace: SLOs hold below 70 % utilisation ----------------------
def check_sweep_slos(label, store_path, rates):
    """nodvfs >= 99 % wherever the busiest pool (in its busiest 5-minute window) is below
    70 %, and every DVFS policy within 0.5 points of nodvfs there."""
    r = replay("--rates", rates, "--json", store_path=store_path)
    if not h.check(f"{label}: sweep {rates} exits 0", r.returncode == 0, r.stderr):
        return
    sw = json.loads(r.stdout)
    nd = sw["policies"]["nodvfs"]
    light = [i for i in range(len(sw["rates"]))
             if max(nd["util_prefill_busiest"][i], nd["util_decode_busiest"][i]) < 0.7]
    h.check(f"{label}: some rates keep the busiest pool below 70 %", len(light) >= 3, sw["rates"])
    for i in light:
        att = {p: v["slo_attainment"][i] for p, v in sw["policies"].items()}
        print(f"     {label}, rate {sw['rates'][i]:g}: busiest window prefill "
              f"{100 * nd['util_prefill_busiest'][i]:.1f} %, decode {100 * nd['util_decode_busiest'][i]:.1f} %; "
              f"SLO attainment {att}")
        h.check(f"{label}, rate {sw['rates'][i]:g}: nodvfs >= 99 %", att["nodvfs"] >= 0.99, att)
        h.check(f"{label}, rate {sw['rates'][i]:g}: DVFS policies within 0.5 points of nodvfs",
                all(a >= att["nodvfs"] - 0.005 for a in att.values()), att)


check_sweep_slos("synthetic store", store, "0.5,1,2,3,5,8")

# ---- a real llama3-70b store, when given -----------------------------------------------
real = os.environ.get("ENPU_REPLAY_STORE")
if real:
    r = replay("--policy", "nodvfs", "--json", store_path=real)
    h.check("real store: replay exits 0", r.returncode == 0, r.stderr)
    if r.returncode == 0:
        p = json.loads(r.stdout)["policies"]["nodvfs"]
        print(f"     real store {real}: nodvfs SLO attainment {p['slo_attainment']:.4f} "
              f"(TTFT p99 {p['ttft_ms']['p99']:.1f} ms, TPOT p99 {p['tpot_ms']['p99']:.1f} ms, "
              f"unservable {p['unservable']})")
        h.check("real store: nodvfs SLO attainment >= 99 % on Table 3's nodes", p["slo_attainment"] >= 0.99)
    check_sweep_slos("real store", real, "0.5,1,2,3,5,8,12,16")
else:
    print("skip: ENPU_REPLAY_STORE not set (a llama3-70b store of the full grid)")

subprocess.run(["rm", "-rf", tmp], check=False)
h.finish()
