/* config_model.c — model files (jobs/models/<name>.json): validation and derived sizes.
 *
 * Parameter counts follow the public Llama 3 and DeepSeek-V2/V3 architectures: untied
 * embedding and LM head (one matrix with "tie_embeddings"), RMSNorm weights (two per layer, one final, plus MLA's
 * q/kv low-rank norms), SwiGLU FFNs (3 matrices), MLA low-rank projections, a router per MoE layer, and dense FFNs
 * in the first_dense_layers. Checked against the published sizes in tests/unit/test_config_shipped.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "config_internal.h"

static const char *const model_keys[] = {"name",        "hidden",         "layers",        "vocab",
                                         "dtype_bytes", "attention",      "ffn",           "moe",
                                         "speculative", "tie_embeddings", "context_limit", "sliding_window"};
static const char *const window_keys[] = {"size", "layers"};
static const char *const spec_keys[] = {"acceptance"};
static const char *const spec_exit_keys[] = {"exit_layers", "rate"};
static const char *const attention_kinds[] = {"gqa", "mla"};
static const char *const gqa_keys[] = {"kind", "heads", "kv_heads", "head_dim"};
static const char *const mla_keys[] = {
    "kind", "heads", "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"};
static const char *const ffn_keys[] = {"intermediate", "fuse_gate_up"};
#define MODEL_INT(key, member) CONFIG_INT_FIELD(config_model, key, member)
static const config_field moe_fields[] = {
    MODEL_INT("routed_experts", routed_experts), MODEL_INT("shared_experts", shared_experts),
    MODEL_INT("experts_per_token", experts_per_token), MODEL_INT("expert_intermediate", expert_intermediate),
    MODEL_INT("first_dense_layers", first_dense_layers)};
static const config_field mla_fields[] = {
    MODEL_INT("q_lora_rank", q_lora_rank), MODEL_INT("kv_lora_rank", kv_lora_rank),
    MODEL_INT("qk_nope_head_dim", qk_nope_head_dim), MODEL_INT("qk_rope_head_dim", qk_rope_head_dim),
    MODEL_INT("v_head_dim", v_head_dim)};
static const config_field root_fields[] = {CONFIG_STRING_FIELD(config_model, "name", name),
                                           MODEL_INT("hidden", hidden), MODEL_INT("layers", layers),
                                           MODEL_INT("vocab", vocab), MODEL_INT("dtype_bytes", dtype_bytes)};

#define NKEYS(a) (sizeof(a) / sizeof((a)[0]))

static int parse_attention(const config_doc *doc, const config_path *root, const json_t *obj, config_model *m,
                           enpu_err *err) {
  config_path ap = CONFIG_KEY(root, "attention");
  const json_t *a = json_object_get(obj, "attention");
  if (!json_is_object(a)) return config_object(doc, &ap, a, NULL, 0, err);
  config_path kp = CONFIG_KEY(&ap, "kind");
  int kind;
  ENPU_FORWARD(config_enum(doc, &kp, json_object_get(a, "kind"), attention_kinds, 2, &kind, err));
  m->attention = (config_attention_kind)kind;
  /* Each kind admits only its own fields: a GQA head_dim on an MLA model is a mistake. */
  if (m->attention == CONFIG_ATTN_GQA) ENPU_FORWARD(config_object(doc, &ap, a, gqa_keys, NKEYS(gqa_keys), err));
  else ENPU_FORWARD(config_object(doc, &ap, a, mla_keys, NKEYS(mla_keys), err));
  ENPU_FORWARD(config_get_int(doc, &ap, a, "heads", &m->heads, err));
  if (m->attention == CONFIG_ATTN_GQA) {
    ENPU_FORWARD(config_get_int(doc, &ap, a, "kv_heads", &m->kv_heads, err));
    ENPU_FORWARD(config_get_int(doc, &ap, a, "head_dim", &m->head_dim, err));
    if (m->heads % m->kv_heads != 0) {
      config_path p = CONFIG_KEY(&ap, "kv_heads");
      return config_fail(doc, &p, err, ENPU_ERR_RANGE, "expected a divisor of heads (%d), got %d", m->heads,
                         m->kv_heads);
    }
    return ENPU_OK;
  }
  m->kv_heads = m->heads;
  return config_get_fields(doc, &ap, a, mla_fields, NKEYS(mla_fields), m, err);
}

