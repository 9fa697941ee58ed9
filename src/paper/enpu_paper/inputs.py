"""inputs — the pipeline file, a model's job and the runs derived from it, the job files
written for them, and the path spellings the stage keys and outputs use. Pure but for
reading and writing those files."""
import fnmatch
import json
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
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
