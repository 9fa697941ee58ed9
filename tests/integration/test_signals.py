#!/usr/bin/python3
"""A stop signal never kills a farm rank, whatever phase the farm is in.

`enpu farm` catches SIGTERM, SIGINT and SIGUSR1 on every rank from its start to its exit.
Each run here holds rank 0 at one phase boundary (ENPU_FARM_TEST_HOLD=PHASE: the farm
says "farm: test hold at PHASE" on stderr and waits for a stop signal), the test waits for
that line, sends SIGUSR1 to mpirun (which forwards it to every rank) and checks:

  start, setup, tasks   the farm checkpoints and exits 3 ("interrupted"); the same command
                        resumes and ends with the store an uninterrupted run makes;
  validation, summary   every task was done: the farm finishes (the job's validation
                        included) and exits 0 ("done"), says the signal came after the
                        work, the store equals the uninterrupted one, and a rerun finds
                        nothing to do (0 tasks).

One run without the hook is signalled when the validation prints its first line.
Two more wait for another writer's lock (held here with flock, as a farm holds it) and
are signalled while they wait (SIGUSR1 to mpirun, SIGTERM to a one-rank farm): exit 3 at
once, "stopped by signal", nothing written; with the lock free the same command farms
the reference store.
`enpu validate` follows the same rules: signalled (SIGTERM, SIGINT, SIGUSR1) while it
waits for a held lock, or held mid-validation (ENPU_VALIDATE_TEST_HOLD=resim or publish)
and signalled there, it exits 3 with the store byte for byte as it was and no report, and
the same command then validates; held after it published (report), it finishes (exit 0)
and says the signal came after.
The worker ranks are in their last barrier during validation and summary: before the
signals were caught for the whole life of a rank, rank 1 died of SIGUSR1 there and
mpirun exited 138 (a Slurm job FAILED with a complete store).
Usage: test_signals.py ENPU SOURCE_DIR
Every wait is for a line or an exit; bounds only guard against hangs."""
import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading

from harness import Harness
from farm_harness import ENV, summary, tasks_of, wait_for

HANG_S = 1500


def write_job(h, tmp):
    src = os.path.join(h.src, "jobs")
    job = json.load(open(os.path.join(src, "demo.json")))
    for k in ("model", "chip", "cluster"):
        job[k] = os.path.join(src, job[k])
    job["validation"] = dict(job["validation"], trace=os.path.join(src, job["validation"]["trace"]), sample=1)
    job.update(name="sig", store=os.path.join(tmp, "unused.h5"), policies=["nodvfs", "enpu-all"],
               phases={"prefill": {"batch": [1], "seq": [1024]}, "decode": {"batch": [8], "seq": [2048]}})
    path = os.path.join(tmp, "sig.json")
    json.dump(job, open(path, "w"), indent=2)
    return path


class Farm:
    """One `enpu farm` (under mpirun for np > 1) whose stderr is read as it comes."""

    def __init__(self, h, tmp, job, store, np_, hold=None, extra=()):
        cmd = [h.enpu, "farm", job, "--store", store, "--json", "--results", os.path.join(tmp, "res"),
               "--progress-s", "0.2", *extra]
        env = dict(ENV, ENPU_FARM_TEST_HOLD=hold) if hold else ENV
        self.p = subprocess.Popen(["mpirun", "-np", str(np_), *cmd] if np_ > 1 else cmd, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, env=env, cwd=tmp, start_new_session=True)
        self.err = []
        self.reader = threading.Thread(target=lambda: self.err.extend(self.p.stderr), daemon=True)
        self.reader.start()

    def lines(self, text):
        return sum(text in line for line in list(self.err))

    def finish(self):
        out = self.p.stdout.read()
        self.p.wait(timeout=HANG_S)
        self.reader.join(timeout=HANG_S)
        return self.p.returncode, out, "".join(self.err)


def run_plain(h, tmp, job, store, np_=1):
    f = Farm(h, tmp, job, store, np_)
    return f.finish()


def same(h, a, b):
    r = h.run("store", "diff", a, b)
    return r.returncode == 0, r.stdout[-400:] + r.stderr[-400:]


