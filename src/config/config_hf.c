/* config_hf.c — a Hugging Face transformers config.json turned into a model file
 * (`enpu model import`).
 *
 * Every key of the config has one disposition in the table below: read into the model,
 * checked for a value the graph can express (anything else is an error naming the key),
 * inert (it does not change a forward pass's operators or their shapes: token ids,
 * initialisation, rope parameters, router scoring), or approximated (the graph leaves out
 * a term smaller than an operator it has; each one is reported in the notes). A key the
 * table does not know is an error unless the caller lists it as ignored: a field the
 * graph would need is never dropped silently. The model file written is then parsed by
 * config_model_parse, so it meets every rule a hand-written one does. */
#include <stdlib.h>
#include <string.h>

#include "config_internal.h"

typedef enum { HF_USED, HF_INERT, HF_CHECKED, HF_NOTE } hf_role;

typedef struct {
  const char *key;
  hf_role role;
  const char *why; /* HF_NOTE: the note; HF_INERT: why the graph does not need it */
} hf_key;

/* clang-format off */
static const hf_key hf_keys[] = {
  /* read into the model */
  {"architectures", HF_USED, NULL}, {"model_type", HF_USED, NULL}, {"hidden_size", HF_USED, NULL},
  {"num_hidden_layers", HF_USED, NULL}, {"vocab_size", HF_USED, NULL}, {"num_attention_heads", HF_USED, NULL},
  {"num_key_value_heads", HF_USED, NULL}, {"head_dim", HF_USED, NULL}, {"intermediate_size", HF_USED, NULL},
  {"torch_dtype", HF_USED, NULL}, {"dtype", HF_USED, NULL}, {"tie_word_embeddings", HF_USED, NULL},
  {"q_lora_rank", HF_USED, NULL}, {"kv_lora_rank", HF_USED, NULL}, {"qk_nope_head_dim", HF_USED, NULL},
  {"qk_rope_head_dim", HF_USED, NULL}, {"v_head_dim", HF_USED, NULL},
  {"n_routed_experts", HF_USED, NULL}, {"num_local_experts", HF_USED, NULL}, {"num_experts", HF_USED, NULL},
  {"n_shared_experts", HF_USED, NULL}, {"num_experts_per_tok", HF_USED, NULL},
  {"moe_intermediate_size", HF_USED, NULL}, {"shared_expert_intermediate_size", HF_USED, NULL},
  {"first_k_dense_replace", HF_USED, NULL},
  /* must hold a value the graph expresses */
  {"hidden_act", HF_CHECKED, NULL}, {"mlp_bias", HF_CHECKED, NULL}, {"moe_layer_freq", HF_CHECKED, NULL},
  {"decoder_sparse_step", HF_CHECKED, NULL}, {"mlp_only_layers", HF_CHECKED, NULL},
  {"sliding_window", HF_CHECKED, NULL}, {"use_sliding_window", HF_CHECKED, NULL},
  {"max_window_layers", HF_CHECKED, NULL}, {"layer_types", HF_CHECKED, NULL},
  /* approximated: reported */
  {"attention_bias", HF_NOTE, "attention_bias: the q/k/v bias vectors are not modelled (an add of heads x head_dim "
                              "per token beside a hidden x heads x head_dim matmul)"},
  {"num_nextn_predict_layers", HF_NOTE, "num_nextn_predict_layers: the multi-token-prediction module is a draft "
                                        "head outside the forward pass; the graph has the main layers only"},
  {"quantization_config", HF_NOTE, "quantization_config: weights and activations are modelled in the dtype of "
                                   "torch_dtype (or --dtype-bytes), not the checkpoint's quantized format"},
  {"norm_topk_prob", HF_NOTE, NULL}, /* a renormalisation of k router weights: inert */
  /* inert: no operator or shape depends on them */
  {"_name_or_path", HF_INERT, NULL}, {"auto_map", HF_INERT, NULL}, {"transformers_version", HF_INERT, NULL},
  {"bos_token_id", HF_INERT, NULL}, {"eos_token_id", HF_INERT, NULL}, {"pad_token_id", HF_INERT, NULL},
  {"initializer_range", HF_INERT, NULL}, {"attention_dropout", HF_INERT, NULL}, {"hidden_dropout", HF_INERT, NULL},
  {"rms_norm_eps", HF_INERT, NULL}, {"rope_theta", HF_INERT, NULL}, {"rope_scaling", HF_INERT, NULL},
  {"rope_parameters", HF_INERT, NULL}, {"max_position_embeddings", HF_INERT, NULL}, {"use_cache", HF_INERT, NULL},
  {"pretraining_tp", HF_INERT, NULL}, {"output_router_logits", HF_INERT, NULL},
  {"router_aux_loss_coef", HF_INERT, NULL}, {"router_jitter_noise", HF_INERT, NULL},
  {"aux_loss_alpha", HF_INERT, NULL}, {"seq_aux", HF_INERT, NULL}, {"ep_size", HF_INERT, NULL},
  {"n_group", HF_INERT, NULL}, {"topk_group", HF_INERT, NULL}, {"topk_method", HF_INERT, NULL},
  {"scoring_func", HF_INERT, NULL}, {"routed_scaling_factor", HF_INERT, NULL},
};
/* clang-format on */
#define NHF (sizeof hf_keys / sizeof hf_keys[0])

