"""`enpu farm` with the real mpirun and the real HDF5 store, on jobs/demo.json:
- -np 1, 2 and 4 give stores with identical content (`enpu store diff`, exit 0);
- kill -9 of the whole farm at random moments, restarted each time, ends with the same
  store, and a restart after a journal sync reuses work;
- SIGUSR1 to mpirun gives exit 3, and the same command then finishes the same store;
- a rerun computes nothing; --add-buckets extends the grid and is remembered;
- the summary is one JSON document on stdout with --json (what these checks read), the
  Markdown table without it, and summary.md either way;
- changing the FFN size recomputes exactly the ops whose signatures changed (derived
  independently from `enpu graph --json`) and re-walks every bucket, reusing the rest;
- a reader (`enpu store info`, which validates the whole store) run over and over while
  a farm writes and a second farm waits for its lock always reads a complete store;
- bad input exits 2 without writing anything.
Usage: test_farm.py ENPU SOURCE_DIR"""
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Harness  # noqa: E402
from farm_harness import (ENV, buckets_of, demo_variant, farm, farm_cmd, journal_has_records,  # noqa: E402
                          kill_farm, reused_of, same, start, summary, tasks_of, wait_for)


def progress_mark(store):
    """What a restart could reuse: the published store's identity and the journal's size."""
    try:
        st = os.stat(store)
        mark = (st.st_ino, st.st_mtime_ns)
    except FileNotFoundError:
        mark = None
    j = store + ".journal"
    records = os.path.getsize(j) - 16 if os.path.exists(j) else 0  # beyond the header
    return mark, max(records, 0)


def signatures(h, job):
    """Graph signatures of every bucket of the demo grid, from `enpu graph --json`."""
    sigs = set()
    for phase, batches, seqs in (("prefill", (1, 4), (1024, 4096)), ("decode", (8, 32), (2048, 8192))):
        for b in batches:
            for s in seqs:
                d = h.run_json("graph", job, "--phase", phase, "--batch", str(b), "--seq", str(s))
                sigs |= {op["signature"] for op in d["ops"]}
    return sigs


