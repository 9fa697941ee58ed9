#!/usr/bin/python3
"""`enpu model import` on published config.json files, as tests/fixtures/hf/README.md
documents them, and what the importer promises about such files:

1. Every row of the README's table of published files imports as its "expected" column
   says: `imports` with the total parameters within 1 % of the published size, or an
   exit 2 whose error holds the stated words.
2. A full PretrainedConfig dump (Mistral-7B-Instruct-v0.3's 67 keys) imports in one run;
   every unknown key of a config is reported in one error, each at its file:line:column;
   the architecture is checked before the keys (gpt-oss's attention sinks, mllama's
   cross-attention layers are named as what the graph cannot express).
3. Dispatch on `architectures`: Kimi-K2's model_type kimi_k2 building
   DeepseekV3ForCausalLM imports as DeepSeek-V3, with a note; a config nested under
   text_config imports its language model, with a note.
4. The context limit: imported from max_position_embeddings (or a YaRN extension), and a
   job bucket beyond it is refused at job load, at the bucket's file:line:column.
5. The summary: total and active parameters, weight bytes, KV bytes per token and the
   context limit, in text and in --json.

usage: test_model_import_published.py ENPU_BINARY SOURCE_DIR"""
import json
import os
import re
import sys
import tempfile

from harness import Harness, md_rows

enpu, src = sys.argv[1], os.path.abspath(sys.argv[2])
h = Harness(enpu, src)
hf = os.path.join(src, "tests/fixtures/hf")
tmp = tempfile.mkdtemp(prefix="enpu-import-pub-")


def do_import(path, *extra):
    return h.run("model", "import", path, "--json", *extra)


def import_doc(name, doc):
    """do_import of a config document written to tmp/name."""
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        json.dump(doc, f, indent=2)
    return do_import(path)


def imported(name, r):
    """Check (as `name`) that the import r exited 0; its JSON output, or None if not."""
    return json.loads(r.stdout) if h.check(name, r.returncode == 0, r.stderr) else None


# 1. The README's table, row by row.
rows = md_rows(open(os.path.join(hf, "README.md")).read(), "| file | repository |")
h.check("README lists at least 15 published files", len(rows) >= 15, str(len(rows)))
for row in rows:
    name, repo, path, commit, size, expected = row[0].strip("`"), row[1], row[2], row[3], row[4], row[5]
    quoted = re.fullmatch(r"\S+\.md \(its \S+ block\)", path)  # a config.json quoted whole in a document
    h.check(f"{name}: source stated (repository, path, 40-hex commit)",
            "/" in repo and (path.endswith("config.json") or quoted) and re.fullmatch(r"[0-9a-f]{40}", commit),
            str(row))
    r = do_import(os.path.join(hf, name))
    if expected == "imports":
        ok = r.returncode == 0
        h.check(f"{name}: imports", ok, r.stderr)
        if not ok:
            continue
        total = json.loads(r.stdout).get("summary", {}).get("params_total", 0) / 1e9
        print(f"     {name}: {total:.3f} B parameters (published {size})")
        if "not checked" in size:
            continue
        published = float(size)
        h.check(f"{name}: {total:.3f} B parameters within 1 % of the published {published} B",
                abs(total / published - 1) <= 0.01, f"{total:.3f}")
    else:
        needle = expected.split("error:", 1)[1].strip()
        h.check(f"{name}: exit 2 naming '{needle}' and the file", r.returncode == 2 and needle in r.stderr
                and name in r.stderr, f"exit {r.returncode}: {r.stderr}")

# ALLaM with its authors' key named as ignored: the 7.0 B model.
r = do_import(os.path.join(hf, "allam-7b-instruct-preview.json"), "--ignore", "internal_version")
h.check("allam with --ignore internal_version: 7.0 B within 1 %",
        r.returncode == 0 and abs(json.loads(r.stdout)["summary"]["params_total"] / 7.0e9 - 1) <= 0.01, r.stderr)

# 2. A full PretrainedConfig dump in one run; every unknown key in one error.
r = do_import(os.path.join(hf, "mistral-7b-instruct-v0.3.json"))
h.check("Mistral-7B-Instruct-v0.3's full dump (return_dict, id2label, temperature, ...) imports in one run",
        r.returncode == 0, r.stderr)
