"""Workers need no file system: rank 0 reads the job, model, chip, cluster and power-table
files and sends their bytes to the workers, which load the job from those bytes alone. A
cluster's worker nodes may not see the job's directory (node-local /tmp, a directory that
is not exported) or may hold other files under the same names.

Under the real `mpirun`, rank 0 runs as usual and the two workers start through a wrapper
that gives each its own mount namespace with a tmpfs over the job's input directory:
  - hidden: the directory is empty on the workers;
  - other: the directory holds a different model (fewer layers) under the same names.
Both farms must end with the store of a one-rank farm (`enpu store diff` exit 0).
Skipped (exit 77) when this process may not create a mount namespace (not root).
Usage: test_farm_nofs.py ENPU SOURCE_DIR"""
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from farm_harness import ENV, farm_cmd, same  # noqa: E402
from harness import Harness  # noqa: E402

# A worker's command: in a mount namespace of its own, a tmpfs over $1 (filled from $2
# when that is not empty), then the farm.
WRAPPER = """#!/bin/sh
hide=$1 fill=$2
shift 2
exec unshare --mount --propagation private -- sh -c '
  mount -t tmpfs tmpfs "$0" || exit 97
  [ -z "$1" ] || cp -r "$1"/. "$0"/ || exit 98
  shift
  exec "$@"' "$hide" "$fill" "$@"
"""


def write_inputs(src, root, layers=None):
    """The shipped model, chip (with its power tables) and cluster under root/, and a small
    job naming them relatively; a model with `layers` instead of the shipped count."""
    for sub in ("models", "chips", "clusters", "power"):
        if os.path.isdir(os.path.join(src, "jobs", sub)):
            shutil.copytree(os.path.join(src, "jobs", sub), os.path.join(root, sub))
    if layers is not None:
        path = os.path.join(root, "models", "llama3-70b.json")
        model = json.load(open(path))
        model["layers"] = layers
        json.dump(model, open(path, "w"), indent=2)
    job = {"name": "nofs", "model": "models/llama3-70b.json", "chip": "chips/tpuv5p.json",
           "cluster": "clusters/llama3-70b.json", "store": "plans.h5",
           "phases": {"prefill": {"batch": [1], "seq": [1024]}, "decode": {"batch": [8], "seq": [2048]}},
           "slacks": [0, 0.05], "policies": ["nodvfs", "enpu-all"], "moe": {"capacity_factor": "worst"}}
    path = os.path.join(root, "nofs.json")
    json.dump(job, open(path, "w"), indent=2)
    return path


def main():
    h = Harness(os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]))
    probe = subprocess.run(["unshare", "--mount", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        print(f"SKIP: cannot create a mount namespace ({probe.stderr.strip()})")
        sys.exit(77)
    tmp = tempfile.mkdtemp(prefix="enpu-nofs-")
    inputs, other = os.path.join(tmp, "in"), os.path.join(tmp, "other")
    job = write_inputs(h.src, inputs)
    write_inputs(h.src, other, layers=8)
    wrapper = os.path.join(tmp, "worker.sh")
    with open(wrapper, "w") as f:
        f.write(WRAPPER)
    os.chmod(wrapper, os.stat(wrapper).st_mode | stat.S_IXUSR)

    model = os.path.join(inputs, "models", "llama3-70b.json")
    seen = subprocess.run([wrapper, inputs, "", "test", "-e", model], capture_output=True)
    h.check("the wrapper hides the inputs from a worker (test -e fails there)", seen.returncode == 1, seen)
    seen = subprocess.run([wrapper, inputs, other, "grep", "-q", '"layers": 8', model], capture_output=True)
    h.check("the wrapper shows a worker other content under the same names", seen.returncode == 0, seen)

    ref = os.path.join(tmp, "np1.h5")
    r = subprocess.run(farm_cmd(h, 1, ref, tmp, job=job), capture_output=True, text=True, env=ENV, cwd=tmp)
    h.check("np1: exit 0", r.returncode == 0, r.stderr[-600:])
    for name, fill in (("hidden", ""), ("other", other)):
        store = os.path.join(tmp, f"{name}.h5")
        cmd = farm_cmd(h, 1, store, tmp, job=job)
        mpmd = ["mpirun", "-np", "1", *cmd, ":", "-np", "2", wrapper, inputs, fill, *cmd]
        r = subprocess.run(mpmd, capture_output=True, text=True, env=ENV, cwd=tmp)
        h.check(f"{name}: the farm under mpirun (rank 0 + 2 workers) exits 0", r.returncode == 0,
                r.stderr[-800:])
        h.check(f"{name}: store identical to np1", *same(h, ref, store))
    shutil.rmtree(tmp)
    h.finish()


if __name__ == "__main__":
    main()
