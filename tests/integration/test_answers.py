#!/usr/bin/python3
"""Answers that mean what they say: `enpu --version`, `enpu query`'s default policy and a
target below the fastest plan, a checkpoint's "not compiled yet" counts, a farm rerun's
validation taking what the rerun kept, the documented store format, `make run`'s note.

Usage: /usr/bin/python3 test_answers.py ENPU_BINARY SOURCE_DIR HDF5_PLUGIN_DIR LIBENPU_PLANSTORE

1. `enpu --version` prints the version with `git describe` of the source tree (when it is
   a git checkout; src/cli/version.cmake run outside one writes the fallback), the store
   format_version, and the HDF5 and Open MPI versions, which
   equal what `h5dump --version` and `mpirun --version` of this machine say; README.md, the
   docs/ pages and schemas/planstore.md give that same format_version wherever they name one.
2. On a farmed store with nodvfs, dvfs-c-walk and enpu-all, `enpu query` without
   --policy answers with enpu-all, says it was the default (text and "policy_from"), and
   gives the same plan as --policy enpu-all; without enpu-all it falls back to enpu-c,
   and with no enpu* policy to the first non-reference one. On each store the C library
   (libenpu_planstore through ctypes: planstore_open_policy and planstore_lookup_slack
   with a NULL policy, planstore_default_policy) and the Python package answer with the
   policy the CLI names: one rule, the library's. `--policy nope` lists the store's
   policies.
3. --target-ms below the bucket's fastest plan: exit 0, the fastest plan (walk prefix 0,
   its time equal to the stored walk start read by h5py), the warning once, on stderr only,
   in ms as the target was given, and in "warning"; a target at that plan has no warning.
4. A one-rank farm stopped by SIGUSR1 leaves a checkpoint with pending buckets; a query
   of a pending bucket in a copy of it names compiled, failed, pending and does-not-fit
   counts equal to h5py's counts of the bucket statuses.
5. A farm of a job with a validation section, run again unchanged: the validation takes
   every bucket's rows and the replay from the store and leaves the tables byte for byte
   as they were; after the cluster file is edited (no plan changes) it replays again;
   after --add-buckets it re-simulates only the new buckets' rows among the sample and
   replays again; `enpu validate` itself recomputes everything.
6. `make run` (dry run) ends with the one-line note naming T_peak and the paper-mode
   figure, which exists.
7. Quiet builds: `make farm` without JOB prints its usage first and builds nothing;
   every `cmake --build` runs with --no-print-directory; `make test` ends with one line
   summing the tiers (tools/test_summary.sh) and keeps both tiers' exit status.
"""
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

from farm_harness import ENV, wait_for
from harness import Harness

HANG_S = 600  # a hang guard, never a speed assumption

h = Harness(os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]))
os.environ["HDF5_PLUGIN_PATH"] = os.path.abspath(sys.argv[3])
os.environ["ENPU_PLANSTORE_LIB"] = os.path.abspath(sys.argv[4])
sys.path.insert(0, os.path.join(h.src, "python"))
import ctypes  # noqa: E402

import enpu_planstore  # noqa: E402
import h5py  # noqa: E402  (after HDF5_PLUGIN_PATH is set)

SRC = os.path.join(h.src, "jobs")


def job(tmp, name, policies, phases=None, validation=False, **extra):
    j = {"name": name, "model": f"{SRC}/models/llama3-70b.json", "chip": f"{SRC}/chips/tpuv5p.json",
         "cluster": f"{SRC}/clusters/llama3-70b.json", "store": os.path.join(tmp, name, "plans.h5"),
         "phases": phases or {"prefill": {"batch": [1], "seq": [1024]}, "decode": {"batch": [8], "seq": [2048]}},
         "slacks": [0, 0.05], "policies": policies, "moe": {"capacity_factor": "worst"}, **extra}
    if validation:
        j["validation"] = {"trace": f"{SRC}/traces/AzureLLMInferenceTrace_conv.csv", "sample": 4, "seed": 1}
    path = os.path.join(tmp, f"{name}.json")
    with open(path, "w") as f:
        json.dump(j, f)
    return path, j["store"]