base = json.load(open(os.path.join(hf, "llama3.1-8b-instruct.json")))
unknown = {"zz_first": 1, "new_decoder_architecture": True, "zz_third": "x"}
bad = dict(base, **unknown)
bad_path = os.path.join(tmp, "three-unknown.json")
with open(bad_path, "w") as f:
    json.dump(bad, f, indent=2)
lines = open(bad_path).read().splitlines()
r = do_import(bad_path)
h.check("three unknown keys: exit 2", r.returncode == 2, r.stderr)
for key in unknown:
    line = next(i + 1 for i, l in enumerate(lines) if l.strip().startswith(f'"{key}"'))
    col = lines[line - 1].index(":") + 3  # the value's column (1-based)
    h.check(f"unknown key {key} reported at {bad_path}:{line}:{col}",
            f"{bad_path}:{line}:{col}: $.{key}" in r.stderr, r.stderr)
h.check("one error names all three (one run)", "3 unknown fields" in r.stderr, r.stderr)

# The architecture first: a family that cannot be expressed says so, even with unknown keys.
oss = dict(base, architectures=["GptOssForCausalLM"], model_type="gpt_oss", zz_unknown=1)
r = import_doc("gpt-oss.json", oss)
h.check("gpt-oss with an unknown key: the architecture's error (attention sinks), not the key's",
        r.returncode == 2 and "attention sinks" in r.stderr and "zz_unknown" not in r.stderr, r.stderr)
mll = dict(base, architectures=["MllamaForConditionalGeneration"], model_type="mllama", zz_unknown=1)
r = import_doc("mllama.json", mll)
h.check("mllama: the error names its cross-attention layers",
        r.returncode == 2 and "cross-attention" in r.stderr and "zz_unknown" not in r.stderr, r.stderr)

# 3. Kimi-K2: DeepSeek-V3's class under model_type kimi_k2 (its published config is DeepSeek-V3's
# with these sizes changed).
ds = json.load(open(os.path.join(hf, "deepseek-v3-published.json")))
kimi = dict(ds, model_type="kimi_k2", architectures=["DeepseekV3ForCausalLM"], n_routed_experts=384,
            num_attention_heads=64, first_k_dense_replace=1, vocab_size=163840)
out = imported("kimi_k2 under DeepseekV3ForCausalLM imports", import_doc("kimi-k2.json", kimi))
if out:
    h.check("kimi_k2: a note names the model_type and the family",
            any("kimi_k2" in n and "deepseek_v3" in n for n in out["notes"]), str(out["notes"]))
    h.check("kimi_k2: MLA attention, 384 experts", out["model"]["attention"]["kind"] == "mla"
            and out["model"]["moe"]["routed_experts"] == 384, str(out["model"]))
    total = out["summary"]["params_total"] / 1e9
    h.check(f"kimi_k2: {total:.1f} B parameters within 1 % of the published 1026 B (1.03 T in its safetensors)",
            abs(total / 1026 - 1) <= 0.01, f"{total:.1f}")
devstral = os.path.join(hf, "devstral-small-2-24b-instruct.json")
out = imported("text_config (Devstral Small 2): imports", do_import(devstral))
if out:
    h.check("text_config: a note that the vision tower is not modelled",
            any("text_config" in n and "vision tower" in n for n in out["notes"]), str(out["notes"]))
    h.check("text_config: the language model's sizes", out["model"]["hidden"] == 5120 and
            out["model"]["layers"] == 40 and out["model"]["attention"]["head_dim"] == 128, str(out["model"]))

# 4. The context limit.
r = do_import(os.path.join(hf, "qwen3-8b.json"), "-o", os.path.join(tmp, "qwen3-8b.json"))
h.check("Qwen3-8B: context limit 40960 in the model file",
        r.returncode == 0 and json.load(open(os.path.join(tmp, "qwen3-8b.json")))["context_limit"] == 40960, r.stderr)
q25 = json.load(open(os.path.join(hf, "qwen2.5-7b-instruct.json")))
q25["rope_scaling"] = {"factor": 4.0, "original_max_position_embeddings": 32768, "type": "yarn"}
r = import_doc("qwen2.5-yarn.json", q25)
h.check("YaRN factor 4 over 32768: context limit 131072",
        r.returncode == 0 and json.loads(r.stdout)["model"]["context_limit"] == 131072, r.stderr)
