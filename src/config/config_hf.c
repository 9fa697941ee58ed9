/* config_hf.c — a Hugging Face transformers config.json turned into a model file
 * (`enpu model import`).
 *
 * Every key of the config has one disposition in the tables below: read into the model,
 * checked for a value the graph can express (anything else is an error naming the key),
 * inert (it does not change a forward pass's operators or their shapes: token ids,
 * initialisation, rope parameters, router scoring), or approximated (the graph leaves out
 * a term smaller than an operator it has; each one is reported in the notes). Keys the
 * table does not know are one error listing each (file:line:column) unless the caller
 * lists them as ignored: a field the graph would need is never dropped silently. The
 * family is checked before the keys, so a model the graph cannot express says so first. The model file written is
 * then parsed by config_model_parse, so it meets every rule a hand-written one does. */
#include <stdlib.h>
#include <string.h>

#include "config_internal.h"

/* Every key the importer knows, by its disposition (above); a config key listed in
 * neither table is unknown. */
/* clang-format off */
static const char *const hf_known[] = {
  /* read into the model */
  "architectures", "model_type", "hidden_size", "num_hidden_layers", "vocab_size", "num_attention_heads",
  "num_key_value_heads", "head_dim", "intermediate_size", "torch_dtype", "dtype", "tie_word_embeddings",
  "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "n_routed_experts",
  "num_local_experts", "num_experts", "n_shared_experts", "num_experts_per_tok", "moe_intermediate_size",
  "shared_expert_intermediate_size", "first_k_dense_replace", "max_position_embeddings", "rope_scaling",
  "rope_parameters", "text_config",
  /* must hold a value the graph expresses */
  "hidden_act", "hidden_activation", "mlp_bias", "moe_layer_freq", "decoder_sparse_step", "mlp_only_layers",
  "sliding_window", "use_sliding_window", "max_window_layers", "layer_types", "sliding_window_pattern",
  "cross_attention_layers", "lm_head_bias", "full_attn_mod",
  /* approximated: noted by quant_note, which names the method */
  "quantization_config",
  /* inert, family keys: token ids, initialisation, norms' epsilon, rotary details, routing
   * losses and group routing (norm_topk_prob renormalises the k router weights), multimodal
   * token ids, the cache's implementation */
  "_name_or_path", "auto_map", "transformers_version", "bos_token_id", "eos_token_id", "pad_token_id",
  "initializer_range", "attention_dropout", "hidden_dropout", "rms_norm_eps", "rope_theta", "use_cache",
  "pretraining_tp", "output_router_logits", "router_aux_loss_coef", "router_jitter_noise", "aux_loss_alpha",
  "seq_aux", "ep_size", "n_group", "topk_group", "topk_method", "scoring_func", "routed_scaling_factor",
  "original_max_position_embeddings", "embd_pdrop", "resid_pdrop", "rope_local_base_freq", "query_pre_attn_scalar",
  "partial_rotary_factor", "rope_interleave", "layer_norm_eps", "mlp_dropout", "image_token_id", "video_token_id",
  "image_token_index", "vision_start_token_id", "vision_end_token_id", "vision_token_id", "boi_token_index",
  "eoi_token_index", "mm_tokens_per_image", "multimodal_projector_bias", "projector_hidden_act",
  "spatial_merge_size", "vision_feature_layer", "vision_feature_select_strategy", "image_seq_length",
  "attn_implementation", "_attn_implementation", "_commit_hash", "cache_implementation", "_sliding_window_pattern",
  "norm_topk_prob",
  /* inert: the multi-token-prediction module's training loss and weight sharing (the
   * module itself is noted where its layer count is) */
  "mtp_loss_scaling_factor", "mtp_share_layers", "mtp_use_dedicated_embeddings",
  /* inert: Granite's scalar multipliers (of the embedding, the attention scores, each
   * residual branch and the logits: one multiply per element, noted by the family) and
   * Phi-4-mini's rope interpolation factor */
  "embedding_multiplier", "attention_multiplier", "residual_multiplier", "logits_scaling", "interpolate_factor",
  /* inert: transformers' PretrainedConfig itself (output switches, generation defaults,
   * task heads, tokenizer names): none reaches a decoder's forward-pass operators */
  "return_dict", "output_hidden_states", "output_attentions", "torchscript", "use_bfloat16", "tf_legacy_loss",
  "pruned_heads", "chunk_size_feed_forward", "is_encoder_decoder", "is_decoder", "cross_attention_hidden_size",
  "add_cross_attention", "tie_encoder_decoder", "max_length", "min_length", "do_sample", "early_stopping",
  "num_beams", "num_beam_groups", "diversity_penalty", "temperature", "top_k", "top_p", "typical_p",
  "repetition_penalty", "length_penalty", "no_repeat_ngram_size", "encoder_no_repeat_ngram_size", "bad_words_ids",
  "num_return_sequences", "output_scores", "return_dict_in_generate", "forced_bos_token_id", "forced_eos_token_id",
  "remove_invalid_values", "exponential_decay_length_penalty", "suppress_tokens", "begin_suppress_tokens",
  "finetuning_task", "id2label", "label2id", "num_labels", "tokenizer_class", "prefix", "sep_token_id",
  "decoder_start_token_id", "unk_token_id", "mask_token_id", "cls_token_id", "task_specific_params", "problem_type",
  "gradient_checkpointing", "output_past", "use_return_dict", "classifier_dropout", "keys_to_ignore_at_inference",
  "generation_config", "chat_template", "tokenizer_config", "_attn_implementation_internal",
  "_attn_implementation_autoset", "max_new_tokens", "min_new_tokens", "penalty_alpha", "epsilon_cutoff",
  "eta_cutoff", "encoder_repetition_penalty", "renormalize_logits", "forced_decoder_ids", "force_words_ids",
  "sequence_bias", "output_logits", "guidance_scale", "model_max_length",
};
/* clang-format on */

