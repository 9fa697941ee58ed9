#!/usr/bin/python3
"""`enpu query`, `enpu store info` and `enpu store diff` against what stock HDF5 tools read.

Usage: test_query.py ENPU TEST_STORE_BINARY PLUGIN_DIR SOURCE_DIR

On the unit test's synthetic store (`test_store --write`) and, when this build's `enpu`
has the `farm` command, on a farm store of jobs/demo.json:
- `enpu query --json` (padded bucket, walk prefix, time, energy, savings, lower bound,
  per-op lead/trail states, vf.set words) equals what this script computes from the
  tables as /usr/bin/python3 h5py reads them (padding, prefix search, walk replay and the
  LP interpolation re-implemented here from schemas/planstore.md), and the bucket row and
  walk step it rests on equal what h5dump prints;
- `enpu store info --json` counts equal h5py's counts, its zstd factor equals
  sum(rows x row bytes) / sum(storage sizes);
- `enpu store diff`: an identical copy exits 0; a copy with one walk energy edited by
  h5py exits 1 and names the bucket, the walk and the table row;
- bad queries: no covering bucket exits 1 with the reader's message, a target below the
  fastest plan exits 0 with its warning on stderr; bad arguments exit 2.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

from harness import Harness
from store_checksum import reseal

REL = 1e-11  # --json prints reals with 12 significant digits


def close(a, b):
    return abs(a - b) <= REL * max(1.0, abs(a), abs(b))


READ_TABLES = """
import h5py, json, sys
out = {}
with h5py.File(sys.argv[1], "r") as f:
    for pol, g in f["policies"].items():
        t = {}
        for name, ds in g.items():
            rows = ds[:]
            t[name] = {"rows": [{k: (v.tolist() if hasattr(v, "tolist") else v) for k, v in zip(rows.dtype.names, r)}
                                for r in rows],
                       "itemsize": ds.dtype.itemsize, "storage": ds.id.get_storage_size()}
            for r in t[name]["rows"]:
                for k, v in r.items():
                    if isinstance(v, bytes):
                        r[k] = v.decode()
        out[pol] = t
print(json.dumps(out))
"""


def h5py_tables(chk, store):
    got = subprocess.run(["/usr/bin/python3", "-c", READ_TABLES, store], capture_output=True, text=True,
                         check=True)
    return json.loads(got.stdout)


def rows(tables, pol, name):
    return tables[pol].get(name, {"rows": []})["rows"]


def expected_plan(tables, pol, phase, batch, seq, target=None, slack=None):
    """The plan as schemas/planstore.md defines it, from h5py's rows."""
    buckets = rows(tables, pol, "buckets")
    cands = [(b["batch"], b["seq"], i) for i, b in enumerate(buckets)
             if b["phase"] == phase and b["batch"] >= batch and b["seq"] >= seq]
    if not cands:
        return None
    _, _, bi = min(cands)
    b = buckets[bi]
    if slack is not None:
        target = max(b["t_nodvfs_ns"], b["t_peak_ns"]) + slack * b["t_nodvfs_ns"]
    walk = rows(tables, pol, "walk")[b["walk_first"]:b["walk_first"] + b["walk_count"]]
    prefix = 0
    while prefix < len(walk) and walk[prefix]["time_ns"] <= target:
        prefix += 1
    t = walk[prefix - 1]["time_ns"] if prefix else b["walk_start_time_ns"]
    e = walk[prefix - 1]["energy_nj"] if prefix else b["walk_start_energy_nj"]
    lb = e
    if prefix < len(walk) and target > t:
        nxt = walk[prefix]
        lb = e + (target - t) / (nxt["time_ns"] - t) * (nxt["energy_nj"] - e)
    ops, pareto = rows(tables, pol, "ops"), rows(tables, pol, "pareto")
    bops = rows(tables, pol, "bucket_ops")[b["ops_first"]:b["ops_first"] + b["ops_count"]]
    st = {bo["op"]: {"instances": bo["multiplicity"], "lead_instances": bo["multiplicity"],
                     "lead": ops[bo["op"]]["pareto_first"], "trail": ops[bo["op"]]["pareto_first"]} for bo in bops}
    for w in walk[:prefix]:
        s = st[w["op"]]
        if w["pareto"] == s["lead"] and s["lead"] != s["trail"]:
            s["lead_instances"] += w["instances"]
        else:
            s["trail"], s["lead"], s["lead_instances"] = s["lead"], w["pareto"], w["instances"]
    return {"row": bi, "bucket": b, "target_ns": target, "walk_prefix": prefix, "walk_steps": len(walk),
            "time_ns": t, "energy_nj": e, "lower_bound_nj": lb,
            "savings_vs_nodvfs": 1 - e / b["e_nodvfs_nj"] if b["e_nodvfs_nj"] > 0 else 0.0,
            "ops": [dict(op=op, signature=ops[op]["signature"], name=ops[op]["name"],
                         lead_states=pareto[s["lead"]]["states"], trail_states=pareto[s["trail"]]["states"],
                         lead_pareto=s["lead"], trail_pareto=s["trail"], instances=s["instances"],
                         lead_instances=s["lead_instances"]) for op, s in sorted(st.items())]}


