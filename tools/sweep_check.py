#!/usr/bin/python3
"""sweep_check.py — the physics checks of an architecture sweep store: for each compared
policy, whether the sweep point equal to the job's chip reproduces the job chip's plans bit
for bit (and its Pareto points), and how often a plan's saving rises from one value of the
swept parameter to the next (per bucket and slack).

The store is first read whole by the checked reader (`enpu store verify`: every table,
index and checksum, as `enpu report` loads it); a store it refuses is not read further
(exit 2). The tables are then read with h5py. tests/integration/test_sweep.py runs it.

Usage: HDF5_PLUGIN_PATH=build/hdf5-plugins tools/sweep_check.py STORE PATH [--falling] [--enpu BINARY]
  PATH     a swept chip path (e.g. ivr.step_ns); the points varying it with every other
           swept path at the job chip's value are read
  --falling  the saving is expected to fall as the value falls (e.g. clock.states: fewer
           states), not as it grows (the default: e.g. a slower V/f transition)
  --enpu   the enpu binary (default: build/enpu beside this tools/ folder)
Prints one line per policy; exit 1 when a saving rises in the expected direction or the
point equal to the job's chip differs from it.
"""
import json
import os
import subprocess
import sys

import h5py

from policy_names import NAME



def same_content(a, b):
    """The plans bit for bit, and the Pareto points as a set (ops are stored in key order,
    and a point whose op level reads its values keys its ops apart)."""
    if a["plans"][:].tobytes() != b["plans"][:].tobytes():
        return False
    cols = [c for c in a["pareto"].dtype.names if c != "op"]
    rows = [sorted(tuple(r[c].tobytes() for c in cols) for r in g["pareto"][:]) for g in (a, b)]
    return rows[0] == rows[1]


def chip_value(chip, path):
    v = chip
    for k in path.split("."):
        v = v[k]
    return v


def main():
    argv = sys.argv[1:]
    enpu = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "enpu")
    if "--enpu" in argv:
        i = argv.index("--enpu")
        enpu = argv[i + 1] if i + 1 < len(argv) else sys.exit(__doc__)
        del argv[i:i + 2]
    args = [a for a in argv if not a.startswith("--")]
    if len(args) != 2:
        sys.exit(__doc__)
    store, path = args
    falling = "--falling" in argv
    r = subprocess.run([enpu, "store", "verify", store], capture_output=True, text=True)
    if r.returncode != 0:
        print(f"sweep_check: the checked reader refuses {store}: {r.stderr.strip() or r.stdout.strip()}",
              file=sys.stderr)
        sys.exit(2)
    f = h5py.File(store, "r")
    pols = f["policies"]
    chip = json.loads(f.attrs["chip_json"])
    own = chip_value(chip, path)
    bad = 0
    for base in sorted(n for n in pols if ":" not in n and n not in (NAME["NODVFS"], NAME["UNIFORM"])):
        points = {}
        for n in pols:
            if not n.startswith(base + ":"):
                continue
            point = dict(kv.split("=") for kv in n.split(":", 1)[1].split(","))
            # the slice through the job chip: every other swept path at the chip's value
            if path in point and all(float(v) == float(chip_value(chip, k)) for k, v in point.items() if k != path):
                points[float(point[path])] = n
        values = sorted(points, reverse=falling)
        saving = [{(int(r["bucket"]), float(r["slack"])): float(r["savings_vs_nodvfs"])
                   for r in pols[points[v]]["plans"][:]} for v in values]
        pairs = [(a, b) for a, b in zip(saving, saving[1:])]
        rises = sum(1 for a, b in pairs for k in a if k in b and b[k] > a[k] + 1e-12)
        total = sum(1 for a, b in pairs for k in a if k in b)
        same = None
        if float(own) in points:
            same = same_content(pols[base], pols[points[float(own)]])
        bad += rises > 0 or same is False
        print(f"{base}: {path} {' -> '.join(f'{v:g}' for v in values)}: saving rises in {rises} of {total} "
              f"(bucket, slack) steps; point {path}={own}: plans equal to the job chip's bit for bit, the same Pareto points: {same}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
