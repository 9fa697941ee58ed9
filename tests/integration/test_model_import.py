#!/usr/bin/python3
"""`enpu model import` on public Hugging Face config.json files (tests/fixtures/hf/).

1. The four paper models: the imported model file gives the same graph as the shipped
   one under the same job (FLOPs, HBM bytes, weight bytes, KV and activation bytes of
   both phases, and the weights held per chip).
2. The other configs: prefill FLOPs of one request of T tokens on one chip within 5 % of
   the analytic 2 * P_active * T + causal attention, P_active counted here from the
   config.json itself (not from the C code), its LM head once per request (prefill's
   logits are the last token's); each one's job farms one bucket per phase.
3. What the graph cannot express is an error naming the key.

usage: test_model_import.py ENPU_BINARY SOURCE_DIR"""
import copy
import json
import os
import sys
import tempfile

from harness import Harness

enpu, src = sys.argv[1], os.path.abspath(sys.argv[2])
h = Harness(enpu, src)
hf = os.path.join(src, "tests/fixtures/hf")
tmp = tempfile.mkdtemp(prefix="enpu-import-")

PAPER = ["llama3-70b", "llama3.1-405b", "deepseek-v2-236b", "deepseek-v3-671b"]
OTHERS = ["llama3.1-8b", "llama3.2-1b", "mixtral-8x7b", "qwen2.5-72b", "qwen2-57b-a14b", "qwen3-235b-a22b",
          # published files of the families added since: Phi-3/4 (fused qkv and gate_up),
          # Qwen2.5-VL (M-RoPE, a vision tower beside), a text_config nesting (Mistral 3)
          "phi-4", "qwen2.5-vl-7b-instruct", "devstral-small-2-24b-instruct",
          # hybrid local/global attention: 48 of 64 layers within a 4096-token window
          "exaone-4.0-32b", "olmo-3.1-32b-instruct"]
TOTALS = ["flops", "hbm_bytes", "weight_bytes", "kv_cache_bytes", "activation_bytes", "ici_bytes", "vector_ops"]


def do_import(name, *extra, config_path=None):
    out = os.path.join(tmp, f"{name}.json")
    r = h.run("model", "import", config_path or os.path.join(hf, f"{name}.json"), "-o", out, *extra)
    h.check(f"{name}: import exit 0", r.returncode == 0, r.stderr)
    return out, r


def graph(job, phase, batch, seq):
    return h.run_json("graph", job, "--phase", phase, "--batch", str(batch), "--seq", str(seq))


# 1. The paper models reproduce the shipped graphs.
for name in PAPER:
    model, r = do_import(name, "--name", name)
    h.check(f"{name}: notes name the speculative default", "speculative" in r.stderr, r.stderr)
    job = json.load(open(os.path.join(src, "jobs", f"{name}.json")))
    for k in ("chip", "cluster"):
        job[k] = os.path.join(src, "jobs", job[k])
    job["model"], job["store"] = model, os.path.join(tmp, name, "plans.h5")
    job.pop("validation", None)
    path = os.path.join(tmp, f"job-{name}.json")
    json.dump(job, open(path, "w"))
    # The paper's grids reach 128K tokens; a model whose config states a shorter context
    # (Llama 3's 8K) refuses them at job load, naming the bucket. The shipped model files
    # state no limit: without it, the graphs must be the same.
    limited = json.load(open(model))
    limit = limited.pop("context_limit", None)
    h.check(f"{name}: context limit imported", isinstance(limit, int) and limit > 0, str(limit))
    seq_max = job["phases"]["prefill"]["seq"]
    seq_max = seq_max["max"] if isinstance(seq_max, dict) else seq_max[-1]
    if limit and seq_max > limit:
        r = h.run("graph", path, "--phase", "prefill", "--batch", "1", "--seq", "4096")
        h.check(f"{name}: a bucket beyond the context limit is refused at job load",
                r.returncode == 2 and "context limit" in r.stderr and "$.phases.prefill.seq" in r.stderr, r.stderr)
    json.dump(limited, open(model, "w"))
    for phase, batch, seq in (("prefill", 1, 4096), ("decode", 32, 8192)):
        a = graph(f"jobs/{name}.json", phase, batch, seq)
        b = graph(path, phase, batch, seq)
        same = all(a["totals"][k] == b["totals"][k] for k in TOTALS)
        h.check(f"{name} {phase}: imported graph totals equal the shipped model's", same,
                str({k: (a["totals"][k], b["totals"][k]) for k in TOTALS}))
        h.check(f"{name} {phase}: same weights held per chip",
                a["capacity"]["weights_bytes"] == b["capacity"]["weights_bytes"])
        h.check(f"{name} {phase}: same operators", [o["signature"] for o in a["ops"]] == [o["signature"] for o in b["ops"]])


