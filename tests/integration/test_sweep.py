"""Architecture sweeps end to end (a job's "sweep" section, config_sweep.c): a small
Llama3-70B grid farmed on chip variants into one store.

Usage: /usr/bin/python3 test_sweep.py ENPU_BINARY SOURCE_DIR HDF5_PLUGIN_DIR

1. One store holds every policy on the job's chip and on each point ("<policy>:<point>"
   groups, read with h5py); `enpu store info` lists the points; `enpu query --variant`
   answers from the point's group (its plan equal to what h5py reads there).
2. np 1 and np 3 give identical stores (`enpu store diff`).
3. A kill -9 mid-run and the same command again give the uninterrupted store.
4. Physics: eNPU-All's saving never rises as the V/f transition time (ivr.step_ns) grows,
   nor as V/f states are removed (nested state sets at the same peak: every plan of the
   coarser chip is one of the finer); a point equal to the job's chip (ivr.step_ns=4)
   reproduces the job chip's Pareto sets, walks and plans bit for bit.
6. `enpu report --sweep`: the line plot and break-even rows of the transition sweep, the
   heat map of a pair (clock.states x vu.shadow_vregs), every figure legible.
5. Reuse: the transition-time points take their op-level Pareto sets from the job chip
   (the farm's summary: every op search of a point reused), the state-count points do
   not (their op level reads the states).
"""
import json
import os
import subprocess
import sys
import tempfile

from farm_harness import ENV, farm, journal_has_records, kill_farm, reused_of, same, start, summary, wait_for
from harness import Harness

h = Harness(sys.argv[1], sys.argv[2])
src, plugins = sys.argv[2], sys.argv[3]
os.environ["HDF5_PLUGIN_PATH"] = plugins
ENV["HDF5_PLUGIN_PATH"] = plugins

import h5py  # noqa: E402  (after HDF5_PLUGIN_PATH is set)

STEPS = [4, 40, 400, 4000]  # ns per 54 mV step: full 0.45-0.7 V swing 20 ns .. 20 us
STATES = [34, 17, 2]        # at 1.7 GHz: 50, 100 and 850 MHz steps (nested sets)


def job(tmp, name, sweep, policies=("nodvfs", "dvfs-c-walk", "enpu-all")):
    j = {"name": name, "model": os.path.join(src, "jobs/models/llama3-70b.json"),
         "chip": os.path.join(src, "jobs/chips/tpuv5p.json"),
         "cluster": os.path.join(src, "jobs/clusters/llama3-70b.json"),
         "store": os.path.join(tmp, f"{name}.h5"),
         "phases": {"prefill": {"batch": [1], "seq": [1024]}, "decode": {"batch": [8], "seq": [2048]}},
         "slacks": [0, 0.05, 0.1], "policies": list(policies), "sweep": sweep}
    path = os.path.join(tmp, f"{name}.json")
    json.dump(j, open(path, "w"))
    return path


def savings(f, group):
    """{(bucket, slack): saving} of a policy group's plans."""
    p = f["policies"][group]["plans"][:]
    return {(int(r["bucket"]), float(r["slack"])): float(r["savings_vs_nodvfs"]) for r in p}


def never_rises(f, groups):
    """(ok, detail): along groups, no (bucket, slack)'s saving rises."""
    s = [savings(f, g) for g in groups]
    bad = [(k, g0, g1, a[k], b[k]) for (g0, a), (g1, b) in zip(zip(groups, s), zip(groups[1:], s[1:]))
           for k in a if k in b and b[k] > a[k] + 1e-12]
    return not bad and all(s), str(bad[:4])


