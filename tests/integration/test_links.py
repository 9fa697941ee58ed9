#!/usr/bin/python3
"""Nothing written through a planted link, and no other job's work discarded: the real
`enpu` (farms that compile under mpirun -np 2; a refusal at setup runs on one rank, as
test_store_safety.py explains), real files. A "victim" is someone's file that a link
planted at a path the project writes points to; it must keep its content.

 1. summary.md and validation.md, beside the store and under --results DIR, and the
    farm's --task-log: a symbolic
    link and a hard link at each and at its .tmp: the farm exits 0, every victim is
    unchanged, the published files are plain files of one name with the run's content,
    and no .tmp is left.
 2. <store>.lock and <store>.journal: a symbolic link and a hard link at each are refused
    (exit 2) with the victim and the store unchanged; at <store>.tmp a symbolic link is
    refused and a hard link replaced as a name (the farm runs).
 3. Another job's journal (its farm killed before its first checkpoint): a farm of
    another job refuses it (exit 2, naming both jobs) and leaves it byte for byte;
    --replace discards it with a warning naming the old job.
 4. Two unreadable journals in turn are kept as <store>.journal.unreadable-1 and -2.
 5. `report --out`, `replay --out`, `validate --out`: links at their files and .tmp
    files; a symbolic link at the report's gnuplot.log (a log appended to) is refused.
 6. `model import X -o X` (and -o a link to X) exits 2 with X unchanged; --force writes.

Usage: test_links.py ENPU SOURCE_DIR PLUGIN_DIR"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

from harness import Harness
from farm_harness import ENV, copy_jobs, journal_has_records, kill_farm, wait_for

SMALL_PHASES = {"prefill": {"batch": [1], "seq": [1024]}, "decode": {"batch": [8], "seq": [2048]}}
VICTIM = b"someone's file\n"
HANG_S = 600  # a bound against a hang only


class Links:
    def __init__(self, h, tmp, plugins):
        self.h, self.tmp = h, tmp
        self.env = dict(ENV, HDF5_PLUGIN_PATH=plugins)
        self.jobs = copy_jobs(h, tmp)
        self.nvictims = 0

    def write_job(self, name, small=True, validation=True, policies=("nodvfs", "enpu-c")):
        job = json.load(open(os.path.join(self.jobs, "demo.json")))
        if validation:
            job["validation"]["sample"] = 2
        else:
            del job["validation"]
        job.update(name=name, policies=list(policies))
        if small:
            job["phases"] = SMALL_PHASES
        path = os.path.join(self.jobs, f"{name}.json")
        json.dump(job, open(path, "w"), indent=2)
        return path

    def job_and_store(self, name, folder, **kw):
        """write_job(name, **kw) and the path of its store, in a new folder of tmp."""
        os.makedirs(self.path(folder))
        return self.write_job(name, **kw), self.path(folder, "plans.h5")

    def farmed(self, name, folder, what):
        """A job without validation and its store, farmed in a new folder (store None when
        the farm failed: a failed check)."""
        job, store = self.job_and_store(name, folder, validation=False)
        r = self.farm(job, store)
        ok = self.h.check(f"{what}: the store is farmed (exit 0)", r.returncode == 0, r.stderr[-400:])
        return job, store if ok else None

    def cmd(self, np_, *args):
        c = [self.h.enpu, *args]
        return ["mpirun", "-np", str(np_), *c] if np_ > 1 else c

    def run(self, *args, np_=1):
        return subprocess.run(self.cmd(np_, *args), capture_output=True, text=True, env=self.env, cwd=self.tmp,
                              timeout=HANG_S)

    def farm(self, job, store, np_=2, extra=()):
        return self.run("farm", job, "--store", store, "--quiet", *extra, np_=np_)

    def path(self, *names):
        return os.path.join(self.tmp, *names)

    def plant(self, at, kind):
        """A new victim file and a link of `kind` ("symlink" or "hard link") to it at `at`."""
        self.nvictims += 1
        victim = self.path(f"victim-{self.nvictims}")
        open(victim, "wb").write(VICTIM)
        if os.path.lexists(at):
            os.unlink(at)
        (os.symlink if kind == "symlink" else os.link)(victim, at)
        return victim

    def check_published(self, what, at, victims, content):
        """Every victim unchanged, `at` a plain file of one name holding `content`, no .tmp."""
        h = self.h
        h.check(f"{what}: every victim unchanged", all(bytes_of(v) == VICTIM for v in victims),
                [v for v in victims if bytes_of(v) != VICTIM])
        st = os.lstat(at) if os.path.lexists(at) else None
        h.check(f"{what}: a plain file of one name with the run's content",
                st is not None and not os.path.islink(at) and st.st_nlink == 1 and content in bytes_of(at),
                bytes_of(at)[:200] if st else "missing")
        h.check(f"{what}: no .tmp left", not os.path.lexists(at + ".tmp"))


def bytes_of(path):
    """The file's bytes (b"" when it is missing, so that a check fails rather than the test)."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return b""