def vfset_word(states):
    """vf.set (search.h): units FE, SA, VU, SRAM, HBM, ICI, 8 bits each, FE = max(SA, VU,
    SRAM), all six in the mask (bits 48..53)."""
    units = [max(states[0], states[1], states[2])] + list(states)
    return (0x3F << 48) | sum(u << (8 * i) for i, u in enumerate(units))


def h5dump_rows(chk, store, dataset, first, count):
    """The rows h5dump prints of a compound dataset, each as its list of scalars."""
    out = subprocess.run(["h5dump", "-d", dataset, "-s", str(first), "-c", str(count), "-m", "%.17g", store],
                         capture_output=True, text=True, check=False).stdout
    body = out.split("DATA {", 1)[1] if "DATA {" in out else ""
    return [re.findall(r'"[^"]*"|[-0-9.eE+]+', rec.split(":", 1)[1] if ":" in rec else rec)
            for rec in re.findall(r"\{([^{}]*)\}", re.sub(r"\[\s*([^\]]*)\]", lambda m: m.group(1), body))]


def check_query(chk, store, tables, pol, phase_name, batch, seq, target_ms=None, slack=None, vfset=False):
    phase = 0 if phase_name == "prefill" else 1
    want = expected_plan(tables, pol, phase, batch, seq,
                         target=None if target_ms is None else target_ms * 1e6, slack=slack)
    args = ["query", store, "--phase", phase_name, "--batch", str(batch), "--seq", str(seq), "--policy", pol, "--json"]
    args += ["--target-ms", repr(target_ms)] if target_ms is not None else ["--slack", repr(slack)]
    if vfset:
        args.append("--vfset")
    got = chk.run(*args)
    what = f"{os.path.basename(store)} {pol} {phase_name} b{batch} s{seq} " + \
        (f"target {target_ms} ms" if target_ms is not None else f"slack {slack}")
    if got.returncode != 0:
        chk.fail(f"{what}: exit {got.returncode}: {got.stderr.strip()}")
        return
    q = json.loads(got.stdout)
    b = want["bucket"]
    if (q["bucket"]["batch"], q["bucket"]["seq"], q["bucket"]["row"]) != (b["batch"], b["seq"], want["row"]):
        chk.fail(f"{what}: bucket {q['bucket']} != h5py's b{b['batch']} s{b['seq']} row {want['row']}")
    for k in ("walk_prefix", "walk_steps"):
        if q[k] != want[k]:
            chk.fail(f"{what}: {k} {q[k]} != {want[k]}")
    for k in ("target_ns", "time_ns", "energy_nj", "lower_bound_nj", "savings_vs_nodvfs"):
        if not close(q[k], want[k]):
            chk.fail(f"{what}: {k} {q[k]!r} != h5py {want[k]!r}")
    for k, col in (("t_nodvfs_ns", "t_nodvfs_ns"), ("t_peak_ns", "t_peak_ns"), ("e_nodvfs_nj", "e_nodvfs_nj")):
        if not close(q[k], b[col]):
            chk.fail(f"{what}: {k} {q[k]!r} != h5py {b[col]!r}")
    if len(q["ops"]) != len(want["ops"]):
        chk.fail(f"{what}: {len(q['ops'])} ops, h5py {len(want['ops'])}")
    for qo, wo in zip(q["ops"], want["ops"]):
        for k in ("op", "name", "lead_states", "trail_states", "lead_pareto", "trail_pareto", "instances",
                  "lead_instances"):
            if qo[k] != wo[k]:
                chk.fail(f"{what}: op {wo['op']} {k} {qo[k]!r} != h5py {wo[k]!r}")
        if int(qo["signature"], 16) != wo["signature"]:
            chk.fail(f"{what}: op {wo['op']} signature {qo['signature']} != {wo['signature']:#x}")
        if vfset and (qo["lead_vfset"], qo["trail_vfset"]) != (vfset_word(wo["lead_states"]),
                                                               vfset_word(wo["trail_states"])):
            chk.fail(f"{what}: op {wo['op']} vf.set {qo['lead_vfset']:#x}/{qo['trail_vfset']:#x}")
    # h5dump: the bucket row (phase, status, budget mode, batch, seq lead the compound) and
    # the last walk step of the prefix (time_ns, energy_nj end it).
    brow = h5dump_rows(chk, store, f"/policies/{pol}/buckets", want["row"], 1)
    mode = {"strict": 0, "paper": 1}.get(q.get("budget"), -1)
    if not brow or [int(x) for x in brow[0][:5]] != [phase, 0, mode, q["bucket"]["batch"], q["bucket"]["seq"]]:
        chk.fail(f"{what}: h5dump bucket row {brow[:1]} does not match the query's bucket")
    if q["walk_prefix"]:
        wrow = h5dump_rows(chk, store, f"/policies/{pol}/walk", b["walk_first"] + q["walk_prefix"] - 1, 1)
        if not wrow or not (close(float(wrow[0][-2]), q["time_ns"]) and close(float(wrow[0][-1]), q["energy_nj"])):
            chk.fail(f"{what}: h5dump walk step {wrow[:1]} != query time {q['time_ns']} energy {q['energy_nj']}")


