#!/usr/bin/python3
"""The store is never lost, never silently wrong: a fault campaign against the real
`enpu`, the real mpirun and real HDF5 files, on a demo-sized job (jobs/demo.json without
its validation section), every run compared with an uninterrupted reference store
(`enpu store diff`, exit 0 = identical).

 1. Second writer: `enpu validate` started while a farm checkpoints every 0.2 s waits for
    the farm's lock (naming it) instead of publishing an older snapshot; the farm exits 0
    and the final store is the reference plus the validation tables. A farm started while
    a validation holds the store waits too; a writer that gives up exits 4 naming the
    holder, and the store is intact.
 2. Symlinked store: farms on link.h5 -> real.h5 and on real.h5 at once are one store
    (one lock); the link stays a link and the store equals the reference.
 3. Byte flips: >= 50 random single-byte flips in a copy of the store; for each,
    `enpu store verify` exits 0 or 1, and whenever it exits 0 every query answers exactly
    as on the reference (never a changed answer with exit 0); a query that exits 0 on a
    damaged store answers as the reference. A farm run on a damaged store recomputes and
    publishes the reference again, and so it does with a store of format_version 1 (which
    readers refuse naming the version); a file that is no plan store is refused (exit 2)
    and left as it is.
 4. Disk full (a tmpfs 1.5 times the store, when this process may mount one): exit 4 with
    "No space left on device", without a crash, the published store (if any) verifies,
    and after the tmpfs grows the same command resumes to the reference. A full disk
    before the journal's header exits 4 too.
 5. Paths: job names "../../../PWNED" and "a/b" are refused (exit 2) with nothing created;
    without --results the summary goes beside the store, not under the working directory.
 7. Out-of-range numbers: 2^31-1 layers, head_dim 1e9, hidden 2^31-1, 1e9 decode nodes,
    1e308 W in a power table are refused at load (exit 2 or 1 with the JSON path or CSV
    cell); --slack 1e308 and --target-ms 1e308 are usage errors.
 8. Queries of a running farm's checkpoint say "not compiled yet (store is a checkpoint of
    a running farm: N of M buckets compiled, ...)" for a bucket the farm has not finished.
 9. Signals: SIGTERM to mpirun (Open MPI 4.1 exits 1 about 2 s later, having sent the
    ranks SIGTERM then SIGKILL a second apart) keeps the work (the resume reuses it and
    ends at the reference); SIGINT to a one-rank farm exits 3; the Slurm scripts' shell
    function turns SIGTERM into 3 under ENPU_LAUNCHER=mpirun, both when only the batch
    shell is signalled and when the whole job is.
10. Journal: a flipped header byte replays as empty with a warning and the file moved
    aside; a flipped byte in one record skips that record only and replays the others.

Usage: test_faults.py ENPU SOURCE_DIR PLUGIN_DIR
Every wait polls for progress (a file, a line) with a generous bound; nothing depends on
the machine's speed."""
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import h5py

from harness import Harness
from farm_harness import copy_jobs, journal_has_records, journal_kinds, kill_farm, reused_of, summary, wait_for

ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_rmaps_base_oversubscribe="1")
QUERIES = [(pol, ph, b, s, x) for pol in ("enpu-all", "enpu-c")
           for ph, b, s in (("prefill", 1, 1000), ("prefill", 4, 4096), ("decode", 32, 8192))
           for x in ("0", "0.05")]
# The demo's grid with the GA of dvfs-c (about 0.6 s of CPU a bucket, 5 s the job, 97 %
# of it in the GA's bucket tasks), for the runs that must still be working when they are
# signalled, killed or joined by a second writer, on any machine: each waits only for the
# first checkpoint or journal record, which the op tasks before the GA's buckets write.
# Most of the campaign's CPU is this job run to the end (eight times), so it is no larger.
LONG_POLICIES = ["nodvfs", "dvfs-c", "enpu-all"]
# Every wait here is for an event (a checkpoint, a lock, an exit); its bound only guards
# against a hang, so it is far beyond the slowest loaded machine (a shared machine at
# load 15 ran this file ~10x slower than a quiet one), and waiting for a lock is
# given the same bound, not the tools' 30 s default.
HANG_S = 1500


