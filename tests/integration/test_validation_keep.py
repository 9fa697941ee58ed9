#!/usr/bin/python3
"""A farm rerun keeps the validation rows of the plans it did not change.

Usage: /usr/bin/python3 test_validation_keep.py ENPU_BINARY SOURCE_DIR HDF5_PLUGIN_DIR

The demo job without its validation section is farmed (mpirun -np 2) and validated with
`enpu validate`; then
1. the same farm again: nothing recomputed, the summary counts every row kept, `enpu
   store diff` against the validated store finds nothing, and h5py reads the validation
   tables byte for byte as they were;
2. with --add-buckets (new buckets between the old ones, so rows move): every old row is
   kept, re-indexed onto a plan of its bucket with the values it validated; the replay
   rows are dropped and the farm says so (a replay uses every plan); `store verify`,
   `enpu query` and a new `enpu validate` pass on the result;
3. without one policy: that policy's rows are dropped and counted, the others kept;
4. with other slacks (every bucket recompiled): every row is dropped and counted.
"""
import json
import os
import shutil
import sys
import tempfile

from farm_harness import farm, summary
from harness import Harness

h = Harness(sys.argv[1], sys.argv[2])
os.environ["HDF5_PLUGIN_PATH"] = sys.argv[3]
import h5py  # noqa: E402  (after HDF5_PLUGIN_PATH is set)

ADDED = ("--add-buckets", "phase=prefill,batch=2,seq=2000", "--add-buckets", "phase=decode,batch=24,seq=3000")


def raw(path, table):
    """{policy: (rows as raw bytes, the table's checksum attribute)} of a table."""
    with h5py.File(path, "r") as f:
        out = {}
        for p in f["policies"]:
            ds = f["policies"][p].get(table)
            out[p] = (ds[()].tobytes(), int(ds.attrs["xxh3_64"])) if ds is not None and len(ds) else (b"", 0)
        return out


def rows(path):
    """{policy: (validation rows, buckets, plans)} read by h5py."""
    with h5py.File(path, "r") as f:
        return {p: tuple(g[t][()] if t in g else None for t in ("validation", "buckets", "plans"))
                for p, g in f["policies"].items()}


def without_index(v):
    """A validation row without the columns a rewrite may re-index."""
    return tuple(v[c].tobytes() if hasattr(v[c], "tobytes") else v[c]
                 for c in v.dtype.names if c not in ("bucket", "plan"))


def without_rows(doc):
    """A query answer without the store's path and row numbers (which new buckets move)."""
    if isinstance(doc, dict):
        return {k: without_rows(v) for k, v in doc.items()
                if k not in ("store", "row", "op", "lead_pareto", "trail_pareto")}
    return [without_rows(v) for v in doc] if isinstance(doc, list) else doc


def validation_of(r):
    return summary(r.stdout).get("validation", {})


def validate(jobs, job, store, out):
    return h.run("validate", store, "--job", job, "--trace", os.path.join(jobs, "traces",
                 "AzureLLMInferenceTrace_conv.csv"), "--cluster", os.path.join(jobs, "clusters", "llama3-70b.json"),
                 "--sample", "24", "--out", out)


def write_job(jobs, name, **changes):
    """The demo job (no validation) changed, as jobs/<name>.json; it stays job "keep" (its
    store refuses another job's name)."""
    job = json.load(open(os.path.join(jobs, "demo.json")))
    del job["validation"]
    job.update(name="keep", **changes)
    path = os.path.join(jobs, f"{name}.json")
    json.dump(job, open(path, "w"), indent=2)
    return path


