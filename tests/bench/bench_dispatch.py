"""The farm master's dispatch cost: `enpu farm` under the real mpirun at -np 2 ... 64
(oversubscribed on this machine) on a job of trivially short tasks (tests/bench/dispatch:
a one-layer model 256 wide, a 2 × 32 × 32 bucket grid, nodvfs only: 8,374 tasks of
~0.2 ms of compute each), printing per rank count the tasks per second the master handed
out and took back, its CPU time per task and per batch, its share of one core, the tasks
per batch, and its peak memory; then the master's memory per task from grids of three
sizes, and the journal's write rate from `test_farm --bench`. Every run starts from an
empty store. Figures only: nothing fails on speed.
Usage: bench_dispatch.py ENPU TEST_FARM [--np 2,4,8,16,32,64] [--json]"""
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
JOB = os.path.join(HERE, "dispatch", "dispatch.json")
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_rmaps_base_oversubscribe="1")


def row(out, name):
    m = re.search(r"^\| %s \| (.*) \|$" % re.escape(name), out, re.M)
    return [float(x) for x in re.findall(r"[\d.]+", m.group(1))] if m else None


def farm(enpu, np_, tmp, job=JOB, tag="", launch=None, env=ENV):
    """One farm of `job` from an empty store at np_ ranks and its summary's figures;
    `launch` (np -> argv prefix) replaces `mpirun -np N` (bench_multinode.py's
    mpirun --hostfile across nodes)."""
    store = os.path.join(tmp, f"d{np_}{tag}.h5")
    cmd = [enpu, "farm", job, "--store", store, "--quiet", "--checkpoint-s", "600",
           "--results", os.path.join(tmp, "results")]
    if launch:
        cmd = [*launch(np_), *cmd]
    elif np_ > 1:
        cmd = ["mpirun", "-np", str(np_), *cmd]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp)
    if r.returncode != 0:
        raise SystemExit(f"np {np_}: exit {r.returncode}: {r.stderr[-600:]}")
    tasks, wall = row(r.stdout, "tasks")[0], row(r.stdout, "wall time")[0]
    cpu, batches = row(r.stdout, "master CPU")[0], row(r.stdout, "task batches")[0]
    return {"np": np_, "tasks": int(tasks), "wall_s": wall, "master_cpu_s": cpu,
            "batches": int(batches), "tasks_per_s": tasks / wall,
            "master_us_per_task": 1e6 * cpu / tasks, "master_core_pct": 100 * cpu / wall,
            "tasks_per_batch": tasks / batches, "rss_mb": row(r.stdout, "master memory")[0]}


def grid_job(tmp, nseq):
    job = json.load(open(JOB))
    for ph in job["phases"].values():
        ph["seq"] = ph["seq"][:nseq]
    for k in ("model", "chip", "cluster"):
        job[k] = os.path.join(os.path.dirname(JOB), job[k])
    path = os.path.join(tmp, f"grid{nseq}.json")
    json.dump(job, open(path, "w"))
    return path


def main():
    args = sys.argv[1:]
    as_json = "--json" in args
    nps = [2, 4, 8, 16, 32, 64]
    if "--np" in args:
        nps = [int(x) for x in args[args.index("--np") + 1].split(",")]
    enpu, test_farm = os.path.abspath(args[0]), os.path.abspath(args[1])
    tmp = tempfile.mkdtemp(prefix="enpu-dispatch-")
    runs = [farm(enpu, n, tmp) for n in nps]
    # Memory per task: one rank's peak against the grid size (the master holds every
    # bucket's graph and every result).
    mem = [farm(enpu, 2, tmp, grid_job(tmp, n), tag=f"g{n}") for n in (8, 16, 32)]
    slope = (mem[-1]["rss_mb"] - mem[0]["rss_mb"]) / (mem[-1]["tasks"] - mem[0]["tasks"])
    jb = subprocess.run([test_farm, "--bench", "2000"], capture_output=True, text=True).stdout
    if as_json:
        print(json.dumps({"runs": runs, "memory": mem, "kb_per_task": 1024 * slope, "journal": jb.strip()}))
        return
    print(f"{'np':>4} {'tasks':>7} {'wall s':>7} {'tasks/s':>8} {'master CPU s':>12} "
          f"{'us/task':>8} {'core %':>7} {'tasks/batch':>11} {'RSS MB':>7}")
    for r in runs:
        print(f"{r['np']:>4} {r['tasks']:>7} {r['wall_s']:>7.2f} {r['tasks_per_s']:>8.0f} "
              f"{r['master_cpu_s']:>12.2f} {r['master_us_per_task']:>8.1f} {r['master_core_pct']:>7.1f} "
              f"{r['tasks_per_batch']:>11.1f} {r['rss_mb']:>7.1f}")
    print("master memory: " + ", ".join(f"{m['tasks']} tasks {m['rss_mb']:.1f} MB" for m in mem) +
          f"; {1024 * slope:.1f} kB per task")
    print("journal (test_farm --bench 2000):\n" + jb.strip())


if __name__ == "__main__":
    main()
