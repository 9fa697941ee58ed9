#!/usr/bin/python3
"""test_job_init.py — `enpu job init` on published configs and a sample of the shipped
Azure conversation trace: every file it writes validates against schemas/ and loads
(`enpu buckets`), and its figures are the trace's own, recomputed here: the grid's
coverage (>= 99.9 % of the requests inside both phases' largest buckets), the padding
waste of each seq axis, the SLO classes' bounds at the nearest-rank percentiles with
targets ceil(5 x NoDVFS), the headroom of the largest bucket. A rerun leaves every file
as it was; overrides are taken, the importer's --ignore and --dtype-bytes included; bad
options are usage errors.

Usage: /usr/bin/python3 test_job_init.py ENPU_BINARY SOURCE_DIR"""
import json
import math
import os
import sys
import tempfile

import jsonschema

from harness import Harness

h = Harness(sys.argv[1], sys.argv[2])
SRC = h.src
TRACE = os.path.join(SRC, "jobs/traces/AzureLLMInferenceTrace_conv.csv")


def schema(kind):
    with open(os.path.join(SRC, "schemas", f"{kind}.schema.json")) as f:
        return json.load(f)


def validates(name, path, kind):
    with open(path) as f:
        doc = json.load(f)
    errors = list(jsonschema.Draft202012Validator(schema(kind)).iter_errors(doc))
    h.check(f"{name}: {os.path.basename(path)} validates against {kind}.schema.json", not errors,
            "; ".join(e.message for e in errors[:3]))
    return doc


def requests(path):
    with open(path) as f:
        rows = [line.strip().split(",") for line in f.readlines()[1:] if line.strip()]
    return [(int(r[1]), int(r[2])) for r in rows]


def percentile(sorted_values, p):
    rank = max(1, min(len(sorted_values), math.ceil(p / 100 * len(sorted_values) - 1e-9)))
    return sorted_values[rank - 1]


def waste(lengths, axis):
    padded = total = 0
    for x in lengths:
        b = next((a for a in axis if a >= x), None)
        if b is not None:
            padded, total = padded + b - x, total + b
    return padded / total


def init(tmp, model, out, *extra):
    p = h.run("job", "init", os.path.join(SRC, "tests/fixtures/hf", model), "--trace", os.path.join(tmp, "trace.csv"),
              "-o", out, "--json", *extra)
    h.check(f"{model}: job init exits 0", p.returncode == 0, p.stdout[-600:] + p.stderr[-1500:])
    return json.loads(p.stdout) if p.returncode == 0 else None


def check_files(name, doc, out, reqs):
    job = validates(name, os.path.join(out, "job.json"), "job")
    cluster = validates(name, os.path.join(out, "cluster.json"), "cluster")
    validates(name, os.path.join(out, "model.json"), "model")
    p = h.run("buckets", os.path.join(out, "job.json"))
    h.check(f"{name}: the job loads (enpu buckets)", p.returncode == 0, p.stderr[-800:])
    pre, dec = job["phases"]["prefill"]["seq"], job["phases"]["decode"]["seq"]
    inside = sum(1 for c, g in reqs if c <= pre[-1] and c + g <= dec[-1])
    h.check(f"{name}: >= 99.9 % of the requests inside the grid ({inside} of {len(reqs)})",
            inside >= 0.999 * len(reqs) and abs(doc["coverage"] - inside / len(reqs)) < 1e-12,
            f"job init says {doc['coverage']}")
    h.check(f"{name}: {doc['outside']} requests beyond the grid, as counted here", doc["outside"] == len(reqs) - inside)
    for phase, axis, lengths in (("prefill", pre, [c for c, _ in reqs]), ("decode", dec, [c + g for c, g in reqs])):
        h.check(f"{name}: {phase} padding waste {doc['padding_waste'][phase]:.4f} recomputed",
                abs(doc["padding_waste"][phase] - waste(lengths, axis)) < 1e-9, f"here {waste(lengths, axis)}")
        h.check(f"{name}: {phase} grid within the bucket budget (64)", len(axis) * len(job["phases"][phase]["batch"]) <= 64)
    ctx, tot = sorted(c for c, _ in reqs), sorted(c + g for c, g in reqs)
    for k, (p_, cls) in enumerate(zip((33, 66, 100), cluster["slo"])):
        want = (percentile(ctx, p_), percentile(tot, p_))
        h.check(f"{name}: class P{p_} bounds at the trace's percentile {want}",
                (cls["prefill_max_tokens"], cls["decode_max_tokens"]) == want, str(cls))
        s = doc["slo"][k]
        h.check(f"{name}: class P{p_} targets 5x NoDVFS ({s['nodvfs_ttft_ms']:.2f}, {s['nodvfs_tpot_ms']:.3f} ms)",
                cls["ttft_ms"] == math.ceil(5 * s["nodvfs_ttft_ms"]) and cls["tpot_ms"] == math.ceil(5 * s["nodvfs_tpot_ms"]),
                str(cls))
    h.check(f"{name}: headroom stated and at least 10 % in both phases ({doc['headroom']})",
            min(doc["headroom"].values()) >= 0.10)
    with open(os.path.join(out, "init.md")) as f:
        md = f.read()
    h.check(f"{name}: init.md states the headroom, coverage, padding and the rule's source",
            all(w in md for w in ("headroom", "coverage", "padding waste", "paper §4.1, Table 2")))
    nodes = cluster["prefill"]["parallel"]
    h.check(f"{name}: the cluster's node is the one stated (tp {doc['tp']}, ep {doc['ep']})",
            nodes["tp"] == doc["tp"] and nodes["ep"] == doc["ep"] and cluster["prefill"]["chips"] == doc["chips"])
    return job, cluster