static int parse_moe(const config_doc *doc, const config_path *root, const json_t *moe, config_model *m,
                     enpu_err *err) {
  config_path mp = CONFIG_KEY(root, "moe");
  ENPU_FORWARD(config_fields_object(doc, &mp, moe, moe_fields, NKEYS(moe_fields), err));
  m->moe = true;
  ENPU_FORWARD(config_get_fields(doc, &mp, moe, moe_fields, NKEYS(moe_fields), m, err));
  if (m->experts_per_token > m->routed_experts) {
    config_path p = CONFIG_KEY(&mp, "experts_per_token");
    return config_fail(doc, &p, err, ENPU_ERR_RANGE, "expected at most routed_experts (%d), got %d",
                       m->routed_experts, m->experts_per_token);
  }
  if (m->first_dense_layers >= m->layers) {
    config_path p = CONFIG_KEY(&mp, "first_dense_layers");
    return config_fail(doc, &p, err, ENPU_ERR_RANGE,
                       "expected fewer than layers (%d) so that some layer is MoE, got %d", m->layers,
                       m->first_dense_layers);
  }
  return ENPU_OK;
}

/* Window-limited attention: `layers` of the model's layers attend to the last `size`
 * tokens only (Mistral v0.1, Gemma 2/3's local layers, EXAONE 4, OLMo 3). GQA dense
 * models only: the graph splits their layers into full and windowed ones. */
static int parse_window(const config_doc *doc, const config_path *root, const json_t *w, config_model *m,
                        enpu_err *err) {
  config_path wp = CONFIG_KEY(root, "sliding_window");
  ENPU_FORWARD(config_object(doc, &wp, w, window_keys, NKEYS(window_keys), err));
  ENPU_FORWARD(config_get_int(doc, &wp, w, "size", &m->window_size, err));
  ENPU_FORWARD(config_get_int(doc, &wp, w, "layers", &m->window_layers, err));
  config_path lp = CONFIG_KEY(&wp, "layers");
  if (m->window_layers > m->layers)
    return config_fail(doc, &lp, err, ENPU_ERR_RANGE, "expected at most layers (%d), got %d", m->layers,
                       m->window_layers);
  if (m->moe || m->attention != CONFIG_ATTN_GQA)
    return config_fail(doc, &wp, err, ENPU_ERR_INVALID,
                       "expected no sliding_window on a %s model: window-limited layers are built for dense GQA "
                       "models only",
                       m->moe ? "MoE" : "MLA");
  return ENPU_OK;
}

/* The default acceptance curve. Anchor: LayerSkip's Llama2-7B (32 layers, continually
 * pretrained with early-exit loss) drafting from layer 8 (1/4 of the depth) has 63 % of its
 * drafts accepted on CNN/DM language modelling, greedy (facebookresearch/LayerSkip
 * README). A full-depth draft is always accepted and a zero-depth one never; in between
 * the curve is linear, an assumption the model file overrides. */
#define SPEC_ANCHOR_FRACTION 0.25
#define SPEC_ANCHOR_RATE 0.63

double config_spec_default_rate(double fraction) {
  if (!(fraction > 0)) return 0;
  if (fraction >= 1) return 1;
  if (fraction <= SPEC_ANCHOR_FRACTION) return SPEC_ANCHOR_RATE * fraction / SPEC_ANCHOR_FRACTION;
  return SPEC_ANCHOR_RATE + (1 - SPEC_ANCHOR_RATE) * (fraction - SPEC_ANCHOR_FRACTION) / (1 - SPEC_ANCHOR_FRACTION);
}

