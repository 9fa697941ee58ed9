"""manifest — a model's manifest.json, the one document between the pipeline and `enpu
report paper` (src/paper/paper_load.c): built from the runs and the stages' entries and
checked against schemas/paper-manifest.schema.json before it is written, so the pipeline
never hands the report a document the schema refuses."""
import json
import os

from .inputs import ROOT, Failure, json_path, load_json, write_if_changed

SCHEMA = os.path.join(ROOT, "schemas", "paper-manifest.schema.json")


def build(name, job_rel, pipe, runs, entries):
    """The manifest of model `name`: runs as derive_runs gives them, entries the stages'
    (compile, graph, figure20, replays, decompose)."""
    doc = {
        "model": name,
        "job": job_rel,
        "request": pipe["request"],
        "table7": pipe["table7"],
        "runs": [{"name": n, "kind": k, "budget": b, "variant": v, "store": f"{n}/plans.h5", "job": f"{n}/job.json"}
                 for n, k, b, v, _ in runs],
    }
    for key in ("compile", "graph", "figure20", "replays", "decompose"):
        doc[key] = entries[key]
    doc["timings"] = "timings.json"
    return doc


def problems(doc):
    """The schema's complaints about doc, as 'JSON path: message', first path first."""
    try:
        import jsonschema
    except ImportError:
        raise Failure("python3-jsonschema is missing (Debian's /usr/bin/python3 has it)", 2)
    validator = jsonschema.Draft202012Validator(load_json(SCHEMA, "schema"))
    errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
    return [f"{json_path(e.absolute_path)}: {e.message}" for e in errors]


def write(path, doc):
    """Write doc as path (unchanged bytes are not rewritten) once the schema accepts it;
    a Failure naming the first complaint otherwise (an internal error: status 1)."""
    found = problems(doc)
    if found:
        raise Failure(f"{path}: the manifest does not match {os.path.relpath(SCHEMA, ROOT)}: {found[0]}")
    write_if_changed(path, json.dumps(doc, indent=2) + "\n")
