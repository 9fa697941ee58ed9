"""MoE experts as operators and the capacity policies, end to end with the real binary,
the real mpirun and the real HDF5 store (read back with h5py):

- the shipped DeepSeek-V3 graph has one operator per resident expert projection: the
  hot expert and the E/ep − 1 others (one op with that count), E/ep in all;
- DeepSeek-V2 on its Table 3 node (capacity "ignore", as shipped): the farm compiles
  every bucket, `enpu store info` shows the policy and that every bucket overflows HBM,
  the buckets table (h5py) carries the note, `enpu query` returns it with the plan and
  `enpu report` says so;
- the same grid under "enforce" compiles nothing (infeasible, capacity), under
  "offload" compiles every bucket with a host-link operator in the store's ops;
  `enpu compile` agrees on one bucket (refused under enforce, compiled under offload);
- `enpu farm --capacity-factor F` records F in the store; a factor below 1 is a usage
  error naming the allowed range;
- `enpu compile --capacity-factor` (Figure 20): at the worst case the worst-case plan is
  the plan itself, and --out writes the figure's files.

Usage: test_moe_capacity.py ENPU_BINARY SOURCE_DIR H5ZSTD_PLUGIN_DIR"""
import json
import os
import subprocess
import sys
import tempfile

from harness import Harness

h = Harness(sys.argv[1], sys.argv[2])
SRC, PLUGINS = sys.argv[2], sys.argv[3]
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_rmaps_base_oversubscribe="1")
H5_BUCKETS = """
import h5py, json, sys
with h5py.File(sys.argv[1], "r") as f:
    out = {p: {"buckets": [[int(r["status"]), r["message"].decode()] for r in g["buckets"][:]],
               "ops": [[int(r["kind"]), r["name"].decode()] for r in g["ops"][:]]}
           for p, g in f["policies"].items()}
print(json.dumps(out))
"""

tmp = tempfile.mkdtemp(prefix="test_moe_capacity_")


def small_job(base, name, **changes):
    """A copy of jobs/<base>.json with a 3-bucket grid, 2 policies, absolute references."""
    with open(os.path.join(SRC, "jobs", base + ".json")) as f:
        job = json.load(f)
    for key in ("model", "chip", "cluster"):
        job[key] = os.path.join(SRC, "jobs", job[key])
    job.update(name=name, store=os.path.join(tmp, name + ".h5"), slacks=[0, 0.05],
               policies=["nodvfs", "enpu-all"],
               phases={"prefill": {"batch": [1], "seq": [1024]},
                       "decode": {"batch": [1, 64], "seq": [2048]}})
    job.update(changes)
    path = os.path.join(tmp, name + ".json")
    with open(path, "w") as f:
        json.dump(job, f, indent=1)
    return path, job["store"]


def farm(job, *extra):
    cmd = ["mpirun", "-np", "2", h.enpu, "farm", job, "--quiet", "--results", tmp, *extra]
    return subprocess.run(cmd, capture_output=True, text=True, env=ENV, cwd=SRC)


def h5(store):
    r = subprocess.run(["/usr/bin/python3", "-c", H5_BUCKETS, store], capture_output=True, text=True,
                       env=dict(os.environ, HDF5_PLUGIN_PATH=PLUGINS), check=True)
    return json.loads(r.stdout)


# ---- the graph: one op per resident expert projection
g = h.run_json("graph", "jobs/deepseek-v3-671b.json", "--phase", "decode", "--batch", "1", "--seq", "2048")
moe = [o for o in g["ops"] if o["name"].startswith("moe.expert")]
local = g["moe"]["experts_local"]
h.check("V3 graph: 256 routed experts over EP 2 = 128 per chip", local == 128, str(g["moe"]))
h.check("V3 graph: each of gate, up, swiglu, down once for the hot expert and once for the others",
        sorted(o["name"] for o in moe) ==
        sorted(f"moe.expert{e}.{p}" for e in ("0", f"1-{local - 1}") for p in ("gate", "up", "swiglu", "down")),
        str([o["name"] for o in moe]))
h.check("V3 graph: the hot expert's ops count 1, the others' E/ep - 1",
        all(o["count"] == (1 if o["name"].startswith("moe.expert0.") else local - 1) for o in moe),
        str([(o["name"], o["count"]) for o in moe]))
h.check("V3 graph: decode reads every resident expert (one padded row each)",
        all(o["shape"]["m"] == 1 for o in moe if o["kind"] == "matmul"))

# ---- capacity ignore (DeepSeek-V2 as shipped)
job, store = small_job("deepseek-v2-236b", "v2-ignore")
r = farm(job)
h.check("farm (ignore) exits 0", r.returncode == 0, r.stderr[-400:])
info = h.run_json("store", "info", store)
h.check("store info: capacity policy ignore", info["capacity"]["policy"] == "ignore", str(info.get("capacity")))
h.check("store info: every bucket compiled although none fits HBM",
        info["capacity"]["buckets_over_hbm"] == 3 and
        all(p["buckets"]["ok"] == 3 and p["buckets"]["infeasible_capacity"] == 0 for p in info["policies"]),
        str(info["policies"]))
