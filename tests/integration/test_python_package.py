#!/usr/bin/python3
"""The Python package as its users get it. The ctypes mirror of planstore.h's structs
against the compiler's layout (planstore_layout: every field's offset and size, each
struct's size, the constants copied, each field's kind: a double is not a uint64) and against the header's own field names; its
version against pyproject.toml's and the CMake project's. Then, each in a fresh plain
`python3 -m venv` with no package index (PIP_NO_INDEX), `pip install` of: a copy of
python/ (a lookup with ENPU_PLANSTORE_LIB), the source tree's python/ beside its build
(a lookup with no environment variable), and the copy `cmake --install` puts under
<prefix>/share (a lookup with no environment variable, from the prefix's library); each
lookup equal to `enpu query`'s on the unit test's synthetic store.

usage: test_python_package.py ENPU_BINARY SOURCE_DIR BUILD_DIR LIBENPU_PLANSTORE_SO TEST_STORE PLANSTORE_LAYOUT"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

from harness import Harness

enpu, src, build, libpath, test_store, layout = sys.argv[1:7]
src, build, libpath = os.path.abspath(src), os.path.abspath(build), os.path.abspath(libpath)
h = Harness(enpu, src)
tmp = tempfile.mkdtemp(prefix="enpu-pypkg-")
sys.path.insert(0, os.path.join(src, "python"))
import enpu_planstore as ep  # noqa: E402  (the source tree's; the library is not loaded by an import)


def header_fields(header, struct):
    """The field names of `typedef struct {...} struct;` in declaration order."""
    text = re.sub(r"/\*.*?\*/", "", open(header).read(), flags=re.S)
    body = re.search(r"typedef struct \{([^}]*)\}\s*" + struct + r"\s*;", text).group(1)
    names = []
    for decl in filter(None, (d.strip() for d in body.split(";"))):
        first, *rest = decl.split(",")
        for d in [first] + rest:
            names.append(re.sub(r"\[.*?\]", "", d).replace("*", " ").split()[-1])
    return names


# The layout, as the compiler has it.
r = subprocess.run([layout], capture_output=True, text=True)
c_fields, c_sizes, c_consts = {}, {}, {}
for line in r.stdout.splitlines():
    a, b, c, *d = line.split()
    if a == "const":
        c_consts[b] = int(c)
    elif b == "-":
        c_sizes[a] = int(d[0])
    else:
        c_fields.setdefault(a, []).append((b, int(c), int(d[0]), d[1]))


def ctypes_kind(t):
    """planstore_layout's KIND of a ctypes field type."""
    if issubclass(t, ep.ctypes.Array):
        return {ep.ctypes.c_char: "char[]", ep.ctypes.c_uint8: "uint8[]"}.get(t._type_, "?")
    return {ep.ctypes.c_double: "double", ep.ctypes.c_int32: "int32", ep.ctypes.c_uint32: "uint32",
            ep.ctypes.c_uint64: "uint64", ep.ctypes.c_char_p: "char*"}.get(t, "?")



mirror = {"planstore_plan": (ep._Plan, "src/store/planstore.h"),
          "planstore_op_states": (ep._OpStates, "src/store/planstore.h"),
          "planstore_bucket": (ep._Bucket, "src/store/planstore.h"), "enpu_err": (ep._Err, "src/common/enpu_err.h")}
for struct, (cls, header) in mirror.items():
    names = header_fields(os.path.join(src, header), struct)
    py = [(n, getattr(cls, n).offset, getattr(cls, n).size, ctypes_kind(t)) for n, t in cls._fields_]
    h.check(f"{struct}: the ctypes fields are the header's, in its order", [n for n, *_ in py] == names,
            f"{[n for n, *_ in py]} vs {names}")
    h.check(f"{struct}: planstore_layout lists every field of the header", [n for n, *_ in c_fields.get(struct, [])]
            == names, str(c_fields.get(struct)))
    h.check(f"{struct}: every field's offset, size and kind as the compiler's", py == c_fields.get(struct),
            f"ctypes {py} vs C {c_fields.get(struct)}")
    h.check(f"{struct}: sizeof {c_sizes.get(struct)} = ctypes.sizeof", ep.ctypes.sizeof(cls) == c_sizes.get(struct),
            str(ep.ctypes.sizeof(cls)))
consts = {"PLANSTORE_NSTATE": ep.NSTATE, "ENPU_ERR_MSG_LEN": ep.ERR_MSG_LEN,
          "PLANSTORE_PREFILL": ep.PHASES.index("prefill"), "PLANSTORE_DECODE": ep.PHASES.index("decode"),
          "PLANSTORE_ARG_BATCH": ep._ARG_BATCH, "PLANSTORE_ARG_SEQ": ep._ARG_SEQ, "PLANSTORE_ARG_SLACK": ep._ARG_SLACK,
          "PLANSTORE_ARG_TARGET_MS": ep._ARG_TARGET_MS, "PLANSTORE_BUCKET_OK": ep.STATUSES.index("ok"),
          "PLANSTORE_BUCKET_INFEASIBLE_CAPACITY": ep.STATUSES.index("infeasible_capacity"),
          "PLANSTORE_BUCKET_FAILED": ep.STATUSES.index("failed"), "PLANSTORE_BUCKET_PENDING": ep.STATUSES.index("pending")}
