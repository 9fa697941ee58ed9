#!/usr/bin/python3
"""Budget modes end to end (docs/policies.md, "Budget modes"): farm, store, query, validate and
report carry each job's `budget` (strict | paper), and DVFS-C's request level is the GA.

Usage: /usr/bin/python3 test_budget.py ENPU_BINARY SOURCE_DIR HDF5_PLUGIN_DIR

A small Llama3-70B grid (2 prefill + 2 decode buckets, slacks 0/5/20 %, policies nodvfs,
dvfs-c, dvfs-c-walk, enpu-all) is farmed twice, once per mode:
1. h5py: every bucket and plan row carries the job's mode; budget_ns is the mode's
   formula; strict plans fit their whole time, paper plans their critical-path time, and
   overhead_pct = 100 (time - critical path) / T_nodvfs; the paper's overhead
   (paper_overhead_pct: transitions and the crossings' loop throughput loss, no fill/drain)
   lies in [0, overhead_pct],
   is 0 for NoDVFS and above 0 for eNPU-All's slowed plans; DVFS-C's plans come from the GA
   (no walk prefix) and save what the hull walk's (dvfs-c-walk) do, within 0.5 points;
   at 0 % slack paper mode saves more than strict (its budget is on the critical path).
2. `enpu query --slack` names the mode and prints the stored plan's two overheads (JSON: the
   same values as the plans table).
3. `enpu validate` re-simulates sampled plans of each store against their own mode: pass.
4. `enpu report`: Figure 11's rows name the mode and both overheads equal h5py's.
"""
import json
import os
import sys
import tempfile

from harness import CLUSTER, TRACE, Harness, md_rows, small_llama_job

h = Harness(sys.argv[1], sys.argv[2])
src, plugins = sys.argv[2], sys.argv[3]
os.environ["HDF5_PLUGIN_PATH"] = plugins
import h5py  # noqa: E402  (after HDF5_PLUGIN_PATH is set)

NO_PREFIX = 2**64 - 1
MODES = ("strict", "paper")


def job(tmp, mode):
    return small_llama_job(src, tmp, "budget", mode, [1, 8], [0, 0.05, 0.2],
                           ["nodvfs", "dvfs-c", "dvfs-c-walk", "enpu-all"])


def tables(path):
    with h5py.File(path, "r") as f:
        return {p: {t: f[f"policies/{p}/{t}"][()] for t in ("buckets", "plans")} for p in f["policies"]}


def close(a, b, rel=1e-9):
    return abs(a - b) <= rel * max(abs(a), abs(b), 1e-300)


def check_store(mode, t):
    code = MODES.index(mode)
    for pol, tb in t.items():
        b, pl = tb["buckets"], tb["plans"]
        ok = [i for i in range(len(b)) if b["status"][i] == 0]
        h.check(f"{mode} {pol}: every bucket row says budget {mode}", ok and all(b["budget"][i] == code for i in ok))
        h.check(f"{mode} {pol}: every plan row says budget {mode}", len(pl) and all(x == code for x in pl["budget"]))
        bad = []
        for k in range(len(pl)):
            bi = pl["bucket"][k]
            tn, tp, s = b["t_nodvfs_ns"][bi], b["t_peak_ns"][bi], pl["slack"][k]
            want = (1 + s) * tn if mode == "paper" else max(tn, tp) + s * tn
            fit = pl["cp_time_ns"][k] if mode == "paper" else pl["time_ns"][k]
            ovh = 100 * (pl["time_ns"][k] - pl["cp_time_ns"][k]) / tn
            if not (close(pl["budget_ns"][k], want) and fit <= pl["budget_ns"][k] * (1 + 1e-9)
                    and abs(pl["overhead_pct"][k] - ovh) <= 1e-9 * max(1.0, abs(ovh))):
                bad.append((k, pl["budget_ns"][k], want, fit, pl["overhead_pct"][k], ovh))
        h.check(f"{mode} {pol}: budget formula, the mode's fit and overhead = 100 (time - cp) / T_nodvfs",
                not bad, str(bad[:2]))
        po, ov = list(pl["paper_overhead_pct"]), list(pl["overhead_pct"])
        h.check(f"{mode} {pol}: 0 <= paper_overhead_pct <= overhead_pct" +
                (", 0 for NoDVFS" if pol == "nodvfs" else ", > 0 on some plan" if pol == "enpu-all" else ""),
                po and all(-1e-12 <= a <= b + 1e-12 for a, b in zip(po, ov)) and
                (pol != "nodvfs" or all(a == 0 for a in po)) and (pol != "enpu-all" or max(po) > 0),
                str(list(zip(po, ov))[:4]))
        prefixes = list(pl["walk_prefix"])
        if pol == "dvfs-c":
            h.check(f"{mode} dvfs-c: plans from the GA (no walk prefix)", all(p == NO_PREFIX for p in prefixes))
        elif pol != "nodvfs":  # walk prefixes, but for a strict plan finalisation had to lift
            h.check(f"{mode} {pol}: plans are walk prefixes", all(p != NO_PREFIX for p in prefixes)
                    if mode == "paper" else any(p != NO_PREFIX for p in prefixes), str(prefixes))
    ga, walk = t["dvfs-c"]["plans"], t["dvfs-c-walk"]["plans"]
    diff = max(abs(a - b) for a, b in zip(ga["savings_vs_nodvfs"], walk["savings_vs_nodvfs"]))
    h.check(f"{mode}: dvfs-c (GA) saves what dvfs-c-walk does, within 0.5 points (max {100 * diff:.3f})",
            len(ga) == len(walk) and diff <= 0.005)