class Faults:
    def __init__(self, h, tmp, plugins):
        self.h, self.tmp = h, tmp
        self.env = dict(ENV, HDF5_PLUGIN_PATH=plugins)
        self.jobs = copy_jobs(h, tmp)
        self.job = self.write_job("fault")
        self.ref = os.path.join(tmp, "ref.h5")
        self.long = self.write_job("fault-long", policies=LONG_POLICIES)
        self.long_ref = os.path.join(tmp, "long-ref.h5")

    def write_job(self, name, **changes):
        job = json.load(open(os.path.join(self.jobs, "demo.json")))
        del job["validation"]
        job.update(name=name, store=f"../out/{name}.h5", **changes)
        path = os.path.join(self.jobs, f"{name}.json")
        json.dump(job, open(path, "w"), indent=2)
        return path

    def cmd(self, store, np_=1, job=None, extra=()):
        c = [self.h.enpu, "farm", job or self.job, "--store", store, "--progress-s", "0.2", "--json", *extra]
        return ["mpirun", "-np", str(np_), *c] if np_ > 1 else c

    def farm(self, store, **kw):
        return subprocess.run(self.cmd(store, **kw), capture_output=True, text=True, env=self.env,
                              cwd=self.tmp, timeout=HANG_S)

    def start(self, store, **kw):
        return subprocess.Popen(self.cmd(store, **kw), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=self.env, cwd=self.tmp, start_new_session=True)

    def run(self, *args, **kw):
        return subprocess.run([self.h.enpu, *args], capture_output=True, text=True, env=self.env,
                              cwd=self.tmp, timeout=HANG_S, **kw)

    def same(self, a, b):
        r = self.run("store", "diff", a, b)
        return r.returncode == 0, r.stdout[-400:] + r.stderr[-400:]

    def answers(self, store):
        """The JSON answer (or None and the exit status) of every query in QUERIES."""
        out = []
        for pol, ph, b, s, x in QUERIES:
            r = self.run("query", store, "--policy", pol, "--phase", ph, "--batch", str(b), "--seq",
                         str(s), "--slack", x, "--json")
            doc = json.loads(r.stdout) if r.returncode == 0 else None
            if doc:
                del doc["store"]  # the path asked, not an answer
            out.append((r.returncode, doc))
        return out

    def validate_cmd(self, store, *extra):
        return [self.h.enpu, "validate", store, "--trace", os.path.join(self.jobs, "traces",
                "AzureLLMInferenceTrace_conv.csv"), "--cluster", os.path.join(self.jobs, "clusters",
                "llama3-70b.json"), "--sample", "1", "--out", os.path.join(self.tmp, "vres"), *extra]


# ---- 1. a second writer --------------------------------------------------------------

def second_writer(f):
    h = f.h
    store = os.path.join(f.tmp, "two.h5")
    p = f.start(store, job=f.long, extra=("--checkpoint-s", "0.2"))
    h.check("second writer: the farm published a first checkpoint", wait_for(lambda: os.path.exists(store), HANG_S))
    v = subprocess.run(f.validate_cmd(store, "--lock-wait", str(HANG_S)), capture_output=True, text=True, env=f.env,
                       cwd=f.tmp, timeout=HANG_S)
    out, err = p.communicate(timeout=HANG_S)
    h.check("second writer: the farm exits 0", p.returncode == 0, err[-500:])
    h.check("second writer: validate waited for the farm's lock, naming it",
            re.search(r"is being written by pid %d on \S+ since \S+: enpu farm " % p.pid, v.stderr), v.stderr[-500:])
    h.check("second writer: validate then ran and passed", v.returncode == 0 and v.stdout.startswith("PASS"),
            v.stdout[-300:] + v.stderr[-300:])
    d = f.run("store", "diff", f.long_ref, store)
    tables = set(re.findall(r"table (\w+):", d.stdout))
    h.check("second writer: the store is the reference plus the validation tables only",
            d.returncode == 1 and tables and tables <= {"validation", "validation_replay"}, d.stdout[-600:])
    # A validation holding the store: a farm waits, and one that gives up exits 4.
    v = subprocess.Popen(f.validate_cmd(store), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=f.env, cwd=f.tmp)
    h.check("second writer: the validation took the lock",
            wait_for(lambda: "enpu validate" in open(store + ".lock").read(), HANG_S))
    r = f.farm(store, job=f.long, extra=("--lock-wait", "0"))
    h.check("second writer: a farm that may not wait exits 4 naming the validation",
            r.returncode == 4 and "is being written by pid %d" % v.pid in r.stderr and "enpu validate" in r.stderr,
            f"exit {r.returncode}: {r.stderr[-400:]}")
    v.communicate(timeout=HANG_S)
    h.check("second writer: the validation finished (exit 0)", v.returncode == 0)
    r = f.run("store", "verify", store)
    h.check("second writer: the store verifies", r.returncode == 0, r.stderr[-300:])


