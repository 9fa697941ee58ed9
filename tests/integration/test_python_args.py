#!/usr/bin/python3
"""The Python binding's lookup arguments against `enpu query`'s: over a seeded random set
of argument values (ints near 2^31, 2^32 and 2^63, negative and zero; floats inf, nan,
negative, huge and tiny; slacks bare and with a percent unit; strings with a NUL, empty,
unknown names; wrong types), Python and the command line both accept or both refuse
every value, and where both accept the answers are equal. A value is handed to the
command line as the package documents it takes it: an int in decimal, a float by repr,
a str as given; a str holding a NUL cannot be a command-line argument at all, so Python
must refuse it (rather than answer for the name cut at the NUL). Python's refusals of
bad input (INVALID, TypeError) are exit 2 of the command.

Then the cases the issue names, one by one: batch=2**32+8 and seq=2**32+2048 refused
(they used to wrap to batch 8 and seq 2048), target_ms -5, inf, nan and slack 1e300
refused, a policy with a NUL refused; slack 5 refused (it would be 500 %) by both, while
"5%" equals 0.05 and "200%" reaches the store's slack 2; wrong types raise TypeError.
Last, a Python process that opens damaged copies of the store exits without HDF5's
"infinite loop closing library" dump on stderr.

usage: test_python_args.py ENPU_BINARY SOURCE_DIR LIBENPU_PLANSTORE_SO"""
import json
import math
import os
import random
import subprocess
import sys
import tempfile

from harness import Harness, same_doc, small_llama_job, source_planstore

enpu, src, libpath = sys.argv[1], os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3])
h = Harness(enpu, src)
tmp = tempfile.mkdtemp(prefix="enpu-python-args-")
enpu_planstore = source_planstore(src, libpath)

# A small store with a slack above 1 (2 = 200 %), which a job may hold (up to 10).
jpath, store = small_llama_job(src, tmp, "python-args", "strict", [1, 8], [0, 0.05, 2], ["nodvfs", "enpu-all"])
r = h.run("farm", jpath)
if not h.check("farm of the test store: exit 0", r.returncode == 0, r.stderr[-1500:]):
    h.finish()

NEAR = [2**31 - 1, 2**31, 2**31 + 8, 2**32 - 1, 2**32, 2**32 + 1, 2**32 + 8, 2**32 + 2048, 2**32 + 4608,
        2**63 - 1, 2**63, 2**63 + 8, 2**64 + 8, 2**64 + 4608, -1, -8, -(2**31), -(2**32) + 8, -(2**63), 0]
# (a str batch or seq is a TypeError in Python but plain text on a command line: the
# wrong types are checked one by one below, not compared)
BATCHES = NEAR + [1, 2, 8, 9, 65536, 65537, 8.0, True, None]
SEQS = NEAR + [1, 1024, 2048, 4096, 4608, 4609, 16777216, 16777217, 4608.0, False]
FLOATS = [math.inf, -math.inf, math.nan, -5.0, -5, 0, 0.0, -0.0, 1e300, -1e300, 1e-300, 5e-324, 1e308, 2**1100]
SLACKS = FLOATS + [0.05, 0.03, 1, 1.0, 1.5, 2, 2.0, 5, 10, 10.0, 10.5, 0.05000000000000001, 2**31, 2**32 + 8,
                   "5%", "0.05", "200%", "1000%", "1001%", "-5%", "5", "nan", "inf%", "5 %", " 0.05", "", "%",
                   "0.05\0", "5%\0junk", True, [0.05]]
TARGETS = FLOATS + [18.0, 20, 25.5, 1e-9, 2**63, 2**32 + 8, True]
POLICIES = [None, "enpu-all", "nodvfs", "", "no-such", "enpu-all\0", "enpu-all\0junk", "\0", "nodvfs\0enpu-all", 5]
PHASES = ["decode", "prefill", "middle", "", "decode\0", "Decode", 1]


def cli_text(v):
    """The command-line spelling of a Python value; None when argv cannot carry it."""
    if isinstance(v, str):
        return None if "\0" in v else v
    if isinstance(v, bool) or isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v)
    return None if v is None else str(v)


