#!/usr/bin/python3
"""Input rules every command keeps (README, Failure semantics, "Bad input, everywhere").

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
Usage: test_inputs.py ENPU SOURCE_DIR"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

from harness import Harness
from farm_harness import ENV

BUCKET = ["--phase", "decode", "--batch", "8", "--seq", "2048"]


def main():
    h = Harness(os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]))
    tmp = tempfile.mkdtemp(prefix="enpu-inputs-")
    src = os.path.join(h.src, "jobs")

    def job_file(name, **changes):
        job = json.load(open(os.path.join(src, "demo.json")))
        del job["validation"]
        for k in ("model", "chip", "cluster"):
            job[k] = os.path.join(src, job[k])
        job.update(name=name, store=os.path.join(tmp, f"{name}.h5"), policies=["nodvfs"],
                   phases={"prefill": {"batch": [1], "seq": [1024]}, "decode": {"batch": [8], "seq": [2048]}},
                   **changes)
        path = os.path.join(tmp, f"{name}.json")
        json.dump(job, open(path, "w"), indent=2)
        return path

    def run(*args, timeout=600):
        return subprocess.run([h.enpu, *args], capture_output=True, text=True, env=ENV, cwd=tmp, timeout=timeout)

    job = job_file("inputs")
    store = os.path.join(tmp, "inputs.h5")
    r = run("farm", job, "--quiet", "--json")
    if not h.check("a small store to read (farm exit 0)", r.returncode == 0, r.stderr[-500:]):
        h.finish()

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

    shutil.rmtree(tmp, ignore_errors=True)
    h.finish()


if __name__ == "__main__":
    main()
