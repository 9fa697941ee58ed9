/* paper.c — `enpu report paper`: the README of the paper's evaluation from the
 * pipeline's outputs (tools/paper.py): per model its manifest.json names the stores (one
 * per run: grid or single request, budget mode, sensitivity), the `enpu compile --json`
 * outputs of Table 7 and Figure 14, the `enpu graph` outputs of Table 2, the Figure 20
 * sweep and the replays. paper_load.c loads them (stores on first use); this file
 * writes one report_write report per run, draws every run's figures and the README's own
 * in one gnuplot (report_plots.c: a gnuplot's start costs more than a small figure), and
 * then assembles README.md from the sections of paper_md.c and the claims of
 * paper_eval.c.
 *
 * Invariants: README.md holds no timestamp and no absolute path, so the same outputs give
 * the same bytes (a rerun of the pipeline with nothing changed changes no file); it is
 * written to a temporary name and renamed, so a README.md that exists is complete; it is
 * written after the figures are drawn, because it links only the images that exist. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "paper_internal.h"

/* ---- per-run reports ------------------------------------------------------------- */

/* report_write of one run into `out` (with the replay in replay_dir, or none). */
static int run_report(paper_ctx *x, const paper_run *run, const char *out, const char *replay_dir, enpu_err *err) {
  config_job *job = NULL;
  ENPU_FORWARD(config_job_load(run->job, &job, err));
  report_options o = {.store_path = run->store,
                      .out_dir = out,
                      .replay_dir = replay_dir,
                      .job = job,
                      .freq_slack = 0.3,
                      .overlay = &x->overlay};
  const int rc = report_write_queued(&o, x->plots, NULL, err); /* drawn with every run's figures */
  config_job_free(job);
  return rc;
}

/* report_write into <model>/<run>/ for each run: Figures 11, 12, 19 (and the design
 * space) of its store, a grid store with its first replay; each further replay of the
 * run into <replay dir>/report/ (the online governors' section, when it has them). */
static int run_reports(paper_ctx *x, enpu_err *err) {
  for (int i = 0; i < x->nmodels; i++) {
    paper_model *m = &x->models[i];
    for (int r = 0; r < m->nruns; r++) {
      const paper_run *run = &m->runs[r];
      char out[PATH_MAX + 96];
      int seen = 0;
      for (int k = 0; k < m->nreplays; k++) {
        if (strcmp(m->replays[k].run, run->name)) continue;
        if (seen++) snprintf(out, sizeof out, "%s/report", m->replays[k].dir);
        else snprintf(out, sizeof out, "%s/%s", m->dir, run->name);
        ENPU_FORWARD(run_report(x, run, out, m->replays[k].dir, err));
      }
      snprintf(out, sizeof out, "%s/%s", m->dir, run->name);
      if (!seen) ENPU_FORWARD(run_report(x, run, out, NULL, err));
    }
  }
  return ENPU_OK;
}

/* ---- README.md ------------------------------------------------------------------- */

static double timing_s(const json_t *t, const char *stage) {
  return json_number_value(json_object_get(json_object_get(t, stage), "wall_s"));
}

static void md_intro(paper_ctx *x, FILE *md) {
  fprintf(md, "# The paper's evaluation, reproduced\n\n"
              "Written by `enpu report paper` (the last stage of `make paper`, `tools/paper.py`) from the "
              "stores, compile outputs and replays under this folder; every number of ours below is read "
              "from them by the code, every number of the paper's from `jobs/paper/paper-numbers.json` "
              "(with its section). Do not edit: rerun `make paper`.\n\n");
  double total = 0;
  fprintf(md, "| model | job | stages run (wall seconds, this machine) |\n|---|---|---|\n");
  for (int i = 0; i < x->nmodels; i++) {
    const paper_model *m = &x->models[i];
    const char *key;
    const json_t *v;
    fprintf(md, "| %s | `jobs/paper/%s.json` |", m->name, m->name);
    json_object_foreach((json_t *)m->timings, key, v) {
      fprintf(md, " %s %.0f", key, timing_s(m->timings, key));
      total += timing_s(m->timings, key);
    }
    fprintf(md, " |\n");
  }
  fprintf(md,
          "\nThe stages of all models took **%.1f minutes** of wall time when they last ran (each stage's "
          "time is kept until its inputs change). A farm whose tasks are already in its store (their keys "
          "unchanged) reruns in seconds, so this is not a run from empty stores: those, per model and "
          "stage, and the farm's scaling are in `results/bench.md`.\n\n",
          total / 60);
  paper_md_method(x, md);
}

