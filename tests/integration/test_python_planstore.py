#!/usr/bin/python3
"""The Python package python/enpu_planstore (ctypes over libenpu_planstore) against the C
answers: on a small Llama3-70B store farmed here, every lookup over the whole bucket grid
of every policy (the job's slacks, a slack between them, an exact target, padded
requests) equals `enpu query --json --vfset`, errors included (same code, same message);
a damaged store raises the library's error exactly when `enpu query` fails on it; the
package works from PYTHONPATH=python and after `pip install` into a venv; the example
python/examples/serve_loop.py runs over a trace and counts every batch (planned, at peak
on a larger compiled bucket, or uncovered with its share, the saving over the covered
batches with the coverage beside it, exit 1 below --min-coverage).

usage: test_python_planstore.py ENPU_BINARY SOURCE_DIR LIBENPU_PLANSTORE_SO"""
import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile

from harness import Harness, same_doc, source_planstore

enpu, src, libpath = sys.argv[1], os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3])
h = Harness(enpu, src)
tmp = tempfile.mkdtemp(prefix="enpu-python-")
enpu_planstore = source_planstore(src, libpath)

h.check("imported from the source tree", enpu_planstore.__file__.startswith(os.path.join(src, "python")))

# A small store: both phases, two policies, two slacks, and decode buckets too large for
# the chips (infeasible_capacity: an error to compare as well).
store = os.path.join(tmp, "plans.h5")
job = {"name": "python-planstore", "model": os.path.join(src, "jobs/models/llama3-70b.json"),
       "chip": os.path.join(src, "jobs/chips/tpuv5p.json"), "cluster": os.path.join(src, "jobs/clusters/llama3-70b.json"),
       "store": store, "phases": {"prefill": {"batch": [1, 4], "seq": [1024, 4096]},
                                  "decode": {"batch": [1, 8, 256], "seq": [2048, 8192, 131072]}},
       "slacks": [0, 0.05], "policies": ["nodvfs", "enpu-all"], "moe": {"capacity_factor": "worst"}}
jpath = os.path.join(tmp, "job.json")
json.dump(job, open(jpath, "w"))
r = h.run("farm", jpath)
if not h.check("farm of the test store: exit 0", r.returncode == 0, r.stderr[-1500:]):
    h.finish()
    sys.exit(1)


def compare(st, label, phase, batch, seq, policy, slack=None, target_ms=None):
    """One lookup through Python and through `enpu query`; @return True when they agree."""
    args = ["query", store, "--phase", phase, "--batch", str(batch), "--seq", str(seq), "--policy", policy,
            "--json", "--vfset"] + (["--slack", repr(slack)] if slack is not None else ["--target-ms", repr(target_ms)])
    c = h.run(*args)
    try:
        got, err = st.lookup(phase=phase, batch=batch, seq=seq, slack=slack, target_ms=target_ms, policy=policy), None
    except enpu_planstore.PlanStoreError as e:
        got, err = None, e
    if c.returncode == 0:
        if err:
            return h.fail(label, f"Python raised {err}, enpu query answered")
        want = json.loads(c.stdout)
        want.pop("ops")
        ops_c = json.loads(c.stdout)["ops"]
        ops_py = [{k: v for k, v in o.items() if k not in ("lead_energy_nj", "trail_energy_nj")} for o in got["ops"]]
        got = dict(got)
        got.pop("ops")
        got["slack"] = slack
        d = same_doc(got, want) or same_doc(ops_py, ops_c, "$.ops")
        return d is None or h.fail(label, d)
    msg = c.stderr.strip().removeprefix("enpu query: ")
    if not err or err.message != msg:
        return h.fail(label, f"enpu query failed ({msg}); Python: {err.message if err else got}")
    return True