# ---- 2. a symlinked store ------------------------------------------------------------

def symlink(f):
    h = f.h
    real, link = os.path.join(f.tmp, "real.h5"), os.path.join(f.tmp, "link.h5")
    os.symlink("real.h5", link)
    a = f.start(link, job=f.long)
    h.check("symlink: the farm on the link took the lock of the real file",
            wait_for(lambda: os.path.exists(real + ".lock") and "enpu farm" in open(real + ".lock").read(), HANG_S))
    r = f.farm(real, job=f.long, extra=("--lock-wait", str(HANG_S)))
    a.communicate(timeout=HANG_S)
    h.check("symlink: both farms exit 0", a.returncode == 0 and r.returncode == 0, r.stderr[-300:])
    h.check("symlink: the second waited for the first (one store, one lock)", "is being written by" in r.stderr,
            r.stderr[-300:])
    h.check("symlink: the second computed nothing", summary(r.stdout).get("recomputed") == 0, r.stdout[-300:])
    h.check("symlink: the link is still a link to real.h5", os.path.islink(link) and os.readlink(link) == "real.h5")
    h.check("symlink: no lock, journal or store of its own beside the link",
            not any(os.path.exists(link + s) for s in (".lock", ".journal", ".tmp")))
    h.check("symlink: the store equals the reference", *f.same(f.long_ref, real))


# ---- 3. byte flips -------------------------------------------------------------------

