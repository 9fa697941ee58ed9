#!/usr/bin/python3
"""`enpu trace convert` on the sample of every format (tests/fixtures/traces/): the rows
written against the input parsed here independently (times, token counts, order), bad
rows failing with file:line:column or counted with --skip-bad-rows, and the BurstGPT
and Mooncake samples replayed (`enpu replay`) on a small Llama3-70B store farmed here.

usage: test_trace_convert.py ENPU_BINARY SOURCE_DIR"""
import csv
import datetime as dt
import json
import os
import sys
import tempfile

from harness import Harness

enpu, src = sys.argv[1], os.path.abspath(sys.argv[2])
h = Harness(enpu, src)
fx = os.path.join(src, "tests/fixtures/traces")
tmp = tempfile.mkdtemp(prefix="enpu-convert-")
START = dt.datetime(2024, 3, 1, 14, 0, 0)


def convert(fmt, path, *extra):
    out = os.path.join(tmp, f"{fmt}-{len(os.listdir(tmp))}.csv")
    r = h.run("trace", "convert", "--from", fmt, path, "-o", out, "--json", *extra)
    doc = json.loads(r.stdout) if r.returncode == 0 else None
    rows = list(csv.reader(open(out)))[1:] if r.returncode == 0 else None
    return r, doc, rows, out


def stamp(t):
    return dt.datetime.strptime(t[:26], "%Y-%m-%d %H:%M:%S.%f")


# Azure: rows passed through unchanged.
for fmt in ("azure2023", "azure2024"):
    path = os.path.join(fx, f"{fmt}.csv")
    r, doc, rows, out = convert(fmt, path)
    src_rows = [l for l in open(path).read().splitlines()[1:] if l]
    h.check(f"{fmt}: exit 0, every row passed through unchanged",
            r.returncode == 0 and open(out).read().splitlines()[1:] == src_rows, r.stderr)
    h.check(f"{fmt}: the count reported", doc and doc["rows"] == len(src_rows) and doc["skipped"] == 0)

# BurstGPT: relative seconds from --start; its failed request (0 response tokens) is a bad row.
path = os.path.join(fx, "burstgpt.csv")
want = [(START + dt.timedelta(seconds=float(x["Timestamp"])), int(x["Request tokens"]), int(x["Response tokens"]))
        for x in csv.DictReader(open(path))]
fails = [i for i, w in enumerate(want) if w[2] == 0]
r, _, _, _ = convert("burstgpt", path, "--start", "2024-03-01 14:00:00")
h.check("burstgpt: the failed request (line %d) is an error naming file:line" % (fails[0] + 2),
        r.returncode == 2 and f"{path}:{fails[0] + 2}:" in r.stderr and "token count" in r.stderr, r.stderr)
r, doc, rows, burst_csv = convert("burstgpt", path, "--start", "2024-03-01 14:00:00", "--skip-bad-rows")
good = [w for w in want if w[2] > 0]
got = [(stamp(x[0]), int(x[1]), int(x[2])) for x in rows or []]
h.check("burstgpt --skip-bad-rows: one counted, the first named",
        doc and doc["skipped"] == len(fails) and f":{fails[0] + 2}:" in doc["first_skipped"], str(doc))
h.check("burstgpt: times, request and response tokens as the input's", got == good, f"{got} vs {good}")

# BurstGPT_3 (release v2.0): the 8-column layout with Session ID and Elapsed time.
path = os.path.join(fx, "burstgpt3.csv")
want3 = [(START + dt.timedelta(seconds=float(x["Timestamp"])), int(x["Request tokens"]), int(x["Response tokens"]))
         for x in csv.DictReader(open(path))]
r, doc, rows, _ = convert("burstgpt", path, "--start", "2024-03-01 14:00:00")
got = [(stamp(x[0]), int(x[1]), int(x[2])) for x in rows or []]
h.check("burstgpt 8 columns (Session ID, Elapsed time): times, request and response tokens as the input's",
        r.returncode == 0 and got == want3 and doc["unsorted"] == 0, r.stderr)

# Rows out of time order: written sorted with a warning and a count, refused under --strict.
b3 = open(path).read().splitlines()
path = os.path.join(tmp, "burst3-unsorted.csv")
open(path, "w").write("\n".join([b3[0], b3[3], b3[1], b3[4], b3[2]]) + "\n")  # lines 3 and 5 go back in time
r, doc, rows, _ = convert("burstgpt", path, "--start", "2024-03-01 14:00:00")
got = [(stamp(x[0]), int(x[1]), int(x[2])) for x in rows or []]
h.check("unsorted rows: exit 0, written in time order", r.returncode == 0 and got == sorted(want3), f"{r.stderr} {got}")
h.check("unsorted rows: counted (2, the first on line 3), and a warning saying so",
        doc and doc["unsorted"] == 2 and doc["first_unsorted_line"] == 3
        and "warning: 2 rows" in r.stderr and "line 3" in r.stderr, f"{doc} {r.stderr}")