def signal_while_locked(h, who, store, sig, start):
    """With store's lock held here (as another writer holds it), start() a Farm or Validate,
    check that `who` waits for the lock naming its holder, and send it sig there; its
    (exit status, stdout, stderr)."""
    with open(store + ".lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        held.write(f"pid {os.getpid()} on test since now: test_signals.py\n")
        held.flush()
        f = start()
        waiting = wait_for(lambda: f.lines("is being written by") >= 1 or f.p.poll() is not None, HANG_S,
                           0.05) and f.p.poll() is None
        h.check(f"{who} waits, naming the holder", waiting, "".join(f.err)[-600:])
        if waiting:
            f.p.send_signal(sig)
        return f.finish()


def lock_wait(h, tmp, job, ref):
    """A farm waiting for another writer's lock stops at a stop signal, not at --lock-wait."""
    for np_, sig in ((2, signal.SIGUSR1), (1, signal.SIGTERM)):
        name = f"np {np_}, {signal.Signals(sig).name} while waiting for the lock"
        store = os.path.join(tmp, f"locked-{np_}.h5")
        rc, out, err = signal_while_locked(h, f"{name}: the farm", store, sig,
                                           lambda: Farm(h, tmp, job, store, np_, extra=("--lock-wait", str(HANG_S))))
        print(f"     {name}: exit {rc}")
        h.check(f"{name}: exit 3, stopped by the signal (not the {HANG_S} s wait)",
                rc == 3 and "stopped by signal" in err and "rerun the same command" in err, f"exit {rc}: {err[-600:]}")
        h.check(f"{name}: nothing written", not os.path.exists(store) and not os.path.exists(store + ".journal"))
        rc2, out2, err2 = run_plain(h, tmp, job, store, np_)
        h.check(f"{name}: with the lock free the same command farms the store", rc2 == 0, err2[-400:])
        h.check(f"{name}: identical to the uninterrupted run", *same(h, ref, store))


class Validate(Farm):
    """One `enpu validate` of store (with the test's job), its stderr read as it comes."""

    def __init__(self, h, tmp, job, store, hold=None, extra=()):
        src = os.path.join(h.src, "jobs")
        cmd = [h.enpu, "validate", store, "--job", job, "--trace",
               os.path.join(src, "traces", "AzureLLMInferenceTrace_conv.csv"), "--cluster",
               os.path.join(src, "clusters", "llama3-70b.json"), "--sample", "1", "--out", os.path.join(tmp, "vres"),
               *extra]
        env = dict(ENV, ENPU_VALIDATE_TEST_HOLD=hold) if hold else ENV
        self.p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp,
                                  start_new_session=True)
        self.err = []
        self.reader = threading.Thread(target=lambda: self.err.extend(self.p.stderr), daemon=True)
        self.reader.start()


def validate_signals(h, tmp, job, ref):
    """`enpu validate` follows the farm's signal rules: a stop signal while it waits for the
    lock or while it validates exits 3 with the store as it was (it publishes at its end);
    one after it published stops nothing."""
    report = os.path.join(tmp, "vres", "sig", "validation.md")
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1):
        name = f"validate, {signal.Signals(sig).name} while waiting for the lock"
        store = os.path.join(tmp, f"v-locked-{sig}.h5")
        shutil.copyfile(ref, store)
        before = open(store, "rb").read()
        rc, out, err = signal_while_locked(h, f"{name}: it", store, sig,
                                           lambda: Validate(h, tmp, job, store, extra=("--lock-wait", str(HANG_S))))
        print(f"     {name}: exit {rc}")
        h.check(f"{name}: exit 3, stopped by signal {int(sig)} (not the {HANG_S} s wait)",
                rc == 3 and f"stopped by signal {int(sig)}" in err, f"exit {rc}: {err[-600:]}")
        h.check(f"{name}: the store as it was, no report", open(store, "rb").read() == before
                and not os.path.exists(report))
    for phase, sig in (("resim", signal.SIGTERM), ("publish", signal.SIGINT), ("report", signal.SIGUSR1)):
        name = f"validate, {signal.Signals(sig).name} at {phase}"
        store = os.path.join(tmp, f"v-{phase}.h5")
        shutil.copyfile(ref, store)
        before = open(store, "rb").read()
        v = Validate(h, tmp, job, store, hold=phase)
        held = wait_for(lambda: v.lines(f"validate: test hold at {phase}") >= 1 or v.p.poll() is not None, HANG_S,
                        0.05) and v.p.poll() is None
        h.check(f"{name}: it reached the phase", held, "".join(v.err)[-600:])
        if held:
            v.p.send_signal(sig)
        rc, out, err = v.finish()
        print(f"     {name}: exit {rc}")
        if phase == "report":  # published already: it finishes
            h.check(f"{name}: exit 0, the validation finished, saying the signal came after it published",
                    rc == 0 and out.startswith("PASS") and "came after the store was published" in err
                    and os.path.exists(report), f"exit {rc}: {err[-600:]}")
        else:
            h.check(f"{name}: exit 3, nothing published: the store as it was, no report",
                    rc == 3 and f"stopped by signal {int(sig)}" in err and "store is as it was" in err
                    and open(store, "rb").read() == before and not os.path.exists(report),
                    f"exit {rc}: {err[-600:]}")
            v = Validate(h, tmp, job, store)
            rc, out, err = v.finish()
            h.check(f"{name}: the same command, rerun, validates (exit 0)", rc == 0 and out.startswith("PASS"),
                    f"exit {rc}: {err[-400:]}")
        if os.path.exists(report):
            os.unlink(report)


