#!/usr/bin/python3
"""A full disk under mpirun: the rank that meets it says so before the ranks leave.

On a tmpfs 1.5 times the store (a checkpoint needs the old store and the new one), a
two-rank farm (mpirun -np 2) must exit 4 with rank 0's "No space left on device" naming
the file, every time: the workers leave with the same status right after rank 0, and
mpirun kills whatever rank is still running then, so rank 0 prints before they may leave.
Repeated RUNS times, since the lost message depended on which rank exited first.
Skipped (exit 77) when this process may not mount a tmpfs.
Usage: test_enospc_mpirun.py ENPU SOURCE_DIR"""
import os
import shutil
import subprocess
import sys
import tempfile

from harness import Harness
from farm_harness import ENV, demo_variant

RUNS = 4


def main():
    h = Harness(os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]))
    tmp = tempfile.mkdtemp(prefix="enpu-enospc-")
    job = demo_variant(h, tmp, "enospc")
    ref = os.path.join(tmp, "ref.h5")
    r = subprocess.run([h.enpu, "farm", job, "--store", ref, "--quiet"], capture_output=True, text=True, env=ENV,
                       cwd=tmp)
    if not h.check("reference farm exit 0", r.returncode == 0, r.stderr[-400:]):
        h.finish()
    mnt = os.path.join(tmp, "small")
    os.mkdir(mnt)
    kib = os.path.getsize(ref) * 3 // 2 // 1024
    m = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={kib}k", "tmpfs", mnt], capture_output=True, text=True)
    if m.returncode != 0:
        print(f"SKIP: cannot mount a tmpfs ({m.stderr.strip()})")
        shutil.rmtree(tmp, ignore_errors=True)
        sys.exit(77)
    try:
        for k in range(RUNS):
            for name in os.listdir(mnt):
                os.unlink(os.path.join(mnt, name))
            store = os.path.join(mnt, "plans.h5")
            r = subprocess.run(["mpirun", "-np", "2", h.enpu, "farm", job, "--store", store, "--checkpoint-s", "0.3",
                                "--results", os.path.join(tmp, "res"), "--quiet"],
                               capture_output=True, text=True, env=ENV, cwd=tmp, timeout=1500)
            print(f"     run {k + 1}: exit {r.returncode}")
            h.check(f"run {k + 1}: exit 4 with rank 0's 'No space left on device' naming the file",
                    r.returncode == 4 and "No space left on device" in r.stderr and mnt in r.stderr,
                    f"exit {r.returncode}: {r.stderr[-600:]}")
    finally:
        subprocess.run(["umount", mnt], capture_output=True)
    shutil.rmtree(tmp, ignore_errors=True)
    h.finish()


if __name__ == "__main__":
    main()
