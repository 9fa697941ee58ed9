"""What the farm's integration tests share: running `enpu farm` (under mpirun beyond one
rank), killing a whole farm, reading its summary and its journal, variants of the demo
job, and comparing stores. Used by test_farm.py, test_farm_jobs.py and test_faults.py."""
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time

from harness import Harness

ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_rmaps_base_oversubscribe="1")

REC_OP, REC_BUCKET, REC_PART, REC_JOB = 1, 2, 3, 4  # journal record kinds (farm_internal.h)


def farm_cmd(h, np_, store, tmp, job=None, extra=(), jobs=None, as_json=True):
    """`enpu farm` on one job (--store given) or several (jobs=[...], their own stores),
    its summary as JSON on stdout (Markdown with as_json=False)."""
    jobs = jobs or [job or os.path.join(h.src, "jobs", "demo.json")]
    # the defaults, unless extra gives them (an option given twice is a usage error)
    defaults = [o for o in (("--results", os.path.join(tmp, "results")), ("--progress-s", "0.5")) if o[0] not in extra]
    cmd = [h.enpu, "farm", *jobs, *(a for o in defaults for a in o), *(("--store", store) if store else ()),
           *(("--json",) if as_json else ()), *extra]
    return ["mpirun", "-np", str(np_), *cmd] if np_ > 1 else cmd


def farm(h, np_, store, tmp, **kw):
    return subprocess.run(farm_cmd(h, np_, store, tmp, **kw), capture_output=True, text=True,
                          env=ENV, cwd=tmp)


def start(h, np_, store, tmp, **kw):
    return subprocess.Popen(farm_cmd(h, np_, store, tmp, **kw), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=ENV, cwd=tmp,
                            start_new_session=True)


def kill_farm(p, store):
    """kill -9 of the whole farm: mpirun's process group, and the ranks, which Open MPI
    starts in process groups of their own (they would otherwise run on as orphans)."""
    os.killpg(p.pid, signal.SIGKILL)
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if store.encode() in f.read().split(b"\0"):
                    os.kill(int(pid), signal.SIGKILL)
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            pass
    p.communicate()


def summary(out, nth=0):
    """The nth job's summary of `enpu farm --json` (its stdout), or {} when stdout is not
    that document, so a check on it fails instead of the test."""
    try:
        return json.loads(out)["jobs"][nth]
    except (ValueError, KeyError, IndexError, TypeError):
        return {}


def tasks_of(out, nth=0):
    """The tasks of the nth job's summary: total, op, bucket, part, done, failed."""
    return summary(out, nth).get("tasks", {})


def reused_of(out, nth=0):
    """Results the nth job took from the store and the journal, and the op searches the
    journal held part of: store, journal, resumed_ops."""
    return summary(out, nth).get("reused", {})


def buckets_of(out, nth=0):
    """(ok, infeasible, failed) buckets x policies of the nth job's summary."""
    b = summary(out, nth).get("buckets", {})
    return b.get("ok"), b.get("infeasible_capacity"), b.get("failed")


def same(h, a, b):
    r = h.run("store", "diff", a, b)
    return r.returncode == 0, r.stdout[-400:] + r.stderr[-400:]


def wait_for(cond, timeout_s, step_s=0.02):
    """Poll cond() until it is true; False after timeout_s."""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(step_s)
    return bool(cond())


def journal_kinds(store):
    """Kinds of the intact-looking work records of a store's journal, in order (the header
    is 16 bytes; a record is u32 kind, u32 compressed bytes, u64 checksum, then its frame;
    the job's identity, REC_JOB, is no work and left out)."""
    path = store + ".journal"
    data = open(path, "rb").read() if os.path.exists(path) else b""
    kinds, at = [], 16
    while at + 16 <= len(data):
        n = int.from_bytes(data[at + 4:at + 8], "little")
        if at + 16 + n > len(data):
            break
        kinds.append(int.from_bytes(data[at:at + 4], "little"))
        at += 16 + n
    return [k for k in kinds if k != REC_JOB]


def journal_has_records(store):
    return len(journal_kinds(store)) > 0


def demo_variant(h, tmp, name, **changes):
    """jobs/demo.json as `name` (no validation section) with changes, written to tmp with
    absolute paths to the shipped model, chip and cluster."""
    src = os.path.join(h.src, "jobs")
    job = json.load(open(os.path.join(src, "demo.json")))
    del job["validation"]
    for k in ("model", "chip", "cluster"):
        job[k] = os.path.join(src, job[k])
    job.update(name=name, store=os.path.join(tmp, f"{name}.h5"), **changes)
    path = os.path.join(tmp, f"{name}.json")
    json.dump(job, open(path, "w"), indent=2)
    return path


def small_demo_variant(h, tmp, name, **changes):
    """demo_variant with one policy (nodvfs) and one bucket a phase: a store that farms in
    seconds, for tests that only need one to read."""
    phases = {"prefill": {"batch": [1], "seq": [1024]}, "decode": {"batch": [8], "seq": [2048]}}
    return demo_variant(h, tmp, name, **{"policies": ["nodvfs"], "phases": phases, **changes})


def run_in(h, tmp, *args, timeout=600, **kw):
    """`enpu args` in the folder tmp with ENV, its output captured as text."""
    return subprocess.run([h.enpu, *args], capture_output=True, text=True, env=ENV, cwd=tmp, timeout=timeout, **kw)


def small_store_test(argv, prefix, name):
    """The start of a test run as `test.py ENPU SOURCE_DIR` that needs a store to read: a
    Harness, a scratch folder, and in it the job `name` (small_demo_variant) farmed into
    name.h5 (the test ends there if that fails). Returns (h, tmp, job path, store path)."""
    h = Harness(os.path.abspath(argv[1]), os.path.abspath(argv[2]))
    tmp = tempfile.mkdtemp(prefix=prefix)
    job = small_demo_variant(h, tmp, name)
    r = run_in(h, tmp, "farm", job, "--quiet", "--json")
    if not h.check("a small store to read (farm exit 0)", r.returncode == 0, r.stderr[-500:]):
        h.finish()
    return h, tmp, job, os.path.join(tmp, f"{name}.h5")


def copy_jobs(h, tmp):
    """The shipped jobs/ copied to tmp/jobs (for variants beside them), its traces a link."""
    jobs, src = os.path.join(tmp, "jobs"), os.path.join(h.src, "jobs")
    shutil.copytree(src, jobs, ignore=shutil.ignore_patterns("traces"))
    os.symlink(os.path.join(src, "traces"), os.path.join(jobs, "traces"))
    return jobs
