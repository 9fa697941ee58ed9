"""A store on a file system without file locks (flock answers ENOSYS, as on a Lustre
mount without -o flock and on some NFS mounts), taken through an LD_PRELOAD shim
(shim/flock_enosys.c) since no such mount can be made here:
  - HDF5's own lock fails there. An HDF5 that insists on it (HDF5_USE_FILE_LOCKING=TRUE,
    or a build without Debian's best-effort default) refuses every read: h5dump fails
    until HDF5_USE_FILE_LOCKING=FALSE, as docs/cluster.md says. The project asks for HDF5's
    lock best effort (store_h5_open_readonly), so query, store verify and a rerun of the
    farm (which reads the previous store) work and answer as without the shim; where
    the environment insists, a read exits 4 saying to set HDF5_USE_FILE_LOCKING=FALSE;
  - when the project's own writer lock (<store>.lock) cannot be taken either, the farm
    exits 4 saying the file system has no locks and what to do, and the store is as it
    was.
Usage: test_flock.py ENPU SOURCE_DIR SHIM_SO H5ZSTD_DIR"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from farm_harness import ENV, demo_variant, farm, same, summary  # noqa: E402
from harness import Harness  # noqa: E402

QUERY = ["--phase", "decode", "--batch", "8", "--seq", "2048", "--slack", "0.05", "--policy", "enpu-all"]


def main():
    h = Harness(os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]))
    shim, plugins = os.path.abspath(sys.argv[3]), os.path.abspath(sys.argv[4])
    tmp = tempfile.mkdtemp(prefix="enpu-flock-")
    job = demo_variant(h, tmp, "flock", policies=["nodvfs", "enpu-all"], slacks=[0, 0.05])
    store, ref = os.path.join(tmp, "flock.h5"), os.path.join(tmp, "ref.h5")
    r = farm(h, 1, ref, tmp, job=job)
    h.check("reference farm: exit 0", r.returncode == 0, r.stderr[-500:])
    shutil.copyfile(ref, store)
    nolocks = dict(ENV, LD_PRELOAD=shim, HDF5_PLUGIN_PATH=plugins)
    plain = json.loads(h.run("query", ref, *QUERY, "--json").stdout)
    strict = dict(nolocks, HDF5_USE_FILE_LOCKING="TRUE")

    r = subprocess.run(["h5dump", "-A", store], capture_output=True, text=True, env=strict)
    h.check("the shim takes HDF5's lock away: h5dump insisting on it fails", r.returncode != 0, r.stderr[-400:])
    r = subprocess.run(["h5dump", "-A", store], capture_output=True, text=True,
                       env=dict(nolocks, HDF5_USE_FILE_LOCKING="FALSE"))
    h.check("h5dump with HDF5_USE_FILE_LOCKING=FALSE reads it (docs/cluster.md's advice)", r.returncode == 0,
            r.stderr[-400:])

    r = h.run("query", store, *QUERY, "--json", env=nolocks)
    answer = json.loads(r.stdout) if r.returncode == 0 else {}
    h.check("query without file locks: exit 0, the same answer",
            r.returncode == 0 and {**answer, "store": None} == {**plain, "store": None},
            f"exit {r.returncode}: {r.stderr[-400:]}")
    r = h.run("query", store, *QUERY, env=strict)
    h.check("query where HDF5_USE_FILE_LOCKING insists: exit 4 saying to set it FALSE",
            r.returncode == 4 and "HDF5_USE_FILE_LOCKING=FALSE" in r.stderr and "no file locks" in r.stderr,
            f"exit {r.returncode}: {r.stderr[-400:]}")
    r = h.run("store", "verify", store, env=nolocks)
    h.check("store verify without file locks: exit 0", r.returncode == 0, r.stderr[-400:])
    r = subprocess.run([h.enpu, "farm", job, "--store", store, "--quiet", "--json"], capture_output=True,
                       text=True, env=nolocks, cwd=tmp)
    h.check("a rerun of the farm without HDF5 locks (its own lock kept): exit 0, nothing recomputed",
            r.returncode == 0 and summary(r.stdout).get("recomputed") == 0,
            f"exit {r.returncode}: {r.stdout[-300:]} {r.stderr[-400:]}")
    h.check("... and the store equal to the reference", *same(h, ref, store))

    before = open(store, "rb").read()
    r = subprocess.run([h.enpu, "farm", job, "--store", store, "--quiet"], capture_output=True, text=True,
                       env=dict(nolocks, ENPU_TEST_FLOCK_KEEP=""), cwd=tmp)
    h.check("no locks at all: the farm exits 4 saying the file system has none and what to do",
            r.returncode == 4 and "has no file locks" in r.stderr and "-o flock" in r.stderr,
            f"exit {r.returncode}: {r.stderr[-400:]}")
    h.check("... and the store as it was", open(store, "rb").read() == before)
    shutil.rmtree(tmp)
    h.finish()


if __name__ == "__main__":
    main()
