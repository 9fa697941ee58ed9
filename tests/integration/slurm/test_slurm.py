"""The sbatch scripts of slurm/ against a real single-node Slurm and the real `enpu farm`.

Each scenario starts its own local Slurm (slurm_cluster.LocalSlurm: munged, slurmctld,
slurmd on localhost under a temporary directory), runs, and tears the daemons down by
PID, also on failure:
  demo     sbatch farm.sbatch (2 tasks, srun + PMIx) on jobs/demo.json completes, logs
           progress lines, and its store answers `enpu query`;
  requeue  a job with --time=1 (Slurm's minimum) and --signal=B:USR1@20 on a job of a
           few seconds of compute (2 tasks, mpirun): the batch shell receives the warning
           signal, the farm checkpoints (exit 3), the job requeues itself and finishes on a
           later start, reusing the checkpointed work (the first start holds after its
           first result until the signal, ENPU_FARM_TEST_HOLD, so the warning never comes
           after the work is done); the store is identical
           (`enpu store diff`, exit 0) to an uninterrupted run made alongside. A loaded
           machine needs more starts: the test waits while the job makes progress
           (restarts, log lines), not for a fixed time;
  array    models-array.sbatch over a list of two small job files gives two stores, and an
           array index past the list fails with a clear message;
  regen    regen.sbatch after an FFN size change recomputes exactly the op signatures that
           changed (derived independently from `enpu graph`) and prints the store diff;
  validate validate.sbatch on a demo store passes and writes validation.md;
  paper    paper.sbatch on the quick pipeline (jobs/paper/quick/): the submitter submits
           one array task per model and a report job after the array; every job
           completes, the README is written, and each store equals the one tools/paper.py
           (what `make paper` runs) gives for the same grid (`enpu store diff`, exit 0), as do
           the Table 2, Figure 20 and replay outputs. tools/paper.py's output is
           integration_paper's cold run (CTest fixture paper_quick, in ENPU_PAPER_QUICK), so
           the quick grid is computed by tools/paper.py once per ctest run. The Slurm run
           is a rerun after `make paper` for one model and a first run for the other:
           Llama3-70B's folder starts as a copy of make paper's (its farms under Slurm
           recompute nothing, and say so), DeepSeek-V3's starts empty (its task computes
           every store). The Llama stores were 36 of the quick grid's 75 s of CPU;
           computing them a second time tested nothing the DeepSeek task does not;
  sweep    sweep.sbatch on a small sweep job (two points): the submitter submits an array
           of one task per chip variant and a report job after it; every job completes,
           the report job's farm takes every result from the points' stores (nothing
           recomputed), its store equals a single `enpu farm` of the job (`enpu store
           diff`, exit 0), and the sweep report is written.

When Slurm cannot start (not root, daemons missing, no munge) the scenario prints SKIP and
exits 77 (CTest's SKIP_RETURN_CODE), unless CI is set (CI=1/true) or ENPU_REQUIRE_SLURM=1:
then it fails, because there Slurm must run. ENPU_SLURM_KEEP=1 keeps the scratch and
Slurm directories for a post-mortem.
Usage: test_slurm.py ENPU SOURCE_DIR SCENARIO"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
from harness import Harness  # noqa: E402
from slurm_cluster import LocalSlurm, SlurmUnavailable  # noqa: E402
from test_farm import signatures  # noqa: E402

SKIP = 77
STALL_S = 180      # the longest wait without progress before a scenario gives up
MAX_WAIT_S = 900   # and the longest wait in all (CTest's timeout is above it)


def wait_process(p, store, stall_s, max_s):
    """communicate() with a process that rewrites `store` while it works: fails only when
    the store has not changed for stall_s (or after max_s in all)."""
    start = last = time.monotonic()
    seen = None
    while p.poll() is None:
        key = os.stat(store).st_mtime_ns if os.path.exists(store) else None
        now = time.monotonic()
        if key != seen:
            seen, last = key, now
        if now - last > stall_s or now - start > max_s:
            raise TimeoutError(f"{p.args[:3]}: no progress for {now - last:.0f} s")
        time.sleep(1)
    return p.communicate()


def required():
    return (os.environ.get("CI", "").lower() not in ("", "0", "false", "no")
            or os.environ.get("ENPU_REQUIRE_SLURM") == "1")


class Scenario:
    """One test run: a scratch directory with a copy of jobs/ (so job files can be
    edited and relative paths still resolve) and the environment sbatch exports."""

    def __init__(self, h, slurm):
        self.h, self.slurm = h, slurm
        self.tmp = tempfile.mkdtemp(prefix="enpu-slurm-test-")
        self.jobs = os.path.join(self.tmp, "jobs")
        shutil.copytree(os.path.join(h.src, "jobs"), self.jobs)
        self.env = dict(os.environ, ENPU_BIN=h.enpu, OMPI_ALLOW_RUN_AS_ROOT="1",
                        OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")

    def script(self, name):
        return os.path.join(self.h.src, "slurm", name)

    def submit(self, script, args, options=(), env=None):
        return self.slurm.sbatch(self.script(script), args=args, options=list(options),
                                 cwd=self.tmp, env=env or self.env)

    def log(self, name):
        path = os.path.join(self.tmp, name)
        return open(path, errors="replace").read() if os.path.exists(path) else ""

    def write_job(self, name, **changes):
        """A job file in the copied jobs/ derived from demo.json."""
        job = json.load(open(os.path.join(self.jobs, "demo.json")))
        job.update(name=name, **changes)
        path = os.path.join(self.jobs, name + ".json")
        json.dump(job, open(path, "w"), indent=2)
        return path

    def done_ok(self, what, info, logtext):
        states = {k: (v.get("JobState"), v.get("ExitCode")) for k, v in info.items()}
        return self.h.check(f"{what}: COMPLETED, exit 0",
                            all(s == ("COMPLETED", "0:0") for s in states.values()),
                            f"{states}\n{logtext[-1500:]}")

    def cleanup(self):
        shutil.rmtree(self.tmp, ignore_errors=True)


def summaries(logtext):
    """The farm summaries (`enpu farm --json`: a document from a line "{" to a line "}")
    in a job's stdout, oldest first (one per start of the job). The tests keep stderr in
    its own file: Slurm and mpirun forward a step's stdout and stderr through two pipes,
    whose order in a shared file is not the order of the writes, so a progress line could
    land inside a document."""
    return [json.loads(doc) for doc in re.findall(r"^\{\n.*?^\}$", logtext, re.M | re.S)]


def first_job(summary):
    """The summary of the run's first job ({} when there is none)."""
    return (summary.get("jobs") or [{}])[0]


