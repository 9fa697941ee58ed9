#!/usr/bin/python3
"""Input rules every command keeps (docs/store.md, Failure semantics, "Bad input, everywhere").

  1. A key given twice inside one option value (`farm --add-buckets
     phase=decode,batch=8,seq=3000,seq=5000`, `query --variant ivr.step_ns=40,ivr.step_ns=4000`,
     `trace convert --map time=..,time=..`) is a usage error (exit 2) naming the key,
     never "the last one wins"; nothing is written.
  2. A checksum-damaged store given to `store diff` (either side) exits 1, as every other
     command that reads it (`store verify`, `store info`, `query`); a file that is no plan
     store is still 2.
  3. A Hugging Face config.json imported with 0 where a count or size must be positive
     (num_attention_heads, num_key_value_heads, hidden_size, ...) is refused (exit 2)
     naming that field with the config's file:line:column, not a later rule it breaks nor
     the imported model's field.
  4. An input that is no regular file (/dev/zero, a FIFO, a directory) or larger than an
     input may hold (a JSON file or power table over 64 MiB, a trace over 16 GiB; sparse
     files here) is refused at once (exit 2) naming the path and why, wherever it is
     given: a job file, a job's model, chip or cluster, a chip's power table, `model
     import`, a store, a trace, a farm job's validation trace; validate refuses its trace
     before re-simulating anything.
  5. `validate --job` with a job of another model than the store's exits 2 from the
     provenance alone: nothing is re-simulated or replayed and the store is unchanged.
Usage: test_inputs.py ENPU SOURCE_DIR"""
import json
import os
import re
import resource
import shutil
import subprocess
import sys

from farm_harness import run_in, small_demo_variant, small_store_test

BUCKET = ["--phase", "decode", "--batch", "8", "--seq", "2048"]