cluster = json.load(open(os.path.join(src, "jobs/clusters/llama3-70b.json")))
cluster.update(name="qwen3-8b-tp1", model="qwen3-8b")
for ph in ("prefill", "decode"):
    cluster[ph] = {"nodes": 1, "chips": 1, "parallel": {"dp": 1, "tp": 1, "pp": 1, "ep": 1}}
json.dump(cluster, open(os.path.join(tmp, "cluster.json"), "w"))
job_text = """{
  "name": "qwen3-8b-long", "model": "qwen3-8b.json", "chip": "%s", "cluster": "cluster.json",
  "store": "long/plans.h5",
  "phases": {
    "prefill": {"batch": [1], "seq": [4096, 1000000]},
    "decode": {"batch": [8], "seq": [8192]}
  },
  "slacks": [0.05], "policies": ["nodvfs"], "capacity": "ignore"
}
""" % os.path.join(src, "jobs/chips/tpuv5p.json")
job_path = os.path.join(tmp, "job-long.json")
open(job_path, "w").write(job_text)
r = h.run("graph", job_path, "--phase", "prefill", "--batch", "1", "--seq", "4096")
col = job_text.splitlines()[4].index("1000000") + 1
h.check(f"a 1,000,000-token bucket of Qwen3-8B (limit 40960): refused at job load, exit 2, at 5:{col}",
        r.returncode == 2 and f"{job_path}:5:{col}: $.phases.prefill.seq[1]" in r.stderr and "context limit" in r.stderr
        and "40960" in r.stderr, r.stderr)
open(job_path, "w").write(job_text.replace("1000000", "40960"))
r = h.run("graph", job_path, "--phase", "prefill", "--batch", "1", "--seq", "40960")
h.check("a bucket at the limit is accepted", r.returncode == 0, r.stderr)

# The model file's new fields are checked as every other: a window over more layers than
# the model has, or on a MoE model, and a context limit of 0 are refused at load.
def model_refused(label, path_text, needle):
    mpath = os.path.join(tmp, "qwen3-8b.json")
    keep = open(mpath).read()
    m = json.loads(keep)
    m.update(path_text)
    open(mpath, "w").write(json.dumps(m, indent=2))
    r = h.run("graph", job_path, "--phase", "prefill", "--batch", "1", "--seq", "4096")
    open(mpath, "w").write(keep)
    h.check(f"model file {label}: exit 2 naming {needle}", r.returncode == 2 and needle in r.stderr, r.stderr)


open(job_path, "w").write(job_text.replace("1000000", "40960"))
model_refused("window over 37 of 36 layers", {"sliding_window": {"size": 4096, "layers": 37}},
              "$.sliding_window.layers")
model_refused("window of 0 tokens", {"sliding_window": {"size": 0, "layers": 4}}, "$.sliding_window.size")
model_refused("context limit 0", {"context_limit": 0}, "$.context_limit")
model_refused("window on a MoE model", {"sliding_window": {"size": 4096, "layers": 4},
                                        "moe": {"routed_experts": 8, "shared_experts": 0, "experts_per_token": 2,
                                                "expert_intermediate": 1024, "first_dense_layers": 0}},
              "$.sliding_window")

# 5. The summary, in text and in --json.
r = do_import(os.path.join(hf, "llama3.1-8b-instruct.json"))
s = json.loads(r.stdout)["summary"] if r.returncode == 0 else {}
h.check("--json summary: Llama-3.1-8B's counts", r.returncode == 0 and abs(s["params_total"] - 8.030e9) < 1e7
        and abs(s["params_active"] - 7.505e9) < 1e7 and s["weight_bytes"] == 2 * s["params_total"]
        and s["kv_bytes_per_token"] == 131072 and s["context_limit"] == 131072, str(s))
r = do_import(os.path.join(hf, "exaone-4.0-32b.json"))
s = json.loads(r.stdout)["summary"] if r.returncode == 0 else {}
h.check("--json summary: EXAONE-4.0-32B's sliding window (48 of 64 layers, 4096 tokens) beside its KV per token",
        r.returncode == 0 and s.get("sliding_window") == {"size": 4096, "layers": 48}
        and s["kv_bytes_per_token"] == 2 * 64 * 8 * 128 * 2, str(s))