/* Architectures by model_type: the attention kind and whether it is a MoE family. */
typedef struct {
  const char *model_type;
  config_attention_kind attention;
  bool moe;
  const char *note; /* a term of the architecture the graph leaves out, or NULL */
} hf_arch;

static const hf_arch hf_archs[] = {
    {"llama", CONFIG_ATTN_GQA, false, NULL},
    {"mistral", CONFIG_ATTN_GQA, false, NULL},
    {"qwen2", CONFIG_ATTN_GQA, false, "qwen2: the q/k/v bias vectors are not modelled"},
    {"qwen3", CONFIG_ATTN_GQA, false, "qwen3: the per-head q/k RMSNorms are not modelled"},
    {"mixtral", CONFIG_ATTN_GQA, true, NULL},
    {"qwen2_moe", CONFIG_ATTN_GQA, true,
     "qwen2_moe: the q/k/v bias vectors and the shared expert's sigmoid gate (hidden x 1) are not modelled"},
    {"qwen3_moe", CONFIG_ATTN_GQA, true, "qwen3_moe: the per-head q/k RMSNorms are not modelled"},
    {"deepseek_v2", CONFIG_ATTN_MLA, true, NULL},
    {"deepseek_v3", CONFIG_ATTN_MLA, true, NULL},
};

/* Families the graph cannot express, with the reason. */
static const struct {
  const char *model_type, *why;
} hf_rejected[] = {
    {"gpt_oss", "its attention alternates sliding-window layers and has per-head attention sinks; the graph's "
                "attention is full causal attention over the whole sequence in every layer"},
};

typedef struct {
  config_doc doc;
  config_path root;
  const config_hf_options *opt;
  enpu_err *err;
  char *notes;
  size_t notes_len;
} hf_ctx;

static void note(hf_ctx *c, const char *text) {
  const size_t n = strlen(text);
  char *p = realloc(c->notes, c->notes_len + n + 2);
  if (!p) return; /* notes are advisory: a failed allocation loses one line, nothing else */
  memcpy(p + c->notes_len, text, n);
  p[c->notes_len + n] = '\n';
  p[c->notes_len + n + 1] = '\0';
  c->notes = p;
  c->notes_len += n + 1;
}

static bool ignored(const hf_ctx *c, const char *key) {
  for (int i = 0; i < c->opt->nignore; i++)
    if (!strcmp(c->opt->ignore[i], key)) return true;
  return false;
}

static const json_t *get(const hf_ctx *c, const char *key) {
  const json_t *v = json_object_get(c->doc.root, key);
  return json_is_null(v) ? NULL : v;
}

