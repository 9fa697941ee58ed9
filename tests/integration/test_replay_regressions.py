"""Regression tests of five replay defects, on the real binary and the synthetic store
(tests/integration/replay/synth_store.h, written by `test_replay --write-store`). Each
check failed before the fix it guards:

1. idle energy was charged over each policy's own end time, so a DVFS policy that
   finished one request later "lost" energy on every idle node;
2. prefill batches were limited by unpadded tokens and never checked against their
   members' deadlines after padding;
3. a request whose decode no bucket covers still got a full prefill before being
   marked uncovered (now: such a request is served, its decode beyond the grid on the
   fallback, and one that not even that can serve is refused before its prefill);
4. a batch run at the fastest plan because safeguard 1's cap was below it was counted
   "late" although its own target was not;
5. a batch that started on a slow plan just before a burst held its node: the paper's
   safeguards (safeguard 1 only at batch start) let the burst miss its TTFT where
   mid-batch switching and the predictive safeguard do not; and on a burst trace built
   with `enpu trace burst` the predictive safeguards never do worse than the paper's.

usage: test_replay_regressions.py ENPU SOURCE_DIR TEST_REPLAY"""
import csv
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Harness, write_trace, synth_store  # noqa: E402

h = Harness(sys.argv[1], sys.argv[2])
CLUSTER = os.path.join(h.src, "jobs/clusters/llama3-70b.json")
tmp, store = synth_store(sys.argv[3], "test_replay_regressions_")


def trace(name, rows):
    return write_trace(os.path.join(tmp, name), rows)


def replay(trace_path, *args, cluster=CLUSTER):
    r = h.run("replay", "--store", store, "--trace", trace_path, "--cluster", cluster, "--json", "--model",
              "jobs/models/llama3-70b.json", "--chip", "jobs/chips/tpuv5p.json", *args)
    if not h.check(f"replay {os.path.basename(trace_path)} exits 0", r.returncode == 0, r.stderr):
        return None
    return json.loads(r.stdout)["policies"]


# ---- 1: one request, every policy charged over the same horizon ----------------------
one = trace("one.csv", [(0, 4808, 10)])
pol = replay(one)
if pol:
    for name, p in pol.items():
        if name == "nodvfs":
            continue
        busy, total = p["busy_energy_savings"]["total"], p["energy_savings"]["total"]
        print(f"     one request, {name}: savings busy-only {busy:.4f}, with idle {total:.4f}")
        h.check(f"1: {name} saves energy with idle included (no loss for finishing later)",
                total >= 0 and all(p["energy_savings"][ph] >= 0 for ph in ("prefill", "decode")),
                p["energy_savings"])

# ---- 2: padded batches within the token budget and their members' deadlines ---------
# Three prefill nodes, each busy with a 1,000-token request when ten P33 requests
# (725 ms TTFT) of 1,026 tokens arrive together: 10,260 tokens unpadded, but 16 x 1,280
# = 20,480 padded, a 2.2 s batch in the synthetic model. Batches of at most four
# (4 x 1,280 padded, 0.55 s) on the three nodes meet every deadline.
def cluster_with(name, prefill_nodes, max_batch=None, ttft_ms=None):
    with open(CLUSTER) as f:
        cl = json.load(f)
    cl["prefill"]["nodes"] = prefill_nodes
    if max_batch:
        cl["batching"]["max_batch"] = max_batch
    for c in cl["slo"]:
        c["ttft_ms"] = ttft_ms or c["ttft_ms"]
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        json.dump(cl, f)
    return path


burst = trace("burst.csv", [(0, 1000, 2)] * 3 + [(0.001, 1026, 2)] * 10)
pol = replay(burst, "--policy", "nodvfs", cluster=cluster_with("three-nodes.json", 3))
if pol:
    p = pol["nodvfs"]
    largest = p["tokens"].get("prefill_padded_max", float("inf"))
    print(f"     burst of 10 behind 3 busy nodes: {p['batches']['prefill']['total']} prefill batches, "
          f"largest {largest} padded tokens, TTFT attainment {p['ttft_attainment']:.3f}")
    h.check("2: every request of the burst meets its TTFT", p["ttft_attainment"] == 1.0, p["ttft_attainment"])
    h.check("2: every batch's padded tokens within max_batch_tokens", largest <= 16384, p["tokens"])

# ---- 3: decode coverage checked at admission ----------------------------------------
# 16,000 + 2,000 tokens: longer than the synthetic store's largest decode bucket (16,384):
# served, its decode beyond the grid on the fallback. 16,000 + 690,000 tokens: a KV cache
# beyond every compiled bucket's (688,128 tokens): unservable, refused before its prefill.
long = trace("long.csv", [(0, 100, 4), (1, 16000, 2000), (2, 16000, 690000)])
out3 = os.path.join(tmp, "out3")
pol = replay(long, "--policy", "nodvfs", "--out", out3)
if pol:
    rows = list(csv.DictReader(open(os.path.join(out3, "requests_nodvfs.csv"))))
    h.check("3: the long request is served, its decode on the fallback",
            rows[1]["status"] == "done" and rows[1]["served_by"] == "fallback" and rows[1]["ttft_ms"] != "", rows[1])
    h.check("3: the one beyond every bucket's KV is unservable", rows[2]["status"] == "unservable", rows[2])
    h.check("3: ... and never prefilled (no TTFT, no energy)",
            rows[2]["ttft_ms"] == "" and float(rows[2]["energy_j"]) == 0, rows[2])
    h.check("3: prefill ran only the servable requests' tokens",
            pol["nodvfs"]["tokens"]["prefill_run"] == 16100, pol["nodvfs"]["tokens"])