r = h.run("model", "import", os.path.join(hf, "llama3.1-8b-instruct.json"), "-o", os.path.join(tmp, "l8.json"))
h.check("text summary on stdout with -o", r.returncode == 0 and re.search(
    r"8\.030 B parameters, 7\.505 B active per token, weights 16\.061 GB, KV cache 131072 bytes per token, "
    r"context limit 131072 tokens", r.stdout), r.stdout + r.stderr)
# 6. What published files leave to transformers. Gemma 3's config.json states only what
# differs from Gemma3TextConfig's defaults (no heads, head_dim, vocab_size): the importer
# takes the class's defaults, as transformers does, and says which.
out = imported("Gemma-3-4B-it (a text_config without heads or vocab_size): imports", do_import(os.path.join(hf, "gemma-3-4b-it.json")))
if out:
    m, s = out["model"], out["summary"]
    h.check("Gemma-3-4B-it: Gemma3TextConfig's defaults (8/4 heads of 256, vocab 262208, 131072 tokens)",
            m["attention"] == {"kind": "gqa", "heads": 8, "kv_heads": 4, "head_dim": 256} and m["vocab"] == 262208
            and m["context_limit"] == 131072 and m.get("tie_embeddings") is True, str(m))
    h.check("Gemma-3-4B-it: 29 of 34 layers windowed to 1024 tokens (the default pattern: every 6th is global)",
            s.get("sliding_window") == {"size": 1024, "layers": 29}, str(s))
    h.check("Gemma-3-4B-it: KV bytes per token 34 layers x 2 x 4 heads x 256 x 2 bytes",
            s["kv_bytes_per_token"] == 34 * 2 * 4 * 256 * 2, str(s))
    h.check("Gemma-3-4B-it: a note names the defaults taken", any(
        "Gemma3TextConfig" in n and "vocab_size 262208" in n and "num_key_value_heads 4" in n for n in out["notes"]),
        str(out["notes"]))

# A key that is absent (and that the family has no default for) is reported at the object
# that lacks it, with the file's line and column, not at 0:0.
def absent_key(name, doc, drop, at):
    path = os.path.join(tmp, name)
    json.dump(doc, open(path, "w"), indent=2)
    r = do_import(path)
    h.check(f"{name}: without {drop}: exit 2 at {at}, naming the key",
            r.returncode == 2 and f"{path}:{at}: " in r.stderr and f"missing required key '{drop}'" in r.stderr
            and ":0:0:" not in r.stderr, r.stderr)


no_vocab = dict(base)
del no_vocab["vocab_size"]
absent_key("no-vocab.json", no_vocab, "vocab_size", "1:1: $")
dev = json.load(open(os.path.join(hf, "devstral-small-2-24b-instruct.json")))
del dev["text_config"]["num_hidden_layers"]
text_line = 1 + next(i for i, l in enumerate(json.dumps(dev, indent=2).splitlines()) if '"text_config"' in l)
absent_key("no-layers.json", dev, "num_hidden_layers", f"{text_line}:18: $.text_config")


# A key the language model reads at the root of a vision-language config (the dtype, the
# embedding tying) or under its other name (dtype for torch_dtype) is present with a bad
# value: the error is at that key's value, with its value, not "missing" at text_config.
def bad_value(name, doc, key, message):
    path = os.path.join(tmp, name)
    text = json.dumps(doc, indent=2)
    open(path, "w").write(text)
    line = next(i for i, l in enumerate(text.splitlines()) if l.startswith(f'  "{key}": '))
    at = f"{line + 1}:{len(key) + 7}: $.{key}: "
    r = do_import(path)
    h.check(f"{name}: exit 2 at {at}{message}", r.returncode == 2 and f"{path}:{at}{message}" in r.stderr
            and "missing required key" not in r.stderr, r.stderr)


dtypes = "bfloat16, float16, float32, float8_e4m3fn or float8_e5m2 (or give --dtype-bytes)"
gemma = json.load(open(os.path.join(hf, "gemma-3-4b-it.json")))
bad_value("gemma-int8.json", dict(gemma, torch_dtype="int8"), "torch_dtype", f'expected {dtypes}, got "int8"')
bad_value("gemma-tie.json", dict(gemma, tie_word_embeddings="yes"), "tie_word_embeddings",
          'expected true or false, got "yes"')