h.check("the constants copied into Python are the header's",
        all(c_consts.get(k) == v for k, v in consts.items()), f"{consts} vs {c_consts}")

# One version everywhere.
cmake_version = re.search(r"project\(\S+ VERSION (\S+)", open(os.path.join(src, "CMakeLists.txt")).read()).group(1)
py_version = re.search(r'^version = "([^"]+)"', open(os.path.join(src, "python/pyproject.toml")).read(), re.M).group(1)
h.check("__version__ = pyproject.toml's = the CMake project's", ep.__version__ == py_version == cmake_version,
        f"{ep.__version__} {py_version} {cmake_version}")

# The reference answer on the synthetic store: prefill batch 3, seq 500, unbounded target.
store = os.path.join(tmp, "plans.h5")
subprocess.run([test_store, "--write", store], check=True, capture_output=True)
ref = json.loads(h.run("query", store, "--phase", "prefill", "--batch", "3", "--seq", "500", "--target-ms", "1e24",
                       "--json").stdout)
probe = ("import enpu_planstore as e, json, os, sys; s = e.open(sys.argv[1]); "
         "p = s.lookup(phase='prefill', batch=3, seq=500, target_ms=1e24, policy='enpu-all'); "
         "here = os.path.dirname(e.__file__); "
         "print(json.dumps([e.__file__, e.__version__, os.path.exists(os.path.join(here, 'py.typed')), "
         "e._library()._name, p['bucket'], p['time_ns'], p['energy_nj']]))")
clean = {k: v for k, v in os.environ.items() if k not in ("ENPU_PLANSTORE_LIB", "LD_LIBRARY_PATH", "PYTHONPATH")}


def venv_install(label, pkg, env_lib=None):
    """A fresh plain venv, `pip install pkg` with no index; then the probe run in it
    (ENPU_PLANSTORE_LIB=env_lib, or no variable at all). @return the probe's answer."""
    venv = os.path.join(tmp, f"venv-{label}")
    env = dict(clean, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    r = subprocess.run(["/usr/bin/python3", "-m", "venv", venv], capture_output=True, text=True)
    if not h.check(f"{label}: python3 -m venv", r.returncode == 0, r.stderr[-800:]):
        return None
    r = subprocess.run([os.path.join(venv, "bin/pip"), "install", pkg], capture_output=True, text=True, env=env,
                       cwd=tmp)
    if not h.check(f"{label}: pip install {pkg} in a plain venv, no package index", r.returncode == 0,
                   (r.stdout + r.stderr)[-1500:]):
        return None
    env = dict(clean, ENPU_PLANSTORE_LIB=env_lib) if env_lib else clean
    r = subprocess.run([os.path.join(venv, "bin/python"), "-c", probe, store], capture_output=True, text=True,
                       env=env, cwd=tmp)
    out = json.loads(r.stdout) if r.returncode == 0 else None
    h.check(f"{label}: the installed package (version, py.typed) answers as enpu query",
            out and out[0].startswith(venv) and out[1] == ep.__version__ and out[2]
            and out[4] == ref["bucket"] and out[5] == ref["time_ns"] and out[6] == ref["energy_nj"],
            f"{r.stderr[-1500:]} {out}")
    return out


copy = os.path.join(tmp, "python")
shutil.copytree(os.path.join(src, "python"), copy, ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info",
                                                                                 "_install.py"))
venv_install("copy", copy, env_lib=libpath)

if os.path.realpath(build) == os.path.realpath(os.path.join(src, "build")):
    out = venv_install("source tree", os.path.join(src, "python"))
    h.check("source tree: the library found with no environment variable is the build's",
            out and os.path.realpath(out[3]) == os.path.realpath(libpath), str(out))
else:
    print(f"     (the build is not {src}/build: pip install ./python without ENPU_PLANSTORE_LIB not checked)")

prefix = os.path.join(tmp, "prefix")
r = subprocess.run(["cmake", "--install", build, "--component", "planstore", "--prefix", prefix], capture_output=True,
                   text=True)
h.check("cmake --install --component planstore", r.returncode == 0, r.stderr[-800:])
out = venv_install("cmake --install", os.path.join(prefix, "share/enpu_planstore/python"))
h.check("cmake --install: the library found with no environment variable is the prefix's",
        out and out[3].startswith(os.path.join(prefix, "lib")), str(out))
h.finish()