# 2. Other families: prefill FLOPs against the analytic count, and a farm of one bucket per phase.
def active_params(c):
    """Weights a token multiplies with (LM head in, embedding lookup out), from config.json."""
    c = c.get("text_config", c)
    h_ = c["hidden_size"]
    heads, kv = c["num_attention_heads"], c.get("num_key_value_heads") or c["num_attention_heads"]
    hd = c.get("head_dim") or h_ // heads
    attn = h_ * heads * hd * 2 + 2 * h_ * kv * hd
    experts = c.get("num_local_experts") or c.get("num_experts") or c.get("n_routed_experts")
    if experts:
        inter = c.get("moe_intermediate_size") or c["intermediate_size"]
        shared = c.get("shared_expert_intermediate_size", 0)
        ffn = 3 * h_ * inter * c["num_experts_per_tok"] + 3 * h_ * shared + h_ * experts
    else:
        ffn = 3 * h_ * c["intermediate_size"]
    return c["num_hidden_layers"] * (attn + ffn), c["vocab_size"] * h_, hd


def cluster_tp1(model_name):
    c = json.load(open(os.path.join(src, "jobs/clusters/llama3-70b.json")))
    c["name"], c["model"] = f"{model_name}-tp1", model_name
    for ph in ("prefill", "decode"):
        c[ph] = {"nodes": 1, "chips": 1, "parallel": {"dp": 1, "tp": 1, "pp": 1, "ep": 1}}
    path = os.path.join(tmp, f"cluster-{model_name}.json")
    json.dump(c, open(path, "w"))
    return path


def attention_flops(lm, imported, T, hd):
    """Causal prefill attention of one request of T tokens; a window-limited layer's query
    sees at most the window's keys: T*w - w(w-1)/2 scores instead of T(T+1)/2."""
    full = T * (T + 1) / 2
    sw = imported.get("sliding_window")
    windowed, w = (sw["layers"], sw["size"]) if sw and T > sw["size"] else (0, 0)
    scores = (lm["num_hidden_layers"] - windowed) * full + windowed * (T * w - w * (w - 1) / 2)
    return 2 * lm["num_attention_heads"] * scores * (2 * hd)