r, _, _, _ = convert("burstgpt", path, "--strict")
h.check("unsorted rows under --strict: exit 2 naming file:3: and the order",
        r.returncode == 2 and f"{path}:3:1:" in r.stderr and "time order" in r.stderr, r.stderr)
r, doc, _, _ = convert("azure2024", os.path.join(fx, "azure2024.csv"), "--strict")
h.check("a sorted trace under --strict: exit 0", r.returncode == 0 and doc["unsorted"] == 0, r.stderr)

# Mooncake: ms from the start, input and output lengths.
path = os.path.join(fx, "mooncake.jsonl")
want = [json.loads(l) for l in open(path) if l.strip()]
r, doc, rows, moon_csv = convert("mooncake", path, "--start", "2024-03-01 14:00:00")
got = [(stamp(x[0]), int(x[1]), int(x[2])) for x in rows or []]
exp = [(START + dt.timedelta(milliseconds=w["timestamp"]), w["input_length"], w["output_length"]) for w in want]
h.check("mooncake: times in ms, input and output lengths", r.returncode == 0 and got == exp, r.stderr)

# Generic CSV: columns by name and by 1-based index, times in ms.
path = os.path.join(fx, "generic.csv")
want = list(csv.DictReader(open(path)))
r, doc, rows, _ = convert("csv", path, "--map", "time=arrival_ms,context=prompt_tokens,generated=4,unit=ms")
got = [(stamp(x[0]), int(x[1]), int(x[2])) for x in rows or []]
exp = [(dt.datetime(1970, 1, 1) + dt.timedelta(milliseconds=int(w["arrival_ms"])), int(w["prompt_tokens"]),
        int(w["completion_tokens"])) for w in want]
h.check("csv --map: columns by name and index, times from the default start", got == exp, f"{r.stderr} {got}")
r, _, _, _ = convert("csv", path, "--map", "time=arrival_ms,context=no_such,generated=4")
h.check("csv --map naming a missing column: exit 2 naming it", r.returncode == 2 and "no_such" in r.stderr, r.stderr)
r, _, _, _ = convert("csv", path)
h.check("csv without --map: exit 2 asking for it", r.returncode == 2 and "--map" in r.stderr, r.stderr)


# Bad rows of every format: file:line:column, or counted.
def bad(fmt, name, text, line, needle):
    path = os.path.join(tmp, name)
    open(path, "w").write(text)
    r, _, _, _ = convert(fmt, path)
    h.check(f"{fmt} bad row: exit 2 naming {name}:{line}: and '{needle}'",
            r.returncode == 2 and f"{path}:{line}:" in r.stderr and needle in r.stderr, r.stderr)
    r, doc, rows, _ = convert(fmt, path, "--skip-bad-rows")
    h.check(f"{fmt} bad row skipped and counted", r.returncode == 0 and doc["skipped"] == 1, r.stderr)


az = open(os.path.join(fx, "azure2023.csv")).read().splitlines()
bad("azure2023", "az.csv", "\n".join(az[:3] + ["2023-11-16 18:15:5x.0,10,10"] + az[3:]) + "\n", 4, "timestamp")
bad("azure2024", "az24.csv", "\n".join(az[:2] + ["2023-11-16 18:15:50.0,10"] + az[2:]) + "\n", 3, "',' after")
bu = open(os.path.join(fx, "burstgpt.csv")).read().splitlines()
bad("burstgpt", "bu.csv", "\n".join([bu[0], bu[1], "12,ChatGPT,abc,5,5,Conversation log", bu[2]]) + "\n", 3,
    "token count")
mo = open(os.path.join(fx, "mooncake.jsonl")).read().splitlines()
bad("mooncake", "mo.jsonl", "\n".join(mo[:4] + ['{"timestamp": 5, "input_length": 10'] + mo[4:]) + "\n", 5, "JSON")
bad("mooncake", "mo2.jsonl", "\n".join(mo[:1] + ['{"timestamp": 5, "input_length": 0, "output_length": 3}'] + mo[1:]),
    2, "input_length")
r, _, _, _ = convert("burstgpt", os.path.join(fx, "azure2023.csv"))
h.check("a file of another format: exit 2 naming the header expected",
        r.returncode == 2 and ":1:1:" in r.stderr and "Request tokens" in r.stderr, r.stderr)

# The BurstGPT and Mooncake samples replayed on a small store.
store = os.path.join(tmp, "plans.h5")
job = {"name": "convert-replay", "model": os.path.join(src, "jobs/models/llama3-70b.json"),
       "chip": os.path.join(src, "jobs/chips/tpuv5p.json"), "cluster": os.path.join(src, "jobs/clusters/llama3-70b.json"),
       "store": store, "phases": {"prefill": {"batch": [1, 2, 4], "seq": [1024, 4096, 8192]},
                                  "decode": {"batch": [1, 2, 4, 8], "seq": [2048, 8192]}},
       "slacks": [0.1], "policies": ["nodvfs", "enpu-all"], "moe": {"capacity_factor": "worst"}}