def test_demo(s):
    h = s.h
    store = os.path.join(s.tmp, "demo.h5")
    jid = s.submit("farm.sbatch", [os.path.join(s.jobs, "demo.json"), "--store", store, "--json",
                                   "--results", os.path.join(s.tmp, "results"), "--progress-s", "1"],
                   ["--ntasks=2", "--output=farm-%j.out", "--error=farm-%j.err"])
    info = s.slurm.wait_job(jid, 150)
    log, err = s.log(f"farm-{jid}.out"), s.log(f"farm-{jid}.err")
    s.done_ok("demo", info, log + err)
    h.check("demo: progress lines in the job's stderr",
            re.search(r"^farm: \d+/\d+ tasks \([\d.]+%\)", err, re.M), err[-800:])
    sums = summaries(log)
    h.check("demo: one summary, 2 ranks (srun started both)",
            len(sums) == 1 and first_job(sums[0]).get("ranks") == 2, log[-800:])
    h.check("demo: summary.md written",
            os.path.exists(os.path.join(s.tmp, "results", "demo", "summary.md")))
    q = h.run("query", store, "--phase", "decode", "--batch", "8", "--seq", "2048",
              "--slack", "0.05", "--json")
    ok = q.returncode == 0
    if ok:
        d = json.loads(q.stdout)
        ok = d["bucket"]["batch"] == 8 and d["energy_nj"] > 0 and d["ops"]
    h.check("demo: the store answers enpu query", ok, q.stdout[:300] + q.stderr[-300:])


