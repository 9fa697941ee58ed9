#!/usr/bin/python3
"""check_schemas.py — shows that the JSON Schemas in schemas/ are real.

Usage: /usr/bin/python3 check_schemas.py SOURCE_ROOT
(Debian's python3, which has python3-jsonschema; another python3 on PATH may not.)

1. Every schemas/*.schema.json is itself a valid draft 2020-12 schema.
2. Every shipped *.json under jobs/ validates against the schema of its folder
   (models/, chips/, clusters/, or jobs/ itself for job files; jobs/paper/ and
   jobs/paper/quick/ hold jobs, a pipeline.json (paper-pipeline) and the paper's numbers
   (paper)); a JSON file in any other folder is a failure, so nothing ships unchecked. The files a job or chip
   references exist, and tables listed in a SHA256SUMS match it (they are copies).
3. Deliberately bad documents (shipped files with one mutation each: unknown key,
   negative or zero value, wrong type, missing required key, unknown enum value, a value
   past its physical range, a job name that would leave the results directory...) are
   rejected, so the schemas are strict rather than accept-anything.
4. The job schema's policy pattern is the one the policy table (ENPU_POLICY_TABLE in
   src/common/enpu_policy.h) makes: every name in it, the ones with variants behind an optional
   pg+ and @shadow=N, and no other.
5. The schemas and the C loaders give every number the same range: each row of
   src/config/config_ranges.c has the same bounds in its schema, and every number a
   schema allows has a row (so none is read without a documented range).
5. Every shipped manifest of the paper's results (results/paper/*/manifest.json) validates
   against schemas/paper-manifest.schema.json, and a manifest with a run of an unknown
   kind is rejected.
Prints one line per check and a final "N passed, M failed"; exits 1 on any failure.
"""
import hashlib
import json
import pathlib
import re
import sys

import jsonschema

VALIDATOR = jsonschema.Draft202012Validator
KINDS = ("job", "model", "chip", "cluster", "paper")
# the pipeline file is read by the paper pipeline (src/paper/enpu_paper), not the C loaders;
# the manifest is what that pipeline writes for `enpu report paper`
SCHEMAS = KINDS + ("paper-pipeline", "paper-manifest")
PAPER_FILES = {"pipeline.json": "paper-pipeline", "paper-numbers.json": "paper"}
FOLDER_KIND = {"models": "model", "chips": "chip", "clusters": "cluster"}

