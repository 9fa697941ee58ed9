"""The plan store's table checksums as schemas/planstore.md defines them, computed
independently of the C code with h5py and python3-xxhash: XXH3-64 of the table's rows in
the file's packed little-endian layout (h5py's raw bytes of the compound rows), seeded
with the table's number. Tests use `table_checksum` to check the writer, and `reseal` to
make a deliberately edited store consistent again (so the edit reaches the checks behind
the checksum: validation, diff); nothing outside the tests rewrites checksums.
Import after HDF5_PLUGIN_PATH is set (h5py must read zstd chunks)."""
import numpy
import xxhash

TABLES = ("ops", "pareto", "buckets", "bucket_ops", "walk", "plans", "plan_states", "validation",
          "validation_replay")


def table_checksum(ds):
    """The checksum of an h5py dataset of a table of the store."""
    name = ds.name.rsplit("/", 1)[-1]
    return xxhash.xxh3_64_intdigest(ds[()].tobytes(), seed=TABLES.index(name))


def reseal(path, dataset):
    """Recompute the `xxh3_64` attribute of one table of the store at path."""
    import h5py
    with h5py.File(path, "r+") as f:
        ds = f[dataset]
        ds.attrs["xxh3_64"] = numpy.uint64(table_checksum(ds))