jpath = os.path.join(tmp, "job.json")
json.dump(job, open(jpath, "w"))
r = h.run("farm", jpath)
h.check("farm of the replay store: exit 0", r.returncode == 0, r.stderr[-1500:])
for label, trace in (("burstgpt", burst_csv), ("mooncake", moon_csv)):
    rows = list(csv.reader(open(trace)))[1:]
    rep = h.run_json("replay", "--store", store, "--trace", trace, "--cluster", job["cluster"])
    pol = rep["policies"]["enpu-all"]
    h.check(f"{label} replayed: every request served, none unservable",
            rep["requests"] == len(rows) and pol["served"] == len(rows) and pol["unservable"] == 0, json.dumps(rep)[:400])
    h.check(f"{label} replayed: the trace's token totals",
            rep["context_tokens"] == sum(int(x[1]) for x in rows)
            and rep["generated_tokens"] == sum(int(x[2]) for x in rows))
    h.check(f"{label} replayed: enpu-all saves energy over nodvfs", pol["energy_savings"]["total"] > 0)

# The replay's own reader: a trace out of time order is replayed sorted, with a warning and
# a count, and answers as the sorted trace does.
rows = open(burst_csv).read().splitlines()
unsorted = os.path.join(tmp, "replay-unsorted.csv")
open(unsorted, "w").write("\n".join([rows[0], rows[-1]] + rows[1:-1]) + "\n")  # line 3 goes back in time
args = ("replay", "--store", store, "--cluster", job["cluster"], "--json", "--trace")
r_sorted, r_unsorted = h.run(*args, burst_csv), h.run(*args, unsorted)
h.check("replay of an unsorted trace: exit 0, a warning counting 1 row from line 3",
        r_unsorted.returncode == 0 and "warning: 1 rows" in r_unsorted.stderr and "line 3" in r_unsorted.stderr,
        r_unsorted.stderr)
a, b = json.loads(r_sorted.stdout), json.loads(r_unsorted.stdout)
h.check("replay of an unsorted trace: the sorted trace's answer",
        a["requests"] == b["requests"] and a["policies"] == b["policies"],
        f"{a['policies']['enpu-all']} vs {b['policies']['enpu-all']}")
# `enpu trace burst`: the replay's shaping rule on a window of the shipped trace. Every
# row of the input is kept, the window's rows come K times (K = 3: exactly 2 copies
# each, inside the window's span), the output is the same for the same seed, differs for
# another, and raises the peak; bad shapes are usage errors.
shipped = os.path.join(src, "jobs", "traces", "AzureLLMInferenceTrace_conv.csv")
lines = [x.rstrip("\r") for x in open(shipped).read().splitlines()]


def secs(line):
    return dt.datetime.strptime(line.split(",")[0][:19], "%Y-%m-%d %H:%M:%S").timestamp() + float(
        "0." + line.split(",")[0][20:])


t0 = secs(lines[1])
window = [x for x in lines[1:] if 600 <= secs(x) - t0 < 660]
b1, b2, b3 = (os.path.join(tmp, f"burst{i}.csv") for i in (1, 2, 3))
r = h.run("trace", "burst", shipped, "--window", "600,60,3", "-o", b1)
h.check("trace burst --window: exit 0", r.returncode == 0, r.stderr)
out = open(b1).read().splitlines()
h.check("trace burst: the input's header, every input row kept", out[0] == lines[0] and not set(lines) - set(out))
h.check("trace burst: the window's rows come 3 times", len(out) == len(lines) + 2 * len(window),
        (len(out), len(lines), len(window)))
extra = [secs(x) - t0 for x in set(out) - set(lines)]
h.check("trace burst: the copies arrive inside the window", extra and min(extra) >= 600 and max(extra) < 661,
        (min(extra), max(extra)) if extra else None)
h.check("trace burst: sorted by time", [secs(x) for x in out[1:]] == sorted(secs(x) for x in out[1:]))
h.run("trace", "burst", shipped, "--window", "600,60,3", "-o", b2)
h.run("trace", "burst", shipped, "--window", "600,60,3", "--seed", "2", "-o", b3)
h.check("trace burst: deterministic for a seed, another seed draws other times",
        open(b1).read() == open(b2).read() and open(b1).read() != open(b3).read())
peak = lambda p: h.run_json("trace", "burst", p, "--peak")["peak_arrivals_per_s"]
h.check("trace burst --peak: the burst raises the peak", peak(b1) > peak(shipped), (peak(b1), peak(shipped)))
for bad in (["--window", "600,0,3"], ["--window", "600,60,0.5"], ["--onoff", "0,50,2"], ["--window", "1,2"], []):
    r = h.run("trace", "burst", shipped, *bad, "-o", b3)
    h.check(f"trace burst {' '.join(bad) or '(no shape)'}: exit 2", r.returncode == 2, r.stderr)
h.finish()