with enpu_planstore.open(store) as st:
    pols = st.policies()
    h.check("policies() in name order", pols == sorted(job["policies"]), str(pols))
    n = agree = 0
    statuses = set()
    for pol in pols:
        grid = st.buckets(pol)
        want = {(ph, b, s) for ph in ("prefill", "decode") for b in job["phases"][ph]["batch"]
                for s in job["phases"][ph]["seq"]}
        h.check(f"{pol}: buckets() is the job's grid", {(g["phase"], g["batch"], g["seq"]) for g in grid} == want)
        for g in grid:
            statuses.add(g["status"])
            for slack in (0.0, 0.05, 0.03):
                n += 1
                agree += compare(st, f"{pol} {g} slack {slack}", g["phase"], g["batch"], g["seq"], pol, slack=slack)
            if g["status"] == "ok":
                t = st.lookup(phase=g["phase"], batch=g["batch"], seq=g["seq"], slack=0.0, policy=pol)
                for target in (t["t_nodvfs_ns"] * 1.02e-6, t["t_nodvfs_ns"] * 0.5e-6):
                    n += 1
                    agree += compare(st, f"{pol} {g} target {target} ms", g["phase"], g["batch"], g["seq"], pol,
                                     target_ms=target)
    h.check(f"every lookup over the grid equals enpu query ({agree} of {n})", agree == n and n > 0)
    h.check("the grid holds ok and infeasible_capacity buckets", {"ok", "infeasible_capacity"} <= statuses,
            str(statuses))
    padded = [("prefill", 3, 2000), ("prefill", 2, 10), ("decode", 5, 3000), ("decode", 300, 100), ("prefill", 1, 5000)]
    h.check("padded and uncovered requests equal enpu query",
            all(compare(st, f"padded {p}", *p, "enpu-all", slack=0.05) for p in padded))
    late = st.lookup(phase="decode", batch=1, seq=2048, target_ms=1e-6, policy="enpu-all")
    h.check("a target below the fastest plan gives the fastest plan with a warning, as enpu query",
            late["walk_prefix"] == 0 and "fastest plan" in (late["warning"] or ""), str(late.get("warning")))
    by_default = st.lookup(phase="decode", batch=1, seq=2048, slack=0.05)
    h.check("without a policy the store's eNPU policy answers, as enpu query",
            by_default["policy"] == "enpu-all" and by_default["policy_from"] == "default",
            f'{by_default["policy"]} {by_default["policy_from"]}')
    try:
        st.buckets("no-such-policy")
        h.fail("buckets() of an unknown policy raises")
    except enpu_planstore.PlanStoreError as e:
        h.check("buckets() of an unknown policy raises NOT_FOUND", e.code == -6 and "no-such-policy" in e.message)

# Damaged stores: Python raises exactly when `enpu query` fails, with its code and message.
def damaged(label, path):
    c = h.run("query", path, "--phase", "decode", "--batch", "1", "--seq", "2048", "--slack", "0.05")
    try:
        with enpu_planstore.open(path) as st:
            st.lookup(phase="decode", batch=1, seq=2048, slack=0.05)
        err = None
    except enpu_planstore.PlanStoreError as e:
        err = e
    if c.returncode == 0:
        return h.check(f"{label}: both answer", err is None, str(err))
    msg = c.stderr.strip().removeprefix("enpu query: ")
    return h.check(f"{label}: raises the library's error", err is not None and err.message == msg
                   and err.code in (-3, -6, -7), f"{msg} / {err}") and err is not None