def farm(path, *extra, np_=1):
    cmd = [h.enpu, "farm", path, "--progress-s", "600", *extra]
    if np_ > 1:
        cmd = ["mpirun", "-np", str(np_), *cmd]
    return subprocess.run(cmd, capture_output=True, text=True, env=ENV)


def query(store, *args):
    return h.run("query", store, "--phase", "decode", "--batch", "8", "--seq", "2048", *args)


# ---- 1. --version -------------------------------------------------------------------

def version():
    r = h.run("--version")
    out = r.stdout
    h.check("--version: exit 0", r.returncode == 0, r.stderr)
    m = re.search(r"^enpu (\S+) \(git (.+)\)$", out, re.M)
    git = subprocess.run(["git", "-C", h.src, "describe", "--always", "--dirty", "--tags"], capture_output=True,
                         text=True)
    if git.returncode == 0:
        # taken at build time: a commit of this tree, HEAD's or one before it (built, then committed)
        c = re.search(r"([0-9a-f]{7,40})(?:-dirty)?$", m.group(2)) if m else None
        anc = c and subprocess.run(["git", "-C", h.src, "merge-base", "--is-ancestor", c.group(1), "HEAD"],
                                   capture_output=True).returncode == 0
        h.check("--version: git describe of the source tree (a commit of HEAD's history)", anc,
                f"{out!r}; git describe now: {git.stdout.strip()!r}")
    else:
        h.check("--version: outside a git checkout it says so", m and "not a git checkout" in m.group(2), out)
    with tempfile.TemporaryDirectory() as tmp:  # the build step outside a git checkout
        gen = os.path.join(tmp, "v.c")
        r = subprocess.run(["cmake", f"-DSRC={tmp}", f"-DOUT={gen}", "-DFALLBACK=9.9.9 (not a git checkout)", "-P",
                            os.path.join(h.src, "src", "cli", "version.cmake")], capture_output=True, text=True)
        text = open(gen).read() if r.returncode == 0 and os.path.exists(gen) else r.stderr
        h.check("version.cmake outside a git checkout: the fallback", '"9.9.9 (not a git checkout)"' in text, text)
    fmt = re.search(r"^plan store format_version (\d+)$", out, re.M)
    h.check("--version: the store format_version", fmt is not None, out)
    hdf5 = re.search(r"Version (\S+)", subprocess.run(["h5dump", "--version"], capture_output=True,
                                                        text=True).stdout)
    h.check("--version: HDF5 as h5dump says", hdf5 and re.search(rf"^HDF5 {re.escape(hdf5.group(1))},", out, re.M),
            out)
    ompi = re.search(r"Open MPI\) (\S+)", subprocess.run(["mpirun", "--version"], capture_output=True,
                                                          text=True, env=ENV).stdout)
    h.check("--version: Open MPI as mpirun says", ompi and f"Open MPI {ompi.group(1)}, MPI " in out, out)
    if fmt:
        n = fmt.group(1)
        # The README and its docs/ pages (the history of changes, docs/history/, keeps the
        # formats of its day).
        docs = glob.glob(os.path.join(h.src, "docs", "**", "*.md"), recursive=True)
        pages = [os.path.join(h.src, "README.md")] + [d for d in docs if "/docs/history/" not in d]
        named = [m for p in pages for m in re.findall(r"(?<![-\w])format(?:_version)? (\d+)\b", open(p).read())]
        h.check(f"README and docs/ name store format {n} wherever they name one", named and set(named) == {n},
                str(named))
        head = open(os.path.join(h.src, "schemas", "planstore.md")).readline()
        h.check("schemas/planstore.md's heading names it", head.rstrip().endswith(f"`format_version` {n}"), head)


# ---- 2, 3. query: default policy, a target below the fastest plan ----------------------

