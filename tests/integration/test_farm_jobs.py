"""`enpu farm` with `ideal` split into sub-tasks, and several jobs in one run, under the
real mpirun with real HDF5 stores:
- `ideal` over one of the demo's buckets: every op's exact search runs as 8 part tasks; a farm killed
  with SIGKILL while the journal holds some but not all parts of an op resumes that op's
  search part-way (the summary counts it) and ends with the store an uninterrupted
  one-rank run makes, at -np 1, 2 and 4; `enpu query` and `enpu validate` read the
  `ideal` plans like any policy's;
- `enpu farm A B` shares the ranks between two jobs (the demo grid on Llama3-70B and on
  DeepSeek-V3 with another policy set): each store equals the store of its job run alone,
  each job gets its own summary; two jobs on one store, or --store with two jobs, exit 2.
Usage: test_farm_jobs.py ENPU SOURCE_DIR"""
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Harness  # noqa: E402
from farm_harness import (REC_OP, REC_PART, buckets_of, demo_variant, farm, journal_kinds,  # noqa: E402
                          kill_farm, reused_of, same, start, summary, tasks_of, wait_for)

PARTS = 8  # SEARCH_EXACT_PARTS


def partial_op_journalled(store):
    """The journal holds more part records than the ops it merged account for: some op's
    exact search is part-way (only `ideal` is farmed, so every op record is a merge)."""
    kinds = journal_kinds(store)
    return kinds.count(REC_PART) > PARTS * kinds.count(REC_OP)


# One of the demo's buckets (decode, which the query below reads): each of the 4 or more
# farms below runs every op's exact search, which is what the test's time goes on (8 s of
# CPU for this bucket, 10 s more for a prefill one); a kill lands part-way through an
# op's parts as surely with a few ops as with the demo's eight buckets' worth (it waits
# for the journal to show one).
IDEAL_PHASES = {"decode": {"batch": [32], "seq": [8192]}}


def ideal(h, tmp):
    job = demo_variant(h, tmp, "ideal", policies=["ideal"], phases=IDEAL_PHASES)
    ref = os.path.join(tmp, "ideal-ref.h5")
    r = farm(h, 1, ref, tmp, job=job)
    h.check("ideal np1: exit 0", r.returncode == 0, r.stderr[-600:])
    t = tasks_of(r.stdout)
    print(f"     tasks {t}")
    h.check("ideal np1: every op split into 8 part tasks",
            t.get("op") == 0 and t.get("part", 0) > 0 and t["part"] % PARTS == 0, r.stdout)
    h.check("ideal np1: the bucket compiled", buckets_of(r.stdout) == (1, 0, 0), r.stdout)
    for np_ in (1, 2, 4):
        s = os.path.join(tmp, f"ideal-kill{np_}.h5")
        resumed = 0
        for attempt in range(4):  # a kill lands between two ops only by a rare chance
            p = start(h, np_, s, tmp, job=job, extra=("--checkpoint-s", "600"))
            seen = wait_for(lambda: partial_op_journalled(s) or p.poll() is not None, 300)
            if p.poll() is not None:
                h.fail(f"ideal np{np_}: killed before it finished", p.communicate()[1][-400:])
                break
            kill_farm(p, s)
            r = farm(h, np_, s, tmp, job=job)
            resumed = reused_of(r.stdout).get("resumed_ops", 0) if r.returncode == 0 else 0
            print(f"     np{np_} attempt {attempt}: journal part-way {seen}, op searches resumed {resumed}")
            if resumed > 0 or r.returncode != 0:
                break
            os.remove(s)
        h.check(f"ideal np{np_}: SIGKILL mid-operator, the resume finishes", r.returncode == 0, r.stderr[-600:])
        h.check(f"ideal np{np_}: the resume continued an op's search part-way", resumed > 0, r.stdout[-600:])
        h.check(f"ideal np{np_}: store identical to the uninterrupted np1 run", *same(h, ref, s))
    q = h.run("query", ref, "--policy", "ideal", "--phase", "decode", "--batch", "20", "--seq", "3000",
              "--slack", "0.05", "--json")
    h.check("ideal: enpu query answers from the ideal plans", q.returncode == 0 and '"policy": "ideal"' in q.stdout,
            q.stdout[:300] + q.stderr[-300:])
    v = h.run("validate", ref, "--trace", os.path.join(h.src, "jobs", "traces", "AzureLLMInferenceTrace_conv.csv"),
              "--cluster", os.path.join(h.src, "jobs", "clusters", "llama3-70b.json"), "--sample", "4",
              "--out", os.path.join(tmp, "vres"), "--job", job)
    h.check("ideal: enpu validate re-simulates the ideal plans", v.returncode == 0 and "ideal" in v.stderr,
            v.stdout[-300:] + v.stderr[-300:])


