#!/usr/bin/python3
"""Every command's exit status on bad input is docs/store.md's 2, and bad input is refused
where it is first seen.

  1. Each command (buckets, graph, op, compile, farm, query, store info/verify/diff,
     replay, validate, report) on a missing file, on a malformed JSON file (given where a
     job, a cluster or a store goes) and with an out-of-range (or unknown) option: exit 2
     with a message on stderr, nothing on stdout (`store verify` calls a file that is
     not HDF5 damaged: 1, as its table says).
  2. A single-value option given twice (`--slack 0 --slack 0.1`, `--batch`, `--store`) is
     a usage error (exit 2), never "the last one wins"; --add-buckets stays repeatable.
  3. A chip whose vu.shadow_vregs exceeds its vregs is refused at load with the chip
     file, line and JSON path; a trace row whose UTC offset is +99:99 is refused with the
     trace's file:line:column.
  4. A farm whose job's validation trace is missing exits 2 before its first task: no
     store, no journal, nothing computed.
  5. `enpu validate --job J --cluster C` with a cluster of other chips and node
     parallelism than the store's exits 2 with the same message `enpu replay` gives for
     it (one provenance check), and the store is left as it was.
  6. Damaged copies of a store (a byte flipped every 1/80 of it): `store verify` and
     `query` fail with their own message, never with HDF5's exit-time "infinite loop
     closing library" dump (HDF5 1.10.8 prints it after an object header failed to load).
Usage: test_exit_codes.py ENPU SOURCE_DIR"""
import json
import os
import shutil
import sys

from farm_harness import run_in, small_demo_variant, small_store_test

BUCKET = ["--phase", "decode", "--batch", "8", "--seq", "2048"]