def default_policy(tmp):
    path, store = job(tmp, "pols", ["nodvfs", "dvfs-c-walk", "enpu-all"])
    r = farm(path)
    if not h.check("a store of nodvfs, dvfs-c-walk, enpu-all is farmed", r.returncode == 0, r.stderr[-500:]):
        return None
    r = query(store, "--slack", "0.05")
    h.check("query without --policy: enpu-all answers and the text says it was the default",
            r.returncode == 0 and r.stdout.startswith("policy enpu-all (the store's eNPU policy, the default"),
            r.stdout[:200] + r.stderr)
    d = json.loads(query(store, "--slack", "0.05", "--json").stdout)
    e = json.loads(query(store, "--slack", "0.05", "--json", "--policy", "enpu-all").stdout)
    h.check("query --json without --policy: policy enpu-all, policy_from default",
            d["policy"] == "enpu-all" and d["policy_from"] == "default", str({k: d[k] for k in ("policy",
                                                                                                 "policy_from")}))
    h.check("query --policy enpu-all: policy_from --policy, the same plan",
            e["policy_from"] == "--policy" and {k: v for k, v in d.items() if k != "policy_from"} ==
            {k: v for k, v in e.items() if k != "policy_from"})
    c_default(store, "enpu-all")
    for name, pols, want in (("noall", ["nodvfs", "dvfs-c-walk", "enpu-c"], "enpu-c"),
                             ("noenpu", ["nodvfs", "dvfs-c-walk"], "dvfs-c-walk")):
        p, s = job(tmp, name, pols)
        r = farm(p)
        d = json.loads(query(s, "--slack", "0", "--json").stdout) if r.returncode == 0 else {}
        h.check(f"query without --policy on {pols}: {want}", d.get("policy") == want, str(d.get("policy")))
        c_default(s, want)
    r = query(store, "--slack", "0.05", "--policy", "nope")
    h.check("query --policy nope: exit 2, the message lists the store's policies",
            r.returncode == 2 and "nope" in r.stderr and "dvfs-c-walk, enpu-all, nodvfs" in r.stderr, r.stderr)
    return store


class _Plan(ctypes.Structure):  # the head of planstore_plan: policy index first
    _fields_ = [("policy", ctypes.c_uint32), ("rest", ctypes.c_char * 4096)]


def c_default(store, want):
    """The C library's default (NULL policy) and the Python package's equal the CLI's."""
    lib = ctypes.CDLL(os.environ["ENPU_PLANSTORE_LIB"])
    lib.planstore_policy_name.restype = ctypes.c_char_p
    lib.planstore_default_policy.restype = ctypes.c_char_p
    lib.planstore_lookup_slack.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                                           ctypes.c_double, ctypes.c_void_p, ctypes.c_void_p]
    err = ctypes.create_string_buffer(4096)
    got = {}
    for opener in ("open", "open_policy"):
        ps = ctypes.c_void_p()
        rc = (lib.planstore_open(store.encode(), ctypes.byref(ps), err) if opener == "open" else
              lib.planstore_open_policy(store.encode(), None, ctypes.byref(ps), err))
        if rc != 0:
            got[opener] = f"rc {rc}"
            continue
        plan = _Plan()
        rc = lib.planstore_lookup_slack(ps, None, 1, 8, 2048, ctypes.c_double(0.05), ctypes.byref(plan), err)
        got[opener] = (lib.planstore_default_policy(ps).decode(),
                       lib.planstore_policy_name(ps, ctypes.c_size_t(plan.policy)).decode() if rc == 0 else rc)
        lib.planstore_close(ps)
    with enpu_planstore.open(store) as ps:
        py = ps.lookup("decode", 8, 2048, slack=0.05)["policy"]
    h.check(f"C (NULL policy: open, open_policy, lookup) and Python default to the CLI's {want}",
            got == {"open": (want, want), "open_policy": (want, want)} and py == want, f"C {got}, Python {py}")