/* An error at $.key: "file:line:column: $.key: expected ..., got ...". */
static int fail_key(hf_ctx *c, const char *key, const char *expected) {
  config_path p = CONFIG_KEY(&c->root, key);
  char got[96] = "nothing (missing or null)";
  if (get(c, key)) config_describe(json_object_get(c->doc.root, key), got, sizeof got);
  return config_fail(&c->doc, &p, c->err, ENPU_ERR_INVALID, "expected %s, got %s", expected, got);
}

/* An integer from min (0 or 1) to 16777216 at key; absent or null: dflt, or an error when
 * dflt < 0. A count the graph divides by or sizes a tensor with is at least 1, and a 0
 * there is an error naming its own key (not a later rule it breaks, nor the imported
 * model's field it would become). */
static int get_int_from(hf_ctx *c, const char *key, int dflt, int min, int *out) {
  const json_t *v = get(c, key);
  if (!v) {
    if (dflt < 0) return fail_key(c, key, "a positive integer");
    *out = dflt;
    return ENPU_OK;
  }
  if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > 16777216)
    return fail_key(c, key, min ? "an integer from 1 to 16777216" : "an integer from 0 to 16777216");
  *out = (int)json_integer_value(v);
  return ENPU_OK;
}

/* A count that may be 0 (a feature the model does not have). */
static int get_int(hf_ctx *c, const char *key, int dflt, int *out) { return get_int_from(c, key, dflt, 0, out); }

/* A size or count of at least 1. */
static int get_count(hf_ctx *c, const char *key, int dflt, int *out) { return get_int_from(c, key, dflt, 1, out); }

/* Every key of the config known, or listed as ignored. */
static int check_keys(hf_ctx *c) {
  const char *key;
  const json_t *v;
  json_object_foreach(c->doc.root, key, v) {
    size_t i = 0;
    while (i < NHF && strcmp(hf_keys[i].key, key)) i++;
    if (i == NHF) {
      if (ignored(c, key)) continue;
      config_path p = CONFIG_KEY(&c->root, key);
      return config_fail(&c->doc, &p, c->err, ENPU_ERR_INVALID,
                         "unknown field \"%s\": the importer does not know whether the graph needs it (pass "
                         "--ignore %s if it does not change the operators of a forward pass)",
                         key, key);
    }
    /* An approximated term is reported when the config has it: true, a positive count or
     * a settings object (false, 0 and null mean the model has none). */
    const bool present = json_is_true(v) || json_is_object(v) || (json_is_integer(v) && json_integer_value(v) > 0);
    if (hf_keys[i].role == HF_NOTE && hf_keys[i].why && present) note(c, hf_keys[i].why);
  }
  return ENPU_OK;
}

static int find_arch(hf_ctx *c, const hf_arch **out) {
  char mt[64] = "";
  const json_t *v = get(c, "model_type");
  if (json_is_string(v)) snprintf(mt, sizeof mt, "%s", json_string_value(v));
  for (size_t i = 0; i < sizeof hf_archs / sizeof hf_archs[0]; i++)
    if (!strcmp(hf_archs[i].model_type, mt)) {
      *out = &hf_archs[i];
      if (hf_archs[i].note) note(c, hf_archs[i].note);
      return ENPU_OK;
    }
  for (size_t i = 0; i < sizeof hf_rejected / sizeof hf_rejected[0]; i++)
    if (!strcmp(hf_rejected[i].model_type, mt)) {
      config_path p = CONFIG_KEY(&c->root, "model_type");
      return config_fail(&c->doc, &p, c->err, ENPU_ERR_INVALID, "architecture \"%s\" cannot be expressed: %s", mt,
                         hf_rejected[i].why);
    }
  return fail_key(c, "model_type",
                  "one of llama, mistral, qwen2, qwen3, mixtral, qwen2_moe, qwen3_moe, deepseek_v2, deepseek_v3");
}