# ---- 4: "late" only when a batch's own target is below its fastest plan -------------
# One prefill node, one request per batch, 400 ms TTFT: r0 runs slowed; when r1 starts,
# r2 (2,048 tokens, 225 ms at its fastest) leaves r1 a cap below r1's fastest plan,
# while r1's own target (245 ms) is above it. r2 itself is late by its own target.
small = cluster_with("one-node.json", 1, max_batch=1, ttft_ms=400)
sg1 = trace("sg1.csv", [(0, 1000, 2), (0.001, 1000, 2), (0.002, 2048, 2)])
pol = replay(sg1, "--policy", "enpu-all", "--safeguards", "paper", cluster=small)
if pol:
    b = pol["enpu-all"]["batches"]["prefill"]
    print(f"     safeguard 1 below the fastest plan: prefill batches {b}")
    h.check("4: only the batch late by its own target counts as late", b["late"] == 1, b)

# ---- 5: a burst behind a slow batch ----------------------------------------------------
# One node, one request per batch, 480 ms TTFT: r0 starts alone on its slowest plan
# (1.4 x its fastest, tp), then r1..r3 arrive. Behind it r3 cannot finish before
# 1.4 tp + 3 tp > 483 ms whatever later plans do; switching r0 half-way to a faster
# suffix leaves 4 tp < 483 ms. The predictive safeguard never slows a lone node.
one = cluster_with("one-node-480.json", 1, max_batch=1, ttft_ms=480)
b5 = trace("b5.csv", [(0, 1000, 2), (0.001, 1000, 2), (0.002, 1000, 2), (0.003, 1000, 2)])
for mode in ("paper", "switching", "predictive"):
    pol = replay(b5, "--policy", "enpu-all", "--safeguards", mode, cluster=one)
    if not pol:
        continue
    p = pol["enpu-all"]
    b = p["batches"]["prefill"]
    print(f"     burst behind a slow batch, {mode}: TTFT attainment {p['ttft_attainment']:.2f}, "
          f"switched {b['switched']}, switch energy {b['switch_energy_j']:.3g} J")
    h.check(f"5: safeguards reported as {mode}", p["safeguards"] == mode, p["safeguards"])
    if mode == "paper":
        h.check("5: the paper's safeguards miss a TTFT in the burst", p["ttft_attainment"] < 1, p["ttft_attainment"])
    else:
        h.check(f"5: {mode} meets every TTFT of the burst", p["ttft_attainment"] == 1, p["ttft_attainment"])
    if mode == "switching":
        h.check("5: switching switched the slow batch once, and charged it", b["switched"] == 1 and
                b["switch_energy_j"] > 0, b)

# The shipped trace's first 2,000 requests with a minute at 6x its rate: at each rate,
# the predictive safeguards keep at least the paper's SLO attainment for every policy.
head = os.path.join(tmp, "head.csv")
with open(os.path.join(h.src, "jobs/traces/AzureLLMInferenceTrace_conv.csv")) as f, open(head, "w") as g:
    g.writelines(line for _, line in zip(range(2001), f))
burst6 = os.path.join(tmp, "burst6.csv")
subprocess.run([h.enpu, "trace", "burst", head, "--window", "120,60,6", "-o", burst6], check=True)
again = os.path.join(tmp, "burst6-again.csv")
subprocess.run([h.enpu, "trace", "burst", head, "--window", "120,60,6", "-o", again], check=True)
with open(burst6) as f, open(again) as g:
    h.check("5: the burst recipe is deterministic", f.read() == g.read())
peak = subprocess.run([h.enpu, "trace", "burst", burst6, "--peak"], capture_output=True, text=True, check=True).stdout
base = subprocess.run([h.enpu, "trace", "burst", head, "--peak"], capture_output=True, text=True, check=True).stdout
h.check("5: the burst raises the peak arrivals per second", int(peak.split()[1]) > 2 * int(base.split()[1]),
        (base, peak))
for rate in ("1", "3"):
    res = {m: replay(burst6, "--rate", rate, "--safeguards", m) for m in ("paper", "predictive")}
    if not all(res.values()):
        continue
    for name in res["paper"]:
        a, b = res["paper"][name]["slo_attainment"], res["predictive"][name]["slo_attainment"]
        print(f"     burst trace at {rate}x, {name}: SLO paper {100 * a:.3f} %, predictive {100 * b:.3f} %")
        h.check(f"5: {name} at {rate}x: predictive SLO >= paper's", b >= a, (a, b))

subprocess.run(["rm", "-rf", tmp], check=False)
h.finish()
