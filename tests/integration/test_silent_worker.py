#!/usr/bin/python3
"""A worker that stops answering (a frozen node, a stopped process, a partition without a
reset) does not hang the farm: rank 0 calls it silent after --worker-timeout, says so on
the log, hands its tasks to the other workers and ignores its late results.

Under the real `mpirun -np 3`, --batch-s 0 (so every worker gets a batch) and
--worker-timeout 2 (the tasks take milliseconds: a margin of 100x and more), the test
hook ENPU_FARM_TEST_STOP_RANK makes worker 2 stop when its first batch comes:
  - stopped (R: SIGSTOP, it never answers): exit 1, the log names rank 2 as overdue and
    as still silent at the end, the stores are complete (equal to an undisturbed run's),
    each task is in the task log once, no journal record is left, a rerun has nothing to
    do, and no stopped rank is left behind (mpirun's abort killed it);
  - late (R:SEC, it sleeps 7 s against --worker-timeout 5, then answers: 2 s of margin
    on each side of the rule, overdue after the timeout and waited for one more from the
    end of the work): exit 0, the log says it was overdue and answered after all, the
    store equals the undisturbed run's, each task counted and logged once although two
    ranks computed some of them, the summary's duplicates as the log's;
  - alone (-np 2, the only worker stopped): no task can run: exit 1, the summary says
    interrupted, and the same command computes the rest into the same store;
  - interrupted (stopped as above, and SIGUSR1 to mpirun, as Slurm's warning, while rank
    0 holds right after calling rank 2 silent: ENPU_FARM_TEST_HOLD=silent): the silent
    rank does not hide the interruption: exit 3 (what slurm/enpu-slurm.sh requeues on),
    and the same command completes the store;
  - full disk (stopped as above, the store on an 8 KiB tmpfs, a checkpoint every 0.2 s,
    --worker-timeout 5: the first checkpoint fails while rank 2 is stopped and not yet
    called silent): rank 0 waits for rank 2's batch at most its timeout instead of for
    ever, then exits 4 (the environment), the error printed before the silent note.
    Skipped when this process may not mount a tmpfs;
  - stall (no rank stopped; rank 0 itself stalls 4 s after its first result, as a long
    checkpoint would, ENPU_FARM_TEST_STALL=4, --worker-timeout 2): the workers' answers
    waiting for it do not make them silent: exit 0, nothing called overdue.
Every wait is for an exit; bounds only guard against hangs.
Usage: test_silent_worker.py ENPU SOURCE_DIR"""
import csv
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from farm_harness import (ENV, farm_cmd, journal_kinds, same, small_demo_variant, summary,  # noqa: E402
                          tasks_of, wait_for)
from harness import Harness  # noqa: E402

HANG_S = 300
OPTS = ("--batch-s", "0", "--worker-timeout", "2")


def ranks_of(store):
    """Pids of the processes whose command line names the store (the farm's ranks)."""
    pids = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if store.encode() in f.read().split(b"\0"):
                    pids.append(int(pid))
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            pass
    return pids


def kill_ranks(store):
    for pid in ranks_of(store):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def run_farm(h, tmp, job, store, stop=None, log=None, np_=3, opts=OPTS):
    env = dict(ENV, ENPU_FARM_TEST_STOP_RANK=stop) if stop else ENV
    extra = (*opts, *(("--task-log", log) if log else ()))
    return subprocess.run(farm_cmd(h, np_, store, tmp, job=job, extra=extra), capture_output=True, text=True, env=env,
                          cwd=tmp, timeout=HANG_S, start_new_session=True)


def shared_checks(h, name, r, ref, store, log, status):
    """What both cases promise: the exit status, rank 2 called overdue, every task done
    and in the task log once (a duplicate result is not taken), the store equal to an
    undisturbed run's, no rank left behind (the stopped one killed by mpirun's abort)."""
    err = r.stderr
    h.check(f"{name}: exit {status}", r.returncode == status, f"exit {r.returncode}: {err[-800:]}")
    h.check(f"{name}: the log says rank 2 has not answered and its tasks go to the others",
            "farm: rank 2 has not answered for" in err and "its tasks go to the other workers" in err, err[-800:])
    t = tasks_of(r.stdout)
    h.check(f"{name}: the summary says every task done", t.get("done") == t.get("total") and t.get("total"), t)
    rows = list(csv.DictReader(open(log))) if os.path.exists(log) else []
    h.check(f"{name}: the task log has one line per task", len(rows) == t.get("total"), f"{len(rows)} lines, {t}")
    h.check(f"{name}: store identical to an undisturbed run's", *same(h, ref, store))
    h.check(f"{name}: no rank is left behind", wait_for(lambda: not ranks_of(store), 30), ranks_of(store))


