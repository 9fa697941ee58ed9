#!/usr/bin/python3
"""The paper's evaluation end to end on the quick grid (jobs/paper/quick/): the same
pipeline `make paper` runs (tools/paper.py: farms, compile timings, Table 2 graphs, the
Figure 20 sweep, replays, `enpu report paper`), so that it cannot rot.

Usage: /usr/bin/python3 test_paper.py ENPU_BINARY SOURCE_DIR HDF5_PLUGIN_DIR [FIXTURE_DIR]

With FIXTURE_DIR the cold run's output is FIXTURE_DIR/make/out and stays there, as the
cold run left it (step 6 restores it), for integration_slurm_paper to compare the Slurm
run's output with (the CTest fixture paper_quick); without, a scratch folder.

1. A cold run finishes (exit 0) and writes README.md, the per-run reports and plots.
2. Our numbers in the README are the stores' and the compile outputs', recomputed here
   independently with h5py and json: the mean eNPU-All prefill saving at 0 % slack over the
   models (claim c1-prefill-0) in both budget modes, the paper's overhead range at 0 %
   (claim c2-overhead-0, paper_overhead_pct), the growth of the regulator loss (claim c2-ivr-loss), Table 7's cells,
   the GA's compile time read as "faster" than the paper's bound (claim c2-dvfsc-time)
   and Table 2's ratios; the design-space policies reach the single-request store.
3. A rerun with nothing changed runs no stage and changes no file (every file's bytes),
   also from another working directory (the source directory).
4. A change recomputes only what depends on it: a pipeline whose Figure 20 sweep has
   another slack reruns the figure20 and report stages, nothing else.
5. Bad input: a pipeline with an unknown key is refused (exit 2) naming the JSON path.
6. Back to the original pipeline: figure20 and the report rerun, nothing else, and every
   data file the cold run wrote is as it was (bytes): stores, tables, .dat and figures.
"""
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from harness import Harness, md_rows

h = Harness(sys.argv[1], sys.argv[2])
src, plugins = sys.argv[2], sys.argv[3]
os.environ["HDF5_PLUGIN_PATH"] = plugins
import h5py  # noqa: E402  (after HDF5_PLUGIN_PATH is set)

DRIVER = os.path.join(src, "tools", "paper.py")
PIPELINE = os.path.join(src, "jobs", "paper", "quick", "pipeline.json")


def paper(out, *what, pipeline=PIPELINE, cwd=None):
    t0 = time.monotonic()
    p = subprocess.run([DRIVER, "--pipeline", pipeline, "--out", out, "--enpu", h.enpu, "--np", "2", *what],
                       capture_output=True, text=True, cwd=cwd)
    return p, time.monotonic() - t0


def ran(stdout):
    """(model folder, stage) of every stage that ran."""
    return sorted(re.findall(r"^paper: (\S+): (\S+): running$", stdout, re.M))


def files(out):
    sums = {}
    for root, _, names in os.walk(out):
        for n in names:
            p = os.path.join(root, n)
            if "/.stamps" not in p:
                sums[os.path.relpath(p, out)] = hashlib.sha256(open(p, "rb").read()).hexdigest()
    return sums


def plans(store, policy):
    """{(phase, slack): plan row} of the policy's single bucket per phase."""
    with h5py.File(store, "r") as f:
        b, pl = f[f"policies/{policy}/buckets"][()], f[f"policies/{policy}/plans"][()]
    return {(int(b["phase"][r["bucket"]]), round(float(r["slack"]), 9)): r for r in pl}


def cell_number(cell):
    m = re.match(r"\[?(-?[\d.]+)(?:, (-?[\d.]+))?\]?", cell)
    return (float(m.group(1)), float(m.group(2) or m.group(1))) if m else None


tmp = tempfile.mkdtemp(prefix="enpu-paper-test-")
fixture = sys.argv[4] if len(sys.argv) > 4 else None
if fixture:
    shutil.rmtree(fixture, ignore_errors=True)
out = os.path.join(fixture or tmp, "make" if fixture else "a", "out")
p, cold_s = paper(out, "all")
h.check("cold run exits 0", p.returncode == 0, p.stdout[-1500:] + p.stderr[-1500:])
print(f"     quick pipeline, cold: {cold_s:.1f} s wall")
readme = os.path.join(out, "README.md")
md = open(readme).read() if os.path.exists(readme) else ""
manifests = {m: json.load(open(os.path.join(out, m, "manifest.json"))) for m in ("llama3-70b", "deepseek-v3-671b")
             if os.path.exists(os.path.join(out, m, "manifest.json"))}
h.check("README.md and both models' manifests written", md and len(manifests) == 2)
for m in manifests:
    for run in manifests[m]["runs"]:
        rep = os.path.join(out, m, run["name"], "report.md")
        h.check(f"{m}/{run['name']}: report.md and its Figure 11 plot", os.path.exists(rep) and os.path.exists(
            os.path.join(out, m, run["name"], "savings_prefill.png")))
