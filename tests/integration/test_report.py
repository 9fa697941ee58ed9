#!/usr/bin/python3
"""`enpu report` on real stores: the report and its PNGs are written, and its tables
agree with what h5py reads from the same store.

usage: test_report.py ENPU_BINARY SOURCE_DIR TEST_STORE_BINARY PLUGIN_DIR

Part 1, the unit test's synthetic store (`test_store --write`): report.md and the
Figure 11/12 PNGs (checked by their signature bytes); every savings row (policy, phase,
slack: bucket count, mean, min, max over ok buckets) recomputed from h5py; the median
bucket recomputed; each breakdown row's Σ slots equal to the walk's cumulative energy at
the plan's prefix, its plan and NoDVFS energies equal to the plans/buckets tables; the
default output directory results/<job name>/; clear errors for a missing gnuplot, a
missing store and a malformed replay CSV.
Part 2, a store compiled by `enpu farm` from jobs/demo.json and a replay of the first
1500 trace requests: Figure 19 with --job matches every op (no "could not be matched"
note) and Figure 22's table equals summary.json."""
import json
import os
import shutil
import re
import subprocess
import sys
import tempfile

from harness import Harness, md_rows

enpu, src, test_store, plugins = (os.path.abspath(a) for a in sys.argv[1:5])
h = Harness(enpu, src)
env = dict(os.environ, HDF5_PLUGIN_PATH=os.path.abspath(plugins))
PNG = b"\x89PNG\r\n\x1a\n"
PHASES = ("prefill", "decode")
NO_PREFIX = 2**64 - 1  # plans.walk_prefix of a plan that is no walk prefix (STORE_NO_PREFIX)


def png_ok(path):
    try:
        with open(path, "rb") as f:
            head = f.read(8)
        return head == PNG and os.path.getsize(path) > 1000
    except OSError:
        return False


def h5_tables(store):
    """{policy: {table: rows as lists of dicts}} and the root attributes, via h5py."""
    code = """
import h5py, json, sys
out = {}
with h5py.File(sys.argv[1], "r") as f:
    for p in f["policies"]:
        g = f["policies"][p]
        out[p] = {}
        for t in ("buckets", "plans", "walk", "plan_states", "ops"):
            rows = g[t][:] if t in g else []
            names = rows.dtype.names if len(rows) else ()
            out[p][t] = [{n: (r[n].item() if r[n].shape == () else r[n].tolist()) for n in names
                          if n not in ("message", "name")} for r in rows]
        out[p]["pareto_energy"] = g["pareto"]["energy_nj"][:].tolist() if "pareto" in g else []
print(json.dumps(out))
"""
    r = subprocess.run(["/usr/bin/python3", "-c", code, store], env=env, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"h5py could not read {store}: {r.stderr[-500:]}")
    return json.loads(r.stdout)


def expected_savings(t):
    out = {}
    for pol, tab in t.items():
        for pl in tab["plans"]:
            b = tab["buckets"][pl["bucket"]]
            if b["status"] != 0:
                continue
            key = (pol, PHASES[b["phase"]], ("strict", "paper")[pl["budget"]], round(100 * pl["slack"], 9))
            out.setdefault(key, []).append((pl["savings_vs_nodvfs"], pl["overhead_pct"]))
    return out


