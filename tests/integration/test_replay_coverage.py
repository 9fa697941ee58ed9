#!/usr/bin/python3
"""No request is left out of a replay's accounting (docs/coverage.md): on the synthetic
store (tests/integration/replay/synth_store.h, largest seq bucket 16,384 in both phases),
a trace with prefills and decodes beyond the grid is replayed with every policy, and

- every request is served (none unservable), so the SLO attainment is over all of them
  and the per-request energies add up to the run's busy and KV energy;
- per SLO class, plan + chunked + fallback + both + unservable = the class's requests,
  and the classes add up to the trace, in summary.json, the text table and the report;
- a request whose KV exceeds every compiled bucket's is the one unservable case: named on
  stderr with its reason and counted as a miss;
- the shipped Mooncake conversation trace (jobs/traces/mooncake_conversation_trace.csv,
  12,031 requests, 66 % of them longer than the demo grid's largest prefill bucket)
  replays with 0 unservable requests on the synthetic store and on a demo-grid store
  farmed here (prefill seq buckets 1,024 and 4,096).

usage: test_replay_coverage.py ENPU SOURCE_DIR TEST_REPLAY"""
import csv
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Harness, write_trace, synth_store  # noqa: E402

h = Harness(sys.argv[1], sys.argv[2])
CLUSTER = os.path.join(h.src, "jobs/clusters/llama3-70b.json")
MOONCAKE = os.path.join(h.src, "jobs/traces/mooncake_conversation_trace.csv")
tmp, store = synth_store(sys.argv[3], "test_replay_coverage_")
BY = ("plan", "chunked", "fallback", "chunked+fallback", "unservable")


def trace(name, rows):
    return write_trace(os.path.join(tmp, name), rows)


def classes_add_up(label, pol, requests):
    ok = True
    for name, p in pol.items():
        cl = p["classes"]
        ok &= all(sum(c[k] for k in BY) == c["requests"] for c in cl)
        ok &= sum(c["requests"] for c in cl) == requests
        ok &= sum(c["plan"] + c["chunked"] + c["fallback"] + c["chunked+fallback"] for c in cl) == p["served"]
        ok &= p["served"] + p["unservable"] == requests and "uncovered" not in p
    h.check(f"{label}: per class, plan + chunked + fallback + both + unservable = requests; classes = trace",
            ok, json.dumps({n: p["classes"] for n, p in pol.items()})[:1500])


# ---- beyond the grid: every request served and accounted ----------------------------
rows = [(0.0, 100, 4), (2.0, 3000, 200), (4.0, 20000, 1), (9.0, 40000, 50), (15.0, 16000, 2000),
        (20.0, 9000, 9000), (25.0, 60000, 300), (30.0, 1200, 30), (31.0, 800, 600)]
beyond = trace("beyond.csv", rows)
out = os.path.join(tmp, "out")
r = h.run("replay", "--store", store, "--trace", beyond, "--cluster", CLUSTER, "--out", out)
h.check("replay beyond the grid: exit 0, nothing unservable on stderr",
        r.returncode == 0 and "unservable" not in r.stderr, r.stderr)
summary = json.load(open(os.path.join(out, "summary.json")))
pol = summary["policies"]
h.check("every policy served all 9 requests, none unservable",
        all(p["served"] == 9 and p["unservable"] == 0 for p in pol.values()), {n: p["served"] for n, p in pol.items()})
h.check("3 chunked prefills (20,000, 40,000, 60,000 tokens), 3+ requests on the fallback",
        all(p["beyond_grid_batches"]["prefill_chunked"] == 3 and p["chunked"] == 3 and p["fallback"] >= 3
            for p in pol.values()), {n: (p["chunked"], p["fallback"]) for n, p in pol.items()})
classes_add_up("beyond the grid", pol, 9)
for name, p in pol.items():
    reqs = list(csv.DictReader(open(os.path.join(out, f"requests_{name}.csv"))))
    met = sum(int(q["slo_met"]) for q in reqs)
    h.check(f"{name}: SLO attainment over all 9 requests", abs(p["slo_attainment"] - met / 9) < 1e-12,
            (p["slo_attainment"], met))
    e_req = sum(float(q["energy_j"]) for q in reqs)
    e_run = p["busy_energy_j"]["total"] + p["kv_energy_j"]
    h.check(f"{name}: every request's energy in the run's (per-request sum = busy + KV)",
            abs(e_req - e_run) <= 1e-6 * e_run and all(q["status"] == "done" and q["ttft_ms"] for q in reqs),
            (e_req, e_run))
    h.check(f"{name}: served_by names how (the 40,000-token request chunked, the 16,000 + 2,000 one fallback)",
            reqs[3]["served_by"] in ("chunked", "chunked+fallback") and reqs[4]["served_by"] == "fallback"
            and reqs[0]["served_by"] == "plan", [q["served_by"] for q in reqs])

