"""The farm across hosts: a 3-node cluster built from network namespaces (netns_cluster:
each node its own network, hostname and mount namespace; munged, slurmctld and a slurmd
per node), with ranks talking TCP between nodes on the cluster's own subnet and the job's
input directory invisible on the worker nodes n2 and n3 (only rank 0, on n1, reads it).

  slurm     `sbatch -N 3 slurm/farm.sbatch`: one rank per node under srun --mpi=pmix; the
            store equals a one-rank farm's (`enpu store diff`).
  mpirun    `mpirun --hostfile` across the nodes with an rsh agent that enters a node's
            namespaces instead of ssh: ranks on n1, n2, n3, the same store.
  loss      a node lost mid-run, at a random point (after a random number of results,
            once the journal holds some): every process in its network namespace killed
            and its link taken down at once, in 5 trials of random victims (a fixed seed):
            3 under mpirun (it exits non-zero; the same command, rerun, resumes) and 2
            under Slurm (the batch script requeues the job and it resumes once the node is
            back). Each trial's store equals the uninterrupted one; every result the
            journal held at the kill is reused, and the results computed before the kill
            but recomputed after it (those of the last unsynced second) are reported.
  cleanup   the cluster leaves no namespace, link, process or directory behind.

Skipped (exit 77) when the cluster cannot start here (not root, no Slurm); a failure when
CI or ENPU_REQUIRE_SLURM=1 is set.
Usage: test_multinode.py ENPU SOURCE_DIR"""
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
from farm_harness import REC_BUCKET, REC_OP, journal_kinds, same  # noqa: E402
from harness import Harness  # noqa: E402
from netns_cluster import NetnsCluster  # noqa: E402
from slurm_cluster import SlurmUnavailable  # noqa: E402

PROGRESS = re.compile(r"farm: (\d+)/(\d+) tasks")


def write_job(src, root, name, policies):
    """A small Llama3-70B job in root/ naming copies of the shipped model, chip (and its
    power tables) and cluster relatively: everything the farm reads lies under root."""
    for sub in ("models", "chips", "clusters"):
        if not os.path.isdir(os.path.join(root, sub)):
            shutil.copytree(os.path.join(src, "jobs", sub), os.path.join(root, sub))
    job = {"name": name, "model": "models/llama3-70b.json", "chip": "chips/tpuv5p.json",
           "cluster": "clusters/llama3-70b.json", "store": f"{name}.h5",
           "phases": {"prefill": {"batch": [1], "seq": [1024]}, "decode": {"batch": [8], "seq": [2048]}},
           "slacks": [0, 0.05], "policies": policies, "moe": {"capacity_factor": "worst"}}
    path = os.path.join(root, f"{name}.json")
    json.dump(job, open(path, "w"), indent=2)
    return path


class Watch:
    """A running farm's progress lines (stderr, or the Slurm log), read as they come."""

    def __init__(self, proc=None, log=None):
        self.lines, self.proc, self.log = [], proc, log
        if proc:
            self.thread = threading.Thread(target=lambda: self.lines.extend(proc.stderr), daemon=True)
            self.thread.start()

    def text(self):
        if self.log:
            return open(self.log, errors="replace").read() if os.path.exists(self.log) else ""
        return "".join(self.lines)

    def done(self):
        found = PROGRESS.findall(self.text())
        return int(found[-1][0]) if found else 0


def kill_mid_run(cluster, watch, store, victim, after, timeout_s=120):
    """Waits until the farm has `after` results and its journal holds work, then kills
    the node; returns the op and bucket results in the journal at the kill, or None when
    the run ended (or never got under way) first."""
    deadline = time.monotonic() + timeout_s
    while not (watch.done() >= after and journal_kinds(store)):
        ended = watch.proc.poll() is not None if watch.proc else "farm exit status" in watch.text()
        if time.monotonic() > deadline or ended:
            return None
        time.sleep(0.05)
    held = results_held(store)
    cluster.kill_node(victim)
    return held


def ended_why(text):
    """What a farm that ended early left: its last lines, and a crash's report whole (Open
    MPI prints a signal's backtrace, srun which task died), however far up it is."""
    crash = [ln for ln in text.splitlines() if re.search(r"Signal|signal|\[ *\d+\] |Segmentation|core dumped", ln)]
    return "\n".join(crash[-40:]) + "\n...\n" + text[-1500:]


def summary_count(summary_md, row):
    """A count of a farm summary's table: "tasks" (to do), "reused" (from the store and the
    journal, with the parts of op searches resumed part-way), "recomputed"."""
    pattern = {"tasks": r"\| tasks \| (\d+) to do", "recomputed": r"\| recomputed \| (\d+) \|",
               "reused": r"\| reused \| (\d+) from the store, (\d+) from the journal"}[row]
    m = re.search(pattern, summary_md)
    return sum(int(g) for g in m.groups()) if m else -1