def cli_query(phase, batch, seq, slack=None, target_ms=None, policy=None):
    """`enpu query --json --vfset` on these values: (exit code, document or None, stderr),
    or None when a value cannot be written on a command line (a NUL)."""
    args = ["query", store, "--json", "--vfset"]
    for opt, v in (("--phase", phase), ("--batch", batch), ("--seq", seq), ("--slack", slack),
                   ("--target-ms", target_ms), ("--policy", policy)):
        if v is None:  # not given (a missing --phase, --batch or --seq is a usage error)
            continue
        text = cli_text(v)
        if text is None:
            return None
        args += [opt, text]
    c = h.run(*args)
    return c.returncode, json.loads(c.stdout) if c.returncode == 0 else None, c.stderr.strip()


def py_lookup(st, **kw):
    """(document, None) or (None, the exception) of a Python lookup that refused."""
    try:
        return st.lookup(**kw), None
    except (enpu_planstore.PlanStoreError, TypeError) as e:
        return None, e


def agree(st, **kw):
    """Python and the command line on the same values: both accept with equal answers, or
    both refuse (bad input: exit 2). @return (None or what differs, both answered)."""
    try:
        got, err = py_lookup(st, **kw)
    except Exception as e:  # noqa: BLE001 (anything but PlanStoreError or TypeError is a bug)
        return f"Python raised {e!r}", False
    c = cli_query(**kw)
    if c is None:  # a NUL: no command line can say it; Python must not answer for less
        return (None if err else f"Python answered for a value holding a NUL: {kw}"), False
    code, want, stderr = c
    if (code == 0) != (err is None):
        return f"enpu query exit {code} ({stderr[-300:]}); Python {'raised ' + repr(err) if err else 'answered'}", 0
    if err is not None:
        bad_input = isinstance(err, TypeError) or err.code == -1
        return (None if not bad_input or code == 2 else f"Python {err!r} is bad input, enpu query exit {code}"), 0
    got, want = dict(got), dict(want)
    ops_py = [{k: v for k, v in o.items() if k not in ("lead_energy_nj", "trail_energy_nj")} for o in got.pop("ops")]
    return same_doc(ops_py, want.pop("ops"), "$.ops") or same_doc(got, want), True


