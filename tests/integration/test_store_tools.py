#!/usr/bin/python3
"""Stock HDF5 tools read the plan store through the project's zstd plugin.

Usage: test_store_tools.py TEST_STORE_BINARY PLUGIN_DIR

Writes the unit test's synthetic store (`test_store --write`), then checks that
h5dump and h5py, with HDF5_PLUGIN_PATH at PLUGIN_DIR, read the Pareto times the fixture
defines (time of point k of op i = 100 (i+1) (1 + 0.25 k + 0.05 k^2) ns, restated here
from the fixture's formula), and that without the plugin neither shows those values —
proof that the data really goes through filter 32015. h5dump exits 0 even when it cannot
decode the data, so only the printed values count. Every table's `xxh3_64` attribute equals
the checksum schemas/planstore.md defines, computed here with python3-xxhash.
"""
import os
import re
import subprocess
import sys
import tempfile

DATASET = "/policies/enpu-all/pareto"
EXPECTED = [100.0 * (i + 1) * (1 + 0.25 * k + 0.05 * k * k) for i in range(3) for k in range(3)]
# The store's format version, as the writer defines it (src/store/store.h).
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "src", "store", "store.h")) as hdr:
    FORMAT = re.search(r"#define STORE_FORMAT_VERSION (\d+)u", hdr.read()).group(1)

H5PY_READ = f"""
import h5py, sys
sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})
from store_checksum import table_checksum
with h5py.File(sys.argv[1], "r") as f:
    rows = f["{DATASET}"][:]
    print(" ".join(repr(float(t)) for t in rows["time_ns"]))
    print(int(f.attrs["format_version"]), f["{DATASET}"].id.get_create_plist().get_filter_by_id(32015)[1][0])
    tables = []
    f.visititems(lambda n, o: tables.append(o) if isinstance(o, h5py.Dataset) else None)
    print(len(tables), sum(int(t.attrs["xxh3_64"]) == table_checksum(t) for t in tables))
"""


def env_with(plugin_dir):
    """The environment with HDF5_PLUGIN_PATH at plugin_dir (an empty directory for
    'no plugin', so HDF5 finds no 32015 filter anywhere)."""
    env = dict(os.environ)
    env["HDF5_PLUGIN_PATH"] = plugin_dir
    return env


def h5dump_times(store, plugin_dir):
    out = subprocess.run(["h5dump", "-d", DATASET, "-m", "%.17g", store], env=env_with(plugin_dir),
                         capture_output=True, text=True, check=False)
    # The compound prints as: op, [states], time_ns, energy_nj, [slots]; take the field
    # after the states array of each element.
    return [float(m) for m in re.findall(r"\],\s*([-0-9.e+]+),", out.stdout)], out


def main():
    test_store, plugin_dir = sys.argv[1], os.path.abspath(sys.argv[2])
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        store = os.path.join(tmp, "plans.h5")
        no_plugin = os.path.join(tmp, "no-plugins")
        os.mkdir(no_plugin)
        subprocess.run([test_store, "--write", store], check=True)

        times, _ = h5dump_times(store, plugin_dir)
        if times != EXPECTED:
            failures.append(f"h5dump with the plugin read {times}, expected {EXPECTED}")

        got = subprocess.run(["/usr/bin/python3", "-c", H5PY_READ, store], env=env_with(plugin_dir),
                             capture_output=True, text=True, check=False)
        lines = got.stdout.split("\n")
        if got.returncode != 0 or [float(x) for x in lines[0].split()] != EXPECTED:
            failures.append(f"h5py with the plugin: rc {got.returncode}, out {got.stdout!r} err {got.stderr[-300:]!r}")
        elif lines[1].split() != [FORMAT, "3"]:
            failures.append(f"h5py: format_version / zstd level {lines[1]!r}, expected '{FORMAT} 3'")
        elif len(set(lines[2].split())) != 1 or int(lines[2].split()[0]) < 7:
            failures.append(f"h5py: tables / checksums equal to XXH3-64 of the packed rows: {lines[2]!r}")

        times, out = h5dump_times(store, no_plugin)
        if times:
            failures.append(f"h5dump WITHOUT the plugin still printed values {times}: filter not in the path?")
        if "100" in re.sub(r"(?s).*DATA \{", "", out.stdout, count=1).split("}")[0]:
            failures.append("h5dump without the plugin printed data")
        nop = subprocess.run(["/usr/bin/python3", "-c", H5PY_READ, store], env=env_with(no_plugin),
                             capture_output=True, text=True, check=False)
        if nop.returncode == 0:
            failures.append(f"h5py WITHOUT the plugin read the data: {nop.stdout!r}")

    for f in failures:
        print("FAIL:", f)
    print("ok" if not failures else f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
