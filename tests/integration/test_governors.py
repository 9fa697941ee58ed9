"""`enpu replay --governors` on the real binary: bad input (unknown governor, control
period <= 0, an acceptance rate outside [0, 1], options that need pelm), the whole conv
trace with ondemand, pid, pelm and fixed:34 beside the store's policies on the synthetic
store of `test_replay --write-store` (fixed:34 equals nodvfs; pelm's reward improves over
its own first 10 % of the run), byte-identical outputs for a seed, a saved network that
the schema accepts and that acts alike when loaded, --train on the first half of the trace
and --eval on the second, the report's governor section; then a real farm store with the
uniform policy: its plans pass validation's re-simulation, and a request at fixed:20
takes the time and energy `enpu op --pipeline uniform` gives at state 20 summed over the
graph.

usage: test_governors.py ENPU SOURCE_DIR TEST_REPLAY"""
import json
import os
import sys

import jsonschema

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import CLUSTER, TRACE, Harness, synth_store  # noqa: E402

h = Harness(sys.argv[1], sys.argv[2])
tmp, store = synth_store(sys.argv[3], "test_governors_")


def replay(*args, store_path=store, trace=TRACE):
    return h.run("replay", "--store", store_path, "--trace", trace, "--cluster", CLUSTER, *args)


def write(name, text):
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def trace_part(name, first, last):
    """Rows [first, last) of the shipped trace (header kept)."""
    with open(os.path.join(h.src, TRACE)) as f:
        lines = f.readlines()
    return write(name, lines[0] + "".join(lines[1 + first:1 + last]))


# ---- bad input ---------------------------------------------------------------------------
r = replay("--governors", "ondemand,schedutil")
h.check("unknown governor: exit 2 naming it and the known ones",
        r.returncode == 2 and "unknown governor 'schedutil' (ondemand, pid, pelm, pelm-lossless or fixed:S" in r.stderr, r.stderr)
for bad in ("0", "-100", "x"):
    r = replay("--governors", "pid", "--control-ms", bad)
    h.check(f"control period {bad}: exit 2", r.returncode == 2 and "--control-ms: expected a number > 0" in r.stderr,
            r.stderr)
r = replay("--governors", "ondemand", "--save-net", os.path.join(tmp, "x.json"))
h.check("--save-net without pelm: exit 2", r.returncode == 2 and "need the pelm governor" in r.stderr, r.stderr)
model = json.load(open(os.path.join(h.src, "jobs/models/llama3-70b.json")))
model["speculative"]["acceptance"][1]["rate"] = 1.2
bad_model = write("bad-model.json", json.dumps(model, indent=1))
r = replay("--governors", "pelm", "--model", bad_model)
h.check("acceptance rate 1.2: exit 2 (bad input) naming file:line:column and the JSON path",
        r.returncode == 2 and "bad-model.json:" in r.stderr and
        "$.speculative.acceptance[1].rate: expected a number in [0, 1] (probability that a drafted token is accepted), got 1.2" in r.stderr, r.stderr)
r = replay("--spec", "21,4", "--policy", "nodvfs", trace=trace_part("head50.csv", 0, 50))
h.check("--spec with an exit depth the model has no rate for: exit 1", r.returncode == 1 and
        "no acceptance rate for a draft exit at layer 21 (it has 20, 40, 60)" in r.stderr, r.stderr)

# ---- the whole trace: three governors and a pinned one beside the store's policies ------
out1, out2 = os.path.join(tmp, "out1"), os.path.join(tmp, "out2")
r = replay("--governors", "ondemand,pid,pelm,fixed:34", "--out", out1, "--windows-only", "--json")
h.check("governors beside the policies: exit 0", r.returncode == 0, r.stderr)
pol = json.loads(r.stdout)["policies"]
h.check("runs: three policies and four governors",
        sorted(pol) == ["dvfs-c", "enpu-all", "fixed-34", "nodvfs", "ondemand", "pelm", "pid"], sorted(pol))