def byte_flips(f, rnd):
    h = f.h
    want = f.answers(f.ref)
    h.check("flips: the reference answers every query", all(rc == 0 for rc, _ in want), str(want[:2]))
    size = os.path.getsize(f.ref)
    flip = os.path.join(f.tmp, "flip.h5")
    detected = harmless = wrong = 0
    for _ in range(60):
        shutil.copyfile(f.ref, flip)
        at, mask = rnd.randrange(size), rnd.randrange(1, 256)
        with open(flip, "r+b") as fp:
            fp.seek(at)
            b = fp.read(1)[0]
            fp.seek(at)
            fp.write(bytes([b ^ mask]))
        v = f.run("store", "verify", flip)
        got = f.answers(flip)
        changed = [q for q, g, w in zip(QUERIES, got, want) if g[0] == 0 and g != w]
        if v.returncode not in (0, 1) or v.returncode < 0:
            wrong += 1
            print(f"     flip at {at}: verify exit {v.returncode}: {v.stderr[-200:]}")
        elif changed or (v.returncode == 0 and got != want):
            wrong += 1
            print(f"     flip at {at} ^ {mask:#x}: verify exit {v.returncode}, changed answers {changed[:2]}")
        elif v.returncode == 1:
            detected += 1
        else:
            harmless += 1
    print(f"     60 flips: {detected} detected (verify exit 1), {harmless} harmless (nothing a reader "
          f"returns changed), {wrong} wrong")
    h.check("flips: every one of 60 detected or harmless, never a changed answer with exit 0", wrong == 0)
    h.check("flips: most flips hit content and are detected", detected >= 30, f"{detected} detected")
    # One damage in a table the farm reuses: it recomputes and publishes the reference.
    for at in range(size // 2, size, 97):
        shutil.copyfile(f.ref, flip)
        with open(flip, "r+b") as fp:
            fp.seek(at)
            b = fp.read(1)[0]
            fp.seek(at)
            fp.write(bytes([b ^ 0x10]))
        if f.run("store", "verify", flip).returncode == 1:
            break
    r = f.farm(flip)
    h.check("flips: a farm on a damaged store warns and recomputes",
            r.returncode == 0 and "cannot be reused, every result is recomputed" in r.stderr
            and reused_of(r.stdout).get("store") == 0, r.stderr[-400:] + r.stdout[-300:])
    h.check("flips: ... and publishes the reference again", *f.same(f.ref, flip))
    # A store of format_version 1 (before checksums): readers name the version, the farm
    # recomputes it; a file that is no plan store at all is refused and left alone.
    old = os.path.join(f.tmp, "format1.h5")
    shutil.copyfile(f.ref, old)
    with h5py.File(old, "r+") as fp:
        fp.attrs.modify("format_version", 1)
    q = f.run("query", old, "--phase", "decode", "--batch", "8", "--seq", "2048", "--slack", "0.05")
    h.check("format 1: a query names the format version (exit 1)",
            q.returncode == 1 and "format_version 1, written before this reader's format" in q.stderr,
            q.stderr[-300:])
    r = f.farm(old)
    h.check("format 1: the farm recomputes it to the reference",
            r.returncode == 0 and "(format_version 1) cannot be reused" in r.stderr and f.same(f.ref, old)[0],
            r.stderr[-300:])
    other = os.path.join(f.tmp, "not-a-store.h5")
    open(other, "w").write("someone's notes\n")
    r = f.farm(other)
    h.check("not a plan store: the farm refuses it (exit 2) and leaves it alone",
            r.returncode == 2 and "not a plan store" in r.stderr and open(other).read() == "someone's notes\n",
            r.stderr[-300:])


# ---- 4. disk full --------------------------------------------------------------------

def disk_full(f):
    h = f.h
    mnt = os.path.join(f.tmp, "small")
    os.mkdir(mnt)
    # Room for the store once and a half: a checkpoint needs the old store and the new one.
    kib = os.path.getsize(f.ref) * 3 // 2 // 1024
    m = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={kib}k", "tmpfs", mnt], capture_output=True, text=True)
    if m.returncode != 0:
        if os.getuid() != 0:
            print(f"SKIP disk full: not root, cannot mount a tmpfs ({m.stderr.strip()})")
            return
        h.fail(f"disk full: mount a {kib} KiB tmpfs", m.stderr)
        return
    try:
        store = os.path.join(mnt, "plans.h5")
        r = f.farm(store, extra=("--checkpoint-s", "0.3", "--results", os.path.join(f.tmp, "res")))
        print(f"     on {kib} KiB: exit {r.returncode}: {r.stderr.strip().splitlines()[-1] if r.stderr.strip() else ''}")
        h.check("disk full: exit 4 (environment), not a crash", r.returncode == 4, f"exit {r.returncode}")
        h.check("disk full: the message says so", "No space left on device" in r.stderr, r.stderr[-400:])
        h.check("disk full: no temporary file left", not os.path.exists(store + ".tmp"))
        if os.path.exists(store):
            v = f.run("store", "verify", store)
            h.check("disk full: the published store is intact", v.returncode == 0, v.stderr[-300:])
        subprocess.run(["mount", "-o", "remount,size=8m", mnt], check=True)
        r = f.farm(store, extra=("--results", os.path.join(f.tmp, "res")))
        h.check("disk full: with space back the same command finishes", r.returncode == 0, r.stderr[-400:])
        h.check("disk full: resume identical to the reference", *f.same(f.ref, store))
        # Full before anything is written: the journal's header.
        for name in os.listdir(mnt):
            os.unlink(os.path.join(mnt, name))
        subprocess.run(["mount", "-o", "remount,size=64k", mnt], check=True)
        with open(os.path.join(mnt, "filler"), "wb") as fp:
            try:
                fp.write(b"\0" * (1 << 20))
            except OSError:
                pass
        r = f.farm(os.path.join(mnt, "none.h5"))
        h.check("disk full before the journal header: exit 4, not 2",
                r.returncode == 4 and "No space left on device" in r.stderr, f"exit {r.returncode}: {r.stderr[-300:]}")
    finally:
        subprocess.run(["umount", mnt], capture_output=True)


# ---- 5. paths ------------------------------------------------------------------------

def paths(f):
    h = f.h
    work = os.path.join(f.tmp, "cwd", "a", "b", "c")
    os.makedirs(work)
    for name in ("../../../PWNED", "a/b"):
        job = f.write_job("bad-name")
        doc = json.load(open(job))
        doc["name"] = name
        json.dump(doc, open(job, "w"))
        r = subprocess.run([f.h.enpu, "farm", job, "--store", "x.h5"], capture_output=True, text=True, cwd=work,
                           env=f.env, timeout=HANG_S)
        h.check(f"paths: job name {name!r} refused (exit 2, $.name)",
                r.returncode == 2 and "$.name: expected a plain name" in r.stderr, r.stderr[-300:])
    made = [p for p, _, files in os.walk(os.path.join(f.tmp, "cwd")) for x in files]
    h.check("paths: nothing written anywhere", not made and not os.path.exists(os.path.join(f.tmp, "PWNED")), made)
    store = os.path.join(f.tmp, "elsewhere", "plans.h5")
    os.makedirs(os.path.dirname(store))
    r = subprocess.run([f.h.enpu, "farm", f.job, "--store", store, "--quiet"], capture_output=True, text=True,
                       cwd=work, env=f.env, timeout=HANG_S)
    h.check("paths: without --results the summary goes beside the store",
            r.returncode == 0 and os.path.exists(os.path.join(os.path.dirname(store), "summary.md"))
            and not os.path.exists(os.path.join(work, "results")), r.stderr[-300:])


# ---- 7. out-of-range numbers ---------------------------------------------------------

def out_of_range(f):
    h = f.h

    def edited(kind, rel, old, new):
        src = os.path.join(f.jobs, rel)
        dst = os.path.join(f.jobs, rel.replace(".", "-%d." % len(os.listdir(os.path.dirname(src))), 1))
        text = open(src).read()
        h.check(f"range: {rel} has {old!r} to edit", old in text)
        open(dst, "w").write(text.replace(old, new, 1))
        return os.path.relpath(dst, f.jobs)

    cases = [
        ("2^31-1 layers", "model", edited("model", "models/llama3-70b.json", '"layers": 80', '"layers": 2147483647'),
         "$.layers: expected an integer in [1, 4096]"),
        ("head_dim 1e9", "model", edited("model", "models/llama3-70b.json", '"head_dim": 128', '"head_dim": 1000000000'),
         "$.attention.head_dim: expected an integer in [1, 4096]"),
        ("hidden 2^31-1", "model", edited("model", "models/llama3-70b.json", '"hidden": 8192', '"hidden": 2147483647'),
         "$.hidden: expected an integer in [1, 1048576]"),
        ("1e9 decode nodes", "cluster", edited("cluster", "clusters/llama3-70b.json", '"nodes": 8', '"nodes": 1e9'),
         "$.decode.nodes: expected an integer in [1, 65536]"),
    ]
    for name, kind, rel, msg in cases:
        job = f.write_job("oor", **{kind: rel})
        for cmd in (["buckets", job], ["compile", job, "--phase", "decode", "--batch", "8", "--seq", "2048"]):
            r = f.run(*cmd)
            h.check(f"range: {name}: enpu {cmd[0]} refuses it at load ({msg.split(':')[0]})",
                    r.returncode in (1, 2) and msg in r.stderr, f"exit {r.returncode}: {r.stderr[-300:]}")
    chip = os.path.join(f.jobs, "chips", "tpuv5p.json")
    table = os.path.join(f.jobs, "chips", "tpuv5p", "sa_vf_power.csv")
    text = open(table).read()
    lines = text.splitlines()
    cells = lines[2].split(",")
    cells[3] = "1e308"
    open(table, "w").write("\n".join(lines[:2] + [",".join(cells)] + lines[3:]) + "\n")
    r = f.run("buckets", f.job)
    h.check("range: 1e308 W in a power table refused at load, naming file:line:column and column",
            r.returncode in (1, 2) and re.search(r"sa_vf_power.csv:3:\d+: dynamic_W: expected a number in \[0, 100000\]",
                                            r.stderr), r.stderr[-300:])
    open(table, "w").write(text)
    h.check("range: the chip loads again", f.run("buckets", f.job).returncode == 0 and os.path.exists(chip))
    for opt, val, msg in (("--slack", "1e308", "expected a fraction in [0, 1] or a percent"),
                          ("--target-ms", "1e308", "finite")):
        r = f.run("query", f.ref, "--phase", "decode", "--batch", "8", "--seq", "2048", opt, val)
        h.check(f"range: query {opt} {val} is a usage error", r.returncode == 2 and msg in r.stderr, r.stderr[:300])
    r = f.farm(os.path.join(f.tmp, "added.h5"), extra=("--add-buckets", "phase=decode,batch=70000,seq=2048"))
    h.check("range: --add-buckets past the batch range refused (exit 2)",
            r.returncode == 2 and "expected a number in [1, 65536]" in r.stderr, r.stderr[-300:])


# ---- 8. a running farm's checkpoint --------------------------------------------------

def running_checkpoint(f):
    h = f.h
    store = os.path.join(f.tmp, "running.h5")
    p = f.start(store, extra=("--checkpoint-s", "0.1"))
    seen = []

    def pending_answer():
        if not os.path.exists(store):
            return False
        for pol, ph, b, s, x in QUERIES[::-1]:
            r = f.run("query", store, "--policy", pol, "--phase", ph, "--batch", str(b), "--seq", str(s), "--slack", x)
            if "not compiled yet" in r.stderr:
                seen.append(r)
                return True
        return p.poll() is not None

    wait_for(pending_answer, HANG_S, 0.01)
    p.communicate(timeout=HANG_S)
    msg = seen[0].stderr if seen else ""
    h.check("checkpoint: a query of a running farm's checkpoint says so (exit 1)",
            seen and seen[0].returncode == 1 and
            re.search(r"not compiled yet \(store is a checkpoint of a running farm: (\d+) of (\d+) buckets compiled",
                      msg),
            msg or "the farm finished before a checkpoint with a pending bucket was seen")
    m = re.search(r"(\d+) of (\d+) buckets", msg)
    h.check("checkpoint: N < M in the message", m and int(m.group(1)) < int(m.group(2)), msg)
    h.check("checkpoint: the finished store answers every query", all(rc == 0 for rc, _ in f.answers(store)))


# ---- 9. signals ----------------------------------------------------------------------

def signals(f):
    h = f.h
    store = os.path.join(f.tmp, "term.h5")
    p = f.start(store, np_=2, job=f.long, extra=("--checkpoint-s", "600"))
    h.check("SIGTERM: the farm journalled results", wait_for(lambda: journal_has_records(store), HANG_S))
    t0 = time.monotonic()
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=HANG_S)
    dt = time.monotonic() - t0
    print(f"     SIGTERM to mpirun: exit {p.returncode} after {dt:.2f} s")
    h.check("SIGTERM to mpirun: mpirun ends it (Open MPI 4.1 exits 1 after its kill timeout)",
            p.returncode == 1 and dt < 30, f"exit {p.returncode}")
    r = f.farm(store, job=f.long)
    reused = reused_of(r.stdout)
    h.check("SIGTERM to mpirun: the resume reuses the work done",
            r.returncode == 0 and reused.get("store", 0) + reused.get("journal", 0) > 0, r.stdout[-400:])
    h.check("SIGTERM to mpirun: resume identical to the reference", *f.same(f.long_ref, store))

    store = os.path.join(f.tmp, "int.h5")
    p = f.start(store, job=f.long, extra=("--checkpoint-s", "600"))
    h.check("SIGINT: the farm journalled results", wait_for(lambda: journal_has_records(store), HANG_S))
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=HANG_S)
    h.check("SIGINT to a one-rank farm: exit 3, summary says interrupted",
            p.returncode == 3 and summary(out).get("outcome") == "interrupted", f"exit {p.returncode}: {err[-300:]}")
    h.check("SIGINT: the stop checkpointed a readable store", f.run("store", "verify", store).returncode == 0)

    slurm_sh = os.path.join(h.src, "slurm", "enpu-slurm.sh")
    for who in ("shell", "job"):
        store = os.path.join(f.tmp, f"slurm-{who}.h5")
        script = f'. "{slurm_sh}"; enpu_slurm_farm "$@"'
        env = dict(f.env, ENPU_BIN=h.enpu, ENPU_LAUNCHER="mpirun", SLURM_NTASKS="2")
        p = subprocess.Popen(["bash", "-c", script, "farm-sh", f.long, "--store", store, "--checkpoint-s", "600"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=f.tmp,
                             start_new_session=True)
        h.check(f"Slurm function ({who} signalled): the farm journalled results",
                wait_for(lambda: journal_has_records(store), HANG_S))
        if who == "shell":
            p.send_signal(signal.SIGTERM)
        else:
            os.killpg(p.pid, signal.SIGTERM)  # as Slurm signals every process of a job
        out, err = p.communicate(timeout=HANG_S)
        h.check(f"Slurm function, SIGTERM to the {who}: status 3, 'rerun to resume'",
                p.returncode == 3 and "rerun the same command to resume" in err,
                f"exit {p.returncode}: {err[-500:]}")
        r = f.farm(store, job=f.long)
        h.check(f"Slurm function ({who}): resume identical to the reference",
                r.returncode == 0 and f.same(f.long_ref, store)[0], r.stderr[-300:])


# ---- 10. the journal -----------------------------------------------------------------

def journal(f):
    h = f.h
    base = os.path.join(f.tmp, "jbase.h5")
    p = f.start(base, job=f.long, extra=("--checkpoint-s", "600"))
    # Three records at least (a flipped byte goes into the middle one): waited for, not
    # hoped for between the first record and the kill.
    h.check("journal: results journalled",
            wait_for(lambda: len(journal_kinds(base)) >= 3 or p.poll() is not None, HANG_S) and p.poll() is None)
    kill_farm(p, base)
    data = open(base + ".journal", "rb").read()
    # Record boundaries: u32 kind, u32 compressed bytes, u64 checksum, then the frame.
    bounds, at = [], 16
    while at + 16 <= len(data):
        n = int.from_bytes(data[at + 4:at + 8], "little")
        if at + 16 + n > len(data):
            break
        bounds.append((at, at + 16 + n))
        at += 16 + n
    h.check("journal: several records after a kill -9", len(bounds) >= 3, f"{len(bounds)} records")
    for what, at in (("header", 3), ("middle record", (bounds[1][0] + bounds[1][1]) // 2 if len(bounds) > 2 else 20)):
        store = os.path.join(f.tmp, f"j-{what.split()[0]}.h5")
        bad = bytearray(data)
        bad[at] ^= 0x41
        open(store + ".journal", "wb").write(bad)
        r = f.farm(store, job=f.long)
        from_journal = reused_of(r.stdout).get("journal", 0)
        if what == "header":
            h.check("journal: a flipped header byte: exit 0 with a warning, the file moved aside",
                    r.returncode == 0 and "is not a farm journal (bad header): moved aside" in r.stderr
                    and os.path.exists(store + ".journal.unreadable-1"), f"exit {r.returncode}: {r.stderr[-400:]}")
        else:
            h.check("journal: a flipped byte in one record: the later records still replay",
                    r.returncode == 0 and "skipped" in r.stderr and from_journal >= len(bounds) - 2,
                    f"exit {r.returncode}: {r.stderr[-400:]} {r.stdout[-300:]}")
        h.check(f"journal ({what}): the store equals the reference", *f.same(f.long_ref, store))


def main():
    h = Harness(os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]))
    tmp = tempfile.mkdtemp(prefix="enpu-faults-")
    f = Faults(h, tmp, os.path.abspath(sys.argv[3]))
    rnd = random.Random(int(os.environ.get("FAULT_TEST_SEED", "19")))
    t0 = time.monotonic()
    for job, ref in ((f.job, f.ref), (f.long, f.long_ref)):
        r = f.farm(ref, job=job, extra=("--quiet",))
        if not h.check(f"reference farm of {os.path.basename(job)} exit 0", r.returncode == 0, r.stderr[-600:]):
            h.finish()
    for part in (second_writer, symlink, lambda g: byte_flips(g, rnd), disk_full, paths, out_of_range,
                 running_checkpoint, signals, journal):
        t = time.monotonic()
        part(f)
        print(f"     ({time.monotonic() - t:.1f} s)")
    print(f"     fault campaign: {time.monotonic() - t0:.1f} s")
    shutil.rmtree(tmp, ignore_errors=True)
    h.finish()


if __name__ == "__main__":
    main()
