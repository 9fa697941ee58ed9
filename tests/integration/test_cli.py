#!/usr/bin/python3
"""CLI contract test: runs the real `enpu` binary on the shipped jobs and checks the
JSON documents it prints (field names are a contract for scripts), that a
malformed job fails with file:line:column and the JSON path, and that every
command's --help documents its options (with --json among them) and a value outside
an option's documented range or choices is a usage error (exit 2) naming the option.

usage: test_cli.py ENPU_BINARY SOURCE_DIR"""
import json
import os
import re
import sys
import tempfile

from harness import Harness

enpu, src = sys.argv[1], sys.argv[2]
h = Harness(enpu, src)


# buckets: the paper grid of the Llama3-70B job.
doc = h.run_json("buckets", "jobs/llama3-70b.json")
tot = doc["totals"]
h.check("buckets totals fields", set(tot) >= {"buckets", "feasible", "infeasible_capacity", "compilations"})
h.check("buckets 2 phases x 12 batch x 36 seq", tot["buckets"] == 2 * 12 * 36, str(tot))
h.check("buckets feasible + infeasible = all", tot["feasible"] + tot["infeasible_capacity"] == tot["buckets"])
job = json.load(open(os.path.join(src, "jobs/llama3-70b.json")))
h.check("compilations = feasible x slacks x policies",
      tot["compilations"] == tot["feasible"] * len(job["slacks"]) * len(job["policies"]), str(tot))
pre = doc["phases"]["prefill"]
h.check("prefill seq axis has 36 buckets up to 128K", len(pre["seq"]) == 36 and pre["seq"][-1] == 131072)
big = [b for b in pre["buckets"] if b["batch"] == 256 and b["seq"] == 131072][0]
h.check("batch 256 x 128K prefill is infeasible (capacity)", big["feasible"] is False)
small = [b for b in pre["buckets"] if b["batch"] == 1 and b["seq"] == 1024][0]
h.check("batch 1 x 1024 prefill is feasible", small["feasible"] is True)

# graph: FLOPs per token against 2 x params (+ attention), weights per chip against params x 2 / TP.
for jobfile, params_b, tp in (("jobs/llama3-70b.json", 70.55, 4),):
    g = h.run_json("graph", jobfile, "--phase", "prefill", "--batch", "1", "--seq", "4096")
    t = g["totals"]
    h.check("graph ops fields", all({"id", "name", "kind", "shape", "flops", "hbm_bytes", "ici_bytes",
                                   "multiplicity", "signature"} <= set(op) for op in g["ops"]))
    ratio = t["weight_bytes"] / (params_b * 1e9 * 2 / tp)
    h.check(f"{jobfile}: weight bytes per chip within 2% of params*2/TP", abs(ratio - 1) < 0.02, f"ratio {ratio:.4f}")
    fpt = t["flops"] * tp / 4096
    h.check(f"{jobfile}: FLOPs/token >= 2 x layer params", fpt > 2 * 68.4e9, f"{fpt:.4g}")
g3 = h.run_json("graph", "jobs/deepseek-v3-671b.json", "--phase", "decode", "--batch", "64", "--seq", "4096")
h.check("deepseek-v3 graph has MoE all-to-all", any(op["kind"] == "alltoall" for op in g3["ops"]))

# A malformed job: exit non-zero, message names file:line:column and the JSON path.
with tempfile.TemporaryDirectory() as tmp:
    bad = os.path.join(tmp, "bad.json")
    text = open(os.path.join(src, "jobs/demo.json")).read()
    text = text.replace('"model": "models/', '"model": "' + os.path.join(src, "jobs/models/"))
    text = text.replace('"chip": "chips/', '"chip": "' + os.path.join(src, "jobs/chips/"))
    text = text.replace('"cluster": "clusters/', '"cluster": "' + os.path.join(src, "jobs/clusters/"))
    text = text.replace("[1, 4]", "[1, -4]", 1)
    open(bad, "w").write(text)
    line = next(i + 1 for i, l in enumerate(text.splitlines()) if "-4" in l)
    r = h.run("buckets", bad)
    h.check("malformed job exits non-zero", r.returncode != 0, f"exit {r.returncode}")
    h.check("malformed job error names file:line", f"bad.json:{line}:" in r.stderr, r.stderr)
    h.check("malformed job error names the JSON path", "$.phases.prefill.batch[1]" in r.stderr, r.stderr)
    r = h.run("buckets", os.path.join(tmp, "missing.json"))
    h.check("missing job file exits 2 (bad input) and names it", r.returncode == 2 and "missing.json" in r.stderr, r.stderr)
r = h.run("buckets")
h.check("usage error exits 2", r.returncode == 2, f"exit {r.returncode}")


# --help of every command and sub-command, from `enpu --help` down: each lists --json,
# and each option whose line states a range or whose value is a list of choices refuses
# a value outside it with exit 2, naming the option and what it expected.
def options(help_text):
    """(option, value placeholder, rest of its help entry) of every option in a --help."""
    entries = re.findall(r"^  (--[\w-]+)(?: (\S+))?((?:.*\n)(?:^ {20,}.*\n)*)", help_text, re.M)
    return [(o, meta, " ".join(rest.split())) for o, meta, rest in entries]


def bad_value(meta, text):
    """A value the option must refuse, from its help entry, or None when it takes any text."""
    if "|" in meta and not meta.startswith("NAME"):
        return "no-such-choice"
    m = re.search(r"\((?:required; )?(?:each )?(?:in [\[(](-?[\d.e+]+), |>=? (-?[\d.e+]+))", text)
    if not m:
        return None
    low = float(m.group(1) or m.group(2))
    return "x" if "," in meta else "%g" % (low - 1 if low >= 1 else -1)


top = h.run("--help")
commands = re.findall(r"^  (\w+) ", top.stdout, re.M)
h.check("enpu --help lists the fifteen commands", top.returncode == 0 and len(commands) == 15, top.stdout)
checked = 0
for cmd in commands:
    listing = h.run(cmd, "--help")
    # sub-commands: `store` lists them; `report` names its `report paper` in its text
    subs = sorted(set(re.findall(r"^usage: enpu %s ([a-z]+) |`enpu %s ([a-z]+) --help`" % (cmd, cmd),
                                 listing.stdout, re.M)))
    subs = [a or b for a, b in subs]
    own = [] if re.search(r"^usage: enpu %s [a-z]+ " % cmd, listing.stdout, re.M) else [[cmd]]
    for words in own + [[cmd, sub] for sub in subs]:
        r = h.run(*words, "--help")
        name = " ".join(words)
        opts = options(r.stdout)
        h.check(f"enpu {name} --help: exit 0, a synopsis, --json among the options",
                r.returncode == 0 and r.stdout.startswith(f"usage: enpu {name}") and
                "--json" in [o for o, _, _ in opts], r.stdout[:400])
        for opt, meta, text in opts:
            value = bad_value(meta or "", text)
            if value is None:
                continue
            e = h.run(*words, opt, value)
            checked += 1
            h.check(f"enpu {name} {opt} {value}: exit 2 naming the option and what it expected",
                    e.returncode == 2 and f"{opt}: expected " in e.stderr and f"'{value}'" in e.stderr,
                    f"exit {e.returncode}: {e.stderr[:300]}")
h.check("every command's ranged or enumerated options were tried", checked >= 25, f"{checked} tried")

h.finish()