def results_held(store):
    """Op and bucket results in the journal (an op search split in parts counts once, when
    its merged result is there; its parts are left out): a lower bound of what a resumed
    farm finds known there."""
    return sum(1 for k in journal_kinds(store) if k in (REC_OP, REC_BUCKET))


def mpirun_farm(c, s, store):
    """The farm under mpirun --hostfile from n1."""
    return c.run_on("n1", s["mpirun"](store, "--quiet"), env=s["mpi_env"], cwd=s["tmp"], timeout=300)


def part_slurm(h, c, s):
    jid = c.sbatch(s["farm_sbatch"], args=[s["job"], "--store", s["store"]("slurm"), "--progress-s", "0.2"],
                   options=["-N", "3"], cwd=s["tmp"], env=s["env"])
    job = c.wait_job(jid, 120).get(jid, {})
    log = open(os.path.join(s["tmp"], f"enpu-farm-{jid}.out")).read()
    h.check("slurm: sbatch -N 3 farm.sbatch COMPLETED", job.get("JobState") == "COMPLETED", log[-1500:])
    h.check("slurm: on n1, n2 and n3, three ranks under srun --mpi=pmix",
            job.get("NodeList") == "n[1-3]" and "| ranks | 3 |" in log and "srun --mpi=pmix" in log,
            f"{job.get('NodeList')}: {log[-800:]}")
    h.check("slurm: store identical to one rank's", *same(h, s["ref"], s["store"]("slurm")))


def part_mpirun(h, c, s):
    r = c.run_on("n1", ["mpirun", "--hostfile", c.hostfile(), "-np", "3", "hostname"], env=s["mpi_env"], timeout=60)
    h.check("mpirun --hostfile: one rank on each of n1, n2, n3", sorted(r.stdout.split()) == ["n1", "n2", "n3"],
            r.stdout + r.stderr[-600:])
    seen = c.run_on("n2", ["test", "-e", s["job"]])
    h.check("the worker nodes do not see the job's files", seen.returncode == 1, seen)
    store = s["store"]("mpirun")
    r = mpirun_farm(c, s, store)
    h.check("mpirun --hostfile: the farm exits 0", r.returncode == 0, r.stderr[-800:])
    h.check("mpirun --hostfile: store identical to one rank's", *same(h, s["ref"], store))


