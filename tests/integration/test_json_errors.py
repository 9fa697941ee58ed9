#!/usr/bin/python3
"""Under --json every error is a JSON document too: on each error path of `enpu query`,
`enpu farm` and `enpu replay` (usage errors, missing, malformed or damaged inputs, a
request the store cannot answer), stdout holds exactly one JSON document,
{"error": {"code": N, "message": "..."}}, with N the exit status, which is what it is
without --json, and the message the one printed on stderr. A query below the fastest
plan (exit 0) prints its own document and no error beside it; a farm of two ranks under
mpirun prints one error document (rank 0's); a command without --json prints no document.

Usage: /usr/bin/python3 test_json_errors.py ENPU_BINARY SOURCE_DIR HDF5_PLUGIN_DIR
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

from farm_harness import ENV
from harness import Harness

h = Harness(os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]))
os.environ["HDF5_PLUGIN_PATH"] = os.path.abspath(sys.argv[3])
JOBS = os.path.join(h.src, "jobs")
CLUSTER = os.path.join(JOBS, "clusters", "llama3-70b.json")
TRACE = os.path.join(JOBS, "traces", "AzureLLMInferenceTrace_conv.csv")


def error_doc(name, args, want_exit):
    """args with --json: exit want_exit (as without --json), one error document."""
    plain = h.run(*args)
    r = h.run(*args, "--json")
    try:
        doc = json.loads(r.stdout)
    except ValueError:
        doc = None
    err = (doc or {}).get("error") if isinstance(doc, dict) else None
    msg = (err or {}).get("message", "")
    h.check(f"{name}: exit {want_exit} with and without --json, one error document with that code and "
            "stderr's message",
            r.returncode == want_exit and plain.returncode == want_exit and err is not None
            and err.get("code") == want_exit and msg and msg in r.stderr and plain.stdout.strip() == "",
            f"exit {r.returncode} (plain {plain.returncode}), stdout {r.stdout[:300]!r}, stderr {r.stderr[-300:]!r}")


def demo_job(tmp, name, **edit):
    with open(os.path.join(JOBS, "demo.json")) as f:
        j = json.load(f)
    for k in ("model", "chip", "cluster"):
        j[k] = os.path.normpath(os.path.join(JOBS, j[k]))
    j.pop("validation", None)
    j["store"] = os.path.join(tmp, name, "plans.h5")
    j.update(edit)
    path = os.path.join(tmp, f"{name}.json")
    with open(path, "w") as f:
        json.dump(j, f)
    return path, j["store"]


def query_paths(tmp, store):
    q = ["--phase", "decode", "--batch", "8", "--seq", "2048"]
    error_doc("query: missing --batch", ["query", store, "--phase", "decode", "--seq", "1", "--slack", "0"], 2)
    error_doc("query: a bare slack above 1", ["query", store, *q, "--slack", "5"], 2)
    error_doc("query: both --slack and --target-ms", ["query", store, *q, "--slack", "0", "--target-ms", "1"], 2)
    error_doc("query: an unknown option", ["query", store, *q, "--slack", "0", "--nope"], 2)
    error_doc("query: a missing store", ["query", store + ".missing", *q, "--slack", "0"], 2)
    error_doc("query: a file that is no store", ["query", TRACE, *q, "--slack", "0"], 2)
    error_doc("query: --batch 300, no covering bucket", ["query", store, "--phase", "decode", "--batch", "300",
                                                         "--seq", "2048", "--slack", "0.05"], 1)
    error_doc("query: --policy nope", ["query", store, *q, "--slack", "0", "--policy", "nope"], 2)
    error_doc("query: a bad --variant", ["query", store, *q, "--slack", "0", "--variant", "nope=1"], 2)
    damaged = os.path.join(tmp, "damaged.h5")
    shutil.copy(store, damaged)
    with open(damaged, "r+b") as f:  # the tables sit behind the superblock: zero the middle
        size = f.seek(0, 2)
        f.seek(size // 2)
        f.write(b"\0" * min(65536, size // 4))
    r = h.run("query", damaged, *q, "--slack", "0")
    if r.returncode != 0:
        error_doc("query: a damaged store", ["query", damaged, *q, "--slack", "0"], r.returncode)
    late = h.run("query", store, *q, "--target-ms", "1e-6", "--json")
    doc = json.loads(late.stdout) if late.returncode == 0 else {}
    h.check("query below the fastest plan: exit 0, its plan's document with the warning, no error",
            "error" not in doc and doc.get("warning"), late.stdout[:300])


def farm_paths(tmp):
    error_doc("farm: no job", ["farm"], 2)
    error_doc("farm: an unknown option", ["farm", os.path.join(JOBS, "demo.json"), "--nope"], 2)
    error_doc("farm: a missing job file", ["farm", os.path.join(tmp, "missing.json")], 2)
    bad = os.path.join(tmp, "bad.json")
    with open(bad, "w") as f:
        f.write('{"name": "bad", ')
    error_doc("farm: a malformed job file", ["farm", bad], 2)
    path, _ = demo_job(tmp, "range", slacks=[-1])
    error_doc("farm: a value out of range", ["farm", path], 2)
    path, _ = demo_job(tmp, "nomodel", model=os.path.join(tmp, "missing-model.json"))
    error_doc("farm: a job naming a missing model", ["farm", path], 2)
    error_doc("farm: --store with two jobs", ["farm", path, path, "--store", os.path.join(tmp, "x.h5")], 2)
    path, store = demo_job(tmp, "nostore")
    os.makedirs(os.path.dirname(store), exist_ok=True)
    with open(store, "w") as f:
        f.write("not a plan store\n")
    r = h.run("farm", path, "--quiet", "--results", os.path.join(tmp, "res-nostore"))
    if r.returncode != 0:
        error_doc("farm: the store path holds no store", ["farm", path, "--quiet", "--results",
                                                          os.path.join(tmp, "res-nostore")], r.returncode)


def farm_mpi(tmp):
    """Two ranks under mpirun: only rank 0 prints the error, so stdout holds one document."""
    for name, job, want in (("a missing job file", os.path.join(tmp, "missing.json"), 2),
                            ("a value out of range", demo_job(tmp, "range2", slacks=[-1])[0], 2)):
        r = subprocess.run(["mpirun", "-np", "2", "--oversubscribe", h.enpu, "farm", job, "--json"], cwd=h.src,
                           env=ENV, capture_output=True, text=True, timeout=600)
        try:
            doc = json.loads(r.stdout)
        except ValueError:
            doc = {}
        h.check(f"mpirun -np 2 farm --json, {name}: exit {want}, one error document",
                r.returncode == want and doc.get("error", {}).get("code") == want, f"exit {r.returncode}, "
                f"stdout {r.stdout[:400]!r}")


def replay_paths(tmp, store):
    base = ["replay", "--store", store, "--cluster", CLUSTER, "--trace", TRACE, "--out", os.path.join(tmp, "rp")]
    error_doc("replay: missing --cluster", ["replay", "--store", store, "--trace", TRACE], 2)
    error_doc("replay: an unknown option", [*base, "--nope"], 2)
    error_doc("replay: a missing store", ["replay", "--store", store + ".missing", *base[3:]], 2)
    error_doc("replay: a missing trace", [*base[:5], "--trace", os.path.join(tmp, "missing.csv")], 2)
    error_doc("replay: a missing cluster", ["replay", "--store", store, "--cluster", os.path.join(tmp, "no.json"),
                                            "--trace", TRACE], 2)
    bad = os.path.join(tmp, "bad.csv")
    with open(bad, "w") as f:
        f.write("TIMESTAMP,ContextTokens,GeneratedTokens\nyesterday,x,y\n")
    r = h.run("replay", "--store", store, "--cluster", CLUSTER, "--trace", bad)
    error_doc("replay: a malformed trace", ["replay", "--store", store, "--cluster", CLUSTER, "--trace", bad],
              r.returncode if r.returncode else 2)
    error_doc("replay: an unknown policy", [*base, "--policy", "nope"], 2)
    error_doc("replay: a missing --model file", [*base, "--model", os.path.join(tmp, "no-model.json")], 2)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        path, store = demo_job(tmp, "demo")
        r = h.run("farm", path, "--quiet", "--results", os.path.join(tmp, "results"))
        if not h.check("the demo job is farmed (one rank)", r.returncode == 0, r.stderr[-500:]):
            h.finish()
        query_paths(tmp, store)
        farm_paths(tmp)
        farm_mpi(tmp)
        replay_paths(tmp, store)
        r = h.run("query", store, "--phase", "decode", "--batch", "300", "--seq", "2048", "--slack", "0.05")
        h.check("without --json an error prints nothing on stdout", r.returncode == 1 and r.stdout == "", r.stdout)
    h.finish()


if __name__ == "__main__":
    main()
