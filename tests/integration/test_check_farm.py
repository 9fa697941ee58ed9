"""The pre-commit tier's farm (`make check`, CTest label `check`): jobs/demo.json under the
real `mpirun -np 2` (rank 0 hands out, rank 1 computes) gives the store a one-rank farm
gives (`enpu store diff`, exit 0), and its summary counts every bucket x policy compiled
and every task done. Kills, resumes, -np 4 and the rest are integration_farm's.
Usage: test_check_farm.py ENPU SOURCE_DIR"""
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Harness  # noqa: E402
from farm_harness import buckets_of, demo_variant, farm, same, tasks_of  # noqa: E402


def main():
    h = Harness(os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]))
    tmp = tempfile.mkdtemp(prefix="enpu-check-farm-")
    job = demo_variant(h, tmp, "check")  # the demo without its validation section
    one, two = os.path.join(tmp, "np1.h5"), os.path.join(tmp, "np2.h5")
    r1 = farm(h, 1, one, tmp, job=job)
    h.check("np1: exit 0", r1.returncode == 0, r1.stderr[-600:])
    r2 = farm(h, 2, two, tmp, job=job)
    h.check("np2 under mpirun: exit 0", r2.returncode == 0, r2.stderr[-600:])
    h.check("np2: every bucket x policy compiled (8 x 4)", buckets_of(r2.stdout) == (32, 0, 0), r2.stdout[-800:])
    t = tasks_of(r2.stdout)
    h.check("np2: every task done", t.get("total", 0) > 0 and t.get("done") == t["total"], t)
    h.check("np2: store identical to np1", *same(h, one, two))
    shutil.rmtree(tmp)
    h.finish()


if __name__ == "__main__":
    main()
