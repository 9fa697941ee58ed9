#!/usr/bin/python3
"""pipeline — the paper's evaluation end to end (`make paper`, slurm/paper.sbatch): main.

Usage: tools/paper.py [--pipeline FILE] [--out DIR] [--enpu BIN] [--launcher mpirun|srun|none]
                      [--np N] [--threads N] (all | model NAME... | report | models | clean-stamps)

A pipeline file (jobs/paper/pipeline.json, schemas/paper-pipeline.schema.json) names one
job per model (jobs/paper/<model>.json: the paper's grid, Table 3 nodes, Table 2 SLOs,
the slacks, every policy) and what the evaluation derives from them. For each model this
script writes the jobs it runs into DIR/<model>/<run>/job.json and runs, in order:

  farm      every run's store DIR/<model>/<run>/plans.h5 (one `enpu farm` for all of them
            when the build takes several jobs, else one after the other):
              grid-<budget>       the job's grid with the policies not marked request_only
              request-<budget>    the paper's single request (§4.1: batch 1, 4096/512) with
                                  every policy of the job
              request-<budget>-<variant>  the same on a named sensitivity chip
  compile   Table 7 and Figure 14: `enpu compile --json` of the single request per phase
            and Table 7 policy (operator- and request-level evaluations, seconds)
  graph     Table 2: NoDVFS TTFT/TPOT of one request at the SLO classes' lengths
  figure20  `enpu compile --capacity-factor` on the Figure 20 model
  replay    `enpu replay` of each grid store of the replay model (Figures 22 and 5, §4.8)
  decompose where a plan's saving comes from, measured (the build's bench_request
            decompose: by op kind, component and cost-model term) for the plans the
            pipeline names, which the README's reasons for the gaps point at
then `report` runs `enpu report paper` over every model's manifest.json into DIR/README.md.
Each manifest.json is checked against schemas/paper-manifest.schema.json before it is
written (manifest.py).

Incremental: every stage has a key (the sha256 of its command, the bytes of the files it
reads, the enpu binary, and for stages that read stores the stores' content hashes from
`enpu store info --json`); a stage whose key is unchanged is skipped, so a rerun with
nothing changed runs nothing but the key checks and changes no file. Keys live in
DIR/<model>/.stamps/. The farm itself only recomputes what changed (its own keys), and a
stage that reads a store reruns only when the store's content changed.
Timings: each stage that ran records its wall and CPU seconds, the load average and the
farm summaries in DIR/<model>/timings.json (kept when the stage is skipped), which the
report and results/bench.md quote.
SIGUSR1, SIGTERM and SIGINT go to the running command (as SIGUSR1 to mpirun): a farm
checkpoints and the script exits 3; the same command resumes.
Exit status: 0 done, 1 a stage failed (its command and status are printed), 2 bad input,
3 stopped by a signal (resumable).
"""

import argparse
import os
import shutil
import sys
import time

from . import manifest
from .inputs import ROOT, Failure, as_given, derive_runs, load_pipeline, model_name, resolve, write_job
from .runner import Runner
from .stages import stage_compile, stage_decompose, stage_farm, stage_figure20, stage_graph, stage_replay


def do_model(rn, pipe, job_file):
    job, runs = derive_runs(pipe, job_file)
    name = model_name(job_file)
    mdir = os.path.join(rn.out, name)
    for run_name, kind, budget, variant, j in runs:
        write_job(os.path.join(mdir, run_name), f"{job['name']}-{run_name}", j)
    stores = stage_farm(rn, mdir, runs)
    entries = {
        "compile": stage_compile(rn, pipe, mdir, runs),
        "graph": stage_graph(rn, pipe, mdir, os.path.join(mdir, runs[0][0], "job.json")),
        "figure20": stage_figure20(rn, pipe, mdir, runs, job_file),
        "replays": stage_replay(rn, pipe, mdir, runs, job_file, stores),
        "decompose": stage_decompose(rn, pipe, mdir, job_file),
    }
    doc = manifest.build(name, os.path.relpath(job_file, mdir), pipe, runs, entries)
    manifest.write(os.path.join(mdir, "manifest.json"), doc)
    return mdir


def do_report(rn, pipe):
    mdirs = []
    for j in pipe["models"]:
        mdirs.append(os.path.join(rn.out, model_name(j)))
    manifests = [os.path.join(d, "manifest.json") for d in mdirs]
    for m in manifests:
        if not os.path.exists(m):
            raise Failure(f"{m}: missing: run the model's stages first (tools/paper.py model ...)")
    numbers = resolve(pipe["_dir"], pipe["numbers"])
    cmd = [rn.enpu, "report", "paper", "--out", rn.out, "--numbers", numbers] + manifests
    files = [numbers] + manifests
    for d in mdirs:
        files += [os.path.join(d, "timings.json")]
        stamps = os.path.join(d, ".stamps")
        files += sorted(os.path.join(stamps, s) for s in (os.listdir(stamps) if os.path.isdir(stamps) else []))
    rn.stage(rn.out, "report", [cmd], files=files, outputs=[os.path.join(rn.out, "README.md")])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pipeline", default=os.path.join(ROOT, "jobs", "paper", "pipeline.json"))
    ap.add_argument("--out", default=None, help="default: the pipeline's out")
    ap.add_argument("--enpu", default=os.environ.get("ENPU_BIN", os.path.join(ROOT, "build", "enpu")))
    ap.add_argument("--launcher", choices=("mpirun", "srun", "none"), default="mpirun")
    ap.add_argument("--np", type=int, default=3, help="mpirun ranks (default 3: master + 2 workers)")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1, help="replay threads")
    ap.add_argument("what", nargs="+", help="all | model NAME... | report | models | clean-stamps")
    a = ap.parse_args()
    try:
        pipe = load_pipeline(a.pipeline)
        out = as_given(os.path.abspath(a.out or resolve(pipe["_dir"], pipe["out"])))
        os.makedirs(out, exist_ok=True)
        rn = Runner(a, out)
        jobs = {model_name(j): resolve(pipe["_dir"], j) for j in pipe["models"]}
        what = a.what[0]
        if what == "all":
            t0 = time.monotonic()
            for j in jobs.values():
                do_model(rn, pipe, j)
            do_report(rn, pipe)
            print(f"paper: done in {time.monotonic() - t0:.1f} s; {os.path.join(out, 'README.md')}")
        elif what == "model":
            for m in a.what[1:] or ap.error("model needs a model name"):
                if m not in jobs:
                    raise Failure(f"unknown model '{m}' (the pipeline has {', '.join(jobs)})", 2)
                do_model(rn, pipe, jobs[m])
        elif what == "report":
            do_report(rn, pipe)
        elif what == "models":
            print("\n".join(jobs))
        elif what == "clean-stamps":
            for d in [out] + [os.path.join(out, m) for m in jobs]:
                shutil.rmtree(os.path.join(d, ".stamps"), ignore_errors=True)
        else:
            ap.error(f"unknown action '{what}'")
    except Failure as e:
        print(f"paper: {e}", file=sys.stderr)
        return e.status
    return 0
