/* paper_figures.c — the README's figure sections that show per-run plots (each run's
 * report_write report draws them from its store: Figures 12, 19, 22 and 5 here, the
 * design-space figures 13, 15–18 and 21 from the policies a store holds) beside the
 * claims of each figure, for every model that has the run.
 *
 * Invariants: an image that a run did not draw (a policy this build does not compile, a
 * stage that did not run) is a marked missing line, never a broken link. */
#include <string.h>
#include <unistd.h>

#include "paper_internal.h"

#define MAX_IMAGES 24

typedef struct {
  char path[MAX_IMAGES][512];
  const char *ptr[MAX_IMAGES];
  int n;
} images;

static void add_image(images *im, const char *model, const char *run, const char *file) {
  if (im->n == MAX_IMAGES) return;
  snprintf(im->path[im->n], sizeof im->path[im->n], "%s/%s/%s", model, run, file);
  im->ptr[im->n] = im->path[im->n];
  im->n++;
}

/* `file` of `run` for every model (file may hold %s for the phase: both phases). */
static void each_model(const paper_ctx *x, images *im, const char *run, const char *file, bool first_only) {
  static const char *const phases[2] = {"prefill", "decode"};
  for (int i = 0; i < (first_only ? (x->nmodels > 0) : x->nmodels); i++)
    for (int ph = 0; ph < (strstr(file, "%s") ? 2 : 1); ph++) {
      char name[128];
      snprintf(name, sizeof name, file, phases[ph]);
      add_image(im, x->models[i].name, run, name);
    }
}

static int section(paper_ctx *x, FILE *md, const char *fig, const char *heading, const char *text, const char *run,
                   const char *file, bool first_only, enpu_err *err) {
  images im = {0};
  each_model(x, &im, run, file, first_only);
  return paper_md_figure(x, md, fig, heading, text, im.ptr, im.n, err);
}

static int design_space(paper_ctx *x, FILE *md, enpu_err *err) {
  ENPU_FORWARD(section(x, md, "12", "6. Figure 12: energy by component",
                       "The single request's energy per component for every policy and slack (the first "
                       "model; each run's `report.md` has every model's), `paper` mode.",
                       "request-paper", "breakdown_%s.png", true, err));
  ENPU_FORWARD(section(x, md, "13", "7. Figure 13: energy lost in the regulators",
                       "Each plan's regulator loss in % of the " ENPU_POLICY_DISPLAY_NODVFS
                       " energy against slack, per policy.",
                       "request-paper", "regulator_loss_%s.png", false, err));
  ENPU_FORWARD(section(x, md, "15", "8. Figure 15: VU shadow registers",
                       "Performance at 0 % slack per shadow vector register file size (`" ENPU_POLICY_NAME_ENPU_ALL
                       "@shadow=N`).",
                       "request-paper", "shadow.png", false, err));
  ENPU_FORWARD(section(x, md, "16", "9. Figure 16: temporal and spatial DVFS granularity",
                       "Per-operator DVFS (`" ENPU_POLICY_NAME_DVFS_C "`, `" ENPU_POLICY_NAME_ENPU_ALL
                       "`) against one setting per ≥ 5 ms epoch (`" ENPU_POLICY_NAME_DVFS_C_MS
                       "`, `" ENPU_POLICY_NAME_ENPU_MS "`).",
                       "request-paper", "granularity_%s.png", false, err));
  ENPU_FORWARD(section(x, md, "17", "10. Figure 17: V/f domain count",
                       "eNPU with 3, 4 and 5 (`" ENPU_POLICY_NAME_ENPU_ALL "`) V/f domains.", "request-paper",
                       "domains_%s.png", false, err));
  ENPU_FORWARD(section(x, md, "18", "11. Figure 18: savings against the sequence length",
                       "The grid's buckets at its smallest batch, per slack (`paper` mode).", "grid-paper",
                       "seq_%s.png", false, err));
  ENPU_FORWARD(section(x, md, "19", "12. Figure 19: chosen frequency against utilisation",
                       ENPU_POLICY_DISPLAY_ENPU_ALL
                       "'s states of every operator of the single request at 30 % slack against the "
                       "component's utilisation at peak without DVFS (the first model).",
                       "request-paper", "freq_util_%s.png", true, err));
  return ENPU_OK;
}

static int figure20(paper_ctx *x, FILE *md, enpu_err *err) {
  images im = {0};
  for (int i = 0; i < x->nmodels; i++)
    if (x->models[i].figure20) add_image(&im, x->models[i].name, "figure20", "figure20.png");
  return paper_md_figure(
      x, md, "20", "13. Figure 20: MoE expert load imbalance",
      "The single request compiled at each expert capacity factor, and the worst-case plans "
      "(eNPU's default provisioning) run on each factor's load (`enpu compile --capacity-factor`; "
      "`results/figure20.md` decomposes the difference).",
      im.ptr, im.n, err);
}

