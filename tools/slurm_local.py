#!/usr/bin/python3
"""slurm_local.py — start or stop, by hand, the one-node Slurm the tests use
(tests/integration/slurm/slurm_cluster.py: LocalSlurm, munged + slurmctld + slurmd on
localhost), sized to this machine (CPUs = its cores), so that the sbatch
examples of docs/cluster.md can be tried without a cluster. `make slurm-local` / `make slurm-local-stop`.

Usage: tools/slurm_local.py start|stop|status [--state DIR]

start: a detached keeper process starts the daemons (they die with it, as in the tests)
and writes DIR/slurm-local.json (its pid, slurm.conf's path); this command waits for
the cluster to be up, then prints the `export SLURM_CONF=...` line the Slurm commands
need. stop: SIGTERM to the keeper, which cancels the jobs and stops the daemons (by
their pids) and removes its directory. Exit status: 0 ok, 1 failed (the message says
why), 2 usage, 4 Slurm cannot run here (not installed, not root).
"""
import json
import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration", "slurm"))
from slurm_cluster import LocalSlurm, SlurmUnavailable  # noqa: E402

WAIT_S = 120  # a guard against a keeper that never reports, not a speed assumption


def state_file(state_dir):
    return os.path.join(state_dir, "slurm-local.json")


def read_state(state_dir):
    try:
        with open(state_file(state_dir)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except OSError:
        return False


def keep(state_dir):
    """The keeper: start the cluster, record it, hold it until SIGTERM."""
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    slurm = LocalSlurm(cpus=os.cpu_count() or 1)
    try:
        slurm.start()
    except SlurmUnavailable as e:
        write(state_dir, {"pid": os.getpid(), "error": str(e), "status": 4})
        return 4
    write(state_dir, {"pid": os.getpid(), "conf": slurm.conf, "cpus": slurm.cpus, "root": slurm.root})
    while not stop:
        signal.pause()
    slurm.stop()
    os.unlink(state_file(state_dir))
    return 0


def write(state_dir, doc):
    tmp = state_file(state_dir) + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f)
    os.replace(tmp, state_file(state_dir))


def start(state_dir):
    st = read_state(state_dir)
    if st and alive(st["pid"]) and "conf" in st:
        print(f"slurm-local: already running ({st['cpus']} CPUs)\nexport SLURM_CONF={st['conf']}")
        return 0
    os.makedirs(state_dir, exist_ok=True)
    if os.path.exists(state_file(state_dir)):
        os.unlink(state_file(state_dir))
    log = open(os.path.join(state_dir, "slurm-local.log"), "w")
    keeper = subprocess.Popen([sys.executable, os.path.abspath(__file__), "keep", "--state", state_dir],
                              stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline and read_state(state_dir) is None and keeper.poll() is None:
        time.sleep(0.2)
    st = read_state(state_dir)
    if st and "conf" in st:
        print(f"slurm-local: one node, {st['cpus']} CPUs, partition debug (keeper pid {st['pid']}); "
              f"stop it with make slurm-local-stop\nexport SLURM_CONF={st['conf']}")
        return 0
    print(f"slurm-local: could not start: {(st or {}).get('error', 'see ' + log.name)}", file=sys.stderr)
    if keeper.poll() is None:
        keeper.terminate()
    return (st or {}).get("status", 1)


def stop(state_dir):
    st = read_state(state_dir)
    if not st or not alive(st["pid"]):
        print("slurm-local: not running")
        return 0
    os.kill(st["pid"], signal.SIGTERM)
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline and alive(st["pid"]):
        time.sleep(0.2)
    if alive(st["pid"]):
        print(f"slurm-local: keeper {st['pid']} did not stop", file=sys.stderr)
        return 1
    print("slurm-local: stopped")
    return 0


def main(argv):
    state_dir = os.path.abspath(argv[argv.index("--state") + 1]) if "--state" in argv else os.path.join(
        HERE, "..", "build", "slurm-local")
    cmd = argv[1] if len(argv) > 1 else ""
    if cmd == "start":
        return start(state_dir)
    if cmd == "stop":
        return stop(state_dir)
    if cmd == "keep":
        return keep(state_dir)
    if cmd == "status":
        st = read_state(state_dir)
        up = bool(st and alive(st["pid"]) and "conf" in st)
        print(f"export SLURM_CONF={st['conf']}" if up else "slurm-local: not running")
        return 0 if up else 1
    print(__doc__.split("\n\n")[1], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