def check_family(name, config_path):
    """Import, prefill FLOPs against the analytic count, a farm of one bucket per phase."""
    model, _ = do_import(name, "--name", name, config_path=config_path)
    cfg = json.load(open(config_path))
    imported = json.load(open(model))
    if cfg.get("tie_word_embeddings") or cfg.get("text_config", {}).get("tie_word_embeddings"):
        h.check(f"{name}: tied embeddings carried over", imported.get("tie_embeddings") is True)
    window = imported.get("sliding_window")
    # windowed models: buckets past the window, where its bound shows
    T, pseq, dseq = (16384, 8192, 8192) if window else (4096, 1024, 2048)
    job = {"name": name, "model": model, "chip": os.path.join(src, "jobs/chips/tpuv5p.json"),
           "cluster": cluster_tp1(name), "store": os.path.join(tmp, name, "plans.h5"),
           "phases": {"prefill": {"batch": [1], "seq": [pseq]}, "decode": {"batch": [8], "seq": [dseq]}},
           "slacks": [0.05], "policies": ["nodvfs", "enpu-all"] + (["uniform"] if window else []),
           "capacity": "ignore",
           "moe": {"capacity_factor": 1, "experts": "active-only"}}
    path = os.path.join(tmp, f"job-{name}.json")
    json.dump(job, open(path, "w"))
    g = graph(path, "prefill", 1, T)
    p_layers, p_head, hd = active_params(cfg)
    p_active = p_layers + p_head
    lm = cfg.get("text_config", cfg)
    attention = attention_flops(lm, imported, T, hd)
    if window:
        segs = {s_["name"]: s_["repeat"] for s_ in g["segments"]}
        h.check(f"{name}: {window['layers']} window-limited layers in a segment of their own",
                segs.get("window_layer") == window["layers"] and segs.get("dense_layer") == imported["layers"] - window["layers"],
                str(segs))
        d = graph(path, "decode", 8, 65536)
        first = {s_["name"]: s_["first_op"] for s_ in d["segments"]}["window_layer"]
        keys = [o["shape"]["n"] for o in d["ops"][first:] if o["kind"] == "attention"]
        h.check(f"{name}: a windowed layer's decode attention reads {window['size']} keys of 65536",
                keys and keys[0] == window["size"], str(keys))
    # Prefill computes logits for a prompt's last token only (they sample the first output
    # token), so the LM head's weights are multiplied once per request, the rest T times.
    analytic = 2 * p_layers * T + 2 * p_head * 1 + attention
    ratio = g["totals"]["flops"] / analytic
    print(f"     {name}: P_active {p_active / 1e9:.2f} B, prefill FLOPs {g['totals']['flops']:.4g} "
          f"vs analytic {analytic:.4g} (ratio {ratio:.4f})")
    h.check(f"{name}: prefill FLOPs within 5 % of 2*P_active*T + attention", abs(ratio - 1) <= 0.05, f"{ratio:.4f}")
    r = h.run("farm", path, "--json")
    ok = r.returncode == 0
    h.check(f"{name}: farm of one bucket per phase exit 0", ok, r.stderr[-2000:])
    if ok:
        info = h.run_json("store", "info", job["store"])
        ok_buckets = {p["name"]: p["buckets"]["ok"] for p in info["policies"]}
        h.check(f"{name}: store holds one ok bucket per phase for every policy",
                ok_buckets == {p: 2 for p in job["policies"]}, str(ok_buckets))
        q = h.run_json("query", job["store"], "--phase", "decode", "--batch", "8", "--seq", str(dseq),
                       "--slack", "0.05", "--policy", "enpu-all")
        h.check(f"{name}: the decode bucket answers a query with energy below NoDVFS's",
                q["bucket"]["batch"] == 8 and 0 < q["energy_nj"] <= q["e_nodvfs_nj"], json.dumps(q)[:300])
        if window:
            # Self-speculative drafts take a share of the layers: the full and the windowed
            # layers' ops are spread over them (the uniform policy's split of a pass).
            trace = os.path.join(tmp, "short-trace.csv")
            with open(trace, "w") as f:
                f.write("TIMESTAMP,ContextTokens,GeneratedTokens\n")
                for i in range(12):
                    f.write(f"2023-11-16 18:15:{i:02d}.000000,{600 + 500 * i},{8 + 3 * i}\n")
            r = h.run("replay", "--store", job["store"], "--cluster", job["cluster"], "--model", model, "--chip",
                      job["chip"], "--trace", trace, "--spec", f"{int(imported['layers'] / 4 + 0.5)},2", "--policy", "nodvfs",
                      "--json")
            served = json.loads(r.stdout)["policies"]["nodvfs"]["served"] if r.returncode == 0 else None
            h.check(f"{name}: a self-speculative replay serves all 12 requests", served == 12,
                    f"exit {r.returncode}: {r.stderr[-500:]}")