def test_requeue(s):
    h = s.h
    # The first start is interrupted whatever the machine's speed: it holds after its first
    # result until the warning (Slurm checks limits every 30 s, so @20 with --time=1
    # arrives 10-40 s after each start). The work after that is a few seconds of one core
    # (dvfs-c's genetic algorithm, about 0.4 s of CPU a bucket at 4 slacks, 16 buckets),
    # so a quiet machine finishes on the second start and a loaded one on a few more: the
    # test's time is in starts, and a job that must outlast the warning by itself (the
    # minute of compute this once had) needed 14 starts at load 16. Two ranks under
    # mpirun (one computes), which forwards the batch shell's SIGUSR1 to both; demo
    # covers srun.
    job = s.write_job("long", store="long.h5", policies=["nodvfs", "dvfs-c"], phases={
        "prefill": {"batch": [1, 4], "seq": [512, 1024, 2048, 4096]},
        "decode": {"batch": [1, 8], "seq": [1024, 2048, 4096, 8192]}})
    store, ref = os.path.join(s.tmp, "slurm.h5"), os.path.join(s.tmp, "ref.h5")
    jid = s.submit("farm.sbatch", [job, "--store", store, "--json", "--results",
                                   os.path.join(s.tmp, "results"), "--progress-s", "5"],
                   ["--ntasks=2", "--time=1", "--signal=B:USR1@20", "--output=farm-%j.out",
                    "--error=farm-%j.err"],
                   # The first start holds after its first result until the warning comes,
                   # so the warning always finds work left (under load the tasks could
                   # otherwise all be done first: exit 0, no requeue). The later starts a
                   # job needs grow with the machine's load; the test bounds the wait by
                   # progress, so the script's own cap (20 restarts) must not end it first.
                   env=dict(s.env, ENPU_LAUNCHER="mpirun", ENPU_MAX_REQUEUES="1000",
                            ENPU_FARM_TEST_HOLD="tasks:" + os.path.join(s.tmp, "held-once")))
    # The uninterrupted reference, alongside on the other core; it checkpoints every 5 s
    # so its progress can be seen.
    reference = subprocess.Popen([h.enpu, "farm", job, "--store", ref, "--results",
                                  os.path.join(s.tmp, "ref-results"), "--quiet", "--checkpoint-s", "5"],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 cwd=s.tmp)
    # How long this takes depends on the machine's load (each start computes until the
    # warning, then waits for the requeue): wait while it makes progress, i.e. while the
    # job restarts or its log grows (progress lines every 5 s), up to 3 minutes without.
    logpath = os.path.join(s.tmp, "farm-%s.err" % jid)

    def advancing(info):
        size = os.path.getsize(logpath) if os.path.exists(logpath) else 0
        return info.get(jid, {}).get("Restarts"), size

    try:
        info = s.slurm.wait_job(jid, STALL_S, progress=advancing, max_s=MAX_WAIT_S)
        ref_out, ref_err = wait_process(reference, ref, STALL_S, MAX_WAIT_S)
    finally:
        if reference.poll() is None:
            reference.kill()
    out, log = s.log(f"farm-{jid}.out"), s.log(f"farm-{jid}.err")
    s.done_ok("requeue", info, log)
    restarts = int(info[jid].get("Restarts", "0"))
    interrupted = len(re.findall(r"farm exit status 3 after SIGUSR1", log))
    print(f"     {restarts} restart(s), {interrupted} checkpoint(s) on the warning signal")
    h.check("requeue: the warning signal reached the farm, which exited 3", interrupted >= 1,
            log[-1500:])
    h.check("requeue: the job requeued itself and restarted",
            restarts >= 1 and restarts == len(re.findall(r"requeueing job", log)), log[-1500:])
    h.check("requeue: the last start finished the farm",
            re.findall(r"farm exit status (\d+)", log)[-1:] == ["0"], log[-800:])
    sums = summaries(out)
    last = first_job(sums[-1] if sums else {})
    reused = last.get("reused", {})
    h.check("requeue: the last start reused checkpointed work",
            last.get("outcome") == "done" and reused.get("store", 0) + reused.get("journal", 0) > 0, last)
    h.check("requeue: the uninterrupted reference run exit 0", reference.returncode == 0,
            ref_err[-500:])
    d = h.run("store", "diff", ref, store)
    h.check("requeue: store identical to the uninterrupted run (store diff exit 0)",
            d.returncode == 0, d.stdout[-600:] + d.stderr[-300:])