h.check("store info: MoE experts all-resident, capacity factor worst",
        info["moe"] == {"experts": "all-resident", "capacity_factor": "worst"}, str(info.get("moe")))
tables = h5(store)
h.check("h5py: every bucket ok and noted 'capacity ignored'",
        all(s == 0 and m.startswith("capacity ignored: needs") for p in tables.values() for s, m in p["buckets"]),
        str(tables["enpu-all"]["buckets"]))
q = h.run_json("query", store, "--phase", "decode", "--batch", "1", "--seq", "2000", "--slack", "0.05")
h.check("query: the plan carries the capacity note", q["capacity_note"].startswith("capacity ignored"),
        q.get("capacity_note", ""))
rep = h.run("report", store, "--out", os.path.join(tmp, "report"))
md = open(os.path.join(tmp, "report", "report.md")).read() if rep.returncode == 0 else ""
h.check("report: says every bucket was compiled over HBM under capacity ignore",
        "- Capacity `ignore`: 3 of 3 buckets were compiled although they exceed" in md, rep.stderr + md[:600])
human = h.run("query", store, "--phase", "decode", "--batch", "1", "--seq", "2000", "--slack", "0.05")
h.check("query (human): prints the capacity note", "capacity: capacity ignored" in human.stdout, human.stdout)

# ---- enforce: nothing compiles; offload: everything, with a host-link operator
job, store = small_job("deepseek-v2-236b", "v2-enforce", capacity="enforce")
r = farm(job)
info = h.run_json("store", "info", store)
h.check("farm (enforce): every bucket infeasible (capacity)",
        r.returncode == 0 and all(p["buckets"]["infeasible_capacity"] == 3 for p in info["policies"]),
        r.stderr[-300:] + str(info["policies"]))
bucket = ("--phase", "decode", "--batch", "1", "--seq", "2048", "--slacks", "0.05")
r = h.run("compile", job, *bucket)
h.check("compile (enforce): the bucket is refused, saying why", r.returncode != 0 and
        "does not fit the chips: needs" in r.stderr, f"exit {r.returncode}: {r.stderr[-300:]}")
job, store = small_job("deepseek-v2-236b", "v2-offload", capacity="offload")
r = h.run("compile", job, *bucket)
gr = h.run_json("graph", job, *bucket[:6])
h.check("compile (offload): the same bucket compiles, its graph streaming weights over the host link",
        r.returncode == 0 and any(o["name"] == "host.weight_stream" for o in gr["ops"]),
        f"exit {r.returncode}: {r.stderr[-300:]}")
r = farm(job)
info = h.run_json("store", "info", store)
tables = h5(store)
h.check("farm (offload): every bucket compiled",
        r.returncode == 0 and all(p["buckets"]["ok"] == 3 for p in info["policies"]), r.stderr[-300:])
h.check("store (offload): a host_load op (kind 11) named host.weight_stream in every policy",
        all([11, "host.weight_stream"] in p["ops"] for p in tables.values()), str(tables["nodvfs"]["ops"][:3]))
h.check("store (offload): the buckets say how much they stream",
        all("streams" in m for p in tables.values() for _, m in p["buckets"]), str(tables["nodvfs"]["buckets"]))

# ---- the capacity factor as a farm parameter
job, store = small_job("deepseek-v3-671b", "v3-cf2", phases={"decode": {"batch": [8], "seq": [2048]}})
r = farm(job, "--capacity-factor", "2")
info = h.run_json("store", "info", store)
h.check("farm --capacity-factor 2: recorded in the store", r.returncode == 0 and
        info["moe"]["capacity_factor"] == "2", r.stderr[-300:] + str(info.get("moe")))
r = farm(job, "--capacity-factor", "0.5")
h.check("farm --capacity-factor 0.5: input error naming the range",
        r.returncode == 2 and "[1, 32]" in r.stderr, f"exit {r.returncode}: {r.stderr[-300:]}")

# ---- Figure 20 from compile
out = os.path.join(tmp, "fig20")
c = h.run_json("compile", "jobs/deepseek-v3-671b.json", "--phase", "prefill", "--batch", "1", "--seq", "1024",
               "--policy", "enpu-all", "--capacity-factor", "1,worst", "--slacks", "0,0.05", "--out", out)
worst = [row for row in c["rows"] if row["capacity_factor"] == 32]
h.check("compile --capacity-factor: 2 factors x 2 slacks", len(c["rows"]) == 4, str(c["rows"]))
h.check("compile --capacity-factor: at the worst case the worst-case plan is the plan",
        all(abs(row["savings"] - row["savings_worst_case_plan"]) < 1e-9 for row in worst), str(worst))
h.check("compile --out: figure20.md, .dat, .gp and a PNG",
        all(os.path.getsize(os.path.join(out, "figure20." + x)) > 0 for x in ("md", "dat", "gp", "png")) and
        open(os.path.join(out, "figure20.png"), "rb").read(8) == b"\x89PNG\r\n\x1a\n")
h.finish()