for name in OTHERS:
    check_family(name, os.path.join(hf, f"{name}.json"))


# 3. What cannot be expressed is an error naming it; an unknown key too, unless ignored.
def bad(label, mutate, needle, *extra):
    c = json.load(open(os.path.join(hf, "llama3.1-8b.json")))
    mutate(c)
    path = os.path.join(tmp, f"bad-{label}.json")
    json.dump(c, open(path, "w"), indent=2)
    r = h.run("model", "import", path, *extra)
    h.check(f"{label}: exit 2 naming {needle}", r.returncode == 2 and needle in r.stderr and path in r.stderr,
            f"exit {r.returncode}: {r.stderr}")
    return path


bad("mlp bias", lambda c: c.update(mlp_bias=True), "mlp_bias")
bad("relu", lambda c: c.update(hidden_act="relu"), "hidden_act")
bad("gpt-oss", lambda c: c.update(model_type="gpt_oss"), "sinks")
bad("unknown architecture", lambda c: c.update(model_type="falcon", architectures=["FalconForCausalLM"]),
    "architectures")
bad("heads", lambda c: c.update(num_key_value_heads=7), "num_key_value_heads")
p = bad("unknown key", lambda c: c.update(new_decoder_architecture=True), "new_decoder_architecture")
r = h.run("model", "import", p, "--ignore", "new_decoder_architecture")
h.check("--ignore accepts the named key", r.returncode == 0, r.stderr)
mix = json.load(open(os.path.join(hf, "mixtral-8x7b.json")))
mix["moe_layer_freq"] = 2
path = os.path.join(tmp, "bad-moe-freq.json")
json.dump(mix, open(path, "w"))
r = h.run("model", "import", path)
h.check("MoE every 2nd layer: error naming moe_layer_freq", r.returncode == 2 and "moe_layer_freq" in r.stderr, r.stderr)
no_dtype = json.load(open(os.path.join(hf, "llama3.1-8b.json")))
del no_dtype["torch_dtype"]
path = os.path.join(tmp, "no-dtype.json")
json.dump(no_dtype, open(path, "w"))
r = h.run("model", "import", path)
h.check("no torch_dtype: error naming it", r.returncode == 2 and "torch_dtype" in r.stderr, r.stderr)
r = h.run("model", "import", path, "--dtype-bytes", "1")
h.check("--dtype-bytes 1 replaces torch_dtype", r.returncode == 0 and json.loads(r.stdout)["dtype_bytes"] == 1,
        r.stderr)


# Families without a fixture of their own: the same shapes under their model_type.
def variant(label, base, change, check, published_b=None):
    c = json.load(open(os.path.join(hf, f"{base}.json")))
    c.update(change)
    path = os.path.join(tmp, "variant-%d.json" % len(os.listdir(tmp)))
    json.dump(c, open(path, "w"))
    r = h.run("model", "import", path, "--json")
    out = json.loads(r.stdout) if r.returncode == 0 else {"model": {}, "summary": {}}
    m = out["model"]
    h.check(f"{label}: imports", r.returncode == 0 and check(m), f"{r.stderr} {m}")
    if published_b:
        total = out["summary"].get("params_total", 0) / 1e9
        h.check(f"{label}: {total:.3f} B within 1 % of the published {published_b} B",
                abs(total / published_b - 1) <= 0.01)


variant("Mistral v0.1's sliding_window 4096: every layer windowed", "llama3.1-8b",
        {"model_type": "mistral", "architectures": ["MistralForCausalLM"], "sliding_window": 4096},
        lambda m: m["sliding_window"] == {"size": 4096, "layers": 32})
variant("Qwen2 use_sliding_window from max_window_layers 20 of 28", "qwen2.5-7b-instruct",
        {"use_sliding_window": True, "sliding_window": 4096, "max_window_layers": 20},
        lambda m: m["sliding_window"] == {"size": 4096, "layers": 8})