# ---- 1. summary.md and validation.md ------------------------------------------------------
def farm_outputs(s):
    h = s.h
    job, store = s.job_and_store("links-out", "out")
    results = s.path("results")
    for where, d in (("beside the store", s.path("out")), ("under --results", os.path.join(results, "links-out"))):
        os.makedirs(d, exist_ok=True)
        extra = ("--results", results) if where == "under --results" else ()
        # two runs: each of the four paths gets a symbolic link in one, a hard link in the other
        for kinds in (("symlink", "hard link", "hard link", "symlink"), ("hard link", "symlink", "symlink", "hard link")):
            names = ("summary.md", "summary.md.tmp", "validation.md", "validation.md.tmp")
            victims = [s.plant(os.path.join(d, n), k) for n, k in zip(names, kinds)]
            r = s.farm(job, store, extra=extra)
            what = f"{where}, {kinds[0]} at summary.md"
            h.check(f"{what}: the farm exits 0", r.returncode == 0, f"exit {r.returncode}: {r.stderr[-400:]}")
            s.check_published(f"{what}: summary.md", os.path.join(d, "summary.md"), victims[:2],
                              b"# Farm summary: links-out")
            s.check_published(f"{what}: validation.md", os.path.join(d, "validation.md"), victims[2:],
                              b"# Validation")
    # --task-log PATH: the CSV of every task computed
    victims = [s.plant(s.path("tasks.csv"), "symlink"), s.plant(s.path("tasks.csv.tmp"), "hard link")]
    r = s.farm(job, s.path("out", "tasks.h5"), extra=("--task-log", s.path("tasks.csv")))
    h.check("--task-log: the farm exits 0", r.returncode == 0, f"exit {r.returncode}: {r.stderr[-400:]}")
    s.check_published("--task-log", s.path("tasks.csv"), victims, b"job,kind,policy,compute_s")


# ---- 2. .lock, .journal, .tmp ---------------------------------------------------------------
def store_neighbours(s):
    h = s.h
    job, store = s.farmed("links-side", "side", "neighbours")
    if not store:
        return
    ref = bytes_of(store)
    for suffix in (".lock", ".journal", ".tmp"):
        for kind in ("symlink", "hard link"):
            at = store + suffix
            if os.path.lexists(at):
                os.unlink(at)
            victim = s.plant(at, kind)
            r = s.farm(job, store, np_=1, extra=("--add-buckets", "phase=decode,batch=16,seq=2048"))
            what = f"{kind} at {suffix}"
            if suffix == ".tmp" and kind == "hard link":
                h.check(f"{what}: replaced as a name, the farm runs (exit 0)", r.returncode == 0, r.stderr[-400:])
                ref = bytes_of(store)
            else:
                h.check(f"{what}: refused (exit 2, naming it)", r.returncode == 2 and at in r.stderr,
                        f"exit {r.returncode}: {r.stderr[-400:]}")
            h.check(f"{what}: the victim is unchanged, the store as it was and no link",
                    bytes_of(victim) == VICTIM and bytes_of(store) == ref and not os.path.islink(store))
            if os.path.lexists(at):
                os.unlink(at)


# ---- 3. another job's journal ------------------------------------------------------------------
def other_jobs_journal(s):
    h = s.h
    long = s.write_job("kjob", small=False, validation=False, policies=("nodvfs", "enpu-c", "ideal"))
    other, store = s.job_and_store("demonv", "x", validation=False)
    p = subprocess.Popen(s.cmd(2, "farm", long, "--store", store, "--quiet", "--checkpoint-s", "100000"),
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=s.env, cwd=s.tmp,
                         start_new_session=True)
    journalled = wait_for(lambda: journal_has_records(store) or p.poll() is not None, HANG_S)
    running = p.poll() is None
    kill_farm(p, store)
    h.check("other job's journal: kjob killed with work in its journal and no store",
            journalled and running and journal_has_records(store) and not os.path.exists(store))
    before = bytes_of(store + ".journal")
    r = s.farm(other, store, np_=1)
    h.check("other job's journal: refused (exit 2, naming both jobs, --replace)",
            r.returncode == 2 and '"kjob"' in r.stderr and '"demonv"' in r.stderr and "--replace" in r.stderr,
            f"exit {r.returncode}: {r.stderr[-400:]}")
    h.check("other job's journal: left byte for byte, no store written",
            bytes_of(store + ".journal") == before and not os.path.exists(store))
    r = s.farm(other, store, extra=("--replace",))
    h.check("other job's journal: --replace discards it (exit 0, a warning naming kjob)",
            r.returncode == 0 and "--replace" in r.stderr and '"kjob"' in r.stderr,
            f"exit {r.returncode}: {r.stderr[-400:]}")


