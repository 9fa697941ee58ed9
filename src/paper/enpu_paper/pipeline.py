#!/usr/bin/python3
"""paper.py — the paper's evaluation end to end (`make paper`, slurm/paper.sbatch).

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
import fnmatch
import hashlib
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCHEMA = os.path.join(ROOT, "schemas", "paper-pipeline.schema.json")


class Failure(Exception):
    def __init__(self, msg, status=1):
        super().__init__(msg)
        self.status = status


# ---- input ------------------------------------------------------------------------

def load_json(path, what):
    try:
        with open(path) as f:
            return json.load(f)
    except OSError as e:
        raise Failure(f"{path}: cannot read the {what}: {e.strerror}", 2)
    except json.JSONDecodeError as e:
        raise Failure(f"{path}:{e.lineno}:{e.colno}: not JSON: {e.msg}", 2)


def json_path(parts):
    return "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts)


def load_pipeline(path):
    doc = load_json(path, "pipeline")
    try:
        import jsonschema
    except ImportError:
        raise Failure("python3-jsonschema is missing (Debian's /usr/bin/python3 has it)", 2)
    validator = jsonschema.Draft202012Validator(load_json(SCHEMA, "schema"))
    errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
    if errors:
        e = errors[0]
        raise Failure(f"{path}: {json_path(e.absolute_path)}: {e.message}", 2)
    doc["_dir"] = as_given(os.path.dirname(os.path.abspath(path)))
    return doc


def resolve(base_dir, rel):
    return os.path.normpath(os.path.join(base_dir, rel))


def canonical(arg):
    """A command-line argument as a stage key holds it: a path (it has a '/' and is no
    option) made absolute, anything else as it is."""
    return os.path.abspath(arg) if "/" in arg and not arg.startswith("-") else arg


def as_given(path):
    """A path as a command line names it: relative to the working directory when it lies
    below it. The commands write the paths they are given into their outputs (a report's
    store line, a figure's '# paper values:' line, timings.json), so an absolute path would
    put the checkout's location into committed results."""
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def job_inputs(job_path, job):
    """The files a job reads: its model, chip (and the chip's tables) and cluster."""
    d = os.path.dirname(job_path)
    files = [resolve(d, job[k]) for k in ("model", "chip", "cluster")]
    chip = load_json(files[1], "chip")
    files += [resolve(os.path.dirname(files[1]), t) for t in sorted(chip.get("tables", {}).values())]
    return files


def policy_names(entry):
    """The policies a job's policy entry stands for (a name, or an object with sizes)."""
    if isinstance(entry, str):
        return [entry]
    sizes = entry.get("shadow", [])
    return [f"{entry['policy']}@shadow={n}" for n in sizes] or [entry["policy"]]


# ---- the jobs of a model ------------------------------------------------------------

def model_name(job_path):
    """A model's folder under DIR: its job file's name."""
    return os.path.splitext(os.path.basename(job_path))[0]


def derive_runs(pipe, job_path):
    """[(run name, kind, budget, variant, job dict)] for one model's job."""
    job = load_json(job_path, "job")
    src = os.path.dirname(job_path)
    request_only = pipe["request_only"]

    def grid_policy(entry):
        return not any(fnmatch.fnmatchcase(n, pat) for n in policy_names(entry) for pat in request_only)

    def base(budget, chip=None):
        j = {k: v for k, v in job.items() if k != "validation"}
        for k in ("model", "chip", "cluster"):
            j[k] = resolve(src, job[k])
        if chip:
            j["chip"] = chip
        j["budget"] = budget
        j["store"] = "plans.h5"
        return j

    req = pipe["request"]
    request_phases = {ph: {"batch": [b["batch"]], "seq": [b["seq"]]} for ph, b in req.items()}
    runs = []
    for b in pipe["budgets"]:
        g = base(b)
        g["policies"] = [p for p in job["policies"] if grid_policy(p)]
        runs.append((f"grid-{b}", "grid", b, None, g))
        r = base(b)
        r["phases"] = request_phases
        runs.append((f"request-{b}", "request", b, None, r))
    for v in pipe.get("variants", []):
        chip = resolve(pipe["_dir"], v["chip"])
        for b in v["budgets"]:
            r = base(b, chip)
            r["phases"] = request_phases
            r["policies"] = [p for p in job["policies"] if any(n in v["policies"] for n in policy_names(p))]
            runs.append((f"request-{b}-{v['name']}", "request", b, v["name"], r))
    return job, runs


def write_if_changed(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    try:
        with open(path) as f:
            if f.read() == text:
                return
    except OSError:
        pass
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def write_job(run_dir, name, job):
    """The run's job file; paths relative to it, so its text (which the store records)
    does not depend on where DIR is as long as DIR is as deep below the same root."""
    j = dict(job)
    j["name"] = name
    for k in ("model", "chip", "cluster"):
        j[k] = os.path.relpath(job[k], run_dir)
    path = os.path.join(run_dir, "job.json")
    write_if_changed(path, json.dumps(j, indent=2) + "\n")
    return path


# ---- stages -------------------------------------------------------------------------

def sha256_file(path, cache={}):
    st = os.stat(path)
    key = (path, st.st_mtime_ns, st.st_size)
    if key not in cache:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        cache[key] = h.hexdigest()
    return cache[key]


class Runner:
    def __init__(self, args, out):
        self.args = args
        self.out = out
        self.enpu = os.path.abspath(args.enpu)
        if not os.access(self.enpu, os.X_OK):
            raise Failure(f"{self.enpu}: no enpu binary (make build)", 2)
        self.enpu_sha = sha256_file(self.enpu)
        self.help = {}
        self.child = None
        self.stopped = False
        for sig in (signal.SIGUSR1, signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self.forward)

    def help_text(self, cmd):
        if cmd not in self.help:
            p = subprocess.run([self.enpu, cmd, "--help"], capture_output=True, text=True)
            self.help[cmd] = p.stdout + p.stderr
        return self.help[cmd]

    def content_hash(self, store):
        p = subprocess.run([self.enpu, "store", "info", store, "--json"], capture_output=True, text=True)
        if p.returncode != 0:
            raise Failure(f"enpu store info {store}: {p.stderr.strip()}")
        return json.loads(p.stdout)["content_hash"]

    def key(self, cmds, files=(), stores=()):
        """A stage's key: the binary, its commands and its inputs' contents. A path is keyed
        as the absolute path it names, not as spelled: the commands name paths relative to
        the working directory when they lie below it (as_given), so the same pipeline run
        from another directory spells them differently and must still find its stages done."""
        h = hashlib.sha256()
        h.update(self.enpu_sha.encode())
        h.update(json.dumps([[canonical(a) for a in argv] for argv in cmds]).encode())
        for f in sorted(files, key=canonical):
            h.update(canonical(f).encode() + sha256_file(f).encode())
        for s in sorted(stores, key=canonical):
            h.update(canonical(s).encode() + self.content_hash(s).encode())
        return h.hexdigest()

    def stage(self, mdir, name, cmds, files=(), stores=(), outputs=(), stdout_to=None, env=None):
        """Run cmds (a list of argv lists) unless the stage's key and outputs are there.
        @return True when it ran."""
        stamp = os.path.join(mdir, ".stamps", name)
        key = self.key(cmds, files, stores)
        if os.path.exists(stamp) and open(stamp).read() == key and all(os.path.exists(o) for o in outputs):
            print(f"paper: {os.path.basename(mdir)}: {name}: unchanged", flush=True)
            return False
        print(f"paper: {os.path.basename(mdir)}: {name}: running", flush=True)
        t0, r0 = time.monotonic(), resource.getrusage(resource.RUSAGE_CHILDREN)
        load = os.getloadavg()[0]
        for i, argv in enumerate(cmds):
            target = stdout_to[i] if stdout_to else None
            self.run(argv, target, env)
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        timing = {"wall_s": round(time.monotonic() - t0, 2),
                  "cpu_s": round(r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime, 2),
                  "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "load_1min": round(load, 2),
                  "nproc": os.cpu_count()}
        if os.path.exists(stamp):
            os.remove(stamp)
        os.makedirs(os.path.dirname(stamp), exist_ok=True)
        self.record(mdir, name, timing)
        with open(stamp, "w") as f:
            f.write(key)
        return True

    def run(self, argv, stdout_path, env):
        shown = " ".join(argv)
        print(f"paper:   $ {shown}" + (f" > {stdout_path}" if stdout_path else ""), flush=True)
        full_env = dict(os.environ, **(env or {}))
        out = None
        if stdout_path:
            os.makedirs(os.path.dirname(stdout_path), exist_ok=True)
            out = open(stdout_path + ".tmp", "w")
        try:
            self.child = subprocess.Popen(argv, stdout=out, env=full_env)
            status = self.child.wait()
        finally:
            self.child = None
            if out:
                out.close()
        if stdout_path and status == 0:
            os.replace(stdout_path + ".tmp", stdout_path)
        if status == 3 or (self.stopped and status != 0):
            raise Failure(f"{shown}: stopped by a signal (exit status {status}); run the same command to resume", 3)
        if status != 0:
            raise Failure(f"{shown}: exit status {status}")

    def forward(self, signum, frame):
        """A stop signal (Slurm's warning SIGUSR1, SIGTERM, SIGINT) goes to the running
        command: the farm checkpoints and exits 3, and so does this script. mpirun forwards
        only SIGUSR1 (README, Failure semantics), so it gets that for any of them."""
        self.stopped = True
        if self.child is not None:
            mpirun = self.args.launcher == "mpirun"
            self.child.send_signal(signal.SIGUSR1 if mpirun or signum == signal.SIGUSR1 else signum)

    def record(self, mdir, name, timing):
        path = os.path.join(mdir, "timings.json")
        data = load_json(path, "timings") if os.path.exists(path) else {}
        data[name] = timing
        write_if_changed(path, json.dumps(data, indent=2, sort_keys=True) + "\n")

    def launcher(self):
        a = self.args
        if a.launcher == "none":
            return [], {}
        if a.launcher == "srun":
            return ["srun", f"--mpi={os.environ.get('ENPU_SRUN_MPI', 'pmix')}", "--kill-on-bad-exit=0"], {}
        env = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"} if os.geteuid() == 0 else {}
        return ["mpirun", "-np", str(a.np), "--oversubscribe"], env


# ---- one model ----------------------------------------------------------------------

def farm_summaries(run_dirs):
    """The farm's summary.md of each run as {field: value}."""
    out = {}
    for name, d in run_dirs:
        fields = {}
        path = os.path.join(d, "summary.md")
        if os.path.exists(path):
            for line in open(path):
                cells = [c.strip() for c in line.strip().strip("|").split("|")]
                if len(cells) == 2 and cells[0] and not cells[0].startswith("-"):
                    fields[cells[0]] = cells[1]
        out[name] = fields
    return out


def stage_farm(rn, mdir, runs):
    launch, env = rn.launcher()
    jobs = [os.path.join(mdir, name, "job.json") for name, *_ in runs]
    files = sorted({f for j in jobs for f in [j] + job_inputs(j, load_json(j, "job"))})
    common = ["--quiet", "--progress-s", "60"]
    if "JOB [JOB...]" in rn.help_text("farm"):
        cmds = [launch + [rn.enpu, "farm"] + jobs + common]
    else:
        cmds = [launch + [rn.enpu, "farm", j] + common for j in jobs]
    stores = [os.path.join(mdir, name, "plans.h5") for name, *_ in runs]
    tpath = os.path.join(mdir, "timings.json")
    before = load_json(tpath, "timings").get("farm", {}) if os.path.exists(tpath) else {}
    if rn.stage(mdir, "farm", cmds, files=files, outputs=stores, env=env):
        timings = load_json(tpath, "timings")
        timings["farm"]["jobs"] = farm_summaries([(n, os.path.join(mdir, n)) for n, *_ in runs])
        timings["farm"]["np"] = rn.args.np if rn.args.launcher == "mpirun" else None
        grid = {n: os.path.join(mdir, n, "plans.h5") for n, kind, *_ in runs if kind == "grid"}
        full = full_grid(rn, timings["farm"], before, grid)
        if full:
            timings["farm"]["full_grid"] = full
        write_if_changed(tpath, json.dumps(timings, indent=2, sort_keys=True) + "\n")
    return stores


FROM_EMPTY = "0 from the store, 0 from the journal"


def full_grid(rn, farm, before, grid):
    """The grid farms' summaries of the last run that computed every grid store from empty
    (the core-hours of the grid): this run's when it did, else the earlier run's as long as
    each grid store still holds the same content (a rerun that only reused results, e.g.
    after a rebuild, leaves the figure standing). None when there is no such run."""
    hashes = {n: rn.content_hash(s) for n, s in grid.items()}
    jobs = farm["jobs"]
    if grid and all(jobs.get(n, {}).get("reused", "").startswith(FROM_EMPTY) for n in grid):
        return {"jobs": {n: jobs[n] for n in grid}, "content_hash": hashes, "utc": farm["utc"], "np": farm["np"]}
    old = before.get("full_grid")
    return old if old and old.get("content_hash") == hashes else None


def stage_compile(rn, pipe, mdir, runs):
    """Table 7 / Figure 14: one `enpu compile --json` per phase and policy, one thread."""
    t7 = pipe["table7"]
    run = next((r for r in runs if r[1] == "request" and r[2] == t7["budget"] and r[3] is None), None)
    if run is None:
        return []
    job = os.path.join(mdir, run[0], "job.json")
    have = {n for p in load_json(job, "job")["policies"] for n in policy_names(p)}
    cmds, outs, entries = [], [], []
    for ph, b in pipe["request"].items():
        for pol in t7["policies"]:
            if pol not in have:
                continue
            out = os.path.join(mdir, "compile", f"{ph}-{pol}.json")
            cmds.append([rn.enpu, "compile", job, "--phase", ph, "--batch", str(b["batch"]), "--seq", str(b["seq"]),
                         "--policy", pol, "--budget", t7["budget"], "--json"])
            outs.append(out)
            entries.append({"phase": ph, "policy": pol, "file": os.path.relpath(out, mdir)})
    rn.stage(mdir, "compile", cmds, files=[job] + job_inputs(job, load_json(job, "job")), outputs=outs,
             stdout_to=outs)
    return entries


def stage_graph(rn, pipe, mdir, job_path):
    cmds, outs, entries = [], [], []
    for ph, lengths in pipe["table2"].items():
        for n in lengths:
            out = os.path.join(mdir, "graph", f"{ph}-{n}.json")
            cmds.append([rn.enpu, "graph", job_path, "--phase", ph, "--batch", "1", "--seq", str(n), "--time", "--json"])
            outs.append(out)
            entries.append({"phase": ph, "seq": n, "file": os.path.relpath(out, mdir)})
    if rn.stage(mdir, "graph", cmds, files=[job_path] + job_inputs(job_path, load_json(job_path, "job")),
                outputs=outs, stdout_to=outs):
        for out in outs:  # only what Table 2 needs: the per-op lists are large
            d = load_json(out, "graph")
            keep = {k: d[k] for k in ("job", "model", "phase", "batch", "seq", "parallel", "capacity")}
            keep["time_ns"] = d["totals"]["time_ns"]
            keep["energy_nj"] = d["totals"]["energy_nj"]
            write_if_changed(out, json.dumps(keep, indent=2) + "\n")
    return entries


def stage_figure20(rn, pipe, mdir, runs, job_file):
    f = pipe.get("figure20")
    if not f or resolve(pipe["_dir"], f["model"]) != job_file:
        return None
    run = next((r for r in runs if r[1] == "request" and r[2] == f["budget"] and r[3] is None), None)
    if run is None:
        return None
    src = load_json(os.path.join(mdir, run[0], "job.json"), "job")
    fig_dir = os.path.join(mdir, "figure20")
    job = dict(src)
    job["policies"] = [p for p in src["policies"] if isinstance(p, str) and p in f["policies"]]
    for k in ("model", "chip", "cluster"):
        job[k] = resolve(os.path.join(mdir, run[0]), src[k])
    job_path = write_job(fig_dir, src["name"].replace(run[0], "figure20"), job)
    out = os.path.join(fig_dir, "figure20.json")
    numbers = resolve(pipe["_dir"], pipe["numbers"])  # the paper's values drawn on the figure
    cmd = [rn.enpu, "compile", job_path, "--phase", f["phase"], "--batch", str(f["batch"]), "--seq", str(f["seq"]),
           "--capacity-factor", ",".join(f["factors"]), "--slacks", ",".join(str(s) for s in f["slacks"]),
           "--budget", f["budget"], "--json", "--out", fig_dir, "--numbers", numbers]
    rn.stage(mdir, "figure20", [cmd], files=[job_path, numbers] + job_inputs(job_path, load_json(job_path, "job")),
             outputs=[out],
             stdout_to=[out])
    return {"dir": "figure20", "json": "figure20/figure20.json"}


def stage_replay(rn, pipe, mdir, runs, job_file, stores):
    r = pipe.get("replay")
    if not r or resolve(pipe["_dir"], r["model"]) != job_file:
        return []
    trace = resolve(pipe["_dir"], r["trace"])
    job = load_json(job_file, "job")
    cluster = resolve(os.path.dirname(job_file), job["cluster"])
    entries, cmds, outs, used = [], [], [], []
    for (name, kind, *_), store in zip(runs, stores):
        if kind != "grid":
            continue
        used.append(store)
        for spec in r["runs"]:
            out = os.path.join(mdir, f"replay-{spec['name']}-{name}")
            argv = [rn.enpu, "replay", "--store", store, "--trace", trace, "--cluster", cluster,
                    "--threads", str(rn.args.threads), "--out", out]
            if spec.get("day"):
                argv.append("--day")
            if spec.get("rate", 1) != 1:
                argv += ["--rate", str(spec["rate"])]
            if spec.get("windows_only"):
                argv.append("--windows-only")
            for key in ("governors", "spec"):
                if key in spec:
                    argv += [f"--{key}", spec[key]]
            cmds.append(argv)
            outs.append(os.path.join(out, "summary.json"))
            entries.append({"run": name, "name": spec["name"], "dir": os.path.relpath(out, mdir)})
    rn.stage(mdir, "replay", cmds, files=[trace, cluster], stores=used, outputs=outs)
    return entries


def stage_decompose(rn, pipe, mdir, job_file):
    """bench_request decompose of each plan the pipeline names for this model."""
    bench = os.path.join(os.path.dirname(rn.enpu), "tests", "bench", "bench_request")
    wanted = [d for d in pipe.get("decompose", []) if resolve(pipe["_dir"], d["model"]) == job_file]
    if not wanted:
        return []
    if not os.access(bench, os.X_OK):
        print(f"paper: {os.path.basename(mdir)}: decompose: no {bench} (a build without tests): skipped")
        return []
    cmds, outs, entries = [], [], []
    for d in wanted:
        name = f"{d['budget']}-{d['phase']}-{d['policy']}-{100 * d['slack']:g}" + (f"-seq{d['seq']}" if "seq" in d else "")
        out = os.path.join(mdir, "decompose", name + ".md")
        argv = [bench, "decompose", d["budget"], d["phase"], d["policy"], str(d["slack"]), "--job", job_file]
        if "seq" in d:
            argv += ["--seq", str(d["seq"])]
        cmds.append(argv)
        outs.append(out)
        entries.append({"name": name, "file": os.path.relpath(out, mdir)})
    job = load_json(job_file, "job")
    rn.stage(mdir, "decompose", cmds, files=[bench, job_file] + job_inputs(job_file, job), outputs=outs,
             stdout_to=outs)
    return entries


def do_model(rn, pipe, job_file):
    job, runs = derive_runs(pipe, job_file)
    name = model_name(job_file)
    mdir = os.path.join(rn.out, name)
    for run_name, kind, budget, variant, j in runs:
        write_job(os.path.join(mdir, run_name), f"{job['name']}-{run_name}", j)
    stores = stage_farm(rn, mdir, runs)
    manifest = {
        "model": name,
        "job": os.path.relpath(job_file, mdir),
        "request": pipe["request"],
        "table7": pipe["table7"],
        "runs": [{"name": n, "kind": k, "budget": b, "variant": v, "store": f"{n}/plans.h5", "job": f"{n}/job.json"}
                 for n, k, b, v, _ in runs],
        "compile": stage_compile(rn, pipe, mdir, runs),
        "graph": stage_graph(rn, pipe, mdir, os.path.join(mdir, runs[0][0], "job.json")),
        "figure20": stage_figure20(rn, pipe, mdir, runs, job_file),
        "replays": stage_replay(rn, pipe, mdir, runs, job_file, stores),
        "decompose": stage_decompose(rn, pipe, mdir, job_file),
        "timings": "timings.json",
    }
    write_if_changed(os.path.join(mdir, "manifest.json"), json.dumps(manifest, indent=2) + "\n")
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


if __name__ == "__main__":
    sys.exit(main())