# (name, kind, shipped file under jobs/, JSON path to change, new value or DELETE,
#  JSON path the schema must blame). Each mutation breaks exactly one rule; the
# mutated document must be rejected, and for that rule, not by accident elsewhere.
DELETE = object()
BAD_DOCUMENTS = [
    ("job unknown top-level key", "job", "demo.json", ("slack",), [0.1], "$"),
    ("job unknown key in a phase", "job", "demo.json", ("phases", "prefill", "batches"), [1],
     "$.phases.prefill"),
    ("job negative batch", "job", "demo.json", ("phases", "prefill", "batch", 1), -4,
     "$.phases.prefill.batch[1]"),
    ("job zero sequence length", "job", "demo.json", ("phases", "decode", "seq", 0), 0,
     "$.phases.decode.seq[0]"),
    ("job batch of wrong type", "job", "demo.json", ("phases", "decode", "batch", 0), "8",
     "$.phases.decode.batch[0]"),
    ("job seq axis of wrong type", "job", "demo.json", ("phases", "decode", "seq"), 4096,
     "$.phases.decode.seq"),
    ("job missing store", "job", "demo.json", ("store",), DELETE, "$"),
    ("job missing seq axis", "job", "demo.json", ("phases", "prefill", "seq"), DELETE,
     "$.phases.prefill"),
    ("job no phase at all", "job", "demo.json", ("phases",), {}, "$.phases"),
    ("job unknown grid rule", "job", "llama3-70b.json", ("phases", "prefill", "seq", "rule"), "vllm",
     "$.phases.prefill.seq.rule"),
    ("job grid rule without max", "job", "llama3-70b.json", ("phases", "decode", "seq", "max"), DELETE,
     "$.phases.decode.seq"),
    ("job duplicate bucket", "job", "demo.json", ("phases", "prefill", "batch"), [1, 4, 4],
     "$.phases.prefill.batch"),
    ("job negative slack", "job", "demo.json", ("slacks",), [-0.02, 0], "$.slacks[0]"),
    ("job slack in percent, not a fraction", "job", "demo.json", ("slacks",), [0, 20], "$.slacks[1]"),
    ("job unknown policy", "job", "demo.json", ("policies",), ["nodvfs", "enpu"], "$.policies[1]"),
    ("job capacity factor below 1", "job", "demo.json", ("moe", "capacity_factor"), 0.5,
     "$.moe.capacity_factor"),
    ("job capacity factor unknown word", "job", "demo.json", ("moe", "capacity_factor"), "best",
     "$.moe.capacity_factor"),
    ("job unknown MoE expert graph", "job", "deepseek-v3-671b.json", ("moe", "experts"), "some",
     "$.moe.experts"),
    ("job unknown capacity policy", "job", "deepseek-v2-236b.json", ("capacity",), "swap",
     "$.capacity"),
    ("job parallel override with tp 0", "job", "demo.json", ("phases", "decode", "parallel"),
     {"dp": 1, "tp": 0, "pp": 1, "ep": 1}, "$.phases.decode.parallel.tp"),
    ("model GQA missing kv_heads", "model", "models/llama3-70b.json", ("attention", "kv_heads"), DELETE,
     "$.attention"),
    ("model MLA key on GQA attention", "model", "models/llama3-70b.json", ("attention", "q_lora_rank"),
     1536, "$.attention"),
    ("model unknown attention kind", "model", "models/deepseek-v3-671b.json", ("attention", "kind"),
     "mha", "$.attention.kind"),
    ("model negative layers", "model", "models/llama3-70b.json", ("layers",), -80, "$.layers"),
    ("model moe missing experts_per_token", "model", "models/deepseek-v2-236b.json",
     ("moe", "experts_per_token"), DELETE, "$.moe"),
    ("model gate/up fusion not a boolean", "model", "models/llama3-70b.json",
     ("ffn", "fuse_gate_up"), "yes", "$.ffn.fuse_gate_up"),
    ("chip host link without energy", "chip", "chips/tpuv5p.json", ("host", "pj_per_byte"), DELETE,
     "$.host"),
    ("chip zero frequency states", "chip", "chips/tpuv5p.json", ("clock", "states"), 0, "$.clock.states"),
    ("chip zero frequency step", "chip", "chips/tpuv5p.json", ("clock", "step_mhz"), 0,
     "$.clock.step_mhz"),
    ("chip bandwidth of wrong type", "chip", "chips/tpuv5p.json", ("hbm", "gbps"), "2755", "$.hbm.gbps"),
    ("chip missing regulator table", "chip", "chips/tpuv5p.json", ("tables", "ivr_fixed"), DELETE,
     "$.tables"),
    ("chip unknown key in ici", "chip", "chips/tpuv5p.json", ("ici", "latency_us"), 1, "$.ici"),
    ("cluster tp 0", "cluster", "clusters/llama3-70b.json", ("decode", "parallel", "tp"), 0,
     "$.decode.parallel.tp"),
    ("cluster unknown key in an SLO class", "cluster", "clusters/llama3-70b.json", ("slo", 0, "ttft_s"),
     0.7, "$.slo[0]"),
    ("cluster missing batching", "cluster", "clusters/llama3-70b.json", ("batching",), DELETE, "$"),
    ("cluster no SLO class", "cluster", "clusters/llama3-70b.json", ("slo",), [], "$.slo"),
    ("job name climbing out of results/", "job", "demo.json", ("name",), "../../../PWNED", "$.name"),
    ("job name with a slash", "job", "demo.json", ("name",), "a/b", "$.name"),
    ("job batch past its range", "job", "demo.json", ("phases", "decode", "batch", 1), 70000,
     "$.phases.decode.batch[1]"),
    ("model 2^31-1 layers", "model", "models/llama3-70b.json", ("layers",), 2147483647, "$.layers"),
    ("model head_dim 1e9", "model", "models/llama3-70b.json", ("attention", "head_dim"), 1000000000,
     "$.attention.head_dim"),
    ("cluster 1e9 decode nodes", "cluster", "clusters/llama3-70b.json", ("decode", "nodes"), 1000000000,
     "$.decode.nodes"),
    ("chip more frequency states than a u8 holds", "chip", "chips/tpuv5p.json", ("clock", "states"), 256,
     "$.clock.states"),
    ("chip 1e308 W of static power", "chip", "chips/tpuv5p.json", ("other_static_w",), 1e308,
     "$.other_static_w"),
    ("cluster unknown idle mode", "cluster", "clusters/llama3-70b.json", ("idle", "mode"), "off",
     "$.idle.mode"),
    ("cluster sleep without wake_ms", "cluster", "clusters/llama3-70b.json", ("idle",),
     {"mode": "sleep", "sleep_w": 5}, "$.idle"),
    ("cluster safeguard1_scan 0", "cluster", "clusters/llama3-70b.json", ("scheduler", "safeguard1_scan"), 0,
     "$.scheduler.safeguard1_scan"),
    ("cluster negative DCN energy", "cluster", "clusters/llama3-70b.json", ("dcn", "energy_pj_per_byte"), -1,
     "$.dcn.energy_pj_per_byte"),
    ("paper claim of unknown kind", "paper", "paper/paper-numbers.json", ("claims", 0, "ours", "kind"),
     "energy", "$.claims[0].ours.kind"),
    ("paper claim with an unknown query key", "paper", "paper/paper-numbers.json",
     ("claims", 0, "ours", "slacks"), 0.1, "$.claims[0].ours"),
    ("paper claim slack in percent", "paper", "paper/paper-numbers.json", ("claims", 0, "ours", "slack"), 20,
     "$.claims[0].ours.slack"),
    ("paper claim number 6", "paper", "paper/paper-numbers.json", ("claims", 0, "claim"), 6,
     "$.claims[0].claim"),
    ("paper claim without a query", "paper", "paper/paper-numbers.json", ("claims", 0, "ours"), DELETE,
     "$.claims[0]"),
    ("paper gain without a base", "paper", "paper/paper-numbers.json", ("claims", 4, "ours", "base"), DELETE,
     "$.claims[4].ours"),
    ("pipeline unknown budget", "paper-pipeline", "paper/pipeline.json", ("budgets",), ["strict", "lenient"],
     "$.budgets[1]"),
    ("pipeline request bucket of batch 0", "paper-pipeline", "paper/pipeline.json",
     ("request", "prefill", "batch"), 0, "$.request.prefill.batch"),
    ("pipeline unknown key", "paper-pipeline", "paper/pipeline.json", ("grid_policies",), ["nodvfs"], "$"),
]