def check_info(chk, store, tables):
    got = chk.run("store", "info", store, "--json")
    if got.returncode != 0:
        chk.fail(f"store info {store}: exit {got.returncode}: {got.stderr.strip()}")
        return None
    info = json.loads(got.stdout)
    names = sorted(tables)
    if [p["name"] for p in info["policies"]] != names:
        chk.fail(f"store info: policies {[p['name'] for p in info['policies']]} != h5py {names}")
    table_bytes = stored = 0
    for p in info["policies"]:
        t = tables.get(p["name"], {})
        n = {k: len(v["rows"]) for k, v in t.items()}
        status = [b["status"] for b in t.get("buckets", {"rows": []})["rows"]]
        want = {"ops": n.get("ops", 0), "pareto_points": n.get("pareto", 0), "walk_steps": n.get("walk", 0),
                "plans": n.get("plans", 0), "plan_states": n.get("plan_states", 0),
                "bucket_ops": n.get("bucket_ops", 0)}
        for k, v in want.items():
            if p[k] != v:
                chk.fail(f"store info {p['name']}: {k} {p[k]} != h5py {v}")
        wb = {"total": len(status), "ok": status.count(0), "infeasible_capacity": status.count(1),
              "failed": status.count(2), "pending": status.count(3)}
        if p["buckets"] != wb:
            chk.fail(f"store info {p['name']}: buckets {p['buckets']} != h5py {wb}")
        table_bytes += sum(len(v["rows"]) * v["itemsize"] for v in t.values())
        stored += sum(v["storage"] for v in t.values())
    if info["table_bytes"] != table_bytes or info["stored_bytes"] != stored or \
            not close(info["zstd_factor"], table_bytes / stored):
        chk.fail(f"store info: bytes {info['table_bytes']}/{info['stored_bytes']} != h5py {table_bytes}/{stored}")
    if info["file_bytes"] != os.path.getsize(store):
        chk.fail(f"store info: file_bytes {info['file_bytes']} != {os.path.getsize(store)}")
    return info


EDIT_WALK = """
import h5py, sys
with h5py.File(sys.argv[1], "r+") as f:
    d = f[sys.argv[2]]
    r = d[int(sys.argv[3])]
    r["energy_nj"] += 1.0
    d[int(sys.argv[3])] = r
"""