def below_fastest(store):
    with h5py.File(store, "r") as f:
        b = [r for r in f["policies/enpu-all/buckets"][()] if r["phase"] == 1][0]
    fastest_ns = float(b["walk_start_time_ns"])
    r = query(store, "--target-ms", "1e-6", "--json")
    d = json.loads(r.stdout) if r.returncode == 0 else {}
    h.check("target below the fastest plan: exit 0, warning on stderr",
            r.returncode == 0 and "below the fastest plan" in r.stderr, f"exit {r.returncode}: {r.stderr}")
    t = query(store, "--target-ms", "1e-6")
    h.check("  ... once, on stderr only, in ms as the target was given",
            t.stderr.count("below the fastest plan") == 1 and "warning" not in t.stdout
            and re.search(r"target 1e-06 ms is below the fastest plan .* \(%s ms\)" % re.escape(
                "%.9g" % (fastest_ns / 1e6)), t.stderr) is not None and " ns" not in t.stderr, t.stdout[:300] + t.stderr)
    h.check("  ... the fastest plan: walk prefix 0, the stored walk start's time",
            d.get("walk_prefix") == 0 and abs(d.get("time_ns", 0) - fastest_ns) <= 1e-9 * fastest_ns, str(d)[:300])
    h.check("  ... and the warning in the JSON", "below the fastest plan" in (d.get("warning") or ""))
    r = query(store, "--target-ms", repr(fastest_ns / 1e6))
    h.check("a target at the fastest plan: no warning", r.returncode == 0 and "warning" not in r.stdout + r.stderr,
            r.stderr)


# ---- 4. a checkpoint's counts -------------------------------------------------------