def test_array(s):
    h = s.h
    small = {"prefill": {"batch": [1], "seq": [1024]}, "decode": {"batch": [8], "seq": [2048]}}
    s.write_job("arr-a", store="arr-a.h5", phases=small, policies=["nodvfs", "enpu-all"])
    s.write_job("arr-b", store="arr-b.h5", phases=small, policies=["nodvfs", "enpu-all"],
                model="models/llama3.1-405b.json", cluster="clusters/llama3.1-405b.json")
    with open(os.path.join(s.tmp, "models.txt"), "w") as f:
        f.write("# two small jobs\njobs/arr-a.json\n\n  jobs/arr-b.json  \n")
    jid = s.submit("models-array.sbatch",
                   ["models.txt", "--", "--results", os.path.join(s.tmp, "results")],
                   ["--array=0-2"])
    info = s.slurm.wait_job(jid, 150)
    tasks = {v.get("ArrayTaskId"): v for v in info.values()}
    logs = {t: s.log(f"enpu-array-{jid}_{t}.out") for t in ("0", "1", "2")}
    s.done_ok("array", {t: tasks.get(t, {}) for t in ("0", "1")}, logs["0"] + logs["1"])
    stores = [os.path.join(s.jobs, n) for n in ("arr-a.h5", "arr-b.h5")]
    for t, path in zip(("0", "1"), stores):
        r = h.run("store", "info", path, "--json")
        h.check(f"array: task {t} wrote its job's store {os.path.basename(path)}",
                r.returncode == 0 and "arr-" in logs[t], r.stderr[-300:])
    d = h.run("store", "diff", *stores)
    h.check("array: the two stores differ (two models)", d.returncode == 1, d.stderr[-300:])
    bad = tasks.get("2", {})
    h.check("array: task 2 past the list fails (exit 2) with a clear message",
            bad.get("ExitCode") == "2:0" and "array task 2 has no job" in logs["2"],
            f"{bad.get('JobState')} {bad.get('ExitCode')} {logs['2'][-300:]}")


def test_regen(s):
    h = s.h
    job = os.path.join(s.jobs, "demo.json")
    # No --store: regen.sbatch finds the job's "store" itself (../results/demo/plans.h5).
    store = os.path.join(s.tmp, "results", "demo", "plans.h5")
    args = [job, "--json", "--results", os.path.join(s.tmp, "results")]
    own_stderr = ["--error=enpu-regen-%j.err"]
    first = s.submit("regen.sbatch", args, own_stderr)
    s.done_ok("regen first run", s.slurm.wait_job(first, 120),
              s.log(f"enpu-regen-{first}.out") + s.log(f"enpu-regen-{first}.err"))
    log1 = s.log(f"enpu-regen-{first}.out")
    h.check("regen: first run computed everything",
            "no store before this run" in log1 and os.path.exists(store), log1[-600:])

    model = os.path.join(s.jobs, "models", "llama3-70b.json")
    text = open(model).read()
    old = signatures(h, job)
    open(model, "w").write(text.replace('"intermediate": 28672', '"intermediate": 24576'))
    new = signatures(h, job)
    changed = new - old
    second = s.submit("regen.sbatch", args, own_stderr)
    s.done_ok("regen after the model change", s.slurm.wait_job(second, 120),
              s.log(f"enpu-regen-{second}.out") + s.log(f"enpu-regen-{second}.err"))
    log2 = s.log(f"enpu-regen-{second}.out")
    sums = summaries(log2)
    t = first_job(sums[-1] if sums else {}).get("tasks", {})
    print(f"     {len(changed)} of {len(new)} signatures changed; tasks {t}")
    h.check("regen: some but not all signatures changed", 0 < len(changed) < len(new))
    h.check("regen: recomputed op tasks = changed signatures x 4 policies",
            t.get("op") == 4 * len(changed), log2[-1200:])
    h.check("regen: every bucket re-walked (all contain the FFN)", t.get("bucket") == 32, log2[-1200:])
    diff = log2.split("== regen: what changed")[-1]
    h.check("regen: prints the farm's what-changed table (the field, its values, the tasks)",
            re.search(r"^\| model\.ffn\.intermediate \| 28672 -> 24576 \| %d op \+ 32 bucket tasks recomputed \|$"
                      % (4 * len(changed)), diff, re.M), diff[-1200:])
    h.check("regen: prints the store diff's summary per policy and phase, and its count",
            re.search(r"^  enpu-all ops added +\d+$", diff, re.M) and re.search(r"^  nodvfs decode buckets changed +\d+$",
                                                                               diff, re.M)
            and re.search(r"^\d+ differences$", diff, re.M), diff[-1200:])
    full_path = store + ".regen-diff.txt"
    full = open(full_path).read() if os.path.exists(full_path) else ""
    h.check("regen: the whole diff in STORE.regen-diff.txt (FFN ops added, attention untouched)",
            re.search(r"op 0x[0-9a-f]+ \(ffn\.\w+\): added", full) and not re.search(r"\(attn\.\w+\)", full)
            and re.search(r"^\d+ differences$", full, re.M), full[-1200:])
    h.check("regen: the snapshot is removed", not os.path.exists(store + ".before-regen"))


