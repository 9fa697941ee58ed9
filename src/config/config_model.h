/* config_model.h — the model file (jobs/models/<name>.json) and the Hugging Face importer.
 * Part of config.h (include that): the module's one public header gathers these. */
#ifndef ENPU_CONFIG_MODEL_H
#define ENPU_CONFIG_MODEL_H

#include "config_vocab.h"

/* ---------------------------------------------------------------------------------
 * Model (jobs/models/<name>.json)
 *
 * { "name": "llama3-70b", "hidden": 8192, "layers": 80, "vocab": 128256,
 *   "dtype_bytes": 2,
 *   "attention": { "kind": "gqa", "heads": 64, "kv_heads": 8, "head_dim": 128 },
 *   "ffn": { "intermediate": 28672, "fuse_gate_up": false } }     (fuse_gate_up optional)
 * "tie_embeddings": true (optional, default false) shares the embedding table with the LM
 * head: the weights held count it once (the operators are the same).
 * MLA (DeepSeek):
 *   "attention": { "kind": "mla", "heads": 128, "q_lora_rank": 1536,
 *                  "kv_lora_rank": 512, "qk_nope_head_dim": 128,
 *                  "qk_rope_head_dim": 64, "v_head_dim": 128 },
 *   "ffn": { "intermediate": 12288 },          (dense layers)
 *   "moe": { "routed_experts": 160, "shared_experts": 2, "experts_per_token": 6,
 *            "expert_intermediate": 1536, "first_dense_layers": 1 }
 * q_lora_rank 0 means no low-rank query projection. "fuse_gate_up" (default false) builds
 * the gate and up projections of every SwiGLU MLP of the model (dense, shared and routed
 * experts) as one [hidden, 2·inter] matmul instead of two (graph.h, "Operator
 * granularity"). Checks: experts_per_token <= routed_experts, first_dense_layers < layers.
 * Optional, "context_limit": N (tokens; a job's seq bucket beyond it is refused at load),
 * and "sliding_window": { "size": 4096, "layers": 48 } (48 of the layers attend to the
 * last 4096 tokens only; dense GQA models).
 * Optional, self-speculative decoding (the replay's draft/verify passes, replay.h):
 *   "speculative": { "acceptance": [ { "exit_layers": 20, "rate": 0.63 }, ... ] }
 * one row per draft exit depth (strictly increasing, below layers): the probability that
 * the full model accepts a token drafted through the first exit_layers layers, given
 * the drafts before it were accepted. Without the section: exits at 1/4, 1/2 and 3/4 of
 * the layers with the default curve of config_spec_default_rate (jobs/README.md gives
 * its source). */

#define CONFIG_MAX_SPEC_EXITS 8

typedef struct {
  int exit_layers;
  double rate; /* 0..1 */
} config_spec_exit;

/* The default acceptance rate of a draft exiting after `fraction` of the layers:
 * piecewise linear through (0, 0), (1/4, 0.63) and (1, 1). */
double config_spec_default_rate(double fraction);

typedef enum { CONFIG_ATTN_GQA = 0, CONFIG_ATTN_MLA = 1 } config_attention_kind;

/* `enpu model import`: a Hugging Face transformers config.json as a model file. The
 * family comes from architectures[0], else model_type (llama, mistral, ministral3, qwen2,
 * qwen2_5_vl, qwen3, phi3, exaone4, olmo3, gemma2, gemma3_text, mixtral, qwen2_moe,
 * qwen3_moe, deepseek_v2, deepseek_v3; Kimi-K2's kimi_k2 by its class); a text_config
 * holds the language model of a vision-language release. Every key of the config is read,
 * checked for a value the graph expresses, or known not to change a forward pass's
 * operators; the architecture is checked first, then every unknown key not listed in
 * `ignore` is reported in one error. name: the model's (NULL: the file's stem, or its
 * folder's for config.json); dtype_bytes: 0 reads torch_dtype. @return 0 with *json the
 * model file's text (malloc'd; it passed config_model_parse) and *notes (malloc'd, may be
 * NULL) one line per term the graph approximates; ENPU_ERR_IO, _PARSE, _INVALID, _RANGE
 * naming file:line:column and the key. */
typedef struct config_model config_model;
typedef struct {
  const char *name;
  int dtype_bytes;
  const char *const *ignore;
  int nignore;
  config_model *model_out; /* when not NULL: the imported model as loaded (sizes derived) */
} config_hf_options;
int config_model_import_hf(const char *path, const config_hf_options *opt, char **json, char **notes,
                           enpu_err *err);

struct config_model {
  char name[CONFIG_NAME_LEN];
  char path[CONFIG_PATH_LEN];
  int hidden;
  int layers;
  int vocab;
  int dtype_bytes;
  config_attention_kind attention;
  int heads;
  int kv_heads; /* GQA only; MLA: equals heads (every head has its own K/V) */
  int head_dim; /* GQA only */
  int q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim; /* MLA */
  int ffn_intermediate;
  bool ffn_fuse_gate_up; /* gate and up as one matmul (default false: two, as NeuSim) */
  bool tie_embeddings;   /* embedding table and LM head are one matrix (default false) */
  bool moe;              /* true when the "moe" object is present */
  int routed_experts, shared_experts, experts_per_token, expert_intermediate, first_dense_layers;

  /* Derived at load (counts, not bytes; whole model, not per chip). */
  double params_total;           /* embeddings + LM head (once when tied) + all layers, incl. norms */
  double params_active;          /* per token: dense + shared + experts_per_token routed */
  double params_routed;          /* all routed-expert weights (sharded by EP × TP); 0 if dense */
  double params_layer_attention; /* one layer's attention block and its two RMSNorms */
  /* KV-cache bytes per token, all layers, whole model: GQA 2*layers*kv_heads*head_dim*
   * dtype; MLA layers*(kv_lora_rank + qk_rope_head_dim)*dtype (compressed latent). A
   * sequence longer than a sliding window holds less: config_model_kv_bytes. */
  double kv_bytes_per_token;
  config_spec_exit spec_exits[CONFIG_MAX_SPEC_EXITS]; /* the file's, or the default */
  int spec_exit_count;
  bool spec_default; /* no "speculative" section: the default table */
  int context_limit; /* "context_limit": longest sequence the model takes, tokens; 0 = not stated */
  /* "sliding_window": { "size", "layers" }: window_layers of the layers attend to the
   * last window_size tokens only (0: every layer attends to the whole sequence) */
  int window_size, window_layers;
  uint64_t hash; /* content hash of the file */
};

int config_model_load(const char *path, config_model **out, enpu_err *err);

/* KV-cache bytes of one sequence of `tokens` tokens, whole model: a window-limited layer
 * keeps only the last window_size tokens' keys and values (what it can attend to), every
 * other layer keeps them all. tokens <= window_size: tokens x kv_bytes_per_token. */
double config_model_kv_bytes(const config_model *m, double tokens);
void config_model_free(config_model *model);

#endif /* ENPU_CONFIG_MODEL_H */
