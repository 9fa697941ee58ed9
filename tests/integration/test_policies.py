#!/usr/bin/python3
"""The paper's design space as policies of one store (docs/policies.md, "Policy variants"):
millisecond-epoch DVFS, power gating, shadow register sizes, domain counts and the
regulator loss of every plan.

Usage: /usr/bin/python3 test_policies.py ENPU_BINARY SOURCE_DIR HDF5_PLUGIN_DIR

A small Llama3-70B grid (2 prefill + 2 decode buckets, slacks 0/2/10 %) with nodvfs,
dvfs-c (GA), dvfs-c-ms, enpu-c, enpu-all, enpu-ms, enpu-3dom, enpu-4dom, pg, pg+enpu-all,
pg+dvfs-c-walk and enpu-all@shadow=0/4/32 is farmed in both budget modes (strict on one
rank and on three, whose stores must be identical):
1. h5py: every policy is a group; every plan carries a regulator loss per component,
   >= 0 and below its energy; only pg policies have gated plans, and a gated plan counts
   its gate events; epoch policies store epochs (ops of kind 1000) and give one V/f
   setting to all instances of an epoch; enpu-all@shadow=4 (the chip's size) stores
   exactly enpu-all's plans.
2. Properties, for every bucket and slack (both modes): enpu-all <= enpu-ms and
   pg+enpu-all <= enpu-all in energy (the same budget); a failure names the bucket.
3. `enpu store diff` of the 1-rank and 3-rank strict stores: identical.
4. `enpu validate` re-simulates every plan of every policy (sample = all buckets): pass.
5. `enpu query` of a gated plan prints the stored plan's gated energy.
6. `enpu report`: Figures 13, 15, 16, 17, 18 and 21 are written from the store.
"""
import json
import os
import subprocess
import sys
import tempfile

from harness import CLUSTER, TRACE, Harness, md_rows, small_llama_job

h = Harness(sys.argv[1], sys.argv[2])
src, plugins = sys.argv[2], sys.argv[3]
os.environ["HDF5_PLUGIN_PATH"] = plugins
os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
import h5py  # noqa: E402  (after HDF5_PLUGIN_PATH is set)

MODES = ("strict", "paper")
POLICIES = ["nodvfs", "dvfs-c", "dvfs-c-ms", "enpu-c", "enpu-all", "enpu-ms", "enpu-3dom", "enpu-4dom",
            "pg", "pg+enpu-all", "pg+dvfs-c-walk", {"policy": "enpu-all", "shadow": [0, 4, 32]}]
NAMES = POLICIES[:-1] + ["enpu-all@shadow=0", "enpu-all@shadow=4", "enpu-all@shadow=32"]
EPOCH_KIND = 1000


def job(tmp, mode):
    return small_llama_job(src, tmp, "policies", mode, [1, 16], [0, 0.02, 0.1], POLICIES,
                           epoch_ms=5)


def load(path):
    out = {}
    with h5py.File(path, "r") as f:
        for p in f["policies"]:
            g = f[f"policies/{p}"]
            out[p] = {t: g[t][()] for t in ("ops", "buckets", "plans", "plan_states") if t in g}
    return out


def by_key(t, pol):
    b, pl = t[pol]["buckets"], t[pol]["plans"]
    return {(int(b["phase"][r["bucket"]]), int(b["batch"][r["bucket"]]), int(b["seq"][r["bucket"]]),
             float(r["slack"])): r for r in pl}


def check_store(mode, t):
    h.check(f"{mode}: every policy is a group of the store", sorted(t) == sorted(NAMES), str(sorted(t)))
    for pol in NAMES:
        pl = t[pol]["plans"]
        loss = pl["regulator_loss_nj"]
        h.check(f"{mode} {pol}: regulator loss per component >= 0 and below the energy",
                len(pl) and (loss >= 0).all() and all(loss[k].sum() < pl["energy_nj"][k] for k in range(len(pl))))
        gated = [k for k in range(len(pl)) if pl["gated"][k]]
        if pol.startswith("pg"):
            h.check(f"{mode} {pol}: gated plans count their gate events",
                    all(pl["gates"][k] > 0 for k in gated) and (gated or mode == "strict"), str(gated))
        else:
            h.check(f"{mode} {pol}: no plan is gated", not gated)
    for pol in ("enpu-ms", "dvfs-c-ms"):
        ops = t[pol]["ops"]
        h.check(f"{mode} {pol}: its ops are epochs", len(ops) and all(k == EPOCH_KIND for k in ops["kind"]),
                str(list(ops["name"][:3])))
    a, s4 = by_key(t, "enpu-all"), by_key(t, "enpu-all@shadow=4")
    same = all(a[k]["energy_nj"] == s4[k]["energy_nj"] and a[k]["time_ns"] == s4[k]["time_ns"] for k in a)
    h.check(f"{mode}: enpu-all@shadow=4 (the chip's size) plans what enpu-all does", same and len(a) == len(s4))


def check_properties(mode, t):
    a, ms, pg = by_key(t, "enpu-all"), by_key(t, "enpu-ms"), by_key(t, "pg+enpu-all")
    for name, fine, coarse in (("enpu-all <= enpu-ms", a, ms), ("pg+enpu-all <= enpu-all", pg, a)):
        bad = [(k, fine[k]["energy_nj"], coarse[k]["energy_nj"]) for k in sorted(fine)
               if fine[k]["budget_ns"] == coarse[k]["budget_ns"]
               and fine[k]["energy_nj"] > coarse[k]["energy_nj"] * (1 + 1e-9)]
        h.check(f"{mode}: {name} in energy for every bucket and slack ({len(fine)} plans)",
                len(fine) == len(coarse) and not bad,
                "(phase, batch, seq, slack), energies: " + str(bad[:4]))