/* Keys that must hold the value the graph builds. */
static int check_values(hf_ctx *c, const hf_arch *a) {
  const json_t *v = get(c, "hidden_act");
  if (v && (!json_is_string(v) || strcmp(json_string_value(v), "silu")))
    return fail_key(c, "hidden_act", "\"silu\" (every FFN of the graph is a SwiGLU MLP)");
  if (json_is_true(get(c, "mlp_bias"))) return fail_key(c, "mlp_bias", "false (the graph's MLPs have no bias)");
  int one = 1;
  if (a->moe) {
    ENPU_FORWARD(get_int(c, "moe_layer_freq", 1, &one));
    if (one != 1) return fail_key(c, "moe_layer_freq", "1 (every layer after the first dense ones is MoE)");
    ENPU_FORWARD(get_int(c, "decoder_sparse_step", 1, &one));
    if (one != 1) return fail_key(c, "decoder_sparse_step", "1 (every layer after the first dense ones is MoE)");
    v = get(c, "mlp_only_layers");
    if (v && (!json_is_array(v) || json_array_size(v)))
      return fail_key(c, "mlp_only_layers", "[] (dense layers only before the MoE ones, by first_k_dense_replace)");
  }
  const json_t *sw = get(c, "sliding_window"), *use = json_object_get(c->doc.root, "use_sliding_window");
  if (sw && !json_is_false(use) && !ignored(c, "sliding_window"))
    return fail_key(c, "sliding_window",
                    "null or \"use_sliding_window\": false: sliding-window attention cannot be expressed (the "
                    "graph attends over the whole sequence); pass --ignore sliding_window to model full attention");
  v = get(c, "layer_types");
  for (size_t i = 0; json_is_array(v) && i < json_array_size(v); i++)
    if (!json_is_string(json_array_get(v, i)) || strcmp(json_string_value(json_array_get(v, i)), "full_attention"))
      return fail_key(c, "layer_types", "\"full_attention\" in every layer (no other layer kind can be expressed)");
  return ENPU_OK;
}

static int dtype_bytes(hf_ctx *c, int *out) {
  if (c->opt->dtype_bytes > 0) {
    *out = c->opt->dtype_bytes;
    return ENPU_OK;
  }
  const char *key = get(c, "torch_dtype") ? "torch_dtype" : "dtype";
  const json_t *v = get(c, key);
  static const struct {
    const char *name;
    int bytes;
  } names[] = {{"bfloat16", 2}, {"float16", 2}, {"float32", 4}, {"float8_e4m3fn", 1}, {"float8_e5m2", 1}};
  for (size_t i = 0; json_is_string(v) && i < sizeof names / sizeof names[0]; i++)
    if (!strcmp(json_string_value(v), names[i].name)) {
      *out = names[i].bytes;
      return ENPU_OK;
    }
  return fail_key(c, "torch_dtype",
                  "bfloat16, float16, float32, float8_e4m3fn or float8_e5m2 (or give --dtype-bytes)");
}

static int gqa_attention(hf_ctx *c, int hidden, json_t **out) {
  int heads = 0, kv = 0, hd = 0;
  ENPU_FORWARD(get_count(c, "num_attention_heads", -1, &heads));
  ENPU_FORWARD(get_count(c, "num_key_value_heads", heads, &kv));
  if (heads % kv) return fail_key(c, "num_key_value_heads", "a divisor of num_attention_heads");
  if (get(c, "head_dim")) ENPU_FORWARD(get_count(c, "head_dim", -1, &hd));
  else if (hidden % heads) return fail_key(c, "head_dim", "a head_dim (hidden_size is no multiple of the heads)");
  else hd = hidden / heads;
  *out = json_pack("{s:s, s:i, s:i, s:i}", "kind", "gqa", "heads", heads, "kv_heads", kv, "head_dim", hd);
  return ENPU_OK;
}