with tempfile.TemporaryDirectory() as tmp:
    with open(TRACE) as f:
        lines = f.readlines()
    with open(os.path.join(tmp, "trace.csv"), "w") as f:
        f.writelines(lines[:3001])  # 3,000 requests
    reqs = requests(os.path.join(tmp, "trace.csv"))

    out = os.path.join(tmp, "llama")
    doc = init(tmp, "llama3.1-8b.json", out)
    if doc:
        check_files("llama3.1-8b", doc, out, reqs)
        h.check("llama3.1-8b: one chip (16 GB of weights)", doc["tp"] == 1 and doc["chips"] == 1)
        before = {n: os.stat(os.path.join(out, n)).st_mtime_ns for n in ("job.json", "cluster.json", "model.json", "init.md")}
        init(tmp, "llama3.1-8b.json", out)
        after = {n: os.stat(os.path.join(out, n)).st_mtime_ns for n in before}
        h.check("a rerun leaves every file as it was", before == after, f"{before} -> {after}")
        over = init(tmp, "llama3.1-8b.json", out, "--ttft-ms", "100,200,3000", "--tpot-ms", "40,40,50", "--tp", "2")
        with open(os.path.join(out, "cluster.json")) as f:
            cl = json.load(f)
        h.check("--ttft-ms, --tpot-ms and --tp are taken", over and [c["ttft_ms"] for c in cl["slo"]] == [100, 200, 3000]
                and [c["tpot_ms"] for c in cl["slo"]] == [40, 40, 50] and cl["decode"]["parallel"]["tp"] == 2, str(cl))

    out = os.path.join(tmp, "mixtral")
    doc = init(tmp, "mixtral-8x7b.json", out)
    if doc:
        job, _ = check_files("mixtral-8x7b", doc, out, reqs)
        h.check("mixtral-8x7b: 93 GB of weights take 2 chips, experts split (ep 2)", doc["chips"] == 2 and doc["ep"] == 2,
                f"chips {doc['chips']} tp {doc['tp']} ep {doc['ep']}")
        h.check("mixtral-8x7b: the job has the MoE section", "moe" in job)

    model = os.path.join(SRC, "tests/fixtures/hf/llama3.1-8b.json")
    out = os.path.join(tmp, "mooncake")
    p = h.run("job", "init", model, "--trace", os.path.join(SRC, "tests/fixtures/traces/mooncake.jsonl"), "--from",
              "mooncake", "-o", out, "--json")
    doc = json.loads(p.stdout) if p.returncode == 0 else {}
    job = validates("--from mooncake", os.path.join(out, "job.json"), "job") if p.returncode == 0 else {}
    h.check("--from mooncake: the trace converted into DIR/trace.csv and the job validates on it",
            doc.get("requests") == 8 and job.get("validation", {}).get("trace") == "trace.csv" and
            len(requests(os.path.join(out, "trace.csv"))) == 8, p.stdout[-400:] + p.stderr[-800:])
    # The importer's own options reach it through job init (and so through enpu plan): a
    # config with a key of its authors' (ALLaM's internal_version) is refused naming
    # --ignore, which job init then takes; an fp8 checkpoint (Devstral 2, 125 B) is priced
    # at one byte with --dtype-bytes 1, which halves its weights and its chips (4 -> 2).
    allam = os.path.join(SRC, "tests/fixtures/hf/allam-7b-instruct-preview.json")
    p = h.run("job", "init", allam, "--trace", os.path.join(tmp, "trace.csv"), "-o", tmp + "/allam")
    h.check("ALLaM: exit 2 naming internal_version and --ignore", p.returncode == 2 and "internal_version" in p.stderr
            and "--ignore" in p.stderr, p.stderr[-600:])
    p = h.run("job", "init", allam, "--trace", os.path.join(tmp, "trace.csv"), "-o", tmp + "/allam", "--ignore",
              "internal_version", "--json")
    h.check("ALLaM with --ignore internal_version: job init exits 0", p.returncode == 0, p.stderr[-600:])
    dev = os.path.join(SRC, "tests/fixtures/hf/devstral-2-123b-instruct.json")
    chips = {}
    for extra in ((), ("--dtype-bytes", "1")):
        out = os.path.join(tmp, "devstral-2" + "".join(extra))
        p = h.run("job", "init", dev, "--trace", os.path.join(tmp, "trace.csv"), "-o", out, "--json", *extra)
        ok = p.returncode == 0
        chips[extra] = json.loads(p.stdout)["chips"] if ok else 0
        h.check(f"Devstral 2 {' '.join(extra) or '(bfloat16)'}: job init exits 0", ok, p.stderr[-600:])
        if ok:
            with open(os.path.join(out, "model.json")) as f:
                want = int(extra[1]) if extra else 2
                h.check(f"Devstral 2 {' '.join(extra)}: model.json has dtype_bytes {want}",
                        json.load(f)["dtype_bytes"] == want)
    h.check("Devstral 2: 4 chips in bfloat16, 2 with --dtype-bytes 1", chips == {(): 4, ("--dtype-bytes", "1"): 2},
            str(chips))
    p = h.run("job", "init", os.path.join(SRC, "jobs/models/llama3-70b.json"), "--trace", os.path.join(tmp, "trace.csv"),
              "-o", tmp + "/x", "--dtype-bytes", "1")
    h.check("--dtype-bytes on a model file (not a config.json): exit 2 saying so",
            p.returncode == 2 and "Hugging Face config" in p.stderr, p.stderr[-600:])
    for args, why in (((model, "--trace", os.path.join(tmp, "trace.csv"), "--ttft-ms", "1,2", "-o", tmp + "/x"),
                       "a TTFT list shorter than the classes"),
                      ((model, "--trace", os.path.join(tmp, "trace.csv"), "--percentiles", "66,33", "-o", tmp + "/x"),
                       "percentiles out of order"),
                      ((model, "--trace", os.path.join(tmp, "none.csv"), "-o", tmp + "/x"), "a missing trace"),
                      ((model, "--trace", os.path.join(tmp, "trace.csv"), "--bucket-budget", "3", "-o", tmp + "/x"),
                       "a budget below the batch sizes")):
        p = h.run("job", "init", *args)
        h.check(f"{why}: exit 2 with a message", p.returncode == 2 and "enpu job init:" in p.stderr, p.stderr[-400:])
    p = h.run("job", "init", model, "--trace", os.path.join(tmp, "trace.csv"), "--tp", "3", "-o", tmp + "/x")
    h.check("a --tp that does not divide the heads: exit 1 naming it", p.returncode == 1 and "tp 3" in p.stderr,
            p.stderr[-400:])

h.finish()