# ---- 4. unreadable journals, numbered --------------------------------------------------------------
def unreadable_journals(s):
    h = s.h
    job, store = s.job_and_store("unreadable", "u", validation=False)
    garbage = [b"not a journal, the first\n", b"not a journal, the second\n"]
    for i, g in enumerate(garbage, 1):
        open(store + ".journal", "wb").write(g)
        r = s.farm(job, store)
        h.check(f"unreadable journal {i}: exit 0, moved aside to .unreadable-{i}",
                r.returncode == 0 and f"moved aside to {store}.journal.unreadable-{i}" in r.stderr,
                f"exit {r.returncode}: {r.stderr[-400:]}")
    h.check("unreadable journals: both kept, byte for byte",
            [bytes_of(f"{store}.journal.unreadable-{i}") for i in (1, 2)] == garbage)


# ---- 5. report, replay and validate outputs ---------------------------------------------------------
def command_outputs(s):
    h = s.h
    _, store = s.farmed("links-cmd", "c", "outputs")
    if not store:
        return
    trace = os.path.join(s.jobs, "traces", "AzureLLMInferenceTrace_conv.csv")
    cluster = os.path.join(s.jobs, "clusters", "llama3-70b.json")
    runs = {"report": (("report", store, "--out", s.path("rep")), "rep",
                       (("report.md", b"# "), ("savings_decode.dat", b"#"))),
            "replay": (("replay", "--store", store, "--trace", trace, "--cluster", cluster, "--out", s.path("rp")),
                       "rp", (("summary.json", b"{"), ("requests_nodvfs.csv", b","))),
            "validate": (("validate", store, "--trace", trace, "--cluster", cluster, "--sample", "2", "--out",
                          s.path("val")), os.path.join("val", "links-cmd"), (("validation.md", b"# Validation"),))}
    for what, (args, d, files) in runs.items():
        os.makedirs(s.path(d), exist_ok=True)
        victims = {}
        for i, (name, _) in enumerate(files):
            kinds = ("symlink", "hard link")[::1 - 2 * i]
            victims[name] = [s.plant(s.path(d, name), kinds[0]), s.plant(s.path(d, name + ".tmp"), kinds[1])]
        r = s.run(*args)
        h.check(f"{what} --out: exit 0", r.returncode == 0, f"exit {r.returncode}: {r.stderr[-400:]}")
        for name, content in files:
            s.check_published(f"{what} --out: {name}", s.path(d, name), victims[name], content)
    # gnuplot.log is appended to: a link there is refused (a gnuplot that prints, so the
    # report writes its log)
    noisy = s.path("noisy-gnuplot")
    open(noisy, "w").write('#!/bin/sh\necho "a line for the log" >&2\nexec gnuplot "$@"\n')
    os.chmod(noisy, 0o755)
    victim = s.plant(s.path("rep", "gnuplot.log"), "symlink")
    r = s.run("report", store, "--out", s.path("rep"), "--gnuplot", noisy)
    h.check("report --out: a symbolic link at gnuplot.log is refused, its victim unchanged",
            r.returncode != 0 and "gnuplot.log" in r.stderr and bytes_of(victim) == VICTIM,
            f"exit {r.returncode}: {r.stderr[-400:]}")


# ---- 6. model import onto its input -----------------------------------------------------------------
def model_import(s):
    h = s.h
    config = s.path("qwen.json")
    shutil.copyfile(os.path.join(s.h.src, "tests", "fixtures", "hf", "qwen3-235b-a22b.json"), config)
    before = bytes_of(config)
    os.symlink(config, s.path("qwen-link.json"))
    for out in ("qwen.json", "./qwen.json", config, "qwen-link.json"):  # from tmp: one file, four spellings
        r = s.run("model", "import", "qwen.json", "-o", out)
        h.check(f"model import qwen.json -o {out}: refused (exit 2), the config unchanged",
                r.returncode == 2 and "--force" in r.stderr and bytes_of(config) == before,
                f"exit {r.returncode}: {r.stderr[-300:]}")
    r = s.run("model", "import", config, "-o", config, "--force")
    h.check("model import -o X --force: writes the model file",
            r.returncode == 0 and json.loads(bytes_of(config)).get("name") == "qwen", r.stderr[-300:])


def main():
    h = Harness(sys.argv[1], sys.argv[2])
    with tempfile.TemporaryDirectory(prefix="enpu-links-") as tmp:
        s = Links(h, tmp, sys.argv[3])
        for part in (farm_outputs, store_neighbours, other_jobs_journal, unreadable_journals, command_outputs,
                     model_import):
            part(s)
    h.finish()


if __name__ == "__main__":
    main()