# A row of config_ranges.c; clang-format may wrap a long one after any comma.
RANGE_ROW = re.compile(r'\{"(job|model|chip|cluster|paper|power table)",\s*"([^"]+)",\s*([-0-9.e+]+),\s*([-0-9.e+]+),'
                       r'\s*(true|false),\s*"')


def mutate(doc, path, value):
    """Set (or delete, for DELETE) the value at path, a tuple of keys and indices."""
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    if value is DELETE:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value


def describe(error):
    return f"{error.json_path}: {error.message}"


class Report:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def result(self, ok, what, details=()):
        print(f"{'PASS' if ok else 'FAIL'}  {what}")
        for line in details:
            print(f"      {line}")
        if ok:
            self.passed += 1
        else:
            self.failed += 1


def load_schemas(root, report):
    schemas = {}
    for kind in SCHEMAS:
        path = root / "schemas" / f"{kind}.schema.json"
        rel = path.relative_to(root)
        try:
            schema = json.loads(path.read_text())
            VALIDATOR.check_schema(schema)
        except (OSError, ValueError, jsonschema.SchemaError) as exc:
            report.result(False, f"{rel} (schema)", [str(exc).splitlines()[0]])
            continue
        schemas[kind] = VALIDATOR(schema)
        report.result(True, f"{rel} (schema)")
    return schemas


def kind_of(jobs, path):
    parts = path.relative_to(jobs).parts
    if len(parts) == 1:
        return "job"
    if parts[0] == "paper" and len(parts) <= 3 and (len(parts) == 2 or parts[1] == "quick"):
        return PAPER_FILES.get(parts[-1], "job")
    if len(parts) == 2:
        return FOLDER_KIND.get(parts[0])
    return None


def referenced_files(kind, path, doc):
    """Files the document points at, relative to its own folder (config.h)."""
    if kind == "job":
        return [path.parent / doc[key] for key in ("model", "chip", "cluster")]
    if kind == "chip":
        return [path.parent / table for table in doc["tables"].values()]
    if kind == "paper-pipeline":
        files = [path.parent / m for m in doc["models"]] + [path.parent / doc["numbers"]]
        files += [path.parent / v["chip"] for v in doc.get("variants", [])]
        for key in ("figure20", "replay"):
            if key in doc:
                files.append(path.parent / doc[key]["model"])
        if "replay" in doc:
            files.append(path.parent / doc["replay"]["trace"])
        files += [path.parent / d["model"] for d in doc.get("decompose", [])]
        return files
    return []