cov = list(csv.DictReader(open(os.path.join(out, "coverage.csv"))))
h.check("coverage.csv: summary.json's per-class counts, every row adding up",
        len(cov) == 3 * len(pol) and all(
            sum(int(row[k]) for k in BY) == int(row["requests"])
            and int(row["chunked+fallback"]) == [c for c in pol[row["policy"]]["classes"]
                                                 if c["name"] == row["class"]][0]["chunked+fallback"]
            for row in cov), cov[:4])

# The text output carries the per-class table.
r = h.run("replay", "--store", store, "--trace", beyond, "--cluster", CLUSTER, "--policy", "enpu-all")
h.check("text output: a coverage table with every class's counts",
        "coverage" in r.stdout and "chunked" in r.stdout and all(c in r.stdout for c in ("P33", "P66", "P100")),
        r.stdout[-2500:])

# The report's replay section shows the same counts.
rdir = os.path.join(tmp, "report")
r = h.run("report", store, "--replay", out, "--out", rdir)
md = open(os.path.join(rdir, "report.md")).read() if r.returncode == 0 else ""
h.check("report: exit 0 with the per-class coverage table",
        r.returncode == 0 and "| policy | class | requests | plan | chunked | fallback | both | unservable |" in md,
        r.stderr[-1500:])
c100 = [c for c in pol["enpu-all"]["classes"] if c["name"] == "P100"][0]
h.check("report: the enpu-all P100 row has summary.json's counts",
        f"| P100 | {c100['requests']} | {c100['plan']} | {c100['chunked']} | {c100['fallback']} | "
        f"{c100['chunked+fallback']} | 0 |" in md, md[md.find("| policy | class"):][:2000])

# ---- the unservable case: loud, counted, a miss ---------------------------------------
huge = trace("huge.csv", [(0, 100, 4), (1, 700000, 1)])
r = h.run("replay", "--store", store, "--trace", huge, "--cluster", CLUSTER, "--policy", "nodvfs", "--json")
doc = json.loads(r.stdout) if r.returncode == 0 else {}
p = doc.get("policies", {}).get("nodvfs", {})
h.check("a KV beyond every bucket's: unservable, named on stderr with the reason",
        p.get("unservable") == 1 and "1 requests unservable" in r.stderr and "exceeds the largest compiled" in r.stderr,
        r.stderr)
h.check("... and a miss in the SLO attainment (1 of 2 requests met)", p.get("slo_attainment") == 0.5, p)
classes_add_up("unservable", doc.get("policies", {}), 2)

# ---- the shipped Mooncake conversation trace ------------------------------------------
n_moon = sum(1 for _ in open(MOONCAKE)) - 1
moon_out = os.path.join(tmp, "moon")
r = h.run("replay", "--store", store, "--trace", MOONCAKE, "--cluster", CLUSTER, "--out", moon_out,
          "--windows-only")
pol = json.load(open(os.path.join(moon_out, "summary.json")))["policies"] if r.returncode == 0 else {}
h.check(f"Mooncake ({n_moon} requests) on the synthetic store: all served, 0 unservable",
        n_moon == 12031 and pol and all(p["served"] == n_moon and p["unservable"] == 0 for p in pol.values()),
        r.stderr[-1500:])
classes_add_up("Mooncake, synthetic store", pol, n_moon)

job = {"name": "coverage-demo", "model": os.path.join(h.src, "jobs/models/llama3-70b.json"),
       "chip": os.path.join(h.src, "jobs/chips/tpuv5p.json"), "cluster": CLUSTER,
       "store": os.path.join(tmp, "demo.h5"),
       "phases": {"prefill": {"batch": [1, 4], "seq": [1024, 4096]}, "decode": {"batch": [8, 32], "seq": [2048, 8192]}},
       "slacks": [0, 0.05], "policies": ["nodvfs", "enpu-all"], "moe": {"capacity_factor": "worst"}}
jpath = os.path.join(tmp, "demo.json")
json.dump(job, open(jpath, "w"))
r = h.run("farm", jpath, "--quiet")
h.check("farm of the demo grid: exit 0", r.returncode == 0, r.stderr[-1500:])
r = h.run("replay", "--store", job["store"], "--trace", MOONCAKE, "--cluster", CLUSTER, "--json")
pol = json.loads(r.stdout)["policies"] if r.returncode == 0 else {}
h.check("Mooncake on the demo grid: all served, 0 unservable, most of it chunked or on the fallback",
        pol and all(p["served"] == n_moon and p["unservable"] == 0 and p["chunked"] > 0.5 * n_moon
                    for p in pol.values()), r.stderr[-1500:])
classes_add_up("Mooncake, demo grid", pol, n_moon)
for name, p in pol.items():
    print(f"     Mooncake on the demo grid, {name}: SLO {100 * p['slo_attainment']:.2f} %, chunked {p['chunked']}, "
          f"fallback {p['fallback']}, busy at 0 % slack {p['fastest_time_share']}, padding {p['padding']}")

subprocess.run(["rm", "-rf", tmp], check=False)
h.finish()