def test_validate(s):
    h = s.h
    store = os.path.join(s.tmp, "demo.h5")
    r = h.run("farm", os.path.join(s.jobs, "demo.json"), "--store", store, "--results",
              os.path.join(s.tmp, "results"), "--quiet")
    h.check("validate: demo store compiled", r.returncode == 0, r.stderr[-300:])
    # Through slurm/submit.sh: the log goes under the job's results folder (vres/demo/),
    # nothing lands in the folder submitted from.
    r = s.slurm.client([os.path.join(h.src, "slurm", "submit.sh"), "--parsable", s.script("validate.sbatch"),
                        store, "--trace", os.path.join(h.src, "jobs", "traces", "AzureLLMInferenceTrace_conv.csv"),
                        "--cluster", os.path.join(s.jobs, "clusters", "llama3-70b.json"),
                        "--sample", "2", "--out", os.path.join(s.tmp, "vres")], cwd=s.tmp, env=s.env, timeout=60)
    if not h.check("validate: submit.sh submitted it", r.returncode == 0, r.stderr[-500:]):
        return
    jid = r.stdout.strip().split(";")[0]
    info = s.slurm.wait_job(jid, 120)
    log_path = os.path.join(s.tmp, "vres", "demo", f"enpu-validate-{jid}.out")
    log = open(log_path, errors="replace").read() if os.path.exists(log_path) else ""
    s.done_ok("validate", info, log)
    h.check("validate: the log is under the job's results folder, none where it was submitted",
            log and not [f for f in os.listdir(s.tmp) if f.endswith(".out")], os.listdir(s.tmp))
    h.check("validate: every sampled plan passed, in the job log",
            re.search(r"^PASS: \d+ plans", log, re.M), log[-800:])
    h.check("validate: validation.md written",
            os.path.exists(os.path.join(s.tmp, "vres", "demo", "validation.md")))


def same_json(a, b):
    return os.path.exists(a) and os.path.exists(b) and json.load(open(a)) == json.load(open(b))