def trial_mpirun(h, c, s, n, victim, after):
    name, store = f"loss {n} (mpirun, {victim} after {after} results)", s["store"](f"loss{n}")
    p = subprocess.Popen(c.node_prefix("n1") + s["mpirun"](store, "--progress-s", "0.1"), env=s["mpi_env"],
                         cwd=s["tmp"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    watch = Watch(proc=p)
    held = kill_mid_run(c, watch, store, victim, after)
    if held is None:
        p.kill()
        p.wait()
        watch.thread.join(timeout=10)
        h.fail(f"{name}: the farm got under way", ended_why(watch.text()))
        return 0
    try:
        p.wait(timeout=120)
    except subprocess.TimeoutExpired:
        p.kill()
        h.fail(f"{name}: mpirun ended after the node was lost", watch.text()[-800:])
    watch.thread.join(timeout=10)
    done = watch.done()  # the master's last count: what the killed run computed, at least
    h.check(f"{name}: mpirun exits non-zero ({p.returncode})", p.returncode != 0, watch.text()[-600:])
    c.revive_node(victim)
    r = mpirun_farm(c, s, store)
    h.check(f"{name}: the same command resumes, exit 0", r.returncode == 0, r.stderr[-800:])
    return finish_trial(h, s, name, store, r.stdout, done, held)


def trial_slurm(h, c, s, n, victim, after):
    name, store = f"loss {n} (Slurm, {victim} after {after} results)", s["store"](f"loss{n}")
    jid = c.sbatch(s["farm_sbatch"], args=[s["job"], "--store", store, "--progress-s", "0.1"], options=["-N", "3"],
                   cwd=s["tmp"], env=s["env"])
    log = os.path.join(s["tmp"], f"enpu-farm-{jid}.out")
    held = kill_mid_run(c, Watch(log=log), store, victim, after)
    if held is None:
        c.client(["scancel", jid])
        c.wait_job(jid, 60)
        h.fail(f"{name}: the farm got under way", ended_why(open(log).read()))
        return 0
    c.revive_node(victim)

    def advancing(info):
        return os.path.getsize(log) if os.path.exists(log) else 0, str(info)
    info = c.wait_job(jid, 90, progress=advancing, max_s=300)
    job, text = info.get(jid, {}), open(log).read()
    starts = text.split("enpu-slurm: job ")
    found = PROGRESS.findall(starts[1] if len(starts) > 2 else "")
    done = int(found[-1][0]) if found else 0  # the first run's last count
    requeued = int(job.get("Restarts", 0)) >= 1
    h.check(f"{name}: requeued, then COMPLETED", job.get("JobState") == "COMPLETED" and requeued,
            f"{job.get('JobState')} restarts {job.get('Restarts')}: {text[-1500:]}")
    return finish_trial(h, s, name, store, text.split("enpu-slurm: job ")[-1], done, held)


def finish_trial(h, s, name, store, summary, done, held):
    """The resumed run's store and what it reused; returns the tasks both runs computed:
    done (the killed run's last progress count) + the resumed run's less s["total"] (an
    uninterrupted run's), at least 0 (the last count lags the kill by a progress period)."""
    h.check(f"{name}: store identical to the uninterrupted one", *same(h, s["ref"], store))
    kept = summary_count(summary, "reused")
    h.check(f"{name}: every op and bucket result the journal held at the kill ({held}) is reused ({kept})",
            kept >= held, summary[-800:])
    again = summary_count(summary, "recomputed")
    lost = max(done + again - s["total"], 0)
    print(f"     {name}: the killed run computed {done} of {s['total']} tasks ({held} op/bucket results in the "
          f"journal at the kill); the resumed run reused {kept} and computed {again}: {lost} computed twice")
    return lost


def main():
    h = Harness(os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]))
    required = bool(os.environ.get("CI")) or os.environ.get("ENPU_REQUIRE_SLURM") == "1"
    tmp = tempfile.mkdtemp(prefix="enpu-multinode-")
    inputs = os.path.join(tmp, "in")
    small = write_job(h.src, inputs, "small", ["nodvfs", "enpu-all"])
    lossy = write_job(h.src, inputs, "lossy", ["nodvfs", "enpu-all", "ideal"])  # ~290 tasks
    refs, totals = {}, {}
    for job in (small, lossy):
        refs[job] = os.path.join(tmp, os.path.basename(job) + ".ref.h5")
        r = subprocess.run([h.enpu, "farm", job, "--store", refs[job], "--quiet"], capture_output=True, text=True)
        h.check(f"{os.path.basename(job)}: one-rank reference exit 0", r.returncode == 0, r.stderr[-600:])
        totals[job] = summary_count(r.stdout, "tasks")
    c = NetnsCluster(3, hide={"n2": [inputs], "n3": [inputs]})
    try:
        c.start()
    except SlurmUnavailable as e:
        c.stop()
        if required:
            h.fail("the 3-node cluster starts", str(e))
            h.finish()
        print(f"SKIP: {e}")
        sys.exit(77)
    started = time.monotonic()
    try:
        env = dict(os.environ, ENPU_BIN=h.enpu)
        s = {"tmp": tmp, "farm_sbatch": os.path.join(h.src, "slurm", "farm.sbatch"), "env": c.mpi_env(env),
             "mpi_env": c.mpi_env(), "store": lambda name: os.path.join(tmp, f"{name}.h5")}
        s.update(job=small, ref=refs[small])
        s["mpirun"] = lambda store, *extra: ["mpirun", "--hostfile", c.hostfile(), "-np", "3", h.enpu, "farm",
                                             s["job"], "--store", store, *extra]
        part_slurm(h, c, s)
        part_mpirun(h, c, s)
        s.update(job=lossy, ref=refs[lossy], total=totals[lossy])
        rng = random.Random(41)
        lost = []
        for n in range(1, 6):
            victim, after = rng.choice(c.nodes), rng.randint(5, 150)
            trial = trial_mpirun if n <= 3 else trial_slurm
            lost.append(trial(h, c, s, n, victim, after))
        print(f"     node loss: {sum(lost)} tasks computed twice over 5 trials (at most {max(lost)} in one): "
              "results on their way to rank 0 or not yet in its journal when the node died")
    except Exception as e:  # noqa: BLE001 - a failure is reported with the daemons' logs
        h.fail("multinode: ran to the end", f"{type(e).__name__}: {e}\n{c.logs()[-3000:]}")
    finally:
        print(f"     cluster time {time.monotonic() - started:.0f} s")
        c.stop()
    h.check("cleanup: no namespace, link, process or directory left", not c.leftovers(), c.leftovers())
    shutil.rmtree(tmp, ignore_errors=True)
    h.finish()


if __name__ == "__main__":
    main()