def check_diff(chk, store, tmp, tables, pol):
    copy = os.path.join(tmp, "copy.h5")
    shutil.copyfile(store, copy)
    got = chk.run("store", "diff", store, copy)
    if got.returncode != 0 or "identical" not in got.stdout:
        chk.fail(f"store diff of a copy: exit {got.returncode}, out {got.stdout!r} err {got.stderr!r}")
    buckets = rows(tables, pol, "buckets")
    bi = next(i for i, b in enumerate(buckets) if b["walk_count"] > 0)
    b = buckets[bi]
    row = b["walk_first"] + b["walk_count"] - 1  # the last step: later steps stay non-decreasing
    subprocess.run(["/usr/bin/python3", "-c", EDIT_WALK, copy, f"/policies/{pol}/walk", str(row)],
                   check=True)
    got = chk.run("store", "diff", store, copy)
    if got.returncode != 1 or f"policy {pol}: table walk: damaged: checksum mismatch" not in got.stderr:
        chk.fail(f"store diff after an edit without a new checksum: exit {got.returncode}, {got.stderr!r}")
    reseal(copy, f"/policies/{pol}/walk")  # the edit now reaches the comparison
    got = chk.run("store", "diff", store, copy)
    phase = ["prefill", "decode"][b["phase"]]
    want_lines = [f"policy {pol}: bucket {phase} batch {b['batch']} seq {b['seq']}: changed (walk)",
                  f"policy {pol}: table walk: 1 rows differ, first row {row} (energy_nj)"]
    if got.returncode != 1 or any(w not in got.stdout for w in want_lines):
        chk.fail(f"store diff after editing walk row {row}: exit {got.returncode}, out {got.stdout!r}, "
                 f"want lines {want_lines}")
    js = chk.run("store", "diff", store, copy, "--json")
    doc = json.loads(js.stdout) if js.returncode == 1 else {}
    if doc.get("identical") is not False or doc.get("count") != 2:
        chk.fail(f"store diff --json: exit {js.returncode}, {js.stdout[:300]!r}")
    bad = chk.run("store", "diff", store, os.path.join(tmp, "missing.h5"))
    if bad.returncode != 2 or "missing.h5" not in bad.stderr:
        chk.fail(f"store diff with a missing store: exit {bad.returncode}, err {bad.stderr!r}")


def check_errors(chk, store, tables, pol):
    buckets = rows(tables, pol, "buckets")
    ok = [b for b in buckets if b["status"] == 0]
    phase = ["prefill", "decode"][ok[0]["phase"]]
    big = max(b["seq"] for b in buckets if b["phase"] == ok[0]["phase"]) + 1
    cases = [
        (["--phase", phase, "--batch", "1", "--seq", str(big), "--slack", "0.05"], 1, "bucket covers"),
        (["--phase", phase, "--batch", str(ok[0]["batch"]), "--seq", str(ok[0]["seq"]), "--target-ms", "1e-9"], 0,
         "below the fastest plan"),
        (["--phase", phase, "--batch", "1", "--seq", "1", "--slack", "0.05", "--policy", "no-such"], 2,
         "no policy 'no-such'"),
        (["--phase", phase, "--batch", "1", "--seq", "1"], 2, "exactly one of --target-ms and --slack"),
        (["--phase", phase, "--batch", "1", "--seq", "1", "--slack", "0.05", "--target-ms", "1"], 2, "exactly one"),
        (["--phase", "middle", "--batch", "1", "--seq", "1", "--slack", "0"], 2, "prefill or decode"),
        (["--phase", phase, "--batch", "x", "--seq", "1", "--slack", "0"], 2, "--batch: expected an integer"),
        (["--phase", phase, "--batch", "1", "--seq", "1", "--slack", "-1"], 2, "expected a fraction in [0, 1] or a"),
        (["--phase", phase, "--batch", "1", "--seq", "1", "--slack", "1e308"], 2, "expected a fraction in [0, 1] or a"),
        # a bare slack above 1 is refused (meant as 5 %, it would be 500 %); the unit says
        (["--phase", phase, "--batch", "1", "--seq", "1", "--slack", "5"], 2, "a bare 5 would be 500 %"),
        (["--phase", phase, "--batch", "4294967297", "--seq", "1", "--slack", "0"], 2, "an integer in [1, 65536]"),
        (["--phase", phase, "--batch", "1", "--seq", "1", "--target-ms", "1e308"], 2, "finite in ns"),
        (["--phase", phase, "--seq", "1", "--slack", "0"], 2, "missing --batch"),
    ]
    for args, code, needle in cases:
        got = chk.run("query", store, *args)
        if got.returncode != code or needle not in got.stderr:
            chk.fail(f"query {' '.join(args)}: exit {got.returncode} (want {code}), stderr {got.stderr.strip()!r} "
                     f"(want '{needle}')")
    # every --slack takes one unit by one parser: report's and compile's --slacks too (5
    # refused, 5% and 0.05 taken)
    job = os.path.join(chk.src, "jobs", "demo.json")
    got = chk.run("compile", job, "--phase", phase, "--batch", "1", "--seq", "128", "--slacks", "0,5")
    if got.returncode != 2 or "a bare 5 would be 500 %" not in got.stderr:
        chk.fail(f"compile --slacks 0,5: exit {got.returncode}, {got.stderr.strip()!r}")
    got = chk.run("compile", job, "--phase", phase, "--batch", "1", "--seq", "128", "--slacks", "0,5%",
                  "--policy", "nodvfs")
    if got.returncode != 0 or "slacks 0% 5%" not in got.stdout:
        chk.fail(f"compile --slacks 0,5%: exit {got.returncode}, {got.stdout[:200]!r} {got.stderr.strip()!r}")
    for cmd in (["report", store + ".missing"], ["report", store + ".missing", "--sweep"]):
        for x, code, needle in (("5", 2, "a bare 5 would be 500 %"), ("5%", None, "cannot open"),
                                ("0.05", None, "cannot open")):
            got = chk.run(*cmd, "--slack", x)
            if (code is not None and got.returncode != code) or needle not in got.stderr:
                chk.fail(f"{' '.join(cmd)} --slack {x}: exit {got.returncode}, stderr {got.stderr.strip()!r} "
                         f"(want '{needle}')")
    got = chk.run("query", store + ".missing", "--phase", phase, "--batch", "1", "--seq", "1", "--slack", "0")
    if got.returncode != 2 or "cannot open" not in got.stderr:
        chk.fail(f"query on a missing store: exit {got.returncode}, {got.stderr!r}")