/* The approximated keys: each one's note, added when the config has the term. */
typedef struct {
  const char *key, *note;
} hf_note;

/* The multi-token-prediction module, under any of its families' keys: one note (EXAONE
 * 4.5 has two of the keys; note() keeps a line once). */
#define HF_MTP_NOTE                                                                                           \
  "num_nextn_predict_layers, _num_mtp_layers, mtp_num_hidden_layers: the multi-token-prediction module is a " \
  "draft head outside the forward pass; the graph has the main layers only"
static const hf_note hf_notes[] = {
    {"attention_bias", "attention_bias: the q/k/v bias vectors are not modelled (an add of heads x head_dim "
                       "per token beside a hidden x heads x head_dim matmul)"},
    {"num_nextn_predict_layers", HF_MTP_NOTE},
    {"_num_mtp_layers", HF_MTP_NOTE},
    {"mtp_num_hidden_layers", HF_MTP_NOTE},
    {"vision_config", "vision_config: the vision tower is not modelled; the graph is the language model's "
                      "(text tokens in, text tokens out)"},
    {"attn_logit_softcapping", "attn_logit_softcapping: the tanh capping of the attention scores is not "
                               "modelled (a few vector ops per score inside the attention operator)"},
    {"use_mrope", "use_mrope: M-RoPE rotates the same q/k elements as RoPE, by position ids of up to three "
                  "axes: the same operator"},
    {"final_logit_softcapping", "final_logit_softcapping: the tanh capping of the logits is not modelled "
                                "(a few vector ops per logit beside the LM head)"},
};

/* Families the graph expresses: the attention kind, MoE or dense, the MLP's operators.
 * A config is matched by its architectures[0] (the class transformers builds), then by its
 * model_type. */
typedef struct {
  const char *model_type;
  const char *classes[3]; /* architectures names building this family's language model */
  config_attention_kind attention;
  bool moe;
  bool fuse_gate_up; /* the checkpoint's MLP has one gate_up matrix (Phi-3) */
  const char *note;  /* a term of the architecture the graph leaves out, or NULL */
  bool tie_default;  /* tie_word_embeddings when the config omits it (Gemma's is true) */
  int window_every;  /* one window-limited layer in this many (Gemma 2: 2), 0: by the config */
} hf_arch;