static int mla_attention(hf_ctx *c, json_t **out) {
  int heads = 0, q = 0, kv = 0, nope = 0, rope = 0, vd = 0;
  ENPU_FORWARD(get_count(c, "num_attention_heads", -1, &heads));
  ENPU_FORWARD(get_int(c, "q_lora_rank", 0, &q)); /* null: a full-rank query projection */
  ENPU_FORWARD(get_count(c, "kv_lora_rank", -1, &kv));
  ENPU_FORWARD(get_count(c, "qk_nope_head_dim", -1, &nope));
  ENPU_FORWARD(get_count(c, "qk_rope_head_dim", -1, &rope));
  ENPU_FORWARD(get_count(c, "v_head_dim", -1, &vd));
  *out = json_pack("{s:s, s:i, s:i, s:i, s:i, s:i, s:i}", "kind", "mla", "heads", heads, "q_lora_rank", q,
                   "kv_lora_rank", kv, "qk_nope_head_dim", nope, "qk_rope_head_dim", rope, "v_head_dim", vd);
  return ENPU_OK;
}

/* The "moe" object: routed experts under whichever name the family gives them. */
static int moe_object(hf_ctx *c, json_t **out) {
  static const char *const routed_keys[] = {"n_routed_experts", "num_local_experts", "num_experts"};
  const char *rk = NULL;
  for (size_t i = 0; i < 3; i++)
    if (get(c, routed_keys[i])) rk = routed_keys[i];
  if (!rk)
    return fail_key(c, "n_routed_experts",
                    "the routed expert count (n_routed_experts, num_local_experts "
                    "or num_experts) of a MoE family");
  int routed = 0, k = 0, inter = 0, shared = 0, first = 0;
  ENPU_FORWARD(get_count(c, rk, -1, &routed));
  ENPU_FORWARD(get_count(c, "num_experts_per_tok", -1, &k));
  /* Mixtral's experts are intermediate_size wide; the others give moe_intermediate_size. */
  ENPU_FORWARD(
      get_count(c, get(c, "moe_intermediate_size") ? "moe_intermediate_size" : "intermediate_size", -1, &inter));
  ENPU_FORWARD(get_int(c, "n_shared_experts", 0, &shared));
  int shared_inter = 0;
  ENPU_FORWARD(get_int(c, "shared_expert_intermediate_size", 0, &shared_inter));
  if (shared_inter) {
    if (inter < 1 || shared_inter % inter)
      return fail_key(c, "shared_expert_intermediate_size",
                      "a multiple of moe_intermediate_size (the graph builds shared experts as routed-size MLPs)");
    shared = shared_inter / inter;
  }
  ENPU_FORWARD(get_int(c, "first_k_dense_replace", 0, &first));
  *out = json_pack("{s:i, s:i, s:i, s:i, s:i}", "routed_experts", routed, "shared_experts", shared,
                   "experts_per_token", k, "expert_intermediate", inter, "first_dense_layers", first);
  return ENPU_OK;
}

/* The model's name: the option's, else the config file's stem ("config" → its folder). */
static int model_name(hf_ctx *c, const char *path, char *name) {
  if (c->opt->name) {
    if (!*c->opt->name || strlen(c->opt->name) >= CONFIG_NAME_LEN)
      return enpu_errorf(c->err, ENPU_ERR_RANGE, "model name: expected 1 to %d characters, got %zu",
                         CONFIG_NAME_LEN - 1, strlen(c->opt->name));
    snprintf(name, CONFIG_NAME_LEN, "%s", c->opt->name);
    return ENPU_OK;
  }
  const char *end = path + strlen(path), *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  if (end - base > 5 && !strcmp(end - 5, ".json")) end -= 5;
  if (end - base == 6 && !strncmp(base, "config", 6) && base > path + 1) {
    end = base - 1;
    base = end;
    while (base > path && base[-1] != '/') base--;
  }
  if (end <= base || end - base >= CONFIG_NAME_LEN)
    return enpu_errorf(c->err, ENPU_ERR_RANGE, "%s: cannot name the model from its path; give --name", path);
  snprintf(name, CONFIG_NAME_LEN, "%.*s", (int)(end - base), base);
  return ENPU_OK;
}