h.figures_legible("the quick pipeline's figures", out)
COMPARED = {"nodvfs", "dvfs-c", "dvfs-c-walk", "enpu-c", "enpu-all", "ideal"}
for m in manifests:
    for b in ("paper", "strict"):
        dat = os.path.join(out, f"figure11_{m}_{b}.dat")
        heads = [l.split()[2:] for l in open(dat) if l.startswith("# slack")] if os.path.exists(dat) else []
        h.check(f"{m} {b}: Figure 11 draws the compared policies only, both phases, none of the variants",
                len(heads) == 2 and all("enpu-all" in x and set(x) <= COMPARED for x in heads), str(heads))

# 2. the README's numbers against the outputs, recomputed here
claims = {row[-1].strip("`"): row for row in md_rows(md, "| # | stated by the paper")}
# the headline table (a figure column before the id; the figures' own tables have none)
links = {row[-1]: re.fullmatch(r"\[(\w+)\]\(#claims-(\w+)\)", row[-2])
         for row in md_rows(md, "| # | stated by the paper") if row[-2].startswith("[")}
h.check("the headline table links every claim to its figure's section, which holds the figure's claims",
        claims and len(links) == len(claims) and
        all(m and m.group(1) == m.group(2) and f'<a id="claims-{m.group(1)}"></a>' in md for m in links.values()),
        str(list(links.items())[:3]))
for k, mode in ((3, "paper"), (5, "strict")):
    want = sum(100 * plans(os.path.join(out, m, f"request-{mode}", "plans.h5"), "enpu-all")[(0, 0.0)]
               ["savings_vs_nodvfs"] for m in manifests) / len(manifests)
    got = cell_number(claims.get("c1-prefill-0", [""] * 9)[k])
    h.check(f"c1-prefill-0 ({mode} mode) = mean of the stores' eNPU-All prefill savings at 0 % = {want:.2f}",
            got and abs(got[0] - want) < 0.006, str(claims.get("c1-prefill-0")))
overheads = [float(r["paper_overhead_pct"]) for m in manifests for (ph, s), r in
             plans(os.path.join(out, m, "request-paper", "plans.h5"), "enpu-all").items() if s == 0]
got = cell_number(claims.get("c2-overhead-0", [""] * 9)[3])
h.check(f"c2-overhead-0 (paper mode: the paper's overhead) = [{min(overheads):.2f}, {max(overheads):.2f}] % from the "
        "stores",
        got and abs(got[0] - min(overheads)) < 0.006 and abs(got[1] - max(overheads)) < 0.006,
        str(claims.get("c2-overhead-0")))
# A bound the paper states as a cost (the GA takes more than 8 h): ours below it is
# "faster", never a failure, and gets no reason line.
ga = claims.get("c2-dvfsc-time", [""] * 9)
got = cell_number(ga[3])
h.check("c2-dvfsc-time below the paper's 28800 s reads 'faster', not 'fails'",
        got and got[0] < 28800 and ga[4] == "faster" and "- `c2-dvfsc-time`:" not in md, str(ga))

def loss_pct(store, slack):
    """eNPU-All's prefill regulator loss at `slack`, % of the bucket's NoDVFS energy."""
    with h5py.File(store, "r") as f:
        b = f["policies/enpu-all/buckets"][()]
    r = plans(store, "enpu-all")[(0, slack)]
    return 100 * float(r["regulator_loss_nj"].sum()) / float(b["e_nodvfs_nj"][r["bucket"]])


for k, mode in ((3, "paper"), (5, "strict")):
    stores = [os.path.join(out, m, f"request-{mode}", "plans.h5") for m in manifests]
    top = max(s for (_, s) in plans(stores[0], "enpu-all"))
    want = sum(loss_pct(st, top) - loss_pct(st, 0.0) for st in stores) / len(stores)
    got = cell_number(claims.get("c2-ivr-loss", [""] * 9)[k])
    h.check(f"c2-ivr-loss ({mode} mode) = mean growth of the stores' regulator loss, 0 to {100 * top:g} % = "
            f"{want:.2f}", got and abs(got[0] - want) < 0.006, str(claims.get("c2-ivr-loss")))
with h5py.File(os.path.join(out, "llama3-70b", "request-paper", "plans.h5"), "r") as f:
    have = set(f["policies"].keys())
h.check("the design-space policies are in the single-request store",
        {"enpu-ms", "dvfs-c-ms", "enpu-3dom", "enpu-4dom", "pg", "pg+enpu-all", "enpu-all@shadow=32",
         "ideal"} <= have, str(sorted(have)))
