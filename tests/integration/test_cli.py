#!/usr/bin/python3
"""CLI contract test: runs the real `enpu` binary on the shipped jobs and checks the
JSON documents it prints (field names are a contract for scripts), and that a
malformed job fails with file:line:column and the JSON path.

usage: test_cli.py ENPU_BINARY SOURCE_DIR"""
import json
import os
import sys
import tempfile

from harness import Harness

enpu, src = sys.argv[1], sys.argv[2]
h = Harness(enpu, src)


# buckets: the paper grid of the Llama3-70B job.
doc = h.run_json("buckets", "jobs/llama3-70b.json")
tot = doc["totals"]
h.check("buckets totals fields", set(tot) >= {"buckets", "feasible", "infeasible_capacity", "compilations"})
h.check("buckets 2 phases x 12 batch x 36 seq", tot["buckets"] == 2 * 12 * 36, str(tot))
h.check("buckets feasible + infeasible = all", tot["feasible"] + tot["infeasible_capacity"] == tot["buckets"])
job = json.load(open(os.path.join(src, "jobs/llama3-70b.json")))
h.check("compilations = feasible x slacks x policies",
      tot["compilations"] == tot["feasible"] * len(job["slacks"]) * len(job["policies"]), str(tot))
pre = doc["phases"]["prefill"]
h.check("prefill seq axis has 36 buckets up to 128K", len(pre["seq"]) == 36 and pre["seq"][-1] == 131072)
big = [b for b in pre["buckets"] if b["batch"] == 256 and b["seq"] == 131072][0]
h.check("batch 256 x 128K prefill is infeasible (capacity)", big["feasible"] is False)
small = [b for b in pre["buckets"] if b["batch"] == 1 and b["seq"] == 1024][0]
h.check("batch 1 x 1024 prefill is feasible", small["feasible"] is True)

# graph: FLOPs per token against 2 x params (+ attention), weights per chip against params x 2 / TP.
for jobfile, params_b, tp in (("jobs/llama3-70b.json", 70.55, 4),):
    g = h.run_json("graph", jobfile, "--phase", "prefill", "--batch", "1", "--seq", "4096")
    t = g["totals"]
    h.check("graph ops fields", all({"id", "name", "kind", "shape", "flops", "hbm_bytes", "ici_bytes",
                                   "multiplicity", "signature"} <= set(op) for op in g["ops"]))
    ratio = t["weight_bytes"] / (params_b * 1e9 * 2 / tp)
    h.check(f"{jobfile}: weight bytes per chip within 2% of params*2/TP", abs(ratio - 1) < 0.02, f"ratio {ratio:.4f}")
    fpt = t["flops"] * tp / 4096
    h.check(f"{jobfile}: FLOPs/token >= 2 x layer params", fpt > 2 * 68.4e9, f"{fpt:.4g}")
g3 = h.run_json("graph", "jobs/deepseek-v3-671b.json", "--phase", "decode", "--batch", "64", "--seq", "4096")
h.check("deepseek-v3 graph has MoE all-to-all", any(op["kind"] == "alltoall" for op in g3["ops"]))

# A malformed job: exit non-zero, message names file:line:column and the JSON path.
with tempfile.TemporaryDirectory() as tmp:
    bad = os.path.join(tmp, "bad.json")
    text = open(os.path.join(src, "jobs/demo.json")).read()
    text = text.replace('"model": "models/', '"model": "' + os.path.join(src, "jobs/models/"))
    text = text.replace('"chip": "chips/', '"chip": "' + os.path.join(src, "jobs/chips/"))
    text = text.replace('"cluster": "clusters/', '"cluster": "' + os.path.join(src, "jobs/clusters/"))
    text = text.replace("[1, 4]", "[1, -4]", 1)
    open(bad, "w").write(text)
    line = next(i + 1 for i, l in enumerate(text.splitlines()) if "-4" in l)
    r = h.run("buckets", bad)
    h.check("malformed job exits non-zero", r.returncode != 0, f"exit {r.returncode}")
    h.check("malformed job error names file:line", f"bad.json:{line}:" in r.stderr, r.stderr)
    h.check("malformed job error names the JSON path", "$.phases.prefill.batch[1]" in r.stderr, r.stderr)
    r = h.run("buckets", os.path.join(tmp, "missing.json"))
    h.check("missing job file exits 1 and names it", r.returncode == 1 and "missing.json" in r.stderr, r.stderr)
r = h.run("buckets")
h.check("usage error exits 2", r.returncode == 2, f"exit {r.returncode}")

h.finish()