def main():
    h, tmp, job, store = small_store_test(sys.argv, "enpu-exit-", "codes")
    src = os.path.join(h.src, "jobs")
    trace = os.path.join(src, "traces", "AzureLLMInferenceTrace_conv.csv")
    cluster = os.path.join(src, "clusters", "llama3-70b.json")

    def job_file(name, **changes):
        return small_demo_variant(h, tmp, name, **changes)

    def run(*args):
        return run_in(h, tmp, *args)

    missing = os.path.join(tmp, "no-such-file.json")
    bad = os.path.join(tmp, "bad.json")
    open(bad, "w").write('{"name": "bad", "model": \n')
    commands = {
        # name: (arguments with X where the file goes, an out-of-range (or unknown) option)
        "buckets": (["X"], ["--bogus"]),
        "graph": (["X", *BUCKET], ["--batch", "0"]),
        "op": (["X", *BUCKET, "--op", "0", "--plan", "34,34,34,34,34"], ["--op", "-1"]),
        "compile": (["X", *BUCKET, "--policy", "nodvfs"], ["--batch", "0"]),
        "farm": (["X", "--store", os.path.join(tmp, "f.h5"), "--quiet"], ["--checkpoint-s", "0"]),
        "query": (["X", *BUCKET, "--slack", "0.05"], ["--slack", "-1"]),
        "store info": (["X"], ["--bogus"]),
        "store verify": (["X"], ["--bogus"]),
        "store diff": (["X", store], ["--bogus"]),
        "replay": (["--store", "X", "--trace", trace, "--cluster", cluster, "--rate", "1"], ["--rate", "-1"]),
        "validate": (["X", "--trace", trace, "--cluster", cluster, "--sample", "1"], ["--sample", "0"]),
        "report": (["X", "--out", os.path.join(tmp, "rep")], ["--bogus"]),
    }
    takes_job = {"buckets", "graph", "op", "compile", "farm"}
    for name, (args, wrong) in commands.items():
        good = job if name in takes_job else store
        given = [good if a == "X" else a for a in args]
        if wrong[0] in given:  # the same option with the wrong value (twice is its own error)
            given[given.index(wrong[0]) + 1] = wrong[1]
        else:
            given += wrong
        cases = [("a missing file", [missing if a == "X" else a for a in args]), ("an out-of-range option", given)]
        if name in takes_job or name.startswith("store") or name == "report" or name == "query":
            cases.insert(1, ("a malformed JSON file", [bad if a == "X" else a for a in args]))
        else:  # replay, validate: the cluster file malformed, the store good
            cases.insert(1, ("a malformed JSON cluster",
                             [good if a == "X" else bad if a == cluster else a for a in args]))
        for what, argv in cases:
            r = run(*name.split(), *argv)
            # store verify calls any file it cannot read as a store damaged (1): a flipped
            # byte in a store's HDF5 signature makes it "not HDF5" too
            want = 1 if name == "store verify" and "malformed" in what else 2
            print(f"     enpu {name} on {what}: exit {r.returncode}: {r.stderr.strip().splitlines()[:1]}")
            h.check(f"{name} on {what}: exit {want} with a message",
                    r.returncode == want and r.stderr.strip() and not r.stdout.strip(),
                    f"exit {r.returncode}: {r.stderr[-300:]} {r.stdout[-200:]}")

    # 2. a single-value option twice
    for argv in (["query", store, *BUCKET, "--slack", "0", "--slack", "0.1"],
                 ["compile", job, *BUCKET, "--batch", "4"],
                 ["farm", job, "--store", store, "--store", os.path.join(tmp, "other.h5")]):
        r = run(*argv)
        opt = [a for a in argv if argv.count(a) > 1 and a.startswith("--")][0]
        h.check(f"{argv[0]} {opt} given twice: usage error naming it",
                r.returncode == 2 and f"{opt} given twice" in r.stderr, f"exit {r.returncode}: {r.stderr[-300:]}")
    r = run("farm", job, "--store", os.path.join(tmp, "added.h5"), "--quiet", "--json",
            "--add-buckets", "phase=decode,batch=16,seq=2048", "--add-buckets", "phase=decode,batch=24,seq=2048")
    h.check("farm --add-buckets twice: still repeatable (exit 0)", r.returncode == 0, r.stderr[-300:])

    # 3. shadow_vregs > vregs; a UTC offset of +99:99
    chips = os.path.join(tmp, "chips")
    shutil.copytree(os.path.join(src, "chips"), chips)
    chip_path = os.path.join(chips, "tpuv5p.json")
    chip = json.load(open(chip_path))
    chip["vu"]["shadow_vregs"] = chip["vu"]["vregs"] + 1
    json.dump(chip, open(chip_path, "w"), indent=2)
    r = run("buckets", job_file("shadow", chip=chip_path))
    h.check("chip shadow_vregs > vregs: refused at load (exit 2) with file:line and the JSON path",
            r.returncode == 2 and "tpuv5p.json:" in r.stderr and "$.vu.shadow_vregs" in r.stderr,
            f"exit {r.returncode}: {r.stderr[-300:]}")
    rows = open(trace).read().splitlines()
    bad_trace = os.path.join(tmp, "tz.csv")
    stamp, rest = rows[3].split(",", 1)
    open(bad_trace, "w").write("\n".join(rows[:3] + [stamp + "+99:99," + rest] + rows[4:20]) + "\n")
    r = run("replay", "--store", store, "--trace", bad_trace, "--cluster", cluster, "--rate", "1")
    h.check("trace UTC offset +99:99: refused (exit 2) with file:line:column",
            r.returncode == 2 and "tz.csv:4:" in r.stderr and "offset" in r.stderr,
            f"exit {r.returncode}: {r.stderr[-300:]}")

    # 4. a missing validation trace, before the first task
    vjob = job_file("noval", validation={"trace": os.path.join(tmp, "missing.csv"), "sample": 1, "seed": 1})
    vstore = os.path.join(tmp, "noval.h5")
    r = run("farm", vjob, "--json")
    h.check("farm with a missing validation trace: exit 2 naming it",
            r.returncode == 2 and "missing.csv" in r.stderr, f"exit {r.returncode}: {r.stderr[-300:]}")
    h.check("farm with a missing validation trace: nothing computed or written",
            not os.path.exists(vstore) and not os.path.exists(vstore + ".journal"),
            str(sorted(os.listdir(tmp))))

    # 5. validate --job --cluster refuses a cluster that does not fit the store, as replay
    cl = json.load(open(cluster))
    cl["decode"].update(chips=8, parallel=dict(cl["decode"]["parallel"], tp=8))
    os.makedirs(os.path.join(tmp, "j", "clusters"))
    for d in ("models", "chips"):  # what the cluster file names, relative to it
        os.symlink(os.path.join(src, d), os.path.join(tmp, "j", d))
    other = os.path.join(tmp, "j", "clusters", "tp8.json")
    json.dump(cl, open(other, "w"), indent=2)
    before = open(store, "rb").read()
    v = run("validate", store, "--job", job, "--cluster", other, "--trace", trace, "--sample", "1")
    p = run("replay", "--store", store, "--trace", trace, "--cluster", other, "--rate", "1")
    why = v.stderr.split(": ", 1)[-1].strip()
    h.check("validate --job --cluster with another node parallelism: exit 2, as replay",
            v.returncode == 2 and p.returncode == 2, f"validate {v.returncode}: {v.stderr[-300:]} replay {p.returncode}")
    h.check("validate and replay give the one provenance check's message",
            why and why == p.stderr.split(": ", 1)[-1].strip(), f"{v.stderr[-300:]} / {p.stderr[-300:]}")
    h.check("validate with a cluster that does not fit: the store is unchanged", open(store, "rb").read() == before)

    # 6. damaged copies of a store: errors of our own, never HDF5's exit-time dump
    data = open(store, "rb").read()
    damaged, dumps, failed = os.path.join(tmp, "damaged.h5"), 0, 0
    for at in range(0, len(data), len(data) // 80 + 1):
        bad_bytes = bytearray(data)
        bad_bytes[at] ^= 0xFF
        open(damaged, "wb").write(bad_bytes)
        for argv in (["store", "verify", damaged], ["query", damaged, *BUCKET, "--slack", "0.05"]):
            r = run(*argv)
            failed += r.returncode != 0
            dumps += "infinite loop closing library" in r.stderr
    print(f"     {failed} failed reads of damaged stores, {dumps} HDF5 dumps")
    h.check("damaged stores: some reads fail, none prints HDF5's 'infinite loop closing library'",
            failed > 0 and dumps == 0, f"{dumps} dumps")
    shutil.rmtree(tmp, ignore_errors=True)
    h.finish()


if __name__ == "__main__":
    main()
