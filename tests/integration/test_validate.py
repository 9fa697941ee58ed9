#!/usr/bin/python3
"""`enpu validate` on a real store compiled by `enpu farm` from jobs/demo.json.

Usage: /usr/bin/python3 test_validate.py ENPU_BINARY SOURCE_DIR HDF5_PLUGIN_DIR

1. Validate (job rebuilt from the store's attributes): every sampled plan passes (exit 0),
   the validation tables hold one row per plan of every sampled bucket with the values of
   the plans table (h5py reads them through the built zstd plugin), the replay row per
   policy, `enpu store diff` against the pre-validation store names only the validation
   tables, and results/<job>/validation.md has the right counts.
2. The same with --job jobs/demo.json: the same validation tables (store diff exit 0).
3. A copy whose stored time of one plan is edited by h5py: exit 1, the report says FAIL
   for that plan only.
4. `enpu farm` of the demo job with a `validation` section runs the validation at the
   end; with a missing trace it exits 1 with the message and the store stays readable
   without validation rows.
"""
import json
import os
import re
import shutil
import sys
import tempfile
import time

from harness import CLUSTER, TRACE, Harness, md_rows

h = Harness(sys.argv[1], sys.argv[2])
src, plugins = sys.argv[2], sys.argv[3]
os.environ["HDF5_PLUGIN_PATH"] = plugins
import h5py  # noqa: E402  (after HDF5_PLUGIN_PATH is set)
from store_checksum import reseal  # noqa: E402



def tables(path):
    with h5py.File(path, "r") as f:
        return {p: {t: f[f"policies/{p}/{t}"][()] for t in f[f"policies/{p}"]} for p in f["policies"]}


def validate(store, out, *extra):
    t0 = time.time()
    r = h.run("validate", store, "--trace", TRACE, "--cluster", CLUSTER, "--sample", "24", "--out", out,
              "--json", *extra)
    return r, time.time() - t0