flat = {k: v for k, v in base.items() if k != "torch_dtype"}
bad_value("flat-int4.json", dict(flat, dtype="int4"), "dtype", f'expected {dtypes}, got "int4"')
absent_key("no-dtype.json", flat, "torch_dtype", "1:1: $")

# Gemma 3's defaults are only for the keys its published configs omit: a text_config
# without one of the structural sizes both files state is truncated, an error at the
# text_config (not a plausible 2B model from Gemma3TextConfig's sizes with a note).
for drop in ("hidden_size", "num_hidden_layers", "intermediate_size"):
    g3 = json.load(open(os.path.join(hf, "gemma-3-4b-it.json")))
    del g3["text_config"][drop]
    g3_line = 1 + next(i for i, l in enumerate(json.dumps(g3, indent=2).splitlines()) if '"text_config"' in l)
    absent_key(f"gemma-no-{drop}.json", g3, drop, f"{g3_line}:18: $.text_config")

# EXAONE 4.5: EXAONE 4's language model (text_config.architectures) beside a vision tower
# and a multi-token-prediction module; its window pattern may come as a string.
out = imported("EXAONE-4.5-33B: its text_config's Exaone4ForCausalLM: imports", do_import(os.path.join(hf, "exaone-4.5-33b.json")))
if out:
    h.check("EXAONE-4.5-33B: 48 of 64 layers windowed to 4096 tokens",
            out["summary"].get("sliding_window") == {"size": 4096, "layers": 48}, str(out["summary"]))
    h.check("EXAONE-4.5-33B: the MTP module is named as not modelled",
            any("_num_mtp_layers" in n for n in out["notes"]), str(out["notes"]))
    h.check("EXAONE-4.5-33B: one note for the MTP module, though two of its keys are in the config",
            sum("multi-token-prediction" in n for n in out["notes"]) == 1, str(out["notes"]))
ex = json.load(open(os.path.join(hf, "exaone-4.5-33b.json")))
del ex["text_config"]["layer_types"]
r = import_doc("exaone-pattern.json", ex)
h.check("sliding_window_pattern \"LLLG\" without layer_types: 48 of 64 layers windowed (3 in 4), not all 64",
        r.returncode == 0 and json.loads(r.stdout)["summary"].get("sliding_window") == {"size": 4096, "layers": 48},
        r.stdout[-300:] + r.stderr)
ex["text_config"]["sliding_window_pattern"] = "LLXG"
r = import_doc("exaone-bad-pattern.json", ex)
h.check("sliding_window_pattern \"LLXG\": exit 2 naming the key", r.returncode == 2 and
        "$.text_config.sliding_window_pattern" in r.stderr and ":0:0:" not in r.stderr, r.stderr)

# Qwen3.5 and Qwen3-Next: three of every four layers are Gated DeltaNet linear attention
# (a recurrent state, no KV cache): refused with that reason, not as an unknown class.
r = do_import(os.path.join(hf, "qwen3.5-9b.json"))
h.check("Qwen3.5-9B: refused as linear-attention layers, at $.architectures", r.returncode == 2 and
        "linear-attention" in r.stderr and "$.architectures" in r.stderr and "known architecture" not in r.stderr,
        r.stderr)
for cls, mt in (("Llama4ForConditionalGeneration", "llama4"), ("Llama4ForCausalLM", "llama4_text")):
    r = import_doc("llama4.json", dict(base, architectures=[cls], model_type=mt, attention_chunk_size=8192))
    h.check(f"Llama 4 ({cls}): refused as chunked attention on a MoE model",
            r.returncode == 2 and "chunked local attention" in r.stderr, r.stderr)
nxt = dict(base, architectures=["Qwen3NextForCausalLM"], model_type="qwen3_next")
r = import_doc("qwen3-next.json", nxt)
h.check("Qwen3-Next: refused as linear-attention layers", r.returncode == 2 and "linear-attention" in r.stderr,
        r.stderr)