static int replay(paper_ctx *x, FILE *md, enpu_err *err) {
  images im = {0};
  for (int i = 0; i < x->nmodels; i++) /* each grid run's report shows its first replay */
    for (int r = 0; r < x->models[i].nruns; r++)
      if (paper_find_replay_of(&x->models[i], x->models[i].runs[r].name)) {
        add_image(&im, x->models[i].name, x->models[i].runs[r].name, "replay_energy.png");
        add_image(&im, x->models[i].name, x->models[i].runs[r].name, "replay_slack.png");
      }
  ENPU_FORWARD(paper_md_figure(
      x, md, "22", "15. Figure 22 and §4.8: the 24-hour service",
      "The first replay of each grid store (the pipeline's first replay run: a 24-hour day of "
      "the production trace on Table 3's cluster at the load its nodes are provisioned for, "
      "12× the trace's rate, `results/llama3-70b/README.md`), in each budget mode: SLO attainment and savings per 5-minute "
      "window; busy batches only compare with §4.8 (the paper's simulator counts no idle "
      "energy). The run's `report.md` has the peak/off-peak table with idle energy.",
      im.ptr, im.n, err));
  return paper_md_figure(x, md, "5", "16. Figure 5: SLO slack over the day",
                         "The " ENPU_POLICY_DISPLAY_NODVFS
                         " requests' SLO slack per 5-minute window (the second image of each pair above).",
                         NULL, 0, err);
}

/* Beyond the paper: the replays with online governors, each with its own report. */
static void governors(paper_ctx *x, FILE *md) {
  fprintf(md, "## 17. Beyond the paper: online governors beside the compiled plans\n\n"
              "Replays with online governors (`enpu replay --governors`: a chip-wide V/f state per control period "
              "on the store's `" ENPU_POLICY_NAME_UNIFORM
              "` policy, PELM's DQN, self-speculative decoding), each with its report "
              "(actions per window, the learning curve, where each governor beats or loses to the plans):\n\n");
  int n = 0;
  for (int i = 0; i < x->nmodels; i++)
    for (int r = 0; r < x->models[i].nreplays; r++) {
      const char *dir = x->models[i].replays[r].dir + strlen(x->models[i].dir) + 1;
      char rel[512];
      snprintf(rel, sizeof rel, "%s/%s/report/governors_actions.png", x->models[i].name, dir);
      char path[PATH_MAX * 2];
      snprintf(path, sizeof path, "%s/%s", x->o->out_dir, rel);
      if (access(path, R_OK)) continue;
      fprintf(md, "- %s, `%s`: [report](%s/%s/report/report.md)\n\n", x->models[i].name, dir, x->models[i].name,
              dir);
      paper_md_image(x, md, rel, "governors' actions");
      n++;
    }
  if (!n) fprintf(md, "*missing: no replay with governors in this build's pipeline*\n");
  fprintf(md, "\n");
}

/* The measured decompositions the reasons for the gaps point at. */
static void decompositions(paper_ctx *x, FILE *md) {
  fprintf(md, "## 18. Measured decompositions\n\n"
              "Where one plan's saving comes from, by op kind, component and cost-model term (switching, leakage, "
              "'other' static, V/f transitions), with each op kind's critical component and the plan's time "
              "over " ENPU_POLICY_DISPLAY_NODVFS
              " (`bench_request decompose`, the pipeline's decompose stage). The reasons under the "
              "tables above point here.\n\n");
  int n = 0;
  for (int i = 0; i < x->nmodels; i++)
    for (int k = 0; k < x->models[i].ndecompose; k++, n++)
      fprintf(md, "- [%s, %s](%s/decompose/%s.md)\n", x->models[i].name, x->models[i].decompose[k],
              x->models[i].name, x->models[i].decompose[k]);
  fprintf(md, n ? "\n"
                : "*missing: no decomposition in this build's pipeline (bench_request is built with the "
                  "tests)*\n\n");
}

int paper_md_figures(paper_ctx *x, FILE *md, enpu_err *err) {
  ENPU_FORWARD(design_space(x, md, err));
  ENPU_FORWARD(figure20(x, md, err));
  ENPU_FORWARD(section(x, md, "21", "14. Figure 21: DVFS and power gating",
                       "None, PG only (`" ENPU_POLICY_GATE_ALONE "`), DVFS only (`" ENPU_POLICY_NAME_ENPU_ALL
                       "`) and PG + DVFS (`" ENPU_POLICY_GATE_PREFIX ENPU_POLICY_NAME_ENPU_ALL "`).",
                       "request-paper", "gating_%s.png", false, err));
  ENPU_FORWARD(replay(x, md, err));
  governors(x, md);
  decompositions(x, md);
  return ENPU_OK;
}