def check_shipped(root, schemas, report):
    jobs = root / "jobs"
    files = sorted(jobs.rglob("*.json"))
    if not files:
        report.result(False, "jobs/: no JSON files found")
    for path in files:
        rel = path.relative_to(root)
        kind = kind_of(jobs, path)
        if kind is None:
            report.result(False, f"{rel}: no schema for files in this folder")
            continue
        if kind not in schemas:
            report.result(False, f"{rel} ({kind}): its schema did not load")
            continue
        try:
            doc = json.loads(path.read_text())
        except ValueError as exc:
            report.result(False, f"{rel} ({kind}): not JSON: {exc}")
            continue
        errors = [describe(e) for e in schemas[kind].iter_errors(doc)]
        if not errors:
            errors = [f"missing referenced file {ref.relative_to(root)}"
                      for ref in referenced_files(kind, path, doc) if not ref.is_file()]
        report.result(not errors, f"{rel} ({kind})", errors)


def check_checksums(root, report):
    for sums in sorted((root / "jobs").rglob("SHA256SUMS")):
        bad = []
        for line in sums.read_text().splitlines():
            digest, name = line.split(maxsplit=1)
            target = sums.parent / name
            if not target.is_file():
                bad.append(f"{name}: missing")
            elif hashlib.sha256(target.read_bytes()).hexdigest() != digest:
                bad.append(f"{name}: content differs from SHA256SUMS")
        report.result(not bad, f"{sums.relative_to(root)} (checksums)", bad)


def check_bad_documents(root, schemas, report):
    for name, kind, base, path, value, blamed in BAD_DOCUMENTS:
        what = f"bad document '{name}'"
        if kind not in schemas:
            report.result(False, f"{what}: {kind} schema did not load")
            continue
        doc = json.loads((root / "jobs" / base).read_text())
        mutate(doc, path, value)
        error = jsonschema.exceptions.best_match(schemas[kind].iter_errors(doc))
        if error is None:
            report.result(False, f"{what} was accepted by the {kind} schema")
        elif error.json_path != blamed:
            report.result(False, f"{what} rejected at the wrong place (expected {blamed})",
                          [describe(error)])
        else:
            report.result(True, f"{what} rejected: {describe(error)}")


def ranges_of_c(root):
    """The rows of src/config/config_ranges.c: (doc, path, min, max, min excluded)."""
    text = (root / "src" / "config" / "config_ranges.c").read_text()
    return [(d, p, float(lo), float(hi), excl == "true") for d, p, lo, hi, excl in RANGE_ROW.findall(text)]


def variants(schema, node):
    """node with its $ref followed, and every subschema that applies alongside it."""
    while "$ref" in node:
        node = schema["$defs"][node["$ref"].rsplit("/", 1)[-1]]
    yield node
    for key in ("allOf", "anyOf", "oneOf"):
        for sub in node.get(key, []):
            yield from variants(schema, sub)
    for key in ("then", "else"):
        if key in node:
            yield from variants(schema, node[key])


def children(schema, node):
    """(path component, child) pairs: object members by name, array items as '[]'."""
    for v in variants(schema, node):
        for key, child in v.get("properties", {}).items():
            yield key, child
        if "items" in v:
            yield "[]", v["items"]


def bounds(schema, node):
    """(minimum, maximum, minimum excluded, numeric) of a leaf over all its variants."""
    lo = hi = None
    excl, numeric = False, False
    for v in variants(schema, node):
        types = v.get("type", [])
        numeric |= bool({"integer", "number"} & set(types if isinstance(types, list) else [types]))
        if "minimum" in v:
            lo = v["minimum"]
        if "exclusiveMinimum" in v:
            lo, excl = v["exclusiveMinimum"], True
        hi = v.get("maximum", hi)
    return lo, hi, excl, numeric


def numeric_leaves(schema, node, path="$"):
    """(JSON path with [] for indices, leaf) of every number the schema allows."""
    if bounds(schema, node)[3]:
        yield path, node
    for key, child in children(schema, node):
        yield from numeric_leaves(schema, child, path + ("[]" if key == "[]" else "." + key))


def pattern_matches(pattern, path):
    """config_ranges.c's matcher: '*' stands for one object key."""
    return re.fullmatch(re.escape(pattern).replace(r"\*", r"[^.\[]+"), path) is not None