with tempfile.TemporaryDirectory() as tmp:
    stores, tabs, jobs = {}, {}, {}
    for mode in MODES:
        path, store = job(tmp, mode)
        r = h.run("farm", path, "--results", os.path.join(tmp, "farm"), "--quiet")
        if not h.check(f"enpu farm of the {mode} job with {len(NAMES)} policies", r.returncode == 0,
                       r.stderr[-800:]):
            h.finish()
        stores[mode], tabs[mode], jobs[mode] = store, load(store), path
        check_store(mode, tabs[mode])
        check_properties(mode, tabs[mode])

    # ---- 3. np independence
    three = os.path.join(tmp, "np3.h5")
    r = subprocess.run(["mpirun", "--oversubscribe", "-np", "3", h.enpu, "farm", jobs["strict"], "--store", three,
                        "--results", os.path.join(tmp, "farm"), "--quiet"], capture_output=True, text=True, cwd=src)
    h.check("enpu farm of the strict job on 3 ranks", r.returncode == 0, r.stderr[-600:])
    d = h.run("store", "diff", stores["strict"], three)
    h.check("store diff: 1 rank and 3 ranks give the same store", d.returncode == 0, d.stdout[-600:])

    # ---- 4. validation re-simulates every plan
    for mode in MODES:
        r = h.run("validate", stores[mode], "--trace", TRACE, "--cluster", os.path.join(src, CLUSTER),
                  "--job", jobs[mode], "--sample", "4", "--out", os.path.join(tmp, "val"), "--json")
        doc = json.loads(r.stdout) if r.returncode == 0 and r.stdout.strip() else {}
        want = 4 * 3 * len(NAMES)
        h.check(f"validate {mode}: all {want} plans of every policy re-simulated and passed",
                doc.get("result") == "pass" and doc.get("plans") == want and doc.get("failed") == 0,
                r.stderr[-600:] or str(doc)[:400])

    # ---- 5. query: a gated plan's energy
    for mode in MODES:
        q = h.run_json("query", stores[mode], "--phase", "decode", "--batch", "16", "--seq", "4608", "--slack", "0.1",
                       "--policy", "pg+enpu-all")
        pl = by_key(tabs[mode], "pg+enpu-all")[(1, 16, 4608, 0.1)]
        h.check(f"query {mode}: pg+enpu-all's stored plan energy is the gated one",
                q.get("plan_energy_nj") is not None and pl["gated"] == 1
                and abs(q["plan_energy_nj"] - pl["energy_nj"]) <= 1e-9 * pl["energy_nj"],
                f"{q.get('plan_energy_nj')} vs {pl['energy_nj']} gated {pl['gated']}")

    # ---- 6. report: the design-space figures, their numbers from the plans table
    out = os.path.join(tmp, "report")
    r = h.run("report", stores["paper"], "--out", out)
    md_path = os.path.join(out, "report.md")
    md = open(md_path).read() if r.returncode == 0 and os.path.exists(md_path) else ""
    pngs = ["regulator_loss_prefill", "regulator_loss_decode", "shadow", "granularity_prefill",
            "granularity_decode", "domains_prefill", "domains_decode", "seq_prefill", "gating_prefill",
            "gating_decode"]
    missing = [p for p in pngs if not os.path.getsize(os.path.join(out, p + ".png"))] if md else pngs
    h.check("report: Figures 13, 15, 16, 17, 18 and 21 drawn", md and not missing, r.stderr[-400:] + str(missing))
    # Figure 13's section: its tables carry the compared policies (the plot's series)
    fig13 = md.split("### Energy lost in the regulators (Figure 13)")[-1].split("\n### ")[0] if md else ""
    header = next((line for line in fig13.splitlines() if line.startswith("| prefill: slack (%) |")), "")
    rows = md_rows(fig13, header) if header else []
    t = tabs["paper"]
    compared = ("dvfs-c", "enpu-all")
    want, want_share = [], []
    for pol in compared:
        b, pl = t[pol]["buckets"], t[pol]["plans"]
        at0 = [k for k in range(len(pl)) if pl["slack"][k] == 0 and b["phase"][pl["bucket"][k]] == 0]
        v = [100 * pl["regulator_loss_nj"][k].sum() / b["e_nodvfs_nj"][pl["bucket"][k]] for k in at0]
        want.append(sum(v) / len(v))
        v = [100 * pl["regulator_loss_nj"][k].sum() / pl["energy_nj"][k] for k in at0]
        want_share.append(sum(v) / len(v))
    cols = [c.strip() for c in header.strip().strip("|").split("|")]
    # two tables of that header: % of NoDVFS energy, then % of the plan's energy (3 slacks each)
    got = [[float(rows[r][cols.index(p)]) for p in compared] for r in (0, 3)] \
        if len(rows) == 6 and all(p in cols for p in compared) else [[], []]
    h.check("report: Figure 13's regulator loss at 0 % (prefill) = the plans' mean, in both readings",
            got[0] and all(abs(a - b) < 1e-3 for a, b in zip(got[0] + got[1], want + want_share)),
            f"{got} vs {want} {want_share}")
    shadow = md_rows(md, "| shadow registers | policy | phase")
    h.check("report: Figure 15 has a row per shadow size and phase (0, 4, 32)",
            sorted({int(x[0]) for x in shadow}) == [0, 4, 32] and len(shadow) == 6, str(shadow))
h.finish()
