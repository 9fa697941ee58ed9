"""stages — what each stage of one model runs (farm, compile, graph, figure20, replay,
decompose) and the manifest entries it contributes."""
import json
import os

from .inputs import job_inputs, load_json, policy_names, resolve, write_if_changed, write_job


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