t7 = {(r[0], r[1]): r for r in md_rows(md, "| model | phase | dvfs-c op")}
ok = bool(t7)
for m in manifests:
    for c in manifests[m]["compile"]:
        doc = json.load(open(os.path.join(out, m, c["file"])))["policies"][c["policy"]]
        col = {"dvfs-c": 2, "enpu-all": 6, "ideal": 10}[c["policy"]]
        row = t7.get((m, c["phase"]))
        ok = ok and row is not None and float(row[col]) == doc["op_evals"]
h.check("Table 7: every operator-level cell is its compile output's op_evals", ok, str(t7)[:800])
t2 = md_rows(md, "| model | class |")
ok = bool(t2)
for row in t2:
    m = manifests.get(row[0])
    g = next((json.load(open(os.path.join(out, row[0], e["file"]))) for e in (m or {}).get("graph", [])
              if e["phase"] == "prefill" and e["seq"] == int(row[2])), None)
    if g:
        ok = ok and abs(float(row[3]) - 5 * g["time_ns"] / 1e6) < 0.51
h.check("Table 2: 5 x our TTFT is the graph output's time", ok, str(t2)[:600])
h.check("every numbered claim (1)-(5) has a row", all(f"| ({n}) |" in md for n in range(1, 6)))
# The artifact-ivr variant compiles three policies: a claim about another policy is not
# applicable in its column, not missing from this build.
h.check("a policy the variant does not compile reads as not applicable, not missing",
        "not compiled on this chip)" in md and "not compiled on this chip*" not in md,
        [l[:200] for l in md.splitlines() if "on this chip" in l][:3])

# 3. rerun with nothing changed
before = files(out)
p, warm_s = paper(out, "all")
print(f"     quick pipeline, rerun with nothing changed: {warm_s:.1f} s wall")
h.check("rerun: exit 0 and no stage ran", p.returncode == 0 and not ran(p.stdout), str(ran(p.stdout)))
after = files(out)
h.check("rerun: no file changed", before == after,
        str(sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k)))[:600])
# The same run from the source directory: the commands spell the paths below it relative
# to it (the trace, the jobs, the output when the build is in the tree), and a stage's key
# is the paths they name, so still nothing runs.
p, _ = paper(out, "all", cwd=src)
after = files(out)
h.check("rerun from another working directory: exit 0, no stage ran, no file changed",
        p.returncode == 0 and not ran(p.stdout) and before == after, str(ran(p.stdout)) + p.stderr[-300:])

# 4. a change reruns only what depends on it
changed = json.load(open(PIPELINE))
changed["figure20"]["slacks"] = [0, 0.05]
for k in ("numbers",):
    changed[k] = os.path.join(os.path.dirname(PIPELINE), changed[k])
for i, m in enumerate(changed["models"]):
    changed["models"][i] = os.path.join(os.path.dirname(PIPELINE), m)
for v in changed.get("variants", []):
    v["chip"] = os.path.join(os.path.dirname(PIPELINE), v["chip"])
for k in ("figure20", "replay"):
    changed[k]["model"] = os.path.join(os.path.dirname(PIPELINE), changed[k]["model"])
changed["replay"]["trace"] = os.path.join(os.path.dirname(PIPELINE), changed["replay"]["trace"])
alt = os.path.join(tmp, "pipeline.json")
json.dump(changed, open(alt, "w"), indent=2)
p, _ = paper(out, "all", pipeline=alt)
h.check("a changed Figure 20 sweep reruns figure20 and the report only",
        p.returncode == 0 and ran(p.stdout) == [("deepseek-v3-671b", "figure20"), ("out", "report")],
        str(ran(p.stdout)) + p.stderr[-500:])

# 5. bad input
bad = dict(changed, grid_policies=["nodvfs"])
json.dump(bad, open(alt, "w"))
p, _ = paper(out, "all", pipeline=alt)
h.check("a pipeline with an unknown key: exit 2 naming it", p.returncode == 2 and "grid_policies" in p.stderr
        and alt in p.stderr, p.stderr[-400:])

# 6. back to the original pipeline: what the change reran reruns, and the cold output is back
p, _ = paper(out, "all")
h.check("the original pipeline again reruns figure20 and the report only",
        p.returncode == 0 and ran(p.stdout) == [("deepseek-v3-671b", "figure20"), ("out", "report")],
        str(ran(p.stdout)) + p.stderr[-500:])
back = files(out)
# The report stage writes its date into the reports and gnuplot's log beside them, and a
# stage that ran records its times: those change, every data file is the cold run's.
DATED = ("README.md", "report.md", "gnuplot.log", "timings.json")
changed = sorted(k for k in set(before) | set(back) if before.get(k) != back.get(k))
h.check("every data file is as the cold run wrote it (stores, tables, figures; not the dated reports)",
        not [k for k in changed if os.path.basename(k) not in DATED], str(changed)[:1500])
shutil.rmtree(tmp, ignore_errors=True)
h.finish()