def check_store(chk, store, tmp):
    tables = h5py_tables(chk, store)
    check_info(chk, store, tables)
    for pol in sorted(tables):
        buckets = rows(tables, pol, "buckets")
        ok = [b for b in buckets if b["status"] == 0]
        for b in ok[:4]:
            phase = ["prefill", "decode"][b["phase"]]
            walk = rows(tables, pol, "walk")[b["walk_first"]:b["walk_first"] + b["walk_count"]]
            # exact hit at two slacks, a padded request, and a target inside the walk
            check_query(chk, store, tables, pol, phase, b["batch"], b["seq"], slack=0.05, vfset=True)
            check_query(chk, store, tables, pol, phase, b["batch"], b["seq"], slack=0.0)
            check_query(chk, store, tables, pol, phase, max(1, b["batch"] - 1), max(1, b["seq"] - 7), slack=0.1)
            if walk:
                mid = walk[len(walk) // 2]["time_ns"] * 1.0000001
                check_query(chk, store, tables, pol, phase, b["batch"], b["seq"], target_ms=mid / 1e6)
    pol = sorted(tables)[0]
    check_diff(chk, store, tmp, tables, pol)
    check_errors(chk, store, tables, pol)


def main():
    enpu, test_store, plugin_dir, source_dir = sys.argv[1], sys.argv[2], os.path.abspath(sys.argv[3]), sys.argv[4]
    os.environ["HDF5_PLUGIN_PATH"] = plugin_dir  # for enpu, h5py and h5dump alike
    chk = Harness(enpu, source_dir)
    with tempfile.TemporaryDirectory() as tmp:
        store = os.path.join(tmp, "plans.h5")
        subprocess.run([test_store, "--write", store], check=True)
        check_store(chk, store, tmp)
        if chk.run("farm", "--help").returncode == 0:
            farm_store = os.path.join(tmp, "demo.h5")
            got = chk.run("farm", os.path.join(source_dir, "jobs", "demo.json"), "--store", farm_store, "--results",
                          os.path.join(tmp, "results"), "--quiet")
            if got.returncode != 0:
                chk.fail(f"enpu farm demo: exit {got.returncode}: {got.stderr[-500:]}")
            else:
                check_store(chk, farm_store, tmp)
                print(chk.run("store", "info", farm_store).stdout)
        else:
            print("note: this build has no `enpu farm`; checked the synthetic store only")
    chk.finish()


if __name__ == "__main__":
    main()