def median_bucket(t, phase):
    pols = sorted(t)
    ok = lambda b: b["status"] == 0 and b["plan_count"] > 0
    cand = []
    for b in t[pols[0]]["buckets"]:
        if b["phase"] != phase or not ok(b):
            continue
        if all(any(ok(o) and (o["phase"], o["batch"], o["seq"]) == (phase, b["batch"], b["seq"])
                   for o in t[p]["buckets"]) for p in pols[1:]):
            cand.append((b["t_nodvfs_ns"], b["batch"], b["seq"]))
    cand.sort()
    return cand[(len(cand) - 1) // 2][1:] if cand else None


def check_report(tag, store, outdir, md):
    t = h5_tables(store)
    # Figure 11: every (policy, phase, budget mode, slack) row against h5py
    rows = md_rows(md, "| policy | phase | budget | slack")
    want = expected_savings(t)
    got = {(r[0], r[1], r[2], round(float(r[3]), 9)): r for r in rows}
    h.check(f"{tag}: savings rows = h5py's (policy, phase, budget, slack) groups", set(got) == set(want),
            f"{sorted(got)} vs {sorted(want)}")
    bad = []
    for k, v in want.items():
        r = got.get(k)
        if not r:
            continue
        sav, ovh = [x[0] for x in v], [x[1] for x in v]
        exp = (len(v), 100 * sum(sav) / len(v), 100 * min(sav), 100 * max(sav), sum(ovh) / len(v), max(ovh))
        if int(r[4]) != exp[0] or any(abs(float(r[5 + i]) - exp[1 + i]) > 1e-4 for i in range(5)):
            bad.append((k, r, exp))
    h.check(f"{tag}: savings count/mean/min/max and overhead mean/max equal h5py's", not bad and want, str(bad[:3]))
    for ph in PHASES:
        if any(k[1] == ph for k in want):
            h.check(f"{tag}: savings_{ph}.png is a PNG", png_ok(os.path.join(outdir, f"savings_{ph}.png")))
    # Figure 12: the median bucket and its rows against the walk and plans tables
    for phase, ph in enumerate(PHASES):
        med = median_bucket(t, phase)
        m = re.search(rf"^### {ph}: batch (\d+), seq (\d+)$", md, re.M)
        h.check(f"{tag}: {ph} breakdown bucket is the median {med}", med is not None and m is not None
                and (int(m.group(1)), int(m.group(2))) == med, m.group(0) if m else "no heading")
        if not med or not m:
            continue
        h.check(f"{tag}: breakdown_{ph}.png is a PNG", png_ok(os.path.join(outdir, f"breakdown_{ph}.png")))
        section = md[m.end():].split("\n### ")[0].split("\n## ")[0]
        rows = md_rows(section, "| policy | slack (%) | walk prefix")
        bad, n = [], 0
        for r in rows:
            tab = t[r[0]]
            bi = next(i for i, b in enumerate(tab["buckets"]) if (b["phase"], b["batch"], b["seq"]) == (phase,) + med)
            b = tab["buckets"][bi]
            pl = next(p for p in tab["plans"] if p["bucket"] == bi and abs(100 * p["slack"] - float(r[1])) < 1e-9)
            # Σ slots: every run of the plan's plan_states at its Pareto point (a run that is
            # no Pareto point, STORE_NO_INDEX, at its op's fastest one)
            runs = tab["plan_states"][pl["states_first"]:pl["states_first"] + pl["states_count"]]
            runs_e = sum(x["instances"] * tab["pareto_energy"][tab["ops"][x["op"]]["pareto_first"]
                                                              if x["pareto"] == 2**32 - 1 else x["pareto"]]
                         for x in runs)
            prefix = NO_PREFIX if r[2] == "—" else int(r[2])
            slots = [float(x) for x in r[3:10]]
            checks = [(float(r[10]), runs_e / 1e6), (sum(slots), runs_e / 1e6), (float(r[11]), pl["energy_nj"] / 1e6),
                      (float(r[12]), b["e_nodvfs_nj"] / 1e6)]
            walk_e = None
            if prefix != NO_PREFIX:  # a walk prefix: its runs are the walk's energy there
                walk_e = tab["walk"][b["walk_first"] + prefix - 1]["energy_nj"] if prefix else b["walk_start_energy_nj"]
                checks.append((sum(slots), walk_e / 1e6))
            n += 1
            if prefix != pl["walk_prefix"] or any(abs(a - e) > 2e-5 * abs(e) + 1e-12 for a, e in checks):
                bad.append((r, walk_e, runs_e, pl["energy_nj"]))
        plans = sum(1 for p in t for pl in t[p]["plans"] for b in [t[p]["buckets"][pl["bucket"]]]
                    if (b["phase"], b["batch"], b["seq"]) == (phase,) + med and b["status"] == 0)
        h.check(f"{tag}: {ph} breakdown has a row per policy x slack ({plans})", n == plans, f"{n} rows")
        h.check(f"{tag}: {ph} breakdown Σ slots = the plan's runs (= walk energy at a prefix), plan and NoDVFS "
                "energy = h5py",
                not bad and n > 0, str(bad[:2]))


with tempfile.TemporaryDirectory() as tmp:
    # ---- part 1: the synthetic store
    store = os.path.join(tmp, "plans.h5")
    subprocess.run([test_store, "--write", store], check=True, capture_output=True)
    out1 = os.path.join(tmp, "out1")
    r = h.run("report", store, "--out", out1)
    h.check("report on the test store exits 0", r.returncode == 0, r.stderr)
    r = h.run("report", store, "--out", os.path.join(tmp, "out1j"), "--json")
    doc = json.loads(r.stdout) if r.returncode == 0 else {}
    h.check("report --json: one document naming the report written",
            doc.get("report") == os.path.join(tmp, "out1j", "report.md") and os.path.exists(doc["report"]), r.stdout)
    md = open(os.path.join(out1, "report.md")).read() if r.returncode == 0 else ""
    h.check("report names the store and its hashes", store in md and re.search(r"job `[0-9a-f]{16}`", md), md[:300])
    h.check("each plot has its .dat and .gp", all(os.path.exists(os.path.join(out1, f"breakdown_prefill.{e}"))
                                                   for e in ("dat", "gp", "png")))
    h.check("without --job Figure 19 says why", "needs the job file" in md)
    check_report("test store", store, out1, md)
    h.figures_legible("test store", out1)

    r = h.run("report", store, "--job", "jobs/demo.json", "--out", os.path.join(tmp, "mismatch"))
    md2 = open(os.path.join(tmp, "mismatch", "report.md")).read() if r.returncode == 0 else ""
    h.check("--job of another store: ops reported as not matched, nothing plotted",
            "3 of 3 ops could not be matched" in md2 and "differs from the store's job_hash" in md2 and
            not os.path.exists(os.path.join(tmp, "mismatch", "freq_util_prefill.png")), r.stderr + md2[-600:])

    r = h.run("report", store, cwd=tmp)
    h.check("default output directory results/<job name>/", r.returncode == 0 and
            os.path.exists(os.path.join(tmp, "results", "unit", "report.md")), r.stderr + r.stdout)

    r = h.run("report", store, "--out", os.path.join(tmp, "nognuplot"), env=dict(os.environ, PATH="/nonexistent"))
    h.check("no gnuplot on PATH: exit 1 naming gnuplot", r.returncode == 1 and "gnuplot" in r.stderr, r.stderr)
    h.check("no gnuplot: no report.md", not os.path.exists(os.path.join(tmp, "nognuplot", "report.md")))
    r = h.run("report", os.path.join(tmp, "missing.h5"))
    h.check("missing store: exit 2 naming it", r.returncode == 2 and "missing.h5" in r.stderr, r.stderr)
    r = h.run("report")
    h.check("no store: usage error 2", r.returncode == 2 and "usage" in r.stderr, r.stderr)

    bad = os.path.join(tmp, "badreplay")
    os.mkdir(bad)
    cols = ["start_s", "length_s", "prefill_busy_energy_j", "decode_busy_energy_j", "prefill_idle_energy_j",
            "decode_idle_energy_j", "prefill_batches", "decode_batches", "prefill_safeguard1", "decode_safeguard1",
            "prefill_locked", "decode_locked", "ttft_attainment", "tpot_attainment"] + \
        [f"{k}_slack_{q}" for k in ("ttft", "tpot") for q in ("p1", "p25", "mean", "p75", "p99")]
    good_row = ",".join(["0", "300"] + ["1"] * (len(cols) - 2))
    bad_row = ",".join(["300", "300", "x"] + ["1"] * (len(cols) - 3))
    with open(os.path.join(bad, "windows_nodvfs.csv"), "w") as f:
        f.write(",".join(cols) + "\n" + good_row + "\n" + bad_row + "\n")
    r = h.run("report", store, "--out", os.path.join(tmp, "o2"), "--replay", bad)
    h.check("bad replay number: exit 1 naming file:line and column",
            r.returncode == 1 and "windows_nodvfs.csv:3" in r.stderr and "prefill_busy_energy_j" in r.stderr, r.stderr)
    with open(os.path.join(bad, "windows_nodvfs.csv"), "w") as f:
        f.write(",".join(cols[:2] + cols[3:]) + "\n" + ",".join(good_row.split(",")[:-1]) + "\n")
    r = h.run("report", store, "--out", os.path.join(tmp, "o3"), "--replay", bad)
    h.check("replay CSV without a column: exit 1 naming it",
            r.returncode == 1 and "no column 'prefill_busy_energy_j'" in r.stderr, r.stderr)

    # ---- part 2: a farm-compiled store of the demo job, a short replay, --job
    fstore = os.path.join(tmp, "demo.h5")
    r = h.run("farm", "jobs/demo.json", "--store", fstore, "--results", os.path.join(tmp, "farm-results"), "--quiet")
    h.check("enpu farm compiles the demo job", r.returncode == 0, r.stderr[-500:])
    trace = os.path.join(tmp, "trace.csv")
    with open(os.path.join(src, "jobs/traces/AzureLLMInferenceTrace_conv.csv")) as f, open(trace, "w") as g:
        g.writelines(line for i, line in zip(range(1501), f))
    rdir = os.path.join(tmp, "replay")
    r = h.run("replay", "--store", fstore, "--trace", trace, "--cluster", "jobs/clusters/llama3-70b.json",
              "--out", rdir)
    h.check("enpu replay writes its outputs", r.returncode == 0 and os.path.exists(os.path.join(rdir, "summary.json")),
            r.stderr[-500:])
    # A windows file of a policy the replay's summary.json does not list (left by an older
    # run into the same directory) is not plotted.
    shutil.copy(os.path.join(rdir, "windows_nodvfs.csv"), os.path.join(rdir, "windows_stale.csv"))
    out4 = os.path.join(tmp, "out4")
    r = h.run("report", fstore, "--job", "jobs/demo.json", "--replay", rdir, "--out", out4, "--slack", "5%")
    dat = os.path.join(out4, "replay_energy.dat")
    h.check("a stale windows file (no policy of summary.json) is not plotted",
            os.path.exists(dat) and "stale" not in open(dat).read() and "nodvfs(6)" in open(dat).read())
    h.check("report with --job and --replay exits 0", r.returncode == 0, r.stderr)
    md = open(os.path.join(out4, "report.md")).read() if r.returncode == 0 else ""
    check_report("farm store", fstore, out4, md)
    h.figures_legible("farm store with a replay", out4)
    for ph in PHASES:
        h.check(f"farm store: freq_util_{ph}.png is a PNG", png_ok(os.path.join(out4, f"freq_util_{ph}.png")))
        h.check(f"farm store: Figure 19 {ph} at the requested 5 % slack",
                re.search(rf"^### {ph}: batch \d+, seq \d+, slack 5 %$", md, re.M) is not None)
    freq = md_rows(md, "| op | instances | util SA")
    h.check("farm store: every op of Figure 19 matched the job's graph", freq and "could not be matched" not in md
            and all("–" not in r for r in freq), md[md.find("## 3."):][:400])
    h.check("farm store: utilisations are percentages, states 1..34",
            all(0 <= float(x) <= 100.0001 for r in freq for x in r[2:7]) and
            all(1 <= int(x) <= 34 for r in freq for x in r[7:12]))
    h.check("farm store: replay_energy.png (Figure 22) is a PNG", png_ok(os.path.join(out4, "replay_energy.png")))
    h.check("farm store: replay_slack.png (Figure 5) is a PNG", png_ok(os.path.join(out4, "replay_slack.png")))
    per = md_rows(md, "| hours | policy | SLO attainment")
    h.check("farm store: peak rows for every policy and the paper's §4.8 rows",
            {r[1] for r in per if r[0] == "peak 14–20 h"} == set(json.load(open(os.path.join(rdir, "summary.json")))
                                                                   ["policies"]) and
            sum(r[0].startswith("paper §4.8") for r in per) == 4, per)
    summary = json.load(open(os.path.join(rdir, "summary.json"))) if os.path.exists(os.path.join(rdir, "summary.json")) else {}
    rep = {r[0]: r for r in md_rows(md, "| policy | requests | SLO attainment")}
    pols = summary.get("policies", {})
    h.check("farm store: replay table has every policy of summary.json", pols and set(rep) == set(pols),
            f"{sorted(rep)} vs {sorted(pols)}")
    h.check("farm store: replay table energy and SLO attainment equal summary.json",
            all(abs(float(rep[p][3]) - pols[p]["energy_j"]["total"]) <= 0.051 and
                abs(float(rep[p][2]) - 100 * pols[p]["slo_attainment"]) <= 5e-4 for p in rep if p in pols))

h.finish()