/* The model file's JSON from the checked config. */
static int hf_model_doc(hf_ctx *c, const hf_arch *a, const char *name, json_t **out) {
  int hidden = 0, layers = 0, vocab = 0, inter = 0, dtype = 0;
  ENPU_FORWARD(get_count(c, "hidden_size", -1, &hidden));
  ENPU_FORWARD(get_count(c, "num_hidden_layers", -1, &layers));
  ENPU_FORWARD(get_count(c, "vocab_size", -1, &vocab));
  ENPU_FORWARD(get_count(c, "intermediate_size", -1, &inter));
  ENPU_FORWARD(dtype_bytes(c, &dtype));
  const json_t *tie = get(c, "tie_word_embeddings");
  if (tie && !json_is_boolean(tie)) return fail_key(c, "tie_word_embeddings", "true or false");
  if (!tie) note(c, "tie_word_embeddings: absent, taken as false (an LM head of its own)");
  json_t *attn = NULL, *moe = NULL;
  ENPU_FORWARD(a->attention == CONFIG_ATTN_GQA ? gqa_attention(c, hidden, &attn) : mla_attention(c, &attn));
  const int rc = a->moe ? moe_object(c, &moe) : ENPU_OK;
  if (rc < 0) {
    json_decref(attn);
    return rc;
  }
  json_t *m = json_pack("{s:s, s:i, s:i, s:i, s:i, s:o, s:{s:i}}", "name", name, "hidden", hidden, "layers", layers,
                        "vocab", vocab, "dtype_bytes", dtype, "attention", attn, "ffn", "intermediate", inter);
  if (m && json_is_true(tie)) json_object_set_new(m, "tie_embeddings", json_true());
  if (m && moe && json_object_set_new(m, "moe", moe) < 0) json_decref(m), m = NULL;
  else if (!m) json_decref(moe);
  ENPU_RETURN_IF(!m, c->err, ENPU_ERR_NOMEM, "out of memory (model document)");
  *out = m;
  return ENPU_OK;
}

/* The written document read back by the model loader: every range and rule applies. */
static int check_model(hf_ctx *c, json_t *m, char *text) {
  config_doc d = {.kind = "model", .text = text, .len = strlen(text), .root = m};
  snprintf(d.file, sizeof d.file, "%.900s (imported model)", c->doc.file);
  config_model *cm = calloc(1, sizeof *cm);
  ENPU_RETURN_IF(!cm, c->err, ENPU_ERR_NOMEM, "out of memory (model)");
  const int rc = config_model_parse(&d, cm, c->err);
  free(cm);
  return rc;
}

int config_model_import_hf(const char *path, const config_hf_options *opt, char **json, char **notes,
                           enpu_err *err) {
  static const config_hf_options none = {0};
  *json = NULL;
  if (notes) *notes = NULL;
  hf_ctx c = {.root = CONFIG_ROOT, .opt = opt ? opt : &none, .err = err};
  ENPU_FORWARD(config_doc_open(&c.doc, NULL, path, "hf", err));
  const hf_arch *a = NULL;
  char name[CONFIG_NAME_LEN];
  json_t *m = NULL;
  int rc = json_is_object(c.doc.root) ? ENPU_OK : fail_key(&c, "model_type", "a JSON object");
  if (rc == ENPU_OK) rc = check_keys(&c);
  if (rc == ENPU_OK) rc = find_arch(&c, &a);
  if (rc == ENPU_OK) rc = check_values(&c, a);
  if (rc == ENPU_OK) rc = model_name(&c, path, name);
  if (rc == ENPU_OK) rc = hf_model_doc(&c, a, name, &m);
  char *text = m ? json_dumps(m, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
  if (rc == ENPU_OK && !text) rc = enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory (model text)");
  if (rc == ENPU_OK) rc = check_model(&c, m, text);
  if (rc == ENPU_OK) {
    note(&c, "speculative: a config.json carries no acceptance rates; the default curve applies (jobs/README.md)");
    *json = text;
    text = NULL;
    if (notes) *notes = c.notes, c.notes = NULL;
  }
  free(text);
  free(c.notes);
  json_decref(m);
  config_doc_close(&c.doc);
  return rc;
}