trunc = os.path.join(tmp, "truncated.h5")
data = open(store, "rb").read()
open(trunc, "wb").write(data[: len(data) // 2])
h.check("a truncated store raises", damaged("truncated store", trunc))
junk = os.path.join(tmp, "junk.h5")
open(junk, "wb").write(b"not a plan store\n" * 100)
h.check("a file that is not a store raises", damaged("not a store", junk))
rnd, raised = random.Random(28), 0
flip = os.path.join(tmp, "flip.h5")
for k in range(12):
    shutil.copyfile(store, flip)
    with open(flip, "r+b") as fp:
        pos = rnd.randrange(len(data))
        fp.seek(pos)
        fp.write(bytes([data[pos] ^ 0xFF]))
    raised += damaged(f"byte flip {k} at {pos}", flip) is True
print(f"     byte flips: {raised} of 12 raised")

# pip install into a venv (Debian's Python is externally managed: a venv, or
# --break-system-packages); offline, so setuptools from Debian (--no-build-isolation).
pkg = os.path.join(tmp, "python")
shutil.copytree(os.path.join(src, "python"), pkg, ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
venv = os.path.join(tmp, "venv")
r = subprocess.run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", venv], capture_output=True, text=True)
r = r if r.returncode else subprocess.run([os.path.join(venv, "bin/pip"), "install", "--no-build-isolation",
                                           "--no-index", "-q", pkg], capture_output=True, text=True)
h.check("pip install ./python into a venv", r.returncode == 0, r.stderr[-1500:])
probe = ("import enpu_planstore as e, json, sys; s = e.open(sys.argv[1]); "
         "p = s.lookup(phase='decode', batch=8, seq=8192, slack=0.05, policy='enpu-all'); "
         "print(json.dumps([e.__file__, p['energy_nj'], p['walk_prefix']]))")
r = subprocess.run([os.path.join(venv, "bin/python"), "-c", probe, store], capture_output=True, text=True, cwd=tmp)
with enpu_planstore.open(store) as st:
    ref = st.lookup(phase="decode", batch=8, seq=8192, slack=0.05, policy="enpu-all")
out = json.loads(r.stdout) if r.returncode == 0 else None
h.check("the installed package answers as the source tree's",
        out and out[0].startswith(venv) and out[1] == ref["energy_nj"] and out[2] == ref["walk_prefix"], r.stderr)

# The example: a batch loop over a trace, energy reported.
trace = os.path.join(tmp, "trace.csv")
with open(os.path.join(src, "jobs/traces/AzureLLMInferenceTrace_conv.csv")) as f:
    lines = [l for l in f.read().splitlines() if l][:41]
open(trace, "w").write("\n".join(lines) + "\n")
env = dict(os.environ, PYTHONPATH=os.path.join(src, "python"))
r = subprocess.run(["/usr/bin/python3", os.path.join(src, "python/examples/serve_loop.py"), store, trace, "--json",
                    "--policy", "enpu-all", "--slack", "0.05"], capture_output=True, text=True, env=env)
rep = json.loads(r.stdout) if r.returncode == 0 else {}
h.check("serve_loop.py runs over 40 requests", rep.get("requests") == 40, r.stderr[-1500:])
h.check("serve_loop.py: every batch had a plan, decode batches >= the longest generation",
        rep and rep["uncovered_batches"] == 0 and
        rep["batches"]["decode"] >= max(int(l.split(",")[2]) for l in lines[1:]) - 1, json.dumps(rep))
h.check("serve_loop.py: energy below NoDVFS's", rep and 0 < rep["energy_j"] < rep["nodvfs_energy_j"], json.dumps(rep))
h.check("serve_loop.py: coverage 100 %, exit 0", rep and rep["coverage"] == 1.0 and r.returncode == 0, json.dumps(rep))

# Every batch counted: requests beyond every compiled bucket (20,000-token prompts; the
# largest prefill seq is 4096, decode batch 8 at 131072 does not fit) are uncovered, with
# their count and share, and the saving is over the covered batches with the coverage
# beside it; below --min-coverage a warning and exit 1.
def serve(rows, *extra):
    path = os.path.join(tmp, f"serve-{len(os.listdir(tmp))}.csv")
    open(path, "w").write("\n".join([lines[0]] + sorted(rows)) + "\n")
    r = subprocess.run(["/usr/bin/python3", os.path.join(src, "python/examples/serve_loop.py"), store, path, *extra],
                       capture_output=True, text=True, env=env)
    return r, (json.loads(r.stdout) if "--json" in extra and r.stdout else None)


long_rows = [f"2023-11-16 18:15:46.{i:07d},20000,3" for i in range(30)]
short = ["2023-11-16 18:15:50.0000000,100,2"]
for label, rows, low in (("mostly beyond the grid", short + long_rows, True),
                         ("a few beyond the grid", lines[1:] + long_rows, False)):
    r, rep = serve(rows, "--json")
    total = rep and rep["batches"]["prefill"] + rep["batches"]["decode"]
    h.check(f"serve_loop.py, {label}: every batch counted (planned + fallback + uncovered = all)",
            rep and rep["uncovered_batches"] > 0 and rep["total_batches"] == total
            and rep["planned_batches"] + rep["fallback_batches"] + rep["uncovered_batches"] == total
            and all(sum(k.values()) == rep["batches"][ph] for ph, k in rep["by_phase"].items()), json.dumps(rep))
    h.check(f"serve_loop.py, {label}: coverage and the uncovered share stated, saving over the covered only",
            rep and math.isclose(rep["coverage"], 1 - rep["uncovered_batches"] / total)
            and math.isclose(rep["uncovered_share"], rep["uncovered_batches"] / total)
            and "covered" in rep["savings_over"]
            and (rep["savings"] is None or math.isclose(rep["savings"], 1 - rep["energy_j"] / rep["nodvfs_energy_j"])),
            json.dumps(rep))
    h.check(f"serve_loop.py, {label}: " + ("a warning and exit 1 below 90 % coverage" if low else "exit 0 above 90 %"),
            (r.returncode == 1 and "WARNING" in r.stderr and "% of the batches" in r.stderr) if low
            else (r.returncode == 0 and rep["coverage"] >= 0.9), f"{r.returncode} {r.stderr}")
    r, _ = serve(rows)
    h.check(f"serve_loop.py, {label}: the text names the uncovered batches and the coverage beside the saving",
            f"{rep['uncovered_batches']} uncovered" in r.stdout and "coverage" in r.stdout.splitlines()[-1], r.stdout)
r, rep = serve(short + long_rows, "--json", "--min-coverage", "0")
h.check("serve_loop.py --min-coverage 0: exit 0 at low coverage", r.returncode == 0 and rep["coverage"] < 0.9, r.stderr)

# A bucket without a plan (failed) where a larger compiled one exists: the batch runs at
# peak there, its NoDVFS energy in both sums ("fallback"); a stub store stands in, as a
# farmed store's failed buckets cannot be made on purpose.
sys.path.insert(0, os.path.join(src, "python/examples"))
import serve_loop  # noqa: E402


class StubStore:
    grid = {(1, 1024): "ok", (4, 1024): "failed", (8, 1024): "ok"}

    def buckets(self, policy=None):
        return [{"phase": "prefill", "batch": b, "seq": s, "status": st} for (b, s), st in self.grid.items()]

    def lookup(self, phase, batch, seq, slack=None, policy=None, vfset=True):
        fits = sorted(k for k in self.grid if k[0] >= batch and k[1] >= seq)
        if not fits:
            raise enpu_planstore.PlanStoreError(-6, "beyond the grid")
        if self.grid[fits[0]] != "ok":
            raise enpu_planstore.PlanStoreError(-8, "no plan")
        e = float(fits[0][0] * fits[0][1])
        return {"energy_nj": e * (1 - slack), "e_nodvfs_nj": e}


m = serve_loop.Meter(StubStore(), "enpu-all", 0.25)
for shape in ((1, 100), (3, 1000), (3, 1000), (9, 10)):
    m.run("prefill", *shape)
h.check("serve_loop.Meter: planned, fallback at the larger bucket's NoDVFS energy, uncovered; all counted",
        m.kinds["prefill"] == {"planned": 1, "fallback": 2, "uncovered": 1} and m.batches["prefill"] == 4
        and m.energy_nj == 1024 * 0.75 + 2 * 8192 and m.nodvfs_nj == 1024 + 2 * 8192, f"{m.kinds} {m.energy_nj}")
h.finish()
