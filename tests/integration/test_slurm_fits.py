#!/usr/bin/python3
"""The Slurm scripts refuse a request that cannot fit instead of pending forever, and
the local Slurm is started and stopped by hand through one tool; no daemon is started
here (fake `sinfo` and `sbatch` on PATH; the real local Slurm is integration_slurm's).

Usage: /usr/bin/python3 test_slurm_fits.py ENPU_BINARY SOURCE_DIR

1. slurm/submit.sh --ntasks=4 on a partition of 2 CPUs (the default one): exit 2, the
   message names --ntasks=4, the partition and its 2 CPUs, and sbatch is not called;
   --ntasks=2, -n 2 and -p big --ntasks=4 (64 CPUs) reach sbatch with the arguments as
   given, plus --output under the job's results folder (RESULTS/<job>/, RESULTS/ for the
   models array) unless -o was given; a job file enpu refuses is not submitted (exit 2);
   without sinfo's answer it submits as sbatch would.
2. tools/slurm_local.py (make slurm-local / slurm-local-stop): stop and status when
   nothing runs say so (exit 0 and 1), and an unknown command is a usage error (2); the
   Makefile's targets call it with one state directory.
"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Harness  # noqa: E402

h = Harness("", os.path.abspath(sys.argv[2]))
ENPU = os.path.abspath(sys.argv[1])
SUBMIT = os.path.join(h.src, "slurm", "submit.sh")


def fakes(tmp, sinfo_lines):
    bin_dir = os.path.join(tmp, "bin")
    os.makedirs(bin_dir, exist_ok=True)
    log = os.path.join(tmp, "sbatch.log")
    with open(os.path.join(bin_dir, "sinfo"), "w") as f:
        f.write("#!/bin/sh\n" + "".join(f"echo '{line}'\n" for line in sinfo_lines))
    with open(os.path.join(bin_dir, "sbatch"), "w") as f:
        f.write(f'#!/bin/sh\necho "$*" >> {log}\necho 42\n')
    for name in ("sinfo", "sbatch"):
        os.chmod(os.path.join(bin_dir, name), 0o755)
    return dict(os.environ, PATH=bin_dir + ":" + os.environ["PATH"]), log


def submit(env, *args):
    return subprocess.run([SUBMIT, *args], cwd=h.src, env=dict(env, ENPU_BIN=ENPU), capture_output=True, text=True)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        env, log = fakes(tmp, ["debug* 0/2/0/2", "big 0/64/0/64"])
        r = submit(env, "--ntasks=4", "slurm/farm.sbatch", "jobs/demo.json")
        h.check("submit --ntasks=4 on a 2-CPU partition: exit 2 naming the request, the partition and its CPUs",
                r.returncode == 2 and "--ntasks=4 does not fit partition debug" in r.stderr and "2 CPUs" in r.stderr
                and "PENDING" in r.stderr, f"exit {r.returncode}: {r.stderr}")
        h.check("  ... and sbatch is not called", not os.path.exists(log))
        runs = os.path.join(tmp, "runs")
        for args in (["--ntasks=2"], ["-n", "2"], ["-p", "big", "--ntasks=4"], ["--partition=big", "-n4"]):
            r = submit(env, *args, "--time=1:00", "slurm/farm.sbatch", "jobs/demo.json", "--results", runs)
            got = open(log).read().splitlines()[-1] if os.path.exists(log) else ""
            h.check(f"submit {' '.join(args)}: fits, sbatch gets the arguments as given, the log in "
                    "RESULTS/<job>/", r.returncode == 0 and got == " ".join(
                        [*args, "--time=1:00", f"--output={runs}/demo/enpu-farm-%j.out", "slurm/farm.sbatch",
                         "jobs/demo.json", "--results", runs]) and os.path.isdir(os.path.join(runs, "demo")),
                    f"exit {r.returncode}: {r.stderr} / {got}")
        r = submit(env, "-o", "x-%j.out", "slurm/regen.sbatch", "jobs/demo.json")
        got = open(log).read().splitlines()[-1] if os.path.exists(log) else ""
        h.check("submit -o FILE: the log where the user said", r.returncode == 0
                and got == "-o x-%j.out slurm/regen.sbatch jobs/demo.json", f"{r.stderr} / {got}")
        r = submit(env, "slurm/models-array.sbatch", "a.json", "--", "--results", runs)
        got = open(log).read().splitlines()[-1] if os.path.exists(log) else ""
        h.check("submit models-array: the logs in RESULTS/", r.returncode == 0 and got.startswith(
            f"--output={runs}/enpu-array-%A_%a.out slurm/models-array.sbatch"), f"{r.stderr} / {got}")
        before = open(log).read()
        r = submit(env, "slurm/farm.sbatch", "jobs/nope.json", "--results", runs)
        h.check("submit of a job file enpu cannot read: exit 2, not submitted",
                r.returncode == 2 and "nope.json" in r.stderr and open(log).read() == before, r.stderr)
        env, log = fakes(os.path.join(tmp, "mute"), [])
        r = submit(env, "--ntasks=4", "slurm/farm.sbatch", "jobs/demo.json", "--results", runs)
        h.check("submit when sinfo says nothing: submitted as sbatch would", r.returncode == 0 and os.path.exists(log),
                r.stderr)
        tool = os.path.join(h.src, "tools", "slurm_local.py")
        state = os.path.join(tmp, "state")
        stop = subprocess.run([tool, "stop", "--state", state], capture_output=True, text=True)
        status = subprocess.run([tool, "status", "--state", state], capture_output=True, text=True)
        bad = subprocess.run([tool, "nope"], capture_output=True, text=True)
        h.check("slurm_local.py stop/status with nothing running: exit 0 / 1, saying so; nope: exit 2",
                stop.returncode == 0 and "not running" in stop.stdout and status.returncode == 1
                and bad.returncode == 2 and "start|stop" in bad.stderr, stop.stdout + status.stdout + bad.stderr)
        mk = open(os.path.join(h.src, "Makefile")).read()
        h.check("make slurm-local / slurm-local-stop call it with one state directory",
                "tools/slurm_local.py start --state $(BUILD)/slurm-local" in mk
                and "tools/slurm_local.py stop --state $(BUILD)/slurm-local" in mk)
    h.finish()


main()