with enpu_planstore.open(store) as st:
    rnd = random.Random(40)
    n = fails = accepted = nul = 0
    for k in range(300):
        kw = {"phase": rnd.choice(PHASES) if rnd.random() < 0.2 else "decode",
              "batch": rnd.choice(BATCHES) if rnd.random() < 0.4 else rnd.choice([1, 8, 5]),
              "seq": rnd.choice(SEQS) if rnd.random() < 0.4 else rnd.choice([4608, 4000, 1024])}
        if rnd.random() < 0.2:
            kw["policy"] = rnd.choice(POLICIES)
        if rnd.random() < 0.6:
            kw["slack"] = rnd.choice(SLACKS)
        else:
            kw["target_ms"] = rnd.choice(TARGETS)
        if kw["phase"] == "prefill" and isinstance(kw["seq"], int) and not isinstance(kw["seq"], bool):
            kw["seq"] = kw["seq"] if rnd.random() < 0.5 else 1024
        d, both = agree(st, **kw)
        n += 1
        nul += any(isinstance(v, str) and "\0" in v for v in kw.values())
        accepted += both and d is None
        if d:
            fails += 1
            h.fail(f"case {k} {kw!r}", d)
    h.check(f"{n} random argument sets: Python and enpu query agree on every one ({fails} differ; "
            f"{accepted} answered by both, {nul} held a NUL)", fails == 0 and accepted >= 30 and nul >= 5)

    # The cases of the issue, one by one.
    base = {"phase": "decode", "seq": 4608, "policy": "enpu-all"}
    for kw in ({"batch": 2**32 + 8, "slack": 0.05}, {"batch": 8, "seq": 2**32 + 4608, "slack": 0.05},
               {"batch": 2**31 + 8, "slack": 0.05}, {"batch": 2**63 + 8, "slack": 0.05},
               {"batch": 8, "target_ms": -5}, {"batch": 8, "target_ms": math.inf},
               {"batch": 8, "target_ms": math.nan}, {"batch": 8, "slack": 1e300},
               {"batch": 8, "slack": 0.05, "policy": "enpu-all\0junk"}):
        args = {**base, **kw}
        got, err = py_lookup(st, **args)
        h.check(f"Python refuses {kw}", err is not None and getattr(err, "code", None) == -1,
                repr(err) if err else f"answered bucket {got['bucket']}")
        d = agree(st, **args)[0]
        h.check(f"... as enpu query does {kw}", d is None, d or "")
    five = cli_query("decode", 8, 4608, slack=5)
    h.check("enpu query --slack 5: exit 2, the message says how to write it",
            five[0] == 2 and "would be 500 %" in five[2] and "5%" in five[2], str(five[::2]))
    got, err = py_lookup(st, phase="decode", batch=8, seq=4608, slack=5)
    h.check("Python slack=5: refused, the same message", err is not None and "would be 500 %" in str(err), repr(err))
    pct, frac = cli_query("decode", 8, 4608, slack="5%"), cli_query("decode", 8, 4608, slack="0.05")
    h.check("enpu query --slack 5% equals --slack 0.05", pct[0] == 0 and frac[0] == 0 and pct[1] == frac[1],
            f"{pct[0]} {frac[0]}")
    p5, p005 = st.lookup(phase="decode", batch=8, seq=4608, slack="5%"), st.lookup(phase="decode", batch=8,
                                                                                     seq=4608, slack=0.05)
    h.check("Python slack='5%' equals slack=0.05", p5 == p005 and p5["slack"] == 0.05, str(p5["slack"]))
    try:
        enpu_planstore.slack_fraction(5)
        bare = None
    except enpu_planstore.PlanStoreError as e:
        bare = e
    h.check("slack_fraction (for a runtime's own --slack): '5%' is 0.05, 5 refused",
            enpu_planstore.slack_fraction("5%") == 0.05 and bare is not None, repr(bare))
    two = st.lookup(phase="decode", batch=8, seq=4608, slack="200%")
    h.check("slack '200%' reaches the store's slack 2 (its stored plan answers)",
            two["slack"] == 2.0 and two["plan_time_ns"] is not None, str(two["plan_time_ns"]))
    for kw, what in (({"batch": 8.0}, "batch"), ({"batch": "8"}, "batch"), ({"batch": True}, "batch"),
                     ({"seq": None}, "seq"), ({"policy": 5}, "policy"), ({"phase": None}, "phase"),
                     ({"slack": [0.05]}, "slack"), ({"slack": None, "target_ms": "20"}, "target_ms")):
        args = {"phase": "decode", "batch": 8, "seq": 4608, "slack": 0.05, **kw}
        got, err = py_lookup(st, **args)
        h.check(f"a wrong type raises TypeError naming it: {kw}", isinstance(err, TypeError) and what in str(err),
                repr(err))

# Damaged copies opened by a Python process: no HDF5 dump on its stderr at exit.
data = open(store, "rb").read()
probe = """import enpu_planstore, sys
data, bad, failed = open(sys.argv[1], "rb").read(), sys.argv[2], 0
for at in range(0, len(data), len(data) // 120 + 1):
    open(bad, "wb").write(data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1:])
    try:
        enpu_planstore.open(bad).close()
    except enpu_planstore.PlanStoreError:
        failed += 1
print(failed)
"""
env = dict(os.environ, PYTHONPATH=os.path.join(src, "python"))
r = subprocess.run(["/usr/bin/python3", "-c", probe, store, os.path.join(tmp, "bad.h5")], capture_output=True,
                   text=True, env=env)
h.check("Python over damaged stores: some opens fail", r.returncode == 0 and int(r.stdout or 0) > 10,
        r.stdout + r.stderr[-500:])
h.check("... and its stderr holds no HDF5 'infinite loop closing library' dump at exit",
        "infinite loop closing library" not in r.stderr and not r.stderr.strip(), r.stderr[-800:])
h.finish()