def main():
    h, tmp, job, store = small_store_test(sys.argv, "enpu-inputs-", "inputs")
    src = os.path.join(h.src, "jobs")

    def job_file(name, **changes):
        return small_demo_variant(h, tmp, name, **changes)

    def run(*args, **kw):
        return run_in(h, tmp, *args, **kw)

    def at_most_4_gib():  # so a reader that never ends fails the test, not the machine
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))

    # 1. a key given twice inside one option value
    for spec, key in (("phase=decode,batch=8,seq=3000,seq=5000", "seq"),
                      ("phase=decode,batch=8,seq=3000,phase=prefill", "phase")):
        added = os.path.join(tmp, f"added-{key}.h5")
        r = run("farm", job, "--store", added, "--quiet", "--add-buckets", spec)
        h.check(f"farm --add-buckets {spec}: usage error naming '{key}'",
                r.returncode == 2 and f"'{key}' given twice" in r.stderr, f"exit {r.returncode}: {r.stderr[-300:]}")
        h.check(f"farm --add-buckets {spec}: nothing written", not os.path.exists(added), str(os.listdir(tmp)))
    r = run("query", store, *BUCKET, "--slack", "0", "--variant", "ivr.step_ns=40,ivr.step_ns=4000")
    h.check("query --variant ivr.step_ns=40,ivr.step_ns=4000: usage error naming ivr.step_ns",
            r.returncode == 2 and "'ivr.step_ns' given twice" in r.stderr and "--variant" in r.stderr
            and not r.stdout, f"exit {r.returncode}: {r.stderr[-300:]}")
    csv = os.path.join(tmp, "mapped.csv")
    open(csv, "w").write("t,c,g\n1,100,10\n2,200,20\n")
    out = os.path.join(tmp, "mapped_conv.csv")
    for spec, key in (("time=t,context=c,generated=g,time=c", "time"), ("time=t,context=c,generated=g,unit=s,unit=ms",
                                                                        "unit")):
        r = run("trace", "convert", csv, "--from", "csv", "--map", spec, "-o", out)
        h.check(f"trace convert --map {spec}: usage error naming '{key}', nothing written",
                r.returncode == 2 and f"'{key}' given twice" in r.stderr and not os.path.exists(out),
                f"exit {r.returncode}: {r.stderr[-300:]}")
    r = run("trace", "convert", csv, "--from", "csv", "--map", "time=t,context=c,generated=g,unit=ms", "-o", out)
    h.check("trace convert --map with each key once: converted (exit 0)", r.returncode == 0, r.stderr[-300:])

    # 2. store diff on a checksum-damaged store: 1, as the others
    data = open(store, "rb").read()
    damaged = os.path.join(tmp, "damaged.h5")
    found = None
    for at in range(0, len(data), 17):
        flipped = bytearray(data)
        flipped[at] ^= 0xFF
        open(damaged, "wb").write(flipped)
        v = run("store", "verify", damaged)
        if v.returncode == 1 and "checksum mismatch" in v.stderr:
            found = v.stderr
            break
    if h.check("a byte flip the store's checksums catch", found is not None):
        for argv in (["store", "diff", store, damaged], ["store", "diff", damaged, store], ["store", "info", damaged],
                     ["query", damaged, *BUCKET, "--slack", "0.05"]):
            r = run(*argv)
            said = " ".join("DAMAGED" if a == damaged else "REF" if a == store else a for a in argv)
            h.check(f"{said}: exit 1 naming the damaged table", r.returncode == 1 and "checksum mismatch" in r.stderr,
                    f"exit {r.returncode}: {r.stderr[-300:]}")
    r = run("store", "diff", store, job)
    h.check("store diff REF NOT-A-STORE: still 2", r.returncode == 2, f"exit {r.returncode}: {r.stderr[-300:]}")

    # 3. 0 in a Hugging Face config where the graph needs at least 1
    hf = os.path.join(h.src, "tests", "fixtures", "hf")
    cases = {"llama3.1-8b.json": ["num_attention_heads", "num_key_value_heads", "hidden_size", "head_dim",
                                  "num_hidden_layers", "vocab_size", "intermediate_size"],
             "mixtral-8x7b.json": ["num_local_experts", "num_experts_per_tok"],
             "deepseek-v3-671b.json": ["num_attention_heads", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
                                       "v_head_dim", "n_routed_experts", "moe_intermediate_size"]}
    zero = os.path.join(tmp, "zero.json")
    model_out = os.path.join(tmp, "zero-model.json")
    for base, keys in cases.items():
        cfg = json.load(open(os.path.join(hf, base)))
        for key in keys:
            changed = dict(cfg, **{key: 0})
            text = json.dumps(changed, indent=2)
            open(zero, "w").write(text)
            line = next(i + 1 for i, t in enumerate(text.splitlines()) if t.strip().startswith(f'"{key}":'))
            r = run("model", "import", zero, "-o", model_out)
            h.check(f"model import {base} with {key}: 0: exit 2 naming {key} at zero.json:{line}",
                    r.returncode == 2 and re.search(rf"zero\.json:{line}:\d+: \$\.{key}: expected an integer from 1 ",
                                                    r.stderr) and not os.path.exists(model_out),
                    f"exit {r.returncode}: {r.stderr[-300:]}")

    # 4. inputs that are no regular file, or larger than an input may hold: exit 2 at once
    fifo = os.path.join(tmp, "fifo")
    os.mkfifo(fifo)
    adir = os.path.join(tmp, "adir")
    os.mkdir(adir)
    big_json = os.path.join(tmp, "big.json")  # sparse: 64 MiB + 1, over ENPU_READ_MAX_BYTES
    with open(big_json, "wb") as f:
        f.truncate((64 << 20) + 1)
    big_trace = os.path.join(tmp, "big.csv")  # sparse: 16 GiB + 1, over ENPU_TRACE_MAX_BYTES
    with open(big_trace, "wb") as f:
        f.truncate((16 << 30) + 1)
    chips = os.path.join(tmp, "chips")
    shutil.copytree(os.path.join(src, "chips"), chips)
    os.remove(os.path.join(chips, "tpuv5p", "sa_vf_power.csv"))
    os.symlink("/dev/zero", os.path.join(chips, "tpuv5p", "sa_vf_power.csv"))
    trace = os.path.join(src, "traces", "AzureLLMInferenceTrace_conv.csv")
    cluster = os.path.join(src, "clusters", "llama3-70b.json")
    copy = os.path.join(tmp, "copy.h5")
    shutil.copyfile(store, copy)
    vjob = job_file("vtrace", validation={"trace": fifo, "sample": 1, "seed": 1})
    fjob = job_file("fjournal")
    os.mkfifo(os.path.join(tmp, "fjournal.h5.journal"))
    cases = [("buckets JOB", "/dev/zero", ["buckets", "/dev/zero"]),
             ("buckets JOB", fifo, ["buckets", fifo]),
             ("buckets JOB", adir, ["buckets", adir]),
             ("buckets JOB", big_json, ["buckets", big_json]),
             ("a job's model", "/dev/zero", ["buckets", job_file("zmodel", model="/dev/zero")]),
             ("a job's chip", fifo, ["buckets", job_file("zchip", chip=fifo)]),
             ("a job's cluster", "/dev/zero", ["farm", job_file("zcluster", cluster="/dev/zero"), "--quiet"]),
             ("a chip's power table", "sa_vf_power.csv",
              ["buckets", job_file("ztable", chip=os.path.join(chips, "tpuv5p.json"))]),
             ("model import", "/dev/zero", ["model", "import", "/dev/zero", "-o", os.path.join(tmp, "m.json")]),
             ("query STORE", fifo, ["query", fifo, *BUCKET, "--slack", "0"]),
             ("store info STORE", "/dev/zero", ["store", "info", "/dev/zero"]),
             ("store diff REF X", adir, ["store", "diff", store, adir]),
             ("replay --trace", "/dev/zero", ["replay", "--store", store, "--trace", "/dev/zero", "--cluster", cluster]),
             ("replay --trace", big_trace, ["replay", "--store", store, "--trace", big_trace, "--cluster", cluster]),
             ("replay --cluster", fifo, ["replay", "--store", store, "--trace", trace, "--cluster", fifo]),
             ("trace convert", fifo, ["trace", "convert", fifo, "--from", "azure2023", "-o", os.path.join(tmp, "t.csv")]),
             ("validate --trace", fifo, ["validate", copy, "--job", job, "--trace", fifo, "--cluster", cluster]),
             ("farm: the job's validation trace", fifo, ["farm", vjob, "--quiet"]),
             ("farm: a FIFO at the store's journal", "fjournal.h5.journal", ["farm", fjob, "--quiet"])]
    for what, bad, argv in cases:
        try:  # a hang guard: the refusal takes milliseconds
            r = run(*argv, timeout=30, preexec_fn=at_most_4_gib)
        except subprocess.TimeoutExpired:
            h.fail(f"{what} = {os.path.basename(bad)}: refused", "still reading after 30 s")
            continue
        why = "regular file" if bad not in (big_json, big_trace) else "more than this input may hold"
        h.check(f"{what} = {os.path.basename(bad)}: exit 2 naming it and why",
                r.returncode == 2 and os.path.basename(bad) in r.stderr and why in r.stderr,
                f"exit {r.returncode}: {r.stderr[-300:]}")
    h.check("validate with a FIFO trace: refused before any re-simulation, the store as it was",
            "re-simulated" not in r.stderr and open(copy, "rb").read() == open(store, "rb").read())
    h.check("farm with a FIFO validation trace: nothing written", not os.path.exists(os.path.join(tmp, "vtrace.h5")))

    # 5. validate --job of another model's job: refused from the provenance, before any work
    other = os.path.join(src, "llama3.1-405b.json")
    r = run("validate", copy, "--job", other, "--trace", trace, "--cluster", cluster, "--sample", "1")
    h.check("validate --job of another model: exit 2 naming both models",
            r.returncode == 2 and "'llama3-70b'" in r.stderr and "'llama3.1-405b'" in r.stderr,
            f"exit {r.returncode}: {r.stderr[-400:]}")
    h.check("validate --job of another model: nothing re-simulated or replayed, the store as it was",
            "re-simulated" not in r.stderr and "replay" not in r.stdout and not r.stdout
            and open(copy, "rb").read() == open(store, "rb").read(), r.stderr[-400:])

    shutil.rmtree(tmp, ignore_errors=True)
    h.finish()


if __name__ == "__main__":
    main()