static void spec_default(config_model *m) {
  m->spec_default = true;
  m->spec_exit_count = 0;
  for (int q = 1; q <= 3; q++) {
    const int ex = (int)lround(m->layers * q / 4.0);
    if (ex < 1 || ex >= m->layers ||
        (m->spec_exit_count && ex <= m->spec_exits[m->spec_exit_count - 1].exit_layers))
      continue;
    m->spec_exits[m->spec_exit_count++] = (config_spec_exit){ex, config_spec_default_rate((double)ex / m->layers)};
  }
}

static int parse_model_spec(const config_doc *doc, const config_path *root, const json_t *spec, config_model *m,
                            enpu_err *err) {
  config_path sp = CONFIG_KEY(root, "speculative");
  ENPU_FORWARD(config_object(doc, &sp, spec, spec_keys, NKEYS(spec_keys), err));
  config_path ap = CONFIG_KEY(&sp, "acceptance");
  const json_t *rows = json_object_get(spec, "acceptance");
  size_t n;
  ENPU_FORWARD(config_array_max(doc, &ap, rows, CONFIG_MAX_SPEC_EXITS, "exit depths", &n, err));
  for (size_t i = 0; i < n; i++) {
    config_path rp = CONFIG_INDEX(&ap, i);
    const json_t *row = json_array_get(rows, i);
    config_spec_exit *x = &m->spec_exits[i];
    ENPU_FORWARD(config_object(doc, &rp, row, spec_exit_keys, NKEYS(spec_exit_keys), err));
    ENPU_FORWARD(config_get_int(doc, &rp, row, "exit_layers", &x->exit_layers, err));
    config_path ep = CONFIG_KEY(&rp, "exit_layers");
    if (x->exit_layers >= m->layers || (i > 0 && x->exit_layers <= x[-1].exit_layers))
      return config_fail(doc, &ep, err, ENPU_ERR_RANGE,
                         "expected a depth below layers (%d), above the previous row's, got %d", m->layers,
                         x->exit_layers);
    ENPU_FORWARD(config_get_number(doc, &rp, row, "rate", &x->rate, err));
  }
  m->spec_exit_count = (int)n;
  m->spec_default = false;
  return ENPU_OK;
}

/* Weights of one attention block (projections and its internal norms). */
static double attention_params(const config_model *m) {
  double h = m->hidden, heads = m->heads;
  if (m->attention == CONFIG_ATTN_GQA)
    return h * heads * m->head_dim               /* q */
           + 2.0 * h * m->kv_heads * m->head_dim /* k, v */
           + heads * m->head_dim * h;            /* o */
  double qk = m->qk_nope_head_dim + m->qk_rope_head_dim;
  double q = m->q_lora_rank > 0 ? h * m->q_lora_rank + m->q_lora_rank       /* q_a + q_a_norm */
                                      + (double)m->q_lora_rank * heads * qk /* q_b */
                                : h * heads * qk;
  double kv = h * (m->kv_lora_rank + m->qk_rope_head_dim) /* kv_a (latent + rope key) */
              + m->kv_lora_rank                           /* kv_a_norm */
              + (double)m->kv_lora_rank * heads * (m->qk_nope_head_dim + m->v_head_dim);
  return q + kv + heads * m->v_head_dim * h; /* + o */
}