def checkpoint(tmp):
    phases = {"prefill": {"batch": [1, 2, 4, 8], "seq": [1024, 2048, 4096, 8192, 131072]},
              "decode": {"batch": [8, 16, 32, 256], "seq": [2048, 4096, 8192, 131072]}}
    path, store = job(tmp, "ckpt", ["nodvfs", "dvfs-c-walk", "enpu-c", "enpu-all"], phases, slacks=[0, 0.02, 0.05])
    # held after its first results (the test hook), so the stop comes while buckets are
    # pending whatever the machine's load: a busy test process polling the journal saw
    # every enpu-all bucket compiled before its signal landed
    held = os.path.join(tmp, "ckpt-held")
    p = subprocess.Popen([h.enpu, "farm", path, "--progress-s", "600", "--checkpoint-s", "600"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=dict(ENV, ENPU_FARM_TEST_HOLD=f"tasks:{held}"))
    wait_for(lambda: os.path.exists(held) or p.poll() is not None, HANG_S)
    p.send_signal(signal.SIGUSR1)
    _, err = p.communicate(timeout=HANG_S)
    if not h.check("a one-rank farm stopped by SIGUSR1 after its first results exits 3", p.returncode == 3,
                   f"exit {p.returncode} (a farm that finished first: the job is too small) {err[-300:]}"):
        return
    snap = os.path.join(tmp, "snapshot.h5")
    shutil.copyfile(store, snap)
    with h5py.File(snap, "r") as f:
        st = [int(x) for x in f["policies/enpu-all/buckets"]["status"]]
        pend = [r for r in f["policies/enpu-all/buckets"][()] if r["status"] == 3]
    if not h.check("the checkpoint has pending enpu-all buckets", pend, str(st)):
        return
    b = pend[0]
    r = h.run("query", snap, "--policy", "enpu-all", "--phase", ["prefill", "decode"][b["phase"]], "--batch",
              str(b["batch"]), "--seq", str(b["seq"]), "--slack", "0")
    m = re.search(r"not compiled yet \(store is a checkpoint of a running farm: (\d+) of (\d+) buckets compiled, "
                  r"(\d+) failed, (\d+) pending, (\d+) do not fit the chips\)", r.stderr)
    want = (st.count(0), len(st) - st.count(1), st.count(2), st.count(3), st.count(1))
    h.check("checkpoint query: exit 1, the counts are h5py's (compiled, to compile, failed, pending, no fit)",
            r.returncode == 1 and m and tuple(map(int, m.groups())) == want, f"{r.stderr.strip()} vs {want}")
    h.check("  ... with capacity-infeasible buckets among them (not counted as compiled)", st.count(1) > 0, str(st))


# ---- 5. the validation of a rerun -----------------------------------------------------

def raw_validation(store):
    with h5py.File(store, "r") as f:
        return {p: tuple(g[t][()].tobytes() for t in ("validation", "validation_replay"))
                for p, g in f["policies"].items()}


def taken(err):
    m = re.search(r"taken from the store: (\d+) of (\d+) buckets(, the replay)?(; store unchanged)?", err)
    return (int(m.group(1)), int(m.group(2)), bool(m.group(3)), bool(m.group(4))) if m else None


def rerun_validation(tmp):
    phases = {"prefill": {"batch": [1, 4], "seq": [1024, 4096]}, "decode": {"batch": [8, 32], "seq": [2048, 8192]}}
    cluster = os.path.join(tmp, "cluster.json")  # a copy next to the job, edited below
    shutil.copyfile(f"{SRC}/clusters/llama3-70b.json", cluster)
    path, store = job(tmp, "val", ["nodvfs", "enpu-all"], phases, validation=True, cluster=cluster)
    r = farm(path, np_=2)
    t = taken(r.stderr)
    h.check("a job with validation: the first run computes it all", r.returncode == 0 and t and t[0] == 0
            and not t[2], f"{t} {r.stderr[-400:]}")
    before = raw_validation(store)
    r = farm(path, np_=2)
    t = taken(r.stderr)
    h.check("rerun unchanged: every sampled bucket's rows and the replay taken, store unchanged",
            r.returncode == 0 and t and t[0] == t[1] > 0 and t[2] and t[3], f"{t} {r.stderr[-400:]}")
    h.check("  ... nothing re-simulated", re.findall(r"validate: \S+: (\d+) plans re-simulated", r.stderr) ==
            ["0"] * len(before), r.stderr[-400:])
    h.check("  ... the validation tables byte for byte as they were", raw_validation(store) == before)
    md = open(os.path.join(tmp, "val", "validation.md")).read()
    h.check("  ... validation.md says what was reused", "Reused from the store" in md)
    with open(cluster) as f:  # DCN energy: the replay's, no plan's (the store keeps the replay rows)
        doc = json.load(f)
    doc["dcn"]["energy_pj_per_byte"] *= 2
    with open(cluster, "w") as f:
        json.dump(doc, f)
    r = farm(path, np_=2)
    t = taken(r.stderr)
    h.check("a cluster edited under the same path: the rows are taken, the replay runs again",
            r.returncode == 0 and t and t[0] == t[1] and not t[2] and not t[3], f"{t} {r.stderr[-400:]}")
    r = farm(path, "--add-buckets", "phase=decode,batch=16,seq=4096", "--add-buckets",
             "phase=prefill,batch=2,seq=2048", np_=2)
    t = taken(r.stderr)
    resim = [int(x) for x in re.findall(r"validate: \S+: (\d+) plans re-simulated", r.stderr)]
    h.check("after --add-buckets: the replay runs again, the old buckets' rows are taken",
            r.returncode == 0 and t and not t[2] and 0 < t[0] <= t[1] and not t[3], f"{t} {r.stderr[-400:]}")
    h.check("  ... and only the other sampled buckets re-simulated (2 slacks each)",
            t and sum(resim) == 2 * (t[1] - t[0]), f"{resim} {t}")
    r = h.run("validate", store, "--trace", f"{SRC}/traces/AzureLLMInferenceTrace_conv.csv", "--cluster",
              cluster, "--sample", "4", "--job", path, "--out", os.path.join(tmp, "v"))
    h.check("enpu validate recomputes every row", r.returncode == 0 and
            re.findall(r"(\d+) taken from the store", r.stderr) == ["0"] * len(before), r.stderr[-400:])


# ---- 6. make run's note ------------------------------------------------------------

def make_run_note():
    r = subprocess.run(["make", "-n", "-o", "build", "run"], cwd=h.src, capture_output=True, text=True)
    notes = [line for line in r.stdout.splitlines() if "note:" in line]
    h.check("make run prints one note line", r.returncode == 0 and len(notes) == 1, r.stdout[-500:])
    note = notes[0] if notes else ""
    fig = re.search(r"paper mode: (\S+?)\)", note)
    h.check("  ... naming T_peak and the regulator, pointing to the paper-mode figure, which exists",
            "T_peak" in note and "regulator" in note and fig and os.path.exists(os.path.join(h.src, fig.group(1))),
            note)


def quiet_make(tmp):
    """`make farm` without JOB: its usage first, nothing built; the builds pass
    --no-print-directory (no Entering/Leaving lines); `make test`'s last line sums the
    tiers from ctest's logs."""
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    scratch = os.path.join(tmp, "never-built")
    r = subprocess.run(["make", "-f", os.path.join(h.src, "Makefile"), "farm", f"BUILD={scratch}"], cwd=tmp,
                       env=env, capture_output=True, text=True)
    h.check("make farm without JOB: exit 2, its usage first, nothing built",
            r.returncode == 2 and r.stderr.startswith("usage: make farm JOB=") and not os.path.exists(scratch)
            and "Entering directory" not in r.stdout + r.stderr, f"exit {r.returncode}: {r.stderr[:300]}")
    r = subprocess.run(["make", "-n", "build", "asan", "fuzz-setup"], cwd=h.src, env=env, capture_output=True,
                       text=True)
    builds = [line for line in r.stdout.splitlines() if "cmake --build" in line]
    h.check("every cmake --build of the Makefile runs with --no-print-directory",
            len(builds) == 3 and all("MAKEFLAGS=--no-print-directory" in line for line in builds), "\n".join(builds))
    logs = {"release.log": "...\n100% tests passed, 0 tests failed out of 57\n",
            "asan.log": "...\n100% tests passed, 0 tests failed out of 13\n",
            "asan-bad.log": "...\n92% tests passed, 1 tests failed out of 13\n"}
    for name, text in logs.items():
        open(os.path.join(tmp, name), "w").write(text)
    summary = os.path.join(h.src, "tools", "test_summary.sh")
    ok = subprocess.run([summary, os.path.join(tmp, "release.log"), "0", os.path.join(tmp, "asan.log"), "0"],
                        capture_output=True, text=True).stdout
    bad = subprocess.run([summary, os.path.join(tmp, "release.log"), "0", os.path.join(tmp, "asan-bad.log"), "8"],
                         capture_output=True, text=True).stdout
    h.check("make test's last line sums the tiers: 57 + 13 passed, or which tier failed",
            ok.strip() == "== 57 + 13 tests passed (Release + ASan), fuzzers clean" and "FAILED" in bad
            and "ASan 1 of 13 failed" in bad, ok + bad)
    mk = open(os.path.join(h.src, "Makefile")).read()
    recipe = mk[mk.index("\ntest:"):].split("\n\n")[0]  # `make -n test` would run the sub-makes
    h.check("  ... and make test runs it last, keeping the exit status of both tiers",
            recipe.rstrip().endswith("tools/test_summary.sh $(RELEASE_LOG) $$release $(ASAN_LOG) $$asan_rc; \\\n"
                                     "\texit $$(( release || asan_rc ))"), recipe[-400:])


def main():
    version()
    make_run_note()
    with tempfile.TemporaryDirectory() as tmp:
        quiet_make(tmp)
    with tempfile.TemporaryDirectory() as tmp:
        store = default_policy(tmp)
        if store:
            below_fastest(store)
        checkpoint(tmp)
        rerun_validation(tmp)
    h.finish()


main()