def main():
    h = Harness(os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]))
    tmp = tempfile.mkdtemp(prefix="enpu-signals-")
    job = write_job(h, tmp)
    ref = os.path.join(tmp, "ref.h5")
    rc, out, err = run_plain(h, tmp, job, ref, np_=2)
    if not h.check("reference farm (with its validation) exit 0", rc == 0, err[-600:]):
        h.finish()
    # Without the hook: the signal as the validation says its first line (how the Slurm
    # requeue test met it), rank 1 waiting in its last barrier.
    store = os.path.join(tmp, "live.h5")
    f = Farm(h, tmp, job, store, 2)
    seen = wait_for(lambda: f.lines("validate: ") >= 1 or f.p.poll() is not None, HANG_S, 0.01)
    if seen and f.p.poll() is None:
        f.p.send_signal(signal.SIGUSR1)
    rc, out, err = f.finish()
    print(f"     np 2, SIGUSR1 during the validation: exit {rc}")
    h.check("np 2, SIGUSR1 during the validation (no hook): exit 0, no rank killed by signal 10",
            rc == 0 and summary(out).get("outcome") == "done" and "exited on signal" not in err,
            f"exit {rc}: {err[-600:]}")
    h.check("np 2, SIGUSR1 during the validation: store identical to the uninterrupted run", *same(h, ref, store))
    lock_wait(h, tmp, job, ref)
    validate_signals(h, tmp, job, ref)
    for np_ in (2, 1):
        for phase in ("start", "setup", "tasks", "validation", "summary"):
            if np_ == 1 and phase in ("start", "setup"):
                continue  # the same code path as 2 ranks; the one-rank loop differs in tasks
            name = f"np {np_}, SIGUSR1 at {phase}"
            store = os.path.join(tmp, f"{phase}-{np_}.h5")
            f = Farm(h, tmp, job, store, np_, hold=phase)
            # Every rank holds at start (each must have caught the signals); rank 0 elsewhere.
            want = np_ if phase == "start" else 1
            held = wait_for(lambda: f.lines(f"farm: test hold at {phase}") >= want or f.p.poll() is not None,
                            HANG_S, 0.05) and f.p.poll() is None
            h.check(f"{name}: the farm reached the phase", held, "".join(f.err)[-600:])
            if held:
                f.p.send_signal(signal.SIGUSR1)
            rc, out, err = f.finish()
            late = phase in ("validation", "summary")
            outcome = summary(out).get("outcome")
            print(f"     {name}: exit {rc}, outcome {outcome}")
            if late:
                h.check(f"{name}: exit 0, done (every task was done; no rank killed)",
                        rc == 0 and outcome == "done", f"exit {rc}: {err[-600:]}")
                h.check(f"{name}: the farm says the signal came after the work",
                        "came after every task was done" in err, err[-400:])
                h.check(f"{name}: the job's validation ran",
                        os.path.exists(os.path.join(tmp, "res", "sig", "validation.md")), err[-300:])
                h.check(f"{name}: store identical to the uninterrupted run", *same(h, ref, store))
                rc2, out2, err2 = run_plain(h, tmp, job, store, np_)
                h.check(f"{name}: a rerun (a requeue) finds nothing to do",
                        rc2 == 0 and tasks_of(out2).get("total") == 0, f"exit {rc2}: {out2[-300:]}")
            else:
                h.check(f"{name}: exit 3, interrupted (no rank killed)",
                        rc == 3 and outcome == "interrupted", f"exit {rc}: {err[-600:]}")
                rc2, out2, err2 = run_plain(h, tmp, job, store, np_)
                h.check(f"{name}: the same command resumes to exit 0", rc2 == 0, err2[-400:])
                h.check(f"{name}: resume identical to the uninterrupted run", *same(h, ref, store))
            report = os.path.join(tmp, "res", "sig", "validation.md")
            if os.path.exists(report):
                os.unlink(report)  # the next run's own
    shutil.rmtree(tmp, ignore_errors=True)
    h.finish()


if __name__ == "__main__":
    main()