def several(h, tmp):
    a = demo_variant(h, tmp, "multi-llama", policies=["nodvfs", "enpu-all"])
    b = demo_variant(h, tmp, "multi-dsv3", policies=["dvfs-c-walk", "enpu-c"],
                     model=os.path.join(h.src, "jobs", "models", "deepseek-v3-671b.json"),
                     cluster=os.path.join(h.src, "jobs", "clusters", "deepseek-v3-671b.json"))
    alone = {}
    for name, job in (("a", a), ("b", b)):
        alone[name] = os.path.join(tmp, f"alone-{name}.h5")
        r = farm(h, 1, alone[name], tmp, job=job)
        h.check(f"job {name} alone: exit 0", r.returncode == 0, r.stderr[-400:])
    for np_ in (1, 3):
        for name in ("multi-llama", "multi-dsv3"):
            for ext in ("", ".journal", ".lock"):
                if os.path.exists(os.path.join(tmp, name + ".h5" + ext)):
                    os.remove(os.path.join(tmp, name + ".h5" + ext))
        r = farm(h, np_, None, tmp, jobs=[a, b])
        h.check(f"two jobs np{np_}: exit 0", r.returncode == 0, r.stderr[-600:])
        h.check(f"two jobs np{np_}: one summary each, in the jobs' order",
                [summary(r.stdout, k).get("job") for k in (0, 1, 2)] == ["multi-llama", "multi-dsv3", None]
                and all(summary(r.stdout, k).get("jobs") == 2 for k in (0, 1)), r.stdout[-800:])
        h.check(f"two jobs np{np_}: each job's buckets compiled", all(
            buckets_of(r.stdout, k) == (16, 0, 0) for k in (0, 1)), r.stdout[-800:])
        h.check(f"two jobs np{np_}: each job's tasks done", all(
            tasks_of(r.stdout, k).get("total") == tasks_of(r.stdout, k).get("done", 0) > 0
            for k in (0, 1)), r.stdout[-800:])
        h.check(f"two jobs np{np_}: the Llama store equals its job run alone",
                *same(h, alone["a"], os.path.join(tmp, "multi-llama.h5")))
        h.check(f"two jobs np{np_}: the DeepSeek store equals its job run alone",
                *same(h, alone["b"], os.path.join(tmp, "multi-dsv3.h5")))
    for rel in ("multi-llama", "multi-dsv3"):
        h.check(f"{rel}: summary.md", os.path.exists(os.path.join(tmp, "results", rel, "summary.md")))
    r = farm(h, 1, None, tmp, jobs=[a, a])
    h.check("the same store twice: exit 2 naming it", r.returncode == 2 and "write the same store" in r.stderr,
            r.stderr[-300:])
    r = farm(h, 1, os.path.join(tmp, "x.h5"), tmp, jobs=[a, b])
    h.check("--store with two jobs: exit 2", r.returncode == 2 and "single job" in r.stderr, r.stderr[-300:])


def main():
    h = Harness(os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]))
    tmp = tempfile.mkdtemp(prefix="enpu-farm-jobs-")
    several(h, tmp)
    ideal(h, tmp)
    shutil.rmtree(tmp)
    h.finish()


if __name__ == "__main__":
    main()