def test_paper(s):
    h = s.h
    pipeline = os.path.join(h.src, "jobs", "paper", "quick", "pipeline.json")
    # tools/paper.py's output for the same grid is integration_paper's cold run (the CTest
    # fixture paper_quick: FIX/make/out, kept as that run left it). The Slurm run writes
    # beside it at the same depth, so the job files the runs write (paths relative to
    # themselves, recorded in every store) are the same text.
    fix = os.environ.get("ENPU_PAPER_QUICK")
    if not h.check("paper: integration_paper's output given (ENPU_PAPER_QUICK, the paper_quick fixture)",
                   fix and os.path.exists(os.path.join(fix, "make", "out", "README.md")), str(fix)):
        return
    sl, mk = os.path.join(fix, "slurm", "out"), os.path.join(fix, "make", "out")
    shutil.rmtree(os.path.dirname(sl), ignore_errors=True)
    # A rerun for one model: its stores as make paper left them, without the farm
    # summaries, which the Slurm task's farms write again.
    resumed = "llama3-70b"
    shutil.copytree(os.path.join(mk, resumed), os.path.join(sl, resumed))
    resumed_runs = [r["name"] for r in json.load(open(os.path.join(mk, resumed, "manifest.json")))["runs"]]
    for name in resumed_runs:
        os.remove(os.path.join(sl, resumed, name, "summary.md"))
    jid = s.submit("paper.sbatch", ["--pipeline", pipeline, "--out", sl], ["--ntasks=2"])
    s.done_ok("paper submitter", s.slurm.wait_job(jid, 120), s.log(f"enpu-paper-{jid}.out"))
    m = re.search(r"array (\d+) \((.*)\), report (\d+)", s.log(f"enpu-paper-{jid}.out"))
    if not h.check("paper: the submitter printed the array and report ids", m, s.log(f"enpu-paper-{jid}.out")):
        return
    array, models, report = m.group(1), m.group(2).split(), m.group(3)

    def advancing(info):
        return sorted((k, v.get("JobState")) for k, v in info.items()), sum(
            os.path.getsize(os.path.join(s.tmp, f)) for f in os.listdir(s.tmp) if f.endswith(".out"))

    info = s.slurm.wait_job(array, STALL_S, progress=advancing, max_s=MAX_WAIT_S)
    logs = "".join(s.log(f"enpu-paper-{array}_{t}.out") for t in range(len(models)))
    s.done_ok("paper array (one task per model)", info, logs[-3000:])
    h.check("paper: one array task per model", len(info) == len(models) == 2, str(info.keys()))
    info = s.slurm.wait_job(report, STALL_S, progress=advancing, max_s=MAX_WAIT_S)
    s.done_ok("paper report job (after the array)", info, s.log(f"enpu-paper-{report}.out")[-2000:])
    h.check("paper: README.md written", os.path.exists(os.path.join(sl, "README.md")))
    recomputed = {}
    for name in resumed_runs:
        path = os.path.join(sl, resumed, name, "summary.md")
        m = re.search(r"^\| recomputed \| (\d+) \|", open(path).read(), re.M) if os.path.exists(path) else None
        recomputed[name] = int(m.group(1)) if m else None
    h.check(f"paper: {resumed}: the Slurm task's farms reused make paper's stores (recomputed 0 in each summary)",
            recomputed and all(v == 0 for v in recomputed.values()), str(recomputed))
    for model in models:
        manifest = json.load(open(os.path.join(mk, model, "manifest.json")))
        for run in manifest["runs"]:
            a, b = (os.path.join(d, model, run["store"]) for d in (sl, mk))
            d = h.run("store", "diff", a, b)
            h.check(f"paper: {model}/{run['name']}: store identical to make paper's (store diff exit 0)",
                    d.returncode == 0, d.stdout[-600:] + d.stderr[-300:])
        outs = [e["file"] for e in manifest["graph"]] + [r["dir"] + "/summary.json" for r in manifest["replays"]]
        if manifest["figure20"]:
            outs.append(manifest["figure20"]["json"])
        h.check(f"paper: {model}: Table 2, Figure 20 and replay outputs equal make paper's",
                outs and all(same_json(os.path.join(sl, model, f), os.path.join(mk, model, f)) for f in outs),
                str(outs))
    shutil.rmtree(os.path.dirname(sl), ignore_errors=True)