POLICY_ROW = re.compile(r'X\((\w+), (\w+), [^,]+, (true|false)\)')
POLICY_NAME = re.compile(r'#define (ENPU_POLICY_NAME_\w+) "([^"]+)"')


def check_policies(root, report):
    """The job schema's policy patterns against the C policy table."""
    text = (root / "src" / "common" / "enpu_policy.h").read_text()
    names = dict(POLICY_NAME.findall(text))
    table = text[text.index("#define ENPU_POLICY_TABLE(X)"):]
    table = table[:table.index("\n\n")]
    rows = [(pid, names.get(macro), v) for pid, macro, v in POLICY_ROW.findall(table)]
    report.result(len(rows) >= 2 and all(name for _, name, _ in rows),
                  f"src/common/enpu_policy.h: {len(rows)} policy rows read, each name a macro of the header")
    with_variants = [name for _, name, v in rows if v == "true"]
    without = [name for _, name, v in rows if v == "false"]
    want = ("^(" + "".join(f"{n}|" for n in without) + "(pg|(pg\\+)?(" + "|".join(with_variants) +
            "))(@shadow=(0|[1-9][0-9]{0,2}))?)$")
    want_not = "|".join(["@shadow="] + [f"^{n}$" for n in without])
    schema = json.loads((root / "schemas" / "job.schema.json").read_text())
    have = schema["$defs"]["policy"]["pattern"]
    report.result(have == want, "job.schema.json $defs.policy.pattern is the policy table's",
                  [] if have == want else [f"schema: {have}", f"table:  {want}"])
    sweep = schema["properties"]["policies"]["items"]["oneOf"][1]["properties"]["policy"]["not"]["pattern"]
    report.result(sweep == want_not, "job.schema.json shadow sweep excludes the policies without variants",
                  [] if sweep == want_not else [f"schema: {sweep}", f"table:  {want_not}"])


def check_ranges(root, report):
    rows = ranges_of_c(root)
    report.result(len(rows) > 50, f"src/config/config_ranges.c: {len(rows)} range rows read")
    for kind in KINDS:
        schema = json.loads((root / "schemas" / f"{kind}.schema.json").read_text())
        own = [r for r in rows if r[0] == kind]
        used = set()
        for path, leaf in numeric_leaves(schema, schema):
            row = next((r for r in own if pattern_matches(r[1], path)), None)
            if row is None:
                report.result(False, f"{kind} {path}: a number without a row in config_ranges.c")
                continue
            used.add(row)
            lo, hi, excl, _ = bounds(schema, leaf)
            ok = (lo, hi, excl) == (row[2], row[3], row[4])
            report.result(ok, f"{kind} {path}: schema {'(' if excl else '['}{lo}, {hi}] "
                              f"{'=' if ok else '!='} config_ranges.c {'(' if row[4] else '['}{row[2]}, {row[3]}]")
        for row in own:
            if row not in used:
                report.result(False, f"{kind} {row[1]}: a config_ranges.c row no schema number matches")


def check_manifests(root, schemas, report):
    """The paper pipeline's manifests as shipped, and one mutation the schema must refuse."""
    if "paper-manifest" not in schemas:
        return
    validator = schemas["paper-manifest"]
    files = sorted((root / "results" / "paper").glob("*/manifest.json"))
    if not files:
        report.result(False, "results/paper/*/manifest.json: none found")
    for path in files:
        doc = json.loads(path.read_text())
        errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
        report.result(not errors, f"{path.relative_to(root)} (paper-manifest)", [describe(e) for e in errors[:3]])
    if files:
        doc = json.loads(files[0].read_text())
        doc["runs"][0]["kind"] = "sweep"
        errors = list(validator.iter_errors(doc))
        report.result(any(list(e.absolute_path)[:3] == ["runs", 0, "kind"] for e in errors),
                      "bad manifest: a run of unknown kind is rejected at $.runs[0].kind")


def main(argv):
    if len(argv) != 2:
        print(f"usage: {argv[0]} SOURCE_ROOT", file=sys.stderr)
        return 2
    root = pathlib.Path(argv[1]).resolve()
    report = Report()
    schemas = load_schemas(root, report)
    check_shipped(root, schemas, report)
    check_checksums(root, report)
    check_bad_documents(root, schemas, report)
    check_policies(root, report)
    check_ranges(root, report)
    check_manifests(root, schemas, report)
    print(f"{report.passed} passed, {report.failed} failed")
    return 0 if report.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