static void derive(config_model *m) {
  double h = m->hidden;
  double attn = attention_params(m) + 2.0 * h; /* + pre-attention and pre-FFN RMSNorm */
  m->params_layer_attention = attn;
  double dense_ffn = 3.0 * h * m->ffn_intermediate;
  double embed = m->tie_embeddings ? 0.0 : (double)m->vocab * h; /* tied: the LM head's matrix */
  double head = (double)m->vocab * h + h;                        /* LM head + final norm */
  int dense_layers = m->moe ? m->first_dense_layers : m->layers;
  int moe_layers = m->layers - dense_layers;
  double expert = 3.0 * h * m->expert_intermediate;
  double router = h * m->routed_experts;
  m->params_routed = (double)moe_layers * m->routed_experts * expert;
  double moe_fixed = (double)moe_layers * (router + m->shared_experts * expert);
  double common = m->layers * attn + dense_layers * dense_ffn + head;
  m->params_total = embed + common + moe_fixed + m->params_routed;
  /* Active = weights a token multiplies with: the embedding table is a lookup (one row,
   * no FLOPs), so it is left out and 2 x params_active is the weight FLOPs per token. */
  m->params_active = common + moe_fixed + (double)moe_layers * m->experts_per_token * expert;
  if (m->attention == CONFIG_ATTN_GQA)
    m->kv_bytes_per_token = 2.0 * m->layers * m->kv_heads * m->head_dim * m->dtype_bytes;
  else m->kv_bytes_per_token = (double)m->layers * (m->kv_lora_rank + m->qk_rope_head_dim) * m->dtype_bytes;
}

double config_model_kv_bytes(const config_model *m, double tokens) {
  if (m->window_layers <= 0 || tokens <= m->window_size) return tokens * m->kv_bytes_per_token;
  const double per_layer = m->kv_bytes_per_token / m->layers;
  return per_layer * ((double)(m->layers - m->window_layers) * tokens + (double)m->window_layers * m->window_size);
}

int config_model_parse(const config_doc *doc, config_model *m, enpu_err *err) {
  config_path root = CONFIG_ROOT;
  const json_t *o = doc->root;
  ENPU_FORWARD(config_object(doc, &root, o, model_keys, NKEYS(model_keys), err));
  snprintf(m->path, sizeof m->path, "%s", doc->file);
  ENPU_FORWARD(config_get_fields(doc, &root, o, root_fields, NKEYS(root_fields), m, err));
  if (m->dtype_bytes != 1 && m->dtype_bytes != 2 && m->dtype_bytes != 4) {
    config_path p = CONFIG_KEY(&root, "dtype_bytes");
    return config_fail(doc, &p, err, ENPU_ERR_RANGE, "expected 1, 2 or 4, got %d", m->dtype_bytes);
  }
  ENPU_FORWARD(parse_attention(doc, &root, o, m, err));
  config_path fp = CONFIG_KEY(&root, "ffn");
  const json_t *ffn = json_object_get(o, "ffn");
  ENPU_FORWARD(config_object(doc, &fp, ffn, ffn_keys, NKEYS(ffn_keys), err));
  ENPU_FORWARD(config_get_int(doc, &fp, ffn, "intermediate", &m->ffn_intermediate, err));
  const json_t *fuse = json_object_get(ffn, "fuse_gate_up");
  if (fuse) {
    config_path up = CONFIG_KEY(&fp, "fuse_gate_up");
    ENPU_FORWARD(config_bool(doc, &up, fuse, &m->ffn_fuse_gate_up, err));
  }
  const json_t *tie = json_object_get(o, "tie_embeddings");
  if (tie) {
    config_path tp = CONFIG_KEY(&root, "tie_embeddings");
    ENPU_FORWARD(config_bool(doc, &tp, tie, &m->tie_embeddings, err));
  }
  const json_t *limit = json_object_get(o, "context_limit");
  if (limit) {
    config_path lp = CONFIG_KEY(&root, "context_limit");
    ENPU_FORWARD(config_int(doc, &lp, limit, &m->context_limit, err));
  }
  const json_t *moe = json_object_get(o, "moe");
  if (moe) ENPU_FORWARD(parse_moe(doc, &root, moe, m, err));
  const json_t *window = json_object_get(o, "sliding_window");
  if (window) ENPU_FORWARD(parse_window(doc, &root, window, m, err));
  const json_t *spec = json_object_get(o, "speculative");
  if (spec) ENPU_FORWARD(parse_model_spec(doc, &root, spec, m, err));
  else spec_default(m);
  derive(m);
  m->hash = enpu_hash64(doc->text, doc->len, 0);
  return ENPU_OK;
}

CONFIG_LOADER(config_model_load, config_model, "model", config_model_parse, NULL)

void config_model_free(config_model *model) { free(model); }
