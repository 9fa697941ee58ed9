"""The operator-result cache farms share (`enpu farm --cache`, `enpu cache`) and the
farm's "what changed" table (docs/store.md, "Failure semantics").

  - A, B, A: a job farmed on model A, then on model B (another FFN width: other op
    signatures, every bucket changed), then on A again into the same store. The third
    farm computes nothing, neither op nor bucket task (bucket results are cached too,
    keyed by everything they depend on), its counters say the cache held them, and its
    store equals the first one. Without the cache the third farm recomputes.
  - Two farms of two jobs over the same operators (one under mpirun -np 2) fill one
    cache at once: both succeed,
    `enpu cache verify` finds every entry intact, and a farm afterwards computes nothing.
  - A damaged entry (a flipped byte, a truncated file) is detected on read, counted,
    recomputed and written again.
  - What changed: each input field changed (job, model, chip, cluster, a chip table
    beside the chip file) gives its line in the summary's table, with the tasks
    recomputed, in summary.md and under --json.
Usage: test_cache.py ENPU SOURCE_DIR"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from farm_harness import ENV, farm_cmd, same, summary  # noqa: E402
from harness import Harness  # noqa: E402


def write_inputs(src, root, name="cache"):
    """The shipped model, chip (with its tables) and cluster under root/, and a small job."""
    for sub in ("models", "chips", "clusters"):
        if not os.path.isdir(os.path.join(root, sub)):
            shutil.copytree(os.path.join(src, "jobs", sub), os.path.join(root, sub))
    job = {"name": name, "model": "models/llama3-70b.json", "chip": "chips/tpuv5p.json",
           "cluster": "clusters/llama3-70b.json", "store": f"{name}.h5",
           "phases": {"prefill": {"batch": [1], "seq": [1024]}, "decode": {"batch": [8, 16], "seq": [2048]}},
           "slacks": [0, 0.05], "policies": ["nodvfs", "dvfs-c-walk"], "moe": {"capacity_factor": "worst"}}
    path = os.path.join(root, f"{name}.json")
    json.dump(job, open(path, "w"), indent=2)
    return path


def edit_json(path, fn):
    doc = json.load(open(path))
    fn(doc)
    json.dump(doc, open(path, "w"), indent=2)


def edit_text(path, fn):
    text = fn(open(path).read())
    open(path, "w").write(text)


def run_farm(h, tmp, job, store, cache, extra=()):
    args = ("--cache", cache) if cache else ("--no-cache",)
    r = subprocess.run(farm_cmd(h, 1, store, tmp, job=job, extra=(*args, "--quiet", *extra)), capture_output=True,
                       text=True, env=ENV, cwd=tmp)
    return r, summary(r.stdout)


def entries(cache):
    out = []
    for root, _, files in os.walk(cache):
        out += [os.path.join(root, f) for f in files if ".tmp." not in f]
    return sorted(out)


def test_a_b_a(h, tmp):
    root = os.path.join(tmp, "aba")
    os.makedirs(root)
    job, store, cache = write_inputs(h.src, root), os.path.join(root, "s.h5"), os.path.join(root, "cache")
    model = os.path.join(root, "models", "llama3-70b.json")
    edit_json(model, lambda m: None)  # the text edit_json writes, so that going back restores it exactly
    r1, s1 = run_farm(h, root, job, store, cache)
    h.check("A: farmed, every task computed and stored in the cache", r1.returncode == 0 and s1["recomputed"] > 0
            and s1["cache"]["stored"] == s1["recomputed"], r1.stderr[-400:] + json.dumps(s1.get("cache")))
    shutil.copy(store, store + ".A")
    edit_json(model, lambda m: m["ffn"].update(intermediate=24576))
    r2, s2 = run_farm(h, root, job, store, cache)
    h.check("B: other FFN ops recomputed", r2.returncode == 0 and s2["tasks"]["op"] > 0 and s2["tasks"]["bucket"] > 0,
            json.dumps(s2.get("tasks")))
    edit_json(model, lambda m: m["ffn"].update(intermediate=28672))
    shutil.copy(store, store + ".B")
    r3, s3 = run_farm(h, root, job, store, cache)
    c = s3.get("cache") or {}
    h.check("A again: nothing computed (no op, no bucket task)",
            r3.returncode == 0 and s3["tasks"]["total"] == 0 and s3["recomputed"] == 0, json.dumps(s3.get("tasks")))
    h.check("A again: the cache counters say why (B's store lacked A's FFN ops and every bucket)",
            c.get("hits_op") == s2["tasks"]["op"] and c.get("hits_bucket") == s2["tasks"]["bucket"]
            and c.get("misses") == 0 and c.get("damaged") == 0, json.dumps(c))
    ok, detail = same(h, store + ".A", store)
    h.check("A again: the store equals the first farm's", ok, detail)
    shutil.copy(store + ".B", store)
    r4, s4 = run_farm(h, root, job, store, None)
    h.check("without the cache, going back recomputes", r4.returncode == 0 and s4["recomputed"] == s2["recomputed"]
            and s4["cache"] is None, json.dumps(s4.get("tasks")))


def test_concurrent(h, tmp):
    root = os.path.join(tmp, "two")
    os.makedirs(root)
    cache = os.path.join(root, "cache")
    jobs = [write_inputs(h.src, root, name) for name in ("one", "two")]
    # one of them under mpirun (rank 0 alone touches the cache), the other on one rank
    procs = [subprocess.Popen(farm_cmd(h, np_, os.path.join(root, f"{n}.h5"), root, job=j,
                                       extra=("--cache", cache, "--quiet", "--results", os.path.join(root, n))),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV, cwd=root)
             for n, j, np_ in zip(("one", "two"), jobs, (2, 1))]
    outs = [p.communicate() for p in procs]
    sums = [summary(o[0]) for o in outs]
    h.check("two farms on one cache at once: both done", all(p.returncode == 0 for p in procs),
            " | ".join(o[1][-300:] for o in outs))
    stored = sum((s.get("cache") or {}).get("stored", 0) for s in sums)
    h.check("two farms on one cache at once: both wrote entries", all((s.get("cache") or {}).get("stored", 0) > 0
                                                                     for s in sums), str(stored))
    v = h.run("cache", "verify", "--cache", cache, "--json")
    doc = json.loads(v.stdout) if v.returncode == 0 else {}
    h.check("two farms on one cache at once: every entry intact, no temporary left",
            doc.get("damaged") == 0 and doc.get("entries", 0) > 0 and doc.get("temporaries") == 0, v.stdout + v.stderr)
    r, s = run_farm(h, root, jobs[0], os.path.join(root, "three.h5"), cache)
    h.check("a farm after them computes nothing", r.returncode == 0 and s["recomputed"] == 0, json.dumps(s.get("cache")))


def test_damaged(h, tmp):
    root = os.path.join(tmp, "damaged")
    os.makedirs(root)
    job, cache = write_inputs(h.src, root), os.path.join(root, "cache")
    run_farm(h, root, job, os.path.join(root, "a.h5"), cache)
    ops = [e for e in entries(cache) if e.endswith("-1")]
    flipped, cut = ops[0], ops[1]
    data = bytearray(open(flipped, "rb").read())
    size = len(data)
    data[-1] ^= 0x40
    open(flipped, "wb").write(data)
    with open(cut, "r+b") as f:
        f.truncate(os.path.getsize(cut) // 2)
    r, s = run_farm(h, root, job, os.path.join(root, "b.h5"), cache)
    c = s.get("cache") or {}
    h.check("damaged entries detected and recomputed", r.returncode == 0 and c.get("damaged") == 2
            and s["recomputed"] == 2 and s["tasks"]["op"] == 2 and c.get("stored") == 2, json.dumps(s.get("tasks"))
            + json.dumps(c))
    h.check("damaged entry written again whole", os.path.getsize(flipped) == size)
    ok, detail = same(h, os.path.join(root, "a.h5"), os.path.join(root, "b.h5"))
    h.check("the store from a damaged cache equals the first", ok, detail)
    open(flipped, "r+b").write(b"X")
    v = h.run("cache", "verify", "--cache", cache, "--json")
    h.check("enpu cache verify: a damaged entry is exit 1 and removed", v.returncode == 1
            and json.loads(v.stdout).get("damaged") == 1 and not os.path.exists(flipped), v.stdout + v.stderr)
    st = h.run("cache", "stats", "--cache", cache, "--json")
    n = json.loads(st.stdout)["entries"]
    p = h.run("cache", "prune", "--cache", cache, "--max-bytes", "0", "--json")
    h.check("enpu cache prune --max-bytes 0 removes every entry", p.returncode == 0
            and json.loads(p.stdout)["removed"] == n and not entries(cache), p.stdout + p.stderr)


def test_changes(h, tmp):
    root = os.path.join(tmp, "changes")
    os.makedirs(root)
    job, store = write_inputs(h.src, root), os.path.join(root, "s.h5")
    r, s = run_farm(h, root, job, store, None)
    h.check("first farm: no store before, no changes table", r.returncode == 0 and s["changes"] is None
            and "What changed" not in r.stdout)
    tables = os.path.join(root, "chips", "tpuv5p", "vu_vf_power.csv")
    steps = [("job.slacks", "[0,0.05]", "[0,0.1]", lambda: edit_json(job, lambda d: d.update(slacks=[0, 0.1]))),
             ("model.ffn.intermediate", "28672", "24576",
              lambda: edit_json(os.path.join(root, "models", "llama3-70b.json"),
                                lambda d: d["ffn"].update(intermediate=24576))),
             ("chip.fifo_sync_cycles", "5", "6",
              lambda: edit_json(os.path.join(root, "chips", "tpuv5p.json"), lambda d: d.update(fifo_sync_cycles=6))),
             ("cluster.dcn.energy_pj_per_byte", "480", "500",
              lambda: edit_json(os.path.join(root, "clusters", "llama3-70b.json"),
                                lambda d: d["dcn"].update(energy_pj_per_byte=500))),
             ("chip (tables beside the chip file)", None, None,
              lambda: edit_text(tables, lambda t: t.replace(",0.0\n", ",0.001\n", 1)))]
    for path, before, now, change in steps:
        change()
        r, s = run_farm(h, root, job, store, None, extra=("--results", os.path.join(root, "results")))
        ch = s.get("changes") or {}
        fields = ch.get("fields", [])
        h.check(f"{path}: its one line in the table (--json)", r.returncode == 0 and [f["path"] for f in fields] == [path]
                and (before is None or (fields[0]["before"], fields[0]["now"]) == (before, now)),
                r.stderr[-300:] + json.dumps(ch))
        t = s.get("tasks", {})
        line = (f"| {path} | {fields[0]['before']} -> {fields[0]['now']} | {t.get('op')} op + {t.get('bucket')} "
                f"bucket tasks recomputed |") if fields else "?"
        md = open(os.path.join(root, "results", "cache", "summary.md")).read()
        h.check(f"{path}: its line in summary.md with the tasks recomputed", line in md, line + "\n" + md[-600:])
    r, s = run_farm(h, root, job, store, None)
    h.check("nothing changed: an empty table", s.get("changes", {}).get("fields") == [] and s["recomputed"] == 0,
            json.dumps(s.get("changes")))


def main():
    h = Harness(os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]))
    with tempfile.TemporaryDirectory() as tmp:
        for test in (test_a_b_a, test_concurrent, test_damaged, test_changes):
            try:
                test(h, tmp)
            except (KeyError, TypeError, IndexError, ValueError, OSError) as e:  # a summary without the field
                h.fail(f"{test.__name__}: ran to its end", repr(e))
    h.finish()


if __name__ == "__main__":
    main()