def stopped(h, tmp, job, ref):
    store, log = os.path.join(tmp, "stopped.h5"), os.path.join(tmp, "stopped.csv")
    try:
        r = run_farm(h, tmp, job, store, stop="2", log=log)
        shared_checks(h, "stopped", r, ref, store, log, 1)
        h.check("stopped: the log names rank 2 as still silent at the end, the stores complete",
                "farm: rank 2 is still silent: the other ranks computed its tasks and the stores are complete"
                in r.stderr, r.stderr[-800:])
        h.check("stopped: no journal record is left (the last checkpoint took them)", journal_kinds(store) == [],
                journal_kinds(store))
        again = subprocess.run(farm_cmd(h, 3, store, tmp, job=job), capture_output=True, text=True, env=ENV, cwd=tmp,
                               timeout=HANG_S)
        h.check("stopped: a rerun exits 0 with nothing to do", again.returncode == 0
                and tasks_of(again.stdout).get("total") == 0, f"exit {again.returncode}: {again.stdout[-300:]}")
        h.check("stopped: the rerun leaves the store as it was", *same(h, ref, store))
    finally:
        kill_ranks(store)


def late(h, tmp, job, ref):
    store, log = os.path.join(tmp, "late.h5"), os.path.join(tmp, "late.csv")
    try:
        # Overdue after 5 s (when 10 x the longest batch stays under that: a margin of 2 s
        # before the 7 s sleep ends); rank 0 waits one more timeout from the end of the work
        # (which is past 5 s): it answers at 7 s, 3 s before that.
        r = run_farm(h, tmp, job, store, stop="2:7", log=log, opts=("--batch-s", "0", "--worker-timeout", "5"))
        shared_checks(h, "late", r, ref, store, log, 0)
        dups = re.search(r"farm: rank 2 answered after all \(results the other ranks had sent first, ignored: (\d+)\)",
                         r.stderr)
        h.check("late: rank 2 answered after all, its results the other worker had sent first ignored (1 or more)",
                dups and int(dups.group(1)) >= 1, r.stderr[-800:])
        # The log counts the batch that ended the silence, the summary every duplicate (the
        # rank's second batch too).
        h.check("late: the summary counts the duplicates, at least those the log names", dups
                and (summary(r.stdout).get("duplicates") or 0) >= int(dups.group(1)),
                summary(r.stdout).get("duplicates"))
        h.check("late: nothing is still silent at the end", "still silent" not in r.stderr, r.stderr[-800:])
    finally:
        kill_ranks(store)


def resumes(h, name, tmp, job, ref, store, np_):
    """No rank left behind, and the same command computes the rest into the store."""
    h.check(f"{name}: no rank is left behind", wait_for(lambda: not ranks_of(store), 30), ranks_of(store))
    again = subprocess.run(farm_cmd(h, np_, store, tmp, job=job), capture_output=True, text=True, env=ENV, cwd=tmp,
                           timeout=HANG_S)
    h.check(f"{name}: the same command then exits 0", again.returncode == 0, again.stderr[-800:])
    h.check(f"{name}: store identical to an undisturbed run's", *same(h, ref, store))


def alone(h, tmp, job, ref):
    """The only worker stops: no task can run, so rank 0 checkpoints and ends (exit 1,
    interrupted); the same command then computes the rest."""
    store = os.path.join(tmp, "alone.h5")
    try:
        r = run_farm(h, tmp, job, store, stop="1", np_=2)
        h.check("alone: exit 1", r.returncode == 1, f"exit {r.returncode}: {r.stderr[-800:]}")
        h.check("alone: the log says every worker is silent and names rank 1",
                "every worker is silent" in r.stderr and "farm: rank 1 is still silent: the stores are checkpointed"
                in r.stderr, r.stderr[-800:])
        h.check("alone: the summary says interrupted", summary(r.stdout).get("outcome") == "interrupted",
                r.stdout[-300:])
        resumes(h, "alone", tmp, job, ref, store, 2)
    finally:
        kill_ranks(store)