/* clang-format off */
static const hf_arch hf_archs[] = {
  {"llama", {"LlamaForCausalLM"}, CONFIG_ATTN_GQA, false, false, NULL, false, 0},
  {"mistral", {"MistralForCausalLM"}, CONFIG_ATTN_GQA, false, false, NULL, false, 0},
  {"granite", {"GraniteForCausalLM"}, CONFIG_ATTN_GQA, false, false,
   "granite: the embedding, attention, residual and logit multipliers are not modelled (one multiply per element "
   "beside the layer's matmuls)", false, 0},
  {"ministral3", {"Mistral3ForConditionalGeneration", "Ministral3ForCausalLM"}, CONFIG_ATTN_GQA, false, false, NULL,
   false, 0},
  {"qwen2", {"Qwen2ForCausalLM"}, CONFIG_ATTN_GQA, false, false, "qwen2: the q/k/v bias vectors are not modelled",
   false, 0},
  {"qwen2_5_vl", {"Qwen2_5_VLForConditionalGeneration"}, CONFIG_ATTN_GQA, false, false,
   "qwen2_5_vl: the q/k/v bias vectors are not modelled; M-RoPE rotates the same q/k elements as RoPE (the same "
   "operator)", false, 0},
  {"qwen3", {"Qwen3ForCausalLM"}, CONFIG_ATTN_GQA, false, false, "qwen3: the per-head q/k RMSNorms are not modelled",
   false, 0},
  {"phi3", {"Phi3ForCausalLM"}, CONFIG_ATTN_GQA, false, true,
   "phi3: the checkpoint's fused qkv_proj and gate_up_proj are the graph's qkv_proj and (fuse_gate_up) gate_up "
   "operators: the same arithmetic", false, 0},
  {"mixtral", {"MixtralForCausalLM"}, CONFIG_ATTN_GQA, true, false, NULL, false, 0},
  {"qwen2_moe", {"Qwen2MoeForCausalLM"}, CONFIG_ATTN_GQA, true, false,
   "qwen2_moe: the q/k/v bias vectors and the shared expert's sigmoid gate (hidden x 1) are not modelled", false, 0},
  {"qwen3_moe", {"Qwen3MoeForCausalLM"}, CONFIG_ATTN_GQA, true, false,
   "qwen3_moe: the per-head q/k RMSNorms are not modelled", false, 0},
  {"deepseek_v2", {"DeepseekV2ForCausalLM"}, CONFIG_ATTN_MLA, true, false, NULL, false, 0},
  {"deepseek_v3", {"DeepseekV3ForCausalLM"}, CONFIG_ATTN_MLA, true, false, NULL, false, 0},
  {"exaone4", {"Exaone4ForCausalLM"}, CONFIG_ATTN_GQA, false, false,
   "exaone4: the per-head q/k RMSNorms are not modelled (its norms after attention and after the MLP stand for "
   "the graph's before them: the same count)", false, 0},
  {"olmo3", {"Olmo3ForCausalLM"}, CONFIG_ATTN_GQA, false, false,
   "olmo3: the q/k RMSNorms are not modelled (its norms after attention and after the MLP stand for the graph's "
   "before them: the same count)", false, 0},
  {"gemma2", {"Gemma2ForCausalLM"}, CONFIG_ATTN_GQA, false, false,
   "gemma2: the embedding's scaling by sqrt(hidden) and the extra norms after attention and after the MLP are not "
   "modelled (vector work per token beside the layer's matmuls)", true, 2},
  {"gemma3_text", {"Gemma3ForCausalLM", "Gemma3ForConditionalGeneration"}, CONFIG_ATTN_GQA, false, false,
   "gemma3: the embedding's scaling by sqrt(hidden), the per-head q/k RMSNorms and the extra norms after attention "
   "and after the MLP are not modelled (vector work per token beside the layer's matmuls)", true, 0},
};
/* clang-format on */
#define NARCH (sizeof hf_archs / sizeof hf_archs[0])

/* Families the graph cannot express, with the feature it lacks. */
#define HF_LINEAR_ATTENTION                                                                                         \
  "linear-attention layers (Gated DeltaNet, layer_types \"linear_attention\": a recurrent state updated per token " \
  "in place of a KV cache, on three of every four layers): the graph has softmax attention only"
#define HF_CHUNKED_ATTENTION                                                                                     \
  "chunked local attention on a MoE model (attention_chunk_size: three of every four layers attend only within " \
  "their chunk of that many tokens, without RoPE on the fourth): the graph's bounded attention is a sliding "    \
  "window, on dense models"
static const struct {
  const char *model_type, *cls, *why;
} hf_rejected[] = {
    {"gpt_oss", "GptOssForCausalLM",
     "attention sinks (a learned per-head logit in every softmax, on its sliding-window and full layers alike): the "
     "graph's attention has no sink term"},
    {"mllama", "MllamaForConditionalGeneration",
     "cross-attention layers (text attending to image tokens, cross_attention_layers): the graph has self-attention "
     "only"},
    {"qwen3_5", "Qwen3_5ForConditionalGeneration", HF_LINEAR_ATTENTION},
    {"qwen3_5_moe", "Qwen3_5MoeForConditionalGeneration", HF_LINEAR_ATTENTION},
    {"qwen3_next", "Qwen3NextForCausalLM", HF_LINEAR_ATTENTION},
    {"llama4", "Llama4ForConditionalGeneration", HF_CHUNKED_ATTENTION},
    {"llama4_text", "Llama4ForCausalLM", HF_CHUNKED_ATTENTION},
};

/* Keys a family's published configs leave to its transformers class: Gemma 3's config.json
 * states only what differs from Gemma3TextConfig (tests/fixtures/hf/README.md: the
 * gemma-3-4b-it and gemma-3-27b-it files omit the heads, head_dim, vocab_size, the
 * activation, the context length and the window pattern). The importer takes the class's
 * defaults for these keys only, and says which. The structural sizes (hidden_size,
 * num_hidden_layers, intermediate_size) both files state: a config without them is
 * truncated, an error, not a default-sized model. */
static const struct {
  const char *model_type, *cls, *key, *value; /* value: JSON text */
} hf_defaults[] = {
    {"gemma3_text", "Gemma3TextConfig", "vocab_size", "262208"},
    {"gemma3_text", "Gemma3TextConfig", "num_attention_heads", "8"},
    {"gemma3_text", "Gemma3TextConfig", "num_key_value_heads", "4"},
    {"gemma3_text", "Gemma3TextConfig", "head_dim", "256"},
    {"gemma3_text", "Gemma3TextConfig", "hidden_activation", "\"gelu_pytorch_tanh\""},
    {"gemma3_text", "Gemma3TextConfig", "max_position_embeddings", "131072"},
    {"gemma3_text", "Gemma3TextConfig", "sliding_window", "4096"},
    {"gemma3_text", "Gemma3TextConfig", "sliding_window_pattern", "6"},
};