nd, f34, pelm = pol["nodvfs"], pol["fixed-34"], pol["pelm"]
h.check("fixed:34 is nodvfs: the same energy, SLOs and latencies",
        nd["energy_j"] == f34["energy_j"] and nd["slo_attainment"] == f34["slo_attainment"] and
        nd["ttft_ms"] == f34["ttft_ms"] and nd["tpot_ms"] == f34["tpot_ms"], (nd["energy_j"], f34["energy_j"]))
on = pelm["online"]
h.check("pelm learns: mean reward after its first 10 % beats the first 10 %",
        on["reward_last90"] > on["reward_first10"], on)
print(f"     pelm on the synthetic store: reward {on['reward_first10']:.4f} -> {on['reward_last90']:.4f}, "
      f"{on['updates']} updates, SLO {100 * pelm['slo_attainment']:.2f} %, savings with idle "
      f"{pelm['energy_savings']['total']:.4f}")
h.check("every governor served every request", all(pol[g]["served"] == 19366 for g in ("ondemand", "pid", "pelm")))
header = open(os.path.join(out1, "actions_pelm.csv")).readline().strip().split(",")
h.check("actions_pelm.csv: states, speculation and reward per window",
        header == ["start_s", "prefill_state", "decode_state", "spec_share", "exit_layers", "draft_tokens",
                   "verify_layers", "reward", "decisions"], header)
# The thread count against the default on the trace's first 3,000 requests (the runs
# split by policy and governor, not by time, so a part of the trace shows it as well).
part, out_default = trace_part("first3000.csv", 0, 3000), os.path.join(tmp, "out-default")
runs = [replay("--governors", "ondemand,pid,pelm,fixed:34", "--out", o, "--windows-only", "--json", *t, trace=part)
        for o, t in ((out_default, ()), (out2, ("--threads", "1")))]
same = sorted(os.listdir(out2)) == sorted(os.listdir(out_default)) and all(
    open(os.path.join(out_default, f), "rb").read() == open(os.path.join(out2, f), "rb").read()
    for f in sorted(os.listdir(out2)))
h.check("the same seed, another thread count: byte-identical outputs",
        all(r.returncode == 0 for r in runs) and same)

# ---- the report: actions, learning curve, offline vs online ------------------------------
rep = os.path.join(tmp, "report")
r = h.run("report", store, "--replay", out1, "--out", rep)
h.check("report with governors: exit 0", r.returncode == 0, r.stderr)
md = open(os.path.join(rep, "report.md")).read() if r.returncode == 0 else ""
h.check("report: the offline vs online section and table",
        "## 5. Offline eNPU plans vs online governors" in md and "| pelm | online governor |" in md)
h.check("report: where pelm beats and loses to enpu-all, in numbers", "**pelm vs enpu-all**: beats it on" in md)
h.check("report: pelm's learning line", "**pelm learning**: mean reward" in md)
for png in ("governors_actions.png", "governors_learning.png"):
    ok = os.path.exists(os.path.join(rep, png)) and open(os.path.join(rep, png), "rb").read(8) == b"\x89PNG\r\n\x1a\n"
    h.check(f"report: {png} is a PNG", ok)
h.figures_legible("report with governors", rep)

# ---- a saved network: the schema, and a loaded one acts alike ----------------------------
net = os.path.join(tmp, "net.json")
head = trace_part("head3000.csv", 0, 3000)
r = replay("--governors", "pelm", "--policy", "nodvfs", "--save-net", net, trace=head)
h.check("--save-net: exit 0, file written", r.returncode == 0 and os.path.exists(net), r.stderr)
schema = json.load(open(os.path.join(h.src, "schemas/pelm-net.schema.json")))
try:
    jsonschema.validate(json.load(open(net)), schema)
    h.check("the saved network matches schemas/pelm-net.schema.json", True)
except jsonschema.ValidationError as e:
    h.fail("the saved network matches schemas/pelm-net.schema.json", e.message)
runs = [replay("--governors", "pelm", "--policy", "nodvfs", "--load-net", net, "--json", trace=head) for _ in range(2)]
h.check("--load-net twice: identical runs", runs[0].returncode == 0 and runs[0].stdout == runs[1].stdout,
        runs[0].stderr)