with tempfile.TemporaryDirectory() as tmp:
    store = os.path.join(tmp, "plans.h5")
    t0 = time.time()
    r = h.run("farm", "jobs/demo.json", "--store", store, "--results", os.path.join(tmp, "farm"), "--quiet")
    farm_s = time.time() - t0
    if not h.check("enpu farm compiles the demo job", r.returncode == 0, r.stderr[-800:]):
        h.finish()
    pre = os.path.join(tmp, "pre.h5")
    shutil.copy(store, pre)

    # ---- 1. validation from the store's own attributes
    out = os.path.join(tmp, "results")
    r, took = validate(store, out)
    print(f"validate --sample 24 on the demo store: {took:.2f} s (farm {farm_s:.2f} s)")
    h.check("validate exits 0", r.returncode == 0, r.stderr[-800:])
    doc = json.loads(r.stdout) if r.returncode == 0 else {}
    h.check("every sampled plan passes", doc.get("result") == "pass" and doc.get("failed") == 0
            and doc.get("plans", 0) > 0 and doc.get("passed") == doc.get("plans"), str(doc))
    h.check("the job was rebuilt from the store's attributes", "rebuilt from the store" in doc.get("job", ""),
            doc.get("job", ""))
    t = tables(store)
    plans_total = 0
    for pol, tb in t.items():
        v, b, pl = tb.get("validation"), tb["buckets"], tb["plans"]
        ok_buckets = [i for i in range(len(b)) if b["status"][i] == 0 and b["plan_count"][i] > 0]
        h.check(f"{pol}: validation table read by h5py", v is not None and len(v) > 0)
        if v is None or len(v) == 0:
            continue
        plans_total += len(v)
        sampled = sorted(set(int(x) for x in v["bucket"]))
        h.check(f"{pol}: min(24, buckets) buckets sampled", len(sampled) == min(24, len(ok_buckets)),
                f"{len(sampled)} of {len(ok_buckets)}")
        h.check(f"{pol}: one row per plan of each sampled bucket",
                len(v) == sum(int(b["plan_count"][i]) for i in sampled))
        h.check(f"{pol}: rows carry the plans table's values",
                all(v["stored_time_ns"][k] == pl["time_ns"][v["plan"][k]]
                    and v["stored_energy_nj"][k] == pl["energy_nj"][v["plan"][k]]
                    and v["budget_ns"][k] == pl["budget_ns"][v["plan"][k]]
                    and v["batch"][k] == b["batch"][v["bucket"][k]] for k in range(len(v))))
        # Within the stated relative tolerance (1e-9): an all-peak plan's stored time is the
        # op-wise sum m·t, the re-simulation sums instance by instance (last bits differ).
        h.check(f"{pol}: every row passed, re-simulated time within budget and equal to the stored",
                all(v["pass"][k] == 1 and v["sim_time_ns"][k] <= v["budget_ns"][k] * (1 + 1e-9)
                    and abs(v["sim_time_ns"][k] - v["stored_time_ns"][k]) <= 1e-9 * v["stored_time_ns"][k]
                    and abs(v["sim_energy_nj"][k] - v["stored_energy_nj"][k]) <= 1e-9 * v["stored_energy_nj"][k]
                    for k in range(len(v))))
        rep = tb.get("validation_replay")
        h.check(f"{pol}: one replay row with requests served", rep is not None and len(rep) == 1
                and rep["requests"][0] > 0 and rep["served"][0] > 0 and 0 <= rep["slo_attainment"][0] <= 1)
    h.check("validation rows = plans of the JSON outcome", plans_total == doc.get("plans"), f"{plans_total}")

    r = h.run("store", "diff", pre, store, "--json")
    diff = json.loads(r.stdout) if r.stdout.strip() else {}
    tabs = {(d.get("what"), d.get("table")) for d in diff.get("differences", [])}
    h.check("store diff vs the pre-validation store: only the validation tables differ",
            r.returncode == 1 and tabs and all(w == "table" and tb in ("validation", "validation_replay")
                                               for w, tb in tabs), r.stdout[:600])

    md_path = os.path.join(out, "demo", "validation.md")
    md = open(md_path).read() if os.path.exists(md_path) else ""
    h.check("results/demo/validation.md written", bool(md), md_path)
    rows = md_rows(md, "| policy | phase |")
    h.check("the report lists every re-simulated plan, all pass",
            len(rows) == doc.get("plans") and all(row[-1] == "pass" for row in rows), f"{len(rows)} rows")
    m = re.search(r"\*\*PASS\*\* — (\d+) plans in (\d+) buckets of (\d+) policies: (\d+) passed, (\d+) failed", md)
    h.check("the report's counts", m and [int(x) for x in m.groups()] ==
            [doc.get("plans"), doc.get("buckets"), len(t), doc.get("plans"), 0], m.group(0) if m else md[:400])
    reprows = md_rows(md, "| policy | served |")
    h.check("the report has a replay row per policy", sorted(r[0] for r in reprows) == sorted(t), str(reprows))
    strata = md_rows(md, "| policy | stratum |")
    h.check("the report counts the sample per stratum",
            strata and sum(int(r[3]) for r in strata) == doc.get("buckets"), str(strata[:4]))

    # ---- 2. with --job: the same tables
    store2 = os.path.join(tmp, "plans2.h5")
    shutil.copy(pre, store2)
    r, _ = validate(store2, os.path.join(tmp, "results2"), "--job", "jobs/demo.json")
    doc2 = json.loads(r.stdout) if r.returncode == 0 else {}
    h.check("validate --job exits 0 and says where the job came from",
            r.returncode == 0 and "--job" in doc2.get("job", ""), r.stderr[-500:])
    r = h.run("store", "diff", store, store2)
    h.check("same sample and results with --job (store diff exit 0)", r.returncode == 0, r.stdout[:400])

    # ---- 3. a tampered plan fails
    bad = os.path.join(tmp, "tampered.h5")
    shutil.copy(pre, bad)
    with h5py.File(bad, "r+") as f:
        d = f["policies/enpu-all/plans"]
        row = d[2]
        row["time_ns"] = row["time_ns"] * 0.99
        d[2] = row
    r, _ = validate(bad, os.path.join(tmp, "results3"))
    h.check("a tampered stored time without a new checksum: exit 1, the table is named as damaged",
            r.returncode == 1 and "table plans: damaged: checksum mismatch" in r.stderr, r.stderr[-300:])
    reseal(bad, "policies/enpu-all/plans")  # the edit now reaches the re-simulation
    r, _ = validate(bad, os.path.join(tmp, "results3"))
    doc3 = json.loads(r.stdout) if r.stdout.strip() else {}
    h.check("a tampered stored time: exit 1, one plan failed", r.returncode == 1 and doc3.get("failed") == 1,
            r.stdout[-500:] + r.stderr[-300:])
    h.check("the outcome names the failed plan", "enpu-all" in doc3.get("first_failure", "")
            and "differs from the stored" in doc3.get("first_failure", ""), doc3.get("first_failure", ""))
    md3 = open(os.path.join(tmp, "results3", "demo", "validation.md")).read()
    fails = [r for r in md_rows(md3, "| policy | phase |") if r[-1] != "pass"]
    h.check("the report says FAIL for that plan only", "**FAIL**" in md3 and len(fails) == 1
            and fails[0][0] == "enpu-all", str(fails))
    with h5py.File(bad, "r") as f:
        v = f["policies/enpu-all/validation"][()]
        h.check("the store records the failure", sum(1 for k in range(len(v)) if v["pass"][k] == 0) == 1
                and any(v["plan"][k] == 2 and v["pass"][k] == 0 for k in range(len(v))))

    # ---- 4. the farm runs the validation when the job asks
    jobs = os.path.join(tmp, "jobs")
    os.mkdir(jobs)
    for sub in ("models", "chips", "clusters", "traces"):
        os.symlink(os.path.join(src, "jobs", sub), os.path.join(jobs, sub))
    job = json.load(open(os.path.join(src, "jobs/demo.json")))
    job["validation"] = {"trace": "traces/AzureLLMInferenceTrace_conv.csv", "sample": 16, "seed": 1}
    json.dump(job, open(os.path.join(jobs, "demo.json"), "w"), indent=2)
    fstore = os.path.join(tmp, "farm-val.h5")
    t0 = time.time()
    r = h.run("farm", os.path.join(jobs, "demo.json"), "--store", fstore, "--results", os.path.join(tmp, "fr"),
              "--quiet")
    print(f"farm of the demo job with validation: {time.time() - t0:.2f} s")
    h.check("farm with a validation section exits 0", r.returncode == 0, r.stderr[-800:])
    h.check("the farm wrote validation.md", os.path.exists(os.path.join(tmp, "fr", "demo", "validation.md")))
    ft = tables(fstore) if os.path.exists(fstore) else {}
    h.check("the farm's store has validation rows for every policy",
            ft and all(len(tb.get("validation", [])) > 0 and all(tb["validation"]["pass"]) for tb in ft.values()))

    job["validation"]["trace"] = "traces/missing.csv"
    json.dump(job, open(os.path.join(jobs, "demo.json"), "w"), indent=2)
    fstore2 = os.path.join(tmp, "farm-bad.h5")
    r = h.run("farm", os.path.join(jobs, "demo.json"), "--store", fstore2, "--results", os.path.join(tmp, "fr2"),
              "--quiet")
    h.check("farm with a missing validation trace exits 2 (bad input) naming it",
            r.returncode == 2 and "missing.csv" in r.stderr, f"exit {r.returncode}: {r.stderr[-500:]}")
    h.check("... before its first task: no store, no journal",
            not os.path.exists(fstore2) and not os.path.exists(fstore2 + ".journal"))

    # ---- bad input
    r = h.run("validate", store, "--cluster", CLUSTER)
    h.check("missing --trace is a usage error", r.returncode == 2 and "--trace" in r.stderr, r.stderr)
    r = h.run("validate", os.path.join(tmp, "nope.h5"), "--trace", TRACE, "--cluster", CLUSTER)
    h.check("a missing store: exit 2 naming it", r.returncode == 2 and "nope.h5" in r.stderr, r.stderr)
    r = h.run("validate", store, "--trace", TRACE, "--cluster", CLUSTER, "--sample", "0")
    h.check("--sample 0 is a usage error", r.returncode == 2, r.stderr)

h.finish()