# The same language models inside a wrapper the importer does not know (its
# text_config's architectures name them, its model_types do not): refused with the
# reason, at the text_config's architectures, not as an unknown architecture.
for cls, why in (("Qwen3NextForCausalLM", "linear-attention"), ("Llama4ForCausalLM", "chunked local attention")):
    text = dict(base, architectures=[cls], model_type="custom_text")
    r = import_doc("wrapper.json", {"architectures": ["CustomForConditionalGeneration"], "model_type": "custom",
                                    "text_config": text, "torch_dtype": "bfloat16"})
    h.check(f"a wrapper around {cls}: refused as {why} at $.text_config.architectures", r.returncode == 2
            and why in r.stderr and "$.text_config.architectures" in r.stderr and "known architecture" not in r.stderr,
            r.stderr)
# Devstral 2's checkpoint is fp8 (quantization_config): priced in torch_dtype's 2 bytes, the
# note names the method and --dtype-bytes 1, which prices its weights at one byte each.
r = do_import(os.path.join(hf, "devstral-2-123b-instruct.json"))
notes = json.loads(r.stdout)["notes"] if r.returncode == 0 else []
h.check("Devstral 2: the note names quant_method fp8 and --dtype-bytes 1",
        any('quant_method "fp8"' in n and "--dtype-bytes 1" in n for n in notes), str(notes))
r = do_import(os.path.join(hf, "devstral-2-123b-instruct.json"), "--dtype-bytes", "1")
s = json.loads(r.stdout)["summary"] if r.returncode == 0 else {}
h.check("Devstral 2 with --dtype-bytes 1: 125.0 GB of weights (one byte per parameter), no quantization note",
        r.returncode == 0 and s["weight_bytes"] == s["params_total"] and abs(s["params_total"] / 125.03e9 - 1) < 1e-3
        and not any("quantization_config" in n for n in json.loads(r.stdout)["notes"]), str(s))
# Granite 3 (GraniteForCausalLM): Llama's layers with four scalar multipliers, noted; the
# sizes of granite-3.1-8b-instruct's published config (8.17 B on its card). Phi-4-mini's
# config adds full_attn_mod 1 (every layer full attention), interpolate_factor and
# lm_head_bias false: known, and a value the graph cannot build is an error naming the key.
granite = dict(base, architectures=["GraniteForCausalLM"], model_type="granite", hidden_size=4096,
               intermediate_size=12800, num_hidden_layers=40, num_attention_heads=32, num_key_value_heads=8,
               vocab_size=49159, tie_word_embeddings=True, max_position_embeddings=131072, rope_scaling=None,
               attention_multiplier=0.0078125, embedding_multiplier=12.0, logits_scaling=16.0,
               residual_multiplier=0.22)
with open(os.path.join(tmp, "granite.json"), "w") as f:
    json.dump(granite, f, indent=2)
out = imported("Granite 3.1 8B: imports", do_import(os.path.join(tmp, "granite.json")))
if out:
    total = out["summary"]["params_total"] / 1e9
    h.check(f"Granite 3.1 8B: {total:.3f} B parameters within 1 % of the card's 8.17 B, the multipliers noted",
            abs(total / 8.17 - 1) <= 0.01 and any("granite" in n and "multipliers" in n for n in out["notes"]),
            str(out["notes"]))
phi = json.load(open(os.path.join(hf, "phi-4.json")))
for extra, ok_ in (({"full_attn_mod": 1, "interpolate_factor": 1, "lm_head_bias": False}, True),
                   ({"full_attn_mod": 4}, False), ({"lm_head_bias": True}, False)):
    r = import_doc("phi-mini-keys.json", dict(phi, **extra))
    key = next(iter(extra))
    h.check(f"Phi-4-mini's keys {extra}: {'imports' if ok_ else 'exit 2 naming ' + key}",
            r.returncode == 0 if ok_ else r.returncode == 2 and f"$.{key}" in r.stderr, r.stderr)
# A byte-order mark (an editor's UTF-8 "signature") before the JSON: said in words.
with open(os.path.join(tmp, "bom.json"), "wb") as f:
    f.write(b"\xef\xbb\xbf" + open(os.path.join(hf, "llama3.2-1b-instruct.json"), "rb").read())
r = do_import(os.path.join(tmp, "bom.json"))
h.check("a UTF-8 byte-order mark: exit 2 at 1:1 naming it", r.returncode == 2 and "bom.json:1:1:" in r.stderr
        and "byte-order mark" in r.stderr, r.stderr)
h.finish()