def interrupted(h, tmp, job, ref):
    store, err_path = os.path.join(tmp, "interrupted.h5"), os.path.join(tmp, "interrupted.err")
    env = dict(ENV, ENPU_FARM_TEST_STOP_RANK="2", ENPU_FARM_TEST_HOLD="silent")
    try:
        with open(err_path, "w") as err, subprocess.Popen(farm_cmd(h, 3, store, tmp, job=job, extra=OPTS),
                                                          stdout=subprocess.PIPE, stderr=err, text=True, env=env,
                                                          cwd=tmp, start_new_session=True) as p:
            held = wait_for(lambda: "farm: test hold at silent" in open(err_path).read(), HANG_S)
            h.check("interrupted: rank 0 holds after calling rank 2 silent", held, open(err_path).read()[-800:])
            p.send_signal(signal.SIGUSR1)
            out, _ = p.communicate(timeout=HANG_S)
        log = open(err_path).read()
        h.check("interrupted: exit 3 (interrupted), not 1", p.returncode == 3, f"exit {p.returncode}: {log[-800:]}")
        h.check("interrupted: the summary says interrupted", summary(out).get("outcome") == "interrupted", out[-300:])
        h.check("interrupted: the log names rank 2 as still silent and the status",
                "farm: rank 2 is still silent: the stores are checkpointed and the same command computes the rest; "
                "MPI cannot end with a silent rank, so the job ends with exit status 3" in log, log[-800:])
        resumes(h, "interrupted", tmp, job, ref, store, 3)
    finally:
        kill_ranks(store)


def full_disk(h, tmp, job):
    mnt = os.path.join(tmp, "small")
    os.mkdir(mnt)
    m = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8k", "tmpfs", mnt], capture_output=True, text=True)
    if m.returncode != 0:
        print(f"SKIP full disk: cannot mount a tmpfs ({m.stderr.strip()})")
        return
    store = os.path.join(mnt, "full.h5")
    try:
        cmd = farm_cmd(h, 3, store, tmp, job=job, extra=("--batch-s", "0", "--worker-timeout", "5", "--checkpoint-s",
                                                         "0.2", "--results", mnt))
        r = subprocess.run(cmd, capture_output=True, text=True, env=dict(ENV, ENPU_FARM_TEST_STOP_RANK="2"), cwd=tmp,
                           timeout=HANG_S, start_new_session=True)
        err = r.stderr
        h.check("full disk: exit 4 (the environment), not a hang nor 1", r.returncode == 4,
                f"exit {r.returncode}: {err[-800:]}")
        h.check("full disk: rank 0 gave up on rank 2's batch", "farm: rank 2 has not answered for" in err
                and "the run stops without it" in err, err[-800:])
        full, note = err.find("No space left on device"), err.find("farm: rank 2 is still silent: the run stopped on "
                                                                   "the error above")
        h.check("full disk: the error, then the silent note that refers to it", 0 <= full < note, err[-800:])
        h.check("full disk: no rank is left behind", wait_for(lambda: not ranks_of(store), 30), ranks_of(store))
    finally:
        kill_ranks(store)
        subprocess.run(["umount", mnt], capture_output=True)


def stall(h, tmp, job, ref):
    store = os.path.join(tmp, "stall.h5")
    try:
        r = subprocess.run(farm_cmd(h, 3, store, tmp, job=job, extra=OPTS), capture_output=True, text=True,
                           env=dict(ENV, ENPU_FARM_TEST_STALL="4"), cwd=tmp, timeout=HANG_S, start_new_session=True)
        h.check("stall: exit 0", r.returncode == 0, f"exit {r.returncode}: {r.stderr[-800:]}")
        h.check("stall: no worker is called silent for rank 0's own stall", "has not answered" not in r.stderr,
                r.stderr[-800:])
        h.check("stall: store identical to an undisturbed run's", *same(h, ref, store))
    finally:
        kill_ranks(store)


def main():
    h = Harness(os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]))
    tmp = tempfile.mkdtemp(prefix="enpu-silent-")
    job = small_demo_variant(h, tmp, "silent")
    ref = os.path.join(tmp, "ref.h5")
    r = run_farm(h, tmp, job, ref)
    h.check("reference: exit 0, nothing overdue", r.returncode == 0 and "has not answered" not in r.stderr,
            r.stderr[-800:])
    stopped(h, tmp, job, ref)
    late(h, tmp, job, ref)
    alone(h, tmp, job, ref)
    interrupted(h, tmp, job, ref)
    full_disk(h, tmp, job)
    stall(h, tmp, job, ref)
    shutil.rmtree(tmp)
    h.finish()


if __name__ == "__main__":
    main()