with tempfile.TemporaryDirectory() as tmp:
    jobs = os.path.join(tmp, "jobs")
    shutil.copytree(os.path.join(h.src, "jobs"), jobs)
    keep = write_job(jobs, "keep")
    store = os.path.join(tmp, "plans.h5")
    r = farm(h, 2, store, tmp, job=keep)
    if not h.check("the demo job (no validation section) is farmed at -np 2", r.returncode == 0, r.stderr[-600:]):
        h.finish()
    v = validate(jobs, keep, store, os.path.join(tmp, "val"))
    h.check("enpu validate passes", v.returncode == 0, v.stdout[-300:] + v.stderr[-600:])
    validated = os.path.join(tmp, "validated.h5")
    shutil.copy(store, validated)
    before = rows(validated)
    nrows = sum(len(x[0]) for x in before.values() if x[0] is not None)
    h.check("the validation wrote rows for every policy", nrows > 0 and all(x[0] is not None for x in before.values()))

    # ---- 1. nothing changed
    r = farm(h, 2, store, tmp, job=keep)
    h.check("rerun: exit 0, nothing recomputed", r.returncode == 0 and summary(r.stdout).get("recomputed") == 0,
            r.stdout[-400:] + r.stderr[-400:])
    h.check("rerun: the summary counts every row kept", validation_of(r) == {
        "kept": nrows, "dropped": 0, "replay_kept": len(before), "replay_dropped": 0}, str(validation_of(r)))
    h.check("rerun: the farm says what it kept", f"validation: {nrows} rows kept, 0 dropped" in r.stderr,
            r.stderr[-400:])
    d = h.run("store", "diff", validated, store)
    h.check("rerun: store diff finds the validated store unchanged", d.returncode == 0, d.stdout[-600:])
    for table in ("validation", "validation_replay"):
        h.check(f"rerun: {table} byte-identical (h5py rows and checksum)", raw(validated, table) == raw(store, table))

    # ---- 2. new buckets between the old ones
    r = farm(h, 2, store, tmp, job=keep, extra=ADDED)
    h.check("add-buckets: exit 0, the new buckets compiled", r.returncode == 0 and
            summary(r.stdout).get("tasks", {}).get("bucket") == 2 * len(before), r.stdout[-400:] + r.stderr[-400:])
    h.check("add-buckets: every row kept, the replay rows dropped", validation_of(r) == {
        "kept": nrows, "dropped": 0, "replay_kept": 0, "replay_dropped": len(before)}, str(validation_of(r)))
    h.check("add-buckets: the farm says why the replay rows went", "a replay uses every plan" in r.stderr,
            r.stderr[-400:])
    after, moved = rows(store), 0
    for pol, (val, _, _) in before.items():
        nval, buckets, plans = after[pol]
        h.check(f"add-buckets: {pol}: the rows as validated, in order", nval is not None and
                [without_index(x) for x in nval] == [without_index(x) for x in val])
        if nval is None:
            continue
        moved += sum(int(a["bucket"] != b["bucket"]) for a, b in zip(val, nval))
        h.check(f"add-buckets: {pol}: each row names a plan of its bucket with the values it validated", all(
            plans["bucket"][x["plan"]] == x["bucket"] and buckets["phase"][x["bucket"]] == x["phase"]
            and buckets["batch"][x["bucket"]] == x["batch"] and buckets["seq"][x["bucket"]] == x["seq"]
            and plans["slack"][x["plan"]] == x["slack"] and plans["budget_ns"][x["plan"]] == x["budget_ns"]
            and plans["time_ns"][x["plan"]] == x["stored_time_ns"]
            and plans["energy_nj"][x["plan"]] == x["stored_energy_nj"] for x in nval))
        with h5py.File(store, "r") as f:
            h.check(f"add-buckets: {pol}: no replay row", "validation_replay" not in f["policies"][pol])
    h.check("add-buckets: rows moved (the new prefill bucket sits between old ones)", moved > 0, str(moved))
    r2 = h.run("store", "verify", store)
    h.check("add-buckets: store verify passes", r2.returncode == 0, r2.stdout[-300:] + r2.stderr[-300:])
    q = [h.run("query", s, "--policy", "enpu-all", "--phase", "decode", "--batch", "8", "--seq", "2048", "--slack",
               "0.05", "--json") for s in (validated, store)]
    answers = [without_rows(json.loads(x.stdout)) if x.returncode == 0 else None for x in q]
    h.check("add-buckets: enpu query answers an old bucket as before", answers[0] and answers[0] == answers[1],
            q[1].stdout[:300] + q[1].stderr[-300:])
    v = validate(jobs, keep, store, os.path.join(tmp, "val2"))
    h.check("add-buckets: enpu validate passes on the result", v.returncode == 0, v.stderr[-400:])

    # ---- 3. one policy fewer; 4. other slacks (every plan recompiled)
    base = os.path.join(tmp, "base.h5")
    shutil.copy(store, base)
    counts = {p: len(x[0]) for p, x in rows(base).items()}
    fewer = write_job(jobs, "fewer", policies=[p for p in json.load(open(keep))["policies"] if p != "enpu-c"])
    r = farm(h, 2, store, tmp, job=fewer, extra=ADDED)
    h.check("one policy fewer: its rows dropped, the others kept", r.returncode == 0 and validation_of(r) == {
        "kept": sum(counts.values()) - counts["enpu-c"], "dropped": counts["enpu-c"], "replay_kept": 0,
        "replay_dropped": len(counts)}, str(validation_of(r)) + r.stderr[-400:])
    h.check("one policy fewer: the others' rows as they were",
            {p: x for p, x in raw(base, "validation").items() if p != "enpu-c"} == raw(store, "validation"))
    slacks = write_job(jobs, "slacks", slacks=[0, 0.03], policies=list(counts))
    shutil.copy(base, store)
    r = farm(h, 2, store, tmp, job=slacks, extra=ADDED)
    h.check("other slacks: every row dropped and counted", r.returncode == 0 and validation_of(r) == {
        "kept": 0, "dropped": sum(counts.values()), "replay_kept": 0, "replay_dropped": len(counts)},
        str(validation_of(r)) + r.stderr[-400:])
    h.check("other slacks: the farm says how many it dropped",
            f"validation: 0 rows kept, {sum(counts.values())} dropped (their plans changed" in r.stderr,
            r.stderr[-400:])
    h.check("other slacks: no validation rows left", all(x[0] is None for x in rows(store).values()))
    r2 = h.run("store", "verify", store)
    h.check("other slacks: store verify passes", r2.returncode == 0, r2.stderr[-300:])

h.finish()
