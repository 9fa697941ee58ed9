#!/usr/bin/python3
"""What a farm does to a store that is not simply its own: the real `enpu farm` (under
mpirun for the runs that compile; a refusal at setup runs without it, as mpirun may kill
rank 0 before it prints when another rank exits first), real files beside the store, stores compared with
`enpu store diff` (exit 0 = identical). A small grid of the demo job keeps each farm short.

 1. Another job's store: farming job B into job A's store exits 2 naming both jobs and
    leaves A's store as it was; `--replace` reuses it for B (then equal to B's own store);
    the same job with other slacks, or after a change of its model's content, is an
    incremental rerun (exit 0, results reused from the store).
 2. Planted links: a symbolic link at `<store>.tmp`, `<store>.lock` or `<store>.journal`
    is refused (exit 2, "symbolic link") with its target and the store untouched, and the
    store never becomes a link; a stale `.tmp` (a writer killed before its rename) and a
    hard link planted at `.tmp` are replaced as names, their targets untouched.
 3. A hard link to the store: a farm through either name exits 2 naming the hard links,
    and the store is left as it was.
 5. A damaged store (truncated to half, zeroed, garbage) where a farm ran (its journal
    beside it): the farm exits 0, says it moved the file aside to `<store>.damaged-1`
    (kept byte for byte) and ends at the reference. A file no farm wrote (no journal) is
    refused (exit 2) and left as it was.
 8. Determinism: the same job with a validation section farmed from two working
    directories, its path spelled relative and absolute and the store's path through a
    `..`, gives identical stores.

Usage: test_store_safety.py ENPU SOURCE_DIR PLUGIN_DIR"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

from harness import Harness
from farm_harness import copy_jobs, ENV, reused_of, summary

SMALL_PHASES = {"prefill": {"batch": [1], "seq": [1024]}, "decode": {"batch": [8], "seq": [2048]}}
SMALL_POLICIES = ["nodvfs", "enpu-c"]
HANG_S = 1500  # a bound against a hang only; every run here takes seconds


class Safety:
    def __init__(self, h, tmp, plugins):
        self.h, self.tmp = h, tmp
        self.env = dict(ENV, HDF5_PLUGIN_PATH=plugins)
        self.jobs = copy_jobs(h, tmp)

    def write_job(self, name, file=None, validation=False, **changes):
        """A small variant of the demo job, named `name`, in jobs/<file or name>.json."""
        job = json.load(open(os.path.join(self.jobs, "demo.json")))
        if validation:
            job["validation"]["sample"] = 2
        else:
            del job["validation"]
        job.update(name=name, store=f"../out/{name}.h5", phases=SMALL_PHASES, policies=SMALL_POLICIES, **changes)
        path = os.path.join(self.jobs, f"{file or name}.json")
        json.dump(job, open(path, "w"), indent=2)
        return path

    def farm(self, job, store, np_=2, extra=(), cwd=None):
        c = [self.h.enpu, "farm", job, "--store", store, "--progress-s", "0.2", "--json", *extra]
        c = ["mpirun", "-np", str(np_), *c] if np_ > 1 else c
        return subprocess.run(c, capture_output=True, text=True, env=self.env, cwd=cwd or self.tmp,
                              timeout=HANG_S)

    def same(self, a, b):
        r = subprocess.run([self.h.enpu, "store", "diff", a, b], capture_output=True, text=True, env=self.env,
                           timeout=HANG_S)
        return r.returncode == 0, r.stdout[-400:] + r.stderr[-400:]

    def path(self, name):
        return os.path.join(self.tmp, name)

    def reference(self, job, name):
        """A store of `job` farmed from scratch, and a spare copy of it."""
        store = self.path(name)
        r = self.farm(job, store, np_=1, extra=("--quiet",))
        if not self.h.check(f"reference {name}: exit 0", r.returncode == 0, r.stderr[-600:]):
            self.h.finish()
        shutil.copyfile(store, store + ".copy")
        return store


def bytes_of(path):
    return open(path, "rb").read()


# ---- 1. another job's store ------------------------------------------------------------
def other_job(s):
    h = s.h
    a, b = s.write_job("job-a"), s.write_job("job-b")
    a_ref, b_ref = s.reference(a, "a-ref.h5"), s.reference(b, "b-ref.h5")
    store = s.path("a.h5")
    shutil.copyfile(a_ref, store)
    r = s.farm(b, store, np_=1)
    h.check("other job: exit 2 naming both jobs",
            r.returncode == 2 and '"job-a"' in r.stderr and '"job-b"' in r.stderr and "--replace" in r.stderr,
            f"exit {r.returncode}: {r.stderr[-400:]}")
    h.check("other job: the store is left as it was", bytes_of(store) == bytes_of(a_ref))
    r = s.farm(b, store, extra=("--replace",))
    h.check("other job: --replace reuses the file (exit 0, a warning naming the old job)",
            r.returncode == 0 and "--replace" in r.stderr and '"job-a"' in r.stderr,
            f"exit {r.returncode}: {r.stderr[-400:]}")
    h.check("other job: ... and the store is then job B's", *s.same(b_ref, store))
    # The same job, other slacks: incremental, as before.
    shutil.copyfile(a_ref, store)
    slacks = s.write_job("job-a", file="job-a-slacks", slacks=[0, 0.02, 0.05])
    r = s.farm(slacks, store)
    h.check("same job, other slacks: an incremental rerun (exit 0, ops reused from the store)",
            r.returncode == 0 and reused_of(r.stdout).get("store", 0) > 0, r.stderr[-400:] + r.stdout[-300:])
    # The same job after its model's content changed (same model name): incremental too.
    model = os.path.join(s.jobs, "models", "llama3-70b.json")
    doc = json.load(open(model))
    doc["ffn"]["intermediate"] -= 4096  # regen.sbatch's FFN size change
    changed = os.path.join(s.jobs, "models", "llama3-70b-smaller-ffn.json")
    json.dump(doc, open(changed, "w"), indent=2)
    ffn = s.write_job("job-a", file="job-a-ffn", model="models/llama3-70b-smaller-ffn.json")
    shutil.copyfile(a_ref, store)
    r = s.farm(ffn, store)
    h.check("same job, model content changed: incremental (exit 0, some ops reused, some recomputed)",
            r.returncode == 0 and reused_of(r.stdout).get("store", 0) > 0
            and summary(r.stdout).get("recomputed", 0) > 0 and "refusing" not in r.stderr,
            r.stderr[-400:] + r.stdout[-300:])


# ---- 2. planted links ------------------------------------------------------------------
def planted_links(s):
    h = s.h
    job = s.write_job("links")
    ref = s.reference(job, "links-ref.h5")
    store = s.path("links.h5")
    for suffix in (".tmp", ".lock", ".journal"):
        for name in (store, store + ".tmp", store + ".lock", store + ".journal"):
            if os.path.lexists(name):  # a store a failed check left as a link is not written through
                os.unlink(name)
        shutil.copyfile(ref, store)
        victim = s.path(f"victim{suffix}.txt")
        open(victim, "w").write("someone's file\n")
        os.symlink(victim, store + suffix)
        r = s.farm(job, store, np_=1, extra=("--add-buckets", "phase=decode,batch=16,seq=2048"))
        h.check(f"link at {suffix}: refused (exit 2, names the link)",
                r.returncode == 2 and "symbolic link" in r.stderr and store + suffix in r.stderr,
                f"exit {r.returncode}: {r.stderr[-400:]}")
        h.check(f"link at {suffix}: its target is untouched, the store is no link and as it was",
                bytes_of(victim) == b"someone's file\n" and not os.path.islink(store)
                and bytes_of(store) == bytes_of(ref))
    # A stale temporary file (a writer killed before its rename) and a hard link planted
    # at .tmp: replaced as names; the hard link's target keeps its content.
    for name in (store, store + ".tmp", store + ".journal"):
        if os.path.lexists(name):
            os.unlink(name)
    shutil.copyfile(ref, store)
    open(store + ".tmp", "wb").write(b"half a store")
    r = s.farm(job, store)
    h.check("a stale .tmp does not block the farm", r.returncode == 0 and not os.path.exists(store + ".tmp"),
            r.stderr[-400:])
    victim = s.path("victim-hard.txt")
    open(victim, "w").write("someone's file\n")
    os.link(victim, store + ".tmp")
    r = s.farm(job, store, extra=("--add-buckets", "phase=decode,batch=16,seq=2048"))
    h.check("a hard link at .tmp: the farm runs, the link's target is untouched",
            r.returncode == 0 and bytes_of(victim) == b"someone's file\n" and not os.path.islink(store),
            r.stderr[-400:])


# ---- 3. a hard link to the store ---------------------------------------------------------
def hard_link(s):
    h = s.h
    job = s.write_job("hard")
    ref = s.reference(job, "hard-ref.h5")
    store, other = s.path("hard.h5"), s.path("hard-other-name.h5")
    shutil.copyfile(ref, store)
    os.link(store, other)
    for name in (store, other):
        r = s.farm(job, name, np_=1)
        h.check(f"hard link: a farm through {os.path.basename(name)} exits 2 saying why",
                r.returncode == 2 and "2 hard links" in r.stderr, f"exit {r.returncode}: {r.stderr[-400:]}")
    h.check("hard link: both names still hold the store as it was",
            os.path.samefile(store, other) and bytes_of(store) == bytes_of(ref))
    os.unlink(other)
    r = s.farm(job, store)
    h.check("hard link: with one name again the farm runs", r.returncode == 0, r.stderr[-400:])


# ---- 5. a damaged store --------------------------------------------------------------------
def damaged(s):
    h = s.h
    job = s.write_job("damaged")
    ref = s.reference(job, "damaged-ref.h5")
    size = os.path.getsize(ref)
    damage = {"truncated to half": lambda b: b[:size // 2], "zeroed": lambda b: bytes(size),
              "garbage": lambda b: bytes((i * 131 + 7) % 251 for i in range(size))}
    for what, make in damage.items():
        store = s.path(f"damaged-{what.split()[0]}.h5")
        r = s.farm(job, store)  # the store a resume finds damaged, its journal beside it
        bad = make(bytes_of(store))
        open(store, "wb").write(bad)
        r = s.farm(job, store)
        h.check(f"{what}: the farm recomputes it (exit 0) and says it moved the file aside",
                r.returncode == 0 and f"moved it aside to {store}.damaged-1" in r.stderr,
                f"exit {r.returncode}: {r.stderr[-400:]}")
        h.check(f"{what}: the damaged file is kept byte for byte",
                os.path.exists(store + ".damaged-1") and bytes_of(store + ".damaged-1") == bad)
        h.check(f"{what}: the store equals the reference", *s.same(ref, store))
    # No journal beside it: no farm wrote the file there (a mistyped --store): refused.
    other = s.path("someones-file.h5")
    open(other, "wb").write(bytes(size))
    r = s.farm(job, other, np_=1)
    h.check("a file no farm wrote (no journal beside it): refused (exit 2), left as it was",
            r.returncode == 2 and "no farm journal" in r.stderr and bytes_of(other) == bytes(size)
            and not os.path.exists(other + ".damaged-1"), f"exit {r.returncode}: {r.stderr[-400:]}")


# ---- 8. determinism across working directories and spellings --------------------------------
def determinism(s):
    h = s.h
    job = s.write_job("spelled", validation=True)
    one, two = s.path("spelled-1.h5"), s.path("spelled-2.h5")
    r1 = s.farm(os.path.relpath(job, s.tmp), os.path.basename(one), np_=1, extra=("--quiet",))
    r2 = s.farm(job, os.path.join("..", os.path.basename(two)), np_=2, extra=("--quiet",), cwd=s.jobs)
    h.check("spellings: both farms (with their validation) exit 0", r1.returncode == 0 and r2.returncode == 0,
            r1.stderr[-300:] + r2.stderr[-300:])
    h.check("spellings: jobs/x.json from tmp and its absolute path from jobs/ give identical stores",
            *s.same(one, two))


def main():
    h = Harness(os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]))
    tmp = tempfile.mkdtemp(prefix="enpu-store-safety-")
    s = Safety(h, tmp, os.path.abspath(sys.argv[3]))
    for part in (other_job, planted_links, hard_link, damaged, determinism):
        part(s)
    shutil.rmtree(tmp, ignore_errors=True)
    h.finish()


if __name__ == "__main__":
    main()