# Gemma 2 9B's and Gemma 3 12B's language-model shapes (google/gemma-2-9b, google/gemma-3-12b-it):
# GeGLU, tied embeddings by default, local layers every other one / five of six.
gemma2 = {"architectures": ["Gemma2ForCausalLM"], "model_type": "gemma2", "hidden_size": 3584,
          "num_hidden_layers": 42, "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 256,
          "intermediate_size": 14336, "vocab_size": 256000, "sliding_window": 4096,
          "hidden_act": "gelu_pytorch_tanh", "hidden_activation": "gelu_pytorch_tanh",
          "attn_logit_softcapping": 50.0, "final_logit_softcapping": 30.0, "query_pre_attn_scalar": 256,
          "cache_implementation": "hybrid", "max_position_embeddings": 8192, "torch_dtype": "float32"}
variant("Gemma 2 9B: 21 of 42 layers windowed, tied, 9.24 B within 1 %", "llama3.1-8b",
        dict(gemma2, tie_word_embeddings=None, rope_scaling=None),
        lambda m: m["sliding_window"] == {"size": 4096, "layers": 21} and m.get("tie_embeddings") is True
        and m["dtype_bytes"] == 4, 9.24)
gemma3 = dict(gemma2, architectures=["Gemma3ForCausalLM"], model_type="gemma3_text", hidden_size=3840,
              num_hidden_layers=48, intermediate_size=15360, vocab_size=262208, sliding_window=1024,
              sliding_window_pattern=6, max_position_embeddings=131072, rope_local_base_freq=10000.0)
for k in ("attn_logit_softcapping", "final_logit_softcapping", "cache_implementation"):
    gemma3.pop(k)
variant("Gemma 3 12B (its language model; 12.2 B with the vision tower): 40 of 48 layers windowed", "llama3.1-8b",
        dict(gemma3, tie_word_embeddings=None, rope_scaling=None),
        lambda m: m["sliding_window"] == {"size": 1024, "layers": 40}, 11.77)
# Gemma 2 and 3 (no published file here): their shapes farm one bucket per phase too.
for label, g in (("gemma2-9b", gemma2), ("gemma3-12b", gemma3)):
    g_path = os.path.join(tmp, f"{label}-config.json")
    json.dump(dict(g, tie_word_embeddings=True, torch_dtype="bfloat16", vocab_size=g["vocab_size"]), open(g_path, "w"))
    check_family(label, g_path)
variant("Qwen2.5-3B's shape with use_mrope (its config says false; true is the same operators)", "qwen2.5-7b-instruct",
        {"use_mrope": True, "hidden_size": 2048, "intermediate_size": 11008, "num_hidden_layers": 36,
         "num_attention_heads": 16, "num_key_value_heads": 2, "vocab_size": 151936, "tie_word_embeddings": True},
        lambda m: m["attention"] == {"kind": "gqa", "heads": 16, "kv_heads": 2, "head_dim": 128}, 3.09)
variant("mistral (no sliding window)", "llama3.1-8b", {"model_type": "mistral", "sliding_window": None},
        lambda m: m["attention"] == {"kind": "gqa", "heads": 32, "kv_heads": 8, "head_dim": 128})
variant("qwen3 dense (head_dim 128 beside hidden/heads 64)", "llama3.2-1b",
        {"model_type": "qwen3", "head_dim": 128, "tie_word_embeddings": False},
        lambda m: m["attention"]["head_dim"] == 128 and "tie_embeddings" not in m)
variant("deepseek without a low-rank query (q_lora_rank null, as V2-Lite)", "deepseek-v2-236b",
        {"q_lora_rank": None}, lambda m: m["attention"]["q_lora_rank"] == 0)
variant("newer transformers' dtype key", "llama3.1-8b", {"torch_dtype": None, "dtype": "float32"},
        lambda m: m["dtype_bytes"] == 4)
h.finish()