typedef struct {
  config_doc doc;
  config_path root;
  const json_t *cfg;   /* the language model's keys: the root, or its text_config */
  config_path cfg_at;  /* where they are: $ or $.text_config */
  config_path text_at; /* storage for $.text_config */
  const config_hf_options *opt;
  enpu_err *err;
  json_t *defaults; /* the family's class defaults of the keys the config omits (hf_defaults) */
  int limit;        /* the context limit, tokens (0: not stated) */
  char *notes;
  size_t notes_len;
} hf_ctx;

/* Has note() already added this line? */
static bool noted(const hf_ctx *c, const char *text, size_t n) {
  for (const char *p = c->notes; p && (p = strstr(p, text)); p++)
    if ((p == c->notes || p[-1] == '\n') && p[n] == '\n') return true;
  return false;
}

static void note(hf_ctx *c, const char *text) {
  const size_t n = strlen(text);
  if (noted(c, text, n)) return;
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

/* A key of the language model: the config's, else (absent) its family's class default. */
static const json_t *get(const hf_ctx *c, const char *key) {
  const json_t *v = json_object_get(c->cfg, key);
  if (!v) v = json_object_get(c->defaults, key);
  return json_is_null(v) ? NULL : v;
}

static const char *string_at(const json_t *obj, const char *key) {
  const json_t *v = json_object_get(obj, key);
  if (json_is_array(v)) v = json_array_get(v, 0);
  return json_is_string(v) ? json_string_value(v) : "";
}

/* An error at the key of obj (at `at`): "file:line:column: $.key: expected ..., got ...";
 * a key the config lacks, at the object that lacks it (the text has no place for the key
 * itself). */
static int fail_in(hf_ctx *c, const json_t *obj, const config_path *at, const char *key, const char *expected) {
  if (json_is_object(obj) && !json_object_get(obj, key)) {
    const json_t *dflt = json_object_get(c->defaults, key);
    char got[96] = "";
    if (dflt) config_describe(dflt, got, sizeof got);
    return config_fail(&c->doc, at, c->err, ENPU_ERR_INVALID, "missing required key '%s' (expected %s%s%s)", key,
                       expected, dflt ? "; the family's default is " : "", got);
  }
  config_path p = CONFIG_KEY(at, key);
  char got[96] = "nothing (missing or null)";
  const json_t *v = json_object_get(obj, key);
  if (v && !json_is_null(v)) config_describe(v, got, sizeof got);
  return config_fail(&c->doc, &p, c->err, ENPU_ERR_INVALID, "expected %s, got %s", expected, got);
}

/* An error at a key of the language model (get). */
static int fail_key(hf_ctx *c, const char *key, const char *expected) {
  return fail_in(c, c->cfg, &c->cfg_at, key, expected);
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

/* A key of the language model, or of the wrapper around it (a vision-language config
 * states the dtype and the embedding tying once, at its root). */
static const json_t *get_lm(const hf_ctx *c, const char *key) {
  const json_t *v = get(c, key);
  if (v || c->cfg == c->doc.root) return v;
  v = json_object_get(c->doc.root, key);
  return json_is_null(v) ? NULL : v;
}

/* An error at a key get_lm reads: where it is (text_config or, else, the root); missing
 * from both, at the language model's object. */
static int fail_lm_key(hf_ctx *c, const char *key, const char *expected) {
  if (c->cfg != c->doc.root && !json_object_get(c->cfg, key) && json_object_get(c->doc.root, key))
    return fail_in(c, c->doc.root, &c->root, key, expected);
  return fail_key(c, key, expected);
}

#define NKNOWN (sizeof hf_known / sizeof hf_known[0])
#define NNOTES (sizeof hf_notes / sizeof hf_notes[0])

/* Whether the importer knows key; *note_out: its note if it is an approximated one, else NULL. */
static bool known_key(const char *key, const char **note_out) {
  *note_out = NULL;
  for (size_t i = 0; i < NNOTES; i++)
    if (!strcmp(hf_notes[i].key, key)) return (*note_out = hf_notes[i].note), true;
  for (size_t i = 0; i < NKNOWN; i++)
    if (!strcmp(hf_known[i], key)) return true;
  return false;
}

/* One unknown key's line of the error ("file:line:column: $.key"); when the message
 * runs short, the file is left out ("line:column $.key"), and only past that is a key
 * merely counted. */
static void list_unknown(hf_ctx *c, const config_path *at, const char *key, char *list, size_t cap, int *count,
                         int *left_out) {
  config_path p = CONFIG_KEY(at, key);
  char where[600];
  config_where(&c->doc, &p, where, sizeof where);
  const size_t used = strlen(list), file_len = strlen(c->doc.file);
  const char *tail = strncmp(where, c->doc.file, file_len) ? where : where + file_len + 1;
  if (used + strlen(where) + 4 < cap / 2) snprintf(list + used, cap - used, "\n  %s", where);
  else if (used + strlen(tail) + 4 < cap) snprintf(list + used, cap - used, "\n  %s", tail);
  else (*left_out)++;
  (*count)++;
}

/* The keys of one object of the config: notes for the approximated ones present, the
 * unknown ones (not listed as ignored) added to the list. */
static void scan_keys(hf_ctx *c, const json_t *obj, const config_path *at, char *list, size_t cap, int *count,
                      int *left_out) {
  const char *key;
  const json_t *v;
  json_object_foreach((json_t *)obj, key, v) {
    const char *why;
    if (!known_key(key, &why)) {
      if (!ignored(c, key)) list_unknown(c, at, key, list, cap, count, left_out);
      continue;
    }
    /* An approximated term is reported when the config has it: true, a positive count or
     * a settings object (false, 0 and null mean the model has none). */
    const bool present = json_is_true(v) || json_is_object(v) || (json_is_integer(v) && json_integer_value(v) > 0);
    if (why && present) note(c, why);
  }
}

/* Every key of the config (and of its text_config) known, or listed as ignored; all the
 * unknown ones are reported in one error, each at its file:line:column. */
static int check_keys(hf_ctx *c) {
  char list[ENPU_ERR_MSG_LEN - 256] = "";
  int count = 0, left_out = 0;
  scan_keys(c, c->doc.root, &c->root, list, sizeof list, &count, &left_out);
  if (c->cfg != c->doc.root) scan_keys(c, c->cfg, &c->cfg_at, list, sizeof list, &count, &left_out);
  if (!count) return ENPU_OK;
  char more[64] = "";
  if (left_out) snprintf(more, sizeof more, "\n  ... and %d more", left_out);
  return enpu_errorf(c->err, ENPU_ERR_INVALID,
                     "%s: %d unknown field%s: the importer does not know whether the graph needs %s (pass --ignore "
                     "KEY[,KEY...] for those that do not change the operators of a forward pass):%s%s",
                     c->doc.file, count, count > 1 ? "s" : "", count > 1 ? "them" : "it", list, more);
}

/* A rejected family, by class or model_type (those of the object at `at`: the root or
 * text_config): the error names what the graph lacks. */
static int check_rejected(hf_ctx *c, const config_path *at, const char *cls, const char *mt) {
  for (size_t i = 0; i < sizeof hf_rejected / sizeof hf_rejected[0]; i++) {
    const bool by_cls = *cls && !strcmp(hf_rejected[i].cls, cls);
    if (!by_cls && strcmp(hf_rejected[i].model_type, mt)) continue;
    config_path p = CONFIG_KEY(at, by_cls ? "architectures" : "model_type");
    return config_fail(&c->doc, &p, c->err, ENPU_ERR_INVALID, "architecture \"%s\" cannot be expressed: %s",
                       by_cls ? cls : mt, hf_rejected[i].why);
  }
  return ENPU_OK;
}

static const hf_arch *arch_of_class(const char *cls) {
  for (size_t i = 0; i < NARCH && *cls; i++)
    for (int k = 0; k < 3 && hf_archs[i].classes[k]; k++)
      if (!strcmp(hf_archs[i].classes[k], cls)) return &hf_archs[i];
  return NULL;
}

/* The family's class defaults of the keys the config omits, in c->defaults, and a note
 * naming each one taken. */
static int take_defaults(hf_ctx *c, const hf_arch *a) {
  char line[640] = "", *at = line;
  const char *cls = NULL;
  for (size_t i = 0; i < sizeof hf_defaults / sizeof *hf_defaults; i++) {
    if (strcmp(hf_defaults[i].model_type, a->model_type) || json_object_get(c->cfg, hf_defaults[i].key)) continue;
    if (!c->defaults) c->defaults = json_object();
    json_t *v = json_loads(hf_defaults[i].value, JSON_DECODE_ANY, NULL);
    ENPU_RETURN_IF(!c->defaults || !v || json_object_set_new(c->defaults, hf_defaults[i].key, v) < 0, c->err,
                   ENPU_ERR_NOMEM, "out of memory (family defaults)");
    const size_t room = (size_t)(line + sizeof line - at); /* >= 1: at stops at the last byte */
    const int n = snprintf(at, room, "%s%s %s", cls ? ", " : "", hf_defaults[i].key, hf_defaults[i].value);
    if (n > 0) at += (size_t)n < room ? (size_t)n : room - 1;
    cls = hf_defaults[i].cls;
  }
  if (!cls) return ENPU_OK;
  char text[sizeof line + 160];
  snprintf(text, sizeof text, "%s: absent from the config, taken as transformers' %s defaults (as it does): %s",
           a->model_type, cls, line);
  note(c, text);
  return ENPU_OK;
}

/* The family: architectures[0] first (the root's, then text_config's), model_type (the
 * root's, then text_config's) as the fallback. A known class under another model_type
 * (Kimi-K2's kimi_k2 building DeepseekV3ForCausalLM, EXAONE 4.5's text_config building
 * Exaone4ForCausalLM) is that class's graph, with a note. */
static int find_arch(hf_ctx *c, const hf_arch **out) {
  const char *cls = string_at(c->doc.root, "architectures"), *mt = string_at(c->doc.root, "model_type");
  const char *text_mt = c->cfg != c->doc.root ? string_at(c->cfg, "model_type") : "";
  ENPU_FORWARD(check_rejected(c, &c->root, cls, mt));
  const hf_arch *a = arch_of_class(cls);
  if (!a && c->cfg != c->doc.root && (a = arch_of_class(string_at(c->cfg, "architectures")))) {
    cls = string_at(c->cfg, "architectures");
    mt = text_mt;
  }
  for (size_t i = 0; i < NARCH && !a; i++)
    if (!strcmp(hf_archs[i].model_type, mt) || (*text_mt && !strcmp(hf_archs[i].model_type, text_mt)))
      a = &hf_archs[i];
  if (!a) {
    if (c->cfg != c->doc.root)
      ENPU_FORWARD(check_rejected(c, &c->cfg_at, string_at(c->cfg, "architectures"), text_mt));
    config_path p = CONFIG_KEY(&c->root, *cls ? "architectures" : "model_type");
    return config_fail(&c->doc, &p, c->err, ENPU_ERR_INVALID,
                       "expected a known architecture (LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, "
                       "Qwen3ForCausalLM, Phi3ForCausalLM, MixtralForCausalLM, Qwen2MoeForCausalLM, "
                       "Qwen3MoeForCausalLM, DeepseekV2ForCausalLM, DeepseekV3ForCausalLM, ...) or model_type, got "
                       "\"%s\" (model_type \"%s\")",
                       cls, mt);
  }
  char line[256];
  if (*mt && strcmp(a->model_type, mt) && strcmp(a->model_type, text_mt)) {
    snprintf(line, sizeof line, "architecture %s under model_type \"%s\": imported as the %s family's graph", cls,
             mt, a->model_type);
    note(c, line);
  }
  if (a->note) note(c, a->note);
  *out = a;
  return take_defaults(c, a);
}

/* The context limit: max_position_embeddings, or the longer length a rope scaling
 * (rope_scaling or rope_parameters: factor x original_max_position_embeddings) extends
 * it to. 0: the config states none. */
static int context_limit(hf_ctx *c, int *out) {
  int limit = 0;
  ENPU_FORWARD(get_int(c, "max_position_embeddings", 0, &limit));
  const json_t *rope = get(c, "rope_scaling");
  if (!json_is_object(rope)) rope = get(c, "rope_parameters");
  const json_t *factor = json_object_get(rope, "factor"),
               *orig = json_object_get(rope, "original_max_position_embeddings");
  const char *type = string_at(rope, json_object_get(rope, "rope_type") ? "rope_type" : "type");
  /* YaRN, linear and dynamic scaling stretch the trained length by the factor; llama3's
   * and longrope's factor reshapes frequencies within max_position_embeddings */
  const bool extends = !strcmp(type, "yarn") || !strcmp(type, "linear") || !strcmp(type, "dynamic");
  if (extends && json_is_number(factor) && json_is_integer(orig)) {
    const double ext = json_number_value(factor) * (double)json_integer_value(orig);
    if (ext > limit && ext <= 16777216) {
      char line[160];
      snprintf(line, sizeof line, "context limit: rope scaling extends max_position_embeddings %d to %.0f tokens",
               limit, ext);
      note(c, line);
      limit = (int)ext;
    }
  }
  if (limit > 16777216) limit = 16777216;
  if (!limit) note(c, "context limit: the config states none (no max_position_embeddings); buckets are unbounded");
  *out = limit;
  return ENPU_OK;
}

/* The MLP's activation: SiLU (SwiGLU) or GELU (GeGLU: the same gate, up, product and down
 * operators; the activation's vector work is counted as SiLU's). */
static int check_activation(hf_ctx *c) {
  const char *key = get(c, "hidden_activation") ? "hidden_activation" : "hidden_act";
  const json_t *v = get(c, key);
  if (!v || (json_is_string(v) && !strcmp(json_string_value(v), "silu"))) return ENPU_OK;
  static const char *const gelu[] = {"gelu_pytorch_tanh", "gelu", "gelu_new"};
  for (size_t i = 0; json_is_string(v) && i < 3; i++)
    if (!strcmp(json_string_value(v), gelu[i])) {
      note(c, "GeGLU: a gated MLP with GELU in place of SiLU has the same operators; the activation's vector work "
              "is counted as SiLU's");
      return ENPU_OK;
    }
  return fail_key(c, key, "\"silu\" or \"gelu_pytorch_tanh\" (every FFN of the graph is a gated MLP)");
}

/* A window pattern as letters (EXAONE's "LLLG": a sliding layer, L, or a global one, G,
 * repeated over the layers): how many layers are sliding. */
static int pattern_count(hf_ctx *c, const char *pattern, int layers, int *count) {
  const size_t n = strlen(pattern);
  if (!n || strspn(pattern, "LG") != n)
    return fail_key(c, "sliding_window_pattern",
                    "an integer, or letters L (sliding) and G (global) repeated per layer");
  *count = 0;
  for (int i = 0; i < layers; i++) *count += pattern[(size_t)i % n] == 'L';
  return ENPU_OK;
}

/* How many layers a window limits: layer_types' sliding ones (every other one a
 * full_attention), else the family's pattern (Gemma 2: every other layer; Gemma 3: all
 * but every sliding_window_pattern-th), else Qwen2's layers from max_window_layers on,
 * else (Mistral v0.1) every layer. */
static int window_count(hf_ctx *c, const hf_arch *a, int layers, int *count) {
  const json_t *v = get(c, "layer_types");
  if (json_is_array(v)) {
    if ((int)json_array_size(v) != layers)
      return fail_key(c, "layer_types", "one entry per layer (num_hidden_layers)");
    *count = 0;
    for (size_t i = 0; i < json_array_size(v); i++) {
      const char *t = json_is_string(json_array_get(v, i)) ? json_string_value(json_array_get(v, i)) : "";
      if (!strcmp(t, "sliding_attention")) (*count)++;
      else if (strcmp(t, "full_attention"))
        return fail_key(c, "layer_types", "\"full_attention\" or \"sliding_attention\" in every layer");
    }
    return ENPU_OK;
  }
  int pattern = 0, from = 0;
  v = get(c, "sliding_window_pattern");
  if (json_is_integer(v)) ENPU_FORWARD(get_count(c, "sliding_window_pattern", -1, &pattern));
  if (a->window_every) *count = (layers + a->window_every - 1) / a->window_every;
  else if (json_is_string(v)) return pattern_count(c, json_string_value(v), layers, count);
  else if (pattern) *count = layers - layers / pattern;
  else if (json_is_true(get(c, "use_sliding_window"))) {
    ENPU_FORWARD(get_int(c, "max_window_layers", 0, &from));
    *count = from < layers ? layers - from : 0;
  } else *count = layers;
  return ENPU_OK;
}

/* Window-limited attention: a window the sequence can outgrow bounds the attention of
 * the layers it applies to (the model's sliding_window). A window off (use_sliding_window
 * false), null, or as long as the context (Phi-3's 131072 of 131072) limits nothing. */
static int window_of(hf_ctx *c, const hf_arch *a, int layers, int *size, int *count) {
  *size = *count = 0;
  const json_t *v = get(c, "cross_attention_layers");
  if (v && (!json_is_array(v) || json_array_size(v)))
    return fail_key(c, "cross_attention_layers", "[] (cross-attention layers cannot be expressed)");
  const json_t *sw = get(c, "sliding_window");
  if (!sw || json_is_false(json_object_get(c->cfg, "use_sliding_window")) || ignored(c, "sliding_window")) {
    if (sw) note(c, "sliding_window: not applied (use_sliding_window false, or --ignore): full attention");
    return ENPU_OK;
  }
  ENPU_FORWARD(get_count(c, "sliding_window", -1, size));
  if (c->limit && *size >= c->limit) return *size = 0, ENPU_OK;
  ENPU_FORWARD(window_count(c, a, layers, count));
  if (!*count) return *size = 0, ENPU_OK;
  char line[320];
  snprintf(line, sizeof line,
           "sliding_window: %d of %d layers attend to the last %d tokens (their attention operators are bounded "
           "by the window, and they keep only the window's KV cache)",
           *count, layers, *size);
  note(c, line);
  return ENPU_OK;
}

/* A quantized checkpoint (Devstral 2's is fp8) is priced in torch_dtype's bytes unless
 * --dtype-bytes says otherwise: the weights a job init places on chips would be twice
 * an fp8 checkpoint's, so the note names the method and the option. */
static void quant_note(hf_ctx *c) {
  const json_t *q = get_lm(c, "quantization_config");
  if (!json_is_object(q) || c->opt->dtype_bytes > 0) return;
  const char *method = string_at(q, "quant_method");
  char line[400];
  snprintf(
      line, sizeof line,
      "quantization_config: the checkpoint is quantized (quant_method \"%s\"); weights, activations and the KV "
      "cache are priced in the bytes of torch_dtype, not its format: --dtype-bytes 1 prices all three in one "
      "byte (an fp8 checkpoint served with an fp8 KV cache)",
      *method ? method : "not stated");
  note(c, line);
}

/* Keys that must hold the value the graph builds. */
static int check_values(hf_ctx *c, const hf_arch *a) {
  ENPU_FORWARD(check_activation(c));
  quant_note(c);
  if (json_is_true(get(c, "mlp_bias"))) return fail_key(c, "mlp_bias", "false (the graph's MLPs have no bias)");
  if (json_is_true(get(c, "lm_head_bias")))
    return fail_key(c, "lm_head_bias", "false (the graph's LM head has no bias)");
  const json_t *full = get(c, "full_attn_mod"); /* Phi-4-mini: every n-th layer full attention */
  if (full && !(json_is_integer(full) && json_integer_value(full) == 1))
    return fail_key(c, "full_attn_mod", "1 (every layer full attention)");
  int one = 1;
  if (a->moe) {
    ENPU_FORWARD(get_int(c, "moe_layer_freq", 1, &one));
    if (one != 1) return fail_key(c, "moe_layer_freq", "1 (every layer after the first dense ones is MoE)");
    ENPU_FORWARD(get_int(c, "decoder_sparse_step", 1, &one));
    if (one != 1) return fail_key(c, "decoder_sparse_step", "1 (every layer after the first dense ones is MoE)");
    const json_t *v = get(c, "mlp_only_layers");
    if (v && (!json_is_array(v) || json_array_size(v)))
      return fail_key(c, "mlp_only_layers", "[] (dense layers only before the MoE ones, by first_k_dense_replace)");
  }
  return context_limit(c, &c->limit);
}

static int dtype_bytes(hf_ctx *c, int *out) {
  if (c->opt->dtype_bytes > 0) {
    *out = c->opt->dtype_bytes;
    return ENPU_OK;
  }
  const char *key = get_lm(c, "torch_dtype") || !get_lm(c, "dtype") ? "torch_dtype" : "dtype";
  const json_t *v = get_lm(c, key);
  static const struct {
    const char *name;
    int bytes;
  } names[] = {{"bfloat16", 2}, {"float16", 2}, {"float32", 4}, {"float8_e4m3fn", 1}, {"float8_e5m2", 1}};
  for (size_t i = 0; json_is_string(v) && i < sizeof names / sizeof names[0]; i++)
    if (!strcmp(json_string_value(v), names[i].name)) {
      *out = names[i].bytes;
      return ENPU_OK;
    }
  return fail_lm_key(c, key, "bfloat16, float16, float32, float8_e4m3fn or float8_e5m2 (or give --dtype-bytes)");
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
  const int limit = c->limit;
  ENPU_FORWARD(get_count(c, "hidden_size", -1, &hidden));
  ENPU_FORWARD(get_count(c, "num_hidden_layers", -1, &layers));
  ENPU_FORWARD(get_count(c, "vocab_size", -1, &vocab));
  ENPU_FORWARD(get_count(c, "intermediate_size", -1, &inter));
  ENPU_FORWARD(dtype_bytes(c, &dtype));
  const json_t *tie = get_lm(c, "tie_word_embeddings");
  if (tie && !json_is_boolean(tie)) return fail_lm_key(c, "tie_word_embeddings", "true or false");
  if (!tie)
    note(c, a->tie_default
                ? "tie_word_embeddings: absent, taken as the family's true (the embedding is the LM head)"
                : "tie_word_embeddings: absent, taken as false (an LM head of its own)");
  const bool tied = tie ? json_is_true(tie) : a->tie_default;
  int window = 0, windowed = 0;
  ENPU_FORWARD(window_of(c, a, layers, &window, &windowed));
  json_t *attn = NULL, *moe = NULL;
  ENPU_FORWARD(a->attention == CONFIG_ATTN_GQA ? gqa_attention(c, hidden, &attn) : mla_attention(c, &attn));
  const int rc = a->moe ? moe_object(c, &moe) : ENPU_OK;
  if (rc < 0) {
    json_decref(attn);
    return rc;
  }
  json_t *m = json_pack("{s:s, s:i, s:i, s:i, s:i, s:o, s:{s:i}}", "name", name, "hidden", hidden, "layers", layers,
                        "vocab", vocab, "dtype_bytes", dtype, "attention", attn, "ffn", "intermediate", inter);
  if (m && a->fuse_gate_up) json_object_set_new(json_object_get(m, "ffn"), "fuse_gate_up", json_true());
  if (m && tied) json_object_set_new(m, "tie_embeddings", json_true());
  if (m && limit) json_object_set_new(m, "context_limit", json_integer(limit));
  if (m && windowed)
    json_object_set_new(m, "sliding_window", json_pack("{s:i, s:i}", "size", window, "layers", windowed));
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
  if (rc == ENPU_OK && c->opt->model_out) *c->opt->model_out = *cm;
  free(cm);
  return rc;
}

/* The language model's keys: the root's, or text_config's for a vision-language release. */
static void find_lm(hf_ctx *c) {
  c->cfg = c->doc.root;
  c->cfg_at = c->root;
  const json_t *text = json_object_get(c->doc.root, "text_config");
  if (!json_is_object(text)) return;
  c->text_at = CONFIG_KEY(&c->root, "text_config");
  c->cfg = text;
  c->cfg_at = c->text_at;
  note(c, "text_config: the language model is imported; the vision tower and the projector are not modelled");
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
  c.cfg = c.doc.root;
  int rc = json_is_object(c.doc.root) ? ENPU_OK : fail_key(&c, "model_type", "a JSON object");
  if (rc == ENPU_OK) find_lm(&c);
  if (rc == ENPU_OK) rc = find_arch(&c, &a); /* the architecture first: a family refused is told so */
  if (rc == ENPU_OK) rc = check_keys(&c);
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
  json_decref(c.defaults);
  config_doc_close(&c.doc);
  return rc;
}