def test_sweep(s):
    h = s.h
    job = json.load(open(os.path.join(s.jobs, "demo.json")))
    del job["validation"]  # validation re-simulates the job chip's policies only
    job.update(name="sw", store="../sw/plans.h5", policies=["nodvfs", "dvfs-c-walk", "enpu-all"],
               phases={"prefill": {"batch": [1], "seq": [1024]}, "decode": {"batch": [8], "seq": [2048]}},
               sweep={"ivr.step_ns": [40, 4000]})
    path = os.path.join(s.jobs, "sw.json")
    json.dump(job, open(path, "w"), indent=2)
    jid = s.submit("sweep.sbatch", [path, "--", "--json"], ["--ntasks=1"])
    s.done_ok("sweep submitter", s.slurm.wait_job(jid, 120), s.log(f"enpu-sweep-{jid}.out"))
    m = re.search(r"array (\d+) \((\d+) points and the job's chip\), report (\d+)", s.log(f"enpu-sweep-{jid}.out"))
    if not h.check("sweep: the submitter printed the array and report ids", m, s.log(f"enpu-sweep-{jid}.out")):
        return
    array, npoints, report = m.group(1), int(m.group(2)), m.group(3)
    info = s.slurm.wait_job(array, STALL_S, max_s=MAX_WAIT_S)
    logs = "".join(s.log(f"enpu-sweep-{array}_{t}.out") for t in range(npoints + 1))
    s.done_ok("sweep array (one task per chip variant)", info, logs[-3000:])
    h.check("sweep: one array task per point and the job's chip", npoints == 2 and len(info) == 3, str(info.keys()))
    info = s.slurm.wait_job(report, STALL_S, max_s=MAX_WAIT_S)
    rlog = s.log(f"enpu-sweep-{report}.out")
    s.done_ok("sweep report job (after the array)", info, rlog[-2000:])
    sums = summaries(rlog)
    last = first_job(sums[-1]) if sums else {}
    h.check("sweep: the report job's farm recomputed nothing (every result from the points' stores)",
            last.get("recomputed") == 0 and last.get("reused", {}).get("store", 0) > 0, rlog[-1500:])
    store = os.path.join(s.tmp, "sw", "plans.h5")
    ref = os.path.join(s.tmp, "ref.h5")
    r = subprocess.run([h.enpu, "farm", path, "--store", ref, "--quiet"], capture_output=True, text=True,
                       env=s.env, cwd=s.tmp)
    h.check("sweep: a single enpu farm of the job, exit 0", r.returncode == 0, r.stderr[-600:])
    d = h.run("store", "diff", store, ref)
    h.check("sweep: the array's store equals the single farm's (store diff exit 0)", d.returncode == 0,
            d.stdout[-600:] + d.stderr[-300:])
    h.check("sweep: the sweep report is written",
            os.path.exists(os.path.join(s.tmp, "sw", "sweep", "sweep.md")), rlog[-800:])


SCENARIOS = {"demo": test_demo, "requeue": test_requeue, "array": test_array,
             "regen": test_regen, "validate": test_validate, "paper": test_paper, "sweep": test_sweep}


def main():
    if len(sys.argv) != 4 or sys.argv[3] not in SCENARIOS:
        sys.exit(f"usage: test_slurm.py ENPU SOURCE_DIR {{{'|'.join(SCENARIOS)}}}")
    h = Harness(os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]))
    name = sys.argv[3]
    # CTest's timeout terminates us: unwind so that the daemons are stopped.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit("terminated"))
    keep = os.environ.get("ENPU_SLURM_KEEP") == "1"   # leave the files for a post-mortem
    slurm = LocalSlurm(keep=keep)
    try:
        slurm.start()
    except SlurmUnavailable as e:
        if required():
            h.check("local Slurm starts (required: CI or ENPU_REQUIRE_SLURM=1)", False, str(e))
            h.finish()
        print(f"SKIP: local Slurm cannot start here, Slurm tests not run: {e}")
        sys.exit(SKIP)
    s = Scenario(h, slurm)
    try:
        SCENARIOS[name](s)
    except Exception:  # a broken scenario is a failure with its trace, after teardown
        h.check(f"{name}: ran to the end", False, traceback.format_exc() + slurm.logs())
    finally:
        slurm.stop()
        if keep:
            print(f"kept: {s.tmp} {slurm.root}")
        else:
            s.cleanup()
    h.finish()


if __name__ == "__main__":
    main()