def mean_at(t, pol, slack):
    pl = t[pol]["plans"]
    v = [pl["savings_vs_nodvfs"][k] for k in range(len(pl)) if pl["slack"][k] == slack]
    return sum(v) / len(v)


with tempfile.TemporaryDirectory() as tmp:
    stores, tabs, jobs = {}, {}, {}
    for mode in MODES:
        path, store = job(tmp, mode)
        r = h.run("farm", path, "--results", os.path.join(tmp, "farm"), "--quiet")
        if not h.check(f"enpu farm of the {mode} job", r.returncode == 0, r.stderr[-800:]):
            h.finish()
        stores[mode], tabs[mode], jobs[mode] = store, tables(store), path
        check_store(mode, tabs[mode])
    s, p = mean_at(tabs["strict"], "enpu-all", 0), mean_at(tabs["paper"], "enpu-all", 0)
    h.check(f"enpu-all at 0 %: paper saves more than strict ({100 * p:.2f} vs {100 * s:.2f} %)", p > s)

    # ---- 2. query: the mode and the stored plan's overhead
    for mode in MODES:
        args = ("query", stores[mode], "--phase", "prefill", "--batch", "1", "--seq", "4096", "--slack", "0.05",
                "--policy", "enpu-all")
        q = h.run_json(*args)
        pl, b = tabs[mode]["enpu-all"]["plans"], tabs[mode]["enpu-all"]["buckets"]
        k = next(k for k in range(len(pl)) if pl["slack"][k] == 0.05 and b["seq"][pl["bucket"][k]] == 4096
                 and b["phase"][pl["bucket"][k]] == 0)
        h.check(f"query {mode}: JSON names the mode", q.get("budget") == mode, q.get("budget"))
        h.check(f"query {mode}: the stored plan's time and both overheads", q.get("plan_time_ns") is not None
                and close(q["plan_time_ns"], pl["time_ns"][k]) and close(q["overhead_pct"], pl["overhead_pct"][k])
                and q.get("paper_overhead_pct") is not None and close(q["paper_overhead_pct"], pl["paper_overhead_pct"][k]),
                f"{q.get('plan_time_ns')} {q.get('overhead_pct')} {q.get('paper_overhead_pct')} vs "
                f"{pl['time_ns'][k]} {pl['overhead_pct'][k]} {pl['paper_overhead_pct'][k]}")
        txt = h.run(*args).stdout
        h.check(f"query {mode}: the text says the mode and both overheads",
                f"budget mode {mode}" in txt and f"{q['overhead_pct']:.3f}% of T_nodvfs (runtime)" in txt
                and f"{q['paper_overhead_pct']:.3f}% (paper" in txt, txt[:600])

    # ---- 3. validate each store against its own mode
    for mode in MODES:
        r = h.run("validate", stores[mode], "--trace", TRACE, "--cluster", os.path.join(src, CLUSTER), "--job", jobs[mode], "--sample", "4",
                  "--out", os.path.join(tmp, "val"), "--json")
        doc = json.loads(r.stdout) if r.returncode == 0 and r.stdout.strip() else {}
        h.check(f"validate {mode}: every sampled plan passes", doc.get("result") == "pass" and doc.get("plans", 0) > 0
                and doc.get("failed") == 0, r.stderr[-600:] or str(doc)[:400])

    # ---- 4. report: Figure 11 names the mode, the overhead equals h5py's
    for mode in MODES:
        out = os.path.join(tmp, f"report-{mode}")
        r = h.run("report", stores[mode], "--out", out)
        md_path = os.path.join(out, "report.md")
        md = open(md_path).read() if r.returncode == 0 and os.path.exists(md_path) else ""
        rows = md_rows(md, "| policy | phase | budget | slack")
        h.check(f"report {mode}: Figure 11 rows name the mode", rows and all(x[2] == mode for x in rows),
                r.stderr[-400:] or str(rows[:2]))
        t = tabs[mode]
        bad = []
        for x in rows:
            pl, b = t[x[0]]["plans"], t[x[0]]["buckets"]
            ph = ("prefill", "decode").index(x[1])
            ks = [k for k in range(len(pl))
                  if b["phase"][pl["bucket"][k]] == ph and abs(100 * pl["slack"][k] - float(x[3])) < 1e-9]
            for col, name in ((8, "overhead_pct"), (10, "paper_overhead_pct")):
                v = [pl[name][k] for k in ks]
                if not v or abs(float(x[col]) - sum(v) / len(v)) > 1e-4 or abs(float(x[col + 1]) - max(v)) > 1e-4:
                    bad.append((name, x, v))
        h.check(f"report {mode}: overhead and paper overhead mean/max per row = h5py's", rows and not bad,
                str(bad[:2]))
h.finish()