with tempfile.TemporaryDirectory() as tmp:
    # 1-2: the transition-time sweep at np 1 and np 3
    trans = job(tmp, "trans", {"ivr.step_ns": STEPS})
    one, three = os.path.join(tmp, "one.h5"), os.path.join(tmp, "three.h5")
    r1 = farm(h, 1, one, tmp, job=trans)
    h.check("transition sweep, np 1: exit 0", r1.returncode == 0, r1.stderr[-800:])
    r3 = farm(h, 3, three, tmp, job=trans)
    h.check("transition sweep, np 3: exit 0", r3.returncode == 0, r3.stderr[-800:])
    h.check("np 1 and np 3: identical stores", *same(h, one, three))
    sw = summary(r1.stdout).get("sweep", {})
    h.check("transition points reuse every op search of the job chip",
            sw.get("variants") == len(STEPS) and sw.get("op_searches", 0) > 0 and
            sw.get("reused") == sw.get("op_searches"), json.dumps(sw))

    with h5py.File(one, "r") as f:
        groups = sorted(f["policies"].keys())
        want = {f"{p}:ivr.step_ns={s}" for p in ("nodvfs", "dvfs-c-walk", "enpu-all") for s in STEPS}
        h.check("one store: every policy on the job chip and on each point",
                want <= set(groups) and {"nodvfs", "dvfs-c-walk", "enpu-all"} <= set(groups), str(groups))
        ok, detail = never_rises(f, [f"enpu-all:ivr.step_ns={s}" for s in STEPS])
        h.check("eNPU-All's saving never rises as the transition time grows", ok, detail)
        s_fast, s_slow = savings(f, "enpu-all:ivr.step_ns=4"), savings(f, "enpu-all:ivr.step_ns=4000")
        h.check("... and the slowest transitions cost some saving", sum(s_slow.values()) < sum(s_fast.values()),
                f"{s_fast} {s_slow}")
        same_tables = [t for t in ("ops", "pareto", "walk", "plans", "plan_states")
                       if f["policies"]["enpu-all"][t][:].tobytes() ==
                       f["policies"]["enpu-all:ivr.step_ns=4"][t][:].tobytes()]
        h.check("a point equal to the job chip reproduces its op sets, walks and plans bit for bit",
                len(same_tables) == 5, str(same_tables))
        plan = f["policies"]["enpu-all:ivr.step_ns=400"]["plans"][:]
        bucket = f["policies"]["enpu-all:ivr.step_ns=400"]["buckets"][:]

    info = h.run("store", "info", one, "--json")
    h.check("store info lists the points", info.returncode == 0 and
            json.loads(info.stdout).get("variants") == [f"ivr.step_ns={s}" for s in STEPS], info.stdout[-300:])
    q = h.run("query", one, "--phase", "decode", "--batch", "8", "--seq", "2048", "--slack", "0.05",
              "--policy", "enpu-all", "--variant", "ivr.step_ns=4e2", "--json")
    d = json.loads(q.stdout) if q.returncode == 0 else {}
    row = [p for p in plan if bucket[p["bucket"]]["phase"] == 1 and abs(p["slack"] - 0.05) < 1e-12]
    h.check("query --variant answers from the point's plans", d.get("policy") == "enpu-all:ivr.step_ns=400" and
            len(row) == 1 and abs(d.get("plan_energy_nj", -1) - float(row[0]["energy_nj"])) <= 1e-6 *
            float(row[0]["energy_nj"]), q.stdout[-400:] + q.stderr[-300:])
    # tools/sweep_check.py: the same physics checks, after the checked reader has read the store
    check = [sys.executable, os.path.join(src, "tools", "sweep_check.py")]
    r = subprocess.run(check + [one, "ivr.step_ns", "--enpu", h.enpu], capture_output=True, text=True)
    h.check("sweep_check.py on the transition sweep: exit 0, eNPU-All's point reproduces the job chip",
            r.returncode == 0 and "enpu-all: ivr.step_ns" in r.stdout and "Pareto points: True" in r.stdout,
            r.stdout[-600:] + r.stderr[-300:])
    not_a_store = os.path.join(tmp, "not-a-store.h5")
    with open(not_a_store, "wb") as f:
        f.write(b"\x89HDF\r\n\x1a\n" + bytes(64))
    r = subprocess.run(check + [not_a_store, "ivr.step_ns", "--enpu", h.enpu], capture_output=True, text=True)
    h.check("sweep_check.py refuses what the checked reader refuses: exit 2, before h5py reads a table",
            r.returncode == 2 and "checked reader refuses" in r.stderr, r.stdout[-300:] + r.stderr[-300:])
    q = h.run("query", one, "--phase", "decode", "--batch", "8", "--seq", "2048", "--slack", "0.05",
              "--variant", "ivr.step_ns=5")
    h.check("query --variant of a point the store lacks: exit 2 naming it",
            q.returncode == 2 and "ivr.step_ns=5" in q.stderr, q.stderr)

    # 4: the V/f state count (nested sets at the same peak)
    states = job(tmp, "states", {"clock.states": STATES})
    st = os.path.join(tmp, "states.h5")
    r = farm(h, 1, st, tmp, job=states)
    h.check("state-count sweep: exit 0", r.returncode == 0, r.stderr[-800:])
    sw = summary(r.stdout).get("sweep", {})
    h.check("state-count points compute their own op searches", sw.get("reused") == 0 and
            sw.get("op_searches", 0) > 0, json.dumps(sw))
    with h5py.File(st, "r") as f:
        ok, detail = never_rises(f, [f"enpu-all:clock.states={n}" for n in STATES])
        h.check("eNPU-All's saving never rises as V/f states are removed", ok, detail)
        pts = f["policies"]["enpu-all:clock.states=2"]["pareto"][:]["states"]
        h.check("2 states: every Pareto point's states within 1..2", pts.size > 0 and pts.min() >= 1 and
                pts.max() <= 2, str(pts.max()))

    # 6: enpu report --sweep: a line plot per parameter, a heat map per pair, break-even rows
    rep = os.path.join(tmp, "rep")
    r = h.run("report", one, "--sweep", "--out", rep)
    md = open(os.path.join(rep, "sweep.md")).read() if r.returncode == 0 else ""
    h.check("report --sweep: the transition sweep's plot and break-even rows",
            os.path.exists(os.path.join(rep, "sweep_ivr.step_ns.png")) and
            md.count("| ivr.step_ns | prefill |") == 2 and md.count("| ivr.step_ns | decode |") == 2,
            r.stderr[-400:] + md[:600])
    pair = job(tmp, "pair", {"clock.states": [34, 17], "vu.shadow_vregs": [0, 4]})
    pst = os.path.join(tmp, "pair.h5")
    r = farm(h, 1, pst, tmp, job=pair)
    h.check("pair sweep: exit 0, 4 points", r.returncode == 0 and summary(r.stdout).get("sweep", {}).get("variants")
            == 4, r.stderr[-600:])
    r = h.run("report", pst, "--sweep", "--out", rep, "--slack", "5%")
    h.check("report --sweep: a heat map of the pair",
            r.returncode == 0 and os.path.exists(os.path.join(rep, "sweep_clock.states_x_vu.shadow_vregs.png")),
            r.stderr[-400:])
    h.figures_legible("report --sweep", rep)

    # 3: kill -9 mid-run (the GA of dvfs-c makes each bucket seconds of CPU), then resume
    slow = job(tmp, "slow", {"ivr.step_ns": STEPS}, policies=("nodvfs", "dvfs-c", "enpu-all"))
    ref, k = os.path.join(tmp, "ref.h5"), os.path.join(tmp, "killed.h5")
    r = farm(h, 1, ref, tmp, job=slow)
    h.check("slow sweep: exit 0", r.returncode == 0, r.stderr[-800:])
    p = start(h, 1, k, tmp, job=slow, extra=("--checkpoint-s", "600"))
    h.check("kill -9 after a journal sync: records journalled", wait_for(lambda: journal_has_records(k), 300))
    running = p.poll() is None
    kill_farm(p, k)
    r = farm(h, 1, k, tmp, job=slow)
    h.check("kill -9: the farm was still running when killed", running)
    h.check("kill -9: the resume reuses journalled work", reused_of(r.stdout).get("journal", 0) > 0, r.stdout[-600:])
    h.check("kill -9: the resumed store is identical to the uninterrupted one", *same(h, ref, k))

h.finish()