static int write_readme(paper_ctx *x, FILE *md, enpu_err *err) {
  md_intro(x, md);
  fprintf(md, "## 1. The headline claims (§4's \"We show that\" list and the numbers of §4.2–§4.8)\n\n");
  ENPU_FORWARD(paper_md_claims(x, md, NULL, err));
  ENPU_FORWARD(paper_md_table2(x, md, err));
  ENPU_FORWARD(paper_md_table5(x, md, err));
  ENPU_FORWARD(paper_md_table7(x, md, err));
  ENPU_FORWARD(paper_md_figure11(x, md, err));
  return paper_md_figures(x, md, err);
}

static void free_models(paper_ctx *x) {
  for (int i = 0; x->models && i < x->nmodels; i++) {
    paper_model *m = &x->models[i];
    for (int r = 0; r < m->nruns; r++) store_contents_free(m->runs[r].c);
    for (int k = 0; k < m->ncompile; k++) json_decref(m->compile[k].doc);
    for (int k = 0; k < m->nreplays; k++) json_decref(m->replays[k].summary);
    json_decref(m->figure20);
    json_decref(m->timings);
  }
  free(x->models); /* owns values and known */
  paper_numbers_free(x->numbers);
}

/* Every run's report and the README's figures queued, then drawn in one gnuplot (the runs'
 * report.md published with them), then README.md, which links the images that exist. */
static int write_all(paper_ctx *x, enpu_err *err) {
  ENPU_FORWARD(run_reports(x, err));
  ENPU_FORWARD(paper_plots(x, err));
  ENPU_FORWARD(report_plots_draw(x->plots, err));
  FILE *md = NULL;
  const char *dir = x->o->out_dir;
  ENPU_FORWARD(report_file_open(dir, "README.md", &md, err));
  const int rc = write_readme(x, md, err);
  if (rc < 0) report_file_discard(md, dir, "README.md");
  return rc < 0 ? rc : report_file_close(md, dir, "README.md", err);
}

int paper_write(const paper_options *o, enpu_err *err) {
  ENPU_RETURN_IF(!o || !o->out_dir || !o->numbers_path || o->nmanifests < 1, err, ENPU_ERR_INVALID,
                 "paper_write: needs an output folder, the numbers file and a manifest");
  paper_ctx x = {.o = o};
  int rc = report_plots_create(o->gnuplot, &x.plots, err);
  if (rc == 0) rc = paper_numbers_load(o->numbers_path, &x.numbers, err);
  if (rc == 0) x.overlay = paper_overlay(x.numbers);
  if (rc == 0) {
    const size_t cells = (size_t)x.numbers->nclaims * PAPER_MAX_COLUMNS;
    if (ENPU_CALLOC_PARTS(ENPU_PART(x.models, o->nmanifests), ENPU_PART(x.values, cells),
                          ENPU_PART(x.known, cells)) < 0)
      rc = enpu_errorf(err, ENPU_ERR_NOMEM, "out of memory");
  }
  for (int i = 0; rc == 0 && i < o->nmanifests; i++, x.nmodels++)
    rc = paper_load_manifest(o->manifests[i], &x.models[i], err);
  if (rc == 0) rc = enpu_mkdir_p(o->out_dir, err);
  if (rc == 0) rc = report_absolute_dir(o->out_dir, x.absdir, sizeof x.absdir, err);
  if (rc == 0) rc = write_all(&x, err);
  free_models(&x);
  report_plots_free(x.plots);
  return rc;
}