def main():
    h = Harness(sys.argv[1], sys.argv[2])
    tmp = tempfile.mkdtemp(prefix="enpu-farm-")
    rnd = random.Random(int(os.environ.get("FARM_TEST_SEED", "5")))
    ref = os.path.join(tmp, "ref.h5")

    # Reference: one rank, no launcher.
    r = farm(h, 1, ref, tmp)
    h.check("np1 exit 0", r.returncode == 0, r.stderr[-600:])
    s = summary(r.stdout)
    total = tasks_of(r.stdout).get("total", 0)
    h.check("np1 computed every task", total > 0 and s.get("recomputed") == total, r.stdout)
    t = tasks_of(r.stdout)
    h.check("np1 summary: job, store, outcome, every task done", s.get("job") == "demo" and s.get("store") == ref
            and s.get("outcome") == "done" and t.get("done") == total and t.get("failed") == 0
            and t.get("op", 0) + t.get("bucket", 0) + t.get("part", 0) == total and s.get("evaluations", 0) > 0,
            r.stdout)
    h.check("np1 progress lines on stderr", re.search(r"farm: \d+/\d+ tasks \(.*%\), .*evals/s, ETA", r.stderr),
            r.stderr[-300:])
    md = os.path.join(tmp, "results", "demo", "summary.md")
    h.check("summary.md written", os.path.exists(md) and "# Farm summary: demo" in open(md).read())
    h.check("buckets all ok", buckets_of(r.stdout) == (32, 0, 0), r.stdout)
    h.check("journal reset after the final checkpoint (its header and the job's identity)",
            not journal_has_records(ref) and os.path.getsize(ref + ".journal") <= 256)

    # -np 2 and 4: same content.
    for n in (2, 4):
        s = os.path.join(tmp, f"np{n}.h5")
        r = farm(h, n, s, tmp)
        h.check(f"np{n} exit 0", r.returncode == 0, r.stderr[-600:])
        h.check(f"np{n} store identical to np1", *same(h, ref, s))

    # A rerun computes nothing; without --json the summary is the Markdown table.
    r = farm(h, 1, ref, tmp, as_json=False)
    h.check("rerun exit 0", r.returncode == 0, r.stderr[-300:])
    h.check("rerun without --json: the Markdown summary", "# Farm summary: demo" in r.stdout
            and "| recomputed | 0 |" in r.stdout and not summary(r.stdout), r.stdout)
    r = farm(h, 1, ref, tmp)
    h.check("rerun has no tasks",
            tasks_of(r.stdout).get("total") == 0 and summary(r.stdout).get("recomputed") == 0, r.stdout)
    h.check("rerun reused everything from the store", reused_of(r.stdout).get("store") == total, r.stdout)

    # The runs below must still be working when they are killed, signalled or joined:
    # the demo grid with the GA of dvfs-c (seconds of CPU a bucket) is, on any machine.
    slow = demo_variant(h, tmp, "slow", policies=["nodvfs", "dvfs-c"])
    slow_ref = os.path.join(tmp, "slow-ref.h5")
    r = farm(h, 1, slow_ref, tmp, job=slow)
    h.check("slow job: reference exit 0", r.returncode == 0, r.stderr[-400:])

    # kill -9 of the whole farm (mpirun and its ranks), each time after it finished a task
    # and then published a checkpoint, so every start leaves work behind whatever the
    # machine's speed; then at a random point within the next checkpoint interval.
    k = os.path.join(tmp, "killed.h5")
    log = os.path.join(tmp, "killed.err")
    kills = 0
    for attempt in range(40):
        if kills >= 3:
            break
        with open(log, "w") as err:
            p = subprocess.Popen(farm_cmd(h, 2, k, tmp, job=slow,
                                          extra=("--checkpoint-s", "0.1", "--progress-s", "0.05")),
                                 stdout=subprocess.DEVNULL, stderr=err, env=ENV, cwd=tmp, start_new_session=True)
        if not wait_for(lambda: p.poll() is not None or re.search(r"farm: [1-9]\d*/", open(log).read()), 120):
            raise SystemExit("timed out waiting for a task done")
        mark = progress_mark(k)
        if not wait_for(lambda: p.poll() is not None or progress_mark(k) != mark, 120):
            raise SystemExit("timed out waiting for the next checkpoint")
        time.sleep(rnd.uniform(0.0, 0.1))
        if p.poll() is None:
            kill_farm(p, k)
            kills += 1
            print(f"     kill -9 after a checkpoint of {k}")
        else:
            p.wait()  # finished before the kill: nothing left to interrupt
            break
    r = farm(h, 2, k, tmp, job=slow)
    h.check("after kills: finishes", r.returncode == 0, r.stderr[-600:])
    h.check("at least 3 kills happened", kills >= 3, f"kills {kills}")
    h.check("after kills: reused work from store or journal",
            reused_of(r.stdout).get("store", 0) + reused_of(r.stdout).get("journal", 0) > 0, r.stdout)
    h.check("after kills: store identical to np1", *same(h, slow_ref, k))

    # A kill just after the first journal sync: the restart takes the results from the
    # journal (no checkpoint yet: --checkpoint-s is long). The demo grid with the GA of
    # dvfs-c (seconds of CPU a bucket) is still running then, on any machine.
    j = os.path.join(tmp, "journal.h5")
    p = start(h, 1, j, tmp, job=slow, extra=("--checkpoint-s", "600"))
    h.check("kill after a journal sync: records journalled", wait_for(lambda: journal_has_records(j), 120))
    kill_farm(p, j)
    r = farm(h, 1, j, tmp, job=slow)
    h.check("kill after a journal sync: restart reuses journal work", reused_of(r.stdout).get("journal", 0) > 0,
            r.stdout)
    h.check("kill after a journal sync: store identical", *same(h, slow_ref, j))

    # Two farms on one store: the second waits for the first's lock, then has nothing to
    # do; while they run, a reader (`enpu store info`) over and over always sees a
    # complete, valid store.
    two = os.path.join(tmp, "two.h5")
    first = start(h, 1, two, tmp, job=slow, extra=("--checkpoint-s", "0.2"))
    h.check("two farms: the first holds the lock", wait_for(lambda: journal_has_records(two), 120))
    # The wait is a hang guard, not the 30 s default: on a loaded machine the first farm
    # can hold the lock longer than that (exit 4 would be right, and no test of the wait).
    second = subprocess.Popen(farm_cmd(h, 1, two, tmp, job=slow, extra=("--lock-wait", "1500")),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV, cwd=tmp)
    reads = bad = 0
    while first.poll() is None or second.poll() is None:
        if os.path.exists(two):
            q = h.run("store", "info", two)
            reads += 1
            bad += q.returncode != 0
            if q.returncode != 0:
                print(q.stderr[-300:])
        time.sleep(0.05)
    first.communicate()
    out, err = second.communicate()
    h.check("second farm waited for the first, naming it",
            re.search(r"is being written by pid %d on \S+ since \S+: enpu farm " % first.pid, err), err[-300:])
    h.check("second farm: exit 0, nothing recomputed", second.returncode == 0 and
            summary(out).get("recomputed") == 0, out[-400:])
    h.check("two farms: store identical", *same(h, slow_ref, two))
    h.check("reader during the farms: every open valid", reads >= 5 and bad == 0, f"{reads} reads, {bad} bad")

    # SIGUSR1 to mpirun: checkpoint, exit 3; the same command finishes.
    u = os.path.join(tmp, "usr1.h5")
    p = start(h, 2, u, tmp, job=slow, extra=("--checkpoint-s", "600"))
    h.check("SIGUSR1: records journalled", wait_for(lambda: journal_has_records(u), 120))
    p.send_signal(signal.SIGUSR1)
    out, err = p.communicate(timeout=60)
    h.check("SIGUSR1: exit 3", p.returncode == 3, f"exit {p.returncode}: {err[-400:]}")
    h.check("SIGUSR1: summary says interrupted", summary(out).get("outcome") == "interrupted", out)
    h.check("SIGUSR1: store readable after the stop", h.run("store", "info", u).returncode == 0)
    r = farm(h, 2, u, tmp, job=slow)
    h.check("SIGUSR1: the same command finishes", r.returncode == 0, r.stderr[-400:])
    h.check("SIGUSR1: resumed with reuse",
            reused_of(r.stdout).get("store", 0) + reused_of(r.stdout).get("journal", 0) > 0, r.stdout)
    h.check("SIGUSR1: store identical to np1", *same(h, slow_ref, u))

    # --add-buckets extends the grid and is remembered by later runs.
    a = os.path.join(tmp, "added.h5")
    shutil.copy(ref, a)
    r = farm(h, 1, a, tmp, extra=("--add-buckets", "phase=decode,batch=24,seq=3000"))
    h.check("add-buckets: exit 0", r.returncode == 0, r.stderr[-300:])
    h.check("add-buckets: 4 bucket tasks (one per policy)", tasks_of(r.stdout).get("bucket") == 4, r.stdout)
    h.check("add-buckets: 36 buckets", buckets_of(r.stdout) == (36, 0, 0), r.stdout)
    r = farm(h, 1, a, tmp)
    h.check("add-buckets: remembered by a plain rerun", tasks_of(r.stdout).get("total") == 0 and
            buckets_of(r.stdout) == (36, 0, 0), r.stdout)
    q = h.run("query", a, "--phase", "decode", "--batch", "20", "--seq", "2900", "--slack", "0.05", "--json")
    h.check("add-buckets: query pads to the added bucket", q.returncode == 0 and '"batch": 24' in q.stdout,
            q.stdout[:300] + q.stderr[-300:])

    # Changing the FFN size recomputes exactly the changed signatures.
    jobs = os.path.join(tmp, "jobs")
    shutil.copytree(os.path.join(h.src, "jobs"), jobs)
    model = os.path.join(jobs, "models", "llama3-70b.json")
    text = open(model).read()
    h.check("model has the FFN size to change", '"intermediate": 28672' in text)
    open(model, "w").write(text.replace('"intermediate": 28672', '"intermediate": 24576'))
    job = os.path.join(jobs, "demo.json")
    old, new = signatures(h, os.path.join(h.src, "jobs", "demo.json")), signatures(h, job)
    changed = new - old
    m = os.path.join(tmp, "model.h5")
    shutil.copy(ref, m)
    r = farm(h, 1, m, tmp, job=job)
    h.check("model change: exit 0", r.returncode == 0, r.stderr[-300:])
    t = tasks_of(r.stdout)
    print(f"     {len(changed)} of {len(new)} signatures changed; tasks {t}")
    h.check("model change: some but not all signatures changed", 0 < len(changed) < len(new))
    h.check("model change: op tasks = changed signatures x 4 policies", t.get("op") == 4 * len(changed),
            r.stdout)
    h.check("model change: every bucket re-walked (all contain the FFN)", t.get("bucket") == 32, r.stdout)
    h.check("model change: unchanged ops (attention) reused", reused_of(r.stdout).get("store") ==
            4 * (len(new) - len(changed)), r.stdout)
    d = h.run("store", "diff", ref, m)
    h.check("model change: the stores differ", d.returncode == 1, d.stdout[-300:])

    # Bad input: exit 2, nothing written.
    b = os.path.join(tmp, "bad.h5")
    r = farm(h, 1, b, tmp, job=os.path.join(tmp, "missing.json"))
    h.check("missing job: exit 2", r.returncode == 2 and "missing.json" in r.stderr, r.stderr[-300:])
    r = farm(h, 1, b, tmp, extra=("--add-buckets", "phase=decode,batch=0,seq=5"))
    h.check("bad --add-buckets: exit 2", r.returncode == 2 and "--add-buckets" in r.stderr, r.stderr[-300:])
    r = farm(h, 1, b, tmp, extra=("--checkpoint-s", "-1"))
    h.check("bad --checkpoint-s: exit 2", r.returncode == 2, r.stderr[-300:])
    h.check("bad input wrote nothing", not os.path.exists(b) and not os.path.exists(b + ".journal"))

    shutil.rmtree(tmp)
    h.finish()


if __name__ == "__main__":
    main()
