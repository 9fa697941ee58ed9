"""Shared helpers of the integration tests: a pass/fail counter that prints one line per
check, and runners of the real `enpu` binary. A test script does

    from harness import Harness
    h = Harness(sys.argv[1], sys.argv[2])   # ENPU_BINARY SOURCE_DIR
    h.check("name", condition, "detail shown on failure")
    ...
    h.finish()                               # prints the counts, exits 1 on any failure

`run` executes in the source directory so job paths like jobs/demo.json resolve."""
import json
import math
import os
import subprocess
import sys
import tempfile

# The shipped conv trace and Table 3's Llama3-70B cluster, relative to the source folder
# (where Harness.run runs).
TRACE = "jobs/traces/AzureLLMInferenceTrace_conv.csv"
CLUSTER = "jobs/clusters/llama3-70b.json"


def md_rows(md, header_start):
    """Rows (lists of cells) of every markdown table whose header starts with header_start."""
    rows, inside = [], False
    for line in md.splitlines():
        if line.startswith(header_start):
            inside = True
            continue
        if inside and line.startswith("|---"):
            continue
        if inside and line.startswith("|"):
            rows.append([c.strip() for c in line.strip().strip("|").split("|")])
        else:
            inside = False
    return rows


def same_doc(a, b, path="$"):
    """None when two JSON documents are equal, with numbers to the 12 significant digits
    `enpu query` prints (a relative error of at most 5e-12); else where they first differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            return f"{path}: keys {sorted(set(a) ^ set(b))}"
        return next((d for k in a for d in [same_doc(a[k], b[k], f"{path}.{k}")] if d), None)
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{path}: {len(a)} vs {len(b)} items"
        return next((d for i, (x, y) in enumerate(zip(a, b)) for d in [same_doc(x, y, f"{path}[{i}]")] if d), None)
    if isinstance(a, float) or isinstance(b, float):
        ok = isinstance(a, (int, float)) and isinstance(b, (int, float)) and math.isclose(a, b, rel_tol=5.01e-12,
                                                                                         abs_tol=1e-300)
        return None if ok else f"{path}: {a!r} vs {b!r}"
    return None if a == b else f"{path}: {a!r} vs {b!r}"


def small_llama_job(src, tmp, name, mode, decode_batches, slacks, policies, **extra):
    """Write <tmp>/<mode>.json: a Llama3-70B job of prefill batch 1 at 1024 and 4096 and
    decode `decode_batches` at 4608, in budget `mode`, its store <tmp>/<mode>/plans.h5;
    returns (job path, store path)."""
    j = {"name": f"{name}-{mode}", "model": os.path.join(src, "jobs/models/llama3-70b.json"),
         "chip": os.path.join(src, "jobs/chips/tpuv5p.json"),
         "cluster": os.path.join(src, "jobs/clusters/llama3-70b.json"),
         "store": os.path.join(tmp, mode, "plans.h5"),
         "phases": {"prefill": {"batch": [1], "seq": [1024, 4096]},
                    "decode": {"batch": decode_batches, "seq": [4608]}},
         "slacks": slacks, "policies": policies, "budget": mode,
         "moe": {"capacity_factor": "worst"}, **extra}
    path = os.path.join(tmp, f"{mode}.json")
    with open(path, "w") as f:
        json.dump(j, f)
    return path, j["store"]


def source_planstore(src, libpath):
    """The Python package enpu_planstore from the source tree (as PYTHONPATH=python) on
    the built library `libpath` (ENPU_PLANSTORE_LIB), imported."""
    os.environ["ENPU_PLANSTORE_LIB"] = os.path.abspath(libpath)
    sys.path.insert(0, os.path.join(src, "python"))
    import enpu_planstore
    return enpu_planstore


def synth_store(test_replay, prefix):
    """A scratch folder and in it the synthetic Llama3-70B store `test_replay
    --write-store` writes (tests/integration/replay/synth_store.h): (tmp, store path)."""
    tmp = tempfile.mkdtemp(prefix=prefix)
    store = os.path.join(tmp, "synth.h5")
    subprocess.run([test_replay, "--write-store", store], check=True)
    return tmp, store


def write_trace(path, rows):
    """A trace file (the replay's CSV) of (seconds after 2023-11-16 18:00:00, context,
    generated) rows; returns path."""
    with open(path, "w") as f:
        f.write("TIMESTAMP,ContextTokens,GeneratedTokens\n")
        for t, ctx, gen in rows:
            f.write(f"2023-11-16 18:{int(t // 60):02d}:{t % 60:010.7f},{ctx},{gen}\n")
    return path


class Harness:
    def __init__(self, enpu, src):
        self.enpu, self.src = enpu, src
        self.passed = self.failed = 0

    def check(self, name, cond, detail=""):
        if cond:
            self.passed += 1
            print(f"ok   {name}")
        else:
            self.failed += 1
            print(f"FAIL {name} {detail}")
        return cond

    def fail(self, name, detail=""):
        """A check that failed where it was found (the test has no separate condition)."""
        return self.check(name, False, detail)

    def run(self, *args, **kw):
        kw.setdefault("cwd", self.src)
        return subprocess.run([self.enpu, *args], capture_output=True, text=True, **kw)

    def figures_legible(self, name, *paths):
        """Check that every figure under paths keeps the report's legibility rules
        (tools/figcheck.py: series per panel, key outside, plot width, units, ticks)."""
        p = subprocess.run(["/usr/bin/python3", os.path.join(self.src, "tools", "figcheck.py"), *paths],
                           capture_output=True, text=True)
        self.check(f"{name}: every figure legible (tools/figcheck.py)", p.returncode == 0,
                   (p.stdout + p.stderr)[-2000:])

    def run_json(self, *args):
        r = self.run(*args, "--json")
        if r.returncode != 0:
            raise SystemExit(f"{args}: exit {r.returncode}: {r.stderr}")
        return json.loads(r.stdout)

    def finish(self):
        print(f"\n{self.passed} passed, {self.failed} failed")
        sys.exit(1 if self.failed else 0)