loaded = json.loads(runs[0].stdout)["policies"]["pelm"]["online"] if runs[0].returncode == 0 else {}
h.check("a loaded network runs frozen (no updates beyond the saved ones)",
        loaded.get("updates") == json.load(open(net))["updates"], loaded)
broken = write("broken-net.json", '{"format": "enpu-pelm-net", "version": 1, "layers": [12, 32, 32, 47],\n "oops"}')
r = replay("--governors", "pelm", "--load-net", broken, trace=head)
h.check("a broken network file: exit 2 (bad input) naming file:line:column", r.returncode == 2 and "broken-net.json:2:" in r.stderr,
        r.stderr)

# ---- --train on the first half, --eval on the second ---------------------------------------
first, second = trace_part("first.csv", 0, 9683), trace_part("second.csv", 9683, 19366)
r = h.run("replay", "--store", store, "--eval", second, "--cluster", CLUSTER, "--governors", "pelm", "--policy",
          "nodvfs", "--train", first, "--epochs", "2", "--json")
h.check("--train first half --eval second half: exit 0", r.returncode == 0, r.stderr)
h.check("training reported per epoch", "pelm training epoch 2/2 on" in r.stderr, r.stderr)
if r.returncode == 0:
    ev = json.loads(r.stdout)["policies"]
    h.check("evaluated on the second half: 9683 requests", ev["pelm"]["requests"] == 9683, ev["pelm"]["requests"])
    print(f"     trained on the first half, on the second: pelm savings with idle "
          f"{ev['pelm']['energy_savings']['total']:.4f}, SLO {100 * ev['pelm']['slo_attainment']:.2f} %")

# ---- a real farm store: a fixed state is the cost model at that state ----------------------
job = write("gov-job.json", json.dumps({
    "name": "gov-small", "model": os.path.join(h.src, "jobs/models/llama3-70b.json"),
    "chip": os.path.join(h.src, "jobs/chips/tpuv5p.json"), "cluster": os.path.join(h.src, CLUSTER),
    "store": "plans.h5",
    "phases": {"prefill": {"batch": [1], "seq": [1024]}, "decode": {"batch": [1], "seq": [2048]}},
    "slacks": [0, 0.1, 0.3], "policies": ["nodvfs", "uniform"]}))
r = h.run("farm", job, "--quiet", "--results", os.path.join(tmp, "farm-results"))
h.check("farm with the uniform policy: exit 0", r.returncode == 0, r.stderr[-2000:])
one = write("one.csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:00:00,1000,1\n")
farm_store = os.path.join(tmp, "plans.h5")
r = h.run("validate", farm_store, "--job", job, "--trace", TRACE, "--cluster", CLUSTER, "--sample", "4")
h.check("validate re-simulates the uniform plans (time, critical path, overhead) as stored",
        r.returncode == 0 and " 0 failed" in r.stderr + r.stdout, (r.stdout + r.stderr)[-800:])
r = replay("--governors", "fixed:20", "--json", store_path=farm_store, trace=one)
h.check("fixed:20 on the farm store: exit 0", r.returncode == 0, r.stderr)
if r.returncode == 0:
    run = json.loads(r.stdout)["policies"]["fixed-20"]
    graph = h.run_json("graph", job, "--phase", "prefill", "--batch", "1", "--seq", "1024")
    t = e = 0.0
    for op in graph["ops"]:
        o = h.run_json("op", job, "--phase", "prefill", "--batch", "1", "--seq", "1024", "--op", str(op["id"]),
                       "--plan", "20,20,20,20,20", "--pipeline", "uniform")
        t += op["multiplicity"] * o["time_ns"]
        e += op["multiplicity"] * o["energy_nj"]
    ttft_ns, busy_j = run["ttft_ms"]["p50"] * 1e6, run["busy_energy_j"]["prefill"]
    h.check("fixed:20: the prefill takes the cost model's time at state 20", abs(ttft_ns - t) <= 1e-9 * t, (ttft_ns, t))
    h.check("fixed:20: and its energy (4 chips)", abs(busy_j - 4 * e * 1e-9) <= 1e-9 * busy_j, (busy_j, 4 * e * 1e-9))

h.finish()
